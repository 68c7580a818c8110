"""Every report format, byte for byte or field for field, from a LintResult holding one finding
of each kind (error, warning, info, suppressed, no position), and end to end through the CLI
with positions (1-based lines and columns) and JUnit counts with warnings and infos."""
from __future__ import annotations

import json
import xml.etree.ElementTree as ET

import pytest

from numaguard.lint.engine import LintResult
from numaguard.lint.model import Finding, ObjectRef, Severity, Summary
from numaguard.lint.report import FORMATS, writer_for
from numaguard.lint.rules.registry import all_rules

from conftest import run_cli, summary
from test_engine_plumbing import KUBELET, KUBELET_THREE

POD = ObjectRef("v1", "Pod", "shop", "web")
KC = ObjectRef("kubelet.config.k8s.io/v1beta1", "KubeletConfiguration", None, None)


def _finding(rule, severity, file, line, column, **extra) -> Finding:
    return Finding(rule=rule, name=f"name-{rule}", severity=Severity(severity), message=f"msg {rule}",
                   remediation=f"fix {rule}", file=file, line=line, column=column, **extra)


FINDINGS = [
    _finding("NG103", "error", "apps/web.yaml", 14, 7, object=POD, container="app",
             path="spec.resources.limits.cpu"),
    _finding("NG104", "warning", "apps/web.yaml", 20, 11, object=POD, path="spec.containers[0]"),
    _finding("NG112", "warning", "apps/web.yaml", 21, 3, object=POD, suppressed=True,
             suppress_reason="placeholder on purpose"),
    _finding("NG206", "info", "node/k.yaml", 8, 24, object=KC, path="topologyManagerPolicy"),
    _finding("NG001", "error", None, None, None),
]
SUMMARY = Summary(files=3, objects=4, skipped=1, unmanaged=2,
                  counts={"error": 2, "warning": 1, "info": 1}, suppressed=1)
RESULT = LintResult(FINDINGS, SUMMARY)


def render(fmt: str, **kwargs) -> str:
    return writer_for(fmt)(RESULT, **kwargs)


# ------------------------------------------------------------------------- SARIF

def _sarif_rows(text: str) -> list[tuple]:
    results = json.loads(text)["runs"][0]["results"]
    rows = []
    for r in results:
        [loc] = r["locations"]
        region = loc["physicalLocation"]["region"]
        rows.append((r["ruleId"], r["level"], loc["physicalLocation"]["artifactLocation"]["uri"],
                     region["startLine"], region["startColumn"], r["message"]["text"],
                     r.get("suppressions")))
    return rows


def test_sarif_results_have_exact_one_based_regions():
    assert _sarif_rows(render("sarif")) == [
        ("NG103", "error", "apps/web.yaml", 14, 7, "msg NG103 Fix: fix NG103", None),
        ("NG104", "warning", "apps/web.yaml", 20, 11, "msg NG104 Fix: fix NG104", None),
        ("NG206", "note", "node/k.yaml", 8, 24, "msg NG206 Fix: fix NG206", None),
        ("NG001", "error", "<input>", 1, 1, "msg NG001 Fix: fix NG001", None),
    ]


def test_sarif_suppressed_results_on_request():
    rows = _sarif_rows(render("sarif", show_suppressed=True))
    assert rows[2] == ("NG112", "warning", "apps/web.yaml", 21, 3, "msg NG112 Fix: fix NG112",
                       [{"kind": "inSource", "justification": "placeholder on purpose"}])
    assert [r[0] for r in rows] == ["NG103", "NG104", "NG112", "NG206", "NG001"]


def test_sarif_run_lists_every_rule_with_its_default_level():
    sarif = json.loads(render("sarif"))
    assert sarif["version"] == "2.1.0"
    driver = sarif["runs"][0]["tool"]["driver"]
    assert driver["name"] == "numaguard"
    level = {"error": "error", "warning": "warning", "info": "note"}
    assert [(r["id"], r["defaultConfiguration"]["level"]) for r in driver["rules"]] == \
        [(r.id, level[r.severity.value]) for r in all_rules()]


# ------------------------------------------------------------------------- JUnit

def _suite(text: str) -> ET.Element:
    assert text.startswith("<?xml version='1.0' encoding='utf-8'?>\n")
    return ET.fromstring(text.split("?>", 1)[1])


def _cases(suite: ET.Element) -> list[tuple]:
    out = []
    for case in suite.iter("testcase"):
        [child] = list(case)
        out.append((case.get("name"), child.tag, child.get("type"), child.get("message")))
    return out


