/* spec.c: tinygrad 0.11.0's tensor_uop_spec and type_verify (uop/spec.py).
 *
 * type_verify(uops, tensor_uop_spec) checks every UOp against buffer_spec + assign_spec + the
 * tensor rules + spec, in that order, and accepts a UOp only when PatternMatcher.rewrite returns
 * True. The four rule lists are ported as tables in tinygrad's order; a callback returns
 * SPEC_TRUE, SPEC_FALSE (a rule that says no: rewrite stops there, as a Python False does) or
 * NULL (no match, try the next rule). Where a Python lambda would raise (an arg of the wrong
 * shape), the port says False: type_verify fails either way.
 * type_verify_tensor itself is in kernelize.c.
 * validate_index/validate_store always pass: tinygrad 0.11.0 without z3 sets IGNORE_OOB=1. */
#include "passes.h"
#include "../shape/shape.h"

static UOp spec_true_marker, spec_false_marker;
#define SPEC_TRUE (&spec_true_marker)
#define SPEC_FALSE (&spec_false_marker)
static UOp *ret_bool(bool b) { return b ? SPEC_TRUE : SPEC_FALSE; }
#define NOSRC .srcmode = PS_TUPLE, .nsrc = 0

static bool v_is_int(const Value *v) { return v->kind == V_INT || v->kind == V_BOOL; } /* isinstance(v, int) */
static bool v_is_tuple(const Value *v) { return v->kind == V_TUPLE; }
static bool is_image(const DType *d) { return d->kind == DTK_IMAGE; }

static UOp *r_true(const Match *m, void *ctx) { return SPEC_TRUE; }

/* ---- buffer_spec ---- */
static UOp *r_device(const Match *m, void *ctx) {
  const Value *a = m_get(m, "d")->arg;
  if (a->kind == V_STR) return SPEC_TRUE;
  if (a->kind != V_TUPLE) return SPEC_FALSE;
  for (int i = 0; i < a->n; i++) if (a->items[i]->kind != V_STR) return SPEC_FALSE;
  return SPEC_TRUE;
}
static UOp *r_buffer(const Match *m, void *ctx) { return ret_bool(v_is_int(m_get(m, "buf")->arg)); }
static UOp *r_buffer_view(const Match *m, void *ctx) {
  const Value *a = m_get(m, "buf_view")->arg;
  if (a->kind != V_TUPLE || a->n != 2) return SPEC_FALSE;
  for (int i = 0; i < 2; i++) if (!v_is_int(a->items[i]) && a->items[i]->kind != V_UOP) return SPEC_FALSE;
  return SPEC_TRUE;
}
static const Rule buffer_spec[] = {
  // UNIQUE is a void leaf
  { UP(.ops = OPS(OP_UNIQUE), .dts = DTS(SC_VOID), NOSRC), r_true },
  // DEVICE is a void leaf whose arg is a str or a tuple of str
  { UP(.ops = OPS(OP_DEVICE), .dts = DTS(SC_VOID), NOSRC, .name = "d"), r_device },
  // BUFFER is (UNIQUE, DEVICE, ...) with an int size
  { UP(.ops = OPS(OP_BUFFER), SRC(UP(.ops = OPS(OP_UNIQUE)), UP(.ops = OPS(OP_DEVICE))), .allow_any_len = true, .name = "buf"), r_buffer },
  // BUFFER_VIEW of a BUFFER has an arg (size, offset) of ints or UOps
  { UP(.ops = OPS(OP_BUFFER_VIEW), SRC(UP(.ops = OPS(OP_BUFFER))), .name = "buf_view"), r_buffer_view },
  // BUFFER_VIEW of an MSTACK of BUFFERs
  { UP(.ops = OPS(OP_BUFFER_VIEW), SRC(UP(.ops = OPS(OP_MSTACK), SRC_REPEAT(UP(.ops = OPS(OP_BUFFER)))))), r_true },
  // VIEW is allowed here
  { UP(.ops = OPS(OP_VIEW)), r_true },
};

