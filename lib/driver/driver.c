/* driver.c: scheduling, inputs, running and comparing a graph (driver.h has the overview).
 *
 * The AOT bundle is straight-line C generated from the schedule: every buffer of the schedule
 * gets a slot b[k] in tgc_model_run (a graph BUFFER row is the caller's input pointer, a
 * scheduler-made buffer is calloc'd, a BUFFER_VIEW is its base's pointer plus a byte offset),
 * items become kernel calls (prototypes taken from the rendered function headers, so they match
 * the definitions in the per-kernel files exactly), memmove (COPY) or pointer offsets
 * (BUFFER_VIEW), and each output is memcpy'd, or gathered through its ShapeTracker's views
 * (emitted as constant tables) when it is a view of a buffer, as rt_read does. A multi-device
 * buffer gets one slot per shard (each its own allocation; COPY is memmove between them, a sharded
 * MULTI output is laid side by side along its axis, MSELECT/MSTACK read one shard), a symbolic
 * output is read at the shape its BINDs give, and a CONST output is its value through its views.
 * A BUFFER_VIEW at a symbolic offset (an assign into a shrink by a bound variable) sits at the
 * offset the schedule's variable values give, in the bundle and the runtime alike. */
#include "driver_int.h"
#include "../runtime/runtime.h"
#include "../runtime/gpu.h"
#include <dirent.h>
#include <unistd.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* ---------------------------------------------------------------- scheduling and inputs */
Schedule *driver_schedule(Graph *g) {
  uctx->opt = g->opt;
  if (g->max_unique >= uctx->next_unique) uctx->next_unique = g->max_unique + 1;
  return create_schedule(g->sink);
}

static const BufData *data_of(const Graph *g, UOp *buf) {
  for (int i = 0; i < g->ndata; i++) if (g->data[i].buf == buf) return &g->data[i];
  return NULL;
}
int row_of(const Graph *g, UOp *u) {
  for (int i = 0; i < g->nrows; i++) if (g->rows[i] == u) return i;
  return -1;
}

void driver_set_inputs(Graph *g, int n, const DriverInput *in) {
  for (int i = 0; i < n; i++) {
    int64_t r = in[i].row;
    if (r < 0 || r >= g->nrows || !g->rows[r] || g->rows[r]->op != OP_BUFFER)
      tg_fail(TG_EINPUT, "--input %lld=%s: row %lld is not a BUFFER of %s", (long long)r, in[i].path, (long long)r, g->path);
    UOp *b = g->rows[r];
    const DType *dt;
    int ndim;
    int64_t shape[TG_MAX_DIMS];
    size_t nbytes;
    void *data = npy_read(ga(), in[i].path, &dt, &ndim, shape, &nbytes);
    const DType *want = dt_base(b->dtype);
    if (dt->scalar != want->scalar || dt->itemsize != want->itemsize)
      tg_fail(TG_EINPUT, "%s: dtype %s, but BUFFER row %lld is %s", in[i].path, dt_repr(ga(), dt), (long long)r, dt_repr(ga(), want));
    size_t count = nbytes / (size_t)dt->itemsize;
    if (b->arg->kind != V_INT || (int64_t)count != b->arg->i)
      tg_fail(TG_EINPUT, "%s: %zu elements, but BUFFER row %lld has %lld", in[i].path, count, (long long)r, (long long)b->arg->i);
    BufData *d = (BufData *)data_of(g, b);
    if (!d) {
      BufData *nd = arena_alloc(ga(), sizeof *nd * (size_t)(g->ndata + 1));
      if (g->ndata) memcpy(nd, g->data, sizeof *nd * (size_t)g->ndata);
      d = &nd[g->ndata++];
      g->data = nd;
      d->buf = b;
    }
    d->bytes = data;
    d->nbytes = nbytes;
  }
}

