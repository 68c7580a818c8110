"""Benchmark: what `node inspect --processes` adds on a node with many processes, against
`node inspect` without it on the same node, measured in this run.

The node is tests/node_processes_fixture.py's host root (checkpoints, KubeletConfiguration,
/var/log/containers links, a cgroup v2 tree in the kernel's formats, a real gRPC PodResources
server) with `--pods` pods of two containers each. Every container's cgroup holds
`--processes-per-container` real processes (`sleep`, pinned to the shared CPU as the kubelet's
cpuset would), and every tenth container also a Python process with `--threads` threads that
touched 8 MiB: all read through this machine's real /proc (numa_maps included). One pod holds
the last CPU exclusively. `--sample 0`: the reads alone (the sample's wait is the user's choice
and not a cost).

    python tests/bench/bench_node_processes.py [--pods 50] [--processes-per-container 5]
"""
from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from numaguard.lint.node.inspect import inspect_node, render_text  # noqa: E402
from numaguard.lint.node.processes import ProcessOptions  # noqa: E402

from node_processes_fixture import REAL_CPUS, Child, Container, HostNode, Pod, write_atomic  # noqa: E402

A, B = REAL_CPUS[0], REAL_CPUS[-1]


def build(top: Path, pods: int, threads: int) -> tuple[HostNode, list[tuple[Pod, Container]]]:
    """The pods (pod 0's app holds B; every other container is in the shared pool, A), started."""
    made = [Pod("shop", "pinned-0", [Container("app", exclusive=[B], memory_numa=[0], effective=str(B),
                                               child=Child(cpus=[B], mib=8, comm="app",
                                                           threads=[{"name": f"w{i}"} for i in range(threads)])),
                                     Container("sidecar", effective=str(A))])]
    for p in range(1, pods):
        made.append(Pod("batch", f"web-{p}", [Container(name, effective=str(A)) for name in ("web", "log")],
                        qos="burstable"))
    containers = [(pod, c) for pod in made for c in pod.containers]
    for i, (_pod, c) in enumerate(containers):
        if i % 10 == 5:
            c.child = Child(cpus=[A], mib=8, comm=f"py-{i}", threads=[{"name": f"t{j}"} for j in range(threads)])
    node = HostNode(top, made).write()
    node.start()
    return node, containers


def add_sleepers(node: HostNode, containers: list[tuple[Pod, Container]], each: int) -> list[subprocess.Popen]:
    """`each` sleeping processes per container, pinned to its cgroup's CPUs, in its cgroup.procs."""
    sleepers = []
    for pod, c in containers:
        cpus = [int(x) for x in (c.effective or str(A)).split(",")]
        started = [subprocess.Popen(["sleep", "3600"], preexec_fn=lambda cpus=cpus: os.sched_setaffinity(0, cpus))
                   for _ in range(each)]
        sleepers += started
        pids = ([c.pid] if c.process else []) + [s.pid for s in started]
        write_atomic(node.container_cgroup(pod, c) / "cgroup.procs", "".join(f"{p}\n" for p in pids))
    return sleepers


def timed(root: Path, options: ProcessOptions | None) -> tuple[float, float, str]:
    """(wall seconds, CPU seconds of this process, the text report): on a loaded machine the CPU
    time moves less than the wall time."""
    wall, cpu = time.perf_counter(), time.process_time()
    report = inspect_node(root=str(root), processes=options)
    text = render_text(report)
    return time.perf_counter() - wall, time.process_time() - cpu, text


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--pods", type=int, default=50)
    parser.add_argument("--processes-per-container", type=int, default=5)
    parser.add_argument("--threads", type=int, default=8)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    top = Path(tempfile.mkdtemp(prefix="ng-bench-", dir="/tmp"))
    node, sleepers = None, []
    try:
        node, containers = build(top, args.pods, args.threads)
        sleepers = add_sleepers(node, containers, args.processes_per_container)
        node.serve()                                              # after the forks: gRPC warns of them
        options = ProcessOptions(sample=0)
        *_, text = timed(node.root, options)                      # warm: imports, page cache
        plain, kernel = [], []
        for _ in range(args.rounds):                              # alternate, so load drifts hit both
            plain.append(timed(node.root, None)[:2])
            kernel.append(timed(node.root, options)[:2])
        seen = next(line for line in text.splitlines() if "processes " in line and "/proc" in line)
        processes = len(sleepers) + sum(1 for _p, c in containers if c.process)
        print(f"node: {len(containers)} containers; {seen.strip()}")
        print(f"  summary: {text.splitlines()[-1]}")
        for what, index in (("wall", 0), ("CPU", 1)):
            base = statistics.median(t[index] for t in plain)
            cost = statistics.median(t[index] for t in kernel)
            print(f"{what} time, median of {args.rounds}: node inspect {base * 1000:.1f} ms; --processes --sample 0 "
                  f"{cost * 1000:.1f} ms = {cost / base:.2f}x, +{(cost - base) / processes * 1e6:.0f} us per process")
    finally:
        for s in sleepers:
            s.kill()
            s.wait()
        if node is not None:
            node.stop()
        shutil.rmtree(top, ignore_errors=True)


if __name__ == "__main__":
    main()
