#!/usr/bin/env python3
"""tgc_graph: the bridge between tinygrad 0.11.0 and tgc's graph/expect files (FORMATS.md §1, §2).

Approach. A graph file is the UOp graph tinygrad's `Tensor.kernelize` hands to
`get_kernelize_map(big_sink)`, written as rows in toposort order (ids = row index). The toposort is
tinygrad's own (depth-first, sources in order), extended so that UOps referenced from inside an arg
(symbolic shapes, ShapeTracker views, Kernel ASTs) are visited after the sources and so are
emitted as earlier rows. UNIQUE args are renumbered densely in row order, as in the corpus.

  export(tensors, path)   write the sink tinygrad would kernelize for those tensors
  load(path)              rebuild the UOp graph (and Buffers with data) and return the SINK
  oracle(path)            what tinygrad 0.11.0 schedules for a graph file (the expect document)
  bench(path)             time tinygrad's get_kernelize_map on a graph file

CLI:  tgc_graph.py oracle GRAPH [-o EXPECT.json] [--outputs auto|yes|no] [--opts LIST] [--device GPU]
      tgc_graph.py bench GRAPH [--repeat N] [--cold] [--pair BUILD/bench]
      tgc_graph.py validate GRAPH... [--jobs N]     (oracle vs. the corpus expect next to GRAPH)

Needs only tinygrad 0.11.0 and numpy.
"""
from __future__ import annotations
import argparse, base64, collections, contextlib, gc, itertools, json, math, os, pathlib, re, statistics, sys, time
from typing import Any

from tinygrad import Tensor, dtypes
from tinygrad.dtype import DType, ImageDType, AddrSpace
from tinygrad.uop.ops import UOp, Ops, all_metadata, buffers
from tinygrad.shape.shapetracker import ShapeTracker
from tinygrad.shape.view import View
from tinygrad.helpers import Metadata, ContextVar, getenv
from tinygrad.device import Buffer

FORMAT_VERSION = 1
PRODUCER = "tinygrad 0.11.0"

# scheduler switches recorded in a graph file, with tinygrad's defaults; the first group are ContextVars,
# the second are read through (cached) getenv by the scheduler
OPTION_DEFAULTS = {"FUSE_ARANGE": 1, "FUSE_CONV_BW": 0, "SPLIT_REDUCEOP": 1, "DONT_REALIZE_EXPAND": 0,
                   "DONT_GROUP_REDUCES": 0, "REDUCEOP_SPLIT_THRESHOLD": 32768, "REDUCEOP_SPLIT_SIZE": 22,
                   "MAX_KERNEL_BUFFERS": 0, "RING": 1}
CONTEXTVAR_OPTIONS = ("FUSE_ARANGE", "FUSE_CONV_BW", "SPLIT_REDUCEOP", "DONT_REALIZE_EXPAND", "DONT_GROUP_REDUCES", "RING")
GETENV_OPTIONS = ("REDUCEOP_SPLIT_THRESHOLD", "REDUCEOP_SPLIT_SIZE", "MAX_KERNEL_BUFFERS")

class GraphError(ValueError):
  """A malformed graph file: the message names the file, the row and the field."""

def _dumps(doc) -> str: return json.dumps(doc, separators=(",", ":"), allow_nan=False)

# ********** dtype strings **********

def dtype_str(dt:DType) -> str:
  """tinygrad's repr(dtype) without the `dtypes.` prefix."""
  r = repr(dt)
  assert r.startswith("dtypes."), r
  return r[len("dtypes."):]

_SCALAR_DTYPES = {dtype_str(v): v for v in dtypes.fields().values()} | {"void": dtypes.void}
_DTYPE_RE = re.compile(r"^(?P<name>[a-z0-9_]+)(?:\.vec\((?P<vec>\d+)\))?"
                       r"(?:\.ptr\((?P<size>-?\d+)(?:, AddrSpace\.(?P<addr>[A-Z]+))?\)(?:\.vec\((?P<pvec>\d+)\))?)?$")
_IMAGE_RE = re.compile(r"^(?P<name>image[fh])\((?P<shape>\([0-9, ]*\))\)(?:\.vec\((?P<pvec>\d+)\))?$")
_dtype_cache: dict[str, DType] = {}

def parse_dtype(s:str) -> DType:
  """The DType a dtype string names (inverse of dtype_str); ValueError when it names none."""
  if (ret:=_dtype_cache.get(s)) is not None: return ret
  if (m:=_IMAGE_RE.match(s)) is not None:
    shape = tuple(int(x) for x in m["shape"].strip("()").split(",") if x.strip())
    ret = getattr(dtypes, m["name"])(shape)
    if m["pvec"]: ret = ret.vec(int(m["pvec"]))
  elif (m:=_DTYPE_RE.match(s)) is not None and m["name"] in _SCALAR_DTYPES:
    ret = _SCALAR_DTYPES[m["name"]]
    if m["vec"]: ret = ret.vec(int(m["vec"]))
    if m["size"] is not None:
      ret = ret.ptr(int(m["size"]), AddrSpace[m["addr"]] if m["addr"] else AddrSpace.GLOBAL)
      if m["pvec"]: ret = ret.vec(int(m["pvec"]))
  else: raise ValueError(f"unknown dtype {s!r}")
  if dtype_str(ret) != s: raise ValueError(f"dtype {s!r} is not in canonical form (would be {dtype_str(ret)!r})")
  _dtype_cache[s] = ret
  return ret

