/* test_codegen: lowering, kernel names and the C renderer.
 * Names and values come from tinygrad 0.11.0: names from Kernel(apply_rewrites(ast,
 * rewrites_for_views), ClangRenderer()).name with NOOPT=1 on the corpus ASTs; half bits from numpy
 * (np.float32(x).astype(np.float16).view(np.uint16)); bfloat16 bits from renderer/cstyle.py's
 * cast_float_to_bf16 (x + 0x7fff + ((x>>16)&1)) >> 16. The corpus test renders every kernel AST
 * in $TGC_ORACLE/{schedule,numeric}/NAME.expect.json and compiles it with cc -Wall -Werror. */
#include <criterion/criterion.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "codegen/codegen.h"
#include "io/graph.h"
#include "render/render.h"

static const char *oracle(void) {
  const char *o = getenv("TGC_ORACLE");
  return o && *o ? o : "../shared/oracle";
}
/* the path of a file in the oracle corpus (one buffer: the test's current case) */
static const char *oracle_file(const char *rel) {
  static char path[1024];
  snprintf(path, sizeof path, "%s/%s", oracle(), rel);
  return path;
}

/* every SINK kernel of an expect file, lowered with one name table; returns the count */
static int lower_file(const char *path, const Program **ps, int cap) {
  Expect *x = expect_read_file(path);
  KNames kn;
  knames_init(&kn, ga());
  int n = 0;
  for (int k = 0; k < x->nitems && n < cap; k++)
    if (strcmp(x->items[k].op, "SINK") == 0) ps[n++] = lower_kernel(x->items[k].ast, &kn);
  return n;
}

/* lower_file, 0 (logged) when it fails */
static int try_lower_file(const char *path, const Program **ps, int cap) {
  volatile int n = 0;
  TgTry t;
  if (TG_TRY(t)) { n = lower_file(path, ps, cap); tg_try_end(&t); }
  else cr_log_error("%s: %s", path, tg_last_error.msg);
  return n;
}
/* lower_file for a test that needs it: the test stops with tgc's message when it fails */
static int lower_ok(const char *path, const Program **ps, int cap) {
  int n = try_lower_file(path, ps, cap);
  cr_assert(n > 0, "%s: %s", path, tg_last_error.msg);
  return n;
}

/* the kernels' names without opts (base, the merged axes) and after tinygrad's CPU opts (want) */
static void check_names(const char *file, int n, const char *const *base, const char *const *want) {
  const char *path = oracle_file(file);
  UCtx *c = uop_ctx_new();
  const Program *ps[64];
  int got = lower_ok(path, ps, 64);
  cr_expect_eq(got, n, "%s: %d kernels, want %d", file, got, n);
  for (int i = 0; i < n && i < got; i++) {
    cr_expect_str_eq(ps[i]->base_name, base[i], "%s kernel %d", file, i);
    cr_expect_str_eq(ps[i]->name, want[i], "%s kernel %d (%s)", file, i, kopt_format(ga(), ps[i]->nopts, ps[i]->opts));
  }
  uop_ctx_free(c);
}

/* tinygrad without opts: r_16_40 r_40_16 r_10_10 r_16_40_40 r_40_16_16 E_12_10; the UNROLL:0:4 and
 * UNROLL:1:4 of the first and fourth split their last axis (DEBUG=2 prints r_16_10_4, r_16_40_10_4),
 * a whole axis unrolled (UNROLL:0:0) keeps its size */
Test(codegen, names_argmax) {
  const char *b[] = {"r_16_40", "r_40_16", "r_10_10", "r_16_40_40", "r_40_16_16", "E_12_10"};
  const char *w[] = {"r_16_10_4", "r_40_16", "r_10_10", "r_16_40_10_4", "r_40_16_16", "E_12_10"};
  check_names("numeric/numeric.argmax_onehot.a9c722.expect.json", 6, b, w);
}
/* tinygrad (avg_pool2d ceil_mode, a masked reduce that must not merge): r_3_3_3_2; under
 * UPCAST:0:0,UNROLL:1:0,UNROLL:0:0 the upcast axis moves before the reduces and the unrolls go last
 * in their order: r_3_3_2_3 */
Test(codegen, names_masked_pool) {
  const char *b[] = {"r_3_3_3_2"}, *w[] = {"r_3_3_2_3"};
  check_names("schedule/test_ops.TestOps_test_avg_pool2d_ceil_mode.11.93d36d.expect.json", 1, b, w);
}
/* tinygrad: eye is a masked const, E_10_10 (not E_100) */
Test(codegen, names_eye) {
  const char *w[] = {"E_10_10"};
  check_names("schedule/test_ops.TestOps_test_eye.2.7997f0.expect.json", 1, w, w);
}
/* tinygrad softmax: the expand after a reduce is swizzled into a second reduce axis (r_100_16n1) */
Test(codegen, names_softmax_swizzle) {
  const char *path = oracle_file("numeric/numeric.softmax.8bdd2a.expect.json");
  UCtx *c = uop_ctx_new();
  const Program *ps[64];
  int n = lower_ok(path, ps, 64);
  bool found = false;
  for (int i = 0; i < n; i++) found |= strcmp(ps[i]->name, "r_100_16n1") == 0;
  cr_expect(found, "no kernel named r_100_16n1");
  uop_ctx_free(c);
}

/* tinygrad's to_function_name: r_(start_pos+1)_32 -> r_28start_pos2B129_32 */
Test(codegen, function_name) {
  UCtx *c = uop_ctx_new();
  cr_expect_str_eq(lower_function_name(ga(), "r_(start_pos+1)_32"), "r_28start_pos2B129_32");
  cr_expect_str_eq(lower_function_name(ga(), "E_16_2"), "E_16_2");
  uop_ctx_free(c);
}

static const KOptCfg noopt = {KOPT_NONE, 0, {{0}}, 0}, heuristic = {KOPT_HEURISTIC, 0, {{0}}, 0};

/* the matmul kernel without opts: 2 output loops, 1 reduce loop, an accumulator, one store */
Test(codegen, matmul_structure) {
  const char *path = oracle_file("numeric/numeric.matmul.59608b.expect.json");
  UCtx *c = uop_ctx_new();
  lower_opt_config(&noopt);
  const Program *ps[4];
  cr_assert_eq(lower_ok(path, ps, 4), 1);
  cr_expect_eq(ps[0]->nopts, 0);
  int loops = 0, accs = 0, stores = 0, maxd = 0;
  for (int i = 0; i < ps[0]->ninst; i++) {
    const LInst *in = &ps[0]->inst[i];
    loops += in->kind == LK_LOOP; accs += in->kind == LK_ACC; stores += in->kind == LK_STORE;
    if (in->depth > maxd) maxd = in->depth;
  }
  cr_expect_eq(loops, 3);
  cr_expect_eq(accs, 1);
  cr_expect_eq(stores, 1);
  cr_expect_eq(maxd, 3);
  cr_expect_eq(ps[0]->nglobals, 3);
  cr_expect(ps[0]->globals[0].written && !ps[0]->globals[1].written);
  char *src = render_kernel(ga(), ps[0], &render_c);
  cr_expect(strstr(src, "float* restrict data0") != NULL, "%s", src);
  cr_expect(strstr(src, "const float* restrict data1") != NULL, "%s", src);
  lower_opt_config(&heuristic);
  uop_ctx_free(c);
}

