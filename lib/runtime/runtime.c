/* runtime.c: the CPU runtime (runtime.h has the overview).
 *
 * Compiling: the source (prelude + kernel + tgc_entry) is hashed; the cache holds k_HASH.so. A
 * miss writes k_HASH.PID.c, runs `clang -O3 -march=native -ffp-contract=on -fno-unroll-loops -shared
 * -fPIC -o k_HASH.PID.so k_HASH.PID.c -lm` through posix_spawnp (no shell), and renames the result into
 * place, so concurrent runs never see a half-written library. The compiler is $TGC_CC, else clang
 * as in tinygrad's CPU backend (with its default contraction of a*b+c into FMAs within an
 * expression; gcc, which has no such mode, gets -ffp-contract=fast), else cc; an automatically
 * chosen clang that fails (no libomp for an OpenMP kernel) hands over to cc for the rest of the
 * run. Signed arithmetic that may overflow is rendered to wrap (render.c), so clang needs no
 * -fwrapv (gcc gets it against a vectorizer bug). Host memory is malloc'd and freed by rt_free. */
#include "runtime.h"
#include "../render/render.h"
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

static void mkdirs(const char *path) {
  char buf[4096];
  snprintf(buf, sizeof buf, "%s", path);
  for (char *p = buf + 1; *p; p++) if (*p == '/') { *p = 0; mkdir(buf, 0755); *p = '/'; }
  mkdir(buf, 0755);
}

/* prog on $PATH (no arena: the scoreboard's own process asks outside a compile context) */
static bool on_path(const char *prog) {
  const char *path = getenv("PATH");
  for (const char *p = path ? path : ""; *p;) {
    const char *e = strchr(p, ':');
    size_t n = e ? (size_t)(e - p) : strlen(p);
    char buf[4096];
    if (n && n + strlen(prog) + 2 <= sizeof buf) {
      snprintf(buf, sizeof buf, "%.*s/%s", (int)n, p, prog);
      if (access(buf, X_OK) == 0) return true;
    }
    p += n + (e != NULL);
  }
  return false;
}
static bool is_clang(const char *cc) {
  const char *b = strrchr(cc, '/');
  return strstr(b ? b + 1 : cc, "clang") != NULL;
}

bool rt_tinygrad_bits(void) {
  const char *cc = getenv("TGC_CC");
  bool clang = cc && *cc ? is_clang(cc) : on_path("clang");
  return clang && rt_cpu_lanes() >= 8;
}

Runtime *rt_new(const Graph *g) {
  Arena *a = ga();
  Runtime *rt = arena_alloc(a, sizeof *rt);
  rt->a = a;
  rt->graph = g;
  map_init(&rt->bufs, a);
  map_init(&rt->kernels, a);
  knames_init(&rt->names, a);
  vec_init(&rt->handles, a);
  vec_init(&rt->owned, a);
  const char *x = getenv("XDG_CACHE_HOME"), *h = getenv("HOME");
  rt->cache_dir = x && *x ? arena_printf(a, "%s/tgc", x) : arena_printf(a, "%s/.cache/tgc", h && *h ? h : "/tmp");
  const char *cc = getenv("TGC_CC");
  rt->cc_auto = !(cc && *cc);
  rt->cc = !rt->cc_auto ? cc : on_path("clang") ? "clang" : "cc";
  rt->threads = 1;
  return rt;
}

void rt_free(Runtime *rt) {
  if (!rt) return;
  for (int i = 0; i < rt->handles.n; i++) dlclose(rt->handles.v[i]);
  for (int i = 0; i < rt->owned.n; i++) free(rt->owned.v[i]);
  rt->handles.n = rt->owned.n = 0;
}

