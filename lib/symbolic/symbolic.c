/* symbolic.c: tinygrad 0.11.0 uop/symbolic.py as rule tables: symbolic_simple (phase 1 generic
 * folding), commutative, symbolic (phase 2, with the div/mod folders) + gep_pushing, and
 * symbolic_flat. Every table row is one tinygrad rule, in tinygrad's order, its pattern spelled
 * the way the Python operators build it (a commutative op's sources are a list, i.e. every
 * permutation; `x + 0` is ADD[x, CONST 0]; `x < y` is CMPLT(x, y)). Callbacks port the lambdas
 * and helper functions one to one, building replacements with the same operand order as the
 * Python expressions (int * UOp is MUL(const, UOp), sum() starts from 0, ...). */
#include "sym_int.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>

PM *pm_symbolic_simple, *pm_symbolic, *pm_symbolic_flat, *pm_commutative, *pm_gep_pushing;

/* ---- pattern shorthands ---- */
#define CONSTV(v) UP(.ops = OPS(OP_CONST), .has_cval = true, .cval = (v))
#define CONSTVD(v, ...) UP(.ops = OPS(OP_CONST), .has_cval = true, .cval = (v), .dts = DTS(__VA_ARGS__))
#define CONSTVC(v, c) UP(.ops = OPS(OP_CONST), .has_cval = true, .cval = (v), .dtclass = (c))
#define CSV(n) UP(.ops = OPS(OP_CONST), .name = (n))          /* UPat.cvar(n, vec=False) */
#define CVAR(n) UCVAR(n)                                      /* UPat.cvar(n) */
#define VD(n, ...) UP(.name = (n), .dts = DTS(__VA_ARGS__))   /* UPat.var(n, dtype) */
#define VC(n, c) UP(.name = (n), .dtclass = (c))
#define ANY UP()
#define P2(op, a, b) UP(.ops = OPS(op), SRC_PERM(a, b))       /* commutative alu: list src */
#define T1(op, a) UP(.ops = OPS(op), SRC(a))
#define T2(op, a, b) UP(.ops = OPS(op), SRC(a, b))
#define SINTS SC_CHAR, SC_SHORT, SC_INT, SC_LONG
#define X UVAR("x")
#define M(n) m_get(m, n)
#define MO(n) m_opt(m, n)

static UOp *bool_false_like(UOp *x) {
  /* x.const_like(False).cast(dtypes.bool.vec(x.dtype.count)) */
  return u_cast(u_const_like(x, v_bool(false)), dt_vec(dt_bool, x->dtype->count));
}
static bool is_num_arg(UOp *c) { return c->arg->kind == V_INT || c->arg->kind == V_BOOL || c->arg->kind == V_FLOAT; }
static Num cargn(UOp *c) { return n_of_value(c->arg); }
static UOp *cn(UOp *like, i128 v) { return u_const_n(like, n_int(v)); }
UOp *u_reduce_add(int n, UOp *const *xs) {
  UOp *r = xs[0];
  for (int i = 1; i < n; i++) r = u_add(r, xs[i]);
  return r;
}
/* sum(xs): Python starts at int 0, so the first add is 0 + xs[0] -> ADD(const 0, xs[0]) */
UOp *u_sum_terms(int n, UOp *const *xs, UOp *start) {
  UOp *r = start;
  for (int i = 0; i < n; i++) r = r ? u_add(r, xs[i]) : u_add(u_const_like_i(xs[0], 0), xs[0]);
  return r;
}
/* int * UOp (UOp.__rmul__): MUL(const, u) */
static UOp *imul(i128 k, UOp *u) { return u_mul(cn(u, k), u); }
static UOp *sub_i(UOp *u, Num k) { return u_add(u, u_const_n(u, n_neg(k))); }

/* a rule callback whose scratch allocations (term lists) are freed when it returns */
#define SCRATCH_RULE(name) \
  static UOp *name##_impl(const Match *m, void *ctx); \
  static UOp *name(const Match *m, void *ctx) { \
    ArenaMark mk_ = arena_mark(&uctx->scratch); \
    UOp *r_ = name##_impl(m, ctx); \
    arena_pop(&uctx->scratch, mk_); \
    return r_; \
  } \
  static UOp *name##_impl(const Match *m, void *ctx)

/* ---- fold_bitcast ---- */
static char dt_fmt(const DType *d) {
  if (d->kind != DTK_SCALAR) return 0;
  static const char f[SC_COUNT] = {[SC_BOOL] = '?', [SC_CHAR] = 'b', [SC_UCHAR] = 'B', [SC_SHORT] = 'h', [SC_USHORT] = 'H',
    [SC_INT] = 'i', [SC_UINT] = 'I', [SC_LONG] = 'q', [SC_ULONG] = 'Q', [SC_HALF] = 'e', [SC_FLOAT] = 'f', [SC_DOUBLE] = 'd'};
  return f[d->scalar];
}
static const Value *bitcast_one(const Value *v, char from, char to) {
  unsigned char b[8] = {0};
  Num x = n_of_value(v);
  switch (from) {
  case '?': b[0] = n_truthy(x); break;
  case 'b': case 'B': { int64_t i = n_i64(x); memcpy(b, &i, 1); break; }
  case 'h': case 'H': { int64_t i = n_i64(x); memcpy(b, &i, 2); break; }
  case 'i': case 'I': { int64_t i = n_i64(x); memcpy(b, &i, 4); break; }
  case 'q': case 'Q': { uint64_t u = x.k == NK_FLOAT ? (uint64_t)n_i64(x) : (uint64_t)x.i; memcpy(b, &u, 8); break; }
  case 'e': { uint16_t h = sym_f16_bits(n_f(x)); memcpy(b, &h, 2); break; }
  case 'f': { float f = (float)n_f(x); memcpy(b, &f, 4); break; }
  case 'd': { double d = n_f(x); memcpy(b, &d, 8); break; }
  }
  switch (to) {
  case '?': return v_bool(b[0] != 0);
  case 'b': return v_int((int8_t)b[0]);
  case 'B': return v_int(b[0]);
  case 'h': { int16_t i; memcpy(&i, b, 2); return v_int(i); }
  case 'H': { uint16_t i; memcpy(&i, b, 2); return v_int(i); }
  case 'i': { int32_t i; memcpy(&i, b, 4); return v_int(i); }
  case 'I': { uint32_t i; memcpy(&i, b, 4); return v_int(i); }
  case 'q': { int64_t i; memcpy(&i, b, 8); return v_int(i); }
  case 'Q': { uint64_t u; memcpy(&u, b, 8); return v_uint64(u); }
  case 'e': { uint16_t h; memcpy(&h, b, 2); return v_float(sym_f16_value(h)); }
  case 'f': { float f; memcpy(&f, b, 4); return v_float(f); }
  default: { double d; memcpy(&d, b, 8); return v_float(d); }
  }
}
static UOp *fold_bitcast(const Match *m, void *ctx) {
  UOp *root = M("root"), *c = M("c");
  char from = dt_fmt(dt_scalar_of(c->dtype)), to = dt_fmt(dt_scalar_of(root->dtype));
  if (!from || !to) return NULL;
  if (c->dtype->itemsize != root->dtype->itemsize) return NULL;
  if (root->dtype->count == 1) return u_const_like(root, bitcast_one(c->arg, from, to));
  if (c->arg->kind != V_TUPLE) return NULL;
  const Value *it[256];
  for (int i = 0; i < c->arg->n && i < 256; i++) it[i] = bitcast_one(c->arg->items[i], from, to);
  return u_const_like(root, v_tuple(c->arg->n, it));
}

/* ---- can_safe_cast ---- */
static bool can_safe_cast(const DType *dt0, const DType *dt1) {
  if (dt0 == dt1 || dt0 == dt_bool) return true;
  const DType *d = dt0;
  if (dt1 == dt_double) return d == dt_float || d == dt_half || d == dt_bfloat16;
  if (dt1 == dt_float) return d == dt_half || d == dt_bfloat16;
  if (dt1 == dt_ulong) return d == dt_uint || d == dt_ushort || d == dt_uchar;
  if (dt1 == dt_uint) return d == dt_ushort || d == dt_uchar;
  if (dt1 == dt_long) return d == dt_uint || d == dt_ushort || d == dt_uchar || d == dt_int || d == dt_short || d == dt_char;
  if (dt1 == dt_int) return d == dt_ushort || d == dt_uchar || d == dt_short || d == dt_char;
  if (dt1 == dt_short) return d == dt_uchar || d == dt_char;
  return false;
}

