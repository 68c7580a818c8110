"""InterPodAffinity, for terms whose topologyKey is kubernetes.io/hostname (one node, one
domain): the topology keys that span nodes (zones, racks) are not modelled, and a plan that
meets one says so (`PodTerms.unmodelled`).

kubernetes/kubernetes pkg/scheduler/framework/plugins/interpodaffinity (filtering.go read at
007f7ae, scoring.go; the term matching in pkg/scheduler/framework/types.go AffinityTerm.Matches):

* Filter, in its order: one of the pod's required affinity terms matches no pod on the node
  ("node(s) didn't match pod affinity rules"), unless no pod anywhere matches that term and the
  pod matches all its own terms (the first pod of a group may start it); its required
  anti-affinity terms match a pod on the node ("node(s) didn't match pod anti-affinity
  rules"); the node holds a pod whose required anti-affinity term matches the incoming pod
  ("node(s) didn't satisfy existing pods anti-affinity rules").
* Score: for each pod on the node, + weight of each incoming preferred affinity term it
  matches, - weight of each preferred anti-affinity term; + weight (- weight) of each of the
  existing pod's preferred affinity (anti-affinity) terms that the incoming pod matches, and
  hardPodAffinityWeight (1) for each of its required affinity terms that does. NormalizeScore
  maps min..max onto 0..100 (all 0 when they are equal).
* A term's namespaces: its `namespaces`, else (no namespaceSelector either) the pod's own; an
  empty namespaceSelector is every namespace; other selectors are read against the only
  namespace label numaguard knows, kubernetes.io/metadata.name. matchLabelKeys
  (mismatchLabelKeys) add `key in (notin) (the pod's value)` to the selector.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterable, Mapping, Sequence

from numaguard.lint.plan.node_affinity import HOSTNAME, requirement_matches
from numaguard.lint.plan.pods import PodShape

HARD_POD_AFFINITY_WEIGHT = 1            # InterPodAffinityArgs default
NAMESPACE_NAME_LABEL = "kubernetes.io/metadata.name"


@dataclass(frozen=True)
class Selector:
    match_labels: tuple[tuple[str, str], ...]
    expressions: tuple[tuple[str, str, tuple[str, ...]], ...]

    def matches(self, labels: Mapping[str, str]) -> bool:
        return (all(labels.get(k) == v for k, v in self.match_labels)
                and all(requirement_matches({"key": k, "operator": op, "values": list(vs)}, labels)
                        for k, op, vs in self.expressions))


@dataclass(frozen=True)
class Term:
    selector: Selector | None            # None: a null selector, which matches nothing
    namespaces: frozenset[str] | None    # None: every namespace
    namespace_selector: Selector | None  # matched against kubernetes.io/metadata.name
    weight: int = 0

    def matches(self, namespace: str, labels: Mapping[str, str]) -> bool:
        if self.selector is None or not self.selector.matches(labels):
            return False
        if self.namespaces is not None and namespace in self.namespaces:
            return True
        if self.namespace_selector is not None:
            return self.namespace_selector.matches({NAMESPACE_NAME_LABEL: namespace})
        return self.namespaces is None


@dataclass(frozen=True)
class PodTerms:
    required_affinity: tuple[Term, ...] = ()
    required_anti: tuple[Term, ...] = ()
    preferred_affinity: tuple[Term, ...] = ()
    preferred_anti: tuple[Term, ...] = ()
    unmodelled: tuple[str, ...] = ()     # topology keys of terms left out

    @property
    def any(self) -> bool:
        return bool(self.required_affinity or self.required_anti or self.preferred_affinity
                    or self.preferred_anti)


def _as_list(value: Any) -> list:
    return value if isinstance(value, list) else []


def _selector(raw: Any, labels: Mapping[str, str] = {}, match_keys=(), mismatch_keys=()) -> Selector | None:
    if not isinstance(raw, dict):
        return None
    match_labels = tuple(sorted((str(k), str(v)) for k, v in (raw.get("matchLabels") or {}).items()))
    expressions = [(e.get("key"), e.get("operator"), tuple(str(v) for v in _as_list(e.get("values"))))
                   for e in _as_list(raw.get("matchExpressions")) if isinstance(e, dict)]
    expressions += [(k, "In", (labels[k],)) for k in match_keys if k in labels]
    expressions += [(k, "NotIn", (labels[k],)) for k in mismatch_keys if k in labels]
    return Selector(match_labels, tuple(expressions))


def _term(raw: Mapping, shape: PodShape, weight: int = 0) -> Term:
    namespaces = [str(n) for n in _as_list(raw.get("namespaces"))]
    ns_selector = raw.get("namespaceSelector")
    if not namespaces and ns_selector is None:
        names: frozenset[str] | None = frozenset({shape.namespace})
    elif isinstance(ns_selector, dict) and not ns_selector:
        names = None                      # {}: every namespace
    else:
        names = frozenset(namespaces)
    nss = _selector(ns_selector) if isinstance(ns_selector, dict) and ns_selector else None
    return Term(_selector(raw.get("labelSelector"), shape.labels, _as_list(raw.get("matchLabelKeys")),
                          _as_list(raw.get("mismatchLabelKeys"))), names, nss, weight)


def pod_terms(shape: PodShape) -> PodTerms:
    """The pod's (anti-)affinity terms by kubernetes.io/hostname."""
    parts: dict[str, list[Term]] = {"required_affinity": [], "required_anti": [],
                                    "preferred_affinity": [], "preferred_anti": []}
    unmodelled: list[str] = []
    for field_name, prefix in (("podAffinity", "affinity"), ("podAntiAffinity", "anti")):
        block = shape.affinity.get(field_name)
        if not isinstance(block, dict):
            continue
        for raw in _as_list(block.get("requiredDuringSchedulingIgnoredDuringExecution")):
            _add(parts[f"required_{prefix}"], unmodelled, raw, shape, 0)
        for entry in _as_list(block.get("preferredDuringSchedulingIgnoredDuringExecution")):
            if isinstance(entry, dict) and isinstance(entry.get("weight"), int):
                _add(parts[f"preferred_{prefix}"], unmodelled, entry.get("podAffinityTerm"), shape,
                     entry["weight"])
    return PodTerms(**{k: tuple(v) for k, v in parts.items()}, unmodelled=tuple(dict.fromkeys(unmodelled)))


