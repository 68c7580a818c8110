"""NG1xx: pods and pod templates, checked against pod-level resource managers (KEP-5526).

Each rule is one small function over a `PodTarget` (the raw pod spec) and the `LintContext`;
the Kubernetes semantics (defaulting, aggregate, QoS, the pod-scope budget) live in
`numaguard.lint.k8s.resources`. Paths in violations are relative to the pod spec. The engine calls
`pod_schema_violations` (NG002) first and `pod_scope` second, and runs these rules only for
well-formed, in-scope pods.
"""
from __future__ import annotations

import re
from decimal import Decimal
from typing import Any, Iterable, Literal

from numaguard.lint.model import Path, Violation
from numaguard.lint.k8s.quantity import parse_quantity
from numaguard.lint.k8s.pod_budget import (
    EMPTY_POD_SHARED_POOL_REASON, POD_SCOPE_ADMISSION_MESSAGE, TOPOLOGY_AFFINITY_REASON,
    ContainerPlacement, PodAnalysis, PodBudget, is_integral_cpu,
)
from numaguard.lint.k8s.resources import CPU, MEMORY, format_quantity, is_hugepages, is_supported_pod_level_resource
from numaguard.lint.objects import PodTarget
from numaguard.lint.rules.base import LintContext, rule

SCOPE_ANNOTATION = "numaguard.io/scope"

# Images that only hold a place: the pod can be placed, but nothing runs that would show how
# the CPUs and memory perform. Matched on the repository (registry host included, tag and
# digest ignored).
PLACEHOLDER_IMAGES = frozenset({
    "registry.k8s.io/pause",
    "k8s.gcr.io/pause",
    "gcr.io/google_containers/pause",
    "gcr.io/google-containers/pause",
    "registry.k8s.io/e2e-test-images/agnhost",     # e2e helper, usually run as "pause"
    "pause",
    "docker.io/library/pause",
    "rancher/mirrored-pause",
    "docker.io/rancher/mirrored-pause",
})
# General-purpose base images count as placeholders only when their command just waits.
IDLE_BASE_IMAGES = frozenset({"busybox", "alpine", "ubuntu", "debian", "registry.k8s.io/busybox"})
_IDLE_COMMAND = re.compile(r"^(sleep\s+(infinity|inf|\d+[smhd]?)|tail\s+-f\s+/dev/null)$")

ScopeDecision = Literal["managed", "unmanaged", "out"]


# --------------------------------------------------------------------------- helpers

def _map(value: Any) -> dict:
    return value if isinstance(value, dict) else {}


def _list(value: Any) -> list:
    return value if isinstance(value, list) else []


def _existing(spec: dict, path: Path) -> Path:
    """The longest prefix of `path` that exists in the spec (so a finding points at a real
    line); at least the first element, e.g. ("resources",) when spec.resources is missing."""
    node: Any = spec
    for depth, key in enumerate(path):
        if isinstance(node, dict) and key in node:
            node = node[key]
        elif isinstance(node, list) and isinstance(key, int) and 0 <= key < len(node):
            node = node[key]
        else:
            return tuple(path[:max(depth, 1)])
    return tuple(path)


def _q(resource: str, value: Decimal | None) -> str:
    return format_quantity(resource, value)


def _dotted(path: Path) -> str:
    out = ""
    for p in path:
        out += f"[{p}]" if isinstance(p, int) else (f".{p}" if out else p)
    return out


def analyse(pod: PodTarget) -> PodAnalysis:
    return pod.analysis


# --------------------------------------------------------------------------- scope

