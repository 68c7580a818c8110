"""The engine's plumbing around the rules, with exact values: severity precedence (config
`rules:` over a finding's own severity over the rule's default), suppression by comment
(`# numaguard: ignore ID|all`) and by annotation, the summary's counts, positions, order."""
from __future__ import annotations

import pytest

from numaguard.lint.config import config_from_dict
from numaguard.lint.engine import Selection, lint_documents
from numaguard.lint.load.documents import load_text
from numaguard.lint.model import Severity

from conftest import summary
from test_cli import BURSTABLE_POD

# A KubeletConfiguration whose only finding is NG206 on the topologyManagerPolicy value (8:24).
KUBELET = """\
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
featureGates:
  PodLevelResources: true
  PodLevelResourceManagers: true
cpuManagerPolicy: static
memoryManagerPolicy: Static
topologyManagerPolicy: {policy}
topologyManagerScope: pod
reservedSystemCPUs: "0-1"
reservedMemory:
  - numaNode: 0
    limits: {{memory: 100Mi}}
"""
# Two more findings on the same document: NG202 (gate missing, 4:3) and NG207 (no reserved
# CPUs, at the document: 1:1), both errors by default.
KUBELET_THREE = KUBELET.replace("  PodLevelResourceManagers: true\n", "").replace(
    'reservedSystemCPUs: "0-1"\n', "")
ZERO = {"error": 0, "warning": 0, "info": 0}



# The kubelet configurations here are the declared pool's (its kubeletConfigs name k.yaml), so
# their pool requirements are errors, not the warnings of an assumed configuration; a pool known
# by its kubeletConfigs alone gives pods nothing to target, so the pods stay assumed.
POOL = {"pool": {"kubeletConfigs": ["k.yaml"]}}


def lint(text: str, config: dict | None = None, **selection):
    docs, errors = load_text(text, "k.yaml")
    assert errors == []
    cfg = config_from_dict({"apiVersion": "numaguard.io/v1alpha1", "kind": "Config", **POOL, **(config or {})})
    sel = Selection(severities=cfg.severities, **selection) if selection else None
    return lint_documents(docs, config=cfg, selection=sel)


def rows(result) -> list[tuple]:
    return [(f.rule, f.severity.value, f.line, f.column, f.suppressed) for f in result.findings]


def counts(result) -> dict[str, int]:
    s = result.summary
    return {**s.counts, "suppressed": s.suppressed, "objects": s.objects, "skipped": s.skipped}


# ------------------------------------------------------------------------- severity precedence

@pytest.mark.parametrize("policy,override,severity", [
    ("restricted", None, "info"),              # the finding's own severity beats the default
    ("restricted", "error", "error"),          # README's `rules: {NG206: error}` beats it
    ("restricted", "warning", "warning"),
    ("single-numa", None, "error"),            # an invalid policy: the finding says error
    ("single-numa", "info", "info"),           # and the config still wins, downwards too
    ("best-effort", None, "warning"),          # no own severity: the rule's default
    ("best-effort", "error", "error"),
])
def test_config_severity_beats_the_findings_own_severity(policy, override, severity):
    config = {"rules": {"NG206": override}} if override else {}
    result = lint(KUBELET.format(policy=policy), config)
    assert rows(result) == [("NG206", severity, 8, 24, False)]
    assert counts(result) == {**ZERO, severity: 1, "suppressed": 0, "objects": 1, "skipped": 0}


def test_config_off_drops_the_rule_and_its_count():
    result = lint(KUBELET.format(policy="restricted"), {"rules": {"NG206": "off"}})
    assert rows(result) == []
    assert counts(result) == {**ZERO, "suppressed": 0, "objects": 1, "skipped": 0}


def test_overrides_touch_only_their_rule():
    result = lint(KUBELET_THREE.format(policy="restricted"), {"rules": {"NG206": "error", "NG207": "info"}})
    assert rows(result) == [("NG207", "info", 1, 1, False), ("NG202", "error", 4, 3, False),
                            ("NG206", "error", 7, 24, False)]
    assert counts(result) == {"error": 2, "warning": 0, "info": 1, "suppressed": 0, "objects": 1,
                              "skipped": 0}


