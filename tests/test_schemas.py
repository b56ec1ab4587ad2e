"""Validate every corpus file, and every schedule tgc writes for the corpus, against schemas/ (JSON Schema 2020-12)."""
import glob, json, os, subprocess, tempfile
import pytest
jsonschema = pytest.importorskip("jsonschema")
from referencing import Registry, Resource

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ORACLE = os.environ.get("TGC_ORACLE", os.path.join(ROOT, "..", "shared", "oracle"))
TGC = os.environ.get("TGC", os.path.join(ROOT, "build", "tgc"))
SCHEMAS = {n: json.load(open(os.path.join(ROOT, "schemas", f"{n}.schema.json"))) for n in ("graph", "expect", "schedule")}
REGISTRY = Registry().with_resources([(s["$id"], Resource.from_contents(s)) for s in SCHEMAS.values()])

def validator(name): return jsonschema.Draft202012Validator(SCHEMAS[name], registry=REGISTRY)

def test_schemas_are_valid_2020_12():
  for s in SCHEMAS.values(): jsonschema.Draft202012Validator.check_schema(s)

@pytest.mark.parametrize("kind", ["graph", "expect"])
def test_corpus_files_validate(kind):
  files = sorted(glob.glob(os.path.join(ORACLE, "*", f"*.{kind}.json")))
  assert files, f"no corpus at {ORACLE}"
  v = validator(kind)
  bad = [f for f in files if any(True for _ in v.iter_errors(json.load(open(f))))]
  assert not bad, f"{len(bad)} invalid, e.g. {bad[:3]}"

def test_schema_rejects_broken_files():
  v = validator("graph")
  good = {"format": "tgc.graph", "version": 1, "uops": [{"id": 0, "op": "SINK", "dtype": "void"}], "sink": 0}
  assert not list(v.iter_errors(good))
  for broken in ({**good, "format": "x"}, {**good, "uops": [{"id": 0, "op": "SINK"}]},
                 {**good, "uops": [{"id": 0, "op": "SINK", "dtype": "floaty"}]}, {k: x for k, x in good.items() if k != "sink"}):
    assert list(v.iter_errors(broken))

def test_tgc_schedules_validate():
  if not os.path.exists(TGC): pytest.skip("build/tgc not built")
  v = validator("schedule")
  files = sorted(glob.glob(os.path.join(ORACLE, "*", "*.graph.json")))[::40]
  checked = 0
  with tempfile.TemporaryDirectory() as td:
    for f in files:
      out = os.path.join(td, "s.json")
      p = subprocess.run([TGC, "schedule", f, "-o", out], capture_output=True)
      if p.returncode != 0: continue  # scheduling failures are scored by the conformance suite
      errs = list(v.iter_errors(json.load(open(out))))
      assert not errs, f"{f}: {errs[0].message[:300]}"
      checked += 1
  print(f"{checked} tgc schedules validated")
