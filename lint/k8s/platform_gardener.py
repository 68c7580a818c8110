"""Gardener `Shoot` (core.gardener.cloud/v1beta1) and `ManagedSeedSet`
(seedmanagement.gardener.cloud/v1alpha1, `spec.shootTemplate`): the kubelet of each worker pool.

gardener/gardener at b312835d1784:

* `pkg/apis/core/v1beta1/types_shoot.go`: `spec.kubernetes.kubelet` (the cluster's) and
  `spec.provider.workers[*].kubernetes.kubelet` are a `KubeletConfig`, Gardener's own type, not
  a KubeletConfiguration: `featureGates`, `cpuManagerPolicy`, `kubeReserved` {cpu, memory,
  ephemeralStorage, pid}, the eviction maps in Gardener's spelling (`memoryAvailable`,
  `nodeFSAvailable`...), `maxPods`... It has **no** Topology or Memory Manager field, no
  `reservedSystemCPUs`, no `reservedMemory` and no `systemReserved` (tombstoned): a Gardener
  worker pool cannot be given what NG204-NG206 require through the Shoot. The API server
  decodes the Shoot into these types, so any other field is refused by kubectl's strict field
  validation (`unknown field`) or dropped.
* `WorkerKubernetes.Kubelet`: "If set, all `spec.kubernetes.kubelet` settings will be
  overwritten for this worker pool (no merge of settings)", as
  `pkg/api/core/v1beta1/helper/shoot.go` `CalculateEffectiveKubeletConfiguration` does: a pool's
  own block replaces the cluster's whole; only a pool without one takes the cluster's.
* `pkg/component/extensions/operatingsystemconfig/original/components/kubelet.go`
  (`KubeletConfigParametersFromCoreV1beta1KubeletConfig`) and `kubelet/config.go` (`Config`,
  `setConfigDefaults`): the KubeletConfiguration the node gets: `cgroupDriver: systemd`,
  `cgroupRoot: /`, `cgroupsPerQOS`, `cpuManagerPolicy: none` unless given,
  `enforceNodeAllocatable: [pods]`, the eviction defaults (hard `memory.available` 100Mi,
  imagefs/nodefs 5%), `kubeReserved` {cpu 80m, memory 1Gi} under the user's keys, `maxPods` 110,
  `failSwapOn`, `protectKernelDefaults`. `operatingsystemconfig.go`
  `setDefaultEvictionMemoryAvailable` then sizes the hard `memory.available` by the machine type
  of the CloudProfile (100Mi, 5% or 1Gi): unknown here unless the pool sets it.
* The nodes of a pool carry `worker.gardener.cloud/pool: <name>` (`constants.LabelWorkerPool`),
  the pool's `labels` and `taints`; the pool's kubelet is `kubernetes.version` of the pool, else
  `spec.kubernetes.version`.

One carrier per worker pool (a Shoot without workers: one for the cluster's block), named by the
pool; findings point at the Gardener field of the block the pool uses.
"""
from __future__ import annotations

import copy
import re
from typing import Any, Iterator

from numaguard.lint.k8s.carrier_support import MappedKubelet
from numaguard.lint.k8s.kubelet_layers import Place
from numaguard.lint.k8s.platforms import KUBELET_API_VERSION, PlatformError
from numaguard.lint.model import Path, Violation, items

GARDENER_SOURCE = "Gardener (operatingsystemconfig/original/components/kubelet/config.go)"
TYPES = "gardener/gardener pkg/apis/core/v1beta1/types_shoot.go KubeletConfig"
POOL_LABEL = "worker.gardener.cloud/pool"

# Gardener's eviction keys -> the kubelet's signals (components/kubelet.go)
EVICTION_KEYS = {"memoryAvailable": "memory.available", "imageFSAvailable": "imagefs.available",
                 "imageFSInodesFree": "imagefs.inodesFree", "nodeFSAvailable": "nodefs.available",
                 "nodeFSInodesFree": "nodefs.inodesFree"}
RESERVED_KEYS = {"cpu": "cpu", "memory": "memory", "ephemeralStorage": "ephemeral-storage", "pid": "pid"}
_EVICTION_MAPS = ("evictionHard", "evictionSoft", "evictionSoftGracePeriod", "evictionMinimumReclaim")

