/* beam.c: BEAM search over a kernel's opts on the CPU, tinygrad 0.11.0's beam_search
 * (codegen/opt/search.py) with tgc's opts.
 *
 * The beam starts as the kernel without opts. Each step extends every kernel in the beam by every
 * action (UPCAST of axis 0..7 by 0,2,3,4,5,7, UNROLL of axis 0..4 by 0,4,7 and PADTO of axis 0..6
 * to 32: tinygrad's list without the local-memory, tensor-core and SWAP actions a CPU target
 * refuses or tgc does not port), drops the lists that do not apply (KernelOptError) or upcast
 * more than 256 values (BEAM_UPCAST_MAX), lowers and renders the rest, skips sources already timed, compiles each one
 * (rt_compile: the same compiler, flags and threads as the run) and times it on scratch buffers:
 * three runs, the fastest counts, stopping early at three times the beam's best. The `amt`
 * fastest become the next beam; the search ends when a step improves nothing.
 *
 * The result is cached in the runtime's cache directory (beam/HASH holding the opt list) under a
 * hash of the kernel's source without opts, amt, the thread count and the compiler, so a second
 * search of the same kernel on this machine is a file read. */
#include "runtime.h"
#include "../render/render.h"
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

enum { BEAM_UPCAST_MAX = 256 };
static const int up_amts[] = {0, 2, 3, 4, 5, 7}, unroll_amts[] = {0, 4, 7};

typedef struct Cand { KOptCfg cfg; double ms; } Cand;

static int build_actions(KOpt *out) {
  int n = 0;
  for (size_t a = 0; a < sizeof up_amts / sizeof *up_amts; a++)
    for (int ax = 0; ax < 8; ax++) out[n++] = (KOpt){KOPT_UPCAST, ax, up_amts[a]};
  for (size_t a = 0; a < sizeof unroll_amts / sizeof *unroll_amts; a++)
    for (int ax = 0; ax < 5; ax++) out[n++] = (KOpt){KOPT_UNROLL, ax, unroll_amts[a]};
  for (int ax = 0; ax < 7; ax++) out[n++] = (KOpt){KOPT_PADTO, ax, 32};   /* BEAM_PADTO=1, tinygrad's default */
  return n;
}

/* scratch buffers for the kernel's globals, every page written before timing (a calloc'd buffer
 * reads the one shared zero page: a memory-bound kernel would time as if it ran in cache); the
 * bytes 0x3c make float 0.0115 and small doubles, and kernels never index by loaded values */
typedef struct Scratch { int n; void **bufs; long long *vars; } Scratch;
static void scratch_free(Scratch *s) {
  for (int i = 0; i < s->n; i++) free(s->bufs[i]);
  s->n = 0;
}
static Scratch scratch_for(Arena *a, const Program *p) {
  Scratch s = {0, arena_alloc(a, sizeof(void *) * (size_t)(p->nglobals + 1)), arena_alloc(a, sizeof(long long) * (size_t)(p->nvars + 1))};
  for (int i = 0; i < p->nglobals; i++) {
    const DType *d = p->globals[i].u->dtype;
    size_t nb = (size_t)(d->size > 0 ? d->size : 1) * (size_t)dt_base(d)->itemsize;   /* rt_beam checked size >= 0 */
    s.bufs[i] = malloc(nb + 64);
    if (!s.bufs[i]) { scratch_free(&s); tg_fail(TG_EDEVICE, "beam: out of host memory allocating %zu bytes", nb); }
    memset(s.bufs[i], 0x3c, nb + 64);
    s.n = i + 1;
  }
  /* a variable's value: the middle of its range, as tinygrad's beam */
  for (int i = 0; i < p->nvars; i++) {
    const Value *v = p->vars[i]->arg;
    s.vars[i] = v->n >= 3 ? (v->items[1]->i + v->items[2]->i) / 2 : 1;
  }
  return s;
}

/* the fastest of 3 runs in ms, stopping once a run is slower than early (0: no early stop) */
static double time_kernel(RtKernel *k, Scratch *s, double early) {
  double best = 1e300;
  for (int r = 0; r < 3; r++) {
    double t0 = tg_now_ms();
    k->entry(s->bufs, s->vars);
    double t = tg_now_ms() - t0;
    if (t < best) best = t;
    if (early > 0 && best > early) break;
  }
  return best;
}

/* lower and render one candidate: its Program, or NULL when its opts do not apply, it upcasts too
 * much, or its source was timed already */
static const Program *try_candidate(Runtime *rt, UOp *ast, const KOptCfg *cfg, Map *seen) {
  const Program *volatile r = NULL;
  TgTry t;
  if (TG_TRY(t)) {
    Program *p = lower_kernel_with(ast, NULL, cfg);
    if (p->nopts == cfg->n && p->upcast <= BEAM_UPCAST_MAX) {
      char *src = render_function(rt->a, p, &render_c);
      const Value *key = v_str(src);
      bool isnew;
      map_slot(seen, (void *)key, key->hash, &isnew);
      if (isnew) r = p;
    }
    tg_try_end(&t);
  } else if (tg_last_error.code != TG_EINPUT) {
    tg_fail(tg_last_error.code, "%s", tg_last_error.msg);   /* a bug, not a refused opt */
  }
  return r;
}

static int cmp_cand(const void *x, const void *y) {
  double a = ((const Cand *)x)->ms, b = ((const Cand *)y)->ms;
  return a < b ? -1 : a > b;
}

