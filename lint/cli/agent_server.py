"""The HTTP side of `numaguard node agent`: `/metrics` in the Prometheus text format 0.0.4 and
`/healthz`, served by a threaded WSGI server that bounds what a client can hold: a connection
that sends nothing is dropped after `IDLE_TIMEOUT` seconds, and beyond `MAX_CONNECTIONS` at once
a new one is closed unanswered (the collector answers one scrape at a time anyway).

The answer is always text, uncompressed, whatever the scraper asks: OpenMetrics, which
Prometheus asks for first, takes twice as long to write, and gzip costs some 9 ms more per
scrape of 100 containers (some 270 KB): on the node, CPU is the scarce thing, not bytes. And it
is written by `text_exposition`, which gives byte for byte what prometheus_client's
`generate_latest` gives (tests/test_node_agent.py compares them) in a third of the time:
generate_latest checks and escapes every label name of every sample (UTF-8 names, since 0.22),
some 15 ms of the 50 ms a scrape may cost on a node of 100 containers; the agent's names are
fixed and legal, so the writer formats each distinct label set once per scrape.
"""
from __future__ import annotations

import signal
import socket
import threading
from socketserver import ThreadingMixIn
from typing import Callable
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer, make_server

from prometheus_client import CollectorRegistry, ProcessCollector, generate_latest
from prometheus_client.utils import floatToGoString

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


TEXT_0_0_4 = "text/plain; version=0.0.4; charset=utf-8"    # what generate_latest writes
_TYPES = {"counter": "counter", "gauge": "gauge", "unknown": "untyped", "untyped": "untyped"}


def _escaped(value: str) -> str:
    return value.replace("\\", r"\\").replace("\n", r"\n").replace('"', r'\"')


def text_exposition(registry: CollectorRegistry) -> bytes:
    """What `generate_latest(registry)` writes, for families of counters, gauges and untyped
    samples without timestamps (the agent's and the process collector's); any other family
    is left to generate_latest itself."""
    families = list(registry.collect())
    if any(m.type not in _TYPES or any(s.timestamp is not None or s.exemplar is not None for s in m.samples)
           for m in families):
        return generate_latest(registry)
    out, blocks = [], {}
    for m in families:
        name = m.name + "_total" if m.type == "counter" else m.name
        doc = m.documentation.replace("\\", r"\\").replace("\n", r"\n")
        out.append(f"# HELP {name} {doc}\n# TYPE {name} {_TYPES[m.type]}\n")
        for sample in m.samples:
            block = ""
            if sample.labels:
                key = tuple(sample.labels.items())
                block = blocks.get(key)
                if block is None:
                    block = blocks[key] = "{" + ",".join(f'{k}="{_escaped(v)}"' for k, v in sorted(key)) + "}"
            out.append(f"{sample.name}{block} {floatToGoString(sample.value)}\n")
    return "".join(out).encode()


def application(registry: CollectorRegistry):
    def app(environ, start_response):
        path, method = environ.get("PATH_INFO", ""), environ.get("REQUEST_METHOD", "GET")
        if method not in ("GET", "HEAD"):
            start_response("405 Method Not Allowed", [("Content-Type", "text/plain"), ("Allow", "GET, HEAD")])
            return [b"only GET\n"]
        if path == "/metrics":
            body = text_exposition(registry)
            start_response("200 OK", [("Content-Type", TEXT_0_0_4), ("Content-Length", str(len(body)))])
            return [body if method == "GET" else b""]
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


def make_http_server(registry: CollectorRegistry, listen: str) -> WSGIServer:
    """The server for `registry` on `listen` (not yet serving). Raises OSError when the address
    cannot be bound."""
    host, port = parse_listen(listen)
    server_class = type("Server", (_Server,), {"address_family": socket.AF_INET6 if ":" in host else socket.AF_INET})
    return make_server(host, port, application(registry), server_class, handler_class=_Handler)


def serve(collector, listen: str, log: Callable[[str], None]) -> None:
    """Serve until SIGTERM or SIGINT. Raises OSError when the address cannot be bound."""
    registry = CollectorRegistry(auto_describe=False)
    registry.register(collector)
    ProcessCollector(registry=registry)      # process_cpu_seconds_total, process_resident_memory_bytes
    server = make_http_server(registry, listen)
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
