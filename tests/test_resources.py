"""Kubernetes pod resource semantics (numaguard.lint.k8s.resources) against kubernetes-facts.md §1–§3:
container and pod-level defaulting (with the trap), the sidecar-aware aggregate, QoS with and
without pod-level resources, container eligibility and the KEP-5526 pod-scope budget."""
from __future__ import annotations

from decimal import Decimal

import pytest

from numaguard.lint.k8s.pod_budget import (
    PodAnalysis, exclusive_cpu_containers, is_container_equivalent_qos_guaranteed,
    is_integral_cpu, pod_exclusive_totals, pod_scope_budget,
)
from numaguard.lint.k8s.pod_schema import pod_schema_violations
from numaguard.lint.k8s.resources import (
    BEST_EFFORT, BURSTABLE, GUARANTEED, aggregate_container_limits, aggregate_container_requests,
    container_limits, container_requests, is_overcommit_allowed, is_supported_pod_level_resource,
    pod_level_resources, pod_qos_class,
)

Gi = Decimal(2**30)
Mi = Decimal(2**20)


def ctr(name, requests=None, limits=None, restart=None, **extra):
    c = {"name": name, "image": f"registry.example.com/{name}:1"}
    res = {}
    if requests is not None:
        res["requests"] = requests
    if limits is not None:
        res["limits"] = limits
    if res:
        c["resources"] = res
    if restart:
        c["restartPolicy"] = restart
    c.update(extra)
    return c


def pod(containers, init=(), requests=None, limits=None, resources=None, **extra):
    spec = {"containers": list(containers)}
    if init:
        spec["initContainers"] = list(init)
    if resources is not None:
        spec["resources"] = resources
    elif requests is not None or limits is not None:
        spec["resources"] = {k: v for k, v in (("requests", requests), ("limits", limits))
                             if v is not None}
    spec.update(extra)
    return spec


GUARANTEED_POD = {"cpu": "4", "memory": "4Gi"}


# --------------------------------------------------------------------------- names

def test_supported_pod_level_resources_are_cpu_memory_and_hugepages():
    assert is_supported_pod_level_resource("cpu")
    assert is_supported_pod_level_resource("memory")
    assert is_supported_pod_level_resource("hugepages-2Mi")
    assert not is_supported_pod_level_resource("ephemeral-storage")
    assert not is_supported_pod_level_resource("nvidia.com/gpu")


def test_overcommit_allowed_for_native_resources_except_hugepages():
    assert is_overcommit_allowed("cpu") and is_overcommit_allowed("memory")
    assert is_overcommit_allowed("ephemeral-storage")
    assert not is_overcommit_allowed("hugepages-1Gi")
    assert not is_overcommit_allowed("nvidia.com/gpu")


# --------------------------------------------------------------------------- container defaulting

def test_container_request_defaults_to_its_limit_per_resource():
    c = ctr("a", requests={"cpu": "1"}, limits={"cpu": "2", "memory": "1Gi"})
    assert container_requests(c) == {"cpu": Decimal(1), "memory": Gi}
    assert container_limits(c) == {"cpu": Decimal(2), "memory": Gi}


def test_container_without_resources_has_none():
    assert container_requests(ctr("a")) == {} and container_limits(ctr("a")) == {}


# --------------------------------------------------------------------------- aggregate (KEP-753)

def test_aggregate_sums_app_containers_and_sidecars():
    spec = pod([ctr("app", {"cpu": "2"})], init=[ctr("proxy", {"cpu": "1"}, restart="Always")])
    assert aggregate_container_requests(spec) == {"cpu": Decimal(3)}


def test_aggregate_takes_init_peak_with_sidecars_started_before_it():
    spec = pod([ctr("app", {"cpu": "2"})], init=[
        ctr("sidecar-a", {"cpu": "1"}, restart="Always"),
        ctr("migrate", {"cpu": "5"}),                       # runs with sidecar-a: 6
        ctr("sidecar-c", {"cpu": "2"}, restart="Always"),   # not running during migrate
    ])
    assert aggregate_container_requests(spec) == {"cpu": Decimal(6)}


