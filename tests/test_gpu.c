/* test_gpu: the OpenCL and CUDA backends (lib/render/opencl.c, cuda.c, lib/runtime/opencl.c, cuda.c,
 * driver_compile_gpu / driver_run_device). That every emitted .cl parses and every .cu compiles to
 * PTX is test_gpu_src (which links libclang; this binary must not: PoCL brings its own LLVM).
 *
 *   launch         render_launch maps output loops to launch dimensions (innermost is dimension 0)
 *   opencl_numeric every numeric corpus case runs on OpenCL (PoCL here) and matches tinygrad's
 *                  recorded outputs (skipped when there is no OpenCL platform)
 *   opencl_regress testdata/regress's cases with values run on OpenCL and match tinygrad's values
 *   opencl_bits    the graphs of testdata/opencl give tinygrad's own OpenCL (PoCL) values, bit for bit
 *   opencl_host    for every numeric case, the generated host.c builds with -lOpenCL and reproduces
 *                  tinygrad's outputs (multi-device graphs too: one host buffer per shard)
 *   cuda_host      the generated CUDA host.c builds with -Wall -Werror against the toolkit (CI has no GPU)
 *   cuda_no_device without libcuda.so.1, `run -d cuda` fails TG_EDEVICE "no CUDA device"
 *   thread_opts    LOCAL and GROUPTOP (given by hand) and the heuristic's matvec GROUP render as
 *                  work-group indices, a __local/__shared__ buffer and a barrier, launch exactly, and
 *                  (on PoCL) reproduce tinygrad's values, a fused arange shorter than its kernel axis
 *                  (testdata/numeric/arange_onehot) among them */
#include <criterion/criterion.h>
#include <dirent.h>
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "corpus.h"
#include "driver/driver.h"
#include "render/render.h"
#include "runtime/gpu.h"

#define case_begin corpus_case_begin
#define case_end corpus_case_end
#define oracle corpus_oracle
#define list_cases corpus_list
static char tmp_root[] = "/tmp/tgc_gpu_XXXXXX";
static const char *tmpdir(void) { return corpus_tmpdir(tmp_root); }
TestSuite(gpu, .fini = corpus_tmp_fini);

/* ---- launch ---- */
Test(gpu, launch) {
  UCtx *top = uop_ctx_new();
  /* numeric.expand_reshape: tinygrad names its kernels E_3_5_4 and E_60 without opts: loops 3, 5, 4
   * (a broadcast: the axes do not merge) and one merged axis of 60, launched as 4x5x3 and 60 */
  static const KOptCfg noopt = {KOPT_NONE, 0, {{0}}, 0};
  lower_opt_config(&noopt);
  Graph *g = graph_read_file(arena_printf(ga(), "%s/numeric/numeric.expand_reshape.fe98bf.graph.json", oracle()));
  Schedule *s = driver_schedule(g);
  int seen = 0;
  for (int i = 0; i < s->nitems; i++) {
    if (s->items[i].ast->op != OP_SINK) continue;
    Program *p = lower_kernel(s->items[i].ast, NULL);
    RenderLaunch cl, cu, c;
    render_launch(p, &render_opencl, &cl);
    render_launch(p, &render_cuda, &cu);
    render_launch(p, &render_c, &c);
    bool merged = strcmp(p->name, "E_60") == 0;
    cr_expect(merged || strcmp(p->name, "E_3_5_4") == 0, "kernel %s", p->name);
    cr_expect_eq(cl.n, merged ? 1 : 3, "%s: %d launch dims", p->name, cl.n);
    if (merged) cr_expect(cl.size[0] == 60, "%s: size %lld", p->name, (long long)cl.size[0]);
    else cr_expect(cl.size[0] == 4 && cl.size[1] == 5 && cl.size[2] == 3, "%s: sizes %lld %lld %lld", p->name,
                   (long long)cl.size[0], (long long)cl.size[1], (long long)cl.size[2]);
    cr_expect_eq(cu.n, cl.n);
    cr_expect_eq(c.n, 0, "the C backend has no launch dims");
    char *src = render_function(ga(), p, &render_opencl);
    cr_expect(strstr(src, "get_global_id(0)") && strstr(src, "__kernel void"), "%s", src);
    src = render_function(ga(), p, &render_cuda);
    cr_expect(strstr(src, "extern \"C\" __global__ void") && strstr(src, "blockIdx.x*blockDim.x+threadIdx.x"), "%s", src);
    seen++;
  }
  cr_expect_eq(seen, 2);
  uop_ctx_free(top);
}

