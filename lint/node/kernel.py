"""What the kernel says about a process and its threads, read from `/proc` as the kernel writes it.

Formats (proc(5); the kernel's fs/proc/array.c and fs/proc/task_mmu.c write them):

* `/proc/PID/task/TID/status`: "Key:<tab>value" lines; `Cpus_allowed_list` (the CPUs the thread
  may run on: its own affinity, sched_setaffinity/taskset, within its cpuset) and
  `Mems_allowed_list` (the memory nodes its cpuset allows), both in the kernel's list format
  "0-3,8-11" (the format of `numaguard.lint.k8s.cpuset`).
* `/proc/PID/task/TID/stat`: one line, `pid (comm) state ...`; comm may hold spaces and
  parentheses, so the fields are counted from the last ")". Field 14 `utime` and 15 `stime`
  are CPU time in clock ticks (sysconf(_SC_CLK_TCK)); field 39 `processor` is the CPU the
  thread last ran on.
* `/proc/PID/task/TID/status` also counts `nonvoluntary_ctxt_switches` (the times the thread was
  taken off its CPU while still runnable), and `/proc/PID/task/TID/stat` field 22 `starttime`
  (clock ticks after boot) tells a thread from a later one that reuses its id.
* `/proc/PID/task/TID/schedstat` (Documentation/scheduler/sched-stats.rst): "1) time spent on
  the cpu (in nanoseconds) 2) time spent waiting on a runqueue (in nanoseconds) 3) # of
  timeslices run on this cpu". A kernel without schedstats (CONFIG_SCHED_INFO off) has no such
  file; one with it compiled in but off (fs/proc/base.c proc_pid_schedstat: `!sched_info_on()`)
  prints "0 0 0" for every thread, which `schedstat_offered` tells from a real zero.
* `/proc/PID/numa_maps`: one line per mapping, `N<node>=<pages>` for its resident pages per
  NUMA node, `kernelpagesize_kB=<size>` for the size of those pages, and the word `huge` for
  a hugetlbfs mapping (show_numa_map). Transparent huge pages are counted in base pages.

A process or thread that ends while it is read is skipped, not an error: processes come and go.
"""
from __future__ import annotations

import functools
import os
import re
import resource
from dataclasses import dataclass, field
from pathlib import Path

from numaguard.lint.k8s.cpuset import CPUSetError, parse_cpuset

CLOCK_TICKS = os.sysconf("SC_CLK_TCK")              # USER_HZ, the unit of utime and stime
BASE_PAGE_KB = resource.getpagesize() // 1024       # 4 on x86-64; 64 on 64K-page arm64 kernels
# numa_maps words (each after a space: the line starts with the mapping's address); searched in
# the line rather than word by word, as a node with many processes has many mappings to read
_NODE_PAGES = re.compile(r" N(\d+)=(\d+)(?= |$)")
_PAGE_KB = re.compile(r" kernelpagesize_kB=(\d+)(?= |$)")
_HUGETLB = re.compile(r" huge(?= |$)")


@dataclass(frozen=True)
class TaskState:
    """One thread as the kernel sees it."""

    pid: int
    tid: int
    comm: str
    cpus_allowed: frozenset[int]
    mems_allowed: frozenset[int]
    last_cpu: int
    cpu_ticks: int                 # utime + stime
    start_ticks: int = 0           # starttime: with the tid, which thread this is
    involuntary: int = 0           # nonvoluntary_ctxt_switches

    @property
    def cpu_seconds(self) -> float:
        return self.cpu_ticks / CLOCK_TICKS


@dataclass(frozen=True)
class NumaPages:
    """Resident memory of a process per NUMA node, in bytes: base pages (THP included) apart
    from hugetlbfs pages."""

    memory: dict[int, int] = field(default_factory=dict)
    hugepages: dict[int, int] = field(default_factory=dict)

    def plus(self, other: "NumaPages") -> "NumaPages":
        return NumaPages(_add(self.memory, other.memory), _add(self.hugepages, other.hugepages))


def _add(a: dict[int, int], b: dict[int, int]) -> dict[int, int]:
    out = dict(a)
    for node, size in b.items():
        out[node] = out.get(node, 0) + size
    return out


@functools.lru_cache(maxsize=4096)
def kernel_list(text: str) -> frozenset[int]:
    """A kernel CPU or node list ("0-3,8"; empty for none), as cpuset files and status print it.
    Remembered: a node's threads and cgroups repeat a handful of lists thousands of times."""
    return parse_cpuset(text.strip())


def parse_stat(text: str) -> tuple[str, list[str]]:
    """(comm, the fields after it): fields[0] is field 3 (state), so field n is fields[n - 3]."""
    left, right = text.find("("), text.rfind(")")
    if left < 0 or right < left:
        raise ValueError("no (comm) in stat")
    return text[left + 1:right], text[right + 1:].split()


def parse_numa_maps(text: str) -> NumaPages:
    memory: dict[int, int] = {}
    huge: dict[int, int] = {}
    for line in text.splitlines():
        size = _PAGE_KB.search(line)
        page_kb = int(size.group(1)) if size else BASE_PAGE_KB
        into = huge if page_kb > BASE_PAGE_KB or _HUGETLB.search(line) else memory
        for node, pages in _NODE_PAGES.findall(line):
            into[int(node)] = into.get(int(node), 0) + int(pages) * page_kb * 1024
    return NumaPages(memory, huge)


def read_small(path: str) -> str:
    """A small kernel file at once (one read: the kernel renders these files whole), without
    the buffered text layer: a node agent reads thousands of them per scrape."""
    fd = os.open(path, os.O_RDONLY)
    try:
        return os.read(fd, 65536).decode("utf-8", "replace")
    finally:
        os.close(fd)


