"""`node inspect --processes`: what the kernel enforces and where each container's threads and
memory are, read from `<root>/proc` and `<root>/sys/fs/cgroup` only.

**From a container to its processes.** PodResources names a container by pod and name; the
cgroup tree names it by container id (`numaguard.lint.node.cgroups`). The id comes from
what the kubelet publishes:

1. `--pods FILE` with the pods' `status` (`kubectl get pods -o yaml`): `containerStatuses[]`
   and `initContainerStatuses[]` `containerID` ("containerd://<id>", "cri-o://<id>");
2. else the kubelet's `/var/log/containers` links, one per container it started, named
   `<pod>_<namespace>_<container>-<id>.log` (kuberuntime legacy.go `legacyLogSymlink`,
   `BuildPodFullName`; names are DNS labels and subdomains, so "_" splits them). A restarted
   container leaves its earlier instance's link until that one is collected.

The container's cgroup is the one of those ids found in the tree (an exited instance has
none); its processes are the PIDs of that cgroup and of the cgroups below it (`cgroup.procs`),
and their threads `/proc/PID/task/*`.

**When.** The threads' CPU time and the cgroups' `cpu.stat` are read twice, `sample` seconds
apart; the rest once, at the end. What each container was assigned (`rules.processes.Assignment`)
comes from the checkpoints' entries matched to it (`ContainerView.entries`), else from the
PodResources API; a container without exclusive CPUs is assigned the shared pool the static
CPU Manager gives it (the pod's shared pool under pod-level resource managers, else
`defaultCpuSet`).
"""
from __future__ import annotations

import os
import re
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from numaguard.lint.k8s.cpuset import format_cpuset
from numaguard.lint.node.cgroups import (CgroupTree, ContainerCgroup, ThrottleStat, open_cgroups, read_cgroup,
                                         read_throttle)
from numaguard.lint.node.kernel import CLOCK_TICKS, NumaPages, TaskState, read_numa_maps, read_threads
from numaguard.lint.node.matching import AGREES, DIFFERS, MEASURED, SKIPPED, UNCHECKED, WARNS, Verdict
from numaguard.lint.node.sources import Source, under
from numaguard.lint.rules.processes import (Assignment, KernelView, Thread, Throttling, enforced_set_findings,
                                            human_bytes, locality_findings, numa_list, remote_share,
                                            throttling_findings, thread_findings)

DEFAULT_SAMPLE = 5.0
DEFAULT_MAX_REMOTE = 0.10
DEFAULT_HOTTEST = 5
CONTAINER_LOGS_DIR = "/var/log/containers"      # kuberuntime legacyContainerLogsDir
PROCESS_CHECKS = ("cgroup", "threads", "memoryLocality", "throttling")
_LINK = re.compile(r"([^_]+)_([^_]+)_([^_]+)-([0-9a-f]{64})\.log\Z")


@dataclass(frozen=True)
class ProcessOptions:
    sample: float = DEFAULT_SAMPLE            # seconds between the two reads (0: read once)
    max_remote: float = DEFAULT_MAX_REMOTE    # NG417: share of resident memory allowed off its NUMA nodes
    hottest: int = DEFAULT_HOTTEST            # threads shown per container


@dataclass
class ProcessResult:
    """One container's kernel view and what it was compared with."""

    checks: dict[str, Verdict] = field(default_factory=dict)
    cgroup: ContainerCgroup | None = None
    view: KernelView | None = None
    assignment: Assignment = Assignment()
    hottest: list[Thread] = field(default_factory=list)

    def as_dict(self) -> dict:
        v, a = self.view, self.assignment
        out: dict[str, Any] = {"containerId": self.cgroup.id if self.cgroup else None,
                               "assigned": {"cpus": _cpus(a.cpus), "cpusFrom": a.cpus_from,
                                            "exclusiveCpus": format_cpuset(a.exclusive),
                                            "numaNodes": list(a.numa), "numaFrom": a.numa_from,
                                            "homeNumaNodes": list(a.home)}}
        if v is None:
            return out
        t = v.throttling
        return {**out, "cgroup": v.cgroup, "cpusEffective": _cpus(v.cpus_effective),
                "memsEffective": _cpus(v.mems_effective), "processes": v.processes, "threads": len(v.threads),
                "hottestThreads": [{"pid": h.pid, "tid": h.tid, "comm": h.comm, "cpuSeconds": h.cpu_seconds,
                                    "sampleCpuSeconds": h.window_seconds, "lastCpu": h.last_cpu,
                                    "cpusAllowed": format_cpuset(h.cpus_allowed),
                                    "memsAllowed": format_cpuset(h.mems_allowed)} for h in self.hottest],
                "memoryBytesByNuma": {str(n): b for n, b in sorted(v.memory.items())},
                "hugepageBytesByNuma": {str(n): b for n, b in sorted(v.hugepages.items())},
                "throttling": None if t is None else {
                    "cpuMax": t.cpu_max, "nrPeriods": t.periods, "nrThrottled": t.throttled,
                    "throttledUsec": t.throttled_usec, "sampleSeconds": t.window, "sampleNrPeriods": t.rise_periods,
                    "sampleNrThrottled": t.rise_throttled, "sampleThrottledUsec": t.rise_usec}}


