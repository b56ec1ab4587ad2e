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

typedef struct Model {
  int n, cap, nst;
  int64_t *size;            /* -1: symbolic */
  uint8_t *type;
  int *origin;              /* the merged axis */
  int64_t **shape, **stride, **rstride; bool **real, **masked;
  int nsplit, split_m[KOPT_MAX], split_amt[KOPT_MAX];
} Model;

static void model_init(Arena *a, const KAxes *k, Model *m) {
  m->n = k->n; m->cap = k->n + KOPT_MAX + 1; m->nst = k->nst; m->nsplit = 0;
  m->size = arena_alloc(a, sizeof(int64_t) * (size_t)m->cap);
  m->type = arena_alloc(a, (size_t)m->cap);
  m->origin = arena_alloc(a, sizeof(int) * (size_t)m->cap);
  m->stride = arena_alloc(a, sizeof(int64_t *) * (size_t)m->nst);
  m->rstride = arena_alloc(a, sizeof(int64_t *) * (size_t)m->nst);
  m->shape = arena_alloc(a, sizeof(int64_t *) * (size_t)m->nst);
  m->real = arena_alloc(a, sizeof(bool *) * (size_t)m->nst);
  m->masked = arena_alloc(a, sizeof(bool *) * (size_t)m->nst);
  for (int t = 0; t < m->nst; t++) {
    m->stride[t] = arena_alloc(a, sizeof(int64_t) * (size_t)m->cap);
    m->rstride[t] = arena_alloc(a, sizeof(int64_t) * (size_t)m->cap);
    m->shape[t] = arena_alloc(a, sizeof(int64_t) * (size_t)m->cap);
    m->real[t] = arena_alloc(a, (size_t)m->cap);
    m->masked[t] = arena_alloc(a, (size_t)m->cap);
    for (int i = 0; i < k->n; i++) { m->stride[t][i] = k->stride[t][i]; m->rstride[t][i] = k->rstride[t][i]; m->shape[t][i] = k->shape[t][i]; m->real[t][i] = k->real[t][i]; m->masked[t][i] = k->masked[t][i]; }
  }
  for (int i = 0; i < k->n; i++) {
    m->size[i] = si_is_int(k->size[i]) ? k->size[i].c : -1;
    m->type[i] = k->reduce[i] ? AX_REDUCE : AX_LOOP;
    m->origin[i] = i;
  }
}

static bool is_type(const Model *m, int i, int t0, int t1) { return m->type[i] == t0 || m->type[i] == t1; }
static int upcastable(const Model *m, int *out) {
  int n = 0;
  for (int i = 0; i < m->n; i++) if (m->type[i] == AX_LOOP && m->size[i] > 1) out[n++] = i;
  return n;
}
static int unrollable(const Model *m, int *out) {
  int n = 0;
  for (int i = 0; i < m->n; i++) if (m->type[i] == AX_REDUCE && m->size[i] > 1) out[n++] = i;
  return n;
}

/* Kernel.shift_to(axis, amt, type, top=False, insert_at) */
static void shift_to(Model *m, int axis, int64_t amt, int type, int insert_at) {
  for (int j = m->n; j > insert_at; j--) {
    m->size[j] = m->size[j - 1]; m->type[j] = m->type[j - 1]; m->origin[j] = m->origin[j - 1];
    for (int t = 0; t < m->nst; t++) { m->stride[t][j] = m->stride[t][j - 1]; m->rstride[t][j] = m->rstride[t][j - 1]; m->shape[t][j] = m->shape[t][j - 1]; m->real[t][j] = m->real[t][j - 1]; m->masked[t][j] = m->masked[t][j - 1]; }
  }
  m->n++;
  m->size[insert_at] = amt; m->type[insert_at] = (uint8_t)type; m->origin[insert_at] = m->origin[axis];
  for (int t = 0; t < m->nst; t++) {
    m->stride[t][insert_at] = m->stride[t][axis]; m->rstride[t][insert_at] = m->rstride[t][axis]; m->real[t][insert_at] = m->real[t][axis]; m->masked[t][insert_at] = m->masked[t][axis];
    if (m->stride[t][axis] > 0) m->stride[t][axis] *= amt;
    if (m->rstride[t][axis] > 0) m->rstride[t][axis] *= amt;
    /* new_shape_fxn: (s/amt, amt), or (1, 1) where the ShapeTracker has 1 there */
    bool one = m->shape[t][axis] == 1;
    m->shape[t][insert_at] = one ? 1 : amt;
    if (!one) m->shape[t][axis] /= amt;
  }
  m->size[axis] /= amt;
  m->split_m[m->nsplit] = m->origin[axis]; m->split_amt[m->nsplit] = (int)amt; m->nsplit++;
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
  int64_t amt = o.amt ? o.amt : m->size[axis];
  OPT_CHECK(m->size[axis] > 0 && amt > 1, "shift of %lld, 1 or symbolic amount is meaningless", (long long)amt);
  OPT_CHECK(m->size[axis] % amt == 0, "no longer valid shift full_shape[%d]=%lld, amt=%lld", axis, (long long)m->size[axis], (long long)amt);
  for (int t = 0; t < m->nst; t++)
    OPT_CHECK(m->shape[t][axis] == 1 || (m->shape[t][axis] > 0 && m->shape[t][axis] % amt == 0), "no longer valid shift st.shape[%d]=%lld, amt=%lld",
              axis, (long long)m->shape[t][axis], (long long)amt);
  if (o.op == KOPT_UNROLL) {
    OPT_CHECK(!is_type(m, axis, AX_UPCAST, AX_UNROLL), "can't upcasted already upcasted");
    OPT_CHECK(amt <= 32, "don't unroll more than 32");
    shift_to(m, axis, amt, AX_UNROLL, m->n);
  } else {
    OPT_CHECK(m->type[axis] == AX_LOOP && m->size[axis] > 1, "axis %d is not upcastable", axis);
    OPT_CHECK(amt <= 16, "don't upcast more than 16");
    int at = 0;
    for (int i = 0; i < m->n; i++) if (is_type(m, i, AX_LOOP, AX_UPCAST)) at = i + 1;
    shift_to(m, axis, amt, AX_UPCAST, at);
  }
  /* simplify_ones: axes of size 1 go */
  int w = 0;
  for (int i = 0; i < m->n; i++) {
    if (m->size[i] == 1) continue;
    m->size[w] = m->size[i]; m->type[w] = m->type[i]; m->origin[w] = m->origin[i];
    for (int t = 0; t < m->nst; t++) { m->stride[t][w] = m->stride[t][i]; m->rstride[t][w] = m->rstride[t][i]; m->shape[t][w] = m->shape[t][i]; m->real[t][w] = m->real[t][i]; m->masked[t][w] = m->masked[t][i]; }
    w++;
  }
  m->n = w;
  return true;
}

