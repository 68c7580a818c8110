"""TLS: the certificates `numaguard webhook certs` writes, and the serving context that
follows certificate files renewed in place.

The API server calls a webhook over HTTPS only, verifying the serving certificate against the
`caBundle` of the ValidatingWebhookConfiguration under the Service's DNS name
(`NAME.NS.svc`); the certificate therefore carries every name a Service is known by.

`ServingCertificate.context(role)` is asked for an `ssl.SSLContext` for every new connection
(webhook/front.py). It stats the files (the pair, and the client CA when there is one) and
builds new contexts only when they changed; a context already handed to a connection is never
modified, so in-flight requests finish on the old certificate and new connections get the new
one. A half-written pair (cert-manager writes the two files one after the other) fails to load
and the previous contexts stay in use until the pair is consistent.

TLS policy: TLS 1.2 with forward-secret AEAD suites only (ECDHE with AES-GCM or
CHACHA20-POLY1305: Mozilla's "intermediate" list; no CBC, no static RSA), or TLS 1.3 (whose
suites are all AEAD) with `min_version="1.3"`. Only HTTP/1.1 is offered in ALPN. With a client
CA, the review port requires a client certificate signed by it (the API server presents one
from its AdmissionConfiguration's kubeConfigFile); the probe port asks for one without
requiring it (the kubelet's probes have none) and the application decides per path.
"""
from __future__ import annotations

import base64
import datetime as dt
import os
import re
import ssl
import threading
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID


class TLSError(ValueError):
    """A certificate or key that cannot be used; one line naming the file."""


TLS_MIN_VERSIONS = {"1.2": ssl.TLSVersion.TLSv1_2, "1.3": ssl.TLSVersion.TLSv1_3}
# OpenSSL names for TLS 1.2 (TLS 1.3 suites are set apart and are all AEAD): ECDHE key
# exchange, AES-GCM or ChaCha20-Poly1305, for ECDSA and RSA certificates alike.
TLS12_CIPHERS = "ECDHE+AESGCM:ECDHE+CHACHA20:!aNULL"
REVIEW, PROBE = "review", "probe"         # the two listeners' roles
_NEVER = object()                         # no file signature tried yet


# -- generating ----------------------------------------------------------------------------------
def service_dns_names(service: str, namespace: str) -> list[str]:
    return [service, f"{service}.{namespace}", f"{service}.{namespace}.svc",
            f"{service}.{namespace}.svc.cluster.local"]


@dataclass(frozen=True)
class WrittenCerts:
    out: Path
    ca_reused: bool
    dns_names: list[str]
    not_after: dt.datetime


