/* multi: tinygrad 0.11.0's schedule/multi.py, the rewrites that turn multi-device (sharded) tensor
 * graphs into per-device graphs.
 *
 * A MULTI(x, axis) node says "x is one shard of a tensor split over the tuple device along axis".
 * multi_pm pushes MULTI below every op (alu_multi, reduce_multi, the movement ops, copy, assign,
 * passthrough), turning cross-shard work into ALLREDUCEs; replace_allreduce then lowers ALLREDUCE
 * to COPYs (naive, or the RING scatter-reduce/allgather) and removes MSELECT/MSTACK pairs. The
 * shard index is the DEFINE_VAR `_device_num`, substituted per shard in ShapeTrackers.
 *
 * Devices are interned Values (a string or a tuple of strings), so device equality is pointer
 * equality. Arithmetic on sints is built exactly as Python's operators build it (x*4 is
 * MUL(x, 4) and 4*x is MUL(4, x)), because those nodes end up in the kernels' ShapeTrackers.
 * Device group ids (Device[d].group_id) are None for every device tinygrad 0.11.0 ships, so
 * handle_allreduce_multirank always sees a single group. */
#include "passes.h"

#include <stdlib.h>
#include <string.h>

PM *pm_multi, *pm_replace_allreduce;

/* ---- device values ---- */

static bool dev_is_tuple(const Value *d) { return d && d->kind == V_TUPLE; }
static bool dev_is_str(const Value *d) { return d && d->kind == V_STR; }
static const Value *udev(UOp *u) {
  const Value *d = u_device(u);
  if (!d) tg_fail(TG_EINPUT, "%s has no device", op_names[u->op]);
  return d;
}
static int ndev(UOp *u) {
  const Value *d = udev(u);
  return dev_is_tuple(d) ? d->n : 1;
}

/* ---- UOp constructors as tinygrad's UOp methods build them ---- */

static UOp *dev_uop(const Value *d) { return uop0(OP_DEVICE, dt_void, d); }
static UOp *mselect(UOp *u, int i) { return uop1(OP_MSELECT, u->dtype, u, v_int(i)); }
static UOp *contiguous(UOp *u) { return uop1(OP_CONTIGUOUS, u->dtype, u, NULL); }
/* UOp.allreduce(op, device): device is a DEVICE UOp */
static UOp *allreduce(UOp *u, Op op, UOp *dev) {
  if (!dev_is_tuple(u_device(u))) tg_fail(TG_EINPUT, "allreduce must be on tuple device");
  return uop2(OP_ALLREDUCE, u->dtype, u, dev, v_ops(op));
}
/* UOp.multi(axis) */
static UOp *multi(UOp *u, int axis) {
  if (!dev_is_tuple(u_device(u))) tg_fail(TG_EINPUT, "multi device must be tuple");
  if (axis < 0) tg_fail(TG_EINPUT, "multi None is no longer supported");
  return uop1(OP_MULTI, u->dtype, u, v_int(axis));
}
/* UOp.copy_to_device(device, arg): sel < 0 is arg=None */
static UOp *copy_to_device(UOp *u, UOp *dev, int sel) {
  if (sel >= 0 && !dev_is_tuple(u_device(u))) tg_fail(TG_EINPUT, "copy_to_device with arg needs a tuple device");
  UOp *inp = sel < 0 ? u : mselect(u, sel);
  return uop2(OP_COPY, u->dtype, inp, dev, NULL);
}
static UOp *mstack(const DType *dt, int n, UOp *const *src) { return uop_new(OP_MSTACK, dt, n, src, NULL, NULL); }

/* ---- sint arithmetic exactly as Python's operators build it ---- */

static Sint py_binop(Op op, Sint a, Sint b) {
  if (si_is_int(a) && si_is_int(b)) return si(op == OP_ADD ? a.c + b.c : a.c * b.c);
  if (!si_is_int(a)) return (Sint){0, u_alu2(op, a.u, si_is_int(b) ? u_const_like_i(a.u, b.c) : b.u)};
  return (Sint){0, u_alu2(op, u_const_like_i(b.u, a.c), b.u)}; /* int op UOp: __rop__ */
}
static Sint py_neg(Sint a) {
  if (si_is_int(a)) return si(-a.c);
  return (Sint){0, u_alu2(OP_MUL, a.u, u_const_like_i(a.u, -1))}; /* self*(-1) */
}
static Sint py_mul(Sint a, Sint b) { return py_binop(OP_MUL, a, b); }
static Sint py_add(Sint a, Sint b) { return py_binop(OP_ADD, a, b); }
/* a - b: UOp.sub is self + (-x); int - UOp is x.const_like(a) + (-x) */
static Sint py_sub(Sint a, Sint b) {
  if (si_is_int(a) && si_is_int(b)) return si(a.c - b.c);
  return py_add(a, py_neg(b));
}
static Sint dnum_var(int dcount) { return (Sint){0, u_variable("_device_num", 0, dcount - 1, dt_int)}; }

