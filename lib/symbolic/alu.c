/* alu.c: UOp arithmetic exactly as tinygrad's MathTrait and UOp methods build it (operand order,
 * ufix through const_like, sub as ADD of a negation, minimum via negated maximum, ge/le via
 * logical_not of lt/gt), dtypes.as_const, UOp.const/cast/variable/bind, and sint arithmetic:
 * Python semantics on ints (floor // and %), UOp nodes otherwise, simplified by smax/smin and
 * resolve through the symbolic rewrite. */
#include "sym_int.h"
#include <math.h>
#include <string.h>

ConstLikeFn sym_const_like_hook;

/* ---- constants ---- */
const Value *as_const(const Value *v, const DType *dt) {
  if (v->kind == V_TUPLE) {
    ArenaMark m = arena_mark(&uctx->scratch);
    const Value **it = arena_alloc(&uctx->scratch, sizeof(Value *) * (size_t)(v->n + 1));
    for (int i = 0; i < v->n; i++) it[i] = as_const(v->items[i], dt);
    const Value *r = v_tuple(v->n, it);
    arena_pop(&uctx->scratch, m);
    return r;
  }
  if (v->kind != V_BOOL && v->kind != V_INT && v->kind != V_FLOAT) return v;
  /* already of the dtype's kind: the conversion gives the same (interned) value back */
  if ((v->kind == V_INT && v->n == 0 && dt_is_int(dt)) || (v->kind == V_FLOAT && dt_is_float(dt)) || (v->kind == V_BOOL && dt_is_bool(dt))) return v;
  Num x = n_of_value(v);
  if (dt_is_int(dt)) {
    if (x.k == NK_FLOAT) {
      if (isnan(x.f)) tg_fail(TG_EINPUT, "the graph folds to a float NaN converted to an integer (tinygrad 0.11.0 raises ValueError: cannot convert float NaN to integer)");
      if (isinf(x.f)) tg_fail(TG_EINPUT, "the graph folds to a float infinity converted to an integer (tinygrad 0.11.0 raises ValueError: cannot convert float infinity to integer)");
      return v_int(n_i64(x));
    }
    return v_int(n_i64(x));
  }
  if (dt_is_float(dt)) return v_float(n_f(x));
  return v_bool(n_truthy(x));
}
static const Value *collapse_same(const Value *v) {
  if (v->kind != V_TUPLE || v->n == 0) return v;
  for (int i = 1; i < v->n; i++) if (v->items[i] != v->items[0]) {
    /* Python == across kinds: 1 == 1.0 == True */
    Num a = n_of_value(v->items[0]), b = n_of_value(v->items[i]);
    if (!n_eq(a, b)) return v;
  }
  return v->items[0];
}
UOp *u_const(const DType *dt, const Value *v) {
  if (v->kind == V_UOP) return v->u->op == OP_BIND ? v->u->src[0] : v->u;
  v = collapse_same(v);
  return uop0(v->kind == V_TUPLE ? OP_VCONST : OP_CONST, dt, as_const(v, dt));
}
UOp *u_const_like(UOp *like, const Value *v) {
  if (sym_const_like_hook && v->kind != V_UOP) {
    v = collapse_same(v);
    return sym_const_like_hook(like, as_const(v, like->dtype));
  }
  return u_const(like->dtype, v);
}
UOp *u_const_like_i(UOp *like, int64_t i) { return u_const_like(like, v_int(i)); }
UOp *u_const_like_f(UOp *like, double f) { return u_const_like(like, v_float(f)); }
UOp *u_const_n(UOp *like, Num v) { return u_const_like(like, n_value(v)); }
Num u_carg(UOp *c) { return n_of_value(c->arg); }
bool u_is_const_int(UOp *u, int64_t *out) {
  if (u->op != OP_CONST || (u->arg->kind != V_INT && u->arg->kind != V_BOOL)) return false;
  if (out) *out = u->arg->kind == V_INT ? u->arg->i : u->arg->b;
  return true;
}

