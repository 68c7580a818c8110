"""NUMA bitmask helpers against the kubelet's own table tests.

Origin: kubernetes/kubernetes pkg/kubelet/cm/topologymanager/bitmask/bitmask_test.go
(test function and case name given with each table). Masks are shown as Go's String() does.
"""
import pytest

from numaguard.lint.numa.bitmask import (
    FULL_MASK, BitMaskError, and_masks, any_set, is_empty, is_equal, is_greater_than, is_less_than,
    is_narrower_than, is_set, iterate_bit_masks, mask_add, mask_bits, mask_count, mask_remove,
    mask_string, narrowness_key, new_mask, or_masks,
)

SRC = "bitmask_test.go"


def test_new_empty_bitmask_prints_00():
    # TestNewEmptyiBitMask "New empty BitMask"
    assert mask_string(new_mask()) == "00"


@pytest.mark.parametrize("name,bits,expected", [
    ("New BitMask with bit 0 set", [0], "01"),
    ("New BitMask with bit 1 set", [1], "10"),
    ("New BitMask with bit 0 and bit 1 set", [0, 1], "11"),
])
def test_new_bitmask(name, bits, expected):
    # TestNewBitMask
    assert mask_string(new_mask(*bits)) == expected


@pytest.mark.parametrize("name,bits,expected", [
    ("Add BitMask with bit 0 set", [0], "01"),
    ("Add BitMask with bit 1 set", [1], "10"),
    ("Add BitMask with bits 0 and 1 set", [0, 1], "11"),
])
def test_add(name, bits, expected):
    # TestAdd
    assert mask_string(mask_add(new_mask(), *bits)) == expected


def test_add_bits_outside_range_is_an_error_and_adds_nothing():
    # TestAdd "Add BitMask with bits outside range 0-63": mask stays "00"
    mask = new_mask()
    with pytest.raises(BitMaskError, match="bit number must be in range 0-63"):
        mask = mask_add(mask, -1, 64)
    assert mask_string(mask) == "00"


@pytest.mark.parametrize("name,bits_set,bits_remove,expected", [
    ("Set bit 0. Remove bit 0", [0], [0], "00"),
    ("Set bits 0 and 1. Remove bit 1", [0, 1], [1], "01"),
    ("Set bits 0 and 1. Remove bits 0 and 1", [0, 1], [0, 1], "00"),
])
def test_remove(name, bits_set, bits_remove, expected):
    # TestRemove
    assert mask_string(mask_remove(new_mask(*bits_set), *bits_remove)) == expected


def test_remove_bits_outside_range_keeps_mask():
    # TestRemove "Set bit 0. Attempt to remove bits outside range 0-63"
    mask = new_mask(0)
    with pytest.raises(BitMaskError):
        mask = mask_remove(mask, -1, 64)
    assert mask_string(mask) == "01"


@pytest.mark.parametrize("name,masks,expected", [
    ("Mask 11 AND mask 11", [[0, 1], [0, 1]], "11"),
    ("Mask 11 AND mask 10", [[0, 1], [1]], "10"),
    ("Mask 01 AND mask 11", [[0], [0, 1]], "01"),
    ("Mask 11 AND mask 11 AND mask 10", [[0, 1], [0, 1], [1]], "10"),
    ("Mask 01 AND mask 01 AND mask 10 AND mask 11", [[0], [0], [1], [0, 1]], "00"),
    ("Mask 1111 AND mask 1110 AND mask 1100 AND mask 1000",
     [[0, 1, 2, 3], [1, 2, 3], [2, 3], [3]], "1000"),
])
def test_and(name, masks, expected):
    # TestAnd (the Go test passes the first mask twice: And(bitMasks[0], bitMasks...))
    ms = [new_mask(*b) for b in masks]
    assert mask_string(and_masks(ms[0], *ms)) == expected


@pytest.mark.parametrize("name,masks,expected", [
    ("Mask 01 OR mask 00", [[0], []], "01"),
    ("Mask 10 OR mask 10", [[1], [1]], "10"),
    ("Mask 01 OR mask 10", [[0], [1]], "11"),
    ("Mask 11 OR mask 11", [[0, 1], [0, 1]], "11"),
    ("Mask 01 OR mask 10 OR mask 11", [[0], [1], [0, 1]], "11"),
    ("Mask 1000 OR mask 0100 OR mask 0010 OR mask 0001", [[3], [2], [1], [0]], "1111"),
])
def test_or(name, masks, expected):
    # TestOr
    ms = [new_mask(*b) for b in masks]
    assert mask_string(or_masks(ms[0], *ms)) == expected


def test_fill_prints_64_ones():
    # TestFill "Fill empty mask" / "Fill mask 10" / "Fill mask 11"
    assert mask_string(FULL_MASK) == "1" * 64


@pytest.mark.parametrize("name,bits,expected", [
    ("Check if mask 00 is empty", [], True),
    ("Check if mask 01 is empty", [0], False),
    ("Check if mask 11 is empty", [0, 1], False),
])
def test_is_empty(name, bits, expected):
    # TestIsEmpty
    assert is_empty(new_mask(*bits)) is expected


