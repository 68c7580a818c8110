"""What decides an OpenShift kubelet from outside its own object (lint/k8s/openshift_cluster.py,
lint/references.py): the cluster's FeatureGate, a HostedCluster's featureGate and the NodePools
naming HyperShift ConfigMaps, read from the whole run before anything is judged, in one process
and across --jobs workers; a MachineConfig's kubelet.service command line
(lint/k8s/systemd_unit.py); OpenShift Templates skipped as templates."""
from __future__ import annotations

import json
import urllib.parse

import pytest

from numaguard.lint.cli.lint_files import LintSettings, gather_references, lint_paths
from numaguard.lint.config import config_from_dict
from numaguard.lint.engine import Selection, lint_documents
from numaguard.lint.k8s.openshift_cluster import selected_gates
from numaguard.lint.k8s.systemd_unit import kubelet_command
from numaguard.lint.load.documents import load_text
from numaguard.lint.references import RunReferences, mentions_referenced_kind

from conftest import carriers_of, finding_rows, lint_rows

FEATURE_GATE = """\
apiVersion: config.openshift.io/v1
kind: FeatureGate
metadata: {name: cluster}
spec:
  featureSet: CustomNoUpgrade
  customNoUpgrade:
    enabled: [PodLevelResourceManagers]
"""
KUBELET_CONFIG = """\
apiVersion: machineconfiguration.openshift.io/v1
kind: KubeletConfig
metadata: {name: numa}
spec:
  machineConfigPoolSelector:
    matchLabels: {pools.operator.machineconfiguration.openshift.io/worker-cnf: ""}
  kubeletConfig:
    cpuManagerPolicy: static
    reservedSystemCPUs: "0-1"
    topologyManagerPolicy: single-numa-node
    topologyManagerScope: pod
    memoryManagerPolicy: Static
    systemReserved: {memory: 1Gi}
    reservedMemory: [{numaNode: 0, limits: {memory: 1124Mi}}]
"""
POOL = {"pool": {"nodeLabels": {"node-role.kubernetes.io/worker-cnf": ""}}}


def _lint(*texts: str, settings: dict | None = None):
    documents, errors = [], []
    for i, text in enumerate(texts):
        docs, errs = load_text(text, f"f{i}.yaml")
        documents += docs
        errors += errs
    result = lint_documents(documents, config=config_from_dict(settings or {}), load_errors=errors)
    return finding_rows(result), result


# -- the FeatureGate ---------------------------------------------------------------------------

@pytest.mark.parametrize("spec, gates", [
    ({"featureSet": "CustomNoUpgrade", "customNoUpgrade": {"enabled": ["A", "B"], "disabled": ["B"]}},
     {"A": True, "B": False}),
    ({"featureSet": "TechPreviewNoUpgrade", "customNoUpgrade": {"enabled": ["A"]}}, {}),
    ({}, {}),
    (None, {}),
])
def test_only_custom_no_upgrade_names_kubelet_gates(spec, gates):
    assert selected_gates(spec) == gates


def test_without_the_feature_gate_the_gate_cannot_be_seen():
    found, result = _lint(KUBELET_CONFIG, settings=POOL)
    assert found == [("NG202", "warning", 8, 5, "spec.kubeletConfig")]
    assert "which numaguard does not see" in result.findings[0].message


def test_the_feature_gate_of_the_run_enables_the_gate_for_every_kubelet_config():
    found, _ = _lint(FEATURE_GATE, KUBELET_CONFIG, settings=POOL)
    assert found == []
    [carrier] = carriers_of(KUBELET_CONFIG)
    assert carrier.resolve(_references(FEATURE_GATE)).config["featureGates"] == {"PodLevelResourceManagers": True}


def test_the_feature_gates_gate_declares_every_kubelet_config_of_the_cluster():
    # no pool declared: the gate the FeatureGate turns on declares the KubeletConfig's kubelets
    without_scope = KUBELET_CONFIG.replace("    topologyManagerScope: pod\n", "")
    found, _ = _lint(FEATURE_GATE, without_scope)
    assert found == [("NG205", "error", 8, 5, "spec.kubeletConfig")]
    found, _ = _lint(without_scope)
    assert [(f[0], f[1]) for f in found] == [("NG202", "warning"), ("NG205", "warning")]


