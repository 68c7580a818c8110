"""Small readings of a parsed document that several stages share: where a part of it is,
how the run checks name it, and the annotations that silence rules on it."""
from __future__ import annotations

from typing import Any

from numaguard.lint.load.documents import Document, position_of
from numaguard.lint.model import Path
from numaguard.lint.objects import KUBELET_CONFIG_GROUP, KUBELET_CONFIG_KIND

IGNORE_ANNOTATION = "numaguard.io/ignore"
IGNORE_REASON_ANNOTATION = "numaguard.io/ignore-reason"


def at(data: Any, path: Path) -> Any:
    for key in path:
        data = data[key]
    return data


def name_of(data: dict) -> Any:
    meta = data.get("metadata")
    return meta.get("name") if isinstance(meta, dict) else None


def own_annotations(data: dict) -> dict[str, str]:
    meta = data.get("metadata")
    annotations = meta.get("annotations") if isinstance(meta, dict) else None
    return {str(k): str(v) for k, v in annotations.items()} if isinstance(annotations, dict) else {}


def annotation_ignores(annotations: dict[str, str]) -> frozenset[str]:
    value = annotations.get(IGNORE_ANNOTATION)
    if not value:
        return frozenset()
    # Spelled like the comment form: rule ids upper-cased, `all` lower-cased (`FindingLog.emit`
    # tests both).
    parts = (part.strip() for part in value.replace(";", ",").split(","))
    return frozenset("all" if part.lower() == "all" else part.upper() for part in parts if part)


def is_kubelet_config(data: Any) -> bool:
    if not isinstance(data, dict):
        return False
    api_version = data.get("apiVersion")
    return (data.get("kind") == KUBELET_CONFIG_KIND and isinstance(api_version, str)
            and api_version.startswith(KUBELET_CONFIG_GROUP))


def label(doc: Document, prefix: Path) -> str:
    """How the run checks name a document: its file, with the line when the file holds more
    than this document."""
    source = doc.source or "<input>"
    line = position_of(doc.data, prefix + ("kind",)) if prefix else None
    line = line[0] if line else doc.line
    return source if doc.index == 0 and not prefix else f"{source}:{line or doc.index + 1}"


def line_of(doc: Document, prefix: Path) -> int | None:
    """The line a document (or a List item of it) starts on."""
    found = position_of(doc.data, prefix + ("kind",)) if prefix else None
    return found[0] if found else doc.line


def line_label(doc: Document, path: Path) -> str:
    """A document part named by its file and the line where `path` is written."""
    found = position_of(doc.data, path)
    line = found[0] if found else doc.line
    return f"{doc.source or '<input>'}:{line or doc.index + 1}"


def positions(data: Any, depth: int = 5) -> dict[Path, tuple[int, int]]:
    """The (line, column) of every field down to `depth` levels, for the documents a run
    check keeps an extract of (kubelet configurations, checkpoint files, nodes)."""
    out: dict[Path, tuple[int, int]] = {}

    def walk(node: Any, path: Path) -> None:
        if len(path) >= depth or not isinstance(node, dict):
            return
        marks = getattr(node, "marks", None) or {}
        for key, value in node.items():
            step = str(key) if isinstance(key, int) and not isinstance(key, bool) else key
            if key in marks:
                out[path + (step,)] = marks[key]
            walk(value, path + (step,))

    walk(data, ())
    return out
