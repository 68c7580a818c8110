"""Lint files one at a time, in this process or spread over worker processes (`--jobs`).

Each file is loaded, linted and dropped before the next one is read: only its findings and
counts are kept, so memory follows the findings, not the input, and the garbage collector
never walks a growing heap of parsed documents. With several jobs, files go to worker
processes in chunks of similar size, in order; each worker returns findings and counts, and
the parent merges them and sorts the findings exactly as one process would, so the output is
byte-identical to `--jobs 1`. Small runs (a pre-commit call on a few files) and standard
input stay in this process: starting workers would cost more than it saves.
"""
from __future__ import annotations

import gc
import os
from contextlib import contextmanager
from dataclasses import dataclass
from functools import partial
from typing import Any, Iterator

from numaguard.lint.config import Config
from numaguard.lint.engine import Linter, LintResult, Selection, sort_findings
from numaguard.lint.load.documents import load_file
from numaguard.lint.load.files import STDIN_ARGUMENT, input_files
from numaguard.lint.model import Summary

# Below this many bytes of input a run stays in process. Measured on the 2-core development
# machine under load (generated manifests, median of 5): 0.12 MB took 0.53 s in process and
# 0.85 s with two workers, 0.67 MB 3.3 s and 3.6 s, 1.3 MB 7.6 s and 7.0 s: workers start to
# pay off around 1 MB.
PARALLEL_FROM_BYTES = 1_000_000
CHUNKS_PER_JOB = 8                  # enough chunks that a slow chunk does not idle the others
MIN_CHUNK_BYTES = 64 * 1024


class WorkerFailed(RuntimeError):
    """A worker process died (killed, out of memory): the run cannot be trusted."""


@dataclass(frozen=True)
class LintSettings:
    """What every file is linted with, sent once per chunk to the worker."""

    config: Config
    selection: Selection
    node: Any = None


def default_jobs() -> int:
    """The CPUs this process may run on (taskset, cgroup cpusets), not the machine's count."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:          # not on Linux
        return max(1, os.cpu_count() or 1)


def lint_paths(paths: list[str], settings: LintSettings, jobs: int,
               parallel_from_bytes: int | None = None) -> tuple[LintResult, list[str]]:
    """Lint every file `paths` names; returns the result (findings sorted) and the sources
    linted. Raises FileNotFoundError for a path that does not exist, WorkerFailed when a
    worker process dies."""
    files = list(input_files(paths, settings.config.exclude))
    local = [f for f in files if f == STDIN_ARGUMENT]
    remote = [f for f in files if f != STDIN_ARGUMENT]
    if parallel_from_bytes is None:
        parallel_from_bytes = PARALLEL_FROM_BYTES
    chunks = plan_chunks(remote, jobs, parallel_from_bytes)
    result = LintResult([], Summary())
    sources: list[str] = []
    if chunks is None:
        local = files
    else:
        for findings, summary, chunk_sources in _run_workers(chunks, settings, jobs):
            result.merge(LintResult(findings, summary))
            sources.extend(chunk_sources)
    if local:
        findings, summary, local_sources = lint_chunk(local, settings)
        result.merge(LintResult(findings, summary))
        sources.extend(local_sources)
    sort_findings(result.findings)
    return result, sources


def plan_chunks(files: list[str], jobs: int, parallel_from_bytes: int) -> list[list[str]] | None:
    """Chunks of files for the workers, in order, or None to lint in this process (one job,
    one file, or less input than `parallel_from_bytes`)."""
    if jobs <= 1 or len(files) < 2:
        return None
    sizes = []
    for path in files:
        try:
            sizes.append(os.path.getsize(path))
        except OSError:
            sizes.append(0)         # the worker reports it as unreadable
    total = sum(sizes)
    if total < parallel_from_bytes:
        return None
    target = max(total // (jobs * CHUNKS_PER_JOB), MIN_CHUNK_BYTES)
    chunks: list[list[str]] = [[]]
    filled = 0
    for path, size in zip(files, sizes):
        if filled >= target:
            chunks.append([])
            filled = 0
        chunks[-1].append(path)
        filled += size
    return chunks


def lint_chunk(files: list[str], settings: LintSettings
               ) -> tuple[list, Summary, list[str]]:
    """Lint files one by one, keeping only findings and counts (runs in a worker, or here)."""
    linter = Linter(config=settings.config, selection=settings.selection, node=settings.node)
    findings: list = []
    summary = Summary()
    sources = []
    for path in files:
        with _collector_paused():
            source, documents, errors = load_file(path)
            one = linter.lint(documents, errors)
            del documents           # drop the parsed file before the next one is read
        findings.extend(one.findings)
        summary.add(one.summary)
        summary.files += 1
        sources.append(source)
    return findings, summary, sources


@contextmanager
def _collector_paused() -> Iterator[None]:
    """No cyclic garbage collection while one file is parsed and linted.

    A parsed document is a tree of dicts and lists without reference cycles: reference
    counting frees it when the file is done. But building a large file allocates millions of
    containers, and each allocation burst triggers collections that walk everything built so
    far; on a 2 MB manifest that was two thirds of the time (measured: tests/bench). The
    collector runs again as soon as the file is done, so a cycle made while linting lives for
    one file at most.
    """
    if not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


def _run_workers(chunks: list[list[str]], settings: LintSettings, jobs: int):
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor
    from concurrent.futures.process import BrokenProcessPool

    # fork: the workers start with the modules this process has already imported; where fork
    # does not exist (macOS defaults to spawn, Windows), the platform default.
    methods = multiprocessing.get_all_start_methods()
    context = multiprocessing.get_context("fork" if "fork" in methods else None)
    workers = min(jobs, len(chunks))
    try:
        with ProcessPoolExecutor(max_workers=workers, mp_context=context) as pool:
            yield from pool.map(partial(lint_chunk, settings=settings), chunks)
    except BrokenProcessPool as e:
        raise WorkerFailed(f"a worker process died ({e}); try --jobs 1") from None
