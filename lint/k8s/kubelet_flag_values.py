"""How the kubelet reads the value of one command-line flag, by the flag's value syntax.

Each syntax is the pflag.Value the kubelet registers for the flag, read in
kubernetes/component-base `cli/flag/` (map_string_string.go, map_string_bool.go,
langle_separated_map_string_string.go, colon_separated_multimap_string_string.go,
configuration_map.go), kubernetes/kubernetes `pkg/util/flag/flags.go` (IPVar,
ReservedMemoryVar, RegisterWithTaintsVar) and spf13/pflag (bool, int32, int64, duration,
stringSlice). A parser returns the value as it lands in the KubeletConfiguration (JSON form),
or raises `FlagValueError` with the error text pflag wraps into
`invalid argument "<value>" for "--<flag>" flag: <text>`.

What happens when a flag is repeated is the Value's own business too (`Syntax.accumulates`):
scalars keep the last value; the map kinds clear whatever the configuration held at the first
`Set` and add the pairs of every later one; slices and `--reserved-memory` replace at the first
`Set` and append afterwards.
"""
from __future__ import annotations

import csv
import ipaddress
import re
from dataclasses import dataclass
from typing import Any, Callable

from numaguard.lint.k8s.kubelet import parse_go_bool
from numaguard.lint.k8s.quantity import parse_quantity


class FlagValueError(ValueError):
    """The error text pflag reports for a value the flag's Value refuses."""


@dataclass(frozen=True)
class Syntax:
    """A flag value syntax: its name in lint/README.md's flag table, how one `Set` reads a value, and
    whether repeated flags add up (maps, slices) or the last one wins (scalars)."""

    name: str
    example: str
    parse: Callable[[str], Any]
    accumulates: bool = False
    bare_value: str | None = None     # what a bare `--flag` (no `=value`) means; None: needs one


# --------------------------------------------------------------------------------- scalars

def _string(text: str) -> str:
    return text


def _bool(text: str) -> bool:
    try:
        return parse_go_bool(text)
    except ValueError as err:
        raise FlagValueError(str(err)) from None


# Go integer literal syntax (strconv.ParseInt with base 0): base prefixes, a leading 0 for
# octal, and underscores only between digits or after a prefix.
_GO_INT = re.compile(r"^(0[xX]_?[0-9a-fA-F]+(_[0-9a-fA-F]+)*|0[oO]_?[0-7]+(_[0-7]+)*"
                     r"|0[bB]_?[01]+(_[01]+)*|0_?[0-7]+(_[0-7]+)*|[1-9][0-9]*(_[0-9]+)*|0)$")


def _go_int(text: str, bits: int) -> int:
    """strconv.ParseInt(text, 0, bits), with Go's error texts."""
    body = text[1:] if text[:1] in "+-" else text
    if not _GO_INT.match(body):
        raise FlagValueError(f'strconv.ParseInt: parsing "{text}": invalid syntax')
    digits = body.replace("_", "")
    if digits[:2].lower() in ("0x", "0o", "0b"):
        value = int(digits, 0)
    else:
        value = int(digits, 8) if digits.startswith("0") else int(digits)
    value = -value if text.startswith("-") else value
    if not -(2 ** (bits - 1)) <= value < 2 ** (bits - 1):
        raise FlagValueError(f'strconv.ParseInt: parsing "{text}": value out of range')
    return value


def _uint32(text: str) -> int:
    if not text.isascii() or not text.isdigit():
        raise FlagValueError(f'strconv.ParseUint: parsing "{text}": invalid syntax')
    if int(text) >= 2 ** 32:
        raise FlagValueError(f'strconv.ParseUint: parsing "{text}": value out of range')
    return int(text)


_DURATION_UNITS = frozenset({"ns", "us", "µs", "μs", "ms", "s", "m", "h"})
_DURATION_NUMBER = re.compile(r"[0-9]*(\.[0-9]*)?")