def test_a_feature_gate_that_does_not_enable_it_makes_ng202_the_clusters_error():
    default = FEATURE_GATE.replace("CustomNoUpgrade", "TechPreviewNoUpgrade", 1)
    found, result = _lint(default, KUBELET_CONFIG, settings=POOL)
    ng202 = [f for f in result.findings if f.rule == "NG202"]
    assert [(f.severity.value, f.file, f.line) for f in ng202] == [("error", "f1.yaml", 8)]
    assert ng202[0].message.endswith("[the kubelet's gates come from the cluster's FeatureGate (f0.yaml:1, featureSet "
                                     "TechPreviewNoUpgrade), which does not enable it]")
    # and customNoUpgrade is not read with that featureSet: said on the FeatureGate
    assert [(f.rule, f.severity.value, f.file, f.path) for f in result.findings if f.rule == "NG002"] == [
        ("NG002", "warning", "f0.yaml", "spec.customNoUpgrade")]


def test_feature_gates_of_the_run_that_disagree_are_not_guessed_between():
    other = FEATURE_GATE.replace("[PodLevelResourceManagers]", "[]")
    found, result = _lint(FEATURE_GATE, other, KUBELET_CONFIG, settings=POOL)
    [ng202] = [f for f in result.findings if f.rule == "NG202"]
    assert ng202.severity.value == "warning"
    assert "the run holds 2 gate selections for this cluster that disagree" in ng202.message


def test_only_the_feature_gate_named_cluster_counts():
    found, _ = _lint(FEATURE_GATE.replace("name: cluster", "name: other"), KUBELET_CONFIG, settings=POOL)
    assert [f[0] for f in found] == ["NG202"]


def test_a_gate_openshifts_kubelet_does_not_know_has_no_effect():
    text = FEATURE_GATE.replace("[PodLevelResourceManagers]", "[PodLevelResourceManagers, PodLevelResourceManager]")
    found, result = _lint(text)
    assert found == [("NG210", "warning", 7, 41, "spec.customNoUpgrade.enabled[1]")]
    assert result.findings[0].message.startswith("PodLevelResourceManager is no kubelet feature gate: OpenShift's "
                                                  "kubelet ignores gates it does not know")


def test_the_feature_gate_reaches_performance_profiles_and_machine_configs_too():
    profile = """\
apiVersion: performance.openshift.io/v2
kind: PerformanceProfile
metadata: {name: numa}
spec:
  cpu: {reserved: "0-1", isolated: "2-15"}
  numa: {topologyPolicy: single-numa-node}
  nodeSelector: {node-role.kubernetes.io/worker-cnf: ""}
"""
    without = [f for f in _lint(profile, settings=POOL)[0] if f[0] == "NG202"]
    with_gate = [f for f in _lint(FEATURE_GATE, profile, settings=POOL)[0] if f[0] == "NG202"]
    assert (len(without), with_gate) == (1, [])


# -- gathered before linting, across files and workers -------------------------------------------

def _references(*texts: str) -> RunReferences:
    references = RunReferences()
    for i, text in enumerate(texts):
        for doc in load_text(text, f"r{i}.yaml")[0]:
            references.collect(doc.data, doc.source, doc.line, doc.index)
    return references


@pytest.mark.parametrize("text, mentioned", [
    (b"kind: FeatureGate\n", True), (b'{"kind": "NodePool"}', True), (b"kind: 'ServingRuntime'", True),
    (b"items:\n- apiVersion: v1\n  kind: NodePool\n", True), (b"- kind: FeatureGate\n", True),
    (b"{apiVersion: config.openshift.io/v1, kind: FeatureGate}\n", True),
    (b"featureGates: {A: true}\nkind: KubeletConfiguration\n", False), (b"kind: FeatureGates\n", False),
    # a CRD names its kind four spaces in: a file of CRDs is not read twice
    (b"kind: CustomResourceDefinition\nspec:\n  names:\n    kind: ServingRuntime\n", False),
])
def test_files_are_read_beforehand_only_when_they_mention_a_referenced_kind(text, mentioned):
    assert mentions_referenced_kind(text) is mentioned


@pytest.mark.parametrize("jobs", [1, 2])
def test_the_feature_gate_in_another_file_is_read_first_in_every_worker(tmp_path, jobs):
    # the KubeletConfig's file comes first, in another worker than the FeatureGate's
    (tmp_path / "a-kubeletconfig.yaml").write_text(KUBELET_CONFIG)
    (tmp_path / "z-featuregate.yaml").write_text(FEATURE_GATE)
    for i in range(6):                   # enough input that two workers run
        (tmp_path / f"m{i}.yaml").write_text("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\ndata:\n"
                                             f"  big: '{'x' * 200_000}'\n")
    config = config_from_dict(POOL)
    settings = LintSettings(config=config, selection=Selection(severities=config.severities))
    result, _ = lint_paths([str(tmp_path)], settings, jobs, parallel_from_bytes=1000)
    assert [f.rule for f in result.findings] == []
    assert gather_references([str(tmp_path / "z-featuregate.yaml")]).get("gates", "openshift")[0].gates == (
        ("PodLevelResourceManagers", True),)


