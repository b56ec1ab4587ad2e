/* tensor.c: the shape-related properties of tensor-graph UOps (tinygrad 0.11.0 uop/ops.py):
 * UOp.st, shape, size, base, _device, buf_uop, axis, the movement-op constructors (_mop drops
 * no-ops), UOp.r, UOp.const with device and shape, const_like, new_buffer, and the helpers that
 * turn movement-op args (tuples of ints or {"uop"} Values) into sints.
 *
 * tinygrad computes st, _device and axis as cached properties that recurse into the sources.
 * Here each is an explicit-stack evaluation: a node is finished when every source it needs is
 * cached, otherwise the first missing source is pushed. Sources are visited lazily in the order
 * tinygrad's code touches them, so a node whose shape is never needed is never asked (and can't
 * fail). Results are cached on the node (st_cache, dev_cache, axis_cache). */
#include "sops.h"
#include <string.h>

/* ---- arg helpers ---- */
const Value *v_sint(Sint s) { return s.u ? v_uop(s.u) : v_int(s.c); }
Sint sint_of_value(const Value *v) {
  /* tinygrad's are Python ints; tgc's shapes and view arguments are 64-bit */
  if (v && v->kind == V_INT && v->n == 1)
    tg_fail(TG_EINPUT, "a shape or view argument of %llu is 2**63 or more (tgc's shapes are 64-bit integers)", (unsigned long long)v->i);
  if (v && v->kind == V_INT) return si(v->i);
  if (v && v->kind == V_BOOL) return si(v->b);
  if (v && v->kind == V_UOP) return S_u(v->u);
  tg_fail(TG_EINPUT, "a shape entry must be an int or a UOp");
}
SList sl_of_value(const Value *t) {
  if (!t || t->kind != V_TUPLE) tg_fail(TG_EINPUT, "a shape must be a tuple");
  Sint *v = s_tmp(t->n);
  for (int i = 0; i < t->n; i++) v[i] = sint_of_value(t->items[i]);
  return sl(t->n, v);
}
const Value *v_of_sl(SList s) {
  const Value **it = arena_alloc(ga(), sizeof(Value *) * (size_t)(s.n + 1));
  for (int i = 0; i < s.n; i++) it[i] = v_sint(s.v[i]);
  return v_tuple(s.n, it);
}
static const Value *v_pairs(int n, const Sint *arg) {
  const Value **it = arena_alloc(ga(), sizeof(Value *) * (size_t)(n + 1));
  for (int i = 0; i < n; i++) it[i] = v_tuplev(2, v_sint(arg[2 * i]), v_sint(arg[2 * i + 1]));
  return v_tuple(n, it);
}

/* ---- explicit-stack evaluation ----
 * run step(top) until root is done; step returns the missing source, or NULL when it finished top.
 * The stack starts on the C stack (most walks are short: sources are cached) and moves to the
 * scratch arena when it outgrows that (popped on return; a failure leaves it to the caller's pop). */
typedef UOp *(*StepFn)(UOp *u);
static void eval_stack(UOp *root, StepFn step, uint8_t *(*state)(UOp *)) {
  UOp *local[256], **v = local;
  int n = 0, cap = 256;
  bool spilled = false;
  ArenaMark mk = {0};
  v[n++] = root;
  while (n) {
    UOp *top = v[n - 1];
    if (*state(top)) { n--; continue; }
    UOp *need = step(top);
    if (!need) { n--; continue; }
    if (n == cap) {
      if (!spilled) { mk = arena_mark(&uctx->scratch); spilled = true; }
      UOp **nv = arena_alloc(&uctx->scratch, sizeof(UOp *) * (size_t)cap * 2);
      memcpy(nv, v, sizeof(UOp *) * (size_t)cap);
      v = nv; cap *= 2;
    }
    v[n++] = need;
  }
  if (spilled) arena_pop(&uctx->scratch, mk);
}

