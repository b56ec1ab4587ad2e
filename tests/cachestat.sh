#!/bin/sh
# cachestat.sh ORACLE: what one schedule costs in instructions and cache misses, per make bench graph,
# under valgrind's cachegrind with a cache model of this project's CI machines (64 KiB L1 data cache,
# 1 MiB L2 per core as the last level). Unlike make bench's times these counts are the same on every
# run and every machine, so a change to the memory layout or the passes can be measured where the
# machine's own noise (a shared host's caches) is larger than the change.
# Each graph is run twice by $BENCH (tests/bench.c) with no warm-up: `bench G 5` (read and schedule, 6
# times: one untimed run and 5) and `bench G 5 read` (read only, 6 times); the difference over 6 is
# one schedule's: Ir = instructions, D1 = L1 data misses (reads and writes), LLr / LLw = last-level
# read / write misses (a write miss is a line written that was not cached: fresh memory).
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
  if ! all=$(counts "$g" 5) || ! rd=$(counts "$g" 5 read); then
    echo "cachestat.sh: $g: bench failed under valgrind" >&2
    status=1
    continue
  fi
  echo "$all $rd" | awk -v n="$name" '{ printf "%-44s %10d %9d %8d %8d\n", n, ($1 - $5) / 6, ($2 - $6) / 6, ($3 - $7) / 6, ($4 - $8) / 6 }'
done
exit $status
