/* compile_gpu.c: `tgc compile -t opencl|cuda`: per-kernel .cl/.cu files (content-hashed names, as
 * -t c), schedule.json, MANIFEST, and host.c, a program that builds the kernels with the OpenCL
 * API or NVRTC and runs the C bundle's tgc_model_run (model_emit_run) with kernel launches.
 * Kernels are lowered for the GPU target (KTarget: its heuristic's LOCAL/GROUP opts), and host.c
 * launches a thread-lowered kernel with its exact work-group (block) size. */
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
  "  /* exact: gsz work-groups of lsz work-items (thread opts); else the implementation picks groups */\n"
  "  size_t g[3], l[3];\n"
  "  for (int d = 0; d < 3; d++) { l[d] = kinfo[k].lsz[d]; g[d] = kinfo[k].gsz[d] * (kinfo[k].exact ? l[d] : 1); }\n"
  "  if (clEnqueueNDRangeKernel(q, kern[k], (cl_uint)kinfo[k].ndim, NULL, g, kinfo[k].exact ? l : NULL, 0, NULL, NULL) != CL_SUCCESS) return -1;\n"
  "  for (int i = 0; i < kinfo[k].nbufs; i++) if (wr[i] && nb[i]) clEnqueueReadBuffer(q, m[i], CL_TRUE, 0, nb[i], bufs[i], 0, NULL, NULL);\n"
  "  clFinish(q);\n  for (int i = 0; i < kinfo[k].nbufs; i++) clReleaseMemObject(m[i]);\n  return 0;\n}\n";
