"""What a node holds right now: the pods bound to it admitted one after another, as its
kubelet admitted them (oldest first), and the CPUs that leaves reserved, exclusive to a pod,
in a pod's shared pool (KEP-5526) or free (the node's shared pool).

`numaguard audit` builds one per node of the pool from the live pods; `numaguard simulate
--format html` from the pods it plays out. The HTML report draws them (numaguard.lint.report.html),
grouped by `pool` (None: the one pool of the run).

"Stranded" CPUs (`stranded_cpus`) are free CPUs no pinned pod of the pool fits in any more: the
smallest pod holding CPUs of its own (exclusive or its KEP-5526 shared pool) needs that many
CPUs on one NUMA node under the single-numa-node and restricted Topology Manager policies (a
pod that fits one NUMA node gets no other preferred hint), anywhere on the node under
best-effort and none. CPUs only; memory and devices are judged by the simulator and NG302.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterable, Mapping

from numaguard.lint.numa.admission import NodeState, admit
from numaguard.lint.numa.topology import Topology


@dataclass(frozen=True)
class PodOutcome:
    label: str                     # namespace/name
    admitted: bool
    reason: str | None
    numa_nodes: tuple[int, ...]
    exclusive: tuple[int, ...]     # CPUs its containers hold exclusively
    shared: tuple[int, ...]        # its KEP-5526 pod shared pool


@dataclass(frozen=True)
class ResidentMemory:
    """Where a container's memory actually is (`node inspect --processes`, /proc/PID/numa_maps)."""

    label: str                     # "namespace/pod container"
    by_numa: dict[int, int]        # NUMA id -> resident bytes, hugepages included
    home: tuple[int, ...]          # the NUMA nodes it belongs on; empty: not pinned


@dataclass
class NodeOccupancy:
    name: str
    topology: Topology
    reserved: frozenset[int]
    policy: str                                  # e.g. "static / Static / single-numa-node / pod"
    pods: list[PodOutcome] = field(default_factory=list)
    free_memory: dict[int, int] = field(default_factory=dict)      # NUMA id -> bytes pinnable
    notes: list[str] = field(default_factory=list)
    pool: str | None = None                      # the pool the node belongs to (None: the run's one pool)
    topology_policy: str = "none"
    # pods bound here that the kubelet rejected at admission (Failed): (namespace/name, reason)
    kubelet_rejected: list[tuple[str, str]] = field(default_factory=list)
    resident: list[ResidentMemory] = field(default_factory=list)   # measured on the node, when known

    @property
    def exclusive(self) -> dict[int, str]:
        """CPU id -> the pod holding it exclusively."""
        return {cpu: p.label for p in self.pods if p.admitted for cpu in p.exclusive}

    @property
    def pod_shared(self) -> dict[int, str]:
        """CPU id -> the pod whose shared pool it is in."""
        return {cpu: p.label for p in self.pods if p.admitted for cpu in p.shared}

    @property
    def rejected(self) -> list[PodOutcome]:
        return [p for p in self.pods if not p.admitted]

    def free_cpus_by_numa(self) -> dict[int, int]:
        return self._per_numa(self._held() | self.reserved, counted=False)

    def used_cpus_by_numa(self) -> dict[int, int]:
        """CPUs held by pods (exclusive or a pod's shared pool) per NUMA node."""
        return self._per_numa(self._held(), counted=True)

    def _held(self) -> set[int]:
        return set(self.exclusive) | set(self.pod_shared)

    def _per_numa(self, cpus: set[int], *, counted: bool) -> dict[int, int]:
        """Per NUMA node, how many CPUs are in `cpus` (`counted`) or not."""
        out = {n: 0 for n in self.topology.numa_ids}
        for cpu in self.topology.cpus:
            if (cpu.id in cpus) == counted:
                out[cpu.numa] += 1
        return out

    def pinned_sizes(self) -> list[int]:
        """How many CPUs each admitted pod holds of its own (exclusive and pod-shared)."""
        return [len(p.exclusive) + len(p.shared) for p in self.pods if p.admitted and (p.exclusive or p.shared)]


def stranded_cpus(occ: NodeOccupancy, smallest: int | None) -> int | None:
    """Free CPUs of `occ` in which no pod of `smallest` CPUs fits (see the module docstring);
    None when there is nothing to measure against (no pinned pod, no static CPU Manager)."""
    if not smallest or occ.policy.startswith("cpu none"):
        return None
    free = occ.free_cpus_by_numa()
    if occ.topology_policy in ("single-numa-node", "restricted"):
        return sum(n for n in free.values() if n < smallest)
    total = sum(free.values())
    return total if total < smallest else 0


def occupy(state: NodeState, pods: Iterable[tuple[str, Mapping]], *,
           notes: Iterable[str] = (), analyses: dict | None = None) -> NodeOccupancy:
    """Admit `pods` ((label, Pod or pod spec) pairs, in admission order) on `state`.

    `analyses`, a dict the caller keeps across nodes, shares one PodAnalysis between pods
    whose specs are equal but for spec.nodeName (the replicas of a controller)."""
    outcomes = [outcome_of(label, admit(state, pod, label, analysis=_analysis(pod, analyses)))
                for label, pod in pods]
    cpu_policy = "static" if state.cpu is not None else "none"
    memory_policy = "Static" if state.memory is not None else "None"
    policy = f"cpu {cpu_policy}, memory {memory_policy}, topology {state.policy_name} scope {state.pinned_scope}"
    free_memory = {n: v.get("memory", 0) for n, v in state.free_memory_by_numa().items()}
    return NodeOccupancy(name=state.name, topology=state.topology, reserved=state.reserved_cpus,
                         policy=policy, pods=outcomes, free_memory=free_memory, notes=list(notes),
                         topology_policy=state.policy_name)


def outcome_of(label: str, placement) -> PodOutcome:
    """What the node's drawing needs of one admission (a numaguard.lint.numa.admission.Placement)."""
    exclusive: set[int] = set()
    for ids in placement.cpus["exclusive"].values():
        exclusive |= set(ids)
    shared = (set(placement.cpus["podShared"]) | set(placement.bubble)) - exclusive
    return PodOutcome(label=label, admitted=placement.admitted, reason=placement.reason,
                      numa_nodes=tuple(placement.numa_nodes), exclusive=tuple(sorted(exclusive)),
                      shared=tuple(sorted(shared)))


def _analysis(pod: Mapping, analyses: dict | None):
    if analyses is None:
        return None
    import json

    from numaguard.lint.k8s.pod_budget import PodAnalysis
    from numaguard.lint.numa.admission import pod_spec_of

    spec = pod_spec_of(pod)
    key = json.dumps({k: v for k, v in spec.items() if k != "nodeName"}, sort_keys=True, default=str)
    found = analyses.get(key)
    if found is None:
        found = analyses[key] = PodAnalysis(spec)
    return found


def capacity_topology(cpus: int, memory: int):
    """A machine known only from its Node's capacity: one socket, one NUMA node, one thread per
    core (the Node object says nothing more; a NodeResourceTopology would)."""
    from numaguard.lint.numa.node_topology import generated_topology
    return generated_topology({"sockets": 1, "coresPerNumaNode": max(cpus, 1), "threadsPerCore": 1,
                               "memoryPerNumaNode": max(memory, 1)}, "capacity")


__all__ = ["NodeOccupancy", "PodOutcome", "outcome_of", "ResidentMemory", "occupy", "capacity_topology", "stranded_cpus"]
