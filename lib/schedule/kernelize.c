/* kernelize.c: the tensor graph -> KERNEL graph pipeline (tinygrad 0.11.0 schedule/kernelize.py).
 *
 * Every tinygrad PatternMatcher here is a static Rule table with the same name, the same rules
 * in the same order, each callback a direct port of its lambda. get_kernelize_map runs the passes
 * top to bottom as tinygrad does (graph_rewrite_map chaining input_map, the fix_assign loop,
 * create_ast), and kernelize_run can stop after any named pass for `tgc dump --stage`.
 * Helpers that tinygrad writes as UOp methods (contiguous, fuse, view, assign, copy_to_device)
 * are small constructors at the top; tinygrad's UOp.view is a plain VIEW (no no-op elision). */
#include "passes.h"
#include <stdio.h>
#include <string.h>


/* ---- UOp method equivalents ---- */
static UOp *mk_contiguous(UOp *u) { return uop1(OP_CONTIGUOUS, u->dtype, u, NULL); }
static UOp *mk_fuse(UOp *u) { return uop1(OP_FUSE, u->dtype, u, NULL); }
static UOp *mk_assign(UOp *t, UOp *x) { return uop2(OP_ASSIGN, t->dtype, t, x, NULL); }
static UOp *mk_copy_to_device(UOp *u, const Value *device) {
  return uop2(OP_COPY, u->dtype, u, uop0(OP_DEVICE, dt_void, device), NULL);
}
static UOp *replace_src(UOp *u, int n, UOp *const *src) { return uop_replace(u, NULL, n, src, NULL, NULL); }
static bool st_masked(const ShapeTracker *st) { return st_has_mask(st); }
static bool si_is(Sint s, int64_t c) { return si_is_int(s) && s.c == c; }
static bool sint_eq_py(Sint a, Sint b) { return si_eq(a, b); } /* Python ==: ints by value, UOps by identity */
static const Value *kernel_value(UOp *ast, int n, const Meta *const *m) { return v_kernel(ast, n, m); }

/* dedup(a + b) of metadata lists, in scratch */
static int meta_merge(const Meta ***out, int na, const Meta *const *a, int nb, const Meta *const *b, bool dedup) {
  /* scratch: the list only reaches a Kernel value, which keeps a copy (vintern) */
  const Meta **r = arena_alloc_raw(&uctx->scratch, sizeof(Meta *) * (size_t)(na + nb + 1));
  int n = 0;
  for (int i = 0; i < na + nb; i++) {
    const Meta *m = i < na ? a[i] : b[i - na];
    bool dup = false;
    if (dedup) for (int j = 0; j < n; j++) if (r[j] == m) { dup = true; break; }
    if (!dup) r[n++] = m;
  }
  *out = r;
  return n;
}

/* ---- schedule simplifier ---- */

/* identity_element(op, dt) */
static const Value *identity_element(Op op, const DType *dt) {
  if (op == OP_ADD) return as_const(v_int(0), dt);
  if (op == OP_MUL) return as_const(v_int(1), dt);
  if (dt_is_int(dt)) return as_const(v_int(dt_imin(dt)), dt);
  if (dt_is_float(dt)) return as_const(v_float(dt_fmin(dt)), dt);
  return as_const(v_bool(false), dt);
}

/* the reduce's axes, in an arena array (a reduce has as many as its source has dims) */
static int reduce_axes_of(UOp *reduce, int **axes) {
  const Value *ax = reduce->arg->items[1];
  *axes = arena_alloc(ga(), sizeof(int) * (size_t)(ax->n + 1));
  for (int i = 0; i < ax->n; i++) (*axes)[i] = (int)ax->items[i]->i;
  return ax->n;
}
static bool in_axes(int i, int n, const int *axes) { for (int j = 0; j < n; j++) if (axes[j] == i) return true; return false; }

static UOp *simplify_stride0_reduce(const Match *m, void *ctx) {
  UOp *reduce = m_get(m, "reduce"), *x = m_get(m, "x");
  const ShapeTracker *st = u_st(x);
  // must be unmasked (NOTE: can be relaxed if not masked on stride 0 axis)
  if (st_masked(st)) return NULL;
  // must have all stride 0 in the relevant axis (NOTE: can do partial)
  int *axes, na = reduce_axes_of(reduce, &axes);
  const View *last = st->views[st->nviews - 1];
  for (int i = 0; i < na; i++) if (!si_is(last->strides[axes[i]], 0)) return NULL;
  SList xs = u_shape(x);
  if (!sl_all_int(xs)) return NULL;
  int64_t prshape = 1;
  Sint *arg = arena_alloc(ga(), sizeof(Sint) * 2 * (size_t)(xs.n + 1));
  for (int i = 0; i < xs.n; i++) {
    if (in_axes(i, na, axes)) prshape *= xs.v[i].c;
    arg[2 * i] = si(0);
    arg[2 * i + 1] = in_axes(i, na, axes) ? si(1) : xs.v[i];
  }
  UOp *ret = u_shrink(x, arg);
  switch ((Op)reduce->arg->items[0]->op) {
  case OP_ADD: return u_muli(ret, prshape);
  case OP_MUL: return u_pow(ret, u_const_like_i(ret, prshape));
  case OP_MAX: return ret; // NOTE: Ops.MAX is passthrough
  default: return NULL;
  }
}

static UOp *split_reduceop(const Match *m, void *ctx) {
  UOp *reduce = m_get(m, "reduce"), *x = m_get(m, "x");
  if (!uctx->opt.split_reduceop) return NULL;
  SList xs = u_shape(x), rs = u_shape(reduce);
  if (!sl_all_int(xs)) return NULL;
  int64_t px = sl_prod(xs).c;
  Sint prs = sl_prod(rs);
  if (!si_is_int(prs) || prs.c == 0) return NULL;
  if (px / prs.c < uctx->opt.reduceop_split_threshold) return NULL;
  // if there are few globals, make some reduces into globals by splitting into two kernels
  // cap output buffer to 2**22: heuristic number of global outputs to achieve max occupancy with enough locals+upcasts for gemm
  //   ~2**10 should be enough if GROUP is used
  // 256 split maximum should be "negligible reduce" for low prod(reduce.shape), 8 split minimum.
  // split is moved to the end to provide maximum locality for the second phase reduce.
  /* a split adds a dimension, and a threshold of 0 splits again: ranks are not bounded by 64 here */
  Sint *rstr = arena_alloc(ga(), sizeof(Sint) * (size_t)(xs.n + 1));
  bool *has = arena_alloc(ga(), sizeof(bool) * (size_t)(xs.n + 1));
  st_real_strides(u_st(x), true, rstr, has);
  int *axes, na = reduce_axes_of(reduce, &axes);
  /* 2**REDUCEOP_SPLIT_SIZE // prod(reduce.shape), in Python's unbounded ints (any size the options give) */
  int sz = uctx->opt.reduceop_split_size;
  int64_t lim = sz < 0 ? 0 : sz >= 62 ? INT64_MAX : (int64_t)1 << sz;
  lim = lim / prs.c;
  if (lim > 256) lim = 256;
  int dim_to_split = -1; int64_t divisor = 0;
  for (int a = 0; a < na && dim_to_split < 0; a++) {
    int i = axes[a];
    for (int64_t d = lim; d >= 8; d--) {
      if (xs.v[i].c % d == 0 && !(has[i] && si_is(rstr[i], 0))) { dim_to_split = i; divisor = d; break; }
    }
  }
  if (dim_to_split < 0) return NULL;
  /* the whole reduce is the split axis: the second reduce would be this one again. tinygrad splits
   * without end here (until it runs out of memory) and gives no schedule; only a
   * REDUCEOP_SPLIT_THRESHOLD below 256 gets this far. tgc leaves the reduce unsplit, and says so. */
  if (px / prs.c == divisor) {
    if (!uctx->sched_warning)
      uctx->sched_warning = arena_printf(ga(), "tinygrad 0.11.0 gives no schedule for this graph: with REDUCEOP_SPLIT_THRESHOLD=%lld, "
                                         "split_reduceop splits a reduce of %lld elements per output into itself without end; "
                                         "tgc leaves it unsplit", (long long)uctx->opt.reduceop_split_threshold, (long long)divisor);
    return NULL;
  }
  int n = xs.n;
  Sint *sh = arena_alloc(ga(), sizeof(Sint) * (size_t)(n + 2));
  int k = 0;
  for (int i = 0; i < dim_to_split; i++) sh[k++] = xs.v[i];
  sh[k++] = si(divisor);
  sh[k++] = si(xs.v[dim_to_split].c / divisor);
  for (int i = dim_to_split + 1; i < n; i++) sh[k++] = xs.v[i];
  int *perm = arena_alloc(ga(), sizeof(int) * (size_t)(k + 1));
  int p = 0;
  for (int d = 0; d < k; d++) if (d != dim_to_split) perm[p++] = d;
  perm[p++] = dim_to_split;
  UOp *splitted = u_permute(u_reshape(x, sl(k, sh)), perm);
  // reduce original axes, then split
  Op rop = (Op)reduce->arg->items[0]->op;
  UOp *r1 = u_r(splitted, rop, na, axes);
  int last = rs.n;
  UOp *r2 = u_r(r1, rop, 1, &last);
  if (sched_why) { sched_why->nsplit++; sched_why_note(r1, WHY_SPLIT_REDUCEOP); }
  return u_reshape(r2, rs);
}

