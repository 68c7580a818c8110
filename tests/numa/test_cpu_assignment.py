"""CPU picking, ported from the kubelet's own tables.

Origin of every table: kubernetes/kubernetes pkg/kubelet/cm/cpumanager/cpu_assignment_test.go
(TestCPUAccumulatorFreeSockets, ...FreeNUMANodes, ...FreeSocketsAndNUMANodes, ...FreeCores,
...FreeCPUs, ...Take, commonTakeByTopologyTestCases, TestTakeByTopologyNUMAPacked (incl. the
PreferAlignByUncoreCache cases), TestTakeByTopologyWithSpreadPhysicalCPUsPreferredOption,
commonTakeByTopologyExtendedTestCases, TestTakeByTopologyNUMADistributed). Case descriptions
are the kubelet's. Topologies: tests/numa/kubelet_topologies.py (policy_test.go fixtures).
"""
from __future__ import annotations

import pytest
from kubelet_topologies import BY_NAME

from numaguard.lint.numa.cpu_assignment import (CPU_SORTING_PACKED, CPU_SORTING_SPREAD, CPUAccumulator,
                                      CPUTopologyIndex, NotEnoughCPUsError, balance_score,
                                      take_by_topology, take_by_topology_numa_distributed,
                                      take_by_topology_numa_packed)
from numaguard.lint.k8s.cpuset import format_cpuset, parse_cpuset


def cs(text: str) -> frozenset[int]:
    return parse_cpuset(text)


def acc(topo: str, available: str, need: int = 0) -> CPUAccumulator:
    return CPUAccumulator(BY_NAME[topo], cs(available), need)


# --- TestCPUAccumulatorFreeSockets -------------------------------------------------------------
FREE_SOCKETS = [
    ("single socket HT, 1 socket free", "topoSingleSocketHT", "0-7", [0]),
    ("single socket HT, 0 sockets free", "topoSingleSocketHT", "1-7", []),
    ("dual socket HT, 2 sockets free", "topoDualSocketHT", "0-11", [0, 1]),
    ("dual socket HT, 1 socket free", "topoDualSocketHT", "0-9,11", [1]),
    ("dual socket HT, 0 sockets free", "topoDualSocketHT", "0,2-9,11", []),
    ("dual socket, multi numa per socket, HT, 2 sockets free",
     "topoDualSocketMultiNumaPerSocketHT", "0-79", [0, 1]),
    ("dual socket, multi numa per socket, HT, 1 sockets free",
     "topoDualSocketMultiNumaPerSocketHT", "1-79", [1]),
    ("dual socket, multi numa per socket, HT, 0 sockets free",
     "topoDualSocketMultiNumaPerSocketHT", "1-78", []),
    ("dual numa, multi socket per per socket, HT, 4 sockets free",
     "fakeTopoMultiSocketDualSocketPerNumaHT", "0-79", [0, 1, 2, 3]),
    ("dual numa, multi socket per per socket, HT, 3 sockets free",
     "fakeTopoMultiSocketDualSocketPerNumaHT", "0-19,21-79", [0, 1, 3]),
    ("dual numa, multi socket per per socket, HT, 2 sockets free",
     "fakeTopoMultiSocketDualSocketPerNumaHT", "0-59,61-78", [0, 1]),
    ("dual numa, multi socket per per socket, HT, 1 sockets free",
     "fakeTopoMultiSocketDualSocketPerNumaHT", "1-19,21-38,41-60,61-78", [1]),
    ("dual numa, multi socket per per socket, HT, 0 sockets free",
     "fakeTopoMultiSocketDualSocketPerNumaHT", "0-40,42-49,51-68,71-79", []),
]


@pytest.mark.parametrize("desc,topo,available,expect", FREE_SOCKETS,
                         ids=[c[0] for c in FREE_SOCKETS])
def test_free_sockets(desc, topo, available, expect):
    assert sorted(acc(topo, available).free_sockets()) == expect


