"""NodeResourcesBalancedAllocation: prefer the node whose cpu and memory would be used in the
most equal shares.

kubernetes/kubernetes@02d7708 pkg/scheduler/framework/plugins/noderesources/balanced_allocation.go:
PreScore skips the plugin for a pod that requests none of its resources (a BestEffort pod,
kubernetes/kubernetes#129138); Score takes, per resource (default cpu and memory), the fraction
(node's requests + the pod's) / allocatable, capped at 1, leaving out resources whose
allocatable is 0; with two fractions the standard deviation is |a - b| / 2, with more the
population standard deviation; the score is int((1 - std) * 100). It counts `Requested`, not
the non-zero defaults LeastAllocated uses (useRequested: true).
"""
from __future__ import annotations

import math
from typing import Any

from numaguard.lint.plan.fit import DEFAULT_RESOURCES, MAX_NODE_SCORE
from numaguard.lint.plan.pods import PodShape


def skipped(shape: PodShape, resources=DEFAULT_RESOURCES) -> bool:
    """PreScore's Skip: the pod requests none of the plugin's resources."""
    return not any(shape.requests.get(name, 0) for name, _ in resources)


def balanced_allocation(shape: PodShape, node: Any, resources=DEFAULT_RESOURCES) -> int:
    fractions = []
    for name, _weight in resources:
        allocatable = node.allocatable.get(name, 0)
        need = shape.requests.get(name, 0)
        if allocatable == 0 or (name not in ("cpu", "memory") and not need):
            continue
        fractions.append(min((node.requested.get(name, 0) + need) / allocatable, 1.0))
    std = 0.0
    if len(fractions) == 2:
        std = abs((fractions[0] - fractions[1]) / 2)
    elif len(fractions) > 2:
        mean = sum(fractions) / len(fractions)
        std = math.sqrt(sum((f - mean) ** 2 for f in fractions) / len(fractions))
    return int((1 - std) * MAX_NODE_SCORE)


__all__ = ["balanced_allocation", "skipped"]