/* ---- simplify_pow ---- */
static UOp *simplify_pow(const Match *m, void *ctx) {
  UOp *x = M("x"), *c = M("c");
  Num a = cargn(c);
  if (n_lt(a, n_int(0))) return u_pow(u_reciprocal(x), u_neg(c));
  if (n_eq(a, n_int(0))) return u_const_like_i(x, 1);
  double f = n_f(a);
  if (a.k == NK_FLOAT) {
    if (!isfinite(f)) return NULL; /* int(inf) raises in tinygrad */
    if (trunc(f - 0.5) + 0.5 == f) return u_mul(u_pow(x, u_const_like_f(c, f - 0.5)), u_sqrt(x));
  } else if (n_eq(n_add(n_int(n_i64(n_sub(a, n_float(0.5)))), n_float(0.5)), a)) {
    return u_mul(u_pow(x, u_const_like_f(c, f - 0.5)), u_sqrt(x));
  }
  if (a.k != NK_FLOAT || trunc(f) == f) {
    Num half = n_floordiv(a, n_int(2));
    UOp *y = u_pow(x, u_const_n(c, half));
    bool odd = n_eq(n_pymod(a, n_int(2)), n_int(1));
    return u_mul(u_mul(y, y), odd ? x : u_const_like_i(u_mul(y, y), 1));
  }
  return NULL;
}

/* ===================== symbolic_simple ===================== */
static UOp *rw_x(const Match *m, void *ctx) { return M("x"); }
static UOp *rw_one(const Match *m, void *ctx) { return u_const_like_i(M("x"), 1); }
static UOp *rw_negx(const Match *m, void *ctx) { return u_neg(M("x")); }
static UOp *rw_base(const Match *m, void *ctx) { return M("base"); }
static UOp *rw_mod_div_c(const Match *m, void *ctx) {
  UOp *c1 = M("c1"), *c2 = M("c2"), *c3 = M("c3");
  if (!is_num_arg(c1) || !is_num_arg(c2) || !is_num_arg(c3)) return NULL;
  return n_eq(n_mul(cargn(c1), cargn(c2)), cargn(c3)) ? u_mul(M("x"), c2) : NULL;
}
static UOp *rw_bool_and_c(const Match *m, void *ctx) { UOp *c = M("c"); return n_truthy(cargn(c)) ? M("x") : c; }
static UOp *rw_bool_or_c(const Match *m, void *ctx) { UOp *c = M("c"); return n_truthy(cargn(c)) ? c : M("x"); }
static UOp *rw_false_like(const Match *m, void *ctx) { return bool_false_like(M("x")); }
static UOp *rw_zero(const Match *m, void *ctx) { return u_const_like_i(M("x"), 0); }
static UOp *rw_mul_zero(const Match *m, void *ctx) {
  UOp *x = M("x");
  if (x->arg->kind == V_FLOAT && (isnan(x->arg->f) || isinf(x->arg->f))) return u_const_like_f(x, NAN);
  return u_const_like_i(x, 0);
}
static UOp *rw_fold_alu(const Match *m, void *ctx) {
  UOp *a = M("a");
  const Value *args[3];
  for (int i = 0; i < a->nsrc; i++) args[i] = a->src[i]->arg;
  return u_const_like(a, exec_alu((Op)a->op, a->dtype, a->nsrc, args, false));
}
static UOp *rw_and_xy(const Match *m, void *ctx) { return u_and(M("x"), M("y")); }
static UOp *rw_or_xy(const Match *m, void *ctx) { return u_or(M("x"), M("y")); }
/* CAST of a constant folds (as_const). A NaN or an infinity cast to an int has no value: tinygrad's
 * int() raises, and so does tgc on the tensor graph. In a kernel tgc folds each upcast lane on its
 * own, where tinygrad's expander folds vectors in another order, and can meet such a cast that
 * tinygrad's kernel computes at run time (man tgc, BUGS): tgc refuses it, saying so */
static UOp *rw_cast_const(const Match *m, void *ctx) {
  UOp *root = M("root");
  const Value *c = M("c")->arg;
  if (uctx->lowering && c->kind == V_FLOAT && !isfinite(c->f) && dt_is_int(root->dtype))
    tg_fail(TG_EINPUT, "a kernel folds to a float %s converted to an integer: tgc folds upcast lanes one by one, where tinygrad's "
            "expander folds vectors and may compute this cast at run time (man tgc, BUGS)", isnan(c->f) ? "NaN" : "infinity");
  return u_const_like(root, c);
}
static UOp *rw_cast_noop(const Match *m, void *ctx) { UOp *r = M("root"); return r->dtype == r->src[0]->dtype ? r->src[0] : NULL; }
static UOp *rw_cast_cast(const Match *m, void *ctx) {
  UOp *x = M("x"), *a = M("a"), *b = M("b");
  return x->dtype == b->dtype && can_safe_cast(b->dtype, a->dtype) ? x : NULL;
}
static UOp *rw_const_pow(const Match *m, void *ctx) {
  UOp *c = M("c"), *x = M("x");
  Num a = cargn(c);
  if (n_eq(a, n_int(1))) return c;
  if (n_gt(a, n_int(0))) return u_exp2(u_mul(x, u_const_like_f(x, log2(n_f(a)))));
  return NULL;
}
static UOp *rw_tf_and_cast(const Match *m, void *ctx) { return u_and(u_cast(M("x"), dt_uint), u_const_like_i(u_cast(M("x"), dt_uint), 0xFFFFFFFF)); }
static UOp *rw_y(const Match *m, void *ctx) { return M("y"); }
static UOp *rw_tf_where_mul(const Match *m, void *ctx) {
  UOp *x = M("x"), *y = M("y");
  UOp *w = u_cast(u_where(y, x, u_const_like_i(x, 0)), dt_ulong);
  return u_mul(w, u_const_like_i(w, (int64_t)1 << 32));
}
static UOp *rw_tf_where_and(const Match *m, void *ctx) {
  UOp *xc = u_cast(M("x"), dt_uint);
  return u_where(M("y"), xc, u_const_like_i(xc, 0));
}
static UOp *rw_tf_where_cast(const Match *m, void *ctx) { UOp *x = M("x"); return u_where(M("b"), x, u_const_like_i(x, 0)); }