/* ---------------------------------------------------------------- compiling */
static char *slurp(Arena *a, const char *path) {
  FILE *f = fopen(path, "rb");
  if (!f) return arena_strdup(a, "");
  char buf[8192];
  size_t n = fread(buf, 1, sizeof buf - 1, f);
  fclose(f);
  buf[n] = 0;
  return arena_strdup(a, buf);
}
static bool write_all(const char *path, const char *s) {
  FILE *f = fopen(path, "wb");
  if (!f) return false;
  size_t n = strlen(s);
  bool ok = fwrite(s, 1, n, f) == n;
  return fclose(f) == 0 && ok;
}

/* start cc on cfile into tmpso (its diagnostics into errf); the child's pid, or -1 with *err set
 * when it could not be started */
static pid_t spawn_cc(const char *cc, const char *const *flags, int nflags, const char *cfile, const char *tmpso, const char *errf, int *err) {
  char *argv[16];
  int na = 0;
  argv[na++] = (char *)cc;
  for (int i = 0; i < nflags; i++) argv[na++] = (char *)flags[i];
  argv[na++] = "-o"; argv[na++] = (char *)tmpso; argv[na++] = (char *)cfile; argv[na++] = "-lm";
  argv[na] = NULL;
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 1, errf, O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_adddup2(&fa, 1, 2);
  pid_t child;
  *err = posix_spawnp(&child, cc, &fa, NULL, argv, environ);
  posix_spawn_file_actions_destroy(&fa);
  return *err ? -1 : child;
}
/* wait for a spawn_cc child; NULL on success, else the diagnostics */
static char *wait_cc(Arena *a, const char *cc, pid_t child, int err, const char *errf) {
  int status = 0;
  if (!err) while (waitpid(child, &status, 0) < 0 && errno == EINTR) {}
  char *diag = NULL;
  if (err || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    diag = err ? arena_printf(a, "can't run %s: %s", cc, strerror(err)) : slurp(a, errf);
    if (!err && !*diag) /* a compiler that fails silently */
      diag = WIFEXITED(status) ? arena_printf(a, "%s failed with exit status %d", cc, WEXITSTATUS(status))
                               : arena_printf(a, "%s was killed by signal %d", cc, WIFSIGNALED(status) ? WTERMSIG(status) : 0);
  }
  unlink(errf);
  return diag;
}

/* one kernel on its way from source to a loaded library: rt_compile is cj_start then cj_finish,
 * rt_compile_many starts several before finishing them */
typedef struct CJob {
  const Program *p;
  char *src, *so, *cfile, *tmpso, *errf;
  const char *cc;
  bool omp, cached;
  int write_err, spawn_err; /* errno of writing the source / starting the compiler (0: none) */
  pid_t child;
} CJob;

