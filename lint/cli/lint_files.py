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

import os
from dataclasses import dataclass, field, replace
from functools import partial
from typing import Any

from numaguard.lint.config import Config
from numaguard.lint.engine import Linter, LintResult, RunPart, Selection, collect_references
from numaguard.lint.load.collector import collector_paused as _collector_paused
from numaguard.lint.load.documents import Document, LoadError, load_file, load_text
from numaguard.lint.references import RunReferences, mentions_referenced_kind
from numaguard.lint.load.files import STDIN_ARGUMENT, input_files

# Below this many bytes of input a run stays in process. Measured on the 2-core development
# machine under load (generated manifests, median of 5): 0.12 MB took 0.53 s in process and
# 0.85 s with two workers, 0.67 MB 3.3 s and 3.6 s, 1.3 MB 7.6 s and 7.0 s: workers start to
# pay off around 1 MB.
PARALLEL_FROM_BYTES = 1_000_000
CHUNKS_PER_JOB = 8                  # enough chunks that a slow chunk does not idle the others
MIN_CHUNK_BYTES = 64 * 1024


class WorkerFailed(RuntimeError):
    """A worker process died (killed, out of memory): the run cannot be trusted."""


class InputProblem(RuntimeError):
    """Input that stops the run (a kubelet drop-in that cannot be read): one line, exit 2."""


@dataclass(frozen=True)
class LintSettings:
    """What every file is linted with, sent once per chunk to the worker."""

    config: Config
    selection: Selection
    node: Any = None                                   # the default node description
    pool_nodes: dict[str, Any] = field(default_factory=dict)   # each pool's, by name
    node_named_by: dict[str | None, str] = field(default_factory=dict)   # who named them (rule_context)
    # what other objects of the run say about a document (numaguard.lint.references): gathered
    # from every file before any is linted, so that each worker has it
    references: Any = None


