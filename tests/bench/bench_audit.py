"""Benchmark `numaguard audit` on a synthetic pool: 1,000 nodes, 50,000 pods.

    python tests/bench/bench_audit.py [--nodes 1000] [--pods 50000] [--rounds 2]

The recorded API server (tests/cluster/recorded_apiserver.py) runs in its own process and
generates the lists page by page (pods shaped like real ones: managedFields, env, volumes,
probes, ~3 KB of JSON each; 100 replicas per ReplicaSet), every node with a
NodeResourceTopology (2 NUMA nodes x 32 CPUs) and a static kubelet configuration behind the
node proxy. The audit runs in a child process (the real client path: kubeconfig, TLS, token).

Baseline, measured in the same run, alternating with the audit: the same requests in the same
order and concurrency (nodes; the configz of every node, 16 at a time, in the background; the
NodeResourceTopologies; the pods), read with urllib3 + json.loads alone and thrown away. The goal
is an audit at most 1.2x that raw read, and a peak RSS of at most 300 MB. The machine's load
average is printed with the figures: on a shared machine the ratio moves with it.
"""
from __future__ import annotations

import argparse
import json
import os
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


def pod(i: int, pods_per_node: int, nodes: int = 0) -> dict:
    """Pod i; its node: the i-th block of `pods_per_node` pods (the replicas of a ReplicaSet land
    side by side, so nodes run alike), or with `nodes` spread over all of them (every node runs
    its own mix of ReplicaSets, in its own order)."""
    deployment = i // 100
    guaranteed = deployment % 2 == 0
    resources = {"requests": {"cpu": "1", "memory": "1Gi"}, "limits": {"cpu": "1", "memory": "1Gi"}}
    at = (i * 2654435761 % 2**32) % nodes if nodes else i // pods_per_node     # Knuth's multiplicative hash
    spec = {"nodeName": f"pool-{at:04d}", "nodeSelector": {"node.example.com/pool": "numa"},
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


def scenario(nodes: int, pods: int, mixed: bool = False):
    from recorded_apiserver import Scenario
    per_node = max(1, -(-pods // nodes))
    return Scenario(nodes=Generated(nodes, node), pods=Generated(pods, lambda i: pod(i, per_node, nodes if mixed else 0)),
                    configz=lambda name: KC, nrts=[nrt(i) for i in range(nodes)])


def serve(folder: str, nodes: int, pods: int, mixed: bool) -> None:
    from recorded_apiserver import serve_forever
    serve_forever(lambda: scenario(nodes, pods, mixed), Path(folder), Path(folder) / "ready.json")


CHILD_AUDIT = """
import json, resource, sys, time
from numaguard.lint.cluster.api import connect
from numaguard.lint.cluster.audit import audit
from numaguard.lint.report.json import render
started = time.perf_counter()
cluster = connect(sys.argv[1])
result, report, timing = audit(cluster, node_selector="node.example.com/pool=numa")
audited = time.perf_counter() - started
text = render(result)
print(json.dumps({"wall": audited, "render": time.perf_counter() - started - audited,
                  "waiting": timing.waiting_seconds, "requests": timing.requests, "judge": timing.judge_seconds,
                  "nodes": report.nodes, "pods": report.pods, "templates": report.templates,
                  "configs": report.configs, "unread": [piece.what for piece in report.unread], "findings": len(result.findings),
                  "report_bytes": len(text), "objects": result.summary.objects,
                  "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
"""

# The same requests as the audit, in the same order and concurrency, with urllib3 and
# json.loads alone, everything thrown away: the nodes list; then the configz of every node, 16
# at a time, in the background; the NodeResourceTopology list; the pods list.
CHILD_RAW = """
import json, resource, sys, time, urllib3
from concurrent.futures import ThreadPoolExecutor
url, ca = sys.argv[1], sys.argv[2]
http = urllib3.PoolManager(ca_certs=ca, cert_reqs="CERT_REQUIRED", maxsize=32)
headers = {"Authorization": "Bearer audit-token", "Accept": "application/json"}

def get(path):
    return json.loads(http.request("GET", url + path, headers=headers).data)

def pages(path, query=""):
    token, names = None, []
    while True:
        page = get(path + "?limit=500" + query + (f"&continue={token}" if token else ""))
        names.extend(item["metadata"]["name"] for item in page["items"])
        token = page["metadata"].get("continue")
        if not token:
            return names

started = time.perf_counter()
nodes = pages("/api/v1/nodes", "&labelSelector=node.example.com%2Fpool%3Dnuma")
with ThreadPoolExecutor(16) as pool:
    configz = [pool.submit(get, f"/api/v1/nodes/{name}/proxy/configz") for name in nodes]
    nrts = pages("/apis/topology.node.k8s.io/v1alpha2/noderesourcetopologies")
    pods = pages("/api/v1/pods")
    read = sum(1 for f in configz if "kubeletconfig" in f.result())
print(json.dumps({"wall": time.perf_counter() - started, "nodes": len(nodes), "pods": len(pods),
                  "configz": read, "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
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
    parser.add_argument("--rounds", type=int, default=2, help="raw read and audit, alternately, this many times")
    parser.add_argument("--mixed", action="store_true",
                        help="spread each ReplicaSet over all nodes: every node runs its own mix, so none "
                             "is simulated once for several")
    args = parser.parse_args()
    folder = tempfile.mkdtemp(prefix="bench-audit-")
    server = subprocess.Popen([sys.executable, __file__, "--serve", folder, str(args.nodes), str(args.pods),
                               "mixed" if args.mixed else "blocks"])
    load_before = os.getloadavg()
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
        raws, audits = [], []
        for _ in range(args.rounds):
            raws.append(child(CHILD_RAW, info["url"], info["ca"]))
            audits.append(child(CHILD_AUDIT, str(kc)))
    finally:
        server.terminate()
        server.wait(timeout=30)
    load_after = os.getloadavg()
    result, raw = min(audits, key=lambda r: r["wall"]), min(raws, key=lambda r: r["wall"])
    print(f"pool: {result['nodes']} nodes, {result['pods']} pods ({result['templates']} distinct pod templates), "
          f"{result['configs']} kubelet configurations; {result['requests']} requests; {result['objects']} objects "
          f"judged, {result['findings']} findings, JSON report {result['report_bytes'] / 1e6:.1f} MB"
          + (f"; NOT READ: {result['unread']}" if result["unread"] else ""))
    print("round            raw read    audit    audit / raw")
    for i, (r, a) in enumerate(zip(raws, audits), 1):
        print(f"  {i}              {r['wall']:7.1f} s {a['wall']:7.1f} s    {a['wall'] / r['wall']:.2f}x")
    ratios = sorted(a["wall"] / r["wall"] for r, a in zip(raws, audits))
    median = ratios[len(ratios) // 2] if len(ratios) % 2 else sum(ratios[len(ratios) // 2 - 1:][:2]) / 2
    print(f"best of each     {raw['wall']:7.1f} s {result['wall']:7.1f} s    {result['wall'] / raw['wall']:.2f}x  "
          f"(median of the rounds' ratios {median:.2f}x; goal: at most 1.2x)")
    print(f"  the audit's own work (judging pods while reading, the configurations, the occupancy): "
          f"{result['judge']:.1f} s; waiting on the server {result['waiting']:.1f} s summed over requests and "
          f"threads; JSON report rendered in {result['render']:.1f} s more")
    print(f"peak RSS         {result['peak_rss_mb']:.0f} MB (goal: at most 300 MB; numaguard + kubernetes imported, "
          f"nothing read: {idle['peak_rss_mb']:.0f} MB; raw read: {raw['peak_rss_mb']:.0f} MB)")
    print(f"load average     {load_before[0]:.1f} before, {load_after[0]:.1f} after ({os.cpu_count()} CPUs)")


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--serve":
        serve(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), sys.argv[5] == "mixed")
    else:
        main()
