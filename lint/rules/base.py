"""What a rule is: one small check function with its metadata beside it.

A rule module defines its rules with the `@rule(...)` decorator, which turns the function into
a `Rule` value; `numaguard.lint.rules.registry` collects them from every rule module (the one place
where rules are registered). Documentation (`numaguard rules`, lint/rules/README.md) is
generated from these fields, never written twice.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Literal

from numaguard.lint.carriers import BUILTIN_CARRIERS, PodCarriers
from numaguard.lint.model import ObjectRef, Path, PoolSettings, Severity, Violation

# What a rule looks at. "pod": one pod or pod template; "kubelet": one KubeletConfiguration
# document; "status": a whole Pod object with its status (what the kubelet did with it, for
# `numaguard audit`), managed or not; "input": emitted by the loader and schema checks, not by
# a check function; "run": everything one run read, judged once at the end from small
# per-input extracts (the rule's `RunCheck`: NG4xx, the pool and the kubelet's checkpoints);
# "node": emitted by `numaguard node inspect` from what a kubelet reports.
Target = Literal["pod", "kubelet", "status", "input", "run", "node"]


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
    # What `numaguard fix` does about a finding of this rule, in a few words ("" = nothing: no
    # single safe fix); the fix itself is in numaguard.lint.rules.fixes_pods / fixes_kubelet.
    fix: str = ""
    # target "run": how the rule collects and judges (rules of one family share one check)
    run: "RunCheck | None" = field(default=None, compare=False, repr=False)

    def as_dict(self) -> dict[str, Any]:
        return {"id": self.id, "name": self.name, "severity": self.severity.value,
                "target": self.target, "needsNode": self.needs_node, "title": self.title,
                "rationale": self.rationale, "remediation": self.remediation, "fix": self.fix or None}


def rule(*, id: str, name: str, severity: str, title: str, rationale: str, remediation: str,
         target: Target, needs_node: bool = False, fix: str = "") -> Callable[[Callable], Rule]:
    """Decorator: `@rule(id="NG203", ...)` over `def check(subject, ctx): yield Violation(...)`."""

    def wrap(check: Callable[..., Iterable[Violation]]) -> Rule:
        return Rule(id=id, name=name, severity=Severity(severity), title=title,
                    rationale=" ".join(rationale.split()), remediation=" ".join(remediation.split()),
                    target=target, check=check, needs_node=needs_node, fix=fix)

    return wrap


@dataclass(frozen=True)
class LintContext:
    """Everything a check may consult besides its subject. Immutable; built once per run.

    The run's context has the default node (for subjects of no pool) and, in `pools`, one
    context per declared pool with that pool's settings, node description and empty node
    state; a subject of a pool is judged with its pool's context."""

    kubernetes_version: tuple[int, int] = (1, 37)
    scope_all: bool = False
    pool: PoolSettings = PoolSettings()       # the subject's pool (an empty one: no pool)
    node: Any = None                          # a numaguard.lint.numa node description, when given
    kubelet_config: Any = None                # the node's KubeletConfiguration (dict), when known
    in_pool: bool = True                      # the subject is meant for the managed pool (policy tier)
    # Who named `node`: "--node", "node" (the config's top-level `node:`), "poolNode" (the
    # pool's own `node:`); None: no one (the webhook, `audit`'s node picked from the cluster).
    # A pod simulated on a node the user named is declared for it (NG3xx keep their severity).
    node_named_by: str | None = None
    # The node's empty NodeState (numaguard.lint.numa.admission), built once per run by
    # `rule_context`; the NUMA rules admit pods on copies of it. None: build one when needed.
    empty_node_state: Any = field(default=None, compare=False, repr=False)
    # Which kinds carry pod templates, and where (the built-in carriers and the config's
    # `podTemplates`): `numaguard.lint.objects.classify` reads the documents with it.
    carriers: PodCarriers = field(default=BUILTIN_CARRIERS, compare=False, repr=False)
    pools: tuple["LintContext", ...] = ()     # the declared pools' contexts, in the config's order

    def pool_context(self, name: str) -> "LintContext | None":
        return next((p for p in self.pools if p.pool.name == name), None)

    @property
    def pods_have_pools(self) -> bool:
        """Whether some declared pool can be targeted by pods (it has labels or a taint)."""
        return any(p.pool.recognises_pods for p in self.pools)


