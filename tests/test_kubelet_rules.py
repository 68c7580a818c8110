"""The KubeletConfiguration model (numaguard.lint.k8s.kubelet) and the NG2xx rules, called directly."""
from __future__ import annotations

import copy
import subprocess
import sys
from decimal import Decimal
from types import SimpleNamespace

import pytest

from numaguard.lint.k8s import kubelet as k
from numaguard.lint.k8s.kubelet_schema import _schema_validator, kubelet_schema_violations
from numaguard.lint.model import Severity
from numaguard.lint.rules import kubelet as rules
from numaguard.lint.rules.base import LintContext

MI, GI = 2**20, 2**30

GOOD = {
    "apiVersion": "kubelet.config.k8s.io/v1beta1",
    "kind": "KubeletConfiguration",
    "featureGates": {"PodLevelResources": True, "PodLevelResourceManagers": True},
    "cpuManagerPolicy": "static",
    "cpuManagerPolicyOptions": {"full-pcpus-only": "true"},
    "memoryManagerPolicy": "Static",
    "topologyManagerPolicy": "single-numa-node",
    "topologyManagerScope": "pod",
    "reservedSystemCPUs": "0,32",
    "kubeReserved": {"memory": "1Gi"},
    "systemReserved": {"memory": "768Mi"},
    "evictionHard": {"memory.available": "256Mi"},
    "reservedMemory": [{"numaNode": 0, "limits": {"memory": "1Gi"}},
                       {"numaNode": 1, "limits": {"memory": "1Gi"}}],
}

# The seed article's example (../shared/seed): no memory reservation at all.
SEED = {
    "apiVersion": "kubelet.config.k8s.io/v1beta1", "kind": "KubeletConfiguration",
    "featureGates": {"PodLevelResources": True, "PodLevelResourceManagers": True},
    "cpuManagerPolicy": "static", "memoryManagerPolicy": "Static",
    "topologyManagerPolicy": "single-numa-node", "topologyManagerScope": "pod",
    "reservedSystemCPUs": "0-1",
}

ALL_RULES = [rules.gate_pod_level_resources, rules.gate_pod_level_resource_managers,
             rules.cpu_manager_not_static, rules.memory_manager_not_static,
             rules.topology_scope_not_pod, rules.topology_policy_weak, rules.cpu_reservation_missing,
             rules.reserved_memory_mismatch, rules.reserved_cpus_invalid, rules.feature_gate_invalid,
             rules.policy_option_invalid, rules.kubernetes_version]


def config(**changes) -> dict:
    kc = copy.deepcopy(GOOD)
    for key, value in changes.items():
        if value is None:
            kc.pop(key, None)
        else:
            kc[key] = value
    return kc


def gates(**values) -> dict:
    return {"PodLevelResources": True, "PodLevelResourceManagers": True, **values}


def run(rule, kc, version=(1, 37), node=None):
    return list(rule.check(kc, LintContext(kubernetes_version=version, node=node)))


@pytest.fixture(scope="module")
def dual_socket():
    from numaguard.lint.numa.node import load_node_file
    return load_node_file("builtin:dual-socket-ht")      # 2 sockets x 16 cores x 2 threads


def test_good_config_passes_every_rule_and_the_schema():
    assert kubelet_schema_violations(GOOD) == []
    for rule in ALL_RULES:
        assert run(rule, GOOD) == [], rule.id


def test_rule_metadata():
    assert [r.id for r in ALL_RULES] == ["NG201", "NG202", "NG203", "NG204", "NG205", "NG206",
                                         "NG207", "NG208", "NG209", "NG210", "NG211", "NG213"]
    assert all(r.target == "kubelet" for r in ALL_RULES)
    assert rules.topology_policy_weak.severity == Severity.WARNING
    assert rules.feature_gate_invalid.name == "feature-gate-invalid"


# --- gates -----------------------------------------------------------------------------------

def test_gate_defaults_per_version():
    g136, g137 = k.effective_gates({}, (1, 36)), k.effective_gates({}, (1, 37))
    assert g136["PodLevelResources"] and g137["PodLevelResources"]
    assert not g136["PodLevelResourceManagers"] and not g137["PodLevelResourceManagers"]
    assert "PodLevelResourcesFixDefaulting" not in g136
    assert g137["PodLevelResourcesFixDefaulting"] and g137["PodLevelResourcesFixKubeletQOSClass"]
    assert g137["MemoryQoS"] and not g136["MemoryQoS"]
    assert k.gate_spec("PodLevelResourceManagers", (1, 37)).stage == "beta"
    assert k.gate_spec("PodLevelResourceManagers", (1, 36)).stage == "alpha"
    assert k.table_version((1, 30)) == (1, 36) and k.table_version((1, 40)) == (1, 37)


def test_explicit_gates_override_defaults_and_ignore_non_booleans():
    kc = {"featureGates": {"PodLevelResourceManagers": True, "MemoryQoS": "true", "Foo": False}}
    gates_ = k.effective_gates(kc, (1, 37))
    assert gates_["PodLevelResourceManagers"] is True
    assert gates_["MemoryQoS"] is True            # the string is NG002, default stays
    assert gates_["Foo"] is False
    assert k.gate_enabled(kc, "PodLevelResourceManagers", (1, 37))


