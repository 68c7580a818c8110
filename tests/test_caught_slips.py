"""Faults that survived the last round of fault injection (issue 13 §7), each pinned by a test
that fails when the fault is planted: go-yaml's shortest timestamp, which annotations win
between a workload and its template, kubelet drop-in merging (defaults, order, which file a
finding names) and the PerformanceProfile rendering (DRA annotation, `restricted`)."""
from __future__ import annotations

import os

import pytest

from numaguard.lint.cli import lint_files
from numaguard.lint.engine import Selection, lint_documents
from numaguard.lint.k8s.kubelet import DEFAULT_EVICTION_HARD
from numaguard.lint.k8s.kubelet_dropin import merge_kubelet_configs
from numaguard.lint.platforms.openshift_kubelet_config import performance_profile
from numaguard.lint.load.documents import load_file, load_text
from numaguard.lint.load.kube_yaml import STR, TIMESTAMP, resolve_plain

# --------------------------------------------------------------------------- go-yaml timestamps


@pytest.mark.parametrize("text, expected", [
    ("2024-1-", (STR, "2024-1-")),                          # 7 characters: no layout fits
    ("2024-12", (STR, "2024-12")),
    ("2024-1-2", (TIMESTAMP, "2024-01-02T00:00:00Z")),      # 8: layout "2006-1-2", the shortest
    ("2024-1-02", (TIMESTAMP, "2024-01-02T00:00:00Z")),     # 9
    ("2024-11-2", (TIMESTAMP, "2024-11-02T00:00:00Z")),
])
def test_the_shortest_timestamp_go_yaml_reads_is_eight_characters(text, expected):
    assert resolve_plain(text) == expected
    documents, errors = load_text(f"apiVersion: v1\nkind: ConfigMap\ndata: {{since: {text}}}\n", "cm.yaml")
    assert errors == [] and documents[0].data["data"]["since"] == expected[1]


# --------------------------------------------------------------------------- annotations

def _deployment(workload: dict, template: dict) -> dict:
    """Burstable at the pod level (NG103) and a pause image (NG112): two findings to steer."""
    return {"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "web", "annotations": workload},
            "spec": {"selector": {"matchLabels": {"app": "web"}},
                     "template": {"metadata": {"labels": {"app": "web"}, "annotations": template},
                                  "spec": {"resources": {"requests": {"cpu": "1", "memory": "1Gi"},
                                                         "limits": {"cpu": "1500m", "memory": "1Gi"}},
                                           "containers": [{"name": "c", "image": "registry.k8s.io/pause:3.10"}]}}}}


def _ignore(rule: str, reason: str) -> dict:
    return {"numaguard.io/ignore": rule, "numaguard.io/ignore-reason": reason}


def test_the_templates_ignore_annotation_overrides_the_workloads():
    result = lint_documents([_deployment(_ignore("NG112", "on the workload"), _ignore("NG103", "on the template"))])
    assert [(f.rule, f.suppressed, f.suppress_reason) for f in result.findings] == [
        ("NG103", True, "on the template"), ("NG112", False, None)]
    # a workload's annotation still covers its template when the template says nothing
    result = lint_documents([_deployment(_ignore("NG112", "on the workload"), {})])
    assert [(f.rule, f.suppressed, f.suppress_reason) for f in result.findings] == [
        ("NG103", False, None), ("NG112", True, "on the workload")]


def test_the_templates_scope_annotation_overrides_the_workloads():
    opted_in = lint_documents([_deployment({"numaguard.io/scope": "unmanaged"}, {"numaguard.io/scope": "managed"})])
    assert ([f.rule for f in opted_in.findings], opted_in.summary.unmanaged) == (["NG103", "NG112"], 0)
    opted_out = lint_documents([_deployment({"numaguard.io/scope": "managed"}, {"numaguard.io/scope": "unmanaged"})])
    assert (opted_out.findings, opted_out.summary.unmanaged) == ([], 1)


# --------------------------------------------------------------------------- kubelet drop-ins

MAIN = """\
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
featureGates: {PodLevelResources: true, PodLevelResourceManagers: true}
cpuManagerPolicy: static
memoryManagerPolicy: Static
topologyManagerPolicy: single-numa-node
topologyManagerScope: pod
reservedSystemCPUs: "0,1"
kubeReserved: {memory: 1Gi}
systemReserved: {memory: 1Gi}
evictionHard: {memory.available: 500Mi, nodefs.available: "10%"}
reservedMemory:
- numaNode: 0
  limits: {memory: 2548Mi}
"""
DROPIN_HEADER = "apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\n"


def _lint(*documents):
    return lint_documents(documents, selection=Selection(select=("NG205", "NG208")))


def _tree(tmp_path, dropins: dict[str, str]):
    """config.yaml and config.yaml.d/<name> files, written in the order given."""
    (tmp_path / "config.yaml").write_text(MAIN)
    for name, body in dropins.items():
        path = tmp_path / "config.yaml.d" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(DROPIN_HEADER + body)
    return tmp_path


def _documents(tmp_path, *names):
    return [doc for name in names for doc in load_file(str(tmp_path / name))[1]]


def test_a_drop_in_keeps_the_main_files_own_eviction_hard_and_adds_no_default():
    main = {"kind": "KubeletConfiguration", "evictionHard": {"memory.available": "500Mi", "nodefs.available": "10%"}}
    merged = merge_kubelet_configs(main, [{"evictionHard": {"imagefs.available": "20%"}}])
    assert merged["evictionHard"] == {"memory.available": "500Mi", "nodefs.available": "10%",
                                      "imagefs.available": "20%"}
    # without its own, the main file's defaults stay under a drop-in that sets a few signals
    merged = merge_kubelet_configs({"kind": "KubeletConfiguration"}, [{"evictionHard": {"imagefs.available": "20%"}}])
    assert merged["evictionHard"] == {**DEFAULT_EVICTION_HARD, "imagefs.available": "20%"}


