/* pm.c: UPat matching, PatternMatcher and the graph rewrite engine (tinygrad 0.11.0 uop/ops.py).
 *
 * pm_new compiles every rule's UPat tree once into a CPat tree (op set, dtype bit set, the
 * permutation table of a list src in itertools.permutations order, the early-reject op set) and
 * files the rules into per-op buckets in rule order, like PatternMatcher.pdict.
 *
 * Matching enumerates binding sets depth first, in exactly the order tinygrad's UPat.match list
 * comes out (src position 0 varies slowest, permutations slowest of all, UPat.any alternatives
 * in order; upat.py's compiled matcher produces the same order). Pending src goals form a
 * continuation chain on the C stack (Cont); each complete binding set is handed to the rule's
 * callback and a non-NULL result stops the search, as in `for match in p.match(uop, {})`.
 * Bindings live in the caller's fixed Match struct and are undone on backtrack, so a match
 * attempt allocates nothing. Subpatterns with a single way to match and no names below
 * ("simple") are tested by a plain boolean walk without continuations.
 *
 * unified_rewrite is ported step by step: a deque of (node, stage, new node) entries, the bpm
 * fixed point with its loop check, the pm/bpm caches, RewriteNotReady as a push to the bottom
 * of the deque, and the 200000-entry limit. Its tables live on the nodes (UOp.rw, below), and
 * one setjmp per rewrite (not per callback) catches RewriteNotReady. */
#include "pm.h"
#include <math.h>
#include <setjmp.h>
#include <stddef.h>
#include <string.h>

/* ---- compiled patterns ---- */
typedef struct CPat CPat;
struct CPat {
  OpSet ops; bool has_ops;
  uint32_t dtmask; bool has_dt;    /* bit per Scalar: dtype (or dtype.scalar()) is that scalar dtype */
  int dtcount;                     /* > 1: the set holds the .vec(dtcount) of those scalars instead */
  int srcmode, nsrc;
  const CPat **src;
  int nperm; const uint8_t *perm; /* PS_PERM: nperm rows of nsrc src indices */
  bool strict; int required_len;
  bool has_num; double num;        /* arg == number (cval, or an Ops member: Ops is an IntEnum) */
  const char *name;
  bool (*pred)(UOp *u);
  bool simple;                     /* one way to match at most and no names below this node */
  OpSet early_reject;
};

static Arena pm_arena; /* process lifetime: compiled matchers */

static int opset_count(OpSet s) { return __builtin_popcountll(s.w[0]) + __builtin_popcountll(s.w[1]); }
static Op opset_first(OpSet s) {
  for (int i = 1; i < OP_COUNT; i++) if (opset_has(s, (Op)i)) return (Op)i;
  return OP_INVALID;
}
static bool opset_subset(OpSet a, OpSet b) { return !(a.w[0] & ~b.w[0]) && !(a.w[1] & ~b.w[1]); }

static OpSet upat_opset(const UPat *p, bool *has) {
  OpSet s = {{0, 0}};
  *has = p->ops || p->groups || p->all_ops;
  if (p->all_ops) s = opset_all();
  if (p->groups) s = opset_union(s, opset_group(p->groups));
  if (p->ops) for (const Op *o = p->ops; *o; o++) s = opset_add(s, *o);
  if (p->except) for (const Op *o = p->except; *o; o++) s.w[*o >> 6] &= ~(1ull << (*o & 63));
  return s;
}

static uint32_t dtclass_mask(int c) {
  uint32_t ints = 0, floats = 0;
  for (int s = SC_CHAR; s <= SC_ULONG; s++) ints |= 1u << s;
  floats = 1u << SC_FP8E4M3 | 1u << SC_FP8E5M2 | 1u << SC_HALF | 1u << SC_BFLOAT16 | 1u << SC_FLOAT | 1u << SC_DOUBLE;
  switch (c) {
  case DTC_INTS: return ints;
  case DTC_FLOATS: return floats;
  case DTC_BOOL: return 1u << SC_BOOL;
  case DTC_INT_OR_BOOL: return ints | 1u << SC_BOOL;
  default: return 0;
  }
}

/* structural equality of two UPats (helpers.all_same on a list src; UPat.var is cached in tinygrad) */
static bool upat_same(const UPat *a, const UPat *b) {
  if (a == b) return true;
  if (!a || !b) return false;
  bool h1, h2;
  OpSet s1 = upat_opset(a, &h1), s2 = upat_opset(b, &h2);
  if (h1 != h2 || memcmp(&s1, &s2, sizeof s1) || a->srcmode != b->srcmode || a->nsrc != b->nsrc ||
      a->dtclass != b->dtclass || a->dtcount != b->dtcount || a->has_cval != b->has_cval || (a->has_cval && a->cval != b->cval) ||
      a->has_argop != b->has_argop || (a->has_argop && a->argop != b->argop) || a->allow_any_len != b->allow_any_len ||
      a->pred != b->pred || a->early_reject != b->early_reject)
    return false;
  if ((a->name == NULL) != (b->name == NULL) || (a->name && strcmp(a->name, b->name))) return false;
  if ((a->dts == NULL) != (b->dts == NULL)) return false;
  if (a->dts) {
    int i = 0;
    for (; a->dts[i] >= 0 && b->dts[i] >= 0; i++) if (a->dts[i] != b->dts[i]) return false;
    if (a->dts[i] != b->dts[i]) return false;
  }
  for (int i = 0; i < a->nsrc; i++) if (!upat_same(a->src[i], b->src[i])) return false;
  return true;
}

/* the permutations of 0..n-1 in itertools.permutations order (lexicographic) */
static int perm_fill(uint8_t *out, int n) {
  uint8_t cur[8];
  for (int i = 0; i < n; i++) cur[i] = (uint8_t)i;
  int rows = 0;
  for (;;) {
    memcpy(out + rows * n, cur, (size_t)n);
    rows++;
    int i = n - 2;
    while (i >= 0 && cur[i] >= cur[i + 1]) i--;
    if (i < 0) return rows;
    int j = n - 1;
    while (cur[j] <= cur[i]) j--;
    uint8_t t = cur[i]; cur[i] = cur[j]; cur[j] = t;
    for (int a = i + 1, b = n - 1; a < b; a++, b--) { t = cur[a]; cur[a] = cur[b]; cur[b] = t; }
  }
}

