/* sym3.c: phase 3 of tinygrad's symbolic ("sym" = symbolic_flat + the rules below, uop/symbolic.py),
 * used by codegen: LOAD/STORE folding, VECTORIZE/GEP cleanup, where pushing, xpow
 * (uop/decompositions.py), gated INDEX folding, SINK/BARRIER flattening, reciprocal rewrites and
 * moving constant multiplies out of REDUCE. Same conventions as symbolic.c. */
#include "sym_int.h"
#include <math.h>
#include <string.h>

PM *pm_sym;

#define M(n) m_get(m, n)
#define X UVAR("x")
#define CONSTV(v) UP(.ops = OPS(OP_CONST), .has_cval = true, .cval = (v))
#define CONSTVD(v, ...) UP(.ops = OPS(OP_CONST), .has_cval = true, .cval = (v), .dts = DTS(__VA_ARGS__))
#define P2(op, a, b) UP(.ops = OPS(op), SRC_PERM(a, b))
#define T1(op, a) UP(.ops = OPS(op), SRC(a))

/* xpow(base, exponent): b ** e = exp2(e * log2(b)) with the negative-base and 0**0 fixes */
static UOp *xpow(UOp *base, UOp *exponent) {
  UOp *bneg = u_lti(base, 0);
  UOp *ret = u_exp2(u_mul(u_alu1(OP_LOG2, u_where(bneg, u_neg(base), base)), exponent));
  UOp *non_int = u_ne(exponent, u_cast(u_cast(exponent, dt_int), exponent->dtype));
  UOp *absx = u_where(u_lti(exponent, 0), u_neg(exponent), exponent);
  UOp *odd = u_cast(u_modi(u_cast(absx, dt_int), 2), dt_bool);
  UOp *adj = u_where(non_int, u_const_like_f(ret, NAN), u_where(odd, u_const_like_i(ret, -1), u_const_like_i(ret, 1)));
  UOp *zz = u_and(u_logical_not(u_nei(base, 0)), u_logical_not(u_nei(exponent, 0)));
  return u_where(zz, u_const_like_i(ret, 1), u_mul(ret, u_where(u_lti(base, 0), adj, u_const_like_i(ret, 1))));
}

