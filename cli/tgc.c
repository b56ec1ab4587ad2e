/* tgc.c: the command line (CLI.md), in the manner of coreutils' wc.c: one getopt_long table per
 * command, usage(status) printing full help to stdout for --help and a one-line hint to stderr
 * on misuse (exit 2). Library failures come back through TG_TRY as (code, message) and become
 * "tgc: message" with the documented exit code: 1 check failed, 3 bad input, 4 device/compiler.
 * Scheduler switches are collected while parsing and applied over the graph's own options once
 * the graph is read. Nothing is half-written: files go through write_file_atomic. */
#include "codegen/codegen.h"
#include "driver/driver.h"
#include "explain/explain.h"
#include "io/graph.h"
#include "schedule/schedule.h"
#include <cjson/cJSON.h>
#include <errno.h>
#include <stdarg.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TGC_VERSION "0.1.0"

/* ---- usage ---- */
static const char *cmd = NULL; /* current subcommand, for messages */

static _Noreturn void misuse(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static _Noreturn void misuse(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fprintf(stderr, "tgc: ");
  if (cmd) fprintf(stderr, "%s: ", cmd);
  vfprintf(stderr, fmt, ap);
  va_end(ap);
  if (cmd) fprintf(stderr, " (try 'tgc %s --help')\n", cmd);
  else fprintf(stderr, " (try 'tgc --help')\n");
  exit(TG_EUSAGE);
}

static const char switches_help[] =
  "Scheduler switches (override the graph's \"options\"):\n"
  "      --fuse-arange=0|1             FUSE_ARANGE (default 1)\n"
  "      --fuse-conv-bw=0|1            FUSE_CONV_BW (default 0)\n"
  "      --split-reduceop=0|1          SPLIT_REDUCEOP (default 1)\n"
  "      --reduceop-split-threshold=N  REDUCEOP_SPLIT_THRESHOLD (default 32768)\n"
  "      --reduceop-split-size=N       REDUCEOP_SPLIT_SIZE (default 22)\n"
  "      --dont-realize-expand         DONT_REALIZE_EXPAND=1\n"
  "      --dont-group-reduces          DONT_GROUP_REDUCES=1\n"
  "      --max-kernel-buffers=N        MAX_KERNEL_BUFFERS (0: the device's own limit)\n";

static const char main_help[] =
  "Usage: tgc COMMAND [OPTION]... GRAPH\n"
  "Compile a tinygrad 0.11.0 tensor graph (a tgc.graph JSON file; '-' reads stdin).\n"
  "\n"
  "Commands:\n"
  "  schedule GRAPH [-o SCHED.json]           schedule the graph and write the schedule file\n"
  "  check GRAPH --kernels N                  schedule and compare the kernel count with N\n"
  "  compile GRAPH -t c|opencl|cuda -o DIR    lower and render every kernel into DIR\n"
  "  run GRAPH -d cpu|opencl|cuda [-o DIR]    compile and run the schedule, write DIR/outN.npy\n"
  "  dump GRAPH [--stage STAGE]               print the graph in tinygrad's UOp print style\n"
  "  explain GRAPH [--json]                   why each kernel exists and which ops it holds\n"
  "  diff A B [--json]                        compare two graphs' or schedule files' kernels\n"
  "\n"
  "  -h, --help     display this help and exit\n"
  "      --version  output version information and exit\n"
  "\n"
  "Run 'tgc COMMAND --help' for a command's options.\n"
  "Exit status: 0 success, 1 a check failed, 2 bad usage, 3 bad input, 4 device or compiler failure.\n";

static const char schedule_help[] =
  "Usage: tgc schedule [OPTION]... GRAPH\n"
  "Run tinygrad's scheduler (kernelize and ordering) over GRAPH and write the schedule file\n"
  "(format tgc.schedule) to stdout or to -o FILE; print a summary line to stderr.\n"
  "\n"
  "  -o, --output=FILE   write the schedule to FILE (atomically) instead of stdout\n"
  "  -h, --help          display this help and exit\n"
  "\n";
static const char check_help[] =
  "Usage: tgc check [OPTION]... GRAPH --kernels N\n"
  "Schedule GRAPH and compare the number of compiled kernels (SINK items) with N.\n"
  "Exit 0 when it matches, 1 when it does not (the kernels are listed on stderr).\n"
  "\n"
  "      --kernels=N      the expected kernel count\n"
  "      --max-kernels=N  pass when there are at most N kernels\n"
  "      --json           print the result as JSON on stdout\n"
  "  -h, --help           display this help and exit\n"
  "\n";
static const char compile_help[] =
  "Usage: tgc compile [OPTION]... GRAPH -t TARGET -o DIR\n"
  "Schedule GRAPH, lower and render every kernel, and write DIR/schedule.json, one source file\n"
  "per kernel and a host program that runs the schedule.\n"
  "\n"
  "  -t, --target=TARGET  c, opencl or cuda\n"
  "  -o, --output=DIR     the output directory\n"
  "  -MD, --deps          also write DIR/deps.d for make: DIR/model.o DIR/schedule.json depend on GRAPH\n"
  "                       and its .npy data files (include it; see testdata/make/Makefile)\n"
  "      --threads=N      -t c: split each kernel's outer loop over threads with OpenMP (0: as many\n"
  "                       as OMP_NUM_THREADS or the cores at run time; default 1, no OpenMP)\n"
  "      --fast-sums      -t c: let --threads kernels vectorize float sums, which reorders their\n"
  "                       additions: reductions run up to 3x faster, the values differ from\n"
  "                       tinygrad's by rounding, more where a sum cancels (default: every float sum\n"
  "                       in tinygrad's order, as its CPU backend adds, so the values are its bits)\n"
  "      --exact          -t c: the default, sums in tinygrad's order (undoes an earlier --fast-sums)\n"
  "      --noopt          no kernel opts (tinygrad's NOOPT=1 loops); default: tinygrad's\n"
  "                       hand_coded_optimizations per kernel (UPCAST, UNROLL; on opencl and cuda\n"
  "                       also LOCAL, GROUP, GROUPTOP)\n"
  "      --beam=N         -t c: choose each kernel's opts by timing them on this CPU (tinygrad's BEAM\n"
  "                       search of width N over UPCAST, UNROLL and PADTO, cached on disk)\n"
  "      --opts=LIST      these opts for every kernel, e.g. UPCAST:0:4,UPCAST:1:4,UNROLL:0:4 or\n"
  "                       PADTO:1:32,UPCAST:1:4 or, on GPU targets, LOCAL:0:4,GROUPTOP:0:16\n"
  "                       (tinygrad's Opt(op, axis, arg); exit 3 when one does not apply to a kernel)\n"
  "  -h, --help           display this help and exit\n"
  "\n";
static const char run_help[] =
  "Usage: tgc run [OPTION]... GRAPH -d DEVICE\n"
  "Compile and run the schedule of GRAPH on DEVICE; write DIR/out0.npy, DIR/out1.npy, ... one per\n"
  "sink source, in sink order.\n"
  "\n"
  "  -d, --device=DEVICE    cpu, opencl or cuda\n"
  "  -o, --output=DIR       where to write outN.npy (default .)\n"
  "      --input=ID=FILE    fill the input BUFFER of graph row ID from FILE (.npy); repeatable\n"
  "      --expect=FILE      compare the outputs with an expect file's outputs (exit 1 on mismatch)\n"
  "      --threads=N        split each CPU kernel's outer loop over N threads (default: all cores;\n"
  "                         1 runs serially)\n"
  "      --fast-sums        let CPU kernels vectorize float sums, which reorders their additions:\n"
  "                         reductions run up to 3x faster, the values differ from tinygrad's by\n"
  "                         rounding, more where a sum cancels (default: every float sum in\n"
  "                         tinygrad's order, as its CPU backend adds, so the values are its bits)\n"
  "      --exact            the default, sums in tinygrad's order (undoes an earlier --fast-sums)\n"
  "      --noopt            no kernel opts (tinygrad's NOOPT=1 loops)\n"
  "      --opts=LIST        these opts for every kernel (see tgc compile --help)\n"
  "      --repeat=N         after the first run, run the schedule N more times and print the median\n"
  "                         and fastest wall time (kernels compiled and buffers allocated already)\n"
  "      --beam=N           choose each CPU kernel's opts by timing them: tinygrad's BEAM search of\n"
  "                         width N over UPCAST, UNROLL and PADTO, cached on disk (a second run is\n"
  "                         instant)\n"
  "      --profile          time every schedule item over those reruns (at least one) and print a\n"
  "                         line per item: kernel name, median ms, share, MB of its buffers, GB/s\n"
  "  -h, --help             display this help and exit\n"
  "\n";
static const char dump_help[] =
  "Usage: tgc dump [OPTION]... GRAPH\n"
  "Print GRAPH's sink, as read or after a pipeline stage, in tinygrad's UOp print style.\n"
  "\n"
  "      --stage=STAGE  print the graph after STAGE (see --list-stages)\n"
  "      --list-stages  print the stage names and exit\n"
  "  -h, --help         display this help and exit\n"
  "\n";

static const char explain_help[] =
  "Usage: tgc explain [OPTION]... GRAPH\n"
  "Schedule GRAPH and, for every kernel, print the rule that made it a kernel boundary (a SINK\n"
  "output, CONTIGUOUS/ASSIGN/COPY/BUFFER_VIEW, realize before expand, an unsafe pad, a second reduce,\n"
  "several outputs (forced_realize), limit_bufs, split_reduceop), the sink outputs it writes and\n"
  "the input graph rows (id, op, metadata name) it computes.\n"
  "\n"
  "      --json         print one JSON document instead of text\n"
  "  -h, --help         display this help and exit\n"
  "\n";
static const char diff_help[] =
  "Usage: tgc diff [OPTION]... A B\n"
  "Compare the kernels of A and B (graphs, scheduled with the same switches, or tgc.schedule files)\n"
  "by a structural hash of each AST (row ids aside), aligned in order: '~' changed (with the AST ops\n"
  "lost and gained), '-' removed, '+' added, then a summary line. Exit 0 when equal, 1 when not.\n"
  "\n"
  "      --json         print one JSON document instead of text\n"
  "  -h, --help         display this help and exit\n"
  "\n";

static void print_help(const char *text, bool with_switches) {
  fputs(text, stdout);
  if (with_switches) fputs(switches_help, stdout);
}

/* ---- option values ---- */
enum {
  O_FUSE_ARANGE = 256, O_FUSE_CONV_BW, O_SPLIT_REDUCEOP, O_RS_THRESHOLD, O_RS_SIZE, O_DONT_REALIZE_EXPAND,
  O_DONT_GROUP_REDUCES, O_MAX_KERNEL_BUFFERS, O_KERNELS, O_MAX_KERNELS, O_JSON, O_INPUT, O_EXPECT, O_STAGE,
  O_LIST_STAGES, O_VERSION, O_DEPS, O_THREADS, O_REPEAT, O_PROFILE, O_BEAM, O_NOOPT, O_OPTS, O_EXACT, O_FAST_SUMS,
};
#define SWITCH_OPTS                                                                                     \
  {"fuse-arange", required_argument, 0, O_FUSE_ARANGE}, {"fuse-conv-bw", required_argument, 0, O_FUSE_CONV_BW}, \
  {"split-reduceop", required_argument, 0, O_SPLIT_REDUCEOP},                                           \
  {"reduceop-split-threshold", required_argument, 0, O_RS_THRESHOLD},                                   \
  {"reduceop-split-size", required_argument, 0, O_RS_SIZE},                                             \
  {"dont-realize-expand", no_argument, 0, O_DONT_REALIZE_EXPAND},                                       \
  {"dont-group-reduces", no_argument, 0, O_DONT_GROUP_REDUCES},                                         \
  {"max-kernel-buffers", required_argument, 0, O_MAX_KERNEL_BUFFERS}

typedef struct Overrides {
  bool set[9];
  int64_t val[9];
} Overrides;

static int64_t parse_num(const char *opt, const char *s, int64_t lo, int64_t hi) {
  char *end;
  errno = 0;
  long long v = strtoll(s, &end, 10);
  if (!*s || *end || errno || v < lo || v > hi) {
    if (hi == 1 && lo == 0) misuse("--%s needs 0 or 1, not '%s'", opt, s);
    misuse("--%s needs an integer from %lld to %lld, not '%s'", opt, (long long)lo, (long long)hi, s);
  }
  return v;
}
/* true when c was a scheduler switch */
static bool take_switch(int c, Overrides *ov) {
  static const char *const names[] = {"fuse-arange", "fuse-conv-bw", "split-reduceop", "reduceop-split-threshold",
                                      "reduceop-split-size", "dont-realize-expand", "dont-group-reduces",
                                      "max-kernel-buffers"};
  if (c < O_FUSE_ARANGE || c > O_MAX_KERNEL_BUFFERS) return false;
  int k = c - O_FUSE_ARANGE;
  int64_t v = 1;
  switch (c) {
  case O_FUSE_ARANGE: case O_FUSE_CONV_BW: case O_SPLIT_REDUCEOP: v = parse_num(names[k], optarg, 0, 1); break;
  case O_RS_THRESHOLD: case O_RS_SIZE: case O_MAX_KERNEL_BUFFERS: v = parse_num(names[k], optarg, 0, INT64_MAX); break;
  default: break;
  }
  ov->set[k] = true;
  ov->val[k] = v;
  return true;
}
static void apply_overrides(const Overrides *ov, Options *o) {
  if (ov->set[0]) o->fuse_arange = (int)ov->val[0];
  if (ov->set[1]) o->fuse_conv_bw = (int)ov->val[1];
  if (ov->set[2]) o->split_reduceop = (int)ov->val[2];
  if (ov->set[3]) o->reduceop_split_threshold = ov->val[3];
  if (ov->set[4]) o->reduceop_split_size = ov->val[4];
  if (ov->set[5]) o->dont_realize_expand = 1;
  if (ov->set[6]) o->dont_group_reduces = 1;
  if (ov->set[7]) o->max_kernel_buffers = ov->val[7];
}

/* the common getopt loop tail: c is ':' (missing argument) or '?' (unknown option) */
static _Noreturn void bad_option(int c, char **argv) {
  const char *arg = argv[optind - 1];
  if (c == ':') misuse("option '%s' needs an argument", arg);
  if (optopt && optopt < 256) misuse("unknown option '-%c'", optopt);
  misuse("unknown option '%s'", arg);
}

/* ---- running library code ---- */
/* where the scheduler made kernels that tinygrad 0.11.0 does not make (it gives no schedule there) */
static void print_warning(const UCtx *ctx) {
  if (ctx->sched_warning) fprintf(stderr, "tgc: warning: %s\n", ctx->sched_warning);
}
static _Noreturn void die_from_error(void) {
  int code = tg_last_error.code;
  if (code == TG_EINTERNAL) fprintf(stderr, "tgc: internal error: %s\n", tg_last_error.msg);
  else fprintf(stderr, "tgc: %s\n", tg_last_error.msg);
  exit(code ? code : TG_EINTERNAL);
}
static Graph *read_graph(const char *path, const Overrides *ov) {
  Graph *g = graph_read_file(path);
  apply_overrides(ov, &uctx->opt);
  g->opt = uctx->opt;
  return g;
}
static void write_out(const char *path, const char *text) {
  size_t n = strlen(text);
  if (!path || strcmp(path, "-") == 0) {
    if (fwrite(text, 1, n, stdout) != n || fflush(stdout) != 0) tg_fail(TG_EINPUT, "cannot write to stdout: %s", strerror(errno));
    return;
  }
  if (!write_file_atomic(path, text, n)) tg_fail(TG_EINPUT, "%s: cannot write: %s", path, strerror(errno));
}
static const char *need_graph(int argc, char **argv) {
  if (optind >= argc) misuse("missing GRAPH operand");
  if (optind + 1 < argc) misuse("extra operand '%s'", argv[optind + 1]);
  return argv[optind];
}

/* ---- commands ---- */
static int cmd_schedule(int argc, char **argv) {
  static const struct option lo[] = {{"output", required_argument, 0, 'o'}, {"help", no_argument, 0, 'h'}, SWITCH_OPTS, {0, 0, 0, 0}};
  Overrides ov = {{0}, {0}};
  const char *out = NULL;
  int c;
  while ((c = getopt_long(argc, argv, ":o:h", lo, NULL)) != -1) {
    if (take_switch(c, &ov)) continue;
    switch (c) {
    case 'o': out = optarg; break;
    case 'h': print_help(schedule_help, true); return 0;
    default: bad_option(c, argv);
    }
  }
  const char *path = need_graph(argc, argv);
  Graph *g = read_graph(path, &ov);
  double t0 = tg_now_ms();
  Schedule *s = create_schedule(g->sink);
  double t1 = tg_now_ms();
  write_out(out, schedule_write_json(ga(), s, g, NULL, NULL));
  fprintf(stderr, "%d kernels (%d copies, %d views) from %d uops in %.1f ms\n", s->nkernels, s->ncopies, s->nviews, g->nrows, t1 - t0);
  return 0;
}

static void list_items(FILE *f, const Schedule *s) {
  for (int i = 0; i < s->nitems; i++) {
    const SchedItem *it = &s->items[i];
    fprintf(f, "  %d: %s, %d buffers", i, op_names[it->ast->op], it->nbufs);
    for (int m = 0; m < it->meta.n; m++) fprintf(f, "%s%s", m ? ", " : ", metadata: ", it->meta.m[m]->name);
    fputc('\n', f);
  }
}
static int cmd_check(int argc, char **argv) {
  static const struct option lo[] = {{"kernels", required_argument, 0, O_KERNELS}, {"max-kernels", required_argument, 0, O_MAX_KERNELS},
                                     {"json", no_argument, 0, O_JSON}, {"help", no_argument, 0, 'h'}, SWITCH_OPTS, {0, 0, 0, 0}};
  Overrides ov = {{0}, {0}};
  int64_t want = -1, maxk = -1;
  bool json = false;
  int c;
  while ((c = getopt_long(argc, argv, ":h", lo, NULL)) != -1) {
    if (take_switch(c, &ov)) continue;
    switch (c) {
    case O_KERNELS: want = parse_num("kernels", optarg, 0, INT32_MAX); break;
    case O_MAX_KERNELS: maxk = parse_num("max-kernels", optarg, 0, INT32_MAX); break;
    case O_JSON: json = true; break;
    case 'h': print_help(check_help, true); return 0;
    default: bad_option(c, argv);
    }
  }
  const char *path = need_graph(argc, argv);
  if (want < 0 && maxk < 0) misuse("--kernels N (or --max-kernels N) is required");
  Graph *g = read_graph(path, &ov);
  Schedule *s = create_schedule(g->sink);
  int got = s->nkernels;
  bool ok = (want < 0 || got == want) && (maxk < 0 || got <= maxk);
  if (json) {
    cJSON *o = cJSON_CreateObject(), *items = cJSON_CreateArray();
    cJSON_AddStringToObject(o, "graph", path);
    if (want >= 0) cJSON_AddItemToObject(o, "expected", json_int(want));
    if (maxk >= 0) cJSON_AddItemToObject(o, "max", json_int(maxk));
    cJSON_AddItemToObject(o, "got", json_int(got));
    cJSON_AddBoolToObject(o, "ok", ok);
    for (int i = 0; i < s->nitems; i++) {
      cJSON *it = cJSON_CreateObject();
      cJSON_AddStringToObject(it, "op", op_names[s->items[i].ast->op]);
      cJSON_AddItemToObject(it, "bufs", json_int(s->items[i].nbufs));
      cJSON_AddItemToArray(items, it);
    }
    cJSON_AddItemToObject(o, "items", items);
    if (s->warning) cJSON_AddStringToObject(o, "warning", s->warning);
    write_out(NULL, json_print_free(ga(), o));
  }
  if (ok) return 0;
  if (want >= 0 && got != want) fprintf(stderr, "tgc: %s: expected %lld kernels, got %d\n", path, (long long)want, got);
  else fprintf(stderr, "tgc: %s: expected at most %lld kernels, got %d\n", path, (long long)maxk, got);
  list_items(stderr, s);
  return TG_ECHECK;
}

/* a path as a Make word: spaces and '#' escaped with a backslash, '$' doubled */
static char *make_word(const char *p) {
  char *w = arena_alloc(ga(), strlen(p) * 2 + 1), *q = w;
  for (; *p; p++) {
    if (*p == ' ' || *p == '#') *q++ = '\\';
    else if (*p == '$') *q++ = '$';
    *q++ = *p;
  }
  return w;
}
/* -MD: DIR/deps.d in Make's format, "DIR/model.o DIR/schedule.json: GRAPH DATA.npy..." and an empty
 * rule per prerequisite (as cc -MP), so a deleted input does not break the build */
static void write_deps(const char *path, const char *dir) {
  if (strcmp(path, "-") == 0) tg_fail(TG_EUSAGE, "-MD needs a GRAPH file, not stdin");
  size_t n;
  char *text = read_file(ga(), path, &n);
  cJSON *doc = text ? cJSON_ParseWithLength(text, n) : NULL;
  const char *slash = strrchr(path, '/');
  const char *base = slash ? arena_printf(ga(), "%.*s", (int)(slash - path), path) : NULL;
  char *pre = make_word(path);
  const cJSON *row, *uops = doc ? cJSON_GetObjectItemCaseSensitive(doc, "uops") : NULL;
  cJSON_ArrayForEach(row, uops) {
    const cJSON *f = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(row, "data"), "file");
    if (!cJSON_IsString(f)) continue;
    const char *fp = f->valuestring[0] == '/' || !base ? f->valuestring : arena_printf(ga(), "%s/%s", base, f->valuestring);
    pre = arena_printf(ga(), "%s %s", pre, make_word(fp));
  }
  cJSON_Delete(doc);
  char *d = make_word(dir);
  char *txt = arena_printf(ga(), "%s/model.o %s/schedule.json: %s\n", d, d, pre);
  for (char *p = pre, *sp; *p; p = sp + (*sp != 0)) {
    sp = p;
    while (*sp && !(*sp == ' ' && sp[-1] != '\\')) sp++;
    txt = arena_printf(ga(), "%s\n%.*s:\n", txt, (int)(sp - p), p);
  }
  write_out(arena_printf(ga(), "%s/deps.d", dir), txt);
}

