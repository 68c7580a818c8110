"""`numaguard node inspect`: what the kubelet on this node did, against what it should have done.

Run on a node (a DaemonSet pod or `kubectl debug node/NAME`), it reads the sources of
`numaguard.lint.node.sources` and reports whatever it could read: the checkpoint files judged
by the checkpoint rules against the configuration and the machine (`numaguard.lint.rules.node`:
NG402, NG403, NG406-NG408, NG419-NG422), whether the kubelet restarts with the configuration and
what that does to the running pods (`numaguard.lint.node.restart`, NG423), and, per
container the kubelet's PodResources API lists, its CPUs and memory NUMA nodes side by side with
the checkpoints' entries for it (`numaguard.lint.node.matching`: by pod uid, else by an
unambiguous container name) and with what the simulator gives it (`numaguard.lint.node.replay`);
a container on reserved CPUs is NG409.

The outcome says how much was checked: exit 2 when nothing of the kubelet's could be read (no
checkpoint, no PodResources answer), 1 when something differs or a finding is an error, 3
(incomplete) when a needed source was not read or a container could not be matched, else 0.
The comparisons per container are named checks (`ContainerView.checks`, in `CHECKS` order), so
a new source adds a check without touching the others. `--processes`
(`numaguard.lint.node.processes`) adds the kernel's view: cgroup, threads, memory locality
and throttling per container (NG412-NG418).

This module is a front end's helper: it reads files and sockets. The engine, the rules, the
semantics and the simulator never import it (an import-linter contract).
"""
from __future__ import annotations

import os
import time
from dataclasses import dataclass, field
from typing import Any, Callable

from numaguard.lint.k8s.checkpoints import CPU_CHECKPOINT_FILE, CURRENT, MEMORY_CHECKPOINT_FILE, Version
from numaguard.lint.k8s.cpuset import format_cpuset
from numaguard.lint.node.matching import (AGREES, DIFFERS, REJECTED, SKIPPED, UNCHECKED, WARNS, PodIdentity,
                                          Verdict, entry_verdict, find_entry, identify, show_cpus, show_numa)
from numaguard.lint.node.podresources_client import DEFAULT_SOCKET, DEFAULT_TIMEOUT
from numaguard.lint.node.processes import PROCESS_CHECKS, ProcessOptions, ProcessResult, inspect_processes
from numaguard.lint.node.replay import numa_of, replay, simulation_verdict
from numaguard.lint.node.restart import RestartPrediction, config_refusals, predict
from numaguard.lint.node.sources import (Source, kubelet_config_path, load_kubelet_config, load_node,
                                         load_pod_manifests, read_checkpoint, read_memory_machine, read_pod_log_dirs,
                                         read_podresources, under)
from numaguard.lint.rules.node import (CheckpointExtract, RunningContainer, checkpoint_findings,
                                       reserved_cpu_findings)

DEFAULT_STATE_DIR = "/var/lib/kubelet"
EXIT_OK, EXIT_DIFFERS, EXIT_NOTHING_READ, EXIT_INCOMPLETE = 0, 1, 2, 3

# The per-container checks: JSON key -> the label of the text report, in report order. The
# last four run with --processes only; a view lists the checks that ran.
CHECKS = {"checkpoint": "checkpoint", "memoryCheckpoint": "memory checkpoint", "simulation": "simulator",
          "cgroup": "cgroup", "threads": "threads", "memoryLocality": "memory locality", "throttling": "throttling"}
BASE_CHECKS = ("checkpoint", "memoryCheckpoint", "simulation")


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
    # the matched checkpoint entries: (exclusive CPUs, memory NUMA nodes); None: unknown (not
    # read, not matched), empty: the checkpoint records nothing for it
    entries: tuple[frozenset[int] | None, tuple[int, ...] | None] = (None, None)
    processes: ProcessResult | None = None       # --processes: the kernel's view

    @property
    def outcome(self) -> str:
        """"differs" (a check differs or the simulator rejects the pod), "unchecked" (a check
        could not be made), "warns" (a warning-level check), else "agrees"."""
        statuses = {v.status for v in self.checks.values()}
        if statuses & {DIFFERS, REJECTED} or self.reserved:
            return DIFFERS
        if UNCHECKED in statuses:
            return UNCHECKED
        return WARNS if WARNS in statuses else AGREES

    def unchecked_in(self, keys) -> bool:
        return any(self.checks[k].status == UNCHECKED for k in keys if k in self.checks)

    @property
    def by_name_only(self) -> bool:
        return any(v.by_name for v in self.checks.values())

    def as_dict(self) -> dict:
        return {"namespace": self.namespace, "pod": self.pod, "container": self.container,
                "uid": self.identity.uid, "uidFrom": self.identity.how,
                "cpus": format_cpuset(self.cpus), "cpuNumaNodes": list(self.cpu_numa),
                "memoryNumaNodes": list(self.memory_numa),
                **{key: str(self.checks[key]) for key in CHECKS if key in self.checks},
                "simulatedCpus": format_cpuset(self.simulated_cpus) if self.simulated_cpus is not None else None,
                "simulatedNumaNodes": list(self.simulated_numa) if self.simulated_numa is not None else None,
                "reservedCpus": format_cpuset(self.reserved), "outcome": self.outcome,
                "agrees": self.outcome == AGREES,
                **({"kernel": self.processes.as_dict()} if self.processes is not None else {})}


