/* uop: the UOp core. Owns Ops and GroupOp sets (from ops.def), DTypes, argument values, the
 * ShapeTracker/View value types, Metadata, and the interned UOp itself.
 *
 * Every UOp, Value, View and ShapeTracker is hash-consed: the constructor is the only way to
 * make one, and equal (op, dtype, src, arg, tag) gives the same pointer, so equality is `==`.
 * Nodes carry a creation-order id (UOps count apart from values, so arrays indexed by a UOp's id
 * stay dense); hashing and ordering use ids, never addresses, so runs are
 * reproducible. All of it lives in the current compile context's arena (uop_ctx_new/free).
 * DTypes are process-global and immortal (a few dozen of them). */
#ifndef TGC_UOP_H
#define TGC_UOP_H
#include "../util/util.h"

/* ---- Ops ---- */
enum {
  G_UNARY = 1 << 0, G_BINARY = 1 << 1, G_TERNARY = 1 << 2, G_ELEMENTWISE = 1 << 3, G_DEFINES = 1 << 4,
  G_IRREDUCIBLE = 1 << 5, G_MOVEMENT = 1 << 6, G_BUFFER = 1 << 7, G_BLOCK = 1 << 8, G_COMMUTATIVE = 1 << 9,
  G_ASSOCIATIVE = 1 << 10, G_IDEMPOTENT = 1 << 11, G_UNSAFEPAD = 1 << 12, G_META = 1 << 13,
  G_ALU = 1 << 14, /* derived: Unary|Binary|Ternary */
};
typedef enum Op {
  OP_INVALID = 0,
#define OP(name, groups) OP_##name,
#include "ops.def"
#undef OP
  OP_COUNT
} Op;
extern const char *const op_names[OP_COUNT];
extern const unsigned op_groups[OP_COUNT]; /* G_* flags; G_ALU and G_ELEMENTWISE filled in for ALU ops */
static inline bool op_in(Op op, unsigned group) { return (op_groups[op] & group) != 0; }
Op op_from_name(const char *s); /* OP_INVALID when unknown */

/* An op set (UPat op lists, GroupOp unions), one bit per op. */
typedef struct OpSet { uint64_t w[2]; } OpSet;
static inline bool opset_has(OpSet s, Op op) { return (s.w[op >> 6] >> (op & 63)) & 1; }
static inline OpSet opset_add(OpSet s, Op op) { s.w[op >> 6] |= 1ull << (op & 63); return s; }
OpSet opset_of(int n, ...);           /* opset_of(2, OP_ADD, OP_MUL) */
OpSet opset_group(unsigned groups);   /* every op in any of the groups */
OpSet opset_all(void);
OpSet opset_minus(OpSet a, OpSet b);
OpSet opset_union(OpSet a, OpSet b);

/* ---- DTypes ---- */
typedef enum {
  SC_VOID, SC_BOOL, SC_CHAR, SC_UCHAR, SC_SHORT, SC_USHORT, SC_INT, SC_UINT, SC_LONG, SC_ULONG,
  SC_FP8E4M3, SC_FP8E5M2, SC_HALF, SC_BFLOAT16, SC_FLOAT, SC_DOUBLE, SC_COUNT
} Scalar;
typedef enum { DTK_SCALAR, DTK_PTR, DTK_IMAGE } DTypeKind;
typedef enum { AS_GLOBAL = 0, AS_LOCAL = 1, AS_REG = 2 } AddrSpace;
typedef struct DType DType;
struct DType {
  uint8_t kind;        /* DTypeKind */
  uint8_t scalar;      /* Scalar of the element (for ptr/image: of the pointee's scalar) */
  int priority, itemsize, count;
  const char *name;    /* tinygrad's DType.name: "float", "unsigned char", "__bf16", "imagef"... */
  const DType *scalar_of; /* _scalar: for vec, the scalar; for ptr.vec(n), the ptr; else NULL */
  const DType *base;   /* ptr/image: the pointee (_base); else self */
  uint8_t addrspace;   /* ptr */
  int v;               /* ptr vector width */
  int64_t size;        /* ptr size (-1 unlimited) */
  int nshape; int64_t shape[4]; /* image */
  uint32_t id;
};
extern const DType *dt_void, *dt_bool, *dt_char, *dt_uchar, *dt_short, *dt_ushort, *dt_int, *dt_uint,
  *dt_long, *dt_ulong, *dt_half, *dt_bfloat16, *dt_float, *dt_double, *dt_fp8e4m3, *dt_fp8e5m2;