/* the same matmul (64x96 @ 96x48) under tinygrad's heuristic: UPCAST:1:3,UPCAST:0:4,UNROLL:0:4 is
 * 12 accumulators, each updated with the 4 unrolled products in order (48 updates, one statement
 * per accumulator: acc + p0 + p1 + p2 + p3 as tinygrad folds them) in one reduce loop of 96/4,
 * 12 stores, loops of 64/4 and 48/3 */
Test(codegen, matmul_upcast_unroll) {
  const char *path = oracle_file("numeric/numeric.matmul.59608b.expect.json");
  UCtx *c = uop_ctx_new();
  const Program *ps[4];
  cr_assert_eq(lower_ok(path, ps, 4), 1);
  cr_expect_str_eq(kopt_format(ga(), ps[0]->nopts, ps[0]->opts), "UPCAST:1:3,UPCAST:0:4,UNROLL:0:4");
  cr_expect_str_eq(ps[0]->base_name, "r_64_48_96");
  cr_expect_str_eq(ps[0]->name, "r_16_16_3_4_24_4");
  int loops = 0, accs = 0, accums = 0, stores = 0;
  int64_t ends[8] = {0};
  for (int i = 0; i < ps[0]->ninst; i++) {
    const LInst *in = &ps[0]->inst[i];
    if (in->kind == LK_LOOP && loops < 8) ends[loops] = in->u->src[0]->arg->i;
    loops += in->kind == LK_LOOP; accs += in->kind == LK_ACC; accums += in->kind == LK_ACCUM; stores += in->kind == LK_STORE;
  }
  cr_expect_eq(loops, 3);
  cr_expect(ends[0] == 16 && ends[1] == 16 && ends[2] == 24, "loops %lld %lld %lld", (long long)ends[0], (long long)ends[1], (long long)ends[2]);
  cr_expect_eq(accs, 12);
  cr_expect_eq(accums, 48);
  cr_expect_eq(stores, 12);
  /* the four unrolled loads of a row of data1 are one vector load in C */
  char *src = render_kernel(ga(), ps[0], &render_c);
  cr_expect(strstr(src, "tg_f4 vec0 = (*(const tg_f4*)(data1+") && strstr(src, "= vec0[3];") && strstr(src, "typedef float tg_f4"), "%s", src);
  cr_expect(strstr(src, "acc0 = ((((acc0+(val") != NULL, "%s", src);
  /* CUDA: a float4 load needs 16-byte alignment: the base (ridx*384 + ...) and offset are multiples of 4 */
  char *cu = render_kernel(ga(), ps[0], &render_cuda);
  cr_expect(strstr(cu, "float4 vec0 = (*((const float4*)(data1+") && strstr(cu, "= vec0.w;"), "%s", cu);
  /* OpenCL: the same group as vload4 and .s0-.s3 lanes (no tg_f4) */
  char *cl = render_kernel(ga(), ps[0], &render_opencl);
  cr_expect(!strstr(cl, "tg_f4") && strstr(cl, "float4 vec0 = vload4(0, data1+") && strstr(cl, "= vec0.s3;"), "%s", cl);
  uop_ctx_free(c);
}

static int count_str(const char *s, const char *what) {
  int n = 0;
  for (const char *q = s; (q = strstr(q, what)); q += strlen(what)) n++;
  return n;
}
/* loop fission (render/loops.c): the row sum r_1024_64 of testdata/numeric/row_reductions under
 * UPCAST:0:4,UNROLL:0:4 keeps four rows in one reduce loop; with simd reductions (an OpenMP build
 * with fast_sums) it is four loops, one accumulator each, reading scalars the compiler widens; serial
 * C, and an OpenMP build by default (sums in tinygrad's order), keep one loop and its float4 loads.
 * The values are checked by make conformance (testdata/numeric). */
Test(codegen, fission_row_sums) {
  UCtx *c = uop_ctx_new();
  const Program *ps[16];
  lower_ok("testdata/numeric/row_reductions.expect.json", ps, 16);
  cr_assert_str_eq(ps[0]->base_name, "r_1024_64");
  cr_expect_str_eq(ps[0]->name, "r_256_4_16_4");
  cr_expect_str_eq(kopt_format(ga(), ps[0]->nopts, ps[0]->opts), "UPCAST:0:4,UNROLL:0:4");
  RenderBackend omp = render_c_threads(0);
  omp.fast_sums = true;
  char *src = render_kernel(ga(), ps[0], &omp);
  cr_expect_eq(count_str(src, "#pragma omp simd reduction(+:"), 4, "%s", src);
  for (int k = 0; k < 4; k++) {
    char want[64];
    snprintf(want, sizeof want, "reduction(+:acc%d)\n", k);
    cr_expect(strstr(src, want) != NULL, "no loop of its own for acc%d:\n%s", k, src);
  }
  cr_expect_eq(count_str(src, "for (int ridx"), 5, "%s", src);
  cr_expect(!strstr(src, "tg_f4 vec"), "%s", src);
  char *serial = render_kernel(ga(), ps[0], &render_c);
  cr_expect_eq(count_str(serial, "for (int ridx"), 2, "%s", serial);
  cr_expect(strstr(serial, "tg_f4 vec") != NULL, "%s", serial);
  RenderBackend ordered = render_c_threads(0);
  char *osrc = render_kernel(ga(), ps[0], &ordered);
  cr_expect_eq(count_str(osrc, "omp simd reduction"), 0, "%s", osrc);
  cr_expect_eq(count_str(osrc, "for (int ridx"), 2, "%s", osrc);
  uop_ctx_free(c);
}
/* reduce_collapse (codegen/reduce.c): in testdata/numeric/reduce_collapse the embedding lookup, the
 * gather and the three aranges have no accumulator and no loop over the reduced range left (tinygrad's
 * rendered kernels have none either); the count of range comparisons (a CAST of the bool, not a
 * where) and the one_hot sum keep theirs, as in tinygrad. Values: make conformance. */
Test(codegen, reduce_collapse) {
  UCtx *c = uop_ctx_new();
  const Program *ps[16];
  cr_assert_eq(lower_ok("testdata/numeric/reduce_collapse.expect.json", ps, 16), 7);
  const char *names[7] = {"r_32_16_1000_1000", "r_6_7_50_50", "r_3000_3000", "r_100_100", "r_665_665", "r_40_256_256", "r_300_40_300"};
  for (int k = 0; k < 7; k++) {
    cr_expect_str_eq(ps[k]->base_name, names[k]);
    int accs = 0, loops = 0;
    for (int i = 0; i < ps[k]->ninst; i++) { accs += ps[k]->inst[i].kind == LK_ACC; loops += ps[k]->inst[i].kind == LK_LOOP; }
    bool collapsed = k < 5;
    cr_expect_eq(accs == 0, collapsed, "kernel %d (%s): %d accumulators", k, ps[k]->name, accs);
    /* only output loops are left, one per merged axis as in tinygrad's kernels: the embedding's 32
     * (merged from 4 and 8) and 16, the gather's 6 and 7, one for each arange */
    if (collapsed) cr_expect_eq(loops, k <= 1 ? 2 : 1, "kernel %d (%s): %d loops", k, ps[k]->name, loops);
  }
  uop_ctx_free(c);
}
/* several UNROLLs feed the accumulator in tinygrad's expansion order: each UNROLL moves its axis to
 * the end of the shape, so the last one applied varies fastest. numeric.conv2d_groups' kernel gets
 * UNROLL:2:0,UNROLL:1:0 (kx, then ky) and tinygrad's rendered kernel adds the 3x3 window kx-major:
 * input offsets 0, 12, 24, 1, 13, 25, 2, 14, 26 (rows of 12); tgc added them row by row */
