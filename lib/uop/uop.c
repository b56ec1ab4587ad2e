/* uop.c: op tables and sets, the interning UOp constructor (Lua's internshrstr: hash, probe one
 * bucket, return the existing node or make it), toposort, and the compile context. */
#include "uop.h"
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

const char *const op_names[OP_COUNT] = {
  [OP_INVALID] = "INVALID",
#define OP(name, groups) [OP_##name] = #name,
#include "ops.def"
#undef OP
};
#define ALUFLAGS(g) (((g) & (G_UNARY | G_BINARY | G_TERNARY)) ? (G_ALU | G_ELEMENTWISE) : 0)
const unsigned op_groups[OP_COUNT] = {
#define OP(name, groups) [OP_##name] = (groups) | ALUFLAGS(groups),
#include "ops.def"
#undef OP
};
/* a table of 256 buckets by (first char, length, last char), each holding the up to OPN_WAYS ops of
 * that key (ADD, AND and VCONST share one, as do MUL, CMPLT, ENDIF and CONST), filled once; a name
 * is one strcmp per op of its bucket away. A bucket that would overflow marks itself full, and its
 * names fall back to the scan of every op (none does with tinygrad 0.11.0's ops) */
enum { OPN_WAYS = 4 };
Op op_from_name(const char *s) {
  static _Atomic uint8_t tab[256][OPN_WAYS]; /* ops of the key, 0-padded; tab[k][0] == 255: full */
  static _Atomic bool filled;
  size_t n = strlen(s);
  if (!n) return OP_INVALID;
#define OPN_KEY(p, len) ((unsigned)((unsigned char)(p)[0] * 7u + (unsigned)(len) * 31u + (unsigned char)(p)[(len) - 1]) & 255u)
  if (!filled) {
    for (int i = 1; i < OP_COUNT; i++) {
      unsigned k = OPN_KEY(op_names[i], strlen(op_names[i]));
      if (tab[k][0] == 255) continue;   /* full already: its names are scanned */
      int w = 0;
      while (w < OPN_WAYS && tab[k][w]) w++;
      if (w < OPN_WAYS) tab[k][w] = (uint8_t)i;
      else tab[k][0] = 255;
    }
    filled = true;
  }
  unsigned k = OPN_KEY(s, n);
#undef OPN_KEY
  if (tab[k][0] != 255) {
    for (int w = 0; w < OPN_WAYS && tab[k][w]; w++)
      if (strcmp(op_names[tab[k][w]], s) == 0) return (Op)tab[k][w];
    return OP_INVALID;
  }
  for (int i = 1; i < OP_COUNT; i++) if (strcmp(op_names[i], s) == 0) return (Op)i;
  return OP_INVALID;
}

OpSet opset_of(int n, ...) {
  OpSet s = {{0, 0}};
  va_list ap;
  va_start(ap, n);
  for (int i = 0; i < n; i++) s = opset_add(s, (Op)va_arg(ap, int));
  va_end(ap);
  return s;
}
OpSet opset_group(unsigned groups) {
  OpSet s = {{0, 0}};
  for (int i = 1; i < OP_COUNT; i++) if (op_groups[i] & groups) s = opset_add(s, (Op)i);
  return s;
}
OpSet opset_all(void) {
  OpSet s = {{0, 0}};
  for (int i = 1; i < OP_COUNT; i++) s = opset_add(s, (Op)i);
  return s;
}
OpSet opset_minus(OpSet a, OpSet b) { return (OpSet){{a.w[0] & ~b.w[0], a.w[1] & ~b.w[1]}}; }
OpSet opset_union(OpSet a, OpSet b) { return (OpSet){{a.w[0] | b.w[0], a.w[1] | b.w[1]}}; }

/* ---- context ---- */
_Thread_local UCtx *uctx;

void options_default(Options *o) {
  o->fuse_arange = 1; o->fuse_conv_bw = 0; o->split_reduceop = 1; o->dont_realize_expand = 0;
  o->dont_group_reduces = 0; o->reduceop_split_threshold = 32768; o->reduceop_split_size = 22;
  o->max_kernel_buffers = 0; o->ring = 1;
}
static uint64_t uop_hash_of(const void *p);
UCtx *uop_ctx_new(void) {
  dtype_init();
  UCtx *c = calloc(1, sizeof *c);
  if (!c) return NULL;
  options_default(&c->opt);
  c->next_id = 1;
  c->byid = calloc(c->byid_cap = 64, sizeof *c->byid);
  if (!c->byid) { free(c); return NULL; }
  memuse_add(&c->mem, c->byid_cap * sizeof *c->byid);
  c->next_vid = 1;
  arena_share(&c->arena, &c->mem);
  arena_share(&c->nodes, &c->mem);
  arena_share(&c->scratch, &c->mem);
  for (size_t i = 0; i < sizeof c->memo / sizeof c->memo[0]; i++) c->memo[i].use = &c->mem;
  iset_init(&c->uops, uop_hash_of, &c->mem);
  value_sets_init(c);
  uctx = c;
  return c;
}
void uop_ctx_free(UCtx *c) {
  if (!c) return;
  arena_free(&c->arena);
  arena_free(&c->nodes);
  arena_free(&c->scratch);
  free(c->walk_stack);
  free(c->byid);
  iset_free(&c->uops); iset_free(&c->values); iset_free(&c->views); iset_free(&c->sts); iset_free(&c->metas);
  for (size_t i = 0; i < sizeof c->memo / sizeof c->memo[0]; i++) pairmap_free(&c->memo[i]);
  if (uctx == c) uctx = NULL;
  free(c);
}

