"""Playing a scenario: the scheduler picks, the kubelet admits or rejects, the controller
replaces a rejected pod (numaguard.lint.plan.play), with exact outcomes."""
from __future__ import annotations

import json
from dataclasses import replace

import pytest

from numaguard.lint.numa.node import load_builtin_profile
from numaguard.lint.plan.model import GAVE_UP, PLACED, STUCK, UNSCHEDULABLE, LiveNode, LivePod
from numaguard.lint.plan.nodes import Kubelets, scheduler_allocatable
from numaguard.lint.plan.play import Scenario, _empty_state, play
from numaguard.lint.plan.scheduler import Profile
from numaguard.lint.plan.summary import run_summary
from plan_helpers import POOL_LABELS, TOLERATION, pool, runaway, spec, workload

DEFAULT, AWARE = Profile("default"), Profile("topology-aware")
TAE = "TopologyAffinityError"


def outcomes(run, name):
    return [(o.pod, o.status, o.node) for o in run.outcomes[name]]


def test_the_runaway_under_the_default_scheduler():
    """Every node ranks alike and rejects the fifth db replica: each replica of the second half
    is stuck once all four nodes have rejected it (kubernetes/kubernetes#84869)."""
    run = play(runaway(), DEFAULT, seed=0)
    db = run.outcomes["ReplicaSet shop/db"]
    assert [o.status for o in db] == [PLACED] * 4 + [STUCK] * 4
    assert sorted(o.node for o in db[:4]) == ["numa-1", "numa-2", "numa-3", "numa-4"]
    assert [len(o.rejections) for o in db[4:]] == [13, 5, 11, 7]          # seed 0
    for o in db[4:]:
        assert {a.reason for a in o.rejections} == {TAE}
        assert {a.node for a in o.rejections} == {"numa-1", "numa-2", "numa-3", "numa-4"}
        assert o.message.startswith("every node the scheduler ranks first (numa-1, numa-2, numa-3 and 1 more)")
    assert run.rejections() == 36 and not run.clean
    assert sum(len(n.rejections) for n in run.pool.nodes.values()) == 36


def test_the_topology_aware_scheduler_keeps_them_pending():
    run = play(runaway(), AWARE, seed=0)
    db = run.outcomes["ReplicaSet shop/db"]
    assert [o.status for o in db] == [PLACED] * 4 + [UNSCHEDULABLE] * 4
    assert {o.message for o in db[4:]} == {"0/4 nodes are available: 4 cannot align pod."}
    assert run.rejections() == 0


def test_a_seed_gives_the_same_play_every_time():
    first = run_summary(play(runaway(), DEFAULT, seed=7), list(runaway().workloads))
    again = run_summary(play(runaway(), DEFAULT, seed=7), list(runaway().workloads))
    assert json.dumps(first, sort_keys=True) == json.dumps(again, sort_keys=True)
    other = run_summary(play(runaway(), DEFAULT, seed=8), list(runaway().workloads))
    assert first["summary"]["rejections"] != other["summary"]["rejections"]     # 40 and 36


def test_reused_admissions_change_nothing(monkeypatch):
    """Nodes with one history share the kubelet's outcome (Kubelets); a cache that keeps
    nothing plays every admission and gives the same plan."""
    cached = run_summary(play(runaway(6, 6, 12), DEFAULT, seed=3), list(runaway().workloads))
    monkeypatch.setattr("numaguard.lint.plan.pool.Kubelets", lambda: Kubelets(limit=0))
    played = run_summary(play(runaway(6, 6, 12), DEFAULT, seed=3), list(runaway().workloads))
    assert json.dumps(cached, sort_keys=True) == json.dumps(played, sort_keys=True)


def test_max_attempts_gives_up_before_every_node_rejected():
    run = play(runaway(), DEFAULT, seed=0, max_attempts=2)
    db = run.outcomes["ReplicaSet shop/db"]
    assert [o.status for o in db[4:]] == [GAVE_UP] * 4
    assert [len(o.rejections) for o in db[4:]] == [2, 2, 2, 2]
    assert db[4].message.startswith("2 rejections (--max-attempts); 4 node(s) share the best score")


def _live(name: str, pods: list[tuple[str, dict]], profile: str = "dual-socket-ht") -> LiveNode:
    node = load_builtin_profile(profile)
    allocatable = scheduler_allocatable(_empty_state(node.topology, node.kubelet_config, name, []))
    return LiveNode(name, "numa", {**POOL_LABELS, "kubernetes.io/hostname": name}, (), False, allocatable,
                    node.topology, node.kubelet_config,
                    tuple(LivePod(f"shop/{pod}", "shop", {"app": pod}, s, "ReplicaSet shop/old-5c9d")
                          for pod, s in pods))


