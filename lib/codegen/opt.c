/* opt.c: tinygrad 0.11.0's kernel opts (codegen/opt/kernel.py apply_opt and shift_to: UPCAST,
 * UNROLL, LOCAL, GROUP, GROUPTOP, NOLOCALS, SWAP, PADTO, with its KernelOptError checks) and its
 * hand_coded_optimizations (codegen/opt/heuristic.py), for a target without local memory (the C
 * backend) or with it (OpenCL, CUDA: KTarget), on a model of the Kernel's axes (KAxes: after
 * simplify_ones + simplify_merge_adjacent).
 *
 * The model keeps what the heuristic reads: per axis its size, type and the merged axis it came
 * from, and per ShapeTracker views[-1].strides and views[-1].mask, whether real_strides() knows the
 * stride, and axis_is_masked. shift_to splits an axis into (size/amt, amt) (GROUPTOP: (amt, size/amt)) and
 * moves the amt part to insert_at; the other part's strides scale by amt (a mask the split cuts
 * across makes View.reshape fail: the ShapeTracker then gets a contiguous last view); then axes of size 1 go
 * (simplify_ones). Each axis also keeps its weight in its merged axis (the merged index is the sum
 * of its pieces' index times weight), which is all a lowering with thread indices needs
 * (kopt_pieces). kopt_factors turns UPCAST/UNROLL splits into a factor per axis of lower.c
 * (innermost axis of a merged group first), which is what the loop lowering needs. */
#include "codegen.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

enum { AX_GLOBAL = KAX_GLOBAL, AX_LOCAL = KAX_LOCAL, AX_LOOP = KAX_LOOP, AX_UPCAST = KAX_UPCAST, AX_GROUP = KAX_GROUP,
       AX_REDUCE = KAX_REDUCE, AX_UNROLL = KAX_UNROLL };

/* tinygrad's Renderer fields the opts read: OpenCLRenderer and CUDARenderer (global/local maxima
 * for the launch dimensions, cstyle.py), ClangRenderer (no locals; shared_max the Renderer default) */
const KTarget ktarget_c = {"c", false, false, 32768, {0, 0, 0}, {0, 0, 0}};
const KTarget ktarget_opencl = {"opencl", true, true, 32768, {0x8FFFFFFF, 0x8FFFFFFF, 0x8FFFFFFF}, {0x8FFFFFFF, 0x8FFFFFFF, 0x8FFFFFFF}};
const KTarget ktarget_cuda = {"cuda", true, true, 49152, {2147483647, 65535, 65535}, {1024, 1024, 64}};

typedef struct MAxis {
  int64_t size;             /* -1: symbolic */
  uint8_t type;
  int origin;               /* the merged axis */
  int64_t weight;           /* this piece's index counts weight in the merged axis' index */
} MAxis;
typedef struct Model {
  int n, cap, nst;
  MAxis *ax;
  KStAx **st;               /* st[t][i]: ShapeTracker t on axis i */
  KStAx *tmp;               /* nst scratch entries for shift_to */
  int nsplit, split_m[KOPT_MAX], split_amt[KOPT_MAX];
  const KTarget *tg;
  int red_itemsize;         /* the reduceop's dtype itemsize (0: no reduce) */
  bool parallel_reduces, nolocals;
  const KAxes *k;
  int64_t *padto;           /* per merged axis: its size after PADTOs (0: not padded) */
} Model;

static void model_init(Arena *a, const KAxes *k, const KTarget *tg, Model *m) {
  m->n = k->n; m->cap = k->n + KOPT_MAX + 1; m->nst = k->nst; m->nsplit = 0;
  m->tg = tg; m->red_itemsize = k->red_itemsize; m->parallel_reduces = k->parallel_reduces; m->nolocals = false;
  m->k = k;
  m->padto = arena_alloc(a, sizeof(int64_t) * (size_t)(k->n + 1));   /* zeroed */
  m->ax = arena_alloc(a, sizeof(MAxis) * (size_t)m->cap);
  m->st = arena_alloc(a, sizeof(KStAx *) * (size_t)m->nst);
  m->tmp = arena_alloc(a, sizeof(KStAx) * (size_t)(m->nst + 1));
  for (int t = 0; t < m->nst; t++) {
    m->st[t] = arena_alloc(a, sizeof(KStAx) * (size_t)m->cap);
    memcpy(m->st[t], k->st[t], sizeof(KStAx) * (size_t)k->n);
  }
  for (int i = 0; i < k->n; i++)
    m->ax[i] = (MAxis){si_is_int(k->size[i]) ? k->size[i].c : -1, k->reduce[i] ? AX_REDUCE : tg->has_local ? AX_GLOBAL : AX_LOOP, i, 1};
}
/* axis from moves to to (every ShapeTracker's view of it too) */
static void move_axis(Model *m, int to, int from) {
  m->ax[to] = m->ax[from];
  for (int t = 0; t < m->nst; t++) m->st[t][to] = m->st[t][from];
}