static int64_t const_offset(UOp *idx) {
  return idx->op == OP_ADD && idx->src[1]->op == OP_CONST ? idx->src[1]->arg->i : 0;
}
Test(codegen, unroll_order) {
  const char *path = oracle_file("numeric/numeric.conv2d_groups.c13b71.expect.json");
  UCtx *c = uop_ctx_new();
  const Program *ps[4];
  cr_assert_eq(lower_ok(path, ps, 4), 1);
  cr_expect_str_eq(kopt_format(ga(), ps[0]->nopts, ps[0]->opts), "UNROLL:2:0,UNROLL:1:0");
  const int64_t want[9] = {0, 12, 24, 1, 13, 25, 2, 14, 26};
  int n = 0;
  for (int i = 0; i < ps[0]->ninst && n < 9; i++) {
    const LInst *in = &ps[0]->inst[i];
    if (in->kind != LK_ACCUM) continue;
    UOp *v = in->aux, *ld = NULL;
    cr_assert_eq(v->op, OP_MUL);
    for (int k = 0; k < 2; k++) {
      UOp *x = v->src[k];
      if (x->op == OP_LOAD && x->src[0]->src[0]->op == OP_DEFINE_GLOBAL && x->src[0]->src[0]->arg->i == 1) ld = x;
    }
    cr_assert(ld != NULL, "update %d reads no input value", n);
    cr_expect_eq(const_offset(ld->src[0]->src[1]), want[n], "update %d reads input offset %lld, tinygrad's %lld", n,
                 (long long)const_offset(ld->src[0]->src[1]), (long long)want[n]);
    n++;
  }
  cr_expect_eq(n, 9);
  uop_ctx_free(c);
}
/* k-blocking (render/loops.c): testdata/numeric/matmul_kblock's reduce steps over four rows of B,
 * 4 KB, per iteration: the reduce runs in blocks of 8 around the column loop, each accumulator
 * resuming from its partial in the output; a backend without kblock keeps the plain nest (values:
 * make conformance, testdata/numeric) */
Test(codegen, kblock_matmul) {
  UCtx *c = uop_ctx_new();
  const Program *ps[4];
  cr_assert_eq(lower_ok("testdata/numeric/matmul_kblock.expect.json", ps, 4), 1);
  char *src = render_kernel(ga(), ps[0], &render_c);
  cr_expect(strstr(src, "for (int kblk = 0; kblk < 16; kblk += 8) {") && strstr(src, "= kblk+8;") == NULL, "%s", src);
  cr_expect(strstr(src, "float acc0 = kblk ? data0[") != NULL, "%s", src);
  cr_expect(strstr(src, "= kblk; ridx") != NULL, "%s", src);
  RenderBackend plain = render_c;
  plain.kblock = false;
  cr_expect(!strstr(render_kernel(ga(), ps[0], &plain), "kblk"));
  uop_ctx_free(c);
}
/* the CPU register tile (opt.c kopt_cpu_step): testdata/numeric/matmul_tile's (64,128)@(128,256)
 * gets tinygrad's 4x4 tile from the heuristic; with 16-float vectors (AVX-512) tgc adds 4x the
 * columns and 2x the rows (8x16: 128 accumulators), with 8-float ones 2x and 2x, with 4 nothing;
 * the 64x96@96x48 matmul, whose column upcast is 3, keeps tinygrad's opts. A list given by hand is
 * never extended. */
static const char *tile_opts(const char *path, int lanes, KOptMode mode) {
  KOptCfg cfg = {mode, 0, {{0}}, lanes};
  if (mode == KOPT_LIST) {
    char why[64];
    cr_assert(kopt_parse("UPCAST:1:4,UPCAST:0:4", &cfg, why, sizeof why));
    cfg.cpu_lanes = lanes;
  }
  lower_opt_config(&cfg);
  const Program *ps[4];
  cr_assert_eq(lower_ok(path, ps, 4), 2);
  cr_expect_str_eq(kopt_format(ga(), ps[0]->nopts, ps[0]->opts), kopt_format(ga(), ps[1]->nopts, ps[1]->opts));
  lower_opt_config(&heuristic);
  return kopt_format(ga(), ps[0]->nopts, ps[0]->opts);
}
Test(codegen, cpu_tile_matmul) {
  UCtx *c = uop_ctx_new();
  const char *mt = "testdata/numeric/matmul_tile.expect.json";
  cr_expect_str_eq(tile_opts(mt, 0, KOPT_HEURISTIC), "UPCAST:1:4,UPCAST:0:4,UNROLL:0:4");
  cr_expect_str_eq(tile_opts(mt, 4, KOPT_HEURISTIC), "UPCAST:1:4,UPCAST:0:4,UNROLL:0:4");
  cr_expect_str_eq(tile_opts(mt, 8, KOPT_HEURISTIC), "UPCAST:1:4,UPCAST:0:4,UNROLL:0:4,UPCAST:1:2,UPCAST:0:2");
  cr_expect_str_eq(tile_opts(mt, 16, KOPT_HEURISTIC), "UPCAST:1:4,UPCAST:0:4,UNROLL:0:4,UPCAST:1:4,UPCAST:0:2");
  cr_expect_str_eq(tile_opts(mt, 16, KOPT_LIST), "UPCAST:1:4,UPCAST:0:4");
  /* 128 accumulators, each still updated by the 4 unrolled products in order */
  KOptCfg cfg = {KOPT_HEURISTIC, 0, {{0}}, 16};
  lower_opt_config(&cfg);
  const Program *ps[4];
  cr_assert_eq(lower_ok(mt, ps, 4), 2);
  int accs = 0;
  for (int i = 0; i < ps[0]->ninst; i++) accs += ps[0]->inst[i].kind == LK_ACC;
  cr_expect_eq(accs, 128);
  const char *path = oracle_file("numeric/numeric.matmul.59608b.expect.json");
  cr_assert_eq(lower_ok(path, ps, 4), 1);
  cr_expect_str_eq(kopt_format(ga(), ps[0]->nopts, ps[0]->opts), "UPCAST:1:3,UPCAST:0:4,UNROLL:0:4");
  lower_opt_config(&heuristic);
  uop_ctx_free(c);
}

/* kopt_cpu_step's other case: testdata/numeric/row_reductions (sums, softmax, logsumexp, layernorm
 * over rows of 64) with 16-float vectors: the kernels that sum a transcendental over a dense axis
 * lose the heuristic's closing UNROLL (2 row sums of exps) and an elementwise exp its lone UPCAST;
 * every other kernel (max, plain sums, layernorm's cheap elementwise) keeps tinygrad's opts. A sum of
 * products of an exp keeps its UNROLL ((softmax(x)*x).sum: exp(x-m)*(1/s)*x): without it, symbolic
 * moves the row's 1/s out of the sum, and the values round differently from tinygrad's. */
