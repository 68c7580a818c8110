"""Baselines (--write-baseline, --baseline) and SARIF fingerprints, run as the real console
script on real files: entries survive edits that move lines, only new findings count."""
from __future__ import annotations

import hashlib
import json

from conftest import BURSTABLE_POD, run_cli, summary

from numaguard.lint.baseline import Baseline, apply_baseline, entry_for, fingerprints
from numaguard.lint.engine import LintResult
from numaguard.lint.model import Finding, ObjectRef, Severity, Summary

TRAP = BURSTABLE_POD.replace("{name: trap}", "{name: trap, namespace: team}")

HALF = """\
apiVersion: apps/v1
kind: Deployment
metadata: {name: half, namespace: team}
spec:
  selector: {matchLabels: {app: half}}
  template:
    metadata: {labels: {app: half}}
    spec:
      resources:
        requests: {cpu: 1500m, memory: 2Gi}
        limits: {cpu: 1500m, memory: 2Gi}
      containers:
        - name: app
          image: registry.example.com/app:1.0
"""

SHIFT = "# three lines added above\n# everything moves down\n# by three\n"


def _print(*fields: str) -> str:
    return hashlib.sha256("\x1f".join(fields).encode()).hexdigest()[:32]


NG103 = ("NG103", "apps.yaml", "Pod", "team", "trap", "", "spec.resources")
NG104 = ("NG104", "apps.yaml", "Deployment", "team", "half", "",
         "spec.template.spec.resources.requests.cpu")
NG110 = ("NG110", "apps.yaml", "Deployment", "team", "half", "", "spec.template.spec.resources")


def _entry(fields: tuple[str, ...], count: int = 1) -> dict:
    rule, file, kind, ns, name, container, path = fields
    return {"fingerprint": _print(*fields), "rule": rule, "file": file, "kind": kind,
            "namespace": ns, "name": name, "container": container or None, "path": path,
            "count": count}


