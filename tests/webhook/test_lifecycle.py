"""The server's life: metrics from every worker, certificate rotation while requests flow,
SIGTERM under load, readiness, and `numaguard webhook certs` itself."""
from __future__ import annotations

import base64
import json
import os
import re
import signal
import socket
import ssl
import stat
import subprocess
import threading
import time

import pytest
import yaml
from cryptography import x509

from .conftest import NUMAGUARD, free_port, make_certs, start_server
from .reviews import SERVICE_DNS, body, managed_pod, review
from .test_bad_input import _raw_tls, _read_head_and_body, _read_response


def _metric(text: str, name: str, labels: str = "") -> float:
    pattern = re.escape(name + (("{" + labels + "}") if labels else "")) + r" ([0-9.e+-]+)$"
    match = re.search(pattern, text, re.M)
    assert match, f"{name}{{{labels}}} not in metrics"
    return float(match.group(1))


def test_certs_writes_ca_and_serving_pair_with_service_names_and_patches_the_ca_bundle(tmp_path):
    vwc = tmp_path / "vwc.yaml"
    vwc.write_text(yaml.safe_dump({"apiVersion": "admissionregistration.k8s.io/v1",
                                   "kind": "ValidatingWebhookConfiguration", "metadata": {"name": "numaguard"},
                                   "webhooks": [{"name": "pods.numaguard.io", "clientConfig": {"service": {
                                       "name": "numaguard-webhook", "namespace": "numaguard", "path": "/validate"}}}]}))
    out = make_certs(tmp_path / "c", "--patch", str(vwc)).stdout.splitlines()
    assert out[0].startswith(f"{tmp_path / 'c'}: new CA; tls.crt for numaguard-webhook, numaguard-webhook.numaguard, "
                             "numaguard-webhook.numaguard.svc, numaguard-webhook.numaguard.svc.cluster.local until ")
    assert out[1] == f"{vwc}: caBundle set on 1 webhook"
    modes = {p.name: stat.S_IMODE(p.stat().st_mode) for p in (tmp_path / "c").iterdir()}
    assert modes == {"ca.crt": 0o644, "ca.key": 0o600, "tls.crt": 0o644, "tls.key": 0o600}
    ca_pem = (tmp_path / "c" / "ca.crt").read_bytes()
    doc = yaml.safe_load(vwc.read_text())
    assert base64.b64decode(doc["webhooks"][0]["clientConfig"]["caBundle"]) == ca_pem
    cert = x509.load_pem_x509_certificate((tmp_path / "c" / "tls.crt").read_bytes())
    ca = x509.load_pem_x509_certificate(ca_pem)
    cert.verify_directly_issued_by(ca)
    assert cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value.get_values_for_type(
        x509.DNSName)[2] == SERVICE_DNS
    usage = {name: c.extensions.get_extension_for_class(x509.KeyUsage).value for name, c in (("ca", ca), ("tls", cert))}
    assert [(u.digital_signature, u.key_cert_sign, u.crl_sign, u.key_encipherment) for u in usage.values()] == [
        (True, True, True, False), (True, False, False, False)]
    # A second run renews the serving certificate under the same CA (the caBundle stays valid).
    again = make_certs(tmp_path / "c").stdout
    assert ": reused CA;" in again and (tmp_path / "c" / "ca.crt").read_bytes() == ca_pem
    bad = subprocess.run([*NUMAGUARD, "webhook", "certs", "--service", "s", "--namespace", "n", "--out",
                          str(tmp_path / "d"), "--patch", str(tmp_path / "c" / "ca.crt")], capture_output=True, text=True)
    assert bad.returncode == 2
    assert bad.stderr.strip().splitlines()[-1].endswith("no ValidatingWebhookConfiguration webhooks to patch")