static bool is_type(const Model *m, int i, int t0, int t1) { return m->ax[i].type == t0 || m->ax[i].type == t1; }
/* axes_of(...): the axes of any of the types in mask (bit per type), in order */
static int axes_of(const Model *m, unsigned mask, int *out) {
  int n = 0;
  for (int i = 0; i < m->n; i++) if (mask >> m->ax[i].type & 1) out[n++] = i;
  return n;
}
#define TB(t) (1u << (t))
/* upcastable_dims: GLOBAL, LOCAL and LOOP axes of an int size > 1 */
static int upcastable(const Model *m, int *out) {
  int n = 0;
  for (int i = 0; i < m->n; i++) if ((TB(AX_GLOBAL) | TB(AX_LOCAL) | TB(AX_LOOP)) >> m->ax[i].type & 1 && m->ax[i].size > 1) out[n++] = i;
  return n;
}
/* unrollable_dims: GROUP_REDUCE and REDUCE axes of an int size > 1 */
static int unrollable(const Model *m, int *out) {
  int n = 0;
  for (int i = 0; i < m->n; i++) if ((m->ax[i].type == AX_REDUCE || m->ax[i].type == AX_GROUP) && m->ax[i].size > 1) out[n++] = i;
  return n;
}
static int64_t prod_of(const Model *m, unsigned mask) {
  int64_t p = 1;
  for (int i = 0; i < m->n; i++) if (mask >> m->ax[i].type & 1) p *= m->ax[i].size;
  return p;
}
static int last_of(const Model *m, unsigned mask) {
  int r = -1;
  for (int i = 0; i < m->n; i++) if (mask >> m->ax[i].type & 1) r = i;
  return r;
}

/* Kernel.shift_to(axis, amt, type, top, insert_at): the axis splits into (size/amt, amt) (top:
 * (amt, size/amt)) and the amt part becomes an axis of type `type` at insert_at (list.insert's
 * position: the remaining part moves up when it is at or after it) */
static int64_t floordiv(int64_t a, int64_t b) { int64_t q = a / b; return q * b != a && (a < 0) != (b < 0) ? q - 1 : q; }
static int64_t floormod(int64_t a, int64_t b) { return a - floordiv(a, b) * b; }
/* View.reshape's _reshape_mask for one axis of size s split into (s/in, in) (in: the inner part's
 * size): the mask [lo, hi) splits unless it cuts across the inner part's blocks; then the parts'
 * masks are [lo//in, (hi-1)//in + 1) and [lo%in, (hi-1)%in + 1) */
static bool mask_splits(int64_t lo, int64_t hi, int64_t in) {
  return !((floormod(lo, in) != 0 || floormod(hi, in) != 0) && floordiv(lo, in) != floordiv(hi - 1, in));
}
/* a part's mask after a split: View.create drops a whole-axis mask, and a dim masked to one index
 * gets stride 0 */
static void part_mask(KStAx *x, int64_t lo, int64_t hi) {
  x->mlo = lo, x->mhi = hi;
  x->vm = !(lo == 0 && hi == x->shape);
  if (x->vm && hi - lo <= 1) x->stride = 0;
}
static void shift_to(Model *m, int axis, int64_t amt, int type, bool top, int insert_at) {
  KStAx *nw = m->tmp;
  for (int t = 0; t < m->nst; t++) {
    KStAx *x = &m->st[t][axis];
    /* new_shape_fxn: (s/amt, amt) or (amt, s/amt), or (1, 1) where the ShapeTracker has 1 there */
    bool one = x->shape == 1;
    int64_t s = x->shape, in = one ? 1 : top ? s / amt : amt;
    bool vm = x->vm && !one, splits = !vm || mask_splits(x->mlo, x->mhi, in);
    int64_t lo = x->mlo, hi = x->mhi;
    nw[t] = (KStAx){.shape = one ? 1 : amt, .stride = x->stride, .rstride = x->rstride, .real = x->real, .masked = x->masked};
    int64_t k = top ? (one ? 1 : x->shape / amt) : amt;   /* the outer part's stride scales by the inner size */
    KStAx *outer = top ? &nw[t] : x, *inner = top ? x : &nw[t];
    if (outer->stride > 0) outer->stride *= k;
    if (outer->rstride > 0) outer->rstride *= k;
    if (!one) x->shape /= amt;
    x->vm = false;
    if (vm && splits) {
      part_mask(outer, floordiv(lo, in), floordiv(hi - 1, in) + 1);
      part_mask(inner, floormod(lo, in), floormod(hi - 1, in) + 1);
    } else if (vm) {
      /* the mask cuts across the split: ShapeTracker.reshape appends a contiguous view of the new
       * shape (its real strides compose back to the old ones; views[-1] has these strides now and
       * no mask) */
      int64_t acc = 1;
      for (int j = m->n - 1; j >= 0; j--) {
        bool here = j == axis;
        KStAx *parts[2] = {here ? (top ? x : &nw[t]) : &m->st[t][j], here ? (top ? &nw[t] : x) : NULL};
        for (int p = 0; p < 2 && parts[p]; p++) {
          KStAx *y = parts[p];
          y->stride = y->shape == 1 ? 0 : acc;   /* strides_for_shape: 0 on a dim of 1 */
          y->vm = false;
          acc *= y->shape > 0 ? y->shape : 1;
        }
      }
    }
  }
  MAxis old = m->ax[axis];
  int64_t rest = old.size / amt;
  m->ax[axis].size = rest;
  m->ax[axis].weight = top ? old.weight : old.weight * amt;
  MAxis piece = {amt, (uint8_t)type, old.origin, top ? old.weight * rest : old.weight};
  for (int j = m->n; j > insert_at; j--) move_axis(m, j, j - 1);
  m->n++;
  m->ax[insert_at] = piece;
  for (int t = 0; t < m->nst; t++) m->st[t][insert_at] = nw[t];
  m->split_m[m->nsplit] = old.origin; m->split_amt[m->nsplit] = (int)amt; m->nsplit++;
}

