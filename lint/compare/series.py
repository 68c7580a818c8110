"""Series in, samples out: what a group's series over the window give the judge, how much of
the window they cover, and, for the agents sampled directly, the default metrics computed
from their raw counters and gauges as Prometheus's rate() would.

The window is a grid of steps, start + k * step for k = 0..n (as a Prometheus range query
evaluates it: web/api/v1/api.go queryRange, promql/engine.go). A step at which none of a
group's series has a value is missing; a run of missing steps is a gap.
"""
from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import dataclass
from functools import lru_cache
from typing import Iterable, Mapping, Sequence

import numpy as np

from numaguard.lint.compare.metrics import BY, CounterRate, GaugeShare, Metric, RateRatio
from numaguard.lint.compare.selector import Selector, parse_selector

Labels = tuple[tuple[str, str], ...]


@dataclass(frozen=True)
class Series:
    labels: Labels
    points: tuple[tuple[float, float], ...]     # (unix seconds, value), in time order

    def label(self, name: str) -> str:
        return dict(self.labels).get(name, "")


@dataclass(frozen=True)
class Window:
    start: float
    end: float
    step: float

    @property
    def steps(self) -> int:
        """How many evaluation times the window has."""
        return int(math.floor((self.end - self.start) / self.step + 1e-9)) + 1

    def index(self, t: float) -> int | None:
        k = round((t - self.start) / self.step)
        return k if 0 <= k < self.steps and abs(self.start + k * self.step - t) < self.step / 2 else None

    def time(self, k: int) -> float:
        return self.start + k * self.step


@dataclass(frozen=True)
class Coverage:
    steps: int                                  # the window's
    covered: int                                # with a value from at least one series
    gaps: tuple[tuple[float, float], ...]       # (first missing time, last missing time)

    @property
    def share(self) -> float:
        return self.covered / self.steps if self.steps else 0.0


def coverage(series: Sequence[Series], window: Window) -> Coverage:
    present = {k for s in series for t, _v in s.points if (k := window.index(t)) is not None}
    gaps, run = [], None
    for k in range(window.steps):
        if k in present:
            if run is not None:
                gaps.append((window.time(run), window.time(k - 1)))
                run = None
        elif run is None:
            run = k
    if run is not None:
        gaps.append((window.time(run), window.time(window.steps - 1)))
    return Coverage(window.steps, len(present), tuple(gaps))


def samples(series: Sequence[Series], nan_as_zero: bool) -> tuple[np.ndarray, int]:
    """Every value of every series, and how many were not numbers (0/0, +Inf): those count as
    0 for a metric where that means nothing happened, else they are left out (Kayenta's
    NaNStrategy replace and remove)."""
    values = np.fromiter((v for s in series for _t, v in s.points), float)
    bad = ~np.isfinite(values)
    if nan_as_zero:
        values = np.where(bad, 0.0, values)
        return values, int(bad.sum())
    return values[~bad], int(bad.sum())


@dataclass(frozen=True)
class Timeline:
    """A group's series at each step: the median, the lowest and the highest value."""
    times: tuple[float, ...]
    median: tuple[float, ...]
    low: tuple[float, ...]
    high: tuple[float, ...]


def timeline(series: Sequence[Series], nan_as_zero: bool) -> Timeline:
    by_time: dict[float, list[float]] = defaultdict(list)
    for s in series:
        for t, v in s.points:
            if math.isfinite(v):
                by_time[t].append(v)
            elif nan_as_zero:
                by_time[t].append(0.0)
    times = sorted(by_time)
    rows = [np.asarray(by_time[t]) for t in times]
    return Timeline(tuple(times), tuple(float(np.median(r)) for r in rows),
                    tuple(float(r.min()) for r in rows), tuple(float(r.max()) for r in rows))


# ------------------------------------------------------------------ agents sampled directly

@dataclass(frozen=True)
class Scrape:
    """One agent's /metrics at one step: its samples ((name, labels) -> value), and the
    monotonic time the answer was read (rates divide by the real time between two reads)."""
    at: float
    values: Mapping[tuple[str, Labels], float]


