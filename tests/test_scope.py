"""Scope on real repositories (issue 7, "3. Scope"): which pods and KubeletConfigurations get
the resource-manager policy and which only the validity checks, kubelet drop-ins merged as the
kubelet merges them, lenient decoding of unknown KubeletConfiguration fields, and a node
description whose KubeletConfiguration does not fit the machine.

The real files are under tests/fixtures/realrepo/ (origins in its ORIGIN.md)."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from numaguard.lint.config import config_from_dict
from numaguard.lint.engine import lint_documents
from numaguard.lint.load.documents import load_paths, load_text

from conftest import FIXTURES, run_cli, summary

REAL = FIXTURES / "realrepo"
WEBSITE = REAL / "website"
KUBELET = REAL / "kubelet"
POOL_CONFIG = {"pool": {"nodeLabels": {"node.example.com/pool": "numa"},
                        "taint": {"key": "node.example.com/pool", "value": "numa",
                                  "effect": "NoSchedule"}}}


def lint_paths(*paths: Path, settings: dict | None = None, base_dir: str = "."):
    documents, errors = [], []
    for _source, docs, errs in load_paths([str(p) for p in paths]):
        documents.extend(docs)
        errors.extend(errs)
    config = config_from_dict(settings or {}, base_dir=base_dir)
    return lint_documents(documents, config=config, load_errors=errors)


def lint_text(text: str, source: str = "x.yaml", settings: dict | None = None, **kw):
    docs, errors = load_text(text, source)
    return lint_documents(docs, config=config_from_dict(settings or {}), load_errors=errors, **kw)


def found(result) -> list[tuple[str, str, int, int, str]]:
    return [(Path(f.file).name if f.file else None, f.rule, f.line, f.column, f.severity.value)
            for f in result.active]


# --------------------------------------------------------------------------- website pods

# What numaguard says about the Kubernetes website's pod-level resource examples with no pool
# configured: every pod declaring pod-level cpu/memory is assumed to be meant for a pool, and
# its policy findings are warnings; only what the API server refuses (NG102) is an error.
WEBSITE_NO_POOL = [
    ("pod-level-cpu-request-limit.yaml", "NG103", 15, 14, "warning"),
    ("pod-level-cpu-request-limit.yaml", "NG104", 15, 14, "warning"),
    ("pod-level-memory-request-limit.yaml", "NG103", 12, 17, "warning"),
    ("pod-level-pid-limit.yaml", "NG102", 9, 13, "error"),
    ("pod-level-resize.yaml", "NG112", 11, 14, "info"),
    ("pod-level-resize.yaml", "NG113", 12, 22, "info"),
    ("pod-level-resize.yaml", "NG113", 15, 10, "info"),
    ("pod-level-resize.yaml", "NG113", 28, 22, "info"),
    ("pod-level-resize.yaml", "NG113", 31, 10, "info"),
    ("pod-level-resize.yaml", "NG110", 36, 16, "info"),
    ("pod-level-resize.yaml", "NG104", 38, 14, "warning"),
    ("pod-level-resource-managers-container-scope-mixed.yaml", "NG110", 17, 5, "info"),
    ("pod-level-resource-managers-container-scope-mixed.yaml", "NG112", 25, 12, "info"),
    ("pod-level-resource-managers-container-scope-mixed.yaml", "NG112", 36, 12, "info"),
    ("pod-level-resource-managers-container-scope-mixed.yaml", "NG112", 38, 12, "info"),
    ("pod-level-resource-managers-empty-shared-pool.yaml", "NG107", 17, 12, "warning"),
    ("pod-level-resource-managers-empty-shared-pool.yaml", "NG107", 18, 15, "warning"),
    ("pod-level-resource-managers-empty-shared-pool.yaml", "NG112", 24, 12, "info"),
    ("pod-level-resource-managers-empty-shared-pool.yaml", "NG112", 34, 12, "info"),
    ("pod-level-resource-managers-empty-shared-pool.yaml", "NG112", 38, 12, "info"),
    ("pod-level-resource-managers-pod-scope-mixed.yaml", "NG110", 16, 5, "info"),
    ("pod-level-resource-managers-pod-scope-mixed.yaml", "NG112", 24, 12, "info"),
    ("pod-level-resource-managers-pod-scope-mixed.yaml", "NG112", 27, 12, "info"),
    ("pod-level-resource-managers-pod-scope-mixed.yaml", "NG112", 31, 12, "info"),
    ("pod-level-resources.yaml", "NG103", 13, 15, "warning"),
]


def test_website_examples_without_a_pool_are_taken_as_pool_pods():
    result = lint_paths(WEBSITE)
    assert found(result) == WEBSITE_NO_POOL
    assert (result.summary.objects, result.summary.assumed_managed) == (8, 7)
    assert result.summary.as_dict()["assumedManaged"] == 7


def test_website_examples_outside_a_configured_pool_get_validity_checks_only():
    # With the pool named, none of these pods targets it: only what the API server rejects
    # remains, and of these examples only the PID limit one is rejected by a 1.37 API server.
    result = lint_paths(WEBSITE, settings=POOL_CONFIG)
    assert found(result) == [("pod-level-pid-limit.yaml", "NG102", 9, 13, "error")]
    assert result.summary.assumed_managed == 0
    (finding,) = result.active
    assert "PerPodPIDLimit gate (KEP-6063) was moved to alpha in 1.38" in finding.message
    assert finding.remediation.startswith("Delete spec.resources.limits.pids")


ASSUMED_HINT = (
    "7 pod(s) with pod-level cpu/memory were assumed to be meant for a managed pool because no pool "
    "is configured, so their policy findings are warnings, not errors; to enforce the policy, declare "
    "the pools in .numaguard.yaml (pools: nodeLabels, taint) or annotate the pools' pods "
    "numaguard.io/scope: managed")


def test_text_summary_says_how_many_pods_were_assumed_and_what_to_configure(tmp_path):
    proc = run_cli("lint", str(WEBSITE), cwd=tmp_path)
    assert proc.returncode == 1          # NG102: a 1.37 API server refuses limits.pids
    assert proc.stdout.splitlines()[-2:] == [
        "8 file(s), 8 object(s) checked, 0 skipped, 0 opted out, 7 assumed managed: 1 error(s), "
        "7 warning(s), 17 info, 0 suppressed", ASSUMED_HINT]
    report = json.loads(run_cli("lint", "--format", "json", str(WEBSITE), cwd=tmp_path).stdout)
    assert (report["summary"]["assumedManaged"], report["summary"]["assumedHint"]) == (7, ASSUMED_HINT)
    assert (report["summary"]["error"], report["summary"]["warning"]) == (1, 7)


def test_website_examples_pass_ci_when_no_pool_is_configured(tmp_path):
    """Issue 13 §3: the website's own pod-level resources examples are valid pods that use
    spec.resources as a budget; with no pool configured they no longer fail CI (NG103/NG104
    are warnings). The PID limit example is refused by a 1.37 API server (NG102, an error) and
    valid from 1.38."""
    examples = sorted(str(p) for p in WEBSITE.iterdir() if p.name != "pod-level-pid-limit.yaml")
    proc = run_cli("lint", *examples, cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout
    assert proc.stdout.splitlines()[-2] == (
        "7 file(s), 7 object(s) checked, 0 skipped, 0 opted out, 7 assumed managed: 0 error(s), "
        "7 warning(s), 17 info, 0 suppressed")
    (tmp_path / "k8s-1.38.yaml").write_text('kubernetesVersion: "1.38"\n')
    assert run_cli("lint", "--config", "k8s-1.38.yaml", str(WEBSITE), cwd=tmp_path).returncode == 0


def test_declared_pool_or_opt_in_makes_policy_findings_errors():
    """A pool that pods can target, `scope: all` or the managed annotation: the same pod's
    policy findings are errors again."""
    import yaml
    pod = yaml.safe_load((WEBSITE / "pod-level-cpu-request-limit.yaml").read_text())

    def severities(obj: dict, settings: dict | None = None) -> list[tuple[str, str]]:
        result = lint_documents([obj], config=config_from_dict(settings or {}))
        return [(f.rule, f.severity.value) for f in result.active]

    assert severities(pod) == [("NG103", "warning"), ("NG104", "warning")]
    assert severities(pod, {"scope": "all"}) == [("NG103", "error"), ("NG104", "error")]
    annotated = {**pod, "metadata": {**pod["metadata"], "annotations": {"numaguard.io/scope": "managed"}}}
    assert severities(annotated) == [("NG103", "error"), ("NG104", "error")]
    targeted = {**pod, "spec": {**pod["spec"], "nodeSelector": {"node.example.com/pool": "numa"}}}
    assert severities(targeted, POOL_CONFIG) == [("NG103", "error"), ("NG104", "error"), ("NG111", "warning")]
    # A pool recognised by its kubelet configurations alone gives pods nothing to target.
    assert severities(pod, {"pool": {"kubeletConfigs": ["nodes/**"]}}) == [("NG103", "warning"),
                                                                          ("NG104", "warning")]
    # Issue 21 §1 (the opposite before): a severity the config sets applies as written on an
    # assumed pod too; the rules it does not name stay lowered.
    assert severities(pod, {"rules": {"NG104": "error"}}) == [("NG103", "warning"), ("NG104", "error")]


# --------------------------------------------------------------------------- pod scope, one case each

BURSTABLE = """apiVersion: v1
kind: Pod
metadata:
  name: p
  annotations: {ANNOTATIONS}
