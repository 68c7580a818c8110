"""kind `Cluster`: the kubelet every node starts with, from kind's generated kubeadm
configuration and the Cluster's and nodes' kubeadmConfigPatches (lint/platforms/kind.py).
Findings point at the line inside the patch string. Real configs under tests/fixtures/carriers/."""
from __future__ import annotations

import pytest

from numaguard.lint.platforms.kind import kind_cluster

from conftest import FIXTURES, finding_rows, lint_text

KIND = FIXTURES / "carriers" / "kind"


def lint(text: str, name: str = "kind.yaml"):
    return lint_text(text, name)


rows = finding_rows


STATIC_WITHOUT_RESERVATION = """\
kind: Cluster
apiVersion: kind.x-k8s.io/v1alpha4
nodes:
- role: control-plane
- role: worker
kubeadmConfigPatches:
- |
  kind: KubeletConfiguration
  cpuManagerPolicy: static
"""


def test_static_cpu_manager_without_reservation_is_the_kubelets_startup_refusal():
    result = lint(STATIC_WITHOUT_RESERVATION)
    refusal = [f for f in result.findings if f.rule == "NG207"]
    assert [(f.severity.value, f.line, f.column, f.path) for f in refusal] == [
        ("error", 7, 3, "kubeadmConfigPatches[0]")]           # once, for both nodes
    assert refusal[0].message == (
        "cpuManagerPolicy is static but no CPUs are reserved (reservedSystemCPUs not set, kubeReserved.cpu "
        "not set, systemReserved.cpu not set): the kubelet refuses to start with \"[cpumanager] unable to "
        "determine reserved CPU resources for static policy\"")


def test_reservation_in_the_patch_makes_it_start():
    result = lint(STATIC_WITHOUT_RESERVATION + '  reservedSystemCPUs: "0"\n')
    assert [f.rule for f in result.findings if f.rule in ("NG207", "NG002")] == []


def test_generated_configuration_is_kinds_template():
    carrier = kind_cluster({"apiVersion": "kind.x-k8s.io/v1alpha4", "kind": "Cluster",
                            "featureGates": {"PodLevelResourceManagers": True}})[0]
    assert {k: carrier.config[k] for k in ("cgroupDriver", "cgroupRoot", "failSwapOn", "imageGCHighThresholdPercent",
                                           "evictionHard", "featureGates")} == {
        "cgroupDriver": "systemd", "cgroupRoot": "/kubelet", "failSwapOn": False, "imageGCHighThresholdPercent": 100,
        "evictionHard": {"nodefs.available": "0%", "nodefs.inodesFree": "0%", "imagefs.available": "0%"},
        "featureGates": {"PodLevelResourceManagers": True}}
    assert carrier.platform == "kind Cluster nodes[0] (control-plane, kubeadm init)"


def test_memory_manager_counts_kinds_evictionhard_without_memory_available():
    result = lint("""\
kind: Cluster
apiVersion: kind.x-k8s.io/v1alpha4
kubeadmConfigPatches:
- |
  kind: KubeletConfiguration
  memoryManagerPolicy: Static
  reservedMemory:
  - numaNode: 0
    limits:
      memory: 100Mi
""")
    mismatch = [f for f in result.findings if f.rule == "NG208"]
    assert [(f.line, f.column, f.path) for f in mismatch] == [(8, 3, "kubeadmConfigPatches[0].reservedMemory")]
    assert 'the total amount "100Mi" of type "memory" is not equal to the value "0"' in mismatch[0].message
    assert mismatch[0].message.endswith(
        "[evictionHard (nodefs.available 0%, nodefs.inodesFree 0%, imagefs.available 0%, no memory.available) is "
        "set by kind's generated kubeadm configuration (pkg/cluster/internal/kubeadm/config.go)]")


