/* explain.c: `tgc explain`. The graph is scheduled once with sched_why set, so group_realizes and
 * friends record, for every tensor uop they realize, the rule that forced it (first reason wins)
 * and the merge_views map. A realized uop r belongs to kernel K when the kernelize map sends it to
 * ASSIGN(BUFFER, K) (through views). K's region is what a walk back from its realized uops reaches
 * before it meets another kernel's output or an input buffer; the input rows whose merge_views
 * image lies in the region are K's ops (a recomputed elementwise op shows in each kernel using it).
 * A realized uop that no input row maps to was made by the scheduler: a second-phase reduce
 * from split_reduceop. A kernel with no recorded reason comes from limit_bufs' CONTIGUOUS. */
#include "explain.h"
#include <cjson/cJSON.h>
#include <stdint.h>
#include <string.h>

const char *const explain_why_names[WHY_N] = {
  "unknown", "sink", "contiguous", "assign", "copy", "buffer_view", "copy_source", "unsafe_pad", "expand",
  "second_reduce", "noncontiguous", "other_reduce", "children", "assign_target", "forced", "limit_bufs",
  "split_reduceop",
};
const char *const explain_why_text[WHY_N] = {
  "no recorded reason",
  "a SINK uses it (do_realize: always realize SINK parents)",
  "it is a CONTIGUOUS (do_realize)",
  "it is an ASSIGN (do_realize)",
  "it is a COPY (do_realize)",
  "it is a BUFFER_VIEW (do_realize)",
  "a COPY/MSELECT/MSTACK reads it (do_realize: realize parents of COPY)",
  "a masked view follows an unsafe pad op (do_realize: realize_before_view)",
  "a view expands it (do_realize: realize before expand)",
  "a child is another reduce (group_realizes: max one reduceop per kernel)",
  "a child reads it through a non-contiguous or resized view (group_realizes: can only fuse contiguous)",
  "a realized child already fuses another reduce (group_realizes: max one reduceop per kernel)",
  "it reaches several realized outputs (group_realizes: forced_realize, can only have one output)",
  "the kernel would read another assign's target (group_realizes: can only fuse assign if no other target)",
  "it has no realized child to fuse with (group_realizes: forced_realize)",
  "a binary/ternary op reads too many buffers (finalize_contiguous: limit_bufs)",
  "the reduce was split in two (kernelize_sym: split_reduceop)",
};


typedef struct Reason { UOp *u; int row; SchedWhyCode why; } Reason;
typedef struct KInfo {
  const SchedItem *it; int index;
  PtrVec reasons;   /* Reason* */
  UMap region;      /* merged-graph uops computed in this kernel */
  PtrVec outputs;   /* sink indexes, as (void *)(intptr_t)(i + 1) */
} KInfo;

/* the KERNEL whose output u becomes (kernelize map -> ASSIGN(BUFFER, KERNEL), views aside). A map
 * entry for a uop the later passes no longer reach keeps an older KERNEL, so a KERNEL that is not
 * a schedule item is found again by its output buffer (KERNEL src[0]) in byk. */
static const UMap *byk; /* output buffer -> the first item's KERNEL writing it; set by explain_graph */
static UOp *kernel_of(const RMap *fm, UOp *u) {
  UOp *y = rmap_get(fm, u);
  if (!y) return NULL;
  UOp *b = u_base(y);
  if (b->op != OP_ASSIGN || b->nsrc < 2 || b->src[1]->op != OP_KERNEL) return NULL;
  UOp *k = b->src[1];
  if (byk && !umap_has(byk, k) && k->nsrc && umap_has(byk, k->src[0])) return umap_get(byk, k->src[0]);
  return k;
}
static bool is_input_buffer(const RMap *fm, UOp *u) {
  UOp *y = rmap_get(fm, u);
  return u->op == OP_BUFFER || u->op == OP_DEVICE || u->op == OP_UNIQUE || (y && u_base(y)->op == OP_BUFFER);
}
static bool has_reduce(UOp *ast) { return uop_has_op(ast, OP_REDUCE_AXIS, OP_REDUCE_AXIS); }
static const char *meta_name(const UOp *u) { return u->meta && u->meta[0] ? u->meta[0]->name : NULL; }

/* the region walk from one realized uop of kernel k (explicit stack, no recursion) */
static void walk_region(KInfo *ki, const RMap *fm, UOp *start) {
  PtrVec st;
  vec_init(&st, ga());
  vec_push(&st, start);
  while (st.n) {
    UOp *u = vec_pop(&st);
    if (umap_has(&ki->region, u)) continue;
    if (u != start) {
      UOp *k = kernel_of(fm, u);
      if ((k && k != ki->it->kernel) || is_input_buffer(fm, u)) continue;
    }
    umap_put(&ki->region, u, NULL);
    for (int i = 0; i < u->nsrc; i++) vec_push(&st, u->src[i]);
  }
}