/* ---- opencl_numeric ---- */
Test(gpu, opencl_numeric, .timeout = 900) {
  char w[256];
  if (!rtcl_available(w, sizeof w)) cr_skip_test("%s", w);
  UCtx *top = uop_ctx_new();
  char **names;
  int n = list_cases("numeric", &names), pass = 0;
  for (int i = 0; i < n; i++) {
    char why[1024] = "";
    if (corpus_run_numeric(names[i], "opencl", why, sizeof why)) pass++;
    else cr_log_warn("%s: %s", names[i], why);
  }
  cr_expect_geq(n, 38);
  cr_expect_eq(pass, n, "%d of %d numeric cases match on OpenCL", pass, n);
  uop_ctx_free(top);
}

/* ---- opencl_regress ---- */
/* the random graphs of testdata/regress that have tinygrad's values run on OpenCL and match them:
 * randnx_1420107's kernel r_5_32_4_32_32 (UPCAST:2:0,LOCAL:0:32) holds a fused arange's sum over 4
 * on an axis of 32, which the thread lowering once ranged over 32 (631 of 640 values wrong) */
Test(gpu, opencl_regress, .timeout = 600) {
  char w[256];
  if (!rtcl_available(w, sizeof w)) cr_skip_test("%s", w);
  UCtx *top = uop_ctx_new();
  const char *dir = arena_printf(ga(), "%s/testdata/regress", corpus_src_root());
  char **names;
  int n = corpus_list_dir(dir, &names), ran = 0, pass = 0;
  bool seen = false;
  for (int i = 0; i < n; i++) {
    UCtx *c = case_begin();
    Expect *x = expect_read_file(arena_printf(ga(), "%s/%s.expect.json", dir, names[i]));
    bool has_values = x->noutputs > 0;
    case_end(c);
    if (!has_values) continue;  /* a schedule-only case */
    seen |= strcmp(names[i], "randnx_1420107") == 0;
    char why[1024] = "";
    ran++;
    if (corpus_run_numeric_in(dir, names[i], "opencl", why, sizeof why)) pass++;
    else cr_log_warn("%s: %s", names[i], why);
  }
  cr_expect(seen, "randnx_1420107 is in %s", dir);
  cr_expect_eq(pass, ran, "%d of %d regress cases match on OpenCL", pass, ran);
  uop_ctx_free(top);
}

/* ---- opencl_bits ---- */
/* tinygrad's own values on its OpenCL device for numeric graphs of the corpus, testdata/numeric and
 * testdata/zoo (testdata/opencl/make_opencl.py: the graph's device renamed GPU, scheduled and run by
 * tinygrad on PoCL with its OpenCL heuristic): tgc's OpenCL kernels reproduce them byte for byte.
 * PoCL contracts a*b+c to an FMA within one expression, so this also pins down what tgc's source
 * prints inline: mlp_sgd_momentum's r_64_32_16 (GROUPTOP:0:16) adds its weight decay 1e-4*w to the
 * group's sum under `if (lidx0==0)`, inline as tinygrad prints it; named before the if, it was not
 * contracted and one weight of 2048 was one ulp off. The bits were recorded on a CPU with AVX2 and
 * FMA (the machine CI runs on); elsewhere the test is skipped. */