/* ---- alu ---- */
UOp *u_alu(Op op, int n, UOp *const *src) {
  const DType *dt = src[n - 1]->dtype;
  if (op == OP_CMPLT || op == OP_CMPNE || op == OP_CMPEQ) dt = dt->count > 1 ? dt_vec(dt_bool, dt->count) : dt_bool;
  return uop_new(op, dt, n, src, NULL, NULL);
}
UOp *u_alu1(Op op, UOp *a) { return u_alu(op, 1, &a); }
UOp *u_alu2(Op op, UOp *a, UOp *b) { UOp *s[2] = {a, b}; return u_alu(op, 2, s); }
UOp *u_alu3(Op op, UOp *a, UOp *b, UOp *c) { UOp *s[3] = {a, b, c}; return u_alu(op, 3, s); }
UOp *u_alu_like(UOp *a, Op op, UOp *b) { return u_alu2(op, a, b); }
UOp *u_reciprocal(UOp *a) { return u_alu1(OP_RECIP, a); }
UOp *u_sqrt(UOp *a) { return u_alu1(OP_SQRT, a); }
UOp *u_exp2(UOp *a) { return u_alu1(OP_EXP2, a); }

static void check_dtype(UOp *a) {
  if (!(dt_is_bool(a->dtype) || dt_is_int(a->dtype))) {
    char *r = dt_repr(&uctx->scratch, a->dtype);
    tg_fail(TG_EINTERNAL, "dtypes.%s is not supported", r);
  }
}
UOp *u_add(UOp *a, UOp *b) { return u_alu2(OP_ADD, a, b); }
UOp *u_addi(UOp *a, int64_t b) { return u_alu2(OP_ADD, a, u_const_like_i(a, b)); }
UOp *u_neg(UOp *a) {
  if (dt_scalar_of(a->dtype) == dt_bool) return u_logical_not(a);
  return u_muli(a, -1);
}
UOp *u_sub(UOp *a, UOp *b) { return u_alu2(OP_ADD, a, u_neg(b)); }
UOp *u_subi(UOp *a, int64_t b) { return u_alu2(OP_ADD, a, u_const_like_i(a, b == INT64_MIN ? INT64_MAX : -b)); }
UOp *u_rsubi(int64_t a, UOp *b) { return u_alu2(OP_ADD, u_const_like_i(b, a), u_neg(b)); }
UOp *u_mul(UOp *a, UOp *b) { return u_alu2(OP_MUL, a, b); }
UOp *u_muli(UOp *a, int64_t b) { return u_alu2(OP_MUL, a, u_const_like_i(a, b)); }
UOp *u_idiv(UOp *a, UOp *b) { return u_alu2(OP_IDIV, a, b); }
UOp *u_idivi(UOp *a, int64_t b) { return u_alu2(OP_IDIV, a, u_const_like_i(a, b)); }
UOp *u_mod(UOp *a, UOp *b) { return u_alu2(OP_MOD, a, b); }
UOp *u_modi(UOp *a, int64_t b) { return u_alu2(OP_MOD, a, u_const_like_i(a, b)); }
UOp *u_lt(UOp *a, UOp *b) { return u_alu2(OP_CMPLT, a, b); }
UOp *u_lti(UOp *a, int64_t b) { return u_alu2(OP_CMPLT, a, u_const_like_i(a, b)); }
UOp *u_gt(UOp *a, UOp *b) { return u_alu2(OP_CMPLT, b, a); }
UOp *u_gti(UOp *a, int64_t b) { return u_alu2(OP_CMPLT, u_const_like_i(a, b), a); }
UOp *u_ge(UOp *a, UOp *b) { return u_logical_not(u_lt(a, b)); }
UOp *u_gei(UOp *a, int64_t b) { return u_logical_not(u_lti(a, b)); }
UOp *u_le(UOp *a, UOp *b) { return u_logical_not(u_gt(a, b)); }
UOp *u_lei(UOp *a, int64_t b) { return u_logical_not(u_gti(a, b)); }
UOp *u_ne(UOp *a, UOp *b) { return u_alu2(OP_CMPNE, a, b); }
UOp *u_nei(UOp *a, int64_t b) { return u_alu2(OP_CMPNE, a, u_const_like_i(a, b)); }
UOp *u_eq(UOp *a, UOp *b) { return u_logical_not(u_ne(a, b)); }
UOp *u_logical_not(UOp *a) { return u_alu2(OP_CMPNE, a, u_const_like(a, v_bool(true))); }
UOp *u_and(UOp *a, UOp *b) { check_dtype(a); return u_alu2(OP_AND, a, b); }
UOp *u_or(UOp *a, UOp *b) { check_dtype(a); return u_alu2(OP_OR, a, b); }
UOp *u_xor(UOp *a, UOp *b) { check_dtype(a); return u_alu2(OP_XOR, a, b); }
UOp *u_max(UOp *a, UOp *b) { return u_alu2(OP_MAX, a, b); }
UOp *u_maxi(UOp *a, int64_t b) { return u_alu2(OP_MAX, a, u_const_like_i(a, b)); }
UOp *u_min(UOp *a, UOp *b) { return u_neg(u_max(u_neg(a), u_neg(b))); }
UOp *u_mini(UOp *a, int64_t b) { UOp *na = u_neg(a); return u_neg(u_max(na, u_const_like_i(na, b == INT64_MIN ? INT64_MAX : -b))); }
UOp *u_where(UOp *c, UOp *a, UOp *b) { return u_alu3(OP_WHERE, c, a, b); }
UOp *u_pow(UOp *a, UOp *b) { return u_alu2(OP_POW, a, b); }
UOp *u_cast(UOp *a, const DType *dt) {
  if (dt->count == 1 && dt->count != a->dtype->count) dt = dt_vec(dt, a->dtype->count);
  if (a->dtype == dt) return a;
  return uop1(OP_CAST, dt, a, NULL);
}
UOp *u_variable(const char *name, int64_t min, int64_t max, const DType *dt) {
  return uop0(OP_DEFINE_VAR, dt ? dt : dt_int, v_tuplev(3, v_str(name), v_int(min), v_int(max)));
}
UOp *u_bind(UOp *var, int64_t val) {
  if (var->op != OP_DEFINE_VAR) tg_fail(TG_EINTERNAL, "bind: op is %s, need DEFINE_VAR", op_names[var->op]);
  UOp *uval = u_const_like_i(var, val);
  Num lo = n_of_value(var->arg->items[1]), hi = n_of_value(var->arg->items[2]);
  if (!(n_le(lo, u_lo(uval)) && n_le(u_hi(uval), hi)))
    tg_fail(TG_EINPUT, "bind %lld not in range [%lld, %lld]", (long long)val, (long long)n_i64(lo), (long long)n_i64(hi));
  return uop2(OP_BIND, var->dtype, var, uval, NULL);
}
UOp *u_gep(UOp *u, int n, const int *idx) {
  if (n == 1) {
    int i = idx[0];
    if (u->op == OP_VECTORIZE) return u->src[i];
    if (u->op == OP_VCONST) return u_const(dt_scalar_of(u->dtype), u->arg->items[i]);
    if (u->op == OP_CONST) return u_const(dt_scalar_of(u->dtype), u->arg);
  }
  int64_t ix[64];
  for (int i = 0; i < n && i < 64; i++) ix[i] = idx[i];
  const DType *s = dt_scalar_of(u->dtype);
  return uop1(OP_GEP, n > 1 ? dt_vec(s, n) : s, u, v_ints(n, ix));
}

