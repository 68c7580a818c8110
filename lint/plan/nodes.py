"""One node of a plan: what the scheduler's NodeInfo holds of it (allocatable, the requests of
its pods, their non-zero requests, their count, who they are), its published
NodeResourceTopology, and its kubelet (`numaguard.lint.numa.admission.NodeState`), which
admits or rejects every pod sent to it, unchanged from `numaguard simulate`.

`admit` is the kubelet's admission; nodes of one template that have admitted the same pods in
the same order hold the same kubelet state, so `Kubelets` keeps each admission's outcome and
the state after it, and a node that reaches that point again copies them instead of playing
the admission again (as `numaguard audit` simulates nodes with the same sequence of pods once).
`evict` gives back what a pod held, as the CPU, Memory and
Device Managers' RemoveContainer do for each of its containers (pkg/kubelet/cm/cpumanager
policy_static.go RemoveContainer, memorymanager policy_static.go RemoveContainer) and as the
scheduler's cache forgets a deleted pod.
"""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from numaguard.lint.numa.admission import NodeState, Placement, admit
from numaguard.lint.plan import nrt
from numaguard.lint.plan.pods import CPU, MEMORY, PodShape


@dataclass
class Resident:
    """A pod on the node: its kubelet id, its name, its workload ("" for a pod that was there
    before the plan), its identity for pod affinity, what the kubelet gave it."""

    uid: str
    label: str
    workload: str
    identity: int
    shape: PodShape
    placement: Placement


@dataclass(frozen=True)
class Rejection:
    label: str
    workload: str
    reason: str
    message: str


class Kubelets:
    """Admissions played so far, shared by the nodes of a plan (and its copies): the history of
    kubelet events a node has seen is a number (`step`), and (template, history, pod shape) ->
    (the placement, the state after it). Bounded: the oldest entries go first."""

    def __init__(self, limit: int = 4096) -> None:
        from collections import OrderedDict

        self.limit = limit
        self.shapes: dict[int, tuple[int, PodShape]] = {}     # id -> (serial, the shape, kept alive)
        self.histories: dict[tuple, int] = {}
        self.outcomes: OrderedDict = OrderedDict()
        self.hits = self.misses = 0

    def serial(self, shape: PodShape) -> int:
        found = self.shapes.get(id(shape))
        if found is None:
            found = self.shapes[id(shape)] = (len(self.shapes), shape)
        return found[0]

    def step(self, history: int, event: tuple) -> int:
        return self.histories.setdefault((history, event), len(self.histories) + 1)

    def get(self, key: tuple):
        found = self.outcomes.get(key)
        if found is not None:
            self.outcomes.move_to_end(key)
            self.hits += 1
        else:
            self.misses += 1
        return found

    def put(self, key: tuple, placement: Placement, after: NodeState | None) -> None:
        self.outcomes[key] = (placement, after)
        if len(self.outcomes) > self.limit:
            self.outcomes.popitem(last=False)


