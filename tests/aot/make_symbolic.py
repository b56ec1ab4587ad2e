#!/usr/bin/env python3
"""Regenerates tests/aot/symbolic/: the schedule-corpus graphs whose outputs have a symbolic shape
(tinygrad 0.11.0's test_symbolic_ops, DEFINE_VAR/BIND) or are a BUFFER_VIEW at a symbolic offset
(test_multitensor's transformer: a KV-cache assign at start_pos), made runnable, with tinygrad's values.

Each graph of ORACLE/schedule whose sink has a source with a symbolic shape is copied with
deterministic data on every BUFFER row (seeded by the row id), and NAME.expect.json is
`tgc_graph.py oracle` of the copy plus `outputs` computed by tinygrad: Tensor.numpy() refuses a
symbolic shape, so each output is realized with tinygrad's run_schedule(schedule, var_vals) and read
as its base Buffer through the output's ShapeTracker with every variable replaced by its bound value
(sym_infer under var_vals: the shape tinygrad's realize gives the tensor's buffer).

  python3 tests/aot/make_symbolic.py [ORACLE]      (ORACLE defaults to ../shared/oracle)
"""
import base64, glob, json, os, pathlib, random, struct, sys
os.environ.setdefault("CPU", "1")
HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent.parent / "tools"))
import numpy as np
import tgc_graph
from tinygrad.helpers import all_int
from tinygrad.uop.ops import Ops, sym_infer

def fill(dtype:str, n:int, rng:random.Random) -> bytes:
  if dtype in ("float", "half", "double"):
    arr = np.array([rng.uniform(-4, 4) for _ in range(n)], dtype={"float": np.float32, "half": np.float16, "double": np.float64}[dtype])
  elif dtype in ("int", "uint", "long", "ulong", "short", "ushort", "char", "uchar"):
    npdt = {"int": np.int32, "uint": np.uint32, "long": np.int64, "ulong": np.uint64, "short": np.int16, "ushort": np.uint16, "char": np.int8, "uchar": np.uint8}[dtype]
    arr = np.array([rng.randrange(0, 100) for _ in range(n)], dtype=npdt)
  elif dtype == "bool": arr = np.array([rng.random() < 0.5 for _ in range(n)], dtype=np.bool_)
  else: raise SystemExit(f"no filler for {dtype}")
  return arr.tobytes()

def gather(buf:bytes, npdt, views, var_vals) -> np.ndarray:
  """the buffer's elements at each index of the last view's shape, through the view chain"""
  src = np.frombuffer(buf, dtype=npdt)
  conc = [(tuple(int(sym_infer(x, var_vals)) for x in v.shape), tuple(int(sym_infer(x, var_vals)) for x in v.strides),
           int(sym_infer(v.offset, var_vals)), None if v.mask is None else tuple((int(sym_infer(a, var_vals)), int(sym_infer(b, var_vals))) for a,b in v.mask))
          for v in views]
  shape = conc[-1][0]
  out = np.zeros(int(np.prod(shape)) if shape else 1, dtype=npdt)
  for i in range(out.size):
    off, valid = i, True
    for sh, st, o, mk in reversed(conc):
      idx, rem = [], off
      for d in reversed(sh): idx.append(rem % d if d else 0); rem = rem // d if d else 0
      idx.reverse()
      if mk is not None and any(not (a <= x < b) for x,(a,b) in zip(idx, mk)): valid = False; break
      off = o + sum(x*s for x,s in zip(idx, st))
    if valid: out[i] = src[off]
  return out.reshape(shape)

def outputs(path:str) -> list[dict]:
  from tinygrad.engine.realize import run_schedule
  L = tgc_graph.load_graph(path, set_options=False)
  with tgc_graph.options(L.options):
    sched_sink, ks, schedule, var_vals = tgc_graph.schedule_graph(L)
    run_schedule(schedule, var_vals, do_update_stats=False)
    outs = []
    for i,s in enumerate(sched_sink.src):
      s = s.substitute({u:u.buf_uop for u in s.toposort() if u.op is Ops.ASSIGN})
      st, vv = s.st.unbind()
      vv = {**var_vals, **vv}
      base = s.base
      npdt = tgc_graph._np_dtype(s.dtype)
      if base.op is Ops.BUFFER_VIEW:
        # a view of a buffer at an offset (an assign into a shrink by a bound variable): the base
        # buffer's bytes from sym_infer(offset) on, as tinygrad's Buffer.view
        # (on several devices, a view of MSTACK: a replicated tensor reads as its first shard)
        isz, (size, off), vb = base.dtype.itemsize, base.arg, base.src[0]
        if vb.op is Ops.MSTACK: vb = vb.src[0]
        raw = bytes(vb.buffer.as_buffer())[int(sym_infer(off, vv))*isz:][:int(sym_infer(size, vv))*isz]
      else: raw = bytes(base.buffer.as_buffer())
      arr = gather(raw, npdt, st.views, vv)
      outs.append({"index": i, "dtype": tgc_graph.dtype_str(s.dtype), "shape": [int(x) for x in arr.shape],
                   "encoding": "base64", "bytes": base64.b64encode(arr.tobytes()).decode()})
  return outs

def symbolic_view(L) -> bool:
  """does the scheduled sink hold a BUFFER_VIEW at a symbolic offset (an assign into a shrink by a bound variable)?"""
  with tgc_graph.options(L.options):
    sched_sink = tgc_graph.schedule_graph(L)[0]
  return any(u.op is Ops.BUFFER_VIEW and not all_int(u.arg) for u in sched_sink.toposort())

def main() -> int:
  oracle = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else HERE.parent.parent.parent / "shared" / "oracle")
  out = HERE / "symbolic"
  out.mkdir(exist_ok=True)
  n = 0
  for f in sorted(glob.glob(str(oracle / "schedule" / "*.graph.json"))):
    text = open(f).read()
    if "DEFINE_VAR" not in text: continue
    L = tgc_graph.load_graph(f, set_options=False, with_data=False)
    if all(all_int(s.shape) for s in L.sink.src) and not symbolic_view(L): continue
    doc = json.loads(text)
    byid = {row["id"]: row for row in doc["uops"]}
    # a multi-device BUFFER carries no data (FORMATS.md): such a graph cannot be made runnable
    if any(row["op"] == "BUFFER" and any(isinstance(byid[x].get("arg"), list) for x in row.get("src", []) if byid[x]["op"] == "DEVICE")
           for row in doc["uops"]): continue
    for row in doc["uops"]:
      if row["op"] != "BUFFER": continue
      rng = random.Random(row["id"])
      row["data"] = {"encoding": "base64", "bytes": base64.b64encode(fill(row["dtype"], row["arg"], rng)).decode()}
    name = pathlib.Path(f).name[:-len(".graph.json")]
    gp = out / f"{name}.graph.json"
    gp.write_text(json.dumps(doc, separators=(",", ":")) + "\n")
    exp = tgc_graph.oracle(str(gp), outputs=False)
    exp["outputs"] = outputs(str(gp))
    (out / f"{name}.expect.json").write_text(json.dumps(exp, separators=(",", ":")) + "\n")
    n += 1
  print(f"{n} symbolic graphs written to {out}")
  return 0

if __name__ == "__main__": sys.exit(main())
