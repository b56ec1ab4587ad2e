/* util.c: arena chunks, the ordered map (entries array + open-addressing index, like CPython's
 * compact dict), and tg_fail's longjmp error channel. */
#include "util.h"
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/mman.h>

_Thread_local TgTry *tg_try_top;
_Thread_local TgErr tg_last_error;
_Thread_local int tg_tmp_scope;

_Noreturn void tg_fail(int code, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  tg_last_error.code = code;
  tg_tmp_scope = 0;
  vsnprintf(tg_last_error.msg, sizeof tg_last_error.msg, fmt, ap);
  va_end(ap);
  if (!tg_try_top) {
    fprintf(stderr, "tgc: internal error (no handler): %s\n", tg_last_error.msg);
    abort();
  }
  TgTry *t = tg_try_top;
  tg_try_top = t->prev;
  longjmp(t->jb, 1);
}
_Noreturn void tg_rethrow(void) {
  TgErr e = tg_last_error;   /* tg_fail formats into tg_last_error: pass a copy */
  tg_fail(e.code, "%s", e.msg);
}
_Noreturn void tg_fail_in(const char *where) {
  TgErr e = tg_last_error;
  tg_fail(e.code, "%s: %s", where, e.msg);
}

/* ---- timing ---- */
double tg_now_ms(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}
static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}
double tg_median(double *v, int n) {
  qsort(v, (size_t)n, sizeof *v, cmp_double);
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* ---- arena ---- */

static long fault_countdown = -1;
void util_fault_init(void) {
  const char *s = getenv("TGC_FAIL_ALLOC");
  fault_countdown = s ? atol(s) : -1;
}

/* A fresh chunk for at least n bytes: the spare one when it fits, else a new one. An arena's
 * first chunk is 1 MB; later ones double (up to 64 MB) and are 2 MB aligned and advised for
 * transparent huge pages, so a big compilation takes a page fault per 2 MB instead of per 4 KB
 * (page faults were a third of scheduling time on model graphs). */
#define HUGE_PAGE ((size_t)2 << 20)
static ArenaChunk *arena_grow(Arena *a, size_t n) {
  ArenaChunk *c = a->spare;
  if (c && c->cap >= n) {
    a->spare = NULL;
  } else {
    if (fault_countdown >= 0 && fault_countdown-- == 0) tg_fail(TG_EINTERNAL, "out of memory (injected)");
    size_t want = a->head ? a->head->cap * 2 : (size_t)1 << 20;
    if (want > ((size_t)64 << 20)) want = (size_t)64 << 20;
    if (want < n) want = n;
    if (!a->head && n <= ((size_t)1 << 20)) {
      c = malloc(sizeof *c + want);
      if (!c) tg_fail(TG_EINTERNAL, "out of memory allocating %zu bytes", want);
      c->cap = want;
    } else {
      size_t total = (sizeof *c + want + HUGE_PAGE - 1) & ~(HUGE_PAGE - 1);
      void *p = NULL;
      if (total < want || posix_memalign(&p, HUGE_PAGE, total) != 0) tg_fail(TG_EINTERNAL, "out of memory allocating %zu bytes", want);
#ifdef MADV_HUGEPAGE
      madvise(p, total, MADV_HUGEPAGE); /* advice only: without THP these are plain pages */
#endif
      c = p;
      c->cap = total - sizeof *c;
    }
  }
  c->prev = a->head; c->off = 0;
  a->head = c;
  if (!a->use) a->use = &a->own;
  return c;
}
/* the bump spelled out again rather than a call to arena_alloc_raw: scratch marks popped at a chunk
 * boundary make this path warm, and the call measured 0.5% more instructions per schedule */
void *arena_alloc_grow(Arena *a, size_t n) {
  ArenaChunk *c = arena_grow(a, n);
  void *p = c->data + c->off;
  c->off += n;
  memuse_add(a->use, n);
  return p;
}
void *arena_dup(Arena *a, const void *p, size_t n) { void *q = arena_alloc_raw(a, n ? n : 1); if (n) memcpy(q, p, n); return q; }
char *arena_strdup(Arena *a, const char *s) { return arena_dup(a, s, strlen(s) + 1); }
char *arena_printf(Arena *a, const char *fmt, ...) {
  va_list ap, ap2;
  va_start(ap, fmt); va_copy(ap2, ap);
  char one[1];
  int n = vsnprintf(one, 1, fmt, ap);
  va_end(ap);
  char *s = arena_alloc_raw(a, (size_t)n + 1);
  vsnprintf(s, (size_t)n + 1, fmt, ap2);
  va_end(ap2);
  return s;
}

/* ---- string builder ---- */
void sb_init(SB *b, Arena *a) { *b = (SB){a, NULL, 0, 0}; sb_put(b, "", 0); }
void sb_put(SB *b, const char *t, size_t k) {
  if (b->n + k + 1 > b->cap) {
    size_t nc = b->cap ? b->cap * 2 : 256;
    while (b->n + k + 1 > nc) nc *= 2;
    char *ns = arena_alloc_raw(b->a, nc);
    if (b->n) memcpy(ns, b->s, b->n);
    b->s = ns; b->cap = nc;
  }
  if (k) memcpy(b->s + b->n, t, k);
  b->n += k;
  b->s[b->n] = 0;
}
void sb_str(SB *b, const char *t) { sb_put(b, t, strlen(t)); }
void sb_printf(SB *b, const char *fmt, ...) {
  char tmp[512];
  va_list ap;
  va_start(ap, fmt);
  int k = vsnprintf(tmp, sizeof tmp, fmt, ap);
  va_end(ap);
  if (k < 0) tg_fail(TG_EINTERNAL, "sb_printf: bad format %s", fmt);
  if (k < (int)sizeof tmp) { sb_put(b, tmp, (size_t)k); return; }
  char *big = arena_alloc_raw(b->a, (size_t)k + 1);
  va_start(ap, fmt);
  vsnprintf(big, (size_t)k + 1, fmt, ap);
  va_end(ap);
  sb_put(b, big, (size_t)k);
}
void arena_pop_chunks(Arena *a, ArenaMark m) {
  while (a->head && a->head != m.chunk) {
    if (!m.chunk && !a->head->prev) { /* popping to empty: keep one chunk for reuse */
      memuse_sub(a->use, a->head->off);
      a->head->off = 0;
      return;
    }
    ArenaChunk *p = a->head->prev;
    memuse_sub(a->use, a->head->off);
    if (!a->spare || a->spare->cap < a->head->cap) { free(a->spare); a->spare = a->head; }
    else free(a->head);
    a->head = p;
  }
  if (a->head) { memuse_sub(a->use, a->head->off - m.off); a->head->off = m.off; }
}
char *bigbuf_reserve(BigBuf *b, size_t need) {
  size_t cap = b->c ? b->c->cap : 0;
  if (need > cap) {
    size_t nc = cap ? cap : (size_t)1 << 16;
    while (nc < need) nc *= 2;
    ArenaChunk *c = realloc(b->c, sizeof *c + nc);
    if (!c) tg_fail(TG_EINTERNAL, "out of memory allocating %zu bytes", nc);
    c->cap = nc;
    b->c = c;
  }
  return (char *)b->c->data;
}
void bigbuf_put(BigBuf *b, const char *s, size_t n) {
  char *p = bigbuf_reserve(b, b->n + n + 1);
  memcpy(p + b->n, s, n);
  b->n += n;
  p[b->n] = 0;
}
void bigbuf_free(BigBuf *b) { free(b->c); *b = (BigBuf){0}; }
char *arena_take(Arena *a, BigBuf *b) {
  ArenaChunk *c = b->c;
  if (!c) return arena_alloc(a, 1);
  c->off = (b->n + 1 + 15) & ~(size_t)15; /* the text and its NUL; later allocations may use the rest */
  c->prev = a->head;
  a->head = c;
  if (!a->use) a->use = &a->own;
  memuse_add(a->use, c->off);
  *b = (BigBuf){0};
  return (char *)c->data;
}
void arena_free(Arena *a) {
  while (a->head) { ArenaChunk *p = a->head->prev; memuse_sub(a->use, a->head->off); free(a->head); a->head = p; }
  free(a->spare);
  a->spare = NULL;
}

/* ---- vector ---- */
void vec_init(PtrVec *v, Arena *a) { v->v = NULL; v->n = v->cap = 0; v->a = a; }
void vec_grow(PtrVec *v) {
  int nc = v->cap ? v->cap * 2 : 8;
  void **nv = arena_alloc_raw(v->a, sizeof(void *) * (size_t)nc);
  if (v->n) memcpy(nv, v->v, sizeof(void *) * (size_t)v->n);
  v->v = nv; v->cap = nc;
}

/* ---- hashing ---- */
/* hash_mix is inline in util.h */
uint64_t hash_bytes(const void *p, size_t n, uint64_t seed) {
  const unsigned char *b = p;
  uint64_t h = 1469598103934665603ull ^ seed;
  for (size_t i = 0; i < n; i++) { h ^= b[i]; h *= 1099511628211ull; }
  return h;
}

/* ---- ordered map ---- */
void map_init(Map *m, Arena *a) { memset(m, 0, sizeof *m); m->a = a; }

static void map_reindex(Map *m, int icap) {
  /* compact deleted entries, rebuild index */
  int j = 0;
  for (int i = 0; i < m->n; i++) if (m->ents[i].key) m->ents[j++] = m->ents[i];
  m->n = j;
  m->idx = arena_alloc_raw(m->a, sizeof(int32_t) * (size_t)icap);
  memset(m->idx, 0xff, sizeof(int32_t) * (size_t)icap);
  m->icap = icap;
  for (int i = 0; i < m->n; i++) {
    size_t p = m->ents[i].h & (size_t)(icap - 1);
    while (m->idx[p] >= 0) p = (p + 1) & (size_t)(icap - 1);
    m->idx[p] = i;
  }
}

void map_reserve(Map *m, int n) {
  if (n + 1 > m->cap) {
    MapEnt *ne = arena_alloc_raw(m->a, sizeof(MapEnt) * (size_t)(n + 1));
    if (m->n) memcpy(ne, m->ents, sizeof(MapEnt) * (size_t)m->n);
    m->ents = ne; m->cap = n + 1;
  }
  int ic = 16;
  while (ic < (n + 1) * 2) ic *= 2;
  if (ic > m->icap) map_reindex(m, ic);
}

static inline int map_find(const Map *m, const void *key, uint64_t h, size_t *pos) {
  if (!m->icap) return -1;
  size_t p = h & (size_t)(m->icap - 1);
  for (;;) {
    int32_t i = m->idx[p];
    if (i == -1) { if (pos) *pos = p; return -1; }
    if (i >= 0 && m->ents[i].key == key) { if (pos) *pos = p; return i; }
    p = (p + 1) & (size_t)(m->icap - 1);
  }
}

void **map_slot(Map *m, void *key, uint64_t h, bool *isnew) {
  size_t p = 0;
  int i = map_find(m, key, h, &p);
  if (i >= 0) { if (isnew) *isnew = false; return &m->ents[i].val; }
  if (__builtin_expect(m->n + 1 < m->cap && (m->n + 1) * 2 <= m->icap, 1)) { /* p is the free slot */
    m->ents[m->n] = (MapEnt){key, NULL, h};
    m->idx[p] = m->n++;
    m->live++;
    if (isnew) *isnew = true;
    return &m->ents[m->n - 1].val;
  }
  if (m->n + 1 >= m->cap) {
    int nc = m->cap ? m->cap * 2 : 8;
    MapEnt *ne = arena_alloc_raw(m->a, sizeof(MapEnt) * (size_t)nc);
    if (m->n) memcpy(ne, m->ents, sizeof(MapEnt) * (size_t)m->n);
    m->ents = ne; m->cap = nc;
  }
  if ((m->n + 1) * 2 > m->icap) {
    int ic = 16;
    while (ic < (m->live + 1) * 4) ic *= 2;
    map_reindex(m, ic);
  }
  map_find(m, key, h, &p);
  m->ents[m->n] = (MapEnt){key, NULL, h};
  m->idx[p] = m->n++;
  m->live++;
  if (isnew) *isnew = true;
  return &m->ents[m->n - 1].val;
}
void *map_get(const Map *m, const void *key, uint64_t h, bool *found) {
  int i = map_find(m, key, h, NULL);
  if (found) *found = i >= 0;
  return i >= 0 ? m->ents[i].val : NULL;
}
bool map_has(const Map *m, const void *key, uint64_t h) { return map_find(m, key, h, NULL) >= 0; }
void map_put(Map *m, void *key, uint64_t h, void *val) { *map_slot(m, key, h, NULL) = val; }
bool map_del(Map *m, const void *key, uint64_t h) {
  size_t p;
  int i = map_find(m, key, h, &p);
  if (i < 0) return false;
  m->ents[i].key = NULL;
  m->idx[p] = -2; /* tombstone */
  m->live--;
  return true;
}

/* ---- pair map ---- */
static PairEnt *pairmap_slot(PairEnt *t, size_t cap, const void *a, const void *b, uint64_t h) {
  size_t p = h & (cap - 1);
  while (t[p].a && (t[p].a != a || t[p].b != b)) p = (p + 1) & (cap - 1);
  return &t[p];
}
const PairEnt *pairmap_find(const PairMap *m, const void *a, const void *b, uint64_t h) {
  if (!m->cap) return NULL;
  const PairEnt *e = pairmap_slot(m->t, m->cap, a, b, h);
  return e->a ? e : NULL;
}
bool pairmap_put(PairMap *m, const void *a, const void *b, uint64_t h, const void *v) {
  if ((m->n + 1) * 2 > m->cap) {
    /* from 32 to 4096 slots four times the room: a memo that grows to hundreds of entries
     * (View.__add__'s on a big graph) is rehashed and zeroed half as often, and a small one (most
     * memos of a small graph) is no larger than before */
    size_t nc = m->cap ? m->cap * (m->cap >= 32 && m->cap < 4096 ? 4 : 2) : 8;
    PairEnt *nt = calloc(nc, sizeof(PairEnt));
    if (!nt) tg_fail(TG_EINTERNAL, "out of memory growing a pair map");
    memuse_add(m->use, sizeof(PairEnt) * nc);
    for (size_t i = 0; i < m->cap; i++) if (m->t[i].a) *pairmap_slot(nt, nc, m->t[i].a, m->t[i].b, m->t[i].h) = m->t[i];
    free(m->t);
    memuse_sub(m->use, pairmap_bytes(m));
    m->t = nt, m->cap = nc;
  }
  PairEnt *e = pairmap_slot(m->t, m->cap, a, b, h);
  bool isnew = !e->a;
  *e = (PairEnt){a, b, v, h};
  m->n += isnew;
  return isnew;
}

void pairmap_free(PairMap *m) {
  free(m->t);
  memuse_sub(m->use, pairmap_bytes(m));
  *m = (PairMap){NULL, 0, 0, m->use};
}

/* ---- intern set ---- */
#define ISET_TAG 0xFFFF000000000000ull
void *iset_find(ISet *s, uint64_t h, IEq eq, const void *probe, size_t *slot) {
  *slot = SIZE_MAX;
  if (!s->cap) return NULL;
  size_t m = s->cap - 1, p = h & m;
  uint64_t tag = h & ISET_TAG;
  for (uint64_t e; (e = s->slots[p]); p = (p + 1) & m) {
    void *q = (void *)(uintptr_t)(e & ~ISET_TAG);
    if ((e & ISET_TAG) == tag && eq(q, probe)) return q;
  }
  *slot = p;
  return NULL;
}
/* the table rehashed into nc slots (a power of two) */
static void iset_rehash(ISet *s, size_t nc) {
  uint64_t *ns = calloc(nc, sizeof *ns);
  if (!ns) tg_fail(TG_EINTERNAL, "out of memory growing intern table");
  memuse_add(s->use, nc * sizeof *ns); /* the old table is live until the new one is filled */
  if (s->n && !s->hash) tg_fail(TG_EINTERNAL, "intern table without a hash function (iset_init)");
  for (size_t i = 0; i < s->cap; i++) if (s->slots[i]) {
    size_t p = s->hash((void *)(uintptr_t)(s->slots[i] & ~ISET_TAG)) & (nc - 1);
    while (ns[p]) p = (p + 1) & (nc - 1);
    ns[p] = s->slots[i];
  }
  free(s->slots);
  memuse_sub(s->use, iset_bytes(s));
  s->slots = ns; s->cap = nc;
}
/* a table starts at 16 slots, so a small graph's memory is its own size, not a fixed cost; the
 * readers size big ones ahead (graph_read_mem, create_schedule) */
static void iset_grow(ISet *s) { iset_rehash(s, s->cap ? s->cap * 2 : 16); }
void iset_add(ISet *s, size_t slot, uint64_t h, void *p) {
  if ((uintptr_t)p & ISET_TAG) tg_fail(TG_EINTERNAL, "intern table: an address above 2^48");
  if (slot == SIZE_MAX || (s->n + 1) * 2 > s->cap) { /* no slot yet, or the table grows first: probe again */
    if ((s->n + 1) * 2 > s->cap) iset_grow(s);
    size_t m = s->cap - 1;
    for (slot = h & m; s->slots[slot]; slot = (slot + 1) & m) {}
  }
  s->slots[slot] = (uint64_t)(uintptr_t)p | (h & ISET_TAG);
  s->n++;
}
void iset_reserve(ISet *s, size_t n) {
  size_t nc = s->cap ? s->cap : 16;
  while (n * 2 > nc) nc *= 2;
  if (nc != s->cap) iset_rehash(s, nc);
}
void iset_reserve_more(ISet *s, size_t more, size_t lim) { iset_reserve(s, s->n + (more < lim ? more : lim)); }
void iset_free(ISet *s) { free(s->slots); memuse_sub(s->use, iset_bytes(s)); s->slots = NULL; s->cap = s->n = 0; }