#define OPT_CHECK(cond, ...) do { if (!(cond)) { snprintf(why, wn, __VA_ARGS__); return false; } } while (0)

static const char *const opt_names[] = {"UPCAST", "UNROLL", "LOCAL", "GROUP", "GROUPTOP", "NOLOCALS", "SWAP", "PADTO"};
static bool uses_locals(int op) { return op == KOPT_LOCAL || op == KOPT_GROUP || op == KOPT_GROUPTOP; }

/* PADTO (apply_opt's branch): every ShapeTracker that is not 1 on the axis is padded on the right
 * to a multiple of amt (masked there), if that at most quadruples it; a reduce axis only when the
 * padding adds zeros to a sum. tinygrad checks the first reduce of the kernel; tgc checks every
 * reduce (pad_safe), so a sum over values another reduce makes non-zero in the padding is refused.
 * tgc lowers a pad as a longer loop whose loads and stores are masked past the old end, so it
 * also needs the piece padded to be the outermost of its axis (its index, times its weight, is then
 * the axis' index: padding the piece pads the loop); an axis merged from several loops then runs
 * as one loop (kopt_factors) */
static bool model_pad(Model *m, int axis, int64_t amt, char *why, size_t wn) {
  OPT_CHECK(!m->k->has_vars, "does not work with symbolic shape");
  OPT_CHECK(!is_type(m, axis, AX_UPCAST, AX_UNROLL), "cannot pad upcasted");
  if (m->red_itemsize && is_type(m, axis, AX_GROUP, AX_REDUCE)) OPT_CHECK(m->k->pad_safe, "cannot pad a reduce that is not a sum of ops with f(0) = 0");
  bool padded = false;
  for (int t = 0; t < m->nst; t++) {
    KStAx *x = &m->st[t][axis];
    if (x->shape == 1) continue;   /* reduced */
    OPT_CHECK(x->shape > amt / 4, "pad adds more than quadruple the work st.shape[%d]=%lld > amt//4=%lld", axis, (long long)x->shape, (long long)(amt / 4));
    int64_t ru = (x->shape + amt - 1) / amt * amt - x->shape;
    if (ru) {
      /* View.pad: the mask on the axis is the old extent (within a mask already there) */
      if (!x->vm) x->mlo = 0, x->mhi = x->shape;
      x->vm = true;
      x->shape += ru; x->masked = true; padded = true;
    }
  }
  OPT_CHECK(padded, "nothing was padded");
  const MAxis *p = &m->ax[axis];
  int o = p->origin;
  int64_t total = 1;
  for (int i = 0; i < m->n; i++) if (m->ax[i].origin == o) total *= m->ax[i].size;
  OPT_CHECK(p->weight * p->size == total, "tgc pads only the outermost piece of a split axis");
  int64_t to = (p->size + amt - 1) / amt * amt;
  m->padto[o] = total / p->size * to;
  m->ax[axis].size = to;
  return true;
}

