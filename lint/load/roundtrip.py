"""Rewrite a YAML or JSON file with a few fields changed, and nothing else.

YAML goes through ruamel.yaml's round-trip mode, which keeps comments, key order, quoting and
flow or block style; JSON through the json module, in the file's own indentation. Neither
reproduces every file byte for byte (ruamel.yaml drops a comment above the first `---`, writes
`key: null` as `key:`, and uses one indentation for the whole file), so the rewrite is a
three-way merge: the changed lines between the unchanged and the changed dump are carried onto
the original text, each where the unchanged dump's lines match the original. A change that
does not land on matching lines, or a merged text that does not read back as the changed data,
is refused (`RewriteError`) rather than written differently.

`edits` are (path, value) pairs per document index (documents counted as the loader counts
them, empty ones included). A new key goes at the end of its mapping, after the trailing
comment of the last key's line (`requests` goes before `limits`, as manifests write them).
The value `REMOVE` deletes the key, and the mapping that held it when nothing is left in it
(`remove_key`); the comment lines below a deleted key stay, under the key above it.
"""
from __future__ import annotations

import copy
import difflib
import io
import json
import re
from collections import Counter
from typing import Any, Callable, Iterable

import yaml

NEW_KEY_BEFORE = {"requests": "limits"}      # a new key -> the existing key it goes in front of


class _Remove:
    def __repr__(self) -> str:
        return "REMOVE"


REMOVE = _Remove()      # an edit's value that deletes the key


def remove_key(node: dict, path: tuple) -> None:
    """Delete `path` in plain data, and the mapping that held it if that is left empty (an
    empty `featureGates: {}` says what no `featureGates` says)."""
    parents = [node]
    for step in path[:-1]:
        parents.append(parents[-1][step])
    del parents[-1][path[-1]]
    if len(path) > 1 and isinstance(parents[-1], dict) and not parents[-1]:
        del parents[-2][path[-2]]


class RewriteError(ValueError):
    """The file cannot be rewritten with only the changed fields different."""


def rewrite(text: str, edits: dict[int, Iterable[tuple[tuple, Any]]], expected: dict[int, Any]) -> str:
    """`text` with `edits` made. `expected`: each edited document's data as the linter read it,
    to check that ruamel.yaml reads the same documents (same keys and list lengths)."""
    bom = "\ufeff" if text.startswith("\ufeff") else ""
    newline = "\r\n" if "\r\n" in text else "\n"
    body = text[len(bom):].replace("\r\n", "\n")
    if is_json(body):
        base, fixed, read = _json_versions(body, edits, expected)
    else:
        base, fixed, read = _yaml_versions(body, edits, expected)
    merged = _merge(body, base, fixed)
    try:
        same = read(merged) == read(fixed)
    except Exception as e:               # ruamel.yaml's and json's errors have no common base
        raise RewriteError(f"the rewritten text does not read back: {e}") from None
    if not same:
        raise RewriteError("the changes could not be placed without changing other lines")
    return bom + merged.replace("\n", newline)


def is_json(text: str) -> bool:
    if text.lstrip()[:1] not in ("{", "["):
        return False
    try:
        json.loads(text)
    except ValueError:
        return False
    return True


# ------------------------------------------------------------------------------- YAML

def _yaml() -> Any:
    from ruamel.yaml import YAML

    rt = YAML(typ="rt")
    rt.preserve_quotes = True
    rt.width = 1 << 16                      # never fold a long line
    # `null` as kubectl writes it (`creationTimestamp: null`), not ruamel.yaml's empty value
    rt.representer.add_representer(type(None), lambda r, _: r.represent_scalar("tag:yaml.org,2002:null", "null"))
    return rt


