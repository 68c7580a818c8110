"""The node agent over real processes on this machine (tests/agent_pool.py): a container alone
on its CPU and one sharing its CPU with a busy sibling, in cgroups the kernel made where this
machine lets root make them (else skipped, saying why) and in cgroup files written in the
kernel's formats holding the same real processes; a quota set where the cpu controller can be
enabled for cgroup v2; memory placed with a mempolicy where there are two NUMA nodes; and a real
Prometheus server scraping the real agent on 127.0.0.1 with the shipped rules."""
from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from numaguard.lint.node.agent import NodeAgent
from numaguard.lint.node.inventory import Inventory

from agent_fixture import http_get, labels, parse, scrape
from agent_pool import (A, B, cgroup2_mount, controllers, prometheus_server, query, real_pool, served_agent,
                        wait_for)
from conftest import REPO
from node_processes_fixture import REAL_CPUS, short_tmp

two_cpus = pytest.mark.skipif(len(REAL_CPUS) < 2, reason="the pinning tests need two CPUs this process may use")
NUMA_NODES = sorted(int(p.name[4:]) for p in Path("/sys/devices/system/node").glob("node[0-9]*"))
RULES = REPO / "deploy/monitoring/numaguard.rules.yaml"


top = pytest.fixture(short_tmp)


def container(pod: str) -> tuple[tuple[str, str], ...]:
    return labels(namespace="shop", pod=pod, container="app", pool="exclusive")


def needs_kernel_cgroups(cgroups: str) -> None:
    if cgroups == "kernel":
        mount, why = cgroup2_mount()
        if mount is None:
            pytest.skip(f"cgroups the kernel makes: {why}")


def two_scrapes(pool, seconds: float = 2.0):
    """Two scrapes `seconds` apart (measured), by one agent: (first, second, elapsed)."""
    inventory = Inventory(str(pool.node.root))
    try:
        agent = NodeAgent(inventory, str(pool.node.root), min_interval=0)
        first, began = scrape(agent), time.monotonic()
        time.sleep(seconds)
        second, elapsed = scrape(agent), time.monotonic() - began
    finally:
        inventory.close()
    return first, second, elapsed


def rise(first, second, name: str, pod: str, **extra: str) -> float:
    key = tuple(sorted(container(pod) + tuple(extra.items())))
    return second[name][key] - first[name][key]


@two_cpus
@pytest.mark.parametrize("cgroups", ["kernel", "files"])
def test_the_container_sharing_its_cpu_waits_longer(top, cgroups):
    """Two always-runnable threads on one CPU: at every instant one of them waits, so the
    contended container's run-queue wait rises at least as fast as the clock (less the wait
    of the last slice, counted when the thread next runs); the container alone on its CPU
    (reniced ahead of the machine's other load) waits less. Its CPU pressure (PSI "some": a
    task of the cgroup waiting) is near the elapsed time too, where the kernel keeps it per
    cgroup."""
    needs_kernel_cgroups(cgroups)
    with real_pool(top, cgroups) as pool:
        first, second, elapsed = two_scrapes(pool)
    waited = {pod: rise(first, second, "numaguard_container_runqueue_wait_seconds_total", pod)
              for pod in ("alone-0", "contended-0")}
    assert waited["contended-0"] >= 0.8 * elapsed, (waited, elapsed)
    assert waited["alone-0"] < waited["contended-0"], waited
    assert second["numaguard_container_threads"] == {container("alone-0"): 2, container("contended-0"): 4}
    # pinned to their own CPUs: every sample inside
    assert second["numaguard_container_thread_samples_outside_total"] == {container("alone-0"): 0,
                                                                          container("contended-0"): 0}
    assert rise(first, second, "numaguard_container_thread_samples_total", "contended-0") >= 2
    assert rise(first, second, "numaguard_container_involuntary_context_switches_total", "contended-0") > 0
    available = {dict(k)["source"]: v for k, v in second["numaguard_agent_source_available"].items()}
    if cgroups == "kernel":
        usage = {pod: rise(first, second, "numaguard_container_cpu_usage_seconds_total", pod)
                 for pod in ("alone-0", "contended-0")}
        # the two on B share one CPU; the cgroup's usage_usec counts them both
        assert 0 < usage["contended-0"] <= 1.1 * elapsed, (usage, elapsed)
        if (pool.cgroup("contended-0") / "cpu.pressure").exists():
            some = {pod: rise(first, second, "numaguard_container_cpu_pressure_seconds_total", pod, kind="some")
                    for pod in ("alone-0", "contended-0")}
            assert some["contended-0"] >= 0.8 * elapsed and some["alone-0"] < some["contended-0"], (some, elapsed)
            assert available["psi"] == 1
        # what this kernel's cgroup2 mount lacks is reported, never exported as zero
        mount = cgroup2_mount()[0]
        for source, controller in (("cpuset", "cpuset"), ("cpu_controller", "cpu"),
                                   ("memory_controller", "memory")):
            assert available[source] == int(controller in controllers(mount)), source
            if controller not in controllers(mount) and source == "cpu_controller":
                assert "numaguard_container_cpu_throttled_periods_total" not in second


