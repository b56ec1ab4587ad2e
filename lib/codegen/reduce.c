/* reduce.c: tinygrad 0.11.0's symbolic and REDUCE steps on a lowered kernel, before it is
 * linearized (its "initial symbolic" and "remove_reduce" rewrites, codegen/__init__.py):
 *
 * sym                every value, not only the indices, goes through tinygrad's `sym`: its float
 *                    folds ((x*c1)*c2 -> x*(c1*c2), x*1, x+0 ...) decide what the C compiler
 *                    contracts into an FMA and how often a value is rounded, so tinygrad's CPU
 *                    values need them;
 * reduce_unparented  a RANGE the reduced value does not use leaves the REDUCE (a sum is then
 *                    multiplied by the range's size);
 * reduce_collapse    a REDUCE over one RANGE whose value needs no loop is folded to closed form:
 *                    the nodes outside the range become DEFINE_VARs (with their vmin/vmax), the
 *                    REDUCE is rewritten with pm_reduce_collapse + sym, and when no REDUCE or RANGE
 *                    is left the nodes are put back. This is tinygrad's "arange" and indexing
 *                    optimisation: a sum of range comparisons becomes a clamp, and
 *                    sum(where(idx == r, x[r], 0)) becomes one gated load of x[idx], so an
 *                    embedding lookup reads one row instead of looping over the vocabulary twice.
 *
 * The rules below are pm_reduce_collapse row for row, in its order; its devectorizing row for
 * vector ALUs (no_vectorized_alu) has nothing to do here, where the only vectors are the VECTORIZEs
 * of an UNROLL's values under a REDUCE (which sym may fold to a vector constant: pm_unroll turns
 * that back into a VECTORIZE). */
#include "codegen.h"
#include "../symbolic/symbolic.h"
#include <stdio.h>
#include <string.h>

#define M(n) m_get(m, n)
#define X UVAR("x")
#define Y UVAR("y")
#define CONST0 UP(.ops = OPS(OP_CONST), .has_cval = true, .cval = 0)
#define P2(op, a, b) UP(.ops = OPS(op), SRC_PERM(a, b))
#define T2(op, a, b) UP(.ops = OPS(op), SRC(a, b))
#define RSUM(...) UP(.ops = OPS(OP_REDUCE), .has_argop = true, .argop = OP_ADD, .allow_any_len = true, __VA_ARGS__)
#define RNG UP(.ops = OPS(OP_RANGE), .name = "r")

static bool no_range(UOp *u) { return !uop_has_op(u, OP_RANGE, OP_RANGE); }
/* REDUCE(x, *ranges) of dtype dt with arg op */
static UOp *reduce_dt(const DType *dt, UOp *x, Op op, int nr, UOp *const *ranges) {
  UOp **s = arena_alloc(ga(), sizeof(UOp *) * (size_t)(nr + 1));
  s[0] = x;
  for (int i = 0; i < nr; i++) s[1 + i] = ranges[i];
  return uop_new(OP_REDUCE, dt, nr + 1, s, v_ops(op), NULL);
}
/* x.reduce(*ranges, arg=op) */
static UOp *reduce_of(UOp *x, Op op, int nr, UOp *const *ranges) { return reduce_dt(x->dtype, x, op, nr, ranges); }
static Op red_op(UOp *red) { return red->arg->op; }