/* Kernel.apply_opt (KernelOptError -> false with why), its checks in its order */
static bool model_apply(Model *m, KOpt o, char *why, size_t wn) {
  int ax[64 + KOPT_MAX + 1], axis = -1, na;
  OPT_CHECK(m->nsplit < KOPT_MAX, "more than %d opts", KOPT_MAX);
  OPT_CHECK(o.op <= KOPT_PADTO, "unknown opt %d", o.op);
  if (m->nolocals) OPT_CHECK(!uses_locals(o.op), "not using locals");
  /* real_axis */
  if (o.op == KOPT_UNROLL) {
    na = unrollable(m, ax);
    OPT_CHECK(o.axis >= 0 && o.axis < na, "invalid axis %d (%d unrollable)", o.axis, na);
    axis = ax[o.axis];
  } else if (o.op == KOPT_GROUP || o.op == KOPT_GROUPTOP) {
    na = axes_of(m, TB(AX_REDUCE), ax);
    OPT_CHECK(o.axis >= 0 && o.axis < na, "invalid axis %d (%d reduce axes)", o.axis, na);
    axis = ax[o.axis];
  } else if (o.op != KOPT_NOLOCALS) {
    OPT_CHECK(o.axis >= 0 && o.axis < m->n, "invalid axis %d (%d axes)", o.axis, m->n);
    axis = o.axis;
  }
  int64_t amt = -1;
  if (o.op == KOPT_SWAP) {
    OPT_CHECK(o.amt >= 0 && o.amt < m->n, "invalid axis %d (%d axes)", o.amt, m->n);
    amt = o.amt;
  } else if (o.op != KOPT_NOLOCALS) {
    amt = o.amt ? o.amt : m->ax[axis].size;
    OPT_CHECK(m->ax[axis].size > 0 && amt > 1, "shift/padto of %lld, 1 or symbolic amount is meaningless", (long long)amt);
    if (o.op != KOPT_PADTO) {
      OPT_CHECK(m->ax[axis].size % amt == 0, "no longer valid shift full_shape[%d]=%lld, amt=%lld", axis, (long long)m->ax[axis].size, (long long)amt);
      for (int t = 0; t < m->nst; t++)
        OPT_CHECK(m->st[t][axis].shape == 1 || (m->st[t][axis].shape > 0 && m->st[t][axis].shape % amt == 0), "no longer valid shift st.shape[%d]=%lld, amt=%lld",
                  axis, (long long)m->st[t][axis].shape, (long long)amt);
    }
  }
  /* local memory for a grouped reduce: one accumulator per thread, upcast and group member */
  bool grouping = axes_of(m, TB(AX_GROUP), ax) > 0;
  if (m->red_itemsize && (o.op == KOPT_GROUP || o.op == KOPT_GROUPTOP || (grouping && o.op != KOPT_NOLOCALS && o.op != KOPT_PADTO))) {
    int64_t smem = amt * m->red_itemsize * prod_of(m, TB(AX_UPCAST)) * prod_of(m, TB(AX_LOCAL));
    OPT_CHECK(smem <= m->tg->shared_max, "exceeds maximum shared memory size: needs %lld, max %lld", (long long)smem, (long long)m->tg->shared_max);
  }
  switch (o.op) {
  case KOPT_LOCAL:
    OPT_CHECK(m->tg->has_local, "target does not support local");
    OPT_CHECK(m->ax[axis].type == AX_GLOBAL, "local is for globals");
    shift_to(m, axis, amt, AX_LOCAL, false, last_of(m, TB(AX_GLOBAL) | TB(AX_LOCAL)) + 1);
    break;
  case KOPT_GROUP: case KOPT_GROUPTOP:
    OPT_CHECK(m->tg->has_local && m->tg->has_shared, "target does not support local or shared mem");
    OPT_CHECK(m->ax[axis].type == AX_REDUCE, "must be reduce axis to group");
    OPT_CHECK(!m->parallel_reduces, "can't group with parallel reduces");
    axes_of(m, TB(AX_REDUCE), ax);
    shift_to(m, axis, amt, AX_GROUP, o.op == KOPT_GROUPTOP, ax[0]);
    break;
  case KOPT_UNROLL:
    OPT_CHECK(!is_type(m, axis, AX_UPCAST, AX_UNROLL), "can't upcasted already upcasted");
    OPT_CHECK(amt <= 32, "don't unroll more than 32");
    shift_to(m, axis, amt, AX_UNROLL, false, m->n);
    break;
  case KOPT_UPCAST: {
    bool ok = false;
    na = upcastable(m, ax);
    for (int i = 0; i < na; i++) ok |= ax[i] == axis;
    OPT_CHECK(ok, "axis %d is not upcastable", axis);
    OPT_CHECK(amt <= 16, "don't upcast more than 16");
    shift_to(m, axis, amt, AX_UPCAST, false, last_of(m, TB(AX_GLOBAL) | TB(AX_LOCAL) | TB(AX_LOOP) | TB(AX_UPCAST)) + 1);
    break;
  }
  case KOPT_NOLOCALS:
    OPT_CHECK(m->tg->has_local && !m->nolocals, "NOLOCALS is meaningless if target does not support local or already not using locals");
    OPT_CHECK(axes_of(m, TB(AX_LOCAL) | TB(AX_GROUP), ax) == 0, "can't have no locals with locals");
    m->nolocals = true;
    break;
  case KOPT_SWAP: {
    OPT_CHECK(axis < amt, "swap is only for axis < amt, getting amt=%lld, axis=%d", (long long)amt, axis);
    OPT_CHECK(m->ax[axis].type == AX_GLOBAL && m->ax[amt].type == AX_GLOBAL, "swap is for globals");
    MAxis tmp = m->ax[axis]; m->ax[axis] = m->ax[amt]; m->ax[amt] = tmp;
    for (int t = 0; t < m->nst; t++) { KStAx x = m->st[t][axis]; m->st[t][axis] = m->st[t][amt]; m->st[t][amt] = x; }
    break;
  }
  case KOPT_PADTO:
    if (!model_pad(m, axis, amt, why, wn)) return false;
    break;
  }
  /* simplify_ones: axes of size 1 go */
  int w = 0;
  for (int i = 0; i < m->n; i++) {
    if (m->ax[i].size == 1) continue;
    move_axis(m, w++, i);
  }
  m->n = w;
  return true;
}

/* a fresh model of k with opts v applied in order (false with why at the first that does not apply) */
static bool model_replay(Arena *a, const KAxes *k, const KTarget *tg, int n, const KOpt *v, Model *m, char *why, size_t wn) {
  model_init(a, k, tg, m);
  for (int i = 0; i < n; i++) if (!model_apply(m, v[i], why, wn)) return false;
  return true;
}

static int64_t upcast_size(const Model *m) {
  int64_t p = 1;
  for (int i = 0; i < m->n; i++) if (is_type(m, i, AX_UPCAST, AX_UNROLL)) p *= m->ax[i].size;
  return p;
}
static bool try_opt(Model *m, KOpt *out, int *n, KOpt o) {
  char why[128];
  if (*n >= KOPT_MAX || !model_apply(m, o, why, sizeof why)) return false;
  out[(*n)++] = o;
  return true;
}

/* TGC_DEBUG_OPTS=1: the axes and ShapeTrackers the heuristic sees, on stderr */
static void debug_axes(const KAxes *k) {
  fprintf(stderr, "opts: mv %d %d, reduce itemsize %d%s; %d axes:", k->mv0, k->mv1, k->red_itemsize, k->parallel_reduces ? " (parallel)" : "", k->n);
  for (int i = 0; i < k->n; i++) fprintf(stderr, " %lld%s", si_is_int(k->size[i]) ? (long long)k->size[i].c : -1LL, k->reduce[i] ? "r" : "");
  fprintf(stderr, "\n");
  for (int t = 0; t < k->nst; t++) {
    fprintf(stderr, "  st%d:", t);
    for (int i = 0; i < k->n; i++) fprintf(stderr, " %lld%s%s", (long long)k->st[t][i].stride, k->st[t][i].real ? "" : "?", k->st[t][i].masked ? "m" : "");
    fprintf(stderr, "\n");
  }
}

