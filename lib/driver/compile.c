/* compile.c: the pieces both compile paths share (driver_int.h). */
#include "driver_int.h"
#include "../runtime/runtime.h"
#include "../runtime/gpu.h"
#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>


/* ---------------------------------------------------------------- compile -t c */


/* a multi-device BUFFER has one allocation per shard: slots are keyed by (buffer, shard), a
 * single-device buffer's shard is -1, and a multi-device buffer read without a shard (a replicated
 * one, as the runtime reads it) is shard 0 */
static bool multi_dev(UOp *buf) {
  if (buf->op == OP_BUFFER_VIEW && buf->nsrc) buf = u_buf_uop(buf->src[0]);
  const Value *d = u_device(buf);
  return d && d->kind == V_TUPLE;
}
static int norm_shard(UOp *buf, int shard) { return multi_dev(buf) ? (shard < 0 ? 0 : shard) : -1; }
static UOp *slot_key(UOp *buf, int shard) { return uop2(OP_NOOP, dt_void, buf, uop_const_int(dt_int, shard), v_str("tgc.cmslot")); }

int cm_find(CModel *m, UOp *buf) { return cm_find_shard(m, buf, -1); }
int cm_find_shard(CModel *m, UOp *buf, int shard) {
  UOp *key = slot_key(buf, norm_shard(buf, shard));
  void *v = map_get(&m->slot, key, uop_h(key), NULL);
  return v ? (int)(intptr_t)v - 1 : -1;
}
int cm_add(CModel *m, UOp *buf) { return cm_add_shard(m, buf, -1); }
int cm_add_shard(CModel *m, UOp *buf, int shard) {
  shard = norm_shard(buf, shard);
  if (m->n == m->cap) {
    int nc = m->cap ? m->cap * 2 : 32;
    CBuf *nb = arena_alloc(ga(), sizeof *nb * (size_t)nc);
    if (m->n) memcpy(nb, m->b, sizeof *nb * (size_t)m->n);
    m->b = nb;
    m->cap = nc;
  }
  CBuf *c = &m->b[m->n];
  memset(c, 0, sizeof *c);
  c->buf = buf;
  c->shard = shard;
  c->input = c->base = c->copy_of = -1;
  UOp *key = slot_key(buf, shard);
  map_put(&m->slot, key, uop_h(key), (void *)(intptr_t)(m->n + 1));
  return m->n++;
}
int cm_slot(CModel *m, UOp *buf) { return cm_slot_shard(m, buf, -1); }
/* a BUFFER_VIEW's size or offset; a symbolic one (a view of a shrink by a bound variable) takes
 * the schedule's variable values: the bundle runs the schedule tinygrad made for those values */
static int64_t bv_arg(CModel *m, const Value *v) { return vv_value(v, &m->vv); }
/* the slot of (buf, shard), registering it (and a BUFFER_VIEW's base first) */
int cm_slot_shard(CModel *m, UOp *buf, int shard) {
  shard = norm_shard(buf, shard);
  int k = cm_find_shard(m, buf, shard);
  if (k >= 0) return k;
  if (buf->op == OP_BUFFER_VIEW && buf->arg->kind == V_TUPLE && buf->arg->n == 2) {
    UOp *base = u_buf_uop(buf->src[0]);
    int bshard = shard;
    /* a view of MSTACK(a, b, ...) is, on each shard, a view of that shard's buffer */
    if (base->op == OP_MSTACK && base->nsrc) { base = u_buf_uop(base->src[shard > 0 && shard < base->nsrc ? shard : 0]); bshard = -1; }
    int bs = cm_slot_shard(m, base, bshard);
    k = cm_add_shard(m, buf, shard);
    m->b[k].base = bs;
    m->b[k].off = (size_t)bv_arg(m, buf->arg->items[1]) * (size_t)dt_base(base->dtype)->itemsize;
    m->b[k].nbytes = (size_t)bv_arg(m, buf->arg->items[0]) * (size_t)dt_base(buf->dtype)->itemsize;
    return k;
  }
  if (buf->op != OP_BUFFER || buf->arg->kind != V_INT) tg_fail(TG_EDEVICE, "compile: a %s is not a buffer", op_names[buf->op]);
  k = cm_add_shard(m, buf, shard);
  m->b[k].nbytes = (size_t)buf->arg->i * (size_t)dt_base(buf->dtype)->itemsize;
  for (int i = 0; i < m->ninputs; i++) {
    if (m->inputs[i] != buf) continue;
    /* an input's first shard is the caller's pointer; every other shard starts as a copy of it (the
     * runtime fills each shard with the BUFFER's data) */
    if (shard <= 0) m->b[k].input = i;
    else m->b[k].copy_of = cm_slot_shard(m, buf, 0);
  }
  return k;
}