/* --noopt / --opts LIST: the kernel opts every kernel is lowered with (default: the heuristic) */
static void take_opts(int c, const char *arg) {
  KOptCfg cfg = {KOPT_NONE, 0, {{0}}, 0};
  char why[256];
  if (c == O_OPTS && !kopt_parse(arg, &cfg, why, sizeof why)) misuse("--opts: %s", why);
  lower_opt_config(&cfg);
}

static int cmd_compile(int argc, char **argv) {
  static const struct option lo[] = {{"target", required_argument, 0, 't'}, {"output", required_argument, 0, 'o'},
                                     {"deps", no_argument, 0, O_DEPS}, {"threads", required_argument, 0, O_THREADS},
                                     {"noopt", no_argument, 0, O_NOOPT}, {"opts", required_argument, 0, O_OPTS},
                                     {"beam", required_argument, 0, O_BEAM}, {"exact", no_argument, 0, O_EXACT},
                                     {"fast-sums", no_argument, 0, O_FAST_SUMS},
                                     {"help", no_argument, 0, 'h'}, SWITCH_OPTS, {0, 0, 0, 0}};
  Overrides ov = {{0}, {0}};
  const char *target = NULL, *out = NULL;
  bool deps = false, opts_given = false;
  int beam = 0;
  for (int i = 1; i < argc; i++) if (strcmp(argv[i], "-MD") == 0) argv[i] = "--deps"; /* cc's spelling */
  int c;
  while ((c = getopt_long(argc, argv, ":t:o:h", lo, NULL)) != -1) {
    if (take_switch(c, &ov)) continue;
    switch (c) {
    case 't':
      if (strcmp(optarg, "c") && strcmp(optarg, "opencl") && strcmp(optarg, "cuda")) misuse("unknown target '%s' (c, opencl or cuda)", optarg);
      target = optarg;
      break;
    case 'o': out = optarg; break;
    case O_DEPS: deps = true; break;
    case O_THREADS: driver_compile_threads((int)parse_num("threads", optarg, 0, 1024)); break;
    case O_EXACT: case O_FAST_SUMS: driver_compile_fast_sums(c == O_FAST_SUMS); break;
    case O_NOOPT: case O_OPTS: take_opts(c, optarg); opts_given = true; break;
    case O_BEAM: beam = (int)parse_num("beam", optarg, 0, 64); break;
    case 'h': print_help(compile_help, true); return 0;
    default: bad_option(c, argv);
    }
  }
  const char *path = need_graph(argc, argv);
  if (!target) misuse("-t c|opencl|cuda is required");
  if (!out) misuse("-o DIR is required");
  if (beam && strcmp(target, "c")) misuse("--beam times kernels on this CPU: -t c only");
  if (beam && opts_given) misuse("--beam chooses the opts: not with --noopt or --opts");
  driver_compile_beam(beam, stderr);
  Graph *g = read_graph(path, &ov);
  double t0 = tg_now_ms();
  Schedule *s = driver_schedule(g);
  int nk = strcmp(target, "c") ? driver_compile_gpu(g, s, out, target) : driver_compile_c(g, s, out);
  if (deps) write_deps(path, out);
  fprintf(stderr, "%d kernels (%d copies, %d views) compiled into %s in %.1f ms\n", nk, s->ncopies, s->nviews, out, tg_now_ms() - t0);
  return 0;
}

