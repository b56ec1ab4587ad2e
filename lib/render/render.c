/* render.c: a Program as C source (tinygrad's CStyleLanguage._render, ClangRenderer).
 *
 * One pass over the instructions: every value gets a name by its op (val, alu, cast, acc,
 * ridx), CONSTs, DEFINE_VARs and RANGEs print inline, and an ALU/CAST/BITCAST used once prints
 * inline in its user, at any depth (tinygrad inlines single-use ALU ops).
 * Semantics follow tinygrad's CPU (clang) backend: C division and modulo, MAX as (a<b?b:a),
 * casts as C casts, integer results narrower than int cast back to their type, half as clang's
 * __fp16 (float arithmetic, rounded where a value is named, cast, accumulated or stored) and
 * bfloat16 rounded after every op; the GPU backends round both after every op, as their native
 * 16-bit types compute. */
#include "render_int.h"
#include "../symbolic/symbolic.h"
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

/* ---------------------------------------------------------------- strings (SB: util.h) */
static void sb_indent(SB *b, int d) { for (int i = 0; i < d; i++) sb_str(b, "  "); }

/* ---------------------------------------------------------------- half / bfloat16 */
static uint32_t f2u(float f) { uint32_t u; memcpy(&u, &f, 4); return u; }
static float u2f(uint32_t u) { float f; memcpy(&f, &u, 4); return f; }
uint16_t render_f2h(float f) {
  uint32_t x = f2u(f), sign = (x >> 16) & 0x8000u, e = (x >> 23) & 0xffu, m = x & 0x7fffffu;
  if (e == 0xff) return (uint16_t)(sign | 0x7c00u | (m ? 0x200u | (m >> 13) : 0)); /* a NaN keeps its payload's top bits, quieted */
  int ee = (int)e - 112;
  if (ee >= 0x1f) return (uint16_t)(sign | 0x7c00u);
  if (ee <= 0) {
    if (ee < -10) return (uint16_t)sign;
    m |= 0x800000u;
    int sh = 14 - ee;
    uint32_t hm = m >> sh, rem = m & ((1u << sh) - 1), hf = 1u << (sh - 1);
    if (rem > hf || (rem == hf && (hm & 1))) hm++;
    return (uint16_t)(sign | hm);
  }
  uint32_t hm = m >> 13, rem = m & 0x1fffu, h = sign | ((uint32_t)ee << 10) | hm;
  if (rem > 0x1000u || (rem == 0x1000u && (hm & 1))) h++;
  return (uint16_t)h;
}
float render_h2f(uint16_t h) {
  uint32_t sign = (uint32_t)(h & 0x8000u) << 16, e = (h >> 10) & 0x1fu, m = h & 0x3ffu, x;
  if (e == 0x1f) x = sign | 0x7f800000u | (m ? 0x400000u | (m << 13) : 0); /* a NaN quieted, as F16C converts */
  else if (e == 0) {
    if (!m) x = sign;
    else { e = 113; while (!(m & 0x400u)) { m <<= 1; e--; } x = sign | (e << 23) | ((m & 0x3ffu) << 13); }
  } else x = sign | ((e + 112) << 23) | (m << 13);
  return u2f(x);
}
uint16_t render_f2bf(float f) {
  uint32_t x = f2u(f);
  if ((x & 0x7f800000u) != 0x7f800000u) x += 0x7fffu + ((x >> 16) & 1u);
  else if (x & 0xffffu) x |= 0x10000u;
  return (uint16_t)(x >> 16);
}
float render_bf2f(uint16_t h) { return u2f((uint32_t)h << 16); }

/* the same conversions, printed into kernels */
static const char prelude_half[] = "typedef unsigned short tg_half;\n";
static const char prelude_h2f[] =
  "static inline float tg_h2f(tg_half h) {\n"
  "  unsigned int sign = (unsigned int)(h & 0x8000u) << 16, e = (h >> 10) & 0x1fu, m = h & 0x3ffu, x;\n"
  "  if (e == 0x1f) x = sign | 0x7f800000u | (m ? 0x400000u | (m << 13) : 0);\n"
  "  else if (e == 0) {\n"
  "    if (!m) x = sign;\n"
  "    else { e = 113; while (!(m & 0x400u)) { m <<= 1; e--; } x = sign | (e << 23) | ((m & 0x3ffu) << 13); }\n"
  "  } else x = sign | ((e + 112) << 23) | (m << 13);\n"
  "  union { unsigned int u; float f; } v = {x};\n"
  "  return v.f;\n"
  "}\n";
static const char prelude_f2h[] =
  "static inline tg_half tg_f2h(float f) {\n"
  "  union { float f; unsigned int u; } v = {f};\n"
  "  unsigned int x = v.u, sign = (x >> 16) & 0x8000u, e = (x >> 23) & 0xffu, m = x & 0x7fffffu;\n"
  "  if (e == 0xff) return (tg_half)(sign | 0x7c00u | (m ? 0x200u | (m >> 13) : 0));\n"
  "  int ee = (int)e - 112;\n"
  "  if (ee >= 0x1f) return (tg_half)(sign | 0x7c00u);\n"
  "  if (ee <= 0) {\n"
  "    if (ee < -10) return (tg_half)sign;\n"
  "    m |= 0x800000u;\n"
  "    int sh = 14 - ee;\n"
  "    unsigned int hm = m >> sh, rem = m & ((1u << sh) - 1), hf = 1u << (sh - 1);\n"
  "    if (rem > hf || (rem == hf && (hm & 1))) hm++;\n"
  "    return (tg_half)(sign | hm);\n"
  "  }\n"
  "  unsigned int hm = m >> 13, rem = m & 0x1fffu, h = sign | ((unsigned int)ee << 10) | hm;\n"
  "  if (rem > 0x1000u || (rem == 0x1000u && (hm & 1))) h++;\n"
  "  return (tg_half)h;\n"
  "}\n";
static const char prelude_hr[] = "static inline float tg_hr(float f) { return tg_h2f(tg_f2h(f)); }\n";
static const char prelude_bf16[] = "typedef unsigned short tg_bf16;\n";
static const char prelude_bf2f[] =
  "static inline float tg_bf2f(tg_bf16 h) { union { unsigned int u; float f; } v = {(unsigned int)h << 16}; return v.f; }\n";
static const char prelude_f2bf[] =
  "static inline tg_bf16 tg_f2bf(float f) {\n"
  "  union { float f; unsigned int u; } v = {f};\n"
  "  unsigned int x = v.u;\n"
  "  if ((x & 0x7f800000u) != 0x7f800000u) x += 0x7fffu + ((x >> 16) & 1u);\n"
  "  else if (x & 0xffffu) x |= 0x10000u;\n"
  "  return (tg_bf16)(x >> 16);\n"
  "}\n";
static const char prelude_br[] = "static inline float tg_br(float f) { return tg_bf2f(tg_f2bf(f)); }\n";
/* tinygrad's xpow (uop/decompositions.py) */
/* 4 floats as one vector (GCC/Clang); aligned(4) and may_alias: a load from any float address */
static const char prelude_f4[] = "typedef float tg_f4 __attribute__((vector_size(16), aligned(4), may_alias));\n";
/* tg_powf/tg_pow, and tg_spowf/tg_spow through the soft exp2/log2 below: one body for the four */
static const char *prelude_pow(Arena *a, bool dbl, bool soft) {
  const char *t = dbl ? "double" : "float", *one = dbl ? "1.0" : "1.0f", *nan = dbl ? "(double)NAN" : "NAN";
  const char *name = arena_printf(a, "%s%s", soft ? "tg_s" : "tg_", dbl ? "pow" : "powf");
  const char *ex = arena_printf(a, "%sexp2%s", soft ? "tg_" : "", dbl ? "" : "f");
  const char *lg = arena_printf(a, "%slog2%s", soft ? "tg_" : "", dbl ? "" : "f");
  return arena_printf(a,
                      "static inline %s %s(%s b, %s e) {\n"
                      "  %s ret = %s(%s(b < 0 ? -b : b) * e);\n"
                      "  %s adj = e != (%s)(int)e ? %s : ((int)(e < 0 ? -e : e) %% 2) ? -%s : %s;\n"
                      "  return (b == 0 && e == 0) ? %s : ret * (b < 0 ? adj : %s);\n"
                      "}\n",
                      t, name, t, t, t, ex, lg, t, t, nan, one, one, one, one);
}
/* tinygrad's xexp2 and xlog2 (uop/decompositions.py), which its CPU backend renders in place of
 * EXP2/LOG2 (ClangRenderer has no code for them): the same polynomials and masks, op for op, so
 * values match tinygrad's, and branch-free, so loops of them vectorize. Integer steps wrap in
 * unsigned arithmetic, and exp2's argument is clamped before the int conversion (only where the
 * result is masked to inf, 0 or NaN anyway) so nothing is undefined: two selects the compiler
 * makes a max and a min (a NaN or infinity clamps like any large value, then the masks decide).
 * tg_exp2f takes three shortcuts that give the same bits for all 2^32 inputs (checked exhaustively
 * with clang and gcc, vectorized): rintk's x + (x < 0 ? -0.5 : 0.5) as x + copysignf(0.5, x); q / 2
 * as q >> 1 (2^h * 2^(q-h) is the same power of two, and the first product is exact); and no
 * `d < 128 ? u : inf` mask (from 128 up the product overflows to inf by itself). A tenth faster.
 * tg_log2f/tg_log2 sum in the order tinygrad's rendered C evaluates (its renderer drops the
 * parentheses of a nested ADD or MUL, so t*(x*x2) + (s_hi + s_lo) runs as ((t*x)*x2 + e) + ...):
 * bit-identical to tinygrad's kernel, both with clang -ffp-contract=on, for all 2^32 floats and 2^27
 * doubles; the grouping of the decomposition's source differed in 1 float of 1700. */
static const char prelude_sexp2f[] =
  "static inline float tg_exp2f(float d) {\n"
  "  float x = d > -200.0f ? d : -200.0f;\n"
  "  x = x < 200.0f ? x : 200.0f;\n"
  "  int q = (int)(x + copysignf(0.5f, x));\n"
  "  float s = x - (float)q;\n"
  "  float u = ((((((0.1535920892e-3f*s + 0.1339262701e-2f)*s + 0.9618384764e-2f)*s + 0.5550347269e-1f)*s\n"
  "              + 0.2402264476e+0f)*s + 0.6931471825e+0f)*s + 1.0f);\n"
  "  int h = q >> 1;\n"
  "  union { unsigned i; float f; } p1 = {(unsigned)(h + 127) * 8388608u}, p2 = {(unsigned)(q - h + 127) * 8388608u};\n"
  "  u = (u * p1.f) * p2.f;\n"
  "  u = d < -150.0f ? 0.0f : u;\n"
  "  return d != d ? NAN : u;\n"
  "}\n";
