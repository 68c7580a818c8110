"""`numaguard node inspect --processes` on real processes: children of the test pinned with
sched_setaffinity, with named threads that burn CPU and memory touched page by page, read
through this machine's real /proc (tests/node_processes_fixture.py), in cgroup trees written in
the kernel's formats, and once in cgroups the kernel itself made (when this machine lets root
make cgroup v2 directories). The kubelet's side is as in test_node_inspect.py: checkpoints, the
KubeletConfiguration, a real gRPC server answering PodResources on the kubelet's socket."""
from __future__ import annotations

import json
import os
import re
import secrets
import shutil
import threading
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from numaguard.lint.cli.main import main
from numaguard.lint.k8s.cpuset import format_cpuset
from numaguard.lint.node.inspect import inspect_node
from numaguard.lint.node.kernel import parse_numa_maps, read_task
from numaguard.lint.node.processes import ProcessOptions
from numaguard.lint.rules.processes import RULES

from node_processes_fixture import (REAL_CPUS, Child, Container, HostNode, Pod, cpu_stat, running, short_tmp,
                                    start_child, stop_child, write_atomic)

A, B = REAL_CPUS[0], REAL_CPUS[-1]
MiB = 2**20
two_cpus = pytest.mark.skipif(len(REAL_CPUS) < 2, reason="the pinning tests need two CPUs this process may use")
REAL_NUMA = sorted(int(p.name[4:]) for p in Path("/sys/devices/system/node").glob("node[0-9]*"))
# A node description with two NUMA nodes puts this machine's memory, all on its NUMA 0, "remote"
# to a container pinned to NUMA 1: that needs a machine whose memory is all on NUMA 0.
one_numa = pytest.mark.skipif(REAL_NUMA != [0], reason="the locality tests need this machine's memory on NUMA 0 only")


top = pytest.fixture(short_tmp)


def inspect(node: HostNode, *extra: str, sample: str = "0"):
    return CliRunner().invoke(main, ["node", "inspect", "--root", str(node.root), "--processes", "--sample", sample,
                                     *extra])


def section(output: str, pod: str, container: str) -> list[str]:
    """The lines under one container's header, up to the next header or the findings."""
    lines = output.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(f"  {pod} {container}: "))
    end = next((i for i in range(start + 1, len(lines)) if not lines[i].startswith("      ")), len(lines))
    return lines[start + 1:end]


def tids(c: Container) -> list[int]:
    return sorted(int(t) for t in os.listdir(f"/proc/{c.pid}/task"))


def tid_named(c: Container, name: str) -> int:
    return next(t for t in tids(c) if Path(f"/proc/{c.pid}/task/{t}/comm").read_text().strip() == name)


def findings(output: str) -> list[str]:
    lines = output.splitlines()
    if "findings:" not in lines:
        return []
    return lines[lines.index("findings:") + 1:-2]


def pinned_pod(**app) -> Pod:
    """shop/pinned-0: app with exclusive CPU B (its process pinned there, a thread that burns
    CPU for a second, 32 MiB touched), and a sidecar in the shared pool, pinned to A."""
    settings = {"exclusive": [B], "memory_numa": [0], "effective": str(B),
                "child": Child(cpus=[B], mib=32, comm="app", threads=[{"name": "burn", "burn": 1.0}, {"name": "idle"}])}
    settings.update(app)
    return Pod("shop", "pinned-0", [Container("app", **settings),
                                    Container("sidecar", effective=str(A), child=Child(cpus=[A], comm="sidecar"))])


# ------------------------------------------------------------------------------- everything holds

@two_cpus
def test_a_pinned_pod_agrees_with_what_the_kernel_enforces(top):
    with running(top, [pinned_pod()]) as node:
        result = inspect(node, sample="0.3s")
        app, sidecar = node.pods[0].containers
        burn = tid_named(app, "burn")
    assert result.exit_code == 0, result.output
    root = node.root
    lines = result.output.splitlines()
    assert lines[7:10] == [
        f"  ok   cgroups {root}/sys/fs/cgroup: cgroup v2, systemd layout (kubepods.slice); 3 container cgroup(s)",
        f"  ok   container log links {root}/var/log/containers: 2 container(s)",
        f"  ok   processes {root}/proc: 2 process(es), 4 thread(s) in 2 container(s)"]
    got = section(result.output, "shop/pinned-0", "app")
    assert got[3:5] == [f"      cgroup:            agrees: cpus {B}, mems 0",
                        f"      threads:           agrees: 3 thread(s) in 1 process(es), allowed {B}, last ran on {B}"]
    memory = re.fullmatch(r"      memory locality:   agrees: (\d+\.\d) MiB resident \(NUMA 0 \1 MiB\), 0\.0% outside "
                          r"NUMA 0", got[5])
    assert memory and float(memory.group(1)) >= 32, got[5]
    assert got[6] == ("      throttling:        agrees: cpu.max max 100000; nr_throttled 0 of 0 periods, 0 s "
                      "throttled (+0 of 0 periods in the 0.3 s sample)")
    assert got[7].startswith(f"      hottest threads:   tid {burn} (burn) "), got[7]     # it burned a second
    assert len(got) == 8
    got = section(result.output, "shop/pinned-0", "sidecar")
    assert got[3:5] == [f"      cgroup:            agrees: cpus {A}, mems 0",
                        f"      threads:           agrees: 1 thread(s) in 1 process(es), allowed {A}, last ran on {A}"]
    assert re.fullmatch(r"      memory locality:   measured: \d+\.\d MiB resident \(NUMA 0 \d+\.\d MiB\); no NUMA "
                        r"node assigned", got[5]), got[5]
    assert got[6] == ("      throttling:        measured: shared CPUs: cpu.max max 100000; nr_throttled 0 of 0 "
                      "periods, 0 s throttled (+0 of 0 periods in the 0.3 s sample)")
    assert re.fullmatch(rf"      hottest threads:   tid {sidecar.pid} \(sidecar\) \d+\.\d\d s on CPU {A}", got[7])
    assert lines[-1] == "2 container(s): 2 agree, 0 differ, 0 unchecked; 0 finding(s)"


