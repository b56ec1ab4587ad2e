/* swizzler: tinygrad 0.11.0's codegen/opt/swizzler.py, the rules that move VIEWs through a graph.
 *
 * merge_views folds movement ops into VIEWs and VIEW chains into one VIEW; view_left pushes a VIEW
 * up towards the buffers (through elementwise ops, and through a REDUCE_AXIS when the view only
 * adds ones); swizzle_reduceop rewrites a REDUCE_AXIS seen through a non-contiguous VIEW so the
 * view applies to its input instead. view_right and fix_kernel_ops (used by the codegen's first
 * steps) are ported here too. The tables are data, in tinygrad's order and under its names;
 * everything the rules compute comes from lib/shape (ShapeTracker and View algebra). A VIEW is
 * always built directly (UOp.view never drops no-ops); movement ops go through u_reshape & co,
 * which drop no-ops as UOp._mop does. */
#include "passes.h"

#include <string.h>

PM *pm_merge_views, *pm_view_left, *pm_view_left_through_load, *pm_view_right, *pm_fix_kernel_ops, *pm_buffer_views;

/* ---- small helpers ---- */

/* UOp.view(st): a VIEW of u, never dropped */

/* tinygrad's resolve(x != 1) on a sint */
static bool ne1(Sint x) { return si_resolve_ne(x, si(1), true); }

/* Python == on two sints: ints by value, UOps by identity (UOp.__eq__ is not overridden) */
static bool py_eq(Sint a, Sint b) { return si_eq(a, b); }

static Op red_op(UOp *r) { return r->arg->items[0]->op; }
static int red_naxis(UOp *r) { return r->arg->items[1]->n; }
static int red_axis(UOp *r, int i) { return (int)r->arg->items[1]->items[i]->i; }
static bool red_has_axis(UOp *r, int a) {
  for (int i = 0; i < red_naxis(r); i++) if (red_axis(r, i) == a) return true;
  return false;
}

/* ---- merge_views ---- */

// merge adjacent views
static UOp *merge_adjacent_views(const Match *m, void *ctx) {
  UOp *v1 = m_get(m, "v1"), *v2 = m_get(m, "v2");
  return uop_replace(v1, NULL, -1, NULL, v_st(st_concat(v1->arg->st, v2->arg->st)), NULL);
}
// replace MovementOps with VIEW
static UOp *mop_to_view(const Match *m, void *ctx) {
  UOp *mop = m_get(m, "mop"), *x = m_get(m, "x");
  return u_view(u_base(x), u_st(mop));
}
// remove NOOP views
/* tinygrad asks x.st first; it is asked here only for a contiguous VIEW of a non-define: the other
 * checks read nothing of x's ShapeTracker, and computing it has no effect but its cache (a graph whose
 * x.st would fail has failed before: every node's st is asked in merge_views, and the nodes the
 * later passes rebuild have their sources' shapes). Most views of a kernel's AST are not contiguous. */
static UOp *remove_noop_view(const Match *m, void *ctx) {
  UOp *x = m_get(m, "x"), *view = m_get(m, "view");
  if (op_in((Op)x->op, G_DEFINES) || !st_contiguous(view->arg->st)) return NULL;
  const ShapeTracker *xst = u_st(x);
  return xst && sl_eq(st_shape(view->arg->st), st_shape(xst)) ? x : NULL;
}
// a VIEW whose last mask is empty on some axis is a zero
static UOp *view_empty_mask_zero(const Match *m, void *ctx) {
  UOp *view = m_get(m, "view");
  const ShapeTracker *st = view->arg->st;
  const View *last = st->views[st->nviews - 1];
  if (!last->mask) return NULL;
  for (int i = 0; i < last->ndim; i++) {
    Sint b = last->mask[2 * i], e = last->mask[2 * i + 1];
    /* (x[1]-x[0]) == 0: only an int difference can equal 0 */
    if (si_is_int(b) && si_is_int(e) && e.c - b.c == 0) return u_const_like_i(view, 0);
  }
  return NULL;
}
// only unmaksed VIEW on CONST replaces the ShapeTracker
static UOp *view_on_const(const Match *m, void *ctx) {
  UOp *x = m_get(m, "x"), *view = m_get(m, "view");
  const ShapeTracker *xst = u_st(x);
  if (xst == NULL || x->nsrc == 0) return NULL;
  const ShapeTracker *nst = st_concat(xst, view->arg->st);
  for (int i = 0; i < nst->nviews; i++) if (nst->views[i]->mask) return NULL;
  UOp *s0 = uop_replace(x->src[0], NULL, -1, NULL, v_st(nst), NULL);
  return uop_replace(x, NULL, 1, &s0, NULL, NULL);
}

