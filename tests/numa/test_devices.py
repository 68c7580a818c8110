"""The Device Manager's hints and allocation (lint/numa/devices.py), ported from
pkg/kubelet/cm/devicemanager/topology_hints_test.go (each case names its Go test and
description), and devices in node descriptions, admission, NG301 and NG302."""
from __future__ import annotations

import pytest

from numaguard.lint.engine import Selection, lint_documents
from numaguard.lint.load.documents import load_text
from numaguard.lint.numa.admission import NodeState, admit
from numaguard.lint.numa.bitmask import mask_of
from numaguard.lint.numa.capacity import pod_capacity
from numaguard.lint.numa.devices import DeviceState, hint_masks, pod_device_requests
from numaguard.lint.numa.node import load_node, load_node_file
from numaguard.lint.numa.node_fields import NodeError

from conftest import FIXTURES

GPU_NODE = FIXTURES / "nodes" / "generator-dual-socket-4gpu.yaml"


def _state(devices, allocated=None):
    """numaNodes [0, 1] as in the Go tests; `allocated` = devices held by another container."""
    state = DeviceState.from_counts((0, 1), devices)
    for resource, per in (allocated or {}).items():
        for n, c in per.items():
            state.free[resource][n] -= c
    return state


# TestGetTopologyHints / TestGetPodTopologyHints, getCommonTestCases (numaNodes [0, 1])
@pytest.mark.parametrize("description,devices,allocated,asked,expected", [
    ("Single Request, one device per socket", {"testdevice": {0: 1, 1: 1}}, None, 1,
     [([0], True), ([1], True), ([0, 1], False)]),
    ("Request for 2, one device per socket", {"testdevice": {0: 1, 1: 1}}, None, 2,
     [([0, 1], True)]),
    ("Request for 2, 2 devices per socket", {"testdevice": {0: 2, 1: 2}}, None, 2,
     [([0], True), ([1], True), ([0, 1], False)]),
    ("Request for 2, optimal on 1 NUMA node, forced cross-NUMA", {"testdevice": {0: 2, 1: 2}},
     {"testdevice": {0: 1, 1: 1}}, 2, [([0, 1], False)]),
    ("Single device type, more requested than available", {"testdevice": {0: 2, 1: 2}}, None, 6,
     []),
])
def test_get_topology_hints_common_cases(description, devices, allocated, asked, expected):
    hints = _state(devices, allocated).hints({"testdevice": asked}, "fakePod")
    assert hint_masks(hints["testdevice"]) == expected, description


def test_get_topology_hints_2_device_types_mixed_configuration():
    # getCommonTestCases "2 device types, mixed configuration"
    state = _state({"testdevice1": {0: 2, 1: 2}, "testdevice2": {0: 1}})
    hints = state.hints({"testdevice1": 2, "testdevice2": 1}, "fakePod")
    assert hint_masks(hints["testdevice1"]) == [([0], True), ([1], True), ([0, 1], False)]
    assert hint_masks(hints["testdevice2"]) == [([0], True), ([0, 1], False)]


def test_get_topology_hints_single_request_no_alignment():
    # getCommonTestCases "Single Request, no alignment": no device has NUMA topology -> nil
    state = DeviceState((0, 1), {"testdevice": {}}, {"testdevice": {}})
    assert state.hints({"testdevice": 1}, "fakePod") == {"testdevice": None}


def test_get_pod_topology_hints_2_device_types_user_container_only():
    # getPodScopeTestCases "2 device types, user container only": notRegistered has no hints
    spec = {"containers": [
        {"name": "fakeContainer1", "resources": {"limits": {"example.com/testdevice1": "2"}}},
        {"name": "fakeContainer2", "resources": {"limits": {"example.com/testdevice2": "2"}}},
        {"name": "fakeContainer3", "resources": {"limits": {"example.com/notRegistered": "2"}}}]}
    state = _state({"example.com/testdevice1": {0: 2, 1: 2}, "example.com/testdevice2": {0: 2, 1: 2}})
    hints = state.hints(pod_device_requests(spec), "fakePod")
    assert sorted(hints) == ["example.com/testdevice1", "example.com/testdevice2"]
    for resource in hints:
        assert hint_masks(hints[resource]) == [([0], True), ([1], True), ([0, 1], False)]