static const Rule symbolic_simple_rules[] = {
  // ** self folding **
  // x+0 -> x
  { P2(OP_ADD, X, CONSTV(0)), rw_x },
  // x*1 -> x
  { P2(OP_MUL, X, CONSTV(1)), rw_x },
  // x^0 -> x (ints)
  { UP(.ops = OPS(OP_XOR), .dtclass = DTC_INTS, SRC_PERM(VC("x", DTC_INTS), CONSTVC(0, DTC_INTS))), rw_x },
  // x//x -> 1
  { T2(OP_IDIV, X, X), rw_one },
  // x//1 -> x
  { T2(OP_IDIV, X, CONSTV(1)), rw_x },
  // x//-1 -> -x
  { T2(OP_IDIV, X, CONSTV(-1)), rw_negx },
  // x/x -> 1
  { P2(OP_MUL, X, T1(OP_RECIP, X)), rw_one },
  // (x*x2)/x2 -> x
  { P2(OP_MUL, P2(OP_MUL, X, UVAR("x2")), T1(OP_RECIP, UVAR("x2"))), rw_x },
  // (x%y)%y -> x%y (rewritten with base for speed)
  { T2(OP_MOD, UP(.ops = OPS(OP_MOD), .name = "base", SRC(ANY, UVAR("y"))), UVAR("y")), rw_base },
  // (x%c)+(x//c)*c = x
  { P2(OP_ADD, T2(OP_MOD, X, CVAR("c")), P2(OP_MUL, T2(OP_IDIV, X, CVAR("c")), CVAR("c"))), rw_x },
  // (x%c1)*c2+(x//c1)*c3 = x*c2 if c1*c2==c3
  { P2(OP_ADD, P2(OP_MUL, T2(OP_IDIV, X, CVAR("c1")), CVAR("c3")), P2(OP_MUL, T2(OP_MOD, X, CVAR("c1")), CVAR("c2"))), rw_mod_div_c },
  // bool x & const
  { P2(OP_AND, VD("x", SC_BOOL), CSV("c")), rw_bool_and_c },
  // bool x | const
  { P2(OP_OR, VD("x", SC_BOOL), CSV("c")), rw_bool_or_c },
  // idempotent op of x with itself is x
  { UP(.groups = G_IDEMPOTENT, SRC(X, X)), rw_x },
  // not not x -> x (bool)
  { UP(.ops = OPS(OP_CMPNE), .dts = DTS(SC_BOOL), SRC_PERM(UP(.ops = OPS(OP_CMPNE), .dts = DTS(SC_BOOL), SRC_PERM(VD("x", SC_BOOL), CONSTVD(1, SC_BOOL))), CONSTVD(1, SC_BOOL))), rw_x },
  // x.where(True, False) -> x (bool)
  { UP(.ops = OPS(OP_WHERE), .dts = DTS(SC_BOOL), SRC(VD("x", SC_BOOL), CONSTVD(1, SC_BOOL), CONSTVD(0, SC_BOOL))), rw_x },
  // trunc of an int/bool is a noop
  { UP(.ops = OPS(OP_TRUNC), .dtclass = DTC_INT_OR_BOOL, SRC(VC("x", DTC_INT_OR_BOOL))), rw_x },
  // ** zero folding **
  // x < x -> False
  { T2(OP_CMPLT, X, X), rw_false_like },
  // x%x -> 0
  { T2(OP_MOD, X, X), rw_zero },
  // x != x -> False (only ints)
  { UP(.ops = OPS(OP_CMPNE), SRC_PERM(VC("x", DTC_INTS), VC("x", DTC_INTS))), rw_false_like },
  // x*0 -> 0 (nan for a nan/inf const)
  { P2(OP_MUL, X, CONSTV(0)), rw_mul_zero },
  // ** constant folding **
  // unary op of a const
  { UP(.groups = G_UNARY, .name = "a", SRC(UP(.ops = OPS(OP_VCONST, OP_CONST)))), rw_fold_alu },
  // binary op (not THREEFRY) of consts
  { UP(.groups = G_BINARY, .except = OPS(OP_THREEFRY), .name = "a", SRC(UP(.ops = OPS(OP_VCONST, OP_CONST)), UP(.ops = OPS(OP_VCONST, OP_CONST)))), rw_fold_alu },
  // ternary op of consts
  { UP(.groups = G_TERNARY, .name = "a", SRC(UP(.ops = OPS(OP_VCONST, OP_CONST)), UP(.ops = OPS(OP_VCONST, OP_CONST)), UP(.ops = OPS(OP_VCONST, OP_CONST)))), rw_fold_alu },
  // bool MUL is AND
  { UP(.ops = OPS(OP_MUL), .dts = DTS(SC_BOOL), SRC_PERM(VD("x", SC_BOOL), VD("y", SC_BOOL))), rw_and_xy },
  // bool ADD is OR
  { UP(.ops = OPS(OP_ADD), .dts = DTS(SC_BOOL), SRC_PERM(VD("x", SC_BOOL), VD("y", SC_BOOL))), rw_or_xy },
  // bool MAX is OR
  { UP(.ops = OPS(OP_MAX), .dts = DTS(SC_BOOL), SRC_PERM(VD("x", SC_BOOL), VD("y", SC_BOOL))), rw_or_xy },
  // *** cast/bitcast ***
  // cast of a const folds
  { UP(.ops = OPS(OP_CAST), .name = "root", SRC(CVAR("c"))), rw_cast_const },
  // cast/bitcast to the same dtype is a noop
  { UP(.ops = OPS(OP_CAST, OP_BITCAST), .name = "root"), rw_cast_noop },
  // bitcast of a const folds
  { UP(.ops = OPS(OP_BITCAST), .name = "root", SRC(CVAR("c"))), fold_bitcast },
  // b.cast(a).cast(b) -> b if a preserves all values in b
  { UP(.ops = OPS(OP_CAST), .name = "b", SRC(UP(.ops = OPS(OP_CAST), .name = "a", SRC(X)))), rw_cast_cast },
  // ** pow **
  // x ** const
  { T2(OP_POW, X, CSV("c")), simplify_pow },
  // positive const ** x
  { T2(OP_POW, CSV("c"), X), rw_const_pow },
  // rules for threefry
  // (x & 0xFFFFFFFF).cast(uint32) -> x.cast(uint32) & 0xFFFFFFFF
  { UP(.ops = OPS(OP_CAST), .dts = DTS(SC_UINT), SRC(UP(.ops = OPS(OP_AND), .dts = DTS(SC_ULONG), SRC_PERM(VD("x", SC_ULONG), CONSTVD(0xFFFFFFFF, SC_ULONG))))), rw_tf_and_cast },
  // ((a*2**32) | y.cast(uint64)).cast(uint32) -> y
  { UP(.ops = OPS(OP_CAST), .dts = DTS(SC_UINT), SRC(UP(.ops = OPS(OP_OR), .dts = DTS(SC_ULONG), SRC_PERM(
      UP(.ops = OPS(OP_MUL), .dts = DTS(SC_ULONG), SRC_PERM(VD(NULL, SC_ULONG), CONSTVD(4294967296.0, SC_ULONG))),
      UP(.ops = OPS(OP_CAST), .dts = DTS(SC_ULONG), SRC(VD("y", SC_UINT))))))), rw_y },
  // ((x*2**32) | b.cast(uint64)) // 2**32 -> x
  { UP(.ops = OPS(OP_IDIV), .dts = DTS(SC_ULONG), SRC(UP(.ops = OPS(OP_OR), .dts = DTS(SC_ULONG), SRC_PERM(
      UP(.ops = OPS(OP_MUL), .dts = DTS(SC_ULONG), SRC_PERM(VD("x", SC_ULONG), CONSTVD(4294967296.0, SC_ULONG))),
      UP(.ops = OPS(OP_CAST), .dts = DTS(SC_ULONG), SRC(VD(NULL, SC_UINT))))), CONSTVD(4294967296.0, SC_ULONG))), rw_x },
  // hacks for threefry long removal when padded: x.cast(uint64) * y.where(2**32, 0)
  { UP(.ops = OPS(OP_MUL), .dts = DTS(SC_ULONG), SRC_PERM(UP(.ops = OPS(OP_CAST), .dts = DTS(SC_ULONG), SRC(VD("x", SC_UINT))),
      UP(.ops = OPS(OP_WHERE), .dts = DTS(SC_ULONG), SRC(UVAR("y"), CONSTVD(4294967296.0, SC_ULONG), CONSTVD(0, SC_ULONG))))), rw_tf_where_mul },
  // (x & y.where(0xFFFFFFFF, 0)).cast(uint32) -> y.where(x.cast(uint32), 0)
  { UP(.ops = OPS(OP_CAST), .dts = DTS(SC_UINT), SRC(UP(.ops = OPS(OP_AND), .dts = DTS(SC_ULONG), SRC_PERM(VD("x", SC_ULONG),
      UP(.ops = OPS(OP_WHERE), .dts = DTS(SC_ULONG), SRC(UVAR("y"), CONSTVD(4294967295.0, SC_ULONG), CONSTVD(0, SC_ULONG))))))), rw_tf_where_and },
  // new decomp rules for threefry: ((a<<32) | y.cast(uint64)).cast(uint32) -> y
  { UP(.ops = OPS(OP_CAST), .dts = DTS(SC_UINT), SRC(UP(.ops = OPS(OP_OR), .dts = DTS(SC_ULONG), SRC_PERM(
      UP(.ops = OPS(OP_SHL), .dts = DTS(SC_ULONG), SRC(VD(NULL, SC_ULONG), CONSTVD(32, SC_ULONG))),
      UP(.ops = OPS(OP_CAST), .dts = DTS(SC_ULONG), SRC(VD("y", SC_UINT))))))), rw_y },
  // ((x<<32) | b.cast(uint64)) >> 32 -> x
  { UP(.ops = OPS(OP_SHR), .dts = DTS(SC_ULONG), SRC(UP(.ops = OPS(OP_OR), .dts = DTS(SC_ULONG), SRC_PERM(
      UP(.ops = OPS(OP_SHL), .dts = DTS(SC_ULONG), SRC(VD("x", SC_ULONG), CONSTVD(32, SC_ULONG))),
      UP(.ops = OPS(OP_CAST), .dts = DTS(SC_ULONG), SRC(VD(NULL, SC_UINT))))), CONSTVD(32, SC_ULONG))), rw_x },
  // b.where(x.cast(uint64), 0).cast(uint32) -> b.where(x, 0)
  { UP(.ops = OPS(OP_CAST), .dts = DTS(SC_UINT), SRC(UP(.ops = OPS(OP_WHERE), .dts = DTS(SC_ULONG), SRC(UVAR("b"),
      UP(.ops = OPS(OP_CAST), .dts = DTS(SC_ULONG), SRC(VD("x", SC_UINT))), CONSTVD(0, SC_ULONG))))), rw_tf_where_cast },
};