static UOp *rw_store_load(const Match *m, void *ctx) {
  UOp *x = M("x");
  if (!dt_is_ptr(x->dtype) || x->dtype->addrspace != AS_REG) return NULL;
  return x->src[0]->src[0];
}
static UOp *rw_c(const Match *m, void *ctx) { return M("c"); }
static UOp *rw_vec_const(const Match *m, void *ctx) {
  UOp *vec = M("vec");
  const Value **it = arena_alloc(&uctx->scratch, sizeof(Value *) * (size_t)(vec->nsrc + 1));
  for (int i = 0; i < vec->nsrc; i++) it[i] = vec->src[i]->arg;
  return u_const(vec->dtype, v_tuple(vec->nsrc, it));
}
static UOp *rw_vec_gep(const Match *m, void *ctx) {
  UOp *vec = M("vec");
  int *idx = arena_alloc(&uctx->scratch, sizeof(int) * (size_t)(vec->nsrc + 1));
  for (int i = 0; i < vec->nsrc; i++) idx[i] = (int)vec->src[i]->arg->items[0]->i;
  return u_gep(M("x"), vec->nsrc, idx);
}
static UOp *rw_alu_vec(const Match *m, void *ctx) {
  UOp *alu = M("alu");
  UOp *s = uop2((Op)alu->op, dt_scalar_of(alu->dtype), M("x"), M("y"), NULL);
  int n = alu->dtype->count;
  UOp **srcs = arena_alloc(&uctx->scratch, sizeof(UOp *) * (size_t)(n + 1));
  for (int i = 0; i < n; i++) srcs[i] = s;
  return uop_new(OP_VECTORIZE, alu->dtype, n, srcs, NULL, NULL);
}
static UOp *rw_x(const Match *m, void *ctx) { return M("x"); }
static UOp *rw_b(const Match *m, void *ctx) { return M("b"); }
static UOp *rw_vec_sink(const Match *m, void *ctx) { UOp *x = M("x"); return uop_new(OP_SINK, dt_void, x->nsrc, x->src, NULL, NULL); }
static UOp *rw_acc(const Match *m, void *ctx) { return M("acc"); }
static UOp *rw_ne0(const Match *m, void *ctx) { UOp *x = M("x"); return u_cast(x, dt_vec(dt_bool, x->dtype->count)); }
static UOp *rw_where_cast(const Match *m, void *ctx) {
  const DType *dt = M("cast")->dtype;
  return u_where(M("s"), u_cast(M("a"), dt), u_cast(M("b"), dt));
}
static UOp *rw_where_where(const Match *m, void *ctx) { return u_where(u_and(M("a"), M("b")), M("c"), M("d")); }
static UOp *rw_pow(const Match *m, void *ctx) { UOp *p = M("p"); return xpow(p->src[0], p->src[1]); }
static UOp *rw_index_true(const Match *m, void *ctx) { UOp *b = M("b"); return uop2(OP_INDEX, b->dtype, b, M("idx"), NULL); }
static UOp *rw_noop(const Match *m, void *ctx) { return uop0(OP_NOOP, dt_void, NULL); }
static UOp *rw_gated_store(const Match *m, void *ctx) {
  UOp *index = M("index"), *store = M("store");
  UOp *b = index->src[0];
  UOp *ni = uop3(OP_INDEX, b->dtype, b, index->src[1], M("gate"), NULL);
  UOp **srcs = arena_alloc(&uctx->scratch, sizeof(UOp *) * (size_t)(store->nsrc + 1));
  srcs[0] = ni; srcs[1] = M("alt");
  for (int i = 2; i < store->nsrc; i++) srcs[i] = store->src[i];
  return uop_new(OP_STORE, dt_void, store->nsrc, srcs, NULL, NULL);
}
static UOp *rw_idx_drop_true(const Match *m, void *ctx) { UOp *idx = M("idx"); return uop_replace(idx, NULL, 2, idx->src, NULL, NULL); }
static UOp *rw_gate_false(const Match *m, void *ctx) {
  UOp *x = M("x");
  return x->op == OP_STORE ? uop0(OP_NOOP, dt_void, NULL) : u_const_like_i(x, 0);
}
static bool in_set(Op op, const Op *set) { for (; *set; set++) if (*set == op) return true; return false; }
static UOp *flatten_into(UOp *root, const Op *rm) {
  bool any = false;
  int n = 0;
  for (int i = 0; i < root->nsrc; i++) { if (in_set((Op)root->src[i]->op, rm)) { any = true; n += root->src[i]->nsrc; } else n++; }
  if (!any) return NULL;
  UOp **s = arena_alloc(&uctx->scratch, sizeof(UOp *) * (size_t)(n + 1));
  int k = 0;
  for (int i = 0; i < root->nsrc; i++) {
    UOp *x = root->src[i];
    if (in_set((Op)x->op, rm)) for (int j = 0; j < x->nsrc; j++) s[k++] = x->src[j];
    else s[k++] = x;
  }
  return uop_new((Op)root->op, root->dtype, n, s, root->arg, NULL);
}
static UOp *rw_barrier(const Match *m, void *ctx) { return flatten_into(M("root"), OPS(OP_VECTORIZE, OP_SINK, OP_CAT, OP_PTRCAT, OP_NOOP)); }
static UOp *rw_sink(const Match *m, void *ctx) { return flatten_into(M("root"), OPS(OP_SINK, OP_UNROLL, OP_PTRCAT, OP_CAT, OP_NOOP)); }
static UOp *rw_recip_sq(const Match *m, void *ctx) { UOp *x = M("x"); return u_mul(u_reciprocal(x), u_reciprocal(x)); }
static UOp *rw_recip_cube(const Match *m, void *ctx) { UOp *x = M("x"); return u_mul(u_mul(u_reciprocal(x), u_reciprocal(x)), u_reciprocal(x)); }
static UOp *rw_recip_xc(const Match *m, void *ctx) { return u_mul(u_reciprocal(M("x")), u_reciprocal(M("c"))); }
static UOp *one_minus(UOp *d) { return u_add(u_const_like_i(d, 1), u_neg(d)); } /* 1-d */
static UOp *rw_sig1(const Match *m, void *ctx) { return one_minus(M("d")); }
static UOp *rw_sig2(const Match *m, void *ctx) { return u_mul(M("y"), one_minus(M("d"))); }
static UOp *rw_sig3(const Match *m, void *ctx) { return u_add(one_minus(M("d")), u_mul(M("x"), M("y"))); }
static UOp *rw_reduce_const(const Match *m, void *ctx) {
  UOp *r = M("r"), *c = M("c");
  UOp **s = arena_alloc(&uctx->scratch, sizeof(UOp *) * (size_t)(r->nsrc + 1));
  s[0] = M("x");
  for (int i = 1; i < r->nsrc; i++) s[i] = r->src[i];
  UOp *nr = uop_replace(r, NULL, r->nsrc, s, NULL, NULL);
  return u_mul(nr, u_const_like(nr, c->arg));
}
/* helpers.prod: functools.reduce(operator.mul, xs, 1) -> the first product is 1*x0 = MUL(const 1, x0) */
static UOp *prod(int n, UOp *const *xs) {
  UOp *r = u_mul(u_const_like_i(xs[0], 1), xs[0]);
  for (int i = 1; i < n; i++) r = u_mul(r, xs[i]);
  return r;
}
/* tinygrad's reduce_mul_chain: the factors of the REDUCE's MUL chain that use none of its ranges go
 * after it (the rest rebuilt left to right). A single chain is one lane. On an UNROLL's lanes
 * (tgc's lowering hands sym the lanes already, a VECTORIZE, lower.c) only a constant goes, and only
 * as tinygrad's "move const multiply after REDUCE" takes it: tinygrad's REDUCE holds the CONTRACT
 * of the unrolled values, which no MUL pattern matches, until its expander makes it a vector, and
 * then only x*c with one constant c leaves, x as it is (a broadcast load stays in: (x*y*3).sum()
 * under an UNROLL sums x*y and scales by 3; and p*(a*b) keeps its a*b, where splitting the chain
 * would print (p*a)*b). So each lane must be x*c (or c*x) with the same CONST c. */
