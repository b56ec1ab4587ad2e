/* grouper.c: which tensor UOps realize (tinygrad 0.11.0 schedule/grouper.py).
 *
 * do_realize is a rule table whose callbacks only record into the realize map (an ordered
 * UMap used as a set) and never rewrite, so graph_rewrite visits every node once, parents
 * first, exactly as tinygrad's does. group_realizes then pairs each REDUCE_AXIS with the
 * elementwise children it can fuse with: recursive_group walks children chains on an explicit
 * stack of frames (node, ShapeTracker, next child) so a graph-deep chain cannot overflow the C
 * stack, with the same visiting order and early returns as the recursive original. */
#include "passes.h"
#include <string.h>


/* ALWAYS_CONTIGUOUS: ops that are already a buffer (or are one once they run) */
bool always_contiguous(Op op) {
  switch (op) {
  case OP_CONTIGUOUS: case OP_ASSIGN: case OP_COPY: case OP_BUFFER: case OP_BUFFER_VIEW: case OP_CONST:
  case OP_BIND: case OP_DEVICE: case OP_MSELECT: case OP_MSTACK: case OP_DEFINE_GLOBAL: case OP_DEFINE_LOCAL:
  case OP_DEFINE_REG: case OP_LOAD: return true;
  default: return false;
  }
}

/* an ordered set of UOps is a UMap with NULL values */
static void uset_add(UMap *s, UOp *u) { bool isnew; map_slot(s, u, uop_h(u), &isnew); }

/* a node's children: insertion ordered and deduplicated (a set, as tinygrad's dict keys), kept as
 * a short array that gets a hash index only once it is long; most nodes have one or two */
typedef struct Kids { UOp **v; int n, cap; UMap *set; } Kids;
static void kids_add(Arena *a, Kids *k, UOp *u) {
  if (k->set) {
    bool isnew;
    map_slot(k->set, u, uop_h(u), &isnew);
    if (!isnew) return;
  } else {
    for (int i = 0; i < k->n; i++) if (k->v[i] == u) return;
  }
  if (k->n == k->cap) {
    int nc = k->cap ? k->cap * 2 : 2;
    UOp **nv = arena_alloc_raw(a, sizeof(UOp *) * (size_t)nc);
    if (k->n) memcpy(nv, k->v, sizeof(UOp *) * (size_t)k->n);
    k->v = nv, k->cap = nc;
  }
  k->v[k->n++] = u;
  if (!k->set && k->n == 16) {
    k->set = arena_alloc(a, sizeof *k->set);
    umap_init(k->set, a);
    for (int i = 0; i < k->n; i++) uset_add(k->set, k->v[i]);
  }
}

/* decision recording for `tgc explain` (schedule.h); off unless a caller sets sched_why */
SchedWhy *sched_why = NULL;
void sched_why_note(UOp *u, SchedWhyCode code) {
  if (!sched_why || umap_has(&sched_why->why, u)) return;
  umap_put(&sched_why->why, u, (void *)(intptr_t)code);
}
static SchedWhyCode why_of_op(Op op) {
  switch (op) {
  case OP_CONTIGUOUS: return WHY_CONTIGUOUS;
  case OP_ASSIGN: return WHY_ASSIGN;
  case OP_COPY: return WHY_COPY;
  default: return WHY_BUFFER_VIEW;
  }
}


