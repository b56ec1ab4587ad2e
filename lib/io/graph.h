/* io: the JSON boundary (FORMATS.md): reading graph files (with inline base64 and .npy buffer
 * data), writing graph/uop tables, reading expect files, writing schedule files, .npy files.
 * Every malformed input fails with TG_EINPUT and a message naming file, row id and field:
 *   "model.json: row 17 (ADD): src[1]: no row 42" */
#ifndef TGC_GRAPH_H
#define TGC_GRAPH_H
#include "../uop/uop.h"

typedef struct BufData { UOp *buf; const void *bytes; size_t nbytes; } BufData;
typedef struct Graph {
  const char *path;            /* as given ("-" for stdin) */
  UOp *sink;
  int nrows; UOp **rows;       /* rows[id] */
  Options opt;                 /* the file's options over the defaults */
  int64_t max_unique;          /* largest UNIQUE arg in the file (-1 when none) */
  int ndata; BufData *data;    /* BUFFER rows that carry data */
} Graph;

/* read a graph file into the current context; fails with TG_EINPUT (message names file/row/field) */
Graph *graph_read_file(const char *path);
Graph *graph_read_mem(const char *name, const char *text, size_t n, const char *basedir);

/* a table of rows (FORMATS.md row format) for every node reachable from roots, in toposort
 * order, ids from 0; returns the JSON text "[row,...]" (the caller hands it to
 * json_print_with_rows or frees it with bigbuf_free) and each root's id in root_ids */
typedef struct cJSON cJSON;
BigBuf json_uop_rows(int nroots, UOp *const *roots, int *root_ids);
/* head's text with "key": rows and then tail (raw JSON members, "" for none) added at its end, as
 * one text + "\n" in a; deletes head and takes rows over. A big table is never copied: the rows move
 * up in their buffer, which the arena takes over, and the document is never a cJSON tree around it. */
char *json_print_with_rows(Arena *a, cJSON *head, const char *key, BigBuf rows, const char *tail);
char *graph_write(Arena *a, UOp *sink, const Options *opt);   /* a whole graph file */
cJSON *json_int(int64_t i);                                  /* an exact integer node (raw text, all 64 bits) */
char *json_print_free(Arena *a, cJSON *doc);                 /* unformatted text + "\n" in a; deletes doc */

/* schedule files (FORMATS.md §3). names[i]/sources[i] name item i's kernel and its source file; either
 * array (or an entry) may be NULL: names default to "k<i>", "source" is then left out. */
struct Schedule;
char *schedule_write_json(Arena *a, const struct Schedule *s, const Graph *g, const char *const *names,
                          const char *const *sources);

/* expect files (the oracle): kernel count, items (op, ast root), and the uop rows */
typedef struct ExpectItem { const char *op; UOp *ast; } ExpectItem;
typedef struct Expect { int kernels; int nitems; ExpectItem *items; int noutputs; struct ExpectOut *outputs; } Expect;
typedef struct ExpectOut { int index; const DType *dtype; int ndim; int64_t *shape; const void *bytes; size_t nbytes; } ExpectOut;
Expect *expect_read_file(const char *path);

/* the most dims an output or .npy array may have: numpy 2's limit (tinygrad's tensors have no limit;
 * ones with more dims are scheduled and run, and only outputs that wide are refused) */
enum { TG_MAX_DIMS = 64 };

/* .npy */
bool npy_write(const char *path, const DType *dt, int ndim, const int64_t *shape, const void *data, size_t nbytes);
void *npy_read(Arena *a, const char *path, const DType **dt, int *ndim, int64_t *shape, size_t *nbytes); /* fails with TG_EINPUT */

/* base64 */
void *b64_decode(Arena *a, const char *s, size_t *n);   /* NULL on bad input */
char *b64_encode(Arena *a, const void *p, size_t n);

/* atomic file output: write to PATH.tmp.PID in the same directory, fsync, then rename */
bool write_file_atomic(const char *path, const void *data, size_t n);
char *read_file(Arena *a, const char *path, size_t *n); /* NULL on error (errno set); "-" is stdin */

#endif
