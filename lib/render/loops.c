/* loops.c: the C backend's loop shaping (RenderBackend.simd), done on the Program before printing.
 *
 * The loops tinygrad's opts leave are written for a GPU-like target: an UPCAST of an output axis
 * keeps k accumulators (or k stores) in one loop body, each reading its own row. On a CPU the
 * compiler's loop vectorizer widens a loop only when each memory access is a plain scalar one
 * that walks memory densely; a body that reads four rows 1 KB apart, four floats at a time, is
 * left to 4-wide straight-line code and the hardware prefetchers see short strided runs.
 *
 * dense        a loop's loads (and stores) walk memory densely: for every (buffer, base, mask)
 *              the constant offsets a body reads form one run as long as the index advances per
 *              iteration (base+0..3 with a step of 4), or the index does not move with the loop.
 * fission      an innermost reduce loop whose float-sum accumulators fall into independent groups
 *              (no load or loaded value shared between groups: index arithmetic is copied into
 *              each) becomes one loop per group, in the order the groups first update, when every
 *              group is dense on its own. Each accumulator still sees its values in the same order;
 *              the loop is then a simd reduction the compiler vectorizes at the machine's width.
 * Loops that are dense and get an `omp simd` pragma read scalars rather than tg_f4 vectors (the
 * vectorizer does not widen vector types).
 * k-blocking   a reduce loop of a small register tile (at most 32 accumulators) whose widest load
 *              steps 4 KB or more per iteration (a matmul's column, whose rows alias in L1) runs
 *              in blocks of about 32 KB of those rows around the loop that holds it; each
 *              accumulator resumes a block from the partial sum its store left in the output, so
 *              every sum adds its values in the same order (render_kblock, rendered by render.c). */
#include "render_int.h"
#include <string.h>

int64_t render_range_coef(UOp *u, UOp *range, int depth) {
  if (u == range) return 1;
  if (u->op == OP_CONST || u->op == OP_DEFINE_VAR || depth > 64) return depth > 64 ? -1 : 0;
  if (u->op == OP_RANGE) return 0;
  if (u->op == OP_ADD) {
    int64_t a = render_range_coef(u->src[0], range, depth + 1), b = render_range_coef(u->src[1], range, depth + 1);
    return a < 0 || b < 0 ? -1 : a + b;
  }
  if (u->op == OP_MUL) {
    int64_t a = render_range_coef(u->src[0], range, depth + 1), b = render_range_coef(u->src[1], range, depth + 1);
    if (a < 0 || b < 0) return -1;
    if (!a && !b) return 0;
    UOp *k = a ? u->src[1] : u->src[0];
    return k->op == OP_CONST && k->arg->kind == V_INT && k->arg->i >= 0 ? (a ? a : b) * k->arg->i : -1;
  }
  for (int i = 0; i < u->nsrc; i++) if (render_range_coef(u->src[i], range, depth + 1) != 0) return -1;
  return 0;
}

void render_split_const(UOp *idx, UOp **base, int64_t *c) {
  if (idx->op == OP_CONST && idx->arg->kind == V_INT) { *base = NULL; *c = idx->arg->i; return; }
  if (idx->op == OP_ADD && idx->src[1]->op == OP_CONST && idx->src[1]->arg->kind == V_INT) { *base = idx->src[0]; *c = idx->src[1]->arg->i; return; }
  *base = idx; *c = 0;
}

int render_loop_end(const Program *p, int i) {
  for (int k = i + 1; k < p->ninst; k++)
    if (p->inst[k].kind == LK_ENDLOOP && p->inst[k].u == p->inst[i].u && p->inst[k].depth == p->inst[i].depth) return k;
  return -1;
}

/* the INDEX a LOAD or STORE instruction goes through (NULL: none) */
static UOp *mem_index(const LInst *in) {
  if (in->kind == LK_VALUE && in->u->op == OP_LOAD && in->u->src[0]->op == OP_INDEX) return in->u->src[0];
  if (in->kind == LK_STORE && in->u->src[0]->op == OP_INDEX) return in->u->src[0];
  return NULL;
}

/* one memory stream of a loop body: (buffer, base, mask, step) and the constant offsets seen */
typedef struct Stream { UOp *buf, *base, *valid; int64_t step, lo, hi; int n; } Stream;