def test_known_gate_names_and_status():
    names137, names136 = k.known_gate_names((1, 37)), k.known_gate_names((1, 36))
    assert {"PodLevelResources", "PodLevelResourceManagers", "AllAlpha", "AllBeta",
            "ContextualLogging", "WatchListClient", "CustomCPUCFSQuotaPeriod"} <= names137
    assert "PodLevelResourcesFixDefaulting" in names137
    assert "PodLevelResourcesFixDefaulting" not in names136
    assert not {"CPUManager", "MemoryManager", "TopologyManager"} & names137
    assert k.gate_status("CPUManager", (1, 37)) == "removed"
    assert k.gate_status("PerPodPIDLimit", (1, 37)) == "unconfirmed"
    assert k.gate_status("NoSuchGate", (1, 37)) == "unknown"
    assert k.gate_status("MemoryQoS", (1, 37)) == "known"


def test_locked_gates_by_version():
    assert k.locked_gates((1, 37))["NodeDeclaredFeatures"] is True
    assert "NodeDeclaredFeatures" not in k.locked_gates((1, 36))
    assert k.locked_gates((1, 37))["DisableCPUQuotaWithExclusiveCPUs"] is True
    assert "DisableCPUQuotaWithExclusiveCPUs" not in k.locked_gates((1, 36))
    for version in ((1, 36), (1, 37)):
        locked = k.locked_gates(version)
        assert locked["CPUManagerPolicyOptions"] is True
        assert locked["TopologyManagerPolicyOptions"] is True
        assert locked["InPlacePodVerticalScaling"] is True
    assert k.locked_gates((1, 37))["GitRepoVolumeDriver"] is False


def test_dependency_violations():
    kc = {"featureGates": {"PodLevelResources": False}}
    found = dict(k.dependency_violations(kc, (1, 37)))
    assert found == {"PodLevelResourcesFixDefaulting": ("PodLevelResources",),
                     "PodLevelResourcesFixKubeletQOSClass": ("PodLevelResources",),
                     "InPlacePodLevelResourcesVerticalScaling": ("PodLevelResources",)}
    assert dict(k.dependency_violations(kc, (1, 36))) == {
        "InPlacePodLevelResourcesVerticalScaling": ("PodLevelResources",)}
    off = {"featureGates": {"PodLevelResources": False, "PodLevelResourcesFixDefaulting": False,
                            "PodLevelResourcesFixKubeletQOSClass": False,
                            "InPlacePodLevelResourcesVerticalScaling": False}}
    assert k.dependency_violations(off, (1, 37)) == []
    assert k.go_list(["A", "B"]) == "[A B]"


# --- Go parsing ------------------------------------------------------------------------------

@pytest.mark.parametrize("text", ["1", "t", "T", "TRUE", "true", "True"])
def test_parse_go_bool_true(text):
    assert k.parse_go_bool(text) is True


@pytest.mark.parametrize("text", ["0", "f", "F", "FALSE", "false", "False"])
def test_parse_go_bool_false(text):
    assert k.parse_go_bool(text) is False


@pytest.mark.parametrize("text", ["yes", "TrUe", "", " true", "on", True, 1])
def test_parse_go_bool_rejects(text):
    with pytest.raises(ValueError, match="strconv.ParseBool: parsing .*: invalid syntax"):
        k.parse_go_bool(text)


def test_parse_go_int():
    assert k.parse_go_int("16") == 16 and k.parse_go_int("+8") == 8 and k.parse_go_int("-1") == -1
    for bad in ("eight", "8.0", " 8", "", "1_0", 8):
        with pytest.raises(ValueError, match="strconv.Atoi"):
            k.parse_go_int(bad)


# --- policies, options, reservations -----------------------------------------------------------

def test_policy_defaults():
    assert k.cpu_manager_policy({}) == ("none", False)
    assert k.memory_manager_policy({}) == ("None", False)
    assert k.topology_manager_policy({}) == ("none", False)
    assert k.topology_manager_scope({}) == ("container", False)
    assert k.topology_manager_scope({"topologyManagerScope": "pod"}) == ("pod", True)
    assert k.cpu_manager_policy({"cpuManagerPolicy": ""}) == ("none", False)


def test_cpu_manager_options_and_max_numa_nodes():
    kc = {"cpuManagerPolicyOptions": {"full-pcpus-only": "T", "bogus": "true", "align-by-socket": "x"},
          "topologyManagerPolicyOptions": {"max-allowable-numa-nodes": "16"}}
    assert k.cpu_manager_options(kc) == {"full-pcpus-only": True}
    assert k.max_allowable_numa_nodes(kc) == 16
    assert k.max_allowable_numa_nodes({}) == 8


def test_reserved_cpu_count():
    assert k.reserved_cpu_count({}) == 0
    assert k.reserved_cpu_count({"kubeReserved": {"cpu": "500m"}, "systemReserved": {"cpu": "700m"}}) == 2
    # reservedSystemCPUs overrides kubeReserved/systemReserved cpu (cmd/kubelet server.go)
    assert k.reserved_cpu_count({"reservedSystemCPUs": "0-3", "kubeReserved": {"cpu": "8"}}) == 4
    assert k.reserved_cpu_count({"reservedSystemCPUs": "", "systemReserved": {"cpu": "1"}}) == 1
    assert k.reserved_system_cpus({"reservedSystemCPUs": "0-1,32-33"}) == frozenset({0, 1, 32, 33})
    with pytest.raises(k.CPUSetError):
        k.reserved_system_cpus({"reservedSystemCPUs": "3-0"})


