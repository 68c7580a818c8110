"""NG401, NG404, NG405: each declared node pool judged as a whole.

A canary rollout only proves something when the nodes of the pool are configured alike and
built alike. These rules look at the kubelet configurations and the nodes of each pool the
config file declares, after the per-document rules, and name the odd one out. Nothing is
compared without a declaration: two pools' configurations in one repository, or the Node
objects of unrelated must-gathers, are not one pool.

Who belongs to a pool (`POOL_CHECK`, a run check: `collect` per input, `judge` once):
* a kubelet configuration, when the pool's `kubeletConfigs` globs (or `lint --pool NAME=DIR`)
  name its file, or when the platform object carrying it selects the pool's nodes
  (`PoolSettings.selected_by`, e.g. a PerformanceProfile's `nodeSelector`); only whole
  configurations are compared (not an overlay on a base numaguard does not see);
* a `v1` Node, when it carries every label of the pool's `nodeLabels` (or, for a pool declared
  by its taint alone, the taint), or when the globs name its file;
* a NodeResourceTopology, with the Node of the same name in the run, or by its file.

Library API (no I/O; parsed objects in, findings out; everything given is one pool), used by
`numaguard lint` per declared pool and meant for any caller that has one pool in hand:

    from numaguard.lint.rules.pool import KubeletExtract, pool_findings, hardware_from_node_object

    configs = [KubeletExtract.of("node-a", kubelet_config_dict), ...]   # or (source, dict) pairs
    nodes = [hardware_from_node_object(node_dict), ...]               # NodeHardware values
    for pv in pool_findings(configs, nodes):
        print(pv.source, pv.rule.id, pv.violation.path, pv.violation.message)

* `KubeletExtract`: a small per-file extract (source, effective placement settings, field
  positions, suppressions), so the engine keeps no documents between files;
* `NodeHardware`: what a node's hardware is, from a Node object (`hardware_from_node_object`),
  a NodeResourceTopology (`hardware_from_nrt`) or a numaguard node description
  (`hardware_from_topology`);
* `pool_findings(configs, nodes) -> list[PoolViolation]`: every finding, each naming its
  source (file or node) and the path of the field inside it.

How the odd one out is chosen: for each setting, the value most configurations share is the
reference, and every configuration holding another value gets one finding at that field,
naming the files (or nodes) on both sides. When no value has a strict majority (2 against 2),
every configuration gets the finding and the message says there is no majority.
"""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field, replace
from decimal import Decimal
from typing import Any, Iterable

# The kubelet model (numaguard.lint.k8s.kubelet) is imported where a configuration is judged: a
# lint of pods alone needs none of it.
from numaguard.lint.k8s.cpuset import CPUSetError, format_cpuset
from numaguard.lint.k8s.quantity import format_bytes, parse_quantity
from numaguard.lint.model import ObjectRef, Path, Severity, Violation, items
from numaguard.lint.rules.base import LintContext, Place, Rule, RunCheck, RunViolation, Subject

POOL_INCONSISTENT = Rule(
    id="NG401", name="pool-inconsistent", severity=Severity.ERROR, target="run",
    title="KubeletConfigurations of one pool differ in a placement-relevant setting",
    rationale="A canary node proves something about the pool only when every node places pods "
              "the same way. A node whose gates, CPU/Memory/Topology Manager policies, options, "
              "scope or reservations differ admits, rejects and pins pods differently, so results "
              "from one node do not carry over. numaguard compares the effective values (defaults "
              "applied, quantities normalised) of the kubelet configurations of each declared pool; "
              "the value most files share is the reference, and each file holding another value is named.",
    remediation="Give every node of the pool the same kubelet configuration (one drop-in, one "
                "template), or split the nodes with a different configuration into their own pool "
                "with its own labels and taint.")

POOL_HARDWARE = Rule(
    id="NG404", name="pool-hardware-mismatch", severity=Severity.WARNING, target="run",
    title="Nodes of one pool have different hardware (sockets, NUMA nodes, CPUs or memory per NUMA node, SMT)",
    rationale="NUMA fit depends on the shape of the machine: a pod that fits one NUMA node of a "
              "32-CPU NUMA node is rejected on a 24-CPU one, and SMT changes what full-pcpus-only "
              "accepts. The article asks for a dedicated, homogeneous pool; simulation and canary "
              "results from one node only carry over to nodes built the same way.",
    remediation="Keep one hardware shape per pool (split the pool by instance type or machine "
                "model with node labels), or size pods for the smallest NUMA node of the pool.")

