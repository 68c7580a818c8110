"""What an OpenShift node's kubelet starts with, under what users write in a `KubeletConfig`,
a `PerformanceProfile` or a `MachineConfig` drop-in.

Sources (openshift/machine-config-operator at 7ff337a4ffac):

* `templates/worker/01-worker-kubelet/_base/files/kubelet.yaml`: the base file
  `/etc/kubernetes/kubelet.conf` (`MCO_KUBELET_CONF` below keeps its fields that are not
  templated per cluster: the cluster DNS address and TLS settings are left out);
  `.../units/kubelet.service.yaml` starts the kubelet with `--config=/etc/kubernetes/kubelet.conf
  --config-dir=/etc/openshift/kubelet.conf.d` (`DROPIN_DIR`).
* `templates/common/_base/files/kubelet-auto-sizing.yaml`: at boot a script writes the drop-in
  `/etc/openshift/kubelet.conf.d/20-auto-sizing.conf` with `systemReserved` cpu, memory and
  ephemeral-storage, computed from the node's size while `NODE_SIZING_ENABLED=true` (the
  default, `kubelet-auto-node-sizing-enabled.yaml`), else the static values (1Gi, 500m, 1Gi or
  the user's).
* `pkg/controller/kubelet-config/helpers.go`: how a `KubeletConfig` reaches `kubelet.conf`.
  `validateUserKubeletConfig` refuses some fields; `generateKubeletIgnFiles` moves the user's
  `systemReserved` cpu/memory/ephemeral-storage to the auto-sizing environment (so to the
  drop-in above), drops `featureGates`, merges the rest over the base with
  `mergo.Merge(WithOverride)` (a field the user leaves at its zero value, `""` or `0`, does not
  override), clears `systemReservedCgroup` when the user lists `enforceNodeAllocatable` without
  a system-reserved key, and, **when `reservedSystemCPUs` is set, clears `systemReservedCgroup`
  and drops the system-reserved keys from `enforceNodeAllocatable`** (keeping `pods`). A naive
  merge would leave the base's `systemReservedCgroup: /system.slice` next to
  `reservedSystemCPUs`, which the kubelet refuses (NG209): the MCO never lets that happen.

This module only works on plain mappings; the readers in `platforms.py` and
`platform_openshift.py` turn the result into carriers.
"""
from __future__ import annotations

import copy
from typing import Any

from numaguard.lint.model import Path, Severity, Violation, items

KUBELET_CONF = "/etc/kubernetes/kubelet.conf"
DROPIN_DIR = "/etc/openshift/kubelet.conf.d"
AUTO_SIZING_DROPIN = f"{DROPIN_DIR}/20-auto-sizing.conf"
MCO_SOURCE = "the Machine Config Operator (templates/*/01-*-kubelet/_base/files/kubelet.yaml)"

MCO_KUBELET_CONF: dict = {
    "apiVersion": "kubelet.config.k8s.io/v1beta1", "kind": "KubeletConfiguration",
    "authentication": {"x509": {"clientCAFile": "/etc/kubernetes/kubelet-ca.crt"},
                       "anonymous": {"enabled": False}},
    "cgroupDriver": "systemd", "cgroupRoot": "/", "clusterDomain": "cluster.local",
    "containerLogMaxSize": "50Mi", "enableSystemLogQuery": True, "failSwapOn": False,
    "maxPods": 250, "kubeAPIQPS": 50, "kubeAPIBurst": 100, "podPidsLimit": 4096,
    "protectKernelDefaults": True, "rotateCertificates": True, "serializeImagePulls": False,
    "staticPodPath": "/etc/kubernetes/manifests", "memorySwap": {"swapBehavior": "NoSwap"},
    "systemCgroups": "/system.slice", "systemReservedCgroup": "/system.slice",
    "enforceNodeAllocatable": ["pods", "system-reserved-compressible"],
    "nodeStatusUpdateFrequency": "10s", "nodeStatusReportFrequency": "5m",
    "serverTLSBootstrap": True,
}