/* ---- pm_reduce_collapse's callbacks ---- */
static UOp *rw_lift_add_lt(const Match *m, void *ctx) {
  UOp *y = M("y"), *c = M("c");
  return no_range(y) && no_range(c) ? u_lt(M("x"), u_sub(c, y)) : NULL;
}
static UOp *rw_lift_mul_lt(const Match *m, void *ctx) {
  UOp *y = M("y"), *c = M("c");
  if (!no_range(y) || !no_range(c) || !(u_vmin_i(y) > 0)) return NULL;
  return u_lt(M("x"), u_idiv(u_subi(u_add(c, y), 1), y));
}
static UOp *rw_lift_add_ne(const Match *m, void *ctx) {
  UOp *y = M("y"), *c = M("c");
  return no_range(y) && no_range(c) ? u_ne(M("x"), u_sub(c, y)) : NULL;
}
/* sum over r of (r < cut ? 0 : val) */
static UOp *rw_fold_range_ge(const Match *m, void *ctx) {
  UOp *r = M("r"), *val = M("val");
  return u_mul(u_cast(u_min(u_maxi(u_sub(r->src[0], M("cut")), 0), r->src[0]), val->dtype), val);
}
/* sum over r of (r < cut ? val : 0) */
static UOp *rw_fold_range_lt(const Match *m, void *ctx) {
  UOp *r = M("r"), *val = M("val");
  return u_mul(u_cast(u_min(u_maxi(M("cut"), 0), r->src[0]), val->dtype), val);
}
static UOp *rw_reduce_add(const Match *m, void *ctx) {
  UOp *r = M("r");
  return u_add(reduce_of(M("x"), OP_ADD, r->nsrc - 1, r->src + 1), reduce_of(M("y"), OP_ADD, r->nsrc - 1, r->src + 1));
}
static UOp *rw_mul_bool(const Match *m, void *ctx) { UOp *x = M("x"); return u_where(M("gate"), x, u_const_like_i(x, 0)); }
static UOp *load_at(UOp *buf, UOp *idx, UOp *gate, const DType *dt) {
  return uop1(OP_LOAD, dt, uop3(OP_INDEX, buf->dtype, buf, idx, gate, NULL), NULL);
}
static UOp *rw_where_load(const Match *m, void *ctx) { return load_at(M("buf"), M("idx"), M("gate"), M("ld")->dtype); }
static UOp *rw_where_load_not(const Match *m, void *ctx) { return load_at(M("buf"), M("idx"), u_logical_not(M("gate")), M("ld")->dtype); }
static UOp *rw_index_range(const Match *m, void *ctx) {
  UOp *r = M("r"), *idx = u_cast(M("idx"), M("r")->dtype), *buf = M("buf");
  UMap sub;
  umap_init(&sub, &uctx->scratch);
  umap_put(&sub, r, idx);
  UOp *expr = uop_substitute(M("expr"), &sub);
  return uop3(OP_INDEX, buf->dtype, buf, expr, u_and(u_gei(idx, 0), u_lt(idx, r->src[0])), NULL);
}
static UOp *rw_and_where(const Match *m, void *ctx) {
  UOp *r = M("r"), *c = M("c");
  UOp *red = reduce_of(u_where(M("y"), c, u_const_like_i(c, 0)), OP_ADD, r->nsrc - 1, r->src + 1);
  return u_mul(red, u_cast(M("x"), c->dtype));
}
/* remove REDUCEs that no longer have a RANGE in the src */
static UOp *rw_reduce_rangeless(const Match *m, void *ctx) {
  UOp *red = M("red"), *ret = red->src[0];
  if (red_op(red) != OP_ADD && red_op(red) != OP_MAX) return NULL;
  if (ret->dtype != red->dtype || uop_has_op(ret, OP_RANGE, OP_RANGE)) return NULL;
  if (red_op(red) == OP_ADD)
    for (int i = 1; i < red->nsrc; i++) {
      /* r.src[0]: a range's end (tinygrad's IndexError on a range folded to a constant) */
      if (red->src[i]->nsrc < 1) tg_fail(TG_EINTERNAL, "lower: a REDUCE over a %s, not a RANGE", op_names[red->src[i]->op]);
      ret = u_mul(ret, u_cast(red->src[i]->src[0], dt_scalar_of(ret->dtype)));
    }
  return ret;
}
/* devectorize REDUCE: an UNROLL's values are folded in order, ((v0 op v1) op v2)... */
static UOp *fold_values(UOp *inp, Op op, const DType *dt) {
  UOp *v = inp->src[0];
  for (int i = 1; i < inp->nsrc; i++) v = uop2(op, dt, v, inp->src[i], NULL);
  return v;
}
static UOp *rw_no_vectorized_reduce(const Match *m, void *ctx) {
  UOp *inp = M("inp"), *red = M("red");
  if (inp->dtype == red->dtype) return NULL;
  return reduce_dt(red->dtype, fold_values(inp, red_op(red), red->dtype), red_op(red), red->nsrc - 1, red->src + 1);
}

