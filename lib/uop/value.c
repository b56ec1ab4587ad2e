/* value.c: interned argument values, Views, ShapeTrackers and Metadata.
 * Interning makes equality a pointer compare everywhere above this file (UOp keys compare
 * args by pointer). Floats compare like Python's == (0.0 == -0.0), NaN by bit pattern. */
#include "uop.h"
#include <math.h>
#include <stdarg.h>
#include <string.h>

static uint64_t fbits(double f) { if (f == 0) f = 0; uint64_t b; memcpy(&b, &f, 8); return b; }

static uint64_t value_hash(const Value *v) {
  uint64_t h = hash_mix(0x51ed27, v->kind);
  switch (v->kind) {
  case V_NONE: break;
  case V_BOOL: h = hash_mix(h, v->b); break;
  case V_INT: h = hash_mix(hash_mix(h, (uint64_t)v->i), (uint64_t)v->n); break;
  case V_FLOAT: h = hash_mix(h, fbits(v->f)); break;
  case V_STR: h = hash_bytes(v->s, strlen(v->s), h); break;
  case V_TUPLE: for (int i = 0; i < v->n; i++) h = hash_mix(h, v->items[i]->hash); h = hash_mix(h, (uint64_t)v->n); break;
  case V_OPS: h = hash_mix(h, v->op); break;
  case V_UOP: h = hash_mix(h, uop_h(v->u)); break;
  case V_ST: h = hash_mix(h, v->st->hash); break;
  case V_KERNEL:
    h = hash_mix(h, uop_h(v->k.ast));
    for (int i = 0; i < v->k.nmeta; i++) h = hash_mix(h, v->k.meta[i]->id);
    break;
  case V_DTYPE: h = hash_mix(h, v->dt->id); break;
  case V_ADDRSPACE: h = hash_mix(h, v->as); break;
  }
  return h;
}
static bool value_eq(const void *sa, const void *pb) {
  const Value *a = sa, *b = pb;
  if (a->kind != b->kind) return false;
  switch (a->kind) {
  case V_NONE: return true;
  case V_BOOL: return a->b == b->b;
  case V_INT: return a->i == b->i && a->n == b->n;
  case V_FLOAT: return a->f == b->f || (isnan(a->f) && isnan(b->f) && fbits(a->f) == fbits(b->f));
  case V_STR: return strcmp(a->s, b->s) == 0;
  case V_TUPLE:
    if (a->n != b->n) return false;
    for (int i = 0; i < a->n; i++) if (a->items[i] != b->items[i]) return false;
    return true;
  case V_OPS: return a->op == b->op;
  case V_UOP: return a->u == b->u;
  case V_ST: return a->st == b->st;
  case V_KERNEL:
    if (a->k.ast != b->k.ast || a->k.nmeta != b->k.nmeta) return false;
    for (int i = 0; i < a->k.nmeta; i++) if (a->k.meta[i] != b->k.meta[i]) return false;
    return true;
  case V_DTYPE: return a->dt == b->dt;
  case V_ADDRSPACE: return a->as == b->as;
  }
  return false;
}
static const Value *vintern(Value *proto) {
  proto->hash = value_hash(proto);
  size_t slot;
  const Value *f = iset_find(&uctx->values, proto->hash, value_eq, proto, &slot);
  if (f) return f;
  Value *v = arena_dup(ga(), proto, sizeof *v);
  if (v->kind == V_STR) v->s = arena_strdup(ga(), v->s);
  if (v->kind == V_TUPLE && v->n) v->items = arena_dup(ga(), v->items, sizeof(Value *) * (size_t)v->n);
  if (v->kind == V_KERNEL && v->k.nmeta) v->k.meta = arena_dup(ga(), v->k.meta, sizeof(Meta *) * (size_t)v->k.nmeta);
  v->id = uctx->next_vid++;
  iset_add(&uctx->values, slot, v->hash, v);
  return v;
}
/* the commonest values skip the intern table after their first lookup (uctx->vsmall) */
enum { VS_NONE, VS_FALSE, VS_TRUE, VS_INT0 = 4 /* int i at VS_INT0 + i, i in -1..127 */ };
static const Value *vsmall(int slot, Value *proto) {
  const Value **c = &uctx->vsmall[slot];
  return *c ? *c : (*c = vintern(proto));
}
const Value *v_none(void) { Value p = {.kind = V_NONE}; return vsmall(VS_NONE, &p); }
const Value *v_bool(bool b) { Value p = {.kind = V_BOOL, .b = b}; return vsmall(b ? VS_TRUE : VS_FALSE, &p); }
const Value *v_int(int64_t i) {
  Value p = {.kind = V_INT, .i = i};
  return i >= -1 && i <= 127 ? vsmall(VS_INT0 + (int)i, &p) : vintern(&p);
}
const Value *v_uint64(uint64_t u) {
  if (u <= (uint64_t)INT64_MAX) return v_int((int64_t)u);
  Value p = {.kind = V_INT, .n = 1, .i = (int64_t)u};
  return vintern(&p);
}
const Value *v_float(double f) { Value p = {.kind = V_FLOAT, .f = f}; return vintern(&p); }
const Value *v_str(const char *s) { Value p = {.kind = V_STR, .s = s}; return vintern(&p); }
const Value *v_tuple(int n, const Value *const *items) { Value p = {.kind = V_TUPLE, .n = n, .items = items}; return vintern(&p); }
const Value *v_tuplev(int n, ...) {
  const Value *it[64];
  va_list ap;
  va_start(ap, n);
  for (int i = 0; i < n && i < 64; i++) it[i] = va_arg(ap, const Value *);
  va_end(ap);
  return v_tuple(n, it);
}
const Value *v_ints(int n, const int64_t *xs) {
  ArenaMark m = arena_mark(&uctx->scratch);
  const Value **it = arena_alloc(&uctx->scratch, sizeof(Value *) * (size_t)(n + 1));
  for (int i = 0; i < n; i++) it[i] = v_int(xs[i]);
  const Value *r = v_tuple(n, it);
  arena_pop(&uctx->scratch, m);
  return r;
}
const Value *v_ops(Op op) { Value p = {.kind = V_OPS, .op = op}; return vintern(&p); }
const Value *v_uop(UOp *u) { Value p = {.kind = V_UOP, .u = u}; return vintern(&p); }
const Value *v_st(const ShapeTracker *st) { Value p = {.kind = V_ST, .st = st}; return vintern(&p); }
const Value *v_kernel(UOp *ast, int nmeta, const Meta *const *meta) {
  Value p = {.kind = V_KERNEL, .k = {ast, nmeta, meta}};
  return vintern(&p);
}
const Value *v_dtype(const DType *d) { Value p = {.kind = V_DTYPE, .dt = d}; return vintern(&p); }
const Value *v_addrspace(AddrSpace as) { Value p = {.kind = V_ADDRSPACE, .as = as}; return vintern(&p); }

