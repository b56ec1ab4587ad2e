/* test_runtime: the CPU runtime on the numeric corpus (values recorded from tinygrad 0.11.0 in
 * $TGC_ORACLE/numeric/NAME.expect.json `outputs`), compared with rtol 1e-4 / atol 1e-5 (1e-3 for
 * half and bfloat16: tgc rounds every 16-bit op, tinygrad's clang keeps inlined ops in float).
 *   expect_schedules  runs tinygrad's own schedule (the expect file's ASTs and buffers), so it
 *                     tests codegen + runtime without the scheduler; an output is matched against
 *                     the buffers written with its dtype and size (views of buffers can't match).
 *   end_to_end        the graph through create_schedule, rt_run_schedule and rt_read.
 *   cache, compiler_failure: the kernel cache and TG_EDEVICE diagnostics. */
#include <criterion/criterion.h>
#include <cjson/cJSON.h>
#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "driver/driver.h"
#include "corpus.h"
#include "render/render.h"
#include "runtime/runtime.h"

static const char *oracle(void) {
  const char *o = getenv("TGC_ORACLE");
  return o && *o ? o : "../shared/oracle";
}
static char cache_dir[] = "/tmp/tgc_rtcache_XXXXXX";
static void use_temp_cache(void) {
  static bool made;
  if (!made) { cr_assert(mkdtemp(cache_dir) != NULL); made = true; corpus_tmp_track(cache_dir); }
  setenv("XDG_CACHE_HOME", cache_dir, 1);
}
TestSuite(runtime, .fini = corpus_tmp_fini);

/* values equal within rtol 1e-4 / atol 1e-5 (floats), 1e-3 for 16-bit floats, exact for ints:
 * driver_close's rule (what `tgc run --expect` uses) with the tighter 16-bit tolerance */
static bool close_enough(const DType *dt, const void *got, const void *want, size_t n, char *why, size_t wn) {
  bool f16 = dt->scalar == SC_HALF || dt->scalar == SC_BFLOAT16;
  return driver_close_tol(dt, got, want, n, f16 ? 1e-3 : 1e-4, f16 ? 1e-3 : 1e-5, why, wn);
}
/* 1 pass, 0 fail, -1 skipped (multi-device) */
static int run_case(const char *expect_path, char *msg, size_t mn) {
  msg[0] = 0;
  char gpath[1024];
  snprintf(gpath, sizeof gpath, "%s", expect_path);
  char *dot = strstr(gpath, ".expect.json");
  if (!dot) { snprintf(msg, mn, "not an expect file"); return 0; }
  strcpy(dot, ".graph.json");
  UCtx *c = uop_ctx_new();
  volatile int res = 0;
  Runtime *volatile rt = NULL;
  TgTry t;
  if (TG_TRY(t)) {
    Graph *g = graph_read_file(gpath);
    Expect *x = expect_read_file(expect_path);
    size_t n;
    char *text = read_file(ga(), expect_path, &n);
    cJSON *doc = cJSON_ParseWithLength(text, n);
    cJSON *sched = cJSON_GetObjectItem(doc, "schedule");
    int ni = cJSON_GetArraySize(sched);
    Schedule s = {0};
    s.nitems = ni;
    s.items = arena_alloc(ga(), sizeof(SchedItem) * (size_t)(ni + 1));
    UOp **written = arena_alloc(ga(), sizeof(UOp *) * (size_t)(ni + 1));
    bool skip = false;
    for (int k = 0; k < ni && !skip; k++) {
      cJSON *it = cJSON_GetArrayItem(sched, k), *bufs = cJSON_GetObjectItem(it, "bufs");
      SchedItem *si = &s.items[k];
      si->ast = x->items[k].ast;
      si->nbufs = cJSON_GetArraySize(bufs);
      si->bufs = arena_alloc(ga(), sizeof(SchedBuf) * (size_t)(si->nbufs + 1));
      for (int b = 0; b < si->nbufs; b++) {
        cJSON *bj = cJSON_GetObjectItem(cJSON_GetArrayItem(bufs, b), "buffer");
        cJSON *dev = bj ? cJSON_GetObjectItem(bj, "device") : NULL;
        if (!bj || !cJSON_IsString(dev)) { skip = true; break; }
        int64_t uq = (int64_t)cJSON_GetObjectItem(bj, "unique")->valuedouble;
        UOp *buf = NULL;
        for (int r = 0; r < g->nrows && !buf; r++) {
          UOp *u = g->rows[r];
          if (u && u->op == OP_BUFFER && u->src[0]->op == OP_UNIQUE && u->src[0]->arg->i == uq) buf = u;
        }
        if (!buf) {
          const DType *dt = dt_parse(cJSON_GetObjectItem(bj, "dtype")->valuestring);
          buf = uop2(OP_BUFFER, dt, uop0(OP_UNIQUE, dt_void, v_int(uq)), uop0(OP_DEVICE, dt_void, v_str(dev->valuestring)),
                     v_int((int64_t)cJSON_GetObjectItem(bj, "size")->valuedouble));
        }
        si->bufs[b] = (SchedBuf){buf, -1};
      }
      written[k] = si->nbufs ? si->bufs[0].buf : NULL;
    }
    cJSON_Delete(doc);
    if (skip) { snprintf(msg, mn, "multi-device"); res = -1; }
    else {
      rt = rt_new(g);
      int nk = rt_run_schedule(rt, &s);
      int good = 0;
      for (int o = 0; o < x->noutputs; o++) {
        ExpectOut *eo = &x->outputs[o];
        size_t nel = eo->nbytes / (size_t)eo->dtype->itemsize;
        bool hit = false;
        char why[256] = "no buffer of that dtype and size";
        /* the output is some written buffer of its dtype and size; try the last writers first */
        for (int k = ni - 1; k >= 0 && !hit; k--) {
          UOp *w = written[k];
          if (!w || dt_base(w->dtype) != eo->dtype || (size_t)w->arg->i != nel) continue;
          RtBuf *rb = rt_buffer(rt, w, -1);
          hit = close_enough(eo->dtype, rb->data, eo->bytes, nel, why, sizeof why);
        }
        if (hit) good++;
        else snprintf(msg + strlen(msg), mn - strlen(msg), "out%d: %s; ", o, why);
      }
      res = good == x->noutputs;
      snprintf(msg + strlen(msg), mn - strlen(msg), "%d kernels, %d/%d outputs, %d compiled, %d cached", nk, good, x->noutputs, rt->ncompiled, rt->ncached);
    }
    tg_try_end(&t);
  } else {
    snprintf(msg, mn, "error %d: %s", tg_last_error.code, tg_last_error.msg);
    res = 0;
  }
  rt_free(rt);
  uop_ctx_free(c);
  return res;
}

