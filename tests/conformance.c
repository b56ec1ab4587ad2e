/* conformance: the scoreboard of tgc's scheduler against the tinygrad 0.11.0 oracle corpus.
 *
 * For every NAME.graph.json under the folders given, reads the graph, runs create_schedule, reads
 * NAME.expect.json into the same context (so equal ASTs are the same interned pointer, tags
 * included) and scores three things: the compiled-kernel count, the item ASTs as a multiset, and
 * the item sequence. Each case runs in a forked child with a time limit, so a crash or a hang
 * in one case is reported as that case's failure and the run goes on.
 *
 *   conformance [-v] [--count-bar F] [--ast-bar F] [--order-bar F] [--bufs-bar F] [--meta-bar F]
 *               [--timeout S] [--only SUBSTR] [--show NAME] [--fast-sums] DIR...
 * Two more columns check each KERNEL's buffers (DEFINE_GLOBAL order, size, dtype, device, input
 * UNIQUE or first-appearance order of new buffers) and metadata against the expect file;
 * with --numeric cpu, cases whose expect file has `outputs` also run on the CPU runtime (lib/driver,
 * what `tgc run --expect` does) and score the numeric column (--fast-sums: as `tgc run --fast-sums`);
 * the bits column counts the cases whose outputs are tinygrad's byte for byte (--bits-bar: on the
 * CPU only where its kernels are compiled by clang on a CPU with FMA, as tinygrad's recorded values
 * were: clang contracts a*b+c into FMAs within an expression, gcc (TGC_CC=cc, the ASan pass) across
 * them). --show NAME prints the ASTs of matching cases.
 * Exits 1 when a rate over all folders is below its bar, 2 on bad usage. */
#include "driver/driver.h"
#include "runtime/runtime.h"
#include "io/graph.h"
#include "schedule/schedule.h"
#include <cjson/cJSON.h>
#include <dirent.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

typedef struct Result {
  int count_ok, ast_ok, order_ok, error, bufs_ok, meta_ok, has_numeric, numeric_ok, bits_ok;
  int got, want;
  char reason[1200];
} Result;

static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }
static int cmp_ptr_id(const void *a, const void *b) {
  const UOp *x = *(UOp *const *)a, *y = *(UOp *const *)b;
  return x->id < y->id ? -1 : x->id > y->id;
}

static bool show_mode, numeric_cpu;
static const char *numeric_dev = "cpu";

/* ---- buffers and metadata of each KERNEL item against the expect file's "bufs"/"metadata" ----
 * New buffers' UNIQUE numbers are tinygrad's process counter, so both sides number them by first
 * appearance in the schedule; input buffers compare by their UNIQUE. */