static const char host_cu_src[] =
  "#include <cuda.h>\n#include <nvrtc.h>\n"
  "/* where NVRTC finds cuda_fp16.h and cuda_bf16.h (half/bfloat16 kernels) */\n"
  "#ifndef TGC_CUDA_INCLUDE\n#define TGC_CUDA_INCLUDE \"/usr/local/cuda/include\"\n#endif\n"
  "static CUcontext ctx;\nstatic CUfunction kern[TGC_NKERNELS];\nstatic char arch[32];\n"
  "static int gpu_init(void) {\n"
  "  int n = 0, ma = 0, mi = 0;\n  CUdevice d;\n"
  "  if (cuInit(0) != CUDA_SUCCESS || cuDeviceGetCount(&n) != CUDA_SUCCESS || !n) { fprintf(stderr, \"no CUDA device\\n\"); return -1; }\n"
  "  cuDeviceGet(&d, 0);\n  cuDeviceGetAttribute(&ma, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, d);\n"
  "  cuDeviceGetAttribute(&mi, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, d);\n"
  "  snprintf(arch, sizeof arch, \"--gpu-architecture=compute_%d%d\", ma, mi);\n"
  "  return cuDevicePrimaryCtxRetain(&ctx, d) == CUDA_SUCCESS && cuCtxSetCurrent(ctx) == CUDA_SUCCESS ? 0 : -1;\n}\n"
  "static int gpu_build(int k, const char *src) {\n"
  "  nvrtcProgram p;\n  const char *opt[2] = {arch, \"-I\" TGC_CUDA_INCLUDE};\n  size_t n = 0;\n"
  "  if (nvrtcCreateProgram(&p, src, kinfo[k].file, 0, NULL, NULL) != NVRTC_SUCCESS) return -1;\n"
  "  if (nvrtcCompileProgram(p, 2, opt) != NVRTC_SUCCESS) {\n"
  "    nvrtcGetProgramLogSize(p, &n);\n    char *log = malloc(n + 1);\n    if (log) { nvrtcGetProgramLog(p, log); log[n] = 0; fprintf(stderr, \"%s: %s\\n\", kinfo[k].file, log); free(log); }\n"
  "    return -1;\n  }\n"
  "  nvrtcGetPTXSize(p, &n);\n  char *ptx = malloc(n + 1);\n  if (!ptx) return -1;\n  nvrtcGetPTX(p, ptx);\n  nvrtcDestroyProgram(&p);\n"
  "  CUmodule mod;\n  int rc = cuModuleLoadData(&mod, ptx) == CUDA_SUCCESS && cuModuleGetFunction(&kern[k], mod, kinfo[k].fname) == CUDA_SUCCESS ? 0 : -1;\n"
  "  free(ptx);\n  return rc;\n}\n"
  "/* upload the buffers, launch (exact: gsz blocks of lsz threads; else dimension 0 in blocks of up to\n"
  " * 256 threads), read back the written ones */\n"
  "static int gpu_run(int k, unsigned char **bufs, const size_t *nb, const int *wr, const int *vars) {\n"
  "  CUdeviceptr m[TGC_MAXARGS];\n  void *args[TGC_MAXARGS * 2];\n  int v[TGC_MAXARGS];\n"
  "  for (int i = 0; i < kinfo[k].nbufs; i++) {\n"
  "    if (cuMemAlloc(&m[i], nb[i] ? nb[i] : 16) != CUDA_SUCCESS) return -1;\n"
  "    if (nb[i]) cuMemcpyHtoD(m[i], bufs[i], nb[i]);\n    args[i] = &m[i];\n  }\n"
  "  for (int i = 0; i < kinfo[k].nvars; i++) { v[i] = vars[i]; args[kinfo[k].nbufs + i] = &v[i]; }\n"
  "  size_t x = kinfo[k].gsz[0];\n  unsigned bx = x < 256 ? (unsigned)x : 256u, gx = (unsigned)((x + bx - 1) / bx);\n"
  "  if (kinfo[k].exact) { gx = (unsigned)x; bx = (unsigned)kinfo[k].lsz[0]; }\n"
  "  if (cuLaunchKernel(kern[k], gx, (unsigned)kinfo[k].gsz[1], (unsigned)kinfo[k].gsz[2], bx, (unsigned)kinfo[k].lsz[1], (unsigned)kinfo[k].lsz[2], 0, NULL, args, NULL) != CUDA_SUCCESS) return -1;\n"
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
  "  void *in[TGC_NINPUTS + 1], *out[TGC_NOUTPUTS + 1];\n"
  "  if (gpu_init()) return 4;\n"
  "  for (int k = 0; k < TGC_NKERNELS; k++) {\n"
  "    snprintf(path, sizeof path, \"%s/%s\", dir, kinfo[k].file);\n    char *src = (char *)slurp(path, NULL);\n"
  "    if (!src) { fprintf(stderr, \"%s: cannot read\\n\", path); return 2; }\n    if (gpu_build(k, src)) return 4;\n    free(src);\n  }\n"
  "  for (int i = 0; i < TGC_NINPUTS; i++) {\n"
  "    if (!(in[i] = calloc(1, in_nbytes[i] + 16))) return 1;\n"
  "    size_t n = 0;\n    snprintf(path, sizeof path, \"%s/input%d.bin\", dir, i);\n    unsigned char *d = slurp(path, &n);\n"
  "    if (d) { memcpy(in[i], d, n < in_nbytes[i] ? n : in_nbytes[i]); free(d); }\n  }\n"
  "  for (int i = 0; i < TGC_NOUTPUTS; i++) if (!(out[i] = calloc(1, out_nbytes[i] + 16))) return 1;\n"
  "  if (tgc_model_run(in, out)) { fprintf(stderr, \"a kernel failed or a buffer could not be allocated\\n\"); return 4; }\n"
  "  for (int i = 0; i < TGC_NOUTPUTS; i++) {\n"
  "    snprintf(path, sizeof path, \"%s/out%d.bin\", dir, i);\n    FILE *f = fopen(path, \"wb\");\n"
  "    if (!f || fwrite(out[i], 1, out_nbytes[i], f) != out_nbytes[i] || fclose(f)) { fprintf(stderr, \"%s: cannot write\\n\", path); return 2; }\n"
  "  }\n  return 0;\n}\n";

/* model_plan with the kernels lowered for the GPU target (its heuristic: locals, grouped reduces;
 * its launch), the process-wide target put back after */
static void plan_for_target(ModelPlan *mp, Graph *g, Schedule *s, const RenderBackend *be) {
  const KTarget *prev = lower_get_target();
  lower_target(be == &render_opencl ? &ktarget_opencl : &ktarget_cuda);
  TgTry t;
  if (TG_TRY(t)) {
    model_plan(mp, g, s, be);
    tg_try_end(&t);
  } else {
    lower_target(prev);
    char msg[sizeof tg_last_error.msg];
    snprintf(msg, sizeof msg, "%s", tg_last_error.msg);
    tg_fail(tg_last_error.code, "%s", msg);
  }
  lower_target(prev);
}

