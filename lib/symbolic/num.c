/* num.c: Python number semantics for the symbolic engine. tinygrad's range analysis and constant
 * folding run on Python ints (unbounded), floats and bools; here ints are 128-bit with saturation
 * at the ends (exact for every int64/uint64 bound and any single product of two of them), and
 * every operator follows Python: bool+bool is an int, int op float is a float, min()/max() keep
 * the first of equal values, // and % floor, and cdiv/cmod (helpers.py) truncate. */
#include "sym_int.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

i128 i128_sat_add(i128 a, i128 b) {
  i128 r;
  if (__builtin_add_overflow(a, b, &r)) return b > 0 ? I128_MAX : I128_MIN;
  return r;
}
static i128 i128_sat_sub(i128 a, i128 b) {
  i128 r;
  if (__builtin_sub_overflow(a, b, &r)) return b < 0 ? I128_MAX : I128_MIN;
  return r;
}
i128 i128_sat_mul(i128 a, i128 b) {
  i128 r;
  if (__builtin_mul_overflow(a, b, &r)) return ((a < 0) != (b < 0)) ? I128_MIN : I128_MAX;
  return r;
}
static i128 i128_abs(i128 a) { return a < 0 ? (a == I128_MIN ? I128_MAX : -a) : a; }
i128 i128_gcd(i128 a, i128 b) {
  a = i128_abs(a); b = i128_abs(b);
  while (b) { i128 t = a % b; a = b; b = t; }
  return a;
}

bool n_truthy(Num a) { return a.k == NK_FLOAT ? a.f != 0 : a.i != 0; }
Num n_add(Num a, Num b) {
  if (a.k == NK_FLOAT || b.k == NK_FLOAT) return n_float(n_f(a) + n_f(b));
  return n_int(i128_sat_add(a.i, b.i));
}
Num n_sub(Num a, Num b) {
  if (a.k == NK_FLOAT || b.k == NK_FLOAT) return n_float(n_f(a) - n_f(b));
  return n_int(i128_sat_sub(a.i, b.i));
}
Num n_mul(Num a, Num b) {
  if (a.k == NK_FLOAT || b.k == NK_FLOAT) return n_float(n_f(a) * n_f(b));
  return n_int(i128_sat_mul(a.i, b.i));
}
Num n_neg(Num a) { return a.k == NK_FLOAT ? n_float(-a.f) : n_int(i128_sat_sub(0, a.i)); }
bool n_lt(Num a, Num b) {
  if (a.k != NK_FLOAT && b.k != NK_FLOAT) return a.i < b.i;
  return n_f(a) < n_f(b);
}
bool n_eq(Num a, Num b) {
  if (a.k != NK_FLOAT && b.k != NK_FLOAT) return a.i == b.i;
  return n_f(a) == n_f(b);
}
Num n_min(Num a, Num b) { return n_lt(b, a) ? b : a; }
Num n_max(Num a, Num b) { return n_lt(a, b) ? b : a; }

