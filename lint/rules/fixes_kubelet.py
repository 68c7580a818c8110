"""The fixes of the kubelet rules that have one safe fix (NG201-NG205, NG208, NG210).

Each takes the effective KubeletConfiguration (as the rules judged it), the finding's path in
it and the rules' context (target version, node description), and returns the edits to the configuration, or raises
`CannotFix` with why the choice is the user's.
"""
from __future__ import annotations

from typing import Any, Callable

from numaguard.lint.k8s import kubelet as k
from numaguard.lint.k8s.quantity import format_bytes
from numaguard.lint.model import Path
from numaguard.lint.rules.base import LintContext
from numaguard.lint.rules.fixes import CannotFix, Edit
from numaguard.lint.rules.kubelet import suggested_numa_node


def enable_pod_level_resources(kc: dict, path: Path, ctx: LintContext) -> list[Edit]:
    """NG201: the gate turned back on (on by default since 1.34; its dependents stay valid)."""
    return [Edit(("featureGates", "PodLevelResources"), True)]


def enable_pod_level_resource_managers(kc: dict, path: Path, ctx: LintContext) -> list[Edit]:
    """NG202: the gate turned on (beta but off by default in 1.37), unless a gate it depends on
    is off: the kubelet would then refuse to start (NG201 turns PodLevelResources back on)."""
    gates = dict(k.explicit_gates(kc), PodLevelResourceManagers=True)
    for gate, disabled in k.dependency_violations({**kc, "featureGates": gates}, ctx.kubernetes_version):
        if gate == "PodLevelResourceManagers":
            raise CannotFix(f"PodLevelResourceManagers depends on {', '.join(disabled)}, which this "
                            "configuration turns off: the kubelet would refuse to start")
    return [Edit(("featureGates", "PodLevelResourceManagers"), True)]


def cpu_manager_static_spelling(kc: dict, path: Path, ctx: LintContext) -> list[Edit]:
    """NG203: `static` spelled with other letter cases ("Static"), which the kubelet refuses
    (cpu_manager.go NewManager matches the policy name exactly), where CPUs are already reserved
    for the system: the kubelet then starts with the policy the file meant. Turning the static
    policy on where it is not chosen (not set, `none`) changes how every pod of the node gets
    CPUs and needs a drain: the user's decision, as is which CPUs to reserve."""
    policy, explicit = k.cpu_manager_policy(kc)
    if not explicit or policy == "none":
        raise CannotFix("the static policy is not chosen here: turning it on changes how every pod on "
                        "the node gets CPUs, needs CPUs reserved for the system and a drain (removing "
                        "/var/lib/kubelet/cpu_manager_state); that is yours to decide")
    if policy.lower() != "static":
        raise CannotFix(f"{policy!r} is no spelling of a policy the kubelet knows (none, static): which "
                        "one was meant is yours to say")
    try:
        k.reserved_system_cpus(kc)
    except k.CPUSetError:
        raise CannotFix("reservedSystemCPUs cannot be read (NG209): correct it first; the static "
                        "policy needs the CPUs it reserves") from None
    if k.reserved_cpu_count(kc) == 0:
        raise CannotFix("no CPUs are reserved for the system (reservedSystemCPUs, kubeReserved.cpu, "
                        "systemReserved.cpu), without which the kubelet refuses the static policy too "
                        "(NG207): which CPUs to reserve is yours to choose")
    return [Edit(("cpuManagerPolicy",), "static")]


def remove_gate_kept_on(kc: dict, path: Path, ctx: LintContext) -> list[Edit]:
    """NG210: a removed gate set to the value its removal kept (`CPUManager: true`: the CPU
    Manager went GA and is always there) asks for what the kubelet now always does, so deleting
    the entry changes nothing but the kubelet's refusal (`kubelet_gates.removed_gate_value`).
    Any other refused gate is the user's: a misspelled one (which was meant?), a locked or a
    removed one set against what the kubelet now does, a dependency left off."""
    version = ctx.kubernetes_version
    name = path[1] if len(path) == 2 and path[0] == "featureGates" else None
    value = k.explicit_gates(kc).get(name) if name is not None else None
    if value is None:
        raise CannotFix("it is not one gate of featureGates")
    status = k.gate_status(name, version)
    if status != "removed":
        locked = k.locked_gates(version)
        if status == "known" and name in locked and value != locked[name]:
            raise CannotFix(f"{name}: {str(value).lower()} asks for what this kubelet cannot do (the gate is "
                            f"locked to {str(locked[name]).lower()}): whether the node can run without it is "
                            "yours to decide")
        if status == "known":
            raise CannotFix("a gate it depends on is off: turn that one on or this one off, as you choose")
        raise CannotFix(f"{name} is not a gate this kubelet knows: which gate was meant is yours to say")
    kept = k.removed_gate_value(name, version)
    if kept is None:
        raise CannotFix(f"{name} was removed before it graduated ({k.removal_note(name, version)}): what "
                        "replaces it is yours to set")
    if value != kept:
        raise CannotFix(f"{name}: {str(value).lower()} asks for what the kubelet no longer does "
                        f"({k.removal_note(name, version)}): whether the node can run without it is yours "
                        "to decide")
    return [Edit(("featureGates", name), remove=True)]


