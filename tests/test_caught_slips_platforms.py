"""Faults that survived fault injection in the platform code (issue 21 §5), each pinned by a test
that fails when the fault is planted: a `podTemplates` kind given by group, an OpenShift
KubeletConfig naming two pools, kind's kubeadm version boundary, Talos' init machines, GKE's
`none` memory policy, and MachineConfig drop-ins around the MCO's own `20-auto-sizing.conf`."""
from __future__ import annotations

import urllib.parse

import yaml

from numaguard.lint.config import config_from_dict
from numaguard.lint.export.admission_policy import admission_policy
from numaguard.lint.k8s.platforms import machine_config_pool_nodes
from numaguard.lint.model import NodeSelection
from numaguard.lint.objects import classify
from numaguard.webhook.decide import WORKLOAD_OPERATIONS, judged_kinds
from numaguard.webhook.manifests import webhook_rules

from conftest import carriers_of, lint_rows

# --------------------------------------------------------------------------- podTemplates by group

RAY_BY_GROUP = {"podTemplates": [{"group": "ray.io", "kind": "RayCluster",
                                  "paths": ["spec.headGroupSpec.template", "spec.workerGroupSpecs?[*].template"]}]}


def _rule_for(rules: list[dict], group: str, resource: str) -> dict:
    [rule] = [r for r in rules if r["apiGroups"] == [group] and resource in r["resources"]]
    return rule


def test_a_group_entry_for_a_built_in_kind_covers_every_version():
    config = config_from_dict(RAY_BY_GROUP)
    kinds = config.pod_carriers.kinds()
    # the config's entry has no versions: the kind is judged in every version, not only the
    # built-in entry's v1 and v1alpha1
    assert kinds[("ray.io", "RayCluster")] == ()
    assert kinds[("ray.io", "RayJob")] == ("v1", "v1alpha1")
    assert judged_kinds(config.pod_carriers)[("ray.io", "RayCluster")] == (WORKLOAD_OPERATIONS, ())
    hook = _rule_for(webhook_rules(config.pod_carriers), "ray.io", "rayclusters")
    assert (hook["apiVersions"], hook["resources"], hook["operations"]) == (["*"], ["rayclusters"], ["CREATE", "UPDATE"])
    assert _rule_for(webhook_rules(config.pod_carriers), "ray.io", "rayjobs")["apiVersions"] == ["v1", "v1alpha1"]
    [policy] = [d for d in admission_policy(config) if d["kind"] == "ValidatingAdmissionPolicy"][:1]
    exported = _rule_for(policy["spec"]["matchConstraints"]["resourceRules"], "ray.io", "rayclusters")
    assert (exported["apiVersions"], exported["resources"]) == (["*"], ["rayclusters"])
    # and an object of a version the built-in entry does not serve is found through the config's
    cluster = {"apiVersion": "ray.io/v2", "kind": "RayCluster", "metadata": {"name": "r"},
               "spec": {"headGroupSpec": {"template": {"spec": {"containers": [{"name": "c"}]}}}}}
    assert [p.spec_path for p in classify(cluster, config.pod_carriers).pods] == [
        ("spec", "headGroupSpec", "template", "spec")]


# --------------------------------------------------------------------------- MachineConfigPools

def test_a_kubelet_config_selecting_two_machine_config_pools_joins_none():
    two = {"matchLabels": {"pools.operator.machineconfiguration.openshift.io/worker": "",
                           "pools.operator.machineconfiguration.openshift.io/worker-cnf": ""}}
    assert machine_config_pool_nodes(two, ("spec",)) is None
    mixed = {"matchLabels": {"pools.operator.machineconfiguration.openshift.io/worker-cnf": "",
                             "machineconfiguration.openshift.io/role": "worker"}}
    assert machine_config_pool_nodes(mixed, ("spec",)) is None
    both_ways = {"matchLabels": {"pools.operator.machineconfiguration.openshift.io/worker-cnf": "",
                                 "machineconfiguration.openshift.io/role": "worker-cnf"}}
    assert machine_config_pool_nodes(both_ways, ("s",)) == NodeSelection({"node-role.kubernetes.io/worker-cnf": ""}, ("s",))
    one_of_two = {"matchExpressions": [{"key": "machineconfiguration.openshift.io/role", "operator": "In",
                                        "values": ["worker", "worker-cnf"]}]}
    assert machine_config_pool_nodes(one_of_two, ("s",)) is None