/* ===================== commutative ===================== */
static UOp *rw_commute(const Match *m, void *ctx) {
  UOp *x = M("x");
  if (x->nsrc != 2) return NULL;
  if (tuplize_cmp(x->src[1], x->src[0]) < 0) { UOp *s[2] = {x->src[1], x->src[0]}; return uop_replace(x, NULL, 2, s, NULL, NULL); }
  return NULL;
}
static const Rule commutative_rules[] = {
  // ** COMMUTATIVE flipping (only for ints) **
  { UP(.groups = G_COMMUTATIVE, .dts = DTS(SC_INT), .name = "x"), rw_commute },
};

/* ===================== symbolic helpers ===================== */
static UOp *fold_unrolled_divs(UOp *divs, Num denominator, Num fac) {
  int n;
  UOp **terms = split_all(divs, OP_ADD, &n);
  Num *seen = SALLOC(Num, n); int ns = 0;
  UOp *ans = NULL;
  bool fac1 = n_eq(fac, n_int(1));
  for (int i = 0; i < n; i++) {
    UOp *u = terms[i];
    if (!fac1) {
      if (u->op != OP_MUL || u->src[1]->op != OP_CONST || !is_num_arg(u->src[1]) || !n_eq(cargn(u->src[1]), fac)) return NULL;
      u = u->src[0];
    }
    if (!(u->op == OP_IDIV && u->src[1]->op == OP_CONST)) return NULL;
    if (!n_eq(denominator, cargn(u->src[1]))) return NULL;
    UOp *s0 = u->src[0];
    if (n_lt(u_lo(s0), n_int(0))) return NULL;
    if (s0->op == OP_ADD && s0->src[1]->op == OP_CONST) { seen[ns++] = cargn(s0->src[1]); s0 = s0->src[0]; }
    else seen[ns++] = n_int(0);
    if (!ans) ans = s0;
    if (ans != s0) return NULL;
  }
  if (!ans) return NULL;
  if (!n_isint(denominator)) return NULL;
  i128 d = denominator.i;
  /* for i in range(d - len(seen)): if 0 <= ans.vmin and ans.vmax + i < d: seen.append(i)  -> adds [0, k) */
  i128 k = 0, room = d - ns;
  if (room > 0 && n_ge(u_lo(ans), n_int(0))) {
    Num hi = u_hi(ans);
    if (!n_isint(hi)) return NULL;
    i128 lim = d - hi.i; /* i < d - vmax */
    k = lim < 0 ? 0 : lim < room ? lim : room;
  }
  /* sorted(seen + [0..k)) == list(range(d)): seen must be exactly {k, ..., d-1} */
  if ((i128)ns + k != d) return NULL;
  for (int i = 0; i < ns; i++) if (!n_isint(seen[i])) return NULL;
  for (int i = 1; i < ns; i++) { Num t = seen[i]; int j = i - 1; while (j >= 0 && seen[j].i > t.i) { seen[j + 1] = seen[j]; j--; } seen[j + 1] = t; }
  for (int i = 0; i < ns; i++) if (seen[i].i != k + i) return NULL;
  return u_mul(u_const_n(ans, fac), ans); /* fac*ans */
}
static UOp *lt_folding(UOp *x, Num c) {
  int n;
  UOp **terms = split_all(x, OP_ADD, &n);
  UOp **np = SALLOC(UOp *, n); int nn = 0;
  Num psum_lo = n_int(0), psum_hi = n_int(0);
  for (int i = 0; i < n; i++) {
    if (u_const_factor(terms[i]) == 1) { psum_lo = n_add(psum_lo, u_lo(terms[i])); psum_hi = n_add(psum_hi, u_hi(terms[i])); }
    else np[nn++] = terms[i];
  }
  if (!nn || !n_isint(c)) return NULL;
  i128 d = c.i;
  for (int i = 0; i < nn; i++) d = i128_gcd(d, (i128)u_const_factor(np[i]));
  if (d > 1 && n_le(n_int(0), psum_lo) && n_lt(psum_hi, n_int(d))) {
    UOp *r = u_divides(u_reduce_add(nn, np), n_i64(n_int(d)));
    if (!r) tg_fail(TG_EINTERNAL, "lt_folding: divides returned None");
    return u_lt(r, cn(r, n_floordiv(c, n_int(d)).i));
  }
  return NULL;
}
static UOp *canonicalize_simplex(UOp *X_) {
  int n;
  UOp **terms = split_all(X_, OP_ADD, &n);
  bool changed = false;
  for (int i = 0; i < n; i++) {
    UOp *u = terms[i];
    if (u->op == OP_MUL && u->src[1]->op == OP_CONST && n_gt(cargn(u->src[1]), n_int(0))) { changed = true; u = u->src[0]; }
    if (!(op_in((Op)u->op, G_IRREDUCIBLE) && n_ge(u_lo(u), n_int(0)))) return NULL;
    terms[i] = u;
  }
  return changed ? u_reduce_add(n, terms) : NULL;
}
static bool mm_all_int(UOp *x, UOp *y) {
  MinMax a = u_minmax(x), b = u_minmax(y);
  return n_isint(a.lo) && n_isint(a.hi) && n_isint(b.lo) && n_isint(b.hi);
}
static UOp *cancel_divmod(const Match *m, void *ctx) {
  UOp *d = M("d"), *x = M("x"), *y = M("y");
  if (!mm_all_int(x, y)) return NULL;
  Num xl = u_lo(x), xh = u_hi(x), yl = u_lo(y), yh = u_hi(y);
  if (n_eq(yl, n_int(0)) && n_eq(yh, n_int(0)))
    tg_fail(TG_EINPUT, "%s by zero trying to rewrite", d->op == OP_IDIV ? "Division" : "Mod");
  if (n_gt(n_mul(yl, yh), n_int(0))) {
    Num q = n_cdiv(xl, yl);
    if (n_eq(q, n_cdiv(xl, yh)) && n_eq(q, n_cdiv(xh, yl)) && n_eq(q, n_cdiv(xh, yh)))
      return d->op == OP_MOD ? u_sub(x, u_mul(u_const_n(y, q), y)) : u_const_n(d, q);
  }
  return NULL;
}
SCRATCH_RULE(remove_nested_mod) {
  UOp *x = M("x"), *y = M("y");
  Num c = cargn(y);
  if (n_lt(c, n_int(0)) || n_lt(u_lo(x), n_int(0)) || !n_isint(c)) return NULL;
  int n;
  UOp **xs = split_all(x, OP_ADD, &n);
  bool changed = false;
  for (int i = 0; i < n; i++) {
    UOp *u = xs[i];
    if (u->op == OP_MOD && u_divides(u->src[1], n_i64(c))) { changed = true; xs[i] = u->src[0]; }
  }
  UOp *nx = u_reduce_add(n, xs);
  if (changed && n_ge(u_lo(nx), n_int(0))) return u_mod(nx, y);
  return NULL;
}
/* terms/factors: (u.divides(f := u.const_factor()), f) for u in split_uop(x, ADD) */
static int terms_factors(UOp *x, UOp ***terms_out, i128 **factors_out) {
  int n;
  UOp **us = split_all(x, OP_ADD, &n);
  UOp **terms = *terms_out = SALLOC(UOp *, n);
  i128 *factors = *factors_out = SALLOC(i128, n);
  for (int i = 0; i < n; i++) {
    int64_t f = u_const_factor(us[i]);
    factors[i] = f;
    terms[i] = u_divides(us[i], f);
    if (!terms[i]) return -1;
  }
  return n;
}
static void pop_const(UOp *x, UOp **rest, Num *c) {
  if (x->op == OP_ADD && x->src[1]->op == OP_CONST) { *rest = x->src[0]; *c = cargn(x->src[1]); }
  else { *rest = x; *c = n_int(0); }
}
SCRATCH_RULE(fold_binary_numerator) {
  UOp *d = M("d"), *x = M("x"), *y = M("y");
  Num c = cargn(y);
  if (n_lt(c, n_int(0)) || x->dtype->count > 1) return NULL;
  UOp *xr; Num cst;
  pop_const(x, &xr, &cst);
  UOp **terms; i128 *factors;
  int n = terms_factors(xr, &terms, &factors);
  if (n != 1) return NULL;
  UOp *v = terms[0];
  Num vl = u_lo(v), vh = u_hi(v);
  if (!n_eq(n_sub(vh, vl), n_int(1))) return NULL;
  Num a1 = n_add(n_mul(n_int(factors[0]), vl), cst), a2 = n_add(n_mul(n_int(factors[0]), vh), cst);
  Num y1 = d->op == OP_MOD ? n_cmod(a1, c) : n_cdiv(a1, c);
  Num y2 = d->op == OP_MOD ? n_cmod(a2, c) : n_cdiv(a2, c);
  UOp *vm = sub_i(v, vl);                                   /* v - v.vmin */
  UOp *mul = u_mul(u_const_n(vm, n_sub(y2, y1)), vm);       /* (y2-y1)*(...) */
  return u_add(mul, u_const_n(mul, y1));
}
SCRATCH_RULE(fold_divmod_congruence) {
  UOp *d = M("d"), *x = M("x"), *y = M("y");
  Num c = cargn(y);
  if (n_lt(c, n_int(0)) || x->dtype->count > 1 || !n_isint(c)) return NULL;
  UOp *xr; Num cst;
  pop_const(x, &xr, &cst);
  UOp **terms; i128 *factors;
  int n = terms_factors(xr, &terms, &factors);
  if (n < 0) return NULL;
  i128 *rems = SALLOC(i128, n);
  for (int i = 0; i < n; i++) {
    i128 r = n_pymod(n_int(factors[i]), c).i, r2 = r - c.i;
    rems[i] = (r < 0 ? -r : r) <= (r2 < 0 ? -r2 : r2) ? r : r2;
  }
  UOp **prods = SALLOC(UOp *, n);
  for (int i = 0; i < n; i++) prods[i] = imul(rems[i], terms[i]);
  UOp *s = u_sum_terms(n, prods, NULL);
  UOp *rem = u_add(s, u_const_n(s, n_pymod(cst, c)));
  Num rl = u_lo(rem), rh = u_hi(rem);
  if (!n_eq(n_floordiv(rl, c), n_floordiv(rh, c))) return NULL;
  for (int i = 0; i < n; i++) if (factors[i] <= 0) return NULL;
  Num k = n_mul(n_floordiv(rl, c), c);
  if (d->op == OP_MOD) return sub_i(rem, k);
  for (int i = 0; i < n; i++) prods[i] = imul(n_floordiv(n_int(factors[i] - rems[i]), c).i, terms[i]);
  UOp *q = u_sum_terms(n, prods, NULL);
  Num tail = n_floordiv(n_add(n_sub(cst, n_pymod(cst, c)), k), c);
  return u_add(q, u_const_n(q, tail));
}
SCRATCH_RULE(divide_by_gcd) {
  UOp *d = M("d"), *x = M("x"), *y = M("y");
  Num c = cargn(y);
  if (!n_isint(c)) return NULL;
  UOp **terms; i128 *factors;
  int n = terms_factors(x, &terms, &factors);
  if (n < 0) return NULL;
  i128 g = c.i;
  for (int i = 0; i < n; i++) g = i128_gcd(g, factors[i]);
  if (g == 1 || g == 0) return NULL;
  UOp **prods = SALLOC(UOp *, n);
  for (int i = 0; i < n; i++) prods[i] = imul(n_floordiv(n_int(factors[i]), n_int(g)).i, terms[i]);
  UOp *s = u_sum_terms(n, prods, NULL);
  UOp *ret = u_alu2((Op)d->op, s, cn(y, n_floordiv(c, n_int(g)).i));
  return d->op == OP_MOD ? u_mul(ret, cn(ret, g)) : ret;
}
SCRATCH_RULE(nest_div_by_smallest_factor) {
  UOp *x = M("x"), *y = M("y");
  Num c = cargn(y);
  if (n_lt(c, n_int(0)) || x->dtype->count > 1 || !n_isint(c)) return NULL;
  UOp *xr; Num cst;
  pop_const(x, &xr, &cst);
  int n;
  UOp **us = split_all(xr, OP_ADD, &n);
  i128 div = c.i;
  for (int i = 0; i < n; i++) {
    i128 f = u_const_factor(us[i]), af = f < 0 ? -f : f;
    if (af > 1 && n_pymod(c, n_int(f)).i == 0 && af < div) div = af;
  }
  if (!(1 < div && div < c.i)) return NULL;
  UOp *newx = u_idiv(x, cn(x, div));
  UOp *newxs = u_simplify(newx);
  if (newxs != newx && n_ge(u_lo(x), n_int(0)) && n_ge(u_lo(newx), n_int(0)))
    return u_idiv(newxs, cn(newxs, n_floordiv(c, n_int(div)).i));
  return NULL;
}
SCRATCH_RULE(simplify_remainder) {
  UOp *d = M("d"), *x = M("x"), *y = M("y");
  Num c = cargn(y);
  if (n_lt(c, n_int(0)) || x->dtype->count > 1 || !n_isint(c) || c.i == 0) return NULL;
  UOp *xr; Num cst;
  pop_const(x, &xr, &cst);
  if (!n_isint(cst)) return NULL;
  UOp **terms; i128 *factors;
  int n = terms_factors(xr, &terms, &factors);
  if (n < 0) return NULL;
  i128 *quo_ = SALLOC(i128, n), *rem_ = SALLOC(i128, n), g = c.i;
  for (int i = 0; i < n; i++) {
    quo_[i] = n_floordiv(n_int(factors[i]), c).i;
    rem_[i] = n_pymod(n_int(factors[i]), c).i;
    g = i128_gcd(g, rem_[i]);
  }
  bool any = false;
  for (int i = 0; i < n; i++) if (rem_[i] == 0 || (rem_[i] != factors[i] && d->op == OP_MOD)) any = true;
  i128 cm = n_pymod(cst, c).i;
  if (cm == cst.i && g == 1 && !any) return NULL;
  UOp *quo = cn(x, n_floordiv(cst, c).i), *rem = cn(x, n_floordiv(n_int(cm), n_int(g)).i);
  for (int i = 0; i < n; i++) {
    if (d->op == OP_IDIV && rem_[i] != 0) rem = u_add(rem, imul(n_floordiv(n_int(factors[i]), n_int(g)).i, terms[i]));
    else {
      rem = u_add(rem, imul(n_floordiv(n_int(rem_[i]), n_int(g)).i, terms[i]));
      quo = u_add(quo, imul(quo_[i], terms[i]));
    }
  }
  if ((n_lt(u_lo(x), n_int(0)) || n_lt(u_lo(rem), n_int(0))) && n > 0) return NULL;
  if (d->op == OP_MOD) {
    UOp *md = u_mod(rem, cn(rem, n_floordiv(c, n_int(g)).i));
    UOp *mul = u_mul(cn(md, g), md);
    return u_add(mul, cn(mul, n_pymod(cst, n_int(g)).i));
  }
  UOp *q = u_idiv(rem, cn(rem, n_floordiv(c, n_int(g)).i));
  return u_add(q, quo);
}