/* --profile: one line per schedule item (median over the reruns), then the sum */
static void print_profile(const DriverRun *r) {
  double total = 0;
  for (int i = 0; i < r->nitems; i++) total += r->item_ms[i];
  fprintf(stderr, "%5s  %-32s %10s %6s %10s %9s\n", "item", "kernel", "median_ms", "%", "MB", "GB/s");
  for (int i = 0; i < r->nitems; i++) {
    double ms = r->item_ms[i], mb = (double)r->item_bytes[i] / 1e6;
    fprintf(stderr, "%5d  %-32s %10.4f %6.1f %10.3f %9.2f\n", i, r->item_names[i], ms, total > 0 ? 100 * ms / total : 0, mb, ms > 0 ? mb / ms : 0);
  }
  fprintf(stderr, "%5s  %-32s %10.4f\n", "", "all items", total);
}

static int cmd_run(int argc, char **argv) {
  static const struct option lo[] = {{"device", required_argument, 0, 'd'}, {"output", required_argument, 0, 'o'},
                                     {"input", required_argument, 0, O_INPUT}, {"expect", required_argument, 0, O_EXPECT},
                                     {"threads", required_argument, 0, O_THREADS}, {"repeat", required_argument, 0, O_REPEAT},
                                     {"profile", no_argument, 0, O_PROFILE}, {"beam", required_argument, 0, O_BEAM},
                                     {"noopt", no_argument, 0, O_NOOPT}, {"opts", required_argument, 0, O_OPTS},
                                     {"exact", no_argument, 0, O_EXACT}, {"fast-sums", no_argument, 0, O_FAST_SUMS},
                                     {"help", no_argument, 0, 'h'}, SWITCH_OPTS, {0, 0, 0, 0}};
  DriverRunOpts ro = {0, 0, false, 0, stderr, false};
  Overrides ov = {{0}, {0}};
  const char *device = NULL, *out = ".", *expect = NULL;
  static DriverInput inputs[256];
  static const char *input_paths[256 + 2]; /* the --input files, then the graph and expect files */
  int ninputs = 0;
  bool opts_given = false;
  int c;
  while ((c = getopt_long(argc, argv, ":d:o:h", lo, NULL)) != -1) {
    if (take_switch(c, &ov)) continue;
    switch (c) {
    case 'd':
      if (strcmp(optarg, "cpu") && strcmp(optarg, "opencl") && strcmp(optarg, "cuda")) misuse("unknown device '%s' (cpu, opencl or cuda)", optarg);
      device = optarg;
      break;
    case 'o': out = optarg; break;
    case O_INPUT: {
      const char *eq = strchr(optarg, '=');
      char *end;
      errno = 0;
      long long id = strtoll(optarg, &end, 10);
      if (!eq || end != eq || eq == optarg || id < 0 || errno || !eq[1]) misuse("--input needs ID=FILE.npy, not '%s'", optarg);
      if (ninputs == (int)(sizeof inputs / sizeof *inputs)) misuse("too many --input options");
      inputs[ninputs].row = id;
      inputs[ninputs].path = eq + 1;
      input_paths[ninputs++] = eq + 1;
      break;
    }
    case O_EXPECT: expect = optarg; break;
    case O_THREADS: ro.threads = (int)parse_num("threads", optarg, 1, 1024); break;
    case O_REPEAT: ro.repeat = (int)parse_num("repeat", optarg, 0, 1000000); break;
    case O_PROFILE: ro.profile = true; break;
    case O_EXACT: case O_FAST_SUMS: ro.fast_sums = c == O_FAST_SUMS; break;
    case O_BEAM: ro.beam = (int)parse_num("beam", optarg, 0, 64); break;
    case O_NOOPT: case O_OPTS: take_opts(c, optarg); opts_given = true; break;
    case 'h': print_help(run_help, true); return 0;
    default: bad_option(c, argv);
    }
  }
  const char *path = need_graph(argc, argv);
  if (!device) misuse("-d cpu|opencl|cuda is required");
  if (ro.beam && strcmp(device, "cpu")) misuse("--beam times kernels on the CPU: -d cpu only");
  if (ro.beam && opts_given) misuse("--beam chooses the opts: not with --noopt or --opts");
  Graph *g = read_graph(path, &ov);
  Expect *x = expect ? expect_read_file(expect) : NULL;
  driver_run_options(ro);
  driver_set_inputs(g, ninputs, inputs);
  double t0 = tg_now_ms();
  Schedule *s = driver_schedule(g);
  driver_check_inputs(g, s);
  DriverRun *r = driver_run_device(g, s, device);
  double t1 = tg_now_ms();
  input_paths[ninputs] = path; /* the graph file is an input too (input_paths has room for it) */
  if (expect) input_paths[ninputs + 1] = expect;
  driver_write_outputs(r, out, ninputs + 1 + (expect != NULL), input_paths);
  fprintf(stderr, "%d kernels run, %d outputs written to %s in %.1f ms\n", r->nkernels, r->noutputs, out, t1 - t0);
  if (r->nrepeat) fprintf(stderr, "schedule run %d more times: median %.3f ms, fastest %.3f ms\n", r->nrepeat, r->ms_median, r->ms_min);
  if (r->nitems) print_profile(r);
  if (x) {
    char why[1024];
    if (!driver_compare(r, x, why, sizeof why)) {
      fprintf(stderr, "tgc: %s: outputs differ from %s: %s\n", path, expect, why);
      return TG_ECHECK;
    }
    fprintf(stderr, "outputs match %s\n", expect);
  }
  return 0;
}