# --- TestCPUAccumulatorFreeNUMANodes -----------------------------------------------------------
FREE_NUMA = [
    ("single socket HT, 1 NUMA node free", "topoSingleSocketHT", "0-7", [0]),
    ("single socket HT, 0 NUMA Node free", "topoSingleSocketHT", "1-7", []),
    ("dual socket HT, 2 NUMA Node free", "topoDualSocketHT", "0-11", [0, 1]),
    ("dual socket HT, 1 NUMA Node free", "topoDualSocketHT", "0-9,11", [1]),
    ("dual socket HT, 0 NUMA node free", "topoDualSocketHT", "0,2-9,11", []),
    ("dual socket, multi numa per socket, HT, 4 NUMA Node free",
     "topoDualSocketMultiNumaPerSocketHT", "0-79", [0, 1, 2, 3]),
    ("dual socket, multi numa per socket, HT, 3 NUMA node free",
     "topoDualSocketMultiNumaPerSocketHT", "1-79", [1, 2, 3]),
    ("dual socket, multi numa per socket, HT, 2 NUMA node free",
     "topoDualSocketMultiNumaPerSocketHT", "1-9,11-79", [2, 3]),
    ("dual socket, multi numa per socket, HT, 1 NUMA node free",
     "topoDualSocketMultiNumaPerSocketHT", "1-9,11-59,61-79", [3]),
    ("dual socket, multi numa per socket, HT, 0 NUMA node free",
     "topoDualSocketMultiNumaPerSocketHT", "1-9,11-59,61-78", []),
    ("dual numa, multi socket per per socket, HT, 2 NUMA node free",
     "fakeTopoMultiSocketDualSocketPerNumaHT", "0-79", [0, 1]),
    ("dual numa, multi socket per per socket, HT, 1 NUMA node free",
     "fakeTopoMultiSocketDualSocketPerNumaHT", "0-9,11-79", [1]),
    ("dual numa, multi socket per per socket, HT, 0 sockets free",
     "fakeTopoMultiSocketDualSocketPerNumaHT", "0-9,11-59,61-79", []),
]


@pytest.mark.parametrize("desc,topo,available,expect", FREE_NUMA, ids=[c[0] for c in FREE_NUMA])
def test_free_numa_nodes(desc, topo, available, expect):
    assert acc(topo, available).free_numa_nodes() == expect


# --- TestCPUAccumulatorFreeSocketsAndNUMANodes -------------------------------------------------
FREE_BOTH = [
    ("dual socket, multi numa per socket, HT, 2 Socket/4 NUMA Node free", "0-79", [0, 1],
     [0, 1, 2, 3]),
    ("dual socket, multi numa per socket, HT, 1 Socket/3 NUMA node free", "1-79", [1], [1, 2, 3]),
    ("dual socket, multi numa per socket, HT, 1 Socket/ 2 NUMA node free", "1-9,11-79", [1],
     [2, 3]),
    ("dual socket, multi numa per socket, HT, 0 Socket/ 2 NUMA node free", "1-59,61-79", [],
     [1, 3]),
]


@pytest.mark.parametrize("desc,available,sockets,numas", FREE_BOTH, ids=[c[0] for c in FREE_BOTH])
def test_free_sockets_and_numa_nodes(desc, available, sockets, numas):
    a = acc("topoDualSocketMultiNumaPerSocketHT", available)
    assert a.free_numa_nodes() == numas
    assert a.free_sockets() == sockets