@dataclass
class InspectReport:
    node: str
    sources: list[Source] = field(default_factory=list)
    containers: list[ContainerView] = field(default_factory=list)
    findings: list[dict] = field(default_factory=list)
    violations: list = field(default_factory=list)       # the findings as the rules gave them (PoolViolation)
    allocatable_cpus: frozenset[int] | None = None
    # for the HTML map: the node's topology and reserved CPUs, the configured policies
    topology: Any = None
    reserved_cpus: frozenset[int] = frozenset()
    policy: str = ""
    restart: RestartPrediction | None = None     # a restart with the configuration read

    def add(self, violations) -> None:
        for pv in violations:
            self.violations.append(pv)
            self.findings.append(_finding(pv))

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
                + f", {self.count(DIFFERS)} differ"
                + (f", {self.count(WARNS)} with warnings" if self.count(WARNS) else "")
                + f", {self.count(UNCHECKED)} unchecked; {len(self.findings)} finding(s)")
        gaps = [s.line() for s in self.missing]
        unmatched = sum(c.unchecked_in(BASE_CHECKS) for c in self.containers)
        if unmatched:
            gaps.append(f"{unmatched} container(s) not matched to their checkpoint entries")
        unseen = sum(c.unchecked_in(PROCESS_CHECKS) and not c.unchecked_in(BASE_CHECKS) for c in self.containers)
        if unseen:
            gaps.append(f"{unseen} container(s) not fully seen in the kernel")
        if self.restart is not None and not self.restart.starts:
            line += f"; the kubelet does not start with {self.restart.config}"
        return line + ("; incomplete: " + "; ".join(gaps) if gaps else "")

    def as_dict(self) -> dict:
        return {"version": 1, "node": self.node,
                "sources": [{"name": s.name, "ok": s.ok, "message": s.message} for s in self.sources],
                "allocatableCpus": format_cpuset(self.allocatable_cpus) if self.allocatable_cpus is not None else None,
                "containers": [c.as_dict() for c in self.containers], "findings": self.findings,
                "restart": self.restart.as_dict() if self.restart is not None else None,
                "summary": {"containers": len(self.containers), "agree": self.count(AGREES),
                            "differ": self.count(DIFFERS), "warn": self.count(WARNS),
                            "unchecked": self.count(UNCHECKED),
                            "findings": len(self.findings), "complete": self.complete,
                            "notRead": [s.line() for s in self.missing], "line": self.summary_line(),
                            "exitCode": self.exit_code}}


# ------------------------------------------------------------------------------- gathering

def inspect_node(*, root: str = "/", state_dir: str = DEFAULT_STATE_DIR, socket: str = DEFAULT_SOCKET,
                 kubelet_config: str | None = None, pods: str | None = None, timeout: float = DEFAULT_TIMEOUT,
                 version: Version = CURRENT, processes: ProcessOptions | None = None,
                 sleep: Callable[[float], None] = time.sleep, sysfs: str | None = None) -> InspectReport:
    """Gather every source that can be read and compare; never raises for unreadable input.
    `version`: the kubelet's minor version (how it reads its checkpoints); `processes`: also
    read the kernel's view of every container (`sleep` waits out its sample); `sysfs`: where
    the node's /sys is, when not under `root`."""
    report = InspectReport(node=os.uname().nodename if root in ("", "/") else str(root))
    kc, kc_source = load_kubelet_config(root, kubelet_config)
    current = _own_config(root, kubelet_config, kc)
    node, node_source = load_node(root, kc, sysfs)
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
    config_path = str(kubelet_config_path(root, kubelet_config))
    if kc is not None:
        report.add(config_refusals(config_path, node, version))
    machine = read_memory_machine(root, sysfs) if node is not None else None
    report.add(checkpoint_findings(list(extracts.values()), kubelet_config=kc, topology=topology, pod_uids=known,
                                   machine=machine, version=version))
    reserved = _reserved(kc)
    report.topology, report.reserved_cpus, report.policy = topology, reserved, _policy(kc)
    if snapshot is not None:
        report.containers = _compare(snapshot, extracts, manifests, manifest_uids, log_uids, node, kc)
        for c in report.containers:
            c.reserved = c.cpus & reserved
        report.add(reserved_cpu_findings(
            [RunningContainer(f"{c.namespace}/{c.pod}", c.container, c.cpus, f"pod/{c.namespace}/{c.pod}")
             for c in report.containers], kubelet_config=kc))
    if kc is not None:
        names = {c.identity.uid: f"{c.namespace}/{c.pod}" for c in report.containers if c.identity.uid}
        report.restart = predict(config_path, kc, current, extracts, topology, list(report.violations), names, known,
                                 version)
        if report.restart.eventful:
            report.add([report.restart.violation()])
    if processes is not None:
        checkpoints = [_restored(extracts.get(kind)) for kind in ("cpu", "memory")]
        results, sources, found = inspect_processes(root, kc, report.containers, manifests, *checkpoints, topology,
                                                    processes, sleep)
        report.sources += sources
        for c, result in zip(report.containers, results):
            c.processes = result
            c.checks.update(result.checks)
        report.add(found)
    return report