static UOp *copy_reorder_view(const Match *m, void *ctx) {
  UOp *copy = m_get(m, "copy"), *view = m_get(m, "view"), *base = m_get(m, "base");
  const Value *dev = u_device(copy);
  if (si_resolve_lt(sl_prod(u_shape(view)), sl_prod(u_shape(base)), false)) return mk_copy_to_device(mk_contiguous(view), dev);
  return uop1(OP_VIEW, base->dtype, mk_copy_to_device(base, dev), view->arg);
}

/* kernelize_sym callbacks */
static UOp *rw_size0_zero(const Match *m, void *ctx) {
  UOp *root = m_get(m, "root");
  if (!u_st(u_base(root))) return NULL;
  if (!si_is(u_size(root), 0)) return NULL;
  return u_const_like_i(root, 0);
}
static UOp *rw_src0(const Match *m, void *ctx) { return m_get(m, "x")->src[0]; }
static UOp *rw_reduce_size0(const Match *m, void *ctx) {
  UOp *reduce = m_get(m, "reduce"), *x = m_get(m, "x");
  if (!si_is(u_size(x), 0)) return NULL;
  Sint rsz = u_size(reduce);
  if (!si_resolve_ne(rsz, si(0), false)) return NULL;
  return u_const_like(reduce, identity_element((Op)reduce->arg->items[0]->op, reduce->dtype));
}
static UOp *rw_copy_const(const Match *m, void *ctx) { return u_const_like(m_get(m, "root"), m_get(m, "x")->arg); }
static UOp *rw_copy_same_device(const Match *m, void *ctx) {
  UOp *c = m_get(m, "c"), *x = m_get(m, "x");
  const Value *cd = u_device(c), *xd = u_device(x);
  return cd && cd == xd ? x : NULL;
}
static bool is_image(const DType *d) { return d->kind == DTK_IMAGE; }
static UOp *rw_cast_image_contig(const Match *m, void *ctx) {
  UOp *cast = m_get(m, "cast"), *base = m_get(m, "base"), *vm = m_get(m, "vm");
  return is_image(cast->dtype) && is_image(base->dtype) ? u_view(base, u_st(vm)) : NULL;
}
static UOp *rw_cast_before_view_const(const Match *m, void *ctx) {
  UOp *x = m_get(m, "x"), *c = m_get(m, "c");
  UOp *xc = u_cast(x, c->dtype);
  return uop1(OP_VIEW, xc->dtype, xc, c->src[0]->arg);
}
static UOp *rw_not_image(const Match *m, void *ctx) {
  UOp *u = m_get(m, "u");
  const DType *dt = u->dtype;
  if (!is_image(dt)) return NULL;
  SList shp = u_shape(u);
  Sint p = sl_prod(shp);
  int64_t pd = 1;
  for (int i = 0; i < dt->nshape; i++) pd *= dt->shape[i];
  bool bad = !(si_is_int(p) && p.c == pd);
  if (!bad) {
    int *axes = arena_alloc(ga(), sizeof(int) * (size_t)(shp.n + 1)), n = st_unit_stride_axes(u_st(u), false, axes);
    bool any = false;
    for (int i = 0; i < n; i++) if (si_is_int(shp.v[axes[i]]) && shp.v[axes[i]].c % 4 == 0) any = true;
    bad = !any;
  }
  return bad ? uop_replace(u, dt_base(dt), -1, NULL, NULL, NULL) : NULL;
}
static UOp *rw_contig_buffer_view(const Match *m, void *ctx) {
  UOp *view = m_get(m, "view"), *buf = m_get(m, "buf");
  return st_contiguous(u_st(view)) && sint_eq_py(u_size(view), u_size(buf)) ? view : NULL;
}
static UOp *rw_root_src0(const Match *m, void *ctx) { return m_get(m, "root")->src[0]; }
static UOp *rw_disk_buffer_view(const Match *m, void *ctx) {
  UOp *x = m_get(m, "x"), *t = m_get(m, "t");
  const Value *d = u_device(x);
  if (!d || d->kind != V_STR || strncmp(d->s, "DISK", 4) != 0) return NULL;
  const Value *arg = v_tuplev(2, v_sint(u_size(t)), v_sint(u_st(x)->views[0]->offset));
  return u_reshape(uop1(OP_BUFFER_VIEW, t->dtype, u_base(x), arg), u_shape(t));
}
static UOp *rw_double_assign(const Match *m, void *ctx) { return mk_assign(m_get(m, "t"), mk_contiguous(m_get(m, "x"))); }
static UOp *rw_assign_unrealized(const Match *m, void *ctx) {
  UOp *x = m_get(m, "x"), *t = m_get(m, "t"), *tb = u_base(t);
  if (tb->op == OP_BUFFER || tb->op == OP_BUFFER_VIEW) return NULL;
  if (tb->op == OP_MSTACK) {
    bool all_buf = true;
    for (int i = 0; i < tb->nsrc; i++) if (tb->src[i]->op != OP_BUFFER) all_buf = false;
    if (all_buf) return NULL;
  }
  return mk_contiguous(x);
}
static UOp *rw_cast_before_expand(const Match *m, void *ctx) {
  UOp *cast = m_get(m, "cast"), *vm = m_get(m, "vm");
  if (cast->dtype->itemsize > vm->dtype->itemsize) return NULL;
  const ShapeTracker *st = u_st(vm);
  if (!si_resolve_lt(si(st_real_size(st)), sl_prod(u_shape(vm)), true)) return NULL;
  return u_view(u_cast(u_base(vm), cast->dtype), st);
}
static UOp *rw_unary_before_expand(const Match *m, void *ctx) {
  UOp *inp = m_get(m, "inp"), *v = m_get(m, "v"), *alu = m_get(m, "alu");
  const ShapeTracker *st = u_st(v);
  if (!si_resolve_lt(si(st_real_size(st)), sl_prod(u_shape(alu)), true)) return NULL;
  return u_view(u_alu1((Op)alu->op, inp), st);
}

static const Op ALWAYS_CONTIGUOUS_OPS[] = {OP_CONTIGUOUS, OP_ASSIGN, OP_COPY, OP_BUFFER, OP_BUFFER_VIEW, OP_CONST, OP_BIND,
  OP_DEVICE, OP_MSELECT, OP_MSTACK, OP_DEFINE_GLOBAL, OP_DEFINE_LOCAL, OP_DEFINE_REG, OP_LOAD, OP_INVALID};