static UOp *reduce_const_lanes(UOp *r) {
  UOp *src = r->src[0], *c = NULL;
  if (r->arg->op != OP_ADD || src->nsrc < 2) return NULL;
  UOp **xs = SALLOC(UOp *, src->nsrc);
  for (int l = 0; l < src->nsrc; l++) {
    UOp *v = src->src[l], *k;
    if (v->op != OP_MUL) return NULL;
    if (v->src[1]->op == OP_CONST) k = v->src[1], xs[l] = v->src[0];
    else if (v->src[0]->op == OP_CONST) k = v->src[0], xs[l] = v->src[1];
    else return NULL;
    if (c && k != c) return NULL;
    c = k;
  }
  UOp **s = SALLOC(UOp *, r->nsrc);
  s[0] = uop_new(OP_VECTORIZE, src->dtype, src->nsrc, xs, src->arg, NULL);
  for (int i = 1; i < r->nsrc; i++) s[i] = r->src[i];
  return u_mul(uop_replace(r, NULL, r->nsrc, s, NULL, NULL), u_const_like(r, c->arg));
}
static UOp *reduce_mul_chain_impl(const Match *m, void *ctx) {
  UOp *r = M("r"), *src = r->src[0];
  if (r->arg->kind != V_OPS || (r->arg->op != OP_ADD && r->arg->op != OP_MAX)) return NULL;
  if (src->op == OP_VECTORIZE) return reduce_const_lanes(r);
  if (r->dtype != src->dtype) return NULL;
  int n;
  UOp **ms = split_all(src, OP_MUL, &n);
  bool *out = SALLOC(bool, n);
  int no = 0;
  for (int i = 0; i < n; i++) {
    UOp *f = ms[i];
    bool free_ = true;
    for (int j = 1; j < r->nsrc && free_; j++) if (uop_in_graph(f, r->src[j])) free_ = false;
    out[i] = free_ && (r->arg->op != OP_MAX || n_ge(u_lo(f), n_int(0)));
    no += out[i];
  }
  if (no == 0) return NULL;
  UOp **outside = SALLOC(UOp *, no), **inside = SALLOC(UOp *, n);
  int ni = 0;
  for (int i = 0, k = 0; i < n; i++) {
    if (out[i]) outside[k++] = ms[i];
    else inside[ni++] = ms[i];
  }
  UOp **s = SALLOC(UOp *, r->nsrc);
  s[0] = ni ? prod(ni, inside) : u_const_like_i(src, 1);
  for (int i = 1; i < r->nsrc; i++) s[i] = r->src[i];
  return u_mul(uop_replace(r, NULL, r->nsrc, s, NULL, NULL), prod(no, outside));
}
static UOp *reduce_mul_chain(const Match *m, void *ctx) {
  ArenaMark mk = arena_mark(&uctx->scratch);
  UOp *r = reduce_mul_chain_impl(m, ctx);
  arena_pop(&uctx->scratch, mk);
  return r;
}

