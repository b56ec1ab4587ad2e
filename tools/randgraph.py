#!/usr/bin/env python3
"""randgraph: random tinygrad 0.11.0 tensor programs, exported with their oracle, for differential
testing of tgc's scheduler on graphs the corpus does not hold.

Approach. A program starts from one to three inputs (Tensor.empty, or small realized arrays with
--numeric) and applies a random chain of ops drawn from a pool that covers what the scheduler has to
get right: elementwise ALU and casts, broadcasting binary ops, reductions over random axes (sum, max,
mean, argmax, softmax, cumsum: arange fusion), movement ops (reshape, permute, expand, pad, shrink,
flip), matmul, conv2d, cat, where, contiguous/realize points and several outputs in one sink. Each
draw is seeded, so a failing seed reproduces exactly. --extended adds the graph kinds training and
model code makes: integer arithmetic and bit ops, bitcasts, in-place assign and setitem, a Variable
shrink, detach, one_hot, half reductions, programs sharded over two CPUs (MULTI), and a backward pass
(gradients of a scalar loss with respect to some inputs). For each seed the program's sink goes through
tools/tgc_graph.py export (NAME.graph.json) and oracle (NAME.expect.json), and the folder can then be
scored with `build/conformance DIR` (or ../shared/tools/score.py). Each seed runs in a forked child
(a fresh tinygrad, so its files depend on the seed alone) under memory and CPU-time limits, and the
oracle runs only once the program's own tensors are gone, so it sees what the file holds.

CLI:  randgraph.py OUTDIR --seeds A:B [--numeric] [--ops N] [--extended] [--options] [--mem-limit-gb G] [--cpu-limit-s S]
Needs tinygrad 0.11.0 and numpy.
"""
from __future__ import annotations
import argparse, gc, os, pathlib, random, sys, traceback, weakref

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
os.environ.setdefault("CPU", "1")  # tinygrad's default device must be the CPU for --numeric outputs; DEV=... in the env overrides
import numpy as np  # noqa: E402
from tinygrad import Tensor, dtypes  # noqa: E402
import tgc_graph  # noqa: E402


