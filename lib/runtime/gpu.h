/* gpu runtimes: running a schedule through OpenCL (libOpenCL.so.1, e.g. PoCL on the CPU) or the
 * CUDA driver API (libcuda.so.1, kernels compiled by NVRTC, libnvrtc.so), both loaded with dlopen
 * so tgc builds and runs where they are absent.
 *
 * Memory stays the CPU runtime's (Runtime from runtime.h): COPY and BUFFER_VIEW items run on the
 * host buffers exactly as on the CPU; each kernel uploads the distinct host buffers it names into
 * device buffers, launches with the dimensions render_launch chose, and reads back the buffers it
 * writes. Kernels are rendered with render_opencl / render_cuda and built once per AST. */
#ifndef TGC_RUNTIME_GPU_H
#define TGC_RUNTIME_GPU_H
#include "runtime.h"

/* true when an OpenCL platform with a device can be opened; else why says what is missing */
bool rtcl_available(char *why, size_t wn);
/* run every item of s on OpenCL (host buffers in rt); TG_EDEVICE "no OpenCL platform" when none,
 * "kernel NAME: <build log>" on build failures; returns the number of kernels run */
int rtcl_run_schedule(Runtime *rt, const Schedule *s);

/* true when NVRTC (libnvrtc.so) can be loaded */
bool rtcu_nvrtc_available(void);
/* compile CUDA source src to PTX for arch ("compute_80"); NULL and *log (diagnostics) on errors */
char *rtcu_compile_ptx(Arena *a, const char *src, const char *name, const char *arch, char **log);
/* run every item of s on the first CUDA device; TG_EDEVICE "no CUDA device" when there is none */
int rtcu_run_schedule(Runtime *rt, const Schedule *s);

#endif