Test(codegen, cpu_step_transcendental) {
  UCtx *c = uop_ctx_new();
  const char *path = "testdata/numeric/row_reductions.expect.json";
  const Program *p0[16], *p1[16];
  lower_opt_config(&heuristic);
  int n = lower_ok(path, p0, 16);
  KOptCfg cfg = {KOPT_HEURISTIC, 0, {{0}}, 16};
  lower_opt_config(&cfg);
  cr_assert_eq(lower_ok(path, p1, 16), n);
  lower_opt_config(&heuristic);
  int unrolls = 0, upcasts = 0;
  for (int i = 0; i < n; i++) {
    const char *h = kopt_format(ga(), p0[i]->nopts, p0[i]->opts), *g = kopt_format(ga(), p1[i]->nopts, p1[i]->opts);
    if (!strcmp(h, g)) continue;
    if (!strcmp(h, "UPCAST:0:4,UNROLL:0:4") && !strcmp(g, "UPCAST:0:4")) unrolls++;
    else if (p0[i]->nopts == 1 && p0[i]->opts[0].op == KOPT_UPCAST && p1[i]->nopts == 0) upcasts++;
    else cr_expect(false, "kernel %s: %s became %s", p0[i]->name, h, g);
  }
  cr_expect_eq(unrolls, 2);
  cr_expect_eq(upcasts, 1);
  uop_ctx_free(c);
}

/* a matmul's accumulators share their loads (the register tile): no fission */
Test(codegen, no_fission_shared_loads) {
  const char *path = oracle_file("numeric/numeric.matmul.59608b.expect.json");
  UCtx *c = uop_ctx_new();
  const Program *ps[4];
  cr_assert_eq(lower_ok(path, ps, 4), 1);
  RenderBackend omp = render_c_threads(0);
  char *src = render_kernel(ga(), ps[0], &omp);
  cr_expect_eq(count_str(src, "for (int ridx"), 3, "%s", src);
  uop_ctx_free(c);
}

/* opts lowering path's kernels refuse with TG_EINPUT naming reason */
/* path's kernels lowered with opts (the test stops when they do not lower), in a new context the
 * caller frees; the process-wide opts stay opts until the caller puts the heuristic back */
static UCtx *lower_with_ok(const char *path, const char *opts, const Program **ps, int cap) {
  KOptCfg cfg;
  char why[256];
  cr_assert(kopt_parse(opts, &cfg, why, sizeof why), "%s: %s", opts, why);
  lower_opt_config(&cfg);
  UCtx *c = uop_ctx_new();
  lower_ok(path, ps, cap);
  return c;
}
static void expect_refused(const char *path, const char *opts, const char *reason) {
  KOptCfg cfg;
  char why[256];
  cr_assert(kopt_parse(opts, &cfg, why, sizeof why), "%s", why);
  lower_opt_config(&cfg);
  UCtx *c = uop_ctx_new();
  TgTry t;
  if (TG_TRY(t)) {
    const Program *ps[4];
    lower_file(path, ps, 4);
    tg_try_end(&t);
    cr_expect_fail("%s applied on the C target", opts);
  } else {
    cr_expect_eq(tg_last_error.code, TG_EINPUT, "%s: %s", opts, tg_last_error.msg);
    cr_expect(strstr(tg_last_error.msg, reason) != NULL, "%s: %s", opts, tg_last_error.msg);
  }
  uop_ctx_free(c);
}

/* CUDA's float4 loads only where the offset is a known multiple of 4: in conv2d_basic's kernels
 * (3x3 windows: bases like ridx*3 and offsets like -57) every float4 offset constant is one, and
 * fewer groups form than in C, which loads four floats at any element alignment */
Test(codegen, cuda_float4_aligned) {
  const char *path = oracle_file("numeric/numeric.conv2d_basic.eff133.expect.json");
  UCtx *c = uop_ctx_new();
  const Program *ps[16];
  int n = lower_ok(path, ps, 16), nc = 0, ncu = 0;
  for (int i = 0; i < n; i++) {
    char *cu = render_kernel(ga(), ps[i], &render_cuda), *src = render_kernel(ga(), ps[i], &render_c);
    nc += count_str(src, "tg_f4 vec");
    for (const char *q = cu; (q = strstr(q, "(*((const float4*)(")); q++) {
      ncu++;
      const char *e = strstr(q, ")))");
      cr_assert(e, "%s", cu);
      const char *plus = q + strlen("(*((const float4*)(");
      /* data1+BASE+(C) or data1+BASE+0 or data1+C: the last '+' term is the constant */
      const char *last = NULL;
      for (const char *t = plus; t < e; t++) if (*t == '+') last = t;
      cr_assert(last, "%.*s", (int)(e - q), q);
      long long cst = strtoll(last[1] == '(' ? last + 2 : last + 1, NULL, 10);
      cr_expect(cst % 4 == 0, "float4 at an offset %lld not a multiple of 4: %.*s", cst, (int)(e - q + 3), q);
    }
  }
  cr_expect_gt(ncu, 0, "no CUDA float4 load at all");
  cr_expect_gt(nc, ncu, "C %d vector loads, CUDA %d", nc, ncu);
  uop_ctx_free(c);
}

/* opts given by hand, and ones that do not apply (tinygrad's KernelOptError checks) */
Test(codegen, opts_by_hand) {
  const char *path = oracle_file("numeric/numeric.matmul.59608b.expect.json");
  char why[256];
  KOptCfg cfg;
  cr_assert(kopt_parse("UPCAST:0:2,unroll:0:0", &cfg, why, sizeof why), "%s", why);
  cr_expect(!kopt_parse("UPCAST:0", &cfg, why, sizeof why));
  cr_expect(kopt_parse("LOCAL:0:4,GROUPTOP:0:16,NOLOCALS,swap:0:1", &cfg, why, sizeof why), "%s", why);
  cr_expect_eq(cfg.n, 4);
  {
    UCtx *c = uop_ctx_new();
    cr_expect_str_eq(kopt_format(ga(), cfg.n, cfg.v), "LOCAL:0:4,GROUPTOP:0:16,NOLOCALS,SWAP:0:1");
    uop_ctx_free(c);
  }
  cr_expect(!kopt_parse("TC:0:0", &cfg, why, sizeof why));
  cr_expect(!kopt_parse("UPCAST:0:4;UNROLL:0:4", &cfg, why, sizeof why));
  const char *bad[] = {"UPCAST:2:4", "UPCAST:0:5", "UPCAST:0:32", "UNROLL:1:4", "UNROLL:0:64", "UPCAST:0:4,UPCAST:2:4,UNROLL:0:0,UNROLL:0:4"};
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    cr_assert(kopt_parse(bad[i], &cfg, why, sizeof why), "%s", why);
    lower_opt_config(&cfg);
    UCtx *c = uop_ctx_new();
    TgTry t;
    if (TG_TRY(t)) {
      const Program *ps[4];
      lower_file(path, ps, 4);
      tg_try_end(&t);
      cr_expect_fail("%s applied to r_64_48_96", bad[i]);
    } else cr_expect_eq(tg_last_error.code, TG_EINPUT, "%s: %s", bad[i], tg_last_error.msg);
    uop_ctx_free(c);
  }
  /* thread opts on the C target: tinygrad's KernelOptError (the CLI's exit 3) */
  const char *gpu_only[][2] = {{"LOCAL:0:4", "target does not support local"}, {"GROUPTOP:0:16", "target does not support local or shared mem"},
                               {"NOLOCALS", "NOLOCALS is meaningless"}, {"SWAP:0:1", "swap is for globals"}};
  for (size_t i = 0; i < sizeof gpu_only / sizeof *gpu_only; i++) expect_refused(path, gpu_only[i][0], gpu_only[i][1]);
  const Program *ps[4];
  UCtx *c = lower_with_ok(path, "UPCAST:0:2,UNROLL:0:32", ps, 4);
  int accs = 0, loops = 0;
  int64_t last = 0;
  for (int i = 0; i < ps[0]->ninst; i++) {
    accs += ps[0]->inst[i].kind == LK_ACC;
    if (ps[0]->inst[i].kind == LK_LOOP) { loops++; last = ps[0]->inst[i].u->src[0]->arg->i; }
  }
  cr_expect_eq(accs, 2);
  cr_expect_eq(loops, 3);
  cr_expect_eq(last, 3, "the reduce loop runs 96/32 times");
  lower_opt_config(&heuristic);
  uop_ctx_free(c);
}