/* render p, find its library in the cache, else write its source and start the compiler */
static void cj_start(Runtime *rt, const Program *p, CJob *j) {
  Arena *a = rt->a;
  RenderBackend be = render_c_threads(rt->threads);
  be.simd = true; /* compiled with -fopenmp-simd at least */
  be.fast_sums = rt->fast_sums;
  be.kblock = !rt->beam; /* see Runtime.beam */
  *j = (CJob){.p = p, .cc = rt->cc};
  j->src = arena_printf(a, "%s\n%s", render_kernel(a, p, &be), render_c_entry(a, p));
  j->omp = strstr(j->src, "#pragma omp parallel") != NULL;
  bool simd = strstr(j->src, "#pragma omp simd") != NULL;
  /* the machine's own instructions (-march=native) and FMA contraction, as tinygrad's CPU
   * backend; no unrolling of the compiler's own (the opts unrolled already: clang's unroll of a
   * matmul's register tile spills, 1.3x slower); gcc also gets -fwrapv (its 12's -O3 loop
   * vectorizer miscompiles masked loads at signed indices without it: test_multitensor
   * reshape_on_axis' E_26_15_7 read the wrong elements). The compiler and its flags are part
   * of the cache key. */
  bool clang = is_clang(rt->cc);
  const char *flags[10];
  int nflags = 0;
  flags[nflags++] = "-O3";
  flags[nflags++] = "-march=native";
  flags[nflags++] = clang ? "-ffp-contract=on" : "-ffp-contract=fast";
  flags[nflags++] = "-fno-unroll-loops";
  if (!clang) flags[nflags++] = "-fwrapv";
  flags[nflags++] = "-shared";
  flags[nflags++] = "-fPIC";
  flags[nflags++] = "-w";
  if (j->omp || simd) flags[nflags++] = j->omp ? "-fopenmp" : "-fopenmp-simd";
  uint64_t h = hash_bytes(j->src, strlen(j->src), 0x7467630a);
  h = hash_bytes(rt->cc, strlen(rt->cc), h);
  for (int i = 0; i < nflags; i++) h = hash_bytes(flags[i], strlen(flags[i]), h);
  mkdirs(rt->cache_dir);
  j->so = arena_printf(a, "%s/k_%016llx.so", rt->cache_dir, (unsigned long long)h);
  struct stat sb;
  if (stat(j->so, &sb) == 0) { j->cached = true; return; }
  int pid = (int)getpid();
  j->cfile = arena_printf(a, "%s/k_%016llx.%d.c", rt->cache_dir, (unsigned long long)h, pid);
  j->tmpso = arena_printf(a, "%s/k_%016llx.%d.so", rt->cache_dir, (unsigned long long)h, pid);
  j->errf = arena_printf(a, "%s/k_%016llx.%d.err", rt->cache_dir, (unsigned long long)h, pid);
  if (!write_all(j->cfile, j->src)) { j->write_err = errno ? errno : EIO; return; }
  j->child = spawn_cc(rt->cc, flags, nflags, j->cfile, j->tmpso, j->errf, &j->spawn_err);
}
/* a started job given up: wait for its compiler and remove its files */
static void cj_abandon(CJob *j) {
  if (j->cached) return;
  if (!j->write_err && !j->spawn_err) while (waitpid(j->child, NULL, 0) < 0 && errno == EINTR) {}
  unlink(j->cfile); unlink(j->tmpso); unlink(j->errf);
}

/* wait for j's compiler, install and load the library; TG_EDEVICE "kernel NAME: <diagnostics>" */
static RtKernel *cj_finish(Runtime *rt, CJob *j) {
  Arena *a = rt->a;
  const Program *p = j->p;
  while (!j->cached) {
    if (j->write_err) tg_fail(TG_EDEVICE, "kernel %s: can't write %s: %s", p->name, j->cfile, strerror(j->write_err));
    char *diag = wait_cc(a, j->cc, j->child, j->spawn_err, j->errf);
    unlink(j->cfile);
    if (diag) {
      unlink(j->tmpso);
      if (rt->cc_auto && strcmp(rt->cc, "cc") != 0) rt->cc = "cc"; /* clang without libomp, say */
      if (strcmp(j->cc, rt->cc) != 0) { cj_start(rt, p, j); continue; }
      tg_fail(TG_EDEVICE, "kernel %s: %s", p->name, diag);
    }
    if (rename(j->tmpso, j->so) != 0) { unlink(j->tmpso); tg_fail(TG_EDEVICE, "kernel %s: can't install %s: %s", p->name, j->so, strerror(errno)); }
    rt->ncompiled++;
    break;
  }
  if (j->cached) rt->ncached++;
  /* an OpenMP kernel stays loaded: its libgomp worker threads outlive the parallel region, and
   * unloading libgomp under them (dlclose at rt_free) would crash them */
  void *hd = dlopen(j->so, RTLD_NOW | RTLD_LOCAL | (j->omp ? RTLD_NODELETE : 0));
  if (!hd) tg_fail(TG_EDEVICE, "kernel %s: dlopen: %s", p->name, dlerror());
  vec_push(&rt->handles, hd);
  RtKernel *k = arena_alloc(a, sizeof *k);
  k->prg = p; k->src = j->src; k->handle = hd;
  void *sym = dlsym(hd, "tgc_entry");
  if (!sym) tg_fail(TG_EDEVICE, "kernel %s: no tgc_entry in %s", p->name, j->so);
  memcpy(&k->entry, &sym, sizeof sym);
  return k;
}