/* the canonical pointer of a pattern name, so that bind compares names by pointer: the first
 * pointer seen by pm_new (rule tables name patterns with literals, which the callbacks' m_get
 * literals usually share), else a process-lifetime copy (upat_match's UPats may be transient) */
static const char *name_intern(const char *name, bool keep) {
  static const char **names; static int n, cap;
  if (!name) return NULL;
  for (int i = 0; i < n; i++) if (names[i] == name) return names[i];
  for (int i = 0; i < n; i++) if (strcmp(names[i], name) == 0) return names[i];
  if (n == cap) {
    cap = cap ? cap * 2 : 64;
    const char **g = arena_alloc(&pm_arena, sizeof(char *) * (size_t)cap);
    if (n) memcpy(g, names, sizeof(char *) * (size_t)n);
    names = g;
  }
  return names[n++] = keep ? name : arena_strdup(&pm_arena, name);
}

static const CPat *cpat_compile(Arena *A, const UPat *p, bool keep) {
  CPat *c = arena_alloc(A, sizeof *c);
  c->srcmode = p->srcmode;
  c->nsrc = p->nsrc;
  if (p->srcmode != PS_NONE && p->nsrc < 0) tg_fail(TG_EINTERNAL, "UPat with a negative src count");
  if (p->nsrc) {
    c->src = arena_alloc(A, sizeof(CPat *) * (size_t)p->nsrc);
    for (int i = 0; i < p->nsrc; i++) c->src[i] = cpat_compile(A, p->src[i], keep);
  }
  if (p->srcmode == PS_ANY) {  /* UPatAny.match looks at nothing but its alternatives */
    c->simple = false;
    return c;
  }
  c->ops = upat_opset(p, &c->has_ops);
  if (p->dts) { c->has_dt = true; for (const int *d = p->dts; *d >= 0; d++) c->dtmask |= 1u << *d; }
  if (p->dtclass) { c->has_dt = true; c->dtmask |= dtclass_mask(p->dtclass); }
  c->dtcount = p->dtcount > 1 ? p->dtcount : 1;
  if (p->has_cval) { c->has_num = true; c->num = p->cval; }
  if (p->has_argop) { c->has_num = true; c->num = (double)p->argop; }
  c->name = name_intern(p->name, keep);
  c->pred = p->pred;
  /* strict_length / required_len as UPat.__init__ (a repeat src or no src: any length) */
  bool tuple_like = p->srcmode == PS_TUPLE || p->srcmode == PS_PERM;
  c->strict = tuple_like && !p->allow_any_len;
  c->required_len = tuple_like ? p->nsrc : 0;
  if (p->srcmode == PS_PERM) {
    bool same = true;
    for (int i = 1; i < p->nsrc; i++) if (!upat_same(p->src[i], p->src[0])) same = false;
    if (same || p->nsrc <= 1) {
      c->nperm = 1;
      uint8_t *pm = arena_alloc(A, (size_t)(p->nsrc ? p->nsrc : 1));
      for (int i = 0; i < p->nsrc; i++) pm[i] = (uint8_t)i;
      c->perm = pm;
    } else {
      if (p->nsrc > 7) tg_fail(TG_EINTERNAL, "UPat list src of %d entries is too many permutations", p->nsrc);
      int rows = 1;
      for (int i = 2; i <= p->nsrc; i++) rows *= i;
      uint8_t *pm = arena_alloc(A, (size_t)(rows * p->nsrc));
      c->nperm = perm_fill(pm, p->nsrc);
      c->perm = pm;
    }
  }
  /* early_reject: the single ops of the srcs in their given order (custom_early_reject wins) */
  if (p->early_reject) {
    for (const Op *o = p->early_reject; *o; o++) c->early_reject = opset_add(c->early_reject, *o);
  } else {
    for (int i = 0; i < c->nsrc; i++) {
      const CPat *s = c->src[i];
      if (s->srcmode != PS_ANY && s->has_ops && opset_count(s->ops) == 1) c->early_reject = opset_add(c->early_reject, opset_first(s->ops));
    }
  }
  c->simple = c->nperm <= 1;
  for (int i = 0; i < c->nsrc; i++) if (!c->src[i]->simple || c->src[i]->name) c->simple = false;
  return c;
}

/* ---- node-local checks ---- */
/* Python `num == arg` for a numeric arg (bool, int, float, and Ops, an IntEnum); false otherwise */
static bool arg_num_eq(const Value *v, double num) {
  switch (v->kind) {
  case V_BOOL: return num == (v->b ? 1.0 : 0.0);
  case V_OPS: return num == (double)v->op;
  case V_FLOAT: return v->f == num;
  case V_INT:
    if (!isfinite(num) || num != floor(num) || num < -9223372036854775808.0 || num >= 9223372036854775808.0) return false;
    return (int64_t)num == v->i;
  default: return false;
  }
}
/* d is one of the (vec(count) of the) scalar dtypes in mask */
static bool dt_in(uint32_t mask, int count, const DType *d) { return d->kind == DTK_SCALAR && d->count == count && ((mask >> d->scalar) & 1); }
/* the node checks of a rule's root that its bucket and pm_rewrite's length check leave: dtype,
 * arg and predicate */
static inline bool root_ok(const CPat *p, UOp *u) {
  if (p->has_dt && !dt_in(p->dtmask, p->dtcount, u->dtype) && !dt_in(p->dtmask, p->dtcount, dt_scalar_of(u->dtype))) return false;
  if (p->has_num && !arg_num_eq(u->arg, p->num)) return false;
  if (p->pred && !p->pred(u)) return false;
  return true;
}
static inline __attribute__((always_inline)) bool local_ok(const CPat *p, UOp *u) {
  if (p->has_ops && !opset_has(p->ops, (Op)u->op)) return false;
  if (u->nsrc < p->required_len || (p->strict && u->nsrc != p->required_len)) return false;
  return root_ok(p, u);
}
/* a simple pattern (one way to match, no names below), ignoring its own name */
static bool simple_srcs_ok(const CPat *p, UOp *u);
static bool simple_ok(const CPat *p, UOp *u) { return local_ok(p, u) && (!p->nsrc || simple_srcs_ok(p, u)); }
/* the sources of a simple pattern */
static bool simple_srcs_ok(const CPat *p, UOp *u) {
  switch (p->srcmode) {
  case PS_TUPLE: for (int i = 0; i < p->nsrc; i++) if (!simple_ok(p->src[i], u->src[i])) return false; return true;
  case PS_PERM: for (int i = 0; i < p->nsrc; i++) if (!simple_ok(p->src[p->perm[i]], u->src[i])) return false; return true;
  case PS_REPEAT: for (int i = 0; i < u->nsrc; i++) if (!simple_ok(p->src[0], u->src[i])) return false; return true;
  default: return true;
  }
}

