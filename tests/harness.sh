# harness.sh: the small assertion helpers the shell test scripts share (POSIX sh, sourced).
# The sourcing script sets $tmp (a scratch directory) and reports "$pass passed, $fail failed".
pass=0
fail=0
ok() { pass=$((pass + 1)); }
bad() { fail=$((fail + 1)); echo "FAIL: $*"; }
# expect RC DESC CMD...: run CMD (stdout -> $tmp/out, stderr -> $tmp/err) and check its exit status
expect() {
  want=$1; desc=$2; shift 2
  "$@" >"$tmp/out" 2>"$tmp/err"
  rc=$?
  if [ "$rc" -eq "$want" ]; then ok; else bad "$desc: exit $rc, wanted $want: $(head -c 300 "$tmp/err")"; fi
}
# contains FILE TEXT DESC / lacks FILE TEXT DESC
contains() { if grep -qF -- "$2" "$1"; then ok; else bad "$3: '$2' not in $(head -c 300 "$1")"; fi; }
lacks() { if grep -qF -- "$2" "$1"; then bad "$3: '$2' in $(head -c 300 "$1")"; else ok; fi; }
# lines FILE N DESC
lines() {
  n=$(wc -l <"$1" | tr -d ' ')
  if [ "$n" -eq "$2" ]; then ok; else bad "$3: $n lines, wanted $2"; fi
}
