"""The pool rules: NG401 (configurations), NG404/NG405 (hardware), and the checkpoint rules,
through the library API (parsed objects in) and through `numaguard lint` (a declared pool)."""
from __future__ import annotations

import json

from click.testing import CliRunner

from numaguard.lint.cli.main import main
from numaguard.lint.k8s.checkpoints import cpu_checkpoint_json
from numaguard.lint.numa.node import load_node_file
from numaguard.lint.rules.node import CheckpointExtract, checkpoint_findings
from numaguard.lint.rules.pool import (NodeHardware, hardware_from_node_object, hardware_from_nrt,
                                       hardware_from_topology, merge_hardware, pool_findings)

from conftest import FIXTURES

BASE = {"apiVersion": "kubelet.config.k8s.io/v1beta1", "kind": "KubeletConfiguration",
        "featureGates": {"PodLevelResourceManagers": True}, "cpuManagerPolicy": "static",
        "memoryManagerPolicy": "Static", "topologyManagerPolicy": "single-numa-node",
        "topologyManagerScope": "pod", "reservedSystemCPUs": "0,32"}


def test_one_canary_is_named_against_the_majority():
    canary = {**BASE, "cpuManagerPolicy": "none"}
    found = pool_findings([("n1", BASE), ("n2", BASE), ("n3", canary)])
    assert [(v.rule.id, v.source, v.violation.path) for v in found] == [("NG401", "n3", ("cpuManagerPolicy",))]
    assert found[0].violation.message == ("cpuManagerPolicy is none here but static in 2 of 3 configurations "
                                          "of the pool (n1, n2)")


def test_defaults_and_quantities_are_compared_effectively():
    a = {**BASE, "kubeReserved": {"memory": "1Gi"}}
    b = {**BASE, "kubeReserved": {"memory": "1024Mi"}, "memoryManagerPolicy": "Static"}
    assert pool_findings([("a", a), ("b", b)]) == []
    c = {k: v for k, v in a.items() if k != "topologyManagerScope"}        # default: container
    found = pool_findings([("a", a), ("c", c)])
    assert sorted((v.source, v.violation.path) for v in found) == [("a", ("topologyManagerScope",)),
                                                                   ("c", ())]
    assert "no majority: pod in a; container in c" in found[0].violation.message


def test_gate_default_counts_as_a_value():
    gate_off = {**BASE, "featureGates": {}}                 # PodLevelResourceManagers defaults off in 1.37
    found = pool_findings([("a", BASE), ("b", BASE), ("c", gate_off)])
    assert [(v.source, v.violation.path) for v in found] == [("c", ("featureGates",))]
    assert found[0].violation.message.startswith("featureGates.PodLevelResourceManagers is false here but true")


def test_hardware_outlier_and_windows():
    nodes = [NodeHardware("a", cpus=64, memory=256 * 2**30), NodeHardware("b", cpus=64, memory=255 * 2**30),
             NodeHardware("c", cpus=96, memory=256 * 2**30), NodeHardware("w", os="windows")]
    found = pool_findings([], nodes)
    assert [(v.rule.id, v.source) for v in found] == [("NG405", "w"), ("NG404", "c")]
    assert found[1].violation.message == "node c has 96 CPUs, but 2 of 3 nodes of the pool have 64 (a, b)"


def test_hardware_from_descriptions_and_nrt():
    snc = hardware_from_topology("snc", load_node_file("builtin:dual-socket-snc2").topology)
    ht = load_node_file("builtin:dual-socket-ht").topology
    assert (snc.sockets, snc.numa_nodes, snc.cpus_per_numa, snc.threads_per_core) == (2, 4, (24, 24, 24, 24), 2)
    found = pool_findings([], [hardware_from_topology("ht1", ht), hardware_from_topology("ht2", ht), snc])
    assert [(v.source, v.violation.path) for v in found] == [("snc", ())] * 4
    # 2 sockets and 2 threads per core on both; 256Gi in total on both
    assert [v.violation.message.split(" has ")[1].split(",")[0] for v in found] == [
        "4 NUMA nodes", "24/24/24/24 CPUs per NUMA node", "64Gi/64Gi/64Gi/64Gi memory per NUMA node", "96 CPUs"]
    nrt = {"apiVersion": "topology.node.k8s.io/v1alpha2", "kind": "NodeResourceTopology", "metadata": {"name": "n"},
           "zones": [{"name": f"node-{i}", "type": "Node", "resources": [
               {"name": "cpu", "capacity": "32"}, {"name": "memory", "capacity": "128Gi"}]} for i in (0, 1)]}
    hw = hardware_from_nrt(nrt)
    assert (hw.numa_nodes, hw.cpus_per_numa, hw.memory_per_numa) == (2, (32, 32), (2**37, 2**37))