# ********** options **********

def current_options() -> dict[str, int]:
  """The scheduler switches in effect now, by their ContextVar/getenv names."""
  ret = {}
  for k in OPTION_DEFAULTS:
    if k in CONTEXTVAR_OPTIONS: ret[k] = int(ContextVar._cache[k].value)
    else: ret[k] = int(os.getenv(k, OPTION_DEFAULTS[k]))
  return ret

def apply_options(opts:dict[str, int]) -> None:
  """Put opts (missing keys take the defaults) in effect for tinygrad's scheduler, process-wide."""
  full = {**OPTION_DEFAULTS, **opts}
  for k in CONTEXTVAR_OPTIONS: ContextVar._cache[k].value = int(full[k])
  for k in GETENV_OPTIONS:
    # MAX_KERNEL_BUFFERS=0 means "the device's own limit": leave it unset so getenv's per-device default applies
    if k == "MAX_KERNEL_BUFFERS" and int(full[k]) == 0: os.environ.pop(k, None)
    else: os.environ[k] = str(int(full[k]))
  getenv.cache_clear()

@contextlib.contextmanager
def options(opts:dict[str, int]):
  """Context manager: opts in effect inside, the previous switches restored after."""
  saved_cv = {k: ContextVar._cache[k].value for k in CONTEXTVAR_OPTIONS}
  saved_env = {k: os.environ.get(k) for k in GETENV_OPTIONS}
  apply_options(opts)
  try: yield
  finally:
    for k,v in saved_cv.items(): ContextVar._cache[k].value = v
    for k,v in saved_env.items():
      if v is None: os.environ.pop(k, None)
      else: os.environ[k] = v
    getenv.cache_clear()

# ********** toposort over sources and arg references **********

def arg_uops(arg) -> list[UOp]:
  """UOps referenced from inside an arg, in order of appearance (depth first)."""
  out: list[UOp] = []
  def walk(v):
    if isinstance(v, UOp): out.append(v)
    elif isinstance(v, (tuple, list)):
      for x in v: walk(x)
    elif isinstance(v, ShapeTracker):
      for vw in v.views: walk(vw)
    elif isinstance(v, View): walk((v.shape, v.strides, v.offset, v.mask))
    elif type(v).__name__ == "Kernel" and hasattr(v, "ast"): walk(v.ast)
  walk(arg)
  return out

def toposort_with_args(roots:list[UOp], seen:dict[UOp, None]|None=None) -> dict[UOp, None]:
  """tinygrad's toposort (sources first, in order) where arg references count as extra sources after
  src; appends to seen (which may hold rows already emitted) and returns it."""
  ret: dict[UOp, None] = {} if seen is None else seen
  for root in roots:
    stack: list[tuple[UOp, bool]] = [(root, False)]
    while stack:
      node, visited = stack.pop()
      if node in ret: continue
      if not visited:
        stack.append((node, True))
        for p in reversed(list(node.src) + arg_uops(node.arg)): stack.append((p, False))
      else: ret[node] = None
  return ret

# ********** value encoding **********

def _enc_float(x:float):
  if math.isfinite(x): return x
  return {"float": "nan" if math.isnan(x) else ("inf" if x > 0 else "-inf")}

def _enc_metadata(m:Metadata) -> dict: return {"name": m.name, "caller": m.caller, "backward": bool(m.backward)}

def encode_value(v, ids:dict[UOp, int]):
  """A Python arg/tag value as FORMATS.md's JSON value (UOps become {"uop": id})."""
  if v is None or isinstance(v, (bool, str)): return v
  if isinstance(v, Ops): return {"ops": v.name}  # before int: Ops is an int enum
  if isinstance(v, int): return int(v)
  if isinstance(v, float): return _enc_float(v)
  if isinstance(v, (tuple, list)): return [encode_value(x, ids) for x in v]
  if isinstance(v, UOp): return {"uop": ids[v]}
  if isinstance(v, ShapeTracker): return {"st": [encode_value(vw, ids) for vw in v.views]}
  if isinstance(v, View):
    return {"shape": encode_value(v.shape, ids), "strides": encode_value(v.strides, ids), "offset": encode_value(v.offset, ids),
            "mask": encode_value(v.mask, ids), "contiguous": bool(v.contiguous)}
  if isinstance(v, DType): return {"dtype": dtype_str(v)}
  if isinstance(v, AddrSpace): return {"addrspace": v.name}
  if isinstance(v, Metadata): return _enc_metadata(v)
  if type(v).__name__ == "Kernel" and hasattr(v, "ast"):
    return {"kernel": {"ast": ids[v.ast], "metadata": [_enc_metadata(m) for m in v.metadata]}}
  raise TypeError(f"can't encode arg of type {type(v).__name__}: {v!r}")

