/* runtime: the CPU backend. Owns host buffers (one per BUFFER uop and shard, BUFFER_VIEWs alias
 * their base), compiling rendered kernels with the system C compiler into a cache directory keyed
 * by a hash of the source ($XDG_CACHE_HOME/tgc or ~/.cache/tgc; a source compiled once is never
 * compiled again), dlopen-ing them, and running a schedule in order: kernels through their
 * tgc_entry, COPY as memcpy between host buffers, BUFFER_VIEW as an alias with a byte offset.
 * Graph BUFFER data (Graph.data) fills input buffers when they are first allocated. */
#ifndef TGC_RUNTIME_H
#define TGC_RUNTIME_H
#include <stdio.h>
#include "../codegen/codegen.h"
#include "../io/graph.h"
#include "../schedule/schedule.h"

typedef void (*RtEntry)(void **bufs, const long long *vars);
typedef struct RtKernel { const Program *prg; const char *src; RtEntry entry; void *handle; } RtKernel;
typedef struct RtBuf { UOp *buf; int shard; unsigned char *data; size_t nbytes; bool owned; } RtBuf;
typedef struct Runtime {
  Arena *a;                 /* the current context's arena (ga()) */
  Map bufs;                 /* key(BUFFER, shard) -> RtBuf* */
  Map kernels;              /* kernel AST -> RtKernel* */
  KNames names;
  const Graph *graph;       /* data for input BUFFERs, may be NULL */
  const RMap *kmap;         /* the running schedule's kernelize_map (errors name the graph row a buffer realizes) */
  const char *cache_dir;
  const char *cc;           /* $TGC_CC, else clang when on PATH (tinygrad's CPU compiler), else "cc" */
  bool cc_auto;             /* cc was chosen here: a clang that fails falls back to "cc" */
  int threads;              /* kernels split their outer loop over this many threads (1: serial) */
  bool fast_sums;           /* float sums may be reassociated (RenderBackend.fast_sums; default: tinygrad's order) */
  int ncompiled, ncached;   /* compiler runs / cache hits, for tests and -v */
  int nvars; UOp *const *vars; const int64_t *vals; /* the schedule's variable values (symbolic BUFFER_VIEWs) */
  PtrVec handles, owned;
  int beam;                 /* > 0: each kernel's opts come from a BEAM search of this width (rt_beam);
                             * its kernels render without k-blocking: the greedy search, steered by small
                             * tiles that blocking speeds up, stops at tiles it then slows (matmul 1024:
                             * 15-20 ms picks unblocked, 20-24 ms blocked) */
  FILE *log;                /* progress lines (a finished BEAM search), NULL: none */
  int nbeam_searched, nbeam_cached; /* BEAM searches run / read from the cache, for tests */
  double *item_ms;          /* profiling: when set, each item's wall time (ms) by item index ... */
  const Program **item_prg; /* ... and the Program a kernel item ran (NULL for COPY/BUFFER_VIEW) */
  int item;                 /* the schedule item running (a kernel that cannot be built names it) */
} Runtime;

Runtime *rt_new(const Graph *g);                 /* in the current context; g may be NULL */
void rt_free(Runtime *rt);                       /* closes libraries, frees host memory */
/* lower_kernel_for the running item's kernel (tg NULL: the current target); a failure names the
 * item ("schedule item 15: ...") */
Program *rt_lower(Runtime *rt, UOp *ast, const KOptCfg *cfg, const KTarget *tg);
/* compile (or load from the cache) one lowered kernel; TG_EDEVICE "kernel NAME: <diagnostics>" */
RtKernel *rt_compile(Runtime *rt, const Program *p);
/* rt_compile for n programs, as many compilers at once as there are cores; out[i] is NULL where
 * program i did not build (TG_EDEVICE), other errors fail as rt_compile does */
void rt_compile_many(Runtime *rt, int n, const Program *const *ps, RtKernel **out);
/* floats per vector register of this CPU, the width kernels compiled with -march=native use (16
 * with AVX-512, 8 with AVX2 and FMA, else 4): KOptCfg.cpu_lanes for kernels run here */
int rt_cpu_lanes(void);
/* whether CPU kernels here give tinygrad's CPU values bit for bit: compiled by clang (as tinygrad's
 * backend, contracting a*b+c into FMAs within an expression; gcc's contraction differs) on a CPU
 * with FMA, as the corpus was recorded. Elsewhere they match to rounding. */