/* the rules kernelize_sym adds after symbolic_simple */
static const Rule kernelize_sym[] = {
  // UOp with size 0 is zero
  { UP(.all_ops = true, .except = OPS(OP_SINK), .name = "root"), rw_size0_zero },
  // DETACH and CONTIGUOUS_BACKWARD are NOOPs here
  { UP(.ops = OPS(OP_DETACH, OP_CONTIGUOUS_BACKWARD), .name = "x"), rw_src0 },
  // reduce of size 0 is the identity element
  { UP(.ops = OPS(OP_REDUCE_AXIS), .name = "reduce", SRC(UVAR("x"))), rw_reduce_size0 },
  // reduce on stride 0 is collapsed
  { UP(.ops = OPS(OP_REDUCE_AXIS), .name = "reduce", SRC(UVAR("x"))), simplify_stride0_reduce },
  // split_reduceop
  { UP(.ops = OPS(OP_REDUCE_AXIS), .name = "reduce", SRC(UVAR("x"))), split_reduceop },
  // COPY(CONST) creates a new CONST on the destination device
  { UP(.ops = OPS(OP_COPY), .name = "root", SRC(UCVAR("x"), UP(.ops = OPS(OP_DEVICE)))), rw_copy_const },
  // non device changing COPY is a NOOP
  { UP(.ops = OPS(OP_COPY), .name = "c", SRC(UVAR("x"), UP(.ops = OPS(OP_DEVICE)))), rw_copy_same_device },
  // store a shrink before COPY, otherwise view after the COPY
  { UP(.ops = OPS(OP_COPY), .name = "copy", SRC(UP(.ops = OPS(OP_VIEW), .name = "view", SRC(UVAR("base"))), UP(.ops = OPS(OP_DEVICE)))),
    copy_reorder_view },
  // remove cast to image when it's already a contiguous image
  { UP(.ops = OPS(OP_CAST), .name = "cast", SRC(UP(.ops = OPS(OP_VIEW), .name = "vm", SRC(UP(.ops = OPS(OP_CONTIGUOUS), .name = "base"))))),
    rw_cast_image_contig },
  // CAST before masking constants
  { UP(.ops = OPS(OP_CAST), .name = "c", SRC(UP(.ops = OPS(OP_VIEW), SRC(UCVAR("x"))))), rw_cast_before_view_const },
  // make things that can't be images not images
  { UP(.all_ops = true, .except = OPS(OP_BUFFER, OP_VIEW, OP_CONST, OP_DEVICE), .name = "u"), rw_not_image },
  // remove contiguous if we can just view the buffer
  { UP(.ops = OPS(OP_CONTIGUOUS), .name = "root", SRC(UP(.ops = OPS(OP_VIEW), .name = "view", SRC(UP(.ops = OPS(OP_BUFFER), .name = "buf"))))),
    rw_contig_buffer_view },
  // contiguous/buffer/copy/assign is already contiguous
  { UP(.ops = OPS(OP_CONTIGUOUS), .name = "root", SRC(UP(.ops = OPS(OP_CONTIGUOUS, OP_BUFFER, OP_COPY, OP_ASSIGN)))), rw_root_src0 },
  // substitute BITCAST/CONTIGUOUS with BUFFER_VIEW on DISK
  { UP(.ops = OPS(OP_BITCAST, OP_CONTIGUOUS), .name = "t", SRC(UVAR("x"))), rw_disk_buffer_view },
  // double ASSIGN to same target is one ASSIGN
  { UP(.ops = OPS(OP_ASSIGN), SRC(UVAR("t"), UP(.ops = OPS(OP_ASSIGN), SRC(UVAR("t"), UVAR("x"))))), rw_double_assign },
  // ASSIGN to unrealized replaces the UOp
  { UP(.ops = OPS(OP_ASSIGN), SRC(UVAR("t"), UVAR("x"))), rw_assign_unrealized },
  // put CAST to smaller dtype before EXPAND
  { UP(.ops = OPS(OP_CAST), .name = "cast", SRC(UP(.ops = OPS(OP_VIEW), .name = "vm"))), rw_cast_before_expand },
  // put UnaryOps before EXPANDs, if it can fuse with the input
  { UP(.groups = G_UNARY, .name = "alu", SRC(UP(.ops = OPS(OP_VIEW), .name = "v", SRC(UP(.all_ops = true, .except = ALWAYS_CONTIGUOUS_OPS, .name = "inp"))))),
    rw_unary_before_expand },
};

/* ---- replace_contiguous: a contiguous permuted view instead of the parent view if one exists ---- */
static UOp *found_contiguous(const Match *m, void *ctx) {
  UOp *contig = m_get(m, "contig"), *src = m_get(m, "src");
  UOp *b = u_base(src);
  const ShapeTracker *sti = st_invert(u_st(src), u_shape(b));
  if (sti) umap_put(ctx, b, u_view(contig, sti));
  return NULL;
}
static UOp *rw_alu_use_contig(const Match *m, void *ctx) {
  UOp *alu = m_get(m, "alu");
  UOp *ns[8]; bool changed = false;
  if (alu->nsrc > 8) return NULL;
  for (int i = 0; i < alu->nsrc; i++) {
    UOp *r = umap_get(ctx, alu->src[i]);
    ns[i] = r ? r : alu->src[i];
    if (ns[i] != alu->src[i]) changed = true;
  }
  return changed ? replace_src(alu, alu->nsrc, ns) : NULL;
}
static const Rule replace_contiguous[] = {
  // remember a contiguous permuted view of a parent
  { UP(.ops = OPS(OP_CONTIGUOUS), .name = "contig", SRC(UP(.ops = OPS(OP_VIEW), .name = "src"))), found_contiguous },
  // ALUs read the contiguous copy instead
  { UP(.groups = G_ALU, .name = "alu"), rw_alu_use_contig },
};

/* ---- create kernels ---- */
static MetaList metadata_of(UOp *u) { return uop_meta(u); }

/* create_kernel(x, b) */
static UOp *create_kernel(UOp *x, UOp *b) {
  if (!b) {
    Sint sz = u_size(x);
    if (!si_is_int(sz)) tg_fail(TG_EINPUT, "a %s with a symbolic size cannot get a buffer", op_names[x->op]);
    b = u_new_buffer(u_device(x), sz.c, x->dtype);
  }
  MetaList md = metadata_of(x);
  UOp **src = arena_alloc(ga(), sizeof(UOp *) * (size_t)(x->nsrc + 1));
  src[0] = b;
  for (int i = 0; i < x->nsrc; i++) src[i + 1] = x->src[i];
  UOp *xs = uop_sink(1, &x, NULL);
  UOp *kernel = uop_new(OP_KERNEL, dt_void, x->nsrc + 1, src, kernel_value(xs, md.n, md.m), NULL);
  UOp *bb = u_base(b), *buffer;
  if (sint_eq_py(u_size(b), u_size(bb))) buffer = bb;
  else {
    if (b->op != OP_VIEW) tg_fail(TG_EINPUT, "ASSIGN target %s is smaller than its buffer but is not a VIEW", op_names[b->op]);
    const Value *arg = v_tuplev(2, v_sint(u_size(b)), v_sint(b->arg->st->views[0]->offset));
    buffer = uop1(OP_BUFFER_VIEW, b->dtype, bb, arg);
  }
  return u_reshape(mk_assign(buffer, kernel), u_shape(x));
}
static UOp *rw_create_kernel_assign(const Match *m, void *ctx) { return create_kernel(m_get(m, "x"), m_get(m, "b")); }
static UOp *rw_create_kernel_contig(const Match *m, void *ctx) { return create_kernel(m_get(m, "x"), NULL); }