def _const_arg(v, dt:DType):
  """A CONST's number takes its row's dtype: int for ints, float for floats, bool for bool."""
  if isinstance(v, tuple) or isinstance(v, UOp): return v
  s = dt.scalar()
  if s == dtypes.bool: return bool(v)
  if dtypes.is_int(s): return int(v)
  if dtypes.is_float(s): return float(v)
  return v

def encode_rows(order:list[UOp], with_meta:bool=True, unique_map:dict[int, int]|None=None,
                data_fn=None, start:int=0, ids:dict[UOp, int]|None=None) -> list[dict]:
  """Rows for UOps already in toposort order; ids continue from start (ids is filled in)."""
  ids = {} if ids is None else ids
  rows = []
  for u in order:
    i = ids[u] = start + len(rows)
    row: dict[str, Any] = {"id": i, "op": u.op.name, "dtype": dtype_str(u.dtype)}
    if u.src: row["src"] = [ids[s] for s in u.src]
    arg = u.arg
    if u.op is Ops.UNIQUE and unique_map is not None: arg = unique_map[arg]
    elif u.op is Ops.CONST: arg = _const_arg(arg, u.dtype)
    if arg is not None: row["arg"] = encode_value(arg, ids)
    if u.tag is not None: row["tag"] = encode_value(u.tag, ids)
    if with_meta and (m:=all_metadata.get(u)) is not None: row["meta"] = [_enc_metadata(x) for x in m]
    if data_fn is not None and u.op is Ops.BUFFER and (d:=data_fn(u, i)) is not None: row["data"] = d
    rows.append(row)
  return rows

# ********** load **********

class Loaded:
  """What load_graph returns: the SINK, the row UOps, the options and the UNIQUE bookkeeping."""
  def __init__(self, sink, uops, opts, uniques, unique_base, doc):
    self.sink, self.uops, self.options, self.uniques, self.unique_base, self.doc = sink, uops, opts, uniques, unique_base, doc

def _decode_value(v, uops:list[UOp], where:str):
  if v is None or isinstance(v, (bool, int, float, str)): return v
  if isinstance(v, list): return tuple(_decode_value(x, uops, where) for x in v)
  if isinstance(v, dict):
    if len(v) != 1: raise GraphError(f"{where}: bad value {v!r}")
    (k, x), = v.items()
    if k == "uop":
      if not isinstance(x, int) or isinstance(x, bool) or not 0 <= x < len(uops): raise GraphError(f"{where}: no earlier row {x!r}")
      return uops[x]
    if k == "float":
      if x not in ("inf", "-inf", "nan"): raise GraphError(f"{where}: bad float {x!r}")
      return float(x)
    if k == "ops":
      if not isinstance(x, str) or x not in Ops.__members__: raise GraphError(f"{where}: unknown op {x!r}")
      return Ops[x]
    if k == "dtype":
      try: return parse_dtype(x)
      except (ValueError, TypeError) as e: raise GraphError(f"{where}: {e}") from None
    if k == "addrspace":
      if x not in AddrSpace.__members__: raise GraphError(f"{where}: unknown addrspace {x!r}")
      return AddrSpace[x]
    if k == "st":
      if not isinstance(x, list): raise GraphError(f"{where}: st must be a list of views")
      return ShapeTracker(tuple(_decode_view(vw, uops, where) for vw in x))
    if k == "kernel":
      from tinygrad.schedule.kernelize import Kernel
      if not isinstance(x, dict) or "ast" not in x: raise GraphError(f"{where}: bad kernel {x!r}")
      ast = _decode_value({"uop": x["ast"]}, uops, where+".ast")
      return Kernel(ast, tuple(_decode_metadata(m, where+".metadata") for m in x.get("metadata", [])))
    raise GraphError(f"{where}: unknown value kind {k!r}")
  raise GraphError(f"{where}: bad value {v!r}")

def _decode_view(vw, uops, where) -> View:
  if not isinstance(vw, dict) or set(vw) != {"shape", "strides", "offset", "mask", "contiguous"}:
    raise GraphError(f"{where}: bad view {vw!r}")
  shape, strides = _decode_value(vw["shape"], uops, where), _decode_value(vw["strides"], uops, where)
  mask = _decode_value(vw["mask"], uops, where)
  if not isinstance(shape, tuple) or not isinstance(strides, tuple) or len(shape) != len(strides): raise GraphError(f"{where}: bad view shape/strides")
  return View(shape, strides, _decode_value(vw["offset"], uops, where), mask, bool(vw["contiguous"]))

def _decode_metadata(m, where) -> Metadata:
  if not isinstance(m, dict) or not isinstance(m.get("name"), str): raise GraphError(f"{where}: bad metadata {m!r}")
  return Metadata(m["name"], m.get("caller", ""), bool(m.get("backward", False)))