/* UOp._unshard(axis): pad the shard into its place in the full axis */
static UOp *unshard(UOp *u, int axis) {
  SList shape = u_shape(u);
  Sint bsz = shape.v[axis];
  int dcount = ndev(u);
  Sint dnum = dnum_var(dcount);
  Sint *arg = arena_alloc(ga(), sizeof(Sint) * (size_t)(2 * shape.n + 1));
  for (int a = 0; a < shape.n; a++) {
    if (a != axis) { arg[2 * a] = si(0); arg[2 * a + 1] = si(0); continue; }
    arg[2 * a] = py_mul(bsz, dnum);
    arg[2 * a + 1] = py_sub(py_mul(bsz, si(dcount - 1)), py_mul(bsz, dnum));
  }
  return u_pad(u, arg);
}
/* UOp._shard(axis): shrink this device's piece of the axis */
static UOp *shard(UOp *u, int axis) {
  int dcount = ndev(u);
  Sint dnum = dnum_var(dcount);
  SList shape = u_shape(u);
  Sint s = shape.v[axis];
  if (!si_is_int(s)) tg_fail(TG_EINPUT, "multi axis uneven: symbolic shape on axis %d", axis);
  if (s.c % dcount != 0)
    tg_fail(TG_EINPUT, "multi axis uneven: self.shape[axis]=%lld axis=%d dcount=%d", (long long)s.c, axis, dcount);
  int64_t sz = s.c / dcount;
  Sint *arg = arena_alloc(ga(), sizeof(Sint) * (size_t)(2 * shape.n + 1));
  for (int i = 0; i < shape.n; i++) {
    if (i != axis) { arg[2 * i] = si(0); arg[2 * i + 1] = shape.v[i]; continue; }
    Sint lo = py_mul(dnum, si(sz));
    arg[2 * i] = lo;
    arg[2 * i + 1] = py_add(lo, si(sz));
  }
  return u_shrink(u, arg);
}

/* a PAD/SHRINK arg ((b, e), ...) as 2*n sints */
static Sint *pairs_of(const Value *arg) {
  Sint *out = arena_alloc(ga(), sizeof(Sint) * (size_t)(2 * arg->n + 1));
  for (int i = 0; i < arg->n; i++) {
    out[2 * i] = sint_of_value(arg->items[i]->items[0]);
    out[2 * i + 1] = sint_of_value(arg->items[i]->items[1]);
  }
  return out;
}
/* MULTI.bounds[i] == (b, e) */
static int bounds_index(UOp *mu, Sint b, Sint e) {
  Sint sz = u_shape(mu->src[0]).v[mu->arg->i], acc = si(0);
  for (int i = 0; i < ndev(mu); i++) {
    Sint nx = py_add(acc, sz);
    if (si_eq(acc, b) && si_eq(nx, e)) return i;
    acc = nx;
  }
  return -1;
}
static int maxis(UOp *mu) { return (int)mu->arg->i; }

/* ---- allreduce implementation ---- */

/* Device[dev].group_id: None for every device of tinygrad 0.11.0 */
static int device_group_id(const char *dev) { (void)dev; return -1; }

static const char *reduce_leaders_env(void) { const char *s = getenv("REDUCE_LEADERS"); return s ? s : ""; }
static bool is_reduce_leader(const char *dev) {
  const char *s = reduce_leaders_env();
  size_t n = strlen(dev);
  for (;;) {
    const char *c = strchr(s, ',');
    size_t len = c ? (size_t)(c - s) : strlen(s);
    if (len == n && strncmp(s, dev, n) == 0) return true;
    if (!c) return false;
    s = c + 1;
  }
}
/* sorted(bufs, key=lambda x: (x.device not in reduce_leaders, x.device)) */
static int leader_cmp(UOp *a, UOp *b) {
  const char *da = udev(a)->s, *db = udev(b)->s;
  int la = !is_reduce_leader(da), lb = !is_reduce_leader(db);
  if (la != lb) return la - lb;
  return strcmp(da, db);
}

