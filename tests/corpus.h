/* corpus.h: helpers the Criterion suites share for walking the oracle corpus ($TGC_ORACLE, default
 * ../shared/oracle) and running its numeric cases. Header-only (static inline), so every test binary
 * the Makefile builds from one tests/test_*.c gets them without a link change; include it after
 * <criterion/criterion.h> (the helpers assert with cr_assert).
 *   corpus_case_begin/end  a fresh UCtx per case over the test's outer one
 *   corpus_oracle          the corpus root
 *   corpus_tmpdir          one mkdtemp directory per test process (template "/tmp/tgc_NAME_XXXXXX")
 *   corpus_tmp_track       a temporary directory for corpus_tmp_fini to remove
 *   corpus_tmp_fini        removes them: a suite's .fini (TestSuite(NAME, .fini = corpus_tmp_fini))
 *   corpus_symbolic_dir    tests/aot/symbolic (symbolic-shape numeric cases recorded from tinygrad)
 *   corpus_list            sorted NAME of every NAME.graph.json under a directory
 *   corpus_run_numeric     schedule + run one numeric case on a device and compare it with its
 *                          expect outputs (driver_compare), checking the comparison can fail
 *   corpus_write_bytes     write a byte buffer to a file
 *   HSet, hset_add         a set of 64-bit content hashes (deduplicating emitted files)
 *   Batch, batch_add       emitted kernels concatenated into one translation unit, with the line
 *                          each one starts on (to name the kernel a diagnostic points into) */
#ifndef TGC_TESTS_CORPUS_H
#define TGC_TESTS_CORPUS_H
#include <dirent.h>
#include <ftw.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "driver/driver.h"

static UCtx *corpus_outer_ctx;
/* a new context for one case; corpus_case_end frees it and returns to the test's context */
static inline UCtx *corpus_case_begin(void) { corpus_outer_ctx = uctx; return uop_ctx_new(); }
static inline void corpus_case_end(UCtx *c) { uop_ctx_free(c); uctx = corpus_outer_ctx; }

/* $TGC_ORACLE or ../shared/oracle */
static inline const char *corpus_oracle(void) {
  const char *o = getenv("TGC_ORACLE");
  return o && *o ? o : "../shared/oracle";
}

/* the temporary directories this test process made; every test runs in a process of its own, which
 * need not exit through atexit, so a suite's .fini removes them after each test */
static const char *corpus_tmp_dirs[8];
static int corpus_tmp_n;
static inline const char *corpus_tmp_track(const char *dir) {
  if (corpus_tmp_n < 8) corpus_tmp_dirs[corpus_tmp_n++] = dir;
  return dir;
}
static inline int corpus_rm_one(const char *path, const struct stat *sb, int flag, struct FTW *ftw) { return remove(path); }
static inline void corpus_tmp_fini(void) {
  for (int i = 0; i < corpus_tmp_n; i++) nftw(corpus_tmp_dirs[i], corpus_rm_one, 16, FTW_DEPTH | FTW_PHYS);
  corpus_tmp_n = 0;
}
/* a temporary directory made once from tmpl (a writable "/tmp/..._XXXXXX" array), removed by
 * corpus_tmp_fini */
static inline const char *corpus_tmpdir(char *tmpl) {
  static bool made;
  if (!made) { cr_assert(mkdtemp(tmpl) != NULL, "mkdtemp %s", tmpl); made = true; corpus_tmp_track(tmpl); }
  return tmpl;
}

/* the repository root: the directory above this header's tests/ */
static inline const char *corpus_src_root(void) {
  const char *f = __FILE__, *s = strstr(f, "tests/corpus.h");
  char cwd[4096];
  const char *here = getcwd(cwd, sizeof cwd) ? cwd : ".";
  if (s && s > f) return f[0] == '/' ? arena_printf(ga(), "%.*s", (int)(s - f - 1), f) : arena_printf(ga(), "%s/%.*s", here, (int)(s - f - 1), f);
  return arena_strdup(ga(), here);
}
static inline const char *corpus_symbolic_dir(void) { return arena_printf(ga(), "%s/tests/aot/symbolic", corpus_src_root()); }

/* sorted case names (NAME of NAME.graph.json) under dir; returns how many */
static inline int corpus_list_dir(const char *dirp, char ***out) {
  DIR *d = opendir(dirp);
  cr_assert(d != NULL, "no corpus at %s", dirp);
  int n = 0, cap = 64;
  char **v = arena_alloc(ga(), sizeof *v * (size_t)cap);
  struct dirent *e;
  while ((e = readdir(d))) {
    size_t l = strlen(e->d_name);
    if (l < 12 || strcmp(e->d_name + l - 11, ".graph.json")) continue;
    if (n == cap) {
      char **nv = arena_alloc(ga(), sizeof *nv * (size_t)cap * 2);
      memcpy(nv, v, sizeof *v * (size_t)n);
      v = nv;
      cap *= 2;
    }
    v[n++] = arena_printf(ga(), "%.*s", (int)(l - 11), e->d_name);
  }
  closedir(d);
  for (int i = 1; i < n; i++) for (int j = i; j > 0 && strcmp(v[j - 1], v[j]) > 0; j--) { char *t = v[j]; v[j] = v[j - 1]; v[j - 1] = t; }
  *out = v;
  return n;
}
/* the same under corpus_oracle()/sub ("schedule", "numeric") */
static inline int corpus_list(const char *sub, char ***out) { return corpus_list_dir(arena_printf(ga(), "%s/%s", corpus_oracle(), sub), out); }

