"""The kubelet's admission of pods on a node (numaguard.lint.numa.admission) and node capacity
(numaguard.lint.numa.capacity), on the built-in dual-socket-ht profile: 2 NUMA nodes (one per socket)
x 16 cores x 2 threads; CPU i and i+32 are siblings; CPUs 0 and 32 reserved; 128Gi per NUMA
node of which 8Gi are 1Gi hugepages and 1Gi reservedMemory (119Gi pinnable)."""
from __future__ import annotations

import copy

import pytest
import yaml

from conftest import FIXTURES
from numaguard.lint.numa.admission import (KubeletStartupError, NodeState, admit, build_state,
                                 managed_containers)
from numaguard.lint.numa.capacity import pod_capacity
from numaguard.lint.numa.node import load_node_file

GiB = 2**30
PODS = {d["metadata"]["name"]: d for d in
        yaml.safe_load_all((FIXTURES / "simulate" / "admission-pods.yaml").read_text())}


@pytest.fixture(scope="module")
def node():
    return load_node_file("builtin:dual-socket-ht")


def config(node, **changes) -> dict:
    kc = copy.deepcopy(node.kubelet_config)
    for key, value in changes.items():
        if value is None:
            kc.pop(key, None)
        else:
            kc[key] = value
    return kc


def state_for(node, **changes) -> NodeState:
    return build_state(node.topology, config(node, **changes), name=node.name)


def numa_of(node, cpus) -> set[int]:
    return {node.topology.cpu_by_id[c].numa for c in cpus}


# ------------------------------------------------------------------ node state

def test_reserved_cpus_from_reserved_system_cpus(node):
    assert NodeState.from_node(node).reserved_cpus == {0, 32}


def test_reserved_cpus_picked_by_topology_from_kube_and_system_reserved(node):
    # ceil(0.5 + 1) = 2 CPUs, taken like the kubelet's takeByTopology: both threads of core 0
    state = state_for(node, reservedSystemCPUs=None, kubeReserved={"cpu": "500m", "memory": "1Gi"},
                      systemReserved={"cpu": "1", "memory": "768Mi"})
    assert state.reserved_cpus == {0, 32}


def test_strict_cpu_reservation_takes_reserved_cpus_out_of_the_shared_pool(node):
    state = state_for(node, cpuManagerPolicyOptions={"strict-cpu-reservation": "true"})
    assert not state.cpu.default_cpus & {0, 32}
    assert state.free_cpus_by_numa() == {0: 30, 1: 32}


def test_memory_state_subtracts_reserved_memory_and_hugepages(node):
    free = NodeState.from_node(node).free_memory_by_numa()
    assert free[0] == {"memory": 119 * GiB, "hugepages-1Gi": 8 * GiB}


def test_static_policy_without_reserved_cpus_stops_the_kubelet(node):
    with pytest.raises(KubeletStartupError, match="greater than zero"):
        state_for(node, reservedSystemCPUs=None)


def test_more_numa_nodes_than_allowed_stops_the_kubelet():
    nine = load_node_file(FIXTURES / "rules" / "NG212" / "node-nine-numa.yaml")
    with pytest.raises(KubeletStartupError, match="more than 8 NUMA Nodes"):
        build_state(nine.topology, {"topologyManagerPolicy": "restricted"})


# ------------------------------------------------------------------ KEP-5526, scope pod

def test_pod_bubble_slice_and_pod_shared_pool(node):
    state = NodeState.from_node(node)
    p = admit(state, PODS["db"])
    assert p.admitted and p.reason is None and p.preferred is True
    assert p.numa_nodes == [0]
    slice_, shared = set(p.cpus["exclusive"]["db"]), set(p.cpus["podShared"])
    assert len(slice_) == 4 and len(shared) == 2 and not slice_ & shared
    assert set(p.bubble) == slice_ | shared
    assert numa_of(node, p.bubble) == {0} and not set(p.bubble) & {0, 32}
    # whole cores: the slice holds both threads of its cores
    assert all(c + 32 in slice_ for c in slice_ if c < 32)
    assert p.memory == {0: {"memory": 8 * GiB}}
    assert state.free_cpus_by_numa() == {0: 24, 1: 32}


