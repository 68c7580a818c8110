"""The machine as the kubelet's CPU, Memory and Topology Managers see it.

Mirrors `pkg/kubelet/cm/cpumanager/topology/topology.go` (CPUTopology, CPUDetails): every
logical CPU has a core, a socket and a NUMA node. Core ids are unique machine-wide (the kubelet
derives them from the lowest thread id of the core, `getUniqueCoreID`), so two sockets never
share a core id. Memory and hugepages are per NUMA node (cadvisor's `Topology[].Memory` and
`HugePages`), and distances come from `/sys/devices/system/node/nodeN/distance`.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property


class TopologyError(ValueError):
    """An impossible machine description; the message names the offending field."""


@dataclass(frozen=True, order=True)
class CPU:
    id: int
    core: int
    socket: int
    numa: int
    uncore_cache: int | None = None


@dataclass(frozen=True)
class NUMANode:
    id: int
    # MemTotal of the NUMA node in bytes, hugepages included, as cadvisor reports it; the Memory
    # Manager subtracts the hugepages to get regular memory (memorymanager getDefaultMachineState).
    memory: int
    hugepages: dict[int, int] = field(default_factory=dict)   # page size in bytes -> number of pages


@dataclass(frozen=True)
class Topology:
    cpus: tuple[CPU, ...]
    numa_nodes: tuple[NUMANode, ...]
    distances: dict[int, dict[int, int]] | None = None    # from -> to -> distance (10 = local)
    # device-plugin resources per NUMA node (`nvidia.com/gpu` -> {0: 2, 1: 2}); empty when the
    # node description lists none, and then devices are not modelled at all.
    devices: dict[str, dict[int, int]] = field(default_factory=dict)
    # What was assumed about the CPU ids when the description gave none (a NodeResourceTopology
    # counts CPUs per NUMA node only): which ids are one core's threads. Everything that
    # depends on sibling threads (NG209's whole cores, full-pcpus-only, the NUMA map) rests on
    # it. Empty when the ids are the machine's own or the user's.
    assumed_numbering: str = ""

    def __post_init__(self) -> None:
        validate_topology(self)

    # --- derived views (as CPUTopology / CPUDetails offer them) ---------------------------
    @cached_property
    def cpu_by_id(self) -> dict[int, CPU]:
        return {c.id: c for c in self.cpus}

    @cached_property
    def numa_ids(self) -> tuple[int, ...]:
        return tuple(sorted(n.id for n in self.numa_nodes))

    @cached_property
    def socket_ids(self) -> tuple[int, ...]:
        return tuple(sorted({c.socket for c in self.cpus}))

    @cached_property
    def core_ids(self) -> tuple[int, ...]:
        return tuple(sorted({c.core for c in self.cpus}))

    @property
    def num_cpus(self) -> int:
        return len(self.cpus)

    @property
    def num_cores(self) -> int:
        return len(self.core_ids)

    @property
    def num_sockets(self) -> int:
        return len(self.socket_ids)

    @property
    def num_numa_nodes(self) -> int:
        return len(self.numa_nodes)

    @property
    def cpus_per_core(self) -> int:
        return self.num_cpus // self.num_cores if self.num_cores else 0

    def cpus_in_numa(self, numa_ids) -> frozenset[int]:
        wanted = set(numa_ids)
        return frozenset(c.id for c in self.cpus if c.numa in wanted)

    def distance(self, a: int, b: int) -> int:
        if self.distances is None:
            return 10 if a == b else 21
        return self.distances[a][b]

    def siblings(self, cpu_id: int) -> frozenset[int]:
        core = self.cpu_by_id[cpu_id].core
        return frozenset(c.id for c in self.cpus if c.core == core)


def validate_topology(topo: Topology) -> None:
    """Reject machines no kernel would describe; messages name the field at fault."""
    if not topo.numa_nodes:
        raise TopologyError("topology: no NUMA nodes")
    numa_ids = [n.id for n in topo.numa_nodes]
    if len(set(numa_ids)) != len(numa_ids):
        raise TopologyError(f"topology.numaNodes: NUMA node id listed twice in {sorted(numa_ids)}")
    if any(i < 0 or i >= 64 for i in numa_ids) or len(numa_ids) > 64:
        # bitmask.go: a NUMA affinity is a 64-bit mask
        raise TopologyError("topology.numaNodes: NUMA node ids must be 0..63 (the kubelet's "
                            "NUMA bitmask has 64 bits)")
    if not topo.cpus:
        raise TopologyError("topology.cpus: no CPUs")
    seen: set[int] = set()
    core_home: dict[int, tuple[int, int]] = {}
    for cpu in topo.cpus:
        if cpu.id in seen:
            raise TopologyError(f"topology.cpus: CPU id {cpu.id} listed twice")
        seen.add(cpu.id)
        if cpu.numa not in numa_ids:
            raise TopologyError(f"topology.cpus: CPU {cpu.id} is on NUMA node {cpu.numa}, "
                                f"which is not among the NUMA nodes {sorted(numa_ids)}")
        home = core_home.setdefault(cpu.core, (cpu.socket, cpu.numa))
        if home != (cpu.socket, cpu.numa):
            raise TopologyError(f"topology.cpus: core {cpu.core} is on socket/NUMA {home} and "
                                f"also on {(cpu.socket, cpu.numa)} (CPU {cpu.id})")
    for n in topo.numa_nodes:
        if n.memory < 0:
            raise TopologyError(f"topology: NUMA node {n.id} has negative memory")
    for resource, per_numa in topo.devices.items():
        for n, count in per_numa.items():
            if n not in numa_ids:
                raise TopologyError(f"topology.devices.{resource}: NUMA node {n} is not among the "
                                    f"NUMA nodes {sorted(numa_ids)}")
            if count < 0:
                raise TopologyError(f"topology.devices.{resource}: negative count on NUMA node {n}")
    if topo.distances is not None:
        for a in numa_ids:
            row = topo.distances.get(a)
            if row is None or any(b not in row for b in numa_ids):
                raise TopologyError(f"topology.distances: row for NUMA node {a} is missing or "
                                    f"incomplete")