RtKernel *rt_compile(Runtime *rt, const Program *p) {
  CJob j;
  cj_start(rt, p, &j);
  return cj_finish(rt, &j);
}

void rt_compile_many(Runtime *rt, int n, const Program *const *ps, RtKernel **out) {
  long nc = sysconf(_SC_NPROCESSORS_ONLN);
  int width = nc > 1 ? (int)nc : 1;
  CJob *jobs = arena_alloc(rt->a, sizeof(CJob) * (size_t)(width + 1));
  for (int lo = 0; lo < n; lo += width) {
    int hi = lo + width < n ? lo + width : n;
    for (int i = lo; i < hi; i++) cj_start(rt, ps[i], &jobs[i - lo]);
    for (int i = lo; i < hi; i++) {
      TgTry t;
      out[i] = NULL;
      if (TG_TRY(t)) { out[i] = cj_finish(rt, &jobs[i - lo]); tg_try_end(&t); }
      else if (tg_last_error.code != TG_EDEVICE) {   /* the others' compilers still run: wait for them */
        for (int k = i + 1; k < hi; k++) cj_abandon(&jobs[k - lo]);   /* (touches no error state) */
        tg_rethrow();
      }
    }
  }
}

/* ---------------------------------------------------------------- buffers */
static UOp *buf_key(UOp *buf, int shard) { return uop2(OP_NOOP, dt_void, buf, uop_const_int(dt_int, shard), v_str("tgc.rtbuf")); }

static const BufData *data_of(const Graph *g, UOp *buf) {
  if (g) for (int i = 0; i < g->ndata; i++) if (g->data[i].buf == buf) return &g->data[i];
  return NULL;
}

/* "row N (OP): " for the first graph row that is buf or that the schedule realizes into it, else "" */
static const char *buffer_row(Runtime *rt, UOp *buf) {
  const Graph *g = rt->graph;
  for (int i = 0; g && i < g->nrows; i++) {
    UOp *u = g->rows[i], *m = u && rt->kmap ? rmap_get(rt->kmap, u) : u;
    for (int depth = 0; m && m != buf && m->nsrc && depth < 64; depth++) m = m->src[0];
    if (u && m == buf) return arena_printf(rt->a, "row %d (%s): ", i, op_names[u->op]);
  }
  return "";
}