/* ---- do_realize ---- */
static UOp *rw_realize_sink_parents(const Match *m, void *ctx) {
  UOp *s = m_get(m, "s");
  for (int i = 0; i < s->nsrc; i++) {
    UOp *b = u_base(s->src[i]);
    if (!always_contiguous((Op)b->op)) { uset_add(ctx, b); sched_why_note(b, WHY_SINK); }
  }
  return NULL;
}
static UOp *rw_realize(const Match *m, void *ctx) {
  UOp *tr = m_get(m, "tr");
  uset_add(ctx, tr);
  sched_why_note(tr, why_of_op((Op)tr->op));
  return NULL;
}
static UOp *rw_realize_parents(const Match *m, void *ctx) {
  UOp *rb = m_get(m, "rb");
  for (int i = 0; i < rb->nsrc; i++)
    if (!always_contiguous((Op)rb->src[i]->op)) { uset_add(ctx, rb->src[i]); sched_why_note(rb->src[i], WHY_COPY_SRC); }
  return NULL;
}
static UOp *rw_realize_before_view(const Match *m, void *ctx) {
  UOp *view = m_get(m, "view"), *tr = m_get(m, "tr");
  const ShapeTracker *st = u_st(view);
  bool masked = false;
  for (int i = 0; i < st->nviews; i++) if (st->views[i]->mask) masked = true;
  // always realize unsafe pad ops before masked view
  if (masked && !uop_can_pad(1, &tr, ctx)) { uset_add(ctx, tr); sched_why_note(tr, WHY_UNSAFE_PAD); return NULL; }
  SList trs = u_shape(tr);
  // fold simple pads
  const View *last = st->views[st->nviews - 1];
  if (st->nviews == 1 && last->mask && sl_all_int(trs)) {
    Sint p = si(1);
    for (int i = 0; i < last->ndim; i++) p = si_mul(p, si_sub(last->mask[2 * i + 1], last->mask[2 * i]));
    if (!si_resolve_lt(sl_prod(trs), p, false)) return NULL; /* resolve(prod >= p) == not resolve(prod < p) */
  }
  // realize before expand
  if (si_resolve_lt(sl_prod(trs), sl_prod(st_shape(st)), true) && !uctx->opt.dont_realize_expand) {
    uset_add(ctx, tr);
    sched_why_note(tr, WHY_EXPAND);
  }
  return NULL;
}

static const Op ALWAYS_CONTIGUOUS_OPS[] = {OP_CONTIGUOUS, OP_ASSIGN, OP_COPY, OP_BUFFER, OP_BUFFER_VIEW, OP_CONST, OP_BIND,
  OP_DEVICE, OP_MSELECT, OP_MSTACK, OP_DEFINE_GLOBAL, OP_DEFINE_LOCAL, OP_DEFINE_REG, OP_LOAD, OP_INVALID};

static const Rule do_realize[] = {
  // always realize SINK parents
  { UP(.ops = OPS(OP_SINK), .name = "s"), rw_realize_sink_parents },
  // always realize ASSIGN/CONTIGUOUS/COPY/BUFFER_VIEW
  { UP(.ops = OPS(OP_ASSIGN, OP_CONTIGUOUS, OP_COPY, OP_BUFFER_VIEW), .name = "tr"), rw_realize },
  // realize before expand or unsafe pad ops
  { UP(.ops = OPS(OP_VIEW), .name = "view", SRC(UP(.all_ops = true, .except = ALWAYS_CONTIGUOUS_OPS, .name = "tr"))),
    rw_realize_before_view },
  // realize parents of COPY, MSELECT, MSTACK
  { UP(.ops = OPS(OP_COPY, OP_MSELECT, OP_MSTACK), .name = "rb"), rw_realize_parents },
};
static PM *pm_do_realize;

/* the realize map after do_realize alone. The callbacks never rewrite, so tinygrad's
 * graph_rewrite(sink, do_realize) calls the matcher on each node once, in toposort order (its
 * stack takes sources first, in order): that loop over topo (sink's toposort) is the same calls.
 * The rewrite could only differ by failing on its stack bound: under REWRITE_SAFE_SIZE the loop is
 * taken, and a larger graph goes through graph_rewrite as tinygrad's does. */
static UMap sched_do_realize(UOp *sink, UList topo) {
  if (!pm_do_realize) pm_do_realize = pm_new(do_realize, RULES_N(do_realize));
  UMap realizes;
  umap_init(&realizes, ga());
  if (rewrite_size_add(0, topo) >= REWRITE_SAFE_SIZE) {
    graph_rewrite(sink, pm_do_realize, &realizes, false, NULL);
    return realizes;
  }
  for (int i = 0; i < topo.n; i++)
    if (pm_rewrite(pm_do_realize, topo.v[i], &realizes)) tg_fail(TG_EINTERNAL, "do_realize rewrote a node");
  return realizes;
}

