/* exec.c: constant folding arithmetic: tinygrad's python_alu / exec_alu (uop/ops.py) and the
 * per-dtype `truncate` table (dtype.py: fp16/bf16/fp8 rounding, float32 narrowing, ctypes-style
 * integer wrapping), on Python-semantics Nums. */
#include "sym_int.h"
#include <math.h>
#include <string.h>

/* ---- truncate ---- */
/* IEEE binary16 <-> double, round to nearest even in one step from the double. gcc and clang >= 15
 * have _Float16 on x86-64; clang 14 (the fuzz build) does not, so there is a bit-level fallback. */
#ifdef __FLT16_MAX__
uint16_t sym_f16_bits(double x) { _Float16 h = (_Float16)x; uint16_t b; memcpy(&b, &h, 2); return b; }
double sym_f16_value(uint16_t b) { _Float16 h; memcpy(&h, &b, 2); return (double)h; }
#else
uint16_t sym_f16_bits(double x) {
  uint64_t u; memcpy(&u, &x, 8);
  uint16_t sign = (uint16_t)((u >> 48) & 0x8000);
  int exp = (int)((u >> 52) & 0x7ff);
  uint64_t mant = u & ((1ull << 52) - 1);
  if (exp == 0x7ff) return (uint16_t)(sign | 0x7c00 | (mant ? 0x200 | (mant >> 42) : 0));
  if (exp == 0) return sign;                       /* double subnormals round to +-0 */
  int e = exp - 1023;
  if (e > 15) return sign | 0x7c00;
  uint64_t m = mant | (1ull << 52);
  int shift = e >= -14 ? 42 : 42 + (-14 - e);      /* bits dropped from the 53-bit significand */
  if (shift >= 64) return sign;
  uint64_t r = m >> shift, rem = m & ((1ull << shift) - 1), half = 1ull << (shift - 1);
  if (rem > half || (rem == half && (r & 1))) r++;
  uint64_t out = e >= -14 ? ((uint64_t)(e + 15) << 10) + r - 1024 : r;  /* a carry moves up one binade */
  return (uint16_t)(sign | (out >= 0x7c00 ? 0x7c00 : out));
}
double sym_f16_value(uint16_t b) {
  int exp = (b >> 10) & 0x1f, m = b & 0x3ff;
  double v;
  if (exp == 31) {
    if (!m) v = INFINITY;
    else { uint64_t u = (0x7ffull << 52) | ((uint64_t)m << 42); memcpy(&v, &u, 8); }
  } else v = exp == 0 ? ldexp(m, -24) : ldexp(m | 0x400, exp - 25);
  return (b & 0x8000) ? -v : v;
}
#endif
static double f16_round(double x) { return sym_f16_value(sym_f16_bits(x)); }
static double half_bits_to_double(uint16_t b) { return sym_f16_value(b); }
static double bf16_round(double x) {
  float maxbf; uint32_t mb = 0x7f7f0000u; memcpy(&maxbf, &mb, 4);
  if (fabs(x) > (double)maxbf) return copysign(INFINITY, x);
  float f = (float)x; uint32_t b; memcpy(&b, &f, 4);
  b &= 0xFFFF0000u; memcpy(&f, &b, 4);
  return (double)f;
}
static uint32_t float_to_fp8(double x, bool e4m3) {
  const int EXP_BIAS = e4m3 ? 7 : 15, MANT_BITS = e4m3 ? 4 : 3;
  const uint64_t MASK = e4m3 ? 0x7 : 0x3, MINDENORM_O2 = e4m3 ? 0x3F50000000000000ull : 0x3EE0000000000000ull;
  const uint64_t OVERFLOW = e4m3 ? 0x407D000000000000ull : 0x40EE000000000000ull - 1, MINNORM = e4m3 ? 0x3F90000000000000ull : 0x3F10000000000000ull;
  const uint32_t MAXNORM = e4m3 ? 0x7E : 0x7B;
  uint64_t xbits; memcpy(&xbits, &x, 8);
  uint64_t HALF_ULP = 1ull << (53 - MANT_BITS - 1);
  uint32_t sign = (uint32_t)((xbits >> 63) & 1) << 7;
  int64_t exp = (int64_t)((xbits >> 52) & 0x7FF) - 1023 + EXP_BIAS;
  uint64_t mantissa = (xbits >> (53 - MANT_BITS)) & MASK;
  uint64_t absx = xbits & 0x7FFFFFFFFFFFFFFFull;
  uint64_t res;
  if (absx <= MINDENORM_O2) res = 0;
  else if (absx > 0x7FF0000000000000ull) res = e4m3 ? 0x7F : (0x7E | mantissa);
  else if (absx > OVERFLOW) res = MAXNORM;
  else if (absx >= MINNORM) {
    res = ((uint64_t)exp << (MANT_BITS - 1)) | mantissa;
    uint64_t rb = xbits & ((HALF_ULP << 1) - 1);
    if (rb > HALF_ULP || (rb == HALF_ULP && (mantissa & 1))) res += 1;
  } else {
    int64_t shift = 1 - exp;
    mantissa |= 1ull << (MANT_BITS - 1);
    res = shift >= 64 ? 0 : mantissa >> shift;
    uint64_t lim = shift + 1 >= 64 ? ~0ull : (HALF_ULP << (shift + 1)) - 1;
    uint64_t rb = (xbits | (1ull << 52)) & lim, half = shift >= 64 ? ~0ull : HALF_ULP << shift;
    if (rb > half || (rb == half && (res & 1))) res += 1;
  }
  return (uint32_t)(res | sign);
}
static double fp8_to_float(uint32_t x, bool e4m3) {
  uint32_t ur = x << 8;
  if (!e4m3 && (ur & 0x7FFF) > 0x7C00) ur = 0x7FFF;
  else if (e4m3) {
    uint32_t sign = ur & 0x8000, exponent = ((ur & 0x7800) >> 1) + 0x2000, mantissa = (ur & 0x0700) >> 1, absx = x & 0x7F;
    if (absx == 0x7F) ur = 0x7FFF;
    else if (exponent == 0x2000) {
      if (mantissa != 0) {
        mantissa <<= 1;
        while ((mantissa & 0x0400) == 0) { mantissa <<= 1; exponent -= 0x0400; }
        mantissa &= 0x03FF;
      } else exponent = 0;
      ur = (sign | exponent) | mantissa;
    } else ur = (sign | exponent) | mantissa;
  }
  return half_bits_to_double((uint16_t)(ur & 0xFFFF));
}
static i128 wrap_int(i128 x, int bits, bool is_signed) {
  unsigned __int128 m = bits == 128 ? ~(unsigned __int128)0 : (((unsigned __int128)1 << bits) - 1);
  unsigned __int128 u = (unsigned __int128)x & m;
  if (is_signed && bits < 128 && (u >> (bits - 1)) & 1) return (i128)u - ((i128)1 << bits);
  return (i128)u;
}
Num n_truncate(const DType *dt, Num x) {
  if (dt->kind != DTK_SCALAR || dt->count != 1) return x;
  switch (dt->scalar) {
  case SC_BOOL: return n_bool(n_truthy(x));
  case SC_HALF: return n_float(f16_round(n_f(x)));
  case SC_BFLOAT16: return n_float(bf16_round(n_f(x)));
  case SC_FP8E4M3: return n_float(fp8_to_float(float_to_fp8(n_f(x), true), true));
  case SC_FP8E5M2: return n_float(fp8_to_float(float_to_fp8(n_f(x), false), false));
  case SC_FLOAT: return n_float((double)(float)n_f(x));
  case SC_DOUBLE: return n_float(n_f(x));
  case SC_CHAR: case SC_UCHAR: case SC_SHORT: case SC_USHORT: case SC_INT: case SC_UINT: case SC_LONG: case SC_ULONG:
    if (x.k == NK_FLOAT) tg_fail(TG_EINPUT, "the graph folds a float into %s (tinygrad 0.11.0 raises TypeError: int expected instead of float)", dt->name);
    return n_int(wrap_int(x.i, dt->itemsize * 8, !dt_is_unsigned(dt)));
  default: return x;
  }
}

