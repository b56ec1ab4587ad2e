#!/bin/sh
# bench.sh ORACLE: scheduling speed of tgc over the 5 largest corpus graphs (by uop count, INDEX.tsv
# column 4) and testdata/models/*.graph.json, side by side with tinygrad 0.11.0 when it imports.
# Uses $BENCH (tests/bench.c built against libtgc.a: parses the graph and runs create_schedule
# $N times, each in a fresh context, after 200 ms of untimed runs, and prints medians) and $TGC for the process's peak RSS of
# one `tgc schedule`. tinygrad's time is tools/tgc_graph.py bench (get_kernelize_map, median of
# $TG_REPEAT runs), twice: tg_ms with tinygrad's View/ShapeTracker functools caches warm from its
# earlier runs of the same graph, tg_cold with them cleared before each run (like tgc's runs, each
# from nothing). Each of those runs is paired with a tgc measurement taken right before it
# (tgc_graph.py bench --pair: the median of 25 runs of $BENCH), and the speedups are the medians of
# the pairs' ratios: a slow spell of a shared machine slows both sides of a pair, where tinygrad's
# runs and tgc's 100 runs, seconds apart, can each meet a different one.
# Columns: read/sched = median ms of graph_read_mem / create_schedule; kmap = the part of sched that
# get_kernelize_map takes (the rest is create_schedule_with_vars' ordering); Muops/s = uops per
# scheduling second; memKB = peak bytes of the compile context at one moment (its arenas: the graph's nodes, values
# and maps, the passes' maps and scratch; its heap tables: the intern sets and memos; its walk stack); xmem = memKB over the file's size
# (a small file's is mostly the tables' starting sizes); rssKB = peak RSS of `tgc schedule`; xfile = rssKB
# over the file's size (a process of tgc's takes about 3 MB before it reads anything, which is most
# of the RSS of these small files: make scale has the RSS of million-uop graphs); tg_ms = tinygrad's
# get_kernelize_map (no JSON reading); pair_ms = tgc's kmap in the pairs with tg_ms's runs;
# x_kmap = tinygrad's over tgc's kernelize time, the median of those pairs' ratios (the same
# function on both sides); x_cold = the same with tg_cold's runs (both sides also start from
# nothing: like for like); x_total = tg_ms / (read + sched) (tgc also parsing the file and ordering
# the kernels).
# The bench process keeps freed memory for its next run (mallopt), as tinygrad's Python process
# keeps its heap: the runs time scheduling on warm pages, not the kernel zeroing fresh ones.
# Targets (issue 4): x_kmap >= 100 and memory under 20x the file; the last line counts the graphs
# that meet x_kmap >= 100, x_cold >= 100 and xmem < 20 (RSS of small files is the process's own
# baseline: make scale has the RSS bound on big ones).
set -u
ORACLE=${1:-../shared/oracle}
BUILD=${BUILD:-build}
TGC=${TGC:-$BUILD/tgc}
BENCH=${BENCH:-$BUILD/bench}
N=${N:-100}
TG_REPEAT=${TG_REPEAT:-5}
for b in "$TGC" "$BENCH"; do
  if [ ! -x "$b" ]; then
    echo "bench.sh: $b not built" >&2
    exit 2
  fi
done
HAVE_TG=0
if [ "${NO_TINYGRAD:-0}" = 0 ] && python3 -c "import tinygrad" >/dev/null 2>&1; then HAVE_TG=1; fi
TIME=
if [ -x /usr/bin/time ]; then TIME=/usr/bin/time; fi
TMP=${TMPDIR:-/tmp}/tgc-bench.$$
trap 'rm -f "$TMP"' EXIT INT TERM

. "$(dirname "$0")/bench_graphs.sh"

