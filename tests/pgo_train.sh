#!/bin/sh
# pgo_train.sh BUILD ORACLE: the training run of `make pgo`. BUILD holds a tgc and a bench built with
# -fprofile-generate; this runs them on graphs that `make bench` never times, so the profile is not
# fitted to the benchmark: every 4th schedule graph of the corpus (by name) except the five largest
# (bench.sh's), each scheduled 3 times, plus testdata/numeric compiled to C (the codegen paths).
# Without a corpus it trains on testdata/numeric alone.
set -eu
BUILD=$1
ORACLE=${2:-../shared/oracle}
. "$(dirname "$0")/bench_graphs.sh"
n=0
if [ -f "$ORACLE/INDEX.tsv" ]; then
  skip=$(bench_graphs "$ORACLE" | sed 's|.*/||; s|\.graph\.json$||')
  for g in $(ls "$ORACLE"/schedule/*.graph.json | awk 'NR % 4 == 0'); do
    name=$(basename "$g" .graph.json)
    case " $(echo $skip) " in *" $name "*) continue ;; esac
    BENCH_WARMUP_MS=0 "$BUILD/bench" "$g" 3 >/dev/null 2>&1 || true   # a graph tgc refuses still trains the error paths
    n=$((n + 1))
  done
fi
tmp=${TMPDIR:-/tmp}/tgc-pgo.$$
mkdir -p "$tmp"
trap 'rm -rf "$tmp"' EXIT INT TERM
for g in testdata/numeric/*.graph.json; do
  "$BUILD/tgc" compile -t c "$g" -o "$tmp/out" >/dev/null 2>&1 || true
  n=$((n + 1))
done
echo "pgo_train.sh: trained on $n graphs"
