"""Benchmark: what one scrape of `numaguard node agent` costs on a busy node, against a scrape of
an empty prometheus_client registry served the same way in the same run, and the agent's
memory over a long soak.

The node is synthetic and complete: a host root with the kubelet's checkpoints, configuration,
pod log directories and /var/log/containers links (tests/node_processes_fixture.py), a cgroup
v2 tree in the kernel's formats with every file the agent reads (cpuset, cpu.stat, memory.stat,
memory.numa_stat, hugetlb numa_stat for two page sizes, PSI), a /proc of `--processes` processes
with `--threads` threads each (status, stat and schedstat as the kernel writes them, status at
its real length), /proc/stat and per-node numastat of a 64-CPU, 2-NUMA machine. Between two
scrapes `--active` (half) of the threads run (their stat, status and schedstat change), one
process is replaced by a new one, and every 100th scrape a container restarts (a new id and
cgroup).

Both servers are real processes: `numaguard node agent --root <the node> --min-interval 0`, and
the agent's own HTTP server (`agent_server.make_http_server`) around an empty registry: the
baseline, what HTTP and prometheus_client cost with nothing to say. PodResources is a real gRPC
server in a third process. Each server's CPU is read from its /proc/PID/stat (utime + stime)
around batches of scrapes. Goals (issue 23): a scrape of `--containers` 100 containers and 500
processes costs at most 50 ms of CPU; the agent's RSS stays under 100 MB over a 10,000-scrape
soak.

`--real-proc`: the processes are real, one thread each, read through this machine's /proc, so
the kernel's cost of rendering /proc files counts too: `--active` of them wake every 0.2 s
(`tail -f` polling /dev/null), the rest `sleep`; no churn.

    python tests/bench/bench_node_agent.py [--containers 100] [--processes 500] [--threads 1]
                                           [--scrapes 200] [--soak 10000] [--real-proc]
"""
from __future__ import annotations

import argparse
import json
import os
import secrets
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from agent_fixture import SERVING, http_get, hugetlb_numa_stat, memory_stat, numa_stat, psi, write_files  # noqa: E402
from conftest import numaguard_exe  # noqa: E402
from node_processes_fixture import Container, HostNode, Pod, write_atomic  # noqa: E402

CPU_GOAL_MS, RSS_GOAL_MB = 50.0, 100.0
CPUS = 64
MiB = 2**20
STATUS = """Name:\t{comm}
Umask:\t0022
State:\tS (sleeping)
Tgid:\t{pid}
Ngid:\t0
Pid:\t{tid}
PPid:\t1
TracerPid:\t0
Uid:\t1000\t1000\t1000\t1000
Gid:\t1000\t1000\t1000\t1000
FDSize:\t64
Groups:\t1000
NStgid:\t{pid}
NSpid:\t{tid}
NSpgid:\t{pid}
NSsid:\t{pid}
Kthread:\t0
VmPeak:\t  723436 kB
VmSize:\t  723436 kB
VmLck:\t       0 kB
VmPin:\t       0 kB
VmHWM:\t   91800 kB
VmRSS:\t   91800 kB
RssAnon:\t   80012 kB
RssFile:\t   11788 kB
RssShmem:\t       0 kB
VmData:\t  160520 kB
VmStk:\t     132 kB
VmExe:\t    2796 kB
VmLib:\t    5908 kB
VmPTE:\t     352 kB
VmSwap:\t       0 kB
HugetlbPages:\t       0 kB
CoreDumping:\t0
THP_enabled:\t1
untag_mask:\t0xffffffffffffffff
Threads:\t{threads}
SigQ:\t0/513162
SigPnd:\t0000000000000000
ShdPnd:\t0000000000000000
SigBlk:\t0000000000000000
SigIgn:\t0000000001001000
SigCgt:\t0000000180004002
CapInh:\t0000000000000000
CapPrm:\t0000000000000000
CapEff:\t0000000000000000
CapBnd:\t00000000a80425fb
CapAmb:\t0000000000000000
NoNewPrivs:\t1
Seccomp:\t2
Seccomp_filters:\t1
Speculation_Store_Bypass:\tthread vulnerable
SpeculationIndirectBranch:\tconditional enabled
Cpus_allowed:\t{mask}
Cpus_allowed_list:\t{allowed}
Mems_allowed:\t00000000,00000003
Mems_allowed_list:\t0-1
voluntary_ctxt_switches:\t{voluntary}
nonvoluntary_ctxt_switches:\t{involuntary}
"""


