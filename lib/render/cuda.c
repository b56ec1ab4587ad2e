/* cuda.c: the CUDA C++ backend of the renderer (tinygrad's CUDARenderer, renderer/cstyle.py),
 * compiled with NVRTC (no host headers).
 *
 * Kernels are `extern "C" __global__ void NAME(float* __restrict__ data0, ...)`; the output loops
 * chosen by render_launch become blockIdx.x*blockDim.x+threadIdx.x (dimension 0, the innermost,
 * blocks of up to 256 threads, guarded by `if (ridx < n)`), blockIdx.y and blockIdx.z (at most
 * 65535 each); the rest stay loops in the thread. A kernel with thread opts (LOCAL, GROUP...) reads
 * blockIdx/threadIdx as tinygrad's CUDARenderer does, its grouped reduce going through a
 * __shared__ buffer and __syncthreads(). half and bfloat16 buffers are __half and
 * __nv_bfloat16 (cuda_fp16.h, cuda_bf16.h: NVRTC needs the toolkit's include directory); values are
 * held as float and rounded to the type after every op (__float2half_rn), as the C backend does, so
 * results match the CPU runtime bit for bit; prelude_fix makes the shared helpers __device__ functions. */
#include "render.h"

static const char *cu_type(const DType *d) { return render_ctype(d, "bool", "CUDA"); }
static const char *cu_storage(const DType *d) {
  if (d->scalar == SC_HALF) return "__half";
  if (d->scalar == SC_BFLOAT16) return "__nv_bfloat16";
  return cu_type(d);
}
static char *cu_fix(Arena *a, char *s) {
  s = render_replace(a, s, "static inline ", "static __device__ inline ");
  return render_replace(a, s, "static const unsigned int rot", "const unsigned int rot");
}
const RenderBackend render_cuda = {
  .name = "cuda", .ext = ".cu", .kernel_prefix = "extern \"C\" __global__ void", .buffer_prefix = "", .buffer_suffix = " __restrict__",
  .readonly_prefix = "const ", .arg_int_prefix = "const int", .infinity = "INFINITY", .nan = "NAN",
  .emulated_16bit = true, .type_name = cu_type, .storage_name = cu_storage,
  .prelude_head = "#define INFINITY (__int_as_float(0x7f800000))\n#define NAN (__int_as_float(0x7fffffff))\n",
  .prelude_fix = cu_fix,
  .gid = {"(blockIdx.x*blockDim.x+threadIdx.x)", "blockIdx.y", "blockIdx.z"}, .gid_max = {2147483647, 65535, 65535},
  .group_id = {"blockIdx.x", "blockIdx.y", "blockIdx.z"}, .local_id = {"threadIdx.x", "threadIdx.y", "threadIdx.z"},
  .barrier = "__syncthreads();", .smem_prefix = "__shared__ ",
  .load16 = {"__half2float(%1$s[%2$s])", "__bfloat162float(%1$s[%2$s])"},
  .store16 = {"%1$s[%2$s] = __float2half_rn(%3$s)", "%1$s[%2$s] = __float2bfloat16_rn(%3$s)"},
  .round16 = {"__half2float(__float2half_rn(%s))", "__bfloat162float(__float2bfloat16_rn(%s))"},
  .include16 = {"#include <cuda_fp16.h>\n", "#include <cuda_bf16.h>\n"},
  /* float4 loads where the offset is a known multiple of 4 (a float4 load must be 16-byte aligned) */
  .vec4 = true, .vec4_aligned = true, .vec4_type = "float4", .vec4_load = "(*((const float4*)(%s+%s)))",
  .vec4_zero = "make_float4(0.0f,0.0f,0.0f,0.0f)", .vec4_lanes = {".x", ".y", ".z", ".w"},
};
