"""Node descriptions in formats other tools print: `lscpu` tables and NodeResourceTopology.

`numaguard.lint.numa.node` reads numaguard's own NodeProfile; these readers turn what a cluster already
has into the same `Node`:

* `lscpu --parse=CPU,CORE,SOCKET,NODE` output, read into an explicit topology (lscpu knows no
  memory sizes or NUMA distances: assumed values are stated in `Node.notes`);
* a `NodeResourceTopology` object (`topology.node.k8s.io/v1alpha2`, as published by the
  resource-topology-exporter / NFD topology-updater): NUMA zones with CPU counts, memory and
  hugepages, costs = distances (field names from k8stopologyawareschedwg/noderesourcetopology-api
  `pkg/apis/topology/v1alpha2/types.go`).

They live apart from `numaguard.lint.numa.node` because each is a format of its own with its own
assumptions; `numaguard.lint.numa.node` picks the reader (`parse_node_text`, `_from_documents`).
Both build on `numaguard.lint.numa.node_topology`.
"""
from __future__ import annotations

import re
from decimal import Decimal
from typing import Any

from numaguard.lint.numa.node_topology import (DEFAULT_ASSUMED_MEMORY_PER_NUMA_NODE, MAX_CPUS, MAX_NUMA_NODES,
                            REMOTE_DISTANCE, SAME_SOCKET_DISTANCE, Node, build_topology,
                            default_distances, explicit_topology, format_cpu_list)
from numaguard.lint.numa.node_fields import (HUGEPAGES_PREFIX, as_bytes, default_name, expect_keys, fail,
                                   as_int, as_list, as_mapping, page_size, as_quantity, type_name,
                                   object_name, whole_bytes)
from numaguard.lint.numa.topology import CPU, NUMANode
from numaguard.lint.numa.devices import is_device_resource
from numaguard.lint.k8s.quantity import format_bytes

NRT_API_GROUP = "topology.node.k8s.io"
NRT_ZONE_TYPE_NUMA = "Node"          # noderesourcetopology-api helper.ZoneTypeNUMANode


# ---------------------------------------------------------------------------------------------
# lscpu --parse=CPU,CORE,SOCKET,NODE


_LSCPU_ROW = re.compile(r"^\d+(,[^,]*)*$")
_LSCPU_DEFAULT_COLUMNS = ("CPU", "CORE", "SOCKET", "NODE")


def looks_like_lscpu(text: str) -> bool:
    """True when every non-comment line is a comma-separated row starting with a CPU number."""
    rows = [line.strip() for line in text.splitlines()
            if line.strip() and not line.lstrip().startswith("#")]
    return bool(rows) and all(_LSCPU_ROW.match(row) for row in rows)