void dtype_init(void);                         /* idempotent; called by uop_ctx_new */
const DType *dt_scalar(Scalar s);
const DType *dt_vec(const DType *d, int n);    /* d.vec(n); n==1 or void gives d */
const DType *dt_ptr(const DType *d, int64_t size, AddrSpace as);
const DType *dt_image(bool half, int n, const int64_t *shape);
const DType *dt_scalar_of(const DType *d);     /* DType.scalar() */
static inline const DType *dt_base(const DType *d) { return d->base; }
static inline int dt_vcount(const DType *d) { return d->kind == DTK_SCALAR ? d->count : d->v; }
bool dt_is_float(const DType *d);
bool dt_is_int(const DType *d);
bool dt_is_unsigned(const DType *d);
bool dt_is_bool(const DType *d);
static inline bool dt_is_ptr(const DType *d) { return d->kind != DTK_SCALAR; }
int64_t dt_imin(const DType *d);               /* dtypes.min for ints (and bool: 0) */
uint64_t dt_umax(const DType *d);              /* dtypes.max for ints, as unsigned */
double dt_fmin(const DType *d), dt_fmax(const DType *d); /* -inf/inf for floats */
const char *dt_short_name(Scalar s);           /* "float", "uchar", "bfloat16", ... (repr without dtypes.) */
char *dt_repr(Arena *a, const DType *d);       /* FORMATS.md dtype string: "float.ptr(16)" */
const DType *dt_parse(const char *s);          /* NULL when malformed */
bool dt_lt(const DType *a, const DType *b);    /* DType.__lt__ */

/* ---- values: args, tags and everything nested in them ---- */
typedef struct Value Value;
typedef struct UOp UOp;
typedef struct View View;
typedef struct ShapeTracker ShapeTracker;
typedef struct Kernel Kernel;
typedef struct Meta Meta;
typedef enum { V_NONE, V_BOOL, V_INT, V_FLOAT, V_STR, V_TUPLE, V_OPS, V_UOP, V_ST, V_KERNEL, V_DTYPE, V_ADDRSPACE } ValueKind;
struct Kernel { UOp *ast; int nmeta; const Meta *const *meta; };
struct Value {
  uint8_t kind; int n; uint64_t hash; uint32_t id;
  union {
    bool b; int64_t i; double f; const char *s; const Value *const *items; Op op; UOp *u;
    const ShapeTracker *st; Kernel k; const DType *dt; AddrSpace as;
  };
};
const Value *v_none(void);
const Value *v_bool(bool b);
const Value *v_int(int64_t i);
const Value *v_uint64(uint64_t u);            /* v_int below 2**63; above, a V_INT with n == 1 whose i holds the bits */
const Value *v_float(double f);
const Value *v_str(const char *s);
const Value *v_tuple(int n, const Value *const *items);
const Value *v_tuplev(int n, ...);             /* v_tuplev(2, v_int(1), v_int(2)) */
const Value *v_ints(int n, const int64_t *xs); /* tuple of ints */
const Value *v_ops(Op op);
const Value *v_uop(UOp *u);
const Value *v_st(const ShapeTracker *st);
const Value *v_kernel(UOp *ast, int nmeta, const Meta *const *meta);
const Value *v_dtype(const DType *d);
const Value *v_addrspace(AddrSpace as);
static inline bool v_is_none(const Value *v) { return !v || v->kind == V_NONE; }
int v_cmp(const Value *a, const Value *b);     /* Python-like ordering (ints/floats numeric, tuples lexicographic) */