def test_pod_object_and_bare_spec_are_admitted_alike(node):
    a = admit(NodeState.from_node(node), PODS["db"])
    b = admit(NodeState.from_node(node), PODS["db"]["spec"], "db")
    assert a.as_dict() == b.as_dict()


def test_init_container_and_sidecar_slices(node):
    p = admit(NodeState.from_node(node), PODS["with-sidecar"])
    assert p.admitted
    ex = {k: set(v) for k, v in p.cpus["exclusive"].items()}
    bubble = set(p.bubble)
    assert len(bubble) == 8 and all(s <= bubble for s in ex.values())
    # the sidecar keeps its CPUs; the app slice and the pod shared pool come from the rest
    assert not ex["proxy"] & ex["app"]
    assert set(p.cpus["podShared"]) == bubble - ex["proxy"] - ex["app"]
    # the regular init container ran first, so it could use CPUs the others get later
    assert len(ex["migrate"]) == 4


def test_too_wide_for_a_numa_node_is_a_pod_scope_topology_affinity_error(node):
    state = NodeState.from_node(node)
    before = (state.free_cpus_by_numa(), state.free_memory_by_numa())
    p = admit(state, PODS["wide"])
    assert not p.admitted
    assert p.reason == "TopologyAffinityError"
    assert p.message == ("Pod was rejected: Pod Scope pod with pod-level resources failed "
                         "admission under pod-scope topology manager")
    assert (state.free_cpus_by_numa(), state.free_memory_by_numa()) == before
    assert state.placements == {}


def test_empty_pod_shared_pool_rejected_by_topology_under_single_numa_node(node):
    p = admit(NodeState.from_node(node), PODS["no-shared-pool"])
    assert (p.admitted, p.reason) == (False, "TopologyAffinityError")


def test_empty_pod_shared_pool_error_under_best_effort(node):
    p = admit(state_for(node, topologyManagerPolicy="best-effort"), PODS["no-shared-pool"])
    assert (p.admitted, p.reason) == (False, "EmptyPodSharedPoolError")
    assert p.message == ("Pod was rejected: pod rejected, sum of exclusive container cpu requests "
                         "equals pod budget, leaving no cpus for shared containers")


def test_full_pcpus_only_checks_the_pod_total(node):
    state = state_for(node, cpuManagerPolicyOptions={"full-pcpus-only": "true"})
    p = admit(state, PODS["odd-budget"])
    assert (p.admitted, p.reason) == (False, "SMTAlignmentError")
    assert p.message == ("Pod was rejected: SMT Alignment Error: requested 5 cpus not multiple "
                         "cpus per core = 2")
    assert admit(state, PODS["db"]).admitted     # 6 = 3 whole cores


def test_full_pcpus_only_counts_reserved_siblings_as_taken(node):
    # reserving CPU 0 alone makes its sibling 32 unusable: 62 physical CPUs for 100 requested
    state = state_for(node, topologyManagerPolicy="best-effort", reservedSystemCPUs="0",
                      cpuManagerPolicyOptions={"full-pcpus-only": "true"})
    p = admit(state, PODS["huge"])
    assert p.reason == "SMTAlignmentError"
    assert "not enough free physical CPUs: available physical CPUs = 62" in p.message


def test_fractional_pod_cpu_has_no_bubble_but_pinned_memory(node):
    p = admit(NodeState.from_node(node), PODS["fractional"])
    assert p.admitted and p.bubble == [] and p.cpus["exclusive"] == {}
    assert p.memory == {0: {"memory": 4 * GiB}}
    assert any("3500m is not a whole number" in n for n in p.notes)


# ------------------------------------------------------------------ fragmentation

def test_fragmentation_rejects_a_pod_that_fits_the_node_in_aggregate(node):
    state = NodeState.from_node(node)
    placed = [admit(state, PODS["twelve"], f"twelve-{i}") for i in range(3)]
    assert [p.numa_nodes for p in placed] == [[0], [0], [1]]
    taken = [set(p.bubble) for p in placed]
    assert not taken[0] & taken[1] and not taken[1] & taken[2]
    assert state.free_cpus_by_numa() == {0: 6, 1: 20}
    p = admit(state, PODS["twenty-four"])       # 26 CPUs free, but at most 20 on one NUMA node
    assert (p.admitted, p.reason) == (False, "TopologyAffinityError")
    assert state.free_cpus_by_numa() == {0: 6, 1: 20}
    assert len(state.placements) == 3


