"""Benchmark: `numaguard webhook serve` over TLS on loopback, at concurrency 16.

For each worker/thread layout, in one run against the same server process:
  * wrk (Debian package `wrk`: `apt-get install wrk`; .ci/run does not run this) at 16
    connections: throughput and p50/p99 latency of POST /validate for a realistic managed pod
    (pod-level resources, three containers) and for a Deployment, and of the hidden allow-all
    baseline route POST /bench/allow (same TLS, same JSON parsing, no judging) with the pod;
  * a paced Python client, 16 keep-alive connections, a steady 300 requests/s of the pod:
    p50/p99 latency measured from the scheduled send time (so queueing counts).

The server runs the tests' config (NUMA fit against builtin:dual-socket-ht). "pod" and
"deploy" send the same object every time, as the replicas of one template arrive (the webhook's
findings cache answers all but the first); "distinct" makes every pod unique (a label), so
each request runs the engine and the NUMA simulation in full.

Goals (issue 8): validation costs at most 25% of the baseline's throughput; p99 < 10 ms at
300 req/s. The machine's load average is printed: the CPU is shared.

    python tests/bench/bench_webhook.py [--duration 10] [--repeat 3] [--layouts 1x1,2x1,1x4,2x4,2x8]
"""
from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
from tests.webhook.conftest import ServiceConnection, start_server  # noqa: E402
from tests.webhook.reviews import deployment, managed_pod, review  # noqa: E402

LUA = """wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
local f = io.open("{body}", "rb"); wrk.body = f:read("*a"); f:close()
local n = 0
request = function()
  n = n + 1
  local body = string.gsub(wrk.body, "__N__", tostring(n) .. "-" .. tostring(math.random(1e9)))
  return wrk.format(nil, nil, nil, body)
end
"""
_UNITS = {"us": 1e-3, "ms": 1.0, "s": 1000.0}


def server_cpu_seconds(pid: int) -> float:
    """User + system CPU of the gunicorn master and its live workers (Linux /proc): the cost
    of a request in CPU time, which the shared machine's load does not inflate the way it
    inflates wall-clock throughput."""
    tick = os.sysconf("SC_CLK_TCK")
    total = 0.0
    pids = [pid]
    try:
        pids += [int(c) for c in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]
    except OSError:
        pass
    for p in pids:
        try:
            fields = Path(f"/proc/{p}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        total += (int(fields[11]) + int(fields[12])) / tick
    return total


def wrk(port: int, path: str, body: bytes, tmp: Path, duration: int, server_pid: int = 0) -> dict:
    (tmp / "body.json").write_bytes(body)
    (tmp / "post.lua").write_text(LUA.format(body=tmp / "body.json"))
    cpu_before = server_cpu_seconds(server_pid) if server_pid else 0.0
    out = subprocess.run(["wrk", "-t2", "-c16", f"-d{duration}s", "--latency", "-s", str(tmp / "post.lua"),
                          f"https://127.0.0.1:{port}{path}"], capture_output=True, text=True, check=True).stdout
    cpu = server_cpu_seconds(server_pid) - cpu_before if server_pid else 0.0
    requests = int(re.search(r"(\d+) requests in", out).group(1))
    lat = {p: float(v) * _UNITS[u] for p, v, u in re.findall(r"^\s+(50|99)%\s+([\d.]+)(us|ms|s)\s*$", out, re.M)}
    if set(lat) != {"50", "99"}:
        raise SystemExit(f"cannot read wrk's output:\n{out}")
    bad = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
    errors = re.search(r"Socket errors: (.*)", out)
    return {"rps": float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1)), "p50": lat["50"], "p99": lat["99"],
            "cpu_ms": cpu * 1000 / max(requests, 1),
            "non2xx": int(bad.group(1)) if bad else 0, "socket_errors": errors.group(1) if errors else ""}