/* ---- bindings ---- */
static UOp *m_find(const Match *m, const char *name) {
  /* names are unique in a Match (bind): the same literal is almost always the same pointer */
  for (int i = 0; i < m->n; i++) if (m->names[i] == name) return m->vals[i];
  for (int i = 0; i < m->n; i++) if (strcmp(m->names[i], name) == 0) return m->vals[i];
  return NULL;
}
UOp *m_find_get(const Match *m, const char *name, bool required) {
  UOp *u = m_find(m, name);
  if (!u && required) tg_fail(TG_EINTERNAL, "pattern callback asked for unbound name '%s'", name);
  return u;
}

/* store.setdefault(name, u) is u: binds when new (returns true), checks identity otherwise;
 * name is interned (name_intern) like every name bind stores, so pointers compare */
static bool bind(Match *m, const char *name, UOp *u) {
  for (int i = 0; i < m->n; i++) if (m->names[i] == name) return m->vals[i] == u;
  if (m->n >= 16) tg_fail(TG_EINTERNAL, "pattern binds more than 16 names");
  m->names[m->n] = name; m->vals[m->n] = u; m->n++;
  return true;
}

/* ---- the search ---- */
typedef struct Env { RuleFn fn; void *ctx; } Env;
typedef struct Cont {
  const CPat *const *pats; const uint8_t *perm; const CPat *rep; /* pats[perm[i]], or rep for every src */
  UOp *u; int i, n;
  const struct Cont *next;
} Cont;
static UOp match_done_marker;
static UOp *mgoal(const CPat *p, UOp *u, const Cont *k, Match *m, const Env *e);

/* run the pending goals of k in order; at the end, hand the bindings to the callback */
static UOp *mcont(const Cont *k, Match *m, const Env *e) {
  int saved = m->n;
  Cont c;
  while (k) {
    if (k->i == k->n) { k = k->next; continue; }
    const CPat *p = k->rep ? k->rep : k->pats[k->perm ? k->perm[k->i] : k->i];
    UOp *s = k->u->src[k->i];
    c = *k; c.i++;
    if (p->simple) {
      if (!simple_ok(p, s) || (p->name && !bind(m, p->name, s))) { m->n = saved; return NULL; }
      k = &c;
      continue;
    }
    UOp *r = mgoal(p, s, &c, m, e);
    if (!r) m->n = saved;
    return r;
  }
  if (!e->fn) return &match_done_marker;
  UOp *r = e->fn(m, e->ctx);
  if (!r) m->n = saved;
  return r;
}

/* match p on u, then continue with k; returns the first non-NULL callback result */
static UOp *mgoal(const CPat *p, UOp *u, const Cont *k, Match *m, const Env *e) {
  if (p->srcmode == PS_ANY) {
    for (int i = 0; i < p->nsrc; i++) {
      UOp *r = mgoal(p->src[i], u, k, m, e);
      if (r) return r;
    }
    return NULL;
  }
  int saved = m->n;
  if (p->simple) {
    if (!simple_ok(p, u) || (p->name && !bind(m, p->name, u))) { m->n = saved; return NULL; }
    UOp *r = mcont(k, m, e);
    if (!r) m->n = saved;
    return r;
  }
  if (!local_ok(p, u)) return NULL;
  if (p->name && !bind(m, p->name, u)) return NULL;
  UOp *r = NULL;
  Cont c = {p->src, NULL, NULL, u, 0, p->nsrc, k};
  switch (p->srcmode) {
  case PS_TUPLE: r = mcont(&c, m, e); break;
  case PS_PERM:
    for (int j = 0; j < p->nperm && !r; j++) { c.perm = p->perm + j * p->nsrc; r = mcont(&c, m, e); }
    break;
  case PS_REPEAT: c.rep = p->src[0]; c.n = u->nsrc; r = mcont(&c, m, e); break;
  default: r = mcont(k, m, e); break;
  }
  if (!r) m->n = saved;
  return r;
}

bool upat_match(const UPat *p, UOp *u, Match *m) {
  ArenaMark mk = arena_mark(&uctx->scratch);
  const CPat *c = cpat_compile(&uctx->scratch, p, false);
  m->root = u; m->n = 0;
  Env e = {NULL, NULL};
  bool ok = mgoal(c, u, NULL, m, &e) != NULL;
  arena_pop(&uctx->scratch, mk);
  return ok;
}

/* ---- PatternMatcher ---- */
/* a rule of a matcher, with what its root pattern needs of the sources' ops, checked before the
 * search: pos[i] for source i (a tuple or single-order pattern; all ops where the source pattern
 * takes any), or pos[0] for every source (a repeated source pattern) */
typedef struct PEnt {
  const CPat *p; RuleFn fn; const OpSet *pos; int npos; bool rep; bool flat; bool er;
  bool simple, strict, srcs; int req;  /* p's simple, strict, nsrc != 0 and required_len, at hand */
} PEnt;
/* a flat pattern: sources that are simple patterns, named or not, in one order or in each of a
 * list's permutations (most two-level rules: x*0, x&x, ...), so the search is a loop over the
 * orders and the sources with no continuations */
static bool cpat_flat(const CPat *p) {
  if (p->simple || !(p->srcmode == PS_TUPLE || p->srcmode == PS_REPEAT || p->srcmode == PS_PERM)) return false;
  for (int i = 0; i < p->nsrc; i++) if (!p->src[i]->simple) return false;
  return true;
}
struct PM {
  int nrules; Rule *rules;
  int start[OP_COUNT + 1]; /* bucket of op o: ents[start[o] .. start[o+1]) */
  PEnt *ents;
};

