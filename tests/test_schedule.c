/* test_schedule: hand-made scheduler cases (kernel counts and item kinds from tinygrad 0.11.0)
 * plus the whole oracle corpus (kernel counts and ASTs).
 *
 * The small graphs below are tinygrad 0.11.0 tensor graphs (the big_sink Tensor.kernelize passes
 * to get_kernelize_map), serialised in the tgc.graph format; the snippet that made each one and
 * what tinygrad scheduled for it are in the comment above it. */
#include <criterion/criterion.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "io/graph.h"
#include "schedule/schedule.h"

/* a, b = Tensor.empty(4, 4), Tensor.empty(4, 4); (a + b): 1 kernel (SINK) */
static const char GRAPH_ELEMENTWISE[] =
  "{\"format\":\"tgc.graph\",\"version\":1,\"producer\":\"tinygrad 0.11.0\",\"uops\":[{\"id\":0,\"op\":\"UNIQUE\""
  ",\"dtype\":\"void\",\"arg\":0},{\"id\":1,\"op\":\"DEVICE\",\"dtype\":\"void\",\"arg\":\"CPU\"},{\"id\":2,\"op\""
  ":\"BUFFER\",\"dtype\":\"float\",\"src\":[0,1],\"arg\":16},{\"id\":3,\"op\":\"RESHAPE\",\"dtype\":\"float\",\"s"
  "rc\":[2],\"arg\":[4,4]},{\"id\":4,\"op\":\"UNIQUE\",\"dtype\":\"void\",\"arg\":1},{\"id\":5,\"op\":\"BUFFER\","
  "\"dtype\":\"float\",\"src\":[4,1],\"arg\":16},{\"id\":6,\"op\":\"RESHAPE\",\"dtype\":\"float\",\"src\":[5],\"a"
  "rg\":[4,4]},{\"id\":7,\"op\":\"ADD\",\"dtype\":\"float\",\"src\":[3,6]},{\"id\":8,\"op\":\"SINK\",\"dtype\":\""
  "void\",\"src\":[7]}],\"sink\":8}";

/* a = Tensor.empty(4, 4); (a * 2).sum(axis=1) + 1: 1 kernel, the reduce fuses with both elementwise ops */
static const char GRAPH_REDUCE_FUSE[] =
  "{\"format\":\"tgc.graph\",\"version\":1,\"producer\":\"tinygrad 0.11.0\",\"uops\":[{\"id\":0,\"op\":\"UNIQUE\""
  ",\"dtype\":\"void\",\"arg\":3},{\"id\":1,\"op\":\"DEVICE\",\"dtype\":\"void\",\"arg\":\"CPU\"},{\"id\":2,\"op\""
  ":\"BUFFER\",\"dtype\":\"float\",\"src\":[0,1],\"arg\":16},{\"id\":3,\"op\":\"RESHAPE\",\"dtype\":\"float\",\"s"
  "rc\":[2],\"arg\":[4,4]},{\"id\":4,\"op\":\"VIEW\",\"dtype\":\"void\",\"src\":[1],\"arg\":{\"st\":[{\"shape\":["
  "],\"strides\":[],\"offset\":0,\"mask\":null,\"contiguous\":true}]}},{\"id\":5,\"op\":\"CONST\",\"dtype\":\"flo"
  "at\",\"src\":[4],\"arg\":2.0},{\"id\":6,\"op\":\"RESHAPE\",\"dtype\":\"float\",\"src\":[5],\"arg\":[1,1]},{\"i"
  "d\":7,\"op\":\"EXPAND\",\"dtype\":\"float\",\"src\":[6],\"arg\":[4,4]},{\"id\":8,\"op\":\"MUL\",\"dtype\":\"fl"
  "oat\",\"src\":[3,7]},{\"id\":9,\"op\":\"REDUCE_AXIS\",\"dtype\":\"float\",\"src\":[8],\"arg\":[62,[1]]},{\"id\""
  ":10,\"op\":\"RESHAPE\",\"dtype\":\"float\",\"src\":[9],\"arg\":[4]},{\"id\":11,\"op\":\"CONST\",\"dtype\":\"fl"
  "oat\",\"src\":[4],\"arg\":1.0},{\"id\":12,\"op\":\"RESHAPE\",\"dtype\":\"float\",\"src\":[11],\"arg\":[1]},{\""
  "id\":13,\"op\":\"EXPAND\",\"dtype\":\"float\",\"src\":[12],\"arg\":[4]},{\"id\":14,\"op\":\"ADD\",\"dtype\":\""
  "float\",\"src\":[10,13]},{\"id\":15,\"op\":\"SINK\",\"dtype\":\"void\",\"src\":[14]}],\"sink\":15}";

