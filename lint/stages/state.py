"""What the stages of one run share: the rule context, the enabled rules, the findings, the
run checks, the batch's pairs and what other objects of the run say. One per run (or per
worker), never module state."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Iterable

from numaguard.lint.references import RunReferences
from numaguard.lint.rules.base import LintContext, Rule
from numaguard.lint.rules.registry import rules_for
from numaguard.lint.stages.batch import Batch
from numaguard.lint.stages.findings import FindingLog
from numaguard.lint.stages.run_checks import RunChecks


class RuleBook:
    """The enabled rules per target; their modules are imported when a run first judges
    something of that target (numaguard.lint.rules.registry.rules_for)."""

    def __init__(self, selection: Any, has_node: bool) -> None:
        self.selection, self.has_node = selection, has_node
        self._rules: dict[str, list[Rule]] = {}          # target -> its enabled rules, on first use

    def of(self, target: str) -> list[Rule]:
        if target not in self._rules:
            self._rules[target] = [r for r in rules_for(target, with_node=self.has_node)
                                   if self.selection.enabled(r)]
        return self._rules[target]

    def by_id(self, rule_id: str) -> Rule | None:
        """An enabled rule a platform carrier names by id: its notices and extras are input
        (NG002) and kubelet findings."""
        return next((r for target in ("input", "kubelet") for r in self.of(target) if r.id == rule_id), None)


@dataclass
class RunState:
    ctx: LintContext
    rules: RuleBook
    log: FindingLog
    checks: RunChecks
    batch: Batch
    references: RunReferences = field(default_factory=RunReferences)   # what other objects of the run say

    @classmethod
    def start(cls, ctx: LintContext, selection: Any, pools_naming=lambda source: ()) -> "RunState":
        # Whether any context has a node description: rules needing one are left out otherwise
        # (numaguard.lint.rules.registry, `with_node`).
        has_node = ctx.node is not None or any(p.node is not None for p in ctx.pools)
        return cls(ctx, RuleBook(selection, has_node), FindingLog(selection), RunChecks(ctx, selection, has_node),
                   Batch(pools_naming))


def judged_in_each(rules: list[Rule], subject: Any, contexts: Iterable[LintContext]):
    """(rule, violation) for every rule in every context (a subject of several pools is judged
    against each pool's node description); a violation found in two contexts is given once."""
    seen: set[tuple] = set()
    for ctx in contexts:
        for rule in rules:
            for v in rule.check(subject, ctx):
                key = (rule.id, tuple(v.path), v.container, v.message)
                if key not in seen:
                    seen.add(key)
                    yield rule, v