def test_pod_device_request_is_the_sidecar_aware_aggregate_of_limits():
    # TestGetPodDeviceRequest: init containers ask for 2 gpu, app containers 3 + 3 -> 6
    spec = {"initContainers": [{"name": "i", "resources": {"limits": {"example.com/gpu": "2"}}}],
            "containers": [{"name": "a", "resources": {"limits": {"example.com/gpu": "3"}}},
                           {"name": "b", "resources": {"limits": {"example.com/gpu": "3"}}}]}
    assert pod_device_requests(spec) == {"example.com/gpu": 6}


# TestTopologyAlignedAllocation: (request, devices per NUMA, hint NUMA nodes, expected alignment)
@pytest.mark.parametrize("description,devices,hint,asked,expected", [
    ("Single Request, socket 1", {0: 1, 1: 1}, [1], 1, {1: 1}),
    ("Request for 2, socket 0", {0: 2, 1: 2}, [0], 2, {0: 2}),
    ("Request for 4, unsatisfiable, prefer socket 0", {0: 3, 1: 3}, [0], 4, {0: 3, 1: 1}),
    ("Request for 4, unsatisfiable, prefer socket 1", {0: 3, 1: 3}, [1], 4, {0: 1, 1: 3}),
    ("Request for 4, multisocket", {0: 2, 1: 2, 2: 2, 3: 2}, [1, 3], 4, {1: 2, 3: 2}),
])
def test_topology_aligned_allocation(description, devices, hint, asked, expected):
    state = DeviceState.from_counts(sorted(devices), {"resource": devices})
    taken = state.allocate("podUID", "containerName", {"resource": asked}, mask_of(hint))
    assert taken == {"resource": expected}, description


# -- node descriptions ------------------------------------------------------------------------

def test_node_profile_generator_devices():
    node = load_node_file(GPU_NODE)
    assert node.topology.devices == {"nvidia.com/gpu": {0: 2, 1: 2}}


def test_node_profile_explicit_numa_node_devices():
    node = load_node({"apiVersion": "numaguard.io/v1alpha1", "kind": "NodeProfile",
                      "metadata": {"name": "x"},
                      "spec": {"topology": {
                          "cpus": [{"id": 0, "core": 0, "socket": 0, "numa": 0},
                                   {"id": 1, "core": 1, "socket": 1, "numa": 1}],
                          "numaNodes": [{"id": 0, "memory": "8Gi", "devices": {"amd.com/gpu": 1}},
                                        {"id": 1, "memory": "8Gi"}]}}})
    assert node.topology.devices == {"amd.com/gpu": {0: 1}}


def test_node_resource_topology_zone_device_resources():
    zone = lambda n, gpus: {"name": f"node-{n}", "type": "Node", "resources": [  # noqa: E731
        {"name": "cpu", "capacity": "16", "allocatable": "16"},
        {"name": "memory", "capacity": "64Gi"},
        {"name": "nvidia.com/gpu", "capacity": str(gpus), "allocatable": str(gpus)}]}
    node = load_node({"apiVersion": "topology.node.k8s.io/v1alpha2",
                      "kind": "NodeResourceTopology", "metadata": {"name": "gpu-node"},
                      "zones": [zone(0, 4), zone(1, 2)]})
    assert node.topology.devices == {"nvidia.com/gpu": {0: 4, 1: 2}}


def test_device_on_a_numa_node_the_machine_lacks():
    with pytest.raises(NodeError) as err:
        load_node({"apiVersion": "numaguard.io/v1alpha1", "kind": "NodeProfile",
                   "metadata": {"name": "x"},
                   "spec": {"topology": {"sockets": 1, "coresPerNumaNode": 2,
                                         "memoryPerNumaNode": "8Gi",
                                         "devices": {"nvidia.com/gpu": {1: 1}}}}}, source="n.yaml")
    assert str(err.value) == ("n.yaml: spec.topology.devices.nvidia.com/gpu.1: NUMA node 1 is not "
                              "among the NUMA nodes [0]")


# -- admission, capacity and the NUMA rules --------------------------------------------------

