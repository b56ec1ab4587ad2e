/* minmax.c: tinygrad's UOp._min_max (vmin/vmax), const_factor, divides, pop_const, split_uop,
 * is_increasing and tuplize ordering. _min_max is a cached property in tinygrad; here it is
 * cached in u->cache[0] (a MinMax in the graph arena) and computed with an explicit stack over
 * exactly the sources each case reads, so deep expression chains never recurse. */
#include "sym_int.h"
#include <string.h>

#define MM_SLOT 0

static bool is_sint_or_float_scalar(const DType *d) {
  if (d->kind != DTK_SCALAR || d->count != 1) return false;
  switch (d->scalar) {
  case SC_CHAR: case SC_SHORT: case SC_INT: case SC_LONG:
  case SC_FP8E4M3: case SC_FP8E5M2: case SC_HALF: case SC_BFLOAT16: case SC_FLOAT: case SC_DOUBLE: return true;
  default: return false;
  }
}
static UOp *special_size_uop(UOp *u) {
  if (u->arg->kind == V_TUPLE && u->arg->n >= 2 && u->arg->items[1]->kind == V_UOP) return u->arg->items[1]->u;
  return NULL;
}
/* the sources _min_max reads for u; returns how many were written to kids (or -1: all of src) */
static int mm_kids(UOp *u, UOp **kids) {
  Op op = (Op)u->op;
  /* a malformed graph can put an ADD with one source (or a BIND, WHERE, RANGE without theirs)
   * into a symbolic shape: tinygrad's _min_max would index past the sources too */
  int need = op_in(op, G_BINARY) && !dt_is_float(u->dtype) ? 2 : op == OP_WHERE && dt_is_int(u->dtype) ? 3
           : op == OP_RANGE || op == OP_BIND || (op == OP_CAST && is_sint_or_float_scalar(u->dtype)) ? 1 : 0;
  if (u->nsrc < need) tg_fail(TG_EINPUT, "a %s with %d sources in a symbolic expression (it needs %d)", op_names[op], u->nsrc, need);
  if (op_in(op, G_BINARY) && !dt_is_float(u->dtype)) { kids[0] = u->src[0]; kids[1] = u->src[1]; return 2; }
  if (op == OP_WHERE && dt_is_int(u->dtype)) { kids[0] = u->src[1]; kids[1] = u->src[2]; return 2; }
  if (op == OP_DEFINE_VAR) return 0;
  if (op == OP_RANGE) { if (!dt_is_float(u->src[0]->dtype)) { kids[0] = u->src[0]; return 1; } return 0; }
  if (op == OP_BIND) { kids[0] = u->src[0]; return 1; }
  if (op == OP_UNROLL || op == OP_VECTORIZE) return -1;
  if (op == OP_SPECIAL) { UOp *s = special_size_uop(u); if (s) { kids[0] = s; return 1; } return 0; }
  if (op == OP_CONST || op == OP_VCONST) return 0;
  if (op == OP_CAST && is_sint_or_float_scalar(u->dtype)) { kids[0] = u->src[0]; return 1; }
  return 0;
}
static inline MinMax *mm_cached(UOp *u) { return (MinMax *)u->cache[MM_SLOT]; }
static MinMax MM(Num lo, Num hi) { return (MinMax){lo, hi}; }

