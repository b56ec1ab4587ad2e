/* view.c: tinygrad 0.11.0 shape/view.py, function for function.
 *
 * A View is (shape, strides, offset, mask, contiguous) over sints. Every constructor goes through
 * view_create, which canonicalises exactly as View.create does (size-1 strides to 0, the zero
 * shape, the no-op mask, single-index mask dims folded into the offset, the all-empty mask), so
 * two Views that tinygrad considers equal are the same interned pointer here. Arithmetic follows
 * Python: ints use floor // and %, sints with a UOp build tinygrad's symbolic nodes (sops.h).
 * Where tinygrad evaluates a UOp comparison with bool() an undetermined value is an error, where
 * it uses resolve() the default applies; each line below keeps the kind tinygrad uses. Results
 * that escape (Views, SLists) live in the graph arena. */
#include "sops.h"
#include <stdio.h>
#include <string.h>

/* ---- sint tuples ---- */
SList sl_ints(int n, const int64_t *xs) {
  Sint *v = s_tmp(n);
  for (int i = 0; i < n; i++) v[i] = si(xs[i]);
  return sl(n, v);
}
bool sl_eq(SList a, SList b) {
  if (a.n != b.n) return false;
  for (int i = 0; i < a.n; i++) if (!S_EQ(a.v[i], b.v[i])) return false;
  return true;
}
Sint sl_prod(SList a) {
  Sint r = si(1);
  for (int i = 0; i < a.n; i++) r = S_mul(r, a.v[i]);
  return r;
}
bool sl_all_int(SList a) {
  for (int i = 0; i < a.n; i++) if (a.v[i].u) return false;
  return true;
}
static bool sl_has_zero(SList a) {
  for (int i = 0; i < a.n; i++) if (S_EQI(a.v[i], 0)) return true;
  return false;
}

SList canonicalize_strides(SList shape, SList strides) {
  Sint *v = s_tmp(shape.n);
  for (int i = 0; i < shape.n; i++) v[i] = S_EQI(shape.v[i], 1) ? si(0) : strides.v[i];
  return sl(shape.n, v);
}
SList strides_for_shape(SList shape) {
  if (shape.n == 0) return sl(0, NULL);
  Sint *v = s_tmp(shape.n);
  v[shape.n - 1] = si(1);
  for (int i = shape.n - 2; i >= 0; i--) v[i] = S_mul(v[i + 1], shape.v[i + 1]);
  return canonicalize_strides(shape, sl(shape.n, v));
}

/* merge_dims: (merged size, stride, merged size without the zero-stride part) per merged block */
typedef struct { Sint size, stride, real; } MDim;
static int merge_dims(SList shape, SList strides, const Sint *mask, MDim *ret) {
  if (shape.n == 0) return 0;
  int n = 0;
  ret[n++] = (MDim){shape.v[0], strides.v[0], S_bool(SC_NE, strides.v[0], si(0)) ? shape.v[0] : si(0)};
  bool merging = mask ? S_EQI(S_sub(mask[1], mask[0]), 1) : S_EQI(shape.v[0], 1);
  for (int i = 1; i < shape.n; i++) {
    Sint s = shape.v[i], st = strides.v[i];
    if (S_EQI(s, 1)) continue;  // always merge 1
    MDim last = ret[n - 1];
    if (merging || S_EQ(last.stride, S_mul(s, st)))
      ret[n - 1] = (MDim){S_mul(last.size, s), st, merging ? s : S_mul(last.real, s)};
    else ret[n++] = (MDim){s, st, s};
    merging = mask ? S_EQI(S_sub(mask[2 * i + 1], mask[2 * i]), 1) : S_EQI(s, 1);
  }
  return n;
}