/* the DEFINE_GLOBAL a LOAD/STORE address leads to (through VIEWs), or NULL */
static UOp *global_of(UOp *u) {
  while (u && u->op != OP_DEFINE_GLOBAL) u = u->nsrc ? u->src[0] : NULL;
  return u;
}

void driver_check_inputs(const Graph *g, const Schedule *s) {
  UMap graph_bufs, written;
  umap_init(&graph_bufs, ga());
  umap_init(&written, ga());
  for (int i = 0; i < g->nrows; i++) if (g->rows[i] && g->rows[i]->op == OP_BUFFER && !data_of(g, g->rows[i])) umap_put(&graph_bufs, g->rows[i], NULL);
  if (!graph_bufs.n) return;
#define CHECK_READ(B)                                                                                         \
  do {                                                                                                        \
    UOp *b_ = (B);                                                                                            \
    if (umap_has(&graph_bufs, b_) && !umap_has(&written, b_))                                                 \
      tg_fail(TG_EINPUT, "%s: BUFFER row %d has no data and no --input, but the schedule reads it", g->path, row_of(g, b_)); \
  } while (0)
  for (int i = 0; i < s->nitems; i++) {
    const SchedItem *si = &s->items[i];
    if (si->ast->op == OP_COPY && si->nbufs >= 2) { CHECK_READ(si->bufs[1].buf); umap_put(&written, si->bufs[0].buf, NULL); continue; }
    if (si->ast->op != OP_SINK) continue;
    UList tl = uop_toposort(si->ast, NULL, NULL);
    for (int k = 0; k < tl.n; k++) {
      if (tl.v[k]->op != OP_LOAD) continue;
      UOp *dg = global_of(tl.v[k]->src[0]);
      if (dg && dg->arg->kind == V_INT && dg->arg->i >= 0 && dg->arg->i < si->nbufs) CHECK_READ(si->bufs[dg->arg->i].buf);
    }
    for (int k = 0; k < tl.n; k++) {
      if (tl.v[k]->op != OP_STORE) continue;
      UOp *dg = global_of(tl.v[k]->src[0]);
      if (dg && dg->arg->kind == V_INT && dg->arg->i >= 0 && dg->arg->i < si->nbufs) umap_put(&written, si->bufs[dg->arg->i].buf, NULL);
    }
  }
  UOp *ss = s->sched_sink;
  for (int i = 0; ss && i < ss->nsrc; i++) {
    UOp *b = u_base(ss->src[i]);
    if (b->op == OP_ASSIGN) b = u_buf_uop(b);
    CHECK_READ(b);
  }
#undef CHECK_READ
}

/* ---------------------------------------------------------------- running */
/* the output's dtype, shape and byte size; fails on symbolic shapes */
void out_shape(UOp *t, DriverOut *o) { out_shape_vars(t, NULL, o); }

/* ---------------------------------------------------------------- symbolic outputs
 * tinygrad's create_schedule_with_vars returns var_vals (each BIND's DEFINE_VAR -> its value), and
 * a symbolic-shaped tensor's buffer holds the value at the bound shape (the BUFFER is allocated at
 * the shape's vmax): the concrete shape is sym_infer(shape, var_vals), and the values are read
 * through the tensor's ShapeTracker with every variable replaced by its value. */
