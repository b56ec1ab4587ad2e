/* test_swizzle: the swizzler (codegen/opt/swizzler.py) and multi-device (schedule/multi.py) rewrites,
 * each case built in C the way the tinygrad 0.11.0 snippet beside it builds it, and checked against
 * the uop_repr string that tinygrad printed for the rewritten graph. The snippets share:
 *
 *   from tinygrad.uop.ops import UOp, Ops, graph_rewrite
 *   from tinygrad.dtype import dtypes
 *   from tinygrad.helpers import Context
 *   from tinygrad.shape.shapetracker import ShapeTracker
 *   from tinygrad.codegen.opt.swizzler import merge_views, view_left, apply_swizzle, swizzle_reduceop
 *   from tinygrad.schedule.multi import multi_pm
 *   def buf(n, dev="CPU", u=0, dt=dtypes.float):
 *     return UOp(Ops.BUFFER, dt, (UOp(Ops.UNIQUE, arg=u), UOp(Ops.DEVICE, arg=dev)), n)
 *   devs = ("CPU:1","CPU:2")
 *   m = buf(4, devs, u=10).reshape((2,2)).multi(0)
 *   def show(x): print(graph_rewrite(x.sink(), multi_pm)) */
#include <criterion/criterion.h>

#include "schedule/passes.h"

static void setup(void) {
  uop_ctx_new();
  symbolic_init();
  shape_init();
  pm_init();
  swizzler_init();
  multi_init();
}
static void teardown(void) { uop_ctx_free(uctx); }

/* ---- builders mirroring the snippets ---- */
static const Value *devs2(void) { return v_tuplev(2, v_str("CPU:1"), v_str("CPU:2")); }
static UOp *buf(int64_t n, const Value *dev, int64_t u) {
  return uop2(OP_BUFFER, dt_float, uop0(OP_UNIQUE, dt_void, v_int(u)), uop0(OP_DEVICE, dt_void, dev), v_int(n));
}
static SList shp(int n, ...) {
  va_list ap;
  va_start(ap, n);
  Sint *s = arena_alloc(ga(), sizeof(Sint) * (size_t)(n + 1));
  for (int i = 0; i < n; i++) s[i] = si(va_arg(ap, int));
  va_end(ap);
  return sl(n, s);
}
static Sint *pairs(int n, ...) { /* n pairs */
  va_list ap;
  va_start(ap, n);
  Sint *s = arena_alloc(ga(), sizeof(Sint) * (size_t)(2 * n + 1));
  for (int i = 0; i < 2 * n; i++) s[i] = si(va_arg(ap, int));
  va_end(ap);
  return s;
}
static const ShapeTracker *from_shape(SList s) { return st_from_shape(s, NULL); }
static UOp *view(UOp *u, const ShapeTracker *st) { return uop1(OP_VIEW, u->dtype, u, v_st(st)); }
static UOp *sink1(UOp *u) { return uop_sink(1, &u, NULL); }
static UOp *multi(UOp *u, int axis) { return uop1(OP_MULTI, u->dtype, u, v_int(axis)); }
static UOp *r1(UOp *u, Op op, int axis) { return u_r(u, op, 1, &axis); }
static UOp *m_base(void) { return multi(u_reshape(buf(4, devs2(), 10), shp(2, 2, 2)), 0); }
static const char *rw_multi(UOp *x) { return uop_repr(ga(), graph_rewrite(sink1(x), pm_multi, NULL, false, NULL)); }
#define CHECK(got, exp) cr_assert_str_eq((got), (exp), "\ngot:\n%s\nexpected:\n%s", (got), (exp))

static const char *const EXP_T1 = /* T1 merge views reshape+permute */
  "UOp(Ops.SINK, dtypes.void, arg=None, src=(\n"
  "  UOp(Ops.VIEW, dtypes.float, arg=ShapeTracker(views=(View(shape=(4, 3), strides=(1, 4), offset=0, mask=None, contiguous=False),)), src=(\n"
  "    UOp(Ops.BUFFER, dtypes.float, arg=12, src=(\n"
  "      UOp(Ops.UNIQUE, dtypes.void, arg=0, src=()),\n"
  "      UOp(Ops.DEVICE, dtypes.void, arg='CPU', src=()),)),)),))";
static const char *const EXP_T2 = /* T2 view of view */
  "UOp(Ops.VIEW, dtypes.float, arg=ShapeTracker(views=(View(shape=(3, 4), strides=(4, 1), offset=0, mask=None, contiguous=True),)), src=(\n"
  "  UOp(Ops.BUFFER, dtypes.float, arg=12, src=(\n"
  "    UOp(Ops.UNIQUE, dtypes.void, arg=0, src=()),\n"
  "    UOp(Ops.DEVICE, dtypes.void, arg='CPU', src=()),)),))";
