/* shapetracker.c: tinygrad 0.11.0 shape/shapetracker.py.
 *
 * A ShapeTracker is a tuple of Views, applied last to first. Movement ops change only the last
 * view, except a reshape that the last view can't absorb, which pushes a new contiguous view
 * (MERGE_VIEW=1). views_to_indexed_uops turns the views into (index, valid) UOps over RANGEs:
 * each earlier view is minified and indexed by the unravelled index of the later one, then the
 * result is simplified with symbolic_flat, simplify_valid/uop_given_valid and symbolic_flat +
 * pm_upcast, exactly in tinygrad's order. That result is cached on the interned ShapeTracker
 * (tinygrad caches it with functools.cache). */
#include "sops.h"

static const ShapeTracker *st1(const View *v) { return st_intern(1, &v); }
/* the first keep views of st followed by v, interned (keep = nviews - 1 replaces the last view,
 * keep = nviews pushes one): the probe lives on the stack or in scratch, st_intern copies it when new */
static const ShapeTracker *st_edit(const ShapeTracker *st, int keep, const View *v) {
  const View *small[16];
  ArenaMark mk = arena_mark(&uctx->scratch);
  const View **vs = keep + 1 <= 16 ? small : arena_alloc_raw(&uctx->scratch, sizeof(View *) * (size_t)(keep + 1));
  for (int i = 0; i < keep; i++) vs[i] = st->views[i];
  vs[keep] = v;
  const ShapeTracker *r = st_intern(keep + 1, vs);
  arena_pop(&uctx->scratch, mk);
  return r;
}
static const ShapeTracker *st_with_last(const ShapeTracker *st, const View *v) { return st_edit(st, st->nviews - 1, v); }
static const ShapeTracker *st_push(const ShapeTracker *st, const View *v) { return st_edit(st, st->nviews, v); }
static const View *last(const ShapeTracker *st) { return st->views[st->nviews - 1]; }

/* ShapeTracker.from_shape(shape, strides), memoised per context (View.create is functools.cache'd in
 * tinygrad): the entry is found by the hash of the numbers (the key pair is that hash and the
 * rank) and confirmed against its stored copy of them */
typedef struct FromShape { int n; const Sint *shape, *strides; const ShapeTracker *st; } FromShape;
const ShapeTracker *st_from_shape(SList shape, const SList *strides) {
  if (strides && !strides->n) strides = NULL;  /* View.create: `if strides` */
  if (strides && strides->n != shape.n) return st1(view_create(shape, strides, si(0), NULL)); /* its error */
  uint64_t h = hash_mix(0xf5a9e, (uint64_t)shape.n * 2 + (strides != NULL));
  for (int i = 0; i < shape.n; i++) h = hash_mix(h, si_hash(shape.v[i]));
  if (strides) for (int i = 0; i < shape.n; i++) h = hash_mix(h, si_hash(strides->v[i]));
  const void *ka = (const void *)(uintptr_t)(h | 1), *kb = (const void *)(uintptr_t)(shape.n + 1), *m;
  if (pmemo_get(PMEMO_FROM_SHAPE, ka, (uint32_t)h, kb, (uint32_t)(h >> 32), &m)) {
    const FromShape *f = m;
    if (f->n == shape.n && (f->strides != NULL) == (strides != NULL) && sl_eq(sl(shape.n, f->shape), shape) &&
        (!strides || sl_eq(sl(shape.n, f->strides), *strides)))
      return f->st;
  }
  const ShapeTracker *st = st1(view_create(shape, strides, si(0), NULL));
  FromShape *f = arena_alloc(ga(), sizeof *f);
  *f = (FromShape){shape.n, arena_dup(ga(), shape.v, sizeof(Sint) * (size_t)shape.n),
                   strides ? arena_dup(ga(), strides->v, sizeof(Sint) * (size_t)shape.n) : NULL, st};
  pmemo_put(PMEMO_FROM_SHAPE, ka, (uint32_t)h, kb, (uint32_t)(h >> 32), f);
  return st;
}
Sint st_size(const ShapeTracker *st) { return view_size(last(st)); }
bool st_contiguous(const ShapeTracker *st) { return st->nviews == 1 && st->views[0]->contiguous; }