def test_same_name_twice_is_two_pods(node):
    state = NodeState.from_node(node)
    admit(state, PODS["db"])
    admit(state, PODS["db"])
    assert len(state.placements) == 2 and state.free_cpus_by_numa()[0] == 18


# ------------------------------------------------------------------ gates and policies

def test_pod_level_resource_managers_gate_off_admits_without_alignment(node):
    state = state_for(node, featureGates={"PodLevelResources": True})
    p = admit(state, PODS["db"])
    assert p.admitted and p.cpus == {"exclusive": {}, "podShared": []} and p.memory == {}
    assert any(n.startswith("PodLevelResourceManagers gate is off") for n in p.notes)
    assert state.free_cpus_by_numa() == {0: 30, 1: 32}


def test_pod_level_resources_gate_off_rejects_pod_level_pods(node):
    state = state_for(node, featureGates={"PodLevelResources": False})
    p = admit(state, PODS["db"])
    assert (p.admitted, p.reason) == (False, "PodLevelResourcesNotSupported")
    assert admit(state, PODS["classic-small"]).admitted


def test_policy_none_allocates_without_alignment(node):
    state = state_for(node, topologyManagerPolicy="none")
    p = admit(state, PODS["two-twenties"])
    assert p.admitted and p.preferred is None
    assert len(p.cpus["exclusive"]["left"]) == 20 and len(p.cpus["exclusive"]["right"]) == 20
    assert any("topologyManagerPolicy is none" in n for n in p.notes)


def test_default_kubelet_has_no_managers(node):
    p = admit(build_state(node.topology, {}), PODS["classic-small"])
    assert p.admitted and p.cpus["exclusive"] == {} and p.memory == {}
    assert "cpuManagerPolicy is none: no exclusive CPUs" in p.notes


def test_burstable_pod_gets_nothing_exclusive(node):
    p = admit(NodeState.from_node(node), PODS["burstable"])
    assert p.admitted and p.cpus["exclusive"] == {} and p.memory == {}
    assert any(n.startswith("QoS class Burstable") for n in p.notes)


# ------------------------------------------------------------------ scopes

def test_container_scope_spreads_a_classic_pod_that_pod_scope_rejects(node):
    pod_scope = admit(NodeState.from_node(node), PODS["two-twenties"])
    assert (pod_scope.admitted, pod_scope.reason) == (False, "TopologyAffinityError")
    assert pod_scope.message == ("Pod was rejected: Resources cannot be allocated with "
                                 "Topology locality")
    container_scope = admit(state_for(node, topologyManagerScope="container"),
                            PODS["two-twenties"])
    assert container_scope.admitted and container_scope.numa_nodes == [0, 1]
    assert numa_of(node, container_scope.cpus["exclusive"]["left"]) == {0}
    assert numa_of(node, container_scope.cpus["exclusive"]["right"]) == {1}


def test_container_scope_ignores_the_pod_budget(node):
    p = admit(state_for(node, topologyManagerScope="container"), PODS["db"])
    assert p.admitted and p.cpus["podShared"] == [] and p.bubble == []
    assert len(p.cpus["exclusive"]["db"]) == 4
    assert p.memory == {0: {"memory": 4 * GiB}}          # only the eligible container's slice
    assert any("spec.resources is ignored" in n for n in p.notes)


def test_classic_pod_scope_keeps_every_container_on_one_numa_node(node):
    p = admit(NodeState.from_node(node), PODS["classic-small"])
    assert p.admitted and p.numa_nodes == [0]
    assert p.memory == {0: {"memory": 5 * GiB}}


def test_managed_containers_follow_kep_5526_eligibility():
    from numaguard.lint.k8s.pod_budget import PodAnalysis
    got = {c.name: (c.kind, c.cpus) for c in
           managed_containers(PodAnalysis(PODS["with-sidecar"]["spec"]), True)}
    assert got == {"migrate": ("init", 4), "proxy": ("sidecar", 2), "app": ("app", 4),
                   "logs": ("app", 0)}


# ------------------------------------------------------------------ bigger than the node

