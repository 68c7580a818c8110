"""The NodeResourceTopologyMatch plugin's filter and score against its own test tables.

Origins (kubernetes-sigs/scheduler-plugins@903da7d pkg/noderesourcetopology, case names are
the tables'):
* filter_test.go TestNodeResourceTopology: the five NodeResourceTopologies (node1 to extended)
  and the cases that do not need the plugin's cache or preemption;
* score_test.go TestNodeResourceScorePlugin (defaultNUMANodes, single-numa-node container
  scope) and TestNodeResourceScorePluginLeastNUMA (defaultNUMANodes with a best-effort policy,
  fourNUMANodes with costs).
As the tables do, a node's allocatable is the sum of its zones' `available`
(objects.go makeResourceListFromZones) plus node-level extras; pods are made by
makePodByResourceList (one container, requests = limits), makePodWithReqByResourceList
(requests only), makePodWithReqAndLimitByResourceList, makePodByResourceLists (one container
per list) and makePodByResourceListWithManyContainers.
"""
from __future__ import annotations

import pytest

from numaguard.lint.k8s.quantity import parse_quantity
from numaguard.lint.plan import nrt
from numaguard.lint.plan.pods import pod_shape, to_int

NIC, NIC_NO_NUMA, EXTENDED, NOT_EXISTING = "vendor/nic1", "vendor.com/old-nic-model", "namespace/extended", \
    "vendor/notexistingnic"


def zone(name: str, costs: dict | None = None, **available: str) -> dict:
    resources = [{"name": k.replace("__", "/").replace("_", "-"), "capacity": v, "available": v}
                 for k, v in available.items()]
    out = {"name": name, "type": "Node", "resources": resources}
    if costs:
        out["costs"] = [{"name": k, "value": v} for k, v in costs.items()]
    return out


def topology(obj: dict, **node_extra: str) -> nrt.NodeTopology:
    allocatable: dict[str, int] = {}
    for z in obj["zones"]:
        for res in z["resources"]:
            allocatable[res["name"]] = allocatable.get(res["name"], 0) + to_int(res["name"], parse_quantity(res["available"]))
    for name, value in node_extra.items():
        allocatable[name] = to_int(name, parse_quantity(value))
    return nrt.topology_from_object(obj, allocatable)


def guaranteed(*containers: dict):
    """makePodByResourceList(s): requests = limits, one container per list."""
    return pod_shape({"containers": [{"name": f"c{i}", "resources": {"requests": c, "limits": c}}
                                     for i, c in enumerate(containers)]})


def requests_only(c: dict):
    return pod_shape({"containers": [{"name": "c", "resources": {"requests": c}}]})


def req_and_limit(req: dict, lim: dict):
    return pod_shape({"containers": [{"name": "c", "resources": {"requests": req, "limits": lim}}]})


# -- filter_test.go TestNodeResourceTopology ------------------------------------------------------

def _nic(**kw):
    return {k.replace("__", "/").replace("_", "-"): v for k, v in kw.items()}


NODE1 = topology({"topologyPolicies": ["SingleNUMANodeContainerLevel"], "zones": [
    zone("node-0", cpu="4", memory="8Gi", vendor__nic1="10"),
    zone("node-1", cpu="8", memory="8Gi", vendor__nic1="10")]})
NODE2 = topology({"topologyPolicies": ["SingleNUMANodeContainerLevel"], "zones": [
    zone("node-0", cpu="2", memory="4Gi", hugepages_2Mi="128Mi", vendor__nic1="5"),
    zone("node-1", cpu="4", memory="4Gi", hugepages_2Mi="128Mi", vendor__nic1="2")]}, **{NIC_NO_NUMA: "4"})
NODE3 = topology({"topologyPolicies": ["SingleNUMANodePodLevel"], "zones": [
    zone("node-0", cpu="2", memory="4Gi", vendor__nic1="5"),
    zone("node-1", cpu="4", memory="4Gi", vendor__nic1="2")]})
