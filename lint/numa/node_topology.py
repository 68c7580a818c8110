"""The machine model behind a node description: limits, default distances, the `Node` value
and the builders that turn generator or explicit topology fields into a checked `Topology`.

Every reader in `numaguard.lint.numa.node` (NodeProfile) and `numaguard.lint.numa.node_formats`
(lscpu, NodeResourceTopology) ends here, so all of them apply the same checks: CPU and NUMA
limits, hugepages that fit, and a KubeletConfiguration that fits the machine.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from decimal import Decimal
from typing import Any, Iterable


from numaguard.lint.k8s.cpuset import format_cpuset, parse_cpuset as _parse_cpuset
from numaguard.lint.numa.node_fields import (HUGEPAGES_PREFIX, as_bytes, as_hugepages, as_int,
                                   as_list, as_mapping, expect_keys, fail,
                                   page_size, type_name)
from numaguard.lint.numa.topology import CPU, NUMANode, Topology, TopologyError
from numaguard.lint.k8s.quantity import format_bytes

API_VERSION = "numaguard.io/v1alpha1"
KUBELET_CONFIG_KIND = "KubeletConfiguration"

# bitmask.go: the Topology Manager's NUMA affinity is a 64-bit mask.
MAX_NUMA_NODES = 64
# A guard against absurd generator input (a typo of 100000 cores would build a huge model).
MAX_CPUS = 16384

# Linux reports 10 for local access (ACPI SLIT). Between NUMA nodes of one socket (Intel
# sub-NUMA clustering, AMD NPS2/NPS4) `numactl -H` typically shows 11 or 12, across sockets
# 20-32; we default to 11 on-socket and 21 off-socket, the values of a common SNC2 Xeon.
LOCAL_DISTANCE = 10
SAME_SOCKET_DISTANCE = 11
REMOTE_DISTANCE = 21

# `lscpu` does not know memory sizes; without an override every NUMA node gets this.
DEFAULT_ASSUMED_MEMORY_PER_NUMA_NODE = 64 * 2**30


@dataclass(frozen=True)
class Node:
    name: str
    topology: Topology
    kubelet_config: dict | None
    source: str
    notes: tuple[str, ...] = ()       # assumptions made while reading (e.g. memory guessed)


# ---------------------------------------------------------------------------------------------
# topology: generator


_GENERATOR_KEYS = {"sockets", "numaNodesPerSocket", "coresPerNumaNode", "threadsPerCore",
                   "memoryPerNumaNode", "hugepages", "distances", "coresPerUncoreCache", "devices"}


def generated_topology(spec: dict, source: str, path: str = "spec.topology") -> Topology:
    """Build the machine a generator describes, numbered as Linux commonly numbers x86 servers.

    CPU ids `0..C-1` are the first hardware thread of every core (socket by socket, NUMA node by
    NUMA node, core by core), `C..2C-1` the second threads in the same order, and so on (C =
    total cores); CPU `i` and `i + C` are siblings. A core's id is the id of its lowest thread,
    as the kubelet's `getUniqueCoreID` (pkg/kubelet/cm/cpumanager/topology/topology.go) makes it.
    """
    expect_keys(spec, _GENERATOR_KEYS, source, path)
    sockets = as_int(spec.get("sockets"), source, f"{path}.sockets", minimum=1)
    per_socket = as_int(spec.get("numaNodesPerSocket", 1), source, f"{path}.numaNodesPerSocket",
                      minimum=1)
    cores_per_numa = as_int(spec.get("coresPerNumaNode"), source, f"{path}.coresPerNumaNode",
                          minimum=1)
    threads = as_int(spec.get("threadsPerCore", 1), source, f"{path}.threadsPerCore", minimum=1)
    if "memoryPerNumaNode" not in spec:
        fail(source, f"{path}.memoryPerNumaNode", "required (e.g. 128Gi)")
    memory = as_bytes(spec["memoryPerNumaNode"], source, f"{path}.memoryPerNumaNode")
    hugepages = as_hugepages(spec.get("hugepages", {}), source, f"{path}.hugepages")
    per_uncore = spec.get("coresPerUncoreCache")
    if per_uncore is not None:
        per_uncore = as_int(per_uncore, source, f"{path}.coresPerUncoreCache", minimum=1)
    numa_count = sockets * per_socket
    if numa_count > MAX_NUMA_NODES:
        fail(source, f"{path}.numaNodesPerSocket",
              f"{sockets} sockets x {per_socket} = {numa_count} NUMA nodes; the kubelet's NUMA "
              f"bitmask holds at most {MAX_NUMA_NODES}")
    total_cores = numa_count * cores_per_numa
    if total_cores * threads > MAX_CPUS:
        fail(source, f"{path}.coresPerNumaNode",
              f"{total_cores * threads} CPUs is more than this tool models ({MAX_CPUS})")

    cpus: list[CPU] = []
    for thread in range(threads):
        core_index = 0
        for socket in range(sockets):
            for local_numa in range(per_socket):
                numa = socket * per_socket + local_numa
                for local_core in range(cores_per_numa):
                    uncore = numa if per_uncore is None else (
                        numa * ((cores_per_numa + per_uncore - 1) // per_uncore)
                        + local_core // per_uncore)
                    cpus.append(CPU(id=thread * total_cores + core_index, core=core_index,
                                    socket=socket, numa=numa, uncore_cache=uncore))
                    core_index += 1
    socket_of = {n: n // per_socket for n in range(numa_count)}
    numa_nodes = tuple(NUMANode(id=n, memory=memory, hugepages=dict(hugepages))
                       for n in range(numa_count))
    _check_hugepages_fit(numa_nodes, source, path)
    if spec.get("distances") is not None:
        distances = _distances(spec["distances"], list(range(numa_count)), source,
                               f"{path}.distances")
    else:
        distances = default_distances(socket_of)
    devices = devices_per_numa(spec.get("devices"), list(range(numa_count)), source, f"{path}.devices")
    return build_topology(tuple(sorted(cpus)), numa_nodes, distances, source, path, devices)


def default_distances(socket_of: dict[int, int]) -> dict[int, dict[int, int]]:
    """10 local, 11 to a NUMA node of the same socket, 21 to another socket."""
    return {a: {b: LOCAL_DISTANCE if a == b else
                SAME_SOCKET_DISTANCE if socket_of[a] == socket_of[b] else REMOTE_DISTANCE
                for b in socket_of} for a in socket_of}


# ---------------------------------------------------------------------------------------------
# topology: explicit


_EXPLICIT_KEYS = {"cpus", "numaNodes", "memoryPerNumaNode", "hugepages", "distances", "devices"}
_CPU_KEYS = {"id", "core", "socket", "numa", "uncoreCache"}
_NUMA_KEYS = {"id", "memory", "hugepages", "devices"}


def explicit_topology(spec: dict, source: str, path: str = "spec.topology") -> Topology:
    """Build the machine from listed CPUs (`{id, core, socket, numa}`) and NUMA nodes.

    Cores are identified by (socket, core) as cadvisor reports them, then renumbered to the
    lowest thread id of the core, the kubelet's unique core id.
    """
    expect_keys(spec, _EXPLICIT_KEYS, source, path)
    raw_cpus = as_list(spec.get("cpus"), source, f"{path}.cpus")
    rows: list[tuple[int, int, int, int, int | None]] = []
    seen_ids: dict[int, int] = {}
    for i, item in enumerate(raw_cpus):
        where = f"{path}.cpus[{i}]"
        item = as_mapping(item, source, where)
        expect_keys(item, _CPU_KEYS, source, where)
        for key in ("id", "core", "socket", "numa"):
            if key not in item:
                fail(source, f"{where}.{key}", "required")
        cpu_id = as_int(item["id"], source, f"{where}.id")
        if cpu_id in seen_ids:
            fail(source, f"{where}.id", f"CPU id {cpu_id} is listed twice "
                  f"(also at {path}.cpus[{seen_ids[cpu_id]}])")
        seen_ids[cpu_id] = i
        uncore = item.get("uncoreCache")
        rows.append((cpu_id, as_int(item["core"], source, f"{where}.core"),
                     as_int(item["socket"], source, f"{where}.socket"),
                     as_int(item["numa"], source, f"{where}.numa"),
                     None if uncore is None else as_int(uncore, source, f"{where}.uncoreCache")))
    if not rows:
        fail(source, f"{path}.cpus", "no CPUs listed")
    if len(rows) > MAX_CPUS:
        fail(source, f"{path}.cpus", f"{len(rows)} CPUs is more than this tool models ({MAX_CPUS})")

    if "numaNodes" in spec:
        if "memoryPerNumaNode" in spec or "hugepages" in spec:
            fail(source, f"{path}.memoryPerNumaNode",
                  "give memory and hugepages either per entry of numaNodes or for all NUMA "
                  "nodes, not both")
        numa_nodes = _numa_nodes(spec["numaNodes"], source, f"{path}.numaNodes")
    else:
        if "memoryPerNumaNode" not in spec:
            fail(source, f"{path}.numaNodes", "required (or memoryPerNumaNode for every NUMA "
                  "node the CPUs name)")
        memory = as_bytes(spec["memoryPerNumaNode"], source, f"{path}.memoryPerNumaNode")
        hugepages = as_hugepages(spec.get("hugepages", {}), source, f"{path}.hugepages")
        numa_nodes = tuple(NUMANode(id=n, memory=memory, hugepages=dict(hugepages))
                           for n in sorted({row[3] for row in rows}))
    _check_numa_count(numa_nodes, source, f"{path}.numaNodes")
    _check_hugepages_fit(numa_nodes, source, f"{path}.numaNodes")
    numa_ids = {n.id for n in numa_nodes}

    # A physical core lives on one NUMA node: two NUMA ids for one (socket, core) is an error.
    core_home: dict[tuple[int, int], tuple[int, int]] = {}
    for i, (cpu_id, core, socket, numa, _) in enumerate(rows):
        if numa not in numa_ids:
            fail(source, f"{path}.cpus[{i}].numa", f"CPU {cpu_id} is on NUMA node {numa}, "
                  f"which is not among the NUMA nodes {sorted(numa_ids)}")
        first = core_home.setdefault((socket, core), (numa, i))
        if first[0] != numa:
            fail(source, f"{path}.cpus[{i}].numa", f"core {core} of socket {socket} is on NUMA "
                  f"node {first[0]} ({path}.cpus[{first[1]}]) and on NUMA node {numa} "
                  f"(CPU {cpu_id}); a core belongs to one NUMA node")
    unique_core = {}
    for cpu_id, core, socket, _, _ in rows:
        key = (socket, core)
        unique_core[key] = min(cpu_id, unique_core.get(key, cpu_id))
    cpus = tuple(sorted(CPU(id=cpu_id, core=unique_core[(socket, core)], socket=socket,
                            numa=numa, uncore_cache=uncore)
                        for cpu_id, core, socket, numa, uncore in rows))
    ordered_ids = sorted(numa_ids)
    if spec.get("distances") is not None:
        distances = _distances(spec["distances"], ordered_ids, source, f"{path}.distances")
    else:
        distances = default_distances(_socket_of_numa(cpus, ordered_ids))
    devices = devices_per_numa(spec.get("devices"), ordered_ids, source, f"{path}.devices")
    for i, item in enumerate(spec.get("numaNodes") or []):
        if isinstance(item, dict) and item.get("devices") is not None:
            where = f"{path}.numaNodes[{i}].devices"
            for resource, count in as_mapping(item["devices"], source, where).items():
                _check_device_name(resource, source, where)
                per = devices.setdefault(str(resource), {})
                if int(item["id"]) in per:
                    fail(source, f"{where}.{resource}", f"devices of {resource} on NUMA node "
                         f"{item['id']} are also given in {path}.devices")
                per[int(item["id"])] = as_int(count, source, f"{where}.{resource}", minimum=0)
    return build_topology(cpus, numa_nodes, distances, source, path, devices)


def _numa_nodes(value: Any, source: str, path: str) -> tuple[NUMANode, ...]:
    items = as_list(value, source, path)
    if not items:
        fail(source, path, "no NUMA nodes listed")
    nodes: list[NUMANode] = []
    seen: dict[int, int] = {}
    for i, item in enumerate(items):
        where = f"{path}[{i}]"
        item = as_mapping(item, source, where)
        expect_keys(item, _NUMA_KEYS, source, where)
        if "id" not in item:
            fail(source, f"{where}.id", "required")
        if "memory" not in item:
            fail(source, f"{where}.memory", "required (e.g. 128Gi)")
        numa_id = as_int(item["id"], source, f"{where}.id")
        if numa_id in seen:
            fail(source, f"{where}.id", f"NUMA node {numa_id} is listed twice "
                  f"(also at {path}[{seen[numa_id]}])")
        if numa_id >= MAX_NUMA_NODES:
            fail(source, f"{where}.id", f"NUMA node ids must be 0..{MAX_NUMA_NODES - 1} (the "
                  f"kubelet's NUMA bitmask has {MAX_NUMA_NODES} bits)")
        seen[numa_id] = i
        nodes.append(NUMANode(id=numa_id, memory=as_bytes(item["memory"], source, f"{where}.memory"),
                              hugepages=as_hugepages(item.get("hugepages", {}), source,
                                                   f"{where}.hugepages")))
    return tuple(sorted(nodes, key=lambda n: n.id))


def _socket_of_numa(cpus: Iterable[CPU], numa_ids: list[int]) -> dict[int, int]:
    """A NUMA node's socket (for default distances); memory-only nodes get their own."""
    socket_of: dict[int, int] = {}
    for cpu in cpus:
        socket_of.setdefault(cpu.numa, cpu.socket)
    spare = -1
    for n in numa_ids:
        if n not in socket_of:
            socket_of[n] = spare
            spare -= 1
    return socket_of


