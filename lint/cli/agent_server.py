"""The HTTP side of `numaguard node agent`: `/metrics` (prometheus_client's WSGI application:
text or OpenMetrics as the scraper asks, gzip when it accepts it) and `/healthz`, served by a
threaded WSGI server that bounds what a client can hold: a connection that sends nothing is
dropped after `IDLE_TIMEOUT` seconds, and beyond `MAX_CONNECTIONS` at once a new one is closed
unanswered (the collector answers one scrape at a time anyway)."""
from __future__ import annotations

import signal
import socket
import threading
from socketserver import ThreadingMixIn
from typing import Callable
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer, make_server

from prometheus_client import CollectorRegistry, ProcessCollector, make_wsgi_app

IDLE_TIMEOUT = 10.0
MAX_CONNECTIONS = 32


class _Handler(WSGIRequestHandler):
    timeout = IDLE_TIMEOUT                   # StreamRequestHandler: settimeout on the connection

    def log_message(self, format, *args) -> None:     # noqa: A002 - no access log
        pass


class _Server(ThreadingMixIn, WSGIServer):
    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, *args, **kwargs) -> None:
        self.slots = threading.BoundedSemaphore(MAX_CONNECTIONS)
        super().__init__(*args, **kwargs)

    def process_request(self, request, client_address) -> None:
        if not self.slots.acquire(blocking=False):
            self.shutdown_request(request)
            return
        super().process_request(request, client_address)

    def process_request_thread(self, request, client_address) -> None:
        try:
            super().process_request_thread(request, client_address)
        finally:
            self.slots.release()

    def handle_error(self, request, client_address) -> None:
        pass                                 # a client that went away mid-answer: nothing to say


def application(registry: CollectorRegistry):
    metrics = make_wsgi_app(registry)

    def app(environ, start_response):
        path, method = environ.get("PATH_INFO", ""), environ.get("REQUEST_METHOD", "GET")
        if method not in ("GET", "HEAD"):
            start_response("405 Method Not Allowed", [("Content-Type", "text/plain"), ("Allow", "GET, HEAD")])
            return [b"only GET\n"]
        if path == "/metrics":
            return metrics(environ, start_response)
        if path == "/healthz":
            start_response("200 OK", [("Content-Type", "text/plain")])
            return [b"ok\n"]
        start_response("404 Not Found", [("Content-Type", "text/plain")])
        return [b"not found: the agent serves /metrics and /healthz\n"]

    return app


def parse_listen(text: str) -> tuple[str, int]:
    """"HOST:PORT", "[v6]:PORT" or ":PORT" (every address). Raises ValueError."""
    host, sep, port = text.rpartition(":")
    if not sep or not port.isdigit() or not 0 <= int(port) <= 65535:
        raise ValueError(f"{text!r} is not HOST:PORT")
    return host.strip("[]") or "0.0.0.0", int(port)


def serve(collector, listen: str, log: Callable[[str], None]) -> None:
    """Serve until SIGTERM or SIGINT. Raises OSError when the address cannot be bound."""
    registry = CollectorRegistry(auto_describe=False)
    registry.register(collector)
    ProcessCollector(registry=registry)      # process_cpu_seconds_total, process_resident_memory_bytes
    host, port = parse_listen(listen)
    server_class = type("Server", (_Server,), {"address_family": socket.AF_INET6 if ":" in host else socket.AF_INET})
    server = make_server(host, port, application(registry), server_class, handler_class=_Handler)
    bound = server.server_address
    shown = f"[{bound[0]}]" if ":" in bound[0] else bound[0]
    log(f"serving http://{shown}:{bound[1]}/metrics")

    def stop(_signum, _frame) -> None:
        threading.Thread(target=server.shutdown, daemon=True).start()

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    try:
        server.serve_forever(poll_interval=0.5)
    finally:
        server.server_close()
