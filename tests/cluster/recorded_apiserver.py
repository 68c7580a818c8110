"""A local HTTPS server that answers like a Kubernetes 1.37 API server, for `numaguard audit`.

No API server can run in the tests, so this one answers the few requests audit makes with
responses shaped exactly as kube-apiserver shapes them (checked against
staging/src/k8s.io/apimachinery/pkg/apis/meta/v1/types.go and recorded answers):

* `GET /api/v1/nodes`, `/api/v1/pods`, `/api/v1/namespaces/NS/pods`: `NodeList`/`PodList`
  with `metadata.resourceVersion`, and with `?limit=` a `metadata.continue` token (base64 JSON
  `{"v":"meta.k8s.io/v1","rv":N,"start":"<last key>\\u0000"}`, as the etcd3 store encodes it)
  and `remainingItemCount`; items carry no kind/apiVersion, as in real lists. `labelSelector`
  is honoured for `key=value[,key=value]`.
* `GET /api/v1/nodes/NAME/proxy/configz`: the kubelet's `{"kubeletconfig": {...}}`, or the
  proxy's 503 `Status` ("error trying to reach service: dial tcp ...: connect: connection
  refused", apimachinery pkg/util/proxy/transport.go), or, for a node deleted after the nodes
  list was read (`Scenario.deleted`), the 404 `Status` of the Node lookup the node proxy makes
  first (pkg/registry/core/node/rest/proxy.go: `nodes "NAME" not found`, details kind nodes).
* `GET /apis/topology.node.k8s.io/v1alpha2/noderesourcetopologies`: the list, or, when the
  CRD is not installed, the 404 `Status` "the server could not find the requested resource".
* Authentication: `Authorization: Bearer <token>`; an unknown token gets the 401 `Status`
  "Unauthorized"; a token without a permission gets the 403 `Status` in the RBAC
  authorizer's words (plugin/pkg/auth/authorizer/rbac: `User "..." cannot list resource
  "pods" in API group "" at the cluster scope`).

And the ways a real cluster misbehaves (`Scenario.faults`, and the configz answers):

* a list page answered with a 500 `Status` whose reason is empty, as responsewriters'
  ErrorToAPIStatus writes an error that is no StatusError (`internal_error`: "etcdserver:
  request timed out"), once or every time;
* the max-in-flight filter's 429: plain text "Too many requests, please try again later."
  with `Retry-After: 1` (staging/src/k8s.io/apiserver/pkg/server/filters/maxinflight.go
  tooManyRequests, written with http.Error, so not a Status);
* an expired continue token: 410 `Status`, reason Expired, with the etcd3 store's message
  and an inconsistent continue token (staging/src/k8s.io/apiserver/pkg/storage/etcd3/store.go);
* a connection reset before the answer (`Reset`: the socket closed with SO_LINGER 0, so the
  client reads ECONNRESET); an API server that goes away (`Down`: that reset, and the
  listening socket closed, so every new connection is refused);
* a token that expires mid-audit (`Scenario.expired`, changed by `Scenario.before`): the
  authenticator's 401 `Status` "Unauthorized" for every request made with it from then on;
* a node proxy that answers later than the client waits (`Hang`: the kubelet accepted the
  connection and is stuck; the API server's proxy is a long-running request with no timeout of
  its own);
* the node proxy's 503 `Status` "error trying to reach service: <Go dial error>", with the
  node's IP and port in it (staging/src/k8s.io/apimachinery/pkg/util/proxy/transport.go, used
  by pkg/registry/core/node/rest/proxy.go with wrapTransport): `proxy_unreachable`,
  `proxy_reset`;
* the kubelet's own 403, plain text passed through the proxy
  (pkg/kubelet/server/server.go InstallAuthFilter: "Forbidden (user=%s, verb=%s,
  resource=%s, subresource=%s)"; through the proxy the user is the API server's kubelet
  client): `kubelet_forbidden`.

TLS uses a CA and a server certificate made here with `cryptography`; `write_kubeconfig`
writes a kubeconfig the `kubernetes` client loads, so the whole client path is real.
"""
from __future__ import annotations

import base64
import datetime
import json
import socket
import ssl
import struct
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Callable
from urllib.parse import parse_qs, urlsplit

NRT_PREFIX = "/apis/topology.node.k8s.io/v1alpha2/noderesourcetopologies"
RESOURCE_VERSION = "48213577"


