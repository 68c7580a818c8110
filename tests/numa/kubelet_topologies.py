"""The machine topologies of the kubelet's CPU Manager unit tests, as numaguard.lint.numa Topology objects.

Origins (kubernetes/kubernetes, pkg/kubelet/cm/cpumanager/):
* policy_test.go: topoSingleSocketHT, topoDualSocketHT, topoTripleSocketHT, topoDualSocketNoHT,
  topoDualSocketMultiNumaPerSocketHT, fakeTopoMultiSocketDualSocketPerNumaHT,
  topoDualSocketMultiNumaPerSocketHTLarge, topoQuadSocketFourWayHT, topoUncore* fixtures;
* topology_hints_test.go: returnMachineInfo() (the cadvisor machine of the hint tables),
  with core ids as topology.Discover derives them (lowest thread id of the core).

Core ids are the kubelet's (unique machine-wide); NUMA node memory is irrelevant here (1 GiB).
"""
from __future__ import annotations

from numaguard.lint.numa.topology import CPU, NUMANode, Topology

GIB = 1 << 30


def _topology(cpus: list[CPU]) -> Topology:
    numas = sorted({c.numa for c in cpus})
    return Topology(cpus=tuple(sorted(cpus)), numa_nodes=tuple(NUMANode(n, GIB) for n in numas))


def _from_cores(cores: list[tuple[int, int, int, tuple[int, ...]]]) -> Topology:
    """cores: (core id, socket, NUMA node, thread ids)."""
    return _topology([CPU(cpu, core, socket, numa)
                      for core, socket, numa, threads in cores for cpu in threads])


# topoSingleSocketHT: 8 CPUs, 4 cores; CPU i and i+4 are siblings
SINGLE_SOCKET_HT = _topology([CPU(i, i % 4, 0, 0) for i in range(8)])

# topoDualSocketHT: 12 CPUs; even CPUs on socket/NUMA 0, odd on 1; CPU i and i+6 are siblings
DUAL_SOCKET_HT = _topology([CPU(i, i % 6, i % 2, i % 2) for i in range(12)])