/* ---- UOp._device ---- */
static uint8_t *dev_state(UOp *u) { return &u->dev_state; }
static void dev_set(UOp *u, const Value *v) { u->dev_cache = v; u->dev_state = 1; }
static UOp *dev_step(UOp *u) {
  switch (u->op) {
  case OP_DEVICE: dev_set(u, u->arg); return NULL;
  case OP_MSELECT: {
    if (!u->nsrc) tg_fail(TG_EINPUT, "MSELECT without a source");
    UOp *s = u->src[0];
    if (!s->dev_state) return s;
    const Value *d = s->dev_cache;
    if (!d || d->kind != V_TUPLE) tg_fail(TG_EINPUT, "mselect must be on tuple device");
    int64_t i = u->arg->kind == V_INT ? u->arg->i : -1 - (int64_t)d->n;
    if (i < 0) i += d->n;
    if (i < 0 || i >= d->n) tg_fail(TG_EINPUT, "MSELECT index out of range");
    dev_set(u, d->items[i]);
    return NULL;
  }
  case OP_MSTACK: {
    const Value **it = arena_alloc(ga(), sizeof(Value *) * (size_t)(u->nsrc + 1));
    for (int i = 0; i < u->nsrc; i++) {
      if (!u->src[i]->dev_state) return u->src[i];
      if (!u->src[i]->dev_cache) tg_fail(TG_EINPUT, "MSTACK source without a device");
      it[i] = u->src[i]->dev_cache;
    }
    dev_set(u, v_tuple(u->nsrc, it));
    return NULL;
  }
  case OP_COPY: case OP_BUFFER: case OP_ALLREDUCE: {
    if (u->nsrc < 2) tg_fail(TG_EINPUT, "%s needs a DEVICE source", op_names[u->op]);
    UOp *s = u->src[1];
    if (!s->dev_state) return s;
    if (!s->dev_cache) tg_fail(TG_EINPUT, "%s source 1 has no device", op_names[u->op]);
    dev_set(u, s->dev_cache);
    return NULL;
  }
  default:
    for (int i = 0; i < u->nsrc; i++) {
      UOp *s = u->src[i];
      if (!s->dev_state) return s;
      if (s->dev_cache) { dev_set(u, s->dev_cache); return NULL; }
    }
    dev_set(u, NULL);
    return NULL;
  }
}
const Value *u_device(UOp *u) {
  if (!u->dev_state) eval_stack(u, dev_step, dev_state);
  return u->dev_cache;
}

/* ---- UOp.st ---- */
static uint8_t *st_state(UOp *u) { return &u->st_state; }
static void st_set(UOp *u, const ShapeTracker *st) { u->st_cache = st; u->st_state = 1; }
static const ShapeTracker *from1(Sint s) { return st_from_shape(sl(1, &(Sint){s.c, s.u}), NULL); }
static Sint size_of(UOp *u) {  /* UOp.size once u's st is known */
  if (u->op == OP_BUFFER_VIEW) {
    if (u->arg->kind != V_TUPLE || u->arg->n < 1) tg_fail(TG_EINPUT, "BUFFER_VIEW arg must be (size, offset)");
    return sint_of_value(u->arg->items[0]);
  }
  if (u->op == OP_BUFFER) return sint_of_value(u->arg);
  if (!u->st_cache) tg_fail(TG_EINPUT, "%s doesn't have a shape", op_names[u->op]);
  return st_size(u->st_cache);
}
static const Value *axis_arg(UOp *u) {
  const Value *a = u->arg;
  int k = u->op == OP_REDUCE_AXIS ? 1 : 7;
  if (a->kind != V_TUPLE || a->n <= k || a->items[k]->kind != V_TUPLE) tg_fail(TG_EINPUT, "%s: axis_arg is not a tuple of ints", op_names[u->op]);
  const Value *r = a->items[k];
  for (int i = 0; i < r->n; i++) if (r->items[i]->kind != V_INT) tg_fail(TG_EINPUT, "%s: axis_arg is not a tuple of ints", op_names[u->op]);
  return r;
}
static bool axis_has(const Value *ax, int64_t i) {
  for (int k = 0; k < ax->n; k++) if (ax->items[k]->i == i) return true;
  return false;
}
static int64_t dev_len(const Value *d) {  /* len(self.device): a tuple's length, a str's characters */
  if (!d) tg_fail(TG_EINPUT, "MULTI without a device");
  return d->kind == V_TUPLE ? d->n : d->kind == V_STR ? (int64_t)strlen(d->s) : 1;
}

