"""deploy/monitoring: the alerting and recording rules checked and unit-tested by the real
promtool (Debian's prometheus package, installed by .ci/run), the PrometheusRule equal to the
plain rules file, a runbook in deploy/README.md for every alert, the node agent's metrics named as its
metric table names them, and the PodMonitor valid for prometheus-operator's CRD."""
from __future__ import annotations

import re
import shutil
import subprocess

import yaml

from conftest import REPO, guide, tool
from crd_validation import crd_errors

MONITORING = REPO / "deploy" / "monitoring"


def promtool() -> str:
    return tool("promtool")


def _alerts(groups) -> list[str]:
    return [r["alert"] for g in groups for r in g["rules"] if "alert" in r]


def test_promtool_checks_the_rules():
    run = subprocess.run([promtool(), "check", "rules", "numaguard.rules.yaml"], cwd=MONITORING,
                         capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "SUCCESS: 22 rules found" in run.stdout


def test_promtool_unit_tests_fire_and_stay_quiet():
    run = subprocess.run([promtool(), "test", "rules", "numaguard.rules.test.yaml"], cwd=MONITORING,
                         capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "SUCCESS" in run.stdout


def test_promtool_unit_tests_can_fail(tmp_path):
    """The unit tests are not vacuous: with the pool label renamed nothing fires and they fail."""
    for name in ("numaguard.rules.yaml", "numaguard.rules.test.yaml"):
        shutil.copy(MONITORING / name, tmp_path / name)
    rules = tmp_path / "numaguard.rules.yaml"
    rules.write_text(rules.read_text().replace('label_node_example_com_pool="numa"', 'label_node_example_com_pool="other"'))
    run = subprocess.run([promtool(), "test", "rules", "numaguard.rules.test.yaml"], cwd=tmp_path,
                         capture_output=True, text=True, timeout=120)
    assert run.returncode == 1
    assert "NumaguardPoolNodePressure" in run.stdout + run.stderr


def test_every_alert_is_tested_to_fire():
    plain = yaml.safe_load((MONITORING / "numaguard.rules.yaml").read_text())
    tests = yaml.safe_load((MONITORING / "numaguard.rules.test.yaml").read_text())
    fired = {t["alertname"] for group in tests["tests"] for t in group["alert_rule_test"] if t["exp_alerts"]}
    assert fired == set(_alerts(plain["groups"]))


def test_prometheusrule_equals_the_plain_rules_file():
    plain = yaml.safe_load((MONITORING / "numaguard.rules.yaml").read_text())
    crd = yaml.safe_load((MONITORING / "prometheusrule.yaml").read_text())
    assert crd["apiVersion"] == "monitoring.coreos.com/v1" and crd["kind"] == "PrometheusRule"
    assert crd["spec"]["groups"] == plain["groups"]


RUNBOOKS = "https://github.com/numaguard/numaguard/blob/main/deploy/README.md#"


def test_every_alert_has_a_runbook_in_the_operators_guide():
    readme = guide("deploy/README.md")
    plain = yaml.safe_load((MONITORING / "numaguard.rules.yaml").read_text())
    for group in plain["groups"]:
        for rule in (r for r in group["rules"] if "alert" in r):
            assert rule["annotations"]["runbook_url"] == RUNBOOKS + rule["alert"].lower()
            assert re.search(rf"^### {rule['alert']}$", readme, re.M), f"no runbook for {rule['alert']}"


def test_the_rules_use_only_the_node_agents_metrics():
    """Every numaguard_container_/node_/agent_ name in the rules and their tests is one the agent
    exports (lint/agent_metrics.py), so a renamed metric cannot leave a rule that never fires."""
    from numaguard.lint.agent_metrics import METRICS

    names = {m.name for m in METRICS}
    for file in ("numaguard.rules.yaml", "numaguard.rules.test.yaml"):
        used = set(re.findall(r"numaguard_(?:container|node|agent)_[a-z_]+", (MONITORING / file).read_text()))
        assert used and used <= names, (file, used - names)


def test_the_podmonitor_is_valid_for_prometheus_operator():
    crd = REPO / "tests/fixtures/prometheus-operator/podmonitors.crd.yaml"
    monitor = yaml.safe_load((MONITORING / "podmonitor.yaml").read_text())
    assert crd_errors(monitor, crd) == []
    daemonset = next(d for d in yaml.safe_load_all((REPO / "deploy/node-inspect/daemonset.yaml").read_text())
                     if d["kind"] == "DaemonSet")
    pod = daemonset["spec"]["template"]
    assert monitor["spec"]["selector"]["matchLabels"].items() <= pod["metadata"]["labels"].items()
    assert monitor["spec"]["namespaceSelector"]["matchNames"] == [daemonset["metadata"]["namespace"]]
    agent = next(c for c in pod["spec"]["containers"] if c["name"] == "agent")
    [endpoint] = monitor["spec"]["podMetricsEndpoints"]
    assert endpoint["port"] in {p["name"] for p in agent["ports"]} and endpoint["honorLabels"] is True
    # a typo is caught, as kubectl's strict field validation would
    endpoint["honourLabels"] = endpoint.pop("honorLabels")
    assert crd_errors(monitor, crd) == [
        "spec.podMetricsEndpoints.0: Additional properties are not allowed ('honourLabels' was unexpected)"]


def test_the_canary_walkthrough_names_every_alert_on_the_agents_series():
    """Step 4 of deploy/README.md's canary chapter names each alert of the agent's group, with the agent's
    series it fires on, and applies the PodMonitor that lets Prometheus scrape the agent."""
    plain = yaml.safe_load((MONITORING / "numaguard.rules.yaml").read_text())
    [agent] = [g for g in plain["groups"] if g["name"] == "numaguard.agent"]
    readme = guide("deploy/README.md")
    chapter = readme.split("## A canary rollout with numaguard", 1)[1].split("\n## ", 1)[0]
    step4 = chapter.split("**4. ", 1)[1].split("**5. ", 1)[0]
    assert _alerts([agent]) == ["NumaguardThreadsOutsideExclusiveCPUs", "NumaguardMemoryRemote",
                                "NumaguardExclusiveCPUsThrottled", "NumaguardRunQueueDelayHigh",
                                "NumaguardNodeAgentIncomplete"]
    assert all(name in step4 for name in _alerts([agent])), [n for n in _alerts([agent]) if n not in step4]
    assert "kubectl apply -f deploy/monitoring/podmonitor.yaml -f deploy/monitoring/prometheusrule.yaml" in step4