def _yaml_versions(body: str, edits: dict, expected: dict[int, Any]):
    from ruamel.yaml.error import YAMLError

    rt = _yaml()
    mapping, offset = guess_indent(body)
    rt.indent(mapping=mapping, sequence=offset + 2, offset=offset)
    rt.explicit_start = body.lstrip().startswith("---")
    try:
        documents = list(rt.load_all(body))
        base = _dump(rt, documents)
    except YAMLError as e:
        raise RewriteError(f"ruamel.yaml cannot read it: {str(e).splitlines()[0]}") from None
    for index, changes in edits.items():
        if index >= len(documents) or _shape(documents[index]) != _shape(expected.get(index)):
            raise RewriteError("ruamel.yaml reads its documents differently from Kubernetes")
        for path, value in changes:
            _refuse_shared(documents[index], tuple(path))
            if value is REMOVE:
                _remove(documents[index], tuple(path))
            else:
                _set(documents[index], tuple(path), value)
    fixed = _dump(rt, documents)

    def read(text: str) -> list:
        return [_plain(d) for d in _yaml().load_all(text)]
    return base, fixed, read


def _refuse_shared(document: Any, path: tuple) -> None:
    """RewriteError when the mapping or list a change is made in is written once and used in
    several places (an anchor with aliases, or a `<<:` merge): the change would land in all."""
    uses: Counter = Counter()

    def walk(node: Any) -> None:
        uses[id(node)] += 1
        if uses[id(node)] == 1:
            for child in node.values() if isinstance(node, dict) else node:
                if isinstance(child, (dict, list)):
                    walk(child)
    walk(document)
    node = document
    for step in path[:-1]:
        node = node.get(step) if isinstance(node, dict) else node[step] if isinstance(node, list) else None
        if not isinstance(node, (dict, list)):
            return
        if uses[id(node)] > 1:
            anchor = getattr(getattr(node, "anchor", None), "value", None)
            raise RewriteError(f"it is in {'&' + anchor if anchor else 'a node'}, which the file uses in "
                               "several places through YAML aliases: the change would land in all of them")


def _dump(rt: Any, documents: list) -> str:
    out = io.StringIO()
    rt.dump_all(documents, out)
    return out.getvalue()


def guess_indent(text: str) -> tuple[int, int]:
    """(mapping indentation, the offset of a block sequence's dash under its key), from the
    first block mapping and the first block sequence the text nests."""
    mapping = offset = None
    lines = [ln for ln in text.splitlines() if ln.strip() and not ln.lstrip().startswith("#")]
    for above, below in zip(lines, lines[1:]):
        if not re.search(r":\s*(#.*)?$", above):
            continue
        key_col = len(above) - len(above.lstrip(" -"))
        col = len(below) - len(below.lstrip(" "))
        if col < key_col or (col == key_col and not below.lstrip().startswith("- ")):
            continue
        if below.lstrip().startswith("- "):
            offset = col - key_col if offset is None else offset
        elif mapping is None:
            mapping = col - key_col
        if mapping is not None and offset is not None:
            break
    return mapping or 2, offset or 0


def _set(node: Any, path: tuple, value: Any) -> None:
    for depth, step in enumerate(path[:-1]):
        if isinstance(node, dict) and not isinstance(node.get(step), (dict, list)):
            for inner in reversed(path[depth + 1:]):
                value = {inner: value}
            _insert(node, step, _block(value))          # the new block whole, then its comments
            return
        node = node[step]
    last = path[-1]
    if isinstance(node, dict) and last not in node:
        _insert(node, last, _block(value))
    else:
        node[last] = _styled(value, node[last])


