#!/usr/bin/env python3
"""Regenerates the real-model graph files in testdata/models/ with tinygrad 0.11.0 and tools/tgc_graph.py.

Each model is built in a fresh subprocess (tinygrad's UOps are hash-consed process-wide, so metadata
and buffer identities must not leak between models), seeded, on the CPU device, and exported as
NAME.graph.json together with NAME.expect.json from `tgc_graph.py oracle`. Weights are
Tensor.empty buffers without data (inputs), except mlp2_fwd, whose inline data makes it runnable
(its expect file has `outputs`). Training steps export the *second* step: the optimizer state is
realized by a first step, so the graph is one steady-state step (forward, backward, Adam, ASSIGNs).

  python3 testdata/models/make_models.py [NAME...]      (all models when no NAME is given)
"""
import os, sys, subprocess, pathlib
os.environ.setdefault("CPU", "1")  # tinygrad's default device: the corpus is recorded on CPU
HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent.parent / "tools"))

def _params_empty(model):
  """Replaces every tensor of a model's state with an uninitialised CPU buffer of the same shape."""
  from tinygrad import Tensor
  from tinygrad.nn.state import get_state_dict
  for t in get_state_dict(model).values():
    t.replace(Tensor.empty(*t.shape, dtype=t.dtype))

# ********** models **********

def mnist_mlp_train():
  """MNIST MLP 784-128-10, batch 32, one Adam training step."""
  from tinygrad import Tensor, nn
  class MLP:
    def __init__(self): self.l1, self.l2 = nn.Linear(784, 128), nn.Linear(128, 10)
    def __call__(self, x): return self.l2(self.l1(x).relu())
  return _train_step(MLP(), (32, 784), 10, nn.optim.Adam)

def cnn_train():
  """Small CNN (conv 8, conv 16, maxpool, linear) on 1x28x28, batch 8, one Adam training step."""
  from tinygrad import Tensor, nn
  class CNN:
    def __init__(self):
      self.c1, self.c2 = nn.Conv2d(1, 8, 3), nn.Conv2d(8, 16, 3)
      self.l = nn.Linear(16*5*5, 10)
    def __call__(self, x):
      x = self.c1(x).relu().max_pool2d(2)
      x = self.c2(x).relu().max_pool2d(2)
      return self.l(x.flatten(1))
  return _train_step(CNN(), (8, 1, 28, 28), 10, nn.optim.Adam)

def _train_step(model, xshape, nclass, opt_fn):
  from tinygrad import Tensor, dtypes
  from tinygrad.nn.state import get_parameters
  _params_empty(model)
  opt = opt_fn(get_parameters(model), lr=1e-3)
  def step():
    x, y = Tensor.empty(*xshape), Tensor.empty(xshape[0], dtype=dtypes.int32)
    opt.zero_grad()
    loss = model(x).sparse_categorical_crossentropy(y).backward()
    return [loss] + opt.schedule_step()
  with Tensor.train():
    Tensor.realize(*step())  # first step: realizes the optimizer state
    return step()

class _BasicBlock:
  def __init__(self, cin, cout, stride):
    from tinygrad import nn
    self.conv1, self.bn1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False), nn.BatchNorm2d(cout)
    self.conv2, self.bn2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False), nn.BatchNorm2d(cout)
    self.down = [nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout)] if stride != 1 or cin != cout else []
  def __call__(self, x):
    out = self.bn2(self.conv2(self.bn1(self.conv1(x)).relu()))
    return (out + x.sequential(self.down)).relu()

def resnet18_fwd():
  """ResNet-18 inference forward, batch 1, 3x224x224 (no weights data)."""
  from tinygrad import Tensor, nn
  class ResNet18:
    def __init__(self):
      self.conv1, self.bn1 = nn.Conv2d(3, 64, 7, 2, 3, bias=False), nn.BatchNorm2d(64)
      chans, blocks, cin = [64, 128, 256, 512], [], 64
      for i,c in enumerate(chans):
        blocks += [_BasicBlock(cin, c, 1 if i == 0 else 2), _BasicBlock(c, c, 1)]
        cin = c
      self.blocks, self.fc = blocks, nn.Linear(512, 1000)
    def __call__(self, x):
      x = self.bn1(self.conv1(x)).relu().pad((1, 1, 1, 1), value=float("-inf")).max_pool2d(3, 2)
      return self.fc(x.sequential(self.blocks).mean((2, 3)))
  m = ResNet18()
  _params_empty(m)
  return [m(Tensor.empty(1, 3, 224, 224))]