/* ---- assign_spec ---- */
static UOp *r_assign(const Match *m, void *ctx) {
  UOp *x = m_get(m, "x");
  if (x->nsrc < 2) return SPEC_FALSE;
  for (int i = 2; i < x->nsrc; i++) if (x->src[i]->op != OP_ASSIGN) return SPEC_FALSE;
  return SPEC_TRUE;
}
static UOp *r_mselect(const Match *m, void *ctx) {
  UOp *x = m_get(m, "x");
  if (!x->nsrc) return SPEC_FALSE;
  const Value *d = u_device(x->src[0]);
  if (!d || d->kind != V_TUPLE) return SPEC_FALSE;
  const Value *a = x->arg;
  if (a->kind == V_INT) return ret_bool(a->i < d->n);
  if (a->kind == V_BOOL) return ret_bool((a->b ? 1 : 0) < d->n);
  if (a->kind == V_FLOAT) return ret_bool(a->f < (double)d->n);
  return SPEC_FALSE;
}
static UOp *r_mstack(const Match *m, void *ctx) {
  UOp *x = m_get(m, "x");
  for (int i = 0; i < x->nsrc; i++) {
    const Value *d = u_device(x->src[i]);
    if (!d || d->kind != V_STR) return SPEC_FALSE;
  }
  return SPEC_TRUE;
}
static const Rule assign_spec[] = {
  // KERNEL can attach to an ASSIGN to describe the compute required to realize a BUFFER
  { UP(.ops = OPS(OP_KERNEL), SRC_REPEAT(UP(.ops = OPS(OP_BUFFER, OP_BUFFER_VIEW, OP_ASSIGN, OP_MSELECT, OP_MSTACK, OP_BIND)))), r_true },
  // ASSIGN has a target and a value; it can also depend on other assigns
  { UP(.ops = OPS(OP_ASSIGN), .name = "x"), r_assign },
  // MSELECT chooses one of the multi buffers
  { UP(.ops = OPS(OP_MSELECT), .name = "x"), r_mselect },
  // MSTACK combines buffers into multi
  { UP(.ops = OPS(OP_MSTACK), .name = "x"), r_mstack },
};

/* ---- the tensor rules ---- */
static UOp *r_movement(const Match *m, void *ctx) {
  UOp *mv = m_get(m, "mv"), *x = m_get(m, "x");
  if (v_is_tuple(mv->arg) && mv->dtype == x->dtype) return SPEC_TRUE;
  /* "make things that can't be images not images" can change the buffer dtype */
  return ret_bool((is_image(mv->dtype) || is_image(x->dtype)) && dt_base(x->dtype) == dt_base(mv->dtype) && u_base(x)->op == OP_BUFFER);
}
static UOp *r_view_src(const Match *m, void *ctx) {
  Op b = (Op)u_base(m_get(m, "x"))->op;
  return ret_bool(b == OP_BUFFER || b == OP_BUFFER_VIEW || b == OP_ASSIGN || b == OP_CONST || b == OP_DEVICE);
}
static UOp *r_const_st(const Match *m, void *ctx) {
  const Value *a = m_get(m, "st")->arg;
  if (a->kind != V_ST) return SPEC_FALSE;
  const ShapeTracker *st = a->st;
  if (st->nviews != 1) return SPEC_FALSE;
  for (int i = 0; i < st->nviews; i++) if (st->views[i]->mask) return SPEC_FALSE;
  return SPEC_TRUE;
}
static UOp *r_same_dtype_root(const Match *m, void *ctx) { return ret_bool(m_get(m, "root")->dtype == m_get(m, "x")->dtype); }
static UOp *r_copy(const Match *m, void *ctx) { return ret_bool(m_get(m, "copy")->dtype == m_get(m, "x")->dtype); }
static UOp *r_allreduce(const Match *m, void *ctx) {
  UOp *red = m_get(m, "red");
  return ret_bool(red->dtype == m_get(m, "x")->dtype && red->arg->kind == V_OPS);
}
static UOp *r_multi(const Match *m, void *ctx) {
  UOp *x = m_get(m, "multi");
  for (int i = 0; i < x->nsrc; i++) if (x->src[i]->dtype != x->dtype) return SPEC_FALSE;
  return ret_bool(v_is_int(x->arg));
}
static const Rule tensor_rules[] = {
  // movement ops keep the dtype, or change only the image-ness of a realized buffer
  { UP(.groups = G_MOVEMENT, .name = "mv", SRC(UVAR("x"))), r_movement },
  // VIEW of a buffer, assign, const or device
  { UP(.ops = OPS(OP_VIEW), SRC(UVAR("x"))), r_view_src },
  // Tensor variable bindings
  { UP(.ops = OPS(OP_BIND), .dts = DTS(SC_INT), SRC(UP(.ops = OPS(OP_DEFINE_VAR)), UP(.ops = OPS(OP_CONST, OP_VCONST), .dts = DTS(SC_INT)))), r_true },
  // Tensor const has a device and an unmasked ShapeTracker of stride 0
  { UP(.ops = OPS(OP_CONST), SRC(UP(.ops = OPS(OP_VIEW), .name = "st", SRC(UP(.ops = OPS(OP_DEVICE)))))), r_const_st },
  // DETACH and CONTIGUOUS change how we interpret the source UOp
  { UP(.ops = OPS(OP_DETACH, OP_CONTIGUOUS, OP_CONTIGUOUS_BACKWARD, OP_FUSE), .name = "root", SRC(UVAR("x"))), r_same_dtype_root },
  // COPY keeps the dtype
  { UP(.ops = OPS(OP_COPY), .name = "copy", SRC(UVAR("x"), UP(.ops = OPS(OP_DEVICE)))), r_copy },
  // ALLREDUCE keeps the dtype and its arg is an Ops
  { UP(.ops = OPS(OP_ALLREDUCE), .name = "red", SRC(UVAR("x"), UP(.ops = OPS(OP_DEVICE)))), r_allreduce },
  // MULTI keeps the dtype and its arg is the axis
  { UP(.ops = OPS(OP_MULTI), .name = "multi"), r_multi },
};