/* _reshape_mask: the mask of the reshaped view, false when the reshape cuts across the mask */
static bool reshape_mask(const Sint *mask, SList old_shape, SList new_shape, Sint *out) {
  if (!mask) {
    for (int i = 0; i < new_shape.n; i++) { out[2 * i] = si(0); out[2 * i + 1] = new_shape.v[i]; }
    return true;
  }
  for (int i = 0; i < 2 * old_shape.n; i++) if (mask[i].u) return false;
  int im = old_shape.n - 1, is = old_shape.n - 1, ins = new_shape.n - 1, nout = 0;
#define NEXT_SHAPE() (is >= 0 ? old_shape.v[is--] : si(1))
#define NEXT_NEW() (ins >= 0 ? new_shape.v[ins--] : si(1))
#define NEXT_MASK(l, r) do { if (im >= 0) { l = mask[2 * im]; r = mask[2 * im + 1]; im--; } else { l = si(0); r = si(1); } } while (0)
  Sint curr_stride = si(1), old_dim = NEXT_SHAPE(), new_dim = NEXT_NEW(), l, r;
  NEXT_MASK(l, r);
  while (nout < new_shape.n) {
    Sint next_stride = S_ssimplify(S_mul(new_dim, curr_stride));
    Sint *o = &out[2 * (new_shape.n - 1 - nout)];
    if (S_EQ(old_dim, next_stride)) {  // simply copy the mask and get the next batch for merging
      o[0] = S_fdiv(l, curr_stride);
      o[1] = S_add(S_fdiv(S_sub(r, si(1)), curr_stride), si(1));
      nout++;
      curr_stride = si(1); old_dim = NEXT_SHAPE(); new_dim = NEXT_NEW(); NEXT_MASK(l, r);
    } else if (S_bool(SC_GT, old_dim, next_stride)) {  // split: only if the reshape doesn't cut across the mask
      if (S_bool(SC_NE, S_mod(old_dim, next_stride), si(0))) return false;
      bool uneven = S_bool(SC_NE, S_mod(l, next_stride), si(0)) || S_bool(SC_NE, S_mod(r, next_stride), si(0));
      if (uneven && S_bool(SC_NE, S_fdiv(l, next_stride), S_fdiv(S_sub(r, si(1)), next_stride))) return false;
      o[0] = S_fdiv(S_mod(l, next_stride), curr_stride);
      o[1] = S_add(S_fdiv(S_mod(S_sub(r, si(1)), next_stride), curr_stride), si(1));
      nout++;
      curr_stride = next_stride; new_dim = NEXT_NEW();
    } else {
      Sint nl, nr;
      NEXT_MASK(nl, nr);
      // combine if the mask can unfold continuously
      bool full = S_EQI(l, 0) && S_EQ(r, old_dim);
      if (!full && S_bool(SC_NE, l, r) && S_bool(SC_NE, S_sub(nr, nl), si(1))) return false;
      Sint nl2 = S_add(S_mul(nl, old_dim), l), nr2 = S_add(S_mul(S_sub(nr, si(1)), old_dim), r);
      l = nl2; r = nr2;
      old_dim = S_ssimplify(S_mul(old_dim, NEXT_SHAPE()));
    }
  }
#undef NEXT_SHAPE
#undef NEXT_NEW
#undef NEXT_MASK
  return true;
}

/* ---- View.create ---- */
const View *view_create(SList shape, const SList *strides_in, Sint offset, const Sint *mask_in) {
  int n = shape.n;
  bool sym_shape = false;
  for (int i = 0; i < n; i++) {
    if (!R_GE(shape.v[i], si(0), true)) tg_fail(TG_EINPUT, "Trying to create View with negative dimension");
    sym_shape |= shape.v[i].u != NULL;
  }
  bool default_strides = !(strides_in && strides_in->n);
  SList strides = default_strides ? strides_for_shape(shape) : canonicalize_strides(shape, *strides_in);
  if (sl_has_zero(shape)) return view_intern(n, shape.v, sl_zeros_n(n).v, si(0), NULL, true);  // canonicalize 0 in shape
  const Sint *mask = mask_in;
  if (mask) {  // canonicalize no-op mask
    bool noop = true;
    for (int i = 0; i < n && noop; i++) noop = S_EQI(mask[2 * i], 0) && S_EQ(mask[2 * i + 1], shape.v[i]);
    if (noop) mask = NULL;
  }
  if (mask && n) {
    /* a dim masked down to one index gets stride 0, its index moves into the offset */
    bool *elim = tmp_alloc((size_t)n), any = false;
    for (int i = 0; i < n; i++) any |= elim[i] = !R_LT(S_add(mask[2 * i], si(1)), mask[2 * i + 1], true);
    if (any) {
      bool empty = false;
      for (int i = 0; i < n && !empty; i++) empty = !R_LT(mask[2 * i], mask[2 * i + 1], true);
      if (empty) {  // all-empty mask: nothing is valid
        strides = sl_zeros_n(n);
        offset = si(0);
        Sint *m = s_tmp(2 * n);
        for (int i = 0; i < 2 * n; i++) m[i] = si(0);
        mask = m;
      }
      Sint sum = si(0);
      for (int i = 0; i < n; i++) sum = S_add(sum, elim[i] ? S_mul(strides.v[i], mask[2 * i]) : si(0));
      offset = S_add(offset, sum);
      Sint *ns = s_tmp(n);
      for (int i = 0; i < n; i++) ns[i] = elim[i] ? si(0) : strides.v[i];
      strides = sl(n, ns);
    }
  }
  if (mask && n == 0) mask = NULL;
  offset = S_ssimplify(offset);  // simplify as we go
  if (sym_shape) {
    Sint *sh = s_tmp(n);
    for (int i = 0; i < n; i++) sh[i] = S_ssimplify(shape.v[i]);
    shape = sl(n, sh);
  }
  /* without a mask the strides are still the ones computed above: strides_for_shape of this same
   * shape when none were given and the shape is all ints (simplifying changed nothing) */
  bool contiguous = S_EQI(offset, 0) && !mask && ((default_strides && !sym_shape) || sl_eq(strides, strides_for_shape(shape)));
  return view_intern(n, shape.v, strides.v, offset, mask, contiguous);
}

static SList vshape(const View *v) { return sl(v->ndim, v->shape); }
static SList vstrides(const View *v) { return sl(v->ndim, v->strides); }

