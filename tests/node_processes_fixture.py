"""A node for `node inspect --processes` whose processes are real: child processes of the test,
pinned with sched_setaffinity, with named threads that burn CPU and memory they touch page by
page, read through the real /proc; around them a host root with what the kubelet and the
container runtime leave on a node (checkpoints, KubeletConfiguration, pod log directories,
/var/log/containers links, a sysfs) and a cgroup v2 tree in the kernel's file formats
(Documentation/admin-guide/cgroup-v2.rst: `cpuset.cpus.effective` "0-4,6,8-10", `cpu.max`
"max 100000", `cpu.stat` flat keyed with `nr_periods`/`nr_throttled`/`throttled_usec` when the
cpu controller is on, `cgroup.procs` one PID per line, `cgroup.threads` one TID per line) laid
out as the kubelet and containerd
name their cgroups, holding the children's real PIDs. `<root>/proc` is a symlink to /proc.

Used by tests/test_node_processes.py and README's canary walk-through (the `--processes` step).
"""
from __future__ import annotations

import json
import os
import secrets
import select
import shutil
import subprocess
import sys
import tempfile
from concurrent import futures
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import grpc

from numaguard.lint.k8s.checkpoints import cpu_checkpoint_json, memory_checkpoint_json
from numaguard.lint.k8s.cpuset import format_cpuset
from numaguard.lint.node.podresources import api_pb2_grpc

GiB, MiB = 2**30, 2**20
REAL_CPUS = sorted(os.sched_getaffinity(0))

# The child: pin the process (its threads inherit it), name and start the threads (each may pin
# itself, burn CPU for a while, and spin on for as long as the process lives), touch its memory
# page by page, re-pin threads that block meanwhile ("repin", as an agent calling
# sched_setaffinity on another's thread would), then print its pid and wait for stdin to close.
CHILD = r"""
import json, os, sys, threading, time
spec = json.loads(sys.argv[1])
def name(text):
    with open("/proc/thread-self/comm", "w") as f:
        f.write(text)
if spec.get("cpus") is not None:
    os.sched_setaffinity(0, spec["cpus"])
memory = bytearray(spec.get("mib", 0) * 2**20)
for i in range(0, len(memory), 4096):
    memory[i] = 1
done, stop, tids = [], threading.Event(), {}
def worker(t):
    tids[t["name"]] = threading.get_native_id()
    name(t["name"])
    if t.get("cpus") is not None:
        os.sched_setaffinity(0, t["cpus"])
    end = time.monotonic() + t.get("burn", 0)
    while time.monotonic() < end:
        pass
    time.sleep(0.02)
    done.append(t["name"])
    while t.get("spin") and not stop.is_set():
        pass
    stop.wait()
for t in spec.get("threads", []):
    threading.Thread(target=worker, args=(t,), daemon=True).start()
while len(done) < len(spec.get("threads", [])):
    time.sleep(0.01)
repinned = [t for t in spec.get("threads", []) if t.get("repin") is not None]
if repinned:
    time.sleep(0.05)                   # they are blocked by now: the kernel leaves them where they ran
for t in repinned:
    os.sched_setaffinity(tids[t["name"]], t["repin"])
name(spec.get("comm", "main"))
print(os.getpid(), flush=True)
sys.stdin.read()
"""

CPU_STAT = """usage_usec {usage}
user_usec {user}
system_usec {system}
core_sched.force_idle_usec 0
nr_periods {periods}
nr_throttled {throttled}
throttled_usec {throttled_usec}
nr_bursts 0
burst_usec 0
"""


def cpu_stat(periods: int = 0, throttled: int = 0, throttled_usec: int = 0, usage: int = 1_200_000) -> str:
    return CPU_STAT.format(usage=usage, user=usage * 3 // 4, system=usage - usage * 3 // 4, periods=periods,
                           throttled=throttled, throttled_usec=throttled_usec)


@dataclass
class Child:
    """What a container's process does (see CHILD)."""

    cpus: list[int] | None = None
    threads: list[dict] = field(default_factory=list)
    mib: int = 0
    comm: str = "main"


@dataclass
class Container:
    name: str
    exclusive: list[int] = field(default_factory=list)       # the CPU Manager's entry ([]: shared)
    memory_numa: list[int] = field(default_factory=list)     # the Memory Manager's entry ([]: none)
    effective: str | None = None                             # cpuset.cpus.effective (None: no cpuset controller)
    mems: str | None = "0"
    cpu_max: str = "max 100000"
    cpu_stat: str | None = field(default_factory=cpu_stat)   # None: no cpu controller (usage only)
    child: Child | None = None
    running: bool = True                                     # False: exited, its cgroup removed
    id: str = field(default_factory=lambda: secrets.token_hex(32))
    process: subprocess.Popen | None = None

    @property
    def pid(self) -> int:
        return self.process.pid

    def tids(self) -> list[int]:
        """The threads of its process (none when it has none running)."""
        if self.process is None:
            return []
        return sorted(int(t) for t in os.listdir(f"/proc/{self.pid}/task"))


