/* test_driver: lib/driver (tgc compile -t c, tgc run -d cpu) on the oracle corpus, whose numeric
 * cases carry the values tinygrad 0.11.0 computed (NAME.expect.json `outputs`), and on
 * tests/aot/symbolic (schedule-corpus graphs with symbolic output shapes, given data; values from
 * tinygrad 0.11.0 by tests/aot/make_symbolic.py).
 *   run_numeric   driver_run_cpu + driver_compare on every numeric case (what `tgc run --expect` does)
 *   run_symbolic  the same on every tests/aot/symbolic case (DEFINE_VAR/BIND outputs)
 *   aot_bundle    driver_compile_c into a temp dir, then `cc -O2 -Wall -Wextra -Werror` of
 *                 tests/aot/driver.c with only the bundle's model.c and kernel files, fed the graph's
 *                 data, compared with the expect outputs: matmul and mlp_backward (outputs are views)
 *                 by name, every numeric case (multi-device ones included), every symbolic case,
 *                 and multi-device graphs without data (sharded_matmul, test_multitensor) compared
 *                 with `tgc run -d cpu` on the same generated inputs
 *   libclang      every emitted kernel .c of every schedule and numeric corpus graph (deduplicated by
 *                 content, batched into large translation units) and every model.c/model.h parse
 *                 with libclang -Wall -Wextra without a diagnostic of severity warning or above, and
 *                 no kernel file defines a static helper it does not call
 *   inputs, close: --input checks and the tolerance rule (each can fail). */
#include <criterion/criterion.h>
#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <criterion/hooks.h>
#include <time.h>
#include <unistd.h>
#include "clang_check.h"
#include "corpus.h"
#include "driver/driver.h"
#include "render/render.h"

#define case_begin corpus_case_begin
#define case_end corpus_case_end
#define oracle corpus_oracle
#define list_cases corpus_list
/* each test process's own scratch directory (tests run in parallel, each in a process of its own),
 * with its kernel cache in it; the suite's fini removes it after the test. (A directory shared by
 * the whole run, made in a PRE_ALL report hook, was never seen by the tests under Debian 12's
 * Criterion, so each process made its own anyway.) */
static char tmp_root[] = "/tmp/tgc_driver_XXXXXX";
TestSuite(driver, .fini = corpus_tmp_fini);
static const char *tmpdir(void) {
  static const char *mine;
  if (!mine) {
    mine = corpus_tmpdir(tmp_root);
    setenv("XDG_CACHE_HOME", arena_printf(ga(), "%s/cache", mine), 1);
  }
  return mine;
}
#define symbolic_dir corpus_symbolic_dir
#define src_root corpus_src_root

/* ---- run_numeric, run_symbolic ---- */
Test(driver, run_numeric, .timeout = 600) {
  UCtx *top = uop_ctx_new();
  tmpdir();
  char **names;
  int n = list_cases("numeric", &names), pass = 0;
  for (int i = 0; i < n; i++) {
    char why[1024] = "";
    if (corpus_run_numeric(names[i], "cpu", why, sizeof why)) pass++;
    else cr_log_warn("%s: %s", names[i], why);
  }
  cr_expect_geq(n, 38);
  cr_expect_eq(pass, n, "%d of %d numeric cases match", pass, n);
  uop_ctx_free(top);
}
/* outputs shaped by BIND values: tinygrad allocates the BUFFER at the shape's vmax and the value is
 * the buffer read at the bound shape (e.g. test_cat_dim1_two_vars: [3, i+j] with i=2, j=4 -> 3x6) */
Test(driver, run_symbolic, .timeout = 300) {
  UCtx *top = uop_ctx_new();
  tmpdir();
  char **names;
  int n = corpus_list_dir(symbolic_dir(), &names), pass = 0;
  for (int i = 0; i < n; i++) {
    char why[1024] = "";
    if (corpus_run_numeric_in(symbolic_dir(), names[i], "cpu", why, sizeof why)) pass++;
    else cr_log_warn("%s: %s", names[i], why);
  }
  cr_expect_geq(n, 38);
  cr_expect_eq(pass, n, "%d of %d symbolic cases match", pass, n);
  uop_ctx_free(top);
}

