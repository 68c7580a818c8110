"""NodeResourcesFit: the filter (does the node's allocatable hold the pod's requests beside what
its pods request?) and the default scoring strategy, LeastAllocated.

kubernetes/kubernetes pkg/scheduler/framework/plugins/noderesources:
* fit.go (fitsRequest; read at 903b1f7 and, for the pod-level requests, resource_allocation.go
  in the fwk.NodeInfo API): "Too many pods" when the node holds allocatable pods already;
  nothing else is checked for a pod that requests nothing; then cpu, memory and each scalar
  resource (hugepages, device plugins) against allocatable minus the requests of the node's
  pods ("Insufficient <resource>"). A scalar resource the node does not list is allocatable 0.
* least_allocated.go (leastResourceScorer, leastRequestedScore; 05c351a) with
  resource_allocation.go (calculateResourceAllocatableRequest): per resource of the strategy
  (default cpu and memory, weight 1 each, pkg/scheduler/apis/config/v1/defaults.go),
  (allocatable - requested) * 100 / allocatable in integer arithmetic, 0 when the request
  exceeds allocatable, resources whose allocatable is 0 left out; the weighted mean, rounded
  down. `requested` is the node's NonZeroRequested plus the pod's non-zero request
  (`PodShape.non_zero`).

The node is anything with `allocatable` (cpu millicores, memory, pods, scalars), `requested`
(the pods' requests, same keys), `non_zero` ((cpu, memory) NonZeroRequested) and `pod_count`.
"""
from __future__ import annotations

from typing import Any

from numaguard.lint.plan.pods import CPU, MEMORY, PodShape

MAX_NODE_SCORE = 100                       # framework.MaxNodeScore
DEFAULT_RESOURCES = ((CPU, 1), (MEMORY, 1))


def insufficient(shape: PodShape, node: Any) -> list[str]:
    """fitsRequest's failure reasons, in its order; empty when the pod fits."""
    reasons = []
    if node.pod_count + 1 > node.allocatable.get("pods", 0):
        reasons.append("Too many pods")
    if not shape.requests:
        return reasons
    for name, need in shape.requests.items():
        if need and node.allocatable.get(name, 0) < need + node.requested.get(name, 0):
            reasons.append(f"Insufficient {name}")
    return reasons


def least_requested_score(requested: int, capacity: int) -> int:
    if capacity == 0 or requested > capacity:
        return 0
    return (capacity - requested) * MAX_NODE_SCORE // capacity


def least_allocated(shape: PodShape, node: Any, resources=DEFAULT_RESOURCES) -> int:
    """The LeastAllocated score of `node` for the pod (0-100)."""
    score = weights = 0
    for name, weight in resources:
        allocatable, requested = _allocatable_requested(shape, node, name)
        if allocatable == 0:
            continue
        score += least_requested_score(requested, allocatable) * weight
        weights += weight
    return score // weights if weights else 0


def _allocatable_requested(shape: PodShape, node: Any, name: str) -> tuple[int, int]:
    """calculateResourceAllocatableRequest with useRequested false: cpu and memory from the
    NonZeroRequested counts; an extended resource the pod does not request is left out."""
    if name == CPU:
        return node.allocatable.get(CPU, 0), node.non_zero[0] + shape.non_zero[0]
    if name == MEMORY:
        return node.allocatable.get(MEMORY, 0), node.non_zero[1] + shape.non_zero[1]
    need = shape.requests.get(name, 0)
    if not need or name not in node.allocatable:
        return 0, 0
    return node.allocatable[name], node.requested.get(name, 0) + need


__all__ = ["insufficient", "least_allocated", "least_requested_score", "MAX_NODE_SCORE",
           "DEFAULT_RESOURCES"]