def test_aggregate_long_running_wins_when_larger_than_init_peak():
    spec = pod([ctr("app", {"cpu": "2"})], init=[
        ctr("sidecar-a", {"cpu": "1"}, restart="Always"),
        ctr("migrate", {"cpu": "3"}),
        ctr("sidecar-c", {"cpu": "2"}, restart="Always"),
    ])
    assert aggregate_container_requests(spec) == {"cpu": Decimal(5)}     # 2 + 1 + 2


def test_aggregate_uses_defaulted_requests_and_only_declared_names():
    spec = pod([ctr("a", limits={"cpu": "2"}), ctr("b", {"memory": "1Gi"})])
    assert aggregate_container_requests(spec) == {"cpu": Decimal(2), "memory": Gi}
    assert aggregate_container_limits(spec) == {"cpu": Decimal(2)}


def test_restart_policy_other_than_always_is_a_plain_init_container():
    spec = pod([ctr("app", {"cpu": "1"})], init=[ctr("init", {"cpu": "3"}, restart="OnFailure")])
    assert aggregate_container_requests(spec) == {"cpu": Decimal(3)}


# --------------------------------------------------------------------------- pod-level defaulting

def test_limits_only_with_bare_containers_defaults_requests_to_limits_and_is_guaranteed():
    spec = pod([ctr("a"), ctr("b")], limits=GUARANTEED_POD)
    requests, limits = pod_level_resources(spec)
    assert requests == {"cpu": Decimal(4), "memory": 4 * Gi}
    plr = pod_level_resources(spec)
    assert plr.origin("requests", "cpu").source == "pod-limit"
    assert pod_qos_class(spec).qos_class == GUARANTEED


def test_defaulting_trap_container_request_becomes_the_pod_request():
    spec = pod([ctr("app", {"cpu": "1"}), ctr("b")], limits=GUARANTEED_POD)
    plr = pod_level_resources(spec)
    assert plr.requests["cpu"] == Decimal(1)
    assert plr.requests["memory"] == 4 * Gi                 # no container asks for memory
    origin = plr.origin("requests", "cpu")
    assert origin.source == "containers" and origin.contributors == (("app", Decimal(1)),)
    qos = pod_qos_class(spec)
    assert qos.qos_class == BURSTABLE and qos.resource == "cpu"
    assert "'app' requests.cpu=1" in qos.reason


def test_trap_uses_the_sidecar_aware_aggregate():
    spec = pod([ctr("app", {"cpu": "1"})], init=[ctr("proxy", {"cpu": "1"}, restart="Always")],
               limits=GUARANTEED_POD)
    assert pod_level_resources(spec).requests["cpu"] == Decimal(2)


def test_pod_request_defaults_from_containers_even_without_that_pod_limit():
    spec = pod([ctr("app", {"cpu": "1"})], limits={"memory": "4Gi"})
    assert pod_level_resources(spec).requests == {"cpu": Decimal(1), "memory": 4 * Gi}


def test_requests_are_not_defaulted_without_pod_limits():
    spec = pod([ctr("app", {"cpu": "1", "memory": "1Gi"})], requests={"cpu": "2"})
    plr = pod_level_resources(spec)
    assert plr.requests == {"cpu": Decimal(2)}
    assert plr.limits == {}                      # app has no limits: defaultPodLimits skips


def test_pod_limits_default_from_containers_only_when_every_container_has_one():
    spec = pod([ctr("a", limits={"cpu": "1", "memory": "1Gi"}),
                ctr("b", limits={"cpu": "2"})], requests={"cpu": "3", "memory": "2Gi"})
    plr = pod_level_resources(spec)
    assert plr.limits == {"cpu": Decimal(3)}     # memory: 'b' has no memory limit
    assert plr.origin("limits", "cpu").source == "containers"
    assert pod_qos_class(spec).qos_class == BURSTABLE


