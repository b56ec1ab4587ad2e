/* Unit tests for lib/io and lib/uop/repr.c: one test per reader error class (exit code and exact
 * message), base64/npy round trips, the corpus round trip (read, write, read again into a fresh
 * context, compare structurally) over every graph in $TGC_ORACLE, the schedule writer on a
 * hand-built Schedule, and printing against strings produced by tinygrad 0.11.0. */
#include <criterion/criterion.h>
#include <cjson/cJSON.h>
#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "io/graph.h"
#include "schedule/schedule.h"

static UCtx *c;
static void setup(void) { c = uop_ctx_new(); }
static void teardown(void) { uop_ctx_free(c); }
TestSuite(io, .init = setup, .fini = teardown);

static const char *oracle(void) {
  const char *o = getenv("TGC_ORACLE");
  return o && *o ? o : "../shared/oracle";
}

/* read json as a graph named t.json; returns the error message ("" when it read fine) */
static char errbuf[1024];
static const char *read_err(const char *json) {
  TgTry t;
  errbuf[0] = 0;
  if (TG_TRY(t)) {
    graph_read_mem("t.json", json, strlen(json), "/nonexistent-dir");
    tg_try_end(&t);
    return errbuf;
  }
  cr_assert_eq(tg_last_error.code, TG_EINPUT, "code %d for: %s", tg_last_error.code, tg_last_error.msg);
  snprintf(errbuf, sizeof errbuf, "%s", tg_last_error.msg);
  return errbuf;
}
/* graph_read_mem in a TG_TRY: the graph, or NULL with the message in errbuf */
static Graph *try_read(const char *json, const char *dir) {
  static Graph *g;
  TgTry t;
  g = NULL;
  errbuf[0] = 0;
  if (TG_TRY(t)) {
    g = graph_read_mem("t.json", json, strlen(json), dir);
    tg_try_end(&t);
  } else snprintf(errbuf, sizeof errbuf, "%s", tg_last_error.msg);
  return g;
}
#define HDR "{\"format\":\"tgc.graph\",\"version\":1,"
#define ROWS(...) HDR "\"uops\":[" __VA_ARGS__ "],"
#define DEV "{\"id\":0,\"op\":\"UNIQUE\",\"dtype\":\"void\",\"arg\":0},{\"id\":1,\"op\":\"DEVICE\",\"dtype\":\"void\",\"arg\":\"CPU\"}"
#define expect_err(json, msg) cr_assert_str_eq(read_err(json), msg)

/* ---- reader: top level ---- */
/* cJSON takes any byte up to 32 for white space; JSON allows four */
Test(io, json_control_characters_refused) {
  expect_err("{\"format\":\"tgc.graph\",\n\"uops\"\x10:[]}", "t.json: JSON: control character 0x10 at line 2, column 7 (offset 29): only space, tab, newline and carriage return may stand between tokens, and a string must escape it");
  expect_err("{\"a\":\"x\x01y\"}", "t.json: JSON: control character 0x01 at line 1, column 8 (offset 7): only space, tab, newline and carriage return may stand between tokens, and a string must escape it");
}

Test(io, json_truncated_gives_line_and_offset) {
  expect_err("{\"format\":\"tgc.graph\",\n\"uops\":[1,", "t.json: JSON: truncated (unexpected end of input at line 2, column 11, offset 33)");
  expect_err("{\"a\":\"unterminated", "t.json: JSON: truncated (unexpected end of input at line 1, column 19, offset 18)");
  expect_err("{\"a\":1]", "t.json: JSON: syntax error at line 1, column 7 (offset 6)");
  expect_err("", "t.json: JSON: empty input");
  expect_err(" \n", "t.json: JSON: empty input");
}
Test(io, json_syntax_error) {
  expect_err("{\"format\":\"tgc.graph\",\n  \"uops\" [] }", "t.json: JSON: syntax error at line 2, column 10 (offset 32)");
  expect_err("{} x", "t.json: JSON: unexpected text after the document at line 1, column 4 (offset 3)");
}
Test(io, top_level_types) {
  expect_err("[1]", "t.json: expected a JSON object, got an array");
  expect_err("{\"format\":\"tgc.expect\",\"version\":1}", "t.json: format: is \"tgc.expect\", expected \"tgc.graph\"");
  expect_err("{\"format\":\"tgc.graph\",\"version\":2}", "t.json: version: 2 is not supported (only 1)");
  expect_err("{\"format\":\"tgc.graph\",\"version\":\"1\"}", "t.json: version: expected an integer, got a string");
  expect_err(HDR "\"sinks\":1}", "t.json: unknown top-level field \"sinks\"");
  expect_err(HDR "\"sink\":0}", "t.json: uops: missing");
  expect_err(HDR "\"uops\":{},\"sink\":0}", "t.json: uops: expected an array, got an object");
}
Test(io, options) {
  expect_err(HDR "\"options\":{\"FUSE_ARANGE\":true},\"uops\":[],\"sink\":0}", "t.json: options.FUSE_ARANGE: expected an integer, got a boolean");
  expect_err(HDR "\"options\":{\"FUSE_ARRANGE\":1},\"uops\":[],\"sink\":0}", "t.json: options.FUSE_ARRANGE: unknown option");
  cr_assert_str_eq(read_err(ROWS("{\"id\":0,\"op\":\"SINK\",\"dtype\":\"void\"}") "\"options\":{\"SPLIT_REDUCEOP\":0,\"REDUCEOP_SPLIT_SIZE\":7},\"sink\":0}"), "");
  cr_assert_eq(uctx->opt.split_reduceop, 0);
  cr_assert_eq(uctx->opt.reduceop_split_size, 7);
  cr_assert_eq(uctx->opt.fuse_arange, 1); /* a missing key takes the default */
  cr_assert_eq(uctx->opt.reduceop_split_threshold, 32768);
}
Test(io, sink_must_be_a_sink_row) {
  expect_err(ROWS(DEV) "\"sink\":1}", "t.json: sink: row 1 is a DEVICE, not a SINK");
  expect_err(ROWS(DEV) "\"sink\":7}", "t.json: sink: no row 7");
  expect_err(ROWS(DEV) "\"sink\":null}", "t.json: sink: expected a row id, got null");
  expect_err(ROWS(DEV) "\"snk\":1}", "t.json: unknown top-level field \"snk\"");
  expect_err(ROWS(DEV) "\"version\":1}", "t.json: duplicate top-level field \"version\"");
  expect_err(ROWS(DEV) "\"producer\":\"x\"}", "t.json: sink: missing");
}

/* the reader streams a file member by member and row by row; members in any order, whitespace
 * anywhere, and its errors are the whole-document reader's */