def test_serve_refuses_unusable_config_and_certificates_in_one_line(tmp_path):
    make_certs(tmp_path / "c")
    (tmp_path / "bad.yaml").write_text("webhook: {mode: loud}\n")
    run = subprocess.run([*NUMAGUARD, "webhook", "serve", "--config", str(tmp_path / "bad.yaml"), "--cert",
                          str(tmp_path / "c" / "tls.crt"), "--key", str(tmp_path / "c" / "tls.key")],
                         capture_output=True, text=True, timeout=60)
    assert run.returncode == 2
    assert run.stderr.strip() == (f"Error: {tmp_path / 'bad.yaml'}: webhook.mode: \"loud\" is not one of "
                                  '"enforce", "warn", "audit"')
    run = subprocess.run([*NUMAGUARD, "webhook", "serve", "--cert", str(tmp_path / "c" / "tls.crt"), "--key",
                          str(tmp_path / "c" / "ca.key")], capture_output=True, text=True, timeout=60)
    assert run.returncode == 2
    assert run.stderr.strip().startswith(f"Error: {tmp_path / 'c' / 'tls.crt'}, {tmp_path / 'c' / 'ca.key'}: "
                                         "not a matching PEM certificate and key")


@pytest.mark.parametrize("taken_flag, other_flag", [("--port", "--probe-port"), ("--probe-port", "--port")])
def test_serve_refuses_a_port_already_in_use_in_one_line(tmp_path, taken_flag, other_flag):
    make_certs(tmp_path / "c")
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        run = subprocess.run([*NUMAGUARD, "webhook", "serve", "--host", "127.0.0.1", taken_flag, str(port),
                              other_flag, str(free_port()), "--cert", str(tmp_path / "c" / "tls.crt"),
                              "--key", str(tmp_path / "c" / "tls.key")], capture_output=True, text=True, timeout=60)
    assert run.returncode == 1
    assert run.stderr.strip() == f"Error: cannot listen on 127.0.0.1:{port}: Address already in use"


