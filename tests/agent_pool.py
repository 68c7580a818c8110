"""Real processes for the node agent, and the real programs around it.

`real_pool` starts, on this machine, the two pods the agent must tell apart (the issue's
"one alone on its CPU and one sharing its CPU with a busy sibling"):

* shop/alone-0 app: exclusive CPU A, a thread spinning on A; its threads are reniced to -10
  where the test may, so that the rest of this (shared, busy) machine stands in for nothing
  on A: "alone" is relative on a machine other sessions load;
* shop/contended-0 app: exclusive CPU B, a thread spinning on B, and in the same container a
  busy sibling process spinning on B too. Two always-runnable threads on one CPU: at every
  instant one of them waits, so the container's run-queue wait grows at least as fast as the
  clock, whatever else runs.

Both in the kubelet's cgroup layout, either made by the kernel (`cgroups="kernel"`: directories
in this machine's cgroup2 mount, the processes moved in through cgroup.procs; where root may
write there) or written in the kernel's formats holding the children's real ids
(`cgroups="files"`, tests/node_processes_fixture.py). The kubelet's side is the fixture's
(checkpoints, PodResources over gRPC). CPU 7 of the node description is the reserved, shared CPU,
so A and B can both be exclusive on a 2-CPU machine.

`served_agent` runs the `numaguard node agent` console script on 127.0.0.1; `prometheus_server`
runs Debian's `prometheus` (tests/conftest.py TOOLS) scraping it every two seconds, with rules.
"""
from __future__ import annotations

import json
import os
import secrets
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import urllib.parse
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from agent_fixture import SERVING, http_get
from conftest import numaguard_exe, tool
from node_processes_fixture import REAL_CPUS, Child, Container, HostNode, Pod, start_child, stop_child

A, B = REAL_CPUS[0], REAL_CPUS[-1]
SHARED_CPU = 7                                   # in the node description only: nothing runs there
SPIN = {"name": "spin", "spin": True}


def cgroup2_mount() -> tuple[Path | None, str]:
    """This machine's cgroup2 mount if root may make cgroups in it, else why not."""
    mounts = [line.split()[1] for line in Path("/proc/self/mounts").read_text().splitlines()
              if line.split()[2] == "cgroup2"]
    if not mounts:
        return None, "no cgroup2 mount on this machine"
    mount = Path(mounts[0])
    if not os.access(mount, os.W_OK):
        return None, f"{mount} is not writable here (not root, or a read-only cgroup mount)"
    return mount, ""


def controllers(mount: Path) -> set[str]:
    """The controllers a cgroup made under `mount` can enable (cgroup.controllers)."""
    return set((mount / "cgroup.controllers").read_text().split())


@dataclass
class RealPool:
    node: HostNode
    alone: Container
    contended: Container
    sibling: object                               # the busy sibling's Popen
    cgroups: str
    scopes: dict[str, Path] = field(default_factory=dict)   # container -> its cgroup (kernel's or files)

    def cgroup(self, pod: str) -> Path:
        return self.scopes[pod]


def _renice(pid: int, nice: int) -> None:
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            os.setpriority(os.PRIO_PROCESS, int(tid), nice)
        except PermissionError:
            return                                # not root: the test still holds, with less margin


def _tids(pid: int) -> list[int]:
    return sorted(int(t) for t in os.listdir(f"/proc/{pid}/task"))


@contextmanager
def kernel_cgroups(node: HostNode, pods: list[Pod], mount: Path, prefix: str):
    """Each pod's (first) container cgroup made by the kernel in `mount`, the node's cgroup root a
    link to them: yields {pod name: its container's cgroup}. Exit once the processes have stopped:
    the folders are removed then."""
    base = mount / f"{prefix}-{secrets.token_hex(4)}"
    base.mkdir()
    made: list[Path] = []
    try:
        shutil.rmtree(node.cgroup_root)
        node.cgroup_root.symlink_to(base)
        scopes = {}
        for pod in pods:
            scope = node.container_cgroup(pod, pod.containers[0])
            for folder in reversed([scope, *list(scope.parents)[:2]]):
                if not folder.exists():
                    folder.mkdir()
                    made.append(folder)
            scopes[pod.name] = scope
        yield scopes
    finally:
        for folder in reversed(made):
            for _ in range(50):                   # the children's exit reaches the cgroup a moment later
                try:
                    folder.rmdir()
                    break
                except OSError:
                    time.sleep(0.1)
        base.rmdir()


