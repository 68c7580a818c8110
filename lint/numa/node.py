"""Node descriptions for the NUMA simulator (`--node`): parse them into a `Node`.

Four inputs describe a machine:

* a `NodeProfile` (`numaguard.io/v1alpha1`) whose `spec.topology` is either a *generator*
  (sockets, NUMA nodes per socket, cores per NUMA node, threads per core, memory per NUMA node)
  or an *explicit* list of CPUs and NUMA nodes, with an optional `spec.kubeletConfig` (a path
  relative to the node file, or an inline KubeletConfiguration);
* the text printed by `lscpu --parse=CPU,CORE,SOCKET,NODE` (memory is not in it: a stated
  default or an override is used, and the `Node` says so in `notes`);
* a `NodeResourceTopology` object (`topology.node.k8s.io/v1alpha2`, as published by the
  resource-topology-exporter / NFD topology-updater): NUMA zones with CPU counts, memory and
  hugepages, costs = distances (field names from k8stopologyawareschedwg/noderesourcetopology-api
  `pkg/apis/topology/v1alpha2/types.go`);
* `builtin:NAME`, one of the profiles shipped in `lint/profiles/NAME.yaml`.

Every input error raises `NodeError` whose message starts with the source name and the path of
the field at fault (`nodes/x.yaml: spec.topology.cpus[3].id: ...`), never a traceback.

Only `load_node_file` and the built-in loader touch files (and the kubeletConfig path, which a
NodeProfile may name); everything else works on the text or dicts it is given.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from decimal import Decimal
from importlib import resources
from pathlib import Path
from typing import Any, Iterable

import yaml

from lint.numa.cpuset import format_cpuset, parse_cpuset as _parse_cpuset
from lint.numa.topology import CPU, NUMANode, Topology, TopologyError
from lint.quantity import format_bytes, parse_quantity

API_VERSION = "numaguard.io/v1alpha1"
NRT_API_GROUP = "topology.node.k8s.io"
NRT_ZONE_TYPE_NUMA = "Node"          # noderesourcetopology-api helper.ZoneTypeNUMANode
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

_HUGEPAGES_PREFIX = "hugepages-"


class NodeError(ValueError):
    """A node description that cannot be used; the message starts with source and field path."""


@dataclass(frozen=True)
class Node:
    name: str
    topology: Topology
    kubelet_config: dict | None
    source: str
    notes: tuple[str, ...] = ()       # assumptions made while reading (e.g. memory guessed)


# ---------------------------------------------------------------------------------------------
# entry points


def load_node(data: Any, *, source: str = "<node>", base_dir: str | Path | None = None,
              text: str | None = None, memory_per_numa_node: Any = None) -> Node:
    """Build a `Node` from a parsed document (NodeProfile or NodeResourceTopology dict), a list
    of parsed documents, the string `builtin:NAME`, or (with `text=`) raw file text.

    `memory_per_numa_node` (bytes or a quantity such as "128Gi") is used where the input does
    not state memory (lscpu output).
    """
    if text is not None:
        return parse_node_text(text, source, base_dir, memory_per_numa_node=memory_per_numa_node)
    if isinstance(data, str):
        if data.startswith("builtin:"):
            return load_builtin_profile(data[len("builtin:"):])
        return parse_node_text(data, source, base_dir, memory_per_numa_node=memory_per_numa_node)
    if isinstance(data, list):
        return _from_documents(data, source, base_dir)
    if isinstance(data, dict):
        return _from_documents([data], source, base_dir)
    raise NodeError(f"{source}: expected a NodeProfile or NodeResourceTopology object, "
                    f"got {_type_name(data)}")


def parse_node_text(text: str, source: str, base_dir: str | Path | None = None, *,
                    memory_per_numa_node: Any = None) -> Node:
    """Parse the text of a node file: lscpu parse output, or YAML/JSON documents."""
    if not isinstance(text, str):
        raise NodeError(f"{source}: expected text, got {_type_name(text)}")
    if looks_like_lscpu(text):
        return parse_lscpu(text, source, memory_per_numa_node=memory_per_numa_node)
    try:
        documents = [d for d in yaml.safe_load_all(text) if d is not None]
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" (line {mark.line + 1}, column {mark.column + 1})" if mark else ""
        problem = getattr(exc, "problem", None) or "not valid YAML"
        raise NodeError(f"{source}: not valid YAML{where}: {problem}") from None
    if not documents:
        raise NodeError(f"{source}: empty node description")
    return _from_documents(documents, source, base_dir)


def load_node_file(path: str | Path, *, memory_per_numa_node: Any = None) -> Node:
    """Read a node description from a file path or `builtin:NAME`."""
    ref = str(path)
    if ref.startswith("builtin:"):
        return load_builtin_profile(ref[len("builtin:"):])
    try:
        text = Path(ref).read_text(encoding="utf-8")
    except OSError as exc:
        raise NodeError(f"{ref}: cannot read node description: {exc.strerror or exc}") from None
    except UnicodeDecodeError:
        raise NodeError(f"{ref}: not UTF-8 text") from None
    return parse_node_text(text, ref, Path(ref).parent, memory_per_numa_node=memory_per_numa_node)


def list_builtin_profiles() -> list[str]:
    """Names accepted as `builtin:NAME`, sorted."""
    folder = resources.files("lint") / "profiles"
    if not folder.is_dir():
        return []
    return sorted(entry.name[:-len(".yaml")] for entry in folder.iterdir()
                  if entry.name.endswith(".yaml"))


def load_builtin_profile(name: str) -> Node:
    source = f"builtin:{name}"
    names = list_builtin_profiles()
    if name not in names:
        raise NodeError(f"{source}: no built-in profile named {name!r}; "
                        f"available: {', '.join(names) or 'none'}")
    entry = resources.files("lint") / "profiles" / f"{name}.yaml"
    text = entry.read_text(encoding="utf-8")
    with resources.as_file(entry) as real_path:
        return parse_node_text(text, source, Path(real_path).parent)


# ---------------------------------------------------------------------------------------------
# documents


def _from_documents(documents: list, source: str, base_dir: str | Path | None) -> Node:
    """One topology document (NodeProfile or NodeResourceTopology) and at most one
    KubeletConfiguration, which applies when the topology document names none."""
    topology_docs: list[tuple[int, dict]] = []
    kubelet_docs: list[tuple[int, dict]] = []
    for index, doc in enumerate(documents):
        where = f"document {index + 1}: " if len(documents) > 1 else ""
        if not isinstance(doc, dict):
            raise NodeError(f"{source}: {where}expected a mapping, got {_type_name(doc)}")
        kind = doc.get("kind")
        if kind == "NodeProfile" or kind == "NodeResourceTopology":
            topology_docs.append((index, doc))
        elif kind == KUBELET_CONFIG_KIND:
            kubelet_docs.append((index, doc))
        else:
            raise NodeError(f"{source}: {where}kind: expected NodeProfile, "
                            f"NodeResourceTopology or KubeletConfiguration, got {kind!r}")
    if len(topology_docs) != 1:
        raise NodeError(f"{source}: expected exactly one NodeProfile or NodeResourceTopology, "
                        f"found {len(topology_docs)}")
    if len(kubelet_docs) > 1:
        raise NodeError(f"{source}: more than one KubeletConfiguration document")
    _, doc = topology_docs[0]
    if doc["kind"] == "NodeProfile":
        node = parse_node_profile(doc, source, base_dir)
    else:
        node = parse_node_resource_topology(doc, source)
    if kubelet_docs:
        if node.kubelet_config is not None:
            raise NodeError(f"{source}: spec.kubeletConfig is set and a KubeletConfiguration "
                            f"document is also given; keep one")
        kc = kubelet_docs[0][1]
        check_kubelet_config_fits(kc, node.topology, source, "KubeletConfiguration")
        node = Node(node.name, node.topology, kc, node.source, node.notes)
    return node


def parse_node_profile(doc: dict, source: str, base_dir: str | Path | None = None) -> Node:
    _expect_keys(doc, {"apiVersion", "kind", "metadata", "spec", "status"}, source, "")
    if doc.get("apiVersion") != API_VERSION:
        _fail(source, "apiVersion", f"expected {API_VERSION!r}, got {doc.get('apiVersion')!r}")
    metadata = _mapping(doc.get("metadata", {}), source, "metadata")
    name = metadata.get("name", _default_name(source))
    if not isinstance(name, str) or not name:
        _fail(source, "metadata.name", f"expected a non-empty string, got {name!r}")
    spec = _mapping(doc.get("spec"), source, "spec")
    _expect_keys(spec, {"topology", "kubeletConfig"}, source, "spec")
    topology_spec = _mapping(spec.get("topology"), source, "spec.topology")
    if "cpus" in topology_spec:
        topology = explicit_topology(topology_spec, source, "spec.topology")
    elif "sockets" in topology_spec:
        topology = generated_topology(topology_spec, source, "spec.topology")
    else:
        _fail(source, "spec.topology", "give either a generator (sockets, numaNodesPerSocket, "
              "coresPerNumaNode, threadsPerCore, memoryPerNumaNode) or an explicit cpus list")
    notes: list[str] = []
    status = _mapping(doc.get("status", {}), source, "status")
    for i, warning in enumerate(_list(status.get("warnings", []), source, "status.warnings")):
        if not isinstance(warning, str):
            _fail(source, f"status.warnings[{i}]", f"expected a string, got {_type_name(warning)}")
        notes.append(warning)
    kubelet_config = _kubelet_config(spec.get("kubeletConfig"), source, base_dir)
    if kubelet_config is not None:
        check_kubelet_config_fits(kubelet_config, topology, source, "spec.kubeletConfig")
    return Node(name, topology, kubelet_config, source, tuple(notes))


def _kubelet_config(value: Any, source: str, base_dir: str | Path | None) -> dict | None:
    if value is None:
        return None
    if isinstance(value, dict):
        return value
    if not isinstance(value, str):
        _fail(source, "spec.kubeletConfig", "expected a path or an inline KubeletConfiguration, "
              f"got {_type_name(value)}")
    path = Path(value)
    if not path.is_absolute():
        path = Path(base_dir if base_dir is not None else ".") / path
    try:
        text = path.read_text(encoding="utf-8")
        documents = [d for d in yaml.safe_load_all(text) if d is not None]
    except OSError as exc:
        _fail(source, "spec.kubeletConfig", f"cannot read {str(path)!r}: "
              f"{exc.strerror or exc}")
    except UnicodeDecodeError:
        _fail(source, "spec.kubeletConfig", f"{str(path)!r} is not UTF-8 text")
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" line {mark.line + 1}" if mark else ""
        _fail(source, "spec.kubeletConfig", f"{str(path)!r}{where} is not valid YAML")
    configs = [d for d in documents if isinstance(d, dict) and d.get("kind") == KUBELET_CONFIG_KIND]
    if len(configs) != 1:
        _fail(source, "spec.kubeletConfig",
              f"{str(path)!r} must hold exactly one KubeletConfiguration, found {len(configs)}")
    return configs[0]


# ---------------------------------------------------------------------------------------------
# topology: generator


_GENERATOR_KEYS = {"sockets", "numaNodesPerSocket", "coresPerNumaNode", "threadsPerCore",
                   "memoryPerNumaNode", "hugepages", "distances", "coresPerUncoreCache"}


def generated_topology(spec: dict, source: str, path: str = "spec.topology") -> Topology:
    """Build the machine a generator describes, numbered as Linux commonly numbers x86 servers.

    CPU ids `0..C-1` are the first hardware thread of every core (socket by socket, NUMA node by
    NUMA node, core by core), `C..2C-1` the second threads in the same order, and so on (C =
    total cores); CPU `i` and `i + C` are siblings. A core's id is the id of its lowest thread,
    as the kubelet's `getUniqueCoreID` (pkg/kubelet/cm/cpumanager/topology/topology.go) makes it.
    """
    _expect_keys(spec, _GENERATOR_KEYS, source, path)
    sockets = _int(spec.get("sockets"), source, f"{path}.sockets", minimum=1)
    per_socket = _int(spec.get("numaNodesPerSocket", 1), source, f"{path}.numaNodesPerSocket",
                      minimum=1)
    cores_per_numa = _int(spec.get("coresPerNumaNode"), source, f"{path}.coresPerNumaNode",
                          minimum=1)
    threads = _int(spec.get("threadsPerCore", 1), source, f"{path}.threadsPerCore", minimum=1)
    if "memoryPerNumaNode" not in spec:
        _fail(source, f"{path}.memoryPerNumaNode", "required (e.g. 128Gi)")
    memory = _bytes(spec["memoryPerNumaNode"], source, f"{path}.memoryPerNumaNode")
    hugepages = _hugepages(spec.get("hugepages", {}), source, f"{path}.hugepages")
    per_uncore = spec.get("coresPerUncoreCache")
    if per_uncore is not None:
        per_uncore = _int(per_uncore, source, f"{path}.coresPerUncoreCache", minimum=1)
    numa_count = sockets * per_socket
    if numa_count > MAX_NUMA_NODES:
        _fail(source, f"{path}.numaNodesPerSocket",
              f"{sockets} sockets x {per_socket} = {numa_count} NUMA nodes; the kubelet's NUMA "
              f"bitmask holds at most {MAX_NUMA_NODES}")
    total_cores = numa_count * cores_per_numa
    if total_cores * threads > MAX_CPUS:
        _fail(source, f"{path}.coresPerNumaNode",
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
    return _topology(tuple(sorted(cpus)), numa_nodes, distances, source, path)


def default_distances(socket_of: dict[int, int]) -> dict[int, dict[int, int]]:
    """10 local, 11 to a NUMA node of the same socket, 21 to another socket."""
    return {a: {b: LOCAL_DISTANCE if a == b else
                SAME_SOCKET_DISTANCE if socket_of[a] == socket_of[b] else REMOTE_DISTANCE
                for b in socket_of} for a in socket_of}


# ---------------------------------------------------------------------------------------------
# topology: explicit


_EXPLICIT_KEYS = {"cpus", "numaNodes", "memoryPerNumaNode", "hugepages", "distances"}
_CPU_KEYS = {"id", "core", "socket", "numa", "uncoreCache"}
_NUMA_KEYS = {"id", "memory", "hugepages"}


def explicit_topology(spec: dict, source: str, path: str = "spec.topology") -> Topology:
    """Build the machine from listed CPUs (`{id, core, socket, numa}`) and NUMA nodes.

    Cores are identified by (socket, core) as cadvisor reports them, then renumbered to the
    lowest thread id of the core, the kubelet's unique core id.
    """
    _expect_keys(spec, _EXPLICIT_KEYS, source, path)
    raw_cpus = _list(spec.get("cpus"), source, f"{path}.cpus")
    rows: list[tuple[int, int, int, int, int | None]] = []
    seen_ids: dict[int, int] = {}
    for i, item in enumerate(raw_cpus):
        where = f"{path}.cpus[{i}]"
        item = _mapping(item, source, where)
        _expect_keys(item, _CPU_KEYS, source, where)
        for key in ("id", "core", "socket", "numa"):
            if key not in item:
                _fail(source, f"{where}.{key}", "required")
        cpu_id = _int(item["id"], source, f"{where}.id")
        if cpu_id in seen_ids:
            _fail(source, f"{where}.id", f"CPU id {cpu_id} is listed twice "
                  f"(also at {path}.cpus[{seen_ids[cpu_id]}])")
        seen_ids[cpu_id] = i
        uncore = item.get("uncoreCache")
        rows.append((cpu_id, _int(item["core"], source, f"{where}.core"),
                     _int(item["socket"], source, f"{where}.socket"),
                     _int(item["numa"], source, f"{where}.numa"),
                     None if uncore is None else _int(uncore, source, f"{where}.uncoreCache")))
    if not rows:
        _fail(source, f"{path}.cpus", "no CPUs listed")
    if len(rows) > MAX_CPUS:
        _fail(source, f"{path}.cpus", f"{len(rows)} CPUs is more than this tool models ({MAX_CPUS})")

    if "numaNodes" in spec:
        if "memoryPerNumaNode" in spec or "hugepages" in spec:
            _fail(source, f"{path}.memoryPerNumaNode",
                  "give memory and hugepages either per entry of numaNodes or for all NUMA "
                  "nodes, not both")
        numa_nodes = _numa_nodes(spec["numaNodes"], source, f"{path}.numaNodes")
    else:
        if "memoryPerNumaNode" not in spec:
            _fail(source, f"{path}.numaNodes", "required (or memoryPerNumaNode for every NUMA "
                  "node the CPUs name)")
        memory = _bytes(spec["memoryPerNumaNode"], source, f"{path}.memoryPerNumaNode")
        hugepages = _hugepages(spec.get("hugepages", {}), source, f"{path}.hugepages")
        numa_nodes = tuple(NUMANode(id=n, memory=memory, hugepages=dict(hugepages))
                           for n in sorted({row[3] for row in rows}))
    _check_numa_count(numa_nodes, source, f"{path}.numaNodes")
    _check_hugepages_fit(numa_nodes, source, f"{path}.numaNodes")
    numa_ids = {n.id for n in numa_nodes}

    # A physical core lives on one NUMA node: two NUMA ids for one (socket, core) is an error.
    core_home: dict[tuple[int, int], tuple[int, int]] = {}
    for i, (cpu_id, core, socket, numa, _) in enumerate(rows):
        if numa not in numa_ids:
            _fail(source, f"{path}.cpus[{i}].numa", f"CPU {cpu_id} is on NUMA node {numa}, "
                  f"which is not among the NUMA nodes {sorted(numa_ids)}")
        first = core_home.setdefault((socket, core), (numa, i))
        if first[0] != numa:
            _fail(source, f"{path}.cpus[{i}].numa", f"core {core} of socket {socket} is on NUMA "
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
    return _topology(cpus, numa_nodes, distances, source, path)


def _numa_nodes(value: Any, source: str, path: str) -> tuple[NUMANode, ...]:
    items = _list(value, source, path)
    if not items:
        _fail(source, path, "no NUMA nodes listed")
    nodes: list[NUMANode] = []
    seen: dict[int, int] = {}
    for i, item in enumerate(items):
        where = f"{path}[{i}]"
        item = _mapping(item, source, where)
        _expect_keys(item, _NUMA_KEYS, source, where)
        if "id" not in item:
            _fail(source, f"{where}.id", "required")
        if "memory" not in item:
            _fail(source, f"{where}.memory", "required (e.g. 128Gi)")
        numa_id = _int(item["id"], source, f"{where}.id")
        if numa_id in seen:
            _fail(source, f"{where}.id", f"NUMA node {numa_id} is listed twice "
                  f"(also at {path}[{seen[numa_id]}])")
        if numa_id >= MAX_NUMA_NODES:
            _fail(source, f"{where}.id", f"NUMA node ids must be 0..{MAX_NUMA_NODES - 1} (the "
                  f"kubelet's NUMA bitmask has {MAX_NUMA_NODES} bits)")
        seen[numa_id] = i
        nodes.append(NUMANode(id=numa_id, memory=_bytes(item["memory"], source, f"{where}.memory"),
                              hugepages=_hugepages(item.get("hugepages", {}), source,
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
            _fail(source, "columns", f"lscpu output lacks the {needed} column; run "
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
            _fail(source, f"line {number}", f"CPU {field('CPU')!r} is not a number")
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
                _fail(source, f"line {number}", f"{name} {text_value!r} is not a number")
            values[name] = int(text_value)
        if cpu_id in line_of_cpu:
            _fail(source, f"line {number}", f"CPU {cpu_id} is listed twice (also on line "
                  f"{line_of_cpu[cpu_id]})")
        line_of_cpu[cpu_id] = number
        core_key = (values["SOCKET"], values["CORE"])
        first_numa, first_line = core_home.setdefault(core_key, (values["NODE"], number))
        if first_numa != values["NODE"]:
            _fail(source, f"line {number}", f"core {values['CORE']} of socket "
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
        memory = _bytes(memory_per_numa_node, source, "memoryPerNumaNode")
    numa_ids = sorted({e["numa"] for e in entries})
    if len(numa_ids) > MAX_NUMA_NODES:
        _fail(source, "NODE", f"{len(numa_ids)} NUMA nodes; the kubelet's NUMA bitmask holds at "
              f"most {MAX_NUMA_NODES}")
    spec = {"cpus": entries, "numaNodes": [{"id": n, "memory": memory} for n in numa_ids]}
    topology = explicit_topology(spec, source, "lscpu")
    notes.append("lscpu does not report NUMA distances: assumed 10 local, "
                 f"{SAME_SOCKET_DISTANCE} same socket, {REMOTE_DISTANCE} other socket")
    return Node(_default_name(source), topology, None, source, tuple(notes))


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
    _expect_keys(doc, _NRT_KEYS, source, "")
    api_version = doc.get("apiVersion")
    if api_version != f"{NRT_API_GROUP}/v1alpha2":
        _fail(source, "apiVersion", f"expected '{NRT_API_GROUP}/v1alpha2', got {api_version!r}")
    metadata = _mapping(doc.get("metadata", {}), source, "metadata")
    name = metadata.get("name", _default_name(source))
    if not isinstance(name, str) or not name:
        _fail(source, "metadata.name", f"expected a non-empty string, got {name!r}")
    zones = _list(doc.get("zones"), source, "zones")
    notes: list[str] = []
    numa: dict[int, dict] = {}
    for i, zone in enumerate(zones):
        where = f"zones[{i}]"
        zone = _mapping(zone, source, where)
        if zone.get("type") != NRT_ZONE_TYPE_NUMA:
            continue
        zone_name = zone.get("name")
        numa_id = _nrt_numa_id(zone_name, source, f"{where}.name")
        if numa_id in numa:
            _fail(source, f"{where}.name", f"zone {zone_name!r} is listed twice")
        resources_by_name: dict[str, tuple[Decimal, Decimal, str]] = {}
        zone_resources_raw: dict[str, Any] = {}
        for j, res in enumerate(_list(zone.get("resources", []), source, f"{where}.resources")):
            rwhere = f"{where}.resources[{j}]"
            res = _mapping(res, source, rwhere)
            res_name = res.get("name")
            if not isinstance(res_name, str):
                _fail(source, f"{rwhere}.name", f"expected a string, got {_type_name(res_name)}")
            if "capacity" not in res:
                _fail(source, f"{rwhere}.capacity", "required")
            capacity = _quantity(res["capacity"], source, f"{rwhere}.capacity")
            allocatable = _quantity(res.get("allocatable", res["capacity"]), source,
                                    f"{rwhere}.allocatable")
            resources_by_name[res_name] = (capacity, allocatable, rwhere)
            zone_resources_raw[rwhere] = res["capacity"]
        if "cpu" not in resources_by_name:
            _fail(source, f"{where}.resources", f"zone {zone_name!r} has no cpu resource")
        cpu_cap, cpu_alloc, cpu_where = resources_by_name["cpu"]
        if cpu_cap != cpu_cap.to_integral_value() or cpu_cap < 1:
            _fail(source, f"{cpu_where}.capacity", f"expected a whole number of CPUs >= 1, "
                  f"got {zone_resources_raw[cpu_where]!r}")
        if cpu_alloc < cpu_cap:
            notes.append(f"{zone_name}: {cpu_cap - cpu_alloc} of {cpu_cap} CPUs are reserved "
                         f"(capacity - allocatable)")
        hugepages: dict[int, int] = {}
        hugepage_bytes = 0
        for res_name, (cap, _, rwhere) in resources_by_name.items():
            if res_name.startswith(_HUGEPAGES_PREFIX):
                page = _page_size(res_name, source, f"{rwhere}.name")
                if cap < 0 or cap % page:
                    _fail(source, f"{rwhere}.capacity", f"{cap} bytes is not a whole number of "
                          f"{res_name[len(_HUGEPAGES_PREFIX):]} pages")
                if cap:
                    hugepages[page] = int(cap // page)
                    hugepage_bytes += int(cap)
        if "memory" in resources_by_name:
            mem_cap, _, mwhere = resources_by_name["memory"]
            memory = _whole_bytes(mem_cap, source, f"{mwhere}.capacity",
                                  zone_resources_raw[mwhere])
        else:
            memory = 0
            notes.append(f"{zone_name}: no memory resource; assumed 0")
        costs: dict[int, int] = {}
        for j, cost in enumerate(_list(zone.get("costs", []) or [], source, f"{where}.costs")):
            cwhere = f"{where}.costs[{j}]"
            cost = _mapping(cost, source, cwhere)
            other = _nrt_numa_id(cost.get("name"), source, f"{cwhere}.name")
            costs[other] = _int(cost.get("value"), source, f"{cwhere}.value", minimum=1)
        numa[numa_id] = {"cpus": int(cpu_cap), "memory": memory + hugepage_bytes,
                         "hugepages": hugepages, "costs": costs, "where": where}
    if not numa:
        _fail(source, "zones", f"no zone of type {NRT_ZONE_TYPE_NUMA!r} (NUMA node)")
    if len(numa) > MAX_NUMA_NODES:
        _fail(source, "zones", f"{len(numa)} NUMA zones; the kubelet's NUMA bitmask holds at "
              f"most {MAX_NUMA_NODES}")
    ids = sorted(numa)
    distances = None
    if all(numa[n]["costs"] for n in ids):
        distances = {}
        for n in ids:
            missing = [m for m in ids if m not in numa[n]["costs"]]
            if missing:
                _fail(source, f"{numa[n]['where']}.costs",
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
    notes.append(f"NodeResourceTopology has no CPU ids: assumed {threads} thread(s) per core, "
                 f"CPUs numbered like a generated topology")
    total_cores = sum(numa[n]["cpus"] // threads for n in ids)
    if total_cores * threads > MAX_CPUS:
        _fail(source, "zones", f"{total_cores * threads} CPUs is more than this tool models")
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
    topology = _topology(tuple(sorted(cpus)), numa_nodes, distances, source, "zones")
    for attr in _list(doc.get("attributes") or [], source, "attributes"):
        if isinstance(attr, dict) and attr.get("name") in ("topologyManagerPolicy",
                                                           "topologyManagerScope"):
            notes.append(f"reported {attr['name']}: {attr.get('value')}")
    return Node(name, topology, None, source, tuple(notes))


def _nrt_numa_id(name: Any, source: str, path: str) -> int:
    # noderesourcetopology-api helper/numanode: NUMA zones are named "node-<id>".
    match = re.fullmatch(r"node-(\d+)", name) if isinstance(name, str) else None
    if not match:
        _fail(source, path, f"expected a NUMA zone name like 'node-0', got {name!r}")
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


# ---------------------------------------------------------------------------------------------
# the kubelet configuration against the machine


def check_kubelet_config_fits(kc: Any, topology: Topology, source: str, path: str) -> None:
    """Reject a KubeletConfiguration whose reservations name CPUs or NUMA nodes the machine
    lacks, or reserve more memory on a NUMA node than it has. Everything else about the
    configuration is the kubelet rules' business (they report findings, not errors)."""
    if not isinstance(kc, dict):
        _fail(source, path, f"expected a KubeletConfiguration mapping, got {_type_name(kc)}")
    kind = kc.get("kind", KUBELET_CONFIG_KIND)
    if kind != KUBELET_CONFIG_KIND:
        _fail(source, f"{path}.kind", f"expected {KUBELET_CONFIG_KIND!r}, got {kind!r}")
    reserved = kc.get("reservedSystemCPUs")
    if reserved is not None and reserved != "":
        if not isinstance(reserved, str):
            _fail(source, f"{path}.reservedSystemCPUs",
                  f"expected a cpuset string such as \"0,32\", got {_type_name(reserved)}")
        try:
            cpus = parse_cpuset(reserved)
        except ValueError as exc:
            _fail(source, f"{path}.reservedSystemCPUs", f"{reserved!r} is not a CPU list: {exc}")
        missing = sorted(cpus - set(topology.cpu_by_id))
        if missing:
            _fail(source, f"{path}.reservedSystemCPUs", f"names CPUs {format_cpu_list(missing)} that "
                  f"the node lacks (it has {format_cpu_list(sorted(topology.cpu_by_id))})")
    entries = kc.get("reservedMemory")
    if entries is None:
        return
    entries = _list(entries, source, f"{path}.reservedMemory")
    by_id = {n.id: n for n in topology.numa_nodes}
    totals: dict[tuple[int, str], int] = {}
    for i, entry in enumerate(entries):
        where = f"{path}.reservedMemory[{i}]"
        entry = _mapping(entry, source, where)
        if "numaNode" not in entry:
            _fail(source, f"{where}.numaNode", "required")
        numa_id = _int(entry["numaNode"], source, f"{where}.numaNode")
        if numa_id not in by_id:
            _fail(source, f"{where}.numaNode", f"NUMA node {numa_id} does not exist on this node "
                  f"(it has {sorted(by_id)})")
        limits = _mapping(entry.get("limits", {}), source, f"{where}.limits")
        for resource, value in limits.items():
            lwhere = f"{where}.limits.{resource}"
            amount = _bytes(value, source, lwhere)
            key = (numa_id, str(resource))
            totals[key] = totals.get(key, 0) + amount
            numa_node = by_id[numa_id]
            if resource == "memory":
                regular = numa_node.memory - sum(p * c for p, c in numa_node.hugepages.items())
                have, what = regular, "regular memory (after hugepages)"
            elif isinstance(resource, str) and resource.startswith(_HUGEPAGES_PREFIX):
                page = _page_size(resource, source, lwhere)
                have, what = page * numa_node.hugepages.get(page, 0), f"{resource}"
            else:
                continue   # unsupported types are rule NG208's finding, not a machine mismatch
            if totals[key] > have:
                _fail(source, lwhere, f"reserves {format_bytes(Decimal(totals[key]))} on NUMA "
                      f"node {numa_id}, which has {format_bytes(Decimal(have))} of {what}")