def _duration(text: str) -> str:
    """time.ParseDuration: "300ms", "-1.5h", "2h45m"; "0" needs no unit. The configuration
    keeps the text (metav1.Duration marshals back to the same duration)."""
    body = text[1:] if text[:1] in "+-" else text
    if body == "0":
        return text
    if not body:
        raise FlagValueError(f'time: invalid duration "{text}"')
    position = 0
    while position < len(body):
        number = _DURATION_NUMBER.match(body, position).group(0)
        if not any(c.isdigit() for c in number):
            raise FlagValueError(f'time: invalid duration "{text}"')
        position += len(number)
        end = position
        while end < len(body) and body[end] not in "0123456789.":
            end += 1
        unit = body[position:end]
        if not unit:
            raise FlagValueError(f'time: missing unit in duration "{text}"')
        if unit not in _DURATION_UNITS:
            raise FlagValueError(f'time: unknown unit "{unit}" in duration "{text}"')
        position = end
    return text


def _ip(text: str) -> str:
    """IPVar: netutils.ParseIPSloppy, which also takes IPv4 octets with leading zeros."""
    candidate = text
    if "." in text and ":" not in text:
        parts = text.split(".")
        if len(parts) == 4 and all(p.isdigit() and p for p in parts):
            candidate = ".".join(str(int(p)) for p in parts)
    try:
        ipaddress.ip_address(candidate)
    except ValueError:
        raise FlagValueError(f'"{text}" is not a valid IP address') from None
    return text


def _quantity(text: str) -> str:
    try:
        parse_quantity(text)
    except ValueError:
        raise FlagValueError("quantities must match the regular expression "
                             "'^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'") from None
    return text


# ------------------------------------------------------------------------------ collections

def _string_slice(text: str) -> list[str]:
    """pflag's stringSlice: comma-separated, read as one CSV record (quotes allowed)."""
    if text == "":
        return []
    try:
        return next(csv.reader([text], strict=True))
    except csv.Error as err:
        raise FlagValueError(f"parse error on line 1: {err}") from None


def _pairs(text: str, separator: str, expected: str) -> dict[str, str]:
    out: dict[str, str] = {}
    for part in text.split(","):
        if not part:
            continue
        key, sep, value = part.partition(separator)
        if not sep:
            raise FlagValueError(f"malformed pair, expect string{expected}string")
        out[key.strip()] = value.strip()
    return out


def _map(text: str) -> dict[str, str]:
    """MapStringString: `k=v,k2=v2` (keys and values trimmed)."""
    return _pairs(text, "=", "=")


def _map_no_split(text: str) -> dict[str, str]:
    """MapStringString with NoSplit (the policy-option flags): ONE `k=v` per flag, the value
    keeps its commas, so `--cpu-manager-policy-options=a=true,b=true` sets option `a` to
    "true,b=true"; repeat the flag for a second option."""
    key, sep, value = text.partition("=")
    if not sep:
        raise FlagValueError("malformed pair, expect string=string")
    return {key.strip(): value.strip()}


def _langle_map(text: str) -> dict[str, str]:
    """LangleSeparatedMapStringString (the eviction thresholds): `memory.available<1Gi,...`."""
    return _pairs(text, "<", "<")


def _map_bool(text: str) -> dict[str, bool]:
    """MapStringBool (`--feature-gates=A=true,B=false`): values through strconv.ParseBool."""
    out: dict[str, bool] = {}
    for part in text.split(","):
        if not part:
            continue
        key, sep, value = part.partition("=")
        if not sep:
            raise FlagValueError("malformed pair, expect string=bool")
        key, value = key.strip(), value.strip()
        try:
            out[key] = parse_go_bool(value)
        except ValueError as err:
            raise FlagValueError(f"invalid value of {key}: {value}, err: {err}") from None
    return out


def _configuration_map(text: str) -> dict[str, str]:
    """ConfigurationMap (`--node-labels`): `k=v` pairs, a bare key gets "" (never an error)."""
    out = {}
    for part in text.split(","):
        if part:
            key, _, value = part.partition("=")
            out[key.strip()] = value.strip()
    return out


def _colon_multimap(text: str) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for part in text.split(","):
        if not part:
            continue
        key, sep, value = part.partition(":")
        if not sep:
            raise FlagValueError("malformed pair, expect string:string")
        out.setdefault(key.strip(), []).append(value.strip())
    return out


_RESERVED_MEMORY_FORMAT = "expected numaNodeID:type=quantity[,type=quantity...]"


