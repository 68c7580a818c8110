"""TaintToleration and NodeUnschedulable: taints keep pods off nodes unless tolerated.

* k8s.io/api core/v1 toleration.go ToleratesTaint: the toleration's effect (when set) and key
  (when set) must equal the taint's; operator Exists matches any value, Equal (the default)
  the same value.
* kubernetes/kubernetes pkg/scheduler/framework/plugins/tainttoleration/taint_toleration.go
  (read at 007f7ae; unchanged since in what it decides): Filter rejects a node with a
  NoSchedule or NoExecute taint no toleration matches ("node(s) had untolerated taint
  {key: value}"); Score counts the PreferNoSchedule taints not tolerated by the tolerations
  whose effect is PreferNoSchedule or empty, and NormalizeScore reverses the counts onto 0-100
  (pkg/scheduler/framework/plugins/helper/normalize_score.go DefaultNormalizeScore).
* pkg/scheduler/framework/plugins/nodeunschedulable/node_unschedulable.go: a cordoned node
  (spec.unschedulable) takes only pods tolerating node.kubernetes.io/unschedulable:NoSchedule.
"""
from __future__ import annotations

from typing import Iterable, Mapping

DO_NOT_SCHEDULE = ("NoSchedule", "NoExecute")
UNSCHEDULABLE_TAINT = {"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule"}


def tolerates(toleration: Mapping, taint: Mapping) -> bool:
    effect = toleration.get("effect") or ""
    if effect and effect != taint.get("effect"):
        return False
    key = toleration.get("key") or ""
    if key and key != taint.get("key"):
        return False
    operator = toleration.get("operator") or "Equal"
    if operator == "Exists":
        return True
    if operator == "Equal":
        return (toleration.get("value") or "") == (taint.get("value") or "")
    return False


def tolerated(taint: Mapping, tolerations: Iterable[Mapping]) -> bool:
    return any(tolerates(t, taint) for t in tolerations)


def untolerated_taint(taints: Iterable[Mapping], tolerations: Iterable[Mapping]) -> str | None:
    """Filter's reason for the first NoSchedule/NoExecute taint not tolerated, else None."""
    tolerations = tuple(tolerations)
    for taint in taints:
        if taint.get("effect") in DO_NOT_SCHEDULE and not tolerated(taint, tolerations):
            return f"node(s) had untolerated taint {{{taint.get('key')}: {taint.get('value') or ''}}}"
    return None


def unschedulable(node_unschedulable: bool, tolerations: Iterable[Mapping]) -> str | None:
    if node_unschedulable and not tolerated(UNSCHEDULABLE_TAINT, tolerations):
        return "node(s) were unschedulable"
    return None


def intolerable_prefer_no_schedule(taints: Iterable[Mapping], tolerations: Iterable[Mapping]) -> int:
    """Score's raw count (lower is better)."""
    relevant = tuple(t for t in tolerations if (t.get("effect") or "") in ("", "PreferNoSchedule"))
    return sum(1 for taint in taints
               if taint.get("effect") == "PreferNoSchedule" and not tolerated(taint, relevant))


def default_normalize(scores: list[int], *, reverse: bool) -> list[int]:
    """helper.DefaultNormalizeScore(MaxNodeScore, reverse, scores)."""
    highest = max(scores, default=0)
    if highest == 0:
        return [100 if reverse else 0 for _ in scores]
    out = [100 * s // highest for s in scores]
    return [100 - s for s in out] if reverse else out


__all__ = ["tolerates", "tolerated", "untolerated_taint", "unschedulable",
           "intolerable_prefer_no_schedule", "default_normalize"]
