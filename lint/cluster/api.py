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

Retry-After is honoured, never cut short, but it is bounded: client-go runs all the attempts of
one request under one context whose deadline is the request timeout, so a retry that would
start after it is not made (rest/request.go `request`, rest/with_retry.go `Before`: "If the
request context is already canceled there is no need to retry"). Here the waits the server
imposes on one request (a Retry-After longer than our own backoff) add up to at most
`--request-timeout`, and no wait runs past the audit's own deadline (`--timeout`): a server
that asks for more is not asked again, and the failure says how long it asked to wait.

A 401 is answered by loading the credentials again and trying once more
(numaguard.lint.cluster.credentials, as client-go does).
"""
from __future__ import annotations

import json
import logging
import re
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Callable

from kubernetes.utils.retry import Backoff, on_retry_after_error, retry_after_seconds

from numaguard.lint.cluster.credentials import CredentialSource, identity, kubeconfig_user, reloading_means

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
                 headers: dict[str, str] | None = None, details: dict | None = None) -> None:
        super().__init__(message)
        self.status, self.reason, self.message = status, reason, message
        self.is_status = is_status
        self.headers = headers or {}      # Retry-After is read from here (kubernetes.utils.retry)
        self.details = details or {}      # the Status' details: the object's kind and name
        self.gave_up = ""                 # why it was not retried although it could have been

    def is_not_found(self, kind: str, name: str) -> bool:
        """The API server's own 404 for the object `kind`/`name` (a `Status` whose details name
        it: apimachinery pkg/api/errors NewNotFound), not a 404 some other server passed on."""
        return (self.status == 404 and self.is_status and self.reason == "NotFound"
                and self.details.get("kind") == kind and self.details.get("name") == name)

    def line(self) -> str:
        return f"{self.status} {self.reason}: {self.message}" if self.reason else \
            f"{self.status}: {self.message}"


class Unreachable(Exception):
    """No HTTP answer: the connection was refused or reset, TLS failed, or no answer came
    within the request timeout. `kind` is one of timeout, reset, refused, tls, other."""

    def __init__(self, kind: str, detail: str, timeout: float | None = None) -> None:
        super().__init__(detail)
        self.kind, self.detail, self.timeout = kind, detail, timeout
        self.gave_up = ""

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
        details = data.get("details")
        return ApiError(status, str(data.get("reason") or ""), str(data.get("message") or "").strip(),
                        headers=headers, details=details if isinstance(details, dict) else None)
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
    """One API server connection. Thread-safe for concurrent GETs (urllib3's pool).

    `credentials`: how to load the credentials again after a 401 (None: never);
    `deadline`: the audit's own deadline (time.monotonic(), None: none), `deadline_text` how the
    user gave it; `notify`: where notes on what happened go (a 401 answered by new credentials).
    """

    def __init__(self, api_client: Any, *, page_size: int = DEFAULT_PAGE_SIZE,
                 request_timeout: float = DEFAULT_REQUEST_TIMEOUT, server: str = "",
                 credentials: CredentialSource | None = None) -> None:
        self.api = api_client
        self.page_size = page_size
        self.request_timeout = request_timeout
        self.server = server
        self.timing = Timing()
        self.credentials = credentials
        self.deadline: float | None = None
        self.deadline_text = ""
        self.answered = 0                 # requests the API server answered with a success
        self.notify: Callable[[str], None] = lambda note: None
        self._renewing = threading.Lock()
        self._refused: Any = None         # the ApiClient whose credentials were refused for good

    def set_deadline(self, seconds_from_now: float | None) -> None:
        self.deadline = None if seconds_from_now is None else time.monotonic() + seconds_from_now
        self.deadline_text = "" if seconds_from_now is None else seconds(seconds_from_now)

    def _past_deadline(self) -> Unreachable:
        return Unreachable("deadline", f"not read before the audit's deadline (--timeout {self.deadline_text})")

    # -- one GET -----------------------------------------------------------------------
    def get_json(self, path: str, query: list[tuple[str, Any]] | None = None) -> Any:
        """The decoded JSON of one GET. Raises ApiError (an error answer) or Unreachable. A
        401 is tried once more with credentials loaded again (module doc)."""
        api = self.api
        status, body, headers = self._timed_get(api, path, query or [])
        if status == 401 and self._renewed(api, status_error(status, body, headers)):
            status, body, headers = self._timed_get(self.api, path, query or [])
        if not 200 <= status <= 299:
            raise status_error(status, body, headers)
        with self.timing.lock:
            self.answered += 1
        try:
            return json.loads(body)
        except ValueError:
            raise ApiError(200, "", f"{path}: the answer is not JSON") from None

    def _timed_get(self, api: Any, path: str, query: list) -> tuple[int, bytes, dict[str, str]]:
        """(status, raw body, headers) of one GET, within the request timeout and what is left
        of the audit's deadline; a failure to get an answer raised as Unreachable."""
        from kubernetes.client.exceptions import ApiException
        from urllib3.exceptions import HTTPError

        timeout, capped = self.request_timeout, False
        if self.deadline is not None:
            left = self.deadline - time.monotonic()
            if left <= 0:
                raise self._past_deadline()
            timeout, capped = min(timeout, left), left < timeout
        started = time.perf_counter()
        try:
            return self._get(api, path, query, timeout)
        except ApiException as exc:
            if not exc.status:           # the client reports TLS failures as status 0
                raise Unreachable("tls", f"TLS: {_one_line(Exception(exc.reason))}") from None
            return exc.status, exc.body, dict(exc.headers or {})
        except (HTTPError, OSError) as exc:
            failure = describe_unreachable(exc, timeout)
            raise (self._past_deadline() if capped and failure.kind == "timeout" else failure) from None
        finally:
            self.timing.add(time.perf_counter() - started)

    def _get(self, api: Any, path: str, query: list, timeout: float) -> tuple[int, bytes, dict[str, str]]:
        """(status, raw body, headers) of one GET, the response never turned into model
        objects. kubernetes >= 31 serializes with `param_serialize` and `call_api` returns the
        raw response without checking its status."""
        method, url, headers, _body, _post = api.param_serialize(
            "GET", path, query_params=query, header_params={"Accept": "application/json"},
            auth_settings=["BearerToken"])
        if "authorization" in headers:
            # A token file is read as client-go reads it, without the whitespace around the
            # token (transport/token_source.go fileTokenSource.Token, strings.TrimSpace); the
            # Python client would send a `tokenFile`'s trailing newline, which http.client refuses.
            headers["authorization"] = headers["authorization"].strip()
        response = api.call_api(method, url, header_params=headers, _request_timeout=timeout)
        return response.status, response.read(), dict(response.getheaders() or {})

    def _renewed(self, refused_by: Any, refusal: ApiError) -> bool:
        """After a 401 from the API server: whether there are new credentials to try, loading
        them once for all the threads that saw the same ones refused."""
        if not refusal.is_status or self.credentials is None:
            return False
        with self._renewing:
            if self.api is not refused_by:        # another thread has loaded new ones already
                return True
            if self._refused is refused_by:       # loaded again already: they came back the same
                return False
            self._refused = refused_by
            try:
                fresh = self.credentials.load()
            except Exception as exc:              # the kubeconfig, the exec plugin, the token file
                self.notify(f"the API server refused the credentials ({refusal.line()}); loading them "
                            f"again failed: {_one_line(exc)}")
                return False
            if identity(fresh) == identity(refused_by):
                self.notify(f"the API server refused the credentials ({refusal.line()}); "
                            f"{self.credentials.how} and gave the same credentials")
                return False
            self.api = fresh
            self.notify(f"the API server refused the credentials ({refusal.line()}); {self.credentials.how} "
                        "and the audit went on with the new ones")
            return True

    def get_with_retries(self, path: str, query: list[tuple[str, Any]] | None, *, backoff: Backoff,
                         retriable: Callable[[Exception], bool],
                         on_retry: Callable[[Exception], None] | None = None) -> Any:
        """get_json, tried again after the errors `retriable` accepts, waiting as the module
        doc says; an error not retried for the wait it asked for says so in `gave_up`."""
        last: list[Exception] = []
        imposed = 0.0

        def attempt_is_retriable(exc: Exception) -> bool:
            again = retriable(exc)
            if again:
                last[:] = [exc]
                if on_retry is not None:
                    on_retry(exc)
            return again

        def wait(delay: float) -> None:
            nonlocal imposed
            asked = retry_after_seconds(last[0])
            if asked is not None and asked >= delay:
                if imposed + delay > self.request_timeout:
                    raise _WaitRefused(last[0], f"the API server asked to wait {seconds(asked)} (Retry-After), "
                                                f"past what --request-timeout {seconds(self.request_timeout)} "
                                                "allows one request to wait")
                imposed += delay
            if self.deadline is not None and time.monotonic() + delay >= self.deadline:
                raise _WaitRefused(last[0], f"waiting {seconds(round(delay, 2))} more would pass the audit's "
                                            f"deadline (--timeout {self.deadline_text})")
            time.sleep(delay)

        try:
            return on_retry_after_error(backoff, attempt_is_retriable, lambda: self.get_json(path, query),
                                        sleep_func=wait)
        except _WaitRefused as refused:
            refused.error.gave_up = str(refused)
            raise refused.error from None


class _WaitRefused(Exception):
    """A retry not made: the wait before it is more than the request or the audit may wait
    (why, in words); `error` is what the last attempt met."""

    def __init__(self, error: Exception, why: str) -> None:
        super().__init__(why)
        self.error = error


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


def kubeconfig_files(environ: dict[str, str] | None = None) -> list[str]:
    """The kubeconfig files kubectl reads when no --kubeconfig is given, in precedence order:
    $KUBECONFIG's entries (split on the path-list separator, duplicates and empty entries
    dropped), or ~/.kube/config when $KUBECONFIG is unset or empty (client-go
    tools/clientcmd/loader.go, NewDefaultClientConfigLoadingRules)."""
    import os

    environ = os.environ if environ is None else environ
    listed = environ.get("KUBECONFIG", "")
    if not listed:
        return [os.path.expanduser("~/.kube/config")]
    return list(dict.fromkeys(os.path.expanduser(p) for p in listed.split(os.pathsep) if p))


def _readable_configs(files: list[str]) -> list[tuple[str, Any]]:
    """(file, parsed YAML) of the files that exist and are not empty: client-go skips a
    missing file and reads an empty one as an empty configuration (loader.go Load and
    Load(data)); the Python client refuses an empty one, so those are left out here. A file
    that cannot be read or parsed is kept (None) for the client to report."""
    import yaml

    found = []
    for path in files:
        try:
            with open(path, "rb") as fh:
                raw = fh.read()
        except FileNotFoundError:
            continue
        except OSError:
            found.append((path, None))
            continue
        if not raw.strip():
            continue
        try:
            found.append((path, yaml.safe_load(raw)))
        except yaml.YAMLError:
            found.append((path, None))
    return found


def kubectl_current_context(configs: list[tuple[str, Any]]) -> str | None:
    """current-context over several kubeconfig files as kubectl takes it: from the first file
    that sets it. client-go merges the non-map fields in reverse order with override, and an
    empty value overrides nothing (loader.go Load, "merge all of the struct values in the
    reverse order"). The Python client's merger takes the last file's instead."""
    for _path, data in configs:
        if isinstance(data, dict) and isinstance(data.get("current-context"), str) and data["current-context"]:
            return data["current-context"]
    return None


def _in_cluster_possible() -> bool:
    """client-go tools/clientcmd/client_config.go inClusterClientConfig.Possible."""
    import os

    return bool(os.environ.get("KUBERNETES_SERVICE_HOST") and os.environ.get("KUBERNETES_SERVICE_PORT")
                and os.path.isfile("/var/run/secrets/kubernetes.io/serviceaccount/token"))


def connect(kubeconfig: str | None = None, context: str | None = None, *,
            page_size: int = DEFAULT_PAGE_SIZE, pool_size: int = 32,
            request_timeout: float = DEFAULT_REQUEST_TIMEOUT) -> Cluster:
    """A Cluster from a kubeconfig, found as kubectl finds it: `--kubeconfig` alone when given,
    else the files of $KUBECONFIG merged (or ~/.kube/config), with kubectl's current-context;
    or, in a pod where none of those holds a configuration, the service account (client-go
    tools/clientcmd/merged_client_builder.go DeferredLoadingClientConfig.ClientConfig: the
    in-cluster configuration only when the merged one is empty). The credentials can be
    loaded again the same way after a 401 (numaguard.lint.cluster.credentials). Raises
    ClusterError."""
    import os

    if kubeconfig is not None and not os.path.isfile(kubeconfig):
        raise ClusterError(f"{kubeconfig}: no such kubeconfig file")
    files = [kubeconfig] if kubeconfig is not None else kubeconfig_files()
    configs = _readable_configs(files)
    config_file = kubeconfig if kubeconfig is not None else os.pathsep.join(path for path, _data in configs)
    context = context or kubectl_current_context(configs)
    if not config_file and not _in_cluster_possible():
        raise ClusterError(_no_kubeconfig(files))
    user = kubeconfig_user(configs, context) if config_file else None

    def load() -> Any:
        return _api_client(config_file, context, pool_size)

    api_client = load()
    return Cluster(api_client, page_size=page_size, request_timeout=request_timeout,
                   server=api_client.configuration.host, credentials=CredentialSource(load, reloading_means(user)))


def _api_client(config_file: str, context: str | None, pool_size: int) -> Any:
    """A fresh ApiClient from the kubeconfig files (os.pathsep-joined), or the service account
    when there are none. Raises ClusterError."""
    from kubernetes import client, config
    from kubernetes.config.config_exception import ConfigException

    configuration = client.Configuration()
    # The client logs a failed exec plugin (kube_config.py _load_from_exec_plugin) and goes on
    # without credentials: the log record is kept to say so in one line.
    logged = _Records()
    logging.getLogger().addHandler(logged)
    try:
        if not config_file:
            config.load_incluster_config(client_configuration=configuration)
        else:
            config.load_kube_config(config_file=config_file, context=context,
                                    client_configuration=configuration, persist_config=False)
    except ConfigException as exc:
        raise ClusterError(f"kubeconfig: {_one_line(exc)}") from None
    except (OSError, ValueError, TypeError, KeyError) as exc:
        raise ClusterError(f"kubeconfig: {_one_line(exc)}") from None
    except Exception as exc:       # the client's YAML and exec-plugin errors have no common base
        raise ClusterError(f"kubeconfig: {type(exc).__name__}: {_one_line(exc)}") from None
    finally:
        logging.getLogger().removeHandler(logged)
    if logged.messages and not configuration.api_key and not configuration.cert_file:
        raise ClusterError(f"kubeconfig: no credentials: {_one_line(Exception(logged.messages[0]))}")
    configuration.connection_pool_maxsize = pool_size
    # urllib3 retries nothing: the retries are ours (above), so a hung kubelet costs one
    # timeout, not two, and every error reaches us as what it is.
    configuration.retries = False
    return client.ApiClient(configuration)


class _Records(logging.Handler):
    """The messages of the error records logged while it is installed (on this thread)."""

    def __init__(self) -> None:
        super().__init__(logging.ERROR)
        self.thread = threading.get_ident()
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        if record.thread == self.thread:
            self.messages.append(record.getMessage())


def _no_kubeconfig(files: list[str]) -> str:
    import os

    if os.environ.get("KUBECONFIG"):
        return (f"no kubeconfig: none of the files $KUBECONFIG names holds a configuration "
                f"({', '.join(files)}); give --kubeconfig FILE")
    return f"no kubeconfig: {files[0]} does not exist; give --kubeconfig FILE or set KUBECONFIG"


def _one_line(exc: BaseException) -> str:
    text = " ".join(str(exc).split())
    return text[:300] or type(exc).__name__
