/* dtype.c: tinygrad's DType family (scalar, vec, ptr, image), interned once per process. */
#include "uop.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const struct { int prio, size; const char *name, *shortname; } SC[SC_COUNT] = {
  [SC_VOID] = {-1, 0, "void", "void"}, [SC_BOOL] = {0, 1, "bool", "bool"},
  [SC_CHAR] = {1, 1, "signed char", "char"}, [SC_UCHAR] = {2, 1, "unsigned char", "uchar"},
  [SC_SHORT] = {3, 2, "short", "short"}, [SC_USHORT] = {4, 2, "unsigned short", "ushort"},
  [SC_INT] = {5, 4, "int", "int"}, [SC_UINT] = {6, 4, "unsigned int", "uint"},
  [SC_LONG] = {7, 8, "long", "long"}, [SC_ULONG] = {8, 8, "unsigned long", "ulong"},
  [SC_FP8E4M3] = {9, 1, "float8_e4m3", "fp8e4m3"}, [SC_FP8E5M2] = {10, 1, "float8_e5m2", "fp8e5m2"},
  [SC_HALF] = {11, 2, "half", "half"}, [SC_BFLOAT16] = {12, 2, "__bf16", "bfloat16"},
  [SC_FLOAT] = {13, 4, "float", "float"}, [SC_DOUBLE] = {14, 8, "double", "double"},
};

const DType *dt_void, *dt_bool, *dt_char, *dt_uchar, *dt_short, *dt_ushort, *dt_int, *dt_uint,
  *dt_long, *dt_ulong, *dt_half, *dt_bfloat16, *dt_float, *dt_double, *dt_fp8e4m3, *dt_fp8e5m2;

/* process-global intern list, with a hash index (a model has a pointer dtype per buffer size) */
static DType *all_dt[4096];
static int n_dt;
static int16_t dt_index[8192]; /* all_dt index + 1, 0: empty; open addressing */
static const DType *scalars[SC_COUNT];

static bool dt_same(const DType *a, const DType *b) {
  if (a->kind != b->kind || a->scalar != b->scalar || a->count != b->count || a->priority != b->priority ||
      a->itemsize != b->itemsize || a->scalar_of != b->scalar_of || a->addrspace != b->addrspace || a->v != b->v ||
      a->size != b->size || a->nshape != b->nshape || strcmp(a->name, b->name) != 0)
    return false;
  if (a->kind != DTK_SCALAR && a->base != b->base) return false;
  for (int i = 0; i < a->nshape; i++) if (a->shape[i] != b->shape[i]) return false;
  return true;
}
static uint64_t dt_hash(const DType *d) {
  uint64_t h = hash_mix(hash_mix(hash_mix(hash_mix(0xD7, d->kind), d->scalar), d->count), d->addrspace);
  h = hash_mix(hash_mix(hash_mix(h, (uint64_t)d->v), (uint64_t)d->size), d->nshape);
  if (d->kind != DTK_SCALAR && d->base) h = hash_mix(h, d->base->id);
  if (d->scalar_of) h = hash_mix(h, d->scalar_of->id);
  return h;
}
static const DType *dt_intern(const DType *proto) {
  const size_t m = sizeof dt_index / sizeof *dt_index - 1;
  size_t p = dt_hash(proto) & m;
  for (; dt_index[p]; p = (p + 1) & m) if (dt_same(all_dt[dt_index[p] - 1], proto)) return all_dt[dt_index[p] - 1];
  if (n_dt >= (int)(sizeof all_dt / sizeof *all_dt)) tg_fail(TG_EINPUT, "too many distinct dtypes");
  DType *d = malloc(sizeof *d);
  if (!d) tg_fail(TG_EINTERNAL, "out of memory");
  *d = *proto;
  d->id = (uint32_t)n_dt;
  if (d->kind == DTK_SCALAR) d->base = d;
  all_dt[n_dt++] = d;
  dt_index[p] = (int16_t)n_dt;
  return d;
}

void dtype_init(void) {
  if (scalars[0]) return;
  for (int s = 0; s < SC_COUNT; s++) {
    DType d = {0};
    d.kind = DTK_SCALAR; d.scalar = (uint8_t)s; d.priority = SC[s].prio; d.itemsize = SC[s].size; d.count = 1;
    d.name = SC[s].name; d.v = 1; d.size = -1;
    scalars[s] = dt_intern(&d);
  }
  dt_void = scalars[SC_VOID]; dt_bool = scalars[SC_BOOL]; dt_char = scalars[SC_CHAR]; dt_uchar = scalars[SC_UCHAR];
  dt_short = scalars[SC_SHORT]; dt_ushort = scalars[SC_USHORT]; dt_int = scalars[SC_INT]; dt_uint = scalars[SC_UINT];
  dt_long = scalars[SC_LONG]; dt_ulong = scalars[SC_ULONG]; dt_half = scalars[SC_HALF]; dt_bfloat16 = scalars[SC_BFLOAT16];
  dt_float = scalars[SC_FLOAT]; dt_double = scalars[SC_DOUBLE]; dt_fp8e4m3 = scalars[SC_FP8E4M3]; dt_fp8e5m2 = scalars[SC_FP8E5M2];
}