def test_metrics_report_every_worker_and_survive_a_dead_worker(tmp_path):
    # Two workers of one review thread each: a stalled body holds no thread (the front reads
    # bodies), and the kernel spreads the 20 reviews' connections over both workers' sockets.
    srv = start_server(tmp_path, "--workers", "2", "--threads", "1", "--body-timeout", "3", "--shutdown-delay", "0")
    try:
        whole = body(review(managed_pod()))
        stalled = _raw_tls(srv)
        stalled.sendall(b"POST /validate HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                        b"Content-Length: %d\r\n\r\n" % len(whole) + whole[:100])
        time.sleep(1.5)                        # let one worker take it and block on the body
        for _ in range(20):
            assert srv.validate(review(managed_pod()))["response"]["allowed"] is True
        assert _read_response(stalled)[0] == 408
        stalled.close()
        log = srv.access_log()
        timeout_pid = next(e["pid"] for e in log if e["status"] == 408)
        served_pids = {e["pid"] for e in log if e["status"] == 200}
        assert len(served_pids | {timeout_pid}) == 2        # both workers did part of the work
        for _ in range(4):                     # whichever worker answers, the totals are the server's
            text = srv.request("GET", "/metrics")[2].decode()
            assert _metric(text, "numaguard_webhook_requests_total",
                           'decision="allow",kind="Pod",operation="CREATE"') == 20
            assert _metric(text, "numaguard_webhook_bad_requests_total", 'reason="body-timeout"') == 1
            assert _metric(text, "numaguard_webhook_findings_total", 'rule="NG110",severity="info"') == 20
            assert _metric(text, "numaguard_webhook_request_duration_seconds_count") == 20
        not_after = x509.load_pem_x509_certificate((srv.certs / "tls.crt").read_bytes()).not_valid_after_utc
        assert _metric(text, "numaguard_webhook_certificate_expiry_timestamp_seconds") == not_after.timestamp()
        # A worker dies; gunicorn replaces it; what it counted is still reported.
        os.kill(served_pids.pop(), signal.SIGKILL)
        time.sleep(2)
        srv.wait_ready()
        text = srv.request("GET", "/metrics")[2].decode()
        assert _metric(text, "numaguard_webhook_requests_total", 'decision="allow",kind="Pod",operation="CREATE"') == 20
    finally:
        assert srv.stop() == 0


def _peer_not_after(srv) -> float:
    conn = srv.connection()
    conn.connect()
    der = conn.sock.getpeercert(binary_form=True)
    conn.close()
    return x509.load_der_x509_certificate(der).not_valid_after_utc.timestamp()


def test_certificate_rotated_while_requests_flow(tmp_path):
    srv = start_server(tmp_path, "--workers", "2", "--threads", "4", "--shutdown-delay", "0",
                       cert_args=("--days", "30"))
    results: list[object] = []
    stop = threading.Event()

    def load(keepalive: bool) -> None:
        conn = srv.connection() if keepalive else None
        while not stop.is_set():
            c = conn or srv.connection()
            try:
                c.request("POST", "/validate", body=body(review(managed_pod())),
                          headers={"Content-Type": "application/json"})
                resp = c.getresponse()
                results.append((resp.status, json.loads(resp.read())["response"]["allowed"]))
            except Exception as e:       # noqa: BLE001  (any failure is what the test counts)
                results.append(repr(e))
            finally:
                if conn is None:
                    c.close()
        if conn:
            conn.close()

    try:
        before = _peer_not_after(srv)
        threads = [threading.Thread(target=load, args=(i % 2 == 0,)) for i in range(4)]
        for t in threads:
            t.start()
        time.sleep(1)
        make_certs(srv.certs, "--days", "90")          # renewed in place, same CA
        time.sleep(1.5)
        after = _peer_not_after(srv)
        # A half-written renewal (a key that does not match) keeps the last good pair in use.
        (srv.certs / "tls.key").write_text("-----BEGIN PRIVATE KEY-----\ngarbage\n-----END PRIVATE KEY-----\n")
        time.sleep(0.5)
        assert _peer_not_after(srv) == after
        stop.set()
        for t in threads:
            t.join(30)
        assert round((after - before) / 86400) == 60
        assert len(results) > 20
        assert set(results) == {(200, True)}
        assert srv.request("GET", "/readyz")[0] == 200
    finally:
        stop.set()
        assert srv.stop() == 0


def test_sigterm_under_load_readiness_first_in_flight_requests_finish(tmp_path):
    delay = 3.0
    srv = start_server(tmp_path, "--workers", "2", "--threads", "4", "--shutdown-delay", str(delay),
                       "--graceful-timeout", "10", "--body-timeout", "10")
    results: list[object] = []
    stop = threading.Event()

    def load() -> None:
        while not stop.is_set():
            try:
                results.append(srv.validate(review(managed_pod()))["response"]["allowed"])
            except Exception as e:       # noqa: BLE001
                results.append(repr(e))

    threads = [threading.Thread(target=load) for _ in range(4)]
    for t in threads:
        t.start()
    time.sleep(1)
    whole = body(review(managed_pod()))
    in_flight = _raw_tls(srv)
    in_flight.sendall(b"POST /validate HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                      b"Content-Length: %d\r\n\r\n" % len(whole) + whole[:200])
    time.sleep(0.3)
    srv.proc.send_signal(signal.SIGTERM)
    sigterm = time.monotonic()
    deadline = sigterm + delay - 0.5
    readyz = None
    while time.monotonic() < deadline:
        readyz = srv.request("GET", "/readyz")
        if readyz[0] == 503:
            break
        time.sleep(0.05)
    assert readyz[0] == 503
    assert json.loads(readyz[2]) == {"status": "not ready", "problems": ["shutting down (SIGTERM received)"]}
    time.sleep(0.5)
    stop.set()                       # the endpoint is gone: the API server sends nothing new
    for t in threads:
        t.join(30)
    time.sleep(max(0.0, sigterm + delay + 0.5 - time.monotonic()))
    # The graceful stop has begun (workers got SIGTERM); the in-flight request still finishes.
    in_flight.sendall(whole[200:])
    status, payload = _read_response(in_flight)
    in_flight.close()
    assert status == 200 and json.loads(payload)["response"]["allowed"] is True
    assert srv.proc.wait(30) == 0
    assert len(results) > 10 and set(results) == {True}
    assert "graceful stop" in srv.stderr.read_text()


def test_readyz_is_false_with_an_expired_certificate(tmp_path):
    srv = start_server(tmp_path, "--shutdown-delay", "0", "--workers", "1", "--threads", "2")
    try:
        # Re-issue an already-expired serving certificate under the same CA, in place.
        from cryptography.hazmat.primitives import serialization
        import datetime as dt

        ca_key = serialization.load_pem_private_key((srv.certs / "ca.key").read_bytes(), None)
        ca = x509.load_pem_x509_certificate((srv.certs / "ca.crt").read_bytes())
        old = x509.load_pem_x509_certificate((srv.certs / "tls.crt").read_bytes())
        key = serialization.load_pem_private_key((srv.certs / "tls.key").read_bytes(), None)
        past = dt.datetime(2020, 1, 1, tzinfo=dt.timezone.utc)
        expired = (x509.CertificateBuilder().subject_name(old.subject).issuer_name(ca.subject)
                   .public_key(key.public_key()).serial_number(x509.random_serial_number())
                   .not_valid_before(past).not_valid_after(past + dt.timedelta(days=1))
                   .add_extension(old.extensions.get_extension_for_class(x509.SubjectAlternativeName).value, False)
                   .sign(ca_key, __import__("cryptography.hazmat.primitives.hashes", fromlist=["SHA256"]).SHA256()))
        (srv.certs / "tls.crt").write_bytes(expired.public_bytes(serialization.Encoding.PEM))
        ctx = ssl.create_default_context(cafile=str(srv.ca))
        ctx.check_hostname, ctx.verify_mode = False, ssl.CERT_NONE   # the kubelet's probe does not verify
        from .conftest import ServiceConnection

        conn = ServiceConnection(srv.probe_port, ctx)
        conn.request("GET", "/readyz")
        resp = conn.getresponse()
        assert resp.status == 503
        assert json.loads(resp.read())["problems"] == ["serving certificate is expired or not yet valid"]
        conn.close()
    finally:
        assert srv.stop() == 0


def test_sigterm_answers_a_review_on_a_kept_alive_connection_then_closes_it(tmp_path):
    """After the graceful stop begins, a kept-alive connection is not cut under a review the
    API server may be sending: it is answered, with Connection: close, then closed."""
    srv = start_server(tmp_path, "--workers", "1", "--threads", "2", "--shutdown-delay", "0")
    whole = body(review(managed_pod()))
    request = (b"POST /validate HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
               b"Content-Length: %d\r\n\r\n" % len(whole) + whole)
    sock = _raw_tls(srv)
    sock.sendall(request)
    head, _ = _read_head_and_body(sock)
    assert head.startswith(b"HTTP/1.1 200 ") and b"Connection:" not in head        # kept alive
    srv.proc.send_signal(signal.SIGTERM)
    time.sleep(0.5)                       # the worker is stopping: within its 2 s linger
    sock.sendall(request)
    head, payload = _read_head_and_body(sock)
    assert head.startswith(b"HTTP/1.1 200 ") and b"\r\nConnection: close\r\n" in head
    assert json.loads(payload)["response"]["allowed"] is True
    sock.settimeout(10)
    assert sock.recv(1) == b""
    sock.close()
    assert srv.proc.wait(30) == 0


def test_sigterm_closes_an_idle_kept_alive_connection_after_the_stop_linger(tmp_path):
    """A kept-alive connection idle when SIGTERM arrives is closed STOP_LINGER_SECONDS after
    the graceful stop begins: not at once (a review may be on its way), not at the idle
    timeout (60 s here) nor at the graceful timeout (30 s). Nothing is sent after the signal,
    so the linger itself is what is measured."""
    from numaguard.webhook.front import STOP_LINGER_SECONDS

    srv = start_server(tmp_path, "--workers", "1", "--threads", "2", "--shutdown-delay", "0",
                       "--idle-timeout", "60", "--graceful-timeout", "30")
    whole = body(review(managed_pod()))
    sock = _raw_tls(srv)
    sock.sendall(b"POST /validate HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                 b"Content-Length: %d\r\n\r\n" % len(whole) + whole)
    head, _ = _read_head_and_body(sock)
    assert head.startswith(b"HTTP/1.1 200 ") and b"Connection:" not in head        # kept alive
    sock.settimeout(60)
    signalled = time.monotonic()
    srv.proc.send_signal(signal.SIGTERM)
    assert sock.recv(1) == b""               # closed by the server (TLS close_notify, then FIN)
    lingered = time.monotonic() - signalled
    sock.close()
    assert srv.proc.wait(30) == 0
    # the worker starts its stop a moment after the signal (the arbiter passes it on)
    assert STOP_LINGER_SECONDS - 0.1 <= lingered <= STOP_LINGER_SECONDS + 5, lingered