/* PADTO: the padded loop runs to the new end and every load and store past the old one is masked;
 * tinygrad's refusals, and tgc's own (a sum that another op keeps non-zero in the padding) */
Test(codegen, padto) {
  char odd[1024], mm[1024], sm[1024], why[256];
  snprintf(odd, sizeof odd, "%s/numeric/numeric.matmul_odd.27e7dc.expect.json", oracle());   /* r_37_29_53 */
  snprintf(mm, sizeof mm, "%s/numeric/numeric.matmul.59608b.expect.json", oracle());        /* r_64_48_96 */
  snprintf(sm, sizeof sm, "%s/numeric/numeric.softmax.8bdd2a.expect.json", oracle());       /* first: a MAX over 100 */
  KOptCfg cfg;
  cr_assert(kopt_parse("padto:2:32,UPCAST:1:4", &cfg, why, sizeof why), "%s", why);
  {
    UCtx *c = uop_ctx_new();
    cr_expect_str_eq(kopt_format(ga(), cfg.n, cfg.v), "PADTO:2:32,UPCAST:1:4");
    uop_ctx_free(c);
  }
  /* the reduce axis 53 -> 64: a loop of 64 whose two loads are masked by ridx < 53; the store is not */
  const Program *ps[4];
  UCtx *c = lower_with_ok(odd, "PADTO:2:32", ps, 4);
  int masked_loads = 0, masked_stores = 0;
  bool loop64 = false;
  for (int i = 0; i < ps[0]->ninst; i++) {
    const LInst *in = &ps[0]->inst[i];
    if (in->kind == LK_LOOP && in->u->src[0]->arg->i == 64) loop64 = true;
    if (in->kind == LK_VALUE && in->u->op == OP_LOAD && in->u->src[0]->nsrc == 3) masked_loads++;
    if (in->kind == LK_STORE && in->u->src[0]->nsrc == 3) masked_stores++;
  }
  cr_expect(loop64, "no loop of 64 after PADTO:2:32");
  cr_expect_eq(masked_loads, 2);
  cr_expect_eq(masked_stores, 0);
  uop_ctx_free(c);
  /* an output axis 29 -> 32, then upcast by 4: the store is masked too */
  c = lower_with_ok(odd, "PADTO:1:32,UPCAST:1:4", ps, 4);
  masked_stores = 0;
  for (int i = 0; i < ps[0]->ninst; i++) masked_stores += ps[0]->inst[i].kind == LK_STORE && ps[0]->inst[i].u->src[0]->nsrc == 3;
  cr_expect_eq(masked_stores, 3, "the first of the four (4r < 29 for r < 8) is never past the end");
  cr_expect_eq(ps[0]->upcast, 4);
  uop_ctx_free(c);
  expect_refused(mm, "PADTO:0:32", "nothing was padded");
  expect_refused(odd, "PADTO:0:256", "pad adds more than quadruple the work");
  expect_refused(mm, "UPCAST:0:4,PADTO:2:32", "cannot pad upcasted");
  expect_refused(sm, "PADTO:1:32", "cannot pad a reduce");
  expect_refused(odd, "PADTO:0:1", "1 or symbolic amount is meaningless");
  /* GROUPTOP splits the reduce with the group outermost: its remaining piece is not the axis' outer part */
  lower_target(&ktarget_opencl);
  expect_refused(odd, "PADTO:2:64,GROUPTOP:0:16,PADTO:3:8", "outermost piece");
  lower_target(&ktarget_c);
  lower_opt_config(&heuristic);
}

/* the length of kernel name s without its dedup suffix ("n3") */
static size_t base_len(const char *s) {
  size_t l = strlen(s), k = l;
  while (k && s[k - 1] >= '0' && s[k - 1] <= '9') k--;
  return k < l && k > 1 && s[k - 1] == 'n' ? k - 1 : l;
}
static bool same_kernel_name(const char *a, const char *b) {
  size_t la = base_len(a);
  return la == base_len(b) && !strncmp(a, b, la);
}

/* tinygrad's opts for every kernel of the graphs listed in tsv (tools/opts_oracle.py) against
 * tgc's, lowered for target t from their expect files (in dir, or NULL: the corpus' schedule/ and
 * numeric/); returns how many of how many kernels (*lines) agree, and the same over the kernels tgc
 * names as tinygrad does without opts (*same_good of *same: the same merged axes, so the heuristic
 * reads the same kernel). *named_bad counts the kernels of those that get tinygrad's opts but not
 * its name after them (the tsv's last column) */
static int heuristic_agreement_in(const char *tsv, const char *dir, const KTarget *t, int *lines_out, int *same_good, int *same, int *named_bad) {
  FILE *f = fopen(tsv, "r");
  cr_assert(f, "no %s", tsv);
  char line[4096], cur[1024] = "", path[2048];
  static const Program *ps[1024];
  int n = 0, lines = 0, bad = 0;
  UCtx *c = NULL;
  *same_good = *same = *named_bad = 0;
  lower_target(t);
  while (fgets(line, sizeof line, f)) {
    char file[1024], name[1024], want[2048], named[1024];
    int idx;
    if (sscanf(line, "%1023[^\t]\t%d\t%1023[^\t]\t%2047[^\t]\t%1023[^\n]", file, &idx, name, want, named) != 5) continue;
    lines++;
    if (strcmp(file, cur)) {
      if (c) uop_ctx_free(c);
      c = uop_ctx_new();
      snprintf(cur, sizeof cur, "%s", file);
      size_t l = strlen(file) - strlen(".graph.json");
      n = -1;
      for (int d = 0; d < 2 && n < 0; d++) {
        if (dir) snprintf(path, sizeof path, "%s/%.*s.expect.json", dir, (int)l, file);
        else snprintf(path, sizeof path, "%s/%s/%.*s.expect.json", oracle(), d ? "numeric" : "schedule", (int)l, file);
        if (!access(path, R_OK)) n = try_lower_file(path, ps, 1024);
      }
      cr_expect_geq(n, 0, "no expect file for %s", file);
    }
    const char *got = idx < n ? kopt_format(ga(), ps[idx]->nopts, ps[idx]->opts) : "(no kernel)";
    if (!*got) got = "-";
    if (idx < n && !same_kernel_name(ps[idx]->base_name, name) && getenv("TGC_NAMES_DIFF"))
      fprintf(stderr, "axes differ (%s): %s kernel %d: tgc %s, tinygrad %s\n", t->name, file, idx, ps[idx]->base_name, name);
    if (idx < n && same_kernel_name(ps[idx]->base_name, name)) {
      ++*same;
      *same_good += !strcmp(got, want);
      if (!strcmp(got, want) && !same_kernel_name(ps[idx]->name, named) && ++*named_bad <= 20)
        fprintf(stderr, "names differ (%s): %s kernel %d (%s): tgc %s, tinygrad %s\n", t->name, file, idx, got, ps[idx]->name, named);
    }
    if (strcmp(got, want) && ++bad <= (getenv("TGC_OPTS_DIFF") ? 100000 : 20)) fprintf(stderr, "opts differ (%s): " "%s kernel %d (%s, tgc %s): tgc %s, tinygrad %s\n", t->name, file, idx, name, idx < n ? ps[idx]->base_name : "-", got, want);
  }
  fclose(f);
  if (c) uop_ctx_free(c);
  lower_target(&ktarget_c);
  *lines_out = lines;
  return lines - bad;
}

