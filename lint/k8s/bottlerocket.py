"""Bottlerocket: the KubeletConfiguration its `settings.kubernetes` render to.

A Bottlerocket node is configured through settings, not a kubelet file: `settings.kubernetes`
(kebab-case keys, `cpu-manager-policy`) is rendered by the Handlebars template
`packages/kubernetes-1.31/kubelet-config` (bottlerocket-os/bottlerocket-core-kit at a10182f97,
the newest version checked) into `/etc/kubernetes/kubelet/config`. `bottlerocket_kubelet` mirrors
that template for the settings the kubelet rules read:

* `cpuManagerPolicy` from `cpu-manager-policy` (default `none`), `cpuManagerPolicyOptions` from
  the list `cpu-manager-policy-options` (each `"true"`), `cpuManagerReconcilePeriod`;
  `topologyManagerPolicy` and `topologyManagerScope` when given;
* `memoryManagerPolicy` and `reservedMemory` **only when `memory-manager-reserved-memory` has an
  enabled NUMA node** (`{{#if (any_enabled ...)}}`): a `memory-manager-policy` alone is not
  written, and the kubelet runs the `None` policy;
* `reservedSystemCPUs` from `reserved-cpus`; without it `kubeReservedCgroup: /runtime`, and
  with `system-reserved` also `systemReservedCgroup: /system`;
* `kubeReserved`: cpu from `kube-reserved.cpu`, else computed from the node's cores
  (schnauzer `kube_reserve_cpu`, EKS' formula: at least 60m), memory from
  `kube-reserved.memory`, else 11 × `max-pods` + 255Mi (`kube_reserve_memory`), ephemeral-storage
  `1Gi` unless given; `systemReserved` as given;
* `evictionHard` as given, `maxPods` (default 110), `podPidsLimit`, `cpuCFSQuota`
  (`cpu-cfs-quota-enforced`), and the fixed `cgroupDriver: systemd`, `cgroupRoot: /`,
  `protectKernelDefaults: true`.

The template has **no feature gates**: a Bottlerocket node cannot enable
`PodLevelResourceManagers` (beta, off by default in 1.37) through its settings.

Platforms write these settings in their own spelling: eksctl's `bottlerocket.settings.kubernetes`
is Bottlerocket's (kebab-case); EKS Anywhere's `BottlerocketKubernetesSettings` is camelCase and
goes through the Cluster API bootstrap's TOML template first (`capi_settings`).
"""
from __future__ import annotations

import copy
import re
from typing import Any

from numaguard.lint.k8s.platforms import KUBELET_API_VERSION
from numaguard.lint.model import Path

BOTTLEROCKET_SOURCE = "Bottlerocket's kubelet-config template (bottlerocket-core-kit a10182f packages/kubernetes-1.31)"
DEFAULT_MAX_PODS = 110
# kube_reserve_cpu sizes kubeReserved.cpu by the node's cores (never below 60m): a placeholder
# that reserves (the static policy then has a CPU), marked unknown.
CORES_PLACEHOLDER_CPU = "60m"

# Bottlerocket key -> the KubeletConfiguration field it is written to, for plain values.
SCALARS = {"cpu-manager-policy": "cpuManagerPolicy", "cpu-manager-reconcile-period": "cpuManagerReconcilePeriod",
           "topology-manager-policy": "topologyManagerPolicy", "topology-manager-scope": "topologyManagerScope",
           "reserved-cpus": "reservedSystemCPUs", "max-pods": "maxPods", "pod-pids-limit": "podPidsLimit",
           "cpu-cfs-quota-enforced": "cpuCFSQuota"}
MAPS = {"kube-reserved": "kubeReserved", "system-reserved": "systemReserved", "eviction-hard": "evictionHard"}
NUMA_KEYS = frozenset(SCALARS) | frozenset(MAPS) | {"cpu-manager-policy-options", "memory-manager-policy",
                                                    "memory-manager-reserved-memory"}
_CAMEL = {re.sub(r"-([a-z])", lambda m: m[1].upper(), key): key for key in NUMA_KEYS}