/* input row u is one of k's ops: its merge_views image (or that view's base) is in k's region */
static bool in_kernel(const KInfo *ki, const UMap *mv, UOp *u) {
  UOp *m = u ? umap_get(mv, u) : NULL;
  if (!m || u->op == OP_SINK || u->op == OP_BUFFER || u->op == OP_DEVICE || u->op == OP_UNIQUE) return false;
  if (m->op == OP_MULTI && m->nsrc) m = m->src[0]; /* a sharded tensor: its per-shard uop */
  return umap_has(&ki->region, m) || (m->op == OP_VIEW && umap_has(&ki->region, u_base(m)));
}

char *explain_graph(Arena *a, Graph *g, bool json) {
  SchedWhy w;
  memset(&w, 0, sizeof w);
  umap_init(&w.why, ga());
  umap_init(&w.mv, ga());
  sched_why = &w;
  Schedule *s;
  TgTry t;
  if (TG_TRY(t)) {
    s = create_schedule(g->sink);
    tg_try_end(&t);
  } else {
    sched_why = NULL;
    tg_fail(tg_last_error.code, "%s", tg_last_error.msg);
  }
  sched_why = NULL;
  const RMap *fm = &s->kernelize_map;

  /* kernels: the items of shard <= 0 */
  UMap kmap; /* KERNEL -> KInfo* */
  umap_init(&kmap, ga());
  KInfo *ks = arena_alloc(ga(), sizeof *ks * (size_t)(s->nitems + 1));
  int nk = 0;
  for (int i = 0; i < s->nitems; i++) {
    if (s->items[i].shard > 0) continue;
    KInfo *ki = &ks[nk];
    ki->it = &s->items[i];
    ki->index = nk++;
    vec_init(&ki->reasons, ga());
    vec_init(&ki->outputs, ga());
    umap_init(&ki->region, ga());
    umap_put(&kmap, ki->it->kernel, ki);
  }
  UMap bymap; /* KERNEL -> itself and output buffer -> first KERNEL */
  umap_init(&bymap, ga());
  for (int i = 0; i < nk; i++) {
    UOp *k = ks[i].it->kernel;
    umap_put(&bymap, k, k);
    if (k->nsrc && !umap_has(&bymap, k->src[0])) umap_put(&bymap, k->src[0], k);
  }
  byk = &bymap;
  /* merged-graph uop -> the first input row that maps to it */
  UMap rowof;
  umap_init(&rowof, ga());
  for (int i = 0; i < g->nrows; i++) {
    UOp *m = g->rows[i] ? umap_get(&w.mv, g->rows[i]) : NULL;
    if (m && m->op == OP_MULTI && m->nsrc) m = m->src[0]; /* a sharded tensor: its per-shard uop */
    if (m && !umap_has(&rowof, m)) umap_put(&rowof, m, (void *)(intptr_t)(i + 1));
    if (m && m->op == OP_VIEW && !umap_has(&rowof, u_base(m))) umap_put(&rowof, u_base(m), (void *)(intptr_t)(i + 1));
  }
  /* reasons, in the order the scheduler decided */
  MAP_EACH(&w.why, e) {
    UOp *u = e->key, *k = kernel_of(fm, u);
    KInfo *ki = k ? umap_getp(&kmap, k) : NULL;
    if (!ki) continue;
    Reason *r = arena_alloc(ga(), sizeof *r);
    r->u = u;
    r->row = (int)(intptr_t)umap_getp(&rowof, u) - 1;
    r->why = (SchedWhyCode)(intptr_t)e->val;
    if (r->row < 0 && u->op == OP_REDUCE_AXIS && w.nsplit && r->why != WHY_SPLIT_REDUCEOP) r->why = WHY_SPLIT_REDUCEOP;
    vec_push(&ki->reasons, r);
    walk_region(ki, fm, u);
  }
  for (int i = 0; i < nk; i++) {
    if (ks[i].reasons.n) continue;
    Reason *r = arena_alloc(ga(), sizeof *r);
    r->row = -1;
    r->why = w.nlimit_bufs ? WHY_LIMIT_BUFS : (w.nsplit && has_reduce(ks[i].it->ast)) ? WHY_SPLIT_REDUCEOP : WHY_NONE;
    vec_push(&ks[i].reasons, r);
  }
  for (int i = 0; i < g->sink->nsrc; i++) {
    UOp *k = kernel_of(fm, g->sink->src[i]);
    KInfo *ki = k ? umap_getp(&kmap, k) : NULL;
    if (ki) vec_push(&ki->outputs, (void *)(intptr_t)(i + 1));
  }

  byk = NULL;
  if (json) {
    cJSON *o = cJSON_CreateObject(), *items = cJSON_CreateArray();
    cJSON_AddStringToObject(o, "graph", g->path ? g->path : "-");
    cJSON_AddItemToObject(o, "kernels", json_int(s->nkernels));
    for (int i = 0; i < nk; i++) {
      KInfo *ki = &ks[i];
      cJSON *it = cJSON_CreateObject(), *meta = cJSON_CreateArray(), *outs = cJSON_CreateArray(),
            *rs = cJSON_CreateArray(), *ops = cJSON_CreateArray();
      cJSON_AddItemToObject(it, "index", json_int(i));
      cJSON_AddStringToObject(it, "op", op_names[ki->it->ast->op]);
      cJSON_AddItemToObject(it, "bufs", json_int(ki->it->nbufs));
      for (int m = 0; m < ki->it->meta.n; m++) cJSON_AddItemToArray(meta, cJSON_CreateString(ki->it->meta.m[m]->name));
      cJSON_AddItemToObject(it, "metadata", meta);
      for (int j = 0; j < ki->outputs.n; j++) cJSON_AddItemToArray(outs, json_int((intptr_t)ki->outputs.v[j] - 1));
      cJSON_AddItemToObject(it, "outputs", outs);
      for (int j = 0; j < ki->reasons.n; j++) {
        Reason *r = ki->reasons.v[j];
        cJSON *ro = cJSON_CreateObject();
        cJSON_AddStringToObject(ro, "why", explain_why_names[r->why]);
        if (r->row >= 0) cJSON_AddItemToObject(ro, "row", json_int(r->row));
        else cJSON_AddNullToObject(ro, "row");
        if (r->u) cJSON_AddStringToObject(ro, "op", op_names[r->u->op]);
        cJSON_AddStringToObject(ro, "text", explain_why_text[r->why]);
        cJSON_AddItemToArray(rs, ro);
      }
      cJSON_AddItemToObject(it, "reasons", rs);
      for (int r = 0; r < g->nrows; r++) {
        UOp *u = g->rows[r];
        if (!in_kernel(ki, &w.mv, u)) continue;
        cJSON *po = cJSON_CreateObject();
        cJSON_AddItemToObject(po, "row", json_int(r));
        cJSON_AddStringToObject(po, "op", op_names[u->op]);
        if (meta_name(u)) cJSON_AddStringToObject(po, "name", meta_name(u));
        else cJSON_AddNullToObject(po, "name");
        cJSON_AddItemToArray(ops, po);
      }
      cJSON_AddItemToObject(it, "ops", ops);
      cJSON_AddItemToArray(items, it);
    }
    cJSON_AddItemToObject(o, "items", items);
    return json_print_free(a, o);
  }

  SB b = {a, NULL, 0, 0};
  sb_str(&b, arena_printf(ga(), "%s: %d kernels (%d copies, %d views)\n", g->path ? g->path : "-", s->nkernels, s->ncopies, s->nviews));
  for (int i = 0; i < nk; i++) {
    KInfo *ki = &ks[i];
    sb_str(&b, arena_printf(ga(), "kernel %d: %s, %d buffers", i, op_names[ki->it->ast->op], ki->it->nbufs));
    for (int m = 0; m < ki->it->meta.n; m++) sb_str(&b, arena_printf(ga(), "%s%s", m ? ", " : ", metadata: ", ki->it->meta.m[m]->name));
    sb_str(&b, "\n");
    for (int j = 0; j < ki->reasons.n; j++) {
      Reason *r = ki->reasons.v[j];
      sb_str(&b, arena_printf(ga(), "  %s %s: %s", j ? "also " : "why  ", explain_why_names[r->why], explain_why_text[r->why]));
      if (r->row >= 0) sb_str(&b, arena_printf(ga(), " [row %d %s]", r->row, op_names[r->u->op]));
      else if (r->u) sb_str(&b, arena_printf(ga(), " [new %s]", op_names[r->u->op]));
      sb_str(&b, "\n");
    }
    if (ki->outputs.n) {
      sb_str(&b, "  outputs:");
      for (int j = 0; j < ki->outputs.n; j++) sb_str(&b, arena_printf(ga(), " sink[%d]", (int)((intptr_t)ki->outputs.v[j] - 1)));
      sb_str(&b, "\n");
    }
    sb_str(&b, "  ops:");
    int nops = 0;
    for (int r = 0; r < g->nrows; r++) {
      UOp *u = g->rows[r];
      if (!in_kernel(ki, &w.mv, u)) continue;
      const char *nm = meta_name(u);
      sb_str(&b, arena_printf(ga(), "%s %d %s%s%s", nops++ ? "," : "", r, op_names[u->op], nm ? " " : "", nm ? nm : ""));
    }
    sb_str(&b, nops ? "\n" : " (none from the input graph)\n");
  }
  return b.s ? b.s : arena_printf(a, "%s", "");
}