/* the cache file for ast's search (its source without opts, amt, threads, compiler) */
static const char *cache_path(Runtime *rt, UOp *ast, int amt) {
  static const KOptCfg noopt = {KOPT_NONE, 0, {{0}}, 0};
  Program *p = lower_kernel_with(ast, NULL, &noopt);
  char *src = render_function(rt->a, p, &render_c);
  char *key = arena_printf(rt->a, "tgc beam v2\n%s\namt %d threads %d%s cc %s\n", src, amt, rt->threads, rt->fast_sums ? "" : " exact", rt->cc);
  uint64_t h = hash_bytes(key, strlen(key), 0x6265616d);
  return arena_printf(rt->a, "%s/beam/%016llx", rt->cache_dir, (unsigned long long)h);
}

static bool cache_read(const char *path, KOptCfg *out) {
  FILE *f = fopen(path, "r");
  if (!f) return false;
  char line[1024] = "";
  bool ok = fgets(line, sizeof line, f) != NULL;
  fclose(f);
  line[strcspn(line, "\n")] = 0;
  char why[128];
  if (!ok) return false;
  if (!strcmp(line, "-")) { *out = (KOptCfg){KOPT_LIST, 0, {{0}}, 0}; return true; }
  return kopt_parse(line, out, why, sizeof why);
}
static void cache_write(Runtime *rt, const char *path, const KOptCfg *cfg) {
  char *dir = arena_printf(rt->a, "%s/beam", rt->cache_dir);
  mkdir(rt->cache_dir, 0755);
  mkdir(dir, 0755);
  char *tmp = arena_printf(rt->a, "%s.%d", path, (int)getpid());
  FILE *f = fopen(tmp, "w");
  if (!f) return;   /* a cache that can't be written is only slower next time */
  const char *s = kopt_format(rt->a, cfg->n, cfg->v);
  bool ok = fprintf(f, "%s\n", *s ? s : "-") > 0;
  if (fclose(f) != 0 || !ok || rename(tmp, path) != 0) unlink(tmp);
}

KOptCfg rt_beam(Runtime *rt, UOp *ast, int amt) {
  static const KOptCfg heuristic = {KOPT_HEURISTIC, 0, {{0}}, 0};
  Program *p0 = lower_kernel(ast, NULL);
  for (int i = 0; i < p0->nglobals; i++)
    if (p0->globals[i].u->dtype->size < 0) return heuristic;   /* no size to allocate a scratch buffer by */
  const char *cpath = cache_path(rt, ast, amt);
  KOptCfg best;
  if (cache_read(cpath, &best)) { rt->nbeam_cached++; return best; }
  double t0 = tg_now_ms();
  KOpt actions[80];
  int nact = build_actions(actions);
  Map seen;
  map_init(&seen, rt->a);
  Cand *beam = arena_alloc(rt->a, sizeof(Cand) * (size_t)amt);
  int nbeam = 1, ntimed = 0;
  beam[0] = (Cand){{KOPT_LIST, 0, {{0}}, 0}, 1e300};
  Scratch s = {0, NULL, NULL};
  for (;;) {
    /* this step's candidates, compiled side by side, then timed one by one */
    int cap = nbeam * nact, nc = 0, np = 0;
    Cand *c = arena_alloc(rt->a, sizeof(Cand) * (size_t)(cap + 1));
    const Program **ps = arena_alloc(rt->a, sizeof(Program *) * (size_t)(cap + 1));
    KOptCfg *cfgs = arena_alloc(rt->a, sizeof(KOptCfg) * (size_t)(cap + 1));
    for (int b = 0; b < nbeam; b++) {
      if (beam[b].cfg.n >= KOPT_MAX) continue;
      for (int a = 0; a < nact; a++) {
        KOptCfg cfg = beam[b].cfg;
        cfg.v[cfg.n++] = actions[a];
        const Program *p = try_candidate(rt, ast, &cfg, &seen);
        if (p) ps[np] = p, cfgs[np++] = cfg;
      }
    }
    RtKernel **ks = arena_alloc(rt->a, sizeof(RtKernel *) * (size_t)(np + 1));
    rt_compile_many(rt, np, ps, ks);
    for (int i = 0; i < np; i++) {
      if (!ks[i]) continue;   /* did not build */
      if (!s.bufs) s = scratch_for(rt->a, ks[i]->prg);
      double early = beam[0].ms < 1e300 ? beam[0].ms * 3 : 0;
      c[nc++] = (Cand){cfgs[i], time_kernel(ks[i], &s, early)};
    }
    ntimed += nc;
    qsort(c, (size_t)nc, sizeof *c, cmp_cand);
    /* exiting: nothing new, or no progress over the beam's best */
    bool exiting = nc == 0 || beam[0].ms - c[0].ms <= 1e-5;
    if (!exiting) {
      nbeam = nc < amt ? nc : amt;
      memcpy(beam, c, sizeof(Cand) * (size_t)nbeam);
    } else {
      if (nc && c[0].ms < beam[0].ms) beam[0] = c[0];
      break;
    }
  }
  scratch_free(&s);
  best = beam[0].cfg;
  if (rt->log) {
    const char *o = kopt_format(rt->a, best.n, best.v);
    fprintf(rt->log, "beam %d: %s: %s (%.3f ms), %d candidates timed in %.1f s\n", amt, lower_kernel_name(ast), *o ? o : "no opts",
            beam[0].ms, ntimed, (tg_now_ms() - t0) / 1000);
  }
  rt->nbeam_searched++;
  cache_write(rt, cpath, &best);
  return best;
}