/* ---- interning constructor ---- */
typedef struct { Op op; const DType *dt; int nsrc; UOp *const *src; const Value *arg, *tag; } UProbe;
static bool uop_eq(const void *sa, const void *pb) {
  const UOp *a = sa; const UProbe *b = pb;
  if (a->op != b->op || a->dtype != b->dt || a->nsrc != b->nsrc || a->arg != b->arg || a->tag != b->tag) return false;
  for (int i = 0; i < a->nsrc; i++) if (a->src[i] != b->src[i]) return false;
  return true;
}
/* multiply-xor per field (the node ids are dense), one avalanche at the end for the low bits
 * the table index takes */
static inline uint64_t uop_hash(Op op, const DType *dt, int nsrc, UOp *const *src, const Value *arg, const Value *tag) {
  const uint64_t K = 0x9E3779B97F4A7C15ull;
  uint64_t h = ((((0xC0FFEEull ^ op) * K ^ dt->id) * K ^ arg->hash) * K ^ tag->hash) * K;
  for (int i = 0; i < nsrc; i++) h = (h ^ src[i]->id) * K;
  return h ^ (h >> 29);
}
static uint64_t uop_hash_of(const void *p) { const UOp *u = p; return uop_hash((Op)u->op, u->dtype, u->nsrc, u->src, u->arg, u->tag); }
/* byid with room for the ids below nc (the old table is live while it is copied) */
static void byid_resize(UCtx *c, size_t nc) {
  if (nc <= c->byid_cap) return;
  if (nc > (size_t)1 << 31) tg_fail(TG_EINPUT, "more than 2**31 uops");
  UOp **nb = malloc(nc * sizeof *nb);
  if (!nb) tg_fail(TG_EINTERNAL, "out of memory");
  memuse_add(&c->mem, nc * sizeof *nb);
  memcpy(nb, c->byid, c->byid_cap * sizeof *nb);
  free(c->byid);
  memuse_sub(&c->mem, c->byid_cap * sizeof *nb);
  c->byid = nb, c->byid_cap = nc;
}
static __attribute__((noinline)) void byid_grow(UCtx *c) { byid_resize(c, (size_t)c->byid_cap * 2); }
void uop_reserve(size_t more, size_t lim) {
  if (more > lim) more = lim;
  iset_reserve_more(&uctx->uops, more, lim);
  byid_resize(uctx, uctx->next_id + more);
}
UOp *uop_new(Op op, const DType *dt, int nsrc, UOp *const *src, const Value *arg, const Value *tag) {
  if (!arg) arg = v_none();
  if (!tag) tag = v_none();
  if (!dt) dt = dt_void;
  if (nsrc > UOP_MAX_SRC) tg_fail(TG_EINPUT, "a %s with %d sources is more than tgc supports", op_names[op], nsrc);
  uint64_t h = uop_hash(op, dt, nsrc, src, arg, tag);
  UProbe p = {op, dt, nsrc, src, arg, tag};
  size_t slot;
  UOp *f = iset_find(&uctx->uops, h, uop_eq, &p, &slot);
  if (f) return f;
  UOp *u = arena_alloc8(&uctx->nodes, sizeof *u + sizeof(UOp *) * (size_t)nsrc);
  /* each field stored (a memset of the node is a `rep stos` in gcc's code, slow to start) */
  u->op = (uint8_t)op; u->st_state = u->dev_state = u->axis_state = 0; u->nsrc = nsrc;
  if (__builtin_expect(uctx->next_id == uctx->byid_cap, 0)) byid_grow(uctx);
  uctx->byid[uctx->next_id] = u;
  u->id = uctx->next_id++; u->walk = 0;
  u->dtype = dt; u->arg = arg; u->tag = tag; u->meta = NULL;
  u->st_cache = NULL; u->dev_cache = NULL; u->axis_cache = 0; u->rw_epoch = 0;
  u->rw[0] = u->rw[1] = NULL; u->cache[0] = u->cache[1] = NULL;
  for (int i = 0; i < nsrc; i++) ((UOp **)u->src)[i] = src[i];
  uctx->nedges += (uint64_t)nsrc;
  iset_add(&uctx->uops, slot, h, u);
  return u;
}
UOp *uop0(Op op, const DType *dt, const Value *arg) { return uop_new(op, dt, 0, NULL, arg, NULL); }
UOp *uop1(Op op, const DType *dt, UOp *a, const Value *arg) { return uop_new(op, dt, 1, &a, arg, NULL); }
UOp *uop2(Op op, const DType *dt, UOp *a, UOp *b, const Value *arg) { UOp *s[2] = {a, b}; return uop_new(op, dt, 2, s, arg, NULL); }
UOp *uop3(Op op, const DType *dt, UOp *a, UOp *b, UOp *c, const Value *arg) {
  UOp *s[3] = {a, b, c};
  return uop_new(op, dt, 3, s, arg, NULL);
}
UOp *uop_replace(UOp *u, const DType *dt, int nsrc, UOp *const *src, const Value *arg, const Value *tag) {
  return uop_new((Op)u->op, dt ? dt : u->dtype, nsrc < 0 ? u->nsrc : nsrc, nsrc < 0 ? u->src : src, arg ? arg : u->arg, tag ? tag : u->tag);
}
UOp *uop_replace_op(UOp *u, Op op) { return uop_new(op, u->dtype, u->nsrc, u->src, u->arg, u->tag); }
UOp *uop_with_tag(UOp *u, const Value *tag) { return uop_replace(u, NULL, -1, NULL, NULL, tag ? tag : v_none()); }
void uop_set_meta(UOp *u, MetaList m) {
  if (m.n && m.m[m.n]) tg_fail(TG_EINTERNAL, "uop_set_meta: a metadata list without its NULL");
  u->meta = m.n ? m.m : NULL;
}

