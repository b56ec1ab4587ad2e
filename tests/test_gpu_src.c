/* test_gpu_src: every GPU kernel tgc emits for the corpus is valid source for its toolchain.
 *
 *   opencl_parse   every .cl that `compile -t opencl` writes for every schedule, numeric and
 *                  symbolic corpus graph parses with libclang (-x cl -cl-std=CL1.2, -Wall -Wextra)
 *                  without any diagnostic
 *   cuda_ptx       every .cu that `compile -t cuda` writes for the same graphs compiles to PTX
 *                  with NVRTC (skipped when libnvrtc.so is absent)
 *   checks_fail    both checks reject a bad kernel
 *
 * Kernels are deduplicated by content, renamed apart (NAME -> NAME_kN; preludes are #ifndef
 * guarded) and checked many to a translation unit, so the whole corpus takes seconds, not an hour.
 * This binary links libclang (LLVM 14); it must not run OpenCL kernels, since PoCL loads its own
 * LLVM and two LLVMs in one process crash when PoCL compiles (test_gpu does the runs). */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "clang_check.h"
#include "corpus.h"
#include "driver/driver.h"
#include "render/render.h"
#include "runtime/gpu.h"

static char tmp_root[] = "/tmp/tgc_gpusrc_XXXXXX";
TestSuite(gpu_src, .fini = corpus_tmp_fini);

/* ---- the two checkers: text -> number of problems, the first one in why ---- */
static int cl_problems(CXIndex idx, const char *path, const char *text, char *why, size_t wn) {
  static const char *const args[] = {"-x", "cl", "-cl-std=CL1.2", "-Xclang", "-finclude-default-header", "-Wall", "-Wextra"};
  return clang_check(idx, path, text, args, 7, why, wn);
}
static int cu_problems(const char *path, const char *text, char *why, size_t wn) {
  char *log = NULL;
  char *ptx = rtcu_compile_ptx(ga(), text, path, "compute_80", &log);
  if (ptx && strstr(ptx, ".entry")) return 0;
  snprintf(why, wn, "%s", log ? log : "no PTX");
  return 1;
}

/* ---- walking the corpus ---- */
typedef struct SrcRun {
  const char *target, *ext, *dir; /* "opencl", ".cl", output directory */
  CXIndex idx;                    /* opencl */
  int per_tu;
  HSet seen;
  Batch batch;
  int graphs, files, uniq, tus, bad, refused;
} SrcRun;

static void flush(SrcRun *r) {
  if (!r->batch.nk) return;
  char why[2048] = "", *path = arena_printf(ga(), "%s/batch%s", r->dir, r->ext);
  int bad = r->idx ? cl_problems(r->idx, path, r->batch.text, why, sizeof why) : cu_problems(path, r->batch.text, why, sizeof why);
  r->tus++;
  if (bad) {
    /* "batch.cl:LINE:" (clang) or "batch.cu(LINE):" (NVRTC) */
    const char *c = strstr(why, "batch");
    int line = 0;
    if (c && (c = strpbrk(c, ":(")) != NULL) line = atoi(c + 1);
    cr_log_warn("%s: kernel file %s: %.1500s", r->target, batch_name_at(&r->batch, line), why);
    r->bad += bad;
  }
  batch_reset(&r->batch);
}
static void src_graph(SrcRun *r, const char *path, const char *label) {
  UCtx *c = corpus_case_begin();
  TgTry t;
  if (TG_TRY(t)) {
    Graph *g = graph_read_file(path);
    driver_compile_gpu(g, driver_schedule(g), r->dir, r->target);
    tg_try_end(&t);
  } else {
    cr_log_warn("%s: %s: error %d: %s", r->target, label, tg_last_error.code, tg_last_error.msg);
    r->refused++;
    corpus_case_end(c);
    return;
  }
  r->graphs++;
  DIR *d = opendir(r->dir);
  struct dirent *e;
  size_t el = strlen(r->ext);
  while (d && (e = readdir(d))) {
    size_t l = strlen(e->d_name), len;
    if (l <= el || strcmp(e->d_name + l - el, r->ext)) continue;
    char *p = arena_printf(ga(), "%s/%s", r->dir, e->d_name), *src = read_file(ga(), p, &len);
    cr_assert(src != NULL, "%s", p);
    r->files++;
    if (!hset_add(&r->seen, hash_bytes(src, len, 0x677075ULL))) continue;
    r->uniq++;
    /* the kernel's function name is the file name up to the first '.' */
    const char *dot = strchr(e->d_name, '.');
    char *fn = arena_printf(ga(), "%.*s", (int)(dot - e->d_name), e->d_name);
    char *renamed = render_replace(ga(), src, arena_printf(ga(), " %s(", fn), arena_printf(ga(), " %s_k%d(", fn, r->uniq));
    batch_add(&r->batch, renamed, arena_printf(ga(), "%s (%s)", e->d_name, label));
    if (r->batch.nk >= r->per_tu) flush(r);
  }
  if (d) closedir(d);
  corpus_case_end(c);
}
static void src_corpus(SrcRun *r) {
  static const char *const subs[] = {"schedule", "numeric"};
  char **names;
  for (int sub = 0; sub < 2; sub++) {
    int n = corpus_list(subs[sub], &names);
    for (int i = 0; i < n; i++) src_graph(r, arena_printf(ga(), "%s/%s/%s.graph.json", corpus_oracle(), subs[sub], names[i]), names[i]);
  }
  int n = corpus_list_dir(corpus_symbolic_dir(), &names);
  for (int i = 0; i < n; i++) src_graph(r, arena_printf(ga(), "%s/%s.graph.json", corpus_symbolic_dir(), names[i]), names[i]);
  flush(r);
  free(r->batch.text);
  free(r->seen.v);
}
static void report(const SrcRun *r, time_t t0) {
  fprintf(stderr, "%s: %d graphs, %d %s files (%d distinct, %d translation units), %d with diagnostics, %d not compiled, %lds\n",
          r->target, r->graphs, r->files, r->ext, r->uniq, r->tus, r->bad, r->refused, (long)(time(NULL) - t0));
  cr_expect_geq(r->graphs, 3900);
  cr_expect_geq(r->uniq, 1000);
  cr_expect_eq(r->refused, 0, "%d graphs did not compile for %s", r->refused, r->target);
  cr_expect_eq(r->bad, 0, "%d diagnostics in %s kernels", r->bad, r->target);
}