const ShapeTracker *st_simplify(const ShapeTracker *st) {
  const View *nv;
  while (st->nviews >= 2 && (nv = view_add(st->views[st->nviews - 2], st->views[st->nviews - 1]))) st = st_edit(st, st->nviews - 2, nv);
  return st;
}
/* ShapeTracker.__add__, memoised per context like View.__add__ (its inputs are interned) */
const ShapeTracker *st_concat(const ShapeTracker *a, const ShapeTracker *b) {
  /* unwrap(x.st) in tinygrad: only a malformed graph (e.g. a CONST whose source is not a VIEW) gets here */
  if (!a || !b) tg_fail(TG_EINPUT, "a UOp without a ShapeTracker where the scheduler needs one (a CONST or DEFINE_VAR without a VIEW source?)");
  const void *m;
  if (pmemo_get(PMEMO_ST_CONCAT, a, a->id, b, b->id, &m)) return m;
  const ShapeTracker *ret = a;  // one view at a time = better simplification
  for (int i = 0; i < b->nviews; i++) ret = st_simplify(st_push(ret, b->views[i]));
  pmemo_put(PMEMO_ST_CONCAT, a, a->id, b, b->id, ret);
  return ret;
}
const ShapeTracker *st_invert(const ShapeTracker *st, SList out_shape) {
  const View **inv = arena_alloc(ga(), sizeof(View *) * (size_t)st->nviews);
  for (int k = 0; k < st->nviews; k++) {
    const View *v = st->views[st->nviews - 1 - k];
    SList s = k + 1 < st->nviews ? sl(st->views[st->nviews - 2 - k]->ndim, st->views[st->nviews - 2 - k]->shape) : out_shape;
    if (!(inv[k] = view_invert(v, s))) return NULL;
  }
  return st_reshape(st_intern(st->nviews, inv), out_shape);
}

/* ---- movement ops ---- */
const ShapeTracker *st_reshape(const ShapeTracker *st, SList new_shape) {
  const View *nv = view_reshape(last(st), new_shape);  // MERGE_VIEW=1
  if (nv) return st_with_last(st, nv);
  return st_push(st, view_create(new_shape, NULL, si(0), NULL));
}
const ShapeTracker *st_permute(const ShapeTracker *st, const int *axis) { return st_with_last(st, view_permute(last(st), axis)); }
const ShapeTracker *st_expand(const ShapeTracker *st, SList s) { return st_with_last(st, view_expand(last(st), s)); }
const ShapeTracker *st_pad(const ShapeTracker *st, const Sint *arg) { return st_with_last(st, view_pad(last(st), arg)); }
const ShapeTracker *st_shrink(const ShapeTracker *st, const Sint *arg) { return st_with_last(st, view_shrink(last(st), arg)); }
const ShapeTracker *st_flip(const ShapeTracker *st, const bool *flip) { return st_with_last(st, view_flip(last(st), flip)); }

static bool v_truthy(const Value *v) {
  switch (v->kind) {
  case V_BOOL: return v->b;
  case V_INT: return v->i != 0;
  case V_NONE: return false;
  default: tg_fail(TG_EINPUT, "flip arg must be a tuple of bools");
  }
}
/* a (begin, end) pair list arg, flattened; checks the arity */
static const Sint *pairs_of_value(const Value *arg, int ndim, const char *what) {
  if (!arg || arg->kind != V_TUPLE || arg->n != ndim) tg_fail(TG_EINPUT, "%s arg must have %d (begin, end) pairs", what, ndim);
  Sint *out = s_tmp(2 * ndim);
  for (int i = 0; i < ndim; i++) {
    const Value *p = arg->items[i];
    if (p->kind != V_TUPLE || p->n != 2) tg_fail(TG_EINPUT, "%s arg must have %d (begin, end) pairs", what, ndim);
    out[2 * i] = sint_of_value(p->items[0]);
    out[2 * i + 1] = sint_of_value(p->items[1]);
  }
  return out;
}
/* tinygrad's View movement methods are functools.cache'd: so is this, on (st, arg), a memo per op */
static const ShapeTracker *st_mop_uncached(const ShapeTracker *st, Op op, const Value *arg);
const ShapeTracker *st_mop(const ShapeTracker *st, Op op, const Value *arg) {
  static const Op mops[] = {OP_RESHAPE, OP_EXPAND, OP_PERMUTE, OP_PAD, OP_SHRINK, OP_FLIP};
  int slot = -1;
  for (int i = 0; i < 6; i++) if (mops[i] == op) slot = PMEMO_ST_MOP + i;
  if (slot < 0) return st_mop_uncached(st, op, arg);
  const void *r;
  if (pmemo_get(slot, st, st->id, arg, arg->id, &r)) return r;
  const ShapeTracker *ret = st_mop_uncached(st, op, arg);
  pmemo_put(slot, st, st->id, arg, arg->id, ret);
  return ret;
}
static const ShapeTracker *st_mop_uncached(const ShapeTracker *st, Op op, const Value *arg) {
  int nd = last(st)->ndim;
  switch (op) {
  case OP_RESHAPE: return st_reshape(st, sl_of_value(arg));
  case OP_EXPAND: return st_expand(st, sl_of_value(arg));
  case OP_PERMUTE: {
    if (!arg || arg->kind != V_TUPLE || arg->n != nd) tg_fail(TG_EINPUT, "invalid permutation of len %d", nd);
    int *ax = arena_alloc(ga(), sizeof(int) * (size_t)(nd + 1));
    for (int i = 0; i < nd; i++) {
      if (arg->items[i]->kind != V_INT) tg_fail(TG_EINPUT, "permute arg must be ints");
      ax[i] = (int)arg->items[i]->i;
    }
    return st_permute(st, ax);
  }
  case OP_PAD: return st_pad(st, pairs_of_value(arg, nd, "pad"));
  case OP_SHRINK: return st_shrink(st, pairs_of_value(arg, nd, "shrink"));
  case OP_FLIP: {
    if (!arg || arg->kind != V_TUPLE || arg->n != nd) tg_fail(TG_EINPUT, "flip arg must have %d entries", nd);
    bool *f = arena_alloc(ga(), (size_t)nd + 1);
    for (int i = 0; i < nd; i++) f[i] = v_truthy(arg->items[i]);
    return st_flip(st, f);
  }
  default: tg_fail(TG_EINTERNAL, "st_mop: %s is not a movement op", op_names[op]);
  }
}

