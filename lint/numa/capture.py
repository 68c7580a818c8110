"""Describe this machine as a NodeProfile (`numaguard node capture [--sysfs ROOT]`).

Reads the same sysfs files cadvisor reads for the kubelet's machine info
(google/cadvisor `utils/sysinfo/sysinfo.go`, `utils/sysfs/sysfs.go`):

* `ROOT/devices/system/cpu/online` and `cpuN/online`: only online CPUs exist for the kubelet;
* `cpuN/topology/physical_package_id` and `core_id` (core ids are per package, so a core is the
  pair; its id in the profile is its lowest thread id, the kubelet's `getUniqueCoreID`);
* `cpuN/cache/index3/id` when present: the uncore (L3) cache;
* `ROOT/devices/system/node/nodeN/{cpulist,meminfo,distance}` and
  `nodeN/hugepages/hugepages-<size>kB/nr_hugepages`.

Without node directories (a kernel without NUMA) the machine is one NUMA node 0 holding every
CPU, with MemTotal from `ROOT/../proc/meminfo`, or 0 and a warning in `status.warnings`.
The result is a plain dict in the explicit NodeProfile form that `numaguard.lint.numa.node` loads.
"""
from __future__ import annotations

import re
from decimal import Decimal
from pathlib import Path

import yaml

from numaguard.lint.numa.node import API_VERSION, NodeError, format_cpu_list, parse_cpuset
from numaguard.lint.k8s.quantity import format_bytes

_NODE_DIR = re.compile(r"node(\d+)")
_CPU_DIR = re.compile(r"cpu(\d+)")
_HUGEPAGE_DIR = re.compile(r"hugepages-(\d+)kB")
_MEMTOTAL = re.compile(r"MemTotal:\s+(\d+)\s*kB")


def capture_node(sysfs_root: str | Path = "/sys", *, name: str | None = None) -> dict:
    """Read a sysfs tree and return a NodeProfile (explicit topology) as a dict."""
    root = Path(sysfs_root)
    warnings: list[str] = []
    cpu_dir = root / "devices" / "system" / "cpu"
    node_dir = root / "devices" / "system" / "node"

    online = _online_cpus(cpu_dir, warnings)
    if not online:
        raise NodeError(f"{root}: no online CPUs found under {cpu_dir}")

    numa_of: dict[int, int] = {}
    numa_nodes: list[dict] = []
    node_ids = sorted(int(m.group(1)) for p in _listdir(node_dir)
                      if (m := _NODE_DIR.fullmatch(p.name)) and p.is_dir())
    for n in node_ids:
        here = node_dir / f"node{n}"
        cpulist = _read(here / "cpulist")
        if cpulist:
            try:
                for cpu in parse_cpuset(cpulist):
                    if cpu in online:
                        numa_of[cpu] = n
            except ValueError:
                warnings.append(f"node{n}/cpulist {cpulist!r} is not a CPU list; ignored")
        memory_kb = _memtotal_kb(_read(here / "meminfo"))
        if memory_kb is None:
            warnings.append(f"node{n}/meminfo has no MemTotal; memory taken as 0")
            memory_kb = 0
        entry: dict = {"id": n, "memory": _kib(memory_kb)}
        hugepages = _hugepages(here / "hugepages", warnings, f"node{n}")
        if hugepages:
            entry["hugepages"] = hugepages
        numa_nodes.append(entry)

    if not node_ids:
        memory_kb = _memtotal_kb(_read(root.parent / "proc" / "meminfo"))
        if memory_kb is None:
            warnings.append("no NUMA node directories and no readable ../proc/meminfo: one NUMA "
                            "node with memory 0")
            memory_kb = 0
        else:
            warnings.append("no NUMA node directories: one NUMA node 0 with all CPUs and the "
                            "machine's MemTotal")
        entry = {"id": 0, "memory": _kib(memory_kb)}
        hugepages = _hugepages(root / "kernel" / "mm" / "hugepages", warnings, "kernel/mm")
        if hugepages:
            entry["hugepages"] = hugepages
        numa_nodes.append(entry)
        numa_of = {cpu: 0 for cpu in online}

    cpus = _cpus(cpu_dir, online, numa_of, warnings)
    profile: dict = {
        "apiVersion": API_VERSION,
        "kind": "NodeProfile",
        "metadata": {"name": name or _hostname(root)},
        "spec": {"topology": {"cpus": cpus, "numaNodes": numa_nodes}},
    }
    distances = _distances(node_dir, node_ids, warnings)
    if distances is not None:
        profile["spec"]["topology"]["distances"] = distances
    if warnings:
        profile["status"] = {"warnings": warnings}
    return profile


def node_profile_yaml(profile: dict) -> str:
    """The profile as YAML, one CPU per line, fields in the order written."""
    header = ("# Captured by `numaguard node capture`. Add spec.kubeletConfig (a path or an inline\n"
              "# KubeletConfiguration) to simulate this node's CPU, Memory and Topology Managers.\n")
    body = yaml.safe_dump(profile, sort_keys=False, default_flow_style=None, width=100)
    return header + body


# ---------------------------------------------------------------------------------------------


def _online_cpus(cpu_dir: Path, warnings: list[str]) -> set[int]:
    present = {int(m.group(1)) for p in _listdir(cpu_dir) if (m := _CPU_DIR.fullmatch(p.name))}
    text = _read(cpu_dir / "online")
    online = set(present)
    if text:
        try:
            online = set(parse_cpuset(text)) & present if present else set(parse_cpuset(text))
        except ValueError:
            warnings.append(f"cpu/online {text!r} is not a CPU list; using every cpuN directory")
    offline = set()
    for cpu in sorted(online):
        # cpu0 often has no `online` file (it cannot be hot-unplugged): absent means online.
        if _read(cpu_dir / f"cpu{cpu}" / "online") == "0":
            offline.add(cpu)
    offline |= present - online
    if offline:
        warnings.append(f"offline CPUs left out: {format_cpu_list(offline)}")
    return online - offline