/* ---- sint: an int or a symbolic UOp (tinygrad's sint) ---- */
typedef struct Sint { int64_t c; UOp *u; } Sint; /* u == NULL: the int c; else the UOp u */
static inline Sint si(int64_t c) { return (Sint){c, NULL}; }
static inline bool si_is_int(Sint s) { return s.u == NULL; }
bool si_eq(Sint a, Sint b);                    /* structural identity (same int or same UOp) */
uint64_t si_hash(Sint s);

/* ---- View and ShapeTracker (interned values; algorithms live in lib/shape) ---- */
struct View {
  int ndim;
  const Sint *shape, *strides;
  Sint offset;
  const Sint *mask;     /* NULL, or 2*ndim entries: (begin, end) per axis */
  bool contiguous;
  bool symbolic;        /* some number is a UOp (not part of identity: it follows from the numbers) */
  bool size_known;      /* lib/shape: size holds view_size(v) (a cache, not part of identity) */
  int64_t size;
  uint64_t hash; uint32_t id;
};
struct ShapeTracker { int nviews; const View *const *views; uint64_t hash; uint32_t id;
  UOp *ix_idx, *ix_valid; /* lib/shape: cached views_to_indexed_uops(views) (not part of identity) */ };
const View *view_intern(int ndim, const Sint *shape, const Sint *strides, Sint offset, const Sint *mask, bool contiguous);
const ShapeTracker *st_intern(int nviews, const View *const *views);

/* ---- Metadata ---- */
struct Meta { const char *name, *caller; bool backward; uint32_t id; };
const Meta *meta_intern(const char *name, const char *caller, bool backward);
typedef struct MetaList { int n; const Meta *const *m; } MetaList;

/* ---- the UOp ---- */
struct UOp {
  /* cold fields first, so the ones the rewrite engine and interning read of every node they meet
   * (op, id, dtype, nsrc, the rewrite entries) share the sources' cache line, and a toposort's
   * (walk, nsrc) sit right before the sources */
  const Value *arg, *tag;      /* never NULL: v_none() when absent */
  const Meta *const *meta;     /* tinygrad's all_metadata side table (not part of identity): NULL-terminated, NULL for none */
  /* lazily computed caches, owned by the stages that fill them */
  const ShapeTracker *st_cache; /* lib/shape: UOp.st (valid when st_state is 1) */
  const Value *dev_cache;      /* lib/shape: UOp._device; axis_cache: UOp.axis */
  void *cache[2];              /* cache[0]: lib/symbolic (_min_max), cache[1]: lib/symbolic (simplify) */
  int32_t axis_cache;
  uint8_t st_state, dev_state, axis_state; /* lib/shape: 0 unknown, 1 computed (st_cache, dev_cache, axis_cache) */
  uint8_t op;
  UOp *rw[2];                  /* lib/rewrite: that rewrite's replace entry and its matcher's cache entry */
  const DType *dtype;
  uint32_t id;                 /* creation order within the context */
  uint32_t rw_epoch;           /* lib/rewrite: the graph rewrite whose entries rw[] holds (0: none; see pm.c) */
  int32_t nsrc;                /* up to UOP_MAX_SRC (a KERNEL gathering a wide fan-out has many) */
  uint32_t walk;               /* lib/uop toposort: the epoch of the walk that last emitted this node */
  UOp *const src[];            /* nsrc sources, stored in the node itself */
};
_Static_assert(OP_COUNT <= 256, "UOp.op is a byte");
_Static_assert(sizeof(UOp) == 104, "uop_new stores each field of a new node: store the new one there too");
#define UOP_MAX_SRC (1 << 28)
UOp *uop_new(Op op, const DType *dt, int nsrc, UOp *const *src, const Value *arg, const Value *tag);
UOp *uop0(Op op, const DType *dt, const Value *arg);          /* no src */
UOp *uop1(Op op, const DType *dt, UOp *a, const Value *arg);
UOp *uop2(Op op, const DType *dt, UOp *a, UOp *b, const Value *arg);
UOp *uop3(Op op, const DType *dt, UOp *a, UOp *b, UOp *c, const Value *arg);
/* replace(): NULL keeps the field; nsrc < 0 keeps src */
UOp *uop_replace(UOp *u, const DType *dt, int nsrc, UOp *const *src, const Value *arg, const Value *tag);
UOp *uop_replace_op(UOp *u, Op op);
UOp *uop_with_tag(UOp *u, const Value *tag);
void uop_set_meta(UOp *u, MetaList m);      /* m.m[m.n] must be NULL: the node keeps the array */
static inline MetaList uop_meta(const UOp *u) { int n = 0; if (u->meta) while (u->meta[n]) n++; return (MetaList){n, u->meta}; }
static inline uint64_t uop_h(const UOp *u) { return u->id * 0x9E3779B97F4A7C15ull; }

