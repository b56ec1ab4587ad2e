/* render.c: UOp.render() and sym_infer. tinygrad renders by graph_rewrite with the `renderer`
 * table, turning each node whose sources are all rendered (NOOPs holding strings) into a NOOP;
 * here the same rules run directly over the toposort (children first, as the rewrite visits
 * them). sym_infer evaluates the simplified expression with Python semantics the way tinygrad's
 * eval of the renderer_infer string does (// is cdiv, % is cmod). */
#include "sym_int.h"
#include <string.h>

static const char *sym_of(Op op) {
  switch (op) {
  case OP_ADD: return "+"; case OP_SUB: return "-"; case OP_IDIV: return "//"; case OP_MOD: return "%";
  case OP_SHL: return "<<"; case OP_SHR: return ">>"; case OP_MUL: return "*"; case OP_CMPLT: return "<";
  case OP_CMPNE: return "!="; case OP_AND: return "&"; case OP_OR: return "|"; case OP_XOR: return "^";
  default: return NULL;
  }
}
/* x.src[i].arg as the renderer's f-strings see it: the string of a rendered src, else str(arg) */
static const char *sarg(Arena *a, Map *done, UOp *s) {
  bool f;
  const char *r = map_get(done, s, uop_h(s), &f);
  return f && r ? r : py_value_str(a, s->arg);
}
static const char *render_node(Arena *a, Map *done, UOp *x) {
  Op op = (Op)x->op;
  if (op == OP_DEFINE_VAR || op == OP_SPECIAL)
    return x->arg->kind == V_TUPLE && x->arg->n ? py_value_str(a, x->arg->items[0]) : py_value_str(a, x->arg);
  if (op == OP_RANGE) return arena_printf(a, "ridx%s", py_value_str(a, x->arg));
  if (op == OP_CONST || op == OP_VCONST) return py_value_str(a, x->arg);
  if (op == OP_UNROLL) return arena_printf(a, "UNROLL(%s, %s)", sarg(a, done, x->src[0]), py_value_str(a, x->arg));
  if (op == OP_CAST) return arena_printf(a, "(%s)(%s)", dt_repr(a, x->dtype), sarg(a, done, x->src[0]));
  if (op == OP_LOAD) return "load";
  /* the remaining rules need every src rendered (src=UPat(Ops.NOOP)) */
  const char *s[3] = {0};
  for (int i = 0; i < x->nsrc; i++) {
    bool f;
    const char *r = map_get(done, x->src[i], uop_h(x->src[i]), &f);
    if (!f || !r) return NULL;
    if (i < 3) s[i] = r;
  }
  if (op == OP_BIND) return x->nsrc ? s[0] : NULL;
  if (!op_in(op, G_ALU) && op != OP_MULACC) return NULL;
  if (op == OP_NEG) return arena_printf(a, "(-%s)", s[0]);
  if (op == OP_RECIP) return arena_printf(a, "(1/%s)", s[0]);
  if (op == OP_MAX) return arena_printf(a, "max(%s, %s)", s[0], s[1]);
  if (op == OP_MULACC) return arena_printf(a, "(%s*%s+%s)", s[0], s[1], s[2]);
  if (op == OP_WHERE) return arena_printf(a, "(%s if %s else %s)", s[1], s[0], s[2]);
  const char *sy = sym_of(op);
  /* tinygrad raises a KeyError here (no symbol for the op); tgc renders it by name instead */
  if (!sy || x->nsrc != 2) return arena_printf(a, "%s(%s%s%s)", op_names[op], s[0] ? s[0] : "", x->nsrc > 1 ? ", " : "", x->nsrc > 1 ? s[1] : "");
  return arena_printf(a, "(%s%s%s)", s[0], sy, s[1]);
}
static const char *render_raw(Arena *a, UOp *u) {
  UList topo = uop_toposort(u, NULL, NULL);
  Map done;
  map_init(&done, &uctx->scratch);
  for (int i = 0; i < topo.n; i++) map_put(&done, topo.v[i], uop_h(topo.v[i]), (void *)render_node(a, &done, topo.v[i]));
  const char *r = map_get(&done, u, uop_h(u), NULL);
  return r ? r : arena_printf(a, "UOp(Ops.%s, %s, arg=%s)", op_names[u->op], dt_repr(a, u->dtype), py_value_str(a, u->arg));
}
const char *u_render(Arena *a, UOp *u) {
  ArenaMark m = arena_mark(&uctx->scratch);
  const char *r = render_raw(a, u_simplify(u));
  arena_pop(&uctx->scratch, m);
  return r;
}
const char *u_render_nosimplify(Arena *a, UOp *u) {
  ArenaMark m = arena_mark(&uctx->scratch);
  const char *r = render_raw(a, u);
  arena_pop(&uctx->scratch, m);
  return r;
}