@dataclass
class Pod:
    namespace: str
    name: str
    containers: list[Container]
    qos: str = "guaranteed"
    pod_cpus: list[int] = field(default_factory=list)          # KEP-5526 podEntries: the pod's CPU set
    pod_memory_numa: list[int] = field(default_factory=list)   # and its pod-level memory's NUMA nodes
    uid: str = field(default_factory=lambda: "-".join(secrets.token_hex(n) for n in (4, 2, 2, 2, 6)))


KUBELET_CONFIG = """apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
cgroupDriver: {driver}
featureGates: {{PodLevelResourceManagers: true}}
cpuManagerPolicy: static
memoryManagerPolicy: Static
topologyManagerPolicy: single-numa-node
topologyManagerScope: pod
reservedSystemCPUs: "{reserved}"
kubeReserved: {{memory: 924Mi}}
reservedMemory:
  - numaNode: 0
    limits: {{memory: 1Gi}}
"""


class HostNode:
    """`top/host`: the host root. `numa_of`: CPU id -> NUMA node of the node description
    (default: the first and the last CPU this process may use, both on NUMA 0); `reserved`: reservedSystemCPUs (default the
    first CPU). `proc`: "link" makes `<root>/proc` a symlink to /proc; "dir" a directory with a
    symlink per child (`/proc/PID`), where a test may add processes of its own making."""

    def __init__(self, top: Path, pods: list[Pod], numa_of: dict[int, int] | None = None,
                 layout: str = "systemd", links: bool = True, reserved: int | None = None,
                 proc: str = "link") -> None:
        self.root = top / "host"
        self.pods, self.layout, self.links, self.proc = pods, layout, links, proc
        self.numa_of = numa_of or {REAL_CPUS[0]: 0, REAL_CPUS[-1]: 0}
        self.reserved = min(self.numa_of) if reserved is None else reserved
        self.server: grpc.Server | None = None

    # ---------------------------------------------------------------- the files
    def write(self) -> "HostNode":
        self._sysfs()
        state = self.root / "var/lib/kubelet"
        (state / "pod-resources").mkdir(parents=True, exist_ok=True)
        (state / "config.yaml").write_text(KUBELET_CONFIG.format(driver=self.layout, reserved=self.reserved))
        self.write_checkpoints()
        for pod in self.pods:
            for c in pod.containers:
                (self.root / "var/log/pods" / f"{pod.namespace}_{pod.name}_{pod.uid}" / c.name).mkdir(
                    parents=True, exist_ok=True)
        if self.links:
            self.write_links()
        if self.proc == "link":
            (self.root / "proc").symlink_to("/proc")
        else:
            (self.root / "proc").mkdir()
        self._cgroups()
        return self

    def _sysfs(self) -> None:
        cpus = sorted(self.numa_of)
        files = {"devices/system/cpu/online": format_cpuset(cpus)}
        for i, cpu in enumerate(cpus):
            files[f"devices/system/cpu/cpu{cpu}/topology/physical_package_id"] = str(self.numa_of[cpu])
            files[f"devices/system/cpu/cpu{cpu}/topology/core_id"] = str(i)
            files[f"devices/system/cpu/cpu{cpu}/online"] = "1"
        nodes = sorted(set(self.numa_of.values()))
        for numa in nodes:
            base = f"devices/system/node/node{numa}"
            files[f"{base}/cpulist"] = format_cpuset(c for c in cpus if self.numa_of[c] == numa)
            files[f"{base}/distance"] = " ".join("10" if n == numa else "21" for n in nodes)
            files[f"{base}/meminfo"] = f"Node {numa} MemTotal:       {16 * GiB // 1024} kB"
        for rel, text in files.items():
            path = self.root / "sys" / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text + "\n")

    def write_checkpoints(self) -> None:
        state = self.root / "var/lib/kubelet"
        exclusive = {c_cpu for pod in self.pods for c in pod.containers for c_cpu in c.exclusive}
        exclusive |= {cpu for pod in self.pods for cpu in pod.pod_cpus}
        entries = {pod.uid: {c.name: format_cpuset(c.exclusive) for c in pod.containers if c.exclusive}
                   for pod in self.pods}
        (state / "cpu_manager_state").write_text(json.dumps(cpu_checkpoint_json(
            "static", format_cpuset(set(self.numa_of) - exclusive), {u: e for u, e in entries.items() if e},
            {pod.uid: format_cpuset(pod.pod_cpus) for pod in self.pods if pod.pod_cpus})))
        nodes = sorted(set(self.numa_of.values()))
        held = {n: 0 for n in nodes}
        memory_entries: dict = {}
        memory_pods = {}
        assignments = {n: 0 for n in nodes}
        for pod in self.pods:
            if pod.pod_memory_numa:
                # AllocatePod (memorymanager policy_static.go): the pod's blocks, and an entry for
                # every container, the shared ones holding the pod's shared pool
                block = {"numaAffinity": pod.pod_memory_numa, "type": "memory", "size": 256 * MiB}
                held[pod.pod_memory_numa[0]] += 256 * MiB
                assignments[pod.pod_memory_numa[0]] += 1
                memory_pods[pod.uid] = {"memoryBlocks": [block]}
                memory_entries[pod.uid] = {c.name: [block] for c in pod.containers}
                continue
            for c in pod.containers:
                if c.memory_numa:
                    held[c.memory_numa[0]] += 256 * MiB
                    assignments[c.memory_numa[0]] += 1
                    memory_entries.setdefault(pod.uid, {})[c.name] = [
                        {"numaAffinity": c.memory_numa, "type": "memory", "size": 256 * MiB}]
        machine = {}
        for n in nodes:
            reserved = GiB if n == 0 else 0
            allocatable = 16 * GiB - reserved
            machine[str(n)] = {"numberOfAssignments": assignments[n],
                               "cells": [n], "memoryMap": {"memory": {
                                   "total": 16 * GiB, "systemReserved": reserved, "allocatable": allocatable,
                                   "reserved": held[n], "free": allocatable - held[n]}}}
        (state / "memory_manager_state").write_text(json.dumps(memory_checkpoint_json("Static", machine,
                                                                                      memory_entries, memory_pods)))

    def write_links(self) -> None:
        """/var/log/containers/<pod>_<namespace>_<container>-<id>.log -> the pod log file."""
        folder = self.root / "var/log/containers"
        folder.mkdir(parents=True, exist_ok=True)
        for pod in self.pods:
            for c in pod.containers:
                link = folder / f"{pod.name}_{pod.namespace}_{c.name}-{c.id}.log"
                if not link.is_symlink():
                    link.symlink_to(f"/var/log/pods/{pod.namespace}_{pod.name}_{pod.uid}/{c.name}/0.log")

    @property
    def cgroup_root(self) -> Path:
        return self.root / "sys/fs/cgroup"

    def pod_cgroup(self, pod: Pod) -> Path:
        """As the kubelet names it (cgroup_manager_linux.go ToSystemd / ToCgroupfs)."""
        uid = pod.uid.replace("-", "_")
        if self.layout == "systemd":
            if pod.qos == "guaranteed":
                return self.cgroup_root / f"kubepods.slice/kubepods-pod{uid}.slice"
            return self.cgroup_root / f"kubepods.slice/kubepods-{pod.qos}.slice/kubepods-{pod.qos}-pod{uid}.slice"
        parts = ["kubepods"] + ([] if pod.qos == "guaranteed" else [pod.qos]) + [f"pod{pod.uid}"]
        return self.cgroup_root.joinpath(*parts)

    def container_cgroup(self, pod: Pod, c: Container) -> Path:
        """containerd's name: cri-containerd-<id>.scope under systemd, <id> under cgroupfs."""
        return self.pod_cgroup(pod) / (f"cri-containerd-{c.id}.scope" if self.layout == "systemd" else c.id)

    def _cgroups(self) -> None:
        every = format_cpuset(self.numa_of)
        mems = ",".join(map(str, sorted(set(self.numa_of.values()))))
        controllers = "cpuset cpu io memory hugetlb pids rdma misc\n"
        (self.cgroup_root).mkdir(parents=True, exist_ok=True)
        (self.cgroup_root / "cgroup.controllers").write_text(controllers)
        for pod in self.pods:
            pod_dir = self.pod_cgroup(pod)
            for folder in [pod_dir, *pod_dir.relative_to(self.cgroup_root).parents]:
                path = folder if folder.is_absolute() else self.cgroup_root / folder
                if path == self.cgroup_root:
                    continue
                path.mkdir(parents=True, exist_ok=True)
                (path / "cgroup.controllers").write_text(controllers)
                (path / "cpuset.cpus.effective").write_text(every + "\n")
                (path / "cpuset.mems.effective").write_text(mems + "\n")
                (path / "cpu.stat").write_text(cpu_stat())
            sandbox = self.pod_cgroup(pod) / (f"cri-containerd-{secrets.token_hex(32)}.scope"
                                              if self.layout == "systemd" else secrets.token_hex(32))
            sandbox.mkdir()
            (sandbox / "cgroup.procs").write_text("")
            for c in pod.containers:
                if c.running:
                    self.write_container_cgroup(pod, c)

    def write_container_cgroup(self, pod: Pod, c: Container) -> None:
        path = self.container_cgroup(pod, c)
        path.mkdir(parents=True, exist_ok=True)
        write_atomic(path / "cgroup.procs", f"{c.pid}\n" if c.process else "")
        write_atomic(path / "cgroup.threads", "".join(f"{tid}\n" for tid in c.tids()))
        for name, text in (("cpuset.cpus.effective", c.effective), ("cpuset.mems.effective", c.mems),
                           ("cpu.max", c.cpu_max)):
            if text is not None:
                write_atomic(path / name, text + "\n")
            elif (path / name).exists():
                (path / name).unlink()
        write_atomic(path / "cpu.stat", c.cpu_stat if c.cpu_stat is not None else
                     "usage_usec 1200000\nuser_usec 900000\nsystem_usec 300000\n")

    # ---------------------------------------------------------------- PodResources
    def listed(self) -> dict:
        """What the kubelet's PodResources List answers for the pods (protobuf's JSON mapping)."""
        pods = []
        for pod in self.pods:
            containers = []
            for c in pod.containers:
                entry: dict = {"name": c.name}
                if c.exclusive:
                    entry["cpuIds"] = [str(cpu) for cpu in c.exclusive]
                numa = c.memory_numa or pod.pod_memory_numa     # its entry: its own, or the pod's shared pool
                if numa:
                    entry["memory"] = [{"memoryType": "memory", "size": str(256 * MiB),
                                        "topology": {"nodes": [{"ID": str(n)} for n in numa]}}]
                containers.append(entry)
            pods.append({"name": pod.name, "namespace": pod.namespace, "containers": containers})
        return {"podResources": pods}

    def allocatable(self) -> dict:
        return {"cpuIds": [str(c) for c in sorted(self.numa_of) if c != self.reserved]}

    def serve(self) -> "HostNode":
        from test_node_inspect import RecordedLister

        self.server = grpc.server(futures.ThreadPoolExecutor(max_workers=2))
        api_pb2_grpc.add_PodResourcesListerServicer_to_server(RecordedLister(self.listed(), self.allocatable()),
                                                              self.server)
        self.server.add_insecure_port(f"unix:{self.root / 'var/lib/kubelet/pod-resources/kubelet.sock'}")
        self.server.start()
        return self

    # ---------------------------------------------------------------- processes
    def start(self) -> "HostNode":
        for pod in self.pods:
            for c in pod.containers:
                if c.child is not None:
                    c.process = start_child(c.child)
                    self.write_container_cgroup(pod, c)
                    if self.proc == "dir":           # /proc/TID reaches a thread too, as in procfs
                        for tid in c.tids():
                            (self.root / "proc" / str(tid)).symlink_to(f"/proc/{tid}")
        return self

    def stop(self) -> None:
        if self.server is not None:
            self.server.stop(None)
        for pod in self.pods:
            for c in pod.containers:
                if c.process is not None:
                    stop_child(c.process)