/* ---- aot_bundle ---- */
static int out_kind(const DType *dt) {
  switch (dt->scalar) {
  case SC_FLOAT: return 1;
  case SC_DOUBLE: return 2;
  case SC_HALF: return 3;
  case SC_BFLOAT16: return 4;
  default: return 0;
  }
}
/* deterministic data for every BUFFER row without any: small values of the row's dtype */
static void fill_missing_inputs(Graph *g) {
  for (int i = 0; i < g->nrows; i++) {
    UOp *b = g->rows[i];
    if (!b || b->op != OP_BUFFER || b->arg->kind != V_INT) continue;
    bool has = false;
    for (int k = 0; k < g->ndata && !has; k++) has = g->data[k].buf == b;
    if (has) continue;
    const DType *dt = dt_base(b->dtype);
    size_t n = (size_t)b->arg->i, isz = (size_t)dt->itemsize;
    unsigned char *p = arena_alloc(ga(), n * isz + 1);
    uint32_t x = 2463534242u ^ (uint32_t)i;
    for (size_t e = 0; e < n; e++) {
      x ^= x << 13; x ^= x >> 17; x ^= x << 5;
      int v = (int)(x % 9) - 4;
      float f = (float)v * 0.25f;
      uint16_t h;
      switch (dt->scalar) {
      case SC_FLOAT: memcpy(p + e * 4, &f, 4); break;
      case SC_DOUBLE: { double d = f; memcpy(p + e * 8, &d, 8); break; }
      case SC_HALF: h = render_f2h(f); memcpy(p + e * 2, &h, 2); break;
      case SC_BFLOAT16: h = render_f2bf(f); memcpy(p + e * 2, &h, 2); break;
      case SC_BOOL: p[e] = (unsigned char)(v > 0); break;
      default: { int64_t iv = v < 0 ? -v : v; memcpy(p + e * isz, &iv, isz); break; } /* little-endian low bytes */
      }
    }
    BufData *nd = arena_alloc(ga(), sizeof *nd * (size_t)(g->ndata + 1));
    if (g->ndata) memcpy(nd, g->data, sizeof *nd * (size_t)g->ndata);
    nd[g->ndata] = (BufData){b, p, n * isz};
    g->data = nd;
    g->ndata++;
  }
}
/* build the bundle of g in DIR with tests/aot/driver.c, feed it g's data and compare its outputs
 * with the nout expected (dtype, bytes) pairs; 1 pass, 0 fail */
