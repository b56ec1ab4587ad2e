#!/usr/bin/env python3
"""opts_sweep.py TGC DEVICE SEEDS: random opt lists on the numeric corpus, checked against tinygrad's values.

For every numeric case (../shared/oracle/numeric and testdata/numeric) and each of SEEDS seeds, a
list is grown as tinygrad's BEAM grows one: a random action (UPCAST, UNROLL, PADTO; on opencl also
LOCAL and GROUPTOP) is kept when `tgc run --opts LIST` still applies to every kernel of the graph.
Each run that applies must reproduce the case's recorded outputs (--expect), or where it does not,
the outputs tinygrad computes with the same opts on every kernel (tools/tgc_graph.py oracle --opts:
an UNROLL sums in another order, a PADTO masks constants, so an ill-conditioned value can move past
the tolerance in tinygrad too); a refusal must be exit 3 saying why. Prints the counts; exit 1 on
any other outcome. `make opts-sweep` runs it on the CPU.
"""
import glob, os, random, subprocess, sys, tempfile, zlib

def main():
  tgc, dev, seeds = sys.argv[1], sys.argv[2], int(sys.argv[3])
  oracle = os.environ.get("ORACLE", "../shared/oracle")
  graphs = sorted(glob.glob(f"{oracle}/numeric/*.graph.json")) + sorted(glob.glob("testdata/numeric/*.graph.json"))
  acts = [f"UPCAST:{a}:{n}" for n in (0, 2, 3, 4) for a in range(4)] + [f"UNROLL:{a}:{n}" for n in (0, 4) for a in range(2)]
  acts += [f"PADTO:{a}:{n}" for n in (8, 16, 32) for a in range(4)]
  if dev != "cpu": acts += [f"LOCAL:{a}:{n}" for n in (2, 4, 8) for a in range(3)] + [f"GROUPTOP:{a}:{n}" for n in (4, 16) for a in range(2)]
  runs = ok = bad = pads = reorder = 0
  with tempfile.TemporaryDirectory() as out:
    for g in graphs:
      e = g[: -len(".graph.json")] + ".expect.json"
      for s in range(seeds):
        rnd = random.Random(zlib.crc32(os.path.basename(g).encode()) + s)
        cur = []
        for _ in range(3):
          for _ in range(6):
            cand = cur + [rnd.choice(acts)]
            r = subprocess.run([tgc, "run", g, "-d", dev, "-o", out, "--opts", ",".join(cand), "--expect", e], capture_output=True, text=True)
            runs += 1
            if r.returncode == 1 and "outputs differ" in r.stderr:
              # tinygrad's own values under these opts (slow: only where the recorded ones differ)
              te = os.path.join(out, "opts.expect.json")
              o = subprocess.run([sys.executable, "tools/tgc_graph.py", "oracle", g, "--outputs", "yes", "--opts", ",".join(cand), "-o", te], capture_output=True, text=True)
              if o.returncode == 0:
                r = subprocess.run([tgc, "run", g, "-d", dev, "-o", out, "--opts", ",".join(cand), "--expect", te], capture_output=True, text=True)
                reorder += r.returncode == 0
            if r.returncode == 0:
              cur, ok, pads = cand, ok + 1, pads + cand[-1].startswith("PADTO")
              break
            if r.returncode != 3 or "does not apply" not in r.stderr and "opts " not in r.stderr:
              bad += 1
              print(f"BAD {os.path.basename(g)} --opts {','.join(cand)}: exit {r.returncode}: {r.stderr.strip()[-300:]}")
  print(f"opts sweep ({dev}): {runs} runs, {ok} applied and matched tinygrad's values ({pads} adding a PADTO; {reorder} its values under the same opts, not the recorded ones), {bad} bad")
  return 1 if bad or not ok else 0

if __name__ == "__main__":
  sys.exit(main())