def parse_cpuset(text: str) -> frozenset[int]:
    """A Linux CPU list ("0-3,8,10-11") as `k8s.io/utils/cpuset.Parse` reads it; ValueError
    when malformed or naming absurd CPU ids (so "0-999999999" cannot exhaust memory)."""
    for number in re.findall(r"[0-9]+", text if isinstance(text, str) else ""):
        if len(number) > 6 or int(number) >= MAX_CPUS * 64:
            raise ValueError(f"CPU id {number} is beyond any machine")
    return _parse_cpuset(text)


# ---------------------------------------------------------------------------------------------
# small typed readers: every failure names the field


def _fail(source: str, path: str, message: str):
    prefix = f"{source}: {path}: " if path else f"{source}: "
    raise NodeError(prefix + message)


def _type_name(value: Any) -> str:
    if value is None:
        return "nothing"
    return {dict: "a mapping", list: "a list", str: "a string", bool: "a boolean",
            int: "an integer", float: "a number"}.get(type(value), type(value).__name__)


def _mapping(value: Any, source: str, path: str) -> dict:
    if not isinstance(value, dict):
        _fail(source, path, f"expected a mapping, got {_type_name(value)}")
    return value


def _list(value: Any, source: str, path: str) -> list:
    if not isinstance(value, list):
        _fail(source, path, f"expected a list, got {_type_name(value)}")
    return value


