"""The platform registry names its readers by module and function (imported when an object of
their kind appears): every name must resolve, and each kind must reach its reader."""
from __future__ import annotations

import pytest

from numaguard.lint.k8s import platform_registry as registry


@pytest.mark.parametrize("name", sorted(registry.READERS))
def test_every_reader_name_resolves_to_a_function(name):
    assert callable(registry._load(registry.READERS[name]))
    assert name in registry.PLATFORM_KINDS.values()


@pytest.mark.parametrize("api_version, kind, reader", [
    ("node.eks.aws/v1alpha1", "NodeConfig", "node_config_document"),
    ("machineconfiguration.openshift.io/v1", "KubeletConfig", "openshift_kubelet_config"),
    ("performance.openshift.io/v2", "PerformanceProfile", "performance_profile"),
    ("v1alpha1", "KubeletConfig", "kubelet_config_document"),
    ("eksctl.io/v1alpha5", "ClusterConfig", "cluster_config"),
    ("karpenter.k8s.aws/v1", "EC2NodeClass", "ec2_node_class"),
    ("machineconfiguration.openshift.io/v1", "MachineConfig", "machine_config"),
    ("kubeadm.k8s.io/v1beta4", "InitConfiguration", "kubeadm_configuration"),
    ("kubeadm.k8s.io/v1beta3", "JoinConfiguration", "kubeadm_configuration"),
    ("kind.x-k8s.io/v1alpha4", "Cluster", "kind_cluster"),
    ("bootstrap.cluster.x-k8s.io/v1beta1", "KubeadmConfigTemplate", "capi_kubeadm"),
    ("controlplane.cluster.x-k8s.io/v1beta2", "KubeadmControlPlane", "capi_kubeadm"),
])
def test_each_kind_reaches_its_reader(api_version, kind, reader):
    target = registry.READERS[registry._match(registry.PLATFORM_KINDS, api_version, kind)]
    assert target.endswith(":" + reader)
    assert registry.platform_reader(api_version, kind) is not None


@pytest.mark.parametrize("api_version, kind", [("v1", "Pod"), ("apps/v1", "Deployment"),
                                               ("v1alpha2", "KubeletConfig"), ("cluster.x-k8s.io/v1beta1", "Cluster")])
def test_other_kinds_have_no_reader(api_version, kind):
    assert registry.platform_reader(api_version, kind) is None


def test_kindless_documents_are_asked_only_with_the_key_their_reader_needs():
    assert registry.kindless_reader({"machine": {"kubelet": {"extraArgs": {"max-pods": "50"}}}})[0] == \
        "Talos machine config"
    assert registry.kindless_reader({"kubeletConfig": {"cpuManagerPolicy": "static"}})[0] == "GKE node system config"
    assert registry.kindless_reader({"machine": "not a mapping"}) is None
    assert registry.kindless_reader({"replicaCount": 3, "image": {"tag": "1.0"}}) is None
    assert registry.kindless_reader({}) is None