static MinMax mm_compute(UOp *u) {
  Op op = (Op)u->op;
  if (op_in(op, G_BINARY) && !dt_is_float(u->dtype)) {
    MinMax a = *mm_cached(u->src[0]), b = *mm_cached(u->src[1]);
    Num zero = n_int(0);
    if (op == OP_ADD) return MM(n_add(a.lo, b.lo), n_add(a.hi, b.hi));
    if (op == OP_SUB) return MM(n_sub(a.lo, b.hi), n_sub(a.hi, b.lo));
    if (op == OP_AND && n_eq(b.lo, b.hi) && n_ge(a.lo, zero) && n_ge(b.lo, zero))
      return MM(n_min(zero, a.lo), n_min(a.hi, b.hi));
    if (op == OP_MUL) {
      Num v[4] = {n_mul(a.lo, b.lo), n_mul(a.lo, b.hi), n_mul(a.hi, b.lo), n_mul(a.hi, b.hi)};
      Num lo = v[0], hi = v[0];
      for (int i = 1; i < 4; i++) { lo = n_min(lo, v[i]); hi = n_max(hi, v[i]); }
      return MM(lo, hi);
    }
    if (op == OP_SHL && n_eq(b.lo, b.hi) && n_isint(a.lo) && n_isint(a.hi) && n_isint(b.lo)) return MM(n_shl(a.lo, b.lo), n_shl(a.hi, b.lo));
    if (op == OP_SHR && n_eq(b.lo, b.hi) && n_isint(a.lo) && n_isint(a.hi) && n_isint(b.lo)) return MM(n_shr(a.lo, b.lo), n_shr(a.hi, b.lo));
    if (op == OP_MOD) {
      Num one = n_int(1);
      if (n_gt(b.lo, zero)) {
        Num m = n_sub(b.hi, one);
        return n_ge(a.lo, zero) ? MM(zero, m) : n_le(a.hi, zero) ? MM(n_neg(m), zero) : MM(n_neg(m), m);
      }
      if (n_lt(b.hi, zero)) {
        Num m = n_sub(n_neg(b.lo), one);
        return n_ge(a.lo, zero) ? MM(zero, m) : n_le(a.hi, zero) ? MM(n_neg(m), zero) : MM(n_neg(m), m);
      }
    }
    if (op == OP_IDIV && n_isint(a.lo) && n_isint(a.hi) && n_isint(b.lo) && n_isint(b.hi)) {
      if (n_eq(b.lo, b.hi)) {
        Num c = b.lo;
        if (n_gt(c, zero)) return MM(n_cdiv(a.lo, c), n_cdiv(a.hi, c));
        if (n_lt(c, zero)) return MM(n_cdiv(a.hi, c), n_cdiv(a.lo, c));
      }
      if (n_le(a.hi, zero) && n_lt(b.hi, zero)) return MM(n_cdiv(a.hi, b.lo), n_cdiv(a.lo, b.hi));
      if (n_ge(a.lo, zero) && n_gt(b.lo, zero)) return MM(n_cdiv(a.lo, b.hi), n_cdiv(a.hi, b.lo));
      if (n_le(a.hi, zero) && n_gt(b.lo, zero)) return MM(n_cdiv(a.lo, b.lo), n_cdiv(a.hi, b.hi));
      if (n_ge(a.lo, zero) && n_lt(b.hi, zero)) return MM(n_cdiv(a.hi, b.hi), n_cdiv(a.lo, b.lo));
    }
    if (op == OP_MAX) return MM(n_max(a.lo, b.lo), n_max(a.hi, b.hi));
    if (op == OP_CMPLT) return MM(n_bool(n_lt(a.hi, b.lo)), n_bool(n_lt(a.lo, b.hi)));
    if (op == OP_CMPNE) {
      bool all_eq = n_eq(a.lo, a.hi) && n_eq(a.hi, b.lo) && n_eq(b.lo, b.hi);
      return MM(n_bool(n_lt(a.hi, b.lo) || n_lt(b.hi, a.lo)), n_bool(!all_eq));
    }
    if (u->dtype == dt_bool) {
      /* Python `or`/`and` return an operand */
      if (op == OP_OR) return MM(n_truthy(a.lo) ? a.lo : b.lo, n_truthy(a.hi) ? a.hi : b.hi);
      if (op == OP_AND) return MM(!n_truthy(a.lo) ? a.lo : b.lo, !n_truthy(a.hi) ? a.hi : b.hi);
    }
  }
  if (op == OP_WHERE && dt_is_int(u->dtype)) {
    MinMax a = *mm_cached(u->src[1]), b = *mm_cached(u->src[2]);
    return MM(n_min(a.lo, b.lo), n_max(a.hi, b.hi));
  }
  if (op == OP_DEFINE_VAR && u->arg->kind == V_TUPLE && u->arg->n > 0) { /* arg: (name, min, max) */
    const Value *a = u->arg;
    bool num = a->n == 3;
    for (int i = 1; num && i < 3; i++) num = a->items[i]->kind == V_INT || a->items[i]->kind == V_FLOAT || a->items[i]->kind == V_BOOL;
    if (!num) tg_fail(TG_EINPUT, "a DEFINE_VAR's arg is (name, min, max), not %s", value_repr(&uctx->scratch, a));
    return MM(n_of_value(a->items[1]), n_of_value(a->items[2]));
  }
  if (op == OP_RANGE) {
    UOp *s = u->src[0];
    Num hi = dt_is_float(s->dtype) ? n_dtmax(s->dtype) : n_add(mm_cached(s)->hi, n_int(-1)); /* (src[0]-1).vmax */
    return MM(n_int(0), hi);
  }
  if (op == OP_BIND) return *mm_cached(u->src[0]);
  if (op == OP_UNROLL || op == OP_VECTORIZE) {
    if (u->nsrc == 0) tg_fail(TG_EINTERNAL, "min() arg is an empty sequence (%s without sources)", op_names[op]);
    Num lo = mm_cached(u->src[0])->lo, hi = mm_cached(u->src[0])->hi;
    for (int i = 1; i < u->nsrc; i++) { lo = n_min(lo, mm_cached(u->src[i])->lo); hi = n_max(hi, mm_cached(u->src[i])->hi); }
    return MM(lo, hi);
  }
  if (op == OP_SPECIAL) {
    UOp *s = special_size_uop(u);
    return MM(n_int(0), s ? mm_cached(s)->hi : n_sub(n_of_value(u->arg->items[1]), n_int(1)));
  }
  if (op == OP_CONST) { Num c = n_of_value(u->arg); return MM(c, c); }
  if (op == OP_VCONST) {
    Num lo = n_of_value(u->arg->items[0]), hi = lo;
    for (int i = 1; i < u->arg->n; i++) { Num c = n_of_value(u->arg->items[i]); lo = n_min(lo, c); hi = n_max(hi, c); }
    return MM(lo, hi);
  }
  if (op == OP_CAST && is_sint_or_float_scalar(u->dtype)) {
    MinMax s = *mm_cached(u->src[0]);
    return MM(n_max(n_dtmin(u->dtype), s.lo), n_min(s.hi, n_dtmax(u->dtype)));
  }
  return MM(n_dtmin(u->dtype), n_dtmax(u->dtype));
}

