/* Unit tests for the UOp core: interning, dtypes, values, toposort order and depth. */
#include <criterion/criterion.h>
#include "uop/uop.h"
#include "io/graph.h"
#include "schedule/schedule.h"
#include <dirent.h>
#include <stdlib.h>
#include <string.h>

static UCtx *c;
static void setup(void) { c = uop_ctx_new(); }
static void teardown(void) { uop_ctx_free(c); }
TestSuite(uop, .init = setup, .fini = teardown);

Test(uop, interning_gives_one_pointer) {
  UOp *a = uop0(OP_DEFINE_VAR, dt_int, v_tuplev(3, v_str("a"), v_int(0), v_int(10)));
  UOp *b = uop0(OP_DEFINE_VAR, dt_int, v_tuplev(3, v_str("a"), v_int(0), v_int(10)));
  cr_assert_eq(a, b);
  UOp *s1 = uop2(OP_ADD, dt_int, a, uop_const_int(dt_int, 1), NULL);
  UOp *s2 = uop2(OP_ADD, dt_int, b, uop_const_int(dt_int, 1), NULL);
  cr_assert_eq(s1, s2);
  cr_assert_neq(s1, uop2(OP_ADD, dt_int, uop_const_int(dt_int, 1), a, NULL));
  cr_assert_neq(s1, uop_with_tag(s1, v_int(1)));
  cr_assert_eq(uop_with_tag(uop_with_tag(s1, v_int(1)), NULL), s1);
}

Test(uop, float_args_follow_python_equality) {
  cr_assert_eq(v_float(0.0), v_float(-0.0));
  cr_assert_neq(v_float(1.0), v_int(1));
  cr_assert_eq(v_float(__builtin_nan("")), v_float(__builtin_nan("")));
}

Test(uop, ops_table_matches_tinygrad_order) {
  cr_assert_eq(OP_NOOP, 1);
  cr_assert_eq(OP_CUSTOMI, 89);
  cr_assert_eq(op_from_name("REDUCE_AXIS"), OP_REDUCE_AXIS);
  cr_assert_eq(op_from_name("NOPE"), OP_INVALID);
  /* every name, those that share a bucket of op_from_name's table among them (MUL, CMPLT, ENDIF, CONST) */
  for (int i = 1; i < OP_COUNT; i++) cr_assert_eq(op_from_name(op_names[i]), (Op)i, "%s", op_names[i]);
  cr_assert_eq(op_from_name("MULL"), OP_INVALID);
  cr_assert_eq(op_from_name(""), OP_INVALID);
  cr_assert(op_in(OP_ADD, G_ALU) && op_in(OP_ADD, G_COMMUTATIVE) && !op_in(OP_SUB, G_COMMUTATIVE));
  cr_assert(op_in(OP_CAST, G_ELEMENTWISE) && !op_in(OP_CAST, G_ALU));
  cr_assert(op_in(OP_RECIP, G_UNSAFEPAD) && op_in(OP_POW, G_UNSAFEPAD) && !op_in(OP_SQRT, G_UNSAFEPAD));
}

Test(uop, dtype_parse_and_repr_round_trip) {
  const char *cases[] = {"float", "bool", "uchar", "bfloat16", "float.vec(4)", "float.ptr(16)",
                         "float.ptr(16, AddrSpace.LOCAL)", "float.ptr(16).vec(4)", "float.vec(4).ptr(3)",
                         "imagef((2, 4, 4))", "imageh((2, 4, 4))", "long", "ulong", "fp8e4m3", "void"};
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    const DType *d = dt_parse(cases[i]);
    cr_assert_not_null(d, "%s", cases[i]);
    cr_assert_str_eq(dt_repr(ga(), d), cases[i]);
    cr_assert_eq(dt_parse(cases[i]), d);
  }
  cr_assert_null(dt_parse("floaty"));
  cr_assert_null(dt_parse("float.ptr(1).ptr(2)"));
  cr_assert_null(dt_parse("float.vec(x)"));
  cr_assert_eq(dt_parse("float.vec(4)")->itemsize, 16);
  cr_assert_str_eq(dt_parse("float.vec(4)")->name, "float4");
  cr_assert_eq(dt_scalar_of(dt_parse("float.vec(4)")), dt_float);
  cr_assert(dt_is_float(dt_half) && dt_is_int(dt_uchar) && dt_is_unsigned(dt_uint) && !dt_is_int(dt_bool));
  cr_assert(dt_lt(dt_int, dt_float) && dt_lt(dt_bool, dt_char));
}

