/* Unit tests for lib/shape: View, ShapeTracker and the tensor-UOp shape properties.
 *
 * Three kinds of checks, every expectation taken from tinygrad 0.11.0:
 *  - hand cases ported from tinygrad's test_view.py / test_shapetracker.py ideas, each with the
 *    Python that produced the expectation in a comment (st_text is testdata/st/record.py's text);
 *  - testdata/st/fuzz.jsonl (testdata/st/fuzz.py): 800 random movement-op chains with the tracker
 *    after every op, simplify, invert, st + st2, and the indexing results;
 *  - testdata/st/corpus_st.txt (testdata/st/record.py): UOp.st of every movement-op and VIEW row of
 *    every corpus graph, read with the lib/io graph reader.
 * Run from the repo root (or set TGC_TESTDATA to the testdata dir; TGC_ORACLE to the corpus). */
#include <criterion/criterion.h>
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "io/graph.h"
#include "shape/shape.h"
#include "shape/sops.h"

static UCtx *c;
static void setup(void) { c = uop_ctx_new(); shape_init(); }
static void teardown(void) { uop_ctx_free(c); }
TestSuite(shape, .init = setup, .fini = teardown, .timeout = 600);

/* ---- record.py's texts ---- */
typedef struct { char *p; size_t n, cap; } Str;
static void put(Str *s, const char *t) {
  size_t k = strlen(t);
  if (s->n + k + 1 > s->cap) {
    s->cap = (s->n + k + 1) * 2;
    char *np = arena_alloc(&uctx->scratch, s->cap);
    if (s->n) memcpy(np, s->p, s->n);
    s->p = np;
  }
  memcpy(s->p + s->n, t, k + 1);
  s->n += k;
}
static void sx(Str *s, UOp *u) {  /* OP:dtype:repr(arg)(src,src) */
  Arena *a = &uctx->scratch;
  put(s, op_names[u->op]); put(s, ":"); put(s, dt_repr(a, u->dtype)); put(s, ":"); put(s, value_repr(a, u->arg));
  if (u->nsrc) {
    put(s, "(");
    for (int i = 0; i < u->nsrc; i++) { if (i) put(s, ","); sx(s, u->src[i]); }
    put(s, ")");
  }
}
static void sint_text(Str *s, Sint x) {
  if (x.u) { put(s, "{"); sx(s, x.u); put(s, "}"); return; }
  char b[32];
  snprintf(b, sizeof b, "%lld", (long long)x.c);
  put(s, b);
}
static const char *st_text(const ShapeTracker *st) {
  Str s = {0};
  if (!st) return "N";
  for (int k = 0; k < st->nviews; k++) {
    const View *v = st->views[k];
    if (k) put(&s, " | ");
    for (int i = 0; i < v->ndim; i++) { if (i) put(&s, ","); sint_text(&s, v->shape[i]); }
    put(&s, "/");
    for (int i = 0; i < v->ndim; i++) { if (i) put(&s, ","); sint_text(&s, v->strides[i]); }
    put(&s, "/");
    sint_text(&s, v->offset);
    put(&s, "/");
    if (!v->mask) put(&s, "-");
    else for (int i = 0; i < v->ndim; i++) {
      if (i) put(&s, ",");
      sint_text(&s, v->mask[2 * i]); put(&s, ":"); sint_text(&s, v->mask[2 * i + 1]);
    }
    put(&s, v->contiguous ? "/1" : "/0");
  }
  if (!s.p) put(&s, "");
  return s.p;
}
static const char *vtext(const View *v) { return v ? st_text(st_intern(1, &v)) : "None"; }
static const char *utext(UOp *u) { Str s = {0}; sx(&s, u); return s.p; }

/* small builders */
#define INTS(...) ((const int64_t[]){__VA_ARGS__})
#define NI(...) ((int)(sizeof(INTS(__VA_ARGS__)) / sizeof(int64_t)))
#define SL(...) sl_ints(NI(__VA_ARGS__), INTS(__VA_ARGS__))
static const Sint *sints(int n, const int64_t *xs) { return sl_ints(n, xs).v; }
#define SI(...) sints(NI(__VA_ARGS__), INTS(__VA_ARGS__))
static const View *vc(SList shape, const SList *strides, int64_t off, const Sint *mask) { return view_create(shape, strides, si(off), mask); }
static const ShapeTracker *sts(int n, const View *const *vs) { return st_intern(n, vs); }

static const char *testdata(const char *rel) {
  const char *d = getenv("TGC_TESTDATA");
  static char buf[4096];
  snprintf(buf, sizeof buf, "%s/%s", d ? d : "testdata", rel);
  return buf;
}

/* ---- View.create canonicalisation ---- */
Test(shape, create_canonicalises) {
  SList st;
  // View.create((2,2,2),(4,2,1),0,((0,2),(0,2),(0,2))) -> mask None, contiguous: 2,2,2/4,2,1/0/-/1
  st = SL(4, 2, 1);
  cr_assert_str_eq(vtext(vc(SL(2, 2, 2), &st, 0, SI(0, 2, 0, 2, 0, 2))), "2,2,2/4,2,1/0/-/1");
  // View.create((3,3),None,0,((1,1),(0,3))): the all-empty mask -> 3,3/0,0/0/0:0,0:0/0
  cr_assert_str_eq(vtext(vc(SL(3, 3), NULL, 0, SI(1, 1, 0, 3))), "3,3/0,0/0/0:0,0:0/0");
  // View.create((3,4),None,0,((1,2),(0,4))): a one-index dim goes to the offset -> 3,4/0,1/4/1:2,0:4/0
  cr_assert_str_eq(vtext(vc(SL(3, 4), NULL, 0, SI(1, 2, 0, 4))), "3,4/0,1/4/1:2,0:4/0");
  // View.create((2,0,3),(3,3,1),5,((0,1),(0,0),(0,3))): zero in shape -> 2,0,3/0,0,0/0/-/1
  st = SL(3, 3, 1);
  cr_assert_str_eq(vtext(vc(SL(2, 0, 3), &st, 5, SI(0, 1, 0, 0, 0, 3))), "2,0,3/0,0,0/0/-/1");
  // View.create((2,3,4),(12,4,1),0,((0,2),(0,3),(0,4))) -> 2,3,4/12,4,1/0/-/1
  st = SL(12, 4, 1);
  cr_assert_str_eq(vtext(vc(SL(2, 3, 4), &st, 0, SI(0, 2, 0, 3, 0, 4))), "2,3,4/12,4,1/0/-/1");
  // strides_for_shape((3,1,4)) == (4,0,1); canonicalize_strides((1,2),(5,7)) == (0,7)
  SList s = strides_for_shape(SL(3, 1, 4));
  cr_assert(sl_eq(s, SL(4, 0, 1)));
  cr_assert(sl_eq(canonicalize_strides(SL(1, 2), SL(5, 7)), SL(0, 7)));
  // interning: equal views are one pointer
  cr_assert_eq(vc(SL(2, 3), NULL, 0, NULL), vc(SL(2, 3), NULL, 0, NULL));
  cr_assert_eq(view_size(vc(SL(2, 3, 4), NULL, 0, NULL)).c, 24);
}

Test(shape, create_rejects_negative_dims) {
  TgTry t;
  if (TG_TRY(t)) {
    vc(SL(2, -1), NULL, 0, NULL);
    tg_try_end(&t);
    cr_assert_fail("negative dimension accepted");
  } else cr_assert_eq(tg_last_error.code, TG_EINPUT);
}

Test(shape, minify_and_merge) {
  SList st = SL(0, 4, 1);
  // View.create((2,3,4),(0,4,1)).minify() -> 2,12/0,1/0/-/0
  cr_assert_str_eq(vtext(view_minify(vc(SL(2, 3, 4), &st, 0, NULL))), "2,12/0,1/0/-/0");
  // View.create((2,1,4),(4,4,1)).minify() -> 8/1/0/-/1
  st = SL(4, 4, 1);
  cr_assert_str_eq(vtext(view_minify(vc(SL(2, 1, 4), &st, 0, NULL))), "8/1/0/-/1");
  // View.create((4,3,2),(6,2,1),0,((0,4),(1,2),(0,2))).minify() -> 4,6/6,1/0/0:4,2:4/0
  st = SL(6, 2, 1);
  cr_assert_str_eq(vtext(view_minify(vc(SL(4, 3, 2), &st, 0, SI(0, 4, 1, 2, 0, 2)))), "4,6/6,1/0/0:4,2:4/0");
}