def _int(value: Any, source: str, path: str, *, minimum: int = 0) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        if value is None:
            _fail(source, path, "required (an integer)")
        _fail(source, path, f"expected an integer, got {value!r}")
    if value < minimum:
        _fail(source, path, f"must be at least {minimum}, got {value}")
    return value


def _expect_keys(mapping: dict, known: set[str], source: str, path: str) -> None:
    unknown = sorted(str(k) for k in mapping if k not in known)
    if unknown:
        field = f"{path}.{unknown[0]}" if path else unknown[0]
        _fail(source, field, f"unknown field (expected one of: {', '.join(sorted(known))})")


def _quantity(value: Any, source: str, path: str) -> Decimal:
    try:
        return parse_quantity(value)
    except ValueError as exc:
        _fail(source, path, str(exc))


def _whole_bytes(amount: Decimal, source: str, path: str, shown: Any = None) -> int:
    shown = amount if shown is None else shown
    if amount < 0:
        _fail(source, path, f"must not be negative, got {shown}")
    if amount != amount.to_integral_value():
        _fail(source, path, f"{shown} is not a whole number of bytes")
    return int(amount)


def _bytes(value: Any, source: str, path: str) -> int:
    return _whole_bytes(_quantity(value, source, path), source, path, value)


def _page_size(name: str, source: str, path: str) -> int:
    size_text = name[len(_HUGEPAGES_PREFIX):] if name.startswith(_HUGEPAGES_PREFIX) else ""
    try:
        size = parse_quantity(size_text)
    except ValueError:
        _fail(source, path, f"{name!r} is not a hugepage resource (hugepages-<size>, "
              f"e.g. hugepages-1Gi)")
    if size <= 0 or size != size.to_integral_value():
        _fail(source, path, f"{name!r} has no usable page size")
    return int(size)