def _buffer_bytes(row:dict, base:pathlib.Path, where:str, nbytes:int, dt:DType) -> bytes:
  d = row["data"]
  if not isinstance(d, dict): raise GraphError(f"{where}: data: must be an object")
  if d.get("encoding") == "base64":
    try: raw = base64.b64decode(d["bytes"], validate=True)
    except Exception as e: raise GraphError(f"{where}: data.bytes: {e}") from None
  elif "file" in d:
    import numpy as np
    try: arr = np.load(base / d["file"], allow_pickle=False)
    except Exception as e: raise GraphError(f"{where}: data.file: {e}") from None
    raw = np.ascontiguousarray(arr).tobytes()
    if arr.dtype.itemsize != dt.itemsize: raise GraphError(f"{where}: data.file: dtype {arr.dtype} doesn't match {dtype_str(dt)}")
  else: raise GraphError(f"{where}: data: needs encoding base64 or file")
  if len(raw) != nbytes: raise GraphError(f"{where}: data: {len(raw)} bytes, expected {nbytes}")
  return raw

def _on_device(arg, device:str):
  """A DEVICE row's arg with tinygrad's CPU devices moved to device: CPU -> device, CPU:n -> device:n."""
  if isinstance(arg, tuple): return tuple(_on_device(a, device) for a in arg)
  if arg == "CPU": return device
  if isinstance(arg, str) and arg.startswith("CPU:"): return device + arg[3:]
  return arg

def load_graph(path:str|os.PathLike, set_options:bool=True, with_data:bool=True, device:str|None=None) -> Loaded:
  """Rebuild tinygrad UOps from a graph file; BUFFERs with data get real, filled Buffers; the UNIQUE
  counter is moved past every UNIQUE in the graph. Applies the graph's options unless set_options=False.
  device: the graph's CPU devices become this tinygrad device (GPU: its OpenCL backend), CPU:n device:n."""
  path = pathlib.Path(path)
  name = str(path)
  try: doc = json.loads(sys.stdin.read() if name == "-" else path.read_text())
  except (OSError, json.JSONDecodeError, UnicodeDecodeError) as e: raise GraphError(f"{name}: {e}") from None
  if not isinstance(doc, dict) or doc.get("format") != "tgc.graph": raise GraphError(f"{name}: format: not a tgc.graph file")
  if doc.get("version") != FORMAT_VERSION: raise GraphError(f"{name}: version: unsupported {doc.get('version')!r}")
  opts = doc.get("options", {})
  if not isinstance(opts, dict) or any(k not in OPTION_DEFAULTS or not isinstance(v, int) for k,v in opts.items()):
    raise GraphError(f"{name}: options: bad {opts!r}")
  rows = doc.get("uops")
  if not isinstance(rows, list): raise GraphError(f"{name}: uops: must be a list")
  uops: list[UOp] = []
  uniques: set[int] = set()
  for i,row in enumerate(rows):
    op = row.get("op") if isinstance(row, dict) else None
    where = f"{name}: row {i} ({op})"
    if not isinstance(row, dict) or row.get("id") != i: raise GraphError(f"{where}: id: expected {i}")
    if not isinstance(op, str) or op not in Ops.__members__: raise GraphError(f"{where}: op: unknown")
    try: dt = parse_dtype(row.get("dtype"))
    except (ValueError, TypeError) as e: raise GraphError(f"{where}: dtype: {e}") from None
    src = row.get("src", [])
    if not isinstance(src, list) or any(not isinstance(s, int) or isinstance(s, bool) or not 0 <= s < i for s in src):
      raise GraphError(f"{where}: src: must name earlier rows")
    arg = _decode_value(row.get("arg"), uops, where+": arg")
    tag = _decode_value(row.get("tag"), uops, where+": tag")
    uop = Ops[op]
    if uop is Ops.CONST: arg = _const_arg(arg, dt)
    if uop is Ops.DEVICE and device: arg = _on_device(arg, device)
    if uop is Ops.UNIQUE:
      if not isinstance(arg, int) or isinstance(arg, bool): raise GraphError(f"{where}: arg: UNIQUE needs an int")
      uniques.add(arg)
    meta = tuple(_decode_metadata(m, where+": meta") for m in row["meta"]) if "meta" in row else None
    try: u = UOp(uop, dt, tuple(uops[s] for s in src), arg, tag, metadata=meta)
    except TypeError as e: raise GraphError(f"{where}: arg: unhashable ({e})") from None
    # the file is the truth: a row without meta has none, even if this UOp already lived with some
    if meta is None: all_metadata.pop(u, None)
    if "data" in row:
      if uop is not Ops.BUFFER: raise GraphError(f"{where}: data: only BUFFER rows carry data")
      if with_data: _attach_data(u, row, path.parent, where)
    uops.append(u)
  sink_id = doc.get("sink")
  if not isinstance(sink_id, int) or not 0 <= sink_id < len(uops) or uops[sink_id].op is not Ops.SINK:
    raise GraphError(f"{name}: sink: must be the id of a SINK row")
  # the UNIQUE counter is process-global: kernelize's new buffers must not collide with ours
  nxt = next(UOp.unique_num)
  base = max(nxt, max(uniques, default=-1)+1)
  UOp.unique_num = itertools.count(base)
  if set_options: apply_options(opts)
  return Loaded(uops[sink_id], uops, {**OPTION_DEFAULTS, **opts}, uniques, base, doc)

