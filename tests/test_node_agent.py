"""`numaguard node agent`: the metrics of one scrape, exactly, on a node whose processes are real
children of the test (pinned with sched_setaffinity, read through the real /proc) in a cgroup
tree written in the kernel's formats (tests/node_processes_fixture.py), with the kubelet's side
as in test_node_inspect.py (checkpoints, KubeletConfiguration, a real gRPC PodResources server).
Counters a test must set exactly come from threads written as the kernel writes them
(tests/agent_fixture.py). The HTTP side runs the real console script."""
from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import urllib.request
from contextlib import contextmanager
from pathlib import Path

import pytest

from numaguard.lint.agent_metrics import BY_NAME, CONTAINER, METRICS, SOURCE_KEYS, render_markdown
from numaguard.lint.k8s.cpuset import format_cpuset
from numaguard.lint.node.agent import NodeAgent
from numaguard.lint.node.inventory import Inventory
from numaguard.lint.node.kernel import read_task, schedstat_offered

from agent_fixture import (fake_thread, http_get, hugetlb_numa_stat, labels, memory_stat, numa_stat, parse,
                           psi, scrape, write_files)
from agent_pool import served_agent
from conftest import REPO, numaguard_exe
from node_processes_fixture import REAL_CPUS, Child, Container, HostNode, Pod, running, short_tmp, write_atomic

A, B = REAL_CPUS[0], REAL_CPUS[-1]
MiB, GiB = 2**20, 2**30
two_cpus = pytest.mark.skipif(len(REAL_CPUS) < 2, reason="the pinning tests need two CPUs this process may use")
ALLOWED_LABELS = {"namespace", "pod", "container", "pool", "numa_node", "locality", "kind", "source"}


top = pytest.fixture(short_tmp)


class Agent:
    """A NodeAgent on the node, with its log lines."""

    def __init__(self, node: HostNode, **kw) -> None:
        self.lines: list[str] = []
        self.inventory = Inventory(str(node.root))
        self.agent = NodeAgent(self.inventory, str(node.root), min_interval=0, log=self.lines.append, **kw)

    def scrape(self):
        return scrape(self.agent)

    def close(self) -> None:
        self.inventory.close()


@contextmanager
def agent_on(node: HostNode, **kw):
    agent = Agent(node, **kw)
    try:
        yield agent
    finally:
        agent.close()


def app(pool: str = "exclusive", container: str = "app", pod: str = "pinned-0", **extra: str):
    return labels(namespace="shop", pod=pod, container=container, pool=pool, **extra)


def sidecar(**extra: str):
    return app("shared", "sidecar", **extra)


def pinned_pod(**app_settings) -> Pod:
    """shop/pinned-0: app with exclusive CPU B (its threads pinned there), memory on NUMA 0, and
    a sidecar in the shared pool, pinned to A."""
    settings = {"exclusive": [B], "memory_numa": [0], "effective": str(B),
                "child": Child(cpus=[B], mib=8, comm="app", threads=[{"name": "burn", "burn": 0.2}, {"name": "idle"}])}
    settings.update(app_settings)
    return Pod("shop", "pinned-0", [Container("app", **settings),
                                    Container("sidecar", effective=str(A), child=Child(cpus=[A], comm="sidecar"))])


def family(samples, name: str) -> dict:
    return samples.get(name, {})


# ------------------------------------------------------------------------------- one scrape, everything

