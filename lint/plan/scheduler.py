"""One scheduling cycle: filter the nodes, score the feasible ones, pick the best, as
kube-scheduler's default profile does, or the topology-aware profile that adds the
scheduler-plugins NodeResourceTopologyMatch plugin.

* Plugins and weights: kubernetes/kubernetes@01db4ae pkg/scheduler/apis/config/v1/
  default_plugins.go (TaintToleration 3, NodeAffinity 2, NodeResourcesFit 1, PodTopologySpread
  2, InterPodAffinity 2, NodeResourcesBalancedAllocation 1, ImageLocality 1). The
  topology-aware profile is scheduler-plugins' manifests/noderesourcetopology/
  scheduler-configmap.yaml: the defaults plus NodeResourceTopologyMatch through multiPoint,
  whose score weight is then 1 (a multiPoint score plugin without a weight gets 1,
  pkg/scheduler/framework/runtime/framework.go).
* Filters run in the profile's order (NodeUnschedulable, TaintToleration, NodeAffinity,
  NodeResourcesFit, InterPodAffinity, then NodeResourceTopologyMatch) and a node's first
  failure is its reason; with no feasible node the message is FitError's: "0/N nodes are
  available: " and the reasons counted, sorted (pkg/scheduler/framework/types.go).
* Scores: each plugin's 0-100 score (NormalizeScore for NodeAffinity, TaintToleration and
  InterPodAffinity over the feasible nodes) times its weight, summed. PodTopologySpread and
  ImageLocality are not modelled (no topology spread constraints, no cached images), nor are
  plugins that never tell the plan's nodes apart.
* selectHost (pkg/scheduler/schedule_one.go, 003b446): the highest total wins, ties broken
  uniformly at random (reservoir sampling over the scored nodes). Here every feasible node is
  scored, as with percentageOfNodesToScore: 100; the scheduler's adaptive default scores a
  rotating subset of pools above 100 nodes, which lint/README.md's "Sizing a pool" states as a limit.
"""
from __future__ import annotations

import random
from collections import Counter
from dataclasses import dataclass, field
from typing import Iterable

from numaguard.lint.plan import balanced, fit, node_affinity, nrt, pod_affinity, taints
from numaguard.lint.plan.nodes import PlanNode
from numaguard.lint.plan.pod_affinity import Identity
from numaguard.lint.plan.pods import CPU, PodShape
from numaguard.lint.plan.pool import Pool

DEFAULT_WEIGHTS = {"TaintToleration": 3, "NodeAffinity": 2, "NodeResourcesFit": 1,
                   "InterPodAffinity": 2, "NodeResourcesBalancedAllocation": 1}
NRT_WEIGHT = 1
SCHEDULERS = ("default", "topology-aware")


@dataclass(frozen=True)
class Profile:
    name: str = "default"
    nrt_strategy: str = "LeastAllocated"          # topology-aware only

    @property
    def topology_aware(self) -> bool:
        return self.name == "topology-aware"


@dataclass
class Decision:
    node: PlanNode | None
    feasible: int = 0
    tied: list[PlanNode] = field(default_factory=list)      # the nodes sharing the best score
    score: int = 0
    reasons: Counter = field(default_factory=Counter)       # filter reason -> nodes (no node fits)
    total: int = 0

    def message(self) -> str:
        """FitError.Error() for an unschedulable pod."""
        parts = sorted(f"{n} {reason}" for reason, n in self.reasons.items())
        return f"0/{self.total} nodes are available: " + ", ".join(parts) + "."


@dataclass
class _Candidate:
    nodes: list[PlanNode]
    node: PlanNode
    raw: dict[str, int]