static const char *const EXP_T3 = /* T3 empty mask -> 0 */
  "UOp(Ops.CONST, dtypes.float, arg=0.0, src=(\n"
  "  UOp(Ops.VIEW, dtypes.void, arg=ShapeTracker(views=(View(shape=(3, 2), strides=(0, 0), offset=0, mask=None, contiguous=False),)), src=(\n"
  "    UOp(Ops.DEVICE, dtypes.void, arg='CPU', src=()),)),))";
static const char *const EXP_T4 = /* T4 apply_swizzle */
  "UOp(Ops.ADD, dtypes.float, arg=None, src=(\n"
  "  UOp(Ops.VIEW, dtypes.float, arg=ShapeTracker(views=(View(shape=(4, 3), strides=(1, 4), offset=0, mask=None, contiguous=False),)), src=(\n"
  "    UOp(Ops.BUFFER, dtypes.float, arg=12, src=(\n"
  "      UOp(Ops.UNIQUE, dtypes.void, arg=1, src=()),\n"
  "      x3:=UOp(Ops.DEVICE, dtypes.void, arg='CPU', src=()),)),)),\n"
  "  UOp(Ops.VIEW, dtypes.float, arg=ShapeTracker(views=(View(shape=(4, 3), strides=(1, 4), offset=0, mask=None, contiguous=False),)), src=(\n"
  "    UOp(Ops.BUFFER, dtypes.float, arg=12, src=(\n"
  "      UOp(Ops.UNIQUE, dtypes.void, arg=2, src=()),\n"
  "       x3,)),)),))";
static const char *const EXP_T5 = /* T5 swizzle_reduceop */
  "UOp(Ops.RESHAPE, dtypes.float, arg=(2, 3), src=(\n"
  "  UOp(Ops.REDUCE_AXIS, dtypes.float, arg=(Ops.ADD, (2,)), src=(\n"
  "    UOp(Ops.VIEW, dtypes.float, arg=ShapeTracker(views=(View(shape=(2, 3, 4), strides=(0, 4, 1), offset=0, mask=None, contiguous=False),)), src=(\n"
  "      UOp(Ops.BUFFER, dtypes.float, arg=12, src=(\n"
  "        UOp(Ops.UNIQUE, dtypes.void, arg=3, src=()),\n"
  "        UOp(Ops.DEVICE, dtypes.void, arg='CPU', src=()),)),)),)),))";
static const char *const EXP_T5_FUSE = /* T5 swizzle_reduceop */
  "UOp(Ops.RESHAPE, dtypes.float, arg=(2, 3), src=(\n"
  "  UOp(Ops.REDUCE_AXIS, dtypes.float, arg=(Ops.ADD, (2,), True), src=(\n"
  "    UOp(Ops.FUSE, dtypes.float, arg=None, src=(\n"
  "      UOp(Ops.VIEW, dtypes.float, arg=ShapeTracker(views=(View(shape=(2, 3, 4), strides=(0, 4, 1), offset=0, mask=None, contiguous=False),)), src=(\n"
  "        UOp(Ops.BUFFER, dtypes.float, arg=12, src=(\n"
  "          UOp(Ops.UNIQUE, dtypes.void, arg=3, src=()),\n"
  "          UOp(Ops.DEVICE, dtypes.void, arg='CPU', src=()),)),)),)),)),))";
static const char *const EXP_T6 = /* T6 reduce_push_add_ones */
  "UOp(Ops.REDUCE_AXIS, dtypes.float, arg=(Ops.ADD, (2,)), src=(\n"
  "  UOp(Ops.VIEW, dtypes.float, arg=ShapeTracker(views=(View(shape=(3, 1, 4), strides=(4, 0, 1), offset=0, mask=None, contiguous=True),)), src=(\n"
  "    UOp(Ops.BUFFER, dtypes.float, arg=12, src=(\n"
  "      UOp(Ops.UNIQUE, dtypes.void, arg=3, src=()),\n"
  "      UOp(Ops.DEVICE, dtypes.void, arg='CPU', src=()),)),)),))";
static const char *const EXP_M1 = /* M1 alu shard */
  "UOp(Ops.SINK, dtypes.void, arg=None, src=(\n"
  "  UOp(Ops.MULTI, dtypes.float, arg=0, src=(\n"
  "    UOp(Ops.ADD, dtypes.float, arg=None, src=(\n"
  "      UOp(Ops.RESHAPE, dtypes.float, arg=(2, 2), src=(\n"
  "        UOp(Ops.BUFFER, dtypes.float, arg=4, src=(\n"
  "          UOp(Ops.UNIQUE, dtypes.void, arg=10, src=()),\n"
  "          x5:=UOp(Ops.DEVICE, dtypes.void, arg=('CPU:1', 'CPU:2'), src=()),)),)),\n"
  "      UOp(Ops.SHRINK, dtypes.float, arg=((UOp(Ops.MUL, dtypes.int, arg=None, src=(\n"
  "  UOp(Ops.DEFINE_VAR, dtypes.int, arg=('_device_num', 0, 1), src=()),\n"
  "  UOp(Ops.CONST, dtypes.int, arg=2, src=()),)), UOp(Ops.ADD, dtypes.int, arg=None, src=(\n"
  "  UOp(Ops.MUL, dtypes.int, arg=None, src=(\n"
  "    UOp(Ops.DEFINE_VAR, dtypes.int, arg=('_device_num', 0, 1), src=()),\n"
  "    x2:=UOp(Ops.CONST, dtypes.int, arg=2, src=()),)),\n"
  "   x2,))), (0, 2)), src=(\n"
  "        UOp(Ops.RESHAPE, dtypes.float, arg=(4, 2), src=(\n"
  "          UOp(Ops.BUFFER, dtypes.float, arg=8, src=(\n"
  "            UOp(Ops.UNIQUE, dtypes.void, arg=11, src=()),\n"
  "             x5,)),)),)),)),)),))";