# KubeletConfig's fields and the JSON type the API server decodes each into.
_SCALARS: dict[str, type | tuple[type, ...]] = {
    "cpuCFSQuota": bool, "cpuManagerPolicy": str, "evictionMaxPodGracePeriod": int,
    "evictionPressureTransitionPeriod": str, "maxPods": int, "podPidsLimit": int, "failSwapOn": bool,
    "imageGCHighThresholdPercent": int, "imageGCLowThresholdPercent": int, "serializeImagePulls": bool,
    "registryPullQPS": int, "registryBurst": int, "seccompDefault": bool, "containerLogMaxSize": (str, int),
    "containerLogMaxFiles": int, "protectKernelDefaults": bool, "streamingConnectionIdleTimeout": str,
    "maxParallelImagePulls": int, "imageMinimumGCAge": str, "imageMaximumGCAge": str,
    "singleProcessOOMKill": bool, "imagePullCredentialsVerificationPolicy": str,
}
_MAPS = {"featureGates", "kubeReserved", "memorySwap", *_EVICTION_MAPS}
_LISTS = {"preloadedImagesVerificationAllowlist"}
GARDENER_FIELDS = frozenset(_SCALARS) | _MAPS | _LISTS

# KubeletConfiguration fields users reach for that the Shoot API does not have.
MISSING = {"topologyManagerPolicy": "Topology Manager", "topologyManagerScope": "Topology Manager",
           "topologyManagerPolicyOptions": "Topology Manager", "memoryManagerPolicy": "Memory Manager",
           "reservedMemory": "Memory Manager", "reservedSystemCPUs": "CPU Manager",
           "cpuManagerPolicyOptions": "CPU Manager", "systemReserved": "node allocatable"}
# the requirements no Shoot can meet (no field for them): NG204-NG206's subjects
_UNREACHABLE = {"NG204": "memoryManagerPolicy", "NG205": "topologyManagerScope", "NG206": "topologyManagerPolicy"}

_BASE = {
    "apiVersion": KUBELET_API_VERSION, "kind": "KubeletConfiguration", "cgroupDriver": "systemd",
    "cgroupRoot": "/", "cgroupsPerQOS": True, "cpuCFSQuota": True, "cpuManagerPolicy": "none",
    "cpuManagerReconcilePeriod": "10s", "enforceNodeAllocatable": ["pods"], "failSwapOn": True,
    "imageGCHighThresholdPercent": 50, "imageGCLowThresholdPercent": 40, "maxPods": 110,
    "protectKernelDefaults": True, "serializeImagePulls": True, "containerLogMaxSize": "100Mi",
    "evictionPressureTransitionPeriod": "4m0s", "evictionMaxPodGracePeriod": 90,
}
_DEFAULT_MAPS = {
    "evictionHard": {"memory.available": "100Mi", "imagefs.available": "5%", "imagefs.inodesFree": "5%",
                     "nodefs.available": "5%", "nodefs.inodesFree": "5%"},
    "evictionSoft": {"memory.available": "200Mi", "imagefs.available": "10%", "imagefs.inodesFree": "10%",
                     "nodefs.available": "10%", "nodefs.inodesFree": "10%"},
    "evictionSoftGracePeriod": {k: "1m30s" for k in ("memory.available", "imagefs.available", "imagefs.inodesFree",
                                                     "nodefs.available", "nodefs.inodesFree")},
    "evictionMinimumReclaim": {k: "0Mi" for k in ("memory.available", "imagefs.available", "imagefs.inodesFree",
                                                  "nodefs.available", "nodefs.inodesFree")},
    "kubeReserved": {"cpu": "80m", "memory": "1Gi"},
}
CPU_MANAGER_POLICIES = ("none", "static")
_VERSION = re.compile(r"^v?(\d+)\.(\d+)")


def shoot(doc: dict) -> Iterator[MappedKubelet | PlatformError]:
    yield from _shoot_spec(doc.get("spec"), ("spec",))


def managed_seed_set(doc: dict) -> Iterator[MappedKubelet | PlatformError]:
    """A ManagedSeedSet's Shoots: `spec.shootTemplate` (a ShootTemplate: metadata and a
    ShootSpec, seedmanagement v1alpha1 types_managedseedset.go)."""
    spec = doc.get("spec")
    template = spec.get("shootTemplate") if isinstance(spec, dict) else None
    if template is None:
        return
    if not isinstance(template, dict):
        yield PlatformError(("spec", "shootTemplate"), "spec.shootTemplate must be a mapping (a ShootTemplate)")
        return
    yield from _shoot_spec(template.get("spec"), ("spec", "shootTemplate", "spec"))