/* tinygrad's xexp2 of a half (fp16_storage), as its CPU backend renders the decomposition in
 * __fp16: the input and every named step rounded to half (tg_hr), rintk's sum and the polynomial in
 * float with constants rounded to half, 2^q as two half powers built from 16-bit exponent fields,
 * the bounds 23 and -22; the expressions keep tinygrad's grouping, so contraction matches */
static const char prelude_sexp2h[] =
  "static inline float tg_exp2h(float d) {\n"
  "  float a = tg_hr(d);\n"
  "  _Bool isnan_ = a != a;\n"
  "  float x = a != -INFINITY ? a : 0.0f;\n"
  "  x = isnan_ ? 0.0f : x;\n"
  "  x = a != INFINITY ? x : 0.0f;\n"
  "  short q = (short)(x + (x < 0.0f ? -0.5f : 0.5f));\n"
  "  float s = tg_hr(x - (float)q);\n"
  "  short h = (short)((q + (q < 0 ? 1 : 0)) >> 1);\n"
  "  float p1 = tg_h2f((tg_half)((h + 15) << 10)), p2 = tg_h2f((tg_half)(((q - h) + 15) << 10));\n"
  "  float u = (a < 23.0f) != 1 ? INFINITY : (((((((((((((0x1.42p-13f*s)+0x1.5fp-10f)*s)+0x1.3b4p-7f)*s)+0x1.c6cp-5f)*s)+0x1.ecp-3f)*s)\n"
  "            +0x1.63p-1f)*s)+1.0f)*p1*p2);\n"
  "  u = tg_hr(u);\n"
  "  u = a < -22.0f ? 0.0f : u;\n"
  "  return isnan_ ? NAN : u;\n"
  "}\n";
static const char prelude_sexp2[] =
  "static inline double tg_exp2(double d) {\n"
  "  double x = d > -2100.0 ? d : -2100.0;\n"
  "  x = x < 2100.0 ? x : 2100.0;\n"
  "  long long q = (long long)(x + (x < 0.0 ? -0.5 : 0.5));\n"
  "  double s = x - (double)q;\n"
  "  double u = 0.4434359082926529454e-9;\n"
  "  u = u*s + 0.7073164598085707425e-8; u = u*s + 0.1017819260921760451e-6; u = u*s + 0.1321543872511327615e-5;\n"
  "  u = u*s + 0.1525273353517584730e-4; u = u*s + 0.1540353045101147808e-3; u = u*s + 0.1333355814670499073e-2;\n"
  "  u = u*s + 0.9618129107597600536e-2; u = u*s + 0.5550410866482046596e-1; u = u*s + 0.2402265069591012214e+0;\n"
  "  u = u*s + 0.6931471805599452862e+0; u = u*s + 0.1000000000000000000e+1;\n"
  "  long long h = q / 2;\n"
  "  union { unsigned long long i; double f; } p1 = {(unsigned long long)(h + 1023) << 52}, p2 = {(unsigned long long)(q - h + 1023) << 52};\n"
  "  u = (u * p1.f) * p2.f;\n"
  "  u = d < 1024.0 ? u : INFINITY;\n"
  "  u = d < -2000.0 ? 0.0 : u;\n"
  "  return d != d ? (double)NAN : u;\n"
  "}\n";
static const char prelude_slog2f[] =
  "static inline float tg_log2f(float d) {\n"
  "  _Bool den = d < 1e-4f;\n"
  "  float a = den ? d * 18446744073709551616.0f : d;\n"
  "  union { float f; int i; } ab = {a * (1.0f / 0.75f)}, ma = {a};\n"
  "  float e = (float)(((ab.i / 8388608) & 255) - 127);\n"
  "  union { unsigned i; float f; } mm = {(unsigned)ma.i + (unsigned)(int)(-e) * 8388608u};\n"
  "  float m = mm.f;\n"
  "  e = den ? e - 64.0f : e;\n"
  "  float x = (m - 1.0f) * (1.0f / (m + 1.0f)), x2 = x * x;\n"
  "  float t = (0.4374550283e+0f*x2 + 0.5764790177e+0f)*x2 + 0.9618012905120f;\n"
  "  float r = t * x * x2 + e + x * 2.8853900432586669922f + x * 3.2734474483568488616e-08f;\n"
  "  r = d != INFINITY ? r : INFINITY;\n"
  "  r = d < -0.0f ? NAN : r;\n"
  "  r = r != -191.0f ? r : -INFINITY;\n"
  "  r = d != d ? NAN : r;\n"
  "  return 1.0f / d != -INFINITY ? r : -INFINITY;\n"
  "}\n";
static const char prelude_slog2[] =
  "static inline double tg_log2(double d) {\n"
  "  _Bool den = d < 1e-4;\n"
  "  double a = den ? d * 18446744073709551616.0 : d;\n"
  "  union { double f; long long i; } ab = {a * (1.0 / 0.75)}, ma = {a};\n"
  "  double e = (double)(((ab.i / 4503599627370496LL) & 2047) - 1023);\n"
  "  union { unsigned long long i; double f; } mm = {(unsigned long long)ma.i + (unsigned long long)(long long)(-e) * 4503599627370496ull};\n"
  "  double m = mm.f;\n"
  "  e = den ? e - 64.0 : e;\n"
  "  double x = (m - 1.0) * (1.0 / (m + 1.0)), x2 = x * x;\n"
  "  double t = 0.2211941750456081490e+0;\n"
  "  t = t*x2 + 0.2200768693152277689e+0; t = t*x2 + 0.2623708057488514656e+0; t = t*x2 + 0.3205977477944495502e+0;\n"
  "  t = t*x2 + 0.4121985945485324709e+0; t = t*x2 + 0.5770780162997058982e+0; t = t*x2 + 0.96179669392608091449;\n"
  "  double r = t * x * x2 + e + x * 2.885390081777926774;\n"
  "  r = d != INFINITY ? r : INFINITY;\n"
  "  r = d < -0.0 ? (double)NAN : r;\n"
  "  r = r != -1087.0 ? r : -INFINITY;\n"
  "  r = d != d ? (double)NAN : r;\n"
  "  return 1.0 / d != -INFINITY ? r : -INFINITY;\n"
  "}\n";
/* tinygrad's xsin (uop/decompositions.py): sin of |x| by Cody-Waite reduction below 30 and
 * Payne-Hanek reduction (190 bits of 2/pi, 64-bit integer products) above, both always computed and
 * one selected, then the sign, with +-inf and NaN giving NaN. Written as tinygrad's CPU backend
 * renders it after its symbolic rewrites, expression for expression (the same sums in the same
 * order, so the compiler contracts the same products into FMAs), so values match its bits. Two
 * changes leave the result alone: the table entries two_over_pi[i+n] tinygrad picks by a chain of
 * selects are a lookup (i + n > 5 gives 0), and the Cody-Waite quotient is clamped before its int
 * conversion (only above 30, where the other branch is taken). */
/* their shared Payne-Hanek step: |x| * 2/pi in 64-bit fixed point from the mantissa ia (2^32 scaled)
 * and the exponent e (unbiased + 1, wrapped: no table entries below 1.0) */
static const char prelude_ssinph[] =
  "static inline unsigned long long tg_sin_ph(unsigned long long ia, unsigned long long e) {\n"
  "  static const unsigned tp[6] = {0u, 0x28be60dbu, 0x9391054au, 0x7f09d5f4u, 0x7d4d3770u, 0x36d8a566u};\n"
  "  unsigned long long i = e >> 5u;\n"
  "  int e5 = (int)(e & 31u);\n"
  "  union { int i; float f; } pe = {(e5 + 127) << 23}, po = {((32 - e5) + 127) << 23};\n"
  "  unsigned long long se = (unsigned long long)pe.f, so = (unsigned long long)po.f;\n"
  "  unsigned long long a0 = i < 6u ? tp[i] : 0u, a1 = i < 5u ? tp[i + 1u] : 0u, a2 = i < 4u ? tp[i + 2u] : 0u, a3 = i < 3u ? tp[i + 3u] : 0u;\n"
  "  unsigned long long hi = (unsigned)(a0 * se) | (unsigned)(a1 / so), mi = (unsigned)(a1 * se) | (unsigned)(a2 / so), lo = (unsigned)(a2 * se) | (unsigned)(a3 / so);\n"
  "  return ((ia * hi) << 32u) + (ia * mi) + ((ia * lo) >> 32u);\n"
  "}\n";
static const char prelude_ssinf[] =
  "static inline float tg_sinf(float d) {\n"
  "  float x = d != -INFINITY ? d : 0.0f;\n"
  "  x = d != d ? 0.0f : x;\n"
  "  x = d != INFINITY ? x : 0.0f;\n"
  "  float sg = x != 0.0f ? (x < 0.0f ? -1.0f : 1.0f) : 0.0f;\n"
  "  float a = x * sg;\n"
  "  union { float f; unsigned u; } ab = {a};\n"
  "  float q1 = a * 0.3183098861837907f;\n"
  "  union { unsigned u; float f; } fr = {(ab.u & 2155872255u) | 1056964608u};\n"
  "  unsigned long long ia = (unsigned long long)(fr.f * 4294967296.0f);\n"
  "  unsigned e = ((ab.u >> 23u) & 255u) + 4294967169u + 1u;\n"
  "  unsigned long long p = tg_sin_ph(ia, e);\n"
  "  int q = (int)(p >> 62u);\n"
  "  float r = ((float)(p & 4611686018427387903ull)) * 3.4061215800865545e-19f;\n"
  "  _Bool lt = fr.f < 0.5f;\n"
  "  int ql = lt ? q : q + 1;\n"
  "  float rl = lt ? r : r + -1.5707963267948966f;\n"
  "  float qh = q1 + (q1 < 0.0f ? -0.5f : 0.5f);\n"
  "  int qs = (int)(qh < 1e9f ? qh : 1e9f);\n"
  "  float qf = (float)qs;\n"
  "  float rs = (qf*-1.215420125655342e-10f)+(qf*-1.984187258941006e-09f)+(qf*-0.0001131594181060791f)+(qf*-3.1414794921875f)+a;\n"
  "  float rs2 = rs * rs;\n"
  "  float ss = (qs & 1) != 0 ? -1.0f : 1.0f;\n"
  "  float rb = rl + ((ql & 1) != 0 ? 1.5707963267948966f : 0.0f);\n"
  "  float rb2 = rb * rb;\n"
  "  float sl = (ql & 2) != 0 ? -1.0f : 1.0f;\n"
  "  float res = a < 30.0f ? (rs*((((((((2.6083159809786594e-06f*rs2)+-0.00019810690719168633f)*rs2)+0.00833307858556509f)*rs2)+-0.16666659712791443f)*rs2)+1.0f)*ss)\n"
  "                        : (rb*((((((((2.6083159809786594e-06f*rb2)+-0.00019810690719168633f)*rb2)+0.00833307858556509f)*rb2)+-0.16666659712791443f)*rb2)+1.0f)*sl);\n"
  "  res = d != -INFINITY ? res * sg : NAN;\n"
  "  res = d != d ? NAN : res;\n"
  "  return d != INFINITY ? res : NAN;\n"
  "}\n";
