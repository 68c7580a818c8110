"""Build Python values from PyYAML's parse, keeping the position of every field.

PyYAML's own constructor throws positions away, so `numaguard.lint.load.documents` parses with PyYAML
(libyaml when present) and builds the values with the machinery here:

- `PosDict` / `PosList`: the dicts and lists it builds, carrying `.marks` (1-based line and
  column of every value).
- the resolver shortcut (`quick_loader_class`): the loader classes `numaguard.lint.load.documents` parses
  with, minus most of PyYAML's per-node tag-resolution overhead.
- the node path (`NodeBuilder`): builds one document from the node graph PyYAML composes;
  handles anchors, aliases, tags and merge keys. `expanded_size` is the billion-laughs
  guard, measuring how far aliases expand a node graph before anything is built.
- the event path (`EventBuilder`): builds plain documents (no anchors, aliases, tags or
  merge keys) straight from the parser's events, skipping the node graph.

Both paths give the same values and the same `.marks`; scalars are resolved as Kubernetes
resolves them (go-yaml v2 through sigs.k8s.io/yaml, `numaguard.lint.load.kube_yaml`), not as
`yaml.safe_load` would, and a key given twice in one mapping is refused, as kubectl does. This module only turns one parsed document into values: the
stream of documents, errors and ignore comments are `numaguard.lint.load.documents`' business. It exists
apart so that `numaguard.lint.load.documents` reads as "text in, Documents and LoadErrors out".
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import yaml
from yaml.events import (MappingEndEvent, MappingStartEvent, ScalarEvent, SequenceEndEvent,
                         SequenceStartEvent)
from yaml.nodes import MappingNode, ScalarNode, SequenceNode

from numaguard.lint.load.kube_yaml import key_string, resolve_plain, resolve_tagged


_STR = "tag:yaml.org,2002:str"
_MAP = "tag:yaml.org,2002:map"
_SEQ = "tag:yaml.org,2002:seq"
_INT = "tag:yaml.org,2002:int"
_FLOAT = "tag:yaml.org,2002:float"
_BOOL = "tag:yaml.org,2002:bool"
_NULL = "tag:yaml.org,2002:null"
_MERGE = "tag:yaml.org,2002:merge"


class PosDict(dict):
    """A mapping that knows where each key's value sits: `.marks[key] = (line, column)`."""

    __slots__ = ("marks",)

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.marks: dict[Any, tuple[int, int]] = {}


class PosList(list):
    """A sequence that knows where each item sits: `.marks[i] = (line, column)`."""

    __slots__ = ("marks",)

    def __init__(self, *args: Any) -> None:
        super().__init__(*args)
        self.marks: list[tuple[int, int]] = []


class DocumentError(Exception):
    """A document composed fine but cannot become data (bad key, alias bomb, unknown tag)."""

    def __init__(self, message: str, mark: Any = None) -> None:
        super().__init__(message)
        self.message = message
        self.mark = mark


@dataclass(frozen=True)
class RepeatedKey:
    """A key given twice in one mapping, read as kubectl and the API server read it: the later
    value wins (go-yaml v2's non-strict decoder, which sigs.k8s.io/yaml's YAMLToJSON uses: its
    `setMapIndex` overwrites). `lost`: the earlier value differed and was not null, so it is
    dropped silently; an equal earlier value (or a null one) loses nothing."""

    line: int
    column: int
    key: str
    first_line: int
    lost: bool

    def refused_or_lost(self, kustomized: bool) -> bool:
        """Whether it is an error: a value is silently lost, or kustomize (which refuses any
        repeated key) reads the file."""
        return self.lost or kustomized

    def message(self, kustomized: bool) -> str:
        """NG001's words: who keeps what, and who refuses. kubectl apply/create -f, Helm and Argo
        CD's plain-directory applications read manifests with k8s.io/apimachinery's
        YAMLOrJSONDecoder (sigs.k8s.io/yaml over go-yaml v2: "Duplicate fields ... are ignored"),
        and the API server keeps what it is sent (kubernetes/kubernetes#89303); kustomize reads
        with go-yaml v3 (kyaml), which refuses ("mapping key ... already defined"), so do
        `kubectl apply -k`, Flux (its kustomize-controller builds every path with kustomize) and
        Argo CD's kustomize applications (kubernetes-sigs/kustomize#3480,
        fluxcd/kustomize-controller#243)."""
        said = f'mapping key "{self.key}" already defined at line {self.first_line}'
        refusers = "kustomize (kubectl apply -k), Flux and Argo CD's kustomize applications refuse the file"
        if self.lost:
            return f"{said}: kubectl, Helm and the API server keep only the value written last and silently drop " \
                   f"the others; {refusers}"
        where = "; a kustomization names this file" if kustomized else ""
        return f"{said}, with the same value: kubectl, Helm and the API server read one; {refusers}{where}"


