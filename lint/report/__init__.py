"""Report writers: a LintResult in, text out. One module per format."""
from __future__ import annotations

from typing import Callable

from numaguard.lint.engine import LintResult


def writer_for(fmt: str) -> Callable[..., str]:
    if fmt == "text":
        from numaguard.lint.report.text import render
    elif fmt == "json":
        from numaguard.lint.report.json import render
    elif fmt == "sarif":
        from numaguard.lint.report.sarif import render
    elif fmt == "junit":
        from numaguard.lint.report.junit import render
    elif fmt == "github":
        from numaguard.lint.report.github import render
    elif fmt == "policyreport":
        from numaguard.lint.report.policyreport import render
    elif fmt == "html":
        from numaguard.lint.report.html import render
    else:
        raise ValueError(f"unknown format {fmt!r}")
    return render


FORMATS = ("text", "json", "sarif", "junit", "github", "policyreport", "html")

__all__ = ["FORMATS", "writer_for", "LintResult"]