def test_pod_limits_default_counts_init_containers_with_the_aggregate():
    spec = pod([ctr("a", limits={"cpu": "1", "memory": "1Gi"})],
               init=[ctr("i", limits={"cpu": "3", "memory": "1Gi"})],
               requests={"cpu": "3", "memory": "1Gi"})
    plr = pod_level_resources(spec)
    assert plr.limits == {"cpu": Decimal(3), "memory": Gi}
    assert pod_qos_class(spec).qos_class == GUARANTEED


def test_hugepage_pod_limit_defaults_to_container_aggregate_and_request_follows():
    spec = pod([ctr("dpdk", {"hugepages-1Gi": "2Gi"}, {"hugepages-1Gi": "2Gi"})],
               requests=GUARANTEED_POD, limits=GUARANTEED_POD)
    plr = pod_level_resources(spec)
    assert plr.limits["hugepages-1Gi"] == 2 * Gi
    assert plr.requests["hugepages-1Gi"] == 2 * Gi
    assert plr.origin("limits", "hugepages-1Gi").source == "containers"


def test_hugepage_limit_not_defaulted_when_pod_requests_hugepages():
    spec = pod([ctr("dpdk", limits={"hugepages-2Mi": "1Gi"})],
               requests={"cpu": "1", "memory": "1Gi", "hugepages-2Mi": "512Mi"})
    assert "hugepages-2Mi" not in pod_level_resources(spec).limits


def test_defaulted_hugepage_limit_blocks_cpu_memory_limit_defaulting():
    # defaultPodLimits runs only when no pod-level limit is set; the hugepage default counts.
    spec = pod([ctr("dpdk", limits={"hugepages-2Mi": "1Gi", "cpu": "1", "memory": "1Gi"})],
               requests={"cpu": "1", "memory": "1Gi"})
    plr = pod_level_resources(spec)
    assert plr.limits == {"hugepages-2Mi": Gi}


def test_no_pod_level_resources_means_nothing_is_defaulted():
    spec = pod([ctr("a", limits={"cpu": "1", "memory": "1Gi"})])
    plr = pod_level_resources(spec)
    assert not plr.present and not plr.is_set and plr.requests == {} and plr.limits == {}


@pytest.mark.parametrize("resources", [{}, {"requests": {}}, {"limits": {}}])
def test_empty_pod_level_resources_are_present_but_empty(resources):
    plr = pod_level_resources(pod([ctr("a", limits={"cpu": "1"})], resources=resources))
    assert plr.present and plr.is_empty and not plr.is_set and plr.requests == {}


# --------------------------------------------------------------------------- QoS

def test_classic_qos_guaranteed_when_every_container_has_equal_cpu_and_memory():
    spec = pod([ctr("a", limits={"cpu": "1", "memory": "1Gi"}),
                ctr("b", {"cpu": "500m", "memory": "1Gi"}, {"cpu": "500m", "memory": "1Gi"})])
    qos = pod_qos_class(spec)
    assert qos.qos_class == GUARANTEED and not qos.pod_level


def test_classic_qos_burstable_names_the_container_and_resource():
    spec = pod([ctr("a", limits={"cpu": "1", "memory": "1Gi"}),
                ctr("b", {"cpu": "1", "memory": "1Gi"}, {"cpu": "2", "memory": "1Gi"})])
    qos = pod_qos_class(spec)
    assert (qos.qos_class, qos.container, qos.resource) == (BURSTABLE, "b", "cpu")
    assert qos.path == ("containers", 1, "resources", "requests", "cpu")


def test_classic_qos_init_containers_count():
    spec = pod([ctr("a", limits={"cpu": "1", "memory": "1Gi"})],
               init=[ctr("i", {"cpu": "100m"})])
    assert pod_qos_class(spec).qos_class == BURSTABLE


