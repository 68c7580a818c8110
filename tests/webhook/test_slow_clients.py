"""Slow clients cannot stall admission (issue 14): 256 connections held open in each slow
mode, against the real `numaguard webhook serve` over TLS, and a fresh client's reviews and
probes are all answered; the server closes every held connection once its deadline passes.
(How fast the fresh client is answered is a figure of tests/bench/bench_webhook.py.)"""
from __future__ import annotations

import json
import time

import pytest

from .conftest import start_server
from .reviews import body, managed_pod, review
from .slow_clients import MODES, HeldConnections, fresh_request

HELD = 256
# Each deadline its own value, further apart than LATE, so a connection closed by the wrong one fails.
TIMEOUTS = {"handshake": 2.0, "header": 7.0, "body": 4.5}
CLOSED_BY = {"no-hello": "handshake", "handshake-silence": "header", "half-headers": "header",
             "body-trickle": "body"}
LATE = 2.0        # generous: a loaded 2-CPU machine closed all 256 within 0.3 s of the deadline


@pytest.fixture(scope="module")
def slow_server(tmp_path_factory):
    srv = start_server(tmp_path_factory.mktemp("slow"), "--workers", "2", "--threads", "4", "--shutdown-delay", "0",
                       *(a for phase, seconds in TIMEOUTS.items() for a in (f"--{phase}-timeout", str(seconds))))
    yield srv
    assert srv.stop() == 0


@pytest.mark.parametrize("mode", MODES)
def test_held_connections_do_not_stall_reviews_or_probes_and_are_closed_at_their_deadline(slow_server, mode):
    srv = slow_server
    held = HeldConnections(srv.port, mode, HELD, srv.context())
    held.open()
    try:
        assert held.open_count() == HELD          # all still held while the fresh client asks
        answers = []
        for _ in range(10):
            answers.append(fresh_request(srv.port, srv.context(), "POST", "/validate", body(review(managed_pod())))[0])
            answers.append(fresh_request(srv.probe_port, srv.context(), "GET", "/healthz")[0])
            answers.append(fresh_request(srv.probe_port, srv.context(), "GET", "/readyz")[0])
        assert answers == [200] * 30
        deadline = TIMEOUTS[CLOSED_BY[mode]]
        assert held.wait_closed(deadline + LATE + 10)
        delays = held.close_delays()
        assert len(delays) == HELD
        since_start = held.close_delays(since_start=True)
        # Closed by the server, by the right deadline: not before it, not long after it.
        assert since_start[0] >= deadline - 0.25, since_start[:5]
        assert delays[-1] <= deadline + LATE, delays[-5:]
        if mode == "body-trickle":          # the application's 408, then the close
            statuses = {h.received.split(b"\r\n", 1)[0] for h in held.held}
            assert statuses == {b"HTTP/1.1 408 REQUEST TIMEOUT"}
            payload = held.held[0].received.partition(b"\r\n\r\n")[2]
            assert json.loads(payload) == {"error": "body-timeout",
                                           "message": "the body did not arrive within 4.5 seconds"}
            assert all(b"\r\nConnection: close\r\n" in h.received for h in held.held)
        else:                               # no request was made: no answer, just the close
            assert {h.received for h in held.held} == {b""}
    finally:
        held.stop()
    reason = {"no-hello": "handshake-timeout", "handshake-silence": "header-timeout",
              "half-headers": "header-timeout"}.get(mode)
    if reason:
        metrics = srv.request("GET", "/metrics")[2].decode()
        line = f'numaguard_webhook_connections_dropped_total{{port="review",reason="{reason}"}}'
        assert any(m.startswith(line) and float(m.split()[-1]) >= HELD for m in metrics.splitlines()), line


