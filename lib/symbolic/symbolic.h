/* symbolic: UOp arithmetic (tinygrad's MathTrait), vmin/vmax, constant folding and the
 * symbolic rewrite tables of tinygrad 0.11.0 (uop/symbolic.py, the symbolic parts of uop/ops.py):
 * symbolic_simple, symbolic, symbolic_flat, ssimplify, resolve, split_uop, simplify_valid,
 * uop_given_valid, and sint (Sint: int or UOp) arithmetic used by shapes. */
#ifndef TGC_SYMBOLIC_H
#define TGC_SYMBOLIC_H
#include "../rewrite/pm.h"

/* ---- UOp construction the way tinygrad's operators build it ---- */
UOp *u_alu(Op op, int n, UOp *const *src);          /* UOp.alu: dtype of the last src; CMP* give bool */
UOp *u_alu1(Op op, UOp *a);
UOp *u_alu2(Op op, UOp *a, UOp *b);
UOp *u_alu3(Op op, UOp *a, UOp *b, UOp *c);
/* const_like: a CONST of like's dtype. Tensor-aware (DEVICE/VIEW srcs, like's shape) once
 * shape_init() has installed its hook; bare CONST before that and for nodes without a shape. */
typedef UOp *(*ConstLikeFn)(UOp *like, const Value *v);
extern ConstLikeFn sym_const_like_hook;
UOp *u_const_like(UOp *like, const Value *v);       /* v is converted with dtypes.as_const */
UOp *u_const_like_i(UOp *like, int64_t i);
UOp *u_const_like_f(UOp *like, double f);
const Value *as_const(const Value *v, const DType *dt); /* dtypes.as_const */
/* a op b, and with a Python number on the right (ufix) or left (reverse) */
UOp *u_add(UOp *a, UOp *b);  UOp *u_addi(UOp *a, int64_t b);
UOp *u_sub(UOp *a, UOp *b);  UOp *u_subi(UOp *a, int64_t b);  UOp *u_rsubi(int64_t a, UOp *b);
UOp *u_mul(UOp *a, UOp *b);  UOp *u_muli(UOp *a, int64_t b);
UOp *u_idiv(UOp *a, UOp *b); UOp *u_idivi(UOp *a, int64_t b);
UOp *u_mod(UOp *a, UOp *b);  UOp *u_modi(UOp *a, int64_t b);
UOp *u_neg(UOp *a);                                  /* bool: logical_not, else a*-1 */
UOp *u_lt(UOp *a, UOp *b);   UOp *u_lti(UOp *a, int64_t b);
UOp *u_gt(UOp *a, UOp *b);   UOp *u_gti(UOp *a, int64_t b);
UOp *u_ge(UOp *a, UOp *b);   UOp *u_gei(UOp *a, int64_t b);  /* (a<b).logical_not() */
UOp *u_le(UOp *a, UOp *b);   UOp *u_lei(UOp *a, int64_t b);
UOp *u_ne(UOp *a, UOp *b);   UOp *u_nei(UOp *a, int64_t b);
UOp *u_eq(UOp *a, UOp *b);
UOp *u_logical_not(UOp *a);                          /* a.ne(True) */
UOp *u_and(UOp *a, UOp *b);  UOp *u_or(UOp *a, UOp *b); UOp *u_xor(UOp *a, UOp *b);
UOp *u_max(UOp *a, UOp *b);  UOp *u_maxi(UOp *a, int64_t b);
UOp *u_min(UOp *a, UOp *b);  UOp *u_mini(UOp *a, int64_t b);  /* -(-a).maximum(-b) */
UOp *u_where(UOp *c, UOp *a, UOp *b);
UOp *u_cast(UOp *a, const DType *dt);                /* UOp.cast (no-op when same dtype) */
UOp *u_pow(UOp *a, UOp *b);
UOp *u_reciprocal(UOp *a);  UOp *u_sqrt(UOp *a);  UOp *u_exp2(UOp *a);
UOp *u_const(const DType *dt, const Value *v);      /* UOp.const(dtype, b), bare: as_const, CONST or VCONST (all-same tuples collapse) */
UOp *u_variable(const char *name, int64_t min, int64_t max, const DType *dt); /* DEFINE_VAR */
UOp *u_bind(UOp *var, int64_t val);