# ---------------------------------------------------------------------------------------------
# devices


def devices_per_numa(value: Any, numa_ids: list[int], source: str, path: str) -> dict[str, dict[int, int]]:
    """`{nvidia.com/gpu: {0: 2, 1: 2}}`: device-plugin resource -> NUMA node -> devices."""
    if value is None:
        return {}
    out: dict[str, dict[int, int]] = {}
    for resource, per_numa in as_mapping(value, source, path).items():
        _check_device_name(resource, source, path)
        where = f"{path}.{resource}"
        counts: dict[int, int] = {}
        for numa, count in as_mapping(per_numa, source, where).items():
            numa_id = as_int(numa if not isinstance(numa, str) or not numa.isdigit() else int(numa),
                             source, f"{where}.{numa}")
            if numa_id not in numa_ids:
                fail(source, f"{where}.{numa}", f"NUMA node {numa_id} is not among the NUMA nodes "
                     f"{numa_ids}")
            counts[numa_id] = as_int(count, source, f"{where}.{numa}", minimum=0)
        out[str(resource)] = counts
    return out


def _check_device_name(resource: Any, source: str, path: str) -> None:
    from numaguard.lint.numa.devices import is_device_resource
    if not isinstance(resource, str) or not is_device_resource(resource):
        fail(source, f"{path}.{resource}", f"{resource!r} is not a device-plugin resource name "
             f"(a domain-qualified extended resource such as nvidia.com/gpu)")