static const char prelude_ssin[] =
  "static inline double tg_sin(double d) {\n"
  "  double x = d != -INFINITY ? d : 0.0;\n"
  "  x = d != d ? 0.0 : x;\n"
  "  x = d != INFINITY ? x : 0.0;\n"
  "  double sg = x != 0.0 ? (x < 0.0 ? -1.0 : 1.0) : 0.0;\n"
  "  double a = x * sg;\n"
  "  union { double f; unsigned long long u; } ab = {a};\n"
  "  double t24 = a * 1.8972747694479864e-08;\n"
  "  double qdh = ((double)((long long)(t24 < 1e18 ? t24 : 1e18))) * 16777216.0;\n"
  "  union { unsigned long long u; double f; } fr = {(ab.u & 4503599627370495ull) | 4602678819172646912ull};\n"
  "  unsigned long long ia = (unsigned long long)(fr.f * 4294967296.0);\n"
  "  unsigned long long e = ((ab.u >> 52u) & 2047ull) + 18446744073709550593ull + 1ull;\n"
  "  double q1 = (a * 0.3183098861837907) - qdh;\n"
  "  unsigned long long p = tg_sin_ph(ia, e);\n"
  "  int q = (int)(p >> 62u);\n"
  "  double r = ((double)(p & 4611686018427387903ull)) * 3.4061215800865545e-19;\n"
  "  _Bool lt = fr.f < 0.5;\n"
  "  int ql = lt ? q : q + 1;\n"
  "  double rl = lt ? r : r + -1.5707963267948966;\n"
  "  double qh = q1 + (q1 < 0.0 ? -0.5 : 0.5);\n"
  "  long long qs = (long long)(qh < 1e18 ? (qh > -1e18 ? qh : -1e18) : 1e18);\n"
  "  double qf = (double)qs;\n"
  "  double rs = (((qdh+qf)*-1.27366343270219e-24)+(qf*-1.2246467864107189e-16)+(qdh*-1.2246467864107189e-16)+(qf*-3.1786509424591713e-08)\n"
  "              +(qdh*-3.1786509424591713e-08)+(qf*-3.1415926218032837)+(qdh*-3.1415926218032837)+a);\n"
  "  double rs2 = rs * rs;\n"
  "  double ss = (((int)qs) & 1) != 0 ? -1.0 : 1.0;\n"
  "  double rb = rl + ((ql & 1) != 0 ? 1.5707963267948966 : 0.0);\n"
  "  double rb2 = rb * rb;\n"
  "  double sl = (ql & 2) != 0 ? -1.0 : 1.0;\n"
  "  double res = a < 30.0 ? (rs*((((((((((((((((((-7.972559550090379e-18*rs2)+2.810099727108632e-15)*rs2)+-7.647122191181588e-13)*rs2)+1.605904306056645e-10)*rs2)\n"
  "                                +-2.5052108376350205e-08)*rs2)+2.7557319223919875e-06)*rs2)+-0.00019841269841269616)*rs2)+0.00833333333333333)*rs2)+-0.16666666666666666)*rs2)+1.0)*ss)\n"
  "                         : (rb*((((((((((((((((((-7.972559550090379e-18*rb2)+2.810099727108632e-15)*rb2)+-7.647122191181588e-13)*rb2)+1.605904306056645e-10)*rb2)\n"
  "                                +-2.5052108376350205e-08)*rb2)+2.7557319223919875e-06)*rb2)+-0.00019841269841269616)*rb2)+0.00833333333333333)*rb2)+-0.16666666666666666)*rb2)+1.0)*sl);\n"
  "  res = d != -INFINITY ? res * sg : (double)NAN;\n"
  "  res = d != d ? (double)NAN : res;\n"
  "  return d != INFINITY ? res : (double)NAN;\n"
  "}\n";
/* tinygrad's threefry2x32 (uop/decompositions.py) */
static const char prelude_threefry[] =
  "static inline unsigned long long tg_threefry(unsigned long long x, unsigned long long key) {\n"
  "  static const unsigned int rot[2][4] = {{13, 15, 26, 6}, {17, 29, 16, 24}};\n"
  "  unsigned int k0 = (unsigned int)(key & 0xffffffffu), k1 = (unsigned int)(key >> 32);\n"
  "  unsigned int ks[3] = {k1, k0 ^ k1 ^ 0x1BD11BDAu, k0};\n"
  "  unsigned int x0 = (unsigned int)(x & 0xffffffffu) + ks[2], x1 = (unsigned int)(x >> 32) + ks[0];\n"
  "  for (int i = 0; i < 5; i++) {\n"
  "    for (int j = 0; j < 4; j++) {\n"
  "      unsigned int r = rot[i % 2][j], s = x0 + x1;\n"
  "      x1 = s ^ ((x1 << r) + (x1 >> (32 - r)));\n"
  "      x0 = s;\n"
  "    }\n"
  "    x0 = x0 + ks[i % 3];\n"
  "    x1 = x1 + ks[(i + 1) % 3] + (unsigned int)i + 1u;\n"
  "  }\n"
  "  return ((unsigned long long)x1 << 32) | x0;\n"
  "}\n";

/* ---------------------------------------------------------------- the C backend's types */
static bool is16(const DType *d) { return d->scalar == SC_HALF || d->scalar == SC_BFLOAT16; }
const char *render_ctype(const DType *d, const char *bool_name, const char *who) {
  switch (d->scalar) {
  case SC_BOOL: return bool_name;
  case SC_CHAR: return "signed char";
  case SC_UCHAR: return "unsigned char";
  case SC_SHORT: return "short";
  case SC_USHORT: return "unsigned short";
  case SC_INT: return "int";
  case SC_UINT: return "unsigned int";
  case SC_LONG: return "long long";
  case SC_ULONG: return "unsigned long long";
  case SC_HALF: case SC_BFLOAT16: case SC_FLOAT: return "float";
  case SC_DOUBLE: return "double";
  case SC_VOID: return "void";
  default: tg_fail(TG_EINPUT, "the %s renderer has no type for %s", who, dt_short_name((Scalar)d->scalar));
  }
}
static const char *c_type(const DType *d) { return render_ctype(d, "_Bool", "C"); }
static const char *c_storage(const DType *d) {
  if (d->scalar == SC_HALF) return "tg_half";
  if (d->scalar == SC_BFLOAT16) return "tg_bf16";
  return c_type(d);
}
const RenderBackend render_c = {
  .name = "c", .ext = ".c", .kernel_prefix = "void", .buffer_prefix = "", .buffer_suffix = " restrict",
  .readonly_prefix = "const ", .arg_int_prefix = "const int", .infinity = "INFINITY", .nan = "NAN",
  .emulated_16bit = true, .fp16_storage = true, .type_name = c_type, .storage_name = c_storage, .vec4 = true, .soft_math = true,
  .kblock = true,
};

/* ---------------------------------------------------------------- constants */
static const char *float_lit(Arena *a, double f, bool dbl, const RenderBackend *be) {
  if (isnan(f)) return dbl ? arena_printf(a, "((double)%s)", be->nan) : be->nan;
  if (isinf(f)) return dbl ? arena_printf(a, "((double)%s%s)", f < 0 ? "-" : "", be->infinity)
                           : (f < 0 ? arena_printf(a, "(-%s)", be->infinity) : be->infinity);
  char buf[64];
  snprintf(buf, sizeof buf, dbl ? "%.17g" : "%.9g", f);
  if (!strpbrk(buf, ".eE")) strcat(buf, ".0");
  return arena_printf(a, "%s%s", buf, dbl ? "" : "f");
}
static double value_num(const Value *v) { return v->kind == V_BOOL ? v->b : v->kind == V_INT ? (double)v->i : v->f; }
static int64_t value_int(const Value *v) { return v->kind == V_BOOL ? v->b : v->kind == V_INT ? v->i : (int64_t)v->f; }

const char *render_const(Arena *a, UOp *u, const RenderBackend *be) {
  const DType *d = u->dtype;
  const Value *v = u->arg;
  switch (d->scalar) {
  case SC_BOOL: return value_num(v) != 0 ? "1" : "0";
  case SC_FLOAT: return float_lit(a, (float)value_num(v), false, be);
  case SC_DOUBLE: return float_lit(a, value_num(v), true, be);
  case SC_HALF: return float_lit(a, render_h2f(render_f2h((float)value_num(v))), false, be);
  case SC_BFLOAT16: return float_lit(a, render_bf2f(render_f2bf((float)value_num(v))), false, be);
  case SC_INT: {
    int32_t x = (int32_t)value_int(v);
    return x == INT32_MIN ? "(-2147483647-1)" : arena_printf(a, "%d", x);
  }
  case SC_LONG: {
    int64_t x = value_int(v);
    const char *sfx = be->suffix_ll ? be->suffix_ll : "ll";
    return x == INT64_MIN ? arena_printf(a, "(-9223372036854775807%s-1)", sfx) : arena_printf(a, "%lld%s", (long long)x, sfx);
  }
  case SC_UINT: return arena_printf(a, "%uu", (uint32_t)value_int(v));
  case SC_ULONG: return arena_printf(a, "%llu%s", (unsigned long long)(uint64_t)value_int(v), be->suffix_ull ? be->suffix_ull : "ull");
  case SC_CHAR: return arena_printf(a, "((signed char)%d)", (int8_t)value_int(v));
  case SC_SHORT: return arena_printf(a, "((short)%d)", (int16_t)value_int(v));
  case SC_UCHAR: return arena_printf(a, "((unsigned char)%uu)", (uint8_t)value_int(v));
  case SC_USHORT: return arena_printf(a, "((unsigned short)%uu)", (uint16_t)value_int(v));
  default: tg_fail(TG_EINPUT, "can't render a %s constant", dt_short_name((Scalar)d->scalar));
  }
}

