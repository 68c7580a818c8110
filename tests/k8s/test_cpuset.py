"""Linux cpuset lists, as k8s.io/utils/cpuset Parse / CPUSet.String handle them.

Cases follow k8s.io/utils cpuset/cpuset_test.go (TestParse, TestCPUSetString) plus the
Atoi corner cases that make Parse fail.
"""
from __future__ import annotations

import pytest

from numaguard.lint.k8s.cpuset import CPUSetError, format_cpuset, parse_cpuset


# cpuset_test.go TestParse (positive cases)
@pytest.mark.parametrize("text,expected", [
    ("", set()),
    ("5", {5}),
    ("1,2,3,4,5", {1, 2, 3, 4, 5}),
    ("1-5", {1, 2, 3, 4, 5}),
    ("1-1", {1}),
    ("1,2-5", {1, 2, 3, 4, 5}),
    ("0-3,8,10-11", {0, 1, 2, 3, 8, 10, 11}),
    ("5,1-3,2", {1, 2, 3, 5}),                 # order and overlaps do not matter
    ("+3", {3}),                               # strconv.Atoi accepts a sign
])
def test_parse_accepts(text, expected):
    assert parse_cpuset(text) == frozenset(expected)


# cpuset_test.go TestParse (negative cases) and Atoi errors
@pytest.mark.parametrize("text,message", [
    ("nonnumeric", 'parsing "nonnumeric": invalid syntax'),
    ("non-numeric", 'parsing "non": invalid syntax'),
    ("no,", 'parsing "no": invalid syntax'),
    ("0,", 'parsing "": invalid syntax'),
    ("0-", 'parsing "": invalid syntax'),
    ("-", 'parsing "": invalid syntax'),
    ("-1", 'parsing "": invalid syntax'),
    ("1, 2", 'parsing " 2": invalid syntax'),
    ("1_0", 'parsing "1_0": invalid syntax'),
    ("3-0", 'invalid range "3-0" (3 > 0)'),
    ("0-2,5-4", 'invalid range "5-4" (5 > 4)'),
])
def test_parse_rejects(text, message):
    with pytest.raises(CPUSetError) as err:
        parse_cpuset(text)
    assert message in str(err.value)


# cpuset_test.go TestCPUSetString
@pytest.mark.parametrize("cpus,text", [
    (set(), ""),
    ({5}, "5"),
    ({1, 2, 3, 4, 5}, "1-5"),
    ({1, 2, 3, 5, 6, 8}, "1-3,5-6,8"),
    ({0, 2, 4}, "0,2,4"),
    ({10, 0, 11, 1}, "0-1,10-11"),
])
def test_format_is_canonical(cpus, text):
    assert format_cpuset(cpus) == text


@pytest.mark.parametrize("text", ["0-79", "0-3,5,7-9", "1", "0,128,30-31,158-159"])
def test_round_trip(text):
    assert parse_cpuset(format_cpuset(parse_cpuset(text))) == parse_cpuset(text)
    assert format_cpuset(parse_cpuset("5,1-3,2")) == "1-3,5"


def test_a_range_longer_than_any_machine_is_refused_not_expanded():
    """A hostile checkpoint's "0-4294967295" would take gigabytes as a set; 65,536 CPUs in one
    range is the most numaguard expands (Linux's NR_CPUS is at most 8192)."""
    assert len(parse_cpuset("0-65535")) == 65536
    assert len(parse_cpuset("4294901760-4294967295")) == 65536
    with pytest.raises(CPUSetError) as err:
        parse_cpuset("0-65536")
    assert str(err.value) == ('range "0-65536" names 65537 CPUs, more than any Linux machine has '
                              "(numaguard expands at most 65536)")
    with pytest.raises(CPUSetError, match='range "0-4294967295" names 4294967296 CPUs'):
        parse_cpuset("2,0-4294967295")
