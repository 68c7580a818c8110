"""The static policies' start-up check of a restored checkpoint (`validateState`), replayed from
the kubelet's own unit tests, case by case with their descriptions:

* CPU: kubernetes/kubernetes pkg/kubelet/cm/cpumanager/policy_static_test.go
  `TestStaticPolicyStart` (topoDualSocketHT, the policy built by NewStaticPolicy with the
  case's reserved count and options), as stored for 1.37 development;
* memory: pkg/kubelet/cm/memorymanager/policy_static_test.go `TestStaticPolicyStart` (the
  machine given as cadvisor's machine info, the reservation as systemReservedMemory).

The kubelet stops on the first error; `Refusal`s come in its order, so the first one is the
kubelet's error word for word. The pod-level cases (the PodLevelResourceManagers gate) have no
unit test upstream: they follow validateState as read (pod-level CPU sets count only with the
gate on; a pod's pod-level memory blocks replace its containers' with the gate on)."""
from __future__ import annotations

import pytest

from numaguard.lint.k8s.checkpoints import CPUCheckpoint, MemoryBlock, MemoryCheckpoint, MemoryTable
from numaguard.lint.k8s.cpuset import parse_cpuset as cs
from numaguard.lint.numa.cpus import StaticPolicy
from numaguard.lint.numa.restart import (ASSIGNMENT, EXPECTED_STATE_DIFFERS, MACHINE, TABLE, MemoryMachine,
                                         cpu_refusals, memory_refusals)

from kubelet_topologies import DUAL_SOCKET_HT

MB, GB = 1 << 20, 1 << 30
HP1G = "hugepages-1Gi"
STRICT = {"strict-cpu-reservation": "true"}

# (description, reserved count, options, assignments, defaultCpuSet, the kubelet's error or None)
CPU_START = [
    ("non-corrupted state", 0, None, {"fakePod": {"0": "0"}}, "1-11", None),
    ("empty cpuset", 1, None, {}, "", None),
    ("reserved cores 0 & 6 are not present in available cpuset", 2, None, {}, "0-1",
     'not all reserved cpus: "0,6" are present in defaultCpuSet: "0-1"'),
    ("some of reserved cores are present in available cpuset (StrictCPUReservationOption)", 2, STRICT, {}, "0-1",
     'some of strictly reserved cpus: "0" are present in defaultCpuSet: "0-1"'),
    ("assigned core 2 is still present in available cpuset", 0, None, {"fakePod": {"0": "0-2"}}, "2-11",
     'pod: fakePod, container: 0 cpuset: "0-2" overlaps with default cpuset "2-11"'),
    ("assigned core 2 is still present in available cpuset (StrictCPUReservationOption)", 0, STRICT,
     {"fakePod": {"0": "0-2"}}, "2-11", 'pod: fakePod, container: 0 cpuset: "0-2" overlaps with default cpuset "2-11"'),
    ("core 12 is not present in topology but is in state cpuset", 0, None,
     {"fakePod": {"0": "0-2", "1": "3-4"}}, "5-12",
     'current set of available CPUs "0-11" doesn\'t match with CPUs in state "0-12"'),
    ("core 11 is present in topology but is not in state cpuset", 0, None,
     {"fakePod": {"0": "0-2", "1": "3-4"}}, "5-10",
     'current set of available CPUs "0-11" doesn\'t match with CPUs in state "0-10"'),
]


def cpu_state(default: str, assignments: dict, pods: dict | None = None) -> CPUCheckpoint:
    return CPUCheckpoint("v4", "static", cs(default),
                         {pod: {name: cs(cpus) for name, cpus in by.items()} for pod, by in assignments.items()},
                         {uid: cs(cpus) for uid, cpus in (pods or {}).items()})


def start_cpu(count: int, options, cp: CPUCheckpoint, pod_level: bool = False):
    policy = StaticPolicy(DUAL_SOCKET_HT, num_reserved_cpus=count, options=options)
    return cpu_refusals(cp, reserved=policy.reserved, online=policy.index.all_cpus,
                        strict=policy.options.strict_cpu_reservation, pod_level=pod_level)


@pytest.mark.parametrize("desc,count,options,assignments,default,error", CPU_START, ids=[c[0] for c in CPU_START])
def test_cpu_static_policy_start(desc, count, options, assignments, default, error):
    refusals = start_cpu(count, options, cpu_state(default, assignments))
    assert (refusals[0].message if refusals else None) == error


