"""The stage every finding goes through last: the config's severity or the tier's cap,
suppression, NG003 instead of a finding on a value another program renders first, a rendered
KubeletConfig's finding held back for its profile, and the counts."""
from __future__ import annotations

from typing import Any, Iterable

from numaguard.lint.load.documents import Document, position_of
from numaguard.lint.load.later_stages import VALUE_STAGES, LaterStage, not_judged, value_stage
from numaguard.lint.model import Finding, ObjectRef, Path, Severity, Summary, Violation, dotted_path, value_at
from numaguard.lint.rendered import RenderedFindings
from numaguard.lint.rules.base import Rule
from numaguard.lint.rules.input import RENDERED_LATER

SEEN = Violation((), "")          # `FindingLog.rendered_instead`: a value NG003 has already named


class FindingLog:
    """The findings and counts of a run (or of a worker's share of it, `take`)."""

    def __init__(self, selection: Any) -> None:
        self.selection = selection              # numaguard.lint.engine.Selection
        self.findings: list[Finding] = []
        self.summary = Summary()
        self.rendered = RenderedFindings()
        self.rendered_seen: set = set()         # (file, path) of values NG003 named, per batch

    def take(self) -> tuple[list[Finding], Summary, RenderedFindings]:
        """Hand over (and forget) the findings, counts and held findings so far."""
        taken = self.findings, self.summary, self.rendered
        self.findings, self.summary, self.rendered = [], Summary(), RenderedFindings()
        return taken

    def emit_doc(self, doc: Document, prefix: Path, ref: ObjectRef | None, rule: Rule,
                 v: Violation, ignores: frozenset[str] = frozenset(), reason: str | None = None,
                 held: tuple | None = None, cap: Severity | None = None) -> None:
        """A finding on a field of `doc` (below `prefix`), at that field's line and column."""
        path = prefix + tuple(v.path)
        position = position_of(doc.data, path) or ((doc.line, 1) if doc.line else None)
        rendered = self.rendered_instead(rule, value_at(doc.data, path), VALUE_STAGES, (doc.source, path))
        if rendered is not None:
            if rendered is not SEEN:
                self.emit(RENDERED_LATER, rendered, file=doc.source, position=position, ref=ref,
                          ignores=ignores, path=path, reason=reason)
            return
        self.emit(rule, v, file=doc.source, position=position, ref=ref, ignores=ignores,
                  path=path, reason=reason, held=held, cap=cap)

    def rendered_instead(self, rule: Rule, value: Any, stages: Iterable[LaterStage], key: tuple) -> Violation | None:
        """For a finding on a value another program renders first (an expression of one of
        `stages`): the NG003 info that replaces it, `SEEN` when NG003 already named that value,
        else None (the finding stands). Findings on other values, and on no value, stand."""
        if rule.id == RENDERED_LATER.id:
            return None
        if isinstance(value, str) and "\n" in value.strip():
            return None                 # an embedded document (a patch): judged line by line
        found = value_stage(value, stages) or value_stage(key[1][-1] if key[1] else None, stages)
        if found is None:
            return None
        if key in self.rendered_seen:
            return SEEN
        self.rendered_seen.add(key)
        stage, expression = found
        return Violation((), not_judged(dotted_path(key[1]) or "The value", stage, expression), severity=Severity.INFO,
                         remediation=stage.hint, rendered_by=stage.name)

    def emit(self, rule: Rule, v: Violation, *, file: str | None, position, ref: ObjectRef | None,
             ignores: frozenset[str], path: Path = (), reason: str | None = None,
             held: tuple | None = None, cap: Severity | None = None) -> None:
        """Record a finding; `held` (profile, kubelet path) keeps a rendered KubeletConfig's
        finding back until the run shows whether its profile has it too (`rendered`); `cap`
        is the highest default severity it may have (a pod or kubelet configuration only
        assumed to be for a managed pool: warning). A severity the config sets for the rule
        (`rules: {NG206: error}`) applies as written, on every tier. A value NG003 names is
        counted even when NG003 is off."""
        if v.rendered_by is not None:
            counts = self.summary.rendered_values
            counts[v.rendered_by] = counts.get(v.rendered_by, 0) + 1
        if not self.selection.enabled(rule):
            return
        configured = self.selection.severities.get(rule.id)
        severity = configured or v.severity or rule.severity
        if cap is not None and configured is None and severity.rank > cap.rank:
            severity = cap
        suppressed = rule.id in ignores or "all" in ignores
        finding = Finding(
            rule=rule.id, name=rule.name, severity=severity, message=v.message,
            remediation=v.remediation or rule.remediation, file=file,
            line=position[0] if position else None, column=position[1] if position else None,
            object=ref, container=v.container, path=dotted_path(path), suppressed=suppressed,
            suppress_reason=reason if suppressed else None, refusal=v.refusal)
        if held is not None:
            self.rendered.hold(held[0], rule.id, held[1], finding)
            return
        self.record(finding)

    def record(self, finding: Finding) -> None:
        """Keep a finding and count it."""
        self.findings.append(finding)
        if finding.suppressed:
            self.summary.suppressed += 1
        else:
            self.summary.counts[finding.severity.value] += 1