BADLY_FORMED = topology({"topologyPolicies": ["SingleNUMANodePodLevel"], "zones": [
    zone("node-0", cpu="2", memory="4Gi", vendor__nic1="5"),
    zone("node-75", cpu="4", memory="4Gi", vendor__nic1="2")]})
WITH_EXTENDED = topology({"topologyPolicies": ["SingleNUMANodeContainerLevel"], "zones": [
    zone("node-0", cpu="4", memory="8Gi", vendor__nic1="10"),
    zone("node-1", cpu="8", memory="8Gi", vendor__nic1="10")]}, **{EXTENDED: "1"})
NODES = [NODE1, NODE2, NODE3, BADLY_FORMED, WITH_EXTENDED]
POD, CONTAINER = "cannot align pod", "cannot align container"

FILTER = [
    ("Guaranteed QoS, pod with extended resource fit",
     guaranteed({"cpu": "2", "memory": "2Gi", EXTENDED: "1", NIC: "3"}), 4, None),
    ("Guaranteed QoS, pod with extended resource no devices; pod fit",
     guaranteed({"cpu": "2", "memory": "2Gi", EXTENDED: "1"}), 4, None),
    ("Best effort QoS, pod fit", pod_shape({}), 0, None),
    ("Best effort QoS requesting devices, Pod Scope Topology policy; pod fit", guaranteed({NIC: "5"}), 2, None),
    ("Best effort QoS requesting devices, Pod Scope Topology policy; pod doesn't fit", guaranteed({NIC: "20"}), 2, POD),
    ("Best effort QoS requesting devices, Container Scope Topology policy; pod fit", guaranteed({NIC: "5"}), 1, None),
    ("Best effort QoS requesting devices, Container Scope Topology policy; pod doesn't fit",
     guaranteed({NIC: "20"}), 0, CONTAINER),
    ("Best effort QoS requesting devices and extended resources, Container Scope Topology policy; pod doesn't fit",
     guaranteed({EXTENDED: "1", NIC: "10"}), 4, None),
    ("Best effort QoS, requesting CPU, memory (enough on NUMA) and devices (not enough), Container Scope Topology "
     "policy; pod doesn't fit", req_and_limit({"cpu": "3", "memory": "3Gi", NIC: "11"},
                                              {"cpu": "4", "memory": "4Gi", NIC: "11"}), 1, CONTAINER),
    ("Best effort QoS, requesting CPU, memory (enough on NUMA) and devices (not enough), Pod Scope Topology policy; "
     "pod doesn't fit", req_and_limit({"cpu": "1", "memory": "1Gi", NIC: "6"}, {"cpu": "2", "memory": "2Gi", NIC: "6"}),
     2, POD),
    ("Best effort QoS requesting CPU, memory (enough on NUMA) and devices, Pod Scope Topology policy; pod fit",
     req_and_limit({"cpu": "1", "memory": "1Gi", NIC: "5"}, {"cpu": "2", "memory": "2Gi", NIC: "5"}), 2, None),
    ("Best effort QoS requesting CPU, memory (not enough on NUMA) and devices, Pod Scope Topology policy; pod fit",
     req_and_limit({"cpu": "19", "memory": "5Gi", NIC: "5"}, {"cpu": "20", "memory": "6Gi", NIC: "5"}), 2, None),
    ("Best effort QoS requesting CPU, memory (enough on NUMA) and devices, Container Scope Topology policy; pod fit",
     req_and_limit({"cpu": "3", "memory": "3Gi", NIC: "5"}, {"cpu": "4", "memory": "4Gi", NIC: "5"}), 1, None),
    ("Best effort QoS requesting CPU, memory (not enough on NUMA) and devices, Container Scope Topology policy; "
     "pod fit", req_and_limit({"cpu": "5", "memory": "5Gi", NIC: "5"}, {"cpu": "6", "memory": "6Gi", NIC: "5"}), 1, None),
    ("Guaranteed QoS, minimal, pod fit", guaranteed({"cpu": "2", "memory": "2Gi"}), 0, None),
    ("Guaranteed QoS, minimal, saturating zone, pod fit", guaranteed({"cpu": "8", "memory": "8Gi"}), 0, None),
    ("Guaranteed QoS, zero quantity of unavailable resource, pod fit",
     guaranteed({"cpu": "2", "memory": "2Gi", "hugepages-2Mi": "0", NIC: "3"}), 0, None),
    ("Guaranteed QoS, pod fit", guaranteed({"cpu": "2", "memory": "2Gi", NIC: "3"}), 1, None),
    ("Guaranteed QoS, hugepages, pod fit", guaranteed({"cpu": "2", "memory": "2Gi", "hugepages-2Mi": "64Mi", NIC: "3"}),
     1, None),
    ("Burstable QoS, pod fit", guaranteed({"cpu": "4", NIC: "3"}), 1, None),
    ("Burstable QoS, requesting CPU and devices (not enough), Container Scope Topology policy; pod doesn't fit",
     guaranteed({"cpu": "4", NIC: "11"}), 1, CONTAINER),
    ("Burstable QoS, requesting CPU and devices (not enough), Pod Scope Topology policy; pod doesn't fit",
     guaranteed({"cpu": "2", NIC: "6"}), 2, POD),
    ("Burstable QoS requesting CPU (enough on NUMA) and devices, Pod Scope Topology policy; pod fit",
     guaranteed({"cpu": "2", NIC: "5"}), 2, None),
    ("BurstableQoS requesting CPU (not enough on NUMA) and devices, Pod Scope Topology policy; pod fit",
     guaranteed({"cpu": "20", NIC: "5"}), 2, None),
    ("Burstable QoS requesting CPU (not enough on NUMA) and devices, Container Scope Topology policy; pod fit",
     guaranteed({"cpu": "4", NIC: "5"}), 1, None),
    ("Burstable QoS, requesting memory (enough on NUMA) and devices (not enough), Container Scope Topology policy; "
     "pod doesn't fit", guaranteed({"memory": "2Gi", NIC: "11"}), 1, CONTAINER),
    ("Burstable QoS, requesting memory (enough on NUMA) and devices (not enough), Pod Scope Topology policy; pod "
     "doesn't fit", guaranteed({"memory": "2Gi", NIC: "6"}), 2, POD),
    ("Burstable QoS requesting memory (not enough on NUMA) and devices, Pod Scope Topology policy; pod fit",
     guaranteed({"memory": "5Gi", NIC: "5"}), 2, None),
    ("Burstable QoS, requesting CPU, memory (enough on NUMA) and devices (not enough), Container Scope Topology "
     "policy; pod doesn't fit", requests_only({"cpu": "4", "memory": "4Gi", NIC: "11"}), 1, CONTAINER),
    ("Burstable QoS requesting CPU, memory (not enough on NUMA) and devices, Pod Scope Topology policy; pod fit",
     requests_only({"cpu": "20", "memory": "5Gi", NIC: "5"}), 2, None),
    ("Burstable QoS with extended resources, pod fit", guaranteed({EXTENDED: "1", "cpu": "4", NIC: "3"}), 4, None),
    ("Guaranteed QoS, hugepages, pod doesn't fit",
     guaranteed({"cpu": "2", "memory": "2Gi", "hugepages-2Mi": "256Mi", NIC: "3"}), 1, CONTAINER),
    ("Guaranteed QoS, pod doesn't fit", guaranteed({"cpu": "9", "memory": "1Gi", NIC: "3"}), 0, CONTAINER),
    ("Guaranteed QoS, pod fit (zero of a resource no node has)",
     guaranteed({"cpu": "2", "memory": "1Gi", NOT_EXISTING: "0"}), 0, None),
    ("Guaranteed QoS Topology Scope, pod doesn't fit",
     guaranteed(*[{"cpu": "3", "memory": "1Gi", NOT_EXISTING: "0"}] * 3), 2, POD),
    ("Guaranteed QoS Topology Scope, minimal, pod fit", guaranteed({"cpu": "1", "memory": "1Gi"}), 2, None),
    ("Guaranteed QoS TopologyScope, minimal, saturating zone, pod fit", guaranteed({"cpu": "2", "memory": "4Gi"}),
     3, None),
    ("Guaranteed QoS Topology Scope, pod fit", guaranteed(*[{"cpu": "1", "memory": "1Gi", NOT_EXISTING: "0"}] * 3),
     2, None),
    ("Guaranteed QoS Topology Scope, invalid node",
     guaranteed(*[{"cpu": "1", "memory": "1Gi", NOT_EXISTING: "0"}] * 3), 3, POD),
    ("Guaranteed QoS, hugepages, non-NUMA affine NIC, pod fit",
     guaranteed({"cpu": "2", "memory": "2Gi", "hugepages-2Mi": "64Mi", NIC_NO_NUMA: "3"}), 1, None),
    ("Guaranteed QoS, ephemeral-storage (non-NUMA), pod fit",
     guaranteed({"cpu": "2", "memory": "2Gi", "ephemeral-storage": "100Mi"}), 1, None),
]


