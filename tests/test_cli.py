"""The command line, run as the real console script on real files."""
from __future__ import annotations

import json
import re

import pytest

from conftest import BURSTABLE_POD, GOOD_POD, MANAGED_BURSTABLE_POD, REPO, run_cli, summary

EXAMPLES = REPO / "deploy" / "examples"
EXAMPLE_CONFIG = str(EXAMPLES / ".numaguard.yaml")


def test_examples_show_findings_with_positions_and_fixes():
    proc = run_cli("lint", "--config", EXAMPLE_CONFIG, str(EXAMPLES))
    assert proc.returncode == 1, proc.stderr
    out = proc.stdout
    # every finding line is file:line:col  ID  severity
    assert re.search(r"^  \S+/workloads/order-matcher\.yaml:22:9  NG103  error  ", out, re.M)
    assert re.search(r"^  \S+/node-pool/kubelet-config-from-article\.yaml:4:1  NG208  error  ", out, re.M)
    assert re.search(r"^  \S+/workloads/half-written\.yaml:10:1  NG001  error  ", out, re.M)
    assert out.count("\n      fix: ") == 33
    assert "\033[" not in out            # no colour when not on a terminal
    assert out.endswith("\n14 file(s), 11 object(s) checked, 2 skipped (2 unknown-kind), 0 opted out: "
                        "27 error(s), 2 warning(s), 4 info, 0 suppressed\n")
    # the well-formed workloads have no error; the numa pool's odd configurations are named
    # against that pool only, the edge pool's configuration against nothing (two pools)
    assert not re.search(r"(packet-gateway|edge-cache)\.yaml:\d+:\d+  NG\d+  (error|warning)", out)
    assert not re.search(r"edge-pool/kubelet-config\.yaml:\d+:\d+  NG", out)
    assert out.count("  NG401  error  ") == 13 and "configurations of pool numa (" in out


def test_json_report_shape_and_points_at_the_field(tmp_path):
    f = tmp_path / "trap.yaml"
    f.write_text(MANAGED_BURSTABLE_POD)
    proc = run_cli("lint", "--format", "json", str(f), cwd=tmp_path)
    assert proc.returncode == 1
    report = json.loads(proc.stdout)
    assert report["version"] == 1
    [finding] = report["findings"]
    message = finding.pop("message")
    assert message.startswith("pod QoS is Burstable: pod-level requests.cpu defaulted to 1 from "
                              "container 'app' requests.cpu (limits.cpu is 4)")
    assert finding.pop("remediation")
    assert finding == {"rule": "NG103", "name": "pod-not-guaranteed", "severity": "error",
                       "file": str(f), "line": 6, "column": 5,       # spec.resources' value
                       "object": {"apiVersion": "v1", "kind": "Pod", "namespace": None,
                                  "name": "trap", "container": None},
                       "path": "spec.resources", "suppressed": False}
    assert report["summary"] == summary(files=1, objects=1, error=1, declared_by={"pods": {"annotation": 1}})


