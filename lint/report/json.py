"""The JSON report, version 1 (design.md)."""
from __future__ import annotations

import json

from lint.engine import LintResult


def render(result: LintResult, *, show_suppressed: bool = True, color: bool = False) -> str:
    findings = [f.as_dict() for f in result.findings if show_suppressed or not f.suppressed]
    return json.dumps({"version": 1, "findings": findings, "summary": result.summary.as_dict()},
                      indent=2) + "\n"
