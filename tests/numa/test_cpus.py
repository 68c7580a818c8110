"""The static policy's state and allocation, ported from kubernetes/kubernetes
pkg/kubelet/cm/cpumanager/policy_static_test.go: TestStaticPolicyAdd (optionsInsensitive cases
run with and without full-pcpus-only, defaultOptions, smtalignOption and alignBySocketOption
cases), TestStaticPolicyReuseCPUs, TestStaticPolicyRemove, TestTopologyAwareAllocateCPUs, and
the reservation rules of NewStaticPolicy / cpu_manager.go. Requests are the ints guaranteedCPUs
returns (a non-Guaranteed or non-integer container asks for 0).
"""
from __future__ import annotations

import pytest
from kubelet_topologies import BY_NAME, QUAD_SOCKET_FOUR_WAY_HT

from numaguard.lint.numa.cpu_assignment import CPUManagerError, NotEnoughCPUsError
from numaguard.lint.numa.cpu_hints import CPUHint
from numaguard.lint.numa.cpus import (APP_CONTAINER, INIT_CONTAINER, SIDECAR_CONTAINER,
                            CPUManagerConfigError, CPUManagerStateError, SMTAlignmentError,
                            StaticPolicy,
                            StaticPolicyOptions, reserved_cpu_count)
from numaguard.lint.k8s.cpuset import parse_cpuset


def cs(text: str) -> frozenset[int]:
    return parse_cpuset(text)


ALL_QUAD = frozenset(range(288))
SOCK0 = frozenset(c.id for c in QUAD_SOCKET_FOUR_WAY_HT.cpus if c.socket == 0)
SOCK1 = frozenset(c.id for c in QUAD_SOCKET_FOUR_WAY_HT.cpus if c.socket == 1)
FULL_PCPUS = {"full-pcpus-only": "true"}


def policy_for(topo: str, num_reserved: int, default: frozenset[int],
               assignments: dict | None = None, options=None,
               reserved: str | None = None) -> StaticPolicy:
    policy = StaticPolicy(BY_NAME[topo], num_reserved_cpus=num_reserved,
                          reserved_system_cpus=reserved, options=options)
    policy.default_cpus = frozenset(default)
    policy.assignments = {pod: dict(containers) for pod, containers in (assignments or {}).items()}
    return policy


# --- TestStaticPolicyStart (validateState), topoDualSocketHT --------------------------------
START = [
    ("non-corrupted state", 0, {"fakePod": {"0": cs("0")}}, cs("1-11"), cs("1-11"), None),
    ("empty cpuset", 1, {}, frozenset(), cs("0-11"), None),
    ("reserved cores 0 & 6 are not present in available cpuset", 2, {}, cs("0,1"), None,
     'not all reserved cpus: "0,6" are present in defaultCpuSet: "0-1"'),
    ("assigned core 2 is still present in available cpuset", 0, {"fakePod": {"0": cs("0-2")}},
     cs("2-11"), None, 'pod: fakePod, container: 0 cpuset: "0-2" overlaps with default cpuset '
                       '"2-11"'),
    ("core 12 is not present in topology but is in state cpuset", 0,
     {"fakePod": {"0": cs("0-2"), "1": cs("3,4")}}, cs("5-12"), None,
     'current set of available CPUs "0-11" doesn\'t match with CPUs in state "0-12"'),
    ("core 11 is present in topology but is not in state cpuset", 0,
     {"fakePod": {"0": cs("0-2"), "1": cs("3,4")}}, cs("5-10"), None,
     'current set of available CPUs "0-11" doesn\'t match with CPUs in state "0-10"'),
]


@pytest.mark.parametrize("desc,reserved,assignments,default,expected,err", START,
                         ids=[c[0] for c in START])
def test_static_policy_start(desc, reserved, assignments, default, expected, err):
    policy = StaticPolicy(BY_NAME["topoDualSocketHT"], num_reserved_cpus=reserved)
    if err:
        with pytest.raises(CPUManagerStateError) as exc:
            policy.load_state(default, assignments)
        assert str(exc.value) == err
        return
    policy.load_state(default, assignments)
    assert policy.default_cpus == expected


def test_static_policy_start_with_strict_reservation():
    policy = StaticPolicy(BY_NAME["topoDualSocketHT"], num_reserved_cpus=2,
                          options={"strict-cpu-reservation": "true"})
    policy.load_state(frozenset())
    assert policy.default_cpus == cs("1-5,7-11")
    with pytest.raises(CPUManagerStateError, match='some of strictly reserved cpus: "0,6" are '
                                                   'present in defaultCpuSet: "0-11"'):
        policy.load_state(cs("0-11"))


