/* opt.c: tinygrad 0.11.0's kernel opts UPCAST and UNROLL (codegen/opt/kernel.py apply_opt and
 * shift_to) and its hand_coded_optimizations (codegen/opt/heuristic.py) for a target without local
 * memory, on a model of the Kernel's axes (KAxes: after simplify_ones + simplify_merge_adjacent).
 *
 * The model keeps what the heuristic reads: per axis its size, type and the merged axis it came
 * from, and per ShapeTracker views[-1].strides, whether real_strides() knows the stride, and
 * axis_is_masked. shift_to splits an axis into (size/amt, amt) and moves the amt part to insert_at;
 * the outer part's strides scale by amt; then axes of size 1 go (simplify_ones). kopt_factors then turns the splits into a factor per axis
 * of lower.c (innermost axis of a merged group first), which is what lowering needs. */
#include "codegen.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

enum { AX_LOOP, AX_REDUCE, AX_UPCAST, AX_UNROLL };

typedef struct MAxis { int64_t size; /* -1: symbolic */ uint8_t type; int origin; /* the merged axis */ } MAxis;
typedef struct Model {
  int n, cap, nst;
  MAxis *ax;
  KStAx **st;               /* st[t][i]: ShapeTracker t on axis i */
  int nsplit, split_m[KOPT_MAX], split_amt[KOPT_MAX];
} Model;

static void model_init(Arena *a, const KAxes *k, Model *m) {
  m->n = k->n; m->cap = k->n + KOPT_MAX + 1; m->nst = k->nst; m->nsplit = 0;
  m->ax = arena_alloc(a, sizeof(MAxis) * (size_t)m->cap);
  m->st = arena_alloc(a, sizeof(KStAx *) * (size_t)m->nst);
  for (int t = 0; t < m->nst; t++) {
    m->st[t] = arena_alloc(a, sizeof(KStAx) * (size_t)m->cap);
    memcpy(m->st[t], k->st[t], sizeof(KStAx) * (size_t)k->n);
  }
  for (int i = 0; i < k->n; i++)
    m->ax[i] = (MAxis){si_is_int(k->size[i]) ? k->size[i].c : -1, k->reduce[i] ? AX_REDUCE : AX_LOOP, i};
}
/* axis from moves to to (every ShapeTracker's view of it too) */
static void move_axis(Model *m, int to, int from) {
  m->ax[to] = m->ax[from];
  for (int t = 0; t < m->nst; t++) m->st[t][to] = m->st[t][from];
}

static bool is_type(const Model *m, int i, int t0, int t1) { return m->ax[i].type == t0 || m->ax[i].type == t1; }
static int upcastable(const Model *m, int *out) {
  int n = 0;
  for (int i = 0; i < m->n; i++) if (m->ax[i].type == AX_LOOP && m->ax[i].size > 1) out[n++] = i;
  return n;
}
static int unrollable(const Model *m, int *out) {
  int n = 0;
  for (int i = 0; i < m->n; i++) if (m->ax[i].type == AX_REDUCE && m->ax[i].size > 1) out[n++] = i;
  return n;
}

/* Kernel.shift_to(axis, amt, type, top=False, insert_at) */
static void shift_to(Model *m, int axis, int64_t amt, int type, int insert_at) {
  for (int j = m->n; j > insert_at; j--) move_axis(m, j, j - 1);
  m->n++;
  m->ax[insert_at] = (MAxis){amt, (uint8_t)type, m->ax[axis].origin};
  for (int t = 0; t < m->nst; t++) {
    KStAx *in = &m->st[t][insert_at], *x = &m->st[t][axis];
    /* new_shape_fxn: (s/amt, amt), or (1, 1) where the ShapeTracker has 1 there */
    bool one = x->shape == 1;
    *in = (KStAx){.shape = one ? 1 : amt, .stride = x->stride, .rstride = x->rstride, .real = x->real, .masked = x->masked};
    if (x->stride > 0) x->stride *= amt;
    if (x->rstride > 0) x->rstride *= amt;
    if (!one) x->shape /= amt;
  }
  m->ax[axis].size /= amt;
  m->split_m[m->nsplit] = m->ax[axis].origin; m->split_amt[m->nsplit] = (int)amt; m->nsplit++;
}

#define OPT_CHECK(cond, ...) do { if (!(cond)) { snprintf(why, wn, __VA_ARGS__); return false; } } while (0)

