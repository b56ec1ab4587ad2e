/* Unit tests for lib/schedule/spec.c (tensor_uop_spec + spec, type_verify): every corpus input
 * graph came out of tinygrad 0.11.0, where Tensor.kernelize ran
 *   type_verify(list(big_sink.toposort()), tensor_uop_spec)
 * on it, so every one must pass; hand-broken graphs must fail the way tinygrad fails them. */
#include <criterion/criterion.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "io/graph.h"
#include "schedule/passes.h"
#include "shape/shape.h"

static UCtx *c;
static void setup(void) { c = uop_ctx_new(); spec_init(); }
static void teardown(void) { uop_ctx_free(c); }
TestSuite(spec, .init = setup, .fini = teardown);

static const char *oracle(void) { const char *o = getenv("TGC_ORACLE"); return o && *o ? o : "../shared/oracle"; }

/* 0 when type_verify passes, else fills msg */
static int verify(UOp *sink, char *msg, size_t cap) {
  TgTry t;
  if (TG_TRY(t)) {
    type_verify_tensor(uop_toposort(sink, NULL, NULL));
    tg_try_end(&t);
    return 0;
  }
  snprintf(msg, cap, "%s", tg_last_error.msg);
  return 1;
}

static Graph *read_graph(const char *path, char *msg, size_t cap) {
  TgTry t;
  if (TG_TRY(t)) {
    Graph *gr = graph_read_file(path);
    tg_try_end(&t);
    return gr;
  }
  snprintf(msg, cap, "read: %s", tg_last_error.msg);
  return NULL;
}

static void corpus_dir(const char *sub, int *files, int *passed) {
  char dir[4096];
  snprintf(dir, sizeof dir, "%s/%s", oracle(), sub);
  DIR *d = opendir(dir);
  cr_assert_not_null(d, "no corpus at %s (set TGC_ORACLE)", dir);
  struct dirent *e;
  int shown = 0;
  while ((e = readdir(d))) {
    size_t n = strlen(e->d_name);
    if (n < 11 || strcmp(e->d_name + n - 11, ".graph.json")) continue;
    char path[8192];
    snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
    UCtx *g = uop_ctx_new();
    char msg[1200] = "";
    Graph *gr = read_graph(path, msg, sizeof msg);
    int bad = gr ? verify(gr->sink, msg, sizeof msg) : 1;
    (*files)++;
    if (!bad) (*passed)++;
    else if (shown++ < 10) cr_log_error("%s: %s", e->d_name, msg);
    uop_ctx_free(g);
  }
  closedir(d);
  uctx = c;
}

Test(spec, every_corpus_graph_passes, .timeout = 600) {
  int files = 0, passed = 0;
  corpus_dir("schedule", &files, &passed);
  corpus_dir("numeric", &files, &passed);
  cr_log_info("tensor spec: %d/%d corpus graphs pass", passed, files);
  cr_assert_gt(files, 100);
  cr_assert_eq(passed, files, "%d of %d corpus graphs fail the tensor spec", files - passed, files);
}

/* a small valid tensor graph: BUFFER(UNIQUE, DEVICE) + CONST, as Tensor.empty(4)+1 builds it */
static UOp *dev(void) { return uop0(OP_DEVICE, dt_void, v_str("CPU")); }
static UOp *buf(const DType *dt) { return uop2(OP_BUFFER, dt, uop0(OP_UNIQUE, dt_void, v_int(1)), dev(), v_int(4)); }

