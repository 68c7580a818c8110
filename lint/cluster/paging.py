"""Lists read page by page (`limit` + `continue`: the API server's chunking,
apimachinery/pkg/apis/meta/v1/types.go ListMeta.Continue), each page trimmed as it arrives,
with the next page fetched while the caller works on the current one.

A failed page is tried again (numaguard.lint.cluster.api LIST_BACKOFF) with the same
`continue` token, so a list resumes where it stopped. A token that expired (410 Expired: the
etcd3 store's "The provided continue parameter is too old to display a consistent list
result", staging/src/k8s.io/apiserver/pkg/storage/etcd3/store.go) restarts the list once
from the beginning, as client-go's pager falls back to a fresh list
(staging/src/k8s.io/client-go/tools/pager/pager.go, FullListIfExpired); the caller is told
so it can drop what it kept of the earlier pages.
"""
from __future__ import annotations

import queue
import threading
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator

from numaguard.lint.cluster.api import LIST_BACKOFF, ApiError, Cluster, Unreachable, list_retriable


@dataclass
class Page:
    items: list                 # trimmed by the caller's `keep`
    number: int                 # 1, 2, ... within the current run of the list
    restarted: bool = False     # first page after a 410 restart: drop what earlier pages gave


@dataclass
class ListFailed(Exception):
    """A page could not be read even after the retries: what went wrong, and how much of the
    list (since its last restart) had been read before: pages and items."""
    error: Exception
    pages: int
    items: int


@dataclass
class ListStats:
    """What reading one list took: pages, items, and the retriable failures met on the way
    (each retried unless it was the last attempt)."""
    pages: int = 0
    items: int = 0
    failures: list[Exception] = field(default_factory=list)
    restarts: int = 0


def list_pages(cluster: Cluster, path: str, keep: Callable[[dict], Any],
               query: list[tuple[str, Any]] | None = None, stats: ListStats | None = None) -> Iterator[Page]:
    """Every page of a list, items trimmed with `keep`. Raises ListFailed."""
    stats = stats if stats is not None else ListStats()
    token, number, restarted, items_read = None, 0, False, 0
    while True:
        params = [("limit", cluster.page_size), *(query or [])] + ([("continue", token)] if token else [])
        try:
            page = cluster.get_with_retries(path, params, backoff=LIST_BACKOFF, retriable=list_retriable,
                                            on_retry=stats.failures.append)
        except ApiError as exc:
            if exc.status == 410 and token and not stats.restarts:
                stats.restarts += 1
                token, number, restarted, items_read = None, 0, True, 0
                continue
            raise ListFailed(exc, number, items_read) from None
        except Unreachable as exc:
            raise ListFailed(exc, number, items_read) from None
        items = page.get("items") if isinstance(page, dict) else None
        kept = [keep(item) for item in items or () if isinstance(item, dict)]
        number += 1
        items_read += len(kept)
        stats.pages += 1
        stats.items += len(kept)
        yield Page(kept, number, restarted)
        restarted = False
        meta = page.get("metadata") if isinstance(page, dict) else None
        token = meta.get("continue") if isinstance(meta, dict) else None
        if not token:
            return


_DONE = object()


def prefetched(pages: Iterator[Page], depth: int = 1) -> Iterator[Page]:
    """The same pages, read by a background thread `depth` pages ahead, so that the API server
    prepares (and the socket receives) the next page while this thread judges the current one.
    An exception in the reader is raised here, after the pages it read before."""
    handoff: queue.Queue = queue.Queue(maxsize=depth)
    stop = threading.Event()

    def put(item: Any) -> bool:
        while not stop.is_set():
            try:
                handoff.put(item, timeout=0.1)
                return True
            except queue.Full:
                continue
        return False

    def read() -> None:
        try:
            for page in pages:
                if not put(page):
                    return
            put(_DONE)
        except BaseException as exc:       # handed over whole, raised in the caller's thread
            put(exc)

    reader = threading.Thread(target=read, name="numaguard-list-reader", daemon=True)
    reader.start()
    try:
        while True:
            item = handoff.get()
            if item is _DONE:
                return
            if isinstance(item, BaseException):
                raise item
            yield item
    finally:
        stop.set()
        reader.join(timeout=5)