def test_effective_eviction_hard():
    assert k.effective_eviction_hard({})["memory.available"] == "100Mi"
    assert k.effective_eviction_hard({"evictionHard": {"nodefs.available": "5%"}}) == {"nodefs.available": "5%"}
    merged = k.effective_eviction_hard({"evictionHard": {"nodefs.available": "5%"},
                                        "mergeDefaultEvictionSettings": True})
    assert merged["memory.available"] == "100Mi" and merged["nodefs.available"] == "5%"
    assert k.memory_eviction({}).source == "default"
    assert k.memory_eviction({"evictionHard": {}}).value is None


def test_memory_reservation_numbers():
    res = k.memory_reservation(GOOD)
    assert res.required == {"memory": Decimal(2 * GI)}
    assert res.reserved == {"memory": Decimal(2 * GI)}
    assert res.mismatches() == {}
    assert k.reserved_memory_by_numa(GOOD) == {0: {"memory": Decimal(GI)}, 1: {"memory": Decimal(GI)}}
    percent = config(evictionHard={"memory.available": "1%"})
    assert k.memory_reservation(percent).approximate
    exact = k.memory_reservation(percent, capacity=100 * GI)
    assert not exact.approximate
    # 1% is float32 0.0099999998 to the kubelet: 1,073,741,800 bytes of 100Gi, not 1Gi
    assert exact.required["memory"] == Decimal(GI + 768 * MI + 1_073_741_800)


# --- NG002 -------------------------------------------------------------------------------------

def _ng002(kc):
    return [(v.path, v.message) for v in kubelet_schema_violations(kc)]


def test_schema_unknown_fields_top_level_and_nested():
    found = _ng002(config(CpuManagerPolicy="static", bogus=1))
    assert [p for p, _ in found] == [("CpuManagerPolicy",), ("bogus",)]
    assert "unknown field CpuManagerPolicy (did you mean cpuManagerPolicy?)" in found[0][1]
    assert "ignores it" in found[0][1]
    nested = _ng002(config(reservedMemory=[{"numaNode": 0, "numa": 1, "limits": {"memory": "1Gi"}}]))
    assert nested == [(("reservedMemory", 0, "numa"), "reservedMemory[0]: unknown field numa")]


def test_schema_option_maps_and_string_maps_take_strings_only():
    found = _ng002(config(cpuManagerPolicyOptions={"full-pcpus-only": True}))
    assert found[0][0] == ("cpuManagerPolicyOptions", "full-pcpus-only")
    assert "must be a string, not the boolean true" in found[0][1] and '"true"' in found[0][1]
    found = _ng002(config(kubeReserved={"cpu": 1}))
    assert found[0][0] == ("kubeReserved", "cpu") and "not the number 1" in found[0][1]
    found = _ng002(config(topologyManagerPolicyOptions={"max-allowable-numa-nodes": 16}))
    assert found[0][0] == ("topologyManagerPolicyOptions", "max-allowable-numa-nodes")


def test_schema_type_errors_quote_the_go_decoder():
    [(path, msg)] = _ng002(config(kubeReserved={"cpu": 1}))
    assert ("json: cannot unmarshal number into Go struct field KubeletConfiguration.kubeReserved of "
            "type string") in msg
    [(path, msg)] = _ng002(config(reservedSystemCPUs=0))
    assert path == ("reservedSystemCPUs",) and 'quote it (e.g. "0")' in msg


def test_schema_feature_gates_are_booleans():
    found = _ng002(config(featureGates={"PodLevelResourceManagers": "true"}))
    assert found[0][0] == ("featureGates", "PodLevelResourceManagers")
    assert "boolean" in found[0][1]


def test_schema_types():
    assert _ng002(config(reservedSystemCPUs=[0, 1]))[0][0] == ("reservedSystemCPUs",)
    assert _ng002(config(maxPods="110"))[0][0] == ("maxPods",)
    assert _ng002(config(reservedMemory=[{"numaNode": "0", "limits": {"memory": "1Gi"}}]))[0][0] == \
        ("reservedMemory", 0, "numaNode")
    assert _ng002(config(reservedMemory=[{"numaNode": 0}]))           # limits required
    # Quantity fields accept numbers (resource.Quantity unmarshals JSON numbers)
    assert _ng002(config(reservedMemory=[{"numaNode": 0, "limits": {"memory": 2147483648}}])) == []
    assert _ng002(config(logging={"format": "json"}, failCgroupV1=True, memoryThrottlingFactor=0.9)) == []


def test_schema_quantities():
    found = _ng002(config(reservedMemory=[{"numaNode": 0, "limits": {"memory": "1GB"}}]))
    assert found == [(("reservedMemory", 0, "limits", "memory"),
                      "reservedMemory[0].limits.memory: '1GB' is not a quantity (e.g. \"1Gi\")")]
    assert _ng002(config(kubeReserved={"cpu": "one"}))[0][0] == ("kubeReserved", "cpu")
    assert _ng002(config(evictionHard={"memory.available": "lots"}))[0][0] == ("evictionHard", "memory.available")
    assert _ng002(config(evictionHard={"memory.available": "150%"}))
    hugepages = _ng002(config(systemReserved={"hugepages-2Mi": "64Mi"}))
    assert 'cannot reserve "hugepages-2Mi" resource' in hugepages[0][1]
    assert _ng002(config(evictionHard={"memory.available": "5%", "nodefs.available": "10%"})) == []