MinMax u_minmax(UOp *root) {
  if (mm_cached(root)) return *mm_cached(root);
  size_t cap = 64, n = 0;
  ArenaMark mk = arena_mark(&uctx->scratch);
  UOp **st = arena_alloc(&uctx->scratch, cap * sizeof *st);
  st[n++] = root;
  UOp *kbuf[2];
  while (n) {
    UOp *u = st[n - 1];
    if (mm_cached(u)) { n--; continue; }
    int nk = mm_kids(u, kbuf);
    UOp *const *kids = nk < 0 ? u->src : kbuf;
    if (nk < 0) nk = u->nsrc;
    bool ready = true;
    for (int i = nk - 1; i >= 0; i--) {
      if (mm_cached(kids[i])) continue;
      ready = false;
      if (n == cap) {
        UOp **ns = arena_alloc(&uctx->scratch, 2 * cap * sizeof *ns);
        memcpy(ns, st, cap * sizeof *st);
        st = ns; cap *= 2;
      }
      st[n++] = kids[i];
    }
    if (!ready) continue;
    MinMax r = mm_compute(u);
    MinMax *slot = arena_alloc(ga(), sizeof *slot);
    *slot = r;
    u->cache[MM_SLOT] = slot;
    n--;
  }
  arena_pop(&uctx->scratch, mk);
  return *mm_cached(root);
}

/* ---- const_factor / divides / pop_const ---- */
static i128 cf(UOp *u) {
  if (u->op == OP_CONST) return n_of_value(u->arg).i;
  if (u->op == OP_VCONST) {
    i128 g = 0;
    for (int i = 0; i < u->arg->n; i++) g = i128_gcd(g, n_of_value(u->arg->items[i]).i);
    return g;
  }
  if (u->op == OP_ADD) return i128_gcd(cf(u->src[0]), cf(u->src[1]));
  if (u->op == OP_MUL) {
    if (u->src[0]->op == OP_CONST) return n_of_value(u->src[0]->arg).i;
    if (u->src[1]->op == OP_CONST) return n_of_value(u->src[1]->arg).i;
  }
  return 1;
}
int64_t u_const_factor(UOp *u) { return n_i64(n_int(cf(u))); }
UOp *u_divides(UOp *u, int64_t v) {
  if (v == 1) return u;
  if (u->op == OP_CONST) {
    Num a = n_of_value(u->arg), d = n_int(v);
    return n_truthy(n_pymod(a, d)) ? NULL : u_const_n(u, n_floordiv(a, d));
  }
  if (u->op == OP_VCONST) {
    const Value *it[256];
    if (u->arg->n > 256) return NULL;
    for (int i = 0; i < u->arg->n; i++) {
      Num a = n_of_value(u->arg->items[i]);
      if (n_truthy(n_pymod(a, n_int(v)))) return NULL;
      it[i] = n_value(n_floordiv(a, n_int(v)));
    }
    return u_const_like(u, v_tuple(u->arg->n, it));
  }
  if (u->op == OP_ADD) {
    UOp *d0 = u_divides(u->src[0], v);
    if (!d0) return NULL;
    UOp *d1 = u_divides(u->src[1], v);
    return d1 ? u_add(d0, d1) : NULL;
  }
  if (u->op == OP_MUL) {
    UOp *d0 = u_divides(u->src[0], v);
    if (d0) return u_mul(d0, u->src[1]);
    UOp *d1 = u_divides(u->src[1], v);
    if (d1) return u_mul(u->src[0], d1);
  }
  return NULL;
}

