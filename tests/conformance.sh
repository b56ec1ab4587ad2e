#!/bin/sh
# conformance.sh ORACLE [FLAGS...]: the scheduler scoreboard over ORACLE/schedule and ORACLE/numeric.
# Builds nothing: runs $BUILD/conformance (default build/conformance). Without FLAGS every rate
# must be 1.0 (the scheduler matches the whole corpus, and every numeric case runs on the CPU and
# matches tinygrad's outputs); FLAGS (e.g. -v, --count-bar 1.0
# --ast-bar 0.98 --order-bar 0.95) replace those bars. Exit status is the scoreboard's.
set -u
ORACLE=${1:-../shared/oracle}
[ $# -gt 0 ] && shift
BIN=${BUILD:-build}/conformance
if [ ! -x "$BIN" ]; then
  echo "conformance.sh: $BIN not built (run make $BIN)" >&2
  exit 2
fi
if [ $# -eq 0 ]; then
  set -- --count-bar 1.0 --ast-bar 1.0 --order-bar 1.0 --bufs-bar 1.0 --meta-bar 1.0
fi
# the numeric column: every numeric case runs on the CPU and must match tinygrad's outputs, byte for
# byte where the CPU has FMA (the bits column; NUMERIC="" leaves both out)
NUMERIC=${NUMERIC-"--numeric cpu --numeric-bar 1.0 --bits-bar 1.0"}
# shellcheck disable=SC2086
set -- $NUMERIC "$@"
exec "$BIN" "$@" "$ORACLE/schedule" "$ORACLE/numeric"
