/* test_driver: lib/driver (tgc compile -t c, tgc run -d cpu) on the oracle corpus, whose numeric
 * cases carry the values tinygrad 0.11.0 computed (NAME.expect.json `outputs`).
 *   run_numeric   driver_run_cpu + driver_compare on every numeric case (what `tgc run --expect` does)
 *   aot_bundle    driver_compile_c into a temp dir, then `cc -O2 -Wall -Werror` of tests/aot/driver.c
 *                 with only the bundle's model.c and kernel files, fed the graph's data, compared
 *                 with the expect outputs: matmul and mlp_backward (outputs are views) by name, then
 *                 every single-device numeric case
 *   libclang      every emitted .c of ~100 schedule corpus graphs parses with libclang without a
 *                 diagnostic of severity warning or above
 *   inputs, close: --input checks and the tolerance rule (each can fail). */
#include <criterion/criterion.h>
#include <clang-c/Index.h>
#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include "driver/driver.h"
#include "render/render.h"

/* each case runs in its own context over the test's outer one (names and paths live there) */
static UCtx *outer_ctx;
static UCtx *case_begin(void) { outer_ctx = uctx; return uop_ctx_new(); }
static void case_end(UCtx *c) { uop_ctx_free(c); uctx = outer_ctx; }

static const char *oracle(void) {
  const char *o = getenv("TGC_ORACLE");
  return o && *o ? o : "../shared/oracle";
}
static char tmp_root[] = "/tmp/tgc_driver_XXXXXX";
static const char *tmpdir(void) {
  static bool made;
  if (!made) {
    cr_assert(mkdtemp(tmp_root) != NULL);
    made = true;
    char *c = arena_printf(ga(), "%s/cache", tmp_root);
    setenv("XDG_CACHE_HOME", c, 1);
  }
  return tmp_root;
}
/* the repository root: the directory above this file's tests/ */
static const char *src_root(void) {
  const char *f = __FILE__, *s = strstr(f, "tests/test_driver.c");
  char cwd[4096];
  const char *here = getcwd(cwd, sizeof cwd) ? cwd : ".";
  if (s && s > f) return f[0] == '/' ? arena_printf(ga(), "%.*s", (int)(s - f - 1), f) : arena_printf(ga(), "%s/%.*s", here, (int)(s - f - 1), f);
  return arena_strdup(ga(), here);
}

/* sorted corpus case names (NAME of NAME.graph.json) under oracle()/sub */
static int list_cases(const char *sub, char ***out) {
  char *dirp = arena_printf(ga(), "%s/%s", oracle(), sub);
  DIR *d = opendir(dirp);
  cr_assert(d != NULL, "no corpus at %s", dirp);
  int n = 0, cap = 64;
  char **v = arena_alloc(ga(), sizeof *v * (size_t)cap);
  struct dirent *e;
  while ((e = readdir(d))) {
    size_t l = strlen(e->d_name);
    if (l < 12 || strcmp(e->d_name + l - 11, ".graph.json")) continue;
    if (n == cap) {
      char **nv = arena_alloc(ga(), sizeof *nv * (size_t)cap * 2);
      memcpy(nv, v, sizeof *v * (size_t)n);
      v = nv;
      cap *= 2;
    }
    v[n++] = arena_printf(ga(), "%.*s", (int)(l - 11), e->d_name);
  }
  closedir(d);
  for (int i = 1; i < n; i++) for (int j = i; j > 0 && strcmp(v[j - 1], v[j]) > 0; j--) { char *t = v[j]; v[j] = v[j - 1]; v[j - 1] = t; }
  *out = v;
  return n;
}

