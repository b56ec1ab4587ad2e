#!/usr/bin/env python3
"""upstream_tests: tinygrad 0.11.0's own test suite as a differential test of tgc's scheduler.

Approach. The oracle corpus was recorded from tinygrad's tests; this records them again, all of
them, on this machine. It fetches tinygrad 0.11.0's source distribution from PyPI (it holds test/),
runs the chosen test modules under pytest with tools/upstream/tgc_record.py loaded, which writes
every sink Tensor.kernelize schedules as a graph file, and then asks tinygrad (tgc_graph.oracle, in
fresh processes) for each graph's expect file. `build/conformance OUTDIR` then scores tgc on them.
With --data the realized inputs are recorded too, and tinygrad's values, so `build/conformance
--numeric cpu OUTDIR` also runs each graph tgc can run whole on the CPU and compares the values.
A graph tinygrad refuses when it schedules it again (an assign cycle, a bad shrink of a sharded
axis, a bind mismatch) goes to OUTDIR/refused/, and tgc must refuse it too: exit 3 and a message.

The sdist leaves out test/helpers.py and examples/gpt2.py; tools/upstream/ holds stand-ins for the
names the tests import. Modules that need other parts of tinygrad's repository (extra/, more of
examples/) fail to import and are reported as such; test_ops and a few others need torch.

CLI:  upstream_tests.py OUTDIR [--tests assign,schedule,...] [--data] [--tgc build/tgc] [--src DIR] [--timeout S]
Needs tinygrad 0.11.0, numpy, pytest and hypothesis (torch for test_ops, test_nn, test_tensor ...).
"""
from __future__ import annotations
import argparse, multiprocessing as mp, os, pathlib, re, select, shutil, subprocess, sys, tarfile, time

HERE = pathlib.Path(__file__).resolve().parent
# the modules the oracle corpus was recorded from, then the rest of test/ that schedules tensors on the CPU
CORPUS_TESTS = ["ops", "schedule", "symbolic_ops", "multitensor", "softmax_fusion", "arange", "fusion_op", "tensor_variable"]
MORE_TESTS = ["assign", "setitem", "symbolic_jit", "linearizer", "const_folding", "gc", "subbuffer", "winograd", "edgecases",
              "outerworld_range", "memory_planner", "tensor_uop", "tiny", "sample", "specific_conv", "linalg", "transcendental",
              "jit_cases", "pickle", "zero_copy", "to_numpy", "tensor_data", "define_reg", "uops", "kernel_cache", "nn", "tensor",
              "optim", "dtype", "randomness"]

def fetch_source(dest:pathlib.Path) -> pathlib.Path:
  """tinygrad 0.11.0's sdist unpacked under dest (downloaded once), with the stand-ins in place."""
  root = dest / "tinygrad-0.11.0"
  if not (root / "test").is_dir():
    dest.mkdir(parents=True, exist_ok=True)
    subprocess.run([sys.executable, "-m", "pip", "download", "-q", "tinygrad==0.11.0", "--no-binary", ":all:", "--no-deps", "-d", str(dest)], check=True)
    with tarfile.open(dest / "tinygrad-0.11.0.tar.gz") as tf: tf.extractall(dest, filter="data")
  for d in ("test", "examples"):
    (root / d).mkdir(exist_ok=True)
    (root / d / "__init__.py").touch()
  shutil.copy(HERE / "upstream" / "test_helpers.py", root / "test" / "helpers.py")
  shutil.copy(HERE / "upstream" / "examples_gpt2.py", root / "examples" / "gpt2.py")
  return root

def record(root:pathlib.Path, out:pathlib.Path, tests:list[str], timeout:int, data:bool) -> None:
  env = dict(os.environ, CPU="1", TGC_RECORD_DIR=str(out.resolve()), TGC_RECORD_DATA="1" if data else "0", PYTHONPATH=str(HERE / "upstream"))
  for t in tests:
    if not (root / "test" / f"test_{t}.py").exists():
      print(f"test_{t:<18} not in tinygrad 0.11.0's test/", flush=True)
      continue
    before, st = len(list(out.glob("*.graph.json"))), time.monotonic()
    try:
      p = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "tgc_record", "-p", "no:cacheprovider", f"test/test_{t}.py"],
                         cwd=root, env=env, capture_output=True, text=True, timeout=timeout)
      lines = [ln for ln in p.stdout.splitlines() if ln.strip()]
      summary = lines[-1] if lines else p.stderr.strip()[-200:]
      if m := re.search(r"(ModuleNotFoundError|ImportError): .*", p.stdout): summary += f" ({m.group(0)[:80]})"
    except subprocess.TimeoutExpired: summary = f"timed out after {timeout} s"
    got = len(list(out.glob("*.graph.json"))) - before
    print(f"test_{t:<18} {got:5d} new graphs  {time.monotonic()-st:6.0f} s  {summary}", flush=True)