# --- TestCPUAccumulatorFreeCores (order matters: fullest socket first) ------------------------
FREE_CORES = [
    ("single socket HT, 4 cores free", "topoSingleSocketHT", "0-7", [0, 1, 2, 3]),
    ("single socket HT, 3 cores free", "topoSingleSocketHT", "0-2,4-6", [0, 1, 2]),
    ("single socket HT, 3 cores free (1 partially consumed)", "topoSingleSocketHT", "0-6",
     [0, 1, 2]),
    ("single socket HT, 0 cores free", "topoSingleSocketHT", "", []),
    ("single socket HT, 0 cores free (4 partially consumed)", "topoSingleSocketHT", "0-3", []),
    ("dual socket HT, 6 cores free", "topoDualSocketHT", "0-11", [0, 2, 4, 1, 3, 5]),
    ("dual socket HT, 5 cores free (1 consumed from socket 0)", "topoDualSocketHT",
     "1-5,7-11", [2, 4, 1, 3, 5]),
    ("dual socket HT, 4 cores free (1 consumed from each socket)", "topoDualSocketHT",
     "2-5,8-11", [2, 4, 3, 5]),
]


@pytest.mark.parametrize("desc,topo,available,expect", FREE_CORES, ids=[c[0] for c in FREE_CORES])
def test_free_cores(desc, topo, available, expect):
    assert acc(topo, available).free_cores() == expect


# --- TestCPUAccumulatorFreeCPUs (packed order) -------------------------------------------------
FREE_CPUS = [
    ("single socket HT, 8 cpus free", "topoSingleSocketHT", "0-7", [0, 4, 1, 5, 2, 6, 3, 7]),
    ("single socket HT, 5 cpus free", "topoSingleSocketHT", "3-7", [4, 5, 6, 3, 7]),
    ("dual socket HT, 12 cpus free", "topoDualSocketHT", "0-11",
     [0, 6, 2, 8, 4, 10, 1, 7, 3, 9, 5, 11]),
    ("dual socket HT, 11 cpus free", "topoDualSocketHT", "1-11",
     [6, 2, 8, 4, 10, 1, 7, 3, 9, 5, 11]),
    ("dual socket HT, 10 cpus free", "topoDualSocketHT", "1-5,7-11",
     [2, 8, 4, 10, 1, 7, 3, 9, 5, 11]),
    ("triple socket HT, 12 cpus free", "topoTripleSocketHT", "0-3,6-13",
     [12, 13, 0, 1, 2, 3, 6, 7, 8, 9, 10, 11]),
]


@pytest.mark.parametrize("desc,topo,available,expect", FREE_CPUS, ids=[c[0] for c in FREE_CPUS])
def test_free_cpus(desc, topo, available, expect):
    assert acc(topo, available).free_cpus() == expect


# --- TestCPUAccumulatorTake --------------------------------------------------------------------
TAKE = [
    ("take 0 cpus from a single socket HT, require 1", "0-7", [""], 1, False, False),
    ("take 0 cpus from a single socket HT, require 1, none available", "", [""], 1, False, True),
    ("take 1 cpu from a single socket HT, require 1", "0-7", ["0"], 1, True, False),
    ("take 1 cpu from a single socket HT, require 2", "0-7", ["0"], 2, False, False),
    ("take 2 cpu from a single socket HT, require 4, expect failed", "0-2", ["0", "1"], 4, False,
     True),
    ("take all cpus one at a time from a single socket HT, require 8", "0-7",
     [str(i) for i in range(8)], 8, True, False),
]


@pytest.mark.parametrize("desc,available,takes,need,satisfied,failed", TAKE,
                         ids=[c[0] for c in TAKE])
def test_accumulator_take(desc, available, takes, need, satisfied, failed):
    a = acc("topoSingleSocketHT", available, need)
    taken = 0
    for t in takes:
        a.take(cs(t))
        taken += len(cs(t))
    assert a.is_satisfied() is satisfied
    assert a.is_failed() is failed
    for t in takes:
        assert not cs(t) & a.free
        assert cs(t) <= a.result
    assert a.need == need - taken


