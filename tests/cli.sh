#!/bin/sh
# CLI tests for tgc (POSIX sh): version and help, usage errors (exit 2), bad-input graphs in
# testdata/bad/ (exit 3 and the exact message in NAME.err, with @DIR@ for testdata/bad), dump of
# the example graph against its golden output (tinygrad's repr), stdin input, atomic -o output.
# Uses $TGC (default build/tgc) and $ORACLE (default ../shared/oracle); run from the repo root.
# Prints "N passed, N failed" and exits nonzero when anything failed.
TGC=${TGC:-build/tgc}
ORACLE=${ORACLE:-../shared/oracle}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/tgc-cli.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT

. "$(dirname "$0")/harness.sh"

# ---- version and help ----
expect 0 "--version" "$TGC" --version
if [ "$(cat "$tmp/out")" = "tgc 0.1.0" ]; then ok; else bad "--version prints '$(cat "$tmp/out")'"; fi
expect 0 "--help" "$TGC" --help
contains "$tmp/out" "Usage: tgc COMMAND" "--help"
expect 0 "-h" "$TGC" -h
for c in schedule check compile run dump; do
  expect 0 "$c --help" "$TGC" $c --help
  contains "$tmp/out" "Usage: tgc $c" "$c --help"
  expect 0 "$c -h" "$TGC" $c -h
  lines "$tmp/err" 0 "$c -h writes nothing to stderr"
done
expect 0 "schedule --help lists switches" "$TGC" schedule --help
contains "$tmp/out" "--max-kernel-buffers=N" "schedule --help"

# ---- usage errors: exit 2, one hint line on stderr ----
G=testdata/example.graph.json
usage() { expect 2 "$*" "$@"; lines "$tmp/err" 1 "$* hint"; contains "$tmp/err" "--help" "$* hint"; }
usage "$TGC"
usage "$TGC" frobnicate
usage "$TGC" --bogus
usage "$TGC" schedule
usage "$TGC" schedule --bogus "$G"
usage "$TGC" schedule "$G" extra
usage "$TGC" schedule -o
usage "$TGC" schedule --fuse-arange=2 "$G"
usage "$TGC" schedule --reduceop-split-size=x "$G"
usage "$TGC" check "$G"
usage "$TGC" check --kernels=-1 "$G"
usage "$TGC" check --kernels "$G"
usage "$TGC" compile "$G" -t vulkan -o "$tmp/c"
usage "$TGC" compile "$G" -o "$tmp/c"
usage "$TGC" compile "$G" -t c
usage "$TGC" run "$G"
usage "$TGC" run "$G" -d tpu
usage "$TGC" run "$G" -d cpu --input foo
usage "$TGC" dump --stage no-such-stage "$G"
usage "$TGC" dump --json "$G"

