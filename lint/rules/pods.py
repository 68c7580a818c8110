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

from numaguard.lint.model import DEFAULT_POOL_NAME, Path, Violation, existing_prefix
# The kubelet model (numaguard.lint.k8s.kubelet) is imported where a configuration is judged: a
# lint of pods alone needs none of it.
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

ScopeDecision = Literal["managed", "assumed", "validity", "unmanaged", "out"]


# --------------------------------------------------------------------------- helpers

def _map(value: Any) -> dict:
    return value if isinstance(value, dict) else {}


def _list(value: Any) -> list:
    return value if isinstance(value, list) else []


def _existing(spec: dict, path: Path) -> Path:
    """The longest prefix of `path` that exists in the spec (so a finding points at a real
    line); at least the first element, e.g. ("resources",) when spec.resources is missing."""
    return existing_prefix(spec, path) or tuple(path[:1])


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


def pool_configured(ctx: LintContext) -> bool:
    """Whether the config file declares a pool that pods can target (by labels or a taint)."""
    return ctx.pods_have_pools or ctx.pool.recognises_pods


def _selected_labels(spec: dict, labels: dict[str, str]) -> int:
    """How many of the pool's labels the pod selects (nodeSelector, or a required node
    affinity In/Exists expression on the label)."""
    selector = _map(spec.get("nodeSelector"))
    required = _map(_map(_map(spec.get("affinity")).get("nodeAffinity"))
                    .get("requiredDuringSchedulingIgnoredDuringExecution"))
    chosen = {key for key, value in labels.items() if selector.get(key) == value}
    for term in _list(required.get("nodeSelectorTerms")):
        for expr in _list(_map(term).get("matchExpressions")):
            expr = _map(expr)
            key = expr.get("key")
            if key in labels and (expr.get("operator") == "Exists" or (
                    expr.get("operator") == "In" and labels[key] in _list(expr.get("values")))):
                chosen.add(key)
    return len(chosen)


def _excludes(spec: dict, labels: dict[str, str]) -> bool:
    """Whether the pod's nodeSelector asks for another value of one of the pool's labels (a
    `pool: gpu` pod cannot land on `pool: cpu` nodes, whatever else it selects)."""
    selector = _map(spec.get("nodeSelector"))
    return any(key in selector and selector[key] != value for key, value in labels.items())


def targeted_pools(pod: PodTarget, ctx: LintContext) -> tuple[LintContext, ...]:
    """The declared pools the pod targets, as their contexts: the pools whose labels it
    selects or whose taint it tolerates, the most specific first: a pool counts one per label
    selected and one for its taint tolerated, and only the pools with the highest count are
    kept (a `{role: worker, pool: gpu}` pod targets the gpu pool, not every worker pool).
    Several pools left: the pod may land on any of them, and it is judged against each."""
    spec = _map(pod.spec)
    scored = []
    for pool_ctx in ctx.pools:
        pool = pool_ctx.pool
        if not pool.recognises_pods or _excludes(spec, pool.node_labels):
            continue
        score = _selected_labels(spec, pool.node_labels) + (_tolerates_pool(spec, pool.taint) is not None)
        if score:
            scored.append((score, pool_ctx))
    best = max((score for score, _ in scored), default=0)
    return tuple(pool_ctx for score, pool_ctx in scored if score == best)


def pod_placement(pod: PodTarget, ctx: LintContext) -> tuple[ScopeDecision, tuple[LintContext, ...], str | None]:
    """The pod's scope (`pod_scope`), the contexts it is judged with (each pool it targets,
    with that pool's node description, else the run's: the default node) and, for a pod held
    to the policy, what declared it (the "pods" tier of `numaguard.lint.model.TIERS`: "pool",
    "annotation", "scopeAll", or "assumed")."""
    scope = pod.annotations.get(SCOPE_ANNOTATION) if isinstance(pod.annotations, dict) else None
    if scope == "unmanaged":
        return "unmanaged", (), None
    pools = targeted_pools(pod, ctx) if ctx.pools else ()
    if pools:
        return "managed", pools, "pool"
    if scope == "managed" or ctx.scope_all:
        return "managed", (ctx,), "annotation" if scope == "managed" else "scopeAll"
    spec = _map(pod.spec)
    if not ctx.pools and ctx.pool.recognises_pods and (_selects_pool(spec, ctx.pool.node_labels)
                                                       or _tolerates_pool(spec, ctx.pool.taint)):
        return "managed", (ctx,), "pool"       # a context made by hand for one pool (library callers)
    raw = spec.get("resources")
    resources = _map(raw)
    names = [n for field_name in ("requests", "limits")
             for n in _map(resources.get(field_name)) if isinstance(n, str)]
    if not names:
        # a spec.resources of the wrong shape is still one the API server judges (NG002)
        malformed = (raw is not None and not isinstance(raw, dict)) or any(
            resources.get(f) is not None and not isinstance(resources.get(f), dict)
            for f in ("requests", "limits"))
        return ("validity" if malformed else "out"), (ctx,), None
    # A pod whose pod-level resources are only `pids` (or other names the managers ignore) is
    # no resource-manager pod: the CPU and Memory Managers look at cpu, memory and hugepages.
    if not pool_configured(ctx) and any(is_supported_pod_level_resource(n) for n in names):
        return "assumed", (ctx,), "assumed"
    return "validity", (ctx,), None