Sint view_size(const View *v) {
  if (v->size_known) return si(v->size);
  int64_t r = 1;
  for (int i = 0; i < v->ndim; i++) r = s_imul(r, v->shape[i].u ? u_vmax_i(v->shape[i].u) : v->shape[i].c);
  View *w = (View *)v;  /* interned: the cache is not part of its identity */
  w->size = r, w->size_known = true;
  return si(r);
}

/* unravel: the position of offset on each dimension of shape */
static void unravel(SList shape, Sint offset, Sint *out) {
  /* ints and positive sizes: (offset // prod(shape[i+1:])) % shape[i] is r % shape[i], with r offset
   * floor-divided by each later size in turn (floor division by positive ints composes) */
  bool ints = !offset.u;
  for (int i = 0; i < shape.n && ints; i++) ints = !shape.v[i].u && shape.v[i].c > 0;
  if (ints) {
    int64_t r = offset.c;
    for (int i = shape.n - 1; i >= 0; i--) {
      int64_t d = shape.v[i].c, q = r / d, m = r - q * d;
      if (m < 0) m += d, q--;
      out[i] = si(m);
      r = q;
    }
    return;
  }
  Sint acc = si(1);
  for (int i = shape.n - 1; i >= 0; i--) {
    out[i] = S_mod(S_fdiv(offset, acc), shape.v[i]);
    acc = S_mul(acc, shape.v[i]);
  }
}

/* ---- movement ops ---- */
/* __unsafe_resize: arg is (begin, end) per dim; mask, when given, is intersected with the moved mask */
static const View *unsafe_resize(const View *v, const Sint *arg, const Sint *mask) {
  int n = v->ndim;
  Sint off = si(0);
  for (int i = 0; i < n; i++) off = S_add(off, S_mul(v->strides[i], arg[2 * i]));
  if (v->mask) {
    Sint *nm = s_tmp(2 * n);
    for (int i = 0; i < n; i++) {  // move the old mask
      Sint ax = arg[2 * i], ay = arg[2 * i + 1], len = S_sub(ay, ax);
      nm[2 * i] = S_smax(si(0), S_smin(S_sub(v->mask[2 * i], ax), len));
      nm[2 * i + 1] = S_smax(si(0), S_smin(S_sub(v->mask[2 * i + 1], ax), len));
    }
    if (mask) {  // merge the masks if we have two
      Sint *mm = s_tmp(2 * n);
      for (int i = 0; i < n; i++) {
        mm[2 * i] = S_smax(nm[2 * i], mask[2 * i]);
        mm[2 * i + 1] = S_smin(nm[2 * i + 1], mask[2 * i + 1]);
      }
      mask = mm;
    } else mask = nm;
  }
  Sint *sh = s_tmp(n);
  for (int i = 0; i < n; i++) sh[i] = S_sub(arg[2 * i + 1], arg[2 * i]);
  SList st = vstrides(v);
  return view_create(sl(n, sh), &st, S_add(v->offset, off), mask);
}

const View *view_pad(const View *v, const Sint *arg) {
  int n = v->ndim;
  for (int i = 0; i < n; i++) {
    Sint b = arg[2 * i], e = arg[2 * i + 1];
    if (BOTH_INT(b, e) && (b.c < 0 || e.c < 0)) tg_fail(TG_EINPUT, "invalid pad: negative amount on axis %d", i);
  }
  bool any = false;
  for (int i = 0; i < n && !any; i++) any = R_NE(arg[2 * i], si(0), true) || R_NE(arg[2 * i + 1], si(0), true);
  if (!any) return v;
  Sint *zv = s_tmp(2 * n), *mask = s_tmp(2 * n);
  for (int i = 0; i < n; i++) {
    Sint s = v->shape[i], b = arg[2 * i], e = arg[2 * i + 1];
    zv[2 * i] = S_neg(b); zv[2 * i + 1] = S_add(s, e);
    mask[2 * i] = b; mask[2 * i + 1] = S_add(s, b);
  }
  return unsafe_resize(v, zv, mask);
}

const View *view_shrink(const View *v, const Sint *arg) {
  for (int i = 0; i < v->ndim; i++) {
    Sint s = v->shape[i], b = arg[2 * i], e = arg[2 * i + 1];
    if (!s.u && BOTH_INT(b, e) && !(0 <= b.c && b.c <= e.c && e.c <= s.c))
      tg_fail(TG_EINPUT, "invalid shrink: (%lld, %lld) of a dimension of size %lld", (long long)b.c, (long long)e.c, (long long)s.c);
  }
  return unsafe_resize(v, arg, NULL);
}

const View *view_expand(const View *v, SList new_shape) {
  int n = v->ndim;
  if (new_shape.n != n) tg_fail(TG_EINPUT, "expand arg must have the same number of dimensions (%d) as the shape (%d)", new_shape.n, n);
  for (int i = 0; i < n; i++)
    if (!S_EQ(v->shape[i], new_shape.v[i]) && !S_EQI(v->shape[i], 1)) tg_fail(TG_EINPUT, "can't expand axis %d", i);
  if (sl_has_zero(vshape(v))) return view_create(new_shape, NULL, si(0), NULL);
  Sint *mask = NULL;
  if (v->mask) {
    mask = s_tmp(2 * n);
    for (int i = 0; i < n; i++) {
      Sint s = v->shape[i], ns = new_shape.v[i];
      const Sint *m = &v->mask[2 * i];
      if (R_NE(s, ns, true) && S_EQI(s, 1)) {
        bool m01 = S_EQI(m[0], 0) && S_EQI(m[1], 1);
        mask[2 * i] = si(0); mask[2 * i + 1] = m01 ? ns : si(0);
      } else { mask[2 * i] = m[0]; mask[2 * i + 1] = m[1]; }
    }
  }
  SList st = vstrides(v);
  return view_create(new_shape, &st, v->offset, mask);
}

