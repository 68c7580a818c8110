"""`numaguard audit` with two declared pools (issue 13 §2) against the recorded API server:
each pool's nodes are listed by its labels, compared within their pool only, and the pods of a
pool are judged against that pool's node; nodes outside every pool are not compared."""
from __future__ import annotations

import copy
import json

from conftest import run_cli
from pool_fixture import pool_scenario
from recorded_apiserver import RecordedApiServer

TWO_POOLS = """apiVersion: numaguard.io/v1alpha1
kind: Config
pools:
- name: numa
  nodeLabels: {node.example.com/pool: numa}
  taint: {key: node.example.com/pool, value: numa, effect: NoSchedule}
- name: gpu
  nodeLabels: {node.example.com/pool: gpu}
  taint: {key: node.example.com/pool, value: gpu, effect: NoSchedule}
"""

# A GPU pool's configuration: valid for its machines, different from the numa pool's on purpose.
GPU_KUBELET = {
    "cpuManagerPolicy": "static", "memoryManagerPolicy": "Static", "topologyManagerPolicy": "single-numa-node",
    "topologyManagerScope": "pod", "featureGates": {"PodLevelResourceManagers": True}, "reservedSystemCPUs": "0,32",
    "kubeReserved": {"memory": "1Gi"}, "systemReserved": {"memory": "1Gi"},
    "evictionHard": {"memory.available": "100Mi"},
    "reservedMemory": [{"numaNode": 0, "limits": {"memory": "2148Mi"}}]}


def _gpu_node(name: str) -> dict:
    return {"metadata": {"name": name, "labels": {"kubernetes.io/hostname": name, "kubernetes.io/os": "linux",
                                                  "node.example.com/pool": "gpu"}},
            "spec": {"taints": [{"key": "node.example.com/pool", "value": "gpu", "effect": "NoSchedule"}]},
            "status": {"capacity": {"cpu": "64", "memory": "263856484Ki", "pods": "110"},
                       "nodeInfo": {"architecture": "amd64", "operatingSystem": "linux", "kubeletVersion": "v1.37.0"}}}


def _gpu_nrt(name: str) -> dict:
    """Four NUMA nodes of 16 CPUs and 64Gi: a different machine from the numa pool's 2 x 32."""
    return {"apiVersion": "topology.node.k8s.io/v1alpha2", "kind": "NodeResourceTopology",
            "metadata": {"name": name}, "topologyPolicies": ["SingleNUMANodePodLevel"],
            "zones": [{"name": f"node-{i}", "type": "Node",
                       "costs": [{"name": f"node-{j}", "value": 10 if i == j else 21} for j in range(4)],
                       "resources": [{"name": "cpu", "capacity": "16", "allocatable": "16", "available": "16"},
                                     {"name": "memory", "capacity": "64Gi", "allocatable": "64Gi",
                                      "available": "64Gi"}]} for i in range(4)]}


def _trainer(cpu: str, pool: str) -> dict:
    """A pending pod of a pool: pod-level resources, Guaranteed, `cpu` whole CPUs."""
    return {"metadata": {"name": f"trainer-{pool}", "namespace": "ml", "uid": f"uid-trainer-{pool}",
                         "creationTimestamp": "2026-12-02T09:00:00Z"},
            "spec": {"nodeSelector": {"node.example.com/pool": pool},
                     "tolerations": [{"key": "node.example.com/pool", "operator": "Equal", "value": pool,
                                      "effect": "NoSchedule"}],
                     "resources": {"requests": {"cpu": cpu, "memory": "8Gi"}, "limits": {"cpu": cpu, "memory": "8Gi"}},
                     "containers": [{"name": "train", "image": "registry.example.com/ml/train:2.0"}]},
            "status": {"phase": "Pending"}}


def two_pool_scenario():
    scenario = pool_scenario()
    scenario.nodes = scenario.nodes + [_gpu_node("gpu-node-1"), _gpu_node("gpu-node-2")]
    scenario.configz = {**scenario.configz, "gpu-node-1": copy.deepcopy(GPU_KUBELET),
                        "gpu-node-2": copy.deepcopy(GPU_KUBELET)}
    scenario.nrts = scenario.nrts + [_gpu_nrt("gpu-node-1"), _gpu_nrt("gpu-node-2")]
    # 20 CPUs fit a NUMA node of the numa pool (32 CPUs) but none of the gpu pool (16)
    scenario.pods = scenario.pods + [_trainer("20", "gpu"), _trainer("20", "numa")]
    return scenario


def _audit(server, *args):
    return run_cli("audit", "--kubeconfig", str(server.kubeconfig("audit-token")), "--format", "json",
                   *args, cwd=server.folder)