static const char *opencl_bits_graph(const char *name) {
  const char *dirs[] = {arena_printf(ga(), "%s/numeric", oracle()), arena_printf(ga(), "%s/testdata/numeric", corpus_src_root()),
                        arena_printf(ga(), "%s/testdata/zoo", corpus_src_root())};
  for (int i = 0; i < 3; i++) {
    const char *g = arena_printf(ga(), "%s/%s.graph.json", dirs[i], name);
    if (!access(g, R_OK)) return g;
  }
  return NULL;
}
Test(gpu, opencl_bits, .timeout = 900) {
  char w[256];
  if (!rtcl_available(w, sizeof w)) cr_skip_test("%s", w);
  if (rt_cpu_lanes() < 8) cr_skip_test("testdata/opencl was recorded with PoCL on a CPU with AVX2 and FMA");
  UCtx *top = uop_ctx_new();
  const char *dir = arena_printf(ga(), "%s/testdata/opencl", corpus_src_root());
  DIR *d = opendir(dir);
  cr_assert(d, "no %s", dir);
  int ran = 0, pass = 0;
  bool seen = false;
  struct dirent *e;
  while ((e = readdir(d))) {
    size_t l = strlen(e->d_name);
    if (l < 13 || strcmp(e->d_name + l - 12, ".expect.json")) continue;
    char *name = arena_printf(ga(), "%.*s", (int)(l - 12), e->d_name), why[1024] = "";
    const char *gp = opencl_bits_graph(name);
    cr_expect(gp, "%s: no source graph", name);
    if (!gp) continue;
    seen |= strcmp(name, "mlp_sgd_momentum") == 0;
    ran++;
    if (corpus_run_files(gp, arena_printf(ga(), "%s/%s", dir, e->d_name), "opencl", true, why, sizeof why)) pass++;
    else cr_log_warn("%s: %s", name, why);
  }
  closedir(d);
  cr_expect(seen, "mlp_sgd_momentum is in %s", dir);
  cr_expect_gt(ran, 10);
  cr_expect_eq(pass, ran, "%d of %d graphs give tinygrad's OpenCL bits", pass, ran);
  uop_ctx_free(top);
}

/* ---- opencl_host ---- */
static int host_case(const char *name, char *why, size_t wn) {
  UCtx *c = case_begin();
  volatile int ok = 0;
  TgTry t;
  if (TG_TRY(t)) {
    Graph *g = graph_read_file(arena_printf(ga(), "%s/numeric/%s.graph.json", oracle(), name));
    Expect *x = expect_read_file(arena_printf(ga(), "%s/numeric/%s.expect.json", oracle(), name));
    Schedule *s = driver_schedule(g);
    char *dir = arena_printf(ga(), "%s/host_%s", tmpdir(), name);
    driver_compile_gpu(g, s, dir, "opencl");
    /* inputN.bin: the data of the N-th BUFFER row */
    int nin = 0;
    for (int i = 0; i < g->nrows; i++) {
      if (!g->rows[i] || g->rows[i]->op != OP_BUFFER) continue;
      for (int k = 0; k < g->ndata; k++)
        if (g->data[k].buf == g->rows[i]) cr_assert(write_file_atomic(arena_printf(ga(), "%s/input%d.bin", dir, nin), g->data[k].bytes, g->data[k].nbytes));
      nin++;
    }
    char *cmd = arena_printf(ga(), "cd %s && cc -O1 -Wall -Wextra -Werror host.c -o host -lOpenCL 2>&1 && ./host . 2>&1", dir);
    int rc = system(cmd);
    if (rc != 0) snprintf(why, wn, "`%s` exited %d", cmd, rc);
    else {
      DriverRun *r = driver_run_cpu(g, s);
      for (int i = 0; i < r->noutputs; i++) {
        FILE *f = fopen(arena_printf(ga(), "%s/out%d.bin", dir, i), "rb");
        cr_assert(f != NULL);
        memset(r->outs[i].data, 0xAB, r->outs[i].nbytes);
        cr_assert_eq(fread(r->outs[i].data, 1, r->outs[i].nbytes, f), r->outs[i].nbytes);
        fclose(f);
      }
      ok = driver_compare(r, x, why, wn);
    }
    tg_try_end(&t);
  } else {
    snprintf(why, wn, "error %d: %.900s", tg_last_error.code, tg_last_error.msg);
  }
  case_end(c);
  return ok;
}
Test(gpu, opencl_host, .timeout = 600) {
  char w[256];
  if (!rtcl_available(w, sizeof w)) cr_skip_test("%s", w);
  if (access("/usr/include/CL/cl.h", R_OK) != 0) cr_skip_test("no OpenCL headers");
  UCtx *top = uop_ctx_new();
  char **names;
  int n = list_cases("numeric", &names), tried = 0, pass = 0;
  for (int i = 0; i < n; i++) {
    char why[1024] = "";
    int r = host_case(names[i], why, sizeof why);
    tried++;
    if (r) pass++;
    else cr_log_warn("%s: %s", names[i], why);
  }
  cr_expect_geq(tried, 38);
  cr_expect_eq(pass, tried, "%d of %d host.c runs match", pass, tried);
  uop_ctx_free(top);
}