/* ---- sym_infer ---- */
static Num infer_node(UOp *x, Map *vals, int nvars, UOp *const *vars, const int64_t *vv) {
  Op op = (Op)x->op;
  Num s[3] = {n_int(0), n_int(0), n_int(0)};
  if (op == OP_DEFINE_VAR || op == OP_SPECIAL) {
    const char *name = x->arg->items[0]->s;
    for (int i = 0; i < nvars; i++)
      if (vars[i]->op == OP_DEFINE_VAR && strcmp(vars[i]->arg->items[0]->s, name) == 0) return n_int(vv[i]);
    tg_fail(TG_EINPUT, "sym_infer: no value for variable %s", name);
  }
  if (op == OP_CONST) return n_of_value(x->arg);
  if (op == OP_RANGE) tg_fail(TG_EINPUT, "sym_infer: name 'ridx%s' is not defined", py_value_str(&uctx->scratch, x->arg));
  for (int i = 0; i < x->nsrc && i < 3; i++) s[i] = *(Num *)map_get(vals, x->src[i], uop_h(x->src[i]), NULL);
  switch (op) {
  case OP_BIND: return s[0];
  case OP_CAST:
    if (dt_is_int(x->dtype)) return n_int(n_i64(s[0]));
    if (dt_is_float(x->dtype)) return n_float(n_f(s[0]));
    return n_bool(n_truthy(s[0]));
  case OP_NEG: return n_neg(s[0]);
  case OP_RECIP: return n_float(1.0 / n_f(s[0]));
  case OP_MAX: return n_max(s[0], s[1]);
  case OP_MULACC: return n_add(n_mul(s[0], s[1]), s[2]);
  case OP_WHERE: return n_truthy(s[0]) ? s[1] : s[2];
  case OP_ADD: return n_add(s[0], s[1]);
  case OP_SUB: return n_sub(s[0], s[1]);
  case OP_MUL: return n_mul(s[0], s[1]);
  case OP_IDIV: return n_cdiv(s[0], s[1]);
  case OP_MOD: return n_cmod(s[0], s[1]);
  default: {
    Num x3[3] = {s[0], s[1], s[2]};
    return n_exec(op, x->dtype, x->nsrc, x3, false);
  }
  }
}
int64_t sym_infer(UOp *u, int nvars, UOp *const *vars, const int64_t *vals) {
  UOp *sx = u_simplify(u);
  ArenaMark m = arena_mark(&uctx->scratch);
  UList topo = uop_toposort(sx, NULL, NULL);
  Map vm;
  map_init(&vm, &uctx->scratch);
  Num r = n_int(0);
  for (int i = 0; i < topo.n; i++) {
    Num *slot = arena_alloc(&uctx->scratch, sizeof *slot);
    *slot = r = infer_node(topo.v[i], &vm, nvars, vars, vals);
    map_put(&vm, topo.v[i], uop_h(topo.v[i]), slot);
  }
  arena_pop(&uctx->scratch, m);
  return n_i64(r);
}