@pytest.mark.parametrize("policy,reason", [
    ("single-numa-node", "TopologyAffinityError"),
    ("restricted", "TopologyAffinityError"),
    ("best-effort", "UnexpectedAdmissionError"),
    ("none", "UnexpectedAdmissionError"),
])
def test_pod_bigger_than_the_node_is_rejected_with_a_reason(node, policy, reason):
    p = admit(state_for(node, topologyManagerPolicy=policy), PODS["huge"])
    assert (p.admitted, p.reason) == (False, reason)
    if reason == "UnexpectedAdmissionError":
        assert "not enough cpus available to satisfy request" in p.message


def test_pod_bigger_than_the_node_without_managers_is_out_of_cpu(node):
    p = admit(build_state(node.topology, {}), PODS["huge"])
    assert (p.admitted, p.reason) == (False, "OutOfcpu")
    assert p.message == ("Pod was rejected: Node didn't have enough resource: cpu, requested: "
                         "100000, used: 0, capacity: 64000")


def test_memory_bigger_than_the_node_is_a_memory_manager_error(node):
    p = admit(state_for(node, topologyManagerPolicy="best-effort"), PODS["huge-memory"])
    assert (p.admitted, p.reason) == (False, "UnexpectedAdmissionError")
    assert "[memorymanager]" in p.message


def test_max_pods_limits_admission(node):
    state = state_for(node, maxPods=2)
    assert [admit(state, PODS["burstable"]).admitted for _ in range(3)] == [True, True, False]


# ------------------------------------------------------------------ capacity

def test_capacity_counts_copies_and_leftovers(node):
    cap = pod_capacity(node, PODS["db"])
    assert cap.copies == 10                       # 5 per NUMA node (30 and 32 CPUs)
    assert cap.stranded_cpus == {0: 0, 1: 2}
    assert cap.limited_by.reason == "TopologyAffinityError"
    assert not cap.significant                    # 2 CPUs left: less than one more copy


def test_capacity_flags_stranding_the_scheduler_would_not_see(node):
    cap = pod_capacity(node, {"spec": {
        "resources": {"requests": {"cpu": "20", "memory": "16Gi"},
                      "limits": {"cpu": "20", "memory": "16Gi"}},
        "containers": [{"name": "app"}]}})
    assert cap.copies == 2 and cap.stranded_cpus == {0: 10, 1: 12}
    assert cap.significant
    assert cap.as_dict()["stranded"]["1"]["cpus"] == 12


def test_capacity_of_a_pod_that_never_fits(node):
    cap = pod_capacity(node, PODS["wide"])
    assert cap.copies == 0 and cap.limited_by.reason == "TopologyAffinityError"


def test_capacity_leaves_the_given_state_alone(node):
    state = NodeState.from_node(node)
    admit(state, PODS["db"])
    pod_capacity(state, PODS["db"])
    assert len(state.placements) == 1


def test_a_copy_shares_nothing_that_admission_changes(node):
    state = NodeState.from_node(node)
    admit(state, PODS["db"])
    before = (state.free_cpus_by_numa(), state.free_memory_by_numa(), dict(state.used))
    fresh = state.copy()
    assert admit(fresh, PODS["db"]).admitted
    assert (state.free_cpus_by_numa(), state.free_memory_by_numa(), dict(state.used)) == before
    assert len(state.placements) == 1 and len(fresh.placements) == 2
    assert fresh.free_cpus_by_numa() == {0: 18, 1: 32}       # two 6-CPU pods on NUMA 0
    assert fresh.used["pods"] == 2 and state.used["pods"] == 1


def test_a_copy_of_a_node_with_devices_keeps_its_own_devices():
    gpu_node = load_node_file(FIXTURES / "nodes" / "generator-dual-socket-4gpu.yaml")
    empty = NodeState.from_node(gpu_node)
    pod = {"spec": {"resources": {"limits": {"cpu": "4", "memory": "8Gi"}},
                    "containers": [{"name": "c", "resources": {"limits": {"nvidia.com/gpu": "2"}}}]}}
    fresh = empty.copy()
    assert [admit(fresh, pod).admitted for _ in range(3)] == [True, True, False]
    assert empty.devices.free == {"nvidia.com/gpu": {0: 2, 1: 2}}
    assert fresh.devices.free == {"nvidia.com/gpu": {0: 0, 1: 0}}
    assert empty.holds_nothing and not fresh.holds_nothing