Test(io, streamed_members_in_any_order) {
  const char *rows = "[ {\"id\":0,\"op\":\"DEVICE\",\"dtype\":\"void\",\"arg\":\"CPU\"} ,\n"
                     "  {\"id\":1,\"op\":\"SINK\",\"dtype\":\"void\",\"src\":[]}\n ]";
  char a[1024], b[1024];
  snprintf(a, sizeof a, "{\"format\":\"tgc.graph\",\"version\":1,\"options\":{\"SPLIT_REDUCEOP\":0},\"uops\":%s,\"sink\":1}", rows);
  snprintf(b, sizeof b, "\n{ \"sink\" : 1 ,\"uops\" :%s , \"options\":{\"SPLIT_REDUCEOP\":0}, \"version\":1,\"format\":\"tgc.graph\" }\n", rows);
  Graph *ga_ = try_read(a, ".");
  cr_assert(ga_, "%s", errbuf);
  UOp *sa = ga_->sink;
  Graph *gb = try_read(b, ".");
  cr_assert(gb, "%s", errbuf);
  cr_assert_eq(gb->nrows, 2);
  cr_assert_eq(gb->sink, sa); /* interned: the same graph */
  cr_assert_eq(uctx->opt.split_reduceop, 0);
  snprintf(a, sizeof a, HDR "\"uops\":%s,\"uops\":%s,\"sink\":1}", rows, rows);
  expect_err(a, "t.json: duplicate top-level field \"uops\"");
  snprintf(a, sizeof a, HDR "\"uops\":%s,\"sink\":1} ,", rows);
  expect_err(a, "t.json: JSON: unexpected text after the document at line 3, column 14 (offset 155)");
  expect_err(HDR "\"uops\":[{\"id\":0,\"op\":\"SINK\",\"dtype\":\"void\"},],\"sink\":0}", "t.json: JSON: syntax error at line 1, column 79 (offset 78)");
}