/* ---- python_alu ---- */
static Num ipow(i128 b, i128 e) {
  if (b == 0) return n_int(e == 0 ? 1 : 0);
  if (b == 1) return n_int(1);
  if (b == -1) return n_int(e % 2 ? -1 : 1);
  i128 r = 1;
  while (e > 0) {
    if (e & 1) r = i128_sat_mul(r, b);
    e >>= 1;
    if (e) b = i128_sat_mul(b, b);
  }
  return n_int(r);
}
static Num safe_pow(Num x, Num y) {
  if (n_isint(x) && n_isint(y)) {
    if (y.i >= 0) return ipow(x.i, y.i);
    if (x.i == 0) return n_float(INFINITY); /* ZeroDivisionError */
    return n_float(pow((double)x.i, (double)y.i));
  }
  double a = n_f(x), b = n_f(y);
  if (a == 0 && b < 0) return n_float(INFINITY);           /* ZeroDivisionError */
  if (a < 0 && b != floor(b) && isfinite(b)) return n_float(NAN); /* complex result */
  return n_float(pow(a, b));                                /* OverflowError is not caught by tinygrad; inf here */
}
static Num bitop(Op op, Num a, Num b) {
  if (a.k == NK_FLOAT || b.k == NK_FLOAT) tg_fail(TG_EINPUT, "the graph folds to a %s of a float (tinygrad 0.11.0 raises TypeError: unsupported operand type(s))", op_names[op]);
  i128 r = op == OP_XOR ? (a.i ^ b.i) : op == OP_OR ? (a.i | b.i) : (a.i & b.i);
  return (a.k == NK_BOOL && b.k == NK_BOOL) ? n_bool(r != 0) : n_int(r);
}
static Num py_trunc(Num x) {
  if (x.k != NK_FLOAT) return n_int(x.i);
  if (isnan(x.f)) tg_fail(TG_EINPUT, "the graph folds to a float NaN converted to an integer (tinygrad 0.11.0 raises ValueError: cannot convert float NaN to integer)");
  if (isinf(x.f)) tg_fail(TG_EINPUT, "the graph folds to a float infinity converted to an integer (tinygrad 0.11.0 raises ValueError: cannot convert float infinity to integer)");
  double t = trunc(x.f);
  if (fabs(t) >= 1.7e38) return n_int(t > 0 ? I128_MAX : I128_MIN);
  return n_int((i128)t);
}
Num n_exec(Op op, const DType *dt, int n, const Num *x, bool truncate_output) {
  Num r;
  switch (op) {
  case OP_LOG2: { double v = n_f(x[0]); r = n_float(v > 0 ? log2(v) : v == 0 ? -INFINITY : NAN); break; }
  case OP_EXP2:
    if (n_isint(x[0])) r = x[0].i >= 0 ? ipow(2, x[0].i) : n_float(pow(2.0, (double)x[0].i));
    else r = n_float(pow(2.0, x[0].f));
    break;
  case OP_SQRT: { double v = n_f(x[0]); r = n_float(v >= 0 ? sqrt(v) : NAN); break; }
  case OP_RECIP: { double v = n_f(x[0]); r = n_float(v != 0 ? 1.0 / v : copysign(INFINITY, v)); break; }
  case OP_SIN: { double v = n_f(x[0]); r = n_float(isinf(v) ? NAN : sin(v)); break; }
  case OP_POW: r = safe_pow(x[0], x[1]); break;
  case OP_TRUNC: r = py_trunc(x[0]); break;
  case OP_NEG: r = n_neg(x[0]); break;
  case OP_ADD: r = n_add(x[0], x[1]); break;
  case OP_SUB: r = n_sub(x[0], x[1]); break;
  case OP_MUL: r = n_mul(x[0], x[1]); break;
  case OP_CMPNE: r = n_bool(!n_eq(x[0], x[1])); break;
  case OP_CMPLT: r = n_bool(n_lt(x[0], x[1])); break;
  case OP_CMPEQ: r = n_bool(n_eq(x[0], x[1])); break;
  case OP_XOR: case OP_OR: case OP_AND: r = bitop(op, x[0], x[1]); break;
  case OP_SHR: r = n_shr(x[0], x[1]); break;
  case OP_SHL: r = n_shl(x[0], x[1]); break;
  case OP_MAX: r = n_max(x[0], x[1]); break;
  case OP_MOD: r = n_cmod(x[0], x[1]); break;
  case OP_IDIV: r = n_cdiv(x[0], x[1]); break;
  case OP_MULACC: r = n_add(n_mul(x[0], x[1]), x[2]); break;
  case OP_WHERE: r = n_truthy(x[0]) ? x[1] : x[2]; break;
  default: tg_fail(TG_EINTERNAL, "exec_alu: no python_alu for %s", op_names[op]);
  }
  (void)n;
  return truncate_output ? n_truncate(dt, r) : r;
}

/* exec_alu on Values: vector dtypes map over tuples (and then always truncate, as tinygrad does) */
const Value *exec_alu(Op op, const DType *dt, int n, const Value *const *operands, bool truncate_output) {
  if (dt->count > 1) {
    const Value *items[256];
    int cnt = dt->count > 256 ? 256 : dt->count;
    for (int i = 0; i < cnt; i++) {
      const Value *sc[3];
      for (int j = 0; j < n && j < 3; j++) sc[j] = operands[j]->kind == V_TUPLE ? operands[j]->items[i] : operands[j];
      items[i] = exec_alu(op, dt_scalar_of(dt), n, sc, true);
    }
    return v_tuple(cnt, items);
  }
  Num x[3];
  for (int j = 0; j < n && j < 3; j++) x[j] = n_of_value(operands[j]);
  return n_value(n_exec(op, dt, n, x, truncate_output));
}
const Value *dt_truncate(const DType *dt, const Value *v) { return n_value(n_truncate(dt, n_of_value(v))); }
