/* lower.c: kernel AST -> lowered UOp graph -> linear program (codegen.h has the overview).
 *
 * Lowering asks for a node's value at an index vector (one index UOp per axis of the node's
 * shape), memoised on (node, index vector) so shared subtrees are lowered once per index:
 *   VIEW(x)        (flat, valid) = st_to_indexed_uops(view, idx); x is asked for at flat unravelled
 *                  over x's shape; a LOAD of a bare DEFINE_GLOBAL under it becomes LOAD(INDEX(buf,
 *                  flat, valid)); anything masked becomes valid.where(x, 0) (tinygrad's VIEW(CONST)).
 *   REDUCE_AXIS    the reduced axes get fresh RANGEs: REDUCE(src at those ranges, ranges..., op).
 *   ALU/CAST/...   the same index vector for every source (a source of another shape of the same
 *                  size, like a bare LOAD of a DEFINE_GLOBAL, gets the flat index unravelled).
 * This accepts the scheduler's ASTs as they are, VIEWs anywhere (tinygrad first pushes them to the
 * loads with view_left/view_right; asking for a value at an index is the same composition).
 *
 * Linearizing places each value in the loop of the innermost RANGE it uses (hoisting everything
 * else out), on an explicit task stack: a scope is a loop body whose insertion point stays in
 * front of its open inner loop, so a value found late still lands before the loop that needs it. */
#include "codegen.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---------------------------------------------------------------- shapes of AST nodes */
typedef struct LCtx {
  Arena *a;
  Map shapes;            /* AST node -> SList* (NULL entry: no shape, a bare CONST) */
  Map memo;              /* key(node, idx) -> lowered UOp */
  int next_range;
  /* for the kernel name: the full shape's axes, which axis each RANGE is, every buffer's index */
  int nout, nf, fcap; Sint *F; const Sint *oshape; bool *red; int *raxis, racap;
  Map newaxis;           /* key(REDUCE_AXIS, axis) -> full-shape axis + 1 for swizzled reduces */
  PtrVec recs;           /* (idx, valid) pairs of LOADs, STOREs and masked CONSTs */
  UOp *out_idx, *out_valid; /* the last STORE's: Kernel.sts[0] */
} LCtx;

static const SList *shape_of(LCtx *c, UOp *u) { return map_get(&c->shapes, u, uop_h(u), NULL); }

static SList *new_sl(LCtx *c, int n) {
  SList *s = arena_alloc(c->a, sizeof *s);
  s->n = n;
  s->v = arena_alloc(c->a, sizeof(Sint) * (size_t)(n ? n : 1));
  return s;
}

/* UOp.shape of every AST node, in toposort order (sources first) */
static void compute_shapes(LCtx *c, UList topo) {
  for (int i = 0; i < topo.n; i++) {
    UOp *u = topo.v[i];
    const SList *r = NULL;
    switch (u->op) {
    case OP_VIEW:
      if (u->arg->kind != V_ST) tg_fail(TG_EINPUT, "VIEW without a ShapeTracker arg");
      { SList s = st_shape(u->arg->st); SList *p = new_sl(c, s.n); memcpy((Sint *)p->v, s.v, sizeof(Sint) * (size_t)s.n); r = p; }
      break;
    case OP_DEFINE_GLOBAL: {
      SList *p = new_sl(c, 1);
      ((Sint *)p->v)[0] = si(u->dtype->size);
      r = p;
      break;
    }
    case OP_LOAD: case OP_STORE: r = shape_of(c, u->src[0]); break;
    case OP_CONST: case OP_DEFINE_VAR: r = u->nsrc ? shape_of(c, u->src[0]) : NULL; break;
    case OP_REDUCE_AXIS: {
      const SList *s = shape_of(c, u->src[0]);
      if (!s) tg_fail(TG_EINPUT, "REDUCE_AXIS of a value without a shape");
      SList *p = new_sl(c, s->n);
      memcpy((Sint *)p->v, s->v, sizeof(Sint) * (size_t)s->n);
      const Value *ax = u->arg->items[1];
      for (int k = 0; k < ax->n; k++) ((Sint *)p->v)[ax->items[k]->i] = si(1);
      r = p;
      break;
    }
    default:
      for (int k = 0; k < u->nsrc && !r; k++) r = shape_of(c, u->src[k]);
      break;
    }
    map_put(&c->shapes, u, uop_h(u), (void *)r);
  }
}

/* ---------------------------------------------------------------- index helpers */
static UOp *c_true(void) { return uop_const(dt_bool, v_bool(true)); }
static bool is_true(UOp *v) { return v->op == OP_CONST && v->arg->kind == V_BOOL && v->arg->b; }
static UOp *zero_of(const DType *dt) { return uop_const_int(dt, 0); }
static UOp *idx_key(int n, UOp *const *idx) { return uop_new(OP_SINK, dt_void, n, idx, v_str("tgc.idx"), NULL); }
static UOp *memo_key(UOp *node, UOp *ikey) { return uop2(OP_NOOP, dt_void, node, ikey, v_str("tgc.lower")); }

