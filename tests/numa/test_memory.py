"""Memory Manager Static policy against the kubelet's own tables.

Origin: kubernetes/kubernetes pkg/kubelet/cm/memorymanager/policy_static_test.go
(TestStaticPolicyNew, TestStaticPolicyStart, TestStaticPolicyAllocate,
TestStaticPolicyAllocateWithInitContainers, TestStaticPolicyAllocateWithRestartableInitContainers,
TestStaticPolicyRemoveContainer, TestStaticPolicyGetTopologyHints, Test_getPodRequestedResources);
the test-case description is given with each case. The worked example of
kubernetes/website tasks/debug/debug-cluster/topology.md is ported too.

Notation: T(allocatable, free, reserved, system_reserved, total) is one memory table;
N(memory_table, hugepages_table, cells, assignments) one NUMA node with `memory` and
`hugepages-1Gi` (the fixture's default pair).
"""
from __future__ import annotations

import pytest

from numaguard.lint.numa.bitmask import mask_of
from numaguard.lint.numa.memory import (
    Block, MemoryManagerError, MemoryTable, NUMANodeState, StaticMemoryPolicy,
    check_system_reserved, default_machine_state, find_best_hint, hugepage_resource_name,
    is_guaranteed, pod_requests, reserved_memory_from_config,
)
from numaguard.lint.numa.merge import BestEffortPolicy, NUMAInfo, RestrictedPolicy, TopologyHint
from numaguard.lint.numa.topology import CPU, NUMANode, Topology

MB = 1 << 20
GB = 1 << 30
HP1G = "hugepages-1Gi"
HP2M = "hugepages-2Mi"


def T(allocatable, free, reserved, system_reserved, total) -> MemoryTable:
    return MemoryTable(total=total, system_reserved=system_reserved, allocatable=allocatable,
                       reserved=reserved, free=free)


def N(memory, hugepages=None, cells=(0,), assignments=0, hugepages_name=HP1G) -> NUMANodeState:
    tables = {"memory": memory}
    if hugepages is not None:
        tables[hugepages_name] = hugepages
    return NUMANodeState(tables, list(cells), assignments)


def H(bits, preferred) -> TopologyHint:
    return TopologyHint(None if bits is None else mask_of(bits), preferred)


def B(bits, type_, size) -> Block:
    return Block(tuple(bits), type_, size)


def ctr(name, memory="1Gi", hugepages="1Gi", *, burstable=False, sidecar=False, cpu="1000Mi",
        hugepages_name=HP1G):
    """A container like the Go fixtures' requirementsGuaranteed / requirementsBurstable."""
    limits = {"cpu": cpu, "memory": memory}
    requests = {"cpu": cpu, "memory": memory}
    if hugepages is not None:
        limits[hugepages_name] = hugepages
        requests[hugepages_name] = hugepages
    if burstable:           # requirementsBurstable: limits 2Gi, requests 1Gi
        limits = {"cpu": cpu, "memory": "2Gi", hugepages_name: "2Gi"}
    c = {"name": name, "resources": {"limits": limits, "requests": requests}}
    if sidecar:
        c["restartPolicy"] = "Always"
    return c


def pod(containers, init_containers=()):
    spec = {"containers": list(containers)}
    if init_containers:
        spec["initContainers"] = list(init_containers)
    return spec


def get_pod(container_name="container1", **kw):
    """getPod(podName, containerName, requirementsGuaranteed/Burstable)."""
    return pod([ctr(container_name, **kw)])


def normalized(state):
    return {n: (s.memory, sorted(s.cells), s.number_of_assignments) for n, s in state.items()}


def normalized_assignments(assignments):
    return {p: {c: sorted(blocks, key=lambda b: (b.type, b.numa_affinity)) for c, blocks in cs.items()}
            for p, cs in assignments.items()}


def run_allocate(machine, assignments, spec, hint, containers=None, pod_uid="pod1",
                 reusable=None):
    policy = StaticMemoryPolicy(machine, assignments or {}, reusable or {})
    names = containers or [c["name"] for c in spec["containers"]]
    for name in names:
        policy.allocate(pod_uid, spec, name, hint)
    return policy


# --- TestStaticPolicyNew / TestStaticPolicyStart ------------------------------------------------

def test_new_fails_without_reserved_memory():
    # "should fail, when machine does not have reserved memory for the system workloads"
    with pytest.raises(MemoryManagerError) as err:
        check_system_reserved({})
    assert err.value.message == "[memorymanager] you should specify the system reserved memory"


