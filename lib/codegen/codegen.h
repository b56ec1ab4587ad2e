/* codegen: lowering one kernel AST (tinygrad 0.11.0 scheduler output: SINK of STOREs through VIEWs
 * of DEFINE_GLOBALs, LOADs, REDUCE_AXIS, ALU, CONST/DEFINE_VAR with VIEW srcs) to a linear,
 * block-structured program that a renderer prints.
 *
 * Two steps (tinygrad's lowerer, then its linearizer, without opts):
 *   lower      every value is asked for at an index vector: one RANGE per output axis of a STORE
 *              and per reduced axis of a REDUCE_AXIS; each ShapeTracker becomes (idx, valid) through
 *              st_to_indexed_uops (symbolic, int64 where an index overflows int32); masked loads are
 *              gated INDEXes; the result is a graph of LOAD(INDEX), REDUCE(val, ranges...), STORE.
 *   linearize  values are placed in the outermost loop whose RANGEs they use; a REDUCE becomes an
 *              accumulator, its loops, and an update; stores that share output loops share them.
 * The kernel name is tinygrad's Kernel.name: E_/r_ plus the loop sizes after its opts.
 *
 * Opts (opt.c): tinygrad's UPCAST, UNROLL, LOCAL, GROUP, GROUPTOP, NOLOCALS, SWAP and PADTO
 * (codegen/opt/kernel.py) on the merged axes the name is made of, chosen by its
 * hand_coded_optimizations for the target (KTarget: the C backend has no local memory; OpenCL and
 * CUDA have work-groups and shared memory), or given by hand. An UPCAST of an output axis by k lowers every STORE at k index vectors (R*k + j), the
 * REDUCEs they reach share their RANGEs and one loop nest; an UNROLL of a reduce axis by k feeds
 * the reduce's source at k index vectors to the accumulator in order (acc + v0 + v1 ..., as
 * tinygrad's reduce_to_acc); a REDUCE's value is then a VECTORIZE of them. A PADTO of an axis runs
 * its loop (an axis merged from several: one loop over their product) to the padded end, and every
 * LOAD, STORE and masked constant under indices past the old end is masked, as tinygrad's padded
 * ShapeTrackers mask them.
 *
 * With thread opts (LOCAL, GROUP, GROUPTOP, SWAP) on a GPU target the kernel lowers as tinygrad's
 * lowerer and add_gpudims do (lower.c, "thread lowering"): the GLOBAL axes become SPECIAL gidx
 * indices (grouped into at most 3 launch dimensions), LOCAL and GROUP_REDUCE axes SPECIAL lidx
 * (work-group) indices, and a grouped reduce runs in two stages: each thread's partial reduce is
 * stored to a DEFINE_LOCAL buffer, a BARRIER, and the threads of group index 0 (an IF) reduce the
 * partials and store the result. Program.launch says the launch dimensions. */
#ifndef TGC_CODEGEN_H
#define TGC_CODEGEN_H
#include "../shape/shape.h"

typedef enum {
  LK_VALUE,    /* u: compute a value (ALU, CAST, BITCAST, LOAD) into a variable */
  LK_LOOP,     /* u: a RANGE; open `for (ridx = 0; ridx < end; ridx++)` */
  LK_ENDLOOP,  /* u: the RANGE being closed */
  LK_ACC,      /* u: a REDUCE; declare its accumulator with the reduce op's identity */
  LK_ACCUM,    /* u: a REDUCE, aux: the value; acc = op(acc, value) (an unroll: one per value, in order) */
  LK_STORE,    /* u: STORE(INDEX(buf, idx[, valid]), value) */
  LK_BARRIER,  /* a work-group barrier (thread lowering) */
} LKind;
/* In the thread lowering an LK_LOOP/LK_ENDLOOP pair may also open an IF (u->op OP_IF, src[0] the
 * condition): the block runs only where it holds. LOAD/STORE INDEXes may name a DEFINE_LOCAL. */
typedef struct LInst { uint8_t kind; uint16_t depth; UOp *u, *aux; } LInst;

/* an opt in tinygrad's Opt terms: UPCAST (and PADTO, LOCAL...) axis is a kernel axis (after the opts
 * before it), UNROLL axis an index into the reduce axes of size > 1; amt 0 is the whole axis */
typedef enum { KOPT_UPCAST, KOPT_UNROLL, KOPT_LOCAL, KOPT_GROUP, KOPT_GROUPTOP, KOPT_NOLOCALS, KOPT_SWAP, KOPT_PADTO } KOptOp;
typedef struct KOpt { uint8_t op; int axis, amt; } KOpt;
enum { KOPT_MAX = 16 };
/* which opts lower_kernel applies: the heuristic (the default), none (tinygrad's NOOPT), or a list
 * for every kernel (an opt that does not apply to a kernel fails TG_EINPUT naming both) */
typedef enum { KOPT_HEURISTIC, KOPT_NONE, KOPT_LIST } KOptMode;
/* cpu_lanes (KOPT_HEURISTIC on the C target only): floats per machine vector of the CPU that runs
 * the kernels; nonzero runs kopt_cpu_step after the heuristic (0: tinygrad's opts alone) */