def _write_baseline(tmp_path) -> None:
    # scope all: the pods are the pool's, so their policy findings are errors (not assumed)
    (tmp_path / ".numaguard.yaml").write_text("scope: all\n")
    (tmp_path / "apps.yaml").write_text(TRAP + "---\n" + HALF)
    proc = run_cli("lint", "--write-baseline", "base.json", "apps.yaml", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr        # recording accepts today's findings
    assert proc.stderr == "numaguard: recorded 3 finding(s) in base.json\n"


def test_write_baseline_records_rule_object_and_field_not_lines(tmp_path):
    _write_baseline(tmp_path)
    data = json.loads((tmp_path / "base.json").read_text())
    assert data == {"version": 1, "tool": "numaguard",
                    "entries": [_entry(NG103), _entry(NG104), _entry(NG110)]}


def test_baseline_survives_lines_moving_and_reports_only_the_new_finding(tmp_path):
    _write_baseline(tmp_path)
    new_pod = TRAP.replace("name: trap", "name: trap2")
    (tmp_path / "apps.yaml").write_text(SHIFT + TRAP + "---\n" + HALF + "---\n" + new_pod)

    proc = run_cli("lint", "--baseline", "base.json", "--format", "json", "apps.yaml", cwd=tmp_path)
    assert proc.returncode == 1, proc.stderr
    report = json.loads(proc.stdout)
    got = [(f["rule"], f["object"]["name"], f["line"], f["column"], f["baselineState"])
           for f in report["findings"]]
    assert got == [("NG103", "trap", 9, 5, "unchanged"),
                   ("NG110", "half", 25, 9, "unchanged"),
                   ("NG104", "half", 25, 25, "unchanged"),
                   ("NG103", "trap2", 36, 5, "new")]
    assert report["fixed"] == []
    assert report["summary"] == {"files": 1, "objects": 3, "skipped": 0, "unmanaged": 0,
                                 "hint": None, "skippedByReason": {"not-kubernetes": 0, "patch": 0,
                                                                   "template": 0, "unknown-kind": 0,
                                                                   "dangling-symlink": 0, "deletion": 0},
                                 "assumedManaged": 0, "assumedKubelets": 0, "assumedHint": None,
                                 "declaredBy": summary(declared_by={"pods": {"scopeAll": 3}})["declaredBy"],
                                 "error": 1, "warning": 0, "info": 0,
                                 "suppressed": 0,
                                 "baselineUnchanged": 3, "baselineFixed": 0}

    text = run_cli("lint", "--baseline", "base.json", "apps.yaml", cwd=tmp_path)
    assert text.returncode == 1
    assert [line for line in text.stdout.splitlines() if "  NG" in line] == [
        "  apps.yaml:36:5  NG103  error  pod QoS is Burstable: pod-level requests.cpu defaulted "
        "to 1 from container 'app' requests.cpu (limits.cpu is 4); set spec.resources.requests.cpu: \"4\""]
    assert text.stdout.splitlines()[-1] == (
        "1 file(s), 3 object(s) checked, 0 skipped, 0 opted out: 1 error(s), "
        "0 warning(s), 0 info, 0 suppressed, 3 in baseline, 0 fixed")


def test_only_unchanged_findings_pass_and_fixed_entries_are_listed(tmp_path):
    _write_baseline(tmp_path)
    fixed_half = HALF.replace("1500m", '"2"')
    (tmp_path / "apps.yaml").write_text(SHIFT + TRAP + "---\n" + fixed_half)

    proc = run_cli("lint", "--baseline", "base.json", "apps.yaml", cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout == (
        "fixed since the baseline (no longer found)\n"
        "  apps.yaml  NG104  Deployment/team/half  field: spec.template.spec.resources.requests.cpu\n"
        "\n"
        "tiers: 2 pod(s) declared by scope: all\n"
        "1 file(s), 2 object(s) checked, 0 skipped, 0 opted out: 0 error(s), "
        "0 warning(s), 0 info, 0 suppressed, 2 in baseline, 1 fixed\n")

    report = json.loads(run_cli("lint", "--baseline", "base.json", "--format", "json",
                                "apps.yaml", cwd=tmp_path).stdout)
    # the pod budget (NG110, info) is still reported with whole CPUs: it stays in the baseline
    assert report["fixed"] == [{k: v for k, v in _entry(NG104).items() if k != "count"}]
    assert [(f["rule"], f["baselineState"]) for f in report["findings"]] == [
        ("NG103", "unchanged"), ("NG110", "unchanged")]


def test_sarif_fingerprints_follow_a_finding_across_an_edit(tmp_path):
    _write_baseline(tmp_path)
    before = json.loads(run_cli("lint", "--format", "sarif", "apps.yaml", cwd=tmp_path).stdout)
    results = before["runs"][0]["results"]
    assert [(r["ruleId"], r["locations"][0]["physicalLocation"]["region"]["startLine"],
             r["partialFingerprints"]) for r in results] == [
        ("NG103", 6, {"numaguard/v1": _print(*NG103)}),
        ("NG110", 22, {"numaguard/v1": _print(*NG110)}),
        ("NG104", 22, {"numaguard/v1": _print(*NG104)})]
    assert all("baselineState" not in r for r in results)      # no baseline given

    (tmp_path / "apps.yaml").write_text(SHIFT + TRAP + "---\n" + HALF.replace("1500m", '"2"'))
    after = json.loads(run_cli("lint", "--baseline", "base.json", "--format", "sarif",
                               "apps.yaml", cwd=tmp_path).stdout)
    assert [(r["ruleId"], r["partialFingerprints"]["numaguard/v1"], r["baselineState"],
             r["locations"][0]["physicalLocation"].get("region", {}).get("startLine"))
            for r in after["runs"][0]["results"]] == [
        ("NG103", _print(*NG103), "unchanged", 9),
        ("NG110", _print(*NG110), "unchanged", 25),
        ("NG104", _print(*NG104), "absent", None)]


def test_entries_of_files_not_linted_are_not_called_fixed(tmp_path):
    _write_baseline(tmp_path)
    (tmp_path / "other.yaml").write_text(HALF.replace("1500m", '"2"'))
    proc = run_cli("lint", "--baseline", "base.json", "--format", "json", "other.yaml", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    assert report["fixed"] == []
    assert report["summary"]["baselineUnchanged"] == 0
    assert [f["baselineState"] for f in report["findings"]] == ["new"]      # NG110 info


def test_unusable_baseline_is_exit_2_with_one_line(tmp_path):
    (tmp_path / "apps.yaml").write_text(TRAP)
    (tmp_path / "broken.json").write_text("{not json")
    (tmp_path / "future.json").write_text('{"version": 2, "tool": "numaguard", "entries": []}')
    (tmp_path / "badcount.json").write_text(
        '{"version": 1, "tool": "numaguard", "entries": [{"rule": "NG103", "count": 0}]}')
    cases = {
        "missing.json": "Error: baseline not found: missing.json\n",
        "broken.json": "Error: broken.json: not JSON: Expecting property name enclosed in double "
                       "quotes: line 1 column 2 (char 1)\n",
        "future.json": "Error: future.json: baseline version 2 is not supported (this numaguard "
                       "reads version 1)\n",
        "badcount.json": "Error: badcount.json: entries[0].count: expected a positive integer\n",
    }
    for name, message in cases.items():
        proc = run_cli("lint", "--baseline", name, "apps.yaml", cwd=tmp_path)
        assert (proc.returncode, proc.stdout, proc.stderr) == (2, "", message)


def _finding(line: int) -> Finding:
    return Finding(rule="NG105", name="x", severity=Severity.WARNING, message="m", remediation="r",
                   file="./a.yaml", line=line, column=3, object=ObjectRef("v1", "Pod", None, "p"),
                   container="app", path="spec.containers[0].resources")


def test_identical_findings_are_counted_and_fingerprinted_apart():
    twice = [_finding(4), _finding(9)]
    baseline = Baseline.from_findings(twice)
    assert list(baseline.counts.values()) == [2]
    assert entry_for(twice[0]).file == "a.yaml"
    first = _print("NG105", "a.yaml", "Pod", "", "p", "app", "spec.containers[0].resources")
    assert fingerprints(twice) == [first, first + ":2"]

    summary = Summary(counts={"error": 0, "warning": 1, "info": 0})
    result = LintResult([_finding(4)], summary)
    apply_baseline(result, baseline, linted_files=["a.yaml"])
    assert [f.baseline_state for f in result.findings] == ["unchanged"]
    assert result.active == []
    assert summary.counts["warning"] == 0
    assert (summary.baseline_unchanged, summary.baseline_fixed) == (1, 1)
    assert [e.rule for e in result.fixed] == ["NG105"]
