/* clang_check.h: parsing emitted source with libclang for the suites that link it (test_driver,
 * test_gpu_src). Header-only; include after <criterion/criterion.h>.
 *   clang_check  parse path (contents, or the file when NULL) with args and count the diagnostics
 *                of severity warning or above, the first formatted into why */
#ifndef TGC_TESTS_CLANG_CHECK_H
#define TGC_TESTS_CLANG_CHECK_H
#include <clang-c/Index.h>
#include <stdio.h>
#include <string.h>

static inline int clang_check(CXIndex idx, const char *path, const char *contents, const char *const *args, int nargs, char *why, size_t wn) {
  struct CXUnsavedFile uf = {path, contents, contents ? strlen(contents) : 0};
  CXTranslationUnit tu = clang_parseTranslationUnit(idx, path, args, nargs, contents ? &uf : NULL, contents ? 1 : 0, CXTranslationUnit_None);
  if (!tu) { snprintf(why, wn, "%s: libclang could not parse it", path); return 1; }
  int bad = 0;
  for (unsigned i = 0; i < clang_getNumDiagnostics(tu); i++) {
    CXDiagnostic d = clang_getDiagnostic(tu, i);
    if (clang_getDiagnosticSeverity(d) >= CXDiagnostic_Warning) {
      if (!bad) {
        CXString s = clang_formatDiagnostic(d, clang_defaultDiagnosticDisplayOptions());
        snprintf(why, wn, "%s", clang_getCString(s));
        clang_disposeString(s);
      }
      bad++;
    }
    clang_disposeDiagnostic(d);
  }
  clang_disposeTranslationUnit(tu);
  return bad;
}
#endif