def gpt2_fwd():
  """GPT-2-small-shaped forward (12 layers, 12 heads, 768 wide, vocab 50257) for 32 tokens."""
  from tinygrad import Tensor, nn, dtypes
  D, H, L, V, T, CTX = 768, 12, 12, 50257, 32, 1024
  class Block:
    def __init__(self):
      self.ln1, self.ln2 = nn.LayerNorm(D), nn.LayerNorm(D)
      self.c_attn, self.c_proj = nn.Linear(D, 3*D), nn.Linear(D, D)
      self.c_fc, self.mlp_proj = nn.Linear(D, 4*D), nn.Linear(4*D, D)
    def __call__(self, x):
      q, k, v = [t.reshape(1, T, H, D//H).transpose(1, 2) for t in self.c_attn(self.ln1(x)).split(D, dim=2)]
      a = q.scaled_dot_product_attention(k, v, is_causal=True).transpose(1, 2).reshape(1, T, D)
      x = x + self.c_proj(a)
      return x + self.mlp_proj(self.c_fc(self.ln2(x)).gelu())
  class GPT2:
    def __init__(self):
      self.wte, self.wpe = nn.Embedding(V, D), nn.Embedding(CTX, D)
      self.h, self.ln_f, self.lm_head = [Block() for _ in range(L)], nn.LayerNorm(D), nn.Linear(D, V, bias=False)
    def __call__(self, tok):
      x = self.wte(tok) + self.wpe(Tensor.arange(T).reshape(1, T))
      return self.lm_head(self.ln_f(x.sequential(self.h)))
  m = GPT2()
  _params_empty(m)
  return [m(Tensor.empty(1, T, dtype=dtypes.int32))]

def sharded_matmul():
  """Matmuls on two devices (CPU, CPU:1): rows sharded (no communication) and the reduce axis
  sharded (an all-reduce)."""
  from tinygrad import Tensor
  devs = ("CPU", "CPU:1")
  a = Tensor.empty(64, 128).shard(devs, axis=0).realize()
  w = Tensor.empty(128, 32).shard(devs, axis=None).realize()
  b = Tensor.empty(64, 128).shard(devs, axis=1).realize()
  w0 = Tensor.empty(128, 32).shard(devs, axis=0).realize()
  return [a @ w, b @ w0]

def mlp2_fwd():
  """A runnable 2-layer MLP forward (16-32-8, softmax) on 4 samples, all data inline."""
  import numpy as np
  from tinygrad import Tensor
  rng = np.random.default_rng(0)
  x = Tensor(rng.standard_normal((4, 16), dtype=np.float32)).realize()
  w1, b1 = Tensor(rng.standard_normal((16, 32), dtype=np.float32)*0.25).realize(), Tensor(rng.standard_normal(32, dtype=np.float32)*0.1).realize()
  w2, b2 = Tensor(rng.standard_normal((32, 8), dtype=np.float32)*0.25).realize(), Tensor(rng.standard_normal(8, dtype=np.float32)*0.1).realize()
  return [((x @ w1 + b1).relu() @ w2 + b2).softmax(-1)]

MODELS = {"mnist_mlp_train": (mnist_mlp_train, False), "cnn_train": (cnn_train, False), "resnet18_fwd": (resnet18_fwd, False),
          "gpt2_fwd": (gpt2_fwd, False), "sharded_matmul": (sharded_matmul, False), "mlp2_fwd": (mlp2_fwd, "inline")}

def build_one(name:str) -> None:
  import tgc_graph
  from tinygrad import Tensor
  Tensor.manual_seed(0)
  fn, data = MODELS[name]
  graph = HERE / f"{name}.graph.json"
  tgc_graph.export(fn(), graph, with_data=data)
  rc = subprocess.run([sys.executable, str(HERE.parent.parent / "tools" / "tgc_graph.py"), "oracle", str(graph), "-o", str(HERE / f"{name}.expect.json")],
                      capture_output=True, text=True)
  if rc.returncode != 0: raise SystemExit(f"oracle failed on {graph}:\n{rc.stderr}")
  print(f"{name}: {rc.stdout.strip()}, {graph.stat().st_size} bytes")

def main(argv):
  if argv[:1] == ["--one"]: return build_one(argv[1])
  names = argv or list(MODELS)
  for n in names:
    if n not in MODELS: raise SystemExit(f"unknown model {n}; have {', '.join(MODELS)}")
    subprocess.run([sys.executable, __file__, "--one", n], check=True)

if __name__ == "__main__": main(sys.argv[1:])
