"""The rule registry imports a rule module only for the targets it declares for it
(`RULE_MODULES`), so the declarations must be the modules' own: a rule whose target its
module does not declare would never run."""
from __future__ import annotations

import json
import subprocess
from collections import Counter

import pytest

from conftest import FIXTURES, numaguard_exe

from numaguard.lint.rules import registry


@pytest.mark.parametrize("module", sorted(registry.RULE_MODULES))
def test_each_module_declares_the_targets_of_its_rules(module):
    rules = registry._rules_of(module)
    assert rules, module
    assert sorted({r.target for r in rules}) == sorted(registry.RULE_MODULES[module])
    if module in registry.NODE_ONLY_MODULES:
        assert all(r.needs_node for r in rules)


@pytest.mark.parametrize("target", ["pod", "kubelet", "status", "input", "run", "node"])
@pytest.mark.parametrize("with_node", [True, False])
def test_rules_for_a_target_are_those_of_all_rules(target, with_node):
    expected = tuple(r for r in registry.all_rules() if r.target == target and (with_node or not r.needs_node))
    assert registry.rules_for(target, with_node=with_node) == expected
    assert expected            # no target is empty, with or without a node


def test_the_counts_of_rules_by_target():
    """Exact counts, so that a rule module left out of RULE_MODULES (its rules lost) fails."""
    assert len(registry.all_rules()) == 62
    assert Counter((r.target, r.needs_node) for r in registry.all_rules()) == {
        ("pod", False): 14, ("pod", True): 3, ("kubelet", False): 17, ("kubelet", True): 2, ("run", False): 12,
        ("status", False): 2, ("input", False): 3, ("node", False): 9}
    assert sum(len(registry.rules_for(t, with_node=True)) for t in ("pod", "kubelet", "status", "input", "run",
                                                                   "node")) == 62


@pytest.mark.parametrize("with_node", [True, False])
def test_the_run_check_rules_are_every_rule_with_a_run_check(with_node):
    """Found in the modules with run-level rules, so a lint imports no other module for them
    (not the processes rules, "node" rules without a run check)."""
    expected = tuple(r for r in registry.all_rules() if r.run is not None and (with_node or not r.needs_node))
    assert registry.run_check_rules(with_node=with_node) == expected
    assert [r.id for r in expected] == ["NG401", "NG402", "NG403", "NG404", "NG405", "NG406", "NG407", "NG408",
                                        "NG409", "NG419", "NG420", "NG421", "NG422"]


KUBELET_CONFIG = """apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
cpuManagerPolicy: static
reservedSystemCPUs: "0,8"
"""


@pytest.mark.parametrize("select", [[], ["--select", "NG409"], ["--select", "NG4"]])
def test_a_node_rule_with_a_run_check_is_judged_in_a_lint_selected_alone_too(tmp_path, select):
    """NG409 (target "node": `node inspect` emits it) also judges a saved PodResources answer
    in a lint, through the checkpoint run check: selecting it alone keeps that check."""
    answer = json.loads((FIXTURES / "podresources" / "list.json").read_text())
    answer["podResources"][0]["containers"][0]["cpuIds"] = ["0", "9"]
    (tmp_path / "nodes").mkdir()
    (tmp_path / "nodes" / "list.json").write_text(json.dumps(answer, indent=1))
    (tmp_path / "nodes" / "kubelet.yaml").write_text(KUBELET_CONFIG)
    run = subprocess.run([numaguard_exe(), "lint", "--pool", "nodes", "--format", "json", *select], cwd=tmp_path,
                         capture_output=True, text=True, timeout=120)
    found = [(f["file"], f["rule"], f["message"]) for f in json.loads(run.stdout)["findings"] if f["rule"] == "NG409"]
    assert found == [("nodes/list.json", "NG409", "container app of pod shop/web-0 holds CPUs 0 of reservedSystemCPUs "
                                                  "0,8 (its exclusive CPUs: 0,9)")]