def test_junit_counts_errors_and_warnings_as_failures_and_infos_as_passes():
    suite = _suite(render("junit"))
    assert {k: suite.get(k) for k in ("name", "tests", "failures", "errors", "skipped")} == \
        {"name": "numaguard", "tests": "4", "failures": "3", "errors": "0", "skipped": "0"}
    assert _cases(suite) == [
        ("NG103 name-NG103 Pod/shop/web apps/web.yaml:14:7", "failure", "error", "msg NG103"),
        ("NG104 name-NG104 Pod/shop/web apps/web.yaml:20:11", "failure", "warning", "msg NG104"),
        ("NG206 name-NG206 KubeletConfiguration node/k.yaml:8:24", "system-out", None, None),
        ("NG001 name-NG001  <input>:1:1", "failure", "error", "msg NG001"),
    ]
    info = next(c for c in suite.iter("testcase") if c.get("name").startswith("NG206"))
    assert info.find("system-out").text == "msg NG206\nfix: fix NG206"
    assert info.get("classname") == "node/k.yaml"


def test_junit_suppressed_findings_are_skipped_not_failed():
    suite = _suite(render("junit", show_suppressed=True))
    assert {k: suite.get(k) for k in ("tests", "failures", "skipped")} == \
        {"tests": "5", "failures": "3", "skipped": "1"}
    assert _cases(suite)[2] == ("NG112 name-NG112 Pod/shop/web apps/web.yaml:21:3", "skipped", None,
                                "placeholder on purpose")


# ------------------------------------------------------------------------- JSON, text, GitHub

def test_json_report_keys_and_values():
    report = json.loads(render("json", show_suppressed=False))
    assert report["version"] == 1
    assert report["summary"] == summary(files=3, objects=4, skipped=1, unmanaged=2, error=2, warning=1,
                                         info=1, suppressed=1)      # built by hand: no reasons
    assert report["findings"][0] == {
        "rule": "NG103", "name": "name-NG103", "severity": "error", "file": "apps/web.yaml",
        "line": 14, "column": 7,
        "object": {"apiVersion": "v1", "kind": "Pod", "namespace": "shop", "name": "web",
                   "container": "app"},
        "path": "spec.resources.limits.cpu", "message": "msg NG103", "remediation": "fix NG103",
        "suppressed": False}
    assert [f["rule"] for f in report["findings"]] == ["NG103", "NG104", "NG206", "NG001"]
    full = json.loads(render("json"))                     # the JSON report lists suppressed ones by default
    assert full["findings"][2] == {
        "rule": "NG112", "name": "name-NG112", "severity": "warning", "file": "apps/web.yaml",
        "line": 21, "column": 3,
        "object": {"apiVersion": "v1", "kind": "Pod", "namespace": "shop", "name": "web",
                   "container": None},
        "path": "", "message": "msg NG112", "remediation": "fix NG112", "suppressed": True,
        "suppressReason": "placeholder on purpose"}
    assert full["findings"][4]["object"] is None and full["findings"][4]["line"] is None


def test_json_report_large_is_compact_and_equal():
    many = LintResult(FINDINGS * 200, SUMMARY)
    text = writer_for("json")(many)
    assert "\n" not in text.rstrip("\n")
    assert len(json.loads(text)["findings"]) == 1000


TEXT = """\
apps/web.yaml
  apps/web.yaml:14:7  NG103  error  msg NG103
      object: Pod/shop/web container app  field: spec.resources.limits.cpu
      fix: fix NG103
  apps/web.yaml:20:11  NG104  warning  msg NG104
      object: Pod/shop/web  field: spec.containers[0]
      fix: fix NG104

node/k.yaml
  node/k.yaml:8:24  NG206  info  msg NG206
      object: KubeletConfiguration  field: topologyManagerPolicy
      fix: fix NG206

<input>
  <input>:1:1  NG001  error  msg NG001
      fix: fix NG001

3 file(s), 4 object(s) checked, 1 skipped, 2 opted out: 2 error(s), 1 warning(s), 1 info, 1 suppressed
"""


def test_text_report_groups_by_file_exactly():
    assert render("text") == TEXT


def test_text_report_shows_suppressed_with_reason_and_colours_on_request():
    shown = render("text", show_suppressed=True)
    assert ("  apps/web.yaml:21:3  NG112  warning  msg NG112 (suppressed: placeholder on purpose)\n"
            "      object: Pod/shop/web\n      fix: fix NG112\n") in shown
    coloured = render("text", color=True)
    assert "\033[1mapps/web.yaml\033[0m\n" in coloured
    assert "  apps/web.yaml:14:7  NG103  \033[31merror\033[0m  msg NG103\n" in coloured
    assert "\033[33m1 warning(s)\033[0m" in coloured


