/* util: memory arenas, growable vectors, ordered hash maps and the error channel.
 *
 * Two lifetimes (QBE's alloc/freeall, MIR's mark/pop): everything a compile creates lives in
 * an Arena that is freed in one call; pass-local scratch uses arena_mark/arena_pop. Library
 * code never calls exit(): tg_fail() records the first error and longjmps to the innermost
 * TG_TRY, so every allocation stays owned by an arena and nothing leaks. */
#ifndef TGC_UTIL_H
#define TGC_UTIL_H
#include <setjmp.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* ---- arena ---- */
typedef struct ArenaChunk ArenaChunk;
struct ArenaChunk { ArenaChunk *prev; size_t cap, off; _Alignas(16) unsigned char data[]; };
/* Bytes in use and their peak, shared by everything one compile context allocates (its arenas,
 * the pass arenas and the heap tables), so the peak is of their sum at one moment, not a sum of
 * peaks reached at different times. An arena without one (a zeroed Arena) counts in its own.
 * Between two decreases the count only grows, so its peak is the count just before a decrease or
 * the count now: an allocation only adds, and memuse_sub and memuse_peak take the maximum. */
typedef struct MemUse { size_t used, peak; } MemUse;
static inline void memuse_add(MemUse *u, size_t n) { if (u) u->used += n; }
static inline void memuse_sub(MemUse *u, size_t n) {
  if (!u) return;
  if (u->used > u->peak) u->peak = u->used;
  u->used -= n;
}
static inline size_t memuse_peak(const MemUse *u) { return u->used > u->peak ? u->used : u->peak; }
typedef struct Arena {
  ArenaChunk *head;
  MemUse *use;        /* where the arena's bytes are counted: set by arena_share, else &own at its first
                       * chunk (so an Arena is not copied once it has allocated) */
  ArenaChunk *spare;  /* one freed chunk kept for reuse */
  MemUse own;
} Arena;
static inline void arena_share(Arena *a, MemUse *u) { a->use = u; } /* before a's first allocation */
typedef struct ArenaMark { ArenaChunk *chunk; size_t off; } ArenaMark;
void *arena_alloc_grow(Arena *a, size_t n);     /* arena_bump when the head chunk is full */
/* the bump both allocators below share: n bytes (a multiple of the arena's granularity) at the
 * head chunk's offset. Inline: the passes allocate in the hundreds of thousands, and the bump is a
 * few instructions next to the call */
static inline void *arena_bump(Arena *a, size_t n) {
  ArenaChunk *c = a->head;
  if (__builtin_expect(!c || c->off + n > c->cap, 0)) return arena_alloc_grow(a, n);
  void *p = c->data + c->off;
  c->off += n;
  a->use->used += n;
  return p;
}
/* 16-byte aligned, not zeroed; fails via tg_fail on OOM */
static inline void *arena_alloc_raw(Arena *a, size_t n) { return arena_bump(a, (n + 15) & ~(size_t)15); }
/* like arena_alloc_raw but 8-byte aligned, for an arena that holds only objects of pointer
 * alignment (lib/uop's nodes: 104 bytes and 8 a source, so 16-byte rounding would waste 8 bytes on
 * every node with an even number of sources); an arena takes one of the two, never both */