# --------------------------------------------------------------------------- resolving tags

class _QuickResolver:
    """Mixed into the safe loaders: tags as go-yaml v2 resolves them, with little overhead.

    The composer asks the resolver for every node's tag. PyYAML's own resolver follows the
    YAML 1.1 type repository (where `=` is a `!!value` and `1:20` is 80); this one asks
    `numaguard.lint.load.kube_yaml.resolve_plain`, the Kubernetes reading, and skips PyYAML's
    generic machinery (path resolvers, list concatenation per scalar), which was a third of
    the time a manifest took to load.
    """

    DEFAULT_SCALAR_TAG = _STR
    DEFAULT_SEQUENCE_TAG = _SEQ
    DEFAULT_MAPPING_TAG = _MAP

    def descend_resolver(self, current_node: Any, current_index: Any) -> None:
        return None

    def ascend_resolver(self) -> None:
        return None

    def resolve(self, kind: Any, value: Any, implicit: Any) -> str:
        if kind is ScalarNode:
            if implicit[0]:
                return resolve_plain(value)[0]
            return _STR
        if kind is SequenceNode:
            return _SEQ
        return _MAP


# One quick class per loader `numaguard.lint.load.documents` may parse with: libyaml's when PyYAML has it,
# and the pure-Python one (what `numaguard.lint.load.documents._Loader` falls back to, or is set to).
QUICK_LOADERS = {base: type(f"Quick{base.__name__}", (_QuickResolver, base), {})
                 for base in {yaml.SafeLoader, getattr(yaml, "CSafeLoader", yaml.SafeLoader)}}


def quick_loader_class(base: type) -> type:
    """`base` with `_QuickResolver` mixed in (a new twin for a loader class not made above)."""
    quick = QUICK_LOADERS.get(base)
    if quick is None:
        quick = QUICK_LOADERS[base] = type(f"Quick{base.__name__}", (_QuickResolver, base), {})
    return quick


# --------------------------------------------------------------------------- node path

def expanded_size(root: Any, limit: int) -> int:
    """How many nodes the document has once every alias is expanded, memoized per node.

    Linear in the number of distinct nodes and edges. Raises DocumentError beyond `limit`
    or on an alias that refers to a node containing it.
    """
    return _node_size(root, {}, limit)


_IN_PROGRESS = -1


def _node_size(node: Any, sizes: dict[Any, int], limit: int) -> int:
    # A plain recursive function, not a closure: a closure that calls itself is a reference
    # cycle, and would keep the document's whole node graph alive until the cyclic GC runs.
    if node.__class__ is ScalarNode:
        return 1
    known = sizes.get(node)
    if known is not None:
        if known == _IN_PROGRESS:
            raise DocumentError("document has a recursive alias (a node that contains itself)",
                                node.start_mark)
        return known
    sizes[node] = _IN_PROGRESS
    total = 1
    if node.__class__ is MappingNode:
        for key_node, value_node in node.value:
            total += _node_size(key_node, sizes, limit) + _node_size(value_node, sizes, limit)
    else:
        for item in node.value:
            total += _node_size(item, sizes, limit)
    if total > limit:
        raise DocumentError(f"document expands through aliases beyond {limit:,} nodes",
                            node.start_mark)
    sizes[node] = total
    return total


@lru_cache(maxsize=1 << 16)
def _position(line: int, column: int) -> tuple[int, int]:
    """The 1-based (line, column) for a parser mark's 0-based one, one shared tuple each.

    Manifests of one shape put their fields at the same positions, so sharing the tuples
    saves memory, and more importantly work for the cyclic GC: a shared tuple has long been
    untracked, and a `.marks` dict holding only untracked values is never tracked itself.
    Without sharing, position tuples and the dicts holding them were most of the objects the
    GC tracks while loading, and every such allocation brings the next full collection (of
    every document loaded so far) closer.
    """
    return (line + 1, column + 1)


_new_dict = dict.__new__
_new_list = list.__new__

