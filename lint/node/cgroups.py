"""The kubelet's containers in a cgroup v2 tree: where each one's cgroup is, and what it holds.

**Where.** The kubelet puts every pod under the node-allocatable cgroup `kubepods` (below the
configured `cgroupRoot`, container_manager_linux.go `defaultNodeAllocatableCgroupName`):
Guaranteed pods directly, Burstable and BestEffort pods in `burstable` and `besteffort`
(qos_container_manager_linux.go, the QoS class lower-cased), each pod in `pod<uid>`
(pod_container_manager_linux.go `podCgroupNameIn`, `GetPodCgroupNameSuffix`). The cgroup
driver turns that name into a path (cgroup_manager_linux.go): `cgroupfs` joins the parts
(`/kubepods/burstable/pod<uid>`); `systemd` escapes "-" to "_" in each part and nests slices
(`ToSystemd`, `ExpandSlice`):
`/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod<uid with "_">.slice`.
Inside the pod, the container runtime names the container's cgroup from its id:
containerd `cri-containerd-<id>.scope` under systemd, `<id>` under cgroupfs
(internal/cri/server getCgroupsPath: "slice:cri-containerd:id", runc's systemd driver makes it
`prefix-name.scope`); CRI-O `crio-<id>.scope`, or `crio-<id>` under cgroupfs
(internal/config/cgmgr containerCgroupPath; conmon's own `crio-conmon-<id>` is not the
container); cri-dockerd `docker-<id>.scope`. crun may put the processes one level further down
(`.../crio-<id>.scope/container`), so a container's processes are those of its cgroup and of
every cgroup below it.

The kubelet takes its cgroup driver from the runtime (KubeletCgroupDriverFromCRI, GA in 1.34),
so the configuration's `cgroupDriver` may not be the one in use: both layouts are looked for,
and the one present is used.

**What.** Files as Documentation/admin-guide/cgroup-v2.rst defines them: `cpuset.cpus.effective`
and `cpuset.mems.effective` ("the onlined CPUs [memory nodes] that are actually granted to this
cgroup by its parent", list format "0-4,6,8-10"; present only where the cpuset controller is
enabled), `cpu.max` ("$MAX $PERIOD", "max" for no quota), `cpu.stat` (flat keyed:
`usage_usec`, `user_usec`, `system_usec` always; `nr_periods`, `nr_throttled`,
`throttled_usec` when the cpu controller is enabled), `cgroup.procs` (one PID per line, in the
reader's PID namespace: a process of another namespace reads as 0, cgroup_procs_show prints
task_pid_vnr).

The node agent also reads, per container (the same document; `read_counters`): `memory.stat`
(flat keyed: `pgfault`, `pgmajfault`, and `numa_pages_migrated` with CONFIG_NUMA_BALANCING),
`memory.numa_stat` ("type N0=<bytes in node 0> N1=<bytes in node 1> ...", present with
CONFIG_NUMA; `anon` and `file` are the container's user memory), `hugetlb.<size>.numa_stat`
("total=<bytes> N0=<bytes> ..."; sizes named as hugetlb_cgroup.c mem_fmt names them: "2MB",
"1GB") and `cpu.pressure`, `memory.pressure` (Documentation/accounting/psi.rst: "some
avg10=0.00 avg60=0.00 avg300=0.00 total=0" and a `full` line, totals in microseconds). A file
that is absent is None, never zero: the controller is not enabled, or the kernel lacks it.

cgroup v1 (legacy, or hybrid with v2 only at `unified/`) is not supported: its cpuset and cpu
controllers keep other files (`cpuset.effective_cpus`, `cpu.cfs_quota_us`) in other trees.
"""
from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path

from numaguard.lint.k8s.cpuset import CPUSetError
from numaguard.lint.node.kernel import kernel_list, read_small
from numaguard.lint.node.sources import Source, under

CGROUP_MOUNT = "/sys/fs/cgroup"
_ID = r"([0-9a-f]{64})"
# (runtime, pattern of the container cgroup's name)
_CONTAINER_NAMES = (("containerd", re.compile(rf"cri-containerd-{_ID}\.scope\Z")),
                    ("CRI-O", re.compile(rf"crio-{_ID}(?:\.scope)?\Z")),
                    ("docker", re.compile(rf"docker-{_ID}\.scope\Z")),
                    ("containerd", re.compile(rf"{_ID}\Z")))
