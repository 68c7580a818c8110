"""Prometheus's HTTP API, read for `numaguard compare`: range queries (GET /api/v1/query_range,
prometheus/web/api/v1/api.go queryRange; the answer's format is the documented
`{"status": "success", "data": {"resultType": "matrix", "result": [{"metric": {...}, "values":
[[t, "v"], ...]}]}, "warnings": [...]}`, and an error is `{"status": "error", "errorType":
..., "error": ...}` with 400 for a query Prometheus cannot parse or run (bad_data), 422 for one
it could not execute (execution), 503 when it timed out or was cancelled).

Errors become one line each: a query Prometheus refuses (400 bad_data, 422 execution) is `QueryRejected`
(the user's input: the command exits 2); everything else (no connection, a timeout, a 5xx, an answer that
is not Prometheus's) is `PrometheusUnavailable` (the comparison is then inconclusive). A read is
tried again after a reset, a timeout, a 429 or a 5xx, waiting as client-go waits
(kubernetes.utils.retry, as numaguard.lint.cluster.api does for the API server).
"""
from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from urllib.parse import urlencode, urlsplit

from kubernetes.utils.retry import Backoff, on_retry_after_error

from numaguard.lint.compare.series import Series

RANGE_BACKOFF = Backoff(steps=3, duration=0.5, factor=2.0, jitter=0.5)
MAX_POINTS = 11000        # api.go: "exceeded maximum resolution of 11,000 points per timeseries"


class QueryRejected(Exception):
    """Prometheus answered that the query is wrong (bad_data)."""


class PrometheusUnavailable(Exception):
    """No usable answer: `kind` is refused, timeout, reset, tls, http (an error status), other."""

    def __init__(self, kind: str, message: str, *, status: int = 0, error_type: str = "",
                 headers: dict[str, str] | None = None) -> None:
        super().__init__(message)
        self.kind, self.status, self.error_type = kind, status, error_type
        self.headers = headers or {}       # Retry-After is read from here (kubernetes.utils.retry)


def _one_line(exc: BaseException) -> str:
    return " ".join(str(exc).split())[:300] or type(exc).__name__


@dataclass
class Prometheus:
    """One Prometheus (or Thanos Querier, Mimir, VictoriaMetrics: the same API) at `url`."""
    url: str
    timeout: float = 30.0
    token: str | None = None                 # a bearer token (OpenShift's Thanos Querier needs one)
    ca_file: str | None = None
    backoff: Backoff = RANGE_BACKOFF
    pool: object = field(default=None, repr=False)

    def __post_init__(self) -> None:
        import urllib3

        parts = urlsplit(self.url)
        if parts.scheme not in ("http", "https") or not parts.netloc:
            raise ValueError(f"{self.url!r}: the Prometheus URL must be http:// or https:// with a host")
        self.url = self.url.rstrip("/")
        kwargs = {"ca_certs": self.ca_file} if self.ca_file else {}
        # urllib3 retries nothing: the retries are ours, so each error reaches us as what it is
        self.pool = urllib3.PoolManager(retries=False, timeout=urllib3.Timeout(total=self.timeout),
                                        maxsize=8, **kwargs)

    def query_range(self, query: str, start: float, end: float, step: float) -> tuple[list[Series], list[str]]:
        """(series, Prometheus's warnings) of one range query."""
        if (end - start) / step + 1 > MAX_POINTS:
            raise QueryRejected(f"a {end - start:g} s window at a {step:g} s step is more than Prometheus's "
                                f"{MAX_POINTS} points per series: take a longer --step")
        params = {"query": query, "start": f"{start:.3f}", "end": f"{end:.3f}", "step": f"{step:g}"}
        body = on_retry_after_error(self.backoff, _retriable, lambda: self._get("/api/v1/query_range", params))
        data = body.get("data")
        if not isinstance(data, dict) or data.get("resultType") != "matrix" or not isinstance(data.get("result"), list):
            raise PrometheusUnavailable("other", f"{self.url}: the answer to a range query is not a matrix")
        return [_series(item) for item in data["result"]], [str(w) for w in body.get("warnings") or []]

    def _get(self, path: str, params: dict[str, str]) -> dict:
        from urllib3 import exceptions as u3

        headers = {"Accept": "application/json"}
        if self.token:
            headers["Authorization"] = f"Bearer {self.token}"
        try:
            response = self.pool.request("GET", f"{self.url}{path}?{urlencode(params)}", headers=headers)
        except u3.NameResolutionError:
            raise PrometheusUnavailable("refused", f"{self.url}: cannot resolve the host name "
                                        f"{urlsplit(self.url).hostname}") from None
        except u3.NewConnectionError as e:
            raise PrometheusUnavailable("refused", f"{self.url}: cannot connect: {_reason(e)}") from None
        except (u3.ConnectTimeoutError, u3.ReadTimeoutError, TimeoutError):
            raise PrometheusUnavailable("timeout", f"{self.url}: no answer within {self.timeout:g} s") from None
        except u3.SSLError as e:
            raise PrometheusUnavailable("tls", f"{self.url}: TLS: {_one_line(e)}") from None
        except (u3.ProtocolError, ConnectionError) as e:
            raise PrometheusUnavailable("reset", f"{self.url}: the connection closed before the answer "
                                        f"was complete ({_one_line(e)})") from None
        except (u3.HTTPError, OSError) as e:
            raise PrometheusUnavailable("other", f"{self.url}: {_one_line(e)}") from None
        return _decode(self.url, response.status, response.data, dict(response.headers))