/* View.__add__ and ShapeTracker.__add__ are memoised per context (sops.h pmemo): past the table's
 * growth (hundreds of pairs, NULL results among them), a second round of every pair gives the
 * same tracker as the first, and each equals the uncached a + b (push b's view, simplify) */
Test(shape, concat_memo_matches_uncached) {
  enum { N = 30, K = 3 };
  const ShapeTracker *first[N][K][K];
  for (int round = 0; round < 2; round++)
    for (int i = 0; i < N; i++) {
      int64_t n = i + 1;
      const ShapeTracker *base = st_from_shape(SL(n, 6), NULL);
      // three trackers of shape (n, 6), and three that start from shape (n, 6)
      const ShapeTracker *as[K] = {base, st_permute(st_from_shape(SL(6, n), NULL), (int[]){1, 0}),
                                   st_shrink(st_from_shape(SL(n + 1, 7), NULL), SI(0, n, 1, 7))};
      const ShapeTracker *bs[K] = {st_reshape(base, SL(6 * n)), st_reshape(base, SL(3, 2 * n)), st_permute(base, (int[]){1, 0})};
      for (int x = 0; x < K; x++)
        for (int y = 0; y < K; y++) {
          const ShapeTracker *got = st_concat(as[x], bs[y]);
          const View *vs[2] = {as[x]->views[0], bs[y]->views[0]};
          const ShapeTracker *want = st_simplify(st_intern(2, vs));
          cr_assert_eq(got, want, "n %d pair %d,%d round %d", (int)n, x, y, round);
          if (round == 0) first[i][x][y] = got;
          else cr_assert_eq(got, first[i][x][y], "n %d pair %d,%d changed between rounds", (int)n, x, y);
        }
    }
}

/* ---- movement ops on one view ---- */
/* unravel(shape, offset) from shape/view.py, Python's floor division and modulo included:
 *   [unravel(s, o) for s, o in [((3,4,5),-7), ((3,4,5),59), ((3,4,5),61), ((2,1,3),-1), ((7,),-15)]]
 *   -> [2,2,3] [2,3,4] [0,0,1] [1,0,2] [6]; a zero size raises (ZeroDivisionError) */
Test(shape, unravel_is_pythons) {
  static const struct { int n; int64_t shape[3], off, want[3]; } cases[] = {
    {3, {3, 4, 5}, -7, {2, 2, 3}}, {3, {3, 4, 5}, 59, {2, 3, 4}}, {3, {3, 4, 5}, 61, {0, 0, 1}},
    {3, {2, 1, 3}, -1, {1, 0, 2}}, {1, {7}, -15, {6}},
  };
  for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
    Sint sh[3], out[3];
    for (int i = 0; i < cases[k].n; i++) sh[i] = si(cases[k].shape[i]);
    shape_unravel(sl(cases[k].n, sh), si(cases[k].off), out);
    for (int i = 0; i < cases[k].n; i++)
      cr_expect(si_is_int(out[i]) && out[i].c == cases[k].want[i], "case %zu dim %d: %lld", k, i, (long long)out[i].c);
  }
  Sint zero[2] = {si(2), si(0)}, out[2];
  TgTry t;
  if (TG_TRY(t)) { shape_unravel(sl(2, zero), si(3), out); tg_try_end(&t); cr_assert_fail("unravel over a zero size did not fail"); }
  cr_assert(strstr(tg_last_error.msg, "by zero"), "%s", tg_last_error.msg);
}

Test(shape, view_movement_ops) {
  SList st = SL(3, 1);
  const View *v = vc(SL(2, 3), &st, 0, NULL);
  // v.pad(((1,0),(0,2))) -> 3,5/3,1/-3/1:3,0:3/0 ; .shrink(((1,3),(0,3))) -> 2,3/3,1/0/-/1 ; v.expand((2,3)) -> v
  const View *p = view_pad(v, SI(1, 0, 0, 2));
  cr_assert_str_eq(vtext(p), "3,5/3,1/-3/1:3,0:3/0");
  cr_assert_str_eq(vtext(view_shrink(p, SI(1, 3, 0, 3))), "2,3/3,1/0/-/1");
  cr_assert_eq(view_shrink(p, SI(1, 3, 0, 3)), v);
  cr_assert_eq(view_expand(v, SL(2, 3)), v);
  // View.create((1,3),(0,1)).expand((4,3)) -> 4,3/0,1/0/-/0
  st = SL(0, 1);
  cr_assert_str_eq(vtext(view_expand(vc(SL(1, 3), &st, 0, NULL), SL(4, 3))), "4,3/0,1/0/-/0");
  // View.create((1,3),(0,1),0,((0,1),(1,2))).expand((4,3)) -> 4,3/0,0/1/0:4,1:2/0
  cr_assert_str_eq(vtext(view_expand(vc(SL(1, 3), &st, 0, SI(0, 1, 1, 2)), SL(4, 3))), "4,3/0,0/1/0:4,1:2/0");
  // View.create((4,5),(5,1)).flip((True,True)) -> 4,5/-5,-1/19/-/0
  st = SL(5, 1);
  cr_assert_str_eq(vtext(view_flip(vc(SL(4, 5), &st, 0, NULL), (const bool[]){true, true})), "4,5/-5,-1/19/-/0");
  // View.create((4,5),(5,1),0,((1,3),(0,2))).flip((True,False)) -> 4,5/-5,1/15/1:3,0:2/0
  const View *a = vc(SL(4, 5), &st, 0, SI(1, 3, 0, 2));
  cr_assert_str_eq(vtext(view_flip(a, (const bool[]){true, false})), "4,5/-5,1/15/1:3,0:2/0");
  // a.permute((1,0)) -> 5,4/1,5/0/0:2,1:3/0 ; a.reshape((2,2,5)) -> None ; a.reshape((20,)) -> None
  cr_assert_str_eq(vtext(view_permute(a, (const int[]){1, 0})), "5,4/1,5/0/0:2,1:3/0");
  cr_assert_null(view_reshape(a, SL(2, 2, 5)));
  cr_assert_null(view_reshape(a, SL(20)));
  // View.create((2,3,4)).reshape((6,4)) -> 6,4/4,1/0/-/1 ; View.create((6,4),(1,6)).reshape((3,2,4)) -> 3,2,4/2,1,6/0/-/0
  cr_assert_str_eq(vtext(view_reshape(vc(SL(2, 3, 4), NULL, 0, NULL), SL(6, 4))), "6,4/4,1/0/-/1");
  st = SL(1, 6);
  cr_assert_str_eq(vtext(view_reshape(vc(SL(6, 4), &st, 0, NULL), SL(3, 2, 4))), "3,2,4/2,1,6/0/-/0");
  cr_assert_null(view_reshape(vc(SL(6, 4), &st, 0, NULL), SL(24)));
}