/* tinygrad's unravel(shape, offset): ((offset // acc) % d) per axis, simplified */
static void unravel(const SList *s, UOp *flat, UOp **out) {
  Sint acc = si(1);
  for (int k = s->n - 1; k >= 0; k--) {
    if (si_is_int(s->v[k]) && s->v[k].c == 1) { out[k] = uop_const_int(dt_int, 0); continue; }
    UOp *q = (si_is_int(acc) && acc.c == 1) ? flat : u_idiv(flat, si_uop(acc));
    out[k] = u_simplify(u_mod(q, si_uop(s->v[k])));
    acc = si_mul(acc, s->v[k]);
  }
}
/* the flat (C-contiguous) offset of idx within shape s */
static UOp *ravel(const SList *s, UOp *const *idx) {
  UOp *r = NULL;
  Sint acc = si(1);
  for (int k = s->n - 1; k >= 0; k--) {
    if (si_is_int(s->v[k]) && s->v[k].c == 1) continue;
    UOp *t = (si_is_int(acc) && acc.c == 1) ? idx[k] : u_mul(idx[k], si_uop(acc));
    r = r ? u_add(r, t) : t;
    acc = si_mul(acc, s->v[k]);
  }
  return r ? u_simplify(r) : uop_const_int(dt_int, 0);
}
static bool sl_same(const SList *a, const SList *b) {
  if (a->n != b->n) return false;
  for (int i = 0; i < a->n; i++) if (!si_eq(a->v[i], b->v[i])) return false;
  return true;
}


/* ---------------------------------------------------------------- name bookkeeping */
static void rec_index(LCtx *c, UOp *idx, UOp *valid) { vec_push(&c->recs, idx); vec_push(&c->recs, valid); }
static void set_raxis(LCtx *c, int64_t rid, int axis) {
  if (rid >= c->racap) {
    int nc = c->racap ? c->racap : 16;
    while (rid >= nc) nc *= 2;
    int *n = arena_alloc(c->a, sizeof(int) * (size_t)nc);
    memset(n, 0xff, sizeof(int) * (size_t)nc);
    if (c->racap) memcpy(n, c->raxis, sizeof(int) * (size_t)c->racap);
    c->raxis = n; c->racap = nc;
  }
  c->raxis[rid] = axis;
}
static int add_axis(LCtx *c, Sint size, bool red) {
  if (c->nf == c->fcap) {
    int nc = c->fcap ? c->fcap * 2 : 16;
    Sint *nF = arena_alloc(c->a, sizeof(Sint) * (size_t)nc);
    bool *nr = arena_alloc(c->a, sizeof(bool) * (size_t)nc);
    if (c->nf) { memcpy(nF, c->F, sizeof(Sint) * (size_t)c->nf); memcpy(nr, c->red, sizeof(bool) * (size_t)c->nf); }
    c->F = nF; c->red = nr; c->fcap = nc;
  }
  c->F[c->nf] = size; c->red[c->nf] = red;
  return c->nf++;
}
/* which full-shape axis the RANGE for axis a of reduce r is: the same axis when the reduce's
 * source has the output's rank, else an axis appended after the others (view_right's swizzle) */
static int reduce_axis_of(LCtx *c, UOp *r, int a, Sint size) {
  const SList *xs = shape_of(c, r->src[0]);
  if (xs->n == c->nout && a < c->nout && si_is_int(c->oshape[a]) && c->oshape[a].c == 1) {
    if (si_is_int(c->F[a]) && c->F[a].c == 1) c->F[a] = size;
    c->red[a] = true;
    return a;
  }
  UOp *key = uop2(OP_NOOP, dt_void, r, uop_const_int(dt_int, a), v_str("tgc.axis"));
  bool isnew;
  void **slot = map_slot(&c->newaxis, key, uop_h(key), &isnew);
  if (isnew) *slot = (void *)(intptr_t)(add_axis(c, size, true) + 1);
  return (int)(intptr_t)*slot - 1;
}

/* ---------------------------------------------------------------- lowering */
typedef struct Frame {
  UOp *node, *ikey, *key;
  int nch; UOp **chn, **chk;   /* children requests: node and index key */
  UOp *done;                   /* result when no children are needed */
  UOp *valid;                  /* VIEW: mask to apply */
  int nr; UOp **ranges;        /* REDUCE_AXIS: the new RANGEs */
  bool expanded;
} Frame;

static UOp *bare_of(UOp *u) { return uop0((Op)u->op, u->dtype, u->arg); }

static UOp *load_of(UOp *load, UOp *buf, UOp *idx, UOp *valid) {
  UOp *ix = is_true(valid) ? uop2(OP_INDEX, buf->dtype, buf, idx, NULL) : uop3(OP_INDEX, buf->dtype, buf, idx, valid, NULL);
  return uop1(OP_LOAD, load->dtype, ix, NULL);
}

