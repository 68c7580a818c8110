"""The API server's CEL, as far as numaguard's admission policy uses it, on cel-expr-python.

cel-expr-python is the CEL C++ runtime (cel-spec semantics: a missing key is an error that
`&&`, `||` and the macros absorb as cel-go does); Kubernetes adds its own libraries to cel-go
(k8s.io/apiserver/pkg/cel/environment/base.go). This module declares the ones the policy
calls, each implemented from its Go source:

* the Quantity library, k8s.io/apiserver/pkg/cel/library/quantity.go: `quantity`, `isQuantity`,
  and on a Quantity `isInteger`, `asInteger`, `asApproximateFloat`, `compareTo`, `isLessThan`,
  `isGreaterThan`, `add`, `sub`, `sign`. The values are apimachinery's `resource.Quantity`:
  the text is read by `numaguard.lint.k8s.quantity` (a transcription of ParseQuantity checked
  against upstream's quantity_test.go vectors) and, because `isInteger` and `asInteger` answer
  from the representation ParseQuantity chose (`Quantity.AsInt64`: an int64Amount at scale >= 0
  converts, a negative scale or an inf.Dec never does, so `quantity("2000m").isInteger()` is
  false), `_fast_path` mirrors ParseQuantity's choice between the two;
* the lists library, k8s.io/apiserver/pkg/cel/library/lists.go: `sum`, `max`, `min`;
* cel-go's strings extension (ext.Strings version 2) and optional types, which cel-expr-python
  ships (`join`, `split`, `trim`, `upperAscii`, `replace`, `.?` and `orValue`).

A Quantity is a protobuf message `kubernetes.Quantity {string text}`, a type of its own as
apiservercel.QuantityType is, so calling a Quantity function on a string fails to compile here
as it does in the API server.
"""
from __future__ import annotations

import math
import re
from decimal import Decimal
from functools import lru_cache
from typing import Any

from cel_expr_python import cel
from cel_expr_python.ext import ext_optional, ext_strings
from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

from numaguard.lint.k8s.quantity import MAX_INT64, QuantityError, parse_quantity


def _quantity_message():
    fdp = descriptor_pb2.FileDescriptorProto(name="numaguard_test_quantity.proto", package="kubernetes",
                                             syntax="proto3")
    message = fdp.message_type.add(name="Quantity")
    message.field.add(name="text", number=1, type=descriptor_pb2.FieldDescriptorProto.TYPE_STRING,
                      label=descriptor_pb2.FieldDescriptorProto.LABEL_OPTIONAL)
    pool = descriptor_pool.DescriptorPool()
    pool.Add(fdp)
    return pool, message_factory.GetMessageClass(pool.FindMessageTypeByName("kubernetes.Quantity"))


POOL, Quantity = _quantity_message()
QUANTITY = cel.Type("kubernetes.Quantity")

# quantity.go parseQuantityString: sign, digits (leading zeros dropped), ".", digits, suffix.
_PARTS = re.compile(r"^([+-]?)0*([0-9]*)(?:\.([0-9]*))?(.*)$")
_DECIMAL_SUFFIX = {"": 0, "n": -9, "u": -6, "m": -3, "k": 3, "M": 6, "G": 9, "T": 12, "P": 15, "E": 18}
_BINARY_SUFFIX = {"Ki": 10, "Mi": 20, "Gi": 30, "Ti": 40, "Pi": 50, "Ei": 60}


@lru_cache(maxsize=None)
def value_of(text: str) -> Decimal:
    """resource.ParseQuantity's value; ValueError when it refuses the text. ParseQuantity keeps
    decimal values beyond int64 (numaguard's reader refuses them as unusable): those are read
    here from their digits and exponent."""
    try:
        return parse_quantity(text, trim=False)
    except QuantityError as e:
        if "larger than Kubernetes can use" not in str(e):
            raise
        sign, num, denom, suffix = _PARTS.match(text).groups()
        exponent = _DECIMAL_SUFFIX[suffix] if suffix in _DECIMAL_SUFFIX else int(suffix[1:])
        value = Decimal(f"{num or 0}.{denom or 0}") * Decimal(10) ** exponent
        return -value if sign == "-" else value


def _fast_path(text: str) -> tuple[int, int] | None:
    """The int64Amount (value, scale) ParseQuantity stores, or None when it stores an inf.Dec
    (quantity.go ParseQuantity: the `precision >= 0` branch, int64Multiply without overflow)."""
    sign, num, denom, suffix = _PARTS.match(text).groups()
    num, denom = num or "0", denom or ""
    if suffix in _BINARY_SUFFIX:
        exponent = _BINARY_SUFFIX[suffix]
        if denom:
            return None
        precision = 15 - len(num) - int(exponent * 3 / 10) - 1
        mantissa, scale = 2 ** exponent, 0
    else:
        exponent = _DECIMAL_SUFFIX[suffix] if suffix in _DECIMAL_SUFFIX else int(suffix[1:])
        precision = 18 - (len(num) + len(denom))
        mantissa, scale = 1, exponent
    if precision < 0:
        return None
    scale -= len(denom)
    if scale < -9:
        return None
    value = int(num + denom) * mantissa
    if value > MAX_INT64:
        return None
    return (-value if sign == "-" else value), scale