def write_certs(service: str, namespace: str, out: str | Path, *, days: int = 365,
                new_ca: bool = False, clients: tuple[str, ...] = ()) -> WrittenCerts:
    """ca.crt, ca.key (reused when present, unless new_ca), tls.crt, tls.key in `out`, and
    for each name in `clients` a client certificate NAME.crt / NAME.key (extended key usage
    clientAuth, subject CN=NAME) from the same CA, for `serve --client-ca out/ca.crt`.

    Keys are ECDSA P-256 (the API server accepts them; handshakes are cheap) and written with
    mode 0600; every file is replaced atomically so a running server never reads half a file.
    """
    for client in clients:
        if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}", client) or client in ("ca", "tls"):
            raise TLSError(f"--client {client!r}: a client name is letters, digits, '.', '_', '-' "
                           "(it names the files NAME.crt and NAME.key), and not 'ca' or 'tls'")
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    now = dt.datetime.now(dt.timezone.utc) - dt.timedelta(minutes=5)    # clock skew
    ca_cert_path, ca_key_path = out / "ca.crt", out / "ca.key"
    reuse = not new_ca and ca_cert_path.is_file() and ca_key_path.is_file()
    if reuse:
        try:
            ca_cert = x509.load_pem_x509_certificate(ca_cert_path.read_bytes())
            ca_key = serialization.load_pem_private_key(ca_key_path.read_bytes(), password=None)
        except ValueError as e:
            raise TLSError(f"{out}: existing CA cannot be read ({e}); use --new-ca") from None
    else:
        ca_key = ec.generate_private_key(ec.SECP256R1())
        ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, f"numaguard webhook CA ({namespace})")])
        ca_cert = (
            x509.CertificateBuilder().subject_name(ca_name).issuer_name(ca_name)
            .public_key(ca_key.public_key()).serial_number(x509.random_serial_number())
            .not_valid_before(now).not_valid_after(now + dt.timedelta(days=3650))
            .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
            .add_extension(_signing_key_usage(ca=True), critical=True)
            .add_extension(x509.SubjectKeyIdentifier.from_public_key(ca_key.public_key()), critical=False)
            .sign(ca_key, hashes.SHA256()))
    names = service_dns_names(service, namespace)
    key = ec.generate_private_key(ec.SECP256R1())
    not_after = now + dt.timedelta(days=days)
    cert = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, names[2])]))
        .issuer_name(ca_cert.subject).public_key(key.public_key())
        .serial_number(x509.random_serial_number()).not_valid_before(now).not_valid_after(not_after)
        .add_extension(x509.SubjectAlternativeName([x509.DNSName(n) for n in names]), critical=False)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .add_extension(_signing_key_usage(ca=False), critical=True)
        .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()), critical=False)
        .sign(ca_key, hashes.SHA256()))
    if not reuse:
        _write(ca_key_path, _key_pem(ca_key), 0o600)
        _write(ca_cert_path, ca_cert.public_bytes(serialization.Encoding.PEM), 0o644)
    _write(out / "tls.key", _key_pem(key), 0o600)
    _write(out / "tls.crt", cert.public_bytes(serialization.Encoding.PEM), 0o644)
    for client in clients:
        client_key = ec.generate_private_key(ec.SECP256R1())
        client_cert = (
            x509.CertificateBuilder()
            .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, client)]))
            .issuer_name(ca_cert.subject).public_key(client_key.public_key())
            .serial_number(x509.random_serial_number()).not_valid_before(now).not_valid_after(not_after)
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
            .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.CLIENT_AUTH]), critical=False)
            .add_extension(_signing_key_usage(ca=False), critical=True)
            .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()), critical=False)
            .sign(ca_key, hashes.SHA256()))
        _write(out / f"{client}.key", _key_pem(client_key), 0o600)
        _write(out / f"{client}.crt", client_cert.public_bytes(serialization.Encoding.PEM), 0o644)
    return WrittenCerts(out, reuse, names, not_after)


def patch_ca_bundle(manifest: str | Path, ca_pem: bytes) -> int:
    """Set `clientConfig.caBundle` of every webhook in every ValidatingWebhookConfiguration of
    a YAML file; returns how many webhooks were patched."""
    import yaml

    path = Path(manifest)
    try:
        docs = list(yaml.safe_load_all(path.read_text(encoding="utf-8")))
    except (OSError, yaml.YAMLError) as e:
        raise TLSError(f"{path}: cannot read: {e}") from None
    bundle = base64.b64encode(ca_pem).decode("ascii")
    patched = 0
    for doc in docs:
        if isinstance(doc, dict) and doc.get("kind") == "ValidatingWebhookConfiguration":
            for hook in doc.get("webhooks") or []:
                hook.setdefault("clientConfig", {})["caBundle"] = bundle
                patched += 1
    if not patched:
        raise TLSError(f"{path}: no ValidatingWebhookConfiguration webhooks to patch")
    _write(path, yaml.safe_dump_all(docs, sort_keys=False).encode("utf-8"), 0o644)
    return patched


def _key_pem(key) -> bytes:
    return key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                             serialization.NoEncryption())


def _signing_key_usage(*, ca: bool) -> x509.KeyUsage:
    """ECDSA keys only sign: the serving key signs TLS handshakes, the CA's key also signs
    certificates and CRLs."""
    return x509.KeyUsage(digital_signature=True, key_cert_sign=ca, crl_sign=ca, content_commitment=False,
                         key_encipherment=False, data_encipherment=False, key_agreement=False,
                         encipher_only=False, decipher_only=False)


def _write(path: Path, data: bytes, mode: int) -> None:
    tmp = path.with_name(f".{path.name}.tmp{os.getpid()}")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, mode)
    try:
        os.write(fd, data)
    finally:
        os.close(fd)
    os.chmod(tmp, mode)
    os.replace(tmp, path)


