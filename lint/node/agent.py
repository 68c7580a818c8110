"""`numaguard node agent`: what `node inspect --processes` judges once, measured at every
Prometheus scrape as gauges and counters (the metrics of `numaguard.lint.agent_metrics`).

`NodeAgent` is a prometheus_client collector built per scrape: each `collect()` reads the
inventory (`numaguard.lint.node.inventory`: the containers PodResources lists, their
assignments and cgroups), then per container its cgroup files and its threads, then the node's
NUMA counters and shared pool, and returns fresh metric families. A container that went away
is simply not in the next answer: its series end at the next scrape.

**Counters summed over threads** (run-queue wait, involuntary switches, and the thread samples)
are running totals per container: at each scrape every thread's value is compared with what it
was at the previous scrape (a thread is its tid and its start time, so a reused tid is a new
thread) and the rise is added; a thread seen for the first time adds all it has. A thread that
exits keeps what it added, so the totals never go down; what it did between the last scrape
and its exit is not counted. A container's totals start again when it is restarted (a new
container id), as its cgroup counters do. The threads' values are kept only for the threads
alive at the last scrape, so memory follows the node, not its history.

**Thread samples.** At each scrape every thread that ran since the previous scrape (its time
on a CPU rose) is one sample, and an outside sample when the CPU it last ran on is not one the
container was assigned. rate(outside) / rate(samples) is the share of time its threads ran
outside; a thread that slept all along is not sampled (its last CPU is old news).

**What the kernel does not offer** (no PSI, no schedstat, cgroup v1, a controller not enabled)
is `numaguard_agent_source_available{source} 0` and the metrics that need it are absent, never
zero; each change is logged once.

Two scrapes within `min_interval` seconds get the same answer, so several Prometheus replicas
or a client in a loop cost the node no more than one scrape a second.
"""
from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric

from numaguard.lint.agent_metrics import METRICS, SOURCE_KEYS, SOURCES
from numaguard.lint.node.cgroups import (CgroupCounters, CgroupState, hugetlb_sizes, read_cgroup, read_cgroup_file,
                                         read_counters)
from numaguard.lint.node.inventory import Inventory, Snapshot, Watched
from numaguard.lint.node.kernel import (CLOCK_TICKS, read_cpu_busy, read_numastat, read_schedstat, read_task,
                                        schedstat_offered)
from numaguard.lint.node.sources import under

STATUS_EVERY = 10           # scrapes an idle thread's status may go unread
_NUMASTAT = {"numa_hit": "numaguard_node_numa_hit_total", "numa_miss": "numaguard_node_numa_miss_total",
             "other_node": "numaguard_node_numa_other_node_total"}
_NEEDING = {s.key: ", ".join(m.name for m in METRICS if s.key in m.needs) or "-" for s in SOURCES}


@dataclass(frozen=True)
class _Seen:
    """A thread at the last scrape it was read in full."""

    start: int                       # starttime: with the tid, which thread this is
    on_cpu: int                      # schedstat ns on a CPU (stat ticks without schedstat)
    wait: int                        # schedstat ns waiting on a run queue
    involuntary: int
    allowed: frozenset[int]
    last_cpu: int


@dataclass
class _Running:
    """One container's running totals, its live threads, and the cpuset they were read under."""

    threads: dict[int, _Seen] = field(default_factory=dict)      # tid -> _Seen
    cpus: frozenset[int] | None = None
    wait_ns: int = 0
    involuntary: int = 0
    samples: int = 0
    outside: int = 0


class _Scrape:
    """One scrape's metric families and what was found missing. A container's samples are
    held until `commit`: one whose reading fails half-way leaves no partial series."""

    def __init__(self) -> None:
        self.families = {m.name: (CounterMetricFamily if m.kind == "counter" else GaugeMetricFamily)(
            m.name, m.help, labels=list(m.labels)) for m in METRICS}
        self.missing: dict[str, str] = {}          # source -> why (the first place it was missing)
        self.pending: list[tuple[str, list[str], float]] = []

    def add(self, name: str, labels: list[str], value: float) -> None:
        self.pending.append((name, labels, value))

    def commit(self) -> None:
        for name, labels, value in self.pending:
            self.families[name].add_metric(labels, value)
        self.pending = []

    def lack(self, source: str, where: str) -> None:
        self.missing.setdefault(source, where)


