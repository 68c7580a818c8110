"""Prometheus metrics (`prometheus_client`), one set per application.

Under gunicorn every worker is a process; `numaguard webhook serve` points
`PROMETHEUS_MULTIPROC_DIR` at a fresh temporary directory before any worker imports
prometheus_client, each worker writes its samples there, and `/metrics` merges all live and
dead workers' files (`MultiProcessCollector`), so a scrape reports the whole server whichever
worker answers it. The server marks a worker dead when it exits (gunicorn `child_exit`).
Without that variable (tests, a single process) the metrics live in the application's own
registry.
"""
from __future__ import annotations

import os
from typing import Callable

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest
from prometheus_client import multiprocess

LATENCY_BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5)


class Metrics:
    def __init__(self) -> None:
        self.multiprocess = bool(os.environ.get("PROMETHEUS_MULTIPROC_DIR"))
        # In multiprocess mode the samples go to the shared directory, not to a registry.
        registry = None if self.multiprocess else CollectorRegistry()
        self._registry = registry
        self.requests = Counter(
            "numaguard_webhook_requests", "Admission reviews answered, by kind, operation and decision "
            "(allow, warn, deny, audit = allowed in audit mode where enforce would deny).",
            ["kind", "operation", "decision"], registry=registry)
        self.findings = Counter(
            "numaguard_webhook_findings", "Findings on judged objects, by rule and severity.",
            ["rule", "severity"], registry=registry)
        self.latency = Histogram(
            "numaguard_webhook_request_duration_seconds", "Time to answer POST /validate.",
            buckets=LATENCY_BUCKETS, registry=registry)
        self.bad_requests = Counter(
            "numaguard_webhook_bad_requests", "Requests refused before judging, by reason.",
            ["reason"], registry=registry)
        self.internal_errors = Counter(
            "numaguard_internal_errors", "Reviews the engine failed to judge (an exception; the log has "
            "the traceback under the error id the response gave): denied in enforce mode, allowed with "
            "a warning in warn and audit mode.", registry=registry)
        self.replicas_admitted = Counter(
            "numaguard_replicas_admitted", "Objects allowed because a built-in controller wrote them for an "
            "owner the webhook judged (a Pod of a ReplicaSet, a ReplicaSet of a Deployment...), by kind "
            "and owner kind; their findings are in the audit annotation validate.numaguard.io/findings.",
            ["kind", "owner"], registry=registry)
        self.cache_bytes = Gauge(
            "numaguard_webhook_cache_bytes", "Bytes held by the findings caches (summed over live workers; "
            "each worker's is bounded by webhook.cacheBytes).", registry=registry, multiprocess_mode="livesum")
        self.cache_budget = Gauge(
            "numaguard_webhook_cache_budget_bytes", "What the findings caches may hold (webhook.cacheBytes per "
            "worker, summed over live workers).", registry=registry, multiprocess_mode="livesum")
        self.cache_entries = Gauge(
            "numaguard_webhook_cache_entries", "Objects whose findings the caches hold (summed over live workers).",
            registry=registry, multiprocess_mode="livesum")
        self.cert_expiry = Gauge(
            "numaguard_webhook_certificate_expiry_timestamp_seconds",
            "notAfter of the serving certificate in use (Unix time).",
            registry=registry, multiprocess_mode="mostrecent")

    def exposition(self) -> bytes:
        if self.multiprocess:
            registry = CollectorRegistry()
            multiprocess.MultiProcessCollector(registry)
            return generate_latest(registry)
        return generate_latest(self._registry)


def dropped_connections() -> Callable[[str, str], None]:
    """Counts connections the front closed without a request (a handshake or a request head
    that missed its deadline, a failed handshake, a malformed head), by port and reason: the
    slow or hostile clients an operator wants to see. Created once per worker process."""
    counter = Counter(
        "numaguard_webhook_connections_dropped", "Connections closed without a request, by port "
        "(review, probe) and reason (handshake-timeout, header-timeout, malformed-request, evicted, "
        "over-capacity, or tls- and "
        "OpenSSL's reason for a refused handshake, e.g. tls-no-shared-cipher).", ["port", "reason"],
        registry=None if os.environ.get("PROMETHEUS_MULTIPROC_DIR") else CollectorRegistry())
    return lambda port, reason: counter.labels(port, reason).inc()


def mark_worker_dead(pid: int) -> None:
    """gunicorn `child_exit`: fold a dead worker's live gauges away (its counters stay)."""
    if os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        multiprocess.mark_process_dead(pid)
