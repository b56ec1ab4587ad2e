/* compile_gpu.c: `tgc compile -t opencl|cuda`, per-kernel .cl/.cu files and a host program. */
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

