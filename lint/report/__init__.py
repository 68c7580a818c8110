"""Report writers: a LintResult in, text out. One module per format."""
from __future__ import annotations

from typing import Callable

from lint.engine import LintResult


def writer_for(fmt: str) -> Callable[..., str]:
    if fmt == "text":
        from lint.report.text import render
    elif fmt == "json":
        from lint.report.json import render
    elif fmt == "sarif":
        from lint.report.sarif import render
    elif fmt == "junit":
        from lint.report.junit import render
    elif fmt == "github":
        from lint.report.github import render
    else:
        raise ValueError(f"unknown format {fmt!r}")
    return render


FORMATS = ("text", "json", "sarif", "junit", "github")

__all__ = ["FORMATS", "writer_for", "LintResult"]