static UOp *st_step(UOp *u) {
  Op op = u->op;
#define NEED(x) do { if (!(x)->st_state) return (x); } while (0)
  if (op_in(op, G_BLOCK) || op == OP_INDEX) { st_set(u, NULL); return NULL; }
  if (op == OP_VIEW) {  // VIEW and movement ops define a new ShapeTracker from the arg
    if (u->arg->kind != V_ST) tg_fail(TG_EINPUT, "VIEW arg must be a ShapeTracker");
    st_set(u, u->arg->st);
    return NULL;
  }
  if (op_in(op, G_MOVEMENT)) {
    if (!u->nsrc) tg_fail(TG_EINPUT, "%s without a source", op_names[op]);
    NEED(u->src[0]);
    const ShapeTracker *s = u->src[0]->st_cache;
    if (!s && op == OP_RESHAPE) { st_set(u, st_from_shape(sl_of_value(u->arg), NULL)); return NULL; }  // reshape from nothing
    if (!s) tg_fail(TG_EINPUT, "%s of a %s, which has no shape", op_names[op], op_names[u->src[0]->op]);
    st_set(u, st_mop(s, op, u->arg));
    return NULL;
  }
  if (op == OP_CONST && u->nsrc && u->src[0]->op == OP_DEVICE) { st_set(u, st_from_shape(sl(0, NULL), NULL)); return NULL; }
  if (op == OP_STORE || op == OP_ASSIGN || op == OP_LOAD) {  // flow from a direct edge
    if (!u->nsrc) tg_fail(TG_EINPUT, "%s without a source", op_names[op]);
    NEED(u->src[0]);
    st_set(u, u->src[0]->st_cache);
    return NULL;
  }
  if (op_in(op, G_BUFFER)) {
    const ShapeTracker *r = NULL;
    for (int i = 0; i < u->nsrc && !r; i++)
      if (u->src[i]->op == OP_VIEW) {
        if (u->src[i]->arg->kind != V_ST) tg_fail(TG_EINPUT, "VIEW arg must be a ShapeTracker");
        r = u->src[i]->arg->st;
      }
    st_set(u, r);
    return NULL;
  }
  if (op == OP_BUFFER || op == OP_BUFFER_VIEW) { st_set(u, from1(size_of(u))); return NULL; }  // only a size
  if (op == OP_KERNEL) {
    if (u->arg->kind != V_KERNEL || !u->arg->k.ast) tg_fail(TG_EINPUT, "KERNEL arg must be a Kernel");
    UOp *ast = u->arg->k.ast;
    if (ast->op != OP_BUFFER && ast->op != OP_BUFFER_VIEW) NEED(ast);
    st_set(u, from1(size_of(ast)));
    return NULL;
  }
  if (op_in(op, G_DEFINES)) {
    int64_t sz = dt_is_ptr(u->dtype) ? u->dtype->size : -1;
    st_set(u, sz > 0 ? from1(si(sz)) : NULL);
    return NULL;
  }
  if (op == OP_CAST && u->nsrc && u->src[0]->op == OP_DEFINE_GLOBAL) { st_set(u, NULL); return NULL; }  // PTX hack
  /* otherwise the shape comes from the sources */
  const ShapeTracker *first = NULL;
  for (int i = 0; i < u->nsrc; i++) {
    NEED(u->src[i]);
    const ShapeTracker *s = u->src[i]->st_cache;
    if (!s) continue;
    if (!first) first = s;
    else if (!sl_eq(st_shape(first), st_shape(s))) {
      Arena *a = &uctx->scratch;
      tg_fail(TG_EINPUT, "UOp sources must have the same shape: %s has sources of shape %s and %s", op_names[op],
              value_repr(a, v_of_sl(st_shape(first))), value_repr(a, v_of_sl(st_shape(s))));
    }
  }
  if (!first) { st_set(u, NULL); return NULL; }
  SList shape = st_shape(first);
  if (op == OP_MULTI) {
    UOp *s0 = u->src[0];
    if (!s0->st_cache) tg_fail(TG_EINPUT, "MULTI source doesn't have a shape");
    SList sh0 = st_shape(s0->st_cache);
    int ax = u_axis(u);
    int64_t nd = dev_len(u_device(u));
    Sint *v = s_tmp(sh0.n);
    for (int a = 0; a < sh0.n; a++) v[a] = a == ax ? S_mul(sh0.v[a], si(nd)) : sh0.v[a];
    shape = sl(sh0.n, v);
  } else if (op == OP_BITCAST) {
    int in_sz = u->src[0]->dtype->itemsize;
    if (u->dtype->itemsize != in_sz) {
      if (shape.n == 0) tg_fail(TG_EINPUT, "BITCAST of a scalar to a different itemsize");
      Sint *v = s_tmp(shape.n);
      memcpy(v, shape.v, sizeof(Sint) * (size_t)shape.n);
      v[shape.n - 1] = S_fdiv(S_mul(shape.v[shape.n - 1], si(in_sz)), si(u->dtype->itemsize));
      shape = sl(shape.n, v);
    }
  } else if (op == OP_REDUCE_AXIS || op == OP_WMMA) {
    const Value *ax = axis_arg(u);
    Sint *v = s_tmp(shape.n);
    for (int i = 0; i < shape.n; i++) v[i] = axis_has(ax, i) ? si(1) : shape.v[i];
    shape = sl(shape.n, v);
  }
  /* from_shape of a contiguous single view's own shape is that ShapeTracker (interned) */
  st_set(u, shape.v == st_shape(first).v && st_contiguous(first) ? first : st_from_shape(shape, NULL));
  return NULL;
#undef NEED
}
/* one st_step in a temporaries scope: its shape arrays are dropped, the interned result kept */
static UOp *st_step_scoped(UOp *u) {
  ArenaMark mk = tmp_scope_enter();
  UOp *r = st_step(u);
  tmp_scope_leave(mk);
  return r;
}
const ShapeTracker *u_st(UOp *u) {
  if (!u->st_state) eval_stack(u, st_step_scoped, st_state);
  return u->st_cache;
}
SList u_shape(UOp *u) {
  const ShapeTracker *st = u_st(u);
  if (!st) tg_fail(TG_EINPUT, "%s doesn't have a shape", op_names[u->op]);
  return st_shape(st);
}
Sint u_size(UOp *u) {
  if (u->op != OP_BUFFER && u->op != OP_BUFFER_VIEW) u_st(u);
  return size_of(u);
}

