"""What a fix is: the value objects `numaguard fix` plans with (the fixes themselves are in
`fixes_pods` and `fixes_kubelet`, one function per fixable rule, beside the rules)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from numaguard.lint.model import Path


@dataclass(frozen=True)
class Edit:
    """Set `value` at `path` (mappings on the way are created), or with `remove` delete the key
    at `path` (and the mapping holding it, when nothing is left in it). Paths are relative to
    what the fix was given (the pod spec, the kubelet configuration) until the planner makes
    them document paths."""

    path: Path
    value: Any = None
    remove: bool = False


class CannotFix(Exception):
    """The finding has no single safe fix here; the message says why (it is listed)."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason
