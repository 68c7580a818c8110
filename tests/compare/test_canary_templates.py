"""deploy/canary: the Argo Rollouts AnalysisTemplate and the Flagger MetricTemplates, and the
Rollout and Canary of deploy/README.md's canary chapter that gate a step on them, validated against the
CRDs those projects publish (tests/fixtures/compare/crds, with their origin), as the API server
validates them with strict field validation. The queries themselves run against a real
Prometheus in test_compare_prometheus.py."""
from __future__ import annotations

import copy
import re

import pytest
import yaml

from conftest import FIXTURES, REPO, guide
from crd_schema import errors, validators

CANARY = REPO / "deploy" / "canary"
CRDS = FIXTURES / "compare" / "crds"
VALIDATORS = validators(*sorted(CRDS.glob("*.yaml")))
KINDS = {"AnalysisTemplate", "Rollout", "MetricTemplate", "Canary"}


def _documents(path):
    return [d for d in yaml.safe_load_all(path.read_text()) if d]


def readme_objects() -> list[dict]:
    """The Argo and Flagger objects in deploy/README.md's canary chapter's YAML blocks."""
    chapter = guide("deploy/README.md").split("## A canary rollout with numaguard", 1)[1].split("\n## ", 1)[0]
    blocks = re.findall(r"```yaml\n(.*?)```", chapter, re.S)
    return [d for block in blocks for d in yaml.safe_load_all(block) if isinstance(d, dict) and d.get("kind") in KINDS]


def test_the_crds_give_a_validator_for_each_kind():
    assert set(VALIDATORS) == {("argoproj.io/v1alpha1", "AnalysisTemplate"), ("argoproj.io/v1alpha1", "Rollout"),
                               ("flagger.app/v1beta1", "Canary"), ("flagger.app/v1beta1", "MetricTemplate"),
                               ("flagger.app/v1beta1", "AlertProvider")}


@pytest.mark.parametrize("name", ["argo-analysistemplate.yaml", "flagger-metrictemplates.yaml"])
def test_the_templates_are_valid_against_their_crd(name):
    documents = _documents(CANARY / name)
    assert documents and all(errors(VALIDATORS, d) == [] for d in documents), [errors(VALIDATORS, d) for d in documents]


def test_the_templates_hold_the_metrics_readme_names():
    [argo] = _documents(CANARY / "argo-analysistemplate.yaml")
    assert [m["name"] for m in argo["spec"]["metrics"]] == [
        "runqueue-delay", "cpu-pressure", "involuntary-context-switches", "cpu-throttled-periods", "memory-remote"]
    assert [a["name"] for a in argo["spec"]["args"]] == ["namespace", "rollout", "canary-hash", "stable-hash",
                                                          "prometheus-address"]
    flagger = _documents(CANARY / "flagger-metrictemplates.yaml")
    assert [d["metadata"]["name"] for d in flagger] == ["numaguard-runqueue-delay", "numaguard-cpu-pressure",
                                                       "numaguard-cpu-throttled-periods", "numaguard-memory-remote"]


def test_readme_gates_a_canary_step_on_them_with_valid_objects():
    objects = readme_objects()
    assert sorted(o["kind"] for o in objects) == ["Canary", "Rollout"]
    for obj in objects:
        assert errors(VALIDATORS, obj) == [], obj["kind"]
    rollout = next(o for o in objects if o["kind"] == "Rollout")
    steps = rollout["spec"]["strategy"]["canary"]["steps"]
    analysis = next(s["analysis"] for s in steps if "analysis" in s)
    assert analysis["templates"] == [{"templateName": "numaguard-canary"}]
    assert {a["name"]: a.get("valueFrom", {}).get("podTemplateHashValue") for a in analysis["args"]} == {
        "namespace": None, "rollout": None, "canary-hash": "Latest", "stable-hash": "Stable"}
    canary = next(o for o in objects if o["kind"] == "Canary")
    refs = [m["templateRef"]["name"] for m in canary["spec"]["analysis"]["metrics"]]
    names = {d["metadata"]["name"] for d in _documents(CANARY / "flagger-metrictemplates.yaml")}
    assert refs and set(refs) <= names


@pytest.mark.parametrize("path, value, message", [
    (("spec", "metrics", 0, "succesCondition"), "result[0] < 1", "Additional properties are not allowed ('succesCondition'"),
    (("spec", "metrics", 0, "provider", "prometheus", "timeout"), "30s", "'30s' is not of type 'integer'"),
    (("spec", "metrics", 0, "count"), "6", None),                            # an int-or-string
])
def test_the_validation_bites_on_a_broken_analysis_template(path, value, message):
    [argo] = _documents(CANARY / "argo-analysistemplate.yaml")
    broken = copy.deepcopy(argo)
    node = broken
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = value
    found = errors(VALIDATORS, broken)
    assert (found == []) if message is None else any(message in e for e in found), found


def test_the_validation_bites_on_a_broken_metric_template():
    template = copy.deepcopy(_documents(CANARY / "flagger-metrictemplates.yaml")[0])
    template["spec"]["provider"]["type"] = "prometheus2"
    del template["spec"]["query"]
    assert errors(VALIDATORS, template) == ["spec.provider.type: 'prometheus2' is not one of ['prometheus', 'influxdb', "
                                            "'datadog', 'externalmetrics', 'stackdriver', 'cloudwatch', 'newrelic', "
                                            "'graphite', 'dynatrace', 'keptn', 'splunk']",
                                            "spec: 'query' is a required property"]