/* fill f's children (or f->done) for node at index vector ikey */
static void lower_prepare(LCtx *c, Frame *f) {
  UOp *u = f->node, *const *idx = f->ikey->src;
  int n = f->ikey->nsrc;
  f->nch = 0;
  switch (u->op) {
  case OP_CONST: case OP_DEFINE_VAR: {
    if (!u->nsrc) { f->done = u; return; }
    UOp *fi, *valid;
    st_to_indexed_uops(u->src[0]->arg->st, idx, &fi, &valid);
    rec_index(c, fi, valid);
    UOp *b = bare_of(u);
    f->done = is_true(valid) ? b : u_where(valid, b, zero_of(u->dtype));
    return;
  }
  case OP_LOAD: {
    UOp *buf = u->src[0];
    if (buf->op == OP_DEFINE_GLOBAL) {
      UOp *i0 = n ? idx[0] : uop_const_int(dt_int, 0);
      rec_index(c, i0, c_true());
      f->done = load_of(u, buf, i0, c_true());
      return;
    }
    if (buf->op == OP_VIEW && buf->src[0]->op == OP_DEFINE_GLOBAL) {
      UOp *fi, *valid;
      st_to_indexed_uops(buf->arg->st, idx, &fi, &valid);
      rec_index(c, fi, valid);
      f->done = load_of(u, buf->src[0], fi, valid);
      return;
    }
    tg_fail(TG_EINPUT, "LOAD of %s is not a buffer", op_names[buf->op]);
  }
  case OP_VIEW: {
    UOp *x = u->src[0], *fi, *valid;
    st_to_indexed_uops(u->arg->st, idx, &fi, &valid);
    if (x->op == OP_LOAD && x->src[0]->op == OP_DEFINE_GLOBAL) { rec_index(c, fi, valid); f->done = load_of(x, x->src[0], fi, valid); return; }
    if (x->op == OP_DEFINE_GLOBAL) tg_fail(TG_EINPUT, "VIEW of a DEFINE_GLOBAL used as a value");
    /* tinygrad pushes this view onto the buffers below; its mask blocks the same merges */
    if (!is_true(valid)) rec_index(c, uop_const_int(dt_int, 0), valid);
    f->valid = valid;
    const SList *xs = shape_of(c, x);
    int xn = xs ? xs->n : 0;
    UOp **ni = arena_alloc(c->a, sizeof(UOp *) * (size_t)(xn + 1));
    if (xs) unravel(xs, fi, ni);
    f->nch = 1;
    f->chn = arena_alloc(c->a, sizeof(UOp *));
    f->chk = arena_alloc(c->a, sizeof(UOp *));
    f->chn[0] = x; f->chk[0] = idx_key(xn, ni);
    return;
  }
  case OP_REDUCE_AXIS: {
    const SList *xs = shape_of(c, u->src[0]);
    const Value *ax = u->arg->items[1];
    UOp **ni = arena_alloc(c->a, sizeof(UOp *) * (size_t)(xs->n + 1));
    for (int k = 0; k < xs->n; k++) ni[k] = k < n ? idx[k] : uop_const_int(dt_int, 0);
    f->ranges = arena_alloc(c->a, sizeof(UOp *) * (size_t)(ax->n + 1));
    f->nr = 0;
    for (int k = 0; k < ax->n; k++) {
      int a = (int)ax->items[k]->i;
      if (si_is_int(xs->v[a]) && xs->v[a].c == 1) { ni[a] = uop_const_int(dt_int, 0); continue; }
      set_raxis(c, c->next_range, reduce_axis_of(c, u, a, xs->v[a]));
      ni[a] = uop1(OP_RANGE, dt_int, si_uop(xs->v[a]), v_int(c->next_range++));
      f->ranges[f->nr++] = ni[a];
    }
    f->nch = 1;
    f->chn = arena_alloc(c->a, sizeof(UOp *));
    f->chk = arena_alloc(c->a, sizeof(UOp *));
    f->chn[0] = u->src[0]; f->chk[0] = idx_key(xs->n, ni);
    return;
  }
  default: break;
  }
  if (!(op_in((Op)u->op, G_ALU) || u->op == OP_CAST || u->op == OP_BITCAST))
    tg_fail(TG_EINPUT, "can't lower a %s in a kernel AST", op_names[u->op]);
  const SList *us = shape_of(c, u);
  f->nch = u->nsrc;
  f->chn = arena_alloc(c->a, sizeof(UOp *) * (size_t)u->nsrc);
  f->chk = arena_alloc(c->a, sizeof(UOp *) * (size_t)u->nsrc);
  for (int k = 0; k < u->nsrc; k++) {
    const SList *ss = shape_of(c, u->src[k]);
    f->chn[k] = u->src[k];
    f->chk[k] = f->ikey;
    if (ss && us && !sl_same(ss, us)) {  /* same size, other shape: go through the flat index */
      UOp **ni = arena_alloc(c->a, sizeof(UOp *) * (size_t)(ss->n + 1));
      unravel(ss, ravel(us, idx), ni);
      f->chk[k] = idx_key(ss->n, ni);
    }
  }
}

static UOp *memo_get(LCtx *c, UOp *key) { return map_get(&c->memo, key, uop_h(key), NULL); }