/* ---- UOp.axis ---- */
static uint8_t *axis_state(UOp *u) { return &u->axis_state; }
static void axis_set(UOp *u, int64_t a) { u->axis_cache = (int32_t)a; u->axis_state = 1; }
static UOp *axis_step(UOp *u) {
  Op op = u->op;
  if (op == OP_MULTI) { axis_set(u, u->arg->kind == V_INT ? u->arg->i : -1); return NULL; }
  if (op_in(op, G_ALU)) {  // they all have to share an axis, we always choose [-1]
    for (int i = 0; i < u->nsrc; i++) if (!u->src[i]->axis_state) return u->src[i];
    int64_t last = -1, seen[64]; int nseen = 0;
    for (int i = 0; i < u->nsrc; i++) {
      int64_t a = u->src[i]->axis_cache;
      if (a < 0) continue;
      bool dup = false;
      for (int k = 0; k < nseen && !dup; k++) dup = seen[k] == a;
      if (!dup && nseen < 64) { seen[nseen++] = a; last = a; }
    }
    axis_set(u, last);
    return NULL;
  }
  if (!u->nsrc) { axis_set(u, -1); return NULL; }
  if (!u->src[0]->axis_state) return u->src[0];
  int64_t sa = u->src[0]->axis_cache;
  if (op == OP_REDUCE_AXIS) {
    const Value *ax = axis_arg(u);
    axis_set(u, sa >= 0 && axis_has(ax, sa) ? -1 : sa);
    return NULL;
  }
  if (op == OP_RESHAPE) {
    if (sa < 0) { axis_set(u, -1); return NULL; }
    SList arg = sl_of_value(u->arg), s0 = u_shape(u->src[0]);
    if (sa > s0.n) sa = s0.n;
    Sint target = sl_prod(sl((int)sa, s0.v)), acc = si(1);
    int64_t found = -1;  // the last prefix product equal to prod(src shape before the axis)
    for (int i = 0; i <= arg.n; i++) {
      if (S_EQ(acc, target)) found = i;
      if (i < arg.n) acc = S_mul(acc, arg.v[i]);
    }
    if (found < 0) tg_fail(TG_EINPUT, "RESHAPE of a MULTI moves items between shards");
    axis_set(u, found);
    return NULL;
  }
  if (op == OP_PERMUTE) {
    if (sa < 0) { axis_set(u, -1); return NULL; }
    int64_t r = -1;
    for (int i = 0; i < u->arg->n && r < 0; i++) if (u->arg->items[i]->kind == V_INT && u->arg->items[i]->i == sa) r = i;
    if (r < 0) tg_fail(TG_EINPUT, "PERMUTE arg lacks the multi axis");
    axis_set(u, r);
    return NULL;
  }
  axis_set(u, sa);
  return NULL;
}
int u_axis(UOp *u) {
  if (!u->axis_state) eval_stack(u, axis_step, axis_state);
  return u->axis_cache;
}