POOL_NOT_LINUX = Rule(
    id="NG405", name="pool-node-not-linux", severity=Severity.ERROR, target="run",
    title="A node of the pool is not Linux",
    rationale="Pod-level resources and the pod-level resource managers are Linux only: a Windows "
              "kubelet rejects pods with pod-level resources (PodLevelResourcesNotSupported).",
    remediation="Keep Windows nodes out of the pool (their own labels and taint).")

# A finding of the pool rules (the name library callers know).
PoolViolation = RunViolation


# ------------------------------------------------------------------------------- values

@dataclass(frozen=True)
class KubeletExtract:
    """What the pool rules need of one kubelet configuration: its source, its effective
    placement settings (`settings`: field path -> normalised value, printable), the raw
    config, where each field sits, its suppressions, and (in a lint run) where it came from
    and the pools it belongs to. `document_paths` maps a setting to the field of the platform
    object that carries it (None: the configuration is the document; `positions` are then
    keyed by those fields)."""

    source: str
    settings: dict[Path, str]
    config: dict
    positions: dict[Path, tuple[int, int]] = field(default_factory=dict)
    ref: ObjectRef | None = None
    ignores: frozenset[str] = frozenset()
    place: Place | None = None
    pools: tuple[str, ...] = ()
    document_paths: dict[Path, Path] | None = None

    @classmethod
    def of(cls, source: str, config: dict, *, version: tuple[int, int] = (1, 37), positions=None,
           ref: ObjectRef | None = None, ignores: frozenset[str] = frozenset(), place: Place | None = None,
           pools: tuple[str, ...] = (), locate_setting=None) -> "KubeletExtract":
        """`locate_setting(path) -> (document path, (line, column) or None)`: where each setting
        sits in the platform object carrying the configuration (positions are then keyed by
        those document paths)."""
        settings = placement_settings(config, version)
        paths = None
        if locate_setting is not None:
            located = {p: locate_setting(p) for p in settings}
            paths = {p: where for p, (where, _) in located.items()}
            positions = {where: at for where, at in located.values() if at is not None}
        return cls(source, settings, config, dict(positions or {}), ref, ignores, place, pools, paths)


@dataclass(frozen=True)
class NodeHardware:
    """A node's hardware as far as it is known (None = unknown, not compared)."""

    name: str
    source: str | None = None
    os: str | None = None
    sockets: int | None = None
    numa_nodes: int | None = None
    cpus_per_numa: tuple[int, ...] | None = None      # per NUMA node, sorted
    memory_per_numa: tuple[int, ...] | None = None    # bytes, sorted
    threads_per_core: int | None = None
    cpus: int | None = None
    memory: int | None = None                         # bytes
    ref: ObjectRef | None = None
    paths: dict[str, Path] = field(default_factory=dict)   # attribute -> where it was read
    place: Place | None = None                        # in a lint run: where the object was
    pools: tuple[str, ...] = ()                       # in a lint run: the pools it belongs to
    # A node described by several documents (its Node object and its NodeResourceTopology):
    # attribute -> (source, ref, place) of the document it was read from (see merge_hardware).
    origins: dict[str, tuple[str | None, ObjectRef | None, Place | None]] = field(default_factory=dict)

    def origin(self, attr: str) -> tuple[str, ObjectRef | None, Place | None]:
        """The source, object and place a finding about `attr` points at."""
        source, ref, place = self.origins.get(attr, (self.source, self.ref, self.place))
        return source or self.name, ref, place


_ATTRIBUTES = ("os", "sockets", "numa_nodes", "cpus_per_numa", "memory_per_numa", "threads_per_core",
               "cpus", "memory")


def merge_hardware(nodes: Iterable[NodeHardware]) -> list[NodeHardware]:
    """One record per node name: what each document of a node says (the Node object its OS,
    CPUs and memory, its NodeResourceTopology the NUMA layout) merged, the first document that
    knows an attribute giving it. Without this a node read from both counts twice."""
    merged: dict[str, NodeHardware] = {}
    for n in nodes:
        kept = merged.get(n.name)
        if kept is None:
            merged[n.name] = n
            continue
        values, paths, origins = {}, dict(kept.paths), dict(kept.origins)
        for attr in _ATTRIBUTES:
            if getattr(kept, attr) is None and getattr(n, attr) is not None:
                values[attr] = getattr(n, attr)
                origins[attr] = (n.source, n.ref, n.place)
                if attr in n.paths:
                    paths[attr] = n.paths[attr]
                else:
                    paths.pop(attr, None)
        for attr in _ATTRIBUTES:
            if attr not in origins and getattr(kept, attr) is not None:
                origins[attr] = (kept.source, kept.ref, kept.place)
        merged[n.name] = replace(kept, **values, paths=paths, origins=origins)
    return list(merged.values())


