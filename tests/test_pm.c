/* Unit tests for lib/rewrite: UPat matching (binding order, dtype/arg/length rules, any/repeat/
 * permutations, early reject), PatternMatcher.rewrite, graph_rewrite (top-down, bottom-up, both,
 * fixed points, loop checks, RewriteNotReady), graph_rewrite_map (input_map, metadata) and
 * substitute. Every expectation was obtained by running the same pattern in tinygrad 0.11.0; the
 * Python is quoted next to it. Graph nodes are NOOPs labelled by their str arg:
 *   def N(name, *src): return UOp(Ops.NOOP, dtypes.void, tuple(src), name) */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include "rewrite/pm.h"

static UCtx *c;
static void setup(void) { c = uop_ctx_new(); pm_init(); }
static void teardown(void) { uop_ctx_free(c); }
TestSuite(pm, .init = setup, .fini = teardown);

static UOp *N(const char *name, int n, ...) {
  UOp *s[8];
  va_list ap;
  va_start(ap, n);
  for (int i = 0; i < n; i++) s[i] = va_arg(ap, UOp *);
  va_end(ap);
  return uop_new(OP_NOOP, dt_void, n, s, v_str(name), NULL);
}
static const char *lab(UOp *u) { return u->op == OP_NOOP && u->arg->kind == V_STR ? u->arg->s : op_names[u->op]; }

