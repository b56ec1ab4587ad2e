/* graph_write.c: UOp rows out (FORMATS.md §1 row format): json_uop_rows and graph_write.
 *
 * Rows come in the order of tinygrad's toposort (an explicit stack, parents first, srcs in order),
 * extended so that UOps named inside an arg or tag (symbolic sizes in a ShapeTracker, a Kernel's
 * ast) are visited after the srcs and before the node itself: every id a row mentions is an
 * earlier row. Numbers are written as raw JSON text so they read back identically: ints as
 * integers (all 64 bits), floats as Python's repr (always with '.' or an exponent), non-finite
 * floats as {"float": "inf"}. */
#include "graph.h"
#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static cJSON *jraw(const char *s) {
  cJSON *j = cJSON_CreateRaw(s);
  if (!j) tg_fail(TG_EINTERNAL, "out of memory");
  return j;
}
cJSON *json_int(int64_t i);
cJSON *json_int(int64_t i) {
  char t[32];
  snprintf(t, sizeof t, "%lld", (long long)i);
  return jraw(t);
}
static cJSON *json_float(double f) {
  if (!isfinite(f)) {
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "float", isnan(f) ? "nan" : f < 0 ? "-inf" : "inf");
    return o;
  }
  char t[64];
  float_repr(t, sizeof t, f);
  return jraw(t);
}

/* ids[u->id]: u's row, or -1 (every node in the table is older than the call: id < cap) */
typedef struct WCtx { int32_t *ids; uint32_t cap; } WCtx;
static int64_t wid(WCtx *W, UOp *u) {
  if (u->id >= W->cap || W->ids[u->id] < 0) tg_fail(TG_EINTERNAL, "json_uop_rows: a UOp in an arg is not in the table");
  return W->ids[u->id];
}
static cJSON *json_sint(WCtx *W, Sint s) {
  if (!s.u) return json_int(s.c);
  cJSON *o = cJSON_CreateObject();
  cJSON_AddItemToObject(o, "uop", json_int(wid(W, s.u)));
  return o;
}
static cJSON *json_sints(WCtx *W, int n, const Sint *xs) {
  cJSON *a = cJSON_CreateArray();
  for (int i = 0; i < n; i++) cJSON_AddItemToArray(a, json_sint(W, xs[i]));
  return a;
}
static cJSON *json_metas(int n, const Meta *const *m) {
  cJSON *a = cJSON_CreateArray();
  for (int i = 0; i < n; i++) {
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "name", m[i]->name);
    cJSON_AddStringToObject(o, "caller", m[i]->caller);
    cJSON_AddBoolToObject(o, "backward", m[i]->backward);
    cJSON_AddItemToArray(a, o);
  }
  return a;
}
static cJSON *json_value(WCtx *W, const Value *v) {
  static const char *const asn[] = {"GLOBAL", "LOCAL", "REG"};
  cJSON *o;
  switch (v->kind) {
  case V_NONE: return cJSON_CreateNull();
  case V_BOOL: return cJSON_CreateBool(v->b);
  case V_INT:
    if (v->n == 1) { char t[32]; snprintf(t, sizeof t, "%llu", (unsigned long long)(uint64_t)v->i); return jraw(t); }
    return json_int(v->i);
  case V_FLOAT: return json_float(v->f);
  case V_STR: return cJSON_CreateString(v->s);
  case V_TUPLE:
    o = cJSON_CreateArray();
    for (int i = 0; i < v->n; i++) cJSON_AddItemToArray(o, json_value(W, v->items[i]));
    return o;
  case V_OPS: o = cJSON_CreateObject(); cJSON_AddStringToObject(o, "ops", op_names[v->op]); return o;
  case V_UOP: o = cJSON_CreateObject(); cJSON_AddItemToObject(o, "uop", json_int(wid(W, v->u))); return o;
  case V_ST: {
    cJSON *views = cJSON_CreateArray();
    for (int i = 0; i < v->st->nviews; i++) {
      const View *w = v->st->views[i];
      cJSON *vo = cJSON_CreateObject();
      cJSON_AddItemToObject(vo, "shape", json_sints(W, w->ndim, w->shape));
      cJSON_AddItemToObject(vo, "strides", json_sints(W, w->ndim, w->strides));
      cJSON_AddItemToObject(vo, "offset", json_sint(W, w->offset));
      if (w->mask) {
        cJSON *m = cJSON_CreateArray();
        for (int d = 0; d < w->ndim; d++) cJSON_AddItemToArray(m, json_sints(W, 2, w->mask + 2 * d));
        cJSON_AddItemToObject(vo, "mask", m);
      } else cJSON_AddNullToObject(vo, "mask");
      cJSON_AddBoolToObject(vo, "contiguous", w->contiguous);
      cJSON_AddItemToArray(views, vo);
    }
    o = cJSON_CreateObject();
    cJSON_AddItemToObject(o, "st", views);
    return o;
  }
  case V_KERNEL: {
    cJSON *k = cJSON_CreateObject();
    cJSON_AddItemToObject(k, "ast", json_int(wid(W, v->k.ast)));
    cJSON_AddItemToObject(k, "metadata", json_metas(v->k.nmeta, v->k.meta));
    o = cJSON_CreateObject();
    cJSON_AddItemToObject(o, "kernel", k);
    return o;
  }
  case V_DTYPE: o = cJSON_CreateObject(); cJSON_AddStringToObject(o, "dtype", dt_repr(&uctx->scratch, v->dt)); return o;
  case V_ADDRSPACE: o = cJSON_CreateObject(); cJSON_AddStringToObject(o, "addrspace", asn[v->as]); return o;
  }
  return cJSON_CreateNull();
}