def _attach_data(u:UOp, row:dict, base:pathlib.Path, where:str) -> None:
  device = u.src[1].arg if len(u.src) == 2 and u.src[1].op is Ops.DEVICE else None
  if not isinstance(device, str): raise GraphError(f"{where}: data: only single-device BUFFERs carry data")
  rdtype = u.dtype if isinstance(u.dtype, ImageDType) else u.dtype.base
  raw = _buffer_bytes(row, base, where, u.arg * rdtype.itemsize, rdtype)
  if (buf:=buffers.get(u)) is None:
    buf = Buffer(device, u.arg, rdtype).ref(1)
    buffers[u] = buf
  if u.arg == 0: return  # nothing to hold: tinygrad never allocates a size-0 buffer (its allocators refuse one)
  if device == "NPY":
    # the NPY device wraps a numpy array (tinygrad's _fromnp) and has no copyin
    import numpy as np
    arr = np.frombuffer(raw, dtype=_np_dtype(rdtype)).copy()
    if not buf.is_allocated(): buf.allocate(arr)
    else: np.copyto(buf._buf.reshape(-1), arr)
  else: buf.ensure_allocated().copyin(memoryview(bytearray(raw)))

def load(path:str|os.PathLike) -> UOp:
  """The SINK of a graph file as tinygrad UOps, ready for get_kernelize_map(load(path)); applies the
  graph's options (process-wide) and fills Buffers from row data."""
  return load_graph(path).sink

# ********** export **********

def graph_doc(tensors, with_data:bool|str=False, npy_dir:pathlib.Path|None=None, npy_prefix:str="") -> dict:
  """The graph document for the sink Tensor.kernelize would build from tensors (see export)."""
  if isinstance(tensors, (Tensor, UOp)): tensors = [tensors]
  big_sink = UOp.sink(*[t.uop if isinstance(t, Tensor) else t for t in tensors])
  order = list(toposort_with_args([big_sink]))
  unique_map: dict[int, int] = {}
  for u in order:
    if u.op is Ops.UNIQUE: unique_map.setdefault(u.arg, len(unique_map))
  def data_fn(u:UOp, i:int):
    if not with_data or not isinstance(buf:=buffers.get(u), Buffer) or not buf.is_allocated(): return None
    raw = bytes(buf.as_buffer())
    if with_data == "npy" and npy_dir is not None and (npdt:=_np_dtype(buf.dtype)) is not None:
      import numpy as np
      name = f"{npy_prefix}buf{i}.npy"
      np.save(npy_dir / name, np.frombuffer(raw, dtype=npdt), allow_pickle=False)
      return {"file": name}
    return {"encoding": "base64", "bytes": base64.b64encode(raw).decode()}
  rows = encode_rows(order, with_meta=True, unique_map=unique_map, data_fn=data_fn)
  return {"format": "tgc.graph", "version": FORMAT_VERSION, "producer": PRODUCER, "options": current_options(),
          "uops": rows, "sink": len(rows)-1}

def export(tensors, path:str|os.PathLike, with_data:bool|str=False) -> dict:
  """Writes the sink tinygrad's Tensor.kernelize would hand to get_kernelize_map for tensors (a Tensor
  or a list) as a graph file. with_data: False (no BUFFER data), "inline" (base64 of realized buffers) or
  "npy" (realized buffers as PATHSTEM.bufID.npy next to the file). Returns the document."""
  if with_data not in (False, None, True, "inline", "npy"): raise ValueError(f"with_data must be False, 'inline' or 'npy', not {with_data!r}")
  if with_data is True: with_data = "inline"
  path = pathlib.Path(path)
  stem = path.name[:-len(".graph.json")] if path.name.endswith(".graph.json") else path.stem
  doc = graph_doc(tensors, with_data, path.parent, stem + ".")
  tmp = path.with_name(path.name + ".tmp")
  tmp.write_text(_dumps(doc))
  os.replace(tmp, path)
  return doc

# ********** oracle: what tinygrad schedules for a graph **********

class _RecordingDeque(collections.deque):
  """Stands in for collections.deque inside create_schedule_with_vars: records each KERNEL it pops."""
  popped: list[UOp] = []
  def popleft(self):
    k = super().popleft()
    _RecordingDeque.popped.append(k)
    return k

