"""Benchmark: `numaguard lint` on many files, each figure against a baseline measured in this run.

    python tests/bench/bench_lint.py [--count 10000] [--small 1000] [--repeat 3] [--tree DIR]

Every run is a fresh process (`numaguard lint ... --format json --output /dev/null`), timed
by wall clock, its peak RSS read from os.wait4 (the child and the workers it waited for).

1. Memory: peak RSS linting `--small` vs `--count` generated manifests with --jobs 1, on a
   corpus without findings (goal: at most 1.3x; the findings themselves grow with the input,
   so the usual corpus, a third flawed, is printed too).
2. All cores: the whole lint of `--count` files with the default --jobs, against PyYAML's C
   loader alone (`yaml.load_all` with CSafeLoader, one process) on the same files (goal < 1.0).
3. `--tree DIR`: a real-world tree of mixed YAML and JSON (e.g. public repositories' manifests
   extracted to /tmp): time and peak RSS with --jobs 1 and the default, against the C loader,
   and the share of time the garbage-collector pause per file saves (in process).

Cold start is in bench_cold_start.py.
"""
from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from corpus import write_corpus  # noqa: E402

NUMAGUARD = str(Path(sys.executable).parent / "numaguard")

# PyYAML's C loader alone: read and load_all every file, in one process. Files it cannot
# parse (templates, broken YAML) are skipped, as they cost it next to nothing.
PARSE_ONLY = """
import sys, yaml
n = 0
for path in open(sys.argv[1]).read().splitlines():
    with open(path, 'rb') as fh:
        try:
            n += sum(1 for d in yaml.load_all(fh.read(), Loader=yaml.CSafeLoader) if d is not None)
        except yaml.YAMLError:
            pass
"""


def measured(cmd: list[str]) -> tuple[float, int, float]:
    """(wall seconds, peak RSS in MiB, CPU seconds) of one fresh process and the children it
    waited for (the --jobs workers)."""
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _pid, status, usage = os.wait4(proc.pid, 0)
    elapsed = time.perf_counter() - start
    proc.returncode = os.waitstatus_to_exitcode(status)
    err = proc.stderr.read().decode()
    proc.stderr.close()
    if proc.returncode not in (0, 1):
        raise SystemExit(f"{' '.join(cmd)} exited {proc.returncode}: {err}")
    return elapsed, usage.ru_maxrss // 1024, usage.ru_utime + usage.ru_stime   # maxrss: KiB


def lint_cmd(folder: Path, jobs: int | None, *extra: str) -> list[str]:
    cmd = [NUMAGUARD, "lint", "--format", "json", "--output", os.devnull, *extra]
    return cmd + (["--jobs", str(jobs)] if jobs else []) + [str(folder)]


def parse_cmd(file_list: Path) -> list[str]:
    return [sys.executable, "-c", PARSE_ONLY, str(file_list)]


def median_of(cmd: list[str], repeat: int) -> tuple[float, int, float]:
    runs = [measured(cmd) for _ in range(repeat)]
    return (statistics.median(r[0] for r in runs), max(r[1] for r in runs),
            statistics.median(r[2] for r in runs))


def listed(folder: Path, tmp: Path, name: str) -> Path:
    from numaguard.lint.load.files import input_files

    file_list = tmp / f"{name}.txt"
    file_list.write_text("\n".join(input_files([str(folder)])) + "\n")
    return file_list


def memory(tmp: Path, small: int, large: int) -> None:
    print(f"== 1. memory: peak RSS, --jobs 1, {small:,} vs {large:,} files")
    # Without findings: no flawed manifest, and the pod-budget note (NG110, info, one per
    # pod) not selected. With findings: the usual corpus, about 1.4 findings per file.
    for share, extra, label in ((0.0, ("--ignore", "NG110"), "without findings"),
                                (1 / 3, (), "with findings")):
        peaks = []
        for count in (small, large):
            folder = tmp / f"mem-{count}-{share:.2f}"
            if not folder.exists():
                write_corpus(folder, count, flawed_share=share)
            peaks.append(measured(lint_cmd(folder, 1, *extra))[1])
        goal = "  (goal <= 1.3)" if share == 0 else "  (the findings grow with the input)"
        print(f"{label}: {peaks[0]} MiB vs {peaks[1]} MiB, ratio {peaks[1] / peaks[0]:.2f}{goal}")