def test_classic_qos_best_effort_and_mixed():
    assert pod_qos_class(pod([ctr("a"), ctr("b")])).qos_class == BEST_EFFORT
    mixed = pod([ctr("a", limits={"cpu": "1", "memory": "1Gi"}), ctr("b")])
    assert pod_qos_class(mixed).qos_class == BURSTABLE


def test_classic_qos_cpu_only_is_burstable():
    assert pod_qos_class(pod([ctr("a", limits={"cpu": "1"})])).qos_class == BURSTABLE


def test_classic_qos_ignores_other_resources():
    spec = pod([ctr("a", {"ephemeral-storage": "1Gi"})])
    assert pod_qos_class(spec).qos_class == BEST_EFFORT


def test_pod_level_resources_alone_decide_qos():
    spec = pod([ctr("a", {"cpu": "100m"}, {"cpu": "2"})], requests=GUARANTEED_POD,
               limits=GUARANTEED_POD)
    qos = pod_qos_class(spec)
    assert qos.qos_class == GUARANTEED and qos.pod_level
    assert pod_qos_class(spec, pod_level_enabled=False).qos_class == BURSTABLE


def test_pod_level_cpu_only_is_burstable():
    spec = pod([ctr("a")], requests={"cpu": "2"}, limits={"cpu": "2"})
    qos = pod_qos_class(spec)
    assert qos.qos_class == BURSTABLE and qos.resource == "memory"


def test_pod_level_request_below_limit_is_burstable():
    spec = pod([ctr("a")], requests={"cpu": "2", "memory": "4Gi"}, limits=GUARANTEED_POD)
    qos = pod_qos_class(spec)
    assert (qos.qos_class, qos.resource, qos.path) == (BURSTABLE, "cpu",
                                                       ("resources", "requests", "cpu"))


@pytest.mark.parametrize("resources", [{}, {"requests": {}}, {"limits": {}}])
def test_empty_pod_level_resources_do_not_affect_qos_with_the_fix(resources):
    spec = pod([ctr("a", limits={"cpu": "1", "memory": "1Gi"})], resources=resources)
    assert pod_qos_class(spec).qos_class == GUARANTEED
    # before PodLevelResourcesFixKubeletQOSClass, `resources: {}` made the pod BestEffort
    assert pod_qos_class(spec, qos_fix=False).qos_class == BEST_EFFORT


# --------------------------------------------------------------------------- eligibility

@pytest.mark.parametrize("value,whole", [("1", True), ("2.0", True), ("1000m", True),
                                         ("1500m", False), ("0.5", False), ("1001m", False)])
def test_integral_cpu(value, whole):
    from numaguard.lint.k8s.quantity import parse_quantity
    assert is_integral_cpu(parse_quantity(value)) is whole


@pytest.mark.parametrize("c,eligible", [
    (ctr("a", limits={"cpu": "2", "memory": "1Gi"}), True),                  # requests default
    (ctr("a", {"cpu": "2", "memory": "1Gi"}, {"cpu": "2", "memory": "1Gi"}), True),
    (ctr("a", {"cpu": "1500m", "memory": "1Gi"}, {"cpu": "1500m", "memory": "1Gi"}), True),
    (ctr("a", {"cpu": "1", "memory": "1Gi"}, {"cpu": "2", "memory": "1Gi"}), False),
    (ctr("a", limits={"cpu": "2"}), False),                                  # no memory
    (ctr("a", limits={"cpu": "0", "memory": "0"}), False),                   # zero
    (ctr("a"), False),
])
def test_container_equivalent_qos_guaranteed(c, eligible):
    assert is_container_equivalent_qos_guaranteed(c) is eligible


# --------------------------------------------------------------------------- pod-scope budget

