/* sops.h (private to lib/shape): Python-semantics sint operations with an int fast path.
 * Ints are handled inline with Python's floor // and %; anything touching a UOp goes through
 * lib/symbolic's si_* (which builds the same UOps tinygrad's operators build). Comparisons come
 * in three flavours, because tinygrad uses all three:
 *   S_EQ      Python `==` on sints: int equality, UOp identity (UOp does not override __eq__)
 *   R_xx      resolve(a xx b, dflt): the comparison UOp simplified, dflt when undetermined
 *   B_xx      bool(a xx b): like resolve, but an undetermined UOp is an error (UOp.__bool__). */
#ifndef TGC_SHAPE_SOPS_H
#define TGC_SHAPE_SOPS_H
#include "shape.h"

static inline Sint S_u(UOp *u) { return (Sint){0, u}; }
/* Python ints do not overflow; a shape computation beyond 64 bits is bad input here, never UB */
static inline int64_t s_ovf(bool ovf, int64_t r) {
  if (ovf) tg_fail(TG_EINPUT, "a shape computation overflows 64 bits (a size above 2**63)");
  return r;
}
static inline int64_t s_iadd(int64_t a, int64_t b) { int64_t r; bool o = __builtin_add_overflow(a, b, &r); return s_ovf(o, r); }
static inline int64_t s_isub(int64_t a, int64_t b) { int64_t r; bool o = __builtin_sub_overflow(a, b, &r); return s_ovf(o, r); }
static inline int64_t s_imul(int64_t a, int64_t b) { int64_t r; bool o = __builtin_mul_overflow(a, b, &r); return s_ovf(o, r); }
static inline int64_t py_floordiv(int64_t a, int64_t b) {
  if (b == 0) tg_fail(TG_EINPUT, "integer division by zero in a shape computation");
  if (b == -1) return s_isub(0, a);
  int64_t q = a / b;
  if ((a % b != 0) && ((a < 0) != (b < 0))) q--;
  return q;
}
static inline int64_t py_mod(int64_t a, int64_t b) {
  if (b == 0) tg_fail(TG_EINPUT, "integer modulo by zero in a shape computation");
  if (b == -1) return 0;
  int64_t r = a % b;
  if (r != 0 && ((r < 0) != (b < 0))) r += b;
  return r;
}
#define BOTH_INT(a, b) (!(a).u && !(b).u)
static inline Sint S_add(Sint a, Sint b) { return BOTH_INT(a, b) ? si(s_iadd(a.c, b.c)) : si_add(a, b); }
static inline Sint S_sub(Sint a, Sint b) { return BOTH_INT(a, b) ? si(s_isub(a.c, b.c)) : si_sub(a, b); }
static inline Sint S_mul(Sint a, Sint b) { return BOTH_INT(a, b) ? si(s_imul(a.c, b.c)) : si_mul(a, b); }
static inline Sint S_fdiv(Sint a, Sint b) { return BOTH_INT(a, b) ? si(py_floordiv(a.c, b.c)) : si_floordiv(a, b); }
static inline Sint S_mod(Sint a, Sint b) { return BOTH_INT(a, b) ? si(py_mod(a.c, b.c)) : si_mod(a, b); }
static inline Sint S_neg(Sint a) { return !a.u ? si(s_isub(0, a.c)) : si_neg(a); }
static inline Sint S_smax(Sint a, Sint b) { return BOTH_INT(a, b) ? si(a.c > b.c ? a.c : b.c) : si_smax(a, b); }
static inline Sint S_smin(Sint a, Sint b) { return BOTH_INT(a, b) ? si(a.c < b.c ? a.c : b.c) : si_smin(a, b); }
static inline Sint S_ssimplify(Sint a) { return a.u ? u_ssimplify(a.u) : a; }
static inline bool S_EQ(Sint a, Sint b) { return si_eq(a, b); }
static inline bool S_EQI(Sint a, int64_t i) { return !a.u && a.c == i; }

/* the comparison UOp Python builds for `a OP b` (at least one side a UOp): a UOp on the left
 * takes the int through ufix; an int on the left reflects to the UOp's operator */