Test(shape, reshape_doesnt_multiview) {
  // test_shapetracker.TestRealIssues.test_reshape_doesnt_multiview:
  // ShapeTracker((View.create((256,256,2,2,2,2,2,256,8,2),(0,8,0,4,0,0,2,16384,2048,1),0,None),)).reshape((128,2,256,2,2,2,2,2,256,8,2))
  //   -> 128,2,256,2,2,2,2,2,256,8,2/0,0,8,0,4,0,0,2,16384,2048,1/0/-/0 (one view)
  SList st = SL(0, 8, 0, 4, 0, 0, 2, 16384, 2048, 1);
  const View *v = vc(SL(256, 256, 2, 2, 2, 2, 2, 256, 8, 2), &st, 0, NULL);
  const ShapeTracker *r = st_reshape(sts(1, &v), SL(128, 2, 256, 2, 2, 2, 2, 2, 256, 8, 2));
  cr_assert_str_eq(st_text(r), "128,2,256,2,2,2,2,2,256,8,2/0,0,8,0,4,0,0,2,16384,2048,1/0/-/0");
  // ShapeTracker.from_shape((4,)).pad(((2,2),)).reshape((2,4)) -> 8/1/-2/2:6/0 | 2,4/4,1/0/-/1
  const ShapeTracker *s = st_reshape(st_pad(st_from_shape(SL(4), NULL), SI(2, 2)), SL(2, 4));
  cr_assert_str_eq(st_text(s), "8/1/-2/2:6/0 | 2,4/4,1/0/-/1");
  cr_assert(!st_contiguous(s) && st_has_mask(s));
  // ShapeTracker.from_shape((3,4)).permute((1,0)).reshape((12,)) -> 4,3/1,4/0/-/0 | 12/1/0/-/1
  s = st_reshape(st_permute(st_from_shape(SL(3, 4), NULL), (const int[]){1, 0}), SL(12));
  cr_assert_str_eq(st_text(s), "4,3/1,4/0/-/0 | 12/1/0/-/1");
}

Test(shape, mop_from_graph_args) {
  // st.mop(Ops.PAD, ((1,1),(0,2))) on from_shape((2,3)) -> 4,5/3,1/-3/1:3,0:3/0
  const ShapeTracker *s = st_from_shape(SL(2, 3), NULL);
  const Value *pad = v_tuplev(2, v_ints(2, INTS(1, 1)), v_ints(2, INTS(0, 2)));
  cr_assert_str_eq(st_text(st_mop(s, OP_PAD, pad)), "4,5/3,1/-3/1:3,0:3/0");
  const Value *fl = v_tuplev(2, v_bool(false), v_bool(true));
  cr_assert_str_eq(st_text(st_mop(s, OP_FLIP, fl)), "2,3/3,-1/2/-/0");
  cr_assert_str_eq(st_text(st_mop(s, OP_PERMUTE, v_ints(2, INTS(1, 0)))), "3,2/1,3/0/-/0");
}

/* ---- fuzz.jsonl: movement chains (int paths) ---- */
static cJSON *fuzz_cases(void) {
  size_t n;
  char *txt = read_file(&uctx->scratch, testdata("st/fuzz.jsonl"), &n);
  cr_assert_not_null(txt, "can't read %s", testdata("st/fuzz.jsonl"));
  cJSON *arr = cJSON_CreateArray();
  for (char *line = txt, *nl; line && *line; line = nl ? nl + 1 : NULL) {
    nl = strchr(line, '\n');
    if (nl) *nl = 0;
    if (*line) cJSON_AddItemToArray(arr, cJSON_Parse(line));
  }
  return arr;
}
static SList jsl(cJSON *a) {
  int n = cJSON_GetArraySize(a);
  int64_t *xs = arena_alloc(ga(), sizeof(int64_t) * (size_t)(n + 1));
  for (int i = 0; i < n; i++) xs[i] = (int64_t)cJSON_GetArrayItem(a, i)->valuedouble;
  return sl_ints(n, xs);
}
static const ShapeTracker *apply_op(const ShapeTracker *s, cJSON *op) {
  const char *k = cJSON_GetArrayItem(op, 0)->valuestring;
  cJSON *a = cJSON_GetArrayItem(op, 1);
  SList l = jsl(a);
  int n = cJSON_GetArraySize(a);
  switch (k[0]) {
  case 'R': return st_reshape(s, l);
  case 'E': return st_expand(s, l);
  case 'D': return st_pad(s, l.v);
  case 'K': return st_shrink(s, l.v);
  case 'P': {
    int *ax = arena_alloc(ga(), sizeof(int) * (size_t)(n + 1));
    for (int i = 0; i < n; i++) ax[i] = (int)l.v[i].c;
    return st_permute(s, ax);
  }
  default: {
    bool *f = arena_alloc(ga(), (size_t)n + 1);
    for (int i = 0; i < n; i++) f[i] = cJSON_IsTrue(cJSON_GetArrayItem(a, i));
    return st_flip(s, f);
  }
  }
}
static void fuzz(bool indexing) {
  cJSON *cases = fuzz_cases();
  int ncase = 0, nchk = 0, bad = 0;
  cJSON *cs;
  cJSON_ArrayForEach(cs, cases) {
    ArenaMark mk = arena_mark(&uctx->scratch);
    ncase++;
    const ShapeTracker *s = st_from_shape(jsl(cJSON_GetObjectItem(cs, "shape")), NULL), *s0 = s;
    cJSON *ops = cJSON_GetObjectItem(cs, "ops"), *want = cJSON_GetObjectItem(cs, "sts"), *op;
    int i = 0;
    char where[64];
#define CHK(got, exp, what) do { nchk++; if (strcmp((got), (exp)) != 0) { \
      if (bad++ < 20) cr_log_error("fuzz case %d %s: got %s, want %s", ncase, (what), (got), (exp)); } } while (0)
    cJSON_ArrayForEach(op, ops) {
      s = apply_op(s, op);
      snprintf(where, sizeof where, "op %d", i);
      if (!indexing) CHK(st_text(s), cJSON_GetArrayItem(want, i)->valuestring, where);
      i++;
    }
    if (!indexing) {
      CHK(st_text(st_simplify(s)), cJSON_GetObjectItem(cs, "simplify")->valuestring, "simplify");
      cJSON *inv = cJSON_GetObjectItem(cs, "invert");
      CHK(st_text(st_invert(s, st_shape(s0))), cJSON_IsNull(inv) ? "N" : inv->valuestring, "invert");
      const ShapeTracker *s2 = st_from_shape(st_shape(s), NULL);
      cJSON_ArrayForEach(op, cJSON_GetObjectItem(cs, "add_ops")) s2 = apply_op(s2, op);
      CHK(st_text(st_concat(s, s2)), cJSON_GetObjectItem(cs, "add")->valuestring, "st + st2");
    } else {
      UOp *idx, *valid;
      st_to_indexed_uops(s, NULL, &idx, &valid);
      CHK(utext(idx), cJSON_GetObjectItem(cs, "idx")->valuestring, "idx");
      CHK(utext(valid), cJSON_GetObjectItem(cs, "valid")->valuestring, "valid");
      int n = st_shape(s).n;
      Sint rs[64]; bool has[64]; int unit[64];
      st_real_strides(s, false, rs, has);
      cJSON *wrs = cJSON_GetObjectItem(cs, "real_strides"), *wu = cJSON_GetObjectItem(cs, "unit");
      for (int k = 0; k < n; k++) {
        cJSON *w = cJSON_GetArrayItem(wrs, k);
        char g[32], e[32];
        snprintf(g, sizeof g, has[k] ? "%lld" : "None", (long long)rs[k].c);
        snprintf(e, sizeof e, cJSON_IsNull(w) ? "None" : "%lld", (long long)(cJSON_IsNull(w) ? 0 : w->valuedouble));
        CHK(g, e, "real_strides");
      }
      int nu = st_unit_stride_axes(s, false, unit);
      char g[64] = "", e[64] = "";
      for (int k = 0; k < nu; k++) snprintf(g + strlen(g), sizeof g - strlen(g), "%d,", unit[k]);
      cJSON *x;
      cJSON_ArrayForEach(x, wu) snprintf(e + strlen(e), sizeof e - strlen(e), "%d,", (int)x->valuedouble);
      CHK(g, e, "unit_stride_axes");
      snprintf(g, sizeof g, "%lld", (long long)st_real_size(s));
      snprintf(e, sizeof e, "%lld", (long long)cJSON_GetObjectItem(cs, "real_size")->valuedouble);
      CHK(g, e, "real_size");
      cJSON *wm = cJSON_GetObjectItem(cs, "masked");
      for (int k = 0; k < n; k++) CHK(st_axis_is_masked(s, k) ? "1" : "0", cJSON_IsTrue(cJSON_GetArrayItem(wm, k)) ? "1" : "0", "axis_is_masked");
    }
