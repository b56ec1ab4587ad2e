/* graph_read.c: the FORMATS.md readers (graph files §1, expect files §2) into the current UCtx.
 *
 * cJSON parses the text; one extra linear pass then pairs every number node with its token in the
 * source (cJSON builds nodes in document order, so the k-th number node is the k-th number token
 * outside a string) and keeps the token text of floats (so `1` and `1.0` stay distinct) and of
 * integers too long for a double (ulong max), in the node's unused valuestring. Rows are then read
 * in order; every row becomes an interned UOp. Nothing is guessed: each field is checked, and the
 * first problem fails with TG_EINPUT and "FILE: row ID (OP): FIELD: what" (or "FILE: FIELD: what"
 * for top-level fields), FIELD being a path like src[1] or arg.st[0].shape[2]. */
#include "graph.h"
#include "../schedule/passes.h"
#include <cjson/cJSON.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct RCtx {
  const char *file, *basedir;
  UOp **rows; int nrows;          /* rows read so far (refs must point here) */
  int64_t row; const char *op;    /* current row (-1: top level) */
  /* current field path, kept as its components and formatted only by rfail */
  struct PComp { const char *fmt, *s; int i; } pc[512]; size_t plen; /* plen: components in use */
  Graph *g;
  const char *text; size_t tlen;  /* for JSON positions */
  Map sints;                      /* symbolic sizes already checked (check_sint) */
} RCtx;

