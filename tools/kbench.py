#!/usr/bin/env python3
"""kbench.py: speed of the kernels tgc emits, side by side with tinygrad 0.11.0's CPU backend and
numpy, for `make bench-kernels` (issue: fast kernels).

Approach. Each workload is built once in tinygrad on CPU with random inputs that are realized
first, and exported (tools/tgc_graph.py export, data as .npy files) as a graph whose only work is
the workload. Then, in the same run:
  tgc       `tgc run GRAPH -d cpu --repeat N [--threads T]`: the schedule rerun N times after a first
            run that compiles every kernel; the median wall time of one schedule run.
  tinygrad  the same expression built again, scheduled and lowered once (compiling every kernel),
            then its ExecItems run N times on CPU (CPU=1, default opts); the median.
  numpy     the same math in numpy (OpenBLAS for matmul when installed); the median.
After one warm-up each. The machine is noisy: compare the ratios (peer time / tgc time).
A plain copy of 16M floats in numpy measures the memory bandwidth the GB/s column is judged by.

tgc's kernels add every float sum in tinygrad's order (its exact values), as `tgc run` does by
default; with --fast-sums the tgc columns run `tgc run --fast-sums` (vectorized sums, reordered).

With --beam N a second tgc column times the same graph under `tgc run --beam N` (each kernel's
opts chosen by timing candidates on this CPU; the first run searches, later runs read the cache).

With --rounds R every cell (and the copy line, before each workload) is measured R times, the
peers interleaved, and the medians are reported: on a shared 2-core VM one round can be 2x off.

  kbench.py [--tgc build/tgc] [--repeat N] [--threads T] [--beam N] [--fast-sums] [--rounds R] [--only NAME,...] [--json FILE]
"""
from __future__ import annotations
import argparse, json, math, os, pathlib, re, statistics, subprocess, sys, tempfile, time

os.environ.setdefault("CPU", "1")
import numpy as np

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))


def settle():
  """A pause before each measurement: right after numpy's BLAS (its threads spin a while) or another
  process, a 2-thread tgc run measured up to 2x slower on the 2-core machine."""
  time.sleep(0.5)


def median_ms(fn, repeat: int) -> float:
  settle()
  fn()  # warm-up
  ts = []
  for _ in range(repeat):
    t0 = time.perf_counter()
    fn()
    ts.append((time.perf_counter() - t0) * 1e3)
  return statistics.median(ts)


# name -> (inputs (shapes), tinygrad fn, numpy fn or None, flops or None, bytes moved or None)
def workloads():
  from tinygrad import Tensor, nn

  def conv_np(x, w):  # 3x3, pad 1, stride 1, via a sliding window and a tensordot
    xp = np.pad(x, ((0, 0), (0, 0), (1, 1), (1, 1)))
    win = np.lib.stride_tricks.sliding_window_view(xp, (3, 3), axis=(2, 3))  # N C H W 3 3
    return np.tensordot(win, w, axes=([1, 4, 5], [1, 2, 3])).transpose(0, 3, 1, 2)

  def softmax_np(x):
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)

  def layernorm_np(x):
    m = x.mean(axis=-1, keepdims=True)
    v = ((x - m) ** 2).mean(axis=-1, keepdims=True)
    return (x - m) / np.sqrt(v + 1e-5)

  W = {
    "matmul_512": ([(512, 512), (512, 512)], lambda a, b: a @ b, lambda a, b: a @ b, 2 * 512**3, None),
    "matmul_1024": ([(1024, 1024), (1024, 1024)], lambda a, b: a @ b, lambda a, b: a @ b, 2 * 1024**3, None),
    "conv2d_64x56": ([(1, 64, 56, 56), (64, 64, 3, 3)], lambda x, w: x.conv2d(w, padding=1), conv_np,
                     2 * 64 * 56 * 56 * 64 * 9, None),
    "softmax_4096x1024": ([(4096, 1024)], lambda x: x.softmax(-1), softmax_np, None, 2 * 4096 * 1024 * 4),
    "layernorm_4096x1024": ([(4096, 1024)], lambda x: x.layernorm(), layernorm_np, None, 2 * 4096 * 1024 * 4),
    # one exp2 per element (tinygrad's xexp2, as its CPU backend computes it): softmax evaluates it twice
    # per element, so twice this row's time bounds softmax from below
    "exp2_4096x1024": ([(4096, 1024)], lambda x: x.exp2(), np.exp2, None, 2 * 4096 * 1024 * 4),
    "add_16M": ([(1 << 24,), (1 << 24,)], lambda a, b: a + b, lambda a, b: a + b, None, 3 * (1 << 24) * 4),
    "sum_16M": ([(1 << 24,)], lambda a: a.sum(), lambda a: a.sum(), None, (1 << 24) * 4),
  }
  return W