def status_value(text: str, key: str) -> str:
    """One field of a status file ("Key:\tvalue"), found without splitting every line."""
    start = text.index(f"\n{key}:") + len(key) + 2
    end = text.find("\n", start)
    return text[start:end if end >= 0 else len(text)].strip()


def parse_schedstat(text: str) -> tuple[int, int]:
    """(ns on a CPU, ns waiting on a run queue) from a schedstat line."""
    on_cpu, waiting, _slices = text.split()
    return int(on_cpu), int(waiting)


def read_task(proc: Path, pid: int, tid: int) -> TaskState | None:
    """The thread `tid` of process `pid`, or None when it is gone (or its files make no sense)."""
    base = f"{proc}/{pid}/task/{tid}/"
    try:
        status = read_small(base + "status")
        comm, fields = parse_stat(read_small(base + "stat"))
        mems = status_value(status, "Mems_allowed_list") if "\nMems_allowed_list:" in status else ""
        involuntary = (int(status_value(status, "nonvoluntary_ctxt_switches"))
                       if "\nnonvoluntary_ctxt_switches:" in status else 0)
        return TaskState(pid, tid, comm, kernel_list(status_value(status, "Cpus_allowed_list")),
                         kernel_list(mems), int(fields[36]), int(fields[11]) + int(fields[12]), int(fields[19]),
                         involuntary)
    except (OSError, KeyError, IndexError, ValueError, CPUSetError):
        return None


def read_schedstat(proc: Path, pid: int, tid: int) -> tuple[int, int] | None:
    """(ns on a CPU, ns waiting on a run queue) of the thread, or None when it is gone."""
    try:
        return parse_schedstat(read_small(f"{proc}/{pid}/task/{tid}/schedstat"))
    except (OSError, ValueError):
        return None


def thread_ids(proc: Path, pid: int) -> list[int]:
    try:
        return sorted(int(name) for name in os.listdir(f"{proc}/{pid}/task") if name.isdigit())
    except OSError:
        return []


def read_threads(proc: Path, pid: int) -> list[TaskState]:
    return [t for t in (read_task(proc, pid, tid) for tid in thread_ids(proc, pid)) if t is not None]


def schedstat_offered(proc: Path) -> tuple[bool, str]:
    """Whether the kernel keeps run-queue delays, asked of the reader's own thread (the same
    kernel as the node's), which has run by now: no file, or "0 0 0" after running, means no."""
    try:
        on_cpu, _wait = parse_schedstat(read_small(f"{proc}/thread-self/schedstat"))
    except FileNotFoundError:
        return False, "no /proc/PID/task/TID/schedstat: a kernel built without CONFIG_SCHED_INFO"
    except (OSError, ValueError) as exc:
        return False, f"/proc/thread-self/schedstat: {getattr(exc, 'strerror', None) or exc}"
    if on_cpu == 0:
        return False, ("schedstat reads 0 0 0 for a thread that has run: the kernel's sched_info accounting is "
                       "off (proc_pid_schedstat prints zeros when !sched_info_on())")
    return True, ""


def read_numa_maps(proc: Path, pid: int) -> NumaPages | str:
    """The process's resident pages per NUMA node, or why they could not be read."""
    try:
        return parse_numa_maps((proc / str(pid) / "numa_maps").read_text(encoding="utf-8", errors="replace"))
    except FileNotFoundError:
        return NumaPages()                          # gone meanwhile (or a kernel without NUMA)
    except PermissionError as exc:                  # proc_mem_open: no ptrace read access to the process
        return (f"/proc/{pid}/numa_maps: {exc.strerror or exc} (the reader needs ptrace access: CAP_SYS_PTRACE, "
                "and no AppArmor profile that forbids it)")
    except OSError as exc:
        return f"/proc/{pid}/numa_maps: {exc.strerror or exc}"


def read_numastat(sysfs: Path) -> dict[int, dict[str, int]] | None:
    """NUMA node -> its allocation counters (pages) from /sys/devices/system/node/node*/numastat
    (Documentation/admin-guide/numastat.rst: numa_hit, numa_miss, numa_foreign, interleave_hit,
    local_node, other_node); None when there is no such file (a kernel without CONFIG_NUMA)."""
    out: dict[int, dict[str, int]] = {}
    try:
        names = os.listdir(f"{sysfs}/devices/system/node")
    except OSError:
        return None
    for name in names:
        if name.startswith("node") and name[4:].isdigit():
            try:
                lines = read_small(f"{sysfs}/devices/system/node/{name}/numastat").splitlines()
            except OSError:
                continue
            out[int(name[4:])] = {k: int(v) for k, _, v in (line.partition(" ") for line in lines) if v.isdigit()}
    return out or None


def read_cpu_busy(proc: Path) -> dict[int, int] | None:
    """CPU -> the clock ticks (USER_HZ) it spent busy since boot, from /proc/stat's "cpuN"
    lines (Documentation/filesystems/proc.rst, 1.8: user nice system idle iowait irq softirq
    steal guest guest_nice): user + nice + system + irq + softirq. guest time is already in
    user and nice; idle, iowait and steal (the hypervisor ran something else) are not busy."""
    try:
        text = read_small(f"{proc}/stat")
    except OSError:
        return None
    out = {}
    for line in text.splitlines():
        if line.startswith("cpu") and line[3:4].isdigit():
            name, *values = line.split()
            user, nice, system, _idle, _iowait, irq, softirq = (int(v) for v in values[:7])
            out[int(name[3:])] = user + nice + system + irq + softirq
    return out or None