def _selects_pool(spec: dict, labels: dict[str, str]) -> Path | None:
    """Where the pod selects the pool's nodes: a nodeSelector entry, or a required node
    affinity term with an In/Exists expression on a pool label."""
    if not labels:
        return None
    selector = _map(spec.get("nodeSelector"))
    for key, value in labels.items():
        if selector.get(key) == value:
            return ("nodeSelector", key)
    required = _map(_map(_map(spec.get("affinity")).get("nodeAffinity"))
                    .get("requiredDuringSchedulingIgnoredDuringExecution"))
    for t, term in enumerate(_list(required.get("nodeSelectorTerms"))):
        for e, expr in enumerate(_list(_map(term).get("matchExpressions"))):
            expr = _map(expr)
            key = expr.get("key")
            if key not in labels:
                continue
            op = expr.get("operator")
            if op == "Exists" or (op == "In" and labels[key] in _list(expr.get("values"))):
                return ("affinity", "nodeAffinity", "requiredDuringSchedulingIgnoredDuringExecution",
                        "nodeSelectorTerms", t, "matchExpressions", e)
    return None


def _tolerates_pool(spec: dict, taint: dict[str, str] | None) -> Path | None:
    """Where the pod tolerates the pool's taint by name (core/v1 Toleration.ToleratesTaint).

    A blanket toleration (`operator: Exists` with no key) tolerates every taint; it does not
    single out the pool, so it is not counted as targeting it."""
    if not taint:
        return None
    for i, t in enumerate(_list(spec.get("tolerations"))):
        t = _map(t)
        if t.get("key") != taint.get("key"):
            continue
        effect = t.get("effect")
        if effect and effect != taint.get("effect"):
            continue
        op = t.get("operator") or "Equal"
        if op == "Exists" or (op == "Equal" and (t.get("value") or "") == (taint.get("value") or "")):
            return ("tolerations", i)
    return None


def pod_scope(pod: PodTarget, ctx: LintContext) -> ScopeDecision:
    """Whether the pod rules apply to this pod (rules.md "in scope").

    The opt-out annotation wins over everything; then the opt-in annotation, `scope: all`,
    declared pod-level resources, and targeting the pool (node labels or its taint)."""
    scope = pod.annotations.get(SCOPE_ANNOTATION) if isinstance(pod.annotations, dict) else None
    if scope == "unmanaged":
        return "unmanaged"
    if scope == "managed" or ctx.scope_all:
        return "managed"
    spec = _map(pod.spec)
    resources = _map(spec.get("resources"))
    if _map(resources.get("requests")) or _map(resources.get("limits")):
        return "managed"
    if _selects_pool(spec, ctx.pool.node_labels) or _tolerates_pool(spec, ctx.pool.taint):
        return "managed"
    return "out"


# --------------------------------------------------------------------------- NG101

@rule(id="NG101", name="pod-resources-missing", severity="error", target="pod",
      title="An in-scope pod has no pod-level spec.resources",
      rationale="""Without pod-level requests and limits the pod-scope Topology, CPU and Memory
      Managers do not treat the pod as one unit: there is no pod budget to align on one NUMA
      node, and each container is handled on its own. An empty `resources: {}` (or empty
      requests/limits) no longer affects QoS either (PodLevelResourcesFixKubeletQOSClass).""",
      remediation="""Add spec.resources with requests equal to limits for cpu (a whole number)
      and memory, sized to cover every container.""")
def pod_resources_missing(pod: PodTarget, ctx: LintContext) -> Iterable[Violation]:
    plr = analyse(pod).pod_level
    if plr.is_set:
        return
    if plr.is_empty:
        yield Violation(("resources",), "spec.resources is empty: it sets no requests or limits, "
                        "so it neither makes a pod budget nor affects the QoS class; set "
                        "requests and limits for cpu and memory")
    elif plr.present:
        names = ", ".join(sorted({*plr.declared_requests, *plr.declared_limits})) or "nothing"
        yield Violation(("resources",), f"spec.resources sets no cpu, memory or hugepages "
                        f"(only {names}), so the pod has no pod-level budget")
    else:
        cpus, memory = _container_totals(analyse(pod).aggregate_requests)
        hint = "; add spec.resources with requests equal to limits for cpu and memory"
        if cpus is not None:
            cpu = int(cpus.to_integral_value(rounding="ROUND_CEILING")) or 1
            hint = (f"; the containers request cpu {_q(CPU, cpus)} and memory "
                    f"{_q(MEMORY, memory)} in total: add spec.resources with requests and "
                    f"limits of at least cpu: \"{cpu}\", memory: {_q(MEMORY, memory)}")
        yield Violation(("resources",), "the pod has no pod-level spec.resources: the "
                        "pod-scope resource managers will not treat it as one unit" + hint)