def test_a_kept_alive_connection_is_closed_after_the_idle_timeout(tmp_path):
    srv = start_server(tmp_path, "--workers", "1", "--threads", "2", "--shutdown-delay", "0", "--idle-timeout", "1.5")
    try:
        conn = srv.connection()
        conn.request("POST", "/validate", body=body(review(managed_pod())), headers={"Content-Type": "application/json"})
        response = conn.getresponse()
        assert response.status == 200 and response.getheader("Connection") is None    # kept alive
        response.read()
        conn.request("GET", "/nope")                       # the same connection, reused
        assert conn.getresponse().status == 404
        conn.sock.settimeout(10)
        started = time.monotonic()
        assert conn.sock.recv(1) == b""                    # the server's close
        assert 1.3 <= time.monotonic() - started <= 1.5 + LATE
        conn.close()
    finally:
        assert srv.stop() == 0


def test_past_max_connections_the_oldest_unproven_connections_give_way(tmp_path):
    """More held connections than a worker may keep: the oldest of those that never sent a
    whole request are closed first, and a fresh client is still answered."""
    srv = start_server(tmp_path, "--workers", "1", "--threads", "2", "--shutdown-delay", "0",
                       "--max-connections", "20", "--handshake-timeout", "60")
    try:
        first, second = (HeldConnections(srv.port, "no-hello", 20, srv.context()) for _ in range(2))
        first.open()
        second.open()
        assert first.wait_closed(10)                   # all 20 of the older batch gave way
        assert second.open_count() == 20               # the newer 20 are still held
        conn = srv.connection()                        # a fresh client, kept alive for five reviews
        for _ in range(5):
            conn.request("POST", "/validate", body=body(review(managed_pod())),
                         headers={"Content-Type": "application/json"})
            response = conn.getresponse()
            assert response.status == 200 and json.loads(response.read())["response"]["allowed"] is True
        conn.close()
        time.sleep(0.5)
        assert second.open_count() == 19               # it displaced the oldest held one
        second.stop()
        metrics = srv.request("GET", "/metrics")[2].decode()
        assert 'numaguard_webhook_connections_dropped_total{port="review",reason="evicted"} 21.0' in metrics
    finally:
        assert srv.stop() == 0


def test_at_max_connections_idle_kept_alive_connections_give_way_then_none(tmp_path):
    """Every connection has made a request and waits for its next one: the oldest gives way
    to a new client. Every connection in the middle of a request: the new one is refused."""
    srv = start_server(tmp_path, "--workers", "1", "--threads", "1", "--shutdown-delay", "0",
                       "--max-connections", "16", "--body-timeout", "30")
    kept = []
    try:
        for _ in range(16):
            conn = srv.connection()
            conn.request("GET", "/nope")
            response = conn.getresponse()
            assert response.status == 404
            response.read()
            kept.append(conn)
        assert srv.validate(review(managed_pod()))["response"]["allowed"] is True     # one gave way
        kept[0].sock.settimeout(10)
        assert kept[0].sock.recv(1) == b""                                            # the oldest
        # Fifteen kept ones start a request each and stall mid-body (plus the fresh client's slot).
        whole = body(review(managed_pod()))
        for conn in kept[1:]:
            conn.sock.sendall(b"POST /validate HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                              b"Content-Length: %d\r\n\r\n" % len(whole) + whole[:10])
        time.sleep(0.5)
        assert fresh_request(srv.port, srv.context(), "POST", "/validate", whole)[0] == 200   # the 16th slot
        holder = srv.connection()                      # the 16th: a request answered, then one stalled
        kept.append(holder)
        holder.request("GET", "/nope")
        holder.getresponse().read()
        holder.sock.sendall(b"POST /validate HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                            b"Content-Length: %d\r\n\r\n" % len(whole) + whole[:10])
        time.sleep(0.5)
        assert fresh_request(srv.port, srv.context(), "POST", "/validate", whole, timeout=10)[0] == 0
        metrics = srv.request("GET", "/metrics")[2].decode()        # the probe port has its own count
        assert 'numaguard_webhook_connections_dropped_total{port="review",reason="over-capacity"} 1.0' in metrics
    finally:
        for conn in kept:
            conn.close()
        assert srv.stop() == 0
