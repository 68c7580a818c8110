"""What the user declares is enforced (issue 21 §1): a severity the config sets applies as
written on every tier; the PodLevelResourceManagers gate declares a kubelet configuration
wherever it is set (the file, a drop-in, `--feature-gates` in a carrier's flags, a platform's
own gate field); a pod simulated on a node description the user named gets the simulator's
predicted kubelet refusals at their own severity; the summary says per tier what declared each
object (text, JSON, HTML); `audit` and `fix` follow. The webhook and the exported policy are
in tests/webhook/test_tiers.py and tests/export/test_admission_policy.py."""
from __future__ import annotations

import json
from pathlib import Path

import yaml

from numaguard.lint.cluster.audit import judge_objects
from numaguard.lint.config import config_from_dict
from numaguard.lint.engine import lint_documents
from numaguard.lint.load.documents import load_text
from numaguard.lint.numa.node import load_node_file

from conftest import REPO, run_cli
from test_assumed_kubelets import write

# Shows the intent only through manager policies (a static policy is also how
# container-level pinning is configured): assumed. Its pool requirements: NG202 (gate), NG204
# (no Memory Manager), NG205 (scope), NG206 (best-effort, a warning by default).
ASSUMED = """\
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
cpuManagerPolicy: static
reservedSystemCPUs: "0-1"
topologyManagerPolicy: best-effort
"""
# The article's "Feature appears to do nothing": the gate on, every manager left at its default.
GATE_ONLY = """\
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
featureGates:
  PodLevelResourceManagers: true
"""
# A Guaranteed pod with pod-level resources and no pool: assumed. 20 CPUs do not fit one NUMA
# node of NODE (16 CPUs each, single-numa-node): the kubelet would reject it.
BIG_POD = """\
apiVersion: v1
kind: Pod
metadata: {name: big}
spec:
  resources:
    requests: {cpu: "20", memory: 8Gi}
    limits: {cpu: "20", memory: 8Gi}
  containers:
  - name: app
    image: registry.example.com/app:1
"""
# The same size, Burstable (NG103, a policy finding): nothing of it is pinned, nothing rejected.
BIG_BURSTABLE = BIG_POD.replace('requests: {cpu: "20", memory: 8Gi}', 'requests: {cpu: "20", memory: 4Gi}').replace(
    "name: big", "name: burstable")
NODE = """\
apiVersion: numaguard.io/v1alpha1
kind: NodeProfile
metadata: {name: two-by-sixteen}
spec:
  topology:
    sockets: 2
    numaNodesPerSocket: 1
    coresPerNumaNode: 16
    threadsPerCore: 1
    memoryPerNumaNode: 64Gi
  kubeletConfig:
    apiVersion: kubelet.config.k8s.io/v1beta1
    kind: KubeletConfiguration
    featureGates: {PodLevelResourceManagers: true}
    cpuManagerPolicy: static
    memoryManagerPolicy: Static
    topologyManagerPolicy: single-numa-node
    topologyManagerScope: pod
    reservedSystemCPUs: "0"
    systemReserved: {memory: 924Mi}
    reservedMemory:
    - {numaNode: 0, limits: {memory: 1Gi}}
"""
NG301_MESSAGE = (
    'on an empty node two-by-sixteen (topologyManagerPolicy single-numa-node, scope pod) the kubelet rejects '
    'this pod with TopologyAffinityError ("Pod was rejected: Pod Scope pod with pod-level resources failed '
    'admission under pod-scope topology manager")')


def lint(text: str, settings: dict | None = None, name: str = "x.yaml", **kw):
    docs, errors = load_text(text, name)
    return lint_documents(docs, config=config_from_dict(settings or {}), load_errors=errors, **kw)


def rows(result) -> list[tuple]:
    return [(f.rule, f.severity.value, f.line, f.column) for f in result.active]


def json_lint(cwd: Path, *args: str) -> tuple[int, dict]:
    proc = run_cli("lint", "--format", "json", *args, cwd=cwd)
    assert proc.returncode in (0, 1), proc.stderr
    return proc.returncode, json.loads(proc.stdout)


def found(report: dict) -> list[tuple]:
    return [(f["rule"], f["severity"], f["line"], f["column"]) for f in report["findings"]]


# --------------------------------------------------------------------------- an explicit severity wins