#define IDX_GATE(v) UP(.ops = OPS(OP_INDEX), SRC(UP(), UP(), CONSTVD(v, SC_BOOL)))
static const Rule sym_rules[] = {
  // LOAD/STORE -> NOOP
  { UP(.ops = OPS(OP_STORE), .allow_any_len = true, SRC(X, T1(OP_LOAD, X))), rw_store_load },
  // LOAD of consts is the const
  { UP(.ops = OPS(OP_LOAD), SRC_REPEAT(UCVAR("c"))), rw_c },
  // VECTORIZE/CONST
  { UP(.ops = OPS(OP_VECTORIZE), .name = "vec", SRC_REPEAT(UP(.ops = OPS(OP_CONST)))), rw_vec_const },
  // VECTORIZE/GEP
  { UP(.ops = OPS(OP_VECTORIZE), .name = "vec", SRC_REPEAT(UP(.ops = OPS(OP_GEP), SRC(X)))), rw_vec_gep },
  // reorder ALU/VECTORIZE
  { UP(.groups = G_ALU, .name = "alu", SRC(UP(.ops = OPS(OP_VECTORIZE), SRC_REPEAT(UVAR("x"))), UP(.ops = OPS(OP_VECTORIZE), SRC_REPEAT(UVAR("y"))))), rw_alu_vec },
  // VECTORIZE of a single element is just that element
  { UP(.ops = OPS(OP_VECTORIZE), SRC(X)), rw_x },
  // VECTORIZE void is SINK
  { UP(.ops = OPS(OP_VECTORIZE), .dts = DTS(SC_VOID), SRC_REPEAT(UP(.ops = OPS(OP_BARRIER), .name = "b"))), rw_b },
  { UP(.ops = OPS(OP_VECTORIZE), .dts = DTS(SC_VOID), .name = "x"), rw_vec_sink },
  // tensor core with a 0 input is acc
  { UP(.ops = OPS(OP_WMMA), SRC(CONSTV(0), UP(), UVAR("acc"))), rw_acc },
  { UP(.ops = OPS(OP_WMMA), SRC(UP(), CONSTV(0), UVAR("acc"))), rw_acc },
  // ** self folding **
  // x!=0 -> (bool)x
  { P2(OP_CMPNE, X, CONSTV(0)), rw_ne0 },
  // ** where **
  // push cast to branches
  { UP(.ops = OPS(OP_CAST), .name = "cast", SRC(UP(.ops = OPS(OP_WHERE), SRC(UVAR("s"), UVAR("a"), UVAR("b"))))), rw_where_cast },
  // a.where(b.where(c, d), d) -> (a & b).where(c, d)
  { UP(.ops = OPS(OP_WHERE), SRC(UVAR("a"), UP(.ops = OPS(OP_WHERE), SRC(UVAR("b"), UVAR("c"), UVAR("d"))), UVAR("d"))), rw_where_where },
  // ** pow **
  { UP(.ops = OPS(OP_POW), .name = "p"), rw_pow },
  // index true is index without op
  { UP(.ops = OPS(OP_INDEX), SRC(UVAR("b"), UVAR("idx"), CONSTVD(1, SC_BOOL))), rw_index_true },
  // ** load/store folding **
  // storing what was loaded from the same index is a NOOP
  { UP(.ops = OPS(OP_STORE), SRC(UP(.ops = OPS(OP_INDEX), .name = "index"), T1(OP_LOAD, UP(.ops = OPS(OP_INDEX), .name = "index")))), rw_noop },
  // store of gate.where(alt, load(index)) is a gated store of alt
  { UP(.ops = OPS(OP_STORE), .name = "store", .allow_any_len = true, SRC(UP(.ops = OPS(OP_INDEX), .name = "index"),
      UP(.ops = OPS(OP_WHERE), SRC(UVAR("gate"), UVAR("alt"), T1(OP_LOAD, UP(.ops = OPS(OP_INDEX), .name = "index")))))), rw_gated_store },
  // fold gated LOAD/STORE: remove True
  { UP(.ops = OPS(OP_INDEX), .name = "idx", SRC(UP(), UP(), CONSTVD(1, SC_BOOL))), rw_idx_drop_true },
  // NULL pointer store does nothing. NULL pointer load produces 0
  { UP(.ops = OPS(OP_LOAD, OP_STORE), .name = "x", .allow_any_len = true, SRC(UP_ANY(IDX_GATE(0), T1(OP_CAST, IDX_GATE(0))))), rw_gate_false },
  // remove VECTORIZE from SINK/BARRIER
  { UP(.ops = OPS(OP_BARRIER), .name = "root"), rw_barrier },
  { UP(.ops = OPS(OP_SINK), .name = "root"), rw_sink },
  // 1/(x^c) -> (1/x)^c
  { T1(OP_RECIP, P2(OP_MUL, X, X)), rw_recip_sq },
  { T1(OP_RECIP, P2(OP_MUL, P2(OP_MUL, X, X), X)), rw_recip_cube },
  // 1/(x*c) -> (1/c)*(1/x)
  { T1(OP_RECIP, P2(OP_MUL, X, UCVAR("c"))), rw_recip_xc },
  // x*/(1+x) -> 1-1/(1+x)
  { P2(OP_MUL, X, UP(.ops = OPS(OP_RECIP), .name = "d", SRC(P2(OP_ADD, CONSTV(1), X)))), rw_sig1 },
  { P2(OP_MUL, X, P2(OP_MUL, UP(.ops = OPS(OP_RECIP), .name = "d", SRC(P2(OP_ADD, CONSTV(1), X))), UVAR("y"))), rw_sig2 },
  { P2(OP_MUL, X, P2(OP_ADD, UP(.ops = OPS(OP_RECIP), .name = "d", SRC(P2(OP_ADD, CONSTV(1), X))), UVAR("y"))), rw_sig3 },
  // move const multiply after REDUCE
  { UP(.ops = OPS(OP_REDUCE), .has_argop = true, .argop = OP_ADD, .name = "r", .allow_any_len = true,
       SRC(P2(OP_MUL, X, UP(.ops = OPS(OP_CONST), .name = "c")))), rw_reduce_const },
  // reduce mul chain, move muls after the reduce
  { UP(.ops = OPS(OP_REDUCE), .name = "r", .allow_any_len = true, SRC(UP(.ops = OPS(OP_MUL)))), reduce_mul_chain },
  // the same on an UNROLL's lanes (tgc's lowering makes them before sym)
  { UP(.ops = OPS(OP_REDUCE), .name = "r", .allow_any_len = true, SRC(UP(.ops = OPS(OP_VECTORIZE)))), reduce_mul_chain },
};

void sym_init(void) {
  if (pm_sym) return;
  symbolic_init();
  PM *extra = pm_new(sym_rules, RULES_N(sym_rules));
  PM *parts[2] = {pm_symbolic_flat, extra};
  pm_sym = pm_concat(2, parts);
}