# topoTripleSocketHT: 18 CPUs, 9 cores; pairs (0,1),(2,3).. are siblings; NUMA id = socket id
_TRIPLE_SOCKET_OF_CORE = {0: 1, 1: 1, 2: 1, 3: 0, 4: 0, 5: 0, 6: 2, 7: 2, 8: 2}
TRIPLE_SOCKET_HT = _topology([CPU(i, i // 2, _TRIPLE_SOCKET_OF_CORE[i // 2],
                                  _TRIPLE_SOCKET_OF_CORE[i // 2]) for i in range(18)])

# topoDualSocketNoHT: 8 CPUs, 0-3 socket/NUMA 0, 4-7 socket/NUMA 1
DUAL_SOCKET_NO_HT = _topology([CPU(i, i, i // 4, i // 4) for i in range(8)])

# topoDualSocketMultiNumaPerSocketHT (dual Xeon Gold 6230): 80 CPUs, 40 cores, 2 sockets,
# 4 NUMA nodes: NUMA n holds 10n..10n+9 and 40+10n..40+10n+9; CPU i and i+40 are siblings
DUAL_SOCKET_MULTI_NUMA_PER_SOCKET_HT = _topology(
    [CPU(i, i % 40, (i % 40) // 20, (i % 40) // 10) for i in range(80)])

# fakeTopoMultiSocketDualSocketPerNumaHT: same CPUs, NUMA and sockets swapped (4 sockets, 2 NUMA)
FAKE_MULTI_SOCKET_DUAL_SOCKET_PER_NUMA_HT = _topology(
    [CPU(i, i % 40, (i % 40) // 10, (i % 40) // 20) for i in range(80)])

# topoDualSocketMultiNumaPerSocketHTLarge (dual AMD EPYC 7742, NPS=4): 256 CPUs, 128 cores,
# NUMA n holds 16n..16n+15 and 128+16n..; CPU i and i+128 are siblings
DUAL_SOCKET_MULTI_NUMA_PER_SOCKET_HT_LARGE = _topology(
    [CPU(i, i % 128, (i % 128) // 64, (i % 128) // 16) for i in range(256)])

# topoQuadSocketFourWayHT (KNL SNC4): 288 CPUs, 72 cores of 4 threads, socket n = NUMA n.
# (core id, threads) per socket, transcribed from policy_test.go.
_QUAD = {
    0: [(0, (0, 169, 109, 229)), (1, (50, 170, 110, 230)), (64, (1, 25, 13, 38)),
        (65, (2, 26, 14, 39)), (72, (9, 33, 21, 46)), (73, (10, 34, 22, 47)),
        (8, (57, 177, 117, 237)), (9, (58, 178, 118, 238)), (24, (71, 191, 131, 251)),
        (25, (72, 192, 132, 252)), (32, (79, 199, 139, 259)), (33, (80, 200, 140, 260)),
        (40, (87, 207, 147, 267)), (41, (88, 208, 148, 268)), (48, (95, 215, 155, 275)),
        (49, (96, 216, 156, 276)), (56, (103, 223, 163, 283)), (57, (104, 224, 164, 284))],
    1: [(66, (3, 27, 15, 40)), (67, (4, 28, 16, 41)), (74, (11, 35, 23, 48)),
        (75, (12, 36, 24, 49)), (2, (51, 171, 111, 231)), (3, (52, 172, 112, 232)),
        (10, (59, 179, 119, 239)), (11, (60, 180, 120, 240)), (18, (65, 185, 125, 245)),
        (19, (66, 186, 126, 246)), (26, (73, 193, 133, 253)), (27, (74, 194, 134, 254)),
        (34, (81, 201, 141, 261)), (35, (82, 202, 142, 262)), (42, (89, 209, 149, 269)),
        (43, (90, 210, 150, 270)), (50, (97, 217, 157, 277)), (51, (98, 218, 158, 278))],
    2: [(68, (5, 29, 17, 42)), (69, (6, 30, 18, 43)), (4, (53, 173, 113, 233)),
        (5, (54, 174, 114, 234)), (12, (61, 181, 121, 241)), (13, (62, 182, 122, 242)),
        (20, (67, 187, 127, 247)), (21, (68, 188, 128, 248)), (28, (75, 195, 135, 255)),
        (29, (76, 196, 136, 256)), (36, (83, 203, 143, 263)), (37, (84, 204, 144, 264)),
        (44, (91, 211, 151, 271)), (45, (92, 212, 152, 272)), (52, (99, 219, 159, 279)),
        (53, (100, 220, 160, 280)), (60, (105, 225, 165, 285)), (61, (106, 226, 166, 286))],
    3: [(70, (7, 31, 19, 44)), (71, (8, 32, 20, 45)), (63, (37, 168, 108, 228)),
        (62, (107, 227, 167, 287)), (6, (55, 175, 115, 235)), (7, (56, 176, 116, 236)),
        (14, (63, 183, 123, 243)), (15, (64, 184, 124, 244)), (22, (69, 189, 129, 249)),
        (23, (70, 190, 130, 250)), (30, (77, 197, 137, 257)), (31, (78, 198, 138, 258)),
        (38, (85, 205, 145, 265)), (39, (86, 206, 146, 266)), (46, (93, 213, 153, 273)),
        (47, (94, 214, 154, 274)), (54, (101, 221, 161, 281)), (55, (102, 222, 162, 282))],
}
QUAD_SOCKET_FOUR_WAY_HT = _from_cores(
    [(core, socket, socket, threads) for socket, cores in _QUAD.items() for core, threads in cores])


def _uncore(cpus: list[tuple[int, int, int, int, int]]) -> Topology:
    """(cpu, core, socket, numa, uncore cache)"""
    return _topology([CPU(i, core, socket, numa, cache) for i, core, socket, numa, cache in cpus])


# topoUncoreSingleSocketNoSMT (AMD EPYC 7452, NPS=1): 32 CPUs = cores, 8 caches of 4 CPUs, 1 NUMA
UNCORE_SINGLE_SOCKET_NO_SMT = _uncore([(i, i, 0, 0, i // 4) for i in range(32)])

# topoUncoreDualSocketNoSMT: 16 CPUs, sockets/NUMA 0 (0-7) and 1 (8-15), 4 caches of 4 CPUs
UNCORE_DUAL_SOCKET_NO_SMT = _uncore([(i, i, i // 8, i // 8, i // 4) for i in range(16)])

# topoUncoreSingleSocketMultiNuma: 16 CPUs, 1 socket, NUMA 0 (0-7) and 1 (8-15), 4 caches
UNCORE_SINGLE_SOCKET_MULTI_NUMA = _uncore([(i, i, 0, i // 8, i // 4) for i in range(16)])

# topoUncoreSingleSocketSMT: 16 CPUs, 8 cores (CPU i and i+8 siblings), 2 caches (cores 0-3, 4-7)
UNCORE_SINGLE_SOCKET_SMT = _uncore([(i, i % 8, 0, 0, (i % 8) // 4) for i in range(16)])

# topology_hints_test.go returnMachineInfo(): NUMA/socket 0 cores {0,6},{1,7},{2,8};
# NUMA/socket 1 cores {3,9},{4,10},{5,11}
HINTS_MACHINE = _from_cores([(0, 0, 0, (0, 6)), (1, 0, 0, (1, 7)), (2, 0, 0, (2, 8)),
                             (3, 1, 1, (3, 9)), (4, 1, 1, (4, 10)), (5, 1, 1, (5, 11))])

BY_NAME = {
    "topoSingleSocketHT": SINGLE_SOCKET_HT,
    "topoDualSocketHT": DUAL_SOCKET_HT,
    "topoTripleSocketHT": TRIPLE_SOCKET_HT,
    "topoDualSocketNoHT": DUAL_SOCKET_NO_HT,
    "topoDualSocketMultiNumaPerSocketHT": DUAL_SOCKET_MULTI_NUMA_PER_SOCKET_HT,
    "fakeTopoMultiSocketDualSocketPerNumaHT": FAKE_MULTI_SOCKET_DUAL_SOCKET_PER_NUMA_HT,
    "topoDualSocketMultiNumaPerSocketHTLarge": DUAL_SOCKET_MULTI_NUMA_PER_SOCKET_HT_LARGE,
    "topoQuadSocketFourWayHT": QUAD_SOCKET_FOUR_WAY_HT,
    "topoUncoreSingleSocketNoSMT": UNCORE_SINGLE_SOCKET_NO_SMT,
    "topoUncoreDualSocketNoSMT": UNCORE_DUAL_SOCKET_NO_SMT,
    "topoUncoreSingleSocketMultiNuma": UNCORE_SINGLE_SOCKET_MULTI_NUMA,
    "topoUncoreSingleSocketSMT": UNCORE_SINGLE_SOCKET_SMT,
    "returnMachineInfo": HINTS_MACHINE,
}