# kubelet-auto-sizing.yaml / createNewKubeletDynamicSystemReservedIgnition: the static values.
AUTO_SIZING_DEFAULTS = {"cpu": "500m", "memory": "1Gi", "ephemeral-storage": "1Gi"}
SIZED_RESOURCES = tuple(AUTO_SIZING_DEFAULTS)

# KubeletConfiguration v1beta1 fields that are plain Go values, not pointers: mergo treats
# their false as "not set" (k8s.io/kubelet config/v1beta1/types.go). protectKernelDefaults is
# the one the MCO special-cases: a user's false is honoured (helpers.go protectKernelDefaultsStr).
_PLAIN_BOOLS = frozenset({"rotateCertificates", "serverTLSBootstrap", "enableContentionProfiling",
                          "kernelMemcgNotification", "nodePodsAccessible"})

_SYSTEM_RESERVED_KEYS = ("system-reserved", "system-reserved-compressible")


def _is_zero(value: Any, name: str) -> bool:
    """A value mergo does not copy over (the Go zero value of a non-pointer field)."""
    if value is None or value == "" or value == [] or value == {}:
        return True
    if isinstance(value, bool):
        return value is False and name in _PLAIN_BOOLS
    return isinstance(value, (int, float)) and value == 0


def mergo_override(base: dict, user: dict) -> dict:
    """`user` merged over `base` as `mergo.Merge(dst, src, mergo.WithOverride)` merges two
    KubeletConfiguration structs: nested structs and maps key by key, lists replaced, zero
    values ignored."""
    out = copy.deepcopy(base)
    for key, value in user.items():
        key = str(key)
        if _is_zero(value, key):
            continue
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = mergo_override(out[key], value)
        else:
            out[key] = copy.deepcopy(value)
    return out


def mco_refusals(user: dict, auto_sizing: Any) -> list[tuple[Path, str]]:
    """What `validateUserKubeletConfig` refuses in a KubeletConfig's `spec.kubeletConfig` (the
    path is relative to it), in the MCO's words. featureGates is reported by the reader."""
    out: list[tuple[Path, str]] = []

    def refuse(field: str, shown: Any, path: Path | None = None) -> None:
        out.append((path or (field,), f"KubeletConfiguration: {field} is not allowed to be set, "
                                      f"but contains: {shown}"))

    if user.get("cgroupDriver"):
        refuse("cgroupDriver", user["cgroupDriver"])
    if user.get("clusterDNS"):
        refuse("clusterDNS", "[" + " ".join(map(str, user["clusterDNS"])) + "]")
    if user.get("clusterDomain"):
        refuse("clusterDomain", user["clusterDomain"])
    if "failSwapOn" in user and user["failSwapOn"] is not None:
        refuse("failSwapOn", str(user["failSwapOn"]).lower())
    swap = user.get("memorySwap")
    if isinstance(swap, dict) and swap.get("swapBehavior"):
        refuse("swapBehavior", swap["swapBehavior"], ("memorySwap", "swapBehavior"))
    if isinstance(user.get("systemReserved"), dict) and user["systemReserved"] and auto_sizing is True:
        out.append((("systemReserved",), "KubeletConfiguration: autoSizingReserved and systemdReserved "
                                         "cannot be set together"))
    reserved_cgroup, system_cgroups = user.get("systemReservedCgroup"), user.get("systemCgroups")
    if reserved_cgroup and system_cgroups and reserved_cgroup != system_cgroups:
        out.append((("systemReservedCgroup",), f"KubeletConfiguration: systemReservedCgroup "
                                               f"({reserved_cgroup}) must match systemCgroups "
                                               f"({system_cgroups})"))
    return out