def _hugepages(value: Any, source: str, path: str) -> dict[int, int]:
    """`{hugepages-1Gi: 8}` (pages per NUMA node) as {page bytes: pages}."""
    if value is None:
        return {}
    mapping = _mapping(value, source, path)
    pages: dict[int, int] = {}
    for name, count in mapping.items():
        where = f"{path}.{name}"
        if not isinstance(name, str):
            _fail(source, where, f"{name!r} is not a hugepage resource name")
        size = _page_size(name, source, where)
        if size in pages:
            _fail(source, where, f"page size {format_bytes(Decimal(size))} given twice")
        number = _int(count, source, where)
        if number:
            pages[size] = number
    return pages


def _check_numa_count(numa_nodes: tuple[NUMANode, ...], source: str, path: str) -> None:
    if not numa_nodes:
        _fail(source, path, "no NUMA nodes")
    if len(numa_nodes) > MAX_NUMA_NODES:
        _fail(source, path, f"{len(numa_nodes)} NUMA nodes; the kubelet's NUMA bitmask holds at "
              f"most {MAX_NUMA_NODES}")


def _check_hugepages_fit(numa_nodes: Iterable[NUMANode], source: str, path: str) -> None:
    for n in numa_nodes:
        hugepage_bytes = sum(size * count for size, count in n.hugepages.items())
        if hugepage_bytes > n.memory:
            _fail(source, path, f"NUMA node {n.id}: hugepages take "
                  f"{format_bytes(Decimal(hugepage_bytes))}, more than its memory "
                  f"{format_bytes(Decimal(n.memory))}")