UOp *uop_const(const DType *dt, const Value *v) { return uop0(OP_CONST, dt, v); }
UOp *uop_const_int(const DType *dt, int64_t i) {
  if (dt_is_float(dt)) return uop0(OP_CONST, dt, v_float((double)i));
  if (dt_is_bool(dt)) return uop0(OP_CONST, dt, v_bool(i != 0));
  return uop0(OP_CONST, dt, v_int(i));
}
UOp *uop_const_float(const DType *dt, double f) {
  if (dt_is_float(dt)) return uop0(OP_CONST, dt, v_float(f));
  if (dt_is_bool(dt)) return uop0(OP_CONST, dt, v_bool(f != 0));
  return uop0(OP_CONST, dt, v_int((int64_t)f));
}
UOp *uop_sink(int n, UOp *const *srcs, const Value *arg) { return uop_new(OP_SINK, dt_void, n, srcs, arg, NULL); }
UOp *uop_unique(void) { return uop0(OP_UNIQUE, dt_void, v_int(uctx->next_unique++)); }

/* ---- toposort ----
 * tinygrad's UOp.toposort: a stack of (node, visited); a node is emitted the second time it is
 * popped, after its parents. The gate is asked each time an unvisited node is popped. */
typedef struct { UOp *u; bool visited; } TEnt;
/* The outermost walk marks emitted nodes with a fresh epoch in UOp.walk (no lookup table) and
 * reuses the context's stack; a walk started from inside a gate (nested) keeps its own seen map
 * and stack in scratch. Results go to a: scratch allocations are popped at the end unless a is
 * the scratch arena itself (then the caller's own arena_pop reclaims them). */