static void vv_add(VarVals *vv, UOp *var, int64_t val) {
  if (var->op != OP_DEFINE_VAR) return;
  for (int i = 0; i < vv->n; i++) if (vv->vars[i] == var) return;
  if (vv->n == vv->cap) {
    int nc = vv->cap ? vv->cap * 2 : 16;
    UOp **nv = arena_alloc(ga(), sizeof *nv * (size_t)nc);
    int64_t *nl = arena_alloc(ga(), sizeof *nl * (size_t)nc);
    if (vv->n) { memcpy(nv, vv->vars, sizeof *nv * (size_t)vv->n); memcpy(nl, vv->vals, sizeof *nl * (size_t)vv->n); }
    vv->vars = nv; vv->vals = nl; vv->cap = nc;
  }
  vv->vars[vv->n] = var;
  vv->vals[vv->n++] = val;
}
static void vv_binds(VarVals *vv, UOp *u) {
  if (!u) return;
  UList tl = uop_toposort(u, NULL, NULL);
  for (int k = 0; k < tl.n; k++)
    if (tl.v[k]->op == OP_BIND && tl.v[k]->nsrc == 2 && tl.v[k]->src[1]->op == OP_CONST && tl.v[k]->src[1]->arg->kind == V_INT)
      vv_add(vv, tl.v[k]->src[0], tl.v[k]->src[1]->arg->i);
}
void var_vals(const Schedule *s, UOp *t, VarVals *vv) {
  memset(vv, 0, sizeof *vv);
  for (int i = 0; s && i < s->nitems; i++)
    for (int q = 0; q < s->items[i].nvars; q++) {
      UOp *v = s->items[i].vars[q];
      vv_add(vv, v->op == OP_BIND ? v->src[0] : v, s->items[i].vals[q]);
    }
  /* a BUFFER_VIEW of a shrink by a bound variable carries its size/offset as UOps with the BIND */
  UList tl = s && s->sched_sink ? uop_toposort(s->sched_sink, NULL, NULL) : (UList){0, NULL};
  for (int k = 0; k < tl.n; k++) {
    const Value *a = tl.v[k]->arg;
    if (tl.v[k]->op != OP_BUFFER_VIEW || a->kind != V_TUPLE) continue;
    for (int j = 0; j < a->n; j++) if (a->items[j]->kind == V_UOP) vv_binds(vv, a->items[j]->u);
  }
  if (!t) return;
  const ShapeTracker *st = u_st(t);
  UOp *vs[64];
  int nv = st ? st_vars(st, vs, 64) : 0;
  for (int i = 0; i < nv; i++) vv_binds(vv, vs[i]);
  SList sh = u_shape(t);
  for (int k = 0; k < sh.n; k++) vv_binds(vv, sh.v[k].u);
}
int64_t vv_value(const Value *v, const VarVals *vv) {
  if (v->kind == V_INT) return v->i;
  if (v->kind != V_UOP) tg_fail(TG_EDEVICE, "a BUFFER_VIEW argument that is neither an int nor a UOp");
  return sym_infer(v->u, vv->n, vv->vars, vv->vals);
}
static int64_t vv_eval(Sint x, const VarVals *vv) {
  if (si_is_int(x)) return x.c;
  if (!vv) tg_fail(TG_EDEVICE, "output with a symbolic shape: not implemented yet");
  return sym_infer(x.u, vv->n, vv->vars, vv->vals);
}
void out_shape_vars(UOp *t, const VarVals *vv, DriverOut *o) {
  SList sh = u_shape(t);
  if (sh.n > TG_MAX_DIMS) tg_fail(TG_EDEVICE, "output of %d dimensions (at most %d)", sh.n, TG_MAX_DIMS);
  o->dtype = dt_base(t->dtype);
  o->ndim = sh.n;
  size_t n = 1;
  for (int k = 0; k < sh.n; k++) {
    int64_t d = vv_eval(sh.v[k], vv);
    if (d < 0) tg_fail(TG_EDEVICE, "output dimension %d is %lld under the bound variables", k, (long long)d);
    o->shape[k] = d;
    n *= (size_t)d;
  }
  o->nbytes = n * (size_t)o->dtype->itemsize;
}
bool out_symbolic(UOp *t) {
  SList sh = u_shape(t);
  for (int k = 0; k < sh.n; k++) if (!si_is_int(sh.v[k])) return true;
  const ShapeTracker *st = u_st(t);
  UOp *vs[1];
  return st && st_vars(st, vs, 1) > 0;
}
const ShapeTracker *concrete_st(const ShapeTracker *st, const VarVals *vv) {
  const View **vs = arena_alloc(ga(), sizeof *vs * (size_t)(st->nviews + 1));
  for (int i = 0; i < st->nviews; i++) {
    const View *v = st->views[i];
    int nd = v->ndim;
    Sint *sh = arena_alloc(ga(), sizeof *sh * (size_t)(nd + 1)), *sd = arena_alloc(ga(), sizeof *sd * (size_t)(nd + 1));
    Sint *mk = v->mask ? arena_alloc(ga(), sizeof *mk * (size_t)(2 * nd + 1)) : NULL;
    for (int k = 0; k < nd; k++) { sh[k] = si(vv_eval(v->shape[k], vv)); sd[k] = si(vv_eval(v->strides[k], vv)); }
    for (int k = 0; mk && k < 2 * nd; k++) mk[k] = si(vv_eval(v->mask[k], vv));
    SList strides = sl(nd, sd);
    vs[i] = view_create(sl(nd, sh), &strides, si(vv_eval(v->offset, vv)), mk);
  }
  return st_intern(st->nviews, vs);
}
const ShapeTracker *bind_vars(const ShapeTracker *st, const void *vv) { return concrete_st(st, vv); }

