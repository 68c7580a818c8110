"""Properties of the planner (hypothesis), over random pools of the built-in machines and random
workloads of Guaranteed pods (classic and KEP-5526):

* no node ever holds more than its allocatable;
* --nodes-needed's count plays clean, and one node fewer does not (under the seed it reports);
* the topology-aware scheduler never sends a pod to a single-numa-node node whose kubelet then
  rejects it with TopologyAffinityError, for pods whose requests the plugin reads whole (its
  GetPodEffectiveRequest reads the containers, not spec.resources: see test_play's
  test_pod_level_pods_slip_past_the_topology_aware_filter);
* a plan on a pool of one node agrees with `numaguard simulate` on the same pods, pod by pod:
  placed where simulate admits (on the same CPUs), rejected by the kubelet where simulate
  rejects for a NUMA reason, unschedulable where simulate's kubelet finds the node full.
"""
from __future__ import annotations

import os
from dataclasses import replace

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from numaguard.lint.numa.node import load_builtin_profile
from numaguard.lint.numa.simulate import simulate
from numaguard.lint.plan import sizing
from numaguard.lint.plan.model import PLACED, UNSCHEDULABLE
from numaguard.lint.plan.play import Scenario, play
from numaguard.lint.plan.scheduler import Profile
from plan_helpers import pool, spec, workload

PROFILES = ("dual-socket-ht", "quad-socket", "single-socket")
SETTINGS = settings(max_examples=int(os.environ.get("NUMAGUARD_PLAN_EXAMPLES", "25")), deadline=None,
                    suppress_health_check=[HealthCheck.too_slow])


@st.composite
def pod_specs(draw):
    cpus = draw(st.integers(1, 24))
    memory = f"{draw(st.integers(1, 48))}Gi"
    if draw(st.booleans()):
        return spec(str(cpus), memory)
    # KEP-5526: a pod-level budget whose one container asks for all of it (the plugin reads it whole)
    return {**spec(str(cpus), memory), "resources": {"requests": {"cpu": str(cpus), "memory": memory},
                                                     "limits": {"cpu": str(cpus), "memory": memory}}}


@st.composite
def scenarios(draw, *, max_nodes: int = 4):
    profile = draw(st.sampled_from(PROFILES))
    nodes = draw(st.integers(1, max_nodes))
    specs = draw(st.lists(pod_specs(), min_size=1, max_size=4))
    workloads = tuple(workload(f"w{i}", draw(st.integers(1, 6)), s) for i, s in enumerate(specs))
    return Scenario(pools=(pool(nodes, profile),), workloads=workloads)


@SETTINGS
@given(scenarios(), st.sampled_from(("default", "topology-aware")), st.integers(0, 3))
def test_no_node_holds_more_than_its_allocatable(scenario, scheduler, seed):
    run = play(scenario, Profile(scheduler), seed)
    for node in run.pool.nodes.values():
        assert all(used <= node.allocatable[name] for name, used in node.requested.items())
        assert node.pod_count <= node.allocatable["pods"]
        assert node.state.used["cpu"] <= node.state.allocatable["cpu"]
        assert node.state.used["memory"] <= node.state.allocatable["memory"]


@SETTINGS
@given(scenarios(max_nodes=2), st.integers(0, 3))
def test_nodes_needed_plays_clean_and_one_fewer_does_not(scenario, seed):
    (name,) = (p.name for p in scenario.pools)
    lower = sizing.lower_bound({"cpu": 1, "memory": 1, "pods": 1}, [])
    why = sizing.empty_node_verdict(scenario, Profile("default"), name, scenario.workloads)
    (found,) = sizing.nodes_needed(scenario, Profile("default"), seed, [(name, lower, why)])
    if why:
        assert found.needed is None
        return
    assert found.needed is not None
    assert play(scenario.with_count(name, found.needed), Profile("default"), seed).clean
    if found.needed > 0:
        assert not play(scenario.with_count(name, found.needed - 1), Profile("default"), seed).clean


@SETTINGS
@given(scenarios(), st.integers(0, 3))
def test_the_topology_aware_scheduler_causes_no_topology_affinity_error(scenario, seed):
    assert all(w.shape.nrt_reads_whole_pod for w in scenario.workloads)
    run = play(scenario, Profile("topology-aware"), seed)
    reasons = {a.reason for outs in run.outcomes.values() for o in outs for a in o.rejections}
    assert "TopologyAffinityError" not in reasons


@SETTINGS
@given(scenarios(max_nodes=1), st.sampled_from(("default", "topology-aware")))
def test_a_plan_of_one_node_agrees_with_simulate(scenario, scheduler):
    scenario = replace(scenario, pools=(replace(scenario.pools[0], count=1),))
    run = play(scenario, Profile(scheduler), 0)
    node = load_builtin_profile(scenario.pools[0].node.name)
    pods = [(o.pod, {"spec": w.shape.spec}) for w in scenario.workloads for o in run.outcomes[w.name]]
    report = simulate(node, pods, capacity=False)
    placed = {r.label: r for n in run.pool.nodes.values() for r in n.pods}
    for (pod, _), entry, outcome in zip(pods, report["pods"],
                                        [o for w in scenario.workloads for o in run.outcomes[w.name]]):
        if entry["admitted"]:
            assert outcome.status == PLACED and not outcome.rejections
            cpus = placed[pod].placement.as_dict()["cpus"]
            assert (cpus["exclusive"], cpus["podShared"]) == (entry["cpus"]["exclusive"], entry["cpus"]["podShared"])
        elif outcome.status == UNSCHEDULABLE:
            # the scheduler's filters keep it from the kubelet: the node is full as both count it
            # (the kubelet's OutOf<resource>), or, topology-aware, no NUMA node holds it
            assert not outcome.rejections
            fits = "Insufficient" in outcome.message or "Too many pods" in outcome.message
            assert fits or (scheduler == "topology-aware" and "cannot align" in outcome.message), outcome.message
            assert fits or not entry["reason"].startswith("OutOf")
        else:
            assert not entry["reason"].startswith("OutOf")     # the scheduler counts what the kubelet counts
            assert scheduler == "default" and [a.reason for a in outcome.rejections] == [entry["reason"]]