static int heuristic_agreement(const char *tsv, const KTarget *t, int *lines_out, int *same_good, int *same, int *named_bad) {
  return heuristic_agreement_in(tsv, NULL, t, lines_out, same_good, same, named_bad);
}

/* tinygrad's hand_coded_optimizations on its CPU renderer for every kernel of the corpus graphs
 * listed in testdata/opts/hand_coded.tsv (tools/opts_oracle.py): the same opts, in order */
Test(codegen, heuristic_matches_tinygrad, .timeout = 600) {
  int lines, sg, sn, nb, good = heuristic_agreement("testdata/opts/hand_coded.tsv", &ktarget_c, &lines, &sg, &sn, &nb), bad = lines - good;
  cr_expect_gt(lines, 100);
  /* a kernel with tinygrad's merged axes and opts has its name too (r_16_32_3_4_12_4) */
  cr_expect_eq(nb, 0, "%d of %d kernels with tinygrad's axes and opts are not named as tinygrad names them", nb, sg);
  /* every kernel, since tgc lowers the AST after tinygrad's view rewrites (view_left, view_right and
   * the buffers' views on every kernel: the composed ShapeTrackers' masks decide the masked-axis
   * upcasts) and the opts' model tracks views[-1]'s mask (a split the mask cuts across appends a
   * contiguous view). Before: 99.40%, and 97.7% before the view rewrites on kernels with a reduce
   * under a reduce or a view */
  fprintf(stderr, "heuristic: %d of %d kernels get tinygrad's opts (%.2f%%)\n", lines - bad, lines, 100.0 * (lines - bad) / lines);
  cr_expect_eq(bad, 0, "%d of %d kernels differ from tinygrad's opts", bad, lines);
}

/* the same on a GPU target: tinygrad's OpenCLRenderer (locals and shared memory, no tensor cores;
 * testdata/opts/hand_coded_opencl.tsv from `tools/opts_oracle.py --renderer opencl`), with tgc
 * lowering for OpenCL: the opts of the Program, so a kernel whose opts tgc could not lower counts
 * as a difference too */
Test(codegen, heuristic_matches_tinygrad_opencl, .timeout = 600) {
  int lines, sg, sn, nb, good = heuristic_agreement("testdata/opts/hand_coded_opencl.tsv", &ktarget_opencl, &lines, &sg, &sn, &nb), bad = lines - good;
  cr_expect_gt(lines, 100);
  cr_expect_eq(nb, 0, "%d of %d kernels with tinygrad's axes and OpenCL opts are not named as tinygrad names them", nb, sg);
  cr_expect_gt(sn, lines * 9 / 10);
  /* every kernel, as on the CPU: the opts' model is the same, and tgc lowers each OpenCL opt list
   * tinygrad picks (LOCAL, GROUP, GROUPTOP) */
  fprintf(stderr, "GPU heuristic: %d of %d kernels get tinygrad's opts (%.2f%%); %d of the %d kernels tgc names as tinygrad does (%.2f%%)\n",
          lines - bad, lines, 100.0 * (lines - bad) / lines, sg, sn, 100.0 * sg / sn);
  cr_expect_eq(sg, sn, "%d of %d same-named kernels differ from tinygrad's OpenCL opts", sn - sg, sn);
  cr_expect_eq(bad, 0, "%d of %d kernels differ from tinygrad's OpenCL opts", bad, lines);
}

/* every kernel of the expect files in dir listed in tsv (the CPU renderer's) and in tsv_opencl gets
 * tinygrad's name without opts, its opts, and its name with them, on both renderers (at least
 * min_lines kernels in each table) */
static void expect_all_agree(const char *tsv, const char *tsv_opencl, const char *dir, int min_lines) {
  const struct { const char *tsv; const KTarget *t; } sets[] = {{tsv, &ktarget_c}, {tsv_opencl, &ktarget_opencl}};
  for (int i = 0; i < 2; i++) {
    int lines, sg, sn, nb, good = heuristic_agreement_in(sets[i].tsv, dir, sets[i].t, &lines, &sg, &sn, &nb);
    cr_expect_gt(lines, min_lines);
    cr_expect_eq(nb, 0, "%s: %d of %d kernels with tinygrad's axes and opts are not named as tinygrad names them", sets[i].tsv, nb, sg);
    cr_expect_eq(sn, lines, "%s: %d of %d kernels are not named (without opts) as tinygrad names them", sets[i].tsv, lines - sn, lines);
    cr_expect_eq(good, lines, "%s: %d of %d kernels differ from tinygrad's opts", sets[i].tsv, lines - good, lines);
  }
}

/* the same on random graphs outside the corpus (testdata/opts/random/: tools/randgraph.py, with
 * Variables, sharding and pads; testdata/opts/README.md), on both renderers: kernels with a symbolic
 * axis (strides that are UOps, which tinygrad's simplify_merge_adjacent does not merge) and masked
 * loads whose splits append a view */
Test(codegen, heuristic_matches_tinygrad_random, .timeout = 600) {
  expect_all_agree("testdata/opts/random.tsv", "testdata/opts/random_opencl.tsv", "testdata/opts/random", 100);
}

/* the same on the real models of testdata/zoo (testdata/models/make_models.py: a LLaMA block with a
 * KV cache at a Variable, BERT, optimizer steps, convs, an LSTM, sharding, a ViT, a U-Net, integer
 * ops, threefry dropout, ...; 513 kernels; testdata/opts/zoo.tsv
 * and zoo_opencl.tsv from tools/opts_oracle.py), on both renderers: every kernel named and
 * optimized as tinygrad does */
Test(codegen, heuristic_matches_tinygrad_zoo, .timeout = 600) {
  expect_all_agree("testdata/opts/zoo.tsv", "testdata/opts/zoo_opencl.tsv", "testdata/zoo", 500);
}

/* numpy: float32 -> float16 bits */
Test(codegen, half_bits) {
  cr_expect_eq(render_f2h(1.0f), 0x3c00);
  cr_expect_eq(render_f2h(65504.0f), 0x7bff);
  cr_expect_eq(render_f2h(65519.0f), 0x7bff);
  cr_expect_eq(render_f2h(65520.0f), 0x7c00);
  cr_expect_eq(render_f2h(2.98023224e-08f), 0x0000);
  cr_expect_eq(render_f2h(6e-08f), 0x0001);
  cr_expect_eq(render_f2h(-0.0f), 0x8000);
  cr_expect_eq(render_f2h(0.1f), 0x2e66);
  cr_expect_eq(render_f2h(1.0f / 3.0f), 0x3555);
  cr_expect(render_h2f(0x2e66) == 0.0999755859375f);
  cr_expect(render_h2f(0x0001) == 5.9604644775390625e-08f);
}
/* tinygrad cast_float_to_bf16: round to nearest even */
Test(codegen, bf16_bits) {
  cr_expect_eq(render_f2bf(1.0f), 0x3f80);
  cr_expect_eq(render_f2bf(0.1f), 0x3dcd);
  cr_expect_eq(render_f2bf(1.0f / 3.0f), 0x3eab);
  cr_expect_eq(render_f2bf(-2.5f), 0xc020);
  cr_expect(render_bf2f(0x3dcc) == 0.099609375f);
}