const View *view_permute(const View *v, const int *axis) {
  int n = v->ndim;
  bool *seen = tmp_alloc((size_t)n + 1);
  for (int i = 0; i < n; i++) {
    if (axis[i] < 0 || axis[i] >= n || seen[axis[i]]) tg_fail(TG_EINPUT, "invalid permutation of len %d", n);
    seen[axis[i]] = true;
  }
  Sint *sh = s_tmp(n), *st = s_tmp(n), *mask = v->mask ? s_tmp(2 * n) : NULL;
  for (int i = 0; i < n; i++) {
    sh[i] = v->shape[axis[i]]; st[i] = v->strides[axis[i]];
    if (mask) { mask[2 * i] = v->mask[2 * axis[i]]; mask[2 * i + 1] = v->mask[2 * axis[i] + 1]; }
  }
  SList sts = sl(n, st);
  return view_create(sl(n, sh), &sts, v->offset, mask);
}

const View *view_flip(const View *v, const bool *flip) {
  int n = v->ndim;
  Sint off = si(0);
  for (int i = 0; i < n; i++) if (flip[i]) off = S_add(off, S_mul(S_sub(v->shape[i], si(1)), v->strides[i]));
  Sint *mask = NULL;
  if (v->mask) {
    mask = s_tmp(2 * n);
    for (int i = 0; i < n; i++) {
      Sint s = v->shape[i], mx = v->mask[2 * i], my = v->mask[2 * i + 1];
      if (flip[i]) { mask[2 * i] = S_sub(s, my); mask[2 * i + 1] = S_sub(s, mx); }
      else { mask[2 * i] = mx; mask[2 * i + 1] = my; }
    }
  }
  Sint *st = s_tmp(n);
  for (int i = 0; i < n; i++) st[i] = flip[i] ? S_neg(v->strides[i]) : v->strides[i];
  SList sts = sl(n, st);
  return view_create(vshape(v), &sts, S_add(v->offset, off), mask);
}

/* the BIND/DEFINE_VAR leaves of a UOp as UOp.vars() (bound vars, then unbound DEFINE_VARs), in toposort order */
int shape_uop_vars(UOp *u, UOp **out, int n, int cap) {
  UList t = uop_toposort(u, NULL, NULL);
  for (int pass = 0; pass < 2; pass++)
    for (int i = 0; i < t.n; i++) {
      UOp *x = t.v[i], *add = NULL;
      if (pass == 0 && x->op == OP_BIND && x->nsrc && x->src[0]->op == OP_DEFINE_VAR) add = x;
      if (pass == 1 && x->op == OP_DEFINE_VAR) {
        bool bound = false;
        for (int j = 0; j < t.n && !bound; j++)
          bound = t.v[j]->op == OP_BIND && t.v[j]->nsrc && t.v[j]->src[0] == x;
        if (!bound) add = x;
      }
      if (!add) continue;
      bool dup = false;
      for (int j = 0; j < n && !dup; j++) dup = out[j] == add;
      if (!dup) { if (n >= cap) tg_fail(TG_EINTERNAL, "too many variables in a shape"); out[n++] = add; }
    }
  return n;
}

