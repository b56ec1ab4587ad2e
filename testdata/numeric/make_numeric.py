#!/usr/bin/env python3
"""Regenerates the extra numeric cases in testdata/numeric (graph + tinygrad 0.11.0 expect with outputs):
  python3 testdata/numeric/make_numeric.py [NAME...]      (every case when no NAME is given)
int_wrap: signed int32/int64 arithmetic that overflows (tinygrad's CPU backend wraps it in two's
complement); tgc's emitted C must give the same bits without relying on -fwrapv."""
import pathlib, subprocess, sys
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[2] / "tools"))
import tgc_graph
from tinygrad import Tensor, dtypes, Device
Device.DEFAULT = "CPU"

here = pathlib.Path(__file__).resolve().parent

def case(name, tensors, where=None):
  if sys.argv[1:] and name not in sys.argv[1:]: return
  where = where or here
  g = where / f"{name}.graph.json"
  tgc_graph.export(tensors, g, with_data="inline")
  # the oracle runs in a fresh process: in this one tinygrad's global metadata table still holds the
  # live tensors' entries, which would leak into the kernels' metadata
  subprocess.run([sys.executable, str(here.parents[1] / "tools" / "tgc_graph.py"), "oracle", str(g),
                  "-o", str(where / f"{name}.expect.json")], check=True)

a = Tensor([2147483647, -2147483648, 123456789, -5, 1 << 30, 7], dtype=dtypes.int32).realize()
b = Tensor([1, -1, 987654321, 2147483647, 3, -2147483648], dtype=dtypes.int32).realize()
c = Tensor([1 << 62, -(1 << 62), 9223372036854775807, 3], dtype=dtypes.int64).realize()
case("int_wrap", [a + b, a - b, a * b, a * 3 + 7, -a, a.sum(), (a * b).sum(), c * 4 + c, (c + c).sum()])

# transcendental: exp2/log2/exp/log/pow/sigmoid over special values and a sweep, float32 and float64
# (tinygrad's CPU backend computes them with its xexp2/xlog2 polynomials, as tgc's C backend does)
import math
special = [0.0, -0.0, math.inf, -math.inf, math.nan, 1e-45, 1e-38, 1e-5, 127.9, 128.0, -149.9, -150.0, -151.0, 1e30, -1e30, 1.0, -1.0, 0.5]
sweep = [-160.0 + 300.0 * i / 997 for i in range(997)]
pos = [2.0 ** (-140 + 260 * i / 991) for i in range(991)]
for dt, name in ((dtypes.float32, "f32"), (dtypes.float64, "f64")):
  x = Tensor(special + sweep, dtype=dt).realize()
  y = Tensor(special + pos, dtype=dt).realize()
  case(f"transcendental_{name}", [x.exp2(), y.log2(), (x * 0.25).exp(), y.log(), y.pow(x[:len(special) + len(pos)] * 0.01), x.sigmoid()])

# row_reductions: row sums, softmax and layernorm over 1024 rows of 64, under tinygrad's UPCAST:0:4
# + UNROLL:0:4 (four rows per loop body): tgc's C backend splits such a loop into one loop per row
# (render/loops.c fission) and lets the compiler vectorize each; the values must still match
import numpy as np
rng = np.random.default_rng(7)
xr = Tensor(rng.standard_normal((1024, 64), dtype=np.float32)).realize()
case("row_reductions", [xr.sum(axis=1), (xr * xr).mean(axis=1), xr.exp().sum(axis=1) + 1, xr.logsumexp(-1),
                        (xr.softmax(-1) * xr).sum(axis=1), xr.layernorm().max(axis=1)])

# matmul_kblock: (8, 64) @ (64, 256): each reduce step reads four rows of B, 4 KB, so tgc's C backend
# runs the reduce in blocks around the column loop, each sum resumed from its partial in the
# output (render/loops.c k-blocking); the values must still match
ma = Tensor(rng.standard_normal((8, 64), dtype=np.float32)).realize()
mb = Tensor(rng.standard_normal((64, 256), dtype=np.float32)).realize()
case("matmul_kblock", [ma @ mb])

# matmul_tile: (64, 128) @ (128, 256), float32 and int32: tinygrad's heuristic keeps a 4x4 register
# tile; on a CPU with wide vectors tgc's run grows it to 8 rows by a vector of columns (opt.c
# kopt_cpu_tile), each output still summed in order; the values must still match
mta = Tensor(rng.standard_normal((64, 128), dtype=np.float32)).realize()
mtb = Tensor(rng.standard_normal((128, 256), dtype=np.float32)).realize()
mia = Tensor(rng.integers(-100, 100, (64, 128), dtype=np.int32)).realize()
mib = Tensor(rng.integers(-100, 100, (128, 256), dtype=np.int32)).realize()
case("matmul_tile", [(mta @ mtb).relu(), mia @ mib])