/* ---- cuda_host ---- */
/* compile -t cuda's host.c builds without a warning against the toolkit's headers and links
 * against its libcuda stub, for every numeric case (it cannot run without a GPU: see
 * tests/cuda_device_check.sh) */
Test(gpu, cuda_host, .timeout = 600) {
  const char *inc = "/usr/local/cuda/include", *stub = "/usr/local/cuda/lib64/stubs";
  if (access("/usr/local/cuda/include/cuda.h", R_OK) != 0) cr_skip_test("no CUDA toolkit headers in %s", inc);
  UCtx *top = uop_ctx_new();
  char **names;
  int n = list_cases("numeric", &names), built = 0;
  for (int i = 0; i < n; i++) {
    UCtx *c = case_begin();
    TgTry t;
    if (TG_TRY(t)) {
      Graph *g = graph_read_file(arena_printf(ga(), "%s/numeric/%s.graph.json", oracle(), names[i]));
      char *dir = arena_printf(ga(), "%s/cuhost_%d", tmpdir(), i);
      driver_compile_gpu(g, driver_schedule(g), dir, "cuda");
      char *cmd = arena_printf(ga(), "cd %s && cc -O1 -Wall -Wextra -Werror -I%s host.c -o host -L%s -L/usr/local/cuda/lib64 -lcuda -lnvrtc 2>&1", dir, inc, stub);
      int rc = system(cmd);
      if (rc == 0) built++;
      else cr_log_warn("%s: `%s` exited %d", names[i], cmd, rc);
      tg_try_end(&t);
    } else cr_log_warn("%s: error %d: %s", names[i], tg_last_error.code, tg_last_error.msg);
    case_end(c);
  }
  cr_expect_geq(n, 38);
  cr_expect_eq(built, n, "%d of %d CUDA host.c files built", built, n);
  uop_ctx_free(top);
}

/* ---- cuda_no_device ---- */
Test(gpu, cuda_no_device) {
  void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (h) { dlclose(h); cr_skip_test("libcuda.so.1 is present"); }
  UCtx *top = uop_ctx_new();
  Graph *g = graph_read_file(arena_printf(ga(), "%s/numeric/numeric.expand_reshape.fe98bf.graph.json", oracle()));
  Schedule *s = driver_schedule(g);
  TgTry t;
  volatile bool failed = false;
  if (TG_TRY(t)) {
    driver_run_device(g, s, "cuda");
    tg_try_end(&t);
  } else {
    failed = true;
    cr_expect_eq(tg_last_error.code, TG_EDEVICE);
    cr_expect(strstr(tg_last_error.msg, "no CUDA device") != NULL, "%s", tg_last_error.msg);
  }
  cr_expect(failed);
  uop_ctx_free(top);
}