static bool dont_place_in_kernel(Op op) {
  return op == OP_KERNEL || op == OP_ASSIGN || op == OP_BUFFER || op == OP_MSELECT || op == OP_MSTACK || op == OP_MULTI || op == OP_BIND;
}
/* append_to_kernel: each application pulls one level of the kernel's local graph in, and the
 * engine rewrites its result again at once (every source of a rewritten node is rewritten
 * already), so a kernel fused over a chain of d ops took d steps, each a new KERNEL node. The
 * steps are taken here, on the source and metadata lists, and only the last gets a node: the same
 * result, without the d - 1 nodes between. Each step still checks the engine's stack bound as
 * its entry would have (the deque count when called, plus one per step, plus the new node's
 * sources: what rewrite_loop checks), so a chain too long for tinygrad fails as it does. */
typedef struct KSrcs { int n; UOp *const *src; int nmeta; const Meta *const *meta; } KSrcs;
static bool append_step(Arena *a, KSrcs *k);
static UOp *append_to_kernel(const Match *m, void *ctx) {
  UOp *x = m_get(m, "x");
  ArenaMark mk = arena_mark(&uctx->scratch);
  KSrcs k = {x->nsrc, x->src, x->arg->k.nmeta, x->arg->k.meta};
  size_t base = pm_stack_count();
  int steps = 0;
  while (append_step(&uctx->scratch, &k)) pm_stack_check(base + (size_t)++steps + 1 + (size_t)k.n);
  UOp *r = steps ? uop_replace(x, NULL, k.n, k.src, kernel_value(x->arg->k.ast, k.nmeta, k.meta), NULL) : NULL;
  arena_pop(&uctx->scratch, mk);
  return r;
}
/* one application of append_to_kernel to the kernel k describes (its lists in the scratch arena
 * a); false when its sources would stay the same (then k is unchanged) */
static bool append_step(Arena *a, KSrcs *k) {
  PtrVec ns;
  vec_init(&ns, a);
  int nmd = k->nmeta;
  const Meta **md = arena_alloc_raw(a, sizeof(Meta *) * (size_t)(nmd + 1));
  if (nmd) memcpy(md, k->meta, sizeof(Meta *) * (size_t)nmd);
  for (int i = 0; i < k->n; i++) {
    UOp *s = k->src[i];
    if (dont_place_in_kernel((Op)s->op)) { vec_push(&ns, s); continue; }
    for (int j = 0; j < s->nsrc; j++) vec_push(&ns, s->src[j]);
    // NOTE: because const and device are shared UOps they don't change metadata
    // NOTE: if it's a reshape after ASSIGN we're not fusing that parent kernel
    UOp *sb = u_base(s);
    MetaList sm = metadata_of(s);
    if (sb->op != OP_CONST && sb->op != OP_DEVICE && !(s->op == OP_RESHAPE && sb->op == OP_ASSIGN) && sm.n) {
      const Meta **nm;
      nmd = meta_merge(&nm, nmd, md, sm.n, sm.m, false);
      md = nm;
    }
  }
  /* dedup the new sources (a set once there are many: a wide fan-out gathers thousands) */
  int n = 0;
  if (ns.n <= 32) {
    for (int i = 0; i < ns.n; i++) {
      bool dup = false;
      for (int j = 0; j < n; j++) if (ns.v[j] == ns.v[i]) { dup = true; break; }
      if (!dup) ns.v[n++] = ns.v[i];
    }
  } else {
    UMap seen;
    umap_init(&seen, a);
    map_reserve(&seen, ns.n);
    for (int i = 0; i < ns.n; i++) {
      bool isnew;
      map_slot(&seen, ns.v[i], uop_h(ns.v[i]), &isnew);
      if (isnew) ns.v[n++] = ns.v[i];
    }
  }
  bool same = n == k->n;
  for (int i = 0; same && i < n; i++) if (ns.v[i] != k->src[i]) same = false;
  if (same) return false;
  const Meta **dm;
  k->nmeta = meta_merge(&dm, nmd, md, 0, NULL, true);
  k->meta = dm, k->n = n, k->src = (UOp *const *)ns.v;
  return true;
}

static UOp *rw_mselect_reshape(const Match *m, void *ctx) {
  UOp *ms = m_get(m, "ms"), *r = m_get(m, "r");
  UOp *inner = r->src[0];
  return u_reshape(uop1(OP_MSELECT, inner->dtype, inner, ms->arg), sl_of_value(r->arg));
}
static UOp *rw_mstack_reshape(const Match *m, void *ctx) {
  UOp *ms = m_get(m, "ms");
  UOp **src = arena_alloc(ga(), sizeof(UOp *) * (size_t)(ms->nsrc + 1));
  for (int i = 0; i < ms->nsrc; i++) src[i] = ms->src[i]->src[0];
  return u_reshape(uop_new(OP_MSTACK, ms->dtype, ms->nsrc, src, NULL, NULL), sl_of_value(ms->src[0]->arg));
}
static const Rule create_kernels[] = {
  // always give assign/contiguous a kernel
  { UP(.ops = OPS(OP_ASSIGN), .name = "x", SRC(UVAR("b"), UP(.all_ops = true, .except = OPS(OP_KERNEL)))), rw_create_kernel_assign },
  { UP(.ops = OPS(OP_CONTIGUOUS), .name = "x"), rw_create_kernel_contig },
  // walk back the local graph until we reach a realized source
  { UP(.ops = OPS(OP_KERNEL), .name = "x"), append_to_kernel },
  // push RESHAPE through MSELECT
  { UP(.ops = OPS(OP_MSELECT), .name = "ms", SRC(UP(.ops = OPS(OP_RESHAPE), .name = "r"))), rw_mselect_reshape },
  // push RESHAPE through MSTACK
  { UP(.ops = OPS(OP_MSTACK), .name = "ms", SRC_REPEAT(UP(.ops = OPS(OP_RESHAPE)))), rw_mstack_reshape },
};

/* ---- fix kernel AST ---- */
static UOp *unbind_view(const Match *m, void *ctx) {
  UOp *x = m_get(m, "x");
  UOp *vars[64];
  int n = st_vars(x->arg->st, vars, 64);
  for (int i = 0; i < n; i++) if (vars[i]->op == OP_BIND) return uop_replace(x, NULL, -1, NULL, v_st(st_unbind(x->arg->st)), NULL);
  return NULL;
}

