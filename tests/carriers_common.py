"""What the carrier tests (test_carriers_*.py) share: lint a text and list its findings as
(rule, severity, line, column, path), and the kubelet carriers a text's documents hold."""
from __future__ import annotations

import yaml

from numaguard.lint.engine import Selection, lint_documents
from numaguard.lint.load.documents import load_text
from numaguard.lint.objects import classify


def lint_rows(text: str, name: str = "x.yaml", ignore=()):
    docs, errors = load_text(text, name)
    result = lint_documents(docs, load_errors=errors, selection=Selection(ignore=ignore))
    return [(f.rule, f.severity.value, f.line, f.column, f.path) for f in result.findings], result


def carriers_of(text: str):
    return [c for d in yaml.safe_load_all(text) if isinstance(d, dict) for c in classify(d).platforms]