@two_cpus
def test_json_report_holds_the_kernel_view(top):
    with running(top, [pinned_pod()]) as node:
        result = inspect(node, "--format", "json", "--threads", "2")
        app = node.pods[0].containers[0]
        pod_uid = node.pods[0].uid
        expected_tids = tids(app)
        mems = {tid: next(line.split(":", 1)[1].strip() for line in Path(f"/proc/{app.pid}/task/{tid}/status")
                          .read_text().splitlines() if line.startswith("Mems_allowed_list:"))
                for tid in expected_tids}
    assert result.exit_code == 0, result.output
    kernel = json.loads(result.stdout)["containers"][0]["kernel"]
    assert kernel["containerId"] == app.id
    assert kernel["cgroup"] == (f"/kubepods.slice/kubepods-pod{pod_uid.replace('-', '_')}.slice/"
                                f"cri-containerd-{app.id}.scope")
    assert kernel["assigned"] == {"cpus": str(B), "cpusFrom": "its exclusive CPUs in the checkpoint",
                                  "exclusiveCpus": str(B), "numaNodes": [0],
                                  "numaFrom": "the Memory Manager checkpoint", "homeNumaNodes": [0]}
    assert (kernel["cpusEffective"], kernel["memsEffective"], kernel["processes"], kernel["threads"]) == (
        str(B), "0", 1, 3)
    hottest = kernel["hottestThreads"]
    assert [h["comm"] for h in hottest][0] == "burn" and len(hottest) == 2        # --threads 2
    assert {h["tid"] for h in hottest} <= set(expected_tids)
    assert all(h["pid"] == app.pid and h["lastCpu"] == B and h["cpusAllowed"] == str(B)
               and h["sampleCpuSeconds"] is None for h in hottest)
    # Mems_allowed_list as the kernel wrote it for the child's threads (this machine's cpuset)
    assert [h["memsAllowed"] for h in hottest] == [mems[h["tid"]] for h in hottest]
    assert hottest[0]["cpuSeconds"] > hottest[1]["cpuSeconds"]
    assert list(kernel["memoryBytesByNuma"]) == ["0"] and kernel["memoryBytesByNuma"]["0"] >= 32 * MiB
    assert kernel["hugepageBytesByNuma"] == {}
    assert kernel["throttling"] == {"cpuMax": "max 100000", "nrPeriods": 0, "nrThrottled": 0, "throttledUsec": 0,
                                    "sampleSeconds": 0.0, "sampleNrPeriods": 0, "sampleNrThrottled": 0,
                                    "sampleThrottledUsec": 0}


# ------------------------------------------------------------------------------- enforced sets and threads

@two_cpus
def test_a_cgroup_wider_than_the_assignment(top):
    """The app's cgroup allows A and B though it holds B alone, and the app pinned itself to A:
    NG412 and NG415 (all its threads are on A), NG416 (it narrowed itself); the sidecar's
    cgroup still holds B, the app's exclusive CPU: NG412 and NG414."""
    wide = format_cpuset([A, B])
    pod = pinned_pod(effective=wide, child=Child(cpus=[A], mib=8, comm="app", threads=[{"name": "stray"}]))
    pod.containers[1].effective = wide
    with running(top, [pod]) as node:
        result = inspect(node)
        app, sidecar = pod.containers
        main_tid, stray = tids(app)
    assert result.exit_code == 1
    assert section(result.output, "shop/pinned-0", "app")[3:5] == [
        f"      cgroup:            differs: cpus {wide}, mems 0 (NG412)",
        f"      threads:           differs: 2 thread(s) in 1 process(es), allowed {A}, last ran on {A} (NG415, NG416)"]
    assert section(result.output, "shop/pinned-0", "sidecar")[3:5] == [
        f"      cgroup:            differs: cpus {wide}, mems 0 (NG412, NG414)",
        f"      threads:           agrees: 1 thread(s) in 1 process(es), allowed {A}, last ran on {A} (NG416)"]
    who = "container app of pod shop/pinned-0"
    assert findings(result.output) == [
        f"  pod/shop/pinned-0  NG412  error  {who}: its cgroup's cpuset.cpus.effective is {wide}, but it was assigned "
        f"{B} (its exclusive CPUs in the checkpoint): CPUs {A} are not its own",
        f"  pod/shop/pinned-0  NG415  error  {who}: 2 of 2 thread(s) can run outside its exclusive CPUs {B}: tid "
        f"{main_tid} (app) allowed {A}, last ran on CPU {A}; tid {stray} (stray) allowed {A}, last ran on CPU {A}",
        f"  pod/shop/pinned-0  NG416  info  {who}: 2 of 2 thread(s) narrowed their CPU affinity within the cgroup's "
        f"{wide} themselves (taskset, sched_setaffinity): tid {main_tid} (app) allowed {A}; tid {stray} (stray) "
        f"allowed {A}",
        f"  pod/shop/pinned-0  NG412  error  container sidecar of pod shop/pinned-0: its cgroup's "
        f"cpuset.cpus.effective is {wide}, but it was assigned {A} (the node's shared pool, defaultCpuSet in the "
        f"checkpoint): CPUs {B} are not its own",
        f"  pod/shop/pinned-0  NG414  error  container sidecar of pod shop/pinned-0: its cgroup's cpuset.cpus.effective "
        f"{wide} holds CPUs {B}, exclusive to {who}",
        f"  pod/shop/pinned-0  NG416  info  container sidecar of pod shop/pinned-0: 1 of 1 thread(s) narrowed their CPU "
        f"affinity within the cgroup's {wide} themselves (taskset, sched_setaffinity): tid {sidecar.pid} (sidecar) "
        f"allowed {A}"]
    assert result.output.splitlines()[-1] == "2 container(s): 0 agree, 2 differ, 0 unchecked; 6 finding(s)"


