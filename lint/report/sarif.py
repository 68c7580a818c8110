"""SARIF 2.1.0, for code-scanning dashboards (GitHub, GitLab, Azure DevOps).

Every result carries `partialFingerprints` (numaguard/v1: rule, file, object, container and
field path, hashed; numaguard.lint.baseline) so a dashboard follows an alert across commits
even when lines move. With a baseline, results carry `baselineState` (new or unchanged) and
the baseline entries no longer found are listed as `absent` results (SARIF 2.1.0 §3.27.24).

The run's invocation (§3.20) says whether everything was judged: an incomplete `numaguard
audit` has `executionSuccessful: false` and one error `toolExecutionNotifications` entry
(§3.20.21, a notification §3.58) per thing not read, located at the node it concerns, so a
dashboard does not take what was not read for clean.
"""
from __future__ import annotations

import json

from numaguard.lint.baseline import ABSENT, FINGERPRINT_NAME, fingerprints
from numaguard.lint.engine import LintResult
from numaguard.lint.rules.registry import all_rules, rules_by_id

_LEVEL = {"error": "error", "warning": "warning", "info": "note"}


def render(result: LintResult, *, show_suppressed: bool = False, color: bool = False) -> str:
    rules = [{"id": r.id, "name": r.name, "shortDescription": {"text": r.title},
              "fullDescription": {"text": r.rationale}, "help": {"text": r.remediation},
              "defaultConfiguration": {"level": _LEVEL[r.severity.value]}} for r in all_rules()]
    results = []
    prints = fingerprints(result.findings)
    for f, fingerprint in zip(result.findings, prints):
        if f.suppressed and not show_suppressed:
            continue
        location = {"physicalLocation": {"artifactLocation": {"uri": f.file or "<input>"},
                                         "region": {"startLine": f.line or 1,
                                                    "startColumn": f.column or 1}}}
        entry = {"ruleId": f.rule, "level": _LEVEL[f.severity.value],
                 "message": {"text": f"{f.message} Fix: {f.remediation}"}, "locations": [location],
                 "partialFingerprints": {FINGERPRINT_NAME: fingerprint}}
        if f.baseline_state:
            entry["baselineState"] = f.baseline_state
        if f.suppressed:
            entry["suppressions"] = [{"kind": "inSource", "justification": f.suppress_reason or ""}]
        results.append(entry)
    known = rules_by_id()
    seen: dict[str, int] = {}            # an absent result numbers on after the ones still found
    for fingerprint in prints:
        base = fingerprint.partition(":")[0]
        seen[base] = seen.get(base, 0) + 1
    for fixed in result.fixed:
        seen[fixed.fingerprint] = seen.get(fixed.fingerprint, 0) + 1
        n = seen[fixed.fingerprint]
        rule = known.get(fixed.rule)
        what = "/".join(part for part in (fixed.kind, fixed.namespace, fixed.name) if part)
        results.append({
            "ruleId": fixed.rule, "level": _LEVEL[rule.severity.value] if rule else "warning",
            "message": {"text": f"No longer found: {what or fixed.file} {fixed.path}".rstrip()},
            "locations": [{"physicalLocation": {"artifactLocation": {"uri": fixed.file or "<input>"}}}],
            "partialFingerprints": {FINGERPRINT_NAME: fixed.fingerprint + (f":{n}" if n > 1 else "")},
            "baselineState": ABSENT})
    sarif = {"$schema": "https://json.schemastore.org/sarif-2.1.0.json", "version": "2.1.0",
             "runs": [{"tool": {"driver": {"name": "numaguard", "rules": rules}},
                       "invocations": [_invocation(result)], "results": results}]}
    return json.dumps(sarif, indent=2) + "\n"


def _invocation(result: LintResult) -> dict:
    """Whether the run judged everything it set out to, and what it could not read."""
    notifications = []
    for piece in result.unread:
        note = {"level": "error", "descriptor": {"id": "not-read"},
                "message": {"text": f"Not read, so not judged: {piece.what}: {piece.why}"}}
        if piece.nodes:
            note["locations"] = [{"physicalLocation": {"artifactLocation": {"uri": f"node/{node}"}}}
                                 for node in piece.nodes]
        notifications.append(note)
    invocation: dict = {"executionSuccessful": not notifications}
    if notifications:
        invocation["toolExecutionNotifications"] = notifications
    return invocation