# -- HyperShift ---------------------------------------------------------------------------------

NODE_POOL = """\
apiVersion: hypershift.openshift.io/v1beta1
kind: NodePool
metadata: {name: numa, namespace: clusters}
spec:
  clusterName: hc1
  replicas: 2
  nodeLabels: {node.example.com/pool: numa}
  taints: [{key: dedicated, value: numa, effect: NoSchedule}]
  config:
  - name: numa-kubelet
  platform: {type: AWS}
---
apiVersion: hypershift.openshift.io/v1beta1
kind: HostedCluster
metadata: {name: hc1, namespace: clusters}
spec:
  configuration:
    featureGate:
      featureSet: CustomNoUpgrade
      customNoUpgrade: {enabled: [PodLevelResourceManagers]}
"""
CONFIG_MAP = """\
apiVersion: v1
kind: ConfigMap
metadata: {name: numa-kubelet, namespace: clusters}
data:
  config: |
    apiVersion: machineconfiguration.openshift.io/v1
    kind: KubeletConfig
    metadata:
      name: numa
    spec:
      kubeletConfig:
        cpuManagerPolicy: static
        reservedSystemCPUs: "0-1"
        topologyManagerPolicy: single-numa-node
        topologyManagerScope: container
        featureGates: {Foo: true}
"""
HS_POOL = {"pool": {"nodeLabels": {"node.example.com/pool": "numa"}}}


def test_a_nodepools_configmap_is_judged_where_written_with_the_pools_nodes_and_gates():
    found, result = _lint(CONFIG_MAP, NODE_POOL, settings=HS_POOL)
    assert found == [("NG204", "error", 12, 9, "data.config.spec.kubeletConfig"),
                     ("NG205", "error", 15, 31, "data.config.spec.kubeletConfig.topologyManagerScope"),
                     ("NG210", "error", 16, 23, "data.config.spec.kubeletConfig.featureGates")]
    assert result.findings[2].message.startswith("the Machine Config Operator refuses this KubeletConfig")


def test_a_configmap_without_its_nodepool_belongs_to_no_pool():
    found, result = _lint(CONFIG_MAP, settings=HS_POOL)
    assert [(f[0], f[1]) for f in found] == [("NG202", "warning"), ("NG204", "warning"), ("NG205", "warning"),
                                             ("NG210", "error")]
    [carrier] = carriers_of(CONFIG_MAP)
    assert (carrier.platform, carrier.nodes) == ("HyperShift KubeletConfig in ConfigMap numa-kubelet", None)


def test_ordinary_configmaps_are_no_platform_objects():
    found, result = lint_rows("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\ndata:\n  config: |\n"
                              "    kind: KubeletConfiguration\n    cpuManagerPolicy: static\n")
    assert (found, result.summary.objects, result.summary.skipped) == ([], 0, 1)


def test_a_configmap_whose_yaml_hypershift_cannot_read():
    text = CONFIG_MAP.replace("      name: numa\n", "      name: [numa\n")
    found, result = _lint(text)
    assert [(f[0], f[1]) for f in found] == [("NG002", "error")]
    assert result.findings[0].message.startswith('ConfigMap: HyperShift refuses it: configmap "numa-kubelet" '
                                                 'contains invalid yaml')


# -- kubelet.service ----------------------------------------------------------------------------

UNIT = """\
[Service]
Environment="KUBELET_NODE_IP=0.0.0.0"
ExecStart=
ExecStart=/usr/local/bin/kubenswrapper \\
    /usr/bin/kubelet \\
      --config=/etc/kubernetes/kubelet.conf \\
      --config-dir=/etc/openshift/kubelet.conf.d \\
      --node-ip=${KUBELET_NODE_IP} \\
      --provider-id=${KUBELET_PROVIDERID} \\
      --topology-manager-scope=container
"""


def test_the_units_command_line_as_systemd_builds_it():
    command = kubelet_command(["[Service]\nExecStart=/usr/bin/old\n", UNIT])
    assert command.found and command.container is None
    assert [w for w, _ in command.words] == ["--config=/etc/kubernetes/kubelet.conf",
                                             "--config-dir=/etc/openshift/kubelet.conf.d", "--node-ip=0.0.0.0",
                                             "--topology-manager-scope=container"]
    assert command.unexpanded == [("--provider-id=${KUBELET_PROVIDERID}", 1)]
    assert not kubelet_command(["[Service]\nEnvironment=A=1\n"]).found