typedef struct BufList { int n; UOp **v; } BufList;
static int buflist_index(const BufList *b, UOp *x) {
  for (int i = 0; i < b->n; i++) if (b->v[i] == x) return i;
  /* only a malformed graph gets here (e.g. a CONST whose VIEW sits on a BUFFER); tinygrad fails the same way (list.index) */
  tg_fail(TG_EINPUT, "a kernel reads a %s BUFFER of %s elements that is not one of its sources (a CONST or VIEW on a BUFFER?)",
          dt_repr(&uctx->scratch, x->dtype), value_repr(&uctx->scratch, x->arg));
}
static UOp *rw_assign_to_target(const Match *m, void *ctx) { return m_get(m, "assign")->src[0]; }
static UOp *rw_mstack_branch0(const Match *m, void *ctx) { return m_get(m, "x")->src[0]; }
static UOp *rw_buffer_load(const Match *m, void *ctx) {
  UOp *x = m_get(m, "x");
  Sint sz = u_size(x);
  UOp *dg = uop0(OP_DEFINE_GLOBAL, dt_ptr(x->dtype, sz.c, AS_GLOBAL), v_int(buflist_index(ctx, x)));
  return uop1(OP_LOAD, dt_base(dg->dtype), dg, NULL);
}
static UOp *rw_x(const Match *m, void *ctx) { return m_get(m, "x"); }
static UOp *rw_sink_store(const Match *m, void *ctx) {
  UOp *sink = m_get(m, "sink");
  const BufList *bufs = ctx;
  UOp **st = arena_alloc(ga(), sizeof(UOp *) * (size_t)(sink->nsrc + 1));
  for (int i = 0; i < sink->nsrc; i++) {
    UOp *s = u_base(sink->src[i]);
    if (i >= bufs->n) tg_fail(TG_EINTERNAL, "replace_buffers: more kernel outputs than buffers");
    const ShapeTracker *sst = u_st(s);
    if (!sst) tg_fail(TG_EINPUT, "kernel output %d is a %s, which has no shape to store", i, op_names[s->op]);
    UOp *dg = uop0(OP_DEFINE_GLOBAL, dt_ptr(s->dtype, u_size(bufs->v[i]).c, AS_GLOBAL), v_int(i));
    st[i] = uop2(OP_STORE, dt_void, u_view(dg, sst), s, NULL);
  }
  return uop_sink(sink->nsrc, st, sink->arg);
}
static UOp *rw_view_drop_device(const Match *m, void *ctx) { return replace_src(m_get(m, "view"), 0, NULL); }
static UOp *rw_assign_passthrough(const Match *m, void *ctx) { return m_get(m, "x")->src[1]; }
static UOp *rw_view_drop_binds(const Match *m, void *ctx) { UOp *x = m_get(m, "x"); return replace_src(x, 1, x->src); }
static UOp *rw_bind_to_var(const Match *m, void *ctx) { return m_get(m, "x")->src[0]; }
static const Rule replace_buffers[] = {
  // replace ASSIGN with the target BUFFER
  { UP(.ops = OPS(OP_ASSIGN), .name = "assign", .allow_any_len = true, SRC(UP(.ops = OPS(OP_BUFFER, OP_LOAD)), UP(.ops = OPS(OP_KERNEL)))),
    rw_assign_to_target },
  // HACK: select the 0 branch of MSTACK (the device is wrong after this, is that okay?)
  { UP(.ops = OPS(OP_MSTACK), .name = "x"), rw_mstack_branch0 },
  // LOAD
  { UP(.ops = OPS(OP_BUFFER), .name = "x"), rw_buffer_load },
  // no SINK for meta ops
  { UP(.ops = OPS(OP_SINK), SRC(UP(.ops = OPS(OP_CONTIGUOUS), SRC(UP(.groups = G_META, .name = "x"))))), rw_x },
  // STORE (except for meta ops)
  { UP(.ops = OPS(OP_SINK), .name = "sink", SRC_REPEAT(UP(.all_ops = true, .except = OPS(OP_STORE)))), rw_sink_store },
  // remove CONTIGUOUS/DEVICE from kernel AST
  { UP(.ops = OPS(OP_CONTIGUOUS, OP_MSELECT), SRC(UVAR("x"))), rw_x },
  { UP(.ops = OPS(OP_VIEW), .name = "view", SRC(UP(.ops = OPS(OP_DEVICE)))), rw_view_drop_device },
  // passthrough ASSIGN (but let MSTACK process first)
  { UP(.ops = OPS(OP_ASSIGN), .name = "x", SRC(UP(.all_ops = true, .except = OPS(OP_MSTACK)), UP())), rw_assign_passthrough },
  // remove any BINDs from VIEWS
  { UP(.ops = OPS(OP_VIEW), .name = "x", .allow_any_len = true, SRC(UP(), UP(.ops = OPS(OP_BIND, OP_DEFINE_VAR)))), rw_view_drop_binds },
  // remove any BINDs from DEFINE_VARs
  { UP(.ops = OPS(OP_BIND), .name = "x"), rw_bind_to_var },
  // remove BINDs from ShapeTrackers
  { UP(.ops = OPS(OP_VIEW), .name = "x"), unbind_view },
};
static PM *pm_replace_buffers_mv; /* merge_views+replace_buffers */

static UOp *fix_kernel_ast(const Match *m, void *ctx) {
  UOp *k = m_get(m, "k");
  const Kernel *kk = &k->arg->k;
  UOp *ast = kk->ast;
  if (op_in((Op)ast->op, G_META)) return NULL;
  bool all_store = true;
  for (int i = 0; i < ast->nsrc; i++) if (ast->src[i]->op != OP_STORE) all_store = false;
  if (all_store) return NULL;
  // replace buffer with define_global + add load/store last
  BufList bufs = {0, arena_alloc(ga(), sizeof(UOp *) * (size_t)(k->nsrc + 1))};
  for (int i = 0; i < k->nsrc; i++) {
    UOp *s = k->src[i];
    if (s->op == OP_BIND) continue;
    s = u_buf_uop(s);
    // traverse back through MSELECT and MSTACK. HACK: 0 branch of MSTACK only
    while (s->op == OP_MSELECT || s->op == OP_MSTACK) s = s->src[0];
    bufs.v[bufs.n++] = s;
  }
  // replace global memory ops with the BUFFER they write to
  // NOTE: merge_views is needed to unbind the reshapes
  UOp *nast = graph_rewrite(ast, pm_replace_buffers_mv, &bufs, true, NULL);
  if (nast->op == OP_SINK) {
    const Value *d0 = NULL; bool first = true;
    for (int i = 0; i < k->nsrc; i++) {
      if (k->src[i]->op == OP_BIND) continue;
      const Value *d = u_device(k->src[i]);
      if (first) { d0 = d; first = false; }
      else if (d != d0) tg_fail(TG_EINPUT, "all buffers must be on the same device: a kernel reads %s and %s",
                                d0 ? value_repr(ga(), d0) : "None", d ? value_repr(ga(), d) : "None");
    }
  }
  return uop_replace(k, NULL, -1, NULL, kernel_value(nast, kk->nmeta, kk->meta), NULL);
}
static UOp *rw_define_var_nosrc(const Match *m, void *ctx) { return replace_src(m_get(m, "x"), 0, NULL); }
static const Rule create_ast[] = {
  // each KERNEL gets its AST of DEFINE_GLOBAL/LOAD/STORE
  { UP(.ops = OPS(OP_KERNEL), .name = "k"), fix_kernel_ast },
  // DEFINE_VARs lose their VIEW source
  { UP(.ops = OPS(OP_DEFINE_VAR), .name = "x", .allow_any_len = true, SRC(UP())), rw_define_var_nosrc },
};

/* ---- add metadata of KERNEL outputs ---- */
static UOp *append_metadata(const Match *m, void *ctx) {
  UOp *root = m_get(m, "root"), *k = m_get(m, "k");
  MetaList rm = metadata_of(root);
  if (!rm.n) return NULL;
  const Kernel *kk = &k->arg->k;
  const Meta **nm;
  int n = meta_merge(&nm, kk->nmeta, kk->meta, rm.n, rm.m, true);
  bool same = n == kk->nmeta;
  for (int i = 0; same && i < n; i++) if (nm[i] != kk->meta[i]) same = false;
  if (same) return NULL;
  UOp **src = arena_alloc(ga(), sizeof(UOp *) * (size_t)root->nsrc);
  memcpy(src, root->src, sizeof(UOp *) * (size_t)root->nsrc);
  src[1] = uop_replace(k, NULL, -1, NULL, kernel_value(kk->ast, n, nm), NULL);
  return replace_src(root, root->nsrc, src);
}
static const Rule replace_metadata[] = {
  // an ASSIGN's metadata joins its KERNEL's
  { UP(.ops = OPS(OP_ASSIGN), .name = "root", .allow_any_len = true, SRC(UP(), UP(.ops = OPS(OP_KERNEL), .name = "k"))), append_metadata },
};