@two_cpus
def test_a_pinned_pod_as_metrics(top):
    with running(top, [pinned_pod()]) as node, agent_on(node) as agent:
        got = agent.scrape()
    assert family(got, "numaguard_container_exclusive_cpus") == {app(): 1, sidecar(): 0}
    assert family(got, "numaguard_container_assigned_numa_nodes") == {app(numa_node="0"): 1}
    assert family(got, "numaguard_container_cpuset_matches") == {app(): 1, sidecar(): 1}
    assert family(got, "numaguard_container_mems_matches") == {app(): 1}
    assert family(got, "numaguard_container_threads") == {app(): 3, sidecar(): 1}
    assert family(got, "numaguard_container_threads_outside_exclusive") == {app(): 0, sidecar(): 0}
    # every thread has run by now: one sample each, none outside (all pinned to their own CPUs)
    assert family(got, "numaguard_container_thread_samples_total") == {app(): 3, sidecar(): 1}
    assert family(got, "numaguard_container_thread_samples_outside_total") == {app(): 0, sidecar(): 0}
    # cpu.stat as the fixture writes it: usage_usec 1200000, no period yet
    assert family(got, "numaguard_container_cpu_usage_seconds_total") == {app(): 1.2, sidecar(): 1.2}
    for name in ("cpu_periods", "cpu_throttled_periods", "cpu_throttled_seconds"):
        assert family(got, f"numaguard_container_{name}_total") == {app(): 0, sidecar(): 0}
    # the real threads' schedstat and status: real, so only their shape is certain
    assert set(family(got, "numaguard_container_runqueue_wait_seconds_total")) == {app(), sidecar()}
    assert all(v >= 0 for v in family(got, "numaguard_container_runqueue_wait_seconds_total").values())
    assert set(family(got, "numaguard_container_involuntary_context_switches_total")) == {app(), sidecar()}
    assert family(got, "numaguard_node_shared_pool_cpus") == {(): 1}
    assert family(got, "numaguard_agent_containers") == {(): 2}
    assert family(got, "numaguard_agent_containers_unseen") == {(): 0}
    # the fixture's cgroup files have no memory controller, PSI or hugetlb; its sysfs no numastat
    missing = {"memory_controller", "memory_numa_stat", "numa_balancing", "hugetlb", "psi", "numastat"}
    assert family(got, "numaguard_agent_source_available") == {
        labels(source=key): 0 if key in missing else 1 for key in SOURCE_KEYS}
    for name in ("memory_numa_bytes", "hugepages_numa_bytes", "page_faults_total", "cpu_pressure_seconds_total"):
        assert family(got, f"numaguard_container_{name}") == {}, name       # absent, never zero
    assert agent.lines == [
        "source memory_controller not available: no memory.stat in the cgroup of shop/pinned-0 app (memory controller "
        "not enabled); not exported: numaguard_container_page_faults_total, "
        "numaguard_container_major_page_faults_total",
        "source memory_numa_stat not available: no memory.numa_stat in the cgroup of shop/pinned-0 app; not exported: "
        "numaguard_container_memory_numa_bytes",
        "source numa_balancing not available: no memory.stat in the cgroup of shop/pinned-0 app; not exported: "
        "numaguard_container_numa_pages_migrated_total",
        f"source hugetlb not available: no hugepage sizes in {node.root}/sys/kernel/mm/hugepages; not exported: "
        "numaguard_container_hugepages_numa_bytes",
        "source psi not available: no cpu.pressure or memory.pressure in the cgroup of shop/pinned-0 app (CONFIG_PSI "
        "off, or booted with psi=0); not exported: numaguard_container_cpu_pressure_seconds_total, "
        "numaguard_container_memory_pressure_seconds_total",
        f"source numastat not available: no {node.root}/sys/devices/system/node/node*/numastat (a kernel without "
        "NUMA); not exported: numaguard_node_numa_hit_total, numaguard_node_numa_miss_total, "
        "numaguard_node_numa_other_node_total"]


@two_cpus
def test_every_series_has_bounded_documented_labels(top):
    """Each series' labels are those its table row names (no thread or process id), and every
    metric of the table is exported once the node offers every source."""
    pod = pinned_pod()
    with running(top, [pod], numa_of={A: 0, B: 1}) as node:
        write_everything(node, pod)
        with agent_on(node) as agent:
            got = agent.scrape()
    exported = {name.removesuffix("_total") for name in got}
    assert exported == {m.name.removesuffix("_total") for m in METRICS}
    for name, series in got.items():
        spec = BY_NAME.get(name) or BY_NAME[name + "_total"]
        for pairs in series:
            assert tuple(sorted(k for k, _v in pairs)) == tuple(sorted(spec.labels)), name
            assert {k for k, _v in pairs} <= ALLOWED_LABELS
    assert family(got, "numaguard_agent_source_available") == {labels(source=key): 1 for key in SOURCE_KEYS}


def write_everything(node: HostNode, pod: Pod) -> None:
    """Every file the agent reads, for both containers, and the node's NUMA counters."""
    write_files(node.root / "sys/kernel/mm/hugepages/hugepages-2048kB", {"nr_hugepages": "4\n"})
    for numa in (0, 1):
        write_files(node.root / f"sys/devices/system/node/node{numa}", {
            "numastat": f"numa_hit {1000 + numa}\nnuma_miss {10 + numa}\nnuma_foreign 0\ninterleave_hit 0\n"
                        f"local_node 900\nother_node {100 + numa}\n"})
    for c in pod.containers:
        write_files(node.container_cgroup(pod, c), {
            "memory.stat": memory_stat(5000, 7, migrated=12), "memory.numa_stat": numa_stat({0: 4096, 1: 8192}, {}),
            "hugetlb.2MB.numa_stat": hugetlb_numa_stat({0: 0, 1: 2 * MiB}), "cpu.pressure": psi(1500000, 0),
            "memory.pressure": psi(250, 100)})


# ------------------------------------------------------------------------------- alignment

@two_cpus
def test_a_wider_cgroup_and_threads_outside_the_exclusive_cpu(top):
    """The app's cgroup allows A and B (a reconcile that did not happen); one thread widened
    its affinity to both, another ran on A and was re-pinned to B while blocked there (the
    kernel leaves it on A until it wakes): 1 thread allowed outside, 1 sample outside."""
    pod = pinned_pod(effective=format_cpuset([A, B]),
                     child=Child(cpus=[B], comm="app", threads=[{"name": "widened", "cpus": [A, B]},
                                                                {"name": "moved", "cpus": [A], "repin": [B]}]))
    pod.containers.pop()
    with running(top, [pod]) as node, agent_on(node) as agent:
        first = agent.scrape()
        second = agent.scrape()
        child = pod.containers[0]
        last = {Path(f"/proc/{child.pid}/task/{t}/comm").read_text().strip(): read_task(Path("/proc"), child.pid,
                                                                                          int(t)).last_cpu
                for t in os.listdir(f"/proc/{child.pid}/task")}
    assert last["moved"] == A
    outside = 1 + (last["widened"] == A)          # the widened thread may have last run on A or B
    assert family(first, "numaguard_container_cpuset_matches") == {app(): 0}
    assert family(first, "numaguard_container_threads_outside_exclusive") == {app(): 1}
    assert family(first, "numaguard_container_thread_samples_total") == {app(): 3}
    assert family(first, "numaguard_container_thread_samples_outside_total") == {app(): outside}
    # the threads are blocked now: not sampled again (their last CPU is old news)
    assert family(second, "numaguard_container_thread_samples_total") == {app(): 3}
    assert family(second, "numaguard_container_thread_samples_outside_total") == {app(): outside}


