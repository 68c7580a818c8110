"""`--surge NAME`: a rolling update of one workload on the played pool. Does the new version fit
beside the old one, and which of its pods does the kubelet reject?

* Deployment (and Argo Rollout canary, CloneSet, which roll the same way):
  kubernetes/kubernetes pkg/controller/deployment/rolling.go. maxSurge and maxUnavailable
  resolve against the replicas (deployment/util ResolveFenceposts: a percentage of surge rounds
  up, of unavailability down; both 0 makes unavailability 1; defaults 25% and 25%). Each round
  the new ReplicaSet scales up to at most replicas + maxSurge pods in all
  (NewRSNewReplicas), its pods are placed (a kubelet rejection counted as in the play, a pod
  that does not land stays unavailable), then the old pods are scaled down while
  available pods stay at least replicas - maxUnavailable (reconcileOldReplicaSets: at most
  all pods - minAvailable - the new pods not available). The pods scaled down first are those
  sharing a node with the most pods of their ReplicaSet, newest first
  (pkg/controller/replicaset/replica_set.go getPodsToDelete, controller_utils.go
  ActivePodsWithRanks). A pod is available once the kubelet admits it (readiness and
  minReadySeconds are not modelled). The rollout stops when a round changes nothing.
* StatefulSet: pkg/controller/statefulset/stateful_set_control.go: pods are replaced from the
  highest ordinal down, maxUnavailable (default 1) at a time, each deleted before its new
  version is created under the same name; a new pod that does not land stops the rollout.

The old version is what the pool runs of the workload: the pods the play placed for it, or, on
a pool read from an audit snapshot, the running pods its controller owns.
"""
from __future__ import annotations

import math
import random
import re
from dataclasses import dataclass, field

from numaguard.lint.plan.model import DEFAULT_MAX_ATTEMPTS, PLACED, ReplicaOutcome, Workload
from numaguard.lint.plan.nodes import PlanNode, Resident
from numaguard.lint.plan.play import place
from numaguard.lint.plan.pool import Pool
from numaguard.lint.plan.scheduler import Profile

DEPLOYMENT_LIKE = ("Deployment", "Rollout", "CloneSet")
ROLLING_KINDS = DEPLOYMENT_LIKE + ("StatefulSet",)


class SurgeError(ValueError):
    """The workload cannot be rolled (a kind without a rolling update, a bad fencepost)."""


def resolve(value: str | int | None, replicas: int, default: str, *, round_up: bool) -> int:
    """intstr.GetScaledValueFromIntOrPercent for maxSurge (round up) / maxUnavailable (down)."""
    value = default if value is None else value
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    text = str(value)
    match = re.fullmatch(r"(\d+)%", text)
    if match:
        scaled = int(match[1]) * replicas / 100
        return math.ceil(scaled) if round_up else math.floor(scaled)
    if text.isdigit():
        return int(text)
    raise SurgeError(f"{text!r} is not an integer or a percentage")


@dataclass
class Round:
    new_pods: int                      # the new version's replicas after this round
    landed: int
    old_pods: int
    scaled_down: list[str] = field(default_factory=list)

    def as_dict(self) -> dict:
        return {"newReplicas": self.new_pods, "newAvailable": self.landed, "oldReplicas": self.old_pods,
                "scaledDown": self.scaled_down}


@dataclass
class Surge:
    workload: str
    max_surge: int
    max_unavailable: int
    rounds: list[Round] = field(default_factory=list)
    outcomes: list[ReplicaOutcome] = field(default_factory=list)
    complete: bool = False
    old_found: int = 0

    @property
    def rejections(self) -> int:
        return sum(len(o.rejections) for o in self.outcomes)

    def as_dict(self) -> dict:
        return {"workload": self.workload, "maxSurge": self.max_surge, "maxUnavailable": self.max_unavailable,
                "oldPods": self.old_found, "complete": self.complete, "rejections": self.rejections,
                "rounds": [r.as_dict() for r in self.rounds],
                "rejected": [o.as_dict() for o in self.outcomes if o.rejections or o.status != PLACED]}


def old_pods(pool: Pool, workload: Workload) -> list[tuple[PlanNode, Resident]]:
    """The pods of the workload's current version, oldest first: placed by the play (its
    name), or running in the snapshot (owned by its ReplicaSet <name>-<hash> or by itself)."""
    ns, name = workload.namespace, workload.object_name
    owners = re.compile(rf"(ReplicaSet {re.escape(ns)}/{re.escape(name)}-[a-z0-9]+|"
                        rf"{re.escape(workload.kind)} {re.escape(ns)}/{re.escape(name)})")
    found = []
    for node in sorted(pool.nodes.values(), key=lambda n: n.name):
        for resident in node.pods:
            if resident.workload == workload.name or owners.fullmatch(resident.workload):
                found.append((node, resident))
    return sorted(found, key=lambda pair: _ordinal(pair[1].label))


