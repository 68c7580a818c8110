"""`--nodes-needed`: the smallest node count of each pool that places every replica with no
kubelet rejection, searched by playing the scenario, not estimated from capacity.

For each pool in turn (the earlier pools at the counts found for them, the later ones at
their given counts), the search:
1. starts from the count below which NodeResourcesFit alone must leave a replica Pending (the
   requests of the replicas that can only land in this pool, over one node's allocatable);
   a replica that even an empty node of the pool rejects ends the search (no count helps);
2. gallops (that count, then +1, +2, +4, ...) until a play is clean, up to `MAX_NODES`;
3. bisects between the last count that failed and the first that was clean.
The answer N was clean and N - 1 was not, under the seed the report names (a pool's
outcome need not be monotonic in its size: the search reports the boundary it found, and every
count it played).

With `jobs` > 1 the plays run in other processes (`mapper`, given by the front end) and the
next steps of the same search are played ahead speculatively; the path the search takes depends
only on the outcomes, so the answer is the same for any number of processes.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Iterable

from numaguard.lint.plan.model import DEFAULT_MAX_ATTEMPTS, Workload
from numaguard.lint.plan.play import Scenario, play
from numaguard.lint.plan.scheduler import Profile

MAX_NODES = 100_000
Mapper = Callable[[Callable, Iterable], Iterable]


@dataclass(frozen=True)
class Trial:
    scenario: Scenario
    profile: Profile
    seed: int
    max_attempts: int
    pool: str
    count: int


def clean_at(trial: Trial) -> bool:
    """Does the scenario play clean with `count` nodes in the pool? (top level: picklable)"""
    scenario = trial.scenario.with_count(trial.pool, trial.count)
    return play(scenario, trial.profile, trial.seed, max_attempts=trial.max_attempts).clean


@dataclass
class Sizing:
    pool: str
    needed: int | None                    # None: no count places every replica
    lower_bound: int
    plays: dict[int, bool] = field(default_factory=dict)     # count -> clean
    reason: str = ""

    def as_dict(self, live: int = 0) -> dict:
        return {"pool": self.pool, "needed": None if self.needed is None else self.needed + live,
                "added": self.needed if live else None, "lowerBound": self.lower_bound + live,
                "plays": [{"nodes": c + live, "clean": ok} for c, ok in sorted(self.plays.items())],
                "reason": self.reason or None}


class _Search:
    def __init__(self, base: Trial, jobs: int, mapper: Mapper | None) -> None:
        self.base, self.jobs, self.mapper = base, max(jobs, 1), mapper
        self.known: dict[int, bool] = {}

    def ask(self, counts: list[int]) -> None:
        """Play the counts not played yet (in parallel when a mapper is given)."""
        wanted = [c for c in dict.fromkeys(counts) if c not in self.known][:self.jobs]
        trials = [Trial(self.base.scenario, self.base.profile, self.base.seed, self.base.max_attempts,
                        self.base.pool, c) for c in wanted]
        results = self.mapper(clean_at, trials) if self.mapper is not None and len(trials) > 1 \
            else map(clean_at, trials)
        self.known.update(zip(wanted, results))

    def clean(self, count: int, ahead: list[int]) -> bool:
        if count not in self.known:
            self.ask([count, *ahead])
        return self.known[count]


def _gallop(start: int) -> list[int]:
    out, step, c = [], 1, start
    while c <= MAX_NODES:
        out.append(c)
        c, step = start + step, step * 2
    return out


def _midpoints(lo: int, hi: int, depth: int) -> list[int]:
    """The midpoints a bisection of (lo, hi) may visit in its next `depth` steps, nearest first."""
    out, level = [], [(lo, hi)]
    for _ in range(depth):
        following = []
        for a, b in level:
            if b - a > 1:
                mid = (a + b) // 2
                out.append(mid)
                following += [(a, mid), (mid, b)]
        level = following
    return out


def search(base: Trial, lower: int, *, jobs: int = 1, mapper: Mapper | None = None) -> Sizing:
    s = _Search(base, jobs, mapper)
    sequence = _gallop(lower)
    lo, hi = lower - 1, None
    for i, count in enumerate(sequence):
        if s.clean(count, sequence[i + 1:i + s.jobs]):
            hi = count
            break
        lo = count
    if hi is None:
        return Sizing(base.pool, None, lower, dict(s.known), f"no count up to {MAX_NODES} plays clean")
    depth = max(1, s.jobs.bit_length())
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if s.clean(mid, _midpoints(lo, hi, depth)[1:]):
            hi = mid
        else:
            lo = mid
    return Sizing(base.pool, hi, lower, dict(s.known))


def lower_bound(per_node: dict[str, int], workloads: Iterable[tuple[Workload, int]]) -> int:
    """Nodes below which the requests cannot fit: ceil(sum of requests / node allocatable)
    over cpu, memory and pods, for the replicas that only this pool can take."""
    need: dict[str, int] = {}
    for workload, replicas in workloads:
        for name, value in (*workload.shape.requests.items(), ("pods", 1)):
            need[name] = need.get(name, 0) + value * replicas
    bound = 0
    for name, total in need.items():
        have = per_node.get(name, 0)
        if total and have:
            bound = max(bound, -(-total // have))
    return bound


def nodes_needed(scenario: Scenario, profile: Profile, seed: int, pools: list[tuple[str, int, str]], *,
                 max_attempts: int = DEFAULT_MAX_ATTEMPTS, jobs: int = 1, mapper: Mapper | None = None) -> list[Sizing]:
    """`pools`: (name, lower bound, why no count helps or "") in search order."""
    out = []
    for name, lower, hopeless in pools:
        if hopeless:
            out.append(Sizing(name, None, lower, {}, hopeless))
            continue
        found = search(Trial(scenario, profile, seed, max_attempts, name, 0), lower, jobs=jobs, mapper=mapper)
        out.append(found)
        if found.needed is not None:
            scenario = scenario.with_count(name, found.needed)
    return out


__all__ = ["Sizing", "Trial", "clean_at", "search", "nodes_needed", "lower_bound", "sizing_inputs", "empty_node_verdict",
           "MAX_NODES"]


def sizing_inputs(scenario: Scenario, profile: Profile) -> tuple[tuple[str, int, str], ...]:
    """(pool, lower bound, why no count helps) for each pool, in order: the config's pools, then
    the live pools of the snapshot, whose count searched is of the nodes added to them (lower
    bound 0: what they run already holds part of the requests)."""
    from numaguard.lint.plan.nodes import scheduler_allocatable
    from numaguard.lint.plan.play import _empty_state
    from numaguard.lint.plan.workloads import landing_pools

    out = []
    live = [n.pool for n in scenario.live if n.pool] + [name for name, _ in scenario.added]
    for name in [p.name for p in scenario.pools] + list(dict.fromkeys(live)):
        only_here = [w for w in scenario.workloads if not w.per_node and w.replicas
                     and landing_pools(w, scenario.pools, scenario.live, empty_too=True) == [name]]
        spec = next((p for p in scenario.pools if p.name == name), None)
        lower = 0
        if spec is not None:
            per_node = scheduler_allocatable(_empty_state(spec.node.topology, spec.node.kubelet_config, name, []))
            lower = lower_bound(per_node, [(w, w.replicas) for w in only_here])
        out.append((name, lower, empty_node_verdict(scenario, profile, name, only_here)))
    return tuple(out)


def empty_node_verdict(scenario: Scenario, profile: Profile, pool: str, workloads: Iterable[Workload]) -> str:
    """Why no count of `pool` can help (a replica that an empty node of it does not take), or "".
    Only meaningful for workloads no other pool can take."""
    import random
    from dataclasses import replace

    from numaguard.lint.plan.model import PLACED
    from numaguard.lint.plan.play import build, place

    if any(p.name == pool for p in scenario.pools):
        one = Scenario(pools=tuple(replace(p, count=1) for p in scenario.pools if p.name == pool))
    else:
        one = Scenario(live=tuple(replace(n, pods=()) for n in scenario.live if n.pool == pool)[:1])
    for workload in workloads:
        if workload.per_node or not workload.replicas:
            continue
        fresh, _ = build(one, profile)
        outcome = place(fresh, profile, workload, workload.pod_name(0), random.Random(0), max_attempts=1,
                        only=list(fresh.nodes.values()))
        if outcome.status != PLACED:
            why = outcome.rejections[0].message if outcome.rejections else outcome.message
            return f"{workload.name}: even an empty node of pool {pool} does not take one replica ({why})"
    return ""