bool render_dense(const Program *p, int lo, int hi, UOp *loop, const bool *only) {
  Stream st[64];
  int ns = 0;
  for (int k = lo; k < hi; k++) {
    if (only && !only[k - lo]) continue;
    UOp *ix = mem_index(&p->inst[k]);
    if (!ix) continue;
    int64_t step = render_range_coef(ix->src[1], loop, 0), c;
    if (step < 0) return false;
    if (step == 0) continue;   /* loop-invariant */
    UOp *base;
    render_split_const(ix->src[1], &base, &c);
    UOp *valid = ix->nsrc > 2 ? ix->src[2] : NULL;
    int s = 0;
    while (s < ns && !(st[s].buf == ix->src[0] && st[s].base == base && st[s].valid == valid && st[s].step == step)) s++;
    if (s == ns) {
      if (ns == (int)(sizeof st / sizeof *st)) return false;
      st[ns++] = (Stream){ix->src[0], base, valid, step, c, c, 0};
    }
    if (c < st[s].lo) st[s].lo = c;
    if (c > st[s].hi) st[s].hi = c;
    st[s].n++;
  }
  /* distinct offsets (interned UOps: one instruction per offset) covering exactly one step */
  for (int s = 0; s < ns; s++)
    if (st[s].n != st[s].step || st[s].hi - st[s].lo + 1 != st[s].step) return false;
  return true;
}

bool render_sum_loop(const Program *p, int i, int j, const bool *only) {
  UOp *loop = p->inst[i].u;
  bool any = false;
  for (int k = i + 1; k < j; k++) {
    if (only && !only[k - i - 1]) continue;
    const LInst *in = &p->inst[k];
    if (in->kind != LK_VALUE && in->kind != LK_ACCUM) return false;   /* a nested loop, accumulator or store */
    if (in->kind == LK_VALUE && in->u->op == OP_LOAD && in->u->src[0]->op == OP_INDEX) {
      int64_t c = render_range_coef(in->u->src[0]->src[1], loop, 0);
      if (c < 0 || c > 8) return false;
    }
    if (in->kind == LK_ACCUM) {
      const DType *dt = in->u->dtype;
      if (in->u->arg->op != OP_ADD || (dt->scalar != SC_FLOAT && dt->scalar != SC_DOUBLE) || dt->count != 1) return false;
      any = true;
    }
  }
  return any;
}

/* ---------------------------------------------------------------- fission */
typedef struct Body {
  const Program *p;
  int lo, n;          /* instructions p->inst[lo..lo+n) */
  Map def;            /* UOp -> body position + 1 of the LK_VALUE that defines it */
  bool *heavy;        /* a load, an update, or a value computed from a load */
  int *parent;        /* union-find over body positions */
} Body;

static int uf_find(int *parent, int x) {
  while (parent[x] != x) x = parent[x] = parent[parent[x]];
  return x;
}
static void uf_union(int *parent, int a, int b) {
  a = uf_find(parent, a), b = uf_find(parent, b);
  if (a != b) parent[a < b ? b : a] = a < b ? a : b;
}
/* the operands of a body instruction (through an INDEX: its index and mask), into ops; returns n */
static int operands(const LInst *in, UOp **ops) {
  int n = 0;
  if (in->kind == LK_ACCUM) { ops[n++] = in->aux; return n; }
  for (int k = 0; k < in->u->nsrc && n < 8; k++) {
    UOp *s = in->u->src[k];
    if (s->op == OP_INDEX) { for (int j = 1; j < s->nsrc && n < 8; j++) ops[n++] = s->src[j]; }
    else ops[n++] = s;
  }
  return n;
}
static int def_pos(Body *b, UOp *u) { return (int)(intptr_t)map_get(&b->def, u, uop_h(u), NULL) - 1; }

/* the groups of loop [i, j) as group numbers per body position (-1: index arithmetic, copied),
 * or 0 groups when the loop is not a fission candidate */
