#!/usr/bin/env python3
"""Regenerate or check the tinygrad 0.11.0 expectation table of tests/test_symbolic.c.

testdata/symbolic/cases.txt holds one case per line, "VARS | EXPR": VARS is "name:min:max[:dtype],...",
EXPR is Python source over those variables and the helpers below (maximum, where, lnot, given =
uop_given_valid, svalid = simplify_valid, rng = UOp.range, ...). Each case is evaluated in tinygrad and
becomes one C row {vars, expr, render, render(simplify=False), vmin, vmax, simplified vmin, simplified vmax};
"ERR:Name" when tinygrad raised.

  symbolic_table.py rows [CASES]           print the C rows (paste between `rows[] = {` and `};`)
  symbolic_table.py check [CASES] [FILE]   exit 1 unless FILE (tests/test_symbolic.c) holds exactly these rows
"""
import json, pathlib, re, sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
I64 = (-2**63, 2**63 - 1)

def helpers():
  from tinygrad.uop.ops import UOp, resolve as _resolve, smax, smin
  from tinygrad.uop.symbolic import uop_given_valid, simplify_valid
  from tinygrad.dtype import dtypes
  return dict(
    maximum=lambda a, b: a.maximum(b), minimum=lambda a, b: a.minimum(b), where=lambda c, a, b: c.where(a, b),
    lnot=lambda a: a.logical_not(), ne=lambda a, b: a.ne(b), eq=lambda a, b: a.eq(b),
    cast=lambda a, d: a.cast(getattr(dtypes, d)), given=uop_given_valid, svalid=simplify_valid,
    resolve=lambda x: _resolve(x), resolvef=lambda x: _resolve(x, False), smax=smax, smin=smin,
    cfactor=lambda x: x.const_factor(), divides=lambda x, v: x.divides(v), ssimp=lambda x: x.ssimplify(),
    infer=lambda x, *kv: x.sym_infer({kv[i]: kv[i + 1] for i in range(0, len(kv), 2)}),
    rng=lambda n, i: UOp.range(dtypes.int, n, i)), UOp, dtypes

def show(x):
  """a Python value as tgc prints it: ints saturate to the int64/uint64 range tgc's Values hold"""
  if isinstance(x, bool): return str(x)
  if isinstance(x, int): return str(max(x, I64[0]) if x < 2**64 else I64[1])
  return repr(x)

def cases(path):
  for line in open(path):
    line = line.rstrip("\n")
    if line.strip() and not line.startswith("#"):
      vs, expr = line.split("|", 1)
      yield vs.strip(), expr.strip()

def evaluate(path):
  F, UOp, dtypes = helpers()
  for vs, expr in cases(path):
    env = dict(F)
    for v in filter(None, vs.split(",")):
      p = v.split(":")
      env[p[0]] = UOp.variable(p[0], int(p[1]), int(p[2]), getattr(dtypes, p[3]) if len(p) > 3 else dtypes.int)
    try:
      e = eval(expr, env)  # the case text is Python by design: it is what the C parser mirrors
      if isinstance(e, UOp):
        s = e.simplify()
        r = [e.render(), e.render(simplify=False), show(e.vmin), show(e.vmax), show(s.vmin), show(s.vmax)]
      else: r = [str(e), "", "", "", "", ""]
    except Exception as ex:  # tinygrad raising is an expectation too
      r = ["ERR:" + type(ex).__name__, "", "", "", "", ""]
    yield [vs, expr] + r

def c_row(r): return "  {%s}," % ", ".join(json.dumps(x) for x in r)

def table(text):
  m = re.search(r"static const Row rows\[\] = \{\n(.*?)\n\};", text, re.S)
  return m.group(1).split("\n") if m else []

def main(argv):
  if len(argv) < 2 or argv[1] not in ("rows", "check"): sys.exit(__doc__)
  path = argv[2] if len(argv) > 2 else ROOT / "testdata" / "symbolic" / "cases.txt"
  rows = [c_row(r) for r in evaluate(path)]
  if argv[1] == "rows":
    print("\n".join(rows))
    return 0
  have = table(open(argv[3] if len(argv) > 3 else ROOT / "tests" / "test_symbolic.c").read())
  bad = [(i, a, b) for i, (a, b) in enumerate(zip(rows, have)) if a != b]
  for i, want, got in bad[:10]: print(f"row {i}: tinygrad {want.strip()}\n        table    {got.strip()}")
  if len(rows) != len(have): print(f"{len(have)} rows in the table, {len(rows)} cases")
  ok = not bad and len(rows) == len(have)
  print(f"{len(rows) - len(bad)}/{len(rows)} rows equal tinygrad's" if ok or bad else "row count differs")
  return 0 if ok else 1

if __name__ == "__main__": sys.exit(main(sys.argv))