# ------------------------------------------------------------------------------- settings

GATES = ("PodLevelResources", "PodLevelResourceManagers")


def placement_settings(kc: dict, version: tuple[int, int] = (1, 37)) -> dict[Path, str]:
    """The placement-relevant settings of a KubeletConfiguration, effective (defaults applied)
    and normalised for comparison (quantities in bytes or CPUs, cpusets canonical)."""
    from numaguard.lint.k8s import kubelet as k

    out: dict[Path, str] = {}
    gates = k.effective_gates(kc, version)
    for gate in GATES:
        out[("featureGates", gate)] = str(gates.get(gate, False)).lower()
    out[("cpuManagerPolicy",)] = k.cpu_manager_policy(kc)[0]
    out[("memoryManagerPolicy",)] = k.memory_manager_policy(kc)[0]
    out[("topologyManagerPolicy",)] = k.topology_manager_policy(kc)[0]
    out[("topologyManagerScope",)] = k.topology_manager_scope(kc)[0]
    for opt_field in ("cpuManagerPolicyOptions", "topologyManagerPolicyOptions"):
        options = kc.get(opt_field)
        for name, value in sorted((options or {}).items()) if isinstance(options, dict) else ():
            out[(opt_field, str(name))] = str(value)
    for res_field in ("kubeReserved", "systemReserved"):
        for resource in ("cpu", "memory"):
            out[(res_field, resource)] = _quantity(k.reserved_quantity(kc, res_field, resource), resource)
    try:
        reserved = k.reserved_system_cpus(kc)
        out[("reservedSystemCPUs",)] = format_cpuset(reserved) if reserved else "(none)"
    except CPUSetError:
        out[("reservedSystemCPUs",)] = str(kc.get("reservedSystemCPUs"))
    out[("evictionHard", "memory.available")] = k.effective_eviction_hard(kc).get("memory.available", "(none)")
    by_numa = k.reserved_memory_by_numa(kc)
    out[("reservedMemory",)] = "; ".join(
        f"NUMA {n}: " + ", ".join(f"{r}={_quantity(v, r)}" for r, v in sorted(res.items()))
        for n, res in sorted(by_numa.items())) or "(none)"
    return out


def _quantity(value: Decimal, resource: str) -> str:
    if resource == "cpu":
        return format(value.normalize(), "f")
    return format_bytes(value) if value else "0"


def _extract(item: Any) -> KubeletExtract:
    if isinstance(item, KubeletExtract):
        return item
    source, config = item
    return KubeletExtract.of(str(source), config)


# ------------------------------------------------------------------------------- NG401

def _names(sources: list[str], limit: int = 4) -> str:
    shown = ", ".join(sources[:limit])
    return shown + (f" and {len(sources) - limit} more" if len(sources) > limit else "")


def _dotted(path: Path) -> str:
    return ".".join(str(p) for p in path)


def _pool_words(pool: str | None) -> str:
    return "the pool" if pool is None else f"pool {pool}"


def config_findings(configs: Iterable[Any], pool: str | None = None) -> list[PoolViolation]:
    """NG401 over KubeletExtracts (or (source, dict) pairs): one finding per file and field
    that differs from the pool's majority. `pool` names the pool in messages (None: "the pool")."""
    extracts = [_extract(c) for c in configs]
    if len(extracts) < 2:
        return []
    out: list[PoolViolation] = []
    fields = sorted({p for e in extracts for p in e.settings}, key=lambda p: tuple(map(str, p)))
    for path in fields:
        groups: dict[str, list[KubeletExtract]] = {}
        for e in extracts:
            groups.setdefault(e.settings.get(path, "(unset)"), []).append(e)
        if len(groups) < 2:
            continue
        counts = Counter({value: len(members) for value, members in groups.items()})
        ranked = counts.most_common()
        tie = len(ranked) > 1 and ranked[0][1] == ranked[1][1]
        reference = None if tie else ranked[0][0]
        summary = "; ".join(f"{value} in {_names([m.source for m in groups[value]])}" for value, _ in ranked)
        for value, members in groups.items():
            if value == reference:
                continue
            for e in members:
                if tie:
                    message = (f"{_dotted(path)} differs across {_pool_words(pool)} with no majority: "
                               f"{summary}. This one has {value}")
                else:
                    others = groups[reference]
                    message = (f"{_dotted(path)} is {value} here but {reference} in {len(others)} of "
                               f"{len(extracts)} configurations of {_pool_words(pool)} "
                               f"({_names([m.source for m in others])})")
                where = e.document_paths[path] if e.document_paths is not None else _present_path(e, path)
                out.append(PoolViolation(POOL_INCONSISTENT, e.source, Violation(path=where, message=message),
                                         e.ref, e.ignores, e.place))
    return out


