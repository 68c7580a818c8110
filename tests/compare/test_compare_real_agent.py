"""`numaguard compare` end to end over real processes: the real `numaguard node agent` watches
four real pods pinned on this machine (tests/agent_pool.py's pieces, tests/node_processes_fixture.py's
node) and Debian's `prometheus` scrapes it; compare samples the agent directly meanwhile, then
asks that Prometheus once the pods have stopped, and reaches the verdict the processes were built for:

* shop/web-stable-0: a thread spinning on CPU B, reniced to -15: B serves it first, so it waits
  for B as if it were alone there (on a 2-CPU machine other sessions load, "alone" is made by
  priority: the machine's other load goes to the other CPU, which the test leaves free);
* shop/web-canary-0, shop/twin-a-0 and shop/twin-b-0: each a thread spinning on B at nice 0, so
  they share what B leaves them and each waits for it nearly all the time.

The canary against the stable pod fails (run-queue delay, preemptions and, where the kernel keeps
PSI per cgroup, CPU pressure worse); the two twins, identical, pass or are inconclusive, never
fail. Cgroups are the kernel's where root may make them in this machine's cgroup2 mount, else
files in the kernel's formats holding the same real processes (as the agent's own tests do)."""
from __future__ import annotations

import json
import shutil
import subprocess
import tempfile
import time
from contextlib import ExitStack, contextmanager
from pathlib import Path

import pytest

from agent_pool import (A, B, SHARED_CPU, SPIN, _renice, cgroup2_mount, kernel_cgroups, prometheus_server, served_agent,
                        wait_for)
from conftest import numaguard_exe, run_cli
from node_processes_fixture import REAL_CPUS, Child, Container, HostNode, Pod

pytestmark = pytest.mark.skipif(len(REAL_CPUS) < 2, reason="the pods need two CPUs this process may use")

SCRAPE = 2                 # seconds: a one-second scrape can outlast its timeout on a loaded machine
WINDOW = ["--window", "24s", "--step", "2s", "--rate-interval", "8s"]
# the spinners' own outcome: CPU time is the work a spinning thread gets done (higher is better)
WORK = ["--metric", "work:sum by (pod) (rate(numaguard_container_cpu_usage_seconds_total{ {{selector}} }[{{interval}}])):higher"]
CANARY = ["--canary", 'namespace="shop",pod=~"web-canary-.*"', "--control", 'namespace="shop",pod=~"web-stable-.*"']
TWINS = ["--canary", 'namespace="shop",pod=~"twin-a-.*"', "--control", 'namespace="shop",pod=~"twin-b-.*"']


def _app(cpu: int, comm: str) -> Container:
    return Container("app", exclusive=[cpu], memory_numa=[0], effective=str(cpu),
                     child=Child(cpus=[cpu], comm=comm, threads=[SPIN]))


@contextmanager
def compare_pool(top: Path):
    """The four pods, in kernel cgroups where this machine allows, else in cgroup files."""
    pods = [Pod("shop", name, [_app(B, name.split("-")[0] + name[-3])])
            for name in ("web-stable-0", "web-canary-0", "twin-a-0", "twin-b-0")]
    node = HostNode(top, pods, numa_of={A: 0, B: 0, SHARED_CPU: 0}, reserved=SHARED_CPU).write()
    mount, _why = cgroup2_mount()
    with ExitStack() as made:                     # the kernel's cgroups go once the processes are gone
        try:
            node.start()
            _renice(pods[0].containers[0].pid, -15)
            if mount is not None:
                scopes = made.enter_context(kernel_cgroups(node, pods, mount, "ng-compare"))
                for pod in pods:
                    (scopes[pod.name] / "cgroup.procs").write_text(f"{pod.containers[0].pid}\n")
            node.serve()
            yield node, "kernel" if mount is not None else "files"
        finally:
            node.stop()