def topology_scope_pod(kc: dict, path: Path, ctx: LintContext) -> list[Edit]:
    """NG205."""
    return [Edit(("topologyManagerScope",), "pod")]


def memory_manager_static(kc: dict, path: Path, ctx: LintContext) -> list[Edit]:
    """NG204: the Static policy, with the reservedMemory the kubelet then requires."""
    return [Edit(("memoryManagerPolicy",), "Static")] + reserved_memory_edits(kc, ctx.node)


def reserved_memory_total(kc: dict, path: Path, ctx: LintContext) -> list[Edit]:
    """NG208: the total made equal to the node allocatable reservation. Invalid entries (a
    zero, a duplicate, a NUMA node the machine lacks) are the user's to correct."""
    if len(path) > 1:
        raise CannotFix("an invalid reservedMemory entry: correct or remove it yourself")
    return reserved_memory_edits(kc, ctx.node)


def reserved_memory_edits(kc: dict, node: Any) -> list[Edit]:
    """reservedMemory made to add up to kubeReserved.memory + systemReserved.memory +
    evictionHard memory.available, which the kubelet requires with the Static policy
    (memorymanager/memory_manager.go validateReservedMemory compares the sum over NUMA nodes
    with the node allocatable reservation, per type). An existing reservation on one NUMA node
    keeps its node; a new one goes on `suggested_numa_node` (node 0 unless the node description
    says otherwise). A split over several NUMA nodes is the user's: which share should change?"""
    reservation = k.memory_reservation(kc, k.node_memory_capacity(node))
    if reservation.eviction.fraction is not None:
        # The kubelet takes the share of the machine's own memory capacity (MemTotal) when it
        # starts (pkg/kubelet/eviction/api/types.go, GetThresholdQuantity): a node description's nominal
        # memory is not that, and no one written total fits every machine of a pool.
        raise CannotFix(f"evictionHard memory.available is {reservation.eviction.value}, a share of "
                        "each machine's memory capacity: no written total fits every machine; use "
                        "an absolute threshold (e.g. 100Mi) first")
    required = reservation.required["memory"]
    if not required:
        raise CannotFix("nothing reserves memory (kubeReserved.memory, systemReserved.memory and "
                        "evictionHard memory.available are all 0): how much to keep back for the "
                        "system is yours to choose")
    mismatches = reservation.mismatches()
    others = sorted(set(mismatches) - {"memory"})
    if others:
        raise CannotFix(f"reservedMemory reserves {', '.join(others)}, which kubeReserved and "
                        "systemReserved cannot: remove those limits yourself")
    if "memory" not in mismatches:
        return []
    entries = kc.get("reservedMemory") if isinstance(kc.get("reservedMemory"), list) else []
    holding = [i for i, e in enumerate(entries) if isinstance(e, dict) and isinstance(e.get("limits"), dict)
               and "memory" in e["limits"]]
    if len(holding) > 1:
        nodes = ", ".join(str(entries[i].get("numaNode")) for i in holding)
        raise CannotFix(f"reservedMemory splits memory over NUMA nodes {nodes}: numaguard cannot tell "
                        f"which share to change; make them add up to {format_bytes(required)}")
    if holding:
        return [Edit(("reservedMemory", holding[0], "limits", "memory"), format_bytes(required))]
    if entries:
        raise CannotFix("reservedMemory has entries without memory: add memory to one yourself")
    return [Edit(("reservedMemory",), [{"numaNode": suggested_numa_node(kc, node),
                                        "limits": {"memory": format_bytes(required)}}])]


KUBELET_FIXES: dict[str, Callable[[dict, Path, LintContext], list[Edit]]] = {
    "NG201": enable_pod_level_resources, "NG202": enable_pod_level_resource_managers,
    "NG203": cpu_manager_static_spelling, "NG204": memory_manager_static, "NG205": topology_scope_pod,
    "NG208": reserved_memory_total, "NG210": remove_gate_kept_on,
}