def parse_lscpu(text: str, source: str, *, memory_per_numa_node: Any = None) -> Node:
    """Read `lscpu --parse=CPU,CORE,SOCKET,NODE` (other column orders are read from its
    `# CPU,Core,Socket,Node` header). Offline CPUs (empty fields, or ONLINE = N) are skipped."""
    columns = _LSCPU_DEFAULT_COLUMNS
    rows: list[tuple[int, list[str]]] = []
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if not line:
            continue
        if line.startswith("#"):
            header = [c.strip().upper() for c in line[1:].split(",")]
            if len(header) > 1 and "CPU" in header:
                columns = tuple(header)
            continue
        rows.append((number, [f.strip() for f in line.split(",")]))
    for needed in ("CPU", "CORE", "SOCKET"):
        if needed not in columns:
            fail(source, "columns", f"lscpu output lacks the {needed} column; run "
                  "lscpu --parse=CPU,CORE,SOCKET,NODE")
    index = {name: columns.index(name) for name in columns}
    notes: list[str] = []
    skipped: list[int] = []
    entries: list[dict] = []
    line_of_cpu: dict[int, int] = {}
    core_home: dict[tuple[int, int], tuple[int, int]] = {}
    for number, fields in rows:
        if len(fields) < len(columns):
            fields = fields + [""] * (len(columns) - len(fields))

        def field(name: str) -> str:
            return fields[index[name]] if name in index else ""

        try:
            cpu_id = int(field("CPU"))
        except ValueError:
            fail(source, f"line {number}", f"CPU {field('CPU')!r} is not a number")
        if "ONLINE" in index and field("ONLINE").upper() in ("N", "NO"):
            skipped.append(cpu_id)
            continue
        if field("CORE") in ("", "-") or field("SOCKET") in ("", "-"):
            skipped.append(cpu_id)
            continue
        values = {}
        for name in ("CORE", "SOCKET", "NODE"):
            text_value = field(name) or ("0" if name == "NODE" else "")
            if not text_value.isdigit():
                fail(source, f"line {number}", f"{name} {text_value!r} is not a number")
            values[name] = int(text_value)
        if cpu_id in line_of_cpu:
            fail(source, f"line {number}", f"CPU {cpu_id} is listed twice (also on line "
                  f"{line_of_cpu[cpu_id]})")
        line_of_cpu[cpu_id] = number
        core_key = (values["SOCKET"], values["CORE"])
        first_numa, first_line = core_home.setdefault(core_key, (values["NODE"], number))
        if first_numa != values["NODE"]:
            fail(source, f"line {number}", f"core {values['CORE']} of socket "
                  f"{values['SOCKET']} is on NUMA node {first_numa} (line {first_line}) and on "
                  f"NUMA node {values['NODE']}; a core belongs to one NUMA node")
        entries.append({"id": cpu_id, "core": values["CORE"], "socket": values["SOCKET"],
                        "numa": values["NODE"]})
    if skipped:
        notes.append(f"skipped offline CPUs {format_cpu_list(skipped)}")
    if "NODE" not in index:
        notes.append("lscpu output has no NODE column: all CPUs put on NUMA node 0")
    if memory_per_numa_node is None:
        memory = DEFAULT_ASSUMED_MEMORY_PER_NUMA_NODE
        notes.append(f"lscpu does not report memory: assumed {format_bytes(Decimal(memory))} per "
                     f"NUMA node (override it)")
    else:
        memory = as_bytes(memory_per_numa_node, source, "memoryPerNumaNode")
    numa_ids = sorted({e["numa"] for e in entries})
    if len(numa_ids) > MAX_NUMA_NODES:
        fail(source, "NODE", f"{len(numa_ids)} NUMA nodes; the kubelet's NUMA bitmask holds at "
              f"most {MAX_NUMA_NODES}")
    spec = {"cpus": entries, "numaNodes": [{"id": n, "memory": memory} for n in numa_ids]}
    topology = explicit_topology(spec, source, "lscpu")
    notes.append("lscpu does not report NUMA distances: assumed 10 local, "
                 f"{SAME_SOCKET_DISTANCE} same socket, {REMOTE_DISTANCE} other socket")
    return Node(default_name(source), topology, None, source, tuple(notes))


# ---------------------------------------------------------------------------------------------
# NodeResourceTopology (topology.node.k8s.io/v1alpha2)


_NRT_KEYS = {"apiVersion", "kind", "metadata", "topologyPolicies", "zones", "attributes"}