static bool aot_omp; /* build the bundles with --threads 0 (OpenMP) */
static int aot_build_run(Graph *g, Schedule *s, const char *dir, int nout, const DType *const *edt, const void *const *eb, const size_t *en,
                         char *why, size_t wn) {
  driver_compile_threads(aot_omp ? 0 : 1);
  driver_compile_c(g, s, dir);
  driver_compile_threads(1);
  /* CASE.h, INPUTS.bin, EXPECT.bin */
  char *hdr = "#define AOT_IN_BYTES {", *inb = arena_alloc(ga(), 1);
  size_t inn = 0;
  int nin = 0;
  for (int i = 0; i < g->nrows; i++) {
    UOp *b = g->rows[i];
    if (!b || b->op != OP_BUFFER) continue;
    size_t nb = (size_t)b->arg->i * (size_t)dt_base(b->dtype)->itemsize;
    char *ninb = arena_alloc(ga(), inn + nb + 1);
    memcpy(ninb, inb, inn);
    memset(ninb + inn, 0, nb);
    for (int k = 0; k < g->ndata; k++) if (g->data[k].buf == b) memcpy(ninb + inn, g->data[k].bytes, g->data[k].nbytes < nb ? g->data[k].nbytes : nb);
    inb = ninb;
    inn += nb;
    hdr = arena_printf(ga(), "%s%s%zu", hdr, nin++ ? ", " : "", nb);
  }
  if (!nin) hdr = arena_printf(ga(), "%s0", hdr);
  char *ob = "{", *ok = "{", *exb = arena_alloc(ga(), 1);
  size_t exn = 0;
  for (int o = 0; o < nout; o++) {
    char *nex = arena_alloc(ga(), exn + en[o] + 1);
    memcpy(nex, exb, exn);
    memcpy(nex + exn, eb[o], en[o]);
    exb = nex;
    exn += en[o];
    ob = arena_printf(ga(), "%s%s%zu", ob, o ? ", " : "", en[o]);
    ok = arena_printf(ga(), "%s%s%d", ok, o ? ", " : "", out_kind(edt[o]));
  }
  hdr = arena_printf(ga(), "%s}\n#define AOT_OUT_BYTES %s%s}\n#define AOT_OUT_KIND %s%s}\n", hdr, ob, nout ? "" : "0", ok, nout ? "" : "0");
  char *hp = arena_printf(ga(), "%s.case.h", dir), *ip = arena_printf(ga(), "%s.in.bin", dir), *ep = arena_printf(ga(), "%s.exp.bin", dir);
  cr_assert(corpus_write_bytes(hp, hdr, strlen(hdr)) && corpus_write_bytes(ip, inb, inn) && corpus_write_bytes(ep, exb, exn));
  const char *omp = aot_omp ? " -fopenmp" : "";
  char *cmd = arena_printf(ga(), "cd '%s' && cc -O2%s -Wall -Wextra -Werror -c *.c >'%s.cc.log' 2>&1 && "
                                 "cc -O2%s -Wall -Werror -I'%s' -include '%s' '%s/tests/aot/driver.c' '%s'/*.c -o '%s.exe' -lm >>'%s.cc.log' 2>&1 && "
                                 "'%s.exe' '%s' '%s' >>'%s.cc.log' 2>&1",
                           dir, omp, dir, omp, dir, hp, src_root(), dir, dir, dir, dir, ip, ep, dir);
  int st = system(cmd);
  int res = WIFEXITED(st) && WEXITSTATUS(st) == 0;
  if (!res) {
    size_t ln;
    char *log = read_file(ga(), arena_printf(ga(), "%s.cc.log", dir), &ln);
    snprintf(why, wn, "status %d: %.700s", WIFEXITED(st) ? WEXITSTATUS(st) : -1, log ? log : "");
  }
  return res;
}
/* the bundle of corpus case dirp/name against its expect outputs; 1 pass, 0 fail */
static int aot_case_in(const char *dirp, const char *name, char *why, size_t wn) {
  UCtx *c = case_begin();
  volatile int res = 0;
  TgTry t;
  if (TG_TRY(t)) {
    Graph *g = graph_read_file(arena_printf(ga(), "%s/%s.graph.json", dirp, name));
    Expect *x = expect_read_file(arena_printf(ga(), "%s/%s.expect.json", dirp, name));
    Schedule *s = driver_schedule(g);
    const DType **edt = arena_alloc(ga(), sizeof *edt * (size_t)(x->noutputs + 1));
    const void **eb = arena_alloc(ga(), sizeof *eb * (size_t)(x->noutputs + 1));
    size_t *en = arena_alloc(ga(), sizeof *en * (size_t)(x->noutputs + 1));
    for (int o = 0; o < x->noutputs; o++) { edt[o] = x->outputs[o].dtype; eb[o] = x->outputs[o].bytes; en[o] = x->outputs[o].nbytes; }
    res = aot_build_run(g, s, arena_printf(ga(), "%s/%s", tmpdir(), name), x->noutputs, edt, eb, en, why, wn);
    tg_try_end(&t);
  } else snprintf(why, wn, "error %d: %.900s", tg_last_error.code, tg_last_error.msg);
  case_end(c);
  return res;
}
static int aot_case(const char *name, char *why, size_t wn) { return aot_case_in(arena_printf(ga(), "%s/numeric", oracle()), name, why, wn); }
/* the bundle of graph path (inputs generated where it has none) against `tgc run -d cpu`; 1 pass,
 * 0 fail, -1 when the graph has no multi-device buffer (multi set) */