static int cmd_dump(int argc, char **argv) {
  static const struct option lo[] = {{"stage", required_argument, 0, O_STAGE}, {"list-stages", no_argument, 0, O_LIST_STAGES},
                                     {"help", no_argument, 0, 'h'}, SWITCH_OPTS, {0, 0, 0, 0}};
  Overrides ov = {{0}, {0}};
  const char *stage = NULL;
  int c;
  while ((c = getopt_long(argc, argv, ":h", lo, NULL)) != -1) {
    if (take_switch(c, &ov)) continue;
    switch (c) {
    case O_STAGE: stage = optarg; break;
    case O_LIST_STAGES:
      for (int i = 0; sched_stage_names[i]; i++) printf("%s\n", sched_stage_names[i]);
      return 0;
    case 'h': print_help(dump_help, true); return 0;
    default: bad_option(c, argv);
    }
  }
  const char *path = need_graph(argc, argv);
  if (stage) {
    bool known = false;
    for (int i = 0; sched_stage_names[i]; i++) known |= strcmp(sched_stage_names[i], stage) == 0;
    if (!known) {
      char names[2048];
      size_t k = 0;
      names[0] = 0;
      for (int i = 0; sched_stage_names[i] && k < sizeof names - 64; i++)
        k += (size_t)snprintf(names + k, sizeof names - k, "%s%s", i ? ", " : "", sched_stage_names[i]);
      misuse("unknown stage '%s' (stages: %s)", stage, names);
    }
  }
  Graph *g = read_graph(path, &ov);
  UOp *u = stage ? sched_run_until(g->sink, stage) : g->sink;
  const char *text = uop_repr(ga(), u);
  write_out(NULL, text);
  write_out(NULL, "\n");
  return 0;
}