def pod_scope(pod: PodTarget, ctx: LintContext) -> ScopeDecision:
    """Which tier of pod rules applies to this pod (lint/README.md "Which pods are policy-checked").

    - "unmanaged": the opt-out annotation; nothing is checked (counted in the summary);
    - "managed": a pod that targets a declared pool (selects its labels: nodeSelector or a
      required node affinity In/Exists; or tolerates its taint), the opt-in annotation, or
      `scope: all`: every rule, validity and resource-manager policy;
    - "assumed": no pool that pods can target is configured and the pod declares pod-level
      cpu, memory or hugepages, so numaguard takes it as meant for a managed pool: every rule,
      but its policy findings are warnings (counted in the summary);
    - "validity": any other pod with pod-level resources: only what the API server and the
      kubelet would refuse (`VALIDITY_RULES`), since `spec.resources` alone may just be a cgroup
      budget (pod-level resources are beta and on by default since 1.34);
    - "out": no pod-level resources and not meant for a pool: not checked at all, not even
      NG002."""
    return pod_placement(pod, ctx)[0]


# Rules for what the API server rejects (or the kubelet refuses at admission whatever its
# configuration): they apply to every pod with pod-level resources, in or out of the pool.
VALIDITY_RULES = frozenset({"NG102", "NG105", "NG106", "NG108", "NG109", "NG114"})


# --------------------------------------------------------------------------- NG101