# --- commonTakeByTopologyTestCases -------------------------------------------------------------
NOT_ENOUGH = "not enough cpus available to satisfy request: requested=5, available=4"
COMMON = [
    ("take more cpus than are available from single socket with HT", "topoSingleSocketHT",
     "0,2,4,6", 5, NOT_ENOUGH, ""),
    ("take zero cpus from single socket with HT", "topoSingleSocketHT", "0-7", 0, "", ""),
    ("take one cpu from single socket with HT", "topoSingleSocketHT", "0-7", 1, "", "0"),
    ("take one cpu from single socket with HT, some cpus are taken", "topoSingleSocketHT",
     "1,3,5-7", 1, "", "6"),
    ("take two cpus from single socket with HT", "topoSingleSocketHT", "0-7", 2, "", "0,4"),
    ("take all cpus from single socket with HT", "topoSingleSocketHT", "0-7", 8, "", "0-7"),
    ("take two cpus from single socket with HT, only one core totally free",
     "topoSingleSocketHT", "0-3,6", 2, "", "2,6"),
    ("take a socket of cpus from dual socket with HT", "topoDualSocketHT", "0-11", 6, "",
     "0,2,4,6,8,10"),
    ("take a socket of cpus from dual socket with multi-numa-per-socket with HT",
     "topoDualSocketMultiNumaPerSocketHT", "0-79", 40, "", "0-19,40-59"),
    ("take a NUMA node of cpus from dual socket with multi-numa-per-socket with HT",
     "topoDualSocketMultiNumaPerSocketHT", "0-79", 20, "", "0-9,40-49"),
    ("take a NUMA node of cpus from dual socket with multi-numa-per-socket with HT, "
     "with 1 NUMA node already taken",
     "topoDualSocketMultiNumaPerSocketHT", "10-39,50-79", 20, "", "10-19,50-59"),
    ("take a socket and a NUMA node of cpus from dual socket with multi-numa-per-socket with HT",
     "topoDualSocketMultiNumaPerSocketHT", "0-79", 60, "", "0-29,40-69"),
    ("take a socket and a NUMA node of cpus from dual socket with multi-numa-per-socket with "
     "HT, a core taken",
     "topoDualSocketMultiNumaPerSocketHT", "1-39,41-79", 60, "", "10-39,50-79"),
]

# TestTakeByTopologyNUMAPacked: common cases plus its own (opts: "uncore" =
# PreferAlignByUncoreCacheOption)
PACKED = [(d, t, a, n, e, r, False) for d, t, a, n, e, r in COMMON] + [
    ("take one cpu from dual socket with HT - core from Socket 0", "topoDualSocketHT",
     "1-5,7-11", 1, "", "2", False),
    ("allocate 4 full cores with 3 coming from the first NUMA node (filling it up) and 1 coming "
     "from the second NUMA node", "topoDualSocketHT", "0-11", 8, "", "0,6,2,8,4,10,1,7", False),
    ("allocate 32 full cores with 30 coming from the first 3 NUMA nodes (filling them up) and 2 "
     "coming from the fourth NUMA node", "topoDualSocketMultiNumaPerSocketHT", "0-79", 64, "",
     "0-29,40-69,30,31,70,71", False),
    ("take cpus from two full UncoreCaches and partial from a single UncoreCache",
     "topoUncoreSingleSocketNoSMT", "1-15", 10, "", "1,2,4-11", True),
    ("take one cpu from dual socket with HT - core from Socket 0 (uncore option)",
     "topoDualSocketHT", "1-5,7-11", 1, "", "1", True),
    ("take first available UncoreCache from first socket", "topoUncoreDualSocketNoSMT", "0-15",
     4, "", "0-3", True),
    ("take all available UncoreCache from first socket", "topoUncoreDualSocketNoSMT", "2-15", 6,
     "", "2-7", True),
    ("take first available UncoreCache from second socket", "topoUncoreDualSocketNoSMT", "8-15",
     4, "", "8-11", True),
    ("take first available UncoreCache from available NUMA", "topoUncoreSingleSocketMultiNuma",
     "3,4-8,12", 2, "", "4,5", True),
    ("take cpus from best available UncoreCache group of multi uncore cache single socket - SMT "
     "enabled", "topoUncoreSingleSocketSMT", "2-3,10-11,4-7,12-15", 6, "", "4-6,12-14", True),
    ("take cpus from multiple UncoreCache of single socket - SMT enabled",
     "topoUncoreSingleSocketSMT", "1-7,9-15", 10, "", "4-7,12-15,1,9", True),
]