int driver_compile_gpu(Graph *g, Schedule *s0, const char *dir, const char *target) {
  Schedule *const s = driver_realize_outputs(s0);
  Arena *a = ga();
  const RenderBackend *volatile be = !strcmp(target, "opencl") ? &render_opencl : !strcmp(target, "cuda") ? &render_cuda : NULL;
  if (!be) tg_fail(TG_EINPUT, "compile: unknown target '%s'", target);
  ModelPlan mp;
  plan_for_target(&mp, g, s, be);
  int nprog = mp.nprog, maxargs = 1;
  const Program **ps = mp.ps;
  for (int i = 0; i < nprog; i++) if (ps[i]->nglobals + ps[i]->nvars > maxargs) maxargs = ps[i]->nglobals + ps[i]->nvars;
  char *tmp = arena_printf(a, "%s.tmp.%d", dir, (int)getpid());
  remove_flat_dir(tmp);
  if (mkdir(tmp, 0755) != 0) tg_fail(TG_EINPUT, "%s: cannot create: %s", tmp, strerror(errno));
  TgTry t;
  if (TG_TRY(t)) {
    SB man = {a, NULL, 0, 0};
    manifest = &man;
    for (int i = 0; i < nprog; i++) write_or_fail(tmp, mp.files[i], mp.texts[i]);
    write_or_fail(tmp, "schedule.json", schedule_write_json(a, s, g, mp.names, mp.sources));
    bool cl = be == &render_opencl;
    SB c = {a, NULL, 0, 0};
    sb_printf(&c, "/* host.c: runs the schedule of %s (%d kernels, %d items) with the %s.\n", g->path, nprog, s->nitems,
              cl ? "OpenCL API" : "CUDA driver API and NVRTC");
    sb_printf(&c, " * Build: cc -O2 host.c -o host %s. Run: ./host [DIR] (DIR holds the %s files; default .).\n",
              cl ? "-lOpenCL" : "-I/usr/local/cuda/include -L/usr/local/cuda/lib64 -lcuda -lnvrtc", be->ext);
    sb_printf(&c, " * Inputs: DIR/inputN.bin, the raw bytes of the graph's BUFFER row N-th in row order (zeros when absent;\n"
                  " * %d inputs). Outputs: DIR/outN.bin, each sink source C-contiguous (%d outputs). half/bfloat16\n"
                  " * elements are 16-bit words. Buffers live in host memory (one per buffer and device shard, as in\n"
                  " * the C bundle's model.c); each kernel uploads the buffers it names and reads back the ones it writes. */\n",
              mp.m.ninputs, mp.nout);
    sb_printf(&c, "#include <stdio.h>\n#include <stdlib.h>\n#include <string.h>\n\n");
    sb_printf(&c, "#define TGC_NKERNELS %d\n#define TGC_NINPUTS %d\n#define TGC_NOUTPUTS %d\n#define TGC_MAXARGS %d\n", nprog ? nprog : 1, mp.m.ninputs, mp.nout, maxargs);
    sb_printf(&c, "static const struct { const char *file, *fname; int nbufs, nvars, ndim, exact; size_t gsz[3], lsz[3]; } kinfo[TGC_NKERNELS] = {\n");
    for (int i = 0; i < nprog; i++) {
      RenderLaunch L;
      render_launch(ps[i], be, &L);
      sb_printf(&c, "  {\"%s\", \"%s\", %d, %d, %d, %d, {%lld, %lld, %lld}, {%lld, %lld, %lld}}, /* %s */\n", mp.files[i], ps[i]->fname, ps[i]->nglobals,
                ps[i]->nvars, L.n ? L.n : 1, L.exact, (long long)L.size[0], (long long)L.size[1], (long long)L.size[2], (long long)L.local[0],
                (long long)L.local[1], (long long)L.local[2], ps[i]->name);
    }
    if (!nprog) sb_printf(&c, "  {\"\", \"\", 0, 0, 1, 0, {1, 1, 1}, {1, 1, 1}},\n");
    sb_printf(&c, "};\nstatic const size_t in_nbytes[TGC_NINPUTS + 1] = {");
    for (int i = 0; i < mp.m.ninputs; i++) {
      size_t nb = 0;
      for (int k = 0; k < mp.m.n; k++) if (mp.m.b[k].input == i) nb = mp.m.b[k].nbytes;
      sb_printf(&c, "%zu, ", nb);
    }
    sb_printf(&c, "0};\nstatic const size_t out_nbytes[TGC_NOUTPUTS + 1] = {");
    for (int i = 0; i < mp.nout; i++) sb_printf(&c, "%zu, ", mp.outs[i].nbytes);
    sb_printf(&c, "0};\n\n%s\n", cl ? host_cl_src : host_cu_src);
    sb_printf(&c, "int tgc_model_run(void *const *inputs, void *const *outputs);\n");
    model_emit_run(&c, &mp, s, true);
    sb_printf(&c, "\n%s", host_main_src);
    write_or_fail(tmp, "host.c", sb_get(&c));
    manifest = NULL;
    write_or_fail(tmp, "MANIFEST", sb_get(&man));
    tg_try_end(&t);
  } else {
    manifest = NULL;
    abandon_output_dir(tmp);
  }
  /* put it in place as compile -t c does: an existing DIR is replaced only when it is a previous output */
  install_output_dir(a, tmp, dir);
  return nprog;
}