/* ---- every corpus AST: lower, render, compile ---- */
static int rm_tree(const char *dir) {
  char cmd[1200];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  return system(cmd);
}

/* lower and render one expect file's kernels into out; the kernel count, or -1 (tg_last_error) */
static int render_one(const char *path, const char *label, const char *out) {
  UCtx *c = uop_ctx_new();
  volatile int res = -1;
  TgTry t;
  if (TG_TRY(t)) {
    static const Program *ps[1024];
    int n = lower_file(path, ps, 1024);
    FILE *f = fopen(out, "w");
    if (f) {
      fprintf(f, "/* %s */\n%s\n", label, render_prelude(ga(), n, ps, &render_c));
      for (int k = 0; k < n; k++) fprintf(f, "%s\n", render_function(ga(), ps[k], &render_c));
      fclose(f);
      res = n;
    }
    tg_try_end(&t);
  }
  uop_ctx_free(c);
  return res;
}

/* fn(path, name, ctx) for every every-th expect file of the corpus, by name (schedule/, then
 * numeric/): the same files in the same order on every machine; the count of files */
typedef void (*ExpectFn)(const char *path, const char *name, void *ctx);
static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }
static int each_expect_file(int every, ExpectFn fn, void *ctx) {
  int files = 0;
  const char *subs[] = {"schedule", "numeric"};
  for (int s = 0; s < 2; s++) {
    char sub[1024];
    snprintf(sub, sizeof sub, "%s/%s", oracle(), subs[s]);
    DIR *d = opendir(sub);
    cr_assert(d != NULL, "no corpus at %s", sub);
    int n = 0, cap = 1024;
    char **names = malloc(sizeof(char *) * (size_t)cap);
    struct dirent *e;
    while ((e = readdir(d))) {
      size_t l = strlen(e->d_name);
      if (l < 12 || strcmp(e->d_name + l - 12, ".expect.json") != 0) continue;
      if (n == cap) names = realloc(names, sizeof(char *) * (size_t)(cap *= 2));
      names[n++] = strdup(e->d_name);
    }
    closedir(d);
    qsort(names, (size_t)n, sizeof *names, cmp_str);
    for (int i = 0; i < n; i++) {
      if (i % every == 0) {
        char path[2048];
        snprintf(path, sizeof path, "%s/%s", sub, names[i]);
        files++;
        fn(path, names[i], ctx);
      }
      free(names[i]);
    }
    free(names);
  }
  return files;
}

/* random opt lists (tinygrad's BEAM actions: UPCAST, UNROLL, PADTO; on OpenCL also LOCAL, GROUP,
 * GROUPTOP, NOLOCALS) on every 7th corpus file's kernels, grown as BEAM grows them and each lowered
 * and rendered: a list either applies or is refused as bad input (KernelOptError, exit 3), never
 * an internal error */
static uint64_t rnd_state = 0x9e3779b97f4a7c15ull;
static unsigned rnd(unsigned n) { rnd_state ^= rnd_state << 13; rnd_state ^= rnd_state >> 7; rnd_state ^= rnd_state << 17; return (unsigned)(rnd_state % n); }
static KOpt random_opt(bool gpu) {
  static const int up[] = {0, 2, 3, 4, 5, 7}, un[] = {0, 4, 7}, pad[] = {8, 16, 32}, loc[] = {2, 4, 8, 16}, grp[] = {0, 4, 8, 16};
  switch (rnd(gpu ? 7 : 3)) {
  case 0: return (KOpt){KOPT_UPCAST, (int)rnd(8), up[rnd(6)]};
  case 1: return (KOpt){KOPT_UNROLL, (int)rnd(5), un[rnd(3)]};
  case 2: return (KOpt){KOPT_PADTO, (int)rnd(7), pad[rnd(3)]};
  case 3: return (KOpt){KOPT_LOCAL, (int)rnd(6), loc[rnd(4)]};
  case 4: return (KOpt){KOPT_GROUPTOP, (int)rnd(3), loc[rnd(4)]};
  case 5: return (KOpt){KOPT_GROUP, (int)rnd(3), grp[rnd(4)]};
  default: return (KOpt){KOPT_NOLOCALS, 0, 0};
  }
}
/* lower and render ast with cfg: 1 applied (*npad: its PADTOs), 0 refused (tg_last_error says why) */
static int try_opts(UOp *ast, const KOptCfg *cfg, bool gpu, int *npad) {
  TgTry t;
  if (!TG_TRY(t)) return 0;
  const Program *p = lower_kernel_for(ast, NULL, cfg, gpu ? &ktarget_opencl : &ktarget_c);
  render_function(ga(), p, gpu ? &render_opencl : &render_c);
  tg_try_end(&t);
  *npad = 0;
  for (int q = 0; q < p->nopts; q++) *npad += p->opts[q].op == KOPT_PADTO;
  return 1;
}
typedef struct RandomOpts { int tried, applied, padded; } RandomOpts;
static void random_opts_file(const char *path, const char *name, void *ctx) {
  RandomOpts *ro = ctx;
  UCtx *c = uop_ctx_new();
  Expect *x = expect_read_file(path);
  for (int k = 0; k < x->nitems; k++) {
    if (strcmp(x->items[k].op, "SINK") != 0) continue;
    /* as BEAM grows its lists: an action is kept when the list with it still applies */
    for (int trial = 0; trial < 3; trial++) {
      bool gpu = trial == 2;
      KOptCfg cfg = {KOPT_LIST, 0, {{0}}, 0};
      int np = 0;
      for (int step = 0; step < 4; step++)
        for (int attempt = 0; attempt < 12; attempt++) {
          KOptCfg next = cfg;
          next.v[next.n++] = random_opt(gpu);
          ro->tried++;
          if (try_opts(x->items[k].ast, &next, gpu, &np)) { cfg = next; ro->applied++; break; }
          cr_expect_eq(tg_last_error.code, TG_EINPUT, "%s kernel %d, %s: %s", name, k, kopt_format(ga(), next.n, next.v), tg_last_error.msg);
        }
      ro->padded += np;
    }
  }
  uop_ctx_free(c);
}
Test(codegen, random_opts_apply_or_refuse, .timeout = 900) {
  RandomOpts ro = {0, 0, 0};
  int files = each_expect_file(7, random_opts_file, &ro);
  fprintf(stderr, "random opts: %d files, %d lists tried, %d applied (%d PADTOs in the final lists)\n", files, ro.tried, ro.applied, ro.padded);
  cr_expect_gt(ro.applied, 2000, "only %d opts applied", ro.applied);
  cr_expect_gt(ro.padded, 100);
}