bool rt_tinygrad_bits(void);
/* the host buffer for a BUFFER uop (shard -1 for single-device), allocated zeroed (or filled from
 * the graph's data) on first use */
RtBuf *rt_buffer(Runtime *rt, UOp *buf, int shard);
/* make view (a BUFFER) alias base's memory at a byte offset (BUFFER_VIEW) */
void rt_alias(Runtime *rt, UOp *view, int vshard, UOp *base, int bshard, size_t byte_offset);
/* the value of kernel p's variable name when item si runs: the item's var_vals, else the schedule's
 * (rt->vars); TG_EINPUT when neither binds it */
int64_t rt_var(const Runtime *rt, const SchedItem *si, const Program *p, const char *name);
/* the same lookup without a Runtime: the item's var_vals, else the n schedule-wide (vars, vals)
 * DEFINE_VAR values; false when neither binds name (the bundle and host programs use it) */
bool rt_item_var(const SchedItem *si, int n, UOp *const *vars, const int64_t *vals, const char *name, int64_t *out);
/* BEAM=amt for one kernel AST (beam.c): the opts whose compiled kernel ran fastest on this CPU
 * with rt's compiler and threads, from tinygrad's beam search over UPCAST and UNROLL; cached on
 * disk by the kernel, amt, threads and compiler */
KOptCfg rt_beam(Runtime *rt, UOp *ast, int amt);
/* run one schedule item (SINK kernel, COPY, BUFFER_VIEW) on the CPU */
void rt_run_item(Runtime *rt, const SchedItem *si);
/* how a device runs one kernel item; returns the Program it ran */
typedef const Program *(*RtKernelFn)(Runtime *rt, const SchedItem *si);
/* run every item of s in order: kernels through run_kernel, COPY and BUFFER_VIEW on the host
 * buffers (rt_run_item), timing each into rt->item_ms when set; returns the number of kernels run */
int rt_run_items(Runtime *rt, const Schedule *s, RtKernelFn run_kernel);
/* rt_run_items with the CPU's kernels */
int rt_run_schedule(Runtime *rt, const Schedule *s);
/* v as one element of dtype dt, little-endian (half/bfloat16 rounded as tinygrad), into out */
void rt_const_bytes(const DType *dt, const Value *v, unsigned char *out);
/* where tensor t's value lives after the schedule ran: its base through ASSIGN (the buffer),
 * MSELECT(x, k) (x's shard k, *shard set) and MSTACK (shard *shard's own source, *shard = -1); a
 * constant (a CONST, or a BIND of one: never realized) comes back as its CONST */
UOp *rt_value_base(UOp *t, int *shard);
/* How to read tensor t after the schedule ran: its base (rt_value_base: a realized BUFFER or
 * BUFFER_VIEW, or a CONST) and the view to read the base through, NULL when the base's bytes are
 * t's as they are (t is the buffer, or sees it through a contiguous view); a constant always has
 * one. bind, when given, maps t's view first (a symbolic view under the schedule's variable values).
 * Returns NULL, or why t can't be read ("a SINK, not a realized buffer"; for the caller's message). */
typedef struct RtSource { UOp *base; int shard; const ShapeTracker *st; } RtSource;
typedef const ShapeTracker *(*RtBind)(const ShapeTracker *st, const void *ctx);
const char *rt_source(UOp *t, int shard, RtBind bind, const void *bctx, RtSource *src);
/* the logical value of a tensor uop after the schedule ran: a BUFFER or BUFFER_VIEW, a CONST or
 * bound variable that was never realized, or movement ops/VIEWs of one, gathered C-contiguously into out (u_size(t) elements of t's dtype); returns bytes written */
size_t rt_read(Runtime *rt, UOp *t, int shard, void *out, size_t cap);
/* the same for a buffer read through st (NULL: its bytes as they are), e.g. a symbolic output's
 * ShapeTracker with its variables bound (shapes and strides must be ints); base may be a CONST,
 * read through st (not NULL), 0 where st masks it */
size_t rt_read_st(Runtime *rt, UOp *base, int shard, const ShapeTracker *st, void *out, size_t cap);

#endif
