"""The one place where rules are registered: every `Rule` defined in the rule modules below."""
from __future__ import annotations

from functools import lru_cache
from types import ModuleType

from numaguard.lint.rules import input as input_rules
from numaguard.lint.rules import kubelet as kubelet_rules
from numaguard.lint.rules import kubelet_validation as kubelet_validation_rules
from numaguard.lint.rules import node as node_rules
from numaguard.lint.rules import numa as numa_rules
from numaguard.lint.rules import pods as pod_rules
from numaguard.lint.rules import pool as pool_rules
from numaguard.lint.rules import processes as process_rules
from numaguard.lint.rules import state as state_rules
from numaguard.lint.rules.base import Rule

RULE_MODULES: tuple[ModuleType, ...] = (input_rules, pod_rules, kubelet_rules,
                                         kubelet_validation_rules, numa_rules, pool_rules,
                                         node_rules, process_rules, state_rules)


@lru_cache(maxsize=1)
def all_rules() -> tuple[Rule, ...]:
    """Every rule, sorted by id. Two rules with one id is a programming error."""
    found = [v for m in RULE_MODULES for v in vars(m).values() if isinstance(v, Rule)]
    ids = [r.id for r in found]
    duplicated = {i for i in ids if ids.count(i) > 1}
    if duplicated:
        raise RuntimeError(f"rule ids registered twice: {sorted(duplicated)}")
    return tuple(sorted(found, key=lambda r: r.id))


def rules_by_id() -> dict[str, Rule]:
    return {r.id: r for r in all_rules()}