typedef struct CorpusRender { const char *dir; int n, lowered, kernels, failed; } CorpusRender;
static void corpus_render_file(const char *path, const char *name, void *ctx) {
  CorpusRender *cr = ctx;
  char out[2048];
  snprintf(out, sizeof out, "%s/k%05d.c", cr->dir, ++cr->n);
  int n = render_one(path, name, out);
  if (n >= 0) { cr->kernels += n; cr->lowered++; }
  else if (++cr->failed < 10) cr_log_warn("%s: %s", name, tg_last_error.msg);
}
Test(codegen, corpus_renders_and_compiles, .timeout = 900) {
  char tmpl[] = "/tmp/tgc_codegen_XXXXXX";
  char *dir = mkdtemp(tmpl);
  cr_assert(dir != NULL);
  CorpusRender cr = {dir, 0, 0, 0, 0};
  int files = each_expect_file(1, corpus_render_file, &cr), lowered = cr.lowered, kernels = cr.kernels, failed = cr.failed;
  /* syntax-check in parallel; the list of files that fail goes to bad.txt */
  char cmd[2048];
  snprintf(cmd, sizeof cmd,
           "cd '%s' && ls k*.c | xargs -P 8 -n 40 sh -c 'for f; do cc -std=c11 -Wall -Werror -fsyntax-only \"$f\" 2>/dev/null || echo $f; done' _ > bad.txt",
           dir);
  cr_assert_eq(system(cmd), 0);
  char bad[2048];
  snprintf(bad, sizeof bad, "%s/bad.txt", dir);
  FILE *b = fopen(bad, "r");
  int nbad = 0;
  char line[256];
  while (b && fgets(line, sizeof line, b)) nbad++;
  if (b) fclose(b);
  cr_log_info("corpus: %d expect files, %d lowered (%d kernels), %d files fail to compile", files, lowered, kernels, nbad);
  fprintf(stderr, "codegen corpus: %d expect files, %d lowered (%d kernels), %d failed to lower, %d failed to compile\n",
          files, lowered, kernels, failed, nbad);
  cr_expect_eq(failed, 0);
  cr_expect_eq(nbad, 0);
  cr_expect_gt(kernels, 0);
  if (!failed && !nbad) rm_tree(dir);
}

/* The C backend's EXP2/LOG2 are tinygrad's xexp2/xlog2 polynomials (the prelude's tg_exp2f,
 * tg_log2f, tg_exp2, tg_log2): the prelude rendered for testdata/numeric's transcendental kernels,
 * compiled with a sweep against libm, must stay within 2 ulp (3 for double log2, as tinygrad's
 * own 1.0-ulp claim is per its paper's rounding) and get inf, nan, 0 and denormals right. */
static const char ulp_main[] =
  "#include <stdio.h>\n#include <string.h>\n#include <stdint.h>\n#include <stdlib.h>\n"
  "static int64_t uf(float a, float b) { if ((a != a && b != b) || a == b) return 0; if (a != a || b != b || isinf(a) || isinf(b)) return 1 << 30;\n"
  "  int32_t x, y; memcpy(&x, &a, 4); memcpy(&y, &b, 4); if (x < 0) x = INT32_MIN - x; if (y < 0) y = INT32_MIN - y; return llabs((int64_t)x - y); }\n"
  "static int64_t ud(double a, double b) { if ((a != a && b != b) || a == b) return 0; if (a != a || b != b || isinf(a) || isinf(b)) return 1 << 30;\n"
  "  int64_t x, y; memcpy(&x, &a, 8); memcpy(&y, &b, 8); if (x < 0) x = INT64_MIN - x; if (y < 0) y = INT64_MIN - y; return llabs(x - y); }\n"
  "int main(void) {\n"
  "  int64_t m[4] = {0};\n"
  "  float sp[] = {0.0f, -0.0f, INFINITY, -INFINITY, NAN, 1e-45f, 1e-38f, 127.9f, 128.0f, -149.9f, -150.0f, -151.0f, 1e30f, -1e30f, 1.0f, -1.0f, 0.5f};\n"
  "  for (unsigned i = 0; i < sizeof sp / sizeof *sp; i++) {\n"
  "    int64_t a = uf(tg_exp2f(sp[i]), exp2f(sp[i])), b = uf(tg_log2f(sp[i]), log2f(sp[i])), c = ud(tg_exp2(sp[i]), exp2(sp[i])), d = ud(tg_log2(sp[i]), log2(sp[i]));\n"
  "    int64_t v[4] = {a, b, c, d};\n"
  "    for (int k = 0; k < 4; k++) m[k] = v[k] > m[k] ? v[k] : m[k];\n"
  "  }\n"
  "  for (int i = 0; i < 400000; i++) {\n"
  "    float x = -160.0f + 300.0f * (float)i / 400000.0f, y = ldexpf(1.0f + (float)(i % 1000) / 1000.0f, (i / 1000) % 280 - 150);\n"
  "    double xd = -2010.0 + 3040.0 * i / 400000.0, yd = ldexp(1.0 + (i % 1000) / 1000.0, (i / 1000) % 400 * 5 - 1000);\n"
  "    int64_t a = uf(tg_exp2f(x), exp2f(x)), b = uf(tg_log2f(y), log2f(y)), c = ud(tg_exp2(xd), exp2(xd)), d = ud(tg_log2(yd), log2(yd));\n"
  "    int64_t v[4] = {a, b, c, d};\n"
  "    for (int k = 0; k < 4; k++) m[k] = v[k] > m[k] ? v[k] : m[k];\n"
  "  }\n"
  "  printf(\"%lld %lld %lld %lld\\n\", (long long)m[0], (long long)m[1], (long long)m[2], (long long)m[3]);\n"
  "  return 0;\n}\n";

Test(codegen, soft_math_ulp) {
  UCtx *c = uop_ctx_new();
  const Program *ps[32];
  int n = try_lower_file("testdata/numeric/transcendental_f32.expect.json", ps, 16);
  int n2 = try_lower_file("testdata/numeric/transcendental_f64.expect.json", ps + n, 16);
  cr_assert(n > 0 && n2 > 0);
  const char *pre = render_prelude(ga(), n + n2, ps, &render_c);
  cr_assert(strstr(pre, "tg_exp2f(float d)") && strstr(pre, "tg_log2f(float d)") && strstr(pre, "tg_exp2(double d)") && strstr(pre, "tg_log2(double d)"), "%s", pre);
  char dir[] = "/tmp/tgc_ulp_XXXXXX";
  cr_assert(mkdtemp(dir));
  char src[64], bin[64], cmd[512];
  snprintf(src, sizeof src, "%s/u.c", dir);
  snprintf(bin, sizeof bin, "%s/u", dir);
  FILE *f = fopen(src, "w");
  cr_assert(f);
  fprintf(f, "%s%s", pre, ulp_main);
  fclose(f);
  snprintf(cmd, sizeof cmd, "cc -std=c11 -O2 -Wall -Werror -Wno-unused-function -o %s %s -lm && %s > %s/out", bin, src, bin, dir);
  cr_assert_eq(system(cmd), 0, "%s", cmd);
  snprintf(src, sizeof src, "%s/out", dir);
  f = fopen(src, "r");
  long long m[4] = {-1, -1, -1, -1};
  cr_assert(f && fscanf(f, "%lld %lld %lld %lld", &m[0], &m[1], &m[2], &m[3]) == 4);
  fclose(f);
  cr_expect(m[0] <= 2 && m[1] <= 2 && m[2] <= 2 && m[3] <= 3, "max ulp exp2f %lld log2f %lld exp2 %lld log2 %lld", m[0], m[1], m[2], m[3]);
  snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
  cr_expect_eq(system(cmd), 0);
  uop_ctx_free(c);
}
