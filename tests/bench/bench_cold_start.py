"""Benchmark: cold start of `numaguard lint one-pod.yaml` against `python -c pass`, median of
10 runs each, interleaved, in this run (goal: at most 0.3 s more).

    python tests/bench/bench_cold_start.py
"""
from __future__ import annotations

import os
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


def timed(cmd: list[str], cwd: str) -> tuple[float, float]:
    """(wall, CPU) seconds of one run; CPU time says less about how busy the machine is."""
    t = time.perf_counter()
    proc = subprocess.Popen(cmd, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _pid, _status, usage = os.wait4(proc.pid, 0)
    proc.returncode = 0
    return time.perf_counter() - t, usage.ru_utime + usage.ru_stime


def main(runs: int = 10) -> None:
    exe = str(Path(sys.executable).parent / "numaguard")
    with tempfile.TemporaryDirectory() as tmp:
        Path(tmp, "one-pod.yaml").write_text(POD)
        base, ours = [], []
        for _ in range(runs):
            base.append(timed([sys.executable, "-c", "pass"], tmp))
            ours.append(timed([exe, "lint", "one-pod.yaml"], tmp))
    b, o = (statistics.median(t for t, _ in x) for x in (base, ours))
    bc, oc = (statistics.median(c for _, c in x) for x in (base, ours))
    print(f"python -c pass: {b * 1000:.0f} ms (CPU {bc * 1000:.0f} ms); numaguard lint "
          f"one-pod.yaml: {o * 1000:.0f} ms (CPU {oc * 1000:.0f} ms) (median of {runs})")
    print(f"difference: {(o - b) * 1000:.0f} ms, CPU {(oc - bc) * 1000:.0f} ms  (goal <= 300 ms)")


if __name__ == "__main__":
    main()
