"""`numaguard node inspect`: what the kubelet on this node did, against what it should have done.

Run on a node (a DaemonSet pod or `kubectl debug node/NAME`), it reads three independent
sources and reports whatever it could read:

* the CPU and Memory Managers' checkpoint files under the kubelet's state directory, judged
  by the checkpoint rules (`numaguard.lint.rules.node`: NG402, NG403, NG406-NG408);
* the machine from `/sys` (`numaguard.lint.numa.capture`, as `numaguard node capture`), with
  the node's KubeletConfiguration (`--kubelet-config`, else `<root>/var/lib/kubelet/config.yaml`);
* the kubelet's PodResources API (`numaguard.lint.node.podresources_client`): per running
  container, the exclusive CPUs and the memory NUMA nodes it got.

Per container it puts side by side the CPUs and memory NUMA nodes it got (PodResources), what
the CPU and Memory Manager checkpoints record, and what the simulator gives it when the listed pods are admitted, in the order the
kubelet lists them, on an empty copy of this node (`numaguard.lint.numa.admission`). Without
pod manifests (`--pods FILE`, e.g. `kubectl get pods -o yaml --field-selector
spec.nodeName=NODE`) each pod is replayed from what it holds: a Guaranteed container per
container with exclusive CPUs, sized by its CPU count and its memory. Exact CPU ids may
legitimately differ from the simulator's (admission order, restarts); the verdict compares
the number of CPUs and the NUMA nodes.

This module is a front end's helper: it reads files and sockets. The engine, the rules, the
semantics and the simulator never import it (an import-linter contract).
"""
from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from numaguard.lint.k8s.checkpoints import (CPU_CHECKPOINT_FILE, MEMORY_CHECKPOINT_FILE, CheckpointError,
                                            CPUCheckpoint, MemoryCheckpoint)
from numaguard.lint.k8s.cpuset import format_cpuset
from numaguard.lint.node.podresources_client import (DEFAULT_SOCKET, PodResourcesError, PodResourcesSnapshot,
                                                     read_pod_resources)
from numaguard.lint.rules.node import CheckpointExtract, checkpoint_findings

DEFAULT_STATE_DIR = "/var/lib/kubelet"


@dataclass
class Source:
    """One input and how reading it went (`ok` False: `message` is the one-line reason)."""

    name: str
    ok: bool
    message: str


@dataclass
class ContainerView:
    namespace: str
    pod: str
    container: str
    cpus: frozenset[int]
    cpu_numa: tuple[int, ...]
    memory_numa: tuple[int, ...]
    checkpoint: str                      # "agrees", "differs: ...", "not recorded", "not read"
    memory_checkpoint: str = "not read"  # the same for the Memory Manager checkpoint's NUMA nodes
    simulated_cpus: frozenset[int] | None = None
    simulated_numa: tuple[int, ...] | None = None
    simulation: str = "not simulated"    # "agrees", "differs: ...", "rejected: ...", "not simulated: ..."

    @property
    def agrees(self) -> bool:
        return not any(v.startswith(("differs", "rejected"))
                       for v in (self.checkpoint, self.memory_checkpoint, self.simulation))

    def as_dict(self) -> dict:
        return {"namespace": self.namespace, "pod": self.pod, "container": self.container,
                "cpus": format_cpuset(self.cpus), "cpuNumaNodes": list(self.cpu_numa),
                "memoryNumaNodes": list(self.memory_numa), "checkpoint": self.checkpoint,
                "memoryCheckpoint": self.memory_checkpoint,
                "simulatedCpus": format_cpuset(self.simulated_cpus) if self.simulated_cpus is not None else None,
                "simulatedNumaNodes": list(self.simulated_numa) if self.simulated_numa is not None else None,
                "simulation": self.simulation, "agrees": self.agrees}


@dataclass
class InspectReport:
    node: str
    sources: list[Source] = field(default_factory=list)
    containers: list[ContainerView] = field(default_factory=list)
    findings: list[dict] = field(default_factory=list)
    allocatable_cpus: frozenset[int] | None = None

    @property
    def read_anything(self) -> bool:
        return any(s.ok for s in self.sources)

    @property
    def exit_code(self) -> int:
        if not self.read_anything:
            return 2
        bad = any(not c.agrees for c in self.containers) or any(f["severity"] == "error" for f in self.findings)
        return 1 if bad else 0

    def as_dict(self) -> dict:
        return {"version": 1, "node": self.node,
                "sources": [{"name": s.name, "ok": s.ok, "message": s.message} for s in self.sources],
                "allocatableCpus": format_cpuset(self.allocatable_cpus) if self.allocatable_cpus is not None else None,
                "containers": [c.as_dict() for c in self.containers], "findings": self.findings}