#undef CHK
    arena_pop(&uctx->scratch, mk);
  }
  cJSON_Delete(cases);
  cr_log_info("fuzz (%s): %d cases, %d checks, %d mismatches", indexing ? "indexing" : "movement", ncase, nchk, bad);
  cr_assert_eq(bad, 0, "%d of %d fuzz checks differ from tinygrad", bad, nchk);
  cr_assert_gt(ncase, 100);
}
Test(shape, fuzz_movement) { fuzz(false); }
Test(shape, fuzz_indexing) { fuzz(true); }

/* ---- the corpus: UOp.st of every movement-op and VIEW row (testdata/st/record.py) ---- */
static char *slurp(const char *path, size_t *n) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  fseek(f, 0, SEEK_END);
  long sz = ftell(f);
  fseek(f, 0, SEEK_SET);
  char *p = malloc((size_t)sz + 1);
  if (p && fread(p, 1, (size_t)sz, f) != (size_t)sz) { free(p); p = NULL; }
  if (p) p[sz] = 0;
  fclose(f);
  *n = (size_t)sz;
  return p;
}
static const char *row_st_text(UOp *u) {
  TgTry t;
  if (TG_TRY(t)) {
    const char *got = st_text(u_st(u));
    tg_try_end(&t);
    return got;
  }
  return "E";
}
/* one graph: rows differing from the recording (logged), or -1 when the graph can't be read */
static int corpus_graph(const char *name, const char *path, const char *refs, char *const *tab, int *nrows, int *logged) {
  Graph *g = NULL;
  TgTry t;
  if (TG_TRY(t)) { g = graph_read_file(path); tg_try_end(&t); }
  else { if ((*logged)++ < 15) cr_log_error("%s: %s", name, tg_last_error.msg); return -1; }
  int bad = 0;
  for (const char *r = refs; *r;) {
    char *e;
    int id = (int)strtol(r, &e, 10), ix = (int)strtol(e + 1, &e, 10);
    r = *e == ',' ? e + 1 : e;
    (*nrows)++;
    const char *got = id < g->nrows ? row_st_text(g->rows[id]) : "no such row";
    if (strcmp(got, tab[ix]) != 0) {
      if ((*logged)++ < 15) cr_log_error("%s: row %d (%s): got %s, want %s", name, id, op_names[g->rows[id]->op], got, tab[ix]);
      bad++;
    }
  }
  return bad;
}
Test(shape, corpus_st) {
  const char *oracle = getenv("TGC_ORACLE") ? getenv("TGC_ORACLE") : "../shared/oracle";
  size_t n;
  char *txt = slurp(testdata("st/corpus_st.txt"), &n);
  cr_assert_not_null(txt, "can't read %s", testdata("st/corpus_st.txt"));
  int cap = 1 << 14, nst = 0, ngraph = 0, nrows = 0, bad = 0, badgraph = 0, logged = 0;
  char **tab = malloc(sizeof(char *) * (size_t)cap);
  UCtx *outer = uctx;
  for (char *line = txt, *nl; line && *line; line = nl ? nl + 1 : NULL) {
    nl = strchr(line, '\n');
    if (nl) *nl = 0;
    if (line[0] == 'S') {
      if (nst == cap) tab = realloc(tab, sizeof(char *) * (size_t)(cap *= 2));
      tab[nst++] = line + 2;
      continue;
    }
    if (line[0] != 'G') continue;
    char *name = line + 2, *refs = strchr(name, '\t');
    *refs++ = 0;
    char path[4096];
    snprintf(path, sizeof path, "%s/%s.graph.json", oracle, name);
    ngraph++;
    UCtx *gc = uop_ctx_new();
    shape_init();
    int r = corpus_graph(name, path, refs, tab, &nrows, &logged);
    if (r < 0) badgraph++; else bad += r;
    uop_ctx_free(gc);
    uctx = outer;
  }
  cr_log_info("corpus: %d graphs, %d rows, %d distinct trackers; %d rows differ, %d graphs unreadable; match rate %.3f%%",
              ngraph, nrows, nst, bad, badgraph, nrows ? 100.0 * (nrows - bad) / nrows : 0.0);
  free(tab);
  free(txt);
  cr_assert_gt(nrows, 1000);
  cr_assert_eq(bad + badgraph, 0, "%d rows and %d graphs differ from tinygrad", bad, badgraph);
}

/* ---- tensor-graph UOp properties (python: /tmp snippets quoted per line; b = UOp.new_buffer("CPU", 24, dtypes.float)) ---- */
static const Value *cpu(void) { return v_str("CPU"); }
Test(shape, tensor_movement_constructors) {
  UOp *b = u_new_buffer(cpu(), 24, dt_float);
  // b.st -> 24/1/0/-/1 ; b.size 24 ; b._device 'CPU' ; b.base is b
  cr_assert_str_eq(st_text(u_st(b)), "24/1/0/-/1");
  cr_assert_eq(u_size(b).c, 24);
  cr_assert_eq(u_device(b), cpu());
  cr_assert_eq(u_base(b), b);
  cr_assert_eq(b->src[0]->op, OP_UNIQUE);
  // r = b.reshape((2,3,4)) -> 2,3,4/12,4,1/0/-/1 ; r.reshape((2,3,4)) is r ; b.reshape((24,)) is b
  UOp *r = u_reshape(b, SL(2, 3, 4));
  cr_assert_str_eq(st_text(u_st(r)), "2,3,4/12,4,1/0/-/1");
  cr_assert(sl_eq(u_shape(r), SL(2, 3, 4)));
  cr_assert_eq(u_reshape(r, SL(2, 3, 4)), r);
  cr_assert_eq(u_reshape(b, SL(24)), b);
  // r.permute((2,0,1)) -> 4,2,3/1,12,4/0/-/0 ; .base is b ; p.permute((0,1,2)) is p
  UOp *p = u_permute(r, (const int[]){2, 0, 1});
  cr_assert_str_eq(st_text(u_st(p)), "4,2,3/1,12,4/0/-/0");
  cr_assert_eq(u_base(p), b);
  cr_assert_eq(u_permute(p, (const int[]){0, 1, 2}), p);
  // r.reshape((2,3,4,1)).expand((2,3,4,5)) -> 2,3,4,5/12,4,1,0/0/-/0
  cr_assert_str_eq(st_text(u_st(u_expand(u_reshape(r, SL(2, 3, 4, 1)), SL(2, 3, 4, 5)))), "2,3,4,5/12,4,1,0/0/-/0");
  // r.pad(((0,0),(1,1),(0,0))) -> 2,5,4/12,4,1/-4/0:2,1:4,0:4/0 ; zero pad is r
  cr_assert_str_eq(st_text(u_st(u_pad(r, SI(0, 0, 1, 1, 0, 0)))), "2,5,4/12,4,1/-4/0:2,1:4,0:4/0");
  cr_assert_eq(u_pad(r, SI(0, 0, 0, 0, 0, 0)), r);
  // r.shrink(((0,1),(0,3),(1,3))) -> 1,3,2/0,4,1/1/-/0 ; full shrink is r
  cr_assert_str_eq(st_text(u_st(u_shrink(r, SI(0, 1, 0, 3, 1, 3)))), "1,3,2/0,4,1/1/-/0");
  cr_assert_eq(u_shrink(r, SI(0, 2, 0, 3, 0, 4)), r);
  // r.flip((False,True,False)) -> 2,3,4/12,-4,1/8/-/0 ; no flip is r
  cr_assert_str_eq(st_text(u_st(u_flip(r, (const bool[]){false, true, false}))), "2,3,4/12,-4,1/8/-/0");
  cr_assert_eq(u_flip(r, (const bool[]){false, false, false}), r);
  // r.contiguous().st -> 2,3,4/12,4,1/0/-/1, its base is itself
  UOp *kc = u_contiguous(r);
  cr_assert_str_eq(st_text(u_st(kc)), "2,3,4/12,4,1/0/-/1");
  cr_assert_eq(u_base(kc), kc);
  // UOp(Ops.ASSIGN, dtypes.float, (r, r)).buf_uop is b
  cr_assert_eq(u_buf_uop(uop2(OP_ASSIGN, dt_float, r, r, NULL)), b);
  // view
  cr_assert_eq(u_st(u_view(b, u_st(p))), u_st(p));
}