spec:
  {EXTRA}
  resources:
    requests: {cpu: "1", memory: 1Gi}
    limits: {cpu: "2", memory: 1Gi}
  containers:
  - name: app
    image: app
    resources: {requests: {cpu: 500m}, limits: {cpu: "3"}}
"""


def pod_text(annotations: str = "{}", extra: str = "hostNetwork: false") -> str:
    return BURSTABLE.replace("{ANNOTATIONS}", annotations).replace("{EXTRA}", extra)


@pytest.mark.parametrize("annotations,extra,settings,expected", [
    # no pool configured: pod-level cpu/memory -> taken as a pool pod (policy + validity)
    ("{}", "hostNetwork: false", {}, ["NG103", "NG106"]),
    # pool configured, the pod selects it -> policy + validity
    ("{}", "nodeSelector: {node.example.com/pool: numa}", POOL_CONFIG, ["NG103", "NG106", "NG111"]),
    # pool configured, the pod tolerates its taint -> policy + validity
    ("{}", "tolerations: [{key: node.example.com/pool, operator: Exists}]", POOL_CONFIG,
     ["NG103", "NG106", "NG111"]),
    # pool configured, the pod targets other nodes -> validity only (NG106: the API rejects it)
    ("{}", "nodeSelector: {node.example.com/pool: gpu}", POOL_CONFIG, ["NG106"]),
    # annotated managed -> policy + validity, pool or not
    ("{numaguard.io/scope: managed}", "hostNetwork: false", POOL_CONFIG, ["NG103", "NG106"]),
    # scope: all -> every pod
    ("{}", "hostNetwork: false", {**POOL_CONFIG, "scope": "all"}, ["NG103", "NG106"]),
    # opted out -> nothing at all
    ("{numaguard.io/scope: unmanaged}", "hostNetwork: false", {}, []),
])
def test_pod_scope_cases(annotations, extra, settings, expected):
    result = lint_text(pod_text(annotations, extra), settings=settings)
    assert sorted(f.rule for f in result.active) == expected


def test_no_ng002_for_a_pod_that_is_not_checked():
    broken = "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  containers: oops\n"
    assert found(lint_text(broken)) == []
    annotated = broken.replace("{name: p}", "{name: p, annotations: {numaguard.io/scope: managed}}")
    assert found(lint_text(annotated)) == [("x.yaml", "NG002", 5, 15, "error")]
    # pod-level resources make it validity-checked, and NG002 is validity
    with_resources = broken + "  resources: {limits: {cpu: '1', memory: 1Gi}}\n"
    assert [f.rule for f in lint_text(with_resources, settings=POOL_CONFIG).active] == ["NG002"]


def test_a_pod_whose_only_pod_level_resource_is_pids_is_no_resource_manager_pod():
    text = (WEBSITE / "pod-level-pid-limit.yaml").read_text()
    result = lint_text(text)
    assert [f.rule for f in result.active] == ["NG102"]     # validity only: no NG101, no NG112
    assert result.summary.assumed_managed == 0


@pytest.mark.parametrize("resources,expected", [
    ("{limits: {pids: '2048'}}", []),
    ("{limits: {pids: '64'}}", ["spec.resources.limits[pids]: Invalid value: \"64\": must be an "
                                "integer between 128 and 16384 (PerPodPIDLimit, KEP-6063)"]),
    ("{requests: {pids: '2048'}, limits: {pids: '2048'}}",
     ["spec.resources.requests[pids]: Forbidden: pids may only be set in spec.resources.limits "
      "(PerPodPIDLimit, KEP-6063); move it to limits"]),
])
def test_pids_from_1_38(resources, expected):
    text = f"apiVersion: v1\nkind: Pod\nmetadata: {{name: p}}\nspec:\n  resources: {resources}\n" \
           "  containers: [{name: a, image: app}]\n"
    result = lint_text(text, settings={"kubernetesVersion": "1.38"})
    assert [f.message for f in result.active if f.rule == "NG102"] == expected


def test_request_above_limit_is_validity_ng114():
    text = ("apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n"
            "  nodeSelector: {node.example.com/pool: gpu}\n"
            "  resources: {requests: {cpu: '2', memory: 1Gi}, limits: {cpu: '1', memory: 1Gi}}\n"
            "  containers: [{name: a, image: app}]\n")
    (f,) = lint_text(text, settings=POOL_CONFIG).active
    assert (f.rule, f.line, f.column) == ("NG114", 6, 31)
    assert f.message == ("spec.resources.requests[cpu]: Invalid value: \"2\": must be less than or "
                         "equal to cpu limit of 1 — the API server rejects the pod; set "
                         "requests.cpu: \"1\" (or raise limits.cpu)")


# --------------------------------------------------------------------------- KubeletConfigurations

def test_eks_kubeadm_and_hard_way_kubelet_configs_get_no_finding():
    result = lint_paths(KUBELET)
    assert found(result) == []
    # EKS: config.json and its drop-in are one configuration; kubeadm's; the hard way's
    assert result.summary.objects == 3


def test_the_same_configs_under_scope_all_are_judged_as_pool_configs():
    result = lint_paths(KUBELET / "kubeadm", settings={"scope": "all"})
    assert sorted({f.rule for f in result.active}) == ["NG202", "NG203", "NG204", "NG205", "NG206"]


def test_a_config_named_by_pool_kubelet_configs_is_a_pool_config(tmp_path):
    shutil.copytree(KUBELET / "kthw", tmp_path / "kthw")
    settings = {"pool": {"kubeletConfigs": ["kthw/*.yaml"]}}
    result = lint_paths(tmp_path / "kthw", settings=settings, base_dir=str(tmp_path))
    assert sorted({f.rule for f in result.active}) == ["NG202", "NG203", "NG204", "NG205", "NG206"]
    other = lint_paths(tmp_path / "kthw", settings={"pool": {"kubeletConfigs": ["nodes/**"]}},
                       base_dir=str(tmp_path))
    assert found(other) == []


def test_a_config_showing_intent_is_a_pool_config():
    text = "apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\n" \
           "cpuManagerPolicy: static\nreservedSystemCPUs: '0'\n"
    assert sorted({f.rule for f in lint_text(text).active}) == ["NG202", "NG204", "NG205", "NG206"]


def test_what_stops_any_kubelet_is_reported_outside_the_pool():
    text = ("apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\n"
            "featureGates: {CPUManager: true, PodLevelResources: false}\n"
            "reservedSystemCPUs: '0-x'\n")
    result = lint_text(text)
    assert [(f.rule, f.line, f.column) for f in result.active] == [
        ("NG210", 3, 28), ("NG201", 3, 53), ("NG209", 4, 21)]
    ng201 = next(f for f in result.active if f.rule == "NG201")
    assert "the kubelet also refuses to start" in ng201.message


def test_misspelled_field_is_ng002_and_the_kubelet_default_is_judged():
    text = ("apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\n"
            "featureGates: {PodLevelResourceManagers: true}\n"
            "CpuManagerPolicy: static\nmemoryManagerPolicy: Static\n"
            "topologyManagerPolicy: single-numa-node\ntopologyManagerScope: pod\n"
            "reservedMemory: [{numaNode: 0, limits: {memory: 100Mi}}]\n")
    result = lint_text(text)
    assert [(f.rule, f.line, f.column) for f in result.active] == [("NG203", 1, 1), ("NG002", 4, 19)]
    ng203, ng002 = result.active
    assert ng203.message == ("cpuManagerPolicy is not set (default none): no pod or container gets "
                             "exclusive CPUs")
    assert ng002.remediation == (
        "Rename or delete the field: write `cpuManagerPolicy` (KubeletConfiguration field names "
        "are case-sensitive camelCase), or delete `CpuManagerPolicy`; the kubelet ignores names "
        "it does not know.")


def test_a_type_error_still_stops_the_other_kubelet_checks():
    text = ("apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\n"
            "cpuManagerPolicy: static\nmaxPods: many\n")
    assert [f.rule for f in lint_text(text).active] == ["NG002"]


# --------------------------------------------------------------------------- drop-ins

NUMA_DROPIN = """{
    "kind": "KubeletConfiguration",
    "apiVersion": "kubelet.config.k8s.io/v1beta1",
    "featureGates": {"PodLevelResourceManagers": true},
    "cpuManagerPolicy": "static",
    "memoryManagerPolicy": "Static",
    "topologyManagerPolicy": "single-numa-node",
    "topologyManagerScope": "container",
    "reservedSystemCPUs": "0,1",
    "reservedMemory": [{"numaNode": 0, "limits": {"memory": "993Mi"}}]
}
"""


def eks_tree(tmp_path: Path) -> Path:
    shutil.copytree(KUBELET / "eks", tmp_path / "eks")
    return tmp_path / "eks"


def test_eks_drop_in_is_merged_over_its_main_file_and_findings_point_at_their_file(tmp_path):
    eks = eks_tree(tmp_path)
    (eks / "config.json.d" / "50-numa.conf").write_text(NUMA_DROPIN)
    result = lint_paths(eks / "config.json", eks / "config.json.d" / "40-nodeadm.conf",
                        eks / "config.json.d" / "50-numa.conf")
    assert found(result) == [
        # the main file's kubeReserved.cpu is discarded once reservedSystemCPUs is set (NG221)
        ("config.json", "NG221", 52, 16, "info"),
        # no pool names the files, but the drop-in turns PodLevelResourceManagers on, which
        # declares the merged configuration (issue 21 §1; a warning before): its pool
        # requirement is an error (counted once) ...
        ("50-numa.conf", "NG205", 8, 29, "error"),
        # ... while reservedSystemCPUs (drop-in) with the main file's
        # kube/systemReservedCgroup is refused by the kubelet: an error
        ("50-numa.conf", "NG209", 9, 27, "error"),
    ]
    # kubeReserved.memory 893Mi (main) + evictionHard 100Mi = 993Mi: reservedMemory matches
    assert (result.summary.objects, result.summary.assumed_kubelets) == (1, 0)
    assert result.summary.declared["kubeletConfigurations"] == {"pool": 0, "scopeAll": 0, "gate": 1, "assumed": 0}


def test_the_command_line_finds_the_drop_in_directory_next_to_the_main_file(tmp_path):
    eks = eks_tree(tmp_path)
    (eks / "config.json.d" / "50-numa.conf").write_text(NUMA_DROPIN.replace('"993Mi"', '"1Gi"'))
    proc = run_cli("lint", "--format", "json", "config.json", cwd=eks)
    report = json.loads(proc.stdout)
    assert proc.returncode == 1
    assert [(f["file"], f["rule"], f["line"]) for f in report["findings"]] == [
        ("config.json", "NG221", 52),
        ("config.json.d/50-numa.conf", "NG205", 8),
        ("config.json.d/50-numa.conf", "NG209", 9),
        ("config.json.d/50-numa.conf", "NG208", 10),
    ]
    assert report["summary"]["files"] == 3 and report["summary"]["objects"] == 1


def test_a_drop_in_alone_is_not_judged_as_a_whole_configuration(tmp_path):
    eks = eks_tree(tmp_path)
    (eks / "config.json.d" / "50-numa.conf").write_text(NUMA_DROPIN)
    result = lint_paths(eks / "config.json.d")
    assert found(result) == []


def test_drop_in_merge_is_a_json_merge_patch():
    from numaguard.lint.k8s.kubelet_dropin import dropin_owner, merge_kubelet_configs

    main = {"kind": "KubeletConfiguration", "clusterDNS": ["1.1.1.1"],
            "kubeReserved": {"cpu": "1", "memory": "1Gi"}, "maxPods": 10}
    merged = merge_kubelet_configs(main, [
        {"kind": "KubeletConfiguration", "clusterDNS": ["2.2.2.2", "3.3.3.3"],
         "kubeReserved": {"memory": "2Gi"}, "maxPods": None},
        {"evictionHard": {"nodefs.available": "5%"}}])
    assert merged == {"kind": "KubeletConfiguration", "clusterDNS": ["2.2.2.2", "3.3.3.3"],
                      "kubeReserved": {"cpu": "1", "memory": "2Gi"},
                      # the kubelet merges over its defaulted main config: default signals stay
                      "evictionHard": {"memory.available": "100Mi", "nodefs.available": "5%",
                                       "nodefs.inodesFree": "5%", "imagefs.available": "15%"}}
    assert dropin_owner("etc/kubelet/config.json.d/40-nodeadm.conf") == "etc/kubelet/config.json"
    assert dropin_owner("etc/kubelet/config.json.d/sub/x.conf") == "etc/kubelet/config.json"
    assert dropin_owner("etc/kubelet/config.json.d/x.yaml") is None
    assert dropin_owner("etc/kubelet/x.conf") is None


# --------------------------------------------------------------------------- --node

NODE = """apiVersion: numaguard.io/v1alpha1
kind: NodeProfile
metadata: {name: small}
spec:
  topology: {sockets: 1, numaNodesPerSocket: 1, coresPerNumaNode: 4, threadsPerCore: 2,
             memoryPerNumaNode: 16Gi}
  kubeletConfig: kubelet.yaml