@dataclass(eq=False)
class PlanNode:
    name: str
    pool: str | None
    labels: dict[str, str]
    taints: tuple[dict, ...]
    allocatable: dict[str, int]                 # cpu millicores, memory, pods, hugepages, devices
    state: NodeState
    template: int                               # nodes of one template differ only in name and pods
    unschedulable: bool = False
    notes: list[str] = field(default_factory=list)
    requested: dict[str, int] = field(default_factory=dict)
    non_zero: list[int] = field(default_factory=lambda: [0, 0])
    pod_count: int = 0
    residents: Counter = field(default_factory=Counter)          # identity -> pods
    pods: list[Resident] = field(default_factory=list)
    rejections: list[Rejection] = field(default_factory=list)
    added: bool = False                         # added by the plan (--pool, --nodes-needed), not in the snapshot
    history: int = 0                            # the kubelet events seen (Kubelets.step)
    events: int = 0
    shared: bool = False                        # `state` is also another node's or the cache's:
                                                # copied before it changes (copy on write)
    _topology: Any = None

    def copy(self) -> "PlanNode":
        """An independent copy (the kubelet's state shared until either changes it, the pods'
        records shared)."""
        self.shared = True
        return PlanNode(self.name, self.pool, self.labels, self.taints, self.allocatable, self.state,
                        self.template, self.unschedulable, list(self.notes), dict(self.requested),
                        list(self.non_zero), self.pod_count, Counter(self.residents), list(self.pods),
                        list(self.rejections), self.added, self.history, self.events, True)

    def _own_state(self) -> NodeState:
        """The kubelet state, copied first when it is shared (it is about to change)."""
        if self.shared:
            self.state = self.state.copy()
            self.state.name = self.name
            self.shared = False
        return self.state

    # -- the kubelet ------------------------------------------------------------------------
    def admit(self, shape: PodShape, label: str, workload: str, identity: int, kubelets: Kubelets) -> Placement:
        """The kubelet admits (or rejects) the pod; admitted, the scheduler's view counts it.
        The kubelet knows the pod by the number of the event (`u<n>`), so that nodes with one
        history hold equal states."""
        uid = f"u{self.events}"
        serial = kubelets.serial(shape)
        key = (self.template, self.history, serial)
        found = kubelets.get(key)
        if found is not None:
            placement, after = found
            if placement.admitted:
                self.state, self.shared = after, True
        else:
            placement = admit(self._own_state(), {"spec": shape.spec}, uid, analysis=shape.analysis)
            if placement.admitted:
                kubelets.put(key, placement, self.state)
                self.shared = True
            else:
                kubelets.put(key, placement, None)
        if placement.admitted:
            self.history = kubelets.step(self.history, ("+", serial))
            self.events += 1
            self.account(Resident(uid, label, workload, identity, shape, placement))
        return placement



    def account(self, resident: Resident) -> None:
        """Count a pod bound here in the scheduler's view (NodeInfo.AddPod)."""
        self.pods.append(resident)
        self._count(resident.shape, resident.identity, 1)

    def evict(self, resident: Resident, kubelets: Kubelets) -> None:
        """The pod is deleted: the kubelet's managers give back what it held, the scheduler
        forgets its requests."""
        self.pods.remove(resident)
        self._count(resident.shape, resident.identity, -1)
        if resident.placement.admitted:
            release(self._own_state(), resident.uid, resident.placement, resident.shape)
            self.history = kubelets.step(self.history, ("-", resident.uid))
            self.events += 1

    def _count(self, shape: PodShape, identity: int, sign: int) -> None:
        for name, value in shape.requests.items():
            self.requested[name] = self.requested.get(name, 0) + sign * value
        self.non_zero[0] += sign * shape.non_zero[0]
        self.non_zero[1] += sign * shape.non_zero[1]
        self.pod_count += sign
        self.residents[identity] += sign
        if not self.residents[identity]:
            del self.residents[identity]
        self._topology = None

    # -- what the scheduler reads -----------------------------------------------------------
    @property
    def free_cpu(self) -> int:
        return self.allocatable.get(CPU, 0) - self.requested.get(CPU, 0)

    def usage_key(self) -> tuple:
        return (tuple(sorted(self.requested.items())), tuple(self.non_zero), self.pod_count)

    def topology(self) -> nrt.NodeTopology:
        """The NodeResourceTopology an up-to-date exporter publishes for the node."""
        if self._topology is None:
            state = self.state
            devices = state.devices.free if state.devices is not None else {}
            self._topology = nrt.topology_of(state.policy_name, state.pinned_scope, state.free_cpus_by_numa(),
                                             state.free_memory_by_numa(), devices, state.topology.distances,
                                             self.allocatable)
        return self._topology

    def free_by_numa(self) -> dict[int, dict[str, int]]:
        """CPUs free for exclusive use and pinnable bytes left, per NUMA node."""
        cpus = self.state.free_cpus_by_numa()
        memory = self.state.free_memory_by_numa()
        return {n: {"cpus": cpus.get(n, 0), **memory.get(n, {})} for n in sorted(cpus)}


def release(state: NodeState, uid: str, placement: Placement, shape: PodShape) -> None:
    """Give back what an admitted pod holds on `state` (RemoveContainer for each container)
    and what the kubelet's admit handler counted for it."""
    from numaguard.lint.numa.admission import pod_requests
    from numaguard.lint.numa.devices import pod_device_requests

    if state.cpu is not None:
        held = set(placement.taken_cpus()).union(*state.cpu.assignments.get(uid, {}).values())
        state.cpu.assignments.pop(uid, None)
        state.cpu.default_cpus = state.cpu.default_cpus | frozenset(held)
    if state.memory is not None:
        for container in list(state.memory.assignments.get(uid, {})):
            state.memory.remove_container(uid, container)
    if state.devices is not None:
        for per_container in state.devices.held.pop(uid, {}).values():
            for resource, counts in per_container.items():
                for numa, n in counts.items():
                    state.devices.free[resource][numa] = state.devices.free[resource].get(numa, 0) + n
        state.devices.reusable.pop(uid, None)
    need = pod_requests(shape.spec, shape.analysis)
    need["pods"] = 1
    if state.devices is not None:
        need.update(pod_device_requests(shape.spec))
    state.placements.pop(uid, None)
    for name, value in need.items():
        if name in state.used:
            state.used[name] = max(state.used[name] - value, 0)


def scheduler_allocatable(state: NodeState) -> dict[str, int]:
    """What the Node object's status.allocatable would say of a node the simulator built:
    cpu, memory and pods as the kubelet computes them, hugepages and devices in full."""
    out = {CPU: state.allocatable["cpu"], MEMORY: state.allocatable["memory"], "pods": state.allocatable["pods"]}
    from numaguard.lint.numa.memory import hugepage_resource_name
    for node in state.topology.numa_nodes:
        for size, pages in node.hugepages.items():
            name = hugepage_resource_name(size)
            out[name] = out.get(name, 0) + size * pages
    for resource, per in state.topology.devices.items():
        out[resource] = sum(per.values())
    return out


__all__ = ["PlanNode", "Kubelets", "Resident", "Rejection", "release", "scheduler_allocatable"]