/* ---- thread_opts ---- */
/* the single kernel of numeric case name lowered for target t under opts (NULL: the heuristic) */
static Program *lower_case(const char *name, const KTarget *t, const char *opts) {
  KOptCfg cfg = {KOPT_HEURISTIC, 0, {{0}}, 0};
  char why[256];
  if (opts) cr_assert(kopt_parse(opts, &cfg, why, sizeof why), "%s", why);
  Graph *g = graph_read_file(arena_printf(ga(), "%s/numeric/%s.graph.json", oracle(), name));
  Schedule *s = driver_schedule(g);
  for (int i = 0; i < s->nitems; i++)
    if (s->items[i].ast->op == OP_SINK) return lower_kernel_for(s->items[i].ast, NULL, &cfg, t);
  cr_assert_fail("%s has no kernel", name);
  return NULL;
}
/* the kernel of the corpus numeric case name that tgc names kname, lowered for t with the heuristic's opts */
static Program *lower_case_named(const char *name, const KTarget *t, const char *kname) {
  KOptCfg cfg = {KOPT_HEURISTIC, 0, {{0}}, 0};
  Graph *g = graph_read_file(arena_printf(ga(), "%s/numeric/%s.graph.json", oracle(), name));
  Schedule *s = driver_schedule(g);
  for (int i = 0; i < s->nitems; i++) {
    if (s->items[i].ast->op != OP_SINK) continue;
    Program *p = lower_kernel_for(s->items[i].ast, NULL, &cfg, t);
    if (!strcmp(p->name, kname)) return p;
  }
  cr_assert_fail("%s has no kernel %s", name, kname);
  return NULL;
}
/* a division or modulo by a constant in source text (comments aside: '/' before '*' or ' ') */
static bool has_const_divmod(const char *src) {
  for (const char *q = src; *q; q++)
    if ((*q == '/' || *q == '%') && q[1] >= '0' && q[1] <= '9') return true;
  return false;
}
/* numeric case name (of dir; NULL: the corpus's) run on OpenCL with opts for every kernel matches
 * tinygrad's values */
