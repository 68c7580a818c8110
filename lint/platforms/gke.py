"""GKE: the node system configuration (`gcloud container node-pools create
--system-config-from-file=FILE`).

The file has no apiVersion or kind: top-level `kubeletConfig` (a `NodeKubeletConfig`) and
`linuxConfig` (a `LinuxNodeConfig`), as defined by googleapis/googleapis
`google/container/v1/cluster_service.proto` (message `NodeKubeletConfig`: `cpu_manager_policy`
"none"/"static", `topology_manager` {policy, scope}, `memory_manager` {policy: "none" |
"static"}, `cpu_cfs_quota`, `cpu_cfs_quota_period`, `pod_pids_limit`, image GC, container log,
unsafe sysctls, soft eviction, ...) and GKE's "Customizing node system configuration" page (the
YAML spells the fields in camelCase; gcloud writes `cpuCFSQuota`/`cpuCFSQuotaPeriod` where the
API's JSON says `cpuCfsQuota`: both are accepted here).

Recognised conservatively: no apiVersion/kind, only `kubeletConfig`/`linuxConfig` (and the
Windows and runtime sections of the same file) at the top, and a `kubeletConfig` mapping with at
least one field of NodeKubeletConfig. Only the fields GKE exposes are mapped onto the
KubeletConfiguration, with GKE's documented defaults for the ones left out ("The default value
is 'none' if unspecified", "The default scope is 'container'"); what GKE sets underneath (feature
gates, reservations, reservedMemory for the static Memory Manager, eviction) is not public, so
findings about it are dropped (`FlaggedKubelet.shown`), and every finding points at GKE's own
field (`kubeletConfig.topologyManager.scope`).
"""
from __future__ import annotations

from typing import Any, Iterator

from numaguard.lint.platforms.carrier_support import FlaggedKubelet, notes_only
from numaguard.lint.platforms.carrier import KUBELET_API_VERSION, PlatformError
from numaguard.lint.model import Path, Violation

_TOP_LEVEL = frozenset({"kubeletConfig", "linuxConfig", "windowsConfig", "containerdConfig"})

# NodeKubeletConfig fields as the system-config YAML spells them (both spellings of CFS).
GKE_KUBELET_FIELDS = frozenset({
    "cpuManagerPolicy", "topologyManager", "memoryManager", "cpuCfsQuota", "cpuCFSQuota",
    "cpuCfsQuotaPeriod", "cpuCFSQuotaPeriod", "podPidsLimit", "insecureKubeletReadonlyPortEnabled",
    "imageGcLowThresholdPercent", "imageGcHighThresholdPercent", "imageMinimumGcAge",
    "imageMaximumGcAge", "containerLogMaxSize", "containerLogMaxFiles", "allowedUnsafeSysctls",
    "evictionSoft", "evictionSoftGracePeriod", "evictionMinimumReclaim",
    "evictionMaxPodGracePeriodSeconds", "maxParallelImagePulls", "singleProcessOomKill",
    "crashLoopBackOff", "shutdownGracePeriodSeconds", "shutdownGracePeriodCriticalPodsSeconds",
})

# GKE field path -> (KubeletConfiguration field, how GKE's value maps onto the kubelet's).
_MAPPED: dict[Path, tuple[str, dict[str, str] | None]] = {
    ("cpuManagerPolicy",): ("cpuManagerPolicy", {"none": "none", "static": "static"}),
    ("topologyManager", "policy"): ("topologyManagerPolicy", None),
    ("topologyManager", "scope"): ("topologyManagerScope", None),
    # MemoryManager.policy: "none" | "static"; the kubelet spells them None | Static
    ("memoryManager", "policy"): ("memoryManagerPolicy", {"none": "None", "static": "Static"}),
    ("cpuCfsQuota",): ("cpuCFSQuota", None),
    ("cpuCFSQuota",): ("cpuCFSQuota", None),
    ("podPidsLimit",): ("podPidsLimit", None),
}
_GKE_NAME = {kubelet: "kubeletConfig." + ".".join(gke) for gke, (kubelet, _) in _MAPPED.items()}
_GKE_NAME["cpuCFSQuota"] = "kubeletConfig.cpuCFSQuota"
SHOWN = frozenset(kubelet for kubelet, _ in _MAPPED.values())
GKE_SOURCE = "GKE (NodeKubeletConfig, google/container/v1/cluster_service.proto)"


