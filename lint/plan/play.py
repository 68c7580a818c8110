"""One scenario: build the pool, put today's pods back where they run, then place every replica
of every workload, the scheduler choosing the node and the kubelet admitting or rejecting it.

The order (documented in lint/README.md, "Sizing a pool"): DaemonSets first, one pod on each node that
takes it (their controller pins each pod to its node); then the workloads in the order given,
each replica with its replacements to the end before the next (a controller creates its
replicas together, and the scheduler's queue takes them oldest first).

A kubelet rejection (TopologyAffinityError, SMTAlignmentError, OutOf<resource>...) fails the
pod; its controller creates a replacement, which the scheduler places again. Nothing the
scheduler sees changed (a failed pod holds nothing), so it picks among the same best-scored
nodes again, at random. The replica is:
* `placed` when a node admits it;
* `unschedulable` when no node passes the filters (the pod stays Pending; nothing is rejected);
* `stuck` when every node sharing the best score has rejected it: the scheduler would send its
  replacements there forever (kubernetes/kubernetes#84869, "runaway pod creation");
* `gave-up` after `max_attempts` rejections (`--max-attempts`, default 100), when nodes that
  would admit it tie with many that reject it.
The count of rejections is the runaway: how many failed pods the controller leaves behind.
"""
from __future__ import annotations

import json
import random
from dataclasses import dataclass, field
from typing import Any, Iterable

from numaguard.lint.numa.admission import KubeletStartupError, NodeState, build_state
from numaguard.lint.plan import node_affinity, taints
from numaguard.lint.plan.model import (DEFAULT_MAX_ATTEMPTS, GAVE_UP, PLACED, STUCK, UNSCHEDULABLE, Attempt,
                                       LiveNode, PoolSpec, ReplicaOutcome, Workload)
from numaguard.lint.plan.nodes import PlanNode, Rejection, scheduler_allocatable
from numaguard.lint.plan.pod_affinity import Identity, pod_terms
from numaguard.lint.plan.pods import PodShape, pod_shape
from numaguard.lint.plan.pool import Pool
from numaguard.lint.plan.scheduler import Cycle, Profile

HOSTNAME = "kubernetes.io/hostname"


@dataclass(frozen=True)
class Scenario:
    """Everything one play needs (picklable, for --jobs workers)."""

    pools: tuple[PoolSpec, ...] = ()
    live: tuple[LiveNode, ...] = ()
    workloads: tuple[Workload, ...] = ()
    added: tuple[tuple[str, int], ...] = ()      # (live pool, nodes added to it)

    def with_count(self, pool: str, count: int) -> "Scenario":
        """The same scenario with `count` nodes in `pool` (for a live pool: `count` nodes added)."""
        from dataclasses import replace
        if any(p.name == pool for p in self.pools):
            return replace(self, pools=tuple(replace(p, count=count) if p.name == pool else p for p in self.pools))
        return replace(self, added=tuple((n, c) for n, c in self.added if n != pool) + ((pool, count),))


@dataclass
class Run:
    """The outcome of one play."""

    profile: Profile
    seed: int
    pool: Pool
    outcomes: dict[str, list[ReplicaOutcome]] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)

    @property
    def clean(self) -> bool:
        """Every replica landed without a kubelet rejection."""
        return all(o.status == PLACED and not o.rejections for outs in self.outcomes.values() for o in outs)

    def rejections(self) -> int:
        return sum(len(o.rejections) for outs in self.outcomes.values() for o in outs)


# -- building the pool ------------------------------------------------------------------------

class _Templates:
    def __init__(self) -> None:
        self.ids: dict[str, int] = {}
        self.topologies: dict[int, str] = {}

    def of(self, pool: str | None, labels: dict, node_taints: Iterable, unschedulable: bool,
           allocatable: dict, topology: Any, kubelet_config: Any) -> int:
        shape = self.topologies.get(id(topology))
        if shape is None:
            shape = self.topologies[id(topology)] = repr(topology)
        key = json.dumps([pool, {k: v for k, v in labels.items() if k != HOSTNAME}, list(node_taints),
                          unschedulable, allocatable, shape, kubelet_config], sort_keys=True, default=str)
        return self.ids.setdefault(key, len(self.ids))