/* ---- recursive_group ---- */
/* the (tr, st) pairs recursive_group has visited for one reduce (tinygrad's cache dict, a set).
 * One open-addressing table serves all of group_realizes' reduces: a reduce's walk starts a new
 * generation, and an entry of an older one counts as empty. So the table is allocated once at its
 * largest, not grown from empty for every reduce (a big reduce's walk meets hundreds of pairs). */
typedef struct Visit { const UOp *tr; const ShapeTracker *st; uint32_t gen; } Visit;
typedef struct VisitSet { Visit *t; uint32_t cap, n, gen; } VisitSet;
static void visit_next(VisitSet *s) { s->gen++, s->n = 0; }
static Visit *visit_slot(Visit *t, uint32_t cap, uint32_t gen, const UOp *tr, const ShapeTracker *st) {
  uint32_t m = cap - 1, i = (uint32_t)(hash_mix(uop_h(tr), st->id) >> 32) & m;
  while (t[i].gen == gen && (t[i].tr != tr || t[i].st != st)) i = (i + 1) & m;
  return &t[i];
}
/* true when (tr, st) is new in this generation (then it is added) */
static bool visit_add(VisitSet *s, Arena *a, const UOp *tr, const ShapeTracker *st) {
  if ((s->n + 1) * 2 > s->cap) {
    uint32_t nc = s->cap ? s->cap * 2 : 256;
    Visit *nt = arena_alloc(a, sizeof(Visit) * nc); /* zeroed: generation 0, which no walk uses */
    for (uint32_t i = 0; i < s->cap; i++)
      if (s->t[i].gen == s->gen) *visit_slot(nt, nc, s->gen, s->t[i].tr, s->t[i].st) = s->t[i];
    s->t = nt, s->cap = nc;
  }
  Visit *v = visit_slot(s->t, s->cap, s->gen, tr, st);
  if (v->gen == s->gen) return false;
  *v = (Visit){tr, st, s->gen};
  s->n++;
  return true;
}

typedef struct GroupCtx {
  UOp *r; Sint rsize;
  Kids *const *children;       /* by node id */
  const UMap *realizes, *reduce_for_op;
  UMap *group;
  VisitSet *cache;             /* the (tr, st) pairs visited, in this reduce's generation */
  SchedWhyCode why; /* for explain: why r itself was put in the group (first reason) */
} GroupCtx;

/* r goes into its own group (it cannot fuse with its children), remembering why */
static void group_self(GroupCtx *g, SchedWhyCode why) {
  if (!g->why) g->why = why;
  uset_add(g->group, g->r);
}

/* dedup(unwrap(x.st) for x in tr_next.src if x.base is tr): count (0, 1 or 2 meaning "more") and the first */
static int st_childs(UOp *tr_next, UOp *tr, const ShapeTracker **first) {
  int n = 0;
  *first = NULL;
  for (int i = 0; i < tr_next->nsrc; i++) {
    UOp *x = tr_next->src[i];
    if (u_base(x) != tr) continue;
    const ShapeTracker *st = u_st(x);
    if (n == 0) { *first = st; n = 1; }
    else if (st != *first) return 2;
  }
  return n;
}

typedef struct GFrame { UOp *tr; const ShapeTracker *st; int next; } GFrame;

/* its frames go to scratch and stay until group_realizes pops its own scope: g's group and cache
 * maps live there too and grow during the walk, so this walk must not pop under them */
