# Stands in for tinygrad 0.11.0's examples/gpt2.py, which its sdist leaves out: the Attention block
# test_symbolic_ops.py runs (a kv cache updated in place, then scaled dot product attention). Written
# to record the same graphs: the corpus's test_symbolic_ops graphs come out row for row.
from typing import Optional, Union
from tinygrad import Tensor, Variable
from tinygrad.nn import Linear
from tinygrad.helpers import getenv

MAX_CONTEXT = getenv("MAX_CONTEXT", 128)
HALF = getenv("HALF")

class Attention:
  def __init__(self, dim, n_heads):
    self.c_attn = Linear(dim, 3*dim, bias=True)
    self.c_proj = Linear(dim, dim, bias=True)
    self.n_heads, self.dim, self.head_dim = n_heads, dim, dim // n_heads

  def __call__(self, x:Tensor, start_pos:Union[Variable, int], mask:Optional[Tensor]) -> Tensor:
    if mask is not None or start_pos.val == 0: start_pos = start_pos.val  # no symbolic shapes while consuming a prompt
    if HALF: x = x.half()
    xqkv = self.c_attn(x).reshape(None, None, 3, self.n_heads, self.head_dim)
    xq, xk, xv = [xqkv[:, :, i, :, :] for i in range(3)]
    bsz, seqlen, _, _ = xq.shape
    if not hasattr(self, "cache_kv"):
      self.cache_kv = Tensor.zeros(2, bsz, MAX_CONTEXT, self.n_heads, self.head_dim, dtype=x.dtype).contiguous().realize()
    self.cache_kv.shrink((None, None, (start_pos, start_pos+seqlen), None, None)).assign(Tensor.stack(xk, xv)).realize()
    if start_pos > 0:
      keys = self.cache_kv[0].shrink((None, (0, start_pos+seqlen), None, None))
      values = self.cache_kv[1].shrink((None, (0, start_pos+seqlen), None, None))
    else:
      keys, values = xk, xv
    xq, keys, values = xq.transpose(1, 2), keys.transpose(1, 2), values.transpose(1, 2)
    return self.c_proj(xq.scaled_dot_product_attention(keys, values, mask).transpose(1, 2).reshape(bsz, seqlen, self.dim))