def _container_totals(agg: dict[str, Decimal]) -> tuple[Decimal | None, Decimal | None]:
    if CPU not in agg and MEMORY not in agg:
        return None, None
    return agg.get(CPU, Decimal(0)), agg.get(MEMORY, Decimal(0))


# --------------------------------------------------------------------------- NG102

@rule(id="NG102", name="pod-resources-unsupported", severity="error", target="pod",
      title="A pod-level resource other than cpu, memory or hugepages-<size>, or claims",
      rationale="""Only cpu, memory and hugepages-<size> may be set at pod level, and
      spec.resources.claims is forbidden; the API server rejects anything else
      (validatePodResourceName, validatePodResources).""",
      remediation="""Move other resources (GPUs, ephemeral-storage, extended resources) to the
      containers that use them, and DRA claims to the containers' resources.claims.""")
def pod_resources_unsupported(pod: PodTarget, ctx: LintContext) -> Iterable[Violation]:
    resources = _map(_map(pod.spec).get("resources"))
    for field_name in ("requests", "limits"):
        for name in _map(resources.get(field_name)):
            if isinstance(name, str) and not is_supported_pod_level_resource(name):
                yield Violation(("resources", field_name, name),
                                f"spec.resources.{field_name}[{name}]: Unsupported value: "
                                f"\"{name}\": supported values: \"cpu\", \"hugepages-\", \"memory\" "
                                f"— the API server rejects the pod; set {name} on the container "
                                "that uses it instead")
    if "claims" in resources:
        yield Violation(("resources", "claims"), "spec.resources.claims: Forbidden: claims cannot "
                        "be set for Resources at pod-level — move the claim to the containers' "
                        "resources.claims")


# --------------------------------------------------------------------------- NG103

@rule(id="NG103", name="pod-not-guaranteed", severity="error", target="pod",
      title="After defaulting, the pod's QoS class is not Guaranteed",
      rationale="""With pod-level resources the QoS class comes from spec.resources alone: cpu
      and memory requests must equal the limits and be non-zero. Only a Guaranteed pod gets a
      NUMA-aligned CPU and memory budget and exclusive slices. The API server fills in a missing
      pod-level request from the containers' aggregate request when any container requests that
      resource (and from the pod limit only otherwise), which silently makes a pod Burstable.""",
      remediation="""Set spec.resources.requests equal to spec.resources.limits for both cpu and
      memory, explicitly.""")
def pod_not_guaranteed(pod: PodTarget, ctx: LintContext) -> Iterable[Violation]:
    plr = analyse(pod).pod_level
    if not plr.is_set:
        return          # NG101 covers pods without a pod-level budget
    for res in (CPU, MEMORY):
        req, lim = plr.requests.get(res), plr.limits.get(res)
        if req is not None and lim is not None and req > lim:
            yield Violation(_existing(pod.spec, ("resources", "requests", res)),
                            f"spec.resources.requests: Invalid value: \"{_q(res, req)}\": must be "
                            f"less than or equal to {res} limit of {_q(res, lim)} — the API server "
                            f"rejects the pod; set requests.{res} equal to limits.{res}")
    qos = analyse(pod).qos
    if qos.guaranteed:
        return
    res = qos.resource
    if res is None:
        yield Violation(("resources",), f"pod QoS is {qos.qos_class}: {qos.reason}; set "
                        "spec.resources requests equal to limits for both cpu and memory")
        return
    req, lim = plr.requests.get(res), plr.limits.get(res)
    origin = plr.origin("requests", res)
    if origin is not None and origin.source == "containers" and lim is not None:
        msg = (f"pod QoS is {qos.qos_class}: pod-level requests.{res} defaulted to "
               f"{_q(res, req)} from {_contributors(origin.contributors, res)} (limits.{res} is "
               f"{_q(res, lim)}); set spec.resources.requests.{res}: \"{_q(res, lim)}\"")
    elif lim is None and req is not None:
        msg = (f"pod QoS is {qos.qos_class}: pod-level requests.{res} is {_q(res, req)} but "
               f"limits.{res} is not set (and not every container has a {res} limit to default "
               f"it from); set spec.resources.limits.{res}: \"{_q(res, req)}\"")
    elif lim is not None and req is not None:
        msg = (f"pod QoS is {qos.qos_class}: pod-level requests.{res} ({_q(res, req)}) differs "
               f"from limits.{res} ({_q(res, lim)}); set requests.{res} equal to limits.{res}")
    else:
        msg = (f"pod QoS is {qos.qos_class}: spec.resources sets no {res}; set "
               f"spec.resources.requests.{res} and limits.{res} to the same non-zero value")
    path = qos.path or ("resources",)
    yield Violation(_existing(pod.spec, path), msg)