def test_github_annotations():
    assert render("github") == (
        "::error file=apps/web.yaml,line=14,col=7,title=NG103 name-NG103::msg NG103 Fix: fix NG103\n"
        "::warning file=apps/web.yaml,line=20,col=11,title=NG104 name-NG104::msg NG104 Fix: fix NG104\n"
        "::notice file=node/k.yaml,line=8,col=24,title=NG206 name-NG206::msg NG206 Fix: fix NG206\n"
        "::error ,title=NG001 name-NG001::msg NG001 Fix: fix NG001\n")


@pytest.mark.parametrize("fmt", FORMATS)
def test_empty_result_in_every_format(fmt):
    out = writer_for(fmt)(LintResult([], Summary()))
    expected = {
        "text": "0 file(s), 0 object(s) checked, 0 skipped, 0 opted out: 0 error(s), "
                "0 warning(s), 0 info, 0 suppressed\n",
        "github": "",
    }
    if fmt in expected:
        assert out == expected[fmt]
    elif fmt == "json":
        assert json.loads(out)["findings"] == []
    elif fmt == "sarif":
        assert json.loads(out)["runs"][0]["results"] == []
    elif fmt == "policyreport":
        import yaml
        [report] = list(yaml.safe_load_all(out))
        assert (report["kind"], report["results"]) == ("ClusterPolicyReport", [])
        assert report["summary"] == {"pass": 0, "fail": 0, "warn": 0, "error": 0, "skip": 0}
    elif fmt == "html":
        assert out.startswith("<!DOCTYPE html>") and '<span class="error">0 error(s)</span>' in out
        assert out.count("<p>No findings.</p>") == 1 and "numa-map" not in out
    else:
        suite = _suite(out)
        assert (suite.get("tests"), suite.get("failures"), list(suite)) == ("0", "0", [])


# ------------------------------------------------------------------------- through the CLI

def test_cli_sarif_and_junit_with_errors_warnings_and_infos(tmp_path):
    (tmp_path / "a-info.yaml").write_text(KUBELET.format(policy="restricted"))
    (tmp_path / "b-three.yaml").write_text(KUBELET_THREE.format(policy="best-effort"))
    # the declared pool's configurations, so their pool requirements are errors (NG202)
    (tmp_path / ".numaguard.yaml").write_text("pool:\n  kubeletConfigs: [a-info.yaml, b-three.yaml]\n")
    # --ignore NG401: the two configurations differ on purpose, not a pool to keep consistent
    proc = run_cli("lint", "--format", "sarif", "--output", "r.sarif", "--format", "junit",
                   "--output", "r.xml", "--fail-on", "warning", "--ignore", "NG401", ".", cwd=tmp_path)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert [(r[0], r[1], r[2], r[3], r[4]) for r in _sarif_rows((tmp_path / "r.sarif").read_text())] == [
        ("NG206", "note", "./a-info.yaml", 8, 24),
        ("NG207", "error", "./b-three.yaml", 1, 1),
        ("NG202", "error", "./b-three.yaml", 4, 3),
        ("NG206", "warning", "./b-three.yaml", 7, 24),
    ]
    suite = _suite((tmp_path / "r.xml").read_text())
    assert {k: suite.get(k) for k in ("tests", "failures", "skipped")} == \
        {"tests": "4", "failures": "3", "skipped": "0"}
    assert [(name.split()[0], tag, kind) for name, tag, kind, _ in _cases(suite)] == [
        ("NG206", "system-out", None), ("NG207", "failure", "error"), ("NG202", "failure", "error"),
        ("NG206", "failure", "warning")]


def test_cli_fail_on_thresholds_with_one_finding_of_each_severity(tmp_path):
    (tmp_path / "k.yaml").write_text(KUBELET.format(policy="restricted"))        # one info
    codes = {level: run_cli("lint", "--fail-on", level, "k.yaml", cwd=tmp_path).returncode
             for level in ("error", "warning", "info", "never")}
    assert codes == {"error": 0, "warning": 0, "info": 1, "never": 0}
    (tmp_path / "k.yaml").write_text(KUBELET.format(policy="best-effort"))       # one warning
    codes = {level: run_cli("lint", "--fail-on", level, "k.yaml", cwd=tmp_path).returncode
             for level in ("error", "warning", "info", "never")}
    assert codes == {"error": 0, "warning": 1, "info": 1, "never": 0}
