"""Kubernetes pod resource semantics on raw pod-spec dicts: effective requests and limits,
the sidecar-aware aggregate, pod-level defaulting, QoS, and the KEP-5526 pod-scope budget.

Each function mirrors one piece of Kubernetes and names the file it follows; the behaviour is
re-implemented here in our own words (nothing is copied). Everything takes the raw pod spec (a
dict as parsed from YAML) and never raises on malformed input: values that are not mappings,
lists or quantities are ignored. Malformed specs are reported separately by
`pod_schema_violations` (NG002), and the engine skips the pod rules for them.

Container order matters (init containers run in order; sidecars count from the point they
start), so containers are walked in the order they are declared.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from decimal import Decimal
from functools import partial
from typing import Any, Callable, Iterator, Literal

from lint.model import Path, Violation
from lint.quantity import format_bytes, format_cpu, parse_quantity

ResourceList = dict[str, Decimal]

CPU = "cpu"
MEMORY = "memory"
HUGEPAGES_PREFIX = "hugepages-"
QOS_RESOURCES = (CPU, MEMORY)          # pkg/apis/core/v1/helper/qos/qos.go supportedQoSComputeResources

GUARANTEED = "Guaranteed"
BURSTABLE = "Burstable"
BEST_EFFORT = "BestEffort"

# pkg/kubelet/cm/admission: the reason a pod-scope "empty shared pool" failure carries when the
# topology policy lets the pod reach AllocatePod (best-effort / none).
EMPTY_POD_SHARED_POOL_REASON = "EmptyPodSharedPoolError"
TOPOLOGY_AFFINITY_REASON = "TopologyAffinityError"
# The message restricted/single-numa-node show (hints come back empty, the pod-scope admit
# handler fails): e2e memory_manager_test.go, quoted in kubernetes-facts.md §3.
POD_SCOPE_ADMISSION_MESSAGE = ("Pod was rejected: Pod Scope pod with pod-level resources failed "
                               "admission under pod-scope topology manager")

ContainerKind = Literal["init", "sidecar", "app"]


# --------------------------------------------------------------------------- basics

class computed_once:
    """`functools.cached_property` without its lock: Python 3.11 takes one lock, shared by
    every instance, on each first access, which is a noticeable part of analysing a pod. The
    objects here are built and read by one thread. Like cached_property, the value is stored
    in the instance's `__dict__`, which then answers every later access directly."""

    def __init__(self, compute: Any) -> None:
        self.compute = compute
        self.name = compute.__name__
        self.__doc__ = compute.__doc__

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = name

    def __get__(self, instance: Any, owner: type | None = None) -> Any:
        if instance is None:
            return self
        value = instance.__dict__[self.name] = self.compute(instance)
        return value


def _as_map(value: Any) -> dict:
    return value if isinstance(value, dict) else {}


def _as_list(value: Any) -> list:
    return value if isinstance(value, list) else []


def _resource_list(raw: Any) -> ResourceList:
    """A ResourceList from a raw mapping, silently dropping entries that do not parse."""
    out: ResourceList = {}
    for name, value in _as_map(raw).items():
        if not isinstance(name, str):
            continue
        try:
            out[name] = parse_quantity(value)
        except ValueError:
            continue
    return out


def is_hugepages(name: str) -> bool:
    return name.startswith(HUGEPAGES_PREFIX)


def is_supported_pod_level_resource(name: str) -> bool:
    """component-helpers resource/helpers.go IsSupportedPodLevelResource: cpu, memory, hugepages-*."""
    return name in (CPU, MEMORY) or is_hugepages(name)


def is_overcommit_allowed(name: str) -> bool:
    """pkg/apis/core/v1/helper IsOvercommitAllowed: native resources except hugepages.

    Native = no domain prefix, or one under kubernetes.io (e.g. `cpu`, `ephemeral-storage`)."""
    native = "/" not in name or name.split("/", 1)[0].endswith("kubernetes.io")
    return native and not is_hugepages(name)


_KIND_LABELS = {"init": "init container", "sidecar": "sidecar", "app": "container"}