@pytest.mark.parametrize("desc,topo,available,num,err,expect,uncore", PACKED,
                         ids=[c[0] for c in PACKED])
def test_take_by_topology_numa_packed(desc, topo, available, num, err, expect, uncore):
    if err:
        with pytest.raises(NotEnoughCPUsError) as exc:
            take_by_topology_numa_packed(BY_NAME[topo], cs(available), num, CPU_SORTING_PACKED,
                                         uncore)
        assert str(exc.value) == err
        assert exc.value.reason == "UnexpectedAdmissionError"
        return
    got = take_by_topology_numa_packed(BY_NAME[topo], cs(available), num, CPU_SORTING_PACKED,
                                       uncore)
    assert format_cpuset(got) == format_cpuset(cs(expect))


# --- TestTakeByTopologyWithSpreadPhysicalCPUsPreferredOption ----------------------------------
SPREAD = [
    ("take a socket of cpus from single socket with HT, 3 cpus", "topoSingleSocketHT", "0-7", 3,
     "0-2"),
    ("take a socket of cpus from dual socket with HT, 2 cpus", "topoDualSocketHT", "0-11", 2,
     "0,2"),
    ("take a socket of cpus from dual socket with HT, 3 cpus", "topoDualSocketHT", "0-11", 3,
     "0,2,4"),
    ("take a socket of cpus from dual socket with HT, 6 cpus", "topoDualSocketHT", "0-11", 6,
     "0,2,4,6,8,10"),
    ("take cpus from dual socket with HT, 8 cpus", "topoDualSocketHT", "0-11", 8,
     "0,2,4,6,8,10,1,3"),
    ("take a socket of cpus from dual socket without HT, 2 cpus", "topoDualSocketNoHT", "0-7", 2,
     "0,1"),
    ("take a socket of cpus from dual socket with multi numa per socket and HT, 12 cpus",
     "topoDualSocketMultiNumaPerSocketHT", "0-79", 8, "0-7"),
    ("take a socket of cpus from quad socket four way with HT, 12 cpus",
     "topoQuadSocketFourWayHT", "0-287", 12, "0-2,9-10,13-14,21-22,25-26,33"),
]


@pytest.mark.parametrize("desc,topo,available,num,expect", SPREAD, ids=[c[0] for c in SPREAD])
def test_take_by_topology_spread(desc, topo, available, num, expect):
    got = take_by_topology_numa_packed(BY_NAME[topo], cs(available), num, CPU_SORTING_SPREAD)
    assert got == cs(expect)
    # the option-level entry point selects the same algorithm
    assert take_by_topology(BY_NAME[topo], cs(available), num,
                            distribute_cpus_across_cores=True) == cs(expect)


