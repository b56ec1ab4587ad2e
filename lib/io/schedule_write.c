/* schedule_write.c: the schedule file (FORMATS.md §3).
 *
 * One uop table holds every item's AST (json_uop_rows with all ASTs as roots, so shared nodes
 * get one row). Buffers are numbered in the order items first touch them (DEFINE_GLOBAL order
 * within an item). A multi-device KERNEL is one item (its shards are not repeated) and a
 * multi-device BUFFER one entry whose device is the list of its devices. Each
 * sink source's output is found by following the kernelize map and the tensor's base (VIEW,
 * movement ops, MULTI) to its BUFFER, through an ASSIGN when the value was computed into one. */
#include "graph.h"
#include "../schedule/schedule.h"
#include <cjson/cJSON.h>
#include <stdio.h>
#include <string.h>

typedef struct BufKey { UOp *buf; int shard; } BufKey;
typedef struct BufTab { int n, cap; BufKey *v; Map by; } BufTab; /* by: buf -> int[1 + shards] of indexes */

static const Value *buf_device(UOp *buf);
static int buf_index(BufTab *t, UOp *buf, int shard) {
  bool isnew;
  void **slot = map_slot(&t->by, buf, uop_h(buf), &isnew);
  const Value *dev = buf_device(buf);
  int ns = dev && dev->kind == V_TUPLE ? dev->n : 0;
  if (isnew) {
    int *ix = arena_alloc(&uctx->scratch, sizeof(int) * (size_t)(ns + 1));
    for (int i = 0; i <= ns; i++) ix[i] = -1;
    *slot = ix;
  }
  int *ix = *slot;
  if (shard < -1 || shard >= ns) tg_fail(TG_EINTERNAL, "schedule: shard %d of a BUFFER on %d devices", shard, ns);
  if (ix[shard + 1] >= 0) return ix[shard + 1];
  if (t->n == t->cap) {
    int nc = t->cap ? t->cap * 2 : 16;
    BufKey *nv = arena_alloc(&uctx->scratch, sizeof *nv * (size_t)nc);
    if (t->n) memcpy(nv, t->v, sizeof *nv * (size_t)t->n);
    t->v = nv;
    t->cap = nc;
  }
  t->v[t->n] = (BufKey){buf, shard};
  return ix[shard + 1] = t->n++;
}
static const Value *buf_device(UOp *buf) {
  for (int i = 0; i < buf->nsrc; i++) if (buf->src[i]->op == OP_DEVICE) return buf->src[i]->arg;
  return NULL;
}
/* the tensor's base, through VIEW, movement ops and MULTI (UOp.base), then an ASSIGN's target */
static UOp *out_buffer(UOp *u) {
  for (int guard = 0; u && guard < 1 << 20; guard++) {
    if ((u->op == OP_VIEW && u->nsrc) || op_in((Op)u->op, G_MOVEMENT) || u->op == OP_MULTI || u->op == OP_ASSIGN) u = u->src[0];
    else break;
  }
  return u && u->op == OP_BUFFER ? u : NULL;
}

