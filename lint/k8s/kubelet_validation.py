"""The rest of the kubelet's own start-up checks that concern reservations and the managers.

Each function answers one question with the kubelet's words and the path of the field at fault
(relative to the KubeletConfiguration root). Sources (kubernetes/kubernetes, 1.37 development):

* `pkg/kubelet/apis/config/validation/validation.go` `ValidateKubeletConfiguration`: the
  `enforceNodeAllocatable` block (mutually exclusive `*-reserved` / `*-reserved-compressible`
  pairs, duplicates, unknown keys, `none` with others, the `systemReservedCgroup` /
  `kubeReservedCgroup` each enforcement needs, `cgroupsPerQOS` true for every enforcement) and
  `systemCgroups` without `cgroupRoot`;
* `pkg/kubelet/apis/config/validation/validation_reserved_memory.go`
  `validateReservedMemoryConfiguration`, which runs whatever the memory manager policy is;
* `pkg/kubelet/cm/memorymanager/memory_manager.go` `NewManager`: the `None` policy never
  reads `reservedMemory`;
* `cmd/kubelet/app/server.go` (`run`, and `GetKubeletReservedOptions`): with
  `reservedSystemCPUs` the kubelet deletes `kubeReserved.cpu` and sets `systemReserved.cpu` to
  the size of the set ("Option --reserved-cpus is specified, it will overwrite the cpu setting
  in KubeReserved and SystemReserved");
* `pkg/kubelet/cm/container_manager_linux.go` `NewPodContainerManager`: with `cgroupsPerQOS`
  false the pod container manager is the no-op one, so no pod cgroup exists to hold a pod-level
  budget;
* `pkg/kubelet/cm/topologymanager/topology_manager.go` `NewManager`: with policy `none` the
  scope is `none` whatever `topologyManagerScope` says.

Defaults from `pkg/kubelet/apis/config/v1beta1/defaults.go`: `enforceNodeAllocatable` ["pods"],
`cgroupsPerQOS` true, `cgroupRoot` "".
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from numaguard.lint.k8s.kubelet import (OptionProblem, memory_manager_policy, reserved_memory_entry_problems,
                                        reserved_system_cpus, topology_manager_policy)
from numaguard.lint.k8s.cpuset import CPUSetError
from numaguard.lint.model import Path

# pkg/kubelet/types/constants.go
PODS = "pods"
SYSTEM_RESERVED = "system-reserved"
SYSTEM_RESERVED_COMPRESSIBLE = "system-reserved-compressible"
KUBE_RESERVED = "kube-reserved"
KUBE_RESERVED_COMPRESSIBLE = "kube-reserved-compressible"
NONE = "none"
ENFORCEMENT_KEYS = (PODS, SYSTEM_RESERVED, SYSTEM_RESERVED_COMPRESSIBLE, KUBE_RESERVED,
                    KUBE_RESERVED_COMPRESSIBLE, NONE)
DEFAULT_ENFORCEMENT = (PODS,)

_FLAG = "enforceNodeAllocatable (--enforce-node-allocatable)"

# Each reservation's two enforcement keys (mutually exclusive) and the cgroup field and flag
# either of them needs (validation.go).
_RESERVED_ENFORCEMENTS = (
    (SYSTEM_RESERVED, SYSTEM_RESERVED_COMPRESSIBLE, "systemReservedCgroup", "--system-reserved-cgroup"),
    (KUBE_RESERVED, KUBE_RESERVED_COMPRESSIBLE, "kubeReservedCgroup", "--kube-reserved-cgroup"),
)


def enforce_node_allocatable(kc: dict) -> tuple[list[str], bool]:
    """(the list as the kubelet uses it, explicitly set)."""
    value = kc.get("enforceNodeAllocatable")
    if value is None:
        return list(DEFAULT_ENFORCEMENT), False
    return [str(v) for v in value] if isinstance(value, list) else [], True


def cgroups_per_qos(kc: dict) -> bool:
    value = kc.get("cgroupsPerQOS")
    return value if isinstance(value, bool) else True


@dataclass(frozen=True)
class Problem:
    path: Path
    message: str          # the kubelet's own error text where it has one


def node_allocatable_problems(kc: dict) -> list[Problem]:
    """What validation.go refuses about enforceNodeAllocatable, its cgroups and systemCgroups."""
    problems: list[Problem] = []
    if kc.get("systemCgroups") and not kc.get("cgroupRoot"):
        problems.append(Problem(("systemCgroups",), "invalid configuration: systemCgroups "
                                                    "(--system-cgroups) was specified and cgroupRoot "
                                                    "(--cgroup-root) was not specified"))
    values, explicit = enforce_node_allocatable(kc)
    listed = set(values)

    def at(index: int) -> Path:
        # the default ["pods"] is checked too (defaults.go runs before validation.go)
        return ("enforceNodeAllocatable", index) if explicit else ("cgroupsPerQOS",)

    for plain, compressible, _, _ in _RESERVED_ENFORCEMENTS:
        if plain in listed and compressible in listed:
            problems.append(Problem(at(values.index(compressible)),
                                    f"invalid configuration: both \"{plain}\" and \"{compressible}\" "
                                    f"cannot be specified together in {_FLAG}"))
    seen: set[str] = set()
    for i, value in enumerate(values):
        if value in seen:
            problems.append(Problem(at(i), f"invalid configuration: duplicated enforcements "
                                           f"\"{value}\" in {_FLAG}"))
            continue
        seen.add(value)
        reservation = next((r for r in _RESERVED_ENFORCEMENTS if value in r[:2]), None)
        if reservation is not None:
            plain, compressible, cgroup, flag = reservation
            if not kc.get(cgroup):
                problems.append(Problem(at(i), f"invalid configuration: {cgroup} ({flag}) must be "
                                               f"specified when \"{plain}\" or \"{compressible}\" "
                                               f"included in {_FLAG}"))
        elif value == NONE:
            if len(values) > 1:
                problems.append(Problem(at(i), f"invalid configuration: {_FLAG} may not contain "
                                               f"additional enforcements when \"{NONE}\" is specified"))
            continue
        elif value != PODS:
            valid = ", ".join(f'"{k}"' for k in ENFORCEMENT_KEYS[:-1]) + f' or "{NONE}"'
            problems.append(Problem(at(i), f"invalid configuration: option \"{value}\" specified for "
                                           f"{_FLAG}. Valid options are {valid}"))
            continue
        if not cgroups_per_qos(kc):
            problems.append(Problem(("cgroupsPerQOS",) if "cgroupsPerQOS" in kc else at(i),
                                    f"invalid configuration: cgroupsPerQOS (--cgroups-per-qos) must "
                                    f"be set to true when \"{value}\" contained in {_FLAG}"))
    return problems


@dataclass(frozen=True)
class CPUOverride:
    """reservedSystemCPUs replacing the cpu reservations (server.go)."""

    reserved_cpus: int
    dropped: tuple[tuple[str, str], ...]        # (field, value as written) the kubelet discards


def reserved_cpus_override(kc: dict) -> CPUOverride | None:
    try:
        cpus = reserved_system_cpus(kc)
    except CPUSetError:
        return None
    if not cpus:
        return None
    dropped = []
    for field in ("kubeReserved", "systemReserved"):
        reserved = kc.get(field)
        if isinstance(reserved, dict) and "cpu" in reserved:
            dropped.append((field, str(reserved["cpu"])))
    return CPUOverride(len(cpus), tuple(dropped)) if dropped else None


def reserved_memory_without_static(kc: dict, node: Any = None) -> tuple[list[OptionProblem], bool]:
    """(entry problems the kubelet refuses whatever the policy, reservedMemory ignored) for a
    configuration whose memory manager policy is not Static (NG208 covers Static)."""
    policy, _ = memory_manager_policy(kc)
    if policy == "Static" or not kc.get("reservedMemory"):
        return [], False
    problems = [p for p in reserved_memory_entry_problems(kc) if p.path[-2:-1] == ("limits",)]
    del node      # NUMA ids are checked by the Static memory manager only
    return problems, True


def scope_without_policy(kc: dict) -> list[Path]:
    """Fields that do nothing because topologyManagerPolicy is none (topology_manager.go)."""
    policy, _ = topology_manager_policy(kc)
    if policy != "none":
        return []
    return [(name,) for name in ("topologyManagerScope",) if kc.get(name) == "pod"]


__all__ = ["Problem", "node_allocatable_problems", "enforce_node_allocatable", "cgroups_per_qos",
           "CPUOverride", "reserved_cpus_override", "reserved_memory_without_static",
           "scope_without_policy", "ENFORCEMENT_KEYS"]