def test_capacity_from_an_empty_state_equals_capacity_from_the_node(node):
    empty = NodeState.from_node(node)
    for name in ("db", "wide", "burstable"):
        assert pod_capacity(empty, PODS[name]).as_dict() == pod_capacity(node, PODS[name]).as_dict()
    assert empty.holds_nothing


# ------------------------------------------------------------------ the kubelet's own vectors
# cpumanager/policy_test.go TestStaticPolicyAllocatePod ("scope: pod, ...", PodLevelResources
# and PodLevelResourceManagers on): topoDualSocketHT (12 CPUs, core i = CPUs i and i+6, even
# cores on socket/NUMA 0), reserved CPU 0, an empty state, the Topology Manager's hint NUMA 0.

def _dual_socket_ht_12():
    from numaguard.lint.numa.topology import CPU, NUMANode, Topology
    cpus = tuple(CPU(id=i, core=i % 6, socket=(i % 6) % 2, numa=(i % 6) % 2) for i in range(12))
    return Topology(cpus=cpus, numa_nodes=(NUMANode(0, 64 * GiB), NUMANode(1, 64 * GiB)))


def _vector_pod(pod_cpus, inits, apps):
    def container(name, cpus=None, sidecar=False):
        c = {"name": name, "image": "x"}
        if cpus is not None:
            amount = {"cpu": cpus, "memory": "1Gi"}
            c["resources"] = {"requests": dict(amount), "limits": dict(amount)}
        if sidecar:
            c["restartPolicy"] = "Always"
        return c
    pod_amount = {"cpu": pod_cpus, "memory": "4Gi"}
    return {"spec": {"resources": {"requests": dict(pod_amount), "limits": dict(pod_amount)},
                     "initContainers": [container(*i) for i in inits],
                     "containers": [container(*a) for a in apps]}}


ALLOCATE_POD_VECTORS = [
    ("guaranteed container", _vector_pod("2", [], [("gu-container", "1")]),
     {"gu-container": {2}}, {0, 1, 3, 4, 5, 6, 7, 9, 10, 11}),
    ("non-guaranteed container", _vector_pod("1", [], [("ngu-container",)]),
     {"ngu-container": {6}}, {0, 1, 2, 3, 4, 5, 7, 8, 9, 10, 11}),
    ("mix of guaranteed and non-guaranteed containers",
     _vector_pod("3", [], [("gu-container-1", "1"), ("gu-container-2", "1"), ("ngu-container",)]),
     {"gu-container-1": {6}, "gu-container-2": {2}, "ngu-container": {8}},
     {0, 1, 3, 4, 5, 7, 9, 10, 11}),
    ("guaranteed standard and init containers",
     _vector_pod("2", [("gu-init-container-1", "1"), ("gu-init-container-2", "1")],
                 [("gu-container-1", "1"), ("gu-container-2", "1")]),
     {"gu-init-container-1": {2}, "gu-init-container-2": {2}, "gu-container-1": {2},
      "gu-container-2": {8}}, {0, 1, 3, 4, 5, 6, 7, 9, 10, 11}),
    ("guaranteed restartable and non-guaranteed init containers",
     _vector_pod("3", [("ngu-init-container-1",), ("gu-init-restartable-2", "1", True),
                       ("ngu-init-container-3",)],
                 [("gu-container-1", "1"), ("ngu-container-2",)]),
     {"ngu-init-container-1": {2, 6, 8}, "gu-init-restartable-2": {6},
      "ngu-init-container-3": {2, 8}, "gu-container-1": {2}, "ngu-container-2": {8}},
     {0, 1, 3, 4, 5, 7, 9, 10, 11}),
    ("non-guaranteed restartable init containers",
     _vector_pod("3", [("ngu-init-container-1",), ("ngu-init-restartable-2", None, True),
                       ("ngu-init-container-3",)],
                 [("gu-container-1", "1"), ("ngu-container-2",)]),
     {"ngu-init-container-1": {2, 6, 8}, "ngu-init-restartable-2": {2, 8},
      "ngu-init-container-3": {2, 6, 8}, "gu-container-1": {6}, "ngu-container-2": {2, 8}},
     {0, 1, 3, 4, 5, 7, 9, 10, 11}),
]

