"""Benchmark: the webhook's memory per worker under distinct objects, over real TLS.

`numaguard webhook serve` runs with the shipped deploy/ settings (the workers and threads of
deploy/webhook/base/deployment.yaml, the config of deploy/webhook/base/configmap.yaml: a pool,
NUMA fit on builtin:dual-socket-ht, enforce). The clients keep their connections alive, as the
API server does. Each gunicorn worker's resident memory (VmRSS, /proc) is read before and after.

1. **Big annotations** (issue 14 §2): `--pods` distinct dryRun pods (distinct in their spec too,
   so each is judged in full and cached), each with a `--annotation-kb` annotation no rule reads (a `last-applied-configuration` of that size is
   ordinary), sent to POST /validate; the same bodies to the allow-all route POST /bench/allow
   (same TLS and JSON parsing, no judging) on a fresh server: the **baseline**, what the
   transport alone costs. Goal: every worker under 150 MB.
2. **Soak**: `--soak` distinct objects (pods and Deployments, each distinct in its spec so the
   engine judges every one, a fifth of them with an error, a 2 KB annotation each) to
   /validate, RSS and the caches' bytes read every 1,000. Goal: after the warm-up, RSS stays
   within 10% of its value then. Two warm-ups are reported: the first `--warm-up` requests, and
   the point where the findings caches reach their budget (`webhook.cacheBytes` per worker):
   until then the growth is the caches filling, by design.

    python tests/bench/bench_webhook_memory.py [--pods 2000] [--annotation-kb 200] [--soak 20000]
"""
from __future__ import annotations

import argparse
import json
import os
import queue
import random
import sys
import tempfile
import threading
import time
from pathlib import Path

import yaml

from numaguard.lint.config import config_from_dict

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
from tests.webhook.conftest import start_server  # noqa: E402
from tests.webhook.reviews import burstable_pod, deployment, managed_pod, review  # noqa: E402

DEPLOY = ROOT / "deploy" / "webhook" / "base"
CLIENTS = 8
RSS_GOAL_MB = 150
SOAK_DRIFT_GOAL = 0.10


def shipped_settings() -> tuple[str, list[str]]:
    """The config file and the --workers/--threads the shipped Deployment runs with."""
    config = yaml.safe_load((DEPLOY / "configmap.yaml").read_text())["data"]["config.yaml"]
    deploy = yaml.safe_load((DEPLOY / "deployment.yaml").read_text())
    args = deploy["spec"]["template"]["spec"]["containers"][0]["args"]
    layout = [a for a in args if a.split("=")[0] in ("--workers", "--threads")]
    return config, [part for a in layout for part in a.split("=", 1)]


def worker_rss_mb(master: int) -> dict[int, float]:
    """VmRSS of each gunicorn worker (the master's children), in MB (10^6 bytes)."""
    children = Path(f"/proc/{master}/task/{master}/children").read_text().split()
    out = {}
    for pid in map(int, children):
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                out[pid] = int(line.split()[1]) * 1024 / 1e6
    return out