static const Rule merge_views[] = {
  // merge adjacent views
  { UP(.ops = OPS(OP_VIEW), .name = "v2", SRC(UP(.ops = OPS(OP_VIEW), .name = "v1"))), merge_adjacent_views },
  // replace MovementOps with VIEW
  { UP(.groups = G_MOVEMENT, .name = "mop", SRC(UVAR("x"))), mop_to_view },
  // remove NOOP views
  { UP(.ops = OPS(OP_VIEW), .name = "view", SRC(UVAR("x"))), remove_noop_view },
  // a VIEW of anything but DEFINE_GLOBAL with an empty mask is const 0
  { UP(.ops = OPS(OP_VIEW), .name = "view", SRC(UP(.all_ops = true, .except = OPS(OP_DEFINE_GLOBAL)))), view_empty_mask_zero },
  // only unmaksed VIEW on CONST replaces the ShapeTracker
  { UP(.ops = OPS(OP_VIEW), .name = "view", SRC(UP(.ops = OPS(OP_CONST, OP_DEFINE_VAR), .name = "x"))), view_on_const },
};

/* ---- view_left ---- */

/* shape/view.py get_contraction: for each new axis the range [lo, hi) of old axes it is made of.
 * Returns false (None) when the shapes do not contract. */
static bool get_contraction(SList old_shape, SList new_shape, int *lo, int *hi) {
  Sint *acc_old = arena_alloc(&uctx->scratch, sizeof(Sint) * (size_t)(old_shape.n + 1));
  Sint *acc_new = arena_alloc(&uctx->scratch, sizeof(Sint) * (size_t)(new_shape.n + 1));
  for (int i = 0; i < old_shape.n; i++) acc_old[i] = i ? si_mul(acc_old[i - 1], old_shape.v[i]) : old_shape.v[i];
  for (int i = 0; i < new_shape.n; i++) acc_new[i] = i ? si_mul(acc_new[i - 1], new_shape.v[i]) : new_shape.v[i];
  int *split = arena_alloc(&uctx->scratch, sizeof(int) * (size_t)(new_shape.n + 1));
  for (int i = 0; i < new_shape.n; i++) {
    if (!si_resolve_ne(acc_new[i], si(1), true)) { split[i] = 0; continue; }
    int f = -1;
    for (int j = 0; j < old_shape.n && f < 0; j++) if (py_eq(acc_old[j], acc_new[i])) f = j;
    if (f < 0) return false;
    split[i] = f + 1;
  }
  for (int i = 0; i < new_shape.n; i++) {
    lo[i] = i == 0 ? 0 : split[i - 1];
    hi[i] = i == new_shape.n - 1 ? old_shape.n : split[i];
  }
  return true;
}
static int rlen(int lo, int hi) { return hi > lo ? hi - lo : 0; }

/* shape/view.py get_contraction_with_reduce: false when there is no contraction */
static bool get_contraction_with_reduce(SList old_shape, SList new_shape, UOp *r, int *lo, int *hi) {
  if (!get_contraction(old_shape, new_shape, lo, hi)) return false;
  for (int i = 0; i < new_shape.n; i++) {
    if (!red_has_axis(r, i) || rlen(lo[i], hi[i]) != 0) continue;
    int take_from = i + 1;
    while (take_from < new_shape.n && rlen(lo[take_from], hi[take_from]) == 0) {
      if (!si_eq(new_shape.v[take_from], si(1))) tg_fail(TG_EINTERNAL, "get_contraction_with_reduce: new_shape[%d] != 1", take_from);
      take_from++;
    }
    if (take_from == new_shape.n || !si_eq(new_shape.v[take_from], si(1))) return false; /* nothing to take */
    for (int j = take_from; j > i; j--) {
      if (rlen(lo[j], hi[j]) == 0) tg_fail(TG_EINTERNAL, "get_contraction_with_reduce: empty contraction");
      /* contraction[j-1] = contraction[j][:-1]; contraction[j] = contraction[j][-1:] */
      lo[j - 1] = lo[j]; hi[j - 1] = hi[j] - 1;
      lo[j] = hi[j] - 1;
    }
  }
  return true;
}

/* the sints of shape that are not 1 (resolve(x != 1)) are the same tuple */
static bool same_non_ones(SList a, SList b) {
  int i = 0, j = 0;
  for (;;) {
    while (i < a.n && !ne1(a.v[i])) i++;
    while (j < b.n && !ne1(b.v[j])) j++;
    if (i == a.n || j == b.n) return i == a.n && j == b.n;
    if (!py_eq(a.v[i], b.v[j])) return false;
    i++, j++;
  }
}

// if there's ones added after reduce, put this before the reduce
static UOp *reduce_push_add_ones(const Match *m, void *ctx) {
  UOp *src = m_get(m, "src"), *r = m_get(m, "r"), *view = m_get(m, "view");
  SList rshape = u_shape(r), vshape = u_shape(view);
  if (!(st_contiguous(view->arg->st) && rshape.n < vshape.n && same_non_ones(rshape, vshape))) return NULL;
  ArenaMark mk = arena_mark(&uctx->scratch);
  int *lo = arena_alloc(&uctx->scratch, sizeof(int) * (size_t)(rshape.n + 1));
  int *hi = arena_alloc(&uctx->scratch, sizeof(int) * (size_t)(rshape.n + 1));
  bool ok = get_contraction_with_reduce(vshape, rshape, r, lo, hi);
  if (!ok) { arena_pop(&uctx->scratch, mk); return NULL; }
  SList sshape = u_shape(src);
  int cap = vshape.n + rshape.n + 1, n = 0, nred = 0;
  Sint *new_shape = arena_alloc(ga(), sizeof(Sint) * (size_t)cap);
  int64_t *new_axis = arena_alloc(ga(), sizeof(int64_t) * (size_t)(rshape.n + 1));
  for (int i = 0; i < rshape.n; i++) {
    int len = rlen(lo[i], hi[i]);
    if (red_has_axis(r, i)) {
      /* if this is a reduce axis, we need a 1 in the view here to put it */
      if (len == 0) tg_fail(TG_EINTERNAL, "reduce_push_add_ones: empty chunk on a reduce axis");
      for (int k = 0; k < len - 1; k++) new_shape[n++] = si(1);
      new_shape[n++] = sshape.v[i];
      new_axis[nred++] = n - 1;
    } else {
      /* otherwise, pass through the new_shape_chunk */
      for (int p = lo[i]; p < hi[i]; p++) new_shape[n++] = vshape.v[p];
    }
  }
  arena_pop(&uctx->scratch, mk);
  const Value *items[8];
  int na = r->arg->n;
  if (na > 8) tg_fail(TG_EINTERNAL, "reduce_push_add_ones: REDUCE_AXIS arg too long");
  items[0] = r->arg->items[0];
  items[1] = v_ints(nred, new_axis);
  for (int i = 2; i < na; i++) items[i] = r->arg->items[i];
  UOp *ns = u_reshape(src, sl(n, new_shape));
  UOp *ret = uop_replace(r, NULL, 1, &ns, v_tuple(na, items), NULL);
  if (!sl_eq(u_shape(ret), vshape)) tg_fail(TG_EINTERNAL, "shape mismatch on reduce_push_add_ones");
  return ret;
}

// view before elementwise and buffer ops
static UOp *view_before_elementwise(const Match *m, void *ctx) {
  UOp *e = m_get(m, "e"), *view = m_get(m, "view");
  UOp **ns = arena_alloc(ga(), sizeof(UOp *) * (size_t)(e->nsrc + 1));
  for (int i = 0; i < e->nsrc; i++) ns[i] = u_view(e->src[i], view->arg->st);
  return uop_replace(e, NULL, e->nsrc, ns, NULL, NULL);
}

static const Rule view_left[] = {
  // view before elementwise and buffer ops
  { UP(.ops = OPS(OP_VIEW), .name = "view",
       SRC(UP(.groups = G_ALU, .ops = OPS(OP_CAST, OP_BITCAST, OP_BIND, OP_STORE, OP_VALID, OP_SINK), .name = "e"))),
    view_before_elementwise },
  // if there's ones added after reduce, put this before the reduce
  { UP(.ops = OPS(OP_VIEW), .name = "view", SRC(UP(.ops = OPS(OP_REDUCE_AXIS), .name = "r", SRC(UVAR("src"))))),
    reduce_push_add_ones },
};

static const Rule view_left_through_load[] = {
  // view before load
  { UP(.ops = OPS(OP_VIEW), .name = "view", SRC(UP(.ops = OPS(OP_LOAD), .name = "e"))), view_before_elementwise },
};

UOp *apply_swizzle(UOp *u) { return graph_rewrite(u, pm_view_left, NULL, false, NULL); }

/* ---- swizzle_reduceop ---- */

UOp *swizzle_reduceop(UOp *r, UOp *src, UOp *view, bool fuse) {
  const ShapeTracker *vst = view->arg->st;
  SList rshape_out = u_shape(r), vshape = u_shape(view);
  /* contiguous and same size can push to children; if there's a reduce child, shapes match with ones removed */
  if (st_contiguous(vst) && py_eq(u_size(view), u_size(r))) {
    bool fused = r->arg->n == 3 && r->arg->items[2]->kind == V_BOOL && r->arg->items[2]->b; /* arg[2] = True is fuse marker */
    if (!fused) return NULL;
    /* tuple((i,x) for i,x in enumerate(shape) if resolve(x != 1)) on both sides */
    bool same = true;
    int i = 0, j = 0;
    for (;;) {
      while (i < rshape_out.n && !ne1(rshape_out.v[i])) i++;
      while (j < vshape.n && !ne1(vshape.v[j])) j++;
      if (i == rshape_out.n || j == vshape.n) { same = i == rshape_out.n && j == vshape.n; break; }
      if (i != j || !py_eq(rshape_out.v[i], vshape.v[j])) { same = false; break; }
      i++, j++;
    }
    if (same) return NULL;
  }
  /* swizzle the input */
  SList sshape = u_shape(src);
  int nd = sshape.n, nax = red_naxis(r);
  const ShapeTracker *input_st = st_from_shape(sshape, NULL);
  int *perm = arena_alloc(ga(), sizeof(int) * (size_t)(nd + 1));
  int np = 0;
  for (int a = 0; a < nd; a++) if (!red_has_axis(r, a)) perm[np++] = a;
  for (int k = 0; k < nax; k++) perm[np++] = red_axis(r, k);
  if (np != nd) tg_fail(TG_EINTERNAL, "swizzle_reduceop: bad reduce axes");
  const ShapeTracker *tmp = st_permute(input_st, perm);
  SList tshape = st_shape(tmp);
  /* rshape = tmp.shape[-len(axis):] (all of it when there are no axes, as Python's [-0:]) */
  int rn = nax == 0 ? tshape.n : nax;
  SList rshape = sl(rn, tshape.v + (tshape.n - rn));
  Sint prshape = sl_prod(rshape);
  SList rstrides = strides_for_shape(rshape);
  const View **nv = arena_alloc(ga(), sizeof(View *) * (size_t)vst->nviews);
  for (int vi = 0; vi < vst->nviews; vi++) {
    const View *v = vst->views[vi];
    int n = v->ndim + rn;
    Sint *shp = arena_alloc(ga(), sizeof(Sint) * (size_t)n), *str = arena_alloc(ga(), sizeof(Sint) * (size_t)n);
    Sint *mask = v->mask ? arena_alloc(ga(), sizeof(Sint) * (size_t)(2 * n)) : NULL;
    for (int k = 0; k < v->ndim; k++) {
      shp[k] = v->shape[k];
      str[k] = si_mul(v->strides[k], prshape);
      if (mask) { mask[2 * k] = v->mask[2 * k]; mask[2 * k + 1] = v->mask[2 * k + 1]; }
    }
    for (int k = 0; k < rn; k++) {
      shp[v->ndim + k] = rshape.v[k];
      str[v->ndim + k] = rstrides.v[k];
      if (mask) { mask[2 * (v->ndim + k)] = si(0); mask[2 * (v->ndim + k) + 1] = rshape.v[k]; }
    }
    SList strides = sl(n, str);
    nv[vi] = view_create(sl(n, shp), &strides, si_mul(v->offset, prshape), mask);
  }
  const ShapeTracker *new_view = st_concat(tmp, st_intern(vst->nviews, nv));
  UOp *swizzled_input = apply_swizzle(u_view(src, new_view));
  /* create a new reduceop */
  int64_t *new_axis = arena_alloc(ga(), sizeof(int64_t) * (size_t)(nax + 1));
  for (int k = 0; k < nax; k++) new_axis[k] = vshape.n + k;
  UOp *red;
  if (fuse) {
    UOp *f = uop1(OP_FUSE, swizzled_input->dtype, swizzled_input, NULL);
    red = uop1(OP_REDUCE_AXIS, r->dtype, f, v_tuplev(3, v_ops(red_op(r)), v_ints(nax, new_axis), v_bool(true)));
  } else {
    red = uop1(OP_REDUCE_AXIS, r->dtype, swizzled_input, v_tuplev(2, v_ops(red_op(r)), v_ints(nax, new_axis)));
  }
  return u_reshape(red, vshape);
}

