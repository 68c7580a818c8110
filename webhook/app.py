"""The Flask application factory: `create_app(settings)` builds one independent application
(no module-level app, no shared state between applications).

Routes: `POST /validate` (AdmissionReview), `GET /healthz`, `GET /readyz`, `GET /metrics`, and
with `settings.bench_route` the benchmark's allow-all baseline `POST /bench/allow`. Under
`numaguard webhook serve` the front says which port a request came in on
(`numaguard.listener` in the environ): reviews are answered on the review port only, probes
and metrics on the probe port only.

Bad input never reaches the engine and never produces a 500: a wrong content type is 415, a
body over the limit 413 (decided from Content-Length, before reading), a client that stops
sending mid-body 408 after `body_timeout`, anything that is not an AdmissionReview 400 — each
with a JSON `{"error": reason, "message": ...}` body. A body the front did not read because
the worker already holds its budget of bodies (front.BodyBudget) is 503 with `Retry-After: 1`:
the API server then applies the webhook's failurePolicy to that one review.
"""
from __future__ import annotations

import json
import logging
import os
import sys
import threading
import time
from typing import Any

from flask import Flask, Response, request
from werkzeug.exceptions import HTTPException

from numaguard.webhook.decide import judge
from numaguard.webhook.metrics import Metrics
from numaguard.webhook.review import BadReview, parse_review, review_response
from numaguard.webhook.settings import WebhookSettings
from numaguard.webhook.text import one_line

log = logging.getLogger("numaguard.webhook")
PROBE_PATHS = frozenset({"/healthz", "/readyz", "/metrics"})     # the probe port's; the rest: the review port's


class _Refused(Exception):
    def __init__(self, status: int, reason: str, message: str) -> None:
        super().__init__(message)
        self.status, self.reason = status, reason


BUSY_RETRY_AFTER = "1"     # seconds: bodies in flight are answered within the webhook's timeoutSeconds


def create_app(settings: WebhookSettings) -> Flask:
    here = os.path.dirname(os.path.abspath(__file__))
    # Explicit paths: `numaguard` is a namespace package, which Flask cannot locate by name.
    app = Flask(__name__, root_path=here, instance_path=here)
    metrics = Metrics()
    metrics.cache_budget.set(settings.policy.cache.budget)
    _warm_up(settings)
    log_lock = threading.Lock()

    def access(record: dict[str, Any]) -> None:
        line = json.dumps(record, separators=(",", ":"))
        with log_lock:
            stream = settings.access_log or sys.stdout
            stream.write(line + "\n")
            stream.flush()

    def refuse(e: _Refused, started: float) -> Response:
        metrics.bad_requests.labels(e.reason).inc()
        access({"path": request.path, "status": e.status, "pid": os.getpid(), "error": e.reason,
                "latencyMs": round((time.perf_counter() - started) * 1000, 2)})
        answer = _json({"error": e.reason, "message": str(e)}, e.status)
        if e.status == 503:
            answer.headers["Retry-After"] = BUSY_RETRY_AFTER
        return answer

    @app.before_request
    def on_its_port() -> Response | None:
        listener = request.environ.get("numaguard.listener")
        home = "probe" if request.path in PROBE_PATHS else "review"
        if listener and listener != home:
            return _json({"error": "not-found", "message": f"{request.path} is served on the {home} port"}, 404)
        if (request.path == "/metrics" and settings.metrics_need_client_certificate
                and not request.environ.get("numaguard.client_certificate")):
            return _json({"error": "forbidden", "message": "/metrics needs a client certificate signed by "
                          "the --client-ca"}, 403)
        return None

    @app.post("/validate")
    def validate() -> Response:
        started = time.perf_counter()
        try:
            body = _read_json(settings)
            try:
                review = parse_review(body)
            except BadReview as e:
                raise _Refused(400, e.reason, str(e)) from None
        except _Refused as e:
            return refuse(e, started)
        decision = judge(review, settings.policy)
        if decision.error_id:
            # The traceback goes to the log only, under the id the response carries. The request's
            # words on one line of ASCII: they must not forge log lines.
            what = one_line(f"{review.kind} {review.namespace}/{review.name} (uid {review.uid}")
            sys.stderr.write(f"numaguard could not judge {what}, error id {decision.error_id}):\n"
                             f"{decision.error_trace}")
            sys.stderr.flush()
            metrics.internal_errors.inc()
        if decision.replica is not None:
            metrics.replicas_admitted.labels(review.kind, decision.replica.owner_kind).inc()
        answer = review_response(review.uid, decision.allowed, code=decision.code, message=decision.message,
                                 warnings=decision.warnings, audit_annotations=decision.audit_annotations)
        elapsed = time.perf_counter() - started
        cache = settings.policy.cache
        metrics.cache_bytes.set(cache.bytes)
        metrics.cache_entries.set(len(cache))
        # The kind label takes the judged kinds (the run's carrier table) and "other", never what a
        # client sent: labels are kept for the process's life (unbounded memory), and must encode
        # as UTF-8.
        kind_label = review.kind if (review.group, review.kind) in settings.policy.judged else "other"
        metrics.requests.labels(kind_label, review.operation, decision.decision).inc()
        for f in decision.findings:
            metrics.findings.labels(f.rule, f.severity.value).inc()
        metrics.latency.observe(elapsed)
        access({"path": "/validate", "status": 200, "pid": os.getpid(), "uid": review.uid, "user": review.user,
                "kind": review.kind,
                "namespace": review.namespace, "name": review.name, "operation": review.operation,
                "dryRun": review.dry_run, "mode": decision.mode, "decision": decision.decision,
                "rules": decision.rule_ids, "warnings": len(decision.warnings),
                **({"note": decision.note} if decision.note else {}),
                **({"errorId": decision.error_id} if decision.error_id else {}),
                "latencyMs": round(elapsed * 1000, 2)})
        return _json(answer, 200)

    if settings.bench_route:
        @app.post("/bench/allow")
        def bench_allow() -> Response:
            """The benchmark's baseline: same transport and JSON, no judging."""
            try:
                body = _read_json(settings)
                uid = body["request"]["uid"]
            except _Refused as e:
                return _json({"error": e.reason, "message": str(e)}, e.status)
            except (KeyError, TypeError) as e:
                return _json({"error": "bad", "message": str(e)}, 400)
            return _json(review_response(uid, True), 200)

    @app.get("/healthz")
    def healthz() -> Response:
        return _json({"status": "ok"}, 200)

    @app.get("/readyz")
    def readyz() -> Response:
        problems = readiness_problems(settings)
        if problems:
            return _json({"status": "not ready", "problems": problems}, 503)
        return _json({"status": "ready"}, 200)

    @app.get("/metrics")
    def metrics_route() -> Response:
        cert = settings.certificate
        if cert is not None and cert.context() is not None and cert.not_after is not None:
            metrics.cert_expiry.set(cert.not_after.timestamp())
        return Response(metrics.exposition(), 200, content_type="text/plain; version=0.0.4; charset=utf-8")

    @app.errorhandler(HTTPException)
    def http_error(e: HTTPException) -> Response:
        reason = (e.name or "error").lower().replace(" ", "-")
        return _json({"error": reason, "message": e.description or e.name}, e.code or 400)

    return app


