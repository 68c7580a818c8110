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
* `/proc/PID/numa_maps`: one line per mapping, `N<node>=<pages>` for its resident pages per
  NUMA node, `kernelpagesize_kB=<size>` for the size of those pages, and the word `huge` for
  a hugetlbfs mapping (show_numa_map). Transparent huge pages are counted in base pages.

A process or thread that ends while it is read is skipped, not an error: processes come and go.
"""
from __future__ import annotations

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


def kernel_list(text: str) -> frozenset[int]:
    """A kernel CPU or node list ("0-3,8"; empty for none), as cpuset files and status print it."""
    return parse_cpuset(text.strip())


def parse_status(text: str) -> dict[str, str]:
    out = {}
    for line in text.splitlines():
        key, sep, value = line.partition(":")
        if sep:
            out[key] = value.strip()
    return out


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


def read_task(proc: Path, pid: int, tid: int) -> TaskState | None:
    """The thread `tid` of process `pid`, or None when it is gone (or its files make no sense)."""
    base = proc / str(pid) / "task" / str(tid)
    try:
        status = parse_status((base / "status").read_text(encoding="utf-8", errors="replace"))
        comm, fields = parse_stat((base / "stat").read_text(encoding="utf-8", errors="replace"))
        return TaskState(pid, tid, comm, kernel_list(status["Cpus_allowed_list"]),
                         kernel_list(status.get("Mems_allowed_list", "")), int(fields[36]),
                         int(fields[11]) + int(fields[12]))
    except (OSError, KeyError, IndexError, ValueError, CPUSetError):
        return None


def read_threads(proc: Path, pid: int) -> list[TaskState]:
    try:
        tids = sorted(int(name) for name in os.listdir(proc / str(pid) / "task") if name.isdigit())
    except OSError:
        return []
    return [t for t in (read_task(proc, pid, tid) for tid in tids) if t is not None]


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