/* Kernel.apply_opt for UPCAST and UNROLL (KernelOptError -> false with why) */
static bool model_apply(Model *m, KOpt o, char *why, size_t wn) {
  int ax[64 + KOPT_MAX + 1], axis;
  OPT_CHECK(m->nsplit < KOPT_MAX, "more than %d opts", KOPT_MAX);
  if (o.op == KOPT_UNROLL) {
    int n = unrollable(m, ax);
    OPT_CHECK(o.axis >= 0 && o.axis < n, "invalid axis %d (%d unrollable)", o.axis, n);
    axis = ax[o.axis];
  } else {
    OPT_CHECK(o.axis >= 0 && o.axis < m->n, "invalid axis %d (%d axes)", o.axis, m->n);
    axis = o.axis;
  }
  int64_t amt = o.amt ? o.amt : m->ax[axis].size;
  OPT_CHECK(m->ax[axis].size > 0 && amt > 1, "shift of %lld, 1 or symbolic amount is meaningless", (long long)amt);
  OPT_CHECK(m->ax[axis].size % amt == 0, "no longer valid shift full_shape[%d]=%lld, amt=%lld", axis, (long long)m->ax[axis].size, (long long)amt);
  for (int t = 0; t < m->nst; t++)
    OPT_CHECK(m->st[t][axis].shape == 1 || (m->st[t][axis].shape > 0 && m->st[t][axis].shape % amt == 0), "no longer valid shift st.shape[%d]=%lld, amt=%lld",
              axis, (long long)m->st[t][axis].shape, (long long)amt);
  if (o.op == KOPT_UNROLL) {
    OPT_CHECK(!is_type(m, axis, AX_UPCAST, AX_UNROLL), "can't upcasted already upcasted");
    OPT_CHECK(amt <= 32, "don't unroll more than 32");
    shift_to(m, axis, amt, AX_UNROLL, m->n);
  } else {
    OPT_CHECK(m->ax[axis].type == AX_LOOP && m->ax[axis].size > 1, "axis %d is not upcastable", axis);
    OPT_CHECK(amt <= 16, "don't upcast more than 16");
    int at = 0;
    for (int i = 0; i < m->n; i++) if (is_type(m, i, AX_LOOP, AX_UPCAST)) at = i + 1;
    shift_to(m, axis, amt, AX_UPCAST, at);
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
  fprintf(stderr, "opts: %d axes:", k->n);
  for (int i = 0; i < k->n; i++) fprintf(stderr, " %lld%s", si_is_int(k->size[i]) ? (long long)k->size[i].c : -1LL, k->reduce[i] ? "r" : "");
  fprintf(stderr, "\n");
  for (int t = 0; t < k->nst; t++) {
    fprintf(stderr, "  st%d:", t);
    for (int i = 0; i < k->n; i++) fprintf(stderr, " %lld%s%s", (long long)k->st[t][i].stride, k->st[t][i].real ? "" : "?", k->st[t][i].masked ? "m" : "");
    fprintf(stderr, "\n");
  }
}

int kopt_heuristic(Arena *a, const KAxes *k, KOpt *out) {
  Model m;
  if (getenv("TGC_DEBUG_OPTS")) debug_axes(k);
  model_init(a, k, &m);
  int n = 0, ax[64 + KOPT_MAX + 1], na;
  /* GROUPTOP, image float4 and the grouping early-out need local memory: not on this target */

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
  return n;
}

bool kopt_factors(Arena *a, const KAxes *k, int n, const KOpt *v, int *fac, int *grp, char *why, size_t wn) {
  if (k->n > 64) { snprintf(why, wn, "more than 64 axes"); return false; }
  Model m;
  model_init(a, k, &m);
  for (int i = 0; i < n; i++) if (!model_apply(&m, v[i], why, wn)) return false;
  int64_t *rem = arena_alloc(a, sizeof(int64_t) * (size_t)(k->nf + 1));
  for (int f = 0; f < k->nf; f++) { fac[f] = 1; grp[f] = -1; rem[f] = si_is_int(k->fsize[f]) ? k->fsize[f].c : -1; }
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
        if (rem[f] < 1) ok = false;
        else if (rem[f] % amt == 0) { rem[f] /= amt; fac[f] *= (int)amt; amt = 1; }
        else if (amt % rem[f] == 0) { amt /= rem[f]; fac[f] *= (int)rem[f]; rem[f] = 1; }
        else ok = false;
      }
      ok &= amt == 1;
    }
    if (ok || total == 1) continue;
    /* not on whole loop axes: the group runs as one loop over the merged axis instead */
    int lead = k->kept[k->lo[mg]];
    for (int i = k->lo[mg]; i <= k->hi[mg]; i++) { int f = k->kept[i]; fac[f] = 1; grp[f] = lead; }
    fac[lead] = (int)total;
  }
  return true;
}

/* ---------------------------------------------------------------- the user's list */
bool kopt_parse(const char *s, KOptCfg *out, char *why, size_t wn) {
  out->mode = KOPT_LIST; out->n = 0;
  const char *p = s;
  while (*p) {
    char name[16];
    int axis, amt, used = 0;
    if (sscanf(p, "%15[A-Za-z]:%d:%d%n", name, &axis, &amt, &used) != 3 || used == 0) OPT_CHECK(false, "'%s' is not OP:AXIS:AMOUNT", p);
    KOpt o = {0, axis, amt};
    if (!strcasecmp(name, "UPCAST")) o.op = KOPT_UPCAST;
    else if (!strcasecmp(name, "UNROLL")) o.op = KOPT_UNROLL;
    else OPT_CHECK(false, "unknown opt '%s' (UPCAST or UNROLL)", name);
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
  for (int i = 0; i < n; i++) s = arena_printf(a, "%s%s%s:%d:%d", s, i ? "," : "", v[i].op == KOPT_UPCAST ? "UPCAST" : "UNROLL", v[i].axis, v[i].amt);
  return s;
}