/* a = Tensor.empty(4, 4); r = a.sum(axis=1, keepdim=True); (r.expand(4, 4) + a).sum(): 2 kernels */
static const char GRAPH_EXPAND_AFTER_REDUCE[] =
  "{\"format\":\"tgc.graph\",\"version\":1,\"producer\":\"tinygrad 0.11.0\",\"uops\":[{\"id\":0,\"op\":\"UNIQUE\""
  ",\"dtype\":\"void\",\"arg\":5},{\"id\":1,\"op\":\"DEVICE\",\"dtype\":\"void\",\"arg\":\"CPU\"},{\"id\":2,\"op\""
  ":\"BUFFER\",\"dtype\":\"float\",\"src\":[0,1],\"arg\":16},{\"id\":3,\"op\":\"RESHAPE\",\"dtype\":\"float\",\"s"
  "rc\":[2],\"arg\":[4,4]},{\"id\":4,\"op\":\"REDUCE_AXIS\",\"dtype\":\"float\",\"src\":[3],\"arg\":[62,[1]]},{\""
  "id\":5,\"op\":\"EXPAND\",\"dtype\":\"float\",\"src\":[4],\"arg\":[4,4]},{\"id\":6,\"op\":\"ADD\",\"dtype\":\"f"
  "loat\",\"src\":[5,3]},{\"id\":7,\"op\":\"REDUCE_AXIS\",\"dtype\":\"float\",\"src\":[6],\"arg\":[62,[0,1]]},{\""
  "id\":8,\"op\":\"RESHAPE\",\"dtype\":\"float\",\"src\":[7],\"arg\":[]},{\"id\":9,\"op\":\"SINK\",\"dtype\":\"vo"
  "id\",\"src\":[8]}],\"sink\":9}";

/* a, b = Tensor.empty(4), Tensor.empty(4); a.assign(b + 1): 1 kernel */
static const char GRAPH_ASSIGN[] =
  "{\"format\":\"tgc.graph\",\"version\":1,\"producer\":\"tinygrad 0.11.0\",\"uops\":[{\"id\":0,\"op\":\"UNIQUE\""
  ",\"dtype\":\"void\",\"arg\":8},{\"id\":1,\"op\":\"DEVICE\",\"dtype\":\"void\",\"arg\":\"CPU\"},{\"id\":2,\"op\""
  ":\"BUFFER\",\"dtype\":\"float\",\"src\":[0,1],\"arg\":4},{\"id\":3,\"op\":\"UNIQUE\",\"dtype\":\"void\",\"arg\""
  ":9},{\"id\":4,\"op\":\"BUFFER\",\"dtype\":\"float\",\"src\":[3,1],\"arg\":4},{\"id\":5,\"op\":\"VIEW\",\"dtype"
  "\":\"void\",\"src\":[1],\"arg\":{\"st\":[{\"shape\":[],\"strides\":[],\"offset\":0,\"mask\":null,\"contiguous\""
  ":true}]}},{\"id\":6,\"op\":\"CONST\",\"dtype\":\"float\",\"src\":[5],\"arg\":1.0},{\"id\":7,\"op\":\"RESHAPE\""
  ",\"dtype\":\"float\",\"src\":[6],\"arg\":[1]},{\"id\":8,\"op\":\"EXPAND\",\"dtype\":\"float\",\"src\":[7],\"ar"
  "g\":[4]},{\"id\":9,\"op\":\"ADD\",\"dtype\":\"float\",\"src\":[4,8]},{\"id\":10,\"op\":\"ASSIGN\",\"dtype\":\""
  "float\",\"src\":[2,9]},{\"id\":11,\"op\":\"SINK\",\"dtype\":\"void\",\"src\":[10]}],\"sink\":11}";

/* x, y = Tensor.empty(4), Tensor.empty(4); ybuf = Tensor(y.uop); ya = y.assign(x + 1); xa = x.assign(ybuf + ya);
 * get_kernelize_map(UOp.sink(ya.uop, xa.uop)) raises "cycle detected in graph, kernel for UOp(Ops.BUFFER, ...) must
 * either depend on ASSIGN or BUFFER" */
