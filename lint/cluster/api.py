"""The API server, read through the `kubernetes` Python client with the user's kubeconfig (or
the pod's service account in-cluster), without the client's model objects.

Every call goes through `ApiClient.call_api(..., _preload_content=False)` and the body is
decoded with `json.loads` into plain dicts: the generated models would cost several times the
memory of the JSON for 50,000 pods. Lists are read page by page (`limit` + `continue`, the
API server's chunking, staging/src/k8s.io/apiserver/pkg/storage/cacher and
apimachinery/pkg/apis/meta/v1/types.go ListMeta.Continue), and each page is trimmed before the
next is read. Errors are turned into one line each: `ApiError` carries the API server's
`Status` message (apimachinery/pkg/apis/meta/v1/types.go Status: reason, message, code).
"""
from __future__ import annotations

import json
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator

DEFAULT_PAGE_SIZE = 500
# (connect, read) seconds: an unreachable node proxy must not hang the audit.
REQUEST_TIMEOUT = (10, 60)


class ClusterError(Exception):
    """Nothing can be read: no usable kubeconfig, the API server unreachable, credentials
    refused. The command exits 2 with this one line."""


class ApiError(Exception):
    """The API server answered with an error status (a `Status` object, or plain text)."""

    def __init__(self, status: int, reason: str, message: str) -> None:
        super().__init__(message)
        self.status, self.reason, self.message = status, reason, message

    def line(self) -> str:
        return f"{self.status} {self.reason}: {self.message}" if self.reason else \
            f"{self.status}: {self.message}"


class Unreachable(Exception):
    """The connection failed (refused, timed out, TLS)."""


@dataclass
class Timing:
    """Seconds spent waiting on the API server (summed over threads) and requests made."""
    waiting: float = 0.0
    requests: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def add(self, seconds: float) -> None:
        with self.lock:
            self.waiting += seconds
            self.requests += 1


def _status_error(status: int, body: Any) -> ApiError:
    text = body.decode("utf-8", "replace") if isinstance(body, bytes) else str(body or "")
    try:
        data = json.loads(text)
    except ValueError:
        data = None
    if isinstance(data, dict) and data.get("kind") == "Status":
        return ApiError(status, str(data.get("reason") or ""), str(data.get("message") or "").strip())
    first = text.strip().splitlines()[0] if text.strip() else "(no body)"
    return ApiError(status, "", first[:300])


class Cluster:
    """One API server connection. Thread-safe for concurrent GETs (urllib3's pool)."""

    def __init__(self, api_client: Any, *, page_size: int = DEFAULT_PAGE_SIZE) -> None:
        self.api = api_client
        self.page_size = page_size
        self.timing = Timing()

    # -- raw GET -------------------------------------------------------------------------
    def get_json(self, path: str, query: list[tuple[str, Any]] | None = None,
                 timeout: tuple[int, int] = REQUEST_TIMEOUT) -> Any:
        from kubernetes.client.exceptions import ApiException
        from urllib3.exceptions import HTTPError

        started = time.perf_counter()
        try:
            status, body = self._get(path, query or [], timeout)
        except ApiException as exc:
            if not exc.status:           # the client reports TLS failures as status 0
                raise Unreachable(_one_line(Exception(exc.reason))) from None
            raise _status_error(exc.status, exc.body) from None
        except HTTPError as exc:
            raise Unreachable(_reason(exc)) from None
        except OSError as exc:
            raise Unreachable(str(exc)) from None
        finally:
            self.timing.add(time.perf_counter() - started)
        if not 200 <= status <= 299:
            raise _status_error(status, body)
        try:
            return json.loads(body)
        except ValueError:
            raise ApiError(200, "", f"{path}: the answer is not JSON") from None

    def _get(self, path: str, query: list, timeout) -> tuple[int, bytes]:
        """(status, raw body) of one GET, the response never turned into model objects.
        kubernetes >= 31 serializes with `param_serialize` and `call_api` returns the raw
        response without checking its status; older clients take the path in `call_api`."""
        headers = {"Accept": "application/json"}
        if hasattr(self.api, "param_serialize"):
            method, url, headers, body, post = self.api.param_serialize(
                "GET", path, query_params=query, header_params=headers, auth_settings=["BearerToken"])
            response = self.api.call_api(method, url, header_params=headers, _request_timeout=timeout)
            return response.status, response.read()
        response = self.api.call_api(path, "GET", query_params=query, header_params=headers,
                                     auth_settings=["BearerToken"], _preload_content=False,
                                     _return_http_data_only=True, _request_timeout=timeout)
        return response.status, response.data

    # -- lists ---------------------------------------------------------------------------
    def list_items(self, path: str, keep: Callable[[dict], Any], *,
                   query: list[tuple[str, Any]] | None = None) -> list:
        """Every item of a list, page by page; `keep` trims each item as it arrives.
        A `continue` token that expired (410 Gone) restarts the list once."""
        for attempt in (1, 2):
            try:
                return list(self._pages(path, keep, query or []))
            except ApiError as exc:
                if exc.status != 410 or attempt == 2:
                    raise
        return []

    def _pages(self, path: str, keep, query) -> Iterator[Any]:
        token = None
        while True:
            params = [("limit", self.page_size), *query] + ([("continue", token)] if token else [])
            page = self.get_json(path, params)
            items = page.get("items") if isinstance(page, dict) else None
            for item in items or ():
                if isinstance(item, dict):
                    yield keep(item)
            meta = page.get("metadata") if isinstance(page, dict) else None
            token = meta.get("continue") if isinstance(meta, dict) else None
            if not token:
                return