"""
NODE_KUBELET = """apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
featureGates: {PodLevelResourceManagers: true}
cpuManagerPolicy: static
memoryManagerPolicy: Static
topologyManagerPolicy: single-numa-node
topologyManagerScope: pod
reservedSystemCPUs: "0,4,64"
reservedMemory:
- numaNode: 0
  limits: {memory: 20Gi}
"""
POD = """apiVersion: v1
kind: Pod
metadata: {name: p}
spec:
  resources: {requests: {cpu: "2", memory: 1Gi}, limits: {cpu: "2", memory: 1Gi}}
  containers: [{name: a, image: app}]
"""


def test_node_whose_kubelet_config_does_not_fit_is_a_finding_not_exit_2(tmp_path):
    (tmp_path / "node.yaml").write_text(NODE)
    (tmp_path / "kubelet.yaml").write_text(NODE_KUBELET)
    (tmp_path / "pod.yaml").write_text(POD)
    proc = run_cli("lint", "--format", "json", "--node", "node.yaml", "pod.yaml", cwd=tmp_path)
    assert proc.returncode == 1, proc.stderr
    report = json.loads(proc.stdout)
    assert [(f["file"], f["rule"], f["line"], f["column"], f["path"]) for f in report["findings"]
            if f["severity"] == "error"] == [
        ("kubelet.yaml", "NG209", 8, 21, "reservedSystemCPUs"),
        ("kubelet.yaml", "NG208", 10, 1, "reservedMemory"),
        ("kubelet.yaml", "NG208", 11, 20, "reservedMemory[0].limits.memory"),
    ]
    assert report["findings"][0]["message"] == (
        "the kubelet refuses to start: reserved-cpus: 0,4,64 is not a subset of online-cpus: 0-7 "
        "(missing: 64)")
    assert "reserves 20Gi of memory on NUMA node 0, which has only 16Gi" in \
        report["findings"][2]["message"]
    # the pod is still linted (its NG110 info is there)
    assert [f["rule"] for f in report["findings"] if f["file"] == "pod.yaml"] == ["NG110"]
    assert report["summary"]["files"] == 2


def test_node_description_that_cannot_be_read_is_still_exit_2(tmp_path):
    (tmp_path / "node.yaml").write_text("apiVersion: numaguard.io/v1alpha1\nkind: NodeProfile\n"
                                        "metadata: {name: x}\nspec: {topology: {}}\n")
    (tmp_path / "pod.yaml").write_text(POD)
    proc = run_cli("lint", "--node", "node.yaml", "pod.yaml", cwd=tmp_path)
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines()[-1].startswith("Error: node.yaml: spec.topology: ")


def test_mixed_tree_of_real_files_has_no_error_but_the_true_one(tmp_path):
    # The website's pod examples and the EKS, kubeadm and hard-way kubelet configurations in
    # one repository with the pool named: the only error is the one a 1.37 API server raises.
    shutil.copytree(REAL, tmp_path / "repo", ignore=shutil.ignore_patterns("mixed-tree"))  # test_realrepo's
    (tmp_path / "repo" / ".numaguard.yaml").write_text(
        "pool:\n  nodeLabels: {node.example.com/pool: numa}\n")
    proc = run_cli("lint", "--format", "json", ".", cwd=tmp_path / "repo")
    report = json.loads(proc.stdout)
    assert proc.returncode == 1
    assert [(f["file"], f["rule"], f["line"]) for f in report["findings"]] == [
        ("./website/pod-level-pid-limit.yaml", "NG102", 9)]
    assert report["summary"] == {"files": 12, "objects": 11, "skipped": 0,
                                 "skippedByReason": {"not-kubernetes": 0, "template": 0, "patch": 0,
                                                     "unknown-kind": 0, "dangling-symlink": 0, "deletion": 0},
                                 "unmanaged": 0, "assumedManaged": 0, "assumedKubelets": 0, "assumedHint": None,
                                 "declaredBy": summary()["declaredBy"], "error": 1, "warning": 0,
                                 "info": 0, "suppressed": 0, "hint": None}
