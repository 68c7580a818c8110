"""Small builders for CEL text (Kubernetes' CEL, github.com/google/cel-go with the libraries of
k8s.io/apiserver/pkg/cel/environment/base.go), used to write admission policies.

Every builder returns CEL source. Reads of objects whose shape the API server does not promise
(custom resources, templates of unknown kinds) go through `read`, which checks each step is a
map holding the key before it selects it, so an expression never errors on an object of an
unexpected shape: an error would be the policy's failure (failurePolicy), not a finding.
"""
from __future__ import annotations

import json
import re
from typing import Iterable

_IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
# CEL's reserved words (cel-spec langdef.md): they cannot be selected with a dot.
_RESERVED = frozenset({"as", "break", "const", "continue", "else", "for", "function", "if", "import",
                       "let", "loop", "package", "namespace", "return", "var", "void", "while", "in",
                       "true", "false", "null"})


def string(text: str) -> str:
    """A CEL string literal: JSON's escapes are CEL's (\\" \\\\ \\n \\uXXXX); other characters
    stay as written (CEL source is UTF-8)."""
    return json.dumps(text, ensure_ascii=False)


def strings(texts: Iterable[str]) -> str:
    """A CEL list of string literals."""
    return "[" + ", ".join(string(t) for t in texts) + "]"


def select(base: str, name: str) -> str:
    """`base.name`, or `base["name"]` for a key that is no CEL identifier (dots, slashes)."""
    return f"{base}.{name}" if _IDENTIFIER.match(name) and name not in _RESERVED else f"{base}[{string(name)}]"


def present(base: str, name: str) -> str:
    """Whether the map `base` holds `name` with a value other than null."""
    return f"{string(name)} in {base} && {select(base, name)} != null"


def read(base: str, names: Iterable[str], kind: str, default: str) -> str:
    """The value at `base.names...` when every step is a map holding the key and the value has
    type `kind` (map, list, string), else `default`."""
    guards, here = [f"type({base}) == map"], base
    names = list(names)
    for i, name in enumerate(names):
        guards.append(f"{string(name)} in {here}")
        here = select(here, name)
        guards.append(f"type({here}) == {kind if i == len(names) - 1 else 'map'}")
    return f"({' && '.join(guards)} ? {here} : {default})"


def indexes(count: int) -> str:
    """The literal list [0, 1, ..., count-1]: CEL's macros give no index, and a bounded list of
    indexes both numbers the items of a list (`indexes(n).filter(i, i < size(l))`) and bounds
    the iteration."""
    return "[" + ", ".join(str(i) for i in range(count)) + "]"


def record(**fields: str) -> str:
    """A map literal with string keys whose values may have different types: each is wrapped
    in dyn(), since the API server type-checks aggregate literals as homogeneous
    (cel.HomogeneousAggregateLiterals in k8s.io/apiserver/pkg/cel/environment/base.go)."""
    return "{" + ", ".join(f"{string(k)}: dyn({v})" for k, v in fields.items()) + "}"


def any_of(parts: Iterable[str]) -> str:
    parts = [p for p in parts if p]
    return "(" + " || ".join(parts) + ")" if parts else "false"


def all_of(parts: Iterable[str]) -> str:
    parts = [p for p in parts if p]
    return "(" + " && ".join(parts) + ")" if parts else "true"
