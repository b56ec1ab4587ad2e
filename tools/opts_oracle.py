#!/usr/bin/env python3
"""opts_oracle.py: record the opts tinygrad 0.11.0's hand_coded_optimizations picks for every kernel
of some graphs, on its CPU renderer (no locals), as the oracle for tgc's port (tests/test_codegen.c
reads testdata/opts/hand_coded.tsv), or with --renderer opencl on its OpenCLRenderer (locals and
shared memory: LOCAL, GROUP, GROUPTOP; testdata/opts/hand_coded_opencl.tsv).

  opts_oracle.py GRAPH... > hand_coded.tsv
  opts_oracle.py --renderer opencl GRAPH... > hand_coded_opencl.tsv

OpenCLRenderer() is made without a device (no OpenCL runtime is needed) and has no tensor cores, so
the heuristic is the whole story there; CUDA's renderer would try tensor cores first (tgc has none).

One line per compute kernel, in schedule order: the graph's file name, the kernel's index among the
schedule's SINK kernels (each KERNEL once, as the expect files list them), tinygrad's kernel name without opts, the opts as OP:AXIS:ARG joined by
',' (ARG 0 for a whole axis; '-' for none), and the name tinygrad gives the kernel with those opts
(its Kernel.name after apply_opts, as DEBUG=2 prints it, without colors and without the n1, n2...
a process's repeated names get). The heuristic runs inside tinygrad's own get_program pipeline (the
AST after its view rewrites), stopped right after the heuristic returns.
"""
import os, pathlib, re, sys
os.environ.setdefault("CPU", "1")
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))

class _Stop(Exception): pass

def main(argv):
  import tgc_graph
  import tinygrad.codegen.opt as O
  from tinygrad.engine.realize import get_program
  from tinygrad.device import Device
  from tinygrad.uop.ops import Ops
  from tinygrad.codegen.opt.kernel import Kernel
  got = {}
  def plain(name:str) -> str: return re.sub(r"\x1b\[[0-9;]*m", "", name)
  real = O.hand_coded_optimizations
  def spy(k):
    r = real(k)
    Kernel.kernel_cnt.clear()
    got["name"] = plain(k.name)
    got["opts"] = ",".join(f"{o.op.name}:{o.axis}:{o.arg if o.arg is not None else 0}" for o in r) or "-"
    Kernel.kernel_cnt.clear()
    got["named"] = plain(k.copy().apply_opts(r).name)
    raise _Stop()
  O.hand_coded_optimizations = spy
  if argv[:1] == ["--renderer"] and len(argv) > 1:
    if argv[1] == "opencl":
      from tinygrad.renderer.cstyle import OpenCLRenderer
      renderer = OpenCLRenderer()
    elif argv[1] == "cpu": renderer = Device["CPU"].renderer
    else:
      print(f"opts_oracle.py: unknown renderer {argv[1]!r} (cpu or opencl)", file=sys.stderr)
      return 2
    argv = argv[2:]
  else: renderer = Device["CPU"].renderer
  for path in argv:
    try:
      L = tgc_graph.load_graph(path, with_data=False)
      _, kernels, _, _ = tgc_graph.schedule_graph(L)
    except Exception as e:
      print(f"# {path}: {type(e).__name__}: {e}".replace("\n", " ")[:300], file=sys.stderr)
      continue
    idx = 0
    for k in kernels:  # one per KERNEL, before a multi-device kernel runs on each device
      ast = k.arg.ast
      if ast.op is not Ops.SINK: continue
      got.clear()
      try: get_program(ast, renderer)
      except _Stop: pass
      except Exception as e: got = {"name": "?", "opts": f"error {type(e).__name__}", "named": "?"}
      if got: print(f"{pathlib.Path(path).name}\t{idx}\t{got['name']}\t{got['opts']}\t{got['named']}", flush=True)
      idx += 1
  return 0

if __name__ == "__main__":
  sys.exit(main(sys.argv[1:]))
