"""The node agents' /metrics read directly, step after step over the window, for `numaguard
compare` without a Prometheus server: every agent is read at each step (all at once, each read
bounded by a timeout), and the samples of numaguard's container series are kept, parsed with
prometheus_client's parser of the text exposition format. A read that fails leaves a hole at
that step (a gap of that agent's containers), never a zero."""
from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Callable
from urllib.parse import urlsplit

from numaguard.lint.compare.series import Scrape

KEPT_PREFIX = "numaguard_container_"


class AgentUrlError(ValueError):
    """An --agent URL the command cannot use (exit 2)."""


def agent_url(text: str) -> str:
    parts = urlsplit(text)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise AgentUrlError(f"{text!r}: an agent's URL is http://HOST:PORT[/metrics]")
    return text if parts.path not in ("", "/") else text.rstrip("/") + "/metrics"


def parse_exposition(text: str, prefix: str = KEPT_PREFIX) -> dict:
    """(sample name, sorted labels) -> value, for the samples whose name starts with `prefix`.
    Raises ValueError on text that is not the exposition format."""
    from prometheus_client.parser import text_string_to_metric_families

    out = {}
    for family in text_string_to_metric_families(text):
        if not family.name.startswith(prefix):
            continue
        for sample in family.samples:
            out[(sample.name, tuple(sorted(sample.labels.items())))] = float(sample.value)
    return out


@dataclass
class AgentSampler:
    urls: list[str]
    timeout: float = 5.0
    clock: Callable[[], float] = time.monotonic
    sleep: Callable[[float], None] = time.sleep
    failures: dict[str, list[str]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        import urllib3

        self.pool = urllib3.PoolManager(retries=False, timeout=urllib3.Timeout(total=self.timeout),
                                        maxsize=max(4, len(self.urls)))

    def read(self, url: str) -> Scrape | None:
        from urllib3 import exceptions as u3

        try:
            response = self.pool.request("GET", url, headers={"Accept": "text/plain"})
            if response.status != 200:
                raise ValueError(f"HTTP {response.status}")
            values = parse_exposition(response.data.decode("utf-8", "replace"))
        except (u3.HTTPError, OSError, ValueError) as e:
            text = " ".join(str(e).split())[:200] or type(e).__name__
            self.failures.setdefault(url, []).append(text.split("Failed to establish a new connection: ")[-1])
            return None
        return Scrape(self.clock(), values)

    def sample(self, steps: int, step: float, progress: Callable[[int, int], None] | None = None
               ) -> tuple[list[list[Scrape | None]], float]:
        """`steps + 1` reads of every agent, `step` seconds apart: (reads[k][agent], the wall
        time of the first read)."""
        began_wall, began = time.time(), self.clock()
        reads = []
        with ThreadPoolExecutor(max_workers=min(32, len(self.urls))) as pool:
            for k in range(steps + 1):
                wait = began + k * step - self.clock()
                if wait > 0:
                    self.sleep(wait)
                reads.append(list(pool.map(self.read, self.urls)))
                if progress is not None:
                    progress(k, steps)
        return reads, began_wall

    def problems(self, reads: int, min_coverage: float) -> tuple[list[str], list[str]]:
        """(problems, notes): an agent that missed more reads than the coverage allows hides its
        containers for part of the window (a problem: the read is partial); fewer is a note
        (the gaps show in the metrics' coverage)."""
        problems, notes = [], []
        for url, errors in self.failures.items():
            line = f"agent {url}: {len(errors)} of {reads} reads failed (last: {errors[-1]})"
            (problems if len(errors) > reads * (1 - min_coverage) else notes).append(line)
        return problems, notes