class NodeAgent:
    def __init__(self, inventory: Inventory, root: str = "/", min_interval: float = 1.0,
                 log: Callable[[str], None] = lambda line: None,
                 schedstat: tuple[bool, str] | None = None, clock: Callable[[], float] = time.monotonic) -> None:
        self.inventory, self.min_interval, self.log, self.clock = inventory, min_interval, log, clock
        self.proc, self.sysfs = under(root, "/proc"), under(root, "/sys")
        # a kernel property: asked of this process's own thread, on the node's kernel
        self.schedstat = schedstat if schedstat is not None else schedstat_offered(Path("/proc"))
        self.hugetlb = bool(hugetlb_sizes(self.sysfs))      # the kernel's hugetlb, any size
        self._running: dict[str, _Running] = {}       # container id -> totals
        self._scrapes = 0
        self._busy: dict[int, int] | None = None      # /proc/stat busy ticks per CPU at the last scrape
        self._pool_ticks = 0
        self._reported: dict[str, tuple[bool, str]] = {}
        self._unseen: dict[tuple[str, str, str], str] = {}
        self._notes: set[str] = set()
        self._lock = threading.Lock()
        self._last: tuple[float, list[Metric]] | None = None

    def describe(self) -> list[Metric]:
        return []                                    # no collection at registration

    def collect(self) -> list[Metric]:
        with self._lock:
            now = self.clock()
            if self._last is not None and now - self._last[0] < self.min_interval:
                return self._last[1]
            families = self._scrape()
            self._last = (now, families)
            return families

    # ---------------------------------------------------------------------------- one scrape

    def _scrape(self) -> list[Metric]:
        self._scrapes += 1
        snap = self.inventory.read()
        scrape = _Scrape()
        for key, (ok, why) in snap.sources.items():
            if not ok:
                scrape.lack(key, why)
        if not self.proc.is_dir():
            scrape.lack("proc", f"{self.proc} not found (mount the host's /proc)")
        if not self.schedstat[0]:
            scrape.lack("schedstat", self.schedstat[1])
        if not self.hugetlb:
            scrape.lack("hugetlb", f"no hugepage sizes in {self.sysfs}/kernel/mm/hugepages")
        sizes = hugetlb_sizes(self.sysfs, in_use=True) if self.hugetlb else ()
        seen, unseen = set(), {}
        for w in snap.containers:
            why = w.why or "no cgroup"
            if w.cgroup is not None:
                try:
                    self._container(w, sizes, scrape)
                    scrape.commit()
                    seen.add(w.cgroup.id)
                    continue
                except Exception as exc:            # noqa: BLE001 - one odd container must not cost the node's metrics
                    scrape.pending = []
                    why = f"reading {w.cgroup.relative(snap.tree)} failed: {type(exc).__name__}: {exc}"
            unseen[(w.namespace, w.pod, w.container)] = why
        if snap.tree is not None and not seen:
            self._features(snap, sizes, scrape)
        self._running = {cid: r for cid, r in self._running.items() if cid in seen}
        self._node(snap, scrape)
        scrape.add("numaguard_agent_containers", [], len(seen))
        scrape.add("numaguard_agent_containers_unseen", [], len(unseen))
        for key in SOURCE_KEYS:
            scrape.add("numaguard_agent_source_available", [key], 0 if key in scrape.missing else 1)
        scrape.commit()
        self._report(scrape, unseen, [n.line() for n in snap.notes])
        return list(scrape.families.values())

    def _container(self, w: Watched, sizes: tuple[str, ...], scrape: _Scrape) -> None:
        state = read_cgroup(w.cgroup.path, cpu_max=False, members="cgroup.threads")
        counters = read_counters(w.cgroup.path, sizes)
        where = f"the cgroup of {w.namespace}/{w.pod} {w.container}"
        labels, a = list(w.labels), w.assignment
        scrape.add("numaguard_container_exclusive_cpus", labels, len(a.exclusive))
        for node in a.home:
            scrape.add("numaguard_container_assigned_numa_nodes", labels + [str(node)], 1)
        if state.cpus_effective is None or state.mems_effective is None:
            scrape.lack("cpuset", f"no cpuset.cpus.effective in {where} (cpuset controller not enabled)")
        if state.cpus_effective is not None and a.cpus is not None:
            scrape.add("numaguard_container_cpuset_matches", labels, int(state.cpus_effective == a.cpus))
        if state.mems_effective is not None and a.numa:
            scrape.add("numaguard_container_mems_matches", labels, int(state.mems_effective == frozenset(a.numa)))
        self._cpu(state, labels, where, scrape)
        self._memory(counters, a.home, labels, where, scrape)
        self._threads(w, state, labels, scrape)

    def _cpu(self, state: CgroupState, labels: list[str], where: str, scrape: _Scrape) -> None:
        stats = state.cpu_stat or {}
        if "usage_usec" in stats:
            scrape.add("numaguard_container_cpu_usage_seconds_total", labels, stats["usage_usec"] / 1e6)
        if "nr_throttled" in stats:
            scrape.add("numaguard_container_cpu_periods_total", labels, stats.get("nr_periods", 0))
            scrape.add("numaguard_container_cpu_throttled_periods_total", labels, stats["nr_throttled"])
            scrape.add("numaguard_container_cpu_throttled_seconds_total", labels, stats.get("throttled_usec", 0) / 1e6)
        else:
            scrape.lack("cpu_controller", f"no nr_throttled in cpu.stat of {where} (cpu controller not enabled)")

    def _memory(self, c: CgroupCounters, home: tuple[int, ...], labels: list[str], where: str,
                scrape: _Scrape) -> None:
        def locality(node: int) -> str:
            return "unassigned" if not home else "local" if node in home else "remote"

        _lacks(c, where, scrape)
        if c.memory_stat is not None:
            scrape.add("numaguard_container_page_faults_total", labels, c.memory_stat.get("pgfault", 0))
            scrape.add("numaguard_container_major_page_faults_total", labels, c.memory_stat.get("pgmajfault", 0))
            if "numa_pages_migrated" in c.memory_stat:
                scrape.add("numaguard_container_numa_pages_migrated_total", labels,
                           c.memory_stat["numa_pages_migrated"])
        for node, size in sorted((c.numa_bytes or {}).items()):
            scrape.add("numaguard_container_memory_numa_bytes", labels + [str(node), locality(node)], size)
        for node, size in sorted((c.hugetlb_bytes or {}).items()):
            if size:                  # most containers hold no hugepages: no series of zeros for them
                scrape.add("numaguard_container_hugepages_numa_bytes", labels + [str(node), locality(node)], size)
        for name, pressure in (("numaguard_container_cpu_pressure_seconds_total", c.cpu_pressure),
                               ("numaguard_container_memory_pressure_seconds_total", c.memory_pressure)):
            for kind, total in sorted((pressure or {}).items()):
                scrape.add(name, labels + [kind], total / 1e6)

    def _threads(self, w: Watched, state: CgroupState, labels: list[str], scrape: _Scrape) -> None:
        if state.hidden:                              # some threads cannot be read: no partial sums
            scrape.lack("proc", f"{state.hidden} thread(s) in cgroup.threads of the cgroup of {w.namespace}/{w.pod} "
                                f"{w.container} read as 0, of another PID namespace (run the agent with hostPID)")
            return
        run = self._running.setdefault(w.cgroup.id, _Running())
        with_schedstat, cpus = self.schedstat[0], w.assignment.cpus
        moved = state.cpus_effective != run.cpus      # a new cpuset changes every thread's affinity
        run.cpus = state.cpus_effective
        alive: dict[int, _Seen] = {}
        for tid in state.pids:                        # thread ids, from cgroup.threads
            seen, ran = self._thread(run, tid, with_schedstat, moved)
            if seen is None:
                continue
            alive[tid] = seen
            if cpus is not None and ran:
                run.samples += 1
                run.outside += seen.last_cpu not in cpus
        run.threads = alive
        scrape.add("numaguard_container_threads", labels, len(alive))
        scrape.add("numaguard_container_involuntary_context_switches_total", labels, run.involuntary)
        if with_schedstat:
            scrape.add("numaguard_container_runqueue_wait_seconds_total", labels, run.wait_ns / 1e9)
        if cpus is not None:
            scrape.add("numaguard_container_threads_outside_exclusive", labels,
                       sum(1 for t in alive.values() if t.allowed - cpus))
            scrape.add("numaguard_container_thread_samples_total", labels, run.samples)
            scrape.add("numaguard_container_thread_samples_outside_total", labels, run.outside)

    def _thread(self, run: _Running, tid: int, with_schedstat: bool, moved: bool) -> tuple[_Seen | None, bool]:
        """(the thread now, whether it ran since the last scrape), its rises added to the
        container's totals (None: gone meanwhile). A thread that neither ran nor waited since
        the last scrape (its schedstat unchanged) has the same stat and switches: only its
        schedstat is read, and its status again one scrape in STATUS_EVERY (an affinity another
        thread set meanwhile; spread over the threads by tid) or when the cpuset changed."""
        before = run.threads.get(tid)
        # /proc/TID/task/TID is the thread whatever its process (proc_task_lookup: same thread group)
        sched = read_schedstat(self.proc, tid, tid) if with_schedstat else None
        if with_schedstat and sched is None:
            return None, False
        if (before is not None and sched == (before.on_cpu, before.wait) and not moved
                and (self._scrapes + tid) % STATUS_EVERY):
            return before, False
        task = read_task(self.proc, tid, tid)
        if task is None:
            return None, False
        on_cpu, wait = sched if sched is not None else (task.cpu_ticks, 0)
        if before is None or before.start != task.start_ticks:      # new, or a new thread under a reused tid
            before = _Seen(task.start_ticks, 0, 0, 0, frozenset(), -1)
        run.wait_ns += max(0, wait - before.wait)
        run.involuntary += max(0, task.involuntary - before.involuntary)
        return (_Seen(task.start_ticks, on_cpu, wait, task.involuntary, task.cpus_allowed, task.last_cpu),
                on_cpu > before.on_cpu)

    def _features(self, snap: Snapshot, sizes: tuple[str, ...], scrape: _Scrape) -> None:
        """With no container to read, what the kernel offers is asked of the kubelet's own cgroup."""
        pods, where = snap.tree.pods, f"the kubelet's cgroup {snap.tree.pods.name}"
        _lacks(read_counters(pods, sizes), where, scrape)
        if not (pods / "cpuset.cpus.effective").exists():
            scrape.lack("cpuset", f"no cpuset.cpus.effective in {where} (cpuset controller not enabled)")
        if "nr_throttled" not in (read_cgroup_file(pods, "cpu.stat") or ""):
            scrape.lack("cpu_controller", f"no nr_throttled in cpu.stat of {where} (cpu controller not enabled)")

    def _node(self, snap: Snapshot, scrape: _Scrape) -> None:
        numastat = read_numastat(self.sysfs)
        if numastat is None:
            scrape.lack("numastat", f"no {self.sysfs}/devices/system/node/node*/numastat (a kernel without NUMA)")
        for node, counts in sorted((numastat or {}).items()):
            for key, name in _NUMASTAT.items():
                if key in counts:
                    scrape.add(name, [str(node)], counts[key])
        busy = read_cpu_busy(self.proc)
        if busy is None:
            scrape.lack("proc_stat", f"{self.proc}/stat has no per-CPU lines")
        pool = snap.shared_pool
        if pool is None:
            return
        scrape.add("numaguard_node_shared_pool_cpus", [], len(pool))
        if busy is not None:
            # per CPU, what it did since the last scrape while in the pool now (all of it the first time)
            before = self._busy or {}
            self._pool_ticks += sum(max(0, busy[c] - before.get(c, 0)) for c in pool if c in busy)
            self._busy = busy
            scrape.add("numaguard_node_shared_pool_usage_seconds_total", [], self._pool_ticks / CLOCK_TICKS)

    # ---------------------------------------------------------------------------- logging

    def _report(self, scrape: _Scrape, unseen: dict[tuple[str, str, str], str], notes: list[str]) -> None:
        """Log what changed since the last scrape: a source lost or regained, a container that
        cannot be seen (once each), and inputs that could not be read."""
        for key in SOURCE_KEYS:
            now = (key not in scrape.missing, scrape.missing.get(key, ""))
            before = self._reported.get(key)
            if before is not None and before[0] == now[0]:
                continue
            if not now[0]:
                self.log(f"source {key} not available: {now[1]}; not exported: {_NEEDING[key]}")
            elif before is not None:
                self.log(f"source {key} available again")
            self._reported[key] = now
        for who, why in unseen.items():
            if self._unseen.get(who) != why:
                self.log(f"container {who[0]}/{who[1]} {who[2]} not seen in the kernel: {why}")
        self._unseen = dict(unseen)
        for line in notes:
            if line not in self._notes:
                self.log(f"not read: {line}")
                self._notes.add(line)


def _lacks(c: CgroupCounters, where: str, scrape: _Scrape) -> None:
    """The sources a container's (or the kubelet's) cgroup files show missing."""
    if c.memory_stat is None:
        scrape.lack("memory_controller", f"no memory.stat in {where} (memory controller not enabled)")
        scrape.lack("numa_balancing", f"no memory.stat in {where}")
    elif "numa_pages_migrated" not in c.memory_stat:
        scrape.lack("numa_balancing", f"no numa_pages_migrated in memory.stat of {where} (CONFIG_NUMA_BALANCING)")
    if c.numa_bytes is None:
        scrape.lack("memory_numa_stat", f"no memory.numa_stat in {where}")
    if c.hugetlb_bytes is None:
        scrape.lack("hugetlb", f"no hugetlb.*.numa_stat in {where}")
    if c.cpu_pressure is None or c.memory_pressure is None:
        scrape.lack("psi", f"no cpu.pressure or memory.pressure in {where} (CONFIG_PSI off, or booted with psi=0)")
