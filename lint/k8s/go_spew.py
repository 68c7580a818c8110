"""Go values as the kubelet's checkpoint checksum prints them, and the checksum itself.

The kubelet's checkpoint checksum (`pkg/kubelet/checkpointmanager/checksum/checksum.go`,
`getChecksum`) is FNV-32a over the checkpoint object printed by go-spew's formatter with
`%#v` and the config `{Indent: " ", SortKeys: true, DisableMethods: true, SpewKeys: true}`
(`k8s.io/apiserver/pkg/util/hash.DeepHashObject`; newer kubelets print through
`k8s.io/utils/dump.ForHash`, which adds `DisablePointerAddresses` and `DisableCapacities`:
neither changes `%#v` output, since the formatter prints addresses only for `%+v` and never
prints capacities). The rules of go-spew's `format.go` (`formatState.format`, `formatPtr`,
commit d8f796af of davecgh/go-spew) reproduced here:

* a value is prefixed with its Go type in parentheses, `(string)`, `(map[string]string)`,
  except map keys, map values and slice elements (`ignoreNextType`);
* a pointer prints `(*T)` (or `<*>` where the type is suppressed) and then the value it
  points to without a type; a nil map, slice or pointer prints `<nil>`;
* strings print raw (no quotes), integers in decimal;
* structs print `{Field:(type)value Field2:...}`, fields in declaration order;
* maps print `map[k:v k2:v2]` with keys sorted (numbers numerically, strings bytewise);
  slices print `[a b]`; `struct {}` prints `{}`.

Types are described with `GoType` values (kind, the type's name as `reflect.Type.String()`
gives it, and the parts); `decode` reads a JSON value into that shape the way
`encoding/json` does (field names matched exactly first, then case-insensitively; unknown
fields ignored; `null` leaves a map, slice or pointer nil), raising `GoDecodeError` with
encoding/json's wording where the kubelet would fail to unmarshal.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable


class GoDecodeError(ValueError):
    """A JSON value the kubelet's `json.Unmarshal` refuses for this Go type."""


@dataclass(frozen=True)
class GoField:
    name: str                 # Go field name (what spew prints)
    json: str                 # JSON key
    type: "GoType"
    made: bool = False        # the checkpoint constructor makes this map (non-nil when absent)


@dataclass(frozen=True)
class GoType:
    kind: str                                  # string int uint map slice ptr struct
    name: str                                  # reflect.Type.String()
    key: "GoType | None" = None
    elem: "GoType | None" = None
    fields: tuple[GoField, ...] = field(default=())
    # a custom json.Unmarshaler: JSON value -> the Go value (raise GoDecodeError)
    from_json: Callable[[Any], Any] | None = field(default=None, compare=False)

    def renamed(self, name: str) -> "GoType":
        return GoType(self.kind, name, self.key, self.elem, self.fields, self.from_json)


STRING = GoType("string", "string")
INT = GoType("int", "int")
UINT64 = GoType("uint", "uint64")
CHECKSUM = GoType("uint", "checksum.Checksum")
INT_SLICE = GoType("slice", "[]int", elem=INT)
EMPTY_STRUCT = GoType("struct", "struct {}")


def map_of(name: str, key: GoType, elem: GoType) -> GoType:
    return GoType("map", name, key=key, elem=elem)


def struct(name: str, *fields: GoField) -> GoType:
    return GoType("struct", name, fields=fields)


def pointer_to(elem: GoType) -> GoType:
    return GoType("ptr", "*" + elem.name, elem=elem)


# ------------------------------------------------------------------------------- printing

def spew(value: Any, t: GoType, show_type: bool = True) -> str:
    """go-spew `%#v` of `value` (as `decode` returns it) of Go type `t`."""
    if t.kind == "ptr":
        if value is None:
            return f"({t.name})<nil>" if show_type else "<nil>"
        head = f"(*{t.elem.name})" if show_type else "<*>"
        return head + spew(value, t.elem, show_type=False)
    head = f"({t.name})" if show_type else ""
    if t.kind == "string":
        return head + value
    if t.kind in ("int", "uint"):
        return head + str(value)
    if t.kind == "map":
        if value is None:
            return head + "<nil>"
        keys = sorted(value)
        parts = [f"{spew(k, t.key, False)}:{spew(value[k], t.elem, False)}" for k in keys]
        return head + "map[" + " ".join(parts) + "]"
    if t.kind == "slice":
        if value is None:
            return head + "<nil>"
        return head + "[" + " ".join(spew(v, t.elem, False) for v in value) + "]"
    if t.kind == "struct":
        parts = [f"{f.name}:{spew(value[f.name], f.type, True)}" for f in t.fields]
        return head + "{" + " ".join(parts) + "}"
    raise TypeError(f"unsupported Go kind {t.kind}")


