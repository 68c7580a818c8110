"""`numaguard node inspect`: what the kubelet on this node did, against what it should have done.

Run on a node (a DaemonSet pod or `kubectl debug node/NAME`), it reads the sources of
`numaguard.lint.node.sources` and reports whatever it could read: the checkpoint files judged
by the checkpoint rules (`numaguard.lint.rules.node`: NG402, NG403, NG406-NG408), and, per
container the kubelet's PodResources API lists, its CPUs and memory NUMA nodes side by side with
the checkpoints' entries for it (`numaguard.lint.node.matching`: by pod uid, else by an
unambiguous container name) and with what the simulator gives it (`numaguard.lint.node.replay`);
a container on reserved CPUs is NG409.

The outcome says how much was checked: exit 2 when nothing of the kubelet's could be read (no
checkpoint, no PodResources answer), 1 when something differs or a finding is an error, 3
(incomplete) when a needed source was not read or a container could not be matched, else 0.
The comparisons per container are named checks (`ContainerView.checks`, in `CHECKS` order), so
a new source adds a check without touching the others.

This module is a front end's helper: it reads files and sockets. The engine, the rules, the
semantics and the simulator never import it (an import-linter contract).
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field

from numaguard.lint.k8s.checkpoints import CPU_CHECKPOINT_FILE, CURRENT, MEMORY_CHECKPOINT_FILE, Version
from numaguard.lint.k8s.cpuset import format_cpuset
from numaguard.lint.node.matching import (AGREES, DIFFERS, REJECTED, SKIPPED, UNCHECKED, PodIdentity, Verdict,
                                          entry_verdict, find_entry, identify, show_cpus, show_numa)
from numaguard.lint.node.podresources_client import DEFAULT_SOCKET, DEFAULT_TIMEOUT
from numaguard.lint.node.replay import numa_of, replay, simulation_verdict
from numaguard.lint.node.sources import (Source, load_kubelet_config, load_node, load_pod_manifests,
                                         read_checkpoint, read_pod_log_dirs, read_podresources, under)
from numaguard.lint.rules.node import (CheckpointExtract, RunningContainer, checkpoint_findings,
                                       reserved_cpu_findings)

DEFAULT_STATE_DIR = "/var/lib/kubelet"
EXIT_OK, EXIT_DIFFERS, EXIT_NOTHING_READ, EXIT_INCOMPLETE = 0, 1, 2, 3

# The per-container checks: JSON key -> the label of the text report, in report order.
CHECKS = {"checkpoint": "checkpoint", "memoryCheckpoint": "memory checkpoint", "simulation": "simulator"}


@dataclass
class ContainerView:
    namespace: str
    pod: str
    container: str
    cpus: frozenset[int]
    cpu_numa: tuple[int, ...]
    memory_numa: tuple[int, ...]
    identity: PodIdentity
    checks: dict[str, Verdict] = field(default_factory=dict)
    simulated_cpus: frozenset[int] | None = None
    simulated_numa: tuple[int, ...] | None = None
    reserved: frozenset[int] = frozenset()       # its CPUs among reservedSystemCPUs (NG409)

    @property
    def outcome(self) -> str:
        """"differs" (a check differs or the simulator rejects the pod), "unchecked" (a check
        could not be made), else "agrees"."""
        statuses = {v.status for v in self.checks.values()}
        if statuses & {DIFFERS, REJECTED} or self.reserved:
            return DIFFERS
        return UNCHECKED if UNCHECKED in statuses else AGREES

    @property
    def by_name_only(self) -> bool:
        return any(v.by_name for v in self.checks.values())

    def as_dict(self) -> dict:
        return {"namespace": self.namespace, "pod": self.pod, "container": self.container,
                "uid": self.identity.uid, "uidFrom": self.identity.how,
                "cpus": format_cpuset(self.cpus), "cpuNumaNodes": list(self.cpu_numa),
                "memoryNumaNodes": list(self.memory_numa),
                **{key: str(self.checks.get(key, Verdict(SKIPPED))) for key in CHECKS},
                "simulatedCpus": format_cpuset(self.simulated_cpus) if self.simulated_cpus is not None else None,
                "simulatedNumaNodes": list(self.simulated_numa) if self.simulated_numa is not None else None,
                "reservedCpus": format_cpuset(self.reserved), "outcome": self.outcome,
                "agrees": self.outcome == AGREES}


@dataclass
class InspectReport:
    node: str
    sources: list[Source] = field(default_factory=list)
    containers: list[ContainerView] = field(default_factory=list)
    findings: list[dict] = field(default_factory=list)
    allocatable_cpus: frozenset[int] | None = None

    @property
    def checked_anything(self) -> bool:
        """Was any of the kubelet's own records read (a checkpoint, the PodResources API)?"""
        return any(s.ok and s.kubelet for s in self.sources)

    @property
    def missing(self) -> list[Source]:
        return [s for s in self.sources if s.missing]

    def count(self, outcome: str) -> int:
        return sum(c.outcome == outcome for c in self.containers)

    @property
    def complete(self) -> bool:
        return not self.missing and not self.count(UNCHECKED)

    @property
    def exit_code(self) -> int:
        if not self.checked_anything:
            return EXIT_NOTHING_READ
        if self.count(DIFFERS) or any(f["severity"] == "error" for f in self.findings):
            return EXIT_DIFFERS
        return EXIT_OK if self.complete else EXIT_INCOMPLETE

    def summary_line(self) -> str:
        """The verdict in one line: what was checked, what differs, and what could not be read."""
        if not self.checked_anything:
            return ("nothing from the kubelet could be checked: "
                    + "; ".join(s.line() for s in self.sources if s.kubelet and not s.ok))
        by_name = sum(c.by_name_only and c.outcome == AGREES for c in self.containers)
        line = (f"{len(self.containers)} container(s): {self.count(AGREES)} agree"
                + (f" ({by_name} matched by name only)" if by_name else "")
                + f", {self.count(DIFFERS)} differ, {self.count(UNCHECKED)} unchecked; {len(self.findings)} finding(s)")
        gaps = [s.line() for s in self.missing]
        if self.count(UNCHECKED):
            gaps.append(f"{self.count(UNCHECKED)} container(s) not matched to their checkpoint entries")
        return line + ("; incomplete: " + "; ".join(gaps) if gaps else "")

    def as_dict(self) -> dict:
        return {"version": 1, "node": self.node,
                "sources": [{"name": s.name, "ok": s.ok, "message": s.message} for s in self.sources],
                "allocatableCpus": format_cpuset(self.allocatable_cpus) if self.allocatable_cpus is not None else None,
                "containers": [c.as_dict() for c in self.containers], "findings": self.findings,
                "summary": {"containers": len(self.containers), "agree": self.count(AGREES),
                            "differ": self.count(DIFFERS), "unchecked": self.count(UNCHECKED),
                            "findings": len(self.findings), "complete": self.complete,
                            "notRead": [s.line() for s in self.missing], "line": self.summary_line(),
                            "exitCode": self.exit_code}}