def send_all(server, path: str, bodies, count: int) -> dict[int, int]:
    """Send `count` bodies (made by `bodies(i)`) from CLIENTS keep-alive connections; the
    statuses counted."""
    todo: queue.Queue[int] = queue.Queue()
    for i in range(count):
        todo.put(i)
    statuses: dict[int, int] = {}
    lock = threading.Lock()

    def client() -> None:
        conn = server.connection()
        while True:
            try:
                i = todo.get_nowait()
            except queue.Empty:
                break
            for attempt in range(3):
                try:
                    conn.request("POST", path, body=bodies(i), headers={"Content-Type": "application/json"})
                    resp = conn.getresponse()
                    resp.read()
                    status = resp.status
                    break
                except OSError:
                    conn.close()
                    conn = server.connection()
                    status = 0
            with lock:
                statuses[status] = statuses.get(status, 0) + 1
        conn.close()

    threads = [threading.Thread(target=client) for _ in range(CLIENTS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return statuses


def annotated_pod_body(i: int, kb: int, rng_seed: int = 14) -> bytes:
    pod = managed_pod()
    pod["metadata"]["name"] = f"big-{i}"
    pod["metadata"]["labels"]["bench"] = str(i)
    pod["spec"]["containers"][0]["name"] = f"app-{i}"       # distinct where the rules look: judged in full
    rng = random.Random(rng_seed * 1_000_003 + i)
    pod["metadata"]["annotations"] = {
        "kubectl.kubernetes.io/last-applied-configuration": "".join(rng.choices("abcdefghij", k=kb * 1024))}
    return json.dumps(review(pod, dry_run=True)).encode()


def soak_body(i: int) -> bytes:
    """A distinct object judged in full: its CPU count and container name vary, a fifth are
    Burstable (NG103), every third is a Deployment."""
    pod = burstable_pod() if i % 5 == 0 else managed_pod(cpu=str(2 + i % 14))
    pod["spec"]["containers"][0]["name"] = f"app-{i}"
    pod["metadata"]["annotations"] = {"example.com/note": f"{i:08d}" * 256}
    obj = deployment(pod) if i % 3 == 0 else pod
    return json.dumps(review(obj)).encode()


def cache_metrics(server) -> dict[str, float]:
    """numaguard_webhook_cache_bytes and _entries (summed over the workers); {} from a server
    without them."""
    _, _, raw = server.request("GET", "/metrics")
    out = {}
    for line in raw.decode().splitlines():
        name, _, value = line.partition(" ")
        if name in ("numaguard_webhook_cache_bytes", "numaguard_webhook_cache_entries"):
            out[name.rsplit("_", 1)[1]] = float(value)
    return out


def cache_text(cache: dict[str, float]) -> str:
    if not cache:
        return "(no cache metrics: an older server)"
    return f"caches: {cache['entries']:.0f} entries, {cache['bytes'] / 1e6:.1f} MB"


def run_big(config: str, layout: list[str], path: str, pods: int, kb: int) -> tuple[dict, dict, dict, str]:
    with tempfile.TemporaryDirectory() as tmp:
        server = start_server(Path(tmp), *layout, "--shutdown-delay", "0", "--bench-route", config=config)
        try:
            send_all(server, "/validate", lambda i: json.dumps(review(managed_pod())).encode(), 64)   # warm up
            before = worker_rss_mb(server.proc.pid)
            statuses = send_all(server, path, lambda i: annotated_pod_body(i, kb), pods)
            time.sleep(0.5)
            after = worker_rss_mb(server.proc.pid)
            return before, after, statuses, cache_metrics(server)
        finally:
            server.stop()


def run_soak(config: str, layout: list[str], total: int) -> tuple[list[tuple[int, dict, dict]], dict]:
    with tempfile.TemporaryDirectory() as tmp:
        server = start_server(Path(tmp), *layout, "--shutdown-delay", "0", config=config)
        try:
            samples = [(0, worker_rss_mb(server.proc.pid), cache_metrics(server))]
            statuses: dict[int, int] = {}
            done = 0
            while done < total:
                step = min(1000, total - done)
                for status, n in send_all(server, "/validate", lambda i, base=done: soak_body(base + i), step).items():
                    statuses[status] = statuses.get(status, 0) + n
                done += step
                samples.append((done, worker_rss_mb(server.proc.pid), cache_metrics(server)))
            return samples, statuses
        finally:
            server.stop()


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--pods", type=int, default=2000)
    ap.add_argument("--annotation-kb", type=int, default=200)
    ap.add_argument("--soak", type=int, default=20000)
    ap.add_argument("--warm-up", type=int, default=5000)
    args = ap.parse_args()
    config, layout = shipped_settings()
    print(f"shipped layout: {' '.join(layout)}; {CLIENTS} keep-alive clients; cpus {os.cpu_count()}, "
          f"load {os.getloadavg()[0]:.1f}")

    print(f"\n1. {args.pods} distinct dryRun pods with a {args.annotation_kb} KB annotation "
          f"(RSS per worker, MB; goal < {RSS_GOAL_MB}):")
    worst = 0.0
    for name, path in (("baseline /bench/allow", "/bench/allow"), ("/validate", "/validate")):
        before, after, statuses, cache = run_big(config, layout, path, args.pods, args.annotation_kb)
        print(f"  {name:<22} before {' / '.join(f'{v:.0f}' for v in before.values())}   "
              f"after {' / '.join(f'{v:.0f}' for v in after.values())}   statuses {statuses}")
        if path == "/validate":
            print(f"  {'':<22} {cache_text(cache)}")
            worst = max(after.values())
    print(f"  worst worker after /validate: {worst:.0f} MB: {'met' if worst < RSS_GOAL_MB else 'MISSED'}")

    print(f"\n2. soak: {args.soak} distinct objects to /validate (RSS per worker in MB, and the caches, "
          "every 1,000):")
    samples, statuses = run_soak(config, layout, args.soak)
    for done, rss, cache in samples:
        print(f"  {done:>6}  {' / '.join(f'{v:6.1f}' for v in rss.values())}   {cache_text(cache)}")
    print(f"  statuses {statuses}")
    workers = int(layout[layout.index("--workers") + 1]) if "--workers" in layout else 1
    full = 0.95 * workers * config_from_dict(yaml.safe_load(config)).webhook_cache_bytes
    warm_ups = [(f"the first {args.warm_up} requests", next((d for d, _, _ in samples if d >= args.warm_up), None)),
                ("the caches full", next((d for d, _, c in samples if c.get("bytes", 0) >= full), None))]
    for what, start in warm_ups:
        if start is None:
            print(f"  after {what}: not reached in {args.soak} requests")
            continue
        at = next(rss for d, rss, _ in samples if d == start)
        drift = max(abs(rss[pid] - at[pid]) / at[pid] for d, rss, _ in samples if d >= start for pid in at if pid in rss)
        print(f"  after {what} ({start} requests): largest drift {drift:.1%} "
              f"({'met' if drift <= SOAK_DRIFT_GOAL else 'MISSED'}: goal {SOAK_DRIFT_GOAL:.0%})")


if __name__ == "__main__":
    main()
