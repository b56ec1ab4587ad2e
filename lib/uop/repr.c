/* repr.c: tinygrad's printing. uop_repr is UOp.__repr__ (pretty_print in uop/ops.py), value_repr is
 * Python's repr() of an arg, value_str its str(), float_repr Python's repr(float).
 *
 * pretty_print runs in two passes, both on explicit stacks so graph depth never reaches the C stack:
 * the first numbers nodes in the order Python's recursive dfs() first meets them (a preorder over
 * srcs) and counts how many times each is a src; the second prints, naming a node `xN:=` when it is
 * used more than once and printing ` xN` for every later use. Floats print as Python's repr: the
 * shortest %.*e that strtod reads back, laid out fixed when -4 < exponent+1 <= 16, else as 1e-05.
 * Output goes to a doubling buffer in the caller's arena; the pass state lives in a private arena. */
#include "uop.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct Buf { char *p; size_t n, cap; Arena *a; } Buf;

static void buf_need(Buf *b, size_t k) {
  if (b->n + k + 1 <= b->cap) return;
  size_t cap = b->cap ? b->cap : 256;
  while (b->n + k + 1 > cap) cap *= 2;
  char *np = arena_alloc(b->a, cap);
  if (b->n) memcpy(np, b->p, b->n);
  b->p = np;
  b->cap = cap;
}
static void buf_put(Buf *b, const char *s, size_t k) {
  buf_need(b, k);
  memcpy(b->p + b->n, s, k);
  b->n += k;
  b->p[b->n] = 0;
}
static void buf_s(Buf *b, const char *s) { buf_put(b, s, strlen(s)); }
static void buf_spaces(Buf *b, size_t k) {
  buf_need(b, k);
  memset(b->p + b->n, ' ', k);
  b->n += k;
  b->p[b->n] = 0;
}
static void buf_i(Buf *b, int64_t i) {
  char t[32];
  buf_put(b, t, (size_t)snprintf(t, sizeof t, "%lld", (long long)i));
}

/* ---- floats ---- */
int float_repr(char *buf, size_t n, double f) {
  if (isnan(f)) return snprintf(buf, n, "nan");
  if (isinf(f)) return snprintf(buf, n, f < 0 ? "-inf" : "inf");
  if (f == 0) return snprintf(buf, n, signbit(f) ? "-0.0" : "0.0");
  char e[40];
  int p;
  for (p = 0; p < 17; p++) { /* shortest digit count that reads back to the same double */
    snprintf(e, sizeof e, "%.*e", p, f);
    if (strtod(e, NULL) == f) break;
  }
  /* e is "-d.ddde+XX": collect the digits and the decimal exponent */
  char dig[24];
  int nd = 0;
  const char *q = e;
  bool neg = *q == '-';
  if (neg) q++;
  for (; *q && *q != 'e'; q++) if (*q != '.') dig[nd++] = *q;
  while (nd > 1 && dig[nd - 1] == '0') nd--;
  dig[nd] = 0;
  int exp10 = atoi(q + 1), decpt = exp10 + 1;
  char out[64];
  int k = 0;
  if (neg) out[k++] = '-';
  if (decpt > -4 && decpt <= 16) {
    if (decpt <= 0) {
      out[k++] = '0'; out[k++] = '.';
      for (int i = 0; i < -decpt; i++) out[k++] = '0';
      for (int i = 0; i < nd; i++) out[k++] = dig[i];
    } else if (decpt >= nd) {
      for (int i = 0; i < nd; i++) out[k++] = dig[i];
      for (int i = nd; i < decpt; i++) out[k++] = '0';
      out[k++] = '.'; out[k++] = '0';
    } else {
      for (int i = 0; i < nd; i++) { if (i == decpt) out[k++] = '.'; out[k++] = dig[i]; }
    }
    out[k] = 0;
  } else {
    out[k++] = dig[0];
    if (nd > 1) { out[k++] = '.'; for (int i = 1; i < nd; i++) out[k++] = dig[i]; }
    snprintf(out + k, sizeof out - (size_t)k, "e%c%02d", exp10 < 0 ? '-' : '+', exp10 < 0 ? -exp10 : exp10);
  }
  return snprintf(buf, n, "%s", out);
}