# ------------------------------------------------------------------------------- gathering

def _under(root: str, path: str) -> Path:
    return Path(root) / path.lstrip("/") if root not in ("", "/") else Path(path)


def _read_checkpoint(path: Path, kind: str) -> tuple[CheckpointExtract | None, Source]:
    name = f"{kind} checkpoint {path}"
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None, Source(name, False, "not found (the manager's policy may be none, or the state directory differs)")
    except (OSError, UnicodeDecodeError) as exc:
        return None, Source(name, False, f"cannot read: {getattr(exc, 'strerror', None) or exc}")
    try:
        data = json.loads(text)
    except ValueError as exc:
        error = CheckpointError((), f"not JSON: {exc}")
        broken = (CPUCheckpoint("unknown", "", frozenset(), error=error) if kind == "cpu"
                  else MemoryCheckpoint("unknown", "", error=error))
        return CheckpointExtract(str(path), kind, broken), Source(name, True, "read (not valid JSON)")
    extract = CheckpointExtract.of(str(path), data, kind)
    c = extract.checkpoint
    what = f"{c.version}, policy {c.policy}" if c.error is None else "corrupt"
    return extract, Source(name, True, f"read ({what})")


def _load_kubelet_config(root: str, path: str | None) -> tuple[dict | None, Source]:
    candidate = Path(path) if path else _under(root, "/var/lib/kubelet/config.yaml")
    name = f"kubelet configuration {candidate}"
    try:
        data = yaml.safe_load(candidate.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None, Source(name, False, "not found (give --kubelet-config)")
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as exc:
        return None, Source(name, False, f"cannot read: {str(exc).splitlines()[0]}")
    if not isinstance(data, dict) or data.get("kind") != "KubeletConfiguration":
        return None, Source(name, False, "not a KubeletConfiguration")
    return data, Source(name, True, "read")


def _load_node(root: str, kc: dict | None):
    from numaguard.lint.numa.capture import capture_node
    from numaguard.lint.numa.node import NodeError, load_node

    sysfs = _under(root, "/sys")
    try:
        profile = capture_node(sysfs)
        if kc is not None:
            profile["spec"]["kubeletConfig"] = kc
        node = load_node(profile, source=str(sysfs))
    except NodeError as exc:
        return None, Source(f"sysfs {sysfs}", False, str(exc))
    except OSError as exc:
        return None, Source(f"sysfs {sysfs}", False, f"cannot read: {exc.strerror or exc}")
    topo = node.topology
    return node, Source(f"sysfs {sysfs}", True, f"{topo.num_sockets} socket(s), {topo.num_numa_nodes} NUMA node(s), "
                                               f"{topo.num_cpus} CPUs")


def _load_pods(path: str | None) -> tuple[dict[tuple[str, str], dict], Source | None]:
    if not path:
        return {}, None
    from numaguard.lint.load.documents import expand_lists, load_paths

    pods: dict[tuple[str, str], dict] = {}
    try:
        for _source, docs, _errors in load_paths([path]):
            for doc in docs:
                for item, prefix in expand_lists(doc):
                    data = item.data
                    for key in prefix:
                        data = data[key]
                    if isinstance(data, dict) and data.get("kind") == "Pod":
                        meta = data.get("metadata") or {}
                        pods[(str(meta.get("namespace") or "default"), str(meta.get("name")))] = data
    except OSError as exc:
        return {}, Source(f"pods {path}", False, f"cannot read: {exc.strerror or exc}")
    return pods, Source(f"pods {path}", True, f"{len(pods)} pod(s)")


# ------------------------------------------------------------------------------- comparing

def _numa_of(topology: Any, cpus) -> tuple[int, ...]:
    if topology is None:
        return ()
    by_id = topology.cpu_by_id
    return tuple(sorted({by_id[c].numa for c in cpus if c in by_id}))


def _checkpoint_verdict(cp: CheckpointExtract | None, uid: str | None, container: str, cpus: frozenset[int]) -> str:
    if cp is None or cp.checkpoint.error is not None:
        return "not read"
    entries = cp.checkpoint.containers
    candidates = [by_c[container] for pod, by_c in entries.items()
                  if container in by_c and (uid is None or pod == uid)]
    if any(c == cpus for c in candidates):
        return "agrees"
    if not cpus and not candidates:
        return "agrees"         # shared pool: no exclusive entry, none expected
    if not candidates:
        return "differs: not recorded" if cpus else "agrees"
    return f"differs: checkpoint records {' or '.join(format_cpuset(c) for c in candidates)}"


def _memory_checkpoint_verdict(cp: CheckpointExtract | None, uid: str | None, container: str,
                               numa: tuple[int, ...]) -> str:
    """The NUMA nodes the Memory Manager checkpoint records for the container's memory blocks
    against the NUMA nodes the PodResources API reports."""
    if cp is None or cp.checkpoint.error is not None:
        return "not read"
    candidates = [tuple(sorted({n for b in by_c[container] for n in b.numa_nodes}))
                  for pod, by_c in cp.checkpoint.containers.items()
                  if container in by_c and (uid is None or pod == uid)]
    if not candidates:
        return "agrees" if not numa else "differs: not recorded"
    if numa in candidates:
        return "agrees"
    shown = " or ".join("NUMA " + (",".join(map(str, c)) or "-") for c in candidates)
    return f"differs: checkpoint records {shown}"


def _synthetic_pod(pod) -> dict | None:
    """A Guaranteed pod with one container per container that holds exclusive CPUs, sized by
    what it holds (memory: the memory it was given, else 64Mi)."""
    containers = []
    for c in pod.containers:
        if not c.cpu_ids:
            continue
        memory = sum(m.size for m in c.memory if m.memory_type == "memory") or 64 * 2**20
        resources = {"cpu": str(len(c.cpu_ids)), "memory": str(memory)}
        for m in c.memory:
            if m.memory_type.startswith("hugepages-"):
                resources[m.memory_type] = str(m.size)
        containers.append({"name": c.name, "image": "replay",
                           "resources": {"requests": dict(resources), "limits": dict(resources)}})
    if not containers:
        return None
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": pod.name, "namespace": pod.namespace},
            "spec": {"containers": containers}}