# sin: tinygrad's xsin (Cody-Waite below 30, Payne-Hanek above) over special values, a sweep of
# angles up to 1e4 and magnitudes up to 1e38, float32 and float64; the bitcasts demand its exact bits
# (tgc's C backend renders tinygrad's polynomial and reductions, tg_sinf/tg_sin, not libm's sin)
sin_special = [0.0, -0.0, math.inf, -math.inf, math.nan, 1e-45, 1e-38, 1e-7, 29.999, 30.0, 30.001, 39800.0, -39800.0, 1e30, -1e30, 3.4e38,
               math.pi, -math.pi / 2, 1.5707963267948966, 0.5, -1.0]
sin_sweep = [-200.0 + 400.0 * i / 1999 for i in range(1999)] + [(1.0 + i / 97) * 10.0 ** (i % 38) for i in range(997)]
for dt, idt, name in ((dtypes.float32, dtypes.int32, "f32"), (dtypes.float64, dtypes.int64, "f64")):
  xs = Tensor(sin_special + sin_sweep, dtype=dt).realize()
  case(f"sin_{name}", [xs.sin(), xs.sin().bitcast(idt), xs.cos(), (xs * 2 * math.pi).sin().bitcast(idt)])

# reduce_collapse: tinygrad's pm_reduce folds a REDUCE whose value needs no loop (codegen/devectorizer.py
# reduce_collapse): an embedding lookup and a gather become one gated load per output instead of a
# loop over the vocabulary (a sum over the arange of where(idx == r, row, 0)), an arange is closed
# form (count * step), a count of range comparisons a clamp; tgc lowers them the same way
# (codegen/reduce.c) and its C must give the same values, out-of-range indices included (zeros)
from tinygrad import nn
rc = np.random.default_rng(11)
emb = nn.Embedding(1000, 16)
emb.weight = Tensor(rc.standard_normal((1000, 16), dtype=np.float32)).realize()
tok = Tensor(rc.integers(0, 1000, (4, 8), dtype=np.int32)).realize()
src = Tensor(rc.standard_normal((6, 50), dtype=np.float32)).realize()
gi = Tensor(rc.integers(0, 50, (6, 7), dtype=np.int32)).realize()
cnt = Tensor(rc.integers(-5, 300, (40,), dtype=np.int32)).realize()
case("reduce_collapse", [emb(tok), src.gather(1, gi), Tensor.arange(3000), Tensor.arange(0, 10, 0.1), Tensor.arange(7, 2000, 3).float() * 0.5,
                         (Tensor.arange(256).reshape(1, 256) < cnt.reshape(40, 1)).sum(1), cnt.one_hot(300).sum(0)])

# unrolled_consts: average pools with ceil_mode, whose divisor kernel sums constant ones under an
# UNROLL; sym folds the unrolled constants to one vector constant (VCONST, or a vector CONST when
# all are equal), which tgc's lowering must still feed to the accumulator one by one
ru = np.random.default_rng(13)
xp = Tensor(ru.standard_normal((1, 1, 6, 6), dtype=np.float32)).realize()
xq = Tensor(ru.standard_normal((1, 2, 7, 7), dtype=np.float32)).realize()
case("unrolled_consts", [xp.avg_pool2d(kernel_size=k, stride=3, padding=1, ceil_mode=True, count_include_pad=c)
                         for k in ((3, 3), (3, 2), 4) for c in (True, False)] + [xq.avg_pool2d(kernel_size=(2, 2), stride=2, ceil_mode=True)])

# half_fp16: tinygrad's CPU backend renders half as clang's __fp16, whose arithmetic is float: a value
# is rounded to half only where the C names it, casts it or stores it, and exp2 of a half is its
# xexp2 decomposition in half (log2 and sin go through float). tgc's C follows (render.c
# fp16_storage, tg_exp2h); the bitcasts demand exact bits over a third of all half bit patterns, and
# the float sums of half intermediates are where rounding every half op instead failed the 1e-4 bar
hb = np.arange(0, 65536, 3, dtype=np.uint16).view(np.float16)
hx = Tensor(hb).realize()
hm = Tensor(np.random.default_rng(19).standard_normal((32, 96)).astype(np.float16)).realize()
case("half_fp16", [hx.exp2().bitcast(dtypes.int16), hx.exp().bitcast(dtypes.int16), hx.log2().bitcast(dtypes.int16),
                   hx.sqrt().bitcast(dtypes.int16), hx.reciprocal().bitcast(dtypes.int16), hx.sigmoid().bitcast(dtypes.int16),
                   (hm - hm.max(1, keepdim=True)).exp().float().sum(1), (hm * hm - 1).float().mean(1) * 1000])

