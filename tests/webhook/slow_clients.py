"""Slow and idle clients, as an attacker inside the cluster would hold them, and the fresh
client whose reviews must still be answered. Used by tests/webhook/test_slow_clients.py and
tests/bench/bench_webhook.py alike, so the test and the figures measure the same thing.

`HeldConnections(port, mode, count, context)` opens `count` connections in one mode and
records, for each, when the server closed it (seen as EOF or a reset) and what it said first:

* `no-hello`: TCP connected, no TLS ClientHello ever sent;
* `handshake-silence`: the TLS handshake done, then nothing;
* `half-headers`: half of a request head, then nothing;
* `body-trickle`: a whole head announcing a 1,000-byte body, then one byte per second.
"""
from __future__ import annotations

import http.client
import selectors
import socket
import ssl
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from .reviews import SERVICE_DNS

MODES = ("no-hello", "handshake-silence", "half-headers", "body-trickle")
HEAD = (b"POST /validate HTTP/1.1\r\nHost: " + SERVICE_DNS.encode() + b"\r\nContent-Type: application/json\r\n"
        b"Content-Length: 1000\r\n\r\n")
TRICKLE_BODY_BYTES = 1000


@dataclass
class Held:
    sock: socket.socket
    opened: float                 # when the client had the connection (after connect and TLS)
    started: float                # when the client began to connect: the server cannot have
                                  # accepted it, nor started its deadline, before this
    closed: float | None = None
    received: bytes = b""


class HeldConnections:
    def __init__(self, port: int, mode: str, count: int, context: ssl.SSLContext, open_timeout: float = 30) -> None:
        assert mode in MODES
        self.port, self.mode, self.count, self.context = port, mode, count, context
        self.open_timeout = open_timeout
        self.held: list[Held] = []
        self.failed = 0                     # connections the server did not let us open (handshake)
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._watcher: threading.Thread | None = None

    def open(self) -> None:
        with ThreadPoolExecutor(8) as pool:
            opened = list(pool.map(lambda _: self._open_one(), range(self.count)))
        self.held = [h for h in opened if h is not None]
        self.failed = self.count - len(self.held)
        self._watcher = threading.Thread(target=self._watch, daemon=True)
        self._watcher.start()

    def _open_one(self) -> Held | None:
        started = time.monotonic()
        raw = socket.create_connection(("127.0.0.1", self.port), self.open_timeout)
        raw.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        sock: socket.socket = raw
        try:
            if self.mode != "no-hello":
                sock = self.context.wrap_socket(raw, server_hostname=SERVICE_DNS)
            if self.mode == "half-headers":
                sock.sendall(HEAD[: len(HEAD) // 2])
            elif self.mode == "body-trickle":
                sock.sendall(HEAD + b"{")
        except OSError:                     # timeouts and TLS errors included
            sock.close()
            return None
        held = Held(sock, time.monotonic(), started)
        sock.setblocking(False)
        return held

    def _watch(self) -> None:
        selector = selectors.DefaultSelector()
        for held in self.held:
            selector.register(held.sock, selectors.EVENT_READ, held)
        next_byte = time.monotonic() + 1.0
        sent = 1
        while not self._stop.is_set() and selector.get_map():
            for key, _ in selector.select(0.05):
                self._read(key.data, selector)
            if self.mode == "body-trickle" and time.monotonic() >= next_byte and sent < TRICKLE_BODY_BYTES:
                next_byte += 1.0
                sent += 1
                for held in [k.data for k in list(selector.get_map().values())]:
                    try:
                        held.sock.send(b" ")
                    except (ssl.SSLWantWriteError, ssl.SSLWantReadError, BlockingIOError):
                        pass
                    except OSError:
                        self._closed(held, selector)
        selector.close()

    def _read(self, held: Held, selector: selectors.BaseSelector) -> None:
        while True:
            try:
                data = held.sock.recv(65536)
            except (ssl.SSLWantReadError, ssl.SSLWantWriteError, BlockingIOError):
                return
            except OSError:          # reset, or a TLS record cut off by the close
                data = b""
            if not data:
                self._closed(held, selector)
                return
            held.received += data

    def _closed(self, held: Held, selector: selectors.BaseSelector) -> None:
        held.closed = time.monotonic()
        selector.unregister(held.sock)
        held.sock.close()

    def open_count(self) -> int:
        return sum(1 for h in self.held if h.closed is None)

    def wait_closed(self, timeout: float) -> bool:
        deadline = time.monotonic() + timeout
        while self.open_count() and time.monotonic() < deadline:
            time.sleep(0.05)
        return self.open_count() == 0

    def close_delays(self, since_start: bool = False) -> list[float]:
        """Seconds from each connection's opening to the server's close, for the closed ones;
        `since_start`: from when the client began to connect, the earliest the server's
        deadline can have started (a lower bound that a thread of ours descheduled between
        connecting and reading the clock cannot undercut)."""
        return sorted(h.closed - (h.started if since_start else h.opened)
                      for h in self.held if h.closed is not None)

    def stop(self) -> None:
        self._stop.set()
        if self._watcher:
            self._watcher.join(10)
        for held in self.held:
            if held.closed is None:
                held.sock.close()


def fresh_request(port: int, context: ssl.SSLContext, method: str, path: str, body: bytes | None = None,
                  timeout: float = 30) -> tuple[int, float]:
    """One request from a fresh client (new connection, handshake included): (status, seconds)."""
    from .conftest import ServiceConnection

    started = time.perf_counter()
    conn = ServiceConnection(port, context, timeout)
    try:
        conn.request(method, path, body=body, headers={"Content-Type": "application/json"} if body else {})
        response = conn.getresponse()
        response.read()
        return response.status, time.perf_counter() - started
    except (OSError, http.client.HTTPException):
        return 0, time.perf_counter() - started
    finally:
        conn.close()


def percentile(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(p / 100 * (len(ordered) - 1))))]
