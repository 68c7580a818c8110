"""How many copies of a pod fit on an empty node, and what is stranded once they do.

Copies are admitted one after another on a fresh `NodeState` (each sees what the earlier ones
took, as replicas landing on one node would) until the kubelet rejects one. What is still
free on each NUMA node at that point is "stranded" for this pod shape: the CPUs available for
exclusive use and the bytes the Memory Manager could still pin.

`significant` answers "would the scheduler still send a copy here and the kubelet reject
it?": the node's leftovers, counted node-wide the way the scheduler counts them (allocatable
cpu and memory minus requests, pods), still hold one more copy, yet the kubelet refused it for
a NUMA reason (TopologyAffinityError, SMTAlignmentError, a memory manager error) rather than
an OutOf<resource> verdict. That is the threshold rule NG302 uses.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping

from numaguard.lint.numa.admission import NodeState, Placement, admit, build_state

DEFAULT_MAX_COPIES = 1024      # a guard; maxPods (110 by default) normally stops earlier


@dataclass
class Capacity:
    """The outcome of filling one empty node with copies of a pod."""

    copies: int
    limited_by: Placement | None                  # the first rejected copy (None: hit the guard)
    stranded_cpus: dict[int, int] = field(default_factory=dict)
    stranded_memory: dict[int, dict[str, int]] = field(default_factory=dict)
    scheduler_would_place_more: bool = False       # node-wide leftovers hold one more copy
    stranded_devices: dict[str, dict[int, int]] = field(default_factory=dict)   # resource -> NUMA

    @property
    def significant(self) -> bool:
        """Stranded capacity worth a warning (see the module docstring)."""
        return (self.limited_by is not None and self.scheduler_would_place_more
                and not (self.limited_by.reason or "").startswith("OutOf"))

    def as_dict(self) -> dict:
        return {"copies": self.copies,
                "limitedBy": None if self.limited_by is None else
                {"reason": self.limited_by.reason, "message": self.limited_by.message},
                "stranded": {str(n): {"cpus": self.stranded_cpus.get(n, 0),
                                      **self.stranded_memory.get(n, {})}
                             for n in sorted(set(self.stranded_cpus) | set(self.stranded_memory))},
                **({"strandedDevices": {r: {str(n): c for n, c in sorted(per.items())}
                                        for r, per in sorted(self.stranded_devices.items())}}
                   if self.stranded_devices else {}),
                "significant": self.significant}


def pod_capacity(node: Any, pod: Mapping, *, kubelet_config: dict | None = None,
                 max_copies: int = DEFAULT_MAX_COPIES, analysis: Any = None) -> Capacity:
    """Fill an empty copy of `node` (a numaguard.lint.numa.node.Node, or a NodeState to copy the
    configuration from) with copies of `pod` until one is rejected. `analysis`: the pod spec's
    PodAnalysis when the caller has it (every copy shares it)."""
    from numaguard.lint.k8s.pod_budget import PodAnalysis
    from numaguard.lint.numa.admission import pod_spec_of
    state = _fresh(node, kubelet_config)
    analysis = analysis if analysis is not None else PodAnalysis(pod_spec_of(pod))
    copies = 0
    rejected: Placement | None = None
    while copies < max_copies:
        placement = admit(state, pod, f"copy-{copies}", analysis=analysis)
        if not placement.admitted:
            rejected = placement
            break
        copies += 1
    devices = {r: dict(per) for r, per in state.devices.free.items()} \
        if state.devices is not None else {}
    return Capacity(copies, rejected, state.free_cpus_by_numa(), state.free_memory_by_numa(),
                    _scheduler_fits_one_more(state, pod, analysis), devices)


def _fresh(node: Any, kubelet_config: dict | None) -> NodeState:
    if isinstance(node, NodeState):
        if node.holds_nothing and kubelet_config in (None, node.kubelet_config):
            return node.copy()          # an empty state: copying is ~10x cheaper than building
        return build_state(node.topology, kubelet_config or node.kubelet_config, name=node.name)
    return NodeState.from_node(node, kubelet_config)


def _scheduler_fits_one_more(state: NodeState, pod: Mapping, analysis: Any) -> bool:
    """NodeResourcesFit as the scheduler sees the node: allocatable minus requests."""
    from numaguard.lint.numa.admission import pod_requests, pod_spec_of
    spec = pod_spec_of(pod)
    need = pod_requests(spec, analysis)
    need["pods"] = 1
    if state.devices is not None:
        from numaguard.lint.numa.devices import pod_device_requests
        for resource, count in pod_device_requests(spec).items():
            need[resource] = count
            if state.used.get(resource, 0) + count > state.devices.capacity(resource):
                return False
        need = {r: n for r, n in need.items() if r in ("pods", "cpu", "memory")}
    return all(state.used[r] + need[r] <= state.allocatable[r] for r in need)


__all__ = ["Capacity", "pod_capacity", "DEFAULT_MAX_COPIES"]