def _warm_up(settings: WebhookSettings) -> None:
    """Judge one pod while the worker starts, so the first review does not pay for importing
    the rules and building the node's state."""
    from numaguard.lint.engine import lint_documents

    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "warm-up"},
           "spec": {"resources": {"limits": {"cpu": "2", "memory": "1Gi"}},
                    "containers": [{"name": "c", "image": "registry.example/app:1"}]}}
    lint_documents([pod], config=settings.policy.config, context=settings.policy.context)


def readiness_problems(settings: WebhookSettings) -> list[str]:
    problems = []
    if settings.drain_file and os.path.exists(settings.drain_file):
        problems.append("shutting down (SIGTERM received)")
    cert = settings.certificate
    if cert is None:
        problems.append("no serving certificate")
    elif not cert.valid():
        problems.append(cert.last_error or "serving certificate is expired or not yet valid")
    return problems


def _read_json(settings: WebhookSettings) -> Any:
    content_type = (request.mimetype or "").lower()
    if content_type != "application/json":
        raise _Refused(415, "unsupported-media-type",
                       f"Content-Type {request.content_type or '(none)'!r} is not application/json")
    length = request.content_length
    if length is not None and length > settings.max_body:
        raise _Refused(413, "body-too-large", f"body of {length} bytes is over the {settings.max_body}-byte limit")
    stream = request.environ["wsgi.input"]
    if getattr(stream, "over_budget", False):
        budget = request.environ.get("numaguard.body_budget")
        raise _Refused(503, "busy", f"this worker holds its {budget}-byte budget of request bodies in flight; "
                                    f"the body was not read: try again")
    try:
        data = stream.read(settings.max_body + 1 if length is None else length)
    except OSError:    # TimeoutError from the front (front.py): the body missed its deadline
        raise _Refused(408, "body-timeout",
                       f"the body did not arrive within {settings.body_timeout:g} seconds") from None
    if len(data) > settings.max_body:
        raise _Refused(413, "body-too-large", f"body is over the {settings.max_body}-byte limit")
    if length is not None and len(data) < length:
        raise _Refused(400, "body-incomplete", f"body ended after {len(data)} of {length} bytes")
    try:
        return json.loads(data)
    except (ValueError, RecursionError) as e:
        raise _Refused(400, "not-json", f"body is not JSON: {str(e)[:120]}") from None


def _json(payload: Any, status: int) -> Response:
    return Response(json.dumps(payload, separators=(",", ":")), status, content_type="application/json")