/* ---- view_right (codegen's "Main View Right") ---- */

// push a non contiguous ShapeTracker through reduceop
static UOp *rw_swizzle_reduceop(const Match *m, void *ctx) {
  return swizzle_reduceop(m_get(m, "r"), m_get(m, "src"), m_get(m, "view"), false);
}
// apply view after reduceops
static UOp *reduceop_view_right(const Match *m, void *ctx) {
  UOp *src = m_get(m, "src"), *v = m_get(m, "v"), *r = m_get(m, "r");
  /* tinygrad asserts here: a kernel it refuses to compile (exit 3, as for a bad graph) */
  if (!st_contiguous(v->arg->st) || !py_eq(u_size(v), u_size(src)))
    tg_fail(TG_EINPUT, "kernel AST: can't compute new axis for %s -> %s (tinygrad 0.11.0 raises AssertionError in reduceop_view_right)",
            value_repr(ga(), v_of_sl(u_shape(src))), value_repr(ga(), v_of_sl(u_shape(r))));
  SList ss = u_shape(src), rs = u_shape(r);
  int n = ss.n < rs.n ? ss.n : rs.n, na = 0;
  int *ax = arena_alloc(ga(), sizeof(int) * (size_t)(n + 1));
  for (int i = 0; i < n; i++) if (si_resolve_ne(ss.v[i], rs.v[i], true)) ax[na++] = i;
  return u_reshape(u_r(src, red_op(r), na, ax), rs);
}
// apply view after elementwise ops
static UOp *elementwise_view_right(const Match *m, void *ctx) {
  UOp *root = m_get(m, "root");
  UOp *first = NULL;
  for (int i = 0; i < root->nsrc; i++) {
    UOp *x = root->src[i];
    if (x->op != OP_VIEW || always_contiguous((Op)u_base(x)->op)) continue;
    if (!first) first = x;
    else if (!py_eq(u_size(u_base(x)), u_size(u_base(first))))
      tg_fail(TG_EINPUT, "kernel AST: swizzle inputs must have the same size (tinygrad 0.11.0 raises AssertionError in elementwise_view_right)");
  }
  if (!first) return NULL;
  /* place view after applying the elementwise op */
  const ShapeTracker *new_st = st_from_shape(u_shape(u_base(first)), NULL);
  SList nshape = st_shape(new_st);
  UOp **ns = arena_alloc(ga(), sizeof(UOp *) * (size_t)(root->nsrc + 1));
  for (int i = 0; i < root->nsrc; i++) {
    UOp *x = root->src[i], *b = u_base(x);
    ns[i] = sl_eq(u_shape(b), nshape) ? b : apply_swizzle(u_view(x, new_st));
  }
  /* reshape to match downstream shapes */
  return u_reshape(uop_replace(root, NULL, root->nsrc, ns, NULL, NULL), u_shape(root));
}
// merge axes for double reduce (invert of SPLIT_REDUCEOP=1)
static UOp *merge_double_reduce(const Match *m, void *ctx) {
  UOp *r1 = m_get(m, "r1"), *r2 = m_get(m, "r2");
  if (red_op(r1) != red_op(r2)) return NULL;
  int n1 = red_naxis(r1), n2 = red_naxis(r2);
  int64_t *ax = arena_alloc(ga(), sizeof(int64_t) * (size_t)(n1 + n2 + 1));
  for (int i = 0; i < n2; i++) ax[i] = red_axis(r2, i);
  for (int i = 0; i < n1; i++) ax[n2 + i] = red_axis(r1, i);
  return uop_replace(r1, NULL, -1, NULL, v_tuplev(2, r1->arg->items[0], v_ints(n1 + n2, ax)), NULL);
}
// remove view from sink
static UOp *remove_view_from_sink(const Match *m, void *ctx) {
  UOp *v = m_get(m, "v"), *sink = m_get(m, "sink");
  return uop_sink(1, &v->src[0], sink->arg);
}