const DType *dt_scalar(Scalar s) { return scalars[s]; }

static char vecname_buf[64][32];
const DType *dt_vec(const DType *d, int n) {
  if (d->kind == DTK_SCALAR) {
    if (n == 1 || d == dt_void) return d;
    if (d->count != 1) tg_fail(TG_EINPUT, "can't vectorize a vector dtype");
    DType p = *d;
    p.itemsize = d->itemsize * n; p.count = n; p.scalar_of = d;
    /* name is INVERSE_DTYPES_DICT[name]+str(n), e.g. "float4" */
    char buf[32];
    snprintf(buf, sizeof buf, "%s%d", dt_short_name((Scalar)d->scalar), n);
    p.name = buf;
    for (int i = 0; i < n_dt; i++) if (dt_same(all_dt[i], &p)) return all_dt[i];
    char *nm = malloc(strlen(buf) + 1);
    strcpy(nm, buf);
    p.name = nm;
    (void)vecname_buf;
    return dt_intern(&p);
  }
  if (n == 1) return d;
  if (d->v != 1) tg_fail(TG_EINPUT, "can't vectorize a vector ptr");
  DType p = *d;
  p.v = n; p.scalar_of = d;
  return dt_intern(&p);
}
const DType *dt_ptr(const DType *d, int64_t size, AddrSpace as) {
  if (d->kind == DTK_IMAGE) return d;
  if (d->kind == DTK_PTR) tg_fail(TG_EINPUT, "can't make a pointer from a pointer");
  /* the result depends on (d, size, as) alone: the last one made for each of 256 slots is kept,
   * since a kernel's buffers ask for the same few pointer dtypes over and over */
  static struct { const DType *d, *r; int64_t size; int as; } memo[256];
  uint32_t x = d->id * 0x9E3779B1u ^ (uint32_t)size * 0x85EBCA77u ^ (uint32_t)((uint64_t)size >> 32) ^ (uint32_t)as;
  unsigned k = (x * 0x9E3779B1u) >> 24; /* 0..255 */
  if (memo[k].d == d && memo[k].size == size && memo[k].as == (int)as) return memo[k].r;
  DType p = *d;
  p.kind = DTK_PTR; p.scalar_of = NULL; p.base = d; p.addrspace = (uint8_t)as; p.v = 1; p.size = size;
  const DType *r = dt_intern(&p);
  memo[k].d = d, memo[k].r = r, memo[k].size = size, memo[k].as = (int)as;
  return r;
}
const DType *dt_image(bool half, int n, const int64_t *shape) {
  DType p = {0};
  p.kind = DTK_IMAGE; p.scalar = half ? SC_HALF : SC_FLOAT; p.priority = 100; p.itemsize = half ? 2 : 4; p.count = 1;
  p.name = half ? "imageh" : "imagef"; p.base = dt_float; p.addrspace = AS_GLOBAL; p.v = 1;
  p.nshape = n > 4 ? 4 : n;
  int64_t sz = 1;
  for (int i = 0; i < p.nshape; i++) { p.shape[i] = shape[i]; sz *= shape[i]; }
  p.size = sz;
  return dt_intern(&p);
}
const DType *dt_scalar_of(const DType *d) { return d->scalar_of ? d->scalar_of : d; }

static Scalar sc_of(const DType *d) { return (Scalar)dt_scalar_of(d)->scalar; }
bool dt_is_float(const DType *d) {
  if (d->kind == DTK_IMAGE) return true;
  const DType *s = dt_scalar_of(d);
  if (s->kind != DTK_SCALAR) return false;
  Scalar c = (Scalar)s->scalar;
  return c == SC_FP8E4M3 || c == SC_FP8E5M2 || c == SC_HALF || c == SC_BFLOAT16 || c == SC_FLOAT || c == SC_DOUBLE;
}
bool dt_is_int(const DType *d) {
  const DType *s = dt_scalar_of(d);
  if (s->kind != DTK_SCALAR) return false;
  Scalar c = (Scalar)s->scalar;
  return c >= SC_CHAR && c <= SC_ULONG;
}
bool dt_is_unsigned(const DType *d) {
  const DType *s = dt_scalar_of(d);
  if (s->kind != DTK_SCALAR) return false;
  Scalar c = (Scalar)s->scalar;
  return c == SC_UCHAR || c == SC_USHORT || c == SC_UINT || c == SC_ULONG;
}
bool dt_is_bool(const DType *d) { const DType *s = dt_scalar_of(d); return s->kind == DTK_SCALAR && s->scalar == SC_BOOL; }
int64_t dt_imin(const DType *d) {
  if (!dt_is_int(d) || dt_is_unsigned(d)) return 0;
  int bits = dt_scalar_of(d)->itemsize * 8;
  return bits == 64 ? INT64_MIN : -((int64_t)1 << (bits - 1));
}
uint64_t dt_umax(const DType *d) {
  if (dt_is_bool(d)) return 1;
  int bits = dt_scalar_of(d)->itemsize * 8;
  if (dt_is_unsigned(d)) return bits == 64 ? UINT64_MAX : (((uint64_t)1 << bits) - 1);
  return bits == 64 ? (uint64_t)INT64_MAX : (((uint64_t)1 << (bits - 1)) - 1);
}
double dt_fmin(const DType *d) { (void)d; return -INFINITY; }
double dt_fmax(const DType *d) { (void)d; return INFINITY; }
const char *dt_short_name(Scalar s) { return SC[s].shortname; }