/* ---- local fusion ---- */
static UOp *rw_fuse_contig(const Match *m, void *ctx) { return m_get(m, "c"); }
static UOp *rw_fuse_swizzle_reduce(const Match *m, void *ctx) {
  UOp *r = m_get(m, "r"), *src = m_get(m, "src"), *view = m_get(m, "view");
  UOp *ret = swizzle_reduceop(r, src, view, true);
  return ret ? u_cast(ret, view->dtype) : NULL;
}
static UOp *rw_fuse_reduce_marker(const Match *m, void *ctx) {
  UOp *r = m_get(m, "r");
  if (r->arg->n != 2) return NULL;
  const Value *arg = v_tuplev(3, r->arg->items[0], r->arg->items[1], v_bool(true));
  UOp *s = mk_fuse(r->src[0]);
  return uop_replace(r, NULL, 1, &s, arg, NULL);
}
static UOp *rw_fuse_unsafe_pad(const Match *m, void *ctx) {
  UOp *alu = m_get(m, "alu"), *view = m_get(m, "view");
  return st_masked(u_st(view)) ? u_view(mk_contiguous(alu), u_st(view)) : NULL;
}
static UOp *rw_fuse_elementwise(const Match *m, void *ctx) {
  UOp *alu = m_get(m, "alu"), *view = m_get(m, "view");
  UOp *ns[8];
  if (alu->nsrc > 8) return NULL;
  for (int i = 0; i < alu->nsrc; i++) ns[i] = mk_fuse(apply_swizzle(uop1(OP_VIEW, alu->src[i]->dtype, alu->src[i], view->arg)));
  return replace_src(alu, alu->nsrc, ns);
}
static UOp *rw_fuse_push(const Match *m, void *ctx) {
  UOp *x = m_get(m, "x"), *s = x->src[0];
  UOp **ns = arena_alloc(ga(), sizeof(UOp *) * (size_t)(s->nsrc + 1));
  for (int i = 0; i < s->nsrc; i++) ns[i] = mk_fuse(s->src[i]);
  return replace_src(s, s->nsrc, ns);
}
#define REDUCE_SRC UP(.ops = OPS(OP_REDUCE_AXIS), .name = "r", SRC(UVAR("src")))
static const Rule pm_fuse[] = {
  // FUSE on CONTIGUOUS removes FUSE
  { UP(.ops = OPS(OP_FUSE), SRC(UP(.ops = OPS(OP_CONTIGUOUS), .name = "c"))), rw_fuse_contig },
  // FUSE triggers swizzle on reduceop
  { UP(.ops = OPS(OP_FUSE), SRC(UP(.ops = OPS(OP_VIEW), .name = "view", SRC(UP_ANY(REDUCE_SRC, UP(.ops = OPS(OP_CAST), SRC(REDUCE_SRC))))))),
    rw_fuse_swizzle_reduce },
  // FUSE on reduce (without view) adds fuse marker to grouper
  { UP(.ops = OPS(OP_FUSE), SRC(UP(.ops = OPS(OP_REDUCE_AXIS), .name = "r"))), rw_fuse_reduce_marker },
  // remove FUSE and insert CONTIGUOUS if it's an unsafe pad
  { UP(.ops = OPS(OP_FUSE), SRC(UP(.ops = OPS(OP_VIEW), .name = "view", SRC(UP(.groups = G_UNSAFEPAD, .name = "alu"))))), rw_fuse_unsafe_pad },
  // FUSE elementwise.
  { UP(.ops = OPS(OP_FUSE), SRC(UP(.ops = OPS(OP_VIEW), .name = "view", SRC(UP(.groups = G_ALU, .ops = OPS(OP_CAST), .name = "alu"))))),
    rw_fuse_elementwise },
  // push FUSE through to srcs
  { UP(.ops = OPS(OP_FUSE), .name = "x"), rw_fuse_push },
};
static PM *pm_pm_fuse;

static bool gate_contiguous(UOp *x, void *ctx) {
  if (x->op != OP_CONTIGUOUS) return true;
  /* tinygrad makes a fresh placeholder (and UNIQUE) each time the gate sees x; the last one is used */
  UOp *s[2] = {uop0(OP_VIEW, dt_void, v_st(u_st(x))), uop_unique()};
  umap_put(ctx, x, replace_src(x, 2, s));
  return false;
}
static UOp *do_fusion(const Match *m, void *ctx) {
  UOp *x = m_get(m, "x");
  UMap found, back;
  umap_init(&found, ga());
  umap_init(&back, ga());
  uop_walk(x, gate_contiguous, &found);
  MAP_EACH(&found, e) umap_put(&back, e->val, e->key);
  UOp *y = graph_rewrite(uop_substitute(x, &found), pm_pm_fuse, NULL, false, NULL);
  return uop_substitute(y, &back);
}

typedef struct AraCtx { UOp *root; PtrVec *local_arange; } AraCtx;
static bool gate_reduce(UOp *u, void *ctx) {
  AraCtx *a = ctx;
  if (u->op == OP_REDUCE_AXIS && u_base(u->src[0])->op == OP_CONST) vec_push(a->local_arange, u);
  return !(always_contiguous((Op)u->op) || u->op == OP_REDUCE_AXIS) || u == a->root;
}
/* any REDUCE_AXIS or BUFFER in child's toposort other than root and r */
typedef struct OtherPaths { const UOp *root, *r; } OtherPaths;
static bool other_path(const UOp *u, const void *ctx) {
  const OtherPaths *o = ctx;
  return (u->op == OP_REDUCE_AXIS || u->op == OP_BUFFER) && u != o->root && u != o->r;
}
static bool has_other_paths(UOp *child, UOp *root, UOp *r) { return uop_any(child, other_path, &(OtherPaths){root, r}); }
/* fuse_arange's work; its lists and maps live in the scratch arena a (only the UOps are kept) */
static UOp *fuse_arange_in(Arena *a, UOp *root) {
  // gather all local aranges (including any fused ones)
  PtrVec local_arange;
  vec_init(&local_arange, a);
  AraCtx ac = {root, &local_arange};
  UList topo = uop_toposort_in(a, root, gate_reduce, &ac);
  /* an arange fused already is skipped below: with none left, fuse_rep stays empty (no children
   * needed) */
  bool unfused = false;
  for (int i = 0; i < local_arange.n && !unfused; i++) unfused = ((UOp *)local_arange.v[i])->arg->n <= 2;
  if (!unfused) return NULL;
  // fuse the nearest expand child of arange
  UMap local_children; /* UOp -> PtrVec* of children (with repeats) */
  umap_init(&local_children, a);
  for (int i = 0; i < topo.n; i++) {
    UOp *u = topo.v[i];
    for (int j = 0; j < u->nsrc; j++) {
      PtrVec *ch = umap_getp(&local_children, u->src[j]);
      if (!ch) { ch = arena_alloc(a, sizeof *ch); vec_init(ch, a); umap_put(&local_children, u->src[j], ch); }
      vec_push(ch, u);
    }
  }
  UMap fuse_rep;
  umap_init(&fuse_rep, a);
  for (int i = 0; i < local_arange.n; i++) {
    UOp *r = local_arange.v[i];
    // skip if already fused
    if (r->arg->n > 2) continue;
    PtrVec q;
    vec_init(&q, a);
    PtrVec *rc = umap_getp(&local_children, r);
    if (rc) for (int j = 0; j < rc->n; j++) vec_push(&q, rc->v[j]);
    while (q.n) {
      UOp *u = vec_pop(&q);
      PtrVec *cc = umap_getp(&local_children, u);
      if (!cc || !cc->n) continue;
      bool broke = false;
      for (int j = 0; j < cc->n; j++) {
        UOp *child = cc->v[j];
        bool other = has_other_paths(child, root, r);
        UOp **ns = arena_alloc(a, sizeof(UOp *) * (size_t)(child->nsrc + 1));
        for (int k = 0; k < child->nsrc; k++) ns[k] = child->src[k] == u ? mk_fuse(u) : child->src[k];
        umap_put(&fuse_rep, child, replace_src(child, child->nsrc, ns));
        if (other) { broke = true; break; }
      }
      if (!broke) for (int j = 0; j < cc->n; j++) vec_push(&q, cc->v[j]);
    }
  }
  return fuse_rep.live ? uop_substitute(root, &fuse_rep) : NULL;
}
static UOp *fuse_arange(const Match *m, void *ctx) {
  UOp *root = m_get(m, "root");
  // skip if root is arange
  if (!uctx->opt.fuse_arange || u_base(root->src[0])->op == OP_CONST) return NULL;
  ArenaMark mk = arena_mark(&uctx->scratch);
  UOp *r = fuse_arange_in(&uctx->scratch, root);
  arena_pop(&uctx->scratch, mk);
  return r;
}
static const Rule do_fuse[] = {
  // FUSE marks a local fusion region
  { UP(.ops = OPS(OP_FUSE), .name = "x"), do_fusion },
  // fuse aranges into their nearest expand child
  { UP(.ops = OPS(OP_REDUCE_AXIS), .name = "root"), fuse_arange },
};

