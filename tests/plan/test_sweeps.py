"""--nodes-needed, --drain and --surge (numaguard.lint.plan.sizing, .drain, .surge), with exact
outcomes, and the same answers from several processes as from one."""
from __future__ import annotations

from concurrent.futures import ProcessPoolExecutor
from dataclasses import replace

import pytest

from numaguard.lint.plan import drain, sizing, surge
from numaguard.lint.plan.model import PLACED
from numaguard.lint.plan.play import Scenario, play
from numaguard.lint.plan.scheduler import Profile
from plan_helpers import pool, runaway, spec, workload

DEFAULT, AWARE = Profile("default"), Profile("topology-aware")


@pytest.fixture(scope="module")
def executor():
    with ProcessPoolExecutor(max_workers=3) as pool_:
        yield pool_


# -- nodes needed ----------------------------------------------------------------------------------

def test_nodes_needed_is_the_boundary_it_played():
    """4 cache and 8 db replicas take one NUMA node each (12 + 22 CPUs overflow a NUMA node
    of 30 or 32): 6 nodes. The capacity bound says 4 (cpu: 4x12 + 8x22 = 224 of 62 per node)."""
    bound = sizing.lower_bound({"cpu": 62000, "memory": 10**13, "pods": 110},
                               [(w, w.replicas) for w in runaway().workloads])
    assert bound == 4
    found = sizing.search(sizing.Trial(runaway(), DEFAULT, 0, 100, "numa", 0), bound)
    assert (found.needed, found.plays) == (6, {4: False, 5: False, 6: True})
    assert sizing.clean_at(sizing.Trial(runaway(), DEFAULT, 0, 100, "numa", 6))
    assert not sizing.clean_at(sizing.Trial(runaway(), DEFAULT, 0, 100, "numa", 5))


def test_nodes_needed_gallops_then_bisects():
    """40 replicas of 22 CPUs, one per NUMA node: 20 nodes. From 1: 1, 2, 3, 5, 9, 17, 33
    (the first clean), then 25, 21, 19, 20."""
    scenario = Scenario(pools=(pool(1),), workloads=(workload("db", 40, spec("22", "8Gi")),))
    found = sizing.search(sizing.Trial(scenario, DEFAULT, 0, 100, "numa", 0), 1)
    assert found.needed == 20
    assert found.plays == {1: False, 2: False, 3: False, 5: False, 9: False, 17: False, 33: True, 25: True,
                           21: True, 19: False, 20: True}


def test_nodes_needed_from_several_processes_is_the_same(executor):
    scenario = Scenario(pools=(pool(1),), workloads=(workload("db", 40, spec("22", "8Gi")),))
    one = sizing.search(sizing.Trial(scenario, DEFAULT, 0, 100, "numa", 0), 1)
    three = sizing.search(sizing.Trial(scenario, DEFAULT, 0, 100, "numa", 0), 1, jobs=3, mapper=executor.map)
    assert three.needed == one.needed == 20
    assert all(three.plays[c] == ok for c, ok in one.plays.items())


def test_a_replica_no_empty_node_takes_ends_the_search():
    scenario = Scenario(pools=(pool(1),), workloads=(workload("huge", 2, spec("40", "8Gi")),))
    why = sizing.empty_node_verdict(scenario, DEFAULT, "numa", scenario.workloads)
    assert why == ("Deployment shop/huge: even an empty node of pool numa does not take one replica (Pod was "
                   "rejected: Resources cannot be allocated with Topology locality)")
    (found,) = sizing.nodes_needed(scenario, DEFAULT, 0, [("numa", 2, why)])
    assert (found.needed, found.reason, found.as_dict()["needed"]) == (None, why, None)


# -- drain ------------------------------------------------------------------------------------------

def spread() -> Scenario:
    """4 nodes, 8 web replicas (8 CPUs, two per node on NUMA 0, 14 CPUs left there), 4 db
    replicas (22 CPUs, one per node on NUMA 1, 10 left): no node can take a db replica again."""
    return Scenario(pools=(pool(4),), workloads=(workload("web", 8, spec("8", "4Gi")),
                                                 workload("db", 4, spec("22", "8Gi"))))


def roomy() -> Scenario:
    """4 nodes, 8 replicas of 14 CPUs: two per node, room for four in all on each."""
    return Scenario(pools=(pool(4),), workloads=(workload("web", 8, spec("14", "4Gi")),))


def test_worst_drain_and_headroom():
    result = drain.worst(roomy(), DEFAULT, 0, 3)
    steps = [s.as_dict() for s in result.steps]
    assert [(s["node"], s["displaced"], s["placedAgain"], s["clean"]) for s in steps] == [
        ("numa-1", 2, 2, True), ("numa-2", 3, 3, True), ("numa-3", 4, 0, False)]
    assert result.headroom == 2


def test_a_pool_without_headroom():
    """The first node lost strands its db replica: no other node has 22 CPUs free on one NUMA node."""
    result = drain.worst(spread(), DEFAULT, 0, 2)
    assert [(s.node, s.displaced, s.unplaced, s.rejections, s.clean) for s in result.steps] == [
        ("numa-1", 3, 1, 1, False), ("numa-3", 4, 1, 0, False)]
    assert result.headroom == 0


