"""`numaguard webhook certs|serve`: thin click commands; numaguard.webhook (Flask, gunicorn,
cryptography) is imported only when one of them runs."""
from __future__ import annotations

import sys
from typing import Callable

import click


class _Unusable(click.ClickException):
    exit_code = 2


@click.group()
def webhook() -> None:
    """Run numaguard as a validating admission webhook."""


@webhook.command()
@click.option("--service", required=True, help="The webhook's Service name.")
@click.option("--namespace", required=True, help="The Service's namespace.")
@click.option("--out", "out", required=True, type=click.Path(file_okay=False),
              help="Directory for ca.crt, ca.key, tls.crt, tls.key.")
@click.option("--days", default=365, show_default=True, type=click.IntRange(1, 3650),
              help="Validity of the serving certificate.")
@click.option("--new-ca", is_flag=True, help="Make a new CA even if DIR already has one.")
@click.option("--patch", "patch", type=click.Path(dir_okay=False, exists=True),
              help="Write the CA into clientConfig.caBundle of this ValidatingWebhookConfiguration file.")
@click.option("--client", "clients", multiple=True, metavar="NAME",
              help="Also issue a client certificate NAME.crt/NAME.key (CN=NAME) from the CA, for "
                   "serve --client-ca DIR/ca.crt (the API server's, Prometheus'). Repeatable.")
def certs(service: str, namespace: str, out: str, days: int, new_ca: bool, patch: str | None,
          clients: tuple[str, ...]) -> None:
    """Write a CA and a serving certificate for the webhook's Service DNS names.

    An existing ca.crt/ca.key in DIR is reused (renewing the serving certificate keeps the
    caBundle valid); --new-ca replaces it.
    """
    from numaguard.webhook.tls import TLSError, patch_ca_bundle, write_certs

    try:
        written = write_certs(service, namespace, out, days=days, new_ca=new_ca, clients=clients)
        click.echo(f"{out}: {'reused' if written.ca_reused else 'new'} CA; tls.crt for "
                   f"{', '.join(written.dns_names)} until {written.not_after:%Y-%m-%d}")
        for client in clients:
            click.echo(f"{out}: {client}.crt, {client}.key: client certificate CN={client}")
        if patch:
            with open(f"{out}/ca.crt", "rb") as fh:
                count = patch_ca_bundle(patch, fh.read())
            click.echo(f"{patch}: caBundle set on {count} webhook{'s' if count != 1 else ''}")
    except (TLSError, OSError) as e:
        raise _Unusable(str(e)) from None


class _Bytes(click.ParamType):
    """A byte count: digits, or digits with Ki, Mi or Gi (as webhook.cacheBytes)."""
    name = "bytes"

    def convert(self, value, param, ctx) -> int:
        from numaguard.lint.config import byte_count

        try:
            count = byte_count(value)
        except ValueError:
            count = 0
        if count <= 0:
            self.fail(f"{value!r} is not a byte count above zero (e.g. 32Mi, 33554432)", param, ctx)
        return count


def _seconds(name: str, default: float, what: str, top: float = 300) -> Callable:
    return click.option(f"--{name}-timeout", f"{name}_timeout", type=click.FloatRange(0.1, top),
                        help=f"Seconds {what} (config webhook.timeouts.{name}; default {default:g}).")


@webhook.command()
@click.option("--config", "config", type=click.Path(dir_okay=False),
              help="numaguard config file (mode, scope, pool, node description, serving keys). Default: built-in defaults.")
@click.option("--cert", required=True, type=click.Path(dir_okay=False), help="Serving certificate (PEM).")
@click.option("--key", required=True, type=click.Path(dir_okay=False), help="Its private key (PEM).")
@click.option("--host", default="0.0.0.0", show_default=True, help="Address to listen on.")
@click.option("--port", default=8443, show_default=True, type=click.IntRange(1, 65535),
              help="Review port: POST /validate.")
@click.option("--probe-port", default=8444, show_default=True, type=click.IntRange(1, 65535),
              help="Probe port: /healthz, /readyz, /metrics (TLS, own threads).")
@click.option("--workers", default=2, show_default=True, type=click.IntRange(1, 64))
@click.option("--threads", default=4, show_default=True, type=click.IntRange(1, 256),
              help="Threads per worker that run reviews.")
