/* shape: View and ShapeTracker algorithms (tinygrad 0.11.0 shape/view.py, shape/shapetracker.py)
 * and the shape-related properties of tensor-graph UOps (UOp.st, shape, size, base, device,
 * buf_uop, the movement-op constructors and const_like). Views/ShapeTrackers are the interned
 * value types of uop.h; every function here returns interned results. */
#ifndef TGC_SHAPE_H
#define TGC_SHAPE_H
#include "../symbolic/symbolic.h"

/* the most dimensions a graph's shapes may have (the reader refuses more; passes add a few and keep
 * small fixed arrays of up to 64 axes) */
enum { TG_MAX_RANK = 32 };

typedef struct SList { int n; const Sint *v; } SList;   /* a shape / strides tuple */
static inline SList sl(int n, const Sint *v) { return (SList){n, v}; }
SList sl_ints(int n, const int64_t *xs);               /* arena copy */
bool sl_eq(SList a, SList b);
Sint sl_prod(SList a);                                  /* prod() (symbolic when needed) */
bool sl_all_int(SList a);

/* ---- View ---- */
const View *view_create(SList shape, const SList *strides, Sint offset, const Sint *mask); /* View.create (canonicalises) */
Sint view_size(const View *v);                          /* prod of vmax of shape */
const View *view_add(const View *vm2, const View *vm1); /* vm2 + vm1, NULL when not mergeable */
extern _Thread_local bool view_add_symbolic_only; /* tests: View.__add__'s dimension merge always the symbolic way (no integer shortcut) */
const View *view_invert(const View *v, SList out_shape);/* NULL when not invertible */
const View *view_minify(const View *v);
const View *view_pad(const View *v, const Sint *arg);   /* arg: 2*ndim (before, after) */
const View *view_shrink(const View *v, const Sint *arg);
const View *view_expand(const View *v, SList new_shape);
const View *view_permute(const View *v, const int *axis);
const View *view_flip(const View *v, const bool *flip);
const View *view_reshape(const View *v, SList new_shape); /* NULL when it needs a new view */
void view_to_indexed_uops(const View *v, UOp *const *idxs, UOp *vexpr, UOp **idx, UOp **valid); /* idxs NULL: RANGEs */
SList strides_for_shape(SList shape);
SList canonicalize_strides(SList shape, SList strides);

/* ---- ShapeTracker ---- */
const ShapeTracker *st_from_shape(SList shape, const SList *strides);
static inline SList st_shape(const ShapeTracker *st) { const View *v = st->views[st->nviews - 1]; return sl(v->ndim, v->shape); }
Sint st_size(const ShapeTracker *st);
bool st_contiguous(const ShapeTracker *st);
const ShapeTracker *st_concat(const ShapeTracker *a, const ShapeTracker *b); /* a + b */
const ShapeTracker *st_simplify(const ShapeTracker *st);
const ShapeTracker *st_invert(const ShapeTracker *st, SList out_shape);       /* NULL when not invertible */
const ShapeTracker *st_reshape(const ShapeTracker *st, SList new_shape);
const ShapeTracker *st_permute(const ShapeTracker *st, const int *axis);
const ShapeTracker *st_expand(const ShapeTracker *st, SList new_shape);
const ShapeTracker *st_pad(const ShapeTracker *st, const Sint *arg);
const ShapeTracker *st_shrink(const ShapeTracker *st, const Sint *arg);
const ShapeTracker *st_flip(const ShapeTracker *st, const bool *flip);
const ShapeTracker *st_mop(const ShapeTracker *st, Op op, const Value *arg);  /* movement op with its UOp arg */
void st_to_indexed_uops(const ShapeTracker *st, UOp *const *idxs, UOp **idx, UOp **valid); /* views_to_indexed_uops */
/* the same before its last step's int64 upcast (overflowing int nodes stay int): for index math that
 * goes on (an unravel) and is simplified and upcast afterwards with st_index_upcast */
void st_to_indexed_uops_int(const ShapeTracker *st, UOp *const *idxs, UOp **idx, UOp **valid);
UOp *st_index_upcast(UOp *idx);   /* symbolic_flat + pm_upcast on an index expression */
int64_t st_real_size(const ShapeTracker *st);
/* real_strides: out[i] is the stride or has[i]=false for None */
void st_real_strides(const ShapeTracker *st, bool ignore_valid, Sint *out, bool *has);
int st_unit_stride_axes(const ShapeTracker *st, bool ignore_valid, int *out);
bool st_axis_is_masked(const ShapeTracker *st, int axis);
bool st_has_mask(const ShapeTracker *st);                /* any view with a mask */
int st_vars(const ShapeTracker *st, UOp **out, int cap); /* ShapeTracker.vars() (BINDs and unbound DEFINE_VARs), deduped in order */
const ShapeTracker *st_unbind(const ShapeTracker *st);   /* unbind()[0] */
const ShapeTracker *st_substitute(const ShapeTracker *st, const UMap *dvars);

/* ---- tensor-graph UOp properties (UOp.st and friends) ---- */
void shape_init(void);                                   /* installs const_like; idempotent */
const ShapeTracker *u_st(UOp *u);                        /* UOp.st (cached); NULL for None */
SList u_shape(UOp *u);                                   /* fails when u has no shape */
Sint u_size(UOp *u);                                     /* UOp.size */
UOp *u_base(UOp *u);
const Value *u_device(UOp *u);                           /* UOp._device: str Value, tuple of str, or NULL */
UOp *u_buf_uop(UOp *u);
int u_axis(UOp *u);                                      /* UOp.axis (multi), -1 for None */
/* movement constructors: _mop drops no-ops (when the ShapeTracker would not change) */
UOp *u_view(UOp *u, const ShapeTracker *st);   /* u.view(st): VIEW(u); TG_EINPUT when st is NULL */
UOp *u_reshape(UOp *u, SList shape);
UOp *u_permute(UOp *u, const int *axis);
UOp *u_expand(UOp *u, SList shape);
UOp *u_pad(UOp *u, const Sint *arg);
UOp *u_shrink(UOp *u, const Sint *arg);
UOp *u_flip(UOp *u, const bool *flip);
UOp *u_r(UOp *u, Op op, int naxis, const int *axis);     /* UOp.r: permute + REDUCE_AXIS + reshape */
UOp *u_contiguous(UOp *u);
UOp *u_const_tensor(const DType *dt, const Value *b, const Value *device, const SList *shape); /* UOp.const(dtype, b, device, shape) */
UOp *u_new_buffer(const Value *device, int64_t size, const DType *dt);

const Value *v_sint(Sint s);                             /* an int Value or {"uop"} Value */
Sint sint_of_value(const Value *v);
SList sl_of_value(const Value *tuple);                   /* tuple of ints/UOps -> SList */
const Value *v_of_sl(SList s);

#endif