static const Rule view_right[] = {
  // push a non contiguous ShapeTracker through reduceop
  { UP(.ops = OPS(OP_VIEW), .name = "view", SRC(UP(.ops = OPS(OP_REDUCE_AXIS), .name = "r", SRC(UVAR("src"))))),
    rw_swizzle_reduceop },
  // apply view after reduceops
  { UP(.ops = OPS(OP_REDUCE_AXIS), .name = "r",
       SRC(UP(.ops = OPS(OP_VIEW), .name = "v",
              SRC(UP(.all_ops = true, .except = OPS(OP_CONTIGUOUS, OP_ASSIGN, OP_COPY, OP_BUFFER, OP_BUFFER_VIEW,
                                                    OP_CONST, OP_BIND, OP_DEVICE, OP_MSELECT, OP_MSTACK, OP_DEFINE_GLOBAL,
                                                    OP_DEFINE_LOCAL, OP_DEFINE_REG, OP_LOAD),
                     .name = "src"))))),
    reduceop_view_right },
  // apply view after elementwise ops
  { UP(.all_ops = true, .except = OPS(OP_SINK, OP_REDUCE_AXIS), .name = "root"), elementwise_view_right },
  // merge axes for double reduce (invert of SPLIT_REDUCEOP=1)
  { UP(.ops = OPS(OP_REDUCE_AXIS), .name = "r2", SRC(UP(.ops = OPS(OP_REDUCE_AXIS), .name = "r1"))), merge_double_reduce },
  // remove view from sink
  { UP(.ops = OPS(OP_SINK), .dts = DTS(SC_VOID), .name = "sink", SRC(UP(.ops = OPS(OP_VIEW), .name = "v"))), remove_view_from_sink },
};

/* ---- fix_kernel_ops (codegen's "Finalize Kernel", with view_left) ---- */