# ---------------------------------------------------------------------------------------------
# topology: checks shared by every input format


def _check_numa_count(numa_nodes: tuple[NUMANode, ...], source: str, path: str) -> None:
    if not numa_nodes:
        fail(source, path, "no NUMA nodes")
    if len(numa_nodes) > MAX_NUMA_NODES:
        fail(source, path, f"{len(numa_nodes)} NUMA nodes; the kubelet's NUMA bitmask holds at "
              f"most {MAX_NUMA_NODES}")


def _check_hugepages_fit(numa_nodes: Iterable[NUMANode], source: str, path: str) -> None:
    for n in numa_nodes:
        hugepage_bytes = sum(size * count for size, count in n.hugepages.items())
        if hugepage_bytes > n.memory:
            fail(source, path, f"NUMA node {n.id}: hugepages take "
                  f"{format_bytes(Decimal(hugepage_bytes))}, more than its memory "
                  f"{format_bytes(Decimal(n.memory))}")


def _distances(value: Any, numa_ids: list[int], source: str, path: str) -> dict[int, dict[int, int]]:
    """A square matrix, rows and columns in ascending NUMA id order, 10 on the diagonal."""
    rows = as_list(value, source, path)
    if len(rows) != len(numa_ids):
        fail(source, path, f"expected {len(numa_ids)} rows (one per NUMA node "
              f"{numa_ids}), got {len(rows)}")
    matrix: dict[int, dict[int, int]] = {}
    for r, (a, row) in enumerate(zip(numa_ids, rows)):
        row = as_list(row, source, f"{path}[{r}]")
        if len(row) != len(numa_ids):
            fail(source, f"{path}[{r}]", f"expected {len(numa_ids)} values, got {len(row)}")
        matrix[a] = {}
        for c, (b, cell) in enumerate(zip(numa_ids, row)):
            d = as_int(cell, source, f"{path}[{r}][{c}]", minimum=LOCAL_DISTANCE)
            if a == b and d != LOCAL_DISTANCE:
                fail(source, f"{path}[{r}][{c}]", f"a NUMA node's distance to itself is "
                      f"{LOCAL_DISTANCE}, got {d}")
            if d > 255:
                fail(source, f"{path}[{r}][{c}]", f"distances are at most 255, got {d}")
            matrix[a][b] = d
    return matrix