def test_a_severity_the_config_sets_applies_on_an_assumed_kubelet_configuration(tmp_path):
    write(tmp_path, {"kubelet.yaml": ASSUMED})
    code, report = json_lint(tmp_path, "kubelet.yaml")
    assert code == 0
    assert found(report) == [("NG202", "warning", 1, 1), ("NG204", "warning", 1, 1), ("NG205", "warning", 1, 1),
                             ("NG206", "warning", 5, 24)]
    # `rules: {NG206: error}` is what the user means: an error, the run fails; the rules it
    # does not name keep their lowered default
    write(tmp_path, {".numaguard.yaml": "rules: {NG206: error}\n"})
    code, report = json_lint(tmp_path, "kubelet.yaml")
    assert code == 1
    assert found(report) == [("NG202", "warning", 1, 1), ("NG204", "warning", 1, 1), ("NG205", "warning", 1, 1),
                             ("NG206", "error", 5, 24)]
    assert (report["summary"]["error"], report["summary"]["warning"], report["summary"]["assumedKubelets"]) == (1, 3, 1)
    # a lower severity applies as written too, on a declared configuration
    write(tmp_path, {".numaguard.yaml": "scope: all\nrules: {NG205: info, NG204: warning}\n"})
    code, report = json_lint(tmp_path, "kubelet.yaml")
    assert code == 1
    assert found(report) == [("NG202", "error", 1, 1), ("NG204", "warning", 1, 1), ("NG205", "info", 1, 1),
                             ("NG206", "warning", 5, 24)]


def test_a_severity_the_config_sets_applies_on_an_assumed_pod():
    result = lint(BIG_BURSTABLE.replace('cpu: "20"', "cpu: 2500m"), {"rules": {"NG104": "error"}})
    assert [(r, s) for r, s, *_ in rows(result)] == [("NG104", "error"), ("NG103", "warning")]
    assert result.summary.assumed_managed == 1
    # `off` still turns a rule off, and an explicit warning on a declared pod lowers it
    declared = lint(BIG_BURSTABLE.replace('cpu: "20"', "cpu: 2500m"),
                    {"scope": "all", "rules": {"NG104": "off", "NG103": "warning"}})
    assert [(r, s) for r, s, *_ in rows(declared)] == [("NG103", "warning")]


# --------------------------------------------------------------------------- the gate declares

def test_the_gate_alone_declares_the_configuration_the_articles_feature_that_does_nothing(tmp_path):
    write(tmp_path, {"kubelet.yaml": GATE_ONLY})
    proc = run_cli("lint", "kubelet.yaml", cwd=tmp_path)
    assert proc.returncode == 1
    lines = proc.stdout.splitlines()
    assert [line.split("  ")[1:4] for line in lines if line.startswith("  kubelet.yaml")] == [
        ["kubelet.yaml:1:1", "NG203", "error"], ["kubelet.yaml:1:1", "NG204", "error"],
        ["kubelet.yaml:1:1", "NG205", "error"], ["kubelet.yaml:1:1", "NG206", "warning"]]
    assert lines[-2:] == [
        "tiers: 1 kubelet configuration(s) declared by the PodLevelResourceManagers gate",
        "1 file(s), 1 object(s) checked, 0 skipped, 0 opted out: 3 error(s), 1 warning(s), 0 info, 0 suppressed"]
    code, report = json_lint(tmp_path, "kubelet.yaml")
    assert report["summary"]["declaredBy"]["kubeletConfigurations"] == {"pool": 0, "scopeAll": 0, "gate": 1,
                                                                         "assumed": 0}
    assert (report["summary"]["assumedKubelets"], report["summary"]["assumedHint"]) == (0, None)


def test_a_static_policy_alone_stays_assumed_and_the_gate_set_false_declares_nothing():
    result = lint(ASSUMED)
    assert result.summary.declared["kubeletConfigurations"] == {"pool": 0, "scopeAll": 0, "gate": 0, "assumed": 1}
    off = lint(ASSUMED + "featureGates: {PodLevelResourceManagers: false}\n")
    assert [(r, s) for r, s, *_ in rows(off)] == [("NG204", "warning"), ("NG205", "warning"), ("NG206", "warning"),
                                                  ("NG202", "warning")]
    assert off.summary.assumed_kubelets == 1
    on = lint(ASSUMED + "featureGates: {PodLevelResourceManagers: true}\n")
    assert [(r, s) for r, s, *_ in rows(on)] == [("NG204", "error"), ("NG205", "error"), ("NG206", "warning")]
    assert on.summary.declared["kubeletConfigurations"]["gate"] == 1