// allreduce across device groups
static UOp *handle_allreduce_multirank(const Match *m, void *ctx) {
  UOp *buf = m_get(m, "buf"), *red = m_get(m, "red");
  const Value *dev = u_device(buf);
  if (!dev_is_tuple(dev)) return NULL;
  int n = dev->n, ng = 0;
  /* group buffers by group id, in first-seen order */
  int *gid = arena_alloc(ga(), sizeof(int) * (size_t)n), *gsize = arena_alloc(ga(), sizeof(int) * (size_t)n);
  UOp ***groups = arena_alloc(ga(), sizeof(UOp **) * (size_t)n);
  for (int i = 0; i < n; i++) {
    int g = device_group_id(dev->items[i]->s), k = 0;
    while (k < ng && gid[k] != g) k++;
    if (k == ng) { gid[ng] = g; gsize[ng] = 0; groups[ng] = arena_alloc(ga(), sizeof(UOp *) * (size_t)n); ng++; }
    groups[k][gsize[k]++] = mselect(buf, i);
  }
  /* skip if only one group or if every group has only one buffer */
  bool anybig = false;
  for (int k = 0; k < ng; k++) anybig |= gsize[k] > 1;
  if (ng <= 1 || !anybig) return NULL;
  /* put reduce leader of each group first (stable insertion sort) */
  for (int k = 0; k < ng; k++)
    for (int i = 1; i < gsize[k]; i++)
      for (int j = i; j > 0 && leader_cmp(groups[k][j - 1], groups[k][j]) > 0; j--) {
        UOp *t = groups[k][j]; groups[k][j] = groups[k][j - 1]; groups[k][j - 1] = t;
      }
  Op op = red->arg->op;
  /* reduce inside each group */
  UOp **inner = arena_alloc(ga(), sizeof(UOp *) * (size_t)ng);
  const Value **idev = arena_alloc(ga(), sizeof(Value *) * (size_t)ng);
  for (int k = 0; k < ng; k++) {
    UOp *ms = mstack(buf->dtype, gsize[k], groups[k]);
    const Value *lead = v_tuplev(1, udev(groups[k][0]));
    inner[k] = mselect(allreduce(ms, op, dev_uop(lead)), 0);
    idev[k] = udev(inner[k]);
  }
  /* allreduce across groups */
  UOp *outer = allreduce(mstack(buf->dtype, ng, inner), op, dev_uop(v_tuple(ng, idev)));
  /* broadcast back to all devices in the group: gid2bid */
  const Value *odev = udev(outer);
#define GID2BID(g, out) do { out = -1; for (int q = 0; q < odev->n; q++) if (device_group_id(odev->items[q]->s) == (g)) out = q; } while (0)
  const Value *rdev = udev(red);
  if (!dev_is_tuple(rdev)) {
    int b; GID2BID(device_group_id(rdev->s), b);
    return copy_to_device(mselect(outer, b), dev_uop(rdev), -1);
  }
  UOp **outs = arena_alloc(ga(), sizeof(UOp *) * (size_t)rdev->n);
  for (int i = 0; i < rdev->n; i++) {
    int b; GID2BID(device_group_id(rdev->items[i]->s), b);
    outs[i] = copy_to_device(mselect(outer, b), dev_uop(rdev->items[i]), -1);
  }
#undef GID2BID
  return mstack(buf->dtype, rdev->n, outs);
}