# ------------------------------------------------------------------------- run-level rules

@dataclass(frozen=True)
class Place:
    """Where an input came from, kept instead of the document: its file, the document's first
    line, the path of the subject inside the document (a list item), and the line and column
    of the fields a finding may point at (relative to the subject)."""

    file: str | None
    line: int | None = None
    prefix: Path = ()
    positions: dict[Path, tuple[int, int]] = field(default_factory=dict)

    def position(self, path: Path) -> tuple[int, int] | None:
        """The position of `path`, else of its deepest ancestor that has one, else the
        document's first line."""
        for n in range(len(path), 0, -1):
            found = self.positions.get(tuple(path[:n]))
            if found is not None:
                return found
        return (self.line, 1) if self.line else None


@dataclass
class Subject:
    """What a run check's `collect` sees of one input.

    kind "document": every mapping the run reads, before it is judged (pods, Node objects,
    checkpoint files...); "kubelet": an effective kubelet configuration the run judged (a
    KubeletConfiguration with its drop-ins, or one carried by a platform object); "unreadable":
    a file that did not parse (`data` is the parser's message)."""

    kind: Literal["document", "kubelet", "unreadable"]
    data: Any
    label: str                               # how messages name it: its file, or file:line
    file: str | None = None
    line: int | None = None
    prefix: Path = ()
    # "document": the pools whose kubeletConfigs globs (or --pool directories) name its file;
    # "kubelet": the pools the configuration belongs to (by file name or by its node selection).
    pools: tuple[str, ...] = ()
    in_pool: bool = False                    # "kubelet": held to the pool requirements
    whole: bool = True                       # "kubelet": the whole configuration, not an overlay
    ref: ObjectRef | None = None
    ignores: frozenset[str] = frozenset()
    # "kubelet" from a platform object: where a setting (a path of the effective
    # configuration) sits in the object, as the path a finding shows and its (line, column)
    locate_setting: Callable[[Path], tuple[Path, tuple[int, int] | None]] | None = None
    locate: Callable[[], dict] | None = field(default=None, repr=False)   # field positions, lazily
    # "document": the (line, column) of any path in it (list items included)
    position_of: Callable[[Path], tuple[int, int] | None] | None = field(default=None, repr=False)
    _place: Place | None = field(default=None, init=False, repr=False)

    def place(self) -> Place:
        """Where the subject is, with the positions of its fields (computed on first use)."""
        if self._place is None:
            self._place = Place(self.file, self.line, self.prefix, self.locate() if self.locate else {})
        return self._place


@dataclass(frozen=True)
class RunViolation:
    """A finding of a run check: which rule, which input (named by `source`: a file, a node,
    file:line) and where it is (`place`; None for extracts a library caller made), the object,
    and the violation (its path relative to the input's document)."""

    rule: Rule
    source: str | None
    violation: Violation
    ref: ObjectRef | None = None
    ignores: frozenset[str] = frozenset()
    place: Place | None = None


@dataclass(frozen=True)
class RunCheck:
    """How the rules with target "run" judge a whole run: `collect(subject, ctx)` returns a
    small, picklable extract of one input, or None to keep nothing (worker processes hand
    extracts to the parent, never documents); `judge(extracts, ctx)` runs once at the end over
    every extract in input order and returns `RunViolation`s. Several rules may share one
    check (one collection, one judgement); the engine calls each distinct check once."""

    name: str
    collect: Callable[[Subject, LintContext], Any]
    judge: Callable[[list, LintContext], Iterable[RunViolation]]
