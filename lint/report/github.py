"""GitHub Actions workflow commands: one annotation per finding on the pull request."""
from __future__ import annotations

from numaguard.lint.engine import LintResult

_LEVEL = {"error": "error", "warning": "warning", "info": "notice"}


def _escape(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def render(result: LintResult, *, show_suppressed: bool = False, color: bool = False) -> str:
    lines = []
    for f in result.active:
        where = ",".join(part for part in (f"file={f.file}" if f.file else "",
                                           f"line={f.line}" if f.line else "",
                                           f"col={f.column}" if f.column else "") if part)
        title = f"{f.rule} {f.name}"
        lines.append(f"::{_LEVEL[f.severity.value]} {where},title={title}::"
                     f"{_escape(f.message + ' Fix: ' + f.remediation)}")
    for piece in result.unread:      # an incomplete numaguard audit: what it could not judge
        where = f"file=node/{piece.nodes[0]}," if len(piece.nodes) == 1 else ""
        lines.append(f"::error {where}title=numaguard audit incomplete::{_escape(f'not read: {piece.what}: {piece.why}')}")
    return "\n".join(lines) + ("\n" if lines else "")
