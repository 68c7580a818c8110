"""The pods a node runs, admitted again by the simulator on an empty copy of the node.

In the order the kubelet lists them (PodResources), from their manifests (`--pods`) or, without
them, from what each pod holds: a Guaranteed container per container with exclusive CPUs, sized
by its CPU count and its memory. Exact CPU ids may legitimately differ from the simulator's
(admission order, restarts), so the verdict compares the number of CPUs and their NUMA nodes.
"""
from __future__ import annotations

from typing import Any

from numaguard.lint.node.matching import AGREES, DIFFERS, REJECTED, SKIPPED, Verdict
from numaguard.lint.node.podresources_client import PodResourcesSnapshot


def numa_of(topology: Any, cpus) -> tuple[int, ...]:
    if topology is None:
        return ()
    by_id = topology.cpu_by_id
    return tuple(sorted({by_id[c].numa for c in cpus if c in by_id}))


def synthetic_pod(pod) -> dict | None:
    """A Guaranteed pod with one container per container that holds exclusive CPUs, sized by
    what it holds (memory: the memory it was given, else 64Mi)."""
    containers = []
    for c in pod.containers:
        if not c.cpu_ids:
            continue
        memory = sum(m.size for m in c.memory if m.memory_type == "memory") or 64 * 2**20
        resources = {"cpu": str(len(c.cpu_ids)), "memory": str(memory)}
        for m in c.memory:
            if m.memory_type.startswith("hugepages-"):
                resources[m.memory_type] = str(m.size)
        containers.append({"name": c.name, "image": "replay",
                           "resources": {"requests": dict(resources), "limits": dict(resources)}})
    if not containers:
        return None
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": pod.name, "namespace": pod.namespace},
            "spec": {"containers": containers}}


def replay(node: Any, kc: dict | None, snapshot: PodResourcesSnapshot, manifests: dict) -> tuple[dict, str | None]:
    """(namespace, pod) -> Placement for each replayed pod, or a reason nothing was simulated."""
    from numaguard.lint.numa.admission import KubeletStartupError, NodeState, admit

    if node is None:
        return {}, "no node description (sysfs unreadable)"
    if kc is None:
        return {}, "no kubelet configuration"
    try:
        state = NodeState.from_node(node, kc)
    except KubeletStartupError as exc:
        return {}, f"the kubelet configuration would not start: {exc}"
    out = {}
    for pod in snapshot.pods:
        key = (pod.namespace, pod.name)
        manifest = manifests.get(key) or synthetic_pod(pod)
        if manifest is not None:
            out[key] = admit(state, manifest, f"{pod.namespace}/{pod.name}")
    return out, None


def simulation_verdict(placement, container: str, cpus: frozenset[int], topology: Any,
                       skipped: str | None) -> tuple[Verdict, frozenset[int] | None, tuple[int, ...] | None]:
    """(verdict, the simulator's CPUs, their NUMA nodes) for one container."""
    if skipped:
        return Verdict(SKIPPED, skipped), None, None
    if placement is None:
        return (Verdict(AGREES) if not cpus else Verdict(SKIPPED, "no exclusive CPUs in the replay")), None, None
    if not placement.admitted:
        return Verdict(REJECTED, placement.reason or ""), None, None
    sim = frozenset(placement.cpus["exclusive"].get(container, ()))
    sim_numa = numa_of(topology, sim)
    if len(sim) != len(cpus):
        return Verdict(DIFFERS, f"{len(cpus)} exclusive CPUs, the simulator gives {len(sim)}"), sim, sim_numa
    if sim_numa != numa_of(topology, cpus):
        return (Verdict(DIFFERS, f"NUMA {','.join(map(str, numa_of(topology, cpus))) or '-'}, the simulator places "
                                 f"it on NUMA {','.join(map(str, sim_numa)) or '-'}"), sim, sim_numa)
    return Verdict(AGREES), sim, sim_numa