def _empty_state(topology: Any, kubelet_config: dict | None, name: str, notes: list[str]) -> NodeState:
    try:
        return build_state(topology, kubelet_config or {}, name=name)
    except KubeletStartupError as exc:
        notes.append(f"the kubelet configuration would not start a kubelet ({exc}); simulated without it")
        return build_state(topology, {}, name=name)


def pool_nodes(spec: PoolSpec, count: int, templates: _Templates, *, prefix: str | None = None,
               added: bool = False) -> list[PlanNode]:
    """`count` empty nodes of a pool, named <pool>-<n> (or <prefix><n>)."""
    notes = list(spec.node.notes)
    empty = _empty_state(spec.node.topology, spec.node.kubelet_config, spec.name, notes)
    allocatable = scheduler_allocatable(empty)
    labels = {"kubernetes.io/os": "linux", **spec.labels}
    template = templates.of(spec.name, labels, spec.taints, False, allocatable, spec.node.topology,
                            spec.node.kubelet_config)
    width = len(str(max(count, 1)))
    out = []
    for i in range(count):
        name = f"{prefix or spec.name + '-'}{i + 1:0{width}d}"
        # the empty state is shared, copied by a node before its first change (PlanNode.shared)
        out.append(PlanNode(name, spec.name, {**labels, HOSTNAME: name}, tuple(spec.taints), dict(allocatable),
                            empty, template, notes=list(notes), added=added, shared=True))
    return out


def live_node(node: LiveNode, templates: _Templates) -> PlanNode:
    notes = list(node.notes)
    state = _empty_state(node.topology, node.kubelet_config, node.name, notes)
    template = templates.of(node.pool, node.labels, node.taints, node.unschedulable, node.allocatable,
                            node.topology, node.kubelet_config)
    return PlanNode(node.name, node.pool, {**node.labels, HOSTNAME: node.labels.get(HOSTNAME, node.name)},
                    tuple(node.taints), dict(node.allocatable), state, template,
                    unschedulable=node.unschedulable, notes=notes)


class Shapes:
    """PodShapes by spec (the replicas of a controller share one)."""

    def __init__(self) -> None:
        self.by_key: dict[str, PodShape] = {}

    def of(self, spec: dict, namespace: str, labels: dict) -> PodShape:
        key = json.dumps([{k: v for k, v in spec.items() if k != "nodeName"}, namespace, labels],
                         sort_keys=True, default=str)
        found = self.by_key.get(key)
        if found is None:
            found = self.by_key[key] = pod_shape({k: v for k, v in spec.items() if k != "nodeName"},
                                                 namespace=namespace, labels=labels)
        return found


def identity_of(pool: Pool, shape: PodShape) -> int:
    return pool.identity(Identity(shape.namespace, shape.labels, pod_terms(shape)))


def build(scenario: Scenario, profile: Profile) -> tuple[Pool, list[str]]:
    """The pool with today's pods back on their nodes (replayed oldest first)."""
    templates, notes = _Templates(), []
    nodes = [live_node(n, templates) for n in scenario.live]
    specs = {p.name: p for p in scenario.pools}
    for pool_name, count in scenario.added:
        base = specs.get(pool_name)
        if base is None:
            first = next(n for n in scenario.live if n.pool == pool_name)
            base = PoolSpec(pool_name, _LiveShape(first), count, dict(first.labels), first.taints)
        nodes += pool_nodes(base, count, templates, prefix=f"{pool_name}-new-", added=True)
    for spec in scenario.pools:
        nodes += pool_nodes(spec, spec.count, templates)
    pool = Pool(zones=profile.topology_aware)
    shapes = Shapes()
    for w in scenario.workloads:       # first: whether pod affinity is in play decides how nodes are indexed
        identity_of(pool, w.shape)
    for node, live in zip(nodes, scenario.live):
        for pod in live.pods:
            shape = shapes.of(pod.spec, pod.namespace, pod.labels)
            ident = identity_of(pool, shape)
            placement = node.admit(shape, pod.name, pod.owner, ident, pool.kubelets)
            if not placement.admitted:
                notes.append(f"{node.name}: {pod.name} runs there, but a replay of the node's pods oldest "
                             f"first would reject it ({placement.reason}); counted as running")
                from numaguard.lint.plan.nodes import Resident
                node.account(Resident(pod.name, pod.name, pod.owner, ident, shape, placement))
            pool.counted(ident, 1)
    for node in nodes:
        pool.add(node)
    return pool, notes


