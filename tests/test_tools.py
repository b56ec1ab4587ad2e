"""Tests for tools/tgc_graph.py (the tinygrad 0.11.0 bridge) and testdata/models/ (pytest; needs tinygrad).

Each generated program is exported, scheduled by tinygrad directly, and its exported graph is
re-scheduled by `tgc_graph.py oracle` in a fresh process: the kernel counts must agree (and equal the
count recorded below from tinygrad 0.11.0). Corpus graphs re-run through the oracle must reproduce
their expect files byte for byte. When build/tgc exists, `tgc check` runs on the exports too.
"""
import glob, json, os, pathlib, subprocess, sys
import pytest
os.environ.setdefault("CPU", "1")  # tinygrad's default device; the corpus is recorded on CPU
pytest.importorskip("tinygrad")
pytest.importorskip("numpy")

ROOT = pathlib.Path(__file__).resolve().parent.parent
ORACLE = pathlib.Path(os.environ.get("TGC_ORACLE", ROOT.parent / "shared" / "oracle"))
TGC = pathlib.Path(os.environ.get("TGC", ROOT / "build" / "tgc"))
TOOL = ROOT / "tools" / "tgc_graph.py"
MODELS = ROOT / "testdata" / "models"
sys.path.insert(0, str(ROOT / "tools"))
import tgc_graph as T  # noqa: E402
from tinygrad import Tensor  # noqa: E402
from tinygrad.uop.ops import Ops  # noqa: E402

def run_tool(*args, check=True):
  r = subprocess.run([sys.executable, str(TOOL), *map(str, args)], capture_output=True, text=True, env={**os.environ, "CPU": "1"})
  if check: assert r.returncode == 0, r.stderr
  return r

# ********** generated programs: (builder, kernels tinygrad 0.11.0 schedules) **********

def p_elementwise(): a = Tensor.empty(16, 16); return [(a + 1) * 2]           # Tensor.empty(16,16)+1)*2 -> 1 kernel
def p_reduce(): return [Tensor.empty(16, 32).sum(axis=1)]                      # .sum(1) -> 1 kernel
def p_matmul(): return [Tensor.empty(8, 16) @ Tensor.empty(16, 4)]             # matmul -> 1 kernel
def p_conv(): return [Tensor.empty(1, 3, 8, 8).conv2d(Tensor.empty(4, 3, 3, 3))]  # conv2d -> 1 kernel
def p_softmax(): return [Tensor.empty(4, 10).softmax(-1)]                      # softmax -> 3 kernels (max, sum, div)
def p_assign():                                                                # a.assign(a+b) -> 1 kernel
  a, b = Tensor.empty(16).realize(), Tensor.empty(16)
  return [a.assign(a + b)]
def p_two_outputs():                                                           # x.sum(), x*2 (shared input) -> 2 kernels
  x = Tensor.empty(32, 8)
  return [x.sum(), x * 2]
def p_symbolic():                                                              # shape (i,4) with i bound to 3 -> 1 kernel
  from tinygrad import Variable
  i = Variable("i", 1, 10).bind(3)
  return [Tensor.empty(10, 4)[:i].contiguous() + 1]

PROGRAMS = {"elementwise": (p_elementwise, 1), "reduce": (p_reduce, 1), "matmul": (p_matmul, 1), "conv": (p_conv, 1),
            "softmax": (p_softmax, 3), "assign": (p_assign, 1), "two_outputs": (p_two_outputs, 2), "symbolic": (p_symbolic, 1)}

def check_graph_doc(doc):
  """The structural rules of FORMATS.md §1 an exported document must satisfy."""
  assert doc["format"] == "tgc.graph" and doc["version"] == 1 and doc["producer"] == "tinygrad 0.11.0"
  assert set(doc["options"]) == set(T.OPTION_DEFAULTS)
  uniques = []
  for i, r in enumerate(doc["uops"]):
    assert r["id"] == i
    assert list(r)[:3] == ["id", "op", "dtype"] and r["op"] in Ops.__members__
    assert all(s < i for s in r.get("src", []))
    for ref in _refs(r.get("arg")): assert ref < i, f"row {i} refers to later row {ref}"
    if r["op"] == "UNIQUE": uniques.append(r["arg"])
  assert uniques == list(range(len(uniques))), "UNIQUEs are renumbered densely in row order"
  assert doc["uops"][doc["sink"]]["op"] == "SINK" and doc["sink"] == len(doc["uops"]) - 1

