"""numaguard's engine as a library.

    from numaguard.lint import lint_documents, load_text, all_rules, Finding

Names are imported on first use (PEP 562), so the command line, which imports this package, stays fast.
"""
from __future__ import annotations

from importlib import import_module
from typing import Any

_EXPORTS = {
    "lint_documents": "engine", "LintResult": "engine", "Selection": "engine",
    "Linter": "engine", "sort_findings": "engine",
    "load_text": "load.documents", "load_paths": "load.documents", "Document": "load.documents",
    "Finding": "model", "Severity": "model", "ObjectRef": "model",
    "Config": "config", "config_from_dict": "config",
    "all_rules": "rules.registry", "Rule": "rules.base",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    if name in _EXPORTS:
        return getattr(import_module(f"{__name__}.{_EXPORTS[name]}"), name)
    raise AttributeError(f"module 'numaguard.lint' has no attribute {name!r}")
