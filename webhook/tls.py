"""TLS: the certificates `numaguard webhook certs` writes, and the serving context that
follows certificate files renewed in place.

The API server calls a webhook over HTTPS only, verifying the serving certificate against the
`caBundle` of the ValidatingWebhookConfiguration under the Service's DNS name
(`NAME.NS.svc`); the certificate therefore carries every name a Service is known by.

`ServingCertificate.context()` is asked for an `ssl.SSLContext` for every new connection
(gunicorn's `ssl_context` hook). It stats the two files and builds a new context only when
they changed; a context already handed to a connection is never modified, so in-flight
requests finish on the old certificate and new connections get the new one. A half-written
pair (cert-manager writes the two files one after the other) fails to load and the previous
context stays in use until the pair is consistent.
"""
from __future__ import annotations

import base64
import datetime as dt
import os
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
                new_ca: bool = False) -> WrittenCerts:
    """ca.crt, ca.key (reused when present, unless new_ca), tls.crt, tls.key in `out`.

    Keys are ECDSA P-256 (the API server accepts them; handshakes are cheap) and written with
    mode 0600; every file is replaced atomically so a running server never reads half a file.
    """
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
    """The serving certificate and key files, and the TLS context built from them."""

    def __init__(self, cert_path: str, key_path: str) -> None:
        self.cert_path, self.key_path = cert_path, key_path
        self._lock = threading.Lock()
        self._context: ssl.SSLContext | None = None
        self._loaded: tuple | None = None        # file signature the context was built from
        self._failed: tuple | None = None        # file signature that did not load
        self.not_before: dt.datetime | None = None
        self.not_after: dt.datetime | None = None
        self.last_error: str | None = None
        self.reloads = 0

    def load(self) -> None:
        """Load now; raise TLSError when there is nothing usable (start-up)."""
        self.context()
        if self._context is None:
            raise TLSError(self.last_error or "no certificate loaded")

    def context(self) -> ssl.SSLContext | None:
        signature = self._signature()
        if signature == self._loaded or signature == self._failed:
            return self._context
        with self._lock:
            if signature not in (self._loaded, self._failed):
                self._reload(signature)
        return self._context

    def valid(self) -> bool:
        self.context()
        now = dt.datetime.now(dt.timezone.utc)
        return (self._context is not None and self.not_before is not None and self.not_after is not None
                and self.not_before <= now < self.not_after)

    def _signature(self) -> tuple | None:
        try:
            a, b = os.stat(self.cert_path), os.stat(self.key_path)
        except OSError:
            return None
        return (a.st_ino, a.st_mtime_ns, a.st_size, b.st_ino, b.st_mtime_ns, b.st_size)

    def _reload(self, signature: tuple | None) -> None:
        try:
            if signature is None:
                raise TLSError(f"{self.cert_path} or {self.key_path}: cannot be read")
            context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            context.minimum_version = ssl.TLSVersion.TLSv1_2
            try:
                context.load_cert_chain(self.cert_path, self.key_path)
                cert = x509.load_pem_x509_certificate(Path(self.cert_path).read_bytes())
            except (OSError, ssl.SSLError, ValueError) as e:
                raise TLSError(f"{self.cert_path}, {self.key_path}: not a matching PEM certificate "
                               f"and key ({getattr(e, 'reason', None) or e})") from None
        except TLSError as e:
            self._failed, self.last_error = signature, str(e)
            return
        self._context, self._loaded, self._failed, self.last_error = context, signature, None, None
        self.not_before, self.not_after = cert.not_valid_before_utc, cert.not_valid_after_utc
        self.reloads += 1