/* UOps mentioned inside a value, in the order the JSON names them */
static void value_refs(const Value *v, PtrVec *out) {
  switch (v->kind) {
  case V_TUPLE: for (int i = 0; i < v->n; i++) value_refs(v->items[i], out); break;
  case V_UOP: vec_push(out, v->u); break;
  case V_KERNEL: vec_push(out, v->k.ast); break;
  case V_ST:
    for (int i = 0; i < v->st->nviews; i++) {
      const View *w = v->st->views[i];
      for (int d = 0; d < w->ndim; d++) if (w->shape[d].u) vec_push(out, w->shape[d].u);
      for (int d = 0; d < w->ndim; d++) if (w->strides[d].u) vec_push(out, w->strides[d].u);
      if (w->offset.u) vec_push(out, w->offset.u);
      if (w->mask) for (int d = 0; d < 2 * w->ndim; d++) if (w->mask[d].u) vec_push(out, w->mask[d].u);
    }
    break;
  default: break;
  }
}
static bool has_refs(const Value *v) {
  return v->kind == V_TUPLE || v->kind == V_UOP || v->kind == V_KERNEL || v->kind == V_ST;
}

/* the table order: toposort with arg/tag references as extra parents after the srcs */
static UList table_order(int nroots, UOp *const *roots) {
  Arena *sa = &uctx->scratch;
  Map seen;
  map_init(&seen, sa);
  typedef struct { UOp *u; bool visited; } Ent;
  size_t cap = 256, n = 0;
  Ent *st = malloc(cap * sizeof *st);
  if (!st) tg_fail(TG_EINTERNAL, "out of memory");
  PtrVec out, refs;
  vec_init(&out, ga());
  vec_init(&refs, sa);
  for (int r = nroots - 1; r >= 0; r--) {
    if (n == cap) { cap *= 2; Ent *ns = realloc(st, cap * sizeof *st); if (!ns) { free(st); tg_fail(TG_EINTERNAL, "out of memory"); } st = ns; }
    st[n++] = (Ent){roots[r], false};
  }
  while (n) {
    Ent e = st[--n];
    if (map_has(&seen, e.u, uop_h(e.u))) continue;
    if (e.visited) { map_put(&seen, e.u, uop_h(e.u), NULL); vec_push(&out, e.u); continue; }
    refs.n = 0;
    for (int i = 0; i < e.u->nsrc; i++) vec_push(&refs, e.u->src[i]);
    if (has_refs(e.u->arg)) value_refs(e.u->arg, &refs);
    if (has_refs(e.u->tag)) value_refs(e.u->tag, &refs);
    if (n + 1 + (size_t)refs.n > cap) {
      while (n + 1 + (size_t)refs.n > cap) cap *= 2;
      Ent *ns = realloc(st, cap * sizeof *st);
      if (!ns) { free(st); tg_fail(TG_EINTERNAL, "out of memory"); }
      st = ns;
    }
    st[n++] = (Ent){e.u, true};
    for (int i = refs.n - 1; i >= 0; i--) st[n++] = (Ent){refs.v[i], false};
  }
  free(st);
  return (UList){out.n, (UOp **)out.v};
}

