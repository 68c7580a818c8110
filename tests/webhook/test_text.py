"""Warnings an operator can act on: the rule ID and the whole fix within 256 characters (what the
API server keeps of a warning once warnings pass 4,096 in total), the message shortened first."""
from __future__ import annotations

import pytest

from numaguard.lint.model import Finding, Severity
from numaguard.lint.rules.registry import all_rules
from numaguard.webhook.decide import JUDGED
from numaguard.webhook.replicas import REPLICATED_KINDS
from numaguard.webhook.review import AdmissionRequest
from numaguard.webhook.text import (WARNING_MAX_CHARS, audit_findings, deny_message, finding_line, kept_errors_lead,
                                    one_line)

FIX = "Set spec.resources.requests equal to spec.resources.limits for both cpu and memory, explicitly."


def _f(message: str, remediation: str = FIX, path: str = "spec.template.spec.resources", rule: str = "NG103") -> Finding:
    return Finding(rule=rule, name="n", severity=Severity.ERROR, message=message, remediation=remediation, path=path)


def test_a_short_finding_is_whole():
    assert finding_line(_f("pod QoS is Burstable")) == (
        f"NG103 spec.template.spec.resources: pod QoS is Burstable Fix: {FIX}")


def test_the_message_is_shortened_at_a_word_and_the_fix_kept_whole():
    line = finding_line(_f("the pod " * 40))
    assert line == "NG103 spec.template.spec.resources: " + "the pod " * 14 + "the... Fix: " + FIX
    assert len(line) == 255


def test_the_note_outranks_the_message_and_the_path_goes_last():
    note = "(unchanged by this update)"
    assert finding_line(_f("m" * 300), note=note) == (
        f"NG103 spec.template.spec.resources: {note} " + "m" * 89 + "... Fix: " + FIX)
    long_fix = "x" * 200
    assert finding_line(_f("m" * 300, long_fix), note=note) == (
        f"NG103 spec.template.spec.resources: (unchanged... Fix: {long_fix}")
    longer_fix = "x" * 230
    assert finding_line(_f("m" * 300, longer_fix), note=note) == f"NG103: ... Fix: {longer_fix}"
    # Only a fix too long for the limit on its own goes over it, whole.
    assert finding_line(_f("m", "y" * 300)) == "NG103: Fix: " + "y" * 300


# Rules about a live node (`numaguard node inspect`: its checkpoints, its processes) never judge an
# admission request's object; every other rule may reach a warning.
ADMISSION_RULES = [r for r in all_rules() if r.target != "node"]


def test_the_rules_left_out_are_the_node_inspect_rules():
    assert [r.id for r in all_rules() if r not in ADMISSION_RULES] == [
        "NG409", "NG412", "NG413", "NG414", "NG415", "NG416", "NG417", "NG418", "NG423"]


@pytest.mark.parametrize("rule", ADMISSION_RULES, ids=lambda r: r.id)
def test_every_rules_fix_fits_in_a_warning_with_its_id_and_field(rule):
    """Each rule's fix with its ID fits; the field too where there is room (for the longest fixes,
    NG301's and NG302's, on a CronJob's template there is not)."""
    path = "spec.jobTemplate.spec.template.spec.resources.requests.cpu"
    line = finding_line(_f("m" * 500, rule.remediation, path, rule.id))
    assert line.startswith((f"{rule.id} {path}: ", f"{rule.id}: ")) and line.endswith(" Fix: " + one_line(rule.remediation))
    assert len(line) <= WARNING_MAX_CHARS


@pytest.mark.parametrize("group, kind", sorted(JUDGED))
def test_the_update_lead_says_what_becomes_of_new_pods_within_256(group, kind):
    for count in (1, 12):
        lead = kept_errors_lead(kind, count, (group, kind) in REPLICATED_KINDS)
        assert len(lead) <= WARNING_MAX_CHARS


def test_the_update_lead_promises_replicas_only_where_a_built_in_controller_writes_them():
    assert sorted(REPLICATED_KINDS) == [("", "ReplicationController"), ("apps", "DaemonSet"), ("apps", "Deployment"),
                                        ("apps", "ReplicaSet"), ("apps", "StatefulSet"), ("batch", "CronJob"),
                                        ("batch", "Job")]
    assert kept_errors_lead("Deployment", 2, True) == (
        "numaguard: allowed because this Deployment already had the 2 errors below; the pods its controllers "
        "create are admitted as replicas of a judged Deployment and keep them: fix the template to give them "
        "their NUMA placement")
    assert kept_errors_lead("JobSet", 1, False) == (
        "numaguard: allowed because this JobSet already had the 1 error below; what its controller creates "
        "from the template is judged as usual, and denied in enforce mode while it keeps it: fix the template")


def test_a_denial_line_keeps_its_fix_within_600():
    request = AdmissionRequest(uid="u", group="apps", version="v1", kind="Deployment", operation="CREATE",
                               namespace="ns", name="web", sub_resource="", dry_run=False, object={}, old_object=None)
    message = deny_message(request, [_f("q" * 1000)])
    first, line = message.split("\n")
    assert first == "numaguard: Deployment ns/web has 1 error (the kubelet would not give its pods their NUMA placement):"
    assert len(line) == 600 and line.endswith("q... Fix: " + FIX)


def test_text_is_one_line_of_ascii():
    assert one_line(" a\n\tb  é🙂 ") == "a b ??"


def test_the_audit_annotation_names_rule_field_and_severity_within_1000():
    findings = [_f("m"), Finding(rule="NG302", name="n", severity=Severity.WARNING, message="m", remediation="",
                                 path="spec.resources.requests.cpu")]
    assert audit_findings(findings) == "NG103 spec.template.spec.resources (error); NG302 spec.resources.requests.cpu (warning)"
    many = audit_findings(findings * 40)
    assert len(many) == 990 and many.endswith("NG302 spec.resources.requests.cpu (warning); and 58 more")
    assert many.count("; ") == 22                 # 22 of the 80 named