# ------------------------------------------------------------------------------- gathering

def inspect_node(*, root: str = "/", state_dir: str = DEFAULT_STATE_DIR, socket: str = DEFAULT_SOCKET,
                 kubelet_config: str | None = None, pods: str | None = None, timeout: float = DEFAULT_TIMEOUT,
                 version: Version = CURRENT) -> InspectReport:
    """Gather every source that can be read and compare; never raises for unreadable input.
    `version`: the kubelet's minor version (how it reads its checkpoints)."""
    report = InspectReport(node=os.uname().nodename if root in ("", "/") else str(root))
    kc, kc_source = load_kubelet_config(root, kubelet_config)
    node, node_source = load_node(root, kc)
    if node is not None:
        report.node = node.name
    report.sources += [node_source, kc_source]
    extracts: dict[str, CheckpointExtract] = {}
    for kind, file_name in (("cpu", CPU_CHECKPOINT_FILE), ("memory", MEMORY_CHECKPOINT_FILE)):
        extract, source = read_checkpoint(under(root, state_dir) / file_name, kind, version)
        report.sources.append(source)
        if extract is not None:
            extracts[kind] = extract
    manifests, pods_source = load_pod_manifests(pods)
    log_uids, logs_source = read_pod_log_dirs(root, kc)       # the uids --pods does not give
    report.sources += [s for s in (pods_source, logs_source) if s is not None]
    snapshot, pr_source = read_podresources(str(under(root, socket)), timeout)
    report.sources.append(pr_source)
    if snapshot is not None and pr_source.whole:
        report.allocatable_cpus = snapshot.allocatable_cpus

    manifest_uids = {key: str((m.get("metadata") or {}).get("uid") or "") for key, m in manifests.items()}
    topology = getattr(node, "topology", None)
    known = {u for u in manifest_uids.values() if u} or None
    for pv in checkpoint_findings(list(extracts.values()), kubelet_config=kc, topology=topology, pod_uids=known):
        report.findings.append(_finding(pv))
    if snapshot is None:
        return report
    report.containers = _compare(snapshot, extracts, manifests, manifest_uids, log_uids, node, kc)
    reserved = _reserved(kc)
    for c in report.containers:
        c.reserved = c.cpus & reserved
    report.findings += [_finding(pv) for pv in reserved_cpu_findings(
        [RunningContainer(f"{c.namespace}/{c.pod}", c.container, c.cpus, f"pod/{c.namespace}/{c.pod}")
         for c in report.containers], kubelet_config=kc)]
    return report


def _reserved(kc: dict | None) -> frozenset[int]:
    """reservedSystemCPUs, or none (no configuration, or a list NG209 reports as invalid)."""
    from numaguard.lint.k8s import kubelet as k
    from numaguard.lint.k8s.cpuset import CPUSetError
    try:
        return (k.reserved_system_cpus(kc) or frozenset()) if kc is not None else frozenset()
    except CPUSetError:
        return frozenset()