/* ---- indexing ---- */
/* handle_upcast: an int ALU that overflows int32 becomes int64; one with int64 inputs that fits goes back to int */
static UOp *handle_upcast(const Match *m, void *ctx) {
  UOp *u = m_get(m, "u");
  const DType *dt = u->dtype->count > 1 ? dt_vec(dt_long, u->dtype->count) : dt_long;
  bool overflow = u_vmax_i(u) > 2147483647LL || u_vmin_i(u) < -2147483648LL;
  bool any64 = false;
  for (int i = 0; i < u->nsrc; i++) any64 |= u->src[i]->dtype == dt_long;
  if (!overflow && !any64) return NULL;
  UOp **src = arena_alloc(ga(), sizeof(UOp *) * (size_t)(u->nsrc + 1));
  for (int i = 0; i < u->nsrc; i++) src[i] = u_cast(u->src[i], dt);
  UOp *r = uop_replace(u, dt, u->nsrc, src, NULL, NULL);
  return overflow ? r : u_cast(r, u->dtype);
}
static const Rule pm_upcast_rules[] = {
  // int ALU: upcast to int64 on overflow, cast back when an int64 input doesn't overflow
  { UP(.groups = G_ALU, .dts = DTS(SC_INT), .name = "u"), handle_upcast },
};
static PM *pm_upcast, *pm_flat_upcast;
static void shape_pm_init(void) {
  if (pm_flat_upcast) return;
  symbolic_init();
  pm_upcast = pm_new(pm_upcast_rules, RULES_N(pm_upcast_rules));
  PM *both[2] = {pm_symbolic_flat, pm_upcast};
  pm_flat_upcast = pm_concat(2, both);
}

static void views_to_indexed_uops(int nviews, const View *const *views, UOp *const *idxs, bool upcast, UOp **idx_out, UOp **valid_out) {
  shape_pm_init();
  UOp *idx, *valid;
  view_to_indexed_uops(views[nviews - 1], idxs, NULL, &idx, &valid);
  for (int k = nviews - 2; k >= 0; k--) {
    const View *v = view_minify(views[k]);
    Sint *un = s_tmp(v->ndim);
    shape_unravel(sl(v->ndim, v->shape), S_u(idx), un);
    UOp **ix = arena_alloc(ga(), sizeof(UOp *) * (size_t)(v->ndim + 1));
    for (int i = 0; i < v->ndim; i++) ix[i] = si_uop(un[i]);
    view_to_indexed_uops(v, ix, valid, &idx, &valid);
  }
  UOp *pair[2] = {idx, valid};
  UOp *s = graph_rewrite(uop_sink(2, pair, NULL), pm_symbolic_flat, NULL, false, NULL);  // symbolic
  idx = s->src[0]; valid = s->src[1];
  UOp *nv = simplify_valid(valid);  // simplify
  if (nv) valid = nv;
  UOp *ni = uop_given_valid(valid, idx);
  if (ni) idx = ni;
  pair[0] = idx; pair[1] = valid;
  s = graph_rewrite(uop_sink(2, pair, NULL), upcast ? pm_flat_upcast : pm_symbolic_flat, NULL, false, NULL);  // symbolic again, upcast if needed
  *idx_out = s->src[0];
  *valid_out = s->src[1];
}

