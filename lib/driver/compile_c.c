/* compile_c.c: `tgc compile -t c`, the per-kernel C files and the AOT bundle (see driver.c's header
 * and driver.h). */
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

int driver_compile_c(Graph *g, Schedule *s, const char *dir) {
  Arena *a = ga();
  /* lower each distinct kernel AST once, in schedule order */
  KNames kn;
  knames_init(&kn, a);
  UMap progs;
  umap_init(&progs, a);
  int nprog = 0;
  const Program **ps = arena_alloc(a, sizeof *ps * (size_t)(s->nitems + 1));
  const char **names = arena_alloc(a, sizeof *names * (size_t)(s->nitems + 1));
  const char **sources = arena_alloc(a, sizeof *sources * (size_t)(s->nitems + 1));
  for (int i = 0; i < s->nitems; i++) {
    const SchedItem *si = &s->items[i];
    if (si->nshards > 0 || si->shard >= 0) tg_fail(TG_EDEVICE, "compile: multi-device schedules in the C bundle: not implemented yet");
    if (si->ast->op != OP_SINK) continue;
    Program *p = umap_getp(&progs, si->ast);
    if (!p) {
      p = lower_kernel(si->ast, &kn);
      umap_put(&progs, si->ast, p);
      ps[nprog++] = p;
    }
    names[i] = p->name;
    sources[i] = kernel_file(a, p, &render_c);
  }
  CModel m = {0};
  cm_build(&m, a, g, s);
  UOp *ss = s->sched_sink;
  int nout = ss->nsrc;
  DriverOut *outs = arena_alloc(a, sizeof *outs * (size_t)(nout + 1));
  int *oslot = arena_alloc(a, sizeof(int) * (size_t)(nout + 1));
  const ShapeTracker **ost = arena_alloc(a, sizeof *ost * (size_t)(nout + 1));
  bool need_gather = false;
  for (int i = 0; i < nout; i++) {
    UOp *t = ss->src[i];
    if (t->op == OP_MULTI) tg_fail(TG_EDEVICE, "compile: multi-device outputs in the C bundle: not implemented yet");
    out_shape(t, &outs[i]);
    UOp *base = u_base(t);
    if (base->op == OP_ASSIGN) base = u_buf_uop(base);
    if (base->op != OP_BUFFER) tg_fail(TG_EDEVICE, "compile: output %d is a %s, not a realized buffer", i, op_names[base->op]);
    oslot[i] = cm_slot(&m, base);
    ost[i] = NULL;
    if (!(t == base || st_contiguous(u_st(t)))) {
      const ShapeTracker *st = u_st(t);
      if (!st) tg_fail(TG_EDEVICE, "compile: output %d has no shape", i);
      for (int v = 0; v < st->nviews; v++) {
        const View *w = st->views[v];
        bool sym = !si_is_int(w->offset) || w->ndim > 64;
        for (int k = 0; k < w->ndim; k++) sym |= !si_is_int(w->shape[k]) || !si_is_int(w->strides[k]) || (w->mask && (!si_is_int(w->mask[2 * k]) || !si_is_int(w->mask[2 * k + 1])));
        if (sym) tg_fail(TG_EDEVICE, "compile: output %d is a symbolic view: not implemented yet", i);
      }
      ost[i] = st;
      need_gather = true;
    }
  }

  /* the temporary directory next to dir */
  char *tmp = arena_printf(a, "%s.tmp.%d", dir, (int)getpid());
  remove_flat_dir(tmp);
  if (mkdir(tmp, 0755) != 0) tg_fail(TG_EINPUT, "%s: cannot create: %s", tmp, strerror(errno));
  TgTry t;
  if (TG_TRY(t)) {
    /* per-kernel translation units */
    Sb man = {a, NULL, 0, 0};
    manifest = &man;
    for (int i = 0; i < nprog; i++) write_or_fail(tmp, kernel_file(a, ps[i], &render_c), kernel_source(a, ps[i], &render_c));
    write_or_fail(tmp, "schedule.json", schedule_write_json(a, s, g, names, sources));

    /* model.h */
    Sb h = {a, NULL, 0, 0};
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
    write_or_fail(tmp, "model.h", sb_str(&h));

    /* model.c */
    Sb c = {a, NULL, 0, 0};
    sb_printf(&c, "/* model.c: runs the schedule of %s (model.h describes the buffers). */\n", g->path);
    sb_printf(&c, "#include \"model.h\"\n#include <stdlib.h>\n#include <string.h>\n\n");
    {
      /* the storage typedefs the prototypes use (tg_half, tg_bf16), from the kernels' prelude */
      const char *pre = render_prelude(a, nprog, ps, &render_c);
      for (const char *l = pre; l && *l;) {
        const char *e = strchr(l, '\n');
        size_t len = e ? (size_t)(e - l) : strlen(l);
        if (!strncmp(l, "typedef ", 8)) sb_printf(&c, "%.*s\n", (int)len, l);
        l = e ? e + 1 : l + len;
      }
    }
    sb_printf(&c, "/* the kernels, defined in their own files */\n");
    for (int i = 0; i < nprog; i++) sb_printf(&c, "%s;\n", prototype(render_function(a, ps[i], &render_c)));
    sb_printf(&c, "\n");
    if (need_gather) {
      sb_printf(&c, "%s", gather_src);
      for (int i = 0; i < nout; i++) {
        if (!ost[i]) continue;
        for (int v = 0; v < ost[i]->nviews; v++) {
          const View *w = ost[i]->views[v];
          sb_printf(&c, "static const long long out%d_view%d[] = {%d, %lld, %d", i, v, w->ndim, (long long)w->offset.c, w->mask ? 1 : 0);
          for (int k = 0; k < w->ndim; k++) sb_printf(&c, ", %lld", (long long)w->shape[k].c);
          for (int k = 0; k < w->ndim; k++) sb_printf(&c, ", %lld", (long long)w->strides[k].c);
          for (int k = 0; w->mask && k < 2 * w->ndim; k++) sb_printf(&c, ", %lld", (long long)w->mask[k].c);
          sb_printf(&c, "};\n");
        }
        sb_printf(&c, "static const long long *const out%d_views[] = {", i);
        for (int v = 0; v < ost[i]->nviews; v++) sb_printf(&c, "%sout%d_view%d", v ? ", " : "", i, v);
        sb_printf(&c, "};\n\n");
      }
    }
    sb_printf(&c, "int tgc_model_run(void *const *inputs, void *const *outputs) {\n");
    sb_printf(&c, "  void *b[%d] = {0};\n  int rc = 0;\n", m.n ? m.n : 1);
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
      sb_printf(&c, "  if (!(b[%d] = calloc(1, %zu))) goto fail; /* %s */\n", k, cb->nbytes ? cb->nbytes : 1, dt_repr(a, dt_base(cb->buf->dtype)));
      any_alloc = true;
    }
    for (int k = 0; k < m.n; k++) {
      CBuf *cb = &m.b[k];
      if (cb->base >= 0 && !cb->alias_at_item) sb_printf(&c, "  b[%d] = (char *)b[%d] + %zu; /* BUFFER_VIEW */\n", k, cb->base, cb->off);
    }
    for (int i = 0; i < s->nitems; i++) {
      const SchedItem *si = &s->items[i];
      if (si->ast->op == OP_BUFFER_VIEW) {
        int k = si->nbufs >= 1 ? cm_find(&m, si->bufs[0].buf) : -1;
        if (k >= 0 && m.b[k].alias_at_item) sb_printf(&c, "  b[%d] = (char *)b[%d] + %zu; /* item %d: BUFFER_VIEW */\n", k, m.b[k].base, m.b[k].off, i);
        else sb_printf(&c, "  /* item %d: BUFFER_VIEW (aliased above) */\n", i);
        continue;
      }
      if (si->ast->op == OP_COPY) {
        if (si->nbufs < 2) tg_fail(TG_EDEVICE, "compile: COPY item %d needs 2 buffers", i);
        int d = cm_find(&m, si->bufs[0].buf), sl = cm_find(&m, si->bufs[1].buf);
        size_t n = m.b[d].nbytes < m.b[sl].nbytes ? m.b[d].nbytes : m.b[sl].nbytes;
        sb_printf(&c, "  if (b[%d] != b[%d]) memmove(b[%d], b[%d], %zu); /* item %d: COPY */\n", d, sl, d, sl, n, i);
        continue;
      }
      if (si->ast->op != OP_SINK) tg_fail(TG_EDEVICE, "compile: a %s schedule item", op_names[si->ast->op]);
      const Program *p = umap_getp(&progs, si->ast);
      sb_printf(&c, "  %s(", p->fname);
      for (int j = 0; j < p->nglobals; j++) {
        int slot = (int)p->globals[j].u->arg->i;
        if (slot < 0 || slot >= si->nbufs) tg_fail(TG_EDEVICE, "kernel %s: DEFINE_GLOBAL %d but the item has %d buffers", p->name, slot, si->nbufs);
        sb_printf(&c, "%sb[%d]", j ? ", " : "", cm_find(&m, si->bufs[slot].buf));
      }
      for (int j = 0; j < p->nvars; j++) {
        const char *nm = p->vars[j]->arg->items[0]->s;
        bool found = false;
        for (int q = 0; q < si->nvars && !found; q++) {
          UOp *v = si->vars[q];
          if (v->op == OP_BIND) v = v->src[0];
          if (v->op == OP_DEFINE_VAR && strcmp(v->arg->items[0]->s, nm) == 0) {
            sb_printf(&c, "%s%lld", j || p->nglobals ? ", " : "", (long long)si->vals[q]);
            found = true;
          }
        }
        if (!found) tg_fail(TG_EDEVICE, "kernel %s: no value for variable %s", p->name, nm);
      }
      sb_printf(&c, "); /* item %d */\n", i);
    }
    for (int i = 0; i < nout; i++) {
      int k = oslot[i];
      size_t isz = (size_t)outs[i].dtype->itemsize;
      if (!ost[i]) {
        size_t n = m.b[k].nbytes < outs[i].nbytes ? m.b[k].nbytes : outs[i].nbytes;
        sb_printf(&c, "  memcpy(outputs[%d], b[%d], %zu);\n", i, k, n);
      } else
        sb_printf(&c, "  tgc_gather(outputs[%d], b[%d], %zu, %zu, %zu, %d, out%d_views);\n", i, k, m.b[k].nbytes, outs[i].nbytes / isz, isz, ost[i]->nviews, i);
    }
    sb_printf(&c, "  goto done;\n");
    sb_printf(&c, any_alloc ? "fail:\n  rc = -1;\ndone:\n" : "done:\n");
    for (int k = 0; k < m.n; k++) if (m.b[k].input < 0 && m.b[k].base < 0) sb_printf(&c, "  free(b[%d]);\n", k);
    sb_printf(&c, "  return rc;\n}\n");
    write_or_fail(tmp, "model.c", sb_str(&c));

    Sb mk = {a, NULL, 0, 0};
    sb_printf(&mk, "# Makefile.inc: include this from a project Makefile to build the tgc bundle as one object,\n"
                   "# $(TGC_MODEL_DIR)model.o (link it with -lm). TGC_MODEL_DIR defaults to this file's directory.\n"
                   "TGC_MODEL_DIR ?= $(dir $(lastword $(MAKEFILE_LIST)))\n"
                   "TGC_MODEL_KERNELS := ");
    for (int i = 0; i < nprog; i++) sb_printf(&mk, "%s$(TGC_MODEL_DIR)%s", i ? " " : "", kernel_file(a, ps[i], &render_c));
    sb_printf(&mk, "\nTGC_MODEL_CFLAGS ?= -O2\n\n"
                   "$(TGC_MODEL_DIR)model.o: $(TGC_MODEL_DIR)model.c $(TGC_MODEL_DIR)model.h $(TGC_MODEL_KERNELS)\n"
                   "\t$(CC) $(TGC_MODEL_CFLAGS) -c $(TGC_MODEL_DIR)model.c -o $(TGC_MODEL_DIR)model_run.o\n"
                   "\tfor f in $(TGC_MODEL_KERNELS); do $(CC) $(TGC_MODEL_CFLAGS) -c $$f -o $${f%%.c}.o || exit 1; done\n"
                   "\t$(LD) -r -o $@ $(TGC_MODEL_DIR)model_run.o $(TGC_MODEL_KERNELS:.c=.o)\n");
    write_or_fail(tmp, "Makefile.inc", sb_str(&mk));
    manifest = NULL;
    write_or_fail(tmp, "MANIFEST", sb_str(&man));
    tg_try_end(&t);
  } else {
    manifest = NULL;
    char msg[sizeof tg_last_error.msg];
    int code = tg_last_error.code;
    snprintf(msg, sizeof msg, "%s", tg_last_error.msg);
    remove_flat_dir(tmp);
    tg_fail(code, "%s", msg);
  }
  /* put it in place: an existing DIR is replaced only when it is a previous output */
  install_output_dir(a, tmp, dir);
  return nprog;
}