def test_checkpoint_findings_api():
    node = load_node_file("builtin:dual-socket-ht")
    cp = CheckpointExtract.of("n1:/var/lib/kubelet/cpu_manager_state", cpu_checkpoint_json(
        "static", "1-14,17-31,33-46,49-63", {"u1": {"app": "0,15-16"}, "u2": {"db": "16"}}))
    found = checkpoint_findings([cp], kubelet_config=node.kubelet_config, topology=node.topology, pod_uids={"u1"})
    assert [(v.rule.id, v.violation.path) for v in found] == [
        ("NG403", ("data", "entries", "u2", "db")), ("NG407", ("data", "entries", "u2")),
        ("NG419", ("data", "defaultCpuSet")), ("NG419", ("data", "defaultCpuSet")), ("NG422", ("data", "entries", "u1"))]
    assert [v.violation.message for v in found] == [
        "container db of pod u2 holds CPUs 16 that pod u1 holds too; the kubelet starts with this and both run there",
        "entries holds an assignment for pod u2, which is not among the 1 pods of the node",
        'the kubelet will not start: not all reserved cpus: "0,32" are present in defaultCpuSet: '
        '"1-14,17-31,33-46,49-63" (reserved CPUs 0,32 are not in the shared pool (held as exclusive CPUs by container '
        "app of pod u1 (0); 32 in no entry at all); the reservation (reservedSystemCPUs, or kubeReserved/systemReserved "
        "cpu) changed without a drain, or the file was edited)",
        'the kubelet will not start: current set of available CPUs "0-63" doesn\'t match with CPUs in state '
        '"0-31,33-46,49-63" (CPUs 32,47-48 are online on the node but in neither defaultCpuSet nor any entry (onlined '
        "since the file was written, or the file was edited))",
        "pod u1 holds CPUs on NUMA nodes 0, 1: at its next restart the kubelet admits the pod again from these, and "
        "the Topology Manager policy single-numa-node rejects it (TopologyAffinityError), stopping the running pod"]


def test_tolerated_and_refused_without_the_nodes_cpus():
    """No topology: the reserved CPUs are known from reservedSystemCPUs alone (check 1 of
    validateState runs, the coverage check does not); a pod-level set in the shared pool is
    what the static policy tolerates (NG403, at its podEntries)."""
    cp = CheckpointExtract.of("n1:cpu_manager_state", cpu_checkpoint_json(
        "static", "1,4-31,33-63", {"u1": {"app": "2-3"}}, {"u1": "2-5"}))
    found = checkpoint_findings([cp], kubelet_config={**BASE, "reservedSystemCPUs": "0,32"})
    assert [(v.rule.id, v.violation.path, v.violation.message) for v in found] == [
        ("NG403", ("data", "podEntries", "u1"), "pod u1 holds pod-level CPUs 4-5 that are also in the shared pool "
                                               "(defaultCpuSet 1,4-31,33-63); the kubelet starts with this, and other "
                                               "pods' shared containers run there"),
        ("NG419", ("data", "defaultCpuSet"), 'the kubelet will not start: not all reserved cpus: "0,32" are present in '
                                             'defaultCpuSet: "1,4-31,33-63" (reserved CPUs 0,32 are not in the shared '
                                             "pool (0,32 in no entry at all); the reservation (reservedSystemCPUs, or "
                                             "kubeReserved/systemReserved cpu) changed without a drain, or the file "
                                             "was edited)")]


def test_corrupt_checkpoint_is_a_finding():
    cp = CheckpointExtract.of("x", {"policyName": "static", "defaultCpuSet": "0", "data": "{", "dataChecksum": 7})
    found = checkpoint_findings([cp], kubelet_config=BASE)
    assert [(v.rule.id, v.violation.path) for v in found] == [("NG406", ("data",))]


