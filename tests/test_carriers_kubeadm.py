"""kubeadm's InitConfiguration/JoinConfiguration: kubeletExtraArgs read as the kubelet reads its
command line, over kubeadm's defaults and the file's KubeletConfiguration, each finding at the
argument or the field that set the value (lint/platforms/kubeadm.py)."""
from __future__ import annotations

from numaguard.lint.platforms.kubeadm import command_line, kubeadm_configuration, read_extra_args
from numaguard.lint.k8s.kubelet_layers import Place

from conftest import finding_rows, lint_text

REFUSES = "the kubelet refuses to start: failed to parse kubelet flag: "


def lint(text: str, name: str = "kubeadm.yaml"):
    return lint_text(text, name)


rows = finding_rows


INIT_V1BETA4 = """\
apiVersion: kubeadm.k8s.io/v1beta4
kind: InitConfiguration
nodeRegistration:
  kubeletExtraArgs:
  - name: cpu-manager-policy
    value: static
  - name: node-labels
    value: numa=true
  - name: pod-infra-container-image
    value: registry.k8s.io/pause:3.10
---
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
cpuManagerPolicy: none
memoryManagerPolicy: Static
reservedMemory:
- numaNode: 0
  limits: {memory: 100Mi}
topologyManagerPolicy: single-numa-node
topologyManagerScope: pod
featureGates:
  PodLevelResourceManagers: true
"""


def test_flag_beats_the_files_kubelet_configuration_and_findings_go_where_values_were_set():
    result = lint(INIT_V1BETA4)
    assert rows(result) == [
        ("NG002", "error", 10, 12, "nodeRegistration.kubeletExtraArgs[2].value"),
        ("NG207", "error", 12, 1, ""),
    ]
    removed, reservation = result.findings
    assert removed.message == (REFUSES + "unknown flag: --pod-infra-container-image; removed in 1.35, "
                               "kubernetes#133779: the container runtime keeps the sandbox image")
    # cpuManagerPolicy none in the file, static from the flag: the kubelet runs static and stops
    assert reservation.message.endswith('"[cpumanager] unable to determine reserved CPU resources for static '
                                        'policy" [set by --cpu-manager-policy=static]')
    assert reservation.object.kind == "InitConfiguration"


def test_v1beta3_map_argument_is_reported_at_its_key():
    result = lint("""\
apiVersion: kubeadm.k8s.io/v1beta3
kind: InitConfiguration
nodeRegistration:
  kubeletExtraArgs:
    topology-manager-policy: single-numa-node
    topology-manager-scope: Pod
""")
    # the pool requirements the arguments leave unmet point at nodeRegistration (warnings: an
    # assumed configuration); the scope the kubelet refuses to start with is an error
    assert rows(result) == [("NG202", "warning", 4, 3, "nodeRegistration"),
                            ("NG203", "warning", 4, 3, "nodeRegistration"),
                            ("NG204", "warning", 4, 3, "nodeRegistration"),
                            ("NG205", "error", 6, 29, "nodeRegistration.kubeletExtraArgs.topology-manager-scope")]
    scope = result.findings[3]
    assert scope.message.startswith(
        'the kubelet refuses to start: invalid configuration: topologyManagerScope (--topology-manager-scope) "Pod"')
    assert scope.message.endswith("[set by --topology-manager-scope=Pod]")


def test_duplicate_v1beta4_arguments_are_ordered_by_value_as_kubeadm_writes_them():
    args = read_extra_args([{"name": "cpu-manager-policy", "value": "static"},
                            {"name": "cpu-manager-policy", "value": "none"}], Place(("a",)), True)
    assert [w.word for w in command_line(args)] == ["--cpu-manager-policy=none", "--cpu-manager-policy=static"]
    carrier = kubeadm_configuration({"apiVersion": "kubeadm.k8s.io/v1beta4", "kind": "InitConfiguration",
                                     "nodeRegistration": {"kubeletExtraArgs": [
                                         {"name": "cpu-manager-policy", "value": "static"},
                                         {"name": "cpu-manager-policy", "value": "none"}]}})[0]
    assert carrier.config["cpuManagerPolicy"] == "static"
    assert carrier.place(("cpuManagerPolicy",)) == Place(("nodeRegistration", "kubeletExtraArgs", 0, "value"))


def test_kubeadm_defaults_lie_under_everything():
    carrier = kubeadm_configuration({"apiVersion": "kubeadm.k8s.io/v1beta4", "kind": "InitConfiguration"})[0]
    assert (carrier.config["cgroupDriver"], carrier.config["healthzPort"], carrier.base_known) == ("systemd", 10248, True)
    assert not carrier.place(("cgroupDriver",)).shown