/* ---------------------------------------------------------------- outputs left unrealized */
/* t's value can be read after the schedule runs: a buffer (or a view of one), a constant, or a
 * MULTI of such shards */
static bool out_readable(UOp *t) {
  if (t->op == OP_MULTI) {
    for (int i = 0; i < t->nsrc; i++) if (!out_readable(t->src[i])) return false;
    return true;
  }
  int shard = -1;
  Op op = (Op)rt_value_base(t, &shard)->op;
  return op == OP_BUFFER || op == OP_BUFFER_VIEW || op == OP_CONST;
}

Schedule *driver_realize_outputs(Schedule *s) {
  UOp *ss = s->sched_sink;
  bool *ok = arena_alloc(ga(), sizeof(bool) * (size_t)(ss->nsrc + 1));
  int n = 0;
  for (int i = 0; i < ss->nsrc; i++) n += !(ok[i] = out_readable(ss->src[i]));
  if (!n) return s;
  /* create_schedule_with_vars' becomes_map: every ASSIGN is its buffer once the schedule ran */
  UMap bm;
  umap_init(&bm, ga());
  UList topo = uop_toposort(ss, NULL, NULL);
  for (int i = 0; i < topo.n; i++) if (topo.v[i]->op == OP_ASSIGN) umap_put(&bm, topo.v[i], u_buf_uop(topo.v[i]));
  /* Tensor.numpy(): .contiguous().realize() of each such output, in one sink */
  UOp **src = arena_alloc(ga(), sizeof(UOp *) * (size_t)n), **outs = arena_alloc(ga(), sizeof(UOp *) * (size_t)ss->nsrc);
  int k = 0;
  for (int i = 0; i < ss->nsrc; i++) {
    UOp *t = ss->src[i];
    if (!ok[i]) src[k++] = uop1(OP_CONTIGUOUS, t->dtype, uop_substitute(t, &bm), NULL);
  }
  Schedule *s2 = create_schedule(uop_sink(n, src, NULL));
  Schedule *m = arena_alloc(ga(), sizeof *m);
  *m = *s;
  m->nitems = s->nitems + s2->nitems;
  m->items = arena_alloc(ga(), sizeof(SchedItem) * (size_t)(m->nitems + 1));
  memcpy(m->items, s->items, sizeof(SchedItem) * (size_t)s->nitems);
  memcpy(m->items + s->nitems, s2->items, sizeof(SchedItem) * (size_t)s2->nitems);
  m->nkernels += s2->nkernels; m->ncopies += s2->ncopies; m->nviews += s2->nviews;
  k = 0;
  for (int i = 0; i < ss->nsrc; i++) outs[i] = ok[i] ? ss->src[i] : s2->sched_sink->src[k++];
  m->sched_sink = uop_sink(ss->nsrc, outs, ss->arg);
  return m;
}