/* ---- add_contiguous / finalize_contiguous / remove_tags ---- */
static UOp *rw_add_contiguous(const Match *m, void *ctx) {
  UOp *x = m_get(m, "x");
  if (!umap_has(ctx, x) || !v_is_none(x->tag)) return NULL;
  return mk_contiguous(uop_with_tag(x, v_int(1)));
}
static const Rule add_contiguous[] = {
  // realized nodes get a CONTIGUOUS (and a tag so they are not realized twice)
  { UP(.all_ops = true, .except = OPS(OP_CONTIGUOUS, OP_ASSIGN), .name = "x"), rw_add_contiguous },
};

static bool gate_input(UOp *u, void *ctx) {
  bool is_load = u->op == OP_BUFFER || u->op == OP_CONTIGUOUS || u->op == OP_ASSIGN || u->op == OP_MSTACK;
  if (is_load) { bool isnew; map_slot(ctx, u, uop_h(u), &isnew); }
  return !is_load;
}
/* DEVICE_MAX_BUFS.get(device, 0): device is root.device, or the first one's name before ':' */
static int64_t device_max_bufs(const Value *dv) {
  const char *d = NULL;
  size_t n = 0;
  if (dv && dv->kind == V_STR) d = dv->s, n = strlen(d);
  else if (dv && dv->kind == V_TUPLE && dv->n && dv->items[0]->kind == V_STR) d = dv->items[0]->s, n = strcspn(d, ":");
  if (!d) return 0;
  if (n == 5 && memcmp(d, "METAL", 5) == 0) return 32;
  if (n == 6 && memcmp(d, "WEBGPU", 6) == 0) return 8;
  return 0;
}
static UOp *limit_bufs(const Match *m, void *ctx) {
  UOp *root = m_get(m, "root");
  // check if backend has a buffer limit
  int64_t max_bufs = uctx->opt.max_kernel_buffers;
  if (!max_bufs) max_bufs = device_max_bufs(u_device(root));
  if (!max_bufs) return NULL;
  // count number of unique buffers flowing into this op
  UMap bufs;
  umap_init(&bufs, ga());
  uop_walk(root, gate_input, &bufs);
  // NOTE: this -1 is for the output buffer
  if (bufs.live < max_bufs - 1) return NULL;
  UOp *ns[8];
  if (root->nsrc > 8) return NULL;
  for (int i = 0; i < root->nsrc; i++) {
    UOp *s = root->src[i];
    ns[i] = umap_has(&bufs, u_base(s)) ? s : mk_contiguous(uop_with_tag(s, v_int(1)));
  }
  if (sched_why) sched_why->nlimit_bufs++;
  return replace_src(root, root->nsrc, ns);
}
static UOp *rw_merge_contig(const Match *m, void *ctx) { return m_get(m, "x")->src[0]; }
static UOp *rw_simplify_view(const Match *m, void *ctx) {
  UOp *x = m_opt(m, "x"), *v = m_get(m, "v");
  if (!x) return NULL;
  const ShapeTracker *ns = st_simplify(v->arg->st);
  return ns != v->arg->st ? u_view(x, ns) : NULL;
}
static UOp *view_add_srcs(const Match *m, void *ctx) {
  UOp *x = m_get(m, "x");
  UOp *vars[64];
  int n = st_vars(x->arg->st, vars, 64);
  if (!n || x->nsrc != 1) return NULL;
  UOp *src[65];
  src[0] = x->src[0];
  for (int i = 0; i < n; i++) src[i + 1] = vars[i];
  return replace_src(x, n + 1, src);
}
static const Rule finalize_contiguous[] = {
  // if an op takes more than one input, check combined LOADs don't exceed device limits
  { UP(.groups = G_BINARY | G_TERNARY, .name = "root"), limit_bufs },
  // merge contiguous
  { UP(.ops = OPS(OP_CONTIGUOUS), .name = "x", SRC(UP(.ops = OPS(OP_CONTIGUOUS)))), rw_merge_contig },
  // simplify views
  { UP(.ops = OPS(OP_VIEW), .name = "v", SRC_REPEAT(UVAR("x"))), rw_simplify_view },
  // vars to views srcs
  { UP(.ops = OPS(OP_VIEW), .name = "x"), view_add_srcs },
};
static UOp *rw_remove_tag(const Match *m, void *ctx) {
  UOp *x = m_get(m, "x");
  return v_is_none(x->tag) ? NULL : uop_with_tag(x, v_none());
}
static const Rule remove_tags[] = {
  // drop every tag
  { UP(.all_ops = true, .name = "x"), rw_remove_tag },
};

/* ---- the matchers, built once ---- */
static PM *pm_merge_views_pass, *pm_add_contiguous, *pm_finalize, *pm_create_kernels, *pm_create_ast;
static void kernelize_init(void) {
  if (pm_merge_views_pass) return;
  pm_init();
  symbolic_init();
  shape_init();
  multi_init();
  swizzler_init();
  spec_init();
  pm_pm_fuse = pm_new(pm_fuse, RULES_N(pm_fuse));
  PM *ks[2] = {pm_symbolic_simple, pm_new(kernelize_sym, RULES_N(kernelize_sym))};
  PM *pm_kernelize_sym = pm_concat(2, ks);
  PM *mv[5] = {pm_multi, pm_new(do_fuse, RULES_N(do_fuse)), pm_merge_views, pm_kernelize_sym,
               pm_new(replace_contiguous, RULES_N(replace_contiguous))};
  pm_merge_views_pass = pm_concat(5, mv);
  pm_add_contiguous = pm_new(add_contiguous, RULES_N(add_contiguous));
  PM *fc[2] = {pm_new(finalize_contiguous, RULES_N(finalize_contiguous)), pm_new(remove_tags, RULES_N(remove_tags))};
  pm_finalize = pm_concat(2, fc);
  pm_create_kernels = pm_new(create_kernels, RULES_N(create_kernels));
  PM *rb[2] = {pm_merge_views, pm_new(replace_buffers, RULES_N(replace_buffers))};
  pm_replace_buffers_mv = pm_concat(2, rb);
  PM *ca[2] = {pm_new(create_ast, RULES_N(create_ast)), pm_new(replace_metadata, RULES_N(replace_metadata))};
  pm_create_ast = pm_concat(2, ca);
}

/* ---- verification ---- */
/* type_verify(uops, tensor_uop_spec): fails with TG_EINPUT on the first UOp the spec rejects */
void type_verify_tensor(UList uops) {
  for (int i = 0; i < uops.n; i++) {
    UOp *u = uops.v[i];
    if (spec_check_tensor(u)) continue;
    tg_fail(TG_EINPUT, "UOp verification failed at %d on %s %s %d srcs, arg %s", i, op_names[u->op],
            dt_repr(ga(), u->dtype), u->nsrc, value_repr(ga(), u->arg));
  }
}

/* ---- get_kernelize_map ---- */
const char *const sched_stage_names[] = {"merge_views", "add_contiguous", "finalize_contiguous", "create_kernels",
                                         "fix_assign", "create_ast", NULL};

static bool stage_is(const char *stop, const char *name) { return stop && strcmp(stop, name) == 0; }

