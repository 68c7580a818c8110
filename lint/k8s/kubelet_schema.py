"""NG002 for a KubeletConfiguration: does the kubelet manage to decode the file at all?

`kubelet_schema_violations` checks the document against the JSON Schema of
`kubelet.config.k8s.io/v1beta1` (`lint/k8s/kubelet-config.schema.json`, package data, one property
per field of `kubernetes/kubelet` `config/v1beta1/types.go`): wrong types, which make the
kubelet fail to decode the file, and unknown fields, which it ignores. It adds the quantities the kubelet would
refuse to parse (kubeReserved/systemReserved, evictionHard, reservedMemory). jsonschema is slow
to import, so it is imported the first time a KubeletConfiguration is checked.
"""
from __future__ import annotations

import copy
import difflib
import json
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from typing import Any, Iterator

from numaguard.lint.k8s.kubelet import RESERVABLE_RESOURCES, parse_eviction_value
from numaguard.lint.model import Violation
from numaguard.lint.k8s.quantity import parse_quantity

_STRING_MAPS = {"cpuManagerPolicyOptions", "topologyManagerPolicyOptions", "kubeReserved",
                "systemReserved", "evictionHard", "evictionSoft", "evictionSoftGracePeriod",
                "evictionMinimumReclaim", "qosReserved", "defaultPodSysctls"}


@lru_cache(maxsize=1)
def _schema_validator():
    import jsonschema          # slow to import; only when a KubeletConfiguration is linted

    text = resources.files("numaguard.lint.k8s").joinpath("kubelet-config.schema.json").read_text(encoding="utf-8")
    schema = json.loads(text)
    validator_class = jsonschema.validators.validator_for(schema)
    return validator_class(schema)


@dataclass(frozen=True)
class KubeletDecode:
    """What the kubelet makes of a KubeletConfiguration document.

    `fatal` is True when it cannot decode the file at all (a wrong value type: encoding/json
    fails in strict and lenient decoding alike, `failed to decode`). Unknown fields are not
    fatal: strict decoding fails, the kubelet logs "using lenient decoding as strict decoding
    failed" and decodes again without them (`DecodeKubeletConfiguration`,
    pkg/kubelet/kubeletconfig/util/codec/codec.go), so `effective` is the document without the
    unknown fields, what the kubelet then runs with (defaults fill the gaps)."""

    violations: list[Violation]
    fatal: bool
    effective: dict


def decode_kubelet_config(kc: dict) -> KubeletDecode:
    violations = kubelet_schema_violations(kc)
    unknown = [v.path for v in violations
               if (v.remediation or "").startswith(UNKNOWN_FIELD_FIX_PREFIX)]
    fatal = any(v.path not in unknown and _is_type_error(v) for v in violations)
    effective = kc
    if unknown:
        effective = copy.deepcopy(kc)
        for path in sorted(unknown, key=len, reverse=True):
            _delete(effective, path)
    return KubeletDecode(violations, fatal, effective)


def _is_type_error(v: Violation) -> bool:
    return "the kubelet fails to decode the file" in v.message


def _delete(data: Any, path: tuple) -> None:
    for key in path[:-1]:
        try:
            data = data[key]
        except (KeyError, IndexError, TypeError):
            return
    if isinstance(data, dict):
        data.pop(path[-1], None)


def kubelet_schema_violations(kc: dict) -> list[Violation]:
    """NG002 for a KubeletConfiguration: the JSON Schema of v1beta1 (wrong types, unknown fields)
    and quantities that do not parse. An empty list means the NG2xx rules can trust the shapes."""
    validator = _schema_validator()
    violations = []
    for error in sorted(validator.iter_errors(kc), key=lambda e: [str(p) for p in e.absolute_path]):
        path = tuple(error.absolute_path)
        if error.validator == "additionalProperties":
            known = set(error.schema.get("properties", {}))
            for name in sorted((n for n in error.instance if n not in known), key=str):
                violations.append(Violation(path + (name,), _unknown_field_message(path, name),
                                            remediation=_unknown_field_fix(path, name)))
        else:
            violations.append(Violation(path, _schema_message(error)))
    violations.extend(_quantity_violations(kc))
    return violations


def _schema_message(error) -> str:
    path = list(error.absolute_path)
    where = _dotted(path) or "KubeletConfiguration"
    if error.validator == "type":
        expected = error.validator_value
        expected = " or ".join(expected) if isinstance(expected, list) else expected
        hint = ""
        if len(path) == 2 and path[0] in _STRING_MAPS:
            hint = (f"; {path[0]} is a map of strings, quote the value (e.g. "
                    f"\"{str(error.instance).lower() if isinstance(error.instance, bool) else error.instance}\")")
        elif len(path) == 2 and path[0] == "featureGates":
            hint = "; feature gate values are booleans (true/false, unquoted)"
        elif expected == "string" and isinstance(error.instance, (bool, int, float)):
            hint = f"; quote it (e.g. \"{error.instance}\")"
        go_error = ""
        go_type = {"string": "string", "boolean": "bool"}.get(expected)
        if go_type and path and isinstance(path[0], str):
            # encoding/json's UnmarshalTypeError, as the kubelet prints it ("failed to decode")
            go_error = (f" (json: cannot unmarshal {_json_type(error.instance)} into Go struct field "
                        f"KubeletConfiguration.{path[0]} of type {go_type})")
        return (f"{where} must be a {expected}, not {_describe(error.instance)}: the kubelet fails "
                f"to decode the file{go_error}{hint}")
    if error.validator == "required":
        return f"{where}: {error.message}"
    return f"{where}: {error.message}"