static int fission_groups(Arena *a, const Program *p, int i, int j, int **group_out) {
  Body b = {.p = p, .lo = i + 1, .n = j - i - 1};
  if (b.n < 2) return 0;
  map_init(&b.def, a);
  b.heavy = arena_alloc(a, sizeof(bool) * (size_t)b.n);
  b.parent = arena_alloc(a, sizeof(int) * (size_t)b.n);
  int *group = arena_alloc(a, sizeof(int) * (size_t)b.n);
  for (int k = 0; k < b.n; k++) {
    const LInst *in = &p->inst[b.lo + k];
    if (in->kind != LK_VALUE && in->kind != LK_ACCUM) return 0;   /* a nested loop, accumulator or store */
    b.parent[k] = k;
    UOp *ops[8];
    int no = operands(in, ops);
    b.heavy[k] = in->kind == LK_ACCUM || in->u->op == OP_LOAD;
    for (int q = 0; q < no; q++) {
      int d = def_pos(&b, ops[q]);
      if (d >= 0 && b.heavy[d]) { b.heavy[k] = true; uf_union(b.parent, k, d); }
    }
    if (in->kind == LK_VALUE) map_put(&b.def, in->u, uop_h(in->u), (void *)(intptr_t)(k + 1));
  }
  /* every update of one accumulator is in its group */
  for (int k = 0; k < b.n; k++)
    for (int q = k + 1; q < b.n; q++)
      if (p->inst[b.lo + k].kind == LK_ACCUM && p->inst[b.lo + q].kind == LK_ACCUM && p->inst[b.lo + k].u == p->inst[b.lo + q].u)
        uf_union(b.parent, k, q);
  /* number the groups by their first update; a heavy value no update uses (none expected) stops it */
  int ng = 0;
  int *num = arena_alloc(a, sizeof(int) * (size_t)b.n);
  for (int k = 0; k < b.n; k++) num[k] = -1;
  for (int k = 0; k < b.n; k++)
    if (p->inst[b.lo + k].kind == LK_ACCUM && num[uf_find(b.parent, k)] < 0) num[uf_find(b.parent, k)] = ng++;
  for (int k = 0; k < b.n; k++) {
    group[k] = b.heavy[k] ? num[uf_find(b.parent, k)] : -1;
    if (b.heavy[k] && group[k] < 0) return 0;
  }
  *group_out = group;
  return ng;
}

/* which body positions group g needs: its own instructions and the index arithmetic they use */
static void group_members(Arena *a, const Program *p, int lo, int n, const int *group, int g, bool *in_g) {
  Map def;
  map_init(&def, a);
  for (int k = 0; k < n; k++) {
    const LInst *in = &p->inst[lo + k];
    in_g[k] = group[k] == g;
    if (in->kind == LK_VALUE) map_put(&def, in->u, uop_h(in->u), (void *)(intptr_t)(k + 1));
  }
  for (int k = n - 1; k >= 0; k--) {
    if (!in_g[k]) continue;
    UOp *ops[8];
    int no = operands(&p->inst[lo + k], ops);
    for (int q = 0; q < no; q++) {
      int d = (int)(intptr_t)map_get(&def, ops[q], uop_h(ops[q]), NULL) - 1;
      if (d >= 0 && group[d] < 0) in_g[d] = true;
    }
  }
}

const Program *render_fission(Arena *a, const Program *p) {
  /* a fissioned loop grows the program by its copies of the loop and of the index arithmetic */
  bool changed = false;
  LInst *buf = NULL;
  int nout = 0, cap = 0;
  for (int i = 0; i < p->ninst; i++) {
    const LInst *in = &p->inst[i];
    int j = in->kind == LK_LOOP ? render_loop_end(p, i) : -1;
    int *group = NULL;
    int ng = j > i ? fission_groups(a, p, i, j, &group) : 0;
    bool *in_g = NULL;
    bool ok = ng >= 2;
    int lo = i + 1, n = j - i - 1;
    if (ok) {
      in_g = arena_alloc(a, sizeof(bool) * (size_t)n * (size_t)ng);
      for (int g = 0; g < ng && ok; g++) {
        bool *m = in_g + (size_t)g * (size_t)n;
        group_members(a, p, lo, n, group, g, m);
        ok = render_dense(p, lo, j, in->u, m) && render_sum_loop(p, i, j, m);
      }
    }
    int need = nout + (ok ? ng * (n + 2) : 1);
    if (need > cap) {
      int nc = cap ? cap : p->ninst + 16;
      while (nc < need) nc *= 2;
      LInst *nb = arena_alloc(a, sizeof(LInst) * (size_t)nc);
      if (nout) memcpy(nb, buf, sizeof(LInst) * (size_t)nout);
      buf = nb, cap = nc;
    }
    if (!ok) { buf[nout++] = *in; continue; }
    for (int g = 0; g < ng; g++) {
      const bool *m = in_g + (size_t)g * (size_t)n;
      buf[nout++] = *in;
      for (int k = 0; k < n; k++) if (m[k]) buf[nout++] = p->inst[lo + k];
      buf[nout++] = p->inst[j];
    }
    i = j;
    changed = true;
  }
  if (!changed) return p;
  Program *q = arena_alloc(a, sizeof *q);
  *q = *p;
  q->inst = buf;
  q->ninst = nout;
  return q;
}