def test_lint_pool_directory(tmp_path):
    pool = tmp_path / "pool"
    pool.mkdir()
    import yaml
    for name, policy in (("a", "single-numa-node"), ("b", "single-numa-node"), ("c", "best-effort")):
        (pool / f"node-{name}.yaml").write_text(yaml.safe_dump({**BASE, "topologyManagerPolicy": policy}))
    (pool / "cpu_manager_state").write_text(json.dumps(cpu_checkpoint_json("none", "0-63")))
    result = CliRunner().invoke(main, ["lint", "--pool", str(pool), "--select", "NG4", "--format", "json"])
    assert result.exit_code == 1, result.output
    report = json.loads(result.output)
    assert [(f["rule"], f["file"].rsplit("/", 1)[1], f["line"], f["path"]) for f in report["findings"]] == [
        ("NG402", "cpu_manager_state", 1, "data.policyName"),
        ("NG401", "node-c.yaml", 8, "topologyManagerPolicy")]


def test_fixture_pool_file_names_documents_by_line(tmp_path):
    path = FIXTURES / "rules/NG401/bad-canary-policy.yaml"
    config = tmp_path / "config.yaml"
    config.write_text(f"pool: {{kubeletConfigs: [{path}]}}\n")
    result = CliRunner().invoke(main, ["lint", "--config", str(config), str(path),
                                       "--select", "NG401", "--format", "json"])
    findings = json.loads(result.output)["findings"]
    assert [(f["line"], f["column"]) for f in findings] == [(39, 24)]
    assert findings[0]["message"].endswith(f"pool ({path}:3, {path}:18)")


def test_real_eks_configurations_differ_by_instance_type():
    """nodeadm sizes kubeReserved.memory by max pods: one pool, two instance types."""
    folder = FIXTURES / "pool/eks"
    result = CliRunner().invoke(main, ["lint", "--pool", str(folder), "--select", "NG401", "--format", "json"])
    findings = json.loads(result.output)["findings"]
    assert [(f["file"].rsplit("/", 1)[1], f["line"], f["column"], f["path"]) for f in findings] == [
        ("custom-max-pods-expression.json", 61, 19, "kubeReserved.memory")]
    assert findings[0]["message"] == (
        f"kubeReserved.memory is 739Mi here but 893Mi in 2 of 3 configurations of the pool "
        f"({folder}/kubelet-config-dir.json, {folder}/mime-userdata-merge.json)")


def test_checkpoint_file_that_is_not_json_is_ng406(tmp_path):
    (tmp_path / "cpu_manager_state").write_text('{"policyName": "static", \n')
    result = CliRunner().invoke(main, ["lint", str(tmp_path), "--format", "json"])
    report = json.loads(result.output)
    assert result.exit_code == 1
    assert [(f["rule"], f["line"]) for f in report["findings"]] == [("NG406", 2)]
    assert report["summary"]["objects"] == 1


def test_a_node_read_from_its_node_object_and_its_nrt_counts_once():
    """One node, one hardware record: the Node object's OS, CPUs and memory merged with its
    NodeResourceTopology's NUMA layout, each finding at the document that said it."""
    def node(name: str, cpu: str) -> dict:
        return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name},
                "status": {"capacity": {"cpu": cpu, "memory": "256Gi"}, "nodeInfo": {"operatingSystem": "linux"}}}

    def nrt(name: str, cpus: str) -> dict:
        return {"apiVersion": "topology.node.k8s.io/v1alpha2", "kind": "NodeResourceTopology", "metadata": {"name": name},
                "zones": [{"name": f"node-{i}", "type": "Node", "resources": [
                    {"name": "cpu", "capacity": cpus}, {"name": "memory", "capacity": "128Gi"}]} for i in (0, 1)]}

    records = []
    for name, cpu, per_numa in (("a", "64", "32"), ("b", "64", "32"), ("c", "48", "24")):
        records += [hardware_from_node_object(node(name, cpu), f"node/{name}"), hardware_from_nrt(nrt(name, per_numa), f"nrt/{name}")]
    found = pool_findings([], records)
    assert [(v.rule.id, v.source, v.violation.path, v.ref.kind, v.violation.message) for v in found] == [
        ("NG404", "nrt/c", ("zones",), "NodeResourceTopology",
         "node c has 24/24 CPUs per NUMA node, but 2 of 3 nodes of the pool have 32/32 (a, b)"),
        ("NG404", "node/c", ("status", "capacity", "cpu"), "Node",
         "node c has 48 CPUs, but 2 of 3 nodes of the pool have 64 (a, b)")]
    [merged] = [n for n in merge_hardware(records) if n.name == "c"]
    assert (merged.os, merged.cpus, merged.numa_nodes, merged.cpus_per_numa) == ("linux", 48, 2, (24, 24))
