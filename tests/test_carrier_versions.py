"""Each carrier's shape per API version, checked in its project's own types (issue 21 §2): Cluster
API's kubeletExtraArgs is a map in v1alpha3, v1alpha4 and v1beta1 and a list only in v1beta2; an
apiVersion a platform never had is its refusal, not a carrier (kind: "unknown apiVersion"); one
newer than every version numaguard knows is not read (a warning); Karpenter's v1beta1
EC2NodeClass has no spec.kubelet. The versions and their sources: platform_registry.API_VERSIONS."""
from __future__ import annotations

import pytest

from numaguard.lint.k8s.platform_registry import API_VERSIONS, READERS

from conftest import carriers_of, lint_rows

MAP_ARGS = "kubeletExtraArgs: {cpu-manager-policy: static, reserved-cpus: '0-1'}"
LIST_ARGS = "kubeletExtraArgs: [{name: cpu-manager-policy, value: static}, {name: reserved-cpus, value: '0-1'}]"


def _config(api_version: str, args: str) -> str:
    return (f"apiVersion: {api_version}\nkind: KubeadmConfig\nmetadata: {{name: n}}\nspec:\n"
            f"  joinConfiguration:\n    nodeRegistration:\n      {args}\n")


def _control_plane(api_version: str, args: str) -> str:
    return (f"apiVersion: {api_version}\nkind: KubeadmControlPlane\nmetadata: {{name: n}}\nspec:\n"
            f"  kubeadmConfigSpec:\n    initConfiguration:\n      nodeRegistration:\n        {args}\n")


@pytest.mark.parametrize("version,form", [("v1alpha3", MAP_ARGS), ("v1alpha4", MAP_ARGS), ("v1beta1", MAP_ARGS),
                                          ("v1beta2", LIST_ARGS)])
def test_cluster_api_kubelet_extra_args_take_the_form_of_their_version(version, form):
    for text in (_config(f"bootstrap.cluster.x-k8s.io/{version}", form),
                 _control_plane(f"controlplane.cluster.x-k8s.io/{version}", form)):
        # the machines the arguments are written for (a control plane also has its join machines)
        [configured] = [c for c in carriers_of(text) if c.config.get("cpuManagerPolicy")]
        assert (configured.config["cpuManagerPolicy"], configured.config["reservedSystemCPUs"]) == ("static", "0-1")
        rows, result = lint_rows(text)
        assert not any(r[0] == "NG002" for r in rows), rows


@pytest.mark.parametrize("version,form,expected", [
    ("v1alpha3", LIST_ARGS, "a map of strings (kubeadm.k8s.io/v1beta3), not a list"),
    ("v1beta1", LIST_ARGS, "a map of strings (kubeadm.k8s.io/v1beta3), not a list"),
    ("v1beta2", MAP_ARGS, "a list of {name, value} (kubeadm.k8s.io/v1beta4), not a mapping"),
])
def test_the_other_form_is_what_the_version_refuses(version, form, expected):
    rows, result = lint_rows(_config(f"bootstrap.cluster.x-k8s.io/{version}", form))
    assert [(f.rule, f.severity.value, f.line) for f in result.findings] == [("NG002", "error", 7)]
    assert expected in result.findings[0].message


@pytest.mark.parametrize("api_version,kind,severity,message", [
    ("kind.x-k8s.io/v1alpha", "Cluster", "error",
     'Cluster: kind refuses the file: "unknown apiVersion: kind.x-k8s.io/v1alpha" (kind reads only '
     "kind.x-k8s.io/v1alpha4)"),
    ("kind.sigs.k8s.io/v1alpha3", "Cluster", "error",
     'Cluster: kind refuses the file: "unknown apiVersion: kind.sigs.k8s.io/v1alpha3" (kind reads only '
     "kind.x-k8s.io/v1alpha4)"),
    ("bootstrap.cluster.x-k8s.io/v1alpha2", "KubeadmConfig", "error",
     'KubeadmConfig: the API server refuses it: no matches for kind "KubeadmConfig" in version '
     '"bootstrap.cluster.x-k8s.io/v1alpha2" (the platform has had bootstrap.cluster.x-k8s.io/v1alpha3, '
     "bootstrap.cluster.x-k8s.io/v1alpha4, bootstrap.cluster.x-k8s.io/v1beta1, bootstrap.cluster.x-k8s.io/v1beta2)"),
    ("controlplane.cluster.x-k8s.io/v1beta3", "KubeadmControlPlane", "warning",
     "KubeadmControlPlane: controlplane.cluster.x-k8s.io/v1beta3 is newer than the versions numaguard knows "
     "(controlplane.cluster.x-k8s.io/v1alpha3, controlplane.cluster.x-k8s.io/v1alpha4, "
     "controlplane.cluster.x-k8s.io/v1beta1, controlplane.cluster.x-k8s.io/v1beta2): its kubelet settings are not "
     "read"),
    ("node.eks.aws/v1beta1", "NodeConfig", "warning",
     "NodeConfig: node.eks.aws/v1beta1 is newer than the versions numaguard knows (node.eks.aws/v1alpha1): its "
     "kubelet settings are not read"),
    ("machineconfiguration.openshift.io/v1alpha1", "KubeletConfig", "error",
     'KubeletConfig: the API server refuses it: no matches for kind "KubeletConfig" in version '
     '"machineconfiguration.openshift.io/v1alpha1" (the platform has had machineconfiguration.openshift.io/v1)'),
])
def test_an_api_version_the_platform_never_had_is_its_refusal_not_a_carrier(api_version, kind, severity, message):
    text = f"apiVersion: {api_version}\nkind: {kind}\nmetadata: {{name: n}}\nspec: {{}}\n"
    assert carriers_of(text) == []
    rows, result = lint_rows(text)
    assert [(f.rule, f.severity.value, f.line, f.column, f.path, f.message) for f in result.findings] == [
        ("NG002", severity, 1, 13, "apiVersion", message)]


def test_every_version_a_reader_reads_is_listed_with_its_source():
    # (a reader without an entry reads every version of its group: kubeadm, by `list_form`)
    assert set(API_VERSIONS) <= set(READERS)
    assert API_VERSIONS["kind"] == ("kind.x-k8s.io/v1alpha4",)
    assert API_VERSIONS["performance-profile"] == tuple(f"performance.openshift.io/{v}" for v in ("v1alpha1", "v1", "v2"))


def test_a_v1beta1_ec2nodeclass_has_no_kubelet_field():
    text = ("apiVersion: karpenter.k8s.aws/v1beta1\nkind: EC2NodeClass\nmetadata: {name: a}\nspec:\n  amiFamily: AL2\n"
            "  role: r\n  kubelet: {cpuManagerPolicy: static}\n")
    rows, result = lint_rows(text)
    assert [(f.rule, f.severity.value, f.line, f.path) for f in result.findings] == [
        ("NG002", "warning", 7, "spec.kubelet")]
    assert result.findings[0].message.startswith("EC2NodeClass: karpenter.k8s.aws/v1beta1 has no spec.kubelet")
    # on v1 the same class is read (AL2 maps cpuManagerPolicy? no: Karpenter refuses it there)
    rows, result = lint_rows(text.replace("v1beta1", "v1"))
    assert [f.rule for f in result.findings] == ["NG002"]
    assert "not applied by the AL2 AMI family" in result.findings[0].message