def build_topology(cpus, numa_nodes, distances, source: str, path: str,
                   devices: dict[str, dict[int, int]] | None = None, assumed_numbering: str = "") -> Topology:
    _check_numa_count(tuple(numa_nodes), source, path)
    try:
        return Topology(cpus=tuple(cpus), numa_nodes=tuple(numa_nodes), distances=distances,
                        devices=dict(devices or {}), assumed_numbering=assumed_numbering)
    except TopologyError as exc:   # a backstop: the checks above should have caught it
        fail(source, path, str(exc))


# ---------------------------------------------------------------------------------------------
# the kubelet configuration against the machine


def check_kubelet_config_fits(kc: Any, topology: Topology, source: str, path: str) -> None:
    """Reject a KubeletConfiguration whose reservations name CPUs or NUMA nodes the machine
    lacks, or reserve more memory on a NUMA node than it has. Everything else about the
    configuration is the kubelet rules' business (they report findings, not errors)."""
    if not isinstance(kc, dict):
        fail(source, path, f"expected a KubeletConfiguration mapping, got {type_name(kc)}")
    kind = kc.get("kind", KUBELET_CONFIG_KIND)
    if kind != KUBELET_CONFIG_KIND:
        fail(source, f"{path}.kind", f"expected {KUBELET_CONFIG_KIND!r}, got {kind!r}")
    reserved = kc.get("reservedSystemCPUs")
    if reserved is not None and reserved != "":
        if not isinstance(reserved, str):
            fail(source, f"{path}.reservedSystemCPUs",
                  f"expected a cpuset string such as \"0,32\", got {type_name(reserved)}")
        try:
            cpus = parse_cpuset(reserved)
        except ValueError as exc:
            fail(source, f"{path}.reservedSystemCPUs", f"{reserved!r} is not a CPU list: {exc}")
        missing = sorted(cpus - set(topology.cpu_by_id))
        if missing:
            fail(source, f"{path}.reservedSystemCPUs", f"names CPUs {format_cpu_list(missing)} that "
                  f"the node lacks (it has {format_cpu_list(sorted(topology.cpu_by_id))})")
    entries = kc.get("reservedMemory")
    if entries is None:
        return
    entries = as_list(entries, source, f"{path}.reservedMemory")
    by_id = {n.id: n for n in topology.numa_nodes}
    totals: dict[tuple[int, str], int] = {}
    for i, entry in enumerate(entries):
        where = f"{path}.reservedMemory[{i}]"
        entry = as_mapping(entry, source, where)
        if "numaNode" not in entry:
            fail(source, f"{where}.numaNode", "required")
        numa_id = as_int(entry["numaNode"], source, f"{where}.numaNode")
        if numa_id not in by_id:
            fail(source, f"{where}.numaNode", f"NUMA node {numa_id} does not exist on this node "
                  f"(it has {sorted(by_id)})")
        limits = as_mapping(entry.get("limits", {}), source, f"{where}.limits")
        for resource, value in limits.items():
            lwhere = f"{where}.limits.{resource}"
            amount = as_bytes(value, source, lwhere)
            key = (numa_id, str(resource))
            totals[key] = totals.get(key, 0) + amount
            numa_node = by_id[numa_id]
            if resource == "memory":
                regular = numa_node.memory - sum(p * c for p, c in numa_node.hugepages.items())
                have, what = regular, "regular memory (after hugepages)"
            elif isinstance(resource, str) and resource.startswith(HUGEPAGES_PREFIX):
                page = page_size(resource, source, lwhere)
                have, what = page * numa_node.hugepages.get(page, 0), f"{resource}"
            else:
                continue   # unsupported types are rule NG208's finding, not a machine mismatch
            if totals[key] > have:
                fail(source, lwhere, f"reserves {format_bytes(Decimal(totals[key]))} on NUMA "
                      f"node {numa_id}, which has {format_bytes(Decimal(have))} of {what}")


# ---------------------------------------------------------------------------------------------
# CPU lists


def parse_cpuset(text: str) -> frozenset[int]:
    """A Linux CPU list ("0-3,8,10-11") as `k8s.io/utils/cpuset.Parse` reads it; ValueError
    when malformed or naming absurd CPU ids (so "0-999999999" cannot exhaust memory)."""
    for number in re.findall(r"[0-9]+", text if isinstance(text, str) else ""):
        if len(number) > 6 or int(number) >= MAX_CPUS * 64:
            raise ValueError(f"CPU id {number} is beyond any machine")
    return _parse_cpuset(text)


def format_cpu_list(ids: Iterable[int]) -> str:
    """[0, 1, 2, 5] -> "0-2,5" (the kernel's cpulist format)."""
    return format_cpuset(ids)