# ---- bad input: exit 3 and the exact message ----
for f in testdata/bad/*.graph.json; do
  name=${f%.graph.json}
  expect 3 "$f" "$TGC" dump "$f"
  want=$(sed "s|@DIR@|testdata/bad|g" "$name.err")
  got=$(cat "$tmp/err")
  if [ "$got" = "$want" ]; then ok; else bad "$f: message '$got', wanted '$want'"; fi
done
expect 3 "missing file" "$TGC" dump "$tmp/nope.json"
contains "$tmp/err" "tgc: $tmp/nope.json: cannot read: No such file or directory" "missing file"
printf '{"format":"tgc.graph","version":1,"uops":[' >"$tmp/trunc.json"
expect 3 "truncated stdin" sh -c "\"$TGC\" dump - <\"$tmp/trunc.json\""
contains "$tmp/err" "tgc: -: JSON: truncated" "truncated stdin"

# ---- dump ----
expect 0 "dump example" "$TGC" dump "$G"
if cmp -s "$tmp/out" testdata/example.dump; then ok; else bad "dump example differs from testdata/example.dump"; fi
expect 0 "dump from stdin" sh -c "\"$TGC\" dump - <\"$G\""
if cmp -s "$tmp/out" testdata/example.dump; then ok; else bad "dump - differs from testdata/example.dump"; fi
expect 0 "dump --list-stages" "$TGC" dump --list-stages
if [ -s "$tmp/out" ]; then ok; else bad "dump --list-stages printed nothing"; fi
C=$(ls "$ORACLE"/schedule/*.graph.json 2>/dev/null | head -n 1)
if [ -n "$C" ]; then
  expect 0 "dump corpus graph $C" "$TGC" dump "$C"
  contains "$tmp/out" "UOp(Ops.SINK, dtypes.void" "dump corpus graph"
else bad "no corpus graphs under $ORACLE/schedule"; fi

# ---- schedule / check (need the scheduler) ----
expect 0 "schedule -o" "$TGC" schedule "$G" -o "$tmp/s.json"
contains "$tmp/s.json" '"format":"tgc.schedule"' "schedule file"
contains "$tmp/err" "kernels (" "schedule summary"
lines "$tmp/out" 0 "schedule -o writes nothing to stdout"
if ls "$tmp" | grep -q '\.tmp\.'; then bad "schedule -o left a temporary file"; else ok; fi
expect 0 "schedule to stdout" "$TGC" schedule "$G"
contains "$tmp/out" '"format":"tgc.schedule"' "schedule stdout"
expect 3 "schedule -o into a missing directory" "$TGC" schedule "$G" -o "$tmp/no/such/dir/s.json"
expect 0 "check --kernels 1" "$TGC" check "$G" --kernels 1
expect 1 "check --kernels 5" "$TGC" check "$G" --kernels 5
contains "$tmp/err" "expected 5 kernels, got 1" "check mismatch"
expect 0 "check --max-kernels 3" "$TGC" check "$G" --max-kernels 3
expect 1 "check --json mismatch" "$TGC" check "$G" --kernels 2 --json
contains "$tmp/out" '"ok":false' "check --json"
expect 0 "check with switches" "$TGC" check "$G" --kernels 1 --fuse-arange=0 --dont-group-reduces --max-kernel-buffers=8
lacks "$tmp/err" "warning" "no warning where tinygrad schedules"
# a graph tinygrad cannot schedule (its split_reduceop splits the sum into itself without end under
# REDUCEOP_SPLIT_THRESHOLD=64): tgc schedules it, and warns
expect 0 "schedule where tinygrad splits without end" "$TGC" check testdata/split_endless.graph.json --kernels 1
contains "$tmp/err" "tgc: warning: tinygrad 0.11.0 gives no schedule for this graph: with REDUCEOP_SPLIT_THRESHOLD=64" "endless split warning"
expect 0 "check --json where tinygrad splits without end" "$TGC" check testdata/split_endless.graph.json --kernels 1 --json
contains "$tmp/out" '"warning":"tinygrad 0.11.0 gives no schedule for this graph' "check --json warning"
expect 0 "the default threshold splits nothing" "$TGC" check testdata/split_endless.graph.json --kernels 1 --reduceop-split-threshold=32768
lacks "$tmp/err" "warning" "no warning at the default threshold"

# ---- compile / run ----
# (run needs BUFFER data: $G has none, so it runs a numeric corpus graph and $G must exit 3)
expect 3 "run without BUFFER data" "$TGC" run "$G" -d cpu -o "$tmp"
contains "$tmp/err" "has no data" "run without data names the row"
M=$ORACLE/numeric/numeric.matmul.59608b.graph.json
expect 0 "compile -t c" "$TGC" compile "$G" -t c -o "$tmp/c"
for f in schedule.json model.h model.c Makefile.inc; do [ -f "$tmp/c/$f" ] && ok || bad "compile wrote no $f"; done
expect 0 "run -d cpu --expect" "$TGC" run "$M" -d cpu -o "$tmp/r" --expect "${M%.graph.json}.expect.json"
[ -f "$tmp/r/out0.npy" ] && ok || bad "run wrote no out0.npy"
# threads and timing: serial and 2-thread runs both match; --repeat prints the reruns' median
expect 0 "run --threads 1 --repeat 3" "$TGC" run "$M" -d cpu -o "$tmp/r1" --threads 1 --repeat 3 --expect "${M%.graph.json}.expect.json"
contains "$tmp/err" "schedule run 3 more times: median" "run --repeat timing"
# --profile: a line per schedule item (the kernel's name), then their sum; it implies one rerun
expect 0 "run --profile" "$TGC" run "$M" -d cpu -o "$tmp/rp" --profile --expect "${M%.graph.json}.expect.json"
contains "$tmp/err" "schedule run 1 more times: median" "run --profile reruns once"
contains "$tmp/err" "    0  r_16_16_3_4_24_4" "run --profile names the kernel (tinygrad's name after its opts)"
contains "$tmp/err" "all items" "run --profile sums the items"
expect 0 "run --threads 2" "$TGC" run "$M" -d cpu -o "$tmp/r2" --threads 2 --expect "${M%.graph.json}.expect.json"
# --fast-sums: testdata/exact/cancel_sums sums rows that cancel, so the order of the additions decides
# the values: tinygrad's by default (and with --exact, which names the default), not with vectorized
# sums (exit 1, outputs differ); the bundle's kernels get simd reductions only with --fast-sums
X=testdata/exact/cancel_sums.graph.json
expect 0 "run in tinygrad's order by default" "$TGC" run "$X" -d cpu -o "$tmp/rx" --expect "${X%.graph.json}.expect.json"
expect 0 "run --exact" "$TGC" run "$X" -d cpu -o "$tmp/rx" --fast-sums --exact --expect "${X%.graph.json}.expect.json"
expect 1 "run --fast-sums" "$TGC" run "$X" -d cpu -o "$tmp/rx2" --fast-sums --expect "${X%.graph.json}.expect.json"
contains "$tmp/err" "outputs differ" "fast sums reorder"
expect 0 "compile --threads 0" "$TGC" compile "$X" -t c -o "$tmp/cx" --threads 0
cat "$tmp"/cx/r_*.c >"$tmp/cx.c"
lacks "$tmp/cx.c" "omp simd reduction" "compile keeps sums in order by default"
expect 0 "compile --fast-sums --threads 0" "$TGC" compile "$X" -t c -o "$tmp/cx2" --threads 0 --fast-sums
cat "$tmp"/cx2/r_*.c >"$tmp/cx2.c"
contains "$tmp/cx2.c" "omp simd reduction" "compile --fast-sums vectorizes sums"
# an output the schedule leaves unrealized (tinygrad fuses the max reduce into the cumsum kernel
# that reads it): schedule/check give tinygrad's 7 kernels, run realizes it as Tensor.numpy() does
# with one more kernel; all three outputs are tinygrad's, output 2 with the cumsum's pad mask pushed
# into the max's loads as tinygrad's codegen does (testdata/unrealized/README.md)
U=testdata/unrealized/cumsum_of_max.graph.json
expect 0 "check: tinygrad's kernels with an unrealized output" "$TGC" check "$U" --kernels 7
expect 0 "run: an unrealized output realized as numpy() does" "$TGC" run "$U" -d cpu -o "$tmp/ru" --expect "${U%.graph.json}.expect.json"
contains "$tmp/err" "8 kernels run" "run adds the kernel numpy() would"
expect 0 "compile: the bundle reads the unrealized output too" "$TGC" compile "$U" -t c -o "$tmp/cu"
# --beam: the search reports its pick, the second run reads it from the cache (no report), the
# bundle gets the same opts; --beam is CPU-only and not with --opts/--noopt
export XDG_CACHE_HOME="$tmp/cache"
expect 0 "run --beam 2" "$TGC" run "$M" -d cpu -o "$tmp/rb" --beam 2 --expect "${M%.graph.json}.expect.json"
contains "$tmp/err" "beam 2: r_64_48_96: " "run --beam reports the search"
beam_opts=$(sed -n 's/^beam 2: r_64_48_96: \([^ ]*\) .*/\1/p' "$tmp/err")
expect 0 "run --beam 2 again" "$TGC" run "$M" -d cpu -o "$tmp/rb2" --beam 2 --expect "${M%.graph.json}.expect.json"
if grep -q "^beam" "$tmp/err"; then bad "a second --beam run searched again"; else ok; fi
expect 0 "compile --beam 2" "$TGC" compile "$M" -t c -o "$tmp/cb" --beam 2 --threads 0
cat "$tmp"/cb/r_*.c >"$tmp/cb.c"
contains "$tmp/cb.c" "/* opts: $beam_opts */" "compile --beam uses the cached pick"
unset XDG_CACHE_HOME
expect 2 "run --beam on opencl" "$TGC" run "$M" -d opencl --beam 2
expect 2 "run --beam with --opts" "$TGC" run "$M" -d cpu --beam 2 --opts UPCAST:0:4
expect 2 "compile --beam -t cuda" "$TGC" compile "$M" -t cuda -o "$tmp/cbx" --beam 2
expect 2 "run --threads 0" "$TGC" run "$M" -d cpu --threads 0
expect 2 "run --repeat x" "$TGC" run "$M" -d cpu --repeat x
expect 0 "compile -t c --threads 2" "$TGC" compile "$M" -t c -o "$tmp/ct" --threads 2
if grep -q "#pragma omp parallel for num_threads(2)" "$tmp"/ct/r_*.c && grep -q -- "-fopenmp" "$tmp/ct/Makefile.inc"; then ok; else bad "compile --threads 2: no OpenMP loop or flag"; fi
if grep -q "#pragma omp" "$tmp"/c/*.c; then bad "compile without --threads emitted OpenMP"; else ok; fi
# kernel opts: the heuristic by default (a comment names them), --noopt, --opts by hand, bad lists
if grep -q "/\* opts: UPCAST:1:3,UPCAST:0:4,UNROLL:0:4 \*/" "$tmp"/ct/r_*.c; then ok; else bad "compile: the matmul kernel lacks the heuristic's opts"; fi
expect 0 "compile --noopt" "$TGC" compile "$M" -t c -o "$tmp/cn" --noopt
if grep -q "opts:" "$tmp"/cn/r_*.c; then bad "compile --noopt applied opts"; else ok; fi
expect 0 "run --noopt" "$TGC" run "$M" -d cpu -o "$tmp/rn" --noopt --expect "${M%.graph.json}.expect.json"
expect 0 "run --opts" "$TGC" run "$M" -d cpu -o "$tmp/ro" --opts UPCAST:0:2,UPCAST:1:2,UNROLL:0:32 --expect "${M%.graph.json}.expect.json"
expect 0 "compile --opts" "$TGC" compile "$M" -t c -o "$tmp/co" --opts upcast:0:8
if grep -q "/\* opts: UPCAST:0:8 \*/" "$tmp"/co/r_*.c; then ok; else bad "compile --opts: the kernel lacks the given opt"; fi
expect 2 "run --opts bad syntax" "$TGC" run "$M" -d cpu --opts UPCAST:0
expect 2 "run --opts unknown op" "$TGC" run "$M" -d cpu --opts FROB:0:4
# testdata/bugs: graphs tinygrad computes and tgc refuses (man tgc, BUGS): scheduled as tinygrad
# does, then exit 3 saying why; one that runs is fixed and belongs in testdata/regress
for f in testdata/bugs/*.graph.json; do
  n=$(basename "$f" .graph.json)
  expect 0 "bugs/$n: check" "$TGC" check "$f" --kernels "$(sed -n 's/.*"kernels": *\([0-9]*\).*/\1/p' "${f%.graph.json}.expect.json" | head -n 1)"
  expect 3 "bugs/$n: run" "$TGC" run "$f" -d cpu -o "$tmp/bug_$n"
  contains "$tmp/err" "(man tgc, BUGS)" "bugs/$n says it is a known bug"
