"""Every object the agreement tests judge both ways: the rule fixtures (with the settings on their
first line), the guides' YAML examples, deploy/examples/workloads, the workload CRD fixtures and
the real-repository fixtures. Objects are read as plain dicts, as the API server has them: no
positions, no comment suppressions (which the API server never sees)."""
from __future__ import annotations

from pathlib import Path
from typing import Iterator

import yaml

from numaguard.lint.carriers import BUILTIN_CARRIERS
from numaguard.lint.objects import api_group

from conftest import GUIDES, guide

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "tests" / "fixtures"
MARKER = "# numaguard-test-config:"
POOL = {"nodeLabels": {"node.example.com/pool": "numa"},
        "taint": {"key": "dedicated.example.com/numa", "value": "true", "effect": "NoSchedule"}}
# The configs every object is judged under, besides its own fixture settings.
CONFIGS = {
    "no pool": {},
    "a pool by labels and taint": {"pool": POOL},
    "a pool by taint only": {"pool": {"taint": {"key": "dedicated.example.com/numa", "effect": "NoSchedule"}}},
    "scope all": {"scope": "all", "pool": POOL},
    # deploy/examples/.numaguard.yaml's pools: the same label key and taint key, other values
    "two pools": {"pools": [
        {"name": "numa", "nodeLabels": {"node.example.com/pool": "numa"},
         "taint": {"key": "node.example.com/pool", "value": "numa", "effect": "NoSchedule"}},
        {"name": "edge", "nodeLabels": {"node.example.com/pool": "edge"},
         "taint": {"key": "node.example.com/pool", "value": "edge", "effect": "NoSchedule"}}]},
    # pools of two labels, of a taint alone and of labels alone (the most specific targeted
    # wins), and a kind of the config's own (podTemplates, with both wildcards)
    "three pools and a custom kind": {
        "pools": [{"name": "numa", "nodeLabels": {"node.example.com/pool": "numa", "kubernetes.io/os": "linux"},
                   "taint": POOL["taint"]},
                  {"name": "gpu", "taint": {"key": "gpu.example.com/dedicated", "value": "true", "effect": "NoSchedule"}},
                  {"name": "edge", "nodeLabels": {"node.example.com/pool": "edge"}}],
        "podTemplates": [{"apiVersion": "training.example.com/v1", "kind": "TrainingJob", "resource": "trainingjobs",
                          "paths": ["spec.launcher?.template", "spec.roles?.*.template", "spec.workers[*].template"]}]},
}


def _documents(text: str) -> list:
    try:
        return [d for d in yaml.safe_load_all(text) if d is not None]
    except yaml.YAMLError:
        return []


def _carried(doc) -> bool:
    """A mapping of a kind in the carrier table (what both sides judge)."""
    if not isinstance(doc, dict) or not isinstance(doc.get("kind"), str):
        return False
    version = str(doc.get("apiVersion") or "").rpartition("/")[2]
    return BUILTIN_CARRIERS.find(api_group(doc.get("apiVersion")), version, doc["kind"]) is not None


def _items(doc) -> Iterator[dict]:
    if isinstance(doc, dict) and doc.get("kind") == "List" and isinstance(doc.get("items"), list):
        yield from (d for d in doc["items"] if _carried(d))
    elif _carried(doc):
        yield doc


def _files(folder: Path) -> Iterator[Path]:
    for path in sorted(folder.rglob("*")):
        if path.is_file() and path.suffix in (".yaml", ".yml", ".json"):
            yield path


def fixture_objects() -> Iterator[tuple[str, dict, dict]]:
    """(where, the fixture's own settings, object)."""
    for folder in (FIXTURES / "rules", FIXTURES / "crds", FIXTURES / "realrepo", FIXTURES / "carriers"):
        for path in _files(folder):
            text = path.read_text(encoding="utf-8", errors="replace")
            settings = yaml.safe_load(text.splitlines()[0][len(MARKER):]) if text.startswith(MARKER) else {}
            settings = {k: v for k, v in (settings or {}).items() if k not in ("node",)}
            for i, doc in enumerate(_documents(text)):
                for obj in _items(doc):
                    yield f"{path.relative_to(ROOT)}#{i}", settings, obj
    for path in _files(ROOT / "deploy" / "examples" / "workloads"):
        for i, doc in enumerate(_documents(path.read_text())):
            for obj in _items(doc):
                yield f"{path.relative_to(ROOT)}#{i}", {}, obj
    for name in GUIDES:
        for n, block in enumerate(guide(name).split("```yaml\n")[1:]):
            for i, doc in enumerate(_documents(block.split("```", 1)[0])):
                for obj in _items(doc):
                    yield f"guide {name} yaml block {n}#{i}", {}, obj