void st_to_indexed_uops(const ShapeTracker *st, UOp *const *idxs, UOp **idx, UOp **valid) {
  if (idxs) { views_to_indexed_uops(st->nviews, st->views, idxs, true, idx, valid); return; }
  if (!st->ix_idx) {
    UOp *i, *v;
    views_to_indexed_uops(st->nviews, st->views, NULL, true, &i, &v);
    ShapeTracker *w = (ShapeTracker *)st;  // the cache is not part of the interned identity
    w->ix_idx = i; w->ix_valid = v;
  }
  *idx = st->ix_idx;
  *valid = st->ix_valid;
}

void st_to_indexed_uops_int(const ShapeTracker *st, UOp *const *idxs, UOp **idx, UOp **valid) {
  views_to_indexed_uops(st->nviews, st->views, idxs, false, idx, valid);
}
UOp *st_index_upcast(UOp *idx) {
  shape_pm_init();
  return graph_rewrite(idx, pm_flat_upcast, NULL, false, NULL);
}

int64_t st_real_size(const ShapeTracker *st) {
  const View *l = last(st);
  for (int i = 0; i < l->ndim; i++) if (S_EQI(l->shape[i], 0)) return 0;
  const View *v = st->views[0];
  if (v->mask) v = view_shrink(v, v->mask);
  /* the index of one unmasked view is offset + sum(range_i * stride_i) over independent ranges
   * [0, shape_i - 1] (a RANGE of 0 has vmax -1), so its vmax, which tinygrad takes by interval
   * arithmetic on that sum (exact for independent terms), is the sum of each term's larger end */
  if (!v->symbolic) {
    __int128 mx = v->offset.c;
    for (int i = 0; i < v->ndim; i++) {
      __int128 s = v->shape[i].c, d = v->strides[i].c;
      if (s != 1 && d != 0) mx += (s - 1) * d > 0 ? (s - 1) * d : 0;
    }
    if (mx < 1000000000000LL && mx > -1000000000000LL) return (int64_t)mx + 1;
  }
  UOp *idx, *valid;
  st_to_indexed_uops(st1(v), NULL, &idx, &valid);
  int64_t mx = u_vmax_i(idx);
  if (mx >= 1000000000000LL) tg_fail(TG_EINTERNAL, "real_size broken for a ShapeTracker (vmax %lld)", (long long)mx);
  return mx + 1;
}

void st_real_strides(const ShapeTracker *st, bool ignore_valid, Sint *out, bool *has) {
  const View *l = last(st);
  int n = l->ndim;
  if (st->nviews == 1 && !l->mask) {
    for (int i = 0; i < n; i++) { out[i] = l->strides[i]; has[i] = true; }
    return;
  }
  for (int i = 0; i < n; i++) { out[i] = si(0); has[i] = false; }
  UOp *idx, *valid;
  st_to_indexed_uops(st, NULL, &idx, &valid);
  UList t = uop_toposort(idx, NULL, NULL);
  UOp **terms = arena_alloc(ga(), sizeof(UOp *) * (size_t)(t.n + 1));
  int nt = split_uop(idx, OP_ADD, terms, t.n + 1);
#define SET(ax, val) do { int64_t a_ = (ax); if (a_ >= 0 && a_ < n) { out[a_] = (val); has[a_] = true; } } while (0)
  for (int k = 0; k < nt; k++) {
    UOp *c = terms[k];
    if (c->op == OP_RANGE) SET(c->arg->i, si(1));
    if (c->op == OP_MUL && c->src[0]->op == OP_RANGE && c->src[1]->op == OP_CONST) SET(c->src[0]->arg->i, si(c->src[1]->arg->i));
    if (c->op == OP_MUL && c->src[1]->op == OP_RANGE && c->src[0]->op == OP_CONST) SET(c->src[1]->arg->i, si(c->src[0]->arg->i));
  }
#undef SET
  bool *used = arena_alloc(ga(), (size_t)n + 1);
  for (int k = 0; k < t.n; k++)
    if (t.v[k]->op == OP_RANGE && t.v[k]->arg->kind == V_INT && t.v[k]->arg->i >= 0 && t.v[k]->arg->i < n) used[t.v[k]->arg->i] = true;
  for (int i = 0; i < n; i++) if (!used[i]) { out[i] = si(0); has[i] = true; }
  if (!ignore_valid) {
    UList tv = uop_toposort(valid, NULL, NULL);
    for (int k = 0; k < tv.n; k++) {
      UOp *x = tv.v[k];
      if (x->op == OP_RANGE && x->arg->kind == V_INT && x->arg->i >= 0 && x->arg->i < n) has[x->arg->i] = false;
    }
  }
}