static void recursive_group(GroupCtx *g, UOp *tr0, const ShapeTracker *st0) {
  PtrVec stack;
  vec_init(&stack, &uctx->scratch);
  /* entering a frame: the cache check and the realized-node case, then iterate children */
  GFrame *f0 = arena_alloc(&uctx->scratch, sizeof *f0);
  *f0 = (GFrame){tr0, st0, -1};
  vec_push(&stack, f0);
  while (stack.n) {
    GFrame *f = stack.v[stack.n - 1];
    if (f->next < 0) {
      if (!visit_add(g->cache, &uctx->scratch, f->tr, f->st)) { stack.n--; continue; }
      if (umap_has(g->realizes, f->tr) && f->tr != g->r) {
        // can only fuse contiguous; max one reduceop per kernel
        if (!st_contiguous(f->st) || si_resolve_ne(st_size(f->st), g->rsize, true)) group_self(g, WHY_NONCONTIG);
        else if (umap_has(g->reduce_for_op, f->tr)) group_self(g, WHY_OTHER_REDUCE);
        uset_add(g->group, f->tr);
        stack.n--;
        continue;
      }
      f->next = 0;
    }
    const Kids *ch = g->children[f->tr->id];
    /* the next child */
    if (!ch || f->next >= ch->n) { stack.n--; continue; }
    UOp *tr_next = ch->v[f->next++];
    // max one reduceop per kernel
    if (tr_next->op == OP_REDUCE_AXIS) { group_self(g, WHY_SECOND_REDUCE); stack.n--; continue; }
    // can only fuse contiguous
    const ShapeTracker *first;
    if (st_childs(tr_next, f->tr, &first) > 1) { group_self(g, WHY_NONCONTIG); stack.n--; continue; }
    GFrame *nf = arena_alloc(&uctx->scratch, sizeof *nf);
    *nf = (GFrame){tr_next, st_concat(f->st, first), -1};
    vec_push(&stack, nf);
  }
}

static bool gate_not_realized(UOp *u, void *ctx) { return !umap_has((const UMap *)ctx, u); }