typedef struct KOptCfg { KOptMode mode; int n; KOpt v[KOPT_MAX]; int cpu_lanes; } KOptCfg;
void lower_opt_config(const KOptCfg *cfg);   /* process-wide, like tinygrad's NOOPT/BEAM context */
/* what a target offers the opts (tinygrad's Renderer fields) */
typedef struct KTarget {
  const char *name;
  bool has_local, has_shared;
  int64_t shared_max;                   /* bytes of local memory a grouped reduce may use */
  int64_t global_max[3], local_max[3];  /* launch dimension limits */
} KTarget;
extern const KTarget ktarget_c, ktarget_opencl, ktarget_cuda;
/* the target lower_kernel lowers for (process-wide, like lower_opt_config; ktarget_c by default) */
void lower_target(const KTarget *t);
const KTarget *lower_get_target(void);
/* parse "UPCAST:0:4,UNROLL:0:0,LOCAL:0:4,NOLOCALS" (any case); false with why on a bad list (an
 * opt the target cannot apply fails later, when lowering) */
bool kopt_parse(const char *s, KOptCfg *out, char *why, size_t wn);
/* "UPCAST:0:4,UNROLL:0:4" ("" for none) */
const char *kopt_format(Arena *a, int n, const KOpt *v);

typedef struct KParam { UOp *u; bool written; } KParam;  /* a DEFINE_GLOBAL or DEFINE_VAR */
typedef struct Program {
  const char *name;               /* tinygrad's name: the full shape after its opts, "r_16_10_4" for r_16_40
                                   * under UNROLL:0:4, deduplicated with "n1", "n2"... like Kernel.kernel_cnt */
  const char *base_name;          /* the name without opts (the merged axes: "r_16_40"), not deduplicated */
  const char *fname;              /* the C identifier: to_function_name(name), "r_28start_pos2B129_32" */
  int nglobals; KParam *globals;  /* DEFINE_GLOBALs in arg order (slot i is data{i}) */
  int nvars; UOp **vars;          /* DEFINE_VARs sorted by name (the int params after the buffers) */
  int ninst; LInst *inst;
  int nranges;                    /* RANGE ids used: 0..nranges-1 */
  int nopts; KOpt opts[KOPT_MAX]; /* the opts applied */
  int64_t upcast;                 /* the product of the upcast and unroll amounts (1: none) */
  /* thread lowering: the launch (gsize work-groups of lsize threads per dimension, 1 where unused;
   * nspecial 0: none, the renderer picks launch loops itself) and the local buffer */
  int nspecial; UOp **specials;   /* SPECIALs (arg (name, size)): "gidx0".., "lidx0"..; "idx0".. under NOLOCALS */
  int64_t gsize[3], lsize[3];
  UOp *local_buf;                 /* DEFINE_LOCAL (arg "temp0", dtype ptr of its element type) or NULL */
  int64_t local_n;                /* its element count */
} Program;

/* Kernel names seen so far in one compile (tinygrad's process-global Kernel.kernel_cnt). */
typedef struct KNames { Map seen; } KNames;
void knames_init(KNames *k, Arena *a);

/* reduce.c: tinygrad's symbolic and REDUCE steps on a lowered kernel (a SINK of its STOREs): sym on
 * every value, then pm_reduce (reduce_unparented; reduce_collapse: a REDUCE whose value needs no
 * loop becomes closed form or a gated load), then the NEG/SUB decompositions */
UOp *lower_simplify(UOp *sink);
/* one update of an accumulator by an UNROLL's values as tinygrad's kernel computes it: its
 * reduce_to_acc makes acc op v0 op v1 ..., which its devectorize sym then rewrites like any value
 * ((acc+(a+1))+(b+1) becomes b+(a+acc)+2: the constants go last) before its decompositions. acc is
 * a placeholder for the accumulator, vals are the lowered (decomposed) values; the result has
 * the decompositions again (the renderer prints it) */
UOp *lower_acc_update(Op op, UOp *acc, int n, UOp *const *vals);

/* ast's (a SINK) name without opts, before dedup: "E_10", "r_16_40", "E2_4" for two stores (what a
 * search of its opts starts from) */
const char *lower_kernel_name(UOp *ast);
/* lower and linearize one kernel AST; names is optional (NULL: no dedup). Fails TG_EINPUT on an AST
 * it cannot lower (naming the op). */
Program *lower_kernel(UOp *ast, KNames *names);
/* the same with these opts instead of the process-wide config (BEAM's candidates) */
Program *lower_kernel_with(UOp *ast, KNames *names, const KOptCfg *cfg);
/* the same for target t instead of the process-wide one */
Program *lower_kernel_for(UOp *ast, KNames *names, const KOptCfg *cfg, const KTarget *t);
/* the process-wide opts config */
const KOptCfg *lower_get_opt_config(void);
/* tinygrad's to_function_name: characters other than [A-Za-z0-9_] become two hex digits */
const char *lower_function_name(Arena *a, const char *name);
/* the reduce op's identity as a CONST of dt (ADD 0, MUL 1, MAX dtypes.min) */
UOp *lower_identity(Op op, const DType *dt);