class NodeBuilder:
    """Builds one document's values from its node graph.

    Tight recursive methods (no generators, str fast path): it must beat PyYAML's own
    SafeConstructor, since a lint run's cost is mostly loading. A class rather than a
    closure so that nothing refers to itself: the node graph is freed as soon as the
    document is built instead of waiting for the cyclic GC (which, with thousands of loaded
    documents alive, was a quarter of a lint run). Each collection node is built once and
    reused for its aliases, as PyYAML does. An alias shares its anchor's node, and so its
    position: when `aliases` may occur, a value placed before its own key is an alias and
    gets the key's position instead.
    """

    __slots__ = ("loader", "aliases", "built", "repeated")

    def __init__(self, loader: Any, aliases: bool) -> None:
        self.loader = loader
        self.aliases = aliases
        self.built: dict[Any, Any] = {}
        self.repeated: list[RepeatedKey] = []     # keys given twice, the later value kept

    def construct(self, node: Any) -> Any:
        cls = node.__class__
        if cls is ScalarNode:
            tag = node.tag
            if tag == _STR:
                return node.value
            try:
                return resolve_tagged(tag, node.value)
            except ValueError as exc:
                raise DocumentError(str(exc), node.start_mark) from None
        done = self.built.get(node)
        if done is not None:
            return done
        if cls is MappingNode:                    # go-yaml ignores a collection's tag (!!set, !Ref)
            return self._construct_mapping(node)
        if cls is SequenceNode:
            sequence = _new_list(PosList)
            sequence.marks = marks = []
            self.built[node] = sequence
            construct = self.construct
            for item in node.value:
                mark = item.start_mark
                marks.append(_position(mark.line, mark.column))
                sequence.append(construct(item))
            return sequence
        raise DocumentError(f"unexpected node {cls.__name__}", getattr(node, "start_mark", None))

    def _construct_mapping(self, node: Any) -> PosDict:
        mapping = _new_dict(PosDict)              # skips the Python-level __init__
        mapping.marks = marks = {}
        self.built[node] = mapping
        construct = self.construct
        aliases = self.aliases
        for key_node, value_node in node.value:
            if key_node.__class__ is ScalarNode and key_node.tag == _STR:
                key = key_node.value
            elif key_node.tag == _MERGE:
                return self._construct_merged(node, mapping)
            else:
                key = self._construct_key(key_node)
            value = construct(value_node)
            if key in mapping:
                self._repeated(node, key_node, key, mapping[key], value)
            mark = value_node.start_mark
            if aliases and mark.line < key_node.start_mark.line:
                mark = key_node.start_mark        # an alias: its node sits at the anchor
            marks[key] = _position(mark.line, mark.column)
            mapping[key] = value
        return mapping

    def _repeated(self, node: Any, key_node: Any, key: str, earlier: Any, later: Any) -> None:
        lines = [k.start_mark.line for k, _ in node.value
                 if k is not key_node and k.__class__ is ScalarNode and _key_text(k) == key]
        first = lines[0] if lines else key_node.start_mark.line
        mark = key_node.start_mark
        self.repeated.append(RepeatedKey(mark.line + 1, mark.column + 1, key, first + 1,
                                         lost=earlier is not None and earlier != later))

    def _construct_key(self, key_node: Any) -> str:
        if key_node.__class__ is not ScalarNode:
            raise DocumentError("found unhashable key (a mapping key that is a list or a mapping)",
                                key_node.start_mark)
        try:
            return key_string(self.construct(key_node))
        except ValueError as exc:                 # a null key: sigs.k8s.io/yaml refuses it
            raise DocumentError(str(exc), key_node.start_mark) from None

    def _construct_merged(self, node: Any, mapping: PosDict) -> PosDict:
        # Merge keys as go-yaml v2 applies them (decode.go `mapping` and `merge`): in the order
        # written, each `<<` and each key overriding what came before it; within a list of
        # merged mappings the earliest wins. Only a key written twice is a duplicate.
        mapping.clear()
        mapping.marks.clear()
        own: dict[str, Any] = {}
        for key_node, value_node in node.value:
            if key_node.tag == _MERGE:
                self._merge_into(mapping, value_node)
                continue
            if key_node.__class__ is ScalarNode and key_node.tag == _STR:
                key = key_node.value
            else:
                key = self._construct_key(key_node)
            value = self.construct(value_node)
            if key in own:
                self._repeated(node, key_node, key, mapping.get(key), value)
            own[key] = key_node
            mark = value_node.start_mark
            if mark.line < key_node.start_mark.line:
                mark = key_node.start_mark
            mapping.marks[key] = _position(mark.line, mark.column)
            mapping[key] = value
        return mapping

    def _merge_into(self, mapping: PosDict, value_node: Any) -> None:
        if value_node.__class__ is MappingNode:
            sources = [value_node]
        elif value_node.__class__ is SequenceNode and all(
                source.__class__ is MappingNode for source in value_node.value):
            sources = value_node.value
        else:
            raise DocumentError("map merge requires map or sequence of maps as the value",
                                value_node.start_mark)
        for source in reversed(sources):          # earlier sources are applied last: they win
            value = self.construct(source)
            mapping.update(value)
            mapping.marks.update(value.marks)