/* ---- reader: rows ---- */
Test(io, row_shape_errors) {
  expect_err(ROWS("[]") "\"sink\":0}", "t.json: row 0: expected a row object, got an array");
  expect_err(ROWS(DEV ",{\"id\":5,\"op\":\"SINK\",\"dtype\":\"void\"}") "\"sink\":2}", "t.json: row 2: id: is 5, expected the row index 2");
  expect_err(ROWS("{\"op\":\"SINK\",\"dtype\":\"void\"}") "\"sink\":0}", "t.json: row 0: id: missing");
  expect_err(ROWS("{\"id\":0,\"op\":\"FOO\",\"dtype\":\"void\"}") "\"sink\":0}", "t.json: row 0: op: unknown op \"FOO\"");
  expect_err(ROWS("{\"id\":0,\"op\":\"CONST\",\"dtype\":\"flaot\",\"arg\":1}") "\"sink\":0}", "t.json: row 0 (CONST): dtype: unknown dtype \"flaot\"");
  expect_err(ROWS("{\"id\":0,\"op\":\"CONST\",\"arg\":1}") "\"sink\":0}", "t.json: row 0 (CONST): dtype: missing");
  expect_err(ROWS("{\"id\":0,\"op\":\"SINK\",\"dtype\":\"void\",\"srcs\":[]}") "\"sink\":0}", "t.json: row 0 (SINK): unknown field \"srcs\"");
  expect_err(ROWS("{\"id\":0,\"op\":\"SINK\",\"dtype\":\"void\",\"op\":\"SINK\"}") "\"sink\":0}", "t.json: row 0 (SINK): duplicate field \"op\"");
}
Test(io, src_must_name_an_earlier_row) {
  expect_err(ROWS(DEV ",{\"id\":2,\"op\":\"ADD\",\"dtype\":\"float\",\"src\":[0,42]}") "\"sink\":2}", "t.json: row 2 (ADD): src[1]: no row 42");
  expect_err(ROWS(DEV ",{\"id\":2,\"op\":\"ADD\",\"dtype\":\"float\",\"src\":[2,0]}") "\"sink\":2}", "t.json: row 2 (ADD): src[0]: row 2 is this row");
  expect_err(ROWS(DEV ",{\"id\":2,\"op\":\"ADD\",\"dtype\":\"float\",\"src\":[0,\"1\"]}") "\"sink\":2}", "t.json: row 2 (ADD): src[1]: expected a row id, got a string");
  expect_err(ROWS(DEV ",{\"id\":2,\"op\":\"ADD\",\"dtype\":\"float\",\"src\":1}") "\"sink\":2}", "t.json: row 2 (ADD): src: expected an array of row ids, got a number");
  expect_err(ROWS(DEV ",{\"id\":2,\"op\":\"ADD\",\"dtype\":\"float\",\"src\":[0,1.5]}") "\"sink\":2}", "t.json: row 2 (ADD): src[1]: expected a row id, got a float");
}
Test(io, const_number_takes_the_row_dtype) {
  cr_assert_str_eq(read_err(ROWS("{\"id\":0,\"op\":\"CONST\",\"dtype\":\"float\",\"arg\":1},"
                                 "{\"id\":1,\"op\":\"CONST\",\"dtype\":\"int\",\"arg\":1},"
                                 "{\"id\":2,\"op\":\"CONST\",\"dtype\":\"bool\",\"arg\":true},"
                                 "{\"id\":3,\"op\":\"CONST\",\"dtype\":\"ulong\",\"arg\":18446744073709551615},"
                                 "{\"id\":4,\"op\":\"CONST\",\"dtype\":\"half\",\"arg\":{\"float\":\"-inf\"}},"
                                 "{\"id\":5,\"op\":\"SINK\",\"dtype\":\"void\",\"src\":[0,1,2,3,4]}") "\"sink\":5}"), "");
  TgTry t;
  Graph *g = NULL;
  const char *j = ROWS("{\"id\":0,\"op\":\"CONST\",\"dtype\":\"float\",\"arg\":1},{\"id\":1,\"op\":\"CONST\",\"dtype\":\"int\",\"arg\":1},"
                       "{\"id\":2,\"op\":\"CONST\",\"dtype\":\"ulong\",\"arg\":18446744073709551615},{\"id\":3,\"op\":\"SINK\",\"dtype\":\"void\",\"src\":[0,1,2]}") "\"sink\":3}";
  if (TG_TRY(t)) { g = graph_read_mem("t.json", j, strlen(j), "."); tg_try_end(&t); }
  cr_assert(g);
  cr_assert_eq(g->rows[0]->arg, v_float(1.0));
  cr_assert_eq(g->rows[1]->arg, v_int(1));
  cr_assert_neq(g->rows[0], g->rows[1]);
  cr_assert_eq(g->rows[2]->arg, v_uint64(UINT64_MAX));
  cr_assert_neq(g->rows[2]->arg, v_int(-1));
  cr_assert_str_eq(value_repr(ga(), g->rows[2]->arg), "18446744073709551615");
  expect_err(ROWS("{\"id\":0,\"op\":\"CONST\",\"dtype\":\"int\",\"arg\":1.0}") "\"sink\":0}", "t.json: row 0 (CONST): arg: expected an integer for a int CONST, got a float");
  expect_err(ROWS("{\"id\":0,\"op\":\"CONST\",\"dtype\":\"bool\",\"arg\":1}") "\"sink\":0}", "t.json: row 0 (CONST): arg: expected true or false for a bool CONST, got a number");
  expect_err(ROWS("{\"id\":0,\"op\":\"CONST\",\"dtype\":\"float\",\"arg\":\"1\"}") "\"sink\":0}", "t.json: row 0 (CONST): arg: expected a number for a float CONST, got a string");
  expect_err(ROWS("{\"id\":0,\"op\":\"CONST\",\"dtype\":\"long\",\"arg\":99999999999999999999}") "\"sink\":0}", "t.json: row 0 (CONST): arg: integer 99999999999999999999 is out of range");
}
Test(io, arg_encodings) {
  expect_err(ROWS("{\"id\":0,\"op\":\"NOOP\",\"dtype\":\"void\",\"arg\":{\"foo\":1}}") "\"sink\":0}", "t.json: row 0 (NOOP): arg: unknown arg encoding \"foo\"");
  expect_err(ROWS("{\"id\":0,\"op\":\"NOOP\",\"dtype\":\"void\",\"arg\":[1,{\"ops\":\"ADD\",\"x\":1}]}") "\"sink\":0}", "t.json: row 0 (NOOP): arg[1]: unknown arg encoding (an object must have exactly one key)");
  expect_err(ROWS("{\"id\":0,\"op\":\"REDUCE_AXIS\",\"dtype\":\"float\",\"arg\":[{\"ops\":\"ADDD\"},[0]]}") "\"sink\":0}", "t.json: row 0 (REDUCE_AXIS): arg[0].ops: unknown op \"ADDD\"");
  expect_err(ROWS("{\"id\":0,\"op\":\"NOOP\",\"dtype\":\"void\",\"arg\":{\"float\":\"infinity\"}}") "\"sink\":0}", "t.json: row 0 (NOOP): arg.float: expected \"inf\", \"-inf\" or \"nan\", got \"infinity\"");
  expect_err(ROWS("{\"id\":0,\"op\":\"NOOP\",\"dtype\":\"void\",\"arg\":{\"uop\":0}}") "\"sink\":0}", "t.json: row 0 (NOOP): arg.uop: no row 0");
  expect_err(ROWS("{\"id\":0,\"op\":\"NOOP\",\"dtype\":\"void\",\"arg\":{\"dtype\":\"f32\"}}") "\"sink\":0}", "t.json: row 0 (NOOP): arg.dtype: unknown dtype \"f32\"");
  expect_err(ROWS("{\"id\":0,\"op\":\"NOOP\",\"dtype\":\"void\",\"arg\":{\"addrspace\":\"SHARED\"}}") "\"sink\":0}", "t.json: row 0 (NOOP): arg.addrspace: unknown address space \"SHARED\"");
  expect_err(ROWS("{\"id\":0,\"op\":\"NOOP\",\"dtype\":\"void\",\"tag\":\"\\xff\"}") "\"sink\":0}", "t.json: JSON: syntax error at line 1, column 85 (offset 84)");
  expect_err(ROWS("{\"id\":0,\"op\":\"NOOP\",\"dtype\":\"void\",\"tag\":\"\xff\"}") "\"sink\":0}", "t.json: row 0 (NOOP): tag: string is not valid UTF-8");
  expect_err(ROWS("{\"id\":0,\"op\":\"NOOP\",\"dtype\":\"void\",\"meta\":[{\"name\":\"x\",\"bw\":true}]}") "\"sink\":0}", "t.json: row 0 (NOOP): meta[0]: unknown metadata field \"bw\"");
  expect_err(ROWS("{\"id\":0,\"op\":\"NOOP\",\"dtype\":\"void\",\"arg\":{\"kernel\":{\"ast\":3}}}") "\"sink\":0}", "t.json: row 0 (NOOP): arg.kernel.ast: no row 3");
}
Test(io, shapetracker_encoding) {
  const char *v = "\"shape\":[2,3],\"strides\":[3,1],\"offset\":0,\"contiguous\":true";
  char j[1024];
  snprintf(j, sizeof j, ROWS(DEV ",{\"id\":2,\"op\":\"VIEW\",\"dtype\":\"void\",\"src\":[1],\"arg\":{\"st\":[{%s,\"mask\":null}]}}") "\"sink\":2}", v);
  expect_err(j, "t.json: sink: row 2 is a VIEW, not a SINK");
  snprintf(j, sizeof j, ROWS(DEV ",{\"id\":2,\"op\":\"VIEW\",\"dtype\":\"void\",\"arg\":{\"st\":[{\"shape\":[2,3],\"strides\":[1],\"offset\":0,\"mask\":null,\"contiguous\":true}]}}") "\"sink\":2}");
  expect_err(j, "t.json: row 2 (VIEW): arg.st[0].strides: 1 strides for 2 dims");
  snprintf(j, sizeof j, ROWS(DEV ",{\"id\":2,\"op\":\"VIEW\",\"dtype\":\"void\",\"arg\":{\"st\":[{\"shape\":[{\"uop\":9},3],\"strides\":[3,1],\"offset\":0,\"mask\":null,\"contiguous\":true}]}}") "\"sink\":2}");
  expect_err(j, "t.json: row 2 (VIEW): arg.st[0].shape[0].uop: no row 9");
  snprintf(j, sizeof j, ROWS(DEV ",{\"id\":2,\"op\":\"VIEW\",\"dtype\":\"void\",\"arg\":{\"st\":[{%s,\"mask\":[[0,1]]}]}}") "\"sink\":2}", v);
  expect_err(j, "t.json: row 2 (VIEW): arg.st[0].mask: 1 mask entries for 2 dims");
  snprintf(j, sizeof j, ROWS(DEV ",{\"id\":2,\"op\":\"VIEW\",\"dtype\":\"void\",\"arg\":{\"st\":[{%s,\"masks\":null}]}}") "\"sink\":2}", v);
  expect_err(j, "t.json: row 2 (VIEW): arg.st[0]: unknown view field \"masks\"");
  snprintf(j, sizeof j, ROWS(DEV ",{\"id\":2,\"op\":\"VIEW\",\"dtype\":\"void\",\"arg\":{\"st\":[]}}") "\"sink\":2}");
  expect_err(j, "t.json: row 2 (VIEW): arg.st: a ShapeTracker needs at least one view");
  /* a good one, with a symbolic dim and a mask */
  snprintf(j, sizeof j, ROWS("{\"id\":0,\"op\":\"DEFINE_VAR\",\"dtype\":\"int\",\"arg\":[\"n\",1,8]},"
                             "{\"id\":1,\"op\":\"VIEW\",\"dtype\":\"void\",\"arg\":{\"st\":[{\"shape\":[{\"uop\":0},3],\"strides\":[3,1],\"offset\":-3,\"mask\":[[1,{\"uop\":0}],[0,3]],\"contiguous\":false}]}},"
                             "{\"id\":2,\"op\":\"SINK\",\"dtype\":\"void\",\"src\":[1]}") "\"sink\":2}");
  cr_assert_str_eq(read_err(j), "");
}
Test(io, buffer_data) {
  /* 10 floats = 40 bytes; "AAAA" is 3 bytes */
  expect_err(ROWS(DEV ",{\"id\":2,\"op\":\"BUFFER\",\"dtype\":\"float\",\"src\":[0,1],\"arg\":10,\"data\":{\"encoding\":\"base64\",\"bytes\":\"AAAA\"}}") "\"sink\":2}",
             "t.json: row 2 (BUFFER): data.bytes: 3 bytes, the BUFFER needs 40 (10 x 4)");
  expect_err(ROWS(DEV ",{\"id\":2,\"op\":\"BUFFER\",\"dtype\":\"float\",\"src\":[0,1],\"arg\":1,\"data\":{\"encoding\":\"base64\",\"bytes\":\"AA*A\"}}") "\"sink\":2}",
             "t.json: row 2 (BUFFER): data.bytes: invalid base64");
  expect_err(ROWS(DEV ",{\"id\":2,\"op\":\"BUFFER\",\"dtype\":\"float\",\"src\":[0,1],\"arg\":1,\"data\":{\"encoding\":\"hex\",\"bytes\":\"00\"}}") "\"sink\":2}",
             "t.json: row 2 (BUFFER): data.encoding: unknown encoding \"hex\" (only base64)");
  expect_err(ROWS(DEV ",{\"id\":2,\"op\":\"BUFFER\",\"dtype\":\"float\",\"src\":[0,1],\"arg\":1,\"data\":{\"file\":\"w.npy\"}}") "\"sink\":2}",
             "t.json: row 2 (BUFFER): data.file: /nonexistent-dir/w.npy: cannot read: No such file or directory");
  expect_err(ROWS(DEV ",{\"id\":2,\"op\":\"ADD\",\"dtype\":\"float\",\"src\":[0,1],\"data\":{\"file\":\"w.npy\"}}") "\"sink\":2}",
             "t.json: row 2 (ADD): data: only BUFFER rows carry data");
  const char *ok = ROWS(DEV ",{\"id\":2,\"op\":\"BUFFER\",\"dtype\":\"float\",\"src\":[0,1],\"arg\":2,\"data\":{\"encoding\":\"base64\",\"bytes\":\"AACAPwAAAEA=\"}},"
                        "{\"id\":3,\"op\":\"UNIQUE\",\"dtype\":\"void\",\"arg\":41},{\"id\":4,\"op\":\"SINK\",\"dtype\":\"void\",\"src\":[2]}") "\"sink\":4}";
  Graph *g = try_read(ok, ".");
  cr_assert(g, "%s", errbuf);
  cr_assert(g);
  cr_assert_eq(g->ndata, 1);
  cr_assert_eq(g->data[0].buf, g->rows[2]);
  cr_assert_eq(g->data[0].nbytes, 8);
  float f[2];
  memcpy(f, g->data[0].bytes, 8);
  cr_assert(f[0] == 1.0f && f[1] == 2.0f);
  cr_assert_eq(g->max_unique, 41);
  cr_assert_eq(uctx->next_unique, 42);
}
Test(io, buffer_data_from_npy) {
  char dir[] = "/tmp/tgc-io-XXXXXX";
  cr_assert(mkdtemp(dir));
  char p[256];
  snprintf(p, sizeof p, "%s/w.npy", dir);
  int32_t xs[3] = {7, -8, 9};
  int64_t shape[1] = {3};
  cr_assert(npy_write(p, dt_int, 1, shape, xs, sizeof xs));
  const char *j = ROWS(DEV ",{\"id\":2,\"op\":\"BUFFER\",\"dtype\":\"int\",\"src\":[0,1],\"arg\":3,\"data\":{\"file\":\"w.npy\"}},{\"id\":3,\"op\":\"SINK\",\"dtype\":\"void\",\"src\":[2]}") "\"sink\":3}";
  const char *j2 = ROWS(DEV ",{\"id\":2,\"op\":\"BUFFER\",\"dtype\":\"int\",\"src\":[0,1],\"arg\":4,\"data\":{\"file\":\"w.npy\"}},{\"id\":3,\"op\":\"SINK\",\"dtype\":\"void\",\"src\":[2]}") "\"sink\":3}";
  const char *j3 = ROWS(DEV ",{\"id\":2,\"op\":\"BUFFER\",\"dtype\":\"float\",\"src\":[0,1],\"arg\":3,\"data\":{\"file\":\"w.npy\"}},{\"id\":3,\"op\":\"SINK\",\"dtype\":\"void\",\"src\":[2]}") "\"sink\":3}";
  Graph *g = try_read(j, dir);
  cr_assert(g, "%s", errbuf);
  cr_assert_eq(g->ndata, 1);
  cr_assert_eq(memcmp(g->data[0].bytes, xs, sizeof xs), 0);
  cr_assert_null(try_read(j2, dir));
  cr_assert_str_eq(errbuf, "t.json: row 2 (BUFFER): data.file: w.npy holds 3 elements, the BUFFER has 4");
  cr_assert_null(try_read(j3, dir));
  cr_assert_str_eq(errbuf, "t.json: row 2 (BUFFER): data.file: w.npy holds int, the BUFFER is float");
  unlink(p);
  rmdir(dir);
}