def test_assumed_pod_warns_and_exits_zero(tmp_path):
    """Issue 13 §3: with no pool configured the same pod is only assumed to be managed."""
    (tmp_path / "trap.yaml").write_text(BURSTABLE_POD)
    proc = run_cli("lint", "--format", "json", "trap.yaml", cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout
    report = json.loads(proc.stdout)
    assert [(f["rule"], f["severity"], f["line"]) for f in report["findings"]] == [("NG103", "warning", 6)]
    assert report["summary"]["assumedManaged"] == 1 and report["summary"]["warning"] == 1
    assert run_cli("lint", "--fail-on", "warning", "trap.yaml", cwd=tmp_path).returncode == 1


def test_clean_file_exits_zero(tmp_path):
    f = tmp_path / "ok.yaml"
    f.write_text(GOOD_POD)
    proc = run_cli("lint", str(f), cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_stdin(tmp_path):
    proc = run_cli("lint", "-", stdin=MANAGED_BURSTABLE_POD, cwd=tmp_path)
    assert proc.returncode == 1
    assert "\n  <stdin>:6:5  NG103  error  pod QoS is Burstable" in proc.stdout


def test_broken_file_is_a_finding_and_the_others_are_still_linted(tmp_path):
    (tmp_path / "a-broken.yaml").write_text("kind: Pod\nspec: {containers: [\n")
    (tmp_path / "b-trap.yaml").write_text(MANAGED_BURSTABLE_POD)
    (tmp_path / "c-bytes.yaml").write_bytes(b"kind: Pod\nmetadata: {name: \xff\xfe}\n")
    proc = run_cli("lint", "--format", "json", str(tmp_path), cwd=tmp_path)
    assert proc.returncode == 1, proc.stderr
    assert "Traceback" not in proc.stderr
    report = json.loads(proc.stdout)
    assert [(f["file"].rsplit("/", 1)[-1], f["line"], f["column"], f["rule"])
            for f in report["findings"]] == [
        ("a-broken.yaml", 3, 1, "NG001"), ("b-trap.yaml", 6, 5, "NG103"), ("c-bytes.yaml", 2, 18, "NG001")]
    assert report["findings"][2]["message"] == \
        "file is not valid UTF-8: byte 0xff at offset 27 cannot be decoded"
    assert report["summary"] == summary(files=3, objects=1, error=3, declared_by={"pods": {"annotation": 1}})


@pytest.mark.parametrize("args,needle", [
    (("lint", "does/not/exist.yaml"), "no such file"),
    (("lint", "--select", "NG999", "."), "unknown rule"),
    (("lint", "--format", "xml", "."), "xml"),
    (("lint", "--output", "report.out", "."), "cannot tell the report format from the extension .out"),
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
    assert proc.returncode == 0, proc.stderr          # a warning does not fail by default
    assert [(f["rule"], f["severity"], f["line"]) for f in json.loads(proc.stdout)["findings"]] == \
        [("NG103", "warning", 6)]


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
    (tmp_path / "trap.yaml").write_text(MANAGED_BURSTABLE_POD)
    proc = run_cli("lint", "--format", "json", "--output", "r.json", "--format", "sarif",
                   "--output", "r.sarif", "trap.yaml", cwd=tmp_path)
    assert proc.returncode == 1
    assert json.loads((tmp_path / "r.json").read_text())["version"] == 1
    sarif = json.loads((tmp_path / "r.sarif").read_text())
    [result] = sarif["runs"][0]["results"]
    assert (result["ruleId"], result["level"]) == ("NG103", "error")
    assert result["locations"][0]["physicalLocation"] == {
        "artifactLocation": {"uri": "trap.yaml"}, "region": {"startLine": 6, "startColumn": 5}}


def test_output_without_format_takes_the_format_from_the_extension(tmp_path):
    (tmp_path / "trap.yaml").write_text(MANAGED_BURSTABLE_POD)
    proc = run_cli("lint", "--output", "r.json", "--output", "r.sarif", "--output", "r.xml", "--output", "r.html",
                   "--output", "r.txt", "trap.yaml", cwd=tmp_path)
    assert (proc.returncode, proc.stdout, proc.stderr) == (1, "", "")
    assert json.loads((tmp_path / "r.json").read_text())["findings"][0]["rule"] == "NG103"
    assert json.loads((tmp_path / "r.sarif").read_text())["version"] == "2.1.0"
    assert (tmp_path / "r.xml").read_text().startswith("<?xml version='1.0' encoding='utf-8'?>\n<testsuite ")
    assert (tmp_path / "r.html").read_text().startswith("<!DOCTYPE html>")
    assert (tmp_path / "r.txt").read_text().startswith("trap.yaml\n  trap.yaml:6:5  NG103  error  ")
    # an extension that says nothing is one line and exit 2, before anything is linted or written
    refused = run_cli("lint", "--output", "r.json", "--output", "report.out", "trap.yaml", cwd=tmp_path)
    assert refused.returncode == 2
    assert refused.stderr.splitlines() == [
        "Error: report.out: cannot tell the report format from the extension .out: give --format, or name "
        "the file .htm, .html, .json, .sarif, .text, .txt, .xml, .yaml, .yml"]


def test_annotation_suppression_is_counted_and_shown_on_request(tmp_path):
    pod = BURSTABLE_POD.replace("metadata: {name: trap}",
                                "metadata:\n  name: trap\n  annotations:\n"
                                "    numaguard.io/scope: managed\n"
                                "    numaguard.io/ignore: NG103\n"
                                "    numaguard.io/ignore-reason: burstable on purpose")
    (tmp_path / "trap.yaml").write_text(pod)
    proc = run_cli("lint", "--format", "json", "--show-suppressed", "trap.yaml", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    assert [(f["rule"], f["line"], f["suppressed"], f["suppressReason"]) for f in report["findings"]] == \
        [("NG103", 11, True, "burstable on purpose")]
    hidden_json = json.loads(run_cli("lint", "--format", "json", "trap.yaml", cwd=tmp_path).stdout)
    assert hidden_json["findings"] == [] and hidden_json["summary"] == report["summary"]
    assert report["summary"] == summary(files=1, objects=1, suppressed=1, declared_by={"pods": {"annotation": 1}})
    hidden = run_cli("lint", "trap.yaml", cwd=tmp_path)
    assert hidden.stdout == ("tiers: 1 pod(s) declared by numaguard.io/scope: managed\n"
                             "1 file(s), 1 object(s) checked, 0 skipped, 0 opted out: "
                             "0 error(s), 0 warning(s), 0 info, 1 suppressed\n")
    shown = run_cli("lint", "--show-suppressed", "trap.yaml", cwd=tmp_path)
    assert "  trap.yaml:11:5  NG103  error  pod QoS is Burstable" in shown.stdout
    assert "(suppressed: burstable on purpose)\n" in shown.stdout


def test_comment_suppression_in_kubelet_config(tmp_path):
    cfg = (EXAMPLES / "node-pool" / "kubelet-config-from-article.yaml").read_text()
    (tmp_path / "k.yaml").write_text(cfg + "# numaguard: ignore NG208\n")
    proc = run_cli("lint", "--format", "json", "--show-suppressed", "k.yaml", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    assert [(f["rule"], f["line"], f["column"], f["suppressed"]) for f in report["findings"]] == \
        [("NG208", 4, 1, True)]
    assert report["summary"]["suppressed"] == 1 and report["summary"]["error"] == 0


def test_ignore_all_comment_suppresses_every_rule_of_its_document_only(tmp_path):
    from test_engine_plumbing import KUBELET_THREE

    bad = KUBELET_THREE.format(policy="best-effort")
    (tmp_path / "k.yaml").write_text(f"{bad}---\n# numaguard: ignore all\n{bad}")
    # a declared pool's configurations: their pool requirements are errors (NG202)
    (tmp_path / ".numaguard.yaml").write_text("pool:\n  kubeletConfigs: [k.yaml]\n")
    proc = run_cli("lint", "--format", "json", "--show-suppressed", "k.yaml", cwd=tmp_path)
    assert proc.returncode == 1, proc.stderr
    report = json.loads(proc.stdout)
    assert [(f["rule"], f["line"], f["column"], f["suppressed"]) for f in report["findings"]] == [
        ("NG207", 1, 1, False), ("NG202", 4, 3, False), ("NG206", 7, 24, False),
        ("NG207", 14, 1, True), ("NG202", 17, 3, True), ("NG206", 20, 24, True)]
    assert report["summary"] == summary(files=1, objects=2, error=2, warning=1, suppressed=3,
                                         declared_by={"kubeletConfigurations": {"pool": 2}})
    (tmp_path / "k.yaml").write_text(f"# numaguard: ignore all\n{bad}")
    quiet = run_cli("lint", "k.yaml", cwd=tmp_path)
    assert quiet.returncode == 0, quiet.stdout
    assert quiet.stdout == ("tiers: 1 kubelet configuration(s) declared by a pool\n"
                            "1 file(s), 1 object(s) checked, 0 skipped, 0 opted out: "
                            "0 error(s), 0 warning(s), 0 info, 3 suppressed\n")


def test_config_severity_override_beats_the_findings_own_severity(tmp_path):
    from test_engine_plumbing import KUBELET

    (tmp_path / "k.yaml").write_text(KUBELET.format(policy="restricted"))      # NG206 says info
    plain = run_cli("lint", "k.yaml", cwd=tmp_path)
    assert plain.returncode == 0 and "  k.yaml:8:24  NG206  info  " in plain.stdout
    # a declared pool's configuration: an assumed one's findings stay warnings at most
    (tmp_path / ".numaguard.yaml").write_text("apiVersion: numaguard.io/v1alpha1\nkind: Config\n"
                                              "rules: {NG112: off, NG206: error}\n"
                                              "pool: {kubeletConfigs: [k.yaml]}\n")
    raised = run_cli("lint", "k.yaml", cwd=tmp_path)
    assert raised.returncode == 1, raised.stdout + raised.stderr
    assert "  k.yaml:8:24  NG206  error  " in raised.stdout
    assert raised.stdout.endswith(": 1 error(s), 0 warning(s), 0 info, 0 suppressed\n")


def test_rules_listing_formats():
    text = run_cli("rules")
    assert text.returncode == 0 and "NG103  pod-not-guaranteed  [error]" in text.stdout
    as_json = json.loads(run_cli("rules", "--format", "json").stdout)
    assert set(as_json[0]) == {"id", "name", "severity", "title", "rationale", "remediation", "target",
                               "needsNode", "fix"}
    from numaguard.lint.rules.registry import all_rules
    assert [(r["id"], r["severity"]) for r in as_json] == [(r.id, r.severity.value) for r in all_rules()]
    assert "| [NG208](#ng208-reserved-memory-mismatch-error) |" in run_cli("rules", "--format", "markdown").stdout


def test_exclude_globs_lists_and_unknown_kinds(tmp_path):
    (tmp_path / ".numaguard.yaml").write_text("apiVersion: numaguard.io/v1alpha1\nkind: Config\n"
                                              "exclude: ['vendor/**']\n")
    (tmp_path / "vendor").mkdir()
    (tmp_path / "vendor" / "trap.yaml").write_text(MANAGED_BURSTABLE_POD)
    items = "\n".join("  - " + line if i == 0 else "    " + line
                      for i, line in enumerate(MANAGED_BURSTABLE_POD.splitlines()))
    (tmp_path / "list.yaml").write_text(f"apiVersion: v1\nkind: List\nitems:\n{items}\n"
                                        "  - {apiVersion: v1, kind: Service, metadata: {name: s}}\n")
    proc = run_cli("lint", "--format", "json", ".", cwd=tmp_path)
    report = json.loads(proc.stdout)
    assert [(f["file"], f["line"], f["column"], f["rule"], f["path"]) for f in report["findings"]] == \
        [("./list.yaml", 9, 9, "NG103", "items[0].spec.resources")]
    assert report["summary"] == summary(files=1, objects=1, skipped=1, error=1,
                                        skipped_by={"unknown-kind": 1}, declared_by={"pods": {"annotation": 1}})


def test_junit_and_github_reports(tmp_path):
    import xml.etree.ElementTree as ET

    (tmp_path / "trap.yaml").write_text(MANAGED_BURSTABLE_POD)
    junit = run_cli("lint", "--format", "junit", "trap.yaml", cwd=tmp_path)
    suite = ET.fromstring(junit.stdout.split("?>", 1)[1])
    [case] = suite.iter("testcase")
    assert case.get("name") == "NG103 pod-not-guaranteed Pod/trap trap.yaml:6:5"
    assert [(child.tag, child.get("type")) for child in case] == [("failure", "error")]
    assert (suite.get("tests"), suite.get("failures"), suite.get("skipped")) == ("1", "1", "0")
    github = run_cli("lint", "--format", "github", "trap.yaml", cwd=tmp_path)
    [line] = github.stdout.splitlines()
    assert line.startswith("::error file=trap.yaml,line=6,col=5,title=NG103 pod-not-guaranteed::"
                           "pod QoS is Burstable")