typedef struct BufCanon { Map seen; int next; } BufCanon;
static int canon_new(BufCanon *c, void *key, uint64_t h) {
  bool isnew;
  void **slot = map_slot(&c->seen, key, h, &isnew);
  if (isnew) *slot = (void *)(intptr_t)(++c->next);
  return (int)(intptr_t)*slot;
}
static char *dev_str(const Value *d) { return d ? (char *)value_repr(ga(), d) : "None"; }
static char *json_dev_str(const cJSON *d) {
  if (cJSON_IsString(d)) return arena_printf(ga(), "'%s'", d->valuestring);
  char *s = "(";
  int n = cJSON_GetArraySize(d), i = 0;
  for (const cJSON *e = d->child; e; e = e->next, i++) s = arena_printf(ga(), "%s'%s'%s", s, e->valuestring, n == 1 ? "," : i + 1 < n ? ", " : "");
  return arena_printf(ga(), "%s)", s);
}
static bool check_bufs_meta(Schedule *S, Graph *g, const char *expect, Result *r) {
  size_t len;
  char *text = read_file(ga(), expect, &len);
  cJSON *doc = text ? cJSON_ParseWithLength(text, len) : NULL;
  if (!doc) return false;
  const cJSON *sch = cJSON_GetObjectItemCaseSensitive(doc, "schedule");
  UMap inputs;
  umap_init(&inputs, ga());
  for (int i = 0; i < g->nrows; i++) if (g->rows[i]->op == OP_BUFFER) umap_put(&inputs, g->rows[i], NULL);
  BufCanon cg = {0}, cw = {0};
  map_init(&cg.seen, ga());
  map_init(&cw.seen, ga());
  r->bufs_ok = r->meta_ok = 1;
  const cJSON *it = sch ? sch->child : NULL;
  for (int i = 0; i < S->nitems; i++) {
    SchedItem *si = &S->items[i];
    if (si->shard > 0) continue;
    if (!it) { r->bufs_ok = r->meta_ok = 0; break; }
    UOp *k = si->kernel;
    const cJSON *bufs = cJSON_GetObjectItemCaseSensitive(it, "bufs"), *md = cJSON_GetObjectItemCaseSensitive(it, "metadata");
    const cJSON *b = bufs ? bufs->child : NULL;
    for (int j = 0; j < k->nsrc; j++, b = b ? b->next : NULL) {
      UOp *s = k->src[j];
      char *got, *want = "(missing)";
      if (s->op == OP_BIND || s->op == OP_MSELECT || s->op == OP_MSTACK) got = arena_printf(ga(), "other %s", op_names[s->op]);
      else {
        UOp *bu = u_buf_uop(s);
        if (bu->op != OP_BUFFER) got = arena_printf(ga(), "other %s", op_names[bu->op]);
        else {
          bool isnew = !umap_has(&inputs, bu);
          int64_t un = isnew ? canon_new(&cg, bu, uop_h(bu)) : bu->src[0]->arg->i;
          got = arena_printf(ga(), "%s%lld size %lld %s %s", isnew ? "new" : "in", (long long)un, (long long)bu->arg->i,
                             dt_repr(ga(), bu->dtype), dev_str(u_device(bu)));
        }
      }
      if (b) {
        const cJSON *o = cJSON_GetObjectItemCaseSensitive(b, "other"), *bb = cJSON_GetObjectItemCaseSensitive(b, "buffer");
        if (o) want = arena_printf(ga(), "other %s", o->valuestring);
        else if (bb) {
          bool isnew = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(bb, "new"));
          int64_t u = (int64_t)cJSON_GetObjectItemCaseSensitive(bb, "unique")->valuedouble;
          int64_t un = isnew ? canon_new(&cw, (void *)(intptr_t)(u + 1), (uint64_t)u * 0x9E3779B97F4A7C15ull) : u;
          want = arena_printf(ga(), "%s%lld size %lld %s %s", isnew ? "new" : "in", (long long)un,
                              (long long)cJSON_GetObjectItemCaseSensitive(bb, "size")->valuedouble,
                              cJSON_GetObjectItemCaseSensitive(bb, "dtype")->valuestring,
                              json_dev_str(cJSON_GetObjectItemCaseSensitive(bb, "device")));
        }
      }
      if (strcmp(got, want) && r->bufs_ok) {
        r->bufs_ok = 0;
        if (!r->reason[0]) snprintf(r->reason, sizeof r->reason, "bufs: item %d buf %d: got %s, want %s", i, j, got, want);
      }
    }
    if (b && r->bufs_ok) { r->bufs_ok = 0; if (!r->reason[0]) snprintf(r->reason, sizeof r->reason, "bufs: item %d: fewer buffers", i); }
    /* the first entry that differs (name, caller, backward), or bad = -1 */
    int nm = cJSON_GetArraySize(md), bad = -1, mi = 0;
    const char *want_name = NULL;
    for (const cJSON *e = md ? md->child : NULL; e && mi < si->meta.n && bad < 0; e = e->next, mi++) {
      const Meta *m = si->meta.m[mi];
      want_name = cJSON_GetObjectItemCaseSensitive(e, "name")->valuestring;
      if (strcmp(m->name, want_name) || strcmp(m->caller, cJSON_GetObjectItemCaseSensitive(e, "caller")->valuestring) ||
          m->backward != cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(e, "backward"))) bad = mi;
    }
    if ((bad >= 0 || nm != si->meta.n) && r->meta_ok) {
      r->meta_ok = 0;
      if (!r->reason[0] && bad >= 0)
        snprintf(r->reason, sizeof r->reason, "metadata: item %d entry %d: got %s, want %s", i, bad, si->meta.m[bad]->name, want_name);
      else if (!r->reason[0])
        snprintf(r->reason, sizeof r->reason, "metadata: item %d: got %d entries, want %d", i, si->meta.n, nm);
    }
    it = it->next;
  }
  if (it) r->bufs_ok = r->meta_ok = 0;
  cJSON_Delete(doc);
  return true;
}