/* a log the callbacks append labels to: "a,b,c" */
typedef struct Log { char s[4096]; int count; } Log;
static void logf_(Log *l, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void logf_(Log *l, const char *fmt, ...) {
  size_t n = strlen(l->s);
  if (n) l->s[n++] = ',';
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(l->s + n, sizeof l->s - n, fmt, ap);
  va_end(ap);
}
/* labels of root's toposort */
static const char *topo_labels(UOp *root, char *buf, size_t cap) {
  UList t = uop_toposort(root, NULL, NULL);
  buf[0] = 0;
  for (int i = 0; i < t.n; i++) {
    size_t n = strlen(buf);
    snprintf(buf + n, cap - n, "%s%s", i ? "," : "", lab(t.v[i]));
  }
  return buf;
}
/* a map's entries in order: "(key,val),..." */
static const char *map_labels(const UMap *m, char *buf, size_t cap) {
  buf[0] = 0;
  MAP_EACH(m, e) { size_t n = strlen(buf); snprintf(buf + n, cap - n, "%s(%s,%s)", n ? "," : "", lab(e->key), lab(e->val)); }
  return buf;
}

static UOp *hit(const Match *m, void *ctx) { return N("hit", 0); }
static bool rw1(const UPat *p, UOp *u) {
  Rule r[] = {{p, hit}};
  PM *pm = pm_new(r, 1);
  return pm_rewrite(pm, u, NULL) != NULL;
}

/* ---- node-level matching ---- */

Test(pm, dtype_and_op_sets) {
  /* p = UPat(Ops.CONST, name="x", dtype=dtypes.float)
   * m(p, UOp.const(dtypes.float, 1.0)) -> True; m(p, UOp.const(dtypes.int, 1)) -> False */
  const UPat *p = UP(.ops = OPS(OP_CONST), .name = "x", .dts = DTS(SC_FLOAT));
  cr_assert(rw1(p, uop_const_float(dt_float, 1.0)));
  cr_assert(!rw1(p, uop_const_int(dt_int, 1)));
  /* dtype.scalar() in set: a float.vec(4) matches dtype=dtypes.float; a float.ptr() does not
   * m(UPat(Ops.DEFINE_GLOBAL, name="x", dtype=dtypes.float), UOp(Ops.DEFINE_GLOBAL, dtypes.float.ptr(), arg=0)) -> False */
  cr_assert(rw1(UP(.ops = OPS(OP_VECTORIZE), .dts = DTS(SC_FLOAT)),
                uop_new(OP_VECTORIZE, dt_vec(dt_float, 2), 2, (UOp *[]){uop_const_float(dt_float, 1), uop_const_float(dt_float, 2)}, NULL, NULL)));
  cr_assert(!rw1(UP(.ops = OPS(OP_DEFINE_GLOBAL), .name = "x", .dts = DTS(SC_FLOAT)), uop0(OP_DEFINE_GLOBAL, dt_ptr(dt_float, -1, AS_GLOBAL), v_int(0))));
  /* UPat((Ops.CONST, Ops.CAST)) and GroupOp sets, GroupOp.All-{...} */
  const UPat *set = UP(.ops = OPS(OP_CONST, OP_CAST));
  cr_assert(rw1(set, uop_const_int(dt_int, 3)));
  cr_assert(rw1(set, uop1(OP_CAST, dt_float, uop_const_int(dt_int, 3), NULL)));
  cr_assert(!rw1(set, N("a", 0)));
  cr_assert(rw1(UP(.groups = G_ALU), uop2(OP_ADD, dt_int, uop_const_int(dt_int, 1), uop_const_int(dt_int, 2), NULL)));
  cr_assert(!rw1(UP(.all_ops = true, .except = OPS(OP_NOOP, OP_SINK)), N("a", 0)));
  cr_assert(rw1(UP(.all_ops = true, .except = OPS(OP_SINK)), N("a", 0)));
  /* p = UPat(Ops.VECTORIZE, dtype=dtypes.float.vec(2), name='x'): float.vec(2) -> True, float.vec(4) -> False,
   * int.vec(2) -> False */
  UOp *f1 = uop_const_float(dt_float, 1), *i1 = uop_const_int(dt_int, 1);
  const UPat *v2 = UP(.ops = OPS(OP_VECTORIZE), .dts = DTS(SC_FLOAT), .dtcount = 2, .name = "x");
  cr_assert(rw1(v2, uop_new(OP_VECTORIZE, dt_vec(dt_float, 2), 2, (UOp *[]){f1, f1}, NULL, NULL)));
  cr_assert(!rw1(v2, uop_new(OP_VECTORIZE, dt_vec(dt_float, 4), 4, (UOp *[]){f1, f1, f1, f1}, NULL, NULL)));
  cr_assert(!rw1(v2, uop_new(OP_VECTORIZE, dt_vec(dt_int, 2), 2, (UOp *[]){i1, i1}, NULL, NULL)));
  /* dtypes.ints / floats families */
  cr_assert(rw1(UP(.ops = OPS(OP_CONST), .dtclass = DTC_INTS), uop_const_int(dt_uchar, 3)));
  cr_assert(!rw1(UP(.ops = OPS(OP_CONST), .dtclass = DTC_INTS), uop_const_int(dt_bool, 1)));
  cr_assert(rw1(UP(.ops = OPS(OP_CONST), .dtclass = DTC_INT_OR_BOOL), uop_const_int(dt_bool, 1)));
  cr_assert(rw1(UP(.ops = OPS(OP_CONST), .dtclass = DTC_FLOATS), uop_const_float(dt_half, 3)));
  cr_assert(!rw1(UP(.ops = OPS(OP_CONST), .dtclass = DTC_FLOATS), uop_const_int(dt_int, 3)));
}

Test(pm, arg_uses_python_equality) {
  /* p = UPat((Ops.CONST, Ops.VCONST), name="x", arg=0)
   * int 0 -> True, float 0.0 -> True, bool False -> True, int 1 -> False, VCONST (0,0) -> False */
  const UPat *p = UP(.ops = OPS(OP_CONST, OP_VCONST), .name = "x", .has_cval = true, .cval = 0);
  cr_assert(rw1(p, uop_const_int(dt_int, 0)));
  cr_assert(rw1(p, uop_const_float(dt_float, 0.0)));
  cr_assert(rw1(p, uop_const_int(dt_bool, 0)));
  cr_assert(!rw1(p, uop_const_int(dt_int, 1)));
  cr_assert(!rw1(p, uop0(OP_VCONST, dt_vec(dt_int, 2), v_tuplev(2, v_int(0), v_int(0)))));
  /* p = UPat(Ops.NOOP, name="x", arg=Ops.ADD): Ops.ADD -> True, int(Ops.ADD)=62 -> True, Ops.MUL -> False */
  const UPat *q = UP(.ops = OPS(OP_NOOP), .name = "x", .has_argop = true, .argop = OP_ADD);
  cr_assert(rw1(q, uop0(OP_NOOP, dt_void, v_ops(OP_ADD))));
  cr_assert(rw1(q, uop0(OP_NOOP, dt_void, v_int(62))));
  cr_assert(!rw1(q, uop0(OP_NOOP, dt_void, v_ops(OP_MUL))));
  /* p = UPat(Ops.NOOP, name="x", arg=1): True -> True, Ops.NOOP (==1) -> True, (1,) -> False, 1.0 -> True */
  const UPat *o = UP(.ops = OPS(OP_NOOP), .name = "x", .has_cval = true, .cval = 1);
  cr_assert(rw1(o, uop0(OP_NOOP, dt_void, v_bool(true))));
  cr_assert(rw1(o, uop0(OP_NOOP, dt_void, v_ops(OP_NOOP))));
  cr_assert(!rw1(o, uop0(OP_NOOP, dt_void, v_tuplev(1, v_int(1)))));
  cr_assert(rw1(o, uop0(OP_NOOP, dt_void, v_float(1.0))));
}

Test(pm, src_lengths) {
  UOp *a = N("a", 0), *b = N("b", 0), *c3 = N("c", 0);
  UOp *two = N("t", 2, a, b), *three = N("t", 3, a, b, c3), *none = N("t", 0);
  /* UPat(Ops.NOOP, src=(UPat(), UPat())) is strict: 2 srcs only */
  const UPat *strict = UP(.ops = OPS(OP_NOOP), SRC(UP(), UP()));
  cr_assert(rw1(strict, two));
  cr_assert(!rw1(strict, three));
  /* allow_any_len=True: at least 2 */
  const UPat *any = UP(.ops = OPS(OP_NOOP), SRC(UP(), UP()), .allow_any_len = true);
  cr_assert(rw1(any, three));
  cr_assert(!rw1(any, N("t", 1, a)));
  /* src=() matches only no srcs */
  cr_assert(rw1(UP(.ops = OPS(OP_NOOP), .srcmode = PS_TUPLE, .nsrc = 0), none));
  cr_assert(!rw1(UP(.ops = OPS(OP_NOOP), .srcmode = PS_TUPLE, .nsrc = 0), two));
  /* src=None matches anything */
  cr_assert(rw1(UP(.ops = OPS(OP_NOOP)), three));
}

Test(pm, duplicate_names_must_be_the_same_node) {
  /* UPat(Ops.ADD, src=(UPat(Ops.CONST, name="y"), UPat(Ops.CONST, name="y"))): c1+c1 yes, c1+c2 no */
  const UPat *p = UP(.ops = OPS(OP_ADD), SRC(UP(.ops = OPS(OP_CONST), .name = "y"), UP(.ops = OPS(OP_CONST), .name = "y")));
  UOp *c1 = uop_const_int(dt_int, 1), *c2 = uop_const_int(dt_int, 2);
  cr_assert(rw1(p, uop2(OP_ADD, dt_int, c1, c1, NULL)));
  cr_assert(!rw1(p, uop2(OP_ADD, dt_int, c1, c2, NULL)));
  /* a name on the root and below: UPat(Ops.NOOP, name="x", src=(UPat(name="x"),)) never matches a DAG */
  cr_assert(!rw1(UP(.ops = OPS(OP_NOOP), .name = "x", SRC(UP(.name = "x"))), N("a", 1, N("b", 0))));
  Match m;
  UOp *r = uop2(OP_ADD, dt_int, c1, c1, NULL);
  cr_assert(upat_match(p, r, &m));
  cr_assert_eq(m_get(&m, "y"), c1);
  cr_assert_null(m_opt(&m, "z"));
}

/* ---- binding enumeration order ---- */
static UOp *mxy_, *mzw_;
static const char *lab2(UOp *u) { return u == mxy_ ? "mxy" : u == mzw_ ? "mzw" : lab(u); }
static UOp *record(const Match *m, void *ctx) {
  /* names in sorted order, as the Python quote prints them */
  const char *names[16]; int n = m->n;
  for (int i = 0; i < n; i++) names[i] = m->names[i];
  for (int i = 0; i < n; i++) for (int j = i + 1; j < n; j++) if (strcmp(names[j], names[i]) < 0) { const char *t = names[i]; names[i] = names[j]; names[j] = t; }
  char buf[256] = "";
  for (int i = 0; i < n; i++) { size_t l = strlen(buf); snprintf(buf + l, sizeof buf - l, "%s%s=%s", i ? " " : "", names[i], lab2(m_get(m, names[i]))); }
  logf_(ctx, "(%s)", buf);
  return NULL;
}
static const char *enum_all(const UPat *p, UOp *u, Log *l) {
  Rule r[] = {{p, record}};
  memset(l, 0, sizeof *l);
  cr_assert_null(pm_rewrite(pm_new(r, 1), u, l));
  return l->s;
}

Test(pm, permutation_order_matches_tinygrad) {
  UOp *x = N("x", 0), *y = N("y", 0), *z = N("z", 0), *w = N("w", 0);
  mxy_ = uop2(OP_MUL, dt_void, x, y, NULL); mzw_ = uop2(OP_MUL, dt_void, z, w, NULL);
  UOp *root = uop2(OP_ADD, dt_void, mxy_, mzw_, NULL);
  Log l;
  /* P = UPat(Ops.ADD, src=[UPat(Ops.MUL, src=[UPat.var("a"), UPat.var("b")], name="m"), UPat.var("c")])
   * PatternMatcher([(P, cb)]).rewrite(root) records (compiled and interpreted agree):
   * (a=x b=y c=mzw m=mxy), (a=y b=x c=mzw m=mxy), (a=z b=w c=mxy m=mzw), (a=w b=z c=mxy m=mzw) */
  const UPat *P = UP(.ops = OPS(OP_ADD), SRC_PERM(UP(.ops = OPS(OP_MUL), SRC_PERM(UVAR("a"), UVAR("b")), .name = "m"), UVAR("c")));
  cr_assert_str_eq(enum_all(P, root, &l), "(a=x b=y c=mzw m=mxy),(a=y b=x c=mzw m=mxy),(a=z b=w c=mxy m=mzw),(a=w b=z c=mxy m=mzw)");
  /* P2 = UPat(Ops.ADD, src=(UPat(Ops.MUL, src=[a, b]), UPat(Ops.MUL, src=[c, d]))): position 0 varies slowest */
  const UPat *P2 = UP(.ops = OPS(OP_ADD), SRC(UP(.ops = OPS(OP_MUL), SRC_PERM(UVAR("a"), UVAR("b"))), UP(.ops = OPS(OP_MUL), SRC_PERM(UVAR("c"), UVAR("d")))));
  cr_assert_str_eq(enum_all(P2, root, &l), "(a=x b=y c=z d=w),(a=x b=y c=w d=z),(a=y b=x c=z d=w),(a=y b=x c=w d=z)");
  /* P3 = UPat(Ops.ADD, src=(UPat.any(UPat(Ops.MUL, name="m", src=(UPat.var("a"), UPat())),
   *                                  UPat(Ops.MUL, name="m", src=(UPat(), UPat.var("a")))), UPat.var("c"))) */
  const UPat *P3 = UP(.ops = OPS(OP_ADD), SRC(UP_ANY(UP(.ops = OPS(OP_MUL), .name = "m", SRC(UVAR("a"), UP())),
                                                     UP(.ops = OPS(OP_MUL), .name = "m", SRC(UP(), UVAR("a")))), UVAR("c")));
  cr_assert_str_eq(enum_all(P3, root, &l), "(a=x c=mzw m=mxy),(a=y c=mzw m=mxy)");
  /* P4 = UPat(Ops.WHERE, src=[a, b, c]) on WHERE(x, y, z): itertools.permutations order */
  const UPat *P4 = UP(.ops = OPS(OP_WHERE), SRC_PERM(UVAR("a"), UVAR("b"), UVAR("c")));
  cr_assert_str_eq(enum_all(P4, uop3(OP_WHERE, dt_void, x, y, z, NULL), &l),
                   "(a=x b=y c=z),(a=x b=z c=y),(a=y b=x c=z),(a=z b=x c=y),(a=y b=z c=x),(a=z b=y c=x)");
  /* UPat(Ops.ADD, src=[UPat.var("x"), UPat.var("x")]).src has one entry: all_same, no permutations */
  cr_assert_str_eq(enum_all(UP(.ops = OPS(OP_ADD), SRC_PERM(UVAR("x"), UVAR("x"))), uop2(OP_ADD, dt_void, x, x, NULL), &l), "(x=x)");
  /* repeat: UPat(Ops.ADD, src=UPat(Ops.MUL, src=[UPat.var("a"), UPat()])) -> a from each MUL, all combos */
  const UPat *P5 = UP(.ops = OPS(OP_ADD), SRC_REPEAT(UP(.ops = OPS(OP_MUL), SRC_PERM(UVAR("a"), UP()))));
  cr_assert_str_eq(enum_all(P5, uop2(OP_ADD, dt_void, mxy_, mxy_, NULL), &l), "(a=x),(a=y)");
}

/* a callback that says no to its first binding: the next binding is tried, then the next rule */
static int calls;
static UOp *no_then_c(const Match *m, void *ctx) { return calls++ == 0 ? NULL : m_get(m, "c"); }
static UOp *self_cb(const Match *m, void *ctx) { calls++; return m->root; }
static UOp *second_rule(const Match *m, void *ctx) { return N("second", 0); }
Test(pm, callbacks_none_tries_next_binding_self_tries_next_rule) {
  UOp *x = N("x", 0), *y = N("y", 0);
  UOp *root = uop2(OP_ADD, dt_void, x, y, NULL);
  const UPat *p = UP(.ops = OPS(OP_ADD), SRC_PERM(UVAR("c"), UVAR("d")));
  /* fn returns None for c=x, then c=y: rewrite -> y */
  Rule r1[] = {{p, no_then_c}, {p, second_rule}};
  calls = 0;
  cr_assert_eq(pm_rewrite(pm_new(r1, 2), root, NULL), y);
  /* fn returns the node itself on its first binding: `for match in p.match(...)` stops there,
   * rewrite() skips it and moves to the next rule */
  Rule r2[] = {{p, self_cb}, {p, second_rule}};
  calls = 0;
  UOp *r = pm_rewrite(pm_new(r2, 2), root, NULL);
  cr_assert_str_eq(lab(r), "second");
  cr_assert_eq(calls, 1);
  /* pm_concat keeps rule order: second_rule first */
  Rule ra[] = {{p, second_rule}}, rb[] = {{p, self_cb}};
  PM *both[2] = {pm_new(ra, 1), pm_new(rb, 1)};
  calls = 0;
  cr_assert_str_eq(lab(pm_rewrite(pm_concat(2, both), root, NULL)), "second");
  cr_assert_eq(calls, 0);
}

Test(pm, early_reject) {
  /* PatternMatcher([(UPat(Ops.SINK, src=UPat(Ops.CONST)), fn)]).rewrite(UOp.sink()) -> None
   * (early_reject={CONST} is not a subset of {}), but UPat.match(UOp.sink(), {}) -> [{}] */
  const UPat *p = UP(.ops = OPS(OP_SINK), SRC_REPEAT(UP(.ops = OPS(OP_CONST))));
  UOp *empty = uop_sink(0, NULL, NULL);
  cr_assert(!rw1(p, empty));
  Match m;
  cr_assert(upat_match(p, empty, &m));
  UOp *c1 = uop_const_int(dt_int, 1);
  cr_assert(rw1(p, uop_sink(2, (UOp *[]){c1, c1}, NULL)));
  cr_assert(!rw1(p, uop_sink(2, (UOp *[]){c1, N("a", 0)}, NULL)));
  /* custom_early_reject overrides: UPat(Ops.SINK, custom_early_reject={Ops.NOOP}) */
  const UPat *q = UP(.ops = OPS(OP_SINK), .early_reject = OPS(OP_NOOP));
  cr_assert(!rw1(q, uop_sink(1, (UOp *[]){c1}, NULL)));
  cr_assert(rw1(q, uop_sink(1, (UOp *[]){N("a", 0)}, NULL)));
}

/* ---- graph_rewrite ---- */
static UOp *log_all(const Match *m, void *ctx) { logf_(ctx, "%s", lab(m_get(m, "x"))); return NULL; }
static const Rule log_rules[] = {
  // log every node the matcher is asked about
  { UP(.all_ops = true, .name = "x"), log_all },
};
static UOp *rename_cb(const Match *m, void *ctx) {
  UOp *x = m_get(m, "x");
  logf_(ctx, "%s", lab(x));
  if (strlen(x->arg->s) >= 2) return NULL;
  return uop_replace(x, NULL, -1, NULL, v_str(arena_printf(ga(), "%s'", x->arg->s)), NULL);
}
static const Rule rename_rules[] = {
  // NOOP "a" -> NOOP "a'" (names of length 1 only)
  { UP(.ops = OPS(OP_NOOP), .name = "x"), rename_cb },
};

Test(pm, graph_rewrite_visit_order) {
  /* c = N("c"); a = N("a", c); b = N("b", c); s = UOp.sink(a, b) */
  UOp *cc = N("c", 0), *a = N("a", 1, cc), *b = N("b", 1, cc);
  UOp *s = uop_sink(2, (UOp *[]){a, b}, NULL);
  PM *pm = pm_new(log_rules, RULES_N(log_rules));
  Log l = {0};
  /* graph_rewrite(s, pm, rec) -> ['c', 'a', 'b', 'SINK'] */
  cr_assert_eq(graph_rewrite(s, pm, &l, false, NULL), s);
  cr_assert_str_eq(l.s, "c,a,b,SINK");
  /* graph_rewrite(s, pm, rec, bottom_up=True) -> ['SINK', 'a', 'c', 'b'] */
  memset(&l, 0, sizeof l);
  graph_rewrite(s, pm, &l, true, NULL);
  cr_assert_str_eq(l.s, "SINK,a,c,b");
  /* graph_rewrite(s, pm, rec, bpm=pm) -> ['SINK', 'a', 'c', 'c', 'a', 'b', 'b', 'SINK'] */
  memset(&l, 0, sizeof l);
  graph_rewrite(s, pm, &l, false, pm);
  cr_assert_str_eq(l.s, "SINK,a,c,c,a,b,b,SINK");
}

Test(pm, graph_rewrite_rebuilds_parents) {
  UOp *cc = N("c", 0), *a = N("a", 1, cc), *b = N("b", 1, cc);
  UOp *s = uop_sink(2, (UOp *[]){a, b}, NULL);
  PM *pm = pm_new(rename_rules, RULES_N(rename_rules));
  Log l = {0};
  char buf[256];
  /* graph_rewrite(s, ren, rec) -> rec ['c', "c'", 'a', "a'", 'b', "b'"], toposort ["c'", "a'", "b'", 'SINK'] */
  UOp *r = graph_rewrite(s, pm, &l, false, NULL);
  cr_assert_str_eq(l.s, "c,c',a,a',b,b'");
  cr_assert_str_eq(topo_labels(r, buf, sizeof buf), "c',a',b',SINK");
  /* bottom_up=True -> rec ['a', "a'", 'c', "c'", "a'", 'b', "b'", "b'"] */
  memset(&l, 0, sizeof l);
  UOp *r2 = graph_rewrite(s, pm, &l, true, NULL);
  cr_assert_str_eq(l.s, "a,a',c,c',a',b,b',b'");
  cr_assert_eq(r2, r);
}

static UOp *count_up(const Match *m, void *ctx) {
  UOp *x = m_get(m, "x");
  int v = atoi(x->arg->s);
  return v < 5 ? uop_replace(x, NULL, -1, NULL, v_str(arena_printf(ga(), "%d", v + 1)), NULL) : NULL;
}
static UOp *flip(const Match *m, void *ctx) {
  UOp *x = m_get(m, "x");
  return uop_replace(x, NULL, -1, NULL, v_str(strcmp(x->arg->s, "p") == 0 ? "q" : "p"), NULL);
}
static UOp *never(const Match *m, void *ctx) { return NULL; }
Test(pm, fixed_points_and_loop_checks) {
  char buf[64];
  /* graph_rewrite(N("1", N("3")), chain, bottom_up=True) -> toposort ['5', '5'] */
  Rule chain[] = {{UP(.ops = OPS(OP_NOOP), .name = "x"), count_up}};
  UOp *r = graph_rewrite(N("1", 1, N("3", 0)), pm_new(chain, 1), NULL, true, NULL);
  cr_assert_str_eq(topo_labels(r, buf, sizeof buf), "5,5");
  /* p <-> q: bottom_up -> "infinite loop in fixed_point_rewrite";
   * top-down -> "infinite loop in graph_rewrite (stack too big)" */
  Rule loop[] = {{UP(.ops = OPS(OP_NOOP), .name = "x"), flip}};
  PM *lp = pm_new(loop, 1);
  TgTry t;
  if (TG_TRY(t)) { graph_rewrite(N("p", 0), lp, NULL, true, NULL); tg_try_end(&t); cr_assert_fail("no error"); }
  cr_assert(strstr(tg_last_error.msg, "infinite loop in fixed_point_rewrite"));
  if (TG_TRY(t)) { graph_rewrite(N("p", 0), lp, NULL, false, NULL); tg_try_end(&t); cr_assert_fail("no error"); }
  cr_assert(strstr(tg_last_error.msg, "infinite loop in graph_rewrite (stack too big)"));
}

Test(pm, stack_limit_is_tinygrads) {
  /* a NOOP chain of 199999 nodes rewrites; 200000 nodes -> "infinite loop in graph_rewrite (stack too big)"
   * u = N("0"); for i in range(1, total): u = N(str(i), u); graph_rewrite(u, PatternMatcher([(UPat(Ops.CONST), lambda: None)])) */
  Rule nv[] = {{UP(.ops = OPS(OP_CONST)), never}};
  PM *pm = pm_new(nv, 1);
  UOp *u = N("0", 0);
  for (int i = 1; i < 199999; i++) u = uop_new(OP_NOOP, dt_void, 1, &u, v_int(i), NULL);
  cr_assert_eq(graph_rewrite(u, pm, NULL, false, NULL), u);
  u = uop_new(OP_NOOP, dt_void, 1, &u, v_int(199999), NULL);
  TgTry t;
  if (TG_TRY(t)) { graph_rewrite(u, pm, NULL, false, NULL); tg_try_end(&t); cr_assert_fail("no error"); }
  cr_assert(strstr(tg_last_error.msg, "stack too big"));
}

Test(pm, stack_limit_counts_rewritten_sources) {
  /* graph_rewrite_map visits the sources first, so the SINK's sources are all rewritten when its
   * turn comes; tinygrad still pushes them (and the SINK's stage 1) before popping them again:
   *   s = UOp.sink(*[UOp(Ops.NOOP, dtypes.void, arg=i) for i in range(n)])
   *   graph_rewrite_map(s, PatternMatcher([(UPat(Ops.CONST), lambda: None)]))
   * rewrites with n = 199998 and raises "stack too big" with n = 199999 */
  Rule nv[] = {{UP(.ops = OPS(OP_CONST)), never}};
  PM *pm = pm_new(nv, 1);
  for (int n = 199998; n <= 199999; n++) {
    UOp **src = arena_alloc(ga(), sizeof(UOp *) * (size_t)n);
    for (int i = 0; i < n; i++) src[i] = uop_new(OP_NOOP, dt_void, 0, NULL, v_int(i), NULL);
    UOp *s = uop_sink(n, src, NULL);
    TgTry t;
    if (TG_TRY(t)) {
      UMap m = graph_rewrite_map(s, pm, NULL, false, NULL, NULL);
      tg_try_end(&t);
      cr_assert_eq(n, 199998, "n = %d rewrote", n);
      cr_assert_eq(umap_get(&m, s), s);
    } else {
      cr_assert_eq(n, 199999, "n = %d: %s", n, tg_last_error.msg);
      cr_assert(strstr(tg_last_error.msg, "stack too big"));
    }
  }
}

/* a NOOP labelled with an int i rewrites to i + 1 until i reaches *(int *)ctx: one step per
 * callback (the engine rewrites each result again), or all of them in one callback that checks the
 * engine's bound for each step (pm_stack_count, pm_stack_check), as kernelize's append_to_kernel does */
static UOp *step_up_one(const Match *m, void *ctx) {
  UOp *x = m_get(m, "x");
  return x->arg->i < *(int *)ctx ? uop_replace(x, NULL, -1, NULL, v_int(x->arg->i + 1), NULL) : NULL;
}
static UOp *step_up_all(const Match *m, void *ctx) {
  UOp *x = m_get(m, "x");
  size_t base = pm_stack_count();
  int64_t i = x->arg->i, steps = 0;
  for (; i < *(int *)ctx; i++) pm_stack_check(base + (size_t)++steps + 1 + (size_t)x->nsrc);
  return steps ? uop_replace(x, NULL, -1, NULL, v_int(i), NULL) : NULL;
}
/* 1: rewrote to the end, 0: "stack too big" */
static int steps_to(RuleFn fn, int end) {
  Rule r[] = {{UP(.ops = OPS(OP_NOOP), .name = "x"), fn}};
  PM *pm = pm_new(r, 1);
  UOp *s = uop_sink(1, (UOp *[]){uop_new(OP_NOOP, dt_void, 1, (UOp *[]){N("leaf", 0)}, v_int(0), NULL)}, NULL);
  TgTry t;
  if (TG_TRY(t)) {
    UOp *got = graph_rewrite(s, pm, &end, false, NULL);
    tg_try_end(&t);
    cr_assert_eq(got->src[0]->arg->i, end);
    return 1;
  }
  cr_assert(strstr(tg_last_error.msg, "stack too big"), "%s", tg_last_error.msg);
  return 0;
}
Test(pm, steps_taken_in_one_callback_keep_the_stack_bound, .timeout = 30) {
  cr_assert_eq(pm_stack_count(), 0);
  int last_ok = -1;
  for (int end = 199990; end <= 200000; end++) {
    int one = steps_to(step_up_one, end), all = steps_to(step_up_all, end);
    cr_assert_eq(one, all, "end %d: one step per callback %s, all in one %s", end, one ? "rewrote" : "failed", all ? "rewrote" : "failed");
    if (one) last_ok = end;
  }
  cr_assert(last_ok > 199990 && last_ok < 200000, "the bound is in the range tried (last that rewrote: %d)", last_ok);
}

typedef struct NRCtx { Log l; int raised; } NRCtx;
static UOp *not_ready_twice(const Match *m, void *ctx) {
  NRCtx *n = ctx;
  UOp *x = m_get(m, "x");
  logf_(&n->l, "%s", lab(x));
  if (strcmp(x->arg->s, "a") == 0 && n->raised < 2) { n->raised++; pm_not_ready(); }
  if (strlen(x->arg->s) >= 2) return NULL;
  return uop_replace(x, NULL, -1, NULL, v_str(arena_printf(ga(), "%s'", x->arg->s)), NULL);
}
/* c = N("c"); a = N("a", c); b = N("b", c); d = N("d"); s = UOp.sink(a, b, d), and a matcher whose
 * callback raises RewriteNotReady for "a" twice, else renames */
static UOp *not_ready_graph(void) {
  UOp *cc = N("c", 0), *a = N("a", 1, cc), *b = N("b", 1, cc), *d = N("d", 0);
  return uop_sink(3, (UOp *[]){a, b, d}, NULL);
}
static const Rule not_ready_rules[] = {{UP(.ops = OPS(OP_NOOP), .name = "x"), not_ready_twice}};
Test(pm, rewrite_not_ready_requeues_at_the_bottom) {
  /* graph_rewrite: td rec ['c', "c'", 'a', 'b', "b'", 'd', "d'", 'a', 'a', "a'"]
   * bu rec ['a', 'b', "b'", 'c', "c'", "b'", 'd', "d'", 'a', 'a', "a'", "a'"]; both ["c'", "a'", "b'", "d'", 'SINK'] */
  UOp *s = not_ready_graph();
  PM *pm = pm_new(not_ready_rules, RULES_N(not_ready_rules));
  NRCtx n = {{{0}, 0}, 0};
  char buf[128];
  UOp *o = graph_rewrite(s, pm, &n, false, NULL);
  cr_assert_str_eq(n.l.s, "c,c',a,b,b',d,d',a,a,a'");
  cr_assert_str_eq(topo_labels(o, buf, sizeof buf), "c',a',b',d',SINK");
  memset(&n, 0, sizeof n);
  o = graph_rewrite(s, pm, &n, true, NULL);
  cr_assert_str_eq(n.l.s, "a,b,b',c,c',b',d,d',a,a,a',a'");
  cr_assert_str_eq(topo_labels(o, buf, sizeof buf), "c',a',b',d',SINK");
}

Test(pm, rewrite_map_not_ready_finishes_the_key_first) {
  /* graph_rewrite_map rewrites key after key; a RewriteNotReady goes to the bottom of that key's
   * stack, so the key is done before the next starts. tinygrad 0.11.0 on not_ready_graph:
   * td rec ['c', "c'", 'a', 'a', 'a', "a'", 'b', "b'", 'd', "d'"], map c:c' a:a' b:b' d:d' SINK:SINK
   * bu rec ['a', 'b', "b'", 'c', "c'", "b'", 'd', "d'", 'a', 'a', "a'", "a'"], map SINK d b a c */
  UOp *s = not_ready_graph();
  PM *pm = pm_new(not_ready_rules, RULES_N(not_ready_rules));
  NRCtx n = {{{0}, 0}, 0};
  char buf[256];
  UMap m = graph_rewrite_map(s, pm, &n, false, NULL, NULL);
  cr_assert_str_eq(n.l.s, "c,c',a,a,a,a',b,b',d,d'");
  cr_assert_str_eq(map_labels(&m, buf, sizeof buf), "(c,c'),(a,a'),(b,b'),(d,d'),(SINK,SINK)");
  memset(&n, 0, sizeof n);
  m = graph_rewrite_map(s, pm, &n, true, NULL, NULL);
  cr_assert_str_eq(n.l.s, "a,b,b',c,c',b',d,d',a,a,a',a'");
  cr_assert_str_eq(map_labels(&m, buf, sizeof buf), "(SINK,SINK),(d,d'),(b,b'),(a,a'),(c,c')");
}

/* nested rewrites: a callback rewriting the same graph again must not disturb the enclosing
 * rewrite's tables (they live on the nodes: UOp.rw), nor an inner rewrite that failed */
typedef struct NestCtx { UOp *graph; PM *inner; char seen[128]; bool fail_first; } NestCtx;
static UOp *fail_cb(const Match *m, void *ctx) { tg_fail(TG_EINPUT, "inner failure"); }
static UOp *nest_cb(const Match *m, void *ctx) {
  NestCtx *n = ctx;
  UOp *x = m_get(m, "x");
  if (strcmp(x->arg->s, "b") != 0) return NULL;
  if (n->fail_first) { /* an inner rewrite that errors out leaves its epoch open */
    Rule fr[] = {{UP(.ops = OPS(OP_NOOP)), fail_cb}};
    TgTry t;
    if (TG_TRY(t)) { graph_rewrite(n->graph, pm_new(fr, 1), NULL, false, NULL); tg_try_end(&t); }
  }
  Log l = {0};
  topo_labels(graph_rewrite(n->graph, n->inner, &l, false, NULL), n->seen, sizeof n->seen);
  return N("B", 0);
}
Test(pm, nested_rewrites_keep_their_own_tables, .timeout = 20) {
  /* the outer rewrite keeps c and a, turns b into B; the inner one (run while b is rewritten, over
   * nodes the outer one has already visited) renames everything */
  UOp *cc = N("c", 0), *a = N("a", 1, cc), *b = N("b", 1, cc);
  UOp *s = uop_sink(2, (UOp *[]){a, b}, NULL);
  Rule outer[] = {{UP(.ops = OPS(OP_NOOP), .name = "x"), nest_cb}};
  PM *po = pm_new(outer, 1);
  char buf[128];
  for (int round = 0; round < 3; round++) {
    NestCtx n = {s, pm_new(rename_rules, RULES_N(rename_rules)), {0}, round == 1};
    UOp *r = graph_rewrite(s, po, &n, false, NULL);
    cr_assert_str_eq(topo_labels(r, buf, sizeof buf), "c,a,B,SINK", "round %d", round);
    cr_assert_str_eq(n.seen, "c',a',b',SINK", "round %d", round);
    /* and a plain rewrite afterwards sees none of it */
    Log l = {0};
    cr_assert_str_eq(topo_labels(graph_rewrite(s, n.inner, &l, false, NULL), buf, sizeof buf), "c',a',b',SINK");
  }
}

/* ---- graph_rewrite_map ---- */
static UOp *to_v(const Match *m, void *ctx) { return m_get(m, "x")->arg->s[0] == 'k' ? ctx : NULL; }
Test(pm, graph_rewrite_map_moves_metadata) {
  /* v = N("v"); k1, k2, k3 = N("k1"), N("k2"), N("k3"); s = UOp.sink(k1, k2, k3, v)
   * all_metadata[k1] = (m1,); all_metadata[k2] = (m1,); all_metadata[k3] = (m1,m2); all_metadata[v] = (m2,)
   * graph_rewrite_map(s, PatternMatcher([(UPat(Ops.NOOP, name="x"), lambda x: v if x.arg.startswith("k") else None)]))
   * -> {k1: v, k2: v, k3: v, v: v, SINK: SINK'}; all_metadata[v] == (m2, m1, m1, m2) */
  const Meta *m1 = meta_intern("m1", "", false), *m2 = meta_intern("m2", "", false);
  UOp *v = N("v", 0), *k1 = N("k1", 0), *k2 = N("k2", 0), *k3 = N("k3", 0);
  UOp *s = uop_sink(4, (UOp *[]){k1, k2, k3, v}, NULL);
  uop_set_meta(k1, (MetaList){1, (const Meta *[]){m1, NULL}});
  uop_set_meta(k2, (MetaList){1, (const Meta *[]){m1, NULL}});
  uop_set_meta(k3, (MetaList){2, (const Meta *[]){m1, m2, NULL}});
  uop_set_meta(v, (MetaList){1, (const Meta *[]){m2, NULL}});
  Rule r[] = {{UP(.ops = OPS(OP_NOOP), .name = "x"), to_v}};
  UMap nm = graph_rewrite_map(s, pm_new(r, 1), v, false, NULL, NULL);
  cr_assert_eq(nm.live, 5);
  cr_assert_eq(umap_get(&nm, k1), v);
  cr_assert_eq(umap_get(&nm, k3), v);
  cr_assert_eq(umap_get(&nm, v), v);
  cr_assert_neq(umap_get(&nm, s), s);
  MetaList vm = uop_meta(v);
  cr_assert_eq(vm.n, 4);
  cr_assert(vm.m[0] == m2 && vm.m[1] == m1 && vm.m[2] == m1 && vm.m[3] == m2);
}

Test(pm, graph_rewrite_map_input_map) {
  /* c = N("c"); a = N("a", c); s2 = UOp.sink(a)
   * graph_rewrite_map(s2, ren, bottom_up=True, input_map={N("orig"): a, N("other"): N("zz"), c: a})
   * -> [('SINK','SINK'), ('a',"a'"), ('c',"a'"), ('orig',"a'"), ('other','zz')]
   * graph_rewrite_map(s2, ren, input_map={N("orig"): a}) -> [('c',"c'"), ('a',"a'"), ('SINK','SINK'), ('orig',"a'")] */
  UOp *cc = N("c", 0), *a = N("a", 1, cc);
  UOp *s = uop_sink(1, &a, NULL);
  UOp *orig = N("orig", 0), *other = N("other", 0), *zz = N("zz", 0);
  UMap im;
  umap_init(&im, ga());
  umap_put(&im, orig, a); umap_put(&im, other, zz); umap_put(&im, cc, a);
  Log l = {0};
  PM *pm = pm_new(rename_rules, RULES_N(rename_rules));
  UMap nm = graph_rewrite_map(s, pm, &l, true, NULL, &im);
  char buf[256];
  cr_assert_str_eq(map_labels(&nm, buf, sizeof buf), "(SINK,SINK),(a,a'),(c,a'),(orig,a'),(other,zz)");
  UMap im2;
  umap_init(&im2, ga());
  umap_put(&im2, orig, a);
  memset(&l, 0, sizeof l);
  nm = graph_rewrite_map(s, pm, &l, false, NULL, &im2);
  cr_assert_str_eq(map_labels(&nm, buf, sizeof buf), "(c,c'),(a,a'),(SINK,SINK),(orig,a')");
}

/* ---- substitute ---- */
Test(pm, substitute) {
  /* e = ADD(x, MUL(x, y)); e.substitute({x: y, y: N("z")}) -> toposort ['z', 'MUL', 'ADD'] (x -> y -> z)
   * e.substitute({x: y, y: x}) -> "infinite loop in fixed_point_rewrite"; e.substitute({x: x}) is e */
  UOp *x = N("x", 0), *y = N("y", 0), *z = N("z", 0);
  UOp *e = uop2(OP_ADD, dt_void, x, uop2(OP_MUL, dt_void, x, y, NULL), NULL);
  UMap d;
  umap_init(&d, ga());
  umap_put(&d, x, y); umap_put(&d, y, z);
  char buf[64];
  UOp *r = uop_substitute(e, &d);
  cr_assert_str_eq(topo_labels(r, buf, sizeof buf), "z,MUL,ADD");
  cr_assert_eq(r, uop2(OP_ADD, dt_void, z, uop2(OP_MUL, dt_void, z, z, NULL), NULL));
  UMap d2;
  umap_init(&d2, ga());
  umap_put(&d2, x, x);
  cr_assert_eq(uop_substitute(e, &d2), e);
  UMap d3;
  umap_init(&d3, ga());
  umap_put(&d3, x, y); umap_put(&d3, y, x);
  TgTry t;
  if (TG_TRY(t)) { uop_substitute(e, &d3); tg_try_end(&t); cr_assert_fail("no error"); }
  cr_assert(strstr(tg_last_error.msg, "infinite loop in fixed_point_rewrite"));
}

/* uop_substitute takes the nodes that reach no key as unchanged without visiting them; on random
 * DAGs and maps (values: graph nodes or fresh ones, chains and cycles included) it gives what the
 * plain bottom-up _substitute rewrite gives, the same node or the same error */
static uint64_t xrand(uint64_t *s) { /* splitmix64 */
  uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}
/* uop_substitute against graph_rewrite(root, _substitute, bottom_up=True) on random graphs */
static void substitute_trials(void);
/* a context under REWRITE_SAFE_SIZE walks only the nodes newer than the oldest key */
Test(pm, substitute_skip_matches_full_rewrite) { substitute_trials(); }
/* past it (30000 nodes made first, each with a source), each graph is sized and walked whole */
Test(pm, substitute_skip_matches_full_rewrite_in_a_big_context) {
  UOp *u = N("pad", 0);
  for (int i = 0; i < 30000; i++) u = uop_new(OP_NOOP, dt_void, 1, &u, v_int(i), NULL);
  cr_assert_geq((uint64_t)uctx->next_id + uctx->nedges, (uint64_t)REWRITE_SAFE_SIZE);
  substitute_trials();
}
static void substitute_trials(void) {
  pm_init();
  uint64_t seed = 0x5eed;
  int same_node = 0, errors = 0, changed = 0;
  for (int trial = 0; trial < 400; trial++) {
    UOp *nodes[40];
    int n = 5 + (int)(xrand(&seed) % 35);
    for (int i = 0; i < n; i++) {
      int k = i ? (int)(xrand(&seed) % 4) : 0;
      UOp *src[3];
      for (int j = 0; j < k && j < 3; j++) src[j] = nodes[xrand(&seed) % (uint64_t)i];
      char name[16];
      snprintf(name, sizeof name, "n%d_%d", trial % 3, i);
      nodes[i] = uop_new(OP_NOOP, dt_void, k < 3 ? k : 3, src, v_str(name), NULL);
    }
    UOp *root = nodes[n - 1];
    UMap d;
    umap_init(&d, ga());
    int nk = 1 + (int)(xrand(&seed) % 4);
    for (int i = 0; i < nk; i++) {
      UOp *key = nodes[xrand(&seed) % (uint64_t)n];
      UOp *val = xrand(&seed) % 2 ? nodes[xrand(&seed) % (uint64_t)n] : N("fresh", 1, nodes[xrand(&seed) % (uint64_t)n]);
      umap_put(&d, key, val);
    }
    UOp *want = NULL, *got = NULL;
    char want_err[sizeof tg_last_error.msg] = "", got_err[sizeof tg_last_error.msg] = "";
    TgTry t;
    if (TG_TRY(t)) { want = graph_rewrite(root, pm_substitute, &d, true, NULL); tg_try_end(&t); }
    else snprintf(want_err, sizeof want_err, "%s", tg_last_error.msg);
    if (TG_TRY(t)) { got = uop_substitute(root, &d); tg_try_end(&t); }
    else snprintf(got_err, sizeof got_err, "%s", tg_last_error.msg);
    cr_assert_eq(got, want, "trial %d", trial);
    cr_assert_str_eq(got_err, want_err, "trial %d", trial);
    if (want_err[0]) errors++;
    else if (want == root) same_node++;
    else changed++;
  }
  /* the trials cover the three outcomes */
  cr_assert(same_node > 20 && errors > 5 && changed > 100, "unchanged %d, errors %d, changed %d", same_node, errors, changed);
}

/* ---- speed ---- */
static UOp *fold_add_zero(const Match *m, void *ctx) { return m_get(m, "x"); }
static const Rule add_zero[] = {
  // x + 0 -> x
  { UP(.ops = OPS(OP_ADD), SRC_PERM(UVAR("x"), UP(.ops = OPS(OP_CONST), .has_cval = true, .cval = 0))), fold_add_zero },
  // x * 1 -> x
  { UP(.ops = OPS(OP_MUL), SRC_PERM(UVAR("x"), UP(.ops = OPS(OP_CONST), .has_cval = true, .cval = 1))), fold_add_zero },
};
Test(pm, ten_thousand_nodes_are_fast) {
  UOp *zero = uop_const_int(dt_int, 0), *one = uop_const_int(dt_int, 1);
  UOp *acc = uop0(OP_DEFINE_VAR, dt_int, v_tuplev(3, v_str("a"), v_int(0), v_int(10)));
  UOp *want = acc;
  for (int i = 0; i < 2500; i++) {
    UOp *k = uop_const_int(dt_int, i + 2);
    acc = uop2(OP_ADD, dt_int, uop2(OP_MUL, dt_int, uop2(OP_ADD, dt_int, acc, zero, NULL), one, NULL), k, NULL);
    want = uop2(OP_ADD, dt_int, want, k, NULL);
  }
  PM *pm = pm_new(add_zero, RULES_N(add_zero));
  struct timespec t0, t1;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  UOp *r = graph_rewrite(acc, pm, NULL, false, NULL);
  clock_gettime(CLOCK_MONOTONIC, &t1);
  double ms = (double)(t1.tv_sec - t0.tv_sec) * 1e3 + (double)(t1.tv_nsec - t0.tv_nsec) / 1e6;
  cr_log_info("graph_rewrite of %d nodes: %.2f ms", uop_toposort(acc, NULL, NULL).n, ms);
  cr_assert_eq(r, want);
  cr_assert_lt(ms, 500.0);
}
