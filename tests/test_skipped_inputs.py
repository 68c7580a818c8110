"""Files that are not objects never fail the build: a mapping without apiVersion and kind that
gives a key twice (an LVM JSON report, a Helm values.yaml) is skipped as not-kubernetes, while
an object with a repeated key stays NG001 (tests/test_repeated_keys.py); a symlink that points at nothing is skipped and
named in a note, in a directory walk and on the command line."""
from __future__ import annotations

import json

from numaguard.lint.engine import lint_documents
from numaguard.lint.load.documents import REPEATED_KEY, load_text

from conftest import run_cli, summary

# `lvs --reportformat json` as a monitoring script saved it after merging two reports by hand:
# "report" twice at the top (a JSON object with a repeated name parses in most JSON readers).
LVM_REPORT = """\
{
  "report": [
    {"lv": [{"lv_name": "root", "vg_name": "vg0", "lv_size": "50.00g"}]}
  ],
  "report": [
    {"lv": [{"lv_name": "data", "vg_name": "vg0", "lv_size": "200.00g", "lv_size": "210.00g"}]}
  ]
}
"""

# A Helm values file outside any chart folder (so not recognised by its place): `resources`
# written twice.
HELM_VALUES = """\
replicaCount: 2
image:
  repository: registry.example/app
resources:
  limits: {cpu: "2"}
resources:
  limits: {cpu: "4"}
"""

DEPLOYMENT_WITH_REPEATED_KEY = """\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
spec:
  replicas: 2
  replicas: 3
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers: [{name: web, image: registry.example/web:1}]
"""


def _json(run) -> dict:
    assert "Traceback" not in run.stderr
    return json.loads(run.stdout)


def test_a_mapping_without_apiversion_and_kind_that_repeats_a_key_is_skipped(tmp_path):
    (tmp_path / "lvm-report.json").write_text(LVM_REPORT)
    (tmp_path / "values-prod.yaml").write_text(HELM_VALUES)
    run = run_cli("lint", "--format", "json", ".", cwd=tmp_path)
    assert run.returncode == 0, run.stdout
    report = _json(run)
    assert report["findings"] == []
    assert report["summary"] == summary(files=2, skipped=2, skipped_by={"not-kubernetes": 2})


def test_the_loader_decides_it_with_the_reason_in_the_document():
    documents, errors = load_text("kind: Pod\n---\n" + HELM_VALUES, "values.yaml")
    assert errors == []
    assert [(d.index, d.line, d.skip, d.skip_detail) for d in documents] == [
        (0, 1, None, None), (1, 3, "not-kubernetes", REPEATED_KEY)]
    documents, errors = load_text(LVM_REPORT, "lvm-report.json")
    assert (errors, [(d.skip, d.skip_detail) for d in documents]) == ([], [("not-kubernetes", REPEATED_KEY)])
    result = lint_documents(documents, load_errors=errors)
    assert (result.findings, result.summary.skipped_by_reason["not-kubernetes"]) == ([], 1)


def test_an_object_that_repeats_a_key_is_still_ng001_at_the_second_key(tmp_path):
    (tmp_path / "web.yaml").write_text(DEPLOYMENT_WITH_REPEATED_KEY)
    # either key alone says the document is meant as an object
    (tmp_path / "half.yaml").write_text("kind: ConfigMap\ndata: {a: '1'}\ndata: {b: '2'}\n")
    (tmp_path / "kindless.yaml").write_text("apiVersion: v1\nmetadata: {name: a}\nmetadata: {name: b}\n")
    run = run_cli("lint", "--format", "json", ".", cwd=tmp_path)
    assert run.returncode == 1
    report = _json(run)
    lost = ("kubectl, Helm and the API server keep only the value written last and silently drop the others; "
            "kustomize (kubectl apply -k), Flux and Argo CD's kustomize applications refuse the file")
    assert [(f["rule"], f["severity"], f["file"], f["line"], f["column"], f["message"])
            for f in report["findings"]] == [
        ("NG001", "error", "./half.yaml", 3, 1, 'mapping key "data" already defined at line 2: ' + lost),
        ("NG001", "error", "./kindless.yaml", 3, 1,
         'mapping key "metadata" already defined at line 2: ' + lost),
        ("NG001", "error", "./web.yaml", 7, 3, 'mapping key "replicas" already defined at line 6: ' + lost)]
    # read as kubectl reads them (the later value): the Deployment is judged (out of scope: no
    # pod-level resources), a ConfigMap is a kind numaguard does not judge, the kind-less one no object
    assert report["summary"] == summary(files=3, objects=1, skipped=2, error=3,
                                        skipped_by={"unknown-kind": 1, "not-kubernetes": 1})


def test_a_dangling_symlink_in_a_directory_is_skipped_with_a_note(tmp_path):
    repo = tmp_path / "repo"
    (repo / "apps").mkdir(parents=True)
    (repo / "apps" / "old.yaml").symlink_to("../moved/old.yaml")
    (repo / "apps" / "cm.yaml").write_text("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\n")
    run = run_cli("lint", "--format", "json", ".", cwd=repo)
    assert run.returncode == 0, run.stdout + run.stderr
    assert _json(run)["summary"] == summary(files=2, skipped=2,
                                            skipped_by={"dangling-symlink": 1, "unknown-kind": 1})
    text = run_cli("lint", ".", cwd=repo)
    assert (text.returncode, text.stderr) == (0, "")
    assert text.stdout == (
        "note: 1 dangling symlink(s) skipped, nothing to read: ./apps/old.yaml -> ../moved/old.yaml\n"
        "2 file(s), 0 object(s) checked, 2 skipped (1 unknown-kind, 1 dangling-symlink), 0 opted out: "
        "0 error(s), 0 warning(s), 0 info, 0 suppressed\n")


def test_a_dangling_symlink_named_on_the_command_line_is_skipped_not_exit_2(tmp_path):
    (tmp_path / "pod.yaml").symlink_to(tmp_path / "gone.yaml")
    (tmp_path / "linked.yaml").symlink_to("values.json")          # a working link is read as usual
    (tmp_path / "values.json").write_text(LVM_REPORT)
    run = run_cli("lint", "--format", "json", "pod.yaml", "linked.yaml", cwd=tmp_path)
    assert run.returncode == 0, run.stdout + run.stderr
    assert _json(run)["summary"] == summary(files=2, skipped=2,
                                            skipped_by={"dangling-symlink": 1, "not-kubernetes": 1})
    text = run_cli("lint", "pod.yaml", cwd=tmp_path)
    assert text.returncode == 0
    assert text.stdout.splitlines()[0] == (f"note: 1 dangling symlink(s) skipped, nothing to read: "
                                           f"pod.yaml -> {tmp_path / 'gone.yaml'}")
    # a path that is not there at all is still a usage error
    missing = run_cli("lint", "nothing.yaml", cwd=tmp_path)
    assert missing.returncode == 2
