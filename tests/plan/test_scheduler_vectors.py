"""The default scheduler's scores against kube-scheduler's own test tables, case by case.

Origins (kubernetes/kubernetes, the case names are the tables'):
* pkg/scheduler/framework/plugins/noderesources/least_allocated_test.go @8519d33
  TestLeastAllocatedScoringStrategy;
* pkg/scheduler/framework/plugins/noderesources/balanced_allocation_test.go @00fdb4f
  TestNodeResourcesBalancedAllocation.
The tables build pods with st.MakePod().Req(...) (one container per Req, requests only) and
nodes with capacity = allocatable; "cpu": "4000" is 4000 CPUs. Cases the plan cannot meet
(DRA extended resources, a configuration error) are left out.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import pytest

from numaguard.lint.plan import balanced, fit
from numaguard.lint.plan.pods import PodShape, pod_shape


def pod(*containers: dict) -> PodShape:
    """st.MakePod().Req(c1).Req(c2)...: one container per request list, requests only."""
    return pod_shape({"containers": [{"name": f"c{i}", "resources": {"requests": dict(c)}}
                                     for i, c in enumerate(containers)]})


@dataclass
class Node:
    """What NodeInfo holds: allocatable, and the requests of the pods on it."""
    allocatable: dict
    requested: dict = field(default_factory=dict)
    non_zero: list = field(default_factory=lambda: [0, 0])
    pod_count: int = 0


def node(cpu: str, memory: str, *existing: PodShape, extra: dict | None = None) -> Node:
    out = Node({"cpu": int(cpu) * 1000, "memory": int(memory), "pods": 110,
                **{k: int(v) for k, v in (extra or {}).items()}})
    for shape in existing:
        for name, value in shape.requests.items():
            out.requested[name] = out.requested.get(name, 0) + value
        out.non_zero[0] += shape.non_zero[0]
        out.non_zero[1] += shape.non_zero[1]
        out.pod_count += 1
    return out


TWO_CONTAINERS = pod({"cpu": "1000", "memory": "2000"}, {"cpu": "2000", "memory": "3000"})
EMPTY = pod()
CPU_3000 = pod({"cpu": "3000", "memory": "0"})
CPU_3000_MEM_5000 = pod({"cpu": "3000", "memory": "5000"})
EXTENDED = "example.com/extended"      # an extended resource, as the table's extendedRes
EXTENDED_SET = (("cpu", 1), ("memory", 1), (EXTENDED, 1))

LEAST_ALLOCATED = [
    ("nothing scheduled, nothing requested", EMPTY,
     [node("4000", "10000"), node("4000", "10000")], [100, 100], fit.DEFAULT_RESOURCES),
    ("nothing scheduled, resources requested, differently sized nodes", TWO_CONTAINERS,
     [node("4000", "10000"), node("6000", "10000")], [37, 50], fit.DEFAULT_RESOURCES),
    ("no resources requested, pods scheduled", EMPTY,
     [node("4000", "10000", EMPTY, EMPTY), node("4000", "10000", EMPTY, EMPTY)], [100, 100], fit.DEFAULT_RESOURCES),
    ("no resources requested, pods scheduled with resources", EMPTY,
     [node("10000", "20000", CPU_3000, CPU_3000), node("10000", "20000", CPU_3000, CPU_3000_MEM_5000)],
     [70, 57], fit.DEFAULT_RESOURCES),
    ("resources requested, pods scheduled with resources", TWO_CONTAINERS,
     [node("10000", "20000", CPU_3000), node("10000", "20000", CPU_3000_MEM_5000)], [57, 45], fit.DEFAULT_RESOURCES),
    ("resources requested, pods scheduled with resources, differently sized nodes", TWO_CONTAINERS,
     [node("10000", "20000", CPU_3000), node("10000", "50000", CPU_3000_MEM_5000)], [57, 60], fit.DEFAULT_RESOURCES),
    ("requested resources exceed node capacity", CPU_3000,
     [node("4000", "10000", CPU_3000), node("4000", "10000", CPU_3000_MEM_5000)], [50, 25], fit.DEFAULT_RESOURCES),
    ("zero node resources, pods scheduled with resources", EMPTY,
     [node("0", "0", CPU_3000), node("0", "0", CPU_3000_MEM_5000)], [0, 0], fit.DEFAULT_RESOURCES),
    ("nothing scheduled, resources requested with different weight on CPU and memory, differently sized nodes",
     TWO_CONTAINERS, [node("4000", "10000"), node("6000", "10000")], [41, 50], (("memory", 2), ("cpu", 1))),
    ("bypass extended resource if the pod does not request", TWO_CONTAINERS,
     [node("6000", "10000"), node("6000", "10000", extra={EXTENDED: "4"})], [50, 50], EXTENDED_SET),
    ("honor extended resource if the pod requests", pod({"cpu": "3000", "memory": "5000", EXTENDED: "2"}),
     [node("6000", "10000", extra={EXTENDED: "4"}), node("6000", "10000", extra={EXTENDED: "10"})], [50, 60],
     EXTENDED_SET),
    ("if the node doesn't have a resource", pod({"cpu": "3000", "memory": "4000"}),
     [node("6000", "10000"), node("6000", "10000", extra={EXTENDED: "4"})], [55, 55],
     ((EXTENDED, 2), ("cpu", 1), ("memory", 1))),
]


@pytest.mark.parametrize("case", LEAST_ALLOCATED, ids=[c[0] for c in LEAST_ALLOCATED])
def test_least_allocated(case):
    _name, shape, nodes, expected, resources = case
    assert [fit.least_allocated(shape, n, resources) for n in nodes] == expected


CPU_ONLY = pod({"cpu": "1000m", "memory": "0"}, {"cpu": "2000m", "memory": "0"})
CPU_AND_MEMORY = pod({"cpu": "1000m", "memory": "2000"}, {"cpu": "2000m", "memory": "3000"})
CPU_MEMORY_GPU = pod({"cpu": "1000m", "memory": "2000"}, {"cpu": "2000m", "memory": "3000", "nvidia.com/gpu": "3"})
GPU_SET = (("cpu", 1), ("memory", 1), ("nvidia.com/gpu", 1))


def small(cpu: str, memory: str, *existing, gpu: str | None = None) -> Node:
    """balanced_allocation_test.go makeNode: cpu in millicores this time."""
    out = node("0", memory, *existing)
    out.allocatable["cpu"] = int(cpu)
    if gpu is not None:
        out.allocatable["nvidia.com/gpu"] = int(gpu)
    return out


BALANCED = [
    ("nothing scheduled, resources requested, differently sized nodes", CPU_AND_MEMORY,
     [small("4000", "10000"), small("6000", "10000")], [87, 100], balanced.DEFAULT_RESOURCES),
    ("resources requested, pods scheduled with resources", CPU_AND_MEMORY,
     [small("10000", "20000", CPU_ONLY), small("10000", "20000", CPU_AND_MEMORY)], [82, 95], balanced.DEFAULT_RESOURCES),
    ("resources requested, pods scheduled with resources, differently sized nodes", CPU_AND_MEMORY,
     [small("10000", "20000", CPU_ONLY), small("10000", "50000", CPU_AND_MEMORY)], [82, 80], balanced.DEFAULT_RESOURCES),
    ("requested resources at node capacity", CPU_ONLY,
     [small("6000", "10000", CPU_ONLY), small("6000", "10000", CPU_AND_MEMORY)], [50, 75], balanced.DEFAULT_RESOURCES),
    ("include scalar resource on a node for balanced resource allocation", pod({"memory": "0", "nvidia.com/gpu": "1"}),
     [small("3500", "40000", CPU_MEMORY_GPU, gpu="8"), small("3500", "40000", CPU_AND_MEMORY, gpu="8")], [70, 65],
     GPU_SET),
    ("node without the scalar resource should skip the scalar resource", CPU_AND_MEMORY,
     [small("3500", "40000", gpu="8"), small("3500", "40000")], [63, 63], GPU_SET),
]


@pytest.mark.parametrize("case", BALANCED, ids=[c[0] for c in BALANCED])
def test_balanced_allocation(case):
    _name, shape, nodes, expected, resources = case
    assert not balanced.skipped(shape, resources)
    assert [balanced.balanced_allocation(shape, n, resources) for n in nodes] == expected


def test_balanced_allocation_skips_best_effort_pods():
    """"nothing scheduled, nothing requested, skip in PreScore" (fwk.Skip)."""
    assert balanced.skipped(pod())
    assert balanced.skipped(pod({"cpu": "0", "memory": "0"}))


def test_fit_filter_reasons_in_fits_request_order():
    """fit.go fitsRequest: "Too many pods" first, then each resource that does not fit."""
    full = Node({"cpu": 1000, "memory": 1000, "pods": 1}, {"cpu": 900, "memory": 100}, pod_count=1)
    assert fit.insufficient(pod({"cpu": "200m", "memory": "2000"}), full) == [
        "Too many pods", "Insufficient cpu", "Insufficient memory"]
    assert fit.insufficient(pod(), full) == ["Too many pods"]     # a pod requesting nothing
    roomy = Node({"cpu": 1000, "memory": 1000, "pods": 5}, {"cpu": 800})
    assert fit.insufficient(pod({"cpu": "200m"}), roomy) == []
    assert fit.insufficient(pod({"cpu": "201m"}), roomy) == ["Insufficient cpu"]
    assert fit.insufficient(pod({"example.com/foo": "1"}), roomy) == ["Insufficient example.com/foo"]