@two_cpus
def test_memory_nodes_other_than_assigned(top):
    pod = pinned_pod(mems="0-1")
    pod.containers.pop()
    with running(top, [pod], numa_of={A: 0, B: 1}) as node, agent_on(node) as agent:
        got = agent.scrape()
    assert family(got, "numaguard_container_mems_matches") == {app(): 0}
    assert family(got, "numaguard_container_assigned_numa_nodes") == {app(numa_node="0"): 1}


@two_cpus
def test_home_numa_from_the_exclusive_cpus_without_the_memory_manager(top):
    """No Memory Manager entry: the app's memory belongs on its exclusive CPU's node (NUMA 1)."""
    pod = pinned_pod(memory_numa=[])
    pod.containers.pop()
    with running(top, [pod], numa_of={A: 0, B: 1}) as node:
        write_files(node.container_cgroup(pod, pod.containers[0]), {
            "memory.numa_stat": numa_stat({0: 3 * MiB, 1: 5 * MiB}, {0: MiB, 1: 0})})
        with agent_on(node) as agent:
            got = agent.scrape()
    assert family(got, "numaguard_container_assigned_numa_nodes") == {app(numa_node="1"): 1}
    assert family(got, "numaguard_container_mems_matches") == {}      # nothing pinned to compare with
    assert family(got, "numaguard_container_memory_numa_bytes") == {
        app(numa_node="0", locality="remote"): 4 * MiB, app(numa_node="1", locality="local"): 5 * MiB}


# ------------------------------------------------------------------------------- memory locality, faults, PSI

@two_cpus
def test_memory_locality_faults_and_pressure_from_the_cgroup_files(top):
    """Two NUMA nodes; the app is assigned NUMA 1: its anon + file bytes on NUMA 1 are local,
    on NUMA 0 remote; the sidecar has no node of its own: unassigned."""
    pod = pinned_pod(memory_numa=[1], mems="1")
    with running(top, [pod], numa_of={A: 0, B: 1}) as node:
        write_files(node.root / "sys/kernel/mm/hugepages/hugepages-2048kB", {"nr_hugepages": "512\n"})
        write_files(node.root / "sys/kernel/mm/hugepages/hugepages-1048576kB", {"nr_hugepages": "2\n"})
        app_dir, side_dir = (node.container_cgroup(pod, c) for c in pod.containers)
        write_files(app_dir, {
            "memory.numa_stat": numa_stat({0: 100 * MiB, 1: 300 * MiB}, {0: 4 * MiB, 1: 20 * MiB}),
            "memory.stat": memory_stat(123456, 78, migrated=910, anon=400 * MiB, file=24 * MiB),
            "hugetlb.2MB.numa_stat": hugetlb_numa_stat({0: 4 * MiB, 1: 64 * MiB}),
            "hugetlb.1GB.numa_stat": hugetlb_numa_stat({0: 0, 1: GiB}),
            "cpu.pressure": psi(2_500_000, 0), "memory.pressure": psi(125_000, 50_000)})
        write_files(side_dir, {
            "memory.numa_stat": numa_stat({0: 7 * MiB, 1: 0}, {0: MiB, 1: 0}),
            "memory.stat": memory_stat(42, 0, migrated=0), "hugetlb.2MB.numa_stat": hugetlb_numa_stat({0: 0, 1: 0}),
            "hugetlb.1GB.numa_stat": hugetlb_numa_stat({0: 0, 1: 0}),
            "cpu.pressure": psi(0, 0), "memory.pressure": psi(0, 0)})
        with agent_on(node) as agent:
            got = agent.scrape()
    assert family(got, "numaguard_container_memory_numa_bytes") == {
        app(numa_node="0", locality="remote"): 104 * MiB, app(numa_node="1", locality="local"): 320 * MiB,
        sidecar(numa_node="0", locality="unassigned"): 8 * MiB, sidecar(numa_node="1", locality="unassigned"): 0}
    # only where a container holds hugepages: the sidecar holds none
    assert family(got, "numaguard_container_hugepages_numa_bytes") == {
        app(numa_node="0", locality="remote"): 4 * MiB, app(numa_node="1", locality="local"): GiB + 64 * MiB}
    assert family(got, "numaguard_container_page_faults_total") == {app(): 123456, sidecar(): 42}
    assert family(got, "numaguard_container_major_page_faults_total") == {app(): 78, sidecar(): 0}
    assert family(got, "numaguard_container_numa_pages_migrated_total") == {app(): 910, sidecar(): 0}
    assert family(got, "numaguard_container_cpu_pressure_seconds_total") == {
        app(kind="some"): 2.5, app(kind="full"): 0, sidecar(kind="some"): 0, sidecar(kind="full"): 0}
    assert family(got, "numaguard_container_memory_pressure_seconds_total") == {
        app(kind="some"): 0.125, app(kind="full"): 0.05, sidecar(kind="some"): 0, sidecar(kind="full"): 0}
    available = family(got, "numaguard_agent_source_available")
    assert [k for k in SOURCE_KEYS if not available[labels(source=k)]] == ["numastat"]