def test_new_succeeds_with_reserved_memory_on_one_node():
    # "should succeed, when at least one NUMA node has reserved memory"
    check_system_reserved({0: {}, 1: {"memory": 512 * MB}})


def test_start_fills_default_machine_state():
    # TestStaticPolicyStart "should fill the state with default values, when the state is empty":
    # 3Gi node with one 1Gi hugepage and 512Mi reserved -> 1536Mi allocatable regular memory
    topo = Topology((CPU(0, 0, 0, 0),), (NUMANode(0, 3 * GB, {GB: 1}),))
    policy = StaticMemoryPolicy.from_topology(topo, {0: {"memory": 512 * MB}})
    assert normalized(policy.machine_state) == normalized({0: N(
        T(1536 * MB, 1536 * MB, 0, 512 * MB, 3 * GB), T(GB, GB, 0, 0, GB), cells=[0])})
    assert policy.assignments == {}


def test_default_machine_state_reserved_hugepages_and_names():
    # getDefaultMachineState: reserved hugepages come off that size's allocatable
    topo = Topology((CPU(0, 0, 0, 0), CPU(1, 1, 0, 1)),
                    (NUMANode(0, 8 * GB, {2 * MB: 512, GB: 2}), NUMANode(1, 8 * GB)))
    state = default_machine_state(topo, {0: {"memory": GB, HP2M: 2 * MB}, 1: {"memory": GB}})
    assert state[0].memory[HP2M] == T(GB - 2 * MB, GB - 2 * MB, 0, 2 * MB, GB)
    assert state[0].memory[HP1G] == T(2 * GB, 2 * GB, 0, 0, 2 * GB)
    assert state[0].memory["memory"] == T(4 * GB, 4 * GB, 0, GB, 8 * GB)
    assert state[1].memory == {"memory": T(7 * GB, 7 * GB, 0, GB, 8 * GB)}
    assert hugepage_resource_name(2 * MB) == HP2M and hugepage_resource_name(GB) == HP1G


def test_reserved_memory_from_kubelet_config():
    entries = [{"numaNode": 0, "limits": {"memory": "1100Mi"}},
               {"numaNode": 1, "limits": {"memory": "1Gi", "hugepages-2Mi": "4Mi"}}]
    assert reserved_memory_from_config(entries) == {0: {"memory": 1100 * MB},
                                                    1: {"memory": GB, HP2M: 4 * MB}}


# --- TestStaticPolicyAllocate ---------------------------------------------------------------

def _three_nodes_first_used():
    # shared by "default hint has preferred false" and "extended hint has preferred false"
    return {
        0: N(T(GB, 512 * MB, 512 * MB, 512 * MB, 1536 * MB), T(GB, GB, 0, 0, GB), [0], 1),
        1: N(T(512 * MB, 512 * MB, 0, 512 * MB, 1536 * MB), T(GB, GB, 0, 0, GB), [1], 0),
        2: N(T(512 * MB, 512 * MB, 0, 512 * MB, 1536 * MB), T(GB, GB, 0, 0, GB), [2], 0),
    }


def _four_small_nodes():
    return {n: N(T(512 * MB, 512 * MB, 0, 512 * MB, GB), T(GB, GB, 0, 0, GB), [n], 0)
            for n in range(4)}


ALLOCATE_ERRORS = [
    ("should fail when no NUMA affinity was provided under the topology manager hint and "
     "calculation of the default hint failed",
     {0: N(T(1536 * MB, 512 * MB, 1024 * MB, 512 * MB, 2 * GB), T(GB, 0, GB, 0, GB), [0], 2)},
     {"pod1": {"container1": [B([0], "memory", GB), B([0], HP1G, GB)]}},
     "pod2", "container2", H(None, False),
     "[memorymanager] failed to get the default NUMA affinity, no NUMA nodes with enough memory "
     "is available"),
    ("should fail when no NUMA affinity was provided under the topology manager preferred hint "
     "and default hint has preferred false",
     _three_nodes_first_used(), {"pod1": {"container1": [B([0], "memory", 512 * MB)]}},
     "pod2", "container2", H(None, True),
     "[memorymanager] failed to find the default preferred hint"),
    ("should fail when NUMA affinity provided under the topology manager hint did not satisfy "
     "container requirements and extended hint generation failed",
     {0: N(T(512 * MB, 512 * MB, 0, 512 * MB, GB), T(GB, GB, 0, 0, GB), [0], 0),
      1: N(T(1536 * MB, 512 * MB, GB, 512 * MB, 2 * GB), T(GB, GB, 0, 0, GB), [1, 2], 1),
      2: N(T(1536 * MB, 512 * MB, GB, 512 * MB, 2 * GB), T(GB, GB, 0, 0, GB), [1, 2], 1)},
     {}, "pod1", "container1", H([0], False),
     "[memorymanager] failed to find NUMA nodes to extend the current topology hint"),
    ("should fail when the topology manager provided the preferred hint and extended hint has "
     "preferred false",
     _three_nodes_first_used(), {"pod1": {"container1": [B([0], "memory", 512 * MB)]}},
     "pod2", "container2", H([1], True),
     "[memorymanager] failed to find the extended preferred hint"),
]