/* ---- base64 and npy ---- */
Test(io, base64_round_trip) {
  /* python3 -c "import base64; print(base64.b64encode(b'tinygrad!'), base64.b64encode(b'ab'))" */
  cr_assert_str_eq(b64_encode(ga(), "tinygrad!", 9), "dGlueWdyYWQh");
  cr_assert_str_eq(b64_encode(ga(), "ab", 2), "YWI=");
  cr_assert_str_eq(b64_encode(ga(), "", 0), "");
  unsigned char all[256];
  for (int i = 0; i < 256; i++) all[i] = (unsigned char)i;
  for (size_t n = 0; n <= 256; n += 37) {
    size_t m;
    unsigned char *d = b64_decode(ga(), b64_encode(ga(), all, n), &m);
    cr_assert(d);
    cr_assert_eq(m, n);
    cr_assert_eq(memcmp(d, all, n), 0);
  }
  size_t m;
  cr_assert_null(b64_decode(ga(), "YWI", &m));    /* unpadded */
  cr_assert_null(b64_decode(ga(), "YW I=", &m));  /* whitespace */
  cr_assert_null(b64_decode(ga(), "YWJ=", &m));   /* stray bits after the last byte */
  cr_assert_null(b64_decode(ga(), "Y===", &m));
  cr_assert_null(b64_decode(ga(), "=WI=", &m));
}
static bool try_npy(const char *p) { /* true when npy_read failed (message in errbuf) */
  const DType *dt;
  int nd;
  int64_t sh[TG_MAX_DIMS];
  size_t nb;
  TgTry t;
  if (TG_TRY(t)) { npy_read(ga(), p, &dt, &nd, sh, &nb); tg_try_end(&t); return false; }
  snprintf(errbuf, sizeof errbuf, "%s", tg_last_error.msg);
  return true;
}
Test(io, npy_round_trip_and_numpy_header) {
  char dir[] = "/tmp/tgc-io-XXXXXX";
  cr_assert(mkdtemp(dir));
  char p[256];
  snprintf(p, sizeof p, "%s/a.npy", dir);
  float xs[6] = {1, 2, 3, 4, 5, 6.5f};
  int64_t shape[2] = {2, 3};
  cr_assert(npy_write(p, dt_float, 2, shape, xs, sizeof xs));
  /* numpy 1.26: np.save('a.npy', np.zeros((2,3), np.float32)) writes this 128-byte header */
  size_t n;
  char *raw = read_file(ga(), p, &n);
  cr_assert_eq(n, 128 + sizeof xs);
  cr_assert_eq(memcmp(raw, "\x93NUMPY\x01\x00\x76\x00{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }", 69), 0);
  cr_assert_eq(raw[127], '\n');
  cr_assert_eq(raw[126], ' ');
  const DType *dt;
  int nd;
  int64_t sh[TG_MAX_DIMS];
  size_t nb;
  float *back = npy_read(ga(), p, &dt, &nd, sh, &nb);
  cr_assert_eq(dt, dt_float);
  cr_assert_eq(nd, 2);
  cr_assert(sh[0] == 2 && sh[1] == 3);
  cr_assert_eq(nb, sizeof xs);
  cr_assert_eq(memcmp(back, xs, sizeof xs), 0);
  /* 1-d and 0-d shapes print like numpy: (3,) and () */
  int64_t s1[1] = {3};
  cr_assert(npy_write(p, dt_uchar, 1, s1, "abc", 3));
  raw = read_file(ga(), p, &n);
  cr_assert(strstr(raw + 10, "'descr': '|u1', 'fortran_order': False, 'shape': (3,), }"));
  cr_assert(npy_write(p, dt_long, 0, NULL, "\1\0\0\0\0\0\0\0", 8));
  raw = read_file(ga(), p, &n);
  cr_assert(strstr(raw + 10, "'shape': (), }"));
  /* a truncated file is bad input */
  cr_assert(write_file_atomic(p, raw, n - 1));
  cr_assert(try_npy(p));
  cr_assert(strstr(errbuf, ".npy holds 7 data bytes, its shape needs 8"), "%s", errbuf);
  /* tinygrad's tensors have no dims limit: 12 dims round-trip, numpy 2's 64 do, 65 are refused */
  int64_t wide[TG_MAX_DIMS + 1];
  for (int i = 0; i <= TG_MAX_DIMS; i++) wide[i] = i % 5 == 0 ? 2 : 1;   /* 8 elements in 12 dims, 8192 in 64 */
  static float big[1 << 13];
  cr_assert(npy_write(p, dt_float, 12, wide, big, 8 * sizeof(float)));
  cr_assert(!try_npy(p), "%s", errbuf);
  npy_read(ga(), p, &dt, &nd, sh, &nb);
  cr_assert_eq(nd, 12);
  cr_assert(sh[0] == 2 && sh[1] == 1 && sh[10] == 2 && sh[11] == 1);
  cr_assert_eq(nb, 8 * sizeof(float));
  cr_assert(npy_write(p, dt_float, TG_MAX_DIMS, wide, big, sizeof big));
  cr_assert(!try_npy(p), "%s", errbuf);
  cr_assert(!npy_write(p, dt_float, TG_MAX_DIMS + 1, wide, big, sizeof big));
  /* a file with one more dim of 1, as numpy 2 could not write but a hand could */
  raw = read_file(ga(), p, &n);
  char *q = strstr(raw + 10, "), }");
  cr_assert(q);
  char *text = arena_printf(ga(), "%.*s, 1%s", (int)(q - (raw + 10)), raw + 10, q);
  size_t tl = strlen(text);
  char *file = arena_alloc(ga(), 10 + tl + sizeof big);
  memcpy(file, "\x93NUMPY\x01\x00", 8);
  file[8] = (char)(tl & 0xff), file[9] = (char)(tl >> 8);
  memcpy(file + 10, text, tl);
  memcpy(file + 10 + tl, big, sizeof big);
  cr_assert(write_file_atomic(p, file, 10 + tl + sizeof big));
  cr_assert(try_npy(p));
  cr_assert(strstr(errbuf, ".npy array of more than 64 dims"), "%s", errbuf);
  unlink(p);
  rmdir(dir);
}
Test(io, write_file_atomic_leaves_no_temp) {
  char dir[] = "/tmp/tgc-io-XXXXXX";
  cr_assert(mkdtemp(dir));
  char p[256];
  snprintf(p, sizeof p, "%s/out.json", dir);
  cr_assert(write_file_atomic(p, "hello", 5));
  size_t n;
  cr_assert_str_eq(read_file(ga(), p, &n), "hello");
  int entries = 0;
  DIR *d = opendir(dir);
  for (struct dirent *e; (e = readdir(d));) entries += e->d_name[0] != '.';
  closedir(d);
  cr_assert_eq(entries, 1);
  char bad[300];
  snprintf(bad, sizeof bad, "%s/no/such/dir/x", dir);
  cr_assert_not(write_file_atomic(bad, "x", 1));
  unlink(p);
  rmdir(dir);
}

