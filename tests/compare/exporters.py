"""Exporters for the compare tests: real prometheus_client HTTP servers on 127.0.0.1 whose
series are the node agent's (the names and labels issue 23 fixes) and an application's
(a request-latency histogram, a request counter), moving as containers built for a scenario
would: counters grow at a set rate with noise at every scrape, gauges hold with noise.
A server can be made to fail its scrapes for a while (a gap).

The real Prometheus server that scrapes them is started by `prometheus_server`."""
from __future__ import annotations

import socket
import subprocess
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from prometheus_client.core import CollectorRegistry, CounterMetricFamily, GaugeMetricFamily, HistogramMetricFamily

P = "numaguard_container_"
LABELS = ["namespace", "pod", "container", "pool"]
LATENCY_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0)

# Per second, per container: what a container alone on its exclusive CPUs does, and what one
# sharing its CPU with a busy sibling (and throttled under its quota) does.
QUIET = {"runqueue_wait_seconds": 0.003, "cpu_periods": 10.0, "cpu_throttled_periods": 0.0,
         "cpu_throttled_seconds": 0.0, "thread_samples": 20.0, "thread_samples_outside": 0.0,
         "major_page_faults": 0.2, "involuntary_context_switches": 4.0}
CONTENDED = {**QUIET, "runqueue_wait_seconds": 0.45, "cpu_throttled_periods": 4.0, "cpu_throttled_seconds": 0.3,
             "involuntary_context_switches": 250.0}
PRESSURE = {"quiet": 0.002, "contended": 0.4}          # cpu_pressure_seconds{kind="some"}


@dataclass
class Container:
    namespace: str
    pod: str
    contended: bool = False
    latency: float = 0.004           # mean request latency, seconds
    requests: float = 100.0          # per second
    remote_bytes: float = 50e6
    local_bytes: float = 950e6
    counters: dict = field(default_factory=dict)
    buckets: np.ndarray = field(default_factory=lambda: np.zeros(len(LATENCY_BUCKETS) + 1))
    latency_sum: float = 0.0

    @property
    def labels(self) -> list[str]:
        return [self.namespace, self.pod, "app", "numa"]


class FakeAgentCollector:
    """Collects the containers' series; every collect moves them on by the time since the last."""

    def __init__(self, containers: list[Container], seed: int, noise: float = 0.1) -> None:
        self.containers = containers
        self.rng = np.random.default_rng(seed)
        self.noise = noise
        self.last = time.monotonic()
        self.down_between: tuple[float, float] | None = None     # monotonic times: scrapes fail
        self.lock = threading.Lock()

    def _advance(self) -> None:
        now = time.monotonic()
        dt, self.last = now - self.last, now
        for c in self.containers:
            rates = dict(CONTENDED if c.contended else QUIET)
            rates["cpu_pressure_seconds"] = PRESSURE["contended" if c.contended else "quiet"]
            for name, rate in rates.items():
                step = rate * dt * float(self.rng.lognormal(0, self.noise)) if rate else 0.0
                c.counters[name] = c.counters.get(name, 0.0) + step
            served = self.rng.poisson(c.requests * dt)
            if served:
                latencies = self.rng.exponential(c.latency, served)
                c.buckets += np.bincount(np.searchsorted(LATENCY_BUCKETS, latencies), minlength=len(LATENCY_BUCKETS) + 1)
                c.latency_sum += float(latencies.sum())

    def collect(self):
        with self.lock:
            if self.down_between and self.down_between[0] <= time.monotonic() < self.down_between[1]:
                raise RuntimeError("planted scrape failure")       # prometheus_client answers 500
            self._advance()
            families = {name: CounterMetricFamily(P + name, name, labels=LABELS) for name in QUIET}
            pressure = CounterMetricFamily(P + "cpu_pressure_seconds", "PSI", labels=LABELS + ["kind"])
            memory = GaugeMetricFamily(P + "memory_numa_bytes", "resident bytes", labels=LABELS + ["numa_node", "locality"])
            latency = HistogramMetricFamily("http_request_duration_seconds", "latency", labels=["namespace", "pod"])
            served = CounterMetricFamily("http_requests", "requests served", labels=["namespace", "pod"])
            for c in self.containers:
                for name, family in families.items():
                    family.add_metric(c.labels, c.counters[name])
                pressure.add_metric(c.labels + ["some"], c.counters["cpu_pressure_seconds"])
                pressure.add_metric(c.labels + ["full"], 0.0)
                wobble = float(self.rng.lognormal(0, 0.01))
                memory.add_metric(c.labels + ["0", "local"], c.local_bytes * wobble)
                memory.add_metric(c.labels + ["1", "remote"], c.remote_bytes * wobble)
                cumulative = np.cumsum(c.buckets)
                latency.add_metric([c.namespace, c.pod], [(str(le), float(n)) for le, n in zip(LATENCY_BUCKETS, cumulative)]
                                   + [("+Inf", float(cumulative[-1]))], c.latency_sum)
                served.add_metric([c.namespace, c.pod], float(cumulative[-1]))
            yield from families.values()
            yield from (pressure, memory, latency, served)


class Exporter:
    """A prometheus_client HTTP server on 127.0.0.1 for one collector."""

    def __init__(self, collector: FakeAgentCollector) -> None:
        from prometheus_client import start_http_server

        self.collector = collector
        registry = CollectorRegistry(auto_describe=False)
        registry.register(collector)
        self.server, self.thread = start_http_server(0, addr="127.0.0.1", registry=registry)
        self.port = self.server.server_port

    @property
    def target(self) -> str:
        return f"127.0.0.1:{self.port}"

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class PrometheusServer:
    """Debian's `prometheus`, on 127.0.0.1, scraping `targets` every second."""

    def __init__(self, binary: str, folder: Path, targets: list[str], interval: str = "1s") -> None:
        import yaml

        self.port = free_port()
        config = folder / "prometheus.yml"
        config.write_text(yaml.safe_dump({
            "global": {"scrape_interval": interval, "evaluation_interval": interval},
            "scrape_configs": [{"job_name": "agents", "static_configs": [{"targets": targets}]}]}))
        self.log = open(folder / "prometheus.log", "w")
        self.process = subprocess.Popen(
            [binary, f"--config.file={config}", f"--storage.tsdb.path={folder / 'data'}",
             f"--web.listen-address=127.0.0.1:{self.port}", "--log.level=warn"],
            stdout=self.log, stderr=subprocess.STDOUT)
        self.url = f"http://127.0.0.1:{self.port}"
        self._wait_ready(folder)

    def _wait_ready(self, folder: Path) -> None:
        import urllib.request

        for _ in range(600):
            if self.process.poll() is not None:
                raise RuntimeError(f"prometheus exited: {(folder / 'prometheus.log').read_text()[-2000:]}")
            try:
                with urllib.request.urlopen(f"{self.url}/-/ready", timeout=2) as answer:
                    if answer.status == 200:
                        return
            except OSError:
                time.sleep(0.1)
        raise RuntimeError("prometheus did not become ready in a minute")

    def close(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        self.log.close()