def test_two_pools_are_listed_by_their_labels_and_compared_apart(tmp_path):
    with RecordedApiServer(two_pool_scenario(), tmp_path / "apiserver") as server:
        (server.folder / ".numaguard.yaml").write_text(TWO_POOLS)
        run = _audit(server)
        node_lists = [r for r in server.scenario.requests if r.startswith("/api/v1/nodes?")]
    assert run.returncode == 3, run.stderr        # incomplete: numa-node-3's kubelet does not answer
    # one list per pool, by its labels; general-1 (in no pool) is never read
    assert [("numa" in r, "gpu" in r) for r in node_lists] == [(True, False), (False, True)]
    report = json.loads(run.stdout)
    assert sorted(n["name"] for n in report["nodes"]) == [
        "gpu-node-1", "gpu-node-2", "numa-node-1", "numa-node-2", "numa-node-3"]
    by_file: dict[str, list[str]] = {}
    for f in report["findings"]:
        by_file.setdefault(f["file"], []).append(f["rule"])
    # NG401 within the numa pool only, named "pool numa"; the gpu pool's two identical
    # configurations (and its other NUMA layout) are not compared with the numa pool's
    # (and NG425, info: each pool's reservedSystemCPUs judged against its NRT's assumed numbering)
    assert by_file["node/numa-node-1"] == ["NG401"] * 9 + ["NG425"]
    assert sorted(by_file["node/numa-node-2"]) == ["NG202", "NG203", "NG204", "NG205", "NG206"] + ["NG401"] * 9
    assert by_file["node/gpu-node-1"] == by_file["node/gpu-node-2"] == ["NG425"]
    assert not any(f["rule"] == "NG404" for f in report["findings"])
    ng401 = [f["message"] for f in report["findings"] if f["rule"] == "NG401"]
    assert all(" pool numa " in m and "gpu" not in m for m in ng401), ng401
    # each trainer is simulated on its own pool's node: 20 CPUs fit 32-CPU NUMA nodes only
    ng301 = [(f["file"], f["message"]) for f in report["findings"] if f["rule"] == "NG301"]
    assert ng301 == [("pod/ml/trainer-gpu",
                      ng301[0][1])] and ng301[0][1].startswith("on an empty node gpu-node-1 (topologyManagerPolicy "
                                                                "single-numa-node, scope pod) the kubelet rejects")


def test_without_pools_the_selected_nodes_are_one_pool_and_otherwise_nothing_is_compared(tmp_path):
    with RecordedApiServer(two_pool_scenario(), tmp_path / "apiserver") as server:
        everything = json.loads(_audit(server).stdout)
        selected = json.loads(_audit(server, "-l", "kubernetes.io/os=linux").stdout)
    # no pool and no selector: every node is read, none is compared with another
    assert len(everything["nodes"]) == 6
    assert not any(f["rule"] in ("NG401", "NG404", "NG405") for f in everything["findings"])
    # -l declares one pool of what it selects: the gpu machines differ from the numa ones,
    # general-1 from both, and the two pools' configurations are compared as one
    ng404 = sorted({f["file"] for f in selected["findings"] if f["rule"] == "NG404"})
    assert ng404 == ["node/general-1", "nrt/numa-node-1"]
    ng401 = [f for f in selected["findings"] if f["rule"] == "NG401"]
    assert sorted({f["file"] for f in ng401}) == ["node/numa-node-1", "node/numa-node-2"]
    assert "node/gpu-node-1, node/gpu-node-2" in ng401[0]["message"]


def test_a_pool_known_by_its_taint_alone_reads_every_node_and_keeps_the_tainted(tmp_path):
    config = ("pools:\n- name: numa\n  taint: {key: node.example.com/pool, value: numa, effect: NoSchedule}\n"
              "- name: gpu\n  nodeLabels: {node.example.com/pool: gpu}\n")
    with RecordedApiServer(two_pool_scenario(), tmp_path / "apiserver") as server:
        (server.folder / ".numaguard.yaml").write_text(config)
        report = json.loads(_audit(server).stdout)
        node_lists = [r for r in server.scenario.requests if r.split("?")[0] == "/api/v1/nodes"]
    # no label selector can find a taint: one list of every node, filtered to the pools' nodes
    assert [("labelSelector" in r) for r in node_lists] == [False]
    assert sorted(n["name"] for n in report["nodes"]) == [
        "gpu-node-1", "gpu-node-2", "numa-node-1", "numa-node-2", "numa-node-3"]
    assert sorted({f["file"] for f in report["findings"] if f["rule"] == "NG401"}) == [
        "node/numa-node-1", "node/numa-node-2"]