class Gen:
  def __init__(self, seed:int, numeric:bool, nops:int, extended:bool=False):
    self.r, self.numeric, self.nops, self.extended = random.Random(seed), numeric, nops, extended
    self.devices: tuple[str, ...]|None = None  # --extended: a program may run sharded over two CPUs
    self.grad_leaves: list[Tensor] = []

  def shape(self, ndim:int|None=None) -> tuple[int, ...]:
    nd = ndim if ndim is not None else self.r.randint(1, 4)
    return tuple(self.r.choice([1, 2, 3, 4, 5, 8, 16, 32] if self.r.random() < 0.9 else [64, 128, 256, 1024]) for _ in range(nd))

  def leaf(self, shape, dtype=dtypes.float32) -> Tensor:
    if self.numeric:
      a = np.random.default_rng(self.r.randint(0, 1 << 30)).standard_normal(shape).astype(np.float32)
      t = Tensor(a).realize()
      t = t.cast(dtype) if dtype != dtypes.float32 else t
    else:
      t = Tensor.empty(*shape, dtype=dtype)
    if self.devices is not None: t = t.shard(self.devices)  # replicated on every device
    if self.extended and dtype == dtypes.float32 and self.r.random() < 0.15:
      t.requires_grad = True
      self.grad_leaves.append(t)
    return t

  def like(self, t:Tensor) -> Tensor:
    """another operand broadcastable to t: t's shape with some dims 1, or fewer leading dims"""
    shp = list(t.shape)
    for i in range(len(shp)):
      if self.r.random() < 0.3: shp[i] = 1
    if shp and self.r.random() < 0.2: shp = shp[self.r.randint(0, len(shp) - 1):]
    return self.leaf(tuple(shp))

  def axis(self, t:Tensor) -> int: return self.r.randrange(t.ndim)

  def extra(self, t:Tensor, pool:list[Tensor]) -> Tensor:
    """--extended steps: integer arithmetic and bit ops, bitcasts, in-place assigns (whole and
    sliced), a symbolic (Variable) shrink, detach and one_hot/arange"""
    r, nd = self.r, t.ndim
    k = r.choice(["int", "int", "bitcast", "assign", "assign", "setitem", "var", "detach", "onehot", "half"])
    if k in ("int", "bitcast", "onehot"): t = t.detach()  # no gradient through integers and bitcasts
    if k == "int":
      # uint8 only without data: tinygrad's C renders narrow unsigned arithmetic without casts, so its
      # values follow C's int promotion where a uint8 result overflows (x + q*253 for x % 3), which
      # tgc's kernels (computing in uint8) do not reproduce
      i = (t * r.choice([3, 7, 100])).cast(r.choice([dtypes.int32, dtypes.int32, dtypes.int64] + ([] if self.numeric else [dtypes.uint8])))
      c = r.choice([2, 3, 5, 8])
      op = r.choice(["idiv", "mod", "and", "or", "xor", "shl", "shr", "max", "lt"])
      if op == "idiv": i = i // c
      elif op == "mod": i = i % c
      elif op == "and": i = i & c
      elif op == "or": i = i | c
      elif op == "xor": i = i ^ c
      elif op == "shl": i = i << r.choice([1, 2])
      elif op == "shr": i = i >> r.choice([1, 2])
      elif op == "max": i = i.maximum(c)
      else: i = (i < c)
      return i.cast(dtypes.float32)
    if k == "bitcast":
      return (t.bitcast(dtypes.uint32) & 0x7fffffff).bitcast(dtypes.float32) if r.random() < 0.5 else t.bitcast(dtypes.int32).cast(dtypes.float32)
    if k == "assign":
      b = self.leaf(t.shape)
      b = b.detach() if b.requires_grad else b
      if not self.numeric: b = b.realize()
      return b.assign(b * r.choice([0.5, 1.0]) + t.detach())
    if k == "setitem" and nd and t.shape[0] >= 2:
      b = self.leaf(t.shape)
      b = b.detach() if b.requires_grad else b
      if not self.numeric: b = b.realize()
      a = r.randint(0, t.shape[0] - 1)
      b[a:a + 1] = t.detach()[0:1]
      return b
    if k == "var" and nd and t.shape[0] >= 2 and self.devices is None:
      from tinygrad import Variable
      v = Variable("n", 1, t.shape[0]).bind(r.randint(1, t.shape[0]))
      x = t.shrink(((0, v),) + (None,) * (nd - 1))
      return (x.sum(0) if r.random() < 0.5 else x.exp().max(0)).contiguous()
    if k == "detach": return t.detach() + t
    if k == "onehot" and nd:
      n = r.choice([3, 4, 10])
      return (t.abs() * n).cast(dtypes.int32).clip(0, n - 1).one_hot(n).cast(dtypes.float32)
    if k == "half": return (t.cast(dtypes.half) * 2).sum(axis=self.axis(t) if nd else None).cast(dtypes.float32)
    return t

  def step(self, t:Tensor, pool:list[Tensor]) -> Tensor:
    r, nd = self.r, t.ndim
    if self.extended and r.random() < 0.3: return self.extra(t, pool)
    k = r.choice(["unary", "unary", "binary", "binary", "const", "reduce", "reduce", "movement", "movement", "movement",
                  "matmul", "softmax", "cumsum", "argmax", "where", "cat", "contiguous", "cast", "pool", "conv", "gather"])
    if k == "unary": return getattr(t, r.choice(["exp", "log", "relu", "sqrt", "sin", "neg", "reciprocal", "sigmoid", "tanh", "abs", "square", "exp2"]))()
    if k == "binary":
      o = r.choice(pool) if pool and r.random() < 0.3 and pool[-1].shape == t.shape else self.like(t)
      if r.random() < 0.5: t, o = o, t
      return getattr(t, r.choice(["add", "mul", "sub", "maximum", "div"]))(o)
    if k == "const": return r.choice([lambda x: x + 1.5, lambda x: x * 2, lambda x: x - 0.5, lambda x: 3 - x, lambda x: x.maximum(0.0)])(t)
    if k == "reduce":
      fn = r.choice(["sum", "max", "mean", "min", "std"])
      ax = None if r.random() < 0.2 else self.axis(t)
      return getattr(t, fn)(axis=ax, keepdim=r.random() < 0.5) if nd else t
    if k == "movement":
      m = r.choice(["reshape", "permute", "expand", "pad", "shrink", "flip", "transpose", "unsqueeze", "repeat"])
      if m == "reshape":
        n = t.numel()
        shp = [n] if r.random() < 0.4 else None
        if shp is None:
          divs = [d for d in range(1, n + 1) if n % d == 0]
          a = r.choice(divs)
          shp = [a, n // a]
        return t.reshape(*shp)
      if m == "permute" and nd > 1:
        p = list(range(nd)); r.shuffle(p)
        return t.permute(*p)
      if m == "expand":
        return t.reshape(1, *t.shape).expand(r.choice([2, 3, 4]), *t.shape)
      if m == "pad":
        return t.pad(tuple((r.randint(0, 2), r.randint(0, 2)) if r.random() < 0.6 else None for _ in range(nd)), value=r.choice([0.0, 0.0, 1.0]))
      if m == "shrink":
        arg = []
        for s in t.shape:
          a = r.randint(0, s - 1); b = r.randint(a + 1, s)
          arg.append((a, b) if r.random() < 0.6 else None)
        return t.shrink(tuple(arg))
      if m == "flip": return t.flip(self.axis(t))
      if m == "transpose" and nd > 1: return t.transpose(0, nd - 1)
      if m == "unsqueeze": return t.unsqueeze(r.randint(0, nd))
      if m == "repeat" and nd: return t.repeat(*[r.choice([1, 2]) for _ in range(nd)])
      return t
    if k == "matmul":
      if nd == 1: return t @ self.leaf((t.shape[0], r.choice([1, 3, 8])))
      return t @ self.leaf((t.shape[-1], r.choice([1, 4, 8, 16])))
    if k == "softmax": return t.softmax(self.axis(t)) if r.random() < 0.7 else t.log_softmax(self.axis(t))
    if k == "cumsum": return t.cumsum(self.axis(t))
    if k == "argmax": return t.argmax(self.axis(t)).cast(dtypes.float32)
    if k == "where": return (t > r.choice([0.0, 0.5])).where(t, self.like(t))
    if k == "cat":
      ax = self.axis(t)
      shp = list(t.shape); shp[ax] = r.choice([1, 2, 5])
      return t.cat(self.leaf(tuple(shp)), dim=ax)
    if k == "contiguous":
      pool.append(t)
      return t.contiguous()
    if k == "cast": return t.cast(r.choice([dtypes.half, dtypes.int32, dtypes.float32])).cast(dtypes.float32)
    if k == "pool" and nd >= 2 and min(t.shape[-2:]) >= 2:
      x = t.reshape(1, 1, *t.shape[-2:]) if nd == 2 else t.reshape(-1, *t.shape[-3:]) if nd >= 3 else t
      return x.max_pool2d(2) if r.random() < 0.5 else x.avg_pool2d(2)
    if k == "conv" and nd >= 2 and min(t.shape[-2:]) >= 3:
      x = t.reshape(1, -1, *t.shape[-2:])
      cin = x.shape[1]
      w = self.leaf((r.choice([1, 2, 4]), cin, 3, 3))
      return x.conv2d(w, padding=r.choice([0, 1]))
    if k == "gather" and nd >= 1:
      n = t.shape[0]
      idx = Tensor([r.randrange(n) for _ in range(r.choice([1, 2, 3]))], dtype=dtypes.int32)
      return t[idx]
    return t

  def options(self) -> dict[str, int]:
    """scheduler switches for this program: the defaults most of the time, else one or two changed"""
    r, opts = self.r, {}
    for _ in range(r.choice([0, 0, 1, 2])):
      k, v = r.choice([("FUSE_ARANGE", 0), ("SPLIT_REDUCEOP", 0), ("DONT_GROUP_REDUCES", 1), ("DONT_REALIZE_EXPAND", 1),
                       ("FUSE_CONV_BW", 1), ("REDUCEOP_SPLIT_THRESHOLD", r.choice([64, 512, 4096])),
                       ("REDUCEOP_SPLIT_SIZE", r.choice([2, 4, 8])), ("MAX_KERNEL_BUFFERS", r.choice([3, 4, 6]))])
      opts[k] = v
    return opts

  def program(self) -> list[Tensor]:
    r = self.r
    t = self.leaf(self.shape())
    if self.extended and r.random() < 0.2:
      # shard the first input over two CPUs (on an axis it divides, else replicated); later inputs are replicated
      self.devices = ("CPU:0", "CPU:1")
      axes = [i for i, s in enumerate(t.shape) if s % 2 == 0]
      t = t.shard(self.devices, axis=r.choice(axes) if axes and r.random() < 0.8 else None)
    pool: list[Tensor] = []
    outs: list[Tensor] = []
    for _ in range(r.randint(1, self.nops)):
      if t.numel() > (1 << 16 if self.numeric else 1 << 20) or t.ndim > 6: t = t.sum()
      if t.ndim == 0: t = t.reshape(1)
      t = self.step(t, pool)
      if r.random() < 0.1: outs.append(t)
    outs.append(t)
    outs = outs[-3:]
    if self.grad_leaves and r.random() < 0.7:
      # a backward pass: gradients of a scalar loss with respect to some inputs
      loss = outs[-1].float().sum() if outs[-1].dtype != dtypes.float32 else outs[-1].sum()
      grads = []
      for x in self.grad_leaves[:3]:
        try: grads += list(loss.gradient(x))
        except RuntimeError: pass  # x is not on a differentiable path to the loss
      outs = outs[:-1] + [loss] + grads
    return outs


def make_one(out:pathlib.Path, name:str, seed:int, a) -> bool:
  """Writes NAME.graph.json and NAME.expect.json for one seed; False (files removed) when tinygrad refuses the program."""
  try:
    g = Gen(seed, a.numeric, a.ops, a.extended)
    opts = g.options() if a.options else {}
    with tgc_graph.options(opts):
      outs = g.program()
      tgc_graph.export(outs, out / f"{name}.graph.json", with_data="inline" if a.numeric else False)
    # the oracle must see the graph file alone: a program's UOps still alive would come back from the
    # load (UOps are hash-consed) with the metadata tinygrad gave them while the program ran
    # (tinygrad's all_metadata), which the file need not hold
    probe = weakref.ref(outs[0].uop)
    del outs, g
    gc.collect()
    if probe() is not None: raise RuntimeError("the program's graph outlived its export")
    doc = tgc_graph.oracle(out / f"{name}.graph.json", outputs=None)
    (out / f"{name}.expect.json").write_text(tgc_graph._dumps(doc))
    return True
  except Exception as e:  # a program tinygrad itself refuses is skipped, not a tgc failure
    skip(out, name, f"{type(e).__name__}: {str(e)[:120]}")
    if os.environ.get("RANDGRAPH_TRACE"): traceback.print_exc()
    return False

def skip(out:pathlib.Path, name:str, why:str):
  """a seed with no graph: its files (if any were written) are removed, and why is said"""
  for f in (out / f"{name}.graph.json", out / f"{name}.expect.json"):
    if f.exists(): f.unlink()
  print(f"{name}: skipped ({why})", file=sys.stderr)

def make_one_limited(out:pathlib.Path, name:str, seed:int, a) -> bool:
  """make_one in a forked child under memory and CPU-time limits. Some option sets send tinygrad into
  an endless rewrite (split_reduceop splitting its own result again under a low
  REDUCEOP_SPLIT_THRESHOLD) that grows until the machine runs out of memory; in a child, the limits end
  it (a MemoryError, or SIGXCPU) and the seed is skipped like any program tinygrad refuses, while this
  process, whose allocator a failed allocation could leave broken, goes on untouched."""
  import resource
  sys.stdout.flush(); sys.stderr.flush()
  pid = os.fork()
  if pid == 0:
    code = 1
    try:
      mem = int(a.mem_limit_gb * 2**30)
      resource.setrlimit(resource.RLIMIT_AS, (mem, mem))
      resource.setrlimit(resource.RLIMIT_CPU, (a.cpu_limit_s, a.cpu_limit_s + 5))
      code = 0 if make_one(out, name, seed, a) else 1
    except BaseException as e:
      skip(out, name, f"{type(e).__name__}: {str(e)[:120]}")
    finally:
      sys.stdout.flush(); sys.stderr.flush()
      os._exit(code)
  _, status = os.waitpid(pid, 0)
  if os.WIFSIGNALED(status):
    skip(out, name, f"killed by signal {os.WTERMSIG(status)}: over {a.mem_limit_gb:g} GB or {a.cpu_limit_s} s of CPU")
  return os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0

def main(argv=None) -> int:
  ap = argparse.ArgumentParser(prog="randgraph.py", description=__doc__.split("\n\n")[0])
  ap.add_argument("outdir")
  ap.add_argument("--seeds", default="0:50", help="A:B, the seeds A..B-1")
  ap.add_argument("--numeric", action="store_true", help="realized inputs with data, so expect files record outputs")
  ap.add_argument("--ops", type=int, default=8, help="the most ops in one program")
  ap.add_argument("--extended", action="store_true", help="also integer/bit ops, bitcasts, assigns, Variables, sharding over two CPUs, gradients")
  ap.add_argument("--options", action="store_true", help="vary the scheduler switches (FUSE_ARANGE, SPLIT_REDUCEOP, ...) by seed")
  ap.add_argument("--mem-limit-gb", type=float, default=8, help="each seed runs in a child process with this much address space "
                  "(0: every seed in this process, no limits); a program tinygrad cannot handle within the limits is skipped")
  ap.add_argument("--cpu-limit-s", type=int, default=120, help="the CPU seconds a seed's child may take")
  a = ap.parse_args(argv)
  out = pathlib.Path(a.outdir); out.mkdir(parents=True, exist_ok=True)
  lo, hi = (int(x) for x in a.seeds.split(":"))
  made = 0
  for seed in range(lo, hi):
    name = f"rand{'n' if a.numeric else ''}{'x' if a.extended else ''}_{seed}"
    made += (make_one_limited if a.mem_limit_gb > 0 else make_one)(out, name, seed, a)
  print(f"{made} graphs in {out}")
  return 0


if __name__ == "__main__": sys.exit(main())