def _shoot_spec(spec: Any, at: Path) -> Iterator[MappedKubelet | PlatformError]:
    if not isinstance(spec, dict):
        return
    kubernetes = spec.get("kubernetes") if isinstance(spec.get("kubernetes"), dict) else {}
    cluster_at = at + ("kubernetes", "kubelet")
    cluster = kubernetes.get("kubelet")
    if cluster is not None and not isinstance(cluster, dict):
        yield PlatformError(cluster_at, f"{'.'.join(cluster_at)} must be a mapping (a Gardener KubeletConfig)")
        return
    version = _version(kubernetes.get("version"))
    provider = spec.get("provider") if isinstance(spec.get("provider"), dict) else {}
    workers = provider.get("workers")
    if not isinstance(workers, list) or not workers:
        if cluster is not None:
            yield _carrier("Gardener Shoot", cluster, cluster_at, at + ("kubernetes",), version, {}, ())
        return
    for i, worker in enumerate(workers):
        if not isinstance(worker, dict):
            continue
        w_at = at + ("provider", "workers", i)
        own = worker.get("kubernetes") if isinstance(worker.get("kubernetes"), dict) else {}
        block, block_at = (own["kubelet"], w_at + ("kubernetes", "kubelet")) if own.get("kubelet") is not None \
            else (cluster, cluster_at)
        if block is not None and not isinstance(block, dict):
            yield PlatformError(block_at, f"{'.'.join(map(str, block_at))} must be a mapping (a Gardener KubeletConfig)")
            continue
        name = str(worker.get("name") or f"workers[{i}]")
        labels = {POOL_LABEL: name, **{str(k): "" if v is None else str(v)
                                        for k, v in (worker.get("labels") or {}).items()}} \
            if isinstance(worker.get("labels") or {}, dict) else {POOL_LABEL: name}
        taints = tuple({"key": str(t.get("key", "")), "value": str(t.get("value", "") or ""),
                        "effect": str(t.get("effect", "") or "")}
                       for t in items(worker.get("taints")) if isinstance(t, dict))
        carrier = _carrier(f"Gardener worker pool {name}", block or {}, block_at if block is not None else w_at,
                           w_at, _version(own.get("version")) or version, labels, taints)
        carrier.node_labels_path = w_at + ("name",)
        yield carrier


def _version(value: Any) -> tuple[int, int] | None:
    found = _VERSION.match(str(value)) if isinstance(value, (str, int, float)) else None
    return (int(found[1]), int(found[2])) if found else None


def _carrier(platform: str, block: dict, block_at: Path, fallback: Path, version: tuple[int, int] | None,
             labels: dict[str, str], taints: tuple) -> MappedKubelet:
    config, sources, unknown, extra = gardener_configuration(block, block_at)
    carrier = MappedKubelet(platform, config, {}, block_at, fallback=block_at if block else fallback,
                              unknown=unknown, adjusters=(_gardener_adjust,), node_labels=labels,
                              node_taints=taints, sources=sources,
                              platform_set={"kubeReserved": f"kubeReserved {{cpu: 80m, memory: 1Gi}} is set by "
                                                            f"{GARDENER_SOURCE} where the pool leaves it out"}
                              if "kubeReserved" not in block else {})
    carrier.kubernetes_version = version
    carrier.extra.extend(extra)
    return carrier


def gardener_configuration(block: dict, at: Path) -> tuple[dict, dict[Path, Place], frozenset[str],
                                                               list[tuple[str, Violation]]]:
    """(the KubeletConfiguration Gardener renders from a KubeletConfig, kubelet path -> the
    Gardener field it came from, the fields whose value the document does not decide, what the
    API server refuses)."""
    config = copy.deepcopy(_BASE)
    config.update(copy.deepcopy(_DEFAULT_MAPS))
    sources: dict[Path, Place] = {}
    extra: list[tuple[str, Violation]] = []
    for name, value in block.items():
        name = str(name)
        where = at + (name,)
        problem = _shape_problem(name, value)
        if problem is not None:
            extra.append(("NG002", Violation(where, problem, remediation=_shape_fix(name))))
            continue
        if value is None:
            continue
        if name in _EVICTION_MAPS:
            for key, amount in value.items():
                signal = EVICTION_KEYS[str(key)]
                config[name][signal] = str(amount)
                sources[(name, signal)] = Place(where + (key,))
            sources.setdefault((name,), Place(where))
        elif name == "kubeReserved":
            for key, amount in value.items():
                config[name][RESERVED_KEYS[str(key)]] = str(amount)
                sources[(name, RESERVED_KEYS[str(key)])] = Place(where + (key,))
            sources[(name,)] = Place(where)
        elif name == "featureGates":
            config[name] = {str(k): v for k, v in value.items()}
            sources[(name,)] = Place(where)
            sources.update({(name, str(k)): Place(where + (k,)) for k in value})
        else:
            config[name] = copy.deepcopy(value)
            sources[(name,)] = Place(where)
    memory_available = {"memoryAvailable"} & set(map(str, block.get("evictionHard") or {})) \
        if isinstance(block.get("evictionHard"), dict) else set()
    unknown = frozenset() if memory_available else frozenset({"evictionHard.memory.available"})
    return config, sources, unknown, extra


