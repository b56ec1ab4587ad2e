/* libFuzzer target: the reader, the scheduler and then codegen: every kernel of the schedule is
 * lowered with tinygrad's heuristic opts and rendered as C (with the OpenMP loop shaping of
 * render/loops.c), OpenCL and CUDA source. As in fuzz_graph.c, any input must end in success or a
 * recorded TG_EINPUT error (TG_EDEVICE for a kernel a renderer refuses), never a crash, hang,
 * sanitizer report or internal error. `make fuzz FUZZ_TARGET=codegen FUZZ_SECONDS=N`. */
#include <stdio.h>
#include <stdlib.h>
#include "io/graph.h"
#include "../codegen_all.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  UCtx *c = uop_ctx_new();
  TgTry t;
  if (TG_TRY(t)) {
    Graph *g = graph_read_mem("fuzz.json", (const char *)data, size, ".");
    if (g->nrows < 2000) {
      uctx->opt = g->opt;
      Schedule *s = create_schedule(g->sink);
      codegen_all(s, 64);
    }
    tg_try_end(&t);
  } else if (tg_last_error.code != TG_EINPUT && tg_last_error.code != TG_EDEVICE) {
    fprintf(stderr, "fuzz: unexpected error class %d: %s\n", tg_last_error.code, tg_last_error.msg);
    abort();
  }
  uop_ctx_free(c);
  return 0;
}