static const Rule reduce_collapse_rules[] = {
  // lift x+y out of reduce on lt
  { T2(OP_CMPLT, P2(OP_ADD, X, Y), UVAR("c")), rw_lift_add_lt },
  // lift x*y out of reduce
  { T2(OP_CMPLT, P2(OP_MUL, X, Y), UVAR("c")), rw_lift_mul_lt },
  // lift x+y out of reduce on ne
  { P2(OP_CMPNE, P2(OP_ADD, X, Y), UVAR("c")), rw_lift_add_ne },
  // fold the range
  { RSUM(SRC(UP(.ops = OPS(OP_WHERE), SRC(T2(OP_CMPLT, RNG, UVAR("cut")), CONST0, UCVAR("val"))))), rw_fold_range_ge },
  { RSUM(SRC(UP(.ops = OPS(OP_WHERE), SRC(T2(OP_CMPLT, RNG, UVAR("cut")), UCVAR("val"), CONST0)))), rw_fold_range_lt },
  // REDUCE on ADD
  { RSUM(.name = "r", SRC(P2(OP_ADD, X, Y))), rw_reduce_add },
  // MUL casted bool
  { P2(OP_MUL, X, UP(.ops = OPS(OP_CAST), SRC(UP(.name = "gate", .dts = DTS(SC_BOOL))))), rw_mul_bool },
  // WHERE on LOAD (works on max too)
  { RSUM(SRC(UP(.ops = OPS(OP_WHERE), SRC(UVAR("gate"),
        UP(.ops = OPS(OP_LOAD), .name = "ld", SRC(UP(.ops = OPS(OP_INDEX), SRC(UVAR("buf"), UVAR("idx"))))), CONST0)))), rw_where_load },
  { RSUM(SRC(UP(.ops = OPS(OP_WHERE), SRC(UVAR("gate"), CONST0,
        UP(.ops = OPS(OP_LOAD), .name = "ld", SRC(UP(.ops = OPS(OP_INDEX), SRC(UVAR("buf"), UVAR("idx"))))))))), rw_where_load_not },
  // INDEX on RANGE / gated RANGE
  { UP(.ops = OPS(OP_INDEX), SRC(UVAR("buf"), UVAR("expr"),
        P2(OP_CMPNE, P2(OP_CMPNE, UVAR("idx"), UP_ANY(RNG, UP(.ops = OPS(OP_CAST), SRC(RNG)))),
           UP(.ops = OPS(OP_CONST), .has_cval = true, .cval = 1, .dts = DTS(SC_BOOL))))), rw_index_range },
  // AND on WHERE
  { RSUM(.name = "r", SRC(UP(.ops = OPS(OP_WHERE), SRC(
        P2(OP_AND, UP_ANY(UP(.ops = OPS(OP_DEFINE_VAR), .name = "x"), UP(.ops = OPS(OP_GEP), .name = "x", SRC(UP(.ops = OPS(OP_DEFINE_VAR))))), Y),
        UCVAR("c"), CONST0)))), rw_and_where },
  // remove REDUCEs that no longer have a RANGE in the src
  { UP(.ops = OPS(OP_REDUCE), .name = "red"), rw_reduce_rangeless },
  // devectorize REDUCE
  { UP(.ops = OPS(OP_REDUCE), .name = "red", .allow_any_len = true, SRC(UP(.ops = OPS(OP_VECTORIZE), .name = "inp"))), rw_no_vectorized_reduce },
};
static PM *pm_reduce_collapse, *pm_reduce;