@dataclass(frozen=True)
class ContainerRef:
    """One container of the pod with where it sits in the spec, and its resources parsed once
    (`requests` after the request-from-limit defaulting)."""

    name: str
    kind: ContainerKind
    field: str              # "containers" or "initContainers"
    index: int
    raw: dict
    declared_requests: ResourceList
    limits: ResourceList
    requests: ResourceList

    @property
    def path(self) -> Path:
        return (self.field, self.index)

    @property
    def label(self) -> str:
        return f"{_KIND_LABELS[self.kind]} '{self.name}'"


def is_restartable_init_container(container: dict) -> bool:
    """component-helpers resource/helpers.go isRestartableInitContainer: restartPolicy Always."""
    return isinstance(container, dict) and container.get("restartPolicy") == "Always"


def iter_containers(spec: Any, *, init: bool = True, app: bool = True) -> Iterator[ContainerRef]:
    """Init containers (and sidecars) first, in order, then app containers, as the kubelet does.
    Ephemeral containers cannot declare resources and are not part of any of this."""
    spec = _as_map(spec)
    groups = (("initContainers", init), ("containers", app))
    for field_name, wanted in groups:
        if not wanted:
            continue
        for i, c in enumerate(_as_list(spec.get(field_name))):
            if not isinstance(c, dict):
                continue
            name = c.get("name")
            if not isinstance(name, str):
                name = f"#{i}"
            if field_name == "containers":
                kind: ContainerKind = "app"
            else:
                kind = "sidecar" if is_restartable_init_container(c) else "init"
            resources = _as_map(c.get("resources"))
            declared = _resource_list(resources.get("requests"))
            limits = _resource_list(resources.get("limits"))
            requests = dict(declared)       # container_requests: a missing request takes the limit
            for res, limit in limits.items():
                requests.setdefault(res, limit)
            yield ContainerRef(name, kind, field_name, i, c, declared, limits, requests)


def declared_container_requests(c: dict) -> ResourceList:
    return _resource_list(_as_map(_as_map(c).get("resources")).get("requests"))


def container_limits(c: dict) -> ResourceList:
    return _resource_list(_as_map(_as_map(c).get("resources")).get("limits"))


def container_requests(c: dict) -> ResourceList:
    """Requests after defaulting: a missing request takes the container's limit.

    pkg/apis/core/v1/defaults.go SetDefaults_Pod (the container loop)."""
    requests = declared_container_requests(c)
    for name, limit in container_limits(c).items():
        requests.setdefault(name, limit)
    return requests


def _add(total: ResourceList, other: ResourceList) -> None:
    for name, value in other.items():
        total[name] = total.get(name, Decimal(0)) + value


def _max(total: ResourceList, other: ResourceList) -> None:
    for name, value in other.items():
        if name not in total or value > total[name]:
            total[name] = value


def _aggregate(containers: list[ContainerRef], which: str) -> ResourceList:
    """component-helpers resource/helpers.go aggregateContainerResourcesByFn (KEP-753):
    max( Σ app + Σ sidecars, max_i(init_i + Σ sidecars declared before i) ).
    Only resources some container declares appear in the result."""
    result: ResourceList = {}
    for c in containers:
        if c.kind == "app":
            _add(result, getattr(c, which))
    sidecars: ResourceList = {}
    init_peak: ResourceList = {}
    for c in containers:
        if c.kind == "app":
            continue
        own = getattr(c, which)
        if c.kind == "sidecar":
            _add(result, own)
            _add(sidecars, own)
            _max(init_peak, sidecars)
        else:
            running = dict(own)
            _add(running, sidecars)
            _max(init_peak, running)
    _max(result, init_peak)
    return result


def aggregate_container_requests(spec: Any) -> ResourceList:
    """component-helpers resource/helpers.go AggregateContainerRequests (requests defaulted
    from limits first, as the API server has done by the time it validates)."""
    return _aggregate(list(iter_containers(spec)), "requests")


def aggregate_container_limits(spec: Any) -> ResourceList:
    """component-helpers resource/helpers.go AggregateContainerLimits."""
    return _aggregate(list(iter_containers(spec)), "limits")


def all_containers_have_limit(containers: list[ContainerRef], name: str) -> bool:
    """component-helpers AllContainersHaveLimitForResource (init, sidecar and app containers)."""
    return bool(containers) and all(name in c.limits for c in containers)


# --------------------------------------------------------------------------- pod-level defaulting

