"""What one webhook application is built from (`create_app(settings)`), and reading it from a
config file. No module-level state: every worker builds its own from these values."""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any, TextIO

from numaguard.webhook.decide import Policy

# One review's body. Every legitimate review fits: an UPDATE carries the object and its old
# version, each at most what etcd stores (1.5 MiB: etcd's --max-request-bytes default,
# server/embed/config.go DefaultMaxRequestBytes, etcd-io/etcd@286a34ad), so 3 MiB of objects
# plus the review's envelope (uid, kinds, userInfo, options: a few KiB); the API server takes
# request bodies of up to 3 MiB of JSON for the same reason (k8s.io/apiserver pkg/server
# config.go MaxRequestBodyBytes, kubernetes@8921bcdb). 5 MiB leaves room for JSON's escapes.
MAX_BODY_BYTES = 5 * 1024 * 1024
# The bodies one worker holds at once (front.BodyBudget): six reviews of the largest size, or
# thousands of ordinary ones (a few KiB each). What it costs is measured in
# tests/bench/bench_webhook_bodies.py and sizes the Deployment's memory limit.
BODY_BUDGET_BYTES = 32 * 1024 * 1024
BODY_TIMEOUT_SECONDS = 5.0           # a client that stops mid-body is dropped after this


class SettingsError(ValueError):
    """An unusable config or node file: one line, the command exits 2."""


@dataclass
class WebhookSettings:
    policy: Policy = field(default_factory=Policy)
    certificate: Any = None              # numaguard.webhook.tls.ServingCertificate (None: not TLS)
    drain_file: str | None = None        # exists once SIGTERM was received: /readyz says 503
    bench_route: bool = False            # POST /bench/allow: allow-all baseline for the benchmark
    max_body: int = MAX_BODY_BYTES
    body_timeout: float = BODY_TIMEOUT_SECONDS
    access_log: TextIO | None = None     # JSON lines; None = standard output
    metrics_need_client_certificate: bool = False   # serve --client-ca: /metrics wants a client certificate


def load_policy(config_path: str | None) -> Policy:
    """The config file (validated like `numaguard lint`'s) and the node descriptions it names
    (the top-level `node:` and each pool's). No file: the defaults (no pool, no node
    description, mode enforce)."""
    from numaguard.lint.config import Config, ConfigError, load_config_file

    if not config_path:
        return Policy(Config(), None)
    try:
        config = load_config_file(config_path)
    except ConfigError as e:
        raise SettingsError(str(e)) from None
    default, by_pool = config.node_paths()
    where = {default: "node"} if default else {}
    for pool in config.pools:
        if pool.node:
            where.setdefault(by_pool[pool.name], f"node of pool {pool.name}")
    loaded = {path: _load_node(config_path, key, path) for path, key in where.items()}
    return Policy(config, loaded.get(default), pool_nodes={name: loaded[path] for name, path in by_pool.items()})


def _load_node(config_path: str, key: str, path: str) -> Any:
    from numaguard.lint.numa.node import NodeError, load_node_file

    try:
        return load_node_file(path)
    except FileNotFoundError:
        raise SettingsError(f"{config_path}: {key}: node description not found: {path}") from None
    except NodeError as e:
        raise SettingsError(f"{config_path}: {key}: {e}") from None


def serving_keys(config_path: str | None) -> dict[str, Any]:
    """The config file's serving keys (`webhook.clientCA`, `webhook.tlsMinVersion`,
    `webhook.timeouts`) as `ServeOptions` fields: client_ca (resolved against the config
    file's folder), tls_min_version, and timeouts (seconds by phase)."""
    from numaguard.lint.config import ConfigError, load_config_file

    if not config_path:
        return {}
    try:
        keys = load_config_file(config_path).webhook_serving
    except ConfigError as e:
        raise SettingsError(str(e)) from None
    out: dict[str, Any] = {}
    if keys.get("clientCA"):
        out["client_ca"] = os.path.join(os.path.dirname(os.path.abspath(config_path)), keys["clientCA"])
    if keys.get("tlsMinVersion"):
        out["tls_min_version"] = keys["tlsMinVersion"]
    timeouts = {}
    for phase, text in (keys.get("timeouts") or {}).items():
        if float(text) <= 0:
            raise SettingsError(f"{config_path}: webhook.timeouts.{phase}: must be more than 0 seconds")
        timeouts[phase] = float(text)
    if timeouts:
        out["timeouts"] = timeouts
    return out