def _shape_problem(name: str, value: Any) -> str | None:
    """What the API server says about one KubeletConfig field, or None when it decodes."""
    if name in MISSING:
        return (f"the Shoot API has no kubelet field {name} ({TYPES}): kubectl's strict field validation "
                f"refuses the Shoot (unknown field \"{name}\") and a lenient client's value is dropped; "
                f"Gardener gives the {MISSING[name]} no such setting")
    if name not in GARDENER_FIELDS:
        return f"unknown field \"{name}\" in a Gardener KubeletConfig ({TYPES}): refused or dropped"
    if value is None:
        return None
    if name in _SCALARS:
        expected = _SCALARS[name]
        if isinstance(value, bool) and expected is not bool or not isinstance(value, expected):
            return f"{name} must be {_type_name(expected)}, not {type(value).__name__}: the API server refuses the Shoot"
        if name == "cpuManagerPolicy" and value not in CPU_MANAGER_POLICIES:
            # pkg/api/core/validation/shoot.go ValidateKubeletConfig
            return (f"gardener-apiserver refuses the Shoot: Unsupported value: \"{value}\": supported values: "
                    f"\"none\", \"static\"")
        return None
    if name in _LISTS:
        return None if isinstance(value, list) else f"{name} must be a list: the API server refuses the Shoot"
    if not isinstance(value, dict):
        return f"{name} must be a mapping: the API server refuses the Shoot"
    allowed = {**{k: None for k in EVICTION_KEYS}} if name in _EVICTION_MAPS else \
        RESERVED_KEYS if name == "kubeReserved" else {"swapBehavior": None} if name == "memorySwap" else None
    if allowed is not None:
        stray = [str(k) for k in value if str(k) not in allowed]
        if stray:
            return (f"{name} has no field {stray[0]} in Gardener's API (it takes {', '.join(allowed)}; "
                    f"the kubelet's own spelling is translated by Gardener)")
    if name == "featureGates" and any(not isinstance(v, bool) for v in value.values()):
        return "featureGates values must be true or false: the API server refuses the Shoot"
    return None


def _type_name(expected) -> str:
    names = {bool: "true or false", int: "an integer", str: "a string"}
    return " or ".join(names[t] for t in (expected if isinstance(expected, tuple) else (expected,)))


def _shape_fix(name: str) -> str:
    if name in MISSING:
        return ("Remove it: the Shoot cannot configure this. Pods that need pod-level resource managers "
                "need nodes whose kubelet is configured outside the Shoot API.")
    return f"Use the field as {TYPES} defines it."


def _gardener_adjust(carrier: MappedKubelet, rule_id: str, v: Violation) -> Violation | None:
    """A requirement no Shoot can meet is said so (it is not a value to change), and values
    Gardener chose itself are named as Gardener's."""
    if rule_id == "NG203" and v.path[:1] == ("cpuManagerPolicy",) and \
            carrier.config.get("cpuManagerPolicy") not in CPU_MANAGER_POLICIES:
        return None           # gardener-apiserver refuses the Shoot first (NG002 at the field)
    subject = _UNREACHABLE.get(rule_id)
    if subject is not None and (not v.path or v.path[0] == subject):
        return Violation(v.path, f"{v.message}; a Gardener worker pool cannot meet this requirement through "
                                 f"the Shoot: the Shoot API has no {subject} ({TYPES}), and Gardener renders "
                                 f"the kubelet's configuration itself", v.container, v.severity,
                         "Run the pods that need pod-level resource managers on nodes whose kubelet is "
                         "configured outside the Shoot (a pool of another platform, or an extension that "
                         "mutates the OperatingSystemConfig), and keep them off this pool.")
    if rule_id == "NG207":
        return Violation(v.path, v.message, v.container, v.severity,
                         "Reserve CPUs with kubeReserved.cpu (the Shoot has no reservedSystemCPUs or "
                         "systemReserved); Gardener's default is 80m.")
    return v


__all__ = ["shoot", "managed_seed_set", "gardener_configuration", "MappedKubelet", "GARDENER_FIELDS",
           "EVICTION_KEYS", "POOL_LABEL"]