@dataclass(frozen=True)
class Defaulted:
    """A pod-level value the API server fills in, and where it comes from."""

    field: Literal["requests", "limits"]
    resource: str
    value: Decimal
    source: Literal["containers", "pod-limit"]
    # For source "containers": the containers that declare the resource and what each
    # contributes (after their own request-from-limit defaulting).
    contributors: tuple[tuple[str, Decimal], ...] = ()

    def explain(self) -> str:
        if self.source == "pod-limit":
            return f"defaulted from the pod-level limits.{self.resource}"
        what = "requests" if self.field == "requests" else "limits"
        parts = ", ".join(f"'{n}' {what}.{self.resource}={format_quantity(self.resource, v)}"
                          for n, v in self.contributors)
        return f"defaulted from the containers' aggregate {what}.{self.resource} ({parts})"


@dataclass
class PodLevelResources:
    """Pod-level resources after the API server's defaulting (PodLevelResources gate on).

    `declared_*` are what the manifest says; `requests`/`limits` are after defaulting;
    `defaulted` tells, for every value the API server filled in, where it came from.
    Unpack as `requests, limits = pod_level_resources(spec)`.
    """

    present: bool                       # spec.resources is a mapping (even an empty one)
    declared_requests: ResourceList
    declared_limits: ResourceList
    requests: ResourceList
    limits: ResourceList
    defaulted: dict[tuple[str, str], Defaulted] = field(default_factory=dict)

    def __iter__(self):
        return iter((self.requests, self.limits))

    @computed_once
    def is_set(self) -> bool:
        """component-helpers IsPodLevelResourcesSet: a supported resource is requested or limited."""
        return any(is_supported_pod_level_resource(n)
                   for n in (*self.declared_requests, *self.declared_limits))

    @property
    def is_empty(self) -> bool:
        """`resources: {}`, `{requests: {}}` or `{limits: {}}`: present but saying nothing."""
        return self.present and not self.declared_requests and not self.declared_limits

    def origin(self, field_name: str, resource: str) -> Defaulted | None:
        return self.defaulted.get((field_name, resource))


def _declared_names(raw: Any) -> set[str]:
    return {k for k in _as_map(raw) if isinstance(k, str)}


def pod_level_resources(spec: Any) -> PodLevelResources:
    """Pod-level requests and limits as the API server stores them.

    pkg/apis/core/v1/defaults.go SetDefaults_Pod runs, after container defaulting and only with
    the PodLevelResources gate on: defaultHugePagePodLimits, defaultPodRequests, defaultPodLimits
    (the last is the PodLevelResourcesFixDefaulting behaviour, on by default in 1.37).
    """
    return _pod_level(spec, list(iter_containers(spec)))


