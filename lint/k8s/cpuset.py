"""Linux cpuset lists ("0-3,8,10-11") as the kubelet reads and writes them.

Behaviour copied from `k8s.io/utils/cpuset` (`Parse`, `CPUSet.String`):

* the empty string is the empty set;
* the list is split on ",", every part is either one integer or "start-end" (split on the
  first "-" only); integers follow Go's `strconv.Atoi` (optional sign, decimal digits, nothing
  else: no spaces, no underscores), so "1, 2", "0,", "a" and "-1" are errors;
* a range with start > end is an error (`invalid range "3-0" (3 > 0)`); "1-1" is {1};
* duplicates and overlapping ranges are fine;
* formatting is canonical: ascending, maximal runs of consecutive ids written "a-b", single ids
  written alone, joined by "," (so "0-2,5" and never "0,1,2,5").

CPU sets are plain `frozenset[int]` everywhere in numaguard (the kubelet checks and the simulator).
"""
from __future__ import annotations

import re
from collections.abc import Iterable

from numaguard.lint.model import value_kind

# strconv.Atoi: an optional sign followed by ASCII decimal digits (base 10, no underscores)
_GO_INT = re.compile(r"[+-]?[0-9]+\Z")


class CPUSetError(ValueError):
    """A cpuset list that `cpuset.Parse` would reject; the message says what is wrong."""


def _go_atoi(text: str) -> int:
    if not _GO_INT.match(text):
        raise CPUSetError(f'strconv.Atoi: parsing "{text}": invalid syntax')
    return int(text)


MAX_RANGE = 1 << 16      # CPUs one range of a list may name (Linux's NR_CPUS is at most 8192)


def parse_cpuset(text: str) -> frozenset[int]:
    """Parse a Linux CPU list exactly as `k8s.io/utils/cpuset.Parse` does."""
    if not isinstance(text, str):
        raise CPUSetError(f"cpuset must be a string, not {value_kind(text)}")
    if text == "":
        return frozenset()
    result: set[int] = set()
    for part in text.split(","):
        bounds = part.split("-", 1)
        if len(bounds) == 1:
            result.add(_go_atoi(bounds[0]))
            continue
        start, end = _go_atoi(bounds[0]), _go_atoi(bounds[1])
        if start > end:
            raise CPUSetError(f'invalid range "{part}" ({start} > {end})')
        if end - start >= MAX_RANGE:
            # Parse would expand it CPU by CPU; no Linux machine has that many (the kernel's
            # NR_CPUS is at most 8192), and a hostile checkpoint must not take our memory
            raise CPUSetError(f'range "{part}" names {end - start + 1} CPUs, more than any Linux machine has '
                              f"(numaguard expands at most {MAX_RANGE})")
        result.update(range(start, end + 1))
    return frozenset(result)


def format_cpuset(cpus: Iterable[int]) -> str:
    """The canonical list form `CPUSet.String()` produces: "0-2,5,7-9"; "" for no CPUs."""
    ids = sorted(set(cpus))
    if not ids:
        return ""
    parts: list[str] = []
    start = prev = ids[0]
    for cpu in ids[1:]:
        if cpu == prev + 1:
            prev = cpu
            continue
        parts.append(str(start) if start == prev else f"{start}-{prev}")
        start = prev = cpu
    parts.append(str(start) if start == prev else f"{start}-{prev}")
    return ",".join(parts)