RtBuf *rt_buffer(Runtime *rt, UOp *buf, int shard) {
  if (shard < 0 && buf->op == OP_BUFFER) {  /* a replicated multi-device buffer reads as shard 0 */
    const Value *d = u_device(buf);
    if (d && d->kind == V_TUPLE) shard = 0;
  }
  UOp *key = buf_key(buf, shard);
  RtBuf *b = map_get(&rt->bufs, key, uop_h(key), NULL);
  if (b) return b;
  if (buf->op == OP_BUFFER_VIEW && buf->arg->kind == V_TUPLE && buf->arg->n == 2) {
    /* a sub-buffer: its base's memory at offset * the base's itemsize (Buffer.view); a symbolic
     * offset (a shrink by a bound variable) takes the schedule's variable values */
    const Value *ov = buf->arg->items[1];
    if (ov->kind != V_INT && ov->kind != V_UOP) tg_fail(TG_EDEVICE, "runtime: a BUFFER_VIEW offset that is neither an int nor a UOp");
    int64_t off = ov->kind == V_INT ? ov->i : sym_infer(ov->u, rt->nvars, rt->vars, rt->vals);
    if (off < 0) tg_fail(TG_EDEVICE, "runtime: a BUFFER_VIEW at offset %lld", (long long)off);
    UOp *base = u_buf_uop(buf->src[0]);
    int bshard = shard;
    /* a view of MSTACK(a, b, ...) is, on each shard, a view of that shard's buffer */
    if (base->op == OP_MSTACK && base->nsrc) { base = u_buf_uop(base->src[shard > 0 && shard < base->nsrc ? shard : 0]); bshard = -1; }
    rt_alias(rt, buf, shard, base, bshard, (size_t)off * (size_t)dt_base(base->dtype)->itemsize);
    return map_get(&rt->bufs, key, uop_h(key), NULL);
  }
  if (buf->op != OP_BUFFER || buf->arg->kind != V_INT) tg_fail(TG_EINPUT, "runtime: a %s is not a buffer", op_names[buf->op]);
  b = arena_alloc(rt->a, sizeof *b);
  b->buf = buf; b->shard = shard;
  int64_t n = buf->arg->i, isz = dt_base(buf->dtype)->itemsize;
  long pages = sysconf(_SC_PHYS_PAGES), psz = sysconf(_SC_PAGESIZE);
  double ram = pages > 0 && psz > 0 ? (double)pages * (double)psz : 0;
  if (n < 0 || (ram > 0 && (double)n * (double)isz > ram)) /* refused before asking the allocator */
    tg_fail(TG_EINPUT, "%sa buffer of %lld %s elements (%.0f bytes) is more than this machine's %.0f bytes of memory",
            buffer_row(rt, buf), (long long)n, dt_repr(rt->a, buf->dtype), (double)n * (double)isz, ram);
  b->nbytes = (size_t)n * (size_t)isz;
  b->data = calloc(1, b->nbytes ? b->nbytes : 1);
  if (!b->data) tg_fail(TG_EDEVICE, "out of host memory allocating %zu bytes", b->nbytes);
  b->owned = true;
  vec_push(&rt->owned, b->data);
  const BufData *d = data_of(rt->graph, buf);
  if (d) memcpy(b->data, d->bytes, d->nbytes < b->nbytes ? d->nbytes : b->nbytes);
  map_put(&rt->bufs, key, uop_h(key), b);
  return b;
}

void rt_alias(Runtime *rt, UOp *view, int vshard, UOp *base, int bshard, size_t byte_offset) {
  RtBuf *bb = rt_buffer(rt, base, bshard);
  UOp *key = buf_key(view, vshard);
  RtBuf *b = arena_alloc(rt->a, sizeof *b);
  b->buf = view; b->shard = vshard;
  int64_t n = view->arg->kind == V_TUPLE ? view->arg->items[0]->i : view->arg->i;
  b->nbytes = (size_t)n * (size_t)dt_base(view->dtype)->itemsize;
  if (byte_offset + b->nbytes > bb->nbytes) tg_fail(TG_EINPUT, "BUFFER_VIEW of %zu bytes at %zu is outside its %zu-byte base", b->nbytes, byte_offset, bb->nbytes);
  b->data = bb->data + byte_offset;
  map_put(&rt->bufs, key, uop_h(key), b);
}

bool rt_item_var(const SchedItem *si, int n, UOp *const *vars, const int64_t *vals, const char *name, int64_t *out) {
  for (int j = 0; j < si->nvars; j++) {
    UOp *v = si->vars[j];
    if (v->op == OP_BIND) v = v->src[0];
    if (v->op == OP_DEFINE_VAR && strcmp(v->arg->items[0]->s, name) == 0) { *out = si->vals[j]; return true; }
  }
  /* tinygrad runs every item with the schedule's one var_vals */
  for (int j = 0; j < n; j++)
    if (vars[j]->op == OP_DEFINE_VAR && strcmp(vars[j]->arg->items[0]->s, name) == 0) { *out = vals[j]; return true; }
  return false;
}
int64_t rt_var(const Runtime *rt, const SchedItem *si, const Program *p, const char *name) {
  int64_t v;
  if (!rt_item_var(si, rt->nvars, rt->vars, rt->vals, name, &v)) tg_fail(TG_EINPUT, "kernel %s: no value for variable %s", p->name, name);
  return v;
}

int rt_cpu_lanes(void) {
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f")) return 16;
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return 8;
#endif
  return 4;
}