/* schedule one case and compare with its expect file; runs in the child */
static void run_case(const char *graph, const char *expect, Result *r) {
  UCtx *c = uop_ctx_new();
  TgTry t;
  if (TG_TRY(t)) {
    Graph *g = graph_read_file(graph);
    Expect *E = expect_read_file(expect);
    if (numeric_cpu && E->noutputs > 0) r->has_numeric = 1;
    Schedule *S = driver_schedule(g);
    r->got = S->nkernels; r->want = E->kernels;
    r->count_ok = S->nkernels == E->kernels;
    /* one entry per KERNEL, as the expect files have them (a multi-device kernel's shard 0) */
    int n = 0, m = E->nitems;
    UOp **a = arena_alloc(ga(), sizeof(UOp *) * (size_t)(S->nitems + 1)), **b = arena_alloc(ga(), sizeof(UOp *) * (size_t)(m + 1));
    for (int i = 0; i < S->nitems; i++) if (S->items[i].shard <= 0) a[n++] = S->items[i].ast;
    for (int i = 0; i < m; i++) b[i] = E->items[i].ast;
    r->order_ok = n == m;
    for (int i = 0; r->order_ok && i < n; i++) if (a[i] != b[i]) r->order_ok = 0;
    if (show_mode) {
      printf("== got %d items (%d kernels), want %d items (%d kernels)\n", n, S->nkernels, m, E->kernels);
      for (int i = 0; i < n || i < m; i++) {
        UOp *x = i < n ? a[i] : NULL, *y = i < m ? b[i] : NULL;
        printf("-- item %d: %s\n", i, x == y ? "same" : "DIFFERENT");
        if (x != y) {
          if (x) printf("got:\n%s\n", uop_repr(ga(), x));
          if (y) printf("want:\n%s\n", uop_repr(ga(), y));
        }
      }
    }
    qsort(a, (size_t)n, sizeof *a, cmp_ptr_id);
    qsort(b, (size_t)m, sizeof *b, cmp_ptr_id);
    r->ast_ok = n == m;
    for (int i = 0; r->ast_ok && i < n; i++) if (a[i] != b[i]) r->ast_ok = 0;
    if (!r->count_ok) snprintf(r->reason, sizeof r->reason, "kernels: got %d, want %d (items %d vs %d)", S->nkernels, E->kernels, n, m);
    else if (!r->ast_ok) {
      /* first expected AST we did not make */
      int miss = -1;
      for (int i = 0; i < m && miss < 0; i++) {
        bool found = false;
        for (int j = 0; j < S->nitems; j++) if (S->items[j].ast == E->items[i].ast) found = true;
        if (!found) miss = i;
      }
      snprintf(r->reason, sizeof r->reason, "ast: %d items vs %d; expected item %d (%s) not produced", n, m, miss,
               miss >= 0 ? E->items[miss].op : "-");
    } else if (!r->order_ok) snprintf(r->reason, sizeof r->reason, "order differs");
    if (r->order_ok) check_bufs_meta(S, g, expect, r);
    if (numeric_cpu && E->noutputs > 0) {
      r->has_numeric = 1;
      char why[600] = "";
      DriverRun *R = driver_run_device(g, S, numeric_dev);
      r->numeric_ok = driver_compare(R, E, why, sizeof why);
      r->bits_ok = r->numeric_ok && driver_same_bits(R, E);
      if (!r->numeric_ok && !r->reason[0]) snprintf(r->reason, sizeof r->reason, "numeric: %s", why);
    }
    tg_try_end(&t);
  } else {
    r->error = 1;
    snprintf(r->reason, sizeof r->reason, "error %d: %s", tg_last_error.code, tg_last_error.msg);
  }
  uop_ctx_free(c);
}

static Result run_forked(const char *graph, const char *expect, int timeout) {
  Result r = {0};
  int fd[2];
  if (pipe(fd) != 0) { r.error = 1; snprintf(r.reason, sizeof r.reason, "pipe failed"); return r; }
  fflush(stdout);
  pid_t pid = fork();
  if (pid == 0) {
    close(fd[0]);
    alarm((unsigned)timeout);
    Result cr = {0};
    run_case(graph, expect, &cr);
    ssize_t w = write(fd[1], &cr, sizeof cr);
    (void)w;
    fflush(stdout);
    _exit(0);
  }
  close(fd[1]);
  ssize_t got = 0, k;
  while (got < (ssize_t)sizeof r && (k = read(fd[0], (char *)&r + got, sizeof r - (size_t)got)) > 0) got += k;
  close(fd[0]);
  int st = 0;
  waitpid(pid, &st, 0);
  if (got != (ssize_t)sizeof r) {
    memset(&r, 0, sizeof r);
    r.error = 1;
    if (WIFSIGNALED(st)) snprintf(r.reason, sizeof r.reason, "crashed: signal %d (%s)", WTERMSIG(st), WTERMSIG(st) == SIGALRM ? "timeout" : strsignal(WTERMSIG(st)));
    else snprintf(r.reason, sizeof r.reason, "child exited with status %d", WEXITSTATUS(st));
  }
  return r;
}