/* the lowered value of node at index vector ikey (explicit stack, no recursion on depth) */
static UOp *lower_value(LCtx *c, UOp *node, UOp *ikey) {
  UOp *k0 = memo_key(node, ikey), *r0 = memo_get(c, k0);
  if (r0) return r0;
  int cap = 64, n = 0;
  Frame *st = arena_alloc(c->a, sizeof(Frame) * (size_t)cap);
  st[n++] = (Frame){.node = node, .ikey = ikey, .key = k0};
  while (n) {
    Frame *f = &st[n - 1];
    if (!f->expanded) {
      f->expanded = true;
      lower_prepare(c, f);
      if (f->done) { map_put(&c->memo, f->key, uop_h(f->key), f->done); n--; continue; }
      for (int k = f->nch - 1; k >= 0; k--) {
        UOp *ck = memo_key(f->chn[k], f->chk[k]);
        if (memo_get(c, ck)) continue;
        if (n == cap) {
          Frame *ns = arena_alloc(c->a, sizeof(Frame) * (size_t)cap * 2);
          memcpy(ns, st, sizeof(Frame) * (size_t)cap);
          st = ns; cap *= 2; f = &st[n - 1];
        }
        st[n++] = (Frame){.node = f->chn[k], .ikey = f->chk[k], .key = ck};
      }
      continue;
    }
    n--;
    if (memo_get(c, f->key)) continue;
    UOp **vals = arena_alloc(c->a, sizeof(UOp *) * (size_t)(f->nch + 1));
    for (int k = 0; k < f->nch; k++) {
      vals[k] = memo_get(c, memo_key(f->chn[k], f->chk[k]));
      if (!vals[k]) tg_fail(TG_EINTERNAL, "lower: %s source %d not lowered", op_names[f->node->op], k);
    }
    UOp *u = f->node, *r;
    if (u->op == OP_VIEW) r = is_true(f->valid) ? vals[0] : u_where(f->valid, vals[0], zero_of(vals[0]->dtype));
    else if (u->op == OP_REDUCE_AXIS) {
      if (!f->nr) r = vals[0];
      else {
        UOp **s = arena_alloc(c->a, sizeof(UOp *) * (size_t)(f->nr + 1));
        s[0] = vals[0];
        memcpy(s + 1, f->ranges, sizeof(UOp *) * (size_t)f->nr);
        r = uop_new(OP_REDUCE, u->dtype, f->nr + 1, s, v_ops(u->arg->items[0]->op), NULL);
      }
    } else r = uop_new((Op)u->op, u->dtype, u->nsrc, vals, u->arg, NULL);
    map_put(&c->memo, f->key, uop_h(f->key), r);
  }
  return memo_get(c, k0);
}

/* STORE(VIEW(DEFINE_GLOBAL), x) -> STORE(INDEX(buf, idx[, valid]), value, ranges...) */
static UOp *lower_store(LCtx *c, UOp *s) {
  UOp *view = s->src[0];
  if (view->op != OP_VIEW || view->src[0]->op != OP_DEFINE_GLOBAL) tg_fail(TG_EINPUT, "STORE target is not a VIEW of a DEFINE_GLOBAL");
  SList sh = st_shape(view->arg->st);
  UOp **g = arena_alloc(c->a, sizeof(UOp *) * (size_t)(sh.n + 2));
  UOp **srcs = arena_alloc(c->a, sizeof(UOp *) * (size_t)(sh.n + 2));
  int nr = 0;
  for (int i = 0; i < sh.n; i++) {
    if (si_is_int(sh.v[i]) && sh.v[i].c == 1) g[i] = uop_const_int(dt_int, 0);
    else { g[i] = uop1(OP_RANGE, dt_int, si_uop(sh.v[i]), v_int(i)); srcs[2 + nr++] = g[i]; }
  }
  UOp *fi, *valid;
  st_to_indexed_uops(view->arg->st, g, &fi, &valid);
  rec_index(c, fi, valid);
  c->out_idx = fi; c->out_valid = valid;
  UOp *buf = view->src[0];
  srcs[0] = is_true(valid) ? uop2(OP_INDEX, buf->dtype, buf, fi, NULL) : uop3(OP_INDEX, buf->dtype, buf, fi, valid, NULL);
  srcs[1] = lower_value(c, s->src[1], idx_key(sh.n, g));
  return uop_new(OP_STORE, dt_void, 2 + nr, srcs, NULL, NULL);
}

UOp *lower_identity(Op op, const DType *dt) {
  switch (op) {
  case OP_ADD: return uop_const_int(dt, 0);
  case OP_MUL: return uop_const_int(dt, 1);
  case OP_MAX:
    if (dt_is_float(dt)) return uop_const_float(dt, dt_fmin(dt));
    if (dt_is_bool(dt)) return uop_const(dt, v_bool(false));
    return uop_const(dt, v_int(dt_imin(dt)));
  default: tg_fail(TG_EINPUT, "reduce op %s has no identity", op_names[op]);
  }
}

/* ---------------------------------------------------------------- linearizing */
typedef struct Scope Scope;
typedef struct Item { uint8_t kind; UOp *u, *aux; Scope *child; } Item;
struct Scope { Item *it; int n, cap, ins; Map memo; UOp *range; };

typedef struct Lin {
  Arena *a;
  Map fr;                 /* lowered UOp -> uint64_t* free-range bitset */
  int nw;                 /* words per bitset */
  Scope **ctx; int d, ctxcap;
} Lin;