static inline void *arena_alloc8(Arena *a, size_t n) { return arena_bump(a, (n + 7) & ~(size_t)7); }
/* like arena_alloc_raw, but zeroed (inline: a constant size's zeroing is a few stores) */
static inline void *arena_alloc(Arena *a, size_t n) { return memset(arena_alloc_raw(a, n), 0, n); }
void *arena_dup(Arena *a, const void *p, size_t n);
char *arena_strdup(Arena *a, const char *s);
char *arena_printf(Arena *a, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static inline ArenaMark arena_mark(Arena *a) { return (ArenaMark){a->head, a->head ? a->head->off : 0}; }
void arena_pop_chunks(Arena *a, ArenaMark m);   /* arena_pop across chunk boundaries */
/* frees everything allocated since the mark. Inline for the common case, a mark in the head chunk
 * (the shape code opens a temporaries scope per node it computes a ShapeTracker for) */
static inline void arena_pop(Arena *a, ArenaMark m) {
  ArenaChunk *c = a->head;
  if (__builtin_expect(c && c == m.chunk, 1)) {
    memuse_sub(a->use, c->off - m.off);
    c->off = m.off;
  } else arena_pop_chunks(a, m);
}
void arena_free(Arena *a);
/* A big text grown with realloc (glibc moves a big block by remapping it: no copy, no second
 * footprint) that an arena then takes over as one of its chunks, so it is never copied into the
 * arena: the output documents, which can be larger than the graph they describe. */
typedef struct BigBuf { ArenaChunk *c; size_t n; } BigBuf; /* n bytes of text at c->data; {0} is empty */
char *bigbuf_reserve(BigBuf *b, size_t need);   /* room for need bytes in all; returns the text */
void bigbuf_put(BigBuf *b, const char *s, size_t n); /* append n bytes, keeping a NUL after them */
void bigbuf_free(BigBuf *b);
char *arena_take(Arena *a, BigBuf *b);          /* b's text, now owned (and freed) by a; b is emptied */

/* ---- a growing NUL-terminated string in an arena: SB b = {arena} (or sb_init), then append;
 * b.s is NULL until the first append without sb_init, sb_get gives "" then ---- */
typedef struct SB { Arena *a; char *s; size_t n, cap; } SB;
void sb_init(SB *b, Arena *a);                  /* b.s = "" */
void sb_put(SB *b, const char *t, size_t k);    /* append k bytes of t */
void sb_str(SB *b, const char *t);              /* append t */
void sb_printf(SB *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static inline const char *sb_get(const SB *b) { return b->s ? b->s : ""; }

/* ---- growable vector of pointers (arena backed) ---- */
typedef struct PtrVec { void **v; int n, cap; Arena *a; } PtrVec;
void vec_init(PtrVec *v, Arena *a);
void vec_grow(PtrVec *v);                       /* vec_push's growth */
static inline void vec_push(PtrVec *v, void *p) {
  if (__builtin_expect(v->n == v->cap, 0)) vec_grow(v);
  v->v[v->n++] = p;
}
static inline void *vec_pop(PtrVec *v) { return v->v[--v->n]; }

/* ---- insertion-ordered hash map, keyed by pointer (like a Python dict of objects) ----
 * Keys hash by a caller-supplied 64-bit hash (a node's creation id, never its address), so
 * iteration order and output are the same on every run. Deletion keeps the order of the rest. */
typedef struct MapEnt { void *key; void *val; uint64_t h; } MapEnt;
typedef struct Map { MapEnt *ents; int32_t *idx; int n, cap, live, icap; Arena *a; } Map;
void map_init(Map *m, Arena *a);
void map_reserve(Map *m, int n);                              /* room for n live entries without regrowing */
void **map_slot(Map *m, void *key, uint64_t h, bool *isnew);  /* insert-if-missing, returns &val */
void *map_get(const Map *m, const void *key, uint64_t h, bool *found);
bool map_has(const Map *m, const void *key, uint64_t h);
void map_put(Map *m, void *key, uint64_t h, void *val);
bool map_del(Map *m, const void *key, uint64_t h);
#define MAP_EACH(m, e) for (MapEnt *e = (m)->ents; e && e < (m)->ents + (m)->n; e++) if (e->key)  /* e && : an empty map has no ents */

/* ---- intern set: open addressing over pointers with caller-given hash and equality ----
 * A slot is 8 bytes: the pointer, with the top 16 bits of its hash in the pointer's unused top
 * bits (user addresses are below 2^48), so a probe calls eq only on a tag match; growing the
 * table asks the set's hash function (iset_init) for each entry's full hash again. At the half
 * load the table keeps, the slots of a million-node graph take half the memory 16-byte slots did. */
typedef uint64_t (*IHash)(const void *stored);
typedef struct ISet { uint64_t *slots; size_t cap, n; IHash hash; MemUse *use; /* where the slots are counted (NULL: nowhere) */ } ISet;
typedef bool (*IEq)(const void *stored, const void *probe);
static inline void iset_init(ISet *s, IHash hash, MemUse *use) { *s = (ISet){NULL, 0, 0, hash, use}; }
/* a find-or-insert in one probe: iset_find returns the entry equal to probe, or NULL and the empty
 * slot where its probe ended (*slot); iset_add puts p there (the set unchanged in between), or
 * probes again when the table must grow first. malloc-backed; iset_free */
void *iset_find(ISet *s, uint64_t h, IEq eq, const void *probe, size_t *slot);
void iset_add(ISet *s, size_t slot, uint64_t h, void *p);
void iset_free(ISet *s);
void iset_reserve(ISet *s, size_t n);                             /* room for n entries without growing */
void iset_reserve_more(ISet *s, size_t more, size_t lim);        /* room for min(more, lim) entries more */
static inline size_t iset_bytes(const ISet *s) { return s->cap * sizeof *s->slots; }

/* ---- a map from pointer pairs to a pointer: tinygrad's caches keyed by two interned operands
 * (the context's memos); h is the caller's hash of the pair (ids, never addresses); a stored value
 * may be NULL. A zeroed PairMap is empty. Its table is on the heap, where a grown table frees the
 * one it replaces: a cache that lives as long as its context leaves no old tables behind ---- */
typedef struct PairEnt { const void *a, *b, *v; uint64_t h; } PairEnt;  /* a NULL: empty */
typedef struct PairMap { PairEnt *t; size_t cap, n; MemUse *use; /* where the table's bytes are counted (NULL: nowhere) */ } PairMap;
void pairmap_free(PairMap *m);                  /* its table (the map is empty again) */
static inline size_t pairmap_bytes(const PairMap *m) { return m->cap * sizeof *m->t; }
const PairEnt *pairmap_find(const PairMap *m, const void *a, const void *b, uint64_t h); /* NULL when absent */
bool pairmap_put(PairMap *m, const void *a, const void *b, uint64_t h, const void *v);  /* true when (a, b) is new */

static inline uint64_t hash_mix(uint64_t h, uint64_t x) {
  x *= 0x9E3779B97F4A7C15ull; x ^= x >> 32;
  h ^= x + 0x9E3779B97F4A7C15ull + (h << 6) + (h >> 2);
  return h;
}
uint64_t hash_bytes(const void *p, size_t n, uint64_t seed);
void sha256_hex(const void *data, size_t n, char out[65]); /* SHA-256 of data as 64 hex digits (sha256.c) */

/* ---- timing ---- */
double tg_now_ms(void);                    /* a monotonic clock in milliseconds */
double tg_median(double *v, int n);        /* the median of n > 0 values (sorts v) */

/* ---- errors ---- */
enum { TG_OK = 0, TG_ECHECK = 1, TG_EUSAGE = 2, TG_EINPUT = 3, TG_EDEVICE = 4, TG_EINTERNAL = 70 };
typedef struct TgErr { int code; char msg[1024]; } TgErr;
typedef struct TgTry { jmp_buf jb; struct TgTry *prev; } TgTry;
extern _Thread_local TgTry *tg_try_top;
extern _Thread_local TgErr tg_last_error;
/* > 0 inside a temporaries scope (lib/shape: one ShapeTracker step), where pass-local arrays may
 * go to the scratch arena the scope pops; tg_fail resets it to 0, the always-safe state */
extern _Thread_local int tg_tmp_scope;
_Noreturn void tg_fail(int code, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* in a TG_TRY's handler: fail again with the last error as it is (after cleaning up), or with its
 * message after "where: " (adding what the handler was doing) */
_Noreturn void tg_rethrow(void);
_Noreturn void tg_fail_in(const char *where);
/* usage:  TgTry t; if (TG_TRY(t)) { ...work...; tg_try_end(&t); } else { handle tg_last_error } */
#define TG_TRY(t) ((t).prev = tg_try_top, tg_try_top = &(t), setjmp((t).jb) == 0)
static inline void tg_try_end(TgTry *t) { tg_try_top = t->prev; }

/* fault injection: TGC_FAIL_ALLOC=N makes the Nth arena chunk allocation fail (tests) */
void util_fault_init(void);

#endif
