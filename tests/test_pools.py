"""Declared pools (issue 13 §2) through `numaguard lint`: which kubelet configurations, nodes and
pods belong to which pool, NG401/NG404 within a pool only, NUMA fit on the pool's own node
description, `--pool NAME=DIR`, platform objects assigned by their node selectors, and the
same output with `--jobs 2`."""
from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest
import yaml

from numaguard.lint.cli.lint_files import LintSettings, lint_paths
from numaguard.lint.config import config_from_dict, load_config_file
from numaguard.lint.engine import Selection, lint_documents, rule_context
from numaguard.lint.load.documents import load_text
from numaguard.lint.numa.node import load_node_file
from numaguard.lint.rules.pods import pod_placement, targeted_pools
from numaguard.lint.objects import classify

from conftest import FIXTURES, run_cli

NODES = FIXTURES / "pools"

# A whole configuration of each pool, valid for its machines (tests/fixtures/pools/*-node.yaml).
CPU_KUBELET = """\
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
featureGates: {PodLevelResourceManagers: true}
cpuManagerPolicy: static
memoryManagerPolicy: Static
topologyManagerPolicy: single-numa-node
topologyManagerScope: pod
reservedSystemCPUs: "0"
kubeReserved: {memory: 512Mi}
systemReserved: {memory: 512Mi}
evictionHard: {memory.available: 100Mi}
reservedMemory:
  - numaNode: 0
    limits: {memory: 1124Mi}
"""
GPU_KUBELET = CPU_KUBELET.replace('reservedSystemCPUs: "0"', 'reservedSystemCPUs: "0,8"\n'
                                  'cpuManagerPolicyOptions: {full-pcpus-only: "true"}')

TWO_POOLS = f"""\
pools:
  - name: cpu
    nodeLabels: {{node.example.com/pool: cpu}}
    taint: {{key: node.example.com/pool, value: cpu, effect: NoSchedule}}
    kubeletConfigs: ["cpu/**"]
    node: {NODES / "cpu-node.yaml"}
  - name: gpu
    nodeLabels: {{node.example.com/pool: gpu}}
    taint: {{key: node.example.com/pool, value: gpu, effect: NoSchedule}}
    kubeletConfigs: ["gpu/**"]
    node: {NODES / "gpu-node.yaml"}
"""


def pod(name: str, pool: str | None, cpu: str, memory: str, labels: dict | None = None) -> str:
    """A Guaranteed pod with pod-level resources that targets `pool` (nodeSelector and toleration)."""
    spec = {"resources": {"requests": {"cpu": cpu, "memory": memory}, "limits": {"cpu": cpu, "memory": memory}},
            "containers": [{"name": "app", "image": "registry.example.com/app:1"}]}
    if pool:
        spec["nodeSelector"] = {"node.example.com/pool": pool, **(labels or {})}
        spec["tolerations"] = [{"key": "node.example.com/pool", "operator": "Equal", "value": pool,
                                "effect": "NoSchedule"}]
    return yaml.safe_dump({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name}, "spec": spec},
                          sort_keys=False)


def write_tree(root: Path, config: str | None = TWO_POOLS, files: dict[str, str] | None = None) -> Path:
    files = files or {"cpu/node-a.yaml": CPU_KUBELET, "cpu/node-b.yaml": CPU_KUBELET,
                      "gpu/node-a.yaml": GPU_KUBELET, "gpu/node-b.yaml": GPU_KUBELET}
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    if config is not None:
        (root / ".numaguard.yaml").write_text(config)
    return root


def lint_json(root: Path, *args: str, paths: tuple[str, ...] = (".",)) -> tuple[int, dict]:
    proc = run_cli("lint", "--format", "json", *args, *paths, cwd=root)
    assert proc.returncode in (0, 1), proc.stderr
    return proc.returncode, json.loads(proc.stdout)


def rows(report: dict, *rules: str) -> list[tuple]:
    return [(f["file"], f["rule"], f["severity"], f["line"], f["path"]) for f in report["findings"]
            if not rules or f["rule"] in rules]