// naive or RING allreduce
static UOp *handle_allreduce(const Match *m, void *ctx) {
  UOp *buf = m_get(m, "buf"), *red = m_get(m, "red");
  const Value *dev = u_device(buf);
  if (!dev_is_tuple(dev)) return NULL;
  SList shape = u_shape(buf);
  if (!sl_all_int(shape)) tg_fail(TG_EINPUT, "allreduce does not support symbolic shapes");
  int n_lbs = dev->n;
  int64_t numel = sl_prod(shape).c;
  /* ring allreduce doesn't provide a benefit with only 2 nodes or where number of elements is less than 256k */
  const char *thr_s = getenv("RING_ALLREDUCE_THRESHOLD");
  int64_t thr = thr_s ? strtoll(thr_s, NULL, 10) : 256000;
  int ring = uctx->opt.ring;
  bool use_ring = ring >= 2 || (n_lbs > 2 && numel > thr && ring >= 1);
  Op op = red->arg->op;
  /* contiguous before we copy it */
  buf = contiguous(buf);
  /* copy to all devices. if you shrink later, that'll be handled */
  if (!use_ring) {
    UOp *acc = NULL;
    for (int i = 0; i < n_lbs; i++) {
      UOp *c = uop2(OP_COPY, buf->dtype, mselect(buf, i), red->src[1], NULL);
      acc = acc ? u_alu2(op, acc, c) : c;
    }
    return acc;
  }
  /* new ring reduce */
  int64_t factor = 1;
  for (int64_t f = 32; f >= 2; f /= 2) if (numel % f == 0) { factor = f; break; }
  int64_t base = (numel / factor) / n_lbs, left = (numel / factor) % n_lbs;
  int64_t *cs = arena_alloc(ga(), sizeof(int64_t) * (size_t)(n_lbs + 1));
  cs[0] = 0;
  for (int i = 0; i < n_lbs; i++) cs[i + 1] = cs[i] + (i < left ? (base + 1) * factor : base * factor);
  /* extract chunks and scatter-reduce */
  UOp **reduced = arena_alloc(ga(), sizeof(UOp *) * (size_t)n_lbs);
  Sint numel_s = si(numel);
  for (int i = 0; i < n_lbs; i++) {
    Sint sh[2] = {si(cs[i]), si(cs[i + 1])};
    UOp *chunk = u_shrink(u_reshape(buf, sl(1, &numel_s)), sh);
    UOp *rc = chunk;
    for (int step = 0; step < n_lbs - 1; step++) {
      int src = (i + step) % n_lbs, dest = (i + step + 1) % n_lbs;
      /* copy the chunk from the src device to the dest, and select the chunk on the dest device */
      UOp *ddev = dev_uop(dev->items[dest]);
      UOp *moved = copy_to_device(rc, ddev, dev_is_tuple(u_device(rc)) ? src : -1);
      rc = u_alu2(op, moved, copy_to_device(chunk, ddev, dest));
    }
    reduced[i] = rc;
  }
  /* allgather */
  UOp **copied = arena_alloc(ga(), sizeof(UOp *) * (size_t)n_lbs);
  for (int i = 0; i < n_lbs; i++) {
    UOp **this_chunk = arena_alloc(ga(), sizeof(UOp *) * (size_t)n_lbs);
    UOp *c = reduced[i];
    this_chunk[(i + n_lbs - 1) % n_lbs] = c;
    for (int step = 0; step < n_lbs - 1; step++) {
      int dest = (i + step) % n_lbs;
      this_chunk[dest] = c = copy_to_device(c, dev_uop(dev->items[dest]), -1);
    }
    copied[i] = mstack(buf->dtype, n_lbs, this_chunk);
  }
  /* reassemble */
  UOp *acc = NULL;
  for (int i = 0; i < n_lbs; i++) {
    Sint pad[2] = {si(cs[i]), si(numel - cs[i + 1])};
    UOp *p = u_pad(copied[i], pad);
    acc = acc ? u_alu2(OP_ADD, acc, p) : p;
  }
  return u_reshape(acc, shape);
}

/* ---- multi rewrite MSELECT/MSTACK ---- */

/* _replace_dnum: replace _device_num in the ShapeTracker with a literal const for this mselect */
static const ShapeTracker *replace_dnum(const ShapeTracker *st, int64_t val) {
  UOp *vars[64], *dnum = NULL;
  int nv = st_vars(st, vars, 64), nd = 0;
  for (int i = 0; i < nv; i++)
    if (vars[i]->op == OP_DEFINE_VAR && strcmp(vars[i]->arg->items[0]->s, "_device_num") == 0) { dnum = vars[i]; nd++; }
  if (nd == 0) return st;
  if (nd != 1) tg_fail(TG_EINPUT, "view must have exactly 0 or 1 dnum, got %d", nd);
  UMap d;
  umap_init(&d, ga());
  umap_put(&d, dnum, u_const_like_i(dnum, val));
  return st_substitute(st, &d);
}

// move view through MSTACK
static UOp *mstack_reorder_view(const Match *m, void *ctx) {
  UOp *ms = m_get(m, "ms");
  const Value *a0 = ms->src[0]->arg;
  for (int i = 0; i < ms->nsrc; i++) if (ms->src[i]->arg != a0 || ms->src[i]->nsrc == 0) return NULL;
  UOp *vars[64];
  int nv = st_vars(a0->st, vars, 64);
  for (int i = 0; i < nv; i++) {
    /* x.arg[0] == '_device_num' (BIND has no name; tinygrad would fail on it) */
    if (vars[i]->op == OP_DEFINE_VAR && strcmp(vars[i]->arg->items[0]->s, "_device_num") == 0) return NULL;
  }
  UOp **ns = arena_alloc(ga(), sizeof(UOp *) * (size_t)ms->nsrc);
  for (int i = 0; i < ms->nsrc; i++) ns[i] = ms->src[i]->src[0];
  return u_view(mstack(ms->dtype, ms->nsrc, ns), a0->st);
}

