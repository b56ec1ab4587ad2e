/* opencl.c: the OpenCL runtime (see gpu.h). The API is declared here with its own minimal
 * typedefs and resolved from libOpenCL.so.1 with dlsym, so no OpenCL headers or libraries are
 * needed at build time. One platform/device/context/queue per process, opened on first use;
 * programs are built with -cl-std=CL1.2, kernels cached per AST in the Runtime's arena. Kernels are
 * lowered for the OpenCL target (its heuristic's LOCAL/GROUP opts); one with thread opts launches
 * its exact work-group size. */
#include "gpu.h"
#include "../render/render.h"
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

typedef int32_t cl_int;
typedef uint32_t cl_uint;
typedef uint64_t cl_ulong;
typedef void *cl_ptr;
#define CL_DEVICE_TYPE_ALL 0xFFFFFFFFull
#define CL_MEM_READ_WRITE (1u << 0)
#define CL_MEM_COPY_HOST_PTR (1u << 5)
#define CL_PROGRAM_BUILD_LOG 0x1183u

static struct {
  bool tried, ok;
  char why[256];
  void *lib;
  cl_ptr platform, device, ctx, queue;
  cl_int (*GetPlatformIDs)(cl_uint, cl_ptr *, cl_uint *);
  cl_int (*GetDeviceIDs)(cl_ptr, cl_ulong, cl_uint, cl_ptr *, cl_uint *);
  cl_ptr (*CreateContext)(const intptr_t *, cl_uint, const cl_ptr *, void *, void *, cl_int *);
  cl_ptr (*CreateCommandQueue)(cl_ptr, cl_ptr, cl_ulong, cl_int *);
  cl_ptr (*CreateProgramWithSource)(cl_ptr, cl_uint, const char **, const size_t *, cl_int *);
  cl_int (*BuildProgram)(cl_ptr, cl_uint, const cl_ptr *, const char *, void *, void *);
  cl_int (*GetProgramBuildInfo)(cl_ptr, cl_ptr, cl_uint, size_t, void *, size_t *);
  cl_ptr (*CreateKernel)(cl_ptr, const char *, cl_int *);
  cl_ptr (*CreateBuffer)(cl_ptr, cl_ulong, size_t, void *, cl_int *);
  cl_int (*SetKernelArg)(cl_ptr, cl_uint, size_t, const void *);
  cl_int (*EnqueueNDRangeKernel)(cl_ptr, cl_ptr, cl_uint, const size_t *, const size_t *, const size_t *, cl_uint, const cl_ptr *, cl_ptr *);
  cl_int (*EnqueueReadBuffer)(cl_ptr, cl_ptr, cl_uint, size_t, size_t, void *, cl_uint, const cl_ptr *, cl_ptr *);
  cl_int (*Finish)(cl_ptr);
  cl_int (*ReleaseMemObject)(cl_ptr);
} cl;

