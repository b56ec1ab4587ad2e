"""pytest plugin (tools/upstream_tests.py loads it): while tinygrad's own test suite runs, every sink
Tensor.kernelize hands to get_kernelize_map is written as a tgc graph file (tools/tgc_graph.py export),
named MODULE.Class_test.CALL.HASH as in the oracle corpus; with TGC_RECORD_DATA=1 the realized buffers'
contents are written too (MODULE...HASH.bufN.npy), so the graph can be run and its values compared. A graph already recorded (same rows, same
options) under another test is not written twice. TGC_RECORD_DIR names the folder."""
from __future__ import annotations
import hashlib, os, pathlib, sys
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent))
import tgc_graph  # noqa: E402
import tinygrad.tensor as _T  # noqa: E402

_OUT = pathlib.Path(os.environ["TGC_RECORD_DIR"])
_DATA = os.environ.get("TGC_RECORD_DATA") == "1"
_OUT.mkdir(parents=True, exist_ok=True)
_seen: set[str] = {p.name.split(".")[-3] for p in _OUT.glob("*.graph.json")}
_real = _T.get_kernelize_map
_test = {"name": "none", "calls": 0}

def _recording_kernelize_map(big_sink):
  _test["calls"] += 1
  try:
    doc = tgc_graph.graph_doc(list(big_sink.src))
    text = tgc_graph._dumps(doc)
    h = hashlib.sha1(text.encode()).hexdigest()[:6]
    if h not in _seen:
      _seen.add(h)
      stem = f"{_test['name']}.{_test['calls']}.{h}"
      if _DATA:  # again, now with the realized buffers' contents as .npy files beside it
        text = tgc_graph._dumps(tgc_graph.graph_doc(list(big_sink.src), "npy", _OUT, stem + "."))
      (_OUT / f"{stem}.graph.json").write_text(text)
  except Exception as e:  # a graph the exporter cannot write is reported, and the test goes on
    print(f"tgc_record: {_test['name']} call {_test['calls']}: {type(e).__name__}: {e}", file=sys.stderr)
  return _real(big_sink)

_T.get_kernelize_map = _recording_kernelize_map

def pytest_runtest_setup(item):
  cls = f"{item.cls.__name__}_" if item.cls else ""
  name = f"{pathlib.Path(str(item.fspath)).stem}.{cls}{item.name}"
  _test["name"] = "".join(c if c.isalnum() or c in "._-" else "_" for c in name)[:150]
  _test["calls"] = 0
