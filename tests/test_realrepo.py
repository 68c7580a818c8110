"""A repository as users have them: manifests next to Helm charts, kustomize overlays and
patches, Ansible tasks, concatenated JSON (tests/fixtures/realrepo, origins in its ORIGIN.md).
Only the true errors may fail the build; everything that is not a Kubernetes object as
written is skipped, counted by reason, and templates get one hint line per run."""
from __future__ import annotations

import json
import os

from numaguard.lint.engine import lint_documents
from numaguard.lint.load.documents import load_paths

from conftest import FIXTURES, run_cli

TREE = FIXTURES / "realrepo" / "mixed-tree"


def _run(*args: str, stdin: str | None = None):
    """The installed console script, run from the tree (no .numaguard.yaml above it)."""
    return run_cli("lint", *args, cwd=TREE, stdin=stdin)


def _relative(path: str) -> str:
    return os.path.relpath(path, TREE)


def test_mixed_tree_has_only_its_true_errors_and_counts_every_skip():
    result = _run(str(TREE), "--format", "json")
    assert result.returncode == 1
    report = json.loads(result.stdout)
    errors = [(_relative(f["file"]), f["line"], f["column"], f["rule"])
              for f in report["findings"] if f["severity"] == "error"]
    assert errors == [
        ("true-errors/broken-indentation.yaml", 6, 2, "NG001"),
        ("true-errors/duplicate-key.yaml", 23, 11, "NG001"),
        ("true-errors/unquoted-node-selector.yaml", 8, 10, "NG002"),
    ]
    assert len(report["findings"]) == 3
    summary = report["summary"]
    assert (summary["files"], summary["objects"], summary["skipped"]) == (19, 3, 17)   # duplicate-key.yaml: read as kubectl reads it
    assert summary["skippedByReason"] == {"not-kubernetes": 5, "template": 2, "patch": 6,
                                          "unknown-kind": 4, "dangling-symlink": 0, "deletion": 0}
    assert summary["hint"] == (
        "2 template file(s) skipped (Helm 2) and 1 Helm chart(s) found; lint what they render: "
        "`helm template CHART | numaguard lint -` or `kustomize build DIR | numaguard lint -`")


def test_each_file_is_skipped_for_its_own_reason():
    reasons = {}
    for source, documents, errors in load_paths([str(TREE)]):
        reasons[_relative(source)] = [d.skip for d in documents]
    assert reasons == {
        "argo-cd/manifests/ha/base/redis-ha/kustomization.yaml": ["not-kubernetes"],
        "argo-cd/manifests/ha/base/redis-ha/overlays/deployment-resources.yaml": ["patch"],
        "argo-cd/manifests/ha/base/redis-ha/overlays/statefulset-resources.yaml": ["patch"],
        "argo-cd/reposerver/repository/testdata/json-list/list.json": [None, None],
        "helm/prometheus/Chart.yaml": ["not-kubernetes"],
        "helm/prometheus/templates/pdb.yaml": ["template"],
        "helm/prometheus/templates/serviceaccount.yaml": ["template"],
        "helm/prometheus/values.yaml": ["not-kubernetes"],
        "kube-prometheus/manifests/kubePrometheus-prometheusRule.yaml": [None],
        "kube-prometheus/manifests/prometheusOperator-deployment.yaml": [None],
        "kube-prometheus/manifests/setup/0alertmanagerConfigCustomResourceDefinition.yaml": [None],
        "kubespray/roles/kubernetes-apps/persistent_volumes/aws-ebs-csi/tasks/main.yml": ["not-kubernetes"],
        "kustomize/overlay/staging/deployment-patch1.yaml": [None, None],   # `$patch: delete`: the engine
        "kustomize/springboot/overlays/production/healthcheck_patch.yaml": ["patch"],
        "kustomize/springboot/overlays/production/kustomization.yaml": ["not-kubernetes"],
        "kustomize/springboot/overlays/production/memorylimit_patch.yaml": ["patch"],
        "true-errors/broken-indentation.yaml": [],
        "true-errors/duplicate-key.yaml": [None],
        "true-errors/unquoted-node-selector.yaml": [None],
    }