/* ---- corpus round trip ---- */
static bool same_structure(UCtx *c1, UOp *s1, UCtx *c2, UOp *s2, char *why, size_t wn) {
  uctx = c1;
  UList a = uop_toposort(s1, NULL, NULL);
  uctx = c2;
  UList b = uop_toposort(s2, NULL, NULL);
  if (a.n != b.n) { snprintf(why, wn, "%d vs %d nodes", a.n, b.n); return false; }
  Map ia, ib;
  map_init(&ia, &c2->scratch);
  map_init(&ib, &c2->scratch);
  for (int i = 0; i < a.n; i++) { map_put(&ia, a.v[i], uop_h(a.v[i]), (void *)(intptr_t)i); map_put(&ib, b.v[i], uop_h(b.v[i]), (void *)(intptr_t)i); }
  for (int i = 0; i < a.n; i++) {
    UOp *x = a.v[i], *y = b.v[i];
    if (x->op != y->op || x->dtype != y->dtype || x->nsrc != y->nsrc) { snprintf(why, wn, "node %d: op/dtype/nsrc", i); return false; }
    if (strcmp(value_repr(&c2->scratch, x->arg), value_repr(&c2->scratch, y->arg))) { snprintf(why, wn, "node %d: arg", i); return false; }
    if (strcmp(value_repr(&c2->scratch, x->tag), value_repr(&c2->scratch, y->tag))) { snprintf(why, wn, "node %d: tag", i); return false; }
    if (x->arg->kind != y->arg->kind) { snprintf(why, wn, "node %d: arg kind", i); return false; }
    for (int k = 0; k < x->nsrc; k++)
      if (map_get(&ia, x->src[k], uop_h(x->src[k]), NULL) != map_get(&ib, y->src[k], uop_h(y->src[k]), NULL)) { snprintf(why, wn, "node %d: src %d", i, k); return false; }
    MetaList xm = uop_meta(x), ym = uop_meta(y);
    if (xm.n != ym.n) { snprintf(why, wn, "node %d: meta", i); return false; }
    for (int k = 0; k < xm.n; k++)
      if (strcmp(xm.m[k]->name, ym.m[k]->name) || xm.m[k]->backward != ym.m[k]->backward) { snprintf(why, wn, "node %d: meta %d", i, k); return false; }
  }
  return true;
}
static UCtx *rc1, *rc2;
static bool round_trip_one(const char *p, char *why, size_t wn) {
  static bool ok;
  rc1 = uop_ctx_new();
  rc2 = NULL;
  ok = false;
  TgTry t;
  if (TG_TRY(t)) {
    Graph *g1 = graph_read_file(p);
    char *text = graph_write(&rc1->arena, g1->sink, &g1->opt);
    rc2 = uop_ctx_new();
    Graph *g2 = graph_read_mem("rewritten", text, strlen(text), ".");
    ok = same_structure(rc1, g1->sink, rc2, g2->sink, why, wn) && memcmp(&g1->opt, &g2->opt, sizeof g1->opt) == 0;
    tg_try_end(&t);
  } else snprintf(why, wn, "%s", tg_last_error.msg);
  uop_ctx_free(rc2);
  uop_ctx_free(rc1);
  return ok;
}
static int round_trip_dir(const char *sub, int *nfail) {
  char dir[1024];
  snprintf(dir, sizeof dir, "%s/%s", oracle(), sub);
  DIR *d = opendir(dir);
  cr_assert(d, "cannot open %s (set TGC_ORACLE)", dir);
  int n = 0;
  for (struct dirent *e; (e = readdir(d));) {
    size_t l = strlen(e->d_name);
    if (l < 11 || strcmp(e->d_name + l - 11, ".graph.json")) continue;
    char p[2048];
    snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
    char why[1200] = "";
    if (!round_trip_one(p, why, sizeof why)) { (*nfail)++; if (*nfail < 5) cr_log_error("%s: %s", e->d_name, why); }
    n++;
  }
  closedir(d);
  uctx = c;
  return n;
}
Test(io, corpus_round_trip, .timeout = 600) {
  int fail = 0;
  int n = round_trip_dir("schedule", &fail) + round_trip_dir("numeric", &fail);
  cr_assert_gt(n, 100, "only %d corpus graphs found under %s", n, oracle());
  cr_assert_eq(fail, 0, "%d of %d graphs did not round-trip", fail, n);
}
static Expect *try_expect(const char *p) {
  static Expect *x;
  x = NULL;
  TgTry t;
  if (TG_TRY(t)) { x = expect_read_file(p); tg_try_end(&t); }
  else snprintf(errbuf, sizeof errbuf, "%s", tg_last_error.msg);
  return x;
}
Test(io, expect_file_reads) {
  char p[1024];
  /* tinygrad: test_schedule.TestSchedule.test_cache_binaryop schedules nothing for this graph */
  snprintf(p, sizeof p, "%s/schedule/test_schedule.TestSchedule_test_cache_binaryop.2.fcad31.expect.json", oracle());
  Expect *x = try_expect(p);
  cr_assert(x, "%s", errbuf);
  cr_assert_eq(x->kernels, 0);
  cr_assert_eq(x->nitems, 0);
  snprintf(p, sizeof p, "%s/numeric/numeric.batched_matmul.33a485.expect.json", oracle());
  x = try_expect(p);
  cr_assert(x, "%s", errbuf);
  cr_assert_geq(x->kernels, 1);
  cr_assert_eq(x->items[0].ast->op, OP_SINK);
  cr_assert_geq(x->noutputs, 1);
  size_t cnt = 1;
  for (int i = 0; i < x->outputs[0].ndim; i++) cnt *= (size_t)x->outputs[0].shape[i];
  cr_assert_eq(x->outputs[0].nbytes, cnt * (size_t)x->outputs[0].dtype->itemsize);
  /* an output of 10 dims (tinygrad's fancy indexing tests make them) */
  char dir[] = "/tmp/tgc-io-XXXXXX";
  cr_assert(mkdtemp(dir));
  snprintf(p, sizeof p, "%s/w.expect.json", dir);
  const char *doc = "{\"format\":\"tgc.expect\",\"version\":1,\"producer\":\"tinygrad 0.11.0\",\"kernels\":0,\"schedule\":[],\"uops\":[],"
                    "\"outputs\":[{\"index\":0,\"dtype\":\"float\",\"shape\":[1,1,1,1,1,1,1,1,1,2],\"encoding\":\"base64\",\"bytes\":\"AAAAAAAAAAA=\"}]}";
  cr_assert(write_file_atomic(p, doc, strlen(doc)));
  x = try_expect(p);
  cr_assert(x, "%s", errbuf);
  cr_assert_eq(x->outputs[0].ndim, 10);
  cr_assert(x->outputs[0].shape[8] == 1 && x->outputs[0].shape[9] == 2);
  unlink(p);
  rmdir(dir);
}

