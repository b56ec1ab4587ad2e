/* compile_c.c: `tgc compile -t c`, the per-kernel C files and the AOT bundle (see driver.c's header
 * and driver.h); model_plan/model_emit_run also build the GPU host program (compile_gpu.c). */
#include "driver_int.h"
#include "../runtime/runtime.h"
#include "../runtime/gpu.h"
#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* the part for tensor x read as shard (-1 single-device); vv binds a symbolic view (or NULL) */
static OutPart out_part(CModel *m, UOp *x, int shard, const VarVals *vv, size_t nbytes, int i) {
  RtSource src;
  const char *why = rt_source(x, shard, vv ? bind_vars : NULL, vv, &src);
  if (why) tg_fail(TG_EDEVICE, "compile: output %d is %s", i, why);
  bool cst = src.base->op == OP_CONST;
  OutPart p = {cst ? -1 : cm_slot_shard(m, src.base, src.shard), NULL, nbytes, cst ? src.base : NULL};
  const ShapeTracker *st = src.st;
  if (!st) return p;
  for (int v = 0; v < st->nviews; v++) {
    const View *w = st->views[v];
    bool sym = !si_is_int(w->offset) || w->ndim > 64;
    for (int k = 0; k < w->ndim; k++) sym |= !si_is_int(w->shape[k]) || !si_is_int(w->strides[k]) || (w->mask && (!si_is_int(w->mask[2 * k]) || !si_is_int(w->mask[2 * k + 1])));
    if (sym) tg_fail(TG_EDEVICE, "compile: output %d is a symbolic view without bound values", i);
  }
  p.st = st;
  return p;
}

/* the value item si runs kernel p's j-th variable with (rt_item_var over the schedule's values) */
static int64_t item_var(const SchedItem *si, const VarVals *vv, const Program *p, int j) {
  const char *nm = p->vars[j]->arg->items[0]->s;
  int64_t v;
  if (!rt_item_var(si, vv->n, vv->vars, vv->vals, nm, &v)) tg_fail(TG_EDEVICE, "kernel %s: no value for variable %s", p->name, nm);
  return v;
}

static int compile_threads = 1, compile_beam = 0;
static bool compile_fast_sums;
static FILE *compile_log;
void driver_compile_threads(int threads) { compile_threads = threads; }
void driver_compile_fast_sums(bool fast_sums) { compile_fast_sums = fast_sums; }
void driver_compile_beam(int beam, FILE *log) { compile_beam = beam, compile_log = log; }

/* schedule item `item`'s kernel, its opts from a BEAM search when brt is set; a kernel that cannot
 * be built names the item (its own frame: no local of the caller lives across the setjmp) */
static const Program *lower_item(UOp *ast, KNames *kn, Runtime *brt, int item) {
  TgTry t;
  if (TG_TRY(t)) {
    const Program *p;
    if (brt) {
      KOptCfg cfg = rt_beam(brt, ast, compile_beam);
      p = lower_kernel_with(ast, kn, &cfg);
    } else p = lower_kernel(ast, kn);
    tg_try_end(&t);
    return p;
  }
  tg_fail_in(arena_printf(ga(), "schedule item %d", item));
}

