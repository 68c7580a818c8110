"""What a rule is: one small check function with its metadata beside it.

A rule module defines its rules with the `@rule(...)` decorator, which turns the function into
a `Rule` value; `numaguard.lint.rules.registry` collects them from every rule module (the one place
where rules are registered). Documentation (`numaguard rules`, README's rule reference) is
generated from these fields, never written twice.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Literal

from numaguard.lint.carriers import BUILTIN_CARRIERS, PodCarriers
from numaguard.lint.model import PoolSettings, Severity, Violation

# What a rule looks at. "pod": one pod or pod template; "kubelet": one KubeletConfiguration
# document; "status": a whole Pod object with its status (what the kubelet did with it, for
# `numaguard audit`), managed or not; "input": emitted by the loader and schema checks, not by
# a check function; "pool" and "checkpoint": emitted by the engine's pool pass
# (`numaguard.lint.rules.pool`, `numaguard.lint.rules.node`) over everything a run read, not by
# a check function; "node": emitted by `numaguard node inspect` from what a kubelet reports.
Target = Literal["pod", "kubelet", "status", "input", "pool", "checkpoint", "node"]


@dataclass(frozen=True)
class Rule:
    id: str
    name: str
    severity: Severity
    title: str
    rationale: str
    remediation: str
    target: Target
    check: Callable[..., Iterable[Violation]] | None = None
    needs_node: bool = False        # NUMA-fit rules run only with a node description

    def as_dict(self) -> dict[str, Any]:
        return {"id": self.id, "name": self.name, "severity": self.severity.value,
                "target": self.target, "needsNode": self.needs_node, "title": self.title,
                "rationale": self.rationale, "remediation": self.remediation}


def rule(*, id: str, name: str, severity: str, title: str, rationale: str, remediation: str,
         target: Target, needs_node: bool = False) -> Callable[[Callable], Rule]:
    """Decorator: `@rule(id="NG203", ...)` over `def check(subject, ctx): yield Violation(...)`."""

    def wrap(check: Callable[..., Iterable[Violation]]) -> Rule:
        return Rule(id=id, name=name, severity=Severity(severity), title=title,
                    rationale=" ".join(rationale.split()), remediation=" ".join(remediation.split()),
                    target=target, check=check, needs_node=needs_node)

    return wrap


@dataclass(frozen=True)
class LintContext:
    """Everything a check may consult besides its subject. Immutable; built once per run."""

    kubernetes_version: tuple[int, int] = (1, 37)
    scope_all: bool = False
    pool: PoolSettings = PoolSettings()
    node: Any = None                          # a numaguard.lint.numa node description, when given
    kubelet_config: Any = None                # the node's KubeletConfiguration (dict), when known
    in_pool: bool = True                      # the subject is meant for the managed pool (policy tier)
    # The node's empty NodeState (numaguard.lint.numa.admission), built once per run by
    # `rule_context`; the NUMA rules admit pods on copies of it. None: build one when needed.
    empty_node_state: Any = field(default=None, compare=False, repr=False)
    # Which kinds carry pod templates, and where (the built-in carriers and the config's
    # `podTemplates`): `numaguard.lint.objects.classify` reads the documents with it.
    carriers: PodCarriers = field(default=BUILTIN_CARRIERS, compare=False, repr=False)