def kernel_order(sched_sink:UOp) -> tuple[list[UOp], list, dict]:
  """(KERNEL UOps in the order create_schedule_with_vars runs them, one per KERNEL before its expansion
  over the devices of a multi-device buffer; its ScheduleItems; its var_vals)."""
  import tinygrad.engine.schedule as S
  saved, _RecordingDeque.popped = S.deque, []
  S.deque = _RecordingDeque
  try: schedule, var_vals = S.create_schedule_with_vars(sched_sink)
  finally: S.deque = saved
  return list(_RecordingDeque.popped), schedule, var_vals

def schedule_graph(L:Loaded):
  """Runs tinygrad's kernelize on a loaded graph as Tensor.schedule_with_vars does; returns
  (sched_sink, kernels in schedule order, ScheduleItems, var_vals)."""
  from tinygrad.schedule.kernelize import get_kernelize_map
  from tinygrad.uop.spec import type_verify, tensor_uop_spec
  sink = L.sink
  type_verify(list(sink.toposort()), tensor_uop_spec)
  becomes_map = get_kernelize_map(sink)
  sched_sink = UOp.sink(*[s.substitute(becomes_map) for s in sink.src])
  ks, schedule, var_vals = kernel_order(sched_sink)
  return sched_sink, ks, schedule, var_vals

def _buf_desc(b:UOp, L:Loaded, new_ids:dict[int, int]) -> dict:
  uq = b.src[0].arg
  new = uq not in L.uniques
  # buffers kernelize made are numbered on from the graph's largest UNIQUE, in order of first use in the schedule
  if new: uq = new_ids.setdefault(uq, max(L.uniques, default=-1) + 1 + len(new_ids))
  dev = b.src[1].arg
  return {"buffer": {"unique": uq, "size": b.arg, "dtype": dtype_str(b.dtype), "device": list(dev) if isinstance(dev, tuple) else dev, "new": new}}

def _kernel_bufs(k:UOp, L:Loaded, new_ids:dict[int, int]) -> list[dict]:
  ret = []
  for s in k.src:
    b = s.buf_uop if s.op in (Ops.BUFFER, Ops.ASSIGN) else s
    ret.append(_buf_desc(b, L, new_ids) if b.op is Ops.BUFFER else {"other": b.op.name})
  return ret

def runnable(L:Loaded, device:str="CPU") -> bool:
  """Can tinygrad compute this graph here: every BUFFER has data and every device is a CPU (or NPY,
  the host arrays tinygrad copies numpy inputs from), or the device the graph was loaded onto."""
  ok = lambda d: d in (device, "CPU", "NPY") or d.startswith(f"{device}:") or d.startswith("CPU:")
  for row,u in zip(L.doc["uops"], L.uops):
    if u.op is Ops.BUFFER and "data" not in row: return False
    if u.op is Ops.DEVICE and any(not ok(d) for d in ((u.arg,) if isinstance(u.arg, str) else u.arg)): return False
  return True

@contextlib.contextmanager
def kernel_opts(spec:str|None):
  """With spec ("UPCAST:0:4,UNROLL:0:0", tgc's --opts syntax), every kernel tinygrad compiles gets
  that opt list instead of hand_coded_optimizations' (what `tgc run --opts` does), so its values
  are the ones those kernels compute: an UNROLL sums in another order, a PADTO masks constants."""
  if not spec:
    yield
    return
  import tinygrad.codegen.opt as O
  from tinygrad.codegen.opt.kernel import Opt, OptOps
  opts = []
  for item in spec.split(","):
    name, axis, amt = item.split(":")
    opts.append(Opt(OptOps[name.upper()], int(axis), int(amt)))
  real = O.hand_coded_optimizations
  O.hand_coded_optimizations = lambda k: list(opts)
  try: yield
  finally: O.hand_coded_optimizations = real

def oracle(path:str|os.PathLike, outputs:bool|None=None, opts:str|None=None, device:str|None=None) -> dict:
  """The expect document (FORMATS.md §2) for a graph file, computed by tinygrad 0.11.0. outputs:
  None = when runnable on CPU, True = always (fails if not runnable), False = never. opts: the
  values computed with that opt list on every kernel (kernel_opts). device: schedule and run the
  graph on that tinygrad device instead of its CPU (GPU: tinygrad's OpenCL heuristic and kernels;
  the expect file's kernels then name it)."""
  L = load_graph(path, set_options=False, device=device)
  with options(L.options), kernel_opts(opts):
    sched_sink, ks, schedule, var_vals = schedule_graph(L)
    doc: dict[str, Any] = {"format": "tgc.expect", "version": FORMAT_VERSION, "producer": PRODUCER,
                           "kernels": sum(1 for k in ks if k.arg.ast.op is Ops.SINK)}
    seen: dict[UOp, None] = {}
    ids: dict[UOp, int] = {}
    rows: list[dict] = []
    items, new_ids = [], {}
    for k in ks:
      ast = k.arg.ast
      before = len(seen)
      toposort_with_args([ast], seen)
      rows += encode_rows(list(seen)[before:], with_meta=False, start=before, ids=ids)
      items.append({"op": ast.op.name, "ast": ids[ast], "bufs": _kernel_bufs(k, L, new_ids), "metadata": [_enc_metadata(m) for m in k.arg.metadata]})
    doc["schedule"], doc["uops"] = items, rows
    if outputs is None: outputs = runnable(L, device or "CPU")
    if outputs: doc["outputs"] = compute_outputs(sched_sink, schedule, var_vals)
  return doc