def mco_kubelet_conf(user: dict, base: dict | None = None) -> tuple[dict, list[tuple[Path, str]]]:
    """(the `kubelet.conf` the MCO renders from a KubeletConfig's `spec.kubeletConfig` over
    `base`, what it refuses about the merged result: (field relative to the user's config,
    the MCO's words))."""
    base = MCO_KUBELET_CONF if base is None else base
    spec = {k: v for k, v in user.items() if k not in ("featureGates", "apiVersion", "kind")}
    reserved = spec.get("systemReserved")
    if isinstance(reserved, dict):
        spec["systemReserved"] = {k: v for k, v in reserved.items() if k not in SIZED_RESOURCES}
    config = mergo_override(base, spec)
    if user.get("protectKernelDefaults") is False:
        config["protectKernelDefaults"] = False
    enforce = spec.get("enforceNodeAllocatable")
    if not spec.get("systemReservedCgroup") and isinstance(enforce, list) and enforce and \
            not any(key in _SYSTEM_RESERVED_KEYS for key in enforce):
        config["systemReservedCgroup"] = ""
    if config.get("reservedSystemCPUs"):
        config["systemReservedCgroup"] = ""
        values = [str(v) for v in items(config.get("enforceNodeAllocatable"))]
        kept = [v for v in values if v not in _SYSTEM_RESERVED_KEYS]
        if "pods" not in kept:
            kept.insert(0, "pods")
        config["enforceNodeAllocatable"] = kept
    refused: list[tuple[Path, str]] = []
    reserved_cgroup, system_cgroups = config.get("systemReservedCgroup"), config.get("systemCgroups")
    both_written = bool(user.get("systemReservedCgroup") and user.get("systemCgroups"))
    if reserved_cgroup and system_cgroups and reserved_cgroup != system_cgroups and not both_written:
        # (both written and different: validateUserKubeletConfig has refused it already)
        field = "systemReservedCgroup" if "systemReservedCgroup" in user else "systemCgroups"
        refused.append(((field,), f"invalid merged configuration: systemReservedCgroup "
                                  f"({reserved_cgroup}) must match systemCgroups ({system_cgroups})"))
    return config, refused


def auto_sizing_dropin(user_reserved: Any, auto_sizing: Any) -> tuple[dict, frozenset[str]]:
    """(the `20-auto-sizing.conf` drop-in, the `systemReserved.<resource>` values in it that
    depend on the node). The user's cpu/memory/ephemeral-storage make the values static (the
    others then take the script's defaults); without them the MCO leaves node sizing on unless
    the KubeletConfig says `autoSizingReserved: false`."""
    given = {k: str(v) for k, v in (user_reserved or {}).items()
             if k in SIZED_RESOURCES and v not in (None, "")} if isinstance(user_reserved, dict) else {}
    values = {**AUTO_SIZING_DEFAULTS, **given}
    dynamic = not given and auto_sizing is not False
    unknown = frozenset(f"systemReserved.{r}" for r in ("cpu", "memory")) if dynamic else frozenset()
    return {"systemReserved": values}, unknown


# -- Node Tuning Operator renders ------------------------------------------------------------

# cluster-node-tuning-operator pkg/performanceprofile/controller/performanceprofile/components:
# consts.go ComponentNamePrefix "performance", utils.go GetComponentName "<prefix>-<profile>";
# handler.go sets the profile as controller owner reference; cmd/render/render.go writes either
# that owner reference (--owner-ref k8s), the label below (label-name, the default) or nothing.
RENDER_NAME_PREFIX = "performance-"
WEAK_OWNER_LABEL = "performance.openshift.io/weak-owner-reference-name"
PERFORMANCE_GROUP_PREFIX = "performance.openshift.io/"