def _contributors(contributors: tuple[tuple[str, Decimal], ...], res: str) -> str:
    if len(contributors) == 1:
        name, value = contributors[0]
        return f"container '{name}' requests.{res}"
    parts = ", ".join(f"'{n}' {_q(res, v)}" for n, v in contributors)
    return f"the containers' aggregate requests.{res} ({parts})"


# --------------------------------------------------------------------------- NG104

@rule(id="NG104", name="pod-cpu-not-whole", severity="error", target="pod",
      title="The pod-level CPU is not a whole number of CPUs",
      rationale="""The CPU Manager reserves a pod's CPU block only for a whole number of CPUs
      (podGuaranteedCPUs). With a fractional pod-level cpu request no exclusive CPUs are
      reserved and every container runs in the node's shared pool, unaligned.""",
      remediation="""Round spec.resources requests.cpu and limits.cpu to a whole number of
      CPUs (e.g. 2500m -> 3).""")
def pod_cpu_not_whole(pod: PodTarget, ctx: LintContext) -> Iterable[Violation]:
    plr = analyse(pod).pod_level
    if not plr.is_set:
        return
    cpu = plr.requests.get(CPU, plr.limits.get(CPU))
    if cpu is None or cpu <= 0 or is_integral_cpu(cpu):
        return
    field_name = "requests" if CPU in plr.declared_requests else "limits"
    up = int(cpu.to_integral_value(rounding="ROUND_CEILING"))
    yield Violation(_existing(pod.spec, ("resources", field_name, CPU)),
                    f"pod-level {field_name}.cpu is {_q(CPU, cpu)}, not a whole number of CPUs: "
                    f"no exclusive CPU block is reserved and every container shares; use "
                    f"cpu: \"{up}\" (requests and limits)")


# --------------------------------------------------------------------------- NG105

@rule(id="NG105", name="container-requests-exceed-pod", severity="error", target="pod",
      title="The containers' aggregate requests exceed the pod-level request",
      rationale="""The pod-level request must be at least the sidecar-aware aggregate of the
      container requests, max(app + sidecars, each init container + the sidecars started before
      it); the API server rejects the pod otherwise (validatePodResourceConsistency).""",
      remediation="""Raise the pod-level request to at least the aggregate, or lower the
      container requests.""")
def container_requests_exceed_pod(pod: PodTarget, ctx: LintContext) -> Iterable[Violation]:
    plr = analyse(pod).pod_level
    if not plr.is_set:
        return
    for res, agg in sorted(analyse(pod).aggregate_requests.items()):
        if not is_supported_pod_level_resource(res):
            continue
        pod_req = plr.requests.get(res)
        if agg <= (pod_req if pod_req is not None else Decimal(0)):
            continue
        shown = _q(res, pod_req) if pod_req is not None else "0"
        note = "" if pod_req is not None else (f" (spec.resources sets no requests.{res}; the "
                                               "API server compares it as 0)")
        yield Violation(_existing(pod.spec, ("resources", "requests", res)),
                        f"spec.resources.requests[{res}]: Invalid value: \"{shown}\": must be "
                        f"greater than or equal to aggregate container requests of "
                        f"{_q(res, agg)}{note}; raise spec.resources.requests.{res} to at least "
                        f"{_q(res, agg)}")


