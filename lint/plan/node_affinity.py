"""NodeAffinity: spec.nodeSelector and spec.affinity.nodeAffinity.

* k8s.io/component-helpers scheduling/corev1/nodeaffinity/nodeaffinity.go:
  GetRequiredNodeAffinity(pod).Match(node): every nodeSelector label equal, and, when
  requiredDuringSchedulingIgnoredDuringExecution is set, any one of its nodeSelectorTerms
  matches (a term matches when all its matchExpressions match the node's labels and all its
  matchFields match the node's fields, `metadata.name` the only field; an empty term matches
  nothing). Operators (k8s.io/apimachinery labels/selector.go): In, NotIn, Exists, DoesNotExist,
  Gt and Lt (integers; a label that is not one does not match). NotIn and DoesNotExist match a
  node without the label.
* kubernetes/kubernetes@00d3750 pkg/scheduler/framework/plugins/nodeaffinity/node_affinity.go:
  Filter ("node(s) didn't match Pod's node affinity/selector"); Score sums the weights of the
  preferredDuringSchedulingIgnoredDuringExecution terms the node matches; NormalizeScore is
  DefaultNormalizeScore (not reversed).
"""
from __future__ import annotations

from typing import Any, Mapping

from numaguard.lint.plan.pods import PodShape
from numaguard.lint.plan.taints import default_normalize

REASON = "node(s) didn't match Pod's node affinity/selector"
HOSTNAME = "kubernetes.io/hostname"


def _as_list(value: Any) -> list:
    return value if isinstance(value, list) else []


def _node_affinity(shape: PodShape) -> dict:
    found = shape.affinity.get("nodeAffinity")
    return found if isinstance(found, dict) else {}


def required_terms(shape: PodShape) -> list[dict] | None:
    required = _node_affinity(shape).get("requiredDuringSchedulingIgnoredDuringExecution")
    if not isinstance(required, dict):
        return None
    return [t for t in _as_list(required.get("nodeSelectorTerms")) if isinstance(t, dict)]


def preferred_terms(shape: PodShape) -> list[tuple[int, dict]]:
    out = []
    for entry in _as_list(_node_affinity(shape).get("preferredDuringSchedulingIgnoredDuringExecution")):
        if isinstance(entry, dict) and isinstance(entry.get("preference"), dict):
            weight = entry.get("weight")
            if isinstance(weight, int) and weight:
                out.append((weight, entry["preference"]))
    return out


def requirement_matches(requirement: Mapping, values: Mapping[str, str]) -> bool:
    key, operator = requirement.get("key"), requirement.get("operator")
    wanted = [str(v) for v in _as_list(requirement.get("values"))]
    present = key in values
    if operator == "In":
        return present and values[key] in wanted
    if operator == "NotIn":
        return not present or values[key] not in wanted
    if operator == "Exists":
        return present
    if operator == "DoesNotExist":
        return not present
    if operator in ("Gt", "Lt") and present and len(wanted) == 1:
        try:
            have, bound = int(values[key]), int(wanted[0])
        except ValueError:
            return False
        return have > bound if operator == "Gt" else have < bound
    return False


def term_matches(term: Mapping, labels: Mapping[str, str], name: str) -> bool:
    expressions = _as_list(term.get("matchExpressions"))
    fields = _as_list(term.get("matchFields"))
    if not expressions and not fields:
        return False
    return (all(isinstance(r, dict) and requirement_matches(r, labels) for r in expressions)
            and all(isinstance(r, dict) and r.get("key") == "metadata.name"
                    and requirement_matches(r, {"metadata.name": name}) for r in fields))


def matches(shape: PodShape, labels: Mapping[str, str], name: str) -> bool:
    """GetRequiredNodeAffinity(pod).Match(node)."""
    if any(labels.get(k) != v for k, v in shape.node_selector.items()):
        return False
    terms = required_terms(shape)
    return terms is None or any(term_matches(t, labels, name) for t in terms)


def preferred_score(shape: PodShape, labels: Mapping[str, str], name: str) -> int:
    return sum(weight for weight, term in preferred_terms(shape) if term_matches(term, labels, name))


def names_node(shape: PodShape) -> bool:
    """Does the pod's node affinity or selector read the node's name (matchFields
    metadata.name or the hostname label)? Then nodes cannot be judged by their shape alone."""
    if HOSTNAME in shape.node_selector:
        return True
    terms = (required_terms(shape) or []) + [t for _, t in preferred_terms(shape)]
    return any(_as_list(t.get("matchFields")) or any(isinstance(r, dict) and r.get("key") == HOSTNAME
                                                     for r in _as_list(t.get("matchExpressions")))
               for t in terms)


def normalize(scores: list[int]) -> list[int]:
    return default_normalize(scores, reverse=False)


__all__ = ["matches", "preferred_score", "names_node", "normalize", "term_matches",
           "requirement_matches", "REASON", "HOSTNAME"]
