/* Robustness suite: hostile input never crashes. Replays every libFuzzer regression input in
 * testdata/fuzz through the reader, the scheduler and codegen (every kernel lowered and rendered
 * as C, OpenCL and CUDA, as tests/fuzz/fuzz_codegen.c does; success or TG_EINPUT, nothing else), checks each semantic bad graph in
 * testdata/semantic (NAME.err: TG_EINPUT whose message names the row and holds the fragment;
 * NAME.ok: schedules to that many kernels, as tinygrad 0.11.0 does), schedules generated deep
 * and wide graphs (explicit stacks, no recursion on graph depth), and fails each of the first
 * arena chunk allocations in turn (TGC_FAIL_ALLOC) on the schedule path: each must end in a
 * recorded error and a freed context (ASan/LSan builds report any leak). Paths are relative to
 * the repo root (make runs the suites there); TGC_TESTDATA overrides "testdata". */
#include <criterion/criterion.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "io/graph.h"
#include "schedule/schedule.h"
#include "codegen_all.h"

static const char *testdata(void) {
  const char *t = getenv("TGC_TESTDATA");
  return t && *t ? t : "testdata";
}

/* reads and schedules path in a fresh context (and with codegen, lowers and renders every kernel);
 * returns the error code (TG_OK on success) and the message in msg, the kernel count in *nk */
static int run_file(const char *path, char *msg, size_t msz, int *nk, bool codegen) {
  UCtx *c = uop_ctx_new();
  TgTry t;
  int code = TG_OK;
  msg[0] = 0;
  if (TG_TRY(t)) {
    Graph *g = graph_read_file(path);
    uctx->opt = g->opt;
    Schedule *s = create_schedule(g->sink);
    if (nk) *nk = s->nkernels;
    if (codegen) codegen_all(s, s->nitems);
    tg_try_end(&t);
  } else {
    code = tg_last_error.code;
    snprintf(msg, msz, "%s", tg_last_error.msg);
  }
  uop_ctx_free(c);
  return code;
}

static int list_dir(const char *dir, const char *suffix, char names[][256], int max) {
  DIR *d = opendir(dir);
  cr_assert(d, "cannot open %s", dir);
  int n = 0;
  size_t sl = strlen(suffix);
  for (struct dirent *e; (e = readdir(d));) {
    size_t l = strlen(e->d_name);
    if (e->d_name[0] == '.' || e->d_type == DT_DIR || l < sl || strcmp(e->d_name + l - sl, suffix) || l >= 256 || n >= max) continue;
    snprintf(names[n++], 256, "%s", e->d_name);
  }
  closedir(d);
  return n;
}

static char names[512][256];

Test(robust, fuzz_regressions) {
  char dir[512], path[1024], msg[1024];
  snprintf(dir, sizeof dir, "%s/fuzz", testdata());
  int n = list_dir(dir, "", names, 512);
  cr_assert_gt(n, 0, "no regression inputs in %s", dir);
  for (int i = 0; i < n; i++) {
    snprintf(path, sizeof path, "%s/%s", dir, names[i]);
    int code = run_file(path, msg, sizeof msg, NULL, true);
    cr_expect(code == TG_OK || code == TG_EINPUT, "%s: error class %d: %s", names[i], code, msg);
  }
}

Test(robust, semantic_bad_input) {
  char dir[512], path[1024], want[1024], msg[1024];
  snprintf(dir, sizeof dir, "%s/semantic", testdata());
  int n = list_dir(dir, ".graph.json", names, 512);
  cr_assert_geq(n, 10, "only %d graphs in %s", n, dir);
  for (int i = 0; i < n; i++) {
    size_t bl = strlen(names[i]) - strlen(".graph.json");
    bool ok = false;
    snprintf(path, sizeof path, "%s/%.*s.err", dir, (int)bl, names[i]);
    FILE *f = fopen(path, "r");
    if (!f) {
      snprintf(path, sizeof path, "%s/%.*s.ok", dir, (int)bl, names[i]);
      f = fopen(path, "r");
      ok = true;
    }
    cr_assert(f, "%s has neither .err nor .ok", names[i]);
    cr_assert(fgets(want, sizeof want, f), "%s empty", path);
    fclose(f);
    want[strcspn(want, "\n")] = 0;
    snprintf(path, sizeof path, "%s/%s", dir, names[i]);
    int nk = -1, code = run_file(path, msg, sizeof msg, &nk, false);
    if (ok) {
      cr_expect_eq(code, TG_OK, "%s: %s", names[i], msg);
      cr_expect_eq(nk, atoi(want), "%s: %d kernels, tinygrad makes %s", names[i], nk, want);
    } else {
      cr_expect_eq(code, TG_EINPUT, "%s: code %d: %s", names[i], code, msg);
      cr_expect(strstr(msg, want) != NULL, "%s: message '%s' lacks '%s'", names[i], msg, want);
    }
  }
}

/* graph text: a chain of n alternating ADD/MUL of a 16-float buffer with itself (kind 0), or a
 * fan-out: n SHRINKs of one n-element buffer summed by a balanced ADD tree (kind 1) */
