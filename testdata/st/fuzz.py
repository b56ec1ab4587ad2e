#!/usr/bin/env python3
"""fuzz.py: random movement-op chains run through tinygrad 0.11.0's ShapeTracker, for tests/test_shape.c.

Approach. In the spirit of tinygrad's test_shapetracker.py (CheckingShapeTracker and the fuzzers),
each case starts from ShapeTracker.from_shape(shape) and applies 1..8 random movement ops
(reshape to a random shape of the same size, permute, expand of size-1 axes, pad, shrink, flip),
recording the ShapeTracker after each op; at the end it records real_strides, unit_stride_axes,
real_size, axis_is_masked per axis, to_indexed_uops (idx and valid as structural text), simplify,
invert, and `st + st2` with a random second tracker. Seeded, so the file is reproducible.

Output `fuzz.jsonl`: one JSON object per case:
  {"shape": [..], "ops": [["R"|"P"|"E"|"D"|"K"|"F", arg], ..], "sts": [text, ..],
   "real_strides": [int|null, ..], "unit": [..], "real_size": n, "masked": [bool, ..],
   "idx": sx, "valid": sx, "simplify": text, "invert": text|null, "add_shape": [..], "add_ops": [..], "add": text}
Texts are record.py's ShapeTracker / UOp texts. Pad/shrink args are flat [b0, e0, b1, e1, ..].
Run:  python3 testdata/st/fuzz.py [N]   (default 600 cases)
"""
import json, random, sys, pathlib
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from record import st_text, sx  # noqa: E402
from tinygrad.shape.shapetracker import ShapeTracker  # noqa: E402
from tinygrad.helpers import prod  # noqa: E402

def factor_shape(rng, n):
  """a random shape with product n"""
  out, x = [], n
  while x > 1:
    ds = [d for d in range(2, x + 1) if x % d == 0]
    d = rng.choice(ds[:4] + [x]) if rng.random() < 0.8 else rng.choice(ds)
    out.append(d); x //= d
  # sprinkle 1s
  for _ in range(rng.randint(0, 2)): out.insert(rng.randint(0, len(out)), 1)
  return tuple(out) if out else (1,)

def random_op(rng, st):
  shape = st.shape
  k = rng.choice("RRRPPEDKKF")
  if k == "R":
    return "R", factor_shape(rng, prod(shape))
  if k == "P":
    p = list(range(len(shape))); rng.shuffle(p); return "P", tuple(p)
  if k == "E":
    if 1 not in shape: return random_op(rng, st)
    return "E", tuple(rng.choice([1, 2, 3, 4]) if s == 1 else s for s in shape)
  if k == "D":
    arg = tuple((rng.choice([0, 0, 1, 2]), rng.choice([0, 0, 1, 3])) for _ in shape)
    return "D", arg
  if k == "K":
    arg = []
    for s in shape:
      b = rng.randint(0, s // 3) if s > 1 and rng.random() < 0.5 else 0
      e = rng.randint(max(b + 1, s - s // 3), s) if rng.random() < 0.5 else s
      arg.append((b, e))
    return "K", tuple(arg)
  return "F", tuple(rng.random() < 0.5 for _ in shape)

def apply(st, k, a):
  return {"R": st.reshape, "P": st.permute, "E": st.expand, "D": st.pad, "K": st.shrink, "F": st.flip}[k](a)

def enc(k, a):
  if k in "DK": return [k, [x for p in a for x in p]]
  return [k, list(a)]

def chain(rng, nops):
  shape = tuple(rng.randint(1, 6) for _ in range(rng.randint(1, 4)))
  if rng.random() < 0.3: shape = factor_shape(rng, rng.choice([12, 16, 24, 36, 60, 64]))
  st = ShapeTracker.from_shape(shape)
  ops, sts = [], []
  for _ in range(nops):
    k, a = random_op(rng, st)
    if 0 in st.shape: break
    st = apply(st, k, a)
    ops.append(enc(k, a)); sts.append(st_text(st))
  return shape, ops, sts, st

def main():
  n = int(sys.argv[1]) if len(sys.argv) > 1 else 600
  rng = random.Random(1234)
  lines = []
  for _ in range(n):
    shape, ops, sts, st = chain(rng, rng.randint(1, 8))
    case = {"shape": list(shape), "ops": ops, "sts": sts}
    case["real_strides"] = [x if x is None else int(x) for x in st.real_strides()]
    case["unit"] = st.unit_stride_axes()
    case["real_size"] = st.real_size()
    case["masked"] = [st.axis_is_masked(i) for i in range(len(st.shape))]
    idx, valid = st.to_indexed_uops()
    case["idx"], case["valid"] = sx(idx), sx(valid)
    case["simplify"] = st_text(st.simplify())
    inv = st.invert(shape)
    case["invert"] = None if inv is None else st_text(inv)
    # st + st2, with st2 a random chain starting from st's shape
    st2 = ShapeTracker.from_shape(st.shape)
    add_ops = []
    for _ in range(rng.randint(1, 4)):
      if 0 in st2.shape: break
      k, a = random_op(rng, st2)
      st2 = apply(st2, k, a); add_ops.append(enc(k, a))
    case["add_ops"] = add_ops
    case["add"] = st_text(st + st2)
    lines.append(json.dumps(case, separators=(",", ":")))
  dst = pathlib.Path(__file__).resolve().parent / "fuzz.jsonl"
  dst.write_text("\n".join(lines) + "\n")
  print(f"{n} cases -> {dst} ({dst.stat().st_size} bytes)")

if __name__ == "__main__": main()
