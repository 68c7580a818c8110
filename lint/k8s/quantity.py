"""Kubernetes resource quantities, parsed by the `kubernetes` client's own parser.

`kubernetes.utils.quantity.parse_quantity` is the parser; we load that one module straight from
the installed `kubernetes` distribution because `import kubernetes` first imports the whole API
client (about 0.1 s), which would dominate `numaguard lint one-pod.yaml`.

The client's parser is laxer than the API server (Python's Decimal accepts "1_000", " 1",
"NaN", "Infinity"), so a value must first match the grammar of
`k8s.io/apimachinery/pkg/api/resource/quantity.go` (ParseQuantity):
`<signedNumber><suffix>` where suffix is a binary SI (Ki..Ei), decimal SI (n u m "" k M G T P E)
or decimal exponent (e/E followed by a signed integer).
"""
from __future__ import annotations

import importlib.util
import re
import sys
from decimal import Decimal
from functools import lru_cache
from types import ModuleType

_GRAMMAR = re.compile(r"^[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)"
                      r"(?:Ki|Mi|Gi|Ti|Pi|Ei|[numkMGTPE]|[eE][+-]?[0-9]+)?$")

# quantity.go: the largest quantity the API accepts round-trips through int64 milli-units for
# CPU; we bound absurd values well above any real machine instead (2^63 of anything).
MAX_QUANTITY = Decimal(2) ** 63


def _load_parser_module() -> ModuleType:
    name = "kubernetes.utils.quantity"
    if name in sys.modules:                      # someone already imported the client
        return sys.modules[name]
    spec = importlib.util.find_spec("kubernetes")
    if spec is None or not spec.submodule_search_locations:
        raise ImportError("the 'kubernetes' package is required (pip install kubernetes)")
    path = f"{list(spec.submodule_search_locations)[0]}/utils/quantity.py"
    mod_spec = importlib.util.spec_from_file_location("_numaguard_k8s_quantity", path)
    module = importlib.util.module_from_spec(mod_spec)
    mod_spec.loader.exec_module(module)
    return module


_parse = _load_parser_module().parse_quantity


class QuantityError(ValueError):
    pass


@lru_cache(maxsize=4096)
def _parse_text(text: str) -> Decimal:
    if len(text) > 64 or not _GRAMMAR.match(text):
        raise QuantityError(f"{text!r} is not a Kubernetes quantity (e.g. \"2\", \"500m\", \"4Gi\")")
    value = _parse(text)
    if abs(value) >= MAX_QUANTITY:
        raise QuantityError(f"{text!r} is absurdly large")
    return value


def parse_quantity(value: object) -> Decimal:
    """Parse a quantity as the API server would accept it; ValueError otherwise.

    YAML gives ints and floats for unquoted numbers (`cpu: 2`, `cpu: 0.5`); the API server
    accepts those too (JSON numbers unmarshal into Quantity), booleans it does not.
    """
    if value.__class__ is str:               # the common case: straight to the cached parser
        return _parse_text(value)
    if isinstance(value, bool) or not isinstance(value, (str, int, float)):
        raise QuantityError(f"{value!r} is not a Kubernetes quantity (expected a string or number)")
    if isinstance(value, float):
        if value != value or value in (float("inf"), float("-inf")):
            raise QuantityError(f"{value!r} is not a Kubernetes quantity")
        value = repr(value)
    return _parse_text(str(value))


def format_cpu(value: Decimal) -> str:
    """CPU as people write it: "4", "1500m"."""
    if value == value.to_integral_value():
        return str(int(value))
    return f"{int(value * 1000)}m"


def format_bytes(value: Decimal) -> str:
    """Memory as people write it: the largest binary suffix that divides it exactly."""
    n = int(value)
    if n != value:
        return str(value)
    for suffix, factor in (("Ei", 2**60), ("Pi", 2**50), ("Ti", 2**40), ("Gi", 2**30),
                           ("Mi", 2**20), ("Ki", 2**10)):
        if n and n % factor == 0:
            return f"{n // factor}{suffix}"
    return str(n)