void model_plan(ModelPlan *mp, Graph *g, Schedule *s, const RenderBackend *be) {
  Arena *a = ga();
  /* BEAM (C only): kernels timed on this CPU with the bundle's threads */
  Runtime *brt = compile_beam > 0 && !strcmp(be->name, "c") ? rt_new(g) : NULL;
  if (brt) {
    long nc = sysconf(_SC_NPROCESSORS_ONLN);
    brt->threads = compile_threads > 0 ? compile_threads : nc > 0 ? (int)nc : 1;
    brt->fast_sums = compile_fast_sums;
    brt->log = compile_log;
  }
  /* lower each distinct kernel AST once, in schedule order */
  KNames kn;
  knames_init(&kn, a);
  UMap progs;
  umap_init(&progs, a);
  int nprog = 0;
  const Program **ps = arena_alloc(a, sizeof *ps * (size_t)(s->nitems + 1));
  const char **texts = arena_alloc(a, sizeof *texts * (size_t)(s->nitems + 1));
  const char **files = arena_alloc(a, sizeof *files * (size_t)(s->nitems + 1));
  const char **names = arena_alloc(a, sizeof *names * (size_t)(s->nitems + 1));
  const char **sources = arena_alloc(a, sizeof *sources * (size_t)(s->nitems + 1));
  for (int i = 0; i < s->nitems; i++) {
    const SchedItem *si = &s->items[i];
    if (si->ast->op != OP_SINK) continue;
    intptr_t k = (intptr_t)umap_getp(&progs, si->ast) - 1;
    if (k < 0) {
      k = nprog++;
      ps[k] = lower_item(si->ast, &kn, brt, i);
      texts[k] = kernel_source(a, ps[k], be);
      files[k] = kernel_file(a, ps[k], be, texts[k]);
      umap_put(&progs, si->ast, (void *)(k + 1));
    }
    names[i] = ps[k]->name;
    sources[i] = files[k];
  }
  rt_free(brt);
  CModel m = {0};
  cm_build(&m, a, g, s);
  UOp *ss = s->sched_sink;
  int nout = ss->nsrc;
  DriverOut *outs = arena_alloc(a, sizeof *outs * (size_t)(nout + 1));
  OutRead *ord = arena_alloc(a, sizeof *ord * (size_t)(nout + 1));
  bool need_gather = false;
  int ntmp = 0;
  for (int i = 0; i < nout; i++) {
    UOp *t = ss->src[i];
    OutRead *r = &ord[i];
    if (t->op == OP_MULTI) {
      /* MULTI(x, axis): x's shards side by side along axis, or shard 0 when replicated */
      out_shape(t, &outs[i]);
      UOp *x = t->src[0], *bb = u_base(x);
      if (bb->op == OP_ASSIGN) bb = u_buf_uop(bb);
      const Value *dev = u_device(bb);
      int ns = dev && dev->kind == V_TUPLE ? dev->n : 1;
      if (t->arg->kind != V_INT || ns == 1) {
        r->nparts = 1;
        r->parts = arena_alloc(a, sizeof *r->parts);
        r->parts[0] = out_part(&m, x, ns == 1 ? -1 : 0, NULL, outs[i].nbytes, i);
      } else {
        SList sh = u_shape(x);
        int axis = (int)t->arg->i;
        r->outer = 1;
        r->inner = (size_t)x->dtype->itemsize;
        for (int k = 0; k < sh.n; k++) {
          if (!si_is_int(sh.v[k])) tg_fail(TG_EDEVICE, "compile: a symbolic multi-device output: not implemented yet");
          if (k < axis) r->outer *= (size_t)sh.v[k].c; else r->inner *= (size_t)sh.v[k].c;
        }
        if (r->outer * r->inner * (size_t)ns != outs[i].nbytes) tg_fail(TG_EDEVICE, "compile: output %d: %d shards of %zu bytes for %zu", i, ns, r->outer * r->inner, outs[i].nbytes);
        r->interleave = true;
        r->nparts = ns;
        r->parts = arena_alloc(a, sizeof *r->parts * (size_t)ns);
        for (int sd = 0; sd < ns; sd++) r->parts[sd] = out_part(&m, x, sd, NULL, r->outer * r->inner, i);
        ntmp++;
      }
    } else {
      /* a symbolic output: its shape and views under the schedule's variable values */
      VarVals vv;
      bool sym = out_symbolic(t);
      if (sym) var_vals(s, t, &vv);
      out_shape_vars(t, sym ? &vv : NULL, &outs[i]);
      r->nparts = 1;
      r->parts = arena_alloc(a, sizeof *r->parts);
      r->parts[0] = out_part(&m, t, -1, sym ? &vv : NULL, outs[i].nbytes, i);
    }
    for (int p = 0; p < r->nparts; p++) need_gather |= r->parts[p].st != NULL;
  }
  *mp = (ModelPlan){m, progs, nprog, ps, texts, files, names, sources, nout, outs, ord, need_gather, ntmp};
}

/* the tail of model.c / host.c: the output view tables and tgc_model_run; gpu: each kernel runs
 * through the host program's gpu_run(k, bufs, nbytes, written, vars) instead of a direct call */