static const char *const EXP_M2 = /* M2 reduce sharded */
  "UOp(Ops.SINK, dtypes.void, arg=None, src=(\n"
  "  UOp(Ops.RESHAPE, dtypes.float, arg=(1, 2), src=(\n"
  "    UOp(Ops.ADD, dtypes.float, arg=None, src=(\n"
  "      UOp(Ops.MSTACK, dtypes.float, arg=None, src=(\n"
  "        UOp(Ops.COPY, dtypes.float, arg=None, src=(\n"
  "          x4:=UOp(Ops.MSELECT, dtypes.float, arg=0, src=(\n"
  "            x5:=UOp(Ops.CONTIGUOUS, dtypes.float, arg=None, src=(\n"
  "              UOp(Ops.REDUCE_AXIS, dtypes.float, arg=(Ops.ADD, (1,)), src=(\n"
  "                UOp(Ops.PERMUTE, dtypes.float, arg=(1, 0), src=(\n"
  "                  UOp(Ops.RESHAPE, dtypes.float, arg=(2, 2), src=(\n"
  "                    UOp(Ops.BUFFER, dtypes.float, arg=4, src=(\n"
  "                      UOp(Ops.UNIQUE, dtypes.void, arg=10, src=()),\n"
  "                      UOp(Ops.DEVICE, dtypes.void, arg=('CPU:1', 'CPU:2'), src=()),)),)),)),)),)),)),\n"
  "          x12:=UOp(Ops.DEVICE, dtypes.void, arg='CPU:1', src=()),)),\n"
  "        UOp(Ops.COPY, dtypes.float, arg=None, src=(\n"
  "           x4,\n"
  "          x14:=UOp(Ops.DEVICE, dtypes.void, arg='CPU:2', src=()),)),)),\n"
  "      UOp(Ops.MSTACK, dtypes.float, arg=None, src=(\n"
  "        UOp(Ops.COPY, dtypes.float, arg=None, src=(\n"
  "          x17:=UOp(Ops.MSELECT, dtypes.float, arg=1, src=(\n"
  "             x5,)),\n"
  "           x12,)),\n"
  "        UOp(Ops.COPY, dtypes.float, arg=None, src=(\n"
  "           x17,\n"
  "           x14,)),)),)),)),))";
static const char *const EXP_M3 = /* M3 reduce unsharded */
  "UOp(Ops.SINK, dtypes.void, arg=None, src=(\n"
  "  UOp(Ops.MULTI, dtypes.float, arg=0, src=(\n"
  "    UOp(Ops.REDUCE_AXIS, dtypes.float, arg=(Ops.MAX, (1,)), src=(\n"
  "      UOp(Ops.RESHAPE, dtypes.float, arg=(2, 2), src=(\n"
  "        UOp(Ops.BUFFER, dtypes.float, arg=4, src=(\n"
  "          UOp(Ops.UNIQUE, dtypes.void, arg=10, src=()),\n"
  "          UOp(Ops.DEVICE, dtypes.void, arg=('CPU:1', 'CPU:2'), src=()),)),)),)),)),))";
static const char *const EXP_M4 = /* M4 reshape */
  "UOp(Ops.SINK, dtypes.void, arg=None, src=(\n"
  "  UOp(Ops.MULTI, dtypes.float, arg=0, src=(\n"
  "    UOp(Ops.RESHAPE, dtypes.float, arg=(4,), src=(\n"
  "      UOp(Ops.RESHAPE, dtypes.float, arg=(2, 2), src=(\n"
  "        UOp(Ops.BUFFER, dtypes.float, arg=4, src=(\n"
  "          UOp(Ops.UNIQUE, dtypes.void, arg=10, src=()),\n"
  "          UOp(Ops.DEVICE, dtypes.void, arg=('CPU:1', 'CPU:2'), src=()),)),)),)),)),))";
static const char *const EXP_M5 = /* M5 pad */
  "UOp(Ops.SINK, dtypes.void, arg=None, src=(\n"
  "  UOp(Ops.MULTI, dtypes.float, arg=0, src=(\n"
  "    UOp(Ops.PAD, dtypes.float, arg=((0, 0), (1, 1)), src=(\n"
  "      UOp(Ops.RESHAPE, dtypes.float, arg=(2, 2), src=(\n"
  "        UOp(Ops.BUFFER, dtypes.float, arg=4, src=(\n"
  "          UOp(Ops.UNIQUE, dtypes.void, arg=10, src=()),\n"
  "          UOp(Ops.DEVICE, dtypes.void, arg=('CPU:1', 'CPU:2'), src=()),)),)),)),)),))";
static const char *const EXP_M6 = /* M6 shrink shard */
  "UOp(Ops.SINK, dtypes.void, arg=None, src=(\n"
  "  UOp(Ops.MSTACK, dtypes.float, arg=None, src=(\n"
  "    UOp(Ops.COPY, dtypes.float, arg=None, src=(\n"
  "      x2:=UOp(Ops.MSELECT, dtypes.float, arg=1, src=(\n"
  "        UOp(Ops.RESHAPE, dtypes.float, arg=(2, 2), src=(\n"
  "          UOp(Ops.BUFFER, dtypes.float, arg=4, src=(\n"
  "            UOp(Ops.UNIQUE, dtypes.void, arg=10, src=()),\n"
  "            UOp(Ops.DEVICE, dtypes.void, arg=('CPU:1', 'CPU:2'), src=()),)),)),)),\n"
  "      UOp(Ops.DEVICE, dtypes.void, arg='CPU:1', src=()),)),\n"
  "    UOp(Ops.COPY, dtypes.float, arg=None, src=(\n"
  "       x2,\n"
  "      UOp(Ops.DEVICE, dtypes.void, arg='CPU:2', src=()),)),)),))";
static const char *const EXP_M7 = /* M7 shrink other */
  "UOp(Ops.SINK, dtypes.void, arg=None, src=(\n"
  "  UOp(Ops.MULTI, dtypes.float, arg=0, src=(\n"
  "    UOp(Ops.SHRINK, dtypes.float, arg=((0, 2), (0, 1)), src=(\n"
  "      UOp(Ops.RESHAPE, dtypes.float, arg=(2, 2), src=(\n"
  "        UOp(Ops.BUFFER, dtypes.float, arg=4, src=(\n"
  "          UOp(Ops.UNIQUE, dtypes.void, arg=10, src=()),\n"
  "          UOp(Ops.DEVICE, dtypes.void, arg=('CPU:1', 'CPU:2'), src=()),)),)),)),)),))";
static const char *const EXP_M8 = /* M8 copy_multi */
  "UOp(Ops.SINK, dtypes.void, arg=None, src=(\n"
  "  UOp(Ops.ADD, dtypes.float, arg=None, src=(\n"
  "    UOp(Ops.COPY, dtypes.float, arg=None, src=(\n"
  "      UOp(Ops.MSELECT, dtypes.float, arg=0, src=(\n"
  "        x3:=UOp(Ops.CONTIGUOUS, dtypes.float, arg=None, src=(\n"
  "          UOp(Ops.PAD, dtypes.float, arg=((UOp(Ops.MUL, dtypes.int, arg=None, src=(\n"
  "  UOp(Ops.CONST, dtypes.int, arg=2, src=()),\n"
  "  UOp(Ops.DEFINE_VAR, dtypes.int, arg=('_device_num', 0, 1), src=()),)), UOp(Ops.ADD, dtypes.int, arg=None, src=(\n"
  "  x0:=UOp(Ops.CONST, dtypes.int, arg=2, src=()),\n"
  "  UOp(Ops.MUL, dtypes.int, arg=None, src=(\n"
  "    UOp(Ops.MUL, dtypes.int, arg=None, src=(\n"
  "       x0,\n"
  "      UOp(Ops.DEFINE_VAR, dtypes.int, arg=('_device_num', 0, 1), src=()),)),\n"
  "    UOp(Ops.CONST, dtypes.int, arg=-1, src=()),)),))), (0, 0)), src=(\n"
  "            UOp(Ops.RESHAPE, dtypes.float, arg=(2, 2), src=(\n"
  "              UOp(Ops.BUFFER, dtypes.float, arg=4, src=(\n"
  "                UOp(Ops.UNIQUE, dtypes.void, arg=10, src=()),\n"
  "                UOp(Ops.DEVICE, dtypes.void, arg=('CPU:1', 'CPU:2'), src=()),)),)),)),)),)),\n"
  "      x9:=UOp(Ops.DEVICE, dtypes.void, arg='CPU', src=()),)),\n"
  "    UOp(Ops.COPY, dtypes.float, arg=None, src=(\n"
  "      UOp(Ops.MSELECT, dtypes.float, arg=1, src=(\n"
  "         x3,)),\n"
  "       x9,)),)),))";
