#!/bin/sh
# CI-tool tests for tgc (POSIX sh): `explain` (kernel boundaries and their reasons), `diff`
# (kernel-level comparison of graphs and schedule files), the `check` gate, and reproducible
# output (schedule and compile twice, byte for byte). Expectations come from tinygrad 0.11.0:
# kernel counts are the oracle's (INDEX.tsv), e.g. for conv2d_fused_half.3
#   len([s for s in sched if s.ast.op is Ops.SINK]) == 7 with SPLIT_REDUCEOP=1 (6 with 0).
# Uses $TGC (default build/tgc) and $ORACLE (default ../shared/oracle); run from the repo root.
# Prints "N passed, N failed" and exits nonzero when anything failed.
TGC=${TGC:-build/tgc}
ORACLE=${ORACLE:-../shared/oracle}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/tgc-ci.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT

. "$(dirname "$0")/harness.sh"

G=testdata/example.graph.json
S=$ORACLE/schedule
CONV=$S/test_schedule.TestSchedule_test_conv2d_fused_half.3.c735e9.graph.json
IDX=$S/test_arange.TestIndexing_test_index.1.09bcfb.graph.json
SETI=$S/test_arange.TestIndexing_test_arange_2_reduce.2.846899.graph.json

# ---- help and usage ----
for c in explain diff; do
  expect 0 "$c --help" "$TGC" $c --help
  contains "$tmp/out" "Usage: tgc $c" "$c --help"
done
expect 2 "explain without GRAPH" "$TGC" explain
expect 2 "diff with one operand" "$TGC" diff "$G"
expect 2 "diff with three operands" "$TGC" diff "$G" "$G" "$G"
expect 3 "diff of a missing file" "$TGC" diff "$G" "$tmp/nope.json"

