"""Benchmark: the start of `numaguard lint one-pod.yaml` (what pre-commit and `kubectl
numaguard lint` pay on every call) against `python -c pass`, both measured in this run,
interleaved, median of N runs each:

* cached: bytecode in __pycache__ as after the first run (goal: at most +100 ms);
* uncached: numaguard's own bytecode removed (its `__pycache__` folders) and
  `PYTHONDONTWRITEBYTECODE`, so each of its modules a run imports is compiled from source each
  time, as on the first run from a fresh checkout (the standard library and the dependencies
  keep theirs, as pip compiles them at install).

Wall time says what a user waits and grows with the machine's load; CPU time (user + system
of the child) says what the start costs and moves less with the load. Both are printed, with
the load average.

    python tests/bench/bench_cold_start.py [RUNS]
"""
from __future__ import annotations

import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

POD = """apiVersion: v1
kind: Pod
metadata: {name: one}
spec:
  resources:
    requests: {cpu: "2", memory: 2Gi}
    limits: {cpu: "2", memory: 2Gi}
  containers:
    - name: app
      image: registry.example.com/app:1.0
"""
GOAL_MS = 100


def timed(cmd: list[str], cwd: str, env: dict[str, str]) -> tuple[float, float]:
    """(wall, CPU) seconds of one run."""
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, cwd=cwd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _pid, _status, usage = os.wait4(proc.pid, 0)
    proc.returncode = 0
    return time.perf_counter() - start, usage.ru_utime + usage.ru_stime


def drop_numaguard_bytecode() -> None:
    import importlib.util

    for package in ("numaguard.lint", "numaguard.webhook"):
        for folder in importlib.util.find_spec(package).submodule_search_locations:
            for cache in Path(folder).rglob("__pycache__"):
                shutil.rmtree(cache, ignore_errors=True)


def measure(runs: int, *, cached: bool) -> dict[str, float]:
    exe = str(Path(sys.executable).parent / "numaguard")
    with tempfile.TemporaryDirectory() as tmp:
        Path(tmp, "one-pod.yaml").write_text(POD)
        env = dict(os.environ)
        if not cached:
            env["PYTHONDONTWRITEBYTECODE"] = "1"
            drop_numaguard_bytecode()
        base, ours = [], []
        for _ in range(runs):
            for sink, cmd in ((base, [sys.executable, "-c", "pass"]), (ours, [exe, "lint", "one-pod.yaml"])):
                sink.append(timed(cmd, tmp, env))
    median = statistics.median
    return {"base": median(w for w, _ in base), "ours": median(w for w, _ in ours),
            "base_cpu": median(c for _, c in base), "ours_cpu": median(c for _, c in ours)}


def main(runs: int = 11) -> None:
    timed([str(Path(sys.executable).parent / "numaguard"), "lint", "--help"], ".", dict(os.environ))  # warm
    print(f"load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}, {os.cpu_count()} CPUs, "
          f"median of {runs} interleaved runs")
    for cached in (True, False):
        m = measure(runs, cached=cached)
        label = "cached bytecode" if cached else "no bytecode    "
        print(f"{label}: python -c pass {m['base'] * 1000:4.0f} ms (CPU {m['base_cpu'] * 1000:4.0f}); "
              f"numaguard lint one-pod.yaml {m['ours'] * 1000:4.0f} ms (CPU {m['ours_cpu'] * 1000:4.0f}); "
              f"difference +{(m['ours'] - m['base']) * 1000:.0f} ms (CPU +{(m['ours_cpu'] - m['base_cpu']) * 1000:.0f}), "
              f"ratio {m['ours'] / m['base']:.1f}x" + (f"  (goal <= +{GOAL_MS} ms)" if cached else ""))


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 11)
