# Stands in for tinygrad 0.11.0's test/helpers.py, which its sdist leaves out: the names
# test_multitensor.py and test_jit.py import from it.
from tinygrad import Device
from tinygrad.engine.jit import TinyJit  # noqa: F401

REAL_DEV = Device.DEFAULT

def not_support_multi_device() -> bool: return False

def assert_jit_cache_len(fxn, expected_len):
  if not fxn.jit_cache:
    assert expected_len == 0, expected_len
    return
  assert len(fxn.jit_cache) == expected_len, len(fxn.jit_cache)