def bottlerocket_kubelet(settings: dict) -> tuple[dict, dict[Path, str], frozenset[str], dict[str, str]]:
    """(the KubeletConfiguration the template renders from `settings.kubernetes`, kubelet path ->
    the Bottlerocket key it came from, the fields whose value depends on the machine, what the
    template leaves out and why)."""
    config: dict[str, Any] = {"apiVersion": KUBELET_API_VERSION, "kind": "KubeletConfiguration",
                              "cgroupDriver": "systemd", "cgroupRoot": "/", "protectKernelDefaults": True,
                              "serializeImagePulls": False, "cpuCFSQuota": True, "cpuManagerPolicy": "none",
                              "podPidsLimit": 1048576, "maxPods": DEFAULT_MAX_PODS}
    sources: dict[Path, str] = {}
    dropped: dict[str, str] = {}
    for key, name in SCALARS.items():
        if settings.get(key) is not None:
            config[name] = copy.deepcopy(settings[key])
            sources[(name,)] = key
    options = settings.get("cpu-manager-policy-options")
    if isinstance(options, list) and options:
        config["cpuManagerPolicyOptions"] = {str(o): "true" for o in options}
        sources[("cpuManagerPolicyOptions",)] = "cpu-manager-policy-options"
    for key, name in MAPS.items():
        if isinstance(settings.get(key), dict) and settings[key]:
            config[name] = {str(k): str(v) for k, v in settings[key].items()}
            sources.update({(name, str(k)): f"{key}.{k}" for k in settings[key]})
            sources[(name,)] = key
    unknown = set()
    reserved = config.setdefault("kubeReserved", {})
    if "cpu" not in reserved:
        reserved["cpu"] = CORES_PLACEHOLDER_CPU
        unknown.add("kubeReserved.cpu")
    if "memory" not in reserved:
        # kube_reserve_memory: 11 x max-pods + 255Mi, written only when max-pods is set (the
        # variant's own settings may set it): known when these settings give max-pods
        pods = settings.get("max-pods")
        reserved["memory"] = f"{(pods if isinstance(pods, int) and not isinstance(pods, bool) else DEFAULT_MAX_PODS) * 11 + 255}Mi"
        if not isinstance(pods, int) or isinstance(pods, bool):
            unknown.add("kubeReserved.memory")
        else:
            sources[("kubeReserved", "memory")] = "max-pods"
    reserved.setdefault("ephemeral-storage", "1Gi")
    if not settings.get("reserved-cpus"):
        config["kubeReservedCgroup"] = "/runtime"
        if config.get("systemReserved"):
            config["systemReservedCgroup"] = "/system"
    _memory_manager(settings, config, sources, dropped)
    return config, sources, frozenset(unknown), dropped


def _memory_manager(settings: dict, config: dict, sources: dict[Path, str], dropped: dict[str, str]) -> None:
    """memoryManagerPolicy and reservedMemory: written only with an enabled reserved NUMA node."""
    numa = settings.get("memory-manager-reserved-memory")
    enabled = {str(node): entry for node, entry in (numa.items() if isinstance(numa, dict) else ())
               if isinstance(entry, dict) and entry.get("enabled") is True}
    policy = settings.get("memory-manager-policy")
    if not enabled:
        if policy is not None:
            sources[("memoryManagerPolicy",)] = "memory-manager-policy"
            dropped["memoryManagerPolicy"] = (
                f"memory-manager-policy {policy} is not written: {BOTTLEROCKET_SOURCE} writes "
                f"memoryManagerPolicy only with an enabled memory-manager-reserved-memory NUMA node")
        return
    if policy is not None:
        config["memoryManagerPolicy"] = policy
        sources[("memoryManagerPolicy",)] = "memory-manager-policy"
    entries = []
    for node, entry in enabled.items():
        limits = {r: str(entry[r]) for r in ("memory", "hugepages-1Gi", "hugepages-2Mi") if entry.get(r) is not None}
        entries.append({"numaNode": int(node) if node.isdigit() else node, "limits": limits})
    config["reservedMemory"] = entries
    sources[("reservedMemory",)] = "memory-manager-reserved-memory"


def camel_spelling(key: str) -> str | None:
    """The Bottlerocket key a camelCase key (the kubelet's spelling) stands for, if any."""
    return _CAMEL.get(key)


# The Cluster API Bottlerocket bootstrap (EKS Anywhere's fork of cluster-api,
# bootstrap/kubeadm/internal/bottlerocket/bootstrap.go, `kubernetesInitTemplate`) writes
# BottlerocketKubernetesSettings into settings.kubernetes: these fields, renamed; of
# cpuManagerPolicyOptions only `full-pcpus-only` is written (whatever its value), and only with a
# cpuManagerPolicy. It has no reserved-cpus and no memory-manager-reserved-memory.
CAPI_FIELDS = {"cpuManagerPolicy": "cpu-manager-policy", "cpuManagerReconcilePeriod": "cpu-manager-reconcile-period",
               "topologyManagerPolicy": "topology-manager-policy", "topologyManagerScope": "topology-manager-scope",
               "memoryManagerPolicy": "memory-manager-policy", "maxPods": "max-pods", "podPidsLimit": "pod-pids-limit",
               "cpuCFSQuota": "cpu-cfs-quota-enforced", "kubeReserved": "kube-reserved",
               "systemReserved": "system-reserved", "evictionHard": "eviction-hard"}
# BottlerocketKubernetesSettings' other fields (EKS Anywhere's CRDs, *machineconfigs.yaml): accepted,
# not read by the kubelet rules.
CAPI_OTHER_FIELDS = frozenset({"allowedUnsafeSysctls", "clusterDNSIPs", "clusterDomain", "containerLogMaxFiles",
                               "containerLogMaxSize", "cpuManagerPolicyOptions", "eventBurst", "eventRecordQPS",
                               "evictionMaxPodGracePeriod", "evictionSoft", "evictionSoftGracePeriod",
                               "imageGCHighThresholdPercent", "imageGCLowThresholdPercent", "kubeAPIBurst",
                               "kubeAPIQPS", "providerID", "registryBurst", "registryPullQPS", "shutdownGracePeriod",
                               "shutdownGracePeriodCriticalPods"})