def compute_outputs(sched_sink:UOp, schedule, var_vals) -> list[dict]:
  """Runs the schedule with tinygrad and returns each sink source's value, C-contiguous, base64."""
  from tinygrad.engine.realize import run_schedule
  run_schedule(schedule, var_vals, do_update_stats=False)
  outs = []
  for i,s in enumerate(sched_sink.src):
    s = s.substitute({u:u.buf_uop for u in s.toposort() if u.op is Ops.ASSIGN})
    t = Tensor(s, device=s.device)
    arr = t.numpy()
    if t.dtype == dtypes.bfloat16:  # numpy has no bfloat16: tinygrad gives float32 values, each exactly a bfloat16
      import numpy as np
      arr = (np.ascontiguousarray(arr, dtype=np.float32).view(np.uint32) >> 16).astype(np.uint16)
    outs.append({"index": i, "dtype": dtype_str(t.dtype), "shape": [int(x) for x in arr.shape] if arr.ndim else [],
                 "encoding": "base64", "bytes": base64.b64encode(arr.tobytes()).decode()})
  return outs

# ********** bench **********

def _shape_caches() -> list:
  """tinygrad's process-wide functools caches on View and ShapeTracker (View.__add__, View.create,
  ShapeTracker.simplify, strides_for_shape, ...): they outlive a graph, so a second run of the same
  graph finds its view algebra already done."""
  import tinygrad.shape.view as V, tinygrad.shape.shapetracker as S
  out = []
  for mod in (V, S):
    for obj in vars(mod).values():
      if hasattr(obj, "cache_clear"): out.append(obj)
      if isinstance(obj, type):
        for attr in vars(obj).values():
          if hasattr(f := getattr(attr, "fget", attr), "cache_clear"): out.append(f)
  return out

def _tgc_kernelize_ms(tgc_bench:str, path:str|os.PathLike, runs:int) -> float:
  """tgc's kernelize time for the graph: the median of `runs` runs of tgc's bench program
  (tests/bench.c, each run a fresh context), the sixth field of its line."""
  import subprocess
  env = {**os.environ, "BENCH_WARMUP_MS": "20"}
  out = subprocess.run([tgc_bench, str(path), str(runs)], capture_output=True, text=True, env=env, check=True).stdout.split()
  return float(out[5])

def bench(path:str|os.PathLike, repeat:int=5, cold:bool=False, pair:str|None=None, pair_runs:int=25) -> tuple[float, int, list[tuple[float, float]]]:
  """Median ms of tinygrad's get_kernelize_map on the graph, after one warm-up; each run reloads the
  graph into fresh UOps (the previous ones are collected first) so no cached rewrite is reused.
  tinygrad's View/ShapeTracker functools caches do persist from run to run (warm); with cold they
  are cleared before each run's load, as in a fresh process, so that like a tgc run (a fresh
  context) it starts from nothing.
  With pair (the path of tgc's bench program), each timed run is paired with a tgc measurement
  taken right before it (the median of pair_runs tgc runs): a slow spell of a shared machine then
  slows both sides of a pair, and their ratio holds where two measurements seconds apart differ.
  Returns (ms, number of graph rows, [(tinygrad ms, tgc ms) per timed run]; empty without pair)."""
  import weakref
  from tinygrad.schedule.kernelize import get_kernelize_map
  caches = _shape_caches() if cold else []
  times, pairs = [], []
  for i in range(repeat+1):
    tgc_ms = _tgc_kernelize_ms(pair, path, pair_runs) if pair and i > 0 else None
    gc.collect()
    for c in caches: c.cache_clear()
    L = load_graph(path, set_options=False)
    nrows = len(L.uops)
    with options(L.options):
      st = time.perf_counter()
      becomes_map = get_kernelize_map(L.sink)
      et = time.perf_counter()
    if i > 0:
      times.append((et-st)*1000)
      if tgc_ms is not None: pairs.append(((et-st)*1000, tgc_ms))
    probe = weakref.ref(L.sink)
    del L, becomes_map
    gc.collect()
    if probe() is not None and i == 0: print("warning: the graph outlived its run; later runs may hit caches", file=sys.stderr)
  return statistics.median(times), nrows, pairs

# ********** corpus validation **********