def _pod_level(spec: Any, containers: list[ContainerRef],
               aggregate: Callable[[str], ResourceList] | None = None) -> PodLevelResources:
    """`pod_level_resources` for parsed containers; `aggregate(which)` gives the containers'
    aggregate "requests" or "limits" (computed here when not given)."""
    if aggregate is None:
        aggregate = partial(_aggregate, containers)
    raw = _as_map(spec).get("resources")
    present = isinstance(raw, dict)
    raw = _as_map(raw)
    declared_requests = _resource_list(raw.get("requests"))
    declared_limits = _resource_list(raw.get("limits"))
    # Key presence counts even for values that do not parse (the schema check reports those).
    request_keys = _declared_names(raw.get("requests"))
    limit_keys = _declared_names(raw.get("limits"))
    requests = dict(declared_requests)
    limits = dict(declared_limits)
    defaulted: dict[tuple[str, str], Defaulted] = {}
    result = PodLevelResources(present, declared_requests, declared_limits, requests, limits, defaulted)
    if not present:
        return result

    def contributors(which: str, name: str) -> tuple[tuple[str, Decimal], ...]:
        return tuple((c.name, getattr(c, which)[name]) for c in containers
                     if name in getattr(c, which))

    # defaultHugePagePodLimits: only when pod-level resources are partly specified.
    if request_keys or limit_keys:
        for name, value in aggregate("limits").items():
            if not is_hugepages(name) or name in request_keys or name in limit_keys:
                continue
            limits[name] = value
            limit_keys = limit_keys | {name}
            defaulted[("limits", name)] = Defaulted("limits", name, value, "containers",
                                                    contributors("limits", name))

    # defaultPodRequests: only when pod-level limits are non-empty.
    if limit_keys:
        for name, value in aggregate("requests").items():
            if name in request_keys or not is_supported_pod_level_resource(name):
                continue
            if not is_overcommit_allowed(name):
                continue
            # The trap: a container request (not the pod limit) becomes the pod request.
            requests[name] = value
            request_keys = request_keys | {name}
            defaulted[("requests", name)] = Defaulted("requests", name, value, "containers",
                                                      contributors("requests", name))
        for name in list(limit_keys):
            if name in request_keys or not is_supported_pod_level_resource(name):
                continue
            if name in limits:
                requests[name] = limits[name]
                defaulted[("requests", name)] = Defaulted("requests", name, limits[name], "pod-limit")
            request_keys = request_keys | {name}

    # defaultPodLimits: pod-level requests set, no pod-level limits at all; cpu/memory limit
    # := aggregate container limits, only when every container has that limit.
    supported_requests = any(is_supported_pod_level_resource(n) for n in request_keys)
    supported_limits = any(is_supported_pod_level_resource(n) for n in limit_keys)
    if supported_requests and not supported_limits:
        for name, value in aggregate("limits").items():
            if name in limit_keys or not is_supported_pod_level_resource(name):
                continue
            if not is_overcommit_allowed(name) or not all_containers_have_limit(containers, name):
                continue
            limits[name] = value
            defaulted[("limits", name)] = Defaulted("limits", name, value, "containers",
                                                    contributors("limits", name))
    return result


# --------------------------------------------------------------------------- QoS

@dataclass(frozen=True)
class QoS:
    """A pod's QoS class and, when it is not Guaranteed, the first thing that broke it."""

    qos_class: str
    reason: str
    pod_level: bool                     # decided by spec.resources, containers ignored
    resource: str | None = None
    container: str | None = None
    path: Path | None = None            # the field to change, relative to the pod spec

    @property
    def guaranteed(self) -> bool:
        return self.qos_class == GUARANTEED


def format_quantity(resource: str, value: Decimal | None) -> str:
    """A quantity as people write it: cpu as "4"/"1500m", the rest with binary suffixes."""
    if value is None:
        return "unset"
    if resource == CPU:
        return format_cpu(value)
    return format_bytes(value)


def _resource_qos(requests: ResourceList, limits: ResourceList,
                  any_declared: bool) -> tuple[str, str | None, str]:
    """pkg/apis/core/v1/helper/qos/qos.go resourceQOS for one set of requirements.

    Returns (class, offending resource, reason)."""
    if not any_declared:
        return BEST_EFFORT, None, "no requests or limits"
    qos: str | None = None
    first: str | None = None
    for res in QOS_RESOURCES:
        req = requests.get(res, Decimal(0))
        lim = limits.get(res, Decimal(0))
        if req != lim:
            if res not in limits:
                why = f"requests.{res} is {format_quantity(res, req)} but limits.{res} is not set"
            elif res not in requests:
                why = f"limits.{res} is {format_quantity(res, lim)} but requests.{res} is not set"
            else:
                why = f"requests.{res} ({format_quantity(res, req)}) differs from limits.{res} ({format_quantity(res, lim)})"
            return BURSTABLE, res, why
        best_effort = req == 0
        this = BEST_EFFORT if best_effort else GUARANTEED
        if qos is None:
            qos, first = this, res
        elif qos != this:
            missing = res if best_effort else first
            present = first if best_effort else res
            return BURSTABLE, missing, (f"{present} is set but {missing} has no (or a zero) "
                                        "request and limit")
    if qos == GUARANTEED:
        return GUARANTEED, None, "requests equal limits for cpu and memory"
    return BEST_EFFORT, None, "no cpu or memory requests or limits"