def test_a_kubelet_config_of_two_pools_is_not_the_declared_pools():
    text = """\
apiVersion: machineconfiguration.openshift.io/v1
kind: KubeletConfig
metadata: {name: numa}
spec:
  machineConfigPoolSelector:
    matchLabels:
      pools.operator.machineconfiguration.openshift.io/worker: ""
      pools.operator.machineconfiguration.openshift.io/worker-cnf: ""
  kubeletConfig: {cpuManagerPolicy: static, reservedSystemCPUs: "0-1"}
"""
    [carrier] = carriers_of(text)
    assert carrier.nodes is None
    pool = {"pool": {"nodeLabels": {"node-role.kubernetes.io/worker-cnf": ""}}}
    from numaguard.lint.engine import lint_documents
    result = lint_documents([yaml.safe_load(text)], config=config_from_dict(pool))
    # only assumed (its cpuManagerPolicy shows the intent): warnings, and counted as assumed
    assert {f.severity.value for f in result.findings if f.rule in ("NG204", "NG205")} == {"warning"}
    assert result.summary.assumed_kubelets == 1


# --------------------------------------------------------------------------- kind's kubeadm version

def _kind_join_patch(image: str, api_version: str) -> str:
    return f"""\
kind: Cluster
apiVersion: kind.x-k8s.io/v1alpha4
nodes:
- role: control-plane
  image: {image}
- role: worker
  image: {image}
  kubeadmConfigPatches:
  - |
    apiVersion: kubeadm.k8s.io/{api_version}
    kind: JoinConfiguration
    nodeRegistration:
      name: worker
"""


def _skipped(text: str) -> list[str]:
    found, result = lint_rows(text)
    return [f.message.split(":")[0] for f in result.findings if f.rule == "NG002"]


def test_kind_gives_a_1_36_node_kubeadm_v1beta4_and_a_1_35_node_v1beta3():
    assert _skipped(_kind_join_patch("kindest/node:v1.36.0", "v1beta4")) == []
    assert _skipped(_kind_join_patch("kindest/node:v1.36.4@sha256:0123", "v1beta3")) == [
        "kind skips this JoinConfiguration patch"]
    assert _skipped(_kind_join_patch("kindest/node:v1.35.2", "v1beta3")) == []
    assert _skipped(_kind_join_patch("kindest/node:v1.35.2", "v1beta4")) == [
        "kind skips this JoinConfiguration patch"]


# --------------------------------------------------------------------------- Talos init machines

def test_a_talos_init_machine_reserves_the_control_planes_memory():
    for machine_type in ("init", "controlplane"):
        [carrier] = carriers_of(f"version: v1alpha1\nmachine:\n  type: {machine_type}\n  kubelet:\n"
                                f"    extraConfig: {{cpuManagerPolicy: static}}\n")
        assert carrier.config["systemReserved"]["memory"] == "512Mi", machine_type
        assert carrier.unknown == frozenset(), machine_type
    [worker] = carriers_of("version: v1alpha1\nmachine:\n  type: worker\n  kubelet:\n    extraConfig: {maxPods: 50}\n")
    assert (worker.config["systemReserved"]["memory"], worker.unknown) == ("384Mi", frozenset())


# --------------------------------------------------------------------------- GKE memory manager

def test_gke_memory_manager_none_is_the_kubelets_none_policy():
    text = "kubeletConfig:\n  cpuManagerPolicy: static\n  memoryManager:\n    policy: none\n"
    [carrier] = carriers_of(text)
    assert carrier.config["memoryManagerPolicy"] == "None"
    found, result = lint_rows(text, "gke.yaml")
    [ng204] = [f for f in result.findings if f.rule == "NG204"]
    assert (ng204.severity.value, ng204.line, ng204.column, ng204.path) == ("warning", 4, 13,
                                                                           "kubeletConfig.memoryManager.policy")
    assert ng204.message == ("memoryManagerPolicy is None: memory and hugepages are not NUMA-aligned "
                             "[in the GKE file: kubeletConfig.memoryManager.policy]")