_POD_SYSTEMD = re.compile(r"(?:[^.]*-)?pod([0-9a-f_]+)\.slice\Z")
_POD_CGROUPFS = re.compile(r"pod([0-9a-f-]+)\Z")
_QOS = ("burstable", "besteffort")
MEMORY_KEYS = ("pgfault", "pgmajfault", "numa_pages_migrated")    # what the agent reads of memory.stat


@dataclass(frozen=True)
class ContainerCgroup:
    id: str
    pod_uid: str | None
    path: Path
    runtime: str

    def relative(self, tree: "CgroupTree") -> str:
        return "/" + str(self.path.relative_to(tree.root))


@dataclass(frozen=True)
class CgroupTree:
    root: Path                                     # the cgroup v2 mount (under the host root)
    layout: str                                    # "systemd" or "cgroupfs"
    pods: Path                                     # the kubelet's node-allocatable cgroup
    containers: dict[str, ContainerCgroup] = field(default_factory=dict)     # by container id


@dataclass(frozen=True)
class ThrottleStat:
    periods: int
    throttled: int
    throttled_usec: int


@dataclass(frozen=True)
class CgroupState:
    """A container cgroup's files; None where a file is absent (controller not enabled)."""

    cpus_effective: frozenset[int] | None
    mems_effective: frozenset[int] | None
    cpu_max: str | None
    throttle: ThrottleStat | None
    pids: tuple[int, ...]                          # (thread ids when read from cgroup.threads)
    hidden: int                                    # processes of another PID namespace (read as 0)
    cpu_stat: dict[str, int] | None = None         # cpu.stat, every key (usage_usec always)


@dataclass(frozen=True)
class CgroupCounters:
    """The agent's further cgroup files; None where a file is absent (see the module docstring)."""

    memory_stat: dict[str, int] | None
    numa_bytes: dict[int, int] | None              # memory.numa_stat anon + file, per NUMA node
    hugetlb_bytes: dict[int, int] | None           # hugetlb.*.numa_stat, all sizes, per NUMA node
    cpu_pressure: dict[str, int] | None            # "some"/"full" -> total microseconds
    memory_pressure: dict[str, int] | None


def kubepods_parts(kc: dict | None) -> list[str]:
    """The node-allocatable cgroup's name parts: `cgroupRoot` split, then "kubepods" (none
    when cgroupsPerQOS is off: pods then sit directly under cgroupRoot)."""
    kc = kc or {}
    root = kc.get("cgroupRoot") if isinstance(kc.get("cgroupRoot"), str) else ""
    parts = [p for p in root.split("/") if p]
    return parts + (["kubepods"] if kc.get("cgroupsPerQOS", True) is not False else [])


def systemd_path(parts: list[str]) -> str:
    """cgroup_manager_linux.go ToSystemd: "-" escaped to "_" in each part, then every prefix of
    the joined name a slice of its own (ExpandSlice)."""
    if not parts:
        return ""
    escaped = [p.replace("-", "_") for p in parts]
    return "/".join("-".join(escaped[:i + 1]) + ".slice" for i in range(len(escaped)))


def open_cgroups(root: str, kc: dict | None) -> tuple[CgroupTree | None, Source]:
    mount = under(root, CGROUP_MOUNT)
    name = f"cgroups {mount}"
    if not mount.is_dir():
        return None, Source(name, False, f"not found (mount the node's {CGROUP_MOUNT})")
    if not (mount / "cgroup.controllers").is_file():
        hybrid = (mount / "unified" / "cgroup.controllers").is_file()
        v1 = hybrid or any((mount / c).is_dir() for c in ("cpuset", "cpu", "memory", "systemd"))
        if v1:
            return None, Source(name, False, "cgroup v1 is not supported ("
                                + ("hybrid: v2 only at unified/, without controllers; " if hybrid else "")
                                + "--processes reads the cgroup v2 cpuset and cpu files: boot the node with "
                                  "systemd.unified_cgroup_hierarchy=1)")
        return None, Source(name, False, "not a cgroup file system (no cgroup.controllers)")
    parts = kubepods_parts(kc)
    if "kubepods" not in parts:
        return None, Source(name, False, "cgroupsPerQOS is off: the kubelet makes no pod cgroups to find "
                                         "containers in")
    candidates = (("systemd", mount / systemd_path(parts)), ("cgroupfs", mount.joinpath(*parts)))
    found = [(layout, path) for layout, path in candidates if path.is_dir()]
    if not found:
        return None, Source(name, False, f"cgroup v2, but no kubelet cgroup {candidates[0][1].name} or "
                                         f"{'/'.join(parts)} (not a node, or another cgroupRoot?)")
    layout, pods = found[0]
    tree = CgroupTree(mount, layout, pods, _index(pods, layout, parts))
    return tree, Source(name, True, f"cgroup v2, {layout} layout ({pods.relative_to(mount)}); "
                                    f"{len(tree.containers)} container cgroup(s)")


