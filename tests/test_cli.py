"""The command line, run as the real console script on real files."""
from __future__ import annotations

import json
import re

import pytest

from conftest import REPO, run_cli

EXAMPLES = REPO / "deploy" / "examples"
EXAMPLE_CONFIG = str(EXAMPLES / ".numaguard.yaml")

GOOD_POD = """\
apiVersion: v1
kind: Pod
metadata: {name: ok, annotations: {numaguard.io/scope: managed}}
spec:
  resources:
    requests: {cpu: "2", memory: 2Gi}
    limits: {cpu: "2", memory: 2Gi}
  containers:
    - name: app
      image: registry.example.com/app:1.0
"""

BURSTABLE_POD = """\
apiVersion: v1
kind: Pod
metadata: {name: trap}
spec:
  resources:
    limits: {cpu: "4", memory: 4Gi}
  containers:
    - name: app
      image: registry.example.com/app:1.0
      resources:
        requests: {cpu: "1"}
"""


def test_examples_show_findings_with_positions_and_fixes():
    proc = run_cli("lint", "--config", EXAMPLE_CONFIG, str(EXAMPLES))
    assert proc.returncode == 1, proc.stderr
    out = proc.stdout
    # every finding line is file:line:col  ID  severity
    assert re.search(r"order-matcher\.yaml:\d+:\d+  NG103  error", out)
    assert re.search(r"kubelet-config-from-article\.yaml:\d+:\d+  NG208  error", out)
    assert re.search(r"half-written\.yaml:\d+:\d+  NG001  error", out)
    assert "fix: " in out
    assert "\033[" not in out            # no colour when not on a terminal
    assert re.search(r"\d+ file\(s\), \d+ object\(s\) checked", out)
    # the well-formed workload has no error
    assert not re.search(r"packet-gateway\.yaml:\d+:\d+  NG\d+  error", out)


def test_json_report_shape_and_points_at_the_field(tmp_path):
    f = tmp_path / "trap.yaml"
    f.write_text(BURSTABLE_POD)
    proc = run_cli("lint", "--format", "json", str(f), cwd=tmp_path)
    assert proc.returncode == 1
    report = json.loads(proc.stdout)
    assert report["version"] == 1
    ng103 = [x for x in report["findings"] if x["rule"] == "NG103"]
    assert ng103, report
    finding = ng103[0]
    assert finding["name"] == "pod-not-guaranteed" and finding["severity"] == "error"
    assert finding["file"].endswith("trap.yaml")
    assert finding["object"] == {"apiVersion": "v1", "kind": "Pod", "namespace": None,
                                 "name": "trap", "container": finding["object"]["container"]}
    assert finding["path"].startswith("spec.")
    assert finding["line"] > 4           # inside the spec, not at the top of the file
    assert set(report["summary"]) >= {"files", "objects", "skipped", "error", "warning", "info",
                                      "suppressed"}
    assert report["summary"]["files"] == 1 and report["summary"]["objects"] == 1


