"""Pools are declared, never guessed, for kubelet configurations too (issue 13 §2/§3, cause B of
research/realrepos.md): a configuration held to the pool requirements only because it shows the
intent through a manager policy, that no declared pool names or selects and that leaves the
PodLevelResourceManagers gate off (the gate declares it: test_declared_tiers.py), gets its
pool-requirement findings at warning; what makes the kubelet refuse to start
stays an error. A pool naming or selecting it, or `scope: all`, makes them errors again."""
from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import yaml

from numaguard.lint.cluster.audit import judge_objects
from numaguard.lint.config import config_from_dict
from numaguard.lint.engine import lint_documents
from numaguard.lint.load.documents import load_text

from conftest import run_cli
from test_pools import CNF_POOL as CNF_POOL_TEXT, PERFORMANCE_PROFILE

# Shows the intent (cpuManagerPolicy static, a topology policy) but leaves the scope at
# container (NG205, a pool requirement) and writes a CPU list the kubelet cannot parse (NG209).
# It leaves PodLevelResourceManagers off (NG202, a pool requirement): the gate would declare it.
KUBELET = """\
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
featureGates: {PodLevelResourceManagers: false}
cpuManagerPolicy: static
memoryManagerPolicy: Static
topologyManagerPolicy: single-numa-node
reservedSystemCPUs: "0-1,x"
reservedMemory:
  - numaNode: 0
    limits: {memory: 100Mi}
"""
NG209_MESSAGE = ('the kubelet refuses to start: invalid configuration: unable to parse reservedSystemCPUs '
                 '(--reserved-cpus) 0-1,x, error: strconv.Atoi: parsing "x": invalid syntax')
ASSUMED_KUBELET_HINT = (
    "1 kubelet configuration(s) set a NUMA manager policy, but no declared pool names or selects them and "
    "they leave the PodLevelResourceManagers gate off, so their pool requirements are warnings, not errors; "
    "to enforce them, turn the gate on, name their files in a pool's kubeletConfigs in .numaguard.yaml (a "
    "platform object that selects nodes joins the pool whose nodeLabels it selects) or set scope: all")


def lint(text: str, settings: dict | None = None, name: str = "kubelet.yaml"):
    docs, errors = load_text(text, name)
    return lint_documents(docs, config=config_from_dict(settings or {}), load_errors=errors)


def rows(result) -> list[tuple]:
    return [(f.rule, f.severity.value, f.line, f.column, f.path) for f in result.active]