/* toposort(gate): tinygrad's exact visiting order, iterative. gate may be NULL. */
typedef bool (*UGate)(UOp *u, void *ctx);
typedef struct UList { int n; UOp **v; } UList;
UList uop_toposort(UOp *root, UGate gate, void *gctx);
UList uop_toposort_many(int nroots, UOp *const *roots, UGate gate, void *gctx); /* as toposort of a SINK of roots, without it */
/* the list in arena a (e.g. uctx->scratch under the caller's arena_mark, for a list used and dropped) */
UList uop_toposort_in(Arena *a, UOp *root, UGate gate, void *gctx);
void uop_walk(UOp *root, UGate gate, void *gctx);             /* the toposort's gate calls only, no list */
/* whether root's graph (root included) holds a node pred accepts: a walk that stops descending once
 * pred has accepted one (every node of the toposort meets it first, so none is missed) */
typedef bool (*UPred)(const UOp *u, const void *ctx);
bool uop_any(UOp *root, UPred pred, const void *ctx);
/* uop_any among the nodes newer than floor (id > floor): a node's sources are older than it, so
 * the walk does not go below an older node (a search for something newer than a known node). Ids
 * start at 1, so floor 0 is every node (uop_any) and x->id - 1 is x and everything newer */
bool uop_any_newer(UOp *root, uint32_t floor, UPred pred, const void *ctx);
bool uop_has_op(UOp *root, Op a, Op b);                      /* root's graph holds an a or a b */
bool uop_in_graph(UOp *root, const UOp *x);                  /* x in root.toposort() */

/* UOp maps and sets (ordered, keyed by creation id) */
typedef Map UMap;
static inline void umap_init(UMap *m, Arena *a) { map_init(m, a); }
static inline UOp *umap_get(const UMap *m, const UOp *k) { return map_get(m, k, uop_h(k), NULL); }
static inline void *umap_getp(const UMap *m, const UOp *k) { return map_get(m, k, uop_h(k), NULL); } /* a map to non-UOp values */
static inline bool umap_has(const UMap *m, const UOp *k) { return map_has(m, k, uop_h(k)); }
static inline void umap_put(UMap *m, UOp *k, void *v) { map_put(m, k, uop_h(k), v); }
static inline bool umap_del(UMap *m, const UOp *k) { return map_del(m, k, uop_h(k)); }

/* tinygrad's can_pad (uop/ops.py) over the graphs of roots[0..n) at once: no UnsafePad op (one
 * with f(0) != 0) in them, not looking below the nodes in edges (NULL: none) */
bool uop_can_pad(int n, UOp *const *roots, const UMap *edges);