UOp *u_base(UOp *u) {
  while ((u->op == OP_VIEW && u->nsrc) || op_in(u->op, G_MOVEMENT) || u->op == OP_MULTI) u = u->src[0];
  return u;
}

UOp *u_buf_uop(UOp *u) {
  if (u->op == OP_BUFFER) return u;
  if (u->op == OP_MSELECT) {
    UOp *b = u_buf_uop(u->src[0]);
    return uop1(OP_MSELECT, b->dtype, b, u->arg);
  }
  if (u->op == OP_MSTACK) {
    UOp **s = arena_alloc(ga(), sizeof(UOp *) * (size_t)(u->nsrc + 1));
    for (int i = 0; i < u->nsrc; i++) s[i] = u_buf_uop(u->src[i]);
    return uop_new(OP_MSTACK, u->dtype, u->nsrc, s, NULL, NULL);
  }
  if (u->op != OP_ASSIGN) tg_fail(TG_EINPUT, "must be ASSIGN %s", op_names[u->op]);
  return u_base(u->src[0]);
}

/* ---- movement constructors ---- */
static UOp *mop(UOp *u, Op op, const Value *arg) {
  const ShapeTracker *before = u_st(u);
  UOp *ret = uop1(op, u->dtype, u, arg);
  if (before == u_st(ret)) return u;  // ignore NOOPs, also check ret.st
  return ret;
}
UOp *u_view(UOp *u, const ShapeTracker *st) {
  /* a node without a ShapeTracker where a tensor belongs (a graph's UNIQUE, say): tinygrad fails
   * there too (None has no views) */
  if (!st) tg_fail(TG_EINPUT, "a view of a %s without a ShapeTracker (a node with no shape where a tensor belongs)", op_names[u->op]);
  return uop1(OP_VIEW, u->dtype, u, v_st(st));
}
UOp *u_reshape(UOp *u, SList shape) { return mop(u, OP_RESHAPE, v_of_sl(shape)); }
UOp *u_expand(UOp *u, SList shape) { return mop(u, OP_EXPAND, v_of_sl(shape)); }
UOp *u_permute(UOp *u, const int *axis) {
  int n = u_shape(u).n;
  const Value **it = arena_alloc(ga(), sizeof(Value *) * (size_t)(n + 1));
  for (int i = 0; i < n; i++) it[i] = v_int(axis[i]);
  return mop(u, OP_PERMUTE, v_tuple(n, it));
}
UOp *u_pad(UOp *u, const Sint *arg) { return mop(u, OP_PAD, v_pairs(u_shape(u).n, arg)); }
UOp *u_shrink(UOp *u, const Sint *arg) { return mop(u, OP_SHRINK, v_pairs(u_shape(u).n, arg)); }
UOp *u_flip(UOp *u, const bool *flip) {
  int n = u_shape(u).n;
  const Value **it = arena_alloc(ga(), sizeof(Value *) * (size_t)(n + 1));
  for (int i = 0; i < n; i++) it[i] = v_bool(flip[i]);
  return mop(u, OP_FLIP, v_tuple(n, it));
}