/* ---- opt.c internals shared with lower.c: the kernel's axes as tinygrad's Kernel holds them after
 * simplify_ones + simplify_merge_adjacent, and the F-axis factors an opt list comes to */
/* one ShapeTracker's view of one kernel axis */
typedef struct KStAx {
  int64_t shape;                  /* its shape there (-1: symbolic) */
  int64_t stride;                 /* views[-1].strides (-1: symbolic or not linear) */
  int64_t rstride;                /* real_strides() where real (the index's coefficient) */
  bool real;                      /* real_strides() is not None there */
  bool masked;                    /* axis_is_masked */
  bool vm;                        /* views[-1].mask is not the whole axis: [mlo, mhi) */
  int64_t mlo, mhi;
} KStAx;
typedef struct KAxes {
  int n;                          /* merged axes */
  const Sint *size;               /* full_shape */
  const bool *reduce;             /* output_shape != full_shape there */
  int nst;                        /* ShapeTrackers: output, buffers, each reduce's out/in, the full shape */
  KStAx **st;                     /* st[t][axis]: ShapeTracker t on merged axis axis */
  int nf; const Sint *fsize;      /* lower's own axes (F) */
  int *lo, *hi;                   /* merged axis m is F axes kept[lo[m]..hi[m]] */
  int *kept;                      /* the F axes of size > 1 */
  int red_itemsize;               /* the first reduce's (toposort) dtype itemsize; 0: no reduce */
  bool parallel_reduces;          /* two REDUCE_AXIS reduce one axis (tinygrad refuses GROUP) */
  int mv0, mv1;                   /* the first reduce is ADD(MUL(LOAD, LOAD)): the loads' ShapeTrackers, else -1 */
  bool transcendental;            /* the kernel computes EXP2, LOG2, SIN or POW (tgc's CPU step reads it) */
  bool red_fsum;                  /* the first reduce is a float ADD (tgc's CPU step reads it) */
  bool sums_of_transcendentals;   /* every reduce adds a transcendental's values (EXP2, LOG2, SIN or POW
                                   * at its source's root): no MUL factor can leave it (CPU step) */
  bool has_vars;                  /* the kernel has DEFINE_VARs (PADTO refuses symbolic shapes) */
  bool pad_safe;                  /* every reduce is an ADD of ops with f(0) = 0 (PADTO of a reduce axis) */
} KAxes;
/* tinygrad's hand_coded_optimizations for target t; n opts into out */
int kopt_heuristic(Arena *a, const KAxes *k, const KTarget *t, KOpt *out);
/* tgc's own CPU step after the heuristic's n opts (opt.c: a matmul's register tile grown to the
 * machine's vectors; a transcendental body's dense 4-way UPCAST/UNROLL dropped); the new count */
int kopt_cpu_step(Arena *a, const KAxes *k, const KTarget *t, int lanes, int n, KOpt *opts);
/* the splits that make an F axis' factor (or a merged group's, at its first axis), innermost
 * first: split d has size amt[d] and weight the product of the sizes before it, and came from the
 * opts' opt[d]-th split (in the opts' order). tinygrad expands unrolled values with the axis of the
 * last UNROLL varying fastest, so the digits, sorted by opt[d], order them: a conv's
 * UNROLL:2:0,UNROLL:1:0 adds kx-major, ky-minor, and an axis unrolled twice (UNROLL:0:4,UNROLL:0:4)
 * is two digits, the second one's the faster */
typedef struct KDigits { int n; int opt[KOPT_MAX]; int64_t amt[KOPT_MAX]; } KDigits;
/* apply opts: per F axis the upcast/unroll factor (1: none) into fac, and grp[f] the first F axis of
 * a group that runs as one merged loop (a merged axis of several F axes, or a split that does not
 * fall on whole F axes; fac of that first axis is the group's), else -1; dig (may be NULL) gets each F axis' splits; false with why
 * when an opt does not apply (tinygrad's KernelOptError) */
bool kopt_factors(Arena *a, const KAxes *k, const KTarget *t, int n, const KOpt *v, int *fac, int *grp, KDigits *dig, char *why, size_t wn);
/* the PADTOs of opts v (which apply): per F axis its padded size into fto (0: not padded); the
 * number of F axes padded */
int kopt_pads(Arena *a, const KAxes *k, const KTarget *t, int n, const KOpt *v, int64_t *fto);
/* the kernel's axes after opts v (thread lowering): in tinygrad's order, each with its type, size,
 * merged axis m and its weight in m's index (m's index is the sum of its pieces' index times
 * weight) */
typedef enum { KAX_GLOBAL, KAX_LOCAL, KAX_LOOP, KAX_UPCAST, KAX_GROUP, KAX_REDUCE, KAX_UNROLL } KAxType;
typedef struct KPiece { uint8_t type; int m; int64_t size, weight; } KPiece;
typedef struct KPieces { int n; KPiece *v; bool nolocals; } KPieces;
bool kopt_pieces(Arena *a, const KAxes *k, const KTarget *t, int n, const KOpt *v, KPieces *out, char *why, size_t wn);

#endif
