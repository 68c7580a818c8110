"""`node inspect`'s report as the engine's `LintResult`, for the shared report writers (SARIF,
PolicyReport, HTML): its findings as `Finding`s (a finding on the kubelet configuration at its
line), what could not be read as `unread` (the writers say the report is incomplete), and the
node as one `NodeOccupancy` with the containers' exclusive CPUs, where their memory actually is
(`--processes`), and the summary and restart prediction as notes."""
from __future__ import annotations

from numaguard.lint.engine import LintResult
from numaguard.lint.model import Finding, ObjectRef, Summary
from numaguard.lint.numa.occupancy import NodeOccupancy, PodOutcome, ResidentMemory


def as_lint_result(report) -> LintResult:
    """`report`: a numaguard.lint.node.inspect.InspectReport."""
    findings = [_finding(pv) for pv in report.violations]
    summary = Summary(objects=len(report.containers))
    for f in findings:
        summary.counts[f.severity.value] += 1
    nodes = [_occupancy(report)] if report.topology is not None else []
    return LintResult(findings=findings, summary=summary, nodes=nodes, unread=[s.line() for s in report.missing])


def _finding(pv) -> Finding:
    v = pv.violation
    line, column = (pv.place.position(tuple(v.path)) or (None, None)) if pv.place is not None else (None, None)
    return Finding(rule=pv.rule.id, name=pv.rule.name, severity=v.severity or pv.rule.severity, message=v.message,
                   remediation=v.remediation or pv.rule.remediation, file=pv.source, line=line, column=column,
                   object=_pod_ref(pv.ref) if pv.ref is not None and pv.ref.name else _checkpoint_ref(pv),
                   container=v.container, path=".".join(map(str, v.path)))


def _pod_ref(ref: ObjectRef) -> ObjectRef:
    return ObjectRef(ref.api_version or ("v1" if ref.kind == "Pod" else None), ref.kind, ref.namespace, ref.name)


def _checkpoint_ref(pv) -> ObjectRef | None:
    """A checkpoint finding is about the node's file: its kind, named by the file."""
    if pv.ref is None:
        return None
    return ObjectRef(None, pv.ref.kind, None, pv.source)


def _occupancy(report) -> NodeOccupancy:
    topology = report.topology
    by_pod: dict[str, list] = {}
    for c in report.containers:
        by_pod.setdefault(f"{c.namespace}/{c.pod}", []).append(c)
    pods = [PodOutcome(label=label, admitted=True, reason=None,
                       numa_nodes=tuple(sorted({n for c in cs for n in (*c.cpu_numa, *c.memory_numa)})),
                       exclusive=tuple(sorted({cpu for c in cs for cpu in c.cpus})), shared=())
            for label, cs in by_pod.items()]
    resident = []
    for c in report.containers:
        view = c.processes.view if c.processes is not None else None
        if view is not None and (view.memory or view.hugepages):
            by_numa = dict(view.memory)
            for numa, size in view.hugepages.items():
                by_numa[numa] = by_numa.get(numa, 0) + size
            resident.append(ResidentMemory(f"{c.namespace}/{c.pod} {c.container}", by_numa,
                                           c.processes.assignment.home))
    notes = [report.summary_line()] + [f"not read: {s.line()}" for s in report.missing]
    notes += report.restart.lines() if report.restart is not None else []
    return NodeOccupancy(name=report.node, topology=topology, reserved=report.reserved_cpus, policy=report.policy,
                         pods=pods, notes=notes, resident=resident)