int st_unit_stride_axes(const ShapeTracker *st, bool ignore_valid, int *out) {
  int n = last(st)->ndim, k = 0;
  Sint *rs = s_tmp(n);
  bool *has = arena_alloc(ga(), (size_t)n + 1);
  st_real_strides(st, ignore_valid, rs, has);
  for (int i = 0; i < n; i++) if (has[i] && S_EQI(rs[i], 1)) out[k++] = i;
  return k;
}

bool st_axis_is_masked(const ShapeTracker *st, int axis) {
  shape_pm_init();
  UOp *idx, *valid;
  st_to_indexed_uops(st, NULL, &idx, &valid);
  UList t = uop_toposort(graph_rewrite(valid, pm_symbolic_flat, NULL, false, NULL), NULL, NULL);
  for (int k = 0; k < t.n; k++)
    if (t.v[k]->op == OP_RANGE && t.v[k]->arg->kind == V_INT && t.v[k]->arg->i == axis) return true;
  return false;
}

bool st_has_mask(const ShapeTracker *st) {
  for (int i = 0; i < st->nviews; i++) if (st->views[i]->mask) return true;
  return false;
}

/* ---- variables ---- */
static int view_vars(const View *v, UOp **out, int n, int cap) {
  if (!v->symbolic) return n;
  for (int i = 0; i < v->ndim; i++) if (v->shape[i].u) n = shape_uop_vars(v->shape[i].u, out, n, cap);
  for (int i = 0; i < v->ndim; i++) if (v->strides[i].u) n = shape_uop_vars(v->strides[i].u, out, n, cap);
  if (v->offset.u) n = shape_uop_vars(v->offset.u, out, n, cap);
  if (v->mask) for (int i = 0; i < 2 * v->ndim; i++) if (v->mask[i].u) n = shape_uop_vars(v->mask[i].u, out, n, cap);
  return n;
}
int st_vars(const ShapeTracker *st, UOp **out, int cap) {
  int n = 0;
  for (int i = 0; i < st->nviews; i++) n = view_vars(st->views[i], out, n, cap);
  return n;
}

static Sint sub_sint(Sint x, const UMap *dvars) { return x.u ? S_u(uop_substitute(x.u, dvars)) : x; }
static const View *view_substitute(const View *v, const UMap *dvars) {
  int n = v->ndim;
  Sint *sh = s_tmp(n), *st = s_tmp(n), *mask = v->mask ? s_tmp(2 * n) : NULL;
  for (int i = 0; i < n; i++) { sh[i] = sub_sint(v->shape[i], dvars); st[i] = sub_sint(v->strides[i], dvars); }
  if (mask) for (int i = 0; i < 2 * n; i++) mask[i] = sub_sint(v->mask[i], dvars);
  SList sts = sl(n, st);
  return view_create(sl(n, sh), &sts, sub_sint(v->offset, dvars), mask);
}
const ShapeTracker *st_substitute(const ShapeTracker *st, const UMap *dvars) {
  const View **vs = arena_alloc(ga(), sizeof(View *) * (size_t)st->nviews);
  for (int i = 0; i < st->nviews; i++) vs[i] = view_substitute(st->views[i], dvars);
  return st_intern(st->nviews, vs);
}
const ShapeTracker *st_unbind(const ShapeTracker *st) {
  const View **vs = arena_alloc(ga(), sizeof(View *) * (size_t)st->nviews);
  bool any = false;
  for (int i = 0; i < st->nviews; i++) {
    UOp *vars[64];
    int nv = view_vars(st->views[i], vars, 0, 64);
    UMap m;
    umap_init(&m, ga());
    for (int k = 0; k < nv; k++)
      if (vars[k]->op == OP_BIND) { umap_put(&m, vars[k], vars[k]->src[0]); any = true; }
    vs[i] = view_substitute(st->views[i], &m);
  }
  return any ? st_intern(st->nviews, vs) : st;
}