static int aot_vs_run(const char *path, bool multi, char *why, size_t wn) {
  UCtx *c = case_begin();
  volatile int res = 0;
  TgTry t;
  if (TG_TRY(t)) {
    Graph *g = graph_read_file(path);
    Schedule *s = driver_schedule(g);
    bool any = false;
    for (int i = 0; i < s->nitems && !any; i++) any = s->items[i].shard >= 0;
    if (multi && !any) res = -1;
    else {
      fill_missing_inputs(g);
      driver_check_inputs(g, s);
      DriverRun *r = driver_run_cpu(g, s);
      const DType **edt = arena_alloc(ga(), sizeof *edt * (size_t)(r->noutputs + 1));
      const void **eb = arena_alloc(ga(), sizeof *eb * (size_t)(r->noutputs + 1));
      size_t *en = arena_alloc(ga(), sizeof *en * (size_t)(r->noutputs + 1));
      for (int o = 0; o < r->noutputs; o++) { edt[o] = r->outs[o].dtype; eb[o] = r->outs[o].data; en[o] = r->outs[o].nbytes; }
      const char *base = strrchr(path, '/');
      res = aot_build_run(g, s, arena_printf(ga(), "%s/vs_%s", tmpdir(), base ? base + 1 : path), r->noutputs, edt, eb, en, why, wn);
    }
    tg_try_end(&t);
  } else snprintf(why, wn, "error %d: %.900s", tg_last_error.code, tg_last_error.msg);
  case_end(c);
  return res;
}
Test(driver, aot_bundle_named, .timeout = 300) {
  UCtx *top = uop_ctx_new();
  static const char *const named[] = {"numeric.matmul.59608b", "numeric.mlp_backward"};
  char **names;
  int n = list_cases("numeric", &names), found = 0;
  for (size_t k = 0; k < sizeof named / sizeof *named; k++)
    for (int i = 0; i < n; i++) {
      if (strncmp(names[i], named[k], strlen(named[k]))) continue;
      char why[1024] = "";
      found++;
      cr_expect_eq(aot_case(names[i], why, sizeof why), 1, "%s: %s", names[i], why);
    }
  cr_expect_eq(found, 2);
  uop_ctx_free(top);
}
Test(driver, aot_bundle_all, .timeout = 600) {
  UCtx *top = uop_ctx_new();
  char **names;
  int n = list_cases("numeric", &names), pass = 0;
  for (int i = 0; i < n; i++) {
    char why[1024] = "";
    if (aot_case(names[i], why, sizeof why) == 1) pass++;
    else cr_log_warn("%s: %s", names[i], why);
  }
  cr_log_info("aot: %d of %d numeric bundles match", pass, n);
  cr_expect_geq(n, 38);
  cr_expect_eq(pass, n, "%d of %d bundles match", pass, n);
  uop_ctx_free(top);
}
/* the same bundles with their kernels' outer loops split over threads (compile --threads 0, built
 * with -fopenmp, 2 threads): every numeric case still matches, and the big kernels got the pragma */