def _remove(document: Any, path: tuple) -> None:
    """`remove_key` on ruamel.yaml's data: the comment and blank lines that followed the deleted
    block (ruamel.yaml keeps them with its last line) move under the key above it."""
    parents = [document]
    for step in path[:-1]:
        parents.append(parents[-1][step])
    mapping, key = parents[-1], path[-1]
    if len(path) > 1 and isinstance(mapping, dict) and list(mapping) == [key]:
        mapping, key = parents[-2], path[-2]          # the mapping goes with its only key
    keys = list(mapping)
    holder, last = _last_line(mapping, key)
    comments = holder.ca.items.get(last) if holder is not None else None
    token = comments[2] if comments and len(comments) > 2 else None
    rest = token.value.partition("\n")[2] if token is not None else ""
    del mapping[key]
    if not rest.strip(" \n"):
        return                                        # only the line's own comment goes with it
    position = keys.index(key)
    if position == 0:
        raise RewriteError("the comment lines below it would have no line above them to stay under")
    holder, last = _last_line(mapping, keys[position - 1])
    if holder is None:
        raise RewriteError("the comment lines below it would have no line above them to stay under")
    kept = holder.ca.items.get(last)
    if kept and len(kept) > 2 and kept[2] is not None:
        kept[2].value = kept[2].value.rstrip("\n") + "\n" + rest
    else:
        moved = copy.copy(token)
        moved.value = "\n" + rest
        holder.ca.items[last] = [None, None, moved, None]


def _insert(mapping: Any, key: Any, value: Any) -> None:
    """A new key: before NEW_KEY_BEFORE's key when there is one, else last, taking over the
    blank lines and comment lines that followed the last key (its own end-of-line comment
    stays). A new mapping placed before a flow-style one is written in flow style too."""
    keys = list(mapping)
    follower = NEW_KEY_BEFORE.get(key)
    if follower in mapping:
        if hasattr(value, "fa") and hasattr(mapping[follower], "fa") and mapping[follower].fa.flow_style():
            value.fa.set_flow_style()       # `requests: {...}` above `limits: {...}`
        mapping.insert(keys.index(follower), key, value)
        return
    mapping[key] = value
    holder, last = _last_line(mapping, keys[-1]) if keys else (None, None)
    comments = holder.ca.items.get(last) if holder is not None else None
    token = comments[2] if comments and len(comments) > 2 else None
    own, _, rest = token.value.partition("\n") if token is not None else ("", "", "")
    if not rest:
        return
    # the token holds the line's own end (with its comment), then the lines below it
    token.value = own + "\n"
    moved = copy.copy(token)
    moved.value = "\n" + rest
    holder, last = _last_line(mapping, key)
    holder.ca.items[last] = [None, None, moved, None]


def _last_line(node: Any, key: Any) -> tuple[Any, Any]:
    """(the collection, its key or index) whose value ends the block under `key`: what the
    comments and blank lines after that block are attached to."""
    value = node[key]
    while isinstance(value, dict) and len(value) or isinstance(value, list) and value and \
            isinstance(value[-1], dict):
        node, key = value, (list(value)[-1] if isinstance(value, dict) else len(value) - 1)
        value = node[key]
    return (node, key) if hasattr(node, "ca") else (None, None)


def _block(value: Any) -> Any:
    """A new value in block style (mappings and lists as ruamel.yaml's commented types)."""
    from ruamel.yaml.comments import CommentedMap, CommentedSeq

    if isinstance(value, dict):
        out = CommentedMap()
        for k, v in value.items():
            out[k] = _block(v)
        return out
    if isinstance(value, list):
        return CommentedSeq(_block(v) for v in value)
    return _styled(value, None)


def _styled(new: Any, old: Any) -> Any:
    """A new scalar written as the old one was: a number stays a number when the new quantity
    is a whole number, a quoted string keeps its quotes; a new string that YAML would read as
    something else (`"3"`, `"true"`) is double-quoted, as Kubernetes manifests quote them."""
    from ruamel.yaml.scalarstring import DoubleQuotedScalarString, SingleQuotedScalarString

    if not isinstance(new, str):
        return new
    if isinstance(old, (int, float)) and not isinstance(old, bool) and new.isdigit():
        return int(new)
    for kind in (DoubleQuotedScalarString, SingleQuotedScalarString):
        if isinstance(old, kind):
            return kind(new)
    return new if isinstance(yaml.safe_load(new), str) else DoubleQuotedScalarString(new)


