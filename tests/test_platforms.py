"""Kubelet settings written on EKS, OpenShift and the Node Tuning Operator (lint/platforms/nodeadm.py, openshift_kubelet_config.py):
the effective configuration each platform makes the kubelet start with, checked against the
platforms' own published outputs, and the findings pointed at the platform object's fields.
Fixtures under tests/fixtures/platforms/ are real files (ORIGIN.md)."""
from __future__ import annotations

import json

import yaml

from numaguard.lint.engine import Selection, lint_documents
from numaguard.lint.platforms.nodeadm import eks_node_config
from numaguard.lint.platforms.carrier import merge_patch
from numaguard.lint.platforms.openshift_kubelet_config import performance_profile, render_performance_profile
from numaguard.lint.k8s.quantity import parse_quantity
from numaguard.lint.load.documents import load_text

from conftest import FIXTURES

PLATFORMS = FIXTURES / "platforms"
# The pool requirements (gates, static policies, scope pod) are judged separately from what
# any kubelet refuses; these tests look at the platform mapping, so they leave those out.
POOL_RULES = ("NG202", "NG203", "NG204", "NG205", "NG206")


def _load(path):
    return yaml.safe_load((PLATFORMS / path).read_text())


def _findings(text: str, name: str = "x.yaml", ignore=POOL_RULES):
    docs, errors = load_text(text, name)
    result = lint_documents(docs, load_errors=errors, selection=Selection(ignore=ignore))
    return [(f.rule, f.severity.value, f.line, f.column, f.path) for f in result.findings], result


