"""The KEP-5526 pod-scope budget on raw pod-spec dicts, and `PodAnalysis`, one pod analysed once.

With pod-level resources, PodLevelResourceManagers on, `topologyManagerScope: pod` and the
static CPU and Memory Manager policies, the kubelet reserves one "bubble" of CPUs and memory
for the whole pod. Inside it, containers that qualify get exclusive slices; everyone else runs
in the pod's shared pool. This module says, in the order a reader needs it:

* which containers qualify for an exclusive slice (`is_container_equivalent_qos_guaranteed`,
  `is_integral_cpu`) and what each gets (`ContainerPlacement`);
* the admission checks the managers run on those slices, and the `Rejection` they predict;
* the budget itself (`PodBudget`, `pod_scope_budget`) and the classic totals without
  pod-level resources (`pod_exclusive_totals`);
* `PodAnalysis`, the per-pod cache of this and of the semantics in `numaguard.lint.k8s.resources` that the
  pod rules and the NUMA simulator share.

It builds on `numaguard.lint.k8s.resources` (container lists, pod-level defaulting, QoS); every public name
here is also importable from there. Like the rest of the model it takes the raw pod spec and
never raises on malformed input.
"""
from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal
from typing import Any, Literal

# The underscored helpers are numaguard.lint.k8s.resources' internals, shared with this module only.
from numaguard.lint.k8s.resources import (
    CPU, MEMORY, QOS_RESOURCES, ContainerKind, ContainerRef, PodLevelResources, QoS,
    ResourceList, _add, _aggregate, _as_map, _max, _pod_level, _qos, computed_once,
    container_limits, container_requests, format_quantity, is_hugepages, iter_containers,
    pod_level_resources, pod_qos_class,
)

# pkg/kubelet/cm/admission: the reason a pod-scope "empty shared pool" failure carries when the
# topology policy lets the pod reach AllocatePod (best-effort / none).
EMPTY_POD_SHARED_POOL_REASON = "EmptyPodSharedPoolError"
TOPOLOGY_AFFINITY_REASON = "TopologyAffinityError"
# The message restricted/single-numa-node show (hints come back empty, the pod-scope admit
# handler fails): e2e memory_manager_test.go, quoted in kubernetes-facts.md §3.
POD_SCOPE_ADMISSION_MESSAGE = ("Pod was rejected: Pod Scope pod with pod-level resources failed "
                               "admission under pod-scope topology manager")


# --------------------------------------------------------------------------- exclusive slices

def is_integral_cpu(value: Decimal) -> bool:
    """policy_static.go isIntegralCPUAmount: Value()*1000 == MilliValue().

    Quantities are rounded up to milli-units by the API server (SetDefaults_ResourceList), so
    0.0001 is 1m; a positive whole number of CPUs is what counts here."""
    milli = (value * 1000).to_integral_value(rounding="ROUND_CEILING")
    return milli % 1000 == 0


def is_container_equivalent_qos_guaranteed(c: dict) -> bool:
    """pkg/kubelet/cm/qos IsContainerEquivalentQOSGuaranteed: cpu request non-zero and equal to
    the cpu limit, and the same for memory (requests defaulted from limits first)."""
    return _equivalent_guaranteed(container_requests(c), container_limits(c))


def _equivalent_guaranteed(requests: ResourceList, limits: ResourceList) -> bool:
    for res in QOS_RESOURCES:
        req = requests.get(res, Decimal(0))
        if req == 0 or req != limits.get(res, Decimal(0)):
            return False
    return True


def _memory_requests(requests: ResourceList) -> ResourceList:
    return {n: v for n, v in requests.items() if n == MEMORY or is_hugepages(n)}


@dataclass(frozen=True)
class ContainerPlacement:
    """What the CPU and Memory Managers give one container inside the pod's budget."""

    container: ContainerRef
    exclusive_cpus: int                 # 0: runs in the pod's shared CPU pool
    exclusive_memory: ResourceList      # empty: uses the pod's shared memory pool
    cpu_reason: str
    memory_reason: str

    @property
    def name(self) -> str:
        return self.container.name

    @property
    def kind(self) -> ContainerKind:
        return self.container.kind

    @property
    def long_running(self) -> bool:
        return self.container.kind != "init"