def pod_qos_class(spec: Any, pod_level_enabled: bool = True, qos_fix: bool = True) -> QoS:
    """The pod's QoS class after API defaulting.

    pkg/apis/core/v1/helper/qos/qos.go ComputePodQOS: with PodLevelResources on and pod-level
    resources present, only `spec.resources` decides. With PodLevelResourcesFixKubeletQOSClass
    (`qos_fix`, on by default in 1.37) an empty `spec.resources` (`{}`, `{requests: {}}`,
    `{limits: {}}`) no longer counts as present; before the fix it made the pod BestEffort.
    """
    containers = list(iter_containers(spec))
    plr = _pod_level(spec, containers) if pod_level_enabled else None
    return _qos(plr, containers, qos_fix)


def _qos(plr: PodLevelResources | None, containers: list[ContainerRef], qos_fix: bool) -> QoS:
    if plr is not None:
        decides = plr.present and (not qos_fix or not plr.is_empty)
        if decides:
            cls, res, why = _resource_qos(plr.requests, plr.limits,
                                          bool(plr.requests or plr.limits))
            path = None
            if res is not None:
                path = ("resources", "limits" if res not in plr.limits else "requests", res)
                origin = plr.origin("requests", res)
                if origin is not None and origin.source == "containers":
                    why += (f"; pod-level requests.{res} was {origin.explain()}, not from the pod "
                            f"limit")
            if cls == BEST_EFFORT:
                why = "resources set no cpu or memory requests or limits"
            return QoS(cls, f"pod-level {why}", True, res, None, path)
    # Classic: every init and app container (ephemeral containers cannot set resources).
    pod_class: str | None = None
    first_name: str | None = None
    for c in containers:
        requests = c.requests
        limits = c.limits
        declared = bool(requests or limits)
        cls, res, why = _resource_qos(requests, limits, declared)
        if cls == BURSTABLE:
            field_name = "limits" if res not in limits else "requests"
            return QoS(BURSTABLE, f"{c.label}: {why}", False, res, c.name,
                       (*c.path, "resources", field_name, res))
        if pod_class is None:
            pod_class, first_name = cls, c.name
        elif pod_class != cls:
            be = c.name if cls == BEST_EFFORT else first_name
            g = first_name if cls == BEST_EFFORT else c.name
            return QoS(BURSTABLE, f"container '{g}' is Guaranteed but container '{be}' sets no "
                                  "cpu or memory", False, None, be, None)
    if pod_class is None:
        return QoS(BEST_EFFORT, "no containers", False)
    if pod_class == BEST_EFFORT:
        return QoS(BEST_EFFORT, "no container sets cpu or memory requests or limits", False)
    return QoS(GUARANTEED, "every container has cpu and memory requests equal to limits", False)


# --------------------------------------------------------------------------- pod-scope budget

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