static char *gen_graph(int n, int kind, size_t *len) {
  size_t cap = (size_t)n * 160 + 4096, o = 0;
  char *s = malloc(cap);
  cr_assert(s);
  o += (size_t)sprintf(s + o, "{\"format\":\"tgc.graph\",\"version\":1,\"uops\":[{\"id\":0,\"op\":\"UNIQUE\",\"dtype\":\"void\",\"arg\":0},"
                            "{\"id\":1,\"op\":\"DEVICE\",\"dtype\":\"void\",\"arg\":\"CPU\"},"
                            "{\"id\":2,\"op\":\"BUFFER\",\"dtype\":\"float\",\"src\":[0,1],\"arg\":%d}", kind ? n : 16);
  int id = 3, prev = 2;
  if (kind == 0) {
    for (int i = 0; i < n; i++, id++) {
      o += (size_t)sprintf(s + o, ",{\"id\":%d,\"op\":\"%s\",\"dtype\":\"float\",\"src\":[%d,2]}", id, i % 2 ? "MUL" : "ADD", prev);
      prev = id;
    }
  } else {
    int *lv = malloc(sizeof(int) * (size_t)n), m = n;
    for (int i = 0; i < n; i++, id++) {
      o += (size_t)sprintf(s + o, ",{\"id\":%d,\"op\":\"SHRINK\",\"dtype\":\"float\",\"src\":[2],\"arg\":[[%d,%d]]}", id, i, i + 1);
      lv[i] = id;
    }
    while (m > 1) {
      int k = 0;
      for (int j = 0; j + 1 < m; j += 2, id++) {
        o += (size_t)sprintf(s + o, ",{\"id\":%d,\"op\":\"ADD\",\"dtype\":\"float\",\"src\":[%d,%d]}", id, lv[j], lv[j + 1]);
        lv[k++] = id;
      }
      if (m % 2) lv[k++] = lv[m - 1];
      m = k;
    }
    prev = lv[0];
    free(lv);
  }
  o += (size_t)sprintf(s + o, ",{\"id\":%d,\"op\":\"SINK\",\"dtype\":\"void\",\"src\":[%d]}],\"sink\":%d}\n", id, prev, id);
  *len = o;
  return s;
}
static int sched_text(const char *text, size_t n, char *msg, size_t msz, int *nk, int *nrows) {
  UCtx *c = uop_ctx_new();
  TgTry t;
  int code = TG_OK;
  if (TG_TRY(t)) {
    Graph *g = graph_read_mem("gen.json", text, n, ".");
    *nrows = g->nrows;
    *nk = create_schedule(g->sink)->nkernels;
    tg_try_end(&t);
  } else {
    code = tg_last_error.code;
    snprintf(msg, msz, "%s", tg_last_error.msg);
  }
  uop_ctx_free(c);
  return code;
}

/* a 99,000-deep chain schedules into one kernel; at 100,000 tinygrad's own rewrite stack limit
 * (len(stack) >= 200000 in unified_rewrite) refuses it, and so does tgc, cleanly.
 *   tinygrad: tools/tgc_graph.py oracle on the 100,000 chain ->
 *   RuntimeError: infinite loop in graph_rewrite (stack too big) */
Test(robust, deep_chain, .timeout = 120) {
  char msg[1024] = "";
  int nk = -1, nrows = 0;
  size_t n;
  char *text = gen_graph(99000, 0, &n);
  cr_expect_eq(sched_text(text, n, msg, sizeof msg, &nk, &nrows), TG_OK, "%s", msg);
  cr_expect_eq(nrows, 99004);
  cr_expect_eq(nk, 1);
  free(text);
  text = gen_graph(100000, 0, &n);
  cr_expect_eq(sched_text(text, n, msg, sizeof msg, &nk, &nrows), TG_EINPUT);
  cr_expect(strstr(msg, "infinite loop in graph_rewrite (stack too big)"), "%s", msg);
  free(text);
}

/* 20,000 SHRINKs of one buffer under an ADD tree: one kernel (tinygrad at 1,000 leaves: 1 kernel) */
Test(robust, wide_fanout, .timeout = 120) {
  char msg[1024] = "";
  int nk = -1, nrows = 0;
  size_t n;
  char *text = gen_graph(20000, 1, &n);
  cr_expect_eq(sched_text(text, n, msg, sizeof msg, &nk, &nrows), TG_OK, "%s", msg);
  cr_expect_eq(nrows, 3 + 20000 + 19999 + 1);
  cr_expect_eq(nk, 1);
  free(text);
}

/* fail the k-th arena chunk allocation for every k until a run gets through: each failing run
 * ends in the injected out-of-memory error (never a crash), and its context is freed */
Test(robust, fail_each_allocation, .timeout = 300) {
  char path[1024], msg[1024];
  snprintf(path, sizeof path, "%s/example.graph.json", testdata());
  int k = 0, passed = 0;
  for (; k < 400 && !passed; k++) {
    char num[32];
    snprintf(num, sizeof num, "%d", k);
    setenv("TGC_FAIL_ALLOC", num, 1);
    util_fault_init();
    int code = run_file(path, msg, sizeof msg, NULL, false);
    if (code == TG_OK) passed = 1;
    else cr_expect(code == TG_EINTERNAL && strstr(msg, "out of memory"), "alloc %d: code %d: %s", k, code, msg);
  }
  unsetenv("TGC_FAIL_ALLOC");
  util_fault_init();
  cr_expect(passed, "still failing after %d injected failures", k);
  cr_expect_gt(k, 3, "the schedule path made only %d chunk allocations", k);
}
