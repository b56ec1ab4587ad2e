/* driver_int.h: what the driver's compile paths share (internal to lib/driver): a string builder,
 * the bundle's buffer model (one slot per schedule buffer and shard, BUFFER_VIEWs aliasing their base),
 * kernel sources and their content-hashed file names, the MANIFEST-recording writer and the
 * atomic install of a finished output directory. */
#ifndef TGC_DRIVER_INT_H
#define TGC_DRIVER_INT_H
#include "driver.h"
#include "../codegen/codegen.h"
#include "../render/render.h"


typedef struct CBuf {
  UOp *buf;
  int shard;          /* the shard of a multi-device buffer (one allocation each), or -1 */
  int input;          /* index into inputs[], or -1 */
  int copy_of;        /* a multi-device input's later shard: allocated, then copied from this slot; or -1 */
  int base;           /* alias of slot base at byte offset off (BUFFER_VIEW), or -1 */
  size_t off, nbytes;
  bool alias_at_item; /* aliased when its BUFFER_VIEW item runs (else at the start) */
} CBuf;
/* a schedule's variable values: DEFINE_VAR -> value, from the items' var_vals and t's BINDs */
typedef struct VarVals { int n, cap; UOp **vars; int64_t *vals; } VarVals;
typedef struct CModel { Map slot; int n, cap; CBuf *b; const Graph *g; int ninputs; UOp **inputs; VarVals vv; } CModel;
/* the slot of buf, or -1 */
int cm_find(CModel *m, UOp *buf);
/* a new slot for buf */
int cm_add(CModel *m, UOp *buf);
/* the slot of buf, registering it (and a BUFFER_VIEW's base first) */
int cm_slot(CModel *m, UOp *buf);
/* the same for one shard of a multi-device buffer (shard -1: single-device, or shard 0 of a
 * replicated one); a single-device buffer ignores shard */
int cm_find_shard(CModel *m, UOp *buf, int shard);
int cm_add_shard(CModel *m, UOp *buf, int shard);
int cm_slot_shard(CModel *m, UOp *buf, int shard);
/* the model's buffers: the graph's BUFFER rows in row order, then every buffer an item touches */
void cm_build(CModel *m, Arena *a, const Graph *g, const Schedule *s);
/* how one output is read: one part (a buffer, or one shard of a multi-device buffer, through
 * its views when it is not contiguous) copied into outputs[i], or for a MULTI sharded on an axis
 * one part per shard, each read into a temporary and laid side by side along the axis */
typedef struct OutPart { int slot; const ShapeTracker *st; size_t nbytes; UOp *cst; } OutPart; /* cst: a CONST/BIND value, slot -1 */
typedef struct OutRead { int nparts; OutPart *parts; bool interleave; size_t outer, inner; } OutRead;
/* a bundle's plan: each distinct kernel lowered, rendered for be and named once, in schedule
 * order; names/sources per item (for schedule.json); the buffer model (m.vv: the schedule's
 * variable values) and how each output is read */
typedef struct ModelPlan {
  CModel m;
  UMap progs; /* kernel AST -> its index in ps, plus one */
  int nprog;
  const Program **ps;
  const char **texts, **files; /* per kernel: kernel_source, kernel_file */
  const char **names, **sources;
  int nout;
  DriverOut *outs;
  OutRead *ord;
  bool need_gather;
  int ntmp;
} ModelPlan;
void model_plan(ModelPlan *mp, Graph *g, Schedule *s, const RenderBackend *be);
/* the output view tables and `int tgc_model_run(void *const *inputs, void *const *outputs)` (which
 * allocates the intermediates, runs the items and gathers the outputs); gpu: kernels launch
 * through the host program's gpu_run(k, bufs, nbytes, written, vars) instead of direct calls */
void model_emit_run(SB *c, const ModelPlan *mp, const Schedule *s, bool gpu);
/* "void E_4(float* restrict data0, ...)" from a rendered function */
const char *prototype(const char *fn);
/* when set, write_or_fail appends "SHA256  NAME" lines (the sha256sum -c format) */
extern SB *manifest;
/* write dir/name atomically or fail with TG_EINPUT */
void write_or_fail(const char *dir, const char *name, const char *text);
/* a kernel's rendered source, ending in a newline */
const char *kernel_source(Arena *a, const Program *p, const RenderBackend *be);
/* NAME.HASH6.EXT for p's source src: the function name and the first 6 hex digits of its SHA-256 */
const char *kernel_file(Arena *a, const Program *p, const RenderBackend *be, const char *src);
/* remove a directory holding only files */
void remove_flat_dir(const char *dir);
/* after a failed build into tmp: remove it and raise the failure again */
_Noreturn void abandon_output_dir(const char *tmp);
/* C source of tgc_gather (an output gathered through its views), shared by the bundles */
extern const char gather_src[];
/* move the finished tmp to dir (replacing only an empty dir or an earlier tgc output); TG_EINPUT on failure */
void install_output_dir(Arena *a, const char *tmp, const char *dir);
/* the graph row id of u, or -1 */
int row_of(const Graph *g, UOp *u);
/* o's dtype, ndim and shape from tensor t (TG_EDEVICE when symbolic) */
void out_shape(UOp *t, DriverOut *o);
/* every DEFINE_VAR value of s (its items' var_vals) and of the BINDs in t's shape/views (t may be NULL) */
void var_vals(const Schedule *s, UOp *t, VarVals *vv);
/* an int Value, or a UOp one (a symbolic BUFFER_VIEW size/offset) evaluated under vv */
int64_t vv_value(const Value *v, const VarVals *vv);
/* out_shape with symbolic dimensions evaluated under vv (vv NULL: symbolic fails as out_shape) */
void out_shape_vars(UOp *t, const VarVals *vv, DriverOut *o);
/* does t's shape or ShapeTracker hold a variable? */
bool out_symbolic(UOp *t);
/* st with every shape, stride, offset and mask evaluated under vv (TG_EINPUT for an unbound variable) */
const ShapeTracker *concrete_st(const ShapeTracker *st, const VarVals *vv);
const ShapeTracker *bind_vars(const ShapeTracker *st, const void *vv); /* concrete_st as an RtBind (vv: a VarVals) */

#endif
