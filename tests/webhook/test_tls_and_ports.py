"""TLS policy, client certificates and the probe port, over real TLS against
`numaguard webhook serve` (issue 14: "Authentication and TLS", probes on their own port)."""
from __future__ import annotations

import json
import re
import socket
import ssl
import subprocess
import threading
import time
from pathlib import Path

import pytest
import yaml

from .conftest import NUMAGUARD, ServiceConnection, make_certs, start_server
from .reviews import SERVICE_DNS, body, managed_pod, review

ROOT = Path(__file__).resolve().parents[2]


def _handshake(port: int, context: ssl.SSLContext) -> str:
    """The negotiated version and suite, or the reason the server refused."""
    try:
        with socket.create_connection(("127.0.0.1", port), 10) as raw:
            with context.wrap_socket(raw, server_hostname=SERVICE_DNS) as tls:
                return f"{tls.version()} {tls.cipher()[0]}"
    except ssl.SSLError as e:
        return f"refused: {e.reason}"


def _client(ca: Path, *, version: ssl.TLSVersion | None = None, ciphers: str | None = None) -> ssl.SSLContext:
    ctx = ssl.create_default_context(cafile=str(ca))
    if version:
        ctx.minimum_version = ctx.maximum_version = version
    if ciphers:
        ctx.set_ciphers(ciphers)
    return ctx


def _dropped(srv, role: str, reason: str) -> float:
    """numaguard_webhook_connections_dropped_total{port=role, reason}: the server's own word on
    why it refused a handshake (asyncio sends no alert, so the client only sees the close)."""
    metrics = srv.request("GET", "/metrics")[2].decode()
    line = f'numaguard_webhook_connections_dropped_total{{port="{role}",reason="{reason}"}} '
    return next((float(m.split()[-1]) for m in metrics.splitlines() if m.startswith(line)), 0.0)


REFUSED = "refused: UNEXPECTED_EOF_WHILE_READING"


@pytest.mark.filterwarnings("ignore:ssl.TLSVersion.TLSv1_1 is deprecated:DeprecationWarning")
def test_tls_1_2_only_with_aead_suites_and_1_3(server):
    for role, port in (("review", server.port), ("probe", server.probe_port)):
        assert _handshake(port, _client(server.ca, version=ssl.TLSVersion.TLSv1_3)) == "TLSv1.3 TLS_AES_256_GCM_SHA384"
        assert _handshake(port, _client(server.ca, version=ssl.TLSVersion.TLSv1_2)) == \
            "TLSv1.2 ECDHE-ECDSA-AES256-GCM-SHA384"
        assert _handshake(port, _client(server.ca, version=ssl.TLSVersion.TLSv1_2,
                                        ciphers="ECDHE-ECDSA-CHACHA20-POLY1305")) == "TLSv1.2 ECDHE-ECDSA-CHACHA20-POLY1305"
        # A client that offers only CBC suites (the AES-SHA256/SHA384 ones issue 14 found accepted).
        before = _dropped(server, role, "tls-no-shared-cipher")
        cbc = "ECDHE-ECDSA-AES128-SHA256:ECDHE-ECDSA-AES256-SHA384:ECDHE-ECDSA-AES128-SHA:ECDHE-ECDSA-AES256-SHA"
        assert _handshake(port, _client(server.ca, version=ssl.TLSVersion.TLSv1_2, ciphers=cbc)) == REFUSED
        assert _dropped(server, role, "tls-no-shared-cipher") == before + 1
        # TLS 1.1 (the client has to lower its own security level to offer it at all).
        before = _dropped(server, role, "tls-unsupported-protocol")
        old = _client(server.ca, version=ssl.TLSVersion.TLSv1_1, ciphers="DEFAULT:@SECLEVEL=0")
        assert _handshake(port, old) == REFUSED
        assert _dropped(server, role, "tls-unsupported-protocol") == before + 1
        # Only HTTP/1.1 is offered to a client that asks for h2 first.
        ctx = _client(server.ca)
        ctx.set_alpn_protocols(["h2", "http/1.1"])
        with socket.create_connection(("127.0.0.1", port), 10) as raw, \
                ctx.wrap_socket(raw, server_hostname=SERVICE_DNS) as tls:
            assert tls.selected_alpn_protocol() == "http/1.1"