@two_cpus
def test_a_shared_container_caught_on_an_exclusive_cpu(top):
    """The sidecar's cgroup still holds B, the app's, and one of its threads ran there."""
    wide = format_cpuset([A, B])
    pod = pinned_pod()
    pod.containers[1].effective = wide
    pod.containers[1].child = Child(cpus=[A], comm="sidecar", threads=[{"name": "shipper", "cpus": [B]}])
    with running(top, [pod]) as node:
        result = inspect(node)
        shipper = tid_named(pod.containers[1], "shipper")
    assert result.exit_code == 1
    assert [f for f in findings(result.output) if "NG414" in f] == [
        f"  pod/shop/pinned-0  NG414  error  container sidecar of pod shop/pinned-0: its cgroup's cpuset.cpus.effective "
        f"{wide} holds CPUs {B}, exclusive to container app of pod shop/pinned-0; last ran there: tid {shipper} "
        f"(shipper) on CPU {B}"]


@two_cpus
def test_threads_widened_or_moved_off_the_exclusive_cpus(top):
    """Each half of NG415 alone: a thread that widened its affinity to A and B (it may still be
    on B), and a thread that ran on A and, blocked there, was re-pinned to B by another thread
    (its affinity is B alone, but the kernel leaves it on A until it wakes)."""
    pod = pinned_pod(child=Child(cpus=[B], mib=8, comm="app", threads=[{"name": "widened", "cpus": [A, B]},
                                                                         {"name": "moved", "cpus": [A], "repin": [B]}]))
    pod.containers.pop()
    with running(top, [pod]) as node:
        app = pod.containers[0]
        widened, moved = tid_named(app, "widened"), tid_named(app, "moved")
        result = inspect(node)
        last = {tid: read_task(Path("/proc"), app.pid, tid).last_cpu for tid in (widened, moved)}
        allowed = {tid: read_task(Path("/proc"), app.pid, tid).cpus_allowed for tid in (widened, moved)}
    assert allowed == {widened: frozenset({A, B}), moved: frozenset({B})} and last[moved] == A
    assert result.exit_code == 1
    assert findings(result.output) == [
        f"  pod/shop/pinned-0  NG415  error  container app of pod shop/pinned-0: 2 of 3 thread(s) can run outside "
        f"its exclusive CPUs {B}: tid {widened} (widened) allowed {format_cpuset([A, B])}, last ran on CPU "
        f"{last[widened]}; tid {moved} (moved) allowed {B}, last ran on CPU {A}"]


@two_cpus
def test_the_hottest_threads_are_those_of_the_sample(top):
    """One thread spins through the sample; the one that burned a second before it comes after."""
    pod = pinned_pod(child=Child(cpus=[B], comm="app", threads=[{"name": "burn", "burn": 1.0},
                                                                  {"name": "spin", "spin": True}]))
    pod.containers.pop()
    with running(top, [pod]) as node:
        result = inspect(node, "--format", "json", sample="0.5s")
    hottest = json.loads(result.stdout)["containers"][0]["kernel"]["hottestThreads"]
    assert [h["comm"] for h in hottest][0] == "spin"
    # spinning on B throughout the sample (how much CPU it got depends on the machine's load);
    # the burner was done before the sample began
    burn = next(h for h in hottest if h["comm"] == "burn")
    assert hottest[0]["sampleCpuSeconds"] > burn["sampleCpuSeconds"]
    assert burn["cpuSeconds"] > burn["sampleCpuSeconds"]
    assert [h["sampleCpuSeconds"] for h in hottest] == sorted((h["sampleCpuSeconds"] for h in hottest), reverse=True)


@two_cpus
def test_a_container_in_its_pods_shared_pool(top):
    """Pod-level resource managers (KEP-5526): the pod's CPUs A and B (podEntries), B exclusive
    to the app, so the sidecar's pool is A; the pod's memory on NUMA 0 (memory podEntries). The
    node's own shared pool is another CPU, of the description only."""
    spare = max(REAL_CPUS) + 1
    pod = pinned_pod(memory_numa=[])
    pod.pod_cpus, pod.pod_memory_numa = [A, B], [0]
    with running(top, [pod], numa_of={A: 0, B: 0, spare: 0}, reserved=spare) as node:
        result = inspect(node, "--format", "json")
        write_atomic(node.container_cgroup(pod, pod.containers[1]) / "cpuset.cpus.effective", f"{spare}\n")
        moved = inspect(node)
    app, sidecar = (c["kernel"]["assigned"] for c in json.loads(result.stdout)["containers"])
    # AllocatePod gives every container of the pod an entry (the shared ones the pod's shared pool)
    assert app == {"cpus": str(B), "cpusFrom": "its exclusive CPUs in the checkpoint", "exclusiveCpus": str(B),
                   "numaNodes": [0], "numaFrom": "the Memory Manager checkpoint", "homeNumaNodes": [0]}
    assert sidecar == {"cpus": str(A), "cpusFrom": "the pod's shared pool: its podEntries less its exclusive CPUs",
                       "exclusiveCpus": "", "numaNodes": [0], "numaFrom": "the Memory Manager checkpoint",
                       "homeNumaNodes": [0]}
    assert result.exit_code == 0, result.stdout
    assert findings(moved.output) == [
        f"  pod/shop/pinned-0  NG412  error  container sidecar of pod shop/pinned-0: its cgroup's cpuset.cpus.effective "
        f"is {spare}, but it was assigned {A} (the pod's shared pool: its podEntries less its exclusive CPUs): CPUs "
        f"{spare} are not its own; CPUs {A} are missing"]


@two_cpus
def test_memory_nodes_other_than_assigned_are_ng413(top):
    pod = pinned_pod(mems="0-1")
    with running(top, [pod], numa_of={A: 0, B: 0}) as node:
        result = inspect(node)
    assert result.exit_code == 1
    assert findings(result.output) == [
        "  pod/shop/pinned-0  NG413  error  container app of pod shop/pinned-0: its cgroup's cpuset.mems.effective is "
        "0,1, but the Memory Manager assigned NUMA 0 (the Memory Manager checkpoint): NUMA 1 not its own"]