@pytest.mark.parametrize("case", FILTER, ids=[c[0] for c in FILTER])
def test_filter(case):
    _name, shape, node, expected = case
    assert nrt.filter_reason(shape, NODES[node]) == expected


def test_zone_names_beyond_64_are_dropped_and_policies_read():
    assert [z.numa for z in BADLY_FORMED.zones] == [0]
    assert (NODE3.policy, NODE3.scope, NODE1.scope, NODE1.max_numa_nodes) == (
        "single-numa-node", "pod", "container", 8)
    attrs = topology({"topologyPolicies": ["BestEffortPodLevel"], "attributes": [
        {"name": "topologyManagerPolicy", "value": "single-numa-node"},
        {"name": "topologyManagerScope", "value": "container"},
        {"name": "topologyManagerMaxNUMANodes", "value": "4"}], "zones": []})
    assert (attrs.policy, attrs.scope, attrs.max_numa_nodes) == ("single-numa-node", "container", 4)


# -- score_test.go ---------------------------------------------------------------------------------

def default_numa_nodes(policy: str) -> dict[str, nrt.NodeTopology]:
    return {name: topology({"topologyPolicies": [policy], "zones": [
        zone("node-0", cpu=cpu, memory=mem), zone("node-1", cpu=cpu, memory=mem)]})
            for name, cpu, mem in (("Node1", "4", "500Mi"), ("Node2", "2", "50Mi"), ("Node3", "6", "60Mi"))}


