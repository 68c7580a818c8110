"""Judging the pods while they are read, each distinct pod template once.

The replicas of a ReplicaSet, StatefulSet or DaemonSet differ only in per-replica metadata
(name, uid, creationTimestamp, ownerReferences), their node (spec.nodeName) and their status.
The pod rules see a pod through `numaguard.lint.objects.PodTarget`: its spec and its
annotations (suppressions, scope) and nothing else of its metadata. So a pod template is keyed
here on its spec without nodeName and its annotations, as the webhook's FindingsCache keys
objects without their volatile metadata (numaguard/webhook/decide.py), and judged once; each
pod reported (every pod the kubelet rejected, the first pod of each controller, every bare
pod) gets the template's findings under its own name. The status rules (NG410, NG411: what
the kubelet did with this very pod) run on each rejected pod itself.

The occupancy replay (each node's pods admitted oldest first on a simulated node) keeps, per
pod, only its node, its age, its name and the id of its spec as admission sees it: without the
fields only the scheduler reads (nodeName, nodeSelector, affinity, tolerations; a DaemonSet's
pods differ in the node affinity the controller writes into each), which the simulator
(numaguard.lint.numa.admission) never reads. Nodes with the same hardware, configuration and
sequence of specs are simulated once (a homogeneous pool runs the same DaemonSets and replicas
everywhere).
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field, replace
from typing import Any

from numaguard.lint.engine import Linter, RunPart, Selection
from numaguard.lint.load.documents import Document
from numaguard.lint.cluster.trim import POD_SPEC_KEYS
from numaguard.lint.model import Finding, Summary

SCHEDULING_ONLY = frozenset({"nodeName", "nodeSelector", "affinity", "tolerations"})
ADMISSION_KEYS = tuple(k for k in POD_SPEC_KEYS if k not in SCHEDULING_ONLY)


def pod_file(pod: dict) -> str:
    meta = pod["metadata"]
    return f"pod/{meta.get('namespace')}/{meta.get('name')}"


def workload_of(pod: dict) -> str:
    from numaguard.lint.rules.state import owner_text
    meta = pod["metadata"]
    ns = meta.get("namespace") or ""
    return f"{ns}/{owner_text(pod)}" if meta.get("ownerReferences") else f"{ns}/Pod/{meta.get('name')}"


def _controller_key(meta: dict) -> tuple | None:
    for ref in meta.get("ownerReferences", ()):
        if ref.get("controller"):
            return meta.get("namespace"), ref.get("uid") or ref.get("name")
    return None


@dataclass
class _Reported:
    """A pod whose findings the report lists: its file, name, template and (when the kubelet
    rejected it) the status rules' findings."""
    file: str
    namespace: str | None
    name: str | None
    template: tuple
    status: RunPart | None