Test(shape, tensor_consts) {
  SList s23 = SL(2, 3);
  // UOp.const(dtypes.float, 1.0, device="CPU", shape=(2,3)): CONST(VIEW(DEVICE)) with st 2,3/0,0/0/-/0
  UOp *c1 = u_const_tensor(dt_float, v_float(1.0), cpu(), &s23);
  cr_assert_eq(c1->op, OP_CONST);
  cr_assert_eq(c1->src[0]->op, OP_VIEW);
  cr_assert_eq(c1->src[0]->src[0]->op, OP_DEVICE);
  cr_assert_str_eq(st_text(u_st(c1)), "2,3/0,0/0/-/0");
  cr_assert_eq(u_device(c1), cpu());
  // UOp.const(dtypes.int, 3, device="CPU"): CONST(DEVICE), st //0/-/1
  UOp *c2 = u_const_tensor(dt_int, v_int(3), cpu(), NULL);
  cr_assert_eq(c2->src[0]->op, OP_DEVICE);
  cr_assert_str_eq(st_text(u_st(c2)), "//0/-/1");
  // UOp.const(dtypes.float, 2, shape=(4,)): arg 2.0, CONST(VIEW), st 4/0/0/-/0, no device
  SList s4 = SL(4);
  UOp *c3 = u_const_tensor(dt_float, v_int(2), NULL, &s4);
  cr_assert_eq(c3->arg, v_float(2.0));
  cr_assert_eq(c3->src[0]->op, OP_VIEW);
  cr_assert_eq(c3->src[0]->nsrc, 0);
  cr_assert_str_eq(st_text(u_st(c3)), "4/0/0/-/0");
  cr_assert_null(u_device(c3));
  // r.const_like(2) on r = b.reshape((2,3,4)): CONST 2.0 (VIEW 2,3,4/0,0,0 (DEVICE CPU))
  UOp *r = u_reshape(u_new_buffer(cpu(), 24, dt_float), SL(2, 3, 4));
  UOp *cl = u_const_like(r, v_int(2));
  cr_assert_eq(cl->arg, v_float(2.0));
  cr_assert_str_eq(st_text(u_st(cl)), "2,3,4/0,0,0/0/-/0");
  cr_assert_eq(cl->src[0]->src[0]->arg, cpu());
  // a variable has no shape: UOp.variable("i",1,10).st is None and (v*2).st is None, so const_like is bare
  UOp *v = u_variable("i", 1, 10, dt_int);
  cr_assert_null(u_st(v));
  cr_assert_eq(u_const_like_i(v, 2)->nsrc, 0);
}

Test(shape, tensor_reduce_and_st_rules) {
  UOp *b = u_new_buffer(cpu(), 24, dt_float), *r = u_reshape(b, SL(2, 3, 4));
  // r.r(Ops.ADD, (1,)) -> RESHAPE((2,1,4)) of REDUCE_AXIS((ADD,(2,))) of PERMUTE((0,2,1)); st 2,1,4/4,0,1/0/-/1
  UOp *red = u_r(r, OP_ADD, 1, (const int[]){1});
  cr_assert_eq(red->op, OP_RESHAPE);
  cr_assert_eq(red->src[0]->op, OP_REDUCE_AXIS);
  cr_assert_str_eq(value_repr(ga(), red->src[0]->arg), "(<Ops.ADD: 62>, (2,))");
  cr_assert_str_eq(value_repr(ga(), red->src[0]->src[0]->arg), "(0, 2, 1)");
  cr_assert_str_eq(st_text(u_st(red)), "2,1,4/4,0,1/0/-/1");
  // r.r(Ops.MAX, (0,2)) -> st 1,3,1/0,1,0/0/-/1, REDUCE_AXIS (MAX,(1,2)) of PERMUTE (1,0,2)
  UOp *red2 = u_r(r, OP_MAX, 2, (const int[]){0, 2});
  cr_assert_str_eq(st_text(u_st(red2)), "1,3,1/0,1,0/0/-/1");
  cr_assert_str_eq(value_repr(ga(), red2->src[0]->arg), "(<Ops.MAX: 67>, (1, 2))");
  cr_assert_str_eq(value_repr(ga(), red2->src[0]->src[0]->arg), "(1, 0, 2)");
  // x = buffer(12).reshape((3,1,4)); x.r(Ops.ADD,(1,)) is x
  UOp *x = u_reshape(u_new_buffer(cpu(), 12, dt_float), SL(3, 1, 4));
  cr_assert_eq(u_r(x, OP_ADD, 1, (const int[]){1}), x);
  // BITCAST to half -> 2,3,8/24,8,1/0/-/1 ; to int64 -> 2,3,2/6,2,1/0/-/1
  cr_assert_str_eq(st_text(u_st(uop1(OP_BITCAST, dt_half, r, NULL))), "2,3,8/24,8,1/0/-/1");
  cr_assert_str_eq(st_text(u_st(uop1(OP_BITCAST, dt_long, r, NULL))), "2,3,2/6,2,1/0/-/1");
  // DEFINE_GLOBAL float.ptr(16) -> 16/1/0/-/1 ; LOAD/STORE/SINK flow the VIEW's 4,4/4,1/0/-/1
  UOp *dg = uop0(OP_DEFINE_GLOBAL, dt_ptr(dt_float, 16, AS_GLOBAL), v_int(0));
  cr_assert_str_eq(st_text(u_st(dg)), "16/1/0/-/1");
  UOp *vw = u_view(dg, st_from_shape(SL(4, 4), NULL));
  UOp *ld = uop1(OP_LOAD, dt_float, vw, NULL), *stre = uop2(OP_STORE, dt_void, vw, ld, NULL);
  cr_assert_str_eq(st_text(u_st(ld)), "4,4/4,1/0/-/1");
  cr_assert_str_eq(st_text(u_st(stre)), "4,4/4,1/0/-/1");
  cr_assert_str_eq(st_text(u_st(uop_sink(1, &stre, NULL))), "4,4/4,1/0/-/1");
  // BUFFER_VIEW (6, 2) of b -> 6/1/0/-/1, size 6
  UOp *bv = uop1(OP_BUFFER_VIEW, dt_float, b, v_ints(2, INTS(6, 2)));
  cr_assert_str_eq(st_text(u_st(bv)), "6/1/0/-/1");
  cr_assert_eq(u_size(bv).c, 6);
  // COPY to GPU keeps the shape, device GPU
  UOp *cp = uop2(OP_COPY, dt_float, r, uop0(OP_DEVICE, dt_void, v_str("GPU")), NULL);
  cr_assert_str_eq(st_text(u_st(cp)), "2,3,4/12,4,1/0/-/1");
  cr_assert_eq(u_device(cp), v_str("GPU"));
  // UOp(Ops.ADD, dtypes.float, (r, r.permute((2,0,1)))).st -> AssertionError "UOp sources must have the same shape"
  UOp *bad = uop2(OP_ADD, dt_float, r, u_permute(r, (const int[]){2, 0, 1}), NULL);
  TgTry t;
  if (TG_TRY(t)) { u_st(bad); tg_try_end(&t); cr_assert_fail("mismatched shapes accepted"); }
  else {
    cr_assert_eq(tg_last_error.code, TG_EINPUT);
    cr_assert(strstr(tg_last_error.msg, "same shape") != NULL, "%s", tg_last_error.msg);
  }
}

