"""Which files are the CPU and Memory Managers' checkpoints: their names and the shape that
tells one by content (`checkpoint_kind`), and the kubelet version they are read as. Kept apart
from their reader (`numaguard.lint.k8s.checkpoints`, which re-exports these) because a lint
asks every document whether it is a checkpoint, and a lint without checkpoints has no use for
the reader.
"""
from __future__ import annotations

from typing import Any

CPU_CHECKPOINT_FILE = "cpu_manager_state"
MEMORY_CHECKPOINT_FILE = "memory_manager_state"

Version = tuple[int, int]
CURRENT: Version = (1, 37)


def checkpoint_kind(data: Any, name: str | None = None) -> str | None:
    """"cpu", "memory" or None: by file name (`cpu_manager_state`, `memory_manager_state`)
    or, for any other name, by content (`policyName` with `checksum` or `dataChecksum`)."""
    base = (name or "").replace("\\", "/").rsplit("/", 1)[-1]
    if base == CPU_CHECKPOINT_FILE:
        return "cpu"
    if base == MEMORY_CHECKPOINT_FILE:
        return "memory"
    if not isinstance(data, dict) or "kind" in data or "apiVersion" in data:
        return None
    if not ("checksum" in data or "dataChecksum" in data) or "policyName" not in data:
        return None
    if "machineState" in data or "machinestate" in {str(k).lower() for k in data}:
        return "memory"
    if isinstance(data.get("data"), str) and "machineState" in data["data"]:
        return "memory"
    return "cpu"