static const char *const EXP_M9 = /* M9 axis mismatch */
  "UOp(Ops.SINK, dtypes.void, arg=None, src=(\n"
  "  UOp(Ops.MULTI, dtypes.float, arg=1, src=(\n"
  "    UOp(Ops.ADD, dtypes.float, arg=None, src=(\n"
  "      UOp(Ops.SHRINK, dtypes.float, arg=((0, 4), (UOp(Ops.MUL, dtypes.int, arg=None, src=(\n"
  "  UOp(Ops.DEFINE_VAR, dtypes.int, arg=('_device_num', 0, 1), src=()),\n"
  "  UOp(Ops.CONST, dtypes.int, arg=1, src=()),)), UOp(Ops.ADD, dtypes.int, arg=None, src=(\n"
  "  UOp(Ops.MUL, dtypes.int, arg=None, src=(\n"
  "    UOp(Ops.DEFINE_VAR, dtypes.int, arg=('_device_num', 0, 1), src=()),\n"
  "    x2:=UOp(Ops.CONST, dtypes.int, arg=1, src=()),)),\n"
  "   x2,)))), src=(\n"
  "        UOp(Ops.ADD, dtypes.float, arg=None, src=(\n"
  "          UOp(Ops.MSTACK, dtypes.float, arg=None, src=(\n"
  "            UOp(Ops.COPY, dtypes.float, arg=None, src=(\n"
  "              x6:=UOp(Ops.MSELECT, dtypes.float, arg=0, src=(\n"
  "                x7:=UOp(Ops.CONTIGUOUS, dtypes.float, arg=None, src=(\n"
  "                  UOp(Ops.PAD, dtypes.float, arg=((UOp(Ops.MUL, dtypes.int, arg=None, src=(\n"
  "  UOp(Ops.CONST, dtypes.int, arg=2, src=()),\n"
  "  UOp(Ops.DEFINE_VAR, dtypes.int, arg=('_device_num', 0, 1), src=()),)), UOp(Ops.ADD, dtypes.int, arg=None, src=(\n"
  "  x0:=UOp(Ops.CONST, dtypes.int, arg=2, src=()),\n"
  "  UOp(Ops.MUL, dtypes.int, arg=None, src=(\n"
  "    UOp(Ops.MUL, dtypes.int, arg=None, src=(\n"
  "       x0,\n"
  "      UOp(Ops.DEFINE_VAR, dtypes.int, arg=('_device_num', 0, 1), src=()),)),\n"
  "    UOp(Ops.CONST, dtypes.int, arg=-1, src=()),)),))), (0, 0)), src=(\n"
  "                    UOp(Ops.RESHAPE, dtypes.float, arg=(2, 2), src=(\n"
  "                      UOp(Ops.BUFFER, dtypes.float, arg=4, src=(\n"
  "                        UOp(Ops.UNIQUE, dtypes.void, arg=10, src=()),\n"
  "                        x12:=UOp(Ops.DEVICE, dtypes.void, arg=('CPU:1', 'CPU:2'), src=()),)),)),)),)),)),\n"
  "              x13:=UOp(Ops.DEVICE, dtypes.void, arg='CPU:1', src=()),)),\n"
  "            UOp(Ops.COPY, dtypes.float, arg=None, src=(\n"
  "               x6,\n"
  "              x15:=UOp(Ops.DEVICE, dtypes.void, arg='CPU:2', src=()),)),)),\n"
  "          UOp(Ops.MSTACK, dtypes.float, arg=None, src=(\n"
  "            UOp(Ops.COPY, dtypes.float, arg=None, src=(\n"
  "              x18:=UOp(Ops.MSELECT, dtypes.float, arg=1, src=(\n"
  "                 x7,)),\n"
  "               x13,)),\n"
  "            UOp(Ops.COPY, dtypes.float, arg=None, src=(\n"
  "               x18,\n"
  "               x15,)),)),)),)),\n"
  "      UOp(Ops.RESHAPE, dtypes.float, arg=(4, 1), src=(\n"
  "        UOp(Ops.BUFFER, dtypes.float, arg=4, src=(\n"
  "          UOp(Ops.UNIQUE, dtypes.void, arg=12, src=()),\n"
  "           x12,)),)),)),)),))";