static DriverRunOpts run_opts = {1, 0, false, 0, NULL, false};
void driver_run_options(DriverRunOpts o) { run_opts = o; }
static int cpu_threads(void) {
  if (run_opts.threads > 0) return run_opts.threads;
  long n = sysconf(_SC_NPROCESSORS_ONLN);
  return n > 0 ? (int)n : 1;
}
static int run_sched(Runtime *rt, Schedule *s, int dev) {
  return dev == 1 ? rtcl_run_schedule(rt, s) : dev == 2 ? rtcu_run_schedule(rt, s) : rt_run_schedule(rt, s);
}

/* per item: the median of its reps times (item_ms is reps rows of s->nitems), its name and bytes */
static void profile_items(Runtime *rt, const Schedule *s, DriverRun *r, const double *item_ms, const Program **prg, int reps) {
  int ni = s->nitems;
  r->nitems = ni;
  r->item_ms = arena_alloc(ga(), sizeof *r->item_ms * (size_t)(ni + 1));
  r->item_names = arena_alloc(ga(), sizeof *r->item_names * (size_t)(ni + 1));
  r->item_bytes = arena_alloc(ga(), sizeof *r->item_bytes * (size_t)(ni + 1));
  double *col = arena_alloc(ga(), sizeof *col * (size_t)reps);
  for (int i = 0; i < ni; i++) {
    const SchedItem *si = &s->items[i];
    for (int k = 0; k < reps; k++) col[k] = item_ms[(size_t)k * (size_t)ni + (size_t)i];
    r->item_ms[i] = tg_median(col, reps);
    r->item_names[i] = prg[i] ? prg[i]->name : si->ast->op == OP_COPY ? "copy" : "view";
    size_t b = 0;
    for (int j = 0; j < si->nbufs; j++) b += rt_buffer(rt, si->bufs[j].buf, si->bufs[j].shard)->nbytes;
    r->item_bytes[i] = b;
  }
}

/* run s with one of the runtimes: 0 CPU, 1 OpenCL, 2 CUDA */
static DriverRun *run_on(Graph *g, Schedule *s0, int dev) {
  Schedule *const s = driver_realize_outputs(s0); /* set once, before the TG_TRY below */
  Runtime *rt = rt_new(g);
  rt->threads = cpu_threads();
  rt->fast_sums = run_opts.fast_sums;
  rt->beam = run_opts.beam;
  rt->log = run_opts.log;
  VarVals svv;
  var_vals(s, NULL, &svv);
  rt->nvars = svv.n; rt->vars = svv.vars; rt->vals = svv.vals;
  DriverRun *r = arena_alloc(ga(), sizeof *r);
  TgTry t;
  if (TG_TRY(t)) {
    r->nkernels = run_sched(rt, s, dev);
    UOp *ss = s->sched_sink;
    r->noutputs = ss->nsrc;
    r->outs = arena_alloc(ga(), sizeof *r->outs * (size_t)(ss->nsrc + 1));
    for (int i = 0; i < ss->nsrc; i++) {
      DriverOut *o = &r->outs[i];
      UOp *ot = ss->src[i];
      size_t got;
      if (ot->op != OP_MULTI && out_symbolic(ot)) {
        /* a symbolic output: its shape and views under the schedule's variable values */
        VarVals vv;
        var_vals(s, ot, &vv);
        out_shape_vars(ot, &vv, o);
        o->data = arena_alloc(ga(), o->nbytes + 16);
        RtSource src;
        const char *why = rt_source(ot, -1, bind_vars, &vv, &src);
        if (why) tg_fail(TG_EDEVICE, "output %d is %s", i, why);
        got = rt_read_st(rt, src.base, src.shard, src.st, o->data, o->nbytes);
      } else {
        out_shape(ot, o);
        o->data = arena_alloc(ga(), o->nbytes + 16);
        got = rt_read(rt, ot, -1, o->data, o->nbytes);
      }
      if (got != o->nbytes) tg_fail(TG_EDEVICE, "output %d: read %zu of %zu bytes", i, got, o->nbytes);
    }
    int reps = run_opts.profile && run_opts.repeat < 1 ? 1 : run_opts.repeat;
    if (reps > 0) { /* every kernel is compiled and every buffer allocated by now */
      double *ms = arena_alloc(ga(), sizeof *ms * (size_t)reps);
      int ni = s->nitems;
      double *item_ms = run_opts.profile ? arena_alloc(ga(), sizeof *item_ms * (size_t)reps * (size_t)(ni + 1)) : NULL;
      const Program **prg = run_opts.profile ? arena_alloc(ga(), sizeof *prg * (size_t)(ni + 1)) : NULL;
      for (int k = 0; k < reps; k++) {
        rt->item_ms = item_ms ? item_ms + (size_t)k * (size_t)ni : NULL;
        rt->item_prg = prg;
        double t0 = tg_now_ms();
        run_sched(rt, s, dev);
        ms[k] = tg_now_ms() - t0;
      }
      rt->item_ms = NULL, rt->item_prg = NULL;
      r->nrepeat = reps;
      r->ms_median = tg_median(ms, reps); /* sorts ms */
      r->ms_min = ms[0];
      if (item_ms) profile_items(rt, s, r, item_ms, prg, reps);
    }
    tg_try_end(&t);
  } else {
    char msg[sizeof tg_last_error.msg];
    int code = tg_last_error.code;
    snprintf(msg, sizeof msg, "%s", tg_last_error.msg);
    rt_free(rt);
    tg_fail(code, "%s", msg);
  }
  rt_free(rt);
  return r;
}