/* ---- a deep chain never reaches the C stack ---- */
/* 300,000 levels: far past any C stack a recursive walk would need (1,000,000 takes ~10 s at -O2, too
 * long under ASan for a unit test) */
Test(io, deep_chain_writes_and_reads, .timeout = 300) {
  UOp *u = uop_const_float(dt_float, 1.0);
  for (int i = 0; i < 300000; i++) u = uop1(OP_NEG, dt_float, u, NULL);
  UOp *s = uop_sink(1, &u, NULL);
  char *text = graph_write(ga(), s, NULL);
  UCtx *c2 = uop_ctx_new();
  Graph *g = try_read(text, ".");
  cr_assert(g, "%s", errbuf);
  cr_assert_eq(g->nrows, 300002);
  cr_assert_eq(g->sink->src[0]->op, OP_NEG);
  uop_ctx_free(c2);
  uctx = c;
  /* printing is quadratic in depth (two spaces of indent per level), so print a shallower chain */
  UOp *v = uop_const_float(dt_float, 1.0);
  for (int i = 0; i < 3000; i++) v = uop1(OP_NEG, dt_float, v, NULL);
  const char *r = uop_repr(ga(), v);
  /* level d (0..3000) holds 2d spaces and a 47-char NEG header or the 52-char CONST line; ")),"s close */
  cr_assert_eq(strncmp(r, "UOp(Ops.NEG, dtypes.float, arg=None, src=(\n  UOp(Ops.NEG", 55), 0);
  cr_assert(strstr(r, "UOp(Ops.CONST, dtypes.float, arg=1.0, src=()),))"));
}