const View *view_reshape(const View *v, SList new_shape) {
  SList shape = vshape(v);
  if (sl_eq(shape, new_shape)) return v;
  for (int i = 0; i < new_shape.n; i++)
    if (!S_bool(SC_GE, new_shape.v[i], si(0))) tg_fail(TG_EINPUT, "shape can't contain negative numbers");
  bool self_all_int = sl_all_int(shape);
  if (self_all_int && R_NE(sl_prod(shape), sl_prod(new_shape), false))
    tg_fail(TG_EINPUT, "size mismatched, can't reshape");
  if (sl_has_zero(shape)) return view_create(new_shape, NULL, si(0), NULL);
  if (new_shape.n == 0 && v->mask) {
    for (int i = 0; i < v->ndim; i++) if (S_EQ(v->mask[2 * i], v->mask[2 * i + 1])) return NULL;
  }
  if (v->contiguous) return view_create(new_shape, NULL, si(0), NULL);  // after the checks, contiguous is fine
  if (self_all_int && !sl_all_int(new_shape)) {  // symbolic new shape of a non-contiguous view: directly replaceable?
    if (shape.n != new_shape.n) tg_fail(TG_EINPUT, "cannot symbolic reshape a non-contiguous view to a different rank");
    for (int i = 0; i < shape.n; i++) {
      Sint so = new_shape.v[i];
      int64_t val = so.c;
      if (so.u) {
        UOp *vars[64], *dv[64]; int64_t vals[64];
        int nv = shape_uop_vars(so.u, vars, 0, 64);
        for (int k = 0; k < nv; k++) {
          UOp *b = vars[k];
          if (b->op != OP_BIND || b->src[0]->op != OP_DEFINE_VAR || b->src[1]->op != OP_CONST)
            tg_fail(TG_EINPUT, "can't unbind a variable of a symbolic reshape");
          dv[k] = b->src[0]; vals[k] = b->src[1]->arg->i;
        }
        val = sym_infer(so.u, nv, dv, vals);
      }
      if (shape.v[i].c != val) tg_fail(TG_EINPUT, "cannot symbolic reshape a non-contiguous view");
    }
    return view_intern(new_shape.n, new_shape.v, v->strides, v->offset, v->mask, v->contiguous);
  }
  MDim *md = tmp_alloc(sizeof(MDim) * (size_t)(v->ndim + 1));
  int nmd = merge_dims(shape, vstrides(v), v->mask, md);
  Sint *rs = s_tmp(new_shape.n + 1);
  int nrs = 0, ins = new_shape.n - 1;
  for (int j = nmd - 1; j >= 0; j--) {
    Sint merged = md[j].size, stride = md[j].stride, real = md[j].real, acc = si(1), new_dim;
    while (R_LE(acc, merged, true) && R_NE(acc, merged, true) &&
           R_GT((new_dim = ins >= 0 ? new_shape.v[ins--] : si(0)), si(0), true)) {
      if (nrs >= new_shape.n) tg_fail(TG_EINTERNAL, "reshape stride overflow");
      rs[nrs++] = S_mul(stride, acc);
      acc = S_mul(acc, new_dim);
      if (!R_LT(acc, real, true)) stride = si(0);
    }
    if (R_NE(acc, merged, true)) return NULL;
  }
  Sint *ns = s_tmp(new_shape.n);
  for (int i = 0; i < new_shape.n; i++) ns[i] = i < new_shape.n - nrs ? si(0) : rs[new_shape.n - 1 - i];
  Sint *nm = s_tmp(2 * new_shape.n);
  if (!reshape_mask(v->mask, shape, new_shape, nm)) return NULL;
  Sint a = si(0), b = si(0);
  if (v->mask) for (int i = 0; i < v->ndim; i++) a = S_add(a, S_mul(v->mask[2 * i], v->strides[i]));
  for (int i = 0; i < new_shape.n; i++) b = S_add(b, S_mul(nm[2 * i], ns[i]));
  SList nss = sl(new_shape.n, ns);
  return view_create(new_shape, &nss, S_add(v->offset, S_sub(a, b)), nm);
}

/* ---- View.__add__: vm2 + vm1 (vm1 applied on top of vm2), NULL when it can't be one view ---- */
static Sint ceildiv(Sint num, Sint amt) { return S_neg(S_fdiv(num, S_neg(amt))); }

/* pair memos (sops.h): per-context PairMaps from two interned operands (hashed by their ids) to a
 * result, in uctx->memo[slot] (heap tables, freed with the context); a NULL result is cached too */
static uint64_t pmemo_hash(uint32_t ia, uint32_t ib) { return hash_mix(hash_mix(0x51ed27, ia), ib); }
bool pmemo_get(int slot, const void *a, uint32_t ia, const void *b, uint32_t ib, const void **r) {
  const PairEnt *e = pairmap_find(&uctx->memo[slot], a, b, pmemo_hash(ia, ib));
  if (!e) return false;
  *r = e->v;
  return true;
}
void pmemo_put(int slot, const void *a, uint32_t ia, const void *b, uint32_t ib, const void *r) {
  pairmap_put(&uctx->memo[slot], a, b, pmemo_hash(ia, ib), r);
}

/* a vm1 dim's contribution to a vm2 dim in View.__add__: idx_d1 * s1 */
typedef struct { int d1; Sint s1; } Term;

/* "idx0", "idx1", ...: View.__add__'s variable names, spelled once */
static const char *idx_name(int i) {
  static const char *const names[] = {"idx0", "idx1", "idx2", "idx3", "idx4", "idx5", "idx6", "idx7", "idx8", "idx9",
                                      "idx10", "idx11", "idx12", "idx13", "idx14", "idx15", "idx16", "idx17", "idx18",
                                      "idx19", "idx20", "idx21", "idx22", "idx23", "idx24", "idx25", "idx26", "idx27",
                                      "idx28", "idx29", "idx30", "idx31"};
  if (i < (int)(sizeof names / sizeof names[0])) return names[i];
  return arena_printf(ga(), "idx%d", i);
}

