"""Clients that each hold all but the last byte of a large review body, as an attacker inside
the cluster would to fill the webhook's memory, and the memory of the server they attack.
Used by tests/webhook/test_body_budget.py and tests/bench/bench_webhook_bodies.py alike, so
the test and the figures measure the same thing.

`HeldBodies(server, count, path)` opens `count` TLS connections at once, each sending the head
of a 5 MiB AdmissionReview (a pod with a 5 MiB annotation, judged in full once complete) and
all of its body but the last byte; `finish()` sends the last bytes and reads every answer.
`memory(pid)` is the server's resident memory now and at its peak (VmRSS and VmHWM of the
gunicorn master and its workers, /proc), in MiB; `reset_peaks(pid)` starts the peaks again
(clear_refs 5).
"""
from __future__ import annotations

import json
import re
import socket
import ssl
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from .reviews import SERVICE_DNS, managed_pod, review

BODY_BYTES = 5 * 1024 * 1024


def review_of_size(size: int = BODY_BYTES, name: str = "big") -> bytes:
    """A dryRun review of a managed pod whose annotation makes the body exactly `size` bytes."""
    pod = managed_pod()
    pod["metadata"]["name"] = name
    pod["metadata"]["annotations"] = {"example.com/blob": ""}
    empty = len(json.dumps(review(pod, dry_run=True)).encode())
    pod["metadata"]["annotations"] = {"example.com/blob": "a" * (size - empty)}
    data = json.dumps(review(pod, dry_run=True)).encode()
    assert len(data) == size
    return data


@dataclass
class Answer:
    status: int
    headers: dict[str, str]
    body: bytes


@dataclass
class HeldBodies:
    server: object
    count: int
    path: str = "/validate"
    body: bytes = field(default_factory=review_of_size)
    sockets: list = field(default_factory=list)
    send_failures: int = 0

    def open(self) -> None:
        head = (f"POST {self.path} HTTP/1.1\r\nHost: {SERVICE_DNS}\r\nContent-Type: application/json\r\n"
                f"Content-Length: {len(self.body)}\r\n\r\n").encode()
        context = self.server.context()

        def one(_: int) -> ssl.SSLSocket | None:
            raw = socket.create_connection(("127.0.0.1", self.server.port), 60)
            sock = context.wrap_socket(raw, server_hostname=SERVICE_DNS)
            try:
                sock.sendall(head + self.body[:-1])
            except OSError:          # refused at once and closed: still an answer to read
                self.send_failures += 1
            return sock

        with ThreadPoolExecutor(16) as pool:
            self.sockets = list(pool.map(one, range(self.count)))

    def finish(self) -> list[Answer]:
        """Send each last byte and read each answer (status 0: the connection ended without one)."""
        def one(sock: ssl.SSLSocket) -> Answer:
            try:
                sock.sendall(self.body[-1:])
            except OSError:
                pass
            try:
                sock.settimeout(60)
                return _read_answer(sock)
            finally:
                sock.close()

        with ThreadPoolExecutor(16) as pool:
            return list(pool.map(one, self.sockets))


def _read_answer(sock: ssl.SSLSocket) -> Answer:
    data = b""
    try:
        while b"\r\n\r\n" not in data:
            chunk = sock.recv(65536)
            if not chunk:
                return Answer(0, {}, data)
            data += chunk
        head, _, rest = data.partition(b"\r\n\r\n")
        lines = head.decode("latin-1").split("\r\n")
        headers = {k.lower(): v.strip() for k, _, v in (line.partition(":") for line in lines[1:])}
        length = int(headers.get("content-length", "0"))
        while len(rest) < length:
            chunk = sock.recv(65536)
            if not chunk:
                break
            rest += chunk
        return Answer(int(lines[0].split()[1]), headers, rest[:length])
    except OSError:
        return Answer(0, {}, data)


def server_pids(master: int) -> list[int]:
    return [master] + [int(p) for p in Path(f"/proc/{master}/task/{master}/children").read_text().split()]


def memory(master: int) -> dict[int, tuple[float, float]]:
    """pid -> (VmRSS, VmHWM) in MiB, for the master and each worker."""
    out = {}
    for pid in server_pids(master):
        status = Path(f"/proc/{pid}/status").read_text()
        rss, hwm = (int(re.search(rf"{key}:\s+(\d+) kB", status).group(1)) / 1024 for key in ("VmRSS", "VmHWM"))
        out[pid] = (rss, hwm)
    return out


def reset_peaks(master: int) -> None:
    """VmHWM starts again from VmRSS (Documentation/filesystems/proc.rst, clear_refs 5)."""
    for pid in server_pids(master):
        Path(f"/proc/{pid}/clear_refs").write_text("5")


def settle(seconds: float = 1.0) -> None:
    time.sleep(seconds)