def rendered_profile(doc: dict) -> str | None:
    """The PerformanceProfile a KubeletConfig says it was rendered from (owner reference, the
    render command's weak-owner label, or the operator's `performance-<profile>` name), else
    None. A name alone only counts when that profile is linted in the same run (engine)."""
    meta = doc.get("metadata") if isinstance(doc.get("metadata"), dict) else {}
    for owner in items(meta.get("ownerReferences")):
        if isinstance(owner, dict) and owner.get("kind") == "PerformanceProfile" and \
                str(owner.get("apiVersion", "")).startswith(PERFORMANCE_GROUP_PREFIX) and owner.get("name"):
            return str(owner["name"])
    labels = meta.get("labels") if isinstance(meta.get("labels"), dict) else {}
    if labels.get(WEAK_OWNER_LABEL):
        return str(labels[WEAK_OWNER_LABEL])
    name = meta.get("name")
    if isinstance(name, str) and name.startswith(RENDER_NAME_PREFIX) and len(name) > len(RENDER_NAME_PREFIX):
        return name[len(RENDER_NAME_PREFIX):]
    return None


# -- the cluster's feature gates (numaguard.lint.k8s.openshift_cluster reads them) -----------------

OPENSHIFT_GATES_FIX = ("OpenShift takes kubelet feature gates from the cluster's FeatureGate "
                       "resource (featureSet: CustomNoUpgrade, customNoUpgrade.enabled: "
                       "[PodLevelResourceManagers]); the Machine Config Operator refuses "
                       "featureGates in a KubeletConfig")


def cluster_gates(references: Any, key: Any) -> tuple[Any, str | None]:
    """(the gate selection `key` names in the run, or None; why none when several disagree)."""
    sources = references.get("gates", key) if references is not None else []
    distinct = {s.gates for s in sources}
    if len(distinct) > 1:
        return None, (f"the run holds {len(sources)} gate selections for this cluster that disagree "
                      f"({'; '.join(s.describe() for s in sources)})")
    return (sources[0], None) if sources else (None, None)


def with_cluster_gates(carrier: Any, gates: Any, conflict: str | None) -> Any:
    """The carrier with the cluster's gates in its kubelet.conf (under any a drop-in sets)."""
    if gates is None and conflict is None:
        return carrier
    out = copy.copy(carrier)
    out.cluster_gates = gates.describe() if gates is not None else conflict
    if gates is not None:
        config = dict(carrier.config)
        config["featureGates"] = {**dict(gates.gates), **(config.get("featureGates") or {})}
        out.config = config
        out.cluster_gates_known = True
    return out


def openshift_resolve(carrier: Any):
    """A `PlatformKubelet.resolve` for an OpenShift cluster's kubelet: the FeatureGate's gates."""
    def resolve(references: Any) -> Any:
        return with_cluster_gates(carrier, *cluster_gates(references, "openshift"))
    return resolve


def tell_cluster_gates(carrier: Any, rule_id: str, v: Any) -> Any:
    """NG202 in OpenShift's terms: the FeatureGate decides it; when the run holds it, the
    finding says which one, else that numaguard cannot see it (a warning)."""
    if rule_id != "NG202":
        return v
    if getattr(carrier, "cluster_gates_known", False):
        return Violation(v.path, f"{v.message} [the kubelet's gates come from the cluster's FeatureGate "
                                 f"({carrier.cluster_gates}), which does not enable it]", v.container, v.severity,
                         OPENSHIFT_GATES_FIX + ".")
    why = f" ({carrier.cluster_gates})" if carrier.cluster_gates else ""
    return Violation(v.path, "PodLevelResourceManagers is not on in this configuration, and on OpenShift the "
                             "kubelet's gates come from the cluster's FeatureGate resource, which numaguard does "
                             f"not see{why}: make sure it enables PodLevelResourceManagers, or the CPU and Memory "
                             "Managers skip pods with pod-level resources (lint the FeatureGate named cluster "
                             "in the same run to have it read)", v.container, Severity.WARNING,
                     OPENSHIFT_GATES_FIX + ".")


__all__ = ["MCO_KUBELET_CONF", "mergo_override", "mco_refusals", "mco_kubelet_conf",
           "auto_sizing_dropin", "rendered_profile", "KUBELET_CONF", "DROPIN_DIR",
           "AUTO_SIZING_DROPIN", "MCO_SOURCE", "OPENSHIFT_GATES_FIX", "cluster_gates", "with_cluster_gates",
           "openshift_resolve", "tell_cluster_gates"]