/* the whole graph: tgc's scheduler, then the runtime; 1 pass, 0 fail */
static int run_e2e(const char *ep, char *msg, size_t mn) {
  char gpath[1024];
  snprintf(gpath, sizeof gpath, "%s", ep);
  strcpy(strstr(gpath, ".expect.json"), ".graph.json");
  UCtx *c = uop_ctx_new();
  volatile int res = 0;
  Runtime *volatile rt = NULL;
  TgTry t;
  msg[0] = 0;
  if (TG_TRY(t)) {
    Graph *g = graph_read_file(gpath);
    Expect *x = expect_read_file(ep);
    uctx->opt = g->opt;
    if (g->max_unique >= uctx->next_unique) uctx->next_unique = g->max_unique + 1;
    Schedule *s = create_schedule(g->sink);
    rt = rt_new(g);
    int nk = rt_run_schedule(rt, s), good = 0;
    for (int o = 0; o < x->noutputs && o < s->sched_sink->nsrc; o++) {
      ExpectOut *eo = &x->outputs[o];
      void *buf = arena_alloc(ga(), eo->nbytes + 16);
      char why[256] = "";
      size_t n = rt_read(rt, s->sched_sink->src[o], -1, buf, eo->nbytes);
      if (n == eo->nbytes && close_enough(eo->dtype, buf, eo->bytes, eo->nbytes / (size_t)eo->dtype->itemsize, why, sizeof why)) good++;
      else snprintf(msg + strlen(msg), mn - strlen(msg), "out%d: %zu bytes %s; ", o, n, why);
    }
    res = good == x->noutputs;
    snprintf(msg + strlen(msg), mn - strlen(msg), "%d kernels, %d/%d outputs", nk, good, x->noutputs);
    tg_try_end(&t);
  } else snprintf(msg, mn, "error %d: %s", tg_last_error.code, tg_last_error.msg);
  rt_free(rt);
  uop_ctx_free(c);
  return res;
}

typedef int (*CaseFn)(const char *, char *, size_t);
/* run fn on every numeric case; counts passes and non-skipped cases */
static void run_all(CaseFn fn, const char *what, int *pass, int *total) {
  char dirp[1024];
  snprintf(dirp, sizeof dirp, "%s/numeric", oracle());
  DIR *d = opendir(dirp);
  cr_assert(d != NULL, "no corpus at %s", dirp);
  struct dirent *e;
  char names[256][256];
  int n = 0;
  while ((e = readdir(d)) && n < 256) {
    size_t l = strlen(e->d_name);
    if (l > 12 && strcmp(e->d_name + l - 12, ".expect.json") == 0) snprintf(names[n++], 256, "%s", e->d_name);
  }
  closedir(d);
  *pass = *total = 0;
  for (int i = 0; i < n; i++) {
    char path[1400], msg[2048];
    snprintf(path, sizeof path, "%.1000s/%.255s", dirp, names[i]);
    int r = fn(path, msg, sizeof msg);
    if (r < 0) continue;
    (*total)++;
    if (r == 1) (*pass)++;
    else fprintf(stderr, "runtime %s: %s: %s\n", what, names[i], msg); /* cr_log_warn would fail the run */
  }
  fprintf(stderr, "runtime %s: %d/%d numeric cases match tinygrad\n", what, *pass, *total);
}

