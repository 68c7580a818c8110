"""The engine: parsed documents in, findings out. No files, no terminals, no HTTP.

`lint_documents` is what the CLI, the webhook and library users call. It classifies each
document (pod carrier, KubeletConfiguration, or skipped), runs the schema check (NG002) and,
when that passes, every enabled rule for that kind of object, then resolves each violation's
path to a line and column, applies severity overrides and suppressions, and counts.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Iterable

from numaguard.lint.config import Config
from numaguard.lint.load.documents import Document, LoadError, expand_lists, position_of
from numaguard.lint.model import Finding, ObjectRef, Path, Severity, Summary, Violation
from numaguard.lint.objects import classify
from numaguard.lint.rules.base import LintContext, Rule
from numaguard.lint.rules.input import INVALID_DOCUMENT, INVALID_OBJECT
from numaguard.lint.rules.registry import all_rules

IGNORE_ANNOTATION = "numaguard.io/ignore"
IGNORE_REASON_ANNOTATION = "numaguard.io/ignore-reason"


@dataclass(frozen=True)
class Selection:
    """Which rules run (`--select`/`--ignore`: ids or id prefixes such as NG2) and at what
    severity (config `rules:`; None = off)."""

    select: tuple[str, ...] = ()
    ignore: tuple[str, ...] = ()
    severities: dict[str, Severity | None] = field(default_factory=dict)

    def enabled(self, rule: Rule) -> bool:
        if self.severities.get(rule.id, rule.severity) is None:
            return False
        if self.select and not any(rule.id.startswith(s) for s in self.select):
            return False
        return not any(rule.id.startswith(s) for s in self.ignore)


@dataclass
class LintResult:
    findings: list[Finding]
    summary: Summary
    # Filled in by `numaguard audit` and `simulate --format html` for the pool reports: each
    # node's occupancy (numaguard.lint.numa.occupancy.NodeOccupancy) and, per file
    # (`pod/ns/name`), the workload that owns the pod.
    nodes: list[Any] = field(default_factory=list)
    workloads: dict[str, str] = field(default_factory=dict)

    @property
    def active(self) -> list[Finding]:
        return [f for f in self.findings if not f.suppressed]


def lint_documents(documents: Iterable[Document | dict], *, config: Config | None = None,
                   selection: Selection | None = None, node: Any = None,
                   load_errors: Iterable[LoadError] = ()) -> LintResult:
    """Lint parsed documents. Plain dicts are accepted (no positions, no file)."""
    config = config or Config()
    selection = selection or Selection(severities=config.severities)
    ctx = rule_context(config, node)
    run = _Run(ctx, selection)
    for error in load_errors:
        run.add_load_error(error)
    for i, doc in enumerate(documents):
        if not isinstance(doc, Document):
            doc = Document(source=None, index=i, data=doc, line=None, ignores=frozenset())
        for item, prefix in expand_lists(doc):
            run.lint_one(item, prefix)
    run.findings.sort(key=lambda f: (f.file or "", f.line or 0, f.column or 0, f.rule))
    return LintResult(run.findings, run.summary)


def rule_context(config: Config, node: Any = None) -> LintContext:
    """What every check may consult besides its subject, built from the config and the node."""
    return LintContext(kubernetes_version=config.kubernetes_version, scope_all=config.scope_all,
                       pool=config.pool, node=node, kubelet_config=getattr(node, "kubelet_config", None))


class _Run:
    """The mutable bookkeeping of one lint run (findings, counts), kept out of module state."""

    def __init__(self, ctx: LintContext, selection: Selection) -> None:
        self.ctx, self.selection = ctx, selection
        rules = [r for r in all_rules() if selection.enabled(r) and (ctx.node or not r.needs_node)]
        self.pod_rules = [r for r in rules if r.target == "pod"]
        self.kubelet_rules = [r for r in rules if r.target == "kubelet"]
        self.status_rules = [r for r in rules if r.target == "status"]
        self.findings: list[Finding] = []
        self.summary = Summary()

    # -- documents ---------------------------------------------------------------------
    def add_load_error(self, error: LoadError) -> None:
        self._emit(INVALID_DOCUMENT, Violation(path=(), message=error.message), file=error.source,
                   position=(error.line, error.column) if error.line else None, ref=None,
                   ignores=frozenset())

    def lint_one(self, doc: Document, prefix: Path) -> None:
        data = _at(doc.data, prefix)
        if not isinstance(data, dict):
            what = type(data).__name__ if data is not None else "empty"
            self._emit_doc(doc, prefix, None, INVALID_DOCUMENT,
                           Violation(path=(), message=f"list item is {what}, not a mapping"))
            return
        found = classify(data)
        if found.kind == "skip":
            self.summary.skipped += 1
            return
        self.summary.objects += 1
        if found.kind == "kubelet":
            self._lint_kubelet(doc, prefix, data, found.ref)
        elif found.pod is None:
            self._emit_doc(doc, prefix, found.ref, INVALID_OBJECT,
                           Violation(path=found.problem_path, message=f"{found.ref.kind}: {found.problem}"))
        else:
            if found.ref.kind == "Pod" and isinstance(data.get("status"), dict):
                self._lint_status(doc, prefix, data, found.ref)
            self._lint_pod(doc, prefix, found.pod)

    def _lint_pod(self, doc: Document, prefix: Path, pod) -> None:
        from numaguard.lint.k8s.pod_schema import pod_schema_violations
        from numaguard.lint.rules.pods import pod_scope

        prefix = prefix + pod.spec_path
        problems = pod_schema_violations(pod.spec)
        ignores = doc.ignores | _annotation_ignores(pod.annotations)
        reason = pod.annotations.get(IGNORE_REASON_ANNOTATION)
        if problems:
            for v in problems:
                self._emit_doc(doc, prefix, pod.ref, INVALID_OBJECT, v, ignores, reason)
            return
        scope = pod_scope(pod, self.ctx)
        if scope != "managed":
            self.summary.unmanaged += scope == "unmanaged"
            return
        for rule in self.pod_rules:
            for v in rule.check(pod, self.ctx):
                self._emit_doc(doc, prefix, pod.ref, rule, v, ignores, reason)

    def _lint_status(self, doc: Document, prefix: Path, data: dict, ref: ObjectRef) -> None:
        """What the kubelet did with a live Pod (its status), whatever the pod's scope."""
        ignores = doc.ignores | _annotation_ignores(_annotations(data))
        for rule in self.status_rules:
            for v in rule.check(data, self.ctx):
                self._emit_doc(doc, prefix, ref, rule, v, ignores)

    def _lint_kubelet(self, doc: Document, prefix: Path, data: dict, ref: ObjectRef) -> None:
        from numaguard.lint.k8s.kubelet_schema import kubelet_schema_violations

        problems = kubelet_schema_violations(data)
        for v in problems:
            self._emit_doc(doc, prefix, ref, INVALID_OBJECT, v, doc.ignores)
        if problems:
            return
        for rule in self.kubelet_rules:
            for v in rule.check(data, self.ctx):
                self._emit_doc(doc, prefix, ref, rule, v, doc.ignores)

    # -- findings ----------------------------------------------------------------------
    def _emit_doc(self, doc: Document, prefix: Path, ref: ObjectRef | None, rule: Rule,
                  v: Violation, ignores: frozenset[str] = frozenset(), reason: str | None = None) -> None:
        path = prefix + tuple(v.path)
        position = position_of(doc.data, path) or ((doc.line, 1) if doc.line else None)
        self._emit(rule, v, file=doc.source, position=position, ref=ref, ignores=ignores,
                   path=path, reason=reason)

    def _emit(self, rule: Rule, v: Violation, *, file: str | None, position, ref: ObjectRef | None,
              ignores: frozenset[str], path: Path = (), reason: str | None = None) -> None:
        if not self.selection.enabled(rule):
            return
        severity = self.selection.severities.get(rule.id) or v.severity or rule.severity
        suppressed = rule.id in ignores or "all" in ignores
        finding = Finding(
            rule=rule.id, name=rule.name, severity=severity, message=v.message,
            remediation=v.remediation or rule.remediation, file=file,
            line=position[0] if position else None, column=position[1] if position else None,
            object=ref, container=v.container, path=_dotted(path), suppressed=suppressed,
            suppress_reason=reason if suppressed else None)
        self.findings.append(finding)
        if suppressed:
            self.summary.suppressed += 1
        else:
            self.summary.counts[severity.value] += 1


def _annotation_ignores(annotations: dict[str, str]) -> frozenset[str]:
    value = annotations.get(IGNORE_ANNOTATION)
    if not value:
        return frozenset()
    return frozenset(part.strip() for part in value.replace(";", ",").split(",") if part.strip())


def _annotations(data: dict) -> dict[str, str]:
    meta = data.get("metadata")
    annotations = meta.get("annotations") if isinstance(meta, dict) else None
    return {str(k): str(v) for k, v in annotations.items()} if isinstance(annotations, dict) else {}


def _at(data: Any, path: Path) -> Any:
    for key in path:
        data = data[key]
    return data


def _dotted(path: Path) -> str:
    out = ""
    for key in path:
        out += f"[{key}]" if isinstance(key, int) else (f".{key}" if out else str(key))
    return out

