/* codegen_all.h: every kernel of a schedule lowered with the heuristic's opts and rendered as C
 * (with render/loops.c's OpenMP loop shaping), OpenCL and CUDA source, then with a few opt lists
 * grown as BEAM grows them (UPCAST, UNROLL, PADTO; for OpenCL also LOCAL and GROUPTOP), each action
 * kept when the list still lowers; shared by test_robust's replay of testdata/fuzz and the codegen
 * fuzz target (tests/fuzz/fuzz_codegen.c). A refused opt list is TG_EINPUT; any other error passes
 * on. */
#ifndef TGC_TESTS_CODEGEN_ALL_H
#define TGC_TESTS_CODEGEN_ALL_H
#include "codegen/codegen.h"
#include "render/render.h"
#include "schedule/schedule.h"

/* ast lowered (and rendered) with cfg for target t: true, or false when the opts are refused */
static inline bool codegen_try_opts(UOp *ast, const KOptCfg *cfg, const KTarget *t) {
  TgTry tr;
  if (!TG_TRY(tr)) {
    if (tg_last_error.code == TG_EINPUT) return false;
    TgErr e = tg_last_error;
    tg_fail(e.code, "%s", e.msg);
  }
  Program *p = lower_kernel_for(ast, NULL, cfg, t);
  render_kernel(ga(), p, t == &ktarget_c ? &render_c : &render_opencl);
  tg_try_end(&tr);
  return true;
}
static inline void codegen_opt_lists(UOp *ast, uint32_t seed) {
  static const KOpt acts[] = {{KOPT_UPCAST, 0, 4}, {KOPT_UPCAST, 1, 4}, {KOPT_UPCAST, 0, 0}, {KOPT_UNROLL, 0, 4}, {KOPT_UNROLL, 0, 0},
                              {KOPT_PADTO, 0, 32}, {KOPT_PADTO, 1, 32}, {KOPT_PADTO, 2, 16}, {KOPT_PADTO, 0, 8},
                              {KOPT_LOCAL, 0, 4}, {KOPT_GROUPTOP, 0, 16}};
  for (int gpu = 0; gpu < 2; gpu++) {
    KOptCfg cfg = {KOPT_LIST, 0, {{0}}, 0};
    uint32_t r = seed * 2654435761u + (uint32_t)gpu;
    for (int step = 0; step < 4; step++) {
      r = r * 1103515245u + 12345u;
      KOptCfg next = cfg;
      next.v[next.n++] = acts[(r >> 16) % (gpu ? 11u : 9u)];
      if (codegen_try_opts(ast, &next, gpu ? &ktarget_opencl : &ktarget_c)) cfg = next;
    }
  }
}

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
    codegen_opt_lists(s->items[i].ast, (uint32_t)i);
    n++;
  }
}

#endif