void model_emit_run(SB *out, const ModelPlan *mp, const Schedule *s, bool gpu) {
  Arena *a = ga();
  SB c = *out;
  CModel m = mp->m;
  int nout = mp->nout, ntmp = mp->ntmp;
  const OutRead *ord = mp->ord;
  const DriverOut *outs = mp->outs;
  UOp *ss = s->sched_sink;
  if (mp->need_gather) {
    sb_printf(&c, "%s", gather_src);
    for (int i = 0; i < nout; i++)
      for (int p = 0; p < ord[i].nparts; p++) {
        const ShapeTracker *st = ord[i].parts[p].st;
        if (!st) continue;
        if (ord[i].parts[p].cst) {
          const DType *cdt = dt_base(ss->src[i]->dtype);
          unsigned char cb[16];
          rt_const_bytes(cdt, ord[i].parts[p].cst->arg, cb);
          sb_printf(&c, "static const unsigned char out%d_%d_const[%d] = {", i, p, cdt->itemsize);
          for (int k = 0; k < cdt->itemsize; k++) sb_printf(&c, "%s%u", k ? ", " : "", cb[k]);
          sb_printf(&c, "}; /* the constant %s */\n", dt_repr(a, cdt));
        }
        for (int v = 0; v < st->nviews; v++) {
          const View *w = st->views[v];
          sb_printf(&c, "static const long long out%d_%d_view%d[] = {%d, %lld, %d", i, p, v, w->ndim, (long long)w->offset.c, w->mask ? 1 : 0);
          for (int k = 0; k < w->ndim; k++) sb_printf(&c, ", %lld", (long long)w->shape[k].c);
          for (int k = 0; k < w->ndim; k++) sb_printf(&c, ", %lld", (long long)w->strides[k].c);
          for (int k = 0; w->mask && k < 2 * w->ndim; k++) sb_printf(&c, ", %lld", (long long)w->mask[k].c);
          sb_printf(&c, "};\n");
        }
        sb_printf(&c, "static const long long *const out%d_%d_views[] = {", i, p);
        for (int v = 0; v < st->nviews; v++) sb_printf(&c, "%sout%d_%d_view%d", v ? ", " : "", i, p, v);
        sb_printf(&c, "};\n\n");
      }
  }
  sb_printf(&c, "int tgc_model_run(void *const *inputs, void *const *outputs) {\n");
  sb_printf(&c, "  void *b[%d] = {0};\n  int rc = 0;\n", m.n ? m.n : 1);
  if (ntmp) sb_printf(&c, "  unsigned char *tmp[%d] = {0}; /* the shards of sharded outputs */\n", ntmp);
  if (!m.n) sb_printf(&c, "  (void)b;\n");
  if (!nout && !m.ninputs) sb_printf(&c, "  (void)inputs;\n  (void)outputs;\n");
  else if (!m.ninputs) sb_printf(&c, "  (void)inputs;\n");
  else if (!nout) sb_printf(&c, "  (void)outputs;\n");
  for (int k = 0; k < m.n; k++) {
    CBuf *cb = &m.b[k];
    if (cb->input >= 0) sb_printf(&c, "  b[%d] = inputs[%d];\n", k, cb->input);
  }
  bool any_alloc = false;
  for (int k = 0; k < m.n; k++) {
    CBuf *cb = &m.b[k];
    if (cb->input >= 0 || cb->base >= 0) continue;
    const Value *dv = u_device(cb->buf);
    const char *dn = dv && dv->kind == V_STR ? dv->s : dv && dv->kind == V_TUPLE && cb->shard >= 0 && cb->shard < dv->n ? dv->items[cb->shard]->s : "";
    sb_printf(&c, "  if (!(b[%d] = calloc(1, %zu))) goto fail; /* %s%s%s", k, cb->nbytes ? cb->nbytes : 1, dt_repr(a, dt_base(cb->buf->dtype)), *dn ? " on " : "", dn);
    if (cb->shard >= 0) sb_printf(&c, ", shard %d", cb->shard);
    sb_printf(&c, " */\n");
    any_alloc = true;
  }
  for (int k = 0; k < m.n; k++)
    if (m.b[k].copy_of >= 0) sb_printf(&c, "  memcpy(b[%d], b[%d], %zu); /* shard %d of an input */\n", k, m.b[k].copy_of, m.b[k].nbytes, m.b[k].shard);
  for (int k = 0; k < m.n; k++) {
    CBuf *cb = &m.b[k];
    if (cb->base >= 0 && !cb->alias_at_item) sb_printf(&c, "  b[%d] = (char *)b[%d] + %zu; /* BUFFER_VIEW */\n", k, cb->base, cb->off);
  }
  for (int i = 0; i < s->nitems; i++) {
    const SchedItem *si = &s->items[i];
    if (si->ast->op == OP_BUFFER_VIEW) {
      int k = si->nbufs >= 1 ? cm_find_shard(&m, si->bufs[0].buf, si->bufs[0].shard) : -1;
      if (k >= 0 && m.b[k].alias_at_item) sb_printf(&c, "  b[%d] = (char *)b[%d] + %zu; /* item %d: BUFFER_VIEW */\n", k, m.b[k].base, m.b[k].off, i);
      else sb_printf(&c, "  /* item %d: BUFFER_VIEW (aliased above) */\n", i);
      continue;
    }
    if (si->ast->op == OP_COPY) {
      if (si->nbufs < 2) tg_fail(TG_EDEVICE, "compile: COPY item %d needs 2 buffers", i);
      int d = cm_find_shard(&m, si->bufs[0].buf, si->bufs[0].shard), sl = cm_find_shard(&m, si->bufs[1].buf, si->bufs[1].shard);
      size_t n = m.b[d].nbytes < m.b[sl].nbytes ? m.b[d].nbytes : m.b[sl].nbytes;
      sb_printf(&c, "  if (b[%d] != b[%d]) memmove(b[%d], b[%d], %zu); /* item %d: COPY */\n", d, sl, d, sl, n, i);
      continue;
    }
    if (si->ast->op != OP_SINK) tg_fail(TG_EDEVICE, "compile: a %s schedule item", op_names[si->ast->op]);
    int ki = (int)(intptr_t)umap_getp((UMap *)&mp->progs, si->ast) - 1;
    const Program *p = mp->ps[ki];
    SB bl = {a, NULL, 0, 0}, vl = {a, NULL, 0, 0}, nl = {a, NULL, 0, 0}, wl = {a, NULL, 0, 0};
    for (int j = 0; j < p->nglobals; j++) {
      int slot = (int)p->globals[j].u->arg->i;
      if (slot < 0 || slot >= si->nbufs) tg_fail(TG_EDEVICE, "kernel %s: DEFINE_GLOBAL %d but the item has %d buffers", p->name, slot, si->nbufs);
      int k = cm_find_shard(&m, si->bufs[slot].buf, si->bufs[slot].shard);
      sb_printf(&bl, "%sb[%d]", j ? ", " : "", k);
      sb_printf(&nl, "%s%zu", j ? ", " : "", m.b[k].nbytes);
      sb_printf(&wl, "%s%d", j ? ", " : "", p->globals[j].written ? 1 : 0);
    }
    for (int j = 0; j < p->nvars; j++) sb_printf(&vl, "%s%lld", j ? ", " : "", (long long)item_var(si, &m.vv, p, j));
    const char *where = si->shard >= 0 ? arena_printf(a, "item %d, shard %d", i, si->shard) : arena_printf(a, "item %d", i);
    if (gpu) {
      sb_printf(&c, "  { /* %s: %s */\n    unsigned char *a[] = {%s}; const size_t n[] = {%s}; const int w[] = {%s}, v[] = {%s};\n"
                    "    if (gpu_run(%d, a, n, w, v)) goto fail;\n  }\n",
                where, p->name, p->nglobals ? sb_get(&bl) : "0", p->nglobals ? sb_get(&nl) : "0", p->nglobals ? sb_get(&wl) : "0",
                p->nvars ? sb_get(&vl) : "0", ki);
      any_alloc = true;
    } else
      sb_printf(&c, "  %s(%s%s%s); /* %s */\n", p->fname, sb_get(&bl), p->nglobals && p->nvars ? ", " : "", sb_get(&vl), where);
  }
  for (int i = 0, ti = 0; i < nout; i++) {
    const OutRead *r = &ord[i];
    size_t isz = (size_t)outs[i].dtype->itemsize;
    const char *dst = "outputs";
    int di = i;
    if (r->interleave) {
      sb_printf(&c, "  if (!(tmp[%d] = malloc(%zu))) goto fail;\n", ti, r->outer * r->inner > 0 ? r->outer * r->inner : 1);
      dst = "tmp";
      di = ti;
      any_alloc = true;
    }
    for (int p = 0; p < r->nparts; p++) {
      OutPart *op = &r->parts[p];
      int k = op->slot;
      if (op->cst)
        sb_printf(&c, "  tgc_gather(%s[%d], out%d_%d_const, %zu, %zu, %zu, %d, out%d_%d_views);\n", dst, di, i, p, isz, op->nbytes / isz, isz, op->st->nviews, i, p);
      else if (!op->st) {
        size_t n = m.b[k].nbytes < op->nbytes ? m.b[k].nbytes : op->nbytes;
        sb_printf(&c, "  memcpy(%s[%d], b[%d], %zu);\n", dst, di, k, n);
      } else
        sb_printf(&c, "  tgc_gather(%s[%d], b[%d], %zu, %zu, %zu, %d, out%d_%d_views);\n", dst, di, k, m.b[k].nbytes, op->nbytes / isz, isz, op->st->nviews, i, p);
      if (r->interleave)
        sb_printf(&c, "  for (size_t i = 0; i < %zu; i++) memcpy((unsigned char *)outputs[%d] + (i * %d + %d) * %zu, tmp[%d] + i * %zu, %zu); /* shard %d */\n",
                  r->outer, i, r->nparts, p, r->inner, ti, r->inner, r->inner, p);
    }
    ti += r->interleave;
  }
  sb_printf(&c, "  goto done;\n");
  sb_printf(&c, any_alloc ? "fail:\n  rc = -1;\ndone:\n" : "done:\n");
  for (int k = 0; k < m.n; k++) if (m.b[k].input < 0 && m.b[k].base < 0) sb_printf(&c, "  free(b[%d]);\n", k);
  for (int k = 0; k < ntmp; k++) sb_printf(&c, "  free(tmp[%d]);\n", k);
  sb_printf(&c, "  return rc;\n}\n");
  *out = c;
}