@dataclass
class PodJudge:
    """Feed it pods (trimmed, in list order) with `add`; `judge_pending` once the node the
    NUMA-fit rules judge against is known (`use_node`); `parts` at the end."""

    config: Any
    selection: Selection
    node: Any = None
    node_known: bool = False
    pool_nodes: dict[str, Any] = field(default_factory=dict)    # each pool's node description
    specs: list[dict] = field(default_factory=list)            # spec id -> spec
    on_nodes: dict[str, list[tuple]] = field(default_factory=dict)   # node -> [(order, label, spec id)]
    # node -> [(pod label, reason)] of the pods its kubelet rejected, listed under the node in reports
    kubelet_rejected: dict[str, list[tuple[str, str]]] = field(default_factory=dict)
    workloads: dict[str, str] = field(default_factory=dict)
    rejected: int = 0
    pods: int = 0
    _spec_ids: dict[str, int] = field(default_factory=dict)
    _templates: dict[tuple, RunPart] = field(default_factory=dict)
    _template_origin: dict[tuple, tuple] = field(default_factory=dict)   # key -> (namespace, name)
    _pending: dict[tuple, dict] = field(default_factory=dict)            # key -> pod, not judged yet
    _reported: list[_Reported] = field(default_factory=list)
    _controllers: set = field(default_factory=set)
    _linter: Linter | None = None
    _status_linter: Linter | None = None

    def __post_init__(self) -> None:
        from numaguard.lint.rules.registry import all_rules
        status_rules = tuple(r.id for r in all_rules() if r.target == "status" and self.selection.enabled(r))
        if status_rules:
            self._status_linter = Linter(config=self.config, selection=Selection(
                select=status_rules, severities=self.selection.severities))

    # -- reading -------------------------------------------------------------------------
    def add(self, pod: dict) -> None:
        from numaguard.lint.rules.state import rejection

        meta, spec = pod["metadata"], pod["spec"]
        self.pods += 1
        phase = (pod.get("status") or {}).get("phase")
        if spec.get("nodeName") and phase not in ("Succeeded", "Failed"):
            label = f"{meta.get('namespace')}/{meta.get('name')}"
            order = (meta.get("creationTimestamp") or "", meta.get("namespace") or "", meta.get("name") or "")
            self.on_nodes.setdefault(spec["nodeName"], []).append((order, label, self._spec_id(spec)))
        found = rejection(pod)
        rejected = found is not None
        if rejected and spec.get("nodeName"):
            self.kubelet_rejected.setdefault(spec["nodeName"], []).append(
                (f"{meta.get('namespace')}/{meta.get('name')}", found[0]))
        controller = _controller_key(meta)
        if not rejected and controller is not None and controller in self._controllers:
            return
        if controller is not None:
            self._controllers.add(controller)
        key = (repr({k: v for k, v in spec.items() if k != "nodeName"}), repr(meta.get("annotations")))
        if key not in self._templates and key not in self._pending:
            self._pending[key] = {k: v for k, v in pod.items() if k != "status"}
            self._template_origin[key] = (meta.get("namespace"), meta.get("name"))
        status = None
        if rejected:
            self.rejected += 1
            if self._status_linter is not None:
                self._status_linter.lint([_document(pod)])
                status = self._status_linter.take()
        file = pod_file(pod)
        self._reported.append(_Reported(file, meta.get("namespace"), meta.get("name"), key, status))
        self.workloads[file] = workload_of(pod)

    def _spec_id(self, spec: dict) -> int:
        key = repr(tuple(spec.get(k) for k in ADMISSION_KEYS))
        found = self._spec_ids.get(key)
        if found is None:
            found = self._spec_ids[key] = len(self.specs)
            self.specs.append(spec)
        return found

    def restart(self) -> None:
        """The list restarted (410): forget its pods; judged templates stay (keyed on content)."""
        self.on_nodes.clear()
        self.workloads.clear()
        self._reported.clear()
        self._controllers.clear()
        self.rejected = self.pods = 0

    # -- judging -------------------------------------------------------------------------
    def use_node(self, node: Any, pool_nodes: dict[str, Any] | None = None) -> None:
        """The node descriptions the NUMA-fit rules judge pods against: the default one (None:
        none found) and each pool's, by pool name."""
        self.node, self.pool_nodes, self.node_known = node, dict(pool_nodes or {}), True

    def judge_pending(self) -> int:
        """Judge the templates seen since the last call; how many were judged."""
        if not self.node_known or not self._pending:
            return 0
        if self._linter is None:
            self._linter = Linter(config=self.config, selection=self.selection, node=self.node,
                                  pool_nodes=self.pool_nodes)
        pending, self._pending = self._pending, {}
        for key, pod in pending.items():
            self._linter.lint([_document(pod)])
            self._templates[key] = self._linter.take()
        return len(pending)

    def parts(self) -> list[RunPart]:
        """Every reported pod's findings and counts, in list order (templates judged first)."""
        self.judge_pending()
        out = []
        for pod in self._reported:
            template = self._templates[pod.template]
            origin = self._template_origin[pod.template]
            findings = [_relabel(f, pod, origin) for f in template.findings]
            summary = Summary()
            summary.add(template.summary)
            if pod.status is not None:
                findings += pod.status.findings
                _add_counts(summary, pod.status.summary)
            out.append(RunPart(findings, summary, template.extracts))
        return out

    @property
    def templates(self) -> int:
        return len(self._templates) + len(self._pending)


def _document(pod: dict) -> Document:
    return Document(source=pod_file(pod), index=0, data=pod, line=0, ignores=frozenset())


def _relabel(f: Finding, pod: _Reported, origin: tuple) -> Finding:
    if (pod.namespace, pod.name) == origin:
        return f
    obj = replace(f.object, namespace=pod.namespace, name=pod.name) if f.object is not None else None
    return replace(f, file=pod.file, object=obj)


def _add_counts(summary: Summary, other: Summary) -> None:
    """The findings' counts of `other`, not its objects (the pod is counted once)."""
    for severity, n in other.counts.items():
        summary.counts[severity] += n
    summary.suppressed += other.suppressed


# ------------------------------------------------------------------------------ occupancy