@pytest.mark.parametrize("name,machine,assignments,pod_uid,container,hint,message",
                         ALLOCATE_ERRORS, ids=[c[0] for c in ALLOCATE_ERRORS])
def test_allocate_errors(name, machine, assignments, pod_uid, container, hint, message):
    policy = StaticMemoryPolicy(machine, assignments)
    with pytest.raises(MemoryManagerError) as err:
        policy.allocate(pod_uid, get_pod(container), container, hint)
    assert err.value.message == message
    assert err.value.reason == "UnexpectedAdmissionError"
    assert err.value.admission_message == f"Allocate failed due to {message}, which is unexpected"


def test_allocate_does_nothing_for_non_guaranteed_pods():
    # "should do nothing for non-guaranteed pods"
    machine = {0: N(T(1536 * MB, 1536 * MB, 0, 512 * MB, 2 * GB), T(GB, GB, 0, 0, GB), [])}
    expected = normalized(machine)
    policy = run_allocate(machine, {}, get_pod(burstable=True), H(None, False))
    assert policy.assignments == {}
    assert normalized(policy.machine_state) == expected


def test_allocate_does_nothing_once_container_is_in_state():
    # "should do nothing once container already exists under the state file"
    machine = {0: N(T(1536 * MB, 512 * MB, 1024 * MB, 512 * MB, 2 * GB), T(GB, GB, 0, 0, GB), [])}
    expected = normalized(machine)
    assignments = {"pod1": {"container1": [B([0], "memory", GB)]}}
    policy = run_allocate(machine, assignments, get_pod(), H(None, False))
    assert policy.assignments == {"pod1": {"container1": [B([0], "memory", GB)]}}
    assert normalized(policy.machine_state) == expected


def test_allocate_calculates_default_hint():
    # "should calculate a default topology hint when no NUMA affinity was provided by the
    # topology manager hint"
    machine = {0: N(T(1536 * MB, 1536 * MB, 0, 512 * MB, 2 * GB), T(GB, GB, 0, 0, GB), [0])}
    policy = run_allocate(machine, {}, get_pod(), H(None, False))
    assert normalized_assignments(policy.assignments) == {
        "pod1": {"container1": [B([0], HP1G, GB), B([0], "memory", GB)]}}
    assert normalized(policy.machine_state) == normalized({0: N(
        T(1536 * MB, 512 * MB, 1024 * MB, 512 * MB, 2 * GB), T(GB, 0, GB, 0, GB), [0], 2)})


def test_allocate_from_multiple_numa_nodes():
    # "should succeed to allocate memory from multiple NUMA nodes": greedy fill from node 0,
    # every node of the group counts the assignment even with 0 bytes taken (hugepages on 1)
    policy = run_allocate(_four_small_nodes(), {}, get_pod(), H(None, True))
    assert normalized_assignments(policy.assignments) == {
        "pod1": {"container1": [B([0, 1], HP1G, GB), B([0, 1], "memory", GB)]}}
    expected = _four_small_nodes()
    expected[0] = N(T(512 * MB, 0, 512 * MB, 512 * MB, GB), T(GB, 0, GB, 0, GB), [0, 1], 2)
    expected[1] = N(T(512 * MB, 0, 512 * MB, 512 * MB, GB), T(GB, GB, 0, 0, GB), [0, 1], 2)
    assert normalized(policy.machine_state) == normalized(expected)


# --- own cases: extension and the single/cross NUMA rule (policy_static.go Allocate) ----------

def test_allocate_extends_a_narrowed_hint_to_a_group():
    # the TM's {0} (non-preferred) cannot hold 1Gi; the smallest qualifying mask holding {0}
    # is {0,1} (preferred: no single node is large enough)
    policy = run_allocate(_four_small_nodes(), {}, get_pod(hugepages=None), H([0], False))
    assert policy.assignments["pod1"]["container1"] == [B([0, 1], "memory", GB)]