static double num_of(const Value *v) {
  return v->kind == V_BOOL ? v->b : v->kind == V_INT ? (v->n == 1 ? (double)(uint64_t)v->i : (double)v->i) : v->f;
}
static bool is_num(const Value *v) { return v->kind == V_BOOL || v->kind == V_INT || v->kind == V_FLOAT; }
int v_cmp(const Value *a, const Value *b) {
  if (a == b) return 0;
  if (is_num(a) && is_num(b)) {
    if (a->kind != V_FLOAT && b->kind != V_FLOAT) {
      bool ua = a->kind == V_INT && a->n == 1, ub = b->kind == V_INT && b->n == 1; /* >= 2**63 */
      if (ua != ub) return ua ? 1 : -1;
      if (ua) return (uint64_t)a->i < (uint64_t)b->i ? -1 : (uint64_t)a->i > (uint64_t)b->i;
      int64_t x = a->kind == V_BOOL ? a->b : a->i, y = b->kind == V_BOOL ? b->b : b->i;
      return x < y ? -1 : x > y;
    }
    double x = num_of(a), y = num_of(b);
    return x < y ? -1 : x > y;
  }
  if (a->kind != b->kind) return a->kind < b->kind ? -1 : 1;
  switch (a->kind) {
  case V_STR: return strcmp(a->s, b->s);
  case V_TUPLE:
    for (int i = 0; i < a->n && i < b->n; i++) { int c = v_cmp(a->items[i], b->items[i]); if (c) return c; }
    return a->n < b->n ? -1 : a->n > b->n;
  case V_OPS: return a->op < b->op ? -1 : a->op > b->op;
  case V_UOP: return a->u->id < b->u->id ? -1 : a->u->id > b->u->id;
  default: return a->id < b->id ? -1 : a->id > b->id;
  }
}

/* ---- sint ---- */
bool si_eq(Sint a, Sint b) { return a.u == b.u && (a.u || a.c == b.c); }
uint64_t si_hash(Sint s) { return s.u ? hash_mix(7, uop_h(s.u)) : hash_mix(3, (uint64_t)s.c); }