Test(driver, aot_bundle_threads, .timeout = 600) {
  UCtx *top = uop_ctx_new();
  setenv("OMP_NUM_THREADS", "2", 1);
  aot_omp = true;
  char **names;
  int n = list_cases("numeric", &names), pass = 0, omp = 0;
  for (int i = 0; i < n; i++) {
    char why[1024] = "";
    if (aot_case(names[i], why, sizeof why) == 1) pass++;
    else cr_log_warn("%s: %s", names[i], why);
    DIR *d = opendir(arena_printf(ga(), "%s/%s", tmpdir(), names[i]));
    for (struct dirent *e; d && (e = readdir(d));) {
      size_t l = strlen(e->d_name);
      if (l < 3 || strcmp(e->d_name + l - 2, ".c") || !strcmp(e->d_name, "model.c")) continue;
      size_t ln;
      char *t = read_file(ga(), arena_printf(ga(), "%s/%s/%s", tmpdir(), names[i], e->d_name), &ln);
      if (t && strstr(t, "#pragma omp parallel for")) omp++;
    }
    if (d) closedir(d);
  }
  aot_omp = false;
  cr_log_info("aot with threads: %d of %d numeric bundles match, %d kernels use OpenMP", pass, n, omp);
  cr_expect_eq(pass, n, "%d of %d threaded bundles match", pass, n);
  cr_expect_gt(omp, 0, "no kernel got an OpenMP loop");
  uop_ctx_free(top);
}
/* a sink source tinygrad's schedule leaves unrealized (testdata/unrealized/cumsum_of_max: a max
 * reduce fused into the kernel of the cumsum that reads it) is realized as Tensor.numpy() does, by
 * a second schedule of its CONTIGUOUS: tgc schedule keeps tinygrad's 7 items, run and the bundle
 * run 8, and the bundle reads the same values as run (cli.sh checks run's against tinygrad's) */
Test(driver, unrealized_output) {
  UCtx *c = uop_ctx_new();
  char path[4096];
  snprintf(path, sizeof path, "%s/testdata/unrealized/cumsum_of_max.graph.json", src_root());
  Graph *g = graph_read_file(path);
  Schedule *s = driver_schedule(g);
  cr_expect_eq(s->nitems, 7);
  cr_expect_eq(s->sched_sink->src[1]->op, OP_REDUCE_AXIS);
  Schedule *r = driver_realize_outputs(s);
  cr_expect_eq(r->nitems, 8);
  cr_expect_eq(r->items[7].ast->op, OP_SINK);
  for (int i = 0; i < 7; i++) cr_expect_eq(r->items[i].ast, s->items[i].ast, "item %d", i);
  cr_expect_eq(u_base(r->sched_sink->src[0]), u_base(s->sched_sink->src[0]));
  cr_expect_eq(driver_realize_outputs(r), r, "every output of the result is readable");
  uop_ctx_free(c);
  char why[1024] = "";
  cr_expect_eq(aot_vs_run(path, false, why, sizeof why), 1, "%s", why);
}
/* multi-device bundles: each device's buffers are their own allocations (one per shard of a
 * multi-device BUFFER), COPY is memmove between them; copy_device and shard_reduce against tinygrad's
 * values, sharded_matmul and a sample of test_multitensor schedule graphs against `tgc run -d cpu` */
Test(driver, aot_bundle_multi, .timeout = 600) {
  UCtx *top = uop_ctx_new();
  static const char *const named[] = {"numeric.copy_device", "numeric.shard_reduce"};
  char **names;
  int n = list_cases("numeric", &names), found = 0;
  for (size_t k = 0; k < sizeof named / sizeof *named; k++)
    for (int i = 0; i < n; i++) {
      if (strncmp(names[i], named[k], strlen(named[k]))) continue;
      char why[1024] = "";
      found++;
      cr_expect_eq(aot_case(names[i], why, sizeof why), 1, "%s: %s", names[i], why);
    }
  cr_expect_eq(found, 2);
  char why[1024] = "";
  cr_expect_eq(aot_vs_run(arena_printf(ga(), "%s/testdata/models/sharded_matmul.graph.json", src_root()), true, why, sizeof why), 1, "sharded_matmul: %s", why);
  int ns = list_cases("schedule", &names), tried = 0, pass = 0;
  for (int i = 0; i < ns && tried < 40; i++) {
    if (strncmp(names[i], "test_multitensor.", 17) || i % 7) continue;
    why[0] = 0;
    int r = aot_vs_run(arena_printf(ga(), "%s/schedule/%s.graph.json", oracle(), names[i]), true, why, sizeof why);
    if (r < 0) continue;
    tried++;
    if (r == 1) pass++;
    else cr_log_warn("%s: %s", names[i], why);
  }
  cr_log_info("aot multi: %d of %d test_multitensor bundles match tgc run", pass, tried);
  cr_expect_geq(tried, 20);
  cr_expect_eq(pass, tried);
  uop_ctx_free(top);
}
/* symbolic output shapes: the bundle is built for the graph's BIND values */
Test(driver, aot_bundle_symbolic, .timeout = 600) {
  UCtx *top = uop_ctx_new();
  char **names;
  int n = corpus_list_dir(symbolic_dir(), &names), pass = 0;
  for (int i = 0; i < n; i++) {
    char why[1024] = "";
    if (aot_case_in(symbolic_dir(), names[i], why, sizeof why) == 1) pass++;
    else cr_log_warn("%s: %s", names[i], why);
  }
  cr_expect_geq(n, 38);
  cr_expect_eq(pass, n, "%d of %d symbolic bundles match", pass, n);
  uop_ctx_free(top);
}