static const char *const EXP_M10 = /* M10 ring */
  "UOp(Ops.SINK, dtypes.void, arg=None, src=(\n"
  "  UOp(Ops.ADD, dtypes.float, arg=None, src=(\n"
  "    UOp(Ops.ADD, dtypes.float, arg=None, src=(\n"
  "      UOp(Ops.MSTACK, dtypes.float, arg=None, src=(\n"
  "        x3:=UOp(Ops.COPY, dtypes.float, arg=None, src=(\n"
  "          x4:=UOp(Ops.ADD, dtypes.float, arg=None, src=(\n"
  "            UOp(Ops.COPY, dtypes.float, arg=None, src=(\n"
  "              UOp(Ops.ADD, dtypes.float, arg=None, src=(\n"
  "                UOp(Ops.COPY, dtypes.float, arg=None, src=(\n"
  "                  UOp(Ops.MSELECT, dtypes.float, arg=0, src=(\n"
  "                    x9:=UOp(Ops.CONTIGUOUS, dtypes.float, arg=None, src=(\n"
  "                      UOp(Ops.REDUCE_AXIS, dtypes.float, arg=(Ops.ADD, (0,)), src=(\n"
  "                        UOp(Ops.BUFFER, dtypes.float, arg=4, src=(\n"
  "                          UOp(Ops.UNIQUE, dtypes.void, arg=13, src=()),\n"
  "                          UOp(Ops.DEVICE, dtypes.void, arg=('CPU:1', 'CPU:2', 'CPU:3'), src=()),)),)),)),)),\n"
  "                  x14:=UOp(Ops.DEVICE, dtypes.void, arg='CPU:2', src=()),)),\n"
  "                UOp(Ops.COPY, dtypes.float, arg=None, src=(\n"
  "                  UOp(Ops.MSELECT, dtypes.float, arg=1, src=(\n"
  "                     x9,)),\n"
  "                   x14,)),)),\n"
  "              x17:=UOp(Ops.DEVICE, dtypes.void, arg='CPU:3', src=()),)),\n"
  "            UOp(Ops.COPY, dtypes.float, arg=None, src=(\n"
  "              UOp(Ops.MSELECT, dtypes.float, arg=2, src=(\n"
  "                 x9,)),\n"
  "               x17,)),)),\n"
  "          x20:=UOp(Ops.DEVICE, dtypes.void, arg='CPU:1', src=()),)),\n"
  "        UOp(Ops.COPY, dtypes.float, arg=None, src=(\n"
  "           x3,\n"
  "           x14,)),\n"
  "         x4,)),\n"
  "      UOp(Ops.PAD, dtypes.float, arg=((1, 0),), src=(\n"
  "        UOp(Ops.MSTACK, dtypes.float, arg=None, src=(\n"
  "          x24:=UOp(Ops.ADD, dtypes.float, arg=None, src=(\n"
  "            UOp(Ops.COPY, dtypes.float, arg=None, src=(\n"
  "              UOp(Ops.ADD, dtypes.float, arg=None, src=(\n"
  "                UOp(Ops.COPY, dtypes.float, arg=None, src=(\n"
  "                  x28:=UOp(Ops.MSELECT, dtypes.float, arg=1, src=(\n"
  "                    x29:=UOp(Ops.SHRINK, dtypes.float, arg=((1, 1),), src=(\n"
  "                       x9,)),)),\n"
  "                   x17,)),\n"
  "                UOp(Ops.COPY, dtypes.float, arg=None, src=(\n"
  "                  x31:=UOp(Ops.MSELECT, dtypes.float, arg=2, src=(\n"
  "                     x29,)),\n"
  "                   x17,)),)),\n"
  "               x20,)),\n"
  "            x32:=UOp(Ops.COPY, dtypes.float, arg=None, src=(\n"
  "              UOp(Ops.MSELECT, dtypes.float, arg=0, src=(\n"
  "                 x29,)),\n"
  "               x20,)),)),\n"
  "          x34:=UOp(Ops.COPY, dtypes.float, arg=None, src=(\n"
  "             x24,\n"
  "             x14,)),\n"
  "          UOp(Ops.COPY, dtypes.float, arg=None, src=(\n"
  "             x34,\n"
  "             x17,)),)),)),)),\n"
  "    UOp(Ops.PAD, dtypes.float, arg=((1, 0),), src=(\n"
  "      UOp(Ops.MSTACK, dtypes.float, arg=None, src=(\n"
  "        UOp(Ops.COPY, dtypes.float, arg=None, src=(\n"
  "          x39:=UOp(Ops.COPY, dtypes.float, arg=None, src=(\n"
  "            x40:=UOp(Ops.ADD, dtypes.float, arg=None, src=(\n"
  "              UOp(Ops.COPY, dtypes.float, arg=None, src=(\n"
  "                UOp(Ops.ADD, dtypes.float, arg=None, src=(\n"
  "                  UOp(Ops.COPY, dtypes.float, arg=None, src=(\n"
  "                     x31,\n"
  "                     x20,)),\n"
  "                   x32,)),\n"
  "                 x14,)),\n"
  "              UOp(Ops.COPY, dtypes.float, arg=None, src=(\n"
  "                 x28,\n"
  "                 x14,)),)),\n"
  "             x17,)),\n"
  "           x20,)),\n"
  "         x40,\n"
  "         x39,)),)),)),))";