/* the model's buffers: inputs are the graph's BUFFER rows in row order, then every buffer a
 * schedule item touches; a BUFFER_VIEW's output aliases its base at the view's byte offset */
void cm_build(CModel *m, Arena *a, const Graph *g, const Schedule *s) {
  map_init(&m->slot, a);
  m->g = g;
  var_vals(s, NULL, &m->vv);
  m->inputs = arena_alloc(a, sizeof(UOp *) * (size_t)(g->nrows + 1));
  for (int i = 0; i < g->nrows; i++) if (g->rows[i] && g->rows[i]->op == OP_BUFFER) m->inputs[m->ninputs++] = g->rows[i];
  for (int i = 0; i < m->ninputs; i++) cm_slot(m, m->inputs[i]);
  for (int i = 0; i < s->nitems; i++) {
    const SchedItem *si = &s->items[i];
    if (si->ast->op == OP_BUFFER_VIEW && si->nbufs >= 2 && si->bufs[0].buf->op == OP_BUFFER && cm_find_shard(m, si->bufs[0].buf, si->bufs[0].shard) < 0) {
      int bs = cm_slot_shard(m, si->bufs[1].buf, si->bufs[1].shard), k = cm_add_shard(m, si->bufs[0].buf, si->bufs[0].shard);
      m->b[k].base = bs;
      m->b[k].alias_at_item = true;
      m->b[k].off = (size_t)si->ast->arg->items[1]->i * (size_t)dt_base(si->bufs[1].buf->dtype)->itemsize;
      m->b[k].nbytes = (size_t)si->bufs[0].buf->arg->i * (size_t)dt_base(si->bufs[0].buf->dtype)->itemsize;
    }
    for (int j = 0; j < si->nbufs; j++) cm_slot_shard(m, si->bufs[j].buf, si->bufs[j].shard);
  }
}


/* "void E_4(float* restrict data0, ...)" from a rendered function */
const char *prototype(const char *fn) {
  const char *brace = strchr(fn, '{');
  size_t n = brace ? (size_t)(brace - fn) : strlen(fn);
  while (n && (fn[n - 1] == ' ' || fn[n - 1] == '\n')) n--;
  char *p = arena_alloc(ga(), n + 1);
  memcpy(p, fn, n);
  return p;
}

SB *manifest; /* when set, write_or_fail appends "SHA256  NAME" lines (the sha256sum -c format) */
void write_or_fail(const char *dir, const char *name, const char *text) {
  char *path = arena_printf(ga(), "%s/%s", dir, name);
  if (!write_file_atomic(path, text, strlen(text))) tg_fail(TG_EINPUT, "%s: cannot write: %s", path, strerror(errno));
  if (manifest) {
    char hex[65];
    sha256_hex(text, strlen(text), hex);
    sb_printf(manifest, "%s  %s\n", hex, name);
  }
}
/* a kernel's rendered source, ending in a newline */
const char *kernel_source(Arena *a, const Program *p, const RenderBackend *be) {
  const char *src = render_kernel(a, p, be);
  size_t l = strlen(src);
  return l && src[l - 1] != '\n' ? arena_printf(a, "%s\n", src) : src;
}
/* the file name of p's source src (kernel_source): the function name, the first 6 hex digits of
 * its SHA-256, the extension ("r_16_4.3fa2c1.c"), so equal names mean equal contents across builds */
const char *kernel_file(Arena *a, const Program *p, const RenderBackend *be, const char *src) {
  char hex[65];
  sha256_hex(src, strlen(src), hex);
  return arena_printf(a, "%s.%.6s%s", p->fname, hex, be->ext);
}