typedef struct Tally { int n, count, ast, order, bufs, meta, errors, nnum, num, bits; } Tally;
static void print_tally(const char *name, const Tally *t) {
  double d = t->n ? t->n : 1;
  printf("%-10s %5d cases  count %5d (%6.2f%%)  ast %5d (%6.2f%%)  order %5d (%6.2f%%)  bufs %5d (%6.2f%%)  meta %5d (%6.2f%%)"
         "  ", name, t->n, t->count, 100.0 * t->count / d, t->ast, 100.0 * t->ast / d, t->order,
         100.0 * t->order / d, t->bufs, 100.0 * t->bufs / d, t->meta, 100.0 * t->meta / d);
  if (t->nnum) printf("numeric %d/%d (%6.2f%%)  bits %d/%d", t->num, t->nnum, 100.0 * t->num / t->nnum, t->bits, t->nnum);
  else printf("numeric -");
  printf("  errors %d\n", t->errors);
}

static void usage(int status) {
  FILE *f = status ? stderr : stdout;
  if (status) { fprintf(f, "conformance: try 'conformance --help'\n"); exit(status); }
  fprintf(f, "usage: conformance [-v] [--count-bar F] [--ast-bar F] [--order-bar F] [--bufs-bar F] [--meta-bar F]\n"
             "                   [--numeric cpu|opencl|cuda] [--numeric-bar F] [--bits-bar F] [--timeout S] [--only SUBSTR] [--show NAME]\n"
             "                   [--fast-sums] DIR...\n"
             "Scores create_schedule against the oracle's NAME.graph.json / NAME.expect.json pairs in each DIR.\n");
  exit(0);
}