def status(code: int, reason: str, message: str, details: dict | None = None) -> dict:
    body = {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
            "message": message, "reason": reason, "code": code}
    if details is not None:
        body["details"] = details
    return body


def forbidden(user: str, verb: str, resource: str, group: str = "", subresource: str = "",
              name: str = "") -> dict:
    what = f"{resource}/{subresource}" if subresource else resource
    target = f'{what} "{name}" ' if name else f"{what} "
    message = (f'{target}is forbidden: User "{user}" cannot {verb} resource "{what}" in API group '
               f'"{group}" at the cluster scope')
    details = {"kind": resource, **({"name": name} if name else {})}
    return status(403, "Forbidden", message, details)


NOT_FOUND = status(404, "NotFound", "the server could not find the requested resource",
                   {})
UNAUTHORIZED = status(401, "Unauthorized", "Unauthorized")


def proxy_unreachable(ip: str) -> dict:
    return status(503, "ServiceUnavailable",
                  f"error trying to reach service: dial tcp {ip}:10250: connect: connection refused")


def proxy_reset(apiserver_ip: str, port: int, ip: str) -> dict:
    """The kubelet reset the API server's connection mid-request (Go's net.OpError for a read:
    `read tcp <local>-><remote>: read: connection reset by peer`)."""
    return status(503, "ServiceUnavailable", f"error trying to reach service: read tcp {apiserver_ip}:{port}->"
                                             f"{ip}:10250: read: connection reset by peer")


def internal_error(message: str = "etcdserver: request timed out") -> dict:
    """A 500 for an error that is not a StatusError: code 500, no reason."""
    body = status(500, "", message)
    del body["reason"]
    return body


EXPIRED_MESSAGE = ("The provided continue parameter is too old to display a consistent list result. You "
                   "can start a new list without the continue parameter, or use the continue token in this "
                   "response to retrieve the remainder of the results. Continuing with the provided token "
                   "results in an inconsistent list - objects that were created, modified, or deleted "
                   "between the time the first chunk was returned and now may show up in the list.")


@dataclass(frozen=True)
class Text:
    """A plain-text answer (http.Error: text/plain; charset=utf-8, the text and a newline)."""
    code: int
    text: str
    headers: tuple[tuple[str, str], ...] = ()


TOO_MANY_REQUESTS = Text(429, "Too many requests, please try again later.", (("Retry-After", "1"),))


def kubelet_forbidden(subresource: str = "proxy") -> Text:
    return Text(403, f"Forbidden (user=kube-apiserver-kubelet-client, verb=get, resource=nodes, "
                     f"subresource={subresource})")


@dataclass(frozen=True)
class Reset:
    """Close the connection with a TCP reset instead of answering."""


@dataclass(frozen=True)
class Down:
    """The API server goes away: it stops listening (new connections are refused) and resets
    this one, as a restarting kube-apiserver does."""


@dataclass(frozen=True)
class Hang:
    """Answer `then` (a kubeletconfig, a (code, body) pair, a Text...) after `seconds`."""
    seconds: float
    then: Any


@dataclass
class Fault:
    """Spoils requests to `path`: those for list page `page` (1-based; None: any request), the
    first `times` of them (None: every one), answering `answer` instead."""
    path: str
    answer: Any
    page: int | None = None
    times: int | None = 1


@dataclass
class Scenario:
    """What the cluster holds and who may read it. `pods` and `nodes` may be lists or
    callables returning an iterable (the benchmark generates 50,000 pods on demand)."""
    nodes: Any = field(default_factory=list)
    pods: Any = field(default_factory=list)
    configz: dict[str, Any] = field(default_factory=dict)      # node -> kubeletconfig | (code, Status)
    nrts: list | None = None                                    # None: CRD not installed
    tokens: dict[str, str] = field(default_factory=lambda: {"audit-token": "system:serviceaccount:numaguard:audit"})
    denied: dict[str, set[str]] = field(default_factory=dict)   # token -> {"pods", "nodes", "nodes/proxy", ...}
    # When set: the (verb, resource) pairs a ClusterRole grants; anything else is a 403.
    allowed: set[tuple[str, str]] | None = None
    faults: list[Fault] = field(default_factory=list)
    deleted: set[str] = field(default_factory=set)    # nodes deleted after the nodes list was read
    expired: set[str] = field(default_factory=set)    # tokens the API server now refuses (401)
    # Called with (path, query) before each request is answered: a test changes the cluster
    # mid-audit there (a token that expires, a token file the kubelet rotates).
    before: Callable[[str, dict], None] | None = None
    requests: list[str] = field(default_factory=list)
    request_times: list[tuple[float, str]] = field(default_factory=list)   # (time.monotonic(), path)
    stopping: threading.Event = field(default_factory=threading.Event)   # ends every Hang

    def fault_for(self, path: str, page: int) -> Any:
        for fault in self.faults:
            if fault.path == path and fault.page in (None, page) and fault.times != 0:
                if fault.times is not None:
                    fault.times -= 1
                return fault.answer
        return None