def _refs(v):
  if isinstance(v, dict):
    if "uop" in v and len(v) == 1: yield v["uop"]
    elif "kernel" in v: yield v["kernel"]["ast"]
    else:
      for x in v.values(): yield from _refs(x)
  elif isinstance(v, list):
    for x in v: yield from _refs(x)

@pytest.mark.parametrize("name", list(PROGRAMS))
def test_export_roundtrip_kernel_count(name, tmp_path):
  fn, want = PROGRAMS[name]
  ts = fn()
  path = tmp_path / f"{name}.graph.json"
  doc = T.export(ts, path)
  check_graph_doc(doc)
  assert path.read_text() == T._dumps(doc)
  # tinygrad on the original tensors
  direct = sum(1 for si in Tensor.schedule_with_vars(*ts)[0] if si.ast.op is Ops.SINK)
  assert direct == want
  # tinygrad on the exported graph, in a fresh process
  out = run_tool("oracle", path, "-o", tmp_path / "e.json").stdout
  assert out.strip() == f"{want} kernels"
  assert json.loads((tmp_path / "e.json").read_text())["kernels"] == want
  # load then export again gives the same file (fresh process: nothing hash-conses with this one's UOps)
  again = tmp_path / "again.graph.json"
  code = f"import sys; sys.path.insert(0, {str(ROOT / 'tools')!r}); import tgc_graph as T; L = T.load_graph({str(path)!r}); T.export(list(L.sink.src), {str(again)!r})"
  subprocess.run([sys.executable, "-c", code], check=True, env={**os.environ, "CPU": "1"})
  assert again.read_text() == path.read_text()
  tgc_check(path, want)

def tgc_check(path, want):
  if not TGC.exists(): return
  r = subprocess.run([str(TGC), "check", str(path), "--kernels", str(want)], capture_output=True, text=True)
  if r.returncode != 0 and "not implemented" in (r.stderr + r.stdout).lower(): pytest.skip(f"tgc: {r.stderr.strip()[:200]}")
  assert r.returncode == 0, f"tgc check {path} --kernels {want}: rc {r.returncode}\n{r.stdout}{r.stderr}"

def test_export_inline_data_is_runnable(tmp_path):
  import numpy as np
  x = Tensor(np.arange(12, dtype=np.float32).reshape(3, 4)).realize()
  path = tmp_path / "d.graph.json"
  doc = T.export([(x * 2).sum(1)], path, with_data="inline")
  assert sum("data" in r for r in doc["uops"]) == 1
  e = T.oracle(path)
  out = np.frombuffer(__import__("base64").b64decode(e["outputs"][0]["bytes"]), np.float32)
  np.testing.assert_array_equal(out, [12, 44, 76])  # (arange(12).reshape(3,4)*2).sum(1)
  assert e["outputs"][0]["shape"] == [3]

def test_export_npy_data(tmp_path):
  import numpy as np
  x = Tensor(np.full((2, 3), 1.5, dtype=np.float32)).realize()
  path = tmp_path / "n.graph.json"
  doc = T.export([x + 1], path, with_data="npy")
  files = [r["data"]["file"] for r in doc["uops"] if "data" in r]
  assert len(files) == 1 and (tmp_path / files[0]).exists()
  e = T.oracle(path)
  np.testing.assert_array_equal(np.frombuffer(__import__("base64").b64decode(e["outputs"][0]["bytes"]), np.float32), [2.5] * 6)

def test_load_bumps_unique_counter(tmp_path):
  from tinygrad.uop.ops import UOp
  path = tmp_path / "u.graph.json"
  T.export([Tensor.empty(4) + Tensor.empty(4)], path)
  L = T.load_graph(path)
  assert L.uniques == {0, 1}
  assert next(UOp.unique_num) > 1

def test_load_rejects_bad_rows(tmp_path):
  good = {"format": "tgc.graph", "version": 1, "uops": [{"id": 0, "op": "SINK", "dtype": "void"}], "sink": 0}
  for bad, msg in ((dict(good, uops=[{"id": 0, "op": "NOPE", "dtype": "void"}]), "row 0 (NOPE): op"),
                   (dict(good, uops=[{"id": 0, "op": "SINK", "dtype": "floaty"}]), "row 0 (SINK): dtype"),
                   (dict(good, uops=[{"id": 0, "op": "SINK", "dtype": "void", "src": [3]}]), "row 0 (SINK): src"),
                   (dict(good, sink=5), "sink")):
    p = tmp_path / "bad.graph.json"
    p.write_text(json.dumps(bad))
    with pytest.raises(T.GraphError, match=msg.replace("(", r"\(").replace(")", r"\)")): T.load_graph(p)
    r = run_tool("oracle", p, check=False)
    assert r.returncode == 3 and msg in r.stderr