def fragmented() -> Scenario:
    """node-a runs a 16-CPU and a 15-CPU pod, which its kubelet put on NUMA 0 and NUMA 1
    (31 CPUs left: 14 and 17); node-b a 30-CPU and an 8-CPU pod (24 left, all on NUMA 1).
    LeastAllocated prefers node-a for a 22-CPU pod, whose kubelet cannot align it; node-b's
    could."""
    a = [("a1", spec("16", "8Gi")), ("a2", spec("15", "8Gi"))]
    b = [("b1", spec("30", "8Gi")), ("b2", spec("8", "8Gi"))]
    return Scenario(live=(_live("node-a", a), _live("node-b", b)), workloads=(workload("db", 1, spec("22", "8Gi")),))


def test_the_default_scheduler_insists_on_the_fragmented_node():
    run = play(fragmented(), DEFAULT, seed=0)
    (db,) = run.outcomes["Deployment shop/db"]
    assert (db.status, [a.node for a in db.rejections]) == (STUCK, ["node-a"])
    assert db.message.startswith("every node the scheduler ranks first (node-a) rejects it")
    assert [v["cpus"] for v in run.pool.nodes["node-a"].free_by_numa().values()] == [14, 17]
    assert [v["cpus"] for v in run.pool.nodes["node-b"].free_by_numa().values()] == [0, 24]


def test_the_topology_aware_scheduler_finds_the_node_that_takes_it():
    run = play(fragmented(), AWARE, seed=0)
    assert outcomes(run, "Deployment shop/db") == [("shop/db-0", PLACED, "node-b")]


def test_live_pods_are_replayed_oldest_first_and_counted():
    run = play(fragmented(), DEFAULT, seed=0)
    a = run.pool.nodes["node-a"]
    assert [r.label for r in a.pods] == ["shop/a1", "shop/a2"]
    assert [r.placement.numa_nodes for r in a.pods] == [[0], [1]]
    assert a.requested == {"cpu": 31000, "memory": 16 * 2**30} and a.pod_count == 2


def test_taints_and_selectors_keep_pods_off_the_pool():
    plain = spec("2", "1Gi", pool=False)
    run = play(Scenario(pools=(pool(2),), workloads=(workload("web", 1, plain),)), DEFAULT)
    (web,) = run.outcomes["Deployment shop/web"]
    assert (web.status, web.message) == (UNSCHEDULABLE, "0/2 nodes are available: 2 node(s) had untolerated taint "
                                                        "{node.example.com/pool: numa}.")
    wrong = spec("2", "1Gi", nodeSelector={"node.example.com/pool": "gpu"}, tolerations=[TOLERATION])
    run = play(Scenario(pools=(pool(2),), workloads=(workload("web", 1, wrong),)), DEFAULT)
    assert run.outcomes["Deployment shop/web"][0].message == (
        "0/2 nodes are available: 2 node(s) didn't match Pod's node affinity/selector.")


def test_insufficient_resources_are_counted_per_node():
    run = play(Scenario(pools=(pool(2),), workloads=(workload("huge", 1, spec("63", "1Gi")),)), DEFAULT)
    assert run.outcomes["Deployment shop/huge"][0].message == "0/2 nodes are available: 2 Insufficient cpu."


def test_required_anti_affinity_by_hostname_spreads_and_then_waits():
    anti = {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
        {"labelSelector": {"matchLabels": {"app": "web"}}, "topologyKey": "kubernetes.io/hostname"}]}}
    run = play(Scenario(pools=(pool(2),), workloads=(workload("web", 3, spec("2", "1Gi", affinity=anti)),)), DEFAULT)
    web = outcomes(run, "Deployment shop/web")
    assert [s for _, s, _ in web] == [PLACED, PLACED, UNSCHEDULABLE]
    assert {web[0][2], web[1][2]} == {"numa-1", "numa-2"}
    assert run.outcomes["Deployment shop/web"][2].message == (
        "0/2 nodes are available: 2 node(s) didn't match pod anti-affinity rules.")