# sub_grouping: x - (z - y) is x + (y - z) after tinygrad's symbolic and decompositions (a SUB,
# whose parentheses its C renderer keeps), not (x - z) + y: with x = 1 and y = z = 1e8 the first is
# 1 and the second 0 in float32
sx = Tensor(np.array([1.0, 2.0, -3.0, 0.5], dtype=np.float32)).realize()
sy = Tensor(np.array([1e8, 3e7, 1e9, 7.0], dtype=np.float32)).realize()
sz = Tensor(np.array([1e8, 3e7, 1e9, 7.0], dtype=np.float32)).realize()
case("sub_grouping", [sx - (sz - sy), (sx * 2) - (sz * 1.5 - sy * 1.5)])

# symbolic_const_output: outputs that are a constant seen through views with a bound variable (a
# pad by n of a const expanded over n): tinygrad leaves such an output unrealized (no kernel), and
# `tgc run` reads it through its views with n bound, 0 where the pad masks it (seed 64199 of
# `randgraph.py --extended --numeric --options --ops 16`, made small)
from tinygrad import Variable
vn = Variable("n", 1, 14).bind(4)
cs = Tensor.ones(5, 3, 5).reshape(5, 3, 5, 1).expand(5, 3, 5, vn).permute(3, 0, 1, 2)
case("symbolic_const_output", [cs.pad(((0, vn), None, None, None)).shrink(((0, 3), None, (1, 3), None)),
                               (cs * 2).pad(((1, vn), None, None, None)).shrink(((0, 6), None, None, None))])

# double_reduce_split / double_reduce_shrink: a reduce under a reduce in one kernel (DONT_GROUP_REDUCES
# keeps a split sum's two reduces together; FUSE_CONV_BW fuses a sum of row sums shrunk by a bound
# variable). tinygrad's codegen view_right merges them into one reduce, so one accumulator adds in
# its order, and swizzles the shrink into the inner reduce, where it is lost: tinygrad sums all eight
# rows (seeds 65144 and 65253 of `randgraph.py --extended --numeric --options --ops 10`, made small)
rd = np.random.default_rng(23)
with tgc_graph.options({"DONT_GROUP_REDUCES": 1}):
  xd = Tensor(rd.standard_normal((5, 1024, 32), dtype=np.float32)).realize()
  case("double_reduce_split", [xd.sum().sin(), xd.sum(axis=(0, 1)).sin()])
with tgc_graph.options({"FUSE_CONV_BW": 1}):
  xe = Tensor(rd.standard_normal((8, 5), dtype=np.float32)).realize()
  vd = Variable("n", 1, 8).bind(7)
  case("double_reduce_shrink", [xe.sum(1).shrink(((0, vd),)).sum().contiguous()])

# sum_mul_unrolled: (x*3) summed over 5120 rows under tinygrad's UNROLL:0:4; tinygrad moves the *3
# out of the sum once its expander has made the unrolled values a vector ("move const multiply after
# REDUCE"), so it sums x and scales once
case("sum_mul_unrolled", [(xd * 3).sum(axis=(0, 1))])