def names_an_object(root: Any) -> bool:
    """Whether a document's node graph is a mapping with a top-level `apiVersion` or `kind`:
    something meant to be a Kubernetes object, even when it cannot be built."""
    return root.__class__ is MappingNode and any(
        key.__class__ is ScalarNode and _key_text(key) in ("apiVersion", "kind")
        for key, _ in root.value)


def _key_text(key_node: Any) -> str | None:
    try:
        return key_string(resolve_tagged(key_node.tag, key_node.value))
    except ValueError:
        return None


# --------------------------------------------------------------------------- event path

class _Unsupported(Exception):
    """The event path met something only the node path handles (see `EventBuilder`)."""


class EventBuilder:
    """Builds the values of plain documents straight from the parser's events.

    The common manifest has no anchors, aliases, tags or merge keys. For it, composing a node
    graph first (and resolving every scalar's tag through a callback from the parser) is work
    thrown away: this builder consumes the events and resolves plain scalars itself, giving
    exactly what `NodeBuilder` gives (same values, same `.marks`). It raises `_Unsupported` on
    anything else (an alias, a collection or `<<` as a key, a key given twice), and `numaguard.lint.load.documents` then
    loads the file by the node path; it sends text holding `&` (anchors) or `!` (tags) there
    directly, so events here never carry an anchor or an explicit tag. No node graph also means
    no document-sized burst of short-lived objects, each of which brings the cyclic GC's next
    collection (of every document loaded so far) closer.
    """

    __slots__ = ("loader", "next_event")

    def __init__(self, loader: Any) -> None:
        self.loader = loader
        self.next_event = loader.get_event

    @staticmethod
    def scalar(event: Any) -> Any:
        """A scalar's value, resolved as `_QuickResolver.resolve` and `NodeBuilder` do."""
        value = event.value
        if not event.implicit[0]:            # quoted or block (never tagged here): a string
            return value
        tag, resolved = resolve_plain(value)
        if tag == _MERGE:
            raise _Unsupported(tag)          # `<<`: the node path merges
        return resolved

    def value(self, event: Any) -> Any:
        cls = event.__class__
        if cls is ScalarEvent:
            return self.scalar(event)
        if cls is MappingStartEvent:
            return self.mapping()
        if cls is SequenceStartEvent:
            return self.sequence()
        raise _Unsupported(cls.__name__)              # an alias

    def mapping(self) -> PosDict:
        mapping = _new_dict(PosDict)
        mapping.marks = marks = {}
        next_event = self.next_event
        scalar = self.scalar
        while True:
            key_event = next_event()
            if key_event.__class__ is not ScalarEvent:
                if key_event.__class__ is MappingEndEvent:
                    return mapping
                raise _Unsupported("a collection as a mapping key")
            key = scalar(key_event)       # `<<` raised: the node path merges
            if key.__class__ is not str:
                try:
                    key = key_string(key)
                except ValueError:
                    raise _Unsupported("a null key") from None
            if key in mapping:
                raise _Unsupported("a duplicate key")     # the node path reports it
            value_event = next_event()
            mark = value_event.start_mark
            marks[key] = _position(mark.line, mark.column)
            if value_event.__class__ is ScalarEvent:
                mapping[key] = scalar(value_event)
            else:
                mapping[key] = self.value(value_event)

    def sequence(self) -> PosList:
        sequence = _new_list(PosList)
        sequence.marks = marks = []
        next_event = self.next_event
        value = self.value
        while True:
            event = next_event()
            if event.__class__ is SequenceEndEvent:
                return sequence
            mark = event.start_mark
            marks.append(_position(mark.line, mark.column))
            sequence.append(value(event))
