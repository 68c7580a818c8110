"""The Prometheus HTTP API client's failures, played by a local server answering as Prometheus
does (web/api/v1/api.go: `{"status": "error", "errorType": ..., "error": ...}` with 400
bad_data, 422 execution, 503 timeout) and as proxies in front of it do (a bare 502, an HTML
page, a connection that never answers): each is one line, retried only where another try can
help, and through the command line it is inconclusive (exit 3) or, for a query Prometheus
rejects, unusable input (exit 2). Never a traceback."""
from __future__ import annotations

import json
import socket
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit

import pytest
from kubernetes.utils.retry import Backoff

from conftest import run_cli
from numaguard.lint.cluster.prometheus import Prometheus, PrometheusUnavailable, QueryRejected

FAST = Backoff(steps=3, duration=0.01, factor=1.0, jitter=0.0)
MATRIX = {"status": "success", "data": {"resultType": "matrix", "result": [
    {"metric": {"pod": "a"}, "values": [[100, "1.5"], [101, "NaN"], [102, "+Inf"]]}]}}


class Scripted:
    """A server that answers each request with the next (status, body, headers) of `answers`
    (the last one repeats), recording the requests."""

    def __init__(self, answers: list) -> None:
        self.answers, self.requests = list(answers), []
        scripted = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self):
                scripted.requests.append((self.path, dict(self.headers)))
                status, body, headers = scripted.answers.pop(0) if len(scripted.answers) > 1 else scripted.answers[0]
                raw = body if isinstance(body, bytes) else json.dumps(body).encode()
                self.send_response(status)
                for k, v in headers.items():
                    self.send_header(k, v)
                self.send_header("Content-Length", str(len(raw)))
                self.end_headers()
                self.wfile.write(raw)

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.server.server_port}"

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def scripted():
    servers = []

    def make(*answers):
        servers.append(Scripted(list(answers)))
        return servers[-1]

    yield make
    for s in servers:
        s.close()


def test_a_range_query_reads_the_matrix_and_sends_the_token(scripted):
    server = scripted((200, {**MATRIX, "warnings": ["results truncated"]}, {}))
    series, warnings = Prometheus(server.url + "/", token="s3cret", backoff=FAST).query_range("up", 100, 102, 1)
    assert [s.labels for s in series] == [(("pod", "a"),)]
    assert series[0].points[0] == (100.0, 1.5) and str(series[0].points[1][1]) == "nan"
    assert series[0].points[2] == (102.0, float("inf")) and warnings == ["results truncated"]
    path, headers = server.requests[0]
    assert urlsplit(path).path == "/api/v1/query_range"
    assert parse_qs(urlsplit(path).query) == {"query": ["up"], "start": ["100.000"], "end": ["102.000"], "step": ["1"]}
    assert headers["Authorization"] == "Bearer s3cret"


def test_a_5xx_is_tried_again_and_a_timed_out_query_is_not(scripted):
    server = scripted((502, b"<html>Bad Gateway</html>", {}), (503, b"unavailable", {"Retry-After": "0"}), (200, MATRIX, {}))
    assert len(Prometheus(server.url, backoff=FAST).query_range("up", 100, 102, 1)[0]) == 1
    assert len(server.requests) == 3
    timed_out = scripted((503, {"status": "error", "errorType": "timeout", "error": "query timed out in expression evaluation"}, {}))
    with pytest.raises(PrometheusUnavailable) as caught:
        Prometheus(timed_out.url, backoff=FAST).query_range("up", 100, 102, 1)
    assert str(caught.value) == f"{timed_out.url}: HTTP 503: timeout: query timed out in expression evaluation"
    assert len(timed_out.requests) == 1
    down = scripted((500, b"boom\nsecond line", {}))
    with pytest.raises(PrometheusUnavailable, match=r"HTTP 500: boom$"):
        Prometheus(down.url, backoff=FAST).query_range("up", 100, 102, 1)
    assert len(down.requests) == 3


@pytest.mark.parametrize("status, error_type", [(400, "bad_data"), (422, "execution")])
def test_a_query_prometheus_refuses_is_rejected(scripted, status, error_type):
    server = scripted((status, {"status": "error", "errorType": error_type, "error": "1:5: parse error: unexpected"}, {}))
    with pytest.raises(QueryRejected, match="^1:5: parse error: unexpected$"):
        Prometheus(server.url, backoff=FAST).query_range("up(", 100, 102, 1)
    assert len(server.requests) == 1


@pytest.mark.parametrize("answer, message", [
    ((200, b"<html>Grafana</html>", {}), "the answer is not Prometheus's API (no JSON with status success): "
                                          "is the URL the Prometheus server's?"),
    ((200, {"status": "success", "data": {"resultType": "vector", "result": []}}, {}), "the answer to a range query is not a matrix"),
    ((200, {"status": "success", "data": {"resultType": "matrix", "result": [{"metric": {}, "values": [[1]]}]}}, {}),
     "a point of the answer is not [time, \"value\"]: [1]"),
    ((404, b"404 page not found", {}), "HTTP 404: 404 page not found"),
])
def test_an_answer_that_is_not_prometheus_s_is_one_line(scripted, answer, message):
    server = scripted(answer)
    with pytest.raises(PrometheusUnavailable) as caught:
        Prometheus(server.url, backoff=FAST).query_range("up", 100, 102, 1)
    assert str(caught.value).endswith(message)


def test_too_many_points_are_refused_before_asking():
    with pytest.raises(QueryRejected, match="more than Prometheus's 11000 points per series: take a longer --step"):
        Prometheus("http://127.0.0.1:1").query_range("up", 0, 86400, 1)


def test_a_server_that_never_answers_is_inconclusive_after_the_timeout():
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(64)                     # accepts connections, never answers
    try:
        port = listener.getsockname()[1]
        run = run_cli("compare", "--prometheus", f"http://127.0.0.1:{port}", "--canary", 'pod="a"', "--control", 'pod="b"',
                      "--window", "5m", "--request-timeout", "1s", "--no-default-metrics",
                      "--metric", "x:up{ {{selector}} }:lower")
    finally:
        listener.close()
    assert run.returncode == 3 and "Traceback" not in run.stderr
    assert run.stderr.splitlines()[0] == (f"numaguard: not read: http://127.0.0.1:{port}: no answer within 1 s: "
                                          "x (canary), x (control)")


def test_prometheus_warnings_are_notes_in_every_format(scripted, tmp_path):
    server = scripted((200, {**MATRIX, "warnings": ["PromQL info: metric might not be a counter"]}, {}))
    run = run_cli("compare", "--prometheus", server.url, "--canary", 'pod="a"', "--control", 'pod="b"', "--end", "102",
                  "--window", "2s", "--step", "1s", "--no-default-metrics", "--metric", "x:up{ {{selector}} }:lower",
                  "--format", "json", "--output", str(tmp_path / "r.json"), "--format", "text")
    report = json.loads((tmp_path / "r.json").read_text())
    assert report["notes"][0] == "Prometheus warned: PromQL info: metric might not be a counter"
    assert "  - Prometheus warned: PromQL info: metric might not be a counter" in run.stdout
    # both groups read the same one series: identical samples, the same
    assert report["metrics"][0]["classification"] == "same" and run.returncode == 0
