"""`# numaguard: ignore NG206, NG207` comments: which document each one applies to.

A lint user silences rules for one document by writing such a comment in it (or above it,
before its `---`). Comments are gone once PyYAML has parsed the text, so `numaguard.lint.load.documents`
finds them in the raw text here and hands each `Document` the rule ids of the text segment it
starts in. It needs the documents' node graphs only to skip comment-like lines that are really
inside multi-line strings. Kept apart from `numaguard.lint.load.documents` because it is about the text around
the YAML, not the YAML itself.
"""
from __future__ import annotations

import bisect
import re
from typing import Any, Iterable

from yaml.nodes import MappingNode, ScalarNode


# A document marker: `---` (start) or `...` (end) at column 0 followed by a blank or the end
# of the line. libyaml ends any scalar (block, plain or quoted) at such a line, so splitting on
# it is exact. After `...` only comments can come before the next `---`, so an ignore comment
# there opens a segment that holds no document and goes to the next document, not the ended one.
_DOC_START = re.compile(r"^(?:---|\.\.\.)(?=[ \t\r\n]|$)", re.M)
_IGNORE_COMMENT = re.compile(r"^[ \t]*#[ \t]*numaguard:[ \t]*ignore\b([^\r\n]*)", re.M)
_RULE_ID = re.compile(r"[A-Za-z]+[0-9]+")
_ID_SEPARATORS = re.compile(r"[\s,;]+")


def ignores_by_document(text: str, starts: list[int], roots: list[Any]) -> list[frozenset[str]]:
    """The ignore comments of the text segment each document starts in, one set per document.

    Segments are the stretches between `---` (and `...`) lines (libyaml ends every scalar at
    such a line, so they are exact). Comments in a segment holding no document (a header above the first
    `---`, an empty or broken document) go to the next document; comment-like lines inside
    multi-line scalars are skipped. `starts` are the documents' 0-based first lines, `roots`
    the node graphs of every document in the text.
    """
    markers, by_segment = _ignores_by_segment(text, roots)
    if not by_segment:
        return [frozenset()] * len(starts)
    found = []
    previous = -1
    for start in starts:
        segment = bisect.bisect_right(markers, start)
        ids: set[str] = set()
        for covered in range(previous + 1, segment + 1):
            ids |= by_segment.get(covered, set())
        previous = segment
        found.append(frozenset(ids))
    return found


def _ignores_by_segment(text: str, roots: list[Any]) -> tuple[list[int], dict[int, set[str]]]:
    """Line numbers (0-based) of the `---`/`...` markers, and rule ids per segment between them."""
    markers = _line_numbers(text, (m.start() for m in _DOC_START.finditer(text)))
    comments = list(_IGNORE_COMMENT.finditer(text))
    by_segment: dict[int, set[str]] = {}
    for match, line in zip(comments, _line_numbers(text, (m.start() for m in comments))):
        if _in_scalar_text(roots, line):
            continue
        segment = bisect.bisect_right(markers, line)
        by_segment.setdefault(segment, set()).update(_rule_ids(match.group(1)))
    return markers, by_segment


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
