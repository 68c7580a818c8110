"""Gardener Shoots and ManagedSeedSets (lint/k8s/platform_gardener.py): one kubelet per worker pool,
a pool's own block replacing the cluster's, Gardener's defaults under the user's settings, and
the requirements no Shoot can meet said so. Real files under tests/fixtures/carriers/gardener/
(ORIGIN.md)."""
from __future__ import annotations

import pytest

from numaguard.lint.config import config_from_dict
from numaguard.lint.engine import lint_documents
from numaguard.lint.load.documents import load_text

from conftest import FIXTURES, carriers_of, finding_rows, lint_rows

GARDENER = FIXTURES / "carriers" / "gardener"

SHOOT = """\
apiVersion: core.gardener.cloud/v1beta1
kind: Shoot
metadata: {name: numa, namespace: garden-dev}
spec:
  kubernetes:
    version: 1.37.1
    kubelet:
      cpuManagerPolicy: static
      kubeReserved: {cpu: "2", ephemeralStorage: 10Gi}
      evictionHard: {memoryAvailable: 500Mi}
  provider:
    type: aws
    workers:
    - name: numa
      machine: {type: m5.metal}
      labels: {node.example.com/pool: numa}
      taints: [{key: dedicated, value: numa, effect: NoSchedule}]
    - name: system
      machine: {type: m5.large}
      kubernetes:
        version: 1.36.3
        kubelet: {maxPods: 250}
"""
POOL = {"pool": {"nodeLabels": {"node.example.com/pool": "numa"}}}


def _lint(text: str, settings: dict | None = None):
    documents, errors = load_text(text, "shoot.yaml")
    result = lint_documents(documents, config=config_from_dict(settings or {}), load_errors=errors)
    return finding_rows(result), result


@pytest.mark.parametrize("name", ["90-shoot.yaml", "57-managedseedset.yaml", "gardenadm-base-shoot.yaml",
                                  "provider-local_shoot.yaml"])
def test_gardeners_own_examples_lint_clean(name):
    found, result = lint_rows((GARDENER / name).read_text(), name)
    assert (found, result.summary.objects) == ([], 1)


def test_a_pools_own_block_replaces_the_clusters_whole():
    # gardenadm's base Shoot: the worker pool sets maxPods only, so none of the cluster's settings reach it
    carriers = carriers_of((GARDENER / "gardenadm-base-shoot.yaml").read_text())
    assert [c.platform for c in carriers] == ["Gardener worker pool control-plane", "Gardener worker pool worker"]
    control_plane, worker = carriers
    assert (control_plane.config["seccompDefault"], control_plane.config["failSwapOn"],
            control_plane.config["maxPods"]) == (True, False, 110)
    assert "seccompDefault" not in worker.config
    assert (worker.config["failSwapOn"], worker.config["maxPods"]) == (True, 250)
    assert worker.document_path(("maxPods",)) == ("spec", "provider", "workers", 1, "kubernetes", "kubelet", "maxPods")
    assert control_plane.document_path(("failSwapOn",)) == ("spec", "kubernetes", "kubelet", "failSwapOn")
    assert control_plane.kubernetes_version == worker.kubernetes_version == (1, 35)


def test_gardener_defaults_and_its_spelling_of_the_eviction_and_reservation_keys():
    numa, system = carriers_of(SHOOT)
    config = numa.config
    assert (config["cpuManagerPolicy"], config["cgroupDriver"], config["enforceNodeAllocatable"]) == (
        "static", "systemd", ["pods"])
    # the user's keys over Gardener's: cpu replaced, memory kept, ephemeralStorage renamed
    assert config["kubeReserved"] == {"cpu": "2", "memory": "1Gi", "ephemeral-storage": "10Gi"}
    assert config["evictionHard"]["memory.available"] == "500Mi"
    assert config["evictionHard"]["nodefs.available"] == "5%"
    assert numa.unknown == frozenset() and system.unknown == frozenset({"evictionHard.memory.available"})
    assert numa.document_path(("kubeReserved", "ephemeral-storage")) == (
        "spec", "kubernetes", "kubelet", "kubeReserved", "ephemeralStorage")
    assert numa.document_path(("evictionHard", "memory.available")) == (
        "spec", "kubernetes", "kubelet", "evictionHard", "memoryAvailable")
    assert system.config["cpuManagerPolicy"] == "none"       # its own block has none: Gardener's default
    assert (numa.kubernetes_version, system.kubernetes_version) == ((1, 37), (1, 36))
    assert numa.nodes.labels == {"worker.gardener.cloud/pool": "numa", "node.example.com/pool": "numa"}
    assert numa.nodes.taints == ({"key": "dedicated", "value": "numa", "effect": "NoSchedule"},)
    assert system.nodes.labels == {"worker.gardener.cloud/pool": "system"}


def test_a_declared_pools_gardener_workers_cannot_meet_the_managers_requirements():
    found, result = _lint(SHOOT, POOL)
    # the numa pool joins the declared pool by its labels: its requirements are errors, said
    # to be out of the Shoot's reach; the system pool (no intent, no pool) is not judged on them
    assert found == [("NG202", "error", 8, 7, "spec.kubernetes.kubelet"),
                     ("NG204", "error", 8, 7, "spec.kubernetes.kubelet"),
                     ("NG205", "error", 8, 7, "spec.kubernetes.kubelet"),
                     ("NG206", "warning", 8, 7, "spec.kubernetes.kubelet")]
    ng205 = result.findings[2]
    assert ng205.message.endswith("; a Gardener worker pool cannot meet this requirement through the Shoot: the "
                                  "Shoot API has no topologyManagerScope (gardener/gardener "
                                  "pkg/apis/core/v1beta1/types_shoot.go KubeletConfig), and Gardener renders the "
                                  "kubelet's configuration itself")
    assert ng205.remediation.startswith("Run the pods that need pod-level resource managers on nodes whose "
                                        "kubelet is configured outside the Shoot")