def is_system_config(doc: dict) -> bool:
    kubelet = doc.get("kubeletConfig")
    return bool(doc) and set(map(str, doc)) <= _TOP_LEVEL and isinstance(kubelet, dict) and \
        any(str(k) in GKE_KUBELET_FIELDS for k in kubelet)


def system_config(doc: dict) -> Iterator[FlaggedKubelet | PlatformError]:
    """One carrier: the fields of `kubeletConfig` GKE maps onto the kubelet."""
    gke = doc["kubeletConfig"]
    config: dict[str, Any] = {"apiVersion": KUBELET_API_VERSION, "kind": "KubeletConfiguration"}
    origins: dict[str, Path] = {}
    extra: list[tuple[str, Violation]] = []
    for name in gke:
        if str(name) not in GKE_KUBELET_FIELDS:
            extra.append(("NG002", Violation(("kubeletConfig", name), f"gcloud refuses the file: "
                                             f"unknown field {name} in kubeletConfig (not a "
                                             f"NodeKubeletConfig field)")))
    for gke_path, (field, values) in _MAPPED.items():
        holder: Any = gke
        for key in gke_path[:-1]:
            holder = holder.get(key) if isinstance(holder, dict) else None
        where = ("kubeletConfig",) + gke_path
        if not isinstance(holder, dict) or gke_path[-1] not in holder:
            # a finding about a field left out points at the nearest GKE field that is there
            origins.setdefault(field, where[:-1] if isinstance(holder, dict) else ("kubeletConfig",))
            continue
        origins[field] = where
        value = holder[gke_path[-1]]
        if values is not None:
            mapped = values.get(str(value).lower()) if isinstance(value, str) else None
            if mapped is None:
                extra.append(("NG002", Violation(where, f"{'.'.join(where)}: {value!r} is not a value "
                                                        f"GKE accepts ({', '.join(sorted(set(values)))})")))
                continue
            value = mapped
        config[field] = value
    if extra:                       # gcloud refuses the whole file: nothing of it reaches a node
        yield notes_only("GKE node system config", ("kubeletConfig",), extra)
        return
    carrier = FlaggedKubelet("GKE node system config", config, {}, (), origins=origins,
                             fallback=("kubeletConfig",), shown=SHOWN, adjusters=(_gke_adjust,))
    yield carrier


def _gke_adjust(carrier: FlaggedKubelet, rule_id: str, v: Violation) -> Violation | None:
    """Findings in GKE's words: the kubelet field's GKE name, and GKE's way to set it."""
    field = str(v.path[0]) if v.path else {"NG203": "cpuManagerPolicy", "NG204": "memoryManagerPolicy",
                                          "NG205": "topologyManagerScope",
                                          "NG206": "topologyManagerPolicy"}.get(rule_id)
    name = _GKE_NAME.get(field or "")
    if name is None:
        return v
    fixes = {"NG203": "Set kubeletConfig.cpuManagerPolicy: static.",
             "NG204": "Set kubeletConfig.memoryManager.policy: static (GKE reserves the memory itself).",
             "NG205": "Set kubeletConfig.topologyManager.scope: pod.",
             "NG206": "Set kubeletConfig.topologyManager.policy: single-numa-node (or restricted)."}
    return Violation(v.path, f"{v.message} [in the GKE file: {name}]", v.container, v.severity,
                     fixes.get(rule_id, v.remediation))


__all__ = ["is_system_config", "system_config", "GKE_KUBELET_FIELDS"]
