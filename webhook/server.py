"""`numaguard webhook serve`: gunicorn used as a library (`BaseApplication`), TLS only.

* Workers are numaguard's own (worker.FrontWorker): an asyncio front per worker does the TLS
  handshakes and reads whole requests under deadlines (front.py), and the Flask application
  (`create_app`, built in each worker after the fork) answers them on a thread pool.
* Two ports: reviews (`POST /validate`) and probes (`/healthz`, `/readyz`, `/metrics`), each
  worker with its own socket on each (SO_REUSEPORT), each port with its own threads.
* TLS: the front asks `ServingCertificate.context(role)` for a context on every new
  connection; it follows the certificate files (see tls.py). There is no plaintext listener.
* SIGTERM: the arbiter first creates the drain file (every worker's `/readyz` turns 503, so
  the Service stops sending new reviews), keeps serving for `shutdown_delay` seconds, then
  stops gracefully: workers finish their in-flight requests (up to `graceful_timeout`).
* Metrics: `PROMETHEUS_MULTIPROC_DIR` is a temporary directory the command creates before any
  worker exists; a worker that exits is marked dead (`child_exit`).
"""
from __future__ import annotations

import os
import shutil
import socket
import tempfile
import time
from dataclasses import dataclass
from typing import Any

from gunicorn.app.base import BaseApplication
from gunicorn.arbiter import Arbiter
from gunicorn.errors import HaltServer

from numaguard.webhook.front import Timeouts
from numaguard.webhook.settings import BODY_BUDGET_BYTES, MAX_BODY_BYTES


class ServeError(RuntimeError):
    """The server could not run; one line."""


@dataclass(frozen=True)
class ServeOptions:
    cert: str
    key: str
    config: str | None = None
    host: str = "0.0.0.0"
    port: int = 8443
    probe_port: int = 8444
    workers: int = 2
    threads: int = 4
    shutdown_delay: float = 5.0
    graceful_timeout: float = 20.0
    bench_route: bool = False
    timeouts: Timeouts = Timeouts()
    client_ca: str | None = None
    tls_min_version: str = "1.2"
    max_body: int = MAX_BODY_BYTES
    body_budget: int = BODY_BUDGET_BYTES  # request bodies held at once, per worker (front.BodyBudget)
    max_connections: int = 1024           # per worker and port (front.Front)

    def addresses(self) -> list[str]:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return [f"{host}:{self.port}", f"{host}:{self.probe_port}"]

    def startup_line(self) -> str:
        """What the log says once the workers are up: where, and under which rules."""
        review, probe = (f"https://{a}" for a in self.addresses())
        t = self.timeouts
        client = f"required, signed by {self.client_ca}" if self.client_ca else "not required"
        return (f"numaguard webhook: reviews on {review}/validate, probes on {probe} (/healthz, /readyz, "
                f"/metrics); TLS {self.tls_min_version}+ (AEAD suites only); client certificate {client}; "
                f"{self.workers} workers x {self.threads} threads, {self.max_connections} connections each per port, "
                f"request bodies up to {_mib(self.max_body)} each and {_mib(self.body_budget)} at once; "
                f"timeouts: handshake {t.handshake:g}s, "
                f"header {t.header:g}s, body {t.body:g}s, idle {t.idle:g}s, write {t.write:g}s")


def _mib(size: int) -> str:
    return f"{size / 2**20:g} MiB"


def resolve_options(given: dict[str, Any]) -> ServeOptions:
    """ServeOptions from the flags given on the command line (`given`: only those set, with
    timeouts as `<phase>_timeout`), over the config file's serving keys, over the defaults."""
    from numaguard.webhook.settings import serving_keys

    keys = serving_keys(given.get("config"))
    timeouts = {**keys.pop("timeouts", {}),
                **{phase: given.pop(f"{phase}_timeout") for phase in Timeouts.__dataclass_fields__
                   if f"{phase}_timeout" in given}}
    return ServeOptions(**{**keys, **given, "timeouts": Timeouts(**timeouts)})


