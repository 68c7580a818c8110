"""Every carrier numaguard reads survives a user's wrong type at any field: each list or
mapping in every carrier and CRD fixture (the platforms' own files, tests/fixtures/crds and
carriers) replaced in turn by a number and by a string, and the file linted again. The engine
may report the field (NG002) or read nothing there; it never raises. (The fuzzed webhook found
`spec.components: 1.5` on an AppWrapper raising TypeError; this walks every field of every
carrier the same way, deterministically.)"""
from __future__ import annotations

import copy

import pytest
import yaml

from numaguard.lint.engine import lint_documents

from conftest import REPO

FIXTURES = REPO / "tests" / "fixtures"
FILES = sorted(p for folder in ("crds", "carriers") for p in (FIXTURES / folder).rglob("*")
               if p.suffix in (".yaml", ".yml", ".json"))


def _documents(path) -> list[dict]:
    try:
        return [d for d in yaml.safe_load_all(path.read_text(encoding="utf-8")) if isinstance(d, dict)]
    except (yaml.YAMLError, UnicodeDecodeError):
        return []                      # the broken-file fixtures: the loader's tests cover them


def _containers(tree, prefix=()):
    """The paths of every list and mapping below the root."""
    children = tree.items() if isinstance(tree, dict) else enumerate(tree) if isinstance(tree, list) else ()
    for key, value in children:
        if isinstance(value, (dict, list)):
            yield prefix + (key,)
            yield from _containers(value, prefix + (key,))


def test_the_walk_covers_the_new_carriers():
    names = {p.parent.name for p in FILES}
    assert {"kserve", "appwrapper", "gardener", "eksa", "eksctl"} <= names
    assert sum(1 for p in FILES for d in _documents(p) for _ in _containers(d)) > 2500


@pytest.mark.parametrize("path", FILES, ids=lambda p: str(p.relative_to(FIXTURES)))
def test_a_wrong_type_anywhere_is_judged_not_raised(path):
    docs = _documents(path)
    for i, doc in enumerate(docs):
        for where in _containers(doc):
            for junk in (1.5, "x"):
                changed = copy.deepcopy(docs)
                parent = changed[i]
                for key in where[:-1]:
                    parent = parent[key]
                parent[where[-1]] = junk
                try:
                    lint_documents(changed)
                except Exception as exc:       # noqa: BLE001: the test names what raised
                    pytest.fail(f"{'.'.join(map(str, where))} = {junk!r} in document {i}: {exc!r}")
