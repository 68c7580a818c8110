"""Kubelet feature gates: which gates exist, their defaults per Kubernetes minor version, which
are locked, which depend on others, and what a KubeletConfiguration's `featureGates` turn on.

Plain dict in (the KubeletConfiguration document), values out. Sources (1.37 development,
July 2026): `kubernetes/kubernetes` `pkg/features/kube_features.go` @45b76a3 (versioned specs and
the dependency map), errors from `kubernetes/component-base` `featuregate/feature_gate.go`.
The full list of gate names and locked gates is data, `lint/k8s/kubelet_gates.json` (package data);
the gates that matter to pod-level resource managers are spelled out in `GATE_TABLE` below.
Everything here is also importable from `numaguard.lint.k8s.kubelet`.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

Version = tuple[int, int]


@dataclass(frozen=True)
class GateSpec:
    """One gate at one Kubernetes minor version, as its VersionedSpecs entry says."""

    stage: str            # "alpha" | "beta" | "ga" | "deprecated"
    default: bool
    locked: bool = False  # LockToDefault: setting the other value stops the kubelet


# The gates that decide whether pod-level resource managers work, per minor version.
# kube_features.go @45b76a3 unless noted. Versions below 1.36 use the 1.36 column (NG213 says
# so), versions above 1.37 the 1.37 column.
GATE_TABLE: dict[Version, dict[str, GateSpec]] = {
    (1, 36): {
        "PodLevelResources": GateSpec("beta", True),                       # beta 1.34
        "PodLevelResourceManagers": GateSpec("alpha", False),              # alpha 1.36
        "InPlacePodVerticalScaling": GateSpec("ga", True, locked=True),    # GA locked 1.35
        "InPlacePodLevelResourcesVerticalScaling": GateSpec("beta", True),  # beta 1.36
        "NodeDeclaredFeatures": GateSpec("beta", True),                    # beta 1.36
        "CPUManagerPolicyOptions": GateSpec("ga", True, locked=True),      # GA locked 1.33
        "CPUManagerPolicyAlphaOptions": GateSpec("alpha", False),
        "CPUManagerPolicyBetaOptions": GateSpec("beta", True),
        "TopologyManagerPolicyOptions": GateSpec("ga", True, locked=True),  # GA locked 1.32
        "TopologyManagerPolicyAlphaOptions": GateSpec("alpha", False),
        "TopologyManagerPolicyBetaOptions": GateSpec("beta", True),
        "MemoryQoS": GateSpec("alpha", False),
        "InPlacePodVerticalScalingExclusiveCPUs": GateSpec("alpha", False),
        "InPlacePodVerticalScalingExclusiveMemory": GateSpec("alpha", False),
        "DisableCPUQuotaWithExclusiveCPUs": GateSpec("deprecated", True),  # locked only from 1.37
        "WindowsCPUAndMemoryAffinity": GateSpec("alpha", False),
    },
    (1, 37): {
        "PodLevelResources": GateSpec("beta", True),   # GA PR #140536 was still open
        # kube_features.go @45b76a3 still says Beta default true; PR #141209 (merged 2026-08-05,
        # milestone v1.37) turned the default off: "The feature gate `PodLevelResourceManagers`
        # is disabled by default." kubernetes.io 1.37: "beta (disabled by default)".
        "PodLevelResourceManagers": GateSpec("beta", False),
        "PodLevelResourcesFixDefaulting": GateSpec("beta", True),          # first spec 1.37
        "PodLevelResourcesFixKubeletQOSClass": GateSpec("beta", True),     # first spec 1.37
        "InPlacePodVerticalScaling": GateSpec("ga", True, locked=True),
        "InPlacePodLevelResourcesVerticalScaling": GateSpec("beta", True),
        "NodeDeclaredFeatures": GateSpec("ga", True, locked=True),         # GA locked 1.37
        "CPUManagerPolicyOptions": GateSpec("ga", True, locked=True),
        "CPUManagerPolicyAlphaOptions": GateSpec("alpha", False),
        "CPUManagerPolicyBetaOptions": GateSpec("beta", True),
        "TopologyManagerPolicyOptions": GateSpec("ga", True, locked=True),
        "TopologyManagerPolicyAlphaOptions": GateSpec("alpha", False),
        "TopologyManagerPolicyBetaOptions": GateSpec("beta", True),
        "MemoryQoS": GateSpec("beta", True),                               # beta 1.37
        "InPlacePodVerticalScalingExclusiveCPUs": GateSpec("alpha", False),
        "InPlacePodVerticalScalingExclusiveMemory": GateSpec("alpha", False),
        "DisableCPUQuotaWithExclusiveCPUs": GateSpec("deprecated", True, locked=True),
        "WindowsCPUAndMemoryAffinity": GateSpec("alpha", False),
    },
}

# defaultKubernetesFeatureGateDependencies (kube_features.go @45b76a3), for the gates above.
# featuregate.go refuses to start when an enabled gate has a disabled dependency.
GATE_DEPENDENCIES: dict[str, tuple[str, ...]] = {
    "PodLevelResourceManagers": ("PodLevelResources",),
    "PodLevelResourcesFixDefaulting": ("PodLevelResources",),
    "PodLevelResourcesFixKubeletQOSClass": ("PodLevelResources",),
    "InPlacePodLevelResourcesVerticalScaling": ("InPlacePodVerticalScaling", "PodLevelResources",
                                                "NodeDeclaredFeatures"),
    "InPlacePodVerticalScalingExclusiveCPUs": ("InPlacePodVerticalScaling",),
    "InPlacePodVerticalScalingExclusiveMemory": ("InPlacePodVerticalScaling",),
}

# Gates people still copy from old guides; gone from kube_features.go, so "unrecognized".
REMOVED_GATES: dict[str, str] = {
    "CPUManager": "the CPU Manager gate went GA in 1.26 and was removed; the manager is always "
                  "available and cpuManagerPolicy alone selects it",
    "MemoryManager": "the Memory Manager gate went GA in 1.32 and was removed; memoryManagerPolicy "
                     "alone selects it",
    "TopologyManager": "the Topology Manager gate went GA in 1.27 and was removed; "
                       "topologyManagerPolicy alone selects it",
}

# Gates announced for 1.37 but absent from the code numaguard read.
UNCONFIRMED_GATES: dict[str, str] = {
    "PerPodPIDLimit": "KEP-6063 (pod-level pids limit): the implementation PR #139277 was open "
                      "and the gate absent from kube_features.go in July 2026; kubernetes.io has "
                      "a stub page saying alpha in 1.37",
}


def table_version(version: Version) -> Version:
    """The column of GATE_TABLE that describes `version` (clamped to 1.36..1.37)."""
    return min(max(tuple(version), (1, 36)), (1, 37))


def gate_spec(name: str, version: Version) -> GateSpec | None:
    return GATE_TABLE[table_version(version)].get(name)


@lru_cache(maxsize=1)
def _gate_catalogue() -> dict[str, Any]:
    from importlib import resources     # slow to import (tempfile, shutil...): only when gates are read

    text = resources.files("numaguard.lint.k8s").joinpath("kubelet_gates.json").read_text(encoding="utf-8")
    return json.loads(text)


def known_gate_names(version: Version) -> frozenset[str]:
    """Every gate name a kubelet of this version registers (1.37 list; 1.36 without the gates
    whose first versioned spec is 1.37 and with the gates 1.37 removed)."""
    catalogue = _gate_catalogue()
    names = frozenset(catalogue["names"])
    if tuple(version) < (1, 37):
        names = (names - frozenset(catalogue["addedIn137"])) | frozenset(catalogue["removedIn137"])
    return names


def removal_note(name: str, version: Version) -> str | None:
    """Why a kubelet of `version` no longer knows the gate (when it once existed), or None: the
    long-removed gates of REMOVED_GATES, and from 1.37 on the gates 1.37 removed."""
    if name in REMOVED_GATES:
        return REMOVED_GATES[name]
    if tuple(version) >= (1, 37):
        return _gate_catalogue()["removedIn137"].get(name)
    return None


def removed_gate_value(name: str, version: Version) -> bool | None:
    """The value a removed gate's behaviour was kept at when the gate went, or None (not removed
    at `version`, or removed before it graduated: merged into another gate). A gate set to that
    value asks for what the kubelet now always does, so deleting the entry changes nothing but
    the kubelet's refusal. REMOVED_GATES all went GA (on) first; the 1.37 removals are data."""
    if removal_note(name, version) is None:
        return None
    if name in REMOVED_GATES:
        return True
    return _gate_catalogue()["keptWhenRemoved"].get(name)