/* ---------------------------------------------------------------- running */
Program *rt_lower(Runtime *rt, UOp *ast, const KOptCfg *cfg, const KTarget *tg) {
  TgTry t;
  if (TG_TRY(t)) {
    Program *p = lower_kernel_for(ast, &rt->names, cfg, tg ? tg : lower_get_target());
    tg_try_end(&t);
    return p;
  }
  tg_fail_in(arena_printf(rt->a, "schedule item %d", rt->item));   /* which kernel could not be built */
}

/* run a kernel item on the CPU: compile (or load) it on first use, bind buffers and variables */
static const Program *cpu_run_kernel(Runtime *rt, const SchedItem *si) {
  UOp *ast = si->ast;
  RtKernel *k = map_get(&rt->kernels, ast, uop_h(ast), NULL);
  if (!k) {
    if (rt->beam > 0) {
      KOptCfg cfg = rt_beam(rt, ast, rt->beam);
      k = rt_compile(rt, rt_lower(rt, ast, &cfg, NULL));
    } else {
      KOptCfg cfg = *lower_get_opt_config();
      cfg.cpu_lanes = rt_cpu_lanes();
      k = rt_compile(rt, rt_lower(rt, ast, &cfg, NULL));
    }
    map_put(&rt->kernels, ast, uop_h(ast), k);
  }
  const Program *p = k->prg;
  void **bufs = arena_alloc(rt->a, sizeof(void *) * (size_t)(p->nglobals + 1));
  long long *vars = arena_alloc(rt->a, sizeof(long long) * (size_t)(p->nvars + 1));
  for (int i = 0; i < p->nglobals; i++) {
    int slot = (int)p->globals[i].u->arg->i;
    if (slot < 0 || slot >= si->nbufs) tg_fail(TG_EINPUT, "kernel %s: DEFINE_GLOBAL %d but the item has %d buffers", p->name, slot, si->nbufs);
    bufs[i] = rt_buffer(rt, si->bufs[slot].buf, si->bufs[slot].shard)->data;
  }
  for (int i = 0; i < p->nvars; i++) vars[i] = rt_var(rt, si, p, p->vars[i]->arg->items[0]->s);
  k->entry(bufs, vars);
  return p;
}

void rt_run_item(Runtime *rt, const SchedItem *si) {
  UOp *ast = si->ast;
  if (ast->op == OP_BUFFER_VIEW) {
    if (si->nbufs < 2) tg_fail(TG_EINPUT, "BUFFER_VIEW item needs 2 buffers");
    UOp *base = si->bufs[1].buf;
    if (si->bufs[0].buf->op == OP_BUFFER_VIEW) { rt_buffer(rt, si->bufs[0].buf, si->bufs[0].shard); return; }
    rt_alias(rt, si->bufs[0].buf, si->bufs[0].shard, base, si->bufs[1].shard,
             (size_t)ast->arg->items[1]->i * (size_t)dt_base(base->dtype)->itemsize);
    return;
  }
  if (ast->op == OP_COPY) {
    if (si->nbufs < 2) tg_fail(TG_EINPUT, "COPY item needs 2 buffers");
    RtBuf *d = rt_buffer(rt, si->bufs[0].buf, si->bufs[0].shard), *s = rt_buffer(rt, si->bufs[1].buf, si->bufs[1].shard);
    if (d->data != s->data) memmove(d->data, s->data, d->nbytes < s->nbytes ? d->nbytes : s->nbytes);
    return;
  }
  cpu_run_kernel(rt, si);
}

int rt_run_items(Runtime *rt, const Schedule *s, RtKernelFn run_kernel) {
  int n = 0;
  rt->kmap = &s->kernelize_map;
  for (int i = 0; i < s->nitems; i++) {
    const SchedItem *si = &s->items[i];
    double t0 = rt->item_ms ? tg_now_ms() : 0;
    const Program *p = NULL;
    rt->item = i;
    if (si->ast->op == OP_SINK) p = run_kernel(rt, si), n++;
    else rt_run_item(rt, si);
    if (rt->item_ms) rt->item_ms[i] = tg_now_ms() - t0, rt->item_prg[i] = p;
  }
  return n;
}
int rt_run_schedule(Runtime *rt, const Schedule *s) { return rt_run_items(rt, s, cpu_run_kernel); }

