"""The API server, read through the `kubernetes` Python client with the user's kubeconfig (or
the pod's service account in-cluster), without the client's model objects.

Every call goes through `ApiClient.call_api` and the raw body is decoded with `json.loads`
into plain dicts: the generated models would cost several times the memory of the JSON for
50,000 pods. Errors are turned into one line each: `ApiError` carries the API server's
`Status` message (apimachinery/pkg/apis/meta/v1/types.go Status: reason, message, code), or
the plain text some answers are (the max-in-flight filter's 429, a kubelet's own 403 passed
through the node proxy); `Unreachable` says in words what urllib3 reports as
`HTTPSConnectionPool(...): Read timed out` and the like.

Retries follow client-go (staging/src/k8s.io/client-go/rest/request.go `request` and
rest/with_retry.go): a GET is retried after a connection reset or an answer that ends before
its body (`IsConnectionReset`, `IsProbableEOF`), and after a 429 or 5xx, sleeping at least
the Retry-After the server sent. client-go retries a 5xx only when it carries Retry-After; a
list page is retried on any 5xx here, because one failed page would otherwise lose the whole
list. The waits come from `kubernetes.utils.retry` (the client's 1:1 port of client-go's
wait.Backoff and rest.WithRetry): exponential, with jitter, never shorter than Retry-After.
"""
from __future__ import annotations

import json
import re
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Callable

from kubernetes.utils.retry import Backoff, on_retry_after_error

DEFAULT_PAGE_SIZE = 500
DEFAULT_REQUEST_TIMEOUT = 10.0
# A list page: up to 5 attempts, waiting about 0.25, 0.5, 1 and 2 s (plus up to half again of
# jitter) or the server's Retry-After when longer.
LIST_BACKOFF = Backoff(steps=5, duration=0.25, factor=2.0, jitter=0.5)
# A kubelet's configz through the node proxy: one more attempt after a reset or a 429, none
# after a timeout (a kubelet that did not answer in time will not answer the second time
# either, and every attempt costs the whole timeout).
CONFIGZ_BACKOFF = Backoff(steps=2, duration=0.25, factor=2.0, jitter=0.5)


class ClusterError(Exception):
    """Nothing can be read: no usable kubeconfig, the API server unreachable, credentials
    refused. The command exits 2 with this one line."""


class ApiError(Exception):
    """The API server answered with an error status: a `Status` object (`from_status`), or
    plain text (a kubelet's own error passed through the node proxy, the 429 of the
    max-in-flight filter)."""

    def __init__(self, status: int, reason: str, message: str, *, is_status: bool = True,
                 headers: dict[str, str] | None = None) -> None:
        super().__init__(message)
        self.status, self.reason, self.message = status, reason, message
        self.is_status = is_status
        self.headers = headers or {}      # Retry-After is read from here (kubernetes.utils.retry)

    def line(self) -> str:
        return f"{self.status} {self.reason}: {self.message}" if self.reason else \
            f"{self.status}: {self.message}"


class Unreachable(Exception):
    """No HTTP answer: the connection was refused or reset, TLS failed, or no answer came
    within the request timeout. `kind` is one of timeout, reset, refused, tls, other."""

    def __init__(self, kind: str, detail: str, timeout: float | None = None) -> None:
        super().__init__(detail)
        self.kind, self.detail, self.timeout = kind, detail, timeout

    def __str__(self) -> str:
        return self.detail


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


def status_error(status: int, body: Any, headers: dict[str, str] | None = None) -> ApiError:
    text = body.decode("utf-8", "replace") if isinstance(body, bytes) else str(body or "")
    try:
        data = json.loads(text)
    except ValueError:
        data = None
    if isinstance(data, dict) and data.get("kind") == "Status":
        return ApiError(status, str(data.get("reason") or ""), str(data.get("message") or "").strip(),
                        headers=headers)
    first = text.strip().splitlines()[0] if text.strip() else "(no body)"
    return ApiError(status, "", first[:300], is_status=False, headers=headers)


def seconds(value: float) -> str:
    """10.0 -> "10 s", 2.5 -> "2.5 s"."""
    return f"{value:g} s"