def test_required_affinity_by_hostname_follows_the_first_pod():
    near = {"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
        {"labelSelector": {"matchLabels": {"app": "db"}}, "topologyKey": "kubernetes.io/hostname"}]}}
    run = play(Scenario(pools=(pool(3),), workloads=(
        workload("db", 1, spec("4", "1Gi")), workload("sidekick", 3, spec("2", "1Gi", affinity=near)))), DEFAULT)
    (db,) = run.outcomes["Deployment shop/db"]
    assert {o.node for o in run.outcomes["Deployment shop/sidekick"]} == {db.node}


def test_least_allocated_spreads_a_deployment():
    run = play(Scenario(pools=(pool(4),), workloads=(workload("web", 8, spec("2", "1Gi")),)), DEFAULT, seed=5)
    per_node = sorted(n.pod_count for n in run.pool.nodes.values())
    assert per_node == [2, 2, 2, 2]


def test_daemonsets_land_first_one_per_node_that_takes_them():
    agent = workload("agent", 0, spec("1", "512Mi"), kind="DaemonSet", per_node=True)
    picky = workload("gpu-agent", 0, spec("1", "512Mi", nodeSelector={"gpu": "yes"}), kind="DaemonSet",
                     per_node=True)
    run = play(Scenario(pools=(pool(3),), workloads=(workload("web", 2, spec("2", "1Gi")), agent, picky)), DEFAULT)
    assert outcomes(run, "DaemonSet shop/agent") == [(f"shop/agent-numa-{i}", PLACED, f"numa-{i}") for i in (1, 2, 3)]
    assert run.outcomes["DaemonSet shop/gpu-agent"] == []
    assert all(n.pods[0].workload == "DaemonSet shop/agent" for n in run.pool.nodes.values())


def test_pod_level_pods_slip_past_the_topology_aware_filter():
    """GetPodEffectiveRequest reads the containers: a pod-level budget of 22 CPUs whose one
    exclusive container asks for 4 looks like a 4-CPU pod to the plugin, and the kubelet
    still rejects it on a fragmented node (a documented limit of the plugin, not of the plan)."""
    budget = {"resources": {"requests": {"cpu": "22", "memory": "8Gi"}, "limits": {"cpu": "22", "memory": "8Gi"}},
              "containers": [{"name": "app", "image": "x", "resources": {"requests": {"cpu": "4", "memory": "1Gi"},
                                                                         "limits": {"cpu": "4", "memory": "1Gi"}}},
                             {"name": "side", "image": "x"}]}
    scenario = replace(fragmented(), workloads=(workload("db", 1, budget),))
    assert not scenario.workloads[0].shape.nrt_reads_whole_pod
    run = play(scenario, AWARE, seed=0)
    (db,) = run.outcomes["Deployment shop/db"]
    assert [a.node for a in db.rejections] == ["node-a"] and db.rejections[0].reason == TAE
    assert db.status == STUCK


@pytest.mark.parametrize("profile", [DEFAULT, AWARE], ids=["default", "topology-aware"])
def test_a_node_never_holds_more_than_its_allocatable(profile):
    run = play(runaway(3, 6, 12), profile, seed=1)
    for node in run.pool.nodes.values():
        for name, used in node.requested.items():
            assert used <= node.allocatable[name]
        assert node.pod_count <= node.allocatable["pods"]


def test_preferred_node_affinity_by_hostname_is_judged_node_by_node():
    """Nodes of one template share a bucket, but a preference for a node's name must score each
    node on its own: every seed lands the pod on numa-2."""
    prefer = {"nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
        {"weight": 100, "preference": {"matchExpressions": [
            {"key": "kubernetes.io/hostname", "operator": "In", "values": ["numa-2"]}]}}]}}
    for seed in range(6):
        run = play(Scenario(pools=(pool(3),), workloads=(workload("web", 1, spec("2", "1Gi", affinity=prefer)),)),
                   DEFAULT, seed)
        assert outcomes(run, "Deployment shop/web") == [("shop/web-0", PLACED, "numa-2")]


def test_a_kubelet_configuration_that_would_not_start_is_said():
    node = load_builtin_profile("dual-socket-ht")
    broken = replace(node, kubelet_config={**node.kubelet_config, "cpuManagerPolicy": "bogus"})
    run = play(Scenario(pools=(replace(pool(1), node=broken),), workloads=(workload("web", 1, spec("2", "1Gi")),)),
               DEFAULT)
    (only,) = run.pool.nodes.values()
    assert only.notes == ['the kubelet configuration would not start a kubelet (cpuManagerPolicy: unknown policy: '
                          '"bogus"); simulated without it']
    assert only.state.cpu is None
