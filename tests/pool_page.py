"""A large pool as `numaguard audit` reads it (trimmed API objects), for the pool
report's tests: every node a 2-socket machine (2 NUMA nodes x 16 cores x 2 threads) with a
NodeResourceTopology and a static kubelet configuration, 20 pods per node from 25 Deployments
(half pinned, half Burstable). Problems spread as in a real pool: every 25th
node runs a drifted kubelet configuration (NG401 errors), every 10th holds a pod its kubelet
rejected (NG410), every 40th has less memory than the rest (NG404 warnings).

`judged(nodes)` runs the audit's own judging (numaguard.lint.cluster.audit.judge_objects) on it."""
from __future__ import annotations

from numaguard.lint.cluster import trim
from numaguard.lint.cluster.audit import judge_objects

KC = {"apiVersion": "kubelet.config.k8s.io/v1beta1", "kind": "KubeletConfiguration",
      "cpuManagerPolicy": "static", "memoryManagerPolicy": "Static", "topologyManagerPolicy": "single-numa-node",
      "topologyManagerScope": "pod", "reservedSystemCPUs": "0,32", "systemReserved": {"memory": "8Gi"},
      "kubeReserved": {"memory": "2Gi"}, "evictionHard": {"memory.available": "100Mi"},
      "reservedMemory": [{"numaNode": 0, "limits": {"memory": "10340Mi"}}],
      "featureGates": {"PodLevelResourceManagers": True}}
PODS_PER_NODE = 20


def node_name(i: int) -> str:
    return f"pool-{i:04d}"


def _node(i: int) -> dict:
    return trim.node({"metadata": {"name": node_name(i), "labels": {"node.example.com/pool": "numa"}},
                      "status": {"capacity": {"cpu": "64", "memory": "263856484Ki", "pods": "110"},
                                 "allocatable": {"cpu": "62", "memory": "245865316Ki", "pods": "110"},
                                 "nodeInfo": {"operatingSystem": "linux", "architecture": "amd64",
                                              "kubeletVersion": "v1.37.0"}}})


def _nrt(i: int) -> dict:
    memory = "65964121Ki" if i % 40 == 7 else "131928242Ki"

    def zone(n: int) -> dict:
        return {"name": f"node-{n}", "type": "Node",
                "costs": [{"name": "node-0", "value": 10 if n == 0 else 21},
                          {"name": "node-1", "value": 21 if n == 0 else 10}],
                "resources": [{"name": "cpu", "capacity": "32", "allocatable": "32", "available": "32"},
                              {"name": "memory", "capacity": memory, "allocatable": memory, "available": memory}]}
    return trim.node_resource_topology({"apiVersion": "topology.node.k8s.io/v1alpha2", "kind": "NodeResourceTopology",
                                        "metadata": {"name": node_name(i)},
                                        "topologyPolicies": ["SingleNUMANodePodLevel"], "zones": [zone(0), zone(1)]})


def _pod(node: int, k: int) -> dict:
    """Pinned pods hold 3, 5 or 7 exclusive CPUs (Guaranteed containers) or a 4-CPU pod-level
    budget (KEP-5526 pod shared pool); the others are Burstable."""
    deployment = (node * PODS_PER_NODE + k) % 25
    name = f"app-{deployment:02d}-5c9d7f6b8-{node:04d}{k:02d}"
    spec = {"nodeName": node_name(node), "nodeSelector": {"node.example.com/pool": "numa"},
            "tolerations": [{"key": "node.example.com/pool", "operator": "Equal", "value": "numa",
                             "effect": "NoSchedule"}],
            "containers": [{"name": "app", "image": f"registry.example.com/app-{deployment}:1.0"}]}
    if k % 2 == 0 and deployment % 4:
        cpus = str(3 + 2 * (deployment % 3))
        spec["containers"][0]["resources"] = {"requests": {"cpu": cpus, "memory": "2Gi"},
                                              "limits": {"cpu": cpus, "memory": "2Gi"}}
    elif k % 2 == 0:
        budget = {"cpu": "4", "memory": "4Gi"}
        spec["resources"] = {"requests": budget, "limits": budget}
    else:
        spec["containers"][0]["resources"] = {"requests": {"cpu": "250m", "memory": "256Mi"}}
    return trim.pod({"metadata": {"name": name, "namespace": f"team-{deployment % 5}", "uid": f"uid-{node}-{k}",
                                  "creationTimestamp": f"2026-12-01T10:{k:02d}:00Z",
                                  "labels": {"pod-template-hash": "5c9d7f6b8"},
                                  "ownerReferences": [{"kind": "ReplicaSet", "name": f"app-{deployment:02d}-5c9d7f6b8",
                                                       "uid": f"rs-{deployment}", "controller": True}]},
                     "spec": spec, "status": {"phase": "Running"}})


def _rejected(node: int) -> dict:
    pod = _pod(node, 0)
    pod["metadata"]["name"] = f"analytics-6d5f8b7c9d-{node:04d}x"
    pod["metadata"]["uid"] = f"uid-{node}-rejected"
    pod["status"] = {"phase": "Failed", "reason": "TopologyAffinityError",
                     "message": "Pod was rejected: Resources cannot be allocated with Topology locality"}
    return pod


def judged(nodes: int):
    node_objects, topologies, configs, pods = [], {}, {}, []
    for i in range(nodes):
        node_objects.append(_node(i))
        topologies[node_name(i)] = _nrt(i)
        configs[node_name(i)] = dict(KC, topologyManagerPolicy="best-effort") if i % 25 == 3 else KC
        pods += [_pod(i, k) for k in range(PODS_PER_NODE)]
        if i % 10 == 5:
            pods.append(_rejected(i))
    # The operator checked the pool's CPU numbering against its NodeResourceTopologies (NG425
    # says to, on every node otherwise) and turned NG425 off.
    from numaguard.lint.config import config_from_dict
    return judge_objects(node_objects, topologies, configs, pods, config=config_from_dict({"rules": {"NG425": "off"}}))
