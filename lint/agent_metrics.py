"""The node agent's metrics, one table: every name, its type, labels, meaning and source (the
kernel documentation file and field, or the kubelet record), and the sources the agent reports
as available or not. `numaguard node agent` exports exactly these (its collector looks each
name up here), deploy/README.md's metric reference is generated from here, and `numaguard compare` and the
rules in deploy/monitoring use the same names.

Pure data, no I/O: kept outside `lint/node/` so the documentation generator (`lint/rules/docs`)
and other front ends may read it without the node readers.

Labels are bounded: per container `namespace`, `pod`, `container` and `pool` (its CPU pool:
`exclusive` when it holds exclusive CPUs, `pod-shared` for the pod's shared pool under
pod-level resource managers, else `shared`), with `numa_node`, `locality` or `kind` where a
metric says so; per node only `numa_node`; never a process or thread id.
"""
from __future__ import annotations

from dataclasses import dataclass

CONTAINER = ("namespace", "pod", "container", "pool")
POOLS = ("exclusive", "shared", "pod-shared")
LOCALITIES = ("local", "remote", "unassigned")
PSI_KINDS = ("some", "full")

CGROUP_V2 = "Documentation/admin-guide/cgroup-v2.rst"
PROC = "Documentation/filesystems/proc.rst"
SCHEDSTAT = "Documentation/scheduler/sched-stats.rst"
PSI = "Documentation/accounting/psi.rst"
NUMASTAT = "Documentation/admin-guide/numastat.rst"


@dataclass(frozen=True)
class Metric:
    name: str
    kind: str                        # "gauge" or "counter" (a counter's name ends in _total)
    labels: tuple[str, ...]
    help: str
    source: str                      # where the value comes from: file, field, document
    needs: tuple[str, ...] = ()      # SOURCES that must be available for it to be exported


@dataclass(frozen=True)
class SourceSpec:
    key: str
    what: str                        # what it is, and what is missing without it