static const char *const EXP_M11 = /* M11 permute/expand/flip/cast */
  "UOp(Ops.SINK, dtypes.void, arg=None, src=(\n"
  "  UOp(Ops.MULTI, dtypes.half, arg=1, src=(\n"
  "    UOp(Ops.CAST, dtypes.half, arg=None, src=(\n"
  "      UOp(Ops.FLIP, dtypes.float, arg=(True, False, False), src=(\n"
  "        UOp(Ops.PERMUTE, dtypes.float, arg=(1, 0, 2), src=(\n"
  "          UOp(Ops.EXPAND, dtypes.float, arg=(2, 2, 3), src=(\n"
  "            UOp(Ops.RESHAPE, dtypes.float, arg=(2, 2, 1), src=(\n"
  "              UOp(Ops.RESHAPE, dtypes.float, arg=(2, 2), src=(\n"
  "                UOp(Ops.BUFFER, dtypes.float, arg=4, src=(\n"
  "                  UOp(Ops.UNIQUE, dtypes.void, arg=10, src=()),\n"
  "                  UOp(Ops.DEVICE, dtypes.void, arg=('CPU:1', 'CPU:2'), src=()),)),)),)),)),)),)),)),)),))";

TestSuite(swizzle, .init = setup, .fini = teardown);

/* a = buf(12).reshape((3,4)).permute((1,0)); print(graph_rewrite(a.sink(), merge_views)) */
Test(swizzle, merge_views_movement_to_view) {
  int perm[2] = {1, 0};
  UOp *a = u_permute(u_reshape(buf(12, v_str("CPU"), 0), shp(2, 3, 4)), perm);
  CHECK(uop_repr(ga(), graph_rewrite(sink1(a), pm_merge_views, NULL, false, NULL)), EXP_T1);
}

/* b = buf(12); v = b.view(ShapeTracker.from_shape((12,))).view(ShapeTracker.from_shape((12,)).reshape((3,4)))
 * print(graph_rewrite(v, merge_views)) */
Test(swizzle, merge_views_view_of_view) {
  UOp *b = buf(12, v_str("CPU"), 0);
  UOp *v = view(view(b, from_shape(shp(1, 12))), st_reshape(from_shape(shp(1, 12)), shp(2, 3, 4)));
  CHECK(uop_repr(ga(), graph_rewrite(v, pm_merge_views, NULL, false, NULL)), EXP_T2);
}

/* c = buf(12).reshape((3,4)).shrink(((0,3),(0,2))).pad(((0,0),(0,2))).shrink(((0,3),(2,4)))
 * print(graph_rewrite(c, merge_views)) */
Test(swizzle, merge_views_empty_mask_is_zero) {
  UOp *c = u_reshape(buf(12, v_str("CPU"), 0), shp(2, 3, 4));
  c = u_shrink(u_pad(u_shrink(c, pairs(2, 0, 3, 0, 2)), pairs(2, 0, 0, 0, 2)), pairs(2, 0, 3, 2, 4));
  CHECK(uop_repr(ga(), graph_rewrite(c, pm_merge_views, NULL, false, NULL)), EXP_T3);
}

/* x = buf(12, u=1).reshape((3,4)); y = buf(12, u=2).reshape((3,4))
 * e = (x.view(ShapeTracker.from_shape((3,4))) + y.view(ShapeTracker.from_shape((3,4))))
 * print(apply_swizzle(e.view(ShapeTracker.from_shape((3,4)).permute((1,0))))) */
Test(swizzle, apply_swizzle_through_add) {
  int perm[2] = {1, 0};
  const ShapeTracker *s34 = from_shape(shp(2, 3, 4));
  UOp *x = u_reshape(buf(12, v_str("CPU"), 1), shp(2, 3, 4)), *y = u_reshape(buf(12, v_str("CPU"), 2), shp(2, 3, 4));
  UOp *e = u_alu2(OP_ADD, view(x, s34), view(y, s34));
  CHECK(uop_repr(ga(), apply_swizzle(view(e, st_permute(s34, perm)))), EXP_T4);
}

/* s = buf(12, u=3).view(ShapeTracker.from_shape((3,4)))
 * r = UOp(Ops.REDUCE_AXIS, dtypes.float, (s,), (Ops.ADD, (1,)))
 * vw = r.view(ShapeTracker.from_shape((3,1)).reshape((1,3)).expand((2,3)))
 * print(swizzle_reduceop(r, s, vw)); print(swizzle_reduceop(r, s, vw, fuse=True)) */
Test(swizzle, swizzle_reduceop_expand) {
  UOp *s = view(buf(12, v_str("CPU"), 3), from_shape(shp(2, 3, 4)));
  UOp *r = uop1(OP_REDUCE_AXIS, dt_float, s, v_tuplev(2, v_ops(OP_ADD), v_tuplev(1, v_int(1))));
  UOp *vw = view(r, st_expand(st_reshape(from_shape(shp(2, 3, 1)), shp(2, 1, 3)), shp(2, 2, 3)));
  CHECK(uop_repr(ga(), swizzle_reduceop(r, s, vw, false)), EXP_T5);
  CHECK(uop_repr(ga(), swizzle_reduceop(r, s, vw, true)), EXP_T5_FUSE);
  /* contiguous same-size view of an unfused reduce: no change (returns None) */
  cr_assert_null(swizzle_reduceop(r, s, view(r, from_shape(shp(2, 3, 1))), false));
}

