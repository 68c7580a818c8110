"""NUMA affinity bitmasks, as the kubelet's Topology Manager represents them.

Mirrors `pkg/kubelet/cm/topologymanager/bitmask/bitmask.go`. A mask is a plain Python `int`
holding an unsigned 64-bit value: bit *i* set means "NUMA node *i* is in the affinity". Plain
ints keep the hint merger (a cross product over providers' hints) free of per-mask object
overhead; the helpers below give every bitmask.go operation an explicit name.

"No affinity" (Go's nil `BitMask`) is `None` wherever a mask is optional; it is distinct from
the empty mask `0`.

Ordering, exactly as bitmask.go defines it:

* `is_less_than(a, b)`: plain unsigned integer comparison `a < b` (the Go comment speaks of
  "more lower-numbered bits set", the code compares integers).
* `is_narrower_than(a, b)`: fewer bits set wins; with equal popcounts, `is_less_than`. So
  narrowness is the total order on `(popcount, value)`, i.e. `narrowness_key`.
"""
from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from itertools import combinations

MAX_BITS = 64
FULL_MASK = (1 << MAX_BITS) - 1          # bitMask.Fill(): all 64 bits set
EMPTY_MASK = 0


class BitMaskError(ValueError):
    """A bit outside 0..63 (bitmask.go: "bit number must be in range 0-63")."""


def _check_bit(bit: int) -> None:
    if bit < 0 or bit >= MAX_BITS:
        raise BitMaskError("bit number must be in range 0-63")


def new_mask(*bits: int) -> int:
    """NewBitMask(bits...): a mask with the given NUMA node ids set.

    Raises BitMaskError for any bit outside 0..63 (and, as in Go, sets nothing then).
    """
    mask = 0
    for bit in bits:
        _check_bit(bit)
        mask |= 1 << bit
    return mask


def mask_of(bits: Iterable[int]) -> int:
    """`new_mask` for an iterable of node ids."""
    return new_mask(*bits)


def mask_add(mask: int, *bits: int) -> int:
    """BitMask.Add: `mask` with `bits` set; on a bad bit raises and `mask` stays as it was."""
    return mask | new_mask(*bits)


def mask_remove(mask: int, *bits: int) -> int:
    """BitMask.Remove: `mask` with `bits` cleared; on a bad bit raises (nothing removed)."""
    return mask & ~new_mask(*bits) & FULL_MASK


def mask_count(mask: int) -> int:
    """Count(): number of bits set (popcount)."""
    return mask.bit_count()


def mask_bits(mask: int) -> list[int]:
    """GetBits(): the set bits in ascending order."""
    bits = []
    while mask:
        low = mask & -mask
        bits.append(low.bit_length() - 1)
        mask ^= low
    return bits


def is_empty(mask: int) -> bool:
    """IsEmpty(): no bit set."""
    return mask == 0


def is_set(mask: int, bit: int) -> bool:
    """IsSet(bit): False for bits outside 0..63 rather than an error, as in Go."""
    if bit < 0 or bit >= MAX_BITS:
        return False
    return bool(mask >> bit & 1)


def any_set(mask: int, bits: Iterable[int]) -> bool:
    """AnySet(bits): is any of `bits` set in `mask`."""
    return any(is_set(mask, b) for b in bits)


def is_equal(a: int, b: int) -> bool:
    """IsEqual(): integer equality."""
    return a == b


def is_less_than(a: int, b: int) -> bool:
    """IsLessThan(): `a < b` as unsigned integers."""
    return a < b


def is_greater_than(a: int, b: int) -> bool:
    """IsGreaterThan(): `a > b` as unsigned integers."""
    return a > b


def is_narrower_than(a: int, b: int) -> bool:
    """IsNarrowerThan(): fewer bits set, or equal popcount and `is_less_than`."""
    ca, cb = a.bit_count(), b.bit_count()
    if ca == cb:
        return a < b
    return ca < cb


def narrowness_key(mask: int) -> tuple[int, int]:
    """Sort key such that `key(a) < key(b)` iff `is_narrower_than(a, b)`."""
    return (mask.bit_count(), mask)


def and_masks(first: int, *rest: int) -> int:
    """Package-level And(first, masks...): bitwise AND of all masks."""
    for m in rest:
        first &= m
    return first


def or_masks(first: int, *rest: int) -> int:
    """Package-level Or(first, masks...): bitwise OR of all masks."""
    for m in rest:
        first |= m
    return first


def mask_string(mask: int) -> str:
    """String(): binary with leading zeros, in groups of two digits, as bitmask.go prints it.

    The kubelet's memory manager uses this text as a map key for init-container memory reuse.
    """
    grouping = 2
    for shift in range(MAX_BITS - grouping, 0, -grouping):
        if mask > (1 << shift):
            return format(mask, f"0{shift + grouping}b")
    return format(mask, f"0{grouping}b")


def iterate_bit_masks(bits: Sequence[int]) -> Iterator[int]:
    """IterateBitMasks(bits): every non-empty subset of `bits`, in the kubelet's order.

    Sizes 1..len(bits); within a size, combinations in lexicographic order of positions in
    `bits` (bitmask.go recurses "pick the next bit from the remaining tail"), e.g. for [0, 1, 2]:
    {0}, {1}, {2}, {0,1}, {0,2}, {1,2}, {0,1,2}.
    """
    values = [new_mask(b) for b in bits]          # validates every bit once
    for size in range(1, len(values) + 1):
        for combo in combinations(values, size):
            yield sum(combo)


def format_mask(mask: int | None) -> str:
    """Human-readable form for messages and reprs: "{0,2}", "{}" for empty, "nil" for None."""
    if mask is None:
        return "nil"
    return "{" + ",".join(str(b) for b in mask_bits(mask)) + "}"