/* run graph file gp on dev ("cpu", "opencl", "cuda") and compare with expect file xp's outputs (bits:
 * byte for byte); when they match, a perturbed float output must not (the comparison can fail).
 * 1 match, 0 not (why says what differs or the error) */
static inline int corpus_run_files(const char *gp, const char *xp, const char *dev, bool bits, char *why, size_t wn) {
  UCtx *c = corpus_case_begin();
  volatile int ok = 0;
  TgTry t;
  if (TG_TRY(t)) {
    Graph *g = graph_read_file(gp);
    Expect *x = expect_read_file(xp);
    Schedule *s = driver_schedule(g);
    driver_check_inputs(g, s);
    DriverRun *r = driver_run_device(g, s, dev);
    ok = driver_compare(r, x, why, wn);
    if (ok && bits && !driver_same_bits(r, x)) { ok = 0; snprintf(why, wn, "close to the expected values, not their bits"); }
    if (ok && r->noutputs && r->outs[0].dtype->scalar == SC_FLOAT && r->outs[0].nbytes >= 4) {
      ((float *)r->outs[0].data)[0] = ((float *)r->outs[0].data)[0] * 2.0f + 1.0f;
      char w2[256];
      if (driver_compare(r, x, w2, sizeof w2)) { ok = 0; snprintf(why, wn, "a perturbed output still matched"); }
    }
    tg_try_end(&t);
  } else snprintf(why, wn, "error %d: %.900s", tg_last_error.code, tg_last_error.msg);
  corpus_case_end(c);
  return ok;
}
/* the same for dir/name.graph.json against dir/name.expect.json (values within tolerance) */
static inline int corpus_run_numeric_in(const char *dirp, const char *name, const char *dev, char *why, size_t wn) {
  return corpus_run_files(arena_printf(ga(), "%s/%s.graph.json", dirp, name), arena_printf(ga(), "%s/%s.expect.json", dirp, name), dev, false,
                          why, wn);
}
/* the same for a case of corpus_oracle()/numeric */
static inline int corpus_run_numeric(const char *name, const char *dev, char *why, size_t wn) {
  return corpus_run_numeric_in(arena_printf(ga(), "%s/numeric", corpus_oracle()), name, dev, why, wn);
}

/* write n bytes to path; false on failure */
static inline bool corpus_write_bytes(const char *path, const void *p, size_t n) {
  FILE *f = fopen(path, "wb");
  if (!f) return false;
  bool ok = fwrite(p, 1, n, f) == n;
  return fclose(f) == 0 && ok;
}

/* a set of 64-bit content hashes (open addressing; 0 is never stored) */
typedef struct HSet { uint64_t *v; size_t cap, n; } HSet;
static inline bool hset_add(HSet *h, uint64_t x) {
  if (!x) x = 1;
  if ((h->n + 1) * 2 > h->cap) {
    HSet nh = {calloc(h->cap ? h->cap * 2 : 4096, sizeof(uint64_t)), h->cap ? h->cap * 2 : 4096, 0};
    for (size_t i = 0; i < h->cap; i++) if (h->v[i]) hset_add(&nh, h->v[i]);
    free(h->v);
    *h = nh;
  }
  size_t i = (size_t)(x % h->cap);
  while (h->v[i]) { if (h->v[i] == x) return false; i = (i + 1) % h->cap; }
  h->v[i] = x;
  h->n++;
  return true;
}
typedef struct Batch { char *text; size_t n, cap; int nk, lines; int nmark; int mline[512]; char mname[512][96]; } Batch;
static inline void batch_add(Batch *b, const char *src, const char *name) {
  size_t l = strlen(src);
  if (b->n + l + 1 > b->cap) { b->cap = (b->n + l + 1) * 2; b->text = realloc(b->text, b->cap); }
  memcpy(b->text + b->n, src, l + 1);
  b->n += l;
  if (b->nmark < 512) { b->mline[b->nmark] = b->lines + 1; snprintf(b->mname[b->nmark++], 96, "%.95s", name); }
  for (size_t i = 0; i < l; i++) b->lines += src[i] == '\n';
  b->nk++;
}
/* the name given with the kernel that holds line (1-based) of the batch text */
static inline const char *batch_name_at(const Batch *b, int line) {
  int k = 0;
  while (k + 1 < b->nmark && b->mline[k + 1] <= line) k++;
  return b->nmark ? b->mname[k] : "?";
}
static inline void batch_reset(Batch *b) {
  b->n = 0;
  b->nk = b->lines = b->nmark = 0;
  if (b->text) b->text[0] = 0;
}
#endif