/* ---- the compile context: arenas, intern tables, counters, options ---- */
typedef struct Options {
  int fuse_arange, fuse_conv_bw, split_reduceop, dont_realize_expand, dont_group_reduces;
  int64_t reduceop_split_threshold, reduceop_split_size, max_kernel_buffers;
  int ring;
} Options;
void options_default(Options *o);
typedef struct UCtx {
  Arena arena;                 /* graph lifetime */
  Arena nodes;                 /* the UOps (graph lifetime, arena_alloc8): made one after another, they sit together */
  Arena scratch;               /* per-pass scratch (arena_mark/arena_pop) */
  MemUse mem;                  /* the bytes the context holds (its arenas, the pass arenas, its heap tables and walk stack) and their peak */
  ISet uops, values, views, sts, metas; /* intern tables (keyed by structural hash) */
  uint32_t next_id;            /* the next UOp's id (UOps alone: arrays indexed by UOp id stay dense) */
  UOp **byid; uint32_t byid_cap; /* every UOp by its id (byid[0] is NULL): maps can hold ids, not pointers */
  uint64_t nedges;             /* the sources of all the UOps made: with next_id, a bound on any graph's nodes + edges */
  uint32_t next_vid;           /* the next id of a Value, View, ShapeTracker or Metadata */
  int64_t next_unique;         /* UNIQUE counter for buffers the scheduler creates */
  Options opt;
  PairMap memo[12];            /* per-context caches of pure functions (heap tables), owned by stages: lib/shape's (View.__add__, ShapeTracker.__add__, from_shape, movement ops) */
  uint32_t walk_epoch; int walk_depth; /* toposort: the running walk's epoch, how many walks are open */
  void *walk_stack; size_t walk_cap;   /* toposort: the outermost walk's (node, visited) stack, reused */
  const Value *vsmall[132];    /* lib/uop: interned None, False, True and the ints -1..127, once looked up */
  uint32_t rw_epoch;           /* lib/rewrite: the last graph rewrite's epoch (UOp.rw_epoch) */
  int rw_depth; uint32_t rw_open[32]; /* lib/rewrite: the epochs of the rewrites now running, outermost first */
  const char *sched_warning;   /* lib/schedule: the first place where tgc gives a result tinygrad 0.11.0 does not give (NULL: none) */
  bool lowering;               /* lib/codegen: a kernel is being lowered (lib/symbolic's folds then say a cast of NaN or inf to an int is tgc's lane-folding bug) */
} UCtx;
extern _Thread_local UCtx *uctx;                /* the current context */
static inline UOp *uop_by_id(uint32_t id) { return uctx->byid[id]; } /* id < uctx->next_id; 0 gives NULL */
UCtx *uop_ctx_new(void);                        /* creates and makes current */
void value_sets_init(UCtx *c);                  /* lib/uop: the value, view, ShapeTracker and Metadata intern sets (uop_ctx_new) */
void uop_ctx_free(UCtx *c);
void uop_reserve(size_t more, size_t lim);      /* room for min(more, lim) more UOps (intern table, byid) without growing */
static inline Arena *ga(void) { return &uctx->arena; }

/* small constructors used everywhere */
UOp *uop_const(const DType *dt, const Value *v);           /* bare CONST */
UOp *uop_const_int(const DType *dt, int64_t i);
UOp *uop_const_float(const DType *dt, double f);
UOp *uop_sink(int n, UOp *const *srcs, const Value *arg);
UOp *uop_unique(void);                                      /* UNIQUE with a fresh counter */
const char *uop_repr(Arena *a, UOp *root);                  /* tinygrad's UOp.__repr__ (pretty_print) */
const char *value_repr(Arena *a, const Value *v);           /* Python repr of an arg */
const char *value_str(Arena *a, const Value *v);            /* Python str of an arg (tagstr, REDUCE_AXIS argstr) */
int float_repr(char *buf, size_t n, double f);             /* Python repr(float) (shortest round trip); returns length */

#endif
