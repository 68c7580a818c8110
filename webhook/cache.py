"""The findings cache: the engine's findings for recently judged objects, bounded in bytes.

The pods of one ReplicaSet, StatefulSet or Job are identical where the rules look, and NUMA fit
(NG301, NG302: admitting copies of the pod on a simulated node) is the expensive part of
judging, so a rollout of 50 replicas is simulated once. The webhook judges the object's
*judged view* (`judged_view`): the object without its `status`, and with the `metadata` of every
mapping the carrier table's template paths pass through (the object itself, the templates, and
any object template in between, such as a JobSet's Job template: the engine merges their
annotations into each pod template's) reduced to the annotations numaguard reads
(`numaguard.io/...`: scope, ignore, ignore-reason, and those a carrier's templates depend on:
KServe's `serving.kserve.io/deploymentMode`).
Nothing else of that metadata is read by any rule or scope decision (labels, names, uids,
managedFields, other annotations), and the API server resets a new object's status
(pkg/registry/core/pod/strategy.go `PrepareForCreate`: a Pod starts Pending), so the view
judges exactly like the object; tests/webhook/test_cache.py checks that over every fixture.
Because the view *is* what is judged, two objects with equal views get equal findings by
construction, and the cache is keyed on a digest of the view: a 200 KB annotation, a long
managedFields list or a new name never reaches the key.

The cache is bounded in bytes, not entries: each entry is counted as its key plus the
findings' objects as `sys.getsizeof` sees them (each string and dataclass it holds, even one
shared with other entries: the count errs high, never low), plus the dictionary slot. The
least recently used entries go first; an entry bigger than the whole budget is not kept.
"""
from __future__ import annotations

import dataclasses
import enum
import hashlib
import sys
import threading
from collections import OrderedDict
from typing import Any, Callable

from numaguard.lint.model import Finding
from numaguard.lint.carriers import Each, Field, Guard, PodCarriers, Step
from numaguard.lint.objects import api_group

ANNOTATION_PREFIX = "numaguard.io/"         # the only annotations the engine reads
# No object the API server stores nests this deep (a pod spec's deepest field is about 12
# levels down, a CronJob's template 4 more). The engine and repr() recurse; an object so deep
# that they exhaust the interpreter's stack is measured against this (decide.py) to tell it
# from a bug.
MAX_NESTING = 64
# Per entry besides key and findings: the OrderedDict slot (hash table entry and the linked-list
# node that keeps the order: 105 bytes measured with tracemalloc on CPython 3.11), the
# (findings, size) pair (56) and the size's int (28).
SLOT_BYTES = 192


def judged_view(obj: dict, carriers: PodCarriers) -> dict:
    """The object as the engine reads it: no top-level `status`, and the metadata of each
    mapping its template paths (the run's carrier table: built-in carriers and the config's
    `podTemplates`) take a field from reduced to the `numaguard.io/` annotations. Everything
    else is the object's own (not copied). Values of the wrong type stay as they are: the engine
    reports them."""
    view = {key: value for key, value in obj.items() if key != "status"}
    api_version, kind = obj.get("apiVersion"), obj.get("kind")
    carrier = None
    if isinstance(api_version, str) and isinstance(kind, str):
        carrier = carriers.find(api_group(api_version), api_version.rpartition("/")[2], kind)
    if carrier is None:            # not judged: the engine reads at most the object's own metadata
        return _reduced_at(view, (_TEMPLATE_SPEC,), frozenset())
    # annotations a carrier reads besides numaguard's (KServe's deploymentMode decides its pods)
    kept = frozenset(condition[0] for condition in (carrier.none_when, carrier.refused_when) if condition)
    for template_path in carrier.paths:
        steps = template_path.steps if template_path.inline else (*template_path.steps, _TEMPLATE_SPEC)
        view = _reduced_at(view, steps, kept)
    return view


# Every template path ends at a template, whose `spec` the engine takes (lint/objects.py
# pod_templates): the template is one of the mappings whose annotations it reads.
_TEMPLATE_SPEC = Field("spec")


def _reduced_at(node: Any, steps: tuple[Step, ...], kept: frozenset[str]) -> Any:
    """`node` with the metadata of each mapping the engine takes a field from on `steps`
    reduced, copying only the lists and mappings on the way (lint/objects.py pod_templates:
    a mapping is a holder when a named field is taken from it, not when its values are walked
    by a `*`)."""
    if not steps:
        return node
    step, rest = steps[0], steps[1:]
    if isinstance(step, Guard):         # an embedded object of a kind: its kind stays as it is
        return _reduced_at(node, rest, kept)
    if step is Each.LIST_ITEM:
        return [_reduced_at(item, rest, kept) for item in node] if isinstance(node, list) else node
    if not isinstance(node, dict):
        return node
    if step is Each.MAP_VALUE:
        return {key: _reduced_at(value, rest, kept) for key, value in node.items()}
    out = {**node, "metadata": _metadata_view(node["metadata"], kept)} if "metadata" in node else dict(node)
    if rest and step.name in out:
        out[step.name] = _reduced_at(out[step.name], rest, kept)
    return out


