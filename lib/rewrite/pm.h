/* rewrite: UPat, PatternMatcher and graph_rewrite, with tinygrad 0.11.0's semantics
 * (uop/ops.py: UPat.match, PatternMatcher.rewrite, RewriteContext.unified_rewrite,
 * graph_rewrite, graph_rewrite_map, _substitute).
 *
 * Rules are data: a table of {pattern, callback} rows, written like tinygrad's lists:
 *
 *   static const Rule kernelize_sym[] = {
 *     // DETACH and CONTIGUOUS_BACKWARD are NOOPs here
 *     { UP(.ops = OPS(OP_DETACH, OP_CONTIGUOUS_BACKWARD), .name = "x"), rw_x_src0 },
 *     // reduce on stride 0 is collapsed
 *     { UP(.ops = OPS(OP_REDUCE_AXIS), .name = "reduce", SRC(UP(.name = "x"))), simplify_stride0_reduce },
 *   };
 *   PM *pm = pm_new(kernelize_sym, RULES_N(kernelize_sym));
 *
 * Patterns are static const data (compound literals), compiled once by pm_new into per-op
 * buckets with early-reject sets. Callbacks get the bindings and the rewrite's ctx, and return
 * the replacement or NULL for "no match". */
#ifndef TGC_PM_H
#define TGC_PM_H
#include "../uop/uop.h"

typedef struct UPat UPat;
enum { PS_NONE, PS_TUPLE, PS_PERM, PS_REPEAT, PS_ANY };
struct UPat {
  const Op *ops;            /* zero-terminated op list, or NULL */
  unsigned groups;          /* G_* groups added to ops */
  const Op *except;         /* zero-terminated ops removed (GroupOp.All-{...}) */
  bool all_ops;             /* GroupOp.All */
  const int *dts;           /* dtype match: -1-terminated Scalar list (dtype or dtype.scalar() in set) */
  int dtclass;              /* 0, or DTC_* (dtypes.ints/floats/...) */
  int dtcount;              /* > 1: the dtypes above are their .vec(dtcount) (UPat dtype=dtypes.float.vec(4)) */
  int srcmode;              /* PS_*: NONE (any srcs), TUPLE (fixed), PERM (any permutation: tinygrad's list),
                               REPEAT (every src matches src[0]), ANY (UPat.any: alternatives in src) */
  int nsrc; const UPat *const *src;
  bool has_cval; double cval; /* arg == number (Python ==, so 0 matches 0, 0.0 and False) */
  bool has_argop; Op argop;   /* arg == Ops member */
  const char *name;         /* binding name */
  bool allow_any_len;
  bool (*pred)(UOp *u);     /* extra predicate on the node (for arg matches that are not numbers) */
  const Op *early_reject;   /* custom_early_reject, zero-terminated */
};
enum { DTC_NONE, DTC_INTS, DTC_FLOATS, DTC_BOOL, DTC_INT_OR_BOOL };

#define UP(...) (&(const UPat){__VA_ARGS__})
#define OPS(...) ((const Op[]){__VA_ARGS__, OP_INVALID})
#define DTS(...) ((const int[]){__VA_ARGS__, -1})
#define UPARR(...) ((const UPat *const[]){__VA_ARGS__})
#define NARGS_P(...) ((int)(sizeof(UPARR(__VA_ARGS__)) / sizeof(const UPat *)))
#define SRC(...) .srcmode = PS_TUPLE, .src = UPARR(__VA_ARGS__), .nsrc = NARGS_P(__VA_ARGS__)
#define SRC_PERM(...) .srcmode = PS_PERM, .src = UPARR(__VA_ARGS__), .nsrc = NARGS_P(__VA_ARGS__)
#define SRC_REPEAT(p) .srcmode = PS_REPEAT, .src = UPARR(p), .nsrc = 1
#define UP_ANY(...) UP(.srcmode = PS_ANY, .src = UPARR(__VA_ARGS__), .nsrc = NARGS_P(__VA_ARGS__))
/* UPat.var(name) and UPat.cvar(name) */
#define UVAR(n) UP(.name = (n))
#define UCVAR(n) UP(.ops = OPS(OP_CONST, OP_VCONST), .name = (n))

typedef struct Match {
  UOp *root;
  int n; const char *names[16]; UOp *vals[16];
} Match;
/* the binding of name; m_get fails (internal error) when unbound, m_opt gives NULL. Most callbacks
 * ask for the root's name, bound first, by the literal the pattern bound it with: that is tested
 * here, the rest in m_find (pm.c) */
UOp *m_find_get(const Match *m, const char *name, bool required);
static inline UOp *m_get(const Match *m, const char *name) {
  return m->n && m->names[0] == name ? m->vals[0] : m_find_get(m, name, true);
}
static inline UOp *m_opt(const Match *m, const char *name) {
  return m->n && m->names[0] == name ? m->vals[0] : m_find_get(m, name, false);
}