/* ---------------------------------------------------------------- rendering a program */
typedef struct R {
  Arena *a;
  const RenderBackend *be;
  const Program *p;
  Map names;        /* UOp -> const char* (a variable name or an inline expression) */
  Map uses;         /* UOp -> use count (intptr_t) */
  Map vec;          /* a LOAD in a vector group -> its VLoad */
  const bool *scalar; /* per instruction: keep its loads scalar (NULL: none) */
  int cnt[8];       /* per name prefix */
} R;
/* one lane of a 4-wide vector load: the group's head (its first load in program order) holds the
 * buffer, base, first offset and mask */
typedef struct VLoad { struct VLoad *head; int lane, first; UOp *buf, *base, *valid; int64_t c; const char *name; } VLoad;
enum { PF_VAL, PF_ALU, PF_CAST, PF_ACC };
static const char *const prefixes[] = {"val", "alu", "cast", "acc"};

static const char *nm(R *r, UOp *u) {
  const char *s = map_get(&r->names, u, uop_h(u), NULL);
  if (s) return s;
  switch (u->op) {
  case OP_CONST: s = render_const(r->a, u, r->be); break;
  case OP_DEFINE_VAR: s = u->arg->items[0]->s; break;
  case OP_RANGE: s = arena_printf(r->a, "ridx%lld", (long long)u->arg->i); break;
  case OP_DEFINE_GLOBAL: s = arena_printf(r->a, "data%lld", (long long)u->arg->i); break;
  case OP_SPECIAL: s = u->arg->items[0]->s; break;   /* declared at the top (render_specials) */
  case OP_DEFINE_LOCAL: s = u->arg->s; break;
  default: tg_fail(TG_EINTERNAL, "render: %s used before it is defined", op_names[u->op]);
  }
  map_put(&r->names, u, uop_h(u), (void *)s);
  return s;
}

static bool narrow_int(const DType *d) {
  return d->scalar == SC_BOOL || d->scalar == SC_CHAR || d->scalar == SC_UCHAR || d->scalar == SC_SHORT || d->scalar == SC_USHORT;
}
/* float expression e rounded to half/bfloat16 dt (and held as float) */
static const char *round16(R *r, const DType *dt, const char *e) {
  int k = dt->scalar == SC_BFLOAT16;
  if (r->be->round16[k]) return arena_printf(r->a, r->be->round16[k], e);
  return arena_printf(r->a, k ? "tg_br(%s)" : "tg_hr(%s)", e);
}
/* a half value the backend rounds only where it is named, cast, accumulated or stored (fp16_storage) */
static bool fp16_lazy(const R *r, const DType *dt) { return r->be->fp16_storage && dt->scalar == SC_HALF && dt->count == 1 && dt->kind == DTK_SCALAR; }
/* a value of dt computed as expression e: round half/bfloat16 (a lazy half is rounded where it is
 * named or assigned instead), truncate narrow ints */
static const char *fix_type(R *r, const DType *dt, const char *e) {
  if (fp16_lazy(r, dt)) return e;
  if (r->be->emulated_16bit && is16(dt)) return round16(r, dt, e);
  if (narrow_int(dt)) return arena_printf(r->a, "((%s)%s)", r->be->type_name(dt), e);
  return e;
}
static const char *math_fn(const DType *dt, const char *f) {
  static char buf[4][32];
  static int k;
  k = (k + 1) & 3;
  snprintf(buf[k], sizeof buf[k], "%s%s", f, dt->scalar == SC_DOUBLE ? "" : "f");
  return buf[k];
}
/* the C expression for a load from INDEX(buf, idx[, valid]) */
static const char *render_load(R *r, UOp *u) {
  UOp *ix = u->src[0], *buf = ix->src[0];
  const char *e = arena_printf(r->a, "%s[%s]", nm(r, buf), nm(r, ix->src[1]));
  int k = u->dtype->scalar == SC_BFLOAT16;
  if (r->be->emulated_16bit && is16(u->dtype) && r->be->load16[k]) e = arena_printf(r->a, r->be->load16[k], nm(r, buf), nm(r, ix->src[1]));
  else if (r->be->emulated_16bit && is16(u->dtype)) e = arena_printf(r->a, k ? "tg_bf2f(%s)" : "tg_h2f(%s)", e);
  if (ix->nsrc > 2) e = arena_printf(r->a, "(%s?%s:%s)", nm(r, ix->src[2]), e, is16(u->dtype) || dt_is_float(u->dtype) ? "0.0f" : "0");
  return e;
}
static const char *render_cast(R *r, const DType *to, const DType *from, const char *x) {
  if (is16(to) && r->be->emulated_16bit) return round16(r, to, arena_printf(r->a, "(float)(%s)", x));
  /* to bool: x != 0, the same value, written so a product or sum cast to bool is not read as a
   * mistaken `*` or `+` in a boolean context (-Wint-in-bool-context) */
  if (to->count == 1 && to->scalar == SC_BOOL && from->scalar != SC_BOOL && !is16(from))
    return arena_printf(r->a, "((%s)((%s)!=0))", r->be->type_name(to), x);
  return arena_printf(r->a, "((%s)(%s))", r->be->type_name(to), x);
}
static const char *render_bitcast(R *r, const DType *to, const DType *from, const char *x) {
  if (r->be->emulated_16bit && is16(from)) {
    x = arena_printf(r->a, "%s(%s)", from->scalar == SC_HALF ? "tg_f2h" : "tg_f2bf", x);
    if (to->itemsize == 2 && !is16(to)) return arena_printf(r->a, "((%s)%s)", r->be->type_name(to), x);
    from = dt_ushort;
  }
  if (r->be->emulated_16bit && is16(to)) {
    const char *bits = from->itemsize == 2 ? x : arena_printf(r->a, "tg_bc_%s_ushort(%s)", dt_short_name((Scalar)from->scalar), x);
    return arena_printf(r->a, "%s((unsigned short)%s)", to->scalar == SC_HALF ? "tg_h2f" : "tg_bf2f", bits);
  }
  return arena_printf(r->a, "tg_bc_%s_%s(%s)", dt_short_name((Scalar)from->scalar), dt_short_name((Scalar)to->scalar), x);
}

/* Signed overflow is undefined in C (and OpenCL C, CUDA), but tinygrad's CPU backend gets the
 * two's-complement wrap in practice, and kernels that hash or overflow int32 rely on it. Rather than
 * compile with -fwrapv (which also keeps the compiler from widening and vectorising index
 * arithmetic), a signed ADD/SUB/MUL/NEG/SHL/MULACC that may overflow (its vmin..vmax leaves the
 * dtype: a value from memory, never an index, whose bounds the ranges prove) is computed in the
 * unsigned type of its width and converted back, which is defined to wrap. */
static bool signed_int(const DType *d) {
  return d->count == 1 && (d->scalar == SC_CHAR || d->scalar == SC_SHORT || d->scalar == SC_INT || d->scalar == SC_LONG);
}
static bool may_overflow_op(Op op) {
  return op == OP_ADD || op == OP_SUB || op == OP_MUL || op == OP_NEG || op == OP_SHL || op == OP_MULACC;
}
/* (T)((U)x op (U)y): x op y wrapping in T's unsigned twin */
static const char *wrap_bin(R *r, const DType *dt, const char *x, const char *op, const char *y) {
  const char *un = r->be->type_name(dt->scalar == SC_LONG ? dt_ulong : dt_uint);
  return arena_printf(r->a, "((%s)((%s)%s%s(%s)%s))", r->be->type_name(dt), un, x, op, un, y);
}
static const char *wrap_op(R *r, UOp *u, const char *const *s) {
  const DType *dt = u->dtype;
  const char *un = r->be->type_name(dt->scalar == SC_LONG ? dt_ulong : dt_uint), *tn = r->be->type_name(dt);
  switch (u->op) {
  case OP_ADD: return wrap_bin(r, dt, s[0], "+", s[1]);
  case OP_SUB: return wrap_bin(r, dt, s[0], "-", s[1]);
  case OP_MUL: return wrap_bin(r, dt, s[0], "*", s[1]);
  case OP_NEG: return arena_printf(r->a, "((%s)(-(%s)%s))", tn, un, s[0]);
  case OP_SHL: return arena_printf(r->a, "((%s)((%s)%s<<%s))", tn, un, s[0], s[1]);
  case OP_MULACC: return arena_printf(r->a, "((%s)((%s)%s*(%s)%s+(%s)%s))", tn, un, s[0], un, s[1], un, s[2]);
  default: tg_fail(TG_EINTERNAL, "wrap_op: %s", op_names[u->op]);
  }
}

