#!/bin/sh
# scale.sh: tgc on generated million-uop graphs (tests/gen_scale.py), for `make scale`.
# Each case runs `tgc schedule` under /usr/bin/time and checks its exit status and kernel count;
# the table gives wall time, peak RSS and RSS over the file's size. Cases:
#   chain_1m     a 1,000,000-deep chain: tinygrad's own rewrite limit refuses it ("infinite loop in
#                graph_rewrite (stack too big)", exit 3), and tgc must too: no stack overflow
#   chains_990k  11 chains 90,000 deep: 11 kernels
#   fanout_1m    one buffer, 524,288 SHRINK children, ADD trees: 513 kernels (1,049,091 uops)
#   fanout_100mb the same with 786,432 children, a 110 MB file: 769 kernels; also timed reading
#                alone ($BENCH FILE 1 read)
# Bounds (a failure is a regression): peak RSS under $MAX_X times the file size.
set -u
BUILD=${BUILD:-build}
TGC=${TGC:-$BUILD/tgc}
BENCH=${BENCH:-$BUILD/bench}
MAX_X=${MAX_X:-40}
for b in "$TGC" "$BENCH"; do
  [ -x "$b" ] || { echo "scale.sh: $b not built" >&2; exit 2; }
done
[ -x /usr/bin/time ] || { echo "scale.sh: needs /usr/bin/time (Debian package time)" >&2; exit 2; }
tmp=$(mktemp -d "${TMPDIR:-/tmp}/tgc-scale.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT INT TERM
fail=0
bad() { fail=$((fail + 1)); echo "FAIL: $*"; }

printf '%-13s %9s %8s %6s %8s %9s %6s %8s  %s\n' case uops file_MB rc wall_s rss_MB xfile kernels check
# run NAME KIND N WANT_RC WANT (kernel count, or a message for a nonzero exit)
run() {
  name=$1 kind=$2 n=$3 want_rc=$4 want=$5
  g=$tmp/$name.graph.json
  python3 tests/gen_scale.py "$kind" "$n" >"$g" || { bad "$name: generator failed"; return; }
  size=$(wc -c <"$g")
  /usr/bin/time -f '%e %M' -o "$tmp/time" "$TGC" schedule "$g" -o "$tmp/s.json" >"$tmp/out" 2>"$tmp/err"
  rc=$?
  set -- $(tail -n 1 "$tmp/time")
  wall=$1 rss=$2
  uops=$(sed -n 's/.* from \([0-9]*\) uops.*/\1/p' "$tmp/err")
  k=$(sed -n 's/^\([0-9]*\) kernels.*/\1/p' "$tmp/err")
  check=ok
  if [ "$rc" != "$want_rc" ]; then check="exit $rc, wanted $want_rc"
  elif [ "$rc" = 0 ] && [ "$k" != "$want" ]; then check="$k kernels, wanted $want"
  elif [ "$rc" != 0 ] && ! grep -qF -- "$want" "$tmp/err"; then check="message: $(head -c 200 "$tmp/err")"
  fi
  x=$(awk -v r="$rss" -v s="$size" 'BEGIN { printf "%.1f", r * 1024 / s }')
  if awk -v x="$x" -v m="$MAX_X" 'BEGIN { exit !(x > m) }'; then check="$check; RSS ${x}x the file (bound ${MAX_X}x)"; fi
  [ "$check" = ok ] || bad "$name: $check"
  printf '%-13s %9s %8.1f %6s %8s %9.0f %6s %8s  %s\n' "$name" "${uops:--}" "$(awk -v s="$size" 'BEGIN { print s / 1048576 }')" \
    "$rc" "$wall" "$(awk -v r="$rss" 'BEGIN { print r / 1024 }')" "$x" "${k:--}" "$check"
  if [ "$name" = fanout_100mb ]; then
    set -- $(BENCH_WARMUP_MS=0 "$BENCH" "$g" 1 read)
    echo "  reading alone (graph_read_file, in process): $2 ms for $(awk -v s="$size" 'BEGIN { printf "%.0f", s / 1048576 }') MB"
  fi
  rm -f "$g" "$tmp/s.json"
}
run chain_1m chain 1000000 3 "infinite loop in graph_rewrite (stack too big)"
run chains_990k chains 990000 0 11
run fanout_1m fanout 524288 0 513
run fanout_100mb fanout 786432 0 769
[ "$fail" -eq 0 ] && echo "scale: all cases as expected" || echo "scale: $fail failed"
[ "$fail" -eq 0 ]
