"""What `numaguard compare` measures: the default metrics on the node agent's series, and the
user's own (`--metric NAME:QUERY:DIRECTION[:OPTIONS]`, any PromQL).

A default metric has a shape (a counter's rate, a ratio of two counters' rates, a gauge's
share) that is both written as PromQL for Prometheus and computed from the agents' raw series
when they are sampled directly (numaguard.lint.compare.series), so both sources judge the same
quantity. Every default is per container (namespace, pod, container): each container's value
at each step is one sample of its group.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field, replace

from numaguard.lint.compare.stats import Direction

SELECTOR = "{{selector}}"       # where a query takes the group's label matchers
INTERVAL = "{{interval}}"       # the range of rate() (--rate-interval)
BY = ("namespace", "pod", "container")
_BY = ", ".join(BY)


class MetricError(ValueError):
    """A --metric the command cannot use (exit 2)."""


@dataclass(frozen=True)
class CounterRate:
    """Per second increase of a counter, summed over a container's series of it."""
    counter: str
    matchers: str = ""         # extra label matchers, e.g. kind="some"

    def promql(self) -> str:
        return f"sum by ({_BY}) (rate({_vector(self.counter, self.matchers)}[{INTERVAL}]))"

    def names(self) -> tuple[str, ...]:
        return (self.counter,)

    def explain(self, span: float) -> str:
        extra = f"{{{self.matchers}}}" if self.matchers else ""
        return f"increase of {self.counter}{extra} per second over {span:g} s of reads, per container"


@dataclass(frozen=True)
class RateRatio:
    """Increase of one counter over the increase of another (0/0 when neither moved)."""
    numerator: str
    denominator: str

    def promql(self) -> str:
        return (f"sum by ({_BY}) (rate({_vector(self.numerator, '')}[{INTERVAL}])) / "
                f"sum by ({_BY}) (rate({_vector(self.denominator, '')}[{INTERVAL}]))")

    def names(self) -> tuple[str, ...]:
        return (self.numerator, self.denominator)

    def explain(self, span: float) -> str:
        return f"increase of {self.numerator} over that of {self.denominator} over {span:g} s of reads, per container"


@dataclass(frozen=True)
class GaugeShare:
    """The share of a gauge's sum held by the series with one label value."""
    gauge: str
    label: str
    value: str

    def promql(self) -> str:
        return (f"sum by ({_BY}) ({_vector(self.gauge, f'{self.label}={_quote(self.value)}')}) / "
                f"sum by ({_BY}) ({_vector(self.gauge, '')})")

    def names(self) -> tuple[str, ...]:
        return (self.gauge,)

    def explain(self, span: float) -> str:
        return f"share of {self.gauge} with {self.label}={_quote(self.value)} at each read, per container"


Shape = CounterRate | RateRatio | GaugeShare


def _vector(name: str, matchers: str) -> str:
    return f"{name}{{{SELECTOR}{',' + matchers if matchers else ''}}}"


def _quote(value: str) -> str:
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


@dataclass(frozen=True)
class Metric:
    name: str
    direction: Direction
    query: str                        # PromQL with {{selector}} (and maybe {{interval}})
    description: str = ""
    unit: str = ""
    weight: float = 1.0
    critical: bool = False
    floor: float = 0.0                # means closer than this are the same (stats.classify)
    required: bool = True             # no series in either group is a problem, not just "no data"
    nan_as_zero: bool = False         # 0/0 (nothing happened) counts as 0 rather than no sample
    shape: Shape | None = None        # how to compute it from the agents' series directly
    default: bool = False

    def render(self, selector: str, interval: str) -> str:
        return self.query.replace(SELECTOR, selector).replace(INTERVAL, interval)


_PREFIX = "numaguard_container_"


def _default(name: str, shape: Shape, description: str, unit: str, floor: float) -> Metric:
    # The kernel may not offer a source (PSI, schedstat, cgroup v1): the agent then exports no
    # series for it (issue 23 §1), so a metric missing in both groups is "no data", not a
    # problem; missing in one group only still is (numaguard.lint.compare.comparison).
    return Metric(name, Direction.LOWER, shape.promql(), description, unit, floor=floor,
                  required=False, nan_as_zero=True, shape=shape, default=True)