/* ---------------------------------------------------------------- k-blocking */
/* the body instructions of loop [i, j) at its own depth that are loops: their count, the first in *at */
static int child_loops(const Program *p, int i, int j, int *at) {
  int n = 0;
  for (int k = i + 1; k < j; k++)
    if (p->inst[k].kind == LK_LOOP && p->inst[k].depth == p->inst[i].depth + 1) { if (!n) *at = k; n++; }
  return n;
}
/* does value u (or what it is computed from, within [lo, hi) by def) use any of the set? */
static bool uses_any(UOp *u, const Map *def, const Program *p, const bool *bad, int lo) {
  UOp *stack[256];
  int n = 0;
  stack[n++] = u;
  while (n) {
    UOp *x = stack[--n];
    int d = (int)(intptr_t)map_get(def, x, uop_h(x), NULL) - 1;
    if (d < 0) continue;
    if (bad[d - lo]) return true;
    const LInst *in = &p->inst[d];
    if (in->kind != LK_VALUE) return true;
    for (int k = 0; k < x->nsrc; k++) {
      if (n == 256) return true;
      stack[n++] = x->src[k]->op == OP_INDEX ? x->src[k]->src[1] : x->src[k];
    }
  }
  return false;
}

const Program *render_kblock(Arena *a, const Program *p, KBlock *kb) {
  memset(kb, 0, sizeof *kb);
  for (int red = 0; red < p->ninst; red++) {
    const LInst *ri = &p->inst[red];
    if (ri->kind != LK_LOOP || ri->u->op != OP_RANGE || ri->depth < 2) continue;
    int red_end = render_loop_end(p, red), tmp;
    if (red_end < 0 || child_loops(p, red, red_end, &tmp)) continue;   /* innermost only */
    UOp *bound = ri->u->src[0];
    if (bound->op != OP_CONST || bound->arg->kind != V_INT) continue;
    int64_t K = bound->arg->i;
    /* the loop around it, with this reduce loop its only loop */
    int col = -1;
    for (int k = red - 1; k >= 0 && col < 0; k--) if (p->inst[k].kind == LK_LOOP && p->inst[k].depth == ri->depth - 1) col = k;
    if (col < 0 || p->inst[col].u->op != OP_RANGE) continue;
    int col_end = render_loop_end(p, col);
    if (col_end < 0 || child_loops(p, col, col_end, &tmp) != 1) continue;
    /* the widest step a load takes per reduce iteration, in bytes: a column of a row-major matrix */
    int64_t wide = 0;
    for (int k = red + 1; k < red_end; k++) {
      const LInst *in = &p->inst[k];
      if (in->kind == LK_VALUE && in->u->op == OP_LOAD && in->u->src[0]->op == OP_INDEX) {
        int64_t c = render_range_coef(in->u->src[0]->src[1], ri->u, 0);
        if (c < 0) { wide = -1; break; }
        int64_t bytes = c * dt_base(in->u->src[0]->src[0]->dtype)->itemsize;
        if (bytes > wide) wide = bytes;
      }
    }
    if (wide < 4096) continue;
    /* reduce iterations per block: the widest operand's rows in about 32 KB (an L1) */
    int64_t step = 32768 / wide;
    if (step < 1) step = 1;
    while (step > 1 && K % step) step--;
    if (step >= K) continue;
    /* the loop body: values and accumulators before the reduce loop, stores of accumulators after */
    int nacc = 0, first_acc = -1;
    bool ok = true;
    for (int k = col + 1; k < col_end && ok; k++) {
      const LInst *in = &p->inst[k];
      if (k > red && k < red_end) continue;
      if (in->kind == LK_ACC) { nacc++; if (first_acc < 0) first_acc = k; if (k > red) ok = false; }
      else if (in->kind == LK_STORE) ok = k > red_end;
      else if (in->kind != LK_VALUE && k != red && k != red_end) ok = false;
    }
    /* a register tile of more than 32 accumulators reuses enough of each row that blocking's
     * partial sums cost more than they save (matmul 1024 on the CI machine type: tiles of 8 to 32
     * accumulators run 1.5-4.5x faster blocked, tiles of 64 and 128 1.3-3x slower) */
    if (!ok || !nacc || nacc > 32) continue;
    kb->acc = arena_alloc(a, sizeof(UOp *) * (size_t)nacc);
    kb->store_ix = arena_alloc(a, sizeof(UOp *) * (size_t)nacc);
    kb->nacc = 0;
    for (int k = col + 1; k < red && ok; k++) {
      if (p->inst[k].kind != LK_ACC) continue;
      UOp *r = p->inst[k].u, *ix = NULL;
      int nst = 0;
      for (int q = red_end + 1; q < col_end; q++)
        if (p->inst[q].kind == LK_STORE && p->inst[q].u->src[1] == r) { ix = p->inst[q].u->src[0]; nst++; }
      /* one ungated store of exactly the accumulator, in its own type (a partial sum comes back bit for bit) */
      ok = nst == 1 && ix->op == OP_INDEX && ix->nsrc == 2 && dt_base(ix->src[0]->dtype) == r->dtype && ix->src[0]->op == OP_DEFINE_GLOBAL;
      if (ok) kb->acc[kb->nacc] = r, kb->store_ix[kb->nacc++] = ix;
    }
    /* every update in the reduce loop is to one of these accumulators (an accumulator from further
     * out would see its values in another order) */
    for (int q = red + 1; q < red_end && ok; q++) {
      if (p->inst[q].kind != LK_ACCUM) continue;
      bool mine = false;
      for (int t = 0; t < kb->nacc; t++) mine |= kb->acc[t] == p->inst[q].u;
      ok = mine;
    }
    /* every store stores an accumulator; no output buffer is read in the kernel */
    for (int q = red_end + 1; q < col_end && ok; q++) {
      if (p->inst[q].kind != LK_STORE) continue;
      bool mine = false;
      for (int t = 0; t < kb->nacc; t++) mine |= kb->acc[t] == p->inst[q].u->src[1];
      ok = mine;
    }
    for (int q = 0; q < p->ninst && ok; q++) {
      const LInst *in = &p->inst[q];
      if (in->kind != LK_VALUE || in->u->op != OP_LOAD || in->u->src[0]->op != OP_INDEX) continue;
      for (int t = 0; t < kb->nacc && ok; t++) ok = in->u->src[0]->src[0] != kb->store_ix[t]->src[0];
    }
    if (!ok) continue;
    /* the stores' index values defined after the accumulators move in front of them: they must not
     * depend on anything computed in the reduce loop or from an accumulator */
    int lo = col + 1, n = col_end - lo;
    Map def;
    map_init(&def, a);
    bool *bad = arena_alloc(a, sizeof(bool) * (size_t)n), *move = arena_alloc(a, sizeof(bool) * (size_t)n);
    for (int k = lo; k < col_end; k++) {
      const LInst *in = &p->inst[k];
      if (in->kind == LK_VALUE) map_put(&def, in->u, uop_h(in->u), (void *)(intptr_t)(k + 1));
      bad[k - lo] = (k >= red && k <= red_end) || in->kind == LK_ACC;
    }
    for (int t = 0; t < kb->nacc; t++) map_put(&def, kb->acc[t], uop_h(kb->acc[t]), (void *)(intptr_t)(first_acc + 1));
    for (int t = 0; t < kb->nacc && ok; t++) ok = !uses_any(kb->store_ix[t]->src[1], &def, p, bad, lo);
    if (!ok) continue;
    /* mark the index values to move: the stores' index trees among the instructions after the loop */
    for (int t = 0; t < kb->nacc; t++) {
      UOp *stack[256];
      int sn = 0;
      stack[sn++] = kb->store_ix[t]->src[1];
      while (sn) {
        UOp *x = stack[--sn];
        int d = (int)(intptr_t)map_get(&def, x, uop_h(x), NULL) - 1;
        if (d < first_acc || move[d - lo]) continue;   /* defined in front of the accumulators already */
        move[d - lo] = true;
        for (int k = 0; k < x->nsrc && sn < 256; k++) stack[sn++] = x->src[k];
      }
    }
    LInst *ni = arena_alloc(a, sizeof(LInst) * (size_t)p->ninst);
    int o = 0;
    for (int k = 0; k < first_acc; k++) ni[o++] = p->inst[k];
    for (int k = first_acc; k < col_end; k++) if (move[k - lo]) ni[o++] = (LInst){LK_VALUE, p->inst[first_acc].depth, p->inst[k].u, NULL};
    for (int k = first_acc; k < p->ninst; k++) if (!(k < col_end && move[k - lo])) ni[o++] = p->inst[k];
    Program *q = arena_alloc(a, sizeof *q);
    *q = *p;
    q->inst = ni;
    kb->col = p->inst[col].u;
    kb->red = ri->u;
    kb->step = step;
    return q;
  }
  return p;
}