// move shrink before MSTACK
static UOp *mstack_early_shrink(const Match *m, void *ctx) {
  UOp *view = m_get(m, "view"), *ms = m_get(m, "ms");
  /* resolve(prod(view.shape) >= prod(ms.shape)) */
  if (!si_resolve_lt(sl_prod(u_shape(view)), sl_prod(u_shape(ms)), false)) return NULL;
  const ShapeTracker *vst = view->arg->st;
  if (replace_dnum(vst, 0) == vst) return NULL;
  UOp **ret = arena_alloc(ga(), sizeof(UOp *) * (size_t)ms->nsrc);
  for (int i = 0; i < ms->nsrc; i++) {
    UOp *x = ms->src[i];
    const ShapeTracker *nv = replace_dnum(vst, i);
    if (x->op == OP_COPY) {
      /* if src device doesn't have a renderer, we have to view after the copy */
      const Value *sd = u_device(x->src[0]);
      if (dev_is_str(sd) && (strcmp(sd->s, "DISK") == 0 || strcmp(sd->s, "NPY") == 0)) ret[i] = u_view(x, nv);
      else ret[i] = copy_to_device(u_view(x->src[0], nv), dev_uop(udev(x)), -1);
    } else {
      ret[i] = contiguous(u_view(x, nv));
    }
  }
  return uop_replace(ms, NULL, ms->nsrc, ret, NULL, NULL);
}

// BROADCAST: explicitly expand broadcast copies and combine with MSTACK
static UOp *broadcast_copy(const Match *m, void *ctx) {
  UOp *c = m_get(m, "c"), *x = m_get(m, "x");
  const Value *cd = udev(c), *xd = udev(x);
  if (!dev_is_tuple(cd) || !dev_is_str(xd)) return NULL;
  UOp **ns = arena_alloc(ga(), sizeof(UOp *) * (size_t)cd->n);
  for (int i = 0; i < cd->n; i++) ns[i] = copy_to_device(x, dev_uop(cd->items[i]), -1);
  return mstack(c->dtype, cd->n, ns);
}
// COPY_TO_ONE: if copying from multidevice to one, MSELECT the first
static UOp *copy_to_one(const Match *m, void *ctx) {
  UOp *c = m_get(m, "c"), *x = m_get(m, "x");
  const Value *cd = udev(c), *xd = udev(x);
  if (!dev_is_str(cd) || !dev_is_tuple(xd)) return NULL;
  return copy_to_device(mselect(x, 0), dev_uop(cd), -1);
}
// MSELECT on MSTACK is replaced with nothing
static UOp *mselect_mstack(const Match *m, void *ctx) {
  UOp *mst = m_get(m, "mstack"), *ms = m_get(m, "ms");
  int64_t i = ms->arg->i;
  if (i < 0 || i >= mst->nsrc) tg_fail(TG_EINPUT, "MSELECT %lld of an MSTACK of %d", (long long)i, mst->nsrc);
  return mst->src[i];
}
// MSELECT must select a base, if there are views apply them after selecting the base
static UOp *mselect_view(const Match *m, void *ctx) {
  UOp *ms = m_get(m, "ms"), *view = m_get(m, "view"), *base = m_get(m, "base");
  return u_view(mselect(base, (int)ms->arg->i), replace_dnum(view->arg->st, ms->arg->i));
}

static const Rule replace_allreduce[] = {
  // allreduce inside and across device groups
  { UP(.ops = OPS(OP_ALLREDUCE), .name = "red", SRC(UVAR("buf"), UP())), handle_allreduce_multirank },
  // naive or ring allreduce
  { UP(.ops = OPS(OP_ALLREDUCE), .name = "red", SRC(UVAR("buf"), UP())), handle_allreduce },
  // BROADCAST: explicitly expand broadcast copies and combine with MSTACK
  { UP(.ops = OPS(OP_COPY), .name = "c", SRC(UP(.all_ops = true, .except = OPS(OP_CONST), .name = "x"), UP(.ops = OPS(OP_DEVICE)))),
    broadcast_copy },
  // COPY_TO_ONE: if copying from multidevice to one, MSELECT the first
  { UP(.ops = OPS(OP_COPY), .name = "c", SRC(UP(.all_ops = true, .except = OPS(OP_CONST), .name = "x"), UP(.ops = OPS(OP_DEVICE)))),
    copy_to_one },
  // MSELECT on MSTACK is replaced with nothing
  { UP(.ops = OPS(OP_MSELECT), .name = "ms", SRC(UP(.ops = OPS(OP_MSTACK), .name = "mstack"))), mselect_mstack },
  // MSELECT must select a base, if there are views apply them after selecting the base
  { UP(.ops = OPS(OP_MSELECT), .name = "ms", SRC(UP(.ops = OPS(OP_VIEW), .name = "view", SRC(UVAR("base"))))), mselect_view },
  // move view through MSTACK
  { UP(.ops = OPS(OP_MSTACK), .name = "ms", SRC_REPEAT(UP(.ops = OPS(OP_VIEW)))), mstack_reorder_view },
  // move shrink before MSTACK
  { UP(.ops = OPS(OP_VIEW), .name = "view", SRC(UP(.ops = OPS(OP_MSTACK), .name = "ms"))), mstack_early_shrink },
};

