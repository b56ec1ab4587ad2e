/* cuda.c: the CUDA runtime (see gpu.h). The driver API (libcuda.so.1) and NVRTC (libnvrtc.so)
 * are declared here with minimal typedefs and resolved with dlsym. Kernels are compiled by NVRTC
 * for the device's compute capability (compute_XY), loaded as PTX with cuModuleLoadData and
 * launched with dimension 0 in blocks of up to 256 threads (the kernel guards the tail) and
 * dimensions 1 and 2 as grid y/z; a kernel with thread opts (lowered for the CUDA target: LOCAL,
 * GROUP) launches its exact grid and block. */
#include "gpu.h"
#include "../render/render.h"
#include <dlfcn.h>
#include <unistd.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

typedef int CUresult;
typedef unsigned long long CUdeviceptr;
typedef int nvrtcResult;

static struct {
  bool tried, ok;
  void *lib;
  nvrtcResult (*CreateProgram)(void **, const char *, const char *, int, const char *const *, const char *const *);
  nvrtcResult (*CompileProgram)(void *, int, const char *const *);
  nvrtcResult (*GetProgramLogSize)(void *, size_t *);
  nvrtcResult (*GetProgramLog)(void *, char *);
  nvrtcResult (*GetPTXSize)(void *, size_t *);
  nvrtcResult (*GetPTX)(void *, char *);
  nvrtcResult (*DestroyProgram)(void **);
} nv;

static void *open_first(const char *const *names) {
  for (int i = 0; names[i]; i++) {
    void *h = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
    if (h) return h;
  }
  return NULL;
}

bool rtcu_nvrtc_available(void) {
  if (nv.tried) return nv.ok;
  nv.tried = true;
  static const char *const names[] = {"libnvrtc.so", "libnvrtc.so.13", "libnvrtc.so.12", "/usr/local/cuda/lib64/libnvrtc.so", NULL};
  if (!(nv.lib = open_first(names))) return false;
#define SYM(f) if (!(*(void **)&nv.f = dlsym(nv.lib, "nvrtc" #f))) return false;
  SYM(CreateProgram) SYM(CompileProgram) SYM(GetProgramLogSize) SYM(GetProgramLog) SYM(GetPTXSize) SYM(GetPTX) SYM(DestroyProgram)
#undef SYM
  return nv.ok = true;
}

/* the CUDA toolkit's include directory (cuda_fp16.h, cuda_bf16.h for half/bfloat16 kernels):
 * $CUDA_PATH/include, $CUDA_HOME/include, /usr/local/cuda/include or /usr/include, the first that
 * holds cuda_fp16.h; NULL when none does */
static const char *cuda_include_dir(Arena *a) {
  const char *env[] = {getenv("CUDA_PATH"), getenv("CUDA_HOME")};
  for (int i = 0; i < 2; i++) {
    if (!env[i] || !*env[i]) continue;
    char *d = arena_printf(a, "%s/include", env[i]);
    if (access(arena_printf(a, "%s/cuda_fp16.h", d), R_OK) == 0) return d;
  }
  static const char *const dirs[] = {"/usr/local/cuda/include", "/usr/include"};
  for (int i = 0; i < 2; i++)
    if (access(arena_printf(a, "%s/cuda_fp16.h", dirs[i]), R_OK) == 0) return dirs[i];
  return NULL;
}

char *rtcu_compile_ptx(Arena *a, const char *src, const char *name, const char *arch, char **log) {
  if (log) *log = NULL;
  if (!rtcu_nvrtc_available()) { if (log) *log = "NVRTC (libnvrtc.so) not found"; return NULL; }
  void *prog = NULL;
  if (nv.CreateProgram(&prog, src, name, 0, NULL, NULL) != 0) { if (log) *log = "nvrtcCreateProgram failed"; return NULL; }
  const char *inc = cuda_include_dir(a);
  const char *opt[3] = {arena_printf(a, "--gpu-architecture=%s", arch), "-default-device", inc ? arena_printf(a, "-I%s", inc) : NULL};
  nvrtcResult rc = nv.CompileProgram(prog, inc ? 3 : 2, opt);
  size_t n = 0;
  nv.GetProgramLogSize(prog, &n);
  char *lg = arena_alloc(a, n + 1);
  if (n) nv.GetProgramLog(prog, lg);
  lg[n] = 0;
  if (log) *log = lg;
  char *ptx = NULL;
  if (rc == 0) {
    nv.GetPTXSize(prog, &n);
    ptx = arena_alloc(a, n + 1);
    nv.GetPTX(prog, ptx);
    ptx[n] = 0;
  }
  nv.DestroyProgram(&prog);
  return ptx;
}