/* has_expanded_axis: some axis of size > 1 where ShapeTracker t's real stride is 0 */
static bool expanded_st(const Model *m, int t) {
  for (int i = 0; i < m->n; i++) if (m->st[t][i].shape > 1 && m->st[t][i].real && m->st[t][i].rstride == 0) return true;
  return false;
}

int kopt_heuristic(Arena *a, const KAxes *k, const KTarget *tg, KOpt *out) {
  Model m;
  if (getenv("TGC_DEBUG_OPTS")) debug_axes(k);
  model_init(a, k, tg, &m);
  int n = 0, ax[64 + KOPT_MAX + 1], na;

  /* matvec (a sum of the products of two loads, the first contiguous along the first reduce axis,
   * not both expanded): GROUP the reduce over 8 threads, 4 rows per block, 4 rows per thread */
  if (tg->has_local && tg->has_shared && k->mv0 >= 0 && m.n >= 2 && axes_of(&m, TB(AX_REDUCE), ax) > 0) {
    int fr = ax[0];
    const KStAx *s0 = &m.st[k->mv0][fr];
    if (s0->real && s0->rstride == 1 && !(expanded_st(&m, k->mv0) && expanded_st(&m, k->mv1))) {
      int g[64 + KOPT_MAX + 1], ng = axes_of(&m, TB(AX_GLOBAL), g);
      for (int i = 0; i < ng; i++) {
        if (m.ax[fr].size % 8 != 0 || m.ax[g[i]].size % 16 != 0) continue;
        /* tinygrad applies these unguarded: a refusal is its KernelOptError */
        if (try_opt(&m, out, &n, (KOpt){KOPT_GROUP, 0, 8}) && try_opt(&m, out, &n, (KOpt){KOPT_LOCAL, g[i], 4})) try_opt(&m, out, &n, (KOpt){KOPT_UPCAST, g[i], 4});
        return n;
      }
    }
  }

  /* are we grouping? a small output: split the first reduce over 16 threads (GROUPTOP) */
  if (tg->has_local) {
    na = upcastable(&m, ax);
    int64_t p = 1;
    for (int i = 0; i < na && p > 0; i++) p = m.st[0][ax[i]].shape > 0 ? p * m.st[0][ax[i]].shape : -1;
    if (p > 0 && p <= 2048) try_opt(&m, out, &n, (KOpt){KOPT_GROUPTOP, 0, 16});
  }
  /* (image float4 upcasts: no images here) no more opts if we are grouping */
  if (axes_of(&m, TB(AX_GROUP), ax)) return n;

  /* small masked axes (from Tensor.stack): upcast them whole */
  int to_up[64 + KOPT_MAX + 1], nt = 0;
  int64_t prod = 1;
  na = upcastable(&m, ax);
  for (int i = 0; i < na; i++) {
    int axis = ax[i];
    bool masked = false;
    for (int t = 0; t < m.nst; t++) masked |= m.st[t][axis].masked;
    if (m.ax[axis].size <= 7 && masked && prod * m.ax[axis].size <= 49) { to_up[nt++] = axis; prod *= m.ax[axis].size; }
  }
  for (int i = nt - 1; i >= 0; i--) try_opt(&m, out, &n, (KOpt){KOPT_UPCAST, to_up[i], 0});

  /* more upcasts of output axes where some buffer has stride 0 (reuse) */
  bool upcasted_axis[64 + KOPT_MAX + 1] = {0};
  for (;;) {
    na = upcastable(&m, ax);
    int64_t p = 1;
    for (int i = 0; i < na; i++) p *= m.ax[ax[i]].size;
    if (p < 1024) break;
    int64_t best[4] = {0};
    bool have = false;
    for (int i = 0; i < na; i++) {
      int axis = ax[i];
      for (int amt = 3; amt <= 4; amt++) {
        if (upcasted_axis[axis] || m.ax[axis].size % amt) continue;
        bool any = false;
        for (int t = 0; t < m.nst && !any; t++) {
          if (m.st[t][axis].stride != 0) continue;
          bool all = true;
          for (int j = 0; j < m.n && all; j++)
            if (is_type(&m, j, AX_UPCAST, AX_UNROLL) && m.st[t][j].real && m.st[t][j].rstride == 0) all = false;
          any = all;
        }
        if (!any) continue;
        int64_t key[4] = {0, 0, axis, amt};
        for (int t = 0; t < m.nst; t++) { key[0] += m.st[t][axis].stride > 0; if (m.st[t][axis].stride > 0) key[1] += m.st[t][axis].stride; }
        bool less = !have;
        for (int q = 0; q < 4 && !less; q++) { if (key[q] != best[q]) { less = key[q] < best[q]; break; } }
        if (less) { memcpy(best, key, sizeof best); have = true; }
      }
    }
    if (!have || !try_opt(&m, out, &n, (KOpt){KOPT_UPCAST, (int)best[2], (int)best[3]})) break;
    upcasted_axis[best[2]] = true;
  }

  /* if the last reduce axis is small(ish), unroll it */
  int64_t us = upcast_size(&m);
  bool has_unroll = false;
  for (int i = 0; i < m.n; i++) has_unroll |= m.ax[i].type == AX_UNROLL;
  na = unrollable(&m, ax);
  if (na && (us <= 4 || !has_unroll) && us < 64) {
    int64_t s = m.ax[ax[na - 1]].size;
    if (s <= 32) {
      if (try_opt(&m, out, &n, (KOpt){KOPT_UNROLL, na - 1, 0})) {
        na = unrollable(&m, ax);
        if (na && s <= 3 && m.ax[ax[na - 1]].size <= 3) try_opt(&m, out, &n, (KOpt){KOPT_UNROLL, na - 1, 0});
      }
    } else if (s % 4 == 0) try_opt(&m, out, &n, (KOpt){KOPT_UNROLL, na - 1, 4});
  }

  /* if nothing at all is upcasted and it's easy to, do an upcast */
  bool upcasted = false;
  for (int i = 0; i < m.n; i++) upcasted |= is_type(&m, i, AX_UPCAST, AX_UNROLL);
  na = upcastable(&m, ax);
  if (!upcasted && na && m.ax[ax[na - 1]].size % 4 == 0) try_opt(&m, out, &n, (KOpt){KOPT_UPCAST, ax[na - 1], 4});

  /* local groups: up to 3 GLOBAL axes get a LOCAL part (<= 128 threads), the ranking's first axes
   * first: those where some ShapeTracker has stride 0 (the full-shape one always does), then the
   * last axis first */
  if (tg->has_local) {
    na = axes_of(&m, TB(AX_GLOBAL) | TB(AX_LOOP), ax);
    int rank[64 + KOPT_MAX + 1], nr = 0;
    for (int pass = 1; pass >= 0; pass--)
      for (int i = na - 1; i >= 0; i--) {
        bool zero = false;
        for (int t = 0; t < m.nst; t++) zero |= m.st[t][ax[i]].stride == 0;
        if (zero == (pass == 1)) rank[nr++] = ax[i];
      }
    int tl_ax[64 + KOPT_MAX + 1], tl_sz[64 + KOPT_MAX + 1], nl = 0;
    for (int i = 0; i < nr; i++) {
      int axis = rank[i];
      int64_t local_size = 1;
      for (int j = 0; j < nl; j++) local_size *= tl_sz[j];
      static const int cands[] = {32, 16, 8, 4, 3, 2};
      for (int c = axis == 0 ? 0 : 1; c < 6; c++)
        if (m.ax[axis].size > 0 && m.ax[axis].size % cands[c] == 0 && local_size * cands[c] <= 128) { tl_ax[nl] = axis; tl_sz[nl] = cands[c]; nl++; break; }
    }
    if (nl > 3) nl = 3;
    for (int i = 0; i < nl; i++)   /* sorted by (axis, size) */
      for (int j = i + 1; j < nl; j++)
        if (tl_ax[j] < tl_ax[i] || (tl_ax[j] == tl_ax[i] && tl_sz[j] < tl_sz[i])) {
          int t0 = tl_ax[i], t1 = tl_sz[i];
          tl_ax[i] = tl_ax[j]; tl_sz[i] = tl_sz[j]; tl_ax[j] = t0; tl_sz[j] = t1;
        }
    int deleted = 0;
    for (int i = 0; i < nl; i++) {
      int axis = tl_ax[i] - deleted;
      bool del = axis < m.n && tl_sz[i] == m.ax[axis].size;
      if (!try_opt(&m, out, &n, (KOpt){KOPT_LOCAL, axis, tl_sz[i]})) break;   /* tinygrad raises here */
      if (del) deleted++;
    }
  }
  return n;
}

