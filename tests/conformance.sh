#!/bin/sh
# conformance.sh ORACLE: the scheduler scoreboard over ORACLE/schedule and ORACLE/numeric.
# Builds nothing: runs $BUILD/conformance (default build/conformance), passing on extra flags
# (e.g. -v, --count-bar 1.0 --ast-bar 0.98 --order-bar 0.95). Exit status is the scoreboard's.
set -u
ORACLE=${1:-../shared/oracle}
[ $# -gt 0 ] && shift
BIN=${BUILD:-build}/conformance
if [ ! -x "$BIN" ]; then
  echo "conformance.sh: $BIN not built (run make $BIN)" >&2
  exit 2
fi
exec "$BIN" "$@" "$ORACLE/schedule" "$ORACLE/numeric"
