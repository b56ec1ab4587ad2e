/* fileio.c: whole-file reads (a path or "-" for stdin), atomic writes (a temporary name in the
 * same directory, fsync, rename, so a reader never sees half a file), strict base64 (standard
 * alphabet, padded, no whitespace: anything else is an error, never skipped), and .npy files
 * (format versions 1-3, little-endian C-order arrays of tinygrad's dtypes). */
#include "graph.h"
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* buf's first len bytes in a (len + 1 bytes); when the arena fails, buf is freed before the error goes on */
static char *arena_copy_or_free(Arena *a, char *buf, size_t len) {
  TgTry t;
  if (TG_TRY(t)) {
    char *out = arena_alloc(a, len + 1);
    tg_try_end(&t);
    memcpy(out, buf, len);
    return out;
  }
  free(buf);
  tg_rethrow();
}
/* a regular file is read straight into a buffer of its size in a; a pipe (or stdin) into a
 * growing malloc buffer that is then copied */
static char *read_regular(Arena *a, FILE *f, size_t size, size_t *n) {
  char *out = arena_alloc_raw(a, size + 1);
  size_t len = 0;
  while (len < size) {
    size_t k = fread(out + len, 1, size - len, f);
    if (k == 0) break;
    len += k;
  }
  int err = ferror(f) ? (errno ? errno : EIO) : 0;
  if (!err && len == size && fgetc(f) != EOF) err = EAGAIN; /* it grew while being read */
  fclose(f);
  if (err) { errno = err; return NULL; }
  out[len] = 0;
  if (n) *n = len;
  return out;
}
char *read_file(Arena *a, const char *path, size_t *n) {
  FILE *f = strcmp(path, "-") == 0 ? stdin : fopen(path, "rb");
  if (!f) return NULL;
  struct stat sb;
  if (f != stdin && fstat(fileno(f), &sb) == 0 && S_ISREG(sb.st_mode)) {
    TgTry t; /* the arena's out-of-memory error closes the file first */
    if (TG_TRY(t)) {
      char *out = read_regular(a, f, (size_t)sb.st_size, n);
      tg_try_end(&t);
      return out;
    }
    fclose(f);
    tg_rethrow();
  }
  size_t cap = 1 << 16, len = 0;
  char *buf = malloc(cap);
  if (!buf) { if (f != stdin) fclose(f); errno = ENOMEM; return NULL; }
  for (;;) {
    if (len + 1 >= cap) {
      char *nb = realloc(buf, cap * 2);
      if (!nb) { free(buf); if (f != stdin) fclose(f); errno = ENOMEM; return NULL; }
      buf = nb; cap *= 2;
    }
    size_t k = fread(buf + len, 1, cap - len - 1, f);
    len += k;
    if (k == 0) break;
  }
  int err = ferror(f) ? (errno ? errno : EIO) : 0;
  if (f != stdin) fclose(f);
  if (err) { free(buf); errno = err; return NULL; }
  char *out = arena_copy_or_free(a, buf, len);
  out[len] = 0;
  free(buf);
  if (n) *n = len;
  return out;
}

static bool write_all(int fd, const char *p, size_t left) {
  while (left) {
    ssize_t w = write(fd, p, left);
    if (w < 0) { if (errno == EINTR) continue; return false; }
    p += w; left -= (size_t)w;
  }
  return true;
}
/* Only a regular file (or a new name) is replaced by rename: a device, FIFO or socket
 * (/dev/null, /dev/stdout, /dev/full) is written in place, else the rename would replace the
 * device node itself. A symlink is followed, so the file it names is replaced, not the link. */
bool write_file_atomic(const char *path, const void *data, size_t n) {
  struct stat sb;
  if (stat(path, &sb) == 0 && !S_ISREG(sb.st_mode)) {
    if (S_ISDIR(sb.st_mode)) { errno = EISDIR; return false; }
    int fd = open(path, O_WRONLY | O_TRUNC);
    if (fd < 0) return false;
    if (!write_all(fd, data, n)) { int e = errno; close(fd); errno = e; return false; }
    return close(fd) == 0;
  }
  char *real = NULL;
  if (lstat(path, &sb) == 0 && S_ISLNK(sb.st_mode)) real = realpath(path, NULL); /* NULL (dangling): replace the link */
  const char *target = real ? real : path;
  char tmp[4096];
  if (snprintf(tmp, sizeof tmp, "%s.tmp.%ld", target, (long)getpid()) >= (int)sizeof tmp) {
    free(real); errno = ENAMETOOLONG; return false;
  }
  int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_EXCL, 0644);
  if (fd < 0) { int e = errno; free(real); errno = e; return false; }
  bool ok = write_all(fd, data, n);
  if (!ok) { int e = errno; close(fd); unlink(tmp); free(real); errno = e; return false; }
  if (fsync(fd) != 0 || close(fd) != 0) { int e = errno; unlink(tmp); free(real); errno = e; return false; }
  if (rename(tmp, target) != 0) { int e = errno; unlink(tmp); free(real); errno = e; return false; }
  free(real);
  return true;
}