done
# a GPU opt is known but the C target has no local memory: exit 3, saying so (as tinygrad's KernelOptError)
expect 3 "run --opts LOCAL on cpu" "$TGC" run "$M" -d cpu -o "$tmp/rl" --opts LOCAL:0:4
contains "$tmp/err" "target does not support local" "LOCAL on the C target says why"
expect 3 "run --opts not divisible" "$TGC" run "$M" -d cpu -o "$tmp/rx" --opts UPCAST:0:5
contains "$tmp/err" "no longer valid shift" "an opt that does not apply says why"
# PADTO: padded loops with masked loads and stores give tinygrad's values (a reduce axis, an output
# axis then upcast, an axis merged from two, softmax's kernels); a MAX reduce is not padded
for case in "matmul_odd.27e7dc PADTO:2:32" "matmul_odd.27e7dc PADTO:1:32,UPCAST:1:4,PADTO:3:32,UNROLL:0:4" "layernorm.519ed3 PADTO:0:32" "softmax.8bdd2a PADTO:0:32"; do
  set -- $case
  P=$ORACLE/numeric/numeric.$1.graph.json
  expect 0 "run --opts $2 ($1)" "$TGC" run "$P" -d cpu -o "$tmp/rpad" --opts "$2" --expect "${P%.graph.json}.expect.json"