def _index(pods: Path, layout: str, parts: list[str]) -> dict[str, ContainerCgroup]:
    """Every container cgroup below the pod cgroups (QoS level included), by container id."""
    pod_name = _POD_SYSTEMD if layout == "systemd" else _POD_CGROUPFS
    out: dict[str, ContainerCgroup] = {}
    for qos_dir in [pods] + [pods / (systemd_path(parts + [q]).rsplit("/", 1)[-1] if layout == "systemd" else q)
                             for q in _QOS]:
        for pod_dir in _subdirs(qos_dir):
            match = pod_name.match(pod_dir.name)
            if match is None:
                continue
            uid = match.group(1).replace("_", "-")
            for container_dir in _subdirs(pod_dir):
                for runtime, pattern in _CONTAINER_NAMES:
                    found = pattern.match(container_dir.name)
                    if found:
                        out[found.group(1)] = ContainerCgroup(found.group(1), uid, container_dir, runtime)
                        break
    return out


def _subdirs(path: Path) -> list[Path]:
    try:
        with os.scandir(path) as entries:            # d_type: no stat per entry
            return sorted(Path(e.path) for e in entries if e.is_dir(follow_symlinks=False))
    except OSError:
        return []


def _read(path: Path | str) -> str | None:
    try:
        return read_small(str(path))
    except OSError:
        return None


def read_cgroup_file(path: Path, name: str) -> str | None:
    """One file of a cgroup, or None when it is absent or unreadable."""
    return _read(path / name)


def parse_cpu_stat(text: str) -> dict[str, int]:
    """A flat-keyed file ("key value" lines: cpu.stat, memory.stat)."""
    out = {}
    for line in text.splitlines():
        key, _, value = line.partition(" ")
        if value.strip().isdigit():
            out[key] = int(value)
    return out


def parse_pressure(text: str) -> dict[str, int]:
    """PSI lines ("some avg10=0.00 avg60=0.00 avg300=0.00 total=123"): kind -> total (us)."""
    out = {}
    for line in text.splitlines():
        kind, _, rest = line.partition(" ")
        total = rest.rpartition("total=")[2]
        if kind in ("some", "full") and total.strip().isdigit():
            out[kind] = int(total)
    return out


def parse_keys(text: str, keys: tuple[str, ...]) -> dict[str, int]:
    """Only `keys` of a flat-keyed file (memory.stat has some 60 lines; the agent needs three)."""
    out = {}
    for key in keys:
        at = text.find(f"{key} ")
        while at > 0 and text[at - 1] != "\n":
            at = text.find(f"{key} ", at + 1)
        if at >= 0:
            end = text.find("\n", at)
            value = text[at + len(key) + 1:end if end >= 0 else len(text)].strip()
            if value.isdigit():
                out[key] = int(value)
    return out


def parse_numa_stat(text: str, types: tuple[str, ...] = ("anon", "file")) -> dict[int, int]:
    """memory.numa_stat's `types` lines summed per node, or a hugetlb numa_stat line (types
    ("total",): "total=<bytes> N0=<bytes> ..."): NUMA node -> bytes."""
    out: dict[int, int] = {}
    for line in text.split("\n"):
        if not line.startswith(types):                 # most of memory.numa_stat's twenty lines
            continue
        head, _, rest = line.partition(" ")
        if head.partition("=")[0] not in types:
            continue
        for item in rest.split():
            node, _, size = item.partition("=")
            if node[:1] == "N" and node[1:].isdigit() and size.isdigit():
                out[int(node[1:])] = out.get(int(node[1:]), 0) + int(size)
    return out