/* ---- run_numeric ---- */
static int run_numeric_case(const char *name, char *why, size_t wn) {
  UCtx *c = case_begin();
  volatile int ok = 0;
  TgTry t;
  if (TG_TRY(t)) {
    Graph *g = graph_read_file(arena_printf(ga(), "%s/numeric/%s.graph.json", oracle(), name));
    Expect *x = expect_read_file(arena_printf(ga(), "%s/numeric/%s.expect.json", oracle(), name));
    Schedule *s = driver_schedule(g);
    driver_check_inputs(g, s);
    DriverRun *r = driver_run_cpu(g, s);
    ok = driver_compare(r, x, why, wn);
    /* the comparison can fail: perturb one float element of a float output */
    if (ok && r->noutputs && r->outs[0].dtype->scalar == SC_FLOAT && r->outs[0].nbytes >= 4) {
      ((float *)r->outs[0].data)[0] = ((float *)r->outs[0].data)[0] * 2.0f + 1.0f;
      char w2[256];
      if (driver_compare(r, x, w2, sizeof w2)) { ok = 0; snprintf(why, wn, "a perturbed output still matched"); }
    }
    tg_try_end(&t);
  } else snprintf(why, wn, "error %d: %.900s", tg_last_error.code, tg_last_error.msg);
  case_end(c);
  return ok;
}
Test(driver, run_numeric, .timeout = 600) {
  UCtx *top = uop_ctx_new();
  tmpdir();
  char **names;
  int n = list_cases("numeric", &names), pass = 0;
  for (int i = 0; i < n; i++) {
    char why[1024] = "";
    if (run_numeric_case(names[i], why, sizeof why)) pass++;
    else cr_log_warn("%s: %s", names[i], why);
  }
  cr_expect_geq(n, 38);
  cr_expect_eq(pass, n, "%d of %d numeric cases match", pass, n);
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
static bool write_bytes(const char *path, const void *p, size_t n) {
  FILE *f = fopen(path, "wb");
  if (!f) return false;
  bool ok = fwrite(p, 1, n, f) == n;
  return fclose(f) == 0 && ok;
}
/* 1 pass, 0 fail, -1 skipped (multi-device: the bundle refuses it) */
static int aot_case(const char *name, char *why, size_t wn) {
  UCtx *c = case_begin();
  volatile int res = 0;
  TgTry t;
  if (TG_TRY(t)) {
    Graph *g = graph_read_file(arena_printf(ga(), "%s/numeric/%s.graph.json", oracle(), name));
    Expect *x = expect_read_file(arena_printf(ga(), "%s/numeric/%s.expect.json", oracle(), name));
    Schedule *s = driver_schedule(g);
    char *dir = arena_printf(ga(), "%s/%s", tmpdir(), name);
    volatile bool skipped = false;
    TgTry t2;
    if (TG_TRY(t2)) { driver_compile_c(g, s, dir); tg_try_end(&t2); }
    else if (tg_last_error.code == TG_EDEVICE && strstr(tg_last_error.msg, "multi-device")) skipped = true;
    else {
      char m[sizeof tg_last_error.msg];
      snprintf(m, sizeof m, "%s", tg_last_error.msg);
      tg_fail(tg_last_error.code, "compile: %s", m);
    }
    if (skipped) res = -1;
    else {
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
        for (int k = 0; k < g->ndata; k++) if (g->data[k].buf == b) memcpy(ninb + inn, g->data[k].bytes, g->data[k].nbytes < nb ? g->data[k].nbytes : nb);
        inb = ninb;
        inn += nb;
        hdr = arena_printf(ga(), "%s%s%zu", hdr, nin++ ? ", " : "", nb);
      }
      if (!nin) hdr = arena_printf(ga(), "%s0", hdr);
      char *ob = "{", *ok = "{", *exb = arena_alloc(ga(), 1);
      size_t exn = 0;
      for (int o = 0; o < x->noutputs; o++) {
        ExpectOut *eo = &x->outputs[o];
        char *nex = arena_alloc(ga(), exn + eo->nbytes + 1);
        memcpy(nex, exb, exn);
        memcpy(nex + exn, eo->bytes, eo->nbytes);
        exb = nex;
        exn += eo->nbytes;
        ob = arena_printf(ga(), "%s%s%zu", ob, o ? ", " : "", eo->nbytes);
        ok = arena_printf(ga(), "%s%s%d", ok, o ? ", " : "", out_kind(eo->dtype));
      }
      hdr = arena_printf(ga(), "%s}\n#define AOT_OUT_BYTES %s%s}\n#define AOT_OUT_KIND %s%s}\n", hdr, ob, x->noutputs ? "" : "0", ok, x->noutputs ? "" : "0");
      char *hp = arena_printf(ga(), "%s.case.h", dir), *ip = arena_printf(ga(), "%s.in.bin", dir), *ep = arena_printf(ga(), "%s.exp.bin", dir);
      cr_assert(write_bytes(hp, hdr, strlen(hdr)) && write_bytes(ip, inb, inn) && write_bytes(ep, exb, exn));
      char *cmd = arena_printf(ga(), "cd '%s' && cc -O2 -Wall -Werror -c *.c >'%s.cc.log' 2>&1 && "
                                     "cc -O2 -Wall -Werror -I'%s' -include '%s' '%s/tests/aot/driver.c' '%s'/*.c -o '%s.exe' -lm >>'%s.cc.log' 2>&1 && "
                                     "'%s.exe' '%s' '%s' >>'%s.cc.log' 2>&1",
                               dir, dir, dir, hp, src_root(), dir, dir, dir, dir, ip, ep, dir);
      int st = system(cmd);
      res = WIFEXITED(st) && WEXITSTATUS(st) == 0;
      if (!res) {
        size_t ln;
        char *log = read_file(ga(), arena_printf(ga(), "%s.cc.log", dir), &ln);
        snprintf(why, wn, "status %d: %.700s", WIFEXITED(st) ? WEXITSTATUS(st) : -1, log ? log : "");
      }
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
  int n = list_cases("numeric", &names), pass = 0, skip = 0;
  for (int i = 0; i < n; i++) {
    char why[1024] = "";
    int r = aot_case(names[i], why, sizeof why);
    pass += r == 1;
    skip += r < 0;
    if (r == 0) cr_log_warn("%s: %s", names[i], why);
  }
  cr_log_info("aot: %d pass, %d skipped (multi-device), %d cases", pass, skip, n);
  cr_expect_leq(skip, 3);
  cr_expect_eq(pass + skip, n, "%d of %d bundles match", pass, n - skip);
  uop_ctx_free(top);
}

/* ---- libclang ---- */
static int clang_problems(CXIndex idx, const char *path, char *why, size_t wn) {
  /* -Wunused-function is off: the shared prelude defines static inline helpers (tg_powf and tg_pow
   together) that a kernel may not use */
  const char *args[] = {"-std=c11", "-Wall", "-Wextra", "-Wno-unused-parameter", "-Wno-unused-function"};
  CXTranslationUnit tu = clang_parseTranslationUnit(idx, path, args, 5, NULL, 0, CXTranslationUnit_None);
  if (!tu) { snprintf(why, wn, "%s: libclang could not parse it", path); return 1; }
  int bad = 0;
  for (unsigned i = 0; i < clang_getNumDiagnostics(tu); i++) {
    CXDiagnostic d = clang_getDiagnostic(tu, i);
    if (clang_getDiagnosticSeverity(d) >= CXDiagnostic_Warning) {
      if (!bad) {
        CXString s = clang_formatDiagnostic(d, clang_defaultDiagnosticDisplayOptions());
        snprintf(why, wn, "%s", clang_getCString(s));
        clang_disposeString(s);
      }
      bad++;
    }
    clang_disposeDiagnostic(d);
  }
  clang_disposeTranslationUnit(tu);
  return bad;
}
Test(driver, libclang, .timeout = 600) {
  UCtx *top = uop_ctx_new();
  char **names;
  int n = list_cases("schedule", &names), graphs = 0, files = 0, bad = 0, refused = 0;
  int step = n > 100 ? n / 100 : 1;
  CXIndex idx = clang_createIndex(0, 0);
  for (int i = 0; i < n; i += step) {
    UCtx *c = case_begin();
    char *dir = arena_printf(ga(), "%s/clang_%d", tmpdir(), i);
    TgTry t;
    if (TG_TRY(t)) {
      Graph *g = graph_read_file(arena_printf(ga(), "%s/schedule/%s.graph.json", oracle(), names[i]));
      driver_compile_c(g, driver_schedule(g), dir);
      tg_try_end(&t);
      graphs++;
      DIR *d = opendir(dir);
      struct dirent *e;
      while (d && (e = readdir(d))) {
        size_t l = strlen(e->d_name);
        if (l < 3 || strcmp(e->d_name + l - 2, ".c")) continue;
        char why[1024] = "", *p = arena_printf(ga(), "%s/%s", dir, e->d_name);
        files++;
        if (clang_problems(idx, p, why, sizeof why)) { bad++; cr_log_warn("%s: %s", names[i], why); }
      }
      if (d) closedir(d);
    } else {
      if (tg_last_error.code != TG_EDEVICE) cr_log_warn("%s: error %d: %s", names[i], tg_last_error.code, tg_last_error.msg);
      refused++;
    }
    case_end(c);
  }
  clang_disposeIndex(idx);
  cr_log_info("libclang: %d graphs, %d files, %d with warnings, %d not compiled", graphs, files, bad, refused);
  cr_expect_geq(graphs, 80);
  cr_expect_geq(files, 150);
  cr_expect_eq(bad, 0);
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
  uop_ctx_free(top);
}
