"""NG412-NG418: what the kernel enforces and where the application runs, against what the
kubelet assigned (the article's verification steps 3, 4 and 6).

`numaguard node inspect --processes` reads, per container, its cgroup's effective cpuset, its
threads (`/proc/PID/task/TID/status`, `stat`), its resident pages per NUMA node
(`/proc/PID/numa_maps`) and its CFS throttling (`cpu.stat`, `cpu.max`) into a `KernelView`,
and what the kubelet assigned it (checkpoints, PodResources) into an `Assignment`. The
judging is here, without I/O:

    from numaguard.lint.rules.processes import (enforced_set_findings, thread_findings,
                                                locality_findings, throttling_findings)

    found = enforced_set_findings([(view, assignment), ...])      # NG412, NG413, NG414
    found += thread_findings(view, assignment)                    # NG415, NG416
    found += locality_findings(view, assignment, max_remote=0.10)  # NG417
    found += throttling_findings(view, assignment)                # NG418

Each returns `PoolViolation`s whose source is `pod/NAMESPACE/NAME`, as NG409's.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from numaguard.lint.k8s.cpuset import format_cpuset
from numaguard.lint.model import ObjectRef, Severity, Violation
from numaguard.lint.rules.base import Rule
from numaguard.lint.rules.pool import PoolViolation

SHOWN = 5          # threads named in a message; the rest are counted

CGROUP_CPUS = Rule(
    id="NG412", name="cgroup-cpus-mismatch", severity=Severity.ERROR, target="node",
    title="A container's cgroup allows other CPUs than the kubelet assigned it (cpuset.cpus.effective)",
    rationale="The kubelet's checkpoint and PodResources API say what a container was given; the kernel enforces "
              "what its cgroup's cpuset.cpus.effective lists (Documentation/admin-guide/cgroup-v2.rst: \"the "
              "onlined CPUs that are actually granted to this cgroup\"). The static CPU Manager writes a "
              "container's exclusive CPUs into its cpuset, and the shared pool (defaultCpuSet, or the pod's "
              "shared pool under pod-level resource managers) into every other container's, again on each "
              "reconcile (cpuManagerReconcilePeriod, 10 s by default). A cpuset with more or other CPUs means "
              "the pinning the checkpoint records is not what the application gets: a failed reconcile, a "
              "runtime or NRI plugin rewriting cpusets, a container created before a policy change.",
    remediation="Check the kubelet log for \"ReconcileState\" and \"failed to update container\" errors and for "
                "runtime plugins that write cpusets; recreate the pod. A difference seen within a reconcile "
                "period of a pod starting can be the kubelet not having caught up yet: inspect again.")

CGROUP_MEMS = Rule(
    id="NG413", name="cgroup-mems-mismatch", severity=Severity.ERROR, target="node",
    title="A container's cgroup allows other memory NUMA nodes than the Memory Manager assigned it "
          "(cpuset.mems.effective)",
    rationale="The Static Memory Manager pins a Guaranteed container's memory by writing its NUMA nodes into "
              "the container's cpuset.mems (policy_static.go GetAffinity, applied at container creation); the "
              "kernel then allocates only there. cpuset.mems.effective listing other nodes means the memory "
              "placement the checkpoint records is not enforced, and allocations can land on remote NUMA nodes.",
    remediation="Recreate the pod so the container is created with its assigned memory nodes; check for runtime "
                "or NRI plugins that rewrite cpuset.mems, and for a Memory Manager checkpoint changed without a "
                "drain (NG402, NG408).")

EXCLUSIVE_SHARED = Rule(
    id="NG414", name="exclusive-cpus-in-other-cgroup", severity=Severity.ERROR, target="node",
    title="A container's cgroup allows CPUs that are exclusive to another container",
    rationale="Exclusive CPUs are exclusive only when no other container's cpuset holds them: the static CPU "
              "Manager removes them from the shared pool and rewrites every other container's cpuset on its "
              "reconcile loop. A container whose cpuset.cpus.effective still holds another container's "
              "exclusive CPUs can run there, and the latency the pinned application was promised does not hold.",
    remediation="Check the kubelet log for reconcile errors on the named container; recreate it. Right after "
                "the exclusive container started this can be the reconcile period not yet passed: inspect again.")

THREAD_OUTSIDE = Rule(
    id="NG415", name="thread-outside-exclusive-cpus", severity=Severity.ERROR, target="node",
    title="Threads of a container with exclusive CPUs may run, or last ran, outside those CPUs",
    rationale="The article's step 3: \"Confirm the application's threads remain on the intended exclusive "
              "set.\" Each thread's /proc/PID/task/TID/status Cpus_allowed_list is where the kernel lets it run "
              "(its affinity within its cpuset) and field 39 of its stat the CPU it last ran on. A thread "
              "allowed beyond the exclusive CPUs, or found on another CPU, shares CPUs the pinning was meant to "
              "keep to itself.",
    remediation="Fix the container's cpuset first when NG412 names it; otherwise find what widened the thread's "
                "affinity (a runtime hook, an agent calling sched_setaffinity) and recreate the pod.")

THREAD_NARROWED = Rule(
    id="NG416", name="thread-affinity-narrowed", severity=Severity.INFO, target="node",
    title="Threads narrowed their CPU affinity below their cgroup's CPUs themselves",
    rationale="An application may pin its own threads (taskset, sched_setaffinity, a runtime's thread pinning): "
              "a thread whose Cpus_allowed_list is a strict subset of its cgroup's cpuset.cpus.effective did so. "
              "That is often deliberate (one thread per CPU), but it also hides CPUs from the rest of the "
              "process and survives changes of the container's CPUs: worth knowing when reading latency.",
    remediation="Nothing to do when the application pins on purpose; otherwise look for taskset in the "
                "entrypoint or a library pinning threads (OpenMP's OMP_PROC_BIND, DPDK lcores).")

MEMORY_REMOTE = Rule(
    id="NG417", name="memory-outside-numa", severity=Severity.WARNING, target="node",
    title="A container's resident memory lies on NUMA nodes other than its own beyond the allowed share",
    rationale="The article's step 4: \"Kubernetes admission alone does not prove that the application's internal "
              "thread and memory behavior is optimal.\" /proc/PID/numa_maps gives each mapping's resident pages "
              "per NUMA node. Memory on a node other than the container's assigned NUMA nodes (the Memory "
              "Manager's, else those of its exclusive CPUs) is read across the interconnect: the cross-NUMA "
              "traffic of step 6. Memory allocated before the cpuset was set, page cache, memory shared with "
              "other processes and a memory policy of the application's own all show up here.",
    remediation="Check the container's cpuset.mems (NG413) and the application's memory policy (numactl, "
                "set_mempolicy); allocate after start-up rather than in an init step on another node; restart "
                "the container to re-fault its memory locally.")

THROTTLED = Rule(
    id="NG418", name="exclusive-cpus-throttled", severity=Severity.ERROR, target="node",
    title="A container with exclusive CPUs is CFS-throttled (nr_throttled rose during the sample)",
    rationale="A container that owns its CPUs has no one to share them with, so the kubelet sets no CFS quota "
              "on it: DisableCPUQuotaWithExclusiveCPUs, beta and on since 1.33, deprecated in 1.36, is locked "
              "on in 1.37 (pkg/features/kube_features.go), and generateLinuxContainerResources then passes CpuQuota -1, "
              "which the runtime writes as cpu.max \"max\" (pkg/kubelet/kuberuntime/"
              "kuberuntime_container_linux.go); the pod's own cgroup drops its quota too "
              "(pod_container_manager_linux.go EnsureExists, PodHasExclusiveCPUs). A rising nr_throttled in its "
              "cpu.stat means a quota is enforced anyway and the application stalls at the end of each period: "
              "the CPU throttling the article's step 6 tracks.",
    remediation="The container was created by a kubelet older than 1.33 or with the gate off, or a runtime or "
                "NRI plugin writes cpu.max: recreate the pod on a 1.37 kubelet and check the plugins.")

RULES = (CGROUP_CPUS, CGROUP_MEMS, EXCLUSIVE_SHARED, THREAD_OUTSIDE, THREAD_NARROWED, MEMORY_REMOTE, THROTTLED)


@dataclass(frozen=True)
class Thread:
    pid: int
    tid: int
    comm: str
    cpus_allowed: frozenset[int]
    last_cpu: int
    cpu_seconds: float
    window_seconds: float | None = None     # CPU time during the sample, when one was taken
    mems_allowed: frozenset[int] = frozenset()  # Mems_allowed_list: the memory nodes its cpuset allows

    def label(self) -> str:
        return f"tid {self.tid} ({self.comm})"


@dataclass(frozen=True)
class Throttling:
    cpu_max: str | None
    periods: int
    throttled: int
    throttled_usec: int
    window: float = 0.0                   # seconds between the two reads; 0: read once
    rise_periods: int = 0
    rise_throttled: int = 0
    rise_usec: int = 0


@dataclass(frozen=True)
class KernelView:
    """One container as the kernel sees it."""

    namespace: str
    pod: str
    container: str
    cgroup: str
    cpus_effective: frozenset[int] | None
    mems_effective: frozenset[int] | None
    processes: int = 0
    threads: tuple[Thread, ...] = ()
    memory: dict[int, int] = field(default_factory=dict)       # NUMA -> resident bytes in base pages
    hugepages: dict[int, int] = field(default_factory=dict)    # NUMA -> resident bytes in hugetlbfs pages
    throttling: Throttling | None = None

    @property
    def who(self) -> str:
        return f"container {self.container} of pod {self.namespace}/{self.pod}"


@dataclass(frozen=True)
class Assignment:
    """What the kubelet gave the container. `cpus` None: nothing to compare (CPU Manager policy
    none, or no checkpoint); `numa` empty: the Memory Manager pinned nothing; `home`: the
    NUMA nodes its memory belongs on (the Memory Manager's, else its exclusive CPUs')."""

    exclusive: frozenset[int] = frozenset()
    cpus: frozenset[int] | None = None
    cpus_from: str = ""
    numa: tuple[int, ...] = ()
    numa_from: str = ""
    home: tuple[int, ...] = ()
    home_from: str = ""


def _v(rule: Rule, view: KernelView, path: tuple, message: str) -> PoolViolation:
    return PoolViolation(rule, f"pod/{view.namespace}/{view.pod}",
                         Violation(path=path, container=view.container, message=f"{view.who}: {message}"),
                         ObjectRef(None, "Pod", view.namespace, view.pod))


def numa_list(nodes) -> str:
    return ",".join(map(str, sorted(nodes))) or "-"


def enforced_set_findings(pairs: list[tuple[KernelView, Assignment]]) -> list[PoolViolation]:
    """NG412 and NG413 per container, NG414 across them (in the order given)."""
    out: list[PoolViolation] = []
    for view, a in pairs:
        if view.cpus_effective is not None and a.cpus is not None and view.cpus_effective != a.cpus:
            parts = []
            if view.cpus_effective - a.cpus:
                parts.append(f"CPUs {format_cpuset(view.cpus_effective - a.cpus)} are not its own")
            if a.cpus - view.cpus_effective:
                parts.append(f"CPUs {format_cpuset(a.cpus - view.cpus_effective)} are missing")
            out.append(_v(CGROUP_CPUS, view, ("cpuset.cpus.effective",),
                          f"its cgroup's cpuset.cpus.effective is {format_cpuset(view.cpus_effective) or '-'}, but "
                          f"it was assigned {format_cpuset(a.cpus) or '-'} ({a.cpus_from}): " + "; ".join(parts)))
        if view.mems_effective is not None and a.numa and view.mems_effective != frozenset(a.numa):
            parts = []
            if view.mems_effective - set(a.numa):
                parts.append(f"NUMA {numa_list(view.mems_effective - set(a.numa))} not its own")
            if set(a.numa) - view.mems_effective:
                parts.append(f"NUMA {numa_list(set(a.numa) - view.mems_effective)} missing")
            out.append(_v(CGROUP_MEMS, view, ("cpuset.mems.effective",),
                          f"its cgroup's cpuset.mems.effective is {numa_list(view.mems_effective)}, but the Memory "
                          f"Manager assigned NUMA {numa_list(a.numa)} ({a.numa_from}): " + "; ".join(parts)))
    for view, _a in pairs:
        if view.cpus_effective is None:
            continue
        for owner, owned in pairs:
            held = view.cpus_effective & owned.exclusive
            if owner is not view and held:
                seen = [t for t in view.threads if t.last_cpu in held]
                out.append(_v(EXCLUSIVE_SHARED, view, ("cpuset.cpus.effective",),
                              f"its cgroup's cpuset.cpus.effective {format_cpuset(view.cpus_effective)} holds CPUs "
                              f"{format_cpuset(held)}, exclusive to {owner.who}" + (
                                  f"; last ran there: {_named(seen, lambda t: f'{t.label()} on CPU {t.last_cpu}')}"
                                  if seen else "")))
    return out


def _named(threads: list[Thread], describe) -> str:
    shown = "; ".join(describe(t) for t in threads[:SHOWN])
    return shown + (f"; and {len(threads) - SHOWN} more" if len(threads) > SHOWN else "")


def thread_findings(view: KernelView, a: Assignment) -> list[PoolViolation]:
    """NG415 (a container with exclusive CPUs) and NG416 (any container whose cpuset is known)."""
    out: list[PoolViolation] = []
    total = len(view.threads)
    if a.exclusive:
        outside = [t for t in view.threads if t.cpus_allowed - a.exclusive or t.last_cpu not in a.exclusive]
        if outside:
            out.append(_v(THREAD_OUTSIDE, view, ("threads",),
                          f"{len(outside)} of {total} thread(s) can run outside its exclusive CPUs "
                          f"{format_cpuset(a.exclusive)}: " + _named(
                              outside, lambda t: f"{t.label()} allowed {format_cpuset(t.cpus_allowed)}, last ran on "
                                                 f"CPU {t.last_cpu}")))
    if view.cpus_effective:
        narrowed = [t for t in view.threads if t.cpus_allowed < view.cpus_effective]
        if narrowed:
            out.append(_v(THREAD_NARROWED, view, ("threads",),
                          f"{len(narrowed)} of {total} thread(s) narrowed their CPU affinity within the cgroup's "
                          f"{format_cpuset(view.cpus_effective)} themselves (taskset, sched_setaffinity): " + _named(
                              narrowed, lambda t: f"{t.label()} allowed {format_cpuset(t.cpus_allowed)}")))
    return out


def human_bytes(n: int) -> str:
    for unit, size in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if n >= size:
            return f"{n / size:.1f} {unit}"
    return f"{n} B"


def remote_share(view: KernelView, home: tuple[int, ...]) -> tuple[int, int, float]:
    """(bytes outside `home`, resident bytes, share), hugepages included."""
    total = sum(view.memory.values()) + sum(view.hugepages.values())
    remote = sum(b for n, b in (*view.memory.items(), *view.hugepages.items()) if n not in home)
    return remote, total, (remote / total if total else 0.0)


def locality_findings(view: KernelView, a: Assignment, *, max_remote: float) -> list[PoolViolation]:
    """NG417 when more than `max_remote` (0..1) of the resident memory is outside `a.home`."""
    if not a.home:
        return []
    remote, total, share = remote_share(view, a.home)
    if share <= max_remote:
        return []
    nodes = sorted({n for part in (view.memory, view.hugepages) for n, b in part.items() if b and n not in a.home})
    message = (f"{share * 100:.1f}% of its resident memory ({human_bytes(remote)} of {human_bytes(total)}) is on "
               f"NUMA {numa_list(nodes)}, outside its NUMA {numa_list(a.home)} ({a.home_from}); more than "
               f"{max_remote * 100:g}% allowed")
    huge_total = sum(view.hugepages.values())
    if huge_total:
        huge_remote = sum(b for n, b in view.hugepages.items() if n not in a.home)
        message += f"; hugepages: {human_bytes(huge_remote)} of {human_bytes(huge_total)} outside"
    return [_v(MEMORY_REMOTE, view, ("numa_maps",), message)]


def throttling_findings(view: KernelView, a: Assignment) -> list[PoolViolation]:
    """NG418: a container with exclusive CPUs whose nr_throttled rose during the sample."""
    t = view.throttling
    if not a.exclusive or t is None or not t.window or t.rise_throttled <= 0:
        return []
    return [_v(THROTTLED, view, ("cpu.stat", "nr_throttled"),
               f"it holds exclusive CPUs {format_cpuset(a.exclusive)} and was CFS-throttled during the "
               f"{t.window:g} s sample: nr_throttled {t.throttled - t.rise_throttled} -> {t.throttled} "
               f"({t.rise_throttled} of {t.rise_periods} periods, {t.rise_usec / 1000:g} ms throttled); cpu.max is "
               f"\"{t.cpu_max or '?'}\", a quota the 1.37 kubelet does not set on exclusive CPUs")]