def _gpu_pod(gpus: int, cpus: int = 4) -> dict:
    return {"metadata": {"name": "trainer"}, "spec": {
        "resources": {"requests": {"cpu": str(cpus), "memory": "16Gi"},
                      "limits": {"cpu": str(cpus), "memory": "16Gi"}},
        "containers": [{"name": "trainer", "image": "x",
                        "resources": {"limits": {"nvidia.com/gpu": str(gpus)}}}]}}


def test_gpus_are_aligned_with_the_pods_cpus_and_memory():
    state = NodeState.from_node(load_node_file(GPU_NODE))
    first = admit(state, _gpu_pod(2))
    second = admit(state, _gpu_pod(2))
    assert (first.numa_nodes, first.devices) == ([0], {"nvidia.com/gpu": {0: 2}})
    assert (second.numa_nodes, second.devices) == ([1], {"nvidia.com/gpu": {1: 2}})
    third = admit(state, _gpu_pod(1))
    assert (third.admitted, third.reason) == (False, "TopologyAffinityError")


def test_capacity_counts_gpu_limited_copies():
    capacity = pod_capacity(load_node_file(GPU_NODE), _gpu_pod(1))
    assert capacity.copies == 4
    assert capacity.stranded_devices == {"nvidia.com/gpu": {0: 0, 1: 0}}
    assert capacity.stranded_cpus == {0: 22, 1: 24}   # 30 and 32 free, 2 copies x 4 CPUs each


def _lint(text: str, node):
    docs, errors = load_text(text, "pod.yaml")
    from numaguard.lint.config import Config
    result = lint_documents(docs, node=node, config=Config(scope_all=True),
                            selection=Selection(select=("NG301", "NG302")))
    return result.findings


GPU_POD_YAML = """\
apiVersion: v1
kind: Pod
metadata: {name: big-trainer}
spec:
  resources:
    requests: {cpu: "4", memory: 16Gi}
    limits: {cpu: "4", memory: 16Gi}
  containers:
  - name: trainer
    image: registry.example.com/trainer:1
    resources:
      limits: {nvidia.com/gpu: "3"}
"""


def test_ng301_names_the_devices_that_do_not_fit_one_numa_node():
    [finding] = _lint(GPU_POD_YAML, load_node_file(GPU_NODE))
    assert (finding.rule, finding.line, finding.column, finding.path) == \
        ("NG301", 12, 32, "spec.containers[0].resources.limits.nvidia.com/gpu")
    assert finding.remediation == (
        "The pod asks for 3 nvidia.com/gpu, but no NUMA node has more than 2 (NUMA 0: 2, NUMA 1: "
        "2), and single-numa-node needs all of them on one NUMA node; ask for at most 2 per pod, "
        "or use topologyManagerPolicy restricted (devices on the fewest NUMA nodes).")


def test_ng302_says_devices_are_not_modelled_instead_of_a_number():
    [finding] = _lint(GPU_POD_YAML, load_node_file("builtin:dual-socket-ht"))
    assert (finding.rule, finding.severity.value, finding.line, finding.column) == \
        ("NG302", "info", 12, 32)
    assert finding.message.startswith("devices are not modelled: the pod asks for nvidia.com/gpu "
                                      "but the node description lists no devices per NUMA node")


def test_container_scope_merges_each_containers_device_hints():
    # scope container, a classic Guaranteed pod: each container's GPUs land with its CPUs
    node = load_node_file(GPU_NODE)
    kc = dict(node.kubelet_config, topologyManagerScope="container")
    state = NodeState.from_node(node, kc)
    container = {"name": "a", "image": "x", "resources": {
        "requests": {"cpu": "4", "memory": "8Gi"},
        "limits": {"cpu": "4", "memory": "8Gi", "nvidia.com/gpu": "2"}}}
    pod = {"metadata": {"name": "p"}, "spec": {"containers": [container, dict(container, name="b")]}}
    placement = admit(state, pod)
    assert placement.admitted
    assert placement.devices == {"nvidia.com/gpu": {0: 2, 1: 2}}
    numa_of = {c.id: c.numa for c in state.topology.cpus}
    assert {numa_of[c] for c in placement.cpus["exclusive"]["a"]} == {0}
    assert {numa_of[c] for c in placement.cpus["exclusive"]["b"]} == {1}