/* ---- ranges ---- */
const Value *u_vmin(UOp *u);                         /* int/float/bool Value, as tinygrad's _min_max */
const Value *u_vmax(UOp *u);
int64_t u_vmin_i(UOp *u);
int64_t u_vmax_i(UOp *u);
bool u_in_dtype_range(UOp *u);                       /* vmin..vmax (unclamped) within u's dtype: an int op that can't overflow */
int64_t u_const_factor(UOp *u);
UOp *u_divides(UOp *u, int64_t v);                   /* NULL when not known to divide */

/* ---- the rewrite tables ---- */
extern PM *pm_symbolic_simple, *pm_symbolic, *pm_symbolic_flat;
extern PM *pm_commutative, *pm_gep_pushing;          /* the parts symbolic is made of */
void symbolic_init(void);                            /* builds the tables; idempotent */
extern PM *pm_sym;                                   /* tinygrad's `sym` (phase 3, codegen): symbolic_flat + load/store/vectorize rules */
void sym_init(void);                                 /* builds pm_sym; idempotent */
UOp *u_simplify(UOp *u);                             /* graph_rewrite(u, symbolic) */
Sint u_ssimplify(UOp *u);                            /* CONST folds to its int */
bool resolve(UOp *x, bool dflt);                     /* bool UOp -> bool when vmin == vmax, else dflt */
int split_uop(UOp *x, Op sep, UOp **out, int cap);   /* flattened operands of a chain of sep */
UOp *simplify_valid(UOp *valid);                     /* NULL when unchanged */
UOp *uop_given_valid(UOp *valid, UOp *uop);          /* NULL when valid is always false, else uop simplified (maybe the same) */
int64_t sym_infer(UOp *u, int nvars, UOp *const *vars, const int64_t *vals);
const char *u_render(Arena *a, UOp *u);              /* UOp.render(): "(a*4+b)" */
const char *u_render_nosimplify(Arena *a, UOp *u);   /* UOp.render(simplify=False) */
bool u_is_increasing(UOp *u);                        /* UOp.is_increasing */
UOp *u_gep(UOp *u, int n, const int *idx);           /* UOp.gep(i) / gep(tuple) */
/* constant folding: exec_alu(op, dtype, operands, truncate_output) with tuples for vector dtypes */
const Value *exec_alu(Op op, const DType *dt, int n, const Value *const *operands, bool truncate_output);
const Value *dt_truncate(const DType *dt, const Value *v); /* dtype.truncate[dt](v) */

/* ---- sint arithmetic (Python semantics: ints use floor // and %, UOps build symbolic nodes) ---- */
UOp *si_uop(Sint s);                                  /* sint_to_uop (int CONST for ints) */
Sint si_from(UOp *u);                                 /* a CONST int folds to an int */
Sint si_add(Sint a, Sint b);
Sint si_sub(Sint a, Sint b);
Sint si_mul(Sint a, Sint b);
Sint si_floordiv(Sint a, Sint b);
Sint si_mod(Sint a, Sint b);
Sint si_neg(Sint a);
Sint si_smax(Sint a, Sint b);                         /* smax */
Sint si_smin(Sint a, Sint b);
bool si_resolve_lt(Sint a, Sint b, bool dflt);        /* resolve(a < b) */
bool si_resolve_ne(Sint a, Sint b, bool dflt);        /* resolve(a != b) */
bool si_resolve_eq(Sint a, Sint b, bool dflt);        /* resolve(a == b): for UOps, not(a != b) */
int64_t si_vmax(Sint a);                              /* x.vmax if UOp else x */
int64_t si_vmin(Sint a);

#endif