def test_select_and_ignore_prefixes():
    text = KUBELET_THREE.format(policy="restricted")
    assert [f.rule for f in lint(text, select=("NG20",), ignore=("NG207",)).findings] == ["NG202", "NG206"]
    assert [f.rule for f in lint(text, select=("NG206",)).findings] == ["NG206"]
    assert lint(text, ignore=("NG2",)).findings == []


# ------------------------------------------------------------------------- suppression

@pytest.mark.parametrize("comment,suppressed", [
    ("# numaguard: ignore all", {"NG202", "NG206", "NG207"}),
    ("# numaguard: ignore ALL", {"NG202", "NG206", "NG207"}),
    ("# numaguard: ignore NG206", {"NG206"}),
    ("# numaguard: ignore ng207, NG202", {"NG202", "NG207"}),
    ("# numaguard: ignore NG2", set()),             # a prefix is not an id
    ("# numaguard: ignore NG999", set()),
])
def test_ignore_comments_suppress_exactly_their_rules(comment, suppressed):
    text = KUBELET_THREE.format(policy="restricted").replace("featureGates:", f"{comment}\nfeatureGates:")
    result = lint(text)
    assert {f.rule: f.suppressed for f in result.findings} == \
        {rule: rule in suppressed for rule in ("NG202", "NG206", "NG207")}
    assert result.summary.suppressed == len(suppressed)
    active = {"NG202": "error", "NG206": "info", "NG207": "error"}
    expected = dict(ZERO)
    for rule, severity in active.items():
        expected[severity] += rule not in suppressed
    assert result.summary.counts == expected
    assert [f.rule for f in result.active] == [r for r in ("NG207", "NG202", "NG206") if r not in suppressed]


def test_ignore_comment_in_one_document_leaves_the_next_alone():
    doc = KUBELET.format(policy="restricted")
    result = lint(f"{doc}---\n# numaguard: ignore all\n{doc}")
    assert rows(result) == [("NG206", "info", 8, 24, False), ("NG206", "info", 23, 24, True)]
    assert counts(result) == {**ZERO, "info": 1, "suppressed": 1, "objects": 2, "skipped": 0}


def test_suppressed_findings_keep_the_overridden_severity():
    text = "# numaguard: ignore NG206\n" + KUBELET.format(policy="restricted")
    result = lint(text, {"rules": {"NG206": "error"}})
    assert rows(result) == [("NG206", "error", 9, 24, True)]
    assert counts(result) == {**ZERO, "suppressed": 1, "objects": 1, "skipped": 0}


def _annotated(value: str, reason: str | None = None) -> str:
    extra = f"\n    numaguard.io/ignore-reason: {reason}" if reason else ""
    return BURSTABLE_POD.replace("metadata: {name: trap}",
                                 f"metadata:\n  name: trap\n  annotations:\n"
                                 f"    numaguard.io/ignore: \"{value}\"{extra}")


@pytest.mark.parametrize("value,suppressed", [
    ("NG103", True), ("ng103", True), ("all", True), ("All", True), ("NG101; NG103", True),
    ("NG101", False), ("NG10", False), ("", False),
])
def test_ignore_annotation(value, suppressed):
    result = lint(_annotated(value, reason="burstable on purpose"))
    [finding] = result.findings
    assert (finding.rule, finding.line, finding.column) == ("NG103", 10, 5)
    assert finding.suppressed is suppressed
    assert finding.suppress_reason == ("burstable on purpose" if suppressed else None)
    assert result.summary.suppressed == int(suppressed)
    # no pool is configured: the pod is assumed managed, so its policy finding is a warning
    assert result.summary.counts == {**ZERO, "warning": int(not suppressed)}


# ------------------------------------------------------------------------- counting and order

def test_summary_counts_objects_skipped_unmanaged_and_list_items():
    text = ("apiVersion: v1\nkind: List\nitems:\n"
            "  - {apiVersion: v1, kind: Service, metadata: {name: s}}\n"
            "  - {apiVersion: v1, kind: Pod, metadata: {name: u, annotations: {numaguard.io/scope: unmanaged}},"
            " spec: {resources: {limits: {cpu: '1'}}, containers: [{name: a, image: i}]}}\n"
            "  - 7\n"
            "---\n" + BURSTABLE_POD)
    result = lint(text)
    assert rows(result) == [("NG001", "error", 6, 5, False), ("NG103", "warning", 13, 5, False)]
    assert result.findings[0].message == "list item is an integer, not a mapping"
    assert result.summary.as_dict() == summary(objects=2, skipped=1, unmanaged=1, assumed_managed=1,
                                                error=1, warning=1, skipped_by={"unknown-kind": 1},
                                                assumedHint=result.summary.assumed_hint())
    assert result.summary.assumed_hint().startswith("1 pod(s) with pod-level cpu/memory were assumed")