# -- serving -------------------------------------------------------------------------------------
class ServingCertificate:
    """The serving certificate and key files (and the client CA file, if any), and the TLS
    contexts built from them: one for the review port, one for the probe port."""

    def __init__(self, cert_path: str, key_path: str, *, client_ca: str | None = None,
                 min_version: str = "1.2") -> None:
        if min_version not in TLS_MIN_VERSIONS:
            raise TLSError(f"TLS minimum version {min_version!r} is not one of {', '.join(TLS_MIN_VERSIONS)}")
        self.cert_path, self.key_path, self.client_ca, self.min_version = cert_path, key_path, client_ca, min_version
        self._lock = threading.Lock()
        self._contexts: dict[str, ssl.SSLContext] | None = None
        self._loaded: object = _NEVER            # file signature the contexts were built from
        self._failed: object = _NEVER            # file signature that did not load (None: files missing)
        self.not_before: dt.datetime | None = None
        self.not_after: dt.datetime | None = None
        self.last_error: str | None = None
        self.reloads = 0

    def load(self) -> None:
        """Load now; raise TLSError when there is nothing usable (start-up)."""
        self.context()
        if self._contexts is None:
            raise TLSError(self.last_error or "no certificate loaded")

    def context(self, role: str = REVIEW) -> ssl.SSLContext | None:
        signature = self._signature()
        if signature != self._loaded and signature != self._failed:
            with self._lock:
                if signature not in (self._loaded, self._failed):
                    self._reload(signature)
        contexts = self._contexts
        return None if contexts is None else contexts[role]

    def valid(self) -> bool:
        self.context()
        now = dt.datetime.now(dt.timezone.utc)
        return (self._contexts is not None and self.not_before is not None and self.not_after is not None
                and self.not_before <= now < self.not_after)

    def _signature(self) -> tuple | None:
        try:
            stats = [os.stat(p) for p in (self.cert_path, self.key_path, self.client_ca) if p]
        except OSError:
            return None
        return tuple((s.st_ino, s.st_mtime_ns, s.st_size) for s in stats)

    def _reload(self, signature: tuple | None) -> None:
        try:
            if signature is None:
                missing = " or ".join(p for p in (self.cert_path, self.key_path, self.client_ca) if p)
                raise TLSError(f"{missing}: cannot be read")
            contexts = {role: self._new_context(role) for role in (REVIEW, PROBE)}
            try:
                cert = x509.load_pem_x509_certificate(Path(self.cert_path).read_bytes())
            except (OSError, ValueError) as e:
                raise TLSError(f"{self.cert_path}: not a PEM certificate ({e})") from None
        except TLSError as e:
            self._failed, self.last_error = signature, str(e)
            return
        self._contexts, self._loaded, self._failed, self.last_error = contexts, signature, None, None
        self.not_before, self.not_after = cert.not_valid_before_utc, cert.not_valid_after_utc
        self.reloads += 1

    def _new_context(self, role: str) -> ssl.SSLContext:
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.minimum_version = TLS_MIN_VERSIONS[self.min_version]
        context.set_ciphers(TLS12_CIPHERS)
        context.options |= ssl.OP_NO_COMPRESSION | ssl.OP_NO_RENEGOTIATION | ssl.OP_CIPHER_SERVER_PREFERENCE
        context.set_alpn_protocols(["http/1.1"])
        try:
            context.load_cert_chain(self.cert_path, self.key_path)
        except (OSError, ssl.SSLError, ValueError) as e:
            raise TLSError(f"{self.cert_path}, {self.key_path}: not a matching PEM certificate "
                           f"and key ({getattr(e, 'reason', None) or e})") from None
        if self.client_ca:
            try:
                context.load_verify_locations(cafile=self.client_ca)
            except (OSError, ssl.SSLError, ValueError) as e:
                raise TLSError(f"{self.client_ca}: not a PEM CA certificate "
                               f"({getattr(e, 'reason', None) or e})") from None
            # The kubelet's probes present no certificate: the probe port asks, the review port requires.
            context.verify_mode = ssl.CERT_REQUIRED if role == REVIEW else ssl.CERT_OPTIONAL
        return context
