/* schedule: tinygrad 0.11.0's scheduler. get_kernelize_map (schedule/kernelize.py) with
 * everything it calls (multi_pm, do_fuse, merge_views, kernelize_sym, replace_contiguous,
 * group_realizes/do_realize, add_contiguous, finalize_contiguous, create_kernels, fix_assign,
 * create_ast), type_verify against tensor_uop_spec, then create_schedule_with_vars' ordering. */
#ifndef TGC_SCHEDULE_H
#define TGC_SCHEDULE_H
#include "../shape/shape.h"

/* one buffer of a schedule item: a BUFFER uop, and for a multi-device BUFFER the shard index */
typedef struct SchedBuf { UOp *buf; int shard; /* -1 when single-device */ } SchedBuf;
typedef struct SchedItem {
  UOp *ast;                 /* the kernel AST (SINK ... or COPY/BUFFER_VIEW) */
  UOp *kernel;              /* the KERNEL uop it came from */
  int nbufs; SchedBuf *bufs;/* DEFINE_GLOBAL order */
  MetaList meta;
  int nvars; UOp **vars; int64_t *vals; /* var_vals for this item (incl. _device_num) */
  int shard, nshards;       /* a multi-device KERNEL becomes nshards items, shard 0..nshards-1; else -1, 0 */
} SchedItem;
/* items are create_schedule_with_vars' ScheduleItems (one per shard). The oracle's expect files
 * and tinygrad's kernel counts have one entry per KERNEL: the items with shard <= 0. */
typedef struct Schedule {
  int nitems; SchedItem *items;
  int nkernels, ncopies, nviews;  /* SINK, COPY, BUFFER_VIEW KERNELs (items with shard <= 0) */
  RMap kernelize_map;             /* tensor uop -> rewritten uop (rmap_get) */
  UOp *sched_sink;                /* kernelize_map[sink] */
  double kernelize_ms;            /* how long get_kernelize_map took (tinygrad's function of that name) */
  const char *warning;            /* NULL, or why tinygrad 0.11.0 gives no schedule where this one was made (uctx->sched_warning) */
} Schedule;

/* named stages for `tgc dump --stage NAME` */
extern const char *const sched_stage_names[];
UOp *sched_run_until(UOp *sink, const char *stage);           /* the graph after that stage */

RMap get_kernelize_map(UOp *sink);                          /* uses uctx->opt; the map lives in ga() */
Schedule *create_schedule(UOp *sink);                       /* kernelize + ordering */
void type_verify_tensor(UList uops);                        /* fails with TG_EINPUT naming the op */

/* optional decision recording for `tgc explain` (NULL by default; recording never changes a
 * decision). While set, the scheduler writes into it: why, each tensor uop it realizes -> its
 * SchedWhyCode (first reason wins, as (void *)(intptr_t)code); mv, the merge_views map (input uop
 * -> the uop group_realizes sees); nlimit_bufs / nsplit, how often limit_bufs / split_reduceop fired. */
typedef enum SchedWhyCode {
  WHY_NONE, WHY_SINK, WHY_CONTIGUOUS, WHY_ASSIGN, WHY_COPY, WHY_BUFFER_VIEW, WHY_COPY_SRC, WHY_UNSAFE_PAD,
  WHY_EXPAND, WHY_SECOND_REDUCE, WHY_NONCONTIG, WHY_OTHER_REDUCE, WHY_CHILDREN, WHY_ASSIGN_TARGET,
  WHY_FORCED, WHY_LIMIT_BUFS, WHY_SPLIT_REDUCEOP, WHY_N
} SchedWhyCode;
typedef struct SchedWhy { UMap why, mv; int nlimit_bufs, nsplit; } SchedWhy;
extern SchedWhy *sched_why;
void sched_why_note(UOp *u, SchedWhyCode code);            /* records u's reason when sched_why is set */

#endif
