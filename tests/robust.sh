#!/bin/sh
# Robustness checks through the CLI (POSIX sh): semantic bad graphs (exit 3, message naming the
# row, from testdata/semantic/NAME.err), and output faults: a missing directory, a read-only
# directory, a directory as the file, /dev/full all exit 3 ("cannot write") and leave no
# temporary or partial file; /dev/null is written in place (never replaced by rename).
# Uses $TGC (default build/tgc); run from the repo root. Prints "N passed, N failed".
TGC=${TGC:-build/tgc}
pass=0
fail=0
tmp=$(mktemp -d "${TMPDIR:-/tmp}/tgc-robust.XXXXXX") || exit 1
trap 'chmod -R u+w "$tmp"; rm -rf "$tmp"' EXIT
ok() { pass=$((pass + 1)); }
bad() { fail=$((fail + 1)); echo "FAIL: $*"; }
G=testdata/example.graph.json

for e in testdata/semantic/*.err; do
  f=${e%.err}.graph.json
  "$TGC" schedule "$f" -o "$tmp/s.json" >"$tmp/out" 2>"$tmp/err"
  rc=$?
  want=$(cat "$e")
  if [ "$rc" -eq 3 ] && grep -qF -- "$f: $want" "$tmp/err"; then ok; else bad "$f: exit $rc: $(cat "$tmp/err")"; fi
  if [ -e "$tmp/s.json" ]; then bad "$f: output written"; rm -f "$tmp/s.json"; else ok; fi
done

# outfault DESC PATH: exit 3, "cannot write", nothing left behind in the temp dir
outfault() {
  "$TGC" schedule "$G" -o "$2" >"$tmp/out" 2>"$tmp/err"
  rc=$?
  if [ "$rc" -eq 3 ] && grep -q "cannot write" "$tmp/err"; then ok; else bad "$1: exit $rc: $(cat "$tmp/err")"; fi
  if ls -R "$tmp" | grep -q '\.tmp\.'; then bad "$1: left a temporary file"; else ok; fi
}
outfault "missing directory" "$tmp/no/such/dir/s.json"
mkdir "$tmp/dir"
outfault "a directory as the output" "$tmp/dir"
outfault "/dev/full" /dev/full
if [ "$(id -u)" -ne 0 ]; then
  mkdir "$tmp/ro"; chmod 555 "$tmp/ro"
  outfault "read-only directory" "$tmp/ro/s.json"
  if [ -e "$tmp/ro/s.json" ]; then bad "read-only directory: output exists"; else ok; fi
elif [ -d /sys ] && ! touch /sys/tgc-robust-probe 2>/dev/null; then
  outfault "read-only directory (/sys, running as root)" /sys/tgc-robust-s.json
fi
# /dev/null stays a character device
"$TGC" schedule "$G" -o /dev/null 2>"$tmp/err"
if [ $? -eq 0 ] && [ -c /dev/null ]; then ok; else bad "-o /dev/null: $(cat "$tmp/err")"; fi
# an existing output survives a failed run untouched
echo keep >"$tmp/keep.json"
"$TGC" schedule testdata/semantic/reshape_count.graph.json -o "$tmp/keep.json" 2>/dev/null
if [ "$(cat "$tmp/keep.json")" = keep ]; then ok; else bad "failed run changed an existing output"; fi

# faults while running: a compiler that fails, a compiler that is missing, a device that is
# missing: exit 4, a message that says which, and no output directory (nor a temporary one)
M=testdata/models/mlp2_fwd.graph.json
runfault() { # DESC WANT-IN-MESSAGE ENV... -- ARGS...
  desc=$1 want=$2
  shift 2
  rm -rf "$tmp/run" "$tmp/xdg"
  env XDG_CACHE_HOME="$tmp/xdg" "$@" >"$tmp/out" 2>"$tmp/err"
  rc=$?
  if [ "$rc" -eq 4 ] && grep -qF -- "$want" "$tmp/err"; then ok; else bad "$desc: exit $rc: $(cat "$tmp/err")"; fi
  if ls "$tmp" | grep -q '^run'; then bad "$desc: left an output directory"; else ok; fi
}
runfault "compiler fails" "false failed with exit status 1" TGC_CC=false "$TGC" run "$M" -d cpu -o "$tmp/run"
runfault "compiler missing" "can't run /nonexistent/cc" TGC_CC=/nonexistent/cc "$TGC" run "$M" -d cpu -o "$tmp/run"
# without TGC_CC a clang on PATH is the compiler; one that fails hands over to cc, and the run works
mkdir -p "$tmp/fakebin"
printf '#!/bin/sh\necho "fake clang: no" >&2\nexit 1\n' >"$tmp/fakebin/clang"
chmod +x "$tmp/fakebin/clang"
rm -rf "$tmp/run" "$tmp/xdg"
if env -u TGC_CC XDG_CACHE_HOME="$tmp/xdg" PATH="$tmp/fakebin:$PATH" "$TGC" run "$M" -d cpu -o "$tmp/run" >/dev/null 2>"$tmp/err" && [ -d "$tmp/run" ]; then ok
else bad "a failing clang did not hand over to cc: $(cat "$tmp/err")"; fi
rm -rf "$tmp/run" "$tmp/xdg" "$tmp/fakebin"
if ! "$TGC" run "$M" -d cuda -o "$tmp/probe" >/dev/null 2>&1; then
  runfault "no CUDA device" "no CUDA device" "$TGC" run "$M" -d cuda -o "$tmp/run"
fi
rm -rf "$tmp/probe"
# run never overwrites an input: a graph (or --input, or --expect) file where an output would go
# is refused with exit 3 before anything is written, and stays intact
mkdir "$tmp/indir"
cp "$M" "$tmp/indir/out0.npy"
"$TGC" run "$tmp/indir/out0.npy" -d cpu -o "$tmp/indir" >/dev/null 2>"$tmp/err"
rc=$?
if [ "$rc" -eq 3 ] && grep -q "would overwrite the input file" "$tmp/err" && cmp -s "$M" "$tmp/indir/out0.npy"; then ok
else bad "run over its graph file: exit $rc: $(cat "$tmp/err")"; fi
cp "$M" "$tmp/indir/g.json"
cp "${M%.graph.json}.expect.json" "$tmp/indir/out0.npy"
"$TGC" run "$tmp/indir/g.json" -d cpu -o "$tmp/indir" --expect "$tmp/indir/out0.npy" >/dev/null 2>"$tmp/err"
rc=$?
if [ "$rc" -eq 3 ] && cmp -s "${M%.graph.json}.expect.json" "$tmp/indir/out0.npy"; then ok; else bad "run over its expect file: exit $rc: $(cat "$tmp/err")"; fi
# a 2^40-element output is refused before any allocation, exit 3, naming the row it realizes
"$TGC" run testdata/semantic/huge_output.graph.json -d cpu -o "$tmp/run" >/dev/null 2>"$tmp/err"
rc=$?
if [ "$rc" -eq 3 ] && grep -q "^tgc: row 5 (CONTIGUOUS): a buffer of 1099511627776 float elements .* is more than this machine's" "$tmp/err" && [ ! -e "$tmp/run" ]; then ok; else bad "2^40-element output: exit $rc: $(cat "$tmp/err")"; fi

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
