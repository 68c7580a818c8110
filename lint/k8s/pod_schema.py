"""NG002 for a pod spec: the hand-written type checks that run before any other pod rule.

The API server rejects a pod whose fields have the wrong types before anything else looks at
it; `pod_schema_violations` reports those errors for the fields numaguard reads (container
lists and containers, resource requirements and quantities, the scheduling fields). It is
deliberately hand-written rather than a JSON Schema: it runs for every pod and must stay cheap.
When it returns nothing, the model in `numaguard.lint.k8s.resources` and `numaguard.lint.k8s.pod_budget` can trust the
spec's shape. Also importable from `numaguard.lint.k8s.resources`.
"""
from __future__ import annotations

from typing import Any

from numaguard.lint.model import Path, Violation, value_kind
from numaguard.lint.k8s.quantity import MAX_INT64, parse_quantity

_CONTAINER_LISTS = ("containers", "initContainers", "ephemeralContainers")
_STRING_FIELDS = ("name", "image", "restartPolicy", "imagePullPolicy")
_STRING_LIST_FIELDS = ("command", "args")


def pod_schema_violations(spec: Any) -> list[Violation]:
    """NG002 for a pod spec: the type errors the API server would reject before anything else.

    Hand-written and cheap (it runs for every pod): container lists and containers, resource
    requirements and quantities (parse, non-negative, not absurd), and the scheduling fields
    the pod rules read (nodeSelector, tolerations, affinity, os). Paths are relative to the
    pod spec. An empty list means the other pod rules can trust the spec's shape.
    """
    if not isinstance(spec, dict):
        return [Violation((), f"the pod spec must be a mapping, found {_type_name(spec)}")]
    out: list[Violation] = []
    if spec.get("containers") is None:
        out.append(Violation((), "spec.containers is required (a pod needs at least one container)"))
    for key in _CONTAINER_LISTS:
        containers = spec.get(key)
        if containers is None:
            continue
        if not isinstance(containers, list):
            out.append(Violation((key,), f"{key} must be a list of containers, found "
                                         f"{_type_name(containers)}"))
            continue
        for i, c in enumerate(containers):
            _check_container(c, (key, i), out)
    _check_requirements(spec.get("resources"), ("resources",), out, None)
    selector = spec.get("nodeSelector")
    if selector is not None and not isinstance(selector, dict):
        out.append(Violation(("nodeSelector",), f"nodeSelector must be a mapping of label names "
                                                f"to values, found {_type_name(selector)}"))
    elif selector is not None:
        for key, value in selector.items():
            if not isinstance(value, str):
                out.append(Violation(("nodeSelector", key), _unquoted_label(key, value)))
    tolerations = spec.get("tolerations")
    if tolerations is not None:
        if not isinstance(tolerations, list):
            out.append(Violation(("tolerations",), "tolerations must be a list"))
        else:
            for i, t in enumerate(tolerations):
                if not isinstance(t, dict):
                    out.append(Violation(("tolerations", i), "a toleration must be a mapping"))
                    continue
                for key in ("key", "operator", "value", "effect"):
                    v = t.get(key)
                    if v is not None and not isinstance(v, str):
                        out.append(Violation(("tolerations", i, key),
                                             f"toleration {key} must be a string, found "
                                             f"{_type_name(v)} (quote it)"))
    affinity = spec.get("affinity")
    if affinity is not None and not isinstance(affinity, dict):
        out.append(Violation(("affinity",), "affinity must be a mapping"))
    os_ = spec.get("os")
    if os_ is not None and (not isinstance(os_, dict) or not isinstance(os_.get("name", ""), str)):
        out.append(Violation(("os",), "os must be a mapping with a string name (linux or windows)"))
    return out


