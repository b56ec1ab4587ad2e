/* valid.c: tinygrad's "simplify_valid" aside (uop/symbolic.py): parse_valid, uop_given_valid
 * (simplify an expression knowing that a conjunction of X < c / X >= c clauses holds, by
 * substituting a fake bounded variable and checking that every candidate agrees) and
 * simplify_valid (simplify each clause given the ones before it, ordered by _valid_priority). */
#include "sym_int.h"

/* parse_valid: X <= c (upper) or X >= c; false when the clause is not of either form */
static bool parse_valid(UOp *valid, UOp **X, bool *is_upper, Num *c) {
  if (valid->op == OP_CMPNE && valid->src[1]->op == OP_CONST && n_eq(u_carg(valid->src[1]), n_int(1)) &&
      valid->src[0]->op == OP_CMPLT && valid->src[0]->src[1]->op == OP_CONST) {
    UOp *s0 = valid->src[0];
    *X = s0->src[0]; *is_upper = false; *c = u_carg(s0->src[1]);
    return true;
  }
  if (valid->op == OP_CMPLT && valid->src[1]->op == OP_CONST && dt_is_int(valid->src[0]->dtype)) {
    *X = valid->src[0]; *is_upper = true; *c = n_sub(u_carg(valid->src[1]), n_int(1));
    return true;
  }
  return false;
}

static UOp *subst1(UOp *root, UOp *k, UOp *v) {
  UMap m;
  umap_init(&m, ga());
  umap_put(&m, k, v);
  return uop_substitute(root, &m);
}
static UOp *fake_var(Num lo, Num hi, const DType *dt) {
  return uop0(OP_DEFINE_VAR, dt, v_tuplev(3, v_str("fake"), n_value(lo), n_value(hi)));
}

#define MAXB 256
UOp *uop_given_valid(UOp *valid, UOp *uop) {
  UOp *stmts[MAXB];
  int ns = split_uop(valid, OP_AND, stmts, MAXB);
  if (ns > MAXB) return uop;
  UOp *bx[MAXB]; Num bv[MAXB][2]; bool has[MAXB][2]; int nb = 0;
  for (int i = 0; i < ns; i++) {
    UOp *X; bool up; Num c;
    if (!parse_valid(stmts[i], &X, &up, &c)) return uop;  /* give up if we cannot parse the valid */
    int j = 0;
    while (j < nb && bx[j] != X) j++;
    if (j == nb) { bx[nb] = X; has[nb][0] = has[nb][1] = false; nb++; }
    bv[j][up] = c; has[j][up] = true;
  }
  /* don't simplify any other gates, can lead to OOB, we substitute them back later */
  UList topo = uop_toposort(uop, NULL, NULL);
  UMap load_subs, back;
  umap_init(&load_subs, ga()); umap_init(&back, ga());
  for (int i = 0; i < topo.n; i++) if (topo.v[i]->op == OP_INDEX) {
    UOp *nop = uop0(OP_NOOP, dt_void, v_uop(topo.v[i]));
    umap_put(&load_subs, topo.v[i], nop);
    umap_put(&back, nop, topo.v[i]);
  }
  if (load_subs.live) uop = uop_substitute(uop, &load_subs);

  for (int j = 0; j < nb; j++) {
    UOp *expr = bx[j];
    Num v0 = has[j][0] ? bv[j][0] : u_lo(expr), v1 = has[j][1] ? bv[j][1] : u_hi(expr);
    /* some expr has lower bound > upper bound -> valid is an empty set */
    if (n_gt(v0, v1)) return NULL;
    /* whole node became a const */
    if (n_eq(v0, v1)) { uop = u_simplify(subst1(uop, expr, u_const_n(expr, v0))); continue; }
    /* candidates: sets of (X, fake X); when every one simplifies uop the same way, take it */
    UOp *cand[2][MAXB], *cfake[2][MAXB]; int clen[2], nc = 0;
    if (expr->op == OP_ADD && n_eq(v0, n_int(1))) {
      UOp *xs[MAXB];
      int nx = split_uop(expr, OP_ADD, xs, MAXB);
      bool ok = nx <= MAXB;
      for (int i = 0; ok && i < nx; i++) if (!op_in((Op)xs[i]->op, G_IRREDUCIBLE)) ok = false;
      if (ok) {
        for (int i = 0; i < nx; i++) { cand[nc][i] = xs[i]; cfake[nc][i] = fake_var(n_int(1), u_hi(xs[i]), xs[i]->dtype); }
        clen[nc++] = nx;
      }
    }
    if (uop_in_graph(uop, expr)) { cand[nc][0] = expr; cfake[nc][0] = fake_var(v0, v1, expr->dtype); clen[nc++] = 1; }
    for (int ci = 0; ci < nc; ci++) {
      UOp *newuops[MAXB] = {0};
      for (int i = 0; i < clen[ci]; i++) {
        UOp *t = u_simplify(subst1(uop, cand[ci][i], cfake[ci][i]));
        newuops[i] = u_simplify(subst1(t, cfake[ci][i], cand[ci][i]));
      }
      int n = clen[ci];
      if (uop->op == OP_VECTORIZE && uop->nsrc == 2) {
        bool s0 = true, s1 = true;
        for (int i = 1; i < n; i++) { if (newuops[i]->src[0] != newuops[0]->src[0]) s0 = false; if (newuops[i]->src[1] != newuops[0]->src[1]) s1 = false; }
        if (s0) { UOp *s[2] = {newuops[0]->src[0], uop->src[1]}; uop = uop_replace(uop, NULL, 2, s, NULL, NULL); }
        if (s1) { UOp *s[2] = {uop->src[0], newuops[0]->src[1]}; uop = uop_replace(uop, NULL, 2, s, NULL, NULL); }
      } else {
        bool same = true;
        for (int i = 1; i < n; i++) if (newuops[i] != newuops[0]) same = false;
        if (same) uop = newuops[0];
      }
    }
  }
  /* put the loads back in */
  if (back.live) uop = uop_substitute(uop, &back);
  return uop;
}