/* tinygrad's helpers.strip_parens: "(...)" without its outer pair when that pair encloses one group */
static const char *strip_parens(Arena *a, const char *e) {
  size_t n = strlen(e);
  if (n < 2 || e[0] != '(' || e[n - 1] != ')') return e;
  const char *in = e + 1, *lp = memchr(in, '(', n - 2), *rp = memchr(in, ')', n - 2);
  long fl = lp ? lp - in : -1, fr = rp ? rp - in : -1;   /* str.find: -1 when absent */
  return fl <= fr ? arena_printf(a, "%.*s", (int)(n - 2), in) : e;
}
static const char *render_alu(R *r, UOp *u) {
  const char *s[3] = {NULL, NULL, NULL};
  for (int i = 0; i < u->nsrc && i < 3; i++) s[i] = nm(r, u->src[i]);
  const DType *dt = u->dtype, *sd = u->nsrc ? u->src[0]->dtype : dt;
  const char *e;
  if (signed_int(dt) && may_overflow_op((Op)u->op) && !u_in_dtype_range(u)) return wrap_op(r, u, s);
  /* as tinygrad's C renderer: an inlined operand of the same ADD, MUL, XOR, OR or AND loses its
   * parentheses, so a+(b+c) is printed a+b+c and C evaluates (a+b)+c; tinygrad's CPU values come
   * from that order (its xlog2's t*(x*x2) is computed as (t*x)*x2) */
  if (u->op == OP_ADD || u->op == OP_MUL || u->op == OP_XOR || u->op == OP_OR || u->op == OP_AND)
    for (int i = 0; i < u->nsrc && i < 2; i++) if (u->src[i]->op == u->op) s[i] = strip_parens(r->a, s[i]);
  switch (u->op) {
  case OP_ADD: e = arena_printf(r->a, "(%s+%s)", s[0], s[1]); break;
  case OP_SUB: e = arena_printf(r->a, "(%s-%s)", s[0], s[1]); break;
  case OP_MUL: e = arena_printf(r->a, "(%s*%s)", s[0], s[1]); break;
  case OP_IDIV: case OP_FDIV: e = arena_printf(r->a, "(%s/%s)", s[0], s[1]); break;
  case OP_MOD: e = arena_printf(r->a, "(%s%%%s)", s[0], s[1]); break;
  case OP_AND: e = arena_printf(r->a, "(%s&%s)", s[0], s[1]); break;
  case OP_OR: e = arena_printf(r->a, "(%s|%s)", s[0], s[1]); break;
  case OP_XOR: e = arena_printf(r->a, "(%s^%s)", s[0], s[1]); break;
  case OP_SHL: e = arena_printf(r->a, "(%s<<%s)", s[0], s[1]); break;
  case OP_SHR: e = arena_printf(r->a, "(%s>>%s)", s[0], s[1]); break;
  case OP_CMPLT: return arena_printf(r->a, "(%s<%s)", s[0], s[1]);
  case OP_CMPNE: return arena_printf(r->a, "(%s!=%s)", s[0], s[1]);
  case OP_CMPEQ: return arena_printf(r->a, "(%s==%s)", s[0], s[1]);
  case OP_MAX: e = arena_printf(r->a, "((%s<%s)?%s:%s)", s[0], s[1], s[1], s[0]); break; /* (a<b).where(b, a) */
  case OP_WHERE: return arena_printf(r->a, "(%s?%s:%s)", s[0], s[1], s[2]);
  case OP_MULACC: e = arena_printf(r->a, "((%s*%s)+%s)", s[0], s[1], s[2]); break;
  case OP_NEG: e = dt_is_bool(dt) ? arena_printf(r->a, "(!%s)", s[0]) : arena_printf(r->a, "(-%s)", s[0]); break;
  case OP_RECIP: e = arena_printf(r->a, "(%s/%s)", sd->scalar == SC_DOUBLE ? "1.0" : "1.0f", s[0]); break;
  case OP_SQRT: e = arena_printf(r->a, "%s(%s)", math_fn(sd, "sqrt"), s[0]); break;
  case OP_EXP2:
    e = arena_printf(r->a, "%s(%s)", r->be->soft_math ? (sd->scalar == SC_DOUBLE ? "tg_exp2" : fp16_lazy(r, sd) ? "tg_exp2h" : "tg_exp2f") : math_fn(sd, "exp2"), s[0]);
    break;
  case OP_LOG2: e = arena_printf(r->a, "%s(%s)", r->be->soft_math ? (sd->scalar == SC_DOUBLE ? "tg_log2" : "tg_log2f") : math_fn(sd, "log2"), s[0]); break;
  case OP_SIN:
    e = arena_printf(r->a, "%s(%s)", r->be->soft_math && sd->scalar == SC_DOUBLE ? "tg_sin" : r->be->soft_math && sd->scalar == SC_FLOAT ? "tg_sinf" : math_fn(sd, "sin"), s[0]);
    break;
  case OP_TRUNC: e = arena_printf(r->a, "%s(%s)", math_fn(sd, "trunc"), s[0]); break;
  case OP_POW: e = arena_printf(r->a, "%s%s(%s, %s)", r->be->soft_math ? "tg_s" : "tg_", sd->scalar == SC_DOUBLE ? "pow" : "powf", s[0], s[1]); break;
  case OP_THREEFRY: return arena_printf(r->a, "tg_threefry(%s, %s)", s[0], s[1]);
  default: tg_fail(TG_EINPUT, "the C renderer can't render %s", op_names[u->op]);
  }
  /* tinygrad takes a half's log2 (and sin's reduction) in float and casts the result to half */
  if (fp16_lazy(r, dt) && (u->op == OP_LOG2 || u->op == OP_SIN)) return round16(r, dt, e);
  return fix_type(r, dt, e);
}

static const char *render_expr(R *r, UOp *u) {
  switch (u->op) {
  case OP_LOAD: return render_load(r, u);
  case OP_CAST: return render_cast(r, u->dtype, u->src[0]->dtype, nm(r, u->src[0]));
  case OP_BITCAST: return render_bitcast(r, u->dtype, u->src[0]->dtype, nm(r, u->src[0]));
  default: return render_alu(r, u);
  }
}

static intptr_t use_count(R *r, UOp *u) { return (intptr_t)map_get(&r->uses, u, uop_h(u), NULL); }
static void count_use(R *r, UOp *u) {
  if (u->op == OP_INDEX) { for (int k = 1; k < u->nsrc; k++) count_use(r, u->src[k]); return; }
  map_put(&r->uses, u, uop_h(u), (void *)(use_count(r, u) + 1));
}

static void uncount_use(R *r, UOp *u) {
  if (u->op == OP_INDEX) { for (int k = 1; k < u->nsrc; k++) uncount_use(r, u->src[k]); return; }
  intptr_t n = use_count(r, u);
  if (n > 0) map_put(&r->uses, u, uop_h(u), (void *)(n - 1));
}
/* a value the renderer may inline or drop (no side effect, no load) */
static bool pure_value(UOp *u) { return (op_in((Op)u->op, G_ALU) && u->op != OP_WHERE) || u->op == OP_CAST || u->op == OP_BITCAST; }

/* acc = op(acc, value): tinygrad's update is an ADD (MUL) of the accumulator and the value, so an
 * inlined value that is itself an ADD (MUL) loses its parentheses, as in render_alu: acc+(t+b) is
 * printed acc+t+b and C adds (acc+t)+b (layernorm's backward sums (x-m)*s*w+b this way) */
static const char *acc_update(R *r, UOp *red, const char *acc, UOp *vu) {
  Op op = red->arg->op;
  const DType *dt = red->dtype;
  const char *e, *v = nm(r, vu);
  if (signed_int(dt) && (op == OP_ADD || op == OP_MUL)) /* an accumulator has no bounds: wrap as above */
    return wrap_bin(r, dt, acc, op == OP_ADD ? "+" : "*", v);
  if ((op == OP_ADD || op == OP_MUL) && vu->op == op) v = strip_parens(r->a, v);
  if (op == OP_ADD) e = arena_printf(r->a, "(%s+%s)", acc, v);
  else if (op == OP_MUL) e = arena_printf(r->a, "(%s*%s)", acc, v);
  else if (op == OP_MAX) e = arena_printf(r->a, "((%s<%s)?%s:%s)", acc, v, v, acc);
  else tg_fail(TG_EINPUT, "the C renderer can't reduce with %s", op_names[op]);
  return fix_type(r, dt, e);  /* a lazy half is rounded once, by the assignment */
}

/* an expression the update's rewrite made, printed as the values are: a node placed already by
 * its name (or inline text), the placeholder by the accumulator's name, a new node from its
 * sources' texts (a WHERE too: sym folds where(c, a, 0) + where(c, b, 0) into one, of values
 * already computed, and tinygrad prints it inline) */
static const char *render_tree(R *r, UOp *n) {
  const char *s = map_get(&r->names, n, uop_h(n), NULL);
  if (s) return s;
  if (n->op == OP_CONST || n->op == OP_DEFINE_VAR || n->op == OP_RANGE) return nm(r, n);
  if (!pure_value(n) && n->op != OP_WHERE) tg_fail(TG_EINTERNAL, "render: the accumulator update made a %s", op_names[n->op]);
  for (int k = 0; k < n->nsrc; k++) render_tree(r, n->src[k]);
  s = render_expr(r, n);
  map_put(&r->names, n, uop_h(n), (void *)s);
  return s;
}
/* the statement for n unrolled float ADD (MUL) updates of accumulator red, ins[0..n): tinygrad's
 * reduce_to_acc folds them into acc op v0 op v1 ..., and its devectorize sym rewrites that chain
 * like any value (lower_acc_update): a value's added constant moves to the end, (acc+(a+1))+(b+1)
 * is printed b+a+acc+2.0f, which C adds as ((b+a)+acc)+2. NULL where the rewrite leaves the chain
 * as it is (acc_update prints that), or for another dtype or op (ints wrap, halves round lazily) */
static const char *acc_update_sym(R *r, UOp *red, const char *an, int n, const LInst *ins) {
  Op op = red->arg->op;
  if ((op != OP_ADD && op != OP_MUL) || red->dtype->count != 1 || (red->dtype->scalar != SC_FLOAT && red->dtype->scalar != SC_DOUBLE)) return NULL;
  UOp **vals = arena_alloc(r->a, sizeof(UOp *) * (size_t)n);
  for (int k = 0; k < n; k++) vals[k] = ins[k].aux;
  UOp *acc = uop0(OP_DEFINE_REG, red->dtype, v_int((int64_t)red->id)), *plain = acc;
  for (int k = 0; k < n; k++) plain = uop2(op, red->dtype, plain, vals[k], NULL);
  UOp *upd = lower_acc_update(op, acc, n, vals);
  if (upd == plain) return NULL;
  if (upd == acc) return "";   /* acc+0+0...: tinygrad's sym drops the store of its own load */
  map_put(&r->names, acc, uop_h(acc), (void *)an);
  return render_tree(r, upd);
}

char *render_replace(Arena *a, const char *s, const char *from, const char *to) {
  SB b;
  sb_init(&b, a);
  size_t fl = strlen(from);
  for (const char *q; (q = strstr(s, from)); s = q + fl) { sb_put(&b, s, (size_t)(q - s)); sb_str(&b, to); }
  sb_str(&b, s);
  return b.s;
}

/* the instruction index of the only loop at depth within [lo, hi) when nothing but values stands
 * beside it (no accumulator, update or store: every iteration is independent), else -1 */
static int lone_loop(const Program *p, int lo, int hi, int depth) {
  int li = -1;
  for (int i = lo; i < hi; i++) {
    const LInst *in = &p->inst[i];
    if (in->depth != depth) continue;
    if (in->kind == LK_LOOP) { if (li >= 0) return -1; li = i; }
    else if (in->kind == LK_ACC || in->kind == LK_ACCUM || in->kind == LK_STORE) return -1;
  }
  return li;
}

