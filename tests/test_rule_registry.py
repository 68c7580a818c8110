"""The rule registry imports a rule module only for the targets it declares for it
(`RULE_MODULES`), so the declarations must be the modules' own: a rule whose target its
module does not declare would never run."""
from __future__ import annotations

from collections import Counter

import pytest

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
    assert len(registry.all_rules()) == 48
    assert Counter((r.target, r.needs_node) for r in registry.all_rules()) == {
        ("pod", False): 14, ("pod", True): 3, ("kubelet", False): 17, ("kubelet", True): 1, ("run", False): 8,
        ("status", False): 2, ("input", False): 2, ("node", False): 1}
    assert sum(len(registry.rules_for(t, with_node=True)) for t in ("pod", "kubelet", "status", "input", "run",
                                                                   "node")) == 48