def _machine_config_with_unit(dropin: str, files: str = "") -> str:
    return ("apiVersion: machineconfiguration.openshift.io/v1\nkind: MachineConfig\nmetadata:\n  name: 99-numa\n"
            "  labels: {machineconfiguration.openshift.io/role: worker-cnf}\nspec:\n  config:\n"
            "    ignition: {version: 3.2.0}\n" + files + "    systemd:\n      units:\n      - name: kubelet.service\n"
            "        dropins:\n        - name: 20-numa.conf\n          contents: " + json.dumps(dropin) + "\n")


def test_a_kubelet_service_drop_in_sets_flags_over_every_configuration():
    text = _machine_config_with_unit(UNIT.replace("--topology-manager-scope=container",
                                                  "--cpu-manager-policy=static --reserved-cpus=0-1 "
                                                  "--topology-manager-policy=single-numa-node "
                                                  "--topology-manager-scope=container"))
    found, result = _lint(text, settings=POOL)
    [ng205] = [f for f in result.findings if f.rule == "NG205"]
    assert (ng205.severity.value, ng205.path) == ("error", "spec.config.systemd.units[0].dropins[0].contents")
    assert ng205.message.endswith("[set by the kubelet flag --topology-manager-scope=container in "
                                  "spec.config.systemd.units.0.dropins.0.contents]")
    [info] = [f for f in result.findings if f.rule == "NG002"]
    assert (info.severity.value, info.message) == ("info", (
        "1 kubelet argument(s) take their value from variables systemd expands from an EnvironmentFile when the "
        "unit starts (KUBELET_PROVIDERID): not judged"))


def test_a_unit_without_the_drop_in_directory_leaves_the_drop_in_files_unread():
    dropin = urllib.parse.quote("apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\n"
                                "cpuManagerPolicy: static\n", safe="")
    files = ("    storage:\n      files:\n      - path: /etc/openshift/kubelet.conf.d/99-numa.conf\n"
             f"        contents:\n          source: 'data:,{dropin}'\n")
    text = _machine_config_with_unit(UNIT.replace("      --config-dir=/etc/openshift/kubelet.conf.d \\\n", ""), files)
    found, result = _lint(text)
    [unread] = [f for f in result.findings if f.rule == "NG002" and f.severity.value == "warning"]
    assert (unread.path, unread.message) == ("spec.config.storage.files[0].contents.source",
                                             "not read: the kubelet.service of this MachineConfig starts the kubelet "
                                             "without --config-dir=/etc/openshift/kubelet.conf.d")


def test_an_unknown_flag_in_the_unit_stops_the_kubelet():
    found, result = _lint(_machine_config_with_unit(UNIT.replace("--topology-manager-scope=container",
                                                                 "--network-plugin=cni")))
    [error] = [f for f in result.findings if f.severity.value == "error"]
    assert (error.rule, error.message) == ("NG002", "the kubelet refuses to start: failed to parse kubelet flag: "
                                                    "unknown flag: --network-plugin; removed in 1.24 with dockershim")


# -- OpenShift Templates ------------------------------------------------------------------------

def test_an_openshift_template_is_skipped_as_a_template():
    text = ("apiVersion: template.openshift.io/v1\nkind: Template\nmetadata: {name: t}\nobjects:\n"
            "- apiVersion: v1\n  kind: Pod\n  metadata: {name: p}\n  spec:\n    resources: {requests: {cpu: \"${CPU}\"}}\n"
            "    containers: [{name: c, image: x}]\nparameters:\n- name: CPU\n")
    found, result = lint_rows(text)
    assert (found, result.summary.skipped_by_reason["template"], result.summary.objects) == ([], 1, 0)


def test_a_drop_in_uses_the_environment_the_unit_and_earlier_drop_ins_set():
    unit = "[Service]\nEnvironment=\"FLAGS=--cpu-manager-policy=static --reserved-cpus=0-1\" SCOPE=pod\n"
    dropin = "[Service]\nExecStart=\nExecStart=/usr/bin/kubelet $FLAGS --topology-manager-scope=${SCOPE}\n"
    command = kubelet_command([unit, dropin])
    # $FLAGS alone is split at whitespace, ${SCOPE} is one word (systemd.service(5))
    assert [w for w, _ in command.words] == ["--cpu-manager-policy=static", "--reserved-cpus=0-1",
                                             "--topology-manager-scope=pod"]
    assert command.unexpanded == []
