/* diff.c: `tgc diff`, kernel by kernel. Each schedule item gets a structural hash of its AST:
 * every uop row hashes its op, dtype, arg (as compact JSON) and its sources' hashes, so row ids
 * do not matter. The two item lists are aligned by a longest common subsequence of
 * (item op, AST hash); in each gap between aligned items, removed and added items of the same op
 * are paired in order as "changed" and reported with the AST ops they lose and gain. */
#include "explain.h"
#include <cjson/cJSON.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

typedef struct DItem {
  const char *op, *meta; uint64_t h;
  int opcount[OP_COUNT];
} DItem;
typedef struct DSched { int n; DItem *items; } DSched;

bool diff_is_schedule(const char *text) {
  cJSON *d = cJSON_Parse(text);
  const cJSON *f = d ? cJSON_GetObjectItemCaseSensitive(d, "format") : NULL;
  bool r = cJSON_IsString(f) && strcmp(f->valuestring, "tgc.schedule") == 0;
  cJSON_Delete(d);
  return r;
}

static int op_index(const char *name) {
  for (int i = 0; i < OP_COUNT; i++) if (op_names[i] && strcmp(op_names[i], name) == 0) return i;
  return -1;
}

/* parse one schedule file into per-item hashes; fails with TG_EINPUT naming the file */
static DSched parse_sched(const char *name, const char *text) {
  cJSON *d = cJSON_Parse(text);
  if (!d) tg_fail(TG_EINPUT, "%s: not JSON", name);
  const cJSON *items = cJSON_GetObjectItemCaseSensitive(d, "items"), *uops = cJSON_GetObjectItemCaseSensitive(d, "uops");
  if (!cJSON_IsArray(items) || !cJSON_IsArray(uops)) { cJSON_Delete(d); tg_fail(TG_EINPUT, "%s: no items/uops arrays", name); }
  int nu = cJSON_GetArraySize(uops), maxid = -1;
  const cJSON *row;
  cJSON_ArrayForEach(row, uops) {
    const cJSON *id = cJSON_GetObjectItemCaseSensitive(row, "id");
    if (!cJSON_IsNumber(id) || id->valueint < 0 || id->valueint > 100000000) { cJSON_Delete(d); tg_fail(TG_EINPUT, "%s: uops: bad id", name); }
    if (id->valueint > maxid) maxid = id->valueint;
  }
  uint64_t *h = arena_alloc(ga(), sizeof *h * (size_t)(maxid + 2));
  const cJSON **rows = arena_alloc(ga(), sizeof *rows * (size_t)(maxid + 2));
  bool *have = arena_alloc(ga(), (size_t)(maxid + 2));
  (void)nu;
  cJSON_ArrayForEach(row, uops) {
    int id = cJSON_GetObjectItemCaseSensitive(row, "id")->valueint;
    const cJSON *op = cJSON_GetObjectItemCaseSensitive(row, "op"), *dt = cJSON_GetObjectItemCaseSensitive(row, "dtype");
    const cJSON *src = cJSON_GetObjectItemCaseSensitive(row, "src"), *arg = cJSON_GetObjectItemCaseSensitive(row, "arg");
    if (!cJSON_IsString(op)) { cJSON_Delete(d); tg_fail(TG_EINPUT, "%s: row %d: no op", name, id); }
    uint64_t x = hash_bytes(op->valuestring, strlen(op->valuestring), 0x9e3779b97f4a7c15ull);
    if (cJSON_IsString(dt)) x = hash_bytes(dt->valuestring, strlen(dt->valuestring), x);
    if (arg) {
      char *at = cJSON_PrintUnformatted(arg);
      x = hash_bytes(at, strlen(at), x ^ 0xa5);
      free(at);
    }
    const cJSON *sv;
    cJSON_ArrayForEach(sv, src) {
      int sid = cJSON_IsNumber(sv) ? sv->valueint : -1;
      if (sid < 0 || sid > maxid || !have[sid]) { cJSON_Delete(d); tg_fail(TG_EINPUT, "%s: row %d: src %d is not an earlier row", name, id, sid); }
      x = hash_bytes(&h[sid], sizeof h[sid], x);
    }
    h[id] = x;
    rows[id] = row;
    have[id] = true;
  }
  DSched s = {cJSON_GetArraySize(items), NULL};
  s.items = arena_alloc(ga(), sizeof *s.items * (size_t)(s.n + 1));
  int i = 0;
  const cJSON *it;
  cJSON_ArrayForEach(it, items) {
    DItem *di = &s.items[i++];
    const cJSON *op = cJSON_GetObjectItemCaseSensitive(it, "op"), *ast = cJSON_GetObjectItemCaseSensitive(it, "ast");
    const cJSON *meta = cJSON_GetObjectItemCaseSensitive(it, "metadata");
    if (!cJSON_IsString(op) || !cJSON_IsNumber(ast) || ast->valueint < 0 || ast->valueint > maxid || !have[ast->valueint]) {
      cJSON_Delete(d);
      tg_fail(TG_EINPUT, "%s: items[%d]: bad op or ast", name, i - 1);
    }
    di->op = arena_printf(ga(), "%s", op->valuestring);
    di->h = hash_bytes(di->op, strlen(di->op), h[ast->valueint]);
    di->meta = "";
    const cJSON *m;
    cJSON_ArrayForEach(m, meta) {
      const cJSON *nm = cJSON_GetObjectItemCaseSensitive(m, "name");
      if (cJSON_IsString(nm)) di->meta = arena_printf(ga(), "%s%s%s", di->meta, *di->meta ? "," : "", nm->valuestring);
    }
    /* the AST's op counts: rows reachable from the root (explicit stack) */
    bool *seen = arena_alloc(ga(), (size_t)(maxid + 2));
    PtrVec st;
    vec_init(&st, ga());
    vec_push(&st, (void *)(intptr_t)(ast->valueint + 1));
    while (st.n) {
      int id = (int)(intptr_t)vec_pop(&st) - 1;
      if (seen[id]) continue;
      seen[id] = true;
      int oi = op_index(cJSON_GetObjectItemCaseSensitive(rows[id], "op")->valuestring);
      if (oi >= 0) di->opcount[oi]++;
      const cJSON *sv;
      cJSON_ArrayForEach(sv, cJSON_GetObjectItemCaseSensitive(rows[id], "src")) vec_push(&st, (void *)(intptr_t)(sv->valueint + 1));
    }
  }
  cJSON_Delete(d);
  return s;
}