def _distances(value: Any, numa_ids: list[int], source: str, path: str) -> dict[int, dict[int, int]]:
    """A square matrix, rows and columns in ascending NUMA id order, 10 on the diagonal."""
    rows = _list(value, source, path)
    if len(rows) != len(numa_ids):
        _fail(source, path, f"expected {len(numa_ids)} rows (one per NUMA node "
              f"{numa_ids}), got {len(rows)}")
    matrix: dict[int, dict[int, int]] = {}
    for r, (a, row) in enumerate(zip(numa_ids, rows)):
        row = _list(row, source, f"{path}[{r}]")
        if len(row) != len(numa_ids):
            _fail(source, f"{path}[{r}]", f"expected {len(numa_ids)} values, got {len(row)}")
        matrix[a] = {}
        for c, (b, cell) in enumerate(zip(numa_ids, row)):
            d = _int(cell, source, f"{path}[{r}][{c}]", minimum=LOCAL_DISTANCE)
            if a == b and d != LOCAL_DISTANCE:
                _fail(source, f"{path}[{r}][{c}]", f"a NUMA node's distance to itself is "
                      f"{LOCAL_DISTANCE}, got {d}")
            if d > 255:
                _fail(source, f"{path}[{r}][{c}]", f"distances are at most 255, got {d}")
            matrix[a][b] = d
    return matrix


def _topology(cpus, numa_nodes, distances, source: str, path: str) -> Topology:
    _check_numa_count(tuple(numa_nodes), source, path)
    try:
        return Topology(cpus=tuple(cpus), numa_nodes=tuple(numa_nodes), distances=distances)
    except TopologyError as exc:   # a backstop: the checks above should have caught it
        _fail(source, path, str(exc))


def format_cpu_list(ids: Iterable[int]) -> str:
    """[0, 1, 2, 5] -> "0-2,5" (the kernel's cpulist format)."""
    return format_cpuset(ids)


def _default_name(source: str) -> str:
    if source.startswith("builtin:"):
        return source[len("builtin:"):]
    stem = Path(source).name
    for suffix in (".yaml", ".yml", ".json", ".txt"):
        if stem.endswith(suffix):
            stem = stem[:-len(suffix)]
    return stem or "node"