def test_cpu_refusals_all_reported_with_what_differs():
    """Reserved CPUs 0,6 held by a container and missing from the shared pool, which also holds
    a container's CPU and misses CPU 11: every check fails, in the kubelet's order."""
    found = start_cpu(2, None, cpu_state("1-5,7,9", {"uid-a": {"app": "0,6"}, "uid-b": {"db": "7-8"}}))
    assert [(r.path, r.message) for r in found] == [
        (("defaultCpuSet",), 'not all reserved cpus: "0,6" are present in defaultCpuSet: "1-5,7,9"'),
        (("entries", "uid-b", "db"), 'pod: uid-b, container: db cpuset: "7-8" overlaps with default cpuset "1-5,7,9"'),
        (("defaultCpuSet",), 'current set of available CPUs "0-11" doesn\'t match with CPUs in state "0-9"')]
    assert [r.detail for r in found] == [
        "reserved CPUs 0,6 are not in the shared pool (held as exclusive CPUs by container app of pod uid-a (0,6)); "
        "the reservation (reservedSystemCPUs, or kubeReserved/systemReserved cpu) changed without a drain, "
        "or the file was edited",
        "container db of pod uid-b holds CPUs 7 as exclusive CPUs while they are also in the shared pool",
        "CPUs 10-11 are online on the node but in neither defaultCpuSet nor any entry (onlined since the file was "
        "written, or the file was edited)"]


def test_cpu_state_with_assignments_and_empty_default():
    found = start_cpu(1, None, cpu_state("", {"uid-a": {"app": "2-3"}}))
    assert [(r.message, r.detail) for r in found] == [
        ("default cpuset cannot be empty", "defaultCpuSet is empty while 1 container entries hold CPUs 2-3: the file "
                                           "was edited or truncated")]
    assert start_cpu(1, None, cpu_state("", {"uid-a": {}})) != []      # len(tmpAssignments): a pod key is enough


@pytest.mark.parametrize("pod_level,error", [
    (True, None),
    (False, 'current set of available CPUs "0-11" doesn\'t match with CPUs in state "0-6,8-11"')])
def test_pod_level_cpus_count_only_with_the_gate(pod_level, error):
    """A pod-level pool 7 (its shared containers' CPU) is in no container entry: a kubelet with
    PodLevelResourceManagers off does not read podEntries and misses that CPU."""
    cp = cpu_state("0-6,10-11", {"uid-a": {"app": "8-9"}}, pods={"uid-a": "7-9"})
    found = start_cpu(2, None, cp, pod_level=pod_level)
    assert (found[0].message if found else None) == error
    if found:
        assert found[0].detail == ("CPUs 7 are online on the node but in neither defaultCpuSet nor any entry "
                                   "(pod-level entries hold 7, but a kubelet with the PodLevelResourceManagers "
                                   "gate off does not read podEntries)")


def test_strict_reservation_turned_on_under_a_running_node():
    found = start_cpu(2, STRICT, cpu_state("0-11", {}))
    assert [r.message for r in found] == [
        'some of strictly reserved cpus: "0,6" are present in defaultCpuSet: "0-11"',
        'current set of available CPUs "1-5,7-11" doesn\'t match with CPUs in state "0-11"']
    assert found[1].detail == ("CPUs 0,6 are in the checkpoint but reserved CPUs, which strict-cpu-reservation keeps "
                               "out of the state")


def test_unknown_reservation_or_machine_skips_those_checks():
    cp = cpu_state("1-20", {"uid-a": {"app": "0"}})
    assert cpu_refusals(cp, reserved=None, online=None) == []
    assert [r.message for r in cpu_refusals(cp, reserved=frozenset({0}), online=None)] == [
        'not all reserved cpus: "0" are present in defaultCpuSet: "1-20"']


# --- memory ------------------------------------------------------------------------------------

def T(allocatable, free, reserved, system_reserved, total) -> MemoryTable:
    return MemoryTable(total, system_reserved, allocatable, reserved, free)