/* Python float // (floatobject.c float_floor_div) */
static double py_fdiv(double vx, double wx) {
  double mod = fmod(vx, wx), div = (vx - mod) / wx, fd;
  if (mod) { if ((wx < 0) != (mod < 0)) div -= 1.0; }
  if (div) { fd = floor(div); if (div - fd > 0.5) fd += 1.0; }
  else fd = copysign(0.0, vx / wx);
  return fd;
}
static double py_fmod(double vx, double wx) {
  double mod = fmod(vx, wx);
  if (mod) { if ((wx < 0) != (mod < 0)) mod += wx; }
  else mod = copysign(0.0, wx);
  return mod;
}
static i128 i_floordiv(i128 x, i128 y) {
  if (y == -1) return i128_sat_sub(0, x);
  i128 q = x / y;
  if ((x % y != 0) && ((x < 0) != (y < 0))) q -= 1;
  return q;
}
Num n_floordiv(Num x, Num y) {
  if (!n_truthy(y)) tg_fail(TG_EINPUT, "the graph folds to an integer division or modulo by zero (tinygrad 0.11.0 raises ZeroDivisionError)");
  if (x.k != NK_FLOAT && y.k != NK_FLOAT) return n_int(i_floordiv(x.i, y.i));
  return n_float(py_fdiv(n_f(x), n_f(y)));
}
Num n_pymod(Num x, Num y) {
  if (!n_truthy(y)) tg_fail(TG_EINPUT, "the graph folds to an integer division or modulo by zero (tinygrad 0.11.0 raises ZeroDivisionError)");
  if (x.k != NK_FLOAT && y.k != NK_FLOAT) {
    if (y.i == -1) return n_int(0);
    i128 m = x.i % y.i;
    if (m != 0 && ((m < 0) != (y.i < 0))) m += y.i;
    return n_int(m);
  }
  return n_float(py_fmod(n_f(x), n_f(y)));
}
static Num n_abs(Num a) { return a.k == NK_FLOAT ? n_float(fabs(a.f)) : n_int(i128_abs(a.i)); }
Num n_cdiv(Num x, Num y) {
  /* abs(x)//abs(y)*(1,-1)[x*y<0] if y != 0 else 0 */
  if (!n_truthy(y)) return n_int(0);
  Num q = n_floordiv(n_abs(x), n_abs(y));
  return n_mul(q, n_int(n_lt(n_mul(x, y), n_int(0)) ? -1 : 1));
}
Num n_cmod(Num x, Num y) { return n_sub(x, n_mul(n_cdiv(x, y), y)); }
Num n_shl(Num a, Num b) {
  if (a.k == NK_FLOAT || b.k == NK_FLOAT) tg_fail(TG_EINPUT, "the graph folds to a << of a float (tinygrad 0.11.0 raises TypeError: unsupported operand type(s) for <<)");
  if (b.i < 0) tg_fail(TG_EINPUT, "the graph folds to a shift by a negative count (tinygrad 0.11.0 raises ValueError: negative shift count)");
  if (a.i == 0) return n_int(0);
  if (b.i >= 127) return n_int(a.i > 0 ? I128_MAX : I128_MIN);
  return n_int(i128_sat_mul(a.i, (i128)1 << (int)b.i));
}
Num n_shr(Num a, Num b) {
  if (a.k == NK_FLOAT || b.k == NK_FLOAT) tg_fail(TG_EINPUT, "the graph folds to a >> of a float (tinygrad 0.11.0 raises TypeError: unsupported operand type(s) for >>)");
  if (b.i < 0) tg_fail(TG_EINPUT, "the graph folds to a shift by a negative count (tinygrad 0.11.0 raises ValueError: negative shift count)");
  if (b.i >= 127) return n_int(a.i < 0 ? -1 : 0);
  return n_int(a.i >> (int)b.i);
}

Num n_of_value(const Value *v) {
  switch (v->kind) {
  case V_BOOL: return n_bool(v->b);
  case V_INT: return v->n == 1 ? n_int((i128)(uint64_t)v->i) : n_int(v->i); /* n == 1: v_uint64 above 2**63 */
  case V_FLOAT: return n_float(v->f);
  default: tg_fail(TG_EINTERNAL, "symbolic: expected a number, got value kind %d", v->kind);
  }
}
int64_t n_i64(Num a) {
  if (a.k == NK_FLOAT) {
    if (isnan(a.f)) tg_fail(TG_EINPUT, "the graph folds to a float NaN converted to an integer (tinygrad 0.11.0 raises ValueError: cannot convert float NaN to integer)");
    if (a.f >= 9.2233720368547758e18) return INT64_MAX;
    if (a.f <= -9.2233720368547758e18) return INT64_MIN;
    return (int64_t)a.f;
  }
  if (a.i > INT64_MAX) return INT64_MAX;
  if (a.i < INT64_MIN) return INT64_MIN;
  return (int64_t)a.i;
}
const Value *n_value(Num a) { /* ints in (2**63, 2**64) use v_uint64; beyond that they saturate */
  if (a.k == NK_BOOL) return v_bool(a.i != 0);
  if (a.k == NK_FLOAT) return v_float(a.f);
  if (a.i > INT64_MAX && a.i <= (i128)UINT64_MAX) return v_uint64((uint64_t)a.i);
  return v_int(n_i64(a));
}
Num n_dtmin(const DType *dt) {
  if (dt_is_int(dt)) return n_int(dt_imin(dt));
  if (dt_is_float(dt)) return n_float(-INFINITY);
  return n_bool(false);
}
Num n_dtmax(const DType *dt) {
  if (dt_is_int(dt)) return n_int((i128)dt_umax(dt));
  if (dt_is_float(dt)) return n_float(INFINITY);
  return n_bool(true);
}