def test_allocate_rejects_hint_violating_single_vs_cross_numa_rule():
    machine = _four_small_nodes()
    machine[0] = N(T(2 * GB, GB, GB, 512 * MB, 3 * GB), T(GB, GB, 0, 0, GB), [0], 1)
    policy = StaticMemoryPolicy(machine, {"pod0": {"c": [B([0], "memory", GB)]}})
    with pytest.raises(MemoryManagerError,
                       match=r"^\[memorymanager\] preferred hint violates NUMA node allocation$"):
        policy.allocate("pod1", get_pod(hugepages=None), "container1", H([0, 1], True))


# --- TestStaticPolicyAllocateWithInitContainers ----------------------------------------------

def _init_pod(inits, apps):
    return pod([ctr(f"container{i + 1}", f"{m}Gi", f"{m}Gi") for i, m in enumerate(apps)],
               [ctr(f"initContainer{i + 1}", f"{m}Gi", f"{m}Gi") for i, m in enumerate(inits)])


INIT_CASES = [
    ("should re-use init containers memory, init containers requests 1Gi and 2Gi, apps "
     "containers 3Gi and 4Gi", [1, 2], [3, 4], 8, [0, 0], 7, None),
    ("should re-use init containers memory, init containers requests 4Gi and 3Gi, apps "
     "containers 2Gi and 1Gi", [4, 3], [2, 1], 8, [0, 1], 4, None),
    ("should re-use init containers memory, init containers requests 7Gi and 4Gi, apps "
     "containers 4Gi and 3Gi", [7, 4], [4, 3], 8, [0, 0], 7, None),
    ("should re-use init containers memory, init containers requests 7Gi and 4Gi, apps "
     "containers 5Gi and 2Gi", [7, 4], [5, 2], 10, [0, 0], 7, {"pod0": {}}),
]


@pytest.mark.parametrize("name,inits,apps,node_gb,init_sizes,reserved_gb,reusable", INIT_CASES,
                         ids=[c[0] for c in INIT_CASES])
def test_allocate_with_init_containers(name, inits, apps, node_gb, init_sizes, reserved_gb,
                                       reusable):
    machine = {0: N(T(node_gb * GB - 512 * MB, node_gb * GB - 512 * MB, 0, 512 * MB, node_gb * GB),
                    T(node_gb * GB, node_gb * GB, 0, 0, node_gb * GB), [0])}
    if node_gb == 10:      # the 10Gi fixture has 10240Mi allocatable regular memory
        machine[0].memory["memory"] = T(10240 * MB, 10240 * MB, 0, 512 * MB, 10 * GB)
    spec = _init_pod(inits, apps)
    names = [c["name"] for c in spec["initContainers"] + spec["containers"]]
    policy = run_allocate(machine, {}, spec, H(None, False), names, reusable=reusable)
    expected_blocks = {f"initContainer{i + 1}": s for i, s in enumerate(init_sizes)}
    expected_blocks.update({f"container{i + 1}": m for i, m in enumerate(apps)})
    assert normalized_assignments(policy.assignments) == {"pod1": {
        name: [B([0], HP1G, size * GB), B([0], "memory", size * GB)]
        for name, size in expected_blocks.items()}}
    allocatable = machine[0].memory["memory"].allocatable
    assert normalized(policy.machine_state) == normalized({0: N(
        T(allocatable, allocatable - reserved_gb * GB, reserved_gb * GB, 512 * MB, node_gb * GB),
        T(node_gb * GB, (node_gb - reserved_gb) * GB, reserved_gb * GB, 0, node_gb * GB),
        [0], 8)})
    assert "pod0" not in policy.init_containers_reusable_memory


# --- TestStaticPolicyAllocateWithRestartableInitContainers -------------------------------------

def test_restartable_init_containers_already_in_state():
    # "should do nothing once containers already exist under the state file"
    machine = {0: N(T(2560 * MB, 512 * MB, 2048 * MB, 512 * MB, 3 * GB),
                    T(2 * GB, 2 * GB, 0, 0, 2 * GB), [])}
    expected = normalized(machine)
    assignments = {"pod1": {"initContainer1": [B([0], "memory", GB)],
                            "container1": [B([0], "memory", GB)]}}
    spec = pod([ctr("container1")], [ctr("initContainer1", sidecar=True)])
    policy = run_allocate(machine, assignments, spec, H(None, False),
                          ["initContainer1", "container1"])
    assert policy.assignments == {"pod1": {"initContainer1": [B([0], "memory", GB)],
                                           "container1": [B([0], "memory", GB)]}}
    assert normalized(policy.machine_state) == expected


