/* bench: times tgc's scheduler on one graph file, for `make bench` (tests/bench.sh).
 *
 * Approach. The file's text is read once; each of N runs then creates a fresh compile context,
 * parses the text (graph_read_mem, timed as "read") and runs create_schedule (timed as
 * "schedule"), then frees the context, so no interned node or cache survives from one run to the
 * next (the same protocol as tools/tgc_graph.py bench, which reloads the graph for every run).
 * Prints one line: "uops read_ms schedule_ms peak_bytes kernels kernelize_ms" with median
 * times; kernelize_ms is the part of schedule_ms that get_kernelize_map takes (the rest orders the
 * kernels: create_schedule_with_vars). peak_bytes is the context's MemUse peak: the most bytes
 * it held at one moment in its arenas (graph, scratch), kernelize's two pass-map arenas, its heap
 * tables (intern sets and memos, a growing one's old table with the new) and its walk stack.
 * `bench GRAPH N read` only reads (schedule_ms and kernels are then 0). Untimed warm-up runs come
 * first (BENCH_WARMUP_MS, default 200 ms; 0 for none). */
#include "io/graph.h"
#include "schedule/schedule.h"
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <malloc.h>

static char *slurp(const char *path, size_t *n) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  size_t cap = 1 << 16, len = 0;
  char *buf = malloc(cap + 1);
  for (size_t r; buf && (r = fread(buf + len, 1, cap - len, f)) > 0;) {
    len += r;
    if (len == cap) buf = realloc(buf, (cap *= 2) + 1);
  }
  fclose(f);
  if (buf) buf[len] = 0;
  *n = len;
  return buf;
}

/* one fresh-context run: parse, schedule; returns 0 or the error code */
static int run_once(const char *path, const char *text, size_t n, const char *dir, bool read_only, double *tr, double *ts,
                    double *tk, size_t *peak, int *uops, int *kernels) {
  UCtx *c = uop_ctx_new();
  TgTry t;
  int rc = 0;
  if (TG_TRY(t)) {
    double t0 = tg_now_ms();
    Graph *g = graph_read_mem(path, text, n, dir);
    double t1 = tg_now_ms();
    Schedule *s = read_only ? NULL : create_schedule(g->sink);
    double t2 = tg_now_ms();
    tg_try_end(&t);
    *tr = t1 - t0, *ts = read_only ? 0 : t2 - t1, *tk = s ? s->kernelize_ms : 0;
    *uops = g->nrows, *kernels = s ? s->nkernels : 0;
  } else {
    fprintf(stderr, "bench: %s\n", tg_last_error.msg);
    rc = tg_last_error.code ? tg_last_error.code : 70;
  }
  *peak = memuse_peak(&c->mem); /* arenas, pass arenas, heap tables and walk stack, summed at each moment */
  uop_ctx_free(c);
  return rc;
}

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: bench GRAPH [N [read]]\n");
    return 2;
  }
  /* freed memory stays in this process for the next run (as a Python process keeps its heap for
   * tinygrad's): without this, glibc's dynamic mmap threshold decides run by run whether a context's
   * memory goes back to the kernel and is faulted in again, and the medians flip by up to 45% on a
   * change of a few bytes in a struct */
  mallopt(M_MMAP_THRESHOLD, 1 << 30);
  mallopt(M_TRIM_THRESHOLD, 1 << 30);
  int reps = argc > 2 ? atoi(argv[2]) : 20;
  bool read_only = argc > 3 && strcmp(argv[3], "read") == 0;
  if (reps < 1) reps = 1;
  size_t n;
  char *text = slurp(argv[1], &n);
  if (!text) {
    perror(argv[1]);
    return 3;
  }
  char *dir = strdup(argv[1]), *slash = strrchr(dir, '/');
  if (slash) *slash = 0;
  else strcpy(dir, ".");
  double *tr = calloc((size_t)reps, sizeof *tr), *ts = calloc((size_t)reps, sizeof *ts), *tk = calloc((size_t)reps, sizeof *tk);
  size_t peak = 0;
  int uops = 0, kernels = 0;
  /* untimed warm-up runs, for BENCH_WARMUP_MS (default 200) and at least one run. A fresh process's
   * first run is about 3x slower, and the next ones speed up over some 15 ms of runs (the CPU's clock
   * rising, caches and branch predictors filling) before they level off: a median of 20 runs of a
   * 0.3 ms schedule came out 10-15% above the level. tinygrad's side has an untimed run too
   * (tools/tgc_graph.py bench), and its runs are 20-150 ms each: both sides are timed level. */
  const char *wenv = getenv("BENCH_WARMUP_MS");
  double warm_ms = wenv ? atof(wenv) : 200, w0 = tg_now_ms();
  for (int w = 0; warm_ms > 0 && (w < 1 || tg_now_ms() - w0 < warm_ms); w++) {
    double a, b, k;
    size_t p;
    int rc = run_once(argv[1], text, n, dir, read_only, &a, &b, &k, &p, &uops, &kernels);
    if (rc) return rc;
  }
  for (int i = 0; i < reps; i++) {
    size_t p;
    int rc = run_once(argv[1], text, n, dir, read_only, &tr[i], &ts[i], &tk[i], &p, &uops, &kernels);
    if (rc) return rc;
    if (p > peak) peak = p;
  }
  printf("%d %.3f %.3f %zu %d %.3f\n", uops, tg_median(tr, reps), tg_median(ts, reps), peak, kernels, tg_median(tk, reps));
  free(tr), free(ts), free(tk), free(text), free(dir);
  return 0;
}