def describe_unreachable(exc: BaseException, timeout: float | None) -> Unreachable:
    """What went wrong, in words, from urllib3's exception (its message names the pool and
    repeats itself: `HTTPSConnectionPool(host=..., port=...): Read timed out. (read
    timeout=20)`)."""
    from urllib3 import exceptions as u3

    inner = getattr(exc, "reason", None) if isinstance(exc, u3.MaxRetryError) else exc
    inner = inner or exc
    if isinstance(inner, u3.NameResolutionError):
        return Unreachable("refused", f"cannot resolve the host name: {_one_line(inner).split(': ')[-1]}")
    if isinstance(inner, u3.NewConnectionError):     # a ConnectTimeoutError subclass, checked first
        text = re.sub(r"^<[^>]*>: ", "", _one_line(inner)).split("Failed to establish a new connection: ", 1)[-1]
        return Unreachable("refused", re.sub(r"^\[Errno -?\d+\] ", "", text)[:300])
    if isinstance(inner, (u3.ReadTimeoutError, u3.ConnectTimeoutError, TimeoutError)):
        what = "no connection" if isinstance(inner, u3.ConnectTimeoutError) else "no answer"
        return Unreachable("timeout", f"{what} within {seconds(timeout)}" if timeout else what, timeout)
    if isinstance(inner, u3.SSLError):
        return Unreachable("tls", f"TLS: {_one_line(getattr(inner, 'reason', None) or inner)}")
    if isinstance(inner, (u3.ProtocolError, ConnectionResetError, BrokenPipeError)):
        cause = inner.args[1] if isinstance(inner, u3.ProtocolError) and len(inner.args) > 1 else inner
        if isinstance(cause, ConnectionResetError) or "reset" in str(cause).lower():
            return Unreachable("reset", "the connection to the API server was reset before the answer was complete")
        return Unreachable("reset", "the API server closed the connection before the answer was complete")
    if isinstance(inner, ConnectionRefusedError):
        return Unreachable("refused", _one_line(inner))
    return Unreachable("other", _one_line(inner))


class Cluster:
    """One API server connection. Thread-safe for concurrent GETs (urllib3's pool)."""

    def __init__(self, api_client: Any, *, page_size: int = DEFAULT_PAGE_SIZE,
                 request_timeout: float = DEFAULT_REQUEST_TIMEOUT, server: str = "") -> None:
        self.api = api_client
        self.page_size = page_size
        self.request_timeout = request_timeout
        self.server = server
        self.timing = Timing()

    # -- one GET -----------------------------------------------------------------------
    def get_json(self, path: str, query: list[tuple[str, Any]] | None = None) -> Any:
        """The decoded JSON of one GET. Raises ApiError (an error answer) or Unreachable."""
        from kubernetes.client.exceptions import ApiException
        from urllib3.exceptions import HTTPError

        started = time.perf_counter()
        try:
            status, body, headers = self._get(path, query or [])
        except ApiException as exc:
            if not exc.status:           # the client reports TLS failures as status 0
                raise Unreachable("tls", f"TLS: {_one_line(Exception(exc.reason))}") from None
            raise status_error(exc.status, exc.body, dict(exc.headers or {})) from None
        except (HTTPError, OSError) as exc:
            raise describe_unreachable(exc, self.request_timeout) from None
        finally:
            self.timing.add(time.perf_counter() - started)
        if not 200 <= status <= 299:
            raise status_error(status, body, headers)
        try:
            return json.loads(body)
        except ValueError:
            raise ApiError(200, "", f"{path}: the answer is not JSON") from None

    def _get(self, path: str, query: list) -> tuple[int, bytes, dict[str, str]]:
        """(status, raw body, headers) of one GET, the response never turned into model
        objects. kubernetes >= 31 serializes with `param_serialize` and `call_api` returns the
        raw response without checking its status."""
        method, url, headers, _body, _post = self.api.param_serialize(
            "GET", path, query_params=query, header_params={"Accept": "application/json"},
            auth_settings=["BearerToken"])
        response = self.api.call_api(method, url, header_params=headers,
                                     _request_timeout=self.request_timeout)
        return response.status, response.read(), dict(response.getheaders() or {})

    def get_with_retries(self, path: str, query: list[tuple[str, Any]] | None, *, backoff: Backoff,
                         retriable: Callable[[Exception], bool],
                         on_retry: Callable[[Exception], None] | None = None) -> Any:
        """get_json, tried again after the errors `retriable` accepts (see the module doc)."""
        def attempt_is_retriable(exc: Exception) -> bool:
            again = retriable(exc)
            if again and on_retry is not None:
                on_retry(exc)
            return again

        return on_retry_after_error(backoff, attempt_is_retriable, lambda: self.get_json(path, query))


def list_retriable(exc: Exception) -> bool:
    """A list page is read again after a 429, a 5xx, a reset or a timeout."""
    if isinstance(exc, ApiError):
        return exc.status == 429 or 500 <= exc.status <= 599
    return isinstance(exc, Unreachable) and exc.kind in ("reset", "timeout")


def configz_retriable(exc: Exception) -> bool:
    """A configz read is tried once more after a 429 (the API server's throttling) or a reset
    of the connection to the API server; never after a timeout or the node proxy's 503."""
    if isinstance(exc, ApiError):
        return exc.status == 429
    return isinstance(exc, Unreachable) and exc.kind == "reset"


def connect(kubeconfig: str | None = None, context: str | None = None, *,
            page_size: int = DEFAULT_PAGE_SIZE, pool_size: int = 32,
            request_timeout: float = DEFAULT_REQUEST_TIMEOUT) -> Cluster:
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
    # urllib3 retries nothing: the retries are ours (above), so a hung kubelet costs one
    # timeout, not two, and every error reaches us as what it is.
    configuration.retries = False
    return Cluster(client.ApiClient(configuration), page_size=page_size,
                   request_timeout=request_timeout, server=configuration.host)


def _one_line(exc: BaseException) -> str:
    text = " ".join(str(exc).split())
    return text[:300] or type(exc).__name__