done
expect 3 "run --opts PADTO of a MAX" "$TGC" run "$ORACLE/numeric/numeric.softmax.8bdd2a.graph.json" -d cpu -o "$tmp/rpad" --opts PADTO:1:32
contains "$tmp/err" "cannot pad a reduce" "PADTO of a MAX reduce says why"
# values that opts change in tinygrad too (testdata/opts/*.expect.json: tools/tgc_graph.py oracle
# --opts): an axis unrolled twice adds the second UNROLL's lanes fastest, a PADTO masks the constants
# it pads; both differ from the values without opts by more than --expect's tolerance
for case in "double_reduce_split unroll_twice UNROLL:0:4,UNROLL:0:4" "sub_grouping padto PADTO:0:8"; do
  set -- $case
  P=testdata/numeric/$1.graph.json
  expect 0 "run --opts $3 ($1): tinygrad's values under them" "$TGC" run "$P" -d cpu -o "$tmp/ropt" --opts "$3" --expect "testdata/opts/$1.$2.expect.json"
  expect 1 "run --opts $3 ($1): not the values without opts" "$TGC" run "$P" -d cpu -o "$tmp/ropt" --opts "$3" --expect "${P%.graph.json}.expect.json"
done
# a kernel tinygrad schedules but its codegen cannot build (view_right reshapes a non-contiguous
# view to a symbolic shape of an unbound variable): tgc schedules it and refuses to compile it
R=testdata/regress/randx_12195.graph.json
expect 0 "schedule: a kernel tinygrad's codegen cannot build" "$TGC" check "$R" --kernels 8
expect 3 "compile: a kernel tinygrad's codegen cannot build" "$TGC" compile "$R" -t c -o "$tmp/creg"
contains "$tmp/err" "can't unbind a variable of a symbolic reshape" "compile says why, as tinygrad's AssertionError does"
contains "$tmp/err" "schedule item 0: " "compile names the schedule item whose kernel it cannot build"
# an output that is a broadcast CONST (no kernel, no buffer) is still written, with its shape
K=$(ls "$ORACLE"/schedule/test_ops.TestOps_test_add.3.*.graph.json | head -1)
expect 0 "run a constant output" "$TGC" run "$K" -d cpu -o "$tmp/k"
if python3 -c "import numpy as np, sys; a = np.load(sys.argv[1]); sys.exit(not (a.shape == (45, 68) and a.dtype == np.float32 and (a == 1).all()))" "$tmp/k/out1.npy"; then ok; else bad "constant output out1.npy is not a 45x68 float32 of ones"; fi

# ---- the manual renders without warnings ----
if command -v groff >/dev/null 2>&1; then
  if groff -ww -man -Tutf8 "$(dirname "$0")/../man/tgc.1" >/dev/null 2>"$tmp/groff" && [ ! -s "$tmp/groff" ]; then ok; else bad "groff -ww man/tgc.1: $(head -c 300 "$tmp/groff")"; fi
fi

# ---- CI tools: explain, diff, the check gate, reproducible output (tests/test_ci.sh) ----
if TGC=$TGC ORACLE=$ORACLE sh "$(dirname "$0")/test_ci.sh" >"$tmp/ci" 2>&1; then ok; else bad "tests/test_ci.sh: $(grep FAIL "$tmp/ci" | head -c 600)"; fi

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