def test_restartable_init_container_memory_is_not_reused():
    # "should not re-use restartable init containers memory"
    machine = {0: N(T(7 * GB, 7 * GB, 0, 512 * MB, 7680 * MB), T(7 * GB, 7 * GB, 0, 0, 7 * GB), [0])}
    spec = pod([ctr("container1")],
               [ctr("initContainer1", "1Gi", "1Gi"),
                ctr("restartableInitContainer2", "2Gi", "2Gi", sidecar=True),
                ctr("initContainer3", "3Gi", "3Gi"),
                ctr("restartableInitContainer4", "4Gi", "4Gi", sidecar=True)])
    names = [c["name"] for c in spec["initContainers"] + spec["containers"]]
    policy = run_allocate(machine, {}, spec, H(None, False), names)
    sizes = {"initContainer1": 0, "restartableInitContainer2": 2, "initContainer3": 0,
             "restartableInitContainer4": 4, "container1": 1}
    assert normalized_assignments(policy.assignments) == {"pod1": {
        n: [B([0], HP1G, s * GB), B([0], "memory", s * GB)] for n, s in sizes.items()}}
    assert normalized(policy.machine_state) == normalized({0: N(
        T(7 * GB, 0, 7 * GB, 512 * MB, 7680 * MB), T(7 * GB, 0, 7 * GB, 0, 7 * GB), [0], 10)})


# --- TestStaticPolicyRemoveContainer ---------------------------------------------------------

def test_remove_unknown_container_does_nothing():
    # "should do nothing when the container does not exist under the state"
    machine = {0: N(T(1536 * MB, 1536 * MB, 0, 512 * MB, 2 * GB), T(GB, GB, 0, 0, GB), [])}
    expected = normalized(machine)
    policy = StaticMemoryPolicy(machine)
    policy.remove_container("pod1", "container1")
    assert policy.assignments == {} and normalized(policy.machine_state) == expected


def test_remove_container_updates_machine_state():
    # "should delete the container assignment and update the machine state"
    machine = {0: N(T(1536 * MB, 512 * MB, 1024 * MB, 512 * MB, 2 * GB), T(GB, 0, GB, 0, GB), [0], 2)}
    policy = StaticMemoryPolicy(machine, {"pod1": {"container1": [B([0], "memory", GB),
                                                                  B([0], HP1G, GB)]}})
    policy.remove_container("pod1", "container1")
    assert policy.assignments == {}
    assert normalized(policy.machine_state) == normalized({0: N(
        T(1536 * MB, 1536 * MB, 0, 512 * MB, 2 * GB), T(GB, GB, 0, 0, GB), [0], 0)})


def test_remove_cross_numa_container_dissolves_group():
    # "should delete the cross NUMA container assignment and update the machine state"
    machine = {0: N(T(512 * MB, 0, 512 * MB, 512 * MB, GB), T(GB, 0, GB, 0, GB), [0, 1], 2),
               1: N(T(512 * MB, 0, 512 * MB, 512 * MB, GB), T(GB, GB, 0, 0, GB), [0, 1], 2)}
    policy = StaticMemoryPolicy(machine, {"pod1": {"container1": [B([0, 1], "memory", GB),
                                                                  B([0, 1], HP1G, GB)]}})
    policy.remove_container("pod1", "container1")
    assert policy.assignments == {}
    assert normalized(policy.machine_state) == normalized({
        0: N(T(512 * MB, 512 * MB, 0, 512 * MB, GB), T(GB, GB, 0, 0, GB), [0], 0),
        1: N(T(512 * MB, 512 * MB, 0, 512 * MB, GB), T(GB, GB, 0, 0, GB), [1], 0)})


def test_allocate_then_remove_round_trips():
    machine = _four_small_nodes()
    before = normalized(machine)
    policy = run_allocate(machine, {}, get_pod(), H(None, True))
    policy.remove_container("pod1", "container1")
    assert normalized(policy.machine_state) == before and policy.assignments == {}


# --- TestStaticPolicyGetTopologyHints --------------------------------------------------------

def test_hints_none_for_non_guaranteed_pods():
    # "should not provide topology hints for non-guaranteed pods"
    policy = StaticMemoryPolicy({})
    assert policy.get_topology_hints("pod1", get_pod(burstable=True), "container1") is None