char *schedule_write_json(Arena *a, const Schedule *s, const Graph *g, const char *const *names, const char *const *sources) {
  ArenaMark mk = arena_mark(&uctx->scratch);
  BufTab bt = {0, 0, NULL, {0}};
  map_init(&bt.by, &uctx->scratch);
  UOp **asts = arena_alloc(&uctx->scratch, sizeof(UOp *) * (size_t)(s->nitems + 1));
  int *ast_ids = arena_alloc(&uctx->scratch, sizeof(int) * (size_t)(s->nitems + 1));
  int nk = s->nkernels;
  for (int i = 0; i < s->nitems; i++) asts[i] = s->items[i].ast;
  cJSON *doc = cJSON_CreateObject();
  cJSON_AddStringToObject(doc, "format", "tgc.schedule");
  cJSON_AddItemToObject(doc, "version", json_int(1));
  cJSON_AddStringToObject(doc, "producer", "tgc 0.1.0");
  cJSON_AddItemToObject(doc, "kernels", json_int(nk));
  BigBuf uops = json_uop_rows(s->nitems, asts, ast_ids);
  cJSON *items = cJSON_CreateArray();
  for (int i = 0; i < s->nitems; i++) {
    const SchedItem *it = &s->items[i];
    if (it->shard > 0) continue; /* one item per KERNEL, as in the expect files; shards share it */
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "op", op_names[it->ast->op]);
    if (names && names[i]) cJSON_AddStringToObject(o, "name", names[i]);
    else { char nm[32]; snprintf(nm, sizeof nm, "k%d", i); cJSON_AddStringToObject(o, "name", nm); }
    cJSON_AddItemToObject(o, "ast", json_int(ast_ids[i]));
    cJSON *bufs = cJSON_CreateArray();
    for (int b = 0; b < it->nbufs; b++) cJSON_AddItemToArray(bufs, json_int(buf_index(&bt, it->bufs[b].buf, it->nshards > 1 ? -1 : it->bufs[b].shard)));
    cJSON_AddItemToObject(o, "bufs", bufs);
    cJSON *md = cJSON_CreateArray();
    for (int m = 0; m < it->meta.n; m++) {
      cJSON *mo = cJSON_CreateObject();
      cJSON_AddStringToObject(mo, "name", it->meta.m[m]->name);
      cJSON_AddStringToObject(mo, "caller", it->meta.m[m]->caller);
      cJSON_AddBoolToObject(mo, "backward", it->meta.m[m]->backward);
      cJSON_AddItemToArray(md, mo);
    }
    cJSON_AddItemToObject(o, "metadata", md);
    if (sources && sources[i]) cJSON_AddStringToObject(o, "source", sources[i]);
    cJSON_AddItemToArray(items, o);
  }
  /* outputs: where each sink source ends up (may add buffers no kernel touches) */
  cJSON *outs = cJSON_CreateArray();
  UOp *sink = g ? g->sink : NULL;
  for (int i = 0; sink && i < sink->nsrc; i++) {
    UOp *src = sink->src[i];
    UOp *m = s->kernelize_map.n ? rmap_get(&s->kernelize_map, src) : NULL;
    UOp *buf = out_buffer(m ? m : src);
    cJSON *o = cJSON_CreateObject();
    cJSON_AddItemToObject(o, "index", json_int(i));
    if (!buf) cJSON_AddNullToObject(o, "buffer");
    else {
      cJSON_AddItemToObject(o, "buffer", json_int(buf_index(&bt, buf, -1)));
    }
    SList sh = u_shape(src);
    cJSON *sa = cJSON_CreateArray();
    for (int d = 0; d < sh.n; d++) cJSON_AddItemToArray(sa, sh.v[d].u ? cJSON_CreateNull() : json_int(sh.v[d].c));
    cJSON_AddItemToObject(o, "shape", sa);
    cJSON_AddItemToArray(outs, o);
  }
  Map gids; /* input BUFFER -> its first graph row + 1 */
  map_init(&gids, &uctx->scratch);
  for (int r = 0; g && r < g->nrows; r++)
    if (g->rows[r]->op == OP_BUFFER && !map_has(&gids, g->rows[r], uop_h(g->rows[r]))) map_put(&gids, g->rows[r], uop_h(g->rows[r]), (void *)(intptr_t)(r + 1));
  cJSON *bufs = cJSON_CreateArray();
  for (int i = 0; i < bt.n; i++) {
    UOp *b = bt.v[i].buf;
    cJSON *o = cJSON_CreateObject();
    cJSON_AddItemToObject(o, "index", json_int(i));
    if (b->arg->kind == V_INT) cJSON_AddItemToObject(o, "size", json_int(b->arg->i));
    else cJSON_AddNullToObject(o, "size");
    cJSON_AddStringToObject(o, "dtype", dt_repr(&uctx->scratch, b->dtype));
    const Value *dev = buf_device(b);
    if (dev && dev->kind == V_STR) cJSON_AddStringToObject(o, "device", dev->s);
    else if (dev && dev->kind == V_TUPLE && bt.v[i].shard >= 0 && bt.v[i].shard < dev->n && dev->items[bt.v[i].shard]->kind == V_STR)
      cJSON_AddStringToObject(o, "device", dev->items[bt.v[i].shard]->s);
    else if (dev && dev->kind == V_TUPLE) {
      cJSON *arr = cJSON_CreateArray();
      for (int k = 0; k < dev->n; k++) cJSON_AddItemToArray(arr, cJSON_CreateString(dev->items[k]->kind == V_STR ? dev->items[k]->s : ""));
      cJSON_AddItemToObject(o, "device", arr);
    } else cJSON_AddNullToObject(o, "device");
    void *gv = map_get(&gids, b, uop_h(b), NULL);
    int gid = gv ? (int)(intptr_t)gv - 1 : -1;
    if (gid >= 0) cJSON_AddItemToObject(o, "graph_id", json_int(gid));
    else cJSON_AddNullToObject(o, "graph_id");
    if (bt.v[i].shard >= 0) cJSON_AddItemToObject(o, "shard", json_int(bt.v[i].shard));
    cJSON_AddItemToArray(bufs, o);
  }
  cJSON_AddItemToObject(doc, "items", items);
  cJSON_AddItemToObject(doc, "buffers", bufs);
  cJSON_AddItemToObject(doc, "outputs", outs);
  arena_pop(&uctx->scratch, mk);
  return json_print_with_rows(a, doc, "uops", uops, "");
}