def _simulate(node: Any, kc: dict | None, snapshot: PodResourcesSnapshot, manifests: dict) -> tuple[dict, str | None]:
    """(namespace, pod) -> Placement for each replayed pod, or a reason nothing was simulated."""
    from numaguard.lint.numa.admission import KubeletStartupError, NodeState, admit

    if node is None:
        return {}, "no node description (sysfs unreadable)"
    if kc is None:
        return {}, "no kubelet configuration"
    try:
        state = NodeState.from_node(node, kc)
    except KubeletStartupError as exc:
        return {}, f"the kubelet configuration would not start: {exc}"
    out = {}
    for pod in snapshot.pods:
        key = (pod.namespace, pod.name)
        manifest = manifests.get(key) or _synthetic_pod(pod)
        if manifest is not None:
            out[key] = admit(state, manifest, f"{pod.namespace}/{pod.name}")
    return out, None


def _simulation_verdict(placement, container: str, cpus: frozenset[int], topology: Any,
                        skipped: str | None) -> tuple[str, frozenset[int] | None, tuple[int, ...] | None]:
    if skipped:
        return f"not simulated: {skipped}", None, None
    if placement is None:
        return ("agrees" if not cpus else "not simulated: no exclusive CPUs in the replay"), None, None
    if not placement.admitted:
        return f"rejected: {placement.reason}", None, None
    sim = frozenset(placement.cpus["exclusive"].get(container, ()))
    sim_numa = _numa_of(topology, sim)
    if len(sim) != len(cpus):
        return f"differs: {len(cpus)} exclusive CPUs, the simulator gives {len(sim)}", sim, sim_numa
    if sim_numa != _numa_of(topology, cpus):
        return (f"differs: NUMA {','.join(map(str, _numa_of(topology, cpus))) or '-'}, the simulator places it on "
                f"NUMA {','.join(map(str, sim_numa)) or '-'}"), sim, sim_numa
    return "agrees", sim, sim_numa