def test_tls_min_version_1_3_refuses_a_tls_1_2_client(tmp_path):
    srv = start_server(tmp_path, "--workers", "1", "--threads", "2", "--shutdown-delay", "0", "--tls-min-version", "1.3")
    try:
        assert _handshake(srv.port, _client(srv.ca, version=ssl.TLSVersion.TLSv1_2)) == REFUSED
        assert _dropped(srv, "review", "tls-unsupported-protocol") == 1
        assert _handshake(srv.port, _client(srv.ca)) == "TLSv1.3 TLS_AES_256_GCM_SHA384"
        assert srv.validate(review(managed_pod()))["response"]["allowed"] is True
        assert "TLS 1.3+ (AEAD suites only)" in srv.stderr.read_text()
    finally:
        assert srv.stop() == 0


def _readme_yaml_after(heading_text: str) -> list[dict]:
    """The YAML blocks of deploy/README.md's client-certificate example, as an operator copies them."""
    readme = (ROOT / "deploy" / "README.md").read_text()
    start = readme.index(heading_text)
    blocks = re.findall(r"```yaml\n(.*?)```", readme[start:start + 6000], re.S)
    return [yaml.safe_load(b) for b in blocks[:2]]


def test_client_ca_requires_the_api_servers_certificate_from_readmes_kubeconfig(tmp_path):
    certs = tmp_path / "certs"
    make_certs(certs, "--client", "apiserver", "--client", "prometheus")
    make_certs(tmp_path / "other", "--client", "apiserver")          # another CA, same client name
    admission, kubeconfig = _readme_yaml_after("requires a client certificate on the review port")
    # The AdmissionConfiguration deploy/README.md shows: the webhook plugin reads this kubeconfig.
    assert admission["apiVersion"] == "apiserver.config.k8s.io/v1" and admission["kind"] == "AdmissionConfiguration"
    plugin = admission["plugins"][0]
    assert plugin["name"] == "ValidatingAdmissionWebhook"
    assert (plugin["configuration"]["apiVersion"], plugin["configuration"]["kind"]) == (
        "apiserver.config.k8s.io/v1", "WebhookAdmissionConfiguration")
    # Its user is the Service's DNS name (port 443), with the files `certs --client apiserver` writes.
    user = next(u for u in kubeconfig["users"] if u["name"] == SERVICE_DNS)["user"]
    assert plugin["configuration"]["kubeConfigFile"].endswith(".yaml")
    cert_file, key_file = (certs / Path(user["client-certificate"]).name, certs / Path(user["client-key"]).name)
    assert (cert_file.name, key_file.name) == ("apiserver.crt", "apiserver.key")

    srv = start_server(tmp_path, "--workers", "1", "--threads", "2", "--shutdown-delay", "0",
                       "--client-ca", str(certs / "ca.crt"))
    try:
        api_server = ssl.create_default_context(cafile=str(srv.ca))
        api_server.load_cert_chain(cert_file, key_file)
        conn = ServiceConnection(srv.port, api_server)
        conn.request("POST", "/validate", body=body(review(managed_pod())), headers={"Content-Type": "application/json"})
        response = conn.getresponse()
        assert response.status == 200 and json.loads(response.read())["response"]["allowed"] is True
        conn.close()
        # No client certificate, or one from another CA: no review is read at all.
        stranger = ssl.create_default_context(cafile=str(srv.ca))
        impostor = ssl.create_default_context(cafile=str(srv.ca))
        impostor.load_cert_chain(tmp_path / "other" / "apiserver.crt", tmp_path / "other" / "apiserver.key")
        for ctx in (stranger, impostor):
            with pytest.raises((ssl.SSLError, ConnectionError)):
                conn = ServiceConnection(srv.port, ctx)
                conn.request("POST", "/validate", body=body(review(managed_pod())),
                             headers={"Content-Type": "application/json"})
                conn.getresponse()
            conn.close()
        # The probe port: the kubelet (no certificate) gets /healthz and /readyz; /metrics wants
        # Prometheus' certificate from the same CA.
        for path, status in (("/healthz", 200), ("/readyz", 200), ("/metrics", 403)):
            conn = ServiceConnection(srv.probe_port, stranger)
            conn.request("GET", path)
            response = conn.getresponse()
            assert (path, response.status) == (path, status)
            if status == 403:
                assert json.loads(response.read()) == {
                    "error": "forbidden", "message": "/metrics needs a client certificate signed by the --client-ca"}
            conn.close()
        prometheus = ssl.create_default_context(cafile=str(srv.ca))
        prometheus.load_cert_chain(certs / "prometheus.crt", certs / "prometheus.key")
        conn = ServiceConnection(srv.probe_port, prometheus)
        conn.request("GET", "/metrics")
        response = conn.getresponse()
        assert response.status == 200 and b"numaguard_webhook_requests_total" in response.read()
        conn.close()
        assert f"client certificate required, signed by {certs / 'ca.crt'}" in srv.stderr.read_text()
    finally:
        assert srv.stop() == 0


