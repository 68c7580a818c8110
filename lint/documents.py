"""Load YAML/JSON documents and keep the line and column of every field.

PyYAML (libyaml's C parser when present) parses the text; this module builds plain Python
values itself, because PyYAML's constructor throws the positions away. Plain YAML (no
anchors, aliases, tags or merge keys: nearly every manifest) is built straight from the
parser's events; anything else from the node graph PyYAML composes. Mappings become
`PosDict`s and sequences `PosList`s: ordinary dicts and lists that also carry `.marks`, the
1-based (line, column) of every value. Scalars are resolved exactly as `yaml.safe_load`
resolves them (YAML 1.1 tags; the less common ones are handed to PyYAML's own
SafeConstructor).

Bad input never raises: it becomes a `LoadError` (reported as NG001) and the documents that
parsed before it are kept. Guards: alias expansion is measured on the node graph before
anything is built (billion laughs), nesting is bounded by libyaml (1000 levels) and by
Python's recursion limit (caught), bytes that are not UTF-8 are reported with their offset.

Deliberate differences from PyYAML:
- merge keys (`<<`): when several merged mappings define the same key, the first one wins,
  as the YAML merge-key spec says. (PyYAML 6.0.4 de-duplicates by the identity of the key
  string, so its answer depends on string interning; it agrees with ours for aliased keys
  and one-character keys.) Keys written in the mapping itself override every merged key.
- in `*.json` files a plain number with an exponent (`1e3`) is a float, as in JSON; YAML 1.1
  would keep it a string.
"""
from __future__ import annotations

import bisect
import json
import os
import re
import sys
from dataclasses import dataclass
from functools import lru_cache
from pathlib import PurePosixPath
from typing import Any, Callable, Iterable, Iterator

import yaml
from yaml.events import (
    DocumentEndEvent, MappingEndEvent, MappingStartEvent, ScalarEvent, SequenceEndEvent,
    SequenceStartEvent, StreamEndEvent, StreamStartEvent,
)
from yaml.nodes import MappingNode, ScalarNode, SequenceNode

# libyaml when PyYAML was built with it; the pure-Python loader gives the same nodes, slower.
_Loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


_STR = "tag:yaml.org,2002:str"
_MAP = "tag:yaml.org,2002:map"
_SEQ = "tag:yaml.org,2002:seq"
_INT = "tag:yaml.org,2002:int"
_FLOAT = "tag:yaml.org,2002:float"
_BOOL = "tag:yaml.org,2002:bool"
_NULL = "tag:yaml.org,2002:null"
_MERGE = "tag:yaml.org,2002:merge"
_VALUE = "tag:yaml.org,2002:value"


