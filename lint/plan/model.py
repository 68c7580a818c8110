"""The plan's inputs and outputs as values: workloads, node pools, the outcome of each replica.

A `Workload` is one pod template of one object with the number of pods it runs at once
(`numaguard.lint.plan.replicas`); a `PoolSpec` is a node pool: its nodes' description (a
`numaguard.lint.numa.node.Node`), labels and taint, and how many nodes it has. A
`LiveNode` is a node read from an audit snapshot, with its pods.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from numaguard.lint.plan.pods import PodShape

PLACED, UNSCHEDULABLE, STUCK, GAVE_UP = "placed", "unschedulable", "stuck", "gave-up"
DEFAULT_MAX_ATTEMPTS = 100


@dataclass(frozen=True)
class Workload:
    """One pod template and how many pods of it the plan places."""

    name: str                        # "Deployment default/web" (+ " <template path>")
    kind: str
    namespace: str
    object_name: str
    shape: PodShape
    replicas: int
    per_node: bool = False           # a DaemonSet: one pod on every node that takes it
    source: str = ""                 # where the count comes from ("spec.replicas 3")
    where: str = ""                  # file:line
    rollout: tuple[str, str] | None = None     # (maxSurge, maxUnavailable) as written
    group: str = ""                  # API group

    def pod_name(self, index: int) -> str:
        return f"{self.namespace}/{self.object_name}-{index}"


@dataclass(frozen=True)
class PoolSpec:
    name: str
    node: Any                         # numaguard.lint.numa.node.Node
    count: int
    labels: dict[str, str] = field(default_factory=dict)
    taints: tuple[dict, ...] = ()


@dataclass(frozen=True)
class LivePod:
    """A pod running on a node of the snapshot (bound, not finished), oldest first."""

    name: str                          # namespace/name
    namespace: str
    labels: dict[str, str]
    spec: dict
    owner: str = ""                    # its controller, "ReplicaSet default/web-5c9d"; "" for a bare pod


@dataclass(frozen=True)
class LiveNode:
    name: str
    pool: str | None
    labels: dict[str, str]
    taints: tuple[dict, ...]
    unschedulable: bool
    allocatable: dict[str, int]
    topology: Any                      # numaguard.lint.numa.topology.Topology
    kubelet_config: dict | None
    pods: tuple[LivePod, ...] = ()
    notes: tuple[str, ...] = ()


@dataclass
class Attempt:
    node: str
    reason: str
    message: str


@dataclass
class ReplicaOutcome:
    """What became of one replica: where it landed (or why not) and the kubelet rejections of
    it and its replacements on the way."""

    pod: str
    status: str                        # placed, unschedulable, stuck, gave-up
    node: str | None = None
    rejections: list[Attempt] = field(default_factory=list)
    message: str = ""

    def as_dict(self) -> dict:
        return {"pod": self.pod, "status": self.status, "node": self.node,
                "rejections": [{"node": a.node, "reason": a.reason, "message": a.message}
                               for a in self.rejections],
                "message": self.message or None}


__all__ = ["Workload", "PoolSpec", "LiveNode", "LivePod", "ReplicaOutcome", "Attempt", "PLACED",
           "UNSCHEDULABLE", "STUCK", "GAVE_UP", "DEFAULT_MAX_ATTEMPTS"]