def _items(source) -> list:
    return list(source() if callable(source) else source)


def _matches(obj: dict, selector: str | None) -> bool:
    if not selector:
        return True
    labels = (obj.get("metadata") or {}).get("labels") or {}
    for part in selector.split(","):
        key, _, value = part.partition("=")
        if labels.get(key.strip()) != value.strip():
            return False
    return True


def _continue_token(start_key: str) -> str:
    raw = json.dumps({"v": "meta.k8s.io/v1", "rv": int(RESOURCE_VERSION), "start": start_key + "\u0000"},
                     separators=(",", ":"))
    return base64.urlsafe_b64encode(raw.encode()).decode().rstrip("=")


def _decode_token(token: str) -> str:
    padded = token + "=" * (-len(token) % 4)
    return json.loads(base64.urlsafe_b64decode(padded))["start"].rstrip("\u0000")


class _Handler(BaseHTTPRequestHandler):
    scenario: Scenario
    protocol_version = "HTTP/1.1"

    def log_message(self, *args) -> None:       # quiet
        pass

    def _send(self, code: int, body: Any) -> None:
        data = json.dumps(body, separators=(",", ":")).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.send_header("Audit-Id", "5f7a4c1e-8a3b-4e2d-9c61-0b1d2e3f4a5b")
        self.end_headers()
        self.wfile.write(data)

    def _answer(self, answer: Any) -> None:
        """A Text, Reset or Hang, or a (code, body) pair."""
        if isinstance(answer, Hang):
            if self.scenario.stopping.wait(answer.seconds):
                return self._reset()
            return self._answer(answer.then)
        if isinstance(answer, Reset):
            return self._reset()
        if isinstance(answer, Down):
            self.server.socket.close()
            return self._reset()
        if isinstance(answer, Text):
            data = (answer.text + "\n").encode()
            self.send_response(answer.code)
            self.send_header("Content-Type", "text/plain; charset=utf-8")
            self.send_header("X-Content-Type-Options", "nosniff")
            for name, value in answer.headers:
                self.send_header(name, value)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
            return None
        code, body = answer
        return self._send(code, body)

    def _reset(self) -> None:
        self.close_connection = True
        self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        self.connection.close()

    def do_GET(self) -> None:   # noqa: N802 (http.server's naming)
        sc = self.scenario
        url = urlsplit(self.path)
        query = {k: v[-1] for k, v in parse_qs(url.query).items()}
        sc.requests.append(self.path)
        sc.request_times.append((time.monotonic(), url.path))
        if sc.before is not None:
            sc.before(url.path, query)
        auth = self.headers.get("Authorization", "")
        token = auth[len("Bearer "):] if auth.startswith("Bearer ") else None
        if token not in sc.tokens or token in sc.expired:
            return self._send(401, UNAUTHORIZED)
        user, denied = sc.tokens[token], set(sc.denied.get(token, set()))
        if sc.allowed is not None:
            wanted = {("list", "nodes"), ("list", "pods"), ("get", "nodes/proxy"),
                      ("list", "noderesourcetopologies")}
            denied |= {resource for verb, resource in wanted if (verb, resource) not in sc.allowed}
        path = url.path
        if path == "/api/v1/nodes":
            if "nodes" in denied:
                return self._send(403, forbidden(user, "list", "nodes"))
            if hasattr(sc.nodes, "page"):
                return self._list("NodeList", "v1", sc.nodes, query)
            return self._list("NodeList", "v1", [n for n in _items(sc.nodes) if _matches(n, query.get("labelSelector"))], query)
        if path == "/api/v1/pods" or (path.startswith("/api/v1/namespaces/") and path.endswith("/pods")):
            if "pods" in denied:
                return self._send(403, forbidden(user, "list", "pods"))
            namespace = path.split("/")[4] if path.startswith("/api/v1/namespaces/") else None
            if hasattr(sc.pods, "page"):
                return self._list("PodList", "v1", sc.pods, query)
            pods = [p for p in _items(sc.pods) if namespace is None or p["metadata"].get("namespace") == namespace]
            return self._list("PodList", "v1", pods, query)
        if path.startswith("/api/v1/nodes/") and path.endswith("/proxy/configz"):
            name = path.split("/")[4]
            if "nodes/proxy" in denied:
                return self._send(403, forbidden(user, "get", "nodes", subresource="proxy", name=name))
            answer = sc.fault_for(path, 1)
            if name in sc.deleted or (answer is None and not callable(sc.nodes) and not hasattr(sc.nodes, "page")
                                      and name not in {n["metadata"]["name"] for n in sc.nodes}):
                # pkg/registry/core/node/rest/proxy.go: the node is looked up before proxying
                return self._send(404, status(404, "NotFound", f'nodes "{name}" not found',
                                              {"name": name, "kind": "nodes"}))
            if answer is None:
                answer = sc.configz(name) if callable(sc.configz) else sc.configz.get(name)
            if answer is None:        # a node whose kubelet is not running
                return self._send(503, proxy_unreachable("10.0.0.99"))
            return self._configz(answer)
        if path == NRT_PREFIX:
            if sc.nrts is None:
                return self._send(404, NOT_FOUND)
            if "noderesourcetopologies" in denied:
                return self._send(403, forbidden(user, "list", "noderesourcetopologies", group="topology.node.k8s.io"))
            return self._list("NodeResourceTopologyList", "topology.node.k8s.io/v1alpha2", sc.nrts, query)
        return self._send(404, NOT_FOUND)

    def _configz(self, answer: Any) -> None:
        """The kubelet's `{"kubeletconfig": ...}` for a dict, else the answer as it is."""
        def body(found: Any) -> Any:
            return (200, {"kubeletconfig": found}) if isinstance(found, dict) else found
        self._answer(Hang(answer.seconds, body(answer.then)) if isinstance(answer, Hang) else body(answer))

    def _list(self, kind: str, api_version: str, items: Any, query: dict) -> None:
        limit = int(query.get("limit", "0") or 0)
        fault = self.scenario.fault_for(urlsplit(self.path).path, self._page_number(items, query, limit))
        if fault is not None:
            return self._answer(fault)
        if hasattr(items, "page"):        # a generated list (the benchmark): no sorting in memory
            start = _decode_token(query["continue"]) if "continue" in query else None
            page, last, remaining = items.page(start, limit)
            meta: dict[str, Any] = {"resourceVersion": RESOURCE_VERSION}
            if remaining:
                meta["continue"] = _continue_token(last)
                meta["remainingItemCount"] = remaining
            return self._send(200, {"kind": kind, "apiVersion": api_version, "metadata": meta, "items": page})

        def key(obj: dict) -> str:
            meta = obj.get("metadata") or {}
            return f"{meta.get('namespace', '')}/{meta.get('name', '')}"
        items = sorted(items, key=key)
        if "continue" in query:
            try:
                start = _decode_token(query["continue"])
            except (ValueError, KeyError):
                return self._send(400, status(400, "BadRequest", "continue key is not valid: illegal base64 data"))
            items = [i for i in items if key(i) > start]
        meta: dict[str, Any] = {"resourceVersion": RESOURCE_VERSION}
        if limit and len(items) > limit:
            meta["continue"] = _continue_token(key(items[limit - 1]))
            meta["remainingItemCount"] = len(items) - limit
            items = items[:limit]
        self._send(200, {"kind": kind, "apiVersion": api_version, "metadata": meta, "items": items})


    @staticmethod
    def _page_number(items: Any, query: dict, limit: int) -> int:
        """Which page of the list a request asks for (1 without a continue token)."""
        if "continue" not in query or not limit:
            return 1
        try:
            start = _decode_token(query["continue"])
        except (ValueError, KeyError):
            return 0
        if hasattr(items, "page"):
            return (int(start) + 1) // limit + 1
        keys = sorted(f"{(i.get('metadata') or {}).get('namespace', '')}/{(i.get('metadata') or {}).get('name', '')}"
                      for i in _items(items))
        return sum(1 for k in keys if k <= start) // limit + 1


