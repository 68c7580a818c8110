"""A ValidatingAdmissionPolicy evaluated as the API server evaluates it, on cel-expr-python.

k8s.io/apiserver/pkg/admission/plugin/policy/validating: the matchConditions first (all must
be true, else the policy does not apply: matcher.go), then each validation; a false validation
is a failure whose message is its messageExpression's string (validator.go). Variables are
evaluated here in order, every one, where the API server evaluates each on first use
(plugin/cel/composition.go): stricter, since an error in any variable fails the evaluation
here. Any CEL error fails: the policy is written never to error.
"""
from __future__ import annotations

import ctypes
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

from cel_expr_python import cel

from numaguard.lint.objects import api_group

from .kube_cel import environment

ENV = environment("variables")


@lru_cache(maxsize=None)
def compiled(expression: str):
    return ENV.compile(expression)


class CelError(AssertionError):
    pass


# cel-expr-python 0.1.3 releases one reference to None too many for each null it converts to
# Python (Value.plain_value) and for a top-level None it is given: enough of them free None
# itself and abort the interpreter. Each null handed back gets its reference back here, and no
# top-level None is passed in (an absent oldObject is left out: the policy reads it only on
# UPDATE).
_incref = ctypes.pythonapi.Py_IncRef
_incref.argtypes = [ctypes.py_object]


def _nulls(value: Any) -> int:
    if value is None:
        return 1
    if isinstance(value, list):
        return sum(map(_nulls, value))
    if isinstance(value, dict):
        return sum(_nulls(k) + _nulls(v) for k, v in value.items())
    return 0


def _plain(value) -> Any:
    if value.type() == cel.Type.ERROR:
        raise CelError(str(value))
    plain = value.plain_value()
    for _ in range(_nulls(plain)):
        _incref(None)
    return plain


def request_for(obj: dict, operation: str = "CREATE") -> dict:
    version = str(obj.get("apiVersion") or "").rpartition("/")[2]
    return {"kind": {"group": api_group(obj.get("apiVersion")), "version": version, "kind": obj.get("kind")},
            "operation": operation, "namespace": "default", "name": "x",
            "userInfo": {"username": "admin"}}


@dataclass
class Outcome:
    applies: bool
    failures: list[tuple[int, str]] = field(default_factory=list)     # (validation index, message)
    variables: dict[str, Any] = field(default_factory=dict)


def evaluate(policy: dict, obj: dict, *, old: dict | None = None, operation: str = "CREATE") -> Outcome:
    spec = policy["spec"]
    data = {"object": obj, "request": request_for(obj, operation)}
    if old is not None:
        data["oldObject"] = old
    for condition in spec.get("matchConditions", []):
        result = _plain(compiled(condition["expression"]).eval(data=data))
        assert isinstance(result, bool), condition["name"]
        if not result:
            return Outcome(False)
    variables: dict[str, Any] = {}
    for variable in spec.get("variables", []):
        try:
            variables[variable["name"]] = _plain(compiled(variable["expression"]).eval(data={**data, "variables": variables}))
        except CelError as e:
            raise CelError(f"variables.{variable['name']}: {e}") from None
    outcome = Outcome(True, variables=variables)
    for i, validation in enumerate(spec["validations"]):
        scope = {**data, "variables": variables}
        passed = _plain(compiled(validation["expression"]).eval(data=scope))
        assert isinstance(passed, bool)
        if not passed:
            message = _plain(compiled(validation["messageExpression"]).eval(data=scope))
            assert isinstance(message, str) and "\n" not in message and len(message) <= 5 * 1024
            outcome.failures.append((i, message))
    return outcome