def test_hints_from_existing_assignment():
    # "should provide topology hints based on the existent memory assignment"
    policy = StaticMemoryPolicy({}, {"pod1": {"container1": [B([0], "memory", GB),
                                                             B([0], HP1G, GB)]}})
    assert policy.get_topology_hints("pod1", get_pod(), "container1") == {
        "memory": [H([0], True)], HP1G: [H([0], True)]}


@pytest.mark.parametrize("name,blocks", [
    ("should fail when number of existing memory assignment resources are different from "
     "resources requested by container", [B([0], "memory", GB)]),
    ("should fail when existing memory assignment resources are different from resources "
     "requested by container", [B([0], "memory", GB), B([0], HP2M, GB)]),
    ("should fail when existing memory assignment size is different from one requested by the "
     "container", [B([0], "memory", 512 * MB), B([0], HP1G, GB)]),
])
def test_hints_none_when_existing_blocks_differ(name, blocks):
    policy = StaticMemoryPolicy({}, {"pod1": {"container1": blocks}})
    assert policy.get_topology_hints("pod1", get_pod(), "container1") is None


def test_hints_calculated_for_new_container():
    # "should calculate new topology hints, when the container does not exist under assignments"
    machine = {
        0: N(T(1536 * MB, 0, 1536 * MB, 512 * MB, 2 * GB), T(GB, 0, GB, 0, GB), [0, 1], 2),
        1: N(T(1536 * MB, GB, 512 * MB, 512 * MB, 2 * GB), T(GB, 0, GB, 0, GB), [0, 1], 2),
        2: N(T(1536 * MB, 1536 * MB, 0, 512 * MB, 2 * GB), T(GB, GB, 0, 0, GB), [2], 0),
        3: N(T(1536 * MB, 1536 * MB, 0, 512 * MB, 2 * GB), T(GB, GB, 0, 0, GB), [3], 0)}
    policy = StaticMemoryPolicy(machine, {"pod1": {"container1": [B([0, 1], "memory", 2 * GB),
                                                                  B([0, 1], HP1G, 2 * GB)]}})
    expected = [H([2], True), H([3], True), H([2, 3], False)]
    assert policy.get_topology_hints("pod2", get_pod("container2"), "container2") == {
        "memory": expected, HP1G: expected}


def test_hints_no_preferred_multi_numa_for_single_numa_sized_pod():
    # "should not return preferred hints with multiple NUMA nodes for the pod with resources
    # satisfied by a single NUMA node"
    machine = {
        0: N(T(1536 * MB, 0, 1536 * MB, 512 * MB, 2 * GB), T(20 * MB, 0, 20 * MB, 0, 20 * MB),
             [0, 1], 2, hugepages_name=HP2M),
        1: N(T(1536 * MB, GB, 512 * MB, 512 * MB, 2 * GB), T(20 * MB, 16 * MB, 4 * MB, 0, 20 * MB),
             [0, 1], 2, hugepages_name=HP2M)}
    policy = StaticMemoryPolicy(machine, {"pod1": {"container1": [B([0, 1], "memory", 2 * GB),
                                                                  B([0, 1], HP2M, 24 * MB)]}})
    spec = get_pod("container2", hugepages="16Mi", hugepages_name=HP2M)
    assert policy.get_topology_hints("pod2", spec, "container2") == {
        "memory": [H([0, 1], False)], HP2M: [H([0, 1], False)]}


def test_no_qualifying_mask_gives_empty_map():
    # calculateHints creates keys only for qualifying masks: {} (the TM reads it as "no
    # preference"), and Allocate then fails to find a default hint
    machine = {0: N(T(GB, 0, GB, 0, GB), None, [0], 1)}
    policy = StaticMemoryPolicy(machine)
    spec = get_pod(hugepages=None)
    assert policy.get_topology_hints("pod1", spec, "container1") == {}
    with pytest.raises(MemoryManagerError, match="failed to get the default NUMA affinity"):
        policy.allocate("pod1", spec, "container1")


def test_min_affinity_size_comes_from_allocatable_not_free():
    # node 0 is big enough but busy: the only qualifying masks are non-preferred
    machine = {0: N(T(2 * GB, 0, 2 * GB, 0, 2 * GB), None, [0], 1),
               1: N(T(512 * MB, 512 * MB, 0, 0, 512 * MB), None, [1], 0),
               2: N(T(512 * MB, 512 * MB, 0, 0, 512 * MB), None, [2], 0)}
    policy = StaticMemoryPolicy(machine)
    assert policy.get_topology_hints("pod1", get_pod(hugepages=None), "container1") == {
        "memory": [H([1, 2], False)]}