def start_child(child: Child) -> subprocess.Popen:
    spec = {"cpus": child.cpus, "threads": child.threads, "mib": child.mib, "comm": child.comm}
    process = subprocess.Popen([sys.executable, "-c", CHILD, json.dumps(spec)], stdin=subprocess.PIPE,
                               stdout=subprocess.PIPE, text=True)
    ready, _, _ = select.select([process.stdout], [], [], 60)
    if not ready or process.stdout.readline().strip() != str(process.pid):
        stop_child(process)
        raise RuntimeError("the child process did not get ready")
    return process


def stop_child(process: subprocess.Popen) -> None:
    if process.stdin and not process.stdin.closed:
        process.stdin.close()
    try:
        process.wait(timeout=10)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()
    if process.stdout:
        process.stdout.close()


def short_tmp():
    """A fresh directory under /tmp, removed afterwards (a generator: `pytest.fixture(short_tmp)`).
    Short, so the PodResources socket's path stays under the 108 bytes of a unix socket name."""
    folder = Path(tempfile.mkdtemp(prefix="ng-", dir="/tmp"))
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


@contextmanager
def running(top: Path, pods: list[Pod], **kw):
    """The host root written, its processes started and PodResources served; stopped after."""
    node = HostNode(top, pods, **kw).write()
    try:
        yield node.start().serve()
    finally:
        node.stop()


def write_atomic(path: Path, text: str) -> None:
    """Replace a file at once, as a reader of a kernel file never sees half of it."""
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text)
    os.replace(tmp, path)


__all__ = ["HostNode", "Pod", "Container", "Child", "cpu_stat", "REAL_CPUS", "start_child", "stop_child", "running",
           "short_tmp",
           "write_atomic"]