def expired(token_start: str = "") -> dict:
    """The 410 for an expired continue token, with the inconsistent token to go on with."""
    body = status(410, "Expired", EXPIRED_MESSAGE)
    body["metadata"] = {"continue": _continue_token(token_start)} if token_start else {}
    return body


class _QuietServer(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request, client_address) -> None:
        pass      # a client that gave up on a hung answer, a reset we made: nothing to report


def make_tls(folder: Path) -> tuple[Path, Path, Path]:
    """A CA and a server certificate for 127.0.0.1/localhost, signed by it (PEM files)."""
    import ipaddress

    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    now = datetime.datetime.now(datetime.timezone.utc)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "kubernetes")])
    ca = (x509.CertificateBuilder().subject_name(ca_name).issuer_name(ca_name)
          .public_key(ca_key.public_key()).serial_number(x509.random_serial_number())
          .not_valid_before(now - datetime.timedelta(minutes=5)).not_valid_after(now + datetime.timedelta(days=1))
          .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
          .add_extension(x509.KeyUsage(digital_signature=True, content_commitment=False, key_encipherment=False,
                                       data_encipherment=False, key_agreement=False, key_cert_sign=True,
                                       crl_sign=True, encipher_only=False, decipher_only=False), critical=True)
          .add_extension(x509.SubjectKeyIdentifier.from_public_key(ca_key.public_key()), critical=False)
          .sign(ca_key, hashes.SHA256()))
    key = ec.generate_private_key(ec.SECP256R1())
    cert = (x509.CertificateBuilder()
            .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "kube-apiserver")]))
            .issuer_name(ca_name).public_key(key.public_key()).serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5)).not_valid_after(now + datetime.timedelta(days=1))
            .add_extension(x509.SubjectAlternativeName([x509.DNSName("localhost"),
                                                        x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]), critical=False)
            .add_extension(x509.ExtendedKeyUsage([x509.oid.ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
            .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()), critical=False)
            .sign(ca_key, hashes.SHA256()))
    folder.mkdir(parents=True, exist_ok=True)
    ca_path, cert_path, key_path = folder / "ca.crt", folder / "apiserver.crt", folder / "apiserver.key"
    ca_path.write_bytes(ca.public_bytes(serialization.Encoding.PEM))
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                           serialization.NoEncryption()))
    return ca_path, cert_path, key_path