def default_jobs() -> int:
    """The CPUs this process may run on (taskset, cgroup cpusets), not the machine's count."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:          # not on Linux
        return max(1, os.cpu_count() or 1)


def lint_paths(paths: list[str], settings: LintSettings, jobs: int,
               parallel_from_bytes: int | None = None,
               extra_documents: list[Document] = ()) -> tuple[LintResult, list[str]]:
    """Lint every file `paths` names, each with its kubelet drop-ins, then `extra_documents`
    not already linted (a node description's KubeletConfiguration), then the run-level rules.
    Returns the result (findings sorted) and the sources linted. Raises FileNotFoundError for
    a path that does not exist, WorkerFailed when a worker process dies, InputProblem."""
    unwalked: list[str] = []
    files, seen = [], set()
    for path in input_files(paths, settings.config.exclude, dependencies=settings.config.lint_dependencies,
                            unwalked=unwalked):
        key = path if path == STDIN_ARGUMENT else os.path.normpath(path)
        if key not in seen:         # once each, however often the paths name it (`lint --pool nodes/ .`)
            seen.add(key)
            files.append(path)
    local = [f for f in files if f == STDIN_ARGUMENT]
    remote = [f for f in files if f != STDIN_ARGUMENT]
    settings = replace(settings, references=gather_references(remote))
    if parallel_from_bytes is None:
        parallel_from_bytes = PARALLEL_FROM_BYTES
    chunks = plan_chunks(remote, jobs, parallel_from_bytes)
    linter = Linter(config=settings.config, selection=settings.selection, node=settings.node,
                    pool_nodes=settings.pool_nodes, node_named_by=settings.node_named_by,
                    references=settings.references)
    sources: list[str] = []
    count = 0
    if chunks is None:
        local = files
    else:
        for part, chunk_sources, chunk_count in _run_workers(chunks, settings, jobs):
            linter.absorb(part)
            sources.extend(chunk_sources)
            count += chunk_count
    if local:
        local_sources, local_count = _lint_files(linter, local)
        sources.extend(local_sources)
        count += local_count
    count += _lint_extra(linter, extra_documents, sources)
    result = linter.finish()
    result.summary.files = count
    result.summary.unwalked = sorted(d.replace(os.sep, "/") for d in unwalked)
    return result, sources


def _lint_extra(linter: Linter, documents: list[Document], sources: list[str]) -> int:
    """The documents not linted with the files (an inline configuration, index < 0, or one
    from a file not given); returns how many files that added."""
    linted = {os.path.normpath(s) for s in sources}
    extra = [d for d in documents if d.index < 0 or os.path.normpath(d.source) not in linted]
    if not extra:
        return 0
    count = 0
    dropin_docs: list[Document] = []
    dropin_errors: list[LoadError] = []
    for source in dict.fromkeys(d.source for d in extra):
        found, errors, files = _dropins(source, [d for d in extra if d.source == source])
        dropin_docs += found
        dropin_errors += errors
        count += files + (os.path.normpath(source) not in linted)
    linter.lint(extra + dropin_docs, dropin_errors)
    return count


def gather_references(files: list[str]) -> RunReferences:
    """What the objects others refer to say (an OpenShift FeatureGate, a KServe ServingRuntime...),
    read from the files whose bytes mention such a kind (`mentions_referenced_kind`) before any
    file is linted: only those are parsed twice. A file that cannot be read is left to the lint,
    which reports it."""
    references = RunReferences()
    for path in files:
        try:
            with open(path, "rb") as fh:
                if not mentions_referenced_kind(fh.read()):
                    continue
        except OSError:
            continue
        with _collector_paused():
            _, documents, _ = load_file(path)
            collect_references(references, documents)
    return references


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


def lint_chunk(files: list[str], settings: LintSettings) -> tuple[RunPart, list[str], int]:
    """A worker's share: lint `files` one by one and hand back what they left behind."""
    linter = Linter(config=settings.config, selection=settings.selection, node=settings.node,
                    pool_nodes=settings.pool_nodes, node_named_by=settings.node_named_by,
                    references=settings.references)
    sources, count = _lint_files(linter, files)
    return linter.take(), sources, count


def _lint_files(linter: Linter, files: list[str]) -> tuple[list[str], int]:
    """Load, lint and drop each file (with its kubelet drop-ins); returns the sources and how
    many files were read."""
    sources = []
    count = 0
    for path in files:
        with _collector_paused():
            source, documents, errors = load_file(path)
            found, dropin_errors, dropin_files = _dropins(source, documents)
            linter.lint(documents + found, errors + dropin_errors)
            del documents, found        # drop the parsed file before the next one is read
        sources.append(source)
        count += 1 + dropin_files
    return sources, count


def _dropins(source: str, documents: list[Document]) -> tuple[list[Document], list[LoadError], int]:
    """The kubelet drop-ins of a KubeletConfiguration file: the `*.conf` files under
    `<file>.d/` (numaguard.lint.k8s.kubelet_dropin), in the order the kubelet's
    `filepath.WalkDir` visits them. Returns (documents, errors, files read)."""
    from numaguard.lint.k8s.kubelet_dropin import DROPIN_DIR_SUFFIX, DROPIN_SUFFIX

    if not source or not any(isinstance(d.data, dict) and d.data.get("kind") == "KubeletConfiguration"
                             for d in documents):
        return [], [], 0
    folder = source + DROPIN_DIR_SUFFIX
    if not os.path.isdir(folder):
        return [], [], 0

    def walk(directory: str):
        try:
            entries = sorted(os.scandir(directory), key=lambda e: e.name)
        except OSError:
            return
        for entry in entries:
            if entry.is_dir():
                yield from walk(entry.path)
            elif entry.name.endswith(DROPIN_SUFFIX):
                yield entry.path

    docs: list[Document] = []
    errors: list[LoadError] = []
    files = 0
    for path in walk(folder):
        try:
            with open(path, "rb") as fh:
                found, errs = load_text(fh.read(), path)
        except OSError as e:
            raise InputProblem(f"{path}: cannot read: {e.strerror}") from None
        files += 1
        docs.extend(found)
        errors.extend(errs)
    return docs, errors, files


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
