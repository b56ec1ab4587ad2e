#!/bin/sh
# cuda_device_check.sh: the CUDA check to run on a machine with an NVIDIA GPU (CI has none).
# Builds tgc if needed, then runs every numeric corpus case and every symbolic case under
# tests/aot/symbolic with `tgc run -d cuda --expect` (tinygrad's recorded values), and builds and
# runs `compile -t cuda`'s host.c for the numeric cases, comparing its outputs with `run -d cpu`.
# Prints one line per failure and "N passed, N failed"; exits nonzero when anything failed.
# Usage: sh tests/cuda_device_check.sh [ORACLE]   (default ../shared/oracle)
ORACLE=${1:-../shared/oracle}
TGC=${TGC:-build/tgc}
[ -x "$TGC" ] || make -j"$(nproc)" >/dev/null || exit 2
CUDA=${CUDA_PATH:-/usr/local/cuda}
tmp=$(mktemp -d /tmp/tgc_cuda_XXXXXX)
trap 'rm -rf "$tmp"' EXIT
pass=0 fail=0
nvidia-smi -L 2>/dev/null | head -1
for g in "$ORACLE"/numeric/*.graph.json tests/aot/symbolic/*.graph.json; do
  n=$(basename "$g" .graph.json)
  if "$TGC" run "$g" -d cuda -o "$tmp/r" --expect "${g%.graph.json}.expect.json" >"$tmp/log" 2>&1; then pass=$((pass + 1))
  else fail=$((fail + 1)); echo "FAIL run -d cuda $n: $(tail -c 400 "$tmp/log")"; fi
done
for g in "$ORACLE"/numeric/*.graph.json; do
  n=$(basename "$g" .graph.json)
  rm -rf "$tmp/c" "$tmp/cpu"
  if ! "$TGC" compile "$g" -t cuda -o "$tmp/c" >"$tmp/log" 2>&1 ||
     ! cc -O1 -Wall -Werror "$tmp/c/host.c" -o "$tmp/c/host" -I"$CUDA/include" -L"$CUDA/lib64" -lcuda -lnvrtc >>"$tmp/log" 2>&1; then
    fail=$((fail + 1)); echo "FAIL host.c build $n: $(tail -c 400 "$tmp/log")"; continue
  fi
  # inputs: the graph's BUFFER data as raw bytes; the reference: tgc's own CPU run of the same graph
  "$TGC" run "$g" -d cpu -o "$tmp/cpu" >/dev/null 2>&1
  python3 - "$g" "$tmp/c" >/dev/null 2>&1 <<'PY'
import base64, json, os, sys
import numpy as np
g = json.load(open(sys.argv[1]))
for i, r in enumerate([r for r in g["uops"] if r["op"] == "BUFFER"]):
    d = r.get("data")
    if not d: continue
    raw = base64.b64decode(d["bytes"]) if "bytes" in d else np.load(os.path.join(os.path.dirname(sys.argv[1]), d["file"])).tobytes()
    open(f"{sys.argv[2]}/input{i}.bin", "wb").write(raw)
PY
  if (cd "$tmp/c" && ./host .) >"$tmp/log" 2>&1 && python3 - "$tmp/c" "$tmp/cpu" <<'PY'
import glob, os, sys, numpy as np
for f in sorted(glob.glob(f"{sys.argv[2]}/out*.npy")):
    a = np.load(f); k = os.path.basename(f)[:-4]
    b = np.frombuffer(open(f"{sys.argv[1]}/{k}.bin", "rb").read(), dtype=a.dtype).reshape(a.shape)
    if not np.allclose(a.astype(np.float64), b.astype(np.float64), rtol=1e-3, atol=1e-4, equal_nan=True): sys.exit(1)
PY
  then pass=$((pass + 1)); else fail=$((fail + 1)); echo "FAIL host.c run $n: $(tail -c 400 "$tmp/log")"; fi
done
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