def _normal(value):
    """Quantities compared by value ("1100Mi" == "1153433600")."""
    if isinstance(value, dict):
        return {k: _normal(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_normal(v) for v in value]
    if isinstance(value, str):
        try:
            return parse_quantity(value)
        except ValueError:
            return value
    return value


# -- rendering ------------------------------------------------------------------------------

RENDERED_FIELDS = ("cpuManagerPolicy", "cpuManagerPolicyOptions", "cpuManagerReconcilePeriod",
                   "evictionHard", "kubeReserved", "systemReserved", "reservedSystemCPUs",
                   "topologyManagerPolicy", "memoryManagerPolicy", "reservedMemory")


def _assert_renders_like_the_operator(profile_file: str, rendered_file: str):
    ours = render_performance_profile(_load(profile_file))[0]
    theirs = _load(rendered_file)["spec"]["kubeletConfig"]
    for name in RENDERED_FIELDS:
        assert _normal(ours.get(name)) == _normal(theirs.get(name)), name


def test_performance_profile_renders_the_operators_expected_output_bootstrap_worker():
    # cluster-node-tuning-operator test/e2e/.../render-expected-output/bootstrap/no-mcp
    _assert_renders_like_the_operator("openshift/pao_worker.yaml",
                                      "openshift/openshift-bootstrap-worker_kubeletconfig.yaml")


def test_performance_profile_renders_the_operators_expected_output_single_numa_node():
    # topologyPolicy single-numa-node: Static memory manager, reservedMemory 1100Mi on NUMA 0,
    # full-pcpus-only "true" (render-expected-output/default/manual_kubeletconfig.yaml)
    _assert_renders_like_the_operator("openshift/manual_performance_profile.yaml",
                                      "openshift/manual_kubeletconfig.yaml")
    ours = render_performance_profile(_load("openshift/manual_performance_profile.yaml"))[0]
    assert ours["reservedMemory"] == [{"numaNode": 0, "limits": {"memory": "1100Mi"}}]


def test_eks_effective_config_is_the_ami_base_with_the_users_drop_in_merged_over_it():
    base = json.loads((PLATFORMS / "eks/expected-kubelet-config.json").read_text())
    carrier = eks_node_config(_load("eks/kubelet-config-set-empty.yaml"))
    # the AMI base (nodeadm's own expected output) for the fields numaguard models
    assert base["evictionHard"] == {"memory.available": "100Mi", "nodefs.available": "10%",
                                    "nodefs.inodesFree": "5%"}
    assert carrier.config["evictionHard"] == base["evictionHard"]
    assert (base["kubeReservedCgroup"], base["systemReservedCgroup"]) == ("/runtime", "/system")
    # the user's "" overrides them, as the kubelet's JSON merge patch of the drop-in does
    assert (carrier.config["kubeReservedCgroup"], carrier.config["systemReservedCgroup"]) == ("", "")
    assert carrier.unknown == frozenset({"kubeReserved.cpu", "kubeReserved.memory"})


def test_merge_patch_is_rfc7386():
    assert merge_patch({"a": {"b": 1, "c": 2}, "l": [1, 2]}, {"a": {"b": None, "d": 3}, "l": [3]}) \
        == {"a": {"c": 2, "d": 3}, "l": [3]}


# -- findings on the platform objects -------------------------------------------------------

EKS_RESERVED_CPUS = """\
apiVersion: node.eks.aws/v1alpha1
kind: NodeConfig
spec:
  cluster:
    name: my-cluster
    apiServerEndpoint: https://example.com
    certificateAuthority: Y2VydGlmaWNhdGVBdXRob3JpdHk=
    cidr: 10.100.0.0/16
  kubelet:
    config:
      cpuManagerPolicy: static
      reservedSystemCPUs: "0,1"
"""


def test_eks_reserved_cpus_clash_with_the_amis_reserved_cgroups():
    found, result = _findings(EKS_RESERVED_CPUS)
    assert found == [("NG209", "error", 12, 27, "spec.kubelet.config.reservedSystemCPUs")]
    finding = result.findings[0]
    assert finding.message.endswith(
        "(set: systemReservedCgroup, kubeReservedCgroup) [kubeReservedCgroup: /runtime is set by "
        "the EKS AMI's nodeadm (internal/kubelet/config.go); systemReservedCgroup: /system is set "
        "by the EKS AMI's nodeadm (internal/kubelet/config.go)]")
    assert "kubelet-config-set-empty" in finding.remediation


def test_eks_reserved_cpus_with_the_cgroups_cleared_as_nodeadms_e2e_case_does():
    text = EKS_RESERVED_CPUS + '      kubeReservedCgroup: ""\n      systemReservedCgroup: ""\n'
    assert _findings(text)[0] == []


def test_eks_static_memory_without_kube_reserved_memory_is_a_warning_not_a_number():
    text = EKS_RESERVED_CPUS.replace('      reservedSystemCPUs: "0,1"\n', "") + (
        "      memoryManagerPolicy: Static\n"
        "      reservedMemory:\n"
        "      - {numaNode: 0, limits: {memory: 993Mi}}\n")
    found, result = _findings(text)
    assert found == [("NG208", "warning", 14, 7, "spec.kubelet.config.reservedMemory")]
    # 993Mi - 100Mi eviction - 255Mi = 638Mi = 11 x 58: the instance types with maxPods 58
    assert result.findings[0].message.endswith(
        "Σ reservedMemory memory 993Mi only matches an instance type whose maxPods is 58")


def test_eks_static_memory_with_kube_reserved_memory_is_checked_exactly():
    text = EKS_RESERVED_CPUS.replace('      reservedSystemCPUs: "0,1"\n', "") + (
        "      kubeReserved: {memory: 1Gi}\n"
        "      memoryManagerPolicy: Static\n"
        "      reservedMemory:\n"
        "      - {numaNode: 0, limits: {memory: 1Gi}}\n")
    found, result = _findings(text)
    assert found == [("NG208", "error", 15, 7, "spec.kubelet.config.reservedMemory")]
    assert result.findings[0].message.startswith(
        'the kubelet refuses to start: the total amount "1Gi" of type "memory" is not equal to '
        'the value "1124Mi" determined by Node Allocatable feature.')


def test_eks_schema_problems_point_into_the_users_config():
    text = EKS_RESERVED_CPUS.replace('cpuManagerPolicy: static', 'cpuManagerPolicy: [static]')
    found, _ = _findings(text)
    assert found == [("NG002", "error", 11, 25, "spec.kubelet.config.cpuManagerPolicy")]


def test_eks_kubelet_config_that_is_not_a_mapping():
    text = EKS_RESERVED_CPUS.split("    config:")[0] + "    config: [cpuManagerPolicy]\n"
    found, result = _findings(text)
    assert found == [("NG002", "error", 10, 13, "spec.kubelet.config")]
    assert result.findings[0].message == ("NodeConfig: spec.kubelet.config must be a mapping (a "
                                          "partial KubeletConfiguration), not a list")


def test_real_eks_examples_get_no_kubelet_refusal():
    for name in ("eks/kubelet-config-set-empty.yaml", "eks/kubelet-config-dir.yaml"):
        found, _ = _findings((PLATFORMS / name).read_text(), name)
        assert found == [], name


def test_openshift_kubelet_config_feature_gates_are_refused_by_the_mco():
    text = """\
apiVersion: machineconfiguration.openshift.io/v1
kind: KubeletConfig
metadata: {name: cpumanager-enabled}
spec:
  machineConfigPoolSelector:
    matchLabels: {custom-kubelet: cpumanager-enabled}
  kubeletConfig:
    cpuManagerPolicy: static
    cpuManagerReconcilePeriod: 5s
    featureGates:
      PodLevelResourceManagers: true
"""
    found, result = _findings(text, ignore=("NG203", "NG204", "NG205", "NG206"))
    # the MCO drops the KubeletConfig's gates (helpers.go), so the gate is not on here either:
    # NG202 says where OpenShift takes it from
    assert found == [("NG202", "warning", 8, 5, "spec.kubeletConfig"),
                     ("NG210", "error", 11, 7, "spec.kubeletConfig.featureGates")]
    assert "cluster's FeatureGate resource" in result.findings[0].message
    assert result.findings[1].message == (
        'the Machine Config Operator refuses this KubeletConfig: "KubeletConfiguration: '
        'featureGates is not allowed to be set, but contains: map[PodLevelResourceManagers:true]"')


def test_openshift_rendered_kubelet_configs_pass_the_kubelet_checks():
    for name in ("openshift/openshift-bootstrap-worker_kubeletconfig.yaml",
                 "openshift/manual_kubeletconfig.yaml"):
        found, _ = _findings((PLATFORMS / name).read_text(), name)
        assert found == [], name


def test_performance_profiles_point_at_their_own_fields():
    text = (PLATFORMS / "openshift/manual_performance_profile.yaml").read_text()
    found, result = _findings(text, "pp.yaml", ignore=())
    # no pool selects the profile: it is assumed, so NG205 is a warning
    assert found == [("NG202", "warning", 6, 3, "spec"), ("NG205", "warning", 6, 3, "spec")]
    assert result.findings[1].remediation.startswith(
        "The PerformanceProfile has no field for this: add it to the annotation "
        "kubeletconfig.experimental")


def test_performance_profile_experimental_annotation_is_merged_under_the_operator():
    text = """\
apiVersion: performance.openshift.io/v2
kind: PerformanceProfile
metadata:
  name: numa
  annotations:
    kubeletconfig.experimental: |
      {"topologyManagerScope": "pod", "reservedMemory": [{"numaNode": 0, "limits": {"memory": "1Gi"}}]}
spec:
  cpu: {isolated: "2-63", reserved: "0-1"}
  numa: {topologyPolicy: single-numa-node}
  nodeSelector: {node-role.kubernetes.io/worker-cnf: ""}
"""
    found, result = _findings(text, ignore=("NG202",))
    # the annotation's reservedMemory is kept by the operator; it does not add up to 1100Mi
    assert found == [("NG208", "error", 6, 33, "metadata.annotations.kubeletconfig.experimental")]
    assert '"1100Mi" determined by Node Allocatable' in result.findings[0].message


def test_performance_profile_bad_annotation_json():
    text = """\
apiVersion: performance.openshift.io/v2
kind: PerformanceProfile
metadata:
  name: broken
  annotations: {kubeletconfig.experimental: "{not json"}
spec: {cpu: {isolated: "1", reserved: "0"}}
"""
    found, result = _findings(text, ignore=())
    assert found == [("NG002", "error", 5, 45, "metadata.annotations.kubeletconfig.experimental")]
    assert result.findings[0].message.startswith(
        "PerformanceProfile: annotation kubeletconfig.experimental is not JSON")


def test_performance_profile_reserved_cpus_that_split_cores_on_a_described_node():
    from numaguard.lint.numa.node import load_node_file
    text = (PLATFORMS / "openshift/pao_worker.yaml").read_text().replace("2-3", "0")
    docs, errors = load_text(text, "pp.yaml")
    result = lint_documents(docs, node=load_node_file("builtin:single-socket"),
                            selection=Selection(select=("NG209",)))
    [finding] = result.findings
    assert (finding.severity.value, finding.line, finding.path) == ("warning", 8, "spec.cpu.reserved")
    assert finding.message.startswith("spec.cpu.reserved 0 splits physical cores")


def test_platform_objects_honour_the_ignore_annotation():
    text = (PLATFORMS / "openshift/manual_performance_profile.yaml").read_text().replace(
        "  name: manual\n", "  name: manual\n  annotations: {numaguard.io/ignore: NG205}\n")
    docs, errors = load_text(text, "pp.yaml")
    result = lint_documents(docs, load_errors=errors)
    assert [(f.rule, f.suppressed) for f in result.findings] == [("NG202", False), ("NG205", True)]


def test_performance_profile_annotation_settings_are_schema_checked():
    text = """\
apiVersion: performance.openshift.io/v2
kind: PerformanceProfile
metadata:
  name: x
  annotations: {kubeletconfig.experimental: '{"topologyManagerScope": 1}'}
spec: {cpu: {isolated: "1", reserved: "0"}}
"""
    found, result = _findings(text, ignore=())
    assert found == [("NG002", "error", 5, 45, "metadata.annotations.kubeletconfig.experimental")]
    assert result.findings[0].message.startswith("topologyManagerScope must be a string, not the "
                                                 "number 1")


def test_a_node_config_that_shows_no_pool_intent_gets_only_what_stops_the_kubelet():
    # nodeadm/doc/examples.md's merged NodeConfig: no manager settings, so no pool requirement;
    # the gate it sets is not a 1.37 gate (numaguard's gate table), which stops any kubelet
    found, result = _findings((PLATFORMS / "eks/examples-merged-nodeconfig.yaml").read_text(),
                              "nodeconfig.yaml", ignore=())
    assert found == [("NG210", "error", 14, 49,
                      "spec.kubelet.config.featureGates.DisableKubeletCloudCredentialProviders")]
