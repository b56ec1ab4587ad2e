/* schedule.c: linearize the KERNEL graph into schedule items (tinygrad 0.11.0
 * engine/schedule.py create_schedule_with_vars).
 *
 * The children graph and in-degrees come from the ASSIGNs of the kernelized sink in toposort
 * order; kernels then run in BFS order from per-heuristic FIFO queues. The heuristic is 1000 for
 * a COPY between device groups, but no tinygrad 0.11.0 device sets Compiled.group_id (it is None
 * for every device), so every kernel lands in queue 0 and the order is plain BFS; the queue
 * machinery is kept so the code reads like the original. A kernel over multi-device buffers
 * becomes one item per shard, with `_device_num` bound to the shard index. */
#include "passes.h"
#include <string.h>


/* Device[d].group_id: None for every device in tinygrad 0.11.0 */
static int device_group_id(const Value *device) { (void)device; return -1; }

static int heuristic(UOp *k) {
  UOp *ast = k->arg->k.ast;
  if (ast->op != OP_COPY) return 0;
  int g0 = 0; bool first = true;
  for (int i = 0; i < k->nsrc; i++) {
    int g = device_group_id(u_device(u_buf_uop(k->src[i])));
    if (first) { g0 = g; first = false; }
    else if (g != g0) return 1000;
  }
  return 0;
}

/* ---- buffers of a kernel (Buffer / MultiBuffer of buf_uop) ---- */
static bool buf_is_multi(UOp *b) {
  if (b->op == OP_MSTACK) return true;
  if (b->op == OP_BUFFER) { const Value *d = u_device(b); return d && d->kind == V_TUPLE; }
  return false;
}
static int buf_nshards(UOp *b) {
  if (b->op == OP_MSTACK) return b->nsrc;
  return u_device(b)->n;
}
static SchedBuf buf_single(UOp *b) {
  for (int depth = 0; depth < 64; depth++) {
    if (b->op == OP_BUFFER) return (SchedBuf){b, -1};
    if (b->op == OP_MSELECT) {
      UOp *x = u_buf_uop(b->src[0]);
      int i = (int)b->arg->i;
      if (x->op == OP_BUFFER) return (SchedBuf){x, i};
      if (x->op == OP_MSTACK && i < x->nsrc) { b = x->src[i]; continue; }
      tg_fail(TG_EINPUT, "MSELECT of a %s is not a buffer", op_names[x->op]);
    }
    if (b != u_base(b)) { b = b->src[0]; continue; } /* a contiguous VIEW of a buffer */
    if (b->op == OP_BUFFER_VIEW) return (SchedBuf){b, -1};
    tg_fail(TG_EINPUT, "kernel buffer is a %s, not a BUFFER", op_names[b->op]);
  }
  tg_fail(TG_EINPUT, "kernel buffer nests too deeply");
}
static SchedBuf buf_shard(UOp *b, int i) {
  if (b->op == OP_MSTACK) return buf_single(b->src[i]);
  return (SchedBuf){b, i};
}

/* the `_device_num` variable of an AST (ast.variables()), or NULL */
static UOp *find_device_num(UOp *ast) {
  UList t = uop_toposort(ast, NULL, NULL);
  UOp *best = NULL;
  for (int i = 0; i < t.n; i++) {
    UOp *u = t.v[i];
    UOp *cand[64]; int nc = 0;
    if (u->op == OP_DEFINE_VAR) cand[nc++] = u;
    else if (u->op == OP_BIND && u->src[0]->op == OP_DEFINE_VAR) cand[nc++] = u->src[0];
    else if (u->op == OP_VIEW && u->arg->kind == V_ST) {
      nc = st_vars(u->arg->st, cand, 64);
      for (int j = 0; j < nc; j++) if (cand[j]->op == OP_BIND) cand[j] = cand[j]->src[0];
    }
    for (int j = 0; j < nc; j++) {
      UOp *v = cand[j];
      if (v->op != OP_DEFINE_VAR || v->arg->kind != V_TUPLE || !v->arg->n || v->arg->items[0]->kind != V_STR) continue;
      if (strcmp(v->arg->items[0]->s, "_device_num") != 0) continue;
      if (!best || v_cmp(v->arg, best->arg) < 0) best = v;
    }
  }
  return best;
}

/* ---- FIFO queue of KERNEL uops ---- */
typedef struct KQueue { int heur; int head; PtrVec q; } KQueue;
typedef struct KQueues { int n; KQueue qs[4]; } KQueues;
static KQueue *queue_for(KQueues *Q, int h) {
  for (int i = 0; i < Q->n; i++) if (Q->qs[i].heur == h) return &Q->qs[i];
  if (Q->n == 4) tg_fail(TG_EINTERNAL, "too many schedule queues");
  KQueue *q = &Q->qs[Q->n++];
  q->heur = h; q->head = 0;
  vec_init(&q->q, ga());
  return q;
}
static bool queue_live(const KQueue *q) { return q->head < q->q.n; }

typedef struct KInfo { int in_degree; bool is_kernel; PtrVec children; } KInfo;