/* ===================== symbolic ===================== */
static UOp *rw_x_c0c1(const Match *m, void *ctx) { UOp *x = M("x"); return u_mul(x, u_add(M("c0"), M("c1"))); }
static UOp *rw_yx_c0c1(const Match *m, void *ctx) { return u_add(M("y"), u_mul(M("x"), u_add(M("c0"), M("c1")))); }
static UOp *rw_x_c1(const Match *m, void *ctx) { UOp *c = M("c"); return u_mul(M("x"), u_add(c, u_const_like_i(c, 1))); }
static UOp *rw_yx_c1(const Match *m, void *ctx) { UOp *c = M("c"); return u_add(M("y"), u_mul(M("x"), u_add(c, u_const_like_i(c, 1)))); }
static UOp *rw_x2(const Match *m, void *ctx) { return u_muli(M("x"), 2); }
static UOp *rw_yx2(const Match *m, void *ctx) { return u_add(M("y"), u_muli(M("x"), 2)); }
static UOp *rw_div_div(const Match *m, void *ctx) {
  UOp *x2 = M("x2"), *x3 = M("x3");
  return x2 != x3 ? u_mul(M("x"), u_reciprocal(u_mul(x2, x3))) : NULL;
}
static UOp *rw_neg_xc(const Match *m, void *ctx) { return u_add(u_neg(M("x")), u_neg(M("c"))); }
static UOp *rw_val(const Match *m, void *ctx) { return M("val"); }
static UOp *rw_const_gate(const Match *m, void *ctx) { return n_truthy(cargn(M("gate"))) ? M("c0") : M("c1"); }
static UOp *rw_not_where(const Match *m, void *ctx) { return u_where(M("cond"), M("f"), M("t")); }
static UOp *rw_where_alu(const Match *m, void *ctx) {
  UOp *alu = M("alu"), *c = M("c"), *t = M("t"), *tt = M("tt"), *f = M("f"), *ff = M("ff");
  if ((t->op == tt->op && tt->op == OP_CONST) || (f->op == ff->op && ff->op == OP_CONST))
    return u_where(c, u_alu2((Op)alu->op, t, tt), u_alu2((Op)alu->op, f, ff));
  return NULL;
}
static UOp *rw_minmax_const(const Match *m, void *ctx) {
  UOp *x = M("x");
  MinMax r = u_minmax(x);
  return n_eq(r.lo, r.hi) ? u_const_n(x, r.lo) : NULL;
}
static UOp *rw_max_fold(const Match *m, void *ctx) {
  UOp *x = M("x"), *y = M("y");
  if (n_ge(u_lo(x), u_hi(y))) return x;
  if (n_le(u_hi(x), u_lo(y))) return y;
  return NULL;
}
static UOp *rw_two_stage(const Match *m, void *ctx) {
  UOp *f = M("f");
  return u_alu2((Op)f->op, M("x"), u_alu2((Op)f->op, M("c1"), M("c2")));
}
static UOp *rw_lt_sub(const Match *m, void *ctx) { return u_lt(M("x"), u_sub(M("c1"), M("c0"))); }
static UOp *rw_div_div_c(const Match *m, void *ctx) { return u_idiv(M("x"), u_mul(M("c1"), M("c2"))); }
static UOp *rw_lt_mul_pos(const Match *m, void *ctx) {
  UOp *x = M("x");
  Num c0 = cargn(M("c0")), c1 = cargn(M("c1"));
  if (n_gt(c0, n_int(0)) && n_gt(c1, n_int(0))) return u_lt(x, u_const_n(x, n_int((i128)ceil(n_f(c1) / n_f(c0)))));
  return NULL;
}
static UOp *rw_lt_mul_neg(const Match *m, void *ctx) {
  UOp *x = M("x");
  Num c0 = cargn(M("c0")), c1 = cargn(M("c1"));
  if (n_lt(c0, n_int(0)) && !n_eq(c0, n_int(-1)) && n_le(c1, n_int(0))) {
    UOp *nx = u_neg(x);
    double q = floor(-n_f(c1) / -n_f(c0));
    return u_lt(nx, u_const_n(nx, n_neg(n_int((i128)q))));
  }
  return NULL;
}
static UOp *rw_lt_div(const Match *m, void *ctx) {
  UOp *x = M("x");
  Num d = cargn(M("d")), c = cargn(M("c"));
  if (!n_gt(d, n_int(0))) return NULL;
  if (n_gt(c, n_int(0))) return u_lt(x, u_const_n(x, n_mul(c, d)));
  return u_lt(x, u_const_n(x, n_sub(n_mul(c, d), n_sub(d, n_int(1)))));
}
static UOp *rw_add_const_end(const Match *m, void *ctx) { return u_add(u_add(M("x"), M("y")), M("c1")); }
static UOp *rw_mul_const_end(const Match *m, void *ctx) { return u_mul(u_mul(M("x"), M("y")), M("c1")); }
SCRATCH_RULE(rw_unrolled_divs) { return fold_unrolled_divs(M("divs"), cargn(M("d")), n_int(1)); }
SCRATCH_RULE(rw_unrolled_divs_c) {
  UOp *c = M("c");
  if (!is_num_arg(c)) return NULL;
  return fold_unrolled_divs(M("divs"), cargn(M("d")), cargn(c));
}
SCRATCH_RULE(rw_lt_folding) {
  Num c = cargn(M("c"));
  return n_lt(n_int(0), c) ? lt_folding(M("x"), c) : NULL;
}
static UOp *rw_lt_negs(const Match *m, void *ctx) { return u_lt(M("y"), M("x")); }
SCRATCH_RULE(rw_simplex) {
  UOp *nx = canonicalize_simplex(M("x"));
  return nx ? u_logical_not(u_lti(nx, 1)) : NULL;
}
static UOp *rw_div_fold(const Match *m, void *ctx) {
  UOp *x = M("x"), *c = M("c"), *a = M("a"), *d = M("d");
  Num z = n_int(0);
  if (n_gt(u_lo(c), z) && n_gt(u_lo(d), z) &&
      ((n_ge(u_lo(x), z) && n_ge(u_lo(a), z)) || (n_le(u_hi(x), z) && n_le(u_hi(a), z))))
    return u_idiv(u_add(x, u_mul(a, c)), u_mul(c, d));
  return NULL;
}
static UOp *rw_div_negd(const Match *m, void *ctx) {
  UOp *x = M("x"), *d = M("d");
  return n_lt(u_hi(d), n_int(0)) ? u_neg(u_idiv(x, u_neg(d))) : NULL;
}
static UOp *rw_div_negx(const Match *m, void *ctx) {
  UOp *x = M("x"), *d = M("d");
  return n_le(u_hi(x), n_int(0)) ? u_neg(u_idiv(u_neg(x), d)) : NULL;
}
static UOp *rw_div_negx_c(const Match *m, void *ctx) {
  UOp *x = M("x"), *c = M("c"), *n = M("n"), *d = M("d");
  Num ca = cargn(c), da = cargn(d);
  if (!(n_le(u_hi(x), n_int(0)) && n_ge(u_lo(n), n_int(0)) && n_gt(da, n_int(0)))) return NULL;
  /* (-(-(c%d + x - (d-1))//d) + c//d) */
  UOp *t = u_add(u_const_n(x, n_pymod(ca, da)), x);
  t = sub_i(t, n_sub(da, n_int(1)));
  UOp *q = u_neg(u_idiv(u_neg(t), d));
  return u_add(q, u_const_n(q, n_floordiv(ca, da)));
}
static UOp *rw_mod_negx(const Match *m, void *ctx) {
  UOp *x = M("x"), *d = M("d");
  return n_le(u_hi(x), n_int(0)) ? u_neg(u_mod(u_neg(x), d)) : NULL;
}
static UOp *rw_mod_negd(const Match *m, void *ctx) {
  UOp *x = M("x"), *d = M("d");
  return n_lt(u_hi(d), n_int(0)) ? u_mod(x, u_neg(d)) : NULL;
}