/* ---- schedule writer on a hand-built schedule ---- */
Test(io, schedule_writer) {
  const char *j = ROWS(DEV ",{\"id\":2,\"op\":\"BUFFER\",\"dtype\":\"float\",\"src\":[0,1],\"arg\":4},"
                       "{\"id\":3,\"op\":\"SINK\",\"dtype\":\"void\",\"src\":[2]}") "\"sink\":3}";
  Graph *g = try_read(j, ".");
  cr_assert(g, "%s", errbuf);
  UOp *in = g->rows[2];
  UOp *out = uop_new(OP_BUFFER, dt_float, 2, (UOp *[]){uop0(OP_UNIQUE, dt_void, v_int(5)), g->rows[1]}, v_int(4), NULL);
  UOp *d0 = uop0(OP_DEFINE_GLOBAL, dt_ptr(dt_float, 4, AS_GLOBAL), v_int(0));
  UOp *d1 = uop0(OP_DEFINE_GLOBAL, dt_ptr(dt_float, 4, AS_GLOBAL), v_int(1));
  UOp *ld = uop1(OP_LOAD, dt_float, d1, NULL);
  UOp *st = uop2(OP_STORE, dt_void, d0, uop1(OP_NEG, dt_float, ld, NULL), NULL);
  UOp *ast = uop_sink(1, &st, NULL);
  UOp *cp = uop2(OP_COPY, dt_float, out, g->rows[1], NULL);
  const Meta *mneg = meta_intern("__neg__", "", false);
  SchedBuf b0[2] = {{out, -1}, {in, -1}}, b1[2] = {{out, -1}, {out, -1}};
  SchedItem items[2] = {{.ast = ast, .nbufs = 2, .bufs = b0, .meta = {1, &mneg}}, {.ast = cp, .nbufs = 2, .bufs = b1}};
  Schedule s = {.nitems = 2, .items = items, .nkernels = 1, .ncopies = 1};
  UOp *assign = uop2(OP_ASSIGN, dt_float, out, uop0(OP_KERNEL, dt_void, NULL), NULL);
  uint32_t *kval = arena_alloc(ga(), sizeof(uint32_t) * uctx->next_id), kkeys[1] = {in->id};
  kval[in->id] = assign->id;
  s.kernelize_map = (RMap){kval, uctx->next_id, 1, kkeys};
  const char *names[2] = {"E_4", NULL}, *srcs[2] = {"E_4.c", NULL};
  char *text = schedule_write_json(ga(), &s, g, names, srcs);
  cJSON *doc = cJSON_Parse(text);
  cr_assert(doc);
  cr_assert_str_eq(cJSON_GetObjectItem(doc, "format")->valuestring, "tgc.schedule");
  cr_assert_eq(cJSON_GetObjectItem(doc, "kernels")->valueint, 1);
  cJSON *its = cJSON_GetObjectItem(doc, "items"), *it0 = cJSON_GetArrayItem(its, 0), *it1 = cJSON_GetArrayItem(its, 1);
  cr_assert_eq(cJSON_GetArraySize(its), 2);
  cr_assert_str_eq(cJSON_GetObjectItem(it0, "name")->valuestring, "E_4");
  cr_assert_str_eq(cJSON_GetObjectItem(it0, "source")->valuestring, "E_4.c");
  cr_assert_str_eq(cJSON_GetObjectItem(it1, "name")->valuestring, "k1");
  cr_assert_null(cJSON_GetObjectItem(it1, "source"));
  cr_assert_str_eq(cJSON_GetObjectItem(it1, "op")->valuestring, "COPY");
  cr_assert_str_eq(cJSON_GetObjectItem(cJSON_GetArrayItem(cJSON_GetObjectItem(it0, "metadata"), 0), "name")->valuestring, "__neg__");
  cJSON *bufs = cJSON_GetObjectItem(doc, "buffers");
  cr_assert_eq(cJSON_GetArraySize(bufs), 2);
  cr_assert(cJSON_IsNull(cJSON_GetObjectItem(cJSON_GetArrayItem(bufs, 0), "graph_id")));   /* out: created */
  cr_assert_eq(cJSON_GetObjectItem(cJSON_GetArrayItem(bufs, 1), "graph_id")->valueint, 2); /* in: row 2 */
  cr_assert_str_eq(cJSON_GetObjectItem(cJSON_GetArrayItem(bufs, 1), "device")->valuestring, "CPU");
  cr_assert_eq(cJSON_GetObjectItem(cJSON_GetArrayItem(bufs, 1), "size")->valueint, 4);
  cJSON *ib1 = cJSON_GetObjectItem(it1, "bufs");
  cr_assert(cJSON_GetArrayItem(ib1, 0)->valueint == 0 && cJSON_GetArrayItem(ib1, 1)->valueint == 0);
  cJSON *o0 = cJSON_GetArrayItem(cJSON_GetObjectItem(doc, "outputs"), 0);
  cr_assert_eq(cJSON_GetObjectItem(o0, "buffer")->valueint, 0); /* sink source -> ASSIGN into out */
  cr_assert_eq(cJSON_GetArrayItem(cJSON_GetObjectItem(o0, "shape"), 0)->valueint, 4);
  /* items' ASTs are rows of the uop table */
  cJSON *uops = cJSON_GetObjectItem(doc, "uops");
  int a0 = cJSON_GetObjectItem(it0, "ast")->valueint, a1 = cJSON_GetObjectItem(it1, "ast")->valueint;
  cr_assert_str_eq(cJSON_GetObjectItem(cJSON_GetArrayItem(uops, a0), "op")->valuestring, "SINK");
  cr_assert_str_eq(cJSON_GetObjectItem(cJSON_GetArrayItem(uops, a1), "op")->valuestring, "COPY");
  cr_assert_eq(cJSON_GetArraySize(uops), 10); /* SINK STORE DEFINE_GLOBAL*2 NEG LOAD; COPY BUFFER UNIQUE DEVICE */
  cJSON_Delete(doc);
}