def test_budget_splits_exclusive_and_shared():
    spec = pod([ctr("kv", limits={"cpu": "6", "memory": "12Gi"}),
                ctr("backup", {"cpu": "500m", "memory": "1Gi"}, {"cpu": "2", "memory": "2Gi"})],
               requests={"cpu": "8", "memory": "16Gi"}, limits={"cpu": "8", "memory": "16Gi"})
    b = pod_scope_budget(spec)
    assert b.managed and b.cpus == 8 and b.memory == {"memory": 16 * Gi}
    assert exclusive_cpu_containers(spec) == {"kv": 6}
    assert b.shared_pool_cpus == 2 and b.shared_pool_memory == {"memory": 4 * Gi}
    assert [p.name for p in b.shared_containers] == ["backup"]
    assert b.rejections == []


def test_fractional_container_cpu_gets_memory_slice_only():
    spec = pod([ctr("a", limits={"cpu": "1500m", "memory": "1Gi"})],
               requests={"cpu": "2", "memory": "2Gi"}, limits={"cpu": "2", "memory": "2Gi"})
    (p,) = pod_scope_budget(spec).placements
    assert p.exclusive_cpus == 0 and p.exclusive_memory == {"memory": Gi}
    assert "1500m" in p.cpu_reason


def test_non_guaranteed_pod_gets_nothing_exclusive():
    spec = pod([ctr("a", limits={"cpu": "2", "memory": "1Gi"})],
               requests={"cpu": "2", "memory": "2Gi"}, limits={"cpu": "4", "memory": "2Gi"})
    b = pod_scope_budget(spec)
    assert not b.managed and b.cpus == 0 and exclusive_cpu_containers(spec) == {}


def test_fractional_pod_cpu_means_no_cpu_bubble_and_no_cpu_rejection():
    spec = pod([ctr("a", limits={"cpu": "2", "memory": "1Gi"}), ctr("b")],
               requests={"cpu": "2500m", "memory": "4Gi"}, limits={"cpu": "2500m", "memory": "4Gi"})
    b = pod_scope_budget(spec)
    assert b.managed and b.cpus == 0
    assert [r.manager for r in b.rejections] == []


def test_rejects_when_exclusive_cpus_equal_budget_and_someone_shares():
    spec = pod([ctr("dp", limits={"cpu": "4", "memory": "1Gi"}), ctr("metrics")],
               requests=GUARANTEED_POD, limits=GUARANTEED_POD)
    (r,) = pod_scope_budget(spec).rejections
    assert r.manager == "cpu"
    assert r.message == ("pod rejected, sum of exclusive container cpu requests equals pod "
                         "budget, leaving no cpus for shared containers")


def test_exclusive_below_budget_is_admitted():
    spec = pod([ctr("dp", limits={"cpu": "3", "memory": "1Gi"}), ctr("metrics")],
               requests=GUARANTEED_POD, limits=GUARANTEED_POD)
    assert pod_scope_budget(spec).rejections == []


def test_all_exclusive_without_shared_containers_is_admitted():
    spec = pod([ctr("a", limits={"cpu": "2", "memory": "2Gi"}),
                ctr("b", limits={"cpu": "2", "memory": "2Gi"})],
               requests=GUARANTEED_POD, limits=GUARANTEED_POD)
    b = pod_scope_budget(spec)
    assert b.rejections == [] and b.shared_pool_cpus == 0


def test_sidecars_count_as_long_running_exclusive():
    spec = pod([ctr("app", limits={"cpu": "3", "memory": "1Gi"})],
               init=[ctr("proxy", limits={"cpu": "1", "memory": "1Gi"}, restart="Always"),
                     ctr("shell", restart="Always")],
               requests=GUARANTEED_POD, limits=GUARANTEED_POD)
    (r,) = pod_scope_budget(spec).rejections
    assert r.manager == "cpu" and "equals pod budget" in r.message