@dataclass(frozen=True)
class Rejection:
    """A kubelet admission failure the pod-scope check predicts."""

    manager: Literal["cpu", "memory"]
    resource: str
    message: str                        # the kubelet's "pod rejected, ..." text
    container: str | None = None


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
    """Everything above for one pod spec, each part computed once on first use.

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


# --------------------------------------------------------------------------- NG002 schema check

_CONTAINER_LISTS = ("containers", "initContainers", "ephemeralContainers")
_STRING_FIELDS = ("name", "image", "restartPolicy", "imagePullPolicy")
_STRING_LIST_FIELDS = ("command", "args")


def _type_name(value: Any) -> str:
    if value is None:
        return "null"
    return {dict: "a mapping", list: "a list", str: "a string", bool: "a boolean",
            int: "a number", float: "a number"}.get(type(value), type(value).__name__)


def _check_resource_list(raw: Any, path: Path, out: list[Violation], container: str | None) -> None:
    if raw is None:
        return
    if not isinstance(raw, dict):
        out.append(Violation(path, f"{'.'.join(map(str, path))} must be a mapping of resource "
                                   f"names to quantities, found {_type_name(raw)}", container))
        return
    for name, value in raw.items():
        if not isinstance(name, str):
            out.append(Violation(path, f"resource name {name!r} must be a string", container))
            continue
        try:
            q = parse_quantity(value)
        except ValueError as e:
            where = (*path, name)
            out.append(Violation(where, f"{'.'.join(map(str, where))}: {e}", container))
            continue
        if q < 0:
            where = (*path, name)
            out.append(Violation(where, f"{'.'.join(map(str, where))}: {value!r} must be "
                                        "non-negative", container))


def _check_requirements(raw: Any, path: Path, out: list[Violation], container: str | None) -> None:
    if raw is None:
        return
    if not isinstance(raw, dict):
        out.append(Violation(path, f"{'.'.join(map(str, path))} must be a mapping with requests "
                                   f"and limits, found {_type_name(raw)}", container))
        return
    _check_resource_list(raw.get("requests"), (*path, "requests"), out, container)
    _check_resource_list(raw.get("limits"), (*path, "limits"), out, container)
    claims = raw.get("claims")
    if claims is not None and not isinstance(claims, list):
        out.append(Violation((*path, "claims"), "resources.claims must be a list", container))


def _check_container(c: Any, path: Path, out: list[Violation]) -> None:
    if not isinstance(c, dict):
        out.append(Violation(path, f"{'.'.join(map(str, path))} must be a mapping (a container), "
                                   f"found {_type_name(c)}"))
        return
    name = c.get("name")
    label = name if isinstance(name, str) else None
    for key in _STRING_FIELDS:
        v = c.get(key)
        if v is not None and not isinstance(v, str):
            out.append(Violation((*path, key), f"{key} must be a string, found {_type_name(v)}",
                                 label))
    for key in _STRING_LIST_FIELDS:
        v = c.get(key)
        if v is not None and (not isinstance(v, list) or not all(isinstance(x, str) for x in v)):
            out.append(Violation((*path, key), f"{key} must be a list of strings", label))
    _check_requirements(c.get("resources"), (*path, "resources"), out, label)
    resize = c.get("resizePolicy")
    if resize is not None and (not isinstance(resize, list)
                               or not all(isinstance(x, dict) for x in resize)):
        out.append(Violation((*path, "resizePolicy"), "resizePolicy must be a list of mappings",
                             label))


def pod_schema_violations(spec: Any) -> list[Violation]:
    """NG002 for a pod spec: the type errors the API server would reject before anything else.

    Hand-written and cheap (it runs for every pod): container lists and containers, resource
    requirements and quantities (parse, non-negative, not absurd), and the scheduling fields
    the pod rules read (nodeSelector, tolerations, affinity, os). Paths are relative to the
    pod spec. An empty list means the other pod rules can trust the spec's shape.
    """
    if not isinstance(spec, dict):
        return [Violation((), f"the pod spec must be a mapping, found {_type_name(spec)}")]
    out: list[Violation] = []
    if spec.get("containers") is None:
        out.append(Violation((), "spec.containers is required (a pod needs at least one container)"))
    for key in _CONTAINER_LISTS:
        containers = spec.get(key)
        if containers is None:
            continue
        if not isinstance(containers, list):
            out.append(Violation((key,), f"{key} must be a list of containers, found "
                                         f"{_type_name(containers)}"))
            continue
        for i, c in enumerate(containers):
            _check_container(c, (key, i), out)
    _check_requirements(spec.get("resources"), ("resources",), out, None)
    selector = spec.get("nodeSelector")
    if selector is not None and (not isinstance(selector, dict) or not all(
            isinstance(k, str) and isinstance(v, str) for k, v in selector.items())):
        out.append(Violation(("nodeSelector",), "nodeSelector must map label names to string "
                                                "values (quote values like \"true\" or \"1\")"))
    tolerations = spec.get("tolerations")
    if tolerations is not None:
        if not isinstance(tolerations, list):
            out.append(Violation(("tolerations",), "tolerations must be a list"))
        else:
            for i, t in enumerate(tolerations):
                if not isinstance(t, dict):
                    out.append(Violation(("tolerations", i), "a toleration must be a mapping"))
                    continue
                for key in ("key", "operator", "value", "effect"):
                    v = t.get(key)
                    if v is not None and not isinstance(v, str):
                        out.append(Violation(("tolerations", i, key),
                                             f"toleration {key} must be a string, found "
                                             f"{_type_name(v)} (quote it)"))
    affinity = spec.get("affinity")
    if affinity is not None and not isinstance(affinity, dict):
        out.append(Violation(("affinity",), "affinity must be a mapping"))
    os_ = spec.get("os")
    if os_ is not None and (not isinstance(os_, dict) or not isinstance(os_.get("name", ""), str)):
        out.append(Violation(("os",), "os must be a mapping with a string name (linux or windows)"))
    return out