/* remove a directory holding only files (a previous or half-written output) */
void remove_flat_dir(const char *dir) {
  DIR *d = opendir(dir);
  if (!d) return;
  struct dirent *e;
  while ((e = readdir(d))) {
    if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
    unlink(arena_printf(ga(), "%s/%s", dir, e->d_name));
  }
  closedir(d);
  rmdir(dir);
}

const char gather_src[] =
  "/* dst[i] = the element of src that view chain v (outermost last) maps i to; 0 where masked */\n"
  "static void tgc_gather(unsigned char *dst, const unsigned char *src, size_t srcbytes, size_t n, size_t isz,\n"
  "                       int nviews, const long long *const *v) {\n"
  "  for (size_t i = 0; i < n; i++) {\n"
  "    long long off = (long long)i;\n"
  "    int valid = 1;\n"
  "    for (int vi = nviews - 1; vi >= 0 && valid; vi--) {\n"
  "      /* a view: ndim, offset, has_mask, shape[ndim], strides[ndim], mask[2*ndim] */\n"
  "      int nd = (int)v[vi][0];\n"
  "      const long long *sh = v[vi] + 3, *st = sh + nd, *mk = v[vi][2] ? st + nd : 0;\n"
  "      long long rem = off, acc = v[vi][1], idx[64];\n"
  "      for (int k = nd - 1; k >= 0; k--) { idx[k] = sh[k] ? rem % sh[k] : 0; rem = sh[k] ? rem / sh[k] : 0; }\n"
  "      for (int k = 0; k < nd; k++) {\n"
  "        if (mk && (idx[k] < mk[2 * k] || idx[k] >= mk[2 * k + 1])) valid = 0;\n"
  "        acc += idx[k] * st[k];\n"
  "      }\n"
  "      off = acc;\n"
  "    }\n"
  "    if (valid && off >= 0 && (size_t)(off + 1) * isz <= srcbytes) memcpy(dst + i * isz, src + (size_t)off * isz, isz);\n"
  "    else memset(dst + i * isz, 0, isz);\n"
  "  }\n"
  "}\n\n";

/* move the finished temporary directory tmp to dir; an existing dir is replaced only when it is
 * empty or a previous tgc compile output (has schedule.json). Fails with TG_EINPUT, removing tmp. */
_Noreturn void abandon_output_dir(const char *tmp) {
  char msg[sizeof tg_last_error.msg];
  int code = tg_last_error.code;
  snprintf(msg, sizeof msg, "%s", tg_last_error.msg);  /* remove_flat_dir may fail in turn */
  remove_flat_dir(tmp);
  tg_fail(code, "%s", msg);
}
void install_output_dir(Arena *a, const char *tmp, const char *dir) {
  struct stat sb;
  if (stat(dir, &sb) == 0) {
    char *old = arena_printf(a, "%s/schedule.json", dir);
    DIR *d = S_ISDIR(sb.st_mode) ? opendir(dir) : NULL;
    int entries = 0;
    struct dirent *e;
    while (d && (e = readdir(d))) entries += strcmp(e->d_name, ".") && strcmp(e->d_name, "..");
    if (d) closedir(d);
    if (!S_ISDIR(sb.st_mode) || (entries && access(old, F_OK) != 0)) {
      remove_flat_dir(tmp);
      tg_fail(TG_EINPUT, "%s exists and is not a tgc compile output; not replacing it", dir);
    }
    char *aside = arena_printf(a, "%s.old.%d", dir, (int)getpid());
    if (rename(dir, aside) != 0) { remove_flat_dir(tmp); tg_fail(TG_EINPUT, "%s: cannot replace: %s", dir, strerror(errno)); }
    if (rename(tmp, dir) != 0) { int er = errno; rename(aside, dir); remove_flat_dir(tmp); tg_fail(TG_EINPUT, "%s: cannot create: %s", dir, strerror(er)); }
    remove_flat_dir(aside);
  } else if (rename(tmp, dir) != 0) {
    int er = errno;
    remove_flat_dir(tmp);
    tg_fail(TG_EINPUT, "%s: cannot create: %s", dir, strerror(er));
  }
}