def _metadata_view(meta: Any, keys: frozenset[str]) -> Any:
    if not isinstance(meta, dict):
        return meta
    annotations = meta.get("annotations")
    if not isinstance(annotations, dict):
        return {} if annotations is None else {"annotations": annotations}
    kept = {k: v for k, v in annotations.items()
            if isinstance(k, str) and (k.startswith(ANNOTATION_PREFIX) or k in keys)}
    return {"annotations": kept} if kept else {}


def nested_too_deep(obj: Any, limit: int = MAX_NESTING) -> str | None:
    """The path of the first mapping or list nested more than `limit` levels deep, else None.
    Iterative: it must not itself run out of stack on the input it guards against. Paths are
    spelled only when there is one to report."""
    stack: list[tuple[Any, int]] = [(obj, 0)]
    while stack:
        value, depth = stack.pop()
        children = value.values() if isinstance(value, dict) else value if isinstance(value, list) else ()
        if children and depth >= limit:
            return _path_to_depth(obj, limit)
        stack.extend((v, depth + 1) for v in children if isinstance(v, (dict, list)))
    return None


def _path_to_depth(obj: Any, limit: int) -> str:
    stack: list[tuple[Any, str, int]] = [(obj, "", 0)]
    while stack:
        value, path, depth = stack.pop()
        items = (value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else ())
        children = [(f"{path}[{k}]" if isinstance(value, list) else f"{path}.{k}" if path else str(k), v)
                    for k, v in items if isinstance(v, (dict, list))]
        if depth >= limit and (value if isinstance(value, (dict, list)) else False):
            return path or "(object)"
        stack.extend((v, p, depth + 1) for p, v in children)
    return "(object)"


def view_key(view: dict) -> bytes:
    """A 16-byte digest of the view. repr, not sorted JSON: half the cost, and the API server
    always serializes an object's fields in the same order (a hand-made review with its keys
    in another order only misses the cache)."""
    return hashlib.blake2b(repr(view).encode("utf-8", "surrogatepass"), digest_size=16).digest()


def entry_bytes(key: bytes, findings: list[Finding]) -> int:
    """What one entry holds: the key, the list, each finding and everything it references, and
    the slot that holds them (SLOT_BYTES)."""
    seen: set[int] = set()
    return SLOT_BYTES + sys.getsizeof(key) + _deep_size(findings, seen)


def _deep_size(value: Any, seen: set[int]) -> int:
    # Singletons and enum members (None, True, Severity.ERROR) belong to no entry.
    if value is None or isinstance(value, (bool, enum.Enum)) or id(value) in seen:
        return 0
    seen.add(id(value))
    size = sys.getsizeof(value)
    if isinstance(value, (list, tuple)):
        size += sum(_deep_size(v, seen) for v in value)
    elif isinstance(value, dict):
        size += sum(_deep_size(k, seen) + _deep_size(v, seen) for k, v in value.items())
    elif dataclasses.is_dataclass(value):       # Finding, ObjectRef: slotted, no __dict__
        size += sum(_deep_size(getattr(value, f.name), seen) for f in dataclasses.fields(value))
    return size


class FindingsCache:
    """Findings by judged view, least recently used first out, within `budget` bytes (config
    `webhook.cacheBytes`). One per worker application, never shared; safe across the worker's
    threads."""

    def __init__(self, budget: int) -> None:
        self.budget = budget
        self._items: OrderedDict[bytes, tuple[list[Finding], int]] = OrderedDict()
        self._lock = threading.Lock()
        self.bytes = 0
        self.hits = self.misses = self.evictions = 0

    def __len__(self) -> int:
        return len(self._items)

    def findings(self, view: dict, judge: Callable[[dict], list[Finding]]) -> list[Finding]:
        key = view_key(view)
        with self._lock:
            found = self._items.get(key)
            if found is not None:
                self._items.move_to_end(key)
                self.hits += 1
                return found[0]
        findings = judge(view)          # outside the lock: the other threads keep answering
        size = entry_bytes(key, findings)
        with self._lock:
            self.misses += 1
            if size > self.budget:
                return findings
            earlier = self._items.pop(key, None)          # another thread judged it meanwhile
            if earlier is not None:
                self.bytes -= earlier[1]
            self._items[key] = (findings, size)
            self.bytes += size
            while self.bytes > self.budget:
                _, (_, freed) = self._items.popitem(last=False)
                self.bytes -= freed
                self.evictions += 1
        return findings
