#!/bin/sh
# cachestat.sh ORACLE: what one schedule costs in instructions and cache misses, per make bench graph,
# under valgrind's cachegrind with a cache model of this project's CI machines (64 KiB L1 data cache,
# 1 MiB L2 per core as the last level). Unlike make bench's times these counts are the same on every
# run and every machine (the misses exactly, the instructions to within some tens: the clock reads
# bench makes), so a change to the memory layout or the passes can be measured where the machine's
# own noise (a shared host's caches) is larger than the change.
# Each graph is run four times by $BENCH (tests/bench.c) with no warm-up: `bench G 6` and `bench G 1`
# (read and schedule, 6 and 1 times) and the same with `read` (read only). Both of a pair pay the
# process's one-time costs (the first schedule builds the matchers, the first run meets cold
# caches), so their difference is 5 runs alone, and the schedules' share of it over 5 is one
# schedule's: Ir = instructions, D1 = L1 data misses (reads and writes), LLr / LLw =
# last-level read / write misses (a write miss is a line written that was not cached: fresh memory).
set -u
ORACLE=${1:-../shared/oracle}
BUILD=${BUILD:-build}
BENCH=${BENCH:-$BUILD/bench}
if ! command -v valgrind >/dev/null 2>&1; then
  echo "cachestat.sh: valgrind not found (apt-get install valgrind)" >&2
  exit 2
fi
if [ ! -x "$BENCH" ]; then
  echo "cachestat.sh: $BENCH not built" >&2
  exit 2
fi
. "$(dirname "$0")/bench_graphs.sh"
# "Ir D1 LLr LLw" of one cachegrind run of $BENCH with the given arguments
counts() {
  BENCH_WARMUP_MS=0 valgrind --tool=cachegrind --cache-sim=yes --D1=65536,8,64 --LL=1048576,16,64 \
    --cachegrind-out-file=/dev/null "$BENCH" "$@" 2>&1 >/dev/null |
    awk '{ gsub(",", "") }
         /I *refs:/ { ir = $4 } /D1 *misses:/ { d1 = $4 } /LLd misses:/ { lr = $6; lw = $9 }
         END { if (ir == "") exit 1; print ir, d1, lr, lw }'
}
printf '%-44s %10s %9s %8s %8s\n' graph Ir D1 LLr LLw
status=0
for g in $(bench_graphs "$ORACLE"); do
  name=$(bench_row_name "$g")
  if ! a6=$(counts "$g" 6) || ! a1=$(counts "$g" 1) || ! r6=$(counts "$g" 6 read) || ! r1=$(counts "$g" 1 read); then
    echo "cachestat.sh: $g: bench failed under valgrind" >&2
    status=1
    continue
  fi
  echo "$a6 $a1 $r6 $r1" | awk -v n="$name" '{
    for (i = 1; i <= 4; i++) c[i] = (($i - $(i + 4)) - ($(i + 8) - $(i + 12))) / 5
    printf "%-44s %10d %9d %8d %8d\n", n, c[1], c[2], c[3], c[4] }'
done
exit $status