# --------------------------------------------------------------------------- NG106

@rule(id="NG106", name="container-limit-exceeds-pod", severity="error", target="pod",
      title="A container limit exceeds the pod-level limit of the same resource",
      rationale="""Each app container's limit must not exceed the pod-level limit of the same
      resource (the sum may); the API server rejects the pod otherwise
      (validatePodResourceConsistency).""",
      remediation="""Lower the container limit to the pod-level limit or raise the pod-level
      limit.""")
def container_limit_exceeds_pod(pod: PodTarget, ctx: LintContext) -> Iterable[Violation]:
    plr = analyse(pod).pod_level
    if not plr.is_set:
        return
    for c in analyse(pod).containers:
        if c.kind != "app":
            continue                    # the API checks spec.containers only
        for res, lim in sorted(c.limits.items()):
            pod_lim = plr.limits.get(res)
            if pod_lim is None or lim <= pod_lim:
                continue
            yield Violation((*c.path, "resources", "limits", res),
                            f"spec.resources.containers[{c.index}][{res}].limits: Invalid value: "
                            f"\"{_q(res, lim)}\": must be less than or equal to pod limits of "
                            f"{_q(res, pod_lim)} (container '{c.name}'); lower its limits.{res} "
                            f"to at most {_q(res, pod_lim)}", c.name)


# --------------------------------------------------------------------------- NG107

@rule(id="NG107", name="no-shared-pool-left", severity="error", target="pod",
      title="Exclusive containers use the whole pod budget while others need its shared pool",
      rationale="""Under pod scope, containers with requests equal to limits (and whole CPUs for
      CPU) get exclusive slices of the pod budget; everyone else shares what is left. If the
      long-running exclusive slices (app containers and sidecars) use the whole budget while any
      container shares, or an init container does not fit, the kubelet rejects the pod:
      TopologyAffinityError under restricted/single-numa-node, EmptyPodSharedPoolError under
      best-effort/none (validatePodScopeResources).""",
      remediation="""Raise the pod-level budget above the sum of the exclusive slices, or make
      one of the exclusive containers share (request below its limit).""")
def no_shared_pool_left(pod: PodTarget, ctx: LintContext) -> Iterable[Violation]:
    budget = analyse(pod).budget
    for r in budget.rejections:
        if r.manager == "cpu":
            total = f"pod budget {budget.cpus} CPUs, exclusive {_exclusive_list(budget, 'cpu')}"
            fix = f"raise spec.resources cpu above {budget.exclusive_cpus_long_running}"
            path = _existing(pod.spec, ("resources", "requests", CPU))
        else:
            total = (f"pod budget {_q(r.resource, budget.memory.get(r.resource))} of {r.resource}, "
                     f"exclusive {_exclusive_list(budget, r.resource)}")
            used = sum((p.exclusive_memory.get(r.resource, Decimal(0)) for p in budget.placements
                        if p.long_running), Decimal(0))
            fix = (f"raise spec.resources {r.resource} above {_q(r.resource, used)} (the "
                   "long-running exclusive slices)")
            path = _existing(pod.spec, ("resources", "requests", r.resource))
        yield Violation(path, f"the kubelet rejects the pod: \"{r.message}\" ({total}). With "
                        f"topologyManagerPolicy restricted/single-numa-node it fails as "
                        f"{TOPOLOGY_AFFINITY_REASON} (\"{POD_SCOPE_ADMISSION_MESSAGE}\"); with "
                        f"best-effort as {EMPTY_POD_SHARED_POOL_REASON}. Fix: {fix}, or let a "
                        "container share", r.container)