int main(int argc, char **argv) {
  static const struct option longopts[] = {
    {"count-bar", required_argument, 0, 'c'}, {"ast-bar", required_argument, 0, 'a'}, {"order-bar", required_argument, 0, 'o'},
    {"bufs-bar", required_argument, 0, 'b'}, {"meta-bar", required_argument, 0, 'm'}, {"timeout", required_argument, 0, 't'}, {"only", required_argument, 0, 'O'}, {"show", required_argument, 0, 's'},
    {"numeric", required_argument, 0, 'N'}, {"numeric-bar", required_argument, 0, 'B'}, {"bits-bar", required_argument, 0, 'T'}, {"fast-sums", no_argument, 0, 'X'}, {"verbose", no_argument, 0, 'v'}, {"help", no_argument, 0, 'h'}, {0, 0, 0, 0}};
  double count_bar = 0, ast_bar = 0, order_bar = 0, bufs_bar = 0, meta_bar = 0, numeric_bar = 0, bits_bar = 0;
  int timeout = 60, verbose = 0, ch;
  const char *only = NULL, *show = NULL;
  while ((ch = getopt_long(argc, argv, "vh", longopts, NULL)) != -1) {
    switch (ch) {
    case 'c': count_bar = atof(optarg); break;
    case 'a': ast_bar = atof(optarg); break;
    case 'o': order_bar = atof(optarg); break;
    case 'b': bufs_bar = atof(optarg); break;
    case 'm': meta_bar = atof(optarg); break;
    case 't': timeout = atoi(optarg); break;
    case 'O': only = optarg; break;
    case 's': show = optarg; break;
    case 'N':
      if (strcmp(optarg, "cpu") && strcmp(optarg, "opencl") && strcmp(optarg, "cuda")) { fprintf(stderr, "conformance: --numeric %s: cpu, opencl or cuda\n", optarg); return 2; }
      numeric_dev = optarg;
      numeric_cpu = true;
      break;
    case 'B': numeric_bar = atof(optarg); break;
    case 'T': bits_bar = atof(optarg); break;
    case 'X': driver_run_options((DriverRunOpts){1, 0, false, 0, NULL, true}); break;
    case 'v': verbose = 1; break;
    case 'h': usage(0); break;
    default: usage(2);
    }
  }
  if (optind >= argc) usage(2);
  Tally total = {0};
  for (int d = optind; d < argc; d++) {
    DIR *dir = opendir(argv[d]);
    if (!dir) { fprintf(stderr, "conformance: %s: cannot open\n", argv[d]); return 2; }
    int cap = 1024, n = 0;
    char **names = malloc(sizeof(char *) * (size_t)cap);
    struct dirent *e;
    while ((e = readdir(dir))) {
      size_t l = strlen(e->d_name);
      if (l < 12 || strcmp(e->d_name + l - 11, ".graph.json")) continue;
      if (only && !strstr(e->d_name, only)) continue;
      if (show && strncmp(e->d_name, show, strlen(show))) continue;
      if (n == cap) { cap *= 2; names = realloc(names, sizeof(char *) * (size_t)cap); }
      names[n++] = strndup(e->d_name, l - 11);
    }
    closedir(dir);
    qsort(names, (size_t)n, sizeof *names, cmp_str);
    Tally t = {0};
    for (int i = 0; i < n; i++) {
      char gpath[4096], epath[4096];
      snprintf(gpath, sizeof gpath, "%s/%s.graph.json", argv[d], names[i]);
      snprintf(epath, sizeof epath, "%s/%s.expect.json", argv[d], names[i]);
      if (access(epath, R_OK) != 0) continue;
      Result r;
      if (show) { show_mode = true; memset(&r, 0, sizeof r); run_case(gpath, epath, &r); }
      else r = run_forked(gpath, epath, timeout);
      t.n++;
      t.nnum += r.has_numeric; t.num += r.has_numeric && r.numeric_ok; t.bits += r.has_numeric && r.bits_ok;
      t.count += r.count_ok; t.ast += r.ast_ok; t.order += r.order_ok; t.bufs += r.bufs_ok; t.meta += r.meta_ok; t.errors += r.error;
      if ((verbose || show) && (!r.count_ok || !r.ast_ok || !r.order_ok || !r.bufs_ok || !r.meta_ok || (r.has_numeric && !r.numeric_ok))) printf("FAIL %s: %s\n", names[i], r.reason);
      else if ((verbose || show) && r.has_numeric && !r.bits_ok) printf("BITS %s: close to tinygrad's values, not its bits\n", names[i]);
      free(names[i]);
    }
    free(names);
    const char *base = strrchr(argv[d], '/');
    base = base && base[1] ? base + 1 : argv[d];
    print_tally(base, &t);
    total.n += t.n; total.count += t.count; total.ast += t.ast; total.order += t.order; total.bufs += t.bufs; total.meta += t.meta;
    total.errors += t.errors; total.nnum += t.nnum; total.num += t.num; total.bits += t.bits;
  }
  print_tally("total", &total);
  double dn = total.n ? total.n : 1;
  int bad = 0;
  if (total.count / dn < count_bar) { printf("count rate %.4f below bar %.4f\n", total.count / dn, count_bar); bad = 1; }
  if (total.ast / dn < ast_bar) { printf("ast rate %.4f below bar %.4f\n", total.ast / dn, ast_bar); bad = 1; }
  if (total.order / dn < order_bar) { printf("order rate %.4f below bar %.4f\n", total.order / dn, order_bar); bad = 1; }
  if (total.bufs / dn < bufs_bar) { printf("bufs rate %.4f below bar %.4f\n", total.bufs / dn, bufs_bar); bad = 1; }
  if (total.meta / dn < meta_bar) { printf("meta rate %.4f below bar %.4f\n", total.meta / dn, meta_bar); bad = 1; }
  if (numeric_cpu && (total.nnum ? (double)total.num / total.nnum : 0) < numeric_bar) {
    printf("numeric rate %.4f below bar %.4f\n", total.nnum ? (double)total.num / total.nnum : 0, numeric_bar);
    bad = 1;
  }
  if (numeric_cpu && bits_bar > 0) {
    double rate = total.nnum ? (double)total.bits / total.nnum : 0;
    if (strcmp(numeric_dev, "cpu") == 0 && !rt_tinygrad_bits())
      printf("bits bar not applied: the CPU kernels are not compiled by clang on a CPU with FMA, as tinygrad's recorded values are\n");
    else if (rate < bits_bar) { printf("bits rate %.4f below bar %.4f\n", rate, bits_bar); bad = 1; }
  }
  return bad;
}