def _placement(c: ContainerRef, pod_guaranteed: bool) -> ContainerPlacement:
    """policy_static.go guaranteedCPUs (cpumanager) and getContainerRequestedResources
    (memorymanager) for a pod with pod-level resources and PodLevelResourceManagers on."""
    if not pod_guaranteed:
        return ContainerPlacement(c, 0, {}, "the pod is not Guaranteed",
                                  "the pod is not Guaranteed")
    if not _equivalent_guaranteed(c.requests, c.limits):
        requests = c.requests
        limits = c.limits
        if not any(r in requests or r in limits for r in QOS_RESOURCES):
            why = "it declares no cpu or memory requests/limits"
        else:
            bad = next(r for r in QOS_RESOURCES if requests.get(r, Decimal(0)) == 0
                       or requests.get(r) != limits.get(r))
            req, lim = requests.get(bad), limits.get(bad)
            if req is None and lim is None:
                why = f"it declares no {bad} request or limit"
            elif req == lim:
                why = f"its {bad} request and limit are zero"
            elif lim is None:
                why = f"it requests {format_quantity(bad, req)} {bad} but sets no {bad} limit"
            else:
                why = (f"its {bad} request ({format_quantity(bad, req)}) differs from its limit "
                       f"({format_quantity(bad, lim)})")
        return ContainerPlacement(c, 0, {}, why, why)
    cpu = c.requests.get(CPU, Decimal(0))
    memory = _memory_requests(c.requests)
    if is_integral_cpu(cpu):
        cpus, cpu_why = int(cpu), f"requests = limits and a whole {int(cpu)} CPU(s)"
    else:
        cpus, cpu_why = 0, f"its cpu request {format_quantity(CPU, cpu)} is not a whole number of CPUs"
    return ContainerPlacement(c, cpus, memory, cpu_why, "requests = limits for cpu and memory")


# --------------------------------------------------------------------------- admission checks

@dataclass(frozen=True)
class Rejection:
    """A kubelet admission failure the pod-scope check predicts."""

    manager: Literal["cpu", "memory"]
    resource: str
    message: str                        # the kubelet's "pod rejected, ..." text
    container: str | None = None


def _check_budget(placements: list[ContainerPlacement], total: Decimal, amount, exclusive,
                  manager: Literal["cpu", "memory"], resource: str) -> Rejection | None:
    """policy_static.go validatePodScopeResources (cpumanager and memorymanager), in container
    order: an exclusive standard init container must fit in the budget minus the exclusive
    sidecars started before it; a shared standard init container needs something left; and if
    any long-running container (app or sidecar) shares, the long-running exclusive slices must
    leave part of the budget free. `exclusive(p)` says whether the manager gives the container
    a slice at all, `amount(p)` how much of `resource` it takes."""
    long_running = Decimal(0)
    has_shared_long_running = False
    for p in placements:
        if p.kind == "init":
            if exclusive(p):
                own = amount(p)
                pool = total - long_running
                if own > pool:
                    if manager == "cpu":
                        msg = (f"pod rejected, largest exclusive init container requests {int(own)} "
                               f"cpus, but only {int(pool)} available")
                    else:
                        msg = (f"pod rejected, largest exclusive init container requests {int(own)} "
                               f"of {resource}, but only {int(pool)} available")
                    return Rejection(manager, resource, msg, p.name)
            elif long_running >= total:
                msg = ("pod rejected, pod has shared init containers but no cpus available for them"
                       if manager == "cpu" else
                       f"pod rejected, pod has shared init containers but no {resource} available "
                       "for them")
                return Rejection(manager, resource, msg, p.name)
            continue
        if not exclusive(p):
            has_shared_long_running = True
        else:
            long_running += amount(p)
    if has_shared_long_running and long_running >= total:
        msg = ("pod rejected, sum of exclusive container cpu requests equals pod budget, leaving "
               "no cpus for shared containers" if manager == "cpu" else
               f"pod rejected, sum of exclusive container {resource} requests equals pod budget, "
               "leaving no memory for shared containers")
        return Rejection(manager, resource, msg)
    return None


# --------------------------------------------------------------------------- the pod's budget

@dataclass
class PodBudget:
    """The KEP-5526 pod-scope view of a pod: its budget, who gets exclusive slices, what is
    left for the pod's shared pool, and whether the kubelet would reject it."""

    qos: QoS
    managed: bool                       # pod-level resources set and Guaranteed
    cpus: int                           # the CPU bubble (0: fractional CPU, no bubble)
    cpu_request: Decimal | None         # pod-level requests.cpu after defaulting
    memory: ResourceList                # the memory bubble: memory + hugepages-* requests
    placements: list[ContainerPlacement]
    rejections: list[Rejection]

    @property
    def exclusive_cpus_long_running(self) -> int:
        return sum(p.exclusive_cpus for p in self.placements if p.long_running)

    @property
    def shared_pool_cpus(self) -> int:
        """CPUs of the bubble left for the pod's shared pool once app containers and sidecars
        hold their exclusive CPUs (0 when there is no bubble)."""
        return max(self.cpus - self.exclusive_cpus_long_running, 0)

    @property
    def shared_pool_memory(self) -> ResourceList:
        used: ResourceList = {}
        for p in self.placements:
            if p.long_running:
                _add(used, p.exclusive_memory)
        return {n: max(v - used.get(n, Decimal(0)), Decimal(0)) for n, v in self.memory.items()}

    @property
    def shared_containers(self) -> list[ContainerPlacement]:
        return [p for p in self.placements if p.exclusive_cpus == 0 or not p.exclusive_memory]