PM *pm_new(const Rule *rules, int n) {
  PM *pm = arena_alloc(&pm_arena, sizeof *pm);
  pm->nrules = n;
  pm->rules = arena_dup(&pm_arena, rules, sizeof(Rule) * (size_t)(n ? n : 1));
  const CPat **cp = arena_alloc(&pm_arena, sizeof(CPat *) * (size_t)(n ? n : 1));
  int count[OP_COUNT] = {0}, total = 0;
  for (int r = 0; r < n; r++) {
    cp[r] = cpat_compile(&pm_arena, rules[r].pat, true);
    if (cp[r]->srcmode == PS_ANY || !cp[r]->has_ops) tg_fail(TG_EINTERNAL, "rule %d: a PatternMatcher rule needs an op", r);
    for (int o = 1; o < OP_COUNT; o++) if (opset_has(cp[r]->ops, (Op)o)) { count[o]++; total++; }
  }
  pm->ents = arena_alloc(&pm_arena, sizeof(PEnt) * (size_t)(total ? total : 1));
  int fill[OP_COUNT];
  pm->start[0] = 0;
  for (int o = 0; o < OP_COUNT; o++) { pm->start[o + 1] = pm->start[o] + (o ? count[o] : 0); fill[o] = pm->start[o]; }
  for (int r = 0; r < n; r++) {
    const CPat *p = cp[r];
    PEnt e = {p, rules[r].fn, NULL, 0, false, cpat_flat(p), (p->early_reject.w[0] | p->early_reject.w[1]) != 0,
              p->simple, p->strict, p->nsrc != 0, p->required_len};
    bool tuple = p->srcmode == PS_TUPLE || (p->srcmode == PS_PERM && p->nperm == 1);
    if ((tuple || p->srcmode == PS_REPEAT) && p->nsrc) {
      OpSet *pos = arena_alloc(&pm_arena, sizeof(OpSet) * (size_t)p->nsrc);
      bool any = false;
      for (int i = 0; i < p->nsrc; i++) {
        const CPat *c = p->src[tuple && p->perm ? p->perm[i] : i];
        bool check = c->srcmode != PS_ANY && c->has_ops;
        pos[i] = check ? c->ops : (OpSet){{~0ull, ~0ull}};
        any |= check;
      }
      if (any) e.pos = pos, e.npos = tuple ? p->nsrc : 1, e.rep = !tuple;
      /* a tuple's early_reject set (its sources' single ops, unless the rule names its own) is
       * implied by pos: u has every source the tuple has, and source i's op is in pos[i] */
      if (any && tuple && !rules[r].pat->early_reject) e.er = false;
    }
    for (int o = 1; o < OP_COUNT; o++)
      if (opset_has(cp[r]->ops, (Op)o)) pm->ents[fill[o]++] = e;
  }
  return pm;
}

PM *pm_concat(int n, PM *const *pms) {
  int total = 0;
  for (int i = 0; i < n; i++) total += pms[i]->nrules;
  Rule *all = arena_alloc(&pm_arena, sizeof(Rule) * (size_t)(total ? total : 1));
  int k = 0;
  for (int i = 0; i < n; i++) for (int r = 0; r < pms[i]->nrules; r++) all[k++] = pms[i]->rules[r];
  return pm_new(all, total);
}

UOp *pm_rewrite(const PM *pm, UOp *u, void *ctx) {
  int b = pm->start[u->op], end = pm->start[u->op + 1];
  if (b == end) return NULL;
  /* the ops of the sources, for the rules' early_reject sets (computed on first use) */
  bool have_ler = false;
  OpSet ler = {{0, 0}};
  Match m;
  for (int i = b; i < end; i++) {
    const PEnt *pe = &pm->ents[i];
    if (pe->er) {
      if (!have_ler) {
        uint64_t w0 = 0, w1 = 0;
        for (int j = 0; j < u->nsrc; j++) {
          unsigned o = u->src[j]->op;
          uint64_t bit = 1ull << (o & 63);
          if (o < 64) w0 |= bit; else w1 |= bit;
        }
        ler = (OpSet){{w0, w1}};
        have_ler = true;
      }
      if (!opset_subset(pe->p->early_reject, ler)) continue;
    }
    const CPat *p = pe->p;
    /* what the root needs of u itself and of its sources' ops, before the search */
    if (u->nsrc < pe->req || (pe->strict && u->nsrc != pe->req)) continue;
    if (pe->pos) {
      bool ok = true;
      if (pe->rep) for (int j = 0; j < u->nsrc && ok; j++) ok = opset_has(pe->pos[0], (Op)u->src[j]->op);
      else for (int j = 0; j < pe->npos && ok; j++) ok = opset_has(pe->pos[j], (Op)u->src[j]->op);
      if (!ok) continue;
    }
    m.root = u; m.n = 0;
    UOp *r;
    if (pe->simple) { /* nothing to search: the root's checks, its name, the callback (mgoal's steps) */
      if (!root_ok(p, u) || (pe->srcs && !simple_srcs_ok(p, u))) continue;
      if (p->name) m.names[0] = p->name, m.vals[0] = u, m.n = 1;
      r = pe->fn(&m, ctx);
    } else if (pe->flat) {
      /* mgoal's steps for a flat pattern: the root, then for each order of the sources (one, or
       * each permutation in turn) each source in that order, and the callback for a complete
       * binding; the first non-NULL result ends the search, as it ends mgoal's */
      if (!root_ok(p, u)) continue;
      int base = 0;
      if (p->name) m.names[0] = p->name, m.vals[0] = u, base = 1;
      bool rep = p->srcmode == PS_REPEAT;
      int ns = rep ? u->nsrc : p->nsrc, nperm = p->srcmode == PS_PERM ? p->nperm : 1;
      r = NULL;
      for (int k = 0; k < nperm && !r; k++) {
        const uint8_t *perm = p->perm ? p->perm + k * p->nsrc : NULL;
        bool ok = true;
        m.n = base;
        for (int j = 0; j < ns && ok; j++) {
          const CPat *q = rep ? p->src[0] : p->src[perm ? perm[j] : j];
          ok = simple_ok(q, u->src[j]) && (!q->name || bind(&m, q->name, u->src[j]));
        }
        if (ok) r = pe->fn(&m, ctx);
      }
    } else {
      Env e = {pe->fn, ctx};
      r = mgoal(p, u, NULL, &m, &e);
    }
    if (r && r != u) return r;
  }
  return NULL;
}