@two_cpus
def test_threads_the_application_pinned_itself_are_info(top):
    """The app holds A and B (reserved: a CPU of the description only) and pins one thread to B."""
    spare = max(REAL_CPUS) + 1
    both = format_cpuset([A, B])
    pod = Pod("shop", "pinned-0", [Container(
        "app", exclusive=[A, B], memory_numa=[0], effective=both,
        child=Child(cpus=[A, B], comm="app", threads=[{"name": "pinned", "cpus": [B]}, {"name": "free"}]))])
    with running(top, [pod], numa_of={A: 0, B: 0, spare: 0}, reserved=spare) as node:
        result = inspect(node)
        pinned = tid_named(pod.containers[0], "pinned")
    assert result.exit_code == 0, result.output
    threads = section(result.output, "shop/pinned-0", "app")[4]
    assert re.fullmatch(rf"      threads:           agrees: 3 thread\(s\) in 1 process\(es\), allowed {both}, last ran "
                        rf"on [0-9,-]+ \(NG416\)", threads), threads
    assert findings(result.output) == [
        f"  pod/shop/pinned-0  NG416  info  container app of pod shop/pinned-0: 1 of 3 thread(s) narrowed their CPU "
        f"affinity within the cgroup's {both} themselves (taskset, sched_setaffinity): tid {pinned} (pinned) "
        f"allowed {B}"]


def test_a_thread_name_with_parentheses_is_read_from_stat(tmp_path):
    """comm may hold ") (": the fields of stat are counted from the last parenthesis."""
    child = start_child(Child(threads=[{"name": "x) (y 1", "cpus": [A]}]))
    try:
        tid = max(int(t) for t in os.listdir(f"/proc/{child.pid}/task"))
        task = read_task(Path("/proc"), child.pid, tid)
    finally:
        stop_child(child)
    assert (task.comm, task.cpus_allowed, task.last_cpu) == ("x) (y 1", frozenset({A}), A)


# ------------------------------------------------------------------------------- memory locality

@two_cpus
@one_numa
def test_memory_outside_its_numa_node_is_a_warning(top):
    """The description puts B on NUMA 1 and the Memory Manager the app's memory there; this
    machine has one NUMA node, so every page the app touched is on NUMA 0."""
    pod = pinned_pod(memory_numa=[1], mems="1", child=Child(cpus=[B], mib=64, comm="app"))
    pod.containers.pop()
    with running(top, [pod], numa_of={A: 0, B: 1}) as node:
        result = inspect(node)
        relaxed = inspect(node, "--max-remote-memory", "100")
    assert result.exit_code == 0, result.output
    (finding,) = findings(result.output)
    match = re.fullmatch(r"  pod/shop/pinned-0  NG417  warning  container app of pod shop/pinned-0: 100\.0% of its "
                         r"resident memory \((\d+\.\d) MiB of \1 MiB\) is on NUMA 0, outside its NUMA 1 \(Memory "
                         r"Manager\); more than 10% allowed", finding)
    assert match and float(match.group(1)) >= 64, finding
    assert re.fullmatch(r"      memory locality:   warns: (\d+\.\d) MiB resident \(NUMA 0 \1 MiB\), 100\.0% outside "
                        r"NUMA 1 \(NG417\)", section(result.output, "shop/pinned-0", "app")[5])
    assert result.output.splitlines()[-1] == ("1 container(s): 0 agree, 0 differ, 1 with warnings, 0 unchecked; "
                                              "1 finding(s)")
    assert relaxed.exit_code == 0 and findings(relaxed.output) == []
    assert relaxed.output.splitlines()[-1] == "1 container(s): 1 agree, 0 differ, 0 unchecked; 0 finding(s)"


HUGETLB_MAPS = """55d052457000 default file=/usr/bin/db mapped=2 mapmax=2 N0=2 kernelpagesize_kB=4
7f2a3c000000 bind:0 anon=2048 dirty=2048 active=0 N0=2048 kernelpagesize_kB=4
7f2a40000000 default file=/dev/hugepages/db-shm huge dirty=512 N1=512 kernelpagesize_kB=2048
7ffc1a2b3000 default stack anon=3 dirty=3 N0=3 kernelpagesize_kB=4
"""


def test_numa_maps_counts_hugepages_apart():
    pages = parse_numa_maps(HUGETLB_MAPS)
    assert pages.memory == {0: (2 + 2048 + 3) * 4096} and pages.hugepages == {1: 512 * 2 * MiB}


@two_cpus
def test_hugepages_of_a_process_outside_its_numa_node(top):
    """<root>/proc is a directory: the app's real process, and beside it a process made here
    from a copy of its real status and stat files with a numa_maps holding 1 GiB of 2 MiB
    hugepages on NUMA 1 (a hugetlbfs mapping as show_numa_map prints it)."""
    pod = pinned_pod(child=Child(cpus=[B], mib=8, comm="app"))
    pod.containers.pop()
    with running(top, [pod], numa_of={A: 0, B: 0}, proc="dir") as node:
        app = pod.containers[0]
        fake = 4_000_000 + secrets.randbelow(100_000)         # above pid_max: never a real process
        tid = tids(app)[0]
        task = node.root / f"proc/{fake}/task/{fake}"
        task.mkdir(parents=True)
        for name in ("status", "stat"):
            text = Path(f"/proc/{app.pid}/task/{tid}/{name}").read_text()
            (task / name).write_text(text.replace(f"{app.pid} (app)", f"{fake} (db-shm)", 1))
        (node.root / f"proc/{fake}/numa_maps").write_text(HUGETLB_MAPS)
        write_atomic(node.container_cgroup(pod, app) / "cgroup.procs", f"{app.pid}\n{fake}\n")
        result = inspect(node, "--format", "json")
    kernel = json.loads(result.stdout)["containers"][0]["kernel"]
    assert kernel["processes"] == 2 and kernel["threads"] == 2
    assert kernel["hugepageBytesByNuma"] == {"1": 2**30}
    assert kernel["memoryBytesByNuma"]["0"] >= 8 * MiB + 2053 * 4096
    (finding,) = json.loads(result.stdout)["findings"]
    assert finding["rule"] == "NG417"
    assert re.fullmatch(r"container app of pod shop/pinned-0: \d+\.\d% of its resident memory \(1\.0 GiB of 1\.\d GiB\) "
                        r"is on NUMA 1, outside its NUMA 0 \(Memory Manager\); more than 10% allowed; hugepages: "
                        r"1\.0 GiB of 1\.0 GiB outside", finding["message"]), finding["message"]