# --------------------------------------------------------------------------- kubelet configurations

def test_two_pools_of_two_valid_configurations_each_give_no_ng401(tmp_path):
    # Before pools were declared, these four files were one pool: 10 NG401 errors.
    code, report = lint_json(write_tree(tmp_path))
    assert (code, rows(report)) == (0, [])
    assert report["summary"]["objects"] == 4


def test_one_odd_configuration_within_a_pool_is_one_ng401_naming_the_files(tmp_path):
    odd = GPU_KUBELET.replace("topologyManagerPolicy: single-numa-node", "topologyManagerPolicy: restricted")
    root = write_tree(tmp_path, files={"cpu/node-a.yaml": CPU_KUBELET, "cpu/node-b.yaml": CPU_KUBELET,
                                       "gpu/node-a.yaml": GPU_KUBELET, "gpu/node-b.yaml": GPU_KUBELET,
                                       "gpu/node-c.yaml": odd})
    code, report = lint_json(root)
    assert code == 1
    assert rows(report, "NG401") == [("./gpu/node-c.yaml", "NG401", "error", 6, "topologyManagerPolicy")]
    assert rows(report, "NG401", "NG206") == [("./gpu/node-c.yaml", "NG206", "info", 6, "topologyManagerPolicy"),
                                             ("./gpu/node-c.yaml", "NG401", "error", 6, "topologyManagerPolicy")]
    assert report["findings"][1]["message"] == (
        "topologyManagerPolicy is restricted here but single-numa-node in 2 of 3 configurations of "
        "pool gpu (./gpu/node-a.yaml, ./gpu/node-b.yaml)")


def test_without_a_declaration_there_is_no_ng401_or_ng404(tmp_path):
    node = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "big", "labels": {"node.example.com/pool": "cpu"}},
            "status": {"capacity": {"cpu": "48", "memory": "64Gi"}, "nodeInfo": {"operatingSystem": "linux"}}}
    small = {**node, "metadata": {"name": "small", "labels": {"node.example.com/pool": "cpu"}},
             "status": {"capacity": {"cpu": "16", "memory": "64Gi"}, "nodeInfo": {"operatingSystem": "windows"}}}
    files = {"cpu/node-a.yaml": CPU_KUBELET, "gpu/node-a.yaml": GPU_KUBELET,
             "must-gather/nodes.yaml": yaml.safe_dump_all([node, small])}
    code, report = lint_json(write_tree(tmp_path, config=None, files=files))
    assert (code, rows(report)) == (0, [])
    # the Node objects are judged by nothing: skipped by kind, not silently counted
    assert (report["summary"]["objects"], report["summary"]["skippedByReason"]["unknown-kind"]) == (2, 2)
    # declared by their labels, the nodes are one pool: NG404 and NG405
    (tmp_path / ".numaguard.yaml").write_text("pool: {nodeLabels: {node.example.com/pool: cpu}}\n")
    code, report = lint_json(tmp_path)
    assert rows(report) == [("./must-gather/nodes.yaml", "NG404", "warning", 9, "status.capacity.cpu"),
                            ("./must-gather/nodes.yaml", "NG404", "warning", 22, "status.capacity.cpu"),
                            ("./must-gather/nodes.yaml", "NG405", "error", 25, "status.nodeInfo.operatingSystem")]
    assert report["findings"][0]["message"] == "CPUs differ across the pool with no majority: 48 on big; 16 on small"
    assert report["summary"]["objects"] == 4