def parse_node_resource_topology(doc: dict, source: str) -> Node:
    """Read the NUMA zones of a NodeResourceTopology.

    The object has no CPU ids, only per-zone CPU counts, so the CPUs are numbered as the
    generator numbers them. Assumptions (stated in `Node.notes`): two threads per core when
    every zone has an even CPU count; NUMA nodes closer than 20 share a socket; a zone's
    `memory` capacity excludes its hugepages, so NUMA memory = memory + hugepages.
    """
    expect_keys(doc, _NRT_KEYS, source, "")
    api_version = doc.get("apiVersion")
    if api_version != f"{NRT_API_GROUP}/v1alpha2":
        fail(source, "apiVersion", f"expected '{NRT_API_GROUP}/v1alpha2', got {api_version!r}")
    name = object_name(doc, source)
    zones = as_list(doc.get("zones"), source, "zones")
    notes: list[str] = []
    numa: dict[int, dict] = {}
    for i, zone in enumerate(zones):
        where = f"zones[{i}]"
        zone = as_mapping(zone, source, where)
        if zone.get("type") != NRT_ZONE_TYPE_NUMA:
            continue
        zone_name = zone.get("name")
        numa_id = _nrt_numa_id(zone_name, source, f"{where}.name")
        if numa_id in numa:
            fail(source, f"{where}.name", f"zone {zone_name!r} is listed twice")
        resources_by_name: dict[str, tuple[Decimal, Decimal, str]] = {}
        zone_resources_raw: dict[str, Any] = {}
        for j, res in enumerate(as_list(zone.get("resources", []), source, f"{where}.resources")):
            rwhere = f"{where}.resources[{j}]"
            res = as_mapping(res, source, rwhere)
            res_name = res.get("name")
            if not isinstance(res_name, str):
                fail(source, f"{rwhere}.name", f"expected a string, got {type_name(res_name)}")
            if "capacity" not in res:
                fail(source, f"{rwhere}.capacity", "required")
            capacity = as_quantity(res["capacity"], source, f"{rwhere}.capacity")
            allocatable = as_quantity(res.get("allocatable", res["capacity"]), source,
                                    f"{rwhere}.allocatable")
            resources_by_name[res_name] = (capacity, allocatable, rwhere)
            zone_resources_raw[rwhere] = res["capacity"]
        if "cpu" not in resources_by_name:
            fail(source, f"{where}.resources", f"zone {zone_name!r} has no cpu resource")
        cpu_cap, cpu_alloc, cpu_where = resources_by_name["cpu"]
        if cpu_cap != cpu_cap.to_integral_value() or cpu_cap < 1:
            fail(source, f"{cpu_where}.capacity", f"expected a whole number of CPUs >= 1, "
                  f"got {zone_resources_raw[cpu_where]!r}")
        if cpu_alloc < cpu_cap:
            notes.append(f"{zone_name}: {cpu_cap - cpu_alloc} of {cpu_cap} CPUs are reserved "
                         f"(capacity - allocatable)")
        hugepages: dict[int, int] = {}
        hugepage_bytes = 0
        for res_name, (cap, _, rwhere) in resources_by_name.items():
            if res_name.startswith(HUGEPAGES_PREFIX):
                page = page_size(res_name, source, f"{rwhere}.name")
                if cap < 0 or cap % page:
                    fail(source, f"{rwhere}.capacity", f"{cap} bytes is not a whole number of "
                          f"{res_name[len(HUGEPAGES_PREFIX):]} pages")
                if cap:
                    hugepages[page] = int(cap // page)
                    hugepage_bytes += int(cap)
        if "memory" in resources_by_name:
            mem_cap, _, mwhere = resources_by_name["memory"]
            memory = whole_bytes(mem_cap, source, f"{mwhere}.capacity",
                                  zone_resources_raw[mwhere])
        else:
            memory = 0
            notes.append(f"{zone_name}: no memory resource; assumed 0")
        costs: dict[int, int] = {}
        for j, cost in enumerate(as_list(zone.get("costs", []) or [], source, f"{where}.costs")):
            cwhere = f"{where}.costs[{j}]"
            cost = as_mapping(cost, source, cwhere)
            other = _nrt_numa_id(cost.get("name"), source, f"{cwhere}.name")
            costs[other] = as_int(cost.get("value"), source, f"{cwhere}.value", minimum=1)
        zone_devices: dict[str, int] = {}
        for res_name, (cap, alloc, rwhere) in resources_by_name.items():
            if is_device_resource(res_name):
                # a device plugin's devices on this NUMA node (the topology-updater reports
                # every resource with NUMA affinity); allocatable is what pods can get
                if alloc != alloc.to_integral_value() or alloc < 0:
                    fail(source, f"{rwhere}.allocatable", f"expected a whole number of devices, "
                          f"got {alloc}")
                zone_devices[res_name] = int(alloc)
        numa[numa_id] = {"cpus": int(cpu_cap), "memory": memory + hugepage_bytes,
                         "devices": zone_devices,
                         "hugepages": hugepages, "costs": costs, "where": where}
    if not numa:
        fail(source, "zones", f"no zone of type {NRT_ZONE_TYPE_NUMA!r} (NUMA node)")
    if len(numa) > MAX_NUMA_NODES:
        fail(source, "zones", f"{len(numa)} NUMA zones; the kubelet's NUMA bitmask holds at "
              f"most {MAX_NUMA_NODES}")
    ids = sorted(numa)
    distances = None
    if all(numa[n]["costs"] for n in ids):
        distances = {}
        for n in ids:
            missing = [m for m in ids if m not in numa[n]["costs"]]
            if missing:
                fail(source, f"{numa[n]['where']}.costs",
                      f"no cost to {', '.join(f'node-{m}' for m in missing)}")
            distances[n] = {m: numa[n]["costs"][m] for m in ids}
    else:
        notes.append("zones carry no costs: assumed distances 10 local, "
                     f"{REMOTE_DISTANCE} remote, one socket per NUMA node")
    socket_of = _sockets_from_distances(ids, distances)
    if len(set(socket_of.values())) < len(ids):
        notes.append("NUMA nodes at distance < 20 from each other assumed on one socket")
    if distances is None:
        distances = default_distances(socket_of)
    threads = 2 if all(numa[n]["cpus"] % 2 == 0 for n in ids) else 1
    total_cores = sum(numa[n]["cpus"] // threads for n in ids)
    assumed = nrt_numbering(threads, total_cores)
    notes.append(f"CPU numbering assumed: {assumed}")
    if total_cores * threads > MAX_CPUS:
        fail(source, "zones", f"{total_cores * threads} CPUs is more than this tool models")
    cpus: list[CPU] = []
    core_base = 0
    for n in ids:
        cores = numa[n]["cpus"] // threads
        for local in range(cores):
            core = core_base + local
            for thread in range(threads):
                cpus.append(CPU(id=thread * total_cores + core, core=core, socket=socket_of[n],
                                numa=n, uncore_cache=n))
        core_base += cores
    numa_nodes = tuple(NUMANode(id=n, memory=numa[n]["memory"], hugepages=numa[n]["hugepages"])
                       for n in ids)
    devices: dict[str, dict[int, int]] = {}
    for n in ids:
        for res_name, count in numa[n]["devices"].items():
            devices.setdefault(res_name, {})[n] = count
    topology = build_topology(tuple(sorted(cpus)), numa_nodes, distances, source, "zones", devices,
                              assumed_numbering=assumed)
    for attr in as_list(doc.get("attributes") or [], source, "attributes"):
        if isinstance(attr, dict) and attr.get("name") in ("topologyManagerPolicy",
                                                           "topologyManagerScope"):
            notes.append(f"reported {attr['name']}: {attr.get('value')}")
    return Node(name, topology, None, source, tuple(notes))


def nrt_numbering(threads: int, total_cores: int) -> str:
    """The CPU numbering a NodeResourceTopology's CPU counts are read with, in words: as Linux
    numbers most x86 servers (the generator's numbering, node_topology.generated_topology)."""
    if threads == 1:
        return ("no CPU ids in its NodeResourceTopology, and an odd CPU count on a NUMA node: one thread "
                "per core taken")
    return (f"no CPU ids in its NodeResourceTopology: CPU n and n+{total_cores} taken as one core's two "
            "threads, as Linux numbers most x86 servers")


def _nrt_numa_id(name: Any, source: str, path: str) -> int:
    # noderesourcetopology-api helper/numanode: NUMA zones are named "node-<id>".
    match = re.fullmatch(r"node-(\d+)", name) if isinstance(name, str) else None
    if not match:
        fail(source, path, f"expected a NUMA zone name like 'node-0', got {name!r}")
    return int(match.group(1))


def _sockets_from_distances(ids: list[int], distances: dict | None) -> dict[int, int]:
    """Group NUMA nodes closer than 20 (sub-NUMA clusters of one package) into one socket."""
    socket_of: dict[int, int] = {}
    next_socket = 0
    for n in ids:
        if n in socket_of:
            continue
        socket_of[n] = next_socket
        if distances is not None:
            for m in ids:
                if m not in socket_of and distances[n][m] < 20 and distances[m][n] < 20:
                    socket_of[m] = next_socket
        next_socket += 1
    return socket_of