# ------------------------------------------------------------------------------- throttling

def throttled_pod() -> Pod:
    """app: exclusive B with a CFS quota an old kubelet set; sidecar: shared, with a quota."""
    pod = pinned_pod(cpu_max="200000 100000", cpu_stat=cpu_stat(50, 10, 2_000))
    pod.containers[1].cpu_max = "50000 100000"
    pod.containers[1].cpu_stat = cpu_stat(400, 40, 1_500_000)
    return pod


@two_cpus
def test_an_exclusive_container_throttled_during_the_sample(top):
    """The kernel's counters rising during the 5 s sample, played by the `sleep` that waits it out."""
    pod = throttled_pod()
    waited = []

    def kernel_counts(seconds: float) -> None:
        waited.append(seconds)
        write_atomic(node.container_cgroup(pod, pod.containers[0]) / "cpu.stat", cpu_stat(100, 12, 5_100))
        write_atomic(node.container_cgroup(pod, pod.containers[1]) / "cpu.stat", cpu_stat(450, 45, 1_800_000))

    with running(top, [pod]) as node:
        report = inspect_node(root=str(node.root), processes=ProcessOptions(sample=5.0), sleep=kernel_counts)
    assert waited == [5.0]
    assert [f["message"] for f in report.findings] == [
        f"container app of pod shop/pinned-0: it holds exclusive CPUs {B} and was CFS-throttled during the 5 s "
        f"sample: nr_throttled 10 -> 12 (2 of 50 periods, 3.1 ms throttled); cpu.max is \"200000 100000\", a quota "
        "the 1.37 kubelet does not set on exclusive CPUs"]
    assert [(f["rule"], f["severity"], f["file"], f["path"], f["container"]) for f in report.findings] == [
        ("NG418", "error", "pod/shop/pinned-0", "cpu.stat.nr_throttled", "app")]
    app, sidecar = report.containers
    assert str(app.checks["throttling"]) == ("differs: cpu.max 200000 100000; nr_throttled 12 of 100 periods, "
                                             "0.0051 s throttled (+2 of 50 periods in the 5 s sample) (NG418)")
    assert str(sidecar.checks["throttling"]) == ("measured: shared CPUs: cpu.max 50000 100000; nr_throttled 45 of 450 "
                                                 "periods, 1.8 s throttled (+5 of 50 periods in the 5 s sample)")
    assert report.exit_code == 1


@two_cpus
def test_throttling_that_does_not_rise_is_no_finding(top):
    """Throttled once, long ago: without a rise during the sample there is nothing to report."""
    with running(top, [throttled_pod()]) as node:
        result = inspect(node, sample="0.2s")
    assert result.exit_code == 0, result.output
    assert section(result.output, "shop/pinned-0", "app")[6] == (
        "      throttling:        agrees: cpu.max 200000 100000; nr_throttled 10 of 50 periods, 0.002 s throttled "
        "(+0 of 0 periods in the 0.2 s sample)")


@two_cpus
def test_throttling_rising_while_the_cli_samples(top):
    """A thread plays the kernel: the app's cpu.stat counts on while `--sample 0.3s` waits."""
    pod = throttled_pod()
    stop = threading.Event()

    def tick() -> None:
        n = 0
        while not stop.wait(0.01):
            n += 1
            write_atomic(node.container_cgroup(pod, pod.containers[0]) / "cpu.stat",
                         cpu_stat(50 + 10 * n, 10 + n, 2_000 + 300 * n))

    with running(top, [pod]) as node:
        ticker = threading.Thread(target=tick)
        ticker.start()
        try:
            result = inspect(node, sample="0.3s")
        finally:
            stop.set()
            ticker.join()
    assert result.exit_code == 1
    (finding,) = findings(result.output)
    assert re.fullmatch(rf"  pod/shop/pinned-0  NG418  error  container app of pod shop/pinned-0: it holds exclusive "
                        rf"CPUs {B} and was CFS-throttled during the 0\.3 s sample: nr_throttled (\d+) -> (\d+) \(\d+ "
                        rf"of \d+ periods, [0-9.]+ ms throttled\); cpu\.max is \"200000 100000\", a quota the 1\.37 "
                        rf"kubelet does not set on exclusive CPUs", finding), finding


# ------------------------------------------------------------------------------- finding the containers

@two_cpus
def test_without_container_ids_the_processes_are_unchecked(top, tmp_path):
    """Then the ids come from --pods: the Pods with their status. The description has a third
    CPU, reserved, so that the pod fits (the simulator replays the manifests): the sidecar's
    shared pool holds it too, and the sidecar, pinned to A, narrowed itself (NG416, info)."""
    spare = max(REAL_CPUS) + 1
    pod = pinned_pod()
    pod.containers[1].effective = format_cpuset([A, spare])
    with running(top, [pod], links=False, numa_of={A: 0, B: 0, spare: 0}, reserved=spare) as node:
        result = inspect(node)
        pods_file = tmp_path / "pods.yaml"
        pods_file.write_text(yaml.safe_dump({"apiVersion": "v1", "kind": "List", "items": [{
            "apiVersion": "v1", "kind": "Pod", "metadata": {"name": "pinned-0", "namespace": "shop", "uid": pod.uid},
            "spec": {"containers": [{"name": c.name, "image": "x", "resources": {"requests": r, "limits": r}}
                                    for c, r in zip(pod.containers, ({"cpu": "1", "memory": "256Mi"},
                                                                     {"cpu": "100m", "memory": "64Mi"}))]},
            "status": {"containerStatuses": [{"name": c.name, "containerID": f"containerd://{c.id}"}
                                             for c in pod.containers]}}]}))
        given = inspect(node, "--pods", str(pods_file))
    assert result.exit_code == 3
    why = ("unchecked: no container id (give --pods with the pods' status, or mount the kubelet's "
           "/var/log/containers)")
    assert section(result.output, "shop/pinned-0", "app")[3:7] == [
        f"      cgroup:            {why}", f"      threads:           {why}", f"      memory locality:   {why}",
        f"      throttling:        {why}"]
    assert f"  FAIL container log links {node.root}/var/log/containers: not found (mount it, or give --pods with " \
           "the pods' status, to find each container's cgroup)" in result.output.splitlines()
    assert result.output.splitlines()[-1] == ("2 container(s): 0 agree, 0 differ, 2 unchecked; 0 finding(s); "
                                              "incomplete: 2 container(s) not fully seen in the kernel")
    assert given.exit_code == 0, given.output
    assert section(given.output, "shop/pinned-0", "app")[3] == f"      cgroup:            agrees: cpus {B}, mems 0"