def test_the_gate_is_set_through_the_shoots_feature_gates():
    text = SHOOT.replace("      cpuManagerPolicy: static\n",
                         "      cpuManagerPolicy: static\n      featureGates: {PodLevelResourceManagers: true}\n")
    found, _ = _lint(text, POOL)
    assert [f[0] for f in found] == ["NG204", "NG205", "NG206"]
    [numa, _] = carriers_of(text)
    assert numa.config["featureGates"] == {"PodLevelResourceManagers": True}
    assert numa.document_path(("featureGates", "PodLevelResourceManagers")) == (
        "spec", "kubernetes", "kubelet", "featureGates", "PodLevelResourceManagers")


def test_the_gate_in_the_shoot_declares_the_pool_without_a_pool_declared():
    text = SHOOT.replace("      cpuManagerPolicy: static\n",
                         "      cpuManagerPolicy: static\n      featureGates: {PodLevelResourceManagers: true}\n")
    found, result = _lint(text)
    assert [(f[0], f[1]) for f in found] == [("NG204", "error"), ("NG205", "error"), ("NG206", "warning")]
    assert result.summary.as_dict()["declaredBy"]["kubeletConfigurations"]["gate"] == 1


def test_kubelet_fields_the_shoot_does_not_have_are_refused_where_written():
    text = SHOOT.replace("        kubelet: {maxPods: 250}",
                         "        kubelet: {maxPods: 250, topologyManagerPolicy: single-numa-node, foo: 1}")
    found, result = _lint(text)
    found = [f for f in found if f[0] == "NG002"]
    assert found == [("NG002", "error", 22, 56, "spec.provider.workers[1].kubernetes.kubelet.topologyManagerPolicy"),
                     ("NG002", "error", 22, 79, "spec.provider.workers[1].kubernetes.kubelet.foo")]
    ng002 = [f for f in result.findings if f.rule == "NG002"]
    assert ng002[0].message.startswith(
        "the Shoot API has no kubelet field topologyManagerPolicy (gardener/gardener pkg/apis/core/v1beta1/"
        "types_shoot.go KubeletConfig): kubectl's strict field validation refuses the Shoot")
    assert ng002[1].message.startswith('unknown field "foo" in a Gardener KubeletConfig')


@pytest.mark.parametrize("block, message", [
    ("{maxPods: \"250\"}", "maxPods must be an integer, not str: the API server refuses the Shoot"),
    ("{failSwapOn: 1}", "failSwapOn must be true or false, not int: the API server refuses the Shoot"),
    ("{evictionHard: {memory.available: 1Gi}}",
     "evictionHard has no field memory.available in Gardener's API (it takes memoryAvailable, imageFSAvailable, "
     "imageFSInodesFree, nodeFSAvailable, nodeFSInodesFree; the kubelet's own spelling is translated by Gardener)"),
    ("{kubeReserved: [cpu]}", "kubeReserved must be a mapping: the API server refuses the Shoot"),
])
def test_values_of_the_wrong_shape_are_the_api_servers_refusal(block, message):
    found, result = _lint(SHOOT.replace("{maxPods: 250}", block))
    assert [(f.rule, f.severity.value, f.message) for f in result.findings if f.rule == "NG002"] == [
        ("NG002", "error", message)]


def test_reserving_no_cpu_for_the_static_policy_stops_the_kubelet():
    text = SHOOT.replace('kubeReserved: {cpu: "2", ephemeralStorage: 10Gi}', 'kubeReserved: {cpu: "0"}')
    found, result = _lint(text)
    [ng207] = [f for f in result.findings if f.rule == "NG207"]
    assert (ng207.severity.value, ng207.line, ng207.path) == ("error", 9, "spec.kubernetes.kubelet.kubeReserved.cpu")
    assert ng207.remediation.startswith("Reserve CPUs with kubeReserved.cpu (the Shoot has no reservedSystemCPUs")


def test_a_shoot_without_workers_is_judged_on_the_clusters_block():
    text = SHOOT.split("  provider:")[0]
    [carrier] = carriers_of(text)
    assert (carrier.platform, carrier.nodes) == ("Gardener Shoot", None)


def test_a_managed_seed_sets_shoot_template():
    text = """\
apiVersion: seedmanagement.gardener.cloud/v1alpha1
kind: ManagedSeedSet
metadata: {name: seeds, namespace: garden}
spec:
  replicas: 1
  shootTemplate:
    spec:
      kubernetes:
        kubelet: {cpuManagerPolicy: Static}
      provider:
        workers:
        - name: seed
"""
    [carrier] = carriers_of(text)
    assert carrier.platform == "Gardener worker pool seed"
    found, result = _lint(text)
    # Gardener refuses the Shoot before any kubelet sees the capital S (validation/shoot.go)
    assert found[0] == ("NG002", "error", 9, 37, "spec.shootTemplate.spec.kubernetes.kubelet.cpuManagerPolicy")
    assert result.findings[0].message == ('gardener-apiserver refuses the Shoot: Unsupported value: "Static": '
                                          'supported values: "none", "static"')
    assert "NG203" not in [f[0] for f in found]