def _reserved_memory(text: str) -> list[dict]:
    """ReservedMemoryVar: `0:memory=1Gi,hugepages-1Gi=2Gi`, NUMA nodes separated by `;`
    (kubernetes#106840) or given in repeated flags. The errors keep the kubelet's spelling."""
    entries = []
    for reservation in text.split(";"):
        node_text, *rest = reservation.split(":")
        if len(rest) != 1:
            raise FlagValueError(f"the reserved memory has incorrect format, {_RESERVED_MEMORY_FORMAT}, "
                                 f"got {reservation}")
        body = node_text[1:] if node_text[:1] in "+-" else node_text
        if not (body.isascii() and body.isdigit()):
            raise FlagValueError(f"failed to convert the NUMA node ID, exptected integer, got {node_text}")
        limits = {}
        for limit in rest[0].split(","):
            parts = limit.split("=")
            if len(parts) != 2:
                raise FlagValueError(f"the reserved limit has incorrect value, expected type=quantatity, "
                                     f"got {limit}")
            resource, amount = parts
            if resource != "memory" and not resource.startswith("hugepages-"):
                raise FlagValueError(f'memory type conversion error, unknown type: "{resource}"')
            try:
                parse_quantity(amount)
            except ValueError:
                raise FlagValueError(f"failed to parse the quantatity, expected quantatity, "
                                     f"got {amount}") from None
            limits[resource] = amount
        entries.append({"numaNode": int(node_text), "limits": limits})
    return entries


_TAINT_EFFECTS = ("NoSchedule", "PreferNoSchedule", "NoExecute")


def _taints(text: str) -> list[dict]:
    """RegisterWithTaintsVar: `key=value:Effect,...` (taints.ParseTaints)."""
    out = []
    for spec in text.split(","):
        if not spec:
            continue
        key_value, sep, effect = spec.rpartition(":")
        if not sep or effect not in _TAINT_EFFECTS:
            raise FlagValueError(f"invalid taint spec: {spec}")
        key, _, value = key_value.partition("=")
        if not key:
            raise FlagValueError(f"invalid taint spec: {spec}")
        out.append({"key": key, **({"value": value} if value else {}), "effect": effect})
    return out


def _vmodule(text: str) -> str:
    for part in text.split(","):
        pattern, sep, level = part.partition("=")
        if part and (not sep or not pattern or not level.isdigit()):
            raise FlagValueError(f"invalid format, expect comma-separated list of pattern=N: {text}")
    return text


STRING = Syntax("string", "static", _string)
BOOL = Syntax("bool", "true (a bare --flag means true)", _bool, bare_value="true")
INT32 = Syntax("int32", "110", lambda text: _go_int(text, 32))
INT64 = Syntax("int64", "1000000", lambda text: _go_int(text, 64))
UINT32 = Syntax("uint32", "4", _uint32)
DURATION = Syntax("duration", "10s, 1m30s", _duration)
IP = Syntax("ip", "127.0.0.1", _ip)
QUANTITY = Syntax("quantity", "64Ki", _quantity)
STRING_SLICE = Syntax("list", "pods,system-reserved", _string_slice, accumulates=True)
MAP = Syntax("map", "cpu=1,memory=2Gi", _map, accumulates=True)
MAP_ONE = Syntax("map, one pair per flag", "full-pcpus-only=true", _map_no_split, accumulates=True)
LANGLE_MAP = Syntax("map with <", "memory.available<500Mi,nodefs.available<10%", _langle_map,
                    accumulates=True)
GATES = Syntax("map of booleans", "PodLevelResourceManagers=true,CPUManagerPolicyAlphaOptions=false",
               _map_bool, accumulates=True)
LABELS = Syntax("labels", "role=numa,zone=a", _configuration_map, accumulates=True)
HEADERS = Syntax("map of lists with :", "a:hello,b:world", _colon_multimap, accumulates=True)
RESERVED_MEMORY = Syntax("reserved memory", "0:memory=1Gi,hugepages-1Gi=2Gi;1:memory=1Gi",
                         _reserved_memory, accumulates=True)
TAINTS = Syntax("taints", "dedicated=numa:NoSchedule", _taints, accumulates=True)
VMODULE = Syntax("vmodule", "server=4,kubelet*=2", _vmodule)

__all__ = ["Syntax", "FlagValueError", "STRING", "BOOL", "INT32", "INT64", "UINT32", "DURATION",
           "IP", "QUANTITY", "STRING_SLICE", "MAP", "MAP_ONE", "LANGLE_MAP", "GATES", "LABELS",
           "HEADERS", "RESERVED_MEMORY", "TAINTS", "VMODULE"]