static Scope *scope_new(Lin *l, UOp *range) {
  Scope *s = arena_alloc(l->a, sizeof *s);
  s->range = range;
  map_init(&s->memo, l->a);
  return s;
}
static void scope_insert(Lin *l, Scope *s, Item it, bool open) {
  if (s->n == s->cap) {
    int nc = s->cap ? s->cap * 2 : 16;
    Item *ni = arena_alloc(l->a, sizeof(Item) * (size_t)nc);
    if (s->n) memcpy(ni, s->it, sizeof(Item) * (size_t)s->n);
    s->it = ni; s->cap = nc;
  }
  memmove(s->it + s->ins + 1, s->it + s->ins, sizeof(Item) * (size_t)(s->n - s->ins));
  s->it[s->ins] = it;
  s->n++;
  if (!open) s->ins++;   /* an open loop stays at the insertion point until it closes */
}
static void ctx_push(Lin *l, Scope *s) {
  if (l->d + 1 >= l->ctxcap) {
    int nc = l->ctxcap * 2;
    Scope **n = arena_alloc(l->a, sizeof(Scope *) * (size_t)nc);
    memcpy(n, l->ctx, sizeof(Scope *) * (size_t)l->ctxcap);
    l->ctx = n; l->ctxcap = nc;
  }
  l->ctx[++l->d] = s;
}
static void open_loop(Lin *l, UOp *range) {
  Scope *child = scope_new(l, range);
  scope_insert(l, l->ctx[l->d], (Item){LK_LOOP, range, NULL, child}, true);
  ctx_push(l, child);
}
static void close_loop(Lin *l) { l->d--; l->ctx[l->d]->ins++; }

static const uint64_t *fr_of(Lin *l, UOp *u) { return map_get(&l->fr, u, uop_h(u), NULL); }
static bool fr_has(const uint64_t *b, int64_t r) { return (b[r >> 6] >> (r & 63)) & 1; }

/* free RANGEs of every lowered node: its own, its sources', minus those a REDUCE closes */
static void compute_fr(Lin *l, UList topo) {
  for (int i = 0; i < topo.n; i++) {
    UOp *u = topo.v[i];
    uint64_t *b = arena_alloc(l->a, sizeof(uint64_t) * (size_t)l->nw);
    for (int k = 0; k < u->nsrc; k++) {
      const uint64_t *sb = fr_of(l, u->src[k]);
      if (sb) for (int w = 0; w < l->nw; w++) b[w] |= sb[w];
    }
    if (u->op == OP_RANGE) b[u->arg->i >> 6] |= 1ull << (u->arg->i & 63);
    if (u->op == OP_REDUCE) for (int k = 1; k < u->nsrc; k++) b[u->src[k]->arg->i >> 6] &= ~(1ull << (u->src[k]->arg->i & 63));
    map_put(&l->fr, u, uop_h(u), b);
  }
}
/* the context depth of the innermost loop whose RANGE u uses */
static int level_of(Lin *l, UOp *u) {
  const uint64_t *b = fr_of(l, u);
  int lv = 0, need = 0, seen = 0;
  for (int w = 0; w < l->nw; w++) need += __builtin_popcountll(b[w]);
  for (int i = 1; i <= l->d; i++) if (fr_has(b, l->ctx[i]->range->arg->i)) { lv = i; seen++; }
  if (seen != need) tg_fail(TG_EINTERNAL, "linearize: %s uses a RANGE outside its loops", op_names[u->op]);
  return lv;
}

enum { T_EMIT, T_FINISH, T_RED_END };
typedef struct Task { uint8_t kind; int lv; UOp *u; Scope **saved; int nsaved; } Task;

static bool inline_op(Op op) { return op == OP_CONST || op == OP_DEFINE_VAR || op == OP_RANGE || op == OP_DEFINE_GLOBAL; }

static void emit(Lin *l, UOp *root) {
  int cap = 64, n = 0;
  Task *ts = arena_alloc(l->a, sizeof(Task) * (size_t)cap);
  ts[n++] = (Task){T_EMIT, 0, root, NULL, 0};
  while (n) {
    if (n + 8 >= cap) {
      Task *nt = arena_alloc(l->a, sizeof(Task) * (size_t)cap * 2);
      memcpy(nt, ts, sizeof(Task) * (size_t)n);
      ts = nt; cap *= 2;
    }
    Task t = ts[--n];
    UOp *u = t.u;
    if (t.kind == T_EMIT) {
      if (inline_op((Op)u->op)) { for (int k = u->nsrc - 1; k >= 0; k--) ts[n++] = (Task){T_EMIT, 0, u->src[k], NULL, 0}; continue; }
      if (u->op == OP_INDEX) { for (int k = u->nsrc - 1; k >= 1; k--) ts[n++] = (Task){T_EMIT, 0, u->src[k], NULL, 0}; continue; }
      int lv = level_of(l, u);
      Scope *s = l->ctx[lv];
      if (map_has(&s->memo, u, uop_h(u))) continue;
      if (u->op == OP_REDUCE) {
        scope_insert(l, s, (Item){LK_ACC, u, NULL, NULL}, false);
        int ns = l->d - lv;
        Scope **saved = arena_alloc(l->a, sizeof(Scope *) * (size_t)(ns + 1));
        memcpy(saved, l->ctx + lv + 1, sizeof(Scope *) * (size_t)ns);
        l->d = lv;
        for (int k = 1; k < u->nsrc; k++) open_loop(l, u->src[k]);
        ts[n++] = (Task){T_RED_END, lv, u, saved, ns};
        ts[n++] = (Task){T_EMIT, 0, u->src[0], NULL, 0};
        continue;
      }
      ts[n++] = (Task){T_FINISH, 0, u, NULL, 0};
      for (int k = u->nsrc - 1; k >= 0; k--) ts[n++] = (Task){T_EMIT, 0, u->src[k], NULL, 0};
    } else if (t.kind == T_FINISH) {
      int lv = level_of(l, u);
      Scope *s = l->ctx[lv];
      if (map_has(&s->memo, u, uop_h(u))) continue;
      scope_insert(l, s, (Item){u->op == OP_STORE ? LK_STORE : LK_VALUE, u, NULL, NULL}, false);
      map_put(&s->memo, u, uop_h(u), u);
    } else {
      scope_insert(l, l->ctx[l->d], (Item){LK_ACCUM, u, u->src[0], NULL}, false);
      while (l->d > t.lv) close_loop(l);
      for (int k = 0; k < t.nsaved; k++) ctx_push(l, t.saved[k]);
      map_put(&l->ctx[t.lv]->memo, u, uop_h(u), u);
    }
  }
}

