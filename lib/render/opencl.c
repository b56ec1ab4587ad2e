/* opencl.c: the OpenCL C backend of the renderer (tinygrad's OpenCLRenderer, renderer/cstyle.py).
 *
 * Kernels are `__kernel void NAME(__global float* restrict data0, ..., const int var)`; the
 * output loops chosen by render_launch become get_global_id(0..2) (innermost is dimension 0),
 * the rest stay loops inside the work-item. A kernel with thread opts (LOCAL, GROUP...) reads
 * get_group_id/get_local_id instead, its grouped reduce going through a __local buffer and
 * barrier(CLK_LOCAL_MEM_FENCE) (tinygrad's OpenCLRenderer). Semantics are those of the C backend: half and
 * bfloat16 values are held as float and rounded after every op, so results match the CPU runtime
 * bit for bit; half buffers are `half` read and written with OpenCL 1.2's core vload_half /
 * vstore_half_rte (no cl_khr_fp16 needed: devices without the extension run them too),
 * bfloat16 buffers ushort words. Four consecutive float loads under one mask are one vload4 (any
 * element alignment), as tinygrad's float4. The shared prelude is made valid
 * OpenCL C 1.2 by prelude_fix: no `static`, `long long` spelled `long`, math through the
 * overloaded builtins (exp2f -> exp2), double through cl_khr_fp64. bool buffers are uchar
 * (OpenCL forbids bool kernel arguments). */
#include "render.h"

static const char *cl_type(const DType *d) {
  switch (d->scalar) {
  case SC_BOOL: return "bool";
  case SC_CHAR: return "char";
  case SC_UCHAR: return "uchar";
  case SC_SHORT: return "short";
  case SC_USHORT: return "ushort";
  case SC_INT: return "int";
  case SC_UINT: return "uint";
  case SC_LONG: return "long";
  case SC_ULONG: return "ulong";
  case SC_HALF: case SC_BFLOAT16: case SC_FLOAT: return "float";
  case SC_DOUBLE: return "double";
  case SC_VOID: return "void";
  default: tg_fail(TG_EINPUT, "the OpenCL renderer has no type for %s", dt_short_name((Scalar)d->scalar));
  }
}
static const char *cl_storage(const DType *d) {
  if (d->scalar == SC_HALF) return "half";
  if (d->scalar == SC_BFLOAT16) return "tg_bf16";
  if (d->scalar == SC_BOOL) return "uchar";
  return cl_type(d);
}
static char *cl_fix(Arena *a, char *s) {
  static const char *const rep[][2] = {
    {"static inline ", "inline "}, {"static const ", "const "}, {"unsigned long long", "ulong"}, {"long long", "long"},
  };
  for (size_t i = 0; i < sizeof rep / sizeof rep[0]; i++) s = render_replace(a, s, rep[i][0], rep[i][1]);
  return s;
}
const RenderBackend render_opencl = {
  .name = "opencl", .ext = ".cl", .kernel_prefix = "__kernel void", .buffer_prefix = "__global ", .buffer_suffix = " restrict",
  .readonly_prefix = "const ", .arg_int_prefix = "const int", .infinity = "INFINITY", .nan = "NAN",
  .emulated_16bit = true, .type_name = cl_type, .storage_name = cl_storage,
  .prelude_head = "#pragma OPENCL EXTENSION cl_khr_fp64 : enable\n"
                  "#define exp2f exp2\n#define log2f log2\n#define sqrtf sqrt\n#define sinf sin\n#define truncf trunc\n",
  .prelude_fix = cl_fix, .suffix_ll = "l", .suffix_ull = "ul",
  .gid = {"get_global_id(0)", "get_global_id(1)", "get_global_id(2)"}, .gid_max = {0, 0, 0},
  .group_id = {"get_group_id(0)", "get_group_id(1)", "get_group_id(2)"}, .local_id = {"get_local_id(0)", "get_local_id(1)", "get_local_id(2)"},
  .barrier = "barrier(CLK_LOCAL_MEM_FENCE);", .smem_prefix = "__local ",
  .load16 = {"vload_half(%2$s, %1$s)", NULL}, .store16 = {"vstore_half_rte(%3$s, %2$s, %1$s)", NULL},
  /* float4 loads through vload4 (any element alignment, __global or __local) */
  .vec4 = true, .vec4_type = "float4", .vec4_load = "vload4(0, %s+%s)", .vec4_zero = "(float4)(0.0f)",
  .vec4_lanes = {".s0", ".s1", ".s2", ".s3"},
};
