"""SARIF 2.1.0, for code-scanning dashboards (GitHub, GitLab, Azure DevOps)."""
from __future__ import annotations

import json

from numaguard.lint.engine import LintResult
from numaguard.lint.rules.registry import all_rules

_LEVEL = {"error": "error", "warning": "warning", "info": "note"}


def render(result: LintResult, *, show_suppressed: bool = False, color: bool = False) -> str:
    rules = [{"id": r.id, "name": r.name, "shortDescription": {"text": r.title},
              "fullDescription": {"text": r.rationale}, "help": {"text": r.remediation},
              "defaultConfiguration": {"level": _LEVEL[r.severity.value]}} for r in all_rules()]
    results = []
    for f in result.findings:
        if f.suppressed and not show_suppressed:
            continue
        location = {"physicalLocation": {"artifactLocation": {"uri": f.file or "<input>"},
                                         "region": {"startLine": f.line or 1,
                                                    "startColumn": f.column or 1}}}
        entry = {"ruleId": f.rule, "level": _LEVEL[f.severity.value],
                 "message": {"text": f"{f.message} Fix: {f.remediation}"}, "locations": [location]}
        if f.suppressed:
            entry["suppressions"] = [{"kind": "inSource", "justification": f.suppress_reason or ""}]
        results.append(entry)
    sarif = {"$schema": "https://json.schemastore.org/sarif-2.1.0.json", "version": "2.1.0",
             "runs": [{"tool": {"driver": {"name": "numaguard", "rules": rules}}, "results": results}]}
    return json.dumps(sarif, indent=2) + "\n"