/* flatten the scope tree into instructions with depths */
static void flatten(Lin *l, Scope *root, PtrVec *out) {
  typedef struct { Scope *s; int i; } Pos;
  int cap = 16, n = 0;
  Pos *st = arena_alloc(l->a, sizeof(Pos) * (size_t)cap);
  st[n++] = (Pos){root, 0};
  while (n) {
    Pos *p = &st[n - 1];
    if (p->i == p->s->n) {
      n--;
      if (n) { LInst *e = arena_alloc(l->a, sizeof *e); *e = (LInst){LK_ENDLOOP, (uint16_t)(n - 1), p->s->range, NULL}; vec_push(out, e); }
      continue;
    }
    Item it = p->s->it[p->i++];
    LInst *e = arena_alloc(l->a, sizeof *e);
    *e = (LInst){it.kind, (uint16_t)(n - 1), it.u, it.aux};
    vec_push(out, e);
    if (it.kind == LK_LOOP) {
      if (n == cap) { Pos *ns = arena_alloc(l->a, sizeof(Pos) * (size_t)cap * 2); memcpy(ns, st, sizeof(Pos) * (size_t)cap); st = ns; cap *= 2; }
      st[n++] = (Pos){it.child, 0};
    }
  }
}


/* ---------------------------------------------------------------- the kernel name */
/* views_to_real_strides from an (idx, valid) pair: per full-shape axis, the RANGE's coefficient
 * in idx (0 when unused), or unknown (has=false) when it is not linear or it is masked */
static void real_strides(LCtx *c, UOp *idx, UOp *valid, int64_t *out, bool *has) {
  for (int i = 0; i < c->nf; i++) { out[i] = 0; has[i] = false; }
  UOp *terms[256];
  int nt = split_uop(idx, OP_ADD, terms, 256);
  for (int t = 0; t < nt && t < 256; t++) {
    UOp *x = terms[t], *r = NULL;
    int64_t k = 0;
    if (x->op == OP_RANGE) { r = x; k = 1; }
    else if (x->op == OP_MUL && x->src[0]->op == OP_RANGE && x->src[1]->op == OP_CONST) { r = x->src[0]; k = x->src[1]->arg->i; }
    else if (x->op == OP_MUL && x->src[1]->op == OP_RANGE && x->src[0]->op == OP_CONST) { r = x->src[1]; k = x->src[0]->arg->i; }
    if (r && r->arg->i < c->racap && c->raxis[r->arg->i] >= 0) { out[c->raxis[r->arg->i]] = k; has[c->raxis[r->arg->i]] = true; }
  }
  bool *used = arena_alloc(c->a, sizeof(bool) * (size_t)(c->nf + 1));
  UList ti = uop_toposort(idx, NULL, NULL);
  for (int i = 0; i < ti.n; i++) if (ti.v[i]->op == OP_RANGE && ti.v[i]->arg->i < c->racap && c->raxis[ti.v[i]->arg->i] >= 0) used[c->raxis[ti.v[i]->arg->i]] = true;
  for (int i = 0; i < c->nf; i++) if (!used[i]) { out[i] = 0; has[i] = true; }
  UList tv = uop_toposort(valid, NULL, NULL);
  for (int i = 0; i < tv.n; i++) if (tv.v[i]->op == OP_RANGE && tv.v[i]->arg->i < c->racap && c->raxis[tv.v[i]->arg->i] >= 0) has[c->raxis[tv.v[i]->arg->i]] = false;
}

/* Kernel.__init__'s simplify_ones + simplify_merge_adjacent over every ShapeTracker, then
 * Kernel.name: "r" with a reduce else "E", the store count when > 1, and the merged full shape */
