"""What a rule is: one small check function with its metadata beside it.

A rule module defines its rules with the `@rule(...)` decorator, which turns the function into
a `Rule` value; `numaguard.lint.rules.registry` collects them from every rule module (the one place
where rules are registered). Documentation (`numaguard rules`, README's rule reference) is
generated from these fields, never written twice.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, Callable, Iterable, Literal

from numaguard.lint.model import ObjectRef, Path, Severity, Violation

# What a rule looks at. "pod": one pod or pod template; "kubelet": one KubeletConfiguration
# document; "input": emitted by the loader and schema checks, not by a check function.
Target = Literal["pod", "kubelet", "input"]


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
class PoolSettings:
    """How the managed node pool is recognised (from the config file)."""

    node_labels: dict[str, str] = field(default_factory=dict)
    taint: dict[str, str] | None = None       # {key, value, effect}


@dataclass(frozen=True)
class LintContext:
    """Everything a check may consult besides its subject. Immutable; built once per run."""

    kubernetes_version: tuple[int, int] = (1, 37)
    scope_all: bool = False
    pool: PoolSettings = PoolSettings()
    node: Any = None                          # a numaguard.lint.numa node description, when given
    kubelet_config: Any = None                # the node's KubeletConfiguration (dict), when known


@dataclass(frozen=True)
class PodTarget:
    """A pod, or the pod template inside a workload, as the pod rules see it.

    `spec` is the raw pod spec dict; `spec_path` is where it sits in its document (e.g.
    ("spec", "template", "spec") in a Deployment), so violations can be given relative to the
    pod spec and still point at the right line. `annotations` are the pod's own (the template's),
    with the workload's merged under them, because suppressions on a workload cover its template.
    """

    ref: ObjectRef
    spec: dict
    spec_path: Path
    annotations: dict[str, str]
    metadata_path: Path

    @cached_property
    def analysis(self) -> Any:
        """The pod's resource semantics (`numaguard.lint.k8s.pod_budget.PodAnalysis`), computed once per pod
        however many rules ask."""
        from numaguard.lint.k8s.pod_budget import PodAnalysis

        return PodAnalysis(self.spec)