/* vw2 = r.view(ShapeTracker.from_shape((3,1)).reshape((3,1,1))); print(apply_swizzle(vw2)) */
Test(swizzle, reduce_push_add_ones) {
  UOp *s = view(buf(12, v_str("CPU"), 3), from_shape(shp(2, 3, 4)));
  UOp *r = uop1(OP_REDUCE_AXIS, dt_float, s, v_tuplev(2, v_ops(OP_ADD), v_tuplev(1, v_int(1))));
  UOp *vw2 = view(r, st_reshape(from_shape(shp(2, 3, 1)), shp(3, 3, 1, 1)));
  CHECK(uop_repr(ga(), apply_swizzle(vw2)), EXP_T6);
}

/* un = buf(8, devs, u=11).reshape((4,2)); show(m + un) */
Test(swizzle, multi_alu_shards_unsharded_source) {
  UOp *un = u_reshape(buf(8, devs2(), 11), shp(2, 4, 2));
  CHECK(rw_multi(u_alu2(OP_ADD, m_base(), un)), EXP_M1);
}

/* show(m.r(Ops.ADD, (0,))): all-reduce on the sharded axis, naive (2 devices) */
Test(swizzle, multi_reduce_sharded_axis_naive_allreduce) { CHECK(rw_multi(r1(m_base(), OP_ADD, 0)), EXP_M2); }

/* show(m.r(Ops.MAX, (1,))) */
Test(swizzle, multi_reduce_unsharded_axis) { CHECK(rw_multi(r1(m_base(), OP_MAX, 1)), EXP_M3); }

/* show(m.reshape((8,))) */
Test(swizzle, multi_reshape) { CHECK(rw_multi(u_reshape(m_base(), shp(1, 8))), EXP_M4); }

/* show(m.pad(((0,0),(1,1)))) */
Test(swizzle, multi_pad) { CHECK(rw_multi(u_pad(m_base(), pairs(2, 0, 0, 1, 1))), EXP_M5); }

/* show(m.shrink(((2,4),(0,2)))): one whole shard, copied to every device */
Test(swizzle, multi_shrink_one_shard) { CHECK(rw_multi(u_shrink(m_base(), pairs(2, 2, 4, 0, 2))), EXP_M6); }

/* show(m.shrink(((0,4),(0,1)))) */
Test(swizzle, multi_shrink_other_axis) { CHECK(rw_multi(u_shrink(m_base(), pairs(2, 0, 4, 0, 1))), EXP_M7); }

/* show(m.copy_to_device("CPU")) */
Test(swizzle, multi_copy_to_one_device) {
  UOp *m = m_base();
  CHECK(rw_multi(uop2(OP_COPY, m->dtype, m, uop0(OP_DEVICE, dt_void, v_str("CPU")), NULL)), EXP_M8);
}

/* mb = buf(4, devs, u=12).reshape((4,1)).multi(1); show(m + mb): axis mismatch reshards through allreduce */
Test(swizzle, multi_alu_axis_mismatch) {
  UOp *mb = multi(u_reshape(buf(4, devs2(), 12), shp(2, 4, 1)), 1);
  CHECK(rw_multi(u_alu2(OP_ADD, m_base(), mb)), EXP_M9);
}

/* d3 = ("CPU:1","CPU:2","CPU:3"); m3 = buf(4, d3, u=13).multi(0)
 * with Context(RING=2): show(m3.r(Ops.ADD, (0,))) */
Test(swizzle, multi_ring_allreduce) {
  uctx->opt.ring = 2;
  UOp *m3 = multi(buf(4, v_tuplev(3, v_str("CPU:1"), v_str("CPU:2"), v_str("CPU:3")), 13), 0);
  CHECK(rw_multi(r1(m3, OP_ADD, 0)), EXP_M10);
}

/* show(m.reshape((4,2,1)).expand((4,2,3)).permute((1,0,2)).flip((True,False,False)).cast(dtypes.half)) */
Test(swizzle, multi_expand_permute_flip_cast) {
  int perm[3] = {1, 0, 2};
  bool fl[3] = {true, false, false};
  UOp *x = u_permute(u_expand(u_reshape(m_base(), shp(3, 4, 2, 1)), shp(3, 4, 2, 3)), perm);
  CHECK(rw_multi(u_cast(u_flip(x, fl), dt_half)), EXP_M11);
}

/* pad on the sharded axis is refused: m.pad(((1,1),(0,0))) raises AssertionError "padding not supported" */
Test(swizzle, multi_pad_sharded_axis_fails) {
  UOp *x = u_pad(m_base(), pairs(2, 1, 1, 0, 0));
  TgTry t;
  if (TG_TRY(t)) {
    rw_multi(x);
    tg_try_end(&t);
    cr_assert_fail("pad on the sharded axis was accepted");
  }
  cr_assert_eq(tg_last_error.code, TG_EINPUT);
}