def _unknown_field_message(path: tuple, name: Any) -> str:
    close = difflib.get_close_matches(str(name), _top_level_fields(), n=1, cutoff=0.8) if not path else []
    hint = f" (did you mean {close[0]}?)" if close else ""
    if not path:
        return (f"unknown field {name}{hint}: not a KubeletConfiguration v1beta1 field (names are "
                f"case-sensitive); the kubelet logs \"using lenient decoding as strict decoding "
                f"failed\" and ignores it, so the setting has no effect")
    return f"{_dotted(path)}: unknown field {name}"


UNKNOWN_FIELD_FIX_PREFIX = "Rename or delete the field"
UNKNOWN_FIELD_FIX = UNKNOWN_FIELD_FIX_PREFIX + ": the kubelet ignores names it does not know."


def _unknown_field_fix(path: tuple, name: Any) -> str:
    """The fix of an unknown field is about its name (the value's type is not the problem)."""
    close = difflib.get_close_matches(str(name), _top_level_fields(), n=1, cutoff=0.8) if not path else []
    if close:
        return (f"{UNKNOWN_FIELD_FIX_PREFIX}: write `{close[0]}` (KubeletConfiguration field names "
                f"are case-sensitive camelCase), or delete `{name}`; the kubelet ignores names it "
                f"does not know.")
    return UNKNOWN_FIELD_FIX


def _top_level_fields() -> list[str]:
    return sorted(_schema_validator().schema["properties"])


def _dotted(path) -> str:
    out = ""
    for key in path:
        out += f"[{key}]" if isinstance(key, int) else (f".{key}" if out else str(key))
    return out


def _describe(value: Any) -> str:
    if isinstance(value, bool):
        return f"the boolean {str(value).lower()}"
    if isinstance(value, (int, float)):
        return f"the number {value}"
    if isinstance(value, str):
        return f"the string {value!r}"
    if value is None:
        return "null"
    return f"a {'list' if isinstance(value, list) else 'mapping'}"


def _json_type(value: Any) -> str:
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, (int, float)):
        return "number"
    if isinstance(value, str):
        return "string"
    return "array" if isinstance(value, list) else "object"


def _quantity_violations(kc: dict) -> Iterator[Violation]:
    for field in ("kubeReserved", "systemReserved"):
        reserved = kc.get(field)
        for resource, value in (reserved.items() if isinstance(reserved, dict) else ()):
            path = (field, resource)
            if resource not in RESERVABLE_RESOURCES:
                yield Violation(path, f"{field}.{resource}: the kubelet refuses to start: cannot "
                                      f"reserve \"{resource}\" resource (only "
                                      f"{', '.join(RESERVABLE_RESOURCES)})")
                continue
            if not isinstance(value, str):
                continue                                      # reported by the schema
            try:
                if parse_quantity(value, trim=False) < 0:     # map[string]string: as written
                    raise ValueError("negative")
            except ValueError:
                yield Violation(path, f"{field}.{resource}: {value!r} is not a quantity the kubelet "
                                      f"accepts (e.g. \"500m\", \"1\", \"2Gi\")")
    eviction = kc.get("evictionHard")
    for signal, value in (eviction.items() if isinstance(eviction, dict) else ()):
        if not isinstance(value, str):
            continue
        try:
            parse_eviction_value(value)
        except ValueError as e:
            # in range but not more than zero, or out of range: the kubelet's own words
            said = f"{e}: the kubelet refuses to start" if str(e).startswith("eviction") else \
                f"{value!r} is neither a quantity (\"100Mi\") nor a percentage (\"5%\")"
            yield Violation(("evictionHard", signal), f"evictionHard.{signal}: {said}")
    entries = kc.get("reservedMemory")
    for i, entry in enumerate(entries if isinstance(entries, list) else []):
        limits = entry.get("limits") if isinstance(entry, dict) else None
        for resource, value in (limits.items() if isinstance(limits, dict) else ()):
            if isinstance(value, bool) or not isinstance(value, (str, int, float)):
                continue
            try:
                parse_quantity(value)
            except ValueError:
                yield Violation(("reservedMemory", i, "limits", resource),
                                f"reservedMemory[{i}].limits.{resource}: {value!r} is not a quantity "
                                f"(e.g. \"1Gi\")")