static int64_t upcast_size(const Model *m) {
  int64_t p = 1;
  for (int i = 0; i < m->n; i++) if (is_type(m, i, AX_UPCAST, AX_UNROLL)) p *= m->size[i];
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
    for (int i = 0; i < k->n; i++) fprintf(stderr, " %lld%s%s", (long long)k->stride[t][i], k->real[t][i] ? "" : "?", k->masked[t][i] ? "m" : "");
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
    for (int t = 0; t < m.nst; t++) masked |= m.masked[t][axis];
    if (m.size[axis] <= 7 && masked && prod * m.size[axis] <= 49) { to_up[nt++] = axis; prod *= m.size[axis]; }
  }
  for (int i = nt - 1; i >= 0; i--) try_opt(&m, out, &n, (KOpt){KOPT_UPCAST, to_up[i], 0});

  /* more upcasts of output axes where some buffer has stride 0 (reuse) */
  bool upcasted_axis[64 + KOPT_MAX + 1] = {0};
  for (;;) {
    na = upcastable(&m, ax);
    int64_t p = 1;
    for (int i = 0; i < na; i++) p *= m.size[ax[i]];
    if (p < 1024) break;
    int64_t best[4] = {0};
    bool have = false;
    for (int i = 0; i < na; i++) {
      int axis = ax[i];
      for (int amt = 3; amt <= 4; amt++) {
        if (upcasted_axis[axis] || m.size[axis] % amt) continue;
        bool any = false;
        for (int t = 0; t < m.nst && !any; t++) {
          if (m.stride[t][axis] != 0) continue;
          bool all = true;
          for (int j = 0; j < m.n && all; j++)
            if (is_type(&m, j, AX_UPCAST, AX_UNROLL) && m.real[t][j] && m.rstride[t][j] == 0) all = false;
          any = all;
        }
        if (!any) continue;
        int64_t key[4] = {0, 0, axis, amt};
        for (int t = 0; t < m.nst; t++) { key[0] += m.stride[t][axis] > 0; if (m.stride[t][axis] > 0) key[1] += m.stride[t][axis]; }
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
  for (int i = 0; i < m.n; i++) has_unroll |= m.type[i] == AX_UNROLL;
  na = unrollable(&m, ax);
  if (na && (us <= 4 || !has_unroll) && us < 64) {
    int64_t s = m.size[ax[na - 1]];
    if (s <= 32) {
      if (try_opt(&m, out, &n, (KOpt){KOPT_UNROLL, na - 1, 0})) {
        na = unrollable(&m, ax);
        if (na && s <= 3 && m.size[ax[na - 1]] <= 3) try_opt(&m, out, &n, (KOpt){KOPT_UNROLL, na - 1, 0});
      }
    } else if (s % 4 == 0) try_opt(&m, out, &n, (KOpt){KOPT_UNROLL, na - 1, 4});
  }

  /* if nothing at all is upcasted and it's easy to, do an upcast */
  bool upcasted = false;
  for (int i = 0; i < m.n; i++) upcasted |= is_type(&m, i, AX_UPCAST, AX_UNROLL);
  na = upcastable(&m, ax);
  if (!upcasted && na && m.size[ax[na - 1]] % 4 == 0) try_opt(&m, out, &n, (KOpt){KOPT_UPCAST, ax[na - 1], 4});
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