# testdata/exact/cancel_sums (not a `make conformance` case: `--fast-sums` reorders float sums):
# rows of +-1e5, in runs of four, with small noise sum to a small value by cancellation, so the
# order of the additions decides the result; `tgc run` must give tinygrad's values (tests/cli.sh
# checks it does, and that `--fast-sums` does not)
rx = np.random.default_rng(17)
base = np.where(np.arange(1024) // 4 % 2 == 0, 1e5, -1e5).astype(np.float32)
xc = Tensor((base[None, :] + rx.standard_normal((64, 1024)).astype(np.float32) * 0.37).astype(np.float32)).realize()
exact_dir = here.parent / "exact"
exact_dir.mkdir(exist_ok=True)
case("cancel_sums", [xc.sum(1), (xc * 0.5).sum(1) + 1, xc.mean(1)], where=exact_dir)

# unrolled_factors: which factors of an unrolled sum tinygrad moves out. Under an UNROLL only a
# constant goes (x*y*3 sums x*y and scales by 3; x*y keeps y in every term), where a loop of its own
# (NOOPT: a sum over 7) moves every factor that does not use the loop (reduce_mul_chain). A sum
# whose whole axis is unrolled (rows of 8) stays a REDUCE until its values are folded: -(x*y) is
# then the negated terms -(a*y)-(b*y)... and 0.5*-(x*y) keeps its -0.5 after the sum.
ru = np.random.default_rng(31)
xu, yu = Tensor(ru.standard_normal((8, 1024), dtype=np.float32)).realize(), Tensor(ru.standard_normal((8, 1), dtype=np.float32)).realize()
xf, yf = Tensor(ru.standard_normal((64, 8), dtype=np.float32)).realize(), Tensor(ru.standard_normal((64, 1), dtype=np.float32)).realize()
xs = Tensor(ru.standard_normal((64, 7), dtype=np.float32)).realize()
case("unrolled_factors", [(xu * yu).sum(1), (xu * yu * 3).sum(1), (-(xu * yu)).sum(1), (xf * 3).sum(1), (xf * yf).sum(1),
                          (-(xf * yf)).sum(1), ((-(xf * yf)).sum(1) * 0.5), (xs * yf).sum(1), (xs * yf * 3).sum(1)])

# backward_sums: layernorm's and softmax's backward passes, whose sums add products and biases: an
# unrolled update acc+(t+b) is printed acc+t+b by tinygrad's renderer (C adds (acc+t)+b), the sum's
# -1 folds into the constants after it, and softmax's backward sum of e*d*v*v keeps its unroll on
# `tgc run` (dropped, v*v would leave the sum: other bits)
rb = np.random.default_rng(37)
xb = Tensor(rb.standard_normal((2, 8, 32), dtype=np.float32)).requires_grad_()
wb, bb = Tensor(rb.standard_normal(32, dtype=np.float32)).requires_grad_(), Tensor(rb.standard_normal(32, dtype=np.float32)).requires_grad_()
sb = Tensor(rb.standard_normal((2, 4, 8, 8), dtype=np.float32)).requires_grad_()
mb = Tensor(rb.standard_normal((2, 4, 8, 8), dtype=np.float32))
loss = (xb.layernorm() * wb + bb).sum() + (sb.softmax(-1) * mb).sum()
loss.backward()
case("backward_sums", [loss, xb.grad, wb.grad, bb.grad, sb.grad])

# reduce_frames: a reduce whose kept axes a reshape moves (std over axes 0 and 2 of (16, 33, 5): the
# kernel sums (33, 16, 5) over its last two axes and stores (1, 33, 1)) runs in the reduce's frame,
# its reduce axes last in their order (tinygrad's r_33_16_5); and batchnorm's backward, whose sums
# over (batch, height, width) are such reduces
rf = np.random.default_rng(41)
xr3 = Tensor(rf.standard_normal((16, 33, 5), dtype=np.float32)).realize()
xn = Tensor(rf.standard_normal((4, 8, 6, 6), dtype=np.float32)).requires_grad_()
gn, bn = Tensor(rf.standard_normal(8, dtype=np.float32)).requires_grad_(), Tensor(rf.standard_normal(8, dtype=np.float32)).requires_grad_()
mn = xn.mean((0, 2, 3), keepdim=True)
vn = (xn - mn).square().mean((0, 2, 3), keepdim=True)
bnl = ((xn - mn) * (vn + 1e-5).rsqrt() * gn.reshape(1, 8, 1, 1) + bn.reshape(1, 8, 1, 1)).silu().sum()
bnl.backward()
case("reduce_frames", [xr3.std((0, 2)), xr3.var(1), xr3.mean((0, 2)), bnl, xn.grad, gn.grad, bn.grad])

# unrolled_update: an unrolled sum's update acc+(a+c)+(b+c)... goes through tinygrad's devectorize
# sym like any value: the constants move last and fold, and the values are added in reverse order
# around the accumulator (b+a+acc+2c, which C adds left to right); and a value x*c keeps its x whole
# when the c leaves the sum (layernorm's affine backward sums s*(1-s)*((x-m)*r))
rv = np.random.default_rng(43)
xv = Tensor(rv.standard_normal((60, 48), dtype=np.float32)).realize()
xw = Tensor(rv.standard_normal((6, 10, 48), dtype=np.float32)).requires_grad_()
lw, lb = Tensor(rv.standard_normal(48, dtype=np.float32)).requires_grad_(), Tensor(rv.standard_normal(48, dtype=np.float32)).requires_grad_()
lt = (xw.layernorm() * lw + lb).tanh().sum()
lt.backward()
case("unrolled_update", [(xv * 2 - 1).sum(1), (xv.exp() - 1).sum(1), (xv + 1).sum(), (xv.exp() * 2 - 1).sum(), xv.tanh().sum(1),
                         lt, xw.grad, lw.grad, lb.grad])

# arange_onehot: a one-hot test against arange(4), summed over 4, fused (FUSE_ARANGE) into a max over
# 32 beside an arange(32) on the same reduce axis (tinygrad's r_4_32_32): on OpenCL and CUDA, a
# kernel with work-group opts (LOCAL, UNROLL and LOCAL) once ranged the arange(4) over the kernel's 32
# (test_gpu thread_opts runs it under several)
ra = np.random.default_rng(5)
ia = Tensor(ra.integers(0, 4, (32,)).astype(np.int32)).realize()
xa = Tensor(ra.standard_normal((32, 4)).astype(np.float32)).realize()
case("arange_onehot", [((ia.reshape(32, 1) == Tensor.arange(4)).float() * xa * (Tensor.arange(32).reshape(32, 1) + 1).float()).max(0)])