class _QuickResolver:
    """Mixed into the safe loaders to cut the resolver's per-node overhead.

    The composer asks the resolver for every node's tag; PyYAML's generic version (path
    resolvers, list concatenation per scalar) is a third of the time a manifest takes to
    load. Without path resolvers and wildcard implicit resolvers, as for SafeLoader, this
    gives the same tags (yaml/resolver.py BaseResolver.resolve); `_loader_class` checks
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


_QUICK_LOADERS = {base: type(f"Quick{base.__name__}", (_QuickResolver, base), {})
                  for base in {yaml.SafeLoader, _Loader}}


def _loader_class() -> type:
    base = _Loader
    if base.yaml_path_resolvers or None in base.yaml_implicit_resolvers:
        return base
    return _QUICK_LOADERS.get(base, base)


MAX_EXPANDED_NODES = 1_000_000      # a document may not grow beyond this through aliases
YAML_SUFFIXES = (".yaml", ".yml", ".json")
STDIN = "<stdin>"

# A document marker: `---` at column 0 followed by a blank or the end of the line. libyaml
# ends any scalar (block, plain or quoted) at such a line, so splitting on it is exact.
_DOC_START = re.compile(r"^---(?=[ \t\r\n]|$)", re.M)
_IGNORE_COMMENT = re.compile(r"^[ \t]*#[ \t]*numaguard:[ \t]*ignore\b([^\r\n]*)", re.M)
_RULE_ID = re.compile(r"[A-Za-z]+[0-9]+")
_ID_SEPARATORS = re.compile(r"[\s,;]+")
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


@dataclass
class Document:
    source: str                 # file path as given, or "<stdin>"
    index: int                  # 0-based document number within the file (null documents count)
    data: Any                   # a PosDict (plain dict when a JSON file only parsed with json)
    line: int                   # 1-based line where the document's content starts
    ignores: frozenset[str]     # rule ids from "# numaguard: ignore NG206, NG207" lines in it


@dataclass
class LoadError:
    source: str
    line: int | None
    column: int | None
    message: str


class _DocumentError(Exception):
    """A document composed fine but cannot become data (bad key, alias bomb, unknown tag)."""

    def __init__(self, message: str, mark: Any = None) -> None:
        super().__init__(message)
        self.message = message
        self.mark = mark


# --------------------------------------------------------------------------- positions

def position_of(data: Any, path: tuple) -> tuple[int, int] | None:
    """The (line, column) of the deepest element of `path` whose position is known.

    Walks `path` (keys and list indexes) from `data`; plain dicts/lists are walked through
    but know no positions. None when no step of the path has a known position.
    """
    found = None
    current = data
    for step in path:
        if isinstance(current, dict):
            try:
                if step not in current:
                    break
            except TypeError:          # unhashable step
                break
            marks = getattr(current, "marks", None)
            if marks is not None and step in marks:
                found = marks[step]
            current = current[step]
        elif isinstance(current, list) and isinstance(step, int) and not isinstance(step, bool):
            if not -len(current) <= step < len(current):
                break
            marks = getattr(current, "marks", None)
            if marks is not None and len(marks) == len(current):
                found = marks[step]
            current = current[step]
        else:
            break
    return found


# --------------------------------------------------------------------------- constructing

_BOOL_VALUES = yaml.constructor.SafeConstructor.bool_values
_construct_int = yaml.constructor.SafeConstructor.construct_yaml_int
_construct_float = yaml.constructor.SafeConstructor.construct_yaml_float


def _expanded_size(root: Any, limit: int) -> int:
    """How many nodes the document has once every alias is expanded, memoized per node.

    Linear in the number of distinct nodes and edges. Raises _DocumentError beyond `limit`
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
            raise _DocumentError("document has a recursive alias (a node that contains itself)",
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
        raise _DocumentError(f"document expands through aliases beyond {limit:,} nodes",
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


def _mark(node: Any) -> tuple[int, int]:
    mark = node.start_mark
    return (mark.line + 1, mark.column + 1)


class _Builder:
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
        raise _DocumentError(f"unexpected node {cls.__name__}", getattr(node, "start_mark", None))

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
            raise _DocumentError("found unhashable key (a mapping key that is a list or a mapping)",
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
                        raise _DocumentError("expected a mapping for merging, but found "
                                             f"{source.id}", source.start_mark)
            else:
                raise _DocumentError("expected a mapping or list of mappings for merging, but found "
                                     f"{value_node.id}", value_node.start_mark)
            for source in sources:
                value = self.construct(source)
                if not isinstance(value, dict):
                    raise _DocumentError("expected a mapping for merging", source.start_mark)
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


_new_dict = dict.__new__
_new_list = list.__new__


class _Unsupported(Exception):
    """The event fast path met something only the node path handles (see `_load_events`)."""


class _EventBuilder:
    """Builds the values of plain documents straight from the parser's events.

    The common manifest has no anchors, aliases, tags or merge keys. For it, composing a node
    graph first (and resolving every scalar's tag through a callback from the parser) is work
    thrown away: this builder consumes the events and resolves plain scalars itself, giving
    exactly what `_Builder` gives (same values, same `.marks`). It raises `_Unsupported` on
    anything else (an alias, a collection or `<<`/`=` as a key), and the file is then loaded by
    the node path. `_load_yaml` sends text holding `&` (anchors) or `!` (tags) there directly,
    so events here never carry an anchor or an explicit tag. No node graph also means no
    document-sized burst of short-lived objects, each of which brings the cyclic GC's next
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
        # ints in other notations, floats, timestamps: PyYAML's constructors, as _Builder does.
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


def _load_events(text: str, source: str) -> tuple[list[Document], list[int], list[LoadError]] | None:
    """The fast path of `_load_yaml` for plain YAML (see `_EventBuilder`); None when the text
    needs the node path: anything unusual, and any error, so that errors are reported by one
    path only."""
    loader_class = _loader_class()
    if loader_class not in _QUICK_LOADERS.values():
        return None
    documents: list[Document] = []
    starts: list[int] = []
    errors: list[LoadError] = []
    try:
        loader = loader_class(text)     # the pure-Python reader may refuse the text already
    except Exception:
        return None
    try:
        builder = _EventBuilder(loader)
        next_event = loader.get_event
        if next_event().__class__ is not StreamStartEvent:
            return None
        index = 0
        while True:
            if next_event().__class__ is StreamEndEvent:    # else a DocumentStartEvent
                break
            root = next_event()
            data = builder.value(root)
            if next_event().__class__ is not DocumentEndEvent:
                return None
            position = index
            index += 1
            if data is None:
                continue                                    # an empty document
            mark = root.start_mark
            line, column = mark.line + 1, mark.column + 1
            if not isinstance(data, dict):
                errors.append(LoadError(source, line, column,
                                        f"document {position + 1} is {_type_name(data)}, not a mapping"))
                continue
            documents.append(Document(source, position, data, line, _NO_IGNORES))
            starts.append(line - 1)
    except Exception:             # _Unsupported, YAMLError, RecursionError, constructor errors
        return None
    finally:
        loader.dispose()
    return documents, starts, errors


_NO_IGNORES: frozenset[str] = frozenset()


# --------------------------------------------------------------------------- loading text

_TYPE_NAMES = {bool: "a boolean", list: "a list", str: "a string", int: "an integer", float: "a number",
               bytes: "a binary value", set: "a set"}


def _type_name(value: Any) -> str:
    for cls, name in _TYPE_NAMES.items():
        if isinstance(value, cls):
            return name
    if type(value).__name__ in ("date", "datetime"):
        return "a timestamp"
    return f"a {type(value).__name__}"


def _decode(raw: bytes, source: str) -> tuple[str | None, LoadError | None]:
    if raw.startswith((b"\xff\xfe", b"\xfe\xff")):         # UTF-16 with a byte order mark
        encoding = "utf-16"
    else:
        encoding = "utf-8-sig"
    try:
        return raw.decode(encoding), None
    except UnicodeDecodeError as exc:
        offset = exc.start
        line = raw.count(b"\n", 0, offset) + 1
        column = offset - (raw.rfind(b"\n", 0, offset) + 1) + 1
        bad = raw[offset:offset + 1].hex()
        what = "UTF-16" if encoding == "utf-16" else "UTF-8"
        return None, LoadError(source, line, column,
                               f"file is not valid {what}: byte 0x{bad} at offset {offset} cannot be decoded")


def _yaml_error(exc: Exception, source: str, text: str, byte_offsets: bool = False) -> LoadError:
    if isinstance(exc, yaml.reader.ReaderError):
        # libyaml reports a byte offset into the UTF-8 text, the Python reader a char offset.
        position = exc.position
        if byte_offsets:
            prefix = text.encode("utf-8", "surrogatepass")[:position].decode("utf-8", "replace")
        else:
            prefix = text[:position]
        line = prefix.count("\n") + 1
        column = len(prefix) - (prefix.rfind("\n") + 1) + 1
        character = exc.character
        shown = f"#x{character:04x}" if isinstance(character, int) else repr(character)
        return LoadError(source, line, column, f"unacceptable character {shown}: {exc.reason}")
    if isinstance(exc, yaml.MarkedYAMLError):
        mark = exc.problem_mark or exc.context_mark
        parts = [p for p in (exc.context, exc.problem) if p]
        message = ": ".join(parts) or "invalid YAML"
        if mark is None:
            return LoadError(source, None, None, message)
        return LoadError(source, mark.line + 1, mark.column + 1, message)
    if isinstance(exc, RecursionError):
        return LoadError(source, None, None, "document nests too deeply")
    if isinstance(exc, UnicodeEncodeError):       # text (not bytes) with a lone surrogate
        prefix = text[:exc.start]
        line = prefix.count("\n") + 1
        column = len(prefix) - (prefix.rfind("\n") + 1) + 1
        return LoadError(source, line, column,
                         f"text holds an unpaired surrogate U+{ord(text[exc.start]):04X}")
    return LoadError(source, None, None, f"cannot parse: {type(exc).__name__}: {exc}")


def _in_scalar_text(roots: list[Any], line: int) -> bool:
    """Whether 0-based `line` lies inside a multi-line scalar (block, quoted or plain).

    A `# numaguard: ignore` line there is text, not a comment. Only the collections whose
    lines cover `line` are searched, so this costs the depth of the document, not its size.
    """
    seen: set[int] = set()
    stack = list(roots)
    while stack:
        node = stack.pop()
        start, end = node.start_mark, node.end_mark
        if not start.line <= line <= end.line:
            continue
        if node.__class__ is ScalarNode:
            if start.line < line and (line < end.line or end.column > 0):
                return True
            continue
        if id(node) in seen:
            continue
        seen.add(id(node))
        if node.__class__ is MappingNode:
            for pair in node.value:
                stack.extend(pair)
        else:
            stack.extend(node.value)
    return False


def _line_numbers(text: str, offsets: Iterable[int]) -> list[int]:
    """0-based line numbers of increasing offsets, counting newlines only once."""
    lines = []
    line = previous = 0
    for offset in offsets:
        line += text.count("\n", previous, offset)
        previous = offset
        lines.append(line)
    return lines


def _rule_ids(listed: str) -> set[str]:
    """Rule ids (upper-cased) and `all` from "NG206, ng207 all  # why": up to the first word
    that is neither, so a reason written after the ids adds nothing."""
    ids = set()
    for word in _ID_SEPARATORS.split(listed.split("#")[0].strip()):
        if word.lower() == "all":
            ids.add("all")
        elif _RULE_ID.fullmatch(word):
            ids.add(word.upper())
        else:
            break
    return ids


def _ignores_by_segment(text: str, roots: list[Any]) -> tuple[list[int], dict[int, set[str]]]:
    """Line numbers (0-based) of the `---` markers, and rule ids per segment between them."""
    markers = _line_numbers(text, (m.start() for m in _DOC_START.finditer(text)))
    comments = list(_IGNORE_COMMENT.finditer(text))
    by_segment: dict[int, set[str]] = {}
    for match, line in zip(comments, _line_numbers(text, (m.start() for m in comments))):
        if _in_scalar_text(roots, line):
            continue
        segment = bisect.bisect_right(markers, line)
        by_segment.setdefault(segment, set()).update(_rule_ids(match.group(1)))
    return markers, by_segment


def _assign_ignores(text: str, documents: list[Document], starts: list[int], roots: list[Any]) -> None:
    """Give each document the ignore comments of the text segment it starts in.

    Segments are the stretches between `---` lines (libyaml ends every scalar at such a line,
    so they are exact). Comments in a segment holding no document (a header above the first
    `---`, an empty or broken document) go to the next document; comment-like lines inside
    multi-line scalars are skipped.
    """
    markers, by_segment = _ignores_by_segment(text, roots)
    if not by_segment:
        return
    previous = -1
    for document, start in zip(documents, starts):
        segment = bisect.bisect_right(markers, start)
        ids: set[str] = set()
        for covered in range(previous + 1, segment + 1):
            ids |= by_segment.get(covered, set())
        previous = segment
        document.ignores = frozenset(ids)


def looks_plain(text: str) -> bool:
    """No anchor (`&`) and no tag (`!`): worth trying the event path (`_load_events`), which
    declines anything else it meets. (Ignore comments and JSON numbers take the node path too.)"""
    return "&" not in text and "!" not in text


def _load_yaml(text: str, source: str, json_numbers: bool, roots: list[Any] | None
               ) -> tuple[list[Document], list[int], list[LoadError], bool]:
    """Documents, their 0-based start lines, errors, and whether parsing itself failed.

    `roots`, when given, collects every document's node graph (see `_assign_ignores`).
    """
    if roots is None and not json_numbers and looks_plain(text):
        loaded = _load_events(text, source)
        if loaded is not None:
            return (*loaded, False)
    documents: list[Document] = []
    starts: list[int] = []
    errors: list[LoadError] = []
    may_alias = "*" in text            # no alias without a `*`: skip measuring expansion
    loader = None
    byte_offsets = False
    index = 0
    try:
        loader_class = _loader_class()
        byte_offsets = not issubclass(loader_class, yaml.SafeLoader)    # libyaml counts bytes
        loader = loader_class(text)
        while loader.check_node():
            root = loader.get_node()
            position = index
            index += 1
            if root is None:
                continue
            if roots is not None:
                roots.append(root)
            try:
                if may_alias:
                    _expanded_size(root, MAX_EXPANDED_NODES)
                if root.__class__ is SequenceNode and root.tag == _SEQ:
                    data: Any = []                    # no need to build what we refuse
                else:
                    data = _Builder(loader, json_numbers, may_alias).construct(root)
            except _DocumentError as exc:
                mark = exc.mark
                errors.append(LoadError(source, mark.line + 1 if mark else None,
                                        mark.column + 1 if mark else None, exc.message))
                continue
            except RecursionError:
                line, column = _mark(root)
                errors.append(LoadError(source, line, column,
                                        f"document {position + 1} nests too deeply"))
                continue
            except Exception as exc:                    # PyYAML's constructors, bad explicit tags
                errors.append(_construct_error(exc, source, root))
                continue
            if data is None:
                continue                                  # an empty document (`---` alone)
            line, column = _mark(root)
            if not isinstance(data, dict):
                errors.append(LoadError(source, line, column,
                                        f"document {position + 1} is {_type_name(data)}, not a mapping"))
                continue
            documents.append(Document(source, position, data, line, _NO_IGNORES))
            starts.append(line - 1)
    except Exception as exc:       # YAMLError, RecursionError (Python parser), encoding errors
        errors.append(_yaml_error(exc, source, text, byte_offsets))
        return documents, starts, errors, True
    finally:
        if loader is not None:
            loader.dispose()
    return documents, starts, errors, False


def _construct_error(exc: Exception, source: str, root: Any) -> LoadError:
    if isinstance(exc, yaml.MarkedYAMLError) and (exc.problem_mark or exc.context_mark):
        return _yaml_error(exc, source, "")
    line, column = _mark(root)
    return LoadError(source, line, column, f"cannot build document: {type(exc).__name__}: {exc}")


def _load_json(text: str, source: str) -> list[Document] | LoadError | None:
    """The JSON fallback: json.loads' answer (no positions), or None if it is not JSON either."""
    try:
        data = json.loads(text)
    except (ValueError, RecursionError):
        return None
    if isinstance(data, dict):
        return [Document(source, 0, data, 1, frozenset())]
    if data is None:
        return []
    return LoadError(source, 1, 1, f"document 1 is {_type_name(data)}, not a mapping")


def load_text(text: str | bytes, source: str) -> tuple[list[Document], list[LoadError]]:
    """Parse every document of one file's text. Never raises; problems come back as errors."""
    if isinstance(text, (bytes, bytearray, memoryview)):
        decoded, error = _decode(bytes(text), source)
        if error is not None:
            return [], [error]
        text = decoded
    if not text.strip():
        return [], []
    json_numbers = source.lower().endswith(".json")
    try:
        roots: list[Any] | None = [] if "numaguard:" in text else None
        documents, starts, errors, parse_failed = _load_yaml(text, source, json_numbers, roots)
    except Exception as exc:                    # belt and braces: nothing escapes
        return [], [LoadError(source, None, None, f"cannot parse: {type(exc).__name__}: {exc}")]
    if parse_failed and text.lstrip()[:1] in ("{", "["):
        # JSON that YAML 1.1 refuses (tabs, long keys, ...): take json's reading of it.
        fallback = _load_json(text, source)
        if isinstance(fallback, LoadError):
            return [], [fallback]
        if fallback is not None:
            return fallback, []
    if documents and roots is not None:
        _assign_ignores(text, documents, starts, roots)
    return documents, errors


# --------------------------------------------------------------------------- files

def _glob_regex(pattern: str) -> re.Pattern[str]:
    """A glob as a regex: `**` crosses directories, `*` and `?` stay within one name."""
    out = []
    i = 0
    while i < len(pattern):
        if pattern.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
        elif pattern.startswith("**", i):
            out.append(".*")
            i += 2
        elif pattern[i] == "*":
            out.append("[^/]*")
            i += 1
        elif pattern[i] == "?":
            out.append("[^/]")
            i += 1
        elif pattern[i] == "[":
            end = pattern.find("]", i + 2)
            if end == -1:
                out.append(re.escape("["))
                i += 1
            else:
                body = pattern[i + 1:end]
                if body.startswith("!"):
                    body = "^" + body[1:]
                out.append("[" + body.replace("\\", "\\\\") + "]")
                i = end + 1
        else:
            out.append(re.escape(pattern[i]))
            i += 1
    return re.compile("".join(out) + r"\Z")


def _excluder(patterns: Iterable[str]) -> Callable[[str, str], bool]:
    """A test for exclusion: a pattern excludes the paths it matches and everything under them.

    A pattern without `/` (like `vendor` or `*.generated.yaml`) matches any one name in the
    path, as .gitignore does.
    """
    compiled = []
    for pattern in patterns:
        pattern = pattern.strip().removeprefix("./").rstrip("/")
        if pattern:
            compiled.append((_glob_regex(pattern), _glob_regex(pattern + "/**"), "/" not in pattern))

    def excluded(path: str, relative: str) -> bool:
        candidates = {p.removeprefix("./") for p in (path, relative)}
        for whole, under, by_name in compiled:
            for candidate in candidates:
                if whole.match(candidate) or under.match(candidate):
                    return True
                if by_name and any(whole.match(part) for part in candidate.split("/")):
                    return True
        return False

    return excluded


def _posix(path: str) -> str:
    return path.replace(os.sep, "/") if os.sep != "/" else path


def _files_under(directory: str) -> list[str]:
    found = []
    for root, dirs, files in os.walk(directory):
        dirs[:] = [d for d in dirs if not d.startswith(".")]     # .git, .github, editor state
        for name in files:
            if name.lower().endswith(YAML_SUFFIXES) and not name.startswith("."):
                found.append(os.path.join(root, name))
    return sorted(found, key=_posix)


def _read(path: str) -> tuple[bytes | None, LoadError | None]:
    try:
        with open(path, "rb") as handle:
            return handle.read(), None
    except OSError as exc:
        return None, LoadError(path, None, None, f"cannot read file: {exc.strerror or exc}")


def load_paths(paths: Iterable[str], *, exclude: Iterable[str] = ()
               ) -> Iterator[tuple[str, list[Document], list[LoadError]]]:
    """Load files, directories (recursively: *.yaml, *.yml, *.json, sorted) and `-` (stdin).

    Yields (source, documents, errors) per file. Raises FileNotFoundError, before yielding
    anything, for a path that does not exist. `exclude` holds glob patterns matched against
    the posix path (as given and relative to the directory argument); `**` crosses
    directories, a pattern without `/` matches a file or directory name anywhere. Hidden
    directories and files are skipped while walking a directory.
    """
    paths = [os.fspath(path) for path in paths]
    for path in paths:
        if path != "-" and not os.path.exists(path):
            raise FileNotFoundError(2, "No such file or directory", path)
    patterns = list(exclude)
    is_excluded = _excluder(patterns) if patterns else None
    for path in paths:
        if path == "-":
            raw = sys.stdin.buffer.read() if hasattr(sys.stdin, "buffer") else sys.stdin.read()
            documents, errors = load_text(raw, STDIN)
            yield STDIN, documents, errors
            continue
        directory = os.path.isdir(path)
        for file_path in _files_under(path) if directory else [path]:
            if is_excluded is not None:
                relative = os.path.relpath(file_path, path) if directory else path
                if is_excluded(_posix(file_path), _posix(relative)):
                    continue
            raw, error = _read(file_path)
            if error is not None:
                yield file_path, [], [error]
                continue
            documents, errors = load_text(raw, file_path)
            yield file_path, documents, errors


# --------------------------------------------------------------------------- Lists

def expand_lists(doc: Document) -> list[tuple[Document, tuple]]:
    """Split a `kind: List` (or any `*List` kind with `items`) into its items.

    Returns (doc, path prefix) per item: the document itself (so positions and ignore
    comments stay whole) and the path to the item inside it, ("items", i); a List inside a
    List gives ("items", i, "items", j). Items that are not mappings are returned too, for the
    engine to report. Any other document comes back as [(doc, ())].
    """
    return [(doc, prefix) for prefix in _list_item_paths(doc.data, ())]


def _list_item_paths(data: Any, prefix: tuple) -> list[tuple]:
    kind = data.get("kind") if isinstance(data, dict) else None
    items = data.get("items") if isinstance(data, dict) else None
    if not (isinstance(kind, str) and kind.endswith("List") and isinstance(items, list)):
        return [prefix]
    paths: list[tuple] = []
    for i, item in enumerate(items):
        paths.extend(_list_item_paths(item, prefix + ("items", i)))
    return paths