/* View.__add__'s dimension merge on integers. tinygrad sums idx_d1 * s1 terms per vm2 dim into
 * merged_term and asks resolve(merged_term < merged_size) and resolve(0 <= merged_term), which
 * simplify the sum and read its vmin/vmax. When every number is an int the sum is linear in
 * independent variables, and when a variable that appears twice in one merged term has the same
 * sign in each (an arange's pad-and-reshape views put idx0 in two dims), its vmin/vmax are the exact
 * extremes in any form the simplifier gives it: with its like terms combined (idx0*24576) or not
 * (each term is extreme at the same end of idx0's range), and lt_folding divides it exactly. So each
 * resolve is a comparison of the extremes, summed per term. Values stay under 2^31, where
 * tinygrad's int32 constant folding cannot wrap. Returns 1 (merged: ext_size/ext_lo/ext_hi/next
 * filled), 0 (merged_term is not 0 at the end: no merge), or -1 (not all ints, a variable twice
 * with both signs in one merged term, or too large: take the symbolic way).
 * terms[d2 * rowlen + k] is the k-th term of vm2 dim d2. */
static int merge_dims_int(const View *vm1, const View *vm2, const Sint *origin, const Term *terms, int rowlen, const int *nterm, Sint *ext_size, int64_t *ext_lo, int64_t *ext_hi, int *next_out) {
  const int64_t LIM = (int64_t)1 << 31;
  int n1 = vm1->ndim, n2 = vm2->ndim;
  for (int i = 0; i < n2; i++) if (vm2->shape[i].u || origin[i].u) return -1;
  for (int i = 0; i < n1; i++) if (vm1->shape[i].u || vm1->shape[i].c < 1 || vm1->shape[i].c > LIM) return -1;
  uint32_t stamp[64], group = 1;
  bool neg[64];
  if (n1 > 64) return -1;
  memset(stamp, 0, sizeof(uint32_t) * (size_t)n1);
  int64_t msize = 1, lo = 0, hi = 0;
  int next = 0;
  for (int d2 = n2 - 1; d2 >= 0; d2--) {
    for (int k = 0; k < nterm[d2]; k++) {
      const Term *t = &terms[d2 * rowlen + k];
      int d1 = t->d1;
      const Sint *s1 = &t->s1;
      if (s1->u || (stamp[d1] == group && neg[d1] != (s1->c < 0))) return -1;
      stamp[d1] = group, neg[d1] = s1->c < 0;
      int64_t a, ext;
      if (__builtin_mul_overflow(s1->c, msize, &a) || a <= -LIM || a >= LIM) return -1;
      if (__builtin_mul_overflow(a, vm1->shape[d1].c - 1, &ext) || ext <= -LIM || ext >= LIM) return -1;
      if (ext < 0) lo += ext; else hi += ext;
    }
    int64_t o;
    if (__builtin_mul_overflow(origin[d2].c, msize, &o) || o <= -LIM || o >= LIM) return -1;
    lo += o, hi += o;
    if (lo <= -LIM || lo >= LIM || hi <= -LIM || hi >= LIM) return -1;
    if (__builtin_mul_overflow(msize, vm2->shape[d2].c, &msize) || msize <= -LIM || msize >= LIM) return -1;
    if (hi < msize && lo >= 0) {
      ext_size[next] = si(msize), ext_lo[next] = lo, ext_hi[next] = hi, next++;
      msize = 1, lo = hi = 0, group++;
    }
  }
  *next_out = next;
  return lo == 0 && hi == 0;
}

_Thread_local bool view_add_symbolic_only;