@pytest.mark.parametrize("s", ["float", "float.vec(4)", "float.ptr(16)", "float.ptr(16, AddrSpace.LOCAL)", "half.ptr(-1).vec(4)",
                               "float.vec(4).ptr(8)", "imagef((2, 4, 4))", "imageh((1, 8, 4))", "uchar", "bfloat16", "fp8e4m3", "void"])
def test_dtype_strings_roundtrip(s):
  assert T.dtype_str(T.parse_dtype(s)) == s

def corpus_sample(kind, every):
  files = sorted(glob.glob(str(ORACLE / kind / "*.graph.json")))
  if not files: pytest.skip(f"no corpus at {ORACLE}")
  return files[::every]

def test_oracle_reproduces_schedule_corpus():
  ok, n, why = T.validate(corpus_sample("schedule", 80))
  assert ok == n, why

def test_oracle_reproduces_numeric_corpus():
  ok, n, why = T.validate(corpus_sample("numeric", 4))
  assert ok == n, why

def test_oracle_cli_matches_corpus_bytes(tmp_path):
  g = corpus_sample("schedule", 500)[1]
  run_tool("oracle", g, "-o", tmp_path / "x.json")
  assert (tmp_path / "x.json").read_bytes() == pathlib.Path(g.replace(".graph.json", ".expect.json")).read_bytes()

def test_bench_cli():
  g = corpus_sample("numeric", 10)[0]
  out = run_tool("bench", g, "--repeat", "2").stdout.strip()
  n = len(json.loads(pathlib.Path(g).read_text())["uops"])
  assert out.startswith("tinygrad get_kernelize_map: ") and out.endswith(f" ms ({n} uops)")

def test_bench_pair_cli(tmp_path):
  # --pair runs a tgc bench program before each timed run: here a stand-in that prints a known time
  g = corpus_sample("numeric", 10)[0]
  fake = tmp_path / "bench"
  fake.write_text("#!/bin/sh\necho 10 0.1 0.2 1000 1 0.125\n")
  fake.chmod(0o755)
  lines = run_tool("bench", g, "--repeat", "3", "--pair", fake).stdout.strip().splitlines()
  tg = float(lines[0].split(": ")[1].split(" ms")[0])
  assert lines[1].startswith("paired tgc kernelize: 0.125 ms; ratio tinygrad/tgc: median ") and lines[1].endswith("(of 3 pairs)")
  ratio = float(lines[1].split("median ")[1].split(" ")[0])
  assert abs(ratio - tg / 0.125) <= 0.05 + 0.001 * ratio  # each pair's tgc side is 0.125 ms, so the ratio is tinygrad's median over it

# ********** testdata/models **********

MODEL_NAMES = sorted(p.name[:-len(".graph.json")] for p in MODELS.glob("*.graph.json"))

def test_models_present_and_small():
  assert {"mnist_mlp_train", "cnn_train", "resnet18_fwd", "gpt2_fwd", "sharded_matmul", "mlp2_fwd"} <= set(MODEL_NAMES)
  sizes = [p.stat().st_size for p in MODELS.iterdir() if p.is_file()]
  assert max(sizes) < 2 << 20 and sum(sizes) < 10 << 20

@pytest.mark.parametrize("name", MODEL_NAMES)
def test_model_expect_is_current(name, tmp_path):
  g = MODELS / f"{name}.graph.json"
  check_graph_doc(json.loads(g.read_text()))
  run_tool("oracle", g, "-o", tmp_path / "e.json")
  assert (tmp_path / "e.json").read_bytes() == (MODELS / f"{name}.expect.json").read_bytes()
  tgc_check(g, json.loads((MODELS / f"{name}.expect.json").read_text())["kernels"])

ZOO = ROOT / "testdata" / "zoo"
OPENCL = ROOT / "testdata" / "opencl"

@pytest.mark.parametrize("name", ["llama_block", "mlp_sgd_momentum", "sharded_train", "dropout_train"])
def test_zoo_expect_is_current(name, tmp_path):
  g = ZOO / f"{name}.graph.json"
  check_graph_doc(json.loads(g.read_text()))
  run_tool("oracle", g, "-o", tmp_path / "e.json")
  assert (tmp_path / "e.json").read_bytes() == (ZOO / f"{name}.expect.json").read_bytes()

