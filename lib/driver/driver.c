/* driver.c: compile-to-directory and run-a-graph (driver.h has the overview).
 *
 * The AOT bundle is straight-line C generated from the schedule: every buffer of the schedule
 * gets a slot b[k] in tgc_model_run (a graph BUFFER row is the caller's input pointer, a
 * scheduler-made buffer is calloc'd, a BUFFER_VIEW is its base's pointer plus a byte offset),
 * items become kernel calls (prototypes taken from the rendered function headers, so they match
 * the definitions in the per-kernel files exactly), memmove (COPY) or pointer offsets
 * (BUFFER_VIEW), and each output is memcpy'd, or gathered through its ShapeTracker's views
 * (emitted as constant tables) when it is a view of a buffer, as rt_read does. Multi-device
 * schedules and symbolic output shapes are refused (TG_EDEVICE) by the bundle. */
#include "driver.h"
#include "../codegen/codegen.h"
#include "../render/render.h"
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

/* ---------------------------------------------------------------- a small string builder */
typedef struct Sb { Arena *a; char *s; size_t n, cap; } Sb;
static void sb_printf(Sb *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void sb_printf(Sb *b, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  int k = vsnprintf(NULL, 0, fmt, ap);
  va_end(ap);
  if (b->n + (size_t)k + 1 > b->cap) {
    size_t nc = (b->cap ? b->cap * 2 : 1024) + (size_t)k;
    char *ns = arena_alloc(b->a, nc);
    if (b->n) memcpy(ns, b->s, b->n);
    b->s = ns;
    b->cap = nc;
  }
  va_start(ap, fmt);
  vsnprintf(b->s + b->n, (size_t)k + 1, fmt, ap);
  va_end(ap);
  b->n += (size_t)k;
}
static const char *sb_str(Sb *b) { return b->s ? b->s : ""; }

/* ---------------------------------------------------------------- scheduling and inputs */
Schedule *driver_schedule(Graph *g) {
  uctx->opt = g->opt;
  if (g->max_unique >= uctx->next_unique) uctx->next_unique = g->max_unique + 1;
  return create_schedule(g->sink);
}

static const BufData *data_of(const Graph *g, UOp *buf) {
  for (int i = 0; i < g->ndata; i++) if (g->data[i].buf == buf) return &g->data[i];
  return NULL;
}
static int row_of(const Graph *g, UOp *u) {
  for (int i = 0; i < g->nrows; i++) if (g->rows[i] == u) return i;
  return -1;
}

void driver_set_inputs(Graph *g, int n, const DriverInput *in) {
  for (int i = 0; i < n; i++) {
    int64_t r = in[i].row;
    if (r < 0 || r >= g->nrows || !g->rows[r] || g->rows[r]->op != OP_BUFFER)
      tg_fail(TG_EINPUT, "--input %lld=%s: row %lld is not a BUFFER of %s", (long long)r, in[i].path, (long long)r, g->path);
    UOp *b = g->rows[r];
    const DType *dt;
    int ndim;
    int64_t shape[32];
    size_t nbytes;
    void *data = npy_read(ga(), in[i].path, &dt, &ndim, shape, &nbytes);
    const DType *want = dt_base(b->dtype);
    if (dt->scalar != want->scalar || dt->itemsize != want->itemsize)
      tg_fail(TG_EINPUT, "%s: dtype %s, but BUFFER row %lld is %s", in[i].path, dt_repr(ga(), dt), (long long)r, dt_repr(ga(), want));
    size_t count = nbytes / (size_t)dt->itemsize;
    if (b->arg->kind != V_INT || (int64_t)count != b->arg->i)
      tg_fail(TG_EINPUT, "%s: %zu elements, but BUFFER row %lld has %lld", in[i].path, count, (long long)r, (long long)b->arg->i);
    BufData *d = (BufData *)data_of(g, b);
    if (!d) {
      BufData *nd = arena_alloc(ga(), sizeof *nd * (size_t)(g->ndata + 1));
      if (g->ndata) memcpy(nd, g->data, sizeof *nd * (size_t)g->ndata);
      d = &nd[g->ndata++];
      g->data = nd;
      d->buf = b;
    }
    d->bytes = data;
    d->nbytes = nbytes;
  }
}

/* the DEFINE_GLOBAL a LOAD/STORE address leads to (through VIEWs), or NULL */
static UOp *global_of(UOp *u) {
  while (u && u->op != OP_DEFINE_GLOBAL) u = u->nsrc ? u->src[0] : NULL;
  return u;
}

void driver_check_inputs(const Graph *g, const Schedule *s) {
  UMap graph_bufs, written;
  umap_init(&graph_bufs, ga());
  umap_init(&written, ga());
  for (int i = 0; i < g->nrows; i++) if (g->rows[i] && g->rows[i]->op == OP_BUFFER && !data_of(g, g->rows[i])) umap_put(&graph_bufs, g->rows[i], NULL);
  if (!graph_bufs.n) return;
#define CHECK_READ(B)                                                                                         \
  do {                                                                                                        \
    UOp *b_ = (B);                                                                                            \
    if (umap_has(&graph_bufs, b_) && !umap_has(&written, b_))                                                 \
      tg_fail(TG_EINPUT, "%s: BUFFER row %d has no data and no --input, but the schedule reads it", g->path, row_of(g, b_)); \
  } while (0)
  for (int i = 0; i < s->nitems; i++) {
    const SchedItem *si = &s->items[i];
    if (si->ast->op == OP_COPY && si->nbufs >= 2) { CHECK_READ(si->bufs[1].buf); umap_put(&written, si->bufs[0].buf, NULL); continue; }
    if (si->ast->op != OP_SINK) continue;
    UList tl = uop_toposort(si->ast, NULL, NULL);
    for (int k = 0; k < tl.n; k++) {
      if (tl.v[k]->op != OP_LOAD) continue;
      UOp *dg = global_of(tl.v[k]->src[0]);
      if (dg && dg->arg->kind == V_INT && dg->arg->i >= 0 && dg->arg->i < si->nbufs) CHECK_READ(si->bufs[dg->arg->i].buf);
    }
    for (int k = 0; k < tl.n; k++) {
      if (tl.v[k]->op != OP_STORE) continue;
      UOp *dg = global_of(tl.v[k]->src[0]);
      if (dg && dg->arg->kind == V_INT && dg->arg->i >= 0 && dg->arg->i < si->nbufs) umap_put(&written, si->bufs[dg->arg->i].buf, NULL);
    }
  }
  UOp *ss = s->sched_sink;
  for (int i = 0; ss && i < ss->nsrc; i++) {
    UOp *b = u_base(ss->src[i]);
    if (b->op == OP_ASSIGN) b = u_buf_uop(b);
    CHECK_READ(b);
  }
#undef CHECK_READ
}

/* ---------------------------------------------------------------- running */
/* the output's dtype, shape and byte size; fails on symbolic shapes */
static void out_shape(UOp *t, DriverOut *o) {
  SList sh = u_shape(t);
  if (sh.n > 32) tg_fail(TG_EDEVICE, "output of %d dimensions (at most 32)", sh.n);
  o->dtype = dt_base(t->dtype);
  o->ndim = sh.n;
  size_t n = 1;
  for (int k = 0; k < sh.n; k++) {
    if (!si_is_int(sh.v[k])) tg_fail(TG_EDEVICE, "output with a symbolic shape: not implemented yet");
    o->shape[k] = sh.v[k].c;
    n *= (size_t)sh.v[k].c;
  }
  o->nbytes = n * (size_t)o->dtype->itemsize;
}

/* run s with one of the runtimes: 0 CPU, 1 OpenCL, 2 CUDA */
static DriverRun *run_on(Graph *g, Schedule *s, int dev) {
  Runtime *rt = rt_new(g);
  DriverRun *r = arena_alloc(ga(), sizeof *r);
  TgTry t;
  if (TG_TRY(t)) {
    r->nkernels = dev == 1 ? rtcl_run_schedule(rt, s) : dev == 2 ? rtcu_run_schedule(rt, s) : rt_run_schedule(rt, s);
    UOp *ss = s->sched_sink;
    r->noutputs = ss->nsrc;
    r->outs = arena_alloc(ga(), sizeof *r->outs * (size_t)(ss->nsrc + 1));
    for (int i = 0; i < ss->nsrc; i++) {
      DriverOut *o = &r->outs[i];
      out_shape(ss->src[i], o);
      o->data = arena_alloc(ga(), o->nbytes + 16);
      size_t got = rt_read(rt, ss->src[i], -1, o->data, o->nbytes);
      if (got != o->nbytes) tg_fail(TG_EDEVICE, "output %d: read %zu of %zu bytes", i, got, o->nbytes);
    }
    tg_try_end(&t);
  } else {
    char msg[sizeof tg_last_error.msg];
    int code = tg_last_error.code;
    snprintf(msg, sizeof msg, "%s", tg_last_error.msg);
    rt_free(rt);
    tg_fail(code, "%s", msg);
  }
  rt_free(rt);
  return r;
}

DriverRun *driver_run_cpu(Graph *g, Schedule *s) { return run_on(g, s, 0); }

DriverRun *driver_run_device(Graph *g, Schedule *s, const char *device) {
  if (!strcmp(device, "cpu")) return run_on(g, s, 0);
  if (!strcmp(device, "opencl")) return run_on(g, s, 1);
  if (!strcmp(device, "cuda")) return run_on(g, s, 2);
  tg_fail(TG_EINPUT, "unknown device '%s'", device);
}

void driver_write_outputs(const DriverRun *r, const char *dir, int navoid, const char *const *avoid) {
  for (int i = 0; i < r->noutputs; i++) {
    char *path = arena_printf(ga(), "%s/out%d.npy", dir, i);
    char rp[4096], ra[4096];
    for (int k = 0; k < navoid; k++) {
      bool same = strcmp(path, avoid[k]) == 0;
      if (!same && realpath(path, rp) && realpath(avoid[k], ra)) same = strcmp(rp, ra) == 0;
      if (same) tg_fail(TG_EINPUT, "%s: would overwrite the input file %s", path, avoid[k]);
    }
  }
  struct stat sb;
  if (r->noutputs && stat(dir, &sb) != 0 && mkdir(dir, 0755) != 0) tg_fail(TG_EINPUT, "%s: cannot create: %s", dir, strerror(errno));
  for (int i = 0; i < r->noutputs; i++) {
    const DriverOut *o = &r->outs[i];
    char *path = arena_printf(ga(), "%s/out%d.npy", dir, i);
    if (!npy_write(path, o->dtype, o->ndim, o->shape, o->data, o->nbytes)) tg_fail(TG_EINPUT, "%s: cannot write: %s", path, strerror(errno));
  }
}

/* ---------------------------------------------------------------- comparing */
static double num_at(const DType *dt, const void *p, size_t i) {
  const unsigned char *b = p;
  switch (dt->scalar) {
  case SC_BOOL: return b[i] != 0;
  case SC_CHAR: return ((const int8_t *)p)[i];
  case SC_UCHAR: return b[i];
  case SC_SHORT: return ((const int16_t *)p)[i];
  case SC_USHORT: return ((const uint16_t *)p)[i];
  case SC_INT: return ((const int32_t *)p)[i];
  case SC_UINT: return ((const uint32_t *)p)[i];
  case SC_LONG: return (double)((const int64_t *)p)[i];
  case SC_ULONG: return (double)((const uint64_t *)p)[i];
  case SC_HALF: return render_h2f(((const uint16_t *)p)[i]);
  case SC_BFLOAT16: return render_bf2f(((const uint16_t *)p)[i]);
  case SC_FLOAT: return ((const float *)p)[i];
  case SC_DOUBLE: return ((const double *)p)[i];
  default: return NAN;
  }
}

bool driver_close(const DType *dt, const void *got, const void *want, size_t n, char *why, size_t wn) {
  bool f16 = dt->scalar == SC_HALF || dt->scalar == SC_BFLOAT16, isf = dt_is_float(dt);
  double rtol = f16 ? 1e-2 : 1e-4, atol = f16 ? 1e-2 : 1e-5, worst = 0;
  size_t bad = 0, wi = 0;
  for (size_t i = 0; i < n; i++) {
    double a = num_at(dt, got, i), b = num_at(dt, want, i), excess;
    if (isf) {
      if ((isnan(a) && isnan(b)) || a == b) continue;
      excess = (isnan(a) || isnan(b)) ? INFINITY : fabs(a - b) - (atol + rtol * fabs(b));
      if (excess <= 0) continue;
    } else {
      size_t isz = (size_t)dt->itemsize;
      if (memcmp((const char *)got + i * isz, (const char *)want + i * isz, isz) == 0) continue;
      excess = fabs(a - b);
      if (isnan(excess) || excess == 0) excess = INFINITY;
    }
    if (!bad++ || excess > worst) { worst = excess; wi = i; }
  }
  if (!bad) return true;
  if (why) snprintf(why, wn, "%zu of %zu elements differ; worst element %zu: got %.9g, want %.9g", bad, n, wi, num_at(dt, got, wi), num_at(dt, want, wi));
  return false;
}

bool driver_compare(const DriverRun *r, const Expect *x, char *why, size_t wn) {
  if (r->noutputs != x->noutputs) { snprintf(why, wn, "%d outputs, the expect file has %d", r->noutputs, x->noutputs); return false; }
  for (int i = 0; i < x->noutputs; i++) {
    const ExpectOut *e = &x->outputs[i];
    const DriverOut *o = &r->outs[e->index >= 0 && e->index < r->noutputs ? e->index : i];
    if (o->dtype->scalar != e->dtype->scalar) { snprintf(why, wn, "output %d: dtype %s, want %s", i, dt_repr(ga(), o->dtype), dt_repr(ga(), e->dtype)); return false; }
    if (o->nbytes != e->nbytes) { snprintf(why, wn, "output %d: %zu bytes, want %zu", i, o->nbytes, e->nbytes); return false; }
    char w[400] = "";
    if (!driver_close(o->dtype, o->data, e->bytes, o->nbytes / (size_t)o->dtype->itemsize, w, sizeof w)) {
      snprintf(why, wn, "output %d: %s", i, w);
      return false;
    }
  }
  return true;
}

/* ---------------------------------------------------------------- compile -t c */
typedef struct CBuf {
  UOp *buf;
  int input;          /* index into inputs[], or -1 */
  int base;           /* alias of slot base at byte offset off (BUFFER_VIEW), or -1 */
  size_t off, nbytes;
  bool alias_at_item; /* aliased when its BUFFER_VIEW item runs (else at the start) */
} CBuf;
typedef struct CModel { Map slot; int n, cap; CBuf *b; const Graph *g; int ninputs; UOp **inputs; } CModel;

static int cm_find(CModel *m, UOp *buf) {
  void *v = map_get(&m->slot, buf, uop_h(buf), NULL);
  return v ? (int)(intptr_t)v - 1 : -1;
}
static int cm_add(CModel *m, UOp *buf) {
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
  c->input = c->base = -1;
  map_put(&m->slot, buf, uop_h(buf), (void *)(intptr_t)(m->n + 1));
  return m->n++;
}
/* the slot of buf, registering it (and a BUFFER_VIEW's base first) */
static int cm_slot(CModel *m, UOp *buf) {
  int k = cm_find(m, buf);
  if (k >= 0) return k;
  const Value *d = u_device(buf);
  if (d && d->kind == V_TUPLE) tg_fail(TG_EDEVICE, "compile: multi-device buffers in the C bundle: not implemented yet");
  if (buf->op == OP_BUFFER_VIEW && buf->arg->kind == V_TUPLE && buf->arg->n == 2) {
    UOp *base = u_buf_uop(buf->src[0]);
    int bs = cm_slot(m, base);
    k = cm_add(m, buf);
    m->b[k].base = bs;
    m->b[k].off = (size_t)buf->arg->items[1]->i * (size_t)dt_base(base->dtype)->itemsize;
    m->b[k].nbytes = (size_t)buf->arg->items[0]->i * (size_t)dt_base(buf->dtype)->itemsize;
    return k;
  }
  if (buf->op != OP_BUFFER || buf->arg->kind != V_INT) tg_fail(TG_EDEVICE, "compile: a %s is not a buffer", op_names[buf->op]);
  k = cm_add(m, buf);
  m->b[k].nbytes = (size_t)buf->arg->i * (size_t)dt_base(buf->dtype)->itemsize;
  for (int i = 0; i < m->ninputs; i++) if (m->inputs[i] == buf) m->b[k].input = i;
  return k;
}

/* the model's buffers: inputs are the graph's BUFFER rows in row order, then every buffer a
 * schedule item touches; a BUFFER_VIEW's output aliases its base at the view's byte offset */
static void cm_build(CModel *m, Arena *a, const Graph *g, const Schedule *s) {
  map_init(&m->slot, a);
  m->g = g;
  m->inputs = arena_alloc(a, sizeof(UOp *) * (size_t)(g->nrows + 1));
  for (int i = 0; i < g->nrows; i++) if (g->rows[i] && g->rows[i]->op == OP_BUFFER) m->inputs[m->ninputs++] = g->rows[i];
  for (int i = 0; i < m->ninputs; i++) cm_slot(m, m->inputs[i]);
  for (int i = 0; i < s->nitems; i++) {
    const SchedItem *si = &s->items[i];
    if (si->ast->op == OP_BUFFER_VIEW && si->nbufs >= 2 && si->bufs[0].buf->op == OP_BUFFER && cm_find(m, si->bufs[0].buf) < 0) {
      int bs = cm_slot(m, si->bufs[1].buf), k = cm_add(m, si->bufs[0].buf);
      m->b[k].base = bs;
      m->b[k].alias_at_item = true;
      m->b[k].off = (size_t)si->ast->arg->items[1]->i * (size_t)dt_base(si->bufs[1].buf->dtype)->itemsize;
      m->b[k].nbytes = (size_t)si->bufs[0].buf->arg->i * (size_t)dt_base(si->bufs[0].buf->dtype)->itemsize;
    }
    for (int j = 0; j < si->nbufs; j++) cm_slot(m, si->bufs[j].buf);
  }
}


/* "void E_4(float* restrict data0, ...)" from a rendered function */
static const char *prototype(const char *fn) {
  const char *brace = strchr(fn, '{');
  size_t n = brace ? (size_t)(brace - fn) : strlen(fn);
  while (n && (fn[n - 1] == ' ' || fn[n - 1] == '\n')) n--;
  char *p = arena_alloc(ga(), n + 1);
  memcpy(p, fn, n);
  return p;
}

static Sb *manifest; /* when set, write_or_fail appends "SHA256  NAME" lines (the sha256sum -c format) */
static void write_or_fail(const char *dir, const char *name, const char *text) {
  char *path = arena_printf(ga(), "%s/%s", dir, name);
  if (!write_file_atomic(path, text, strlen(text))) tg_fail(TG_EINPUT, "%s: cannot write: %s", path, strerror(errno));
  if (manifest) {
    char hex[65];
    sha256_hex(text, strlen(text), hex);
    sb_printf(manifest, "%s  %s\n", hex, name);
  }
}
/* a kernel's rendered source, ending in a newline */
static const char *kernel_source(Arena *a, const Program *p, const RenderBackend *be) {
  const char *src = render_kernel(a, p, be);
  size_t l = strlen(src);
  return l && src[l - 1] != '\n' ? arena_printf(a, "%s\n", src) : src;
}
/* its file name: the function name, the first 6 hex digits of the source's SHA-256, the extension
 * ("r_16_4.3fa2c1.c"), so equal names mean equal contents across builds */
static const char *kernel_file(Arena *a, const Program *p, const RenderBackend *be) {
  const char *src = kernel_source(a, p, be);
  char hex[65];
  sha256_hex(src, strlen(src), hex);
  return arena_printf(a, "%s.%.6s%s", p->fname, hex, be->ext);
}

/* remove a directory holding only files (a previous or half-written output) */
static void remove_flat_dir(const char *dir) {
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

static const char gather_src[] =
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
static void install_output_dir(Arena *a, const char *tmp, const char *dir) {
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

int driver_compile_c(Graph *g, Schedule *s, const char *dir) {
  Arena *a = ga();
  /* lower each distinct kernel AST once, in schedule order */
  KNames kn;
  knames_init(&kn, a);
  UMap progs;
  umap_init(&progs, a);
  int nprog = 0;
  const Program **ps = arena_alloc(a, sizeof *ps * (size_t)(s->nitems + 1));
  const char **names = arena_alloc(a, sizeof *names * (size_t)(s->nitems + 1));
  const char **sources = arena_alloc(a, sizeof *sources * (size_t)(s->nitems + 1));
  for (int i = 0; i < s->nitems; i++) {
    const SchedItem *si = &s->items[i];
    if (si->nshards > 0 || si->shard >= 0) tg_fail(TG_EDEVICE, "compile: multi-device schedules in the C bundle: not implemented yet");
    if (si->ast->op != OP_SINK) continue;
    Program *p = umap_getp(&progs, si->ast);
    if (!p) {
      p = lower_kernel(si->ast, &kn);
      umap_put(&progs, si->ast, p);
      ps[nprog++] = p;
    }
    names[i] = p->name;
    sources[i] = kernel_file(a, p, &render_c);
  }
  CModel m = {0};
  cm_build(&m, a, g, s);
  UOp *ss = s->sched_sink;
  int nout = ss->nsrc;
  DriverOut *outs = arena_alloc(a, sizeof *outs * (size_t)(nout + 1));
  int *oslot = arena_alloc(a, sizeof(int) * (size_t)(nout + 1));
  const ShapeTracker **ost = arena_alloc(a, sizeof *ost * (size_t)(nout + 1));
  bool need_gather = false;
  for (int i = 0; i < nout; i++) {
    UOp *t = ss->src[i];
    if (t->op == OP_MULTI) tg_fail(TG_EDEVICE, "compile: multi-device outputs in the C bundle: not implemented yet");
    out_shape(t, &outs[i]);
    UOp *base = u_base(t);
    if (base->op == OP_ASSIGN) base = u_buf_uop(base);
    if (base->op != OP_BUFFER) tg_fail(TG_EDEVICE, "compile: output %d is a %s, not a realized buffer", i, op_names[base->op]);
    oslot[i] = cm_slot(&m, base);
    ost[i] = NULL;
    if (!(t == base || st_contiguous(u_st(t)))) {
      const ShapeTracker *st = u_st(t);
      if (!st) tg_fail(TG_EDEVICE, "compile: output %d has no shape", i);
      for (int v = 0; v < st->nviews; v++) {
        const View *w = st->views[v];
        bool sym = !si_is_int(w->offset) || w->ndim > 64;
        for (int k = 0; k < w->ndim; k++) sym |= !si_is_int(w->shape[k]) || !si_is_int(w->strides[k]) || (w->mask && (!si_is_int(w->mask[2 * k]) || !si_is_int(w->mask[2 * k + 1])));
        if (sym) tg_fail(TG_EDEVICE, "compile: output %d is a symbolic view: not implemented yet", i);
      }
      ost[i] = st;
      need_gather = true;
    }
  }

  /* the temporary directory next to dir */
  char *tmp = arena_printf(a, "%s.tmp.%d", dir, (int)getpid());
  remove_flat_dir(tmp);
  if (mkdir(tmp, 0755) != 0) tg_fail(TG_EINPUT, "%s: cannot create: %s", tmp, strerror(errno));
  TgTry t;
  if (TG_TRY(t)) {
    /* per-kernel translation units */
    Sb man = {a, NULL, 0, 0};
    manifest = &man;
    for (int i = 0; i < nprog; i++) write_or_fail(tmp, kernel_file(a, ps[i], &render_c), kernel_source(a, ps[i], &render_c));
    write_or_fail(tmp, "schedule.json", schedule_write_json(a, s, g, names, sources));

    /* model.h */
    Sb h = {a, NULL, 0, 0};
    sb_printf(&h, "/* model.h: the ahead-of-time bundle tgc %s wrote for %s (%d kernels, %d schedule items).\n", "compile -t c", g->path, nprog, s->nitems);
    sb_printf(&h, " *\n * Files: NAME.c holds one kernel (its only definition, with the static helpers it needs);\n"
                  " * model.c holds tgc_model_run, which declares the kernels, allocates the intermediate buffers,\n"
                  " * runs the schedule in order (kernel calls, COPY = memmove, BUFFER_VIEW = pointer offset) and\n"
                  " * writes each output C-contiguously. Build: compile every .c file here (cc -O2 -c) and link\n"
                  " * all the objects with -lm, or include DIR/Makefile.inc (rule for DIR/model.o, one relocatable object).\n *\n");
    sb_printf(&h, " * inputs (the graph's BUFFER rows, in row order; %d): buffers the schedule assigns to are\n * updated in place\n", m.ninputs);
    for (int i = 0; i < m.ninputs; i++) {
      UOp *b = m.inputs[i];
      sb_printf(&h, " *   inputs[%d]: row %d, %s, %lld elements (%zu bytes)\n", i, row_of(g, b), dt_repr(a, dt_base(b->dtype)),
                (long long)b->arg->i, (size_t)b->arg->i * (size_t)dt_base(b->dtype)->itemsize);
    }
    sb_printf(&h, " * outputs (one per sink source, C-contiguous; %d):\n", nout);
    for (int i = 0; i < nout; i++) {
      sb_printf(&h, " *   outputs[%d]: %s, shape [", i, dt_repr(a, outs[i].dtype));
      for (int k = 0; k < outs[i].ndim; k++) sb_printf(&h, "%s%lld", k ? ", " : "", (long long)outs[i].shape[k]);
      sb_printf(&h, "] (%zu bytes)\n", outs[i].nbytes);
    }
    sb_printf(&h, " * half and bfloat16 elements are 16-bit words. */\n");
    sb_printf(&h, "#ifndef TGC_MODEL_H\n#define TGC_MODEL_H\n\n#define TGC_MODEL_NINPUTS %d\n#define TGC_MODEL_NOUTPUTS %d\n\n", m.ninputs, nout);
    sb_printf(&h, "/* run the whole schedule; returns 0, or -1 when an intermediate buffer can't be allocated */\n"
                  "int tgc_model_run(void *const *inputs, void *const *outputs);\n\n#endif\n");
    write_or_fail(tmp, "model.h", sb_str(&h));

    /* model.c */
    Sb c = {a, NULL, 0, 0};
    sb_printf(&c, "/* model.c: runs the schedule of %s (model.h describes the buffers). */\n", g->path);
    sb_printf(&c, "#include \"model.h\"\n#include <stdlib.h>\n#include <string.h>\n\n");
    {
      /* the storage typedefs the prototypes use (tg_half, tg_bf16), from the kernels' prelude */
      const char *pre = render_prelude(a, nprog, ps, &render_c);
      for (const char *l = pre; l && *l;) {
        const char *e = strchr(l, '\n');
        size_t len = e ? (size_t)(e - l) : strlen(l);
        if (!strncmp(l, "typedef ", 8)) sb_printf(&c, "%.*s\n", (int)len, l);
        l = e ? e + 1 : l + len;
      }
    }
    sb_printf(&c, "/* the kernels, defined in their own files */\n");
    for (int i = 0; i < nprog; i++) sb_printf(&c, "%s;\n", prototype(render_function(a, ps[i], &render_c)));
    sb_printf(&c, "\n");
    if (need_gather) {
      sb_printf(&c, "%s", gather_src);
      for (int i = 0; i < nout; i++) {
        if (!ost[i]) continue;
        for (int v = 0; v < ost[i]->nviews; v++) {
          const View *w = ost[i]->views[v];
          sb_printf(&c, "static const long long out%d_view%d[] = {%d, %lld, %d", i, v, w->ndim, (long long)w->offset.c, w->mask ? 1 : 0);
          for (int k = 0; k < w->ndim; k++) sb_printf(&c, ", %lld", (long long)w->shape[k].c);
          for (int k = 0; k < w->ndim; k++) sb_printf(&c, ", %lld", (long long)w->strides[k].c);
          for (int k = 0; w->mask && k < 2 * w->ndim; k++) sb_printf(&c, ", %lld", (long long)w->mask[k].c);
          sb_printf(&c, "};\n");
        }
        sb_printf(&c, "static const long long *const out%d_views[] = {", i);
        for (int v = 0; v < ost[i]->nviews; v++) sb_printf(&c, "%sout%d_view%d", v ? ", " : "", i, v);
        sb_printf(&c, "};\n\n");
      }
    }
    sb_printf(&c, "int tgc_model_run(void *const *inputs, void *const *outputs) {\n");
    sb_printf(&c, "  void *b[%d] = {0};\n  int rc = 0;\n", m.n ? m.n : 1);
    if (!nout && !m.ninputs) sb_printf(&c, "  (void)inputs;\n  (void)outputs;\n");
    else if (!m.ninputs) sb_printf(&c, "  (void)inputs;\n");
    else if (!nout) sb_printf(&c, "  (void)outputs;\n");
    for (int k = 0; k < m.n; k++) {
      CBuf *cb = &m.b[k];
      if (cb->input >= 0) sb_printf(&c, "  b[%d] = inputs[%d];\n", k, cb->input);
    }
    bool any_alloc = false;
    for (int k = 0; k < m.n; k++) {
      CBuf *cb = &m.b[k];
      if (cb->input >= 0 || cb->base >= 0) continue;
      sb_printf(&c, "  if (!(b[%d] = calloc(1, %zu))) goto fail; /* %s */\n", k, cb->nbytes ? cb->nbytes : 1, dt_repr(a, dt_base(cb->buf->dtype)));
      any_alloc = true;
    }
    for (int k = 0; k < m.n; k++) {
      CBuf *cb = &m.b[k];
      if (cb->base >= 0 && !cb->alias_at_item) sb_printf(&c, "  b[%d] = (char *)b[%d] + %zu; /* BUFFER_VIEW */\n", k, cb->base, cb->off);
    }
    for (int i = 0; i < s->nitems; i++) {
      const SchedItem *si = &s->items[i];
      if (si->ast->op == OP_BUFFER_VIEW) {
        int k = si->nbufs >= 1 ? cm_find(&m, si->bufs[0].buf) : -1;
        if (k >= 0 && m.b[k].alias_at_item) sb_printf(&c, "  b[%d] = (char *)b[%d] + %zu; /* item %d: BUFFER_VIEW */\n", k, m.b[k].base, m.b[k].off, i);
        else sb_printf(&c, "  /* item %d: BUFFER_VIEW (aliased above) */\n", i);
        continue;
      }
      if (si->ast->op == OP_COPY) {
        if (si->nbufs < 2) tg_fail(TG_EDEVICE, "compile: COPY item %d needs 2 buffers", i);
        int d = cm_find(&m, si->bufs[0].buf), sl = cm_find(&m, si->bufs[1].buf);
        size_t n = m.b[d].nbytes < m.b[sl].nbytes ? m.b[d].nbytes : m.b[sl].nbytes;
        sb_printf(&c, "  if (b[%d] != b[%d]) memmove(b[%d], b[%d], %zu); /* item %d: COPY */\n", d, sl, d, sl, n, i);
        continue;
      }
      if (si->ast->op != OP_SINK) tg_fail(TG_EDEVICE, "compile: a %s schedule item", op_names[si->ast->op]);
      const Program *p = umap_getp(&progs, si->ast);
      sb_printf(&c, "  %s(", p->fname);
      for (int j = 0; j < p->nglobals; j++) {
        int slot = (int)p->globals[j].u->arg->i;
        if (slot < 0 || slot >= si->nbufs) tg_fail(TG_EDEVICE, "kernel %s: DEFINE_GLOBAL %d but the item has %d buffers", p->name, slot, si->nbufs);
        sb_printf(&c, "%sb[%d]", j ? ", " : "", cm_find(&m, si->bufs[slot].buf));
      }
      for (int j = 0; j < p->nvars; j++) {
        const char *nm = p->vars[j]->arg->items[0]->s;
        bool found = false;
        for (int q = 0; q < si->nvars && !found; q++) {
          UOp *v = si->vars[q];
          if (v->op == OP_BIND) v = v->src[0];
          if (v->op == OP_DEFINE_VAR && strcmp(v->arg->items[0]->s, nm) == 0) {
            sb_printf(&c, "%s%lld", j || p->nglobals ? ", " : "", (long long)si->vals[q]);
            found = true;
          }
        }
        if (!found) tg_fail(TG_EDEVICE, "kernel %s: no value for variable %s", p->name, nm);
      }
      sb_printf(&c, "); /* item %d */\n", i);
    }
    for (int i = 0; i < nout; i++) {
      int k = oslot[i];
      size_t isz = (size_t)outs[i].dtype->itemsize;
      if (!ost[i]) {
        size_t n = m.b[k].nbytes < outs[i].nbytes ? m.b[k].nbytes : outs[i].nbytes;
        sb_printf(&c, "  memcpy(outputs[%d], b[%d], %zu);\n", i, k, n);
      } else
        sb_printf(&c, "  tgc_gather(outputs[%d], b[%d], %zu, %zu, %zu, %d, out%d_views);\n", i, k, m.b[k].nbytes, outs[i].nbytes / isz, isz, ost[i]->nviews, i);
    }
    sb_printf(&c, "  goto done;\n");
    sb_printf(&c, any_alloc ? "fail:\n  rc = -1;\ndone:\n" : "done:\n");
    for (int k = 0; k < m.n; k++) if (m.b[k].input < 0 && m.b[k].base < 0) sb_printf(&c, "  free(b[%d]);\n", k);
    sb_printf(&c, "  return rc;\n}\n");
    write_or_fail(tmp, "model.c", sb_str(&c));

    Sb mk = {a, NULL, 0, 0};
    sb_printf(&mk, "# Makefile.inc: include this from a project Makefile to build the tgc bundle as one object,\n"
                   "# $(TGC_MODEL_DIR)model.o (link it with -lm). TGC_MODEL_DIR defaults to this file's directory.\n"
                   "TGC_MODEL_DIR ?= $(dir $(lastword $(MAKEFILE_LIST)))\n"
                   "TGC_MODEL_KERNELS := ");
    for (int i = 0; i < nprog; i++) sb_printf(&mk, "%s$(TGC_MODEL_DIR)%s", i ? " " : "", kernel_file(a, ps[i], &render_c));
    sb_printf(&mk, "\nTGC_MODEL_CFLAGS ?= -O2\n\n"
                   "$(TGC_MODEL_DIR)model.o: $(TGC_MODEL_DIR)model.c $(TGC_MODEL_DIR)model.h $(TGC_MODEL_KERNELS)\n"
                   "\t$(CC) $(TGC_MODEL_CFLAGS) -c $(TGC_MODEL_DIR)model.c -o $(TGC_MODEL_DIR)model_run.o\n"
                   "\tfor f in $(TGC_MODEL_KERNELS); do $(CC) $(TGC_MODEL_CFLAGS) -c $$f -o $${f%%.c}.o || exit 1; done\n"
                   "\t$(LD) -r -o $@ $(TGC_MODEL_DIR)model_run.o $(TGC_MODEL_KERNELS:.c=.o)\n");
    write_or_fail(tmp, "Makefile.inc", sb_str(&mk));
    manifest = NULL;
    write_or_fail(tmp, "MANIFEST", sb_str(&man));
    tg_try_end(&t);
  } else {
    manifest = NULL;
    char msg[sizeof tg_last_error.msg];
    int code = tg_last_error.code;
    snprintf(msg, sizeof msg, "%s", tg_last_error.msg);
    remove_flat_dir(tmp);
    tg_fail(code, "%s", msg);
  }
  /* put it in place: an existing DIR is replaced only when it is a previous output */
  install_output_dir(a, tmp, dir);
  return nprog;
}

/* ---------------------------------------------------------------- compile -t opencl|cuda */
static const char host_cl_src[] =
  "#define CL_TARGET_OPENCL_VERSION 120\n#include <CL/cl.h>\n"
  "static cl_context ctx;\nstatic cl_command_queue q;\nstatic cl_device_id dev;\nstatic cl_kernel kern[TGC_NKERNELS];\n"
  "static int gpu_init(void) {\n"
  "  cl_platform_id pl;\n  cl_uint n = 0;\n"
  "  if (clGetPlatformIDs(1, &pl, &n) != CL_SUCCESS || !n) { fprintf(stderr, \"no OpenCL platform\\n\"); return -1; }\n"
  "  if (clGetDeviceIDs(pl, CL_DEVICE_TYPE_ALL, 1, &dev, &n) != CL_SUCCESS || !n) { fprintf(stderr, \"no OpenCL device\\n\"); return -1; }\n"
  "  cl_int err;\n  ctx = clCreateContext(NULL, 1, &dev, NULL, NULL, &err);\n  if (err) return -1;\n"
  "  q = clCreateCommandQueue(ctx, dev, 0, &err);\n  return err ? -1 : 0;\n}\n"
  "static int gpu_build(int k, const char *src) {\n"
  "  cl_int err;\n  cl_program p = clCreateProgramWithSource(ctx, 1, &src, NULL, &err);\n"
  "  if (err || clBuildProgram(p, 1, &dev, \"-cl-std=CL1.2\", NULL, NULL) != CL_SUCCESS) {\n"
  "    char log[16384] = \"\";\n    clGetProgramBuildInfo(p, dev, CL_PROGRAM_BUILD_LOG, sizeof log - 1, log, NULL);\n"
  "    fprintf(stderr, \"%s: %s\\n\", kinfo[k].file, log);\n    return -1;\n  }\n"
  "  kern[k] = clCreateKernel(p, kinfo[k].fname, &err);\n  return err ? -1 : 0;\n}\n"
  "/* upload the buffers, launch, read back the written ones */\n"
  "static int gpu_run(int k, unsigned char **bufs, const size_t *nb, const int *wr, const int *vars) {\n"
  "  cl_mem m[TGC_MAXARGS];\n  cl_int err = 0;\n"
  "  for (int i = 0; i < kinfo[k].nbufs; i++) {\n"
  "    m[i] = clCreateBuffer(ctx, CL_MEM_READ_WRITE | (nb[i] ? CL_MEM_COPY_HOST_PTR : 0), nb[i] ? nb[i] : 16, nb[i] ? bufs[i] : NULL, &err);\n"
  "    if (err) return -1;\n    clSetKernelArg(kern[k], (cl_uint)i, sizeof(cl_mem), &m[i]);\n  }\n"
  "  for (int i = 0; i < kinfo[k].nvars; i++) clSetKernelArg(kern[k], (cl_uint)(kinfo[k].nbufs + i), sizeof(int), &vars[i]);\n"
  "  size_t g[3] = {kinfo[k].gsz[0], kinfo[k].gsz[1], kinfo[k].gsz[2]};\n"
  "  if (clEnqueueNDRangeKernel(q, kern[k], (cl_uint)kinfo[k].ndim, NULL, g, NULL, 0, NULL, NULL) != CL_SUCCESS) return -1;\n"
  "  for (int i = 0; i < kinfo[k].nbufs; i++) if (wr[i] && nb[i]) clEnqueueReadBuffer(q, m[i], CL_TRUE, 0, nb[i], bufs[i], 0, NULL, NULL);\n"
  "  clFinish(q);\n  for (int i = 0; i < kinfo[k].nbufs; i++) clReleaseMemObject(m[i]);\n  return 0;\n}\n";
static const char host_cu_src[] =
  "#include <cuda.h>\n#include <nvrtc.h>\n"
  "static CUcontext ctx;\nstatic CUfunction kern[TGC_NKERNELS];\nstatic char arch[32];\n"
  "static int gpu_init(void) {\n"
  "  int n = 0, ma = 0, mi = 0;\n  CUdevice d;\n"
  "  if (cuInit(0) != CUDA_SUCCESS || cuDeviceGetCount(&n) != CUDA_SUCCESS || !n) { fprintf(stderr, \"no CUDA device\\n\"); return -1; }\n"
  "  cuDeviceGet(&d, 0);\n  cuDeviceGetAttribute(&ma, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, d);\n"
  "  cuDeviceGetAttribute(&mi, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, d);\n"
  "  snprintf(arch, sizeof arch, \"--gpu-architecture=compute_%d%d\", ma, mi);\n"
  "  return cuDevicePrimaryCtxRetain(&ctx, d) == CUDA_SUCCESS && cuCtxSetCurrent(ctx) == CUDA_SUCCESS ? 0 : -1;\n}\n"
  "static int gpu_build(int k, const char *src) {\n"
  "  nvrtcProgram p;\n  const char *opt[1] = {arch};\n  size_t n = 0;\n"
  "  if (nvrtcCreateProgram(&p, src, kinfo[k].file, 0, NULL, NULL) != NVRTC_SUCCESS) return -1;\n"
  "  if (nvrtcCompileProgram(p, 1, opt) != NVRTC_SUCCESS) {\n"
  "    nvrtcGetProgramLogSize(p, &n);\n    char *log = malloc(n + 1);\n    if (log) { nvrtcGetProgramLog(p, log); log[n] = 0; fprintf(stderr, \"%s: %s\\n\", kinfo[k].file, log); free(log); }\n"
  "    return -1;\n  }\n"
  "  nvrtcGetPTXSize(p, &n);\n  char *ptx = malloc(n + 1);\n  if (!ptx) return -1;\n  nvrtcGetPTX(p, ptx);\n  nvrtcDestroyProgram(&p);\n"
  "  CUmodule mod;\n  int rc = cuModuleLoadData(&mod, ptx) == CUDA_SUCCESS && cuModuleGetFunction(&kern[k], mod, kinfo[k].fname) == CUDA_SUCCESS ? 0 : -1;\n"
  "  free(ptx);\n  return rc;\n}\n"
  "/* upload the buffers, launch (dimension 0 in blocks of up to 256 threads), read back the written ones */\n"
  "static int gpu_run(int k, unsigned char **bufs, const size_t *nb, const int *wr, const int *vars) {\n"
  "  CUdeviceptr m[TGC_MAXARGS];\n  void *args[TGC_MAXARGS * 2];\n  int v[TGC_MAXARGS];\n"
  "  for (int i = 0; i < kinfo[k].nbufs; i++) {\n"
  "    if (cuMemAlloc(&m[i], nb[i] ? nb[i] : 16) != CUDA_SUCCESS) return -1;\n"
  "    if (nb[i]) cuMemcpyHtoD(m[i], bufs[i], nb[i]);\n    args[i] = &m[i];\n  }\n"
  "  for (int i = 0; i < kinfo[k].nvars; i++) { v[i] = vars[i]; args[kinfo[k].nbufs + i] = &v[i]; }\n"
  "  size_t x = kinfo[k].gsz[0];\n  unsigned bx = x < 256 ? (unsigned)x : 256u;\n"
  "  if (cuLaunchKernel(kern[k], (unsigned)((x + bx - 1) / bx), (unsigned)kinfo[k].gsz[1], (unsigned)kinfo[k].gsz[2], bx, 1, 1, 0, NULL, args, NULL) != CUDA_SUCCESS) return -1;\n"
  "  if (cuCtxSynchronize() != CUDA_SUCCESS) return -1;\n"
  "  for (int i = 0; i < kinfo[k].nbufs; i++) { if (wr[i] && nb[i]) cuMemcpyDtoH(bufs[i], m[i], nb[i]); cuMemFree(m[i]); }\n"
  "  return 0;\n}\n";
static const char host_main_src[] =
  "static unsigned char *slurp(const char *path, size_t *n) {\n"
  "  FILE *f = fopen(path, \"rb\");\n  if (!f) return NULL;\n  fseek(f, 0, SEEK_END);\n  long sz = ftell(f);\n  fseek(f, 0, SEEK_SET);\n"
  "  unsigned char *s = malloc((size_t)sz + 1);\n  if (s && fread(s, 1, (size_t)sz, f) != (size_t)sz) { free(s); s = NULL; }\n"
  "  fclose(f);\n  if (s) s[sz] = 0;\n  if (n) *n = (size_t)sz;\n  return s;\n}\n"
  "int main(int argc, char **argv) {\n"
  "  const char *dir = argc > 1 ? argv[1] : \".\";\n  char path[4096];\n"
  "  if (gpu_init()) return 4;\n"
  "  for (int k = 0; k < TGC_NKERNELS; k++) {\n"
  "    snprintf(path, sizeof path, \"%s/%s\", dir, kinfo[k].file);\n    char *src = (char *)slurp(path, NULL);\n"
  "    if (!src) { fprintf(stderr, \"%s: cannot read\\n\", path); return 2; }\n    if (gpu_build(k, src)) return 4;\n    free(src);\n  }\n"
  "  for (int i = 0; i < TGC_NBUFS; i++) if (binfo[i].base < 0 && !(b[i] = calloc(1, binfo[i].nbytes + 16))) return 1;\n"
  "  for (int i = 0; i < TGC_NBUFS; i++) if (binfo[i].input >= 0) {\n"
  "    size_t n = 0;\n    snprintf(path, sizeof path, \"%s/input%d.bin\", dir, binfo[i].input);\n    unsigned char *d = slurp(path, &n);\n"
  "    if (d) { memcpy(b[i], d, n < binfo[i].nbytes ? n : binfo[i].nbytes); free(d); }\n  }\n"
  "  for (int i = 0; i < TGC_NBUFS; i++) if (binfo[i].base >= 0 && !binfo[i].at_item) b[i] = b[binfo[i].base] + binfo[i].off;\n"
  "  if (run_schedule()) { fprintf(stderr, \"a kernel failed\\n\"); return 4; }\n"
  "  for (int i = 0; i < TGC_NOUTPUTS; i++) {\n"
  "    unsigned char *o = calloc(1, outinfo[i].nbytes + 16);\n    if (!o) return 1;\n"
  "    gather_output(i, o);\n"
  "    snprintf(path, sizeof path, \"%s/out%d.bin\", dir, i);\n    FILE *f = fopen(path, \"wb\");\n"
  "    if (!f || fwrite(o, 1, outinfo[i].nbytes, f) != outinfo[i].nbytes) { fprintf(stderr, \"%s: cannot write\\n\", path); return 2; }\n"
  "    fclose(f);\n    free(o);\n  }\n  return 0;\n}\n";

int driver_compile_gpu(Graph *g, Schedule *s, const char *dir, const char *target) {
  Arena *a = ga();
  const RenderBackend *volatile be = !strcmp(target, "opencl") ? &render_opencl : !strcmp(target, "cuda") ? &render_cuda : NULL;
  if (!be) tg_fail(TG_EINPUT, "compile: unknown target '%s'", target);
  KNames kn;
  knames_init(&kn, a);
  UMap progs;
  umap_init(&progs, a);
  int nprog = 0, maxargs = 1;
  const Program **ps = arena_alloc(a, sizeof *ps * (size_t)(s->nitems + 1));
  const char **names = arena_alloc(a, sizeof *names * (size_t)(s->nitems + 1));
  const char **sources = arena_alloc(a, sizeof *sources * (size_t)(s->nitems + 1));
  for (int i = 0; i < s->nitems; i++) {
    const SchedItem *si = &s->items[i];
    if (si->nshards > 0 || si->shard >= 0) tg_fail(TG_EDEVICE, "compile: multi-device schedules for %s: not implemented yet", target);
    if (si->ast->op != OP_SINK) continue;
    Program *p = umap_getp(&progs, si->ast);
    if (!p) {
      p = lower_kernel(si->ast, &kn);
      umap_put(&progs, si->ast, p);
      ps[nprog++] = p;
      if (p->nglobals + p->nvars > maxargs) maxargs = p->nglobals + p->nvars;
    }
    names[i] = p->name;
    sources[i] = arena_printf(a, "%s%s", p->fname, be->ext);
  }
  CModel m = {0};
  cm_build(&m, a, g, s);
  UOp *ss = s->sched_sink;
  int nout = ss->nsrc;
  DriverOut *outs = arena_alloc(a, sizeof *outs * (size_t)(nout + 1));
  int *oslot = arena_alloc(a, sizeof(int) * (size_t)(nout + 1));
  const ShapeTracker **ost = arena_alloc(a, sizeof *ost * (size_t)(nout + 1));
  for (int i = 0; i < nout; i++) {
    UOp *t = ss->src[i];
    if (t->op == OP_MULTI) tg_fail(TG_EDEVICE, "compile: multi-device outputs for %s: not implemented yet", target);
    out_shape(t, &outs[i]);
    UOp *base = u_base(t);
    if (base->op == OP_ASSIGN) base = u_buf_uop(base);
    if (base->op != OP_BUFFER) tg_fail(TG_EDEVICE, "compile: output %d is a %s, not a realized buffer", i, op_names[base->op]);
    oslot[i] = cm_slot(&m, base);
    ost[i] = NULL;
    if (!(t == base || st_contiguous(u_st(t)))) {
      const ShapeTracker *st = u_st(t);
      if (!st) tg_fail(TG_EDEVICE, "compile: output %d has no shape", i);
      for (int v = 0; v < st->nviews; v++) {
        const View *w = st->views[v];
        bool sym = !si_is_int(w->offset) || w->ndim > 64;
        for (int k = 0; k < w->ndim; k++) sym |= !si_is_int(w->shape[k]) || !si_is_int(w->strides[k]) || (w->mask && (!si_is_int(w->mask[2 * k]) || !si_is_int(w->mask[2 * k + 1])));
        if (sym) tg_fail(TG_EDEVICE, "compile: output %d is a symbolic view: not implemented yet", i);
      }
      ost[i] = st;
    }
  }
  char *tmp = arena_printf(a, "%s.tmp.%d", dir, (int)getpid());
  remove_flat_dir(tmp);
  if (mkdir(tmp, 0755) != 0) tg_fail(TG_EINPUT, "%s: cannot create: %s", tmp, strerror(errno));
  TgTry t;
  if (TG_TRY(t)) {
    for (int i = 0; i < nprog; i++) {
      const char *src = render_kernel(a, ps[i], be);
      size_t l = strlen(src);
      write_or_fail(tmp, arena_printf(a, "%s%s", ps[i]->fname, be->ext), l && src[l - 1] != '\n' ? arena_printf(a, "%s\n", src) : src);
    }
    write_or_fail(tmp, "schedule.json", schedule_write_json(a, s, g, names, sources));
    bool cl = be == &render_opencl;
    Sb c = {a, NULL, 0, 0};
    sb_printf(&c, "/* host.c: runs the schedule of %s (%d kernels, %d items) with the %s.\n", g->path, nprog, s->nitems,
              cl ? "OpenCL API" : "CUDA driver API and NVRTC");
    sb_printf(&c, " * Build: cc -O2 host.c -o host %s. Run: ./host [DIR] (DIR holds the %s files; default .).\n",
              cl ? "-lOpenCL" : "-I/usr/local/cuda/include -L/usr/local/cuda/lib64 -lcuda -lnvrtc", be->ext);
    sb_printf(&c, " * Inputs: DIR/inputN.bin, the raw bytes of the graph's BUFFER row N-th in row order (zeros when absent;\n"
                  " * %d inputs). Outputs: DIR/outN.bin, each sink source C-contiguous (%d outputs). half/bfloat16\n"
                  " * elements are 16-bit words. Buffers live in host memory; each kernel uploads the buffers it names\n"
                  " * and reads back the ones it writes. */\n", m.ninputs, nout);
    sb_printf(&c, "#include <stdio.h>\n#include <stdlib.h>\n#include <string.h>\n\n");
    sb_printf(&c, "#define TGC_NKERNELS %d\n#define TGC_NBUFS %d\n#define TGC_NOUTPUTS %d\n#define TGC_MAXARGS %d\n", nprog ? nprog : 1, m.n ? m.n : 1, nout, maxargs);
    sb_printf(&c, "static const struct { const char *file, *fname; int nbufs, nvars, ndim; size_t gsz[3]; } kinfo[TGC_NKERNELS] = {\n");
    for (int i = 0; i < nprog; i++) {
      RenderLaunch L;
      render_launch(ps[i], be, &L);
      sb_printf(&c, "  {\"%s%s\", \"%s\", %d, %d, %d, {%lld, %lld, %lld}}, /* %s */\n", ps[i]->fname, be->ext, ps[i]->fname, ps[i]->nglobals, ps[i]->nvars,
                L.n ? L.n : 1, (long long)L.size[0], (long long)L.size[1], (long long)L.size[2], ps[i]->name);
    }
    if (!nprog) sb_printf(&c, "  {\"\", \"\", 0, 0, 1, {1, 1, 1}},\n");
    sb_printf(&c, "};\nstatic const struct { size_t nbytes, off; int input, base, at_item; } binfo[TGC_NBUFS] = {\n");
    for (int k = 0; k < m.n; k++)
      sb_printf(&c, "  {%zu, %zu, %d, %d, %d}, /* %s */\n", m.b[k].nbytes, m.b[k].off, m.b[k].input, m.b[k].base, m.b[k].alias_at_item, dt_repr(a, dt_base(m.b[k].buf->dtype)));
    if (!m.n) sb_printf(&c, "  {0, 0, -1, -1, 0},\n");
    sb_printf(&c, "};\nstatic const struct { size_t nbytes; } outinfo[TGC_NOUTPUTS + 1] = {");
    for (int i = 0; i < nout; i++) sb_printf(&c, "{%zu}, ", outs[i].nbytes);
    sb_printf(&c, "{0}};\nstatic unsigned char *b[TGC_NBUFS];\n\n%s\n", cl ? host_cl_src : host_cu_src);
    sb_printf(&c, "%s", gather_src);
    for (int i = 0; i < nout; i++) {
      if (!ost[i]) continue;
      for (int v = 0; v < ost[i]->nviews; v++) {
        const View *w = ost[i]->views[v];
        sb_printf(&c, "static const long long out%d_view%d[] = {%d, %lld, %d", i, v, w->ndim, (long long)w->offset.c, w->mask ? 1 : 0);
        for (int k = 0; k < w->ndim; k++) sb_printf(&c, ", %lld", (long long)w->shape[k].c);
        for (int k = 0; k < w->ndim; k++) sb_printf(&c, ", %lld", (long long)w->strides[k].c);
        for (int k = 0; w->mask && k < 2 * w->ndim; k++) sb_printf(&c, ", %lld", (long long)w->mask[k].c);
        sb_printf(&c, "};\n");
      }
      sb_printf(&c, "static const long long *const out%d_views[] = {", i);
      for (int v = 0; v < ost[i]->nviews; v++) sb_printf(&c, "%sout%d_view%d", v ? ", " : "", i, v);
      sb_printf(&c, "};\n");
    }
    sb_printf(&c, "static void gather_output(int i, unsigned char *o) {\n  switch (i) {\n");
    for (int i = 0; i < nout; i++) {
      int k = oslot[i];
      size_t isz = (size_t)outs[i].dtype->itemsize;
      if (!ost[i]) sb_printf(&c, "  case %d: memcpy(o, b[%d], %zu); break;\n", i, k, m.b[k].nbytes < outs[i].nbytes ? m.b[k].nbytes : outs[i].nbytes);
      else sb_printf(&c, "  case %d: tgc_gather(o, b[%d], %zu, %zu, %zu, %d, out%d_views); break;\n", i, k, m.b[k].nbytes, outs[i].nbytes / isz, isz, ost[i]->nviews, i);
    }
    sb_printf(&c, "  default: (void)o; break;\n  }\n}\n\n");
    sb_printf(&c, "static int run_schedule(void) {\n");
    for (int i = 0; i < s->nitems; i++) {
      const SchedItem *si = &s->items[i];
      if (si->ast->op == OP_BUFFER_VIEW) {
        int k = si->nbufs >= 1 ? cm_find(&m, si->bufs[0].buf) : -1;
        if (k >= 0 && m.b[k].alias_at_item) sb_printf(&c, "  b[%d] = b[%d] + %zu; /* item %d: BUFFER_VIEW */\n", k, m.b[k].base, m.b[k].off, i);
        continue;
      }
      if (si->ast->op == OP_COPY) {
        if (si->nbufs < 2) tg_fail(TG_EDEVICE, "compile: COPY item %d needs 2 buffers", i);
        int d = cm_find(&m, si->bufs[0].buf), sl = cm_find(&m, si->bufs[1].buf);
        size_t n = m.b[d].nbytes < m.b[sl].nbytes ? m.b[d].nbytes : m.b[sl].nbytes;
        sb_printf(&c, "  if (b[%d] != b[%d]) memmove(b[%d], b[%d], %zu); /* item %d: COPY */\n", d, sl, d, sl, n, i);
        continue;
      }
      if (si->ast->op != OP_SINK) tg_fail(TG_EDEVICE, "compile: a %s schedule item", op_names[si->ast->op]);
      const Program *p = umap_getp(&progs, si->ast);
      int ki = 0;
      while (ki < nprog && ps[ki] != p) ki++;
      Sb bl = {a, NULL, 0, 0}, nl = {a, NULL, 0, 0}, wl = {a, NULL, 0, 0}, vl = {a, NULL, 0, 0};
      for (int j = 0; j < p->nglobals; j++) {
        int slot = (int)p->globals[j].u->arg->i;
        if (slot < 0 || slot >= si->nbufs) tg_fail(TG_EDEVICE, "kernel %s: DEFINE_GLOBAL %d but the item has %d buffers", p->name, slot, si->nbufs);
        int k = cm_find(&m, si->bufs[slot].buf);
        sb_printf(&bl, "%sb[%d]", j ? ", " : "", k);
        sb_printf(&nl, "%s%zu", j ? ", " : "", m.b[k].nbytes);
        sb_printf(&wl, "%s%d", j ? ", " : "", p->globals[j].written ? 1 : 0);
      }
      for (int j = 0; j < p->nvars; j++) {
        const char *nm = p->vars[j]->arg->items[0]->s;
        bool found = false;
        for (int q = 0; q < si->nvars && !found; q++) {
          UOp *v = si->vars[q];
          if (v->op == OP_BIND) v = v->src[0];
          if (v->op == OP_DEFINE_VAR && strcmp(v->arg->items[0]->s, nm) == 0) { sb_printf(&vl, "%s%lld", j ? ", " : "", (long long)si->vals[q]); found = true; }
        }
        if (!found) tg_fail(TG_EDEVICE, "kernel %s: no value for variable %s", p->name, nm);
      }
      sb_printf(&c, "  { /* item %d: %s */\n    unsigned char *a[] = {%s}; const size_t n[] = {%s}; const int w[] = {%s}, v[] = {%s};\n"
                    "    if (gpu_run(%d, a, n, w, v)) return -1;\n  }\n",
                i, p->name, p->nglobals ? sb_str(&bl) : "0", p->nglobals ? sb_str(&nl) : "0", p->nglobals ? sb_str(&wl) : "0",
                p->nvars ? sb_str(&vl) : "0", ki);
    }
    sb_printf(&c, "  return 0;\n}\n\n%s", host_main_src);
    write_or_fail(tmp, "host.c", sb_str(&c));
    tg_try_end(&t);
  } else {
    char msg[sizeof tg_last_error.msg];
    int code = tg_last_error.code;
    snprintf(msg, sizeof msg, "%s", tg_last_error.msg);
    remove_flat_dir(tmp);
    tg_fail(code, "%s", msg);
  }
  /* put it in place as compile -t c does: an existing DIR is replaced only when it is a previous output */
  install_output_dir(a, tmp, dir);
  return nprog;
}