static void add_item(PtrVec *items, UOp *k, UOp *ast, int nbufs, SchedBuf *bufs, int nvars, UOp **vars, int64_t *vals,
                     int shard, int nshards) {
  SchedItem *it = arena_alloc(ga(), sizeof *it);
  it->ast = ast; it->kernel = k; it->nbufs = nbufs; it->bufs = bufs;
  it->meta = (MetaList){k->arg->k.nmeta, k->arg->k.meta};
  it->nvars = nvars; it->vars = vars; it->vals = vals;
  it->shard = shard; it->nshards = nshards;
  vec_push(items, it);
}

/* create_schedule: kernelize sink, then create_schedule_with_vars' BFS order, one item per shard */
Schedule *create_schedule(UOp *sink) {
  /* the passes make several nodes per node they read: size the intern table for that once (a big
   * graph's table grows as it needs, so no more than 256K entries ahead). A graph read from a file
   * has this room already (graph_read_mem sizes it from the file); this serves graphs built in
   * memory and files with more rows than their size suggests */
  double t0 = tg_now_ms();
  uop_reserve(uctx->uops.n * 7, (size_t)1 << 18);
  /* and the View and ShapeTracker tables for the ones the passes add (the bench graphs add up to
   * 0.9x and 2.4x their own): the tables start small (16 slots), for small graphs' memory */
  iset_reserve_more(&uctx->views, uctx->views.n, (size_t)1 << 16);
  iset_reserve_more(&uctx->sts, uctx->sts.n * 2, (size_t)1 << 16);
  Schedule *S = arena_alloc(ga(), sizeof *S);
  S->kernelize_map = get_kernelize_map(sink);
  S->kernelize_ms = tg_now_ms() - t0;
  S->warning = uctx->sched_warning;
  /* the sink tensor.py builds after kernelize: the mapped uop of every source */
  UOp **ss = arena_alloc(ga(), sizeof(UOp *) * (size_t)(sink->nsrc + 1));
  for (int i = 0; i < sink->nsrc; i++) {
    UOp *m = rmap_get(&S->kernelize_map, sink->src[i]);
    ss[i] = m ? m : sink->src[i];
  }
  UOp *sched_sink = S->sched_sink = uop_sink(sink->nsrc, ss, sink->arg);

  // construct the KERNEL children graph based on assigns
  UMap kinfo; /* KERNEL -> KInfo*, in in_degree insertion order */
  UMap var_vals; /* DEFINE_VAR -> CONST value uop */
  umap_init(&kinfo, ga());
  umap_init(&var_vals, ga());
  PtrVec korder; /* in_degree's keys, in insertion order */
  vec_init(&korder, ga());
  UList topo = uop_toposort(sched_sink, NULL, NULL);
  for (int i = 0; i < topo.n; i++) {
    UOp *u = topo.v[i];
    if (u->op != OP_ASSIGN) continue; // anything that's not an ASSIGN doesn't write a kernel, so we can skip
    UOp *k = u->src[1];
    /* a graph that assigns something else (a KERNEL row folded away, say) is not schedulable;
     * tinygrad fails on it too (on the non-KERNEL's sources) */
    if (k->op != OP_KERNEL) tg_fail(TG_EINPUT, "an ASSIGN of a %s, not a KERNEL, reaches the schedule (input to kernel must be ASSIGN or BUFFER)", op_names[k->op]);
    KInfo *ki = umap_getp(&kinfo, k);
    if (!ki) { ki = arena_alloc(ga(), sizeof *ki); vec_init(&ki->children, ga()); umap_put(&kinfo, k, ki); }
    if (!ki->is_kernel) { ki->is_kernel = true; vec_push(&korder, k); }
    for (int j = 0; j < k->nsrc; j++) {
      UOp *s = k->src[j];
      if (s->op == OP_ASSIGN) {
        KInfo *p = umap_getp(&kinfo, s->src[1]);
        if (!p) { p = arena_alloc(ga(), sizeof *p); vec_init(&p->children, ga()); umap_put(&kinfo, s->src[1], p); }
        vec_push(&p->children, k);
        ki->in_degree++;
      } else if (s->op == OP_MSELECT || s->op == OP_MSTACK) {
        for (int t = 0; t < s->nsrc; t++) {
          UOp *x = s->src[t];
          if (x->op == OP_MSELECT) x = x->src[0];
          if (x->op == OP_BUFFER) continue;
          if (x->op != OP_ASSIGN) tg_fail(TG_EINPUT, "input to kernel must be ASSIGN or BUFFER, not %s", op_names[x->op]);
          KInfo *p = umap_getp(&kinfo, x->src[1]);
          if (!p) { p = arena_alloc(ga(), sizeof *p); vec_init(&p->children, ga()); umap_put(&kinfo, x->src[1], p); }
          vec_push(&p->children, k);
          ki->in_degree++;
        }
      } else if (s->op == OP_BUFFER) {
        // a BUFFER is already realized, nothing to do here
      } else if (s->op == OP_BIND) {
        UOp *var = s->src[0], *val = s->src[1];
        UOp *old = umap_get(&var_vals, var);
        if (old && old->arg != val->arg)
          tg_fail(TG_EINPUT, "bind mismatch on %s, %s != %s", value_repr(ga(), var->arg), value_repr(ga(), old->arg), value_repr(ga(), val->arg));
        umap_put(&var_vals, var, val);
      } else {
        tg_fail(TG_EINPUT, "input to kernel must be ASSIGN or BUFFER, not %s", op_names[s->op]);
      }
    }
  }

  // linearize KERNEL UOps into ScheduleItems in BFS order
  KQueues Q = {0};
  for (int i = 0; i < korder.n; i++) {
    UOp *k = korder.v[i];
    if (((KInfo *)umap_get(&kinfo, k))->in_degree == 0) vec_push(&queue_for(&Q, heuristic(k))->q, k);
  }
  PtrVec items;
  vec_init(&items, ga());
  int last_heuristic = 0;
  KQueue *last_queue = NULL;
  for (;;) {
    if (!last_queue || !queue_live(last_queue)) {
      last_queue = NULL;
      int bestd = 0;
      for (int i = 0; i < Q.n; i++) {
        if (!queue_live(&Q.qs[i])) continue;
        int d = Q.qs[i].heur - last_heuristic;
        if (d < 0) d = -d;
        if (!last_queue || d < bestd) { last_queue = &Q.qs[i]; bestd = d; }
      }
      if (!last_queue) break;
      last_heuristic = last_queue->heur;
    }
    UOp *k = last_queue->q.v[last_queue->head++];
    UOp *ast = k->arg->k.ast;
    /* the kernel's buffers and bound variables */
    int nb = 0, nv = 0;
    UOp **bu = arena_alloc(ga(), sizeof(UOp *) * (size_t)(k->nsrc + 1));
    UOp **vars = arena_alloc(ga(), sizeof(UOp *) * (size_t)(k->nsrc + 2));
    int64_t *vals = arena_alloc(ga(), sizeof(int64_t) * (size_t)(k->nsrc + 2));
    bool any_multi = false, all_multi = true;
    for (int i = 0; i < k->nsrc; i++) {
      UOp *s = k->src[i];
      if (s->op == OP_BIND) {
        vars[nv] = s->src[0];
        vals[nv++] = s->src[1]->arg->kind == V_BOOL ? s->src[1]->arg->b : s->src[1]->arg->i;
        continue;
      }
      UOp *b = u_buf_uop(s);
      bu[nb++] = b;
      if (buf_is_multi(b)) any_multi = true; else all_multi = false;
    }
    if (any_multi) {
      if (!all_multi) tg_fail(TG_EINPUT, "kernel must all be multibuffer");
      UOp *dnum = find_device_num(ast);
      int nsh = buf_nshards(bu[0]);
      for (int i = 1; i < nb; i++) if (buf_nshards(bu[i]) < nsh) nsh = buf_nshards(bu[i]);
      for (int sh = 0; sh < nsh; sh++) {
        SchedBuf *bufs = arena_alloc(ga(), sizeof(SchedBuf) * (size_t)(nb + 1));
        for (int i = 0; i < nb; i++) bufs[i] = buf_shard(bu[i], sh);
        UOp **iv = vars; int64_t *ivals = vals; int inv = nv;
        if (dnum) {
          iv = arena_alloc(ga(), sizeof(UOp *) * (size_t)(nv + 1));
          ivals = arena_alloc(ga(), sizeof(int64_t) * (size_t)(nv + 1));
          memcpy(iv, vars, sizeof(UOp *) * (size_t)nv);
          memcpy(ivals, vals, sizeof(int64_t) * (size_t)nv);
          iv[inv] = dnum; ivals[inv++] = sh;
        }
        add_item(&items, k, ast, nb, bufs, inv, iv, ivals, sh, nsh);
      }
    } else {
      // ONE -> ONE
      SchedBuf *bufs = arena_alloc(ga(), sizeof(SchedBuf) * (size_t)(nb + 1));
      for (int i = 0; i < nb; i++) bufs[i] = buf_single(bu[i]);
      add_item(&items, k, ast, nb, bufs, nv, vars, vals, -1, 0);
    }
    KInfo *ki = umap_getp(&kinfo, k);
    for (int i = 0; ki && i < ki->children.n; i++) {
      UOp *x = ki->children.v[i];
      KInfo *xi = umap_getp(&kinfo, x);
      if (--xi->in_degree == 0) vec_push(&queue_for(&Q, heuristic(x))->q, x);
    }
  }

  S->nitems = items.n;
  S->items = arena_alloc(ga(), sizeof(SchedItem) * (size_t)(items.n + 1));
  for (int i = 0; i < items.n; i++) {
    SchedItem *it = items.v[i];
    S->items[i] = *it;
    if (it->shard > 0) continue;
    if (it->ast->op == OP_SINK) S->nkernels++;
    else if (it->ast->op == OP_COPY) S->ncopies++;
    else if (it->ast->op == OP_BUFFER_VIEW) S->nviews++;
  }
  return S;
}
