"""The API server's part, played by the tests: they run the real `numaguard webhook serve`
(gunicorn, TLS, certificates from `numaguard webhook certs`), trust only the generated CA and
verify the server under the Service DNS name, as the API server does with the caBundle."""
from __future__ import annotations

import http.client
import json
import os
import signal
import socket
import ssl
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

from .reviews import NAMESPACE, POOL_CONFIG, SERVICE, SERVICE_DNS

NUMAGUARD = [sys.executable, "-m", "numaguard"]
CONFIG = """\
apiVersion: numaguard.io/v1alpha1
kind: Config
""" + POOL_CONFIG + """\
node: builtin:dual-socket-ht
webhook:
  mode: enforce
  namespaces: {team-warn: warn, team-audit: audit}
"""


def make_certs(out: Path, *extra: str) -> subprocess.CompletedProcess:
    return subprocess.run([*NUMAGUARD, "webhook", "certs", "--service", SERVICE, "--namespace", NAMESPACE,
                           "--out", str(out), *extra], capture_output=True, text=True, check=True)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class ServiceConnection(http.client.HTTPSConnection):
    """Connects to 127.0.0.1 but verifies the certificate for the Service's DNS name."""

    def __init__(self, port: int, context: ssl.SSLContext, timeout: float = 30) -> None:
        super().__init__(SERVICE_DNS, port, context=context, timeout=timeout)

    def connect(self) -> None:
        raw = socket.create_connection(("127.0.0.1", self.port), self.timeout)
        # As http.client's own connect() and Go's net package (the API server's client) do:
        # without it, the body's segment waits for the ACK of the headers' (Nagle), which the
        # server delays by up to 40 ms.
        raw.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.sock = self._context.wrap_socket(raw, server_hostname=SERVICE_DNS)


PROBE_PATHS = ("/healthz", "/readyz", "/metrics")


@dataclass
class Server:
    proc: subprocess.Popen
    port: int
    ca: Path
    certs: Path
    stdout: Path
    stderr: Path
    probe_port: int = 0
    client: str | None = None          # the client certificate presented (certs/NAME.crt), if any

    def context(self) -> ssl.SSLContext:
        ctx = ssl.create_default_context(cafile=str(self.ca))
        ctx.minimum_version = ssl.TLSVersion.TLSv1_2
        if self.client:
            ctx.load_cert_chain(self.certs / f"{self.client}.crt", self.certs / f"{self.client}.key")
        return ctx

    def port_for(self, path: str) -> int:
        """Probes and metrics are on the probe port, everything else on the review port."""
        return self.probe_port if path in PROBE_PATHS else self.port

    def connection(self, timeout: float = 30, port: int | None = None) -> ServiceConnection:
        return ServiceConnection(port or self.port, self.context(), timeout)

    def request(self, method: str, path: str, data: bytes | None = None,
                content_type: str = "application/json", headers: dict | None = None, port: int | None = None):
        conn = self.connection(port=port or self.port_for(path))
        try:
            hdrs = {"Content-Type": content_type, **(headers or {})} if data is not None else dict(headers or {})
            conn.request(method, path, body=data, headers=hdrs)
            resp = conn.getresponse()
            return resp.status, resp.getheader("Content-Type"), resp.read()
        finally:
            conn.close()

    def validate(self, payload: dict) -> dict:
        status, ctype, raw = self.request("POST", "/validate", json.dumps(payload).encode())
        assert status == 200, raw
        assert ctype == "application/json"
        return json.loads(raw)

    def access_log(self) -> list[dict]:
        return [json.loads(line) for line in self.stdout.read_text().splitlines() if line.startswith("{")]

    def wait_ready(self, timeout: float = 60) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise AssertionError(f"server exited {self.proc.returncode}: {self.stderr.read_text()[-2000:]}")
            try:
                if self.request("GET", "/readyz")[0] == 200:
                    return
            except OSError:
                pass
            time.sleep(0.2)
        raise AssertionError("server not ready: " + self.stderr.read_text()[-2000:])

    def stop(self) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                return self.proc.wait(60)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        return self.proc.returncode


def start_server(tmp: Path, *args: str, config: str | None = CONFIG, cert_args: tuple = (),
                 client: str | None = None, env: dict | None = None) -> Server:
    certs = tmp / "certs"
    if not (certs / "tls.crt").exists():
        make_certs(certs, *cert_args)
    cmd = [*NUMAGUARD, "webhook", "serve", "--cert", str(certs / "tls.crt"), "--key", str(certs / "tls.key"),
           "--host", "127.0.0.1"]
    if config is not None:
        (tmp / "config.yaml").write_text(config)
        cmd += ["--config", str(tmp / "config.yaml")]
    port, probe_port = free_port(), free_port()
    cmd += ["--port", str(port), "--probe-port", str(probe_port), *args]
    stdout, stderr = tmp / "access.log", tmp / "server.log"
    proc = subprocess.Popen(cmd, stdout=stdout.open("w"), stderr=stderr.open("w"),
                            env={**os.environ, "PYTHONUNBUFFERED": "1", **(env or {})})
    server = Server(proc, port, certs / "ca.crt", certs, stdout, stderr, probe_port, client)
    try:
        server.wait_ready()
    except AssertionError:
        server.stop()
        raise
    return server


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    """One server for the module: enforce by default, team-warn in warn, team-audit in audit,
    NUMA fit against builtin:dual-socket-ht; 2 workers x 4 threads; bodies time out after 1 s."""
    srv = start_server(tmp_path_factory.mktemp("webhook"), "--workers", "2", "--threads", "4",
                       "--shutdown-delay", "0", "--body-timeout", "1")
    yield srv
    assert srv.stop() == 0
