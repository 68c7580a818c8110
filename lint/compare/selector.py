"""A group's selector: PromQL label matchers (`namespace="shop",pod=~"web-canary-.*"`, braces
optional), parsed as Prometheus parses them (promql/parser/lex.go and generated_parser.y:
`label_matcher: IDENTIFIER match_op STRING`, the operators = != =~ !~, strings in double or
single quotes with Go escapes or in backquotes without any; model/labels/matcher.go: a regular
expression matches the whole value, a label the series does not have has the empty value).
The text is kept as written for the queries; the parsed form matches series read directly from
the node agents."""
from __future__ import annotations

import ast
import re
from dataclasses import dataclass

_NAME = r"[a-zA-Z_][a-zA-Z0-9_]*"
_STRING = r'"(?:[^"\\\n]|\\.)*"|\'(?:[^\'\\\n]|\\.)*\'|`[^`]*`'
_MATCHER = re.compile(rf"\s*({_NAME})\s*(=~|!~|!=|=)\s*({_STRING})\s*")
OPERATORS = ("=", "!=", "=~", "!~")


class SelectorError(ValueError):
    """A selector Prometheus would not parse."""


@dataclass(frozen=True)
class Matcher:
    name: str
    op: str
    value: str

    def matches(self, labels: dict[str, str]) -> bool:
        have = labels.get(self.name, "")
        if self.op == "=":
            return have == self.value
        if self.op == "!=":
            return have != self.value
        found = re.fullmatch(self.value, have, re.S) is not None    # Prometheus anchors: ^(?:re)$
        return found if self.op == "=~" else not found


@dataclass(frozen=True)
class Selector:
    text: str                      # the matchers as written, without braces
    matchers: tuple[Matcher, ...]

    def matches(self, labels: dict[str, str]) -> bool:
        return all(m.matches(labels) for m in self.matchers)


def parse_selector(text: str) -> Selector:
    """A Selector, or SelectorError saying what is wrong and where."""
    body = text.strip()
    if body.startswith("{"):
        if not body.endswith("}"):
            raise SelectorError(f"{text!r}: an opening brace without its closing one")
        body = body[1:-1]
    body = body.strip()
    matchers, written, position = [], [], 0
    while position < len(body):
        found = _MATCHER.match(body, position)
        if not found:
            raise SelectorError(f"{text!r}: expected a label matcher such as pod=~\"web-.*\" at "
                                f"{body[position:position + 30]!r}")
        matchers.append(Matcher(found[1], found[2], _unquote(found[3])))
        written.append(found.group(0).strip())
        position = found.end()
        if position < len(body):
            if body[position] != ",":
                raise SelectorError(f"{text!r}: expected a comma at {body[position:position + 30]!r}")
            position += 1
            while position < len(body) and body[position].isspace():      # a trailing comma
                position += 1
    if not matchers:
        raise SelectorError("an empty selector selects every series: name the group's pods, "
                            "e.g. namespace=\"shop\",pod=~\"web-canary-.*\"")
    for m in matchers:
        if m.op in ("=~", "!~"):
            try:
                re.compile(m.value)
            except re.error as e:
                raise SelectorError(f"{text!r}: {m.name}{m.op}: not a regular expression: {e}") from None
    if all(m.matches({}) for m in matchers):
        # promql/parser/parse.go: "vector selector must contain at least one non-empty matcher"
        raise SelectorError(f"{text!r}: every matcher also matches series without the label: "
                            "add one that needs a value, e.g. namespace=\"shop\"")
    return Selector(",".join(written), tuple(matchers))


def _unquote(token: str) -> str:
    if token[0] == "`":
        return token[1:-1]                       # raw string: no escapes
    try:
        return ast.literal_eval(token)           # Go's escapes are Python's, less \N{...}
    except (ValueError, SyntaxError) as e:
        raise SelectorError(f"{token}: {e}") from None