def _median(results: list[dict]) -> dict:
    """The run with the median throughput (its latencies with it); errors summed."""
    ordered = sorted(results, key=lambda r: r["rps"])
    cpu = sorted(r["cpu_ms"] for r in results)[len(results) // 2]
    return {**ordered[len(ordered) // 2], "cpu_ms": cpu, "non2xx": sum(r["non2xx"] for r in results)}


def paced(server, body: bytes, rate: int, duration: int, connections: int = 16, path: str = "/validate") -> dict:
    latencies: list[float] = []
    errors: list[str] = []
    missed = [0]
    lock = threading.Lock()
    start = time.perf_counter() + 0.5
    total = rate * duration

    def worker(i: int) -> None:
        conn = ServiceConnection(server.port, server.context())
        mine = []
        for k in range(i, total, connections):
            due = start + k / rate
            delay = due - time.perf_counter()
            if delay > 0:
                time.sleep(delay)
            elif -delay > 2.0:              # the server cannot keep the pace: stop, report it
                with lock:
                    missed[0] += len(range(k, total, connections))
                break
            try:
                conn.request("POST", path, body=body, headers={"Content-Type": "application/json"})
                resp = conn.getresponse()
                resp.read()
                if resp.status != 200:
                    errors.append(str(resp.status))
            except OSError as e:
                errors.append(repr(e))
                conn.close()
                conn = ServiceConnection(server.port, server.context())
            mine.append((time.perf_counter() - due) * 1000)
        conn.close()
        with lock:
            latencies.extend(mine)

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(connections)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    latencies.sort()
    return {"p50": latencies[len(latencies) // 2], "p99": latencies[int(len(latencies) * 0.99)],
            "n": len(latencies), "errors": len(errors), "missed": missed[0]}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--duration", type=int, default=10)
    ap.add_argument("--layouts", default="1x1,2x1,1x4,2x4,2x8", help="WORKERSxTHREADS,...")
    ap.add_argument("--rate", type=int, default=300)
    ap.add_argument("--repeat", type=int, default=3, help="interleaved wrk runs per route (median)")
    args = ap.parse_args()
    if not shutil.which("wrk"):
        sys.exit("wrk is not installed: apt-get install wrk")
    pod = json.dumps(review(managed_pod())).encode()
    unique = managed_pod()
    unique["metadata"]["labels"]["bench"] = "__N__"       # wrk makes every request's pod distinct
    distinct = json.dumps(review(unique)).encode()
    deploy = json.dumps(review(deployment(managed_pod()))).encode()
    print(f"cpus: {os.cpu_count()}, load average before: {os.getloadavg()[0]:.2f} (the machine is shared)")
    print(f"bodies: pod review {len(pod)} bytes, Deployment review {len(deploy)} bytes; wrk -c16 -d{args.duration}s")
    cols = f"{'rps':>6} {'p50':>6} {'p99':>6} {'cpu':>5}"
    print(f"{'':>7} | {'baseline /bench/allow':<27} | {'pod (same object)':<39} | {'Deployment (same object)':<39} | "
          f"{'pod (distinct each time)':<39} | {'paced ' + str(args.rate) + '/s':<15} |")
    print(f"{'layout':>7} | {cols} | " + " | ".join([f"{cols} {'cost':>5} {'cpu%':>5}"] * 3)
          + f" | {'p50':>7} {'p99':>7} | load")
    for layout in args.layouts.split(","):
        workers, threads = layout.split("x")
        with tempfile.TemporaryDirectory() as tmp_name:
            tmp = Path(tmp_name)
            server = start_server(tmp, "--workers", workers, "--threads", threads, "--shutdown-delay", "0",
                                  "--bench-route")
            try:
                server.validate(review(managed_pod()))
                wrk(server.port, "/validate", pod, tmp, 2)                   # warm every worker
                runs: dict[str, list[dict]] = {"base": [], "pod": [], "deploy": [], "distinct": []}
                for _ in range(args.repeat):     # interleaved, so the shared machine's noise hits all alike
                    runs["base"].append(wrk(server.port, "/bench/allow", pod, tmp, args.duration, server.proc.pid))
                    runs["pod"].append(wrk(server.port, "/validate", pod, tmp, args.duration, server.proc.pid))
                    runs["deploy"].append(wrk(server.port, "/validate", deploy, tmp, args.duration, server.proc.pid))
                    runs["distinct"].append(wrk(server.port, "/validate", distinct, tmp, args.duration, server.proc.pid))
                base, ours, dep, uniq = (_median(runs[k]) for k in ("base", "pod", "deploy", "distinct"))
                steady = paced(server, pod, args.rate, args.duration)
            finally:
                server.stop()
        bad = base["non2xx"] + ours["non2xx"] + dep["non2xx"] + uniq["non2xx"] + steady["errors"]
        print(f"{layout:>7} | {base['rps']:6.0f} {base['p50']:6.1f} {base['p99']:6.1f} {base['cpu_ms']:5.2f} | "
              + " | ".join(f"{r['rps']:6.0f} {r['p50']:6.1f} {r['p99']:6.1f} {r['cpu_ms']:5.2f} "
                           f"{1 - r['rps'] / base['rps']:5.0%} {1 - base['cpu_ms'] / r['cpu_ms']:5.0%}"
                           for r in (ours, dep, uniq))
              + f" | {steady['p50']:7.1f} {steady['p99']:7.1f} | {os.getloadavg()[0]:.1f}"
              + (f"  ({steady['missed']} of {args.rate * args.duration} paced requests not sent: "
                 "over 2 s behind)" if steady["missed"] else "")
              + (f"  ERRORS: {bad}" if bad else ""))
    print("rps: requests/s (median of the interleaved runs); latencies in ms; cpu: server CPU ms per request "
          "(master + workers, /proc); cost = 1 - validate rps / baseline rps; cpu% = 1 - baseline cpu / validate "
          f"cpu (the throughput cost on idle CPUs); goals: cost <= 25%, p99 < 10 ms at {args.rate}/s")


if __name__ == "__main__":
    main()