/* ---- RewriteContext ----
 * A rewrite's three tables (replace, pm_cache, bpm_cache) live on the nodes themselves: UOp.rw[]
 * holds one rewrite's entries, the one whose epoch is UOp.rw_epoch, so a lookup is a field read
 * instead of a hash probe. Rewrites nest (callbacks run graph_rewrite), so a rewrite only takes
 * over a node whose entries belong to no rewrite still running (uctx->rw_open); a node held by an
 * enclosing rewrite keeps its entries there and this rewrite uses its own maps (fb) for it.
 * A node has two slots: the replace entry and one matcher's cache. A rewrite runs pm or bpm (a
 * bottom-up one bpm alone); one that runs both keeps bpm's cache in its own map (bside). */
enum { RW_REPLACE, RW_PM, RW_BPM };
typedef struct REnt { UOp *n, *nn; int stage; } REnt;
typedef struct RCtx {
  const PM *pm, *bpm; void *ctx;
  const UMap *subst;              /* bpm is pm_substitute: its map (ctx), read directly */
  uint32_t epoch;                 /* 0: takes no node over (too deeply nested), everything in fb */
  int depth;                      /* uctx->rw_depth when this rewrite started */
  int memo;                       /* >= 0: UOp.cache[memo] holds each node's result (graph_rewrite_memo) */
  int nfb; UMap fb[3];            /* entries of nodes an enclosing rewrite holds */
  bool both; UMap bside;          /* pm and bpm both: bpm's cache entries */
  uint32_t held_e; bool held;     /* the last epoch rw_held asked about, and its answer */
  REnt cur;                       /* the entry whose callbacks run now (RewriteNotReady puts it back) */
  REnt *q; size_t cap, lo, hi;    /* the deque: q[lo] is its front (the bottom), q[hi - 1] its top */
  UOp **tmp; int tmpcap;
  REnt q0[64];                    /* the deque's first buffer: most rewrites are small */
} RCtx;
static UOp cache_none; /* cached "no rewrite" */

/* is epoch e a rewrite that is still running (one that encloses r)? A later epoch than r's was a
 * rewrite nested in r, finished by now. Epochs left open by an error are taken as running: that
 * only sends their nodes to fb. */
__attribute__((noinline)) static bool rw_running(const RCtx *r, uint32_t e) {
  if (e == 0 || e > r->epoch) return false;
  for (int i = 0; i < r->depth; i++) if (uctx->rw_open[i] == e) return true;
  return false;
}
/* rw_running, remembered for the last epoch asked about: the nodes a rewrite meets in a row were
 * mostly left by the same one. An epoch's answer cannot change while r runs (the rewrites that
 * enclose r outlive it; one that r's callbacks start gets a later epoch, and ends before r asks). */
static inline bool rw_held(RCtx *r, uint32_t e) {
  if (e != r->held_e) r->held_e = e, r->held = rw_running(r, e);
  return r->held;
}
static inline UOp *rs_get(RCtx *r, UOp *u, int k) {
  if (k == RW_BPM && r->both) return umap_get(&r->bside, u);
  if (u->rw_epoch == r->epoch && r->epoch) return u->rw[k != RW_REPLACE];
  /* only a node an enclosing rewrite holds (its epoch stays while this one runs) has entries in fb */
  return r->nfb && (!r->epoch || rw_held(r, u->rw_epoch)) ? umap_get(&r->fb[k], u) : NULL;
}
static inline void rs_put(RCtx *r, UOp *u, int k, UOp *v) {
  if (k == RW_BPM && r->both) { umap_put(&r->bside, u, v); return; }
  if (u->rw_epoch != r->epoch || !r->epoch) {
    if (!r->epoch || rw_held(r, u->rw_epoch)) {
      umap_put(&r->fb[k], u, v);
      r->nfb++;
      return;
    }
    u->rw_epoch = r->epoch; /* take the node over: the entries there belong to a finished rewrite */
    u->rw[0] = u->rw[1] = NULL;
  }
  u->rw[k != RW_REPLACE] = v;
}

/* a node's result; graph_rewrite_memo also keeps it on the node */
static void rs_replace(RCtx *r, UOp *n, UOp *x) {
  rs_put(r, n, RW_REPLACE, x);
  if (r->memo >= 0) n->cache[r->memo] = x;
}
/* tinygrad's bound on the deque: a stack of n entries is a loop */
static void rq_check(size_t n) { if (n >= 200000) tg_fail(TG_EINPUT, "infinite loop in graph_rewrite (stack too big)"); }

static inline size_t rq_count(const RCtx *r) { return r->hi - r->lo; }
/* a deque with no room at the end asked for (front: at the front): twice the room. A push at the
 * back keeps the room in front as it was; one at the front centres the entries, so that either
 * end grows in amortised constant time */
__attribute__((noinline, cold)) static void rq_grow(RCtx *r, bool front) {
  size_t n = rq_count(r), nc = r->cap * 2, lo = front ? (nc - n) / 2 : r->lo;
  REnt *nq = arena_alloc_raw(&uctx->scratch, sizeof(REnt) * nc);
  memcpy(nq + lo, r->q + r->lo, sizeof(REnt) * n);
  r->q = nq; r->cap = nc; r->lo = lo; r->hi = lo + n;
}
static inline __attribute__((always_inline)) void rq_push(RCtx *r, UOp *n, int stage, UOp *nn) {
  if (r->hi == r->cap) rq_grow(r, false);
  r->q[r->hi++] = (REnt){n, nn, stage};
}
/* tinygrad's appendleft; the deque's length is checked as the next pop would */
static void rq_push_front(RCtx *r, UOp *n, int stage, UOp *nn) {
  if (r->lo == 0) rq_grow(r, true);
  r->q[--r->lo] = (REnt){n, nn, stage};
  rq_check(rq_count(r));
}