@two_cpus
def test_a_source_lost_and_regained_is_logged_once_each(top):
    pod = pinned_pod()
    pod.containers.pop()
    with running(top, [pod]) as node, agent_on(node) as agent:
        folder = node.container_cgroup(pod, pod.containers[0])
        write_files(folder, {"cpu.pressure": psi(10, 0), "memory.pressure": psi(0, 0)})
        first = agent.scrape()
        agent.scrape()
        (folder / "cpu.pressure").unlink()
        lost = agent.scrape()
        agent.scrape()
        (folder / "cpu.pressure").write_text(psi(20, 0))
        back = agent.scrape()
    assert family(first, "numaguard_container_cpu_pressure_seconds_total") == {
        app(kind="some"): 0.00001, app(kind="full"): 0}
    assert family(lost, "numaguard_container_cpu_pressure_seconds_total") == {}
    # memory.pressure is there: its series stay
    assert family(lost, "numaguard_container_memory_pressure_seconds_total") == {app(kind="some"): 0, app(kind="full"): 0}
    assert family(lost, "numaguard_agent_source_available")[labels(source="psi")] == 0
    assert family(back, "numaguard_agent_source_available")[labels(source="psi")] == 1
    psi_lines = [line for line in agent.lines if "source psi" in line]
    assert psi_lines == [
        "source psi not available: no cpu.pressure or memory.pressure in the cgroup of shop/pinned-0 app (CONFIG_PSI "
        "off, or booted with psi=0); not exported: numaguard_container_cpu_pressure_seconds_total, "
        "numaguard_container_memory_pressure_seconds_total",
        "source psi available again"]


# ------------------------------------------------------------------------------- counters over threads

def _fake_pod(top: Path):
    """shop/pinned-0 app (exclusive B) whose only process is pid 4000001, not a real one: its
    threads' files are written by the test (HostNode proc="dir")."""
    pod = Pod("shop", "pinned-0", [Container("app", exclusive=[B], memory_numa=[0], effective=str(B))])
    node = HostNode(top, pod and [pod], proc="dir").write()
    node.serve()
    folder = node.container_cgroup(pod, pod.containers[0])
    write_atomic(folder / "cgroup.procs", "4000001\n")
    return node, node.root / "proc", folder / "cgroup.threads"


@two_cpus
def test_counters_summed_over_threads_stay_monotonic_when_threads_exit(top):
    node, proc, threads = _fake_pod(top)
    try:
        with agent_on(node, schedstat=(True, "")) as agent:
            seconds = 10**9
            fake_thread(proc, 4000001, 4000001, start=100, on_cpu_ns=2 * seconds, wait_ns=5 * seconds, involuntary=3,
                        last_cpu=B, allowed=str(B))
            fake_thread(proc, 4000001, 4000002, start=101, on_cpu_ns=seconds, wait_ns=2 * seconds, involuntary=4,
                        last_cpu=A, allowed=format_cpuset([A, B]))
            threads.write_text("4000001\n4000002\n")
            first = agent.scrape()
            # the second thread exits; the first waits one more second and runs
            shutil.rmtree(proc / "4000001/task/4000002")
            threads.write_text("4000001\n")
            fake_thread(proc, 4000001, 4000001, start=100, on_cpu_ns=3 * seconds, wait_ns=6 * seconds, involuntary=5,
                        last_cpu=B, allowed=str(B))
            second = agent.scrape()
            # its tid is reused by a new thread (another start time): all it has counts
            fake_thread(proc, 4000001, 4000002, start=900, on_cpu_ns=seconds // 2, wait_ns=seconds, involuntary=1,
                        last_cpu=A, allowed=str(B))
            threads.write_text("4000001\n4000002\n")
            third = agent.scrape()
    finally:
        node.stop()
    series = [(family(s, "numaguard_container_runqueue_wait_seconds_total")[app()],
               family(s, "numaguard_container_involuntary_context_switches_total")[app()],
               family(s, "numaguard_container_thread_samples_total")[app()],
               family(s, "numaguard_container_thread_samples_outside_total")[app()],
               family(s, "numaguard_container_threads")[app()],
               family(s, "numaguard_container_threads_outside_exclusive")[app()]) for s in (first, second, third)]
    assert series == [(7.0, 7, 2, 1, 2, 1),
                      (8.0, 9, 3, 1, 1, 0),      # the exited thread's 2 s and 4 switches stay
                      (9.0, 10, 4, 2, 2, 0)]     # the first thread did not run: not sampled


def test_schedstat_that_reads_zero_for_a_thread_that_ran_is_not_offered(tmp_path):
    write_files(tmp_path / "thread-self", {"schedstat": "0 0 0\n"})
    assert schedstat_offered(tmp_path) == (
        False, "schedstat reads 0 0 0 for a thread that has run: the kernel's sched_info accounting is off "
               "(proc_pid_schedstat prints zeros when !sched_info_on())")
    (tmp_path / "thread-self/schedstat").unlink()
    assert schedstat_offered(tmp_path) == (
        False, "no /proc/PID/task/TID/schedstat: a kernel built without CONFIG_SCHED_INFO")
    assert schedstat_offered(Path("/proc")) == (True, "")