static bool in_list(const int *a, int n, int x) {
  for (int i = 0; i < n; i++) if (a[i] == x) return true;
  return false;
}
/* UOp.r: reduce the axes that aren't 1, after moving the kept axes in front of the reduced ones */
UOp *u_r(UOp *u, Op op, int naxis, const int *axis_in) {
  SList sh = u_shape(u);
  int n = sh.n, na = 0;
  int *axis = arena_alloc(ga(), sizeof(int) * (size_t)(naxis + 1));
  for (int i = 0; i < naxis; i++) {
    int x = axis_in[i];
    if (x < 0 || x >= n) tg_fail(TG_EINPUT, "reduce axis %d out of range for %d dims", x, n);
    if (R_NE(sh.v[x], si(1), true)) axis[na++] = x;
  }
  for (int i = 1; i < na; i++) {  // sorted
    int p = axis[i], j = i;
    while (j > 0 && axis[j - 1] > p) { axis[j] = axis[j - 1]; j--; }
    axis[j] = p;
  }
  if (na == 0) return u;
#define IN_AXIS(i) in_list(axis, na, (i))
  int *perm = arena_alloc(ga(), sizeof(int) * (size_t)(n + 1)), np = 0, nmove = 0;
  for (int i = 0; i < axis[0]; i++) perm[np++] = i;
  for (int i = axis[0]; i < n; i++) if (!IN_AXIS(i) && R_NE(sh.v[i], si(1), true)) { perm[np++] = i; nmove++; }
  for (int i = axis[0]; i < n; i++) if (!(!IN_AXIS(i) && R_NE(sh.v[i], si(1), true))) perm[np++] = i;
  UOp *ret = u_permute(u, perm);
  SList rs = u_shape(ret);
  const Value **na_v = arena_alloc(ga(), sizeof(Value *) * (size_t)(n + 1));
  int nn = 0;
  for (int x = axis[0] + nmove; x < n; x++) if (R_NE(rs.v[x], si(1), true)) na_v[nn++] = v_int(x);
  if (nn != na) tg_fail(TG_EINTERNAL, "UOp.r: %d reduce axes became %d", na, nn);
  ret = uop1(OP_REDUCE_AXIS, u->dtype, ret, v_tuplev(2, v_ops(op), v_tuple(nn, na_v)));
  Sint *out = s_tmp(n);
  for (int i = 0; i < n; i++) out[i] = IN_AXIS(i) ? si(1) : sh.v[i];
#undef IN_AXIS
  return u_reshape(ret, sl(n, out));
}

UOp *u_contiguous(UOp *u) { return uop1(OP_CONTIGUOUS, u->dtype, u, NULL); }

/* UOp.const(dtype, b, device, shape) */
UOp *u_const_tensor(const DType *dt, const Value *b, const Value *device, const SList *shape) {
  if (b->kind == V_UOP) {
    UOp *x = b->u;
    if (x->op == OP_BIND) {
      if (x->nsrc != 2 || x->src[0]->op != OP_DEFINE_VAR || x->src[1]->op != OP_CONST) tg_fail(TG_EINPUT, "can't unbind a BIND");
      return x->src[0];
    }
    return x;
  }
  if (b->kind == V_TUPLE && b->n > 0) {  // doesn't have to be a VCONST if they are all the same
    bool same = true;
    for (int i = 1; i < b->n && same; i++) same = v_cmp(b->items[i], b->items[0]) == 0;
    if (same) b = b->items[0];
  }
  UOp *ret = uop0(b->kind == V_TUPLE ? OP_VCONST : OP_CONST, dt, as_const(b, dt));
  const ShapeTracker *st = NULL;
  if (shape) {
    SList z = sl_zeros_n(shape->n);
    st = st_from_shape(*shape, &z);
    UOp *v = uop0(OP_VIEW, dt_void, v_st(st));
    ret = uop_replace(ret, NULL, 1, &v, NULL, NULL);
  }
  if (!v_is_none(device)) {
    UOp *d = uop0(OP_DEVICE, dt_void, device);
    if (shape) d = u_view(d, st);
    ret = uop_replace(ret, NULL, 1, &d, NULL, NULL);
  }
  return ret;
}

/* const_like: UOp.const(self.dtype, b, device=self._device, shape=self.shape if self.st is not None else None) */
static UOp *const_like_hook(UOp *like, const Value *v) {
  const Value *dev = u_device(like);
  const ShapeTracker *st = u_st(like);
  SList sh = st ? st_shape(st) : sl(0, NULL);
  return u_const_tensor(like->dtype, v, dev, st ? &sh : NULL);
}

UOp *u_new_buffer(const Value *device, int64_t size, const DType *dt) {
  return uop2(OP_BUFFER, dt, uop_unique(), uop0(OP_DEVICE, dt_void, device), v_int(size));
}

void shape_init(void) {
  symbolic_init();
  sym_const_like_hook = const_like_hook;
}
