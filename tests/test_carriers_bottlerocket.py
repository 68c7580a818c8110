"""Bottlerocket nodes (lint/k8s/bottlerocket.py) through eksctl's `bottlerocket.settings.kubernetes`
and EKS Anywhere (lint/k8s/platform_eksa.py): the node group's kubelet from its Cluster and the
machine config its machineGroupRef names in the same file. Real files under
tests/fixtures/carriers/eksa/ and eksctl/ (ORIGIN.md)."""
from __future__ import annotations

import pytest

from numaguard.lint.config import config_from_dict
from numaguard.lint.engine import lint_documents
from numaguard.lint.k8s.bottlerocket import bottlerocket_kubelet, capi_settings
from numaguard.lint.load.documents import load_text

from conftest import FIXTURES, carriers_of, finding_rows, lint_rows

CARRIERS = FIXTURES / "carriers"
POOL = {"pool": {"nodeLabels": {"node.example.com/pool": "numa"}}}


def _lint(text: str, settings: dict | None = None, name: str = "cluster.yaml"):
    documents, errors = load_text(text, name)
    result = lint_documents(documents, config=config_from_dict(settings or {}), load_errors=errors)
    return finding_rows(result), result


@pytest.mark.parametrize("path", ["eksa/cluster_main_br.yaml", "eksa/cluster_osimage_machine_config.yaml",
                                  "eksctl/20-bottlerocket.yaml", "eksctl/bottlerocket-settings.yaml"])
def test_real_bottlerocket_and_eks_anywhere_files_lint_clean(path):
    assert lint_rows((CARRIERS / path).read_text(), path)[0] == []


# -- Bottlerocket's template ---------------------------------------------------------------------

def test_the_template_writes_the_memory_manager_only_with_reserved_memory():
    config, sources, unknown, dropped = bottlerocket_kubelet({"memory-manager-policy": "Static"})
    assert "memoryManagerPolicy" not in config and "reservedMemory" not in config
    assert dropped["memoryManagerPolicy"].startswith("memory-manager-policy Static is not written")
    config, _, _, dropped = bottlerocket_kubelet({
        "memory-manager-policy": "Static", "reserved-cpus": "0-1",
        "memory-manager-reserved-memory": {"0": {"enabled": True, "memory": "1124Mi"},
                                           "1": {"enabled": False, "memory": "1Gi"}}})
    assert (config["memoryManagerPolicy"], config["reservedMemory"], dropped) == (
        "Static", [{"numaNode": 0, "limits": {"memory": "1124Mi"}}], {})
    assert config["reservedSystemCPUs"] == "0-1" and "kubeReservedCgroup" not in config


def test_the_templates_reservations_and_cgroups():
    config, sources, unknown, _ = bottlerocket_kubelet({"system-reserved": {"cpu": "1"}})
    assert config["kubeReserved"] == {"cpu": "60m", "memory": "1465Mi", "ephemeral-storage": "1Gi"}
    assert unknown == frozenset({"kubeReserved.cpu", "kubeReserved.memory"})
    assert (config["kubeReservedCgroup"], config["systemReservedCgroup"]) == ("/runtime", "/system")
    config, sources, unknown, _ = bottlerocket_kubelet({"max-pods": 58, "kube-reserved": {"cpu": "2"}})
    assert config["kubeReserved"] == {"cpu": "2", "memory": "893Mi", "ephemeral-storage": "1Gi"}
    assert unknown == frozenset() and sources[("kubeReserved", "memory")] == "max-pods"
    assert "systemReservedCgroup" not in config


def test_the_cluster_api_bootstrap_writes_only_full_pcpus_only():
    settings, origin, dropped = capi_settings({"cpuManagerPolicy": "static", "cpuCFSQuota": False, "maxPods": 0,
                                               "cpuManagerPolicyOptions": {"full-pcpus-only": "false",
                                                                           "distribute-cpus-across-numa": "true"}})
    assert settings == {"cpu-manager-policy": "static", "cpu-cfs-quota-enforced": False,
                        "cpu-manager-policy-options": ["full-pcpus-only"]}
    assert dropped["cpuManagerPolicyOptions"].endswith("distribute-cpus-across-numa is not written")
    assert capi_settings({"cpuManagerPolicyOptions": {"full-pcpus-only": "true"}})[0] == {}


# -- eksctl ----------------------------------------------------------------------------------------

EKSCTL = """\
apiVersion: eksctl.io/v1alpha5
kind: ClusterConfig
metadata: {name: numa, region: us-west-2}
nodeGroups:
- name: br
  amiFamily: Bottlerocket
  instanceType: m5.metal
  labels: {node.example.com/pool: numa}
  maxPodsPerNode: 58
  bottlerocket:
    settings:
      kubernetes:
        cpu-manager-policy: static
        topology-manager-policy: single-numa-node
        topology-manager-scope: pod
        memory-manager-policy: Static
"""


