"""Benchmark: the webhook's memory under concurrent large bodies (issue 22 §3), over real TLS.

`numaguard webhook serve` runs with the shipped Deployment's workers and threads and its
config (deploy/webhook/base). `--connections` clients each open a connection and send the
head of a 5 MiB AdmissionReview and all of its body but the last byte (tests/webhook/
held_bodies.py), then hold (the server gives bodies 120 s, so none is cut short by its
deadline); then each sends its last byte and reads its answer. The server's
memory (master + workers, /proc) is read idle, while the bodies are held, at its peak (VmHWM
over the whole attack) and 2 s after the burst. The same attack on the allow-all route
`POST /bench/allow` (same TLS, front and JSON parsing, no judging) on a fresh server is the
baseline, measured in the same run. The goal: the peak stays under the Deployment's memory
limit, and the memory is returned after the burst.

    python tests/bench/bench_webhook_bodies.py [--connections 64,100,128]
"""
from __future__ import annotations

import argparse
import os
import sys
import tempfile
from collections import Counter
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
from numaguard.lint.k8s.quantity import parse_quantity  # noqa: E402
from tests.bench.bench_webhook_memory import shipped_settings  # noqa: E402
from tests.webhook.conftest import start_server  # noqa: E402
from tests.webhook.held_bodies import HeldBodies, memory, reset_peaks, settle  # noqa: E402

DEPLOYMENT = ROOT / "deploy" / "webhook" / "base" / "deployment.yaml"


def deployment_memory_limit_mib() -> float:
    container = yaml.safe_load(DEPLOYMENT.read_text())["spec"]["template"]["spec"]["containers"][0]
    return float(parse_quantity(container["resources"]["limits"]["memory"])) / 2**20


def attack(config: str, layout: list[str], path: str, connections: int) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        # --body-timeout 120 (the Deployment's is 5): every body is held until its last byte,
        # however slowly the clients open, which is the worst case for memory
        server = start_server(Path(tmp), *layout, "--shutdown-delay", "0", "--bench-route", "--body-timeout", "120",
                              config=config)
        try:
            settle()
            idle = memory(server.proc.pid)
            reset_peaks(server.proc.pid)
            held = HeldBodies(server, connections, path)
            held.open()
            settle()
            holding = memory(server.proc.pid)
            answers = held.finish()
            settle(2.0)
            after = memory(server.proc.pid)
            return {"idle": sum(r for r, _ in idle.values()), "held": sum(r for r, _ in holding.values()),
                    "peak": sum(h for _, h in after.values()), "after": sum(r for r, _ in after.values()),
                    "workers_after": [round(r) for r, _ in list(after.values())[1:]],
                    "statuses": dict(sorted(Counter(a.status for a in answers).items()))}
        finally:
            server.stop()


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--connections", default="64,100,128")
    args = ap.parse_args()
    config, layout = shipped_settings()
    limit = deployment_memory_limit_mib()
    print(f"shipped layout: {' '.join(layout)}; Deployment memory limit {limit:.0f} MiB; cpus {os.cpu_count()}, "
          f"load {os.getloadavg()[0]:.1f}")
    print("server memory (MiB, master + workers): idle, holding the bodies, peak (VmHWM), 2 s after the burst")
    for n in (int(x) for x in args.connections.split(",")):
        rows = {name: attack(config, layout, path, n) for name, path in
                (("baseline /bench/allow", "/bench/allow"), ("/validate", "/validate"))}
        for name, row in rows.items():
            print(f"  {n:>4} x 5 MiB  {name:<22} idle {row['idle']:5.0f}  held {row['held']:5.0f}  "
                  f"peak {row['peak']:5.0f}  after {row['after']:5.0f} (workers {row['workers_after']})  "
                  f"answers {row['statuses']}")
        base, judged = rows["baseline /bench/allow"], rows["/validate"]
        print(f"  {'':>4}              peak /validate vs baseline: {judged['peak'] / base['peak']:.2f}x; "
              f"under the {limit:.0f} MiB limit: {'met' if judged['peak'] < limit else 'MISSED'}; "
              f"returned after the burst: {judged['after'] - judged['idle']:+.0f} MiB over idle")


if __name__ == "__main__":
    main()
