"""Every malformed request gets a JSON reason and the right status, never a 500, a traceback
or a hang, and the worker serves the next request."""
from __future__ import annotations

import json
import socket
import time

import pytest

from .reviews import SERVICE_DNS, body, managed_pod, review


def _good(server) -> None:
    """The server still answers a real review after the bad one."""
    assert server.validate(review(managed_pod()))["response"]["allowed"] is True


@pytest.mark.parametrize("data, reason, message", [
    (b"{not json", "not-json", "body is not JSON: Expecting property name enclosed in double quotes: line 1 column 2 (char 1)"),
    (b"[1, 2]", "not-admission-review", "body is a JSON array, not an AdmissionReview object"),
    (json.dumps({"apiVersion": "v1", "kind": "Pod"}).encode(), "not-admission-review",
     "kind is 'Pod', expected 'AdmissionReview'"),
    (json.dumps({"apiVersion": "admission.k8s.io/v1beta1", "kind": "AdmissionReview", "request": {"uid": "x"}}).encode(),
     "wrong-api-version", "apiVersion 'admission.k8s.io/v1beta1' is not supported; send 'admission.k8s.io/v1' "
     "(admissionReviewVersions: [v1])"),
    (json.dumps({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview"}).encode(), "no-request",
     "request is missing or not an object"),
    (body({**review(managed_pod()), "request": {**review(managed_pod())["request"], "uid": None}}), "no-uid",
     "request.uid is missing or not a non-empty string"),
    (body({**review(managed_pod()), "request": {**review(managed_pod())["request"], "uid": ""}}), "no-uid",
     "request.uid is missing or not a non-empty string"),
    (body({**review(managed_pod()), "request": {**review(managed_pod())["request"], "kind": "Pod"}}), "bad-kind",
     "request.kind must be an object with string group, version and kind"),
    (body({**review(managed_pod()), "request": {**review(managed_pod())["request"], "operation": "PATCH"}}),
     "bad-operation", "request.operation 'PATCH' is not CREATE, UPDATE, DELETE or CONNECT"),
    (body({**review(managed_pod()), "request": {**review(managed_pod())["request"], "dryRun": "yes"}}),
     "bad-field", "request.dryRun must be a boolean"),
    (b"", "not-json", "body is not JSON: Expecting value: line 1 column 1 (char 0)"),
])
def test_malformed_reviews_get_400_with_a_json_reason(server, data, reason, message):
    status, ctype, raw = server.request("POST", "/validate", data)
    assert (status, ctype) == (400, "application/json")
    assert json.loads(raw) == {"error": reason, "message": message}
    _good(server)


def test_wrong_content_type_is_415(server):
    status, _, raw = server.request("POST", "/validate", body(review(managed_pod())), content_type="text/plain")
    assert status == 415
    assert json.loads(raw) == {"error": "unsupported-media-type",
                               "message": "Content-Type 'text/plain' is not application/json"}
    _good(server)


def test_other_methods_and_paths_are_json_errors(server):
    status, ctype, raw = server.request("GET", "/validate")
    assert (status, ctype, json.loads(raw)["error"]) == (405, "application/json", "method-not-allowed")
    status, ctype, raw = server.request("GET", "/nope")
    assert (status, ctype, json.loads(raw)["error"]) == (404, "application/json", "not-found")


def _raw_tls(server) -> socket.socket:
    raw = socket.create_connection(("127.0.0.1", server.port), 30)
    return server.context().wrap_socket(raw, server_hostname=SERVICE_DNS)


def _read_response(sock: socket.socket) -> tuple[int, bytes]:
    head, payload = _read_head_and_body(sock)
    return int(head.split()[1]), payload


def _read_head_and_body(sock: socket.socket) -> tuple[bytes, bytes]:
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = sock.recv(65536)
        if not chunk:
            break
        data += chunk
    head, _, rest = data.partition(b"\r\n\r\n")
    length = int(next(line.split(b":")[1] for line in head.split(b"\r\n") if line.lower().startswith(b"content-length")))
    while len(rest) < length:
        rest += sock.recv(65536)
    return head + b"\r\n", rest[:length]


def test_a_body_over_5_mib_is_413_before_it_is_read(server):
    sock = _raw_tls(server)
    size = 6 * 1024 * 1024
    sock.sendall(b"POST /validate HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\n"
                 b"Content-Length: %d\r\n\r\n" % (SERVICE_DNS.encode(), size) + b"{" + b" " * 1023)
    # Only 1 KiB of 6 MiB was sent: the answer comes anyway, says the connection ends, and it
    # does end cleanly: the response, then EOF (TLS close_notify and FIN, no reset).
    head, payload = _read_head_and_body(sock)
    sock.settimeout(10)
    assert sock.recv(1) == b""
    sock.close()
    assert head.split(b"\r\n")[0] == b"HTTP/1.1 413 REQUEST ENTITY TOO LARGE"
    assert b"\r\nConnection: close\r\n" in head
    assert json.loads(payload) == {"error": "body-too-large",
                                   "message": "body of 6291456 bytes is over the 5242880-byte limit"}
    _good(server)


def test_a_body_of_exactly_5_mib_is_judged(server):
    whole = body(review(managed_pod()))
    limit = 5 * 1024 * 1024
    padded = whole + b" " * (limit - len(whole))           # JSON allows the trailing whitespace
    status, _, raw = server.request("POST", "/validate", padded)
    assert status == 200 and json.loads(raw)["response"]["allowed"] is True
    status, _, raw = server.request("POST", "/validate", padded + b" ")
    assert (status, json.loads(raw)["error"]) == (413, "body-too-large")


def test_half_a_body_then_a_stall_is_dropped_and_the_worker_keeps_serving(server):
    whole = body(review(managed_pod()))
    sock = _raw_tls(server)
    sock.sendall(b"POST /validate HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\n"
                 b"Content-Length: %d\r\n\r\n" % (SERVICE_DNS.encode(), len(whole)) + whole[: len(whole) // 2])
    started = time.monotonic()
    _good(server)                      # served while the stalled request waits
    status, payload = _read_response(sock)
    waited = time.monotonic() - started
    sock.close()
    assert status == 408
    assert json.loads(payload) == {"error": "body-timeout", "message": "the body did not arrive within 1 seconds"}
    assert waited < 30
    _good(server)


def test_no_response_ever_carries_a_traceback(server):
    server_log = server.stdout.read_text()
    assert "Traceback" not in server_log
    assert all(e["status"] != 500 for e in server.access_log())
