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

Both paths give the same values and the same `.marks`; scalars are resolved as
`yaml.safe_load` resolves them. This module only turns one parsed document into values: the
stream of documents, errors and ignore comments are `numaguard.lint.load.documents`' business. It exists
apart so that `numaguard.lint.load.documents` reads as "text in, Documents and LoadErrors out".
"""
from __future__ import annotations

import json
import re
from functools import lru_cache
from typing import Any

import yaml
from yaml.events import (MappingEndEvent, MappingStartEvent, ScalarEvent, SequenceEndEvent,
                         SequenceStartEvent)
from yaml.nodes import MappingNode, ScalarNode, SequenceNode


_STR = "tag:yaml.org,2002:str"
_MAP = "tag:yaml.org,2002:map"
_SEQ = "tag:yaml.org,2002:seq"
_INT = "tag:yaml.org,2002:int"
_FLOAT = "tag:yaml.org,2002:float"
_BOOL = "tag:yaml.org,2002:bool"
_NULL = "tag:yaml.org,2002:null"
_MERGE = "tag:yaml.org,2002:merge"
_VALUE = "tag:yaml.org,2002:value"

_JSON_NUMBER = re.compile(r"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][-+]?[0-9]+)?")


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


# --------------------------------------------------------------------------- resolving tags

class _QuickResolver:
    """Mixed into the safe loaders to cut the resolver's per-node overhead.

    The composer asks the resolver for every node's tag; PyYAML's generic version (path
    resolvers, list concatenation per scalar) is a third of the time a manifest takes to
    load. Without path resolvers and wildcard implicit resolvers, as for SafeLoader, this
    gives the same tags (yaml/resolver.py BaseResolver.resolve); `quick_loader_class` checks
    that at every load, since both tables are class attributes one could extend.
    """

    yaml_implicit_resolvers: dict
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
                resolvers = self.yaml_implicit_resolvers.get(value[0] if value else "")
                if resolvers:
                    for tag, regexp in resolvers:
                        if regexp.match(value):
                            return tag
            return _STR
        if kind is SequenceNode:
            return _SEQ
        return _MAP


# One quick class per loader `numaguard.lint.load.documents` may parse with: libyaml's when PyYAML has it,
# and the pure-Python one (what `numaguard.lint.load.documents._Loader` falls back to, or is set to).
QUICK_LOADERS = {base: type(f"Quick{base.__name__}", (_QuickResolver, base), {})
                 for base in {yaml.SafeLoader, getattr(yaml, "CSafeLoader", yaml.SafeLoader)}}


def quick_loader_class(base: type) -> type:
    """`base` with `_QuickResolver` mixed in, or `base` itself when its resolver tables were
    extended (path resolvers, wildcard implicit resolvers) or it has no quick twin."""
    if base.yaml_path_resolvers or None in base.yaml_implicit_resolvers:
        return base
    return QUICK_LOADERS.get(base, base)


# --------------------------------------------------------------------------- node path

_BOOL_VALUES = yaml.constructor.SafeConstructor.bool_values
_construct_int = yaml.constructor.SafeConstructor.construct_yaml_int
_construct_float = yaml.constructor.SafeConstructor.construct_yaml_float


def is_sequence(node: Any) -> bool:
    """Whether a document's root node is a plain list (which `numaguard.lint.load.documents` refuses
    without building it)."""
    return node.__class__ is SequenceNode and node.tag == _SEQ


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

    __slots__ = ("loader", "json_numbers", "aliases", "built")

    def __init__(self, loader: Any, json_numbers: bool, aliases: bool) -> None:
        self.loader = loader
        self.json_numbers = json_numbers
        self.aliases = aliases
        self.built: dict[Any, Any] = {}

    def construct(self, node: Any) -> Any:
        cls = node.__class__
        if cls is ScalarNode:
            tag = node.tag
            if tag == _STR:
                if self.json_numbers and not node.style and _JSON_NUMBER.fullmatch(node.value):  # plain
                    return json.loads(node.value)
                return node.value
            if tag == _INT:
                value = node.value
                if value.isdigit() and value[0] != "0":
                    return int(value)
                return _construct_int(self.loader, node)
            if tag == _NULL:
                return None
            if tag == _BOOL:
                return _BOOL_VALUES[node.value.lower()]
            if tag == _FLOAT:
                return _construct_float(self.loader, node)
            return self.loader.construct_document(node)  # timestamp, binary, unknown tag (raises)
        done = self.built.get(node)
        if done is not None:
            return done
        if cls is MappingNode:
            if node.tag != _MAP:
                return self._construct_other(node)
            return self._construct_mapping(node)
        if cls is SequenceNode:
            if node.tag != _SEQ:
                return self._construct_other(node)
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
            elif key_node.tag == _MERGE or key_node.tag == _VALUE:
                return self._construct_merged(node, mapping)
            else:
                key = self._construct_key(key_node)
            mark = value_node.start_mark
            if aliases and mark.line < key_node.start_mark.line:
                mark = key_node.start_mark        # an alias: its node sits at the anchor
            marks[key] = _position(mark.line, mark.column)
            mapping[key] = construct(value_node)
        return mapping

    def _construct_key(self, key_node: Any) -> Any:
        key = self.construct(key_node)
        try:
            hash(key)
        except TypeError:
            raise DocumentError("found unhashable key (a mapping key that is a list or a mapping)",
                                key_node.start_mark) from None
        return key

    def _construct_other(self, node: Any) -> Any:
        # !!omap, !!pairs, !!set or an application tag: PyYAML decides (and refuses unknown
        # tags as safe_load does). Positions inside are not kept; these never carry pod specs.
        value = self.loader.construct_document(node)
        self.built[node] = value
        return value

    def _construct_merged(self, node: Any, mapping: PosDict) -> PosDict:
        # Merge keys (https://yaml.org/type/merge.html): merged mappings first, the earliest
        # one winning a conflict, then the mapping's own keys over all of them.
        mapping.clear()
        mapping.marks.clear()
        merged: list[Any] = []
        own = []
        for key_node, value_node in node.value:
            if key_node.tag != _MERGE:
                own.append((key_node, value_node))
                continue
            if value_node.__class__ is MappingNode:
                sources = [value_node]
            elif value_node.__class__ is SequenceNode:
                sources = value_node.value
                for source in sources:
                    if source.__class__ is not MappingNode:
                        raise DocumentError("expected a mapping for merging, but found "
                                            f"{source.id}", source.start_mark)
            else:
                raise DocumentError("expected a mapping or list of mappings for merging, but found "
                                    f"{value_node.id}", value_node.start_mark)
            for source in sources:
                value = self.construct(source)
                if not isinstance(value, dict):
                    raise DocumentError("expected a mapping for merging", source.start_mark)
                merged.append(value)
        for source_value in reversed(merged):        # earlier sources are applied last: they win
            mapping.update(source_value)
            source_marks = getattr(source_value, "marks", None)
            if source_marks:
                mapping.marks.update(source_marks)
        for key_node, value_node in own:
            if key_node.__class__ is ScalarNode and key_node.tag in (_STR, _VALUE):
                key = key_node.value
            else:
                key = self._construct_key(key_node)
            mark = value_node.start_mark
            if mark.line < key_node.start_mark.line:
                mark = key_node.start_mark
            mapping.marks[key] = _position(mark.line, mark.column)
            mapping[key] = self.construct(value_node)
        return mapping



# --------------------------------------------------------------------------- event path

class _Unsupported(Exception):
    """The event path met something only the node path handles (see `EventBuilder`)."""


class EventBuilder:
    """Builds the values of plain documents straight from the parser's events.

    The common manifest has no anchors, aliases, tags or merge keys. For it, composing a node
    graph first (and resolving every scalar's tag through a callback from the parser) is work
    thrown away: this builder consumes the events and resolves plain scalars itself, giving
    exactly what `NodeBuilder` gives (same values, same `.marks`). It raises `_Unsupported` on
    anything else (an alias, a collection or `<<`/`=` as a key), and `numaguard.lint.load.documents` then
    loads the file by the node path; it sends text holding `&` (anchors) or `!` (tags) there
    directly, so events here never carry an anchor or an explicit tag. No node graph also means
    no document-sized burst of short-lived objects, each of which brings the cyclic GC's next
    collection (of every document loaded so far) closer.
    """

    __slots__ = ("loader", "next_event", "resolvers")

    def __init__(self, loader: Any) -> None:
        self.loader = loader
        self.next_event = loader.get_event
        self.resolvers = loader.yaml_implicit_resolvers

    def scalar(self, event: Any) -> Any:
        """A scalar's value, its tag resolved as `_QuickResolver.resolve` does."""
        value = event.value
        if not event.implicit[0]:            # quoted or block (never tagged here): a string
            return value
        resolvers = self.resolvers.get(value[0] if value else "")
        if not resolvers:
            return value
        for tag, regexp in resolvers:
            if regexp.match(value):
                break
        else:
            return value
        if tag == _NULL:
            return None
        if tag == _BOOL:
            return _BOOL_VALUES[value.lower()]
        if tag == _INT and value.isdigit() and value[0] != "0":
            return int(value)
        if tag == _MERGE or tag == _VALUE:
            raise _Unsupported(tag)
        # ints in other notations, floats, timestamps: PyYAML's constructors, as NodeBuilder does.
        node = ScalarNode(tag, value, event.start_mark, event.end_mark, event.style)
        if tag == _INT:
            return _construct_int(self.loader, node)
        if tag == _FLOAT:
            return _construct_float(self.loader, node)
        return self.loader.construct_document(node)

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
            key = scalar(key_event)       # `<<` and `=` raised: the node path merges
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