POD1 = guaranteed({"cpu": "2", "memory": str(20 * 1024 * 1024)})


@pytest.mark.parametrize("strategy, node, score", [("MostAllocated", "Node2", 70), ("BalancedAllocation", "Node3", 100),
                                                   ("LeastAllocated", "Node1", 73)])
def test_score_strategies(strategy, node, score):
    """TestNodeResourceScorePlugin: the node with the highest score, and that score."""
    scores = {name: nrt.score(POD1, topo, strategy)
              for name, topo in default_numa_nodes("SingleNUMANodeContainerLevel").items()}
    best = max(scores, key=scores.get)
    assert (best, scores[best]) == (node, score)


def four_numa_nodes() -> dict[str, nrt.NodeTopology]:
    costs = [{"node-0": 10, "node-1": 12, "node-2": 20, "node-3": 20},
             {"node-0": 12, "node-1": 10, "node-2": 20, "node-3": 20},
             {"node-0": 20, "node-1": 20, "node-2": 10, "node-3": 12},
             {"node-0": 20, "node-1": 20, "node-2": 12, "node-3": 10}]
    gpus = {"Node1": ["1", "1", "0", "0"], "Node2": ["1", "0", "1", "0"]}
    return {name: topology({"topologyPolicies": ["BestEffortContainerLevel"], "zones": [
        zone(f"node-{i}", costs[i], cpu="2", memory="50Mi", gpu=per[i]) for i in range(4)]})
            for name, per in gpus.items()}