def test_schema_covers_every_v1beta1_field():
    import json
    from importlib import resources
    schema = json.loads(resources.files("numaguard.lint.k8s").joinpath("kubelet-config.schema.json").read_text())
    assert schema["additionalProperties"] is False
    for field in ("cpuManagerPolicy", "cpuManagerPolicyOptions", "memoryManagerPolicy",
                  "topologyManagerPolicyOptions", "reservedSystemCPUs", "reservedMemory",
                  "mergeDefaultEvictionSettings", "failCgroupV1", "defaultPodSysctls",
                  "memoryReservationPolicy", "containerRuntimeEndpoint", "userNamespaces"):
        assert field in schema["properties"]
    assert len(schema["properties"]) == 128        # 126 fields of types.go + apiVersion, kind


def test_jsonschema_is_imported_lazily_and_validator_cached():
    code = "import sys, numaguard.lint.k8s.kubelet, numaguard.lint.rules.kubelet; print('jsonschema' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
    kubelet_schema_violations(GOOD)
    before = _schema_validator.cache_info().hits
    kubelet_schema_violations(GOOD)
    assert _schema_validator.cache_info().hits == before + 1


# --- NG201 -------------------------------------------------------------------------------------

def test_ng201_on_137_quotes_the_startup_failure():
    [v] = run(rules.gate_pod_level_resources, config(featureGates={"PodLevelResources": False}))
    assert v.path == ("featureGates", "PodLevelResources")
    assert ('"PodLevelResourcesFixDefaulting is enabled, but depends on features that are disabled: '
            '[PodLevelResources]"') in v.message
    assert "PodLevelResourcesFixKubeletQOSClass" in v.message
    assert "refuses to start" in v.message


def test_ng201_on_136_names_the_resize_gate_only():
    [v] = run(rules.gate_pod_level_resources, config(featureGates={"PodLevelResources": False}), (1, 36))
    assert "InPlacePodLevelResourcesVerticalScaling is enabled" in v.message
    assert "FixDefaulting" not in v.message


def test_ng201_without_dependents_still_errors_but_no_startup_failure():
    off = {"PodLevelResources": False, "PodLevelResourcesFixDefaulting": False,
           "PodLevelResourcesFixKubeletQOSClass": False, "InPlacePodLevelResourcesVerticalScaling": False}
    [v] = run(rules.gate_pod_level_resources, config(featureGates=off))
    assert "refuses to start" not in v.message and "ignores pod-level" in v.message


def test_ng201_silent_when_enabled_or_default():
    assert run(rules.gate_pod_level_resources, GOOD) == []
    assert run(rules.gate_pod_level_resources, config(featureGates=None)) == []


# --- NG202 -------------------------------------------------------------------------------------

def test_ng202_absent_is_off_by_default_in_137():
    [v] = run(rules.gate_pod_level_resource_managers, config(featureGates={"PodLevelResources": True}))
    assert v.path == ("featureGates",)
    assert "not set (default false in 1.37: beta, disabled by default)" in v.message
    [v] = run(rules.gate_pod_level_resource_managers, config(featureGates=None))
    assert v.path == ()


def test_ng202_explicit_false_and_136():
    [v] = run(rules.gate_pod_level_resource_managers, config(featureGates=gates(PodLevelResourceManagers=False)))
    assert v.path == ("featureGates", "PodLevelResourceManagers") and "set to false" in v.message
    [v] = run(rules.gate_pod_level_resource_managers, config(featureGates=None), (1, 36))
    assert "alpha" in v.message
    assert run(rules.gate_pod_level_resource_managers, config(featureGates=None), (1, 35)) == []


# --- NG203 / NG204 / NG205 / NG206 -------------------------------------------------------------

def test_ng203_cpu_manager_policy():
    [v] = run(rules.cpu_manager_not_static, config(cpuManagerPolicy=None))
    assert v.path == () and "not set (default none)" in v.message
    [v] = run(rules.cpu_manager_not_static, config(cpuManagerPolicy="Static"))
    assert v.path == ("cpuManagerPolicy",) and 'unknown policy: "Static"' in v.message
    assert "case-sensitive" in v.message
    [v] = run(rules.cpu_manager_not_static, config(cpuManagerPolicy="none"))
    assert "cpuManagerPolicy is none" in v.message
    [v] = run(rules.cpu_manager_not_static, config(cpuManagerPolicy="exclusive"))
    assert 'unknown policy: "exclusive"' in v.message


def test_ng204_memory_manager_policy():
    [v] = run(rules.memory_manager_not_static, config(memoryManagerPolicy=None))
    assert v.path == () and "not set (default None)" in v.message
    [v] = run(rules.memory_manager_not_static, config(memoryManagerPolicy="BestEffort"))
    assert 'policy "BestEffort" is not available for platform "linux"' in v.message
    assert "Windows-only" in v.message
    [v] = run(rules.memory_manager_not_static, config(memoryManagerPolicy="static"))
    assert 'unknown policy: "static"' in v.message and 'use "Static"' in v.message
    [v] = run(rules.memory_manager_not_static, config(memoryManagerPolicy="None"))
    assert v.path == ("memoryManagerPolicy",)