def _cpus(cpu_dir: Path, online: set[int], numa_of: dict[int, int],
          warnings: list[str]) -> list[dict]:
    raw: list[tuple[int, int, int, int | None]] = []
    for cpu in sorted(online):
        topo = cpu_dir / f"cpu{cpu}" / "topology"
        socket = _read_int(topo / "physical_package_id")
        core = _read_int(topo / "core_id")
        if socket is None or core is None:
            warnings.append(f"cpu{cpu}: no topology/core_id or physical_package_id; treated as "
                            f"its own core on socket 0")
            socket, core = socket or 0, -1 - cpu        # a core of its own
        raw.append((cpu, socket, core, _read_int(cpu_dir / f"cpu{cpu}" / "cache" / "index3" / "id")))
    unique_core: dict[tuple[int, int], int] = {}
    for cpu, socket, core, _ in raw:
        unique_core.setdefault((socket, core), cpu)      # sorted by cpu: the lowest thread id
    cpus = []
    missing_numa = []
    for cpu, socket, core, uncore in raw:
        if cpu not in numa_of:
            missing_numa.append(cpu)
        entry = {"id": cpu, "core": unique_core[(socket, core)], "socket": socket,
                 "numa": numa_of.get(cpu, 0)}
        if uncore is not None:
            entry["uncoreCache"] = uncore
        cpus.append(entry)
    if missing_numa:
        warnings.append(f"CPUs {format_cpu_list(missing_numa)} are in no node's cpulist; put on NUMA "
                        f"node 0")
    return cpus


def _distances(node_dir: Path, node_ids: list[int], warnings: list[str]) -> list[list[int]] | None:
    """nodeN/distance lists distances to the online nodes in ascending id order."""
    if not node_ids:
        return None
    matrix = []
    for n in node_ids:
        text = _read(node_dir / f"node{n}" / "distance")
        try:
            row = [int(v) for v in (text or "").split()]
        except ValueError:
            row = []
        if len(row) != len(node_ids):
            warnings.append(f"node{n}/distance does not list {len(node_ids)} distances; "
                            f"distances left to the defaults")
            return None
        matrix.append(row)
    return matrix


def _hugepages(folder: Path, warnings: list[str], where: str) -> dict[str, int]:
    """Pages per hugepage size, the sizes with none left out (a NodeProfile lists what exists)."""
    pages: dict[str, int] = {}
    for name, count in _hugepage_counts(folder).items():
        if count is None:
            warnings.append(f"{where}/hugepages/{name}/nr_hugepages unreadable; ignored")
        elif count:
            pages[_hugepage_resource(name)] = count
    return pages


def _hugepage_counts(folder: Path) -> dict[str, int | None]:
    """`hugepages-<size>kB` directory -> nr_hugepages (None: unreadable), every size listed."""
    return {entry.name: _read_int(entry / "nr_hugepages")
            for entry in sorted(_listdir(folder), key=lambda p: p.name) if _HUGEPAGE_DIR.fullmatch(entry.name)}


def _hugepage_resource(directory: str) -> str:
    # the kubelet names the resource by the page size quantity: hugepages-2Mi, -1Gi
    return f"hugepages-{format_bytes(Decimal(_page_bytes(directory)))}"


def _page_bytes(directory: str) -> int:
    return int(_HUGEPAGE_DIR.fullmatch(directory).group(1)) * 1024


def memory_machine(sysfs_root: str | Path = "/sys") -> dict[int, dict[str, int]] | None:
    """The machine as the Memory Manager's `getDefaultMachineState` reads it (cadvisor's machine
    info, utils/sysinfo GetNodesInfo): per NUMA node, `memory` (MemTotal of nodeN/meminfo, in
    bytes) and the bytes of every hugepage size the node lists, sizes with no pages included
    (cadvisor lists each `hugepages-<size>kB` directory, and the kubelet keeps a table for each).
    None when a node's MemTotal or a page count cannot be read, or there are no node
    directories (a kernel without NUMA): the state cannot then be compared byte for byte."""
    node_dir = Path(sysfs_root) / "devices" / "system" / "node"
    node_ids = sorted(int(m.group(1)) for p in _listdir(node_dir) if (m := _NODE_DIR.fullmatch(p.name)) and p.is_dir())
    machine: dict[int, dict[str, int]] = {}
    for n in node_ids:
        memory_kb = _memtotal_kb(_read(node_dir / f"node{n}" / "meminfo"))
        counts = _hugepage_counts(node_dir / f"node{n}" / "hugepages")
        if memory_kb is None or None in counts.values():
            return None
        machine[n] = {"memory": memory_kb * 1024,
                      **{_hugepage_resource(name): count * _page_bytes(name) for name, count in counts.items()}}
    return machine or None


def _memtotal_kb(text: str | None) -> int | None:
    match = _MEMTOTAL.search(text or "")
    return int(match.group(1)) if match else None


def _kib(kb: int) -> str:
    return format_bytes(Decimal(kb * 1024)) if kb else "0"


def _hostname(root: Path) -> str:
    name = _read(root.parent / "proc" / "sys" / "kernel" / "hostname")
    return name if name else "captured-node"


def _listdir(folder: Path) -> list[Path]:
    try:
        return list(folder.iterdir())
    except OSError:
        return []


def _read(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8", errors="replace").strip()
    except OSError:
        return None


def _read_int(path: Path) -> int | None:
    text = _read(path)
    try:
        return int(text) if text is not None else None
    except ValueError:
        return None