int driver_compile_c(Graph *g, Schedule *s0, const char *dir) {
  Schedule *const s = driver_realize_outputs(s0);
  Arena *a = ga();
  ModelPlan mp;
  RenderBackend cbe = render_c_threads(compile_threads);
  cbe.fast_sums = compile_fast_sums;
  cbe.kblock = !compile_beam;   /* the kernels BEAM timed (Runtime.beam) */
  const RenderBackend *be = &cbe;
  model_plan(&mp, g, s, be);
  CModel m = mp.m;
  int nprog = mp.nprog, nout = mp.nout;
  const Program **ps = mp.ps;
  const DriverOut *outs = mp.outs;
  /* the temporary directory next to dir */
  char *tmp = arena_printf(a, "%s.tmp.%d", dir, (int)getpid());
  remove_flat_dir(tmp);
  if (mkdir(tmp, 0755) != 0) tg_fail(TG_EINPUT, "%s: cannot create: %s", tmp, strerror(errno));
  TgTry t;
  if (TG_TRY(t)) {
    /* per-kernel translation units */
    SB man = {a, NULL, 0, 0};
    manifest = &man;
    for (int i = 0; i < nprog; i++) write_or_fail(tmp, mp.files[i], mp.texts[i]);
    write_or_fail(tmp, "schedule.json", schedule_write_json(a, s, g, mp.names, mp.sources));

    /* model.h */
    SB h = {a, NULL, 0, 0};
    sb_printf(&h, "/* model.h: the ahead-of-time bundle tgc %s wrote for %s (%d kernels, %d schedule items).\n", "compile -t c", g->path, nprog, s->nitems);
    sb_printf(&h, " *\n * Files: NAME.c holds one kernel (its only definition, with the static helpers it needs);\n"
                  " * model.c holds tgc_model_run, which declares the kernels, allocates the intermediate buffers,\n"
                  " * runs the schedule in order (kernel calls, COPY = memmove, BUFFER_VIEW = pointer offset) and\n"
                  " * writes each output C-contiguously. Build: compile every .c file here (cc -O2 -c) and link\n"
                  " * all the objects with -lm, or include DIR/Makefile.inc (rule for DIR/model.o, one relocatable object).\n *\n");
    sb_printf(&h, " * inputs (the graph's BUFFER rows, in row order; %d): buffers the schedule assigns to are\n * updated in place\n", m.ninputs);
    for (int i = 0; i < m.ninputs; i++) {
      UOp *b = m.inputs[i];
      sb_printf(&h, " *   inputs[%d]: row %d, %s, %lld elements (%zu bytes)\n", i, row_of(g, b), dt_repr(a, dt_base(b->dtype)),
                (long long)b->arg->i, (size_t)b->arg->i * (size_t)dt_base(b->dtype)->itemsize);
    }
    sb_printf(&h, " * outputs (one per sink source, C-contiguous; %d):\n", nout);
    for (int i = 0; i < nout; i++) {
      sb_printf(&h, " *   outputs[%d]: %s, shape [", i, dt_repr(a, outs[i].dtype));
      for (int k = 0; k < outs[i].ndim; k++) sb_printf(&h, "%s%lld", k ? ", " : "", (long long)outs[i].shape[k]);
      sb_printf(&h, "] (%zu bytes)\n", outs[i].nbytes);
    }
    sb_printf(&h, " * half and bfloat16 elements are 16-bit words. */\n");
    sb_printf(&h, "#ifndef TGC_MODEL_H\n#define TGC_MODEL_H\n\n#define TGC_MODEL_NINPUTS %d\n#define TGC_MODEL_NOUTPUTS %d\n\n", m.ninputs, nout);
    sb_printf(&h, "/* run the whole schedule; returns 0, or -1 when an intermediate buffer can't be allocated */\n"
                  "int tgc_model_run(void *const *inputs, void *const *outputs);\n\n#endif\n");
    write_or_fail(tmp, "model.h", sb_get(&h));

    /* model.c */
    SB c = {a, NULL, 0, 0};
    sb_printf(&c, "/* model.c: runs the schedule of %s (model.h describes the buffers). */\n", g->path);
    sb_printf(&c, "#include \"model.h\"\n#include <stdlib.h>\n#include <string.h>\n\n");
    {
      /* the storage typedefs the prototypes use (tg_half, tg_bf16), from the kernels' prelude */
      const char *pre = render_prelude(a, nprog, ps, be);
      for (const char *l = pre; l && *l;) {
        const char *e = strchr(l, '\n');
        size_t len = e ? (size_t)(e - l) : strlen(l);
        if (!strncmp(l, "typedef ", 8)) sb_printf(&c, "%.*s\n", (int)len, l);
        l = e ? e + 1 : l + len;
      }
    }
    sb_printf(&c, "/* the kernels, defined in their own files */\n");
    for (int i = 0; i < nprog; i++) sb_printf(&c, "%s;\n", prototype(render_function(a, ps[i], be)));
    sb_printf(&c, "\n");
    model_emit_run(&c, &mp, s, false);
    write_or_fail(tmp, "model.c", sb_get(&c));

    SB mk = {a, NULL, 0, 0};
    sb_printf(&mk, "# Makefile.inc: include this from a project Makefile to build the tgc bundle as one object,\n"
                   "# $(TGC_MODEL_DIR)model.o (link it with -lm). TGC_MODEL_DIR defaults to this file's directory.\n"
                   "TGC_MODEL_DIR ?= $(dir $(lastword $(MAKEFILE_LIST)))\n"
                   "TGC_MODEL_KERNELS := ");
    for (int i = 0; i < nprog; i++) sb_printf(&mk, "%s$(TGC_MODEL_DIR)%s", i ? " " : "", mp.files[i]);
    if (cbe.parallel) sb_printf(&mk, "\n# the kernels split their outer loops over threads with OpenMP: link with -fopenmp too");
    sb_printf(&mk, "\nTGC_MODEL_CFLAGS ?= -O3%s\n\n", cbe.parallel ? " -fopenmp" : "");
    sb_printf(&mk, "$(TGC_MODEL_DIR)model.o: $(TGC_MODEL_DIR)model.c $(TGC_MODEL_DIR)model.h $(TGC_MODEL_KERNELS)\n"
                   "\t$(CC) $(TGC_MODEL_CFLAGS) -c $(TGC_MODEL_DIR)model.c -o $(TGC_MODEL_DIR)model_run.o\n"
                   "\tfor f in $(TGC_MODEL_KERNELS); do $(CC) $(TGC_MODEL_CFLAGS) -c $$f -o $${f%%.c}.o || exit 1; done\n"
                   "\t$(LD) -r -o $@ $(TGC_MODEL_DIR)model_run.o $(TGC_MODEL_KERNELS:.c=.o)\n");
    write_or_fail(tmp, "Makefile.inc", sb_get(&mk));
    manifest = NULL;
    write_or_fail(tmp, "MANIFEST", sb_get(&man));
    tg_try_end(&t);
  } else {
    manifest = NULL;
    abandon_output_dir(tmp);
  }
  /* put it in place: an existing DIR is replaced only when it is a previous output */
  install_output_dir(a, tmp, dir);
  return nprog;
}