/* ---- multi functions ---- */

// elementwise op on MULTI sources: shard the unsharded ones, reshard the mismatched ones
static UOp *alu_multi(const Match *m, void *ctx) {
  UOp *root = m_get(m, "root");
  bool has_multi = false; /* custom_early_reject={MULTI}: some source is a MULTI */
  for (int i = 0; i < root->nsrc; i++) has_multi |= root->src[i]->op == OP_MULTI;
  if (!has_multi) return NULL;
  const Value *d0 = u_device(root->src[0]);
  for (int i = 1; i < root->nsrc; i++)
    if (u_device(root->src[i]) != d0) tg_fail(TG_EINPUT, "all buffers must have the same device");
  int axis = u_axis(root);
  if (axis < 0) tg_fail(TG_EINPUT, "alu_multi: no axis");
  UOp **srcs = arena_alloc(ga(), sizeof(UOp *) * (size_t)root->nsrc);
  for (int i = 0; i < root->nsrc; i++) {
    UOp *mlb = root->src[i];
    int ma = u_axis(mlb);
    if (ma == axis) {
      /* same axis, just copy through */
      if (mlb->op != OP_MULTI) tg_fail(TG_EINPUT, "alu_multi: same axis on a non-MULTI source");
      srcs[i] = mlb->src[0];
    } else if (ma < 0) {
      /* no axis, shard it */
      if (mlb->op == OP_MULTI) tg_fail(TG_EINPUT, "alu_multi: MULTI without axis");
      srcs[i] = shard(mlb, axis);
    } else {
      /* axis mismatch, unshard it, send it to all devices, and shard it correctly */
      if (mlb->op != OP_MULTI) tg_fail(TG_EINPUT, "alu_multi: axis mismatch on a non-MULTI source");
      srcs[i] = shard(allreduce(unshard(mlb->src[0], maxis(mlb)), OP_ADD, dev_uop(udev(mlb))), axis);
    }
  }
  return multi(u_alu((Op)root->op, root->nsrc, srcs), axis);
}

// reduce: all-reduce on sharded axes, piecewise otherwise
static UOp *reduce_multi(const Match *m, void *ctx) {
  UOp *root = m_get(m, "root"), *mu = m_get(m, "multi");
  Op op = root->arg->items[0]->op;
  const Value *ax = root->arg->items[1];
  int *axis = arena_alloc(ga(), sizeof(int) * (size_t)(ax->n + 1));
  bool on_shard = false;
  for (int i = 0; i < ax->n; i++) { axis[i] = (int)ax->items[i]->i; on_shard |= axis[i] == maxis(mu); }
  UOp *r = u_r(mu->src[0], op, ax->n, axis);
  /* all-reduce on sharded axes */
  if (on_shard) return allreduce(r, op, dev_uop(udev(mu)));
  /* reduce on non sharded axes, piecewise is fine */
  return multi(r, maxis(mu));
}

// reshape: the sharded axis keeps its items on each shard
static UOp *reshape_multi(const Match *m, void *ctx) {
  UOp *root = m_get(m, "root"), *mu = m_get(m, "multi");
  SList arg = sl_of_value(root->arg);
  int new_axis = u_axis(root);
  if (new_axis < 0) return multi(u_reshape(mu->src[0], arg), -1); /* fails: multi None is no longer supported */
  if (!si_eq(sl_prod(u_shape(mu)), sl_prod(arg))) tg_fail(TG_EINPUT, "reshape must maintain prod(shape)");
  SList s0 = u_shape(mu->src[0]);
  int ax = maxis(mu);
  Sint num = sl_prod(sl(s0.n - ax, s0.v + ax)), den = sl_prod(sl(arg.n - new_axis - 1, arg.v + new_axis + 1));
  Sint rem = si_mod(num, den);
  if (!si_is_int(rem) || rem.c != 0) tg_fail(TG_EINPUT, "reshape cannot move items between shards");
  Sint *ns = arena_alloc(ga(), sizeof(Sint) * (size_t)(arg.n + 1));
  for (int a = 0; a < arg.n; a++) ns[a] = a != new_axis ? arg.v[a] : si_floordiv(num, den);
  return multi(u_reshape(mu->src[0], sl(arg.n, ns)), new_axis);
}

