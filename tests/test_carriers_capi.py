"""Cluster API kubeadm bootstrap: kubeletExtraArgs and the kubeletconfiguration patches written
by `files` into `patches.directory`, over kubeadm's defaults (lint/platforms/capi.py).
Real templates under tests/fixtures/carriers/capi/ (ORIGIN.md)."""
from __future__ import annotations

import base64
import gzip

from numaguard.lint.platforms.capi import capi_kubeadm
from numaguard.lint.load.documents import load_text

from conftest import FIXTURES, finding_rows, lint_text

CAPI = FIXTURES / "carriers" / "capi"


def lint(text: str, name: str = "capi.yaml"):
    return lint_text(text, name)


rows = finding_rows


def test_removed_feature_gate_in_real_aws_templates():
    result = lint((CAPI / "cluster-template-csimigration-off.yaml").read_text())
    assert rows(result) == [
        ("NG210", "error", 44, 26, "spec.kubeadmConfigSpec.initConfiguration.nodeRegistration.kubeletExtraArgs.feature-gates"),
        ("NG210", "error", 50, 26, "spec.kubeadmConfigSpec.joinConfiguration.nodeRegistration.kubeletExtraArgs.feature-gates"),
        ("NG210", "error", 116, 28, "spec.template.spec.joinConfiguration.nodeRegistration.kubeletExtraArgs.feature-gates")]
    assert result.findings[0].message == ("the kubelet refuses to start: unrecognized feature gate: CSIMigrationAWS "
                                          "[set by --feature-gates=CSIMigrationAWS=false]")


def test_cluster_api_book_examples():
    config_flag = lint((CAPI / "kubelet-config-md-L24.yaml").read_text())
    assert rows(config_flag) == [
        ("NG002", "warning", 78, 24, "spec.template.spec.kubeadmConfigSpec.initConfiguration.nodeRegistration"
                                     ".kubeletExtraArgs[0].value"),
        ("NG002", "warning", 85, 24, "spec.template.spec.kubeadmConfigSpec.joinConfiguration.nodeRegistration"
                                     ".kubeletExtraArgs[0].value")]
    assert rows(lint((CAPI / "kubelet-config-md-L268.yaml").read_text())) == []
    assert rows(lint((CAPI / "simple-cluster.yaml").read_text())) == []


def test_patches_file_sets_the_configuration_of_init_and_join():
    doc = load_text((CAPI / "kubelet-config-md-L268.yaml").read_text(), "x")[0][0].data
    init, join = capi_kubeadm(doc)
    for carrier in (init, join):
        assert (carrier.config["kubeReserved"], carrier.config["evictionHard"]) == (
            {"cpu": "1", "memory": "2Gi", "ephemeral-storage": "1Gi"},
            {"memory.available": "500Mi", "nodefs.available": "10%"})
        assert carrier.config["cgroupDriver"] == "systemd"          # kubeadm's default underneath
    assert (init.platform, join.platform) == ("Cluster API KubeadmControlPlaneTemplate (kubeadm init)",
                                              "Cluster API KubeadmControlPlaneTemplate (kubeadm join)")


PATCHED = """\
apiVersion: bootstrap.cluster.x-k8s.io/v1beta2
kind: KubeadmConfigTemplate
metadata:
  name: numa-workers
spec:
  template:
    spec:
      files:
      - path: /etc/kubernetes/patches/kubeletconfiguration0+merge.yaml
        content: |
          cpuManagerPolicy: static
          topologyManagerScope: pods
      - path: /etc/kubernetes/patches/kubeletconfiguration1+strategic.json
        encoding: base64
        content: {encoded}
      - path: /etc/kubernetes/kubeletconfiguration9.yaml
        content: "memoryManagerPolicy: Static"
      joinConfiguration:
        patches:
          directory: /etc/kubernetes/patches
        nodeRegistration:
          kubeletExtraArgs:
          - name: reserved-cpus
            value: "0"
"""