# tgbench GRAPH [--cold]: tinygrad's median ms, then tgc's in the pairs and the pairs' median ratio,
# from the two lines of tgc_graph.py bench --pair (nothing when tinygrad fails on the graph)
tgbench() {
  python3 tools/tgc_graph.py bench "$@" --repeat "$TG_REPEAT" --pair "$BENCH" 2>/dev/null |
    sed -n -e 's/^tinygrad get_kernelize_map.*: \([0-9.]*\) ms.*/\1/p' \
      -e 's/^paired tgc kernelize: \([0-9.]*\) ms; ratio tinygrad\/tgc: median \([0-9.]*\).*/\1 \2/p' | tr '\n' ' '
}

printf '%-44s %6s %8s %8s %8s %9s %8s %6s %8s %6s %9s %8s %7s %8s %7s %8s\n' graph uops read_ms sched_ms kmap_ms Muops/s memKB xmem rssKB xfile tg_ms pair_ms x_kmap tg_cold x_cold x_total
status=0
SUM=${TMPDIR:-/tmp}/tgc-bench-sum.$$
trap 'rm -f "$TMP" "$SUM"' EXIT INT TERM
: >"$SUM"
for g in $(bench_graphs "$ORACLE"); do
  name=$(bench_row_name "$g")
  if ! out=$("$BENCH" "$g" "$N"); then
    echo "bench.sh: $g: bench failed" >&2
    status=1
    continue
  fi
  set -- $out
  uops=$1 rd=$2 sc=$3 arena=$4 km=$6
  size=$(wc -c <"$g")
  rss=-
  if [ -n "$TIME" ] && $TIME -f %M -o "$TMP" "$TGC" schedule "$g" -o /dev/null 2>/dev/null; then rss=$(tail -n 1 "$TMP"); fi
  tg=- tgc=- pk=- xk=- xc=-
  if [ $HAVE_TG = 1 ]; then
    set -- $(tgbench "$g") - - -
    tg=$1 pk=$2 xk=$3
    set -- $(tgbench "$g" --cold) - - -
    tgc=$1 xc=$3
  fi
  awk -v n="$name" -v u="$uops" -v rd="$rd" -v sc="$sc" -v km="$km" -v ar="$arena" -v rss="$rss" -v sz="$size" -v tg="$tg" -v tgc="$tgc" -v pk="$pk" -v xk="$xk" -v xc="$xc" 'BEGIN {
    mups = sc > 0 ? u / sc / 1000 : 0
    xf = rss == "-" ? "-" : sprintf("%.1f", rss * 1024 / sz)
    xa = sprintf("%.1f", ar / sz)
    sp = xk == "-" ? "-" : sprintf("%.0fx", xk)
    spc = xc == "-" ? "-" : sprintf("%.0fx", xc)
    st = tg == "-" || rd + sc <= 0 ? "-" : sprintf("%.0fx", tg / (rd + sc))
    printf "%-44s %6d %8.2f %8.2f %8.2f %9.2f %8d %6s %8s %6s %9s %8s %7s %8s %7s %8s\n", n, u, rd, sc, km, mups, ar / 1024, xa, rss, xf, tg, pk, sp, tgc, spc, st
    # for the summary: x_kmap, x_cold, xmem (- when tinygrad did not run)
    printf "%s %s %s\n", xk, xc, ar / sz >> "/dev/stderr"
  }' 2>>"$SUM"
done
# the issue's targets, counted over the graphs above: x_kmap and x_cold >= 100, xmem < 20
awk '{ n++; if ($1 != "-") { t++; k += $1 >= 100; if (n1 == 0 || $1 < m1) m1 = $1; n1 = 1 }
       if ($2 != "-") { c += $2 >= 100; if (n2 == 0 || $2 < m2) m2 = $2; n2 = 1 }
       a += $3 < 20; if ($3 > ma) ma = $3 }
     END { if (!n) exit
           if (t) printf "targets: x_kmap >= 100 on %d of %d (lowest %.0fx), x_cold >= 100 on %d of %d (lowest %.0fx); ", k, t, m1, c, t, m2
           printf "xmem < 20 on %d of %d (highest %.1f)\n", a, n, ma }' "$SUM"
exit $status