def test_join_arguments_of_a_worker_point_into_its_patch_and_dead_patches_are_warned():
    result = lint("""\
kind: Cluster
apiVersion: kind.x-k8s.io/v1alpha4
nodes:
- role: control-plane
- role: worker
  kubeadmConfigPatches:
  - |
    kind: KubeletConfiguration
    cpuManagerPolicy: static
  - |
    kind: JoinConfiguration
    nodeRegistration:
      kubeletExtraArgs:
        topology-manager-scope: pods
""")
    # the worker's own flag shows the intent: the pool requirements its kubelet misses point at it
    # (warnings: no pool is declared, so the configuration is only assumed; the invalid scope
    # the kubelet refuses to start with stays an error)
    assert rows(result) == [
        ("NG202", "warning", 5, 3, "nodes[1]"), ("NG203", "warning", 5, 3, "nodes[1]"),
        ("NG204", "warning", 5, 3, "nodes[1]"), ("NG206", "warning", 5, 3, "nodes[1]"),
        ("NG002", "warning", 8, 11, "nodes[1].kubeadmConfigPatches[0].kind"),
        ("NG205", "error", 14, 33, "nodes[1].kubeadmConfigPatches[1].nodeRegistration.kubeletExtraArgs"
                                   ".topology-manager-scope")]
    assert result.findings[4].message == (
        "this KubeletConfiguration patch has no effect on nodes[1]: that node joins with kubeadm join and takes "
        "its kubelet configuration from the first control-plane node (kind#3849)")


def test_v1beta4_arguments_merge_by_name_and_null_deletes():
    carriers = kind_cluster({"apiVersion": "kind.x-k8s.io/v1alpha4", "kind": "Cluster", "nodes": [
        {"role": "control-plane", "kubeadmConfigPatches": [
            "kind: InitConfiguration\nnodeRegistration:\n  kubeletExtraArgs:\n    cpu-manager-policy: static\n",
            "apiVersion: kubeadm.k8s.io/v1beta4\nkind: InitConfiguration\nnodeRegistration:\n  kubeletExtraArgs:\n"
            "  - name: cpu-manager-policy\n    value: none\n  - name: node-labels\n    value: null\n"]}]})
    flags = carriers[0].settings.flags
    assert flags.settings == {"cpuManagerPolicy": "none", "providerID": "generated"}
    assert sorted(flags.command_line) == ["node-ip"]          # node-labels deleted by the null


@pytest.mark.parametrize("image, findings", [
    ("kindest/node:v1.37.0", [("NG002", "warning", 14, 17)]),
    ("kindest/node:v1.22.15@sha256:abc", []),        # kind's v1beta2 template: the patch applies
])
def test_patch_api_version_is_matched_against_the_nodes_kubernetes(image, findings):
    text = (KIND / "valid-kind-workers-patches.yaml").read_text().replace(
        "- role: worker\n  kubeadmConfigPatches:", f"- role: worker\n  image: {image}\n  kubeadmConfigPatches:", 1)
    result = lint(text)
    assert [(f.rule, f.severity.value, f.line, f.column) for f in result.findings if f.line < 20] == findings


def test_kinds_own_example_configs():
    example = lint((KIND / "kind-example-config.yaml").read_text(), "kind-example-config.yaml")
    assert rows(example) == [("NG002", "warning", 17, 10, "kubeadmConfigPatchesJSON6902[0].patch")]
    assert example.findings[0].message.startswith(
        "kind skips this ClusterConfiguration patch: its apiVersion kubeadm.k8s.io/v1beta3 matches no document")
    workers = lint((KIND / "valid-kind-workers-patches.yaml").read_text())
    assert rows(workers) == [("NG002", "warning", 13, 17, "nodes[1].kubeadmConfigPatches[0].apiVersion"),
                             ("NG002", "warning", 24, 12, "nodes[2].kubeadmConfigPatchesJSON6902[0].patch")]