/* ---- ranges as Values ---- */
const Value *u_vmin(UOp *u) { return n_value(u_lo(u)); }
const Value *u_vmax(UOp *u) { return n_value(u_hi(u)); }
int64_t u_vmin_i(UOp *u) { return n_i64(u_lo(u)); }
int64_t u_vmax_i(UOp *u) { return n_i64(u_hi(u)); }
bool u_in_dtype_range(UOp *u) { return n_ge(u_lo(u), n_dtmin(u->dtype)) && n_le(u_hi(u), n_dtmax(u->dtype)); }

/* ---- simplify / resolve ---- */
/* UOp.simplify is a pure function of the (interned) node, and so is graph_rewrite's result for
 * every node below it: each one keeps its result in u->cache[1] (graph_rewrite_memo), so a repeated
 * call creates no node the first one did not, and a subexpression is simplified once */
#define SIMPLIFY_SLOT 1
UOp *u_simplify(UOp *u) {
  if (u->cache[SIMPLIFY_SLOT]) return u->cache[SIMPLIFY_SLOT];
  symbolic_init();
  return graph_rewrite_memo(u, pm_symbolic, SIMPLIFY_SLOT);
}
Sint u_ssimplify(UOp *u) { return si_from(u_simplify(u)); }
bool resolve(UOp *x, bool dflt) {
  if (x->dtype != dt_bool) tg_fail(TG_EINTERNAL, "UOp in resolve must be bool");
  UOp *sx = u_simplify(x);
  MinMax mm = u_minmax(sx);
  return n_eq(mm.lo, mm.hi) ? n_truthy(mm.lo) : dflt;
}