Test(gpu_src, checks_fail) {
  UCtx *top = uop_ctx_new();
  char why[2048] = "";
  CXIndex idx = clang_createIndex(0, 0);
  /* OpenCL has no exp2f (the prelude maps it to exp2), and an unused variable is a warning */
  cr_expect_geq(cl_problems(idx, "/tmp/tgc_neg.cl", "__kernel void k(__global float* d) { d[0] = exp2f(1.0f); }\n", why, sizeof why), 1);
  cr_expect_geq(cl_problems(idx, "/tmp/tgc_neg.cl", "__kernel void k(__global float* d) { int u; d[0] = 1.0f; }\n", why, sizeof why), 1);
  cr_expect(strstr(why, "unused") != NULL, "%s", why);
  cr_expect_eq(cl_problems(idx, "/tmp/tgc_ok.cl", "__kernel void k(__global half* d) { vstore_half_rte(vload_half(1, d), 0, d); }\n", why, sizeof why), 0, "%s", why);
  clang_disposeIndex(idx);
  if (rtcu_nvrtc_available()) {
    cr_expect_eq(cu_problems("neg.cu", "extern \"C\" __global__ void k(float* d) { d[0] = undefined_fn(1.0f); }\n", why, sizeof why), 1);
    cr_expect(strstr(why, "undefined_fn") != NULL, "%s", why);
    cr_expect_eq(cu_problems("ok.cu", "extern \"C\" __global__ void k(float* d) { d[0] = exp2f(d[1]); }\n", why, sizeof why), 0, "%s", why);
  }
  uop_ctx_free(top);
}

Test(gpu_src, opencl_parse, .timeout = 900) {
  UCtx *top = uop_ctx_new();
  time_t t0 = time(NULL);
  SrcRun r = {.target = "opencl", .ext = ".cl", .per_tu = 400};
  r.dir = arena_printf(ga(), "%s/opencl", corpus_tmpdir(tmp_root));
  r.idx = clang_createIndex(0, 0);
  src_corpus(&r);
  clang_disposeIndex(r.idx);
  report(&r, t0);
  uop_ctx_free(top);
}

Test(gpu_src, cuda_ptx, .timeout = 900) {
  if (!rtcu_nvrtc_available()) cr_skip_test("no NVRTC (libnvrtc.so)");
  UCtx *top = uop_ctx_new();
  time_t t0 = time(NULL);
  SrcRun r = {.target = "cuda", .ext = ".cu", .per_tu = 200};
  r.dir = arena_printf(ga(), "%s/cuda", corpus_tmpdir(tmp_root));
  src_corpus(&r);
  report(&r, t0);
  uop_ctx_free(top);
}