def test_memory_rejection_names_the_resource():
    spec = pod([ctr("app", limits={"cpu": "2", "memory": "3Gi"}), ctr("logger")],
               init=[ctr("cache", limits={"cpu": "1", "memory": "1Gi"}, restart="Always")],
               requests={"cpu": "6", "memory": "4Gi"}, limits={"cpu": "6", "memory": "4Gi"})
    (r,) = pod_scope_budget(spec).rejections
    assert r.manager == "memory"
    assert r.message == ("pod rejected, sum of exclusive container memory requests equals pod "
                         "budget, leaving no memory for shared containers")


def test_exclusive_init_container_larger_than_budget_left_by_sidecars():
    spec = pod([ctr("app")],
               init=[ctr("proxy", limits={"cpu": "2", "memory": "1Gi"}, restart="Always"),
                     ctr("warm", limits={"cpu": "3", "memory": "1Gi"})],
               requests=GUARANTEED_POD, limits=GUARANTEED_POD)
    r = pod_scope_budget(spec).rejections[0]
    assert r.container == "warm"
    assert r.message == ("pod rejected, largest exclusive init container requests 3 cpus, but "
                         "only 2 available")


def test_shared_init_container_after_sidecars_took_everything():
    spec = pod([ctr("app", limits={"cpu": "1", "memory": "1Gi"})],
               init=[ctr("proxy", limits={"cpu": "4", "memory": "1Gi"}, restart="Always"),
                     ctr("setup")],
               requests={"cpu": "4", "memory": "4Gi"}, limits={"cpu": "4", "memory": "4Gi"})
    r = pod_scope_budget(spec).rejections[0]
    assert r.message == ("pod rejected, pod has shared init containers but no cpus available "
                         "for them")


def test_init_container_may_reuse_whole_budget():
    spec = pod([ctr("app", limits={"cpu": "2", "memory": "1Gi"}), ctr("side")],
               init=[ctr("warm", limits={"cpu": "4", "memory": "1Gi"})],
               requests=GUARANTEED_POD, limits=GUARANTEED_POD)
    assert pod_scope_budget(spec).rejections == []


def test_hugepages_are_part_of_the_memory_slice_and_budget():
    spec = pod([ctr("dpdk", limits={"cpu": "2", "memory": "1Gi", "hugepages-1Gi": "2Gi"}),
                ctr("ctl")],
               requests={"cpu": "4", "memory": "4Gi", "hugepages-1Gi": "2Gi"},
               limits={"cpu": "4", "memory": "4Gi", "hugepages-1Gi": "2Gi"})
    b = pod_scope_budget(spec)
    assert b.memory == {"memory": 4 * Gi, "hugepages-1Gi": 2 * Gi}
    assert b.placements[0].exclusive_memory == {"memory": Gi, "hugepages-1Gi": 2 * Gi}
    (r,) = b.rejections
    assert r.resource == "hugepages-1Gi" and "hugepages-1Gi requests equals pod budget" in r.message


def test_classic_pod_totals_take_max_of_init_and_long_running():
    spec = pod([ctr("app", limits={"cpu": "2", "memory": "1Gi"})],
               init=[ctr("side", limits={"cpu": "1", "memory": "1Gi"}, restart="Always"),
                     ctr("warm", limits={"cpu": "5", "memory": "1Gi"})])
    cpus, memory = pod_exclusive_totals(spec)
    assert cpus == 6 and memory == {"memory": 2 * Gi}       # warm + side; app + side


def test_pod_totals_with_pod_level_resources_are_the_bubble():
    spec = pod([ctr("a")], requests=GUARANTEED_POD, limits=GUARANTEED_POD)
    assert pod_exclusive_totals(spec) == (4, {"memory": 4 * Gi})


def test_analysis_matches_the_functions():
    spec = pod([ctr("app", {"cpu": "1"})], limits=GUARANTEED_POD)
    a = PodAnalysis(spec)
    assert a.pod_level.requests == pod_level_resources(spec).requests
    assert a.qos == pod_qos_class(spec)
    assert a.aggregate_requests == aggregate_container_requests(spec)


# --------------------------------------------------------------------------- NG002 schema