static const char *kernel_name(LCtx *c, UOp *ast, bool has_reduce) {
  int nf = c->nf;
  /* the ShapeTrackers: sts[0] the output, then every buffer, the reduces, the full shape */
  int nst = 1 + c->recs.n / 2 + 2 + 1;
  Sint **shp = arena_alloc(c->a, sizeof(Sint *) * (size_t)nst);
  int64_t **str = arena_alloc(c->a, sizeof(int64_t *) * (size_t)nst);
  bool **hs = arena_alloc(c->a, sizeof(bool *) * (size_t)nst);
  for (int j = 0; j < nst; j++) {
    shp[j] = arena_alloc(c->a, sizeof(Sint) * (size_t)(nf + 1));
    str[j] = arena_alloc(c->a, sizeof(int64_t) * (size_t)(nf + 1));
    hs[j] = arena_alloc(c->a, sizeof(bool) * (size_t)(nf + 1));
    for (int i = 0; i < nf; i++) shp[j][i] = c->F[i];
  }
  int j = 0;
  real_strides(c, c->out_idx, c->out_valid, str[j], hs[j]);
  for (int i = 0; i < nf; i++) if (c->red[i]) shp[j][i] = si(1);
  j++;
  for (int k = 0; k + 1 < c->recs.n; k += 2, j++) real_strides(c, c->recs.v[k], c->recs.v[k + 1], str[j], hs[j]);
  /* a reduce's output and input ShapeTrackers (contiguous), and the full shape with 0 strides */
  for (int t = 0; t < 2; t++, j++) {
    int64_t acc = 1;
    for (int i = nf - 1; i >= 0; i--) {
      if (t == 0 && c->red[i]) shp[j][i] = si(1);
      bool one = si_is_int(shp[j][i]) && shp[j][i].c == 1;
      str[j][i] = one ? 0 : acc; hs[j][i] = true;
      acc = si_is_int(shp[j][i]) ? acc * shp[j][i].c : acc;
    }
  }
  for (int i = 0; i < nf; i++) { str[j][i] = 0; hs[j][i] = true; }
  int full = j++;
  nst = j;
  /* simplify_ones */
  int m = 0;
  for (int i = 0; i < nf; i++) {
    if (si_is_int(c->F[i]) && c->F[i].c == 1) continue;
    for (int t = 0; t < nst; t++) { shp[t][m] = shp[t][i]; str[t][m] = str[t][i]; hs[t][m] = hs[t][i]; }
    m++;
  }
  nf = m;
  /* simplify_merge_adjacent */
  int first_reduce = nf;
  for (int i = 0; i < nf; i++) if (!si_eq(shp[0][i], shp[full][i])) { first_reduce = i; break; }
  Sint **rs = arena_alloc(c->a, sizeof(Sint *) * (size_t)nst);
  int64_t **rt = arena_alloc(c->a, sizeof(int64_t *) * (size_t)nst);
  bool **rh = arena_alloc(c->a, sizeof(bool *) * (size_t)nst);
  int rn = 0;
  if (nf) {
    for (int t = 0; t < nst; t++) {
      rs[t] = arena_alloc(c->a, sizeof(Sint) * (size_t)nf);
      rt[t] = arena_alloc(c->a, sizeof(int64_t) * (size_t)nf);
      rh[t] = arena_alloc(c->a, sizeof(bool) * (size_t)nf);
      rs[t][0] = shp[t][0]; rt[t][0] = str[t][0]; rh[t][0] = hs[t][0];
    }
    rn = 1;
    for (int i = 1; i < nf; i++) {
      bool mergeable = i != first_reduce;
      for (int t = 0; t < nst && mergeable; t++) {
        if (!hs[t][i] || !rh[t][rn - 1] || !si_is_int(shp[t][i])) { mergeable = false; break; }
        int64_t sti = str[t][i], last = rt[t][rn - 1];
        mergeable = (sti != 0 && last == shp[t][i].c * sti) || (sti == 0 && last == 0);
      }
      for (int t = 0; t < nst; t++) {
        if (mergeable) { rs[t][rn - 1] = si_mul(rs[t][rn - 1], shp[t][i]); rt[t][rn - 1] = str[t][i]; rh[t][rn - 1] = hs[t][i]; }
        else { rs[t][rn] = shp[t][i]; rt[t][rn] = str[t][i]; rh[t][rn] = hs[t][i]; }
      }
      if (!mergeable) rn++;
    }
  }
  char buf[1024];
  int k = snprintf(buf, sizeof buf, "%s", has_reduce ? "r" : "E");
  if (ast->nsrc > 1) k += snprintf(buf + k, sizeof buf - (size_t)k, "%d", ast->nsrc);
  k += snprintf(buf + k, sizeof buf - (size_t)k, "_");
  for (int i = 0; i < rn && k < (int)sizeof buf - 32; i++) {
    Sint d = rs[full][i];
    if (si_is_int(d)) k += snprintf(buf + k, sizeof buf - (size_t)k, "%s%lld", i ? "_" : "", (long long)d.c);
    else k += snprintf(buf + k, sizeof buf - (size_t)k, "%s%s", i ? "_" : "", u_render(c->a, d.u));
  }
  return arena_strdup(c->a, buf);
}

/* ---------------------------------------------------------------- the program */
void knames_init(KNames *k, Arena *a) { map_init(&k->seen, a); }