/* _shape_to_single_shard */
static SList shape_to_single_shard(int axis, SList shape, UOp *lb) {
  Sint *out = arena_alloc(ga(), sizeof(Sint) * (size_t)(shape.n + 1));
  for (int a = 0; a < shape.n; a++) out[a] = a == axis ? u_shape(lb).v[axis] : shape.v[a];
  return sl(shape.n, out);
}

// expand: not on the sharded axis
static UOp *expand_multi(const Match *m, void *ctx) {
  UOp *root = m_get(m, "root"), *mu = m_get(m, "multi");
  SList arg = sl_of_value(root->arg);
  int ax = maxis(mu);
  if (!si_eq(arg.v[ax], u_shape(mu).v[ax])) tg_fail(TG_EINPUT, "expand not supported on sharded axis");
  return multi(u_expand(mu->src[0], shape_to_single_shard(ax, arg, mu->src[0])), ax);
}

// pad: not on the sharded axis
static UOp *pad_multi(const Match *m, void *ctx) {
  UOp *root = m_get(m, "root"), *mu = m_get(m, "multi");
  Sint *arg = pairs_of(root->arg);
  int ax = maxis(mu);
  if (!(si_eq(arg[2 * ax], si(0)) && si_eq(arg[2 * ax + 1], si(0)))) tg_fail(TG_EINPUT, "padding not supported on the sharded axis");
  return multi(u_pad(mu->src[0], arg), ax);
}

// permute: all permutes supported
static UOp *permute_multi(const Match *m, void *ctx) {
  UOp *root = m_get(m, "root"), *mu = m_get(m, "multi");
  int *perm = arena_alloc(ga(), sizeof(int) * (size_t)(root->arg->n + 1));
  for (int i = 0; i < root->arg->n; i++) perm[i] = (int)root->arg->items[i]->i;
  return multi(u_permute(mu->src[0], perm), u_axis(root));
}

// shrink: the whole sharded axis, or exactly one shard of it
static UOp *shrink_multi(const Match *m, void *ctx) {
  UOp *root = m_get(m, "root"), *mu = m_get(m, "multi");
  Sint *arg = pairs_of(root->arg);
  SList mshape = u_shape(mu);
  int ax = maxis(mu);
  bool whole = si_eq(arg[2 * ax], si(0)) && si_eq(arg[2 * ax + 1], mshape.v[ax]);
  int bi = bounds_index(mu, arg[2 * ax], arg[2 * ax + 1]);
  if (!whole && bi < 0) tg_fail(TG_EINPUT, "shrinking not supported on the sharded axis");
  if (bi >= 0 && !whole) {
    for (int i = 0; i < mshape.n; i++)
      if (i != ax && !(si_eq(arg[2 * i], si(0)) && si_eq(arg[2 * i + 1], mshape.v[i])))
        tg_fail(TG_EINPUT, "cannot shrink sharded and non-sharded axis at the same time");
    /* shrink on the shard axis is only allowed when result is a single partition: copy it to all the devices */
    return copy_to_device(mu->src[0], dev_uop(udev(mu)), bi);
  }
  Sint *na = arena_alloc(ga(), sizeof(Sint) * (size_t)(2 * mshape.n + 1));
  for (int a = 0; a < mshape.n; a++) {
    if (a == ax) { na[2 * a] = si(0); na[2 * a + 1] = u_shape(mu->src[0]).v[ax]; }
    else { na[2 * a] = arg[2 * a]; na[2 * a + 1] = arg[2 * a + 1]; }
  }
  return multi(u_shrink(mu->src[0], na), ax);
}

// flip: not on the sharded axis
static UOp *flip_multi(const Match *m, void *ctx) {
  UOp *root = m_get(m, "root"), *mu = m_get(m, "multi");
  bool *fl = arena_alloc(ga(), sizeof(bool) * (size_t)(root->arg->n + 1));
  for (int i = 0; i < root->arg->n; i++) fl[i] = root->arg->items[i]->b;
  int ax = maxis(mu);
  if (fl[ax]) tg_fail(TG_EINPUT, "flipping not supported on sharded axis");
  return multi(u_flip(mu->src[0], fl), ax);
}

