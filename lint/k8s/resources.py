"""Kubernetes pod resource semantics on raw pod-spec dicts: effective requests and limits per
container, the sidecar-aware aggregate, pod-level defaulting and QoS.

Each function mirrors one piece of Kubernetes and names the file it follows; the behaviour is
re-implemented here in our own words (nothing is copied). Everything takes the raw pod spec (a
dict as parsed from YAML) and never raises on malformed input: values that are not mappings,
lists or quantities are ignored. Malformed specs are reported separately by
`pod_schema_violations` (NG002), and the engine skips the pod rules for them.

Container order matters (init containers run in order; sidecars count from the point they
start), so containers are walked in the order they are declared.

Two neighbours complete the pod resource model:

* `numaguard.lint.k8s.pod_budget` builds on this module: the KEP-5526 pod-scope budget (which containers get
  exclusive slices, the kubelet's rejection checks, `PodBudget`) and `PodAnalysis`, the per-pod
  cache of all of it;
* `numaguard.lint.k8s.pod_schema`: `pod_schema_violations`, the NG002 type checks of a pod spec.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from decimal import Decimal
from functools import partial
from typing import Any, Callable, Iterator, Literal

from numaguard.lint.model import Path
from numaguard.lint.k8s.quantity import format_bytes, format_cpu, parse_quantity

ResourceList = dict[str, Decimal]

CPU = "cpu"
MEMORY = "memory"
HUGEPAGES_PREFIX = "hugepages-"
QOS_RESOURCES = (CPU, MEMORY)          # pkg/apis/core/v1/helper/qos/qos.go supportedQoSComputeResources

GUARANTEED = "Guaranteed"
BURSTABLE = "Burstable"
BEST_EFFORT = "BestEffort"

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