/* ---- spec (the rendered-UOp spec, the tail of type_verify's matcher) ---- */
static UOp *r_define_global(const Match *m, void *ctx) {
  const DType *d = m_get(m, "x")->dtype;
  return ret_bool(dt_is_ptr(d) && d->addrspace == AS_GLOBAL);
}
static UOp *r_define_local(const Match *m, void *ctx) {
  const DType *d = m_get(m, "x")->dtype;
  return ret_bool(dt_is_ptr(d) && d->addrspace == AS_LOCAL);
}
static UOp *r_define_var(const Match *m, void *ctx) {
  const Value *a = m_get(m, "x")->arg;
  return ret_bool(a->kind == V_TUPLE && a->n >= 3 && v_is_int(a->items[1]) && v_is_int(a->items[2]));
}
static UOp *r_range(const Match *m, void *ctx) {
  UOp *rng = m_get(m, "rng");
  return ret_bool(rng->dtype == m_get(m, "x")->dtype && v_is_int(rng->arg));
}
static UOp *r_view_leaf(const Match *m, void *ctx) { return ret_bool(m_get(m, "x")->arg->kind == V_ST); }
static UOp *r_view_of(const Match *m, void *ctx) {
  UOp *x = m_get(m, "x"), *src = m_get(m, "src");
  return ret_bool(x->arg->kind == V_ST && src->op != OP_STORE && dt_base(x->dtype) == dt_base(src->dtype));
}
/* type(arg) is type(dtypes.as_const(arg, dtype)) */
static bool const_type_ok(const Value *a, const DType *d) {
  if (a->kind == V_TUPLE) {
    if (a->n != d->count) return false;
    for (int i = 0; i < a->n; i++) {  /* int(x)/float(x)/bool(x) of each item must not raise */
      const Value *x = a->items[i];
      if (x->kind != V_INT && x->kind != V_FLOAT && x->kind != V_BOOL) return false;
      if (x->kind == V_FLOAT && dt_is_int(d) && !(x->f - x->f == 0)) return false;
    }
    return true;
  }
  if (a->kind != V_INT && a->kind != V_FLOAT && a->kind != V_BOOL) return false;
  if (dt_is_int(d)) return a->kind == V_INT;
  if (dt_is_float(d)) return a->kind == V_FLOAT;
  return a->kind == V_BOOL;
}
static UOp *r_const(const Match *m, void *ctx) { UOp *x = m_get(m, "x"); return ret_bool(const_type_ok(x->arg, x->dtype)); }
static UOp *r_where(const Match *m, void *ctx) {
  UOp *w = m_get(m, "w"), *x = m_get(m, "x"), *y = m_get(m, "y");
  return ret_bool(w->dtype == x->dtype && x->dtype == y->dtype);
}
static UOp *r_cmp(const Match *m, void *ctx) { return ret_bool(dt_base(m_get(m, "x")->dtype) == dt_base(m_get(m, "y")->dtype)); }
static UOp *r_shift(const Match *m, void *ctx) {
  UOp *a = m_get(m, "a"), *x = m_get(m, "x"), *y = m_get(m, "y");
  return ret_bool(a->dtype == x->dtype && (y->dtype == x->dtype || y->dtype == dt_uint));
}
static UOp *r_idiv_mod(const Match *m, void *ctx) { return dt_is_int(m_get(m, "x")->dtype) ? NULL : SPEC_FALSE; }
static UOp *r_alu(const Match *m, void *ctx) {
  UOp *x = m_get(m, "x");
  for (int i = 0; i < x->nsrc; i++) if (dt_base(x->src[i]->dtype) != dt_base(x->dtype)) return SPEC_FALSE;
  return SPEC_TRUE;
}
static UOp *r_wmma(const Match *m, void *ctx) { const Value *a = m_get(m, "x")->arg; return ret_bool(a->kind == V_TUPLE && a->n == 8); }
/* prod(y[1] for y in arg), or -1 when arg is not a tuple of pairs of ints */
static int64_t axes_prod(const Value *a) {
  if (a->kind != V_TUPLE) return -1;
  int64_t p = 1;
  for (int i = 0; i < a->n; i++) {
    const Value *y = a->items[i];
    if (y->kind != V_TUPLE || y->n < 2 || !v_is_int(y->items[1])) return -1;
    p *= y->items[1]->kind == V_BOOL ? y->items[1]->b : y->items[1]->i;
  }
  return p;
}
static UOp *r_contract(const Match *m, void *ctx) { UOp *x = m_get(m, "x"); return ret_bool(x->dtype->count == axes_prod(x->arg)); }
static UOp *r_unroll(const Match *m, void *ctx) {
  UOp *x = m_get(m, "x");
  return ret_bool(x->nsrc >= 1 && x->src[0]->dtype->count == axes_prod(x->arg));
}
static UOp *r_reduce_axis(const Match *m, void *ctx) {
  const Value *a = m_get(m, "x")->arg;
  if (a->kind != V_TUPLE || a->n < 2) return SPEC_FALSE;
  const Value *o = a->items[0];
  int64_t op = o->kind == V_OPS ? (int64_t)o->op : o->kind == V_INT ? o->i : o->kind == V_BOOL ? o->b : -1;
  return ret_bool(op == OP_ADD || op == OP_MUL || op == OP_MAX);
}
static UOp *r_gep(const Match *m, void *ctx) { return ret_bool(m_get(m, "gep")->dtype == dt_scalar_of(m_get(m, "src")->dtype)); }
static UOp *r_vectorize(const Match *m, void *ctx) {
  UOp *x = m_get(m, "x");
  if (x->nsrc <= 1 || x->nsrc != x->dtype->count) return SPEC_FALSE;
  for (int i = 0; i < x->nsrc; i++) {
    const DType *y = x->src[i]->dtype;
    if (y->kind == DTK_SCALAR ? y->count != 1 : y->v != 1) return SPEC_FALSE; /* .vec() asserts */
    if (x->dtype != dt_vec(y, x->nsrc)) return SPEC_FALSE;
  }
  return SPEC_TRUE;
}
static UOp *r_cast(const Match *m, void *ctx) { return ret_bool(v_is_none(m_get(m, "x")->arg)); }