# (description, topology, reserved count, assignments, default set, container, cpus, expected)
OPTIONS_INSENSITIVE = [
    ("GuPodMultipleCores, SingleSocketHT, ExpectAllocOneCore", "topoSingleSocketHT", 1,
     {"fakePod": {"fakeContainer100": cs("2,3,6,7")}}, cs("0,1,4,5"), "fakeContainer3", 2,
     cs("1,5")),
    ("GuPodMultipleCores, DualSocketHT, ExpectAllocOneSocket", "topoDualSocketHT", 1,
     {"fakePod": {"fakeContainer100": cs("2")}}, cs("0,1,3-11"), "fakeContainer3", 6,
     cs("1,3,5,7,9,11")),
    ("GuPodMultipleCores, DualSocketHT, ExpectAllocThreeCores", "topoDualSocketHT", 1,
     {"fakePod": {"fakeContainer100": cs("1,5")}}, cs("0,2-4,6-11"), "fakeContainer3", 6,
     cs("2-4,8-10")),
    ("GuPodMultipleCores, DualSocketNoHT, ExpectAllocOneSocket", "topoDualSocketNoHT", 1,
     {"fakePod": {"fakeContainer100": frozenset()}}, cs("0,1,3-7"), "fakeContainer1", 4,
     cs("4-7")),
    ("GuPodMultipleCores, DualSocketNoHT, ExpectAllocFourCores", "topoDualSocketNoHT", 1,
     {"fakePod": {"fakeContainer100": cs("4,5")}}, cs("0,1,3,6,7"), "fakeContainer1", 4,
     cs("1,3,6,7")),
    ("GuPodMultipleCores, DualSocketHT, ExpectAllocOneSocketOneCore", "topoDualSocketHT", 1,
     {"fakePod": {"fakeContainer100": cs("2")}}, cs("0,1,3-11"), "fakeContainer3", 8,
     cs("1,3-5,7,9-11")),
    ("NonGuPod, SingleSocketHT, NoAlloc", "topoSingleSocketHT", 1, {}, cs("0-7"),
     "fakeContainer1", 0, None),
    ("GuPodNonIntegerCore, SingleSocketHT, NoAlloc", "topoSingleSocketHT", 1, {}, cs("0-7"),
     "fakeContainer4", 0, None),
    ("GuPodMultipleCores, topoQuadSocketFourWayHT, ExpectAllocSock0", "topoQuadSocketFourWayHT",
     0, {"fakePod": {"fakeContainer100": cs("3,11,4-7")}}, ALL_QUAD - cs("3,11,4-7"),
     "fakeContainer5", 72, SOCK0),
    ("GuPodMultipleCores, topoQuadSocketFourWayHT, ExpectAllocAllFullCoresFromThreeSockets",
     "topoQuadSocketFourWayHT", 0,
     {"fakePod": {"fakeContainer100": ALL_QUAD - cs("1,25,13,38,2,9,11,35,23,48,12,51,53,173,"
                                                     "113,233,54,61")}},
     cs("1,25,13,38,2,9,11,35,23,48,12,51,53,173,113,233,54,61"), "fakeCcontainer5", 12,
     cs("1,25,13,38,11,35,23,48,53,173,113,233")),
    ("GuPodMultipleCores, topoQuadSocketFourWayHT, ExpectAllocAllSock1+FullCore",
     "topoQuadSocketFourWayHT", 0,
     {"fakePod": {"fakeContainer100": ALL_QUAD - (SOCK1 | cs("10,34,22,47,53,173,61,181,108,"
                                                             "228,115,235"))}},
     SOCK1 | cs("10,34,22,47,53,173,61,181,108,228,115,235"), "fakeContainer5", 76,
     SOCK1 | cs("10,34,22,47")),
]


@pytest.mark.parametrize("options", [None, FULL_PCPUS], ids=["no-options", "full-pcpus-only"])
@pytest.mark.parametrize("desc,topo,reserved,assignments,default,container,cpus,expected",
                         OPTIONS_INSENSITIVE, ids=[c[0] for c in OPTIONS_INSENSITIVE])
def test_static_policy_add_options_insensitive(options, desc, topo, reserved, assignments,
                                               default, container, cpus, expected):
    policy = policy_for(topo, reserved, default, assignments, options)
    got = policy.allocate("fakePod", container, cpus)
    if expected is None:
        assert got == frozenset()
        assert policy.get_cpuset("fakePod", container) is None
        return
    assert got == expected
    assert policy.get_cpuset("fakePod", container) == expected
    assert not got & policy.default_cpus


