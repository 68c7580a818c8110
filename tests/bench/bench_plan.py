"""Benchmark: `numaguard plan` on a pool of 1,000 nodes (a third each of the built-in 2-, 4- and
8-NUMA machines) and 20,000 replicas of ten workloads (classic and KEP-5526 pods of 2 to 8
CPUs), under both schedulers; the cost per placement from 100 to 1,000 nodes (the same
replicas per node); the same placements with the index off (every node scored for every pod,
as a scan would), the baseline measured in this run; a --nodes-needed sweep on one process and
on two (same answer).

    python tests/bench/bench_plan.py            # the whole benchmark (a few minutes)
    python tests/bench/bench_plan.py --quick    # 100 and 300 nodes only
"""
from __future__ import annotations

import os
import resource
import sys
import time
from concurrent.futures import ProcessPoolExecutor

from numaguard.lint.numa.node import load_builtin_profile
from numaguard.lint.plan import play as play_module
from numaguard.lint.plan import sizing
from numaguard.lint.plan.model import PoolSpec, Workload
from numaguard.lint.plan.play import Scenario, play
from numaguard.lint.plan.pods import pod_shape
from numaguard.lint.plan.pool import Pool
from numaguard.lint.plan.scheduler import Profile

PROFILES = ("dual-socket-ht", "quad-socket", "eight-numa")
SHAPES = ((2, "4Gi"), (4, "8Gi"), (6, "12Gi"), (8, "16Gi"), (3, "6Gi"))


def spec(cpus: int, memory: str, pod_level: bool) -> dict:
    both = {"requests": {"cpu": str(cpus), "memory": memory}, "limits": {"cpu": str(cpus), "memory": memory}}
    if pod_level:      # KEP-5526: a budget, one exclusive container of half of it, a sidecar sharing the rest
        half = {"cpu": str(max(cpus // 2, 1)), "memory": "1Gi"}
        return {"resources": both, "containers": [
            {"name": "app", "image": "x", "resources": {"requests": half, "limits": half}},
            {"name": "side", "image": "x"}]}
    return {"containers": [{"name": "app", "image": "x", "resources": both}]}


def scenario(nodes: int, replicas: int) -> Scenario:
    pools = tuple(PoolSpec(p, load_builtin_profile(p), nodes // 3 + (1 if i < nodes % 3 else 0))
                  for i, p in enumerate(PROFILES))
    workloads = tuple(Workload(f"Deployment bench/w{i}", "Deployment", "bench", f"w{i}",
                               pod_shape(spec(*SHAPES[i % 5], pod_level=i >= 5), namespace="bench",
                                         labels={"app": f"w{i}"}), replicas // 10) for i in range(10))
    return Scenario(pools=pools, workloads=workloads)


def timed(sc: Scenario, profile: str) -> tuple[float, object]:
    """(CPU seconds of this process, the run): on a shared machine the wall clock counts the
    other processes' turns too; the figure that matters, "on one core", is CPU time."""
    t = time.process_time()
    run = play(sc, Profile(profile), seed=1)
    return time.process_time() - t, run


class ScanPool(Pool):
    """The baseline: every node its own bucket, so each pod is filtered and scored on every node."""

    def key(self, node):
        return (node.name,) + super().key(node)


def main(quick: bool) -> None:
    sizes = (100, 300) if quick else (100, 1000)
    per_node = 20
    costs = {}
    for profile in ("default", "topology-aware"):
        for nodes in sizes:
            seconds, run = timed(scenario(nodes, nodes * per_node), profile)
            placements = sum(len(o) for o in run.outcomes.values())
            costs[(profile, nodes)] = seconds / placements
            print(f"{profile:>15}: {nodes:>5} nodes, {placements:>6} replicas: {seconds:6.2f}s CPU, "
                  f"{seconds / placements * 1e3:.3f} ms per placement, {len(run.pool.buckets)} views, "
                  f"{run.rejections()} kubelet rejections, admissions reused {run.pool.kubelets.hits} of "
                  f"{run.pool.kubelets.hits + run.pool.kubelets.misses}")
        small, large = sizes
        print(f"{profile:>15}: cost per placement at {large} nodes / at {small}: "
              f"{costs[(profile, large)] / costs[(profile, small)]:.2f}")
    nodes = sizes[-1]
    runaway = Scenario(pools=(PoolSpec("numa", load_builtin_profile("dual-socket-ht"), nodes),), workloads=(
        Workload("Deployment bench/cache", "Deployment", "bench", "cache", pod_shape(spec(12, "8Gi", False)), nodes),
        Workload("ReplicaSet bench/db", "ReplicaSet", "bench", "db", pod_shape(spec(22, "16Gi", False)), 2 * nodes)))
    seconds, run = timed(runaway, "default")
    gave_up = sum(o.status == "gave-up" for o in run.outcomes["ReplicaSet bench/db"])
    print(f"the #84869 runaway on {nodes} nodes ({3 * nodes} replicas, {gave_up} given up after 100 rejections "
          f"each, {run.rejections()} rejections): {seconds:.2f}s CPU")
    probe = scenario(nodes, 500)
    indexed, _ = timed(probe, "default")
    play_module.Pool = ScanPool
    try:
        scanned, _ = timed(probe, "default")
    finally:
        play_module.Pool = Pool
    print(f"baseline (every node scored for every pod), {nodes} nodes, 500 replicas: {scanned:.2f}s = "
          f"{scanned / indexed:.1f}x the indexed plan ({indexed:.2f}s)")
    sweep = Scenario(pools=(PoolSpec("numa", load_builtin_profile("dual-socket-ht"), 1),),
                     workloads=scenario(3, 600).workloads[:4])
    trial = sizing.Trial(sweep, Profile("default"), 1, 100, "numa", 0)
    t = time.perf_counter()
    one = sizing.search(trial, 1)
    t1 = time.perf_counter() - t
    with ProcessPoolExecutor(max_workers=2) as executor:
        t = time.perf_counter()
        two = sizing.search(trial, 1, jobs=2, mapper=executor.map)
        t2 = time.perf_counter() - t
    assert one.needed == two.needed and all(two.plays[c] == ok for c, ok in one.plays.items())
    print(f"--nodes-needed: {one.needed} nodes after {len(one.plays)} plays: {t1:.2f}s wall on one process, "
          f"{t2:.2f}s on two ({len(two.plays)} plays, same answer) = {t2 / t1:.2f}x (load average "
          f"{os.getloadavg()[0]:.1f} on {os.cpu_count()} cores)")
    print(f"peak RSS {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MiB")


if __name__ == "__main__":
    main("--quick" in sys.argv)