def _oracle_in_child(path:pathlib.Path, outputs:bool, timeout:float) -> str|None:
  """tgc_graph.oracle for one graph in a forked child (tinygrad is imported already), so a graph whose
  kernels crash tinygrad's runtime or run for minutes costs only that child; None or the error"""
  import tgc_graph
  r, w = os.pipe()
  pid = os.fork()
  if pid == 0:
    os.close(r)
    null = os.open(os.devnull, os.O_WRONLY)  # tinygrad's reports on kernels it cannot run here (bf16 on the CPU, 2**31 elements)
    os.dup2(null, 1)
    os.dup2(null, 2)
    try:
      doc = tgc_graph.oracle(path, outputs=None if outputs else False)
      path.with_name(path.name.replace(".graph.json", ".expect.json")).write_text(tgc_graph._dumps(doc))
      msg = b""
    except BaseException as e:
      msg = f"{type(e).__name__}: {str(e).splitlines()[0][:160] if str(e) else ''}".encode()
    os.write(w, msg or b"ok")
    os._exit(0)
  os.close(w)
  deadline, out = time.monotonic() + timeout, b""
  while True:
    left = deadline - time.monotonic()
    if left <= 0 or not select.select([r], [], [], left)[0]:
      os.kill(pid, 9)
      out = b"timed out"
      break
    chunk = os.read(r, 4096)
    if not chunk: break
    out += chunk
  os.close(r)
  os.waitpid(pid, 0)
  return None if out == b"ok" else (out.decode(errors="replace") or "the oracle process died")

def _expect(path:pathlib.Path) -> tuple[pathlib.Path, str|None]:
  """the expect file for one graph: with tinygrad's values where it carries its inputs' data and
  tinygrad can run it, else the schedule alone; the error where tinygrad refuses to schedule it"""
  if str(HERE) not in sys.path: sys.path.insert(0, str(HERE))
  import tgc_graph  # noqa: F401  (imported once per worker, before forking)
  if _oracle_in_child(path, True, 120) is None: return path, None
  return path, _oracle_in_child(path, False, 120)

def make_expects(out:pathlib.Path, jobs:int) -> list[tuple[pathlib.Path, str]]:
  todo = [p for p in sorted(out.glob("*.graph.json")) if not p.with_name(p.name.replace(".graph.json", ".expect.json")).exists()]
  refused = []
  with mp.get_context("spawn").Pool(jobs, maxtasksperchild=50) as pool:  # fresh processes: no metadata leaks between graphs
    for path, err in pool.imap_unordered(_expect, todo):
      if err is not None:
        (out / "refused").mkdir(exist_ok=True)
        for npy in out.glob(path.name[:-len("graph.json")] + "buf*.npy"): npy.replace(out / "refused" / npy.name)
        refused.append((path.replace(out / "refused" / path.name), err))
  return refused

def check_refused(out:pathlib.Path, tgc:str) -> int:
  """Each graph tinygrad refuses, tgc must refuse too (exit 3, a message on stderr); returns the failures."""
  bad = 0
  for g in sorted((out / "refused").glob("*.graph.json")) if (out / "refused").is_dir() else []:
    p = subprocess.run([tgc, "schedule", str(g), "-o", os.devnull], capture_output=True, text=True, timeout=60)
    ok = p.returncode == 3 and p.stderr.strip()
    bad += not ok
    print(f"  {'ok  ' if ok else 'FAIL'} refused: {g.name[:-11]}: tgc exit {p.returncode}: {p.stderr.strip().splitlines()[0][:120] if p.stderr.strip() else ''}")
  return bad

def main(argv:list[str]|None=None) -> int:
  ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
  ap.add_argument("out", type=pathlib.Path)
  ap.add_argument("--tests", default=",".join(CORPUS_TESTS + MORE_TESTS), help="test modules, without test_ (default: all it knows)")
  ap.add_argument("--src", type=pathlib.Path, default=pathlib.Path("build/upstream-src"), help="where the sdist is unpacked")
  ap.add_argument("--tgc", default="build/tgc")
  ap.add_argument("--timeout", type=int, default=3600, help="seconds per test module")
  ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
  ap.add_argument("--data", action="store_true", help="record the inputs' data and tinygrad's values too (for --numeric)")
  a = ap.parse_args(argv)
  a.out.mkdir(parents=True, exist_ok=True)
  root = fetch_source(a.src)
  record(root, a.out, [t.strip() for t in a.tests.split(",") if t.strip()], a.timeout, a.data)
  refused = make_expects(a.out, a.jobs)
  for path, err in refused: print(f"tinygrad refuses {path.name[:-11]}: {err}")
  n = len(list(a.out.glob("*.expect.json")))
  print(f"{n} graphs with tinygrad's expect file in {a.out}; {len(list((a.out / 'refused').glob('*.graph.json'))) if (a.out / 'refused').is_dir() else 0} refused by tinygrad")
  return 1 if check_refused(a.out, a.tgc) else 0

if __name__ == "__main__":
  sys.exit(main())
