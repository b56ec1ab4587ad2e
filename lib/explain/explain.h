/* explain: why the scheduler made the kernels it made (`tgc explain`), and kernel-level diffs of
 * two schedules (`tgc diff`). Both build on the schedule file (FORMATS.md §3) and on the decision
 * recording hook of lib/schedule (sched_why in schedule.h), which never changes a decision. */
#ifndef TGC_EXPLAIN_H
#define TGC_EXPLAIN_H
#include "../io/graph.h"
#include "../schedule/schedule.h"

extern const char *const explain_why_names[WHY_N];   /* SchedWhyCode -> short reason name */
extern const char *const explain_why_text[WHY_N];    /* SchedWhyCode -> one-line description */

/* schedule g with recording on; returns the report, text (default) or one JSON document */
char *explain_graph(Arena *a, Graph *g, bool json);

/* true when text is a tgc.schedule JSON document (else it is taken for a graph) */
bool diff_is_schedule(const char *text);
/* compare two schedule files' items by AST structure (ids aside), in order; writes the report
 * (text, or JSON with json) to *out and returns 0 when equal, 1 when not; TG_EINPUT on bad input */
int diff_schedules(Arena *a, const char *name_a, const char *text_a, const char *name_b, const char *text_b,
                   bool json, char **out);

#endif