def test_configs_that_patch_both_kubeadm_versions_are_not_warned():
    assert rows(lint((KIND / "kueue-kind-cluster.yaml").read_text())) == []
    assert rows(lint((KIND / "kuberay-kind.yaml").read_text())) == []


def test_patch_that_is_not_yaml_is_kinds_failure():
    result = lint("kind: Cluster\napiVersion: kind.x-k8s.io/v1alpha4\nkubeadmConfigPatches:\n- \"kind: [\"\n")
    assert rows(result) == [("NG002", "error", 4, 3, "kubeadmConfigPatches[0]")]
    assert result.findings[0].message.startswith("kind fails to parse this patch: ")


def test_json_6902_patch_of_the_kubelet_configuration_points_at_its_operation():
    result = lint("""\
kind: Cluster
apiVersion: kind.x-k8s.io/v1alpha4
kubeadmConfigPatchesJSON6902:
- group: kubelet.config.k8s.io
  version: v1beta1
  kind: KubeletConfiguration
  patch: |
    - op: add
      path: /topologyManagerPolicy
      value: single-numa-node
    - op: add
      path: /topologyManagerScope
      value: Pod
""")
    assert [(f.rule, f.line, f.column, f.path) for f in result.findings if f.rule == "NG205"] == [
        ("NG205", 13, 14, "kubeadmConfigPatchesJSON6902[0].patch[1].value")]


def test_json_6902_patch_that_does_not_apply_is_kinds_failure():
    result = lint("""\
kind: Cluster
apiVersion: kind.x-k8s.io/v1alpha4
kubeadmConfigPatchesJSON6902:
- group: kubelet.config.k8s.io
  version: v1beta1
  kind: KubeletConfiguration
  patch: |
    - op: replace
      path: /cpuManagerPolicy
      value: static
""")
    assert [(f.rule, f.severity.value, f.line, f.message) for f in result.findings] == [
        ("NG002", "error", 7, "the JSON 6902 patch does not apply: can't replace a non-existent object "
                              "'cpuManagerPolicy'")]


def test_init_patch_on_a_worker_and_join_patch_on_the_first_control_plane_are_dead():
    result = lint("""\
kind: Cluster
apiVersion: kind.x-k8s.io/v1alpha4
nodes:
- role: control-plane
  kubeadmConfigPatches:
  - |
    kind: JoinConfiguration
- role: worker
  kubeadmConfigPatches:
  - |
    kind: InitConfiguration
""")
    assert [(f.rule, f.severity.value, f.line, f.message) for f in result.findings] == [
        ("NG002", "warning", 7, "this JoinConfiguration patch has no effect on nodes[0]: that node runs kubeadm init"),
        ("NG002", "warning", 11, "this InitConfiguration patch has no effect on nodes[1]: that node joins with "
                                 "kubeadm join")]


def test_what_a_patch_writes_is_decoded_as_the_kubelet_decodes_it():
    """The user's own patch is schema-checked at its line (a caught slip: the layers the engine
    decodes are the carrier's own, not its companion's): an unknown field is reported and
    dropped, so the misspelt policy neither counts nor hides the real one; a type error stops
    the kubelet rules (the kubelet cannot decode the file)."""
    unknown = lint(STATIC_WITHOUT_RESERVATION + "  cpuManagerPolicyy: none\n")
    assert [(f.rule, f.severity.value, f.line, f.column, f.path) for f in unknown.findings
            if f.rule in ("NG002", "NG207")] == [
        ("NG207", "error", 7, 3, "kubeadmConfigPatches[0]"),
        ("NG002", "error", 10, 22, "kubeadmConfigPatches[0].cpuManagerPolicyy")]
    wrong_type = lint(STATIC_WITHOUT_RESERVATION + '  maxPods: "many"\n')
    assert [(f.rule, f.line, f.column, f.path) for f in wrong_type.findings] == [
        ("NG002", 10, 12, "kubeadmConfigPatches[0].maxPods")]