def _container(labels: Labels) -> Labels:
    have = dict(labels)
    return tuple((name, have.get(name, "")) for name in BY)


def _selected(scrape: Scrape, names: Iterable[str], selector: Selector, extra: Selector | None
              ) -> dict[str, dict[Labels, float]]:
    """name -> the selected series' labels -> value."""
    wanted = set(names)
    out: dict[str, dict[Labels, float]] = {name: {} for name in wanted}
    for (name, labels), value in scrape.values.items():
        if name in wanted:
            have = dict(labels)
            if selector.matches(have) and (extra is None or extra.matches(have)):
                out[name][labels] = value
    return out


def _increase(before: float, after: float) -> float:
    """A counter's increase between two reads; a drop is a reset, after which the counter
    counted from zero (promql/functions.go extrapolatedRate: the same correction)."""
    return after - before if after >= before else after


def _per_container(values: dict[Labels, float]) -> dict[Labels, float]:
    out: dict[Labels, float] = defaultdict(float)
    for labels, value in values.items():
        out[_container(labels)] += value
    return out


def _increases(before: dict[Labels, float], after: dict[Labels, float]) -> dict[Labels, float]:
    """Per container, the summed increase of the series read both times."""
    return _per_container({labels: _increase(before[labels], value)
                           for labels, value in after.items() if labels in before})


def direct_series(metric: Metric, scrapes: Sequence[Sequence[Scrape | None]], window: Window,
                  selector: Selector, span: int = 1) -> list[Series]:
    """One default metric for one group from the agents' scrapes: `scrapes[k][a]` is agent a's
    scrape at step k (None: that read failed). A rate at step k is taken over the `span` steps
    before it (as rate() over --rate-interval: a thread's wait is counted when it next runs,
    so a rate over one short step jumps), from the agent's reads at k - span and k; a gauge's
    share needs the read at k. The first `span` reads only start the rates: the window's first
    step is read `span`."""
    shape = metric.shape
    assert shape is not None, f"{metric.name} has no shape to compute from the agents' series"
    extra = _extra(shape.matchers) if isinstance(shape, CounterRate) and shape.matchers else None
    points: dict[Labels, list[tuple[float, float]]] = defaultdict(list)
    for k in range(span, len(scrapes)):
        for agent, now in enumerate(scrapes[k]):
            before = scrapes[k - span][agent] if agent < len(scrapes[k - span]) else None
            if now is None or (before is None and not isinstance(shape, GaugeShare)):
                continue
            for container, value in _direct_values(shape, before, now, selector, extra).items():
                points[container].append((window.time(k - span), value))
    return [Series(labels, tuple(p)) for labels, p in sorted(points.items())]


@lru_cache(maxsize=None)
def _extra(matchers: str) -> Selector:
    return parse_selector(matchers)


def _direct_values(shape, before: Scrape | None, now: Scrape, selector: Selector,
                   extra: Selector | None) -> dict[Labels, float]:
    if isinstance(shape, GaugeShare):
        series = _selected(now, shape.names(), selector, extra)[shape.gauge]
        total = _per_container(series)
        part = _per_container({labels: v for labels, v in series.items() if dict(labels).get(shape.label) == shape.value})
        return {c: (part.get(c, 0.0) / t if t else math.nan) for c, t in total.items()}
    elapsed = now.at - before.at
    if elapsed <= 0:
        return {}
    if isinstance(shape, CounterRate):
        names = shape.names()
        got = _increases(_selected(before, names, selector, extra)[shape.counter],
                         _selected(now, names, selector, extra)[shape.counter])
        return {c: v / elapsed for c, v in got.items()}
    assert isinstance(shape, RateRatio)
    was, now_ = (_selected(s, shape.names(), selector, extra) for s in (before, now))
    top = _increases(was[shape.numerator], now_[shape.numerator])
    bottom = _increases(was[shape.denominator], now_[shape.denominator])
    return {c: (top[c] / bottom[c] if bottom[c] else math.nan) for c in top if c in bottom}