const char *lower_function_name(Arena *a, const char *name) {
  size_t n = strlen(name);
  char *o = arena_alloc(a, 2 * n + 1), *q = o;
  for (const unsigned char *p = (const unsigned char *)name; *p; p++) {
    if ((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') || *p == '_') *q++ = (char)*p;
    else q += sprintf(q, "%02X", *p);
  }
  *q = 0;
  return o;
}

static int cmp_global(const void *a, const void *b) {
  const KParam *x = a, *y = b;
  return x->u->arg->i < y->u->arg->i ? -1 : x->u->arg->i > y->u->arg->i;
}
static int cmp_var(const void *a, const void *b) {
  UOp *x = *(UOp *const *)a, *y = *(UOp *const *)b;
  return strcmp(x->arg->items[0]->s, y->arg->items[0]->s);
}

Program *lower_kernel(UOp *ast, KNames *names) {
  if (ast->op != OP_SINK) tg_fail(TG_EINPUT, "kernel AST root is %s, not SINK", op_names[ast->op]);
  Arena *a = ga();
  LCtx c = {.a = a};
  map_init(&c.shapes, a);
  map_init(&c.memo, a);
  UList topo = uop_toposort(ast, NULL, NULL);
  compute_shapes(&c, topo);
  int maxd = 0;
  for (int i = 0; i < ast->nsrc; i++) {
    UOp *s = ast->src[i];
    if (s->op != OP_STORE) tg_fail(TG_EINPUT, "kernel SINK source %d is %s, not STORE", i, op_names[s->op]);
    const SList *sh = shape_of(&c, s->src[0]);
    if (sh && sh->n > maxd) maxd = sh->n;
  }
  c.next_range = maxd;
  map_init(&c.newaxis, a);
  vec_init(&c.recs, a);
  {
    const SList *osh = shape_of(&c, ast->src[ast->nsrc - 1]->src[0]);
    c.nout = osh ? osh->n : 0;
    c.oshape = osh ? osh->v : NULL;
    for (int i = 0; i < c.nout; i++) add_axis(&c, osh->v[i], false);
    for (int i = 0; i < maxd; i++) set_raxis(&c, i, i < c.nout ? i : -1);
  }
  UOp **stores = arena_alloc(a, sizeof(UOp *) * (size_t)(ast->nsrc + 1));
  for (int i = 0; i < ast->nsrc; i++) stores[i] = lower_store(&c, ast->src[i]);
  UOp *lsink = uop_sink(ast->nsrc, stores, NULL);

  Lin l = {.a = a, .nw = (c.next_range + 63) / 64 + 1, .ctxcap = 16};
  map_init(&l.fr, a);
  l.ctx = arena_alloc(a, sizeof(Scope *) * (size_t)l.ctxcap);
  UList ltopo = uop_toposort(lsink, NULL, NULL);
  compute_fr(&l, ltopo);
  Scope *root = scope_new(&l, NULL);
  l.ctx[0] = root; l.d = 0;
  for (int i = 0; i < ast->nsrc; i++) {
    UOp *s = stores[i];
    int nr = s->nsrc - 2, p = 0;
    while (p < nr && p < l.d && l.ctx[p + 1]->range == s->src[2 + p]) p++;
    while (l.d > p) close_loop(&l);
    for (int k = p; k < nr; k++) open_loop(&l, s->src[2 + k]);
    emit(&l, s);
  }
  while (l.d > 0) close_loop(&l);

  Program *pg = arena_alloc(a, sizeof *pg);
  PtrVec out;
  vec_init(&out, a);
  flatten(&l, root, &out);
  pg->ninst = out.n;
  pg->inst = arena_alloc(a, sizeof(LInst) * (size_t)(out.n + 1));
  for (int i = 0; i < out.n; i++) pg->inst[i] = *(LInst *)out.v[i];
  pg->nranges = c.next_range;

  /* parameters: DEFINE_GLOBALs by slot, DEFINE_VARs by name */
  PtrVec gl, vs;
  vec_init(&gl, a); vec_init(&vs, a);
  for (int i = 0; i < ltopo.n; i++) {
    UOp *u = ltopo.v[i];
    if (u->op == OP_DEFINE_GLOBAL) vec_push(&gl, u);
    if (u->op == OP_DEFINE_VAR) {
      bool dup = false;
      for (int k = 0; k < vs.n && !dup; k++) dup = strcmp(((UOp *)vs.v[k])->arg->items[0]->s, u->arg->items[0]->s) == 0;
      if (!dup) vec_push(&vs, u);
    }
  }
  pg->nglobals = gl.n;
  pg->globals = arena_alloc(a, sizeof(KParam) * (size_t)(gl.n + 1));
  for (int i = 0; i < gl.n; i++) {
    UOp *g = gl.v[i];
    pg->globals[i].u = g;
    for (int k = 0; k < ast->nsrc; k++) if (stores[k]->src[0]->src[0] == g) pg->globals[i].written = true;
  }
  qsort(pg->globals, (size_t)gl.n, sizeof(KParam), cmp_global);
  pg->nvars = vs.n;
  pg->vars = arena_alloc(a, sizeof(UOp *) * (size_t)(vs.n + 1));
  if (vs.n) memcpy(pg->vars, vs.v, sizeof(UOp *) * (size_t)vs.n);
  qsort(pg->vars, (size_t)vs.n, sizeof(UOp *), cmp_var);

  bool has_reduce = false;
  for (int i = 0; i < topo.n; i++) has_reduce |= topo.v[i]->op == OP_REDUCE_AXIS;
  const char *nm = kernel_name(&c, ast, has_reduce);
  if (names) {
    const Value *key = v_str(lower_function_name(a, nm));
    bool isnew;
    void **slot = map_slot(&names->seen, (void *)key, key->hash, &isnew);
    intptr_t cnt = (intptr_t)*slot;
    if (cnt) nm = arena_printf(a, "%sn%d", nm, (int)cnt);
    *slot = (void *)(cnt + 1);
  }
  pg->name = nm;
  pg->fname = lower_function_name(a, nm);
  return pg;
}

const char *lower_kernel_name(UOp *ast) { return lower_kernel(ast, NULL)->name; }