/* kopt_cpu_step: tgc's own step after the heuristic on a CPU whose vectors hold `lanes` floats
 * (tinygrad has no such step; run -d cpu takes it, a list given by hand never does). Three cases:
 *  - register tile: where the heuristic upcast two output axes for reuse (a matmul's 4x4 tile: 4
 *    rows of 4 contiguous output columns), the C compiler keeps 4 vector accumulators of 4 floats
 *    and each FMA waits for the one before on its row: the loop runs at the FMA latency, not its
 *    throughput. Upcasting the columns' loop axis up to `lanes` contiguous floats (one machine
 *    vector) and the rows' up to 8 gives 8 independent full-width accumulators (tinygrad's BEAM
 *    finds such tiles on this kind of machine). Each output still sums its products in order.
 *    Only float32/int32 reduces whose heuristic opts upcast exactly those two axes.
 *  - dense_lone_upcast and dense_last_unroll (below): a 4-way UPCAST/UNROLL of an axis every buffer
 *    walks densely, in a kernel that evaluates a transcendental, is dropped. */
static int loop_piece(const Model *m, int up, int64_t stride) {
  for (int i = 0; i < m->n; i++)
    if (m->ax[i].type == AX_LOOP && m->ax[i].origin == m->ax[up].origin && m->st[0][i].stride == stride) return i;
  return -1;
}
static bool reuse_axis(const Model *m, int axis) {
  for (int t = 1; t < m->nst; t++) if (m->st[t][axis].shape > 1 && m->st[t][axis].stride == 0) return true;
  return false;
}
/* the heuristic's last resort on an elementwise kernel, UPCAST of the innermost axis by 4, where
 * every buffer walks that axis densely (stride 1, or 0: a broadcast) and the body evaluates a
 * transcendental: the loop body is 4 copies of the polynomial, which the vectorizer de-interleaves
 * with shuffles; the plain loop vectorizes at the machine's width without them (softmax's exp
 * kernel: 20% faster). A cheap body keeps the upcast: there its 4 vectors an iteration hide the
 * loop's own overhead (layernorm's last kernel runs at half speed without it). */