def runs_in(workload: Workload, live) -> bool:
    """Does a snapshot (its LiveNodes) run the workload: pods its ReplicaSet <name>-<hash>, or
    itself, owns?"""
    prefix = (f"ReplicaSet {workload.namespace}/{workload.object_name}-",
              f"{workload.kind} {workload.namespace}/{workload.object_name}")
    return any(p.owner.startswith(prefix) for n in live for p in n.pods)


def _ordinal(label: str) -> tuple:
    head, _, tail = label.rpartition("-")
    return (head, int(tail)) if tail.isdigit() else (label, -1)


def rollout(pool: Pool, profile: Profile, workload: Workload, rng: random.Random, *,
            max_attempts: int = DEFAULT_MAX_ATTEMPTS) -> Surge:
    if workload.kind not in ROLLING_KINDS:
        raise SurgeError(f"{workload.name}: a {workload.kind} has no rolling update numaguard models "
                         f"(it knows {', '.join(ROLLING_KINDS)})")
    surge_text, unavailable_text = workload.rollout or (None, None)
    if workload.kind == "StatefulSet":
        unavailable = max(resolve(unavailable_text, workload.replicas, "1", round_up=False), 1)
        return _statefulset(pool, profile, workload, unavailable, rng, max_attempts)
    surge = resolve(surge_text, workload.replicas, "25%", round_up=True)
    unavailable = resolve(unavailable_text, workload.replicas, "25%", round_up=False)
    if surge == 0 and unavailable == 0:
        unavailable = 1
    return _rolling(pool, profile, workload, surge, unavailable, rng, max_attempts)


def _rolling(pool: Pool, profile: Profile, workload: Workload, surge: int, unavailable: int,
             rng: random.Random, max_attempts: int) -> Surge:
    replicas = workload.replicas
    old = old_pods(pool, workload)
    result = Surge(workload.name, surge, unavailable, old_found=len(old))
    min_available = replicas - unavailable
    new_spec, landed, pending = 0, 0, []
    while True:
        changed = False
        up = min(replicas + surge - (len(old) + new_spec), replicas - new_spec)
        if up > 0:
            pending += [workload.pod_name(new_spec + i) + "-new" for i in range(up)]
            new_spec += up
            changed = True
        still = []
        for pod in pending:
            outcome = place(pool, profile, workload, pod, rng, max_attempts=max_attempts)
            result.outcomes.append(outcome)
            if outcome.status == PLACED:
                landed += 1
                changed = True
            else:
                still.append(pod)
        pending = still
        max_down = (len(old) + new_spec) - min_available - (new_spec - landed)
        down = min(max_down, len(old) + landed - min_available, len(old))
        victims = _victims(old, down) if down > 0 else []
        for node, resident in victims:
            _evict(pool, node, resident)
            old.remove((node, resident))
        result.rounds.append(Round(new_spec, landed, len(old), [r.label for _, r in victims]))
        if landed == replicas and not old:
            result.complete = True
            return result
        if not changed and not victims:
            return result


def _victims(old: list[tuple[PlanNode, Resident]], count: int) -> list[tuple[PlanNode, Resident]]:
    colocated: dict[str, int] = {}
    for node, _ in old:
        colocated[node.name] = colocated.get(node.name, 0) + 1
    ranked = sorted(enumerate(old), key=lambda item: (-colocated[item[1][0].name], -item[0]))
    return [pair for _, pair in ranked[:count]]


def _evict(pool: Pool, node: PlanNode, resident: Resident) -> None:
    node.evict(resident, pool.kubelets)
    pool.changed(node)
    pool.counted(resident.identity, -1)


def _statefulset(pool: Pool, profile: Profile, workload: Workload, unavailable: int, rng: random.Random,
                 max_attempts: int) -> Surge:
    old = {r.label: (n, r) for n, r in old_pods(pool, workload)}
    result = Surge(workload.name, 0, unavailable, old_found=len(old))
    ordinals = list(range(workload.replicas - 1, -1, -1))
    landed = 0
    for start in range(0, len(ordinals), unavailable):
        batch = ordinals[start:start + unavailable]
        gone = []
        for i in batch:
            pod = workload.pod_name(i)
            if pod in old:
                _evict(pool, *old.pop(pod))
                gone.append(pod)
        failed = False
        for i in batch:
            outcome = place(pool, profile, workload, workload.pod_name(i), rng, max_attempts=max_attempts)
            result.outcomes.append(outcome)
            landed += outcome.status == PLACED
            failed = failed or outcome.status != PLACED
        result.rounds.append(Round(workload.replicas, landed, len(old), gone))
        if failed:
            return result
    result.complete = True
    return result


__all__ = ["Surge", "SurgeError", "rollout", "resolve", "old_pods", "runs_in", "ROLLING_KINDS"]