def test_a_pool_wins_over_the_gate_in_the_summary(tmp_path):
    write(tmp_path, {"nodes/kubelet.yaml": GATE_ONLY, ".numaguard.yaml": "pool:\n  kubeletConfigs: [nodes/**]\n"})
    code, report = json_lint(tmp_path, ".")
    assert code == 1
    assert report["summary"]["declaredBy"]["kubeletConfigurations"] == {"pool": 1, "scopeAll": 0, "gate": 0,
                                                                         "assumed": 0}


def test_the_gate_in_a_drop_in_declares_the_merged_configuration(tmp_path):
    main = ASSUMED
    dropin = ("apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\n"
              "featureGates: {PodLevelResourceManagers: true}\n")
    write(tmp_path, {"kubelet/config.yaml": main, "kubelet/config.yaml.d/50-gate.conf": dropin})
    code, report = json_lint(tmp_path, "kubelet")
    assert code == 1
    assert [(Path(f["file"]).name, f["rule"], f["severity"], f["line"]) for f in report["findings"]] == [
        ("config.yaml", "NG204", "error", 1), ("config.yaml", "NG205", "error", 1),
        ("config.yaml", "NG206", "warning", 5)]
    assert (report["summary"]["objects"], report["summary"]["declaredBy"]["kubeletConfigurations"]["gate"]) == (1, 1)
    # the drop-in alone is no whole configuration: nothing is declared
    code, report = json_lint(tmp_path, "kubelet/config.yaml.d")
    assert (code, found(report), report["summary"]["declaredBy"]["kubeletConfigurations"]["gate"]) == (0, [], 0)


EKS_FLAGS = """\
apiVersion: node.eks.aws/v1alpha1
kind: NodeConfig
spec:
  cluster: {name: numa}
  kubelet:
    config:
      cpuManagerPolicy: static
      topologyManagerPolicy: single-numa-node
    flags:
      - --feature-gates=PodLevelResourceManagers=true
      - --topology-manager-scope=container
"""
KUBEADM_FLAGS = """\
apiVersion: kubeadm.k8s.io/v1beta4
kind: InitConfiguration
nodeRegistration:
  kubeletExtraArgs:
  - name: feature-gates
    value: PodLevelResourceManagers=true
---
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
cpuManagerPolicy: static
systemReserved: {cpu: "1", memory: 1Gi}
"""
KIND_GATE = """\
kind: Cluster
apiVersion: kind.x-k8s.io/v1alpha4
featureGates:
  PodLevelResourceManagers: true
nodes:
- role: control-plane
- role: worker
"""


def test_the_gate_in_a_carriers_kubelet_flags_or_its_own_gate_field_declares_it():
    # EKS: nodeadm passes spec.kubelet.flags to the kubelet; the flag's scope wins over the file
    eks = lint(EKS_FLAGS, name="eks.yaml")
    assert [(f.rule, f.severity.value, f.line, f.column, f.path) for f in eks.active] == [
        ("NG204", "error", 7, 7, "spec.kubelet.config"),
        ("NG205", "error", 11, 9, "spec.kubelet.flags[1]")]
    assert eks.summary.declared["kubeletConfigurations"] == {"pool": 0, "scopeAll": 0, "gate": 1, "assumed": 0}
    # without the flag the same NodeConfig is only assumed
    assumed = lint(EKS_FLAGS.replace("      - --feature-gates=PodLevelResourceManagers=true\n", ""), name="eks.yaml")
    assert [(f.rule, f.severity.value) for f in assumed.active] == [
        ("NG202", "warning"), ("NG204", "warning"), ("NG205", "warning")]
    # kubeadm: kubeletExtraArgs feature-gates over the KubeletConfiguration beside it
    kubeadm = lint(KUBEADM_FLAGS, name="kubeadm.yaml")
    assert [(f.rule, f.severity.value, f.line) for f in kubeadm.active] == [
        ("NG204", "error", 8), ("NG205", "error", 8), ("NG206", "warning", 8)]
    assert kubeadm.summary.declared["kubeletConfigurations"]["gate"] == 1
    # kind: the Cluster's own featureGates reach every node's kubelet
    kind = lint(KIND_GATE, name="kind.yaml")
    assert [(f.rule, f.severity.value, f.line, f.path) for f in kind.active] == [
        ("NG203", "error", 6, "nodes[0]"), ("NG204", "error", 6, "nodes[0]"), ("NG205", "error", 6, "nodes[0]"),
        ("NG206", "warning", 6, "nodes[0]"), ("NG203", "error", 7, "nodes[1]"), ("NG204", "error", 7, "nodes[1]"),
        ("NG205", "error", 7, "nodes[1]"), ("NG206", "warning", 7, "nodes[1]")]
    assert kind.summary.declared["kubeletConfigurations"]["gate"] == 2