/* red.parents in tinygrad's order: the srcs, then each src's parents (dict insertion order) */
static void parents_into(UOp *u, UMap *seen, PtrVec *out, UMap *done) {
  if (umap_has(done, u)) return;   /* every parent of u is in already */
  for (int i = 0; i < u->nsrc; i++) if (!umap_has(seen, u->src[i])) { umap_put(seen, u->src[i], u->src[i]); vec_push(out, u->src[i]); }
  for (int i = 0; i < u->nsrc; i++) parents_into(u->src[i], seen, out, done);
  umap_put(done, u, u);
}

static UOp *rw_reduce_collapse(const Match *m, void *ctx) {
  UOp *red = M("red");
  Arena *s = &uctx->scratch;
  ArenaMark mk = arena_mark(s);
  UMap seen, done;
  umap_init(&seen, s); umap_init(&done, s);
  PtrVec parents;
  vec_init(&parents, s);
  parents_into(red, &seen, &parents, &done);
  /* included: the parents that depend on the reduce's range */
  UMap incl;
  umap_init(&incl, s);
  UOp *range = red->src[1];
  umap_put(&incl, range, range);
  UList topo = uop_toposort_in(s, red->src[0], NULL, NULL);
  for (int i = 0; i < topo.n; i++) {
    UOp *u = topo.v[i];
    bool dep = u == range;
    for (int k = 0; k < u->nsrc && !dep; k++) dep = umap_has(&incl, u->src[k]);
    if (dep) umap_put(&incl, u, u);
  }
  UOp *ret = NULL;
  for (int i = 0; i < parents.n; i++) {
    UOp *u = parents.v[i];
    if (umap_has(&incl, u) && (u->op == OP_STORE || u->op == OP_REDUCE)) goto out;
  }
  UMap rep, back;
  umap_init(&rep, s); umap_init(&back, s);
  int nrep = 0;
  for (int i = 0; i < parents.n; i++) {
    UOp *u = parents.v[i];
    if (!umap_has(&incl, u)) continue;
    for (int k = 0; k < u->nsrc; k++) {
      UOp *x = u->src[k];
      Op o = (Op)x->op;
      if (umap_has(&incl, x) || umap_has(&rep, x)) continue;
      if (o == OP_CONST || o == OP_VCONST || o == OP_DEFINE_GLOBAL || o == OP_DEFINE_LOCAL || o == OP_DEFINE_VAR) continue;
      char name[32];
      snprintf(name, sizeof name, "in%d", nrep++);
      UOp *v = uop0(OP_DEFINE_VAR, x->dtype, v_tuplev(3, v_str(name), u_vmin(x), u_vmax(x)));
      umap_put(&rep, x, v);
      umap_put(&back, v, x);
    }
  }
  UOp *fxn = uop_substitute(red, &rep);
  UOp *sink = graph_rewrite(fxn, pm_reduce_collapse, NULL, false, NULL);
  if (!uop_has_op(sink, OP_REDUCE, OP_RANGE)) ret = uop_substitute(sink, &back);
out:
  arena_pop(s, mk);
  return ret;
}

/* remove any ranges from a REDUCE that aren't referenced in the reduce source */
static UOp *rw_reduce_unparented(const Match *m, void *ctx) {
  UOp *red = M("red"), *src = red->src[0];
  Op op = red_op(red);
  if (op != OP_ADD && op != OP_MAX) return NULL;
  UOp **par = arena_alloc(ga(), sizeof(UOp *) * (size_t)red->nsrc), **unp = arena_alloc(ga(), sizeof(UOp *) * (size_t)red->nsrc);
  int np = 0, nu = 0;
  for (int i = 1; i < red->nsrc; i++) {
    if (uop_in_graph(src, red->src[i])) par[np++] = red->src[i];
    else unp[nu++] = red->src[i];
  }
  if (!nu) return NULL;
  UOp *ret;
  if (np) ret = reduce_dt(red->dtype, src, op, np, par);
  else if (red->dtype != src->dtype) ret = src->op == OP_VECTORIZE ? fold_values(src, op, red->dtype) : NULL; /* a REDUCE with no range left: reduce_to_acc folds the values */
  else ret = src;
  if (!ret) return NULL;
  if (op == OP_ADD)
    for (int i = 0; i < nu; i++) ret = u_mul(ret, u_cast(unp[i]->src[0], dt_scalar_of(ret->dtype)));
  return ret;
}