def memory_state(machine: dict, containers: dict | None = None, pods: dict | None = None) -> MemoryCheckpoint:
    """machine: NUMA node -> (tables, cells, numberOfAssignments)."""
    return MemoryCheckpoint("v3", "Static", {n: t for n, (t, _, _) in machine.items()},
                            {n: tuple(c) for n, (_, c, _) in machine.items()}, containers or {}, pods or {},
                            assignments={n: a for n, (_, _, a) in machine.items()})


def B(numa, resource, size) -> MemoryBlock:
    return MemoryBlock(tuple(numa), resource, size)


def machine_of(*nodes) -> MemoryMachine:
    """cadvisor's machine info: (memory, 1Gi hugepages) per NUMA node."""
    return MemoryMachine({n: {"memory": memory, HP1G: pages * GB} for n, (memory, pages) in enumerate(nodes)})


RESERVED_512M = {0: {"memory": 512 * MB}}
ONE_NODE = {0: ({"memory": T(1536 * MB, 1536 * MB, 0, 512 * MB, 2 * GB), HP1G: T(GB, GB, 0, 0, GB)}, [0], 0)}
MEMORY_START = [
    ("should fail, if machine state is empty, but it has memory assignments", {},
     {"pod": {"container1": (B([0], "memory", 512 * MB),)}}, machine_of((2 * GB, 1)), RESERVED_512M,
     "[memorymanager] machine state can not be empty when it has memory assignments"),
    ("should fill the state with default values, when the state is empty", {}, {}, machine_of((3 * GB, 1)),
     RESERVED_512M, None),
    ("should fail when machine state does not have all NUMA nodes", ONE_NODE, {},
     machine_of((2 * GB, 1), (2 * GB, 1)), RESERVED_512M, EXPECTED_STATE_DIFFERS),
    ("should fail when machine state does not have memory resource",
     {0: ({HP1G: T(GB, GB, 0, 0, GB)}, [0], 0)}, {}, machine_of((2 * GB, 1)), RESERVED_512M, EXPECTED_STATE_DIFFERS),
    ("should fail when machine state has wrong size of total memory",
     {0: ({"memory": T(1536 * MB, 1536 * MB, 0, 512 * MB, 1536 * MB)}, [0], 0)}, {}, machine_of((2 * GB, 1)),
     RESERVED_512M, EXPECTED_STATE_DIFFERS),
    ("should fail when machine state has wrong size of system reserved memory",
     {0: ({"memory": T(1536 * MB, 1536 * MB, 0, 1024, 2 * GB)}, [0], 0)}, {}, machine_of((2 * GB, 1)),
     RESERVED_512M, EXPECTED_STATE_DIFFERS),
    ("should fail when machine state reserved memory is different from the memory of all containers memory "
     "assignments", {0: ({"memory": T(1536 * MB, 1536 * MB, 0, 512 * MB, 2 * GB)}, [0], 1)},
     {"pod": {"container1": (B([0], "memory", 512 * MB),)}}, machine_of((2 * GB, 1)), RESERVED_512M,
     EXPECTED_STATE_DIFFERS),
    ("should fail when machine state has wrong size of hugepages", ONE_NODE, {}, machine_of((2 * GB, 2)),
     RESERVED_512M, EXPECTED_STATE_DIFFERS),
    ("should fail when machine state has wrong size of system reserved hugepages",
     {0: ({"memory": T(1536 * MB, 1536 * MB, 0, 512 * MB, 2 * GB), HP1G: T(GB, GB, 0, GB, 2 * GB)}, [0], 0)}, {},
     machine_of((2 * GB, 2)), RESERVED_512M, EXPECTED_STATE_DIFFERS),
    ("should fail when the hugepages reserved machine state is different from the hugepages of all containers "
     "memory assignments",
     {0: ({"memory": T(1536 * MB, 1536 * MB, 0, 512 * MB, 2 * GB), HP1G: T(4 * GB, GB, 3 * GB, 0, 4 * GB)}, [0], 2)},
     {"pod1": {"container1": (B([0], HP1G, GB),)}, "pod2": {"container2": (B([0], HP1G, GB),)}},
     machine_of((2 * GB, 4)), RESERVED_512M, EXPECTED_STATE_DIFFERS),
    ("should fail when machine state does not have NUMA node that used under the memory assignment", ONE_NODE,
     {"pod1": {"container1": (B([1], "memory", GB),)}}, machine_of((2 * GB, 1)), RESERVED_512M,
     "[memorymanager] (pod: pod1, container: container1) the memory assignment uses the NUMA that does not exist"),
    ("should fail when machine state does not have resource that used under the memory assignment",
     {0: (ONE_NODE[0][0], [0], 2)},
     {"pod1": {"container1": (B([0], "memory", GB), B([0], "hugepages-2Mi", GB))}}, machine_of((2 * GB, 1)),
     RESERVED_512M, "[memorymanager] (pod: pod1, container: container1) the memory assignment uses memory resource "
                    "that does not exist"),
    ("should fail when machine state number of assignments is different from the expected one",
     {0: (ONE_NODE[0][0], [0], 1)},
     {"pod1": {"container1": (B([0], "memory", GB), B([0], HP1G, GB))}}, machine_of((2 * GB, 1)),
     RESERVED_512M, EXPECTED_STATE_DIFFERS),
    ("should validate cross NUMA reserved memory vs container assignments",
     {0: ({"memory": T(640 * MB, 0, 640 * MB, 512 * MB, 2176 * MB), HP1G: T(GB, 0, GB, 0, GB)}, [0, 1], 4),
      1: ({"memory": T(640 * MB, 256 * MB, 384 * MB, 512 * MB, 2176 * MB), HP1G: T(GB, 0, GB, 0, GB)}, [0, 1], 4)},
     {"pod1": {"container1": (B([0, 1], "memory", 768 * MB), B([0, 1], HP1G, GB))},
      "pod2": {"container2": (B([0, 1], "memory", 256 * MB), B([0, 1], HP1G, GB))}},
     machine_of((2176 * MB, 1), (2176 * MB, 1)), {0: {"memory": 512 * MB}, 1: {"memory": 512 * MB}}, None),
]