@contextmanager
def real_pool(top: Path, cgroups: str):
    alone = Container("app", exclusive=[A], memory_numa=[0], effective=str(A),
                      child=Child(cpus=[A], comm="alone", threads=[SPIN]))
    contended = Container("app", exclusive=[B], memory_numa=[0], effective=str(B),
                          child=Child(cpus=[B], comm="contended", threads=[SPIN]))
    pods = [Pod("shop", "alone-0", [alone]), Pod("shop", "contended-0", [contended])]
    node = HostNode(top, pods, numa_of={A: 0, B: 0, SHARED_CPU: 0}, reserved=SHARED_CPU).write()
    sibling = None
    with ExitStack() as made:                     # the kernel's cgroups go once the processes are gone
        try:
            node.start()
            sibling = start_child(Child(cpus=[B], comm="sibling", threads=[SPIN]))
            _renice(alone.pid, -10)
            pool = RealPool(node, alone, contended, sibling, cgroups)
            if cgroups == "kernel":
                mount, why = cgroup2_mount()
                if mount is None:
                    raise RuntimeError(why)
                pool.scopes.update(made.enter_context(kernel_cgroups(node, pods, mount, "ng-agent")))
                (pool.scopes["alone-0"] / "cgroup.procs").write_text(f"{alone.pid}\n")
                for pid in (contended.pid, sibling.pid):
                    (pool.scopes["contended-0"] / "cgroup.procs").write_text(f"{pid}\n")
            else:
                for pod in pods:
                    pool.scopes[pod.name] = node.container_cgroup(pod, pod.containers[0])
                scope = pool.scopes["contended-0"]
                (scope / "cgroup.procs").write_text(f"{contended.pid}\n{sibling.pid}\n")
                (scope / "cgroup.threads").write_text(
                    "".join(f"{t}\n" for t in _tids(contended.pid) + _tids(sibling.pid)))
            node.serve()
            yield pool
        finally:
            if sibling is not None:
                stop_child(sibling)
            node.stop()


@contextmanager
def served_agent(root: Path, *extra: str):
    """`numaguard node agent` as a process on 127.0.0.1, port chosen by the kernel:
    (process, base URL, the stderr lines so far)."""
    process = subprocess.Popen([numaguard_exe(), "node", "agent", "--root", str(root), "--listen", "127.0.0.1:0",
                                *extra], stderr=subprocess.PIPE, text=True)
    lines: list[str] = []
    try:
        for line in process.stderr:
            lines.append(line.rstrip("\n"))
            found = SERVING.search(line)
            if found:
                yield process, f"http://{found.group(1)}", lines
                break
        else:
            raise AssertionError("the agent did not start: " + "\n".join(lines))
    finally:
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextmanager
def prometheus_server(targets: list[str], rule_files: list[Path], labels: dict[str, str] | None = None,
                      interval: str = "2s"):
    """Debian's prometheus scraping `targets` (host:port) every `interval`, honouring their
    labels as deploy/monitoring/podmonitor.yaml has the operator do, evaluating `rule_files` as
    often; yields its base URL once it answers. (A scrape that outlasts its timeout marks every
    series stale: on a machine other sessions load, a second is too short for that.)"""
    folder = Path(tempfile.mkdtemp(prefix="ng-prom-", dir="/tmp"))
    port = free_port()
    config = {"global": {"scrape_interval": interval, "evaluation_interval": interval, "scrape_timeout": interval},
              "rule_files": [str(p) for p in rule_files],
              "scrape_configs": [{"job_name": "numaguard-node-agent", "honor_labels": True,
                                  "static_configs": [{"targets": targets, "labels": labels or {}}]}]}
    (folder / "prometheus.yml").write_text(yaml.safe_dump(config))
    log = (folder / "prometheus.log").open("w")
    process = subprocess.Popen([tool("prometheus"), f"--config.file={folder / 'prometheus.yml'}",
                                f"--storage.tsdb.path={folder / 'data'}", f"--web.listen-address=127.0.0.1:{port}",
                                "--log.level=warn"], stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    try:
        for _ in range(600):
            if process.poll() is not None:
                raise AssertionError("prometheus exited: " + (folder / "prometheus.log").read_text())
            try:
                if http_get(f"{url}/-/ready", timeout=5)[0] == 200:
                    break
            except OSError:
                pass
            time.sleep(0.1)
        yield url
    finally:
        process.terminate()
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        log.close()
        shutil.rmtree(folder, ignore_errors=True)


def query(url: str, expr: str) -> list[dict]:
    """An instant query's result vector (each {"metric": labels, "value": [time, "value"]})."""
    status, _kind, body = http_get(f"{url}/api/v1/query?query={urllib.parse.quote(expr)}")
    answer = json.loads(body)
    assert status == 200 and answer["status"] == "success", body
    return answer["data"]["result"]


def wait_for(url: str, expr: str, count: int, attempts: int = 600) -> list[dict]:
    """The query's result once it has `count` series (Prometheus scrapes and evaluates every
    second; this waits for its first scrapes and rule evaluations, not for a deadline)."""
    for _ in range(attempts):
        result = query(url, expr)
        if len(result) >= count:
            return result
        time.sleep(0.2)
    raise AssertionError(f"{expr}: {len(result)} series, expected {count}")