def test_clean_file_exits_zero(tmp_path):
    f = tmp_path / "ok.yaml"
    f.write_text(GOOD_POD)
    proc = run_cli("lint", str(f), cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_stdin(tmp_path):
    proc = run_cli("lint", "-", stdin=BURSTABLE_POD, cwd=tmp_path)
    assert proc.returncode == 1
    assert "<stdin>:" in proc.stdout and "NG103" in proc.stdout


def test_broken_file_is_a_finding_and_the_others_are_still_linted(tmp_path):
    (tmp_path / "a-broken.yaml").write_text("kind: Pod\nspec: {containers: [\n")
    (tmp_path / "b-trap.yaml").write_text(BURSTABLE_POD)
    (tmp_path / "c-bytes.yaml").write_bytes(b"kind: Pod\nmetadata: {name: \xff\xfe}\n")
    proc = run_cli("lint", "--format", "json", str(tmp_path), cwd=tmp_path)
    assert proc.returncode == 1, proc.stderr
    assert "Traceback" not in proc.stderr
    findings = json.loads(proc.stdout)["findings"]
    by_file = {(f["file"].rsplit("/", 1)[-1], f["rule"]) for f in findings}
    assert ("a-broken.yaml", "NG001") in by_file
    assert ("c-bytes.yaml", "NG001") in by_file
    assert ("b-trap.yaml", "NG103") in by_file
    broken = next(f for f in findings if f["file"].endswith("a-broken.yaml"))
    assert broken["line"] is not None


@pytest.mark.parametrize("args,needle", [
    (("lint", "does/not/exist.yaml"), "no such file"),
    (("lint", "--select", "NG999", "."), "unknown rule"),
    (("lint", "--format", "xml", "."), "xml"),
    (("lint", "--output", "a.json", "--output", "b.json", "."), "--format"),
])
def test_usage_problems_exit_2(tmp_path, args, needle):
    proc = run_cli(*args, cwd=tmp_path)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert needle in (proc.stdout + proc.stderr)
    assert "Traceback" not in proc.stderr


def test_bad_config_key_exits_2_naming_it(tmp_path):
    (tmp_path / ".numaguard.yaml").write_text("apiVersion: numaguard.io/v1alpha1\nkind: Config\n"
                                              "rules: {NG103: loud}\n")
    (tmp_path / "pod.yaml").write_text(GOOD_POD)
    proc = run_cli("lint", "pod.yaml", cwd=tmp_path)
    assert proc.returncode == 2
    assert "rules.NG103" in proc.stderr and "loud" in proc.stderr


def test_config_found_in_parent_and_applied(tmp_path):
    (tmp_path / ".numaguard.yaml").write_text("apiVersion: numaguard.io/v1alpha1\nkind: Config\n"
                                              "rules: {NG103: warning}\n")
    sub = tmp_path / "apps"
    sub.mkdir()
    (sub / "trap.yaml").write_text(BURSTABLE_POD)
    proc = run_cli("lint", "--format", "json", "trap.yaml", cwd=sub)
    ng103 = [f for f in json.loads(proc.stdout)["findings"] if f["rule"] == "NG103"]
    assert ng103 and all(f["severity"] == "warning" for f in ng103)


def test_select_ignore_and_fail_on(tmp_path):
    (tmp_path / "trap.yaml").write_text(BURSTABLE_POD)
    ignored = run_cli("lint", "--ignore", "NG103", "--format", "json", "trap.yaml", cwd=tmp_path)
    assert "NG103" not in {f["rule"] for f in json.loads(ignored.stdout)["findings"]}
    selected = run_cli("lint", "--select", "NG2", "--format", "json", "trap.yaml", cwd=tmp_path)
    assert json.loads(selected.stdout)["findings"] == []
    assert selected.returncode == 0
    never = run_cli("lint", "--fail-on", "never", "trap.yaml", cwd=tmp_path)
    assert never.returncode == 0


def test_several_reports_in_one_run(tmp_path):
    (tmp_path / "trap.yaml").write_text(BURSTABLE_POD)
    proc = run_cli("lint", "--format", "json", "--output", "r.json", "--format", "sarif",
                   "--output", "r.sarif", "trap.yaml", cwd=tmp_path)
    assert proc.returncode == 1
    assert json.loads((tmp_path / "r.json").read_text())["version"] == 1
    sarif = json.loads((tmp_path / "r.sarif").read_text())
    assert sarif["runs"][0]["results"][0]["ruleId"].startswith("NG")


def test_annotation_suppression_is_counted_and_shown_on_request(tmp_path):
    pod = BURSTABLE_POD.replace("metadata: {name: trap}",
                                "metadata:\n  name: trap\n  annotations:\n"
                                "    numaguard.io/ignore: NG103\n"
                                "    numaguard.io/ignore-reason: burstable on purpose")
    (tmp_path / "trap.yaml").write_text(pod)
    proc = run_cli("lint", "--format", "json", "trap.yaml", cwd=tmp_path)
    report = json.loads(proc.stdout)
    assert "NG103" not in {f["rule"] for f in report["findings"] if not f["suppressed"]}
    assert report["summary"]["suppressed"] >= 1
    shown = run_cli("lint", "--show-suppressed", "trap.yaml", cwd=tmp_path)
    assert "burstable on purpose" in shown.stdout


def test_comment_suppression_in_kubelet_config(tmp_path):
    cfg = (EXAMPLES / "node-pool" / "kubelet-config-from-article.yaml").read_text()
    (tmp_path / "k.yaml").write_text(cfg + "# numaguard: ignore NG208\n")
    proc = run_cli("lint", "--format", "json", "k.yaml", cwd=tmp_path)
    active = {f["rule"] for f in json.loads(proc.stdout)["findings"] if not f["suppressed"]}
    assert "NG208" not in active


def test_rules_listing_formats():
    text = run_cli("rules")
    assert text.returncode == 0 and "NG103  pod-not-guaranteed  [error]" in text.stdout
    as_json = json.loads(run_cli("rules", "--format", "json").stdout)
    assert {"id", "name", "severity", "title", "rationale", "remediation"} <= set(as_json[0])
    assert "| NG208 |" in run_cli("rules", "--format", "markdown").stdout


def test_exclude_globs_lists_and_unknown_kinds(tmp_path):
    (tmp_path / ".numaguard.yaml").write_text("apiVersion: numaguard.io/v1alpha1\nkind: Config\n"
                                              "exclude: ['vendor/**']\n")
    (tmp_path / "vendor").mkdir()
    (tmp_path / "vendor" / "trap.yaml").write_text(BURSTABLE_POD)
    items = "\n".join("  - " + line if i == 0 else "    " + line
                      for i, line in enumerate(BURSTABLE_POD.splitlines()))
    (tmp_path / "list.yaml").write_text(f"apiVersion: v1\nkind: List\nitems:\n{items}\n"
                                        "  - {apiVersion: v1, kind: Service, metadata: {name: s}}\n")
    proc = run_cli("lint", "--format", "json", ".", cwd=tmp_path)
    report = json.loads(proc.stdout)
    files = {f["file"] for f in report["findings"]}
    assert not any("vendor" in f for f in files)
    ng103 = [f for f in report["findings"] if f["rule"] == "NG103"]
    assert ng103 and ng103[0]["file"].endswith("list.yaml")
    assert ng103[0]["path"].startswith("items[0].spec")
    assert report["summary"]["skipped"] == 1       # the Service


def test_junit_and_github_reports(tmp_path):
    import xml.etree.ElementTree as ET

    (tmp_path / "trap.yaml").write_text(BURSTABLE_POD)
    junit = run_cli("lint", "--format", "junit", "trap.yaml", cwd=tmp_path)
    suite = ET.fromstring(junit.stdout.split("?>", 1)[1])
    failures = [c for c in suite.iter("testcase") if c.find("failure") is not None]
    assert any("NG103" in c.get("name") for c in failures)
    assert int(suite.get("failures")) == len(failures)
    github = run_cli("lint", "--format", "github", "trap.yaml", cwd=tmp_path)
    assert re.search(r"^::error file=trap\.yaml,line=\d+,col=\d+,title=NG103 pod-not-guaranteed::",
                     github.stdout, re.M)