/* reduce_to_acc of a REDUCE with no RANGE (an UNROLL took its whole axis): the values folded in
 * order, no accumulator */
static UOp *rw_reduce_no_range(const Match *m, void *ctx) {
  UOp *red = M("red"), *src = red->src[0];
  if (src->dtype == red->dtype) return src;
  return src->op == OP_VECTORIZE ? fold_values(src, red_op(red), red->dtype) : NULL;
}
static const Rule reduce_rules[] = {
  // a REDUCE with no range left is its values folded in order (reduce_to_acc without an accumulator)
  { UP(.ops = OPS(OP_REDUCE), .name = "red", SRC(UP())), rw_reduce_no_range },
  // remove any ranges from a REDUCE that aren't referenced in the reduce source
  { UP(.ops = OPS(OP_REDUCE), .name = "red"), rw_reduce_unparented },
  // remove REDUCE without loads (generic arange opt / indexing)
  { UP(.ops = OPS(OP_REDUCE), .name = "red", SRC(UP(), UP())), rw_reduce_collapse },
};

/* an UNROLL's values under a REDUCE stay a VECTORIZE of scalars, which is how the linearizer feeds
 * them to the accumulator in order; sym folds one of constants to a VCONST, or to a vector CONST
 * when they are all the same */
static UOp *rw_unroll_vconst(const Match *m, void *ctx) {
  UOp *red = M("red"), *vc = red->src[0];
  if (vc->dtype->count < 2) return NULL;
  UOp **el = arena_alloc(ga(), sizeof(UOp *) * (size_t)vc->dtype->count);
  for (int i = 0; i < vc->dtype->count; i++) el[i] = u_const(dt_scalar_of(vc->dtype), vc->op == OP_VCONST ? vc->arg->items[i] : vc->arg);
  UOp **s = arena_alloc(ga(), sizeof(UOp *) * (size_t)red->nsrc);
  memcpy(s, red->src, sizeof(UOp *) * (size_t)red->nsrc);
  s[0] = uop_new(OP_VECTORIZE, vc->dtype, vc->dtype->count, el, NULL, NULL);
  return uop_new(OP_REDUCE, red->dtype, red->nsrc, s, red->arg, NULL);
}
static const Rule unroll_rules[] = {
  { UP(.ops = OPS(OP_REDUCE), .name = "red", .allow_any_len = true, SRC(UP(.ops = OPS(OP_VCONST, OP_CONST)))), rw_unroll_vconst },
};
static PM *pm_unroll;

/* tinygrad's "decompositions" for renderers with NEG and SUB (all of tgc's: C, OpenCL, CUDA):
 * x*-1 is NEG(x), then x+NEG(y) is SUB(x, y). The values are the same, but not where the renderer
 * strips parentheses: a+(b+c*-1) prints a+b+(c*-1), added left to right, and a+(b-c) keeps its
 * parentheses, as tinygrad's kernel does. */
static UOp *rw_neg(const Match *m, void *ctx) { UOp *x = M("x"); return uop1(OP_NEG, x->dtype, x, NULL); }
static UOp *rw_sub(const Match *m, void *ctx) { UOp *x = M("x"); return uop2(OP_SUB, x->dtype, x, M("n")->src[0], NULL); }
static const Rule decomp_rules[] = {
  { UP(.ops = OPS(OP_MUL), SRC_PERM(UVAR("x"), UP(.ops = OPS(OP_CONST), .has_cval = true, .cval = -1))), rw_neg },
  { UP(.ops = OPS(OP_ADD), SRC_PERM(UVAR("x"), UP(.ops = OPS(OP_NEG), .name = "n", SRC(UP())))), rw_sub },
};
static PM *pm_decomp;