def test_findings_are_sorted_by_file_line_column_rule():
    docs_b, _ = load_text(BURSTABLE_POD, "b.yaml")
    docs_a, _ = load_text(KUBELET_THREE.format(policy="restricted"), "a.yaml")
    result = lint_documents(docs_b + docs_a)
    assert [(f.file, f.line, f.column, f.rule) for f in result.findings] == [
        ("a.yaml", 1, 1, "NG207"), ("a.yaml", 4, 3, "NG202"), ("a.yaml", 7, 24, "NG206"),
        ("b.yaml", 6, 5, "NG103")]


def test_plain_dicts_have_no_positions_and_load_errors_keep_theirs():
    from numaguard.lint.load.documents import LoadError
    import yaml

    result = lint_documents([yaml.safe_load(BURSTABLE_POD)],
                            load_errors=[LoadError("x.yaml", 3, 7, "mapping values are not allowed here")])
    assert [(f.rule, f.file, f.line, f.column, f.path) for f in result.findings] == [
        ("NG103", None, None, None, "spec.resources"), ("NG001", "x.yaml", 3, 7, "")]
    assert result.summary.counts == {"error": 1, "warning": 1, "info": 0}


def test_severity_enum_rank_orders_info_warning_error():
    assert [s.rank for s in (Severity.INFO, Severity.WARNING, Severity.ERROR)] == [1, 2, 3]


@pytest.mark.parametrize("comment,annotation,suppressed", [
    ("", "", False),
    ("# numaguard: ignore NG002\n", "", True),
    ("# numaguard: ignore all\n", "", True),
    ("", "  annotations: {numaguard.io/ignore: NG002, numaguard.io/ignore-reason: generated}\n", True),
])
def test_a_workload_without_a_pod_template_can_be_suppressed(comment, annotation, suppressed):
    text = f"{comment}apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: d\n{annotation}spec: {{replicas: 1}}\n"
    result = lint(text)
    [finding] = result.findings
    assert (finding.rule, finding.message, finding.path, finding.suppressed) == \
        ("NG002", "Deployment: spec.template is missing", "spec", suppressed)
    assert finding.line == 5 + bool(comment) + bool(annotation)
    assert finding.suppress_reason == ("generated" if annotation else None)
    assert result.summary.suppressed == int(suppressed)
    assert result.summary.counts == {**ZERO, "error": int(not suppressed)}


def test_findings_on_one_line_are_ordered_by_column_not_rule():
    pod = ("apiVersion: v1\nkind: Pod\nmetadata: {name: p, annotations: {numaguard.io/scope: managed}}\n"
           "spec:\n"
           "  resources:\n"
           "    requests: {cpu: 2500m, memory: 2Gi}\n"
           "    limits: {cpu: 2500m, memory: 2Gi}\n"
           "  containers:\n"
           "    - {name: c, image: i, resources: {requests: {memory: 3Gi}, limits: {memory: 3Gi}}}\n")
    result = lint(pod)
    assert [(f.rule, f.line, f.column) for f in result.findings] == [
        ("NG110", 6, 5), ("NG104", 6, 21), ("NG105", 6, 36), ("NG106", 9, 81)]


@pytest.mark.parametrize("comment,suppressed", [("", False), ("# numaguard: ignore all\n", True),
                                                ("# numaguard: ignore NG001\n", True)])
def test_a_list_item_that_is_not_a_mapping_follows_the_lists_ignore_comment(comment, suppressed):
    result = lint(f"{comment}apiVersion: v1\nkind: List\nitems:\n  - null\n")
    assert [(f.rule, f.message, f.path, f.line, f.suppressed) for f in result.findings] == [
        ("NG001", "list item is null, not a mapping", "items[0]", 4 + bool(comment), suppressed)]
    assert result.summary.counts == {**ZERO, "error": int(not suppressed)}
    assert result.summary.suppressed == int(suppressed)