static bool dense_lone_upcast(const KAxes *k, int n, const KOpt *opts) {
  if (!k->transcendental || k->red_itemsize || n != 1 || opts[0].op != KOPT_UPCAST || opts[0].axis != k->n - 1) return false;
  for (int i = 0; i < k->n; i++) if (k->reduce[i]) return false;
  int ax = k->n - 1;
  if (k->st[0][ax].stride != 1) return false;
  for (int t = 0; t < k->nst; t++) {
    const KStAx *x = &k->st[t][ax];
    if (x->masked || (x->stride != 0 && x->stride != 1)) return false;
  }
  return true;
}

/* the same for a float sum of a transcendental (softmax's sum of exps): the heuristic's closing
 * UNROLL of a reduce axis every buffer walks densely puts 4 interleaved values in each update; the
 * C backend then splits the reduce loop per accumulator into simd reductions (render/loops.c
 * fission), which vectorize without shuffles when the unroll is gone (11% faster). Each sum still
 * adds its values in their order. Only where every reduce sums a transcendental itself: a sum of
 * products without its UNROLL is a REDUCE of one MUL chain, whose factors that use no reduce range
 * symbolic's reduce_mul_chain moves after the sum (sum(e*d*v*v) becomes sum(e*d)*v*v: softmax's
 * backward), which rounds differently from tinygrad's unrolled kernel. */
static bool dense_last_unroll(Arena *a, const KAxes *k, const KTarget *tg, int n, const KOpt *opts) {
  if (!k->transcendental || !k->red_fsum || !k->sums_of_transcendentals || n < 1 || opts[n - 1].op != KOPT_UNROLL) return false;
  Model m;
  char why[128];
  if (!model_replay(a, k, tg, n - 1, opts, &m, why, sizeof why)) return false;
  int ax[64 + KOPT_MAX + 1], na = unrollable(&m, ax);
  if (opts[n - 1].axis < 0 || opts[n - 1].axis >= na) return false;
  int axis = ax[opts[n - 1].axis];
  for (int t = 0; t < m.nst; t++) {
    const KStAx *x = &m.st[t][axis];
    if (x->shape <= 1) continue;
    if (x->masked || !x->real || (x->rstride != 0 && x->rstride != 1)) return false;
  }
  return true;
}

int kopt_cpu_step(Arena *a, const KAxes *k, const KTarget *tg, int lanes, int n, KOpt *opts) {
  if (tg->has_local || lanes < 8) return n;
  if (dense_lone_upcast(k, n, opts)) return 0;
  if (dense_last_unroll(a, k, tg, n, opts)) return n - 1;
  if (k->red_itemsize != 4 || n + 2 > KOPT_MAX) return n;
  Model m;
  char why[128];
  if (!model_replay(a, k, tg, n, opts, &m, why, sizeof why)) return n;
  int ax[64 + KOPT_MAX + 1];
  if (!unrollable(&m, ax) && !axes_of(&m, TB(AX_UNROLL), ax)) return n;
  int col = -1, row = -1, nup = 0;
  for (int i = 0; i < m.n; i++) {
    if (m.ax[i].type != AX_UPCAST) continue;
    nup++;
    if (m.st[0][i].stride == 1 && col < 0) col = i;
    else if (m.st[0][i].stride > 1 && row < 0) row = i;
  }
  bool tile = nup == 2 && col >= 0 && row >= 0 && m.ax[col].origin != m.ax[row].origin && reuse_axis(&m, col) && reuse_axis(&m, row);
  if (!tile) return n;
  int64_t cs = m.ax[col].size, rs = m.ax[row].size, rstride = m.st[0][row].stride;
  if (cs >= lanes || rs >= 8 || lanes % cs || 8 % rs) return n;
  KOpt ext[2];
  int next = 0;
  int lc = loop_piece(&m, col, cs);
  if (lc < 0 || m.ax[lc].size % (lanes / cs)) return n;
  ext[next] = (KOpt){KOPT_UPCAST, lc, (int)(lanes / cs)};
  if (!model_apply(&m, ext[next], why, sizeof why)) return n;
  next++;
  int lr = loop_piece(&m, row, rs * rstride);
  if (lr >= 0 && m.ax[lr].size % (8 / rs) == 0) {
    ext[next] = (KOpt){KOPT_UPCAST, lr, (int)(8 / rs)};
    if (model_apply(&m, ext[next], why, sizeof why)) next++;
  }
  memcpy(opts + n, ext, sizeof(KOpt) * (size_t)next);
  return n + next;
}