#define DIVMOD_XY UP(.ops = OPS(OP_IDIV, OP_MOD), .dts = DTS(SINTS), .name = "d", SRC(X, CSV("y")))
static const Rule symbolic_rules[] = {
  // ** boolean algebra **
  // x|(x&y) -> x
  { P2(OP_OR, X, P2(OP_AND, X, ANY)), rw_x },
  // ** combine terms **
  // (x*c0)+(x*c1) -> x*(c0+c1)
  { P2(OP_ADD, P2(OP_MUL, X, CVAR("c0")), P2(OP_MUL, X, CVAR("c1"))), rw_x_c0c1 },
  // (y+x*c0)+x*c1 -> y+x*(c0+c1)
  { P2(OP_ADD, P2(OP_ADD, UVAR("y"), P2(OP_MUL, X, CVAR("c0"))), P2(OP_MUL, X, CVAR("c1"))), rw_yx_c0c1 },
  // (x+x*c) -> x*(c+1)
  { P2(OP_ADD, X, P2(OP_MUL, X, CVAR("c"))), rw_x_c1 },
  // (y+x)+x*c -> y+x*(c+1)
  { P2(OP_ADD, P2(OP_ADD, UVAR("y"), X), P2(OP_MUL, X, CVAR("c"))), rw_yx_c1 },
  // (x+x) -> x*2
  { P2(OP_ADD, X, X), rw_x2 },
  // (y+x)+x -> y+x*2
  { P2(OP_ADD, P2(OP_ADD, UVAR("y"), X), X), rw_yx2 },
  // (x/x2)/x3 -> x/(x2*x3)
  { P2(OP_MUL, P2(OP_MUL, X, T1(OP_RECIP, UVAR("x2"))), T1(OP_RECIP, UVAR("x3"))), rw_div_div },
  // -(x+c) -> -x + -c
  { P2(OP_MUL, CONSTV(-1), P2(OP_ADD, X, CVAR("c"))), rw_neg_xc },
  // a conditional with the same results either way is a noop
  { UP(.ops = OPS(OP_WHERE), SRC(ANY, UVAR("val"), UVAR("val"))), rw_val },
  // const conditionals fold
  { UP(.ops = OPS(OP_WHERE), SRC(CSV("gate"), UVAR("c0"), UVAR("c1"))), rw_const_gate },
  // not cond .where(t, f) -> cond.where(f, t)
  { UP(.ops = OPS(OP_WHERE), SRC(UP(.ops = OPS(OP_CMPNE), .dts = DTS(SC_BOOL), SRC_PERM(VD("cond", SC_BOOL), CONSTVD(1, SC_BOOL))), UVAR("t"), UVAR("f"))), rw_not_where },
  // alu of two where with same conds can combine, only if true branch or false branch is const
  { UP(.groups = G_BINARY, .name = "alu", SRC(UP(.ops = OPS(OP_WHERE), SRC(UVAR("c"), UVAR("t"), UVAR("f"))), UP(.ops = OPS(OP_WHERE), SRC(UVAR("c"), UVAR("tt"), UVAR("ff"))))), rw_where_alu },
  // ALU/variable min==max -> CONST (slow!)
  { UP(.groups = G_ALU, .ops = OPS(OP_DEFINE_VAR, OP_SPECIAL, OP_RANGE), .name = "x"), rw_minmax_const },
  // max folding
  { P2(OP_MAX, X, UVAR("y")), rw_max_fold },
  // ** two stage ALU folding ** (GroupOp.Associative: ADD, MUL, AND, OR, MAX)
  { UP(.ops = OPS(OP_ADD), .name = "f", SRC_PERM(P2(OP_ADD, X, CVAR("c1")), CVAR("c2"))), rw_two_stage },
  { UP(.ops = OPS(OP_MUL), .name = "f", SRC_PERM(P2(OP_MUL, X, CVAR("c1")), CVAR("c2"))), rw_two_stage },
  { UP(.ops = OPS(OP_AND), .name = "f", SRC_PERM(P2(OP_AND, X, CVAR("c1")), CVAR("c2"))), rw_two_stage },
  { UP(.ops = OPS(OP_OR), .name = "f", SRC_PERM(P2(OP_OR, X, CVAR("c1")), CVAR("c2"))), rw_two_stage },
  { UP(.ops = OPS(OP_MAX), .name = "f", SRC_PERM(P2(OP_MAX, X, CVAR("c1")), CVAR("c2"))), rw_two_stage },
  // c0 + x < c1 -> x < c1 - c0
  { T2(OP_CMPLT, P2(OP_ADD, CVAR("c0"), X), CVAR("c1")), rw_lt_sub },
  // (x//c1)//c2 -> x//(c1*c2)
  { T2(OP_IDIV, T2(OP_IDIV, X, CVAR("c1")), CVAR("c2")), rw_div_div_c },
  // ** lt **
  // c0*x<c1 for positive int c0,c1
  { T2(OP_CMPLT, P2(OP_MUL, CSV("c0"), VC("x", DTC_INTS)), CSV("c1")), rw_lt_mul_pos },
  // c0*x<c1 for negative int c0 and non-positive c1
  { T2(OP_CMPLT, P2(OP_MUL, CSV("c0"), VC("x", DTC_INTS)), CSV("c1")), rw_lt_mul_neg },
  // x//d<c
  { T2(OP_CMPLT, T2(OP_IDIV, VC("x", DTC_INTS), CSV("d")), CSV("c")), rw_lt_div },
  // ** move add/mul consts to end (NOTE: this is still happening before constant folding) **
  { P2(OP_ADD, P2(OP_ADD, X, CVAR("c1")), UVAR("y")), rw_add_const_end },
  { P2(OP_MUL, P2(OP_MUL, X, CVAR("c1")), UVAR("y")), rw_mul_const_end },
  // *** rules from symbolic ***
  // unrolled arange div folding
  { UP(.ops = OPS(OP_ADD), .name = "divs", SRC_PERM(ANY, T2(OP_IDIV, ANY, CSV("d")))), rw_unrolled_divs },
  { UP(.ops = OPS(OP_ADD), .name = "divs", SRC_PERM(ANY, P2(OP_MUL, T2(OP_IDIV, ANY, CSV("d")), CVAR("c")))), rw_unrolled_divs_c },
  // generic lt folding
  { T2(OP_CMPLT, VD("x", SINTS), CSV("c")), rw_lt_folding },
  // x*-1 < y*-1 -> y < x
  { T2(OP_CMPLT, UP(.ops = OPS(OP_MUL), .dts = DTS(SINTS), SRC_PERM(VD("x", SINTS), CONSTVD(-1, SINTS))),
                 UP(.ops = OPS(OP_MUL), .dts = DTS(SINTS), SRC_PERM(VD("y", SINTS), CONSTVD(-1, SINTS)))), rw_lt_negs },
  // canonicalize a simplex with positive coefficients > 0: not x < 1 -> X > 0
  { UP(.ops = OPS(OP_CMPNE), .dts = DTS(SC_BOOL), SRC_PERM(UP(.ops = OPS(OP_CMPLT), .dts = DTS(SC_BOOL), SRC(VC("x", DTC_INTS), CONSTVC(1, DTC_INTS))), CONSTVD(1, SC_BOOL))), rw_simplex },
  // ** div **
  // (x//c+a)//d -> (x+a*c)//(c*d)
  { T2(OP_IDIV, P2(OP_ADD, T2(OP_IDIV, X, CVAR("c")), CVAR("a")), CVAR("d")), rw_div_fold },
  // cancel div/mod when the numerator range lies within a single denominator interval
  { UP(.ops = OPS(OP_IDIV, OP_MOD), .dts = DTS(SINTS), .name = "d", SRC(X, UVAR("y"))), cancel_divmod },
  // numerator with one term that takes two values
  { DIVMOD_XY, fold_binary_numerator },
  // congruence folding
  { DIVMOD_XY, fold_divmod_congruence },
  // x//y -> (x//gcd)//(y//gcd), x%y -> gcd*(x//gcd)%(y//gcd)
  { DIVMOD_XY, divide_by_gcd },
  // (a%4 + b)%2 -> (a+b)%2
  { UP(.ops = OPS(OP_MOD), .dts = DTS(SINTS), .name = "m", SRC(X, CSV("y"))), remove_nested_mod },
  // nest the div by the smallest factor
  { UP(.ops = OPS(OP_IDIV), .dts = DTS(SINTS), .name = "d", SRC(X, CSV("y"))), nest_div_by_smallest_factor },
  // take out the quotient
  { DIVMOD_XY, simplify_remainder },
  // x//d -> -(x//(-d)) for negative d
  { T2(OP_IDIV, X, UVAR("d")), rw_div_negd },
  // x//d -> -((-x)//d) for non-positive x
  { T2(OP_IDIV, X, UVAR("d")), rw_div_negx },
  // (x+c)//d with non-positive x and non-negative x+c
  { T2(OP_IDIV, UP(.ops = OPS(OP_ADD), .name = "n", SRC_PERM(VD("x", SINTS), CSV("c"))), CSV("d")), rw_div_negx_c },
  // ** mod **
  // x%d -> -((-x)%d) for non-positive x
  { T2(OP_MOD, X, UVAR("d")), rw_mod_negx },
  // x%d -> x%(-d) for negative d
  { T2(OP_MOD, X, UVAR("d")), rw_mod_negd },
};