DriverRun *driver_run_cpu(Graph *g, Schedule *s) { return run_on(g, s, 0); }

DriverRun *driver_run_device(Graph *g, Schedule *s, const char *device) {
  if (!strcmp(device, "cpu")) return run_on(g, s, 0);
  if (!strcmp(device, "opencl")) return run_on(g, s, 1);
  if (!strcmp(device, "cuda")) return run_on(g, s, 2);
  tg_fail(TG_EINPUT, "unknown device '%s'", device);
}

void driver_write_outputs(const DriverRun *r, const char *dir, int navoid, const char *const *avoid) {
  for (int i = 0; i < r->noutputs; i++) {
    char *path = arena_printf(ga(), "%s/out%d.npy", dir, i);
    char rp[4096], ra[4096];
    for (int k = 0; k < navoid; k++) {
      bool same = strcmp(path, avoid[k]) == 0;
      if (!same && realpath(path, rp) && realpath(avoid[k], ra)) same = strcmp(rp, ra) == 0;
      if (same) tg_fail(TG_EINPUT, "%s: would overwrite the input file %s", path, avoid[k]);
    }
  }
  struct stat sb;
  if (r->noutputs && stat(dir, &sb) != 0 && mkdir(dir, 0755) != 0) tg_fail(TG_EINPUT, "%s: cannot create: %s", dir, strerror(errno));
  for (int i = 0; i < r->noutputs; i++) {
    const DriverOut *o = &r->outs[i];
    char *path = arena_printf(ga(), "%s/out%d.npy", dir, i);
    if (!npy_write(path, o->dtype, o->ndim, o->shape, o->data, o->nbytes)) tg_fail(TG_EINPUT, "%s: cannot write: %s", path, strerror(errno));
  }
}

