/* render_int.h: what render.c and loops.c share (not part of the render stage's interface). */
#ifndef TGC_RENDER_INT_H
#define TGC_RENDER_INT_H
#include "render.h"

/* the coefficient of range in the index expression u: 0 when u does not use it, -1 when u is not
 * linear in it (products of it with non-constants, divisions, ...) */
int64_t render_range_coef(UOp *u, UOp *range, int depth);
/* an index as base + c (base NULL: a constant index) */
void render_split_const(UOp *idx, UOp **base, int64_t *c);
/* the ENDLOOP instruction closing the LOOP at instruction i (-1: none) */
int render_loop_end(const Program *p, int i);
/* the memory accesses of instructions [lo, hi) (those with only[k - lo] set, when only is given)
 * walk memory densely in loop: per (buffer, base, mask) the constant offsets form one run exactly
 * as long as the index's step per iteration, or the index does not move with the loop */
bool render_dense(const Program *p, int lo, int hi, UOp *loop, const bool *only);
/* the body of loop [i, j) (the instructions with only[k - i - 1] set, when only is given) is a float
 * sum the compiler may vectorize (RenderBackend.simd): values and float32/64 ADD updates only, at
 * least one, and loads stepping by at most 8 elements per iteration (an unrolled contiguous walk
 * steps by the unroll; a wide stride, like a matmul's column, vectorizes badly and blocks the
 * compiler's own loop interchange) */
bool render_sum_loop(const Program *p, int i, int j, const bool *only);
/* p with every innermost float-sum loop whose accumulators form independent dense groups split
 * into one loop per group (p itself when none is) */
const Program *render_fission(Arena *a, const Program *p);

/* k-blocking (RenderBackend.kblock): a reduce loop of at most 32 accumulators whose widest load
 * steps by 4 KB or more per iteration (a matmul's column: its rows alias in the cache; a wider
 * register tile reuses each row enough without it) runs in blocks of `step` iterations
 * with the block loop around the loop that holds it (col), so the rows a block reads stay in L1
 * while col sweeps them; each accumulator starts a block from the partial sum its store left in
 * the output (acc[i] is stored through store_ix[i]), so every sum still adds its values in
 * order and the results are bit for bit the same. */
typedef struct KBlock {
  UOp *col, *red;         /* the loop around the reduce loop, and the reduce loop (NULL: none) */
  int64_t step;           /* reduce iterations per block */
  int nacc; UOp **acc, **store_ix;
} KBlock;
/* p with the stores' index values moved in front of the accumulators when a loop can be k-blocked
 * (kb says which; kb->col NULL and p itself when none can) */
const Program *render_kblock(Arena *a, const Program *p, KBlock *kb);

#endif