/* a diamond: d = {a, b, x = a+b, y = b*a, z = max(x, y)} */
static void diamond(UOp **d) {
  d[0] = uop0(OP_DEFINE_VAR, dt_int, v_tuplev(3, v_str("a"), v_int(0), v_int(9)));
  d[1] = uop0(OP_DEFINE_VAR, dt_int, v_tuplev(3, v_str("b"), v_int(0), v_int(9)));
  d[2] = uop2(OP_ADD, dt_int, d[0], d[1], NULL);
  d[3] = uop2(OP_MUL, dt_int, d[1], d[0], NULL);
  d[4] = uop2(OP_MAX, dt_int, d[2], d[3], NULL);
}

/* toposort must be parents-first in src order, like tinygrad's */
Test(uop, toposort_order) {
  UOp *d[5];
  diamond(d);
  UOp *a = d[0], *b = d[1], *x = d[2], *y = d[3], *z = d[4];
  UList t = uop_toposort(z, NULL, NULL);
  cr_assert_eq(t.n, 5);
  UOp *want[] = {a, b, x, y, z};
  for (int i = 0; i < 5; i++) cr_assert_eq(t.v[i], want[i]);
}

static bool gate_not_add(UOp *u, void *ctx) { (void)ctx; return u->op != OP_ADD; }
Test(uop, toposort_gate_stops_descent) {
  UOp *a = uop0(OP_DEFINE_VAR, dt_int, v_tuplev(3, v_str("a"), v_int(0), v_int(9)));
  UOp *x = uop2(OP_ADD, dt_int, a, a, NULL);
  UOp *y = uop2(OP_MUL, dt_int, x, a, NULL);
  UList t = uop_toposort(y, gate_not_add, NULL);
  cr_assert_eq(t.n, 2); /* a and y: x is gated out (and not emitted) */
  cr_assert_eq(t.v[0], a);
  cr_assert_eq(t.v[1], y);
}

/* uop_any and its two forms: the root counts, both sides of a diamond are seen, an absent op or
 * node is not found, and a walk inside another walk's gate answers the same */
static int npred;
static bool is_mul(const UOp *u, const void *ctx) { (void)ctx; npred++; return u->op == OP_MUL; }
static bool gate_ask(UOp *u, void *ctx) { if (u->op == OP_MAX) *(bool *)ctx = uop_has_op(u, OP_MUL, OP_MUL); return true; }
Test(uop, graph_queries_walk_to_the_first_match) {
  UOp *d[5];
  diamond(d);
  UOp *b = d[1], *x = d[2], *y = d[3], *z = d[4];
  cr_assert(uop_has_op(z, OP_MAX, OP_MAX));        /* the root itself */
  cr_assert(uop_has_op(z, OP_CONST, OP_MUL));      /* the diamond's second side */
  cr_assert_not(uop_has_op(z, OP_CONST, OP_SUB));
  cr_assert_not(uop_has_op(x, OP_MUL, OP_MUL));
  cr_assert(uop_in_graph(z, b) && uop_in_graph(y, y));
  cr_assert_not(uop_in_graph(x, y));
  npred = 0;
  cr_assert(uop_any(z, is_mul, NULL));
  cr_assert_eq(npred, 5, "pred asked %d times: z, x, a, b, y in toposort order, y the match", npred);
  npred = 0;
  cr_assert(uop_any(y, is_mul, NULL));
  cr_assert_eq(npred, 1, "the root matches: its sources are not walked (asked %d times)", npred);
  bool inner = false;
  uop_walk(z, gate_ask, &inner);
  cr_assert(inner);
  /* among nodes newer than x only (z and y): nothing below x, the oldest of z's sources, is asked */
  npred = 0;
  cr_assert(uop_any_newer(z, x->id, is_mul, NULL));
  cr_assert_eq(npred, 2, "asked %d times: z, then y (x and below are older)", npred);
  npred = 0;
  cr_assert_not(uop_any_newer(z, y->id, is_mul, NULL));
  cr_assert_eq(npred, 1, "only z is newer than y (asked %d times)", npred);
}

Test(uop, toposort_million_node_chain_is_iterative) {
  UOp *u = uop_const_int(dt_int, 0);
  for (int i = 0; i < 1000000; i++) u = uop1(OP_NEG, dt_int, u, NULL);
  UList t = uop_toposort(u, NULL, NULL);
  cr_assert_eq(t.n, 1000001);
  cr_assert_eq(t.v[t.n - 1], u);
}