def _plain(value: Any, leaf: Callable[[Any], Any] = lambda v: str(v) if isinstance(v, str) else v) -> Any:
    """Plain dicts and lists (string keys) with `leaf` applied to every scalar; by default
    ruamel.yaml's string subclasses become str."""
    if isinstance(value, dict):
        return {str(k): _plain(v, leaf) for k, v in value.items()}
    if isinstance(value, list):
        return [_plain(v, leaf) for v in value]
    return leaf(value)


def _shape(value: Any) -> Any:
    """The keys and list lengths of `value`, its scalars left out."""
    return _plain(value, lambda _: None)


# ------------------------------------------------------------------------------- JSON

def _json_versions(body: str, edits: dict, expected: dict[int, Any]):
    data = json.loads(body)
    indent = _json_indent(body)
    ascii_only = body.isascii()

    def dump(value: Any) -> str:
        return json.dumps(value, indent=indent, ensure_ascii=ascii_only) + ("\n" if body.endswith("\n") else "")

    base = dump(data)
    changed = copy.deepcopy(data)
    for index, changes in edits.items():
        if index != 0 or _shape(changed) != _shape(expected.get(index)):
            raise RewriteError("a JSON file holds one document")
        for path, value in changes:
            _set_plain(changed, tuple(path), value)
    return base, dump(changed), json.loads


def _json_indent(body: str) -> int | str | None:
    match = re.search(r"[\[{]\n([ \t]+)\S", body)
    if match is None:
        return None
    space = match.group(1)
    return space if "\t" in space else len(space)


def _set_plain(node: Any, path: tuple, value: Any) -> None:
    if value is REMOVE:
        remove_key(node, path)
        return
    for step in path[:-1]:
        if isinstance(node, dict) and not isinstance(node.get(step), (dict, list)):
            node[step] = {}
        node = node[step]
    old = node.get(path[-1]) if isinstance(node, dict) else node[path[-1]]
    if isinstance(value, str) and isinstance(old, (int, float)) and not isinstance(old, bool) and value.isdigit():
        value = int(value)
    node[path[-1]] = copy.deepcopy(value)


# ------------------------------------------------------------------------------- the merge

def _merge(original: str, base: str, fixed: str) -> str:
    """`original` with the line changes that turn `base` into `fixed`, each placed where
    `base`'s lines match `original`'s (RewriteError when a change has no such place)."""
    ours, theirs, changed = original.splitlines(True), base.splitlines(True), fixed.splitlines(True)
    if ours and not ours[-1].endswith("\n"):
        ours[-1] += "\n"
        trailing = False
    else:
        trailing = True
    # base line -> original line: equal lines, and lines written differently one for one (a
    # block of as many lines on both sides: `x: ~` dumped as `x: null`)
    to_original = {}
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, theirs, ours, autojunk=False).get_opcodes():
        if tag == "equal" or (tag == "replace" and i2 - i1 == j2 - j1):
            to_original.update(zip(range(i1, i2), range(j1, j2)))
    replacements = []
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, theirs, changed, autojunk=False).get_opcodes():
        if tag == "equal":
            continue
        if i1 < i2:
            mapped = [to_original.get(i) for i in range(i1, i2)]
            if None in mapped or mapped != list(range(mapped[0], mapped[0] + len(mapped))):
                raise RewriteError("the changed lines are written differently in the file")
            start, end = mapped[0], mapped[-1] + 1
        elif i1 - 1 in to_original:
            start = end = to_original[i1 - 1] + 1
        elif i1 in to_original:
            start = end = to_original[i1]
        else:
            raise RewriteError("a new line has no place in the file")
        replacements.append((start, end, changed[j1:j2]))
    for start, end, lines in sorted(replacements, reverse=True):
        ours[start:end] = lines
    text = "".join(ours)
    return text if trailing else text[:-1] if text.endswith("\n") else text