/* ---------------------------------------------------------------- reading values */
/* MULTI(x, axis): the shards of x laid side by side along axis (all equal when axis is None) */
static size_t read_multi(Runtime *rt, UOp *t, void *out, size_t cap) {
  UOp *x = t->src[0];
  UOp *bb = u_base(x);
  if (bb->op == OP_ASSIGN) bb = u_buf_uop(bb);
  const Value *dev = u_device(bb);
  int ns = dev && dev->kind == V_TUPLE ? dev->n : 1;
  if (t->arg->kind != V_INT || ns == 1) return rt_read(rt, x, ns == 1 ? -1 : 0, out, cap);
  SList sh = u_shape(x);
  int axis = (int)t->arg->i;
  size_t isz = (size_t)x->dtype->itemsize, outer = 1, inner = isz;
  for (int k = 0; k < sh.n; k++) {
    if (!si_is_int(sh.v[k])) tg_fail(TG_EINPUT, "runtime: can't read a symbolic shape");
    if (k < axis) outer *= (size_t)sh.v[k].c; else inner *= (size_t)sh.v[k].c;
  }
  size_t per = outer * inner, total = per * (size_t)ns;
  if (total > cap) tg_fail(TG_EINPUT, "runtime: output of %zu bytes does not fit %zu", total, cap);
  unsigned char *tmp = arena_alloc(rt->a, per ? per : 1), *o = out;
  for (int sd = 0; sd < ns; sd++) {
    rt_read(rt, x, sd, tmp, per);
    for (size_t i = 0; i < outer; i++) memcpy(o + (i * (size_t)ns + (size_t)sd) * inner, tmp + i * inner, inner);
  }
  return total;
}

/* the elements of st's shape gathered from src (nbytes long; 0: a broadcast value, every valid
 * element is src's one element), 0 where a mask or the bounds exclude them; returns bytes written */
static size_t st_gather(const ShapeTracker *st, const unsigned char *src, size_t nbytes, size_t isz, void *out, size_t cap) {
  Sint sz = st_size(st);
  if (!si_is_int(sz)) tg_fail(TG_EINPUT, "runtime: can't read a symbolic shape");
  size_t total = (size_t)sz.c;
  if (total * isz > cap) total = cap / isz;
  unsigned char *o = out;
  for (size_t i = 0; i < total; i++) {
    int64_t off = (int64_t)i;
    bool valid = true;
    for (int vi = st->nviews - 1; vi >= 0 && valid; vi--) {
      const View *v = st->views[vi];
      int64_t idx[64], rem = off, acc = v->offset.c;
      for (int k = v->ndim - 1; k >= 0; k--) {
        int64_t d = v->shape[k].c;
        idx[k] = d ? rem % d : 0;
        rem = d ? rem / d : 0;
      }
      for (int k = 0; k < v->ndim; k++) {
        if (v->mask && (idx[k] < v->mask[2 * k].c || idx[k] >= v->mask[2 * k + 1].c)) valid = false;
        acc += idx[k] * v->strides[k].c;
      }
      off = acc;
    }
    if (valid && !nbytes) memcpy(o + i * isz, src, isz);
    else if (valid && off >= 0 && (size_t)(off + 1) * isz <= nbytes) memcpy(o + i * isz, src + (size_t)off * isz, isz);
    else memset(o + i * isz, 0, isz);
  }
  return total * isz;
}