static UOp *cached_rewrite(RCtx *r, int k, const PM *pm, UOp *x) {
  if (pm->start[x->op] == pm->start[x->op + 1]) return NULL; /* no rule for this op: nothing to cache */
  UOp *v = rs_get(r, x, k);
  if (v) return v == &cache_none ? NULL : v;
  UOp *ret = pm_rewrite(pm, x, r->ctx);
  rs_put(r, x, k, ret ? ret : &cache_none);
  return ret;
}

static void rctx_init(RCtx *r, const PM *pm, const PM *bpm, void *ctx) {
  memset(r, 0, offsetof(RCtx, q0));
  r->pm = pm; r->bpm = bpm; r->ctx = ctx; r->memo = -1;
  r->subst = bpm && bpm == pm_substitute ? ctx : NULL;
  r->q = r->q0; r->cap = sizeof r->q0 / sizeof r->q0[0];
  for (int k = 0; k < 3; k++) umap_init(&r->fb[k], &uctx->scratch);
  r->both = pm && bpm;
  umap_init(&r->bside, &uctx->scratch);
  r->depth = uctx->rw_depth;
  int nopen = (int)(sizeof uctx->rw_open / sizeof uctx->rw_open[0]);
  if (r->depth < nopen && uctx->rw_epoch < UINT32_MAX) {
    r->epoch = ++uctx->rw_epoch;
    uctx->rw_open[uctx->rw_depth++] = r->epoch;
  }
}
static void rctx_done(RCtx *r) { uctx->rw_depth = r->depth; }

/* nn's sources' results into r->tmp, false at the first source without one; *same stays true
 * while every result is its source */
static inline bool rs_srcs(RCtx *r, UOp *nn, bool *same) {
  if (nn->nsrc > r->tmpcap) {
    r->tmpcap = nn->nsrc * 2;
    r->tmp = arena_alloc(&uctx->scratch, sizeof(UOp *) * (size_t)r->tmpcap);
  }
  for (int i = 0; i < nn->nsrc; i++) {
    UOp *x = rs_get(r, nn->src[i], RW_REPLACE);
    if (!x) return false;
    r->tmp[i] = x;
    if (x != nn->src[i]) *same = false;
  }
  return true;
}

/* the deque loop; a RewriteNotReady from a callback of r->cur unwinds to unified_rewrite.
 * tinygrad checks the deque's length before each pop; here it is checked where the deque grows
 * (a push is always followed by a pop, and a pop alone cannot reach the bound). Two shortcuts keep
 * tinygrad's order and its stack bound: stage 0 reads the sources' results into tmp as it checks
 * them, so a node whose sources are all done goes on to stage 1 without reading them again; and
 * the entry (x, 0, x) that stage 1 would push on top of (n, 2, x), to be popped next, is
 * processed at once instead. */
__attribute__((noinline)) static void rewrite_loop(RCtx *r) {
  while (r->hi != r->lo) {
    REnt e = r->q[--r->hi];
  entry:;
    UOp *n = e.n, *nn = e.nn;
    if (rs_get(r, n, RW_REPLACE)) continue;
    bool same = true, scanned = false; /* scanned: tmp holds nn's sources' results */
    if (e.stage == 0) {
      if (r->memo >= 0 && n->cache[r->memo]) { /* rewritten by an earlier graph_rewrite_memo of this matcher */
        rs_put(r, n, RW_REPLACE, n->cache[r->memo]);
        continue;
      }
      if (r->bpm) {
        r->cur = e; /* the entry a RewriteNotReady from bpm's callbacks puts back */
        /* apply rewrite rules until a fixed point is reached */
        UOp *seen_small[16]; UOp **seen = seen_small; int ns = 0, seencap = 16;
        UOp *test = n;
        while (test) {
          for (int i = 0; i < ns; i++) if (seen[i] == test) tg_fail(TG_EINTERNAL, "infinite loop in fixed_point_rewrite");
          if (ns == seencap) {
            UOp **g = arena_alloc(&uctx->scratch, sizeof(UOp *) * (size_t)seencap * 2);
            memcpy(g, seen, sizeof(UOp *) * (size_t)ns);
            seen = g; seencap *= 2;
          }
          seen[ns++] = test;
          nn = test;
          /* _substitute's one rule is a lookup in its map: no cache is cheaper than the map */
          if (r->subst) {
            UOp *v = umap_get(r->subst, test);
            test = v != test ? v : NULL;
          } else {
            test = cached_rewrite(r, RW_BPM, r->bpm, test);
          }
        }
      }
      /* when every source is rewritten already, their entries would pop straight off again and
       * stage 1 come next: go on with it now (the stack would have held cnt + 1 + nsrc entries) */
      if (!rs_srcs(r, nn, &same)) {
        rq_push(r, n, 1, nn);
        for (int i = nn->nsrc - 1; i >= 0; i--) rq_push(r, nn->src[i], 0, nn->src[i]);
        rq_check(rq_count(r));
        continue;
      }
      rq_check(rq_count(r) + 1 + (size_t)nn->nsrc);
      e.stage = 1;
      scanned = true;
    }
    if (e.stage == 1) {
      if (!scanned && !rs_srcs(r, nn, &same)) { rq_push_front(r, n, 1, nn); continue; } /* RewriteNotReady: retry later */
      UOp *nsn = NULL;
      if (same) {
        if (r->pm) {
          r->cur = (REnt){n, nn, 1}; /* the entry a RewriteNotReady from pm's callbacks puts back */
          nsn = cached_rewrite(r, RW_PM, r->pm, nn);
        }
        if (!nsn) {
          rs_replace(r, n, nn);
          continue;
        }
      } else {
        nsn = uop_new((Op)nn->op, nn->dtype, nn->nsrc, r->tmp, nn->arg, nn->tag);
      }
      /* rewrite nsn, then link its result back to n: (n, 2, nsn) waits under (nsn, 0, nsn), which
       * is processed now, as the next pop would (the loop's check sees the stack with it on) */
      rq_push(r, n, 2, nsn);
      rq_check(rq_count(r) + 1);
      e = (REnt){nsn, nsn, 0};
      goto entry;
    } else if (e.stage == 2) {
      UOp *x = rs_get(r, nn, RW_REPLACE);
      if (!x) { rq_push_front(r, n, 2, nn); continue; } /* RewriteNotReady */
      rs_replace(r, n, x);
    }
  }
}