Test(shape, tensor_multi) {
  // m = UOp.new_buffer(("CPU","CPU:1"), 12, dtypes.float).reshape((3,4)).multi(0): st 6,4/4,1/0/-/1, axis 0
  const Value *devs = v_tuplev(2, v_str("CPU"), v_str("CPU:1"));
  UOp *buf = u_new_buffer(devs, 12, dt_float);
  UOp *m = uop1(OP_MULTI, dt_float, u_reshape(buf, SL(3, 4)), v_int(0));
  cr_assert_str_eq(st_text(u_st(m)), "6,4/4,1/0/-/1");
  cr_assert_eq(u_axis(m), 0);
  cr_assert_eq(u_device(m), devs);
  cr_assert_eq(u_base(m), buf);
  // m.reshape((6,2,2)).axis 0 ; m.permute((1,0)).axis 1 ; mr.r(ADD,(0,)).axis None ; (m+m).axis 0
  UOp *mr = u_reshape(m, SL(6, 2, 2));
  cr_assert_eq(u_axis(mr), 0);
  cr_assert_eq(u_axis(u_permute(m, (const int[]){1, 0})), 1);
  cr_assert_eq(u_axis(u_r(mr, OP_ADD, 1, (const int[]){0})), -1);
  cr_assert_eq(u_axis(u_add(m, m)), 0);
  // MSELECT 1 of a ("A","B") buffer: device 'B' ; MSTACK of A and B buffers: ('A', 'B')
  UOp *ms = uop1(OP_MSELECT, dt_float, u_new_buffer(v_tuplev(2, v_str("A"), v_str("B")), 4, dt_float), v_int(1));
  cr_assert_eq(u_device(ms), v_str("B"));
  UOp *mst = uop2(OP_MSTACK, dt_float, u_new_buffer(v_str("A"), 4, dt_float), u_new_buffer(v_str("B"), 4, dt_float), NULL);
  cr_assert_eq(u_device(mst), v_tuplev(2, v_str("A"), v_str("B")));
  cr_assert_eq(u_buf_uop(ms)->op, OP_MSELECT);
}

Test(shape, deep_chain_no_recursion) {
  // a 200000-deep chain of RESHAPEs and ADDs: u_st, u_device and u_axis walk it on an explicit stack
  UOp *x = u_new_buffer(cpu(), 4, dt_float);
  const Value *a41 = v_ints(2, INTS(4, 1)), *a22 = v_ints(2, INTS(2, 2));
  for (int i = 0; i < 100000; i++) {
    x = uop1(OP_RESHAPE, dt_float, x, (i & 1) ? a41 : a22);
    x = uop2(OP_ADD, dt_float, x, x, NULL);
  }
  cr_assert_str_eq(st_text(u_st(x)), "4,1/1,0/0/-/1");
  cr_assert_eq(u_device(x), cpu());
  cr_assert_eq(u_axis(x), -1);
}

/* ---- symbolic shapes (python: i = UOp.variable("i", 1, 10); j = UOp.variable("j", 1, 5)) ---- */
#define VI "{DEFINE_VAR:int:('i', 1, 10)}"
Test(shape, symbolic_movement) {
  UOp *i = u_variable("i", 1, 10, dt_int), *j = u_variable("j", 1, 5, dt_int);
  Sint si_i = {0, i}, si_j = {0, j};
  const ShapeTracker *s = st_from_shape(sl(2, (Sint[]){si_i, si(4)}), NULL);
  // ShapeTracker.from_shape((i,4)) -> {i},4/4,1/0/-/1 ; .size 40
  cr_assert_str_eq(st_text(s), VI ",4/4,1/0/-/1");
  cr_assert_eq(st_size(s).c, 40);
  // st.reshape((i*4,)) -> {MUL(i, 4)}/1/0/-/1
  cr_assert_str_eq(st_text(st_reshape(s, sl(1, (Sint[]){{0, u_muli(i, 4)}}))), "{MUL:int:None(DEFINE_VAR:int:('i', 1, 10),CONST:int:4)}/1/0/-/1");
  // st.permute((1,0)) -> 4,{i}/1,4/0/-/0
  cr_assert_str_eq(st_text(st_permute(s, (const int[]){1, 0})), "4," VI "/1,4/0/-/0");
  // st.pad(((0,1),(2,0))) -> {ADD(i,1)},6/4,1/-2/0:{ADD(i,0)},2:6/0   (the mask keeps i+0)
  cr_assert_str_eq(st_text(st_pad(s, SI(0, 1, 2, 0))),
                   "{ADD:int:None(DEFINE_VAR:int:('i', 1, 10),CONST:int:1)},6/4,1/-2/0:{ADD:int:None(DEFINE_VAR:int:('i', 1, 10),CONST:int:0)},2:6/0");
  // st.shrink(((0,i),(1,3))) -> {i},2/4,1/1/-/0
  cr_assert_str_eq(st_text(st_shrink(s, (Sint[]){si(0), si_i, si(1), si(3)})), VI ",2/4,1/1/-/0");
  // st.reshape((i,2,2)) -> {i},2,2/4,2,1/0/-/1 ; st.reshape((i,4,1)).expand((i,4,j)) -> {i},4,{j}/4,1,0/0/-/0
  cr_assert_str_eq(st_text(st_reshape(s, sl(3, (Sint[]){si_i, si(2), si(2)}))), VI ",2,2/4,2,1/0/-/1");
  cr_assert_str_eq(st_text(st_expand(st_reshape(s, sl(3, (Sint[]){si_i, si(4), si(1)})), sl(3, (Sint[]){si_i, si(4), si_j}))),
                   VI ",4,{DEFINE_VAR:int:('j', 1, 5)}/4,1,0/0/-/0");
  // ShapeTracker.from_shape((10,)).shrink(((0,i),)) -> {i}/1/0/-/1
  cr_assert_str_eq(st_text(st_shrink(st_from_shape(SL(10), NULL), (Sint[]){si(0), si_i})), VI "/1/0/-/1");
  // ShapeTracker.from_shape((i*4,)).reshape((i,4)) -> {i},4/4,1/0/-/1
  cr_assert_str_eq(st_text(st_reshape(st_from_shape(sl(1, (Sint[]){{0, u_muli(i, 4)}}), NULL), sl(2, (Sint[]){si_i, si(4)}))), VI ",4/4,1/0/-/1");
  // ShapeTracker((View.create((i,4),(4,1)), View.create((4,i),(1,4)))).simplify() -> 4,{i}/1,4/0/-/0
  SList st41 = SL(4, 1), st14 = SL(1, 4);
  const View *vv[2] = {vc(sl(2, (Sint[]){si_i, si(4)}), &st41, 0, NULL), vc(sl(2, (Sint[]){si(4), si_i}), &st14, 0, NULL)};
  cr_assert_str_eq(st_text(st_simplify(sts(2, vv))), "4," VI "/1,4/0/-/0");
}

Test(shape, symbolic_bind_unbind) {
  UOp *i = u_variable("i", 1, 10, dt_int), *bi = u_bind(i, 3);
  // st2 = ShapeTracker.from_shape((bi, 4)).reshape((bi*4,)) -> {MUL(BIND(i,3),4)}/1/0/-/1
  const ShapeTracker *s = st_reshape(st_from_shape(sl(2, (Sint[]){{0, bi}, si(4)}), NULL), sl(1, (Sint[]){{0, u_muli(bi, 4)}}));
  cr_assert_str_eq(st_text(s), "{MUL:int:None(BIND:int:None(DEFINE_VAR:int:('i', 1, 10),CONST:int:3),CONST:int:4)}/1/0/-/1");
  // st2.vars() -> {BIND(i, 3)}
  UOp *vars[8];
  cr_assert_eq(st_vars(s, vars, 8), 1);
  cr_assert_eq(vars[0], bi);
  // st2.unbind()[0] -> {MUL(i,4)}/1/0/-/1
  cr_assert_str_eq(st_text(st_unbind(s)), "{MUL:int:None(DEFINE_VAR:int:('i', 1, 10),CONST:int:4)}/1/0/-/1");
  cr_assert_eq(st_unbind(st_from_shape(SL(2, 3), NULL)), st_from_shape(SL(2, 3), NULL));
  // st2.substitute({bi: UOp.const(dtypes.int, 3)}) -> 12/1/0/-/1
  UMap m;
  umap_init(&m, ga());
  umap_put(&m, bi, uop_const_int(dt_int, 3));
  cr_assert_str_eq(st_text(st_substitute(s, &m)), "12/1/0/-/1");
  // ShapeTracker.from_shape((4,3)).permute((1,0)).reshape((UOp.variable("k",1,4).bind(3), 4)) -> {BIND(k,3)},4/1,3/0/-/0
  UOp *k = u_bind(u_variable("k", 1, 4, dt_int), 3);
  const ShapeTracker *p = st_permute(st_from_shape(SL(4, 3), NULL), (const int[]){1, 0});
  cr_assert_str_eq(st_text(st_reshape(p, sl(2, (Sint[]){{0, k}, si(4)}))), "{BIND:int:None(DEFINE_VAR:int:('k', 1, 4),CONST:int:3)},4/1,3/0/-/0");
}