/* tinygrad's schedules, run by tgc: every single-device case but cat_stack_split and
 * mlp_backward, whose outputs are views (split, transposed gradient) of the buffers */
Test(runtime, expect_schedules, .timeout = 600) {
  use_temp_cache();
  int pass, total;
  run_all(run_case, "expect schedules", &pass, &total);
  cr_expect_geq(total, 37);
  cr_expect_geq(pass, total - 2);
}

/* the full pipeline; all 38 numeric cases */
Test(runtime, end_to_end, .timeout = 600) {
  use_temp_cache();
  int pass, total;
  run_all(run_e2e, "end to end", &pass, &total);
  cr_expect_geq(total, 38);
  cr_expect_eq(pass, total);
}

/* one matmul kernel AST (numeric.matmul), lowered */
static const Program *matmul_program(void) {
  char path[1024];
  snprintf(path, sizeof path, "%s/numeric/numeric.matmul.59608b.expect.json", oracle());
  Expect *x = expect_read_file(path);
  return lower_kernel(x->items[0].ast, NULL);
}

/* the second compile of the same source is a cache hit; the kernel computes 1x1 @ 1x1 */
Test(runtime, cache) {
  static char dir[] = "/tmp/tgc_rtcache2_XXXXXX";
  cr_assert(mkdtemp(dir) != NULL);
  corpus_tmp_track(dir);
  setenv("XDG_CACHE_HOME", dir, 1);
  UCtx *c = uop_ctx_new();
  TgTry t;
  if (TG_TRY(t)) {
    const Program *p = matmul_program();
    Runtime *r1 = rt_new(NULL);
    RtKernel *k = rt_compile(r1, p);
    cr_expect_eq(r1->ncompiled, 1);
    cr_expect_eq(r1->ncached, 0);
    Runtime *r2 = rt_new(NULL);
    rt_compile(r2, p);
    cr_expect_eq(r2->ncompiled, 0);
    cr_expect_eq(r2->ncached, 1);
    /* data0[i,j] = sum_k data1[i,k] * data2[k,j] over the kernel's own sizes: all ones -> K */
    size_t sz[3];
    for (int i = 0; i < 3; i++) sz[i] = (size_t)p->globals[i].u->dtype->size;
    float *b0 = calloc(sz[0], 4), *b1 = malloc(sz[1] * 4), *b2 = malloc(sz[2] * 4);
    for (size_t i = 0; i < sz[1]; i++) b1[i] = 1;
    for (size_t i = 0; i < sz[2]; i++) b2[i] = 1;
    void *bufs[3] = {b0, b1, b2};
    k->entry(bufs, NULL);
    float kdim = b0[0];
    cr_expect(kdim >= 1 && kdim == floorf(kdim), "got %g", kdim);
    for (size_t i = 0; i < sz[0]; i++) cr_expect(b0[i] == kdim);
    free(b0); free(b1); free(b2);
    rt_free(r1); rt_free(r2);
    tg_try_end(&t);
  } else cr_assert_fail("%s", tg_last_error.msg);
  uop_ctx_free(c);
}

/* a compiler that fails gives TG_EDEVICE "kernel NAME: <its diagnostics>" */
Test(runtime, compiler_failure) {
  static char dir[] = "/tmp/tgc_rtcache3_XXXXXX";
  cr_assert(mkdtemp(dir) != NULL);
  corpus_tmp_track(dir);
  setenv("XDG_CACHE_HOME", dir, 1);
  setenv("TGC_CC", "sh", 1);
  UCtx *c = uop_ctx_new();
  TgTry t;
  volatile bool failed = false;
  if (TG_TRY(t)) {
    const Program *p = matmul_program();
    Runtime *r = rt_new(NULL);
    rt_compile(r, p);
    tg_try_end(&t);
  } else {
    failed = true;
    cr_expect_eq(tg_last_error.code, TG_EDEVICE);
    cr_expect(strncmp(tg_last_error.msg, "kernel r_", 9) == 0, "%s", tg_last_error.msg);
    cr_expect(strlen(tg_last_error.msg) > 12, "no diagnostics: %s", tg_last_error.msg);
  }
  cr_expect(failed);
  unsetenv("TGC_CC");
  uop_ctx_free(c);
}