def hugetlb_sizes(sysfs: Path, in_use: bool = False) -> tuple[str, ...]:
    """The hugepage sizes as hugetlb's cgroup files name them ("2MB", "1GB"), from
    /sys/kernel/mm/hugepages/hugepages-<size>kB (hugetlb_cgroup.c mem_fmt: GB, MB or KB).
    `in_use`: only the sizes with pages in the pool (nr_hugepages or surplus_hugepages above
    0, Documentation/admin-guide/mm/hugetlbpage.rst): no container holds pages of another."""
    names = []
    for entry in _subdirs(sysfs / "kernel/mm/hugepages"):
        size = entry.name.removeprefix("hugepages-").removesuffix("kB")
        if not size.isdigit():
            continue
        if in_use and not any((_read(entry / f) or "0").strip() not in ("", "0")
                              for f in ("nr_hugepages", "surplus_hugepages")):
            continue
        kb = int(size)
        names.append(f"{kb >> 20}GB" if kb >= 1 << 20 else f"{kb >> 10}MB" if kb >= 1 << 10 else f"{kb}KB")
    return tuple(names)


def read_throttle(path: Path) -> ThrottleStat | None:
    """cpu.stat's throttling counters; None without the file or without the cpu controller."""
    text = _read(path / "cpu.stat")
    return _throttle(parse_cpu_stat(text) if text is not None else {})


def _throttle(stats: dict[str, int]) -> ThrottleStat | None:
    if "nr_throttled" not in stats:
        return None
    return ThrottleStat(stats.get("nr_periods", 0), stats["nr_throttled"], stats.get("throttled_usec", 0))


def cgroup_pids(path: Path, members: str = "cgroup.procs") -> tuple[tuple[int, ...], int]:
    """(the ids in `members` of the cgroup and of every cgroup below it, how many read as 0:
    tasks of another PID namespace). `cgroup.procs` lists PIDs, `cgroup.threads` every
    thread's TID (cgroup-v2.rst), which spares the reader a listing of /proc/PID/task."""
    pids: set[int] = set()
    hidden = 0
    folders = [str(path)]
    while folders:
        folder = folders.pop()
        for word in (_read(f"{folder}/{members}") or "").split():
            if word.isdigit():
                if word == "0":
                    hidden += 1
                else:
                    pids.add(int(word))
        try:
            with os.scandir(folder) as entries:
                folders += [e.path for e in entries if e.is_dir(follow_symlinks=False)]
        except OSError:
            pass
    return tuple(sorted(pids)), hidden


def read_cgroup(path: Path, cpu_max: bool = True, members: str = "cgroup.procs") -> CgroupState:
    """The cgroup's files. `cpu_max` False: not cpu.max (the agent does not export it);
    `members` "cgroup.threads": `pids` holds thread ids instead (see cgroup_pids)."""
    base = str(path)

    def listed(file: str) -> frozenset[int] | None:
        text = _read(f"{base}/{file}")
        try:
            return kernel_list(text) if text is not None else None
        except CPUSetError:
            return None

    pids, hidden = cgroup_pids(path, members)
    quota = _read(f"{base}/cpu.max") if cpu_max else None
    stat_text = _read(f"{base}/cpu.stat")
    stats = parse_cpu_stat(stat_text) if stat_text is not None else None
    return CgroupState(listed("cpuset.cpus.effective"), listed("cpuset.mems.effective"),
                       quota.strip() if quota is not None else None, _throttle(stats or {}), pids, hidden, stats)


def read_counters(path: Path, hugepage_sizes: tuple[str, ...] = ()) -> CgroupCounters:
    base = str(path)
    memory = _read(f"{base}/memory.stat")
    numa = _read(f"{base}/memory.numa_stat")
    huge: dict[int, int] | None = None if hugepage_sizes else {}     # no pages: none to find
    for size in hugepage_sizes:
        text = _read(f"{base}/hugetlb.{size}.numa_stat")
        if text is not None:
            huge = huge or {}
            for node, size_bytes in parse_numa_stat(text, ("total",)).items():
                huge[node] = huge.get(node, 0) + size_bytes
    pressure = {}
    for kind in ("cpu", "memory"):
        text = _read(f"{base}/{kind}.pressure")      # EOPNOTSUPP when PSI is off for the cgroup
        pressure[kind] = parse_pressure(text) if text else None
    return CgroupCounters(parse_keys(memory, MEMORY_KEYS) if memory is not None else None,
                          parse_numa_stat(numa) if numa is not None else None, huge,
                          pressure["cpu"], pressure["memory"])