/* ---- strings: Python's unicode_repr ---- */
static bool py_printable(uint32_t c) {
  if (c < 0x20 || c == 0x7f || (c >= 0x80 && c <= 0xa0) || c == 0xad) return false;
  if ((c >= 0x200b && c <= 0x200f) || (c >= 0x2028 && c <= 0x202e) || (c >= 0x2060 && c <= 0x2064)) return false;
  if ((c >= 0xd800 && c <= 0xf8ff) || c == 0xfeff || (c >= 0xfff9 && c <= 0xfffb) || c == 0x1680 || c == 0x3000) return false;
  if (c >= 0x2000 && c <= 0x200a) return false;
  if (c >= 0xf0000) return false;
  return true;
}
static void repr_str(Buf *b, const char *s) {
  bool sq = strchr(s, '\'') != NULL, dq = strchr(s, '"') != NULL;
  char quote = sq && !dq ? '"' : '\'';
  buf_put(b, &quote, 1);
  const unsigned char *p = (const unsigned char *)s;
  char t[16];
  while (*p) {
    uint32_t c = *p;
    int len = 1;
    if (c >= 0x80) { /* decode UTF-8 (the reader only admits valid UTF-8) */
      if ((c & 0xe0) == 0xc0 && (p[1] & 0xc0) == 0x80) { c = ((c & 0x1f) << 6) | (p[1] & 0x3f); len = 2; }
      else if ((c & 0xf0) == 0xe0 && (p[1] & 0xc0) == 0x80 && (p[2] & 0xc0) == 0x80) {
        c = ((c & 0x0f) << 12) | ((uint32_t)(p[1] & 0x3f) << 6) | (p[2] & 0x3f); len = 3;
      } else if ((c & 0xf8) == 0xf0 && (p[1] & 0xc0) == 0x80 && (p[2] & 0xc0) == 0x80 && (p[3] & 0xc0) == 0x80) {
        c = ((c & 0x07) << 18) | ((uint32_t)(p[1] & 0x3f) << 12) | ((uint32_t)(p[2] & 0x3f) << 6) | (p[3] & 0x3f); len = 4;
      }
    }
    if (c == (uint32_t)quote || c == '\\') { t[0] = '\\'; t[1] = (char)c; buf_put(b, t, 2); }
    else if (c == '\t') buf_s(b, "\\t");
    else if (c == '\n') buf_s(b, "\\n");
    else if (c == '\r') buf_s(b, "\\r");
    else if (py_printable(c)) buf_put(b, (const char *)p, (size_t)len);
    else if (c <= 0xff) buf_put(b, t, (size_t)snprintf(t, sizeof t, "\\x%02x", c));
    else if (c <= 0xffff) buf_put(b, t, (size_t)snprintf(t, sizeof t, "\\u%04x", c));
    else buf_put(b, t, (size_t)snprintf(t, sizeof t, "\\U%08x", c));
    p += len;
  }
  buf_put(b, &quote, 1);
}

static void pp_into(Buf *b, UOp *root);
static void repr_into(Buf *b, const Value *v, bool str);

static void repr_sint(Buf *b, Sint s) {
  if (s.u) pp_into(b, s.u);
  else buf_i(b, s.c);
}
static void repr_sints(Buf *b, int n, const Sint *xs, int step) { /* a tuple of n sints (step 2: pairs) */
  buf_s(b, "(");
  for (int i = 0; i < n; i++) {
    if (i) buf_s(b, ", ");
    if (step == 2) {
      buf_s(b, "(");
      repr_sint(b, xs[2 * i]);
      buf_s(b, ", ");
      repr_sint(b, xs[2 * i + 1]);
      buf_s(b, ")");
    } else repr_sint(b, xs[i]);
  }
  buf_s(b, n == 1 ? ",)" : ")");
}
static void repr_meta(Buf *b, const Meta *m) { /* Metadata.__repr__ */
  buf_s(b, m->name);
  if (m->backward) buf_s(b, " bw");
  if (m->caller && *m->caller) { buf_s(b, " - "); buf_s(b, m->caller); }
}
static void repr_op(Buf *b, Op op) { buf_s(b, "<Ops."); buf_s(b, op_names[op]); buf_s(b, ": "); buf_i(b, op); buf_s(b, ">"); }