DEFAULT_OPTIONS = [
    ("GuPodSingleCore, SingleSocketHT, ExpectAllocOneCPU", "topoSingleSocketHT", 1, {},
     cs("0-7"), "fakeContainer2", 1, cs("4"), None),                 # sibling of the reserved CPU
    ("GuPodMultipleCores, topoQuadSocketFourWayHT, ExpectAllocCPUs", "topoQuadSocketFourWayHT",
     0, {"fakePod": {"fakeContainer100": ALL_QUAD - cs("10,11,53,37,55,67,52")}},
     cs("10,11,53,67,52"), "fakeContainer5", 5, cs("10,11,53,67,52"), None),
    ("GuPodSingleCore, SingleSocketHT, ExpectError", "topoSingleSocketHT", 1, {}, cs("0-7"),
     "fakeContainer2", 8, None,
     "not enough cpus available to satisfy request: requested=8, available=7"),
    ("GuPodMultipleCores, SingleSocketHT, ExpectSameAllocation", "topoSingleSocketHT", 1,
     {"fakePod": {"fakeContainer3": cs("2,3,6,7")}}, cs("0,1,4,5"), "fakeContainer3", 4,
     cs("2,3,6,7"), None),
    ("GuPodMultipleCores, DualSocketHT, NoAllocExpectError", "topoDualSocketHT", 1,
     {"fakePod": {"fakeContainer100": cs("1-3")}}, cs("0,4-11"), "fakeContainer5", 10, None,
     "not enough cpus available to satisfy request: requested=10, available=8"),
    ("GuPodMultipleCores, SingleSocketHT, NoAllocExpectError", "topoSingleSocketHT", 1,
     {"fakePod": {"fakeContainer100": cs("1-6")}}, cs("0,7"), "fakeContainer5", 2, None,
     "not enough cpus available to satisfy request: requested=2, available=1"),
    ("GuPodMultipleCores, topoQuadSocketFourWayHT, NoAlloc", "topoQuadSocketFourWayHT", 0,
     {"fakePod": {"fakeContainer100": ALL_QUAD - cs("10,11,53,37,55,67,52")}},
     cs("10,11,53,37,55,67,52"), "fakeContainer5", 76, None,
     "not enough cpus available to satisfy request: requested=76, available=7"),
]


@pytest.mark.parametrize("desc,topo,reserved,assignments,default,container,cpus,expected,err",
                         DEFAULT_OPTIONS, ids=[c[0] for c in DEFAULT_OPTIONS])
def test_static_policy_add_default_options(desc, topo, reserved, assignments, default, container,
                                           cpus, expected, err):
    policy = policy_for(topo, reserved, default, assignments)
    if err:
        before = policy.default_cpus
        with pytest.raises(NotEnoughCPUsError) as exc:
            policy.allocate("fakePod", container, cpus)
        assert str(exc.value) == err
        assert policy.get_cpuset("fakePod", container) is None
        assert policy.default_cpus == before
        return
    got = policy.allocate("fakePod", container, cpus)
    assert got == expected
    assert not got & policy.default_cpus


# smtalignOptionTestCases: (desc, topo, reserved count, explicit reserved, default, cpus,
#                           expected set or error message)
SMT_ALIGN = [
    ("GuPodSingleCore, SingleSocketHT, ExpectAllocOneCPU", "topoSingleSocketHT", 1, None,
     cs("0-7"), 1, "SMT Alignment Error: requested 1 cpus not multiple cpus per core = 2"),
    ("GuPodMultipleCores, topoQuadSocketFourWayHT, ExpectAllocOneCPUs",
     "topoQuadSocketFourWayHT", 8, None, ALL_QUAD, 15,
     "SMT Alignment Error: requested 15 cpus not multiple cpus per core = 4"),
    ("GuPodManyCores, topoDualSocketHT, ExpectDoNotAllocPartialCPU", "topoDualSocketHT", 2,
     "1,6", cs("0,2-5,7-11"), 10,
     "SMT Alignment Error: not enough free physical CPUs: available physical CPUs = 8, "
     "requested CPUs = 10, CPUs per core = 2"),
    ("GuPodManyCores, topoDualSocketHT, AutoReserve, ExpectAllocAllCPUs", "topoDualSocketHT", 2,
     None, cs("1-5,7-11"), 10, cs("1-5,7-11")),
    ("GuPodManyCores, topoDualSocketHT, ExpectAllocAllCPUs", "topoDualSocketHT", 2, "0,6",
     cs("1-5,7-11"), 10, cs("1-5,7-11")),
]