static int valid_priority(UOp *v, int n, UOp *const *valids) {
  UOp *X; bool up; Num c;
  if (!parse_valid(v, &X, &up, &c)) return 0;
  int s = 0;
  for (int i = 0; i < n; i++) if (uop_in_graph(valids[i], X)) s -= 1;
  return s;
}
static UOp *reduce_and(int n, UOp *const *xs) {
  UOp *r = xs[0];
  for (int i = 1; i < n; i++) r = u_and(r, xs[i]);
  return r;
}
UOp *simplify_valid(UOp *valid) {
  UOp *valids[MAXB];
  int n = split_uop(valid, OP_AND, valids, MAXB);
  if (n > MAXB) return NULL;
  int prio[MAXB];
  UOp *sorted[MAXB];
  for (int i = 0; i < n; i++) { prio[i] = valid_priority(valids[i], n, valids); sorted[i] = valids[i]; }
  /* stable insertion sort by priority (Python's sorted is stable) */
  for (int i = 1; i < n; i++) {
    UOp *t = sorted[i]; int pt = prio[i], j = i - 1;
    while (j >= 0 && prio[j] > pt) { sorted[j + 1] = sorted[j]; prio[j + 1] = prio[j]; j--; }
    sorted[j + 1] = t; prio[j + 1] = pt;
  }
  UOp *ret[MAXB]; int nr = 0;
  bool changed = false;
  for (int i = 0; i < n; i++) {
    UOp *stmt = sorted[i];
    if (stmt->op == OP_CAST) return NULL;  /* TODO in tinygrad: root cause this and test_simplify_valid_from_div */
    UOp *ns = nr ? uop_given_valid(reduce_and(nr, ret), stmt) : NULL;
    ret[nr++] = ns ? ns : stmt;
    if (ret[nr - 1] != stmt) changed = true;
  }
  return changed ? reduce_and(nr, ret) : NULL;
}