def _cpus(cpus) -> str | None:
    return format_cpuset(cpus) if cpus is not None else None


# ------------------------------------------------------------------------------- container ids

def ids_from_manifests(manifests: dict) -> dict[tuple[str, str, str], set[str]]:
    """(namespace, pod, container) -> the container ids its Pod's status gives."""
    out: dict[tuple[str, str, str], set[str]] = {}
    for (namespace, name), pod in manifests.items():
        status = pod.get("status") if isinstance(pod.get("status"), dict) else {}
        for key in ("containerStatuses", "initContainerStatuses"):
            for s in status.get(key) or ():
                if isinstance(s, dict) and isinstance(s.get("containerID"), str) and "://" in s["containerID"]:
                    out.setdefault((namespace, name, str(s.get("name"))), set()).add(s["containerID"].split("://", 1)[1])
    return out


def read_container_links(root: str) -> tuple[dict[tuple[str, str, str], set[str]], Source]:
    folder = under(root, CONTAINER_LOGS_DIR)
    name = f"container log links {folder}"
    try:
        entries = os.listdir(folder)
    except FileNotFoundError:
        return {}, Source(name, False, "not found (mount it, or give --pods with the pods' status, to find each "
                                       "container's cgroup)", needed=False)
    except OSError as exc:
        return {}, Source(name, False, f"cannot read: {exc.strerror or exc}", needed=False)
    out: dict[tuple[str, str, str], set[str]] = {}
    for entry in entries:
        match = _LINK.match(entry)
        if match:
            pod, namespace, container, cid = match.groups()
            out.setdefault((namespace, pod, container), set()).add(cid)
    return out, Source(name, True, f"{sum(map(len, out.values()))} container(s)", needed=False)


def find_cgroup(tree: CgroupTree, ids: set[str], uid: str | None) -> tuple[ContainerCgroup | None, str]:
    """The cgroup of the running instance among `ids`, or why there is none."""
    if not ids:
        return None, ("no container id (give --pods with the pods' status, or mount the kubelet's "
                      f"{CONTAINER_LOGS_DIR})")
    found = [tree.containers[i] for i in sorted(ids) if i in tree.containers]
    if len(found) > 1 and uid is not None:
        found = [c for c in found if c.pod_uid == uid]
    if len(found) == 1:
        return found[0], ""
    shown = ", ".join(i[:12] for i in sorted(ids))
    if not found:
        return None, f"not running: no cgroup for container id {shown}"
    return None, f"{len(found)} cgroups for container ids {shown}"


# ------------------------------------------------------------------------------- assignments

def assignment(view, cpu_checkpoint, memory_checkpoint, topology) -> Assignment:
    """What the kubelet gave the container (see the module docstring). `view` has the
    ContainerView fields: cpus, memory_numa, identity, entries."""
    entry_cpus, entry_numa = view.entries
    exclusive = entry_cpus if entry_cpus is not None else view.cpus
    excl_from = "its exclusive CPUs in the checkpoint" if entry_cpus is not None else "its CPUs in PodResources"
    uid = view.identity.uid
    cpus, cpus_from = (exclusive, excl_from) if exclusive else (None, "")
    if not exclusive and cpu_checkpoint is not None and cpu_checkpoint.policy == "static":
        if uid in cpu_checkpoint.pods:
            held = frozenset().union(*cpu_checkpoint.containers.get(uid, {}).values())
            cpus, cpus_from = cpu_checkpoint.pods[uid] - held, "the pod's shared pool: its podEntries less its exclusive CPUs"
        else:
            cpus, cpus_from = cpu_checkpoint.default_cpus, "the node's shared pool, defaultCpuSet in the checkpoint"
    numa, numa_from = (entry_numa, "the Memory Manager checkpoint") if entry_numa is not None else (
        view.memory_numa, "PodResources")
    if not numa and memory_checkpoint is not None and uid in memory_checkpoint.pods:
        numa = tuple(sorted({n for b in memory_checkpoint.pods[uid] for n in b.numa_nodes}))
        numa_from = "the pod's memory in the Memory Manager checkpoint"
    home, home_from = (numa, "Memory Manager") if numa else (_numa_of(topology, exclusive), "its exclusive CPUs")
    return Assignment(exclusive, cpus, cpus_from, numa, numa_from if numa else "", home, home_from if home else "")