enum { SC_LT, SC_GT, SC_GE, SC_LE, SC_NE };
static inline UOp *S_cmp(int k, Sint a, Sint b) {
  if (a.u && b.u) {
    switch (k) {
    case SC_LT: return u_lt(a.u, b.u);
    case SC_GT: return u_gt(a.u, b.u);
    case SC_GE: return u_ge(a.u, b.u);
    case SC_LE: return u_le(a.u, b.u);
    default: return u_ne(a.u, b.u);
    }
  }
  if (a.u) {
    switch (k) {
    case SC_LT: return u_lti(a.u, b.c);
    case SC_GT: return u_gti(a.u, b.c);
    case SC_GE: return u_gei(a.u, b.c);
    case SC_LE: return u_lei(a.u, b.c);
    default: return u_nei(a.u, b.c);
    }
  }
  switch (k) { /* int OP uop -> uop.__reflected__(int) */
  case SC_LT: return u_gti(b.u, a.c);
  case SC_GT: return u_lti(b.u, a.c);
  case SC_GE: return u_lei(b.u, a.c);
  case SC_LE: return u_gei(b.u, a.c);
  default: return u_nei(b.u, a.c);
  }
}
static inline bool S_icmp(int k, int64_t a, int64_t b) {
  switch (k) {
  case SC_LT: return a < b;
  case SC_GT: return a > b;
  case SC_GE: return a >= b;
  case SC_LE: return a <= b;
  default: return a != b;
  }
}
/* resolve(a OP b, dflt) */
static inline bool S_res(int k, Sint a, Sint b, bool dflt) {
  return BOTH_INT(a, b) ? S_icmp(k, a.c, b.c) : resolve(S_cmp(k, a, b), dflt);
}
/* bool(UOp): UOp.__bool__ evaluates, and fails when the value is not a single number */
static inline bool S_ubool(UOp *x) {
  bool lo = resolve(x, false), hi = resolve(x, true);
  if (lo != hi) tg_fail(TG_EINPUT, "a symbolic shape comparison has no single truth value");
  return lo;
}
/* bool(a OP b) */
static inline bool S_bool(int k, Sint a, Sint b) {
  return BOTH_INT(a, b) ? S_icmp(k, a.c, b.c) : S_ubool(S_cmp(k, a, b));
}
#define R_LT(a, b, d) S_res(SC_LT, (a), (b), (d))
#define R_NE(a, b, d) S_res(SC_NE, (a), (b), (d))
#define R_GE(a, b, d) S_res(SC_GE, (a), (b), (d))
#define R_LE(a, b, d) S_res(SC_LE, (a), (b), (d))
#define R_GT(a, b, d) S_res(SC_GT, (a), (b), (d))

/* shared between view.c and shapetracker.c */
void shape_unravel(SList shape, Sint offset, Sint *out);  /* unravel: offset's position on each dim */
int shape_uop_vars(UOp *u, UOp **out, int n, int cap);    /* UOp.vars() appended to out[n..], deduped */

/* per-context memos of pure functions on interned operands (view.c): pmemo_get gives true and the
 * result (maybe NULL) of (a, b) when cached; ia/ib are their ids (the hash) */
enum { PMEMO_VIEW_ADD, PMEMO_ST_CONCAT, PMEMO_FROM_SHAPE, PMEMO_ST_MOP /* one slot per movement op (st_mop's list) */, PMEMO_COUNT = PMEMO_ST_MOP + 6 };
_Static_assert(PMEMO_COUNT <= sizeof ((UCtx *)0)->memo / sizeof(PairMap), "UCtx.memo has a slot per memo");
bool pmemo_get(int slot, const void *a, uint32_t ia, const void *b, uint32_t ib, const void **r);
void pmemo_put(int slot, const void *a, uint32_t ia, const void *b, uint32_t ib, const void *r);
/* a temporary (zeroed) array: in scratch inside a tg_tmp_scope (results are interned, which copies) */
static inline void *tmp_alloc(size_t n) { return arena_alloc(tg_tmp_scope ? &uctx->scratch : ga(), n ? n : 1); }
static inline Sint *s_tmp(int n) { return tmp_alloc(sizeof(Sint) * (size_t)(n > 0 ? n : 1)); }
/* a temporaries scope: tmp_alloc/s_tmp go to scratch until the matching tmp_scope_leave */
static inline ArenaMark tmp_scope_enter(void) { tg_tmp_scope++; return arena_mark(&uctx->scratch); }
static inline void tmp_scope_leave(ArenaMark mk) {
  if (tg_tmp_scope > 0) tg_tmp_scope--; /* tg_fail resets it to 0 */
  arena_pop(&uctx->scratch, mk);
}
static inline SList sl_zeros_n(int n) { return sl(n, s_tmp(n)); } /* arena memory is zeroed: si(0) */

#endif