/* ---- printing, against tinygrad 0.11.0 ---- */
Test(io, float_repr_is_python_repr) {
  /* python3 -c "print(repr(1.0), repr(1e-05), repr(1e16), repr(1e15), repr(0.1+0.2), repr(-0.0), repr(5e-324),
   *                  repr(123456789012345678.0), repr(0.0001), repr(1.5e300), repr(2.5), repr(100.0), repr(float('nan')))" */
  const struct { double f; const char *s; } cs[] = {
    {1.0, "1.0"}, {1e-05, "1e-05"}, {1e16, "1e+16"}, {1e15, "1000000000000000.0"}, {0.1 + 0.2, "0.30000000000000004"},
    {-0.0, "-0.0"}, {5e-324, "5e-324"}, {123456789012345678.0, "1.2345678901234568e+17"}, {0.0001, "0.0001"},
    {1.5e300, "1.5e+300"}, {2.5, "2.5"}, {100.0, "100.0"}, {NAN, "nan"}, {-INFINITY, "-inf"}, {0.6931471805599453, "0.6931471805599453"},
  };
  char b[64];
  for (size_t i = 0; i < sizeof cs / sizeof *cs; i++) {
    float_repr(b, sizeof b, cs[i].f);
    cr_assert_str_eq(b, cs[i].s);
  }
}
Test(io, value_repr_is_python_repr) {
  /* python3 -c "from tinygrad.shape.shapetracker import ShapeTracker; print(repr(ShapeTracker.from_shape((10,3)).pad(((1,1),(0,0)))))" */
  const Sint sh[2] = {si(12), si(3)}, st[2] = {si(3), si(1)}, mk[4] = {si(1), si(11), si(0), si(3)};
  const View *v = view_intern(2, sh, st, si(-3), mk, false);
  cr_assert_str_eq(value_repr(ga(), v_st(st_intern(1, &v))),
                   "ShapeTracker(views=(View(shape=(12, 3), strides=(3, 1), offset=-3, mask=((1, 11), (0, 3)), contiguous=False),))");
  cr_assert_str_eq(value_repr(ga(), v_tuplev(2, v_str("CPU"), v_str("CPU:1"))), "('CPU', 'CPU:1')");
  cr_assert_str_eq(value_repr(ga(), v_tuplev(1, v_int(1))), "(1,)");
  cr_assert_str_eq(value_repr(ga(), v_tuplev(0)), "()");
  /* python3 -c "print(repr('it\'s \"q\" \\\\ \n \x01 é'))" */
  cr_assert_str_eq(value_repr(ga(), v_str("it's \"q\" \\ \n \x01 \xc3\xa9")), "'it\\'s \"q\" \\\\ \\n \\x01 \xc3\xa9'");
  cr_assert_str_eq(value_repr(ga(), v_str("it's")), "\"it's\"");
  /* repr(Ops.ADD), str(Ops.ADD), repr(AddrSpace.LOCAL), repr(dtypes.float.ptr(16, AddrSpace.LOCAL)) */
  cr_assert_str_eq(value_repr(ga(), v_ops(OP_ADD)), "<Ops.ADD: 62>");
  cr_assert_str_eq(value_str(ga(), v_ops(OP_ADD)), "Ops.ADD");
  cr_assert_str_eq(value_repr(ga(), v_addrspace(AS_LOCAL)), "<AddrSpace.LOCAL: 2>");
  cr_assert_str_eq(value_repr(ga(), v_dtype(dt_ptr(dt_float, 16, AS_LOCAL))), "dtypes.float.ptr(16, AddrSpace.LOCAL)");
  cr_assert_str_eq(value_repr(ga(), v_tuplev(3, v_none(), v_bool(true), v_float(INFINITY))), "(None, True, inf)");
}
Test(io, uop_repr_is_tinygrad_repr) {
  /* a=UOp(Ops.CONST, dtypes.float, arg=1.0); b=UOp(Ops.ADD, dtypes.float, (a,a), tag=('x',1))
   * print(repr(UOp(Ops.SINK, src=(b,b,a)))); print(repr(UOp(Ops.REDUCE_AXIS, dtypes.float, (b,), (Ops.ADD,(0,1))))) */
  UOp *a = uop_const_float(dt_float, 1.0);
  UOp *b = uop_with_tag(uop2(OP_ADD, dt_float, a, a, NULL), v_tuplev(2, v_str("x"), v_int(1)));
  UOp *s = uop_new(OP_SINK, dt_void, 3, (UOp *[]){b, b, a}, NULL, NULL);
  cr_assert_str_eq(uop_repr(ga(), s),
                   "UOp(Ops.SINK, dtypes.void, arg=None, src=(\n"
                   "  x0:=UOp(Ops.ADD, dtypes.float, arg=None, tag=('x', 1), src=(\n"
                   "    x1:=UOp(Ops.CONST, dtypes.float, arg=1.0, src=()),\n"
                   "     x1,)),\n"
                   "   x0,\n"
                   "   x1,))");
  UOp *r = uop1(OP_REDUCE_AXIS, dt_float, b, v_tuplev(2, v_ops(OP_ADD), v_tuplev(2, v_int(0), v_int(1))));
  cr_assert_str_eq(uop_repr(ga(), r),
                   "UOp(Ops.REDUCE_AXIS, dtypes.float, arg=(Ops.ADD, (0, 1)), src=(\n"
                   "  UOp(Ops.ADD, dtypes.float, arg=None, tag=('x', 1), src=(\n"
                   "    x1:=UOp(Ops.CONST, dtypes.float, arg=1.0, src=()),\n"
                   "     x1,)),))");
  /* a tag that is a string prints with str(): UOp(Ops.CONST, dtypes.int, arg=3, tag='t') -> tag=t */
  cr_assert_str_eq(uop_repr(ga(), uop_with_tag(uop_const_int(dt_int, 3), v_str("t"))), "UOp(Ops.CONST, dtypes.int, arg=3, tag=t, src=())");
}
Test(io, corpus_graph_repr_matches_tinygrad) {
  /* /tmp load.py (rebuilds the tinygrad UOps from the rows) on test_multitensor.TestBatchNorm_test_batchnorm.2.abd0a7:
   * print(repr(u[d["sink"]])) -- its first lines, including a DEFINE_VAR inside a SHRINK arg */
  char p[1024];
  snprintf(p, sizeof p, "%s/schedule/test_multitensor.TestBatchNorm_test_batchnorm.2.abd0a7.graph.json", oracle());
  size_t n;
  char *text = read_file(ga(), p, &n);
  cr_assert(text, "cannot read %s", p);
  Graph *g = try_read(text, ".");
  cr_assert(g, "%s", errbuf);
  const char *r = uop_repr(ga(), g->sink);
  const char *want =
    "                          x12:=UOp(Ops.MULTI, dtypes.int, arg=0, src=(\n"
    "                            UOp(Ops.SHRINK, dtypes.int, arg=((UOp(Ops.MUL, dtypes.int, arg=None, src=(\n"
    "  UOp(Ops.DEFINE_VAR, dtypes.int, arg=('_device_num', 0, 3), src=()),\n"
    "  UOp(Ops.CONST, dtypes.int, arg=2, src=()),)), UOp(Ops.ADD, dtypes.int, arg=None, src=(\n"
    "  UOp(Ops.MUL, dtypes.int, arg=None, src=(\n"
    "    UOp(Ops.DEFINE_VAR, dtypes.int, arg=('_device_num', 0, 3), src=()),\n"
    "    x2:=UOp(Ops.CONST, dtypes.int, arg=2, src=()),)),\n"
    "   x2,))), (0, 8), (0, 8), (0, 8)), src=(\n";
  cr_assert(strstr(r, want), "repr differs from tinygrad's:\n%.2000s", r);
  cr_assert_eq(strncmp(r, "UOp(Ops.SINK, dtypes.void, arg=None, src=(\n  UOp(Ops.COPY, dtypes.float, arg=None, src=(\n", 88), 0);
}