def _exclusive_list(budget: PodBudget, resource: str) -> str:
    parts = []
    for p in budget.placements:
        amount = p.exclusive_cpus if resource == "cpu" else p.exclusive_memory.get(resource)
        if amount:
            shown = f"{amount} CPUs" if resource == "cpu" else _q(resource, amount)
            parts.append(f"{p.container.label} {shown}")
    shared = [f"'{p.name}'" for p in budget.placements if p.long_running and (
        p.exclusive_cpus == 0 if resource == "cpu" else not p.exclusive_memory)]
    text = ", ".join(parts) or "none"
    if shared:
        text += f"; sharing: {', '.join(shared)}"
    return text


# --------------------------------------------------------------------------- NG108

def _hugepage_size(name: str) -> Decimal | None:
    try:
        return parse_quantity(name[len("hugepages-"):])
    except ValueError:
        return None


@rule(id="NG108", name="hugepages-invalid", severity="error", target="pod",
      title="Invalid pod-level hugepages",
      rationale="""Hugepages cannot be overcommitted: a pod-level hugepages request must equal its
      limit (a request needs a limit), hugepages need cpu or memory beside them, the value must
      be a multiple of the page size, and the pod limit must cover the containers' aggregate
      hugepages limit. The API server rejects the pod otherwise.""",
      remediation="""Set the pod-level hugepages-<size> request equal to the limit, at least the
      containers' aggregate, alongside cpu and memory.""")
def hugepages_invalid(pod: PodTarget, ctx: LintContext) -> Iterable[Violation]:
    plr = analyse(pod).pod_level
    if not plr.present:
        return
    names = sorted(n for n in {*plr.requests, *plr.limits} if is_hugepages(n))
    if not names:
        return
    for name in names:
        req, lim = plr.requests.get(name), plr.limits.get(name)
        if req is not None and lim is None:
            yield Violation(_existing(pod.spec, ("resources", "requests", name)),
                            f"spec.resources.limits: Required value: Limit must be set for non "
                            f"overcommitable resources ({name} request {_q(name, req)}); set "
                            f"limits.{name}: \"{_q(name, req)}\"")
        elif req is not None and lim is not None and req != lim:
            yield Violation(_existing(pod.spec, ("resources", "requests", name)),
                            f"spec.resources.requests: Invalid value: \"{_q(name, req)}\": must be "
                            f"equal to {name} limit of {_q(name, lim)}; hugepages cannot be "
                            "overcommitted")
        size = _hugepage_size(name)
        for field_name, value in (("requests", plr.declared_requests.get(name)),
                                  ("limits", plr.declared_limits.get(name))):
            if size and value is not None and value % size != 0:
                yield Violation(("resources", field_name, name),
                                f"spec.resources.{field_name}[{name}]: Invalid value: "
                                f"\"{_q(name, value)}\": {_q(name, value)} is not positive integer "
                                f"multiple of {name}")
    has_cpu_or_memory = any(r in plr.declared_requests or r in plr.declared_limits
                            for r in (CPU, MEMORY))
    if not has_cpu_or_memory:
        yield Violation(("resources",), "spec.resources: Forbidden: HugePages require cpu or "
                        f"memory (pod-level {', '.join(names)} without cpu or memory); add "
                        "cpu and memory requests and limits")
    aggregate = analyse(pod).aggregate_limits
    for name in names:
        lim, agg = plr.limits.get(name), aggregate.get(name)
        if lim is not None and agg is not None and lim < agg:
            yield Violation(_existing(pod.spec, ("resources", "limits", name)),
                            f"spec.resources.limits[{name}]: Invalid value: \"{_q(name, lim)}\": "
                            f"must be greater than or equal to aggregate container limits of "
                            f"{_q(name, agg)}; raise the pod-level {name} to at least "
                            f"{_q(name, agg)}")


# --------------------------------------------------------------------------- NG109

@rule(id="NG109", name="windows-pod", severity="error", target="pod",
      title="Pod-level resources on a Windows pod",
      rationale="""Pod-level resources are Linux only: the API server rejects them on a pod with
      spec.os.name: windows, and a Windows kubelet rejects such pods (PodLevelResourcesNotSupported).""",
      remediation="""Remove spec.resources from Windows pods (set container resources instead), or
      run the workload on Linux.""")