# --- Test_getPodRequestedResources and pod-scope hints --------------------------------------

def _req_ctr(name, memory, hugepages, sidecar=False):
    c = {"name": name, "resources": {"requests": {"memory": memory, HP1G: hugepages}}}
    if sidecar:
        c["restartPolicy"] = "Always"
    return c


POD_REQUEST_CASES = [
    ("maximum resources of init containers > total resources of containers",
     [("initContainer1", 1, 1, False), ("initContainer2", 4, 4, False)], [(1, 1), (2, 2)], (4, 4)),
    ("maximum resources of init containers < total resources of containers",
     [("initContainer1", 1, 1, False), ("initContainer2", 3, 3, False)], [(2, 2), (3, 3)], (5, 5)),
    ("calculate different resources independently",
     [("initContainer1", 1, 1, False), ("initContainer2", 3, 4, False)], [(2, 1), (3, 2)], (5, 4)),
    ("maximum resources of init containers > total resources of long running containers, "
     "including restartable init containers",
     [("restartableInit1", 2, 2, True), ("initContainer2", 4, 4, False)], [(1, 1), (2, 2)], (6, 6)),
    ("maximum resources of init containers < total resources of long running containers, "
     "including restartable init containers",
     [("restartableInit1", 2, 2, True), ("initContainer2", 4, 4, False)], [(2, 2), (3, 3)], (7, 7)),
]


@pytest.mark.parametrize("name,inits,apps,expected", POD_REQUEST_CASES,
                         ids=[c[0] for c in POD_REQUEST_CASES])
def test_get_pod_requested_resources(name, inits, apps, expected):
    spec = pod([_req_ctr(f"container{i + 1}", f"{m}Gi", f"{h}Gi") for i, (m, h) in enumerate(apps)],
               [_req_ctr(n, f"{m}Gi", f"{h}Gi", s) for n, m, h, s in inits])
    assert pod_requests(spec) == {"memory": expected[0] * GB, HP1G: expected[1] * GB}


def test_pod_requests_ignore_resources_only_init_containers_ask_for():
    spec = pod([_req_ctr("c", "1Gi", "1Gi")],
               [{"name": "i", "resources": {"requests": {"memory": "2Gi", HP2M: "4Mi"}}}])
    assert pod_requests(spec) == {"memory": 2 * GB, HP1G: GB}


def test_pod_scope_hints_use_pod_total():
    # GetPodTopologyHints: 2 x 1Gi app containers need 2Gi -> only the pair {0,1} qualifies
    machine = {n: N(T(1536 * MB, 1536 * MB, 0, 512 * MB, 2 * GB), None, [n]) for n in range(2)}
    policy = StaticMemoryPolicy(machine)
    spec = pod([ctr("a", hugepages=None), ctr("b", hugepages=None)])
    assert policy.get_pod_topology_hints("pod1", spec) == {"memory": [H([0, 1], True)]}
    assert policy.get_topology_hints("pod1", spec, "a") == {
        "memory": [H([0], True), H([1], True), H([0, 1], False)]}


# --- docs example (kubernetes/website tasks/debug/debug-cluster/topology.md) -----------------

def test_docs_example_150gi_spans_both_nodes():
    machine = {0: N(T(131766128640, 131766128640, 0, 0, 131766128640), None, [0]),
               1: N(T(133034381312, 133034381312, 0, 0, 133034381312), None, [1])}
    policy = StaticMemoryPolicy(machine)
    spec = get_pod(memory="150Gi", hugepages=None, cpu="2")
    mem_hints = policy.get_topology_hints("uid", spec, "container1")
    assert mem_hints == {"memory": [H([0, 1], True)]}
    # with CPU hints {0}, {1} preferred and {0,1} not, every merged candidate is non-preferred
    cpu_hints = {"cpu": [H([0], True), H([1], True), H([0, 1], False)]}
    info = NUMAInfo((0, 1))
    best, admitted = BestEffortPolicy(info).merge([cpu_hints, mem_hints])
    assert (best, admitted) == (H([0, 1], False), True)
    assert RestrictedPolicy(info).merge([cpu_hints, mem_hints])[1] is False
    policy.allocate("uid", spec, "container1", best)
    state = policy.machine_state
    assert (state[0].memory["memory"].reserved, state[0].memory["memory"].free) == (131766128640, 0)
    assert (state[1].memory["memory"].reserved, state[1].memory["memory"].free) == (
        29295144960, 103739236352)
    assert [state[n].number_of_assignments for n in (0, 1)] == [1, 1]
    assert [sorted(state[n].cells) for n in (0, 1)] == [[0, 1], [0, 1]]