static UList toposort_impl(Arena *a, int nroots, UOp *const *roots, UGate gate, void *gctx) {
  UCtx *c = uctx;
  bool nested = c->walk_depth > 0, in_scratch = a == &c->scratch;
  ArenaMark mk = arena_mark(&c->scratch);
  Map seen;
  uint32_t epoch = 0;
  TEnt *st;
  size_t cap, n = 0;
  if (nested) {
    map_init(&seen, &c->scratch);
    cap = 256;
    st = arena_alloc_raw(&c->scratch, cap * sizeof *st);
  } else {
    if (++c->walk_epoch == 0) { /* wrapped: no node may carry a live epoch */
      tg_fail(TG_EINTERNAL, "more than 2^32 graph walks in one compilation");
    }
    epoch = c->walk_epoch;
    if (!c->walk_stack) {
      c->walk_cap = 16;
      c->walk_stack = malloc(c->walk_cap * sizeof(TEnt));
      if (!c->walk_stack) tg_fail(TG_EINTERNAL, "out of memory");
      memuse_add(&c->mem, c->walk_cap * sizeof(TEnt));
    }
    st = c->walk_stack, cap = c->walk_cap;
  }
  c->walk_depth++;
  PtrVec out;
  vec_init(&out, in_scratch ? a : &c->scratch);
  if ((size_t)nroots > cap) tg_fail(TG_EINTERNAL, "toposort of %d roots", nroots);
  for (int r = nroots - 1; r >= 0; r--) st[n++] = (TEnt){roots[r], false};
  while (n) {
    TEnt e = st[--n];
    if (nested ? map_has(&seen, e.u, uop_h(e.u)) : e.u->walk == epoch) continue;
    if (!e.visited) {
      if (!gate || gate(e.u, gctx)) {
        if (n + 1 + e.u->nsrc > cap) {
          size_t nc = cap;
          while (n + 1 + e.u->nsrc > nc) nc *= 2;
          TEnt *ns;
          if (nested) {
            ns = arena_alloc_raw(&c->scratch, nc * sizeof *st);
            memcpy(ns, st, n * sizeof *st);
          } else {
            ns = realloc(st, nc * sizeof *st);
            if (!ns) tg_fail(TG_EINTERNAL, "out of memory");
            memuse_add(&c->mem, (nc - cap) * sizeof *st);
            c->walk_stack = ns, c->walk_cap = nc;
          }
          st = ns, cap = nc;
        }
        st[n++] = (TEnt){e.u, true};
        /* a source emitted already would pop straight off again (outermost walks can tell cheaply) */
        for (int i = e.u->nsrc - 1; i >= 0; i--)
          if (nested || e.u->src[i]->walk != epoch) st[n++] = (TEnt){e.u->src[i], false};
      }
    } else {
      if (nested) map_put(&seen, e.u, uop_h(e.u), NULL);
      else e.u->walk = epoch;
      vec_push(&out, e.u);
    }
  }
  c->walk_depth--;
  if (in_scratch) return (UList){out.n, (UOp **)out.v};
  /* out grew by doubling in scratch; the result keeps exactly n pointers in a */
  UList res = {out.n, out.n ? arena_dup(a, out.v, sizeof(UOp *) * (size_t)out.n) : NULL};
  arena_pop(&c->scratch, mk);
  return res;
}
UList uop_toposort_many(int nroots, UOp *const *roots, UGate gate, void *gctx) { return toposort_impl(ga(), nroots, roots, gate, gctx); }
UList uop_toposort_in(Arena *a, UOp *root, UGate gate, void *gctx) { return toposort_impl(a, 1, &root, gate, gctx); }
void uop_walk(UOp *root, UGate gate, void *gctx) {
  ArenaMark mk = arena_mark(&uctx->scratch);
  toposort_impl(&uctx->scratch, 1, &root, gate, gctx);
  arena_pop(&uctx->scratch, mk);
}
UList uop_toposort(UOp *root, UGate gate, void *gctx) { return uop_toposort_many(1, &root, gate, gctx); }

typedef struct AnyCtx { UPred pred; const void *ctx; uint32_t floor; bool found; } AnyCtx;
static bool gate_any(UOp *u, void *ctx) {
  AnyCtx *a = ctx;
  if (a->found || u->id <= a->floor) return false;
  if (a->pred(u, a->ctx)) a->found = true;
  return !a->found;
}
bool uop_any_newer(UOp *root, uint32_t floor, UPred pred, const void *ctx) {
  AnyCtx a = {pred, ctx, floor, false};
  uop_walk(root, gate_any, &a);
  return a.found;
}
bool uop_any(UOp *root, UPred pred, const void *ctx) { return uop_any_newer(root, 0, pred, ctx); }
typedef struct OpPair { Op a, b; } OpPair;
static bool is_op_pair(const UOp *u, const void *ctx) { const OpPair *p = ctx; return u->op == p->a || u->op == p->b; }
bool uop_has_op(UOp *root, Op a, Op b) { OpPair p = {a, b}; return uop_any(root, is_op_pair, &p); }
static bool is_node(const UOp *u, const void *x) { return u == x; }
bool uop_in_graph(UOp *root, const UOp *x) { return uop_any_newer(root, x->id - 1, is_node, x); }

static bool gate_not_in_edges(UOp *u, void *ctx) { return !umap_has((const UMap *)ctx, u); }
bool uop_can_pad(int n, UOp *const *roots, const UMap *edges) {
  ArenaMark mk = arena_mark(&uctx->scratch);
  UList t = toposort_impl(&uctx->scratch, n, roots, edges ? gate_not_in_edges : NULL, (void *)edges);
  bool ok = true;
  for (int i = 0; i < t.n && ok; i++) if (op_in((Op)t.v[i]->op, G_UNSAFEPAD)) ok = false;
  arena_pop(&uctx->scratch, mk);
  return ok;
}