def compare_expect(doc:dict, want:dict) -> list[str]:
  """Differences between an oracle document and an expect file, by field (empty when they agree)."""
  diffs = []
  for k in ("format", "version", "producer", "kernels", "schedule", "uops"):
    if doc.get(k) != want.get(k): diffs.append(k)
  if ("outputs" in doc) != ("outputs" in want): diffs.append("outputs(presence)")
  elif "outputs" in want:
    import numpy as np
    for a,b in zip(doc["outputs"], want["outputs"]):
      if {k:a[k] for k in ("index","dtype","shape")} != {k:b[k] for k in ("index","dtype","shape")}: diffs.append(f"outputs[{b['index']}]"); continue
      if a["bytes"] == b["bytes"]: continue
      npdt = np.dtype(_np_dtype(parse_dtype(a["dtype"])))
      x, y = np.frombuffer(base64.b64decode(a["bytes"]), npdt), np.frombuffer(base64.b64decode(b["bytes"]), npdt)
      if not np.allclose(x.astype(np.float64), y.astype(np.float64), rtol=1e-5, atol=1e-6, equal_nan=True): diffs.append(f"outputs[{b['index']}]")
    if len(doc["outputs"]) != len(want["outputs"]): diffs.append("outputs(count)")
  if not diffs and _dumps(doc) != _dumps(want): diffs.append("bytes")
  return diffs

def _np_dtype(dt:DType):
  from tinygrad.dtype import _to_np_dtype
  return _to_np_dtype(dt)

def validate(paths:list[str], verbose:bool=False) -> tuple[int, int, dict[str, int]]:
  """Oracle on each corpus graph vs. its expect file: (agreeing, total, disagreement counts by field)."""
  ok, why = 0, collections.Counter()
  for p in paths:
    want = json.loads(pathlib.Path(p.replace(".graph.json", ".expect.json")).read_text())
    try: diffs = compare_expect(oracle(p, outputs="outputs" in want), want)
    except Exception as e: diffs = [f"error:{type(e).__name__}"]; msg = str(e).splitlines()[0][:200] if str(e) else ""
    else: msg = ""
    if diffs:
      why.update(diffs)
      if verbose: print(f"DIFF {pathlib.Path(p).name}: {' '.join(diffs)} {msg}", flush=True)
    else: ok += 1
    gc.collect()
  return ok, len(paths), dict(why)

# ********** command line **********

def main(argv:list[str]|None=None) -> int:
  ap = argparse.ArgumentParser(prog="tgc_graph.py", description="tinygrad 0.11.0 side of tgc: oracle, bench and corpus validation of graph files")
  sub = ap.add_subparsers(dest="cmd", required=True)
  o = sub.add_parser("oracle", help="schedule GRAPH with tinygrad; print the kernel count, write the expect file")
  o.add_argument("graph"); o.add_argument("-o", "--output", help="expect file to write (default: none)")
  o.add_argument("--outputs", choices=("auto", "yes", "no"), default="auto", help="record computed outputs (auto: when runnable on CPU)")
  o.add_argument("--opts", metavar="LIST", help="compute the outputs with this opt list on every kernel (tgc's --opts syntax)")
  o.add_argument("--device", metavar="DEV", help="run on this tinygrad device instead of the graph's CPU (GPU: OpenCL, to compare with tgc run -d opencl)")
  b = sub.add_parser("bench", help="time tinygrad's get_kernelize_map on GRAPH")
  b.add_argument("graph"); b.add_argument("--repeat", type=int, default=5)
  b.add_argument("--cold", action="store_true", help="clear tinygrad's View/ShapeTracker caches before each run")
  b.add_argument("--pair", metavar="BENCH", help="tgc's bench program (build/bench): time tgc right before each run, report the ratios")
  v = sub.add_parser("validate", help="oracle each corpus GRAPH and compare with its expect file")
  v.add_argument("graphs", nargs="+"); v.add_argument("-q", "--quiet", action="store_true")
  a = ap.parse_args(argv)
  try:
    if a.cmd == "oracle":
      doc = oracle(a.graph, outputs={"auto": None, "yes": True, "no": False}[a.outputs], opts=a.opts, device=a.device)
      if a.output:
        tmp = a.output + ".tmp"
        pathlib.Path(tmp).write_text(_dumps(doc))
        os.replace(tmp, a.output)
      print(f"{doc['kernels']} kernels")
    elif a.cmd == "bench":
      ms, n, pairs = bench(a.graph, a.repeat, a.cold, a.pair)
      print(f"tinygrad get_kernelize_map{' (cold shape caches)' if a.cold else ''}: {ms:.2f} ms ({n} uops)")
      if pairs:
        tgc_ms = statistics.median(p[1] for p in pairs)
        ratio = statistics.median(p[0] / p[1] for p in pairs)
        print(f"paired tgc kernelize: {tgc_ms:.3f} ms; ratio tinygrad/tgc: median {ratio:.1f} (of {len(pairs)} pairs)")
    elif a.cmd == "validate":
      ok, n, why = validate(a.graphs, verbose=not a.quiet)
      print(f"{ok}/{n} agree" + (f"; disagreements: {why}" if why else ""))
      return 0 if ok == n else 1
  except GraphError as e:
    print(f"tgc_graph: {e}", file=sys.stderr)
    return 3
  return 0

if __name__ == "__main__": sys.exit(main())