/* ---- libclang ---- */
static const char *const clang_args[] = {"-std=c11", "-Wall", "-Wextra"};
/* parse path (contents: NULL reads the file) as C11 -Wall -Wextra; the number of warnings, the first in why */
static int clang_problems(CXIndex idx, const char *path, const char *contents, char *why, size_t wn) {
  return clang_check(idx, path, contents, clang_args, 3, why, wn);
}
/* a static helper src defines but never calls (what -Wunused-function reports), or NULL */
static const char *unused_helper(const char *src) {
  for (const char *l = src; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL) {
    if (strncmp(l, "static ", 7)) continue;
    const char *par = strchr(l, '('), *nl = strchr(l, '\n');
    if (!par || (nl && par > nl)) continue;
    const char *b = par;
    while (b > l && (b[-1] == '_' || (b[-1] >= 'a' && b[-1] <= 'z') || (b[-1] >= 'A' && b[-1] <= 'Z') || (b[-1] >= '0' && b[-1] <= '9'))) b--;
    char *call = arena_printf(ga(), "%.*s(", (int)(par - b), b);
    int uses = 0;
    for (const char *p = strstr(src, call); p; p = strstr(p + 1, call)) uses += p == src || !(p[-1] == '_' || (p[-1] >= 'a' && p[-1] <= 'z') || (p[-1] >= 'A' && p[-1] <= 'Z') || (p[-1] >= '0' && p[-1] <= '9'));
    if (uses < 2) return call;
  }
  return NULL;
}
/* parse the batch; returns its warnings (the first reported with the kernel file it came from) */
static int batch_flush(CXIndex idx, Batch *b, const char *dir, int *tus) {
  if (!b->nk) return 0;
  char why[1024] = "";
  int bad = clang_problems(idx, arena_printf(ga(), "%s/batch.c", dir), b->text, why, sizeof why);
  (*tus)++;
  if (bad) {
    const char *c = strstr(why, "batch.c:");
    cr_log_warn("%s (kernel file %s): %s", "libclang", batch_name_at(b, c ? atoi(c + 8) : 0), why);
  }
  batch_reset(b);
  return bad;
}
/* the checks the libclang test relies on can fail: a helper defined and never called, a kernel with
 * an unused variable (a warning under -Wall) */
Test(driver, libclang_checks_fail) {
  UCtx *top = uop_ctx_new();
  const char *unused = "static inline float tg_powf(float b, float e) { return b * e; }\n"
                       "static inline double tg_pow(double b, double e) { return b * e; }\n"
                       "void E_1(float *d) { d[0] = tg_powf(d[0], 2.0f); }\n";
  const char *un = unused_helper(unused);
  cr_expect(un && !strcmp(un, "tg_pow("), "%s", un ? un : "(none)");
  cr_expect(unused_helper("static inline int f(int x) { return x; }\nint g(void) { return f(1); }\n") == NULL);
  CXIndex idx = clang_createIndex(0, 0);
  char why[1024] = "";
  cr_expect_geq(clang_problems(idx, "/tmp/tgc_check.c", "void E_1(float *d) { int unused; d[0] = 1.0f; }\n", why, sizeof why), 1);
  cr_expect(strstr(why, "unused") != NULL, "%s", why);
  cr_expect_eq(clang_problems(idx, "/tmp/tgc_check.c", "void E_1(float *d);\nvoid E_1(float *d) { d[0] = 1.0f; }\n", why, sizeof why), 0, "%s", why);
  clang_disposeIndex(idx);
  uop_ctx_free(top);
}