/* ---- Python str() ---- */
static void i128_str(char *buf, i128 x) {
  char tmp[64]; int n = 0;
  unsigned __int128 u = x < 0 ? (unsigned __int128)0 - (unsigned __int128)x : (unsigned __int128)x;
  do { tmp[n++] = (char)('0' + (int)(u % 10)); u /= 10; } while (u);
  int k = 0;
  if (x < 0) buf[k++] = '-';
  while (n) buf[k++] = tmp[--n];
  buf[k] = 0;
}
char *py_float_repr(char *buf, size_t n, double f) {
  if (isnan(f)) { snprintf(buf, n, "nan"); return buf; }
  if (isinf(f)) { snprintf(buf, n, f < 0 ? "-inf" : "inf"); return buf; }
  if (f == 0) { snprintf(buf, n, signbit(f) ? "-0.0" : "0.0"); return buf; }
  char e[64];
  int p;
  for (p = 1; p <= 17; p++) {
    snprintf(e, sizeof e, "%.*e", p - 1, f);
    if (strtod(e, NULL) == f) break;
  }
  /* e = [-]d[.ddd]e[+-]XX */
  char digits[32]; int nd = 0, neg = 0; const char *s = e;
  if (*s == '-') { neg = 1; s++; }
  while (*s && *s != 'e') { if (*s != '.') digits[nd++] = *s; s++; }
  while (nd > 1 && digits[nd - 1] == '0') nd--;
  digits[nd] = 0;
  int exp10 = atoi(s + 1), decpt = exp10 + 1;
  char out[64]; int k = 0;
  if (neg) out[k++] = '-';
  if (decpt > -4 && decpt <= 16) {
    if (decpt <= 0) {
      out[k++] = '0'; out[k++] = '.';
      for (int i = 0; i < -decpt; i++) out[k++] = '0';
      for (int i = 0; i < nd; i++) out[k++] = digits[i];
    } else {
      for (int i = 0; i < decpt; i++) out[k++] = i < nd ? digits[i] : '0';
      out[k++] = '.';
      if (nd > decpt) for (int i = decpt; i < nd; i++) out[k++] = digits[i];
      else out[k++] = '0';
    }
    out[k] = 0;
  } else {
    out[k++] = digits[0];
    if (nd > 1) { out[k++] = '.'; for (int i = 1; i < nd; i++) out[k++] = digits[i]; }
    out[k] = 0;
    char ex[16];
    snprintf(ex, sizeof ex, "e%c%02d", exp10 < 0 ? '-' : '+', exp10 < 0 ? -exp10 : exp10);
    strcat(out, ex);
  }
  snprintf(buf, n, "%s", out);
  return buf;
}
char *n_str(Arena *a, Num x) {
  char buf[80];
  if (x.k == NK_BOOL) return arena_strdup(a, x.i ? "True" : "False");
  if (x.k == NK_FLOAT) return arena_strdup(a, py_float_repr(buf, sizeof buf, x.f));
  i128_str(buf, x.i);
  return arena_strdup(a, buf);
}
char *py_value_str(Arena *a, const Value *v) {
  switch (v->kind) {
  case V_NONE: return arena_strdup(a, "None");
  case V_BOOL: case V_INT: case V_FLOAT: return n_str(a, n_of_value(v));
  case V_STR: return arena_strdup(a, v->s);
  case V_TUPLE: {
    size_t cap = 16, len = 0;
    char **parts = arena_alloc(a, sizeof(char *) * (size_t)(v->n + 1));
    for (int i = 0; i < v->n; i++) {
      const Value *it = v->items[i];
      parts[i] = it->kind == V_STR ? arena_printf(a, "'%s'", it->s) : py_value_str(a, it);
      cap += strlen(parts[i]) + 2;
    }
    char *out = arena_alloc(a, cap);
    out[len++] = '(';
    for (int i = 0; i < v->n; i++) {
      if (i) { out[len++] = ','; out[len++] = ' '; }
      size_t l = strlen(parts[i]);
      memcpy(out + len, parts[i], l); len += l;
    }
    if (v->n == 1) out[len++] = ',';
    out[len++] = ')'; out[len] = 0;
    return out;
  }
  default: return arena_printf(a, "<value kind %d>", v->kind);
  }
}