void render_launch(const Program *p, const RenderBackend *be, RenderLaunch *l) {
  memset(l, 0, sizeof *l);
  for (int k = 0; k < 3; k++) l->size[k] = l->local[k] = 1;
  if (!be->gid[0]) return;
  if (p->nspecial) {   /* thread lowering: its work-groups and their threads */
    l->exact = true;
    for (int k = 0; k < 3; k++) {
      l->size[k] = p->gsize[k]; l->local[k] = p->lsize[k];
      if (p->gsize[k] > 1 || p->lsize[k] > 1) l->n = k + 1;
    }
    if (!l->n) l->n = 1;
    return;
  }
  int lo = 0, hi = p->ninst, n = 0;
  UOp *loops[3];
  for (int depth = 0; depth < 3; depth++) {
    int li = lone_loop(p, lo, hi, depth);
    if (li < 0 || p->inst[li].u->src[0]->op != OP_CONST) break;
    loops[n++] = p->inst[li].u;
    lo = li + 1;
    while (hi > lo && !(p->inst[hi - 1].kind == LK_ENDLOOP && p->inst[hi - 1].u == loops[n - 1] && p->inst[hi - 1].depth == depth)) hi--;
    hi--;
  }
  /* innermost is dimension 0; drop inner loops while a dimension exceeds its limit */
  for (; n > 0; n--) {
    bool ok = true;
    for (int i = 0; i < n; i++) {
      int64_t sz = loops[i]->src[0]->arg->i, mx = be->gid_max[n - 1 - i];
      if (sz < 1 || (mx && sz > mx)) ok = false;
    }
    if (ok) break;
  }
  l->n = n;
  for (int i = 0; i < n; i++) {
    l->loops[i] = loops[i]; l->dim[i] = n - 1 - i;
    l->size[n - 1 - i] = loops[i]->src[0]->arg->i;
  }
}

RenderBackend render_c_threads(int threads) {
  RenderBackend be = render_c;
  be.parallel = threads == 1 ? 0 : threads <= 0 ? -1 : threads;
  be.simd = be.parallel != 0;
  return be;
}
/* loop i can be a simd reduction (render_sum_loop) */
static bool simd_loop(const Program *p, int i) {
  int j = render_loop_end(p, i);
  return j > i && render_sum_loop(p, i, j, NULL);
}
/* the accumulators of loop i, comma-separated, if it is a simd reduction, else NULL */
static const char *simd_accs(R *r, const Program *p, int i) {
  if (!r->be->fast_sums || !simd_loop(p, i)) return NULL;
  UOp *loop = p->inst[i].u;
  const char *names = NULL;
  for (int k = i + 1; k < p->ninst; k++) {
    const LInst *in = &p->inst[k];
    if (in->kind == LK_ENDLOOP && in->u == loop) break;
    if (in->kind != LK_ACCUM) continue;
    const char *an = map_get(&r->names, in->u, uop_h(in->u), NULL);
    if (!an) return NULL;
    if (k > i + 1 && p->inst[k - 1].kind == LK_ACCUM && p->inst[k - 1].u == in->u) continue; /* an unroll's next update */
    names = names ? arena_printf(r->a, "%s,%s", names, an) : an;
  }
  return names;
}
/* loop i can be an elementwise simd loop: an innermost loop of at least 16 iterations holding
 * values and stores only, that walks memory densely by at most 8 elements per iteration (a longer
 * step, like a fully unrolled row, would be a gather per lane), and whose stored buffers are loaded
 * only at the index they are stored to (every iteration is then independent of the others) */
static bool simd_map_loop(const Program *p, int i) {
  UOp *loop = p->inst[i].u;
  if (loop->src[0]->op == OP_CONST && loop->src[0]->arg->i < 16) return false;
  int j = render_loop_end(p, i);
  bool stores = false;
  for (int k = i + 1; k < j; k++) {
    const LInst *in = &p->inst[k];
    if (in->kind != LK_VALUE && in->kind != LK_STORE) return false;
    UOp *ix = in->kind == LK_STORE || in->u->op == OP_LOAD ? in->u->src[0] : NULL;
    if (ix && ix->op == OP_INDEX) {
      int64_t c = render_range_coef(ix->src[1], loop, 0);
      if (c < 0 || c > 8) return false;
    }
    if (in->kind != LK_STORE) continue;
    stores = true;
    UOp *six = in->u->src[0];
    for (int q = i + 1; q < j; q++) {
      const LInst *l = &p->inst[q];
      if (l->kind == LK_VALUE && l->u->op == OP_LOAD && l->u->src[0]->op == OP_INDEX && l->u->src[0]->src[0] == six->src[0] && l->u->src[0] != six)
        return false;
    }
  }
  return j > i && stores && render_dense(p, i + 1, j, loop, NULL);
}
/* the instructions inside simd loops that walk memory densely: their loads stay scalar, so the
 * compiler's vectorizer can widen the loop (it does not widen tg_f4 vectors) */
static bool *scalar_loads(R *r, const Program *p) {
  bool *sc = NULL;
  for (int i = 0; i < p->ninst; i++) {
    if (p->inst[i].kind != LK_LOOP) continue;
    bool red = r->be->fast_sums && simd_loop(p, i);
    if (!red && !simd_map_loop(p, i)) continue;
    int j = render_loop_end(p, i);
    if (j < 0 || (red && !render_dense(p, i + 1, j, p->inst[i].u, NULL))) continue;
    if (!sc) sc = arena_alloc(r->a, sizeof(bool) * (size_t)p->ninst);
    for (int k = i + 1; k < j; k++) sc[k] = true;
  }
  return sc;
}
/* the float loads of a program by (buffer, base, mask, block, depth, offset) -> instruction, in a
 * small open-addressing table of the render's arena */
typedef struct VKey { UOp *buf, *base, *valid; int block, depth; int64_t c; } VKey;
typedef struct VTab { VKey *k; int *v; size_t mask; } VTab;  /* v: instruction + 1, 0 empty */
static uint64_t vkey_hash(const VKey *k) {
  uint64_t h = hash_mix(hash_mix((uintptr_t)k->buf, (uintptr_t)k->base), (uintptr_t)k->valid);
  return hash_mix(hash_mix(h, ((uint64_t)(uint32_t)k->block << 32) | (uint32_t)k->depth), (uint64_t)k->c);
}
static bool vkey_eq(const VKey *a, const VKey *b) {
  return a->buf == b->buf && a->base == b->base && a->valid == b->valid && a->block == b->block && a->depth == b->depth && a->c == b->c;
}
/* the slot of k: its entry, or the empty slot it would take */
static size_t vtab_slot(const VTab *t, const VKey *k) {
  size_t i = (size_t)vkey_hash(k) & t->mask;
  while (t->v[i] && !vkey_eq(&t->k[i], k)) i = (i + 1) & t->mask;
  return i;
}
static int vtab_get(const VTab *t, VKey k) { return t->v[vtab_slot(t, &k)] - 1; }  /* -1: none */
static bool float_load(const LInst *in) {
  UOp *u = in->u;
  return in->kind == LK_VALUE && u->op == OP_LOAD && u->dtype == dt_float && u->src[0]->op == OP_INDEX && dt_base(u->src[0]->src[0]->dtype) == dt_float;
}
/* group float32 loads into 4-wide vector loads (RenderBackend.vec4): runs of consecutive offsets
 * from one base, same buffer, same mask, same loop body, cut into fours from the run's start */
static void find_vec_loads(R *r) {
  const Program *p = r->p;
  int nl = 0;
  for (int i = 0; i < p->ninst; i++) nl += float_load(&p->inst[i]) && !(r->scalar && r->scalar[i]);
  if (!nl) return;
  VTab at = {.mask = 15};
  while (at.mask + 1 < (size_t)nl * 2) at.mask = at.mask * 2 + 1;
  at.k = arena_alloc(r->a, sizeof(VKey) * (at.mask + 1));
  at.v = arena_alloc(r->a, sizeof(int) * (at.mask + 1));
  VKey *key = arena_alloc(r->a, sizeof(VKey) * (size_t)(p->ninst + 1));
  for (int i = 0, block = 0; i < p->ninst; i++) {
    const LInst *in = &p->inst[i];
    if (in->kind == LK_LOOP || in->kind == LK_ENDLOOP) block++;
    if (!float_load(in) || (r->scalar && r->scalar[i])) continue;
    UOp *ix = in->u->src[0];
    key[i] = (VKey){.buf = ix->src[0], .valid = ix->nsrc > 2 ? ix->src[2] : NULL, .block = block, .depth = in->depth};
    render_split_const(ix->src[1], &key[i].base, &key[i].c);
    size_t sl = vtab_slot(&at, &key[i]);
    at.k[sl] = key[i]; at.v[sl] = i + 1;
  }
  int ng = 0;
  for (int i = 0; i < p->ninst; i++) {
    if (!float_load(&p->inst[i]) || (r->scalar && r->scalar[i])) continue;
    VKey k = key[i];
    k.c--;
    if (vtab_get(&at, k) >= 0) continue;   /* not the start of a run */
    int64_t c0 = key[i].c;
    if (r->be->vec4_aligned) {   /* from the run's first offset that is a multiple of 4, on a base that is one */
      if (k.buf->op != OP_DEFINE_GLOBAL || (k.base && !u_divides(k.base, 4))) continue;
      c0 += ((4 - c0 % 4) % 4 + 4) % 4;
    }
    for (;; c0 += 4) {
      int idx[4];
      bool full = true;
      for (int l = 0; l < 4 && full; l++) {
        k.c = c0 + l;
        idx[l] = vtab_get(&at, k);
        full = idx[l] >= 0;
      }
      if (!full) break;
      int first = idx[0];
      for (int l = 1; l < 4; l++) if (idx[l] < first) first = idx[l];
      VLoad *h = NULL;
      for (int l = 0; l < 4; l++) {
        VLoad *v = arena_alloc(r->a, sizeof *v);
        *v = (VLoad){.lane = l, .first = first, .buf = k.buf, .base = k.base, .valid = k.valid, .c = c0};
        if (!h) h = v;
        v->head = h;
        UOp *m = p->inst[idx[l]].u;
        map_put(&r->vec, m, uop_h(m), v);
      }
      h->name = arena_printf(r->a, "vec%d", ng++);
    }
  }
}
/* the backend's spelling of the 4-wide vector (RenderBackend.vec4_*: the C backend's tg_f4 by default) */
static const char *vec4_type(const RenderBackend *be) { return be->vec4_type ? be->vec4_type : "tg_f4"; }
/* the vector load of a group: *(const tg_f4*)(buf+base+c), 0 where the mask is false */
static const char *render_vec_load(R *r, const VLoad *h) {
  const char *off = h->base ? arena_printf(r->a, "%s+%s", nm(r, h->base), h->c ? arena_printf(r->a, "(%lld)", (long long)h->c) : "0")
                            : arena_printf(r->a, "%lld", (long long)h->c);
  const RenderBackend *be = r->be;
  const char *e = arena_printf(r->a, be->vec4_load ? be->vec4_load : "(*(const tg_f4*)(%s+%s))", nm(r, h->buf), off);
  const char *zero = be->vec4_zero ? be->vec4_zero : "(tg_f4){0.0f,0.0f,0.0f,0.0f}";
  return h->valid ? arena_printf(r->a, "(%s?%s:%s)", nm(r, h->valid), e, zero) : e;
}