static void repr_into(Buf *b, const Value *v, bool str) {
  static const char *const asn[] = {"GLOBAL", "LOCAL", "REG"};
  switch (v->kind) {
  case V_NONE: buf_s(b, "None"); break;
  case V_BOOL: buf_s(b, v->b ? "True" : "False"); break;
  case V_INT:
    if (v->n == 1) { char t[32]; buf_put(b, t, (size_t)snprintf(t, sizeof t, "%llu", (unsigned long long)(uint64_t)v->i)); }
    else buf_i(b, v->i);
    break;
  case V_FLOAT: { char t[64]; buf_put(b, t, (size_t)float_repr(t, sizeof t, v->f)); break; }
  case V_STR: if (str) buf_s(b, v->s); else repr_str(b, v->s); break;
  case V_TUPLE:
    buf_s(b, "(");
    for (int i = 0; i < v->n; i++) { if (i) buf_s(b, ", "); repr_into(b, v->items[i], false); }
    buf_s(b, v->n == 1 ? ",)" : ")");
    break;
  case V_OPS:
    if (str) { buf_s(b, "Ops."); buf_s(b, op_names[v->op]); }
    else repr_op(b, v->op);
    break;
  case V_UOP: pp_into(b, v->u); break;
  case V_ST:
    buf_s(b, "ShapeTracker(views=(");
    for (int i = 0; i < v->st->nviews; i++) {
      const View *w = v->st->views[i];
      if (i) buf_s(b, ", ");
      buf_s(b, "View(shape=");
      repr_sints(b, w->ndim, w->shape, 1);
      buf_s(b, ", strides=");
      repr_sints(b, w->ndim, w->strides, 1);
      buf_s(b, ", offset=");
      repr_sint(b, w->offset);
      buf_s(b, ", mask=");
      if (w->mask) repr_sints(b, w->ndim, w->mask, 2);
      else buf_s(b, "None");
      buf_s(b, w->contiguous ? ", contiguous=True)" : ", contiguous=False)");
    }
    buf_s(b, v->st->nviews == 1 ? ",))" : "))");
    break;
  case V_KERNEL: { /* Kernel.__repr__: <Kernel {len(toposort)} SINK(ops..) (metadata..)> */
    UOp *ast = v->k.ast;
    buf_s(b, "<Kernel ");
    buf_i(b, uop_toposort(ast, NULL, NULL).n);
    buf_s(b, " ");
    if (ast->op == OP_SINK) {
      buf_s(b, "SINK(");
      for (int i = 0; i < ast->nsrc; i++) { if (i) buf_s(b, ", "); repr_op(b, (Op)ast->src[i]->op); }
      buf_s(b, ast->nsrc == 1 ? ",)" : ")");
    } else repr_op(b, (Op)ast->op);
    buf_s(b, " (");
    for (int i = 0; i < v->k.nmeta; i++) { if (i) buf_s(b, ", "); repr_meta(b, v->k.meta[i]); }
    buf_s(b, v->k.nmeta == 1 ? ",)>" : ")>");
    break;
  }
  case V_DTYPE: buf_s(b, "dtypes."); buf_s(b, dt_repr(b->a, v->dt)); break;
  case V_ADDRSPACE:
    if (str) { buf_s(b, "AddrSpace."); buf_s(b, asn[v->as]); }
    else { buf_s(b, "<AddrSpace."); buf_s(b, asn[v->as]); buf_s(b, ": "); buf_i(b, v->as + 1); buf_s(b, ">"); }
    break;
  }
}

/* ---- pretty_print ---- */
typedef struct PPEnt { int64_t idx; int64_t count; bool printed; } PPEnt;
typedef struct PPFrame { UOp *u; int d; int i; } PPFrame;