def windows_pod(pod: PodTarget, ctx: LintContext) -> Iterable[Violation]:
    spec = _map(pod.spec)
    if _map(spec.get("os")).get("name") != "windows":
        return
    plr = analyse(pod).pod_level
    if plr.present and not plr.is_empty:
        yield Violation(("resources",), "spec.resources: Forbidden: may not be set for a windows "
                        "pod (spec.os.name is windows); pod-level resources are Linux only — "
                        "remove spec.resources and set container resources")


# --------------------------------------------------------------------------- NG110

@rule(id="NG110", name="container-placement", severity="info", target="pod",
      title="How the pod budget is split between exclusive and shared containers",
      rationale="""Inside a Guaranteed pod's budget, a container gets exclusive CPUs only when its
      cpu and memory requests equal its limits and its cpu is a whole number; an exclusive memory
      slice needs requests equal to limits. The rest share the pod's pool.""",
      remediation="""To pin a container, give it requests equal to limits with whole CPUs; to let
      it share, leave its request below its limit (or unset).""")
def container_placement(pod: PodTarget, ctx: LintContext) -> Iterable[Violation]:
    budget = analyse(pod).budget
    if not budget.managed or budget.rejections:
        return
    exclusive, shared = [], []
    for p in budget.placements:
        exclusive_part = _placement_text(p)
        (exclusive if p.exclusive_cpus or p.exclusive_memory else shared).append(exclusive_part)
    if budget.cpus:
        cpu_text = f"{budget.cpus} CPUs"
        cpu_pool = f"{budget.shared_pool_cpus} CPUs"
    else:
        cpu_text = f"no CPU block (pod cpu {_q(CPU, budget.cpu_request)} is not a whole number)"
        cpu_pool = "the node's shared CPUs"
    mem_text = ", ".join(f"{n} {_q(n, v)}" for n, v in sorted(budget.memory.items())) or "none"
    mem_pool = ", ".join(f"{n} {_q(n, v)}" for n, v in sorted(budget.shared_pool_memory.items()))
    text = (f"pod budget: {cpu_text}, {mem_text}; left for the pod's shared pool: {cpu_pool}"
            + (f", {mem_pool}" if mem_pool else "")
            + ". Exclusive: " + ("; ".join(exclusive) or "none")
            + ". Shared: " + ("; ".join(shared) or "none") + ".")
    yield Violation(("resources",), text)


def _placement_text(p: ContainerPlacement) -> str:
    label = p.container.label
    mem = ", ".join(f"{n} {_q(n, v)}" for n, v in sorted(p.exclusive_memory.items()))
    if p.exclusive_cpus and p.exclusive_memory:
        return f"{label} ({p.exclusive_cpus} CPUs, {mem})"
    if p.exclusive_memory:
        return f"{label} ({mem} only; its CPUs are shared because {p.cpu_reason})"
    return f"{label} ({p.cpu_reason})"


# --------------------------------------------------------------------------- NG111

@rule(id="NG111", name="pool-targeting", severity="warning", target="pod",
      title="The pod targets the pool without its toleration, or tolerates it without selecting it",
      rationale="""Pool nodes carry a taint and labels. A pod that selects the pool's labels but
      does not tolerate the taint stays Pending; a pod that tolerates the taint but does not
      select the labels may land on any node, including ones without the managers.""",
      remediation="""Give managed pods both the pool's nodeSelector (or required node affinity)
      and a toleration for its taint.""")
