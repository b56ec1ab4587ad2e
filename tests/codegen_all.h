/* codegen_all.h: every kernel of a schedule lowered with the heuristic's opts and rendered as C
 * (with render/loops.c's OpenMP loop shaping), OpenCL and CUDA source; shared by test_robust's
 * replay of testdata/fuzz and the codegen fuzz target (tests/fuzz/fuzz_codegen.c). */
#ifndef TGC_TESTS_CODEGEN_ALL_H
#define TGC_TESTS_CODEGEN_ALL_H
#include "codegen/codegen.h"
#include "render/render.h"
#include "schedule/schedule.h"

static inline void codegen_all(const Schedule *s, int max_kernels) {
  RenderBackend omp = render_c_threads(0);
  KNames kn;
  knames_init(&kn, ga());
  for (int i = 0, n = 0; i < s->nitems && n < max_kernels; i++) {
    if (s->items[i].ast->op != OP_SINK) continue;
    Program *p = lower_kernel(s->items[i].ast, &kn);
    render_kernel(ga(), p, &omp);
    render_kernel(ga(), p, &render_opencl);
    render_kernel(ga(), p, &render_cuda);
    n++;
  }
}

#endif
