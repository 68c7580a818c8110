"""Kernel files for the node agent's tests, in the formats the kernel documents, and helpers to
read what the agent exports.

* `memory.stat` (flat keyed), `memory.numa_stat` ("type N0=<bytes> N1=<bytes>"),
  `hugetlb.<size>.numa_stat` ("total=<bytes> N0=<bytes>"): Documentation/admin-guide/cgroup-v2.rst;
* `cpu.pressure`, `memory.pressure`: Documentation/accounting/psi.rst ("some avg10=0.00 avg60=0.00
  avg300=0.00 total=<us>" and a "full" line);
* `/sys/devices/system/node/nodeN/numastat`: Documentation/admin-guide/numastat.rst;
* `/proc/PID/task/TID/{stat,status,schedstat}` of a thread that is not a real one (proc(5),
  Documentation/scheduler/sched-stats.rst), for counters a test must set exactly.

Used by tests/test_node_agent.py, tests/test_node_agent_real.py and tests/bench/bench_node_agent.py.
"""
from __future__ import annotations

import re
import urllib.request
from pathlib import Path

from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.parser import text_string_to_metric_families

MEMORY_STAT = """anon {anon}
file {file}
kernel 2211840
kernel_stack 147456
pagetables 643072
sec_pagetables 0
percpu 1440
sock 0
vmalloc 8192
shmem 0
zswap 0
zswapped 0
file_mapped 24576000
file_dirty 0
file_writeback 0
swapcached 0
anon_thp 0
file_thp 0
shmem_thp 0
inactive_anon {anon}
active_anon 0
inactive_file 3923968
active_file 20520960
unevictable 0
slab_reclaimable 631888
slab_unreclaimable 406264
slab 1038152
workingset_refault_anon 0
workingset_refault_file 0
workingset_activate_anon 0
workingset_activate_file 0
workingset_restore_anon 0
workingset_restore_file 0
workingset_nodereclaim 0
pgscan 0
pgsteal 0
pgscan_kswapd 0
pgscan_direct 0
pgsteal_kswapd 0
pgsteal_direct 0
pgfault {pgfault}
pgmajfault {pgmajfault}
pgrefill 0
pgactivate 5010
pgdeactivate 0
pglazyfree 0
pglazyfreed 0
{numa}thp_fault_alloc 0
thp_collapse_alloc 0
"""

NUMA_BALANCING = """numa_pages_migrated {migrated}
numa_pte_updates 0
numa_hint_faults 0
"""

PSI = """some avg10=0.00 avg60=0.00 avg300=0.00 total={some}
full avg10=0.00 avg60=0.00 avg300=0.00 total={full}
"""

NUMASTAT = """numa_hit {hit}
numa_miss {miss}
numa_foreign 0
interleave_hit 1084
local_node {hit}
other_node {other}
"""


def memory_stat(pgfault: int, pgmajfault: int, migrated: int | None = None, anon: int = 0, file: int = 0) -> str:
    numa = NUMA_BALANCING.format(migrated=migrated) if migrated is not None else ""
    return MEMORY_STAT.format(pgfault=pgfault, pgmajfault=pgmajfault, numa=numa, anon=anon, file=file)


def numa_stat(anon: dict[int, int], file: dict[int, int]) -> str:
    """memory.numa_stat, as memory_numa_stat_show prints it: every type, one N<node>= per node."""
    nodes = sorted(set(anon) | set(file))

    def line(name: str, values: dict[int, int]) -> str:
        return name + "".join(f" N{n}={values.get(n, 0)}" for n in nodes) + "\n"

    zero: dict[int, int] = {}
    return (line("anon", anon) + line("file", file) + line("kernel_stack", {n: 16384 for n in nodes})
            + line("pagetables", {n: 4096 for n in nodes}) + line("shmem", zero) + line("file_mapped", file)
            + line("file_dirty", zero) + line("file_writeback", zero) + line("swapcached", zero)
            + line("anon_thp", zero) + line("file_thp", zero) + line("shmem_thp", zero)
            + line("inactive_anon", anon) + line("active_anon", zero) + line("inactive_file", file)
            + line("active_file", zero) + line("unevictable", zero) + line("slab_reclaimable", {n: 8 for n in nodes})
            + line("slab_unreclaimable", {n: 8 for n in nodes}))


def hugetlb_numa_stat(by_node: dict[int, int]) -> str:
    return f"total={sum(by_node.values())}" + "".join(f" N{n}={b}" for n, b in sorted(by_node.items())) + "\n"


def psi(some_us: int, full_us: int) -> str:
    return PSI.format(some=some_us, full=full_us)


def write_files(folder: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        path = folder / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


def fake_thread(proc: Path, pid: int, tid: int, *, start: int, on_cpu_ns: int, wait_ns: int, involuntary: int,
                last_cpu: int, allowed: str, comm: str = "worker", schedstat: bool = True) -> None:
    """A thread's three files as the kernel writes them (stat: 52 fields after "(comm)"), at
    /proc/PID/task/TID and, as procfs resolves it, /proc/TID/task/TID."""
    task = proc / str(pid) / "task" / str(tid)
    task.mkdir(parents=True, exist_ok=True)
    if tid != pid and not (proc / str(tid)).is_symlink():
        (proc / str(tid)).symlink_to(str(pid))            # /proc/TID reaches a thread too, as in procfs
    ticks = on_cpu_ns // 10_000_000
    fields = ["S", "1", str(pid), str(pid), "0", "-1", "4194560", "120", "0", "0", "0", str(ticks), "0", "0", "0",
              "20", "0", "1", "0", str(start), "6287360", "1200", "18446744073709551615"] + ["0"] * 12 + [
              "17", str(last_cpu)] + ["0"] * 13
    (task / "stat").write_text(f"{tid} ({comm}) " + " ".join(fields) + "\n")
    (task / "status").write_text(
        f"Name:\t{comm}\nUmask:\t0022\nState:\tS (sleeping)\nTgid:\t{pid}\nPid:\t{tid}\nThreads:\t1\n"
        f"Cpus_allowed:\t3\nCpus_allowed_list:\t{allowed}\nMems_allowed:\t1\nMems_allowed_list:\t0\n"
        f"voluntary_ctxt_switches:\t10\nnonvoluntary_ctxt_switches:\t{involuntary}\n")
    if schedstat:
        (task / "schedstat").write_text(f"{on_cpu_ns} {wait_ns} 42\n")


# ------------------------------------------------------------------------------- reading the metrics

Samples = dict[str, dict[tuple[tuple[str, str], ...], float]]


def parse(text: str) -> Samples:
    """Exposition text -> sample name -> sorted label pairs -> value."""
    out: Samples = {}
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            out.setdefault(s.name, {})[tuple(sorted(s.labels.items()))] = s.value
    return out


def scrape(collector) -> Samples:
    """What a scrape of a registry holding only `collector` returns, parsed."""
    registry = CollectorRegistry(auto_describe=False)
    registry.register(collector)
    return parse(generate_latest(registry).decode())


def http_get(url: str, timeout: float = 30) -> tuple[int, str, str]:
    """(status, content type, body) of a GET."""
    try:
        with urllib.request.urlopen(url, timeout=timeout) as answer:
            return answer.status, answer.headers.get("Content-Type", ""), answer.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.headers.get("Content-Type", ""), exc.read().decode()


def labels(**pairs: str) -> tuple[tuple[str, str], ...]:
    return tuple(sorted(pairs.items()))


SERVING = re.compile(r"numaguard node agent: serving http://(\S+)/metrics")