/* the depth-0 loop that may run across threads (NULL: none): alone at its depth, and the kernel
 * does at least 2^15 innermost iterations times the updates and stores it holds (an upcast does
 * more per iteration; a symbolic bound counts as 16) */
static UOp *parallel_loop(const Program *p) {
  int li = lone_loop(p, 0, p->ninst, 0);
  UOp *loop = li >= 0 ? p->inst[li].u : NULL;
  if (!loop || (loop->src[0]->op == OP_CONST && loop->src[0]->arg->i < 2)) return NULL;
  double work = 1, updates = 0;
  for (int i = 0; i < p->ninst; i++) {
    if (p->inst[i].kind == LK_LOOP) {
      UOp *e = p->inst[i].u->src[0];
      work *= e->op == OP_CONST ? (double)e->arg->i : 16.0;
    }
    updates += p->inst[i].kind == LK_ACCUM || p->inst[i].kind == LK_STORE;
  }
  return work * (updates > 1 ? updates : 1) >= 32768 ? loop : NULL;
}

/* e in one pair of parentheses (as an if needs it; clang warns of "((a==b))") */
static const char *parenthesized(Arena *a, const char *e) {
  size_t n = strlen(e);
  int depth = 0;
  bool whole = n > 1 && e[0] == '(';
  for (size_t i = 0; whole && i < n; i++) {
    depth += e[i] == '(' ? 1 : e[i] == ')' ? -1 : 0;
    if (depth == 0 && i + 1 < n) whole = false;
  }
  return whole ? e : arena_printf(a, "(%s)", e);
}

/* a thread-lowered kernel's local buffer and its thread indices, at the top of its body
 * (tinygrad's DEFINE_LOCAL and SPECIAL lines): gidx from the work-group id, lidx from the
 * work-item's id in its group, idx (NOLOCALS) from the global id */
static void render_specials(R *r, SB *b) {
  const Program *p = r->p;
  const RenderBackend *be = r->be;
  if (p->nspecial && !be->group_id[0]) tg_fail(TG_EINPUT, "the %s renderer has no thread indices", be->name);
  if (p->local_buf) {
    const DType *e = dt_base(p->local_buf->dtype);
    sb_printf(b, "  %s%s %s[%lld];\n", be->smem_prefix, e->scalar == SC_BOOL ? be->storage_name(e) : be->type_name(e), nm(r, p->local_buf), (long long)p->local_n);
  }
  for (int i = 0; i < p->nspecial; i++) {
    UOp *u = p->specials[i];
    const char *n = u->arg->items[0]->s;
    int d = n[strlen(n) - 1] - '0';
    const char *e = n[0] == 'g' ? be->group_id[d] : n[0] == 'l' ? be->local_id[d] : be->gid[d];
    sb_printf(b, "  int %s = %s; /* %lld */\n", n, e, (long long)u->arg->items[1]->i);
  }
}

char *render_function(Arena *a, const Program *p, const RenderBackend *be) {
  if (be->simd && be->fast_sums) p = render_fission(a, p);
  KBlock kbp = {0};
  if (be->kblock) p = render_kblock(a, p, &kbp);
  R r = {.a = a, .be = be, .p = p};
  RenderLaunch launch;
  render_launch(p, be, &launch);
  UOp *ploop = be->parallel ? parallel_loop(p) : NULL;
  map_init(&r.names, a); map_init(&r.uses, a); map_init(&r.vec, a);
  if (be->vec4) {
    if (be->simd) r.scalar = scalar_loads(&r, p);
    find_vec_loads(&r);
  }
  for (int i = 0; i < p->ninst; i++) {
    const LInst *in = &p->inst[i];
    UOp *u = in->u;
    const VLoad *vl = in->kind == LK_VALUE ? map_get(&r.vec, u, uop_h(u), NULL) : NULL;
    if (vl) {   /* a lane: the group's head uses the base and the mask, once */
      if (vl->head == vl) {
        if (vl->base) count_use(&r, vl->base);
        if (vl->valid) count_use(&r, vl->valid);
      }
      continue;
    }
    /* MAX prints its operands twice: count them twice so they get a variable */
    int times = (in->kind == LK_VALUE && u->op == OP_MAX) || (in->kind == LK_ACCUM && u->arg->op == OP_MAX) ? 2 : 1;
    for (int t = 0; t < times; t++) {
      if (in->kind == LK_VALUE || in->kind == LK_STORE) for (int k = 0; k < u->nsrc; k++) count_use(&r, u->src[k]);
      if (in->kind == LK_ACCUM) count_use(&r, in->aux);
    }
    if (in->kind == LK_LOOP) count_use(&r, u->src[0]);
  }
  /* index arithmetic only vector lanes used is dead now: drop its uses of its own sources, last first */
  if (r.vec.live)
    for (int i = p->ninst - 1; i >= 0; i--) {
      const LInst *in = &p->inst[i];
      UOp *u = in->u;
      if (in->kind != LK_VALUE || !pure_value(u) || use_count(&r, u) != 0 || map_get(&r.vec, u, uop_h(u), NULL)) continue;
      for (int k = 0; k < u->nsrc; k++) uncount_use(&r, u->src[k]);
    }
  SB b;
  sb_init(&b, a);
  if (p->nopts) sb_printf(&b, "/* opts: %s */\n", kopt_format(a, p->nopts, p->opts));
  sb_printf(&b, "%s %s(", be->kernel_prefix, p->fname);
  for (int i = 0; i < p->nglobals; i++) {
    const DType *d = p->globals[i].u->dtype;
    sb_printf(&b, "%s%s%s%s*%s data%lld", i ? ", " : "", p->globals[i].written ? "" : be->readonly_prefix, be->buffer_prefix,
              be->storage_name(dt_base(d)), be->buffer_suffix, (long long)p->globals[i].u->arg->i);
  }
  for (int i = 0; i < p->nvars; i++) sb_printf(&b, "%s%s %s", i || p->nglobals ? ", " : "", be->arg_int_prefix, p->vars[i]->arg->items[0]->s);
  if (!p->nglobals && !p->nvars) sb_str(&b, "void");
  sb_str(&b, ") {\n");
  render_specials(&r, &b);
  bool kin = false;   /* between the k-block loop's lines */
  for (int i = 0; i < p->ninst; i++) {
    const LInst *in = &p->inst[i];
    UOp *u = in->u;
    int d = in->depth + 1 + (kin ? 1 : 0);   /* inside a k-block loop: one more level */
    switch (in->kind) {
    case LK_BARRIER: sb_indent(&b, d); sb_printf(&b, "%s\n", be->barrier); break;
    case LK_LOOP: {
      if (u->op == OP_IF) { sb_indent(&b, d); sb_printf(&b, "if %s {\n", parenthesized(a, nm(&r, u->src[0]))); break; }
      const char *rn = nm(&r, u);
      sb_indent(&b, d);
      int li = -1;
      for (int k = 0; k < launch.n; k++) if (launch.loops[k] == u) li = k;
      if (li >= 0) { sb_printf(&b, "int %s = (int)%s; if (%s < %s) {\n", rn, be->gid[launch.dim[li]], rn, nm(&r, u->src[0])); break; }
      if (u == kbp.col) {   /* the block loop around it */
        sb_printf(&b, "for (int kblk = 0; kblk < %lld; kblk += %lld) {\n", (long long)kbp.red->src[0]->arg->i, (long long)kbp.step);
        kin = true;
        sb_indent(&b, ++d);
      }
      if (u == kbp.red) { sb_printf(&b, "for (int %s = kblk; %s < kblk+%lld; %s++) {\n", rn, rn, (long long)kbp.step, rn); break; }
      if (u == ploop) {
        if (be->parallel > 0) sb_printf(&b, "#pragma omp parallel for num_threads(%d)\n", be->parallel);
        else sb_str(&b, "#pragma omp parallel for\n");
        sb_indent(&b, d);
      } else if (be->simd) {
        const char *accs = simd_accs(&r, p, i);
        if (accs) { sb_printf(&b, "#pragma omp simd reduction(+:%s)\n", accs); sb_indent(&b, d); }
        else if (simd_map_loop(p, i)) { sb_str(&b, "#pragma omp simd\n"); sb_indent(&b, d); }
      }
      sb_printf(&b, "for (int %s = 0; %s < %s; %s++) {\n", rn, rn, nm(&r, u->src[0]), rn);
      break;
    }
    case LK_ENDLOOP:
      sb_indent(&b, d); sb_str(&b, "}\n");
      if (u == kbp.col && kin) { kin = false; sb_indent(&b, d - 1); sb_str(&b, "}\n"); }
      break;
    case LK_ACC: {
      const char *an = arena_printf(a, "acc%d", r.cnt[PF_ACC]++);
      map_put(&r.names, u, uop_h(u), (void *)an);
      sb_indent(&b, d);
      const char *init = render_const(a, lower_identity(u->arg->op, u->dtype), be);
      for (int k = 0; k < kbp.nacc; k++)   /* a later block resumes from the partial sum in the output */
        if (kbp.acc[k] == u) init = arena_printf(a, "kblk ? %s[%s] : %s", nm(&r, kbp.store_ix[k]->src[0]), nm(&r, kbp.store_ix[k]->src[1]), init);
      sb_printf(&b, "%s %s = %s;\n", be->type_name(u->dtype), an, init);
      break;
    }
    case LK_ACCUM: {   /* consecutive ADD/MUL updates of one accumulator (an unroll's) are one statement */
      const char *an = nm(&r, u), *e = NULL;
      int first = i;
      while (u->arg->op != OP_MAX && i + 1 < p->ninst && p->inst[i + 1].kind == LK_ACCUM && p->inst[i + 1].u == u) i++;
      /* an unroll's values (MAX names its accumulator twice and stays one update each): the update
       * as tinygrad's sym leaves it where that differs, else acc op v0 op v1 ... */
      if (i > first) e = acc_update_sym(&r, u, an, i - first + 1, p->inst + first);
      if (e && !*e) break;
      if (!e) {
        e = an;
        for (int k = first; k <= i; k++) e = acc_update(&r, u, e, p->inst[k].aux);
      }
      if (fp16_lazy(&r, u->dtype)) e = round16(&r, u->dtype, e);
      sb_indent(&b, d);
      sb_printf(&b, "%s = %s;\n", an, e);
      break;
    }
    case LK_STORE: {
      UOp *ix = u->src[0], *buf = ix->src[0];
      const char *v = nm(&r, u->src[1]);
      const DType *bd = dt_base(buf->dtype);
      int k = bd->scalar == SC_BFLOAT16;
      bool native = be->emulated_16bit && is16(bd) && be->store16[k];
      if (be->emulated_16bit && is16(bd) && !native) v = arena_printf(a, k ? "tg_f2bf(%s)" : "tg_f2h(%s)", v);
      sb_indent(&b, d);
      if (ix->nsrc > 2) sb_printf(&b, "if (%s) ", nm(&r, ix->src[2]));
      if (native) sb_printf(&b, "%s;\n", arena_printf(a, be->store16[k], nm(&r, buf), nm(&r, ix->src[1]), v));
      else sb_printf(&b, "%s[%s] = %s;\n", nm(&r, buf), nm(&r, ix->src[1]), v);
      break;
    }
    case LK_VALUE: {
      const VLoad *vl = map_get(&r.vec, u, uop_h(u), NULL);
      if (vl && vl->first == i) {   /* the group's first load in program order: the vector load */
        sb_indent(&b, d);
        sb_printf(&b, "%s %s = %s;\n", vec4_type(be), vl->head->name, render_vec_load(&r, vl->head));
      }
      const char *e = vl ? (be->vec4_lanes[0] ? arena_printf(a, "%s%s", vl->head->name, be->vec4_lanes[vl->lane])
                                              : arena_printf(a, "%s[%d]", vl->head->name, vl->lane))
                         : render_expr(&r, u);
      bool can_inline = pure_value(u);
      /* tinygrad's renderer prints a single-use ALU, CAST or BITCAST in its user, wherever that is:
       * inside a loop or an if (a GROUP's reduce under lidx0==0), the expression is the user's, and
       * the compiler contracts a*b+c in it to an FMA as it does in tinygrad's source */
      if (can_inline && use_count(&r, u) <= 1) { map_put(&r.names, u, uop_h(u), (void *)e); break; } /* 0: only vector lanes used it */
      int pf = u->op == OP_LOAD ? PF_VAL : (u->op == OP_CAST || u->op == OP_BITCAST) ? PF_CAST : PF_ALU;
      const char *vn = arena_printf(a, "%s%d", prefixes[pf], r.cnt[pf]++);
      map_put(&r.names, u, uop_h(u), (void *)vn);
      /* a named __fp16 is rounded (loads, vector lanes and casts to half are halves already) */
      if (fp16_lazy(&r, u->dtype) && !vl && u->op != OP_LOAD && u->op != OP_CAST && u->op != OP_BITCAST)
        e = round16(&r, u->dtype, e);
      sb_indent(&b, d);
      sb_printf(&b, "%s %s = %s;\n", be->type_name(u->dtype), vn, e);
      break;
    }
    }
  }
  sb_str(&b, "}\n");
  return b.s;
}

