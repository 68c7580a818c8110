"""Reports of `numaguard compare` (a numaguard.lint.compare.comparison.Comparison in, text
out): text, JSON and HTML, one module each (their shared helpers: compare_values)."""
from __future__ import annotations

from typing import Callable


def writer_for(fmt: str) -> Callable[..., str]:
    if fmt == "text":
        from numaguard.lint.report.compare_text import render
    elif fmt == "json":
        from numaguard.lint.report.compare_json import render
    elif fmt == "html":
        from numaguard.lint.report.compare_html import render
    else:
        raise ValueError(f"unknown format {fmt!r}")
    return render