def test_nodes_join_a_pool_by_its_labels_and_a_topology_by_its_node(tmp_path):
    def node(name: str, pool: str, cpu: str) -> dict:
        return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": {"node.example.com/pool": pool}},
                "status": {"capacity": {"cpu": cpu, "memory": "64Gi"}, "nodeInfo": {"operatingSystem": "linux"}}}

    def nrt(name: str, zones: int, cpus: int) -> dict:
        return {"apiVersion": "topology.node.k8s.io/v1alpha2", "kind": "NodeResourceTopology",
                "metadata": {"name": name},
                "zones": [{"name": f"node-{i}", "type": "Node", "resources": [
                    {"name": "cpu", "capacity": str(cpus // zones)}, {"name": "memory", "capacity": "32Gi"}]}
                    for i in range(zones)]}

    docs = [node("c1", "cpu", "48"), node("c2", "cpu", "48"), node("g1", "gpu", "16"), node("g2", "gpu", "16"),
            node("other", "none", "8"), nrt("g1", 1, 16), nrt("g2", 1, 16), nrt("stray", 4, 8)]
    code, report = lint_json(write_tree(tmp_path, files={"nodes.yaml": yaml.safe_dump_all(docs)}))
    # 48 against 16 CPUs, but in different pools; "other" and the stray topology are in none
    assert (code, rows(report)) == (0, [])
    assert report["summary"]["objects"] == 8
    docs[1]["status"]["capacity"]["cpu"] = "16"        # c2 shrinks: a tie in pool cpu
    docs[6] = nrt("g2", 4, 16)                         # g2's topology: 4 NUMA nodes, joins g2's pool
    code, report = lint_json(write_tree(tmp_path, files={"nodes.yaml": yaml.safe_dump_all(docs)}))
    assert [(f["rule"], f["line"], f["path"], f["message"]) for f in report["findings"]] == [
        ("NG404", 9, "status.capacity.cpu", "CPUs differ across pool cpu with no majority: 48 on c1; 16 on c2"),
        ("NG404", 22, "status.capacity.cpu", "CPUs differ across pool cpu with no majority: 48 on c1; 16 on c2"),
    ] + [("NG404", line, "zones", message) for line in (71, 84) for message in (
        "NUMA nodes differ across pool gpu with no majority: 1 on g1; 4 on g2",
        "CPUs per NUMA node differ across pool gpu with no majority: 16 on g1; 4/4/4/4 on g2",
        "memory per NUMA node differ across pool gpu with no majority: 32Gi on g1; 32Gi/32Gi/32Gi/32Gi on g2")]


def test_pool_name_dir_and_bare_pool_dir(tmp_path):
    root = write_tree(tmp_path, config=None, files={
        "a/k.yaml": CPU_KUBELET, "a/l.yaml": CPU_KUBELET.replace('"0"', '"0-1"'), "b/k.yaml": GPU_KUBELET,
        "b/l.yaml": GPU_KUBELET})
    # Without --pool the files are not a pool; each --pool NAME=DIR is one.
    assert rows(lint_json(root)[1]) == []
    code, report = lint_json(root, "--pool", "cpu=a", "--pool", "gpu=b")
    assert [(f["file"], f["rule"], f["message"]) for f in report["findings"]] == [
        ("./a/k.yaml", "NG401", "reservedSystemCPUs differs across pool cpu with no majority: 0 in ./a/k.yaml; "
                                "0-1 in ./a/l.yaml. This one has 0"),
        ("./a/l.yaml", "NG401", "reservedSystemCPUs differs across pool cpu with no majority: 0 in ./a/k.yaml; "
                                "0-1 in ./a/l.yaml. This one has 0-1")]
    # The same with only the pool directories given: each file is linted once either way.
    assert lint_json(root, "--pool", "cpu=a", "--pool", "gpu=b", paths=())[1]["summary"]["files"] == 4
    assert report["summary"]["files"] == 4
    # A bare DIR with no pool configured: the pool "default" (the four files compared as one).
    code, report = lint_json(root, "--pool", "a", "--pool", "b", paths=())
    assert len(rows(report, "NG401")) == 6 and "configurations of the pool" in report["findings"][1]["message"]
    # A bare DIR next to two configured pools is ambiguous; a NAME the config has adds to it.
    (root / ".numaguard.yaml").write_text(TWO_POOLS)
    proc = run_cli("lint", "--pool", "a", cwd=root)
    assert proc.returncode == 2
    assert proc.stderr.strip().endswith("--pool a: the config declares 2 pools (cpu, gpu); name the one "
                                        "it is: --pool NAME=a")
    code, report = lint_json(root, "--pool", "gpu=a", paths=("a",))
    # a/ joins pool gpu of the config: its two files are compared with each other only
    assert [(f["file"], f["message"].split(" with ")[0]) for f in report["findings"] if f["rule"] == "NG401"] == [
        ("a/k.yaml", "reservedSystemCPUs differs across pool gpu"),
        ("a/l.yaml", "reservedSystemCPUs differs across pool gpu")]
    for bad, message in ((["--pool", "x y=a"], "--pool x y=a: 'x y' is not a pool name"),
                         (["--pool", "cpu=nowhere"], "--pool cpu=nowhere: no such directory: nowhere")):
        proc = run_cli("lint", *bad, cwd=root)
        assert proc.returncode == 2 and message in proc.stderr, proc.stderr


# --------------------------------------------------------------------------- pods

def test_each_pod_is_simulated_on_its_own_pools_node(tmp_path):
    files = {"cpu/node-a.yaml": CPU_KUBELET, "gpu/node-a.yaml": GPU_KUBELET,
             # 30 CPUs fit a cpu node's NUMA node (47 free of 48), not a gpu node's (14 of 16);
             # 100Gi fits a gpu node's NUMA node (256Gi), not a cpu node's (32Gi)
             "apps/wide-on-cpu.yaml": pod("wide", "cpu", "30", "8Gi"),
             "apps/wide-on-gpu.yaml": pod("wide", "gpu", "30", "8Gi"),
             "apps/big-on-gpu.yaml": pod("big", "gpu", "4", "100Gi"),
             "apps/big-on-cpu.yaml": pod("big", "cpu", "4", "100Gi")}
    code, report = lint_json(write_tree(tmp_path, files=files))
    assert code == 1
    ng301 = [(f["file"], f["line"], f["path"], f["message"].split(" (")[0]) for f in report["findings"]
             if f["rule"] == "NG301"]
    assert ng301 == [("./apps/big-on-cpu.yaml", 9, "spec.resources.requests.memory", "on an empty node cpu-node"),
                     ("./apps/wide-on-gpu.yaml", 8, "spec.resources.requests.cpu", "on an empty node gpu-node")]
    assert {f["rule"] for f in report["findings"]} == {"NG301", "NG110"}


def test_a_pod_targeting_two_pools_is_judged_against_both(tmp_path):
    """Ambiguous: the pod selects a label both pools share, so it may land on either; it is
    judged against each pool's node and a finding both give is reported once."""
    config = TWO_POOLS.replace("nodeLabels: {node.example.com/pool: cpu}",
                               "nodeLabels: {node.example.com/pool: cpu, node-role.kubernetes.io/worker: ''}")
    config = config.replace("nodeLabels: {node.example.com/pool: gpu}",
                            "nodeLabels: {node.example.com/pool: gpu, node-role.kubernetes.io/worker: ''}")
    either = yaml.safe_load(pod("either", None, "30", "100Gi"))
    either["spec"]["nodeSelector"] = {"node-role.kubernetes.io/worker": ""}
    gpu_only = yaml.safe_load(pod("gpu-only", "gpu", "4", "8Gi"))
    gpu_only["spec"]["nodeSelector"]["node-role.kubernetes.io/worker"] = ""
    files = {"apps/either.yaml": yaml.safe_dump(either, sort_keys=False),
             "apps/gpu-only.yaml": yaml.safe_dump(gpu_only, sort_keys=False)}
    code, report = lint_json(write_tree(tmp_path, config=config, files=files))
    got = [(f["file"], f["rule"], f["message"].split(" (")[0]) for f in report["findings"] if f["rule"] != "NG110"]
    # 30 CPUs do not fit a gpu node (at requests.cpu), 100Gi not a cpu node (at requests.memory)
    assert got == [("./apps/either.yaml", "NG301", "on an empty node gpu-node"),
                   ("./apps/either.yaml", "NG301", "on an empty node cpu-node"),
                   ("./apps/either.yaml", "NG111", "the pod selects pool cpu"),
                   ("./apps/either.yaml", "NG111", "the pod selects pool gpu")]
    # the most specific pool wins: `{pool: gpu, worker}` selects two gpu labels, one cpu label
    ctx = rule_context(config_from_dict(yaml.safe_load(config)))
    assert [c.pool.name for c in targeted_pools(classify(gpu_only).pods[0], ctx)] == ["gpu"]
    assert [c.pool.name for c in targeted_pools(classify(either).pods[0], ctx)] == ["cpu", "gpu"]
    # a nodeSelector with another value of a pool label rules that pool out
    other = yaml.safe_load(pod("other", None, "1", "1Gi"))
    other["spec"]["nodeSelector"] = {"node-role.kubernetes.io/worker": "", "node.example.com/pool": "gpu"}
    other["spec"]["tolerations"] = [{"key": "node.example.com/pool", "operator": "Equal", "value": "cpu",
                                     "effect": "NoSchedule"}]
    assert [c.pool.name for c in targeted_pools(classify(other).pods[0], ctx)] == ["gpu"]


def test_pods_of_no_pool_use_the_default_node(tmp_path):
    config = TWO_POOLS + f"node: {NODES / 'gpu-node.yaml'}\nscope: all\n"
    config = config.replace(f"    node: {NODES / 'gpu-node.yaml'}\n", "")    # gpu pool: the default
    ctx = rule_context(config_from_dict(yaml.safe_load(config)), load_node_file(str(NODES / "gpu-node.yaml")),
                       {"cpu": load_node_file(str(NODES / "cpu-node.yaml"))})
    assert [(c.pool.name, c.node.name) for c in ctx.pools] == [("cpu", "cpu-node"), ("gpu", "gpu-node")]
    # one empty node state per distinct node, shared by the contexts that use it
    assert ctx.pools[1].empty_node_state is ctx.empty_node_state
    plain = classify(yaml.safe_load(pod("plain", None, "30", "8Gi"))).pods[0]
    scope, contexts, declared_by = pod_placement(plain, ctx)
    assert (scope, [c.node.name for c in contexts], declared_by) == ("managed", ["gpu-node"], "scopeAll")


# --------------------------------------------------------------------------- platform objects

PERFORMANCE_PROFILE = """\
apiVersion: performance.openshift.io/v2
kind: PerformanceProfile
metadata: {name: cnf}
spec:
  cpu: {reserved: "0-1", isolated: "2-31"}
  numa: {topologyPolicy: single-numa-node}
  nodeSelector:
    node-role.kubernetes.io/worker-cnf: ""
"""
OPENSHIFT_KUBELETCONFIG = """\
apiVersion: machineconfiguration.openshift.io/v1
kind: KubeletConfig
metadata: {name: max-pods}
spec:
  machineConfigPoolSelector:
    matchLabels:
      pools.operator.machineconfiguration.openshift.io/worker-cnf: ""
  kubeletConfig:
    maxPods: 250
"""
CNF_POOL = """\
pools:
  - name: cnf
    nodeLabels: {node-role.kubernetes.io/worker-cnf: ""}
  - name: workers
    nodeLabels: {node-role.kubernetes.io/worker: ""}
"""


def _platform_findings(text: str, settings: dict | None) -> list[tuple[str, str]]:
    docs, errors = load_text(text, "platform.yaml")
    config = config_from_dict(settings or {})
    return [(f.rule, f.path) for f in lint_documents(docs, config=config, load_errors=errors).active]


def test_openshift_kubeletconfig_belongs_to_the_pool_its_machine_config_pool_selects():
    settings = yaml.safe_load(CNF_POOL)
    # In no pool it shows no intent: only what stops a kubelet is checked, and nothing stops it.
    assert _platform_findings(OPENSHIFT_KUBELETCONFIG, None) == []
    # Its MachineConfigPool worker-cnf holds the nodes labelled node-role.kubernetes.io/worker-cnf:
    # a configuration of pool cnf, held to the pool requirements.
    assert _platform_findings(OPENSHIFT_KUBELETCONFIG, settings) == [
        ("NG202", "spec.kubeletConfig"), ("NG203", "spec.kubeletConfig"), ("NG204", "spec.kubeletConfig"),
        ("NG205", "spec.kubeletConfig"), ("NG206", "spec.kubeletConfig")]
    # The same object for the built-in worker pool (matched by the role label) is pool workers'.
    workers = OPENSHIFT_KUBELETCONFIG.replace(
        "pools.operator.machineconfiguration.openshift.io/worker-cnf: \"\"", "machineconfiguration.openshift.io/role: worker")
    assert [r for r, _ in _platform_findings(workers, settings)] == ["NG202", "NG203", "NG204", "NG205", "NG206"]
    # A selector on a label of the user's own naming names no pool numaguard can know.
    custom = OPENSHIFT_KUBELETCONFIG.replace(
        "pools.operator.machineconfiguration.openshift.io/worker-cnf: \"\"", "custom-kubelet: large-pods")
    assert _platform_findings(custom, settings) == []


def test_performance_profiles_of_one_pool_are_compared_and_of_two_pools_not():
    settings = yaml.safe_load(CNF_POOL)
    other = PERFORMANCE_PROFILE.replace("name: cnf", "name: cnf-old").replace('reserved: "0-1"', 'reserved: "0-3"')
    both = PERFORMANCE_PROFILE + "---\n" + other
    ng401 = [(f, p) for f, p in _platform_findings(both, settings) if f == "NG401"]
    assert ng401 == [("NG401", "spec.cpu.reserved"), ("NG401", "spec.cpu.reserved")]
    # Without the pool declared the two profiles are not compared.
    assert [f for f, _ in _platform_findings(both, None) if f == "NG401"] == []
    # A profile for another role is in another pool: not compared with the cnf one.
    apart = both.replace('node-role.kubernetes.io/worker-cnf: ""\n', "node-role.kubernetes.io/worker: \"\"\n", 1)
    assert [f for f, _ in _platform_findings(apart, settings) if f == "NG401"] == []


# --------------------------------------------------------------------------- --jobs

def test_jobs_2_gives_the_same_findings_with_pools(tmp_path):
    files = {}
    for i in range(30):
        files[f"cpu/node-{i:02}.yaml"] = CPU_KUBELET if i != 7 else CPU_KUBELET.replace('"0"', '"0-1"')
        files[f"gpu/node-{i:02}.yaml"] = GPU_KUBELET if i != 11 else GPU_KUBELET.replace("512Mi}", "1Gi}", 1)
        files[f"apps/pod-{i:02}.yaml"] = pod(f"p{i}", "cpu" if i % 2 else "gpu", str(8 + i), "8Gi")
    root = write_tree(tmp_path, files=files)
    config = load_config_file(str(root / ".numaguard.yaml"))
    default, by_pool = config.node_paths()
    settings = LintSettings(config=config, selection=Selection(severities=config.severities), node=None,
                            pool_nodes={name: load_node_file(p) for name, p in by_pool.items()})
    one, _ = lint_paths([str(root)], settings, jobs=1)
    two, _ = lint_paths([str(root)], settings, jobs=2, parallel_from_bytes=0)
    assert [f.as_dict() for f in two.findings] == [f.as_dict() for f in one.findings]
    assert two.summary.as_dict() == one.summary.as_dict()
    assert sorted({(f.rule, Path(f.file).parent.name) for f in one.findings if f.rule.startswith("NG4")}) == [
        ("NG401", "cpu"), ("NG401", "gpu")]
    # the gpu pods of 16 CPUs and more do not fit a gpu node (14 free CPUs); every cpu pod fits
    assert sum(f.rule == "NG301" for f in one.findings) == 11


@pytest.mark.parametrize("text", [textwrap.dedent("""\
    pools:
      - name: a
        kubeletConfigs: ["x/**"]
      - name: b
        kubeletConfigs: ["x/**"]
    """)])
def test_a_file_named_by_two_pools_is_in_both(tmp_path, text):
    root = write_tree(tmp_path, config=text, files={"x/k.yaml": CPU_KUBELET,
                                                    "x/l.yaml": CPU_KUBELET.replace('"0"', '"0-1"')})
    code, report = lint_json(root)
    assert [(f["file"], f["message"].split(" with ")[0]) for f in report["findings"]] == [
        ("./x/k.yaml", "reservedSystemCPUs differs across pool a"),
        ("./x/k.yaml", "reservedSystemCPUs differs across pool b"),
        ("./x/l.yaml", "reservedSystemCPUs differs across pool a"),
        ("./x/l.yaml", "reservedSystemCPUs differs across pool b")]


# --------------------------------------------------------------------------- membership rules

def test_which_nodes_and_node_selections_belong_to_a_pool():
    from numaguard.lint.model import NodeSelection, PoolSettings

    cnf = PoolSettings(node_labels={"node-role.kubernetes.io/worker": "", "pool": "cnf"}, name="cnf")
    # a node carries every pool label (extra labels are fine)
    assert cnf.has_node({"node-role.kubernetes.io/worker": "", "pool": "cnf", "zone": "a"})
    assert not cnf.has_node({"pool": "cnf"})
    assert not cnf.has_node({"node-role.kubernetes.io/worker": "", "pool": "gpu"})
    assert not cnf.has_node(None)
    # a pool declared by its taint alone: the taint, effect included when the pool gives one
    tainted = PoolSettings(taint={"key": "pool", "value": "cnf", "effect": "NoSchedule"}, name="t")
    assert tainted.has_node({}, [{"key": "pool", "value": "cnf", "effect": "NoSchedule"}])
    assert not tainted.has_node({}, [{"key": "pool", "value": "cnf", "effect": "NoExecute"}])
    assert not tainted.has_node({}, [{"key": "pool", "value": "gpu", "effect": "NoSchedule"}])
    assert not PoolSettings(kubelet_configs=("x",)).has_node({"pool": "cnf"})
    # a node selector: every pool node satisfies it, or only pool nodes do
    assert cnf.selected_by(NodeSelection({"node-role.kubernetes.io/worker": ""}))
    assert cnf.selected_by(NodeSelection({"node-role.kubernetes.io/worker": "", "pool": "cnf", "zone": "a"}))
    assert not cnf.selected_by(NodeSelection({"pool": "gpu"}))
    assert not cnf.selected_by(NodeSelection({"zone": "a"}))
    # a node group's labels: its nodes must carry every pool label
    assert cnf.selected_by(NodeSelection({"node-role.kubernetes.io/worker": "", "pool": "cnf", "x": "y"}, kind="labels"))
    assert not cnf.selected_by(NodeSelection({"node-role.kubernetes.io/worker": ""}, kind="labels"))
    assert not cnf.selected_by(None) and not cnf.selected_by(NodeSelection({}))


def test_checkpoints_are_judged_against_their_pools_configuration(tmp_path):
    from numaguard.lint.k8s.checkpoints import cpu_checkpoint_json

    holds_cpu_8 = {"gpu": cpu_checkpoint_json("static", "0-7,9-15", {"uid-a": {"app": "8"}}),    # 16 CPUs
                   "cpu": cpu_checkpoint_json("static", "0-7,9-79", {"uid-a": {"app": "8"}})}    # 80 CPUs
    files = {"cpu/cpu_manager_state": json.dumps(cpu_checkpoint_json("none", "0-79")),
             "gpu/cpu_manager_state": json.dumps(holds_cpu_8["gpu"]),
             "cpu/node-a/cpu_manager_state": json.dumps(holds_cpu_8["cpu"])}
    code, report = lint_json(write_tree(tmp_path, files=files))
    # cpu pool (node cpu-node, static, reserved 0): the "none" checkpoint stops its kubelet, and
    # CPU 8 is an ordinary CPU; gpu pool (gpu-node, reserved 0,8): CPU 8 is reserved, so the
    # static policy refuses the file at start
    assert [(f["file"], f["rule"], f["message"]) for f in report["findings"]] == [
        ("./cpu/cpu_manager_state", "NG402", 'configured policy "static" differs from state checkpoint policy "none": '
                                             "the kubelet will not start with this CPU Manager checkpoint"),
        ("./gpu/cpu_manager_state", "NG419", 'the kubelet will not start: not all reserved cpus: "0,8" are present in '
                                             'defaultCpuSet: "0-7,9-15" (reserved CPUs 8 are not in the shared pool (held '
                                             "as exclusive CPUs by container app of pod uid-a (8)); the reservation "
                                             "(reservedSystemCPUs, or kubeReserved/systemReserved cpu) changed without a "
                                             "drain, or the file was edited)")]


EKSCTL = """\
apiVersion: eksctl.io/v1alpha5
kind: ClusterConfig
metadata: {name: numa, region: eu-north-1}
nodeGroups:
  - name: cpu-a
    labels: {node.example.com/pool: cpu}
    kubeletExtraConfig:
      cpuManagerPolicy: static
      topologyManagerPolicy: single-numa-node
      topologyManagerScope: pod
      featureGates: {PodLevelResourceManagers: true}
  - name: cpu-b
    labels: {node.example.com/pool: cpu, team: search}
    kubeletExtraConfig:
      cpuManagerPolicy: static
      topologyManagerPolicy: POLICY
      topologyManagerScope: pod
      featureGates: {PodLevelResourceManagers: true}
  - name: gpu
    labels: {node.example.com/pool: gpu}
    taints: [{key: node.example.com/pool, value: gpu, effect: NoSchedule}]
    kubeletExtraConfig:
      cpuManagerPolicy: static
      topologyManagerPolicy: best-effort
      topologyManagerScope: pod
      featureGates: {PodLevelResourceManagers: true}
"""


def test_eksctl_node_groups_join_the_pools_their_labels_name():
    """An eksctl node group gives its nodes `labels` (and `taints`): it is a configuration of the
    pools whose labels it includes; groups of one pool are compared, of two pools not."""
    pools = {"pools": [{"name": "cpu", "nodeLabels": {"node.example.com/pool": "cpu"}},
                       {"name": "gpu", "taint": {"key": "node.example.com/pool", "value": "gpu"}}]}
    same = EKSCTL.replace("POLICY", "single-numa-node")
    assert [f for f, _ in _platform_findings(same, pools) if f == "NG401"] == []
    odd = EKSCTL.replace("POLICY", "restricted")
    ng401 = [(f.path, f.message) for f in lint_documents(load_text(odd, "eksctl.yaml")[0],
                                                        config=config_from_dict(pools)).active if f.rule == "NG401"]
    assert ng401 == [
        ("nodeGroups[0].kubeletExtraConfig.topologyManagerPolicy",
         "topologyManagerPolicy differs across pool cpu with no majority: single-numa-node in eksctl.yaml:8; "
         "restricted in eksctl.yaml:15. This one has single-numa-node"),
        ("nodeGroups[1].kubeletExtraConfig.topologyManagerPolicy",
         "topologyManagerPolicy differs across pool cpu with no majority: single-numa-node in eksctl.yaml:8; "
         "restricted in eksctl.yaml:15. This one has restricted")]
    # the gpu group is in pool gpu by the taint it gives its nodes: a second one is compared with it
    second = same + """\
  - name: gpu-b
    taints: [{key: node.example.com/pool, value: gpu, effect: NoSchedule}]
    kubeletExtraConfig:
      cpuManagerPolicy: static
      topologyManagerPolicy: single-numa-node
      topologyManagerScope: pod
      featureGates: {PodLevelResourceManagers: true}
"""
    assert [m.split(" with ")[0] for f, m in [(f.rule, f.message) for f in lint_documents(
        load_text(second, "eksctl.yaml")[0], config=config_from_dict(pools)).active] if f == "NG401"] == [
        "topologyManagerPolicy differs across pool gpu"] * 2
