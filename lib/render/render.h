/* render: printing a lowered Program (lib/codegen) as source code, one indented function per
 * kernel, in the style of tinygrad 0.11.0's CStyleLanguage (renderer/cstyle.py).
 *
 * A backend is a table of strings and a few functions (RenderBackend): the kernel/buffer/int
 * argument prefixes, the type names, how half and bfloat16 are held, and the source prelude.
 * The C backend holds half/bfloat16 values as float rounded after every op (plain-C conversion
 * helpers in the prelude), stores them as 16-bit words, and adds an entry point the CPU runtime
 * calls with a buffer array and a var array. OpenCL and CUDA backends fill the same table. */
#ifndef TGC_RENDER_H
#define TGC_RENDER_H
#include "../codegen/codegen.h"

typedef struct RenderBackend {
  const char *name;            /* "c" */
  const char *ext;             /* source file extension: ".c" */
  const char *kernel_prefix;   /* "void", "__kernel void", "extern \"C\" __global__ void" */
  const char *buffer_prefix;   /* "", "__global " */
  const char *buffer_suffix;   /* " restrict" */
  const char *readonly_prefix; /* "const " on buffers the kernel only reads */
  const char *arg_int_prefix;  /* "const int" */
  const char *infinity, *nan;  /* float literals */
  bool emulated_16bit;         /* half/bfloat16 held as float, stored as unsigned short */
  /* C backend: half follows clang's __fp16, as tinygrad's CPU backend renders it: arithmetic in
   * float, rounded to half only where a value is given a name, cast to half, accumulated or stored
   * (without it, every half operation is rounded, as a native half type computes) */
  bool fp16_storage;
  const char *(*type_name)(const DType *dt);   /* C type of a scalar value of dt */
  const char *(*storage_name)(const DType *dt);/* C type of a buffer element of dt */
  /* GPU backends (NULL/0 in the C backend): */
  const char *prelude_head;    /* first prelude lines (NULL: "#include <math.h>") */
  char *(*prelude_fix)(Arena *a, char *prelude); /* rewrites the printed prelude (qualifiers, types) */
  const char *suffix_ll, *suffix_ull;            /* 64-bit literal suffixes (NULL: "ll", "ull") */
  const char *gid[3];          /* index expression of launch dimension 0..2 (NULL: no launch dims) */
  const char *group_id[3];     /* thread lowering: the work-group id, the thread's id in its group */
  const char *local_id[3];
  const char *barrier;         /* a work-group barrier statement */
  const char *smem_prefix;     /* qualifiers of the local buffer's declaration */
  int64_t gid_max[3];          /* largest launch size per dimension (0: unlimited) */
  /* half ([0]) and bfloat16 ([1]) buffers of a native 16-bit type (storage_name's), values still
   * held as float (NULL: 16-bit words converted by the prelude's tg_h2f/tg_f2h, tg_bf2f/tg_f2bf): */
  const char *load16[2];       /* printf format: element %2$s of buffer %1$s as a float */
  const char *store16[2];      /* printf format: the statement storing float %3$s to element %2$s of buffer %1$s */
  const char *round16[2];      /* printf format: float %s rounded to the type (NULL: the prelude's tg_hr/tg_br) */
  const char *include16[2];    /* prelude line the type needs ("#include <cuda_fp16.h>\n") */
  /* C backend: split the kernel's outermost output loop across threads with OpenMP (compile with
   * -fopenmp): 0 no, -1 "#pragma omp parallel for" (the thread count is OMP_NUM_THREADS'), N > 1
   * num_threads(N). Only a loop that is alone at depth 0 (no accumulator or store beside it, the
   * same test as a GPU launch dimension) and kernels with enough work get it. */
  int parallel;
  /* C backend: an innermost reduce loop that only sums into float accumulators gets "#pragma omp
   * simd reduction(+:acc...)" when fast_sums allows it (compile with -fopenmp-simd or -fopenmp),
   * which lets the compiler vectorize the sum (reassociating it); dense elementwise loops get
   * "#pragma omp simd" either way */
  bool simd;
  /* C backend: float sums may be reassociated (`--fast-sums`): with simd, innermost float-sum loops
   * get simd reductions and loop fission, and reductions run up to 3x faster. false (the default):
   * every float sum in tinygrad's serial order, as its CPU backend adds, so values are its bits */
  bool fast_sums;
  /* four float32 loads of one buffer at base+c..base+c+3 under one mask in one block become one
   * 16-byte vector load and its lanes, as tinygrad's float4 loads: vec4_type names the vector,
   * vec4_load is a printf format of (buffer, offset), vec4_zero the value where the mask is false
   * and vec4_lanes[l] follows the vector's name to read lane l (NULL: the C backend's tg_f4, a
   * GCC/Clang vector type, loaded through a pointer cast and indexed with []). vec4_aligned: the
   * load needs 16-byte alignment (CUDA's float4): only global buffers (tgc allocates each one
   * apart, 256-byte aligned) at offsets known to be multiples of 4 */
  bool vec4, vec4_aligned;
  /* C backend: a reduce loop walking a 4 KB-strided operand runs in blocks around its enclosing
   * loop, each sum resumed from its partial in the output (render/loops.c: render_kblock) */
  bool kblock;
  const char *vec4_type, *vec4_load, *vec4_zero, *vec4_lanes[4];
  /* C backend: EXP2/LOG2 (and POW through them) as tinygrad's xexp2/xlog2 polynomials (the
   * prelude's tg_exp2f, tg_log2f...), as tinygrad's CPU backend renders them, instead of libm */
  bool soft_math;
} RenderBackend;
/* the C backend with parallel set (threads: 1 none, 0 OpenMP's default count, N); simd with it */
RenderBackend render_c_threads(int threads);
extern const RenderBackend render_c;
/* the C-family scalar type of a value of d (half/bfloat16 are held as float); bool_name spells
 * bool ("_Bool" in C, "bool" in CUDA); who names the renderer in the error for unknown types */