/* "ADD,MUL x2" for counts c (or the difference a - b when b is set, positive side only) */
static char *op_list(const int *a, const int *b) {
  char *s = "";
  for (int i = 0; i < OP_COUNT; i++) {
    int c = a[i] - (b ? b[i] : 0);
    if (c <= 0) continue;
    s = c > 1 ? arena_printf(ga(), "%s%s%s x%d", s, *s ? "," : "", op_names[i], c) : arena_printf(ga(), "%s%s%s", s, *s ? "," : "", op_names[i]);
  }
  return s;
}
static cJSON *op_array(const int *a, const int *b) {
  cJSON *arr = cJSON_CreateArray();
  for (int i = 0; i < OP_COUNT; i++) {
    int c = a[i] - (b ? b[i] : 0);
    for (int k = 0; k < c; k++) cJSON_AddItemToArray(arr, cJSON_CreateString(op_names[i]));
  }
  return arr;
}

int diff_schedules(Arena *a, const char *name_a, const char *text_a, const char *name_b, const char *text_b, bool json, char **out) {
  DSched A = parse_sched(name_a, text_a), B = parse_sched(name_b, text_b);
  /* LCS table over (op, hash); sizes are kernel counts */
  int n = A.n, m = B.n;
  int *L = arena_alloc(ga(), sizeof *L * (size_t)(n + 1) * (size_t)(m + 1));
#define LL(i, j) L[(size_t)(i) * (size_t)(m + 1) + (size_t)(j)]
  for (int i = n - 1; i >= 0; i--)
    for (int j = m - 1; j >= 0; j--)
      LL(i, j) = A.items[i].h == B.items[j].h ? LL(i + 1, j + 1) + 1 : (LL(i + 1, j) >= LL(i, j + 1) ? LL(i + 1, j) : LL(i, j + 1));
  /* walk: collect gaps, pair same-op items inside a gap as changed */
  int same = 0, nch = 0, nrm = 0, nad = 0;
  SB b = {a, NULL, 0, 0};
  cJSON *jch = cJSON_CreateArray(), *jrm = cJSON_CreateArray(), *jad = cJSON_CreateArray();
  int i = 0, j = 0;
  while (i < n || j < m) {
    if (i < n && j < m && A.items[i].h == B.items[j].h) { same++; i++; j++; continue; }
    /* the gap: follow the LCS traceback up to the next aligned pair */
    int i1 = i, j1 = j;
    while (i1 < n || j1 < m) {
      if (i1 < n && j1 < m && A.items[i1].h == B.items[j1].h) break;
      if (j1 >= m || (i1 < n && LL(i1 + 1, j1) >= LL(i1, j1 + 1))) i1++;
      else j1++;
    }
    bool *usedb = arena_alloc(ga(), (size_t)(j1 - j + 1));
    for (int x = i; x < i1; x++) {
      int y = -1;
      for (int z = j; z < j1; z++) if (!usedb[z - j] && strcmp(A.items[x].op, B.items[z].op) == 0) { y = z; break; }
      DItem *da = &A.items[x];
      if (y >= 0) {
        usedb[y - j] = true;
        DItem *db = &B.items[y];
        nch++;
        sb_str(&b, arena_printf(ga(), "~ %d -> %d %s (%s -> %s): ops -[%s] +[%s]\n", x, y, da->op, da->meta, db->meta,
                                op_list(da->opcount, db->opcount), op_list(db->opcount, da->opcount)));
        cJSON *o = cJSON_CreateObject();
        cJSON_AddItemToObject(o, "a", json_int(x));
        cJSON_AddItemToObject(o, "b", json_int(y));
        cJSON_AddStringToObject(o, "op", da->op);
        cJSON_AddItemToObject(o, "ops_removed", op_array(da->opcount, db->opcount));
        cJSON_AddItemToObject(o, "ops_added", op_array(db->opcount, da->opcount));
        cJSON_AddItemToArray(jch, o);
      } else {
        nrm++;
        sb_str(&b, arena_printf(ga(), "- %d %s (%s): ops [%s]\n", x, da->op, da->meta, op_list(da->opcount, NULL)));
        cJSON *o = cJSON_CreateObject();
        cJSON_AddItemToObject(o, "a", json_int(x));
        cJSON_AddStringToObject(o, "op", da->op);
        cJSON_AddItemToObject(o, "ops", op_array(da->opcount, NULL));
        cJSON_AddItemToArray(jrm, o);
      }
    }
    for (int z = j; z < j1; z++) {
      if (usedb[z - j]) continue;
      DItem *db = &B.items[z];
      nad++;
      sb_str(&b, arena_printf(ga(), "+ %d %s (%s): ops [%s]\n", z, db->op, db->meta, op_list(db->opcount, NULL)));
      cJSON *o = cJSON_CreateObject();
      cJSON_AddItemToObject(o, "b", json_int(z));
      cJSON_AddStringToObject(o, "op", db->op);
      cJSON_AddItemToObject(o, "ops", op_array(db->opcount, NULL));
      cJSON_AddItemToArray(jad, o);
    }
    i = i1;
    j = j1;
  }
#undef LL
  bool equal = nch == 0 && nrm == 0 && nad == 0;
  if (json) {
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "a", name_a);
    cJSON_AddStringToObject(o, "b", name_b);
    cJSON_AddBoolToObject(o, "equal", equal);
    cJSON_AddItemToObject(o, "items_a", json_int(n));
    cJSON_AddItemToObject(o, "items_b", json_int(m));
    cJSON_AddItemToObject(o, "same", json_int(same));
    cJSON_AddItemToObject(o, "changed", jch);
    cJSON_AddItemToObject(o, "removed", jrm);
    cJSON_AddItemToObject(o, "added", jad);
    *out = json_print_free(a, o);
  } else {
    cJSON_Delete(jch);
    cJSON_Delete(jrm);
    cJSON_Delete(jad);
    sb_str(&b, arena_printf(ga(), "%s: %d items, %s: %d items: %d same, %d changed, %d removed, %d added\n", name_a, n, name_b,
                            m, same, nch, nrm, nad));
    *out = b.s;
  }
  return equal ? 0 : 1;
}