/* RewriteNotReady: pm_not_ready() unwinds to here; the entry goes to the bottom of the deque and
 * is retried later (nothing was cached for it), and the loop goes on */
typedef struct NRJump { jmp_buf jb; struct NRJump *prev; TgTry *try_top; const RCtx *r; } NRJump;
static _Thread_local NRJump *nr_top;
_Noreturn void pm_not_ready(void) {
  if (!nr_top) tg_fail(TG_EINTERNAL, "pm_not_ready called outside graph_rewrite");
  longjmp(nr_top->jb, 1);
}
size_t pm_stack_count(void) { return nr_top ? rq_count(nr_top->r) : 0; }
void pm_stack_check(size_t n) { rq_check(n); }
static UOp *unified_rewrite(RCtx *r, UOp *root) {
  r->lo = r->hi = 0;
  rq_push(r, root, 0, root);
  NRJump j;
  j.prev = nr_top; j.try_top = tg_try_top; j.r = r;
  int depth = uctx->rw_depth; /* the rewrites a callback opened are closed by the unwinding */
  if (setjmp(j.jb)) {
    nr_top = j.prev; tg_try_top = j.try_top; uctx->rw_depth = depth;
    rq_push_front(r, r->cur.n, r->cur.stage, r->cur.nn);
  }
  nr_top = &j;
  rewrite_loop(r);
  nr_top = j.prev;
  return rs_get(r, root, RW_REPLACE);
}

/* one rewrite of sink with its own tables (memo >= 0: graph_rewrite_memo's UOp.cache slot) */
static UOp *rewrite_root(UOp *sink, const PM *pm, const PM *bpm, void *ctx, int memo) {
  ArenaMark mk = arena_mark(&uctx->scratch);
  NRJump *saved = nr_top;
  RCtx r;
  rctx_init(&r, pm, bpm, ctx);
  r.memo = memo;
  UOp *ret = unified_rewrite(&r, sink);
  rctx_done(&r);
  nr_top = saved;
  arena_pop(&uctx->scratch, mk);
  return ret;
}
UOp *graph_rewrite(UOp *sink, const PM *pm, void *ctx, bool bottom_up, const PM *bpm) {
  return rewrite_root(sink, bottom_up ? NULL : pm, bottom_up ? pm : bpm, ctx, -1);
}
UOp *graph_rewrite_memo(UOp *sink, const PM *pm, int slot) { return rewrite_root(sink, pm, NULL, NULL, slot); }

/* dedup(all_metadata.get(v, ())) + k.metadata */
static void meta_move(UOp *k, UOp *v) {
  MetaList vm = uop_meta(v), km = uop_meta(k);
  int n = 0;
  const Meta **out = arena_alloc(ga(), sizeof(Meta *) * (size_t)(vm.n + km.n + 1)); /* zeroed: the NULL after them */
  for (int i = 0; i < vm.n; i++) {
    bool dup = false;
    for (int j = 0; j < n; j++) if (out[j] == vm.m[i]) dup = true;
    if (!dup) out[n++] = vm.m[i];
  }
  for (int i = 0; i < km.n; i++) out[n++] = km.m[i];
  uop_set_meta(v, (MetaList){n, out});
}

/* graph_rewrite_rmap's keys rewritten in turn (topo reversed when bottom_up), each result put in
 * nm: unified_rewrite for every key, with one RewriteNotReady target for all of them. After an
 * unwind the interrupted key's rewrite goes on, then the next key's; the loop's state lives in *jp
 * and *nm, outside this frame, as longjmp requires. */
static void rmap_loop(RCtx *r, UList topo, bool bottom_up, RMap *nm, int *jp) {
  NRJump jb;
  jb.prev = nr_top; jb.try_top = tg_try_top; jb.r = r;
  int depth = uctx->rw_depth;
  volatile bool resumed = false;
  if (setjmp(jb.jb)) {
    nr_top = jb.prev; tg_try_top = jb.try_top; uctx->rw_depth = depth;
    rq_push_front(r, r->cur.n, r->cur.stage, r->cur.nn);
    resumed = true;
  }
  nr_top = &jb;
  for (; *jp < topo.n; (*jp)++) {
    UOp *k = topo.v[bottom_up ? topo.n - 1 - *jp : *jp];
    UOp *v = rs_get(r, k, RW_REPLACE); /* a bottom-up rewrite reaches most keys from an earlier one */
    if (resumed || !v) {
      if (!resumed) rq_push(r, k, 0, k);
      resumed = false;
      rewrite_loop(r);
      v = rs_get(r, k, RW_REPLACE);
    }
    nm->kid[nm->n++] = k->id;
    nm->val[k->id] = v->id;
    if (k != v && k->meta) meta_move(k, v);
  }
  nr_top = jb.prev;
}

RMap graph_rewrite_rmap(Arena *out, UOp *sink, const PM *pm, void *ctx, bool bottom_up, const PM *bpm, const RMap *input_map) {
  ArenaMark mk = arena_mark(&uctx->scratch);
  UList topo = uop_toposort_in(&uctx->scratch, sink, NULL, NULL);
  RMap nm = graph_rewrite_rmap_topo(out, topo, pm, ctx, bottom_up, bpm, input_map);
  arena_pop(&uctx->scratch, mk);
  return nm;
}
RMap graph_rewrite_rmap_topo(Arena *out, UList topo, const PM *pm, void *ctx, bool bottom_up, const PM *bpm,
                             const RMap *input_map) {
  /* every key is a node of sink's graph or of input_map's keys, all older than this call */
  uint32_t cap = uctx->next_id;
  /* values by id; keys in order, at most one per node of sink's graph and one per input key
   * (allocated before the scratch mark below, so a map in scratch outlives this rewrite's pop) */
  size_t nkeys = (size_t)topo.n + (input_map ? (size_t)input_map->n : 0);
  RMap nm = {arena_alloc(out, sizeof(uint32_t) * (size_t)cap), cap, 0, arena_alloc_raw(out, sizeof(uint32_t) * (nkeys ? nkeys : 1))};
  ArenaMark mk = arena_mark(&uctx->scratch);
  NRJump *saved = nr_top;
  RCtx r;
  rctx_init(&r, bottom_up ? NULL : pm, bottom_up ? pm : bpm, ctx);
  int j = 0;
  rmap_loop(&r, topo, bottom_up, &nm, &j);
  rctx_done(&r);
  nr_top = saved;
  arena_pop(&uctx->scratch, mk);
  /* new_map[k] = new_map.get(v, v) for every input entry: a key already there keeps its place */
  if (input_map) for (int i = 0; i < input_map->n; i++) {
    uint32_t k = input_map->kid[i], v = input_map->val[k], nv = nm.val[v]; /* v < cap: older than this call */
    if (!nm.val[k]) nm.kid[nm.n++] = k;
    nm.val[k] = nv ? nv : v;
  }
  return nm;
}