@two_cpus
def test_a_quota_throttles_the_container_sharing_its_cpu(top):
    """cpu.max "10000 100000" (a tenth of a CPU) on the contended container: its nr_throttled
    rises; the one alone, without a quota, is never throttled."""
    mount, why = cgroup2_mount()
    if mount is None:
        pytest.skip(f"a quota needs cgroups the kernel makes: {why}")
    if "cpu" not in controllers(mount):
        pytest.skip(f"the cpu controller is not available to cgroup v2 here ({mount}/cgroup.controllers: "
                    f"{' '.join(sorted(controllers(mount))) or 'none'}; it is bound to a cgroup v1 hierarchy), so "
                    "cpu.max cannot be set")
    with real_pool(top, "kernel") as pool:
        for folder in reversed(list(pool.cgroup("contended-0").parents)):
            if folder.is_relative_to(mount) and folder != pool.cgroup("contended-0"):
                (folder / "cgroup.subtree_control").write_text("+cpu")
        (pool.cgroup("contended-0") / "cpu.max").write_text("10000 100000")
        first, second, _elapsed = two_scrapes(pool)
    assert rise(first, second, "numaguard_container_cpu_throttled_periods_total", "contended-0") > 0
    assert rise(first, second, "numaguard_container_cpu_throttled_seconds_total", "contended-0") > 0
    assert rise(first, second, "numaguard_container_cpu_throttled_periods_total", "alone-0") == 0


MPOL_BIND = 2
SYS_SET_MEMPOLICY = {"x86_64": 238, "aarch64": 237}.get(os.uname().machine)