static const char GRAPH_CYCLE[] =
  "{\"format\":\"tgc.graph\",\"version\":1,\"producer\":\"tinygrad 0.11.0\",\"uops\":[{\"id\":0,\"op\":\"UNIQUE\""
  ",\"dtype\":\"void\",\"arg\":15},{\"id\":1,\"op\":\"DEVICE\",\"dtype\":\"void\",\"arg\":\"CPU\"},{\"id\":2,\"op"
  "\":\"BUFFER\",\"dtype\":\"float\",\"src\":[0,1],\"arg\":4},{\"id\":3,\"op\":\"UNIQUE\",\"dtype\":\"void\",\"ar"
  "g\":14},{\"id\":4,\"op\":\"BUFFER\",\"dtype\":\"float\",\"src\":[3,1],\"arg\":4},{\"id\":5,\"op\":\"VIEW\",\"d"
  "type\":\"void\",\"src\":[1],\"arg\":{\"st\":[{\"shape\":[],\"strides\":[],\"offset\":0,\"mask\":null,\"contigu"
  "ous\":true}]}},{\"id\":6,\"op\":\"CONST\",\"dtype\":\"float\",\"src\":[5],\"arg\":1.0},{\"id\":7,\"op\":\"RESH"
  "APE\",\"dtype\":\"float\",\"src\":[6],\"arg\":[1]},{\"id\":8,\"op\":\"EXPAND\",\"dtype\":\"float\",\"src\":[7]"
  ",\"arg\":[4]},{\"id\":9,\"op\":\"ADD\",\"dtype\":\"float\",\"src\":[4,8]},{\"id\":10,\"op\":\"ASSIGN\",\"dtype"
  "\":\"float\",\"src\":[2,9]},{\"id\":11,\"op\":\"ADD\",\"dtype\":\"float\",\"src\":[2,10]},{\"id\":12,\"op\":\""
  "ASSIGN\",\"dtype\":\"float\",\"src\":[4,11]},{\"id\":13,\"op\":\"SINK\",\"dtype\":\"void\",\"src\":[10,12]}],\""
  "sink\":13}";

typedef struct Got { int kernels, nitems; char ops[8][16]; int err; char msg[1024]; char warn[512]; } Got;

/* schedule a graph given as text, or else read from path, in a fresh context */
static Got schedule_graph(const char *text, const char *path) {
  Got g = {0};
  UCtx *c = uop_ctx_new();
  TgTry t;
  if (TG_TRY(t)) {
    Graph *gr = text ? graph_read_mem("unit", text, strlen(text), ".") : graph_read_file(path);
    Schedule *S = create_schedule(gr->sink);
    g.kernels = S->nkernels;
    g.nitems = S->nitems;
    if (S->warning) snprintf(g.warn, sizeof g.warn, "%s", S->warning);
    for (int i = 0; i < S->nitems && i < 8; i++) snprintf(g.ops[i], sizeof g.ops[i], "%s", op_names[S->items[i].ast->op]);
    tg_try_end(&t);
  } else {
    g.err = tg_last_error.code;
    memcpy(g.msg, tg_last_error.msg, sizeof g.msg);
    g.msg[sizeof g.msg - 1] = 0;
  }
  uop_ctx_free(c);
  return g;
}
static Got schedule_text(const char *text) { return schedule_graph(text, NULL); }

Test(schedule, single_elementwise_is_one_kernel) {
  Got g = schedule_text(GRAPH_ELEMENTWISE);
  cr_assert_eq(g.err, 0, "%s", g.msg);
  cr_assert_eq(g.kernels, 1);
  cr_assert_eq(g.nitems, 1);
  cr_assert_str_eq(g.ops[0], "SINK");
}

Test(schedule, reduce_fuses_with_elementwise) {
  Got g = schedule_text(GRAPH_REDUCE_FUSE);
  cr_assert_eq(g.err, 0, "%s", g.msg);
  cr_assert_eq(g.kernels, 1);
}

Test(schedule, expand_after_reduce_forces_two_kernels) {
  Got g = schedule_text(GRAPH_EXPAND_AFTER_REDUCE);
  cr_assert_eq(g.err, 0, "%s", g.msg);
  cr_assert_eq(g.kernels, 2);
  cr_assert_str_eq(g.ops[0], "SINK");
  cr_assert_str_eq(g.ops[1], "SINK");
}

Test(schedule, assign_is_one_kernel) {
  Got g = schedule_text(GRAPH_ASSIGN);
  cr_assert_eq(g.err, 0, "%s", g.msg);
  cr_assert_eq(g.kernels, 1);
}

Test(schedule, assign_cycle_is_an_input_error) {
  Got g = schedule_text(GRAPH_CYCLE);
  cr_assert_eq(g.err, TG_EINPUT);
  cr_assert(strstr(g.msg, "cycle detected in graph, kernel for") != NULL, "%s", g.msg);
  cr_assert(strstr(g.msg, "must either depend on ASSIGN or BUFFER") != NULL, "%s", g.msg);
}

/* Tensor.empty(64).sum() under REDUCEOP_SPLIT_THRESHOLD=64: tinygrad's split_reduceop splits the sum
 * into a sum of 64 again, without end (it runs out of memory); tgc leaves it unsplit and says so */