def inspect_node(*, root: str = "/", state_dir: str = DEFAULT_STATE_DIR, socket: str = DEFAULT_SOCKET,
                 kubelet_config: str | None = None, pods: str | None = None, timeout: float = 10.0) -> InspectReport:
    """Gather every source that can be read and compare; never raises for unreadable input."""
    report = InspectReport(node=os.uname().nodename if root in ("", "/") else str(root))
    kc, kc_source = _load_kubelet_config(root, kubelet_config)
    node, node_source = _load_node(root, kc)
    if node is not None:
        report.node = node.name
    report.sources += [node_source, kc_source]
    extracts: list[CheckpointExtract] = []
    cpu_cp = memory_cp = None
    for kind, file_name in (("cpu", CPU_CHECKPOINT_FILE), ("memory", MEMORY_CHECKPOINT_FILE)):
        extract, source = _read_checkpoint(_under(root, state_dir) / file_name, kind)
        report.sources.append(source)
        if extract is not None:
            extracts.append(extract)
            cpu_cp = extract if kind == "cpu" else cpu_cp
            memory_cp = extract if kind == "memory" else memory_cp
    manifests, pods_source = _load_pods(pods)
    if pods_source is not None:
        report.sources.append(pods_source)
    socket_path = str(_under(root, socket))
    try:
        snapshot = read_pod_resources(socket_path, timeout)
        report.sources.append(Source(f"PodResources API {socket_path}", True, f"{len(snapshot.pods)} pod(s)"
                                     + "".join(f"; {p}" for p in snapshot.problems)))
        report.allocatable_cpus = snapshot.allocatable_cpus if not snapshot.problems else None
    except PodResourcesError as exc:
        snapshot = None
        report.sources.append(Source("PodResources API", False, str(exc)))

    uids = {(str((m.get("metadata") or {}).get("namespace") or "default"), str(m["metadata"].get("name"))):
            (m.get("metadata") or {}).get("uid") for m in manifests.values()}
    pod_uids = {u for u in uids.values() if u} or None
    for pv in checkpoint_findings(extracts, kubelet_config=kc, topology=getattr(node, "topology", None),
                                  pod_uids=pod_uids):
        report.findings.append({"rule": pv.rule.id, "name": pv.rule.name, "severity": pv.rule.severity.value,
                                "file": pv.source, "path": ".".join(map(str, pv.violation.path)),
                                "message": pv.violation.message})
    if snapshot is None:
        return report
    topology = getattr(node, "topology", None)
    placements, skipped = _simulate(node, kc, snapshot, manifests)
    for pod in snapshot.pods:
        uid = uids.get((pod.namespace, pod.name))
        for c in pod.containers:
            memory_numa = tuple(sorted({n for m in c.memory for n in m.numa_nodes}))
            verdict, sim, sim_numa = _simulation_verdict(placements.get((pod.namespace, pod.name)), c.name,
                                                         c.cpu_ids, topology, skipped)
            report.containers.append(ContainerView(
                pod.namespace, pod.name, c.name, c.cpu_ids, _numa_of(topology, c.cpu_ids), memory_numa,
                _checkpoint_verdict(cpu_cp, uid, c.name, c.cpu_ids),
                _memory_checkpoint_verdict(memory_cp, uid, c.name, memory_numa), sim, sim_numa, verdict))
    return report


# ------------------------------------------------------------------------------- text

def render_text(report: InspectReport) -> str:
    lines = [f"node {report.node}"]
    for s in report.sources:
        lines.append(f"  {'ok  ' if s.ok else 'FAIL'} {s.name}: {s.message}")
    if report.allocatable_cpus is not None:
        lines.append(f"  allocatable CPUs (PodResources): {format_cpuset(report.allocatable_cpus) or '-'}")
    if report.containers:
        lines.append("")
        lines.append("containers (CPUs got / checkpoint / simulator):")
    for c in report.containers:
        numa = ",".join(map(str, c.cpu_numa)) or "-"
        mem = ",".join(map(str, c.memory_numa)) or "-"
        cpus = f"cpus {format_cpuset(c.cpus)} (NUMA {numa})" if c.cpus else "cpus: shared pool"
        lines.append(f"  {c.namespace}/{c.pod} {c.container}: {cpus}, memory NUMA {mem}")
        lines.append(f"      checkpoint: {c.checkpoint}")
        lines.append(f"      memory checkpoint: {c.memory_checkpoint}")
        sim = (f" ({format_cpuset(c.simulated_cpus)}, NUMA {','.join(map(str, c.simulated_numa or ())) or '-'})"
               if c.simulated_cpus else "")
        lines.append(f"      simulator:  {c.simulation}{sim}")
    if report.findings:
        lines.append("")
        lines.append("checkpoint findings:")
        for f in report.findings:
            lines.append(f"  {f['file']}  {f['rule']}  {f['severity']}  {f['message']}")
    differ = sum(not c.agrees for c in report.containers)
    lines.append("")
    lines.append(f"{len(report.containers)} container(s), {differ} differ; {len(report.findings)} checkpoint finding(s)")
    return "\n".join(lines) + "\n"