def _reason(exc: Exception) -> str:
    """The innermost cause of a urllib3 error, without its object reprs and pool wrappers
    ("[Errno 111] Connection refused", "[SSL: CERTIFICATE_VERIFY_FAILED] ...")."""
    import re

    reason = getattr(exc, "reason", None) or exc
    text = " ".join(str(reason).split())
    text = re.sub(r"^<[^>]*>: ", "", text)
    text = text.split("Failed to establish a new connection: ", 1)[-1]
    return text[:300] or type(exc).__name__


def connect(kubeconfig: str | None = None, context: str | None = None, *,
            page_size: int = DEFAULT_PAGE_SIZE, pool_size: int = 32) -> Cluster:
    """A Cluster from a kubeconfig (`--kubeconfig`, else $KUBECONFIG / ~/.kube/config) or, in a
    pod without one, the service account (in-cluster config). Raises ClusterError."""
    import os

    from kubernetes import client, config
    from kubernetes.config.config_exception import ConfigException

    configuration = client.Configuration()
    default_file = os.path.expanduser(os.environ.get("KUBECONFIG", "~/.kube/config").split(os.pathsep)[0])
    in_cluster = kubeconfig is None and not os.path.exists(default_file) \
        and "KUBERNETES_SERVICE_HOST" in os.environ
    try:
        if in_cluster:
            config.load_incluster_config(client_configuration=configuration)
        else:
            if kubeconfig is not None and not os.path.isfile(kubeconfig):
                raise ClusterError(f"{kubeconfig}: no such kubeconfig file")
            config.load_kube_config(config_file=kubeconfig, context=context,
                                    client_configuration=configuration, persist_config=False)
    except ClusterError:
        raise
    except ConfigException as exc:
        raise ClusterError(f"kubeconfig: {_one_line(exc)}") from None
    except (OSError, ValueError, TypeError, KeyError) as exc:
        raise ClusterError(f"kubeconfig: {_one_line(exc)}") from None
    except Exception as exc:       # the client's YAML and exec-plugin errors have no common base
        raise ClusterError(f"kubeconfig: {type(exc).__name__}: {_one_line(exc)}") from None
    configuration.connection_pool_maxsize = pool_size
    configuration.retries = 1
    return Cluster(client.ApiClient(configuration), page_size=page_size)


def _one_line(exc: Exception) -> str:
    text = " ".join(str(exc).split())
    return text[:300] or type(exc).__name__