/* ---------------------------------------------------------------- prelude */
typedef struct Needs { bool half, bf16, pow, threefry, math; int nbc; Scalar bc[64][2]; } Needs;
static void need_bitcast(Needs *n, Scalar from, Scalar to) {
  for (int i = 0; i < n->nbc; i++) if (n->bc[i][0] == from && n->bc[i][1] == to) return;
  if (n->nbc < 64) { n->bc[n->nbc][0] = from; n->bc[n->nbc][1] = to; n->nbc++; }
}
static void scan_needs(const Program *p, Needs *n) {
  for (int i = 0; i < p->nglobals; i++) {
    const DType *d = dt_base(p->globals[i].u->dtype);
    n->half |= d->scalar == SC_HALF; n->bf16 |= d->scalar == SC_BFLOAT16;
  }
  for (int i = 0; i < p->ninst; i++) {
    UOp *u = p->inst[i].u;
    if (p->inst[i].kind != LK_VALUE && p->inst[i].kind != LK_ACC) continue;
    n->half |= u->dtype->scalar == SC_HALF; n->bf16 |= u->dtype->scalar == SC_BFLOAT16;
    for (int k = 0; k < u->nsrc; k++) { n->half |= u->src[k]->dtype->scalar == SC_HALF; n->bf16 |= u->src[k]->dtype->scalar == SC_BFLOAT16; }
    n->pow |= u->op == OP_POW;
    n->threefry |= u->op == OP_THREEFRY;
    if (u->op == OP_BITCAST) {
      /* 16-bit floats bitcast through their storage word, the rest through a union */
      if (!is16(u->src[0]->dtype) && !is16(u->dtype)) need_bitcast(n, (Scalar)u->src[0]->dtype->scalar, (Scalar)u->dtype->scalar);
    }
  }
}

/* print one guarded helper (the guard lets the preludes of several kernels share a translation unit) */
static void put_helper(SB *b, const char *guard, const char *text) { sb_printf(b, "#ifndef %s\n#define %s\n%s#endif\n", guard, guard, text); }
/* does the rendered text call helper name (name followed by '(')? */
static bool calls(const char *text, const char *name) {
  size_t l = strlen(name);
  for (const char *p = strstr(text, name); p; p = strstr(p + 1, name)) if (p[l] == '(') return true;
  return false;
}
/* Only the helpers the rendered functions call are printed (plus the helpers those call), so no
 * translation unit carries an unused static function (clang's -Wunused-function). */
char *render_prelude(Arena *a, int n, const Program *const *ps, const RenderBackend *be) {
  Needs nd;
  memset(&nd, 0, sizeof nd);
  SB fns;
  sb_init(&fns, a);
  for (int i = 0; i < n; i++) { scan_needs(ps[i], &nd); sb_str(&fns, render_function(a, ps[i], be)); }
  const char *t = fns.s;
  bool em = be->emulated_16bit;
  bool exp2h = calls(t, "tg_exp2h");
  bool hr = em && (calls(t, "tg_hr") || exp2h), h2f = em && (hr || calls(t, "tg_h2f")), f2h = em && (hr || calls(t, "tg_f2h"));
  bool br = em && calls(t, "tg_br"), bf2f = em && (br || calls(t, "tg_bf2f")), f2bf = em && (br || calls(t, "tg_f2bf"));
  SB b;
  sb_init(&b, a);
  sb_str(&b, be->prelude_head ? be->prelude_head : "#include <math.h>\n");
  if (nd.half && be->include16[0]) sb_str(&b, be->include16[0]);
  if (nd.bf16 && be->include16[1]) sb_str(&b, be->include16[1]);
  if (em && ((nd.half && !be->load16[0]) || h2f || f2h || strstr(t, "tg_half"))) put_helper(&b, "TGC_HALF", prelude_half);
  if (h2f) put_helper(&b, "TGC_H2F", prelude_h2f);
  if (f2h) put_helper(&b, "TGC_F2H", prelude_f2h);
  if (hr) put_helper(&b, "TGC_HR", prelude_hr);
  if (em && ((nd.bf16 && !be->load16[1]) || bf2f || f2bf || strstr(t, "tg_bf16"))) put_helper(&b, "TGC_BF16", prelude_bf16);
  if (bf2f) put_helper(&b, "TGC_BF2F", prelude_bf2f);
  if (f2bf) put_helper(&b, "TGC_F2BF", prelude_f2bf);
  if (br) put_helper(&b, "TGC_BR", prelude_br);
  if (strstr(t, "tg_f4 ")) put_helper(&b, "TGC_F4", prelude_f4);
  if (calls(t, "tg_powf")) put_helper(&b, "TGC_POWF", prelude_pow(a, false, false));
  if (calls(t, "tg_pow")) put_helper(&b, "TGC_POW", prelude_pow(a, true, false));
  bool spowf = calls(t, "tg_spowf"), spow = calls(t, "tg_spow");
  if (spowf || calls(t, "tg_exp2f")) put_helper(&b, "TGC_SEXP2F", prelude_sexp2f);
  if (exp2h) put_helper(&b, "TGC_SEXP2H", prelude_sexp2h);
  if (spowf || calls(t, "tg_log2f")) put_helper(&b, "TGC_SLOG2F", prelude_slog2f);
  if (spow || calls(t, "tg_exp2")) put_helper(&b, "TGC_SEXP2", prelude_sexp2);
  if (spow || calls(t, "tg_log2")) put_helper(&b, "TGC_SLOG2", prelude_slog2);
  if (spowf) put_helper(&b, "TGC_SPOWF", prelude_pow(a, false, true));
  if (spow) put_helper(&b, "TGC_SPOW", prelude_pow(a, true, true));
  bool ssinf = calls(t, "tg_sinf"), ssin = calls(t, "tg_sin");
  if (ssinf || ssin) put_helper(&b, "TGC_SSINPH", prelude_ssinph);
  if (ssinf) put_helper(&b, "TGC_SSINF", prelude_ssinf);
  if (ssin) put_helper(&b, "TGC_SSIN", prelude_ssin);
  if (calls(t, "tg_threefry")) put_helper(&b, "TGC_THREEFRY", prelude_threefry);
  for (int i = 0; i < nd.nbc; i++) {
    const DType *f = dt_scalar(nd.bc[i][0]), *to = dt_scalar(nd.bc[i][1]);
    const char *fs = dt_short_name(nd.bc[i][0]), *ts = dt_short_name(nd.bc[i][1]);
    if (!calls(t, arena_printf(a, "tg_bc_%s_%s", fs, ts))) continue;
    sb_printf(&b, "#ifndef TGC_BC_%s_%s\n#define TGC_BC_%s_%s\n", fs, ts, fs, ts);
    sb_printf(&b, "static inline %s tg_bc_%s_%s(%s x) { union { %s a; %s b; } u; u.a = x; return u.b; }\n#endif\n", be->type_name(to),
              fs, ts, be->type_name(f), be->type_name(f), be->type_name(to));
  }
  return be->prelude_fix ? be->prelude_fix(a, b.s) : b.s;
}

char *render_kernel(Arena *a, const Program *p, const RenderBackend *be) {
  return arena_printf(a, "%s\n%s", render_prelude(a, 1, &p, be), render_function(a, p, be));
}

char *render_c_entry(Arena *a, const Program *p) {
  SB b;
  sb_init(&b, a);
  sb_str(&b, "void tgc_entry(void **bufs, const long long *vars);\n");
  sb_str(&b, "void tgc_entry(void **bufs, const long long *vars) {\n");
  sb_printf(&b, "  (void)bufs; (void)vars;\n  %s(", p->fname);
  for (int i = 0; i < p->nglobals; i++) sb_printf(&b, "%sbufs[%d]", i ? ", " : "", i);
  for (int i = 0; i < p->nvars; i++) sb_printf(&b, "%s(int)vars[%d]", i || p->nglobals ? ", " : "", i);
  sb_str(&b, ");\n}\n");
  return b.s;
}