/* ===================== gep_pushing ===================== */
static bool arg_is_range(const Value *a, int n) {
  if (a->kind != V_TUPLE || a->n != n) return false;
  for (int i = 0; i < n; i++) if (a->items[i]->kind != V_INT || a->items[i]->i != i) return false;
  return true;
}
static int gep_idx(const Value *a, int *out, int cap) {
  int n = a->kind == V_TUPLE ? a->n : 0;
  for (int i = 0; i < n && i < cap; i++) out[i] = (int)a->items[i]->i;
  return n;
}
/* a GEP index past the width of what it selects from is bad input, not a read past the sources */
static void gep_in_range(const Value *arg, int width, const char *of) {
  for (int i = 0; arg->kind == V_TUPLE && i < arg->n; i++) {
    int x = (int)arg->items[i]->i;  /* as gep_idx reads it */
    if (x < 0 || x >= width) tg_fail(TG_EINPUT, "GEP index %d out of range of a %d-wide %s", x, width, of);
  }
}
static UOp *rw_gep_gep(const Match *m, void *ctx) {
  UOp *g1 = M("g1"), *g2 = M("g2");
  int a1[256], a2[256], r[256];
  int n1 = gep_idx(g1->arg, a1, 256), n2 = gep_idx(g2->arg, a2, 256);
  if (n1 > 256 || n2 > 256) return NULL;
  gep_in_range(g1->arg, n2, "GEP");
  for (int i = 0; i < n1; i++) r[i] = a2[a1[i]];
  return u_gep(g2->src[0], n1, r);
}
static UOp *rw_gep_vec(const Match *m, void *ctx) {
  UOp *gep = M("gep"), *vec = M("vec");
  int a[256]; int n = gep_idx(gep->arg, a, 256);
  if (n > 256) return NULL;
  if (n < 1) tg_fail(TG_EINPUT, "GEP of a VECTORIZE with no index");  // vec.src[gep.arg[0]]
  gep_in_range(gep->arg, vec->nsrc, "VECTORIZE");
  if (n > 1) {
    UOp *s[256];
    for (int i = 0; i < n; i++) s[i] = vec->src[a[i]];
    return uop_new(OP_VECTORIZE, gep->dtype, n, s, NULL, NULL);
  }
  return vec->src[a[0]];
}
static UOp *rw_gep_const(const Match *m, void *ctx) { return u_const_like(M("gep"), M("c")->arg); }
static UOp *rw_gep_vconst(const Match *m, void *ctx) {
  UOp *gep = M("gep"), *c = M("c");
  int a[256]; int n = gep_idx(gep->arg, a, 256);
  if (n > 256) return NULL;
  if (n < 1) tg_fail(TG_EINPUT, "GEP of a VCONST with no index");
  gep_in_range(gep->arg, c->arg->kind == V_TUPLE ? c->arg->n : 0, "VCONST");
  const Value *it[256];
  for (int i = 0; i < n; i++) it[i] = c->arg->items[a[i]];
  return u_const_like(gep, v_tuple(n, it));
}
static UOp *rw_gep_inorder(const Match *m, void *ctx) {
  UOp *g = M("g");
  if (!dt_is_ptr(g->dtype) && arg_is_range(g->arg, g->src[0]->dtype->count)) return g->src[0];
  return NULL;
}
static UOp *rw_gep_alu(const Match *m, void *ctx) {
  UOp *gep = M("gep"), *alu = M("alu");
  if (dt_is_ptr(gep->dtype)) return NULL;
  int a[256]; int n = gep_idx(gep->arg, a, 256);
  if (n > 256) return NULL;
  UOp *s[8];
  if (alu->nsrc > 8) return NULL;
  for (int i = 0; i < alu->nsrc; i++) s[i] = u_gep(alu->src[i], n, a);
  return uop_new((Op)alu->op, dt_vec(dt_scalar_of(alu->dtype), gep->dtype->count), alu->nsrc, s, alu->arg, NULL);
}
static UOp *rw_cat(const Match *m, void *ctx) {
  UOp *x = M("x");
  if (dt_is_ptr(x->dtype)) return NULL;
  int tot = 0;
  for (int i = 0; i < x->nsrc; i++) tot += x->src[i]->dtype->count;
  UOp **s = arena_alloc(ga(), sizeof(UOp *) * (size_t)(tot + 1));
  int k = 0;
  for (int i = 0; i < x->nsrc; i++)
    for (int j = 0; j < x->src[i]->dtype->count; j++) s[k++] = u_gep(x->src[i], 1, &j);
  return uop_new(OP_VECTORIZE, x->dtype, tot, s, NULL, NULL);
}
static UOp *rw_vec_same_gep(const Match *m, void *ctx) {
  UOp *v = M("v"), *x = M("x");
  int *idx = arena_alloc(&uctx->scratch, sizeof(int) * (size_t)(v->nsrc + 1));
  for (int i = 0; i < v->nsrc; i++) {
    const Value *a = v->src[i]->arg;
    if (a->kind != V_TUPLE || a->n != 1) tg_fail(TG_EINTERNAL, "get_single_element: GEP arg is not a single element");
    idx[i] = (int)a->items[0]->i;
  }
  return u_gep(x, v->nsrc, idx);
}
static int64_t prod_sizes(const Value *axes) {  /* prod(x[1] for x in axes) */
  int64_t p = 1;
  for (int i = 0; i < axes->n; i++) p *= axes->items[i]->items[1]->i;
  return p;
}
static UOp *gep_through_wmma(const Match *m, void *ctx) {
  UOp *gep = M("gep"), *wmma = M("wmma");
  const Value *ups = wmma->arg->items[6];
  int64_t out_sz = prod_sizes(ups->items[ups->n - 1]);
  int a[256]; int n = gep_idx(gep->arg, a, 256);
  if (n > 256 || out_sz <= 0) return NULL;
  int nw = (int)((n + out_sz - 1) / out_sz);
  for (int64_t i = 0; i < out_sz; i++) {
    int cnt = 0;
    for (int64_t j = i; j < n; j += out_sz, cnt++) if (cnt >= nw || a[j] - i != a[cnt * out_sz]) return NULL;
    if (cnt != nw) return NULL;
  }
  UOp *ts[8];
  if (wmma->nsrc > 8) return NULL;
  for (int k = 0; k < wmma->nsrc && k < ups->n; k++) {
    int64_t ssz = prod_sizes(ups->items[k]);
    int *sa = arena_alloc(&uctx->scratch, sizeof(int) * (size_t)(nw * ssz + 1)), ns = 0;
    for (int w = 0; w < nw; w++) {
      int64_t base = (a[w * out_sz] / out_sz) * ssz;
      for (int64_t q = base; q < base + ssz; q++) sa[ns++] = (int)q;
    }
    ts[k] = u_gep(wmma->src[k], ns, sa);
  }
  return uop_new(OP_WMMA, gep->dtype, wmma->nsrc, ts, wmma->arg, NULL);
}