void rt_const_bytes(const DType *dt, const Value *v, unsigned char *out) {
  double f = v->kind == V_FLOAT ? v->f : v->kind == V_BOOL ? v->b : (double)v->i;
  int64_t n = v->kind == V_FLOAT ? (int64_t)v->f : v->kind == V_BOOL ? v->b : v->i;
  float ff = (float)f;
  uint16_t h;
  memset(out, 0, (size_t)dt->itemsize);
  switch (dt->scalar) {
  case SC_FLOAT: memcpy(out, &ff, 4); break;
  case SC_DOUBLE: memcpy(out, &f, 8); break;
  case SC_HALF: h = render_f2h(ff); memcpy(out, &h, 2); break;
  case SC_BFLOAT16: h = render_f2bf(ff); memcpy(out, &h, 2); break;
  case SC_BOOL: out[0] = f != 0; break;
  default: for (int k = 0; k < dt->itemsize && k < 8; k++) out[k] = (unsigned char)((uint64_t)n >> (8 * k)); break;
  }
}

UOp *rt_value_base(UOp *t, int *shard) {
  UOp *base = u_base(t);
  /* t's views over MSELECT(x, i) read x's shard i; over MSTACK(a, b, ...), the shard's own buffer */
  for (int guard = 0; guard < 8; guard++) {
    if (base->op == OP_ASSIGN) base = u_buf_uop(base);
    if (base->op == OP_MSELECT && base->nsrc && base->arg->kind == V_INT) { *shard = (int)base->arg->i; base = u_base(base->src[0]); }
    else if (base->op == OP_MSTACK && base->nsrc) { base = u_base(base->src[*shard > 0 && *shard < base->nsrc ? *shard : 0]); *shard = -1; }
    else break;
  }
  /* a realized tensor is an ASSIGN into its buffer (becomes_map sends it to buf_uop) */
  if (base->op == OP_ASSIGN) base = u_buf_uop(base);
  /* a constant is never realized: tinygrad's scheduler leaves a CONST, or a bound variable's BIND */
  if (base->op == OP_BIND && base->nsrc == 2 && base->src[1]->op == OP_CONST) base = base->src[1];
  return base;
}

const char *rt_source(UOp *t, int shard, RtBind bind, const void *bctx, RtSource *src) {
  UOp *base = rt_value_base(t, &shard);
  *src = (RtSource){base, shard, NULL};
  bool cst = base->op == OP_CONST;
  if (!cst && base->op != OP_BUFFER && base->op != OP_BUFFER_VIEW) return arena_printf(ga(), "a %s, not a realized buffer", op_names[base->op]);
  if (t == base && !cst) return NULL;
  const ShapeTracker *st = u_st(t);
  /* a constant is its value through t's views (its shape's, when it has none), 0 where they mask it */
  if (!st && cst) st = st_from_shape(u_shape(t), NULL);
  if (!st) return arena_printf(ga(), "a %s without a shape", op_names[t->op]);
  if (bind) st = bind(st, bctx);
  if (!cst && st_contiguous(st)) return NULL;
  src->st = st;
  return NULL;
}

size_t rt_read(Runtime *rt, UOp *t, int shard, void *out, size_t cap) {
  if (t->op == OP_MULTI) return read_multi(rt, t, out, cap);
  RtSource src;
  const char *why = rt_source(t, shard, NULL, NULL, &src);
  if (why) tg_fail(TG_EINPUT, "runtime: can't read %s", why);
  return rt_read_st(rt, src.base, src.shard, src.st, out, cap);
}

size_t rt_read_st(Runtime *rt, UOp *base, int shard, const ShapeTracker *st, void *out, size_t cap) {
  if (base->op == OP_CONST) { /* its value through st (which it needs: a constant has no buffer), 0 where st masks it */
    if (!st) tg_fail(TG_EINTERNAL, "runtime: a constant read without its view");
    unsigned char v[16];
    rt_const_bytes(dt_base(base->dtype), base->arg, v);
    return st_gather(st, v, 0, (size_t)dt_base(base->dtype)->itemsize, out, cap);
  }
  RtBuf *b = rt_buffer(rt, base, shard);
  if (!st) {
    size_t n = b->nbytes < cap ? b->nbytes : cap;
    memcpy(out, b->data, n);
    return n;
  }
  return st_gather(st, b->data, b->nbytes, (size_t)dt_base(base->dtype)->itemsize, out, cap);
}