@pytest.mark.parametrize("desc,machine,containers,real,reserved,error", MEMORY_START,
                         ids=[c[0] for c in MEMORY_START])
def test_memory_static_policy_start(desc, machine, containers, real, reserved, error):
    refusals = memory_refusals(memory_state(machine, containers), machine=real, reserved=reserved)
    assert (refusals[0].message if refusals else None) == error


def test_memory_differences_say_what_and_by_how_much():
    """The reservation of NUMA 0 raised from 512Mi to 1Gi, and a DIMM less on NUMA 1."""
    state = memory_state({0: ({"memory": T(1536 * MB, 512 * MB, GB, 512 * MB, 3 * GB), HP1G: T(GB, GB, 0, 0, GB)},
                              [0], 1),
                          1: ({"memory": T(2 * GB, 2 * GB, 0, 0, 3 * GB), HP1G: T(GB, GB, 0, 0, GB)}, [1], 0)},
                         {"uid-a": {"app": (B([0], "memory", GB),)}})
    found = memory_refusals(state, machine=machine_of((3 * GB, 1), (2 * GB, 1)), reserved={0: {"memory": GB}})
    assert {r.message for r in found} == {EXPECTED_STATE_DIFFERS}
    assert [(r.path, r.kind, r.detail) for r in found] == [
        (("machineState", "0", "memoryMap", "memory", "systemReserved"), MACHINE,
         "NUMA 0 memory systemReserved is 512Mi (536870912 bytes) in the checkpoint but 1Gi (1073741824 bytes) in "
         "reservedMemory (+512Mi): the reservation changed without a drain"),
        (("machineState", "1", "memoryMap", "memory", "total"), MACHINE,
         "NUMA 1 memory total is 3Gi (3221225472 bytes) in the checkpoint but 2Gi (2147483648 bytes) on this machine "
         "(-1Gi): MemTotal of /sys/devices/system/node/node1/meminfo changed: memory added, removed or failed, or the "
         "kernel reserves another amount")]