# --- commonTakeByTopologyExtendedTestCases + TestTakeByTopologyNUMADistributed ----------------
EXTENDED = [(d, t, a, n, 1, e, r) for d, t, a, n, e, r in COMMON] + [
    ("allocate 4 full cores with 2 distributed across each NUMA node", "topoDualSocketHT",
     "0-11", 8, 1, "", "0,6,2,8,1,7,3,9"),
    ("allocate 32 full cores with 8 distributed across each NUMA node",
     "topoDualSocketMultiNumaPerSocketHT", "0-79", 64, 1, "",
     "0-7,10-17,20-27,30-37,40-47,50-57,60-67,70-77"),
    ("allocate 24 full cores with 8 distributed across the first 3 NUMA nodes",
     "topoDualSocketMultiNumaPerSocketHT", "0-79", 48, 1, "",
     "0-7,10-17,20-27,40-47,50-57,60-67"),
    ("allocate 24 full cores with 8 distributed across the first 3 NUMA nodes (taking all but 2 "
     "from the first NUMA node)", "topoDualSocketMultiNumaPerSocketHT", "1-29,32-39,41-69,72-79",
     48, 1, "", "1-8,10-17,20-27,41-48,50-57,60-67"),
    ("allocate 24 full cores with 8 distributed across the last 3 NUMA nodes (even though all 8 "
     "could be allocated from the first NUMA node)", "topoDualSocketMultiNumaPerSocketHT",
     "2-29,31-39,42-69,71-79", 48, 1, "", "10-17,20-27,31-38,50-57,60-67,71-78"),
    ("allocate 8 full cores with 2 distributed across each NUMA node",
     "topoDualSocketMultiNumaPerSocketHT", "0-2,10-12,20-22,30-32,40-41,50-51,60-61,70-71", 16,
     1, "", "0-1,10-11,20-21,30-31,40-41,50-51,60-61,70-71"),
]
DISTRIBUTED = EXTENDED + [
    ("take one cpu from dual socket with HT - core from Socket 0", "topoDualSocketHT",
     "1-5,7-11", 1, 1, "", "1"),
    ("take one cpu from dual socket with HT - core from Socket 0 - cpuGroupSize 2",
     "topoDualSocketHT", "1-5,7-11", 1, 2, "", "2"),
    ("allocate 13 full cores distributed across the first 2 NUMA nodes",
     "topoDualSocketMultiNumaPerSocketHT", "0-79", 26, 1, "", "0-6,10-16,40-45,50-55"),
    ("allocate 13 full cores distributed across the first 2 NUMA nodes (cpuGroupSize 2)",
     "topoDualSocketMultiNumaPerSocketHT", "0-79", 26, 2, "", "0-6,10-15,40-46,50-55"),
    ("allocate 31 full cores with 15 CPUs distributed across each NUMA node and 1 CPU spilling "
     "over to each of NUMA 0, 1", "topoDualSocketMultiNumaPerSocketHT", "0-79", 62, 1, "",
     "0-7,10-17,20-27,30-37,40-47,50-57,60-66,70-76"),
    ("allocate 31 full cores with 14 CPUs distributed across each NUMA node and 2 CPUs spilling "
     "over to each of NUMA 0, 1, 2 (cpuGroupSize 2)", "topoDualSocketMultiNumaPerSocketHT",
     "0-79", 62, 2, "", "0-7,10-17,20-27,30-36,40-47,50-57,60-67,70-76"),
    ("allocate 31 full cores with 15 CPUs distributed across each NUMA node and 1 CPU spilling "
     "over to each of NUMA 2, 3 (to keep balance)", "topoDualSocketMultiNumaPerSocketHT",
     "0-8,10-18,20-39,40-48,50-58,60-79", 62, 1, "",
     "0-7,10-17,20-27,30-37,40-46,50-56,60-67,70-77"),
    ("allocate 31 full cores with 14 CPUs distributed across each NUMA node and 2 CPUs spilling "
     "over to each of NUMA 0, 2, 3 (to keep balance with cpuGroupSize 2)",
     "topoDualSocketMultiNumaPerSocketHT", "0-8,10-18,20-39,40-48,50-58,60-79", 62, 2, "",
     "0-7,10-16,20-27,30-37,40-47,50-56,60-67,70-77"),
    ("ensure bestRemainder chosen with NUMA nodes that have enough CPUs to satisfy the request",
     "topoDualSocketMultiNumaPerSocketHT", "0-3,10-13,20-23,30-36,40-43,50-53,60-63,70-76", 34,
     1, "", "0-3,10-13,20-23,30-34,40-43,50-53,60-63,70-74"),
    ("ensure previous failure encountered on live machine has been fixed (1/1)",
     "topoDualSocketMultiNumaPerSocketHTLarge",
     "0,128,30,31,158,159,43-47,171-175,62,63,190,191,75-79,203-207,94,96,222,223,101-111,"
     "229-239,126,127,254,255", 28, 1, "", "43-47,75-79,96,101-105,171-174,203-206,229-232"),
]