def test_worst_drain_from_several_processes_is_the_same(executor):
    one = drain.worst(spread(), DEFAULT, 0, 2)
    three = drain.worst(spread(), DEFAULT, 0, 2, jobs=3, mapper=executor.map)
    assert [s.as_dict() for s in three.steps] == [s.as_dict() for s in one.steps]


def test_random_drain_is_seeded():
    a = drain.randomly(spread(), DEFAULT, 5, 2)
    b = drain.randomly(spread(), DEFAULT, 5, 2)
    assert [s.node for s in a.steps] == [s.node for s in b.steps] == ["numa-3", "numa-4"]


def test_a_bare_pod_is_lost_and_daemonset_pods_go_with_the_node():
    agent = workload("agent", 0, spec("1", "512Mi"), kind="DaemonSet", per_node=True)
    scenario = Scenario(pools=(pool(2),), workloads=(agent, workload("web", 2, spec("2", "1Gi"))))
    pool_ = play(scenario, DEFAULT, 0).pool
    target = next(n for n in pool_.nodes.values() if any(r.workload == "Deployment shop/web" for r in n.pods))
    target.pods[-1].workload = ""                                # as a pod no controller owns
    loss = drain.drain_node(pool_, DEFAULT, target.name, __import__("random").Random(0))
    assert (loss.displaced, loss.lost) == (sum(1 for r in target.pods if r.workload.startswith("Deployment")),
                                           [target.pods[-1].label])


# -- surge ------------------------------------------------------------------------------------------

def test_a_rolling_update_that_fits():
    web = workload("web", 4, spec("8", "4Gi"), rollout=("25%", "25%"))
    scenario = Scenario(pools=(pool(2),), workloads=(web,))
    pool_ = play(scenario, DEFAULT, 0).pool
    result = surge.rollout(pool_, DEFAULT, web, __import__("random").Random(0))
    assert (result.max_surge, result.max_unavailable, result.complete, result.rejections) == (1, 1, True, 0)
    assert [r.as_dict()["newReplicas"] for r in result.rounds] == [1, 3, 4]
    assert sum(1 for n in pool_.nodes.values() for r in n.pods if r.label.endswith("-new")) == 4
    assert all(not r.label.endswith(("-0", "-1", "-2", "-3")) for n in pool_.nodes.values() for r in n.pods)


def test_surge_pods_the_kubelet_rejects_stop_the_rollout():
    """Two nodes each running two db replicas of 14 CPUs, both on NUMA 0 (2 CPUs left there, 32
    on NUMA 1). The new version asks for 20 CPUs, maxSurge 1, maxUnavailable 0: the first two
    new pods take NUMA 1 and two old pods go; the third new pod finds 16 + 12 CPUs on each
    node, split, and no old pod may go while it is unavailable: the rollout is stuck."""
    db = workload("db", 4, spec("14", "8Gi"), rollout=("1", "0"))
    fat = replace(db, shape=workload("db", 4, spec("20", "8Gi")).shape)
    pool_ = play(Scenario(pools=(pool(2),), workloads=(db,)), DEFAULT, 0).pool
    result = surge.rollout(pool_, DEFAULT, fat, __import__("random").Random(0))
    assert (result.complete, result.max_surge, result.max_unavailable) == (False, 1, 0)
    assert [r.as_dict() for r in result.rounds] == [
        {"newReplicas": 1, "newAvailable": 1, "oldReplicas": 3, "scaledDown": ["shop/db-3"]},
        {"newReplicas": 2, "newAvailable": 2, "oldReplicas": 2, "scaledDown": ["shop/db-2"]},
        {"newReplicas": 3, "newAvailable": 2, "oldReplicas": 2, "scaledDown": []},
        {"newReplicas": 3, "newAvailable": 2, "oldReplicas": 2, "scaledDown": []}]
    assert [(o.pod, o.status) for o in result.outcomes] == [
        ("shop/db-0-new", PLACED), ("shop/db-1-new", PLACED), ("shop/db-2-new", "stuck"), ("shop/db-2-new", "stuck")]
    assert {a.reason for o in result.outcomes for a in o.rejections} == {"TopologyAffinityError"}


def test_statefulsets_replace_from_the_highest_ordinal():
    db = workload("db", 3, spec("4", "2Gi"), kind="StatefulSet", rollout=(None, None))
    pool_ = play(Scenario(pools=(pool(2),), workloads=(db,)), DEFAULT, 0).pool
    result = surge.rollout(pool_, DEFAULT, db, __import__("random").Random(0))
    assert result.complete and [r.scaled_down for r in result.rounds] == [["shop/db-2"], ["shop/db-1"], ["shop/db-0"]]
    assert all(o.status == PLACED for o in result.outcomes)


@pytest.mark.parametrize("value, replicas, up, expected", [
    ("25%", 4, True, 1), ("25%", 5, True, 2), ("25%", 5, False, 1), (0, 4, True, 0), ("3", 9, False, 3)])
def test_fenceposts(value, replicas, up, expected):
    assert surge.resolve(value, replicas, "25%", round_up=up) == expected


def test_only_rolling_kinds_roll():
    job = workload("batch", 2, spec("2", "1Gi"), kind="Job")
    with pytest.raises(surge.SurgeError, match="a Job has no rolling update numaguard models"):
        surge.rollout(play(Scenario(pools=(pool(1),)), DEFAULT).pool, DEFAULT, job, __import__("random").Random(0))
