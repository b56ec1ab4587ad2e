/* libFuzzer target: the reader, the scheduler and then codegen: every kernel of the schedule is
 * lowered with tinygrad's heuristic opts and rendered as C (with the OpenMP loop shaping of
 * render/loops.c), OpenCL and CUDA source. As in fuzz_graph.c, any input must end in success or a
 * recorded TG_EINPUT error (TG_EDEVICE for a kernel a renderer refuses), never a crash, hang,
 * sanitizer report or internal error. `make fuzz FUZZ_TARGET=codegen FUZZ_SECONDS=N`. */
#include <stdio.h>
#include <stdlib.h>
#include "io/graph.h"
#include "schedule/schedule.h"
#include "codegen/codegen.h"
#include "render/render.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  UCtx *c = uop_ctx_new();
  TgTry t;
  if (TG_TRY(t)) {
    Graph *g = graph_read_mem("fuzz.json", (const char *)data, size, ".");
    if (g->nrows < 2000) {
      uctx->opt = g->opt;
      Schedule *s = create_schedule(g->sink);
      RenderBackend omp = render_c_threads(0);
      KNames kn;
      knames_init(&kn, ga());
      for (int i = 0; i < s->nitems && i < 64; i++) {
        if (s->items[i].ast->op != OP_SINK) continue;
        Program *p = lower_kernel(s->items[i].ast, &kn);
        render_kernel(ga(), p, &omp);
        render_kernel(ga(), p, &render_opencl);
        render_kernel(ga(), p, &render_cuda);
      }
    }
    tg_try_end(&t);
  } else if (tg_last_error.code != TG_EINPUT && tg_last_error.code != TG_EDEVICE) {
    fprintf(stderr, "fuzz: unexpected error class %d: %s\n", tg_last_error.code, tg_last_error.msg);
    abort();
  }
  uop_ctx_free(c);
  return 0;
}
