#!/usr/bin/env python3
"""Records tinygrad 0.11.0's values on its OpenCL device (GPU=1, here PoCL on the CPU) for numeric
graphs of the corpus, testdata/numeric and testdata/zoo, as testdata/opencl/NAME.expect.json.

`tools/tgc_graph.py oracle --device GPU --outputs yes` loads each source graph with its CPU device
renamed GPU and schedules and runs it there: tinygrad applies its OpenCL heuristic (LOCAL, GROUP,
GROUPTOP) and PoCL compiles its OpenCL C. The expect file's kernels name the GPU device;
tests/test_gpu.c (opencl_bits) reads only its outputs, runs the source graph with `-d opencl` and
requires them byte for byte. PoCL contracts a*b+c to an FMA inside
one expression, so the bits also pin down which values tgc's OpenCL source prints inline.

  python3 testdata/opencl/make_opencl.py [ORACLE]     (ORACLE defaults to ../shared/oracle)
Needs PoCL (pocl-opencl-icd) and tinygrad 0.11.0.
"""
import pathlib, subprocess, sys
HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parents[1]

# (the source graph's directory: "oracle" for ORACLE/numeric, else a path under the repository; its name)
SOURCES = [
  ("oracle", "numeric.softmax.8bdd2a"), ("oracle", "numeric.layernorm.519ed3"), ("oracle", "numeric.matmul.59608b"),
  ("oracle", "numeric.conv2d_basic.eff133"), ("oracle", "numeric.pool2d.b9f024"), ("oracle", "numeric.mlp_backward.aed760"),
  ("oracle", "numeric.argmax_onehot.a9c722"), ("oracle", "numeric.batchnorm_train.4946d0"),
  ("testdata/numeric", "arange_onehot"), ("testdata/numeric", "reduce_frames"), ("testdata/numeric", "unrolled_update"),
  ("testdata/numeric", "backward_sums"), ("testdata/numeric", "transcendental_f32"),
  ("testdata/zoo", "mlp_sgd_momentum"), ("testdata/zoo", "bert_layer"), ("testdata/zoo", "resnet_block_train"),
  ("testdata/zoo", "cumsum_sort"), ("testdata/zoo", "vit_tiny"), ("testdata/zoo", "dropout_train"), ("testdata/zoo", "reductions"),
  ("testdata/zoo", "int8_quant"),
]

def main(argv):
  oracle = pathlib.Path(argv[0] if argv else ROOT.parent / "shared" / "oracle").resolve()
  for where, name in SOURCES:
    src = oracle / "numeric" if where == "oracle" else ROOT / where
    p = subprocess.run([sys.executable, str(ROOT / "tools" / "tgc_graph.py"), "oracle", str(src / f"{name}.graph.json"), "--device", "GPU",
                        "--outputs", "yes", "-o", str(HERE / f"{name}.expect.json")], capture_output=True, text=True)
    if p.returncode: raise SystemExit(f"{name}: {p.stderr[-2000:]}")
    print(f"{name}: {p.stdout.strip()}")

if __name__ == "__main__": main(sys.argv[1:])
