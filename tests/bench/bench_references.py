"""Benchmark: what reading the referenced objects first (lint/references.py) costs a run.

    python tests/bench/bench_references.py [--count 5000] [--tree DIR] [--repeat 5]

Before linting, `numaguard lint` reads every input file's bytes once more to find the ones that
name a kind other objects refer to (an OpenShift FeatureGate, a KServe ServingRuntime...) and
parses only those (`lint_files.gather_references`). Measured in one process, median of
`--repeat`, on the generated corpus (`--count` manifests, a few of them FeatureGates and
ServingRuntimes) and on `--tree` when given (e.g. public repositories' manifests extracted to
/tmp), each figure against the baseline of this run: the whole lint of the same files with
--jobs 1, and PyYAML's C loader alone (`yaml.load_all`, CSafeLoader) on them.
"""
from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from corpus import write_corpus  # noqa: E402

from numaguard.lint.cli.lint_files import gather_references  # noqa: E402
from numaguard.lint.load.files import input_files  # noqa: E402

REFERENCED = """\
apiVersion: config.openshift.io/v1
kind: FeatureGate
metadata: {name: cluster}
spec: {featureSet: CustomNoUpgrade, customNoUpgrade: {enabled: [PodLevelResourceManagers]}}
---
apiVersion: serving.kserve.io/v1alpha1
kind: ServingRuntime
metadata: {name: rt%d, namespace: ml}
spec: {containers: [{name: kserve-container, image: x}]}
"""


def timed(fn, repeat: int) -> float:
    runs = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        runs.append(time.perf_counter() - start)
    return statistics.median(runs)


def c_loader(paths: list[str]) -> None:
    import yaml

    for path in paths:
        with open(path, "rb") as fh:
            try:
                for _ in yaml.load_all(fh.read(), Loader=yaml.CSafeLoader):
                    pass
            except yaml.YAMLError:
                pass


def whole_lint(folder: Path) -> None:
    subprocess.run([sys.executable, "-m", "numaguard", "lint", str(folder), "--jobs", "1", "--format", "json",
                    "--output", "/dev/null"], check=False, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def report(name: str, folder: Path, repeat: int) -> None:
    paths = [p for p in input_files([str(folder)], ()) if p != "-"]
    scan = timed(lambda: gather_references(paths), repeat)
    loader = timed(lambda: c_loader(paths), repeat)
    lint = timed(lambda: whole_lint(folder), max(1, repeat // 2))
    found = gather_references(paths)
    print(f"{name}: {len(paths)} files, {sum(len(v) for t in found.tables.values() for v in t.values())} referenced "
          f"objects; reading them first {scan * 1000:.0f} ms = {scan / lint:.3f} x the whole lint "
          f"({lint:.2f} s, --jobs 1) and {scan / loader:.3f} x the C loader alone ({loader:.2f} s)")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--count", type=int, default=5000)
    parser.add_argument("--tree", type=Path)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / "corpus"
        write_corpus(folder, args.count)
        for i in range(max(1, args.count // 500)):
            (folder / f"referenced-{i}.yaml").write_text(REFERENCED % i)
        report("generated corpus", folder, args.repeat)
    if args.tree:
        report(str(args.tree), args.tree, args.repeat)


if __name__ == "__main__":
    main()