@click.option("--max-connections", default=1024, show_default=True, type=click.IntRange(16, 100_000),
              help="Open connections per worker and port; past it, the oldest one that has not sent a whole "
                   "request, else the oldest idle one, is closed.")
@click.option("--body-budget", type=_Bytes(), metavar="BYTES",
              help="Request bodies one worker holds at once (e.g. 32Mi, the default); a body that would "
                   "pass it is answered 503 with Retry-After, unread.")
@click.option("--shutdown-delay", default=5.0, show_default=True, type=click.FloatRange(0, 300),
              help="Seconds between SIGTERM (readiness turns false) and the graceful stop.")
@click.option("--graceful-timeout", default=20, show_default=True, type=click.IntRange(1, 300),
              help="Seconds in-flight requests get to finish after that.")
@_seconds("handshake", 5, "from accept to the end of the TLS handshake")
@_seconds("header", 5, "to read a request's head (line and headers)")
@_seconds("body", 5, "to read a request's body before a 408")
@_seconds("idle", 120, "a kept-alive connection may wait for its next request", top=3600)
@_seconds("write", 10, "to send a response")
@click.option("--client-ca", type=click.Path(dir_okay=False),
              help="Require a client certificate signed by this CA (PEM) on the review port, and on "
                   "/metrics (config webhook.clientCA).")
@click.option("--tls-min-version", type=click.Choice(["1.2", "1.3"]),
              help="Lowest TLS version accepted (config webhook.tlsMinVersion; default 1.2).")
@click.option("--bench-route", is_flag=True, hidden=True, help="Serve POST /bench/allow (benchmarks only).")
def serve(**given) -> None:
    """Serve POST /validate and the probes /healthz, /readyz, /metrics, TLS only.

    Flags override the config file's webhook keys, which override the defaults.
    """
    from numaguard.webhook.server import ServeError, resolve_options, serve as run
    from numaguard.webhook.settings import SettingsError
    from numaguard.webhook.tls import TLSError

    try:
        run(resolve_options({k: v for k, v in given.items() if v is not None}))
    except (SettingsError, TLSError) as e:
        raise _Unusable(str(e)) from None
    except ServeError as e:
        raise click.ClickException(str(e)) from None
    sys.exit(0)


@webhook.command()
@click.option("--config", "config", required=True, type=click.Path(dir_okay=False),
              help="numaguard config file (scope, pool or pools): what the conditions are derived from.")
@click.option("--out", "out", type=click.Path(file_okay=False),
              help="Write validatingwebhookconfiguration.yaml and configmap.yaml into DIR. Default: both "
                   "to standard output.")
@click.option("--service", default="numaguard-webhook", show_default=True, help="The webhook's Service name.")
@click.option("--namespace", default="numaguard", show_default=True, help="The Service's namespace.")
@click.option("--failure-policy", type=click.Choice(["Ignore", "Fail"]), default="Ignore", show_default=True)
@click.option("--timeout", default=5, show_default=True, type=click.IntRange(1, 30),
              help="timeoutSeconds of the webhook.")
def manifests(config, out, service, namespace, failure_policy, timeout) -> None:
    """Write the ValidatingWebhookConfiguration, with matchConditions derived from the config so
    the API server calls numaguard only for objects it may judge, and the ConfigMap holding
    that config."""
    import os

    from numaguard.lint.config import ConfigError, load_config_file
    from numaguard.webhook.manifests import ManifestError, Target, manifests as render

    try:
        parsed = load_config_file(config)
        with open(config, encoding="utf-8") as fh:
            text = fh.read()
        files = render(parsed, text, os.path.basename(config), Target(service=service, namespace=namespace),
                       failure_policy=failure_policy, timeout=timeout)
        if not out:
            click.echo("---\n".join(files.values()), nl=False)
            return
        os.makedirs(out, exist_ok=True)
        for name, content in files.items():
            with open(os.path.join(out, name), "w", encoding="utf-8") as fh:
                fh.write(content)
            click.echo(f"{os.path.join(out, name)}: written")
    except (ConfigError, ManifestError, OSError) as e:
        raise _Unusable(str(e)) from None