def _tinygrad_gpu() -> bool:
  r = subprocess.run([sys.executable, "-c", "from tinygrad import Device; Device['GPU']"], capture_output=True, text=True)
  return r.returncode == 0

def test_oracle_device_gpu(tmp_path):
  # --device GPU: tinygrad schedules and runs the graph on its OpenCL device (testdata/opencl's values)
  if not _tinygrad_gpu(): pytest.skip("tinygrad has no GPU (OpenCL) device here")
  g = ORACLE / "numeric" / "numeric.matmul.59608b.graph.json"
  run_tool("oracle", g, "--device", "GPU", "-o", tmp_path / "e.json")
  e = json.loads((tmp_path / "e.json").read_text())
  assert "outputs" in e and all(b["buffer"]["device"] == "GPU" for item in e["schedule"] for b in item["bufs"])
  assert e["outputs"] == json.loads((OPENCL / "numeric.matmul.59608b.expect.json").read_text())["outputs"]

def test_model_features():
  ops = {n: {r["op"] for r in json.loads((MODELS / f"{n}.graph.json").read_text())["uops"]} for n in MODEL_NAMES}
  assert "ASSIGN" in ops["cnn_train"] and "ASSIGN" in ops["mnist_mlp_train"]
  assert "MULTI" in ops["sharded_matmul"]
  assert "outputs" in json.loads((MODELS / "mlp2_fwd.expect.json").read_text())

# ********** tests/test_symbolic.c's table is tinygrad's output for testdata/symbolic/cases.txt **********

def test_symbolic_table_matches_tinygrad():
  r = subprocess.run([sys.executable, str(ROOT / "tools" / "symbolic_table.py"), "check"], capture_output=True, text=True)
  assert r.returncode == 0, r.stdout + r.stderr

# ********** tools/randgraph.py: each seed in a child process under limits **********

def test_randgraph_seed_files_depend_on_the_seed_alone(tmp_path):
  """in its own child, a seed's program starts from a fresh tinygrad: generated after other seeds or
  alone, its files are the same (in one process, UOps that earlier programs made keep the metadata
  they were made with, so a graph's metadata would depend on the seeds before it)"""
  import randgraph
  randgraph.main([str(tmp_path / "run"), "--seeds", "10:16", "--ops", "14", "--extended"])
  randgraph.main([str(tmp_path / "alone"), "--seeds", "15:16", "--ops", "14", "--extended"])
  alone = sorted(p.name for p in (tmp_path / "alone").iterdir())
  assert alone == ["randx_15.expect.json", "randx_15.graph.json"]
  for n in alone: assert (tmp_path / "run" / n).read_bytes() == (tmp_path / "alone" / n).read_bytes(), n

def test_randgraph_oracle_sees_the_file_alone(tmp_path):
  """the expect file is what tinygrad makes of the graph file in a fresh process: the generating
  program's UOps, still alive, would bring the metadata tinygrad gave them while it ran (seed 15 of
  --extended --ops 14 then got kernel metadata in another order)"""
  import randgraph
  randgraph.main([str(tmp_path), "--seeds", "15:16", "--ops", "14", "--extended"])
  fresh = run_tool("oracle", tmp_path / "randx_15.graph.json", "-o", tmp_path / "fresh.json")
  assert (tmp_path / "randx_15.expect.json").read_bytes() == (tmp_path / "fresh.json").read_bytes()

def test_randgraph_seed_killed_is_skipped(tmp_path, monkeypatch, capfd):
  """a seed whose child dies (as under the memory or CPU limit) is skipped, leaves no files, and the run goes on"""
  import signal, randgraph
  real = randgraph.make_one
  def dies_on_seed_1(out, name, seed, a):
    if seed == 1:
      (out / f"{name}.graph.json").write_text("partial")
      os.kill(os.getpid(), signal.SIGKILL)
    return real(out, name, seed, a)
  monkeypatch.setattr(randgraph, "make_one", dies_on_seed_1)
  randgraph.main([str(tmp_path), "--seeds", "0:3", "--ops", "8"])
  names = sorted(p.name for p in tmp_path.iterdir())
  assert names == ["rand_0.expect.json", "rand_0.graph.json", "rand_2.expect.json", "rand_2.graph.json"]
  assert "rand_1: skipped (killed by signal 9" in capfd.readouterr().err