def _numa_of(topology, cpus) -> tuple[int, ...]:
    by_id = getattr(topology, "cpu_by_id", {})
    return tuple(sorted({by_id[c].numa for c in cpus if c in by_id}))


# ------------------------------------------------------------------------------- reading

@dataclass
class _Target:
    index: int
    namespace: str
    pod: str
    container: str
    cgroup: ContainerCgroup
    ticks: dict[tuple[int, int], int] = field(default_factory=dict)     # (pid, tid) -> ticks at the start
    throttle: ThrottleStat | None = None                                  # cpu.stat's counters at the start


def inspect_processes(root: str, kc: dict | None, views: list, manifests: dict, cpu_checkpoint, memory_checkpoint,
                      topology, options: ProcessOptions,
                      sleep: Callable[[float], None] = time.sleep) -> tuple[list[ProcessResult], list[Source], list]:
    """One ProcessResult per view (in order), the sources read, and the findings (PoolViolations).
    `sleep` waits out the sample (a test plays the kernel's counters rising in it)."""
    results = [ProcessResult() for _ in views]
    tree, tree_source = open_cgroups(root, kc)
    sources = [tree_source]
    proc = under(root, "/proc")
    if tree is None:
        for r in results:
            r.checks = {k: Verdict(SKIPPED, "no cgroup v2 tree") for k in PROCESS_CHECKS}
        return results, sources, []
    ids = ids_from_manifests(manifests)
    links, links_source = read_container_links(root)
    sources.append(links_source)
    targets: list[_Target] = []
    for i, v in enumerate(views):
        results[i].assignment = assignment(v, cpu_checkpoint, memory_checkpoint, topology)
        key = (v.namespace, v.pod, v.container)
        cgroup, why = find_cgroup(tree, ids.get(key) or links.get(key, set()), v.identity.uid)
        results[i].cgroup = cgroup
        if cgroup is None:
            results[i].checks = {k: Verdict(UNCHECKED, why) for k in PROCESS_CHECKS}
        else:
            targets.append(_Target(i, v.namespace, v.pod, v.container, cgroup))
    if not proc.is_dir():
        sources.append(Source(f"processes {proc}", False, "not found (mount the node's /proc)"))
        for t in targets:
            results[t.index].checks = {k: Verdict(UNCHECKED, "/proc not read") for k in PROCESS_CHECKS}
        return results, sources, []
    if options.sample > 0 and targets:
        for t in targets:
            t.throttle = read_throttle(t.cgroup.path)
            t.ticks = {(task.pid, task.tid): task.cpu_ticks for pid in read_cgroup(t.cgroup.path).pids
                       for task in read_threads(proc, pid)}
        sleep(options.sample)
    pairs: list[tuple[KernelView, Assignment]] = []
    hidden = processes = threads = 0
    unreadable: dict[int, str] = {}
    for t in targets:
        view, problem, hidden_here = _read_view(t, tree, proc, options)
        results[t.index].view = view
        if problem:
            unreadable[t.index] = problem
        hidden += hidden_here
        processes += view.processes
        threads += len(view.threads)
        pairs.append((view, results[t.index].assignment))
    message = f"{processes} process(es), {threads} thread(s) in {len(targets)} container(s)"
    if hidden:
        message += (f"; {hidden} process(es) of another PID namespace read as 0 in cgroup.procs (run in the host's "
                    "PID namespace: hostPID)")
    sources.append(Source(f"processes {proc}", True, message, whole=not hidden))
    findings = enforced_set_findings(pairs)
    for t, (view, a) in zip(targets, pairs):
        # memory read from some processes only is not judged: the rest could change the share
        locality = [] if t.index in unreadable else locality_findings(view, a, max_remote=options.max_remote)
        found = thread_findings(view, a) + locality + throttling_findings(view, a)
        findings += found
        mine = [f for f in findings if f.source == f"pod/{view.namespace}/{view.pod}"
                and f.violation.container == view.container]
        results[t.index].checks = _verdicts(view, a, mine, unreadable.get(t.index))
        # the hottest during the sample, then over their lifetime
        results[t.index].hottest = sorted(view.threads, key=lambda h: (-(h.window_seconds or 0), -h.cpu_seconds,
                                                                       h.tid))[:options.hottest]
    return results, sources, _ordered(findings, pairs)


def _ordered(findings: list, pairs) -> list:
    """Findings in container order, then by rule."""
    order = {(v.namespace, v.pod, v.container): i for i, (v, _a) in enumerate(pairs)}
    return sorted(findings, key=lambda f: (order.get((f.ref.namespace, f.ref.name, f.violation.container), 0),
                                           f.rule.id))