UMap rmap_to_umap(const RMap *m, Arena *a) {
  UMap u;
  umap_init(&u, a);
  map_reserve(&u, m->n);
  for (int i = 0; i < m->n; i++) umap_put(&u, uop_by_id(m->kid[i]), uop_by_id(m->val[m->kid[i]]));
  return u;
}

UMap graph_rewrite_map(UOp *sink, const PM *pm, void *ctx, bool bottom_up, const PM *bpm, const UMap *input_map) {
  ArenaMark mk = arena_mark(&uctx->scratch);
  RMap im = {arena_alloc(&uctx->scratch, sizeof(uint32_t) * (size_t)uctx->next_id), uctx->next_id, 0, NULL};
  if (input_map) {
    im.kid = arena_alloc_raw(&uctx->scratch, sizeof(uint32_t) * (size_t)(input_map->live + 1));
    MAP_EACH(input_map, e) {
      uint32_t k = ((UOp *)e->key)->id;
      im.kid[im.n++] = k;
      im.val[k] = ((UOp *)e->val)->id;
    }
  }
  /* the map is scratch too, above the toposort: this scope's pop drops both */
  UList topo = uop_toposort_in(&uctx->scratch, sink, NULL, NULL);
  RMap nm = graph_rewrite_rmap_topo(&uctx->scratch, topo, pm, ctx, bottom_up, bpm, input_map ? &im : NULL);
  UMap ret = rmap_to_umap(&nm, ga());
  arena_pop(&uctx->scratch, mk);
  return ret;
}

/* ---- substitute ---- */
static UOp *rw_substitute(const Match *m, void *ctx) { return umap_get((const UMap *)ctx, m_get(m, "x")); }
static const Rule substitute_rules[] = {
  // every node that is a key of ctx is replaced by its value
  { UP(.all_ops = true, .name = "x"), rw_substitute },
};
PM *pm_substitute;
void pm_init(void) {
  if (!pm_substitute) pm_substitute = pm_new(substitute_rules, RULES_N(substitute_rules));
}

static bool gate_newer(UOp *u, void *oldest) { return u->id >= *(const uint32_t *)oldest; }
UOp *uop_substitute(UOp *root, const UMap *dvars) {
  pm_init();
  ArenaMark mk = arena_mark(&uctx->scratch);
  UMap d;
  umap_init(&d, &uctx->scratch);
  MAP_EACH(dvars, e) if (e->key != e->val) umap_put(&d, e->key, e->val);
  UOp *ret = root;
  if (d.live) {
    RCtx r;
    NRJump *saved = nr_top;
    rctx_init(&r, NULL, pm_substitute, &d);
    /* A node that is no key and reaches none rewrites to itself (the rule only maps keys): it is
     * entered as its own result before the rewrite starts, which then never visits its graph.
     * That visit could only matter through tinygrad's bound on its stack: a graph of root and the
     * values under REWRITE_SAFE_SIZE is entered safely, and a larger one is visited as tinygrad
     * visits it. (Each graph is sorted alone: the values' share nodes with root's, and the sum of
     * their sizes bounds n + e from above. The sorting stops once the sum reaches the bound, so it
     * costs at most REWRITE_SAFE_SIZE steps and one graph, however many keys.) */
    UOp **roots = arena_alloc_raw(&uctx->scratch, sizeof(UOp *) * (size_t)(d.live + 1));
    int nr = 0, nt = 0;
    roots[nr++] = root;
    MAP_EACH(&d, e) roots[nr++] = e->val;
    UList *topo = arena_alloc_raw(&uctx->scratch, sizeof(UList) * (size_t)nr);
    /* When every node the context has made, with their sources, is under the bound, so is any
     * graph, and only the nodes made after the oldest key are walked: a node's sources are older
     * than it, so an older node has no key below it, and it is entered as its own result where a
     * walked node uses it (oldest stays 0, no node, when each graph is sized instead). */
    uint32_t oldest = 0;
    bool safe = (uint64_t)uctx->next_id + uctx->nedges < REWRITE_SAFE_SIZE;
    if (safe) {
      oldest = UINT32_MAX;
      MAP_EACH(&d, e) if (((UOp *)e->key)->id < oldest) oldest = ((UOp *)e->key)->id;
      for (; nt < nr; nt++) topo[nt] = uop_toposort_in(&uctx->scratch, roots[nt], gate_newer, &oldest);
    } else {
      size_t size = 0;
      for (; nt < nr && size < REWRITE_SAFE_SIZE; nt++) size = rewrite_size_add(size, topo[nt] = uop_toposort_in(&uctx->scratch, roots[nt], NULL, NULL));
      safe = size < REWRITE_SAFE_SIZE;
    }
    for (int t = 0; t < nt && safe; t++) {
      if (roots[t]->id < oldest) { if (!rs_get(&r, roots[t], RW_REPLACE)) rs_replace(&r, roots[t], roots[t]); continue; }
      for (int i = 0; i < topo[t].n; i++) {
        UOp *u = topo[t].v[i];
        bool clean = !umap_has(&d, u);
        for (int j = 0; j < u->nsrc; j++) {
          UOp *s = u->src[j];
          if (rs_get(&r, s, RW_REPLACE)) continue;
          if (s->id < oldest) rs_replace(&r, s, s);
          else clean = false;
        }
        if (clean) rs_replace(&r, u, u);
      }
    }
    ret = rs_get(&r, root, RW_REPLACE);
    if (!ret) ret = unified_rewrite(&r, root);
    rctx_done(&r);
    nr_top = saved;
  }
  arena_pop(&uctx->scratch, mk);
  return ret;
}