def test_kube_prometheus_crd_with_an_equals_enum_item_loads():
    [(_, [document], errors)] = list(load_paths(
        [str(TREE / "kube-prometheus/manifests/setup/0alertmanagerConfigCustomResourceDefinition.yaml")]))
    assert errors == []
    spec = document.data["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    matcher = spec["properties"]["spec"]["properties"]["inhibitRules"]["items"]["properties"]
    assert matcher["sourceMatch"]["items"]["properties"]["matchType"]["enum"] == ["!=", "=", "=~", "!~"]


def test_concatenated_json_objects_are_a_stream_with_positions():
    [(_, documents, errors)] = list(load_paths(
        [str(TREE / "argo-cd/reposerver/repository/testdata/json-list/list.json")]))
    assert errors == []
    assert [(d.index, d.line, d.data) for d in documents] == [
        (0, 1, {"apiVersion": "v1", "kind": "ConfigMap"}),
        (1, 2, {"apiVersion": "v1", "kind": "ConfigMap"})]
    assert documents[1].data.marks["kind"] == (2, 30)


def test_text_report_prints_the_hint_once_and_the_skips_by_reason():
    result = _run(str(TREE / "helm"), str(TREE / "kustomize"))
    assert result.returncode == 0
    lines = result.stdout.splitlines()
    assert lines == [
        "note: 2 template file(s) skipped (Helm 2) and 1 Helm chart(s) found; lint what they render: "
        "`helm template CHART | numaguard lint -` or `kustomize build DIR | numaguard lint -`",
        "8 file(s), 0 object(s) checked, 9 skipped (3 not-kubernetes, 2 template, 4 patch), "
        "0 opted out: 0 error(s), 0 warning(s), 0 info, 0 suppressed"]


def test_a_patch_linted_alone_from_stdin_is_still_recognised_by_its_content():
    text = (TREE / "kustomize/overlay/staging/deployment-patch1.yaml").read_text()
    result = _run("-", "--format", "json", stdin=text)
    assert result.returncode == 0
    assert json.loads(result.stdout)["summary"]["skippedByReason"]["patch"] == 2


def test_helm_template_rendered_output_is_linted():
    # what the hint suggests: the rendered manifests come in on stdin and are judged
    rendered = ("---\n# Source: prometheus/templates/pdb.yaml\napiVersion: policy/v1\n"
                "kind: PodDisruptionBudget\nmetadata: {name: prometheus-server}\n"
                "spec: {maxUnavailable: 1}\n")
    result = _run("-", "--format", "json", stdin=rendered)
    summary = json.loads(result.stdout)["summary"]
    assert (result.returncode, summary["skippedByReason"]["unknown-kind"], summary["hint"]) == (0, 1, None)


def test_library_callers_get_the_same_skips():
    documents = [doc for _, docs, _ in load_paths([str(TREE / "kustomize")]) for doc in docs]
    summary = lint_documents(documents).summary
    assert summary.skipped_by_reason == {"not-kubernetes": 1, "template": 0, "patch": 4,
                                         "unknown-kind": 0, "dangling-symlink": 0, "deletion": 0}


def test_kustomize_patch_fields_and_helm_values_are_recognised_by_place(tmp_path):
    (tmp_path / "kustomization.yml").write_text(
        "resources: [app]\npatchesStrategicMerge:\n- smp.yaml\n- |-\n  kind: Deployment\n"
        "patchesJson6902:\n- target: {kind: Deployment, name: web}\n  path: patches/json.yaml\n")
    (tmp_path / "smp.yaml").write_text("apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web}\n")
    (tmp_path / "patches").mkdir()
    (tmp_path / "patches/json.yaml").write_text("- op: remove\n  path: /spec/replicas\n")
    chart = tmp_path / "app" / "chart"
    (chart / "ci").mkdir(parents=True)
    (chart / "Chart.yaml").write_text("apiVersion: v2\nname: app\nversion: 1.0.0\n")
    (chart / "ci" / "daemonset-values.yaml").write_text("kind: DaemonSet\nimage: {tag: v1}\n")
    (chart / "values.yaml").write_text("kind: Deployment\n")
    (tmp_path / "app" / "not-a-patch.yaml").write_text(
        "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web}\n")
    reasons = {_relative_to(tmp_path, source): [(d.skip, d.skip_detail) for d in docs]
               for source, docs, _ in load_paths([str(tmp_path)])}
    assert reasons == {
        "app/chart/Chart.yaml": [("not-kubernetes", "Helm chart")],
        "app/chart/ci/daemonset-values.yaml": [("not-kubernetes", "Helm values")],
        "app/chart/values.yaml": [("not-kubernetes", "Helm values")],
        "app/not-a-patch.yaml": [(None, None)],          # no kustomization names it: NG002 is right
        "kustomization.yml": [("not-kubernetes", "kustomization")],
        "patches/json.yaml": [("patch", "named as a patch in a kustomization")],
        "smp.yaml": [("patch", "named as a patch in a kustomization")],
    }


def _relative_to(root, path: str) -> str:
    return os.path.relpath(path, root)
