"""What a YAML scalar means to Kubernetes: go-yaml v2's resolver, as sigs.k8s.io/yaml uses it.

kubectl, the API server and the kubelet read YAML with sigs.k8s.io/yaml, which parses with
its fork of go-yaml v2 (`sigs.k8s.io/yaml/goyaml.v2/resolve.go`, the same rules as
`gopkg.in/yaml.v2` resolve.go) and converts the result to JSON (`sigs.k8s.io/yaml/yaml.go`,
`yamlToJSONTarget` and `convertToJSONableObject`). PyYAML's safe loader follows the YAML 1.1
type repository instead, and the two disagree on things manifests contain. This module
reimplements the Go side so that numaguard sees the values Kubernetes sees:

| plain scalar            | PyYAML safe_load          | Kubernetes (go-yaml v2)             |
|-------------------------|---------------------------|-------------------------------------|
| `=`                     | error (`!!value` tag)     | the string "="                      |
| `y`, `Y`, `n`, `N`      | strings                   | booleans                            |
| `1:20`, `1:20.5`        | 80, 80.5 (base 60)        | strings (base 60 "purposefully unsupported") |
| `1e3`, `1.5e3`          | strings (1.1 wants `e+3`) | floats                              |
| `0o17`                  | string                    | 15                                  |
| `08`, `09`              | strings                   | floats 8.0, 9.0 (not octal, so ParseFloat) |
| `2024-01-02`            | a `date`                  | a time, written to JSON as "2024-01-02T00:00:00Z" |
| `!!binary aGk=`         | bytes                     | the decoded text "hi"               |
| `!Ref x`, `!!set`, ...  | error (unknown tag)       | the value as if untagged (tag ignored) |

Mapping keys that are not strings become strings as sigs.k8s.io/yaml makes them (`1` ->
"1", `yes` -> "true"); a null key is refused, as there.
"""
from __future__ import annotations

import base64
import binascii
import math
import re
from datetime import datetime
from typing import Any

STR = "tag:yaml.org,2002:str"
BOOL = "tag:yaml.org,2002:bool"
INT = "tag:yaml.org,2002:int"
FLOAT = "tag:yaml.org,2002:float"
NULL = "tag:yaml.org,2002:null"
TIMESTAMP = "tag:yaml.org,2002:timestamp"
MERGE = "tag:yaml.org,2002:merge"
BINARY = "tag:yaml.org,2002:binary"

# resolve.go resolveMapList: exact spellings, looked up before anything else.
_WORDS: dict[str, tuple[str, Any]] = {}
for _tag, _value, _spellings in (
        (BOOL, True, "y Y yes Yes YES true True TRUE on On ON"),
        (BOOL, False, "n N no No NO false False FALSE off Off OFF"),
        (NULL, None, "~ null Null NULL"),
        (FLOAT, math.nan, ".nan .NaN .NAN"),
        (FLOAT, math.inf, ".inf .Inf .INF +.inf +.Inf +.INF"),
        (FLOAT, -math.inf, "-.inf -.Inf -.INF"),
        (MERGE, "<<", "<<")):
    for _spelling in _spellings.split():
        _WORDS[_spelling] = (_tag, _value)
_WORDS[""] = (NULL, None)

# resolve.go resolveTable: the first character says what the scalar may be; others are strings.
_NUMERIC_START = frozenset("+-0123456789")
_LOOKUP_START = frozenset("yYnNtTfFoO~<")        # '<' only for `<<`, which resolve.go keeps in the map

_YAML_STYLE_FLOAT = re.compile(r"[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?")
_GO_FLOAT = re.compile(r"[-+]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][-+]?[0-9]+)?")
_TIMESTAMP = re.compile(
    r"(\d{4})-(\d{1,2})-(\d{1,2})"
    r"(?:(?:([Tt])|( ))(\d{1,2}):(\d{1,2}):(\d{1,2})(?:\.(\d{1,9}))?"
    r"(Z|[+-]\d{2}:\d{2})?)?")