@pytest.mark.parametrize("desc,topo,available,num,group,err,expect", DISTRIBUTED,
                         ids=[c[0] for c in DISTRIBUTED])
def test_take_by_topology_numa_distributed(desc, topo, available, num, group, err, expect):
    if err:
        with pytest.raises(NotEnoughCPUsError) as exc:
            take_by_topology_numa_distributed(BY_NAME[topo], cs(available), num, group)
        assert str(exc.value) == err
        return
    got = take_by_topology_numa_distributed(BY_NAME[topo], cs(available), num, group)
    assert format_cpuset(got) == format_cpuset(cs(expect))


# --- beyond the kubelet tables: properties the tables rely on ---------------------------------
def test_hierarchy_follows_socket_and_numa_counts():
    # cpu_assignment.go newCPUAccumulator: NUMA-first iff NumSockets >= NumNUMANodes
    assert CPUTopologyIndex.of(BY_NAME["topoDualSocketHT"]).numa_first
    assert CPUTopologyIndex.of(BY_NAME["fakeTopoMultiSocketDualSocketPerNumaHT"]).numa_first
    assert not CPUTopologyIndex.of(BY_NAME["topoDualSocketMultiNumaPerSocketHT"]).numa_first


def test_index_is_built_once_per_topology():
    topo = BY_NAME["topoDualSocketHT"]
    assert CPUTopologyIndex.of(topo) is CPUTopologyIndex.of(topo)


def test_distributed_vector_020_picks_the_emptier_numa_node():
    # docs/kubelet-numa-algorithms.md §5.5 (cpu-assign-distributed-020): packed fills the
    # busier NUMA node, distributed keeps the free CPUs balanced
    topo, available = BY_NAME["topoDualSocketHT"], cs("1-5,7-11")
    assert take_by_topology_numa_packed(topo, available, 1) == {2}
    assert take_by_topology_numa_distributed(topo, available, 1) == {1}


@pytest.mark.parametrize("values,score", [([0, 0, 0], 0.0), ([2, 4], 1.0), ([1, 2, 2], 0.471)])
def test_balance_score_is_rounded_population_stddev(values, score):
    assert balance_score(values) == score


def test_full_pcpus_distributed_uses_core_groups():
    # policy_static.go takeByTopology: cpuGroupSize = CPUsPerCore with full-pcpus-only
    got = take_by_topology(BY_NAME["topoDualSocketMultiNumaPerSocketHT"], cs("0-79"), 26,
                           distribute_cpus_across_numa=True, full_pcpus_only=True)
    assert got == cs("0-6,10-15,40-46,50-55")


def test_distributed_with_align_by_socket_prefers_one_socket():
    # newer cpu_assignment.go (alignBySocket passed to takeByTopologyNUMADistributed): a
    # same-socket NUMA pair beats a better-balanced cross-socket pair, and the even share is
    # capped at what the smaller node has
    topo = BY_NAME["topoDualSocketMultiNumaPerSocketHT"]
    available = cs("0-15,20-35,40-55,60-75")       # NUMA 1 and NUMA 3 have 12 free CPUs each
    plain = take_by_topology_numa_distributed(topo, available, 30)
    assert plain == cs("0-7,40-46,20-27,60-66")     # NUMA 0 + NUMA 2 (cross-socket)
    aligned = take_by_topology_numa_distributed(topo, available, 30, align_by_socket=True)
    assert aligned == cs("0-8,40-48,10-15,50-55")   # NUMA 1 (all 12) + NUMA 0, socket 0