METRICS: tuple[Metric, ...] = (
    # -- alignment
    Metric("numaguard_container_exclusive_cpus", "gauge", CONTAINER,
           "Exclusive CPUs the CPU Manager assigned the container (0 in a shared pool).",
           "the kubelet's `cpu_manager_state` entry for the pod uid and container, else PodResources "
           "`List` `cpu_ids` (`pkg/kubelet/apis/podresources`)", ("podresources",)),
    Metric("numaguard_container_assigned_numa_nodes", "gauge", CONTAINER + ("numa_node",),
           "1 for each NUMA node the container's memory belongs on: the Memory Manager's, else those of its "
           "exclusive CPUs; no series when neither.",
           "`memory_manager_state` entry `numaAffinity` (else PodResources `memory` topology); a CPU's node from "
           "`/sys/devices/system/node/nodeN/cpulist`", ("podresources",)),
    Metric("numaguard_container_cpuset_matches", "gauge", CONTAINER,
           "1 when the cgroup's cpuset.cpus.effective equals the CPUs assigned (its exclusive CPUs, else its shared "
           "pool), else 0.",
           f"`cpuset.cpus.effective` ({CGROUP_V2}, Cpuset Interface Files) against `cpu_manager_state` "
           "`entries`, `defaultCpuSet` or the pod's `podEntries`", ("cgroup_v2", "cpuset", "cpu_checkpoint")),
    Metric("numaguard_container_mems_matches", "gauge", CONTAINER,
           "1 when the cgroup's cpuset.mems.effective equals the NUMA nodes the Memory Manager assigned, else 0; "
           "containers the Memory Manager pinned only.",
           f"`cpuset.mems.effective` ({CGROUP_V2}) against `memory_manager_state` `numaAffinity`",
           ("cgroup_v2", "cpuset", "memory_checkpoint")),
    Metric("numaguard_container_threads", "gauge", CONTAINER,
           "Threads of the container's processes now.",
           f"`cgroup.threads` of its cgroup and those below ({CGROUP_V2}, Core Interface Files)",
           ("cgroup_v2", "proc")),
    Metric("numaguard_container_threads_outside_exclusive", "gauge", CONTAINER,
           "Threads allowed to run on a CPU outside the CPUs assigned (exclusive, else the shared pool).",
           f"`/proc/PID/task/TID/status` `Cpus_allowed_list` ({PROC}, table 1-2)", ("cgroup_v2", "proc",
                                                                                    "cpu_checkpoint")),
    Metric("numaguard_container_thread_samples_total", "counter", CONTAINER,
           "Threads seen to have run since the previous scrape, one sample each per scrape: the denominator of "
           "time outside.",
           f"`/proc/PID/task/TID/schedstat` field 1, time on a CPU ({SCHEDSTAT}); without schedstat `stat` "
           f"fields 14+15 `utime`+`stime` ({PROC}, table 1-4)", ("cgroup_v2", "proc", "cpu_checkpoint")),
    Metric("numaguard_container_thread_samples_outside_total", "counter", CONTAINER,
           "Of those samples, the threads whose last CPU was outside the CPUs assigned; the rate of this over the "
           "rate of thread_samples_total is the share of time its threads ran outside.",
           f"`/proc/PID/task/TID/stat` field 39 `processor`, the CPU it last ran on ({PROC}, table 1-4)",
           ("cgroup_v2", "proc", "cpu_checkpoint")),
    # -- memory locality
    Metric("numaguard_container_memory_numa_bytes", "gauge", CONTAINER + ("numa_node", "locality"),
           "The container's memory on each NUMA node (anonymous and page cache, tmpfs and shared memory "
           "included): local on one of its assigned nodes, remote elsewhere, unassigned when it has none.",
           f"`memory.numa_stat` `anon` + `file`, `N<node>=<bytes>` ({CGROUP_V2}, Memory Interface Files)",
           ("cgroup_v2", "memory_numa_stat")),
    Metric("numaguard_container_hugepages_numa_bytes", "gauge", CONTAINER + ("numa_node", "locality"),
           "The container's hugetlb pages in use on each NUMA node, every page size, with the same locality; "
           "only where it holds some (most containers hold none).",
           f"`hugetlb.<size>.numa_stat` `N<node>=<bytes>` ({CGROUP_V2}, HugeTLB Interface Files)",
           ("cgroup_v2", "hugetlb")),
    Metric("numaguard_container_page_faults_total", "counter", CONTAINER,
           "Page faults the container incurred.",
           f"`memory.stat` `pgfault` ({CGROUP_V2})", ("cgroup_v2", "memory_controller")),
    Metric("numaguard_container_major_page_faults_total", "counter", CONTAINER,
           "Major page faults (the page had to be read in) the container incurred.",
           f"`memory.stat` `pgmajfault` ({CGROUP_V2})", ("cgroup_v2", "memory_controller")),
    Metric("numaguard_container_numa_pages_migrated_total", "counter", CONTAINER,
           "Pages of the container that automatic NUMA balancing moved to another node.",
           f"`memory.stat` `numa_pages_migrated` ({CGROUP_V2}; with CONFIG_NUMA_BALANCING)",
           ("cgroup_v2", "numa_balancing")),
    # -- CPU
    Metric("numaguard_container_cpu_usage_seconds_total", "counter", CONTAINER,
           "CPU time the container used.",
           f"`cpu.stat` `usage_usec` ({CGROUP_V2}, Core Interface Files / CPU)", ("cgroup_v2",)),
    Metric("numaguard_container_cpu_periods_total", "counter", CONTAINER,
           "CFS bandwidth periods that elapsed while the container was runnable.",
           f"`cpu.stat` `nr_periods` ({CGROUP_V2}; with the cpu controller)", ("cgroup_v2", "cpu_controller")),
    Metric("numaguard_container_cpu_throttled_periods_total", "counter", CONTAINER,
           "Periods in which the container's CFS quota (cpu.max) throttled it.",
           f"`cpu.stat` `nr_throttled` ({CGROUP_V2})", ("cgroup_v2", "cpu_controller")),
    Metric("numaguard_container_cpu_throttled_seconds_total", "counter", CONTAINER,
           "Time the container's CFS quota held it off the CPU.",
           f"`cpu.stat` `throttled_usec` ({CGROUP_V2})", ("cgroup_v2", "cpu_controller")),
    Metric("numaguard_container_cpu_pressure_seconds_total", "counter", CONTAINER + ("kind",),
           "Time some (kind=some) or all (kind=full) of the container's runnable tasks waited for a CPU.",
           f"`cpu.pressure` `some`/`full` `total=` microseconds ({PSI}; {CGROUP_V2})", ("cgroup_v2", "psi")),
    Metric("numaguard_container_memory_pressure_seconds_total", "counter", CONTAINER + ("kind",),
           "Time some or all of the container's tasks stalled on memory (reclaim, refaults, swap-in).",
           f"`memory.pressure` `some`/`full` `total=` ({PSI}; {CGROUP_V2})", ("cgroup_v2", "psi")),
    Metric("numaguard_container_runqueue_wait_seconds_total", "counter", CONTAINER,
           "Time the container's threads spent runnable but waiting on a run queue, summed over its threads "
           "(a running total: see \"Counters summed over threads\").",
           f"`/proc/PID/task/TID/schedstat` field 2, time spent waiting on a runqueue ({SCHEDSTAT})",
           ("cgroup_v2", "proc", "schedstat")),
    Metric("numaguard_container_involuntary_context_switches_total", "counter", CONTAINER,
           "Times the container's threads were taken off their CPU while still runnable, summed over its threads.",
           f"`/proc/PID/task/TID/status` `nonvoluntary_ctxt_switches` ({PROC}, table 1-2)", ("cgroup_v2", "proc")),
    # -- node
    Metric("numaguard_node_numa_hit_total", "counter", ("numa_node",),
           "Pages allocated on this node that were meant for it.",
           f"`/sys/devices/system/node/nodeN/numastat` `numa_hit` ({NUMASTAT})", ("numastat",)),
    Metric("numaguard_node_numa_miss_total", "counter", ("numa_node",),
           "Pages allocated on this node although another was preferred (that one was full).",
           f"`numastat` `numa_miss` ({NUMASTAT})", ("numastat",)),
    Metric("numaguard_node_numa_other_node_total", "counter", ("numa_node",),
           "Pages allocated on this node by a process running on another node.",
           f"`numastat` `other_node` ({NUMASTAT})", ("numastat",)),
    Metric("numaguard_node_shared_pool_cpus", "gauge", (),
           "CPUs in the node's shared pool (reserved CPUs included, as the kubelet keeps them there); every "
           "online CPU under the CPU Manager's none policy.",
           "`cpu_manager_state` `defaultCpuSet`; `/sys/devices/system/cpu/online`", ("cpu_checkpoint",)),
    Metric("numaguard_node_shared_pool_usage_seconds_total", "counter", (),
           "CPU time spent busy on the shared pool's CPUs, by anyone (containers, system daemons, the kernel); "
           "over shared_pool_cpus its rate is the pool's utilisation.",
           f"`/proc/stat` `cpuN` `user`+`nice`+`system`+`irq`+`softirq` in USER_HZ ticks ({PROC}, 1.8), "
           "added per scrape for the CPUs in the pool at that scrape", ("cpu_checkpoint", "proc_stat")),
    # -- the agent itself
    Metric("numaguard_agent_source_available", "gauge", ("source",),
           "1 when the source was read (wherever it was looked for), 0 when the kernel or the node does not offer "
           "it: the metrics that need it are then absent, never zero.",
           "the sources below", ()),
    Metric("numaguard_agent_containers", "gauge", (),
           "Containers PodResources lists whose cgroup the agent found: the ones with series.",
           "PodResources `List`; the cgroup tree", ()),
    Metric("numaguard_agent_containers_unseen", "gauge", (),
           "Containers PodResources lists that the agent could not find in the kernel (no container id, no cgroup, "
           "or a read that failed): they have no series, and the picture is incomplete.",
           "PodResources `List`; `/var/log/containers`; the cgroup tree", ()),
)