def test_ng205_topology_scope():
    [v] = run(rules.topology_scope_not_pod, config(topologyManagerScope=None))
    assert v.path == () and "not set (default container)" in v.message
    [v] = run(rules.topology_scope_not_pod, config(topologyManagerScope="container"))
    assert v.path == ("topologyManagerScope",) and "ignored for placement" in v.message
    [v] = run(rules.topology_scope_not_pod, config(topologyManagerScope="Pod"))
    assert ('invalid configuration: topologyManagerScope (--topology-manager-scope) "Pod" must be '
            'one of: "container", or "pod"') in v.message


@pytest.mark.parametrize("policy,severity", [(None, None), ("none", None), ("best-effort", None),
                                             ("restricted", Severity.INFO),
                                             ("single-numa", Severity.ERROR)])
def test_ng206_topology_policy_severities(policy, severity):
    [v] = run(rules.topology_policy_weak, config(topologyManagerPolicy=policy))
    assert v.severity == severity                 # None = the rule's default, warning
    if policy is None:
        assert v.path == () and "not set (default none)" in v.message
    if policy == "single-numa":
        assert 'topologyManagerPolicy (--topology-manager-policy) "single-numa" must be one of' in v.message


def test_ng206_single_numa_node_is_silent():
    assert run(rules.topology_policy_weak, config(topologyManagerPolicy="single-numa-node")) == []


# --- NG207 -------------------------------------------------------------------------------------

def test_ng207_static_without_reserved_cpus():
    [v] = run(rules.cpu_reservation_missing, config(reservedSystemCPUs=None))
    assert v.path == ()
    assert '"[cpumanager] unable to determine reserved CPU resources for static policy"' in v.message
    [v] = run(rules.cpu_reservation_missing, config(reservedSystemCPUs=None, kubeReserved={"cpu": "0"}))
    assert v.path == ("kubeReserved", "cpu") and "kubeReserved.cpu '0'" in v.message


def test_ng207_reservations_that_work():
    assert run(rules.cpu_reservation_missing, config(reservedSystemCPUs=None, systemReserved={"cpu": "100m"})) == []
    assert run(rules.cpu_reservation_missing, GOOD) == []
    assert run(rules.cpu_reservation_missing, config(reservedSystemCPUs=None, cpuManagerPolicy="none")) == []
    assert run(rules.cpu_reservation_missing, config(reservedSystemCPUs="x")) == []    # NG209's


# --- NG208 -------------------------------------------------------------------------------------

def test_ng208_seed_article_needs_100mi():
    [v] = run(rules.reserved_memory_mismatch, SEED)
    assert v.path == ()
    assert ('the total amount "0" of type "memory" is not equal to the value "100Mi" determined by '
            'Node Allocatable feature') in v.message
    assert "evictionHard memory.available 100Mi (default)" in v.message
    assert "reservedMemory is not set" in v.message
    assert "reservedMemory: [{numaNode: 0, limits: {memory: 100Mi}}]" in v.remediation


def test_ng208_shows_exact_numbers():
    kc = config(reservedMemory=[{"numaNode": 0, "limits": {"memory": "1Gi"}},
                                {"numaNode": 1, "limits": {"memory": "512Mi"}}])
    [v] = run(rules.reserved_memory_mismatch, kc)
    assert v.path == ("reservedMemory",)
    assert 'the total amount "1536Mi" of type "memory" is not equal to the value "2Gi"' in v.message
    assert "kubeReserved.memory 1Gi + systemReserved.memory 768Mi + evictionHard memory.available 256Mi" in v.message
    assert "{memory: 2Gi}" in v.remediation


def test_ng208_eviction_hard_without_memory_counts_zero_unless_merged():
    kc = config(evictionHard={"nodefs.available": "10%"})
    [v] = run(rules.reserved_memory_mismatch, kc)
    assert 'not equal to the value "1792Mi"' in v.message and "counts as 0" in v.message
    merged = config(evictionHard={"nodefs.available": "10%"}, mergeDefaultEvictionSettings=True,
                    reservedMemory=[{"numaNode": 0, "limits": {"memory": "1892Mi"}}])
    assert run(rules.reserved_memory_mismatch, merged) == []


def test_ng208_nothing_reserved_at_all():
    kc = config(kubeReserved=None, systemReserved=None, evictionHard={"nodefs.available": "10%"},
                reservedMemory=None)
    [v] = run(rules.reserved_memory_mismatch, kc)
    assert '"[memorymanager] you should specify the system reserved memory"' in v.message


def test_ng208_hugepages_zero_duplicate_and_unsupported_entries():
    kc = config(reservedMemory=[{"numaNode": 0, "limits": {"memory": "1Gi", "hugepages-1Gi": "1Gi"}},
                                {"numaNode": 1, "limits": {"memory": "1Gi", "cpu": "1", "hugepages-2Mi": "0"}},
                                {"numaNode": 1, "limits": {"memory": "0"}}])
    messages = [v.message for v in run(rules.reserved_memory_mismatch, kc)]
    text = "\n".join(messages)
    assert 'the limit type "cpu" for NUMA node 1 is not supported, only [memory hugepages-<HugePageSize>] is accepted' in text
    assert 'reserved memory may not be zero for NUMA node 1 and resource "hugepages-2Mi"' in text
    assert 'the reserved memory has a duplicate value for NUMA node 1 and resource "memory"' in text
    assert 'the total amount "1Gi" of type "hugepages-1Gi" is not equal to the value "0"' in text