EKSCTL_POOL = """\
apiVersion: eksctl.io/v1alpha5
kind: ClusterConfig
metadata: {name: numa, region: eu-north-1}
nodeGroups:
  - name: numa-a
    amiFamily: AmazonLinux2023
    labels: {node.example.com/pool: numa}
    kubeletExtraConfig:
      featureGates: {PodLevelResourceManagers: true}
      cpuManagerPolicy: static
      reservedSystemCPUs: "40-41"
      memoryManagerPolicy: Static
      topologyManagerPolicy: single-numa-node
      topologyManagerScope: pod
"""


def test_a_carrier_a_pool_selects_is_declared_by_it_and_judged_on_its_node(tmp_path):
    """The node group's labels put it in pool numa: declared by the pool (not by its gate), and
    judged against the pool's node description, which has CPUs 0-31 only."""
    write(tmp_path, {"nodes/node.yaml": NODE, "eksctl.yaml": EKSCTL_POOL, ".numaguard.yaml": (
        "pools:\n- name: numa\n  nodeLabels: {node.example.com/pool: numa}\n  node: nodes/node.yaml\n")})
    code, report = json_lint(tmp_path, "eksctl.yaml")
    assert code == 1
    assert [(f["rule"], f["severity"], f["line"], f["column"]) for f in report["findings"]] == [
        ("NG208", "error", 9, 7), ("NG209", "error", 11, 27), ("NG209", "error", 11, 27)]
    assert report["findings"][2]["message"] == (
        "the kubelet refuses to start: reserved-cpus: 40-41 is not a subset of online-cpus: 0-31 (missing: 40-41)")
    assert report["summary"]["declaredBy"]["kubeletConfigurations"] == {"pool": 1, "scopeAll": 0, "gate": 0,
                                                                         "assumed": 0}


def test_kubelet_declaration_names_each_tier():
    from numaguard.lint.engine import rule_context
    from numaguard.lint.rules.kubelet import kubelet_declaration

    ctx = rule_context(config_from_dict({}))
    gate = yaml.safe_load(GATE_ONLY)
    static = yaml.safe_load(ASSUMED)
    plain = {"apiVersion": "kubelet.config.k8s.io/v1beta1", "kind": "KubeletConfiguration"}
    assert [kubelet_declaration(kc, ctx, False) for kc in (gate, static, plain)] == ["gate", "assumed", None]
    assert [kubelet_declaration(kc, ctx, True) for kc in (gate, static, plain)] == ["pool", "pool", "pool"]
    # selected by a pool over a base numaguard does not see: the pool's when it shows the intent
    assert [kubelet_declaration(kc, ctx, False, selected=True) for kc in (gate, static, plain)] == [
        "pool", "pool", None]
    everything = rule_context(config_from_dict({"scope": "all"}))
    assert [kubelet_declaration(kc, everything, False) for kc in (gate, static, plain)] == ["scopeAll"] * 3


