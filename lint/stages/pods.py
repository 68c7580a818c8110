"""Judging one pod (a Pod or a workload's pod template): its scope first, then what the API
server refuses (NG002), then the pod rules in the context of each pool it targets."""
from __future__ import annotations

from dataclasses import replace

from numaguard.lint.load.documents import Document
from numaguard.lint.model import ObjectRef, Path, Severity, Violation
from numaguard.lint.rules.base import Rule
from numaguard.lint.rules.input import INVALID_OBJECT
from numaguard.lint.stages.documents import IGNORE_REASON_ANNOTATION, annotation_ignores, own_annotations
from numaguard.lint.stages.state import RunState, judged_in_each


class PodStage:
    def __init__(self, run: RunState) -> None:
        self.run = run

    def judge(self, doc: Document, prefix: Path, pod) -> None:
        from numaguard.lint.k8s.pod_schema import pod_schema_violations
        from numaguard.lint.rules.pods import VALIDITY_RULES, pod_placement

        run, log = self.run, self.run.log
        # Scope first: a pod that is not checked at all (no pod-level resources, not meant for
        # a pool) gets no NG002 either (lint/README.md "Which pods are policy-checked").
        scope, contexts, declared_by = pod_placement(pod, run.ctx)
        if scope in ("out", "unmanaged"):
            log.summary.unmanaged += scope == "unmanaged"
            return
        log.summary.declare("pods", declared_by)
        problems = pod_schema_violations(pod.spec) + [
            Violation((name,), f"{pod.ref.kind} refuses {name} in its pod template: {why}")
            for name, why in pod.refused_fields if pod.spec.get(name) is not None]
        ignores = doc.ignores | annotation_ignores(pod.annotations)
        reason = pod.annotations.get(IGNORE_REASON_ANNOTATION)
        if problems:
            for v in problems:
                log.emit_doc(doc, prefix, pod.ref, INVALID_OBJECT, _in_document(pod, v), ignores, reason)
            return
        if scope == "validity":
            contexts = (replace(run.ctx, in_pool=False),)
        rules = [r for r in run.rules.of("pod") if scope != "validity" or r.id in VALIDITY_RULES]
        # Simulated on a node description: declared for it when the user named that node
        # (`--node`, the config's `node:`, the pool's `node:`), whatever the pod's policy tier.
        named = next((c.node_named_by or "unnamed" for c in contexts if c.node is not None), None)
        log.summary.declare("numaFit", named if any(r.needs_node for r in rules) else None)
        for rule, v in judged_in_each(rules, pod, contexts):
            log.emit_doc(doc, prefix, pod.ref, rule, _in_document(pod, v), ignores, reason,
                         cap=_pod_cap(scope, rule, named not in (None, "unnamed"), VALIDITY_RULES))

    def judge_status(self, doc: Document, prefix: Path, data: dict, ref: ObjectRef) -> None:
        """What the kubelet did with a live Pod (its status), whatever the pod's scope."""
        ignores = doc.ignores | annotation_ignores(own_annotations(data))
        for rule in self.run.rules.of("status"):
            for v in rule.check(data, self.run.ctx):
                self.run.log.emit_doc(doc, prefix, ref, rule, v, ignores)


def _in_document(pod, v: Violation) -> Violation:
    """A finding on a pod spec pointed at where the value is written in the document: below
    the template, or where an assembled part came from (`PodTarget.document_path`)."""
    path, note = pod.document_path(tuple(v.path))
    return replace(v, path=path, message=f"{v.message} [{note}]" if note else v.message)


def _pod_cap(scope: str, rule: Rule, node_named: bool, validity: frozenset[str]) -> Severity | None:
    """The highest default severity of a pod finding: a pod only assumed to be managed (no
    pool that pods can target is configured) is told about the policy, not failed on it, so
    its policy findings are warnings at most; but what the simulator predicts the kubelet does
    on a node description the user named (NG301-NG303, every rule that needs a node) keeps its
    severity: the pod was declared for that node. Validity findings are never lowered."""
    if scope != "assumed" or rule.id in validity or (rule.needs_node and node_named):
        return None
    return Severity.WARNING