class Cycle:
    """The scheduling of one pod on `pool` (its filters and scores are computed once per
    bucket, or per node for a pod whose node affinity reads node names)."""

    def __init__(self, profile: Profile, pool: Pool, shape: PodShape, identity: int) -> None:
        self.profile, self.pool, self.shape = profile, pool, shape
        self.identity = identity
        self.incoming: Identity = pool.identities[identity]
        self.per_node = node_affinity.names_node(shape)
        self._static: dict[int, tuple[str | None, int, int]] = {}

    # -- filters ------------------------------------------------------------------------
    def reason(self, node: PlanNode) -> str | None:
        """The node's first failing filter, None when it passes them all."""
        static = self._static_reason(node)
        if static:
            return static
        lacking = fit.insufficient(self.shape, node)
        if lacking:
            return ", ".join(lacking)
        if self.pool.identities_matter:
            found = pod_affinity.filter_reason(self.incoming, node.residents, self.pool.identities,
                                               self.pool.everywhere)
            if found:
                return found
        if self.profile.topology_aware:
            return nrt.filter_reason(self.shape, node.topology())
        return None

    def _static_reason(self, node: PlanNode) -> str | None:
        """NodeUnschedulable, TaintToleration and NodeAffinity: they read the template only."""
        if self.per_node:
            return self._template_checks(node)[0]
        found = self._static.get(node.template)
        if found is None:
            found = self._static[node.template] = self._template_checks(node)
        return found[0]

    def _template_checks(self, node: PlanNode) -> tuple[str | None, int, int]:
        shape = self.shape
        reason = (taints.unschedulable(node.unschedulable, shape.tolerations)
                  or taints.untolerated_taint(node.taints, shape.tolerations)
                  or (None if node_affinity.matches(shape, node.labels, node.name) else node_affinity.REASON))
        return (reason, taints.intolerable_prefer_no_schedule(node.taints, shape.tolerations),
                node_affinity.preferred_score(shape, node.labels, node.name))

    # -- scores ---------------------------------------------------------------------------
    def _raw(self, node: PlanNode) -> dict[str, int]:
        _reason, taint_count, affinity = (self._template_checks(node) if self.per_node
                                          else self._static[node.template])
        raw = {"TaintToleration": taint_count, "NodeAffinity": affinity,
               "NodeResourcesFit": fit.least_allocated(self.shape, node),
               "NodeResourcesBalancedAllocation": 0 if balanced.skipped(self.shape)
               else balanced.balanced_allocation(self.shape, node)}
        if self.pool.identities_matter:
            raw["InterPodAffinity"] = pod_affinity.raw_score(self.incoming, node.residents, self.pool.identities)
        if self.profile.topology_aware:
            raw["NodeResourceTopologyMatch"] = nrt.score(self.shape, node.topology(), self.profile.nrt_strategy)
        return raw

    def candidates(self, only: Iterable[PlanNode] | None = None) -> tuple[list[_Candidate], Counter]:
        """The feasible candidates, and the filter reasons of the rest (counted per node)."""
        feasible, reasons = [], Counter()
        if only is not None or self.per_node:
            groups = [[n] for n in (only if only is not None else self.pool.nodes.values())]
        else:
            groups = [b.members for b in self.pool.with_cpu(self.shape.requests.get(CPU, 0))]
        for nodes in groups:
            reason = self.reason(nodes[0])
            if reason is None:
                feasible.append(_Candidate(nodes, nodes[0], self._raw(nodes[0])))
            else:
                for part in reason.split(", "):
                    reasons[part] += len(nodes)
        return feasible, reasons

    def decide(self, rng: random.Random, only: Iterable[PlanNode] | None = None) -> Decision:
        only = list(only) if only is not None else None
        feasible, reasons = self.candidates(only)
        total = len(only) if only is not None else len(self.pool.nodes)
        if not feasible:
            if only is None and not self.per_node:
                reasons = self._all_reasons()
            return Decision(None, reasons=reasons, total=total)
        totals = self._totals(feasible)
        best = max(totals)
        tied = [n for c, t in zip(feasible, totals) if t == best for n in c.nodes]
        chosen = tied[rng.randrange(len(tied))]
        return Decision(chosen, feasible=sum(len(c.nodes) for c in feasible), tied=tied, score=best, total=total)

    def _all_reasons(self) -> Counter:
        """Every node's reason, for the FitError message (the index skipped the fullest)."""
        reasons = Counter()
        for bucket in self.pool.all_buckets():
            for part in (self.reason(bucket.node) or "").split(", "):
                if part:
                    reasons[part] += len(bucket.members)
        return reasons

    def _totals(self, feasible: list[_Candidate]) -> list[int]:
        weights = dict(DEFAULT_WEIGHTS)
        if self.profile.topology_aware:
            weights["NodeResourceTopologyMatch"] = NRT_WEIGHT
        columns = {name: [c.raw.get(name, 0) for c in feasible] for name in weights}
        columns["TaintToleration"] = taints.default_normalize(columns["TaintToleration"], reverse=True)
        columns["NodeAffinity"] = node_affinity.normalize(columns["NodeAffinity"])
        columns["InterPodAffinity"] = pod_affinity.normalize(columns["InterPodAffinity"])
        return [sum(weights[name] * columns[name][i] for name in weights) for i in range(len(feasible))]


__all__ = ["Profile", "Decision", "Cycle", "SCHEDULERS", "DEFAULT_WEIGHTS"]
