"""The fixes of the pod rules that have one safe fix (NG101, NG103, NG104, NG105, NG114).

Each takes the pod (`PodTarget`, as the rules see it) and returns the edits to its pod spec, or
raises `CannotFix` with why the choice is the user's. A fix returns no edits when its rule no
longer applies (another fix of the same run settled it). The planner (`numaguard.lint.fixing`)
checks every fix by linting the result.
"""
from __future__ import annotations

from decimal import ROUND_CEILING, Decimal
from typing import Callable

from numaguard.lint.k8s.pod_budget import is_integral_cpu
from numaguard.lint.k8s.resources import CPU, MEMORY, format_quantity, is_hugepages, is_supported_pod_level_resource
from numaguard.lint.objects import PodTarget
from numaguard.lint.rules.fixes import CannotFix, Edit

_q = format_quantity


def _declared(pod: PodTarget, field_name: str) -> dict:
    resources = pod.spec.get("resources")
    values = resources.get(field_name) if isinstance(resources, dict) else None
    return values if isinstance(values, dict) else {}


def _whole(value: Decimal) -> str:
    return str(int(value.to_integral_value(rounding=ROUND_CEILING)))


def add_pod_budget(pod: PodTarget) -> list[Edit]:
    """NG101: the budget is unambiguous only when every container's requests equal its limits
    for cpu and memory: then the containers' sidecar-aware aggregate is both what they request
    and what they may use, and the pod budget is that (cpu rounded up to whole CPUs, NG104)."""
    analysis = pod.analysis
    if analysis.pod_level.is_set:
        return []
    refused = dict(pod.refused_fields).get("resources")
    if refused:
        raise CannotFix(f"a {pod.ref.kind} cannot have pod-level resources: {refused}")
    if not analysis.containers:
        raise CannotFix("the pod has no containers to size a budget from")
    for c in analysis.containers:
        for res in (CPU, MEMORY):
            limit = c.limits.get(res)
            if limit is None:
                raise CannotFix(f"{c.label} has no {res} limit: the pod budget could be anything "
                                f"from the containers' requests up; choose it yourself")
            if c.requests.get(res) != limit:
                raise CannotFix(f"{c.label} requests {_q(res, c.requests.get(res))} of {res} but "
                                f"may use {_q(res, limit)}: the pod budget could be anything "
                                "between the containers' requests and their limits")
    total = analysis.aggregate_requests
    budget = {CPU: _whole(total[CPU]), MEMORY: _q(MEMORY, total[MEMORY])}
    return [Edit(("resources", which, res), value) for which in ("requests", "limits")
            for res, value in budget.items()]


def requests_to_limits(pod: PodTarget) -> list[Edit]:
    """NG103: each cpu and memory request set to the pod-level limit written beside it (a
    request above its limit is NG114's)."""
    plr = pod.analysis.pod_level
    if not plr.is_set:
        return []
    limits = _declared(pod, "limits")
    edits = []
    for res in (CPU, MEMORY):
        request, limit = plr.requests.get(res), plr.declared_limits.get(res)
        if limit is None:
            defaulted = plr.limits.get(res)
            if defaulted is not None and request == defaulted:
                continue
            if defaulted is not None:
                raise CannotFix(f"spec.resources writes no limits.{res}: the API server defaults it "
                                f"from the containers' limits ({_q(res, defaulted)}); write the pod's "
                                f"{res} limit yourself")
            if request is None:
                raise CannotFix(f"spec.resources sets no {res}: how much the whole pod needs is "
                                "yours to choose")
            raise CannotFix(f"spec.resources sets requests.{res} but no limits.{res}: a pod-level "
                            f"limit is a sizing decision (set limits.{res}: \"{_q(res, request)}\" "
                            "to match the request)")
        if limit == 0:
            raise CannotFix(f"limits.{res} is 0: a Guaranteed pod needs a non-zero {res}")
        if request is not None and request >= limit:
            continue                                # equal, or NG114's
        edits.append(Edit(("resources", "requests", res), limits[res]))
    return edits


def round_cpu_up(pod: PodTarget) -> list[Edit]:
    """NG104: a fractional pod-level cpu request or limit rounded up to whole CPUs (up: the
    containers' aggregate stays covered, NG105)."""
    plr = pod.analysis.pod_level
    if not plr.is_set:
        return []
    edits = []
    for field_name, values in (("requests", plr.requests), ("limits", plr.limits)):
        value = values.get(CPU)
        if value is None or value <= 0 or is_integral_cpu(value):
            continue
        declared = plr.declared_requests if field_name == "requests" else plr.declared_limits
        if CPU not in declared:
            origin = plr.origin(field_name, CPU)
            if origin is not None and origin.source == "pod-limit":
                continue                            # follows the limit, rounded below
            if field_name == "limits":
                raise CannotFix(f"the pod-level cpu limit is not written: the API server defaults it "
                                f"from the containers' limits ({_q(CPU, value)}); write it yourself")
        edits.append(Edit(("resources", field_name, CPU), _whole(value)))
    return edits


def raise_request_to_aggregate(pod: PodTarget) -> list[Edit]:
    """NG105: the pod-level request raised to the containers' aggregate request, unless that
    goes above the pod-level limit (then the limit or the containers must change)."""
    analysis = pod.analysis
    plr = analysis.pod_level
    if not plr.is_set:
        return []
    edits = []
    for res, aggregate in sorted(analysis.aggregate_requests.items()):
        request = plr.requests.get(res)
        if not is_supported_pod_level_resource(res) or (request is not None and aggregate <= request):
            continue
        limit = plr.limits.get(res)
        if limit is not None and aggregate > limit:
            raise _over_limit(res, aggregate, f"the pod-level limit {_q(res, limit)}")
        edits.append(Edit(("resources", "requests", res), _q(res, aggregate)))
    return edits


def _over_limit(res: str, aggregate: Decimal, limit_text: str) -> CannotFix:
    return CannotFix(f"the containers' aggregate requests.{res} {_q(res, aggregate)} is above "
                     f"{limit_text}: raise the limit or lower the containers' requests, numaguard "
                     "cannot tell which")


def lower_request_to_limit(pod: PodTarget) -> list[Edit]:
    """NG114: the request lowered to the limit. The cgroup never gives the pod more than its
    limit, so a request above it only reserves what the pod cannot use; raising the limit
    instead would change what the pod may use. Not when the containers' aggregate request is
    above the limit too (NG105 then)."""
    analysis = pod.analysis
    plr = analysis.pod_level
    limits = _declared(pod, "limits")
    edits = []
    for res in sorted(plr.declared_limits):
        request, limit = plr.requests.get(res), plr.declared_limits[res]
        if is_hugepages(res) or request is None or request <= limit:
            continue
        aggregate = analysis.aggregate_requests.get(res)
        if aggregate is not None and aggregate > limit:
            raise _over_limit(res, aggregate, f"limits.{res} {_q(res, limit)} too")
        edits.append(Edit(("resources", "requests", res), limits[res]))
    return edits


POD_FIXES: dict[str, Callable[[PodTarget], list[Edit]]] = {
    "NG101": add_pod_budget, "NG103": requests_to_limits, "NG104": round_cpu_up,
    "NG105": raise_request_to_aggregate, "NG114": lower_request_to_limit,
}