/* ---------------------------------------------------------------- comparing */
static double num_at(const DType *dt, const void *p, size_t i) {
  const unsigned char *b = p;
  switch (dt->scalar) {
  case SC_BOOL: return b[i] != 0;
  case SC_CHAR: return ((const int8_t *)p)[i];
  case SC_UCHAR: return b[i];
  case SC_SHORT: return ((const int16_t *)p)[i];
  case SC_USHORT: return ((const uint16_t *)p)[i];
  case SC_INT: return ((const int32_t *)p)[i];
  case SC_UINT: return ((const uint32_t *)p)[i];
  case SC_LONG: return (double)((const int64_t *)p)[i];
  case SC_ULONG: return (double)((const uint64_t *)p)[i];
  case SC_HALF: return render_h2f(((const uint16_t *)p)[i]);
  case SC_BFLOAT16: return render_bf2f(((const uint16_t *)p)[i]);
  case SC_FLOAT: return ((const float *)p)[i];
  case SC_DOUBLE: return ((const double *)p)[i];
  default: return NAN;
  }
}

bool driver_close(const DType *dt, const void *got, const void *want, size_t n, char *why, size_t wn) {
  bool f16 = dt->scalar == SC_HALF || dt->scalar == SC_BFLOAT16;
  return driver_close_tol(dt, got, want, n, f16 ? 1e-2 : 1e-4, f16 ? 1e-2 : 1e-5, why, wn);
}
bool driver_close_tol(const DType *dt, const void *got, const void *want, size_t n, double rtol, double atol, char *why, size_t wn) {
  bool isf = dt_is_float(dt);
  double worst = 0;
  size_t bad = 0, wi = 0;
  for (size_t i = 0; i < n; i++) {
    double a = num_at(dt, got, i), b = num_at(dt, want, i), excess;
    if (isf) {
      if ((isnan(a) && isnan(b)) || a == b) continue;
      excess = (isnan(a) || isnan(b)) ? INFINITY : fabs(a - b) - (atol + rtol * fabs(b));
      if (excess <= 0) continue;
    } else {
      size_t isz = (size_t)dt->itemsize;
      if (memcmp((const char *)got + i * isz, (const char *)want + i * isz, isz) == 0) continue;
      excess = fabs(a - b);
      if (isnan(excess) || excess == 0) excess = INFINITY;
    }
    if (!bad++ || excess > worst) { worst = excess; wi = i; }
  }
  if (!bad) return true;
  if (why) snprintf(why, wn, "%zu of %zu elements differ; worst element %zu: got %.9g, want %.9g", bad, n, wi, num_at(dt, got, wi), num_at(dt, want, wi));
  return false;
}

/* the run's output an expect file's output i names (its index, else its place) */
static const DriverOut *out_for(const DriverRun *r, const Expect *x, int i) {
  int k = x->outputs[i].index;
  return &r->outs[k >= 0 && k < r->noutputs ? k : i];
}
bool driver_same_bits(const DriverRun *r, const Expect *x) {
  if (r->noutputs != x->noutputs) return false;
  for (int i = 0; i < x->noutputs; i++) {
    const ExpectOut *e = &x->outputs[i];
    const DriverOut *o = out_for(r, x, i);
    if (o->nbytes != e->nbytes || (o->nbytes && memcmp(o->data, e->bytes, o->nbytes) != 0)) return false;
  }
  return true;
}
bool driver_compare(const DriverRun *r, const Expect *x, char *why, size_t wn) {
  if (r->noutputs != x->noutputs) { snprintf(why, wn, "%d outputs, the expect file has %d", r->noutputs, x->noutputs); return false; }
  for (int i = 0; i < x->noutputs; i++) {
    const ExpectOut *e = &x->outputs[i];
    const DriverOut *o = out_for(r, x, i);
    if (o->dtype->scalar != e->dtype->scalar) { snprintf(why, wn, "output %d: dtype %s, want %s", i, dt_repr(ga(), o->dtype), dt_repr(ga(), e->dtype)); return false; }
    if (o->nbytes != e->nbytes) { snprintf(why, wn, "output %d: %zu bytes, want %zu", i, o->nbytes, e->nbytes); return false; }
    char w[400] = "";
    if (!driver_close(o->dtype, o->data, e->bytes, o->nbytes / (size_t)o->dtype->itemsize, w, sizeof w)) {
      snprintf(why, wn, "output %d: %s", i, w);
      return false;
    }
  }
  return true;
}