static struct {
  bool tried, ok;
  char why[256];
  void *lib;
  int dev;
  void *ctx;
  char arch[32];
  CUresult (*Init)(unsigned);
  CUresult (*DeviceGetCount)(int *);
  CUresult (*DeviceGet)(int *, int);
  CUresult (*DeviceComputeCapability)(int *, int *, int);
  CUresult (*DevicePrimaryCtxRetain)(void **, int);
  CUresult (*CtxSetCurrent)(void *);
  CUresult (*ModuleLoadData)(void **, const void *);
  CUresult (*ModuleGetFunction)(void **, void *, const char *);
  CUresult (*MemAlloc)(CUdeviceptr *, size_t);
  CUresult (*MemFree)(CUdeviceptr);
  CUresult (*MemcpyHtoD)(CUdeviceptr, const void *, size_t);
  CUresult (*MemcpyDtoH)(void *, CUdeviceptr, size_t);
  CUresult (*LaunchKernel)(void *, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, void *, void **, void **);
  CUresult (*CtxSynchronize)(void);
} cu;

static bool cu_open(void) {
  if (cu.tried) return cu.ok;
  cu.tried = true;
  static const char *const names[] = {"libcuda.so.1", "libcuda.so", NULL};
  if (!(cu.lib = open_first(names))) { snprintf(cu.why, sizeof cu.why, "no CUDA device (libcuda.so.1 not found)"); return false; }
#define SYM(f, s) if (!(*(void **)&cu.f = dlsym(cu.lib, s))) { snprintf(cu.why, sizeof cu.why, "no CUDA device (%s missing)", s); return false; }
  SYM(Init, "cuInit") SYM(DeviceGetCount, "cuDeviceGetCount") SYM(DeviceGet, "cuDeviceGet")
  SYM(DeviceComputeCapability, "cuDeviceComputeCapability") SYM(DevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain")
  SYM(CtxSetCurrent, "cuCtxSetCurrent") SYM(ModuleLoadData, "cuModuleLoadData") SYM(ModuleGetFunction, "cuModuleGetFunction")
  SYM(MemAlloc, "cuMemAlloc_v2") SYM(MemFree, "cuMemFree_v2") SYM(MemcpyHtoD, "cuMemcpyHtoD_v2") SYM(MemcpyDtoH, "cuMemcpyDtoH_v2")
  SYM(LaunchKernel, "cuLaunchKernel") SYM(CtxSynchronize, "cuCtxSynchronize")
#undef SYM
  int n = 0;
  if (cu.Init(0) != 0 || cu.DeviceGetCount(&n) != 0 || n == 0) { snprintf(cu.why, sizeof cu.why, "no CUDA device"); return false; }
  int major = 0, minor = 0;
  if (cu.DeviceGet(&cu.dev, 0) || cu.DeviceComputeCapability(&major, &minor, cu.dev) || cu.DevicePrimaryCtxRetain(&cu.ctx, cu.dev) ||
      cu.CtxSetCurrent(cu.ctx)) { snprintf(cu.why, sizeof cu.why, "no CUDA device (context creation failed)"); return false; }
  snprintf(cu.arch, sizeof cu.arch, "compute_%d%d", major, minor);
  if (!rtcu_nvrtc_available()) { snprintf(cu.why, sizeof cu.why, "CUDA: NVRTC (libnvrtc.so) not found"); return false; }
  return cu.ok = true;
}

typedef struct CuKernel { const Program *prg; RenderLaunch launch; void *fn; } CuKernel;

static CuKernel *cu_build(Runtime *rt, UOp *ast) {
  Program *p = rt_lower(rt, ast, lower_get_opt_config(), &ktarget_cuda);
  CuKernel *k = arena_alloc(rt->a, sizeof *k);
  k->prg = p;
  render_launch(p, &render_cuda, &k->launch);
  const char *src = render_kernel(rt->a, p, &render_cuda);
  char *log = NULL;
  char *ptx = rtcu_compile_ptx(rt->a, src, arena_printf(rt->a, "%s.cu", p->fname), cu.arch, &log);
  if (!ptx) tg_fail(TG_EDEVICE, "kernel %s: %s", p->name, log ? log : "NVRTC failed");
  void *mod = NULL;
  CUresult rc = cu.ModuleLoadData(&mod, ptx);
  if (rc) tg_fail(TG_EDEVICE, "kernel %s: cuModuleLoadData failed (%d)", p->name, rc);
  if ((rc = cu.ModuleGetFunction(&k->fn, mod, p->fname))) tg_fail(TG_EDEVICE, "kernel %s: cuModuleGetFunction failed (%d)", p->name, rc);
  rt->ncompiled++;
  return k;
}

static const Program *cu_run_kernel(Runtime *rt, const SchedItem *si) {
  UOp *ast = si->ast;
  CuKernel *k = map_get(&rt->kernels, ast, uop_h(ast), NULL);
  if (!k) { k = cu_build(rt, ast); map_put(&rt->kernels, ast, uop_h(ast), k); }
  const Program *p = k->prg;
  int ng = p->nglobals;
  RtBuf **hb = arena_alloc(rt->a, sizeof *hb * (size_t)(ng + 1));
  CUdeviceptr *mem = arena_alloc(rt->a, sizeof *mem * (size_t)(ng + 1));
  int *vals = arena_alloc(rt->a, sizeof *vals * (size_t)(p->nvars + 1));
  void **args = arena_alloc(rt->a, sizeof *args * (size_t)(ng + p->nvars + 1));
  for (int i = 0; i < ng; i++) {
    int slot = (int)p->globals[i].u->arg->i;
    if (slot < 0 || slot >= si->nbufs) tg_fail(TG_EINPUT, "kernel %s: DEFINE_GLOBAL %d but the item has %d buffers", p->name, slot, si->nbufs);
    hb[i] = rt_buffer(rt, si->bufs[slot].buf, si->bufs[slot].shard);
    mem[i] = 0;
    for (int j = 0; j < i; j++) if (hb[j]->data == hb[i]->data && hb[j]->nbytes == hb[i]->nbytes) mem[i] = mem[j];
    if (!mem[i]) {
      if (cu.MemAlloc(&mem[i], hb[i]->nbytes ? hb[i]->nbytes : 16)) tg_fail(TG_EDEVICE, "kernel %s: cuMemAlloc of %zu bytes failed", p->name, hb[i]->nbytes);
      if (hb[i]->nbytes && cu.MemcpyHtoD(mem[i], hb[i]->data, hb[i]->nbytes)) tg_fail(TG_EDEVICE, "kernel %s: cuMemcpyHtoD failed", p->name);
    }
    args[i] = &mem[i];
  }
  for (int i = 0; i < p->nvars; i++) {
    vals[i] = (int)rt_var(rt, si, p, p->vars[i]->arg->items[0]->s);
    args[ng + i] = &vals[i];
  }
  const RenderLaunch *L = &k->launch;
  int64_t x = L->size[0];
  unsigned bx = x < 256 ? (unsigned)x : 256u, gx = (unsigned)((x + bx - 1) / bx), by = 1, bz = 1;
  if (L->exact) { gx = (unsigned)x; bx = (unsigned)L->local[0]; by = (unsigned)L->local[1]; bz = (unsigned)L->local[2]; }
  CUresult rc = cu.LaunchKernel(k->fn, gx, (unsigned)L->size[1], (unsigned)L->size[2], bx, by, bz, 0, NULL, args, NULL);
  if (rc) tg_fail(TG_EDEVICE, "kernel %s: cuLaunchKernel failed (%d)", p->name, rc);
  if ((rc = cu.CtxSynchronize())) tg_fail(TG_EDEVICE, "kernel %s: failed on the device (%d)", p->name, rc);
  for (int i = 0; i < ng; i++)
    if (p->globals[i].written && hb[i]->nbytes && cu.MemcpyDtoH(hb[i]->data, mem[i], hb[i]->nbytes)) tg_fail(TG_EDEVICE, "kernel %s: cuMemcpyDtoH failed", p->name);
  for (int i = 0; i < ng; i++) {
    bool first = true;
    for (int j = 0; j < i; j++) if (mem[j] == mem[i]) first = false;
    if (first) cu.MemFree(mem[i]);
  }
  return p;
}

int rtcu_run_schedule(Runtime *rt, const Schedule *s) {
  if (!cu_open()) tg_fail(TG_EDEVICE, "%s", cu.why);
  return rt_run_items(rt, s, cu_run_kernel);
}