SOURCES: tuple[SourceSpec, ...] = (
    SourceSpec("cgroup_v2", "the cgroup v2 tree with the kubelet's pod cgroups; without it (cgroup v1, hybrid, "
                            "not mounted) no container series"),
    SourceSpec("podresources", "the kubelet's PodResources API (`List`): which containers run and their exclusive "
                               "CPUs; without it no container series"),
    SourceSpec("cpu_checkpoint", "`cpu_manager_state`, read and restorable: the shared pools and what a cpuset is "
                                 "compared with"),
    SourceSpec("memory_checkpoint", "`memory_manager_state`: the Memory Manager's NUMA nodes per container"),
    SourceSpec("container_ids", "the kubelet's `/var/log/containers` links, which name each container's id "
                                "(and so its cgroup)"),
    SourceSpec("proc", "`/proc` of the host's PID namespace: threads, their CPUs, switches"),
    SourceSpec("cpuset", "the cpuset controller's `cpuset.cpus.effective` and `cpuset.mems.effective`"),
    SourceSpec("cpu_controller", "the cpu controller's `cpu.stat` `nr_periods`/`nr_throttled`/`throttled_usec`"),
    SourceSpec("memory_controller", "the memory controller's `memory.stat`"),
    SourceSpec("memory_numa_stat", "`memory.numa_stat` (a kernel with CONFIG_NUMA)"),
    SourceSpec("numa_balancing", "`numa_pages_migrated` in `memory.stat` (CONFIG_NUMA_BALANCING)"),
    SourceSpec("hugetlb", "`hugetlb.<size>.numa_stat` (the hugetlb controller; read when the node's hugepage pool "
                          "has pages)"),
    SourceSpec("psi", "pressure stall information, `cpu.pressure` and `memory.pressure` (CONFIG_PSI, not "
                      "booted with psi=0)"),
    SourceSpec("schedstat", "`/proc/PID/task/TID/schedstat` with real values (CONFIG_SCHED_INFO, sched_info on)"),
    SourceSpec("numastat", "`/sys/devices/system/node/node*/numastat`"),
    SourceSpec("proc_stat", "`/proc/stat` per-CPU times"),
)

BY_NAME = {m.name: m for m in METRICS}
SOURCE_KEYS = tuple(s.key for s in SOURCES)


def render_markdown() -> str:
    """deploy/README.md's metric reference."""
    lines = ["| metric | type | labels | what | source |", "|---|---|---|---|---|"]
    for m in METRICS:
        labels = ", ".join(f"`{label}`" for label in m.labels) or "-"
        lines.append(f"| `{m.name}` | {m.kind} | {labels} | {m.help} | {m.source} |")
    lines += ["", "`numaguard_agent_source_available{source}`, one series per source:", "",
              "| source | what | metrics that need it |", "|---|---|---|"]
    for s in SOURCES:
        users = ", ".join(f"`{m.name.removeprefix('numaguard_')}`" for m in METRICS if s.key in m.needs)
        lines.append(f"| `{s.key}` | {s.what} | {users or '-'} |")
    return "\n".join(lines) + "\n"