/* ---- sint ---- */
UOp *si_uop(Sint s) { return s.u ? s.u : uop0(OP_CONST, dt_int, v_int(s.c)); }
Sint si_from(UOp *u) {
  if (u->op == OP_CONST && u->arg->kind == V_INT) return si(u->arg->i);
  if (u->op == OP_CONST && u->arg->kind == V_BOOL) return si(u->arg->b);
  return (Sint){0, u};
}
static Sint si_u(UOp *u) { return (Sint){0, u}; }
static int64_t i_floordiv64(int64_t a, int64_t b) {
  if (b == 0) tg_fail(TG_EINTERNAL, "integer division or modulo by zero");
  return n_i64(n_floordiv(n_int(a), n_int(b)));
}
Sint si_add(Sint a, Sint b) {
  if (!a.u && !b.u) return si(n_i64(n_add(n_int(a.c), n_int(b.c))));
  if (!a.u) return si_u(u_add(u_const_like_i(b.u, a.c), b.u));   /* int + UOp: __radd__ */
  return si_u(u_add(a.u, b.u ? b.u : u_const_like_i(a.u, b.c)));
}
Sint si_sub(Sint a, Sint b) {
  if (!a.u && !b.u) return si(n_i64(n_sub(n_int(a.c), n_int(b.c))));
  if (!a.u) return si_u(u_rsubi(a.c, b.u));
  return si_u(b.u ? u_sub(a.u, b.u) : u_subi(a.u, b.c));
}
Sint si_mul(Sint a, Sint b) {
  if (!a.u && !b.u) return si(n_i64(n_mul(n_int(a.c), n_int(b.c))));
  if (!a.u) return si_u(u_mul(u_const_like_i(b.u, a.c), b.u));
  return si_u(u_mul(a.u, b.u ? b.u : u_const_like_i(a.u, b.c)));
}
Sint si_floordiv(Sint a, Sint b) {
  if (!a.u && !b.u) return si(i_floordiv64(a.c, b.c));
  if (!a.u) return si_u(u_idiv(u_const_like_i(b.u, a.c), b.u));
  return si_u(u_idiv(a.u, b.u ? b.u : u_const_like_i(a.u, b.c)));
}
Sint si_mod(Sint a, Sint b) {
  if (!a.u && !b.u) {
    if (b.c == 0) tg_fail(TG_EINTERNAL, "integer division or modulo by zero");
    return si(n_i64(n_pymod(n_int(a.c), n_int(b.c))));
  }
  if (!a.u) return si_u(u_mod(u_const_like_i(b.u, a.c), b.u));
  return si_u(u_mod(a.u, b.u ? b.u : u_const_like_i(a.u, b.c)));
}
Sint si_neg(Sint a) { return a.u ? si_u(u_neg(a.u)) : si(a.c == INT64_MIN ? INT64_MAX : -a.c); }
/* _suop: uops first (in order), then the python max/min of the ints, reduced with the UOp op */
Sint si_smax(Sint a, Sint b) {
  if (!a.u && !b.u) return si(a.c >= b.c ? a.c : b.c);
  UOp *r;
  if (a.u && b.u) r = u_max(a.u, b.u);
  else r = a.u ? u_maxi(a.u, b.c) : u_maxi(b.u, a.c);
  return u_ssimplify(r);
}
Sint si_smin(Sint a, Sint b) {
  if (!a.u && !b.u) return si(a.c <= b.c ? a.c : b.c);
  UOp *r;
  if (a.u && b.u) r = u_min(a.u, b.u);
  else r = a.u ? u_mini(a.u, b.c) : u_mini(b.u, a.c);
  return u_ssimplify(r);
}
bool si_resolve_lt(Sint a, Sint b, bool dflt) {
  if (!a.u && !b.u) return a.c < b.c;
  if (a.u) return resolve(b.u ? u_lt(a.u, b.u) : u_lti(a.u, b.c), dflt);
  return resolve(u_gti(b.u, a.c), dflt);              /* int < UOp -> UOp.__gt__(int) */
}
bool si_resolve_ne(Sint a, Sint b, bool dflt) {
  if (!a.u && !b.u) return a.c != b.c;
  if (a.u) return resolve(b.u ? u_ne(a.u, b.u) : u_nei(a.u, b.c), dflt);
  return resolve(u_nei(b.u, a.c), dflt);              /* int != UOp -> UOp.__ne__(int) */
}
bool si_resolve_eq(Sint a, Sint b, bool dflt) {
  if (!a.u && !b.u) return a.c == b.c;
  return !si_resolve_ne(a, b, !dflt);
}
int64_t si_vmax(Sint a) { return a.u ? u_vmax_i(a.u) : a.c; }
int64_t si_vmin(Sint a) { return a.u ? u_vmin_i(a.u) : a.c; }