@pytest.mark.parametrize("desc,topo,num_reserved,reserved,default,cpus,expected", SMT_ALIGN,
                         ids=[c[0] for c in SMT_ALIGN])
def test_static_policy_add_full_pcpus_only(desc, topo, num_reserved, reserved, default, cpus,
                                           expected):
    policy = policy_for(topo, num_reserved, default, options=FULL_PCPUS, reserved=reserved)
    if isinstance(expected, str):
        with pytest.raises(SMTAlignmentError) as exc:
            policy.allocate("fakePod", "fakeContainer", cpus)
        assert str(exc.value) == expected
        assert exc.value.reason == "SMTAlignmentError"
        assert policy.get_cpuset("fakePod", "fakeContainer") is None
        return
    assert policy.allocate("fakePod", "fakeContainer", cpus) == expected


ALIGN_BY_SOCKET = [
    ("Align by socket: true, cpu's within same socket of numa in hint are part of allocation",
     "true", cs("2,11")),
    ("Align by socket: false, cpu's are taken strictly from NUMA nodes in hint", "false",
     cs("2,21")),
]


@pytest.mark.parametrize("desc,align,expected", ALIGN_BY_SOCKET,
                         ids=[c[0] for c in ALIGN_BY_SOCKET])
def test_static_policy_add_align_by_socket(desc, align, expected):
    policy = policy_for("topoDualSocketMultiNumaPerSocketHT", 1, cs("2,11,21,22"),
                        options={"align-by-socket": align})
    got = policy.allocate("fakePod", "fakeContainer2", 2, affinity=0b101)   # NUMA {0,2}
    assert got == expected


def test_static_policy_reuse_cpus():
    # TestStaticPolicyReuseCPUs "SingleSocketHT, DeAllocOneInitContainer"
    policy = policy_for("topoSingleSocketHT", 0, cs("0-7"))
    assert policy.allocate("fakePod", "initContainer-0", 4, kind=INIT_CONTAINER) == cs("0,1,4,5")
    assert policy.allocate("fakePod", "appContainer-0", 2, kind=APP_CONTAINER) == cs("0,4")
    assert policy.default_cpus == cs("2,3,6,7")
    policy.remove_container("fakePod", "initContainer-0")
    assert policy.default_cpus == cs("1-3,5-7")
    assert policy.get_cpuset("fakePod", "initContainer-0") is None


REMOVE = [
    ("SingleSocketHT, DeAllocOneContainer", {"fakeContainer1": cs("1-3")}, cs("4-7"),
     "fakeContainer1", cs("1-7")),
    ("SingleSocketHT, DeAllocOneContainer, BeginEmpty",
     {"fakeContainer1": cs("1-3"), "fakeContainer2": cs("4-7")}, frozenset(), "fakeContainer1",
     cs("1-3")),
    ("SingleSocketHT, DeAllocTwoContainer",
     {"fakeContainer1": cs("1,3,5"), "fakeContainer2": cs("2,4")}, cs("6,7"), "fakeContainer1",
     cs("1,3,5-7")),
    ("SingleSocketHT, NoDeAlloc", {"fakeContainer1": cs("1,3,5")}, cs("2,4,6,7"),
     "fakeContainer2", cs("2,4,6,7")),
]


@pytest.mark.parametrize("desc,assigned,default,container,expected", REMOVE,
                         ids=[c[0] for c in REMOVE])
def test_static_policy_remove(desc, assigned, default, container, expected):
    policy = policy_for("topoSingleSocketHT", 0, default, {"fakePod": assigned})
    policy.remove_container("fakePod", container)
    assert policy.default_cpus == expected
    assert policy.get_cpuset("fakePod", container) is None


TOPOLOGY_AWARE = [
    ("Request 2 CPUs, No BitMask", 2, None, cs("0,6")),
    ("Request 2 CPUs, BitMask on Socket 0", 2, 0b01, cs("0,6")),
    ("Request 2 CPUs, BitMask on Socket 1", 2, 0b10, cs("1,7")),
    ("Request 8 CPUs, BitMask on Socket 0", 8, 0b01, cs("0,6,2,8,4,10,1,7")),
    ("Request 8 CPUs, BitMask on Socket 1", 8, 0b10, cs("1,7,3,9,5,11,0,6")),
]


