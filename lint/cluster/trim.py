"""What the audit keeps of each object the API server returns: the fields the rules and the
simulator read, nothing else (no managedFields, env, volumes, probes, last-applied
annotations), so 50,000 pods fit in a few hundred MB. Field names follow core/v1 types.go."""
from __future__ import annotations

from typing import Any

POD_SPEC_KEYS = ("containers", "initContainers", "resources", "nodeName", "nodeSelector",
                  "affinity", "tolerations", "os", "overhead", "priority")
_CONTAINER_KEYS = ("name", "image", "command", "args", "resources", "resizePolicy", "restartPolicy")
_STATUS_KEYS = ("phase", "reason", "message")
ANNOTATION_PREFIX = "numaguard.io/"


def _pick(data: Any, keys) -> dict:
    return {k: data[k] for k in keys if k in data} if isinstance(data, dict) else {}


def _meta(data: dict, *, annotations: bool) -> dict:
    meta = data.get("metadata") if isinstance(data.get("metadata"), dict) else {}
    out = _pick(meta, ("name", "namespace", "uid", "labels", "creationTimestamp"))
    refs = meta.get("ownerReferences")
    if isinstance(refs, list):
        out["ownerReferences"] = [_pick(r, ("kind", "name", "uid", "controller")) for r in refs]
    notes = meta.get("annotations")
    if annotations and isinstance(notes, dict):
        kept = {k: v for k, v in notes.items() if isinstance(k, str) and k.startswith(ANNOTATION_PREFIX)}
        if kept:
            out["annotations"] = kept
    return out


def pod(data: dict) -> dict:
    spec = data.get("spec") if isinstance(data.get("spec"), dict) else {}
    kept = _pick(spec, POD_SPEC_KEYS)
    for key in ("containers", "initContainers"):
        if isinstance(kept.get(key), list):
            kept[key] = [_pick(c, _CONTAINER_KEYS) for c in kept[key]]
    out = {"apiVersion": "v1", "kind": "Pod", "metadata": _meta(data, annotations=True), "spec": kept}
    status = _pick(data.get("status"), _STATUS_KEYS)
    if status:
        out["status"] = status
    return out


def node(data: dict) -> dict:
    status = data.get("status") if isinstance(data.get("status"), dict) else {}
    spec = data.get("spec") if isinstance(data.get("spec"), dict) else {}
    return {"apiVersion": "v1", "kind": "Node", "metadata": _meta(data, annotations=False),
            "spec": _pick(spec, ("taints", "unschedulable")),
            "status": {"capacity": status.get("capacity") or {},
                       "allocatable": status.get("allocatable") or {},
                       "nodeInfo": _pick(status.get("nodeInfo"),
                                         ("operatingSystem", "architecture", "kubeletVersion"))}}


def node_resource_topology(data: dict) -> dict:
    out = {k: data[k] for k in ("apiVersion", "kind", "zones", "attributes", "topologyPolicies")
           if k in data}
    out["metadata"] = _meta(data, annotations=False)
    return out
