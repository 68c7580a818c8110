"""`--format policyreport` for `lint`: wgpolicyk8s.io/v1alpha2 reports whose results match the
JSON report finding for finding."""
from __future__ import annotations

import json

import yaml

from conftest import run_cli

ARGS = ("lint", "--config", "deploy/examples/.numaguard.yaml", "deploy/examples")


def test_policyreport_matches_the_json_report():
    reports = list(yaml.safe_load_all(run_cli(*ARGS, "--format", "policyreport").stdout))
    findings = json.loads(run_cli(*ARGS, "--format", "json").stdout)["findings"]
    assert all(r["apiVersion"] == "wgpolicyk8s.io/v1alpha2" for r in reports)
    kinds = [(r["kind"], r["metadata"].get("namespace")) for r in reports]
    assert kinds[0] == ("ClusterPolicyReport", None)
    assert all(kind == "PolicyReport" and ns for kind, ns in kinds[1:])
    results = [res for r in reports for res in r["results"]]
    assert len(results) == len(findings)
    expected = {"error": "fail", "warning": "warn", "info": "pass"}
    assert sorted((res["rule"], res["result"], res["message"]) for res in results) == sorted(
        (f["rule"], expected[f["severity"]], f["message"]) for f in findings if not f["suppressed"])
    for r in reports:
        outcome = [res["result"] for res in r["results"]]
        assert r["summary"] == {k: outcome.count(k) for k in ("pass", "fail", "warn", "error", "skip")}
        for res in r["results"]:
            assert res["source"] == "numaguard" and res["policy"].startswith("numaguard-")
            assert res["severity"] in ("high", "medium", "info")
            assert all(isinstance(v, str) for v in res["properties"].values())
            if r["kind"] == "PolicyReport":
                assert res["resources"][0]["namespace"] == r["metadata"]["namespace"]


def test_policyreport_of_a_clean_run_is_one_empty_cluster_report(tmp_path):
    clean = tmp_path / "clean.yaml"
    clean.write_text("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n")
    run = run_cli("lint", str(clean), "--format", "policyreport", cwd=tmp_path)
    assert run.returncode == 0
    [report] = list(yaml.safe_load_all(run.stdout))
    assert report["kind"] == "ClusterPolicyReport" and report["results"] == []
    assert report["summary"] == {"pass": 0, "fail": 0, "warn": 0, "error": 0, "skip": 0}