@pytest.mark.parametrize("spec,path", [
    (pod([ctr("a", {"cpu": [1]})]), ("containers", 0, "resources", "requests", "cpu")),
    (pod([ctr("a")], resources="x"), ("resources",)),
    ({"containers": {"name": "a"}}, ("containers",)),
    ({"containers": ["nginx"]}, ("containers", 0)),
    (pod([ctr("a", {"memory": "-1Gi"})]), ("containers", 0, "resources", "requests", "memory")),
    (pod([ctr("a")], limits={"cpu": "4 cores"}), ("resources", "limits", "cpu")),
    (pod([ctr("a")], limits={"memory": "8GB"}), ("resources", "limits", "memory")),
    (pod([ctr("a")], limits={"cpu": "1e30"}), ("resources", "limits", "cpu")),
    (pod([ctr("a")], limits={"cpu": True}), ("resources", "limits", "cpu")),
    (pod([ctr("a", image=7)]), ("containers", 0, "image")),
    (pod([ctr("a")], tolerations=[{"key": "k", "value": True}]), ("tolerations", 0, "value")),
    (pod([ctr("a")], nodeSelector={"pool": 1}), ("nodeSelector", "pool")),
    ({"initContainers": [ctr("i")]}, ()),                                     # no containers
    ("spec", ()),
])
def test_schema_violations(spec, path):
    found = pod_schema_violations(spec)
    assert path in [v.path for v in found], found


def test_well_typed_pod_has_no_schema_violations():
    spec = pod([ctr("a", {"cpu": 1, "memory": "1Gi"}, {"cpu": 0.5})],
               init=[ctr("s", restart="Always", resizePolicy=[{"resourceName": "cpu"}])],
               requests=GUARANTEED_POD, limits=GUARANTEED_POD,
               nodeSelector={"pool": "numa"}, tolerations=[{"key": "k", "operator": "Exists"}])
    assert pod_schema_violations(spec) == []


# Junk pod specs, each with the schema violations it must give (paths) and whether its
# `resources` counts as declared pod-level resources.
JUNK = [
    (None, [()], False), ("x", [()], False), (3, [()], False), ([], [()], False), ({}, [()], False),
    ({"containers": None}, [()], False),
    ({"containers": [None, 1, "a", {}]}, [("containers", 0), ("containers", 1), ("containers", 2)], False),
    ({"containers": [{"resources": {"requests": "x", "limits": [1]}}], "resources": []},
     [("containers", 0, "resources", "requests"), ("containers", 0, "resources", "limits"), ("resources",)],
     False),
    ({"containers": [{"resources": {"limits": {"cpu": {"x": 1}}}}],
      "resources": {"limits": {"cpu": "bad", 3: "1"}, "requests": None}},
     [("containers", 0, "resources", "limits", "cpu"), ("resources", "limits", "cpu"), ("resources", "limits")],
     True),
    ({"containers": [{"name": 5, "restartPolicy": ["x"]}], "initContainers": "x"},
     [("containers", 0, "name"), ("containers", 0, "restartPolicy"), ("initContainers",)], False),
]


@pytest.mark.parametrize("spec,paths,present", JUNK)
def test_semantics_on_junk_are_best_effort_and_unmanaged(spec, paths, present):
    assert [v.path for v in pod_schema_violations(spec)] == paths
    plr = pod_level_resources(spec)
    assert (plr.present, plr.requests, plr.limits, plr.defaulted) == (present, {}, {}, {})
    assert pod_qos_class(spec).qos_class == BEST_EFFORT
    budget = pod_scope_budget(spec)
    assert (budget.managed, budget.cpus, budget.memory, budget.rejections) == (False, 0, {}, [])
    assert pod_exclusive_totals(spec) == (0, {})
    assert aggregate_container_requests(spec) == {}
    a = PodAnalysis(spec)
    assert a.budget == budget and a.aggregate_limits == {}
