"""Every object of a kind the webhook judges that the repository holds: the fixtures, the
deploy/ examples and the guides' YAML examples (each with where it came from)."""
from __future__ import annotations

import re
from pathlib import Path
from typing import Iterator

import yaml

from numaguard.lint.objects import api_group
from numaguard.webhook.decide import JUDGED

from conftest import GUIDES, guide

ROOT = Path(__file__).resolve().parents[2]


def _objects(docs: list) -> Iterator[dict]:
    for doc in docs:
        if isinstance(doc, dict) and isinstance(doc.get("items"), list) and str(doc.get("kind", "")).endswith("List"):
            yield from _objects(doc["items"])
        elif isinstance(doc, dict) and (api_group(str(doc.get("apiVersion") or "")), doc.get("kind")) in JUDGED:
            yield doc


def judged_objects() -> list[tuple[str, dict]]:
    found = []
    files = sorted(p for p in [*ROOT.glob("tests/fixtures/**/*"), *ROOT.glob("deploy/**/*")]
                   if p.suffix in (".yaml", ".yml", ".json") and p.is_file())
    for path in files:
        try:
            docs = list(yaml.safe_load_all(path.read_text(encoding="utf-8")))
        except (yaml.YAMLError, UnicodeDecodeError, RecursionError):
            continue                       # templates and deliberately broken files
        found += [(f"{path.relative_to(ROOT)}#{i}", obj) for i, obj in enumerate(_objects(docs))]
    for name in GUIDES:
        for n, block in enumerate(re.findall(r"```yaml\n(.*?)```", guide(name), re.S)):
            try:
                docs = list(yaml.safe_load_all(block))
            except yaml.YAMLError:
                continue
            found += [(f"{name} yaml block {n}#{i}", obj) for i, obj in enumerate(_objects(docs))]
    return found
