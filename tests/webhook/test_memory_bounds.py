"""The webhook's memory, bounded across connections (issue 22 §3), against the real server over
TLS: the bytes of request bodies one worker holds at once (a body past that budget is answered
503 with Retry-After, unread, and the budget is exact at its boundary, chunked bodies
included), 128 clients each holding all but the last byte of a 5 MiB review stay under the
Deployment's memory limit and the memory is returned after the burst, an evicted connection is
one counted line and never a traceback, and a request head is at most 65,536 bytes."""
from __future__ import annotations

import json
import re
import socket
import time
from collections import Counter
from pathlib import Path

import pytest
import yaml

from numaguard.lint.k8s.quantity import parse_quantity
from numaguard.webhook.front import MAX_HEAD_BYTES

from .conftest import start_server
from .held_bodies import HeldBodies, memory, reset_peaks, review_of_size
from .reviews import SERVICE_DNS, body, managed_pod, review
from .slow_clients import HeldConnections
from .test_bad_input import _raw_tls, _read_head_and_body

DEPLOYMENT = Path(__file__).resolve().parents[2] / "deploy" / "webhook" / "base" / "deployment.yaml"
KIB = 1024


def _post_head(length: int, extra: bytes = b"") -> bytes:
    return (b"POST /validate HTTP/1.1\r\nHost: " + SERVICE_DNS.encode() + b"\r\nContent-Type: application/json\r\n"
            + extra + b"Content-Length: %d\r\n\r\n" % length)


def _metric(server, name: str, labels: str) -> float:
    text = server.request("GET", "/metrics")[2].decode()
    match = re.search(re.escape(f"{name}{{{labels}}}") + r" ([0-9.e+-]+)$", text, re.M)
    return float(match.group(1)) if match else 0.0


# ------------------------------------------------------------------------------ the budget

@pytest.fixture(scope="module")
def budget_server(tmp_path_factory):
    """One worker, a 1 MiB budget, bodies given 30 s (a held body must not time out)."""
    srv = start_server(tmp_path_factory.mktemp("budget"), "--workers", "1", "--threads", "2",
                       "--shutdown-delay", "0", "--body-budget", "1Mi", "--body-timeout", "30")
    yield srv
    assert srv.stop() == 0


def _hold(server, size: int):
    """A connection holding all of a `size`-byte review but its last byte; (socket, body)."""
    data = review_of_size(size, name=f"held-{size}")
    sock = _raw_tls(server)
    sock.sendall(_post_head(size) + data[:-1])
    time.sleep(0.3)               # read by the server: its bytes are taken from the budget
    return sock, data


def _send(server, data: bytes) -> tuple[bytes, bytes]:
    sock = _raw_tls(server)
    try:
        sock.sendall(_post_head(len(data)) + data)
        return _read_head_and_body(sock)
    finally:
        sock.close()


def test_the_budget_is_exact_and_a_body_past_it_is_503_at_once_with_retry_after(budget_server):
    srv = budget_server
    held, held_data = _hold(srv, 900 * KIB)
    left = 1024 * KIB - 900 * KIB
    # one byte more than is left: refused from its head, with the reason and Retry-After
    head, payload = _send(srv, review_of_size(left + 1, name="one-byte-too-many"))
    assert head.split(b"\r\n")[0] == b"HTTP/1.1 503 SERVICE UNAVAILABLE"
    assert b"\r\nRetry-After: 1\r\n" in head and b"\r\nConnection: close\r\n" in head
    assert json.loads(payload) == {"error": "busy", "message": "this worker holds its 1048576-byte budget of "
                                   "request bodies in flight; the body was not read: try again"}
    # exactly what is left: read and judged
    head, payload = _send(srv, review_of_size(left, name="exactly-what-is-left"))
    assert head.startswith(b"HTTP/1.1 200 ") and json.loads(payload)["response"]["allowed"] is True
    # the held body, completed, is judged too; then its bytes are given back
    held.sendall(held_data[-1:])
    head, payload = _read_head_and_body(held)
    held.close()
    assert head.startswith(b"HTTP/1.1 200 ") and json.loads(payload)["response"]["allowed"] is True
    head, _ = _send(srv, review_of_size(1024 * KIB, name="the-whole-budget"))
    assert head.startswith(b"HTTP/1.1 200 ")
    assert _metric(srv, "numaguard_webhook_bad_requests_total", 'reason="busy"') == 1
    assert [line["status"] for line in srv.access_log() if line.get("error") == "busy"] == [503]