# --------------------------------------------------------------------------- MachineConfig drop-ins

def _percent(text: str) -> str:
    return "data:," + urllib.parse.quote(text, safe="")


def _machine_config(path: str, body: str) -> str:
    source = _percent("apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\n" + body)
    return ("apiVersion: machineconfiguration.openshift.io/v1\nkind: MachineConfig\nmetadata:\n"
            "  name: 99-worker-numa\n  labels: {machineconfiguration.openshift.io/role: worker-numa}\n"
            "spec:\n  config:\n    ignition: {version: 3.2.0}\n    storage:\n      files:\n"
            f"      - path: {path}\n        contents:\n          source: {source}\n")


RESERVED = "systemReserved: {memory: 2Gi}\n"


def test_system_reserved_before_the_mcos_auto_sizing_drop_in_is_overridden_and_after_it_is_kept():
    before = carriers_of(_machine_config("/etc/openshift/kubelet.conf.d/10-reserved.conf", RESERVED))[0]
    assert "systemReserved.memory" in before.unknown
    assert before.config["systemReserved"]["memory"] == "1Gi"      # 20-auto-sizing.conf's placeholder
    after = carriers_of(_machine_config("/etc/openshift/kubelet.conf.d/99-reserved.conf", RESERVED))[0]
    assert "systemReserved.memory" not in after.unknown
    assert after.config["systemReserved"]["memory"] == "2Gi"
    # a folder's files come where the folder's name sorts (filepath.WalkDir): 20-auto/ is walked
    # before 20-auto-sizing.conf, though "20-auto/" > "20-auto-" as strings
    folder = carriers_of(_machine_config("/etc/openshift/kubelet.conf.d/20-auto/99-reserved.conf", RESERVED))[0]
    assert "systemReserved.memory" in folder.unknown
    assert folder.config["systemReserved"]["memory"] == "1Gi"


STATIC_MEMORY = ("cpuManagerPolicy: static\nreservedSystemCPUs: \"0-1\"\nsystemReservedCgroup: \"\"\n"
                 "enforceNodeAllocatable: [pods]\nmemoryManagerPolicy: Static\n"
                 "reservedMemory: [{numaNode: 0, limits: {memory: 1100Mi}}]\n")


def test_reserved_memory_against_the_nodes_own_system_reserved_cannot_be_checked_in_a_drop_in_either():
    text = _machine_config("/etc/openshift/kubelet.conf.d/99-numa.conf", STATIC_MEMORY)
    found, result = lint_rows(text)
    [ng208] = [f for f in result.findings if f.rule == "NG208"]
    assert (ng208.severity.value, ng208.line, ng208.path) == ("warning", 13,
                                                             "spec.config.storage.files[0].contents.source")
    assert ng208.message.startswith("reservedMemory cannot be checked against the node allocatable reservation: "
                                    "systemReserved.memory is not set here")
    assert ng208.message.endswith("[in /etc/openshift/kubelet.conf.d/99-numa.conf: reservedMemory]")
    # pinned after 20-auto-sizing.conf, the sum is known and checked: 1Gi + 100Mi eviction = 1124Mi,
    # which 1100Mi is not (the kubelet refuses to start: an error, assumed or not)
    pinned = _machine_config("/etc/openshift/kubelet.conf.d/99-numa.conf", STATIC_MEMORY + "systemReserved: {memory: 1Gi}\n")
    [ng208] = [f for f in lint_rows(pinned)[1].findings if f.rule == "NG208"]
    assert ng208.severity.value == "error" and "cannot be checked" not in ng208.message
    right = pinned.replace("1100Mi", "1124Mi")
    assert [f for f in lint_rows(right)[1].findings if f.rule == "NG208"] == []
