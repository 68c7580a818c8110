"""The live pool as a file: `numaguard audit --snapshot FILE` writes what it read (nodes, their
kubelet configurations and NodeResourceTopologies, the pods bound to them), and `numaguard
plan --from-audit FILE` starts from it, so a plan begins with today's occupancy and
fragmentation.

The file is JSON:

    {"apiVersion": "numaguard.io/v1alpha1", "kind": "PoolSnapshot", "version": 1,
     "takenAt": "2026-05-04T10:00:00Z", "incomplete": ["..."],
     "nodes": [{"node": {...}, "kubeletConfig": {...} | null, "nodeResourceTopology": {...} | null}],
     "pods": [{...}]}

Objects are kept as the audit keeps them (numaguard.lint.cluster.trim). `incomplete` lists
what the audit could not read (the audit exited 3): a plan from such a snapshot says so in
every report. A file of another `version` or kind is refused with one line (`SnapshotError`).

`live_nodes` turns a snapshot into the planner's `LiveNode`s: each node's NUMA layout from its
NodeResourceTopology (else its capacity, one NUMA node, as the audit draws it), its kubelet
configuration, its pool (the config's pools by their labels or taint), and the pods bound to it
that have not finished, oldest first (the order its kubelet admitted them).
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

SNAPSHOT_API_VERSION = "numaguard.io/v1alpha1"
SNAPSHOT_KIND = "PoolSnapshot"
SNAPSHOT_VERSION = 1


class SnapshotError(ValueError):
    pass


@dataclass
class Collector:
    """Given to `numaguard.lint.cluster.audit.audit`: keeps what it reads for the snapshot."""

    nodes: list[dict] = field(default_factory=list)
    topologies: dict[str, dict] = field(default_factory=dict)
    configs: dict[str, dict] = field(default_factory=dict)
    pods: list[dict] = field(default_factory=list)
    incomplete: list[str] = field(default_factory=list)

    def restart_pods(self) -> None:
        self.pods.clear()

    def keep_pods(self, pods: list[dict]) -> None:
        self.pods.extend(p for p in pods if (p.get("spec") or {}).get("nodeName"))

    def document(self, taken_at: str) -> dict:
        return {"apiVersion": SNAPSHOT_API_VERSION, "kind": SNAPSHOT_KIND, "version": SNAPSHOT_VERSION,
                "takenAt": taken_at, "incomplete": list(self.incomplete),
                "nodes": [{"node": n, "kubeletConfig": self.configs.get(_name(n)),
                           "nodeResourceTopology": self.topologies.get(_name(n))}
                          for n in sorted(self.nodes, key=_name)],
                "pods": self.pods}


def _name(obj: dict) -> str:
    return (obj.get("metadata") or {}).get("name") or ""


@dataclass
class Snapshot:
    source: str
    taken_at: str
    incomplete: list[str]
    nodes: list[dict]             # {"node", "kubeletConfig", "nodeResourceTopology"}
    pods: list[dict]


def read(text: str, source: str) -> Snapshot:
    """Parse a snapshot file; SnapshotError (one line) when it is not one this version reads."""
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise SnapshotError(f"{source}: not a numaguard pool snapshot: not valid JSON (line {exc.lineno}, "
                            f"column {exc.colno}: {exc.msg})") from None
    if not isinstance(data, dict) or data.get("kind") != SNAPSHOT_KIND:
        raise SnapshotError(f"{source}: not a numaguard pool snapshot (kind {SNAPSHOT_KIND}, written by "
                            f"numaguard audit --snapshot)")
    if data.get("version") != SNAPSHOT_VERSION:
        raise SnapshotError(f"{source}: a pool snapshot of version {json.dumps(data.get('version'))}; this "
                            f"numaguard reads version {SNAPSHOT_VERSION}: take it again with this numaguard's "
                            f"audit --snapshot")
    nodes, pods = data.get("nodes"), data.get("pods")
    if not isinstance(nodes, list) or not isinstance(pods, list):
        raise SnapshotError(f"{source}: a pool snapshot needs the lists nodes and pods")
    for i, entry in enumerate(nodes):
        if not isinstance(entry, dict) or not isinstance(entry.get("node"), dict) or not _name(entry["node"]):
            raise SnapshotError(f"{source}: nodes[{i}]: not a node entry ({{node: a Node with a name, "
                                f"kubeletConfig, nodeResourceTopology}})")
    for i, pod in enumerate(pods):
        if not isinstance(pod, dict) or not isinstance(pod.get("spec"), dict) or not isinstance(pod.get("metadata"), dict):
            raise SnapshotError(f"{source}: pods[{i}]: not a Pod (metadata and spec)")
    incomplete = data.get("incomplete") or []
    return Snapshot(source, str(data.get("takenAt") or ""), [str(x) for x in incomplete], nodes, pods)


def live_nodes(snapshot: Snapshot, config: Any = None) -> list:
    """The snapshot's nodes and their running pods as the planner's LiveNodes."""
    from numaguard.lint.cluster.judge import _Layouts
    from numaguard.lint.plan.model import LiveNode

    layouts = _Layouts()
    pods_on: dict[str, list[dict]] = {}
    for pod in snapshot.pods:
        phase = (pod.get("status") or {}).get("phase")
        node = pod["spec"].get("nodeName")
        if node and phase not in ("Succeeded", "Failed"):
            pods_on.setdefault(node, []).append(pod)
    pools = [p for p in (config.pools if config is not None else ()) if p.recognises_pods]
    out = []
    for entry in sorted(snapshot.nodes, key=lambda e: _name(e["node"])):
        node = entry["node"]
        name = _name(node)
        notes: list[str] = []
        _key, topology = layouts.of(name, node, entry.get("nodeResourceTopology"), notes)
        if topology is None:
            continue
        meta, spec = node.get("metadata") or {}, node.get("spec") or {}
        labels = {str(k): str(v) for k, v in (meta.get("labels") or {}).items()}
        node_taints = tuple(t for t in spec.get("taints") or () if isinstance(t, dict))
        pool = next((p.name for p in pools if p.has_node(labels, node_taints)), None)
        kc = entry.get("kubeletConfig") if isinstance(entry.get("kubeletConfig"), dict) else None
        if kc is None:
            notes.append("kubelet configuration unknown: no reservations or pinning simulated")
        out.append(LiveNode(name, pool, labels, node_taints, bool(spec.get("unschedulable")),
                            _allocatable(node), topology, kc, tuple(_live_pod(p) for p in _oldest_first(pods_on.get(name, []))),
                            tuple(notes)))
    return out


def _oldest_first(pods: list[dict]) -> list[dict]:
    return sorted(pods, key=lambda p: ((p["metadata"].get("creationTimestamp") or ""),
                                      p["metadata"].get("namespace") or "", p["metadata"].get("name") or ""))


def _live_pod(pod: dict):
    from numaguard.lint.plan.model import LivePod

    meta = pod["metadata"]
    owner = next((r for r in meta.get("ownerReferences") or () if isinstance(r, dict) and r.get("controller")), None)
    ns = meta.get("namespace") or "default"
    return LivePod(f"{ns}/{meta.get('name')}", ns, {str(k): str(v) for k, v in (meta.get("labels") or {}).items()},
                   pod["spec"], f"{owner.get('kind')} {ns}/{owner.get('name')}" if owner else "")


def _allocatable(node: dict) -> dict[str, int]:
    """status.allocatable as the scheduler's NodeInfo counts it (cpu in millicores)."""
    from numaguard.lint.k8s.quantity import parse_quantity
    from numaguard.lint.plan.pods import to_int

    out = {}
    for name, value in ((node.get("status") or {}).get("allocatable") or {}).items():
        try:
            out[str(name)] = to_int(str(name), parse_quantity(str(value)))
        except (ValueError, ArithmeticError):
            continue
    out.setdefault("pods", 110)
    return out


__all__ = ["Collector", "Snapshot", "SnapshotError", "read", "live_nodes", "SNAPSHOT_VERSION"]