/* the decompositions undone: NEG(x) is x*-1 again, SUB(x, y) x+y*-1 (a bool's NEG is its logical
 * not, no decomposition) */
static UOp *rw_undo_neg(const Match *m, void *ctx) {
  UOp *n = M("n");
  if (dt_is_bool(n->dtype)) return NULL;
  return uop2(OP_MUL, n->dtype, n->src[0], u_const_like_i(n->src[0], -1), NULL);
}
static UOp *rw_undo_sub(const Match *m, void *ctx) {
  UOp *n = M("n");
  return uop2(OP_ADD, n->dtype, n->src[0], uop1(OP_NEG, n->dtype, n->src[1], NULL), NULL);
}
static const Rule undo_decomp_rules[] = {
  { UP(.ops = OPS(OP_NEG), .name = "n", SRC(UP())), rw_undo_neg },
  { UP(.ops = OPS(OP_SUB), .name = "n", SRC(UP(), UP())), rw_undo_sub },
};
static PM *pm_undo_decomp;

static void lower_simplify_init(void) {
  if (pm_reduce) return;
  sym_init();
  PM *parts[2] = {pm_new(reduce_collapse_rules, RULES_N(reduce_collapse_rules)), pm_sym};
  pm_reduce_collapse = pm_concat(2, parts);
  PM *rparts[2] = {pm_new(reduce_rules, RULES_N(reduce_rules)), pm_sym};
  pm_reduce = pm_concat(2, rparts);
  pm_unroll = pm_new(unroll_rules, RULES_N(unroll_rules));
  pm_decomp = pm_new(decomp_rules, RULES_N(decomp_rules));
  pm_undo_decomp = pm_new(undo_decomp_rules, RULES_N(undo_decomp_rules));
}

UOp *lower_acc_update(Op op, UOp *acc, int n, UOp *const *vals) {
  lower_simplify_init();
  /* a value's inner reduces are accumulators by then in tinygrad (its devectorize sym meets their
   * registers, not their sources): placeholders while the chain is rewritten, so nothing below
   * them changes */
  UMap hide, show;
  umap_init(&hide, ga()); umap_init(&show, ga());
  int nleaf = 0;
  UOp *e = acc;
  for (int i = 0; i < n; i++) {
    UList t = uop_toposort(vals[i], NULL, NULL);
    for (int k = 0; k < t.n; k++) {
      UOp *u = t.v[k];
      if (u->op != OP_REDUCE || umap_get(&hide, u)) continue;
      UOp *ph = uop0(OP_DEFINE_REG, u->dtype, v_str(arena_printf(ga(), "tgc.leaf%d", nleaf++)));
      umap_put(&hide, u, ph);
      umap_put(&show, ph, u);
    }
    e = uop2(op, acc->dtype, e, nleaf ? uop_substitute(vals[i], &hide) : vals[i], NULL);
  }
  e = graph_rewrite(e, pm_undo_decomp, NULL, false, NULL);
  e = graph_rewrite(e, pm_sym, NULL, false, NULL);
  e = graph_rewrite(e, pm_decomp, NULL, false, NULL);
  return nleaf ? uop_substitute(e, &show) : e;
}

UOp *lower_simplify(UOp *sink) {
  lower_simplify_init();
  /* tinygrad's "initial symbolic": sym on the whole kernel, values included (its float folds, like
   * (x*c1)*c2 -> x*(c1*c2), decide how the C compiler contracts and rounds) */
  sink = graph_rewrite(sink, pm_sym, NULL, false, NULL);
  if (uop_has_op(sink, OP_REDUCE, OP_REDUCE)) {
    sink = graph_rewrite(sink, pm_unroll, NULL, false, NULL);
    /* its "remove_reduce": pm_reduce (the REDUCE simplifications, then sym again over what they left) */
    sink = graph_rewrite(sink, pm_reduce, NULL, false, NULL);
    sink = graph_rewrite(sink, pm_unroll, NULL, false, NULL);
  }
  return graph_rewrite(sink, pm_decomp, NULL, false, NULL);
}