@pytest.mark.parametrize("name,bits,bit,expected", [
    ("Check if bit 0 in mask 00 is set", [], 0, False),
    ("Check if bit 0 in mask 01 is set", [0], 0, True),
    ("Check if bit 1 in mask 11 is set", [0, 1], 1, True),
    ("Check if bit outside range 0-63 is set", [0, 1], 64, False),
])
def test_is_set(name, bits, bit, expected):
    # TestIsSet
    assert is_set(new_mask(*bits), bit) is expected


@pytest.mark.parametrize("name,bits,check,expected", [
    ("Check if any bits from 11 in mask 00 is set", [], [0, 1], False),
    ("Check if any bits from 11 in mask 01 is set", [0], [0, 1], True),
    ("Check if any bits from 11 in mask 11 is set", [0, 1], [0, 1], True),
    ("Check if any bit outside range 0-63 is set", [0, 1], [64, 65], False),
    ("Check if any bits from 1001 in mask 0110 is set", [1, 2], [0, 3], False),
])
def test_any_set(name, bits, check, expected):
    # TestAnySet
    assert any_set(new_mask(*bits), check) is expected


@pytest.mark.parametrize("name,first,second,expected", [
    ("Check if mask 00 equals mask 00", [], [], True),
    ("Check if mask 00 equals mask 01", [], [0], False),
    ("Check if mask 01 equals mask 01", [0], [0], True),
    ("Check if mask 01 equals mask 10", [0], [1], False),
    ("Check if mask 11 equals mask 11", [0, 1], [0, 1], True),
])
def test_is_equal(name, first, second, expected):
    # TestIsEqual
    assert is_equal(new_mask(*first), new_mask(*second)) is expected


@pytest.mark.parametrize("name,bits,expected", [
    ("Count number of bits set in mask 00", [], 0),
    ("Count number of bits set in mask 01", [0], 1),
    ("Count number of bits set in mask 11", [0, 1], 2),
])
def test_count(name, bits, expected):
    # TestCount
    assert mask_count(new_mask(*bits)) == expected


@pytest.mark.parametrize("name,bits,expected", [
    ("Get bits of mask 00", [], []),
    ("Get bits of mask 01", [0], [0]),
    ("Get bits of mask 11", [0, 1], [0, 1]),
])
def test_get_bits(name, bits, expected):
    # TestGetBits
    assert mask_bits(new_mask(*bits)) == expected


@pytest.mark.parametrize("name,first,second,expected", [
    ("Check narrowness of masks with unequal bits set 1/2", [0], [0, 1], True),
    ("Check narrowness of masks with unequal bits set 2/2", [0, 1], [0], False),
    ("Check narrowness of masks with equal bits set 1/2", [0], [1], True),
    ("Check narrowness of masks with equal bits set 2/2", [1], [0], False),
])
def test_is_narrower_than(name, first, second, expected):
    # TestIsNarrowerThan
    assert is_narrower_than(new_mask(*first), new_mask(*second)) is expected


@pytest.mark.parametrize("name,numbits", [
    ("1 bit", 1), ("2 bits", 2), ("4 bits", 4), ("8 bits", 8), ("16 bits", 16),
])
def test_iterate_bit_masks_counts(name, numbits):
    # TestIterateBitMasks: 2^n - 1 masks
    assert sum(1 for _ in iterate_bit_masks(list(range(numbits)))) == (1 << numbits) - 1


# --- our own cases (not in bitmask_test.go): ordering the merger relies on -----------------

def test_iterate_bit_masks_order_is_size_then_lexicographic():
    assert [mask_bits(m) for m in iterate_bit_masks([0, 1, 2])] == [
        [0], [1], [2], [0, 1], [0, 2], [1, 2], [0, 1, 2]]


def test_iterate_bit_masks_follows_given_ids():
    assert [mask_bits(m) for m in iterate_bit_masks([1, 3])] == [[1], [3], [1, 3]]


def test_narrowness_is_popcount_then_integer():
    masks = [new_mask(*b) for b in ([2, 3], [0], [0, 1, 2], [1, 2], [3], [0, 3], [0, 1], [0, 2])]
    ordered = sorted(masks, key=narrowness_key)
    assert [mask_bits(m) for m in ordered] == [
        [0], [3], [0, 1], [0, 2], [1, 2], [0, 3], [2, 3], [0, 1, 2]]
    for a in masks:
        for b in masks:
            assert is_narrower_than(a, b) == (narrowness_key(a) < narrowness_key(b))


@pytest.mark.parametrize("first,second,less", [
    ([0], [1], True), ([1], [0], False), ([0, 1], [2], True), ([2], [0, 1], False),
    ([0], [0], False),
])
def test_is_less_than_is_integer_comparison(first, second, less):
    a, b = new_mask(*first), new_mask(*second)
    assert is_less_than(a, b) is less
    assert is_greater_than(b, a) is less


def test_string_widens_in_pairs_of_digits():
    assert mask_string(new_mask(2)) == "100"      # 4 is not > 1<<2, so the 2-digit format
    assert mask_string(new_mask(0, 3)) == "1001"
    assert mask_string(new_mask(4)) == "10000"      # 16 is not > 1<<4 either
    assert mask_string(new_mask(0, 4)) == "010001"
