"""Every rule has fixtures that must trigger it (bad-*) and fixtures that must not (good-*),
under tests/fixtures/rules/<RULE>/. A fixture may set lint settings on its first line:
`# numaguard-test-config: {kubernetesVersion: "1.36"}` (the config-file format)."""
from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from numaguard.lint.config import config_from_dict
from numaguard.lint.load.documents import load_text
from numaguard.lint.engine import lint_documents
from numaguard.lint.rules.registry import all_rules

from conftest import FIXTURES

RULE_FIXTURES = FIXTURES / "rules"
MARKER = "# numaguard-test-config:"


def _cases(prefix: str) -> list[tuple[str, Path]]:
    return [(d.name, f) for d in sorted(RULE_FIXTURES.iterdir()) if d.is_dir()
            for f in sorted(d.iterdir()) if f.name.startswith(prefix) and f.suffix in (".yaml", ".yml", ".json")]


def _lint_fixture(path: Path):
    text = path.read_text(encoding="utf-8", errors="replace")
    settings = {}
    if text.startswith(MARKER):
        settings = yaml.safe_load(text.splitlines()[0][len(MARKER):]) or {}
    config = config_from_dict(settings, base_dir=str(path.parent))
    from numaguard.lint.numa.node import load_node_file
    default, by_pool = config.node_paths()
    node = load_node_file(default) if default else None
    pool_nodes = {name: load_node_file(p) for name, p in by_pool.items()}
    docs, errors = load_text(path.read_bytes(), str(path))
    result = lint_documents(docs, config=config, node=node, load_errors=errors, pool_nodes=pool_nodes)
    return {f.rule for f in result.findings if not f.suppressed}


def test_every_rule_has_bad_and_good_fixtures():
    """NG412-NG418 judge a live node's /proc and cgroup tree, which no file given to lint holds:
    tests/test_node_processes.py triggers and clears each of them with real processes; NG423 is
    node inspect's account of a restart (tests/test_node_restart.py). Rules only node inspect
    emits (target "node", no run check) have no fixture."""
    missing = []
    for rule in all_rules():
        if rule.target == "node" and rule.run is None:
            continue
        folder = RULE_FIXTURES / rule.id
        for prefix in ("bad-", "good-"):
            if not folder.is_dir() or not any(f.name.startswith(prefix) for f in folder.iterdir()):
                missing.append(f"{rule.id}: no {prefix}* fixture")
    assert not missing, "\n".join(missing)


@pytest.mark.parametrize("rule_id,path", _cases("bad-"), ids=lambda v: getattr(v, "name", v))
def test_bad_fixture_triggers_its_rule(rule_id, path):
    assert rule_id in _lint_fixture(path)


@pytest.mark.parametrize("rule_id,path", _cases("good-"), ids=lambda v: getattr(v, "name", v))
def test_good_fixture_does_not_trigger_its_rule(rule_id, path):
    assert rule_id not in _lint_fixture(path)