def _check_container(c: Any, path: Path, out: list[Violation]) -> None:
    if not isinstance(c, dict):
        out.append(Violation(path, f"{'.'.join(map(str, path))} must be a mapping (a container), "
                                   f"found {_type_name(c)}"))
        return
    name = c.get("name")
    label = name if isinstance(name, str) else None
    for key in _STRING_FIELDS:
        v = c.get(key)
        if v is not None and not isinstance(v, str):
            out.append(Violation((*path, key), f"{key} must be a string, found {_type_name(v)}",
                                 label))
    for key in _STRING_LIST_FIELDS:
        v = c.get(key)
        if v is not None and (not isinstance(v, list) or not all(isinstance(x, str) for x in v)):
            out.append(Violation((*path, key), f"{key} must be a list of strings", label))
    _check_requirements(c.get("resources"), (*path, "resources"), out, label)
    resize = c.get("resizePolicy")
    if resize is not None and (not isinstance(resize, list)
                               or not all(isinstance(x, dict) for x in resize)):
        out.append(Violation((*path, "resizePolicy"), "resizePolicy must be a list of mappings",
                             label))


def _check_requirements(raw: Any, path: Path, out: list[Violation], container: str | None) -> None:
    if raw is None:
        return
    if not isinstance(raw, dict):
        out.append(Violation(path, f"{'.'.join(map(str, path))} must be a mapping with requests "
                                   f"and limits, found {_type_name(raw)}", container))
        return
    _check_resource_list(raw.get("requests"), (*path, "requests"), out, container)
    _check_resource_list(raw.get("limits"), (*path, "limits"), out, container)
    claims = raw.get("claims")
    if claims is not None and not isinstance(claims, list):
        out.append(Violation((*path, "claims"), "resources.claims must be a list", container))


def _check_resource_list(raw: Any, path: Path, out: list[Violation], container: str | None) -> None:
    if raw is None:
        return
    if not isinstance(raw, dict):
        out.append(Violation(path, f"{'.'.join(map(str, path))} must be a mapping of resource "
                                   f"names to quantities, found {_type_name(raw)}", container))
        return
    for name, value in raw.items():
        if not isinstance(name, str):
            out.append(Violation(path, f"resource name {name!r} must be a string", container))
            continue
        try:
            q = parse_quantity(value)
        except ValueError as e:
            where = (*path, name)
            out.append(Violation(where, f"{'.'.join(map(str, where))}: {e}", container))
            continue
        if q < 0:
            where = (*path, name)
            out.append(Violation(where, f"{'.'.join(map(str, where))}: {value!r} must be "
                                        "non-negative", container))
        elif name == "cpu" and q * 1000 > MAX_INT64:
            # the scheduler and the kubelet read CPU in millicores (Quantity.MilliValue())
            where = (*path, name)
            out.append(Violation(where, f"{'.'.join(map(str, where))}: {value!r} is larger than "
                                        f"Kubernetes can use for CPU: the scheduler and the kubelet "
                                        f"read CPU as millicores in a 64-bit integer "
                                        f"(Quantity.MilliValue()), which cannot hold more than "
                                        f"{MAX_INT64}m", container))


def _unquoted_label(key: Any, value: Any) -> str:
    """The API server decodes nodeSelector into map[string]string: an unquoted `true`, `yes`,
    `on`, `y` or `1` reaches it as a JSON boolean or number and the pod is refused ("json:
    cannot unmarshal bool into Go struct field PodSpec.nodeSelector of type string")."""
    if isinstance(value, bool):
        words = "true, yes, on, y" if value else "false, no, off, n"
        what = f"a boolean (YAML reads unquoted {words} so)"
        example = f'"{str(value).lower()}"'
    elif isinstance(value, (int, float)):
        what = "a number"
        example = f'"{value}"'
    else:
        what, example = _type_name(value), '"..."'
    return (f"nodeSelector {key}: the value is {what}, and the API server refuses it (label "
            f"values are strings); quote the value you mean, e.g. {key}: {example}")


def _type_name(value: Any) -> str:
    if value is None:
        return "null"
    return "a number" if isinstance(value, (int, float)) and not isinstance(value, bool) \
        else value_kind(value)