@two_cpus
def test_a_container_that_is_not_running(top):
    pod = pinned_pod()
    pod.containers[1].child, pod.containers[1].running = None, False
    with running(top, [pod]) as node:
        result = inspect(node)
    assert result.exit_code == 3
    assert section(result.output, "shop/pinned-0", "sidecar")[3] == (
        f"      cgroup:            unchecked: not running: no cgroup for container id {pod.containers[1].id[:12]}")


@two_cpus
@pytest.mark.parametrize("layout,qos,cgroup", [
    ("systemd", "burstable", "/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod{uid_}.slice/"
                             "cri-containerd-{id}.scope"),
    ("systemd", "besteffort", "/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod{uid_}.slice/"
                              "cri-containerd-{id}.scope"),
    ("cgroupfs", "guaranteed", "/kubepods/pod{uid}/{id}"),
    ("cgroupfs", "burstable", "/kubepods/burstable/pod{uid}/{id}"),
])
def test_the_kubelets_cgroup_layouts(top, layout, qos, cgroup):
    both = format_cpuset([A, B])           # the node's shared pool: nothing is exclusive
    pod = Pod("shop", "web-0", [Container("web", effective=both, child=Child(cpus=[A, B], comm="web"))], qos=qos)
    with running(top, [pod], layout=layout) as node:
        result = inspect(node, "--format", "json")
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    c = pod.containers[0]
    assert report["containers"][0]["kernel"]["cgroup"] == cgroup.format(uid=pod.uid, uid_=pod.uid.replace("-", "_"),
                                                                        id=c.id)
    pods_root = "kubepods.slice" if layout == "systemd" else "kubepods"
    assert report["sources"][6]["message"] == f"cgroup v2, {layout} layout ({pods_root}); 2 container cgroup(s)"


@two_cpus
def test_a_cri_o_container_with_its_processes_one_level_down(top):
    """CRI-O names the container's cgroup crio-<id>.scope and conmon's crio-conmon-<id>.scope
    (not the container); crun puts the processes in a `container` cgroup below the scope."""
    pod = pinned_pod()
    pod.containers.pop()
    with running(top, [pod]) as node:
        app = pod.containers[0]
        scope = node.container_cgroup(pod, app)
        crio = scope.with_name(f"crio-{app.id}.scope")
        scope.rename(crio)
        (crio / "container").mkdir()
        (crio / "cgroup.procs").rename(crio / "container/cgroup.procs")
        (crio / "cgroup.procs").write_text("")
        conmon = crio.with_name(f"crio-conmon-{app.id}.scope")
        conmon.mkdir()
        (conmon / "cgroup.procs").write_text(f"{os.getpid()}\n")
        result = inspect(node, "--format", "json")
    kernel = json.loads(result.stdout)["containers"][0]["kernel"]
    assert result.exit_code == 0, result.stdout
    assert kernel["cgroup"].endswith(f"/crio-{app.id}.scope") and (kernel["processes"], kernel["threads"]) == (1, 3)


@two_cpus
@one_numa
def test_numa_maps_that_cannot_be_read_leave_the_locality_unchecked(top):
    """A process whose numa_maps does not open (here: a directory stands for it; on a node,
    EACCES without ptrace access) leaves that container's memory unjudged, and says why: no
    NG417 from the worker whose numa_maps could be read, though its 16 MiB are all on NUMA 0,
    outside the app's NUMA 1 (judged, that would warn)."""
    pod = pinned_pod(memory_numa=[1], mems="1")
    pod.containers.pop()
    worker = start_child(Child(cpus=[B], mib=16, comm="worker"))
    try:
        with running(top, [pod], numa_of={A: 0, B: 1}, proc="dir") as node:
            app = pod.containers[0]
            copy = node.root / f"proc/{app.pid}"
            copy.unlink()
            copy.mkdir()
            (copy / "task").symlink_to(f"/proc/{app.pid}/task")
            (copy / "numa_maps").mkdir()
            (node.root / f"proc/{worker.pid}").symlink_to(f"/proc/{worker.pid}")
            write_atomic(node.container_cgroup(pod, app) / "cgroup.procs", f"{app.pid}\n{worker.pid}\n")
            result = inspect(node)
    finally:
        stop_child(worker)
    assert result.exit_code == 3
    assert section(result.output, "shop/pinned-0", "app")[4:6] == [
        f"      threads:           agrees: 4 thread(s) in 2 process(es), allowed {B}, last ran on {B}",
        f"      memory locality:   unchecked: /proc/{app.pid}/numa_maps: Is a directory"]
    assert findings(result.output) == []
    assert result.output.splitlines()[-1] == ("1 container(s): 0 agree, 0 differ, 1 unchecked; 0 finding(s); "
                                              "incomplete: 1 container(s) not fully seen in the kernel")