@two_cpus
def test_without_schedstat_the_runqueue_wait_is_absent_not_zero(top):
    with running(top, [pinned_pod()]) as node, agent_on(node, schedstat=(False, "schedstat reads 0 0 0")) as agent:
        got = agent.scrape()
    assert family(got, "numaguard_container_runqueue_wait_seconds_total") == {}
    assert family(got, "numaguard_agent_source_available")[labels(source="schedstat")] == 0
    # samples fall back to the threads' CPU time in stat
    assert set(family(got, "numaguard_container_thread_samples_total")) == {app(), sidecar()}
    assert ("source schedstat not available: schedstat reads 0 0 0; not exported: "
            "numaguard_container_runqueue_wait_seconds_total") in agent.lines


# ------------------------------------------------------------------------------- containers come and go

@two_cpus
def test_a_container_that_goes_away_drops_its_series_at_the_next_scrape(top):
    pod = pinned_pod()
    with running(top, [pod]) as node, agent_on(node) as agent:
        before = agent.scrape()
        shutil.rmtree(node.container_cgroup(pod, pod.containers[1]))      # the runtime removed it
        after = agent.scrape()
        # the kubelet dies, leaving its socket behind (nobody answers), and restarts without the pod:
        # read at once, no reconnect backoff carried over from the dead socket
        node.server.stop(None)
        path = str(node.root / "var/lib/kubelet/pod-resources/kubelet.sock")
        with socket.socket(socket.AF_UNIX) as dead:
            dead.bind(path)
            down = agent.scrape()
        os.unlink(path)
        node.pods = []
        node.serve()
        gone = agent.scrape()
    assert {k for series in before.values() for k in series if ("container", "sidecar") in k}
    for series in after.values():
        assert not [k for k in series if ("container", "sidecar") in k]
    assert family(after, "numaguard_agent_containers") == {(): 1}
    assert family(after, "numaguard_agent_containers_unseen") == {(): 1}
    sidecar_id = pod.containers[1].id
    assert [line for line in agent.lines if "sidecar" in line or "podresources" in line] == [
        f"container shop/pinned-0 sidecar not seen in the kernel: not running: no cgroup for container id "
        f"{sidecar_id[:12]}",
        f"source podresources not available: kubelet PodResources socket {node.root}/var/lib/kubelet/pod-resources/"
        "kubelet.sock: nobody answers (List: connection refused or kubelet down); not exported: "
        "numaguard_container_exclusive_cpus, numaguard_container_assigned_numa_nodes",
        "source podresources available again"]
    assert family(down, "numaguard_agent_source_available")[labels(source="podresources")] == 0
    assert family(gone, "numaguard_agent_source_available")[labels(source="podresources")] == 1
    assert family(gone, "numaguard_agent_containers") == {(): 0}
    assert family(gone, "numaguard_agent_containers_unseen") == {(): 0}
    assert [name for name, series in gone.items() if name.startswith("numaguard_container_") and series] == []


@two_cpus
def test_containers_without_an_id_are_unseen(top):
    with running(top, [pinned_pod()], links=False) as node, agent_on(node) as agent:
        got = agent.scrape()
    assert family(got, "numaguard_agent_containers_unseen") == {(): 2}
    assert family(got, "numaguard_agent_source_available")[labels(source="container_ids")] == 0
    assert [line for line in agent.lines if "container_ids" in line or line.startswith("container ")] == [
        f"source container_ids not available: container log links {node.root}/var/log/containers: not found; "
        "not exported: -",
        "container shop/pinned-0 app not seen in the kernel: no container id (give --pods with the pods' status, or "
        "mount the kubelet's /var/log/containers)",
        "container shop/pinned-0 sidecar not seen in the kernel: no container id (give --pods with the pods' status, "
        "or mount the kubelet's /var/log/containers)"]


@two_cpus
def test_without_the_podresources_api_no_container_series(top):
    node = HostNode(top, [pinned_pod()]).write()
    try:
        node.start()                                          # no gRPC server
        with agent_on(node) as agent:
            got = agent.scrape()
            agent.scrape()
    finally:
        node.stop()
    assert [name for name, series in got.items() if name.startswith("numaguard_container_") and series] == []
    assert family(got, "numaguard_agent_source_available")[labels(source="podresources")] == 0
    assert family(got, "numaguard_node_shared_pool_cpus") == {(): 1}
    assert [line for line in agent.lines if "podresources" in line] == [
        f"source podresources not available: kubelet PodResources socket "
        f"{node.root}/var/lib/kubelet/pod-resources/kubelet.sock not found (is this a node? mount /var/lib/kubelet "
        "into the pod); not exported: numaguard_container_exclusive_cpus, numaguard_container_assigned_numa_nodes"]


