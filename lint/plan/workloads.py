"""Workloads from the objects of the workload files, and where each may land.

`from_object` makes one `Workload` per pod template of an object (the front end finds the
templates with the carrier table): its PodShape with the template's namespace and labels, its
replica count (`numaguard.lint.plan.replicas`) and its rolling-update fences. `landing_pools`
tells which pools a workload's node selector, node affinity and tolerations allow (the
filters that read only a node's labels and taints); a workload no pool allows is bad input.
"""
from __future__ import annotations

from typing import Any, Iterable

from numaguard.lint.model import dotted_path
from numaguard.lint.plan import node_affinity, taints
from numaguard.lint.plan.model import LiveNode, PoolSpec, Workload
from numaguard.lint.plan.pods import pod_shape
from numaguard.lint.plan.replicas import count

ROLLOUT_FIELDS = {"Deployment": ("spec", "strategy", "rollingUpdate"),
                  "Rollout": ("spec", "strategy", "canary"),
                  "CloneSet": ("spec", "updateStrategy"),
                  "StatefulSet": ("spec", "updateStrategy", "rollingUpdate")}


def _get(obj: Any, path: Iterable) -> Any:
    for step in path:
        if not isinstance(obj, dict):
            return None
        obj = obj.get(step)
    return obj


def from_object(obj: dict, group: str, kind: str, templates: list[tuple[tuple, dict, tuple]], *,
                scaled: int | None = None, where: str = "") -> list[Workload]:
    """`templates`: (the template's path in `obj`, its pod spec, the path of its pod's metadata)
    for each pod template."""
    meta = obj.get("metadata") if isinstance(obj.get("metadata"), dict) else {}
    namespace = str(meta.get("namespace") or "default")
    name = str(meta.get("name") or kind.lower())
    out = []
    for path, spec, meta_path in templates:
        template_meta = _get(obj, meta_path) if meta_path else meta
        labels = (template_meta or {}).get("labels") if isinstance(template_meta, dict) else None
        n = count(group, kind, obj, path, scaled=scaled)
        label = f"{kind} {namespace}/{name}" + (f" {dotted_path(path)}" if len(templates) > 1 else "")
        fences = _get(obj, ROLLOUT_FIELDS[kind]) if kind in ROLLOUT_FIELDS else None
        rollout = None
        if kind in ROLLOUT_FIELDS:
            fences = fences if isinstance(fences, dict) else {}
            rollout = (fences.get("maxSurge"), fences.get("maxUnavailable"))
        out.append(Workload(label, kind, namespace, name, pod_shape(spec, namespace=namespace, labels=labels),
                            n.pods, n.per_node, n.source, where, rollout, group))
    return out


def names_object(name: str, kind: str, namespace: str, object_name: str) -> bool:
    """Does NAME (as --scale and --surge take it) name this object: `name`, `namespace/name`,
    `Kind/name` or `Kind/namespace/name`?"""
    return name in (object_name, f"{namespace}/{object_name}", f"{kind}/{object_name}",
                    f"{kind}/{namespace}/{object_name}")


def named(workloads: Iterable[Workload], name: str) -> list[Workload]:
    """The workloads NAME names (its full name as the report gives it, or names_object's)."""
    return [w for w in workloads if w.name == name or names_object(name, w.kind, w.namespace, w.object_name)]


def allows(workload: Workload, labels: dict[str, str], node_taints: Iterable[dict], name: str = "") -> bool:
    """Do the workload's node selector, node affinity and tolerations allow such a node?"""
    shape = workload.shape
    return (taints.untolerated_taint(node_taints, shape.tolerations) is None
            and node_affinity.matches(shape, labels, name))


def landing_pools(workload: Workload, pools: Iterable[PoolSpec], live: Iterable[LiveNode], *,
                  empty_too: bool = False) -> list[str]:
    """The pools (by name; "" for live nodes of no pool) with a node the workload may land on
    (`empty_too`: counting pools of no nodes, whose count is to be searched). A pool's own nodes
    are named <pool>-<n>, so an affinity to node names matches none of them; live nodes are
    matched by name too."""
    found = []
    for pool in pools:
        labels = {"kubernetes.io/os": "linux", **pool.labels}
        if (pool.count or empty_too) and allows(workload, {**labels, node_affinity.HOSTNAME: f"{pool.name}-1"}, pool.taints,
                                 f"{pool.name}-1"):
            found.append(pool.name)
    for node in live:
        if allows(workload, node.labels, node.taints, node.name) and (node.pool or "") not in found:
            found.append(node.pool or "")
    return found


def no_pool_message(workload: Workload, pools: list[PoolSpec], live: list[LiveNode]) -> str:
    """Why a workload has no pool to land on, in one line."""
    shape = workload.shape
    asks = []
    if shape.node_selector:
        asks.append("nodeSelector " + ", ".join(f"{k}={v}" for k, v in sorted(shape.node_selector.items())))
    if node_affinity.required_terms(shape) is not None:
        asks.append("required node affinity")
    tolerated = sorted({t.get("key") or "*" for t in shape.tolerations})
    asks.append("tolerations " + (", ".join(tolerated) if tolerated else "none"))
    empty = [p.name for p in pools if not p.count]
    known = [f"{p.name} ({p.count} nodes)" for p in pools] + ([f"{len(live)} live nodes"] if live else [])
    where = f" ({workload.where})" if workload.where else ""
    more = f"; pools without nodes: {', '.join(empty)} (give count: or --pool NAME=N)" if empty else ""
    return (f"{workload.name}{where}: no pool to land on: its {'; '.join(asks)} match no node of "
            f"{', '.join(known) or 'no pool'}{more}")


__all__ = ["from_object", "landing_pools", "no_pool_message", "allows", "named", "names_object"]