def test_the_main_files_memory_available_survives_a_drop_in_merge(tmp_path):
    # reservedMemory 2548Mi = 1Gi + 1Gi + the main file's 500Mi; a default 100Mi would be NG208
    _tree(tmp_path, {"50-eviction.conf": "evictionHard: {imagefs.available: \"20%\"}\n"})
    result = _lint(*_documents(tmp_path, "config.yaml", "config.yaml.d/50-eviction.conf"))
    assert result.findings == []


def test_a_finding_names_the_last_drop_in_that_set_the_value(tmp_path):
    _tree(tmp_path, {"10-first.conf": "topologyManagerScope: container\n",
                     "20-second.conf": "# the later one\n\ntopologyManagerScope: container\n"})
    result = _lint(*_documents(tmp_path, "config.yaml", "config.yaml.d/10-first.conf",
                               "config.yaml.d/20-second.conf"))
    assert [(f.rule, os.path.basename(f.file), f.line, f.column) for f in result.findings] == [
        ("NG205", "20-second.conf", 5, 23)]


# 10-a sets scope container, 20-b/30-c (a subfolder) sets pod, 20-b-late sets container again:
# filepath.WalkDir visits 10-a.conf, 20-b/30-c.conf, 20-b-late.conf (a folder's files where the
# folder's name sorts), so the effective scope is container, from 20-b-late.conf.
ORDERED = {"20-b-late.conf": "topologyManagerScope: container\n",
           "20-b/30-c.conf": "topologyManagerScope: pod\n",
           "10-a.conf": "topologyManagerScope: container\n"}
WALKED = ["10-a.conf", "20-b/30-c.conf", "20-b-late.conf"]


def test_drop_ins_merge_in_walk_order_whatever_order_they_are_given_in(tmp_path):
    _tree(tmp_path, ORDERED)
    names = [f"config.yaml.d/{name}" for name in ORDERED]          # not the walk order
    result = _lint(*_documents(tmp_path, "config.yaml", *names))
    assert [(f.rule, os.path.relpath(f.file, tmp_path / "config.yaml.d")) for f in result.findings] == [
        ("NG205", "20-b-late.conf")]
    result = _lint(*reversed(_documents(tmp_path, "config.yaml", *names)))
    assert [(f.rule, os.path.basename(f.file)) for f in result.findings] == [("NG205", "20-b-late.conf")]


def test_the_cli_reads_drop_ins_in_walk_order_whatever_order_the_directory_lists(tmp_path, monkeypatch):
    _tree(tmp_path, ORDERED)
    real_scandir = os.scandir

    def listed_backwards(path):                # a file system that lists in reverse order
        return iter(sorted(real_scandir(path), key=lambda e: e.name, reverse=True))

    monkeypatch.setattr(lint_files.os, "scandir", listed_backwards)
    source, documents, _ = load_file(str(tmp_path / "config.yaml"))
    found, errors, count = lint_files._dropins(source, documents)
    assert ([os.path.relpath(d.source, tmp_path / "config.yaml.d") for d in found], errors, count) == (
        WALKED, [], 3)
    settings = lint_files.LintSettings(config=lint_files.Config(), selection=Selection(select=("NG205",)))
    result, _ = lint_files.lint_paths([str(tmp_path / "config.yaml")], settings, 1)
    assert [(f.rule, os.path.basename(f.file)) for f in result.findings] == [("NG205", "20-b-late.conf")]


# --------------------------------------------------------------------------- PerformanceProfile

def _profile(annotations: dict | None = None, policy: str | None = None) -> dict:
    spec = {"cpu": {"reserved": "0-1", "isolated": "2-7"}, "nodeSelector": {"node-role.kubernetes.io/worker-cnf": ""}}
    if policy:
        spec["numa"] = {"topologyPolicy": policy}
    return {"apiVersion": "performance.openshift.io/v2", "kind": "PerformanceProfile",
            "metadata": {"name": "perf", "annotations": annotations or {}}, "spec": spec}


@pytest.mark.parametrize("value", ["true", "True", "TRUE", "enable", "Enable", "ENABLED"])
def test_the_dra_annotation_is_read_without_regard_to_case(value):
    config = performance_profile(_profile({"performance.openshift.io/dra-resource-management": value})).config
    assert (config["cpuManagerPolicy"], config["topologyManagerPolicy"], config["memoryManagerPolicy"]) == (
        "none", "none", "None")


def test_a_dra_annotation_that_says_no_leaves_the_managers_on():
    config = performance_profile(_profile({"performance.openshift.io/dra-resource-management": "False"})).config
    assert config["cpuManagerPolicy"] == "static"


@pytest.mark.parametrize("policy, options", [("restricted", {}), ("single-numa-node", {"full-pcpus-only": "true"})])
def test_restricted_and_single_numa_node_render_the_static_memory_manager(policy, options):
    config = performance_profile(_profile(policy=policy)).config
    assert config["topologyManagerPolicy"] == policy
    assert config["memoryManagerPolicy"] == "Static"
    # kubeReserved 500Mi + systemReserved 500Mi + hard eviction 100Mi, on NUMA node 0
    assert config["reservedMemory"] == [{"numaNode": 0, "limits": {"memory": "1100Mi"}}]
    assert config.get("cpuManagerPolicyOptions", {}) == options


def test_best_effort_renders_no_memory_manager():
    config = performance_profile(_profile(policy="best-effort")).config
    assert (config.get("memoryManagerPolicy"), config.get("reservedMemory")) == (None, None)
