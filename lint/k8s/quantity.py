"""Kubernetes resource quantities, read as the API server reads them.

The rules are `k8s.io/apimachinery/pkg/api/resource`'s (kubernetes/apimachinery, read at
eed236ce, July 2026): quantity.go `ParseQuantity` and `parseQuantityString`, suffix.go
`interpret`, amount.go and math.go for the int64 accessors, and quantity_test.go for the cases
(`TestQuantityParse`, `TestParseQuantityString`, `TestJSONWhitespace`, `TestParseQuantity`):

- text: an optional sign, digits with at most one `.` (`1.`, `.5`, `.` and even no digits at
  all are numbers: "." and "k" parse as 0), then a suffix, then nothing else; anything else is
  "quantities must match the regular expression ..." (ErrFormatWrong). The empty string too.
- suffix: `n u m "" k M G T P E` (powers of 10), `Ki Mi Gi Ti Pi Ei` (powers of 2), or `e`/`E`
  and a signed integer that `strconv.ParseInt(..., 64)` reads; anything else ("K", "mi",
  "e", "e+", an exponent past int64) is ErrSuffix. The exponent is then kept in an int32:
  `1e4294967296` is read as 1 (a wrap numaguard reports instead of following).
- a number with no digit that needs the big-number path (`Pi`, `Ei`, an exponent below -9)
  is ErrNumeric.
- value: exact, except that a non-zero value finer than 1n is rounded up, away from zero, to
  the next nano (`0.9n` is 1n), and a binary-suffixed value is capped, silently, at 2^63-1
  (`9Ei`, `9223372036854775807Ki`). Decimal values are not capped: ParseQuantity accepts
  `1e999999999`. But everything that uses a quantity reads it through the int64 accessors
  (`Value()`, `MilliValue()`, `ScaledValue()`), which overflow past 2^63-1 (the scheduler and
  the kubelet would see 0 or a wrapped number), so numaguard refuses such a value (NG002):
  it never reaches numaguard's own arithmetic, which stays within Decimal's range.
- a quantity field of an API object is decoded by `Quantity.UnmarshalJSON`, which trims
  surrounding whitespace (`" 1"` is 1) and accepts JSON numbers; the kubelet's maps of
  strings (`kubeReserved`, `evictionHard`) go through ParseQuantity as written (`trim=False`).

The `kubernetes` client's `parse_quantity` is not used: it reads with Python's Decimal (which
takes "1_000", "NaN" and " 1"), neither rounds nor caps as Go does, and overflows Decimal's
context on `1e999999999`.
"""
from __future__ import annotations

import re
from decimal import MAX_EMAX, MIN_EMIN, ROUND_UP, Context, Decimal, DivisionByZero, \
    InvalidOperation, Overflow
from functools import lru_cache

MAX_INT64 = 2**63 - 1
NANO = Decimal("1e-9")
# quantity.go splitREString, quoted in its ErrFormatWrong message
SPLIT_RE = "^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$"
FORMAT_WRONG = f"quantities must match the regular expression '{SPLIT_RE}'"
SUFFIX_WRONG = "unable to parse quantity's suffix"
NUMERIC_WRONG = "unable to parse numeric part of quantity"
EXAMPLES = '(e.g. "2", "500m", "4Gi")'

# parseQuantityString as one pattern: sign, digits, optional "." and digits, then the suffix
# characters, an optional sign and digits, to the end.
_SCAN = re.compile(r"([+-]?)([0-9]*)(\.?)([0-9]*)([eEinumkKMGTP]*[+-]?[0-9]*)")
_DECIMAL_SI = {"": 0, "n": -9, "u": -6, "m": -3, "k": 3, "M": 6, "G": 9, "T": 12, "P": 15, "E": 18}
_BINARY_SI = {"Ki": 10, "Mi": 20, "Gi": 30, "Ti": 40, "Pi": 50, "Ei": 60}
_EXPONENT = re.compile(r"[eE]([+-]?)([0-9]+)")
# Go's unicode.IsSpace, which strings.TrimSpace (UnmarshalJSON) trims
_GO_SPACE = " \t\n\v\f\r\x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008" \
            "\u2009\u200a\u2028\u2029\u202f\u205f\u3000"
_CACHED_LENGTH = 64          # longer texts are parsed uncached (the cache holds its keys)


class QuantityError(ValueError):
    pass


def parse_quantity(value: object, *, trim: bool = True) -> Decimal:
    """The value Kubernetes reads from a quantity; QuantityError (a ValueError) when it refuses
    it, or when the value is beyond the int64 range every reader of quantities uses.

    YAML and JSON give ints and floats for unquoted numbers (`cpu: 2`, `cpu: 0.5`): a
    Quantity field accepts those as their JSON text. `trim=False` for strings the kubelet
    parses with ParseQuantity itself (map[string]string settings), where " 1" is refused.
    """
    if value.__class__ is str:               # the common case: straight to the cached parser
        text = value.strip(_GO_SPACE) if trim else value
        return _parse_text(text) if len(text) <= _CACHED_LENGTH else _parse(text)
    if isinstance(value, bool) or not isinstance(value, (str, int, float)):
        raise QuantityError(f"{value!r} is not a Kubernetes quantity (expected a string or number)")
    if isinstance(value, float):
        if value != value:
            raise QuantityError(f"{value!r} is not a Kubernetes quantity")
        if value in (float("inf"), float("-inf")):
            raise QuantityError(_too_large(repr(value)))
        return _parse_text(repr(value))
    if isinstance(value, int) and abs(value) > MAX_INT64:     # str() of a huge int is refused
        raise QuantityError(_too_large(f"a {value.bit_length()}-bit integer"))
    return parse_quantity(str(value))