def pool_targeting(pod: PodTarget, ctx: LintContext) -> Iterable[Violation]:
    spec = _map(pod.spec)
    labels, taint = ctx.pool.node_labels, ctx.pool.taint
    selects = _selects_pool(spec, labels)
    tolerates = _tolerates_pool(spec, taint)
    if selects and taint and not tolerates:
        yield Violation(selects, f"the pod selects the managed pool ({_dotted(selects)}) but does "
                        f"not tolerate its taint {taint.get('key')}={taint.get('value', '')}:"
                        f"{taint.get('effect', '')}: it will stay Pending; add a toleration "
                        f"{{key: {taint.get('key')}, operator: Equal, value: "
                        f"{taint.get('value', '')}, effect: {taint.get('effect', '')}}}")
    if tolerates and labels and not selects:
        wanted = ", ".join(f"{k}: {v}" for k, v in labels.items())
        yield Violation(tolerates, f"the pod tolerates the pool's taint but does not select the "
                        f"pool's nodes: it may be scheduled on a node without the pod-level "
                        f"resource managers; add nodeSelector {{{wanted}}}")


# --------------------------------------------------------------------------- NG112

def _repository(image: str) -> str:
    name = image.split("@", 1)[0]
    last = name.rsplit("/", 1)
    if ":" in last[-1]:
        name = name[: len(name) - len(last[-1])] + last[-1].split(":", 1)[0]
    return name.lower()


def _is_placeholder(c: dict) -> bool:
    image = c.get("image")
    if not isinstance(image, str):
        return False
    repo = _repository(image)
    if repo in PLACEHOLDER_IMAGES or repo.startswith("docker.io/library/") and \
            repo.removeprefix("docker.io/library/") in PLACEHOLDER_IMAGES:
        return True
    base = repo.removeprefix("docker.io/").removeprefix("library/")
    if base in IDLE_BASE_IMAGES:
        words = [w for w in (*_list(c.get("command")), *_list(c.get("args"))) if isinstance(w, str)]
        words = [w for w in words if w not in ("sh", "/bin/sh", "-c")]
        return bool(words) and bool(_IDLE_COMMAND.match(" ".join(" ".join(words).split())))
    return False


@rule(id="NG112", name="placeholder-image", severity="info", target="pod",
      title="A managed pod runs a placeholder image",
      rationale="""A pause image (or a shell that only sleeps) shows where the kubelet places the
      pod, but says nothing about how the workload performs on those CPUs and that memory.""",
      remediation="""Use the real application image (or a load generator) before drawing
      performance conclusions.""")
def placeholder_image(pod: PodTarget, ctx: LintContext) -> Iterable[Violation]:
    for c in analyse(pod).containers:
        if _is_placeholder(c.raw):
            yield Violation((*c.path, "image"), f"{c.label} runs the placeholder image "
                            f"{c.raw.get('image')!r}: placement can be checked, performance "
                            "cannot; use the application image for performance tests", c.name)


# --------------------------------------------------------------------------- NG113

@rule(id="NG113", name="resize-infeasible", severity="info", target="pod",
      title="A Guaranteed managed pod declares an in-place resize policy for cpu or memory",
      rationale="""With cpuManagerPolicy static (or memoryManagerPolicy Static) the kubelet marks
      in-place resizes of Guaranteed pods Infeasible ("Resize is infeasible for Guaranteed Pods
      alongside CPU Manager static policy") unless the alpha
      InPlacePodVerticalScalingExclusiveCPUs gate is on; KEP-5526 leaves resize out of scope.""",
      remediation="""Resize by replacing the pod (rolling update), and drop resizePolicy entries for
      cpu and memory to make that explicit.""")
def resize_infeasible(pod: PodTarget, ctx: LintContext) -> Iterable[Violation]:
    if not analyse(pod).qos.guaranteed:
        return
    for c in analyse(pod).containers:
        for i, entry in enumerate(_list(c.raw.get("resizePolicy"))):
            res = _map(entry).get("resourceName")
            if res in (CPU, MEMORY):
                yield Violation((*c.path, "resizePolicy", i),
                                f"{c.label} declares resizePolicy for {res}, but the kubelet "
                                "marks in-place resizes of Guaranteed pods Infeasible with static "
                                "CPU/Memory Managers (\"Resize is infeasible for Guaranteed Pods "
                                "alongside CPU Manager static policy\"); resize by replacing the "
                                "pod", c.name)