def test_audit_judges_a_live_configuration_the_gate_declares_at_the_error_tier():
    """A node outside every declared pool: its configz turns the gate on, so its pool
    requirements are errors; without the gate the same configuration is assumed."""
    node = {"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": "worker-1", "labels": {"node.example.com/pool": "gpu"}},
            "status": {"capacity": {"cpu": "4", "memory": "8Gi", "pods": "110"}}}
    config = config_from_dict({"pools": [{"name": "numa", "nodeLabels": {"node.example.com/pool": "numa"}}]})
    configz = {**yaml.safe_load(ASSUMED), "featureGates": {"PodLevelResourceManagers": True}}
    gated = judge_objects([node], {}, {"worker-1": configz}, [], config=config)
    assert [(f.file, f.rule, f.severity.value) for f in gated.active] == [
        ("node/worker-1", "NG204", "error"), ("node/worker-1", "NG205", "error"), ("node/worker-1", "NG206", "warning")]
    assert gated.summary.declared["kubeletConfigurations"] == {"pool": 0, "scopeAll": 0, "gate": 1, "assumed": 0}
    plain = judge_objects([node], {}, {"worker-1": yaml.safe_load(ASSUMED)}, [], config=config)
    assert [(f.rule, f.severity.value) for f in plain.active] == [
        ("NG202", "warning"), ("NG204", "warning"), ("NG205", "warning"), ("NG206", "warning")]
    assert plain.summary.assumed_kubelets == 1


# --------------------------------------------------------------------------- a node named is a node meant

def test_a_pod_simulated_on_the_node_given_with_node_gets_ng301_as_an_error(tmp_path):
    """The issue's case: a Guaranteed 20-CPU pod, a node of 16 CPUs per NUMA node under
    single-numa-node. The kubelet would reject it there: an error. The policy findings of the
    pods simulated there keep their tier (the Burstable one's NG103 stays a warning)."""
    write(tmp_path, {"node.yaml": NODE, "pod.yaml": BIG_POD + "---\n" + BIG_BURSTABLE})
    proc = run_cli("lint", "--node", "node.yaml", "pod.yaml", cwd=tmp_path)
    assert proc.returncode == 1
    lines = proc.stdout.splitlines()
    assert [line.split("  ")[1:4] for line in lines if line.startswith("  pod.yaml")] == [
        ["pod.yaml:6:5", "NG110", "info"], ["pod.yaml:6:21", "NG301", "error"], ["pod.yaml:17:35", "NG103", "warning"]]
    assert NG301_MESSAGE in proc.stdout
    assert lines[-3:-1] == [
        "tiers: 2 pod(s) declared by --node for NUMA fit, 2 pod(s) assumed",
        "1 file(s), 2 object(s) checked, 0 skipped, 0 opted out, 2 assumed managed: 1 error(s), 1 warning(s), "
        "1 info, 0 suppressed"]
    assert lines[-1] == (
        "2 pod(s) with pod-level cpu/memory were assumed to be meant for a managed pool because no pool is "
        "configured, so their policy findings are warnings, not errors (what the kubelet is predicted to do on a "
        "node description you named keeps its severity); to enforce the policy, declare the pools in "
        ".numaguard.yaml (pools: nodeLabels, taint) or annotate the pools' pods numaguard.io/scope: managed")
    code, report = json_lint(tmp_path, "--node", "node.yaml", "pod.yaml")
    assert report["summary"]["declaredBy"]["numaFit"] == {"--node": 2, "node": 0, "poolNode": 0, "unnamed": 0}
    assert report["summary"]["declaredBy"]["pods"] == {"pool": 0, "annotation": 0, "scopeAll": 0, "assumed": 2}
    # without --node nothing is simulated: the pods are only assumed, the run passes
    code, report = json_lint(tmp_path, "pod.yaml")
    assert (code, [(r, s) for r, s, *_ in found(report)]) == (0, [("NG110", "info"), ("NG103", "warning")])
    assert report["summary"]["declaredBy"]["numaFit"] == {"--node": 0, "node": 0, "poolNode": 0, "unnamed": 0}