def _not_a_quantity(text: str, why: str) -> QuantityError:
    return QuantityError(f"{text!r} is not a Kubernetes quantity {EXAMPLES}: {why}")


def _too_large(shown: str) -> str:
    return (f"{shown} is larger than Kubernetes can use: the API server reads quantities as "
            f"64-bit integers (Quantity.Value(), MilliValue()), which cannot hold more than "
            f"{MAX_INT64}")


@lru_cache(maxsize=4096)
def _parse_text(text: str) -> Decimal:
    return _parse(text)


def _parse(text: str) -> Decimal:
    if not text:
        raise _not_a_quantity(text, FORMAT_WRONG)
    scanned = _SCAN.fullmatch(text)
    if scanned is None:
        raise _not_a_quantity(text, FORMAT_WRONG)
    sign, whole, _, fraction, suffix = scanned.groups()
    number = (whole or "0") + ("." + fraction if fraction else "")
    has_digit = bool(whole or fraction)
    negative = sign == "-"
    if suffix in _BINARY_SI:
        power = _BINARY_SI[suffix]
        if not has_digit and power >= 50:      # Pi, Ei: the big-number path needs a digit
            raise _not_a_quantity(text, NUMERIC_WRONG)
        return _binary(number, len(fraction), power, negative)
    written = _DECIMAL_SI[suffix] if suffix in _DECIMAL_SI else _exponent(text, suffix)
    exponent = (written + 2**31) % 2**32 - 2**31       # int32(parsed) in suffix.go interpret
    if not has_digit and exponent < -9:
        raise _not_a_quantity(text, NUMERIC_WRONG)
    if exponent != written:
        raise QuantityError(f"{text!r}: Kubernetes keeps a quantity's exponent in 32 bits, so "
                            f"e{written} wraps to e{exponent} and the API server would read another "
                            f"value; write the value you mean")
    return _decimal(text, number, len(fraction), exponent, negative, suffix in _DECIMAL_SI)


def _exponent(text: str, suffix: str) -> int:
    """The exponent of an `e`/`E` suffix as strconv.ParseInt(suffix[1:], 10, 64) reads it."""
    found = _EXPONENT.fullmatch(suffix)
    digits = found.group(2).lstrip("0") if found else ""
    if found is None or len(digits) > 19:
        raise _not_a_quantity(text, SUFFIX_WRONG)
    exponent = int(digits or "0") * (-1 if found.group(1) == "-" else 1)
    if not -2**63 <= exponent <= MAX_INT64:
        raise _not_a_quantity(text, SUFFIX_WRONG)
    return exponent


# The suffixes' factors. A product of one of them and a number of at most _SHORT characters
# (_SHORT_BINARY for the 19-digit powers of 2) has at most 28 significant digits, so Decimal's
# default context (precision 28) computes it exactly, and writes it as the kubernetes client
# did (4k is 4000, 500m is 0.500); a longer number is scaled by its exponent instead, and
# multiplied in a context wide enough for it.
_POWERS_OF_10 = {e: Decimal(10) ** e for e in _DECIMAL_SI.values()}
_POWERS_OF_2 = {p: Decimal(2**p) for p in _BINARY_SI.values()}
_SHORT, _SHORT_BINARY = 20, 9


def _exact(digits: int) -> Context:
    """A context in which a product of numbers of `digits` digits, and its rounding, are exact."""
    return Context(prec=digits + 40, Emax=MAX_EMAX, Emin=MIN_EMIN, rounding=ROUND_UP,
                   traps=[InvalidOperation, Overflow, DivisionByZero])


def _decimal(text: str, number: str, decimals: int, exponent: int, negative: bool, si: bool) -> Decimal:
    if si and len(number) <= _SHORT:
        value = Decimal(number) * _POWERS_OF_10[exponent]
    else:
        value = Decimal(f"{number}E{exponent}")        # exact, whatever the exponent (1e3 is 1E+3)
        if value and value.adjusted() >= 19:           # >= 1e19 > 2^63-1: no arithmetic on it
            raise QuantityError(_too_large(repr(text)))
    if value and value.adjusted() < -9:                # finer than 1n: rounded up to 1n
        value = NANO
    elif decimals - exponent > 9:                      # digits below 1n
        value = _round_up_to_nano(value, _exact(len(number)))
    if value > MAX_INT64:
        raise QuantityError(_too_large(repr(text)))
    return -value if negative and value else value


def _binary(number: str, decimals: int, power: int, negative: bool) -> Decimal:
    amount = Decimal(number)
    if amount.adjusted() >= 19:                        # far past the cap
        value = Decimal(MAX_INT64)
    else:
        factor = _POWERS_OF_2[power]
        value = amount * factor if len(number) <= _SHORT_BINARY \
            else _exact(len(number)).multiply(amount, factor)
        if decimals > 9:                               # digits below 1n
            value = _round_up_to_nano(value, _exact(len(number)))
        value = min(value, Decimal(MAX_INT64))          # quantity.go: "The max is just a simple cap"
    return -value if negative and value else value


def _round_up_to_nano(value: Decimal, context: Context) -> Decimal:
    """quantity.go rounds a non-zero value finer than 1n up, away from zero (inf.RoundUp)."""
    rounded = value.quantize(NANO, context=context)
    return value if rounded == value else rounded


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