def test_numa_maps_refused_by_the_ptrace_check_says_what_the_reader_needs(monkeypatch):
    """proc_mem_open refuses numa_maps without ptrace read access (EACCES); root here always has
    it, so the refusal is played by the open itself."""
    from numaguard.lint.node.kernel import read_numa_maps

    real = Path.read_text

    def refuse(self, *args, **kwargs):
        if self.name == "numa_maps":
            raise PermissionError(13, "Permission denied")
        return real(self, *args, **kwargs)

    monkeypatch.setattr(Path, "read_text", refuse)
    assert read_numa_maps(Path("/proc"), os.getpid()) == (
        f"/proc/{os.getpid()}/numa_maps: Permission denied (the reader needs ptrace access: CAP_SYS_PTRACE, and no "
        "AppArmor profile that forbids it)")


def write_v1_tree(root: Path, hybrid: bool) -> None:
    """A legacy hierarchy as this machine mounts it: a tmpfs with one directory per controller,
    and with systemd's hybrid mode a cgroup v2 at unified/ without controllers."""
    for controller in ("cpu", "cpuacct", "cpuset", "memory", "pids", "systemd"):
        (root / controller).mkdir(parents=True)
        (root / controller / "tasks").write_text("1\n")
    (root / "cpuset/cpuset.effective_cpus").write_text("0-1\n")
    if hybrid:
        (root / "unified").mkdir()
        (root / "unified/cgroup.controllers").write_text("\n")


@two_cpus
@pytest.mark.parametrize("tree", ["v1", "hybrid", "this machine"])
def test_cgroup_v1_is_not_supported(top, tree):
    real = Path("/sys/fs/cgroup")
    if tree == "this machine" and (real / "cgroup.controllers").exists():
        pytest.skip("this machine mounts cgroup v2 at /sys/fs/cgroup")
    with running(top, [pinned_pod()]) as node:
        shutil.rmtree(node.cgroup_root)
        if tree == "this machine":
            node.cgroup_root.symlink_to(real)
        else:
            write_v1_tree(node.cgroup_root, hybrid=tree == "hybrid")
        result = inspect(node)
    hybrid = tree == "hybrid" or (tree == "this machine" and (real / "unified/cgroup.controllers").exists())
    assert result.exit_code == 3
    assert (f"  FAIL cgroups {node.root}/sys/fs/cgroup: cgroup v1 is not supported ("
            + ("hybrid: v2 only at unified/, without controllers; " if hybrid else "")
            + "--processes reads the cgroup v2 cpuset and cpu files: boot the node with "
              "systemd.unified_cgroup_hierarchy=1)") in result.output.splitlines()
    assert section(result.output, "shop/pinned-0", "app")[3:7] == [
        f"      {check + ':':<19}skipped: no cgroup v2 tree" for check in ("cgroup", "threads", "memory locality",
                                                                         "throttling")]
    assert result.output.splitlines()[-1] == (
        f"2 container(s): 2 agree, 0 differ, 0 unchecked; 0 finding(s); incomplete: cgroups {node.root}/sys/fs/cgroup: "
        "cgroup v1 is not supported")


@two_cpus
def test_processes_of_another_pid_namespace(top):
    """cgroup.procs read from another PID namespace lists 0 for each process it cannot see."""
    pod = pinned_pod()
    pod.containers.pop()
    with running(top, [pod]) as node:
        write_atomic(node.container_cgroup(pod, pod.containers[0]) / "cgroup.procs", "0\n0\n")
        result = inspect(node)
    assert result.exit_code == 3
    assert (f"  ok   processes {node.root}/proc: 0 process(es), 0 thread(s) in 1 container(s); 2 process(es) of "
            "another PID namespace read as 0 in cgroup.procs (run in the host's PID namespace: hostPID)"
            ) in result.output.splitlines()
    assert section(result.output, "shop/pinned-0", "app")[4] == (
        "      threads:           unchecked: no process found in its cgroup (processes of another PID namespace, or "
        "none running)")


# ------------------------------------------------------------------------------- cgroups the kernel made

def cgroup2_mount() -> Path | None:
    for line in Path("/proc/self/mounts").read_text().splitlines():
        fields = line.split()
        if fields[2] == "cgroup2":
            return Path(fields[1])
    return None


@two_cpus
def test_cgroups_the_kernel_made(top):
    """Real cgroup v2 directories (mkdir in the cgroup2 mount: the kernel makes their files),
    named as the kubelet and containerd name them, with the app's process moved in through
    cgroup.procs. Where the cpuset and cpu controllers are not enabled for them (this machine's
    hybrid hierarchy), the report says so for both."""
    mount = cgroup2_mount()
    if mount is None or not os.access(mount, os.W_OK):
        pytest.skip("no cgroup v2 mount this test may write")
    base = mount / f"ng-test-{secrets.token_hex(4)}"
    try:
        base.mkdir()
    except OSError as exc:
        pytest.skip(f"cannot make a cgroup: {exc.strerror}")
    pod = pinned_pod()
    pod.containers.pop()
    made: list[Path] = []
    try:
        with running(top, [pod]) as node:
            fake_tree = node.cgroup_root
            shutil.rmtree(fake_tree)
            fake_tree.symlink_to(base)
            scope = node.container_cgroup(pod, pod.containers[0])
            for folder in reversed([scope, *list(scope.parents)[:2]]):
                folder.mkdir()
                made.append(folder)
            (scope / "cgroup.procs").write_text(f"{pod.containers[0].pid}\n")
            result = inspect(node, sample="0.2s")
            effective = (scope / "cpuset.cpus.effective").read_text().strip() if (
                scope / "cpuset.cpus.effective").exists() else None
            has_cpu = "nr_throttled" in (scope / "cpu.stat").read_text()
    finally:
        for folder in reversed(made):
            folder.rmdir()
        base.rmdir()
    got = section(result.output, "shop/pinned-0", "app")
    assert f"  ok   processes {node.root}/proc: 1 process(es), 3 thread(s) in 1 container(s)" in result.output
    assert got[4] == f"      threads:           agrees: 3 thread(s) in 1 process(es), allowed {B}, last ran on {B}"
    if effective is None:
        assert got[3] == ("      cgroup:            unchecked: no cpuset.cpus.effective in /kubepods.slice/"
                          f"kubepods-pod{pod.uid.replace('-', '_')}.slice/cri-containerd-{pod.containers[0].id}.scope "
                          "(cpuset controller not enabled)")
        assert result.exit_code == 3
    else:
        assert got[3].startswith(f"      cgroup:            {'agrees' if effective == str(B) else 'differs'}: "
                                 f"cpus {effective}")
    if not has_cpu:
        assert got[6] == ("      throttling:        skipped: no throttling counters in cpu.stat (cpu controller not "
                          "enabled)")


