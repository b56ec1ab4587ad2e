#!/bin/sh
# leak.sh: valgrind over the schedule path (read, schedule, write the schedule file) of $TGC on
# graphs that schedule (plain, multi-device, symbolic, a model) and on inputs that are refused
# (JSON syntax, a semantic error, a truncated file): no definite or indirect leak and no invalid
# access in any of them. Prints "N passed, N failed"; skips (exit 0) when valgrind is missing.
TGC=${TGC:-build/tgc}
ORACLE=${ORACLE:-../shared/oracle}
if ! command -v valgrind >/dev/null 2>&1; then echo "leak.sh: valgrind not installed, skipped"; exit 0; fi
pass=0
fail=0
tmp=$(mktemp -d "${TMPDIR:-/tmp}/tgc-leak.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT INT TERM
sym=$(ls "$ORACLE"/schedule/*.graph.json 2>/dev/null | grep -m1 symbolic)
for g in testdata/example.graph.json testdata/models/mlp2_fwd.graph.json testdata/models/sharded_matmul.graph.json \
         testdata/models/cnn_train.graph.json $sym \
         testdata/bad/syntax.graph.json testdata/bad/truncated.graph.json testdata/semantic/reshape_count.graph.json \
         testdata/semantic/arg_cycle.graph.json; do
  [ -f "$g" ] || continue
  valgrind -q --leak-check=full --show-leak-kinds=definite,indirect --errors-for-leak-kinds=definite,indirect \
    --error-exitcode=99 "$TGC" schedule "$g" -o "$tmp/s.json" >"$tmp/out" 2>"$tmp/err"
  rc=$?
  if [ "$rc" -eq 99 ] || grep -q "Invalid \|uninitialised\|definitely lost\|indirectly lost" "$tmp/err"; then
    fail=$((fail + 1))
    echo "FAIL: $g:"
    head -40 "$tmp/err"
  else
    pass=$((pass + 1))
  fi
done
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