def test_the_configs_node_and_a_pools_node_name_the_node_too(tmp_path):
    write(tmp_path, {"nodes/node.yaml": NODE, "pod.yaml": BIG_POD, ".numaguard.yaml": "node: nodes/node.yaml\n"})
    code, report = json_lint(tmp_path, "pod.yaml")
    assert (code, [(r, s) for r, s, *_ in found(report)]) == (1, [("NG110", "info"), ("NG301", "error")])
    assert report["summary"]["declaredBy"]["numaFit"] == {"--node": 0, "node": 1, "poolNode": 0, "unnamed": 0}
    # --node replaces the config's node: for this run
    code, report = json_lint(tmp_path, "--node", "nodes/node.yaml", "pod.yaml")
    assert report["summary"]["declaredBy"]["numaFit"] == {"--node": 1, "node": 0, "poolNode": 0, "unnamed": 0}
    # a pool's own node: its pods (declared by the pool anyway) are simulated there
    pooled = BIG_POD.replace("spec:\n", "spec:\n  nodeSelector: {node.example.com/pool: numa}\n", 1)
    write(tmp_path, {"pod.yaml": pooled, ".numaguard.yaml": (
        "pool:\n  nodeLabels: {node.example.com/pool: numa}\n  node: nodes/node.yaml\n")})
    code, report = json_lint(tmp_path, "pod.yaml")
    assert (code, [(r, s) for r, s, *_ in found(report)]) == (1, [("NG110", "info"), ("NG301", "error")])
    assert report["summary"]["declaredBy"]["numaFit"] == {"--node": 0, "node": 0, "poolNode": 1, "unnamed": 0}
    assert report["summary"]["declaredBy"]["pods"]["pool"] == 1


def test_a_node_no_one_named_leaves_an_assumed_pods_rejection_a_warning(tmp_path):
    """The engine's callers that name no node (the webhook, `audit`'s node picked from the
    cluster, a library caller by default): an assumed pod's NG301 stays a warning."""
    docs, _ = load_text(BIG_POD, "pod.yaml")
    described = load_node_file(str(write(tmp_path, {"node.yaml": NODE}) / "node.yaml"))
    unnamed = lint_documents(docs, node=described)
    assert [(f.rule, f.severity.value) for f in unnamed.active] == [("NG110", "info"), ("NG301", "warning")]
    assert unnamed.summary.declared["numaFit"] == {"--node": 0, "node": 0, "poolNode": 0, "unnamed": 1}
    named = lint_documents(docs, node=described, node_named_by={None: "--node"})
    assert [(f.rule, f.severity.value) for f in named.active] == [("NG110", "info"), ("NG301", "error")]


def test_node_namings_follow_the_config():
    config = config_from_dict({"node": "a.yaml", "pools": [
        {"name": "cpu", "nodeLabels": {"p": "cpu"}, "node": "cpu.yaml"}, {"name": "gpu", "nodeLabels": {"p": "gpu"}}]})
    assert config.node_namings() == {None: "node", "cpu": "poolNode", "gpu": "node"}
    assert config.node_namings("b.yaml") == {None: "--node", "cpu": "poolNode", "gpu": "--node"}
    assert config_from_dict({"pools": [{"name": "gpu", "nodeLabels": {"p": "gpu"}}]}).node_namings() == {}


# --------------------------------------------------------------------------- the summary in every report

def test_the_html_report_says_what_declared_each_object(tmp_path):
    write(tmp_path, {"node.yaml": NODE, "pod.yaml": BIG_POD, "kubelet.yaml": GATE_ONLY, "static.yaml": ASSUMED})
    proc = run_cli("lint", "--format", "html", "--node", "node.yaml", "pod.yaml", "kubelet.yaml", "static.yaml",
                   cwd=tmp_path)
    assert proc.returncode == 1
    assert ('<p class="meta" id="tiers">Tiers: 1 pod(s) declared by --node for NUMA fit, 1 kubelet configuration(s) '
            'declared by the PodLevelResourceManagers gate, 1 pod(s) assumed, 1 kubelet configuration(s) assumed.</p>'
            ) in proc.stdout
    code, report = json_lint(tmp_path, "--node", "node.yaml", "pod.yaml", "kubelet.yaml", "static.yaml")
    assert report["summary"]["declaredBy"] == {
        "pods": {"pool": 0, "annotation": 0, "scopeAll": 0, "assumed": 1},
        "numaFit": {"--node": 1, "node": 0, "poolNode": 0, "unnamed": 0},
        "kubeletConfigurations": {"pool": 0, "scopeAll": 0, "gate": 1, "assumed": 1}}
    assert report["version"] == 1


