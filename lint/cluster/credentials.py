"""Credentials loaded again after the API server refused them mid-audit (401), as client-go
does, and retried once.

A bound service-account token is rotated by the kubelet while the pod runs, and an exec
plugin's token (EKS, GKE, OIDC helpers) expires, often without the client knowing: the
Python client reloads a token only once the expiry the plugin gave has passed, and reads the
service account's file again only once a minute. client-go reacts to the 401 itself:

* a token file (the service account's, or a kubeconfig user's `tokenFile`) is read through
  `transport.NewCachedFileTokenSource`, whose `ResetTokenOlderThan` drops the cached token
  when a request made with it came back 401, so the next request reads the file again
  (staging/src/k8s.io/client-go/transport/token_source.go, tokenSourceTransport.RoundTrip,
  kubernetes/kubernetes@094739447334af00866715eb08131d5c177e575b);
* an exec plugin is run again on a 401, unless another request has already rotated the
  credentials it used (plugin/pkg/client/auth/exec/exec.go, roundTripper.RoundTrip and
  maybeRefreshCreds, kubernetes/kubernetes@00ef64f0b9ada704be0fa99e6af3982fa490e8ef).

Here the same: on a 401 the credentials are loaded again the way they were loaded first (the
kubeconfig read again, which runs its exec plugin and reads its token file again; or the
service account's token file), once per set of refused credentials however many threads saw
the 401, and the request is tried once more with them. Credentials that come back the same
are not tried again: the API server would refuse them the same way.
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any, Callable

SERVICE_ACCOUNT_TOKEN = "/var/run/secrets/kubernetes.io/serviceaccount/token"


@dataclass(frozen=True)
class CredentialSource:
    """How the audit's credentials were loaded: `load()` loads them again (a fresh
    `ApiClient`), `how` says in words what that does ("its exec plugin (aws) ran again")."""
    load: Callable[[], Any]
    how: str


def kubeconfig_user(configs: list[tuple[str, Any]], context: str | None) -> dict:
    """The user entry of `context` over merged kubeconfig files, as kubectl merges them: the
    first file that defines a name wins (client-go tools/clientcmd/loader.go Load)."""
    def first(section: str, name: str | None) -> dict:
        for _path, data in configs:
            for entry in (data or {}).get(section) or () if isinstance(data, dict) else ():
                if isinstance(entry, dict) and entry.get("name") == name:
                    return entry.get(section[:-1]) or {}
        return {}

    user = first("contexts", context).get("user")
    found = first("users", user)
    return found if isinstance(found, dict) else {}


def reloading_means(user: dict | None) -> str:
    """What loading the credentials again does, for the note the audit writes."""
    if user is None:
        return f"the service account token ({SERVICE_ACCOUNT_TOKEN}) was read again"
    if isinstance(user.get("exec"), dict):
        return f"its exec plugin ({os.path.basename(str(user['exec'].get('command', '?')))}) ran again"
    if user.get("tokenFile"):
        return f"its token file ({user['tokenFile']}) was read again"
    if isinstance(user.get("auth-provider"), dict):
        return f"its auth provider ({user['auth-provider'].get('name', '?')}) was asked again"
    return "the kubeconfig was read again"


def identity(api_client: Any) -> tuple:
    """What the API server authenticates: the bearer token, and the client certificate an
    exec plugin may give instead (its file's bytes: each load writes a new temporary file)."""
    configuration = api_client.configuration
    files = []
    for path in (configuration.cert_file, configuration.key_file):
        try:
            with open(path, "rb") as fh:
                files.append(fh.read())
        except (OSError, TypeError):
            files.append(None)
    return (tuple(sorted((configuration.api_key or {}).items())), *files)


__all__ = ["CredentialSource", "SERVICE_ACCOUNT_TOKEN", "identity", "kubeconfig_user", "reloading_means"]
