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
 * front of its open inner loop, so a value found late still lands before the loop that needs it.
 *
 * Thread lowering (GPU targets with LOCAL/GROUP/GROUPTOP/SWAP opts, tinygrad's lowerer +
 * add_gpudims): every merged axis' index is the sum of its pieces (kopt_pieces) times their
 * weights, unravelled over the axes it merges (a ShapeTracker read at such an index vector is
 * reshaped to the merged shape and indexed at the merged indices, as tinygrad's kernel reshapes every
 * ShapeTracker: no division and modulo to undo); GLOBAL pieces read SPECIAL gidx indices, LOCAL and
 * GROUP pieces lidx, UPCAST/UNROLL pieces constants (one index vector per combination), REDUCE
 * pieces a RANGE per reduce. A grouped reduce stores each thread's partial value to the local
 * buffer (those STOREs are linearized first), then a barrier, then the final stores open an IF
 * (only the threads of group index 0) whose loads of the partials carry the IF as a source so they
 * stay inside it; the IF is a scope like a loop (it has a RANGE-like id for the free-range sets). */
#include "codegen.h"
#include "../schedule/passes.h"
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
  PtrVec recs;           /* (idx, valid, ShapeTracker or NULL) of LOADs, STOREs and masked CONSTs */
  Map recd;              /* the nodes recorded in recs */
  PtrVec reds;           /* each REDUCE_AXIS's source shape (SList*), once per node */
  PtrVec rednodes;       /* those REDUCE_AXIS nodes, in the same order */
  int out_rec;           /* where the last STORE's pair is in recs (it is sts[0], not a buffer again) */
  UOp *out_idx, *out_valid; /* the last STORE's: Kernel.sts[0] */
  const int *fac; int nfac; /* per full-shape axis the opts' upcast/unroll factor (NULL: no opts) */
  const KDigits *fdig;      /* per full-shape axis the splits that make its factor (kopt_factors' dig), or NULL */
  const int *grp;        /* per full-shape axis: the first axis of its merged loop, or -1 */
  const Sint *fsz;       /* the full shape without opts (the axes fac and grp index) */
  const int64_t *fto;    /* PADTO: per full-shape axis its padded size (0: not padded; NULL: none) */
  Map rmap;              /* key(REDUCE_AXIS, axis) -> its RANGE, shared by every index it is asked at */
  Map flatof;            /* idx_key of a VIEW's source index vector -> Flat: the flat offset it unravels */
  Map midxof;            /* idx_key of an index vector over the F axes -> UOp*[kx->n],
                          * the merged axes' indices it was unravelled from (midx_put) */
  /* thread lowering (pc NULL: the loop lowering) */
  const KPieces *pc;     /* the kernel's axes after opts */
  const KAxes *kx;       /* merged axis m is F axes kx->kept[lo[m]..hi[m]] */
  int *fm;               /* per F axis its merged axis (-1: size 1) */
  UOp **pvar;            /* per piece: its SPECIAL index (GLOBAL, LOCAL, GROUP pieces) */
  PtrVec specials;       /* the SPECIALs made */
  int64_t gsize[3], lsize[3];
  UOp *ifnode;           /* the grouped reduce's IF (NULL: none) */
  UOp *lbuf;             /* its DEFINE_LOCAL */
  const DType *lelem;    /* the local buffer's element type */
  int64_t nslot;         /* partial-value slots used (one per reduce instance) */
  PtrVec lstores;        /* STOREs of partial values into lbuf */
  PtrVec grouped;        /* the REDUCE_AXIS nodes grouped */
  PtrVec tloops;         /* RANGEs of symbolic GLOBAL axes (loops in every thread) */
  Map redseen;           /* key(REDUCE_AXIS, F axis) seen */
  PtrVec redaxes;        /* the F axis (intptr_t) of each distinct (REDUCE_AXIS, F axis) pair */
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
/* PADTO: an index vector inside padded loops also carries the pad mask pv (the padded indices are
 * below the old ends), as one more source; every LOAD, STORE and masked constant under it is masked
 * by it too, which is what tinygrad's padded ShapeTrackers do */
static UOp *idx_keyp(LCtx *c, int n, UOp *const *idx, UOp *pv) {
  if (!pv) return idx_key(n, idx);
  UOp **s = arena_alloc(c->a, sizeof(UOp *) * (size_t)(n + 1));
  memcpy(s, idx, sizeof(UOp *) * (size_t)n);
  s[n] = pv;
  return uop_new(OP_SINK, dt_void, n + 1, s, v_str("tgc.idxp"), NULL);
}
static bool key_padded(const UOp *k) { return k->arg->kind == V_STR && strcmp(k->arg->s, "tgc.idxp") == 0; }
static int key_n(const UOp *k) { return key_padded(k) ? k->nsrc - 1 : k->nsrc; }
static UOp *key_pv(const UOp *k) { return key_padded(k) ? k->src[k->nsrc - 1] : NULL; }
static UOp *pad_and(UOp *pv, UOp *cond) { return pv ? u_and(pv, cond) : cond; }
static UOp *valid_and(UOp *valid, UOp *pv) { return !pv ? valid : is_true(valid) ? pv : u_and(valid, pv); }
static UOp *memo_key(UOp *node, UOp *ikey) { return uop2(OP_NOOP, dt_void, node, ikey, v_str("tgc.lower")); }

/* tinygrad's unravel(shape, offset): ((offset // acc) % d) per axis, simplified; in_range: offset is
 * below the shape's size wherever it is used, and the outermost axis (of size > 1) is offset // acc */
static void unravel_to(const SList *s, UOp *flat, UOp **out, bool in_range) {
  Sint acc = si(1);
  int outer = -1;
  for (int k = 0; k < s->n && outer < 0 && in_range; k++) if (!si_is_int(s->v[k]) || s->v[k].c != 1) outer = k;
  for (int k = s->n - 1; k >= 0; k--) {
    if (si_is_int(s->v[k]) && s->v[k].c == 1) { out[k] = uop_const_int(dt_int, 0); continue; }
    UOp *q = (si_is_int(acc) && acc.c == 1) ? flat : u_idiv(flat, si_uop(acc));
    out[k] = u_simplify(k == outer ? q : u_mod(q, si_uop(s->v[k])));
    acc = si_mul(acc, s->v[k]);
  }
}
static void unravel(const SList *s, UOp *flat, UOp **out) { unravel_to(s, flat, out, false); }
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
/* the (idx, valid) of node u's ShapeTracker, once per node (tinygrad's Kernel.bufs are unique UOps) */
static void rec_index(LCtx *c, UOp *u, UOp *idx, UOp *valid, const ShapeTracker *st) {
  bool isnew;
  void **slot = map_slot(&c->recd, u, uop_h(u), &isnew);
  if (!isnew) return;
  *slot = (void *)(intptr_t)(c->recs.n + 1);   /* where its triple is in recs, + 1 */
  vec_push(&c->recs, idx); vec_push(&c->recs, valid); vec_push(&c->recs, (void *)st);
}
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
 * source has the output's rank and the output is 1 on every axis the reduce reduces, else an axis
 * appended after the others, for each of its axes in the reduce's order. The choice is the
 * reduce's, not each axis': view_right swizzles a reduce whole, appending its axes so, and where it
 * leaves a contiguous view over the reduce (a reshape: std over axes 0 and 2 of (16, 33, 5) reduces
 * (33, 16, 5) over 1 and 2 and stores (1, 33, 1)) tinygrad's kernel runs in the reduce's frame,
 * whose reduce axes Kernel moves last in the same order (r_33_16_5; tgc made axis 2 the output's
 * and appended axis 1, r_33_5_16, and summed in another order) */
static bool reduces_in_place(LCtx *c, UOp *r, const SList *xs) {
  if (xs->n != c->nout) return false;
  const Value *ax = r->arg->items[1];
  for (int k = 0; k < ax->n; k++) {
    int64_t a = ax->items[k]->i;
    if (a < 0 || a >= xs->n) return false;
    if (si_is_int(xs->v[a]) && xs->v[a].c == 1) continue;
    if (!si_is_int(c->oshape[a]) || c->oshape[a].c != 1) return false;
  }
  return true;
}
static int reduce_axis_of(LCtx *c, UOp *r, int a, Sint size) {
  const SList *xs = shape_of(c, r->src[0]);
  if (reduces_in_place(c, r, xs) && a < c->nout) {
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

/* reduce r reduces full-shape axis fa (for tinygrad's "parallel reduces" check: two reduces of one
 * axis; a reduce over a swizzled source has axes of its own, as in tinygrad's full shape) */
static UOp *reduced_key(UOp *r, int fa) { return uop2(OP_NOOP, dt_void, r, uop_const_int(dt_int, fa), v_str("tgc.reduced")); }
/* reduce r, with source shape xs, once per node: Kernel.reduceops for kernel_axes */
static void note_reduce(LCtx *c, UOp *r, const SList *xs) {
  bool isnew;
  map_slot(&c->recd, r, uop_h(r), &isnew);
  if (isnew) { vec_push(&c->reds, (void *)xs); vec_push(&c->rednodes, r); }
}
static void note_reduced(LCtx *c, UOp *r, int fa) {
  UOp *key = reduced_key(r, fa);
  bool isnew;
  map_slot(&c->redseen, key, uop_h(key), &isnew);
  if (isnew) vec_push(&c->redaxes, (void *)(intptr_t)fa);
}

/* the RANGE of axis a of reduce r (end: the loop count after an unroll), one per (r, a) so the
 * reduces an upcast makes of one REDUCE_AXIS run in one loop */
static UOp *reduce_range(LCtx *c, UOp *r, int a, int fa, Sint end) {
  UOp *key = uop2(OP_NOOP, dt_void, r, uop_const_int(dt_int, a), v_str("tgc.range"));
  bool isnew;
  void **slot = map_slot(&c->rmap, key, uop_h(key), &isnew);
  if (isnew) {
    set_raxis(c, c->next_range, fa);
    *slot = uop1(OP_RANGE, dt_int, si_uop(end), v_int(c->next_range++));
  }
  return *slot;
}
/* the opts' factor for full-shape axis f of a loop of size n (1 when none or it does not divide) */
static int64_t factor_of(LCtx *c, int f, Sint n) {
  if (!c->fac || f < 0 || f >= c->nfac || c->fac[f] <= 1 || !si_is_int(n) || n.c % c->fac[f]) return 1;
  return c->fac[f];
}
/* PADTO: the loop size of full-shape axis f where a value's shape there is n: the padded size,
 * or n (not padded, or 1 there: tinygrad pads no ShapeTracker where it is 1) */
static Sint padded(LCtx *c, int f, Sint n) {
  if (!c->fto || f < 0 || f >= c->nfac || !c->fto[f] || !si_is_int(n) || n.c == 1 || (c->grp && c->grp[f] >= 0)) return n;
  return si(c->fto[f]);
}
/* pv and also index ix below end n */
static UOp *below(UOp *pv, UOp *ix, int64_t n) {
  UOp *cond = u_simplify(u_lti(ix, n));
  return is_true(cond) ? pv : pad_and(pv, cond);
}
/* the pad mask pv and also index ix below the old end n of axis f, when f is padded */
static UOp *pad_cond(LCtx *c, UOp *pv, int f, Sint n, UOp *ix) { return si_eq(padded(c, f, n), n) ? pv : below(pv, ix, n.c); }
/* the loop size of a merged group of size S led by axis f (padded: fto[f], the whole group's) */
static int64_t group_padded(LCtx *c, int f, int64_t S) { return c->fto && f < c->nfac && c->fto[f] ? c->fto[f] : S; }
/* index j of a loop split by K into RANGE r (NULL when the outer count is 1): r*K + j */
static UOp *split_index(UOp *r, int64_t K, int64_t j) {
  if (K == 1) return r;
  UOp *jc = uop_const_int(dt_int, j);
  return r ? u_simplify(u_add(u_muli(r, K), jc)) : jc;
}


/* ---------------------------------------------------------------- thread lowering: indices */
/* merged axis m's index: the sum of val[p] * weight over its pieces p (val[p] NULL: not counted) */
static UOp *merged_index(LCtx *c, int m, UOp *const *val) {
  UOp *r = NULL;
  for (int p = 0; p < c->pc->n; p++) {
    if (c->pc->v[p].m != m || !val[p]) continue;
    UOp *t = c->pc->v[p].weight == 1 ? val[p] : u_muli(val[p], c->pc->v[p].weight);
    r = r ? u_add(r, t) : t;
  }
  return r ? u_simplify(r) : uop_const_int(dt_int, 0);
}
/* per F axis of merged axis m (into out, indexed by F axis): idx unravelled over their sizes */
static void merged_unravel(LCtx *c, int m, UOp *idx, UOp **out) {
  const KAxes *k = c->kx;
  int n = k->hi[m] - k->lo[m] + 1;
  if (n == 1) { out[k->kept[k->lo[m]]] = idx; return; }   /* its pieces cover exactly the axis */
  Sint *sz = arena_alloc(c->a, sizeof(Sint) * (size_t)(n + 1));
  UOp **o = arena_alloc(c->a, sizeof(UOp *) * (size_t)(n + 1));
  for (int i = 0; i < n; i++) sz[i] = k->fsize[k->kept[k->lo[m] + i]];
  SList sl = {n, sz};
  unravel(&sl, idx, o);
  for (int i = 0; i < n; i++) out[k->kept[k->lo[m] + i]] = o[i];
}
/* the index vector vec over the F axes was unravelled from the merged axes' indices v (v[m], one
 * per merged axis: thread lowering's pieces, or the loop lowering's merged loops). tinygrad
 * reshapes every ShapeTracker of the kernel to the merged shape and indexes it with those, so a
 * contiguous run of axes costs one multiply where raveling the unravelled indices leaves a
 * division and a modulo per axis (index_st) */
static void midx_put(LCtx *c, int n, UOp *const *vec, UOp **v) {
  UOp *k = idx_key(n, vec);
  bool isnew;
  void **slot = map_slot(&c->midxof, k, uop_h(k), &isnew);
  if (isnew) *slot = v;
}
static UOp **midx_get(LCtx *c, int n, UOp *const *vec) {
  UOp *k = idx_key(n, vec);
  return map_get(&c->midxof, k, uop_h(k), NULL);
}
/* st at the merged indices of index vector idx (n F axes), as tinygrad indexes it: reshaped to the
 * merged shape (ShapeTracker.reshape: the last view reshaped, or a view appended); false when idx
 * has no merged indices or st's shape is not the F axes' */
static bool index_st_merged(LCtx *c, const ShapeTracker *st, UOp *const *idx, int n, UOp **fi, UOp **valid) {
  const KAxes *k = c->kx;
  UOp **mv = n == k->nf ? midx_get(c, n, idx) : NULL;
  if (!mv) return false;
  SList sh = st_shape(st);
  for (int f = 0; f < n; f++) if (c->fm[f] < 0 && !(si_is_int(sh.v[f]) && sh.v[f].c == 1)) return false;
  Sint *ms = arena_alloc(c->a, sizeof(Sint) * (size_t)(k->n + 1));
  UOp **mi = arena_alloc(c->a, sizeof(UOp *) * (size_t)(k->n + 1));
  for (int m = 0; m < k->n; m++) {
    int64_t p = 1;
    for (int i = k->lo[m]; i <= k->hi[m]; i++) {
      Sint d = sh.v[k->kept[i]];
      if (!si_is_int(d)) return false;
      p *= d.c;
    }
    ms[m] = si(p);
    mi[m] = p == 1 ? uop_const_int(dt_int, 0) : mv[m];   /* mv has every merged axis (midx_put's callers fill them all) */
  }
  const ShapeTracker *rs = st_reshape(st, sl(k->n, ms));
  if (!rs) return false;
  st_to_indexed_uops(rs, mi, fi, valid);
  return true;
}
/* st_to_indexed_uops at index vector idx, or at its merged indices when the lowering recorded them
 * (thread lowering, and the loop lowering's merged loops) */
static void st_index_at(LCtx *c, const ShapeTracker *st, UOp *const *idx, int n, UOp **fi, UOp **valid) {
  if (!c->fm || !index_st_merged(c, st, idx, n, fi, valid)) st_to_indexed_uops(st, idx, fi, valid);
}
/* PADTO: pv and also merged axis m's index below its old size, when m is padded */
static UOp *merged_pad(LCtx *c, UOp *pv, int m, UOp *const *val) {
  const KAxes *k = c->kx;
  int lead = k->kept[k->lo[m]];
  if (!c->fto || !c->fto[lead]) return pv;
  int64_t S = 1;
  for (int i = k->lo[m]; i <= k->hi[m]; i++) S *= k->fsize[k->kept[i]].c;
  return below(pv, merged_index(c, m, val), S);
}
/* the linear index of pieces ps[0..n) (the first outermost) at values val, and their count */
static UOp *pieces_linear(LCtx *c, int n, const int *ps, UOp *const *val, int64_t *count) {
  UOp *r = NULL;
  int64_t w = 1;
  for (int i = n - 1; i >= 0; i--) {
    UOp *t = w == 1 ? val[ps[i]] : u_muli(val[ps[i]], w);
    r = r ? u_add(t, r) : t;
    w *= c->pc->v[ps[i]].size;
  }
  *count = w;
  return r ? u_simplify(r) : uop_const_int(dt_int, 0);
}

/* tinygrad's get_grouped_dims: launch dimensions dims[0..n) as at most 3 SPECIALs prefix0.. within
 * max (adjacent dimensions merge while there are more than 3 or one is too large); out[i] the index
 * of dims[i], sizes[d] the size of SPECIAL d; reverse: the last dimension is prefix0. false when
 * they do not fit (tinygrad would also split a dimension: not ported) */
static bool grouped_dims(LCtx *c, const char *prefix, int n, const int64_t *dims, const int64_t *max, bool reverse, UOp **out, int64_t *sizes) {
  if (!n) return true;
  int64_t *d = arena_alloc(c->a, sizeof(int64_t) * (size_t)n);
  int *start = arena_alloc(c->a, sizeof(int) * (size_t)(n + 1));
  for (int i = 0; i < n; i++) { d[i] = dims[reverse ? n - 1 - i : i]; start[i] = i; }
  int ln = n;
  for (;;) {
    bool over = ln > 3;
    for (int i = 0; i < ln && i < 3; i++) over |= d[i] > max[i];
    if (!over) break;
    int i = 0;
    while (i < 3 && !(i < ln - 1 && d[i] * d[i + 1] <= max[i])) i++;
    if (i == 3) return false;
    d[i] *= d[i + 1];
    for (int j = i + 1; j + 1 < ln; j++) { d[j] = d[j + 1]; start[j] = start[j + 1]; }
    ln--;
  }
  start[ln] = n;
  UOp **ret = arena_alloc(c->a, sizeof(UOp *) * (size_t)n);
  for (int g = 0; g < ln; g++) {
    UOp *sp = uop0(OP_SPECIAL, dt_int, v_tuplev(2, v_str(arena_printf(c->a, "%s%d", prefix, g)), v_int(d[g])));
    vec_push(&c->specials, sp);
    sizes[g] = d[g];
    UOp *idx = sp;
    for (int k = start[g]; k < start[g + 1]; k++) {
      int64_t dk = dims[reverse ? n - 1 - k : k];
      if (k + 1 < start[g + 1]) { ret[k] = u_simplify(u_modi(idx, dk)); idx = u_simplify(u_idivi(idx, dk)); }
      else ret[k] = idx;
    }
  }
  for (int i = 0; i < n; i++) out[reverse ? n - 1 - i : i] = ret[i];
  return true;
}
/* SPECIAL indices for the GLOBAL (gidx, reversed; idx under NOLOCALS) and LOCAL/GROUP (lidx) pieces */
static void thread_setup(LCtx *c, const KTarget *tg) {
  const KPieces *pc = c->pc;
  vec_init(&c->specials, c->a);
  vec_init(&c->lstores, c->a);
  vec_init(&c->grouped, c->a);
  c->pvar = arena_alloc(c->a, sizeof(UOp *) * (size_t)(pc->n + 1));
  int *gi = arena_alloc(c->a, sizeof(int) * (size_t)(pc->n + 1)), *li = arena_alloc(c->a, sizeof(int) * (size_t)(pc->n + 1)), ng = 0, nl = 0;
  int64_t *gd = arena_alloc(c->a, sizeof(int64_t) * (size_t)(pc->n + 1)), *ld = arena_alloc(c->a, sizeof(int64_t) * (size_t)(pc->n + 1));
  vec_init(&c->tloops, c->a);
  for (int p = 0; p < pc->n; p++) {
    const KPiece *x = &pc->v[p];
    if (x->size < 1 && x->type == KAX_GLOBAL) {
      /* a symbolic GLOBAL axis (never split) stays a loop in every thread: launch sizes are static */
      c->pvar[p] = uop1(OP_RANGE, dt_int, si_uop(c->kx->size[x->m]), v_int(c->next_range++));
      vec_push(&c->tloops, c->pvar[p]);
      continue;
    }
    if (x->size < 1 && x->type != KAX_REDUCE) tg_fail(TG_EINTERNAL, "thread lowering: a symbolic split axis");
    if (x->type == KAX_GLOBAL) { gi[ng] = p; gd[ng++] = x->size; }
    else if (x->type == KAX_LOCAL || x->type == KAX_GROUP) { li[nl] = p; ld[nl++] = x->size; }
    else if (x->type == KAX_LOOP) tg_fail(TG_EINTERNAL, "thread lowering: a LOOP axis");
  }
  UOp **go = arena_alloc(c->a, sizeof(UOp *) * (size_t)(ng + 1)), **lo = arena_alloc(c->a, sizeof(UOp *) * (size_t)(nl + 1));
  for (int d = 0; d < 3; d++) c->gsize[d] = c->lsize[d] = 1;
  if (!grouped_dims(c, pc->nolocals ? "idx" : "gidx", ng, gd, tg->global_max, true, go, c->gsize) ||
      !grouped_dims(c, "lidx", nl, ld, tg->local_max, false, lo, c->lsize))
    tg_fail(TG_EINTERNAL, "thread lowering: launch dimensions over the target's limits");
  for (int i = 0; i < ng; i++) c->pvar[gi[i]] = go[i];
  for (int i = 0; i < nl; i++) c->pvar[li[i]] = lo[i];
}

/* ---------------------------------------------------------------- lowering */
typedef struct Frame {
  UOp *node, *ikey, *key;
  int nch; UOp **chn, **chk;   /* children requests: node and index key */
  UOp *done;                   /* result when no children are needed */
  int nr; UOp **ranges;        /* REDUCE_AXIS: the new RANGEs */
  int ng; int *groups;         /* REDUCE_AXIS, thread lowering: its GROUP pieces */
  bool expanded;
} Frame;

static UOp *bare_of(UOp *u) { return uop0((Op)u->op, u->dtype, u->arg); }

static UOp *load_of(UOp *load, UOp *buf, UOp *idx, UOp *valid) {
  UOp *ix = is_true(valid) ? uop2(OP_INDEX, buf->dtype, buf, idx, NULL) : uop3(OP_INDEX, buf->dtype, buf, idx, valid, NULL);
  return uop1(OP_LOAD, load->dtype, ix, NULL);
}

/* REDUCE_AXIS u at index idx[0..n) under thread lowering: its merged axes' REDUCE pieces get a RANGE
 * each, UNROLL pieces a child per combination, GROUP pieces their lidx (the partial value; the
 * grouping stage follows in group_reduce) */
static void prepare_reduce_threads(LCtx *c, Frame *f, UOp *u, UOp *const *idx, int n, UOp *pv) {
  const KPieces *pc = c->pc;
  const SList *xs = shape_of(c, u->src[0]);
  const Value *ax = u->arg->items[1];
  note_reduce(c, u, xs);
  int nf = c->kx->nf, nm = c->kx->n;
  UOp **base = arena_alloc(c->a, sizeof(UOp *) * (size_t)(xs->n + 1));
  for (int k = 0; k < xs->n; k++) base[k] = k < n ? idx[k] : uop_const_int(dt_int, 0);
  int *srcax = arena_alloc(c->a, sizeof(int) * (size_t)(nf + 1)), *mfa = arena_alloc(c->a, sizeof(int) * (size_t)(nm + 1));
  bool *mine = arena_alloc(c->a, sizeof(bool) * (size_t)(nm + 1));
  for (int i = 0; i < nf; i++) srcax[i] = -1;
  for (int k = 0; k < ax->n; k++) {
    int a = (int)ax->items[k]->i;
    if (si_is_int(xs->v[a]) && xs->v[a].c == 1) { base[a] = uop_const_int(dt_int, 0); continue; }
    int fa = reduce_axis_of(c, u, a, xs->v[a]);
    if (fa >= nf || c->fm[fa] < 0) tg_fail(TG_EINTERNAL, "lower: a reduce axis outside the kernel's axes");
    srcax[fa] = a; mine[c->fm[fa]] = true; mfa[c->fm[fa]] = fa;
  }
  for (int m = 0; m < nm; m++)
    for (int i = c->kx->lo[m]; mine[m] && i <= c->kx->hi[m]; i++)
      if (srcax[c->kx->kept[i]] < 0) tg_fail(TG_EINTERNAL, "lower: a reduce covers part of a merged axis");
  UOp **val = arena_alloc(c->a, sizeof(UOp *) * (size_t)(pc->n + 1));
  int *un = arena_alloc(c->a, sizeof(int) * (size_t)(pc->n + 1)), nu = 0;
  f->ranges = arena_alloc(c->a, sizeof(UOp *) * (size_t)(pc->n + 1));
  f->groups = arena_alloc(c->a, sizeof(int) * (size_t)(pc->n + 1));
  f->nr = f->ng = 0;
  int64_t combos = 1;
  for (int p = 0; p < pc->n; p++) {
    const KPiece *x = &pc->v[p];
    if (!mine[x->m]) continue;
    if (x->type == KAX_REDUCE) {   /* symbolic: the whole merged axis, never split */
      Sint end = x->size > 0 ? si(x->size) : c->kx->size[x->m], ksz = c->kx->size[x->m];
      /* a reduce shorter there than the kernel (a fused arange's sum over 4 beside a sum over 32 on
       * the same axis) ranges over its own source, as tinygrad's lower_reduce_axis takes
       * x.src[0].shape and the loop lowering xs. Its opts split every ShapeTracker of the axis
       * alike ((n // k, k): the UNROLL pieces keep their k and their weights), so this outermost
       * piece is the source's size over the other pieces' product (one factor on the axis) */
      int f0 = c->kx->kept[c->kx->lo[x->m]];
      Sint own = xs->v[srcax[f0]];
      if (c->kx->lo[x->m] == c->kx->hi[x->m] && si_is_int(own) && si_is_int(end) && si_is_int(ksz) && own.c != ksz.c) {
        int64_t other = end.c ? ksz.c / end.c : 0;
        if (own.c > ksz.c || !other || ksz.c % end.c || own.c % other)
          tg_fail(TG_EINPUT, "lower: a reduce over %lld of a kernel axis of %lld that its opts split by %lld", (long long)own.c,
                  (long long)ksz.c, (long long)other);
        end = si(own.c / other);
      }
      /* a piece of 1 (the source's size is the other pieces'): no loop, index 0, as the loop
       * lowering leaves a reduce range of 1 out */
      if (si_is_int(end) && end.c == 1) { val[p] = uop_const_int(dt_int, 0); continue; }
      val[p] = reduce_range(c, u, 2000 + p, mfa[x->m], end);
      f->ranges[f->nr++] = val[p];
    }
    else if (x->type == KAX_GROUP) { val[p] = c->pvar[p]; f->groups[f->ng++] = p; }
    else if (x->type == KAX_UNROLL) { un[nu++] = p; combos *= x->size; }
    else tg_fail(TG_EINTERNAL, "lower: a reduce axis split into a %d piece", x->type);
  }
  f->nch = (int)combos;
  f->chn = arena_alloc(c->a, sizeof(UOp *) * (size_t)combos);
  f->chk = arena_alloc(c->a, sizeof(UOp *) * (size_t)combos);
  UOp **fi = arena_alloc(c->a, sizeof(UOp *) * (size_t)(nf + 1));
  /* the merged indices behind idx, when the source's axes are the F axes (no swizzled reduce) */
  UOp **pmv = n == nf && xs->n == nf ? midx_get(c, n, idx) : NULL;
  for (int a = 0; a < nf && pmv; a++) if (srcax[a] >= 0 && srcax[a] != a) pmv = NULL;
  for (int64_t t = 0; t < combos; t++) {
    int64_t q = t;
    for (int i = nu - 1; i >= 0; i--) { val[un[i]] = uop_const_int(dt_int, q % pc->v[un[i]].size); q /= pc->v[un[i]].size; }
    UOp **ni = arena_alloc(c->a, sizeof(UOp *) * (size_t)(xs->n + 1));
    memcpy(ni, base, sizeof(UOp *) * (size_t)xs->n);
    UOp **mv = NULL;
    if (pmv) {
      mv = arena_alloc(c->a, sizeof(UOp *) * (size_t)(nm + 1));
      memcpy(mv, pmv, sizeof(UOp *) * (size_t)nm);
    }
    for (int m = 0; m < nm; m++) {
      if (!mine[m]) continue;
      UOp *mi = merged_index(c, m, val);
      if (mv) mv[m] = mi;
      merged_unravel(c, m, mi, fi);
      for (int i = c->kx->lo[m]; i <= c->kx->hi[m]; i++) ni[srcax[c->kx->kept[i]]] = fi[c->kx->kept[i]];
    }
    if (mv) midx_put(c, xs->n, ni, mv);
    UOp *pvt = pv;   /* padded reduce axes: their merged indices below the old ends */
    for (int m = 0; m < nm; m++) if (mine[m]) pvt = merged_pad(c, pvt, m, val);
    f->chn[t] = u->src[0]; f->chk[t] = idx_keyp(c, xs->n, ni, pvt);
  }
}

/* the grouping stage of REDUCE_AXIS u whose thread's partial value is part (tinygrad's
 * get_optimized_ast local buffer + lower_store's BARRIER/IF): part goes to the local buffer at
 * (slot, local thread, group member), and inside the IF (group index 0) a REDUCE over the group
 * members' partials, read back after the barrier */
static UOp *group_reduce(LCtx *c, UOp *u, const Frame *f, UOp *part) {
  const KPieces *pc = c->pc;
  if (!c->lbuf) {
    /* half/bfloat16 partials are held as float already rounded to the type: stored as float */
    c->lelem = u->dtype->scalar == SC_HALF || u->dtype->scalar == SC_BFLOAT16 ? dt_float : u->dtype;
    c->lbuf = uop0(OP_DEFINE_LOCAL, dt_ptr(c->lelem, -1, AS_LOCAL), v_str("temp0"));
    UOp *gate = NULL;
    for (int p = 0; p < pc->n; p++) {
      if (pc->v[p].type != KAX_GROUP) continue;
      UOp *eq = uop2(OP_CMPEQ, dt_bool, c->pvar[p], uop_const_int(dt_int, 0), NULL);
      gate = gate ? uop2(OP_AND, dt_bool, gate, eq, NULL) : eq;
    }
    c->ifnode = uop1(OP_IF, dt_void, gate, v_int(c->next_range++));
  }
  bool seen = false;
  for (int i = 0; i < c->grouped.n; i++) seen |= c->grouped.v[i] == u;
  if (!seen) vec_push(&c->grouped, u);
  int *loc = arena_alloc(c->a, sizeof(int) * (size_t)(pc->n + 1)), nl = 0;
  for (int p = 0; p < pc->n; p++) if (pc->v[p].type == KAX_LOCAL) loc[nl++] = p;
  int64_t NL, NG;
  UOp *lin = pieces_linear(c, nl, loc, c->pvar, &NL), *g1 = pieces_linear(c, f->ng, f->groups, c->pvar, &NG);
  UOp *row = u_simplify(u_add(u_muli(uop_const_int(dt_int, c->nslot++), NL), lin));
  UOp *ix1 = uop2(OP_INDEX, c->lbuf->dtype, c->lbuf, u_simplify(u_add(u_muli(row, NG), g1)), NULL);
  vec_push(&c->lstores, uop2(OP_STORE, dt_void, ix1, part, NULL));
  UOp **val = arena_alloc(c->a, sizeof(UOp *) * (size_t)(pc->n + 1));
  UOp **s = arena_alloc(c->a, sizeof(UOp *) * (size_t)(f->ng + 2));
  for (int k = 0; k < f->ng; k++) {
    int p = f->groups[k];
    val[p] = s[1 + k] = reduce_range(c, u, 3000 + p, c->kx->kept[c->kx->lo[pc->v[p].m]], si(pc->v[p].size));
  }
  UOp *g2 = pieces_linear(c, f->ng, f->groups, val, &NG);
  UOp *ix2 = uop2(OP_INDEX, c->lbuf->dtype, c->lbuf, u_simplify(u_add(u_muli(row, NG), g2)), NULL);
  s[0] = uop2(OP_LOAD, c->lelem, ix2, c->ifnode, NULL);
  return uop_new(OP_REDUCE, u->dtype, f->ng + 1, s, v_ops(u->arg->items[0]->op), NULL);
}

/* st_to_indexed_uops at an index vector of n indices: one per dimension of st, or the AST's shapes
 * disagree (a graph's own KERNEL rows can make them) */
static void check_rank(const ShapeTracker *st, int n) {
  int rank = st_shape(st).n;
  if (rank != n) tg_fail(TG_EINPUT, "kernel AST: a view of %d dimensions is read at %d indices (its shape is not its user's)", rank, n);
}
/* an index vector a VIEW made by unravelling its flat offset over its source's shape */
typedef struct Flat { UOp *flat; const SList *shape; } Flat;
static bool sl_same(const SList *a, const SList *b);
/* st's (flat index, valid) at index vector idx. A contiguous ShapeTracker of the shape a VIEW above
 * unravelled its offset over gives that offset back: tinygrad composes the two views into one
 * (ShapeTracker.__add__ of a contiguous view is the other), where raveling the unravelled indices
 * leaves divisions and modulos that do not fold where the offset runs past the shape (a padded view:
 * the mask gates those) */
static void index_st(LCtx *c, const ShapeTracker *st, UOp *const *idx, int n, UOp **fi, UOp **valid) {
  check_rank(st, n);
  if (st->nviews == 1 && st_contiguous(st)) {
    UOp *k = idx_key(n, idx);
    const Flat *f = map_get(&c->flatof, k, uop_h(k), NULL);
    SList sh = st_shape(st);
    if (f && sl_same(f->shape, &sh)) { *fi = f->flat; *valid = c_true(); return; }
  }
  st_index_at(c, st, idx, n, fi, valid);
}

static void reduce_midx_put(LCtx *c, UOp *u, const SList *xs, UOp **ni, UOp *const *pmv, const int *gfa, const int *gl, int ngrp,
                            const int *glead, UOp *const *gix);
/* fill f's children (or f->done) for node at index vector ikey */
static void lower_prepare(LCtx *c, Frame *f) {
  UOp *u = f->node, *const *idx = f->ikey->src, *pv = key_pv(f->ikey);
  int n = key_n(f->ikey);
  f->nch = 0;
  switch (u->op) {
  case OP_CONST: case OP_DEFINE_VAR: {
    /* a bare one (no view of its own) is masked by the views above it alone */
    if (!u->nsrc) { f->done = !pv || is_true(pv) ? u : u_where(pv, u, zero_of(u->dtype)); return; }
    UOp *fi, *valid;
    index_st(c, u->src[0]->arg->st, idx, n, &fi, &valid);
    rec_index(c, u, fi, valid, u->src[0]->arg->st);
    UOp *b = bare_of(u);
    valid = valid_and(valid, pv);
    f->done = is_true(valid) ? b : u_where(valid, b, zero_of(u->dtype));
    return;
  }
  case OP_LOAD: {
    UOp *buf = u->src[0];
    if (buf->op == OP_DEFINE_GLOBAL) {
      UOp *i0 = n ? idx[0] : uop_const_int(dt_int, 0);
      rec_index(c, u, i0, c_true(), NULL);
      f->done = load_of(u, buf, i0, valid_and(c_true(), pv));
      return;
    }
    if (buf->op == OP_VIEW && buf->src[0]->op == OP_DEFINE_GLOBAL) {
      UOp *fi, *valid;
      index_st(c, buf->arg->st, idx, n, &fi, &valid);
      rec_index(c, u, fi, valid, buf->arg->st);
      f->done = load_of(u, buf->src[0], fi, valid_and(valid, pv));
      return;
    }
    tg_fail(TG_EINPUT, "LOAD of %s is not a buffer", op_names[buf->op]);
  }
  case OP_VIEW: {
    UOp *x = u->src[0], *fi, *valid;
    if (x->op == OP_LOAD && x->src[0]->op == OP_DEFINE_GLOBAL) {
      index_st(c, u->arg->st, idx, n, &fi, &valid);
      rec_index(c, u, fi, valid, u->arg->st);
      f->done = load_of(x, x->src[0], fi, valid_and(valid, pv));
      return;
    }
    if (x->op == OP_DEFINE_GLOBAL) tg_fail(TG_EINPUT, "VIEW of a DEFINE_GLOBAL used as a value");
    /* after the view rewrites (lower_kernel_for) the views left above a value are a masked
     * constant's (tinygrad's VALID: merge_views keeps a masked view off the constant's own) and
     * any view_right could not move. The source's indices come from the view's flat offset,
     * simplified before any int64 upcast (a flat offset past int32 must not leave casts that stop
     * the divisions from folding); the mask is upcast as index_st's is */
    check_rank(u->arg->st, n);
    st_to_indexed_uops_int(u->arg->st, idx, &fi, &valid);
    valid = st_index_upcast(valid);
    /* tinygrad pushes this view onto the buffers below; its mask blocks the same merges */
    if (!is_true(valid)) rec_index(c, u, uop_const_int(dt_int, 0), valid, u->arg->st);
    /* and its mask with it (view_left through ALU ops, swizzle_reduceop into a reduce's source):
     * the loads and constants below read 0 where it is false, and the ops above them compute on
     * those zeros, so a masked-off value is f(0) (exp2(0) = 1), not 0 */
    UOp *cpv = is_true(valid) ? pv : pad_and(pv, valid);
    const SList *xs = shape_of(c, x);
    int xn = xs ? xs->n : 0;
    UOp **ni = arena_alloc(c->a, sizeof(UOp *) * (size_t)(xn + 1));
    if (xs) {
      /* the view maps every valid index into its source (tinygrad composes it with the source's
       * contiguous ShapeTracker into one view: ShapeTracker.__add__ of a contiguous view is the
       * other), and the mask gates the rest: no wrap-around on the outermost axis */
      unravel_to(xs, fi, ni, true);
      for (int k = 0; k < xn; k++) ni[k] = st_index_upcast(ni[k]);
      UOp *k = idx_key(xn, ni);
      bool isnew;
      void **slot = map_slot(&c->flatof, k, uop_h(k), &isnew);
      if (isnew) {
        Flat *fl = arena_alloc(c->a, sizeof *fl);
        *fl = (Flat){st_index_upcast(fi), xs};
        *slot = fl;
      }
    }
    f->nch = 1;
    f->chn = arena_alloc(c->a, sizeof(UOp *));
    f->chk = arena_alloc(c->a, sizeof(UOp *));
    f->chn[0] = x; f->chk[0] = idx_keyp(c, xn, ni, cpv);
    return;
  }
  case OP_REDUCE_AXIS: {
    if (c->pc) { prepare_reduce_threads(c, f, u, idx, n, pv); return; }
    /* the reduced axes get their RANGEs; an unrolled one (factor K) is asked at r*K + j for every
     * j, and the source's values at those index vectors are folded with the reduce op */
    const SList *xs = shape_of(c, u->src[0]);
    const Value *ax = u->arg->items[1];
    note_reduce(c, u, xs);
    UOp **base = arena_alloc(c->a, sizeof(UOp *) * (size_t)(xs->n + 1));
    for (int k = 0; k < xs->n; k++) base[k] = k < n ? idx[k] : uop_const_int(dt_int, 0);
    f->ranges = arena_alloc(c->a, sizeof(UOp *) * (size_t)(ax->n + 1));
    f->nr = 0;
    int nu = 0, *ua = arena_alloc(c->a, sizeof(int) * (size_t)(ax->n + 1)), *ufa = arena_alloc(c->a, sizeof(int) * (size_t)(ax->n + 1));
    int64_t combos = 1, *uk = arena_alloc(c->a, sizeof(int64_t) * (size_t)(ax->n + 1));
    UOp **ur = arena_alloc(c->a, sizeof(UOp *) * (size_t)(ax->n + 1));
    /* a merged reduce group (grp): its axes of this reduce, by full-shape axis */
    int *gfa = arena_alloc(c->a, sizeof(int) * (size_t)(ax->n + 1)), *gl = arena_alloc(c->a, sizeof(int) * (size_t)(ax->n + 1));
    for (int k = 0; k < ax->n; k++) {
      int a = (int)ax->items[k]->i;
      gfa[k] = -1; gl[k] = -1;
      if (si_is_int(xs->v[a]) && xs->v[a].c == 1) continue;
      gfa[k] = reduce_axis_of(c, u, a, xs->v[a]);
      note_reduced(c, u, gfa[k]);
      if (c->grp && gfa[k] < c->nfac) gl[k] = c->grp[gfa[k]];
    }
    int *gax = arena_alloc(c->a, sizeof(int) * (size_t)(ax->n + 1));
    Sint *gsz = arena_alloc(c->a, sizeof(Sint) * (size_t)(ax->n + 1));
    int ngrp = 0, *gstart = arena_alloc(c->a, sizeof(int) * (size_t)(ax->n + 2)), ng = 0, *glead = arena_alloc(c->a, sizeof(int) * (size_t)(ax->n + 1));
    int64_t *gS = arena_alloc(c->a, sizeof(int64_t) * (size_t)(ax->n + 1)), *gP = arena_alloc(c->a, sizeof(int64_t) * (size_t)(ax->n + 1));
    for (int k = 0; k < ax->n; k++) {
      int a = (int)ax->items[k]->i;
      if (si_is_int(xs->v[a]) && xs->v[a].c == 1) { base[a] = uop_const_int(dt_int, 0); continue; }
      int fa = gfa[k];
      if (gl[k] >= 0) {
        if (gl[k] != fa) continue;   /* a group is handled at its first axis */
        /* the group's axes in full-shape order (a swizzled reduce appends them in that order) */
        gstart[ngrp] = ng;
        int64_t S = 1;
        for (int q = 0; q < c->nfac; q++)
          for (int kk = 0; kk < ax->n; kk++)
            if (gfa[kk] == q && gl[kk] == fa) {
              int aa = (int)ax->items[kk]->i;
              if (!si_is_int(xs->v[aa])) tg_fail(TG_EINTERNAL, "lower: a merged reduce over a symbolic axis");
              gax[ng] = aa; gsz[ng] = xs->v[aa]; ng++; S *= xs->v[aa].c;
            }
        int64_t G = 1;
        for (int q = 0; q < c->nfac; q++) if (c->grp[q] == fa) G *= c->fsz[q].c;
        if (S != G) tg_fail(TG_EINTERNAL, "lower: a reduce covers part of a merged axis");
        int64_t K = c->fac[fa], P = group_padded(c, fa, S);
        gS[ngrp] = S; gP[ngrp] = P; glead[ngrp] = fa;
        UOp *r = P / K == 1 ? NULL : reduce_range(c, u, a, fa, si(P / K));
        if (r) f->ranges[f->nr++] = r;
        ua[nu] = -1 - ngrp; ufa[nu] = fa; uk[nu] = K; ur[nu] = r; nu++; combos *= K;
        ngrp++;
        gstart[ngrp] = ng;
        continue;
      }
      Sint full = padded(c, fa, xs->v[a]);
      int64_t K = factor_of(c, fa, full);
      Sint end = K > 1 ? si(full.c / K) : full;
      UOp *r = si_is_int(end) && end.c == 1 ? NULL : reduce_range(c, u, a, fa, end);
      if (r) f->ranges[f->nr++] = r;
      if (K > 1) { ua[nu] = a; ufa[nu] = fa; uk[nu] = K; ur[nu] = r; nu++; combos *= K; }
      else base[a] = r;
    }
    /* the unrolled values reach the accumulator in tinygrad's expansion order: each axis' splits
     * (KDigits) are digits (unrolled axis i, weight, size, split index), sorted by split index, the
     * last varying fastest, not the axes' own order */
    typedef struct Digit { int i; int64_t w, m; int o; } Digit;
    Digit *dg = arena_alloc(c->a, sizeof(Digit) * (size_t)(nu * KOPT_MAX + 1));
    int nd = 0;
    for (int i = 0; i < nu; i++) {
      const KDigits *kd = c->fdig && ufa[i] >= 0 && ufa[i] < c->nfac ? &c->fdig[ufa[i]] : NULL;
      int64_t prod = 1;
      for (int d = 0; kd && d < kd->n; d++) prod *= kd->amt[d];
      if (kd && kd->n && prod == uk[i]) {
        int64_t w = 1;
        for (int d = 0; d < kd->n; d++) { dg[nd++] = (Digit){i, w, kd->amt[d], kd->opt[d]}; w *= kd->amt[d]; }
      } else dg[nd++] = (Digit){i, 1, uk[i], -1};
    }
    for (int i = 1; i < nd; i++)
      for (int j = i; j > 0 && dg[j - 1].o > dg[j].o; j--) { Digit t = dg[j]; dg[j] = dg[j - 1]; dg[j - 1] = t; }
    f->nch = (int)combos;
    f->chn = arena_alloc(c->a, sizeof(UOp *) * (size_t)combos);
    f->chk = arena_alloc(c->a, sizeof(UOp *) * (size_t)combos);
    int64_t *jv = arena_alloc(c->a, sizeof(int64_t) * (size_t)(nu + 1));
    UOp **pmv = c->kx && c->grp && n == c->kx->nf && xs->n == n ? midx_get(c, n, idx) : NULL;
    UOp **gix = arena_alloc(c->a, sizeof(UOp *) * (size_t)(ngrp + 1));
    for (int64_t t = 0; t < combos; t++) {
      UOp **ni = arena_alloc(c->a, sizeof(UOp *) * (size_t)(xs->n + 1));
      memcpy(ni, base, sizeof(UOp *) * (size_t)xs->n);
      int64_t q = t;
      for (int i = 0; i < nu; i++) jv[i] = 0;
      for (int d = nd - 1; d >= 0; d--) { jv[dg[d].i] += q % dg[d].m * dg[d].w; q /= dg[d].m; }
      UOp *pvt = pv;   /* padded reduce axes: their indices below the old ends */
      for (int i = nu - 1; i >= 0; i--) {
        UOp *ix = split_index(ur[i], uk[i], jv[i]);
        if (ua[i] >= 0) { ni[ua[i]] = ix; continue; }
        int gi = -1 - ua[i], g0 = gstart[gi], gn = gstart[gi + 1] - g0;
        gix[gi] = ix;
        if (gP[gi] != gS[gi]) pvt = below(pvt, ix, gS[gi]);
        SList gs = {gn, gsz + g0};
        UOp **out = arena_alloc(c->a, sizeof(UOp *) * (size_t)(gn + 1));
        unravel(&gs, ix, out);
        for (int k = 0; k < gn; k++) ni[gax[g0 + k]] = out[k];
      }
      for (int k = 0; k < ax->n; k++) if (gfa[k] >= 0) pvt = pad_cond(c, pvt, gfa[k], xs->v[ax->items[k]->i], ni[ax->items[k]->i]);
      if (pmv) reduce_midx_put(c, u, xs, ni, pmv, gfa, gl, ngrp, glead, gix);
      f->chn[t] = u->src[0]; f->chk[t] = idx_keyp(c, xs->n, ni, pvt);
    }
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
      f->chk[k] = idx_keyp(c, ss->n, ni, pv);
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
      int fi = n - 1;
      for (int k = f->nch - 1; k >= 0; k--) {
        UOp *ck = memo_key(f->chn[k], f->chk[k]);
        if (memo_get(c, ck)) continue;
        if (n == cap) {
          Frame *ns = arena_alloc(c->a, sizeof(Frame) * (size_t)cap * 2);
          memcpy(ns, st, sizeof(Frame) * (size_t)cap);
          st = ns; cap *= 2; f = &st[fi];
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
    if (u->op == OP_VIEW) r = vals[0]; /* its mask went down with the index (lower_prepare) */
    else if (u->op == OP_REDUCE_AXIS) {
      Op rop = u->arg->items[0]->op;
      UOp *v = vals[0];
      if (!f->nr && (f->nch < 2 || f->ng)) {  /* one value, or a group's partials: folded in order now */
        for (int k = 1; k < f->nch; k++) v = uop2(rop, u->dtype, v, vals[k], NULL);
        r = v;
      } else if (!f->nr) {
        /* no loop left: a REDUCE of the VECTORIZE of the values, with no RANGE, until pm_reduce
         * folds it to ((v0 op v1) op v2)... as tinygrad's reduce_to_acc does; sym meets the REDUCE
         * before that, as tinygrad's does (a factor of the sum such as x*-1 folds with the constants
         * after it instead of being pushed into the values: -(a+b) is -a+-b) */
        UOp *vec = uop_new(OP_VECTORIZE, dt_vec(u->dtype, f->nch), f->nch, vals, NULL, NULL);
        r = uop_new(OP_REDUCE, u->dtype, 1, &vec, v_ops(rop), NULL);
      } else {
        /* unrolled values go to the accumulator one by one, acc op v0 op v1 ..., as tinygrad's
         * reduce_to_acc folds them: a VECTORIZE of them is the REDUCE's value */
        if (f->nch > 1) v = uop_new(OP_VECTORIZE, dt_vec(u->dtype, f->nch), f->nch, vals, NULL, NULL);
        UOp **s = arena_alloc(c->a, sizeof(UOp *) * (size_t)(f->nr + 1));
        s[0] = v;
        memcpy(s + 1, f->ranges, sizeof(UOp *) * (size_t)f->nr);
        r = uop_new(OP_REDUCE, u->dtype, f->nr + 1, s, v_ops(u->arg->items[0]->op), NULL);
      }
      if (f->ng) r = group_reduce(c, u, f, r);
    } else r = uop_new((Op)u->op, u->dtype, u->nsrc, vals, u->arg, NULL);
    map_put(&c->memo, f->key, uop_h(f->key), r);
  }
  return memo_get(c, k0);
}

/* the upcast of output axis i of a STORE of shape sh: a merged group's on its first axis */
static int64_t store_factor(LCtx *c, int i, SList sh) {
  if (c->grp && i < c->nfac && c->grp[i] >= 0) return c->grp[i] == i ? c->fac[i] : 1;
  return factor_of(c, i, padded(c, i, sh.v[i]));
}
/* the number of index vectors the opts' upcasts make of a STORE of shape sh */
static int64_t store_combos(LCtx *c, SList sh) {
  int64_t n = 1;
  for (int i = 0; i < sh.n; i++) n *= store_factor(c, i, sh);
  return n;
}
/* a merged output group led by axis i: one RANGE over the group's product split by K, its index
 * unravelled over the group's axes (tinygrad's loop over a merged axis) */
static UOp *group_index(LCtx *c, SList sh, int i, int64_t j, UOp **g, UOp **ranges, int *nr, UOp **pv) {
  int nm = 0, *mem = arena_alloc(c->a, sizeof(int) * (size_t)(sh.n + 1));
  int64_t S = 1;
  for (int f = i; f < sh.n && f < c->nfac; f++) if (c->grp[f] == i) { mem[nm++] = f; S *= sh.v[f].c; }
  int64_t K = c->fac[i], P = group_padded(c, i, S);
  UOp *r = P / K == 1 ? NULL : uop1(OP_RANGE, dt_int, uop_const_int(dt_int, P / K), v_int(i));
  if (P != S) *pv = below(*pv, split_index(r, K, j), S);
  if (r) ranges[(*nr)++] = r;
  Sint *sz = arena_alloc(c->a, sizeof(Sint) * (size_t)(nm + 1));
  for (int k = 0; k < nm; k++) sz[k] = sh.v[mem[k]];
  SList gs = {nm, sz};
  UOp **out = arena_alloc(c->a, sizeof(UOp *) * (size_t)(nm + 1));
  UOp *mi = split_index(r, K, j);
  unravel(&gs, mi, out);
  for (int k = 0; k < nm; k++) g[mem[k]] = out[k];
  return mi;
}
/* the loop lowering's merged indices (index_st_merged) of index vector g over the F axes of shape
 * sh: a merged loop's index (gm at its first F axis), a lone F axis' own index, 0 where sh is 1
 * (a reduced axis of the output). None when a merged axis is neither (its F axes loop apart) */
static void loop_midx_put(LCtx *c, SList sh, UOp **g, UOp *const *gm) {
  const KAxes *k = c->kx;
  if (!k || !c->grp || sh.n != k->nf) return;
  UOp **mv = arena_alloc(c->a, sizeof(UOp *) * (size_t)(k->n + 1));
  for (int m = 0; m < k->n; m++) {
    int lead = k->kept[k->lo[m]];
    bool ones = true;
    for (int i = k->lo[m]; i <= k->hi[m]; i++) ones &= si_is_int(sh.v[k->kept[i]]) && sh.v[k->kept[i]].c == 1;
    if (ones) mv[m] = uop_const_int(dt_int, 0);
    else if (k->lo[m] == k->hi[m]) mv[m] = g[lead];
    else if (gm[lead]) mv[m] = gm[lead];
    else return;
  }
  midx_put(c, sh.n, g, mv);
}
/* the loop lowering's merged indices of a reduce's source index vector ni: its parent's (pmv) with
 * the reduced merged axes' own, a merged loop's (gix of the group whose first F axis is glead) or a
 * lone F axis' index. None where the reduce's axes are not the F axes themselves (a shorter reduce) */
static void reduce_midx_put(LCtx *c, UOp *u, const SList *xs, UOp **ni, UOp *const *pmv, const int *gfa, const int *gl, int ngrp,
                            const int *glead, UOp *const *gix) {
  const KAxes *k = c->kx;
  const Value *ax = u->arg->items[1];
  UOp **mv = arena_alloc(c->a, sizeof(UOp *) * (size_t)(k->n + 1));
  memcpy(mv, pmv, sizeof(UOp *) * (size_t)k->n);
  for (int q = 0; q < ax->n; q++) {
    int a = (int)ax->items[q]->i;
    if (gfa[q] < 0) continue;   /* size 1 */
    if (gfa[q] != a || c->fm[a] < 0) return;
    int m = c->fm[a];
    if (gl[q] >= 0) {
      int gi = 0;
      while (gi < ngrp && glead[gi] != gl[q]) gi++;
      if (gi == ngrp) return;
      mv[m] = gix[gi];
    } else if (k->lo[m] == k->hi[m]) mv[m] = ni[a];
    else return;
  }
  midx_put(c, xs->n, ni, mv);
}
/* the INDEX a STORE s through view writes at index vector g, recorded as the kernel's output
 * (Kernel.sts[0]) */
static UOp *store_index(LCtx *c, UOp *s, UOp *view, UOp **g, UOp *pv) {
  UOp *fi, *valid;
  st_index_at(c, view->arg->st, g, st_shape(view->arg->st).n, &fi, &valid);
  c->out_rec = c->recs.n;
  rec_index(c, s, fi, valid, view->arg->st);
  c->out_idx = fi; c->out_valid = valid;
  valid = valid_and(valid, pv);
  UOp *buf = view->src[0];
  return is_true(valid) ? uop2(OP_INDEX, buf->dtype, buf, fi, NULL) : uop3(OP_INDEX, buf->dtype, buf, fi, valid, NULL);
}

/* STORE(VIEW(DEFINE_GLOBAL), x) -> STORE(INDEX(buf, idx[, valid]), value, ranges...), at upcast
 * index vector t (0 without opts; axis i split by K is r*K + j, j a digit of t) */
static UOp *lower_store(LCtx *c, UOp *s, int64_t t) {
  UOp *view = s->src[0];
  if (view->op != OP_VIEW || view->src[0]->op != OP_DEFINE_GLOBAL) tg_fail(TG_EINPUT, "STORE target is not a VIEW of a DEFINE_GLOBAL");
  SList sh = st_shape(view->arg->st);
  UOp **g = arena_alloc(c->a, sizeof(UOp *) * (size_t)(sh.n + 2));
  UOp **srcs = arena_alloc(c->a, sizeof(UOp *) * (size_t)(sh.n + 2));
  int64_t *j = arena_alloc(c->a, sizeof(int64_t) * (size_t)(sh.n + 1));
  for (int i = sh.n - 1; i >= 0; i--) { int64_t K = store_factor(c, i, sh); j[i] = t % K; t /= K; }
  int nr = 0;
  UOp *pv = NULL;   /* padded output axes: their indices below the old ends */
  UOp **gm = arena_alloc(c->a, sizeof(UOp *) * (size_t)(sh.n + 1));   /* a merged loop's index, at its first F axis */
  for (int i = 0; i < sh.n; i++) {
    gm[i] = NULL;
    if (si_is_int(sh.v[i]) && sh.v[i].c == 1) { g[i] = uop_const_int(dt_int, 0); continue; }
    if (c->grp && i < c->nfac && c->grp[i] >= 0) {
      if (c->grp[i] == i) gm[i] = group_index(c, sh, i, j[i], g, srcs + 2, &nr, &pv);
      continue;
    }
    Sint full = padded(c, i, sh.v[i]);
    int64_t K = factor_of(c, i, full);
    Sint end = K > 1 ? si(full.c / K) : full;
    UOp *r = si_is_int(end) && end.c == 1 ? NULL : uop1(OP_RANGE, dt_int, si_uop(end), v_int(i));
    if (r) srcs[2 + nr++] = r;
    g[i] = split_index(r, K, j[i]);
  }
  for (int i = 0; i < sh.n; i++) pv = pad_cond(c, pv, i, sh.v[i], g[i]);
  loop_midx_put(c, sh, g, gm);
  srcs[0] = store_index(c, s, view, g, pv);
  srcs[1] = lower_value(c, s->src[1], idx_keyp(c, sh.n, g, pv));
  return uop_new(OP_STORE, dt_void, 2 + nr, srcs, NULL, NULL);
}

/* thread lowering: STORE at upcast combination t (the digits of the UPCAST pieces, the last
 * fastest); output axes read their GLOBAL/LOCAL SPECIALs; no RANGEs (the IF is added later) */
static UOp *lower_store_threads(LCtx *c, UOp *s, int64_t t) {
  const KPieces *pc = c->pc;
  UOp *view = s->src[0];
  if (view->op != OP_VIEW || view->src[0]->op != OP_DEFINE_GLOBAL) tg_fail(TG_EINPUT, "STORE target is not a VIEW of a DEFINE_GLOBAL");
  SList sh = st_shape(view->arg->st);
  UOp **val = arena_alloc(c->a, sizeof(UOp *) * (size_t)(pc->n + 1));
  for (int p = pc->n - 1; p >= 0; p--) {
    const KPiece *x = &pc->v[p];
    if (x->type == KAX_UPCAST) { val[p] = uop_const_int(dt_int, t % x->size); t /= x->size; }
    else if (x->type == KAX_GLOBAL || x->type == KAX_LOCAL) val[p] = c->pvar[p];
  }
  int nf = c->kx->nf;
  UOp **fi = arena_alloc(c->a, sizeof(UOp *) * (size_t)(nf + 1));
  UOp **mv = arena_alloc(c->a, sizeof(UOp *) * (size_t)(c->kx->n + 1)); /* the merged indices (reduce axes: 0) */
  for (int m = 0; m < c->kx->n; m++) {
    mv[m] = c->kx->reduce[m] ? uop_const_int(dt_int, 0) : merged_index(c, m, val);
    if (!c->kx->reduce[m]) merged_unravel(c, m, mv[m], fi);
  }
  UOp **g = arena_alloc(c->a, sizeof(UOp *) * (size_t)(sh.n + 1));
  for (int i = 0; i < sh.n; i++) {
    if (si_is_int(sh.v[i]) && sh.v[i].c == 1) { g[i] = uop_const_int(dt_int, 0); continue; }
    if (i >= nf || !fi[i]) tg_fail(TG_EINTERNAL, "lower: store axis %d has no index", i);
    g[i] = fi[i];
  }
  if (sh.n == nf) midx_put(c, sh.n, g, mv);
  UOp *pv = NULL;   /* padded output axes: their merged indices below the old ends */
  for (int m = 0; m < c->kx->n; m++) if (!c->kx->reduce[m]) pv = merged_pad(c, pv, m, val);
  UOp *ix = store_index(c, s, view, g, pv);
  UOp **srcs = arena_alloc(c->a, sizeof(UOp *) * (size_t)(c->tloops.n + 3));
  srcs[0] = ix;
  srcs[1] = lower_value(c, s->src[1], idx_keyp(c, sh.n, g, pv));
  for (int i = 0; i < c->tloops.n; i++) srcs[2 + i] = c->tloops.v[i];
  return uop_new(OP_STORE, dt_void, 2 + c->tloops.n, srcs, NULL, NULL);
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
  Map groups;             /* the ranges of a REDUCE (a SINK of them) -> PtrVec* of the REDUCEs over them */
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
static bool inline_op(Op op);
static void emit(Lin *l, UOp *root);
/* open a loop over range in the current scope; a bound that is an expression (a symbolic size,
 * (a*-2)+13) is a value that must stand before it even when nothing else uses the range */
static void open_loop(Lin *l, UOp *range) {
  if (!inline_op((Op)range->src[0]->op)) emit(l, range->src[0]);
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
    if (u->op == OP_RANGE || u->op == OP_IF) b[u->arg->i >> 6] |= 1ull << (u->arg->i & 63);
    if (u->op == OP_REDUCE) {
      for (int k = 1; k < u->nsrc; k++) b[u->src[k]->arg->i >> 6] &= ~(1ull << (u->src[k]->arg->i & 63));
      UOp *key = idx_key(u->nsrc - 1, u->src + 1);
      bool isnew;
      void **slot = map_slot(&l->groups, key, uop_h(key), &isnew);
      if (isnew) { PtrVec *g = arena_alloc(l->a, sizeof *g); vec_init(g, l->a); *slot = g; }
      vec_push((PtrVec *)*slot, u);
    }
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
/* level_of when every RANGE u uses is open, else -1 */
static int level_try(Lin *l, UOp *u) {
  const uint64_t *b = fr_of(l, u);
  int lv = 0, need = 0, seen = 0;
  for (int w = 0; w < l->nw; w++) need += __builtin_popcountll(b[w]);
  for (int i = 1; i <= l->d; i++) if (fr_has(b, l->ctx[i]->range->arg->i)) { lv = i; seen++; }
  return seen == need ? lv : -1;
}

enum { T_EMIT, T_FINISH, T_RED_END };
typedef struct Task { uint8_t kind; int lv; UOp *u; Scope **saved; int nsaved; UOp **grp; int ng; } Task;

/* printed where used (an IF: its condition is a value before it; the IF itself is a scope) */
static bool inline_op(Op op) {
  return op == OP_CONST || op == OP_DEFINE_VAR || op == OP_RANGE || op == OP_DEFINE_GLOBAL || op == OP_SPECIAL || op == OP_DEFINE_LOCAL || op == OP_IF;
}

/* the task stack, grown (in the arena) so that `more` pushes fit */
typedef struct Tasks { Task *t; int n, cap; } Tasks;
static void ts_reserve(Lin *l, Tasks *ts, int more) {
  if (ts->n + more <= ts->cap) return;
  int nc = (ts->cap + more) * 2;
  Task *nt = arena_alloc(l->a, sizeof(Task) * (size_t)nc);
  if (ts->n) memcpy(nt, ts->t, sizeof(Task) * (size_t)ts->n);
  ts->t = nt; ts->cap = nc;
}
/* push EMITs of srcs[hi-1] .. srcs[lo], so they pop in order */
static void ts_emit_srcs(Lin *l, Tasks *ts, UOp *const *srcs, int lo, int hi) {
  ts_reserve(l, ts, hi - lo);
  for (int k = hi - 1; k >= lo; k--) ts->t[ts->n++] = (Task){T_EMIT, 0, srcs[k], NULL, 0, NULL, 0};
}

static void emit(Lin *l, UOp *root) {
  Tasks ts = {NULL, 0, 0};
  ts_emit_srcs(l, &ts, &root, 0, 1);
  while (ts.n) {
    Task t = ts.t[--ts.n];
    UOp *u = t.u;
    if (t.kind == T_EMIT) {
      if (inline_op((Op)u->op)) { ts_emit_srcs(l, &ts, u->src, 0, u->nsrc); continue; }
      if (u->op == OP_INDEX) { ts_emit_srcs(l, &ts, u->src, 1, u->nsrc); continue; }
      if (u->op == OP_VECTORIZE) { ts_emit_srcs(l, &ts, u->src, 0, u->nsrc); continue; } /* a REDUCE's unrolled values: each one is an update */
      int lv = level_of(l, u);
      Scope *s = l->ctx[lv];
      if (map_has(&s->memo, u, uop_h(u))) continue;
      if (u->op == OP_REDUCE) {
        /* every REDUCE over the same RANGEs that belongs in this scope and is not there yet shares
         * the loop nest (an upcast's copies of one reduce): accumulators, loops, all updates */
        UOp *gk = idx_key(u->nsrc - 1, u->src + 1);
        PtrVec *gv = map_get(&l->groups, gk, uop_h(gk), NULL);
        UOp **grp = arena_alloc(l->a, sizeof(UOp *) * (size_t)(gv->n + 1));
        int ng = 0;
        grp[ng++] = u;
        for (int k = 0; k < gv->n; k++) {
          UOp *m = gv->v[k];
          if (m != u && !map_has(&s->memo, m, uop_h(m)) && level_try(l, m) == lv) grp[ng++] = m;
        }
        for (int k = 0; k < ng; k++) scope_insert(l, s, (Item){LK_ACC, grp[k], NULL, NULL}, false);
        int ns = l->d - lv;
        Scope **saved = arena_alloc(l->a, sizeof(Scope *) * (size_t)(ns + 1));
        memcpy(saved, l->ctx + lv + 1, sizeof(Scope *) * (size_t)ns);
        l->d = lv;
        for (int k = 1; k < u->nsrc; k++) open_loop(l, u->src[k]);
        ts_reserve(l, &ts, ng + 1);
        ts.t[ts.n++] = (Task){T_RED_END, lv, u, saved, ns, grp, ng};
        for (int k = ng - 1; k >= 0; k--) ts.t[ts.n++] = (Task){T_EMIT, 0, grp[k]->src[0], NULL, 0, NULL, 0};
        continue;
      }
      ts_reserve(l, &ts, 1);
      ts.t[ts.n++] = (Task){T_FINISH, 0, u, NULL, 0, NULL, 0};
      ts_emit_srcs(l, &ts, u->src, 0, u->nsrc);
    } else if (t.kind == T_FINISH) {
      int lv = level_of(l, u);
      Scope *s = l->ctx[lv];
      if (map_has(&s->memo, u, uop_h(u))) continue;
      scope_insert(l, s, (Item){u->op == OP_STORE ? LK_STORE : LK_VALUE, u, NULL, NULL}, false);
      map_put(&s->memo, u, uop_h(u), u);
    } else {
      for (int k = 0; k < t.ng; k++) {
        UOp *v = t.grp[k]->src[0];
        if (v->op != OP_VECTORIZE && v->dtype->count > 1) tg_fail(TG_EINTERNAL, "linearize: a REDUCE of a vector %s, not of an UNROLL's VECTORIZE", op_names[v->op]);
        if (v->op != OP_VECTORIZE) scope_insert(l, l->ctx[l->d], (Item){LK_ACCUM, t.grp[k], v, NULL}, false);
        else for (int j = 0; j < v->nsrc; j++) scope_insert(l, l->ctx[l->d], (Item){LK_ACCUM, t.grp[k], v->src[j], NULL}, false);
      }
      while (l->d > t.lv) close_loop(l);
      for (int k = 0; k < t.nsaved; k++) ctx_push(l, t.saved[k]);
      for (int k = 0; k < t.ng; k++) map_put(&l->ctx[t.lv]->memo, t.grp[k], uop_h(t.grp[k]), t.grp[k]);
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
/* one ShapeTracker's facts about one axis, as kernel_axes merges them */
typedef struct StAxis {
  Sint shape;       /* its shape (a reduce's output has 1 on reduced axes) */
  Sint own;         /* the shape apply_opt checks (a reduce's input: its source shape) */
  int64_t str;      /* real_strides(): the index's coefficient (0 unused, -1 not linear) */
  int64_t raw;      /* views[-1].strides */
  bool real;        /* real_strides() is not None there */
  bool masked;      /* axis_is_masked */
  bool vm;          /* views[-1].mask is not the whole axis: [mlo, mhi) */
  int64_t mlo, mhi;
} StAxis;

/* views_to_real_strides from an (idx, valid) pair into row[0..nf): per full-shape axis, the
 * RANGE's coefficient in idx (0 when unused; -1 when used but not linear), unknown (real=false)
 * when it is not linear or it is masked, and masked (axis_is_masked: valid uses it) */
static void real_strides(LCtx *c, UOp *idx, UOp *valid, StAxis *row) {
  for (int i = 0; i < c->nf; i++) { row[i].str = 0; row[i].real = false; row[i].masked = false; }
  UOp *terms[256];
  int nt = split_uop(idx, OP_ADD, terms, 256);
  for (int t = 0; t < nt && t < 256; t++) {
    UOp *x = terms[t], *r = NULL;
    int64_t k = 0;
    if (x->op == OP_RANGE) { r = x; k = 1; }
    else if (x->op == OP_MUL && x->src[0]->op == OP_RANGE && x->src[1]->op == OP_CONST) { r = x->src[0]; k = x->src[1]->arg->i; }
    else if (x->op == OP_MUL && x->src[1]->op == OP_RANGE && x->src[0]->op == OP_CONST) { r = x->src[1]; k = x->src[0]->arg->i; }
    if (r && r->arg->i < c->racap && c->raxis[r->arg->i] >= 0) { row[c->raxis[r->arg->i]].str = k; row[c->raxis[r->arg->i]].real = true; }
  }
  bool *used = arena_alloc(c->a, sizeof(bool) * (size_t)(c->nf + 1));
  UList ti = uop_toposort(idx, NULL, NULL);
  for (int i = 0; i < ti.n; i++) if (ti.v[i]->op == OP_RANGE && ti.v[i]->arg->i < c->racap && c->raxis[ti.v[i]->arg->i] >= 0) used[c->raxis[ti.v[i]->arg->i]] = true;
  for (int i = 0; i < c->nf; i++) {
    if (!used[i]) { row[i].str = 0; row[i].real = true; }
    else if (!row[i].real) row[i].str = -1;
  }
  UList tv = uop_toposort(valid, NULL, NULL);
  for (int i = 0; i < tv.n; i++)
    if (tv.v[i]->op == OP_RANGE && tv.v[i]->arg->i < c->racap && c->raxis[tv.v[i]->arg->i] >= 0) {
      row[c->raxis[tv.v[i]->arg->i]].real = false;
      row[c->raxis[tv.v[i]->arg->i]].masked = true;
    }
}
/* views[-1].strides of st into row: its own when its last view has the full shape's rank (the
 * usual case; a swizzled reduce's buffers do not), else the index's coefficients */
static void raw_strides(const ShapeTracker *st, int nf, StAxis *row) {
  const View *v = st ? st->views[st->nviews - 1] : NULL;
  for (int i = 0; i < nf; i++) {
    row[i].raw = v && v->ndim == nf ? (si_is_int(v->strides[i]) ? v->strides[i].c : -1) : row[i].str;
    /* and its mask there, which decides whether an opt's split of the axis reshapes the view */
    const Sint *mk = v && v->ndim == nf && v->mask ? &v->mask[2 * i] : NULL;
    row[i].vm = mk && si_is_int(mk[0]) && si_is_int(mk[1]) && si_is_int(v->shape[i]) && !(mk[0].c == 0 && mk[1].c == v->shape[i].c);
    if (row[i].vm) row[i].mlo = mk[0].c, row[i].mhi = mk[1].c;
  }
}

/* Kernel.__init__'s sts (the output, every buffer, each of the nred reduces' output and input, the
 * full shape with 0 strides) through simplify_ones + simplify_merge_adjacent: the axes the name and
 * the opts see */
/* the ShapeTracker index kernel_axes gives the buffer recorded for AST node u (-1: none) */
static int st_index_of(LCtx *c, UOp *u) {
  intptr_t q = (intptr_t)map_get(&c->recd, u, uop_h(u), NULL) - 1;
  if (q < 0 || q % 3) return -1;
  if (q == c->out_rec) return 0;
  return 1 + (int)(q / 3) - (c->out_rec < q ? 1 : 0);
}
/* a LOAD in tinygrad's AST after its view pushes: a LOAD, or a VIEW right over one */
static bool is_load(UOp *u) { return u->op == OP_LOAD || (u->op == OP_VIEW && u->src[0]->op == OP_LOAD); }

/* what the GPU heuristic reads of the reduces (Kernel.reduceop is the first REDUCE_AXIS in toposort),
 * and what tgc's CPU step reads of the kernel's ops */
static bool is_transcendental(Op op) { return op == OP_EXP2 || op == OP_LOG2 || op == OP_SIN || op == OP_POW; }
static void reduce_facts(LCtx *c, UList topo, KAxes *k) {
  k->red_itemsize = 0; k->parallel_reduces = false; k->mv0 = k->mv1 = -1; k->transcendental = false; k->red_fsum = false;
  k->has_vars = false;
  k->sums_of_transcendentals = true;
  bool all_sums = true;
  PtrVec reds;
  vec_init(&reds, c->a);
  for (int i = 0; i < topo.n; i++) {
    UOp *u = topo.v[i];
    Op op = (Op)u->op;
    k->transcendental |= is_transcendental(op);
    k->has_vars |= op == OP_DEFINE_VAR;
    if (op == OP_REDUCE_AXIS) {
      vec_push(&reds, u);
      all_sums &= u->arg->items[0]->op == OP_ADD;
      UOp *s = u->src[0];
      while (s->op == OP_VIEW && s->nsrc) s = s->src[0];
      k->sums_of_transcendentals &= is_transcendental((Op)s->op);
    }
  }
  /* can_pad(r, {}) for every reduce r, in one walk: sums of ops that keep zeros zero */
  k->pad_safe = all_sums && uop_can_pad(reds.n, (UOp *const *)reds.v, NULL);
  UOp *first = NULL;
  for (int i = 0; i < topo.n && !first; i++) if (topo.v[i]->op == OP_REDUCE_AXIS) first = topo.v[i];
  /* tinygrad reads axis_arg in the full shape its view rewrites give every reduce: here, the full
   * shape axes each reduce got (note_reduced) */
  for (int i = 0; i < c->redaxes.n; i++)
    for (int j = 0; j < i; j++) k->parallel_reduces |= c->redaxes.v[i] == c->redaxes.v[j];
  if (!first) return;
  k->red_itemsize = first->dtype->itemsize;
  k->red_fsum = first->arg->items[0]->op == OP_ADD && dt_is_float(first->dtype);
  UOp *mul = first->src[0];
  while (mul->op == OP_VIEW && mul->src[0]->op != OP_LOAD) mul = mul->src[0];   /* tinygrad pushes it to the loads */
  if (first->arg->items[0]->op == OP_ADD && mul->op == OP_MUL && is_load(mul->src[0]) && is_load(mul->src[1])) {
    k->mv0 = st_index_of(c, mul->src[0]);
    k->mv1 = st_index_of(c, mul->src[1]);
    if (k->mv0 < 0 || k->mv1 < 0) k->mv0 = k->mv1 = -1;
  }
}

static void kernel_axes(LCtx *c, UList topo, KAxes *k) {
  int nf = c->nf, nred = c->reds.n, nbuf = (c->recs.n - 3) / 3;
  int nst = 1 + nbuf + 2 * nred + 1;
  StAxis **ax = arena_alloc(c->a, sizeof(StAxis *) * (size_t)nst);
  for (int t = 0; t < nst; t++) {
    ax[t] = arena_alloc(c->a, sizeof(StAxis) * (size_t)(nf + 1));
    for (int i = 0; i < nf; i++) ax[t][i].shape = c->F[i];
  }
  int j = 0;
  real_strides(c, c->out_idx, c->out_valid, ax[j]);
  raw_strides(c->recs.v[c->out_rec + 2], nf, ax[j]);
  for (int i = 0; i < nf; i++) if (c->red[i]) ax[j][i].shape = si(1);
  j++;
  for (int q = 0; q + 2 < c->recs.n; q += 3)
    if (q != c->out_rec) { real_strides(c, c->recs.v[q], c->recs.v[q + 1], ax[j]); raw_strides(c->recs.v[q + 2], nf, ax[j]); j++; }
  /* each reduce's output and input ShapeTrackers (contiguous), and the full shape with 0 strides:
   * the input has the reduce's source shape (the full shape where the source is in another frame),
   * the output 1 on the axes this reduce reduces (a MAX over a SUM's results sees the SUM's axes
   * as 1 already: tinygrad's (4, 8, 4, 1, 1), which blocks merging the MAX's axis with the SUM's) */
  for (int t = 0; t < 2 * nred; t++, j++) {
    int r = t / 2;
    UOp *rn = c->rednodes.v[r];
    const SList *rsh = c->reds.v[r];
    /* strides_for_shape: the product of the later sizes; past a symbolic size it is a UOp, which
     * simplify_merge_adjacent's `last_st == s*st` never finds equal (tinygrad builds the two
     * products in different orders): -1, as a symbolic stride of a buffer is */
    int64_t acc = 1;
    for (int i = nf - 1; i >= 0; i--) {
      StAxis *x = &ax[j][i];
      if (rsh->n == nf && nf == c->nout) x->shape = rsh->v[i];
      if (t % 2 == 0) {
        UOp *key = reduced_key(rn, i);
        if (map_has(&c->redseen, key, uop_h(key))) x->shape = si(1);
      }
      bool one = si_is_int(x->shape) && x->shape.c == 1;
      x->str = x->raw = one ? 0 : acc; x->real = true;
      acc = acc < 0 || !si_is_int(x->shape) ? -1 : acc * x->shape.c;
    }
    /* a reduce straight over a buffer op reads its ShapeTracker as the input's (UOp.st of a LOAD is
     * its buffer's view, of a CONST or DEFINE_VAR its own VIEW's, not a contiguous one): a
     * transposed load keeps its strides there, an expanded constant its zeros */
    Op so = (Op)rn->src[0]->op;
    int q = t % 2 && (so == OP_LOAD || so == OP_CONST || so == OP_DEFINE_VAR) ? st_index_of(c, rn->src[0]) : -1;
    if (q > 0)
      for (int i = 0; i < nf; i++) {
        Sint sh = ax[j][i].shape;
        ax[j][i] = ax[q][i];   /* every fact of the buffer's row, with the reduce's source shape */
        ax[j][i].shape = sh;
      }
  }
  for (int i = 0; i < nf; i++) { ax[j][i].str = ax[j][i].raw = 0; ax[j][i].real = true; }
  int full = j++;
  nst = j;
  /* each ShapeTracker's own shape: the full shape, but a reduce's source shape for its input (a
   * kernel can reduce one axis at two sizes; tinygrad's shift checks refuse what does not divide it) */
  for (int t = 0; t < nst; t++) for (int i = 0; i < nf; i++) ax[t][i].own = ax[t][i].shape;
  for (int r = 0; r < nred; r++) {
    const SList *rsh = c->reds.v[r];
    int t = 1 + nbuf + 2 * r + 1;
    if (rsh->n == nf && nf == c->nout) for (int i = 0; i < nf; i++) ax[t][i].own = rsh->v[i];
  }
  /* the full shape is the largest of them (UOp.full_shape: smax over the sources' shapes): a
   * kernel that reduces one axis at sizes 2 and 3 has 3 there, in its name and for the opts */
  for (int i = 0; i < nf; i++) {
    if (!si_is_int(ax[full][i].own)) continue;
    for (int t = 0; t < nst; t++)
      if (si_is_int(ax[t][i].own) && ax[t][i].own.c > ax[full][i].own.c) ax[full][i].own = ax[full][i].shape = ax[t][i].own;
  }
  /* simplify_ones */
  int m = 0;
  int *kept = arena_alloc(c->a, sizeof(int) * (size_t)(nf + 1));
  for (int i = 0; i < nf; i++) {
    if (si_is_int(c->F[i]) && c->F[i].c == 1) continue;
    for (int t = 0; t < nst; t++) ax[t][m] = ax[t][i];
    kept[m++] = i;
  }
  nf = m;
  /* simplify_merge_adjacent: merged axis rn-1 takes the size product, the inner axis' strides,
   * and a mask of either */
  int first_reduce = nf;
  for (int i = 0; i < nf; i++) if (!si_eq(ax[0][i].shape, ax[full][i].shape)) { first_reduce = i; break; }
  StAxis **mg = arena_alloc(c->a, sizeof(StAxis *) * (size_t)nst);
  for (int t = 0; t < nst; t++) mg[t] = arena_alloc(c->a, sizeof(StAxis) * (size_t)(nf + 1));
  int *lo = arena_alloc(c->a, sizeof(int) * (size_t)(nf + 1)), *hi = arena_alloc(c->a, sizeof(int) * (size_t)(nf + 1));
  int rn = 0;
  for (int i = 0; i < nf; i++) {
    bool mergeable = i > 0 && i != first_reduce;
    for (int t = 0; t < nst && mergeable; t++) {
      const StAxis *x = &ax[t][i], *last = &mg[t][rn - 1];
      if (!x->real || !last->real || !si_is_int(x->shape)) { mergeable = false; break; }
      mergeable = (x->str != 0 && last->str == x->shape.c * x->str) || (x->str == 0 && last->str == 0);
    }
    for (int t = 0; t < nst; t++) {
      if (!mergeable) { mg[t][rn] = ax[t][i]; continue; }
      StAxis *last = &mg[t][rn - 1];
      const StAxis *x = &ax[t][i];
      *last = (StAxis){si_mul(last->shape, x->shape), last->own, x->str, x->raw, x->real, last->masked || x->masked, false, 0, 0};
    }
    if (mergeable) hi[rn - 1] = i;
    else { lo[rn] = hi[rn] = i; rn++; }
  }
  /* KAxes: the shapes apply_opt checks are merged products of own */
  bool *red = arena_alloc(c->a, sizeof(bool) * (size_t)(rn + 1));
  for (int i = 0; i < rn; i++) red[i] = !si_eq(mg[0][i].shape, mg[full][i].shape);
  Sint *size = arena_alloc(c->a, sizeof(Sint) * (size_t)(rn + 1));
  for (int i = 0; i < rn; i++) size[i] = mg[full][i].shape;
  KStAx **st = arena_alloc(c->a, sizeof(KStAx *) * (size_t)nst);
  for (int t = 0; t < nst; t++) {
    st[t] = arena_alloc(c->a, sizeof(KStAx) * (size_t)(rn + 1));
    for (int i = 0; i < rn; i++) {
      int64_t p = 1;
      for (int q = lo[i]; q <= hi[i] && p >= 0; q++) p = si_is_int(ax[t][q].own) ? p * ax[t][q].own.c : -1;
      st[t][i] = (KStAx){.shape = p, .stride = mg[t][i].raw, .rstride = mg[t][i].str, .real = mg[t][i].real, .masked = mg[t][i].masked,
                         .vm = lo[i] == hi[i] && mg[t][i].vm, .mlo = mg[t][i].mlo, .mhi = mg[t][i].mhi};
    }
  }
  *k = (KAxes){.n = rn, .size = size, .reduce = red, .nst = nst, .st = st,
               .nf = c->nf, .fsize = c->F, .lo = lo, .hi = hi, .kept = kept};
  reduce_facts(c, topo, k);
}

/* Kernel.name: "r" with a reduce else "E", the store count when > 1, and the kernel's full shape
 * after its opts (tinygrad names a kernel in get_optimized_ast, once hand_coded_optimizations or
 * the given opts have split its axes: r_16_32_3_4_12_4 for r_64_96_48 under UPCAST:1:3,
 * UPCAST:0:4,UNROLL:0:4); n = 0: the merged axes themselves */
static const char *kernel_name(LCtx *c, UOp *ast, bool has_reduce, const KAxes *k, const KTarget *tg, int n, const KOpt *opts) {
  KPieces pc = {0};
  char why[256];
  if (n && !kopt_pieces(c->a, k, tg, n, opts, &pc, why, sizeof why)) pc.v = NULL;
  char buf[1024];
  int len = snprintf(buf, sizeof buf, "%s", has_reduce ? "r" : "E");
  if (ast->nsrc > 1) len += snprintf(buf + len, sizeof buf - (size_t)len, "%d", ast->nsrc);
  len += snprintf(buf + len, sizeof buf - (size_t)len, "_");
  int nax = pc.v ? pc.n : k->n;
  for (int i = 0; i < nax && len < (int)sizeof buf - 32; i++) {
    /* a symbolic axis is never split (an opt's amount must divide an int size): the merged axis' size */
    Sint d = pc.v ? (pc.v[i].size >= 0 ? (Sint){pc.v[i].size, NULL} : k->size[pc.v[i].m]) : k->size[i];
    if (si_is_int(d)) len += snprintf(buf + len, sizeof buf - (size_t)len, "%s%lld", i ? "_" : "", (long long)d.c);
    else len += snprintf(buf + len, sizeof buf - (size_t)len, "%s%s", i ? "_" : "", u_render(c->a, d.u));
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

static KOptCfg opt_cfg = {KOPT_HEURISTIC, 0, {{0}}, 0};
void lower_opt_config(const KOptCfg *cfg) { opt_cfg = *cfg; }

/* lower every STORE of ast (at every upcast index vector when fac is given, thread lowering when pc
 * is) into c */
static UOp *lower_pass(LCtx *c, Arena *a, UOp *ast, UList topo, const int *fac, const int *grp, const KDigits *dig, const int64_t *fto, const KAxes *k,
                       const KPieces *pc, const KTarget *tg, int *nstores, UOp ***stores_out) {
  *c = (LCtx){.a = a, .fac = fac, .fdig = dig, .grp = grp, .fto = fto, .nfac = k ? k->nf : 0, .fsz = k ? k->fsize : NULL, .pc = pc, .kx = k};
  map_init(&c->shapes, a);
  map_init(&c->memo, a);
  map_init(&c->rmap, a);
  map_init(&c->flatof, a);
  map_init(&c->midxof, a);
  map_init(&c->recd, a);
  compute_shapes(c, topo);
  int maxd = 0;
  for (int i = 0; i < ast->nsrc; i++) {
    UOp *s = ast->src[i];
    if (s->op != OP_STORE) tg_fail(TG_EINPUT, "kernel SINK source %d is %s, not STORE", i, op_names[s->op]);
    const SList *sh = shape_of(c, s->src[0]);
    if (sh && sh->n > maxd) maxd = sh->n;
  }
  c->next_range = maxd;
  map_init(&c->newaxis, a);
  map_init(&c->redseen, a);
  vec_init(&c->redaxes, a);
  vec_init(&c->recs, a);
  vec_init(&c->reds, a);
  vec_init(&c->rednodes, a);
  const SList *osh = shape_of(c, ast->src[ast->nsrc - 1]->src[0]);
  c->nout = osh ? osh->n : 0;
  c->oshape = osh ? osh->v : NULL;
  for (int i = 0; i < c->nout; i++) add_axis(c, osh->v[i], false);
  for (int i = 0; i < maxd; i++) set_raxis(c, i, i < c->nout ? i : -1);
  if (k) {   /* per F axis its merged axis (index_st_merged) */
    c->fm = arena_alloc(c->a, sizeof(int) * (size_t)(k->nf + 1));
    for (int f = 0; f < k->nf; f++) c->fm[f] = -1;
    for (int m = 0; m < k->n; m++) for (int i = k->lo[m]; i <= k->hi[m]; i++) c->fm[k->kept[i]] = m;
  }
  int64_t combos = 1;
  if (pc) {
    thread_setup(c, tg);
    for (int p = 0; p < pc->n; p++) if (pc->v[p].type == KAX_UPCAST) combos *= pc->v[p].size;
  } else {
    combos = osh ? store_combos(c, sl(osh->n, osh->v)) : 1;
    for (int i = 0; i < ast->nsrc; i++)
      if (store_combos(c, st_shape(ast->src[i]->src[0]->arg->st)) != combos) tg_fail(TG_EINTERNAL, "lower: stores of different shapes under opts");
  }
  int ns = (int)(ast->nsrc * combos);
  UOp **stores = arena_alloc(a, sizeof(UOp *) * (size_t)(ns + 1));
  for (int64_t t = 0; t < combos; t++)
    for (int i = 0; i < ast->nsrc; i++) stores[t * ast->nsrc + i] = pc ? lower_store_threads(c, ast->src[i], t) : lower_store(c, ast->src[i], t);
  if (pc && c->ifnode) {
    /* a grouped reduce: every final store runs inside its IF (inside the symbolic axes' loops, which
     * every thread runs alike); the grouped reduce may not sit in another reduce (tinygrad goes
     * through local memory once more there: not ported) */
    for (int i = 0; i < topo.n; i++) {
      if (topo.v[i]->op != OP_REDUCE_AXIS) continue;
      UList in = uop_toposort(topo.v[i]->src[0], NULL, NULL);
      for (int q = 0; q < in.n; q++)
        for (int g = 0; g < c->grouped.n; g++)
          if (in.v[q] == c->grouped.v[g]) tg_fail(TG_EINTERNAL, "lower: a grouped reduce inside another reduce");
    }
    int64_t bytes = c->nslot * c->lelem->itemsize;
    for (int p = 0; p < pc->n; p++) if (pc->v[p].type == KAX_LOCAL || pc->v[p].type == KAX_GROUP) bytes *= pc->v[p].size;
    if (bytes > tg->shared_max) tg_fail(TG_EINTERNAL, "lower: %lld bytes of local memory", (long long)bytes);
    for (int i = 0; i < ns; i++) {
      UOp **srcs = arena_alloc(a, sizeof(UOp *) * (size_t)(stores[i]->nsrc + 2));
      memcpy(srcs, stores[i]->src, sizeof(UOp *) * (size_t)stores[i]->nsrc);
      srcs[stores[i]->nsrc] = c->ifnode;
      stores[i] = uop_new(OP_STORE, dt_void, stores[i]->nsrc + 1, srcs, NULL, NULL);
    }
  }
  *nstores = ns; *stores_out = stores;
  if (pc && c->lstores.n) {   /* the partial values' stores are part of the kernel too */
    UOp **all = arena_alloc(a, sizeof(UOp *) * (size_t)(ns + c->lstores.n + 1));
    memcpy(all, stores, sizeof(UOp *) * (size_t)ns);
    memcpy(all + ns, c->lstores.v, sizeof(UOp *) * (size_t)c->lstores.n);
    return uop_sink(ns + c->lstores.n, all, NULL);
  }
  return uop_sink(ns, stores, NULL);
}

/* lower_pass with opts; NULL (tg_last_error says why) when a TG_EINTERNAL check refuses them */
static UOp *lower_opt_pass(LCtx *c, Arena *a, UOp *ast, UList topo, const int *fac, const int *grp, const KDigits *dig, const int64_t *fto, const KAxes *k, const KPieces *pc,
                           const KTarget *tg, int *nstores, UOp ***stores) {
  UOp *volatile r = NULL;
  TgTry t;
  if (TG_TRY(t)) {
    r = lower_pass(c, a, ast, topo, fac, grp, dig, fto, k, pc, tg, nstores, stores);
    if (c->nf != k->nf) tg_fail(TG_EINTERNAL, "opts changed the kernel's axes");
    tg_try_end(&t);
  } else if (tg_last_error.code != TG_EINTERNAL) {
    char msg[sizeof tg_last_error.msg];   /* tg_fail formats into tg_last_error.msg */
    snprintf(msg, sizeof msg, "%s", tg_last_error.msg);
    tg_fail(tg_last_error.code, "%s", msg);
  }
  return r;
}

static bool thread_opt(const KOpt *o) { return o->op == KOPT_LOCAL || o->op == KOPT_GROUP || o->op == KOPT_GROUPTOP || o->op == KOPT_SWAP; }

/* the opts for this kernel (the heuristic's or the user's), as factors on c's axes or (opts with
 * thread indices) as pieces; n = 0: none. *ntg gets how many of them are tinygrad's (the CPU step
 * can drop some and adds its own after them: tgopts has tinygrad's list then) */
static int choose_opts(LCtx *c, UOp *ast, const KAxes *k, const KOptCfg *cfg, const KTarget *tg, KOpt *opts, int **fac, int **grp, KDigits **dig, KPieces *pc,
                       KOpt *tgopts, int *ntg) {
  pc->v = NULL;
  *ntg = 0;
  if (cfg->mode == KOPT_NONE) return 0;
  /* stores of another shape than the output's, or more than one: keep tinygrad's NOOPT loops */
  for (int i = 0; i + 1 < ast->nsrc; i++) {
    SList a = st_shape(ast->src[i]->src[0]->arg->st);
    if (a.n != c->nout) return 0;
    for (int d = 0; d < a.n; d++) if (!si_eq(a.v[d], c->oshape[d])) return 0;
  }
  int n, nheur;
  if (cfg->mode == KOPT_LIST) { n = cfg->n; memcpy(opts, cfg->v, sizeof(KOpt) * (size_t)n); }
  else n = kopt_heuristic(c->a, k, tg, opts);
  nheur = n;
  memcpy(tgopts, opts, sizeof(KOpt) * (size_t)n);
  *ntg = n;
  if (cfg->mode == KOPT_HEURISTIC && cfg->cpu_lanes) n = kopt_cpu_step(c->a, k, tg, cfg->cpu_lanes, n, opts);
  if (getenv("TGC_DEBUG_OPTS")) fprintf(stderr, "opts: %s (tgc's CPU step: %+d)\n", kopt_format(c->a, n, opts), n - nheur);
  if (!n) return 0;
  char why[256];
  bool threads = false;
  for (int i = 0; i < n; i++) threads |= thread_opt(&opts[i]);
  if (threads) {
    if (!kopt_pieces(c->a, k, tg, n, opts, pc, why, sizeof why)) {
      if (cfg->mode == KOPT_LIST) tg_fail(TG_EINPUT, "opt %s does not apply: %s", kopt_format(c->a, n, opts), why);
      *ntg = 0;
      return 0;
    }
    return n;
  }
  *fac = arena_alloc(c->a, sizeof(int) * (size_t)(c->nf + 1));
  *grp = arena_alloc(c->a, sizeof(int) * (size_t)(c->nf + 1));
  *dig = arena_alloc(c->a, sizeof(KDigits) * (size_t)(c->nf + 1));
  bool ok = kopt_factors(c->a, k, tg, n, opts, *fac, *grp, *dig, why, sizeof why);
  if (!ok && n > nheur) {   /* the CPU step's added opts fail: the heuristic's alone */
    n = nheur;
    memcpy(opts, tgopts, sizeof(KOpt) * (size_t)n);
    ok = kopt_factors(c->a, k, tg, n, opts, *fac, *grp, *dig, why, sizeof why);
  }
  if (!ok) {
    if (cfg->mode == KOPT_LIST) tg_fail(TG_EINPUT, "opt %s does not apply: %s", kopt_format(c->a, n, opts), why);
    *ntg = 0;
    return 0;
  }
  return n;
}

static const KTarget *cur_target = &ktarget_c;
void lower_target(const KTarget *t) { cur_target = t ? t : &ktarget_c; }
const KTarget *lower_get_target(void) { return cur_target; }
const KOptCfg *lower_get_opt_config(void) { return &opt_cfg; }

Program *lower_kernel(UOp *ast, KNames *names) { return lower_kernel_for(ast, names, &opt_cfg, cur_target); }
/* the kernel AST forms lowering relies on, as the scheduler's create_ast makes them: VIEWs hold a
 * ShapeTracker, a STORE goes through a VIEW of a DEFINE_GLOBAL, a LOAD reads a DEFINE_GLOBAL (or a
 * VIEW of one), a CONST or DEFINE_VAR with a source has a VIEW there (and only they have a VIEW
 * without a source), a REDUCE_AXIS reduces one source over (op, axes). A graph's own KERNEL rows
 * can break any of them (tests/fuzz/fuzz_codegen.c found each): TG_EINPUT, naming it. */
static bool st_view(const UOp *v) { return v->op == OP_VIEW && v->arg->kind == V_ST; }
static void check_ast(UList topo) {
  for (int i = 0; i < topo.n; i++) {
    UOp *u = topo.v[i];
    const char *why = NULL;
    switch (u->op) {
    case OP_VIEW: if (u->arg->kind != V_ST) why = "has no ShapeTracker"; break;
    case OP_STORE:
      if (u->nsrc < 2 || !st_view(u->src[0]) || u->src[0]->nsrc < 1 || u->src[0]->src[0]->op != OP_DEFINE_GLOBAL)
        why = "does not store through a VIEW of a DEFINE_GLOBAL";
      break;
    case OP_LOAD:
      if (u->nsrc < 1 || !(u->src[0]->op == OP_DEFINE_GLOBAL || (st_view(u->src[0]) && u->src[0]->nsrc >= 1 && u->src[0]->src[0]->op == OP_DEFINE_GLOBAL)))
        why = "does not load a DEFINE_GLOBAL or a VIEW of one";
      break;
    case OP_CONST: case OP_DEFINE_VAR:
      if (u->nsrc && !st_view(u->src[0])) why = "has a source that is not a VIEW";
      break;
    case OP_REDUCE_AXIS: {
      const Value *a = u->arg;
      if (u->nsrc != 1 || a->kind != V_TUPLE || a->n < 2 || a->items[0]->kind != V_OPS || a->items[1]->kind != V_TUPLE) why = "is not (op, axes) over one source";
      else for (int k = 0; k < a->items[1]->n && !why; k++) if (a->items[1]->items[k]->kind != V_INT || a->items[1]->items[k]->i < 0) why = "has an axis that is not an int";
      break;
    }
    case OP_DEFINE_GLOBAL: if (!dt_is_ptr(u->dtype) || u->arg->kind != V_INT) why = "is not a pointer with a slot"; break;
    default: break;
    }
    if (!why && u->op != OP_CONST && u->op != OP_DEFINE_VAR)
      for (int k = 0; k < u->nsrc && !why; k++) if (u->src[k]->op == OP_VIEW && !u->src[k]->nsrc) why = "reads a VIEW that has no source";
    if (why) tg_fail(TG_EINPUT, "kernel AST: a %s %s", op_names[u->op], why);
  }
}

Program *lower_kernel_with(UOp *ast, KNames *names, const KOptCfg *cfg) { return lower_kernel_for(ast, names, cfg, cur_target); }

static Program *lower_kernel_in(UOp *ast, KNames *names, const KOptCfg *cfg, const KTarget *tg) {
  if (ast->op != OP_SINK) tg_fail(TG_EINPUT, "kernel AST root is %s, not SINK", op_names[ast->op]);
  Arena *a = ga();
  LCtx c;
  UList topo = uop_toposort(ast, NULL, NULL);
  check_ast(topo);
  /* tinygrad's codegen runs view_left and view_right on the AST before its Kernel reads it
   * (rewrites_for_views), then view_left with fix_kernel_ops: the views above elementwise ops move
   * to the buffers and constants below them, a reduce's views into its source, and each buffer's
   * ShapeTracker becomes their composition (ShapeTracker.__add__). The Kernel's axes and opts read
   * those ShapeTrackers (a composed two-view load's mask covers axes its index simplifies away), so
   * tgc lowers the same AST. Measured over testdata/opts: tinygrad's CPU opts on 99.93% of the
   * kernels this way (99.40% with the passes only on kernels with a reduce under a reduce or a
   * view), and on all of them with opt.c's model of views[-1]'s mask. */
  swizzler_init();
  ast = graph_rewrite(ast, pm_view_left, NULL, false, NULL);
  ast = graph_rewrite(ast, pm_view_right, NULL, false, NULL);
  ast = graph_rewrite(ast, pm_buffer_views, NULL, true, NULL);
  topo = uop_toposort(ast, NULL, NULL);
  check_ast(topo);
  int nst;
  UOp **stores;
  UOp *lsink = lower_pass(&c, a, ast, topo, NULL, NULL, NULL, NULL, NULL, NULL, tg, &nst, &stores);
  bool has_reduce = c.reds.n > 0;
  KAxes kx;
  kernel_axes(&c, topo, &kx);
  KOpt opts[KOPT_MAX], tgopts[KOPT_MAX];
  KPieces pc;
  KDigits *dig = NULL;
  int ntg, *fac = NULL, *grp = NULL, nopt = choose_opts(&c, ast, &kx, cfg, tg, opts, &fac, &grp, &dig, &pc, tgopts, &ntg);
  bool threads = false;
  /* PADTO: the opts lower the padded kernel */
  int64_t *fto = nopt ? arena_alloc(a, sizeof(int64_t) * (size_t)(kx.nf + 1)) : NULL;
  if (fto && !kopt_pads(a, &kx, tg, nopt, opts, fto)) fto = NULL;
  if (nopt) {
    LCtx c2;
    int nst2;
    UOp **stores2, *l2 = lower_opt_pass(&c2, a, ast, topo, fac, grp, dig, fto, &kx, pc.v ? &pc : NULL, tg, &nst2, &stores2);
    if (!l2 && getenv("TGC_DEBUG_OPTS")) fprintf(stderr, "opts: %s do not lower: %s\n", kopt_format(a, nopt, opts), tg_last_error.msg);
    if (!l2 && pc.v && cfg->mode != KOPT_LIST) {
      /* the heuristic's thread opts do not lower here: its UPCAST/UNROLL ones alone (LOCALs and
       * GROUPs come after them or, for the matvec's, move no axis it names) */
      int m = 0;
      for (int i = 0; i < nopt; i++) if (!thread_opt(&opts[i])) opts[m++] = opts[i];
      KOptCfg sub = {KOPT_LIST, m, {{0}}, 0};
      memcpy(sub.v, opts, sizeof(KOpt) * (size_t)m);
      char why[256];
      fac = arena_alloc(a, sizeof(int) * (size_t)(c.nf + 1));
      grp = arena_alloc(a, sizeof(int) * (size_t)(c.nf + 1));
      dig = arena_alloc(a, sizeof(KDigits) * (size_t)(c.nf + 1));
      nopt = m && kopt_factors(a, &kx, tg, m, opts, fac, grp, dig, why, sizeof why) ? m : 0;
      memcpy(tgopts, opts, sizeof(KOpt) * (size_t)nopt);
      ntg = nopt;
      pc.v = NULL;
      if (nopt) l2 = lower_opt_pass(&c2, a, ast, topo, fac, grp, dig, fto, &kx, NULL, tg, &nst2, &stores2);
    }
    if (l2) { c = c2; lsink = l2; nst = nst2; stores = stores2; threads = pc.v != NULL; }
    else if (cfg->mode == KOPT_LIST) {
      char msg[sizeof tg_last_error.msg];
      snprintf(msg, sizeof msg, "%s", tg_last_error.msg);
      tg_fail(TG_EINPUT, "opts %s: %s", kopt_format(a, nopt, opts), msg);
    }
    else nopt = 0;   /* the heuristic's opts do not lower here: the kernel keeps its NOOPT loops */
  }
  bool merged = false;
  for (int m = 0; m < kx.n; m++) merged |= kx.hi[m] > kx.lo[m];
  if (!nopt && merged && kx.n <= 64) {
    /* no opts: each merged axis still runs as one loop, as in tinygrad's kernel without opts (its
     * ShapeTrackers are merged before any opt); stores of different shapes keep the AST's loops */
    char why[256];
    fac = arena_alloc(a, sizeof(int) * (size_t)(c.nf + 1));
    grp = arena_alloc(a, sizeof(int) * (size_t)(c.nf + 1));
    dig = arena_alloc(a, sizeof(KDigits) * (size_t)(c.nf + 1));
    LCtx c2;
    int nst2;
    UOp **stores2, *l2 = kopt_factors(a, &kx, tg, 0, NULL, fac, grp, dig, why, sizeof why)
                         ? lower_opt_pass(&c2, a, ast, topo, fac, grp, dig, NULL, &kx, NULL, tg, &nst2, &stores2) : NULL;
    if (l2) { c = c2; lsink = l2; nst = nst2; stores = stores2; }
  }
  if (!nopt) ntg = 0;
  /* named after tinygrad's opts the kernel got (not tgc's CPU step: the same kernel keeps its name
   * under run -d cpu and compile -t c) */
  const char *nm = kernel_name(&c, ast, has_reduce, &kx, tg, ntg, tgopts), *base = ntg ? kernel_name(&c, ast, has_reduce, &kx, tg, 0, NULL) : nm;

  /* tinygrad's sym and pm_reduce on the lowered kernel: values simplified, REDUCEs that need no
   * loop folded */
  UOp *ssink = lower_simplify(uop_sink(nst, stores, NULL));
  nst = ssink->nsrc;   /* a STORE whose gate sym proves false is gone */
  stores = (UOp **)ssink->src;
  if (c.lstores.n) {
    UOp *lsk = lower_simplify(uop_sink(c.lstores.n, (UOp *const *)c.lstores.v, NULL));
    c.lstores.n = 0;
    for (int i = 0; i < lsk->nsrc; i++) vec_push(&c.lstores, lsk->src[i]);
  }
  for (int i = 0; i < nst; i++)
    if (stores[i]->op != OP_STORE) tg_fail(TG_EINTERNAL, "lower: sym left a %s among the kernel's stores", op_names[stores[i]->op]);
  {
    UOp **all = arena_alloc(a, sizeof(UOp *) * (size_t)(nst + c.lstores.n + 1));
    memcpy(all, stores, sizeof(UOp *) * (size_t)nst);
    for (int i = 0; i < c.lstores.n; i++) all[nst + i] = c.lstores.v[i];
    lsink = uop_sink(nst + c.lstores.n, all, NULL);
  }
  Lin l = {.a = a, .nw = (c.next_range + 63) / 64 + 1, .ctxcap = 16};
  map_init(&l.fr, a);
  map_init(&l.groups, a);
  l.ctx = arena_alloc(a, sizeof(Scope *) * (size_t)l.ctxcap);
  UList ltopo = uop_toposort(lsink, NULL, NULL);
  compute_fr(&l, ltopo);
  Scope *root = scope_new(&l, NULL);
  l.ctx[0] = root; l.d = 0;
  bool grouped = threads && c.lstores.n;
  if (grouped) {
    /* inside the symbolic axes' loops: the partial values go to local memory first, then the
     * barrier, then the IF's stores (and a barrier before the next iteration's partials) */
    for (int i = 0; i < c.tloops.n; i++) open_loop(&l, c.tloops.v[i]);
    for (int i = 0; i < c.lstores.n; i++) emit(&l, c.lstores.v[i]);
    scope_insert(&l, l.ctx[l.d], (Item){LK_BARRIER, NULL, NULL, NULL}, false);
  }
  for (int i = 0; i < nst; i++) {
    UOp *s = stores[i];
    int nr = s->nsrc - 2, p = 0;
    while (p < nr && p < l.d && l.ctx[p + 1]->range == s->src[2 + p]) p++;
    while (l.d > p) close_loop(&l);
    for (int k = p; k < nr; k++) open_loop(&l, s->src[2 + k]);
    emit(&l, s);
  }
  if (grouped && c.tloops.n) {
    while (l.d > c.tloops.n) close_loop(&l);
    scope_insert(&l, l.ctx[l.d], (Item){LK_BARRIER, NULL, NULL, NULL}, false);
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
  pg->nopts = nopt;
  if (nopt) memcpy(pg->opts, opts, sizeof(KOpt) * (size_t)nopt);
  pg->upcast = 1;
  for (int f = 0; nopt && !threads && f < kx.nf; f++) if (grp[f] < 0 || grp[f] == f) pg->upcast *= fac[f];
  for (int p = 0; threads && p < pc.n; p++) if (pc.v[p].type == KAX_UPCAST || pc.v[p].type == KAX_UNROLL) pg->upcast *= pc.v[p].size;
  for (int d = 0; d < 3; d++) pg->gsize[d] = pg->lsize[d] = 1;
  if (threads) {
    /* the SPECIALs the kernel uses, gidx before lidx, by dimension */
    pg->specials = arena_alloc(a, sizeof(UOp *) * (size_t)(c.specials.n + 1));
    for (int i = 0; i < c.specials.n; i++) {
      bool used = false;
      for (int k = 0; k < ltopo.n && !used; k++) used = ltopo.v[k] == c.specials.v[i];
      if (used) pg->specials[pg->nspecial++] = c.specials.v[i];
    }
    memcpy(pg->gsize, c.gsize, sizeof pg->gsize);
    memcpy(pg->lsize, c.lsize, sizeof pg->lsize);
    if (pc.nolocals) for (int d = 0; d < 3; d++) pg->lsize[d] = 1;
    pg->local_buf = c.lbuf;
    int64_t nl = c.nslot;
    for (int p = 0; c.lbuf && p < pc.n; p++) if (pc.v[p].type == KAX_LOCAL || pc.v[p].type == KAX_GROUP) nl *= pc.v[p].size;
    pg->local_n = c.lbuf ? nl : 0;
    if (!pg->nspecial) { pg->specials = NULL; }
  }

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
    for (int k = 0; k < nst; k++) if (stores[k]->src[0]->src[0] == g) pg->globals[i].written = true;
  }
  qsort(pg->globals, (size_t)gl.n, sizeof(KParam), cmp_global);
  pg->nvars = vs.n;
  pg->vars = arena_alloc(a, sizeof(UOp *) * (size_t)(vs.n + 1));
  if (vs.n) memcpy(pg->vars, vs.v, sizeof(UOp *) * (size_t)vs.n);
  qsort(pg->vars, (size_t)vs.n, sizeof(UOp *), cmp_var);

  if (names) {
    const Value *key = v_str(lower_function_name(a, nm));
    bool isnew;
    void **slot = map_slot(&names->seen, (void *)key, key->hash, &isnew);
    intptr_t cnt = (intptr_t)*slot;
    if (cnt) nm = arena_printf(a, "%sn%d", nm, (int)cnt);
    *slot = (void *)(cnt + 1);
  }
  pg->name = nm;
  pg->base_name = base;
  pg->fname = lower_function_name(a, nm);
  return pg;
}
/* lower_kernel_in with uctx->lowering set (lib/symbolic then refuses a kernel's cast of NaN or inf
 * to an int as its own lane-folding bug, not as tinygrad's ValueError), cleared however it ends */
Program *lower_kernel_for(UOp *ast, KNames *names, const KOptCfg *cfg, const KTarget *tg) {
  const bool was = uctx->lowering;
  Program *p = NULL;
  TgTry t;
  uctx->lowering = true;
  if (TG_TRY(t)) {
    p = lower_kernel_in(ast, names, cfg, tg);
    tg_try_end(&t);
  } else {
    uctx->lowering = was;
    tg_rethrow();
  }
  uctx->lowering = was;
  return p;
}

const char *lower_kernel_name(UOp *ast) {
  static const KOptCfg noopt = {KOPT_NONE, 0, {{0}}, 0};
  return lower_kernel_with(ast, NULL, &noopt)->base_name;
}