Test(uop, map_keeps_insertion_order_across_deletes) {
  Map m;
  map_init(&m, ga());
  UOp *n[100];
  for (int i = 0; i < 100; i++) { n[i] = uop_const_int(dt_int, i); umap_put(&m, n[i], n[i]); }
  for (int i = 0; i < 100; i += 2) cr_assert(umap_del(&m, n[i]));
  int k = 1;
  MAP_EACH(&m, e) { cr_assert_eq(e->key, n[k]); k += 2; }
  cr_assert_eq(k, 101);
  for (int i = 0; i < 100; i++) cr_assert_eq(umap_has(&m, n[i]), i % 2 == 1);
}

Test(uop, errors_unwind_to_the_handler) {
  TgTry t;
  volatile int reached = 0;
  if (TG_TRY(t)) {
    tg_fail(TG_EINPUT, "row %d: bad", 3);
    reached = 1;
  }
  cr_assert_eq(reached, 0);
  cr_assert_eq(tg_last_error.code, TG_EINPUT);
  cr_assert_str_eq(tg_last_error.msg, "row 3: bad");
}

/* the intern tables grow by rehashing each entry with its set's hash function: every node, value,
 * view and ShapeTracker made before the tables grew is still the one a constructor returns */
Test(uop, interning_survives_table_growth) {
  enum { N = 50000 };
  UOp **us = malloc(sizeof(UOp *) * N);
  const Value **vs = malloc(sizeof(Value *) * N);
  const ShapeTracker **ss = malloc(sizeof(ShapeTracker *) * N);
  UOp *x = uop0(OP_DEFINE_VAR, dt_int, v_tuplev(3, v_str("x"), v_int(0), v_int(10)));
  for (int i = 0; i < N; i++) {
    vs[i] = v_tuplev(2, v_int(i), v_str(i % 2 ? "odd" : "even"));
    us[i] = uop2(OP_ADD, dt_int, x, uop_const_int(dt_int, 1000 + i), vs[i]);
    Sint sh = si(i + 1), st = si(1);
    const View *v = view_intern(1, &sh, &st, si(0), NULL, true);
    ss[i] = st_intern(1, &v);
  }
  cr_assert_gt(c->uops.cap, 2 * 1024, "the uop table grew");
  for (int i = 0; i < N; i++) {
    cr_assert_eq(v_tuplev(2, v_int(i), v_str(i % 2 ? "odd" : "even")), vs[i]);
    cr_assert_eq(uop2(OP_ADD, dt_int, x, uop_const_int(dt_int, 1000 + i), vs[i]), us[i]);
    Sint sh = si(i + 1), st = si(1);
    const View *v = view_intern(1, &sh, &st, si(0), NULL, true);
    cr_assert_eq(st_intern(1, &v), ss[i]);
  }
  free(us), free(vs), free(ss);
}

/* a BigBuf handed to an arena is one of its chunks: popped with what came after the mark, freed
 * with the arena (ASan/valgrind see any leak or double free), and later allocations still work */
Test(uop, bigbuf_taken_by_arena) {
  Arena a = {0};
  (void)arena_alloc(&a, 100);
  ArenaMark mk = arena_mark(&a);
  BigBuf b = {0};
  for (int i = 0; i < 20000; i++) bigbuf_put(&b, "0123456789", 10);
  cr_assert_eq(b.n, 200000);
  char *t = arena_take(&a, &b);
  cr_assert_null(b.c);
  cr_assert_eq(strlen(t), 200000);
  cr_assert_eq(strncmp(t + 199990, "0123456789", 10), 0);
  char *after = arena_alloc(&a, 64);
  memset(after, 1, 64);
  arena_pop(&a, mk);
  BigBuf b2 = {0};
  bigbuf_put(&b2, "x", 1);
  cr_assert_str_eq(arena_take(&a, &b2), "x");
  BigBuf b3 = {0};
  bigbuf_put(&b3, "leftover", 8);
  bigbuf_free(&b3);
  arena_free(&a);
}

/* an arena's bytes count where it shares them: the peak is of the sum at one moment (a popped
 * scratch arena's bytes do not add to what the other holds later), and a zeroed arena counts alone */