# ------------------------------------------------------------------------------- usage

def test_a_bad_sample_duration_is_a_usage_error(tmp_path):
    result = CliRunner().invoke(main, ["node", "inspect", "--root", str(tmp_path), "--processes", "--sample", "5x"])
    assert result.exit_code == 2
    assert result.output.splitlines()[-1] == ("Error: Invalid value for '--sample': '5x' is not a duration like "
                                              "\"5s\", \"500ms\" or \"1m\"")


def test_every_process_rule_is_exercised_here():
    """NG412-NG418 have no lint fixtures (tests/test_rule_fixtures.py): each is triggered here."""
    source = Path(__file__).read_text()
    assert [r.id for r in RULES] == ["NG412", "NG413", "NG414", "NG415", "NG416", "NG417", "NG418"]
    assert all(f"{r.id}  " in source or f'"{r.id}"' in source for r in RULES)


# ------------------------------------------------------------------------------- the reports

@two_cpus
@one_numa
def test_findings_in_sarif_policyreport_and_html(top, tmp_path):
    """One node, seven findings: each where every format puts it, with its exact text; the
    HTML page in Chromium, its NUMA map showing the app's memory on NUMA 0, outside its NUMA 1."""
    from test_html_report import decode_png, open_in_browser, screenshot

    wide = format_cpuset([A, B])
    pod = pinned_pod(memory_numa=[1], mems="1", effective=wide, child=Child(cpus=[A], mib=32, comm="app"))
    pod.containers[1].effective = wide
    with running(top, [pod], numa_of={A: 0, B: 1}) as node:
        out = {fmt: inspect(node, "--format", fmt) for fmt in ("json", "sarif", "policyreport", "html")}
    report = json.loads(out["json"].stdout)
    found = [(f["rule"], f["severity"], f["container"], f["message"], f["remediation"]) for f in report["findings"]]
    assert [(rule, container) for rule, _s, container, _m, _r in found] == [
        ("NG412", "app"), ("NG415", "app"), ("NG416", "app"), ("NG417", "app"),
        ("NG412", "sidecar"), ("NG414", "sidecar"), ("NG416", "sidecar")]
    assert found[0][3] == (f"container app of pod shop/pinned-0: its cgroup's cpuset.cpus.effective is {wide}, but it "
                           f"was assigned {B} (its exclusive CPUs in the checkpoint): CPUs {A} are not its own")
    line = report["summary"]["line"]
    assert line == "2 container(s): 0 agree, 2 differ, 0 unchecked; 7 finding(s)"
    for fmt in ("sarif", "policyreport", "html"):
        assert out[fmt].exit_code == 1
        assert out[fmt].stderr.splitlines() == [f"numaguard: {line}"]

    sarif = json.loads(out["sarif"].stdout)["runs"][0]
    assert [(r["ruleId"], r["level"], r["message"]["text"], r["locations"][0]["physicalLocation"]["artifactLocation"])
            for r in sarif["results"]] == [
        (rule, {"error": "error", "warning": "warning", "info": "note"}[severity], f"{message} Fix: {fix}",
         {"uri": "pod/shop/pinned-0"}) for rule, severity, _c, message, fix in found]
    assert {"NG412", "NG418"} <= {r["id"] for r in sarif["tool"]["driver"]["rules"]}

    (policy,) = list(yaml.safe_load_all(out["policyreport"].stdout))
    assert (policy["kind"], policy["metadata"]["namespace"]) == ("PolicyReport", "shop")
    assert policy["summary"] == {"pass": 2, "fail": 4, "warn": 1, "error": 0, "skip": 0}
    assert [(r["rule"], r["result"], r["severity"], r["message"], r["properties"]["container"], r["resources"])
            for r in policy["results"]] == [
        (rule, {"error": "fail", "warning": "warn", "info": "pass"}[severity],
         {"error": "high", "warning": "medium", "info": "info"}[severity], message, container,
         [{"apiVersion": "v1", "kind": "Pod", "name": "pinned-0", "namespace": "shop"}])
        for rule, severity, container, message, _fix in found]

    html = out["html"].stdout
    rows = re.findall(r'<tr class="finding[^"]*"><td>(NG4\d\d) .*?</td><td class="sev-(\w+)">.*?<td>(.*?)</td><td>(.*?)'
                      r"</td><td>", html)
    node_section = html.split('<details class="node')[1].split("</details>")[0]
    by_order = sorted(found, key=lambda f: ({"error": 0, "warning": 1, "info": 2}[f[1]], f[0]))
    assert [(r[0], r[1]) for r in re.findall(r'<tr class="finding[^"]*"><td>(NG4\d\d) .*?<td class="sev-(\w+)">',
                                             node_section)] == [(f[0], f[1]) for f in by_order]
    assert len(rows) == 2 * len(found)              # in the node's section and again by workload
    assert f"Pod/shop/pinned-0 container app</td><td>{found[3][3]}</td>" in node_section
    assert 'class="mem m-r"' in node_section and 'class="mem m-u"' in node_section   # app remote, sidecar unpinned
    browser = open_in_browser(html, tmp_path)
    assert browser["data-errors"] == [] and browser["data-maps"] == "1" and browser["data-rows"] == str(2 * len(found))
    width, height, pixels, bpp = decode_png(screenshot(html, tmp_path))
    purple = sum(row[i:i + 3] == bytes.fromhex("9333ea") for row in pixels for i in range(0, width * bpp, bpp))
    assert purple >= 144 + 400          # the legend's square, and the app's bar (60 x 8): memory outside its NUMA