def _as_int64(text: str) -> int | None:
    """Quantity.AsInt64 (amount.go int64Amount.AsInt64, positiveScaleInt64)."""
    fast = _fast_path(text)
    if fast is None:
        return None
    value, scale = fast
    if scale < 0:
        return None
    result = value * 10 ** scale
    return result if -MAX_INT64 - 1 <= result <= MAX_INT64 else None


def _quantity(text: str):
    value_of(text)                      # raises: CEL error "quantities must match..."
    return Quantity(text=text)


def _is_quantity(text: str) -> bool:
    try:
        value_of(text)
        return True
    except ValueError:
        return False


def _as_integer(q) -> int:
    value = _as_int64(q.text)
    if value is None:
        raise ValueError("cannot convert value to integer")
    return value


def _as_float(q) -> float:
    """Quantity.AsApproximateFloat64: the unscaled value times 10^scale (+/-Inf beyond)."""
    fast = _fast_path(q.text)
    if fast is not None:
        value, scale = fast
        return float(value) if scale == 0 else float(value) * math.pow(10, scale)
    try:
        return float(value_of(q.text))
    except OverflowError:
        return math.inf


def _compare(a, b) -> int:
    x, y = value_of(a.text), value_of(b.text)
    return (x > y) - (x < y)


def _arith(q, other, sign: int):
    """Quantity.Add / Sub (a copy); an int operand is resource.NewQuantity(n, DecimalExponent)."""
    amount = value_of(other.text) if isinstance(other, Quantity) else Decimal(other)
    result = value_of(q.text) + sign * amount
    return Quantity(text=format(result, "f"))


def _list_sum(items: list) -> Any:
    """lists.go sum: the int overload's zero for an empty list."""
    return sum(items, 0)


def _extreme(pick):
    def impl(items: list) -> Any:
        if not items:
            raise ValueError(f"{pick.__name__} called on empty list")
        return pick(items)
    return impl


def _decl(name: str, *overloads: tuple) -> cel.FunctionDecl:
    return cel.FunctionDecl(name, [cel.Overload(oid, ret, params, is_member=member, impl=impl)
                                   for oid, ret, params, member, impl in overloads])


S, B, I, D, L = cel.Type.STRING, cel.Type.BOOL, cel.Type.INT, cel.Type.DOUBLE, cel.Type.List(cel.Type.DYN)
FUNCTIONS = [
    _decl("quantity", ("string_to_quantity", QUANTITY, [S], False, _quantity)),
    _decl("isQuantity", ("is_quantity_string", B, [S], False, _is_quantity)),
    _decl("sign", ("quantity_sign", I, [QUANTITY], False, lambda q: (value_of(q.text) > 0) - (value_of(q.text) < 0))),
    _decl("isInteger", ("quantity_is_integer", B, [QUANTITY], True, lambda q: _as_int64(q.text) is not None)),
    _decl("asInteger", ("quantity_get_int", I, [QUANTITY], True, _as_integer)),
    _decl("asApproximateFloat", ("quantity_get_float", D, [QUANTITY], True, _as_float)),
    _decl("compareTo", ("quantity_compare_to", I, [QUANTITY, QUANTITY], True, _compare)),
    _decl("isLessThan", ("quantity_is_less_than", B, [QUANTITY, QUANTITY], True, lambda a, b: _compare(a, b) < 0)),
    _decl("isGreaterThan", ("quantity_is_greater_than", B, [QUANTITY, QUANTITY], True, lambda a, b: _compare(a, b) > 0)),
    _decl("add", ("quantity_add", QUANTITY, [QUANTITY, QUANTITY], True, lambda a, b: _arith(a, b, 1)),
          ("quantity_add_int", QUANTITY, [QUANTITY, I], True, lambda a, b: _arith(a, b, 1))),
    _decl("sub", ("quantity_sub", QUANTITY, [QUANTITY, QUANTITY], True, lambda a, b: _arith(a, b, -1)),
          ("quantity_sub_int", QUANTITY, [QUANTITY, I], True, lambda a, b: _arith(a, b, -1))),
    _decl("sum", ("list_sum", cel.Type.DYN, [L], True, _list_sum)),
    _decl("max", ("list_max", cel.Type.DYN, [L], True, _extreme(max))),
    _decl("min", ("list_min", cel.Type.DYN, [L], True, _extreme(min))),
]


def environment(*names: str) -> cel.Env:
    """An environment with the admission variables (`object`, `oldObject`, `request`) and the
    given further ones (`variables`), all dyn as the API server declares `object`
    (k8s.io/apiserver/pkg/admission/plugin/cel/compile.go)."""
    declared = {name: cel.Type.DYN for name in ("object", "oldObject", "request", *names)}
    return cel.NewEnv(descriptor_pool=POOL, variables=declared, functions=FUNCTIONS,
                      extensions=[ext_optional.ExtOptional(), ext_strings.ExtStrings(2)])
