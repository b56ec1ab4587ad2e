/* libFuzzer target: the graph reader plus the scheduler. Any input must end in success or a
 * recorded TG_EINPUT error, never a crash, hang, sanitizer report or an internal error.
 * Build and run with `make fuzz FUZZ_SECONDS=N` (clang, -fsanitize=fuzzer,address,undefined). */
#include <stdio.h>
#include <stdlib.h>
#include "io/graph.h"
#include "schedule/schedule.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  UCtx *c = uop_ctx_new();
  TgTry t;
  if (TG_TRY(t)) {
    Graph *g = graph_read_mem("fuzz.json", (const char *)data, size, ".");
    if (g->nrows < 2000) create_schedule(g->sink);
    tg_try_end(&t);
  } else if (tg_last_error.code != TG_EINPUT && tg_last_error.code != TG_EDEVICE) {
    fprintf(stderr, "fuzz: unexpected error class %d: %s\n", tg_last_error.code, tg_last_error.msg);
    abort();
  }
  uop_ctx_free(c);
  return 0;
}