static void run_with_opts_in(const char *dir, const char *name, const char *opts) {
  KOptCfg cfg;
  char why[1024] = "";
  cr_assert(kopt_parse(opts, &cfg, why, sizeof why), "%s", why);
  lower_opt_config(&cfg);
  bool ok = dir ? corpus_run_numeric_in(dir, name, "opencl", why, sizeof why) : corpus_run_numeric(name, "opencl", why, sizeof why);
  static const KOptCfg heuristic = {KOPT_HEURISTIC, 0, {{0}}, 0};
  lower_opt_config(&heuristic);
  cr_expect(ok, "%s under %s: %s", name, opts, why);
}
static void run_with_opts(const char *name, const char *opts) { run_with_opts_in(NULL, name, opts); }
Test(gpu, thread_opts, .timeout = 300) {
  UCtx *top = uop_ctx_new();
  /* LOCAL: 4 rows of the 64x48 matmul per work-group, no local memory */
  Program *p = lower_case("numeric.matmul.59608b", &ktarget_opencl, "LOCAL:0:4");
  RenderLaunch L;
  render_launch(p, &render_opencl, &L);
  cr_expect(L.exact && L.local[0] * L.local[1] * L.local[2] == 4, "local %lld %lld %lld", (long long)L.local[0], (long long)L.local[1], (long long)L.local[2]);
  char *src = render_function(ga(), p, &render_opencl);
  cr_expect(strstr(src, "get_local_id(0)") && strstr(src, "get_group_id(") && !strstr(src, "barrier("), "%s", src);
  /* GROUPTOP: the matvec's 128-long reduce over 16 threads, partial sums through local memory */
  p = lower_case("numeric.matvec.2f6e4e", &ktarget_opencl, "GROUPTOP:0:16");
  src = render_function(ga(), p, &render_opencl);
  cr_expect(strstr(src, "__local float temp0[16]") && strstr(src, "barrier(CLK_LOCAL_MEM_FENCE);") && strstr(src, "if (lidx0==0) {") &&
            strstr(src, "get_local_id(0)"), "%s", src);
  const char *bar = strstr(src, "barrier("), *store = strstr(src, "data0[");
  cr_expect(bar && store && bar < store, "the result is stored after the barrier, inside the IF: %s", src);
  render_launch(p, &render_opencl, &L);
  cr_expect(L.exact && L.local[0] == 16 && L.size[0] == 256, "launch %lld x %lld", (long long)L.size[0], (long long)L.local[0]);
  src = render_function(ga(), p, &render_cuda);
  cr_expect(strstr(src, "__shared__ float temp0[16]") && strstr(src, "__syncthreads();") && strstr(src, "threadIdx.x") && strstr(src, "blockIdx.x"), "%s", src);
  /* the heuristic on a GPU target: the matvec gets tinygrad's GROUP:0:8,LOCAL:0:4,UPCAST:0:4 */
  p = lower_case("numeric.matvec.2f6e4e", &ktarget_opencl, NULL);
  cr_expect_str_eq(kopt_format(ga(), p->nopts, p->opts), "GROUP:0:8,LOCAL:0:4,UPCAST:0:4");
  /* a merged axis split into GLOBAL, LOCAL and UPCAST pieces is indexed as tinygrad indexes it, every
   * ShapeTracker reshaped to the merged shape: layernorm's E_5_4_16_4_4 merges its (5, 4) rows into
   * one axis of 20, and its loads and stores are linear in gidx0 and lidx0. Unravelled over (5, 4)
   * and raveled back, the indices divided and took the modulo by 5 */
  p = lower_case_named("numeric.layernorm.519ed3", &ktarget_opencl, "E_5_4_16_4_4");
  src = render_function(ga(), p, &render_opencl);
  cr_expect(!has_const_divmod(src) && strstr(src, "((gidx0*1024)+(lidx0*256)+alu0)"), "%s", src);
  /* ... and the C target keeps its own (no locals) */
  p = lower_case("numeric.matvec.2f6e4e", &ktarget_c, NULL);
  cr_expect(p->nspecial == 0 && !strstr(kopt_format(ga(), p->nopts, p->opts), "LOCAL"));
  char w[256];
  if (!rtcl_available(w, sizeof w)) { uop_ctx_free(top); cr_skip_test("%s", w); }
  run_with_opts("numeric.matmul.59608b", "LOCAL:0:4");
  run_with_opts("numeric.matmul.59608b", "LOCAL:1:16,UPCAST:0:4,UNROLL:0:4");
  run_with_opts("numeric.matvec.2f6e4e", "GROUPTOP:0:16");
  run_with_opts("numeric.matvec.2f6e4e", "GROUP:0:8,LOCAL:0:4,UPCAST:0:4");
  run_with_opts("numeric.matvec.2f6e4e", "GROUPTOP:0:8,UPCAST:0:2,LOCAL:0:2");
  run_with_opts("numeric.matmul.59608b", "SWAP:0:1,LOCAL:0:4");
  /* a fused arange(4) reduced on an axis the kernel runs to 32 (r_4_32_32) ranges over its own 4:
   * the whole axis, and split by an UNROLL (its 4 as 1 x 4 and 2 x 2 where the kernel runs 8 x 4 and
   * 16 x 2); each failed before (test_gpu in the commit that added them) */
  const char *nd = arena_printf(ga(), "%s/testdata/numeric", corpus_src_root());
  run_with_opts_in(nd, "arange_onehot", "LOCAL:0:4");
  run_with_opts_in(nd, "arange_onehot", "UNROLL:1:4,LOCAL:0:2");
  run_with_opts_in(nd, "arange_onehot", "UNROLL:1:2,LOCAL:0:4");
  run_with_opts_in(nd, "arange_onehot", "UNROLL:0:4,LOCAL:0:4");
  uop_ctx_free(top);
}