def resolve_plain(text: str) -> tuple[str, Any]:
    """(tag, value) of an untagged plain scalar, as go-yaml v2's `resolve("", text)`."""
    if not text:
        return NULL, None
    first = text[0]
    if first in _LOOKUP_START or first == ".":
        found = _WORDS.get(text)
        if found is not None:
            return found
        if first == "." and _GO_FLOAT.fullmatch(text):       # strconv.ParseFloat(in)
            return FLOAT, float(text)
        return STR, text
    if first not in _NUMERIC_START:
        return STR, text
    found = _WORDS.get(text)
    if found is not None:
        return found
    if first.isdigit() and len(text) >= 8 and text[4] == "-":
        stamp = _timestamp(text)
        if stamp is not None:
            return TIMESTAMP, stamp
    plain = text.replace("_", "") if "_" in text else text
    number = _go_int(plain)
    if number is not None:
        return INT, number
    if _YAML_STYLE_FLOAT.fullmatch(plain):
        value = float(plain)
        if not math.isinf(value):                          # ParseFloat's range error: a string
            return FLOAT, value
    return STR, text


def _go_int(plain: str) -> int | None:
    """strconv.ParseInt(plain, 0, 64), then ParseUint, then big.Int: Go's base prefixes
    (0x, 0o, 0b, and a bare leading 0 for octal), a sign, nothing else."""
    sign, digits = (plain[0], plain[1:]) if plain[:1] in "+-" else ("", plain)
    if not digits:
        return None
    lowered = digits[:2].lower()
    if len(digits) > 2 and lowered in ("0x", "0o", "0b"):
        base, body = {"0x": 16, "0o": 8, "0b": 2}[lowered], digits[2:]
    elif digits[0] == "0" and len(digits) > 1:
        base, body = 8, digits[1:]
    else:
        base, body = 10, digits
    if not body.isalnum() or not body.isascii():
        return None
    try:
        value = int(body, base)
    except ValueError:
        return None
    return -value if sign == "-" else value


def _timestamp(text: str) -> str | None:
    """go-yaml's parseTimestamp (four layouts), written as encoding/json writes a time.Time
    (RFC 3339 with nanoseconds, trailing zeros dropped): the string Kubernetes receives."""
    match = _TIMESTAMP.fullmatch(text)
    if match is None:
        return None
    year, month, day, tee, space, hour, minute, second, fraction, zone = match.groups()
    if space and zone:                      # "2006-1-2 15:4:5.999999999" has no zone
        return None
    if (tee or space) is None:
        hour = minute = second = "0"
    elif tee and zone is None:              # "T" layouts require the zone
        return None
    try:
        moment = datetime(int(year), int(month), int(day), int(hour), int(minute), int(second))
    except ValueError:
        return None
    out = moment.strftime("%Y-%m-%dT%H:%M:%S")
    fraction = (fraction or "").rstrip("0")
    if fraction:
        out += "." + fraction
    if not zone or zone in ("Z", "+00:00", "-00:00"):
        return out + "Z"
    return out + zone


def resolve_tagged(tag: str, text: str) -> Any:
    """The value of a scalar with an explicit tag. Standard tags are checked as go-yaml does
    ("cannot decode !!str `x` as a !!int"); any other tag is ignored, the text kept."""
    if tag == STR:
        return text
    if tag == BINARY:
        try:
            raw = base64.b64decode("".join(text.split()), validate=True)
        except (binascii.Error, ValueError):
            raise ValueError(f"!!binary value is not base64: {text[:40]!r}") from None
        return raw.decode("utf-8", "replace")
    if tag not in (BOOL, INT, FLOAT, NULL, TIMESTAMP):
        return text
    resolved, value = resolve_plain(text)
    if tag == TIMESTAMP and resolved == STR:
        stamp = _timestamp(text)
        if stamp is not None:
            return stamp
    if resolved == tag:
        return value
    if tag == FLOAT and resolved == INT:
        return float(value)
    raise ValueError(f"cannot decode {_short(resolved)} `{text}` as a {_short(tag)}")


def _short(tag: str) -> str:
    return "!!" + tag.rsplit(":", 1)[-1]


def key_string(key: Any) -> str:
    """A mapping key as sigs.k8s.io/yaml turns it into a JSON key (convertToJSONableObject)."""
    if isinstance(key, str):
        return key
    if isinstance(key, bool):
        return "true" if key else "false"
    if isinstance(key, int):
        return str(key)
    if isinstance(key, float):
        if math.isnan(key):
            return ".nan"
        if math.isinf(key):
            return ".inf" if key > 0 else "-.inf"
        return format(key, "g")
    raise ValueError(f"unsupported map key: {'null' if key is None else type(key).__name__}")