def test_memory_tables_that_do_not_add_up_are_table_refusals():
    """Without the machine the checkpoint's own totals are the machine: what remains is the
    tables against themselves and the blocks."""
    state = memory_state({0: ({"memory": T(3 * GB, GB, GB, 0, 4 * GB), HP1G: T(GB, GB, 0, 0, GB)}, [0], 1)},
                         {"uid-a": {"app": (B([0], "memory", 2 * GB),)}})
    found = memory_refusals(state, machine=None, reserved=None)
    assert [(r.path[-1], r.kind, r.detail) for r in found] == [
        ("reserved", TABLE, "NUMA 0 memory reserved is 1Gi (1073741824 bytes) in the checkpoint, but its total, "
                            "reservation and the entries' memory blocks make 2Gi (2147483648 bytes) (+1Gi)")]
    state = memory_state({0: ({"memory": T(4 * GB, 3 * GB, GB, 0, 4 * GB), HP1G: T(GB, GB, 0, 0, GB)}, [0], 1)},
                         {"uid-a": {"app": (B([0], "memory", GB),)}})
    found = memory_refusals(state, machine=None, reserved=None)
    assert [(r.path[-1], r.kind) for r in found] == [("allocatable", TABLE), ("free", TABLE)]
    assert found[0].detail == ("NUMA 0 memory allocatable is 4Gi (4294967296 bytes) in the checkpoint, but its total "
                               "and systemReserved and the node's hugepages make 3Gi (3221225472 bytes) (-1Gi)")


@pytest.mark.parametrize("pod_level,first", [(True, None), (False, EXPECTED_STATE_DIFFERS)])
def test_pod_level_blocks_replace_the_containers_with_the_gate(pod_level, first):
    """A pod's pod-level blocks (3Gi) hold more than its exclusive container's (1Gi): the table
    reserves 3Gi, which only a kubelet that reads podEntries accounts for."""
    state = memory_state({0: ({"memory": T(8 * GB, 5 * GB, 3 * GB, 0, 8 * GB)}, [0], 1)},
                         {"uid-a": {"app": (B([0], "memory", GB),)}}, {"uid-a": (B([0], "memory", 3 * GB),)})
    found = memory_refusals(state, machine=MemoryMachine({0: {"memory": 8 * GB}}), reserved={}, pod_level=pod_level)
    assert (found[0].message if found else None) == first


def test_assignment_refusal_names_the_block():
    state = memory_state(ONE_NODE, {"pod1": {"container1": (B([1], "memory", GB),)}})
    found = memory_refusals(state, machine=machine_of((2 * GB, 1)), reserved=RESERVED_512M)
    assert (found[0].path, found[0].kind, found[0].detail) == (
        ("entries", "pod1", "container1"), ASSIGNMENT,
        "a memory block of 1Gi (1073741824 bytes) on NUMA 1: the machine state has no such NUMA node")


def test_zero_page_hugepage_sizes_are_tables_too():
    """cadvisor lists every hugepage size of the node, 0 pages included, and the kubelet keeps a
    table for each: a machine with 2Mi pages available and none allocated still has one."""
    tables = {"memory": T(GB, GB, 0, GB, 2 * GB), "hugepages-2Mi": T(0, 0, 0, 0, 0)}
    state = memory_state({0: (tables, [0], 0)})
    real = MemoryMachine({0: {"memory": 2 * GB, "hugepages-2Mi": 0}})
    assert memory_refusals(state, machine=real, reserved={0: {"memory": GB}}) == []
    lacking = MemoryMachine({0: {"memory": 2 * GB}})
    assert [r.detail for r in memory_refusals(state, machine=lacking, reserved={0: {"memory": GB}})] == [
        "NUMA 0: the checkpoint has a hugepages-2Mi table (0 bytes), which this machine lacks"]


def test_a_cross_numa_group_is_compared_once():
    """free and reserved are summed over the cells of a NUMA group (0,1): one difference, said once."""
    spanning = {n: ({"memory": T(GB, GB - reserved, reserved, GB, 2 * GB)}, [0, 1], 1)
                for n, reserved in ((0, 512 * MB), (1, 0))}
    state = memory_state(spanning, {"uid-a": {"app": (B([0, 1], "memory", 256 * MB),)}})
    found = memory_refusals(state, machine=None, reserved=None)
    assert [(r.path, r.detail) for r in found] == [
        (("machineState", "0", "memoryMap", "memory", "free"),
         "NUMA 0,1 memory free is 1536Mi (1610612736 bytes) in the checkpoint, but its total, reservation and the "
         "entries' memory blocks make 1792Mi (1879048192 bytes) (+256Mi)"),
        (("machineState", "0", "memoryMap", "memory", "reserved"),
         "NUMA 0,1 memory reserved is 512Mi (536870912 bytes) in the checkpoint, but its total, reservation and the "
         "entries' memory blocks make 256Mi (268435456 bytes) (-256Mi)")]
