"""Benchmark: cold start of `numaguard lint one-pod.yaml` against `python -c pass`, median of
10 runs each, interleaved, in this run (goal: at most 0.3 s more).

    python tests/bench/bench_cold_start.py
"""
from __future__ import annotations

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


def timed(cmd: list[str], cwd: str) -> float:
    t = time.perf_counter()
    subprocess.run(cmd, cwd=cwd, capture_output=True)
    return time.perf_counter() - t


def main(runs: int = 10) -> None:
    exe = str(Path(sys.executable).parent / "numaguard")
    with tempfile.TemporaryDirectory() as tmp:
        Path(tmp, "one-pod.yaml").write_text(POD)
        base, ours = [], []
        for _ in range(runs):
            base.append(timed([sys.executable, "-c", "pass"], tmp))
            ours.append(timed([exe, "lint", "one-pod.yaml"], tmp))
    b, o = statistics.median(base), statistics.median(ours)
    print(f"python -c pass: {b * 1000:.0f} ms; numaguard lint one-pod.yaml: {o * 1000:.0f} ms "
          f"(median of {runs})")
    print(f"difference: {(o - b) * 1000:.0f} ms  (goal <= 300 ms)")


if __name__ == "__main__":
    main()