def pod_scope_budget(spec: Any) -> PodBudget:
    """The pod-scope allocation KEP-5526 makes for this pod (PodLevelResourceManagers on,
    `topologyManagerScope: pod`, static CPU and Memory Manager policies).

    cpumanager/policy_static.go podGuaranteedCPUs: the CPU bubble is the pod-level cpu request
    when the pod is Guaranteed and the request is whole, else 0 (no bubble; everyone shares).
    memorymanager/policy_static.go getPodRequestedResources: the memory bubble is the pod-level
    memory and hugepages-* requests. Container slices: IsContainerEquivalentQOSGuaranteed, and a
    whole CPU count for a CPU slice.
    """
    containers = list(iter_containers(spec))
    plr = _pod_level(spec, containers)
    return _budget(plr, _qos(plr, containers, True), containers)


def _budget(plr: PodLevelResources, qos: QoS, containers: list[ContainerRef]) -> PodBudget:
    managed = plr.is_set and qos.guaranteed
    placements = [_placement(c, managed) for c in containers]
    cpu_request = plr.requests.get(CPU)
    cpus = int(cpu_request) if managed and cpu_request is not None and is_integral_cpu(cpu_request) \
        and cpu_request > 0 else 0
    memory = {n: v for n, v in plr.requests.items() if n == MEMORY or is_hugepages(n)} \
        if managed else {}
    rejections: list[Rejection] = []
    if managed and cpus > 0:
        r = _check_budget(placements, Decimal(cpus), lambda p: Decimal(p.exclusive_cpus),
                          lambda p: p.exclusive_cpus > 0, "cpu", CPU)
        if r:
            rejections.append(r)
    if managed:
        for name in sorted(memory):
            r = _check_budget(placements, memory[name],
                              lambda p, n=name: p.exclusive_memory.get(n, Decimal(0)),
                              lambda p: bool(p.exclusive_memory), "memory", name)
            if r:
                rejections.append(r)
                break           # the memory manager stops at the first failing resource
    return PodBudget(qos, managed, cpus, cpu_request, memory, placements, rejections)


def exclusive_cpu_containers(spec: Any) -> dict[str, int]:
    """Container name -> exclusive CPUs inside the pod's budget (only those that get some)."""
    return {p.name: p.exclusive_cpus for p in pod_scope_budget(spec).placements
            if p.exclusive_cpus > 0}


def pod_exclusive_totals(spec: Any) -> tuple[int, ResourceList]:
    """How many exclusive CPUs and bytes the managers reserve for the whole pod.

    With pod-level resources: the bubble. Without (classic): policy_static.go podGuaranteedCPUs
    and the memory manager's pod totals, max(largest init + sidecars before it, app + sidecars),
    counting only Guaranteed pods and whole-CPU containers."""
    plr = pod_level_resources(spec)
    if plr.is_set:
        b = pod_scope_budget(spec)
        return b.cpus, dict(b.memory)
    if not pod_qos_class(spec).guaranteed:
        return 0, {}
    init_cpu = Decimal(0)
    sidecar_cpu = Decimal(0)
    app_cpu = Decimal(0)
    init_mem: ResourceList = {}
    sidecar_mem: ResourceList = {}
    app_mem: ResourceList = {}
    for c in iter_containers(spec):
        cpu = c.requests.get(CPU, Decimal(0))
        cpu = cpu if is_integral_cpu(cpu) else Decimal(0)
        mem = _memory_requests(c.requests)
        if c.kind == "sidecar":
            sidecar_cpu += cpu
            _add(sidecar_mem, mem)
        elif c.kind == "init":
            init_cpu = max(init_cpu, sidecar_cpu + cpu)
            running = dict(mem)
            _add(running, sidecar_mem)
            _max(init_mem, running)
        else:
            app_cpu += cpu
            _add(app_mem, mem)
    long_mem = dict(app_mem)
    _add(long_mem, sidecar_mem)
    _max(long_mem, init_mem)
    return int(max(init_cpu, app_cpu + sidecar_cpu)), long_mem


# --------------------------------------------------------------------------- one pod, analysed once

class PodAnalysis:
    """The model of `numaguard.lint.k8s.resources` and this module for one pod spec, each part computed
    once on first use.

    The pod rules ask many questions of the same pod; this parses its containers once and
    derives the pod-level resources, QoS, aggregates and budget from that."""

    def __init__(self, spec: Any) -> None:
        self.spec = _as_map(spec)

    @computed_once
    def containers(self) -> list[ContainerRef]:
        return list(iter_containers(self.spec))

    @computed_once
    def pod_level(self) -> PodLevelResources:
        return _pod_level(self.spec, self.containers, self.aggregate)

    @computed_once
    def qos(self) -> QoS:
        return _qos(self.pod_level, self.containers, True)

    @computed_once
    def aggregate_requests(self) -> ResourceList:
        return _aggregate(self.containers, "requests")

    @computed_once
    def aggregate_limits(self) -> ResourceList:
        return _aggregate(self.containers, "limits")

    def aggregate(self, which: str) -> ResourceList:
        """`aggregate_requests` or `aggregate_limits` by name (what `_pod_level` asks for)."""
        return self.aggregate_requests if which == "requests" else self.aggregate_limits

    @computed_once
    def budget(self) -> PodBudget:
        return _budget(self.pod_level, self.qos, self.containers)