const char *render_ctype(const DType *d, const char *bool_name, const char *who);
extern const RenderBackend render_opencl;  /* lib/render/opencl.c */
extern const RenderBackend render_cuda;    /* lib/render/cuda.c */

/* the output loops a GPU backend runs as launch dimensions: the chain of outermost RANGEs with a
 * constant end that are the only loop (and have no accumulator or store beside them) at their
 * depth, at most 3; the innermost one is dimension 0. size[d] is the launch size of dimension d
 * (the backend picks the work-group size; a kernel guards its own tail).
 * A thread-lowered Program (nspecial > 0) launches exactly: exact is set, size[d] work-groups of
 * local[d] threads each (OpenCL global size size*local, CUDA grid size and block local). */
typedef struct RenderLaunch { int n; UOp *loops[3]; int dim[3]; int64_t size[3], local[3]; bool exact; } RenderLaunch;
void render_launch(const Program *p, const RenderBackend *be, RenderLaunch *l);
/* s with every occurrence of from replaced by to (for prelude_fix hooks) */
char *render_replace(Arena *a, const char *s, const char *from, const char *to);

/* the helpers (includes, half/bfloat16 conversion, pow, threefry, bitcasts) that these
 * programs need, once for one translation unit */
char *render_prelude(Arena *a, int n, const Program *const *ps, const RenderBackend *be);
/* one kernel function */
char *render_function(Arena *a, const Program *p, const RenderBackend *be);
/* a whole translation unit for one kernel: prelude + function */
char *render_kernel(Arena *a, const Program *p, const RenderBackend *be);
/* C backend: `void tgc_entry(void **bufs, const long long *vars)` calling the kernel, for the
 * CPU runtime (bufs in DEFINE_GLOBAL order, vars in Program.vars order) */
char *render_c_entry(Arena *a, const Program *p);
/* a C literal for CONST u (its dtype decides the suffix / cast) */
const char *render_const(Arena *a, UOp *u, const RenderBackend *be);

/* IEEE half / bfloat16 conversions, round to nearest even (the same code the prelude prints) */
uint16_t render_f2h(float f);
float render_h2f(uint16_t h);
uint16_t render_f2bf(float f);
float render_bf2f(uint16_t h);

#endif