CAPI_SETTINGS_FIELDS = frozenset(CAPI_FIELDS) | CAPI_OTHER_FIELDS


def capi_settings(kubernetes: dict) -> tuple[dict, dict[str, str], dict[str, str]]:
    """(Bottlerocket's settings.kubernetes from BottlerocketKubernetesSettings, Bottlerocket key ->
    the camelCase field it came from, what the bootstrap leaves out and why)."""
    settings: dict[str, Any] = {}
    origin: dict[str, str] = {}
    dropped: dict[str, str] = {}
    for name, key in CAPI_FIELDS.items():
        value = kubernetes.get(name)
        # `{{- if .X }}` skips Go's zero values; cpuCFSQuota is a pointer (`ne .CPUCFSQuota nil`)
        if value is None or (name != "cpuCFSQuota" and (value in ("", 0, {}) and not isinstance(value, bool))):
            continue
        settings[key] = copy.deepcopy(value)
        origin[key] = name
    options = kubernetes.get("cpuManagerPolicyOptions")
    if isinstance(options, dict) and options:
        if "full-pcpus-only" in options and "cpu-manager-policy" in settings:
            settings["cpu-manager-policy-options"] = ["full-pcpus-only"]
            origin["cpu-manager-policy-options"] = "cpuManagerPolicyOptions"
        others = sorted(str(k) for k in options if k != "full-pcpus-only")
        if others or "cpu-manager-policy" not in settings:
            dropped["cpuManagerPolicyOptions"] = (
                "the Cluster API Bottlerocket bootstrap writes only full-pcpus-only, and only with a "
                f"cpuManagerPolicy: {', '.join(others) or 'full-pcpus-only'} is not written")
    for key, name in list(origin.items()):
        if key in MAPS:
            origin.update({f"{key}.{k}": f"{name}.{k}" for k in settings[key]})
    return settings, origin, dropped


__all__ = ["bottlerocket_kubelet", "bottlerocket_carrier", "capi_settings", "camel_spelling", "BOTTLEROCKET_SOURCE", "NUMA_KEYS",
           "CAPI_SETTINGS_FIELDS", "CAPI_FIELDS"]


def bottlerocket_carrier(platform: str, settings: dict, place_of, fallback: Path, *, dropped: dict[str, str] | None = None,
                         node_labels: dict[str, str] | None = None, node_labels_path: Path = (),
                         node_taints: tuple = (), extra: list | None = None):
    """The carrier of a Bottlerocket node: `settings` (settings.kubernetes, Bottlerocket's
    spelling) rendered by the template; `place_of(key)` is the Place where a Bottlerocket key
    was written (None when it was not); `dropped`: what an earlier stage did not write."""
    from numaguard.lint.k8s.carrier_support import MappedKubelet

    config, sources, unknown, template_dropped = bottlerocket_kubelet(settings)
    places = {path: place_of(key) for path, key in sources.items()}
    carrier = MappedKubelet(platform, config, {}, (), fallback=fallback, unknown=unknown,
                            adjusters=(_bottlerocket_adjust,), node_labels=dict(node_labels or {}),
                            node_labels_path=node_labels_path, node_taints=tuple(node_taints),
                            sources={path: place for path, place in places.items() if place is not None},
                            notes={**(dropped or {}), **template_dropped})
    carrier.extra.extend(extra or [])
    return carrier


def _bottlerocket_adjust(carrier, rule_id: str, v):
    """Findings told in Bottlerocket's terms: what its settings cannot express, what a stage
    left out, and values it sizes per machine."""
    from numaguard.lint.model import Severity, Violation

    if rule_id == "NG202":
        return Violation(v.path, f"{v.message}; a Bottlerocket node cannot enable it: {BOTTLEROCKET_SOURCE} "
                                 f"writes no featureGates", v.container, v.severity,
                         "Run the pods that need pod-level resource managers on nodes of another OS image, "
                         "whose kubelet configuration can enable PodLevelResourceManagers.")
    if rule_id == "NG221" and "kubeReserved.cpu" in carrier.unknown:
        return None            # Bottlerocket's own kubeReserved.cpu, sized by the node's cores
    note = carrier.notes.get(str(v.path[0]) if v.path else {"NG204": "memoryManagerPolicy"}.get(rule_id, ""))
    if note and rule_id != "NG002":
        v = Violation(v.path, f"{v.message} [{note}]", v.container, v.severity, v.remediation)
    if rule_id == "NG208" and "kubeReserved.memory" in carrier.unknown and "determined by Node Allocatable" in v.message:
        return Violation(v.path, "reservedMemory cannot be checked against the node allocatable reservation: "
                                 "neither kube-reserved.memory nor max-pods is set here, and Bottlerocket derives "
                                 "kubeReserved.memory from max-pods (11 x max-pods + 255Mi)", v.container,
                         Severity.WARNING, "Set kube-reserved.memory (or max-pods) explicitly, then make "
                                           "memory-manager-reserved-memory add up to the node allocatable "
                                           "reservation.")
    return v