class RecordedApiServer:
    """`with RecordedApiServer(scenario, folder) as server:` serves on https://127.0.0.1:PORT."""

    def __init__(self, scenario: Scenario, folder: Path) -> None:
        self.scenario, self.folder = scenario, Path(folder)
        self.ca, cert, key = make_tls(self.folder)
        handler = type("Handler", (_Handler,), {"scenario": scenario})
        self.httpd = _QuietServer(("127.0.0.1", 0), handler)
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(cert, key)
        self.httpd.socket = context.wrap_socket(self.httpd.socket, server_side=True)
        self.url = f"https://127.0.0.1:{self.httpd.server_address[1]}"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def __enter__(self) -> "RecordedApiServer":
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.scenario.stopping.set()
        self.httpd.shutdown()
        self.httpd.server_close()

    def kubeconfig(self, token: str = "audit-token", *, name: str = "kubeconfig",
                   current_context: bool = True, user: dict | None = None) -> Path:
        return write_kubeconfig(self.folder / name, self.url, self.ca, token, current_context=current_context,
                                user=user)


def write_kubeconfig(path: Path, server: str, ca: Path, token: str, *, current_context: bool = True,
                     user: dict | None = None) -> Path:
    """A kubeconfig for the server; `user`: the user entry's credentials instead of `token`
    (a `tokenFile`, an `exec` plugin)."""
    ca_data = base64.b64encode(Path(ca).read_bytes()).decode()
    config = {"apiVersion": "v1", "kind": "Config",
              "clusters": [{"name": "pool", "cluster": {"server": server, "certificate-authority-data": ca_data}}],
              "users": [{"name": "auditor", "user": user or {"token": token}}],
              "contexts": [{"name": "pool-admin", "context": {"cluster": "pool", "user": "auditor"}}],
              "preferences": {}}
    if current_context:
        config["current-context"] = "pool-admin"
    path.write_text(json.dumps(config, indent=2))
    return path


def serve_forever(scenario_factory: Callable[[], Scenario], folder: Path, ready: Path) -> None:
    """Run in a separate process (the benchmark): write the URL and CA path to `ready`."""
    with RecordedApiServer(scenario_factory(), folder) as server:
        ready.write_text(json.dumps({"url": server.url, "ca": str(server.ca)}))
        threading.Event().wait()
