#!/usr/bin/env python3
"""Regenerates the real-model graph files in testdata/models/ and testdata/zoo/ with tinygrad 0.11.0
and tools/tgc_graph.py.

testdata/models/ holds the models `make bench` times. testdata/zoo/ holds more, small, models
for `make conformance`: a LLaMA block with its KV cache and a bound Variable, a BERT layer, training
steps under SGD (Nesterov), LAMB, AdamW and Adam (batchnorm convs, a residual block, sharded over two
devices), GroupNorm and ConvTranspose2d with interpolate, an unrolled LSTM, embedding with
cross-entropy, argmax and topk, half and bfloat16 casts, a split reduce, causal attention, cumsum,
cummax and sort; a MobileNet block, a small U-Net and ViT, integer and bitwise ops, tensor plumbing
(gather, einsum, reflect padding, ...), dropout with tinygrad's threefry random numbers, more
reductions, conv variants (1d, 3d, grouped, transposed, dilated) and int8 quantization. Most zoo
models carry seeded random data for every input (Tensor.empty is made to return realized random
tensors while they are built), so their expect files hold tinygrad's values.

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

def _train_step(model, xshape, nclass, opt_fn, **opt_kw):
  from tinygrad import Tensor, dtypes
  from tinygrad.nn.state import get_parameters
  _params_empty(model)
  opt = opt_fn(get_parameters(model), **({"lr": 1e-3} | opt_kw))
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


# ********** zoo: small models of many kinds (testdata/zoo) **********

def llama_block():
  """A LLaMA-style block for one token at start_pos=5: RMSNorm, rotary embedding, a KV cache
  written with assign at a bound Variable and read back to start_pos+1, SwiGLU."""
  from tinygrad import Tensor, nn, Variable
  D, H, T, MAXC = 64, 4, 1, 32
  hd = D // H
  wq, wk, wv, wo = [nn.Linear(D, D, bias=False) for _ in range(4)]
  w1, w2, w3 = nn.Linear(D, 128, bias=False), nn.Linear(128, D, bias=False), nn.Linear(D, 128, bias=False)
  n1, n2 = nn.RMSNorm(D), nn.RMSNorm(D)
  for l in (wq, wk, wv, wo, w1, w2, w3, n1, n2): _params_empty(l)
  cache_k = Tensor.zeros(1, MAXC, H, hd).contiguous().realize()
  cache_v = Tensor.zeros(1, MAXC, H, hd).contiguous().realize()
  freqs = Tensor.empty(MAXC, hd // 2, 2).realize()
  sp = Variable("start_pos", 1, MAXC - 1).bind(5)
  x = Tensor.empty(1, T, D)
  h = n1(x)
  q, k, v = wq(h).reshape(1, T, H, hd), wk(h).reshape(1, T, H, hd), wv(h).reshape(1, T, H, hd)
  f = freqs.shrink(((sp, sp + T), None, None)).reshape(1, T, 1, hd // 2, 2)
  def rope(t):
    t = t.reshape(1, T, H, hd // 2, 2)
    a, b, c, s = t[..., 0:1], t[..., 1:2], f[..., 0:1], f[..., 1:2]
    return (a * c - b * s).cat(a * s + b * c, dim=-1).reshape(1, T, H, hd)
  q, k = rope(q), rope(k)
  Tensor.realize(cache_k.shrink((None, (sp, sp + T), None, None)).assign(k), cache_v.shrink((None, (sp, sp + T), None, None)).assign(v))
  keys, vals = cache_k.shrink((None, (0, sp + T), None, None)), cache_v.shrink((None, (0, sp + T), None, None))
  att = q.transpose(1, 2).scaled_dot_product_attention(keys.transpose(1, 2), vals.transpose(1, 2)).transpose(1, 2).reshape(1, T, D)
  x = x + wo(att)
  return [x + w2(w1(n2(x)).silu() * w3(n2(x)))]

def llama_kv_assign():
  """The KV cache update alone: a stacked (k, v) assigned into a shrink at a bound Variable."""
  from tinygrad import Tensor, Variable
  MAXC, H, hd = 16, 2, 8
  cache = Tensor.zeros(2, 1, MAXC, H, hd).contiguous().realize()
  sp = Variable("start_pos", 0, MAXC - 2).bind(3)
  k, v = Tensor.empty(1, 2, H, hd), Tensor.empty(1, 2, H, hd)
  return [cache.shrink((None, None, (sp, sp + 2), None, None)).assign(Tensor.stack(k, v))]

def bert_layer():
  """A BERT encoder layer: attention with an additive mask, LayerNorms, a GELU MLP."""
  from tinygrad import Tensor, nn
  D, H, T, B = 64, 4, 16, 2
  qkv, o, f1, f2, ln1, ln2 = nn.Linear(D, 3*D), nn.Linear(D, D), nn.Linear(D, 4*D), nn.Linear(4*D, D), nn.LayerNorm(D), nn.LayerNorm(D)
  for l in (qkv, o, f1, f2, ln1, ln2): _params_empty(l)
  x, mask = Tensor.empty(B, T, D), Tensor.empty(B, 1, 1, T)
  q, k, v = [t.reshape(B, T, H, D//H).transpose(1, 2) for t in qkv(x).split(D, dim=2)]
  a = (q @ k.transpose(-1, -2) / 4 + mask).softmax(-1) @ v
  x = ln1(x + o(a.transpose(1, 2).reshape(B, T, D)))
  return [ln2(x + f2(f1(x).gelu()))]

class _MLP:
  def __init__(self, act, ln=False):
    from tinygrad import nn
    self.l1, self.l2, self.act, self.ln = nn.Linear(32, 64), nn.Linear(64, 10), act, nn.LayerNorm(64) if ln else None
  def __call__(self, x):
    h = self.l1(x)
    return self.l2(self.act(self.ln(h) if self.ln else h))

def mlp_sgd_momentum():
  """MLP 32-64-10 (leaky ReLU), one SGD step with Nesterov momentum and weight decay."""
  from tinygrad import nn, Tensor
  return _train_step(_MLP(Tensor.leaky_relu), (16, 32), 10, nn.optim.SGD, lr=0.01, momentum=0.9, nesterov=True, weight_decay=1e-4)

def mlp_lamb():
  """MLP 32-64-10 (tanh), one LAMB step."""
  from tinygrad import nn, Tensor
  return _train_step(_MLP(Tensor.tanh), (16, 32), 10, nn.optim.LAMB, lr=1e-3)

def mlp_adamw():
  """MLP 32-64-10 with a LayerNorm and GELU, one AdamW step."""
  from tinygrad import nn, Tensor
  return _train_step(_MLP(Tensor.gelu, ln=True), (16, 32), 10, nn.optim.AdamW, lr=1e-3)

def convbn_train():
  """Conv-BatchNorm-ReLU-avgpool, a strided conv with swish, linear; one Adam step (batch 4, 3x32x32).
  The convs have no bias, as before a BatchNorm in real models: a bias there has a gradient of zero up
  to rounding, which Adam scales up to the learning rate, so its update would be rounding noise."""
  from tinygrad import nn
  class M:
    def __init__(self):
      self.c1, self.b1 = nn.Conv2d(3, 8, 3, padding=1, bias=False), nn.BatchNorm2d(8)
      self.c2, self.b2 = nn.Conv2d(8, 8, 3, stride=2, bias=False), nn.BatchNorm2d(8)
      self.l = nn.Linear(8*7*7, 10)
    def __call__(self, x):
      x = self.b1(self.c1(x)).relu().avg_pool2d(2)
      return self.l(self.b2(self.c2(x)).swish().flatten(1))
  return _train_step(M(), (4, 3, 32, 32), 10, nn.optim.Adam, lr=1e-3)

def resnet_block_train():
  """A residual block (two bias-free convs with BatchNorm), global mean, linear; one SGD momentum step."""
  from tinygrad import nn
  class M:
    def __init__(self):
      self.c1, self.b1 = nn.Conv2d(8, 8, 3, padding=1, bias=False), nn.BatchNorm2d(8)
      self.c2, self.b2 = nn.Conv2d(8, 8, 3, padding=1, bias=False), nn.BatchNorm2d(8)
      self.l = nn.Linear(8, 10)
    def __call__(self, x):
      y = self.b2(self.c2(self.b1(self.c1(x)).relu()))
      return self.l((y + x).relu().mean((2, 3)))
  return _train_step(M(), (2, 8, 16, 16), 10, nn.optim.SGD, lr=0.1, momentum=0.9)

def sharded_train():
  """MLP 32-64-10 with its weights on two devices and the batch sharded, one Adam step."""
  from tinygrad import Tensor, nn, dtypes
  from tinygrad.nn.state import get_parameters
  devs = ("CPU", "CPU:1")
  l1, l2 = nn.Linear(32, 64), nn.Linear(64, 10)
  _params_empty(l1); _params_empty(l2)
  for p in get_parameters([l1, l2]): p.to_(devs)
  opt = nn.optim.Adam(get_parameters([l1, l2]), lr=1e-3)
  def step():
    x, y = Tensor.empty(16, 32).shard(devs, axis=0), Tensor.empty(16, dtype=dtypes.int32).shard(devs, axis=0)
    opt.zero_grad()
    loss = l2(l1(x).relu()).sparse_categorical_crossentropy(y).backward()
    return [loss] + opt.schedule_step()
  with Tensor.train():
    Tensor.realize(*step())
    return step()

def groupnorm_convt():
  """GroupNorm, SiLU, ConvTranspose2d (stride 2), conv; bilinear-style interpolate and a spatial max."""
  from tinygrad import Tensor, nn
  gn, ct, c = nn.GroupNorm(4, 16), nn.ConvTranspose2d(16, 8, 4, stride=2, padding=1), nn.Conv2d(8, 4, 3, padding=1)
  for l in (gn, ct, c): _params_empty(l)
  y = c(ct(gn(Tensor.empty(2, 16, 8, 8)).silu()))
  return [y.interpolate((32, 32), mode="linear"), y.max(axis=(2, 3))]

def lstm_unrolled():
  """An LSTMCell unrolled over 5 steps, the hidden states summed."""
  from tinygrad import Tensor, nn
  cell = nn.LSTMCell(16, 32)
  _params_empty(cell)
  xs, h, c, outs = Tensor.empty(5, 4, 16), Tensor.zeros(4, 32), Tensor.zeros(4, 32), []
  for t in range(5):
    h, c = cell(xs[t], (h, c))
    outs.append(h)
  return [Tensor.stack(*outs).sum(0)]

def embed_ce_argmax():
  """Embedding and linear to 100 logits: label-smoothed cross-entropy, argmax and the top 3 softmax values."""
  from tinygrad import Tensor, nn, dtypes
  e, l = nn.Embedding(100, 32), nn.Linear(32, 100)
  _params_empty(e); _params_empty(l)
  logits = l(e(Tensor.empty(4, 8, dtype=dtypes.int32)))
  tgt = Tensor.empty(4, 8, dtype=dtypes.int32)
  return [logits.sparse_categorical_crossentropy(tgt, label_smoothing=0.1), logits.argmax(-1), logits.softmax(-1).topk(3)[0]]

def half_mixed():
  """A half matmul accumulated to float, a bfloat16 round trip, log_softmax; a masked half sum."""
  from tinygrad import Tensor, dtypes
  a, b = Tensor.empty(32, 64, dtype=dtypes.half), Tensor.empty(64, 48, dtype=dtypes.half)
  d = a.matmul(b, dtype=dtypes.float).cast(dtypes.bfloat16).relu().cast(dtypes.float).log_softmax(-1)
  return [d, (a.float().exp2() < 1.5).where(a, 0).sum(1)]

def big_reduce():
  """Reductions of a 4096x1024 tensor, large enough for SPLIT_REDUCEOP: std, max of column sums, row RMS."""
  from tinygrad import Tensor
  x = Tensor.empty(4096, 1024)
  return [x.std(), x.sum(0).max(), (x * x).mean(1).sqrt()]

def attention_causal():
  """Causal scaled_dot_product_attention, 8 heads of 128 tokens by 64."""
  from tinygrad import Tensor
  q, k, v = Tensor.empty(1, 8, 128, 64), Tensor.empty(1, 8, 128, 64), Tensor.empty(1, 8, 128, 64)
  return [q.scaled_dot_product_attention(k, v, is_causal=True)]

def cumsum_sort():
  """cumsum, cumprod, sort and cummax."""
  from tinygrad import Tensor
  x = Tensor.empty(64)
  return [x.cumsum(), x.cumprod(0), x.sort()[0], Tensor.empty(8, 33).cummax(1)[0]]

# ********** more kinds of model (zoo): layers, integer and tensor ops the others lack **********

def mobilenet_block():
  """A MobileNetV3-style block in eval mode: depthwise conv, hardswish, pointwise conv with
  BatchNorm, squeeze-and-excite, avg_pool2d."""
  from tinygrad import Tensor, nn
  x = Tensor.empty(2, 16, 14, 14)
  dw = nn.Conv2d(16, 16, 3, padding=1, groups=16); pw = nn.Conv2d(16, 24, 1); bn = nn.BatchNorm2d(24)
  se1, se2 = nn.Linear(24, 6), nn.Linear(6, 24)
  _params_empty(dw); _params_empty(pw); _params_empty(se1); _params_empty(se2)
  Tensor.training = False
  y = bn(pw(dw(x).hardswish())).hardswish()
  s = y.mean((2, 3)); s = se2(se1(s).relu()).sigmoid()
  y = y * s.reshape(2, 24, 1, 1)
  return [y.avg_pool2d(2)]

def unet_small():
  """A two-level U-Net: conv, max_pool2d, conv, nearest interpolate back up, skip concatenation,
  conv, sigmoid."""
  from tinygrad import Tensor, nn
  x = Tensor.empty(1, 3, 16, 16)
  c1, c2, c3 = nn.Conv2d(3, 8, 3, padding=1), nn.Conv2d(8, 16, 3, padding=1), nn.Conv2d(24, 4, 3, padding=1)
  for c in (c1, c2, c3): _params_empty(c)
  a = c1(x).relu()
  b = c2(a.max_pool2d(2)).relu()
  u = b.interpolate((16, 16), mode="nearest")
  return [c3(a.cat(u, dim=1)).sigmoid()]

def vit_tiny():
  """A one-block ViT: patch conv (stride 4), class token and position embedding, pre-LayerNorm
  attention (scaled_dot_product_attention) and GELU MLP, softmax of the class token."""
  from tinygrad import Tensor, nn
  x = Tensor.empty(2, 3, 16, 16)
  patch = nn.Conv2d(3, 32, 4, stride=4); _params_empty(patch)
  cls, pos = Tensor.empty(1, 1, 32), Tensor.empty(1, 17, 32)
  ln1, ln2 = nn.LayerNorm(32), nn.LayerNorm(32)
  qkv, proj, f1, f2 = nn.Linear(32, 96), nn.Linear(32, 32), nn.Linear(32, 64), nn.Linear(64, 32)
  for m in (qkv, proj, f1, f2): _params_empty(m)
  t = patch(x).flatten(2).transpose(1, 2)
  t = cls.expand(2, 1, 32).cat(t, dim=1) + pos
  h = ln1(t); q, k, v = qkv(h).reshape(2, 17, 3, 4, 8).permute(2, 0, 3, 1, 4)
  a = q.scaled_dot_product_attention(k, v).transpose(1, 2).reshape(2, 17, 32)
  t = t + proj(a)
  t = t + f2(f1(ln2(t)).gelu())
  return [t[:, 0].softmax(-1)]

def int_ops():
  """int32 arithmetic: floor division and modulo, bitwise and/or/xor, shifts (on uint32), abs,
  sign, clip, where, int reduces, a cast to float."""
  from tinygrad import Tensor, dtypes
  a = Tensor.empty(8, 16, dtype=dtypes.int32) - 5
  b = Tensor.empty(8, 16, dtype=dtypes.int32) + 1
  r1 = (a // b) + (a % b) * 3
  r2 = (a & 6) | (b ^ 3)
  r3 = ((a.cast(dtypes.uint32) << 2) + (b.cast(dtypes.uint32) >> 1)).cast(dtypes.int32)
  r4 = (a < b).where(a.abs(), b.sign()) + a.clip(-2, 3)
  r5 = a.cast(dtypes.float32) / b.cast(dtypes.float32)
  return [r1, r2, r3, r4, r5, a.sum(1), a.max(0)]

def tensor_manips():
  """Tensor plumbing: stack, split, repeat, roll, flip, reflect padding, gather, one_hot,
  masked_fill, tril, einsum."""
  from tinygrad import Tensor
  a, b = Tensor.empty(4, 6), Tensor.empty(4, 6)
  s = Tensor.stack(a, b, dim=1)
  p, q = a.split([2, 4], dim=1)
  r = a.repeat(2, 1).roll(3, 0).flip(1)
  pr = a.reshape(1, 1, 4, 6).pad((1, 2, 2, 1), mode="reflect")
  idx = (Tensor.empty(4, 3, dtype="int32")) % 6
  g = a.gather(1, idx)
  oh = idx.one_hot(6).sum(1)
  m = a.masked_fill(b > 0.5, -1.0).tril(1)
  e = Tensor.einsum("ij,kj->ik", a, b)
  return [s, p * 2, q + 1, r, pr, g, oh, m, e]

def dropout_train():
  """Training-mode dropout after a linear layer, and rand/randn: tinygrad's threefry random
  numbers computed in kernels."""
  from tinygrad import Tensor, nn
  Tensor.training = True
  x = Tensor.empty(8, 32)
  l = nn.Linear(32, 16); _params_empty(l)
  return [l(x).relu().dropout(0.3), Tensor.rand(4, 5), Tensor.randn(3, 3)]

def reductions():
  """var, std, logsumexp, softmax, log_softmax, cumsum, prod, min, any, all, argmin."""
  from tinygrad import Tensor
  a = Tensor.empty(6, 10)
  return [a.var(1), a.std(0), a.logsumexp(1), a.softmax(0), a.cumsum(0), a.prod(1), a.min(1), (a > 0.5).any(1), (a > 0.1).all(0), a.argmin(1), a.log_softmax(1)]

def conv_variants():
  """conv1d with stride and dilation, conv3d, a grouped conv with per-axis stride and padding,
  conv_transpose2d with output_padding, strided max and avg pooling."""
  from tinygrad import Tensor
  x1 = Tensor.empty(2, 3, 20); w1 = Tensor.empty(4, 3, 5)
  x3 = Tensor.empty(1, 2, 6, 6, 6); w3 = Tensor.empty(3, 2, 3, 3, 3)
  x2 = Tensor.empty(1, 4, 9, 9); w2 = Tensor.empty(6, 2, 3, 3)
  wt = Tensor.empty(4, 2, 3, 3)
  return [x1.conv2d(w1, stride=2, padding=2, dilation=2), x3.conv2d(w3, padding=1), x2.conv2d(w2, groups=2, stride=(2, 1), padding=(1, 0)),
          x2.conv_transpose2d(wt, stride=2, padding=1, output_padding=1), x2.max_pool2d((3, 3), stride=2, dilation=1), x2.avg_pool2d(3, stride=2, padding=1)]

def int8_quant():
  """Symmetric int8 quantization: absmax scale, round, clip, int8 casts, dequantized matmul, an
  int32 sum."""
  from tinygrad import Tensor, dtypes
  x = Tensor.empty(16, 32)
  w = Tensor.empty(32, 8)
  s = x.abs().max() / 127
  q = (x / s).round().clip(-127, 127).cast(dtypes.int8)
  deq = q.cast(dtypes.float32) * s
  return [deq @ w, q.cast(dtypes.int32).sum(0)]

class _RandomEmpty:
  """While active, Tensor.empty returns a realized seeded random tensor (integers in [0, 10), for
  class labels and token ids alike; floats uniform in [0, 1)), so the graph carries every input's
  data and tinygrad computes the outputs."""
  def __enter__(self):
    from tinygrad import Tensor, dtypes
    from tinygrad.dtype import to_dtype
    self.orig = Tensor.empty
    def empty(*shape, dtype=None, **kw):
      if len(shape) == 1 and isinstance(shape[0], tuple): shape = shape[0]
      dt = dtypes.float32 if dtype is None else to_dtype(dtype)
      if dtypes.is_int(dt): return Tensor.randint(*shape, low=0, high=10, dtype=dt, **kw).realize()
      return Tensor.rand(*shape, dtype=dt, **kw).realize()
    Tensor.empty = staticmethod(empty)
  def __exit__(self, *a):
    from tinygrad import Tensor
    Tensor.empty = self.orig

# name: (function, data: False | "inline" | "random" (npy files of _RandomEmpty's data), directory)
MODELS = {"mnist_mlp_train": (mnist_mlp_train, False, "models"), "cnn_train": (cnn_train, False, "models"),
          "resnet18_fwd": (resnet18_fwd, False, "models"), "gpt2_fwd": (gpt2_fwd, False, "models"),
          "sharded_matmul": (sharded_matmul, False, "models"), "mlp2_fwd": (mlp2_fwd, "inline", "models"),
          **{n: (globals()[n], "random", "zoo") for n in ("llama_block", "bert_layer", "mlp_sgd_momentum", "mlp_lamb", "mlp_adamw",
                                                          "convbn_train", "resnet_block_train", "groupnorm_convt", "lstm_unrolled",
                                                          "embed_ce_argmax", "cumsum_sort", "mobilenet_block", "unet_small", "vit_tiny",
                                                          "int_ops", "tensor_manips", "dropout_train", "reductions", "conv_variants",
                                                          "int8_quant")},
          # no data: tinygrad's CPU cannot run half_mixed (its clang rejects the half kernels) or
          # llama_kv_assign (a buffer view at a Variable's offset); the other two are large
          **{n: (globals()[n], False, "zoo") for n in ("llama_kv_assign", "sharded_train", "half_mixed", "big_reduce", "attention_causal")}}

def build_one(name:str) -> None:
  import tgc_graph
  from tinygrad import Tensor
  Tensor.manual_seed(0)
  fn, data, sub = MODELS[name]
  out = HERE.parent / sub
  out.mkdir(exist_ok=True)
  graph = out / f"{name}.graph.json"
  if data == "random":
    with _RandomEmpty(): tensors = fn()
    tgc_graph.export(tensors, graph, with_data="npy")
  else: tgc_graph.export(fn(), graph, with_data=data)
  rc = subprocess.run([sys.executable, str(HERE.parent.parent / "tools" / "tgc_graph.py"), "oracle", str(graph), "-o", str(out / f"{name}.expect.json")],
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