@pytest.fixture(scope="module")
def scraped(tmp_path_factory):
    """The pods and the real agent serving them for 34 s, Prometheus scraping it every 2 s and
    compare sampling it directly meanwhile; then the pods and the agent stop (the spinners hold
    a CPU of a shared machine) and Prometheus stays to be asked."""
    top = Path(tempfile.mkdtemp(prefix="ng-", dir="/tmp"))      # short: the socket path stays < 108 bytes
    direct = tmp_path_factory.mktemp("direct") / "r.json"
    with ExitStack() as server:
        with ExitStack() as pods:
            node, cgroups = pods.enter_context(compare_pool(top))
            _process, agent, _lines = pods.enter_context(served_agent(node.root, "--min-interval", "0"))
            prometheus = server.enter_context(prometheus_server([agent.removeprefix("http://")], [],
                                                                interval=f"{SCRAPE}s"))
            wait_for(prometheus, 'numaguard_container_runqueue_wait_seconds_total{pod="web-canary-0"}', 1)
            began = time.time()
            sampling = subprocess.Popen([numaguard_exe(), "compare", "--agent", agent, "--window", "16s", "--step", "2s", "--rate-interval", "8s",
                                         *CANARY, "--output", str(direct)], stdout=subprocess.PIPE,
                                        stderr=subprocess.PIPE, text=True)
            time.sleep(max(0.0, began + 34 - time.time()))       # 8 s for the first rates, a 24 s window, 2 to spare
            sampled = sampling.communicate(timeout=600)
        yield {"prometheus": prometheus, "end": began + 32, "cgroups": cgroups,
               "direct": (sampling.returncode, sampled[1], direct)}
    shutil.rmtree(top, ignore_errors=True)


def _compare(*args: str, output: Path) -> tuple:
    run = run_cli("compare", *args, "--output", str(output), timeout=300)
    assert "Traceback" not in run.stderr, run.stderr
    return run, json.loads(output.read_text())


def test_the_contended_canary_fails_through_prometheus(scraped, tmp_path):
    """Run-queue delay worse; where the kernel made the cgroups, its CPU pressure (PSI per cgroup)
    worse and the work it got done (CPU time) worse too: a fail. In cgroup files (a machine
    where root may not make cgroups) PSI and CPU time are the files' constants, and run-queue
    delay alone (from the real threads' schedstat) can only make it inconclusive: never a pass.
    """
    run, report = _compare("--prometheus", scraped["prometheus"], "--end", f"{scraped['end']:.0f}", *WINDOW, *CANARY,
                           *WORK, output=tmp_path / "r.json")
    judged = {m["name"]: m["classification"] for m in report["metrics"]}
    assert judged["runqueue-delay"] == "worse" and judged["threads-outside"] == "same", judged
    runqueue = report["metrics"][0]
    # B serves the stable pod first: the canary waits nearly all the time, the stable pod little
    medians = runqueue["canary"]["summary"]["median"], runqueue["control"]["summary"]["median"]
    assert medians[0] > 0.6 and medians[0] > 1.5 * medians[1], medians
    assert runqueue["canary"]["coverage"]["share"] == runqueue["control"]["coverage"]["share"] == 1.0
    if scraped["cgroups"] == "kernel":
        assert judged["work"] == "worse", judged
        assert judged["cpu-pressure"] in ("worse", "no data"), judged      # no data: a kernel without PSI
        assert run.returncode == 1 and report["verdict"]["outcome"] == "fail", (run.stderr, judged)
    else:
        assert run.returncode in (1, 3) and report["verdict"]["outcome"] != "pass", (run.stderr, judged)


def test_identical_pods_never_fail_through_prometheus(scraped, tmp_path):
    run, report = _compare("--prometheus", scraped["prometheus"], "--end", f"{scraped['end']:.0f}", *WINDOW, *TWINS,
                           *WORK, output=tmp_path / "r.json")
    judged = {m["name"]: m["classification"] for m in report["metrics"]}
    assert run.returncode in (0, 3) and report["verdict"]["outcome"] in ("pass", "inconclusive"), (run.stderr, judged)


def test_the_contended_canary_is_worse_sampled_from_the_agent(scraped):
    """The agent read directly every 2 s for 24 s (a 16 s window of rates over 8 s), while the
    pods ran: the same run-queue delay, never a pass."""
    code, stderr, output = scraped["direct"]
    assert "Traceback" not in stderr, stderr
    report = json.loads(output.read_text())
    judged = {m["name"]: m["classification"] for m in report["metrics"]}
    assert judged["runqueue-delay"] == "worse", (stderr, judged)
    assert code in (1, 3) and report["verdict"]["outcome"] != "pass", (stderr, judged)
    if scraped["cgroups"] == "kernel" and judged["cpu-pressure"] == "worse":
        assert code == 1, judged