/* group_realizes: the ordered set of tensor UOps that get their own buffer */
UMap group_realizes(UOp *sink, UList topo) {
  // everything below but realizes is scratch, dropped on return
  Arena *ta = &uctx->scratch;
  ArenaMark mk = arena_mark(ta);
  // start by adding uops that always realize
  UMap realizes = sched_do_realize(sink, topo);
  if (uctx->opt.dont_group_reduces) {
    arena_pop(ta, mk);
    return realizes;
  }

  // construct children graph (only for bases); indexed by id (the graph's nodes are all older than now)
  Kids **children = arena_alloc(ta, sizeof(Kids *) * uctx->next_id);
  UMap assigns;
  umap_init(&assigns, ta);
  for (int i = 0; i < topo.n; i++) {
    UOp *u = topo.v[i];
    if (u->op == OP_VIEW || u->op == OP_SINK) continue;
    if (u->op == OP_ASSIGN) uset_add(&assigns, u_buf_uop(u));
    for (int j = 0; j < u->nsrc; j++) {
      UOp *b = u_base(u->src[j]);
      Kids *ch = children[b->id];
      if (!ch) ch = children[b->id] = arena_alloc(ta, sizeof *ch);
      kids_add(ta, ch, u);
    }
  }

  // find all reduces, and pair them to a elementwise op. if they can't be cleanly paired, force realize the reduce (or a contig child)
  UMap reduce_for_op;
  umap_init(&reduce_for_op, ta);
  PtrVec double_reduces;
  vec_init(&double_reduces, ta);
  VisitSet visited = {0};
  for (int i = 0; i < topo.n; i++) {
    UOp *r = topo.v[i];
    if (r->op != OP_REDUCE_AXIS) continue;
    if (r->arg->n == 3 && r->arg->items[2]->kind == V_BOOL && r->arg->items[2]->b) continue;
    if (uctx->opt.fuse_conv_bw && u_base(r->src[0])->op == OP_REDUCE_AXIS && r->src[0] != u_base(r->src[0]))
      vec_push(&double_reduces, r);
    if (umap_has(&realizes, r)) continue;
    UMap group;
    umap_init(&group, ta);
    GroupCtx g = {.r = r, .rsize = st_size(u_st(r)), .children = children, .realizes = &realizes,
                  .reduce_for_op = &reduce_for_op, .group = &group, .cache = &visited};
    visit_next(&visited);
    recursive_group(&g, r, u_st(r));
    // max one reduceop per kernel
    bool can_chase = true;
    MAP_EACH(&group, e) if (umap_has(&reduce_for_op, e->key)) can_chase = false;
    // TODO: forced_realize exists because the scheduler is incapable of checking for self-contained DAGs
    bool forced_realize = umap_has(&group, r);
    SchedWhyCode why = forced_realize ? g.why : WHY_FORCED;
    // can only have one output
    if (!forced_realize && group.live > 1) { forced_realize = true; why = WHY_CHILDREN; }
    // can only fuse assign if no other assign_target is used in the kernel
    if (!forced_realize) {
      UMap targets;
      umap_init(&targets, ta);
      MAP_EACH(&group, e) if (((UOp *)e->key)->op == OP_ASSIGN) uset_add(&targets, u_buf_uop(e->key));
      if (targets.live) {
        PtrVec parents;
        UMap seen;
        vec_init(&parents, ta);
        umap_init(&seen, ta);
        vec_push(&parents, r);
        MAP_EACH(&group, e) vec_push(&parents, e->key);
        /* the outcome is one boolean, so a node reached twice need not be walked twice */
        while (parents.n && !forced_realize) {
          UOp *p = u_base(vec_pop(&parents));
          if (umap_has(&seen, p)) continue;
          uset_add(&seen, p);
          if (p->op == OP_BUFFER && umap_has(&assigns, p) && !umap_has(&targets, p)) {
            forced_realize = true;
            can_chase = false;
            why = WHY_ASSIGN_TARGET;
          }
          if (umap_has(&realizes, p)) continue;
          for (int j = 0; j < p->nsrc; j++) vec_push(&parents, p->src[j]);
        }
      }
    }
    if (forced_realize || group.live == 0) {
      UOp *tr = r;
      /* (the toposort for this check only matters here, so it runs only here) */
      if (can_chase) {
        UList rt = uop_toposort_in(ta, r, gate_not_realized, &realizes);
        for (int j = 0; j < rt.n; j++) {
          UOp *u = rt.v[j];
          if (u->op == OP_REDUCE_AXIS && u_base(u->src[0])->op == OP_CONST) { can_chase = false; break; }
        }
      }
      if (can_chase) {
        // can chase this down to contiguous children
        const ShapeTracker *st = u_st(tr);
        for (;;) {
          const Kids *lst = children[tr->id];
          if (!lst || lst->n != 1) break;
          UOp *tr_next = lst->v[0];
          const ShapeTracker *first;
          int nst = st_childs(tr_next, tr, &first);
          if (nst > 1) break;
          if (si_resolve_ne(st_size(st), st_size(first), true)) break;
          st = st_concat(st, first);
          if (!st_contiguous(st) || tr_next->op == OP_REDUCE_AXIS) break;
          tr = tr_next;
        }
        // don't cast to higher size before store (tr cannot be realized if forced_realize)
        if (tr->op == OP_CAST && tr->dtype->itemsize > tr->src[0]->dtype->itemsize) tr = u_base(tr->src[0]);
      }
      umap_init(&group, ta);
      uset_add(&group, tr);
      uset_add(&realizes, tr);
      sched_why_note(tr, why);
    }
    MAP_EACH(&group, e) umap_put(&reduce_for_op, e->key, r);
  }
  // fuse double reduces with no other child
  for (int i = 0; i < double_reduces.n; i++) {
    UOp *top_reduce = u_base(((UOp *)double_reduces.v[i])->src[0]);
    const Kids *ch = children[top_reduce->id];
    if (ch && ch->n == 1) umap_del(&realizes, top_reduce);
  }
  arena_pop(ta, mk);
  return realizes;
}
