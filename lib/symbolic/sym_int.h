/* sym_int.h: lib/symbolic's private numbers. A Num is a Python int/float/bool as tinygrad's
 * _min_max and python_alu see them: ints are 128-bit (Python ints are unbounded; 128 bits hold
 * any product of two int64/uint64 bounds exactly, and saturate beyond), floats are doubles,
 * bools keep their kind so that rendering and min()/max() tie-breaking match Python. */
#ifndef TGC_SYM_INT_H
#define TGC_SYM_INT_H
#include "symbolic.h"

__extension__ typedef __int128 i128;
enum { NK_BOOL, NK_INT, NK_FLOAT };
typedef struct Num { uint8_t k; i128 i; double f; } Num; /* k NK_BOOL/NK_INT: i (0/1 for bool); NK_FLOAT: f */
typedef struct MinMax { Num lo, hi; } MinMax;

#define I128_MAX ((i128)(((unsigned __int128)1 << 127) - 1))
#define I128_MIN (-I128_MAX - 1)

uint16_t sym_f16_bits(double x);   /* double -> IEEE half bits, round to nearest even (exec.c) */
double sym_f16_value(uint16_t b);  /* IEEE half bits -> double */

static inline Num n_int(i128 i) { return (Num){NK_INT, i, 0}; }
static inline Num n_bool(bool b) { return (Num){NK_BOOL, b, 0}; }
static inline Num n_float(double f) { return (Num){NK_FLOAT, 0, f}; }
static inline bool n_isint(Num a) { return a.k != NK_FLOAT; }   /* isinstance(x, int): bools are ints */
static inline double n_f(Num a) { return a.k == NK_FLOAT ? a.f : (double)a.i; }
bool n_truthy(Num a);
Num n_add(Num a, Num b);
Num n_sub(Num a, Num b);
Num n_mul(Num a, Num b);
Num n_neg(Num a);
bool n_lt(Num a, Num b);
bool n_eq(Num a, Num b);
static inline bool n_le(Num a, Num b) { return n_lt(a, b) || n_eq(a, b); }
static inline bool n_gt(Num a, Num b) { return n_lt(b, a); }
static inline bool n_ge(Num a, Num b) { return n_le(b, a); }
Num n_min(Num a, Num b);          /* Python min(a, b): a unless b < a */
Num n_max(Num a, Num b);          /* Python max(a, b): a unless b > a */
Num n_cdiv(Num x, Num y);         /* helpers.cdiv */
Num n_cmod(Num x, Num y);         /* helpers.cmod */
Num n_floordiv(Num x, Num y);     /* Python x // y (fails on zero) */
Num n_pymod(Num x, Num y);        /* Python x % y (fails on zero) */
Num n_shl(Num a, Num b);
Num n_shr(Num a, Num b);
i128 i128_sat_add(i128 a, i128 b);
i128 i128_sat_mul(i128 a, i128 b);
i128 i128_gcd(i128 a, i128 b);    /* math.gcd: non-negative */
Num n_of_value(const Value *v);   /* bool/int/float Value */
const Value *n_value(Num a);      /* ints up to 2**64-1 exact (v_uint64), beyond saturate */
int64_t n_i64(Num a);             /* int(a) saturated to int64 (floats truncate) */
Num n_dtmin(const DType *dt);     /* dtypes.min */
Num n_dtmax(const DType *dt);     /* dtypes.max */
char *n_str(Arena *a, Num x);     /* Python str() */
char *py_float_repr(char *buf, size_t n, double f);
char *py_value_str(Arena *a, const Value *v); /* str() of a const arg: numbers and tuples of them */

/* ranges of a UOp (tinygrad's cached _min_max) */
MinMax u_minmax(UOp *u);
static inline Num u_lo(UOp *u) { return u_minmax(u).lo; }
static inline Num u_hi(UOp *u) { return u_minmax(u).hi; }

/* python_alu / exec_alu on Nums */
Num n_exec(Op op, const DType *dt, int n, const Num *x, bool truncate_output);
Num n_truncate(const DType *dt, Num x);
UOp *u_const_n(UOp *like, Num v);                   /* like.const_like(v) */
UOp *u_alu_like(UOp *a, Op op, UOp *b);             /* a.alu(op, b) */
bool u_is_const_int(UOp *u, int64_t *out);
Num u_carg(UOp *c);                                  /* CONST arg as a Num */
int tuplize_cmp(UOp *a, UOp *b);                    /* compare a.tuplize with b.tuplize */
UOp *u_reduce_add(int n, UOp *const *xs);           /* functools.reduce(operator.add, xs) */
UOp *u_sum_terms(int n, UOp *const *xs, UOp *start);/* sum(xs) with Python's start 0 (start NULL) */
UOp **split_all(UOp *x, Op sep, int *n);            /* split_uop into a scratch array */
#define SALLOC(T, n) ((T *)arena_alloc(&uctx->scratch, sizeof(T) * (size_t)((n) + 1)))

#endif