def mnist_step(batch: int):
  """tinygrad's beautiful_mnist CNN, one Adam step on a random batch: (step fn, tensors to realize first)."""
  from tinygrad import Tensor, nn, dtypes
  from tinygrad.nn.state import get_parameters

  class Model:
    def __init__(self):
      self.layers = [nn.Conv2d(1, 32, 5), Tensor.relu, nn.Conv2d(32, 32, 5), nn.BatchNorm(32), Tensor.max_pool2d,
                     nn.Conv2d(32, 64, 3), Tensor.relu, nn.Conv2d(64, 64, 3), nn.BatchNorm(64), Tensor.max_pool2d,
                     lambda x: x.flatten(1), nn.Linear(576, 10)]

    def __call__(self, x): return x.sequential(self.layers)

  Tensor.manual_seed(0)
  model = Model()
  opt = nn.optim.Adam(get_parameters(model))
  x = Tensor.randn(batch, 1, 28, 28).realize()
  y = Tensor.randint(batch, high=10).realize()

  def step():
    opt.zero_grad()
    loss = model(x).sparse_categorical_crossentropy(y).backward()
    return [loss] + opt.schedule_step()
  return step


def tg_runner(outs, repeat):
  from tinygrad import Device
  from tinygrad.engine.realize import lower_schedule_item
  from tinygrad import Tensor
  sched, var_vals = Tensor.schedule_with_vars(*outs)
  eis = [lower_schedule_item(si) for si in sched]
  dev = Device["CPU"]

  def run():
    for ei in eis: ei.run(var_vals, do_update_stats=False)
    dev.synchronize()
  return median_ms(run, repeat)


def tgc_time(tgc, graph, repeat, threads, outdir, beam=0, fast_sums=False):
  settle()
  cmd = [tgc, "run", str(graph), "-d", "cpu", "-o", str(outdir), "--repeat", str(repeat)]
  if threads: cmd += ["--threads", str(threads)]
  if fast_sums: cmd += ["--fast-sums"]
  if beam: cmd += ["--beam", str(beam)]
  p = subprocess.run(cmd, capture_output=True, text=True)
  if p.returncode: raise RuntimeError(f"{' '.join(cmd)}: exit {p.returncode}: {p.stderr.strip()}")
  m = re.search(r"median ([0-9.]+) ms", p.stderr)
  if not m: raise RuntimeError(f"no timing in: {p.stderr}")
  return float(m.group(1))


