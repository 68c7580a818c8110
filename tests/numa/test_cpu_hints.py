"""CPU topology hints, ported from kubernetes/kubernetes
pkg/kubelet/cm/cpumanager/topology_hints_test.go: TestPodGuaranteedCPUs, TestGetTopologyHints /
TestGetPodTopologyHints (both over returnTestCases(), machine returnMachineInfo()) and
TestGetPodTopologyHintsWithPolicyOptions. Requests are the ints the kubelet derives from the pod
(guaranteedCPUs / podGuaranteedCPUs); hint lists are compared as sets, as the kubelet's tests
sort both sides first.
"""
from __future__ import annotations

import pytest
from kubelet_topologies import BY_NAME, HINTS_MACHINE

from numaguard.lint.numa.cpu_hints import (CPUHint, generate_cpu_topology_hints, guaranteed_cpus,
                                 iterate_numa_masks, pod_guaranteed_cpus)
from numaguard.lint.numa.cpus import StaticPolicy
from numaguard.lint.k8s.cpuset import parse_cpuset


def mask(*numa: int) -> int:
    return sum(1 << n for n in numa)


def hints(*pairs: tuple[tuple[int, ...], bool]) -> set[CPUHint]:
    return {CPUHint(mask(*numa), preferred) for numa, preferred in pairs}


# --- TestPodGuaranteedCPUs (init: (cpus, restartable); non-Guaranteed pods give 0 per container)
SIDECAR = True
POD_CPUS = [
    ("TestCase01: if requestedCPU == 0, Pod is not Guaranteed Qos", [(0, False)], [0], 0),
    ("TestCase02: if requestedCPU == 0, Pod is not Guaranteed Qos", [(0, False)], [0], 0),
    ("TestCase03: if requestedCPU == 0, Pod is not Guaranteed Qos", [(0, False)], [0], 0),
    ("TestCase04: Guaranteed Pod requests 2 CPUs", [(2, False)], [2], 2),
    ("TestCase05: Guaranteed Pod requests 5 CPUs", [(5, False)], [5], 5),
    ("TestCase06: The number of CPUs requested By app is bigger than the number of CPUs requested "
     "by init", [(2, False)], [5], 5),
    ("TestCase07: The number of CPUs requested By init is bigger than the number of CPUs "
     "requested by app", [(5, False)], [2], 5),
    ("TestCase08: Sum of CPUs requested by multiple containers", [(2, False), (4, False)], [2, 4],
     6),
    ("TestCase09: restartable init container + regular container", [(1, SIDECAR)], [1], 2),
    ("TestCase10: multiple restartable init containers",
     [(5, False), (1, SIDECAR), (2, SIDECAR), (3, SIDECAR)], [1], 7),
    ("TestCase11: multiple restartable and regular init containers",
     [(5, False), (1, SIDECAR), (2, SIDECAR), (5, False), (3, SIDECAR)], [1], 8),
    ("TestCase12: restartable init, regular init and regular container",
     [(10, SIDECAR), (200, False)], [100], 210),
]


@pytest.mark.parametrize("desc,init,app,expected", POD_CPUS, ids=[c[0] for c in POD_CPUS])
def test_pod_guaranteed_cpus(desc, init, app, expected):
    assert pod_guaranteed_cpus(init, app) == expected


# --- returnTestCases(): (name, request, default cpuset, existing assignment, expected hints)
N0, N1, BOTH = (0,), (1,), (0, 1)
RETURN_TEST_CASES = [
    ("Request 2 CPUs, 4 available on NUMA 0, 6 available on NUMA 1", 2, "2-11", None,
     hints((N0, True), (N1, True), (BOTH, False))),
    ("Request 5 CPUs, 4 available on NUMA 0, 6 available on NUMA 1", 5, "2-11", None,
     hints((N1, True), (BOTH, False))),
    ("Request 7 CPUs, 4 available on NUMA 0, 6 available on NUMA 1", 7, "2-11", None,
     hints((BOTH, True))),
    ("Request 11 CPUs, 4 available on NUMA 0, 6 available on NUMA 1", 11, "2-11", None, set()),
    ("Request 2 CPUs, 1 available on NUMA 0, 1 available on NUMA 1", 2, "0,3", None,
     hints((BOTH, False))),
    ("Request more CPUs than available", 5, "0-3", None, set()),
    ("Regenerate Single-Node NUMA Hints if already allocated 1/2", 2, "", "0,6",
     hints((N0, True), (BOTH, False))),
    ("Regenerate Single-Node NUMA Hints if already allocated 2/2", 2, "", "3,9",
     hints((N1, True), (BOTH, False))),
    ("Regenerate Cross-NUMA Hints if already allocated", 11, "", "0-10", hints((BOTH, True))),
    ("Requested less than already allocated", 2, "", "0,6,3,9", set()),
    ("Requested more than already allocated", 11, "", "0,6,3,9", set()),
]


def _policy_with(default: str, assigned: str | None) -> StaticPolicy:
    # the hint tests build staticPolicy{topology} directly: nothing reserved
    policy = StaticPolicy(HINTS_MACHINE, num_reserved_cpus=0)
    policy.default_cpus = parse_cpuset(default)
    if assigned is not None:
        policy.assignments = {"fakePod": {"fakeContainer": parse_cpuset(assigned)}}
    return policy


