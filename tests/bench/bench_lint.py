"""Benchmark: lint N generated manifests in one process, against PyYAML's C loader alone
parsing the same files, both measured in this run (goal: ratio <= 1.5).

    python tests/bench/bench_lint.py [--count 10000] [--repeat 3]
"""
from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent))
from corpus import write_corpus  # noqa: E402

from numaguard.lint.load.documents import load_paths  # noqa: E402
from numaguard.lint.engine import lint_documents  # noqa: E402
from numaguard.lint.report import writer_for  # noqa: E402


def parse_only(paths: list[Path]) -> int:
    n = 0
    for p in paths:
        with open(p, "rb") as fh:
            n += sum(1 for d in yaml.load_all(fh.read(), Loader=yaml.CSafeLoader) if d)
    return n


def lint_all(folder: Path) -> tuple[int, int]:
    docs, errors = [], []
    for _src, d, e in load_paths([str(folder)]):
        docs.extend(d)
        errors.extend(e)
    result = lint_documents(docs, load_errors=errors)
    writer_for("json")(result)
    flawed = {(f.file, str(f.object)) for f in result.active if f.severity.value != "info"}
    return result.summary.objects, len(flawed)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--count", type=int, default=10_000)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        paths = write_corpus(folder, args.count)
        lint_all(folder)                  # warm caches (imports, quantity cache) once
        base, ours = [], []
        for _ in range(args.repeat):      # interleave so machine noise hits both alike
            t = time.perf_counter(); parse_only(paths); base.append(time.perf_counter() - t)
            t = time.perf_counter(); objects, flawed = lint_all(folder); ours.append(time.perf_counter() - t)
        b, o = statistics.median(base), statistics.median(ours)
        print(f"manifests: {args.count}, objects linted: {objects}, "
              f"with errors or warnings: {flawed} ({flawed / objects:.0%})")
        print(f"PyYAML CSafeLoader parse only: {b:.3f} s (median of {args.repeat})")
        print(f"numaguard lint (load + rules + JSON report): {o:.3f} s")
        print(f"ratio lint / parse: {o / b:.2f}  (goal <= 1.5)")
        print(f"resources per second: {objects / o:,.0f}")


if __name__ == "__main__":
    main()