/* the options of a command that takes --json, --help and the scheduler switches: 1 with --json,
 * 0 without, -1 when --help was printed (the command then returns 0) */
static int json_and_switches(int argc, char **argv, const char *help, Overrides *ov) {
  static const struct option lo[] = {{"json", no_argument, 0, O_JSON}, {"help", no_argument, 0, 'h'}, SWITCH_OPTS, {0, 0, 0, 0}};
  int json = 0, c;
  while ((c = getopt_long(argc, argv, ":h", lo, NULL)) != -1) {
    if (take_switch(c, ov)) continue;
    switch (c) {
    case O_JSON: json = 1; break;
    case 'h': print_help(help, true); return -1;
    default: bad_option(c, argv);
    }
  }
  return json;
}

static int cmd_explain(int argc, char **argv) {
  Overrides ov = {{0}, {0}};
  int json = json_and_switches(argc, argv, explain_help, &ov);
  if (json < 0) return 0;
  const char *path = need_graph(argc, argv);
  Graph *g = read_graph(path, &ov);
  write_out(NULL, explain_graph(ga(), g, json));
  return 0;
}

/* a diff operand: a schedule file as is, or a graph scheduled with the switches */
static const char *diff_operand(const char *path, const Overrides *ov) {
  size_t n;
  char *text = read_file(ga(), path, &n);
  if (!text) tg_fail(TG_EINPUT, "%s: cannot read: %s", path, strerror(errno));
  if (diff_is_schedule(text)) return text;
  const char *slash = strrchr(path, '/');
  const char *dir = slash ? arena_printf(ga(), "%.*s", (int)(slash - path), path) : ".";
  Graph *g = graph_read_mem(path, text, n, dir);
  apply_overrides(ov, &uctx->opt);
  g->opt = uctx->opt;
  return schedule_write_json(ga(), create_schedule(g->sink), g, NULL, NULL);
}
static int cmd_diff(int argc, char **argv) {
  Overrides ov = {{0}, {0}};
  int json = json_and_switches(argc, argv, diff_help, &ov);
  if (json < 0) return 0;
  if (argc - optind < 2) misuse("needs two operands A B");
  if (argc - optind > 2) misuse("extra operand '%s'", argv[optind + 2]);
  const char *pa = argv[optind], *pb = argv[optind + 1];
  if (strcmp(pa, "-") == 0 && strcmp(pb, "-") == 0) misuse("only one operand can be '-'");
  const char *ta = diff_operand(pa, &ov), *tb = diff_operand(pb, &ov);
  char *out;
  int rc = diff_schedules(ga(), pa, ta, pb, tb, json, &out);
  write_out(NULL, out);
  return rc;
}