Test(uop, memuse_peak_is_of_the_sum_at_one_moment) {
  Arena own = {0};
  (void)arena_alloc(&own, 100);
  cr_assert_eq(own.own.used, 112); /* 16-byte granules */
  ArenaMark m0 = arena_mark(&own);
  (void)arena_alloc(&own, 48);
  arena_pop(&own, m0);
  cr_assert_eq(own.own.used, 112);
  cr_assert_eq(memuse_peak(&own.own), 160);
  arena_free(&own);
  cr_assert_eq(own.own.used, 0);

  MemUse u = {0};
  Arena a = {0}, b = {0};
  arena_share(&a, &u);
  arena_share(&b, &u);
  (void)arena_alloc(&a, 1000);       /* a: 1008 */
  ArenaMark mb = arena_mark(&b);
  (void)arena_alloc(&b, 3000);       /* b: 3008, sum 4016 */
  arena_pop(&b, mb);
  (void)arena_alloc(&a, 2000);       /* a: 3008, sum 3008 + b's kept empty chunk */
  cr_assert_eq(u.used, 3008);
  cr_assert_eq(memuse_peak(&u), 4016, "peak %zu: the sum of the arenas' own peaks would be 6016", memuse_peak(&u));
  PairMap pm = {0};
  pm.use = &u;
  for (uintptr_t i = 1; i <= 100; i++) pairmap_put(&pm, (void *)i, NULL, i * 0x9E3779B97F4A7C15ull, NULL);
  cr_assert_eq(u.used, 3008 + pairmap_bytes(&pm));
  pairmap_free(&pm);
  arena_free(&a);
  arena_free(&b);
  cr_assert_eq(u.used, 0);
}

/* after a schedule, the context's count is what it holds: its arenas' bytes, the intern sets and
 * memos, and the walk stack (kernelize's pass arenas, freed by then, counted themselves out) */
Test(uop, context_memuse_counts_what_it_holds) {
  Graph *g = graph_read_file("testdata/models/mnist_mlp_train.graph.json");
  Schedule *s = create_schedule(g->sink);
  cr_assert_gt(s->nkernels, 0);
  size_t held = 0;
  const Arena *arenas[] = {&c->arena, &c->nodes, &c->scratch};
  for (size_t i = 0; i < sizeof arenas / sizeof *arenas; i++)
    for (const ArenaChunk *k = arenas[i]->head; k; k = k->prev) held += k->off;
  const ISet *sets[] = {&c->uops, &c->values, &c->views, &c->sts, &c->metas};
  for (size_t i = 0; i < sizeof sets / sizeof *sets; i++) held += iset_bytes(sets[i]);
  for (size_t i = 0; i < sizeof c->memo / sizeof c->memo[0]; i++) held += pairmap_bytes(&c->memo[i]);
  held += c->walk_cap * 2 * sizeof(void *); /* the walk stack's entries: a node and a flag */
  held += c->byid_cap * sizeof *c->byid;
  cr_assert_eq(c->mem.used, held, "counted %zu, held %zu", c->mem.used, held);
  cr_assert_geq(memuse_peak(&c->mem), held);
}

/* issue 4's memory target on the bundled models (every testdata/models graph, as make bench
 * takes them), measured as make bench measures it (the file's text held
 * outside the context): a schedule's peak under 20x the file's bytes. The smallest (4 KB) is the
 * one a fixed cost shows in: tables start small and are sized from the file */
Test(uop, bundled_models_peak_under_20x_their_file) {
  DIR *dir = opendir("testdata/models");
  cr_assert(dir, "testdata/models unreadable");
  int nmodels = 0;
  for (struct dirent *de; (de = readdir(dir));) {
    size_t len = strlen(de->d_name);
    if (len < 11 || strcmp(de->d_name + len - 11, ".graph.json") != 0) continue;
    nmodels++;
    Arena text_arena = {0};
    const char *path = arena_printf(ga(), "testdata/models/%s", de->d_name);
    size_t n;
    char *text = read_file(&text_arena, path, &n);
    cr_assert(text, "%s unreadable", path);
    UCtx *own = uop_ctx_new();
    Graph *g = graph_read_mem(path, text, n, "testdata/models");
    Schedule *s = create_schedule(g->sink);
    cr_assert_gt(s->nkernels, 0);
    size_t peak = memuse_peak(&own->mem);
    uop_ctx_free(own);
    uctx = c;
    arena_free(&text_arena);
    cr_expect_lt(peak, 20 * n, "%s: peak %zu bytes, %.1fx its %zu", de->d_name, peak, (double)peak / (double)n, n);
  }
  closedir(dir);
  cr_assert_geq(nmodels, 6, "the bench's models: %d found", nmodels);
}
