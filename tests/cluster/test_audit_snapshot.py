"""`numaguard audit --snapshot FILE` against the recorded API server (real HTTPS), and
`numaguard plan --from-audit FILE` starting from it: today's pods replayed on their nodes."""
from __future__ import annotations

import json

from conftest import run_cli
from pool_fixture import apiserver, healthy_apiserver  # noqa: F401  (fixtures)

CONFIG = """apiVersion: numaguard.io/v1alpha1
kind: Config
pool:
  nodeLabels: {node.example.com/pool: numa}
  taint: {key: node.example.com/pool, value: numa, effect: NoSchedule}
"""

PRICER = """apiVersion: apps/v1
kind: Deployment
metadata: {name: pricer, namespace: trading}
spec:
  replicas: 2
  template:
    metadata: {labels: {app: pricer}}
    spec:
      nodeSelector: {node.example.com/pool: numa}
      tolerations: [{key: node.example.com/pool, operator: Exists, effect: NoSchedule}]
      containers:
      - name: pricer
        image: registry.example.com/pricer:2
        resources:
          requests: {cpu: "20", memory: 16Gi}
          limits: {cpu: "20", memory: 16Gi}
"""


def audit_snapshot(server, *args):
    (server.folder / ".numaguard.yaml").write_text(CONFIG)
    return run_cli("audit", "--kubeconfig", str(server.kubeconfig("audit-token")), "--snapshot", "snap.json",
                   "--format", "json", "--output", "audit.json", *args, cwd=server.folder)


def test_the_snapshot_holds_the_pool_as_read(healthy_apiserver):
    run = audit_snapshot(healthy_apiserver)
    assert run.returncode == 1, run.stderr                 # findings; every node read
    snap = json.loads((healthy_apiserver.folder / "snap.json").read_text())
    assert (snap["apiVersion"], snap["kind"], snap["version"], snap["incomplete"]) == (
        "numaguard.io/v1alpha1", "PoolSnapshot", 1, [])
    assert [n["node"]["metadata"]["name"] for n in snap["nodes"]] == ["numa-node-1", "numa-node-2", "numa-node-3"]
    assert [n["kubeletConfig"]["kind"] for n in snap["nodes"]] == ["KubeletConfiguration"] * 3
    assert [n["nodeResourceTopology"] is not None for n in snap["nodes"]] == [True, False, False]
    assert "managedFields" not in json.dumps(snap)               # trimmed as the audit keeps objects
    assert sorted(p["metadata"]["name"] for p in snap["pods"]) == [
        "analytics-6d5f8b7c9d-b7n4m", "analytics-6d5f8b7c9d-x2x7q", "node-exporter-8h2kd",
        "order-matcher-5c9d7f6b8-h4k2p", "order-matcher-5c9d7f6b8-q8w3z", "risk-engine-0", "web-7b9c6d5f4-zz9xq"]


def test_an_incomplete_audit_says_so_in_the_snapshot_and_the_plan(apiserver):
    run = audit_snapshot(apiserver)
    assert run.returncode == 3
    snap = json.loads((apiserver.folder / "snap.json").read_text())
    assert snap["incomplete"] == ["the kubelet configuration of 1 node (numa-node-3)"]
    (apiserver.folder / "pricer.yaml").write_text(PRICER)
    plan = run_cli("plan", "--from-audit", "snap.json", "pricer.yaml", cwd=apiserver.folder)
    assert "  INCOMPLETE snapshot: not read: the kubelet configuration of 1 node (numa-node-3)" in plan.stdout.splitlines()
    assert plan.stdout.splitlines()[-1].endswith("(INCOMPLETE input: see above)")
    report = json.loads(run_cli("plan", "--from-audit", "snap.json", "--format", "json", "pricer.yaml",
                                cwd=apiserver.folder).stdout)
    assert report["input"]["snapshot"]["incomplete"] == snap["incomplete"] and not report["summary"]["complete"]


def test_a_plan_starts_from_todays_pods(healthy_apiserver):
    assert audit_snapshot(healthy_apiserver).returncode == 1
    (healthy_apiserver.folder / "pricer.yaml").write_text(PRICER)
    run = run_cli("plan", "--from-audit", "snap.json", "--format", "json", "pricer.yaml", cwd=healthy_apiserver.folder)
    report = json.loads(run.stdout)
    assert report["input"]["snapshot"]["nodes"] == 3 and report["input"]["snapshot"]["pods"] == 4
    entry = report["schedulers"][0]
    nodes = {n["name"]: n for n in entry["nodes"]}
    # the running pods first, oldest first, as the node's kubelet admitted them
    assert [p["pod"] for p in nodes["numa-node-1"]["pods"]][:3] == [
        "monitoring/node-exporter-8h2kd", "trading/order-matcher-5c9d7f6b8-h4k2p", "trading/order-matcher-5c9d7f6b8-q8w3z"]
    assert nodes["numa-node-1"]["pods"][1]["workload"] == "ReplicaSet trading/order-matcher-5c9d7f6b8"
    placed = [p["node"] for p in entry["workloads"][0]["pods"]]
    assert len(placed) == 2 and all(placed)
    # --pool NAME=N adds N nodes like the live pool's first to it
    more = json.loads(run_cli("plan", "--from-audit", "snap.json", "--pool", "default=2", "--format", "json",
                              "pricer.yaml", cwd=healthy_apiserver.folder).stdout)
    names = [n["name"] for n in more["schedulers"][0]["nodes"]]
    assert names == ["default-new-1", "default-new-2", "numa-node-1", "numa-node-2", "numa-node-3"]
    assert more["schedulers"][0]["nodes"][0]["notes"] == ["a copy of numa-node-1 (added by the plan)"]


def test_an_unwritable_snapshot_is_one_line(healthy_apiserver):
    run = audit_snapshot(healthy_apiserver, "--snapshot", "no/such/dir/snap.json")
    assert run.returncode == 2
    assert run.stderr.splitlines()[-1] == ("Error: --snapshot no/such/dir/snap.json: cannot write: No such file "
                                           "or directory")


def test_snapshot_nodes_are_in_name_order_whatever_order_they_were_read_in():
    from numaguard.lint.cluster.snapshot import Collector
    collect = Collector(nodes=[{"metadata": {"name": n}} for n in ("b", "c", "a")],
                        configs={"a": {"kind": "KubeletConfiguration"}})
    document = collect.document("2026-12-01T00:00:00Z")
    assert [e["node"]["metadata"]["name"] for e in document["nodes"]] == ["a", "b", "c"]
    assert [e["kubeletConfig"] for e in document["nodes"]] == [{"kind": "KubeletConfiguration"}, None, None]