Test(schedule, endless_split_is_left_unsplit_with_a_warning) {
  Got g = schedule_graph(NULL, "testdata/split_endless.graph.json");
  cr_assert_eq(g.err, 0, "%s", g.msg);
  cr_assert_eq(g.kernels, 1);
  cr_assert(strstr(g.warn, "with REDUCEOP_SPLIT_THRESHOLD=64, split_reduceop splits a reduce of 64 elements per output into itself") != NULL, "%s", g.warn);
  Got plain = schedule_text(GRAPH_REDUCE_FUSE);
  cr_assert_str_eq(plain.warn, "");
}

Test(schedule, stages_are_named) {
  int n = 0;
  while (sched_stage_names[n]) n++;
  cr_assert_eq(n, 6);
  cr_assert_str_eq(sched_stage_names[0], "merge_views");
  cr_assert_str_eq(sched_stage_names[n - 1], "create_ast");
}

/* ---- the oracle corpus: every case's kernel count and item ASTs (tinygrad's recorded schedule) ---- */
static const char *oracle_dir(void) {
  const char *o = getenv("TGC_ORACLE");
  return o && *o ? o : "../shared/oracle";
}
typedef struct Score { int n, count, ast; char first_fail[512]; } Score;
static int cmp_id(const void *a, const void *b) {
  const UOp *x = *(UOp *const *)a, *y = *(UOp *const *)b;
  return x->id < y->id ? -1 : x->id > y->id;
}
static void score_case(const char *dir, const char *name, Score *s) {
  char gp[4096], ep[4096];
  snprintf(gp, sizeof gp, "%s/%s.graph.json", dir, name);
  snprintf(ep, sizeof ep, "%s/%s.expect.json", dir, name);
  UCtx *c = uop_ctx_new();
  TgTry t;
  int count_ok = 0, ast_ok = 0;
  if (TG_TRY(t)) {
    Graph *g = graph_read_file(gp);
    Schedule *S = create_schedule(g->sink);
    Expect *E = expect_read_file(ep);
    count_ok = S->nkernels == E->kernels;
    /* one entry per KERNEL as in the expect file (shard 0 of a multi-device kernel) */
    int n = 0;
    UOp **a = arena_alloc(ga(), sizeof(UOp *) * (size_t)(S->nitems + 1)), **b = arena_alloc(ga(), sizeof(UOp *) * (size_t)(E->nitems + 1));
    for (int i = 0; i < S->nitems; i++) if (S->items[i].shard <= 0) a[n++] = S->items[i].ast;
    if (n == E->nitems) {
      for (int i = 0; i < n; i++) b[i] = E->items[i].ast;
      qsort(a, (size_t)n, sizeof *a, cmp_id);
      qsort(b, (size_t)n, sizeof *b, cmp_id);
      ast_ok = 1;
      for (int i = 0; i < n; i++) if (a[i] != b[i]) ast_ok = 0;
    }
    tg_try_end(&t);
  }
  uop_ctx_free(c);
  s->n++;
  s->count += count_ok;
  s->ast += ast_ok;
  if ((!count_ok || !ast_ok) && !s->first_fail[0]) snprintf(s->first_fail, sizeof s->first_fail, "%s", name);
}
static Score score_dir(const char *sub) {
  Score s = {0};
  char dir[4096];
  snprintf(dir, sizeof dir, "%s/%s", oracle_dir(), sub);
  DIR *d = opendir(dir);
  cr_assert_not_null(d, "cannot open %s (set TGC_ORACLE)", dir);
  struct dirent *e;
  while ((e = readdir(d))) {
    size_t l = strlen(e->d_name);
    if (l < 12 || strcmp(e->d_name + l - 11, ".graph.json")) continue;
    char name[1024];
    snprintf(name, sizeof name, "%.*s", (int)(l - 11), e->d_name);
    score_case(dir, name, &s);
  }
  closedir(d);
  return s;
}

/* floors: the scheduler matches every corpus case (count and ASTs) today; keep it that way */
Test(corpus, numeric_schedules_match, .timeout = 600) {
  Score s = score_dir("numeric");
  cr_assert_gt(s.n, 0);
  cr_assert_geq(s.count * 100, s.n * 100, "count %d/%d (first failure %s)", s.count, s.n, s.first_fail);
  cr_assert_geq(s.ast * 100, s.n * 100, "ast %d/%d (first failure %s)", s.ast, s.n, s.first_fail);
}

Test(corpus, schedule_corpus_matches, .timeout = 1800) {
  Score s = score_dir("schedule");
  cr_assert_gt(s.n, 0);
  cr_assert_geq(s.count * 100, s.n * 100, "count %d/%d (first failure %s)", s.count, s.n, s.first_fail);
  cr_assert_geq(s.ast * 100, s.n * 100, "ast %d/%d (first failure %s)", s.ast, s.n, s.first_fail);
}