def fnv32a(text: str) -> int:
    """hash/fnv New32a over the UTF-8 bytes of `text`."""
    h = 0x811C9DC5
    for byte in text.encode("utf-8"):
        h = ((h ^ byte) * 0x01000193) & 0xFFFFFFFF
    return h


def checksum(value: Any, t: GoType) -> int:
    """checksum.New(&value) as `VerifyChecksum` calls it: the struct's `Checksum` field set
    to 0, then FNV-32a of spew `%#v` of a pointer to it."""
    if t.kind == "struct" and "Checksum" in value:
        value = {**value, "Checksum": 0}
    return fnv32a(spew(value, pointer_to(t)))


# ------------------------------------------------------------------------------- decoding

def _json_kind(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, (int, float)):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    return "object"


def _refuse(value: Any, t: GoType, where: str) -> GoDecodeError:
    field_part = f" into Go struct field {where}" if where else " into Go value"
    return GoDecodeError(f"json: cannot unmarshal {_json_kind(value)}{field_part} of type {t.name}")


def decode(value: Any, t: GoType, where: str = "") -> Any:
    """Read a parsed JSON value into Go type `t`; None stands for Go's nil. JSON null leaves
    a string or number at its zero value and a map, slice or pointer nil."""
    if value is None:
        return zero(t)
    if t.from_json is not None:
        return t.from_json(value)
    if t.kind == "string":
        if not isinstance(value, str):
            raise _refuse(value, t, where)
        return value
    if t.kind in ("int", "uint"):
        if isinstance(value, bool) or not isinstance(value, (int, float)) or value != int(value):
            raise _refuse(value, t, where)
        number = int(value)
        if t.kind == "uint" and not 0 <= number < 2 ** 64:
            raise GoDecodeError(f"json: cannot unmarshal number {number} into Go struct field {where} of type {t.name}")
        return number
    if t.kind == "ptr":
        return decode(value, t.elem, where)
    if t.kind == "slice":
        if not isinstance(value, list):
            raise _refuse(value, t, where)
        return [decode(v, t.elem, where) for v in value]
    if t.kind == "map":
        if not isinstance(value, dict):
            raise _refuse(value, t, where)
        out = {}
        for k, v in value.items():
            key = str(k)
            if t.key.kind == "int":
                try:
                    key = int(key, 10)
                except ValueError:
                    raise GoDecodeError(f"json: cannot unmarshal number {k} into Go value of type int") from None
            out[key] = decode(v, t.elem, where)
        return out
    if t.kind == "struct":
        if not isinstance(value, dict):
            raise _refuse(value, t, where)
        owner = t.name.split(".")[-1]
        out = {}
        for f in t.fields:
            raw = _lookup(value, f.json)
            if raw is _ABSENT:                 # an absent field keeps its constructed value
                out[f.name] = zero(f.type, f.made)
            else:                              # null makes a map, slice or pointer nil
                out[f.name] = decode(raw, f.type, f"{owner}.{f.json}")
        return out
    raise TypeError(f"unsupported Go kind {t.kind}")


def zero(t: GoType, made: bool = False) -> Any:
    if t.kind == "string":
        return ""
    if t.kind in ("int", "uint"):
        return 0
    if t.kind == "struct":
        return {f.name: zero(f.type, f.made) for f in t.fields}
    if t.kind == "map" and made:
        return {}
    return None


_ABSENT = object()


def _lookup(obj: dict, key: str) -> Any:
    """encoding/json's field match: the exact key, else a case-insensitive one."""
    if key in obj:
        return obj[key]
    folded = key.lower()
    for k, v in obj.items():
        if isinstance(k, str) and k.lower() == folded:
            return v
    return _ABSENT
