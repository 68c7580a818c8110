"""Typed readers for the fields of node descriptions; every failure names the field.

`numaguard.lint.numa.node` and the format readers in `numaguard.lint.numa.node_formats` check each field of a
NodeProfile, lscpu table or NodeResourceTopology with these helpers. Each takes the source
name and the field's path and, when the value is unusable, raises `NodeError` with the message
`"<source>: <path>: <what is wrong>"`, so a user sees which field to fix, never a traceback.
They live apart so the modules that describe the formats read as the formats themselves.
The underscore names are the `numaguard.lint.numa` node modules' own helpers, not a public API.
"""
from __future__ import annotations

from decimal import Decimal
from pathlib import Path
from typing import Any, NoReturn

from numaguard.lint.k8s.quantity import format_bytes, parse_quantity
from numaguard.lint.model import value_kind

HUGEPAGES_PREFIX = "hugepages-"


class NodeError(ValueError):
    """A node description that cannot be used; the message starts with source and field path."""


def fail(source: str, path: str, message: str) -> NoReturn:
    prefix = f"{source}: {path}: " if path else f"{source}: "
    raise NodeError(prefix + message)


def type_name(value: Any) -> str:
    if value is None:
        return "nothing"
    return value_kind(value)


def as_mapping(value: Any, source: str, path: str) -> dict:
    if not isinstance(value, dict):
        fail(source, path, f"expected a mapping, got {type_name(value)}")
    return value


def as_list(value: Any, source: str, path: str) -> list:
    if not isinstance(value, list):
        fail(source, path, f"expected a list, got {type_name(value)}")
    return value


def as_int(value: Any, source: str, path: str, *, minimum: int = 0) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        if value is None:
            fail(source, path, "required (an integer)")
        fail(source, path, f"expected an integer, got {value!r}")
    if value < minimum:
        fail(source, path, f"must be at least {minimum}, got {value}")
    return value


def expect_keys(mapping: dict, known: set[str], source: str, path: str) -> None:
    unknown = sorted(str(k) for k in mapping if k not in known)
    if unknown:
        field = f"{path}.{unknown[0]}" if path else unknown[0]
        fail(source, field, f"unknown field (expected one of: {', '.join(sorted(known))})")


def as_quantity(value: Any, source: str, path: str) -> Decimal:
    try:
        return parse_quantity(value)
    except ValueError as exc:
        fail(source, path, str(exc))


def whole_bytes(amount: Decimal, source: str, path: str, shown: Any = None) -> int:
    shown = amount if shown is None else shown
    if amount < 0:
        fail(source, path, f"must not be negative, got {shown}")
    if amount != amount.to_integral_value():
        fail(source, path, f"{shown} is not a whole number of bytes")
    return int(amount)


def as_bytes(value: Any, source: str, path: str) -> int:
    return whole_bytes(as_quantity(value, source, path), source, path, value)


def page_size(name: str, source: str, path: str) -> int:
    size_text = name[len(HUGEPAGES_PREFIX):] if name.startswith(HUGEPAGES_PREFIX) else ""
    try:
        size = parse_quantity(size_text)
    except ValueError:
        fail(source, path, f"{name!r} is not a hugepage resource (hugepages-<size>, "
              f"e.g. hugepages-1Gi)")
    if size <= 0 or size != size.to_integral_value():
        fail(source, path, f"{name!r} has no usable page size")
    return int(size)


def as_hugepages(value: Any, source: str, path: str) -> dict[int, int]:
    """`{hugepages-1Gi: 8}` (pages per NUMA node) as {page bytes: pages}."""
    if value is None:
        return {}
    mapping = as_mapping(value, source, path)
    pages: dict[int, int] = {}
    for name, count in mapping.items():
        where = f"{path}.{name}"
        if not isinstance(name, str):
            fail(source, where, f"{name!r} is not a hugepage resource name")
        size = page_size(name, source, where)
        if size in pages:
            fail(source, where, f"page size {format_bytes(Decimal(size))} given twice")
        number = as_int(count, source, where)
        if number:
            pages[size] = number
    return pages


def object_name(doc: dict, source: str) -> str:
    """`metadata.name` of a node document, or `default_name(source)` when it gives none."""
    metadata = as_mapping(doc.get("metadata", {}), source, "metadata")
    name = metadata.get("name", default_name(source))
    if not isinstance(name, str) or not name:
        fail(source, "metadata.name", f"expected a non-empty string, got {name!r}")
    return name


def default_name(source: str) -> str:
    """The name of a node whose description gives none: the built-in profile's name, or the
    file name without its suffix."""
    if source.startswith("builtin:"):
        return source[len("builtin:"):]
    stem = Path(source).name
    for suffix in (".yaml", ".yml", ".json", ".txt"):
        if stem.endswith(suffix):
            stem = stem[:-len(suffix)]
    return stem or "node"