/* the digit of split s of size amt on F axis f */
static void add_digit(KDigits *dig, int f, int s, int64_t amt) {
  if (dig && dig[f].n < KOPT_MAX) { dig[f].opt[dig[f].n] = s; dig[f].amt[dig[f].n] = amt; dig[f].n++; }
}
bool kopt_factors(Arena *a, const KAxes *k, const KTarget *tg, int n, const KOpt *v, int *fac, int *grp, KDigits *dig, char *why, size_t wn) {
  if (k->n > 64) { snprintf(why, wn, "more than 64 axes"); return false; }
  Model m;
  if (!model_replay(a, k, tg, n, v, &m, why, wn)) return false;
  for (int i = 0; i < n; i++)
    if (v[i].op != KOPT_UPCAST && v[i].op != KOPT_UNROLL && v[i].op != KOPT_NOLOCALS && v[i].op != KOPT_PADTO) { snprintf(why, wn, "%s needs thread indices", opt_names[v[i].op]); return false; }
  int64_t *rem = arena_alloc(a, sizeof(int64_t) * (size_t)(k->nf + 1));
  for (int f = 0; f < k->nf; f++) { fac[f] = 1; grp[f] = -1; rem[f] = si_is_int(k->fsize[f]) ? k->fsize[f].c : -1; if (dig) dig[f].n = 0; }
  for (int mg = 0; mg < k->n; mg++) if (m.padto[mg] && k->lo[mg] == k->hi[mg]) rem[k->kept[k->lo[mg]]] = m.padto[mg];
  for (int mg = 0; mg < k->n; mg++) {
    /* the splits of merged axis mg, innermost first, each from the innermost axis with room */
    bool ok = true;
    int64_t total = 1;
    for (int s = 0; s < m.nsplit; s++) {
      if (m.split_m[s] != mg) continue;
      int64_t amt = m.split_amt[s];
      total *= amt;
      for (int i = k->hi[mg]; i >= k->lo[mg] && amt > 1 && ok; i--) {
        int f = k->kept[i];
        if (rem[f] == 1) continue;
        if (rem[f] < 1) { ok = false; continue; }
        if (rem[f] % amt == 0) { rem[f] /= amt; fac[f] *= (int)amt; add_digit(dig, f, s, amt); amt = 1; }
        else if (amt % rem[f] == 0) { amt /= rem[f]; fac[f] *= (int)rem[f]; add_digit(dig, f, s, rem[f]); rem[f] = 1; }
        else ok = false;
      }
      ok &= amt == 1;
    }
    if ((ok || total == 1) && k->hi[mg] == k->lo[mg]) continue;
    /* a merged axis of several F axes runs as one loop over the merged axis, as tinygrad's kernel
     * does (its ShapeTrackers reshaped to the merged shape); so does one whose splits do not fall
     * on whole F axes */
    int lead = k->kept[k->lo[mg]];
    for (int i = k->lo[mg]; i <= k->hi[mg]; i++) { int f = k->kept[i]; fac[f] = 1; grp[f] = lead; if (dig) dig[f].n = 0; }
    fac[lead] = (int)total;
    for (int s = 0; s < m.nsplit; s++) if (m.split_m[s] == mg) add_digit(dig, lead, s, m.split_amt[s]);
  }
  return true;
}

int kopt_pads(Arena *a, const KAxes *k, const KTarget *tg, int n, const KOpt *v, int64_t *fto) {
  for (int f = 0; f < k->nf; f++) fto[f] = 0;
  bool any = false;
  for (int i = 0; i < n; i++) any |= v[i].op == KOPT_PADTO;
  if (!any || k->n > 64) return 0;
  Model m;
  char why[256];
  if (!model_replay(a, k, tg, n, v, &m, why, sizeof why)) return 0;
  int np = 0;
  for (int mg = 0; mg < k->n; mg++) if (m.padto[mg]) { fto[k->kept[k->lo[mg]]] = m.padto[mg]; np++; }
  return np;
}

bool kopt_pieces(Arena *a, const KAxes *k, const KTarget *tg, int n, const KOpt *v, KPieces *out, char *why, size_t wn) {
  if (k->n > 64) { snprintf(why, wn, "more than 64 axes"); return false; }
  Model m;
  if (!model_replay(a, k, tg, n, v, &m, why, wn)) return false;
  out->n = m.n;
  out->nolocals = m.nolocals;
  out->v = arena_alloc(a, sizeof(KPiece) * (size_t)(m.n + 1));
  for (int i = 0; i < m.n; i++) out->v[i] = (KPiece){m.ax[i].type, m.ax[i].origin, m.ax[i].size, m.ax[i].weight};
  return true;
}

/* ---------------------------------------------------------------- the user's list */
bool kopt_parse(const char *s, KOptCfg *out, char *why, size_t wn) {
  out->mode = KOPT_LIST; out->n = 0;
  const char *p = s;
  while (*p) {
    char name[16];
    int axis, amt, used = 0;
    if (strncasecmp(p, "NOLOCALS", 8) == 0 && (p[8] == 0 || p[8] == ',')) { axis = amt = 0; used = 8; snprintf(name, sizeof name, "NOLOCALS"); }
    else if (sscanf(p, "%15[A-Za-z]:%d:%d%n", name, &axis, &amt, &used) != 3 || used == 0) OPT_CHECK(false, "'%s' is not OP:AXIS:AMOUNT", p);
    KOpt o = {0, axis, amt};
    int op = -1;
    for (int i = 0; i < (int)(sizeof opt_names / sizeof *opt_names); i++) if (!strcasecmp(name, opt_names[i])) op = i;
    OPT_CHECK(op >= 0, "unknown opt '%s' (UPCAST, UNROLL, LOCAL, GROUP, GROUPTOP, NOLOCALS, SWAP or PADTO)", name);
    o.op = (uint8_t)op;
    OPT_CHECK(axis >= 0 && amt >= 0, "'%.*s': axis and amount must be >= 0", used, p);
    OPT_CHECK(out->n < KOPT_MAX, "more than %d opts", KOPT_MAX);
    out->v[out->n++] = o;
    p += used;
    if (*p == ',') p++;
    else OPT_CHECK(*p == 0, "expected ',' at '%s'", p);
  }
  return true;
}

const char *kopt_format(Arena *a, int n, const KOpt *v) {
  const char *s = "";
  for (int i = 0; i < n; i++)
    s = v[i].op == KOPT_NOLOCALS ? arena_printf(a, "%s%sNOLOCALS", s, i ? "," : "")
                                 : arena_printf(a, "%s%s%s:%d:%d", s, i ? "," : "", opt_names[v[i].op], v[i].axis, v[i].amt);
  return s;
}