@two_cpus
def test_on_cgroup_v1_the_node_series_remain(top):
    with running(top, [pinned_pod()]) as node:
        shutil.rmtree(node.cgroup_root)
        for controller in ("cpu", "cpuset", "memory", "systemd"):
            (node.cgroup_root / controller).mkdir(parents=True)
        with agent_on(node) as agent:
            got = agent.scrape()
    assert [name for name, series in got.items() if name.startswith("numaguard_container_") and series] == []
    assert family(got, "numaguard_agent_source_available")[labels(source="cgroup_v2")] == 0
    assert family(got, "numaguard_agent_containers_unseen") == {(): 2}
    assert family(got, "numaguard_node_shared_pool_cpus") == {(): 1}
    assert agent.lines[0].startswith(f"source cgroup_v2 not available: cgroups {node.root}/sys/fs/cgroup: cgroup v1 "
                                     "is not supported; not exported: numaguard_container_cpuset_matches")


# ------------------------------------------------------------------------------- the node

@two_cpus
def test_numa_counters_and_the_shared_pool_usage(top):
    """/proc/stat written by the test: the shared pool's busy ticks are added per scrape for
    the CPUs in the pool at that scrape; a CPU that joins it adds from then on."""
    pod = pinned_pod()
    pod.containers.pop()
    with running(top, [pod], numa_of={A: 0, B: 1}, proc="dir") as node:
        stat = node.root / "proc/stat"

        def cpu_lines(busy_a: int, busy_b: int) -> str:
            # user nice system idle iowait irq softirq steal guest guest_nice
            return (f"cpu  {busy_a + busy_b} 0 0 900 0 0 0 0 0 0\n"
                    f"cpu{A} {busy_a - 30} 10 15 900 40 3 2 70 5 0\ncpu{B} {busy_b} 0 0 900 0 0 0 0 0 0\n"
                    "intr 0\nctxt 0\n")
        stat.write_text(cpu_lines(1000, 500))
        for numa in (0, 1):
            write_files(node.root / f"sys/devices/system/node/node{numa}",
                        {"numastat": f"numa_hit {5000 + numa}\nnuma_miss {7 * numa}\nnuma_foreign 0\n"
                                     f"interleave_hit 3\nlocal_node 4000\nother_node {numa * 11}\n"})
        with agent_on(node) as agent:
            first = agent.scrape()
            stat.write_text(cpu_lines(1050, 570))
            second = agent.scrape()
            pod.containers[0].exclusive = []                  # the app gave B back
            node.write_checkpoints()
            stat.write_text(cpu_lines(1100, 600))
            third = agent.scrape()
    usage = [family(s, "numaguard_node_shared_pool_usage_seconds_total")[()] for s in (first, second, third)]
    # busy = user + nice + system + irq + softirq; CPU A: 1000 ticks, then +50, then +50 (B +30 joins)
    assert usage == [10.0, 10.5, 11.3]
    assert [family(s, "numaguard_node_shared_pool_cpus")[()] for s in (first, second, third)] == [1, 1, 2]
    assert family(first, "numaguard_node_numa_hit_total") == {labels(numa_node="0"): 5000, labels(numa_node="1"): 5001}
    assert family(first, "numaguard_node_numa_miss_total") == {labels(numa_node="0"): 0, labels(numa_node="1"): 7}
    assert family(first, "numaguard_node_numa_other_node_total") == {labels(numa_node="0"): 0,
                                                                     labels(numa_node="1"): 11}


def test_scrapes_closer_than_the_minimum_interval_share_one_answer(top):
    now = [100.0]
    node = HostNode(top, []).write()
    try:
        inventory = Inventory(str(node.root))
        agent = NodeAgent(inventory, str(node.root), min_interval=1.0, clock=lambda: now[0])
        first = agent.collect()
        now[0] += 0.9
        second = agent.collect()
        now[0] += 0.2
        third = agent.collect()
        inventory.close()
    finally:
        node.stop()
    assert second is first and third is not first


# ------------------------------------------------------------------------------- the table

def test_the_metric_table_is_consistent():
    for m in METRICS:
        assert m.name.startswith("numaguard_"), m.name
        assert m.name.endswith("_total") == (m.kind == "counter"), m.name
        assert set(m.needs) <= set(SOURCE_KEYS), m.name
        assert set(m.labels) <= ALLOWED_LABELS, m.name
        if m.name.startswith("numaguard_container_"):
            assert m.labels[:4] == CONTAINER, m.name
        if m.name.startswith("numaguard_node_"):
            assert set(m.labels) <= {"numa_node"}, m.name
    assert len({m.name for m in METRICS}) == len(METRICS)


def test_the_operators_guide_has_the_metric_reference_from_the_table():
    readme = (REPO / "deploy" / "README.md").read_text()
    section = readme.split("<!-- agent-metrics:start -->\n", 1)[1].split("<!-- agent-metrics:end -->", 1)[0]
    assert section == render_markdown()
    assert all(f"`{m.name}`" in section for m in METRICS)


# ------------------------------------------------------------------------------- the command