@rule(id="NG101", name="pod-resources-missing", severity="error", target="pod",
      fix="adds spec.resources (requests equal to limits) from the containers' sums, when every "
          "container's requests equal its limits",
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
    elif any(name == "resources" for name, _ in pod.refused_fields):
        # Knative Serving: the fix NG101 gives cannot be made in this kind (lint/README.md "Which pods
        # are checked").
        why = next(why for name, why in pod.refused_fields if name == "resources")
        yield Violation(("resources",), f"the pod has no pod-level spec.resources, and a {pod.ref.kind} "
                        f"cannot have them: {why}; the pod-scope resource managers will not "
                        "treat these pods as one unit",
                        remediation=f"Run a workload that needs pod-level NUMA alignment as a kind that "
                        f"accepts pod-level resources (a Deployment), or annotate the {pod.ref.kind}'s "
                        "template numaguard.io/scope: unmanaged if per-container alignment is enough.")
    else:
        yield Violation(("resources",), "the pod has no pod-level spec.resources: the "
                        "pod-scope resource managers will not treat it as one unit; "
                        + suggested_pod_budget(analyse(pod)))


def _leave_shared_pool(spec: dict, cpus: int, memory: Decimal) -> tuple[int, Decimal]:
    """Grow the candidate budget until the kubelet's pod-scope split accepts it (NG107): the
    exclusive slices must leave a shared pool when some container shares."""
    for _ in range(4):
        candidate = dict(spec)
        budget_memory = memory or Decimal(2 ** 30)        # any non-zero stand-in for the check
        candidate["resources"] = {which: {CPU: str(cpus), MEMORY: str(int(budget_memory))}
                                  for which in ("requests", "limits")}
        rejections = PodAnalysis(candidate).budget.rejections
        if not rejections:
            break
        if any(r.manager == "cpu" for r in rejections):
            cpus += 1
        if memory and any(r.manager != "cpu" for r in rejections):
            memory += Decimal(256 * 2 ** 20)
    return cpus, memory


def suggested_pod_budget(analysis: PodAnalysis) -> str:
    """The spec.resources to add, sized so that, applied, it raises none of the pod rules: whole
    CPUs and memory covering both the containers' aggregate requests (NG105) and every
    container limit (NG106), requests equal to limits (NG103, NG104). Never a zero: a container
    set that declares no memory gets no number for it (the pod needs some, numaguard cannot
    tell how much)."""
    requests = analysis.aggregate_requests
    largest = {res: max((c.limits[res] for c in analysis.containers if res in c.limits),
                        default=Decimal(0)) for res in (CPU, MEMORY)}
    cpu = max(requests.get(CPU, Decimal(0)), largest[CPU])
    memory = max(requests.get(MEMORY, Decimal(0)), largest[MEMORY])
    if cpu == 0 and memory == 0:
        return ("add spec.resources with requests equal to limits for cpu (a whole number of "
                "CPUs) and memory, sized for the whole pod")
    cpus = int(cpu.to_integral_value(rounding="ROUND_CEILING")) or 1
    cpus, memory = _leave_shared_pool(analysis.spec, cpus, memory)
    known = (f"the containers need cpu {_q(CPU, cpu)}"
             + (f" and memory {_q(MEMORY, memory)}" if memory else "") + " (the larger of their "
             "aggregate requests and their largest limit)")
    if memory:
        return (f"{known}: add spec.resources with requests and limits both set to cpu: "
                f"\"{cpus}\", memory: {_q(MEMORY, memory)} (or more)")
    return (f"{known}; no container declares memory: add spec.resources with requests and "
            f"limits both set to cpu: \"{cpus}\" and the memory the whole pod needs")


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
            if name == PIDS:
                yield from _pids_violations(field_name, _map(resources.get(field_name))[name], ctx)
            elif isinstance(name, str) and not is_supported_pod_level_resource(name):
                yield Violation(("resources", field_name, name),
                                f"spec.resources.{field_name}[{name}]: Unsupported value: "
                                f"\"{name}\": supported values: \"cpu\", \"hugepages-\", \"memory\" "
                                f"— the API server rejects the pod; set {name} on the container "
                                "that uses it instead")
    if "claims" in resources:
        yield Violation(("resources", "claims"), "spec.resources.claims: Forbidden: claims cannot "
                        "be set for Resources at pod-level — move the claim to the containers' "
                        "resources.claims")


# KEP-6063 (per-pod PID limit, `spec.resources.limits.pids`, gate PerPodPIDLimit): the KEP
# was taken out of the 1.37 release and retargeted to alpha in 1.38 (kubernetes/enhancements
# PR #6258, merged July 2026); the implementation (kubernetes/kubernetes PR #139277) was still
# open, and PerPodPIDLimit is absent from the 1.37 pkg/features/kube_features.go. So a 1.37
# API server validates `pids` like any other pod-level name (validatePodResourceName in
# pkg/apis/core/validation/validation.go): not cpu, memory or hugepages-, hence NotSupported.
# From 1.38 the PR's validation applies: limits only (requests.pids Forbidden), an integer
# from 128 to 16384; with the alpha gate off the API server drops the field.
PIDS = "pids"
PIDS_GATE = "PerPodPIDLimit"
PIDS_FIRST_VERSION = (1, 38)
PIDS_RANGE = (128, 16384)
PIDS_FIX = ("Delete spec.resources.limits.pids; limit PIDs per pod with the kubelet's podPidsLimit "
            "until the cluster runs a version with the PerPodPIDLimit gate (alpha in 1.38) enabled.")


def _pids_violations(field_name: str, value: Any, ctx: LintContext) -> Iterable[Violation]:
    path = ("resources", field_name, PIDS)
    version = ctx.kubernetes_version
    if tuple(version) < PIDS_FIRST_VERSION:
        yield Violation(path, f"spec.resources.{field_name}[pids]: Unsupported value: \"pids\": "
                        f"supported values: \"cpu\", \"hugepages-\", \"memory\" — Kubernetes "
                        f"{version[0]}.{version[1]} has no per-pod PID limit: the {PIDS_GATE} gate "
                        f"(KEP-6063) was moved to alpha in 1.38, so the API server rejects the pod; "
                        f"remove spec.resources.{field_name}.pids and keep the node's podPidsLimit "
                        f"(KubeletConfiguration) until your clusters run 1.38 with {PIDS_GATE} on",
                        remediation=PIDS_FIX)
        return
    if field_name == "requests":
        yield Violation(path, "spec.resources.requests[pids]: Forbidden: pids may only be set in "
                        f"spec.resources.limits ({PIDS_GATE}, KEP-6063); move it to limits",
                        remediation="Move pids from spec.resources.requests to spec.resources.limits.")
        return
    try:
        amount = parse_quantity(value)
    except (ValueError, TypeError):
        return                                          # NG002 reports the quantity
    low, high = PIDS_RANGE
    if amount != amount.to_integral_value() or not low <= amount <= high:
        yield Violation(path, f"spec.resources.limits[pids]: Invalid value: \"{value}\": must be an "
                        f"integer between {low} and {high} ({PIDS_GATE}, KEP-6063)",
                        remediation=f"Set spec.resources.limits.pids to a whole number from {low} "
                                    f"to {high}.")


# --------------------------------------------------------------------------- NG103

@rule(id="NG103", name="pod-not-guaranteed", severity="error", target="pod",
      fix="sets each pod-level cpu and memory request to the pod-level limit",
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
    if any(_request_above_limit(plr, res) for res in (CPU, MEMORY)):
        return          # NG114: the API server rejects the pod before its QoS matters
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


def _request_above_limit(plr, res: str) -> bool:
    req, lim = plr.requests.get(res), plr.limits.get(res)
    return req is not None and lim is not None and req > lim


# --------------------------------------------------------------------------- NG114

@rule(id="NG114", name="pod-request-above-limit", severity="error", target="pod",
      fix="lowers the pod-level request to the pod-level limit",
      title="A pod-level request is larger than the pod-level limit",
      rationale="""The API server validates spec.resources like any resource requirements: a
      request must be less than or equal to the limit of the same resource
      (ValidateResourceRequirements in pkg/apis/core/validation/validation.go), so the pod is
      rejected whatever node it was meant for.""",
      remediation="""Lower the pod-level request to the limit, or raise the limit.""")
def pod_request_above_limit(pod: PodTarget, ctx: LintContext) -> Iterable[Violation]:
    plr = analyse(pod).pod_level
    if not plr.present:
        return
    for res in sorted({*plr.declared_requests, *plr.declared_limits}):
        if is_hugepages(res) or not _request_above_limit(plr, res):
            continue                    # NG108 words hugepages (request must equal limit)
        req, lim = plr.requests[res], plr.limits[res]
        yield Violation(_existing(pod.spec, ("resources", "requests", res)),
                        f"spec.resources.requests[{res}]: Invalid value: \"{_q(res, req)}\": must "
                        f"be less than or equal to {res} limit of {_q(res, lim)} — the API server "
                        f"rejects the pod; set requests.{res}: \"{_q(res, lim)}\" (or raise "
                        f"limits.{res})")


# --------------------------------------------------------------------------- NG104

@rule(id="NG104", name="pod-cpu-not-whole", severity="error", target="pod",
      fix="rounds the pod-level cpu request and limit up to whole CPUs",
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
      fix="raises the pod-level request to the containers' aggregate",
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
    if _topology_scope(ctx) == "container":
        yield Violation(("resources",), _container_scope_placement(budget))
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


def _topology_scope(ctx: LintContext) -> str:
    """The node's topologyManagerScope when a node description gives a KubeletConfiguration;
    "pod" otherwise (the scope the pod rules are written for)."""
    from numaguard.lint.k8s import kubelet as kubelet_model

    kc = ctx.kubelet_config
    return kubelet_model.topology_manager_scope(kc)[0] if isinstance(kc, dict) else "pod"


def _container_scope_placement(budget: PodBudget) -> str:
    """NG110 under topologyManagerScope container: there is no pod budget placed as a unit and
    no pod shared pool; each container is aligned on its own (topologymanager scope_container.go)
    and the pod-level limits only bound the pod's cgroup."""
    exclusive = [p.container.label for p in budget.placements if p.exclusive_cpus]
    shared = [p.container.label for p in budget.placements if not p.exclusive_cpus]
    return ("topologyManagerScope is container: the pod budget is not placed as one unit and "
            "there is no pod shared pool; each container is aligned on its own, pod-level "
            "limits only cap the pod's cgroup. Exclusive CPUs from the node: "
            + ("; ".join(exclusive) or "none") + ". In the node's shared pool: "
            + ("; ".join(shared) or "none") + ".")


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
    # one pool (the `pool:` shorthand): "the managed pool"; named pools: "pool gpu"
    pool = "the managed pool" if ctx.pool.name == DEFAULT_POOL_NAME else f"pool {ctx.pool.name}"
    if selects and taint and not tolerates:
        yield Violation(selects, f"the pod selects {pool} ({_dotted(selects)}) but does "
                        f"not tolerate its taint {taint.get('key')}={taint.get('value', '')}:"
                        f"{taint.get('effect', '')}: it will stay Pending; add a toleration "
                        f"{{key: {taint.get('key')}, operator: Equal, value: "
                        f"{taint.get('value', '')}, effect: {taint.get('effect', '')}}}")
    if tolerates and labels and not selects:
        wanted = ", ".join(f"{k}: {v}" for k, v in labels.items())
        yield Violation(tolerates, f"the pod tolerates the taint of {pool} but does not select "
                        f"its nodes: it may be scheduled on a node without the pod-level "
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