def all_cores(tmp: Path, count: int, repeat: int) -> None:
    from numaguard.lint.cli.lint_files import default_jobs

    folder = tmp / f"jobs-{count}"
    write_corpus(folder, count)
    file_list = listed(folder, tmp, "jobs")
    measured(lint_cmd(folder, None))                       # warm the page cache once
    runs: dict[str, list] = {"base": [], "one": [], "many": []}
    for _ in range(repeat):                                # interleaved: noise hits all alike
        runs["base"].append(measured(parse_cmd(file_list)))
        runs["one"].append(measured(lint_cmd(folder, 1)))
        runs["many"].append(measured(lint_cmd(folder, None)))
    wall = {k: statistics.median(r[0] for r in v) for k, v in runs.items()}
    cpu = {k: statistics.median(r[2] for r in v) for k, v in runs.items()}
    b = wall["base"]
    print(f"== 2. all cores: {count:,} files, median of {repeat}, {default_jobs()} CPUs available")
    print(f"PyYAML CSafeLoader load_all, one process: {b:.2f} s (CPU {cpu['base']:.2f} s)")
    print(f"numaguard lint --jobs 1: {wall['one']:.2f} s (ratio {wall['one'] / b:.2f}; "
          f"CPU {cpu['one']:.2f} s)")
    print(f"numaguard lint (default --jobs {default_jobs()}): {wall['many']:.2f} s "
          f"(ratio {wall['many'] / b:.2f}, goal < 1.0; CPU {cpu['many']:.2f} s, all processes)")
    print("(wall time only shrinks with --jobs when the machine has idle cores: with Linux "
          "autogroup, one session's processes share one slot of a busy machine)")


def real_tree(tmp: Path, tree: Path, repeat: int) -> None:
    file_list = listed(tree, tmp, "tree")
    paths = file_list.read_text().splitlines()
    size = sum(os.path.getsize(p) for p in paths)
    print(f"== 3. real-world tree {tree}: {len(paths):,} files, {size / 2**20:.1f} MiB, "
          f"median of {repeat}")
    measured(parse_cmd(file_list))
    for label, cmd in (("PyYAML CSafeLoader load_all", parse_cmd(file_list)),
                       ("numaguard lint --jobs 1", lint_cmd(tree, 1)),
                       ("numaguard lint (default --jobs)", lint_cmd(tree, None))):
        seconds, peak, cpu = median_of(cmd, repeat)
        print(f"{label}: {seconds:.2f} s (CPU {cpu:.2f} s), peak RSS {peak} MiB")
    gc_pause(paths)


def gc_pause(paths: list[str]) -> None:
    """In process: the per-file collector pause (lint_files._collector_paused) on and off."""
    from contextlib import nullcontext

    from numaguard.lint.cli import lint_files
    from numaguard.lint.config import Config
    from numaguard.lint.engine import Selection

    settings = lint_files.LintSettings(config=Config(), selection=Selection())
    times = {}
    for label in ("paused", "not paused"):
        if label == "not paused":
            lint_files._collector_paused = nullcontext
        start = time.perf_counter()
        lint_files.lint_chunk(paths, settings)
        times[label] = time.perf_counter() - start
    print(f"in process, collector paused per file: {times['paused']:.2f} s; not paused: "
          f"{times['not paused']:.2f} s (ratio {times['paused'] / times['not paused']:.2f})")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--count", type=int, default=10_000)
    ap.add_argument("--small", type=int, default=1_000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--tree", type=Path, help="a directory of real-world YAML/JSON files")
    ap.add_argument("--only", choices=("memory", "jobs", "tree"), help="run one part")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        if args.only in (None, "memory"):
            memory(tmp, args.small, args.count)
        if args.only in (None, "jobs"):
            all_cores(tmp, args.count, args.repeat)
        if args.tree and args.only in (None, "tree"):
            real_tree(tmp, args.tree, args.repeat)


if __name__ == "__main__":
    main()