/* index_pat = UPat(Ops.INDEX, name="idx").or_casted() */
#define INDEX_PAT UP_ANY(UP(.ops = OPS(OP_INDEX), .name = "idx"), UP(.ops = OPS(OP_CAST), SRC(UP(.ops = OPS(OP_INDEX), .name = "idx"))))
static const Rule spec[] = {
  // DEFINE_GLOBAL is a global pointer (or image)
  { UP(.ops = OPS(OP_DEFINE_GLOBAL), .name = "x"), r_define_global },
  // DEFINE_LOCAL is a local pointer
  { UP(.ops = OPS(OP_DEFINE_LOCAL), .name = "x"), r_define_local },
  // DEFINE_REG has no srcs
  { UP(.ops = OPS(OP_DEFINE_REG), NOSRC), r_true },
  // DEFINE_VAR has int bounds
  { UP(.ops = OPS(OP_DEFINE_VAR), .name = "x"), r_define_var },
  // RANGE has its bound's dtype and an int arg
  { UP(.ops = OPS(OP_RANGE), SRC(UVAR("x")), .name = "rng"), r_range },
  // SPECIAL has no srcs
  { UP(.ops = OPS(OP_SPECIAL), NOSRC), r_true },
  // a VIEW leaf holds a ShapeTracker
  { UP(.ops = OPS(OP_VIEW), .dts = DTS(SC_VOID), NOSRC, .name = "x"), r_view_leaf },
  // a VIEW of a non-STORE keeps the base dtype
  { UP(.ops = OPS(OP_VIEW), SRC(UVAR("src")), .name = "x"), r_view_of },
  // VALID of a VIEW is bool
  { UP(.ops = OPS(OP_VALID), .dts = DTS(SC_BOOL), SRC(UP(.ops = OPS(OP_VIEW)))), r_true },
  // CONST arg has the python type of its dtype
  { UP(.ops = OPS(OP_CONST), .name = "x"), r_const },
  // early LOAD has a <bufview, store?>
  { UP(.ops = OPS(OP_LOAD), SRC(UP(.ops = OPS(OP_VIEW), SRC(UP(.groups = G_DEFINES))))), r_true },
  { UP(.ops = OPS(OP_LOAD), SRC(UP(.ops = OPS(OP_VIEW), SRC(UP(.groups = G_DEFINES))), UP(.ops = OPS(OP_STORE)))), r_true },
  // early STORE has a <bufview, val>
  { UP(.ops = OPS(OP_STORE), SRC(UP(.ops = OPS(OP_VIEW), SRC(UP(.groups = G_DEFINES))), UP())), r_true },
  // INDEX takes a <buf, alu, gate?>
  { UP(.ops = OPS(OP_INDEX), SRC(UP(.groups = G_DEFINES), UP())), r_true },
  { UP(.ops = OPS(OP_INDEX), SRC(UP(.groups = G_DEFINES), UP(), UP(.dts = DTS(SC_BOOL)))), r_true },
  // LOAD on STORE
  { UP(.ops = OPS(OP_LOAD), SRC(UP(.ops = OPS(OP_STORE))), .allow_any_len = true), r_true },
  // LOAD takes a <bufidx, alt?, barrier?> (validate_index: IGNORE_OOB without z3)
  { UP(.ops = OPS(OP_LOAD), SRC(INDEX_PAT, UP(.ops = OPS(OP_IF), .name = "cond")), .allow_any_len = true), r_true },
  { UP(.ops = OPS(OP_LOAD), SRC(INDEX_PAT), .allow_any_len = true), r_true },
  // STORE takes a <bufidx, val, gate?> (validate_store: IGNORE_OOB without z3)
  { UP(.ops = OPS(OP_STORE), .dts = DTS(SC_VOID), SRC(INDEX_PAT, UP(.name = "val"), UP(.ops = OPS(OP_IF), .name = "gate")), .allow_any_len = true), r_true },
  { UP(.ops = OPS(OP_STORE), .dts = DTS(SC_VOID), SRC(INDEX_PAT, UP(.name = "val")), .allow_any_len = true), r_true },
  // WHERE has a bool condition and matching dtypes
  { UP(.ops = OPS(OP_WHERE), .name = "w", SRC(UP(.dts = DTS(SC_BOOL)), UVAR("x"), UVAR("y"))), r_where },
  // comparisons are bool of matching bases
  { UP(.ops = OPS(OP_CMPLT, OP_CMPNE, OP_CMPEQ), .dts = DTS(SC_BOOL), SRC(UVAR("x"), UVAR("y"))), r_cmp },
  // SHL/SHR: the shift distance can be a uint
  { UP(.ops = OPS(OP_SHL, OP_SHR), SRC(UVAR("x"), UVAR("y")), .name = "a"), r_shift },
  // IDIV/MOD are int only
  { UP(.ops = OPS(OP_IDIV, OP_MOD), .name = "x"), r_idiv_mod },
  // most ALUs have all matching dtypes
  { UP(.groups = G_ALU, .name = "x"), r_alu },
  // ENDRANGE ends a RANGE
  { UP(.ops = OPS(OP_ENDRANGE), .dts = DTS(SC_VOID), SRC(UP(.ops = OPS(OP_RANGE)))), r_true },
  // WMMA has a <a, b, acc> and an 8-tuple arg
  { UP(.ops = OPS(OP_WMMA), SRC(UP(), UP(), UP()), .name = "x"), r_wmma },
  // CONTRACT/UNROLL counts match their axes
  { UP(.ops = OPS(OP_CONTRACT), .name = "x"), r_contract },
  { UP(.ops = OPS(OP_UNROLL), .name = "x"), r_unroll },
  // IF has a <gate, barrier?>
  { UP(.ops = OPS(OP_IF), .dts = DTS(SC_VOID), SRC(UP())), r_true },
  { UP(.ops = OPS(OP_IF), .dts = DTS(SC_VOID), SRC(UP(), UP(.ops = OPS(OP_BARRIER)))), r_true },
  { UP(.ops = OPS(OP_ENDIF), .dts = DTS(SC_VOID), SRC(UP(.ops = OPS(OP_IF)))), r_true },
  // REDUCE_AXIS is (ADD|MUL|MAX, axes)
  { UP(.ops = OPS(OP_REDUCE_AXIS), .name = "x"), r_reduce_axis },
  // GEP gives the scalar
  { UP(.ops = OPS(OP_GEP), SRC(UVAR("src")), .name = "gep"), r_gep },
  // VECTORIZE of n scalars is their vec(n)
  { UP(.ops = OPS(OP_VECTORIZE), .name = "x"), r_vectorize },
  // BITCAST/CAST have no arg
  { UP(.ops = OPS(OP_BITCAST, OP_CAST), SRC(UP()), .name = "x"), r_cast },
  // BARRIER of STOREs, or at the end of loops
  { UP(.ops = OPS(OP_BARRIER), .dts = DTS(SC_VOID), SRC_REPEAT(UP(.ops = OPS(OP_STORE), .allow_any_len = true))), r_true },
  { UP(.ops = OPS(OP_BARRIER), .dts = DTS(SC_VOID)), r_true },
  // sinks can be anything
  { UP(.ops = OPS(OP_SINK), .dts = DTS(SC_VOID)), r_true },
  { UP(.ops = OPS(OP_NOOP, OP_CUSTOMI, OP_CUSTOM, OP_PRECAST)), r_true },
  // PTX LOAD/STORE
  { UP(.ops = OPS(OP_LOAD, OP_STORE), SRC(UP(.dts = DTS(SC_LONG))), .allow_any_len = true), r_true },
};

static PM *pm_tensor_spec; /* tensor_uop_spec + spec, as type_verify(uops, tensor_uop_spec) uses it */

void spec_init(void) {
  if (pm_tensor_spec) return;
  pm_init();
  PM *parts[4] = {pm_new(buffer_spec, RULES_N(buffer_spec)), pm_new(assign_spec, RULES_N(assign_spec)),
                  pm_new(tensor_rules, RULES_N(tensor_rules)), pm_new(spec, RULES_N(spec))};
  pm_tensor_spec = pm_concat(4, parts);
}

bool spec_check_tensor(UOp *u) {
  spec_init();
  return pm_rewrite(pm_tensor_spec, u, NULL) == SPEC_TRUE;
}

/* type_verify_tensor (schedule.h) lives in kernelize.c, on top of spec_check_tensor. */