@pytest.mark.parametrize("desc,request_,default,assigned,expected", RETURN_TEST_CASES,
                         ids=[c[0] for c in RETURN_TEST_CASES])
def test_get_topology_hints(desc, request_, default, assigned, expected):
    got = _policy_with(default, assigned).get_topology_hints("fakePod", "fakeContainer", request_)
    assert set(got) == expected
    assert len(got) == len(expected)


@pytest.mark.parametrize("desc,request_,default,assigned,expected", RETURN_TEST_CASES,
                         ids=[c[0] for c in RETURN_TEST_CASES])
def test_get_pod_topology_hints(desc, request_, default, assigned, expected):
    got = _policy_with(default, assigned).get_pod_topology_hints(
        "fakePod", request_, [("fakeContainer", request_)])
    assert set(got) == expected
    assert len(got) == len(expected)


# --- TestGetPodTopologyHintsWithPolicyOptions (topoDualSocketMultiNumaPerSocketHT) ------------
WITH_OPTIONS = [
    ("AlignBySocket:false, Preferred hints does not contains socket aligned hints", 2, "2,3,11",
     "false", hints(((0,), True), ((0, 1), False), ((0, 2), False), ((0, 3), False),
                    ((0, 1, 2), False), ((0, 1, 3), False), ((0, 2, 3), False),
                    ((0, 1, 2, 3), False))),
    ("AlignBySocket:true Preferred hints contains socket aligned hints", 2, "2,3,11", "true",
     hints(((0,), True), ((0, 1), True), ((0, 2), False), ((0, 3), False),
           ((0, 1, 2), False), ((0, 1, 3), False), ((0, 2, 3), False), ((0, 1, 2, 3), False))),
    ("AlignBySocket:true Preferred hints are spread across socket since 2 sockets are required",
     41, "0-28,40-57", "true", hints(((0, 1, 2), True), ((0, 1, 2, 3), True))),
]


@pytest.mark.parametrize("desc,request_,default,align,expected", WITH_OPTIONS,
                         ids=[c[0] for c in WITH_OPTIONS])
def test_pod_topology_hints_with_policy_options(desc, request_, default, align, expected):
    policy = StaticPolicy(BY_NAME["topoDualSocketMultiNumaPerSocketHT"], num_reserved_cpus=0,
                          options={"align-by-socket": align})
    policy.default_cpus = parse_cpuset(default)
    got = policy.get_pod_topology_hints("fakePod", request_, [("fakeContainer", request_)])
    assert set(got) == expected
    assert len(got) == len(expected)


# --- further behaviour from policy_static.go ---------------------------------------------------
def test_no_guaranteed_cpus_means_no_preference():
    policy = _policy_with("0-11", None)
    assert policy.get_topology_hints("fakePod", "fakeContainer", 0) is None
    assert policy.get_pod_topology_hints("fakePod", 0, []) is None


def test_min_affinity_comes_from_capacity_not_free_cpus():
    # docs §2.5 vector cpu-hints-005: NUMA 0 could hold 2 CPUs on an empty machine, so the only
    # hint left ({0,1}) is not preferred
    got = generate_cpu_topology_hints(HINTS_MACHINE, parse_cpuset("0,3"), (), 2)
    assert got == [CPUHint(mask(0, 1), False)]


def test_reusable_cpus_pin_the_mask():
    # every reusable CPU must lie on the mask; reusable CPUs count towards the request
    got = generate_cpu_topology_hints(HINTS_MACHINE, parse_cpuset("1,2,4,5"), parse_cpuset("3"), 2)
    assert set(got) == hints((N1, True), (BOTH, False))


def test_pod_hints_count_assigned_containers_as_reusable():
    policy = _policy_with("1-5,7-11", None)
    policy.assignments = {"fakePod": {"init": parse_cpuset("0,6")}}
    got = policy.get_pod_topology_hints("fakePod", 4, [("init", 2), ("app", 2)])
    # the init container's CPUs are on NUMA 0, so every hint must include NUMA 0
    assert set(got) == hints((N0, True), (BOTH, False))


def test_masks_in_iterate_bitmasks_order():
    assert list(iterate_numa_masks([0, 1, 2])) == [0b001, 0b010, 0b100, 0b011, 0b101, 0b110,
                                                  0b111]
    got = generate_cpu_topology_hints(HINTS_MACHINE, parse_cpuset("0-11"), (), 1)
    assert [h.mask for h in got] == [1, 2, 3]
    assert got[0].numa_nodes == (0,)


# policy_static_test.go makePod requests ("2000m", "977m", ...) through guaranteedCPUs
@pytest.mark.parametrize("request_,guaranteed,expected", [
    ("2000m", True, 2), ("1000m", True, 1), ("977m", True, 0), ("1.5", True, 0), ("72", True, 72),
    ("1.9995", True, 2), ("2", False, 0), (None, True, 0), ("0", True, 0),
])
def test_guaranteed_cpus(request_, guaranteed, expected):
    assert guaranteed_cpus(request_, guaranteed) == expected