static const Rule gep_pushing_rules[] = {
  // GEP/GEP
  { UP(.ops = OPS(OP_GEP), .name = "g1", SRC(UP(.ops = OPS(OP_GEP), .name = "g2"))), rw_gep_gep },
  // GEP/VECTORIZE
  { UP(.ops = OPS(OP_GEP), .name = "gep", SRC(UP(.ops = OPS(OP_VECTORIZE), .name = "vec"))), rw_gep_vec },
  // GEP/CONST
  { UP(.ops = OPS(OP_GEP), .name = "gep", SRC(CSV("c"))), rw_gep_const },
  // GEP/VCONST
  { UP(.ops = OPS(OP_GEP), .name = "gep", SRC(UP(.ops = OPS(OP_VCONST), .name = "c"))), rw_gep_vconst },
  // GEP on void is skipped
  { UP(.ops = OPS(OP_GEP), SRC(VD("x", SC_VOID))), rw_x },
  // GEP in order is removed
  { UP(.ops = OPS(OP_GEP), .name = "g"), rw_gep_inorder },
  // push all GEPs through ALUs (fix arange stuff)
  { UP(.ops = OPS(OP_GEP), .name = "gep", SRC(UP(.groups = G_ALU, .ops = OPS(OP_CAST, OP_BITCAST), .name = "alu"))), rw_gep_alu },
  // CAT can't be rendered. it's a VECTORIZE on vectors, we expand to a single VECTORIZEs with GEPs
  { UP(.ops = OPS(OP_CAT), .name = "x"), rw_cat },
  // VECTORIZE on same GEP
  { UP(.ops = OPS(OP_VECTORIZE), .name = "v", SRC_REPEAT(UP(.ops = OPS(OP_GEP), SRC(X)))), rw_vec_same_gep },
  // push some GEPs through WMMAs
  { UP(.ops = OPS(OP_GEP), .name = "gep", SRC(UP(.ops = OPS(OP_WMMA), .name = "wmma"))), gep_through_wmma },
};

/* ===================== symbolic_flat ===================== */
static UOp *rw_neg_xy(const Match *m, void *ctx) { return u_add(u_neg(M("x")), u_neg(M("y"))); }
static UOp *rw_distribute(const Match *m, void *ctx) { UOp *c = M("c"); return u_add(u_mul(M("x"), c), u_mul(M("y"), c)); }
static const Rule symbolic_flat_rules[] = {
  // ** combine terms (opinionated) **
  // -(x+y) -> -x + -y
  { P2(OP_MUL, CONSTV(-1), P2(OP_ADD, X, UVAR("y"))), rw_neg_xy },
  // (x+y)*c -> x*c+y*c. only for int, float has inf*0=nan issue
  { P2(OP_MUL, P2(OP_ADD, VC("x", DTC_INTS), UVAR("y")), CVAR("c")), rw_distribute },
};

void symbolic_init(void) {
  if (pm_symbolic) return;
  pm_init();
  PM *simple = pm_new(symbolic_simple_rules, RULES_N(symbolic_simple_rules));
  pm_commutative = pm_new(commutative_rules, RULES_N(commutative_rules));
  pm_gep_pushing = pm_new(gep_pushing_rules, RULES_N(gep_pushing_rules));
  PM *sym2 = pm_new(symbolic_rules, RULES_N(symbolic_rules));
  PM *parts[4] = {simple, pm_commutative, sym2, pm_gep_pushing};
  PM *full = pm_concat(4, parts);
  PM *flat = pm_new(symbolic_flat_rules, RULES_N(symbolic_flat_rules));
  PM *fparts[2] = {full, flat};
  pm_symbolic_flat = pm_concat(2, fparts);
  pm_symbolic_simple = simple;
  pm_symbolic = full;
}