static _Noreturn void rfail(RCtx *R, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static _Noreturn void rfail(RCtx *R, const char *fmt, ...) {
  char what[600];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(what, sizeof what, fmt, ap);
  va_end(ap);
  char path[512];
  size_t len = 0;
  path[0] = 0;
  for (size_t c = 0; c < R->plen && c < sizeof R->pc / sizeof R->pc[0]; c++) {
    const struct PComp *pc = &R->pc[c];
    int k = strstr(pc->fmt, "%d") ? snprintf(path + len, sizeof path - len, pc->fmt, pc->i)
                                  : snprintf(path + len, sizeof path - len, pc->fmt, pc->s);
    if (k > 0) len = len + (size_t)k < sizeof path ? len + (size_t)k : sizeof path - 1;
  }
  const char *p = len ? path : NULL;
  if (R->row >= 0 && R->op) tg_fail(TG_EINPUT, "%s: row %lld (%s): %s%s%s", R->file, (long long)R->row, R->op, p ? p : "", p ? ": " : "", what);
  if (R->row >= 0) tg_fail(TG_EINPUT, "%s: row %lld: %s%s%s", R->file, (long long)R->row, p ? p : "", p ? ": " : "", what);
  tg_fail(TG_EINPUT, "%s: %s%s%s", R->file, p ? p : "", p ? ": " : "", what);
}
/* field path: push one component (a format with at most one %s or %d argument, kept unformatted
 * until rfail); returns the old depth to restore. Components beyond the array only count. */
static size_t ppush(RCtx *R, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static size_t ppush(RCtx *R, const char *fmt, ...) {
  size_t old = R->plen;
  if (old < sizeof R->pc / sizeof R->pc[0]) {
    struct PComp *c = &R->pc[old];
    c->fmt = fmt; c->s = NULL; c->i = 0;
    const char *pct = strchr(fmt, '%');
    if (pct) {
      va_list ap;
      va_start(ap, fmt);
      if (pct[1] == 'd') c->i = va_arg(ap, int);
      else c->s = va_arg(ap, const char *);
      va_end(ap);
    }
  }
  R->plen = old + 1;
  return old;
}
static void ppop(RCtx *R, size_t old) { R->plen = old; }
static void pset(RCtx *R, const char *s) { R->plen = 0; if (s) ppush(R, "%s", s); }

static const char *jkind(const cJSON *j) {
  if (!j) return "nothing";
  if (cJSON_IsNull(j)) return "null";
  if (cJSON_IsBool(j)) return "a boolean";
  if (cJSON_IsNumber(j)) return "a number";
  if (cJSON_IsString(j)) return "a string";
  if (cJSON_IsArray(j)) return "an array";
  return "an object";
}

/* ---- number tokens ---- */
typedef struct Tok { const char *p, *end; size_t n; } Tok;
static bool tok_next(Tok *t, const char **s, size_t *len) {
  while (t->p < t->end) {
    char c = *t->p;
    if (c == '"') {
      t->p++;
      while (t->p < t->end && *t->p != '"') t->p += *t->p == '\\' ? 2 : 1;
      t->p++;
    } else if (c == '-' || (c >= '0' && c <= '9')) {
      const char *b = t->p;
      while (t->p < t->end && ((*t->p >= '0' && *t->p <= '9') || *t->p == '+' || *t->p == '-' || *t->p == '.' || *t->p == 'e' || *t->p == 'E')) t->p++;
      *s = b;
      *len = (size_t)(t->p - b);
      return true;
    } else t->p++;
  }
  return false;
}
static void annotate_numbers(cJSON *j, Tok *t) {
  for (; j; j = j->next) {
    if (cJSON_IsNumber(j)) {
      const char *s;
      size_t n;
      if (!tok_next(t, &s, &n)) return;
      bool isfloat = memchr(s, '.', n) || memchr(s, 'e', n) || memchr(s, 'E', n);
      if (isfloat || n >= 16) {
        char *c = cJSON_malloc(n + 1);
        if (!c) tg_fail(TG_EINTERNAL, "out of memory");
        memcpy(c, s, n);
        c[n] = 0;
        j->valuestring = c;
      }
    }
    if (j->child) annotate_numbers(j->child, t);
  }
}

/* a number: *isint tells which of *i (with *big: bits of a value >= 2**63) or *f is set */
typedef struct Num { bool isint, big; int64_t i; double f; } Num;
static Num jnum(RCtx *R, const cJSON *j) {
  Num r = {false, false, 0, j->valuedouble};
  const char *s = j->valuestring;
  if (s && (strchr(s, '.') || strchr(s, 'e') || strchr(s, 'E'))) return r;
  r.isint = true;
  if (!s) { r.i = (int64_t)j->valuedouble; return r; }
  char *end;
  errno = 0;
  long long v = strtoll(s, &end, 10);
  if (errno == 0 && *end == 0) { r.i = v; return r; }
  if (s[0] != '-') {
    errno = 0;
    unsigned long long u = strtoull(s, &end, 10);
    if (errno == 0 && *end == 0) { r.i = (int64_t)u; r.big = true; return r; }
  }
  rfail(R, "integer %s is out of range", s);
}
static int64_t jint(RCtx *R, const cJSON *j, const char *what) {
  if (!cJSON_IsNumber(j)) rfail(R, "expected %s, got %s", what, jkind(j));
  Num n = jnum(R, j);
  if (!n.isint || n.big) rfail(R, "expected %s, got %s", what, n.isint ? "an integer above 2**63" : "a float");
  return n.i;
}
static bool utf8_ok(const unsigned char *p) {
  while (*p) {
    if (*p < 0x80) { p++; continue; }
    int n = (*p & 0xe0) == 0xc0 ? 1 : (*p & 0xf0) == 0xe0 ? 2 : (*p & 0xf8) == 0xf0 ? 3 : -1;
    if (n < 0 || (n == 1 && *p < 0xc2)) return false;
    for (int i = 1; i <= n; i++) if ((p[i] & 0xc0) != 0x80) return false;
    p += n + 1;
  }
  return true;
}
static const char *jstr(RCtx *R, const cJSON *j, const char *what) {
  if (!cJSON_IsString(j)) rfail(R, "expected %s, got %s", what, jkind(j));
  if (!utf8_ok((const unsigned char *)j->valuestring)) rfail(R, "string is not valid UTF-8");
  return j->valuestring;
}
static UOp *jref(RCtx *R, const cJSON *j) {
  int64_t id = jint(R, j, "a row id");
  if (id < 0 || id >= R->nrows) rfail(R, "no row %lld", (long long)id);
  return R->rows[id];
}

/* ---- values ---- */
static const Value *jvalue(RCtx *R, const cJSON *j);

/* a {"uop": id} in an arg is a symbolic size (tinygrad's sint): an int expression of CONSTs,
 * DEFINE_VARs and BINDs through ALU ops (bools inside, for comparisons and WHERE). Anything else
 * (a BUFFER, a float) would reach the shape code, which needs an integer (tinygrad asserts there) */
static void check_sint(RCtx *R, UOp *x) {
  if (!R->sints.a) map_init(&R->sints, ga());
  if (map_has(&R->sints, x, uop_h(x))) return;
  if (!dt_is_int(x->dtype) || x->dtype->count != 1)
    rfail(R, "a symbolic size must be an int expression, not a %s of dtype %s", op_names[x->op], dt_short_name((Scalar)dt_scalar_of(x->dtype)->scalar));
  UList t = uop_toposort(x, NULL, NULL);
  for (int i = 0; i < t.n; i++) {
    UOp *n = t.v[i];
    bool op_ok = n->op == OP_CONST || n->op == OP_DEFINE_VAR || n->op == OP_BIND || op_in((Op)n->op, G_ALU);
    bool dt_ok = n->dtype->count == 1 && (dt_is_int(n->dtype) || n->dtype == dt_bool);
    if (!op_ok || !dt_ok || (n->op == OP_CONST && n->nsrc))
      rfail(R, "a symbolic size uses a %s of dtype %s: only int CONSTs, DEFINE_VARs, BINDs and ALU ops make one", op_names[n->op],
            n->dtype->kind == DTK_SCALAR ? dt_short_name((Scalar)n->dtype->scalar) : "(not a scalar)");
  }
  map_put(&R->sints, x, uop_h(x), x);
}

static Sint jsint(RCtx *R, const cJSON *j) {
  if (cJSON_IsObject(j)) {
    const cJSON *u = cJSON_GetObjectItemCaseSensitive(j, "uop");
    if (!u || cJSON_GetArraySize(j) != 1) rfail(R, "expected an integer or {\"uop\": id}");
    size_t o = ppush(R, ".uop");
    UOp *x = jref(R, u);
    check_sint(R, x);
    ppop(R, o);
    return (Sint){0, x};
  }
  return si(jint(R, j, "an integer or {\"uop\": id}"));
}
static Sint *jsints(RCtx *R, const cJSON *j, int *n, const char *what) {
  if (!cJSON_IsArray(j)) rfail(R, "expected %s, got %s", what, jkind(j));
  int k = cJSON_GetArraySize(j), i = 0;
  Sint *out = arena_alloc(&uctx->scratch, sizeof(Sint) * (size_t)(k + 1));
  for (const cJSON *e = j->child; e; e = e->next, i++) {
    size_t o = ppush(R, "[%d]", i);
    out[i] = jsint(R, e);
    ppop(R, o);
  }
  *n = k;
  return out;
}
static const View *jview(RCtx *R, const cJSON *j) {
  if (!cJSON_IsObject(j)) rfail(R, "expected a view object, got %s", jkind(j));
  const cJSON *shape = NULL, *strides = NULL, *offset = NULL, *mask = NULL, *contig = NULL;
  bool has_mask = false;
  for (const cJSON *e = j->child; e; e = e->next) {
    const char *k = e->string;
    const cJSON **slot = strcmp(k, "shape") == 0 ? &shape : strcmp(k, "strides") == 0 ? &strides
      : strcmp(k, "offset") == 0 ? &offset : strcmp(k, "mask") == 0 ? &mask : strcmp(k, "contiguous") == 0 ? &contig : NULL;
    if (!slot) rfail(R, "unknown view field \"%s\"", k);
    if (*slot || (slot == &mask && has_mask)) rfail(R, "duplicate view field \"%s\"", k);
    *slot = e;
    if (slot == &mask) has_mask = true;
  }
  if (!shape || !strides || !offset || !contig) rfail(R, "a view needs shape, strides, offset and contiguous");
  ArenaMark mk = arena_mark(&uctx->scratch);
  int nd, ns;
  size_t o = ppush(R, ".shape");
  Sint *sh = jsints(R, shape, &nd, "a shape array");
  if (nd > TG_MAX_RANK) rfail(R, "a shape of %d dimensions (tgc takes at most %d)", nd, TG_MAX_RANK);
  ppop(R, o);
  o = ppush(R, ".strides");
  Sint *st = jsints(R, strides, &ns, "a strides array");
  if (ns != nd) rfail(R, "%d strides for %d dims", ns, nd);
  ppop(R, o);
  o = ppush(R, ".offset");
  Sint off = jsint(R, offset);
  ppop(R, o);
  Sint *mk2 = NULL;
  if (mask && !cJSON_IsNull(mask)) {
    o = ppush(R, ".mask");
    if (!cJSON_IsArray(mask)) rfail(R, "expected null or an array of [begin, end], got %s", jkind(mask));
    if (cJSON_GetArraySize(mask) != nd) rfail(R, "%d mask entries for %d dims", cJSON_GetArraySize(mask), nd);
    mk2 = arena_alloc(&uctx->scratch, sizeof(Sint) * (size_t)(2 * nd + 1));
    int i = 0;
    for (const cJSON *e = mask->child; e; e = e->next, i++) {
      size_t o2 = ppush(R, "[%d]", i);
      int two;
      Sint *be = jsints(R, e, &two, "a [begin, end] pair");
      if (two != 2) rfail(R, "expected a [begin, end] pair");
      mk2[2 * i] = be[0];
      mk2[2 * i + 1] = be[1];
      ppop(R, o2);
    }
    ppop(R, o);
  }
  if (!cJSON_IsBool(contig)) { o = ppush(R, ".contiguous"); rfail(R, "expected a boolean, got %s", jkind(contig)); }
  const View *v = view_intern(nd, sh, st, off, mk2, cJSON_IsTrue(contig));
  arena_pop(&uctx->scratch, mk);
  return v;
}
static MetaList jmetas(RCtx *R, const cJSON *j) {
  if (!cJSON_IsArray(j)) rfail(R, "expected an array of metadata, got %s", jkind(j));
  int n = cJSON_GetArraySize(j), i = 0;
  const Meta **m = arena_alloc(ga(), sizeof(Meta *) * (size_t)(n + 1)); /* zeroed: NULL-terminated, as a node keeps it */
  for (const cJSON *e = j->child; e; e = e->next, i++) {
    size_t o = ppush(R, "[%d]", i);
    if (!cJSON_IsObject(e)) rfail(R, "expected a metadata object, got %s", jkind(e));
    const cJSON *name = NULL, *caller = NULL, *bw = NULL;
    for (const cJSON *f = e->child; f; f = f->next) {
      const cJSON **slot = strcmp(f->string, "name") == 0 ? &name : strcmp(f->string, "caller") == 0 ? &caller
        : strcmp(f->string, "backward") == 0 ? &bw : NULL;
      if (!slot) rfail(R, "unknown metadata field \"%s\"", f->string);
      if (*slot) rfail(R, "duplicate metadata field \"%s\"", f->string);
      *slot = f;
    }
    if (!name) rfail(R, "metadata needs a name");
    size_t o2 = ppush(R, ".name");
    const char *nm = jstr(R, name, "a string");
    ppop(R, o2);
    const char *cl = "";
    if (caller) { o2 = ppush(R, ".caller"); cl = jstr(R, caller, "a string"); ppop(R, o2); }
    if (bw && !cJSON_IsBool(bw)) { ppush(R, ".backward"); rfail(R, "expected a boolean, got %s", jkind(bw)); }
    m[i] = meta_intern(nm, cl, bw && cJSON_IsTrue(bw));
    ppop(R, o);
  }
  return (MetaList){n, m};
}
static const Value *jspecial(RCtx *R, const cJSON *j) {
  const cJSON *e = j->child;
  if (!e || e->next) rfail(R, "unknown arg encoding (an object must have exactly one key)");
  const char *k = e->string;
  size_t o = ppush(R, ".%s", k);
  const Value *r;
  if (strcmp(k, "float") == 0) {
    const char *s = jstr(R, e, "\"inf\", \"-inf\" or \"nan\"");
    if (strcmp(s, "inf") == 0) r = v_float(INFINITY);
    else if (strcmp(s, "-inf") == 0) r = v_float(-INFINITY);
    else if (strcmp(s, "nan") == 0) r = v_float(NAN);
    else rfail(R, "expected \"inf\", \"-inf\" or \"nan\", got \"%s\"", s);
  } else if (strcmp(k, "ops") == 0) {
    const char *s = jstr(R, e, "an op name");
    Op op = op_from_name(s);
    if (op == OP_INVALID) rfail(R, "unknown op \"%s\"", s);
    r = v_ops(op);
  } else if (strcmp(k, "uop") == 0) {
    UOp *x = jref(R, e);
    check_sint(R, x);
    r = v_uop(x);
  } else if (strcmp(k, "st") == 0) {
    if (!cJSON_IsArray(e)) rfail(R, "expected an array of views, got %s", jkind(e));
    int n = cJSON_GetArraySize(e), i = 0;
    if (n == 0) rfail(R, "a ShapeTracker needs at least one view");
    const View **vs = arena_alloc(ga(), sizeof(View *) * (size_t)n);
    for (const cJSON *v = e->child; v; v = v->next, i++) {
      size_t o2 = ppush(R, "[%d]", i);
      vs[i] = jview(R, v);
      ppop(R, o2);
    }
    r = v_st(st_intern(n, vs));
  } else if (strcmp(k, "kernel") == 0) {
    if (!cJSON_IsObject(e)) rfail(R, "expected {\"ast\": id, \"metadata\": [...]}, got %s", jkind(e));
    const cJSON *ast = NULL, *md = NULL;
    for (const cJSON *f = e->child; f; f = f->next) {
      const cJSON **slot = strcmp(f->string, "ast") == 0 ? &ast : strcmp(f->string, "metadata") == 0 ? &md : NULL;
      if (!slot) rfail(R, "unknown kernel field \"%s\"", f->string);
      if (*slot) rfail(R, "duplicate kernel field \"%s\"", f->string);
      *slot = f;
    }
    if (!ast) rfail(R, "a kernel needs an ast");
    size_t o2 = ppush(R, ".ast");
    UOp *a = jref(R, ast);
    ppop(R, o2);
    MetaList ml = {0, NULL};
    if (md) { o2 = ppush(R, ".metadata"); ml = jmetas(R, md); ppop(R, o2); }
    r = v_kernel(a, ml.n, ml.m);
  } else if (strcmp(k, "dtype") == 0) {
    const char *s = jstr(R, e, "a dtype string");
    const DType *d = dt_parse(s);
    if (!d) rfail(R, "unknown dtype \"%s\"", s);
    r = v_dtype(d);
  } else if (strcmp(k, "addrspace") == 0) {
    const char *s = jstr(R, e, "GLOBAL, LOCAL or REG");
    if (strcmp(s, "GLOBAL") == 0) r = v_addrspace(AS_GLOBAL);
    else if (strcmp(s, "LOCAL") == 0) r = v_addrspace(AS_LOCAL);
    else if (strcmp(s, "REG") == 0) r = v_addrspace(AS_REG);
    else rfail(R, "unknown address space \"%s\"", s);
  } else {
    ppop(R, o);
    rfail(R, "unknown arg encoding \"%s\"", k);
  }
  ppop(R, o);
  return r;
}
static const Value *jvalue(RCtx *R, const cJSON *j) {
  if (cJSON_IsNull(j)) return v_none();
  if (cJSON_IsBool(j)) return v_bool(cJSON_IsTrue(j));
  if (cJSON_IsNumber(j)) {
    Num n = jnum(R, j);
    return !n.isint ? v_float(n.f) : n.big ? v_uint64((uint64_t)n.i) : v_int(n.i);
  }
  if (cJSON_IsString(j)) return v_str(jstr(R, j, "a string"));
  if (cJSON_IsArray(j)) {
    int n = cJSON_GetArraySize(j), i = 0;
    ArenaMark mk = arena_mark(&uctx->scratch);
    const Value **it = arena_alloc(&uctx->scratch, sizeof(Value *) * (size_t)(n + 1));
    for (const cJSON *e = j->child; e; e = e->next, i++) {
      size_t o = ppush(R, "[%d]", i);
      it[i] = jvalue(R, e);
      ppop(R, o);
    }
    const Value *r = v_tuple(n, it);
    arena_pop(&uctx->scratch, mk);
    return r;
  }
  return jspecial(R, j);
}
/* a CONST's number takes its row's dtype */
static const Value *jconst(RCtx *R, const cJSON *j, const DType *dt) {
  const DType *s = dt->kind == DTK_SCALAR ? dt_scalar_of(dt) : NULL;
  if (!s || s == dt_void) return jvalue(R, j);
  if (dt_is_float(s)) {
    if (cJSON_IsNumber(j)) return v_float(j->valuedouble);
    if (cJSON_IsObject(j)) {
      const Value *v = jspecial(R, j);
      if (v->kind == V_FLOAT) return v;
    }
    rfail(R, "expected a number for a %s CONST, got %s", dt_repr(&uctx->scratch, dt), jkind(j));
  }
  if (dt_is_bool(s)) {
    if (!cJSON_IsBool(j)) rfail(R, "expected true or false for a bool CONST, got %s", jkind(j));
    return v_bool(cJSON_IsTrue(j));
  }
  if (!cJSON_IsNumber(j)) rfail(R, "expected an integer for a %s CONST, got %s", dt_repr(&uctx->scratch, dt), jkind(j));
  Num n = jnum(R, j);
  if (!n.isint) rfail(R, "expected an integer for a %s CONST, got a float", dt_repr(&uctx->scratch, dt));
  return n.big ? v_uint64((uint64_t)n.i) : v_int(n.i);
}

/* ---- rows ---- */
static const char *const row_fields[] = {"id", "op", "dtype", "src", "arg", "tag", "meta", "data"};
enum { RF_ID, RF_OP, RF_DTYPE, RF_SRC, RF_ARG, RF_TAG, RF_META, RF_DATA, RF_N };
/* the RF_ index of a row field name (RF_N: unknown); every row names six or so, so by first letter */
static int row_field(const char *k) {
  int c = k[0] == 'i' ? RF_ID : k[0] == 'o' ? RF_OP : k[0] == 's' ? RF_SRC : k[0] == 'a' ? RF_ARG : k[0] == 't' ? RF_TAG
        : k[0] == 'm' ? RF_META : k[0] == 'd' ? (k[1] == 't' ? RF_DTYPE : RF_DATA) : RF_N;
  return c < RF_N && strcmp(k, row_fields[c]) == 0 ? c : RF_N;
}

static void read_data(RCtx *R, const cJSON *d, UOp *u) {
  pset(R, "data");
  if (u->op != OP_BUFFER) rfail(R, "only BUFFER rows carry data");
  if (!cJSON_IsObject(d)) rfail(R, "expected an object, got %s", jkind(d));
  if (u->arg->kind != V_INT || u->arg->n) { pset(R, "arg"); rfail(R, "a BUFFER with data needs an integer size"); }
  size_t want = (size_t)u->arg->i * (size_t)u->dtype->itemsize;
  const cJSON *enc = cJSON_GetObjectItemCaseSensitive(d, "encoding"), *bytes = cJSON_GetObjectItemCaseSensitive(d, "bytes");
  const cJSON *file = cJSON_GetObjectItemCaseSensitive(d, "file");
  BufData bd = {u, NULL, 0};
  if (file && !enc && !bytes && cJSON_GetArraySize(d) == 1) {
    ppush(R, ".file");
    const char *f = jstr(R, file, "a path string");
    char *full = f[0] == '/' || !R->basedir || !*R->basedir ? arena_strdup(ga(), f) : arena_printf(ga(), "%s/%s", R->basedir, f);
    TgTry t;
    const DType *fdt = NULL;
    int nd = 0;
    int64_t shape[TG_MAX_DIMS];
    size_t nb = 0;
    void *p = NULL;
    if (TG_TRY(t)) {
      p = npy_read(ga(), full, &fdt, &nd, shape, &nb);
      tg_try_end(&t);
    } else {
      char m[sizeof tg_last_error.msg];
      snprintf(m, sizeof m, "%s", tg_last_error.msg);
      rfail(R, "%s", m);
    }
    bool same = fdt == u->dtype || (fdt->itemsize == 1 && u->dtype->itemsize == 1 && (fdt->scalar == SC_FP8E4M3) &&
                                     (u->dtype->scalar == SC_FP8E4M3 || u->dtype->scalar == SC_FP8E5M2));
    if (!same) rfail(R, "%s holds %s, the BUFFER is %s", f, dt_repr(&uctx->scratch, fdt), dt_repr(&uctx->scratch, u->dtype));
    if (nb != want)
      rfail(R, "%s holds %zu elements, the BUFFER has %lld", f, nb / (size_t)fdt->itemsize, (long long)u->arg->i);
    bd.bytes = p;
    bd.nbytes = nb;
  } else {
    for (const cJSON *e = d->child; e; e = e->next)
      if (strcmp(e->string, "encoding") && strcmp(e->string, "bytes")) rfail(R, "unknown data field \"%s\"", e->string);
    if (!enc) rfail(R, "needs \"encoding\": \"base64\" and \"bytes\", or \"file\"");
    ppush(R, ".encoding");
    const char *e = jstr(R, enc, "a string");
    if (strcmp(e, "base64")) rfail(R, "unknown encoding \"%s\" (only base64)", e);
    pset(R, "data.bytes");
    if (!bytes) rfail(R, "missing");
    const char *s = jstr(R, bytes, "a base64 string");
    size_t n;
    void *p = b64_decode(ga(), s, &n);
    if (!p) rfail(R, "invalid base64");
    if (n != want)
      rfail(R, "%zu bytes, the BUFFER needs %zu (%lld x %d)", n, want, (long long)u->arg->i, u->dtype->itemsize);
    bd.bytes = p;
    bd.nbytes = n;
  }
  Graph *g = R->g;
  if (g) {
    BufData *nd = arena_alloc(ga(), sizeof *nd * (size_t)(g->ndata + 1));
    if (g->ndata) memcpy(nd, g->data, sizeof *nd * (size_t)g->ndata);
    nd[g->ndata++] = bd;
    g->data = nd;
  }
}

/* the dtype of the row before (rows mostly repeat one); its text is copied, as a streamed row's
 * JSON is gone when the next row is read */
typedef struct RowMemo { char dts[48]; const DType *dt; } RowMemo;
/* row i into R->rows[i] (R->rows has room for it) */
static void read_row(RCtx *R, const cJSON *r, int i, bool allow_data, RowMemo *memo) {
  R->row = i;
  R->op = NULL;
  pset(R, NULL);
  if (!cJSON_IsObject(r)) rfail(R, "expected a row object, got %s", jkind(r));
  const cJSON *f[RF_N] = {0};
  const char *unknown = NULL, *dup = NULL; /* reported once the op is known */
  for (const cJSON *e = r->child; e; e = e->next) {
    int k = row_field(e->string);
    if (k == RF_N) { if (!unknown) unknown = e->string; continue; }
    if (f[k]) { if (!dup) dup = e->string; continue; }
    f[k] = e;
  }
  pset(R, "id");
  if (!f[RF_ID]) rfail(R, "missing");
  int64_t id = jint(R, f[RF_ID], "an integer");
  if (id != i) rfail(R, "is %lld, expected the row index %d", (long long)id, i);
  pset(R, "op");
  if (!f[RF_OP]) rfail(R, "missing");
  const char *opn = jstr(R, f[RF_OP], "an op name");
  Op op = op_from_name(opn);
  if (op == OP_INVALID) rfail(R, "unknown op \"%s\"", opn);
  R->op = op_names[op];
  pset(R, NULL);
  if (unknown) rfail(R, "unknown field \"%s\"", unknown);
  if (dup) rfail(R, "duplicate field \"%s\"", dup);
  pset(R, "dtype");
  if (!f[RF_DTYPE]) rfail(R, "missing");
  const char *dts = jstr(R, f[RF_DTYPE], "a dtype string");
  const DType *dt = memo->dt && strcmp(dts, memo->dts) == 0 ? memo->dt : dt_parse(dts);
  if (dt && strlen(dts) < sizeof memo->dts) memcpy(memo->dts, dts, strlen(dts) + 1), memo->dt = dt;
  if (!dt) rfail(R, "unknown dtype \"%s\"", dts);
  ArenaMark mk = arena_mark(&uctx->scratch);
  int ns = 0;
  UOp **src = NULL;
  if (f[RF_SRC]) {
    pset(R, "src");
    if (!cJSON_IsArray(f[RF_SRC])) rfail(R, "expected an array of row ids, got %s", jkind(f[RF_SRC]));
    ns = cJSON_GetArraySize(f[RF_SRC]);
    if (ns > UOP_MAX_SRC) rfail(R, "%d sources is more than tgc supports", ns);
    src = arena_alloc(&uctx->scratch, sizeof(UOp *) * (size_t)(ns + 1));
    int k = 0;
    for (const cJSON *e = f[RF_SRC]->child; e; e = e->next, k++) {
      pset(R, NULL);
      ppush(R, "src[%d]", k);
      int64_t sid = jint(R, e, "a row id");
      if (sid < 0 || sid >= i) rfail(R, sid == i ? "row %lld is this row" : "no row %lld", (long long)sid);
      src[k] = R->rows[sid];
    }
  }
  const Value *arg = v_none(), *tag = v_none();
  if (f[RF_ARG]) {
    pset(R, "arg");
    arg = op == OP_CONST ? jconst(R, f[RF_ARG], dt) : jvalue(R, f[RF_ARG]);
  } else if (op == OP_CONST && dt->kind == DTK_SCALAR && dt_scalar_of(dt) != dt_void) {
    pset(R, "arg");
    rfail(R, "a %s CONST needs its number (no arg)", dt_repr(&uctx->scratch, dt));
  }
  if (f[RF_TAG]) { pset(R, "tag"); tag = jvalue(R, f[RF_TAG]); }
  MetaList ml = {0, NULL};
  if (f[RF_META]) { pset(R, "meta"); ml = jmetas(R, f[RF_META]); }
  if (op == OP_UNIQUE && R->g) {
    pset(R, "arg");
    if (arg->kind != V_INT || arg->n) rfail(R, "a UNIQUE needs an integer arg");
    if (arg->i > R->g->max_unique) R->g->max_unique = arg->i;
  }
  UOp *u = uop_new(op, dt, ns, src, arg, tag);
  arena_pop(&uctx->scratch, mk);
  if (ml.n) uop_set_meta(u, ml);
  R->rows[i] = u;
  R->nrows = i + 1;
  if (f[RF_DATA]) {
    if (!allow_data) { pset(R, "data"); rfail(R, "not allowed here"); }
    read_data(R, f[RF_DATA], u);
  }
}
static void read_rows(RCtx *R, const cJSON *uops, bool allow_data) {
  pset(R, "uops");
  if (!cJSON_IsArray(uops)) rfail(R, "expected an array, got %s", jkind(uops));
  int n = cJSON_GetArraySize(uops);
  R->rows = arena_alloc(ga(), sizeof(UOp *) * (size_t)(n + 1));
  R->nrows = 0;
  int i = 0;
  RowMemo memo = {"", NULL};
  for (const cJSON *r = uops->child; r; r = r->next, i++) read_row(R, r, i, allow_data, &memo);
  R->row = -1;
  R->op = NULL;
}

/* ---- documents ---- */
/* whether the text ends with a string or bracket open; *str_at: where an open string began (or n) */
static bool json_unclosed(const char *t, size_t n, size_t *str_at) {
  int depth = 0;
  bool str = false;
  *str_at = n;
  for (size_t i = 0; i < n; i++) {
    if (str) { if (t[i] == '\\') i++; else if (t[i] == '"') str = false; }
    else if (t[i] == '"') { str = true; *str_at = i; }
    else if (t[i] == '[' || t[i] == '{') depth++;
    else if (t[i] == ']' || t[i] == '}') depth--;
  }
  if (!str) *str_at = n;
  return str || depth > 0;
}
/* the 1-based line and column of byte off */
typedef struct LineCol { size_t line, col; } LineCol;
static LineCol line_col(const char *text, size_t off) {
  LineCol lc = {1, 1};
  for (size_t i = 0; i < off; i++) { if (text[i] == '\n') lc.line++, lc.col = 1; else lc.col++; }
  return lc;
}
static bool json_ws(char c) { return c == ' ' || c == '\n' || c == '\r' || c == '\t'; }
static cJSON *parse_doc(RCtx *R, const char *text, size_t n) {
  const char *end = NULL;
  cJSON *root = cJSON_ParseWithLengthOpts(text, n, &end, false);
  if (!root) {
    size_t off = end && end >= text ? (size_t)(end - text) : 0;
    if (off > n) off = n;
    size_t k = off + 1;
    while (k < n && json_ws(text[k])) k++;
    bool blank = true;
    for (size_t i = 0; i < n && blank; i++) blank = json_ws(text[i]);
    if (blank) tg_fail(TG_EINPUT, "%s: JSON: empty input", R->file);
    /* cJSON reports an early end at the last character (or at the start of an unterminated
     * string): it is truncation when the text leaves a string or a bracket open there */
    size_t str_at;
    bool open = json_unclosed(text, n, &str_at);
    if (open && (k >= n || str_at == off || str_at + 1 == off)) {
      LineCol e = line_col(text, n);
      tg_fail(TG_EINPUT, "%s: JSON: truncated (unexpected end of input at line %zu, column %zu, offset %zu)", R->file, e.line, e.col, n);
    }
    LineCol lc = line_col(text, off);
    tg_fail(TG_EINPUT, "%s: JSON: syntax error at line %zu, column %zu (offset %zu)", R->file, lc.line, lc.col, off);
  }
  const char *p = end;
  while (p < text + n && json_ws(*p)) p++;
  if (p < text + n) {
    size_t off = (size_t)(p - text);
    LineCol lc = line_col(text, off);
    cJSON_Delete(root);
    tg_fail(TG_EINPUT, "%s: JSON: unexpected text after the document at line %zu, column %zu (offset %zu)", R->file, lc.line, lc.col, off);
  }
  Tok t = {text, text + n, 0};
  annotate_numbers(root, &t);
  return root;
}
/* The parsed document lives in a private bump heap (chunks freed whole when the document is done)
 * instead of one malloc and free per JSON node: cJSON's allocation hooks point at it only while
 * parse_doc runs (the hooks are process-global; they are back to malloc/free when it returns). */
typedef struct JChunk { struct JChunk *prev; size_t off, cap; _Alignas(16) unsigned char data[]; } JChunk;
static _Thread_local JChunk *jheap;
static void *jheap_malloc(size_t n) {
  n = (n + 15) & ~(size_t)15;
  if (!jheap || jheap->off + n > jheap->cap) {
    size_t cap = n > (256u << 10) ? n : (256u << 10);
    JChunk *c = malloc(sizeof *c + cap);
    if (!c) return NULL;
    c->prev = jheap; c->off = 0; c->cap = cap;
    jheap = c;
  }
  void *p = jheap->data + jheap->off;
  jheap->off += n;
  return p;
}
static void jheap_free(void *p) { (void)p; }
static void jheap_release(JChunk *keep) {
  while (jheap) { JChunk *c = jheap->prev; free(jheap); jheap = c; }
  jheap = keep;
}
/* JSON allows no control character but space, tab, newline and carriage return between tokens,
 * and none raw in a string; cJSON skips any byte up to 32 as white space, so they are refused here */
static void check_json_chars(const char *file, const char *text, size_t n) {
  for (size_t i = 0; i < n; i++) {
    unsigned char c = (unsigned char)text[i];
    if (c >= 0x20 || c == '\n' || c == '\t' || c == '\r') continue;
    LineCol lc = line_col(text, i);
    tg_fail(TG_EINPUT, "%s: JSON: control character 0x%02x at line %zu, column %zu (offset %zu): only space, tab, newline and "
            "carriage return may stand between tokens, and a string must escape it", file, c, lc.line, lc.col, i);
  }
}
/* runs fn(R, root, ud) with root freed on success and on failure */
typedef void (*DocFn)(RCtx *R, const cJSON *root, void *ud);
static void with_doc(RCtx *R, const char *text, size_t n, DocFn fn, void *ud) {
  static cJSON_Hooks hooks = {jheap_malloc, jheap_free};
  JChunk *outer = jheap; /* a document read while another is open keeps that one's heap */
  jheap = NULL;
  TgTry t;
  if (TG_TRY(t)) {
    cJSON_InitHooks(&hooks);
    cJSON *root = parse_doc(R, text, n);
    cJSON_InitHooks(NULL);
    fn(R, root, ud);
    tg_try_end(&t);
    jheap_release(outer);
  } else {
    cJSON_InitHooks(NULL);
    jheap_release(outer);
    tg_rethrow();
  }
}
static void check_header(RCtx *R, const cJSON *root, const char *format) {
  pset(R, NULL);
  if (!cJSON_IsObject(root)) rfail(R, "expected a JSON object, got %s", jkind(root));
  pset(R, "format");
  const cJSON *f = cJSON_GetObjectItemCaseSensitive(root, "format");
  if (!f) rfail(R, "missing (expected \"%s\")", format);
  if (strcmp(jstr(R, f, "a string"), format)) rfail(R, "is \"%s\", expected \"%s\"", f->valuestring, format);
  pset(R, "version");
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(root, "version");
  if (!v) rfail(R, "missing");
  int64_t ver = jint(R, v, "an integer");
  if (ver != 1) rfail(R, "%lld is not supported (only 1)", (long long)ver);
  pset(R, "producer");
  const cJSON *p = cJSON_GetObjectItemCaseSensitive(root, "producer");
  if (p) jstr(R, p, "a string");
}
static void check_keys(RCtx *R, const cJSON *obj, const char *const *keys, int nkeys) {
  for (const cJSON *e = obj->child; e; e = e->next) {
    int k = 0;
    while (k < nkeys && strcmp(e->string, keys[k])) k++;
    pset(R, NULL);
    if (k == nkeys) rfail(R, "unknown top-level field \"%s\"", e->string);
    for (const cJSON *d = obj->child; d != e; d = d->next)
      if (strcmp(d->string, e->string) == 0) rfail(R, "duplicate top-level field \"%s\"", e->string);
  }
}

static const struct { const char *name; size_t off; bool i64; } option_keys[] = {
  {"FUSE_ARANGE", offsetof(Options, fuse_arange), false}, {"FUSE_CONV_BW", offsetof(Options, fuse_conv_bw), false},
  {"SPLIT_REDUCEOP", offsetof(Options, split_reduceop), false}, {"DONT_REALIZE_EXPAND", offsetof(Options, dont_realize_expand), false},
  {"DONT_GROUP_REDUCES", offsetof(Options, dont_group_reduces), false},
  {"REDUCEOP_SPLIT_THRESHOLD", offsetof(Options, reduceop_split_threshold), true},
  {"REDUCEOP_SPLIT_SIZE", offsetof(Options, reduceop_split_size), true},
  {"MAX_KERNEL_BUFFERS", offsetof(Options, max_kernel_buffers), true}, {"RING", offsetof(Options, ring), false},
};

/* ---- semantic checks, per row ----
 * What tinygrad itself refuses for such a graph, named by row: the asserts its UOp constructors and
 * UOp.st make (shape mismatches, bad movement args, Variable.bind's range), REDUCE_AXIS axes that
 * UOp.st would index out of range (an IndexError in tinygrad), then Tensor.kernelize's
 * type_verify(tensor_uop_spec) over the sink's toposort. Shapes are checked row by row in order,
 * so every UOp.st call below is one step deep. */
/* Variable(name, min, max): the arg every bound computation reads */
static void verify_define_var(RCtx *R, UOp *u) {
  const Value *a = u->arg;
  bool ok = a->kind == V_TUPLE && a->n == 3 && a->items[0]->kind == V_STR;
  for (int i = 1; ok && i < 3; i++) ok = a->items[i]->kind == V_INT || a->items[i]->kind == V_FLOAT || a->items[i]->kind == V_BOOL;
  if (!ok) { pset(R, "arg"); rfail(R, "a DEFINE_VAR's arg is [name, min, max], not %s", value_repr(&uctx->scratch, a)); }
}
/* tensor_uop_spec: BIND(DEFINE_VAR, int CONST) with the value in the variable's range */
static void verify_bind(RCtx *R, UOp *u) {
  if (u->nsrc != 2 || u->src[0]->op != OP_DEFINE_VAR || u->src[1]->op != OP_CONST || u->src[1]->arg->kind != V_INT)
    rfail(R, "a BIND binds a DEFINE_VAR to an int CONST");
  const Value *va = u->src[0]->arg, *c = u->src[1]->arg;
  if (va->kind != V_TUPLE || va->n != 3 || c->n) return;
  const Value *lo = va->items[1], *hi = va->items[2];
  if (lo->kind != V_INT || hi->kind != V_INT || lo->n || hi->n) return;
  if (c->i < lo->i || c->i > hi->i)
    rfail(R, "bind %lld not in range [%lld, %lld]", (long long)c->i, (long long)lo->i, (long long)hi->i);
}
static void verify_reduce_axes(RCtx *R, UOp *u) {
  const Value *a = u->arg;
  if (u->nsrc != 1) rfail(R, "a REDUCE_AXIS reduces one source, not %d", u->nsrc);
  if (a->kind != V_TUPLE || a->n < 2 || a->items[1]->kind != V_TUPLE) return;
  const ShapeTracker *st = u_st(u->src[0]);
  if (!st) return;
  int nd = st_shape(st).n;
  const Value *ax = a->items[1];
  for (int k = 0; k < ax->n; k++) {
    const Value *x = ax->items[k];
    if (x->kind != V_INT || x->n || x->i < 0 || x->i >= nd)
      rfail(R, "reduce axis %s is not an axis of a %d-dimensional shape", value_repr(ga(), x), nd);
    for (int q = 0; q < k; q++)
      if (ax->items[q]->i == x->i) rfail(R, "reduce axis %lld is given twice", (long long)x->i);
  }
}
/* MULTI(x, axis): the sharded axis is an axis of x */
static void verify_multi_axis(RCtx *R, UOp *u) {
  if (u->nsrc < 1) rfail(R, "a MULTI needs its shards");
  if (u->arg->kind != V_INT || u->arg->n) return;   /* the spec check names a non-int axis */
  const ShapeTracker *st = u_st(u->src[0]);
  int nd = st ? st_shape(st).n : 0;
  if (u->arg->i < 0 || u->arg->i >= nd) rfail(R, "MULTI axis %lld is not an axis of a %d-dimensional shape", (long long)u->arg->i, nd);
}
/* AND/OR/XOR/SHL/SHR take ints or bools (tinygrad's Tensor methods assert it): a float here fails
 * wherever it goes (Python's operator in constant folding, C's & in a kernel) */
static void verify_bit_op(RCtx *R, UOp *u) {
  const DType *d = dt_scalar_of(u->dtype);
  if (dt_is_int(d) || d == dt_bool) return;
  pset(R, "dtype");
  rfail(R, "%s needs an integer or bool dtype, not %s", op_names[u->op], dt_repr(&uctx->scratch, u->dtype));
}
/* UOp.st of the row, its failure prefixed with the row */
static void verify_st(RCtx *R, UOp *u) {
  TgTry t;
  if (TG_TRY(t)) {
    const ShapeTracker *st = u_st(u);
    if (st && st_shape(st).n > TG_MAX_RANK) tg_fail(TG_EINPUT, "a shape of %d dimensions (tgc takes at most %d)", st_shape(st).n, TG_MAX_RANK);
    tg_try_end(&t);
  } else {
    TgErr e = tg_last_error;
    if (e.code != TG_EINPUT) tg_fail(e.code, "%s", e.msg);
    rfail(R, "%s", e.msg);
  }
}
static void verify_rows(RCtx *R, Graph *g) {
  pset(R, NULL);
  for (int i = 0; i < g->nrows; i++) {
    UOp *u = g->rows[i];
    R->row = i;
    R->op = op_names[u->op];
    if (u->op == OP_DEFINE_VAR) verify_define_var(R, u);
    if (u->op == OP_BIND) verify_bind(R, u);
    if (u->op != OP_SINK) verify_st(R, u); /* a SINK's sources differ in shape; tinygrad never asks its st */
    if (u->op == OP_REDUCE_AXIS) verify_reduce_axes(R, u);
    if (u->op == OP_MULTI) verify_multi_axis(R, u);
    if (u->op == OP_AND || u->op == OP_OR || u->op == OP_XOR || u->op == OP_SHL || u->op == OP_SHR) verify_bit_op(R, u);
  }
  /* reach[id]: the node is in the sink's graph and not checked yet (ids are dense per context) */
  ArenaMark mk = arena_mark(&uctx->scratch);
  UList topo = uop_toposort_in(&uctx->scratch, g->sink, NULL, NULL);
  unsigned char *reach = arena_alloc(&uctx->scratch, (size_t)uctx->next_id + 1);
  for (int k = 0; k < topo.n; k++) reach[topo.v[k]->id] = 1;
  for (int i = 0; i < g->nrows; i++) {
    UOp *u = g->rows[i];
    if (!reach[u->id]) continue;
    reach[u->id] = 0; /* a row that repeats an earlier one is the same UOp: check it once */
    R->row = i;
    R->op = op_names[u->op];
    if (!spec_check_tensor(u)) rfail(R, "UOp verification failed: tinygrad's tensor_uop_spec does not accept this row");
  }
  arena_pop(&uctx->scratch, mk);
  R->row = -1;
  R->op = NULL;
}

/* the top-level checks and options of a graph document (root: the whole document, or the
 * streaming reader's object of every member but the rows) */
static void graph_header(RCtx *R, const cJSON *root, Graph *g) {
  static const char *const keys[] = {"format", "version", "producer", "options", "uops", "sink"};
  check_header(R, root, "tgc.graph");
  check_keys(R, root, keys, 6);
  options_default(&g->opt);
  const cJSON *opts = cJSON_GetObjectItemCaseSensitive(root, "options");
  if (opts) {
    pset(R, "options");
    if (!cJSON_IsObject(opts)) rfail(R, "expected an object, got %s", jkind(opts));
    for (const cJSON *e = opts->child; e; e = e->next) {
      size_t k = 0;
      while (k < sizeof option_keys / sizeof *option_keys && strcmp(option_keys[k].name, e->string)) k++;
      pset(R, "options.");
      ppush(R, "%s", e->string);
      if (k == sizeof option_keys / sizeof *option_keys) rfail(R, "unknown option");
      int64_t v = jint(R, e, "an integer");
      void *field = (char *)&g->opt + option_keys[k].off;
      if (option_keys[k].i64) *(int64_t *)field = v;
      else {
        if (v < -2147483647 || v > 2147483647) rfail(R, "out of range");
        *(int *)field = (int)v;
      }
    }
  }
  pset(R, "uops");
  if (!cJSON_GetObjectItemCaseSensitive(root, "uops")) rfail(R, "missing");
}
/* after the rows: the sink and the per-row semantic checks */
static void graph_tail(RCtx *R, const cJSON *root, Graph *g) {
  g->nrows = R->nrows;
  g->rows = R->rows;
  pset(R, "sink");
  const cJSON *s = cJSON_GetObjectItemCaseSensitive(root, "sink");
  if (!s) rfail(R, "missing");
  int64_t sid = jint(R, s, "a row id");
  if (sid < 0 || sid >= g->nrows) rfail(R, "no row %lld", (long long)sid);
  if (g->rows[sid]->op != OP_SINK) rfail(R, "row %lld is a %s, not a SINK", (long long)sid, op_names[g->rows[sid]->op]);
  g->sink = g->rows[sid];
  verify_rows(R, g);
}
static void graph_doc(RCtx *R, const cJSON *root, void *ud) {
  Graph *g = ud;
  graph_header(R, root, g);
  read_rows(R, cJSON_GetObjectItemCaseSensitive(root, "uops"), true);
  graph_tail(R, root, g);
}

/* ---- streaming graph reader ----
 * A graph file is read one top-level member at a time: each member but "uops" is parsed whole
 * (they are small) into a header object, and "uops" one row at a time, the row's cJSON nodes in
 * a bump heap that is reset for the next row. The reader so holds one row's tree, never the
 * document's (cJSON's tree is about 12x its text). On any failure the whole-document reader runs
 * instead and reports: its order of checks (JSON syntax, header, rows) is the one users see. */
/* The parse heap (jheap) is the header's while members are read and a heap of its own, emptied
 * for each row, while the rows are; in_rows says which, for the cleanup after a failure. */
typedef struct Stream { const char *p, *end; JChunk *hdr; bool in_rows; UOp **rows; size_t cap; } Stream;
static void s_ws(Stream *S) { while (S->p < S->end && (*S->p == ' ' || *S->p == '\n' || *S->p == '\r' || *S->p == '\t')) S->p++; }
static bool s_char(Stream *S, char c) {
  s_ws(S);
  if (S->p < S->end && *S->p == c) { S->p++; return true; }
  return false;
}
static _Noreturn void s_bad(void) { tg_fail(TG_EINPUT, "streaming read failed"); }
/* one JSON value at S->p (nodes from jheap), numbers annotated from its own text */
static cJSON *s_value(Stream *S) {
  s_ws(S);
  const char *b = S->p, *e = NULL;
  cJSON *v = cJSON_ParseWithLengthOpts(b, (size_t)(S->end - b), &e, false);
  if (!v || !e || e <= b || e > S->end) s_bad();
  S->p = e;
  Tok t = {b, e, 0};
  annotate_numbers(v, &t);
  return v;
}
static void s_reset(JChunk **heap) { /* keep the newest chunk, emptied */
  if (!*heap) return;
  JChunk *keep = *heap, *c = keep->prev;
  while (c) { JChunk *p = c->prev; free(c); c = p; }
  keep->prev = NULL;
  keep->off = 0;
}
static void s_free(JChunk **heap) {
  for (JChunk *c = *heap; c;) { JChunk *p = c->prev; free(c); c = p; }
  *heap = NULL;
}
static void s_rows(RCtx *R, Stream *S) {
  if (!s_char(S, '[')) s_bad();
  S->hdr = jheap, jheap = NULL, S->in_rows = true;
  R->nrows = 0;
  RowMemo memo = {"", NULL};
  int i = 0;
  if (!s_char(S, ']')) {
    for (;; i++) {
      if ((size_t)i + 1 >= S->cap) {
        size_t nc = S->cap ? S->cap * 2 : 1024;
        UOp **nr = realloc(S->rows, nc * sizeof *nr);
        if (!nr) tg_fail(TG_EINTERNAL, "out of memory");
        S->rows = nr, S->cap = nc;
        R->rows = nr;
      }
      if (i == INT32_MAX - 1) s_bad();
      s_reset(&jheap);
      read_row(R, s_value(S), i, true, &memo);
      if (s_char(S, ']')) { i++; break; }
      if (!s_char(S, ',')) s_bad();
    }
  }
  s_free(&jheap);
  jheap = S->hdr, S->hdr = NULL, S->in_rows = false;
  R->rows = arena_alloc(ga(), sizeof(UOp *) * (size_t)(i + 1));
  if (i) memcpy(R->rows, S->rows, sizeof(UOp *) * (size_t)i);
  R->nrows = i;
  R->row = -1;
  R->op = NULL;
}
static void s_doc(RCtx *R, Stream *S, Graph *g) {
  cJSON *hdr = cJSON_CreateObject();
  if (!hdr || !s_char(S, '{')) s_bad();
  bool rows = false;
  if (!s_char(S, '}')) {
    for (;;) {
      cJSON *k = s_value(S);
      if (!cJSON_IsString(k) || !s_char(S, ':')) s_bad();
      cJSON *v;
      if (strcmp(k->valuestring, "uops") == 0) {
        if (rows) s_bad();
        rows = true;
        s_rows(R, S);
        v = cJSON_CreateArray(); /* the rows' place among the members, for check_keys */
      } else {
        v = s_value(S);
      }
      if (!v || !cJSON_AddItemToObject(hdr, k->valuestring, v)) s_bad();
      if (s_char(S, '}')) break;
      if (!s_char(S, ',')) s_bad();
    }
  }
  s_ws(S);
  if (S->p != S->end || !rows) s_bad();
  graph_header(R, hdr, g);
  graph_tail(R, hdr, g);
}
/* the streaming read; false (nothing kept but interned nodes) when the input is bad; any other
 * failure (out of memory) is passed on */
static bool graph_stream(RCtx *R, const char *text, size_t n, Graph *g) {
  static cJSON_Hooks hooks = {jheap_malloc, jheap_free};
  JChunk *outer = jheap;
  jheap = NULL;
  Stream S = {text, text + n, NULL, false, NULL, 0};
  TgTry t;
  volatile bool ok = false;
  cJSON_InitHooks(&hooks);
  if (TG_TRY(t)) {
    s_doc(R, &S, g);
    tg_try_end(&t);
    ok = true;
  }
  cJSON_InitHooks(NULL);
  s_free(&jheap); /* the header's heap, or the rows' when a row failed */
  if (S.in_rows) s_free(&S.hdr);
  free(S.rows);
  jheap = outer;
  if (!ok && tg_last_error.code != TG_EINPUT) { /* out of memory and the like: no second try */
    tg_rethrow();
  }
  return ok;
}

Graph *graph_read_mem(const char *name, const char *text, size_t n, const char *basedir) {
  Graph *g = arena_alloc(ga(), sizeof *g);
  g->path = arena_strdup(ga(), name);
  g->max_unique = -1;
  RCtx R = {.file = g->path, .basedir = basedir, .row = -1, .g = g, .text = text, .tlen = n};
  /* The node and value tables sized once for the rows (about 100 bytes each) and the nodes that
   * scheduling makes (create_schedule's reserve: 7 more per row), since growing a table hashes
   * every entry again: schedules 4-6% faster (make bench). At most 256K entries ahead (a 4 MB
   * table of slots): a bigger graph grows its tables as it reads, and a file of buffer data
   * holds fewer rows than its size says. The View and ShapeTracker tables get half the rows (the
   * bench graphs hold 0.2-0.3 views a row): grown from their first 16 slots as the file is read
   * instead, they left conv_wino's kernelize 10% slower (make bench). */
  size_t rows = n / 100, cap = (size_t)1 << 18;
  uop_reserve(rows * 8, cap);
  iset_reserve_more(&uctx->values, rows, cap);
  iset_reserve_more(&uctx->views, rows / 2, cap);
  iset_reserve_more(&uctx->sts, rows / 2, cap);
  check_json_chars(g->path, text, n);
  if (!graph_stream(&R, text, n, g)) { /* the whole-document reader, from scratch, says what is wrong */
    memset(g, 0, sizeof *g);
    g->path = R.file;
    g->max_unique = -1;
    R = (RCtx){.file = g->path, .basedir = basedir, .row = -1, .g = g, .text = text, .tlen = n};
    with_doc(&R, text, n, graph_doc, g);
  }
  uctx->opt = g->opt;
  if (g->max_unique + 1 > uctx->next_unique) uctx->next_unique = g->max_unique + 1;
  return g;
}

static char *dir_of(const char *path) {
  const char *s = strrchr(path, '/');
  if (!s) return arena_strdup(ga(), ".");
  if (s == path) return arena_strdup(ga(), "/");
  return arena_printf(ga(), "%.*s", (int)(s - path), path);
}
/* the text lives in an arena of its own, freed once the graph is read (nothing points into it) */
Graph *graph_read_file(const char *path) {
  Arena ta = {0};
  TgTry t;
  if (TG_TRY(t)) {
    size_t n;
    char *text = read_file(&ta, path, &n);
    if (!text) tg_fail(TG_EINPUT, "%s: cannot read: %s", path, strerror(errno));
    Graph *g = graph_read_mem(path, text, n, strcmp(path, "-") == 0 ? "." : dir_of(path));
    tg_try_end(&t);
    arena_free(&ta);
    return g;
  }
  arena_free(&ta);
  tg_rethrow();
}

/* ---- expect files ---- */
static void expect_doc(RCtx *R, const cJSON *root, void *ud) {
  Expect *x = ud;
  static const char *const keys[] = {"format", "version", "producer", "kernels", "schedule", "uops", "outputs"};
  check_header(R, root, "tgc.expect");
  check_keys(R, root, keys, 7);
  pset(R, "kernels");
  const cJSON *k = cJSON_GetObjectItemCaseSensitive(root, "kernels");
  if (!k) rfail(R, "missing");
  int64_t kk = jint(R, k, "an integer");
  if (kk < 0 || kk > 1000000000) rfail(R, "out of range");
  x->kernels = (int)kk;
  const cJSON *uops = cJSON_GetObjectItemCaseSensitive(root, "uops");
  pset(R, "uops");
  if (!uops) rfail(R, "missing");
  read_rows(R, uops, false);
  const cJSON *sch = cJSON_GetObjectItemCaseSensitive(root, "schedule");
  pset(R, "schedule");
  if (!sch) rfail(R, "missing");
  if (!cJSON_IsArray(sch)) rfail(R, "expected an array, got %s", jkind(sch));
  x->nitems = cJSON_GetArraySize(sch);
  x->items = arena_alloc(ga(), sizeof(ExpectItem) * (size_t)(x->nitems + 1));
  int i = 0;
  for (const cJSON *it = sch->child; it; it = it->next, i++) {
    pset(R, NULL);
    ppush(R, "schedule[%d]", i);
    if (!cJSON_IsObject(it)) rfail(R, "expected an object, got %s", jkind(it));
    const cJSON *op = cJSON_GetObjectItemCaseSensitive(it, "op"), *ast = cJSON_GetObjectItemCaseSensitive(it, "ast");
    size_t o = ppush(R, ".op");
    if (!op) rfail(R, "missing");
    const char *ops = jstr(R, op, "an op name");
    if (op_from_name(ops) == OP_INVALID) rfail(R, "unknown op \"%s\"", ops);
    x->items[i].op = op_names[op_from_name(ops)];
    ppop(R, o);
    ppush(R, ".ast");
    if (!ast) rfail(R, "missing");
    x->items[i].ast = jref(R, ast);
  }
  const cJSON *outs = cJSON_GetObjectItemCaseSensitive(root, "outputs");
  if (outs) {
    pset(R, "outputs");
    if (!cJSON_IsArray(outs)) rfail(R, "expected an array, got %s", jkind(outs));
    x->noutputs = cJSON_GetArraySize(outs);
    x->outputs = arena_alloc(ga(), sizeof(ExpectOut) * (size_t)(x->noutputs + 1));
    i = 0;
    for (const cJSON *e = outs->child; e; e = e->next, i++) {
      ExpectOut *eo = &x->outputs[i];
      pset(R, NULL);
      ppush(R, "outputs[%d]", i);
      if (!cJSON_IsObject(e)) rfail(R, "expected an object, got %s", jkind(e));
      const cJSON *idx = cJSON_GetObjectItemCaseSensitive(e, "index"), *dt = cJSON_GetObjectItemCaseSensitive(e, "dtype");
      const cJSON *sh = cJSON_GetObjectItemCaseSensitive(e, "shape"), *enc = cJSON_GetObjectItemCaseSensitive(e, "encoding");
      const cJSON *by = cJSON_GetObjectItemCaseSensitive(e, "bytes");
      size_t o = ppush(R, ".index");
      if (!idx) rfail(R, "missing");
      eo->index = (int)jint(R, idx, "an integer");
      ppop(R, o);
      ppush(R, ".dtype");
      if (!dt) rfail(R, "missing");
      const char *dts = jstr(R, dt, "a dtype string");
      if (!(eo->dtype = dt_parse(dts))) rfail(R, "unknown dtype \"%s\"", dts);
      ppop(R, o);
      ppush(R, ".shape");
      if (!sh || !cJSON_IsArray(sh)) rfail(R, "expected an array of integers, got %s", jkind(sh));
      eo->ndim = cJSON_GetArraySize(sh);
      if (eo->ndim > TG_MAX_DIMS) rfail(R, "more than %d dims", TG_MAX_DIMS);
      eo->shape = arena_alloc(ga(), sizeof *eo->shape * (size_t)(eo->ndim + 1));
      int d = 0;
      size_t count = 1;
      for (const cJSON *s = sh->child; s; s = s->next, d++) {
        eo->shape[d] = jint(R, s, "an integer");
        if (eo->shape[d] < 0) rfail(R, "negative dim");
        count *= (size_t)eo->shape[d];
      }
      ppop(R, o);
      ppush(R, ".encoding");
      if (!enc || strcmp(jstr(R, enc, "a string"), "base64")) rfail(R, "expected \"base64\"");
      ppop(R, o);
      ppush(R, ".bytes");
      if (!by) rfail(R, "missing");
      eo->bytes = b64_decode(ga(), jstr(R, by, "a base64 string"), &eo->nbytes);
      if (!eo->bytes) rfail(R, "invalid base64");
      if (eo->nbytes != count * (size_t)eo->dtype->itemsize) rfail(R, "%zu bytes, the shape needs %zu", eo->nbytes, count * (size_t)eo->dtype->itemsize);
    }
  }
}
Expect *expect_read_file(const char *path) {
  size_t n;
  char *text = read_file(ga(), path, &n);
  if (!text) tg_fail(TG_EINPUT, "%s: cannot read: %s", path, strerror(errno));
  Expect *x = arena_alloc(ga(), sizeof *x);
  RCtx R = {.file = arena_strdup(ga(), path), .row = -1, .text = text, .tlen = n};
  check_json_chars(R.file, text, n);
  with_doc(&R, text, n, expect_doc, x);
  return x;
}
