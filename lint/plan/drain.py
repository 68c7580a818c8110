"""`--drain K`: take nodes out of the played pool and place their pods again on the rest.

A drained node's pods are evicted (`kubectl drain`): DaemonSet pods go with the node, a pod no
controller owns is lost (the report names it), every other pod's controller makes a new one,
which the scheduler and the kubelets place as in the play (rejections and the runaway counted
the same way).

* Worst K: the node whose loss hurts most is taken out first, then the worst of the rest, and
  so on (a greedy sequence: each step plays the loss of every candidate on the pool as the
  earlier steps left it). Hurt is ranked by replicas that cannot land again (unschedulable,
  stuck or given up), then kubelet rejections, then pods displaced, then the node's name.
  Nodes of one template holding the same pods in the same order are one candidate.
* With a seed: K nodes drawn at random (seeded), taken out one after another.

The headroom is the number of nodes the pool can lose in that order with every displaced pod
placed again without a rejection.

Each candidate's loss is played with its own random stream (seeded by the plan's seed, the step
and the node's name), so `jobs` > 1 (candidates in other processes, `mapper`) gives the same
sequence as one process.
"""
from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Callable, Iterable

from numaguard.lint.plan.model import DEFAULT_MAX_ATTEMPTS, PLACED, ReplicaOutcome, Workload
from numaguard.lint.plan.play import Scenario, place, play
from numaguard.lint.plan.pool import Pool
from numaguard.lint.plan.scheduler import Profile

Mapper = Callable[[Callable, Iterable], Iterable]


@dataclass
class Loss:
    node: str
    displaced: int = 0
    lost: list[str] = field(default_factory=list)            # bare pods nobody recreates
    outcomes: list[ReplicaOutcome] = field(default_factory=list)

    @property
    def unplaced(self) -> int:
        return sum(1 for o in self.outcomes if o.status != PLACED)

    @property
    def rejections(self) -> int:
        return sum(len(o.rejections) for o in self.outcomes)

    @property
    def clean(self) -> bool:
        return not self.unplaced and not self.rejections and not self.lost

    def hurt(self) -> tuple:
        return (self.unplaced + len(self.lost), self.rejections, self.displaced)

    def as_dict(self) -> dict:
        return {"node": self.node, "displaced": self.displaced, "placedAgain": self.displaced - self.unplaced
                - len(self.lost), "unplaced": self.unplaced, "rejections": self.rejections, "lost": self.lost,
                "clean": self.clean, "pods": [o.as_dict() for o in self.outcomes if o.status != PLACED or o.rejections]}


def drain_node(pool: Pool, profile: Profile, name: str, rng: random.Random, *,
               max_attempts: int = DEFAULT_MAX_ATTEMPTS) -> Loss:
    """Take `name` out of `pool` (changed in place) and place its pods again."""
    node = pool.nodes[name]
    pool.remove(node)
    loss = Loss(name)
    for resident in list(node.pods):
        pool.counted(resident.identity, -1)
        if resident.workload.startswith("DaemonSet "):
            continue
        if not resident.workload:             # a bare pod: nothing makes it again
            loss.lost.append(resident.label)
            continue
        loss.displaced += 1
        workload = Workload(resident.workload or resident.label, "", resident.shape.namespace,
                            resident.label.rpartition("/")[2], resident.shape, 1)
        loss.outcomes.append(place(pool, profile, workload, f"{resident.label}~", rng, max_attempts=max_attempts))
    return loss


def candidates(pool: Pool) -> list[str]:
    """One node per group of nodes that hold the same pods the same way (by name)."""
    groups: dict[tuple, str] = {}
    for node in sorted(pool.nodes.values(), key=lambda n: n.name):
        key = (node.template, tuple((r.workload, id(r.shape)) for r in node.pods))
        groups.setdefault(key, node.name)
    return list(groups.values())


@dataclass(frozen=True)
class _Job:
    scenario: Scenario
    profile: Profile
    seed: int
    max_attempts: int
    before: tuple[str, ...]          # nodes drained in earlier steps
    names: tuple[str, ...]           # candidates to judge


def _base(job: _Job) -> Pool:
    pool = play(job.scenario, job.profile, job.seed, max_attempts=job.max_attempts).pool
    for step, name in enumerate(job.before):
        drain_node(pool, job.profile, name, _stream(job.seed, step, name), max_attempts=job.max_attempts)
    return pool


def _stream(seed: int, step: int, name: str) -> random.Random:
    return random.Random(f"{seed}:{step}:{name}")


def judge(job: _Job) -> list[Loss]:
    """The loss of each candidate on the pool as the earlier steps left it (top level: picklable)."""
    base = _base(job)
    out = []
    for name in job.names:
        trial = base.copy()
        out.append(drain_node(trial, job.profile, name, _stream(job.seed, len(job.before), name),
                              max_attempts=job.max_attempts))
    return out


@dataclass
class Drain:
    order: str                        # "worst" or "random"
    steps: list[Loss] = field(default_factory=list)

    @property
    def headroom(self) -> int:
        n = 0
        for loss in self.steps:
            if not loss.clean:
                break
            n += 1
        return n

    def as_dict(self) -> dict:
        return {"order": self.order, "headroom": self.headroom, "steps": [s.as_dict() for s in self.steps]}


def worst(scenario: Scenario, profile: Profile, seed: int, k: int, *, max_attempts: int = DEFAULT_MAX_ATTEMPTS,
          jobs: int = 1, mapper: Mapper | None = None) -> Drain:
    result = Drain("worst")
    before: tuple[str, ...] = ()
    for _ in range(k):
        pool = _base(_Job(scenario, profile, seed, max_attempts, before, ()))
        names = candidates(pool)
        if not names:
            break
        chunks = [tuple(names[i::max(jobs, 1)]) for i in range(min(max(jobs, 1), len(names)))]
        work = [_Job(scenario, profile, seed, max_attempts, before, chunk) for chunk in chunks]
        judged = mapper(judge, work) if mapper is not None and len(work) > 1 else map(judge, work)
        losses = [loss for batch in judged for loss in batch]
        chosen = min(losses, key=lambda loss: (tuple(-x for x in loss.hurt()), loss.node))
        result.steps.append(chosen)
        before += (chosen.node,)
    return result


def randomly(scenario: Scenario, profile: Profile, seed: int, k: int, *,
             max_attempts: int = DEFAULT_MAX_ATTEMPTS) -> Drain:
    pool = play(scenario, profile, seed, max_attempts=max_attempts).pool
    names = random.Random(f"drain:{seed}").sample(sorted(pool.nodes), min(k, len(pool.nodes)))
    result = Drain("random")
    for step, name in enumerate(names):
        result.steps.append(drain_node(pool, profile, name, _stream(seed, step, name), max_attempts=max_attempts))
    return result


__all__ = ["Drain", "Loss", "worst", "randomly", "drain_node", "candidates", "judge"]