@pytest.mark.parametrize("desc,cpus,affinity,expected", TOPOLOGY_AWARE,
                         ids=[c[0] for c in TOPOLOGY_AWARE])
def test_topology_aware_allocate_cpus(desc, cpus, affinity, expected):
    # TestTopologyAwareAllocateCPUs: the hint is honoured first, the rest spills outside it
    policy = policy_for("topoDualSocketHT", 0, cs("0-11"))
    assert policy.allocate_cpus(cpus, affinity) == expected
    assert policy.default_cpus == cs("0-11") - expected


# --- reservation (NewStaticPolicy, cpu_manager.go NewManager, server.go) -----------------------
def test_reserved_cpus_are_taken_by_topology():
    # "Given a system with 8 CPUs available and HT enabled, if numReservedCPUs=2, then
    # reserved={0,4}" (policy_static.go NewStaticPolicy)
    policy = StaticPolicy(BY_NAME["topoSingleSocketHT"], num_reserved_cpus=2)
    assert policy.reserved == cs("0,4")
    assert policy.default_cpus == cs("0-7")            # reserved CPUs stay in the shared pool
    assert policy.available_cpus() == cs("1-3,5-7")


def test_reserved_count_from_kube_and_system_reserved():
    assert reserved_cpu_count("500m", "1") == 2
    assert reserved_cpu_count("100m", None) == 1
    assert reserved_cpu_count(None, "2") == 2
    policy = StaticPolicy(BY_NAME["topoDualSocketHT"], kube_reserved_cpu="500m",
                          system_reserved_cpu="1")
    assert policy.reserved == cs("0,6")
    with pytest.raises(CPUManagerConfigError, match="greater than zero"):
        StaticPolicy(BY_NAME["topoDualSocketHT"])


def test_reserved_cpus_use_the_policys_own_options():
    # packed fills NUMA node 0 and adds a core of node 1; distribute-cpus-across-numa
    # splits the reservation 4 + 4
    packed = StaticPolicy(BY_NAME["topoDualSocketHT"], num_reserved_cpus=8)
    assert packed.reserved == cs("0-2,4,6-8,10")
    policy = StaticPolicy(BY_NAME["topoDualSocketHT"], num_reserved_cpus=8,
                          options={"distribute-cpus-across-numa": "true"})
    assert policy.reserved == cs("0-3,6-9")
    spread = StaticPolicy(BY_NAME["topoSingleSocketHT"], num_reserved_cpus=2,
                          options={"distribute-cpus-across-cores": "true"})
    assert spread.reserved == cs("0,1")


def test_reserved_system_cpus_win_and_must_exist():
    policy = StaticPolicy(BY_NAME["topoDualSocketHT"], reserved_system_cpus="0-1",
                          kube_reserved_cpu="4")
    assert policy.reserved == cs("0,1")
    assert policy.reserved_physical == cs("0,1,6,7")
    with pytest.raises(CPUManagerConfigError) as exc:
        StaticPolicy(BY_NAME["topoDualSocketHT"], reserved_system_cpus="0,10-13")
    assert 'reservedSystemCPUs "0,10-13" is not a subset of the node\'s CPUs "0-11"' in str(
        exc.value)
    assert '"12-13" do not exist' in str(exc.value)
    with pytest.raises(CPUManagerConfigError, match="reservedSystemCPUs '0-a' is not a valid"):
        StaticPolicy(BY_NAME["topoDualSocketHT"], reserved_system_cpus="0-a")


def test_reservation_larger_than_the_machine_fails():
    with pytest.raises(CPUManagerConfigError, match=r"unable to reserve the required amount of "
                                                    r"CPUs \(size of  did not equal 13\)"):
        StaticPolicy(BY_NAME["topoDualSocketHT"], num_reserved_cpus=13)


def test_strict_cpu_reservation_removes_reserved_cpus_from_the_shared_pool():
    strict = StaticPolicy(BY_NAME["topoDualSocketHT"], num_reserved_cpus=2,
                          options={"strict-cpu-reservation": "true"})
    assert strict.default_cpus == cs("1-5,7-11")
    assert strict.available_cpus() == cs("1-5,7-11")
    assert strict.allocate("p", "c", 10) == cs("1-5,7-11")
    with pytest.raises(NotEnoughCPUsError, match="requested=1, available=0"):
        strict.allocate("p", "d", 1)