def test_patch_lines_flags_and_unread_files():
    encoded = base64.b64encode(b'{"topologyManagerPolicy": "single-numa-nod"}').decode()
    result = lint(PATCHED.format(encoded=encoded))
    assert [(r, s, line, col, path) for r, s, line, col, path in rows(result) if r in ("NG002", "NG205", "NG206")] == [
        ("NG205", "error", 12, 33, "spec.template.spec.files[0].content.topologyManagerScope"),
        ("NG206", "error", 15, 18, "spec.template.spec.files[1].content.topologyManagerPolicy"),
        ("NG002", "warning", 16, 15, "spec.template.spec.files[2].path")]
    unread = [f for f in result.findings if f.rule == "NG002"][0]
    assert unread.message == ("kubeadm never reads this kubelet patch: it is not under patches.directory "
                              "/etc/kubernetes/patches in spec.template.spec.joinConfiguration")
    carrier = capi_kubeadm(load_text(PATCHED.format(encoded=encoded), "x")[0][0].data)[0]
    assert (carrier.config["cpuManagerPolicy"], carrier.config["reservedSystemCPUs"]) == ("static", "0")
    assert "memoryManagerPolicy" not in carrier.config


def test_patch_order_is_the_file_names_and_gzip_content_is_read():
    later = base64.b64encode(gzip.compress(b"cpuManagerPolicy: none\n")).decode()
    doc = {"apiVersion": "bootstrap.cluster.x-k8s.io/v1beta1", "kind": "KubeadmConfig", "spec": {
        "files": [{"path": "/p/kubeletconfigurationb.yaml", "encoding": "gzip+base64", "content": later},
                  {"path": "/p/kubeletconfigurationa.yaml", "content": "cpuManagerPolicy: static\n"}],
        "initConfiguration": {"patches": {"directory": "/p"},
                              "nodeRegistration": {"kubeletExtraArgs": {"max-pods": "20"}}}}}
    carrier = capi_kubeadm(doc)[0]
    assert (carrier.config["cpuManagerPolicy"], carrier.config["maxPods"]) == ("none", 20)


def test_unknown_patch_type_stops_kubeadm():
    doc = {"apiVersion": "bootstrap.cluster.x-k8s.io/v1beta2", "kind": "KubeadmConfig", "spec": {
        "files": [{"path": "/p/kubeletconfiguration+yaml.yaml", "content": "cpuManagerPolicy: static\n"}],
        "joinConfiguration": {"patches": {"directory": "/p"}}}}
    carrier = capi_kubeadm(doc)[0]
    assert [(rule, v.message, v.severity) for rule, _, v in carrier.notices] == [
        ("NG002", "kubeadm stops: kubeletconfiguration+yaml.yaml: unknown or missing patch type after '+', must "
                  "be one of [json merge strategic]", None)]


def test_v1beta1_map_and_v1beta2_list_and_wrong_shape():
    assert capi_kubeadm({"apiVersion": "controlplane.cluster.x-k8s.io/v1beta1", "kind": "KubeadmControlPlane",
                         "spec": {"kubeadmConfigSpec": {"initConfiguration": {"nodeRegistration": {
                             "kubeletExtraArgs": {"cpu-manager-policy": "static"}}}}}})[0].config["cpuManagerPolicy"] == "static"
    result = lint("""\
apiVersion: controlplane.cluster.x-k8s.io/v1beta2
kind: KubeadmControlPlane
metadata: {name: cp}
spec:
  kubeadmConfigSpec:
    initConfiguration:
      nodeRegistration:
        kubeletExtraArgs:
          cpu-manager-policy: static
""")
    assert rows(result) == [("NG002", "error", 9, 11, "spec.kubeadmConfigSpec.initConfiguration.nodeRegistration"
                                                     ".kubeletExtraArgs")]


def test_template_without_spec_is_a_join_over_kubeadms_defaults_not_a_kubelet_configuration():
    result = lint("apiVersion: bootstrap.cluster.x-k8s.io/v1beta2\nkind: KubeadmConfigTemplate\nmetadata:\n  name: md\n")
    assert (rows(result), result.summary.objects) == ([], 1)
    carrier = capi_kubeadm({"apiVersion": "bootstrap.cluster.x-k8s.io/v1beta2", "kind": "KubeadmConfigTemplate"})[0]
    assert (carrier.platform, carrier.config["cgroupDriver"]) == ("Cluster API KubeadmConfigTemplate (kubeadm join)",
                                                                  "systemd")
