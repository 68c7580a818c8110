"""Pausing Python's cyclic garbage collector while large trees of plain data are built."""
from __future__ import annotations

import gc
from contextlib import contextmanager
from typing import Iterator


@contextmanager
def collector_paused() -> Iterator[None]:
    """No cyclic garbage collection inside the block.

    A parsed document (YAML, or a JSON page of an API list) is a tree of dicts and lists
    without reference cycles: reference counting frees it. But building a large one allocates
    millions of containers, and each allocation burst triggers collections that walk everything
    built so far; on a 2 MB manifest that was two thirds of the time, and on the audit's pod
    pages over a third (measured: tests/bench). The collector runs again when the block ends,
    so a cycle made inside it lives until then at most.
    """
    if not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.enable()
