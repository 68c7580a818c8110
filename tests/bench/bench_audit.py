"""Benchmark `numaguard audit` on a synthetic pool: 1,000 nodes, 50,000 pods.

    python tests/bench/bench_audit.py [--nodes 1000] [--pods 50000]

The recorded API server (tests/cluster/recorded_apiserver.py) runs in its own process and
generates the lists page by page (pods shaped like real ones: managedFields, env, volumes,
probes, ~3 KB of JSON each), every node with a NodeResourceTopology (2 NUMA nodes x 32 CPUs)
and a static kubelet configuration behind the node proxy. The audit runs in a child process
(the real client path: kubeconfig, TLS, token) and reports its wall time, its time waiting on
the server (summed over the 16 configz threads, and the wall time of the reading phase), its
judging time, and its peak RSS.

Baselines measured in the same run: the same lists read with urllib3 + json.loads alone and
thrown away (what reading costs before numaguard keeps or judges anything), and the peak RSS
of a process that imports numaguard and the kubernetes client and reads nothing.
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "cluster"))

KC = {"cpuManagerPolicy": "static", "memoryManagerPolicy": "Static", "topologyManagerPolicy": "single-numa-node",
      "topologyManagerScope": "pod", "reservedSystemCPUs": "0,32", "systemReserved": {"memory": "8Gi"},
      "kubeReserved": {"memory": "2Gi"}, "evictionHard": {"memory.available": "100Mi"},
      "reservedMemory": [{"numaNode": 0, "limits": {"memory": "10340Mi"}}],
      "featureGates": {"PodLevelResourceManagers": True}, "maxPods": 110,
      "cgroupDriver": "systemd", "enableServer": True, "clusterDomain": "cluster.local"}


class Generated:
    """A list generated item by item in key order; `page(start_key, limit)` like etcd."""

    def __init__(self, count: int, make) -> None:
        self.count, self.make = count, make

    def key(self, i: int) -> str:
        return f"{i:08d}"

    def page(self, start, limit):
        first = int(start) + 1 if start is not None else 0
        last = min(self.count, first + (limit or self.count))
        items = [self.make(i) for i in range(first, last)]
        return items, self.key(last - 1), self.count - last


def node(i: int) -> dict:
    name = f"pool-{i:04d}"
    return {"metadata": {"name": name, "uid": f"00000000-0000-4000-8000-{i:012d}",
                         "labels": {"kubernetes.io/hostname": name, "node.example.com/pool": "numa"},
                         "managedFields": [{"manager": "kubelet", "operation": "Update", "fieldsType": "FieldsV1",
                                            "fieldsV1": {"f:status": {"f:conditions": {}}}}]},
            "spec": {"taints": [{"key": "node.example.com/pool", "value": "numa", "effect": "NoSchedule"}]},
            "status": {"capacity": {"cpu": "64", "memory": "263856484Ki", "pods": "110"},
                       "allocatable": {"cpu": "62", "memory": "245865316Ki", "pods": "110"},
                       "nodeInfo": {"operatingSystem": "linux", "architecture": "amd64", "kubeletVersion": "v1.37.0"},
                       "images": [{"names": [f"registry.example.com/app-{k}:1.{k}"], "sizeBytes": 123456789}
                                  for k in range(10)]}}


def pod(i: int, pods_per_node: int) -> dict:
    deployment = i // 100
    guaranteed = deployment % 2 == 0
    resources = {"requests": {"cpu": "1", "memory": "1Gi"}, "limits": {"cpu": "1", "memory": "1Gi"}}
    spec = {"nodeName": f"pool-{i // pods_per_node:04d}", "nodeSelector": {"node.example.com/pool": "numa"},
            "tolerations": [{"key": "node.example.com/pool", "operator": "Equal", "value": "numa", "effect": "NoSchedule"}],
            "containers": [{"name": "app", "image": f"registry.example.com/app-{deployment % 10}:1.{deployment % 10}",
                            "env": [{"name": f"VAR_{k}", "value": "x" * 40} for k in range(8)],
                            "ports": [{"containerPort": 8080, "protocol": "TCP"}],
                            "readinessProbe": {"httpGet": {"path": "/ready", "port": 8080}, "periodSeconds": 5},
                            "volumeMounts": [{"name": "kube-api-access", "mountPath": "/var/run/secrets/kubernetes.io/serviceaccount"}],
                            **({} if guaranteed else {"resources": {"requests": {"cpu": "250m", "memory": "256Mi"}}})}],
            "volumes": [{"name": "kube-api-access", "projected": {"sources": [{"serviceAccountToken": {"path": "token"}}]}}]}
    if guaranteed:
        spec["resources"] = resources
    name = f"app-{deployment:03d}-5c9d7f6b8-{i:06d}"
    return {"metadata": {"name": name, "namespace": f"team-{deployment % 20:02d}", "uid": f"10000000-0000-4000-8000-{i:012d}",
                         "creationTimestamp": "2026-12-01T10:00:00Z",
                         "labels": {"app": f"app-{deployment:03d}", "pod-template-hash": "5c9d7f6b8"},
                         "annotations": {"kubectl.kubernetes.io/last-applied-configuration": "{" + "x" * 600 + "}"},
                         "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "controller": True,
                                              "name": f"app-{deployment:03d}-5c9d7f6b8", "uid": f"20000000-0000-4000-8000-{deployment:012d}"}],
                         "managedFields": [{"manager": "kube-controller-manager", "operation": "Update", "fieldsType": "FieldsV1",
                                            "fieldsV1": {"f:metadata": {"f:labels": {"f:app": {}}}, "f:spec": {"f:containers": {}}}}]},
            "spec": spec,
            "status": {"phase": "Running", "qosClass": "Guaranteed" if guaranteed else "Burstable",
                       "conditions": [{"type": t, "status": "True", "lastTransitionTime": "2026-12-01T10:00:05Z"}
                                      for t in ("Initialized", "Ready", "ContainersReady", "PodScheduled")],
                       "containerStatuses": [{"name": "app", "ready": True, "restartCount": 0, "image": "x", "imageID": "y",
                                              "containerID": "containerd://" + "a" * 64,
                                              "state": {"running": {"startedAt": "2026-12-01T10:00:04Z"}}}]}}


def nrt(i: int) -> dict:
    zone = lambda n: {"name": f"node-{n}", "type": "Node",
                      "costs": [{"name": "node-0", "value": 10 if n == 0 else 21}, {"name": "node-1", "value": 21 if n == 0 else 10}],
                      "resources": [{"name": "cpu", "capacity": "32", "allocatable": "32", "available": "32"},
                                    {"name": "memory", "capacity": "131928242Ki", "allocatable": "131928242Ki", "available": "131928242Ki"}]}
    return {"apiVersion": "topology.node.k8s.io/v1alpha2", "kind": "NodeResourceTopology",
            "metadata": {"name": f"pool-{i:04d}"}, "topologyPolicies": ["SingleNUMANodePodLevel"], "zones": [zone(0), zone(1)]}


def scenario(nodes: int, pods: int):
    from recorded_apiserver import Scenario
    per_node = max(1, -(-pods // nodes))
    return Scenario(nodes=Generated(nodes, node), pods=Generated(pods, lambda i: pod(i, per_node)),
                    configz=lambda name: KC, nrts=[nrt(i) for i in range(nodes)])


def serve(folder: str, nodes: int, pods: int) -> None:
    from recorded_apiserver import serve_forever
    serve_forever(lambda: scenario(nodes, pods), Path(folder), Path(folder) / "ready.json")


CHILD_AUDIT = """
import json, resource, sys, time
from numaguard.lint.cluster.api import connect
from numaguard.lint.cluster.audit import audit
from numaguard.lint.report.json import render
started = time.perf_counter()
cluster = connect(sys.argv[1])
result, snap, timing = audit(cluster, node_selector="node.example.com/pool=numa")
report = render(result)
wall = time.perf_counter() - started
print(json.dumps({"wall": wall, "read": timing.read_seconds, "waiting": timing.waiting_seconds,
                  "requests": timing.requests, "judge": timing.judge_seconds, "nodes": len(snap.nodes),
                  "pods": len(snap.pods), "findings": len(result.findings), "report_bytes": len(report),
                  "objects": result.summary.objects,
                  "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
"""

CHILD_RAW = """
import json, resource, sys, time, ssl, urllib3
url, ca = sys.argv[1], sys.argv[2]
http = urllib3.PoolManager(ca_certs=ca, cert_reqs="CERT_REQUIRED")
headers = {"Authorization": "Bearer audit-token", "Accept": "application/json"}
started = time.perf_counter()
count = 0
for path in ("/api/v1/nodes", "/api/v1/pods"):
    token = None
    while True:
        q = f"?limit=500" + (f"&continue={token}" if token else "")
        page = json.loads(http.request("GET", url + path + q, headers=headers).data)
        count += len(page["items"])
        token = page["metadata"].get("continue")
        if not token:
            break
print(json.dumps({"wall": time.perf_counter() - started, "items": count,
                  "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
"""

CHILD_IDLE = """
import json, resource
import numaguard.lint.cluster.audit, numaguard.lint.engine, kubernetes.client
print(json.dumps({"peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
"""


def child(code: str, *args: str) -> dict:
    run = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, timeout=3600)
    if run.returncode:
        raise SystemExit(run.stderr[-3000:])
    return json.loads(run.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--nodes", type=int, default=1000)
    parser.add_argument("--pods", type=int, default=50000)
    args = parser.parse_args()
    folder = tempfile.mkdtemp(prefix="bench-audit-")
    server = subprocess.Popen([sys.executable, __file__, "--serve", folder, str(args.nodes), str(args.pods)])
    try:
        ready = Path(folder) / "ready.json"
        for _ in range(600):
            if ready.exists() and ready.read_text():
                break
            time.sleep(0.1)
        info = json.loads(ready.read_text())
        from recorded_apiserver import write_kubeconfig
        kc = write_kubeconfig(Path(folder) / "kubeconfig", info["url"], Path(info["ca"]), "audit-token")
        idle = child(CHILD_IDLE)
        raw = child(CHILD_RAW, info["url"], info["ca"])
        result = child(CHILD_AUDIT, str(kc))
    finally:
        server.terminate()
        server.wait(timeout=30)
    print(f"pool: {result['nodes']} nodes, {result['pods']} pods; {result['requests']} requests; "
          f"{result['objects']} objects linted, {result['findings']} findings, JSON report {result['report_bytes'] / 1e6:.1f} MB")
    print(f"audit wall time            {result['wall']:.1f} s")
    print(f"  reading (wall)           {result['read']:.1f} s  ({result['read'] / result['wall']:.0%})")
    print(f"    waiting on the server  {result['waiting']:.1f} s summed over requests and threads")
    print(f"  judging (lint+occupancy) {result['judge']:.1f} s  ({result['judge'] / result['wall']:.0%})")
    print(f"  baseline: the same lists read with urllib3 + json.loads alone: {raw['wall']:.1f} s "
          f"({raw['items']} items); audit reading / baseline = {result['read'] / raw['wall']:.2f}x")
    print(f"peak RSS                   {result['peak_rss_mb']:.0f} MB (baseline: numaguard + kubernetes "
          f"imported, nothing read: {idle['peak_rss_mb']:.0f} MB; raw lists read and dropped: {raw['peak_rss_mb']:.0f} MB)")


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--serve":
        serve(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]))
    else:
        main()