/* fix_assign: if a kernel depends on a buffer, and that buffer is later assigned to, make the
 * assign depend on the kernel's assign. Fills assign_rep; fails on a cycle. */
/* x.op is Ops.ASSIGN and x.buf_uop is buf (such an x is newer than buf) */
static bool is_assign_to(const UOp *u, const void *buf) { return u->op == OP_ASSIGN && u_buf_uop((UOp *)u) == buf; }
static void fix_assign(UList topo, UMap *assign_rep) {
  ArenaMark mk = arena_mark(&uctx->scratch);
  UMap kernel_assign;
  umap_init(&kernel_assign, &uctx->scratch);
  for (int i = 0; i < topo.n; i++) {
    UOp *u = topo.v[i];
    if (u->op != OP_ASSIGN) continue;
    UOp *ub = u_buf_uop(u);
    umap_put(&kernel_assign, ub, u);
    UOp *k = u->src[1];
    for (int j = 0; j < k->nsrc; j++) {
      UOp *s = k->src[j], *a;
      // TODO: this is probably broken for MSELECT/MSTACK
      if (s->op != OP_BUFFER || s == ub || !(a = umap_get(&kernel_assign, s))) continue;
      if (uop_any_newer(u, s->id, is_assign_to, s)) tg_fail(TG_EINPUT, "cycle detected in graph, kernel for %s must either depend on ASSIGN or BUFFER", uop_repr(ga(), ub));
      UOp **src = arena_alloc_raw(&uctx->scratch, sizeof(UOp *) * (size_t)(a->nsrc + 1));
      memcpy(src, a->src, sizeof(UOp *) * (size_t)a->nsrc);
      src[a->nsrc] = u;
      UOp *na = replace_src(a, a->nsrc + 1, src);
      umap_put(assign_rep, a, na);
      umap_put(&kernel_assign, s, na);
    }
  }
  arena_pop(&uctx->scratch, mk);
}

/* The pass maps chain (each holds every key of the one before), so only the newest is kept:
 * they alternate between two private arenas and the result is copied into the graph arena as an
 * ordered UMap. `tgc explain` (sched_why) keeps the merge_views map, as a UMap in ga(). */
typedef struct MapPP { Arena a[2]; int cur; } MapPP;
static Arena *pp_next(MapPP *pp) {
  pp->cur ^= 1;
  arena_pop(&pp->a[pp->cur], (ArenaMark){NULL, 0}); /* it held the map before the current one; its first chunk stays */
  return &pp->a[pp->cur];
}
/* the map before the current one, dropped when the next map goes elsewhere (create_ast's, to ga()) */
static void pp_drop_older(MapPP *pp) { arena_pop(&pp->a[pp->cur ^ 1], (ArenaMark){NULL, 0}); }

/* kernelize_run's passes; stops after the pass named stop (NULL: all), returning the map. The
 * last pass (create_ast) writes its map to the graph arena (*in_ga), where it is the result. */
static RMap kernelize_passes(MapPP *pp, UOp *sink, const char *stop, bool *in_ga) {
  *in_ga = false;
  // multi + merge_views + simplify
  UMap replace_ctx;
  umap_init(&replace_ctx, ga());
  RMap tm = graph_rewrite_rmap(pp_next(pp), sink, pm_merge_views_pass, &replace_ctx, false, NULL, NULL);
  if (sched_why) sched_why->mv = rmap_to_umap(&tm, ga());
  if (stage_is(stop, "merge_views")) return tm;

  // insert contiguous in places determined by the realize map (both walk the same graph: one toposort)
  ArenaMark mk = arena_mark(&uctx->scratch);
  UList topo = uop_toposort_in(&uctx->scratch, rmap_get(&tm, sink), NULL, NULL);
  UMap realize_map = group_realizes(rmap_get(&tm, sink), topo);
  tm = graph_rewrite_rmap_topo(pp_next(pp), topo, pm_add_contiguous, &realize_map, true, NULL, &tm);
  arena_pop(&uctx->scratch, mk);
  if (stage_is(stop, "add_contiguous")) return tm;
  tm = graph_rewrite_rmap(pp_next(pp), rmap_get(&tm, sink), pm_finalize, NULL, false, NULL, &tm);
  if (stage_is(stop, "finalize_contiguous")) return tm;

  // group into kernels (this is context-free)
  tm = graph_rewrite_rmap(pp_next(pp), rmap_get(&tm, sink), pm_create_kernels, NULL, false, NULL, &tm);
  if (stage_is(stop, "create_kernels")) return tm;

  // if a kernel depends on a buffer, and that buffer is later assigned to, make the assign depend on the kernel's assign
  // (fix_assign and create_ast walk the toposort taken here; only when fix_assign changes the graph is
  // another taken, of the new one)
  UMap assign_rep;
  umap_init(&assign_rep, ga());
  mk = arena_mark(&uctx->scratch);
  topo = uop_toposort_in(&uctx->scratch, rmap_get(&tm, sink), NULL, NULL);
  fix_assign(topo, &assign_rep);
  if (assign_rep.live) {
    tm = graph_rewrite_rmap(pp_next(pp), rmap_get(&tm, sink), pm_substitute, &assign_rep, true, NULL, &tm);
    topo = uop_toposort_in(&uctx->scratch, rmap_get(&tm, sink), NULL, NULL); /* the graph create_ast walks */
  }
  if (stage_is(stop, "fix_assign")) { arena_pop(&uctx->scratch, mk); return tm; }

  // finally, create the AST for kernels
  pp_drop_older(pp);
  tm = graph_rewrite_rmap_topo(ga(), topo, pm_create_ast, NULL, true, NULL, &tm);
  arena_pop(&uctx->scratch, mk);
  *in_ga = true;

  // verify Kernels match the spec
  mk = arena_mark(&uctx->scratch);
  type_verify_tensor(uop_toposort_in(&uctx->scratch, rmap_get(&tm, sink), NULL, NULL));
  arena_pop(&uctx->scratch, mk);
  return tm;
}
/* m's entries in the graph arena (for a map that stopped in a pass arena) */
static RMap rmap_copy(const RMap *m) {
  RMap r = {arena_dup(ga(), m->val, sizeof(uint32_t) * (size_t)m->cap), m->cap, m->n, arena_dup(ga(), m->kid, sizeof(uint32_t) * (size_t)m->n)};
  return r;
}
/* the whole pipeline; stops after the pass named stop (NULL: all), returning the map (in ga()) */
static RMap kernelize_run(UOp *sink, const char *stop) {
  kernelize_init();
  MapPP pp = {0};
  arena_share(&pp.a[0], &uctx->mem);
  arena_share(&pp.a[1], &uctx->mem);
  TgTry t;
  if (!TG_TRY(t)) { /* free the pass maps, then pass the error on */
    arena_free(&pp.a[0]);
    arena_free(&pp.a[1]);
    tg_rethrow();
  }
  bool in_ga;
  RMap tm = kernelize_passes(&pp, sink, stop, &in_ga);
  tg_try_end(&t);
  RMap r = in_ga ? tm : rmap_copy(&tm);
  arena_free(&pp.a[0]);
  arena_free(&pp.a[1]);
  return r;
}

/* get_kernelize_map: every node of sink's graph -> its KERNEL-graph replacement */
RMap get_kernelize_map(UOp *sink) { return kernelize_run(sink, NULL); }

/* sched_run_until: kernelize_map[sink] after the named pass (TG_EUSAGE for an unknown name) */
UOp *sched_run_until(UOp *sink, const char *stage) {
  bool known = false;
  for (int i = 0; sched_stage_names[i]; i++) if (strcmp(sched_stage_names[i], stage) == 0) known = true;
  if (!known) tg_fail(TG_EUSAGE, "unknown stage '%s'", stage);
  RMap tm = kernelize_run(sink, stage);
  return rmap_get(&tm, sink);
}
