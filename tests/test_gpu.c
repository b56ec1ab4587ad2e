/* test_gpu: the OpenCL and CUDA backends (lib/render/opencl.c, cuda.c, lib/runtime/opencl.c, cuda.c,
 * driver_compile_gpu / driver_run_device). That every emitted .cl parses and every .cu compiles to
 * PTX is test_gpu_src (which links libclang; this binary must not: PoCL brings its own LLVM).
 *
 *   launch         render_launch maps output loops to launch dimensions (innermost is dimension 0)
 *   opencl_numeric every numeric corpus case runs on OpenCL (PoCL here) and matches tinygrad's
 *                  recorded outputs (skipped when there is no OpenCL platform)
 *   opencl_host    for every numeric case, the generated host.c builds with -lOpenCL and reproduces
 *                  tinygrad's outputs (multi-device graphs too: one host buffer per shard)
 *   cuda_host      the generated CUDA host.c builds with -Wall -Werror against the toolkit (CI has no GPU)
 *   cuda_no_device without libcuda.so.1, `run -d cuda` fails TG_EDEVICE "no CUDA device" */
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

/* ---- launch ---- */
Test(gpu, launch) {
  UCtx *top = uop_ctx_new();
  /* numeric.expand_reshape: tinygrad names its kernels E_3_5_4 and E_60 (loops 3, 5, 4 without opts) */
  static const KOptCfg noopt = {KOPT_NONE, 0, {{0}}};
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
    cr_expect_eq(cl.n, 3, "%s: %d launch dims", p->name, cl.n);
    cr_expect(cl.size[0] == 4 && cl.size[1] == 5 && cl.size[2] == 3, "%s: sizes %lld %lld %lld", p->name,
              (long long)cl.size[0], (long long)cl.size[1], (long long)cl.size[2]);
    cr_expect_eq(cu.n, 3);
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