static bool cl_open(void) {
  if (cl.tried) return cl.ok;
  cl.tried = true;
  cl.lib = dlopen("libOpenCL.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!cl.lib) cl.lib = dlopen("libOpenCL.so", RTLD_NOW | RTLD_LOCAL);
  if (!cl.lib) { snprintf(cl.why, sizeof cl.why, "no OpenCL platform (libOpenCL.so.1 not found)"); return false; }
#define SYM(f) if (!(*(void **)&cl.f = dlsym(cl.lib, "cl" #f))) { snprintf(cl.why, sizeof cl.why, "no OpenCL platform (cl" #f " missing)"); return false; }
  SYM(GetPlatformIDs) SYM(GetDeviceIDs) SYM(CreateContext) SYM(CreateCommandQueue) SYM(CreateProgramWithSource)
  SYM(BuildProgram) SYM(GetProgramBuildInfo) SYM(CreateKernel) SYM(CreateBuffer) SYM(SetKernelArg)
  SYM(EnqueueNDRangeKernel) SYM(EnqueueReadBuffer) SYM(Finish) SYM(ReleaseMemObject)
#undef SYM
  cl_uint np = 0;
  cl_ptr plats[16];
  if (cl.GetPlatformIDs(16, plats, &np) != 0 || np == 0) { snprintf(cl.why, sizeof cl.why, "no OpenCL platform"); return false; }
  for (cl_uint i = 0; i < np && i < 16 && !cl.device; i++) {
    cl_uint nd = 0;
    if (cl.GetDeviceIDs(plats[i], CL_DEVICE_TYPE_ALL, 1, &cl.device, &nd) != 0 || nd == 0) cl.device = NULL;
    else cl.platform = plats[i];
  }
  if (!cl.device) { snprintf(cl.why, sizeof cl.why, "no OpenCL platform with a device"); return false; }
  cl_int err = 0;
  cl.ctx = cl.CreateContext(NULL, 1, &cl.device, NULL, NULL, &err);
  if (!cl.ctx || err) { snprintf(cl.why, sizeof cl.why, "OpenCL: clCreateContext failed (%d)", err); return false; }
  cl.queue = cl.CreateCommandQueue(cl.ctx, cl.device, 0, &err);
  if (!cl.queue || err) { snprintf(cl.why, sizeof cl.why, "OpenCL: clCreateCommandQueue failed (%d)", err); return false; }
  return cl.ok = true;
}

bool rtcl_available(char *why, size_t wn) {
  bool ok = cl_open();
  if (!ok && why && wn) snprintf(why, wn, "%s", cl.why);
  return ok;
}

typedef struct ClKernel { const Program *prg; RenderLaunch launch; cl_ptr kernel; } ClKernel;

static ClKernel *cl_build(Runtime *rt, UOp *ast) {
  Program *p = rt_lower(rt, ast, lower_get_opt_config(), &ktarget_opencl);
  ClKernel *k = arena_alloc(rt->a, sizeof *k);
  k->prg = p;
  render_launch(p, &render_opencl, &k->launch);
  const char *src = render_kernel(rt->a, p, &render_opencl);
  cl_int err = 0;
  cl_ptr prog = cl.CreateProgramWithSource(cl.ctx, 1, &src, NULL, &err);
  if (!prog || err) tg_fail(TG_EDEVICE, "kernel %s: clCreateProgramWithSource failed (%d)", p->name, err);
  if (cl.BuildProgram(prog, 1, &cl.device, "-cl-std=CL1.2", NULL, NULL) != 0) {
    size_t n = 0;
    cl.GetProgramBuildInfo(prog, cl.device, CL_PROGRAM_BUILD_LOG, 0, NULL, &n);
    char *log = arena_alloc(rt->a, n + 1);
    cl.GetProgramBuildInfo(prog, cl.device, CL_PROGRAM_BUILD_LOG, n, log, NULL);
    log[n] = 0;
    tg_fail(TG_EDEVICE, "kernel %s: %s", p->name, log);
  }
  k->kernel = cl.CreateKernel(prog, p->fname, &err);
  if (!k->kernel || err) tg_fail(TG_EDEVICE, "kernel %s: clCreateKernel failed (%d)", p->name, err);
  rt->ncompiled++;
  return k;
}

static const Program *cl_run_kernel(Runtime *rt, const SchedItem *si) {
  UOp *ast = si->ast;
  ClKernel *k = map_get(&rt->kernels, ast, uop_h(ast), NULL);
  if (!k) { k = cl_build(rt, ast); map_put(&rt->kernels, ast, uop_h(ast), k); }
  const Program *p = k->prg;
  int ng = p->nglobals;
  RtBuf **hb = arena_alloc(rt->a, sizeof *hb * (size_t)(ng + 1));
  cl_ptr *mem = arena_alloc(rt->a, sizeof *mem * (size_t)(ng + 1));
  cl_int err = 0;
  for (int i = 0; i < ng; i++) {
    int slot = (int)p->globals[i].u->arg->i;
    if (slot < 0 || slot >= si->nbufs) tg_fail(TG_EINPUT, "kernel %s: DEFINE_GLOBAL %d but the item has %d buffers", p->name, slot, si->nbufs);
    hb[i] = rt_buffer(rt, si->bufs[slot].buf, si->bufs[slot].shard);
    mem[i] = NULL;
    for (int j = 0; j < i; j++) if (hb[j]->data == hb[i]->data && hb[j]->nbytes == hb[i]->nbytes) mem[i] = mem[j];
    if (!mem[i]) {
      bool empty = hb[i]->nbytes == 0;
      mem[i] = cl.CreateBuffer(cl.ctx, CL_MEM_READ_WRITE | (empty ? 0 : CL_MEM_COPY_HOST_PTR), empty ? 16 : hb[i]->nbytes, empty ? NULL : hb[i]->data, &err);
      if (!mem[i] || err) tg_fail(TG_EDEVICE, "kernel %s: clCreateBuffer of %zu bytes failed (%d)", p->name, hb[i]->nbytes, err);
    }
    cl.SetKernelArg(k->kernel, (cl_uint)i, sizeof(cl_ptr), &mem[i]);
  }
  for (int i = 0; i < p->nvars; i++) {
    int v = (int)rt_var(rt, si, p, p->vars[i]->arg->items[0]->s);
    cl.SetKernelArg(k->kernel, (cl_uint)(ng + i), sizeof v, &v);
  }
  /* an exact launch (thread opts): size work-groups of local work-items; else the implementation's groups */
  const RenderLaunch *L = &k->launch;
  size_t gsz[3], lsz[3];
  for (int d = 0; d < 3; d++) { lsz[d] = (size_t)L->local[d]; gsz[d] = (size_t)L->size[d] * (L->exact ? lsz[d] : 1); }
  cl_uint dims = L->n ? (cl_uint)L->n : 1;
  err = cl.EnqueueNDRangeKernel(cl.queue, k->kernel, dims, NULL, gsz, L->exact ? lsz : NULL, 0, NULL, NULL);
  if (err) tg_fail(TG_EDEVICE, "kernel %s: clEnqueueNDRangeKernel failed (%d)", p->name, err);
  for (int i = 0; i < ng; i++)
    if (p->globals[i].written && hb[i]->nbytes) {
      err = cl.EnqueueReadBuffer(cl.queue, mem[i], 1, 0, hb[i]->nbytes, hb[i]->data, 0, NULL, NULL);
      if (err) tg_fail(TG_EDEVICE, "kernel %s: clEnqueueReadBuffer failed (%d)", p->name, err);
    }
  cl.Finish(cl.queue);
  for (int i = 0; i < ng; i++) {
    bool first = true;
    for (int j = 0; j < i; j++) if (mem[j] == mem[i]) first = false;
    if (first) cl.ReleaseMemObject(mem[i]);
  }
  return p;
}

int rtcl_run_schedule(Runtime *rt, const Schedule *s) {
  if (!cl_open()) tg_fail(TG_EDEVICE, "%s", cl.why);
  return rt_run_items(rt, s, cl_run_kernel);
}