Test(spec, small_graphs) {
  char msg[1200];
  UOp *b = buf(dt_float);
  UOp *r = uop1(OP_RESHAPE, dt_float, b, v_ints(1, (int64_t[]){4}));
  /* CONTIGUOUS float (r,) True; CONTIGUOUS int (r,) False; RESHAPE with arg 4 False; DEVICE arg=3 False */
  cr_assert_eq(verify(uop_sink(1, (UOp *[]){uop1(OP_CONTIGUOUS, dt_float, r, NULL)}, NULL), msg, sizeof msg), 0, "%s", msg);
  /* CONTIGUOUS that changes the dtype: lambda root,x: root.dtype == x.dtype -> False */
  cr_assert_eq(verify(uop_sink(1, (UOp *[]){uop1(OP_CONTIGUOUS, dt_int, r, NULL)}, NULL), msg, sizeof msg), 1);
  cr_assert(strstr(msg, "CONTIGUOUS"), "%s", msg);
  /* a movement op whose arg is not a tuple */
  cr_assert_eq(verify(uop_sink(1, (UOp *[]){uop1(OP_RESHAPE, dt_float, b, v_int(4))}, NULL), msg, sizeof msg), 1);
  cr_assert(strstr(msg, "RESHAPE"), "%s", msg);
  /* DEVICE with an int arg: isinstance(d.arg, str) -> False */
  UOp *bad_dev = uop2(OP_BUFFER, dt_float, uop0(OP_UNIQUE, dt_void, v_int(1)), uop0(OP_DEVICE, dt_void, v_int(3)), v_int(4));
  cr_assert_eq(verify(uop_sink(1, (UOp *[]){bad_dev}, NULL), msg, sizeof msg), 1);
  cr_assert(strstr(msg, "DEVICE"), "%s", msg);
  /* BUFFER with a float size: UOp(Ops.BUFFER, dtypes.float, (UNIQUE, DEVICE), 5.0) -> False */
  cr_assert(!spec_check_tensor(uop2(OP_BUFFER, dt_float, uop0(OP_UNIQUE, dt_void, v_int(1)), dev(), v_float(5))));
  /* (tensor_uop_spec+spec).rewrite(u) is True for, in order (tinygrad 0.11.0):
   * ADD(float r, int bi) False, ADD(r, r) True, CMPLT bool (r, r) True, CMPLT float (r, r) True (falls to the
   * ALU rule), IDIV float False, IDIV int True, CONST int 1 True, CONST int 1.0 False, CONST float 1 False,
   * CONST bool True True, ASSIGN (r,) False, REDUCE_AXIS (SUB, (0,)) False, (ADD, (0,)) True,
   * KERNEL(ADD) False, KERNEL(BUFFER) True, CMPLT bool (r, bi) False, MSTACK(b, b) True,
   * COPY float (r, DEVICE) True, COPY int (r, DEVICE) False */
  UOp *bi = uop1(OP_RESHAPE, dt_int, buf(dt_int), v_ints(1, (int64_t[]){4}));
  cr_assert(!spec_check_tensor(uop2(OP_ADD, dt_float, r, bi, NULL)));
  cr_assert(spec_check_tensor(uop2(OP_ADD, dt_float, r, r, NULL)));
  cr_assert(spec_check_tensor(uop2(OP_CMPLT, dt_bool, r, r, NULL)));
  cr_assert(spec_check_tensor(uop2(OP_CMPLT, dt_float, r, r, NULL)));
  cr_assert(!spec_check_tensor(uop2(OP_CMPLT, dt_bool, r, bi, NULL)));
  /* IDIV of floats is False; of ints it falls to the ALU rule */
  cr_assert(!spec_check_tensor(uop2(OP_IDIV, dt_float, r, r, NULL)));
  cr_assert(spec_check_tensor(uop2(OP_IDIV, dt_int, bi, bi, NULL)));
  /* CONST arg type must be the dtype's python type: UOp.const(dtypes.int, 1.0) is rejected */
  cr_assert(spec_check_tensor(uop_const_int(dt_int, 1)));
  cr_assert(!spec_check_tensor(uop0(OP_CONST, dt_int, v_float(1.0))));
  cr_assert(!spec_check_tensor(uop0(OP_CONST, dt_float, v_int(1))));
  cr_assert(spec_check_tensor(uop0(OP_CONST, dt_bool, v_bool(true))));
  /* ops with no rule (e.g. a bare ASSIGN with one src, a REDUCE_AXIS with a bad op) */
  cr_assert(!spec_check_tensor(uop1(OP_ASSIGN, dt_float, r, NULL)));
  cr_assert(!spec_check_tensor(uop1(OP_REDUCE_AXIS, dt_float, r, v_tuplev(2, v_ops(OP_SUB), v_ints(1, (int64_t[]){0})))));
  cr_assert(spec_check_tensor(uop1(OP_REDUCE_AXIS, dt_float, r, v_tuplev(2, v_ops(OP_ADD), v_ints(1, (int64_t[]){0})))));
  /* KERNEL with only buffer srcs passes; with an ADD src it has no rule */
  cr_assert(!spec_check_tensor(uop1(OP_KERNEL, dt_void, uop2(OP_ADD, dt_float, r, r, NULL), NULL)));
  cr_assert(spec_check_tensor(uop1(OP_KERNEL, dt_void, b, NULL)));
  cr_assert(spec_check_tensor(uop2(OP_MSTACK, dt_float, b, b, NULL)));
  cr_assert(spec_check_tensor(uop2(OP_COPY, dt_float, r, dev(), NULL)));
  cr_assert(!spec_check_tensor(uop2(OP_COPY, dt_int, r, dev(), NULL)));
}
