"""`numaguard plan` on the command line: the real console script, its reports and exit codes,
bad input as one line (exit 2), and sweeps that give the same answers from several processes."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import run_cli

CONFIG = """apiVersion: numaguard.io/v1alpha1
kind: Config
pools:
  - name: numa
    nodeLabels: {node.example.com/pool: numa}
    taint: {key: node.example.com/pool, value: numa, effect: NoSchedule}
    node: builtin:dual-socket-ht
    count: 4
"""

TEMPLATE = """apiVersion: apps/v1
kind: {kind}
metadata: {{name: {name}, namespace: shop}}
spec:
  replicas: {replicas}
  selector: {{matchLabels: {{app: {name}}}}}
  template:
    metadata: {{labels: {{app: {name}}}}}
    spec:
      nodeSelector: {{node.example.com/pool: numa}}
      tolerations: [{{key: node.example.com/pool, operator: Equal, value: numa, effect: NoSchedule}}]
      containers:
      - name: {name}
        image: registry.example.com/{name}:1.0
        resources:
          requests: {{cpu: "{cpu}", memory: {memory}}}
          limits: {{cpu: "{cpu}", memory: {memory}}}
"""


def workload(name: str, replicas: int, cpu: str, memory: str = "8Gi", kind: str = "Deployment") -> str:
    return TEMPLATE.format(name=name, replicas=replicas, cpu=cpu, memory=memory, kind=kind)


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    (tmp_path / ".numaguard.yaml").write_text(CONFIG)
    (tmp_path / "runaway.yaml").write_text(workload("cache", 4, "12") + "---\n"
                                           + workload("db", 8, "22", "16Gi", kind="ReplicaSet"))
    (tmp_path / "small.yaml").write_text(workload("web", 6, "4", "2Gi"))
    return tmp_path


def plan(folder: Path, *args: str):
    return run_cli("plan", *args, cwd=folder)


def test_the_runaway_side_by_side_as_json(folder):
    run = plan(folder, "--scheduler", "both", "--format", "json", "runaway.yaml")
    assert run.returncode == 1, run.stderr
    report = json.loads(run.stdout)
    assert (report["version"], report["kind"], report["seed"]) == (1, "PlanReport", 0)
    default, aware = report["schedulers"]
    assert default["summary"] == {"replicas": 12, "placed": 8, "placedAfterRejections": 0, "rejections": 36,
                                  "unschedulable": 0, "stuck": 4, "gaveUp": 0, "clean": False}
    assert aware["summary"] == {"replicas": 12, "placed": 8, "placedAfterRejections": 0, "rejections": 0,
                                "unschedulable": 4, "stuck": 0, "gaveUp": 0, "clean": False}
    db = default["workloads"][1]
    assert (db["name"], db["countFrom"], db["where"]) == ("ReplicaSet shop/db", "spec.replicas 8", "runaway.yaml:19")
    assert [p["status"] for p in db["pods"]] == ["placed"] * 4 + ["stuck"] * 4
    (numa,) = default["pools"]
    assert (numa["nodes"], numa["nodesUsed"], numa["free"]["cpus"]) == (4, 4, 112)
    assert numa["stranded"]["cpus"] == 40 and numa["stranded"]["cpuShare"] == 0.3571
    assert report["summary"] == {"clean": False, "exitCode": 1, "complete": True}
    assert report["input"]["pools"] == [{"name": "numa", "nodes": 4, "node": "builtin:dual-socket-ht", "added": False}]


def test_the_runaway_as_text(folder):
    run = plan(folder, "--scheduler", "both", "runaway.yaml")
    assert run.returncode == 1
    lines = run.stdout.splitlines()
    assert lines[0] == "numaguard plan: seed 0, 2 workload(s); pools: numa 4 node(s)"
    assert "  ReplicaSet shop/db         8 replica(s) (spec.replicas 8): 4 placed, 36 kubelet rejection(s), 4 stuck" \
        in lines
    assert "    shop/db-4: unschedulable (Pending); 0/4 nodes are available: 4 cannot align pod." in lines
    assert "  kubelet rejections                    36               0" in lines
    assert lines[-1] == "result: not every replica lands cleanly under default, topology-aware"


def test_a_clean_plan_exits_0(folder):
    run = plan(folder, "small.yaml")
    assert run.returncode == 0, run.stdout + run.stderr
    assert run.stdout.splitlines()[-1] == "result: every replica lands without a kubelet rejection"


def test_pool_counts_scale_and_max_attempts(folder):
    run = plan(folder, "--pool", "numa=6", "--format", "json", "runaway.yaml")
    assert run.returncode == 0 and json.loads(run.stdout)["schedulers"][0]["pools"][0]["nodes"] == 6
    run = plan(folder, "--pool", "6", "--scale", "db=2", "--scale", "Deployment/cache=1", "--format", "json",
               "runaway.yaml")
    counts = [(w["name"], w["replicas"], w["countFrom"]) for w in json.loads(run.stdout)["schedulers"][0]["workloads"]]
    assert counts == [("Deployment shop/cache", 1, "--scale 1"), ("ReplicaSet shop/db", 2, "--scale 2")]
    run = plan(folder, "--max-attempts", "1", "--format", "json", "runaway.yaml")
    assert json.loads(run.stdout)["schedulers"][0]["summary"]["gaveUp"] == 4


def test_sweeps_from_several_processes_give_the_same_report(folder):
    args = ("--nodes-needed", "--drain", "2", "--drain-random", "--seed", "3", "--format", "json", "runaway.yaml")
    one = plan(folder, *args)
    three = plan(folder, "--jobs", "3", *args)
    assert one.returncode == three.returncode == 1
    assert json.loads(one.stdout) == json.loads(three.stdout)
    entry = json.loads(one.stdout)["schedulers"][0]
    assert [(s["pool"], s["needed"], s["lowerBound"]) for s in entry["nodesNeeded"]] == [("numa", 6, 4)]
    assert [d["order"] for d in entry["drain"]] == ["worst", "random"]


def test_surge(folder):
    run = plan(folder, "--surge", "web", "--format", "json", "small.yaml")
    assert run.returncode == 0
    (rolled,) = json.loads(run.stdout)["schedulers"][0]["surge"]
    assert (rolled["workload"], rolled["maxSurge"], rolled["maxUnavailable"], rolled["complete"]) == (
        "Deployment shop/web", 2, 1, True)


@pytest.mark.parametrize("args, line", [
    (("--surge", "nothing", "small.yaml"), "--surge nothing: no workload of that name"),
    (("--scale", "ghost=3", "small.yaml"), "--scale ghost=3: no workload named ghost in the files"),
    (("--scale", "web", "small.yaml"), "--scale web: expected NAME=N (a name and a whole number)"),
    (("--pool", "gpu=2", "small.yaml"), "--pool gpu=2: the config declares no pool gpu (it declares numa)"),
    (("--from-audit", "missing.json", "small.yaml"), "--from-audit missing.json: cannot read: No such file or directory"),
    (("nothing.yaml",), "nothing.yaml: no such file or directory"),
])
def test_bad_flags_are_one_line(folder, args, line):
    run = plan(folder, *args)
    assert (run.returncode, run.stdout, run.stderr) == (2, "", f"Error: {line}\n")


def test_a_workload_with_no_pool_is_one_line(folder):
    (folder / "lost.yaml").write_text(workload("lost", 1, "2").replace("pool: numa}", "pool: gpu}", 1))
    run = plan(folder, "lost.yaml")
    assert run.returncode == 2 and run.stdout == ""
    assert run.stderr == ("Error: Deployment shop/lost (lost.yaml:1): no pool to land on: its nodeSelector "
                          "node.example.com/pool=gpu; tolerations node.example.com/pool match no node of numa (4 nodes)\n")


def test_a_pool_without_a_node_description_is_one_line(folder):
    (folder / ".numaguard.yaml").write_text(CONFIG.replace("    node: builtin:dual-socket-ht\n", ""))
    run = plan(folder, "small.yaml")
    assert (run.returncode, run.stderr) == (
        2, "Error: pool numa has no node description: give it node: in the config (or a top-level node:, or --node "
           "FILE)\n")


def test_a_bad_count_is_the_config_error_with_its_key(folder):
    (folder / ".numaguard.yaml").write_text(CONFIG.replace("count: 4", "count: many"))
    run = plan(folder, "small.yaml")
    assert run.returncode == 2
    assert run.stderr.endswith('pools.0.count: "many" is not a node count (0 to 999999): how many nodes '
                               '`numaguard plan` gives the pool\n')


@pytest.mark.parametrize("content, line", [
    ('{"kind": "PoolSnapshot", "version": 2, "nodes": [], "pods": []}',
     "old.json: a pool snapshot of version 2; this numaguard reads version 1: take it again with this "
     "numaguard's audit --snapshot"),
    ('{"kind": "Pod"}', "old.json: not a numaguard pool snapshot (kind PoolSnapshot, written by numaguard audit "
                        "--snapshot)"),
    ("{broken", "old.json: not a numaguard pool snapshot: not valid JSON (line 1, column 2: Expecting property "
                "name enclosed in double quotes)"),
    ('{"kind": "PoolSnapshot", "version": 1, "nodes": [{"node": {}}], "pods": []}',
     "old.json: nodes[0]: not a node entry ({node: a Node with a name, kubeletConfig, nodeResourceTopology})"),
])
def test_a_snapshot_numaguard_cannot_read_is_one_line(folder, content, line):
    (folder / "old.json").write_text(content)
    run = plan(folder, "--from-audit", "old.json", "small.yaml")
    assert (run.returncode, run.stdout, run.stderr) == (2, "", f"Error: {line}\n")


def test_a_broken_file_is_reported_and_the_rest_still_played(folder):
    (folder / "broken.yaml").write_text("kind: Deployment\nmetadata: {name: [\n")
    run = plan(folder, "--format", "json", "small.yaml", "broken.yaml")
    assert run.returncode == 0
    assert run.stderr.startswith("numaguard: skipped broken.yaml:")
    report = json.loads(run.stdout)
    assert report["input"]["complete"] is False and report["summary"]["complete"] is False
    assert report["input"]["problems"][0].startswith("skipped broken.yaml:")
    text = plan(folder, "small.yaml", "broken.yaml").stdout
    assert text.splitlines()[-1].endswith("(INCOMPLETE input: see above)")


def test_no_pool_at_all(tmp_path):
    (tmp_path / "w.yaml").write_text(workload("web", 1, "2"))
    run = run_cli("plan", "w.yaml", cwd=tmp_path)
    assert (run.returncode, run.stderr) == (2, "Error: no pool to plan: declare pools with node: and count: in "
                                               "the config, or give --node FILE and --pool N, or --from-audit "
                                               "SNAPSHOT\n")
    plain = workload("web", 2, "2").replace("      nodeSelector: {node.example.com/pool: numa}\n", "")
    (tmp_path / "w.yaml").write_text(plain)
    run = run_cli("plan", "--node", "builtin:single-socket", "--pool", "2", "--format", "json", "w.yaml", cwd=tmp_path)
    assert run.returncode == 0, run.stderr
    assert json.loads(run.stdout)["schedulers"][0]["pools"][0]["name"] == "default"


def test_nodes_needed_on_a_live_pool_counts_the_nodes_added():
    from conftest import FIXTURES
    run = run_cli("plan", "--from-audit", "pool-snapshot.json", "--nodes-needed", "--format", "json", "pricer.yaml",
                  cwd=FIXTURES / "plan")
    assert run.returncode == 1                     # as it is, the pricer is stuck on node-a
    (found,) = json.loads(run.stdout)["schedulers"][0]["nodesNeeded"]
    assert found == {"pool": "numa", "needed": 3, "added": 1, "lowerBound": 2,
                     "plays": [{"nodes": 2, "clean": False}, {"nodes": 3, "clean": True}], "reason": None}
