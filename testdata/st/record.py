#!/usr/bin/env python3
"""record.py: what tinygrad 0.11.0 says `UOp.st` is for every movement-op and VIEW row of every
corpus graph, for tests/test_shape.c.

Approach. Each `/work/shared/oracle/*/*.graph.json` (or the dir given as argv[1]) is rebuilt as
tinygrad UOps with tools/tgc_graph.py's loader (rows in order, args decoded per FORMATS.md); for
each RESHAPE/PERMUTE/EXPAND/PAD/SHRINK/FLIP/VIEW row we take `u.st` and write it in a compact text
form (below). Distinct texts are stored once, so the file stays small.

Output `corpus_st.txt` (plain text, one record per line, tab separated):
  S <text>                      the next ShapeTracker text (numbered 0, 1, ... in file order)
  G <kind/name> <id>:<n>,...    a graph (path relative to the oracle dir, without .graph.json) and,
                                for each recorded row id, the number of its ShapeTracker text
Text of a ShapeTracker: views joined by " | "; a view is shape/strides/offset/mask/contiguous with
tuples comma separated, mask "-" for None else "b:e,b:e", contiguous 0/1; an int is written as is,
a UOp as {OP:dtype:repr(arg)(src,src)}. `st` None is "N"; a tinygrad exception is "E".
Run:  python3 testdata/st/record.py [ORACLE_DIR]   (about a minute on 16 cores)
"""
import os, sys, glob, pathlib, multiprocessing
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[2] / "tools"))
import tgc_graph  # noqa: E402
from tinygrad.uop.ops import UOp, Ops  # noqa: E402

MOVEMENT = {Ops.RESHAPE, Ops.PERMUTE, Ops.EXPAND, Ops.PAD, Ops.SHRINK, Ops.FLIP, Ops.VIEW}

def sx(u: UOp) -> str:
  s = f"{u.op.name}:{tgc_graph.dtype_str(u.dtype)}:{u.arg!r}"
  return s + ("(" + ",".join(sx(x) for x in u.src) + ")" if u.src else "")
def si(x) -> str: return "{" + sx(x) + "}" if isinstance(x, UOp) else str(int(x))
def view_text(v) -> str:
  mask = "-" if v.mask is None else ",".join(f"{si(b)}:{si(e)}" for b, e in v.mask)
  return f"{','.join(map(si, v.shape))}/{','.join(map(si, v.strides))}/{si(v.offset)}/{mask}/{int(v.contiguous)}"
def st_text(st) -> str: return "N" if st is None else " | ".join(view_text(v) for v in st.views)

def record(path: str):
  try: L = tgc_graph.load_graph(path, set_options=False, with_data=False)
  except Exception as e: return path, None, repr(e)
  out = []
  for i, u in enumerate(L.uops):
    if u.op not in MOVEMENT: continue
    try: t = st_text(u.st)
    except Exception: t = "E"
    out.append((i, t))
  return path, out, None

def main():
  oracle = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else "/work/shared/oracle")
  paths = sorted(glob.glob(str(oracle / "*" / "*.graph.json")))
  with multiprocessing.Pool(os.cpu_count()) as pool: results = pool.map(record, paths, chunksize=8)
  table: dict[str, int] = {}
  lines, nrows, bad = [], 0, 0
  for path, rows, err in results:
    if rows is None: bad += 1; print(f"skip {path}: {err}", file=sys.stderr); continue
    if not rows: continue
    rel = os.path.relpath(path, oracle)[:-len(".graph.json")]
    refs = []
    for i, t in rows:
      if t not in table:
        table[t] = len(table)
        lines.append(f"S\t{t}")
      refs.append(f"{i}:{table[t]}")
    nrows += len(rows)
    lines.append(f"G\t{rel}\t{','.join(refs)}")
  dst = pathlib.Path(__file__).resolve().parent / "corpus_st.txt"
  dst.write_text("\n".join(lines) + "\n")
  print(f"{len(paths)} graphs ({bad} unreadable), {nrows} rows, {len(table)} distinct ShapeTrackers -> {dst} ({dst.stat().st_size} bytes)")

if __name__ == "__main__": main()