def test_an_eksctl_bottlerocket_group_in_a_declared_pool():
    [carrier] = carriers_of(EKSCTL)
    assert carrier.platform == "eksctl node group br"
    assert (carrier.config["maxPods"], carrier.config["kubeReserved"]["memory"]) == (58, "893Mi")
    assert carrier.nodes.labels == {"node.example.com/pool": "numa"}
    found, result = _lint(EKSCTL, POOL)
    assert found == [("NG202", "error", 13, 9, "nodeGroups[0].bottlerocket.settings.kubernetes"),
                     ("NG204", "error", 16, 32, "nodeGroups[0].bottlerocket.settings.kubernetes.memory-manager-policy")]
    assert result.findings[0].message.endswith(
        "; a Bottlerocket node cannot enable it: Bottlerocket's kubelet-config template (bottlerocket-core-kit "
        "a10182f packages/kubernetes-1.31) writes no featureGates")
    assert result.findings[1].message == (
        "memoryManagerPolicy is not set (default None): memory and hugepages are not NUMA-aligned for pods or "
        "containers [memory-manager-policy Static is not written: Bottlerocket's kubelet-config template "
        "(bottlerocket-core-kit a10182f packages/kubernetes-1.31) writes memoryManagerPolicy only with an enabled "
        "memory-manager-reserved-memory NUMA node]")


def test_eksctl_refuses_settings_of_its_own_fields_and_the_kubelets_spelling_is_warned():
    text = EKSCTL + "        max-pods: 100\n        cpuManagerPolicy: static\n"
    found, result = _lint(text)
    ng002 = [(f.severity.value, f.line, f.path, f.message) for f in result.findings if f.rule == "NG002"]
    assert ng002 == [
        ("error", 17, "nodeGroups[0].bottlerocket.settings.kubernetes.max-pods",
         "eksctl refuses the node group: invalid Bottlerocket setting: use nodeGroups[0].maxPodsPerNode instead "
         "(path=nodeGroups[0].bottlerocket.settings.kubernetes.max-pods)"),
        ("warning", 18, "nodeGroups[0].bottlerocket.settings.kubernetes.cpuManagerPolicy",
         "cpuManagerPolicy is the kubelet's spelling: Bottlerocket's setting is cpu-manager-policy, and Bottlerocket "
         "has no setting cpuManagerPolicy")]


def test_a_managed_bottlerocket_group_is_read_too():
    text = EKSCTL.replace("nodeGroups:", "managedNodeGroups:")
    [carrier] = carriers_of(text)
    assert carrier.config["topologyManagerScope"] == "pod"


# -- EKS Anywhere --------------------------------------------------------------------------------

EKSA = """\
apiVersion: anywhere.eks.amazonaws.com/v1alpha1
kind: Cluster
metadata: {name: numa}
spec:
  kubernetesVersion: "1.37"
  controlPlaneConfiguration:
    count: 3
    machineGroupRef: {kind: VSphereMachineConfig, name: cp}
  workerNodeGroupConfigurations:
  - name: numa
    count: 3
    labels: {node.example.com/pool: numa}
    machineGroupRef: {kind: VSphereMachineConfig, name: numa}
  - name: ubuntu
    count: 1
    labels: {node.example.com/pool: ubuntu}
    machineGroupRef: {kind: VSphereMachineConfig, name: ubuntu}
    kubeletConfiguration:
      kind: KubeletConfiguration
      cpuManagerPolicy: static
      reservedSystemCPUs: "0-1"
      topologyManagerPolicy: single-numa-node
      topologyManagerScope: pod
      featureGates: {PodLevelResourceManagers: true}
---
apiVersion: anywhere.eks.amazonaws.com/v1alpha1
kind: VSphereMachineConfig
metadata: {name: cp}
spec: {}
---
apiVersion: anywhere.eks.amazonaws.com/v1alpha1
kind: VSphereMachineConfig
metadata: {name: numa}
spec:
  osFamily: bottlerocket
  hostOSConfiguration:
    bottlerocketConfiguration:
      kubernetes:
        cpuManagerPolicy: static
        topologyManagerPolicy: single-numa-node
        topologyManagerScope: pod
        memoryManagerPolicy: Static
        maxPods: 58
---
apiVersion: anywhere.eks.amazonaws.com/v1alpha1
kind: VSphereMachineConfig
metadata: {name: ubuntu}
spec: {osFamily: ubuntu}
"""


