"""NG402, NG403, NG406-NG409, NG419-NG422: the CPU and Memory Managers' checkpoint files on a
node, whether the kubelet restarts with them (`numaguard.lint.rules.restart`), and where the
kubelet's PodResources API says its containers run.

The checkpoint is what the kubelet remembers of its placements across restarts; reading it
is how to "compare the CPU Manager checkpoint with the CPUs visible to each container".
`numaguard.lint.k8s.checkpoints` reads the files as the kubelet does (versions, checksums);
the rules here judge what they say against the node's KubeletConfiguration and, when known,
its topology and the pods that still exist.

In a lint run (`CHECKPOINT_CHECK`, a run check) a checkpoint is judged against the
configuration of its pool (the pool whose `kubeletConfigs` globs, or `lint --pool NAME=DIR`,
name its file): the pool's node description's KubeletConfiguration, else the pool's own
configurations when they agree on the policies and reserved CPUs. A checkpoint of no pool is
judged against the default node description's, else every pool-tier configuration of the run
when they agree. A checkpoint file that is not JSON is NG406.

Library API (no I/O; parsed objects in, findings out):

    from numaguard.lint.rules.node import CheckpointExtract, checkpoint_findings

    cp = CheckpointExtract.of("node-a:/var/lib/kubelet/cpu_manager_state", json.loads(text))
    for pv in checkpoint_findings([cp], kubelet_config=kc, topology=node.topology,
                                  pod_uids={"3f1c...", ...}):
        print(pv.source, pv.rule.id, pv.violation.path, pv.violation.message)

`kubelet_config` gives the configured policies, reservations and gates (None: NG402 and the
start-up checks NG408, NG419-NG422 are skipped); `topology` (a
`numaguard.lint.numa.topology.Topology`) gives the node's CPUs and their NUMA nodes (None: the
reserved CPUs are known only from reservedSystemCPUs, the CPU coverage and NUMA-span checks are
skipped); `machine` (`numaguard.lint.numa.restart.MemoryMachine`, read from the node's /sys by
`node inspect`) is what NG420 compares the recorded totals with (None: only the reservations);
`pod_uids` is the set of pods that exist on the node (None: NG407 is skipped).
`CheckpointExtract.of(..., version=(1, 36))` reads a file as that kubelet minor version does
(numaguard.lint.k8s.checkpoints), `checkpoint_findings(..., version=...)` takes its gates' defaults.

`reserved_cpu_findings(containers, kubelet_config=kc)` is NG409 over what the PodResources
API reports (`RunningContainer`s: from `numaguard node inspect`, or `podresources_containers`
over a saved `List` answer that `numaguard lint` reads next to the node's configuration).
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Iterable

# The checkpoint reader only when a checkpoint appears (every document is asked whether it is
# one), the kubelet model (numaguard.lint.k8s.kubelet) where a configuration is judged.
from numaguard.lint.k8s.checkpoint_files import CURRENT, Version, checkpoint_kind
from numaguard.lint.k8s.cpuset import CPUSetError, format_cpuset
from numaguard.lint.model import ObjectRef, Path, Severity, Violation, items
from numaguard.lint.rules.base import LintContext, Place, Rule, RunCheck, Subject
from numaguard.lint.rules.pool import PoolViolation
from numaguard.lint.rules.restart import MEMORY_INCONSISTENT as CHECKPOINT_MEMORY
from numaguard.lint.rules.restart import (CPU_STATE_REFUSED, MEMORY_MACHINE_CHANGED, MEMORY_STATE_REFUSED,
                                          REJECTED_AT_RESTART, RESTART_PREDICTION, readmission_rejections,
                                          state_refusals)

if TYPE_CHECKING:
    from numaguard.lint.k8s.checkpoints import CPUCheckpoint, MemoryCheckpoint

CHECKPOINT_POLICY = Rule(
    id="NG402", name="checkpoint-policy-mismatch", severity=Severity.ERROR, target="run",
    title="A CPU or Memory Manager checkpoint records a policy other than the configured one",
    rationale="At start-up the kubelet restores cpu_manager_state and memory_manager_state and "
              "stops when the policy recorded there differs from its configuration: \"could not "
              "restore state from checkpoint: configured policy \\\"static\\\" differs from state "
              "checkpoint policy \\\"none\\\", please drain this node and delete the CPU manager "
              "checkpoint file\" (state_checkpoint.go). Changing the policy in place leaves the node NotReady.",
    remediation="Follow the policy-change procedure: drain the node, stop the kubelet, delete "
                "/var/lib/kubelet/cpu_manager_state (and memory_manager_state), start the kubelet "
                "with the new configuration, uncordon.")

CHECKPOINT_PLACEMENT = Rule(
    id="NG403", name="checkpoint-placement", severity=Severity.WARNING, target="run",
    title="The checkpoint gives two pods the same exclusive CPUs, or a pod's pod-level CPUs are also in the shared pool",
    rationale="Exclusive CPUs are taken from the shared pool minus the reserved CPUs, never twice. The static policy "
              "does not check this when it starts (validateState compares only the containers' entries with "
              "defaultCpuSet, and the total with the machine's CPUs), so the kubelet starts and runs both pods on "
              "the same CPUs: a placement the managers never make (a file edited, or written by a kubelet with a "
              "bug). What the kubelet refuses at start is NG419.",
    remediation="Drain the node and let the kubelet place the pods again: stop it, move the checkpoint file aside, "
                "start it, uncordon.")

CHECKPOINT_CORRUPT = Rule(
    id="NG406", name="checkpoint-corrupt", severity=Severity.ERROR, target="run",
    title="A checkpoint file the kubelet cannot restore (bad JSON, checksum mismatch, a version it does not "
          "read), or restores without its pod-level entries",
    rationale="The kubelet refuses to start when cpu_manager_state or memory_manager_state does not "
              "load: JSON it cannot parse, a checksum that does not match the content (\"checkpoint "
              "is corrupted\"), or a version it no longer reads (a V1 CPU checkpoint from 1.37 on). "
              "It reads a file as the newest version it can, falling back to older ones that ignore "
              "the fields they lack: a file whose podEntries only an older version accepts (a "
              "checksum of 0) is restored without them, so the pods' pod-level CPUs or memory are "
              "forgotten and the static policy may then refuse to start.",
    remediation="Drain the node, stop the kubelet, delete the named checkpoint file, start the kubelet.")

CHECKPOINT_STALE = Rule(
    id="NG407", name="checkpoint-stale-entry", severity=Severity.WARNING, target="run",
    title="The checkpoint holds CPUs or memory for a pod that no longer exists (needs the node's pod list)",
    rationale="The managers release a pod's exclusive CPUs and memory when it is removed "
              "(RemoveContainer, the reconcile loop). An entry for a pod that is gone keeps "
              "capacity out of the shared pool and out of reach of new pods, which then fail "
              "admission on a node that looks free.",
    remediation="Check the kubelet log for failed container removals; restarting the kubelet "
                "runs the stale-state cleanup (removeStaleState).")

RESERVED_CPU_CONTAINER = Rule(
    id="NG409", name="container-on-reserved-cpus", severity=Severity.ERROR, target="node",
    title="A running container holds exclusive CPUs among the node's reservedSystemCPUs (PodResources API)",
    rationale="The static CPU Manager hands out exclusive CPUs from the shared pool minus the reserved "
              "CPUs (policy_static.go, GetAvailableCPUs), so reservedSystemCPUs stay with the system "
              "daemons and the kubelet. A container the kubelet's PodResources API lists on a reserved "
              "CPU shares it with them: its latency guarantee does not hold and the reservation does not "
              "protect the system. It happens when reservedSystemCPUs changed under running pods without "
              "a drain, or when cpu_manager_state was edited.",
    remediation="Drain the node, stop the kubelet, delete cpu_manager_state and start it, so the pods are "
                "placed again outside the reserved CPUs; change reservedSystemCPUs only on a drained node.")

@dataclass(frozen=True)
class CheckpointExtract:
    """One checkpoint file, read: its source, kind ("cpu" or "memory"), what the kubelet
    restores from it, where its fields sit, and its suppressions."""

    source: str
    kind: str
    checkpoint: CPUCheckpoint | MemoryCheckpoint
    positions: dict[Path, tuple[int, int]] = field(default_factory=dict)
    ignores: frozenset[str] = frozenset()
    place: Place | None = None                # in a lint run: where the file was
    pools: tuple[str, ...] = ()               # in a lint run: the pools naming its file

    @classmethod
    def of(cls, source: str, data: Any, kind: str | None = None, positions=None,
           ignores: frozenset[str] = frozenset(), version: Version = CURRENT) -> "CheckpointExtract | None":
        """`version`: the kubelet minor version that reads the file (how it reads it)."""
        from numaguard.lint.k8s.checkpoints import read_cpu_checkpoint, read_memory_checkpoint

        kind = kind or checkpoint_kind(data, source)
        if kind == "cpu":
            return cls(source, kind, read_cpu_checkpoint(data, version), dict(positions or {}), ignores)
        if kind == "memory":
            return cls(source, kind, read_memory_checkpoint(data, version), dict(positions or {}), ignores)
        return None

    @classmethod
    def unreadable(cls, source: str, kind: str, message: str) -> "CheckpointExtract":
        """A checkpoint file that is not JSON: the kubelet cannot restore it (NG406)."""
        from numaguard.lint.k8s.checkpoints import CheckpointError, CPUCheckpoint, MemoryCheckpoint

        error = CheckpointError((), f"not JSON: {message}")
        checkpoint = CPUCheckpoint("unknown", "", frozenset(), error=error) if kind == "cpu" else \
            MemoryCheckpoint("unknown", "", error=error)
        return cls(source, kind, checkpoint)


def _v(cp: CheckpointExtract, rule: Rule, path: Path, message: str, remediation: str | None = None) -> PoolViolation:
    return PoolViolation(rule, cp.source, Violation(path=path, message=message, remediation=remediation),
                         ObjectRef(None, "CPUManagerCheckpoint" if cp.kind == "cpu" else "MemoryManagerCheckpoint",
                                   None, None), cp.ignores, cp.place)


def checkpoint_findings(checkpoints: Iterable[CheckpointExtract], *, kubelet_config: dict | None = None,
                        topology: Any = None, pod_uids: set[str] | None = None, machine: Any = None,
                        version: Version = CURRENT) -> list[PoolViolation]:
    """Every checkpoint finding for the checkpoints of one node (see the module docstring).
    `machine`: the Memory Manager's view of the node itself (`numaguard.lint.numa.restart.
    MemoryMachine`, read from its /sys), which NG420 compares; `version`: the kubelet's
    (its feature gates' defaults)."""
    out: list[PoolViolation] = []
    for cp in checkpoints:
        c = cp.checkpoint
        if c.error is not None:
            out.append(_v(cp, CHECKPOINT_CORRUPT, c.error.path,
                          f"the kubelet cannot restore this {cp.kind} checkpoint: {c.error.message}",
                          c.error.remediation))
            continue
        if c.dropped_pods:
            out.append(_dropped(cp, c))
        if cp.kind == "cpu":
            out += _cpu_findings(cp, c, kubelet_config, pod_uids)
        else:
            out += _memory_findings(cp, c, kubelet_config, pod_uids)
        restart = state_refusals(cp.kind, c, kubelet_config=kubelet_config, topology=topology, machine=machine,
                                 version=version)
        restart += readmission_rejections(cp.kind, c, kubelet_config=kubelet_config, topology=topology)
        out += [_v(cp, rule, path, message, fix) for rule, path, message, fix in restart]
    return out


_DROPPED_FIX = ("Drain the node, stop the kubelet, delete the named checkpoint file, start the kubelet. "
                "A kubelet writes podEntries with a real checksum (or inside `data`): a checksum of 0 "
                "next to them means the file was edited or written by another tool.")


def _dropped(cp: CheckpointExtract, c: CPUCheckpoint | MemoryCheckpoint) -> PoolViolation:
    """NG406 for `podEntries` the kubelet reads past: their version refuses the checksum (0,
    typically), an older one (CPU V2, memory V1) accepts it and has no podEntries field."""
    older, newer = ("V2", "V3") if cp.kind == "cpu" else ("V1", "V2")
    uids = sorted(c.dropped_pods)
    if cp.kind == "cpu":
        held = ", ".join(f"{u} ({format_cpuset(c.dropped_pods[u]) or '?'})" for u in uids)
        what = f"the pod-level CPU sets of {len(uids)} pod(s): {held}"
    else:
        held = ", ".join(f"{u} ({len(c.dropped_pods[u])} block(s))" for u in uids)
        what = f"the pod-level memory blocks of {len(uids)} pod(s): {held}"
    message = (f"the kubelet restores this file as a {older} {cp.kind} checkpoint ({newer}, which has podEntries, "
               f"refuses its checksum; {older} accepts it, 0 included) and drops {what}")
    if cp.kind == "cpu" and c.policy == "static":
        known = set(c.default_cpus).union(*(cpus for by_c in c.containers.values() for cpus in by_c.values()))
        lost = frozenset().union(*c.dropped_pods.values()) - known
        if lost:
            message += (f"; CPUs {format_cpuset(lost)} are then neither in defaultCpuSet nor in a container's "
                        "entry and the static policy refuses to start (\"current set of available CPUs ... "
                        "doesn't match with CPUs in state ...\")")
    return _v(cp, CHECKPOINT_CORRUPT, c.field_root + ("podEntries",), message, _DROPPED_FIX)


@dataclass(frozen=True)
class RunningContainer:
    """A container the kubelet's PodResources API lists, with the exclusive CPUs it holds;
    `source` and `path` say where it was read (a file and its field, or `pod/NS/NAME`)."""

    pod: str                       # namespace/name
    container: str
    cpus: frozenset[int]
    source: str
    path: Path = ("cpuIds",)
    place: Place | None = None     # in a lint run: where the answer was


def podresources_containers(source: str, data: Any) -> list[RunningContainer] | None:
    """The containers of a saved `ListPodResourcesResponse` in protobuf's JSON mapping (what
    `grpcurl ... v1.PodResourcesLister/List` prints: `podResources`, `cpuIds` as strings), or
    None when `data` is not one."""
    if not isinstance(data, dict) or "kind" in data or not isinstance(data.get("podResources"), list):
        return None
    out = []
    for i, pod in enumerate(data["podResources"]):
        if not isinstance(pod, dict):
            continue
        label = f"{pod.get('namespace') or 'default'}/{pod.get('name')}"
        for j, c in enumerate(items(pod.get("containers"))):
            if isinstance(c, dict):
                cpus = frozenset(int(x) for x in items(c.get("cpuIds")) if str(x).isdigit())
                out.append(RunningContainer(label, str(c.get("name")), cpus, source,
                                            ("podResources", i, "containers", j, "cpuIds")))
    return out


def reserved_cpu_findings(containers: Iterable[RunningContainer], *, kubelet_config: dict | None) -> list[PoolViolation]:
    """NG409: each running container holding CPUs of the configuration's reservedSystemCPUs.
    No configuration, or none reserved by id: nothing to judge."""
    from numaguard.lint.k8s import kubelet as k

    if kubelet_config is None:
        return []
    try:
        reserved = k.reserved_system_cpus(kubelet_config) or frozenset()
    except CPUSetError:
        return []
    out = []
    for c in containers:
        on = c.cpus & reserved
        if on:
            namespace, _, name = c.pod.partition("/")
            out.append(PoolViolation(RESERVED_CPU_CONTAINER, c.source, Violation(
                path=c.path, container=c.container,
                message=f"container {c.container} of pod {c.pod} holds CPUs {format_cpuset(on)} of reservedSystemCPUs "
                        f"{format_cpuset(reserved)} (its exclusive CPUs: {format_cpuset(c.cpus)})"),
                ObjectRef(None, "Pod", namespace, name), frozenset(), c.place))
    return out


def _policy(cp: CheckpointExtract, recorded: str, configured: str, manager: str, prefix: str) -> list[PoolViolation]:
    if recorded == configured:
        return []
    return [_v(cp, CHECKPOINT_POLICY, cp.checkpoint.field_root + ("policyName",),
               f'{prefix}configured policy "{configured}" differs from state checkpoint policy "{recorded}": '
               f"the kubelet will not start with this {manager} checkpoint")]


def _stale(cp: CheckpointExtract, pods: Iterable[str], pod_uids: set[str] | None, key: str) -> list[PoolViolation]:
    if pod_uids is None:
        return []
    root = cp.checkpoint.field_root
    return [_v(cp, CHECKPOINT_STALE, root + (key, uid),
               f"{key} holds an assignment for pod {uid}, which is not among the {len(pod_uids)} pods of the node")
            for uid in sorted(set(pods)) if uid not in pod_uids]


def _cpu_findings(cp: CheckpointExtract, c: CPUCheckpoint, kc: dict | None,
                  pod_uids: set[str] | None) -> list[PoolViolation]:
    """NG402, NG407, and NG403 for what the static policy tolerates at start: exclusive CPUs
    held by two pods, and pod-level CPUs also in the shared pool (validateState compares only
    the containers' entries with defaultCpuSet; those overlaps are NG419)."""
    from numaguard.lint.k8s import kubelet as k

    out: list[PoolViolation] = []
    root = c.field_root
    if kc is not None:
        out += _policy(cp, c.policy, k.cpu_manager_policy(kc)[0], "CPU Manager", "")
    holders: list[tuple[str, Path, str, frozenset[int]]] = []     # (pod, path, label, cpus)
    for pod, cpus in sorted(c.pods.items()):
        holders.append((pod, root + ("podEntries", pod), f"pod {pod}", cpus))
        shared = cpus & c.default_cpus
        if shared and c.policy == "static":
            out.append(_v(cp, CHECKPOINT_PLACEMENT, root + ("podEntries", pod),
                          f"pod {pod} holds pod-level CPUs {format_cpuset(shared)} that are also in the shared pool "
                          f"(defaultCpuSet {format_cpuset(c.default_cpus)}); the kubelet starts with this, and "
                          "other pods' shared containers run there"))
    for pod, containers in sorted(c.containers.items()):
        for name, cpus in sorted(containers.items()):
            holders.append((pod, root + ("entries", pod, name), f"container {name} of pod {pod}", cpus))
    seen: dict[int, str] = {}
    for pod, path, label, cpus in holders:
        clashes: dict[str, set[int]] = {}
        for cpu in sorted(cpus):
            owner = seen.get(cpu)
            if owner is not None and owner != pod:
                clashes.setdefault(owner, set()).add(cpu)
        for owner, clash in sorted(clashes.items()):
            out.append(_v(cp, CHECKPOINT_PLACEMENT, path,
                          f"{label} holds CPUs {format_cpuset(clash)} that pod {owner} holds too; the kubelet starts "
                          "with this and both run there"))
        for cpu in cpus:
            seen.setdefault(cpu, pod)
    out += _stale(cp, set(c.pods) | set(c.containers), pod_uids, "entries")
    return out


def _memory_findings(cp: CheckpointExtract, c: MemoryCheckpoint, kc: dict | None,
                     pod_uids: set[str] | None) -> list[PoolViolation]:
    from numaguard.lint.k8s import kubelet as k

    out: list[PoolViolation] = []
    if kc is not None:
        out += _policy(cp, c.policy, k.memory_manager_policy(kc)[0], "Memory Manager", "[memorymanager] ")
    out += _stale(cp, set(c.pods) | set(c.containers), pod_uids, "entries")
    return out


# ------------------------------------------------------------------------------- the run check

@dataclass(frozen=True)
class _Policies:
    """A pool-tier kubelet configuration of the run, for judging checkpoints against."""

    pools: tuple[str, ...]
    key: tuple
    config: dict


def _policies(kc: dict) -> tuple:
    """The settings a checkpoint is judged by, effective (defaults applied)."""
    from numaguard.lint.k8s import kubelet as k

    try:
        reserved = k.reserved_system_cpus(kc)
    except CPUSetError:
        reserved = kc.get("reservedSystemCPUs")
    return k.cpu_manager_policy(kc)[0], k.memory_manager_policy(kc)[0], reserved


@dataclass(frozen=True)
class _Running:
    """The containers of a saved PodResources answer, and the pools naming its file."""

    containers: tuple[RunningContainer, ...]
    pools: tuple[str, ...]


def _collect(subject: Subject, ctx: LintContext) -> CheckpointExtract | _Running | _Policies | str | None:
    """A checkpoint file (NG406 when it is not JSON), a saved PodResources answer (NG409), a
    pool-tier kubelet configuration, or a Pod's uid (the pods that exist, for NG407)."""
    if subject.kind == "unreadable":
        kind = checkpoint_kind(None, subject.file)
        if kind is None:
            return None
        return replace(CheckpointExtract.unreadable(subject.label, kind, str(subject.data)),
                       place=subject.place(), pools=subject.pools)
    if subject.kind == "kubelet":
        if not subject.in_pool:
            return None
        return _Policies(subject.pools, _policies(subject.data), subject.data)
    data = subject.data
    running = podresources_containers(subject.label, data)
    if running is not None:            # a saved PodResources List answer (NG409)
        at = subject.position_of or (lambda path: None)
        place = Place(subject.file, subject.line, subject.prefix,
                      {c.path: pos for c in running if (pos := at(c.path)) is not None})
        return _Running(tuple(replace(c, place=place) for c in running), subject.pools)
    kind = checkpoint_kind(data, subject.file)
    if kind is not None:
        place = subject.place()
        extract = CheckpointExtract.of(subject.label, data, kind, positions=place.positions,
                                       ignores=subject.ignores, version=ctx.kubernetes_version)
        return replace(extract, place=place, pools=subject.pools)
    if isinstance(data, dict) and data.get("kind") == "Pod" and isinstance(data.get("metadata"), dict):
        uid = data["metadata"].get("uid")
        if isinstance(uid, str) and uid:
            return uid
    return None


def _judge(extracts: list, ctx: LintContext) -> list[PoolViolation]:
    checkpoints = [e for e in extracts if isinstance(e, CheckpointExtract)]
    answers = [e for e in extracts if isinstance(e, _Running)]
    if not checkpoints and not answers:
        return []
    configs = [e for e in extracts if isinstance(e, _Policies)]
    pod_uids = {e for e in extracts if isinstance(e, str)} or None

    def node_of(pools: tuple[str, ...]) -> tuple[LintContext, dict | None]:
        """The context and configuration of a file of these pools (of none: the run's)."""
        pool = next((p for p in map(ctx.pool_context, pools) if p is not None), ctx)
        mine = [c for c in configs if set(c.pools) & set(pools)] if pools else configs
        return pool, _configured(pool, mine)

    out: list[PoolViolation] = []
    for cp in checkpoints:
        pool, kubelet_config = node_of(cp.pools)
        out += checkpoint_findings([cp], kubelet_config=kubelet_config, topology=getattr(pool.node, "topology", None),
                                   pod_uids=pod_uids, version=ctx.kubernetes_version)
    for answer in answers:
        out += reserved_cpu_findings(answer.containers, kubelet_config=node_of(answer.pools)[1])
    return out


def _configured(ctx: LintContext, configs: list[_Policies]) -> dict | None:
    """The configuration a checkpoint is judged against: the node description's, else the
    given configurations when they agree on the managers' policies and reserved CPUs (the
    first one's Topology Manager policy then decides the NUMA-span check)."""
    kc = getattr(ctx.node, "kubelet_config", None) if ctx.node is not None else None
    if isinstance(kc, dict):
        return kc
    if isinstance(ctx.kubelet_config, dict):
        return ctx.kubelet_config
    if configs and len({c.key for c in configs}) == 1:
        return configs[0].config
    return None


# The rules above are judged by this one check.
CHECKPOINT_CHECK = RunCheck("checkpoint", _collect, _judge)
CHECKPOINT_POLICY = replace(CHECKPOINT_POLICY, run=CHECKPOINT_CHECK)
CHECKPOINT_PLACEMENT = replace(CHECKPOINT_PLACEMENT, run=CHECKPOINT_CHECK)
CHECKPOINT_CORRUPT = replace(CHECKPOINT_CORRUPT, run=CHECKPOINT_CHECK)
CHECKPOINT_STALE = replace(CHECKPOINT_STALE, run=CHECKPOINT_CHECK)
CHECKPOINT_MEMORY = replace(CHECKPOINT_MEMORY, run=CHECKPOINT_CHECK)
CPU_STATE_REFUSED = replace(CPU_STATE_REFUSED, run=CHECKPOINT_CHECK)
MEMORY_MACHINE_CHANGED = replace(MEMORY_MACHINE_CHANGED, run=CHECKPOINT_CHECK)
MEMORY_STATE_REFUSED = replace(MEMORY_STATE_REFUSED, run=CHECKPOINT_CHECK)
REJECTED_AT_RESTART = replace(REJECTED_AT_RESTART, run=CHECKPOINT_CHECK)
RESERVED_CPU_CONTAINER = replace(RESERVED_CPU_CONTAINER, run=CHECKPOINT_CHECK)   # `node inspect` calls it too
RULES = (CHECKPOINT_POLICY, CHECKPOINT_PLACEMENT, CHECKPOINT_CORRUPT, CHECKPOINT_STALE, CHECKPOINT_MEMORY,
         RESERVED_CPU_CONTAINER, CPU_STATE_REFUSED, MEMORY_MACHINE_CHANGED, MEMORY_STATE_REFUSED, REJECTED_AT_RESTART,
         RESTART_PREDICTION)     # NG423: `node inspect` emits it (numaguard.lint.node.restart)