def test_value_with_a_space_is_split_by_systemd_into_a_stray_word():
    result = lint("""\
apiVersion: kubeadm.k8s.io/v1beta4
kind: InitConfiguration
nodeRegistration:
  kubeletExtraArgs:
  - name: reserved-memory
    value: "0:memory=1Gi; 1:memory=1Gi"
""")
    # "--reserved-memory=0:memory=1Gi;" then a stray "1:memory=1Gi": both refused
    assert [(f.rule, f.line, f.message) for f in result.findings] == [
        ("NG002", 6, REFUSES + 'invalid argument "0:memory=1Gi;" for "--reserved-memory" flag: the reserved '
                               'memory has incorrect format, expected numaNodeID:type=quantity[,type=quantity...], got '),
        ("NG002", 6, "the kubelet refuses to start: unknown command 1:memory=1Gi")]


def test_reserved_memory_with_commas_between_numa_nodes_stops_the_kubelet_and_the_judging():
    result = lint("""\
apiVersion: kubeadm.k8s.io/v1beta3
kind: InitConfiguration
nodeRegistration:
  kubeletExtraArgs:
    memory-manager-policy: Static
    reserved-memory: "0:memory=1Gi,1:memory=1Gi"
""")
    assert rows(result) == [("NG002", "error", 6, 22, "nodeRegistration.kubeletExtraArgs.reserved-memory")]
    assert "got 0:memory=1Gi,1:memory=1Gi" in result.findings[0].message


def test_join_without_the_clusters_kubelet_configuration_judges_only_what_it_shows():
    result = lint("""\
apiVersion: kubeadm.k8s.io/v1beta3
kind: JoinConfiguration
nodeRegistration:
  kubeletExtraArgs:
    cpu-manager-policy: Static
    feature-gates: CPUManager=true,PodLevelResourceManagers=true
""")
    # no NG207 (reserved CPUs may be in the cluster's configuration), no NG202/NG204/NG205
    assert [(f.rule, f.severity.value, f.line) for f in result.findings] == [
        ("NG002", "info", 4), ("NG203", "error", 5), ("NG210", "error", 6)]
    assert result.findings[2].message.startswith("the kubelet refuses to start: unrecognized feature gate: CPUManager")


def test_join_beside_a_kubelet_configuration_shares_findings_with_init_once():
    text = INIT_V1BETA4.replace("  - name: pod-infra-container-image\n    value: registry.k8s.io/pause:3.10\n", "") + """\
---
apiVersion: kubeadm.k8s.io/v1beta4
kind: JoinConfiguration
nodeRegistration:
  kubeletExtraArgs:
  - name: cpu-manager-policy
    value: static
"""
    result = lint(text)
    assert rows(result) == [("NG207", "error", 10, 1, "")]


def test_kubelet_configuration_beside_kubeadm_gets_its_own_schema_check_once():
    result = lint(INIT_V1BETA4.replace("cpuManagerPolicy: none", "cpuManagerPolicy: none\ncpuManagerPolicyy: x"))
    assert [(f.rule, f.line, f.path) for f in result.findings if f.rule == "NG002"] == [
        ("NG002", 10, "nodeRegistration.kubeletExtraArgs[2].value"), ("NG002", 15, "cpuManagerPolicyy")]


def test_wrong_shape_for_the_api_version_is_refused_at_the_field():
    result = lint("""\
apiVersion: kubeadm.k8s.io/v1beta4
kind: InitConfiguration
nodeRegistration:
  kubeletExtraArgs:
    cpu-manager-policy: static
""")
    assert rows(result) == [("NG002", "error", 5, 5, "nodeRegistration.kubeletExtraArgs")]
    assert result.findings[0].message == (
        "InitConfiguration: nodeRegistration.kubeletExtraArgs must be a list of {name, value} "
        "(kubeadm.k8s.io/v1beta4), not a mapping: kubeadm cannot read the file")


def test_config_flag_makes_the_base_unknown():
    carrier = kubeadm_configuration({"apiVersion": "kubeadm.k8s.io/v1beta3", "kind": "InitConfiguration",
                                     "nodeRegistration": {"kubeletExtraArgs": {"config": "/etc/k/c.yaml"}}})[0]
    assert carrier.base_known is False
    assert [(rule, v.severity.value) for rule, _, v in carrier.notices] == [("NG002", "warning")]