def test_a_chunked_body_is_counted_as_it_arrives(budget_server):
    srv = budget_server
    held, held_data = _hold(srv, 900 * KIB)
    try:
        sock = _raw_tls(srv)
        chunk = b" " * (200 * KIB)            # JSON whitespace: a chunked body growing past what is left
        sock.sendall(b"POST /validate HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                     b"Transfer-Encoding: chunked\r\n\r\n" + b"%x\r\n" % len(chunk) + chunk + b"\r\n")
        head, payload = _read_head_and_body(sock)
        sock.close()
        assert head.split(b"\r\n")[0] == b"HTTP/1.1 503 SERVICE UNAVAILABLE"
        assert json.loads(payload)["error"] == "busy"
    finally:
        held.sendall(held_data[-1:])
        assert _read_head_and_body(held)[0].startswith(b"HTTP/1.1 200 ")
        held.close()
    head, _ = _send(srv, body(review(managed_pod())))      # all given back
    assert head.startswith(b"HTTP/1.1 200 ")


def test_128_clients_holding_5_mib_bodies_stay_under_the_deployments_limit_and_the_memory_comes_back(tmp_path):
    """The attack of issue 22: 128 clients each holding all but the last byte of a 5 MiB
    review, against the Deployment's layout. The server's peak (VmHWM of the master and each
    worker, summed) stays under the Deployment's memory limit; 6 bodies per worker (its 32 MiB
    budget) are read and judged, the others are answered 503; after the burst each worker is
    back within 24 MiB of where it started (it stayed at its peak before)."""
    container = yaml.safe_load(DEPLOYMENT.read_text())["spec"]["template"]["spec"]["containers"][0]
    limit_mib = float(parse_quantity(container["resources"]["limits"]["memory"])) / 2**20
    layout = [part for a in container["args"] if a.split("=")[0] in ("--workers", "--threads") for part in a.split("=")]
    srv = start_server(tmp_path, *layout, "--shutdown-delay", "0", "--body-timeout", "120")
    try:
        time.sleep(1)
        before = memory(srv.proc.pid)
        reset_peaks(srv.proc.pid)
        held = HeldBodies(srv, 128)
        held.open()
        answers = held.finish()
        time.sleep(2)
        after = memory(srv.proc.pid)
    finally:
        srv.stop()
    peak = sum(hwm for _, hwm in after.values())
    assert peak < limit_mib, (peak, limit_mib)
    statuses = Counter(a.status for a in answers)
    assert statuses[200] == 2 * 6, statuses
    # the others: 503 with Retry-After, or (a client still sending when the server, done
    # draining, closed) no answer read; never another status
    assert set(statuses) <= {200, 503, 0} and statuses[503] >= 100, statuses
    assert all(a.headers.get("retry-after") == "1" and json.loads(a.body)["error"] == "busy"
               for a in answers if a.status == 503)
    workers = [pid for pid in before if pid != srv.proc.pid]
    assert all(after[pid][0] <= before[pid][0] + 24 for pid in workers), (before, after)


# ------------------------------------------------------------------------------ evictions

def test_evicted_connections_are_counted_and_logged_in_one_line_never_a_traceback(tmp_path):
    """Past --max-connections, connections are given up while their TLS handshake waits (they
    sent no ClientHello) and while it runs (full handshakes racing): before, each cost two
    tracebacks (start_tls's AttributeError, then writer.is_closing() on no transport)."""
    srv = start_server(tmp_path, "--workers", "1", "--max-connections", "16", "--shutdown-delay", "0")
    try:
        silent = HeldConnections(srv.port, "no-hello", 64, srv.context())
        silent.open()
        handshaking = HeldConnections(srv.port, "handshake-silence", 64, srv.context())
        handshaking.open()
        assert srv.validate(review(managed_pod()))["response"]["allowed"] is True      # still serving
        evicted = _metric(srv, "numaguard_webhook_connections_dropped_total", 'port="review",reason="evicted"')
        silent.stop()
        handshaking.stop()
    finally:
        assert srv.stop() == 0
    log = srv.stderr.read_text()
    assert "Traceback" not in log and "Error" not in log
    lines = re.findall(r"\[WARNING\] (\d+) connection\(s\) on the review port given up for newer ones within 10 s, "
                       r"to stay within --max-connections 16 \(slow or idle clients; "
                       r'numaguard_webhook_connections_dropped_total\{reason="evicted"\}\)', log)
    assert evicted >= 128 - 16 and sum(map(int, lines)) == evicted
    assert 1 <= len(lines) <= 3          # the first at once, the rest per 10 s and at the stop


# ------------------------------------------------------------------------------ the head

@pytest.mark.parametrize("size, status", [(MAX_HEAD_BYTES, 200), (MAX_HEAD_BYTES + 1, 431)])
def test_a_head_of_64_kib_is_read_and_one_byte_more_is_431(budget_server, size, status):
    data = body(review(managed_pod()))
    bare = len(_post_head(len(data), b"X-Pad: \r\n"))
    head = _post_head(len(data), b"X-Pad: " + b"p" * (size - bare) + b"\r\n")
    assert len(head) == size
    sock = _raw_tls(budget_server)
    sock.sendall(head + data)
    answer, payload = _read_head_and_body(sock)
    sock.close()
    assert int(answer.split()[1]) == status
    if status == 431:
        assert json.loads(payload) == {"error": "bad-request", "message": "the request head (request line and "
                                       "headers) is over 65,536 bytes"}


# ------------------------------------------------------------------------------ in process

def test_the_body_is_handed_over_without_a_copy_and_read_in_parts_as_a_file_is():
    from numaguard.webhook.front import _Body

    data = bytearray(b'{"kind": "AdmissionReview"}')
    whole = _Body(data, timed_out=False)
    assert whole.read() is data                       # all of it at once: the buffer itself
    parts = _Body(data, timed_out=False)
    assert (parts.read(8), parts.read(None), parts.read()) == (b'{"kind":', b' "AdmissionReview"}', b"")
    into = _Body(data, timed_out=False)
    buffer = bytearray(5)
    assert (into.readinto(buffer), bytes(buffer)) == (5, b'{"kin')
    with pytest.raises(TimeoutError):
        _Body(data, timed_out=True).read()


def test_a_body_budget_that_is_not_a_byte_count_is_refused_in_one_line(tmp_path):
    import subprocess

    from .conftest import NUMAGUARD

    run = subprocess.run([*NUMAGUARD, "webhook", "serve", "--cert", "c", "--key", "k", "--body-budget", "1.5Mi"],
                         capture_output=True, text=True)
    assert run.returncode == 2
    assert run.stderr.splitlines()[-1] == ("Error: Invalid value for '--body-budget': '1.5Mi' is not a byte count "
                                           "above zero (e.g. 32Mi, 33554432)")


def test_evictions_are_told_once_at_once_then_counted_until_the_period_ends_or_the_stop():
    """_Tally without a server: the first eviction is logged at once, the next ones are counted,
    and the stop logs what was counted (one, too), then nothing more."""
    import asyncio
    import logging

    from numaguard.webhook.front import _Tally

    said: list[str] = []
    log = logging.getLogger("numaguard.test.tally")
    log.propagate = False
    handler = logging.Handler()
    handler.emit = lambda record: said.append(record.getMessage())
    log.addHandler(handler)

    async def evictions() -> None:
        tally = _Tally(log, "%d given up within %d s", every=3600)
        tally.add()
        tally.add()
        assert said == ["1 given up within 3600 s"]
        tally.close()
        tally.close()
        tally.add()
        tally.add()
        tally.add()
        tally.close()

    try:
        asyncio.run(evictions())
    finally:
        log.removeHandler(handler)
    assert said == ["1 given up within 3600 s", "1 given up within 3600 s", "1 given up within 3600 s",
                    "2 given up within 3600 s"]