def write(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    return root


# --------------------------------------------------------------------------- KubeletConfiguration

def test_an_assumed_configuration_warns_on_pool_requirements_and_fails_on_refusals():
    result = lint(KUBELET)
    assert rows(result) == [("NG205", "warning", 1, 1, ""),
                            ("NG202", "warning", 3, 42, "featureGates.PodLevelResourceManagers"),
                            ("NG209", "error", 7, 21, "reservedSystemCPUs")]
    assert result.active[2].message == NG209_MESSAGE
    assert (result.summary.assumed_kubelets, result.summary.assumed_managed) == (1, 0)
    assert (result.summary.counts["error"], result.summary.counts["warning"]) == (1, 2)
    assert result.summary.assumed_hint() == ASSUMED_KUBELET_HINT
    assert (result.summary.as_dict()["assumedKubelets"], result.summary.as_dict()["assumedHint"]) == (
        1, ASSUMED_KUBELET_HINT)


def test_text_and_json_summaries_count_the_assumed_configuration(tmp_path):
    write(tmp_path, {"kubelet.yaml": KUBELET})
    proc = run_cli("lint", "kubelet.yaml", cwd=tmp_path)
    assert proc.returncode == 1                     # NG209 is an error
    assert proc.stdout.splitlines()[-3:] == [
        "tiers: 1 kubelet configuration(s) assumed",
        "1 file(s), 1 object(s) checked, 0 skipped, 0 opted out, 1 kubelet config(s) assumed: 1 error(s), "
        "2 warning(s), 0 info, 0 suppressed", ASSUMED_KUBELET_HINT]
    report = json.loads(run_cli("lint", "--format", "json", "kubelet.yaml", cwd=tmp_path).stdout)
    assert {k: report["summary"][k] for k in ("assumedManaged", "assumedKubelets", "assumedHint", "error",
                                               "warning")} == {
        "assumedManaged": 0, "assumedKubelets": 1, "assumedHint": ASSUMED_KUBELET_HINT, "error": 1, "warning": 2}
    assert report["summary"]["declaredBy"]["kubeletConfigurations"] == {
        "pool": 0, "scopeAll": 0, "gate": 0, "assumed": 1}
    # Without the refusal the assumed configuration passes CI: its pool requirement is a warning.
    write(tmp_path, {"kubelet.yaml": KUBELET.replace(',x"', '"')})
    assert run_cli("lint", "kubelet.yaml", cwd=tmp_path).returncode == 0


def test_pods_and_kubelet_configurations_assumed_in_one_run_get_one_hint_of_two_sentences(tmp_path):
    pod = ("apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  resources: {limits: {cpu: '1', memory: 1Gi}}\n"
           "  containers: [{name: app, image: registry.example.com/app:1}]\n")
    write(tmp_path, {"kubelet.yaml": KUBELET, "pod.yaml": pod})
    report = json.loads(run_cli("lint", "--format", "json", ".", cwd=tmp_path).stdout)
    summary = report["summary"]
    assert (summary["assumedManaged"], summary["assumedKubelets"]) == (1, 1)
    assert summary["assumedHint"] == (
        "1 pod(s) with pod-level cpu/memory were assumed to be meant for a managed pool because no pool is "
        "configured, so their policy findings are warnings, not errors; to enforce the policy, declare the "
        "pools in .numaguard.yaml (pools: nodeLabels, taint) or annotate the pools' pods numaguard.io/scope: "
        "managed. " + ASSUMED_KUBELET_HINT)
    lines = run_cli("lint", ".", cwd=tmp_path).stdout.splitlines()
    assert lines[-3] == "tiers: 1 pod(s) assumed, 1 kubelet configuration(s) assumed"
    assert lines[-2].startswith("2 file(s), 2 object(s) checked, 0 skipped, 0 opted out, 1 assumed managed, "
                                "1 kubelet config(s) assumed: ")
    assert lines[-1] == summary["assumedHint"]


def test_the_same_file_named_by_a_pool_fails_on_its_pool_requirements(tmp_path):
    write(tmp_path, {"nodes/kubelet.yaml": KUBELET, ".numaguard.yaml": "pool:\n  kubeletConfigs: [nodes/**]\n"})
    proc = run_cli("lint", "--format", "json", ".", cwd=tmp_path)
    assert proc.returncode == 1
    report = json.loads(proc.stdout)
    assert [(f["rule"], f["severity"], f["line"], f["column"]) for f in report["findings"]] == [
        ("NG205", "error", 1, 1), ("NG202", "error", 3, 42), ("NG209", "error", 7, 21)]
    assert (report["summary"]["assumedKubelets"], report["summary"]["assumedHint"]) == (0, None)
    assert report["summary"]["declaredBy"]["kubeletConfigurations"]["pool"] == 1
    # A pool naming another file leaves this one assumed.
    write(tmp_path, {".numaguard.yaml": "pool:\n  kubeletConfigs: [other/**]\n"})
    report = json.loads(run_cli("lint", "--format", "json", ".", cwd=tmp_path).stdout)
    assert [(f["rule"], f["severity"]) for f in report["findings"]] == [
        ("NG205", "warning"), ("NG202", "warning"), ("NG209", "error")]
    assert report["summary"]["assumedKubelets"] == 1


def test_scope_all_makes_the_pool_requirements_errors():
    result = lint(KUBELET, {"scope": "all"})
    assert rows(result) == [("NG205", "error", 1, 1, ""),
                            ("NG202", "error", 3, 42, "featureGates.PodLevelResourceManagers"),
                            ("NG209", "error", 7, 21, "reservedSystemCPUs")]
    assert (result.summary.assumed_kubelets, result.summary.assumed_hint()) == (0, None)


def test_a_configuration_that_shows_no_intent_is_not_assumed():
    plain = KUBELET.replace("cpuManagerPolicy: static\nmemoryManagerPolicy: Static\n"
                            "topologyManagerPolicy: single-numa-node\n", "").replace(
        "featureGates: {PodLevelResourceManagers: false}\n", "")
    result = lint(plain)
    assert rows(result) == [("NG209", "error", 3, 21, "reservedSystemCPUs"),
                            ("NG222", "info", 5, 3, "reservedMemory")]
    assert (result.summary.assumed_kubelets, result.summary.assumed_hint()) == (0, None)


def test_a_severity_the_config_sets_applies_as_written_on_an_assumed_configuration():
    """Issue 21 §1 (this test said the opposite before): the assumed tier lowers the rules'
    default severities only; `rules: {NG205: error}` is an error on an assumed configuration
    too, and an override of a refusal applies as well. The rules it does not name stay lowered."""
    result = lint(KUBELET, {"rules": {"NG205": "error", "NG209": "warning"}})
    assert [(r, s) for r, s, *_ in rows(result)] == [("NG205", "error"), ("NG202", "warning"), ("NG209", "warning")]
    assert result.summary.assumed_kubelets == 1
    declared = lint(KUBELET, {"rules": {"NG205": "error"}, "scope": "all"})
    assert [(r, s) for r, s, *_ in rows(declared)] == [("NG205", "error"), ("NG202", "error"), ("NG209", "error")]


# NG201 is in both tiers: PodLevelResources off with every dependent gate off too starts a
# kubelet (a policy finding only); with a dependent gate left on the kubelet refuses to start.
PLR_OFF = """\
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
featureGates:
  PodLevelResources: false
  PodLevelResourcesFixDefaulting: false
  PodLevelResourcesFixKubeletQOSClass: false
  InPlacePodLevelResourcesVerticalScaling: false
cpuManagerPolicy: static
memoryManagerPolicy: Static
topologyManagerPolicy: single-numa-node
topologyManagerScope: pod
reservedSystemCPUs: "0-1"
reservedMemory:
  - numaNode: 0
    limits: {memory: 100Mi}
"""


def test_ng201_is_an_error_for_an_assumed_configuration_only_when_the_kubelet_refuses_to_start():
    assert [(r, s, line) for r, s, line, *_ in rows(lint(PLR_OFF)) if r == "NG201"] == [("NG201", "warning", 4)]
    assert [(r, s) for r, s, *_ in rows(lint(PLR_OFF, {"scope": "all"})) if r == "NG201"] == [("NG201", "error")]
    refused = lint(PLR_OFF.replace("  PodLevelResourcesFixDefaulting: false\n", ""))
    (ng201,) = [f for f in refused.active if f.rule == "NG201"]
    assert (ng201.severity.value, ng201.line) == ("error", 4)
    assert '"PodLevelResourcesFixDefaulting is enabled, but depends on features that are disabled: ' \
           '[PodLevelResources]"' in ng201.message


# --------------------------------------------------------------------------- drop-ins

MAIN = '{\n  "apiVersion": "kubelet.config.k8s.io/v1beta1",\n  "kind": "KubeletConfiguration"\n}\n'
DROPIN = """\
{
  "apiVersion": "kubelet.config.k8s.io/v1beta1",
  "kind": "KubeletConfiguration",
  "cpuManagerPolicy": "static",
  "topologyManagerScope": "container",
  "reservedSystemCPUs": "0-1,x"
}
"""


def test_a_merged_configuration_is_assumed_once_and_a_pool_naming_its_drop_in_declares_it(tmp_path):
    write(tmp_path, {"kubelet/config.json": MAIN, "kubelet/config.json.d/40-numa.conf": DROPIN})

    def findings() -> tuple[list[tuple], dict]:
        report = json.loads(run_cli("lint", "--format", "json", "kubelet", cwd=tmp_path).stdout)
        return ([(Path(f["file"]).name, f["rule"], f["severity"], f["line"], f["column"])
                 for f in report["findings"]], report["summary"])

    found, summary = findings()
    assert found == [("config.json", "NG202", "warning", 1, 1), ("config.json", "NG204", "warning", 1, 1),
                     ("config.json", "NG206", "warning", 1, 1),
                     ("40-numa.conf", "NG205", "warning", 5, 27), ("40-numa.conf", "NG209", "error", 6, 25)]
    assert (summary["objects"], summary["assumedKubelets"], summary["error"], summary["warning"]) == (1, 1, 1, 4)
    write(tmp_path, {".numaguard.yaml": 'pool:\n  kubeletConfigs: ["kubelet/config.json.d/*.conf"]\n'})
    found, summary = findings()
    assert [(name, rule, severity) for name, rule, severity, *_ in found] == [
        ("config.json", "NG202", "error"), ("config.json", "NG204", "error"), ("config.json", "NG206", "warning"),
        ("40-numa.conf", "NG205", "error"), ("40-numa.conf", "NG209", "error")]
    assert (summary["assumedKubelets"], summary["error"], summary["warning"]) == (0, 4, 1)


# --------------------------------------------------------------------------- platform carriers

# test_pools' PerformanceProfile is for the nodes labelled node-role.kubernetes.io/worker-cnf,
# which CNF_POOL declares as pool cnf (beside a pool of workers).
CNF_POOL = yaml.safe_load(CNF_POOL_TEXT)


def test_a_performance_profile_is_assumed_until_a_declared_pool_selects_it():
    """A profile always renders cpuManagerPolicy static (also for container-level alignment): in
    no pool its missing scope pod is a warning; selected by a declared pool's nodeLabels, an error."""
    assumed = lint(PERFORMANCE_PROFILE, name="profile.yaml")
    assert rows(assumed) == [("NG202", "warning", 5, 3, "spec"), ("NG205", "warning", 5, 3, "spec")]
    assert assumed.summary.assumed_kubelets == 1
    selected = lint(PERFORMANCE_PROFILE, CNF_POOL, name="profile.yaml")
    assert rows(selected) == [("NG202", "warning", 5, 3, "spec"), ("NG205", "error", 5, 3, "spec")]
    assert selected.summary.assumed_kubelets == 0
    # A pool of other nodes does not select it: still assumed.
    other = {"pools": [{"name": "workers", "nodeLabels": {"node-role.kubernetes.io/worker": ""}}]}
    assert [(r, s) for r, s, *_ in rows(lint(PERFORMANCE_PROFILE, other, name="profile.yaml"))] == [
        ("NG202", "warning"), ("NG205", "warning")]
    assert [(r, s) for r, s, *_ in rows(lint(PERFORMANCE_PROFILE, {"scope": "all"}, name="profile.yaml"))] == [
        ("NG202", "warning"), ("NG205", "error")]


EKSCTL_UBUNTU = """\
apiVersion: eksctl.io/v1alpha5
kind: ClusterConfig
metadata: {name: numa, region: eu-north-1}
nodeGroups:
  - name: cpu-a
    amiFamily: Ubuntu2204
    labels: {node.example.com/pool: cpu}
    kubeletExtraConfig:
      cpuManagerPolicy: static
      topologyManagerPolicy: single-numa-node
      topologyManagerScope: container
"""


def test_a_node_group_over_an_unknown_base_that_a_declared_pool_selects_is_not_assumed():
    """An eksctl node group on Ubuntu only overrides a base numaguard does not know; its labels
    put it in pool cpu, which is a declaration: what it shows is judged at the error tier."""
    at = ("nodeGroups[0].kubeletExtraConfig.topologyManagerScope",)
    assumed = lint(EKSCTL_UBUNTU, name="eksctl.yaml")
    assert rows(assumed) == [("NG205", "warning", 11, 29) + at]
    assert assumed.summary.assumed_kubelets == 1
    pooled = lint(EKSCTL_UBUNTU, {"pools": [{"name": "cpu", "nodeLabels": {"node.example.com/pool": "cpu"}}]},
                  name="eksctl.yaml")
    assert rows(pooled) == [("NG205", "error", 11, 29) + at]
    assert pooled.summary.assumed_kubelets == 0


def test_the_node_tuning_operator_profiles_and_renders_give_no_error_without_a_pool(tmp_path):
    """research/realrepos.md cause B: 30 PerformanceProfiles and 10 rendered KubeletConfigs of
    openshift/cluster-node-tuning-operator (tests/fixtures/assumed, ORIGIN.md), linted with no
    config: 36 errors before, all pool requirements of configurations no pool declares."""
    root = Path(__file__).parent / "fixtures" / "assumed"
    proc = run_cli("lint", "--format", "json", str(root), cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout
    summary = json.loads(proc.stdout)["summary"]
    assert {k: summary[k] for k in ("files", "objects", "error", "warning", "info", "assumedKubelets")} == {
        "files": 40, "objects": 40, "error": 0, "warning": 72, "info": 19, "assumedKubelets": 40}
    # Declaring the pools the profiles select (their nodeSelector roles) makes them errors again.
    (tmp_path / ".numaguard.yaml").write_text(
        "pools:\n- {name: cnf, nodeLabels: {node-role.kubernetes.io/worker-cnf: ''}}\n"
        "- {name: workers, nodeLabels: {node-role.kubernetes.io/worker: ''}}\n")
    declared = json.loads(run_cli("lint", "--format", "json", str(root), cwd=tmp_path).stdout)
    # 30 of the 40 select one of the pools (the others select master, performance or realtime
    # nodes), and the members of one pool are now compared (NG401)
    assert {k: declared["summary"][k] for k in ("error", "warning", "assumedKubelets")} == {
        "error": 63, "warning": 49, "assumedKubelets": 10}
    assert Counter(f["severity"] for f in declared["findings"] if f["rule"] == "NG205") == Counter(
        {"error": 22, "warning": 8})


def test_worker_processes_count_the_assumed_configurations_as_one_process_does():
    from numaguard.lint.cli.lint_files import LintSettings, lint_paths
    from numaguard.lint.config import Config
    from numaguard.lint.engine import Selection

    root = str(Path(__file__).parent / "fixtures" / "assumed")
    settings = LintSettings(config=Config(), selection=Selection(), node=None, pool_nodes={})
    one, _ = lint_paths([root], settings, jobs=1)
    two, _ = lint_paths([root], settings, jobs=2, parallel_from_bytes=0)
    assert (one.summary.assumed_kubelets, two.summary.assumed_kubelets) == (40, 40)
    assert two.summary.as_dict() == one.summary.as_dict()
    assert [f.as_dict() for f in two.findings] == [f.as_dict() for f in one.findings]


def test_a_value_the_kubelet_refuses_stays_an_error_in_an_assumed_configuration():
    """A policy rule's start-up refusal (an unknown scope, static CPUs with none reserved) is
    no pool requirement: an error whatever the pool."""
    refused = KUBELET.replace("topologyManagerPolicy: single-numa-node\n",
                              "topologyManagerPolicy: single-numa-node\ntopologyManagerScope: pods\n")
    result = lint(refused)
    assert [(r, s, line) for r, s, line, *_ in rows(result)] == [
        ("NG202", "warning", 3), ("NG205", "error", 7), ("NG209", "error", 8)]
    assert result.summary.assumed_kubelets == 1
    unreserved = KUBELET.replace('reservedSystemCPUs: "0-1,x"\n', "")
    assert [(r, s) for r, s, *_ in rows(lint(unreserved))] == [
        ("NG205", "warning"), ("NG207", "error"), ("NG202", "warning")]


# --------------------------------------------------------------------------- audit

NODE = {"apiVersion": "v1", "kind": "Node",
        "metadata": {"name": "worker-1", "labels": {"node.example.com/pool": "numa"}},
        "status": {"capacity": {"cpu": "4", "memory": "8Gi", "pods": "110"}}}


def test_audit_judges_a_live_configuration_of_a_declared_pool_at_the_error_tier():
    """`audit` names each node's configz (`node/NAME`) in the pools its node belongs to."""
    configz = yaml.safe_load(KUBELET)
    pooled = judge_objects([NODE], {}, {"worker-1": configz}, [], config=config_from_dict(
        {"pools": [{"name": "numa", "nodeLabels": {"node.example.com/pool": "numa"}}]}))
    kubelet = [(f.file, f.rule, f.severity.value) for f in pooled.active if f.rule in ("NG205", "NG209")]
    assert kubelet == [("node/worker-1", "NG205", "error"), ("node/worker-1", "NG209", "error")]
    assert pooled.summary.assumed_kubelets == 0
    # A node outside every declared pool: its configuration is only assumed.
    other = {**NODE, "metadata": {"name": "worker-1", "labels": {"node.example.com/pool": "gpu"}}}
    apart = judge_objects([other], {}, {"worker-1": configz}, [], config=config_from_dict(
        {"pools": [{"name": "numa", "nodeLabels": {"node.example.com/pool": "numa"}}]}))
    assert [(f.rule, f.severity.value) for f in apart.active if f.rule in ("NG205", "NG209")] == [
        ("NG205", "warning"), ("NG209", "error")]
    assert apart.summary.assumed_kubelets == 1