# Lower is better for all of them. The floors are the least difference in means that counts:
# below it a certain difference is too small to matter to a workload.
DEFAULT_METRICS: tuple[Metric, ...] = (
    _default("runqueue-delay", CounterRate(_PREFIX + "runqueue_wait_seconds_total"),
             "time the container's threads waited for a CPU (schedstat run_delay)", "s/s", 0.01),
    _default("cpu-throttled-periods", RateRatio(_PREFIX + "cpu_throttled_periods_total", _PREFIX + "cpu_periods_total"),
             "share of CFS periods in which the container was throttled (cpu.stat)", "ratio", 0.01),
    _default("cpu-throttled-time", CounterRate(_PREFIX + "cpu_throttled_seconds_total"),
             "time the container was throttled (cpu.stat throttled_usec)", "s/s", 0.01),
    _default("memory-remote", GaugeShare(_PREFIX + "memory_numa_bytes", "locality", "remote"),
             "share of resident memory on NUMA nodes other than the assigned ones (memory.numa_stat)",
             "ratio", 0.01),
    _default("threads-outside", RateRatio(_PREFIX + "thread_samples_outside_total", _PREFIX + "thread_samples_total"),
             "share of thread samples found on a CPU outside the exclusive set", "ratio", 0.001),
    _default("major-page-faults", CounterRate(_PREFIX + "major_page_faults_total"),
             "major page faults (memory.stat pgmajfault)", "1/s", 0.1),
    _default("cpu-pressure", CounterRate(_PREFIX + "cpu_pressure_seconds_total", 'kind="some"'),
             "time some of the container's threads stalled for a CPU (cpu.pressure some)", "s/s", 0.01),
    _default("involuntary-context-switches", CounterRate(_PREFIX + "involuntary_context_switches_total"),
             "involuntary context switches (preemptions)", "1/s", 5.0),
)

_DIRECTIONS = {d.value for d in Direction}
_OPTION = re.compile(r"(weight)=(\d+(?:\.\d+)?)|(floor)=(\d+(?:\.\d+)?(?:[eE][-+]?\d+)?)|(critical)")
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*")


def parse_metric(text: str) -> Metric:
    """`NAME:QUERY:DIRECTION[:OPTIONS]`. The query may hold colons (recording rules, subqueries):
    the name ends at the first colon, the direction is the last field (or the one before the
    options), OPTIONS is a comma list of weight=W, floor=F, critical."""
    name, sep, rest = text.partition(":")
    if not sep or not _NAME.fullmatch(name):
        raise MetricError(f"{text!r}: expected NAME:QUERY:DIRECTION (NAME of letters, digits, - _ .)")
    fields = rest.split(":")
    options = ""
    if len(fields) >= 3 and fields[-1] not in _DIRECTIONS and fields[-2] in _DIRECTIONS:
        options = fields.pop()
    if len(fields) < 2 or fields[-1] not in _DIRECTIONS:
        raise MetricError(f"{text!r}: the last field must be the direction, lower or higher "
                          "(which way is better), optionally followed by :weight=W,floor=F,critical")
    direction = Direction(fields.pop())
    query = ":".join(fields).strip()
    if SELECTOR not in query:
        raise MetricError(f"{name}: the query must hold {SELECTOR} where each group's label matchers go, "
                          f"e.g. rate(http_requests_total{{{SELECTOR}}}[5m])")
    metric = Metric(name, direction, query)
    for option in filter(None, (o.strip() for o in options.split(","))):
        found = _OPTION.fullmatch(option)
        if not found:
            raise MetricError(f"{name}: unknown option {option!r} (weight=W, floor=F, critical)")
        if found[1]:
            metric = replace(metric, weight=float(found[2]))
        elif found[3]:
            metric = replace(metric, floor=float(found[4]))
        else:
            metric = replace(metric, critical=True)
    if metric.weight <= 0:
        raise MetricError(f"{name}: weight must be above 0")
    return metric


@dataclass(frozen=True)
class MetricSet:
    metrics: tuple[Metric, ...] = field(default_factory=tuple)

    @classmethod
    def build(cls, user: list[Metric], defaults: bool = True) -> "MetricSet":
        """The defaults (unless left out) with the user's metrics; a user metric named as a
        default replaces it."""
        names = [m.name for m in user]
        twice = sorted({n for n in names if names.count(n) > 1})
        if twice:
            raise MetricError(f"metric named twice: {', '.join(twice)}")
        chosen = [m for m in DEFAULT_METRICS if m.name not in names] if defaults else []
        if not chosen and not user:
            raise MetricError("no metric to compare: give --metric, or leave the defaults on")
        return cls(tuple(chosen + list(user)))