/* Rows are printed one at a time into one text (a row's cJSON tree lives only while it prints),
 * so the table never holds a tree for every row: the result is the text "[row,...]". */
static cJSON *uop_row(WCtx *W, UOp *u, int i) {
  cJSON *r = cJSON_CreateObject();
  cJSON_AddItemToObject(r, "id", json_int(i));
  cJSON_AddStringToObject(r, "op", op_names[u->op]);
  cJSON_AddStringToObject(r, "dtype", dt_repr(&uctx->scratch, u->dtype));
  if (u->nsrc) {
    cJSON *s = cJSON_CreateArray();
    for (int k = 0; k < u->nsrc; k++) cJSON_AddItemToArray(s, json_int(wid(W, u->src[k])));
    cJSON_AddItemToObject(r, "src", s);
  }
  if (!v_is_none(u->arg)) cJSON_AddItemToObject(r, "arg", json_value(W, u->arg));
  if (!v_is_none(u->tag)) cJSON_AddItemToObject(r, "tag", json_value(W, u->tag));
  MetaList ml = uop_meta(u);
  if (ml.n) cJSON_AddItemToObject(r, "meta", json_metas(ml.n, ml.m));
  return r;
}
/* the rows into b; any failure frees the row being printed (the caller frees b) */
static void uop_rows(BigBuf *b, WCtx *W, UList order) {
  bigbuf_put(b, "[", 1);
  for (int i = 0; i < order.n; i++) {
    UOp *u = order.v[i];
    W->ids[u->id] = i;
    ArenaMark rm = arena_mark(&uctx->scratch);
    cJSON *volatile r = NULL;
    TgTry t;
    if (!TG_TRY(t)) {
      cJSON_Delete(r);
      tg_rethrow();
    }
    r = uop_row(W, u, i);
    char *txt = cJSON_PrintUnformatted(r);
    cJSON_Delete(r);
    r = NULL;
    if (!txt) tg_fail(TG_EINTERNAL, "out of memory printing JSON");
    tg_try_end(&t);
    if (i) bigbuf_put(b, ",", 1);
    bigbuf_put(b, txt, strlen(txt));
    free(txt);
    arena_pop(&uctx->scratch, rm); /* the row's dtype string */
  }
  bigbuf_put(b, "]", 1);
}
BigBuf json_uop_rows(int nroots, UOp *const *roots, int *root_ids) {
  ArenaMark mk = arena_mark(&uctx->scratch);
  UList order = table_order(nroots, roots);
  WCtx W = {arena_alloc_raw(&uctx->scratch, sizeof(int32_t) * (size_t)uctx->next_id), uctx->next_id};
  memset(W.ids, 0xff, sizeof(int32_t) * (size_t)W.cap);
  BigBuf b = {0};
  TgTry t;
  if (TG_TRY(t)) {
    uop_rows(&b, &W, order);
    tg_try_end(&t);
  } else {
    bigbuf_free(&b);
    tg_rethrow();
  }
  if (root_ids) for (int i = 0; i < nroots; i++) root_ids[i] = (int)wid(&W, roots[i]);
  arena_pop(&uctx->scratch, mk);
  return b;
}