typedef struct ClangRun { CXIndex idx; const char *dir; HSet seen; Batch batch; int graphs, kfiles, kuniq, models, muniq, bad, refused, tus; } ClangRun;
/* compile one graph into r->dir and check its files */
static void clang_graph(ClangRun *r, const char *path, const char *label) {
  UCtx *c = case_begin();
  TgTry t;
  if (TG_TRY(t)) {
    Graph *g = graph_read_file(path);
    driver_compile_c(g, driver_schedule(g), r->dir);
    tg_try_end(&t);
  } else {
    cr_log_warn("%s: error %d: %s", label, tg_last_error.code, tg_last_error.msg);
    r->refused++;
    case_end(c);
    return;
  }
  r->graphs++;
  DIR *d = opendir(r->dir);
  struct dirent *e;
  while (d && (e = readdir(d))) {
    size_t l = strlen(e->d_name);
    if (l < 3 || strcmp(e->d_name + l - 2, ".c")) continue;
    size_t len;
    char *p = arena_printf(ga(), "%s/%s", r->dir, e->d_name), *src = read_file(ga(), p, &len);
    cr_assert(src != NULL, "%s", p);
    if (!strcmp(e->d_name, "model.c")) {
      r->models++;
      /* the first line names the graph; the rest decides what clang sees */
      const char *body = strchr(src, '\n');
      if (!hset_add(&r->seen, hash_bytes(body ? body : src, strlen(body ? body : src), 0x6d6f64656cULL))) continue;
      r->muniq++;
      char why[1024] = "";
      if (clang_problems(r->idx, p, NULL, why, sizeof why)) { r->bad++; cr_log_warn("%s: model.c: %s", label, why); }
      continue;
    }
    r->kfiles++;
    if (!hset_add(&r->seen, hash_bytes(src, len, 0x6b65726e656cULL))) continue;
    r->kuniq++;
    const char *un = unused_helper(src);
    if (un) { r->bad++; cr_log_warn("%s: %s defines %s...) but never calls it", label, e->d_name, un); }
    /* the kernel's function name is the file name up to the first '.' */
    const char *dot = strchr(e->d_name, '.');
    char *fn = arena_printf(ga(), "%.*s", (int)(dot - e->d_name), e->d_name);
    char *renamed = render_replace(ga(), src, arena_printf(ga(), " %s(", fn), arena_printf(ga(), " %s_k%d(", fn, r->kuniq));
    batch_add(&r->batch, renamed, e->d_name);
    if (r->batch.nk >= 400) r->bad += batch_flush(r->idx, &r->batch, r->dir, &r->tus);
  }
  if (d) closedir(d);
  case_end(c);
}
/* every emitted file: each graph compiled into dir; kernels deduplicated by content, renamed
 * apart (NAME -> NAME_kN) and parsed 400 to a translation unit (preludes are guarded), each checked
 * for a helper it defines but does not call; model.c (with model.h) parsed per distinct content */
Test(driver, libclang, .timeout = 900) {
  UCtx *top = uop_ctx_new();
  time_t t0 = time(NULL);
  static const char *const subs[] = {"schedule", "numeric"};
  ClangRun r = {0};
  r.idx = clang_createIndex(0, 0);
  r.dir = arena_printf(ga(), "%s/clang", tmpdir());
  for (int sub = 0; sub < 2; sub++) {
    char **names;
    int n = list_cases(subs[sub], &names);
    for (int i = 0; i < n; i++) clang_graph(&r, arena_printf(ga(), "%s/%s/%s.graph.json", oracle(), subs[sub], names[i]), names[i]);
  }
  char **names;
  int n = corpus_list_dir(symbolic_dir(), &names);
  for (int i = 0; i < n; i++) clang_graph(&r, arena_printf(ga(), "%s/%s.graph.json", symbolic_dir(), names[i]), names[i]);
  r.bad += batch_flush(r.idx, &r.batch, r.dir, &r.tus);
  clang_disposeIndex(r.idx);
  free(r.batch.text);
  free(r.seen.v);
  fprintf(stderr, "libclang: %d graphs, %d kernel files (%d distinct, %d translation units), %d model.c (%d distinct), %d with warnings, %d not compiled, %lds\n",
          r.graphs, r.kfiles, r.kuniq, r.tus, r.models, r.muniq, r.bad, r.refused, (long)(time(NULL) - t0));
  cr_expect_geq(r.graphs, 3900);
  cr_expect_geq(r.kuniq, 1000);
  cr_expect_eq(r.refused, 0);
  cr_expect_eq(r.bad, 0);
  uop_ctx_free(top);
}