/* ---- base64 ---- */
static const char b64a[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
static int b64v(unsigned char c) {
  if (c >= 'A' && c <= 'Z') return c - 'A';
  if (c >= 'a' && c <= 'z') return c - 'a' + 26;
  if (c >= '0' && c <= '9') return c - '0' + 52;
  if (c == '+') return 62;
  if (c == '/') return 63;
  return -1;
}
char *b64_encode(Arena *a, const void *p, size_t n) {
  const unsigned char *s = p;
  char *o = arena_alloc(a, (n + 2) / 3 * 4 + 1), *q = o;
  for (size_t i = 0; i < n; i += 3) {
    uint32_t v = (uint32_t)s[i] << 16 | (i + 1 < n ? (uint32_t)s[i + 1] << 8 : 0) | (i + 2 < n ? s[i + 2] : 0);
    *q++ = b64a[v >> 18 & 63];
    *q++ = b64a[v >> 12 & 63];
    *q++ = i + 1 < n ? b64a[v >> 6 & 63] : '=';
    *q++ = i + 2 < n ? b64a[v & 63] : '=';
  }
  *q = 0;
  return o;
}
void *b64_decode(Arena *a, const char *s, size_t *n) {
  size_t len = strlen(s);
  if (len % 4) return NULL;
  size_t pad = len && s[len - 1] == '=' ? (len > 1 && s[len - 2] == '=' ? 2 : 1) : 0;
  size_t out = len / 4 * 3 - pad;
  unsigned char *o = arena_alloc(a, out + 1);
  size_t k = 0;
  for (size_t i = 0; i < len; i += 4) {
    int v[4];
    for (int j = 0; j < 4; j++) {
      bool padpos = i + 4 == len && j >= 4 - (int)pad;
      v[j] = padpos ? 0 : b64v((unsigned char)s[i + j]);
      if (v[j] < 0) return NULL;
    }
    uint32_t w = (uint32_t)v[0] << 18 | (uint32_t)v[1] << 12 | (uint32_t)v[2] << 6 | (uint32_t)v[3];
    if (i + 4 == len && ((pad == 1 && (w & 0xff)) || (pad == 2 && (w & 0xffff)))) return NULL; /* stray bits */
    o[k++] = (unsigned char)(w >> 16);
    if (k < out) o[k++] = (unsigned char)(w >> 8);
    if (k < out) o[k++] = (unsigned char)w;
  }
  if (n) *n = out;
  return o;
}

/* ---- .npy ---- */
typedef struct { const char *descr; Scalar sc; } NpyType;
static const NpyType npy_types[] = {
  {"|b1", SC_BOOL}, {"|i1", SC_CHAR}, {"|u1", SC_UCHAR}, {"<i2", SC_SHORT}, {"<u2", SC_USHORT},
  {"<i4", SC_INT}, {"<u4", SC_UINT}, {"<i8", SC_LONG}, {"<u8", SC_ULONG}, {"<f2", SC_HALF},
  {"<f4", SC_FLOAT}, {"<f8", SC_DOUBLE},
  /* no numpy dtype: ml_dtypes-style raw void (bfloat16 as <V2; fp8 as |V1 reads back as fp8e4m3) */
  {"<V2", SC_BFLOAT16}, {"|V1", SC_FP8E4M3}, {"|V1", SC_FP8E5M2},
};

bool npy_write(const char *path, const DType *dt, int ndim, const int64_t *shape, const void *data, size_t nbytes) {
  const char *descr = NULL;
  for (size_t i = 0; i < sizeof npy_types / sizeof *npy_types; i++)
    if (dt->kind == DTK_SCALAR && dt->count == 1 && npy_types[i].sc == dt->scalar) { descr = npy_types[i].descr; break; }
  if (!descr) { errno = EINVAL; return false; }
  if (ndim > TG_MAX_DIMS) { errno = EINVAL; return false; }
  char shp[TG_MAX_DIMS * 24 + 8];
  size_t k = 0;
  shp[0] = 0;
  for (int i = 0; i < ndim && k < sizeof shp - 32; i++)
    k += (size_t)snprintf(shp + k, sizeof shp - k, i ? ", %lld" : "%lld", (long long)shape[i]);
  if (ndim == 1) snprintf(shp + k, sizeof shp - k, ",");
  char hdr[sizeof shp + 128];
  int hl = snprintf(hdr, sizeof hdr, "{'descr': '%s', 'fortran_order': False, 'shape': (%s), }", descr, shp);
  int total = 10 + hl + 1;
  int padded = (total + 63) / 64 * 64;
  size_t fl = (size_t)padded + nbytes;
  unsigned char *buf = malloc(fl ? fl : 1);
  if (!buf) { errno = ENOMEM; return false; }
  memcpy(buf, "\x93NUMPY\x01\x00", 8);
  int hlen = padded - 10;
  buf[8] = (unsigned char)(hlen & 0xff);
  buf[9] = (unsigned char)(hlen >> 8);
  memcpy(buf + 10, hdr, (size_t)hl);
  memset(buf + 10 + hl, ' ', (size_t)(padded - 10 - hl - 1));
  buf[padded - 1] = '\n';
  if (nbytes) memcpy(buf + padded, data, nbytes);
  bool ok = write_file_atomic(path, buf, fl);
  free(buf);
  return ok;
}

/* the value of key `key` in the header dict text (a Python literal) */
static const char *npy_key(const char *h, const char *key) {
  char pat[32];
  snprintf(pat, sizeof pat, "'%s':", key);
  const char *p = strstr(h, pat);
  if (!p) return NULL;
  p += strlen(pat);
  while (*p == ' ') p++;
  return p;
}
void *npy_read(Arena *a, const char *path, const DType **dt, int *ndim, int64_t *shape, size_t *nbytes) {
  size_t n;
  ArenaMark mk = arena_mark(&uctx->scratch);
  unsigned char *b = (unsigned char *)read_file(&uctx->scratch, path, &n);
  if (!b) tg_fail(TG_EINPUT, "%s: cannot read: %s", path, strerror(errno));
  if (n < 10 || memcmp(b, "\x93NUMPY", 6) != 0) tg_fail(TG_EINPUT, "%s: not an .npy file", path);
  int major = b[6];
  size_t hl, off;
  if (major == 1) { hl = b[8] | (size_t)b[9] << 8; off = 10; }
  else if (major == 2 || major == 3) {
    if (n < 12) tg_fail(TG_EINPUT, "%s: truncated .npy header", path);
    hl = b[8] | (size_t)b[9] << 8 | (size_t)b[10] << 16 | (size_t)b[11] << 24; off = 12;
  } else tg_fail(TG_EINPUT, "%s: unsupported .npy version %d", path, major);
  if (off + hl > n) tg_fail(TG_EINPUT, "%s: truncated .npy header", path);
  char *h = arena_alloc(&uctx->scratch, hl + 1);
  memcpy(h, b + off, hl);
  h[hl] = 0;
  const char *d = npy_key(h, "descr"), *fo = npy_key(h, "fortran_order"), *sh = npy_key(h, "shape");
  if (!d || !fo || !sh || *d != '\'') tg_fail(TG_EINPUT, "%s: malformed .npy header", path);
  const DType *t = NULL;
  for (size_t i = 0; i < sizeof npy_types / sizeof *npy_types && !t; i++) {
    size_t l = strlen(npy_types[i].descr);
    if (strncmp(d + 1, npy_types[i].descr, l) == 0 && d[1 + l] == '\'') t = dt_scalar(npy_types[i].sc);
  }
  if (!t) {
    const char *e = strchr(d + 1, '\'');
    tg_fail(TG_EINPUT, "%s: unsupported .npy dtype %.*s", path, e ? (int)(e - d + 1) : 8, d);
  }
  if (strncmp(fo, "False", 5) != 0) tg_fail(TG_EINPUT, "%s: Fortran-order .npy arrays are not supported", path);
  if (*sh != '(') tg_fail(TG_EINPUT, "%s: malformed .npy shape", path);
  const char *p = sh + 1;
  int nd = 0;
  size_t count = 1;
  for (;;) {
    while (*p == ' ' || *p == ',') p++;
    if (*p == ')') break;
    char *end;
    long long v = strtoll(p, &end, 10);
    if (end == p || v < 0) tg_fail(TG_EINPUT, "%s: malformed .npy shape", path);
    if (nd >= TG_MAX_DIMS) tg_fail(TG_EINPUT, "%s: .npy array of more than %d dims", path, TG_MAX_DIMS);
    shape[nd++] = v;
    if (v && count > SIZE_MAX / (size_t)v) tg_fail(TG_EINPUT, "%s: .npy shape too large", path);
    count *= (size_t)v;
    p = end;
  }
  size_t want = count * (size_t)t->itemsize;
  if (n - off - hl != want)
    tg_fail(TG_EINPUT, "%s: .npy holds %zu data bytes, its shape needs %zu", path, n - off - hl, want);
  void *out = arena_alloc(a, want + 1);
  memcpy(out, b + off + hl, want);
  if (a != &uctx->scratch) arena_pop(&uctx->scratch, mk);
  *dt = t;
  *ndim = nd;
  if (nbytes) *nbytes = want;
  return out;
}