def test_full_pcpus_only_ignores_siblings_of_reserved_cpus():
    # reserving one thread of core 0 makes its sibling unusable for full-pcpus-only
    policy = StaticPolicy(BY_NAME["topoSingleSocketHT"], num_reserved_cpus=1, options=FULL_PCPUS)
    assert policy.available_physical_cpus() == cs("1-3,5-7")
    assert policy.allocate("p", "c", 6) == cs("1-3,5-7")
    with pytest.raises(SMTAlignmentError, match="available physical CPUs = 0, requested CPUs = 2"):
        policy.allocate("p", "d", 2)


def test_spill_outside_a_too_narrow_hint():
    # allocateCPUs: missing CPUs come from outside the affinity instead of failing
    policy = policy_for("topoDualSocketHT", 0, cs("0-11"))
    got = policy.allocate("p", "c", 8, affinity=0b01)
    assert got == cs("0,2,4,6,8,10,1,7")


def test_sidecar_cpus_are_not_reusable():
    policy = policy_for("topoSingleSocketHT", 0, cs("0-7"))
    policy.allocate("pod", "sidecar", 2, kind=SIDECAR_CONTAINER)
    policy.allocate("pod", "init", 2, kind=INIT_CONTAINER)
    assert policy.cpus_to_reuse["pod"] == cs("1,5")
    # app containers take the init container's CPUs back first
    assert policy.allocate("pod", "app", 2) == cs("1,5")
    assert policy.cpus_to_reuse["pod"] == frozenset()
    # only the pod being admitted keeps reusable CPUs
    policy.allocate("other", "init", 2, kind=INIT_CONTAINER)
    assert list(policy.cpus_to_reuse) == ["other"]


def test_container_hints_use_reusable_init_cpus():
    policy = policy_for("topoDualSocketHT", 0, cs("0-11"))
    assert policy.allocate("pod", "init", 6, affinity=0b10, kind=INIT_CONTAINER) == cs(
        "1,3,5,7,9,11")
    # the init container's CPUs (all on NUMA 1) are reusable: NUMA 1 alone holds the app
    # container, and no hint may leave NUMA 1 out
    assert policy.get_topology_hints("pod", "app", 6) == [CPUHint(0b10, True),
                                                          CPUHint(0b11, False)]


# --- policy options (policy_options.go) -------------------------------------------------------
@pytest.mark.parametrize("options,message", [
    ({"bogus": "true"}, 'unknown CPU Manager Policy option: "bogus"'),
    ({"full-pcpus-only": "yes"},
     'bad value for option "full-pcpus-only": strconv.ParseBool: parsing "yes": invalid syntax'),
    ({"full-pcpus-only": "true", "distribute-cpus-across-cores": "true"},
     "static policy options full-pcpus-only and distribute-cpus-across-cores can not be used at "
     "the same time"),
    ({"distribute-cpus-across-numa": "true", "distribute-cpus-across-cores": "true"},
     "static policy options distribute-cpus-across-numa and distribute-cpus-across-cores can not "
     "be used at the same time"),
    ({"prefer-align-cpus-by-uncorecache": "true", "distribute-cpus-across-numa": "true"},
     "static policy options prefer-align-cpus-by-uncorecache and distribute-cpus-across-numa can "
     "not be used at the same time"),
])
def test_policy_option_errors(options, message):
    with pytest.raises(CPUManagerConfigError) as exc:
        StaticPolicyOptions.from_kubelet(options)
    assert str(exc.value) == message


def test_policy_options_parse_go_booleans():
    opts = StaticPolicyOptions.from_kubelet({"full-pcpus-only": "True",
                                             "strict-cpu-reservation": "1",
                                             "align-by-socket": "F"})
    assert opts == StaticPolicyOptions(full_pcpus_only=True, strict_cpu_reservation=True)


def test_align_by_socket_compatibility():
    with pytest.raises(CPUManagerConfigError, match="single-numa-node policy is incompatible"):
        StaticPolicy(BY_NAME["topoDualSocketHT"], num_reserved_cpus=1,
                     options={"align-by-socket": "true"},
                     topology_manager_policy="single-numa-node")
    with pytest.raises(CPUManagerConfigError, match="number of sockets are more than number of "
                                                    "NUMA"):
        StaticPolicy(BY_NAME["fakeTopoMultiSocketDualSocketPerNumaHT"], num_reserved_cpus=1,
                     options={"align-by-socket": "true"})


def test_errors_carry_the_kubelet_reason():
    assert issubclass(SMTAlignmentError, CPUManagerError)
    assert NotEnoughCPUsError(3, 2).reason == "UnexpectedAdmissionError"