VECTOR_KUBELET = {"featureGates": {"PodLevelResources": True, "PodLevelResourceManagers": True},
                  "cpuManagerPolicy": "static", "reservedSystemCPUs": "0",
                  "topologyManagerPolicy": "single-numa-node", "topologyManagerScope": "pod"}


@pytest.mark.parametrize("description,pod,assignments,default_cpus", ALLOCATE_POD_VECTORS,
                         ids=[v[0] for v in ALLOCATE_POD_VECTORS])
def test_kubelet_allocate_pod_vectors(description, pod, assignments, default_cpus):
    state = build_state(_dual_socket_ht_12(), VECTOR_KUBELET)
    p = admit(state, pod, "pod1")
    assert p.admitted and p.hint == [0]
    assert {k: set(v) for k, v in state.cpu.assignments["pod1"].items()} == assignments
    assert state.cpu.default_cpus == default_cpus


def test_kubelet_vector_empty_pod_shared_pool():
    pod = _vector_pod("2", [], [("gu-container-1", "1"), ("gu-container-2", "1"),
                                ("ngu-container",)])
    state = build_state(_dual_socket_ht_12(), {**VECTOR_KUBELET,
                                               "topologyManagerPolicy": "best-effort"})
    p = admit(state, pod, "pod1")
    assert (p.admitted, p.reason) == (False, "EmptyPodSharedPoolError")
    assert state.cpu.default_cpus == set(range(12)) and state.cpu.assignments == {}


# ------------------------------------------------------------------ the NUMA rules' edges

def _pod_target(spec):
    from numaguard.lint.model import ObjectRef
    from numaguard.lint.objects import PodTarget
    return PodTarget(ref=ObjectRef("v1", "Pod", None, "p"), spec=spec, spec_path=("spec",),
                     annotations={}, metadata_path=("metadata",))


def _ctx(node, kubelet_config=None):
    from numaguard.lint.rules.base import LintContext
    return LintContext(node=node, kubelet_config=kubelet_config)


def test_numa_rules_are_silent_without_a_kubelet_config(node):
    from dataclasses import replace
    from numaguard.lint.rules.numa import numa_no_fit, numa_stranded_capacity, smt_alignment
    bare = replace(node, kubelet_config=None)
    target = _pod_target(PODS["wide"]["spec"])
    for rule in (numa_no_fit, numa_stranded_capacity, smt_alignment):
        assert list(rule.check(target, _ctx(bare))) == []
    # ... and use the context's configuration when the node has none
    assert list(numa_no_fit.check(target, _ctx(bare, node.kubelet_config)))


def test_numa_rules_are_silent_when_the_kubelet_would_not_start(node):
    from dataclasses import replace
    from numaguard.lint.rules.numa import numa_no_fit
    broken = replace(node, kubelet_config=config(node, reservedSystemCPUs=None))
    assert list(numa_no_fit.check(_pod_target(PODS["wide"]["spec"]), _ctx(broken))) == []


def test_stranding_shortcut_for_pods_that_reach_max_pods_first():
    from numaguard.lint.rules.numa import _pods_limit_comes_first, numa_stranded_capacity
    eight = load_node_file("builtin:eight-numa")
    state = build_state(eight.topology, eight.kubelet_config)
    small = {"resources": {"requests": {"cpu": "2", "memory": "1Gi"},
                           "limits": {"cpu": "2", "memory": "1Gi"}},
             "containers": [{"name": "a"}]}
    assert _pods_limit_comes_first(state, small)            # 127 copies by CPU > 110 pods
    assert not _pods_limit_comes_first(state, PODS["twenty-four"]["spec"])
    assert list(numa_stranded_capacity.check(_pod_target(small), _ctx(eight))) == []
    # the shortcut agrees with the full simulation
    cap = pod_capacity(eight, {"spec": small})
    assert cap.limited_by.reason == "OutOfpods" and not cap.significant


def test_numa_nodes_over_limit_needs_a_policy_other_than_none():
    from numaguard.lint.rules.numa import numa_nodes_over_limit
    nine = load_node_file(FIXTURES / "rules" / "NG212" / "node-nine-numa.yaml")
    found = list(numa_nodes_over_limit.check({"topologyManagerPolicy": "best-effort"},
                                             _ctx(nine)))
    assert len(found) == 1 and "9 NUMA nodes" in found[0].message
    assert list(numa_nodes_over_limit.check({}, _ctx(nine))) == []