// from multiple devices -> one
static UOp *copy_multi(const Match *m, void *ctx) {
  UOp *mu = m_get(m, "multi"), *device = m_get(m, "device");
  return allreduce(unshard(mu->src[0], maxis(mu)), OP_ADD, device);
}

// assign to a MULTI: the axes must match
static UOp *assign_multi(const Match *m, void *ctx) {
  UOp *dest = m_get(m, "dest"), *src = m_get(m, "src");
  if (u_axis(dest) != u_axis(src)) tg_fail(TG_EINPUT, "axis must match in assign %d != %d", u_axis(dest), u_axis(src));
  UOp *d0 = dest->src[0];
  return multi(uop2(OP_ASSIGN, d0->dtype, d0, src->src[0], NULL), u_axis(src));
}

// allreduce of a MULTI is an allreduce of each shard
static UOp *allreduce_multi(const Match *m, void *ctx) {
  UOp *mu = m_get(m, "multi"), *device = m_get(m, "device"), *red = m_get(m, "red");
  return multi(allreduce(mu->src[0], red->arg->op, device), maxis(mu));
}

// unary passthrough ops apply to the shard
static UOp *passthrough_multi(const Match *m, void *ctx) {
  UOp *root = m_get(m, "root"), *mu = m_get(m, "multi");
  return multi(uop_replace(root, NULL, 1, &mu->src[0], NULL, NULL), maxis(mu));
}

/* NOTE: this is the same pattern as Ops.UNROLL */
static const Rule multi_pm[] = {
  // elementwise ops on MULTI
  { UP(.groups = G_ALU, .name = "root", .early_reject = OPS(OP_MULTI)), alu_multi },
  // reduce on MULTI
  { UP(.ops = OPS(OP_REDUCE_AXIS), .name = "root", SRC(UP(.ops = OPS(OP_MULTI), .name = "multi"))), reduce_multi },
  // reshape on MULTI
  { UP(.ops = OPS(OP_RESHAPE), .name = "root", SRC(UP(.ops = OPS(OP_MULTI), .name = "multi"))), reshape_multi },
  // expand on MULTI
  { UP(.ops = OPS(OP_EXPAND), .name = "root", SRC(UP(.ops = OPS(OP_MULTI), .name = "multi"))), expand_multi },
  // pad on MULTI
  { UP(.ops = OPS(OP_PAD), .name = "root", SRC(UP(.ops = OPS(OP_MULTI), .name = "multi"))), pad_multi },
  // permute on MULTI
  { UP(.ops = OPS(OP_PERMUTE), .name = "root", SRC(UP(.ops = OPS(OP_MULTI), .name = "multi"))), permute_multi },
  // shrink on MULTI
  { UP(.ops = OPS(OP_SHRINK), .name = "root", SRC(UP(.ops = OPS(OP_MULTI), .name = "multi"))), shrink_multi },
  // flip on MULTI
  { UP(.ops = OPS(OP_FLIP), .name = "root", SRC(UP(.ops = OPS(OP_MULTI), .name = "multi"))), flip_multi },
  // assign MULTI to MULTI
  { UP(.ops = OPS(OP_ASSIGN), SRC(UP(.ops = OPS(OP_MULTI), .name = "dest"), UP(.ops = OPS(OP_MULTI), .name = "src"))), assign_multi },
  // copy MULTI to one device
  { UP(.ops = OPS(OP_COPY), SRC(UP(.ops = OPS(OP_MULTI), .name = "multi"), UP(.ops = OPS(OP_DEVICE), .name = "device"))), copy_multi },
  // allreduce of MULTI
  { UP(.ops = OPS(OP_ALLREDUCE), .name = "red",
       SRC(UP(.ops = OPS(OP_MULTI), .name = "multi"), UP(.ops = OPS(OP_DEVICE), .name = "device"))), allreduce_multi },
  // CAST/BITCAST/CONTIGUOUS/DETACH/CONTIGUOUS_BACKWARD/FUSE pass through
  { UP(.ops = OPS(OP_CAST, OP_BITCAST, OP_CONTIGUOUS, OP_DETACH, OP_CONTIGUOUS_BACKWARD, OP_FUSE), .name = "root",
       SRC(UP(.ops = OPS(OP_MULTI), .name = "multi"))), passthrough_multi },
};

void multi_init(void) {
  if (pm_multi) return;
  pm_init();
  pm_replace_allreduce = pm_new(replace_allreduce, RULES_N(replace_allreduce));
  PM *mp = pm_new(multi_pm, RULES_N(multi_pm));
  pm_multi = pm_concat(2, (PM *const[]){mp, pm_replace_allreduce});
}