def test_worker_processes_count_the_tiers_as_one_process_does(tmp_path):
    from numaguard.lint.cli.lint_files import LintSettings, lint_paths
    from numaguard.lint.config import Config
    from numaguard.lint.engine import Selection

    write(tmp_path, {**{f"k{i}.yaml": GATE_ONLY for i in range(3)}, **{f"s{i}.yaml": ASSUMED for i in range(2)},
                     **{f"p{i}.yaml": BIG_POD for i in range(4)}, "node.yaml": NODE})
    node = load_node_file(str(tmp_path / "node.yaml"))
    settings = LintSettings(config=Config(), selection=Selection(), node=node, pool_nodes={},
                            node_named_by={None: "--node"})
    files = sorted(str(p) for p in tmp_path.iterdir() if p.name != "node.yaml")
    one, _ = lint_paths(files, settings, jobs=1)
    two, _ = lint_paths(files, settings, jobs=2, parallel_from_bytes=0)
    assert one.summary.declared == two.summary.declared == {
        "pods": {"pool": 0, "annotation": 0, "scopeAll": 0, "assumed": 4},
        "numaFit": {"--node": 4, "node": 0, "poolNode": 0, "unnamed": 0},
        "kubeletConfigurations": {"pool": 0, "scopeAll": 0, "gate": 3, "assumed": 2}}
    assert [f.as_dict() for f in two.findings] == [f.as_dict() for f in one.findings]
    assert sum(f.rule == "NG301" and f.severity.value == "error" for f in one.findings) == 4


# --------------------------------------------------------------------------- fix

CANARY_OLD = REPO / "deploy" / "examples" / "node-pool" / "kubelet-config-canary-old.yaml"


def test_fix_writes_the_canary_so_that_the_kubelet_starts(tmp_path):
    """The shipped example: `Static` (case only, CPUs reserved by kubeReserved.cpu 500m) becomes
    static and the removed `CPUManager: true` goes; the rewritten file has no start-up refusal
    left (only NG206, which has no single safe fix), and a second run changes nothing."""
    import shutil
    shutil.copytree(REPO / "deploy" / "examples", tmp_path / "examples")
    target = "node-pool/kubelet-config-canary-old.yaml"
    proc = run_cli("fix", "--write", target, cwd=tmp_path / "examples")
    assert proc.returncode == 1, proc.stderr
    assert proc.stdout.splitlines() == [
        f"{target}:6: NG210 KubeletConfiguration: featureGates.CPUManager: true -> (not set)",
        f"{target}:5: NG202 KubeletConfiguration: featureGates.PodLevelResourceManagers: (not set) -> true",
        f"{target}:7: NG203 KubeletConfiguration: cpuManagerPolicy: Static -> static",
        f"{target}:10: NG205 KubeletConfiguration: topologyManagerScope: container -> pod",
        f"{target}:8: NG204 KubeletConfiguration: memoryManagerPolicy: BestEffort -> Static; "
        "reservedMemory: (not set) -> [{numaNode: 0, limits: {memory: 100Mi}}]"]
    assert proc.stderr == "numaguard fix: 5 fix(es) in 1 file(s) applied; 0 finding(s) left alone\n"
    assert (tmp_path / "examples" / target).read_text() == CANARY_OLD.read_text().replace(
        "  CPUManager: true                   # removed gate: the kubelet no longer recognises it\n",
        "  PodLevelResourceManagers: true\n").replace("cpuManagerPolicy: Static ", "cpuManagerPolicy: static ").replace(
        "memoryManagerPolicy: BestEffort", "memoryManagerPolicy: Static").replace(
        "topologyManagerScope: container", "topologyManagerScope: pod") + (
        "reservedMemory:\n- numaNode: 0\n  limits:\n    memory: 100Mi\n")
    code, report = json_lint(tmp_path / "examples", target)
    assert (code, found(report)) == (0, [("NG206", "warning", 9, 24)])
    again = run_cli("fix", "--write", target, cwd=tmp_path / "examples")
    assert (again.returncode, again.stdout) == (0, "")


def _fix(tmp_path: Path, text: str, name: str = "kubelet.yaml", *args: str):
    (tmp_path / name).write_text(text)
    proc = run_cli("fix", "--write", "--select", "NG203,NG210", *args, name, cwd=tmp_path)
    return proc, (tmp_path / name).read_text()


