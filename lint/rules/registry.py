"""The one place where rules are registered: every `Rule` defined in the rule modules below.

A run imports a rule module only when it judges something that module's rules look at
(`rules_for`): a lint of pods imports no kubelet rules, and no NUMA-fit rules (nor the
simulator they drive) without a node description. `RULE_MODULES` names each module with the
targets of its rules; tests/test_rule_registry.py holds it to what the modules define.
"""
from __future__ import annotations

from functools import lru_cache
from importlib import import_module

from numaguard.lint.rules.base import Rule, Target

# module under numaguard.lint.rules -> the targets of its rules
RULE_MODULES: dict[str, tuple[Target, ...]] = {
    "input": ("input",),
    "pods": ("pod",),
    "kubelet": ("kubelet",),
    "kubelet_validation": ("kubelet",),
    "numa": ("pod", "kubelet"),
    "pool": ("run",),
    "node": ("run", "node"),
    "processes": ("node",),
    "state": ("status",),
}
# The modules whose every rule needs a node description (`Rule.needs_node`): not imported
# by a run without one.
NODE_ONLY_MODULES = frozenset({"numa"})


def _rules_of(module: str) -> list[Rule]:
    return [v for v in vars(import_module(f"numaguard.lint.rules.{module}")).values() if isinstance(v, Rule)]


@lru_cache(maxsize=1)
def all_rules() -> tuple[Rule, ...]:
    """Every rule, sorted by id. Two rules with one id is a programming error."""
    found = [r for module in RULE_MODULES for r in _rules_of(module)]
    ids = [r.id for r in found]
    duplicated = {i for i in ids if ids.count(i) > 1}
    if duplicated:
        raise RuntimeError(f"rule ids registered twice: {sorted(duplicated)}")
    return tuple(sorted(found, key=lambda r: r.id))


@lru_cache(maxsize=None)
def rules_for(target: Target, *, with_node: bool) -> tuple[Rule, ...]:
    """The rules that look at `target`, sorted by id, importing only the modules that define
    such rules; without a node description (`with_node=False`), none that needs one."""
    found = [r for module, targets in RULE_MODULES.items()
             if target in targets and (with_node or module not in NODE_ONLY_MODULES)
             for r in _rules_of(module)]
    return tuple(sorted((r for r in found if r.target == target and (with_node or not r.needs_node)),
                        key=lambda r: r.id))


@lru_cache(maxsize=None)
def run_check_rules(*, with_node: bool) -> tuple[Rule, ...]:
    """Every rule a run check judges (`Rule.run`), whatever its target, sorted by id: those of
    the modules with run-level rules (NG409, a "node" rule that `node inspect` emits, also
    judges a saved PodResources answer in a lint through the checkpoint check)."""
    found = [r for module, targets in RULE_MODULES.items()
             if "run" in targets and (with_node or module not in NODE_ONLY_MODULES) for r in _rules_of(module)]
    return tuple(sorted((r for r in found if r.run is not None and (with_node or not r.needs_node)),
                        key=lambda r: r.id))


def rules_by_id() -> dict[str, Rule]:
    return {r.id: r for r in all_rules()}