typedef UOp *(*RuleFn)(const Match *m, void *ctx);
typedef struct Rule { const UPat *pat; RuleFn fn; } Rule;
#define RULES_N(t) ((int)(sizeof(t) / sizeof((t)[0])))

typedef struct PM PM;
PM *pm_new(const Rule *rules, int n);           /* process-lifetime; build once */
PM *pm_concat(int n, PM *const *pms);           /* tinygrad's pm1+pm2+... (rules in order) */
UOp *pm_rewrite(const PM *pm, UOp *u, void *ctx); /* PatternMatcher.rewrite: first rule returning non-NULL, non-u */
bool upat_match(const UPat *p, UOp *u, Match *m); /* first binding of a pattern alone (tests, helpers) */

/* tinygrad's graph_rewrite fails past 200000 deque entries ("infinite loop"); a rewrite of a graph
 * of n nodes and e edges pushes at most 1 + 4n + 2e, so one with n + e under REWRITE_SAFE_SIZE
 * cannot reach the bound, and a shortcut that skips the rewrite fails exactly as it would. */
enum { REWRITE_SAFE_SIZE = 50000 };
/* size plus the nodes and edges of topo, counted until the sum reaches REWRITE_SAFE_SIZE */
static inline size_t rewrite_size_add(size_t size, UList topo) {
  for (int i = 0; i < topo.n && size < REWRITE_SAFE_SIZE; i++) size += 1 + (size_t)topo.v[i]->nsrc;
  return size;
}
/* The deque of the rewrite whose callback runs now: its entry count (0 outside a rewrite), and the
 * engine's bound on it (fails as the engine does for n >= 200000). A callback that takes several
 * of the engine's steps at once checks, for each, the count the engine would have reached. */
size_t pm_stack_count(void);
void pm_stack_check(size_t n);
/* graph_rewrite(sink, pm, ctx, bottom_up, bpm) */
UOp *graph_rewrite(UOp *sink, const PM *pm, void *ctx, bool bottom_up, const PM *bpm);
/* graph_rewrite(sink, pm) for a context-free pm, whose result for a node is a function of the node
 * alone: every node it rewrites (sink and all below it) keeps its result in UOp.cache[slot], and a
 * node found there is not rewritten again (UOp.simplify: each subexpression is simplified once) */
UOp *graph_rewrite_memo(UOp *sink, const PM *pm, int slot);
/* graph_rewrite_map(...): map from every node of sink's toposort to its rewrite; with input_map,
 * also every key k of input_map maps to new_map.get(input_map[k], input_map[k]). Metadata moves
 * to rewritten nodes as tinygrad's all_metadata does. */
UMap graph_rewrite_map(UOp *sink, const PM *pm, void *ctx, bool bottom_up, const PM *bpm, const UMap *input_map);
/* graph_rewrite_map's result as the scheduler chains it, in ids (uop_by_id): the value of key k
 * is val[k->id] (0 for none; every key is older than the rewrite, so cap = uctx->next_id then
 * bounds them) and kid holds the keys in the order of tinygrad's dict (sink's toposort, then
 * input_map's keys that are new). In ids, chaining a map through the next pass (every key of the
 * original graph, each pass) reads arrays half the size of pointer arrays, and no node */
typedef struct RMap { uint32_t *val; uint32_t cap; int n; uint32_t *kid; } RMap;
RMap graph_rewrite_rmap(Arena *out, UOp *sink, const PM *pm, void *ctx, bool bottom_up, const PM *bpm, const RMap *input_map);
/* the same, given the sink's toposort instead of the sink (for a caller that has walked its graph already;
 * the list is read, not kept). graph_rewrite_rmap's out is not the scratch arena (its toposort there is
 * popped under the map); this one's may be, above the caller's mark. */
RMap graph_rewrite_rmap_topo(Arena *out, UList topo, const PM *pm, void *ctx, bool bottom_up, const PM *bpm,
                             const RMap *input_map);
static inline UOp *rmap_get(const RMap *m, const UOp *k) { return k->id < m->cap ? uop_by_id(m->val[k->id]) : NULL; }
UMap rmap_to_umap(const RMap *m, Arena *a);     /* the same entries as an ordered UMap in a */
/* UOp.substitute(dvars): dvars maps UOp -> UOp (entries with k == v ignored) */
UOp *uop_substitute(UOp *root, const UMap *dvars);
/* RewriteNotReady: called from a callback, abandons this rewrite of the node; graph_rewrite puts
 * the node at the bottom of its stack and retries it later (nothing is cached) */
_Noreturn void pm_not_ready(void);
extern PM *pm_substitute;                        /* _substitute, ctx is a UMap* */
void pm_init(void);                              /* builds the shared matchers; idempotent */

#endif