def test_ng203_is_fixed_only_for_a_case_only_spelling_with_cpus_reserved(tmp_path):
    base = "apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\n"
    proc, text = _fix(tmp_path, base + "cpuManagerPolicy: STATIC\nreservedSystemCPUs: \"0,32\"\n")
    assert (proc.returncode, text) == (1, base + "cpuManagerPolicy: static\nreservedSystemCPUs: \"0,32\"\n")
    (tmp_path / "all.yaml").write_text("scope: all\n")
    for policy, reserved, reason in [
        ("Static", "", "no CPUs are reserved for the system (reservedSystemCPUs, kubeReserved.cpu, systemReserved.cpu), "
                       "without which the kubelet refuses the static policy too (NG207): which CPUs to reserve is yours "
                       "to choose"),
        ("Static", 'reservedSystemCPUs: "0-x"\n', "reservedSystemCPUs cannot be read (NG209): correct it first; the "
                                                  "static policy needs the CPUs it reserves"),
        ("dynamic", 'reservedSystemCPUs: "0"\n', "'dynamic' is no spelling of a policy the kubelet knows (none, "
                                                 "static): which one was meant is yours to say"),
        ("none", 'reservedSystemCPUs: "0"\n', "the static policy is not chosen here: turning it on changes how every "
                                              "pod on the node gets CPUs, needs CPUs reserved for the system and a drain "
                                              "(removing /var/lib/kubelet/cpu_manager_state); that is yours to decide")]:
        source = base + f"cpuManagerPolicy: {policy}\n" + reserved
        proc, text = _fix(tmp_path, source, "x.yaml", "--config", "all.yaml")
        assert (proc.returncode, text, proc.stdout) == (0, source, "")
        assert proc.stderr == f"x.yaml:3: NG203 left alone: {reason}\n" \
                              "numaguard fix: 0 fix(es) in 0 file(s) applied; 1 finding(s) left alone\n"


def test_ng210_deletes_only_a_removed_gate_set_to_the_value_its_removal_kept(tmp_path):
    base = "apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\n"
    # the last gate of the mapping: the comment lines below it stay, under the key above
    source = (base + "featureGates:\n  PodLevelResources: true\n  MemoryManager: true   # GA in 1.32\n\n"
              "  # set by the platform team\nmaxPods: 110\n")
    proc, text = _fix(tmp_path, source)
    assert proc.returncode == 1
    assert text == base + "featureGates:\n  PodLevelResources: true\n\n  # set by the platform team\nmaxPods: 110\n"
    # the only gate: featureGates goes with it; a 1.37 removal whose behaviour was kept (data)
    proc, text = _fix(tmp_path, base + "featureGates:\n  SidecarContainers: true\nmaxPods: 110\n")
    assert (proc.returncode, text) == (1, base + "maxPods: 110\n")
    assert proc.stdout == "kubelet.yaml:4: NG210 KubeletConfiguration: featureGates.SidecarContainers: true -> (not set)\n"
    # JSON stays JSON
    proc, text = _fix(tmp_path, json.dumps({"apiVersion": "kubelet.config.k8s.io/v1beta1",
                                            "kind": "KubeletConfiguration",
                                            "featureGates": {"TopologyManager": True, "PodLevelResources": True}},
                                           indent=2) + "\n", "kubelet.json")
    assert (proc.returncode, json.loads(text)["featureGates"]) == (1, {"PodLevelResources": True})
    for gates, reason in [
        ("CPUManager: false", "CPUManager: false asks for what the kubelet no longer does (the CPU Manager gate went GA "
                              "in 1.26 and was removed; the manager is always available and cpuManagerPolicy alone "
                              "selects it): whether the node can run without it is yours to decide"),
        ("GangScheduling: true", "GangScheduling was removed before it graduated (alpha in 1.35 and 1.36; removed in "
                                 "1.37, merged into GenericWorkload, kubernetes#139520): what replaces it is yours to set"),
        ("CPUManagerPolicyOptions: false", "CPUManagerPolicyOptions: false asks for what this kubelet cannot do (the gate "
                                           "is locked to true): whether the node can run without it is yours to decide"),
        ("PodLevelResourceManager: true", "PodLevelResourceManager is not a gate this kubelet knows: which gate was "
                                          "meant is yours to say")]:
        source = base + "featureGates:\n  " + gates + "\n"
        proc, text = _fix(tmp_path, source)
        assert (proc.returncode, text, proc.stdout) == (0, source, "")
        assert proc.stderr == f"kubelet.yaml:4: NG210 left alone: {reason}\n" \
                              "numaguard fix: 0 fix(es) in 0 file(s) applied; 1 finding(s) left alone\n"