def _present_path(e: KubeletExtract, path: Path) -> Path:
    """The deepest part of `path` that the file writes (a defaulted field points at its
    parent, or at the document)."""
    for n in range(len(path), 0, -1):
        if path[:n] in e.positions or (not e.positions and _has(e.config, path[:n])):
            return path[:n]
    return ()


def _has(config: dict, path: Path) -> bool:
    node: Any = config
    for step in path:
        if not isinstance(node, dict) or step not in node:
            return False
        node = node[step]
    return True


# ------------------------------------------------------------------------------- hardware

_HARDWARE_FIELDS = (
    ("sockets", "sockets"), ("numa_nodes", "NUMA nodes"), ("cpus_per_numa", "CPUs per NUMA node"),
    ("memory_per_numa", "memory per NUMA node"), ("threads_per_core", "threads per core"),
    ("cpus", "CPUs"), ("memory", "memory"))
MEMORY_TOLERANCE = Decimal("0.03")   # identical machines report slightly different MemTotal


def _show(attr: str, value: Any) -> str:
    if attr in ("memory", "memory_per_numa"):
        values = value if isinstance(value, tuple) else (value,)
        return "/".join(format_bytes(Decimal(v)) for v in values)
    if isinstance(value, tuple):
        return "/".join(map(str, value))
    return str(value)


def _same(attr: str, a: Any, b: Any) -> bool:
    if attr not in ("memory", "memory_per_numa"):
        return a == b
    left = a if isinstance(a, tuple) else (a,)
    right = b if isinstance(b, tuple) else (b,)
    return len(left) == len(right) and all(
        abs(Decimal(x) - Decimal(y)) <= MEMORY_TOLERANCE * max(Decimal(x), Decimal(y), Decimal(1))
        for x, y in zip(left, right))


def hardware_findings(nodes: Iterable[NodeHardware], pool: str | None = None) -> list[PoolViolation]:
    """NG405 for every node that is not Linux; NG404 for every node whose hardware differs
    from the pool's majority in some attribute (compared among the nodes where it is known).
    `pool` names the pool in messages (None: "the pool")."""
    nodes = merge_hardware(nodes)
    out: list[PoolViolation] = []
    for n in nodes:
        if n.os is not None and n.os.lower() != "linux":
            source, ref, place = n.origin("os")
            out.append(PoolViolation(POOL_NOT_LINUX, source, Violation(
                path=n.paths.get("os", ()), message=f"node {n.name} runs {n.os}, not Linux: pod-level resources "
                                                    "and the pod-level resource managers are Linux only"), ref,
                place=place))
    for attr, label in _HARDWARE_FIELDS:
        known = [n for n in nodes if getattr(n, attr) is not None]
        if len(known) < 2:
            continue
        groups: list[tuple[Any, list[NodeHardware]]] = []
        for n in known:
            for value, members in groups:
                if _same(attr, value, getattr(n, attr)):
                    members.append(n)
                    break
            else:
                groups.append((getattr(n, attr), [n]))
        if len(groups) < 2:
            continue
        groups.sort(key=lambda g: -len(g[1]))
        tie = len(groups[1][1]) == len(groups[0][1])
        reference = None if tie else groups[0]
        for value, members in groups:
            if reference is not None and members is reference[1]:
                continue
            for n in members:
                if tie:
                    summary = "; ".join(f"{_show(attr, v)} on {_names([m.name for m in ms])}" for v, ms in groups)
                    message = f"{label} differ across {_pool_words(pool)} with no majority: {summary}"
                else:
                    others = reference[1]
                    message = (f"node {n.name} has {_show(attr, value)} {label}, but {len(others)} of "
                               f"{len(known)} nodes of {_pool_words(pool)} have {_show(attr, reference[0])} "
                               f"({_names([m.name for m in others])})")
                source, ref, place = n.origin(attr)
                out.append(PoolViolation(POOL_HARDWARE, source,
                                         Violation(path=n.paths.get(attr, ()), message=message), ref,
                                         place=place))
    return out