/* ---- split_uop: the leaves of a tree of sep, left to right (iterative, scratch-allocated) ---- */
UOp **split_all(UOp *x, Op sep, int *n_out) {
  size_t cap = 16, n = 0, k = 0, ocap = 16;
  UOp **stk = arena_alloc(&uctx->scratch, cap * sizeof *stk), **out = arena_alloc(&uctx->scratch, ocap * sizeof *out);
  stk[n++] = x;
  while (n) {
    UOp *u = stk[--n];
    if (u->op == sep) {
      if (n + u->nsrc > cap) {
        while (n + u->nsrc > cap) cap *= 2;
        UOp **ns = arena_alloc(&uctx->scratch, cap * sizeof *ns);
        memcpy(ns, stk, n * sizeof *stk);
        stk = ns;
      }
      for (int i = u->nsrc - 1; i >= 0; i--) stk[n++] = u->src[i];
    } else {
      if (k == ocap) {
        UOp **no = arena_alloc(&uctx->scratch, 2 * ocap * sizeof *no);
        memcpy(no, out, ocap * sizeof *out);
        out = no; ocap *= 2;
      }
      out[k++] = u;
    }
  }
  *n_out = (int)k;
  return out;
}
int split_uop(UOp *x, Op sep, UOp **out, int cap) {
  ArenaMark mk = arena_mark(&uctx->scratch);
  int n;
  UOp **all = split_all(x, sep, &n);
  for (int i = 0; i < n && i < cap; i++) out[i] = all[i];
  arena_pop(&uctx->scratch, mk);
  return n;
}

bool u_is_increasing(UOp *u) {
  if (op_in((Op)u->op, G_IRREDUCIBLE)) return true;
  if (u->op == OP_ADD) return u_is_increasing(u->src[0]) && u_is_increasing(u->src[1]);
  if ((u->op == OP_MUL || u->op == OP_IDIV) && u->src[1]->op == OP_CONST && n_ge(n_of_value(u->src[1]->arg), n_int(0)))
    return u_is_increasing(u->src[0]);
  return false;
}

/* ---- tuplize: (op.value, arg, dtype, *src.tuplize) compared as Python tuples ---- */
static int dt_cmp(const DType *a, const DType *b) {
  if (a == b) return 0;
  return dt_lt(a, b) ? -1 : dt_lt(b, a) ? 1 : 0;
}
static bool v_same(const Value *a, const Value *b) {
  if (a == b) return true;
  bool na = a->kind == V_BOOL || a->kind == V_INT || a->kind == V_FLOAT;
  bool nb = b->kind == V_BOOL || b->kind == V_INT || b->kind == V_FLOAT;
  if (na && nb) return n_eq(n_of_value(a), n_of_value(b));
  return false;
}
int tuplize_cmp(UOp *a, UOp *b) {
  if (a == b) return 0;
  if (a->op != b->op) return a->op < b->op ? -1 : 1;
  if (!v_same(a->arg, b->arg)) {
    int c = v_cmp(a->arg, b->arg);
    if (c) return c;
  }
  int c = dt_cmp(a->dtype, b->dtype);
  if (c) return c;
  for (int i = 0; i < a->nsrc && i < b->nsrc; i++) {
    c = tuplize_cmp(a->src[i], b->src[i]);
    if (c) return c;
  }
  return a->nsrc < b->nsrc ? -1 : a->nsrc > b->nsrc;
}