# ---- explain ----
# example: (a+b).reshape(10,10).permute.sum -> one kernel, realized because the SINK uses the reduce
expect 0 "explain example" "$TGC" explain "$G"
contains "$tmp/out" "1 kernels (0 copies, 0 views)" "explain header"
contains "$tmp/out" "why   sink: a SINK uses it" "explain sink reason"
contains "$tmp/out" "[row 8 REDUCE_AXIS]" "explain names the realized row"
contains "$tmp/out" "outputs: sink[0]" "explain outputs"
contains "$tmp/out" "ops: 5 ADD __add__, 6 RESHAPE reshape, 7 PERMUTE, 8 REDUCE_AXIS, 9 RESHAPE sum" "explain ops"
expect 0 "explain --json" "$TGC" explain --json "$G"
contains "$tmp/out" '"why":"sink","row":8,"op":"REDUCE_AXIS"' "explain --json reason"
contains "$tmp/out" '{"row":5,"op":"ADD","name":"__add__"}' "explain --json ops"
# a.assign(const).contiguous: a CONTIGUOUS kernel, then the ASSIGN kernel
expect 0 "explain assign" "$TGC" explain "$SETI"
contains "$tmp/out" "2 kernels" "explain assign count (tinygrad: 2)"
contains "$tmp/out" "why   contiguous: it is a CONTIGUOUS (do_realize) [row 7 CONTIGUOUS]" "explain contiguous"
contains "$tmp/out" "why   assign: it is an ASSIGN (do_realize) [row 8 ASSIGN]" "explain assign"
# conv2d in half: split_reduceop's first phase, a second reduce, expand
expect 0 "explain conv2d" "$TGC" explain "$CONV"
contains "$tmp/out" "7 kernels" "explain conv2d count (tinygrad: 7)"
contains "$tmp/out" "why   split_reduceop:" "explain split_reduceop"
contains "$tmp/out" "why   second_reduce:" "explain second reduce"
contains "$tmp/out" "why   expand:" "explain expand"
expect 0 "explain conv2d --split-reduceop=0" "$TGC" explain --split-reduceop=0 "$CONV"
contains "$tmp/out" "6 kernels" "explain conv2d count without split (tinygrad: 6)"
lacks "$tmp/out" "split_reduceop" "no split_reduceop when it is off"
# indexing: unsafe pad and a non-contiguous child; limit_bufs only with a buffer limit
expect 0 "explain index" "$TGC" explain "$IDX"
contains "$tmp/out" "5 kernels" "explain index count (tinygrad: 5)"
contains "$tmp/out" "why   unsafe_pad:" "explain unsafe pad"
contains "$tmp/out" "why   noncontiguous:" "explain noncontiguous"
lacks "$tmp/out" "limit_bufs" "no limit_bufs without a limit"
expect 0 "explain index --max-kernel-buffers=3" "$TGC" explain --max-kernel-buffers=3 "$IDX"
contains "$tmp/out" "why   limit_bufs:" "explain limit_bufs"
# every corpus graph in a sample explains with the oracle's kernel count and no unknown reason
n=0
for f in $(ls "$S"/*.graph.json | awk 'NR % 97 == 1'); do
  want=$(grep -o '"kernels": *[0-9]*' "${f%.graph.json}.expect.json" | head -n 1 | tr -dc 0-9)
  "$TGC" explain "$f" >"$tmp/ex" 2>"$tmp/err" || { bad "explain $f failed: $(head -c 200 "$tmp/err")"; continue; }
  if head -n 1 "$tmp/ex" | grep -q ": $want kernels"; then ok; else bad "explain $f: $(head -n 1 "$tmp/ex"), wanted $want kernels"; fi
  if grep -q "why   unknown" "$tmp/ex"; then bad "explain $f has an unknown reason"; else ok; fi
  n=$((n + 1))
done
[ "$n" -gt 10 ] && ok || bad "only $n corpus graphs explained"

# ---- diff ----
expect 0 "diff a graph with itself" "$TGC" diff "$CONV" "$CONV"
contains "$tmp/out" "7 same, 0 changed, 0 removed, 0 added" "diff self"
expect 1 "diff two different graphs" "$TGC" diff "$G" "$CONV"
contains "$tmp/out" "1 changed, 0 removed, 6 added" "diff different graphs"
expect 0 "diff with switches on both" "$TGC" diff --split-reduceop=0 "$CONV" "$CONV"
contains "$tmp/out" "6 items" "diff applies switches"
"$TGC" schedule "$CONV" -o "$tmp/a.json" 2>/dev/null
"$TGC" schedule --dont-group-reduces "$CONV" -o "$tmp/b.json" 2>/dev/null
expect 1 "diff schedules with/without --dont-group-reduces" "$TGC" diff "$tmp/a.json" "$tmp/b.json"
contains "$tmp/out" "7 items, $tmp/b.json: 5 items: 3 same, 2 changed, 2 removed, 0 added" "diff dont-group-reduces"
contains "$tmp/out" "- 2 SINK" "diff lists a removed kernel"
expect 0 "diff a schedule file with its graph" "$TGC" diff "$tmp/a.json" "$CONV"
expect 1 "diff --json" "$TGC" diff --json "$tmp/a.json" "$tmp/b.json"
contains "$tmp/out" '"equal":false' "diff --json"
contains "$tmp/out" '"same":3' "diff --json same"

# ---- check gate ----
expect 0 "check --max-kernels 7" "$TGC" check "$CONV" --max-kernels 7
expect 1 "check --max-kernels 6" "$TGC" check "$CONV" --max-kernels 6
contains "$tmp/err" "expected at most 6 kernels, got 7" "check --max-kernels message"
expect 0 "check --kernels 7 --json" "$TGC" check "$CONV" --kernels 7 --json
contains "$tmp/out" '"ok":true' "check --json ok"

# ---- reproducible output ----
"$TGC" schedule "$CONV" -o "$tmp/a2.json" 2>/dev/null
if cmp -s "$tmp/a.json" "$tmp/a2.json"; then ok; else bad "schedule is not byte-identical across runs"; fi
"$TGC" explain --json "$CONV" >"$tmp/e1" 2>/dev/null
"$TGC" explain --json "$CONV" >"$tmp/e2" 2>/dev/null
if cmp -s "$tmp/e1" "$tmp/e2"; then ok; else bad "explain is not byte-identical across runs"; fi
M=$ORACLE/numeric/numeric.matmul.59608b.graph.json
for d in c1 c2; do "$TGC" compile "$M" -t c -o "$tmp/$d" 2>/dev/null || bad "compile $d failed"; done
if diff -r "$tmp/c1" "$tmp/c2" >/dev/null; then ok; else bad "compile output differs across runs"; fi

# compile: kernel files carry a content hash, DIR/MANIFEST lists every file with its sha256; the
# name is tinygrad's after its opts (the 64x96 @ 96x48 matmul r_64_48_96 under UPCAST:1:3,
# UPCAST:0:4,UNROLL:0:4 on the CPU, with LOCAL:0:8,LOCAL:1:16 after them on OpenCL)
ls "$tmp/c1" | grep -q '^r_16_16_3_4_24_4\.[0-9a-f]\{6\}\.c$' && ok || bad "kernel file name has no content hash: $(ls "$tmp/c1" | tr '\n' ' ')"
contains "$tmp/c1/schedule.json" '"source":"r_16_16_3_4_24_4.' "schedule.json names the hashed source"
contains "$tmp/c1/Makefile.inc" '$(TGC_MODEL_DIR)r_16_16_3_4_24_4.' "Makefile.inc names the hashed source"
contains "$tmp/c1/MANIFEST" "  model.c" "MANIFEST lists model.c"
if command -v sha256sum >/dev/null 2>&1; then
  if (cd "$tmp/c1" && sha256sum -c --quiet MANIFEST >/dev/null 2>&1); then ok; else bad "sha256sum -c MANIFEST failed"; fi
  [ "$(wc -l <"$tmp/c1/MANIFEST" | tr -d ' ')" -eq "$(ls "$tmp/c1" | grep -vc '^MANIFEST$')" ] && ok || bad "MANIFEST does not list every file"
fi

# the GPU targets: byte-identical across runs, hashed kernel names, a MANIFEST that checks
for tg in opencl cuda; do
  for d in 1 2; do "$TGC" compile "$M" -t $tg -o "$tmp/$tg$d" 2>/dev/null || bad "compile -t $tg failed"; done
  if diff -r "$tmp/${tg}1" "$tmp/${tg}2" >/dev/null; then ok; else bad "compile -t $tg output differs across runs"; fi
  ext=$([ $tg = opencl ] && echo cl || echo cu)
  ls "$tmp/${tg}1" | grep -q "^r_2_8_16_3_4_24_4\.[0-9a-f]\{6\}\.$ext\$" && ok || bad "-t $tg kernel file name has no content hash: $(ls "$tmp/${tg}1" | tr '\n' ' ')"
  contains "$tmp/${tg}1/MANIFEST" "  host.c" "-t $tg MANIFEST lists host.c"
  if command -v sha256sum >/dev/null 2>&1; then
    if (cd "$tmp/${tg}1" && sha256sum -c --quiet MANIFEST >/dev/null 2>&1); then ok; else bad "-t $tg: sha256sum -c MANIFEST failed"; fi
  fi
done

# ---- -MD and the example project (testdata/make) ----
expect 0 "compile -MD" "$TGC" compile "$G" -t c -o "$tmp/md" -MD
if [ "$(head -n 1 "$tmp/md/deps.d")" = "$tmp/md/model.o $tmp/md/schedule.json: $G" ]; then ok; else bad "deps.d: $(head -n 1 "$tmp/md/deps.d")"; fi
contains "$tmp/md/deps.d" "$G:" "deps.d has a rule per prerequisite"
expect 2 "compile -MD from stdin" sh -c "\"$TGC\" compile - -t c -o \"$tmp/md2\" -MD <\"$G\""
case $TGC in /*) ATGC=$TGC ;; *) ATGC=$(pwd)/$TGC ;; esac
if command -v make >/dev/null 2>&1 && command -v cc >/dev/null 2>&1; then
  # the outer make (make -s test) must not silence or share its jobserver with the example build
  unset MAKEFLAGS MFLAGS MAKELEVEL
  mkdir "$tmp/mk" && cp testdata/make/Makefile testdata/make/model.graph.json testdata/make/w.npy testdata/make/other.c "$tmp/mk/"
  expect 0 "make the example from scratch" make -C "$tmp/mk" TGC="$ATGC"
  [ -f "$tmp/mk/model.tgc/model.o" ] && [ -f "$tmp/mk/other.o" ] && ok || bad "example build made no model.o/other.o"
  contains "$tmp/mk/model.tgc/deps.d" "model.tgc/model.o model.tgc/schedule.json: model.graph.json w.npy" "example deps.d"
  expect 0 "example is up to date" make -q -C "$tmp/mk" TGC="$ATGC"
  cp -p "$tmp/mk/other.o" "$tmp/other.before"
  sleep 1
  touch "$tmp/mk/model.graph.json"
  expect 1 "touching the graph makes the example out of date" make -q -C "$tmp/mk" TGC="$ATGC"
  expect 0 "rebuild after touching the graph" make -C "$tmp/mk" TGC="$ATGC"
  contains "$tmp/out" "compile model.graph.json" "the bundle is rebuilt"
  lacks "$tmp/out" "other.c" "nothing else is rebuilt"
  [ "$tmp/mk/other.o" -nt "$tmp/other.before" ] && bad "other.o was rebuilt" || ok
  sleep 1
  touch "$tmp/mk/w.npy"
  expect 0 "rebuild after touching the data file" make -C "$tmp/mk" TGC="$ATGC"
  contains "$tmp/out" "compile model.graph.json" "the bundle depends on its .npy data"
  expect 0 "example is up to date again" make -q -C "$tmp/mk" TGC="$ATGC"
fi

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