def _finding(pv) -> dict:
    return {"rule": pv.rule.id, "name": pv.rule.name, "severity": pv.rule.severity.value, "file": pv.source,
            "path": ".".join(map(str, pv.violation.path)), "container": pv.violation.container,
            "message": pv.violation.message, "remediation": pv.violation.remediation or pv.rule.remediation}


def _compare(snapshot, extracts: dict[str, CheckpointExtract], manifests: dict, manifest_uids: dict,
             log_uids: dict, node, kc) -> list[ContainerView]:
    topology = getattr(node, "topology", None)
    placements, skipped = replay(node, kc, snapshot, manifests)
    cpu_entries = _usable(extracts.get("cpu"), lambda c: c.containers)
    # A V1 file a kubelet before 1.37 restores: entries by container id, which only the
    # container runtime maps to pods, so no container can be compared with its entry.
    by_id = extracts["cpu"].checkpoint.container_ids if cpu_entries is not None else {}
    v1 = Verdict(UNCHECKED, f"a V1 checkpoint keys its {len(by_id)} entries by container id") if by_id else None
    memory_entries = _usable(extracts.get("memory"), lambda c: {
        pod: {name: tuple(sorted({n for b in blocks for n in b.numa_nodes})) for name, blocks in by_c.items()}
        for pod, by_c in c.containers.items()})
    running_with_name: dict[str, int] = {}
    for pod in snapshot.pods:
        for name in {c.name for c in pod.containers}:
            running_with_name[name] = running_with_name.get(name, 0) + 1
    out = []
    for pod in snapshot.pods:
        who = identify(pod.namespace, pod.name, manifest_uids, log_uids)
        for c in pod.containers:
            memory_numa = tuple(sorted({n for m in c.memory for n in m.numa_nodes}))
            checks: dict[str, Verdict] = {}
            checks["checkpoint"] = (Verdict(SKIPPED, "not read") if cpu_entries is None else v1 or entry_verdict(
                find_entry(cpu_entries, who, c.name, running_with_name[c.name]), c.cpu_ids, show_cpus))
            checks["memoryCheckpoint"] = (Verdict(SKIPPED, "not read") if memory_entries is None else entry_verdict(
                find_entry(memory_entries, who, c.name, running_with_name[c.name]), memory_numa, show_numa))
            checks["simulation"], sim, sim_numa = simulation_verdict(placements.get((pod.namespace, pod.name)),
                                                                     c.name, c.cpu_ids, topology, skipped)
            out.append(ContainerView(pod.namespace, pod.name, c.name, c.cpu_ids, numa_of(topology, c.cpu_ids),
                                     memory_numa, who, checks, sim, sim_numa))
    return out


def _usable(extract: CheckpointExtract | None, entries):
    """The checkpoint's per-container entries (pod uid -> container -> value), or None when it
    was not read or the kubelet cannot restore it (then there is nothing to compare with)."""
    if extract is None or extract.checkpoint.error is not None:
        return None
    return entries(extract.checkpoint)


# ------------------------------------------------------------------------------- text

def render_text(report: InspectReport) -> str:
    lines = [f"node {report.node}"]
    for s in report.sources:
        lines.append(f"  {'ok  ' if s.ok else 'FAIL'} {s.name}: {s.message}")
    if report.allocatable_cpus is not None:
        lines.append(f"  allocatable CPUs (PodResources): {format_cpuset(report.allocatable_cpus) or '-'}")
    if report.containers:
        lines.append("")
        lines.append("containers (CPUs got / checkpoints / simulator):")
    for c in report.containers:
        numa = ",".join(map(str, c.cpu_numa)) or "-"
        mem = ",".join(map(str, c.memory_numa)) or "-"
        cpus = f"cpus {format_cpuset(c.cpus)} (NUMA {numa})" if c.cpus else "cpus: shared pool"
        uid = f"uid {c.identity.uid} ({c.identity.how})" if c.identity.uid else f"uid unknown ({c.identity.how})"
        lines.append(f"  {c.namespace}/{c.pod} {c.container}: {cpus}, memory NUMA {mem}; {uid}")
        for key, label in CHECKS.items():
            verdict = c.checks.get(key, Verdict(SKIPPED))
            extra = ""
            if key == "simulation" and c.simulated_cpus:
                extra = f" ({format_cpuset(c.simulated_cpus)}, NUMA {','.join(map(str, c.simulated_numa or ())) or '-'})"
            lines.append(f"      {label + ':':<19}{verdict}{extra}")
        if c.reserved:
            lines.append(f"      {'reserved CPUs:':<19}{format_cpuset(c.reserved)} (NG409)")
    if report.findings:
        lines.append("")
        lines.append("findings:")
        for f in report.findings:
            lines.append(f"  {f['file']}  {f['rule']}  {f['severity']}  {f['message']}")
    lines.append("")
    lines.append(report.summary_line())
    return "\n".join(lines) + "\n"