char *json_print_with_rows(Arena *a, cJSON *head, const char *key, BigBuf rows, const char *tail) {
  char *h = cJSON_PrintUnformatted(head);
  cJSON_Delete(head);
  if (!h) { bigbuf_free(&rows); tg_fail(TG_EINTERNAL, "out of memory printing JSON"); }
  size_t nh = strlen(h), nk = strlen(key), nr = rows.n, nt = strlen(tail);
  if (nh < 2 || h[nh - 1] != '}') { free(h); bigbuf_free(&rows); tg_fail(TG_EINTERNAL, "json_print_with_rows: the head is not an object"); }
  bool empty = nh == 2; /* "{}": no comma before the key */
  /* the rows move up in their own buffer to make room for the head's text before them */
  size_t pre = nh - 1 + (empty ? 0 : 1) + nk + 3, total = pre + nr + nt + 2;
  char *out = bigbuf_reserve(&rows, total + 1), *p = out;
  memmove(out + pre, out, nr);
  memcpy(p, h, nh - 1), p += nh - 1;
  if (!empty) *p++ = ',';
  *p++ = '"', memcpy(p, key, nk), p += nk, *p++ = '"', *p++ = ':';
  p += nr;
  memcpy(p, tail, nt), p += nt;
  *p++ = '}', *p++ = '\n', *p = 0;
  rows.n = total;
  free(h);
  return arena_take(a, &rows);
}

/* the printed document as arena text; frees the cJSON tree */
char *json_print_free(Arena *a, cJSON *doc);
char *json_print_free(Arena *a, cJSON *doc) {
  char *s = cJSON_PrintUnformatted(doc);
  cJSON_Delete(doc);
  if (!s) tg_fail(TG_EINTERNAL, "out of memory printing JSON");
  size_t n = strlen(s);
  char *out = arena_alloc(a, n + 2);
  memcpy(out, s, n);
  out[n] = '\n';
  out[n + 1] = 0;
  free(s);
  return out;
}

char *graph_write(Arena *a, UOp *sink, const Options *opt) {
  cJSON *doc = cJSON_CreateObject();
  cJSON_AddStringToObject(doc, "format", "tgc.graph");
  cJSON_AddItemToObject(doc, "version", json_int(1));
  cJSON_AddStringToObject(doc, "producer", "tgc 0.1.0");
  Options d;
  if (!opt) { options_default(&d); opt = &d; }
  cJSON *o = cJSON_CreateObject();
  cJSON_AddItemToObject(o, "FUSE_ARANGE", json_int(opt->fuse_arange));
  cJSON_AddItemToObject(o, "FUSE_CONV_BW", json_int(opt->fuse_conv_bw));
  cJSON_AddItemToObject(o, "SPLIT_REDUCEOP", json_int(opt->split_reduceop));
  cJSON_AddItemToObject(o, "DONT_REALIZE_EXPAND", json_int(opt->dont_realize_expand));
  cJSON_AddItemToObject(o, "DONT_GROUP_REDUCES", json_int(opt->dont_group_reduces));
  cJSON_AddItemToObject(o, "REDUCEOP_SPLIT_THRESHOLD", json_int(opt->reduceop_split_threshold));
  cJSON_AddItemToObject(o, "REDUCEOP_SPLIT_SIZE", json_int(opt->reduceop_split_size));
  cJSON_AddItemToObject(o, "MAX_KERNEL_BUFFERS", json_int(opt->max_kernel_buffers));
  cJSON_AddItemToObject(o, "RING", json_int(opt->ring));
  cJSON_AddItemToObject(doc, "options", o);
  int sid;
  BigBuf rows = {0};
  TgTry t;
  if (TG_TRY(t)) {
    rows = json_uop_rows(1, &sink, &sid);
    tg_try_end(&t);
  } else {
    cJSON_Delete(doc);
    tg_rethrow();
  }
  char tail[32];
  snprintf(tail, sizeof tail, ",\"sink\":%d", sid);
  return json_print_with_rows(a, doc, "uops", rows, tail);
}
