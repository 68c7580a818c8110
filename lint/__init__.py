"""numaguard's engine as a library.

    from lint import lint_documents, load_text, all_rules, Finding

Names are imported on first use (PEP 562), so `import lint.cli` stays fast.
"""
from __future__ import annotations

from importlib import import_module
from typing import Any

_EXPORTS = {
    "lint_documents": "lint.engine", "LintResult": "lint.engine", "Selection": "lint.engine",
    "load_text": "lint.documents", "load_paths": "lint.documents", "Document": "lint.documents",
    "Finding": "lint.model", "Severity": "lint.model", "ObjectRef": "lint.model",
    "Config": "lint.config", "config_from_dict": "lint.config",
    "all_rules": "lint.rules.registry", "Rule": "lint.rules.base",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    if name in _EXPORTS:
        return getattr(import_module(_EXPORTS[name]), name)
    raise AttributeError(f"module 'lint' has no attribute {name!r}")