def _read_view(t: _Target, tree: CgroupTree, proc: Path, options: ProcessOptions) -> tuple[KernelView, str, int]:
    state = read_cgroup(t.cgroup.path)
    tasks: list[TaskState] = []
    pages = NumaPages()
    problem = ""
    for pid in state.pids:
        tasks += read_threads(proc, pid)
        got = read_numa_maps(proc, pid)
        if isinstance(got, str):
            problem = problem or got
        else:
            pages = pages.plus(got)
    sampled = options.sample > 0
    # a thread born during the sample spent all its CPU time in it (a reused tid: none counted)
    threads = tuple(Thread(task.pid, task.tid, task.comm, task.cpus_allowed, task.last_cpu, task.cpu_seconds,
                           max(0, task.cpu_ticks - t.ticks.get((task.pid, task.tid), 0)) / CLOCK_TICKS
                           if sampled else None, task.mems_allowed)
                    for task in tasks)
    end = state.throttle
    throttling = None
    if end is not None:
        start = t.throttle if sampled and t.throttle is not None else end
        throttling = Throttling(state.cpu_max, end.periods, end.throttled, end.throttled_usec,
                                options.sample if sampled else 0.0, end.periods - start.periods,
                                end.throttled - start.throttled, end.throttled_usec - start.throttled_usec)
    view = KernelView(t.namespace, t.pod, t.container, t.cgroup.relative(tree), state.cpus_effective,
                      state.mems_effective, len(state.pids), threads, pages.memory, pages.hugepages, throttling)
    return view, problem, state.hidden


# ------------------------------------------------------------------------------- verdicts

def _verdicts(view: KernelView, a: Assignment, found: list, unreadable: str | None) -> dict[str, Verdict]:
    rules = {f.rule.id for f in found}

    def cited(*ids: str) -> str:
        hit = sorted(rules & set(ids))
        return f" ({', '.join(hit)})" if hit else ""

    checks: dict[str, Verdict] = {}
    sets = f"cpus {_cpus(view.cpus_effective) or '?'}, mems {_cpus(view.mems_effective) or '?'}"
    if view.cpus_effective is None:
        checks["cgroup"] = Verdict(UNCHECKED, f"no cpuset.cpus.effective in {view.cgroup} (cpuset controller "
                                              "not enabled)")
    elif rules & {"NG412", "NG413", "NG414"}:
        checks["cgroup"] = Verdict(DIFFERS, sets + cited("NG412", "NG413", "NG414"))
    elif a.cpus is None and not a.numa:
        checks["cgroup"] = Verdict(MEASURED, f"{sets}; nothing assigned to compare with")
    else:
        checks["cgroup"] = Verdict(AGREES, sets)
    if not view.threads:
        checks["threads"] = Verdict(UNCHECKED, "no process found in its cgroup" + (
            "" if view.processes else " (processes of another PID namespace, or none running)"))
    else:
        allowed = format_cpuset(frozenset().union(*(t.cpus_allowed for t in view.threads)))
        last = format_cpuset({t.last_cpu for t in view.threads})
        detail = (f"{len(view.threads)} thread(s) in {view.processes} process(es), allowed {allowed}, last ran on "
                  f"{last}" + cited("NG415", "NG416"))
        checks["threads"] = Verdict(DIFFERS if "NG415" in rules else AGREES, detail)
    total = sum(view.memory.values()) + sum(view.hugepages.values())
    spread = ", ".join(f"NUMA {n} {human_bytes(view.memory.get(n, 0) + view.hugepages.get(n, 0))}"
                       for n in sorted(set(view.memory) | set(view.hugepages)))
    if unreadable:
        checks["memoryLocality"] = Verdict(UNCHECKED, unreadable)
    elif not a.home:
        checks["memoryLocality"] = Verdict(MEASURED, f"{human_bytes(total)} resident ({spread or 'none'}); no NUMA "
                                                     "node assigned")
    else:
        _remote, _total, share = remote_share(view, a.home)
        checks["memoryLocality"] = Verdict(
            WARNS if "NG417" in rules else AGREES,
            f"{human_bytes(total)} resident ({spread or 'none'}), {share * 100:.1f}% outside NUMA "
            f"{numa_list(a.home)}" + cited("NG417"))
    t = view.throttling
    if t is None:
        checks["throttling"] = Verdict(SKIPPED, "no throttling counters in cpu.stat (cpu controller not enabled)")
    else:
        window = f" (+{t.rise_throttled} of {t.rise_periods} periods in the {t.window:g} s sample)" if t.window else ""
        detail = (f"cpu.max {t.cpu_max or '?'}; nr_throttled {t.throttled} of {t.periods} periods, "
                  f"{t.throttled_usec / 1e6:g} s throttled{window}")
        if a.exclusive:
            checks["throttling"] = Verdict(DIFFERS if "NG418" in rules else AGREES, detail + cited("NG418"))
        else:
            checks["throttling"] = Verdict(MEASURED, "shared CPUs: " + detail)
    return checks