def main(argv=None):
  ap = argparse.ArgumentParser(prog="kbench.py")
  ap.add_argument("--tgc", default="build/tgc")
  ap.add_argument("--repeat", type=int, default=10)
  ap.add_argument("--threads", type=int, default=0, help="tgc --threads (0: all cores)")
  ap.add_argument("--beam", type=int, default=0, help="also time tgc run --beam N")
  ap.add_argument("--fast-sums", action="store_true", help="tgc runs with --fast-sums (vectorized float sums, reordered)")
  ap.add_argument("--only", default="")
  ap.add_argument("--mnist-batch", type=int, default=128)
  ap.add_argument("--rounds", type=int, default=1, help="measure every cell this many times, interleaved, and report medians")
  ap.add_argument("--json", default="")
  a = ap.parse_args(argv)
  from tinygrad import Tensor
  import tgc_graph
  only = set(a.only.split(",")) if a.only else None
  rng = np.random.default_rng(0)
  rows = []
  tmp = pathlib.Path(tempfile.mkdtemp(prefix="tgc-kbench."))
  src = rng.standard_normal(1 << 24, dtype=np.float32)
  dst = np.empty_like(src)
  med = statistics.median
  copies = []
  for name, (shapes, tg_fn, np_fn, flops, nbytes) in workloads().items():
    if only and name not in only: continue
    arrs = [rng.standard_normal(s, dtype=np.float32) for s in shapes]
    g = tmp / f"{name}.graph.json"
    ins = [Tensor(x).realize() for x in arrs]
    tgc_graph.export([tg_fn(*ins)], g, with_data="npy")
    cells = []
    for _ in range(a.rounds):  # rounds interleave the peers, so a noisy stretch hits all of them
      copies.append(median_ms(lambda: np.copyto(dst, src), a.repeat))
      cells.append((tgc_time(a.tgc, g, a.repeat, a.threads, tmp / name, fast_sums=a.fast_sums),
                    tgc_time(a.tgc, g, a.repeat, a.threads, tmp / name, a.beam, a.fast_sums) if a.beam else None,
                    tg_runner([tg_fn(*[Tensor(x).realize() for x in arrs])], a.repeat),
                    median_ms(lambda: np_fn(*arrs), a.repeat) if np_fn else None))
    t_tgc, t_beam, t_tg, t_np = (med([c[k] for c in cells]) if cells[0][k] is not None else None for k in range(4))
    rows.append((name, t_tgc, t_tg, t_np, flops, nbytes, t_beam))
  if not only or "mnist_step" in only:
    step = mnist_step(a.mnist_batch)
    Tensor.training = True
    Tensor.realize(*step())  # the optimizer state exists from here on
    g = tmp / "mnist_step.graph.json"
    tgc_graph.export(step(), g, with_data="npy")
    cells = []
    for _ in range(a.rounds):
      cells.append((tgc_time(a.tgc, g, a.repeat, a.threads, tmp / "mnist", fast_sums=a.fast_sums),
                    tgc_time(a.tgc, g, a.repeat, a.threads, tmp / "mnist", a.beam, a.fast_sums) if a.beam else None,
                    tg_runner(step(), a.repeat)))
    rows.append((f"mnist_step_b{a.mnist_batch}", med([c[0] for c in cells]), med([c[2] for c in cells]), None, None, None,
                 med([c[1] for c in cells]) if a.beam else None))
  if not copies: copies.append(median_ms(lambda: np.copyto(dst, src), a.repeat))
  copy_ms = med(copies)
  copy_gbs = 2 * src.nbytes / copy_ms / 1e6
  print(f"copy 16M floats (numpy): {copy_ms:.2f} ms, {copy_gbs:.1f} GB/s (the bandwidth line; median of {len(copies)})")
  bcol = f" {'beam_ms':>9} {'beam_x_np':>9}" if a.beam else ""
  print(f"{'workload':22} {'tgc_ms':>9} {'tinygrad_ms':>12} {'numpy_ms':>9} {'tgc GFLOP/s|GB/s':>17} {'%bw':>5} {'x_tinygrad':>10} {'x_numpy':>8}{bcol}")
  ratios = []
  out = []
  for name, t, tg, tn, flops, nbytes, tb in rows:
    rate = f"{flops / t / 1e6:.1f} GFLOP/s" if flops else f"{nbytes / t / 1e6:.1f} GB/s" if nbytes else "-"
    bw = f"{100 * nbytes / t / 1e6 / copy_gbs:.0f}" if nbytes else "-"
    ratios.append(tg / t)
    bc = f" {tb:9.3f} {(tn / tb) if tn else float('nan'):9.2f}" if a.beam else ""
    print(f"{name:22} {t:9.3f} {tg:12.3f} {tn if tn is not None else float('nan'):9.3f} {rate:>17} {bw:>5} {tg / t:10.2f} {(tn / t) if tn else float('nan'):8.2f}{bc}")
    out.append({"workload": name, "tgc_ms": t, "tinygrad_ms": tg, "numpy_ms": tn, "flops": flops, "bytes": nbytes, "tgc_beam_ms": tb})
  gm = math.exp(sum(math.log(r) for r in ratios) / len(ratios)) if ratios else float("nan")
  print(f"geometric mean of tinygrad_ms / tgc_ms: {gm:.2f}")
  if a.json: pathlib.Path(a.json).write_text(json.dumps({"copy_gbs": copy_gbs, "rows": out, "geomean_vs_tinygrad": gm}, indent=1))
  return 0


if __name__ == "__main__":
  sys.exit(main())