def test_certs_client_names_are_file_names(tmp_path):
    run = subprocess.run([*NUMAGUARD, "webhook", "certs", "--service", "s", "--namespace", "n", "--out",
                          str(tmp_path / "c"), "--client", "../etc"], capture_output=True, text=True)
    assert run.returncode == 2
    assert run.stderr.strip() == ("Error: --client '../etc': a client name is letters, digits, '.', '_', '-' "
                                  "(it names the files NAME.crt and NAME.key), and not 'ca' or 'tls'")


def test_each_port_serves_only_its_own_paths(server):
    status, _, raw = server.request("GET", "/readyz", port=server.port)
    assert (status, json.loads(raw)) == (404, {"error": "not-found", "message": "/readyz is served on the probe port"})
    status, _, raw = server.request("POST", "/validate", body(review(managed_pod())), port=server.probe_port)
    assert (status, json.loads(raw)) == (404, {"error": "not-found", "message": "/validate is served on the review port"})


def test_the_startup_log_names_both_addresses(server):
    first = next(line for line in server.stderr.read_text().splitlines() if "numaguard webhook:" in line)
    assert first.split("[INFO] ", 1)[1] == (
        f"numaguard webhook: reviews on https://127.0.0.1:{server.port}/validate, probes on "
        f"https://127.0.0.1:{server.probe_port} (/healthz, /readyz, /metrics); TLS 1.2+ (AEAD suites only); "
        "client certificate not required; 2 workers x 4 threads, 1024 connections each per port, request bodies up to "
        "5 MiB each and 32 MiB at once; timeouts: handshake 5s, "
        "header 5s, body 1s, "
        "idle 120s, write 10s")
    assert "Listening at:" not in server.stderr.read_text()


# Enough first-seen pods that the backlog outlasts 20 probes, each a fresh TLS connection, on a
# loaded machine (with 25 each, the last probe sometimes came back just after the last review).
REVIEWS_EACH = 60


def test_a_busy_review_side_does_not_delay_probes(tmp_path):
    """All review threads busy with first-seen pods and a backlog queued behind them: every
    probe is answered while that backlog is still being worked off."""
    srv = start_server(tmp_path, "--workers", "1", "--threads", "1", "--shutdown-delay", "0")
    answered: list[float] = []
    lock = threading.Lock()

    def reviews(worker: int) -> None:
        for i in range(REVIEWS_EACH):
            # never cached: the image is in what the rules judge (a label is not: webhook/cache.py)
            pod = managed_pod(image=f"registry.example/matcher:{worker}-{i}")
            srv.validate(review(pod))
            with lock:
                answered.append(time.monotonic())

    try:
        load = [threading.Thread(target=reviews, args=(n,)) for n in range(16)]
        for t in load:
            t.start()
        time.sleep(0.3)
        probes = []
        for _ in range(10):
            for path in ("/healthz", "/readyz"):
                status = srv.request("GET", path)[0]
                probes.append((status, time.monotonic(), len(answered)))
        for t in load:
            t.join(120)
        assert [p[0] for p in probes] == [200] * 20
        last_review = max(answered)
        assert len(answered) == 16 * REVIEWS_EACH
        # Every probe came back before the reviews were done, while they were still queued.
        assert all(at < last_review and done < 16 * REVIEWS_EACH for _, at, done in probes), (probes[-1], last_review)
    finally:
        assert srv.stop() == 0