typedef int (*CmdFn)(int argc, char **argv);
static const struct { const char *name; CmdFn fn; } commands[] = {
  {"schedule", cmd_schedule}, {"check", cmd_check}, {"compile", cmd_compile}, {"run", cmd_run}, {"dump", cmd_dump},
  {"explain", cmd_explain}, {"diff", cmd_diff},
};

int main(int argc, char **argv) {
  static const struct option lo[] = {{"help", no_argument, 0, 'h'}, {"version", no_argument, 0, O_VERSION}, {0, 0, 0, 0}};
  opterr = 0;
  util_fault_init();
  int c;
  while ((c = getopt_long(argc, argv, "+:h", lo, NULL)) != -1) {
    switch (c) {
    case 'h': fputs(main_help, stdout); return 0;
    case O_VERSION: printf("tgc " TGC_VERSION "\n"); return 0;
    default: bad_option(c, argv);
    }
  }
  if (optind >= argc) misuse("missing COMMAND");
  const char *name = argv[optind];
  CmdFn fn = NULL;
  for (size_t i = 0; i < sizeof commands / sizeof *commands; i++) if (strcmp(commands[i].name, name) == 0) fn = commands[i].fn;
  if (!fn) misuse("unknown command '%s'", name);
  cmd = name;
  int sub_argc = argc - optind;
  char **sub_argv = argv + optind;
  optind = 0; /* full getopt re-initialisation (GNU) for the command's own options */
  UCtx *ctx = uop_ctx_new();
  if (!ctx) { fprintf(stderr, "tgc: out of memory\n"); return TG_EINTERNAL; }
  int rc;
  TgTry t;
  if (TG_TRY(t)) {
    rc = fn(sub_argc, sub_argv);
    tg_try_end(&t);
  } else {
    print_warning(ctx); /* before the error: the schedule it was made for came first */
    die_from_error();
  }
  print_warning(ctx);
  uop_ctx_free(ctx);
  return rc;
}