def _own_config(root: str, given: str | None, judged: dict | None) -> dict | None:
    """The node's own configuration when another one is judged (`--kubelet-config NEW`): what
    the restart changes from. None when it is the same, or cannot be read."""
    if not given or judged is None:
        return None
    own, _ = load_kubelet_config(root, None)
    return own if own is not None and own != judged else None


def _restored(extract: CheckpointExtract | None):
    """The checkpoint as the kubelet restored it, or None (not read, or it cannot be restored)."""
    return extract.checkpoint if extract is not None and extract.checkpoint.error is None else None


def _policy(kc: dict | None) -> str:
    if kc is None:
        return "kubelet configuration not read"
    from numaguard.lint.k8s import kubelet as k
    return (f"cpu {k.cpu_manager_policy(kc)[0]}, memory {k.memory_manager_policy(kc)[0]}, topology "
            f"{k.topology_manager_policy(kc)[0]}")


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
    views = container_views(snapshot, extracts, manifest_uids, log_uids, topology)
    for v in views:
        v.checks["simulation"], v.simulated_cpus, v.simulated_numa = simulation_verdict(
            placements.get((v.namespace, v.pod)), v.container, v.cpus, topology, skipped)
    return views


def container_views(snapshot, extracts: dict[str, CheckpointExtract], manifest_uids: dict, log_uids: dict,
                    topology) -> list[ContainerView]:
    """One view per container the PodResources snapshot lists, matched to its checkpoint entries
    (`entries`) and judged against them (the `checkpoint` and `memoryCheckpoint` checks)."""
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
            cpu_match = None if cpu_entries is None or v1 else find_entry(cpu_entries, who, c.name,
                                                                          running_with_name[c.name])
            memory_match = None if memory_entries is None else find_entry(memory_entries, who, c.name,
                                                                           running_with_name[c.name])
            checks["checkpoint"] = (Verdict(SKIPPED, "not read") if cpu_entries is None else v1 or entry_verdict(
                cpu_match, c.cpu_ids, show_cpus))
            checks["memoryCheckpoint"] = (Verdict(SKIPPED, "not read") if memory_match is None else entry_verdict(
                memory_match, memory_numa, show_numa))
            out.append(ContainerView(pod.namespace, pod.name, c.name, c.cpu_ids, numa_of(topology, c.cpu_ids),
                                     memory_numa, who, checks,
                                     entries=(_entry(cpu_match, frozenset()), _entry(memory_match, ()))))
    return out


def _entry(match, nothing):
    """A matched entry's value; `nothing` when the checkpoint records none for the container,
    None when unknown (not read, or not matched)."""
    if match is None or match.status == "ambiguous":
        return None
    return match.value if match.status == "found" else nothing


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
            if key not in c.checks:
                continue
            extra = ""
            if key == "simulation" and c.simulated_cpus:
                extra = f" ({format_cpuset(c.simulated_cpus)}, NUMA {','.join(map(str, c.simulated_numa or ())) or '-'})"
            lines.append(f"      {label + ':':<19}{c.checks[key]}{extra}")
        if c.processes is not None and c.processes.hottest:
            lines.append(f"      {'hottest threads:':<19}" + "; ".join(
                f"{t.label()} {t.cpu_seconds:.2f} s" + (f" (+{t.window_seconds:.2f} s)" if t.window_seconds else "")
                + f" on CPU {t.last_cpu}" for t in c.processes.hottest))
        if c.reserved:
            lines.append(f"      {'reserved CPUs:':<19}{format_cpuset(c.reserved)} (NG409)")
    lines.append("")
    lines += report.restart.lines() if report.restart is not None else [
        "restart: not predicted (no kubelet configuration was read)"]
    if report.findings:
        lines.append("")
        lines.append("findings:")
        for f in report.findings:
            lines.append(f"  {f['file']}  {f['rule']}  {f['severity']}  {f['message']}")
    lines.append("")
    lines.append(report.summary_line())
    return "\n".join(lines) + "\n"