def test_each_node_group_takes_its_machine_configs_os_family():
    found, result = _lint(EKSA, POOL)
    # numa (Bottlerocket, settings in its machine config): no gate, and the memory policy is
    # dropped; ubuntu (kubeadm patch): only the Memory Manager is missing
    # (the ubuntu group is in no declared pool, but its PodLevelResourceManagers gate declares it)
    assert found == [
        ("NG204", "error", 19, 7, "spec.workerNodeGroupConfigurations[1].kubeletConfiguration"),
        ("NG202", "error", 39, 9, "spec.hostOSConfiguration.bottlerocketConfiguration.kubernetes"),
        ("NG204", "error", 42, 30, "spec.hostOSConfiguration.bottlerocketConfiguration.kubernetes.memoryManagerPolicy")]
    assert [f.file for f in result.findings] == ["cluster.yaml"] * 3
    # the control plane: a VSphereMachineConfig without osFamily is Bottlerocket, with no settings
    assert result.summary.objects == 4


def test_the_machine_configs_settings_are_replaced_by_the_clusters_kubelet_configuration():
    text = EKSA.replace("    machineGroupRef: {kind: VSphereMachineConfig, name: numa}\n",
                        "    machineGroupRef: {kind: VSphereMachineConfig, name: numa}\n    kubeletConfiguration:\n"
                        "      kind: KubeletConfiguration\n      cpuManagerPolicy: static\n"
                        "      reservedSystemCPUs: \"0-1\"\n")
    found, result = _lint(text)
    ng002 = [(f.severity.value, f.line, f.path, f.message) for f in result.findings if f.rule == "NG002"]
    assert ng002 == [
        ("error", 17, "spec.workerNodeGroupConfigurations[0].kubeletConfiguration.reservedSystemCPUs",
         "EKS Anywhere cannot use it on Bottlerocket nodes (ConvertToBottlerocketKubernetesSettings): unmarshaling "
         "KubeletConfiguration for error unmarshaling JSON: while decoding JSON: json: unknown field "
         "\"reservedSystemCPUs\""),
        ("info", 43, "spec.hostOSConfiguration.bottlerocketConfiguration.kubernetes",
         "not used: the Cluster's kubeletConfiguration replaces the machine config's Bottlerocket kubernetes "
         "settings (pkg/providers/vsphere/template.go)")]
    numa = carriers_of(text)[1]       # read alone: the OS is not known until the machine config is paired
    assert (numa.base_known, numa.companion) == (False, ("anywhere.eks.amazonaws.com/", "VSphereMachineConfig", "numa"))


def test_a_machine_config_alone_is_judged_on_its_settings():
    machine = EKSA.split("---\n")[2]
    found, result = _lint(machine + "        foo: 1\n")
    ng002 = [f for f in result.findings if f.rule == "NG002"]
    assert [(f.severity.value, f.line, f.column) for f in ng002] == [("error", 14, 14)]
    assert ng002[0].message == ('EKS Anywhere refuses the machine config: error unmarshaling JSON: while '
                                          'decoding JSON: json: unknown field "foo"')
    [carrier] = carriers_of(machine)
    assert (carrier.platform, carrier.config["topologyManagerScope"]) == ("EKS Anywhere VSphereMachineConfig numa", "pod")


def test_bottlerocket_settings_on_another_os_are_refused():
    text = EKSA.replace("spec: {osFamily: ubuntu}", "spec:\n  osFamily: ubuntu\n  hostOSConfiguration:\n"
                                                     "    bottlerocketConfiguration: {kubernetes: {maxPods: 10}}")
    found, result = _lint(text)
    [refused] = [f for f in result.findings if "BottlerocketConfiguration can only be used" in f.message]
    assert (refused.rule, refused.severity.value, refused.line) == ("NG002", "error", 51)


def test_without_the_machine_config_only_what_the_group_shows_is_judged():
    cluster = EKSA.split("---\n")[0]
    found, _ = _lint(cluster.replace("topologyManagerScope: pod", "topologyManagerScope: container"))
    # the OS is unknown: a wrong scope the group sets is still wrong (an error: its gate declares
    # the group), a missing setting is not judged
    assert found == [("NG205", "error", 23, 29, "spec.workerNodeGroupConfigurations[1].kubeletConfiguration."
                                                  "topologyManagerScope")]


def test_host_os_settings_of_another_kind_are_no_bottlerocket_settings():
    # an Ubuntu machine may have an NTP configuration: only bottlerocketConfiguration is refused
    text = EKSA.replace("spec: {osFamily: ubuntu}", "spec:\n  osFamily: ubuntu\n  hostOSConfiguration:\n"
                                                     "    ntpConfiguration: {servers: [time.example.com]}")
    found, result = _lint(text)
    assert not [f for f in result.findings if "BottlerocketConfiguration" in f.message]