def _add(into: list[Term], unmodelled: list[str], raw: Any, shape: PodShape, weight: int) -> None:
    if not isinstance(raw, dict):
        return
    key = raw.get("topologyKey")
    if key != HOSTNAME:
        unmodelled.append(str(key))
        return
    into.append(_term(raw, shape, weight))


@dataclass(frozen=True)
class Identity:
    """What the plugin reads of a pod already placed: where it is, its labels, its terms."""

    namespace: str
    labels: Mapping[str, str]
    terms: PodTerms


def filter_reason(incoming: Identity, residents: Mapping[int, int], identities: Sequence[Identity],
                  everywhere: Mapping[int, int]) -> str | None:
    """Filter's reason, checks in its order; `residents`: identity id -> pods of it on the node;
    `everywhere`: the same over the pool."""
    terms = incoming.terms

    def any_on(term: Term, pods: Mapping[int, int]) -> bool:
        return any(count and term.matches(identities[i].namespace, identities[i].labels) for i, count in pods.items())

    for term in terms.required_affinity:
        if not any_on(term, residents) and not (
                not any_on(term, everywhere)
                and all(t.matches(incoming.namespace, incoming.labels) for t in terms.required_affinity)):
            return "node(s) didn't match pod affinity rules"
    if any(any_on(term, residents) for term in terms.required_anti):
        return "node(s) didn't match pod anti-affinity rules"
    for ident, count in residents.items():
        if count and any(t.matches(incoming.namespace, incoming.labels) for t in identities[ident].terms.required_anti):
            return "node(s) didn't satisfy existing pods anti-affinity rules"
    return None


def raw_score(incoming: Identity, residents: Mapping[int, int], identities: Sequence[Identity]) -> int:
    score = 0
    for ident, count in residents.items():
        if not count:
            continue
        other = identities[ident]
        for term in incoming.terms.preferred_affinity:
            score += count * term.weight * term.matches(other.namespace, other.labels)
        for term in incoming.terms.preferred_anti:
            score -= count * term.weight * term.matches(other.namespace, other.labels)
        for term in other.terms.preferred_affinity:
            score += count * term.weight * term.matches(incoming.namespace, incoming.labels)
        for term in other.terms.preferred_anti:
            score -= count * term.weight * term.matches(incoming.namespace, incoming.labels)
        for term in other.terms.required_affinity:
            score += count * HARD_POD_AFFINITY_WEIGHT * term.matches(incoming.namespace, incoming.labels)
    return score


def normalize(scores: Iterable[int]) -> list[int]:
    scores = list(scores)
    low, high = min(scores, default=0), max(scores, default=0)
    if high == low:
        return [0 for _ in scores]
    return [int(100 * (s - low) / (high - low)) for s in scores]


__all__ = ["PodTerms", "Identity", "Term", "pod_terms", "filter_reason", "raw_score", "normalize"]
