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
 * The kernel name is tinygrad's Kernel.name without opts (E_/r_ plus the merged loop sizes). */
#ifndef TGC_CODEGEN_H
#define TGC_CODEGEN_H
#include "../shape/shape.h"

typedef enum {
  LK_VALUE,    /* u: compute a value (ALU, CAST, BITCAST, LOAD) into a variable */
  LK_LOOP,     /* u: a RANGE; open `for (ridx = 0; ridx < end; ridx++)` */
  LK_ENDLOOP,  /* u: the RANGE being closed */
  LK_ACC,      /* u: a REDUCE; declare its accumulator with the reduce op's identity */
  LK_ACCUM,    /* u: a REDUCE, aux: the value; acc = op(acc, value) */
  LK_STORE,    /* u: STORE(INDEX(buf, idx[, valid]), value) */
} LKind;
typedef struct LInst { uint8_t kind; uint16_t depth; UOp *u, *aux; } LInst;

typedef struct KParam { UOp *u; bool written; } KParam;  /* a DEFINE_GLOBAL or DEFINE_VAR */
typedef struct Program {
  const char *name;               /* "r_16_40", deduplicated with "n1", "n2"... like Kernel.kernel_cnt */
  const char *fname;              /* the C identifier: to_function_name(name), "r_28start_pos2B129_32" */
  int nglobals; KParam *globals;  /* DEFINE_GLOBALs in arg order (slot i is data{i}) */
  int nvars; UOp **vars;          /* DEFINE_VARs sorted by name (the int params after the buffers) */
  int ninst; LInst *inst;
  int nranges;                    /* RANGE ids used: 0..nranges-1 */
} Program;

/* Kernel names seen so far in one compile (tinygrad's process-global Kernel.kernel_cnt). */
typedef struct KNames { Map seen; } KNames;
void knames_init(KNames *k, Arena *a);

/* the name tinygrad gives ast (a SINK), before dedup: "E_10", "r_16_40", "E2_4" for two stores */
const char *lower_kernel_name(UOp *ast);
/* lower and linearize one kernel AST; names is optional (NULL: no dedup). Fails TG_EINPUT on an AST
 * it cannot lower (naming the op). */
Program *lower_kernel(UOp *ast, KNames *names);
/* tinygrad's to_function_name: characters other than [A-Za-z0-9_] become two hex digits */
const char *lower_function_name(Arena *a, const char *name);
/* the reduce op's identity as a CONST of dt (ADD 0, MUL 1, MAX dtypes.min) */
UOp *lower_identity(Op op, const DType *dt);

#endif