def _reason(exc: BaseException) -> str:
    text = _one_line(exc)
    return text.split("Failed to establish a new connection: ", 1)[-1]


def _decode(url: str, status: int, raw: bytes, headers: dict[str, str]) -> dict:
    try:
        body = json.loads(raw)
    except ValueError:
        body = None
    if isinstance(body, dict) and body.get("status") == "error":
        message = f"{body.get('errorType', 'error')}: {body.get('error', '')}".strip()
        if (status, body.get("errorType")) in ((400, "bad_data"), (422, "execution")):
            raise QueryRejected(str(body.get("error", "")).strip() or message)
        raise PrometheusUnavailable("http", f"{url}: HTTP {status}: {message}", status=status,
                                    error_type=str(body.get("errorType", "")), headers=headers)
    if not 200 <= status <= 299:
        first = raw.decode("utf-8", "replace").strip().splitlines()[:1]
        raise PrometheusUnavailable("http", f"{url}: HTTP {status}: {first[0][:300] if first else '(no body)'}",
                                    status=status, headers=headers)
    if not isinstance(body, dict) or body.get("status") != "success":
        raise PrometheusUnavailable("other", f"{url}: the answer is not Prometheus's API (no JSON with "
                                    "status success): is the URL the Prometheus server's?")
    return body


def _retriable(exc: Exception) -> bool:
    if not isinstance(exc, PrometheusUnavailable):
        return False
    if exc.kind == "http":       # a query that timed out in Prometheus would time out again
        return (exc.status == 429 or exc.status >= 500) and exc.error_type not in ("timeout", "canceled")
    return exc.kind == "reset"     # a timeout costs the whole timeout: not tried again


def _series(item: object) -> Series:
    if not isinstance(item, dict) or not isinstance(item.get("values"), list):
        raise PrometheusUnavailable("other", "a series of the answer has no values")
    labels = tuple(sorted((str(k), str(v)) for k, v in (item.get("metric") or {}).items()))
    points = []
    for pair in item["values"]:
        try:
            t, v = float(pair[0]), _number(pair[1])
        except (TypeError, ValueError, IndexError):
            raise PrometheusUnavailable("other", f"a point of the answer is not [time, \"value\"]: {pair!r}") from None
        points.append((t, v))
    return Series(labels, tuple(points))


def _number(text: str) -> float:
    """Prometheus writes values as strings, with NaN, +Inf and -Inf spelt so."""
    value = float(text)
    return value if math.isfinite(value) or math.isinf(value) else math.nan


def read_groups(prometheus: Prometheus, metrics, selectors: dict, window, interval: str, *, workers: int = 4):
    """Every metric's range query for every group, a few at a time: ({metric name: {group:
    GroupRead}}, Prometheus's warnings). An unavailable Prometheus leaves the reads with their
    error; a query Prometheus rejects raises QueryRejected naming the metric."""
    from concurrent.futures import ThreadPoolExecutor

    from numaguard.lint.compare.comparison import GroupRead

    def one(job):
        metric, group = job
        query = metric.render(selectors[group].text, interval)
        try:
            series, warnings = prometheus.query_range(query, window.start, window.end, window.step)
        except PrometheusUnavailable as e:
            return metric.name, group, GroupRead(query, error=str(e)), []
        except QueryRejected as e:
            raise QueryRejected(f"{metric.name}: Prometheus rejected the query {query!r}: {e}") from None
        return metric.name, group, GroupRead(query, tuple(series)), warnings

    jobs = [(m, g) for m in metrics for g in selectors]
    reads: dict[str, dict] = {m.name: {} for m in metrics}
    warnings: list[str] = []
    with ThreadPoolExecutor(max_workers=workers) as pool:
        for name, group, read, said in pool.map(one, jobs):
            reads[name][group] = read
            warnings += [w for w in said if w not in warnings]
    return reads, warnings