@dataclass(frozen=True)
class _LiveShape:
    """A live node standing in for the description of the nodes added to its pool."""

    live: LiveNode

    @property
    def topology(self):
        return self.live.topology

    @property
    def kubelet_config(self):
        return self.live.kubelet_config

    @property
    def notes(self) -> tuple[str, ...]:
        return (f"a copy of {self.live.name} (added by the plan)",)


# -- placing ----------------------------------------------------------------------------------

def place(pool: Pool, profile: Profile, workload: Workload, pod: str, rng: random.Random, *,
          max_attempts: int = DEFAULT_MAX_ATTEMPTS, only: list[PlanNode] | None = None) -> ReplicaOutcome:
    """Schedule one replica, and its replacements while the kubelet rejects them."""
    ident = identity_of(pool, workload.shape)
    decision = Cycle(profile, pool, workload.shape, ident).decide(rng, only)
    outcome = ReplicaOutcome(pod, UNSCHEDULABLE)
    if decision.node is None:
        outcome.message = decision.message()
        return outcome
    tied = {n.name for n in decision.tied}
    refused: dict[str, Attempt] = {}
    node = decision.node
    while True:
        attempt = refused.get(node.name)
        if attempt is None:
            placement = node.admit(workload.shape, pod, workload.name, ident, pool.kubelets)
            if placement.admitted:
                pool.changed(node)
                pool.counted(ident, 1)
                outcome.status, outcome.node = PLACED, node.name
                return outcome
            attempt = refused[node.name] = Attempt(node.name, placement.reason or "", placement.message or "")
        outcome.rejections.append(attempt)
        node.rejections.append(Rejection(pod if len(outcome.rejections) == 1 else f"{pod} (replacement "
                                         f"{len(outcome.rejections) - 1})", workload.name, attempt.reason,
                                         attempt.message))
        if len(outcome.rejections) >= max_attempts:
            outcome.status = GAVE_UP
            outcome.message = (f"{len(outcome.rejections)} rejections (--max-attempts); "
                               f"{len(tied)} node(s) share the best score, {len(refused)} rejected it")
            return outcome
        if len(tied.intersection(refused)) == len(tied):
            outcome.status = STUCK
            outcome.message = (f"every node the scheduler ranks first ({_names(decision.tied)}) rejects it: its "
                               "controller would keep creating replacements (kubernetes/kubernetes#84869)")
            return outcome
        node = decision.tied[rng.randrange(len(decision.tied))]


def _names(nodes: list[PlanNode], shown: int = 3) -> str:
    names = sorted(n.name for n in nodes)
    more = f" and {len(names) - shown} more" if len(names) > shown else ""
    return ", ".join(names[:shown]) + more


def daemon_nodes(pool: Pool, shape: PodShape) -> list[PlanNode]:
    """The nodes a DaemonSet runs a pod on: those its node affinity and selector match and
    whose NoSchedule/NoExecute taints it tolerates (pkg/controller/daemon/daemon_controller.go
    nodeShouldRunDaemonPod)."""
    return [n for n in sorted(pool.nodes.values(), key=lambda n: n.name)
            if node_affinity.matches(shape, n.labels, n.name) and not taints.untolerated_taint(n.taints, shape.tolerations)]


def play(scenario: Scenario, profile: Profile, seed: int = 0, *,
         max_attempts: int = DEFAULT_MAX_ATTEMPTS) -> Run:
    pool, notes = build(scenario, profile)
    run = Run(profile, seed, pool, notes=notes)
    rng = random.Random(seed)
    for workload in sorted(scenario.workloads, key=lambda w: not w.per_node):
        run.outcomes[workload.name] = place_workload(pool, profile, workload, rng, max_attempts=max_attempts)
    return run


def place_workload(pool: Pool, profile: Profile, workload: Workload, rng: random.Random, *,
                   max_attempts: int = DEFAULT_MAX_ATTEMPTS, first: int = 0) -> list[ReplicaOutcome]:
    if workload.per_node:
        return [place(pool, profile, workload, f"{workload.namespace}/{workload.object_name}-{node.name}", rng,
                      max_attempts=max_attempts, only=[node])
                for node in daemon_nodes(pool, workload.shape)]
    return [place(pool, profile, workload, workload.pod_name(first + i), rng, max_attempts=max_attempts)
            for i in range(workload.replicas)]


__all__ = ["Scenario", "Run", "play", "place", "place_workload", "build", "pool_nodes", "Shapes", "daemon_nodes"]