@two_cpus
def test_the_agent_serves_metrics_over_http(top):
    with running(top, [pinned_pod()]) as node, served_agent(node.root) as (process, url, lines):
        status, kind, body = http_get(f"{url}/metrics")
        health = http_get(f"{url}/healthz")
        missing = http_get(f"{url}/nope")
        post = urllib.request.Request(f"{url}/metrics", data=b"x", method="POST")
        try:
            urllib.request.urlopen(post, timeout=30)
            posted = 200
        except urllib.error.HTTPError as exc:
            posted = exc.code
        request = urllib.request.Request(f"{url}/metrics", headers={
            "Accept": "application/openmetrics-text; version=1.0.0", "Accept-Encoding": "gzip"})
        with urllib.request.urlopen(request, timeout=30) as answer:
            asked_more = (answer.headers["Content-Type"], answer.headers.get("Content-Encoding"), answer.read().decode())
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=60) == 0
    assert status == 200 and kind == "text/plain; version=0.0.4; charset=utf-8"
    got = parse(body)
    assert family(got, "numaguard_container_exclusive_cpus") == {app(): 1, sidecar(): 0}
    assert "process_resident_memory_bytes" in got
    assert health == (200, "text/plain", "ok\n")
    assert missing == (404, "text/plain", "not found: the agent serves /metrics and /healthz\n")
    assert posted == 405
    # what Prometheus asks for first, OpenMetrics and gzip, costs twice the CPU: text, uncompressed
    assert asked_more[:2] == ("text/plain; version=0.0.4; charset=utf-8", None)
    assert parse(asked_more[2])["numaguard_agent_containers"] == {(): 2}
    assert lines[-1] == f"numaguard node agent: serving {url}/metrics"


@two_cpus
def test_idle_clients_do_not_stop_the_scrape(top):
    """Ten connections that never send a byte, and one that sends half a request: the scrape
    beside them is answered."""
    with running(top, [pinned_pod()]) as node, served_agent(node.root) as (_process, url, _lines):
        host, port = url.removeprefix("http://").rsplit(":", 1)
        idle = [socket.create_connection((host, int(port))) for _ in range(10)]
        idle[0].sendall(b"GET /metrics HTTP/1.1\r\nHost: x\r\n")
        try:
            status, _kind, body = http_get(f"{url}/metrics")
        finally:
            for s in idle:
                s.close()
    assert status == 200 and "numaguard_agent_containers 2.0" in body


def test_a_bad_listen_address_is_a_usage_error(tmp_path):
    run = subprocess.run([numaguard_exe(), "node", "agent", "--root", str(tmp_path), "--listen", "nowhere"],
                         capture_output=True, text=True, timeout=120)
    assert run.returncode == 2
    assert run.stderr.splitlines()[-1] == "Error: --listen: 'nowhere' is not HOST:PORT"


def test_an_address_in_use_is_a_usage_error(tmp_path):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        run = subprocess.run([numaguard_exe(), "node", "agent", "--root", str(tmp_path), "--listen",
                              f"127.0.0.1:{port}"], capture_output=True, text=True, timeout=120)
    assert run.returncode == 2
    assert run.stderr.splitlines()[-1] == f"Error: --listen 127.0.0.1:{port}: Address already in use"
    assert "Traceback" not in run.stderr


class Fixed:
    def __init__(self, families) -> None:
        self.families = families

    def collect(self):
        return self.families


@two_cpus
def test_the_text_writer_writes_what_prometheus_client_writes(top):
    """Byte for byte generate_latest's output, for a full scrape and for values that need
    escaping; a family it does not write (a histogram) is left to generate_latest."""
    from prometheus_client import CollectorRegistry, Histogram, generate_latest
    from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily

    from numaguard.lint.cli.agent_server import text_exposition

    pod = pinned_pod()
    with running(top, [pod], numa_of={A: 0, B: 1}) as node:
        write_everything(node, pod)
        with agent_on(node) as agent:
            families = agent.agent.collect()
    odd = GaugeMetricFamily("numaguard_test_odd", 'help with a \\ backslash\nand a newline', labels=["pod", "a"])
    odd.add_metric(['we"ird\\pod\nname', ""], float("inf"))
    odd.add_metric(["x", "y"], -0.0000123)
    plain = CounterMetricFamily("numaguard_test_plain", "no labels")
    plain.add_metric([], 1e21)
    registry = CollectorRegistry(auto_describe=False)
    registry.register(Fixed(families + [odd, plain]))
    assert text_exposition(registry) == generate_latest(registry)
    assert len(generate_latest(registry).splitlines()) > 100
    Histogram("numaguard_test_seconds", "a histogram", registry=registry).observe(0.3)
    assert text_exposition(registry) == generate_latest(registry)


def test_the_daemonset_runs_the_agent():
    """deploy/node-inspect/daemonset.yaml's `agent` container runs `numaguard node agent` on the
    port the PodMonitor scrapes, with the mounts `node inspect` has (read-only), no capability,
    in the host's PID namespace (cgroup.threads), and the whole file lints clean."""
    import yaml
    from click.testing import CliRunner

    from numaguard.lint.cli.main import main

    path = REPO / "deploy/node-inspect/daemonset.yaml"
    daemonset = next(d for d in yaml.safe_load_all(path.read_text()) if d["kind"] == "DaemonSet")
    pod = daemonset["spec"]["template"]["spec"]
    containers = {c["name"]: c for c in pod["containers"]}
    agent = containers["agent"]
    assert agent["command"] == ["numaguard", "node", "agent", "--root", "/host", "--listen", ":9477"]
    assert agent["ports"] == [{"name": "metrics", "containerPort": 9477, "protocol": "TCP"}]
    assert agent["readinessProbe"]["httpGet"] == {"path": "/healthz", "port": "metrics"}
    assert agent["securityContext"]["capabilities"] == {"drop": ["ALL"]}
    assert agent["securityContext"]["runAsUser"] == 0 and pod["hostPID"] is True
    assert agent["volumeMounts"] == containers["inspect"]["volumeMounts"]
    assert all(m["readOnly"] is True for m in agent["volumeMounts"])
    result = CliRunner().invoke(main, ["lint", str(path)])
    assert result.exit_code == 0, result.output