def representative_node(topologies: dict[str, dict], configs: dict[str, dict], names: list[str]):
    """The node description the NUMA-fit rules judge pods against: the first of `names` with
    a usable NodeResourceTopology and a kubelet configuration."""
    from numaguard.lint.numa.node import Node, NodeError, parse_node_resource_topology

    for name in names:
        if name in topologies and name in configs:
            try:
                node = parse_node_resource_topology(topologies[name], f"node/{name}")
            except NodeError:
                continue
            return Node(name, node.topology, configs[name], f"node/{name}", node.notes)
    return None


@dataclass
class _Layouts:
    """Topologies shared between nodes of one shape (a pool is homogeneous, or should be), with
    what reading each assumed (the CPU numbering of a NodeResourceTopology...), said on every
    node of that shape."""
    by_key: dict[str, Any] = field(default_factory=dict)
    assumed: dict[str, tuple[str, ...]] = field(default_factory=dict)

    def of(self, name: str, node: dict, nrt: dict | None, notes: list[str]) -> tuple[str, Any]:
        from numaguard.lint.k8s.quantity import parse_quantity
        from numaguard.lint.numa.node import NodeError, parse_node_resource_topology
        from numaguard.lint.numa.occupancy import capacity_topology

        if nrt is not None:
            key = json.dumps([nrt.get("zones"), nrt.get("apiVersion")], sort_keys=True, default=str)
            try:
                if key not in self.by_key:
                    described = parse_node_resource_topology(nrt, f"nrt/{name}")
                    self.by_key[key], self.assumed[key] = described.topology, described.notes
                notes.extend(self.assumed[key])
                return key, self.by_key[key]
            except NodeError as exc:
                notes.append(f"NodeResourceTopology unusable ({exc}); layout from capacity")
        capacity = node["status"].get("capacity") or {}
        try:
            cpus = int(parse_quantity(str(capacity.get("cpu", "0"))))
            memory = int(parse_quantity(str(capacity.get("memory", "0"))))
        except (ValueError, ArithmeticError):
            notes.append("no usable capacity: not drawn")
            return "", None
        key = f"capacity {cpus} {memory}"
        try:
            if key not in self.by_key:
                self.by_key[key] = capacity_topology(cpus, memory)
        except NodeError:
            notes.append("no usable capacity: not drawn")
            return "", None
        notes.append("layout from node capacity (no NodeResourceTopology): one NUMA node assumed")
        return key, self.by_key[key]


def occupancies(nodes: list[dict], topologies: dict[str, dict], configs: dict[str, dict],
                judge: PodJudge, *, pods_note: str | None = None) -> list:
    """Per node (by name), its pods admitted oldest first on a simulated node built from its
    NodeResourceTopology (else its capacity, as one NUMA node) and its configuration.
    `pods_note`: said on every node when the pods list was not read completely."""
    from numaguard.lint.numa.admission import KubeletStartupError, build_state
    from numaguard.lint.numa.occupancy import PodOutcome, occupy

    layouts, analyses = _Layouts(), {}
    simulated: dict[tuple, Any] = {}
    out = []
    for node in sorted(nodes, key=lambda n: n["metadata"].get("name") or ""):
        name = node["metadata"].get("name") or "?"
        notes: list[str] = []
        layout_key, topology = layouts.of(name, node, topologies.get(name), notes)
        if topology is None:
            continue
        kc = configs.get(name)
        if kc is None:
            notes.append("kubelet configuration unknown: no reservations or pinning simulated")
        if pods_note:
            notes.append(pods_note)
        pods = sorted(judge.on_nodes.get(name, ()))
        key = (layout_key, repr(kc), tuple(spec for _, _, spec in pods), tuple(notes))
        labels = [label for _, label, _ in pods]
        done = simulated.get(key)
        if done is None:
            try:
                state = build_state(topology, kc or {}, name=name)
            except KubeletStartupError as exc:
                notes.append(f"the kubelet configuration would not start a kubelet ({exc}); simulated "
                             "without it")
                state = build_state(topology, {}, name=name)
            done = simulated[key] = occupy(state, [(label, judge.specs[spec]) for _, label, spec in pods],
                                           notes=notes, analyses=analyses)
            out.append(replace(done, kubelet_rejected=sorted(judge.kubelet_rejected.get(name, ()))))
            continue
        pods = [PodOutcome(label, p.admitted, p.reason, p.numa_nodes, p.exclusive, p.shared)
                for p, label in zip(done.pods, labels)]
        out.append(replace(done, name=name, pods=pods, notes=list(done.notes),
                           kubelet_rejected=sorted(judge.kubelet_rejected.get(name, ()))))
    return out