/* ---- View / ShapeTracker ---- */
typedef struct { int ndim; const Sint *shape, *strides; Sint offset; const Sint *mask; bool contiguous; } ViewProbe;
static bool view_eq(const void *sa, const void *pb) {
  const View *a = sa; const ViewProbe *b = pb;
  if (a->ndim != b->ndim || a->contiguous != b->contiguous || !si_eq(a->offset, b->offset)) return false;
  if ((a->mask == NULL) != (b->mask == NULL)) return false;
  for (int i = 0; i < a->ndim; i++) {
    if (!si_eq(a->shape[i], b->shape[i]) || !si_eq(a->strides[i], b->strides[i])) return false;
    if (a->mask && (!si_eq(a->mask[2 * i], b->mask[2 * i]) || !si_eq(a->mask[2 * i + 1], b->mask[2 * i + 1]))) return false;
  }
  return true;
}
const View *view_intern(int ndim, const Sint *shape, const Sint *strides, Sint offset, const Sint *mask, bool contiguous) {
  uint64_t h = hash_mix(0x7e1, (uint64_t)ndim);
  for (int i = 0; i < ndim; i++) h = hash_mix(hash_mix(h, si_hash(shape[i])), si_hash(strides[i]));
  h = hash_mix(h, si_hash(offset));
  h = hash_mix(h, mask ? 1 : 0);
  if (mask) for (int i = 0; i < 2 * ndim; i++) h = hash_mix(h, si_hash(mask[i]));
  h = hash_mix(h, contiguous);
  ViewProbe p = {ndim, shape, strides, offset, mask, contiguous};
  size_t slot;
  View *f = iset_find(&uctx->views, h, view_eq, &p, &slot);
  if (f) return f;
  View *v = arena_alloc(ga(), sizeof *v);
  v->ndim = ndim;
  v->shape = arena_dup(ga(), shape, sizeof(Sint) * (size_t)ndim);
  v->strides = arena_dup(ga(), strides, sizeof(Sint) * (size_t)ndim);
  v->offset = offset;
  v->mask = mask ? arena_dup(ga(), mask, sizeof(Sint) * 2 * (size_t)ndim) : NULL;
  v->contiguous = contiguous;
  v->symbolic = offset.u != NULL;
  for (int i = 0; i < ndim; i++) v->symbolic |= shape[i].u || strides[i].u || (mask && (mask[2 * i].u || mask[2 * i + 1].u));
  v->hash = h;
  v->id = uctx->next_vid++;
  iset_add(&uctx->views, slot, h, v);
  return v;
}
typedef struct { int n; const View *const *v; } STProbe;
static bool st_eq(const void *sa, const void *pb) {
  const ShapeTracker *a = sa; const STProbe *b = pb;
  if (a->nviews != b->n) return false;
  for (int i = 0; i < a->nviews; i++) if (a->views[i] != b->v[i]) return false;
  return true;
}
const ShapeTracker *st_intern(int nviews, const View *const *views) {
  uint64_t h = hash_mix(0x57, (uint64_t)nviews);
  for (int i = 0; i < nviews; i++) h = hash_mix(h, views[i]->hash);
  STProbe p = {nviews, views};
  size_t slot;
  ShapeTracker *f = iset_find(&uctx->sts, h, st_eq, &p, &slot);
  if (f) return f;
  ShapeTracker *s = arena_alloc(ga(), sizeof *s);
  s->nviews = nviews;
  s->views = arena_dup(ga(), views, sizeof(View *) * (size_t)nviews);
  s->hash = h;
  s->id = uctx->next_vid++;
  iset_add(&uctx->sts, slot, h, s);
  return s;
}

/* ---- the intern sets' hash functions (for growing a table) ---- */
static uint64_t meta_hash(const char *name, const char *caller, bool backward) {
  return hash_bytes(name, strlen(name), hash_bytes(caller, strlen(caller), backward));
}
static uint64_t value_hash_of(const void *p) { return ((const Value *)p)->hash; }
static uint64_t view_hash_of(const void *p) { return ((const View *)p)->hash; }
static uint64_t st_hash_of(const void *p) { return ((const ShapeTracker *)p)->hash; }
static uint64_t meta_hash_of(const void *p) { const Meta *m = p; return meta_hash(m->name, m->caller, m->backward); }
void value_sets_init(UCtx *c) {
  iset_init(&c->values, value_hash_of, &c->mem);
  iset_init(&c->views, view_hash_of, &c->mem);
  iset_init(&c->sts, st_hash_of, &c->mem);
  iset_init(&c->metas, meta_hash_of, &c->mem);
}

/* ---- Metadata ---- */
static bool meta_eq(const void *sa, const void *pb) {
  const Meta *a = sa, *b = pb;
  return a->backward == b->backward && strcmp(a->name, b->name) == 0 && strcmp(a->caller, b->caller) == 0;
}
const Meta *meta_intern(const char *name, const char *caller, bool backward) {
  Meta p = {name, caller ? caller : "", backward, 0};
  uint64_t h = meta_hash(p.name, p.caller, backward);
  size_t slot;
  Meta *f = iset_find(&uctx->metas, h, meta_eq, &p, &slot);
  if (f) return f;
  Meta *m = arena_alloc(ga(), sizeof *m);
  m->name = arena_strdup(ga(), p.name);
  m->caller = arena_strdup(ga(), p.caller);
  m->backward = backward;
  m->id = uctx->next_vid++;
  iset_add(&uctx->metas, slot, h, m);
  return m;
}