# --- helpers -------------------------------------------------------------------------------

@pytest.mark.parametrize("hints,expected", [
    ([], H(None, False)),
    ([H([0, 1], False), H([1], False), H([0, 1], True)], H([0, 1], True)),
    ([H([1], True), H([0], True), H([0, 1], False)], H([0], True)),
    ([H([1], False), H([0, 1], False)], H([1], False)),
])
def test_find_best_hint(hints, expected):
    assert find_best_hint(hints) == expected


@pytest.mark.parametrize("spec,guaranteed", [
    (get_pod(), True),
    (get_pod(burstable=True), False),
    (pod([{"name": "c", "resources": {"limits": {"cpu": "1", "memory": "1Gi"}}}]), True),
    (pod([{"name": "c", "resources": {"limits": {"memory": "1Gi"}}}]), False),
    (pod([{"name": "c"}]), False),
    (pod([ctr("c")], [{"name": "i", "resources": {"requests": {"cpu": "1"}}}]), False),
])
def test_is_guaranteed(spec, guaranteed):
    assert is_guaranteed(spec) is guaranteed


def test_pod_level_resources_are_skipped():
    spec = get_pod()
    spec["resources"] = {"limits": {"cpu": "1", "memory": "2Gi"}}
    policy = StaticMemoryPolicy(_four_small_nodes())
    assert policy.get_topology_hints("p", spec, "container1") is None
    policy.allocate("p", spec, "container1")
    assert policy.assignments == {}


# --- the incremental calculate_hints equals a literal transcription of calculateHints --------

def _reference_hints(state, requested, reusable):
    from numaguard.lint.numa.bitmask import iterate_bit_masks, mask_bits
    nodes = sorted(state)
    min_size = len(nodes)
    out = {}
    for mask in iterate_bit_masks(nodes):
        bits = mask_bits(mask)
        single = len(bits) == 1

        def total(res, attr):
            return sum(getattr(state[n].memory[res], attr) if res in state[n].memory else 0
                       for n in bits)
        if any(total(r, "allocatable") < s for r, s in requested.items()):
            continue
        min_size = min(min_size, len(bits))
        if single and len(state[bits[0]].cells) > 1:
            continue
        if any(not single and state[n].number_of_assignments > 0 and
               (len(state[n].cells) == 1 or sorted(state[n].cells) != bits) for n in bits):
            continue
        if any(total(r, "free") + reusable.get(mask, {}).get(r, 0) < s for r, s in requested.items()):
            continue
        for r in requested:
            out.setdefault(r, []).append(mask)
    return {r: [TopologyHint(m, m.bit_count() == min_size) for m in ms] for r, ms in out.items()}


@pytest.mark.parametrize("seed", range(60))
def test_calculate_hints_matches_reference(seed):
    import random
    rng = random.Random(seed)
    n = rng.randint(1, 5)
    state = {}
    groups = []
    free_nodes = list(range(n))
    rng.shuffle(free_nodes)
    while free_nodes:               # partition into groups: single-node or multi-node
        size = min(len(free_nodes), rng.choice([1, 1, 2, 3]))
        groups.append(sorted(free_nodes[:size]))
        free_nodes = free_nodes[size:]
    for group in groups:
        used = rng.random() < 0.5
        for node in group:
            alloc = rng.choice([1, 2, 4]) * GB
            free = rng.randint(0, alloc // GB) * GB if used else alloc
            hp = rng.choice([0, 1, 2]) * GB
            state[node] = N(T(alloc, free, alloc - free, 0, alloc),
                            T(hp, hp, 0, 0, hp) if hp else None,
                            group if used or len(group) == 1 else [node],
                            rng.randint(1, 3) if used else 0)
    requested = {"memory": rng.randint(1, 6) * GB}
    if rng.random() < 0.5:
        requested[HP1G] = rng.randint(0, 3) * GB
    reusable = {mask_of([0]): {"memory": rng.randint(0, 2) * GB}} if rng.random() < 0.3 else {}
    policy = StaticMemoryPolicy(state, {}, {"p": reusable})
    assert policy.calculate_hints(requested, "p") == _reference_hints(state, requested, reusable)