def locked_gates(version: Version) -> dict[str, bool]:
    """Gates locked to their default at `version` (LockToDefault), name -> locked value."""
    out: dict[str, bool] = {}
    for name, (value, since) in _gate_catalogue()["locked"].items():
        major, minor = (int(p) for p in since.split("."))
        if (major, minor) <= tuple(version):
            out[name] = bool(value)
    for name, spec in GATE_TABLE[table_version(version)].items():
        if spec.locked:
            out[name] = spec.default
    return out


def gate_status(name: str, version: Version) -> str:
    """"known", "removed" (`removal_note`), "unconfirmed" (UNCONFIRMED_GATES) or "unknown"."""
    if removal_note(name, version) is not None:
        return "removed"
    if name in UNCONFIRMED_GATES:
        return "unconfirmed"
    if name in known_gate_names(version) or gate_spec(name, version) is not None:
        return "known"
    return "unknown"


def explicit_gates(kc: dict) -> dict[str, bool]:
    """The featureGates the document sets (boolean values only; others are NG002)."""
    gates = kc.get("featureGates")
    if not isinstance(gates, dict):
        return {}
    return {str(k): v for k, v in gates.items() if isinstance(v, bool)}


def effective_gates(kc: dict, version: Version) -> dict[str, bool]:
    """Every gate of GATE_TABLE at its default for `version`, overlaid with what the document
    sets (including gates outside the table)."""
    gates = {name: spec.default for name, spec in GATE_TABLE[table_version(version)].items()}
    gates.update(explicit_gates(kc))
    return gates


def gate_enabled(kc: dict, name: str, version: Version) -> bool:
    return effective_gates(kc, version).get(name, False)


def dependency_violations(kc: dict, version: Version) -> list[tuple[str, tuple[str, ...]]]:
    """(gate, disabled dependencies) for every enabled gate whose dependencies are not all
    enabled: the kubelet stops with "<gate> is enabled, but depends on features that are
    disabled: [<deps>]" (featuregate.go)."""
    gates = effective_gates(kc, version)
    out = []
    for gate, deps in GATE_DEPENDENCIES.items():
        if not gates.get(gate, False):
            continue
        disabled = tuple(d for d in deps if not gates.get(d, False))
        if disabled:
            out.append((gate, disabled))
    return out


def go_list(items) -> str:
    """How Go's %v prints a []string: [a b c]."""
    return "[" + " ".join(items) + "]"