C2, C4, C6 = ({"cpu": c, "memory": "50Mi"} for c in ("2", "4", "6"))
LEAST_NUMA = [
    ("container scope, one container case 1", [C2], "BestEffortContainerLevel", {"Node1": 94, "Node2": 94, "Node3": 94}),
    ("container scope, one container case 2", [C4], "BestEffortContainerLevel", {"Node1": 94, "Node2": 82, "Node3": 94}),
    ("container scope, one container case 3", [C6], "BestEffortContainerLevel", {"Node1": 82, "Node2": 0, "Node3": 94}),
    ("container scope, two containers case 1", [C2, C2], "BestEffortContainerLevel",
     {"Node1": 94, "Node2": 94, "Node3": 94}),
    ("container scope, two containers case 2", [{"cpu": "1", "memory": "50Mi"}, {"cpu": "3", "memory": "50Mi"}],
     "BestEffortContainerLevel", {"Node1": 94, "Node2": 82, "Node3": 94}),
    ("container scope, two containers case 3", [{"cpu": "5", "memory": "50Mi"}, {"cpu": "3", "memory": "50Mi"}],
     "BestEffortContainerLevel", {"Node1": 82, "Node2": 0, "Node3": 94}),
    ("container scope, two containers non NUMA resource", [{"non-numa-resource": "1"}, {"non-numa-resource": "2"}],
     "BestEffortContainerLevel", {"Node1": 100, "Node2": 100, "Node3": 100}),
    ("pod scope, two containers case 1", [C2, C2], "BestEffortPodLevel", {"Node1": 94, "Node2": 82, "Node3": 82}),
    ("pod scope, two containers case 2", [{"cpu": "1", "memory": "50Mi"}, {"cpu": "3", "memory": "50Mi"}],
     "BestEffortPodLevel", {"Node1": 94, "Node2": 82, "Node3": 82}),
    ("pod scope, two containers case 3", [{"cpu": "5", "memory": "50Mi"}, {"cpu": "3", "memory": "50Mi"}],
     "BestEffortPodLevel", {"Node1": 82, "Node2": 0, "Node3": 82}),
    ("pod scope, one containers non NUMA resource", [{"non-numa-resource": "1"}], "BestEffortPodLevel",
     {"Node1": 100, "Node2": 100, "Node3": 100}),
]


@pytest.mark.parametrize("case", LEAST_NUMA, ids=[c[0] for c in LEAST_NUMA])
def test_least_numa_nodes(case):
    _name, containers, policy, wanted = case
    shape = guaranteed(*containers)
    assert {n: nrt.score(shape, t, "LeastNUMANodes") for n, t in default_numa_nodes(policy).items()} == wanted


@pytest.mark.parametrize("name, containers, wanted", [
    ("container scope, one container, 4 NUMA nodes, 1 gpu ", [{**C2, "gpu": "1"}], {"Node1": 94, "Node2": 94}),
    ("container scope, one container, 4 NUMA nodes, 2 gpu ", [{**C2, "gpu": "2"}], {"Node1": 82, "Node2": 76}),
    ("container scope, 2 containers, 4 NUMA nodes, 2 gpu in one container ", [{**C2, "gpu": "2"}, C2],
     {"Node1": 82, "Node2": 76}),
])
def test_least_numa_nodes_with_distances(name, containers, wanted):
    shape = guaranteed(*containers)
    assert {n: nrt.score(shape, t, "LeastNUMANodes") for n, t in four_numa_nodes().items()} == wanted