def pool_findings(configs: Iterable[Any], nodes: Iterable[NodeHardware] = (),
                  pool: str | None = None) -> list[PoolViolation]:
    """Every finding about one pool: NG401 over its kubelet configurations, NG404/NG405 over
    its nodes. `configs` holds KubeletExtracts or (source, config dict) pairs."""
    return config_findings(configs, pool) + hardware_findings(nodes, pool)


# ------------------------------------------------------------------------------- the run check

def _collect(subject: Subject, ctx: LintContext) -> KubeletExtract | NodeHardware | None:
    """A pool member's extract: a whole kubelet configuration of some pool, or (when pools
    are declared) every Node and NodeResourceTopology, whose pools are settled at the end."""
    if subject.kind == "kubelet":
        if not subject.pools or not subject.whole:
            return None
        extract = KubeletExtract.of(subject.label, subject.data, version=ctx.kubernetes_version,
                                    positions=None if subject.locate_setting else subject.place().positions,
                                    ref=subject.ref, ignores=subject.ignores, pools=subject.pools,
                                    locate_setting=subject.locate_setting)
        return replace(extract, place=Place(subject.file, subject.line, subject.prefix, extract.positions))
    if subject.kind != "document" or not ctx.pools or not isinstance(subject.data, dict):
        return None
    data = subject.data
    kind, api = data.get("kind"), str(data.get("apiVersion") or "")
    if kind == "Node" and api == "v1":
        hardware = hardware_from_node_object(data, subject.label)
        meta = data.get("metadata") if isinstance(data.get("metadata"), dict) else {}
        spec = data.get("spec") if isinstance(data.get("spec"), dict) else {}
        taints = spec.get("taints") if isinstance(spec.get("taints"), list) else ()
        pools = subject.pools + tuple(p.pool.name for p in ctx.pools if p.pool.name not in subject.pools
                                      and p.pool.has_node(meta.get("labels"), taints))
    elif kind == "NodeResourceTopology" and api.startswith("topology.node.k8s.io/"):
        hardware, pools = hardware_from_nrt(data, subject.label), subject.pools
    else:
        return None
    return replace(hardware, place=subject.place(), pools=pools)


def _judge(extracts: list, ctx: LintContext) -> list[PoolViolation]:
    """NG401, NG404 and NG405 within each declared pool, in the config's order."""
    kubelets = [e for e in extracts if isinstance(e, KubeletExtract)]
    nodes = [e for e in extracts if isinstance(e, NodeHardware)]
    # A NodeResourceTopology belongs where the Node of the same name does.
    node_pools = {n.name: n.pools for n in nodes if n.ref is not None and n.ref.kind == "Node"}
    nodes = [n if n.pools or (n.ref is not None and n.ref.kind == "Node") else
             replace(n, pools=node_pools.get(n.name, ())) for n in nodes]
    kubelets = _named_apart(kubelets, nodes)
    named = len(ctx.pools) > 1
    out: list[PoolViolation] = []
    for pool in ctx.pools:
        name = pool.pool.name
        out += pool_findings([e for e in kubelets if name in e.pools], [n for n in nodes if name in n.pools],
                             name if named else None)
    return out


def _named_apart(kubelets: list[KubeletExtract], nodes: list[NodeHardware]) -> list[KubeletExtract]:
    """A file holding several of the pools' documents: each is named by file and line (the
    first one was named by its file alone while the file was being read)."""
    files = Counter(e.place.file for e in [*kubelets, *nodes] if e.place is not None)
    out = []
    for e in kubelets:
        place = e.place
        if place is not None and e.source == place.file and files[place.file] > 1 and place.line:
            e = replace(e, source=f"{place.file}:{place.line}")
        out.append(e)
    return out


# The rules above are judged by this one check (one collection, one judgement for all three).
POOL_CHECK = RunCheck("pool", _collect, _judge)
POOL_INCONSISTENT = replace(POOL_INCONSISTENT, run=POOL_CHECK)
POOL_HARDWARE = replace(POOL_HARDWARE, run=POOL_CHECK)
POOL_NOT_LINUX = replace(POOL_NOT_LINUX, run=POOL_CHECK)
RULES = (POOL_INCONSISTENT, POOL_HARDWARE, POOL_NOT_LINUX)