@two_cpus
def test_an_idle_threads_affinity_is_read_again_one_scrape_in_ten(top):
    """A thread that neither runs nor waits has only its schedstat read; an affinity another
    thread set on it meanwhile is seen at the scrape its turn comes (one in STATUS_EVERY,
    spread by tid: (scrape + tid) % 10 == 0), and at once when the cgroup's cpuset changes."""
    from numaguard.lint.node.agent import STATUS_EVERY

    node, proc, threads = _fake_pod(top)
    try:
        with agent_on(node, schedstat=(True, "")) as agent:
            fake_thread(proc, 4000001, 4000001, start=100, on_cpu_ns=10**9, wait_ns=10**8, involuntary=3,
                        last_cpu=B, allowed=str(B))
            threads.write_text("4000001\n")
            seen = [agent.scrape()]                                      # scrape 1: read in full
            fake_thread(proc, 4000001, 4000001, start=100, on_cpu_ns=10**9, wait_ns=10**8, involuntary=3,
                        last_cpu=B, allowed=format_cpuset([A, B]))      # widened, asleep
            seen += [agent.scrape() for _ in range(STATUS_EVERY)]        # scrapes 2..11
            fake_thread(proc, 4000001, 4000001, start=100, on_cpu_ns=10**9, wait_ns=10**8, involuntary=3,
                        last_cpu=B, allowed=str(B))                      # narrowed again, asleep
            cgroup = node.container_cgroup(node.pods[0], node.pods[0].containers[0])
            (cgroup / "cpuset.cpus.effective").write_text(format_cpuset([A, B]) + "\n")
            moved = agent.scrape()                                       # scrape 12: the cpuset changed
    finally:
        node.stop()
    outside = [family(s, "numaguard_container_threads_outside_exclusive")[app()] for s in seen]
    turn = next(n for n in range(2, 12) if (n + 4000001) % STATUS_EVERY == 0)
    assert outside == [0] * (turn - 1) + [1] * (STATUS_EVERY + 2 - turn)      # seen[k] is scrape k + 1
    assert family(moved, "numaguard_container_threads_outside_exclusive")[app()] == 0
    assert family(moved, "numaguard_container_cpuset_matches")[app()] == 0


@two_cpus
def test_threads_of_another_pid_namespace_leave_no_partial_sums(top):
    """cgroup.threads shows a thread the reader cannot see as 0 (an agent without hostPID):
    the container's thread metrics are absent, not sums over the threads it could see."""
    pod = pinned_pod()
    pod.containers.pop()
    with running(top, [pod]) as node:
        threads = node.container_cgroup(pod, pod.containers[0]) / "cgroup.threads"
        threads.write_text(threads.read_text() + "0\n0\n")
        with agent_on(node) as agent:
            got = agent.scrape()
    for name in ("threads", "runqueue_wait_seconds_total", "involuntary_context_switches_total",
                 "thread_samples_total", "threads_outside_exclusive"):
        assert family(got, f"numaguard_container_{name}") == {}, name
    assert family(got, "numaguard_container_exclusive_cpus") == {app(): 1}      # the cgroup's series stay
    assert family(got, "numaguard_agent_source_available")[labels(source="proc")] == 0
    assert ("source proc not available: 2 thread(s) in cgroup.threads of the cgroup of shop/pinned-0 app read as 0, "
            "of another PID namespace (run the agent with hostPID); not exported: numaguard_container_threads, "
            "numaguard_container_threads_outside_exclusive, numaguard_container_thread_samples_total, "
            "numaguard_container_thread_samples_outside_total, numaguard_container_runqueue_wait_seconds_total, "
            "numaguard_container_involuntary_context_switches_total") in agent.lines


@two_cpus
def test_a_container_whose_reading_fails_leaves_no_partial_series(top, monkeypatch):
    """An unexpected error reading one container (a bug, a file in a format never seen) costs
    that container its series, none half-written, and the rest of the node keeps its own."""
    import numaguard.lint.node.agent as agent_module

    real = agent_module.read_counters

    def broken(path, sizes):
        if sidecar_id in str(path):
            raise ValueError("invalid literal for int() with base 10: 'x'")
        return real(path, sizes)

    pod = pinned_pod()
    sidecar_id = pod.containers[1].id
    monkeypatch.setattr(agent_module, "read_counters", broken)
    with running(top, [pod]) as node, agent_on(node) as agent:
        got = agent.scrape()
    for name, series in got.items():
        assert not [k for k in series if ("container", "sidecar") in k], name
    assert family(got, "numaguard_container_exclusive_cpus") == {app(): 1}
    assert family(got, "numaguard_agent_containers_unseen") == {(): 1}
    assert agent.lines[-1] == (
        f"container shop/pinned-0 sidecar not seen in the kernel: reading /kubepods.slice/kubepods-pod"
        f"{pod.uid.replace('-', '_')}.slice/cri-containerd-{sidecar_id}.scope failed: ValueError: invalid literal "
        "for int() with base 10: 'x'")