/* View.__add__ is functools.cache'd in tinygrad */
static const View *view_add_uncached(const View *vm2, const View *vm1);
const View *view_add(const View *vm2, const View *vm1) {
  const void *r;
  if (pmemo_get(PMEMO_VIEW_ADD, vm2, vm2->id, vm1, vm1->id, &r)) return r;
  /* its arrays are temporaries (the View it returns is interned, which copies): in scratch */
  ArenaMark mk = tmp_scope_enter();
  const View *v = view_add_uncached(vm2, vm1);
  tmp_scope_leave(mk);
  pmemo_put(PMEMO_VIEW_ADD, vm2, vm2->id, vm1, vm1->id, v);
  return v;
}
static const View *view_add_uncached(const View *vm2, const View *vm1) {
  if (vm2->contiguous || S_EQI(view_size(vm1), 0)) return vm1;
  if (vm1->contiguous && sl_eq(vshape(vm1), vshape(vm2))) return vm2;
  if (vm1->contiguous && view_size(vm1).c == view_size(vm2).c) {
    const View *r = view_reshape(vm2, vshape(vm1));
    if (r) return r;
  }
  int n1 = vm1->ndim, n2 = vm2->ndim;
  if (vm1->mask) {
    const View *nv1 = view_shrink(vm1, vm1->mask), *merged;
    if (nv1 == vm1 || !(merged = view_add(vm2, nv1))) return NULL;
    Sint *pad = s_tmp(2 * n1);
    for (int i = 0; i < n1; i++) { pad[2 * i] = vm1->mask[2 * i]; pad[2 * i + 1] = S_sub(vm1->shape[i], vm1->mask[2 * i + 1]); }
    return view_pad(merged, pad);
  }
  if (!sl_all_int(vshape(vm1))) {
    // if all strides are 0 and vm2 is unmasked, return vm1
    bool allz = !vm2->mask;
    for (int i = 0; i < n2 && allz; i++) allz = S_EQI(vm2->strides[i], 0);
    for (int i = 0; i < n1 && allz; i++) allz = S_EQI(vm1->strides[i], 0);
    return allz ? vm1 : NULL;
  }
  /* project vm1's offset and strides on to vm2 */
  Sint *origin = s_tmp(n2), *un = s_tmp(n2);
  unravel(vshape(vm2), vm1->offset, origin);
  for (int i = 0; i < n2; i++) origin[i] = S_ssimplify(origin[i]);
  Term *terms = tmp_alloc(sizeof(Term) * (size_t)(n2 * (n1 + 1) + 1));
  int *nterm = tmp_alloc(sizeof(int) * (size_t)(n2 + 1));
#define TERM(d2, k) terms[(d2) * (n1 + 1) + (k)]
  Sint *strides = s_tmp(n1);
  for (int d1 = 0; d1 < n1; d1++) {
    strides[d1] = si(0);
    Sint st = vm1->strides[d1];
    if (S_EQI(st, 0)) continue;
    unravel(vshape(vm2), S_add(vm1->offset, st), un);
    for (int d2 = 0; d2 < n2; d2++) {
      Sint s1 = S_sub(un[d2], origin[d2]);
      if (!R_NE(s1, si(0), true)) continue;  // if s1 can possibly be 0
      TERM(d2, nterm[d2]++) = (Term){d1, s1};
      strides[d1] = S_add(strides[d1], S_ssimplify(S_mul(s1, vm2->strides[d2])));
    }
  }
  /* merge dimensions in vm2 if required (only when required: merging too many makes vm2's mask hard to project) */
  Sint *ext_size = s_tmp(n2);
  UOp **ext_term = tmp_alloc(sizeof(UOp *) * (size_t)(n2 + 1));
  int64_t *ext_lo = tmp_alloc(sizeof(int64_t) * (size_t)(n2 + 1)), *ext_hi = tmp_alloc(sizeof(int64_t) * (size_t)(n2 + 1));
  int next = 0;
  int merged = view_add_symbolic_only ? -1 : merge_dims_int(vm1, vm2, origin, terms, n1 + 1, nterm, ext_size, ext_lo, ext_hi, &next);
  if (merged < 0) {
    /* the symbolic merge, as tinygrad computes it: a variable per vm1 dim, resolve() on the sums */
    UOp **idxs = tmp_alloc(sizeof(UOp *) * (size_t)(n1 + 1));
    for (int i = 0; i < n1; i++) idxs[i] = u_variable(idx_name(i), 0, vm1->shape[i].c - 1, dt_int);
    Sint merged_size = si(1);
    UOp *merged_term = uop_const_int(dt_int, 0);
    next = 0;
    for (int d2 = n2 - 1; d2 >= 0; d2--) {
      Sint sum = si(0);
      for (int k = 0; k < nterm[d2]; k++) sum = S_add(sum, S_mul(S_u(idxs[TERM(d2, k).d1]), TERM(d2, k).s1));
      Sint add = S_mul(S_add(sum, origin[d2]), merged_size);
      merged_term = add.u ? u_add(merged_term, add.u) : u_addi(merged_term, add.c);
      merged_size = S_mul(merged_size, vm2->shape[d2]);
      if (R_LT(S_u(merged_term), merged_size, false) && R_LE(si(0), S_u(merged_term), false)) {
        ext_size[next] = merged_size; ext_term[next] = merged_term; next++;
        merged_size = si(1); merged_term = uop_const_int(dt_int, 0);
      }
    }
    merged = !R_NE(S_u(merged_term), si(0), true);
  }
  if (!merged) return NULL;
  /* extents are in reverse dim order: vm2_shape = reversed sizes */
  Sint *v2s = s_tmp(next);
  for (int i = 0; i < next; i++) v2s[i] = ext_size[next - 1 - i];
  if (!sl_eq(sl(next, v2s), vshape(vm2))) {
    const View *r2 = view_reshape(vm2, sl(next, v2s));
    if (!r2) return NULL;
    if (!sl_eq(vshape(r2), vshape(vm2))) return view_add(r2, vm1);  // != prevents an infinite loop
  }
  if (vm2->mask) {
    /* try to project vm2's mask on to vm1 */
    Sint *newb = s_tmp(n1), *newe = s_tmp(n1);
    for (int i = 0; i < n1; i++) { newb[i] = si(0); newe[i] = vm1->shape[i]; }
    bool bad = false;
    int nz = n2 < next ? n2 : next;
    for (int d2 = 0; d2 < nz; d2++) {
      Sint b = vm2->mask[2 * d2], e = vm2->mask[2 * d2 + 1], o = origin[d2];
      int ei = next - 1 - d2;
      UOp *t = ext_term[ei] ? u_simplify(ext_term[ei]) : NULL;
      Sint tmin = si(t ? u_vmin_i(t) : ext_lo[ei]), tmax = si(t ? u_vmax_i(t) : ext_hi[ei]);
      /* resolve(b <= t.vmin and t.vmax < e, False): `and` takes bool() of the first comparison */
      bool inside = S_bool(SC_LE, b, tmin) && R_LT(tmax, e, false);
      if (inside) continue;
      if (nterm[d2] != 1) {
        if (nterm[d2] == 0 && n1 > 0) {
          // t should be a constant if no terms contribute to this dimension, but it might not be simplified
          if (tmin.c != tmax.c) return NULL;
          newe[0] = si(0);
        } else bad = true;
        continue;
      }
      int d1 = TERM(d2, 0).d1;
      Sint s1 = TERM(d2, 0).s1;
      bool pos = S_bool(SC_GT, s1, si(0)), neg = S_bool(SC_LT, s1, si(0));
      newb[d1] = S_smax(newb[d1], ceildiv(pos ? S_sub(b, o) : S_sub(S_sub(e, o), si(1)), s1));
      newe[d1] = S_smin(newe[d1], S_add(S_fdiv(neg ? S_sub(b, o) : S_sub(S_sub(e, o), si(1)), s1), si(1)));
    }
    // if any of vm1 was masked off, try again with that mask in place
    bool masked = false;
    for (int i = 0; i < n1 && !masked; i++) masked = !(S_EQI(newb[i], 0) && S_EQ(newe[i], vm1->shape[i]));
    if (masked) {
      Sint *m = s_tmp(2 * n1);
      for (int i = 0; i < n1; i++) { m[2 * i] = newb[i]; m[2 * i + 1] = newe[i]; }
      SList st1 = vstrides(vm1);
      return view_add(vm2, view_create(vshape(vm1), &st1, vm1->offset, m));
    }
    if (bad) return NULL;  // vm2's mask was violated
  }
#undef TERM
  Sint off = si(0);
  for (int i = 0; i < n2; i++) off = S_add(off, S_mul(origin[i], vm2->strides[i]));
  SList sts = sl(n1, strides);
  return view_create(vshape(vm1), &sts, S_ssimplify(S_add(off, vm2->offset)), NULL);
}