def test_ng208_percentage_without_node_is_approximate(dual_socket):
    kc = config(evictionHard={"memory.available": "1%"})
    [v] = run(rules.reserved_memory_mismatch, kc)
    assert v.severity == Severity.WARNING and "approximate" in v.message
    # 1% of the node's 256Gi: float32(1)/100 times 274,877,906,944, truncated (not 2,748,779,070)
    [v] = run(rules.reserved_memory_mismatch, kc, node=dual_socket)
    assert v.severity is None and 'of type "memory" is not equal' in v.message
    required = Decimal(GI + 768 * MI) + Decimal(2_748_779_008)
    assert k.memory_reservation(kc, k.node_memory_capacity(dual_socket)).required["memory"] == required


@pytest.mark.parametrize("text, share, on_256gi", [
    ("1%", "0.00999999977648258209228515625", 2_748_779_008),
    ("5%", "0.0500000007450580596923828125", 13_743_895_552),    # above the exact 13,743,895,347.2
    ("7.3%", "0.07299999892711639404296875", 20_066_086_912),
    ("100.0%", "1", 256 * GI),                                   # only "100%" itself is ignored
    ("5%%", "0.0500000007450580596923828125", 13_743_895_552),   # TrimRight takes every "%"
    ("1e-50%", "0", 0),                                          # below float32: zero
    ("100%", None, 0),                                           # ignored: no threshold at all
    ("0%", None, 0),
])
def test_eviction_percentages_are_the_kubelets_float32_shares(text, share, on_256gi):
    """pkg/kubelet/eviction/helpers.go parsePercentage (ParseFloat(s, 32), then / 100 in float32)
    and api/types.go GetThresholdQuantity (float64 product, truncated)."""
    amount, fraction = k.parse_eviction_value(text)
    assert (amount, fraction) == (Decimal(0), None if share is None else Decimal(share))
    assert k.EvictionAmount(text, "evictionHard", amount, fraction).resolve(256 * GI) == Decimal(on_256gi)


def test_an_eviction_share_of_a_capacity_is_truncated_not_rounded_up():
    amount, fraction = k.parse_eviction_value("1%")
    # 0.0099999998 x 1,000 bytes = 9.9999998: int64() truncates it to 9
    assert k.EvictionAmount("1%", "evictionHard", amount, fraction).resolve(1000) == Decimal(9)


@pytest.mark.parametrize("text, error", [
    ("1_0%", "'1_0%' is not a percentage"),          # ParseFloat takes no underscores here
    ("%", "'%' is not a percentage"),
    ("NaN%", "'NaN%' is not a percentage"),
    ("1e39%", "'1e39%' is not a percentage (out of range)"),
    ("100.001%", "eviction percentage threshold 100.001% must be >= 0% and <= 100%"),
    ("-0.5%", "eviction percentage threshold -0.5% must be >= 0% and <= 100%"),
    ("0", "eviction threshold 0 must be positive"),
    ("0Mi", "eviction threshold 0Mi must be positive"),
])
def test_eviction_percentages_the_kubelet_refuses(text, error):
    with pytest.raises(ValueError) as e:
        k.parse_eviction_value(text)
    assert str(e.value) == error


def test_ng208_percentage_lower_bound_is_an_error_without_node():
    kc = config(evictionHard={"memory.available": "1%"},
                reservedMemory=[{"numaNode": 0, "limits": {"memory": "1Gi"}}])
    [v] = run(rules.reserved_memory_mismatch, kc)
    assert v.severity is None and "more than 1792Mi" in v.message


def test_ng208_numa_node_must_exist_on_the_node(dual_socket):
    kc = config(reservedMemory=[{"numaNode": 0, "limits": {"memory": "1Gi"}},
                                {"numaNode": 3, "limits": {"memory": "1Gi"}}])
    [v] = run(rules.reserved_memory_mismatch, kc, node=dual_socket)
    assert v.path == ("reservedMemory", 1, "numaNode")
    assert "references a NUMA node 3 that does not exist on this machine" in v.message
    assert run(rules.reserved_memory_mismatch, kc) == []


def test_ng208_only_for_static():
    assert run(rules.reserved_memory_mismatch, dict(SEED, memoryManagerPolicy="None")) == []
    assert run(rules.reserved_memory_mismatch, GOOD) == []


# --- NG209 -------------------------------------------------------------------------------------

def test_ng209_unparsable_set():
    [v] = run(rules.reserved_cpus_invalid, config(reservedSystemCPUs="0, 32"))
    assert v.path == ("reservedSystemCPUs",)
    assert ('invalid configuration: unable to parse reservedSystemCPUs (--reserved-cpus) 0, 32, '
            'error: strconv.Atoi: parsing " 32": invalid syntax') in v.message
    [v] = run(rules.reserved_cpus_invalid, config(reservedSystemCPUs="3-1"))
    assert 'invalid range "3-1" (3 > 1)' in v.message


def test_ng209_cgroups():
    [v] = run(rules.reserved_cpus_invalid, config(kubeReservedCgroup="/kube.slice"))
    assert "can't use reservedSystemCPUs (--reserved-cpus) with systemReservedCgroup" in v.message
    assert "kubeReservedCgroup" in v.message


