/* passes: the rewrite tables the kernelize pipeline is built from, shared inside lib/schedule.
 *   multi.c     multi_pm, replace_allreduce (schedule/multi.py)
 *   swizzler.c  merge_views, view_left, view_left_through_load, apply_swizzle, swizzle_reduceop
 *               (codegen/opt/swizzler.py)
 *   kernelize.c do_fuse, kernelize_sym, replace_contiguous, add_contiguous, finalize_contiguous,
 *               create_kernels, create_ast, replace_metadata, get_kernelize_map (schedule/kernelize.py)
 *   grouper.c   do_realize, group_realizes (schedule/grouper.py)
 *   spec.c      tensor_uop_spec and type_verify (uop/spec.py)
 *   schedule.c  create_schedule_with_vars ordering (engine/schedule.py) */
#ifndef TGC_PASSES_H
#define TGC_PASSES_H
#include "schedule.h"

/* GroupOp-style set: ALWAYS_CONTIGUOUS from grouper.py */
bool always_contiguous(Op op);

/* multi.c */
extern PM *pm_multi;                 /* multi_pm */
extern PM *pm_replace_allreduce;     /* replace_allreduce */
void multi_init(void);

/* swizzler.c */
extern PM *pm_merge_views;           /* merge_views */
extern PM *pm_view_left;             /* merge_views + view_left rules */
extern PM *pm_view_left_through_load;
extern PM *pm_view_right;            /* merge_views + view_right rules (codegen "Main View Right") */
extern PM *pm_fix_kernel_ops;        /* view_left_through_load + fix_kernel_ops (use with pm_view_left) */
extern PM *pm_buffer_views;          /* view_left + view_left_through_load + fix_kernel_ops' LOAD/STORE views */
UOp *apply_swizzle(UOp *u);          /* graph_rewrite(u, view_left) */
UOp *swizzle_reduceop(UOp *r, UOp *src, UOp *view, bool fuse); /* NULL when no change */
void swizzler_init(void);

/* grouper.c: the realize map (ordered set of UOps); topo is sink's toposort */
UMap group_realizes(UOp *sink, UList topo);

/* spec.c */
void spec_init(void);
bool spec_check_tensor(UOp *u);      /* tensor_uop_spec accepts u */

#endif