static PPEnt *pp_ent(Map *m, UOp *u, Arena *a, bool *isnew) {
  void **slot = map_slot(m, u, uop_h(u), isnew);
  if (*isnew) { PPEnt *e = arena_alloc(a, sizeof *e); e->idx = m->live - 1; *slot = e; }
  return *slot;
}
static void pp_header(Buf *b, UOp *u, int d, PPEnt *e) {
  buf_spaces(b, (size_t)d);
  if (e->count > 1) { buf_s(b, "x"); buf_i(b, e->idx); buf_s(b, ":="); }
  buf_s(b, "UOp(Ops.");
  buf_s(b, op_names[u->op]);
  buf_s(b, ", dtypes.");
  buf_s(b, dt_repr(b->a, u->dtype));
  buf_s(b, ", arg=");
  if (u->op == OP_REDUCE_AXIS && u->arg->kind == V_TUPLE) { /* argstr: map(str, arg) */
    buf_s(b, "(");
    for (int i = 0; i < u->arg->n; i++) { if (i) buf_s(b, ", "); repr_into(b, u->arg->items[i], true); }
    buf_s(b, ")");
  } else repr_into(b, u->arg, false);
  if (!v_is_none(u->tag)) { buf_s(b, ", tag="); repr_into(b, u->tag, true); }
  buf_s(b, ", src=(");
}
static void pp_into(Buf *b, UOp *root) {
  Arena tmp = {0}, *sa = &tmp; /* private: the output buffer may itself live in uctx->scratch */
  Map cache;
  map_init(&cache, sa);
  size_t cap = 64, n = 0;
  PPFrame *st = arena_alloc(sa, cap * sizeof *st);
  /* pass 1: dfs() numbering and use counts */
  st[n++] = (PPFrame){root, 0, 0};
  while (n) {
    PPFrame *f = &st[n - 1];
    if (f->i >= f->u->nsrc) { n--; continue; }
    UOp *s = f->u->src[f->i++];
    bool isnew;
    PPEnt *e = pp_ent(&cache, s, sa, &isnew);
    if (++e->count == 1) {
      if (n == cap) { PPFrame *ns = arena_alloc(sa, 2 * cap * sizeof *ns); memcpy(ns, st, cap * sizeof *ns); st = ns; cap *= 2; }
      st[n++] = (PPFrame){s, 0, 0};
    }
  }
  bool isnew;
  PPEnt *re = pp_ent(&cache, root, sa, &isnew);
  if (isnew) re->idx = 0; /* cache.setdefault(x, [0,0,False]) */
  /* pass 2: print */
  re->printed = true;
  pp_header(b, root, 0, re);
  n = 0;
  st[n++] = (PPFrame){root, 0, 0};
  while (n) {
    PPFrame *f = &st[n - 1];
    if (f->i >= f->u->nsrc) {
      buf_s(b, "))");
      n--;
      if (n) buf_s(b, ",");
      continue;
    }
    UOp *s = f->u->src[f->i++];
    int d = f->d + 2;
    PPEnt *e = pp_ent(&cache, s, sa, &isnew);
    buf_s(b, "\n");
    if (e->printed) {
      buf_spaces(b, (size_t)d);
      buf_s(b, " x");
      buf_i(b, e->idx);
      buf_s(b, ",");
      continue;
    }
    e->printed = true;
    pp_header(b, s, d, e);
    if (n == cap) { PPFrame *ns = arena_alloc(sa, 2 * cap * sizeof *ns); memcpy(ns, st, cap * sizeof *ns); st = ns; cap *= 2; }
    st[n++] = (PPFrame){s, d, 0};
  }
  arena_free(sa);
}

const char *uop_repr(Arena *a, UOp *root) {
  Buf b = {NULL, 0, 0, a};
  buf_need(&b, 0);
  pp_into(&b, root);
  return b.p;
}
const char *value_repr(Arena *a, const Value *v) {
  Buf b = {NULL, 0, 0, a};
  buf_need(&b, 0);
  repr_into(&b, v, false);
  return b.p;
}
const char *value_str(Arena *a, const Value *v) {
  Buf b = {NULL, 0, 0, a};
  buf_need(&b, 0);
  repr_into(&b, v, true);
  return b.p;
}