def test_ng209_node_aware(dual_socket):
    assert run(rules.reserved_cpus_invalid, GOOD, node=dual_socket) == []
    [v] = run(rules.reserved_cpus_invalid, config(reservedSystemCPUs="0,32,64-65"), node=dual_socket)
    assert "reserved-cpus: 0,32,64-65 is not a subset of online-cpus: 0-63" in v.message
    [v] = run(rules.reserved_cpus_invalid, config(reservedSystemCPUs="0-1"), node=dual_socket)
    assert v.severity == Severity.WARNING
    assert "core 0: reserved 0, left to pods 32" in v.message
    assert 'reservedSystemCPUs: "0-1,32-33"' in v.message
    assert run(rules.reserved_cpus_invalid, config(reservedSystemCPUs="0-1")) == []   # no node


# --- NG210 -------------------------------------------------------------------------------------

def test_ng210_removed_gates():
    kc = config(featureGates=gates(CPUManager=True, MemoryManager=True, TopologyManager=True))
    found = run(rules.feature_gate_invalid, kc)
    assert {v.path[1] for v in found} == {"CPUManager", "MemoryManager", "TopologyManager"}
    assert all("unrecognized feature gate: " in v.message for v in found)


def test_ng210_locked_gate():
    [v] = run(rules.feature_gate_invalid, config(featureGates=gates(CPUManagerPolicyOptions=False)))
    assert "cannot set feature gate CPUManagerPolicyOptions to false, feature is locked to true" in v.message
    [v] = run(rules.feature_gate_invalid, config(featureGates=gates(NodeDeclaredFeatures=False)))
    assert "locked to true" in v.message
    # setting a locked gate to its locked value is fine
    assert run(rules.feature_gate_invalid, config(featureGates=gates(TopologyManagerPolicyOptions=True))) == []


def test_ng210_unknown_gates_by_version():
    [v] = run(rules.feature_gate_invalid, config(featureGates=gates(PodLevelResourceManager=True)))
    assert v.severity is None
    assert "unrecognized feature gate: PodLevelResourceManager (did you mean PodLevelResourceManagers?)" in v.message
    [v] = run(rules.feature_gate_invalid, config(featureGates=gates(PodLevelResourcesFixDefaulting=True)), (1, 36))
    assert v.severity is None and "first appears in 1.37" in v.message
    [v] = run(rules.feature_gate_invalid, config(featureGates=gates(SomethingFrom136=True)), (1, 36))
    assert v.severity == Severity.WARNING and "not a gate numaguard knows" in v.message
    [v] = run(rules.feature_gate_invalid, config(featureGates=gates(PerPodPIDLimit=True)))
    assert v.severity == Severity.WARNING and "#139277" in v.message
    assert run(rules.feature_gate_invalid, config(featureGates=gates(AllAlpha=False, ContextualLogging=True))) == []


def test_ng210_dependencies():
    [v] = run(rules.feature_gate_invalid, config(featureGates=gates(NodeDeclaredFeatures=False)), (1, 36))
    assert v.path == ("featureGates",)
    assert ("InPlacePodLevelResourcesVerticalScaling is enabled, but depends on features that are "
            "disabled: [NodeDeclaredFeatures]") in v.message
    # PodLevelResources: false is NG201's to report
    assert run(rules.feature_gate_invalid, config(featureGates={"PodLevelResources": False})) == []


def test_ng210_gate_on_135_left_to_ng213():
    assert run(rules.feature_gate_invalid, GOOD, (1, 35)) == []


# --- NG211 -------------------------------------------------------------------------------------

def _ng211(kc, version=(1, 37), node=None):
    return [(v.path, v.message) for v in run(rules.policy_option_invalid, kc, version, node)]


def test_ng211_unknown_and_gated_options():
    [(path, msg)] = _ng211(config(cpuManagerPolicyOptions={"full-pcpu-only": "true"}))
    assert path == ("cpuManagerPolicyOptions", "full-pcpu-only")
    assert 'unknown CPU Manager Policy option: "full-pcpu-only"' in msg
    [(path, msg)] = _ng211(config(cpuManagerPolicyOptions={"align-by-socket": "false"}))
    assert ('CPU Manager Policy Alpha-level Options not enabled, but option "align-by-socket" provided'
            in msg)                                # gating applies whatever the value
    kc = config(featureGates=gates(CPUManagerPolicyBetaOptions=False),
                cpuManagerPolicyOptions={"distribute-cpus-across-numa": "true"})
    [(_, msg)] = _ng211(kc)
    assert "Beta-level Options not enabled" in msg
    kc = config(featureGates=gates(CPUManagerPolicyAlphaOptions=True),
                cpuManagerPolicyOptions={"distribute-cpus-across-cores": "true"})
    assert _ng211(kc) == []


def test_ng211_values():
    [(_, msg)] = _ng211(config(cpuManagerPolicyOptions={"full-pcpus-only": "yes"}))
    assert 'bad value for option "full-pcpus-only": strconv.ParseBool: parsing "yes": invalid syntax' in msg
    assert _ng211(config(cpuManagerPolicyOptions={"full-pcpus-only": "TRUE", "strict-cpu-reservation": "0"})) == []