def stat_line(pid: int, tid: int, comm: str, ticks: int, start: int, cpu: int) -> str:
    fields = (["S", "1", str(pid), str(pid), "0", "-1", "4194560", "3211", "0", "12", "0", str(ticks), str(ticks // 4),
               "0", "0", "20", "0", "2", "0", str(start), "740798464", "22950", "18446744073709551615"]
              + ["0"] * 12 + ["17", str(cpu)] + ["0"] * 13)
    return f"{tid} ({comm}) " + " ".join(fields) + "\n"


class SyntheticNode:
    """The host root and its processes; `churn` makes threads come and go and containers restart."""

    def __init__(self, top: Path, containers: int, processes: int, threads: int, real_proc: bool,
                 active: float) -> None:
        self.threads, self.real_proc, self.active = threads, real_proc, active
        numa_of = {cpu: cpu // (CPUS // 2) for cpu in range(CPUS)}
        pods = []
        for p in range(containers // 2):
            exclusive = [2 + 2 * p, 3 + 2 * p] if p < 10 else []       # 10 pods hold 2 CPUs each
            pods.append(Pod("shop", f"web-{p}", [
                Container("app", exclusive=exclusive, memory_numa=[exclusive[0] // 32] if exclusive else [],
                          effective=",".join(map(str, exclusive)) if exclusive else "0-1,22-63"),
                Container("log", effective="0-1,22-63")], qos="guaranteed" if exclusive else "burstable"))
        self.node = HostNode(top, pods, numa_of=numa_of, reserved=0, proc="link" if real_proc else "dir").write()
        self.pods = pods
        self.containers = [(pod, c) for pod in pods for c in pod.containers]
        self.sleepers: list[subprocess.Popen] = []
        self.pids: dict[int, list[int]] = {}                 # container index -> pids
        self.next_pid = 100000
        self.tick = 0
        self._sysfs()
        for i in range(len(self.containers)):
            self._cgroup_files(i)
        per = processes // len(self.containers)
        for i in range(len(self.containers)):
            self.pids[i] = [self._process(i) for _ in range(per + (1 if i < processes % len(self.containers) else 0))]
            self._procs(i)
        if not real_proc:
            self._proc_stat()

    # ------------------------------------------------------------------ files
    def _sysfs(self) -> None:
        root = self.node.root / "sys"
        for size in ("hugepages-2048kB", "hugepages-1048576kB"):
            write_files(root / "kernel/mm/hugepages" / size, {"nr_hugepages": "512\n" if size == "hugepages-2048kB" else "0\n"})
        for numa in (0, 1):
            write_files(root / f"devices/system/node/node{numa}", {
                "numastat": f"numa_hit 918273645\nnuma_miss {numa * 1234}\nnuma_foreign 0\ninterleave_hit 1084\n"
                            f"local_node 918270000\nother_node {numa * 3645}\n"})

    def _cgroup_files(self, i: int) -> None:
        pod, c = self.containers[i]
        write_files(self.node.container_cgroup(pod, c), {
            "memory.stat": memory_stat(8123456, 321, migrated=4567, anon=512 * MiB, file=64 * MiB),
            "memory.numa_stat": numa_stat({0: 400 * MiB, 1: 112 * MiB}, {0: 60 * MiB, 1: 4 * MiB}),
            "hugetlb.2MB.numa_stat": hugetlb_numa_stat({0: 64 * MiB, 1: 0}),
            "hugetlb.1GB.numa_stat": hugetlb_numa_stat({0: 0, 1: 0}),
            "cpu.pressure": psi(123456789, 98765), "memory.pressure": psi(4567, 123)})

    def _process(self, i: int) -> int:
        if self.real_proc:
            pod, c = self.containers[i]
            cpus = [int(x) for x in (c.effective or "0").replace("-", ",").split(",")][:1]
            cpus = [cpu for cpu in cpus if cpu in os.sched_getaffinity(0)] or sorted(os.sched_getaffinity(0))[:1]
            # the active share wakes every 0.2 s (tail polling /dev/null), the rest sleeps
            busy = len(self.sleepers) % 100 < self.active * 100
            command = ["tail", "---disable-inotify", "-s", "0.2", "-f", "/dev/null"] if busy else ["sleep", "3600"]
            s = subprocess.Popen(command, preexec_fn=lambda: os.sched_setaffinity(0, cpus))
            self.sleepers.append(s)
            return s.pid
        self.next_pid += 1 + self.threads
        pid = self.next_pid
        for t in range(self.threads):
            self._thread(i, pid, pid + t)
            if t:                                  # /proc/TID reaches the thread, as in procfs
                (self.node.root / "proc" / str(pid + t)).symlink_to(str(pid))
        return pid

    def _thread(self, i: int, pid: int, tid: int) -> None:
        pod, c = self.containers[i]
        allowed = c.effective or "0-1,22-63"
        cpu = int(allowed.split(",")[0].split("-")[0])
        self.tick += 1
        write_files(self.node.root / "proc" / str(pid) / "task" / str(tid), {
            "stat": stat_line(pid, tid, "worker", 1000 + self.tick, 5000 + tid, cpu),
            "status": STATUS.format(comm="worker", pid=pid, tid=tid, threads=self.threads, mask="ffffffff,ffffffff",
                                    allowed=allowed, voluntary=1000 + self.tick, involuntary=self.tick % 97),
            "schedstat": f"{(1000 + self.tick) * 10_000_000} {self.tick * 1_000_000} {self.tick}\n"})

    def _procs(self, i: int) -> None:
        pod, c = self.containers[i]
        folder = self.node.container_cgroup(pod, c)
        write_atomic(folder / "cgroup.procs", "".join(f"{p}\n" for p in self.pids[i]))
        tids = [p + t for p in self.pids[i] for t in range(self.threads)] if not self.real_proc else self.pids[i]
        write_atomic(folder / "cgroup.threads", "".join(f"{t}\n" for t in tids))

    def _proc_stat(self) -> None:
        self.tick += 1
        lines = [f"cpu{c} {1000 + self.tick} 0 {500 + c} 90000 12 0 3 0 0 0" for c in range(CPUS)]
        (self.node.root / "proc/stat").write_text("cpu  0 0 0 0 0 0 0 0 0 0\n" + "\n".join(lines) + "\nctxt 0\n")

    # ------------------------------------------------------------------ churn
    def churn(self, n: int, files: bool = True) -> None:
        """Between scrape n and n + 1: `active` of the threads run (their three files change;
        `files` False: only their schedstat, which is what makes the agent read the other two,
        and is cheaper to write in a soak), one process is replaced by a new one (new tids),
        and every 100th time a container restarts (a new id: a new cgroup and link; its counters
        start again)."""
        if self.real_proc:
            return
        for i, pids in self.pids.items():
            for pid in pids:
                if (pid // (1 + self.threads)) % 100 < self.active * 100:
                    for t in range(self.threads):
                        if files:
                            self._thread(i, pid, pid + t)
                        else:
                            self.tick += 1
                            (self.node.root / f"proc/{pid}/task/{pid + t}/schedstat").write_text(
                                f"{(1000 + self.tick) * 10_000_000} {self.tick * 1_000_000} {self.tick}\n")
        i = n % len(self.containers)
        if self.pids[i]:
            old = self.pids[i].pop(0)
            shutil.rmtree(self.node.root / "proc" / str(old))
            for t in range(1, self.threads):
                (self.node.root / "proc" / str(old + t)).unlink()
            self.pids[i].append(self._process(i))
            self._procs(i)
        self._proc_stat()
        if n % 100 == 99:
            pod, c = self.containers[(n // 100) % len(self.containers)]
            old_dir, old_id = self.node.container_cgroup(pod, c), c.id
            c.id = secrets.token_hex(32)
            old_dir.rename(self.node.container_cgroup(pod, c))
            (self.node.root / "var/log/containers" / f"{pod.name}_{pod.namespace}_{c.name}-{old_id}.log").unlink()
            self.node.write_links()

    def close(self) -> None:
        for s in self.sleepers:
            s.kill()
            s.wait()


def serve_podresources(node: HostNode) -> subprocess.Popen:
    """The recorded PodResources server in a process of its own."""
    spec = {"socket": str(node.root / "var/lib/kubelet/pod-resources/kubelet.sock"), "listed": node.listed(),
            "allocatable": node.allocatable()}
    code = ("import json, sys, time; sys.path.insert(0, %r)\n"
            "from concurrent import futures\nimport grpc\n"
            "from numaguard.lint.node.podresources import api_pb2_grpc\n"
            "from test_node_inspect import RecordedLister\n"
            "spec = json.loads(sys.argv[1])\n"
            "server = grpc.server(futures.ThreadPoolExecutor(max_workers=2))\n"
            "api_pb2_grpc.add_PodResourcesListerServicer_to_server(RecordedLister(spec['listed'], "
            "spec['allocatable']), server)\n"
            "server.add_insecure_port('unix:' + spec['socket'])\nserver.start()\nprint('ready', flush=True)\n"
            "sys.stdin.read()\n") % str(HERE.parent)
    process = subprocess.Popen([sys.executable, "-c", code, json.dumps(spec)], stdin=subprocess.PIPE,
                               stdout=subprocess.PIPE, text=True)
    if process.stdout.readline().strip() != "ready":
        raise RuntimeError("the PodResources server did not start")
    return process


BASELINE = ("import sys\nfrom prometheus_client import CollectorRegistry\n"
            "from numaguard.lint.cli.agent_server import make_http_server\n"
            "server = make_http_server(CollectorRegistry(), '127.0.0.1:0')\n"
            "print(f'numaguard node agent: serving http://127.0.0.1:{server.server_address[1]}/metrics', "
            "file=sys.stderr, flush=True)\nserver.serve_forever()\n")


def start(command: list[str]) -> tuple[subprocess.Popen, str]:
    """A server process and its /metrics URL (from its "serving" line)."""
    process = subprocess.Popen(command, stderr=subprocess.PIPE, text=True)
    for line in process.stderr:
        found = SERVING.search(line)
        if found:
            return process, f"http://{found.group(1)}/metrics"
    raise RuntimeError(f"{command[0]} did not start")


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def batch_ms(process: subprocess.Popen, url: str, scrapes: int, between=None) -> float:
    """The server's CPU per scrape, in ms, over `scrapes` scrapes (`between` runs after each,
    outside the server)."""
    start = cpu_seconds(process.pid)
    for n in range(scrapes):
        status, _kind, _body = http_get(url)
        assert status == 200
        if between is not None:
            between(n)
    return (cpu_seconds(process.pid) - start) / scrapes * 1000


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--containers", type=int, default=100)
    parser.add_argument("--processes", type=int, default=500)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--scrapes", type=int, default=200)
    parser.add_argument("--soak", type=int, default=10000)
    parser.add_argument("--real-proc", action="store_true")
    parser.add_argument("--active", type=float, default=0.5, help="share of threads that run between two scrapes")
    args = parser.parse_args()
    top = Path(tempfile.mkdtemp(prefix="ng-agent-bench-", dir="/tmp"))
    synthetic = server = agent = baseline = None
    try:
        threads = 1 if args.real_proc else args.threads
        synthetic = SyntheticNode(top, args.containers, args.processes, threads, args.real_proc, args.active)
        server = serve_podresources(synthetic.node)
        agent, agent_url = start([numaguard_exe(), "node", "agent", "--root", str(synthetic.node.root),
                                  "--listen", "127.0.0.1:0", "--min-interval", "0"])
        baseline, baseline_url = start([sys.executable, "-c", BASELINE])
        _status, _kind, body = http_get(agent_url)                 # warm: imports, page cache, gRPC channel
        http_get(baseline_url)
        series = sum(1 for line in body.splitlines() if line and not line.startswith("#"))
        watched = next(line for line in body.splitlines() if line.startswith("numaguard_agent_containers "))
        print(f"node: {args.containers} containers, {args.processes} processes x {threads} thread(s) "
              f"({'real /proc' if args.real_proc else 'synthetic /proc'}, {args.active:.0%} of them running between "
              f"scrapes); {series} series, "
              f"{len(body) / 1024:.0f} KiB per scrape; {watched}")
        batches = max(1, args.scrapes // 20)
        agent_ms, empty_ms = [], []
        for _ in range(batches):                                   # alternate, so load drifts hit both
            # 200 empty scrapes a batch: /proc/PID/stat counts CPU in 10 ms ticks
            empty_ms.append(batch_ms(baseline, baseline_url, 200))
            agent_ms.append(batch_ms(agent, agent_url, 20, synthetic.churn))
        base, cost = statistics.median(empty_ms), statistics.median(agent_ms)
        print(f"CPU per scrape over HTTP (median of {batches} batches of 20, of 200 empty, load average "
              f"{os.getloadavg()[0]:.1f}): empty registry {base:.3f} ms; agent {cost:.1f} ms (batches "
              f"{min(agent_ms):.1f}-{max(agent_ms):.1f}) = {cost / max(base, 1e-3):.0f}x the empty scrape, "
              f"+{cost - base:.1f} ms; goal <= {CPU_GOAL_MS:.0f} ms: {'met' if cost <= CPU_GOAL_MS else 'MISSED'}")
        if args.soak:
            start_rss, marks = rss_mb(agent.pid), []
            began = cpu_seconds(agent.pid)
            for n in range(args.soak):
                assert http_get(agent_url)[0] == 200
                synthetic.churn(n, files=False)
                if n % 1000 == 999:
                    marks.append(rss_mb(agent.pid))
            spent = cpu_seconds(agent.pid) - began
            peak = max(marks, default=start_rss)
            print(f"soak: {args.soak} scrapes with churn, {spent / args.soak * 1000:.1f} ms CPU each; agent RSS "
                  f"{start_rss:.1f} MB after the warm-up scrape, every 1,000: {', '.join(f'{m:.1f}' for m in marks)} "
                  f"MB; peak {peak:.1f} MB (empty server {rss_mb(baseline.pid):.1f} MB); goal < {RSS_GOAL_MB:.0f} MB: "
                  f"{'met' if peak < RSS_GOAL_MB else 'MISSED'}")
    finally:
        for process in (agent, baseline):
            if process is not None:
                process.terminate()
                process.wait()
        if server is not None:
            server.stdin.close()
            server.wait()
        if synthetic is not None:
            synthetic.close()
        shutil.rmtree(top, ignore_errors=True)


if __name__ == "__main__":
    main()
