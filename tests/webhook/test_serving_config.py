"""The serving keys of the config file's `webhook:` section and the `serve` flags that override
them, and the front's own answers to what HTTP/1.1 cannot parse."""
from __future__ import annotations

import json
import subprocess

import pytest

from numaguard.lint.config import ConfigError, config_from_dict
from numaguard.webhook.front import Timeouts
from numaguard.webhook.server import ServeOptions, resolve_options
from numaguard.webhook.settings import SettingsError

from .conftest import CONFIG, NUMAGUARD, make_certs, start_server
from .reviews import managed_pod, review
from .test_bad_input import _raw_tls, _read_head_and_body

SERVING = CONFIG + """\
  clientCA: certs/ca.crt
  tlsMinVersion: 1.3
  timeouts: {handshake: 2.5, header: 4, idle: 30}
"""


def test_config_keys_then_flags_then_defaults(tmp_path):
    (tmp_path / "config.yaml").write_text(SERVING)
    base = {"cert": "c", "key": "k", "config": str(tmp_path / "config.yaml")}
    options = resolve_options(dict(base))
    assert (options.client_ca, options.tls_min_version) == (str(tmp_path / "certs" / "ca.crt"), "1.3")
    assert options.timeouts == Timeouts(handshake=2.5, header=4.0, body=5.0, idle=30.0, write=10.0)
    options = resolve_options({**base, "header_timeout": 1.5, "write_timeout": 3.0, "tls_min_version": "1.2",
                               "client_ca": "/other/ca.crt"})
    assert options.timeouts == Timeouts(handshake=2.5, header=1.5, body=5.0, idle=30.0, write=3.0)
    assert (options.client_ca, options.tls_min_version) == ("/other/ca.crt", "1.2")
    assert resolve_options({"cert": "c", "key": "k"}) == ServeOptions(cert="c", key="k")


@pytest.mark.parametrize("webhook, message", [
    ({"timeouts": {"header": "soon"}}, "webhook.timeouts.header: 'soon' does not match"),
    ({"timeouts": {"nap": 3}}, "webhook.timeouts: Additional properties are not allowed ('nap' was unexpected)"),
    ({"tlsMinVersion": "1.1"}, 'webhook.tlsMinVersion: "1.1" is not one of "1.2", "1.3"'),
    ({"clientCA": ""}, "webhook.clientCA: '' should be non-empty"),
])
def test_bad_serving_keys_name_the_key(webhook, message):
    with pytest.raises(ConfigError) as e:
        config_from_dict({"webhook": webhook})
    assert str(e.value).startswith(message)


def test_a_zero_timeout_in_the_config_is_refused_in_one_line(tmp_path):
    (tmp_path / "config.yaml").write_text("webhook: {timeouts: {body: 0}}\n")
    with pytest.raises(SettingsError) as e:
        resolve_options({"cert": "c", "key": "k", "config": str(tmp_path / "config.yaml")})
    assert str(e.value) == f"{tmp_path / 'config.yaml'}: webhook.timeouts.body: must be more than 0 seconds"


def test_the_help_shows_the_defaults_the_server_uses():
    run = subprocess.run([*NUMAGUARD, "webhook", "serve", "--help"], capture_output=True, text=True, check=True)
    text = " ".join(run.stdout.split())
    for phase, seconds in vars(Timeouts()).items():
        assert f"(config webhook.timeouts.{phase}; default {seconds:g})" in text
    assert "--probe-port INTEGER RANGE Probe port: /healthz, /readyz, /metrics (TLS, own threads). [default: 8444;" in text


def test_a_missing_client_ca_file_is_one_line_exit_2(tmp_path):
    make_certs(tmp_path / "c")
    run = subprocess.run([*NUMAGUARD, "webhook", "serve", "--cert", str(tmp_path / "c" / "tls.crt"), "--key",
                          str(tmp_path / "c" / "tls.key"), "--client-ca", str(tmp_path / "nope.crt")],
                         capture_output=True, text=True, timeout=60)
    assert run.returncode == 2
    assert run.stderr.strip() == (f"Error: {tmp_path / 'c' / 'tls.crt'} or {tmp_path / 'c' / 'tls.key'} or "
                                  f"{tmp_path / 'nope.crt'}: cannot be read")


def test_the_config_files_timeouts_are_served(tmp_path):
    srv = start_server(tmp_path, "--workers", "1", "--threads", "2", "--shutdown-delay", "0",
                       config=CONFIG + "  timeouts: {body: 1.5}\n")
    try:
        assert "timeouts: handshake 5s, header 5s, body 1.5s, idle 120s, write 10s" in srv.stderr.read_text()
        sock = _raw_tls(srv)
        sock.sendall(b"POST /validate HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 10\r\n\r\n{")
        head, payload = _read_head_and_body(sock)
        assert head.startswith(b"HTTP/1.1 408 ")
        assert json.loads(payload)["message"] == "the body did not arrive within 1.5 seconds"
        sock.close()
    finally:
        assert srv.stop() == 0


@pytest.mark.parametrize("request_head, status, reason", [
    (b"GARBAGE\r\n\r\n", 400, b"Bad Request"),
    (b"GET / HTTP/1.1\r\nHost: x\r\nX-Big: " + b"a" * 200_000 + b"\r\n\r\n", 431, b"Request Header Fields Too Large"),
])
def test_a_head_http_cannot_parse_is_answered_in_json_and_closed(server, request_head, status, reason):
    sock = _raw_tls(server)
    sock.sendall(request_head)
    head, payload = _read_head_and_body(sock)
    assert head.split(b"\r\n")[0] == b"HTTP/1.1 %d %s" % (status, reason)
    assert b"\r\nConnection: close\r\n" in head
    assert json.loads(payload)["error"] == "bad-request"
    sock.settimeout(10)
    assert sock.recv(1) == b""
    sock.close()
    assert server.validate(review(managed_pod()))["response"]["allowed"] is True     # still serving


def test_numbers_given_as_numbers_read_as_written():
    """A dict given to config_from_dict directly (or a YAML 1.1 parser's floats) reads like the file."""
    config = config_from_dict({"webhook": {"tlsMinVersion": 1.3, "timeouts": {"body": 2, "idle": 30.5}}})
    assert config.webhook_serving == {"tlsMinVersion": "1.3", "timeouts": {"body": "2", "idle": "30.5"}}


@pytest.mark.parametrize("written, budget", [("8Mi", 8 * 2**20), ("512Ki", 512 * 2**10), ("1Gi", 2**30),
                                             ("3000000", 3_000_000)])
def test_webhook_cache_bytes_is_the_budget_the_real_server_caches_within(tmp_path, written, budget):
    """`webhook.cacheBytes` read by `serve` itself, in binary units (8Mi is 8 x 2^20 bytes),
    as each worker's findings cache budget: the metric adds up the live workers'."""
    import time

    srv = start_server(tmp_path, "--workers", "2", "--threads", "2", "--shutdown-delay", "0",
                       config=CONFIG + f"  cacheBytes: {written}\n")
    values = []
    try:
        # /readyz answers once one worker is up; the second may still be starting (a stop
        # during a worker's boot is a gunicorn boot failure): wait until both report
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and (not values or values[-1] < 2 * budget):
            metrics = srv.request("GET", "/metrics")[2].decode()
            values += [float(line.split()[1]) for line in metrics.splitlines()
                       if line.startswith("numaguard_webhook_cache_budget_bytes ")]
            time.sleep(0.2)
    finally:
        assert srv.stop() == 0
    assert values[-1] == 2 * budget
    assert set(values) <= {budget, 2 * budget}       # one worker's budget, then both