@two_cpus
def test_memory_bound_to_another_numa_node_is_remote(top):
    """A child binds its memory to a NUMA node other than its own (set_mempolicy MPOL_BIND)
    and touches 64 MiB: its cgroup's memory.numa_stat puts it there, and the agent counts it
    remote. Where this machine has one NUMA node, locality is tested on memory.numa_stat files
    in the kernel's format instead (test_node_agent.py)."""
    if len(NUMA_NODES) < 2:
        pytest.skip(f"one NUMA node here ({NUMA_NODES}): test_node_agent.py tests locality on memory.numa_stat "
                    "files in the kernel's format")
    mount, why = cgroup2_mount()
    if mount is None or "memory" not in controllers(mount) or SYS_SET_MEMPOLICY is None:
        pytest.skip(why or "the memory controller is not available to cgroup v2 here, or no set_mempolicy number "
                           "for this architecture")
    home, away = NUMA_NODES[0], NUMA_NODES[1]
    with real_pool(top, "kernel") as pool:
        scope = pool.cgroup("alone-0")
        for folder in reversed(list(scope.parents)):
            if folder.is_relative_to(mount) and folder != scope:
                (folder / "cgroup.subtree_control").write_text("+memory")
        # into the container's cgroup first (memory is charged where it is allocated), then bind, then touch
        code = (f"import ctypes, os, sys\nopen({str(scope / 'cgroup.procs')!r}, 'w').write(str(os.getpid()))\n"
                f"mask = ctypes.c_ulong(1 << {away})\n"
                f"assert ctypes.CDLL(None, use_errno=True).syscall({SYS_SET_MEMPOLICY}, {MPOL_BIND}, "
                "ctypes.byref(mask), 64) == 0\nmemory = bytearray(64 * 2**20)\n"
                "for i in range(0, len(memory), 4096):\n    memory[i] = 1\nprint('ready', flush=True)\nsys.stdin.read()\n")
        bound = subprocess.Popen([sys.executable, "-c", code], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        try:
            assert bound.stdout.readline().strip() == "ready"
            first, _second, _elapsed = two_scrapes(pool, 0.1)
        finally:
            bound.stdin.close()
            bound.wait()
    memory = first["numaguard_container_memory_numa_bytes"]
    assert memory[tuple(sorted(container("alone-0") + (("numa_node", str(away)), ("locality", "remote"))))] >= 64 * 2**20
    assert home != away


@two_cpus
def test_a_real_prometheus_scrapes_the_real_agent(top):
    """Debian's prometheus scrapes `numaguard node agent` on 127.0.0.1 every 2 s with the
    shipped rules: the series arrive with the agent's own labels (honour_labels, as the
    PodMonitor has it), the target is healthy, and the recording rules see the contended
    container wait longer than the one alone."""
    cgroups = "kernel" if cgroup2_mount()[0] is not None else "files"
    with real_pool(top, cgroups) as pool, served_agent(pool.node.root, "--min-interval", "0") as (_p, url, _lines):
        exported = parse(http_get(f"{url}/metrics")[2])
        series = sum(len(v) for k, v in exported.items() if k.startswith("numaguard_container_"))
        target = url.removeprefix("http://")
        with prometheus_server([target], [RULES], labels={"node": "test-node"}) as prometheus:
            up = wait_for(prometheus, 'up{job="numaguard-node-agent"} == 1', 1)
            ratio = wait_for(prometheus, "numaguard:container_runqueue_wait:ratio_rate5m", 2)
            recorded = wait_for(prometheus, "numaguard:container_runqueue_wait_seconds:rate5m", 2)
            # ten scrapes, for a rate over a window of ten samples
            wait_for(prometheus, 'count_over_time(up{job="numaguard-node-agent"}[20s]) >= 10', 1)
            waited = query(prometheus, 'rate(numaguard_container_runqueue_wait_seconds_total[20s])')
            stored = query(prometheus, 'count({__name__=~"numaguard_container_.*"})')
            targets = http_get(f"{prometheus}/api/v1/targets")[2]
            available = query(prometheus, "numaguard_agent_source_available")
    assert up[0]["metric"] == {"__name__": "up", "instance": target, "job": "numaguard-node-agent", "node": "test-node"}
    by_pod = {r["metric"]["pod"]: float(r["value"][1]) for r in waited}
    assert by_pod["contended-0"] > by_pod["alone-0"], by_pod
    # at least one of the two on B waits at every instant: about a second a second (rate()
    # extrapolates over scrapes that do not fall on the window's edges)
    assert by_pod["contended-0"] >= 0.7, by_pod
    rules = {r["metric"]["pod"]: r for r in recorded}
    assert rules["contended-0"]["metric"] == {
        "__name__": "numaguard:container_runqueue_wait_seconds:rate5m", "namespace": "shop", "pod": "contended-0",
        "container": "app", "pool": "exclusive", "node": "test-node", "instance": target,
        "job": "numaguard-node-agent"}
    assert float(rules["contended-0"]["value"][1]) > float(rules["alone-0"]["value"][1])
    if cgroups == "kernel":               # the cgroup's own CPU time: wait over wait plus run
        shares = {r["metric"]["pod"]: float(r["value"][1]) for r in ratio}
        assert shares["contended-0"] > shares["alone-0"], shares
    assert int(stored[0]["value"][1]) == series
    assert '"lastError":""' in targets and '"health":"up"' in targets
    assert {r["metric"]["source"]: r["value"][1] for r in available}["cgroup_v2"] == "1"
