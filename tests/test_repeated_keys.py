"""A key given twice (issue 21 §2). `kubectl apply -f`, Helm, Argo CD's plain directories and the
API server read manifests through go-yaml v2's non-strict decoder and keep the later value
(kubernetes/kubernetes#89303); kustomize reads with go-yaml v3 and refuses the file, and so do
`kubectl apply -k`, Flux and Argo CD's kustomize applications. NG001 is an error where a value is
silently lost or a kustomization reads the file, a warning where nothing is lost; the object is
judged as kubectl reads it. A mapping without apiVersion or kind stays no object
(tests/test_skipped_inputs.py)."""
from __future__ import annotations

import json

from conftest import lint_text, run_cli

POD = """\
apiVersion: v1
kind: Pod
metadata:
  name: worker
  annotations: {numaguard.io/scope: managed}
  labels: {app: worker}
  labels: {app: worker}
spec:
  resources:
    limits: {cpu: "4", memory: 8Gi}
  resources:
    limits: {cpu: "2", memory: 4Gi}
    requests: {cpu: "1"}
  containers:
  - name: worker
    image: registry.example.com/worker:1.0
"""


def test_an_object_is_judged_as_kubectl_reads_it_with_ng001_where_a_value_is_lost():
    result = lint_text(POD)
    rows = [(f.rule, f.severity.value, f.line, f.column) for f in result.findings]
    assert rows[:2] == [("NG001", "warning", 7, 3), ("NG001", "error", 11, 3)]
    assert result.findings[0].message.startswith('mapping key "labels" already defined at line 6, with the same value')
    assert result.findings[1].message.startswith('mapping key "resources" already defined at line 9: kubectl, Helm '
                                                 "and the API server keep only the value written last")
    # the later resources (cpu 2, request 1) are judged: a Burstable pod, NG103 at its request
    assert ("NG103", "error", 13, 21) in rows
    assert result.findings[0].object.name == "worker"


def test_a_key_repeated_with_its_value_in_a_file_kustomize_reads_is_an_error(tmp_path):
    same = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\nmetadata: {name: c}\ndata: {a: '1'}\n"
    (tmp_path / "base").mkdir()
    (tmp_path / "base" / "cm.yaml").write_text(same)
    (tmp_path / "base" / "kustomization.yaml").write_text("resources: [cm.yaml]\n")
    (tmp_path / "plain").mkdir()
    (tmp_path / "plain" / "cm.yaml").write_text(same)
    run = run_cli("lint", "--format", "json", ".", cwd=tmp_path)
    assert "Traceback" not in run.stderr and run.returncode == 1
    found = [(f["file"], f["severity"], f["line"], f["message"]) for f in json.loads(run.stdout)["findings"]]
    said = ('mapping key "metadata" already defined at line 3, with the same value: kubectl, Helm and the API server '
            "read one; kustomize (kubectl apply -k), Flux and Argo CD's kustomize applications refuse the file")
    assert found == [("./base/cm.yaml", "error", 4, said + "; a kustomization names this file"),
                     ("./plain/cm.yaml", "warning", 4, said)]


def test_a_suppression_comment_covers_it_and_fix_leaves_the_file_alone(tmp_path):
    text = "# numaguard: ignore NG001\n" + POD
    result = lint_text(text)
    assert [f.suppressed for f in result.findings if f.rule == "NG001"] == [True, True]
    (tmp_path / "pod.yaml").write_text(POD)
    run = run_cli("fix", "pod.yaml", cwd=tmp_path)
    assert 'NG001 left alone: a part of the file cannot be read (mapping key "labels"' in run.stderr
    assert (tmp_path / "pod.yaml").read_text() == POD


def test_a_skipped_mapping_with_a_repeated_key_keeps_the_line_it_starts_on():
    from numaguard.lint.load.documents import load_text
    docs, errors = load_text("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n---\n# values\nx: 1\nx: 2\n", "v.yaml")
    assert errors == [] and [(d.skip, d.line) for d in docs] == [(None, 1), ("not-kubernetes", 6)]