static void repr_into(char *buf, size_t n, const DType *d) {
  if (d->kind == DTK_SCALAR) {
    if (d->count > 1) snprintf(buf, n, "%s.vec(%d)", dt_short_name(sc_of(d)), d->count);
    else snprintf(buf, n, "%s", dt_short_name((Scalar)d->scalar));
    return;
  }
  char inner[256];
  size_t k;
  if (d->kind == DTK_IMAGE) {
    k = (size_t)snprintf(inner, sizeof inner, "%s((", d->name);
    for (int i = 0; i < d->nshape; i++)
      k += (size_t)snprintf(inner + k, sizeof inner - k, "%s%lld", i ? ", " : "", (long long)d->shape[i]);
    snprintf(inner + k, sizeof inner - k, "%s))", d->nshape == 1 ? "," : "");
  } else {
    char b[200];
    repr_into(b, sizeof b, d->base);
    if (d->addrspace != AS_GLOBAL)
      snprintf(inner, sizeof inner, "%s.ptr(%lld, AddrSpace.%s)", b, (long long)d->size, d->addrspace == AS_LOCAL ? "LOCAL" : "REG");
    else snprintf(inner, sizeof inner, "%s.ptr(%lld)", b, (long long)d->size);
  }
  if (d->v != 1) snprintf(buf, n, "%s.vec(%d)", inner, d->v);
  else snprintf(buf, n, "%s", inner);
}
char *dt_repr(Arena *a, const DType *d) {
  char buf[300];
  repr_into(buf, sizeof buf, d);
  return arena_strdup(a, buf);
}

/* parse "float", "float.vec(4)", "float.ptr(16)", "float.ptr(16, AddrSpace.LOCAL).vec(2)", "imagef((2, 4, 4))" */
static bool eat(const char **p, const char *lit) {
  size_t n = strlen(lit);
  if (strncmp(*p, lit, n) != 0) return false;
  *p += n;
  return true;
}
static bool eat_int(const char **p, int64_t *out) {
  char *end;
  while (**p == ' ') (*p)++;
  if (!(**p == '-' || (**p >= '0' && **p <= '9'))) return false;
  long long v = strtoll(*p, &end, 10);
  if (end == *p) return false;
  *p = end;
  *out = v;
  return true;
}
const DType *dt_parse(const char *s) {
  dtype_init();
  const char *p = s;
  const DType *d = NULL;
  if (eat(&p, "imagef((") || eat(&p, "imageh((")) {
    bool half = s[5] == 'h';
    int64_t shp[4]; int n = 0;
    for (;;) {
      while (*p == ' ') p++;
      if (*p == ')') break;
      if (n == 4 || !eat_int(&p, &shp[n])) return NULL;
      n++;
      while (*p == ' ') p++;
      if (*p == ',') p++;
    }
    if (!eat(&p, "))") || n == 0) return NULL;
    d = dt_image(half, n, shp);
  } else {
    int best = -1; size_t bestlen = 0;
    for (int i = 0; i < SC_COUNT; i++) {
      size_t l = strlen(SC[i].shortname);
      if (strncmp(p, SC[i].shortname, l) == 0 && (p[l] == 0 || p[l] == '.') && l > bestlen) { best = i; bestlen = l; }
    }
    if (best < 0) return NULL;
    p += bestlen;
    d = scalars[best];
  }
  while (*p) {
    int64_t n;
    if (eat(&p, ".vec(")) {
      if (!eat_int(&p, &n) || !eat(&p, ")") || n < 1 || n > 1024) return NULL;
      if (d->kind == DTK_SCALAR ? d->count != 1 : d->v != 1) return NULL;
      d = dt_vec(d, (int)n);
    } else if (eat(&p, ".ptr(")) {
      if (d->kind != DTK_SCALAR || !eat_int(&p, &n)) return NULL;
      AddrSpace as = AS_GLOBAL;
      if (eat(&p, ", AddrSpace.")) {
        if (eat(&p, "GLOBAL")) as = AS_GLOBAL;
        else if (eat(&p, "LOCAL")) as = AS_LOCAL;
        else if (eat(&p, "REG")) as = AS_REG;
        else return NULL;
      }
      if (!eat(&p, ")")) return NULL;
      d = dt_ptr(d, n, as);
    } else return NULL;
  }
  return d;
}

bool dt_lt(const DType *a, const DType *b) {
  if (a->priority != b->priority) return a->priority < b->priority;
  if (a->itemsize != b->itemsize) return a->itemsize < b->itemsize;
  int c = strcmp(a->name, b->name);
  if (c) return c < 0;
  return a->count < b->count;
}