Test(shape, symbolic_indexing) {
  UOp *i = u_variable("i", 1, 10, dt_int);
  const ShapeTracker *s = st_from_shape(sl(2, (Sint[]){{0, i}, si(4)}), NULL), *pd = st_pad(s, SI(0, 0, 1, 1));
  // ShapeTracker.from_shape((i,4)).pad(((0,0),(1,1))).to_indexed_uops()
  UOp *idx, *valid;
  st_to_indexed_uops(pd, NULL, &idx, &valid);
  cr_assert_str_eq(utext(idx), "ADD:int:None(ADD:int:None(MUL:int:None(RANGE:int:0(DEFINE_VAR:int:('i', 1, 10)),CONST:int:4),RANGE:int:1(CONST:int:6)),CONST:int:-1)");
  cr_assert_str_eq(utext(valid), "AND:bool:None(CMPNE:bool:None(CMPLT:bool:None(RANGE:int:1(CONST:int:6),CONST:int:1),CONST:bool:True),CMPLT:bool:None(RANGE:int:1(CONST:int:6),CONST:int:5))");
  // real_strides: from_shape((i,4)) -> (4, 1) ; padded -> (4, None)
  Sint rs[2]; bool has[2];
  st_real_strides(pd, false, rs, has);
  cr_assert(has[0] && rs[0].c == 4 && !has[1]);
  st_real_strides(s, false, rs, has);
  cr_assert(has[0] && rs[0].c == 4 && has[1] && rs[1].c == 1);
}

/* ---- indexing and sizes on hand cases ---- */
Test(shape, real_strides_and_sizes) {
  // TestRealStrides.test_1: ShapeTracker((View.create((2048,),(1,),0,((0,512),)), View.create((16,32,4),(128,4,1),0,None)))
  //   .real_strides() -> (None, 4, 1) ; .simplify() -> 16,32,4/128,4,1/0/0:4,0:32,0:4/0
  SList s1 = SL(1), s2 = SL(128, 4, 1);
  const View *a[2] = {vc(SL(2048), &s1, 0, SI(0, 512)), vc(SL(16, 32, 4), &s2, 0, NULL)};
  Sint rs[8]; bool has[8]; int unit[8];
  st_real_strides(sts(2, a), false, rs, has);
  cr_assert(!has[0] && has[1] && rs[1].c == 4 && has[2] && rs[2].c == 1);
  cr_assert_str_eq(st_text(st_simplify(sts(2, a))), "16,32,4/128,4,1/0/0:4,0:32,0:4/0");
  // TestRealSimplifies: ((1,3,2,11,4,28),(0,308,0,28,0,1)) + ((1,3,2,11,26,1,1,3),(0,2464,1232,112,5,0,0,1)): simplify keeps 2 views
  SList b1 = SL(0, 308, 0, 28, 0, 1), b2 = SL(0, 2464, 1232, 112, 5, 0, 0, 1);
  const View *b[2] = {vc(SL(1, 3, 2, 11, 4, 28), &b1, 0, NULL), vc(SL(1, 3, 2, 11, 26, 1, 1, 3), &b2, 0, NULL)};
  cr_assert_str_eq(st_text(st_simplify(sts(2, b))), "1,3,2,11,4,28/0,308,0,28,0,1/0/-/0 | 1,3,2,11,26,1,1,3/0,2464,1232,112,5,0,0,1/0/-/0");
  // ((8,3,1,2,11,1),(33,11,0,0,1,0)) + ((8,6,11),(66,11,1)): real_strides (33, None, 1)
  SList c1 = SL(33, 11, 0, 0, 1, 0), c2 = SL(66, 11, 1);
  const View *cc[2] = {vc(SL(8, 3, 1, 2, 11, 1), &c1, 0, NULL), vc(SL(8, 6, 11), &c2, 0, NULL)};
  st_real_strides(sts(2, cc), false, rs, has);
  cr_assert(has[0] && rs[0].c == 33 && !has[1] && has[2] && rs[2].c == 1);
  // TestShapeTrackerSize: (100,100) 10000 ; (0,100) 0 ; expand to (100,100,100) 10000 ; flattened 10000 ;
  //   shrink axis 0 to 50 -> 5000 ; shrink axis 1 to 50 -> 9950 ; pad ((1,1),(1,1)) -> 10000
  const ShapeTracker *s = st_from_shape(SL(100, 100), NULL), *e = st_expand(st_reshape(s, SL(100, 100, 1)), SL(100, 100, 100));
  cr_assert_eq(st_real_size(s), 10000);
  cr_assert_eq(st_real_size(st_from_shape(SL(0, 100), NULL)), 0);
  cr_assert_eq(st_real_size(e), 10000);
  cr_assert_eq(st_real_size(st_reshape(e, SL(1000000))), 10000);
  cr_assert_eq(st_real_size(st_shrink(s, SI(0, 50, 0, 100))), 5000);
  cr_assert_eq(st_real_size(st_shrink(s, SI(0, 100, 0, 50))), 9950);
  cr_assert_eq(st_real_size(st_pad(s, SI(1, 1, 1, 1))), 10000);
  // from_shape((3,4)).permute((1,0)).reshape((12,)): real_strides (None,), invert((3,4)) -> 12/1/0/-/1 | 3,4/1,3/0/-/0
  const ShapeTracker *pr = st_reshape(st_permute(st_from_shape(SL(3, 4), NULL), (const int[]){1, 0}), SL(12));
  st_real_strides(pr, false, rs, has);
  cr_assert(!has[0]);
  cr_assert_str_eq(st_text(st_invert(pr, SL(3, 4))), "12/1/0/-/1 | 3,4/1,3/0/-/0");
  // from_shape((4,4)).flip((True,False)).shrink(((1,3),(0,4))) -> 2,4/-4,1/8/-/0, real_strides (-4, 1), unit_stride_axes [1]
  const ShapeTracker *fs = st_shrink(st_flip(st_from_shape(SL(4, 4), NULL), (const bool[]){true, false}), SI(1, 3, 0, 4));
  cr_assert_str_eq(st_text(fs), "2,4/-4,1/8/-/0");
  st_real_strides(fs, false, rs, has);
  cr_assert(has[0] && rs[0].c == -4 && has[1] && rs[1].c == 1);
  cr_assert_eq(st_unit_stride_axes(fs, false, unit), 1);
  cr_assert_eq(unit[0], 1);
  // from_shape((4,4)).pad(((0,0),(1,1))): axis_is_masked(0) False, axis_is_masked(1) True
  const ShapeTracker *pm = st_pad(st_from_shape(SL(4, 4), NULL), SI(0, 0, 1, 1));
  cr_assert(!st_axis_is_masked(pm, 0) && st_axis_is_masked(pm, 1));
}

