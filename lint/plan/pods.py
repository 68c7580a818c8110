"""What the scheduler reads of a pod, computed once per pod template (`PodShape`).

Requests as each plugin counts them:

* `requests`: NodeResourcesFit's filter and BalancedAllocation (component-helpers
  resource/helpers.go PodRequests: pod-level requests where set, else the sidecar-aware
  aggregate of the containers, plus spec.overhead); cpu in millicores, memory and hugepages in
  bytes, device-plugin resources in counts.
* `non_zero`: what LeastAllocated scores with (resource_allocation.go
  calculatePodResourceRequest with NonMissingContainerRequests, and NodeInfo's NonZeroRequested,
  pkg/scheduler/framework/types.go getNonMissingContainerRequests): a container that requests no
  cpu (memory) counts 100m (200Mi) unless the pod-level requests set it
  (pkg/scheduler/util/pod_resources.go DefaultMilliCPURequest, DefaultMemoryRequest).
* `nrt_requests`/`nrt_containers`: what the scheduler-plugins NodeResourceTopologyMatch plugin
  reads (kubernetes-sigs/scheduler-plugins@903da7d pkg/util/resource.go GetPodEffectiveRequest:
  the app containers' requests summed, the largest init container's, overhead added; pod-level
  resources are not read, nor are sidecars counted as running beside the app containers), and
  per container for the container scope (init containers first, filter.go).

Labels, namespace, tolerations, nodeSelector, node affinity and pod (anti-)affinity are kept as
written (`numaguard.lint.plan.taints`, `.node_affinity`, `.pod_affinity` read them).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from decimal import ROUND_CEILING, Decimal
from typing import Any, Mapping

from numaguard.lint.k8s.pod_budget import PodAnalysis
from numaguard.lint.k8s.resources import ContainerRef, _aggregate, _as_list, _as_map, is_hugepages

DEFAULT_MILLI_CPU_REQUEST = 100                 # pkg/scheduler/util/pod_resources.go
DEFAULT_MEMORY_REQUEST = 200 * 1024 * 1024
CPU, MEMORY = "cpu", "memory"


def to_int(resource: str, value: Decimal) -> int:
    """A quantity as the scheduler's Resource holds it: cpu in millicores (MilliValue), the
    rest as Value(); both round up, as resource.Quantity does."""
    scaled = value * 1000 if resource == CPU else value
    return int(scaled.to_integral_value(rounding=ROUND_CEILING))


def _int_list(values: Mapping[str, Decimal], *, only_scheduled: bool = True) -> dict[str, int]:
    return {name: to_int(name, v) for name, v in values.items()
            if not only_scheduled or name in (CPU, MEMORY) or is_scalar(name)}


def is_scalar(name: str) -> bool:
    """pkg/scheduler/util IsScalarResourceName: extended (device plugin) resources, hugepages
    and attachable volumes; cpu, memory, pods and ephemeral-storage are not."""
    if is_hugepages(name):
        return True
    return "/" in name and not name.split("/", 1)[0].endswith("kubernetes.io")


@dataclass(frozen=True)
class PodShape:
    """One pod template as the scheduler sees it (see the module docstring)."""

    requests: dict[str, int]
    non_zero: tuple[int, int]                  # (cpu millicores, memory bytes)
    qos: str                                   # Guaranteed, Burstable, BestEffort
    nrt_requests: dict[str, int]
    nrt_containers: tuple[tuple[bool, dict[str, int]], ...]   # (init container?, its requests)
    namespace: str
    labels: dict[str, str]
    node_selector: dict[str, str]
    affinity: dict
    tolerations: tuple[dict, ...]
    pod_level: bool = False                    # spec.resources sets cpu or memory
    spec: dict = field(default_factory=dict, compare=False, repr=False)
    analysis: Any = field(default=None, compare=False, repr=False)   # the kubelet's PodAnalysis

    @property
    def nrt_reads_whole_pod(self) -> bool:
        """Does the NodeResourceTopologyMatch plugin see what the kubelet will pin? Not for a
        pod whose pod-level requests exceed what its containers request (GetPodEffectiveRequest
        reads containers only)."""
        if not self.pod_level:
            return True
        return all(self.nrt_requests.get(r, 0) >= self.requests.get(r, 0) for r in (CPU, MEMORY))


def pod_shape(spec: Mapping, *, namespace: str | None = None, labels: Mapping | None = None) -> PodShape:
    """The PodShape of a pod spec (a template's `spec`), with its pod's namespace and labels."""
    spec = dict(spec) if isinstance(spec, Mapping) else {}
    analysis = PodAnalysis(spec)
    overhead = _int_list(_quantities(spec.get("overhead")))
    requests = _int_list(analysis.aggregate_requests)
    pod_level = analysis.pod_level
    for res in (CPU, MEMORY):
        if pod_level.is_set and res in pod_level.requests:
            requests[res] = to_int(res, pod_level.requests[res])
    requests = _plus(requests, overhead)
    non_zero = _non_zero(analysis, overhead)
    return PodShape(
        requests={k: v for k, v in requests.items() if v},
        non_zero=non_zero,
        qos=analysis.qos.qos_class,
        nrt_requests=_plus(_effective_request(analysis.containers), overhead),
        nrt_containers=tuple((c.kind != "app", _int_list(c.requests, only_scheduled=False))
                             for c in analysis.containers),
        namespace=namespace or "default",
        labels={str(k): str(v) for k, v in _as_map(labels).items()},
        node_selector={str(k): str(v) for k, v in _as_map(spec.get("nodeSelector")).items()},
        affinity=_as_map(spec.get("affinity")),
        tolerations=tuple(t for t in _as_list(spec.get("tolerations")) if isinstance(t, dict)),
        pod_level=bool(pod_level.is_set),
        spec=spec,
        analysis=analysis,
    )


def _quantities(raw: Any) -> dict[str, Decimal]:
    from numaguard.lint.k8s.quantity import parse_quantity
    out = {}
    for name, value in _as_map(raw).items():
        try:
            out[str(name)] = parse_quantity(value)
        except ValueError:
            continue
    return out


def _plus(a: dict[str, int], b: dict[str, int]) -> dict[str, int]:
    out = dict(a)
    for k, v in b.items():
        out[k] = out.get(k, 0) + v
    return out


def _non_zero(analysis: PodAnalysis, overhead: dict[str, int]) -> tuple[int, int]:
    """PodRequests with NonMissingContainerRequests: the default stands in for a container's
    missing cpu or memory request (an explicit 0 stays 0) unless the pod-level requests set it."""
    defaults = {CPU: Decimal(DEFAULT_MILLI_CPU_REQUEST) / 1000, MEMORY: Decimal(DEFAULT_MEMORY_REQUEST)}
    pod_level = analysis.pod_level
    filled = []
    for c in analysis.containers:
        requests = dict(c.requests)
        for res, value in defaults.items():
            requests.setdefault(res, value)
        filled.append(ContainerRef(c.name, c.kind, c.field, c.index, c.raw, c.declared_requests,
                                   c.limits, requests))
    aggregate = _aggregate(filled, "requests")
    out = []
    for res in (CPU, MEMORY):
        if pod_level.is_set and res in pod_level.requests:
            value = to_int(res, pod_level.requests[res])
        else:
            value = to_int(res, aggregate.get(res, Decimal(0)))
        out.append(value + overhead.get(res, 0))
    return out[0], out[1]


def _effective_request(containers: list[ContainerRef]) -> dict[str, int]:
    """scheduler-plugins pkg/util/resource.go GetPodEffectiveRequest: the larger of the app
    containers' sum and the largest init container (any init container, sidecar or not)."""
    apps: dict[str, int] = {}
    inits: dict[str, int] = {}
    for c in containers:
        own = _int_list(c.requests, only_scheduled=False)
        if c.kind == "app":
            apps = _plus(apps, own)
        else:
            for name, value in own.items():
                inits[name] = max(inits.get(name, 0), value)
    for name, value in inits.items():
        apps[name] = max(apps.get(name, 0), value)
    return apps


__all__ = ["PodShape", "pod_shape", "to_int", "is_scalar", "DEFAULT_MILLI_CPU_REQUEST",
           "DEFAULT_MEMORY_REQUEST"]