/* ---- inputs and tolerances ---- */
Test(driver, inputs) {
  UCtx *top = uop_ctx_new();
  TgTry t;
  /* a schedule-corpus graph has no BUFFER data: running it is refused naming the row */
  char **names;
  int n = list_cases("schedule", &names);
  cr_assert(n > 0);
  volatile int code = 0;
  if (TG_TRY(t)) {
    Graph *g = graph_read_file(arena_printf(ga(), "%s/schedule/%s.graph.json", oracle(), names[0]));
    driver_check_inputs(g, driver_schedule(g));
    tg_try_end(&t);
  } else code = tg_last_error.code;
  cr_expect_eq(code, TG_EINPUT);
  cr_expect(strstr(tg_last_error.msg, "has no data") != NULL, "%s", tg_last_error.msg);
  /* --input with the wrong dtype */
  code = 0;
  if (TG_TRY(t)) {
    Graph *g = graph_read_file(arena_printf(ga(), "%s/numeric/numeric.matmul.59608b.graph.json", oracle()));
    int row = -1;
    for (int i = 0; i < g->nrows && row < 0; i++) if (g->rows[i]->op == OP_BUFFER) row = i;
    int64_t shape[1] = {(int64_t)g->rows[row]->arg->i};
    size_t nb = (size_t)shape[0] * 4;
    char *p = arena_printf(ga(), "%s/in_int.npy", tmpdir());
    cr_assert(npy_write(p, dt_int, 1, shape, arena_alloc(ga(), nb), nb));
    DriverInput in = {row, p};
    driver_set_inputs(g, 1, &in);
    tg_try_end(&t);
  } else code = tg_last_error.code;
  cr_expect_eq(code, TG_EINPUT);
  cr_expect(strstr(tg_last_error.msg, "dtype") != NULL, "%s", tg_last_error.msg);
  uop_ctx_free(top);
}

Test(driver, close) {
  UCtx *top = uop_ctx_new();
  float a[3] = {1.0f, NAN, 100.0f}, b[3] = {1.000005f, NAN, 100.009f}, w[3] = {1.0f, NAN, 100.02f};
  char why[256];
  cr_expect(driver_close(dt_float, a, b, 3, why, sizeof why));
  cr_expect(!driver_close(dt_float, a, w, 3, why, sizeof why));
  cr_expect(strstr(why, "worst element 2") != NULL, "%s", why);
  int x[2] = {1, 2}, y[2] = {1, 3};
  cr_expect(!driver_close(dt_int, x, y, 2, why, sizeof why));
  uint16_t h1[1] = {render_f2h(1.0f)}, h2[1] = {render_f2h(1.009f)}, h3[1] = {render_f2h(1.03f)};
  cr_expect(driver_close(dt_half, h1, h2, 1, why, sizeof why));
  cr_expect(!driver_close(dt_half, h1, h3, 1, why, sizeof why));
  /* test_runtime's tighter 16-bit rule */
  cr_expect(!driver_close_tol(dt_half, h1, h2, 1, 1e-3, 1e-3, why, sizeof why));
  cr_expect(driver_close_tol(dt_float, a, b, 3, 1e-4, 1e-5, why, sizeof why));
  uop_ctx_free(top);
}