def test_ng211_mutually_exclusive():
    kc = config(cpuManagerPolicyOptions={"prefer-align-cpus-by-uncorecache": "true",
                                         "distribute-cpus-across-numa": "true"})
    [(_, msg)] = _ng211(kc)
    assert ("static policy options prefer-align-cpus-by-uncorecache and distribute-cpus-across-numa "
            "can not be used at the same time") in msg
    kc = config(featureGates=gates(CPUManagerPolicyAlphaOptions=True),
                cpuManagerPolicyOptions={"full-pcpus-only": "true", "distribute-cpus-across-cores": "true"})
    [(_, msg)] = _ng211(kc)
    assert "full-pcpus-only and distribute-cpus-across-cores" in msg
    kc["cpuManagerPolicyOptions"]["distribute-cpus-across-cores"] = "false"
    assert _ng211(kc) == []


def test_ng211_align_by_socket():
    kc = config(featureGates=gates(CPUManagerPolicyAlphaOptions=True),
                cpuManagerPolicyOptions={"align-by-socket": "true"})
    [(_, msg)] = _ng211(kc)
    assert ("Topolgy manager single-numa-node policy is incompatible with CPUManager align-by-socket "
            "policy option") in msg
    kc["topologyManagerPolicy"] = "restricted"
    assert _ng211(kc) == []
    odd = SimpleNamespace(topology=SimpleNamespace(num_sockets=2, num_numa_nodes=1))
    [(_, msg)] = _ng211(kc, node=odd)
    assert "number of sockets are more than number of NUMA" in msg


def test_ng211_options_with_none_policy():
    kc = config(cpuManagerPolicy="none")
    [(path, msg)] = _ng211(kc)
    assert path == ("cpuManagerPolicyOptions",)
    assert "None policy: received unsupported options=map[full-pcpus-only:true]" in msg


def test_ng211_topology_options():
    [(_, msg)] = _ng211(config(topologyManagerPolicyOptions={"max-allowable-numa-nodes": "4"}))
    assert 'the minimum value of "max-allowable-numa-nodes" should not be less than 8' in msg
    [(_, msg)] = _ng211(config(topologyManagerPolicyOptions={"max-allowable-numa-nodes": "eight"}))
    assert 'unable to convert policy option to integer "max-allowable-numa-nodes"' in msg
    [(_, msg)] = _ng211(config(topologyManagerPolicyOptions={"numa-allocation-strategy": "packed"}))
    assert 'unknown Topology Manager Policy option: "numa-allocation-strategy"' in msg
    [(_, msg)] = _ng211(config(topologyManagerPolicyOptions={"prefer-closest-numa-nodes": "sure"}))
    assert 'bad value for option "prefer-closest-numa-nodes"' in msg
    assert _ng211(config(topologyManagerPolicyOptions={"prefer-closest-numa-nodes": "true",
                                                      "max-allowable-numa-nodes": "8"})) == []


# --- NG213 -------------------------------------------------------------------------------------

def test_ng213_versions():
    [v] = run(rules.kubernetes_version, GOOD, (1, 35))
    assert v.severity is None and v.path == ("featureGates", "PodLevelResourceManagers")
    assert "unrecognized feature gate: PodLevelResourceManagers" in v.message
    [v] = run(rules.kubernetes_version, config(featureGates=None), (1, 34))
    assert v.path == () and "do not exist before 1.36" in v.message
    [v] = run(rules.kubernetes_version, GOOD, (1, 36))
    assert v.severity == Severity.WARNING and "alpha" in v.message
    assert run(rules.kubernetes_version, GOOD, (1, 37)) == []
    assert run(rules.kubernetes_version, GOOD, (1, 38)) == []


# --- the seed article, end to end through the engine ---------------------------------------------

def test_seed_article_through_the_engine():
    from numaguard.lint.engine import lint_documents
    result = lint_documents([SEED])
    rules_found = {f.rule for f in result.active}
    assert rules_found == {"NG208"}


MALFORMED = [
    {"featureGates": ["PodLevelResources"]}, {"reservedMemory": "1Gi"},
    {"reservedMemory": [{"numaNode": "x", "limits": {"memory": True}}, "entry"]},
    {"cpuManagerPolicy": 1, "cpuManagerPolicyOptions": ["full-pcpus-only"]},
    {"kubeReserved": {"cpu": True}, "evictionHard": {"memory.available": 5}, "reservedSystemCPUs": 0},
    {"topologyManagerPolicyOptions": {"max-allowable-numa-nodes": 16}, "memoryManagerPolicy": "Static"},
]


@pytest.mark.parametrize("kc", MALFORMED)
def test_rules_tolerate_documents_that_fail_the_schema(kc, dual_socket):
    assert kubelet_schema_violations(kc)
    for rule in ALL_RULES:
        for version in ((1, 35), (1, 36), (1, 37)):
            for node in (None, dual_socket):
                for v in run(rule, kc, version, node):
                    assert isinstance(v.message, str) and v.message


def test_ng002_names_the_eviction_thresholds_the_kubelet_refuses():
    found = _ng002(config(evictionHard={"memory.available": "0", "nodefs.available": "101%",
                                        "imagefs.available": "ten%", "nodefs.inodesFree": "100%"}))
    assert found == [
        (("evictionHard", "memory.available"),
         "evictionHard.memory.available: eviction threshold 0 must be positive: the kubelet refuses to start"),
        (("evictionHard", "nodefs.available"),
         "evictionHard.nodefs.available: eviction percentage threshold 101% must be >= 0% and <= 100%: "
         "the kubelet refuses to start"),
        (("evictionHard", "imagefs.available"),
         "evictionHard.imagefs.available: 'ten%' is neither a quantity (\"100Mi\") nor a percentage (\"5%\")"),
    ]