/* ---- speed: views_to_indexed_uops on a 2-view tracker (uncached path: explicit RANGE idxs) ---- */
static double now_s(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return (double)t.tv_sec + (double)t.tv_nsec * 1e-9; }
Test(shape, bench_to_indexed_uops) {
  // ShapeTracker.from_shape((4,)).pad(((2,2),)).reshape((2,4)) style, bigger: a padded conv-like window
  const ShapeTracker *s = st_reshape(st_pad(st_from_shape(SL(3, 32, 32), NULL), SI(0, 0, 1, 1, 1, 1)), SL(3 * 34 * 34));
  s = st_reshape(st_shrink(s, SI(0, 3 * 34 * 32)), SL(3, 32, 34));
  cr_assert_eq(s->nviews, 2);
  UOp *rng[3];
  for (int k = 0; k < 3; k++) rng[k] = uop1(OP_RANGE, dt_int, uop_const_int(dt_int, st_shape(s).v[k].c), v_int(k));
  UOp *idx0, *valid0, *idx, *valid;
  st_to_indexed_uops(s, NULL, &idx0, &valid0);
  int n = 0;
  double t0 = now_s(), t1;
  do {
    ArenaMark mk = arena_mark(&uctx->scratch);
    st_to_indexed_uops(s, rng, &idx, &valid);
    arena_pop(&uctx->scratch, mk);
    n++;
  } while ((t1 = now_s()) - t0 < 0.5);
  cr_assert_eq(idx, idx0);
  cr_assert_eq(valid, valid0);
  // s = from_shape((3,32,32)).pad(((0,0),(1,1),(1,1))).reshape((3468,)).shrink(((0,3264),)).reshape((3,32,34)); sx(s.to_indexed_uops())
  cr_assert_str_eq(st_text(s), "3,34,34/1024,32,1/-33/0:3,1:33,1:33/0 | 3,32,34/1088,34,1/0/-/1");
#define R01 "ADD:int:None(MUL:int:None(RANGE:int:0(CONST:int:3),CONST:int:32),RANGE:int:1(CONST:int:32))"
  cr_assert_str_eq(utext(idx), "ADD:int:None(ADD:int:None(ADD:int:None(MUL:int:None(IDIV:int:None(" R01 ",CONST:int:34),CONST:int:1024),"
                   "MUL:int:None(MOD:int:None(" R01 ",CONST:int:34),CONST:int:32)),RANGE:int:2(CONST:int:34)),CONST:int:-33)");
  cr_assert_str_eq(utext(valid), "AND:bool:None(AND:bool:None(AND:bool:None(CMPNE:bool:None(CMPLT:bool:None(MOD:int:None(" R01 ",CONST:int:34),"
                   "CONST:int:1),CONST:bool:True),CMPLT:bool:None(MOD:int:None(" R01 ",CONST:int:34),CONST:int:33)),CMPNE:bool:None("
                   "CMPLT:bool:None(RANGE:int:2(CONST:int:34),CONST:int:1),CONST:bool:True)),CMPLT:bool:None(RANGE:int:2(CONST:int:34),CONST:int:33))");
#undef R01
  cr_log_info("st_to_indexed_uops (2 views, uncached): %.1f us per call over %d calls; cached: O(1)", (t1 - t0) * 1e6 / n, n);
}

/* View.__add__'s integer dimension merge (view.c merge_dims_int) against the symbolic one it
 * shortcuts: random movement-op chains, st + st2 for each, computed once with the shortcut and once
 * with view_add_symbolic_only in a fresh context; every tracker must read the same */
static uint64_t rnd_state;
static int rnd(int n) { rnd_state = rnd_state * 6364136223846793005ull + 1442695040888963407ull; return (int)((rnd_state >> 33) % (uint64_t)n); }
static const ShapeTracker *random_mop(const ShapeTracker *s) {
  SList sh = st_shape(s);
  int n = sh.n;
  int64_t d[16];
  for (int i = 0; i < n; i++) d[i] = sh.v[i].c;
  switch (rnd(6)) {
  case 0: {  // reshape: split a dim by 2 or 3, or merge two neighbours
    int64_t o[16]; int m = 0, at = n ? rnd(n) : 0, k = 2 + rnd(2);
    if (n && n < 6 && d[at] % k == 0 && rnd(2)) {
      for (int i = 0; i < n; i++) { if (i == at) { o[m++] = k; o[m++] = d[i] / k; } else o[m++] = d[i]; }
    } else if (n >= 2) {
      at = rnd(n - 1);
      for (int i = 0; i < n; i++) { if (i == at) { o[m++] = d[i] * d[i + 1]; i++; } else o[m++] = d[i]; }
    } else return s;
    return st_reshape(s, sl_ints(m, o));
  }
  case 1: {  // permute
    int ax[16];
    for (int i = 0; i < n; i++) ax[i] = i;
    for (int i = n - 1; i > 0; i--) { int j = rnd(i + 1), t = ax[i]; ax[i] = ax[j]; ax[j] = t; }
    return st_permute(s, ax);
  }
  case 2: {  // shrink
    Sint a[32];
    for (int i = 0; i < n; i++) { int64_t b = rnd((int)d[i]), e = b + 1 + rnd((int)(d[i] - b)); a[2 * i] = si(b); a[2 * i + 1] = si(e); }
    return st_shrink(s, a);
  }
  case 3: {  // pad
    Sint a[32];
    for (int i = 0; i < n; i++) { a[2 * i] = si(rnd(3)); a[2 * i + 1] = si(rnd(3)); }
    return st_pad(s, a);
  }
  case 4: {  // expand the 1s
    int64_t o[16];
    for (int i = 0; i < n; i++) o[i] = d[i] == 1 ? 1 + rnd(4) : d[i];
    return st_expand(s, sl_ints(n, o));
  }
  default: {
    bool f[16];
    for (int i = 0; i < n; i++) f[i] = rnd(2);
    return st_flip(s, f);
  }
  }
}
/* the views of an arange / cumsum (tinygrad's _cumalu): pad, expand, flatten, pad, rewrap as (a, 2a)
 * and shrink; the diagonal they make puts one index into two dims of the view below */
static const ShapeTracker *arange_st(int64_t a, int64_t b) {
  const ShapeTracker *s = st_from_shape(sl_ints(1, (int64_t[]){a}), NULL);
  s = st_pad(s, (Sint[]){si(a - 1), si(0)});
  s = st_expand(st_reshape(s, sl_ints(2, (int64_t[]){1, 2 * a - 1})), sl_ints(2, (int64_t[]){b, 2 * a - 1}));
  s = st_pad(st_reshape(s, sl_ints(1, (int64_t[]){b * (2 * a - 1)})), (Sint[]){si(0), si(b)});
  s = st_reshape(s, sl_ints(2, (int64_t[]){b, 2 * a}));
  return st_shrink(s, (Sint[]){si(0), si(b), si(0), si(a)});
}
static char **concat_texts(int ncase, bool symbolic) {
  char **out = calloc((size_t)ncase, sizeof *out);
  view_add_symbolic_only = symbolic;
  rnd_state = 12345;
  for (int i = 0; i < ncase; i++) {
    if (i % 4 == 0) { /* an arange's trackers, alone and under random movement ops */
      int64_t a = 2 + rnd(9), b = 1 + rnd(12);
      const ShapeTracker *ar = arange_st(a, b), *flat = st_from_shape(st_shape(ar), NULL);
      const ShapeTracker *s = rnd(2) ? ar : flat, *s2 = rnd(2) ? ar : flat;
      for (int k = rnd(4); k > 0; k--) s2 = random_mop(s2);
      out[i] = strdup(st_text(st_concat(s, s2)));
      continue;
    }
    int64_t base[4]; int nb = 1 + rnd(3);
    for (int k = 0; k < nb; k++) base[k] = 1 + rnd(6);
    const ShapeTracker *s = st_from_shape(sl_ints(nb, base), NULL);
    for (int k = rnd(5); k >= 0; k--) s = random_mop(s);
    const ShapeTracker *s2 = st_from_shape(st_shape(s), NULL);
    for (int k = rnd(5); k >= 0; k--) s2 = random_mop(s2);
    out[i] = strdup(st_text(st_concat(s, s2)));
  }
  view_add_symbolic_only = false;
  return out;
}
Test(shape, view_add_integer_merge_matches_symbolic) {
  enum { N = 4000 };
  char **fast = concat_texts(N, false);
  uop_ctx_free(c);
  c = uop_ctx_new();
  char **sym = concat_texts(N, true);
  int bad = 0;
  for (int i = 0; i < N; i++) {
    if (strcmp(fast[i], sym[i]) != 0 && bad++ < 10) cr_log_error("case %d: %s (integer) vs %s (symbolic)", i, fast[i], sym[i]);
    free(fast[i]), free(sym[i]);
  }
  free(fast), free(sym);
  cr_assert_eq(bad, 0, "%d of %d st + st2 differ", bad, N);
}