# ------------------------------------------------------------------------------- hardware readers

def hardware_from_node_object(node: dict, source: str | None = None) -> NodeHardware | None:
    """A `v1` Node: operating system (status.nodeInfo.operatingSystem, else the
    kubernetes.io/os label) and status.capacity cpu and memory."""
    if not isinstance(node, dict):
        return None
    meta = node.get("metadata") if isinstance(node.get("metadata"), dict) else {}
    status = node.get("status") if isinstance(node.get("status"), dict) else {}
    info = status.get("nodeInfo") if isinstance(status.get("nodeInfo"), dict) else {}
    labels = meta.get("labels") if isinstance(meta.get("labels"), dict) else {}
    paths: dict[str, Path] = {}
    os_name = info.get("operatingSystem")
    if isinstance(os_name, str):
        paths["os"] = ("status", "nodeInfo", "operatingSystem")
    else:
        os_name = labels.get("kubernetes.io/os")
        if isinstance(os_name, str):
            paths["os"] = ("metadata", "labels", "kubernetes.io/os")
        else:
            os_name = None
    capacity = status.get("capacity") if isinstance(status.get("capacity"), dict) else {}
    cpus = memory = None
    try:
        if "cpu" in capacity:
            cpus = int(parse_quantity(capacity["cpu"]))
            paths["cpus"] = ("status", "capacity", "cpu")
        if "memory" in capacity:
            memory = int(parse_quantity(capacity["memory"]))
            paths["memory"] = ("status", "capacity", "memory")
    except ValueError:
        pass
    name = str(meta.get("name") or source or "node")
    ref = ObjectRef(node.get("apiVersion"), node.get("kind"), None, meta.get("name"))
    return NodeHardware(name=name, source=source, os=os_name, cpus=cpus, memory=memory, ref=ref, paths=paths)


def hardware_from_nrt(nrt: dict, source: str | None = None) -> NodeHardware | None:
    """A NodeResourceTopology (topology.node.k8s.io/v1alpha2): NUMA nodes are the zones of
    type Node; CPUs and memory per NUMA node from each zone's `capacity`."""
    if not isinstance(nrt, dict):
        return None
    zones = [z for z in items(nrt.get("zones")) if isinstance(z, dict) and z.get("type") == "Node"]
    cpus, memory = [], []
    for zone in zones:
        for res in items(zone.get("resources")):
            if not isinstance(res, dict):
                continue
            try:
                if res.get("name") == "cpu":
                    cpus.append(int(parse_quantity(res.get("capacity"))))
                elif res.get("name") == "memory":
                    memory.append(int(parse_quantity(res.get("capacity"))))
            except ValueError:
                continue
    meta = nrt.get("metadata") if isinstance(nrt.get("metadata"), dict) else {}
    name = str(meta.get("name") or source or "node")
    return NodeHardware(
        name=name, source=source, numa_nodes=len(zones) or None,
        cpus_per_numa=tuple(sorted(cpus)) if len(cpus) == len(zones) and zones else None,
        memory_per_numa=tuple(sorted(memory)) if len(memory) == len(zones) and zones else None,
        cpus=sum(cpus) if cpus else None,
        ref=ObjectRef(nrt.get("apiVersion"), nrt.get("kind"), None, meta.get("name")),
        paths={"numa_nodes": ("zones",), "cpus_per_numa": ("zones",), "memory_per_numa": ("zones",)})


def hardware_from_topology(name: str, topology: Any, source: str | None = None) -> NodeHardware:
    """A numaguard node description's topology (`numaguard.lint.numa.topology.Topology`)."""
    per_numa = [len(topology.cpus_in_numa([n])) for n in topology.numa_ids]
    memory = [n.memory for n in topology.numa_nodes] if hasattr(topology, "numa_nodes") else []
    return NodeHardware(
        name=name, source=source or name, os="linux", sockets=topology.num_sockets,
        numa_nodes=topology.num_numa_nodes, cpus_per_numa=tuple(sorted(per_numa)),
        memory_per_numa=tuple(sorted(memory)) if memory and all(isinstance(m, int) for m in memory) else None,
        threads_per_core=topology.cpus_per_core, cpus=topology.num_cpus,
        memory=sum(memory) if memory and all(isinstance(m, int) for m in memory) else None)