class _DrainingArbiter(Arbiter):
    drain_file: str = ""
    shutdown_delay: float = 0.0

    def start(self) -> None:
        # With reuse_port the arbiter itself holds no socket, so gunicorn's "Listening at:"
        # line would name none; the startup line (when_ready) names both ports instead.
        self.log.error_log.addFilter(lambda record: not record.getMessage().startswith("Listening at:  "))
        super().start()

    def handle_term(self) -> None:
        """Readiness first: new connections keep being served while endpoints are updated."""
        with open(self.drain_file, "w", encoding="utf-8") as fh:
            fh.write(str(time.time()))
        self.log.info("SIGTERM: /readyz now 503; serving %.1fs more before a graceful stop",
                      self.shutdown_delay)
        deadline = time.monotonic() + self.shutdown_delay
        while time.monotonic() < deadline:
            time.sleep(0.1)
            self.reap_workers()
        raise StopIteration


class _WebhookApplication(BaseApplication):
    def __init__(self, options: ServeOptions, certificate, state_dir: str) -> None:
        self.options, self.certificate, self.state_dir = options, certificate, state_dir
        super().__init__()

    def load_config(self) -> None:
        o = self.options
        from numaguard.webhook.metrics import mark_worker_dead

        settings = {
            "bind": o.addresses(),
            "workers": o.workers, "threads": o.threads,
            "worker_class": "numaguard.webhook.worker.FrontWorker",
            # One listening socket per worker (SO_REUSEPORT): the kernel spreads new connections
            # over the workers. With one shared socket, whichever worker wakes first accepts, and
            # the API server's long-lived keep-alive connections could all land on one worker
            # (one core) while the other idles: the benchmark saw half the throughput then.
            "reuse_port": True,
            "timeout": 30, "graceful_timeout": max(1, round(o.graceful_timeout)),
            "accesslog": None, "errorlog": "-", "loglevel": "info",
            "when_ready": lambda arbiter: arbiter.log.info("%s", o.startup_line()),
            "child_exit": lambda server, worker: mark_worker_dead(worker.pid),
            "proc_name": "numaguard-webhook",
            # gunicorn's control socket lives under $HOME; the pod's root filesystem is read-only
            "control_socket_disable": True,
            # gunicorn's own temporary files (worker heartbeats) go to the state directory
            "worker_tmp_dir": self.state_dir,
        }
        for key, value in settings.items():
            self.cfg.set(key, value)

    def load(self):
        from numaguard.webhook.app import create_app
        from numaguard.webhook.settings import WebhookSettings, load_policy

        return create_app(WebhookSettings(
            policy=load_policy(self.options.config), certificate=self.certificate,
            drain_file=os.path.join(self.state_dir, "draining"), bench_route=self.options.bench_route,
            body_timeout=self.options.timeouts.body, max_body=self.options.max_body,
            metrics_need_client_certificate=bool(self.options.client_ca)))

    def run(self) -> None:
        arbiter = _DrainingArbiter(self)
        arbiter.drain_file = os.path.join(self.state_dir, "draining")
        arbiter.shutdown_delay = self.options.shutdown_delay
        arbiter.run()


def serve(options: ServeOptions) -> None:
    """Check the config and certificate (raising SettingsError / TLSError with one line), then
    serve until SIGTERM or SIGINT."""
    state_dir = tempfile.mkdtemp(prefix="numaguard-webhook-")
    # Before prometheus_client is imported anywhere (it picks its storage at import time).
    os.environ["PROMETHEUS_MULTIPROC_DIR"] = state_dir
    try:
        from numaguard.webhook.settings import load_policy
        from numaguard.webhook.tls import ServingCertificate

        load_policy(options.config)                 # fail before forking, with one line
        certificate = ServingCertificate(options.cert, options.key, client_ca=options.client_ca,
                                         min_version=options.tls_min_version)
        certificate.load()
        if options.port == options.probe_port:
            raise ServeError(f"the review port and the probe port are both {options.port}")
        for port in (options.port, options.probe_port):
            _check_port_free(options.host, port)
        try:
            _WebhookApplication(options, certificate, state_dir).run()
        except HaltServer as e:     # a worker could not start; gunicorn has logged why
            raise ServeError(f"gunicorn stopped: {e.reason}") from None
    finally:
        shutil.rmtree(state_dir, ignore_errors=True)


def _check_port_free(host: str, port: int) -> None:
    """Each worker binds its own socket with SO_REUSEPORT, so a port already in use would only
    show as workers failing to boot, and a second numaguard on the same port would silently
    share it. Bind once without SO_REUSEPORT first: that fails while anything listens there."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)   # as gunicorn: TIME_WAIT is fine
        try:
            probe.bind((host, port))
        except OSError as e:
            raise ServeError(f"cannot listen on {host}:{port}: {e.strerror or e}") from None