// add view to LOAD
static UOp *load_add_view(const Match *m, void *ctx) {
  UOp *g = m_get(m, "g");
  UOp *v = u_view(g, u_st(g));
  return uop1(OP_LOAD, dt_base(v->dtype), v, NULL);
}
// add view to STORE
static UOp *store_add_view(const Match *m, void *ctx) {
  UOp *g = m_get(m, "g"), *x = m_get(m, "x");
  return uop2(OP_STORE, dt_void, u_view(g, u_st(g)), x, NULL);
}
// VALID: a VIEW of a const becomes where(valid, c, 0)
static UOp *view_const_to_valid(const Match *m, void *ctx) {
  UOp *self = m_get(m, "self");
  UOp *valid = uop1(OP_VALID, dt_bool, uop0(OP_VIEW, dt_void, v_st(u_st(self))), NULL);
  UOp *c = u_const_like(self, u_base(self)->arg);
  return u_alu3(OP_WHERE, valid, c, u_const_like_i(c, 0));
}
// no ImageDType after index
static UOp *strip_image_dtype(const Match *m, void *ctx) {
  UOp *x = m_get(m, "x");
  return x->dtype->kind == DTK_IMAGE ? uop_replace(x, dt_base(x->dtype), -1, NULL, NULL, NULL) : NULL;
}
// if this kernel also assigns to the loaded buffer, ensure we can index it correctly
static UOp *check_load_st(const Match *m, void *ctx) {
  UOp *glbl = m_get(m, "glbl"), *view = m_get(m, "view");
  const ShapeTracker *st = view->arg->st;
  if (!(glbl->arg->kind == V_INT && glbl->arg->i == 0) || st_contiguous(st)) return NULL;
  SList shape = st_shape(st);
  if (st->nviews == 1) {
    /* it becomes contiguous when you shrink expanded axes */
    Sint *arg = arena_alloc(ga(), sizeof(Sint) * (size_t)(2 * shape.n + 1));
    for (int i = 0; i < shape.n; i++) {
      bool zero = si_is_int(st->views[0]->strides[i]) && st->views[0]->strides[i].c == 0;
      arg[2 * i] = si(0); arg[2 * i + 1] = zero ? si(1) : shape.v[i];
    }
    if (st_contiguous(st_shrink(st, arg))) return NULL;
    /* it's equal when you shrink a contig */
    const Sint *mask = st->views[0]->mask;
    if (mask && st_shrink(st_from_shape(shape, NULL), mask) == st_shrink(st, mask)) return NULL;
  }
  tg_fail(TG_EINPUT, "self operand of augmented assign must be contiguous.\nhelp: consider using .contiguous():\n"
                     "   - a += a.T\n   + a += a.T.contiguous()");
}

static const Rule fix_kernel_ops[] = {
  // add view to LOAD
  { UP(.ops = OPS(OP_LOAD), SRC(UP(.ops = OPS(OP_DEFINE_GLOBAL), .name = "g"))), load_add_view },
  // add view to STORE
  { UP(.ops = OPS(OP_STORE), SRC(UP(.ops = OPS(OP_DEFINE_GLOBAL), .name = "g"), UVAR("x"))), store_add_view },
  // VALID
  { UP(.ops = OPS(OP_VIEW), .name = "self", SRC(UCVAR(NULL))), view_const_to_valid },
  // no ImageDType after index
  { UP(.all_ops = true, .except = OPS(OP_DEFINE_GLOBAL, OP_VIEW), .name = "x"), strip_image_dtype },
  // if this kernel also assigns to the loaded buffer, ensure we can index it correctly
  { UP(.ops = OPS(OP_LOAD), SRC(UP(.ops = OPS(OP_VIEW), .name = "view", SRC(UVAR("glbl"))))), check_load_st },
};

/* fix_kernel_ops' VIEWs of the LOADed and STOREd buffers alone (codegen lowers a masked constant's
 * view itself, so it keeps its VIEW, not tinygrad's VALID) */
static const Rule buffer_views[] = {
  { UP(.ops = OPS(OP_LOAD), SRC(UP(.ops = OPS(OP_DEFINE_GLOBAL), .name = "g"))), load_add_view },
  { UP(.ops = OPS(OP_STORE), SRC(UP(.ops = OPS(OP_DEFINE_GLOBAL), .name = "g"), UVAR("x"))), store_add_view },
  { UP(.ops = OPS(OP_LOAD), SRC(UP(.ops = OPS(OP_VIEW), .name = "view", SRC(UVAR("glbl"))))), check_load_st },
};

void swizzler_init(void) {
  if (pm_merge_views) return;
  pm_init();
  PM *mv = pm_new(merge_views, RULES_N(merge_views));
  PM *vl = pm_new(view_left, RULES_N(view_left));
  PM *vr = pm_new(view_right, RULES_N(view_right));
  pm_view_left_through_load = pm_new(view_left_through_load, RULES_N(view_left_through_load));
  pm_view_left = pm_concat(2, (PM *const[]){mv, vl});
  pm_view_right = pm_concat(2, (PM *const[]){mv, vr});
  pm_fix_kernel_ops = pm_concat(2, (PM *const[]){pm_view_left_through_load, pm_new(fix_kernel_ops, RULES_N(fix_kernel_ops))});
  pm_buffer_views = pm_concat(3, (PM *const[]){pm_view_left, pm_view_left_through_load, pm_new(buffer_views, RULES_N(buffer_views))});
  pm_merge_views = mv;
}