/* ---- invert, minify ---- */
const View *view_invert(const View *v, SList out_shape) {
  int n = v->ndim;
  const View *ret = view_create(vshape(v), NULL, si(0), NULL);
  if (v->mask) ret = view_shrink(ret, v->mask);
  bool *fl = tmp_alloc((size_t)n + 1);
  for (int i = 0; i < n; i++) fl[i] = S_bool(SC_LT, v->strides[i], si(0));
  ret = view_flip(ret, fl);
  /* argsort(-x if x > 0 else x): stable sort of the axes by that key */
  Sint *key = s_tmp(n);
  int *perm = tmp_alloc(sizeof(int) * (size_t)(n + 1));
  for (int i = 0; i < n; i++) {
    key[i] = S_bool(SC_GT, v->strides[i], si(0)) ? S_neg(v->strides[i]) : v->strides[i];
    perm[i] = i;
  }
  for (int i = 1; i < n; i++) {
    int p = perm[i], j = i;
    while (j > 0 && S_bool(SC_LT, key[p], key[perm[j - 1]])) { perm[j] = perm[j - 1]; j--; }
    perm[j] = p;
  }
  ret = view_permute(ret, perm);
  // don't support shrink, expand, or stride != (-1, 1)
  return S_EQ(sl_prod(vshape(ret)), sl_prod(out_shape)) ? ret : NULL;
}

const View *view_minify(const View *v) {
  MDim *md = tmp_alloc(sizeof(MDim) * (size_t)(v->ndim + 1));
  int n = merge_dims(vshape(v), vstrides(v), v->mask, md);
  Sint *ms = s_tmp(n);
  for (int i = 0; i < n; i++) ms[i] = md[i].size;
  const View *nv = view_reshape(v, sl(n, ms));
  return nv ? nv : v;
}

/* ---- to_indexed_uops ---- */
void view_to_indexed_uops(const View *v, UOp *const *idxs, UOp *vexpr, UOp **idx_out, UOp **valid_out) {
  if (!vexpr) vexpr = uop_const(dt_bool, v_bool(true));
  UOp *iexpr = si_uop(v->offset);
  for (int i = 0; i < v->ndim; i++) {
    UOp *idx = idxs ? idxs[i] : uop1(OP_RANGE, dt_int, si_uop(v->shape[i]), v_int(i));
    Sint sh = v->shape[i], st = v->strides[i];
    if (R_NE(sh, si(1), true) && R_NE(st, si(0), true)) iexpr = u_add(iexpr, st.u ? u_mul(idx, st.u) : u_muli(idx, st.c));
    if (v->mask) {
      Sint m0 = v->mask[2 * i], m1 = v->mask[2 * i + 1];
      if (R_NE(m0, si(0), true)) vexpr = u_mul(vexpr, m0.u ? u_ge(idx, m0.u) : u_gei(idx, m0.c));
      if (R_NE(m1, sh, true)) vexpr = u_mul(vexpr, m1.u ? u_lt(idx, m1.u) : u_lti(idx, m1.c));
    }
  }
  *idx_out = iexpr;
  *valid_out = vexpr;
}

/* exposed to shapetracker.c */
void shape_unravel(SList shape, Sint offset, Sint *out) { unravel(shape, offset, out); }
