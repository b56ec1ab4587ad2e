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

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
