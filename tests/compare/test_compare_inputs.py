"""What `numaguard compare` is given: selectors parsed as PromQL's label matchers, --metric
parsed with colons inside the query, the default metrics' queries, the window's coverage and
gaps, the samples (NaN rules), and the agents' counters turned into the same quantities
Prometheus's rate() gives; the command line's unusable inputs (exit 2)."""
from __future__ import annotations

import math
import re

import numpy as np
import pytest

from conftest import guide, run_cli
from numaguard.lint.compare.metrics import (DEFAULT_METRICS, MetricError, MetricSet, parse_metric)
from numaguard.lint.compare.selector import SelectorError, parse_selector
from numaguard.lint.compare.series import Scrape, Series, Window, coverage, direct_series, samples
from numaguard.lint.compare.stats import Direction

# ----------------------------------------------------------------------------- selectors


def test_a_selector_is_read_as_promql_reads_label_matchers():
    s = parse_selector(' { namespace="shop" , pod=~\'web-canary-.*\', container!=`sidecar`, pool!~"edge|gpu", } ')
    assert s.text == "namespace=\"shop\",pod=~'web-canary-.*',container!=`sidecar`,pool!~\"edge|gpu\""
    assert [(m.name, m.op, m.value) for m in s.matchers] == [
        ("namespace", "=", "shop"), ("pod", "=~", "web-canary-.*"), ("container", "!=", "sidecar"),
        ("pool", "!~", "edge|gpu")]
    assert s.matches({"namespace": "shop", "pod": "web-canary-7", "container": "app", "pool": "numa"})
    assert not s.matches({"namespace": "shop", "pod": "x-web-canary-7", "container": "app"})   # anchored
    assert not s.matches({"namespace": "shop", "pod": "web-canary-1", "container": "sidecar"})
    assert not s.matches({"namespace": "shop", "pod": "web-canary-1", "pool": "gpu"})
    assert parse_selector(r'pod="a\"b\\c\n"').matchers[0].value == 'a"b\\c\n'        # Go's escapes


def test_the_selectors_errors_suggest_selectors_that_parse():
    for text in ("", 'pod!="x"'):
        with pytest.raises(SelectorError) as caught:
            parse_selector(text)
        example = str(caught.value).rsplit("e.g. ", 1)[1]
        assert parse_selector(example).text == example


@pytest.mark.parametrize("text, message", [
    ("", "an empty selector selects every series"),
    ("{}", "an empty selector selects every series"),
    ('pod~"x"', "expected a label matcher such as"),
    ('pod="x" namespace="y"', "expected a comma at"),
    ('{pod="x"', "an opening brace without its closing one"),
    ('pod=~"(unclosed"', "pod=~: not a regular expression"),
    ('namespace="shop",pod!~"[z-a]"', "pod!~: not a regular expression"),   # a negative regex too
    ('pod!="x"', "every matcher also matches series without the label"),
    ('pod=~".*"', "every matcher also matches series without the label"),
    ('9pod="x"', "expected a label matcher"),
])
def test_a_selector_prometheus_would_refuse_is_refused(text, message):
    with pytest.raises(SelectorError, match=None) as caught:
        parse_selector(text)
    assert message in str(caught.value)


# ----------------------------------------------------------------------------- metrics

def test_a_metric_query_may_hold_colons():
    m = parse_metric("p99:histogram_quantile(0.99, job:latency:rate5m{ {{selector}} }[5m:1m]):lower:weight=3,critical,floor=0.005")
    assert (m.name, m.direction, m.weight, m.critical, m.floor) == ("p99", Direction.LOWER, 3.0, True, 0.005)
    assert m.query == "histogram_quantile(0.99, job:latency:rate5m{ {{selector}} }[5m:1m])"
    assert m.render('pod="a"', "2m") == 'histogram_quantile(0.99, job:latency:rate5m{ pod="a" }[5m:1m])'
    lower = parse_metric("x:job:lower{ {{selector}} }:higher")        # a recording rule named job:lower
    assert (lower.query, lower.direction) == ("job:lower{ {{selector}} }", Direction.HIGHER)
    assert (lower.required, lower.nan_as_zero, lower.shape) == (True, False, None)


@pytest.mark.parametrize("text, message", [
    ("p99", "expected NAME:QUERY:DIRECTION"),
    (":q{ {{selector}} }:lower", "expected NAME:QUERY:DIRECTION"),
    ("p99:q{ {{selector}} }:down", "the last field must be the direction, lower or higher"),
    ("p99:q{ {{selector}} }", "the last field must be the direction"),
    ("p99:rate(q[5m]):lower", "the query must hold {{selector}}"),
    ("p99:q{ {{selector}} }:lower:weight=x", "unknown option 'weight=x'"),
    ("p99:q{ {{selector}} }:lower:weight=0", "weight must be above 0"),
])
def test_a_metric_the_command_cannot_use_is_refused(text, message):
    with pytest.raises(MetricError) as caught:
        parse_metric(text)
    assert message in str(caught.value)


def test_readme_lists_the_default_metrics_as_the_code_has_them():
    """deploy/README.md's table of default metrics: each name with its floor and unit, in the code's order."""
    from conftest import REPO

    chapter = guide("deploy/README.md").split("## Canary against control: `numaguard compare`", 1)[1]
    rows = re.findall(r"^\| `([a-z-]+)` \| .+ \| (\S+?)(?: ?([a-z/]+))? \|$", chapter.split("### How it judges")[0], re.M)
    units = {"s/s": "s/s", "/s": "1/s", None: "ratio"}
    assert [(name, float(floor), units[unit or None]) for name, floor, unit in rows] == [
        (m.name, m.floor, m.unit) for m in DEFAULT_METRICS]


def test_the_metric_set_takes_the_defaults_and_lets_a_user_metric_replace_one():
    own = parse_metric("runqueue-delay:max(rate(x{ {{selector}} }[1m])):lower:weight=2")
    names = [m.name for m in MetricSet.build([own]).metrics]
    assert names == [m.name for m in DEFAULT_METRICS if m.name != "runqueue-delay"] + ["runqueue-delay"]
    assert [m.name for m in MetricSet.build([own], defaults=False).metrics] == ["runqueue-delay"]
    with pytest.raises(MetricError, match="metric named twice: runqueue-delay"):
        MetricSet.build([own, own])
    with pytest.raises(MetricError, match="no metric to compare"):
        MetricSet.build([], defaults=False)


def test_the_default_metrics_are_the_agents_series_per_container():
    queries = {m.name: m.render('pod=~"a-.*"', "2m") for m in DEFAULT_METRICS}
    assert queries == {
        "runqueue-delay": 'sum by (namespace, pod, container) (rate(numaguard_container_runqueue_wait_seconds_total{pod=~"a-.*"}[2m]))',
        "cpu-throttled-periods": 'sum by (namespace, pod, container) (rate(numaguard_container_cpu_throttled_periods_total{pod=~"a-.*"}[2m])) / '
                                 'sum by (namespace, pod, container) (rate(numaguard_container_cpu_periods_total{pod=~"a-.*"}[2m]))',
        "cpu-throttled-time": 'sum by (namespace, pod, container) (rate(numaguard_container_cpu_throttled_seconds_total{pod=~"a-.*"}[2m]))',
        "memory-remote": 'sum by (namespace, pod, container) (numaguard_container_memory_numa_bytes{pod=~"a-.*",locality="remote"}) / '
                         'sum by (namespace, pod, container) (numaguard_container_memory_numa_bytes{pod=~"a-.*"})',
        "threads-outside": 'sum by (namespace, pod, container) (rate(numaguard_container_thread_samples_outside_total{pod=~"a-.*"}[2m])) / '
                           'sum by (namespace, pod, container) (rate(numaguard_container_thread_samples_total{pod=~"a-.*"}[2m]))',
        "major-page-faults": 'sum by (namespace, pod, container) (rate(numaguard_container_major_page_faults_total{pod=~"a-.*"}[2m]))',
        "cpu-pressure": 'sum by (namespace, pod, container) (rate(numaguard_container_cpu_pressure_seconds_total{pod=~"a-.*",kind="some"}[2m]))',
        "involuntary-context-switches": 'sum by (namespace, pod, container) (rate(numaguard_container_involuntary_context_switches_total{pod=~"a-.*"}[2m]))',
    }
    assert all(m.direction is Direction.LOWER and not m.required and m.nan_as_zero for m in DEFAULT_METRICS)


# ----------------------------------------------------------------------------- series

W = Window(1000.0, 1010.0, 1.0)          # 11 steps


def _s(times, values=None, **labels) -> Series:
    values = values if values is not None else [1.0] * len(times)
    return Series(tuple(sorted(labels.items())), tuple(zip(map(float, times), values)))


def test_coverage_counts_the_steps_any_series_covers_and_names_the_gaps():
    cov = coverage([_s([1000, 1001, 1002, 1009], pod="a"), _s([1001, 1003, 1010], pod="b")], W)
    assert (cov.steps, cov.covered, cov.gaps) == (11, 6, ((1004.0, 1008.0),))
    assert cov.share == pytest.approx(6 / 11)
    assert coverage([], W).gaps == ((1000.0, 1010.0),)
    assert coverage([_s([1000.4, 1001], pod="a")], W).covered == 2       # within half a step


def test_samples_count_or_drop_what_is_not_a_number():
    series = [_s([1000, 1001, 1002], [0.5, math.nan, math.inf], pod="a")]
    zero, bad = samples(series, nan_as_zero=True)
    assert zero.tolist() == [0.5, 0.0, 0.0] and bad == 2
    kept, bad = samples(series, nan_as_zero=False)
    assert kept.tolist() == [0.5] and bad == 2


def _scrape(at: float, **values) -> Scrape:
    """Values named name|pod|extra=v..."""
    out = {}
    for key, value in values.items():
        name, pod, *extra = key.split("__")
        labels = {"namespace": "shop", "pod": pod, "container": "app", "pool": "numa"}
        labels.update(pair.split("_eq_") for pair in extra)
        out[(name, tuple(sorted(labels.items())))] = value
    return Scrape(at, out)


DEFAULTS = {m.name: m for m in DEFAULT_METRICS}
RQ = "numaguard_container_runqueue_wait_seconds_total"


def test_the_agents_counters_become_rates_per_container_with_resets_and_holes():
    canary = parse_selector('pod=~"c-.*"')
    reads = [[_scrape(0.0, **{f"{RQ}__c-0": 10.0, f"{RQ}__c-1": 1.0, f"{RQ}__s-0": 5.0})],
             [_scrape(2.0, **{f"{RQ}__c-0": 11.0, f"{RQ}__c-1": 2.0, f"{RQ}__s-0": 5.5})],
             [None],                                                            # the agent did not answer
             [_scrape(6.0, **{f"{RQ}__c-0": 13.0, f"{RQ}__c-1": 3.0})],
             [_scrape(8.0, **{f"{RQ}__c-0": 0.5, f"{RQ}__c-1": 4.0})]]          # c-0 restarted: a reset
    window = Window(100.0, 103.0, 1.0)
    series = direct_series(DEFAULTS["runqueue-delay"], reads, window, canary)
    by_pod = {s.label("pod"): s.points for s in series}
    assert by_pod == {"c-0": ((100.0, 0.5), (103.0, 0.25)), "c-1": ((100.0, 0.5), (103.0, 0.5))}
    assert coverage(series, window).gaps == ((101.0, 102.0),)


def test_the_agents_rates_span_the_rate_interval():
    """span 2: each rate from the reads two steps apart, the first at read 2."""
    reads = [[_scrape(float(t), **{f"{RQ}__c-0": v})] for t, v in ((0, 0.0), (1, 0.0), (2, 3.0), (3, 3.0), (4, 4.0))]
    series = direct_series(DEFAULTS["runqueue-delay"], reads, Window(50.0, 52.0, 1.0), parse_selector('pod="c-0"'), 2)
    assert [s.points for s in series] == [((50.0, 1.5), (51.0, 1.5), (52.0, 0.5))]


def test_the_agents_ratios_and_shares_are_computed_as_the_queries_compute_them():
    p = "numaguard_container_"
    sel = parse_selector('pod="c-0"')
    reads = [[_scrape(0.0, **{f"{p}cpu_throttled_periods_total__c-0": 0.0, f"{p}cpu_periods_total__c-0": 0.0,
                              f"{p}cpu_pressure_seconds_total__c-0__kind_eq_some": 1.0,
                              f"{p}cpu_pressure_seconds_total__c-0__kind_eq_full": 0.0})],
             [_scrape(1.0, **{f"{p}cpu_throttled_periods_total__c-0": 0.0, f"{p}cpu_periods_total__c-0": 0.0,
                              f"{p}cpu_pressure_seconds_total__c-0__kind_eq_some": 1.25,
                              f"{p}cpu_pressure_seconds_total__c-0__kind_eq_full": 0.5,
                              f"{p}memory_numa_bytes__c-0__numa_node_eq_0__locality_eq_local": 300.0,
                              f"{p}memory_numa_bytes__c-0__numa_node_eq_1__locality_eq_remote": 100.0})],
             [_scrape(2.0, **{f"{p}cpu_throttled_periods_total__c-0": 3.0, f"{p}cpu_periods_total__c-0": 10.0,
                              f"{p}memory_numa_bytes__c-0__numa_node_eq_0__locality_eq_local": 400.0})]]
    window = Window(10.0, 11.0, 1.0)
    ratio = direct_series(DEFAULTS["cpu-throttled-periods"], reads, window, sel)
    assert math.isnan(ratio[0].points[0][1]) and ratio[0].points[1] == (11.0, 0.3)      # 0/0, then 3/10
    pressure = direct_series(DEFAULTS["cpu-pressure"], reads, window, sel)
    assert [p.points for p in pressure] == [((10.0, 0.25),)]                            # kind="some" only
    remote = direct_series(DEFAULTS["memory-remote"], reads, window, sel)
    assert [p.points for p in remote] == [((10.0, 0.25), (11.0, 0.0))]
    assert np.array_equal(samples(ratio, nan_as_zero=True)[0], [0.0, 0.3])


# ----------------------------------------------------------------------------- command line

GROUPS = ["--canary", 'pod="a"', "--control", 'pod="b"']
PROM = [*GROUPS, "--prometheus", "http://x"]


@pytest.mark.parametrize("args, message", [
    ([], "Error: Missing option '--canary'"),
    (["--canary", 'pod="a"', "--control", 'pod="a"', "--prometheus", "http://x"],
     "--canary and --control select the same series"),
    (["--canary", 'pod="a"', "--control", 'pod~"b"', "--prometheus", "http://x"], "expected a label matcher"),
    (GROUPS, "give --prometheus URL, or --agent URL for each node agent"),
    ([*GROUPS, "--prometheus", "ftp://x"], "must be http:// or https://"),
    ([*PROM, "--agent", "http://y"],
     "give --prometheus or --agent, not both"),
    ([*GROUPS, "--agent", "http://y", "--metric", "x:q{ {{selector}} }:lower"],
     "--metric x: PromQL needs --prometheus"),
    ([*GROUPS, "--agent", "http://y", "--end", "1700000000"],
     "--end needs --prometheus"),
    ([*GROUPS, "--agent", "y:9100"], "an agent's URL is http://HOST:PORT"),
    ([*PROM, "--window", "30x"],
     "'30x' is not a duration such as 30m"),
    ([*PROM, "--window", "30s1m"],
     "each unit once, largest first"),
    ([*PROM, "--window", "1m", "--step", "40s"],
     "--step 40s leaves fewer than 3 samples in --window 1m"),
    ([*PROM, "--end", "yesterday"],
     "--end 'yesterday': give now, a Unix time or an RFC 3339 time"),
    ([*PROM, "--output", "r.sarif"],
     "r.sarif: numaguard compare writes text, json, html"),
    ([*PROM, "--marginal-score", "96"],
     "--marginal-score must not be above --pass-score"),
    ([*PROM, "--prometheus-token-file", "/nonexistent"],
     "--prometheus-token-file /nonexistent: No such file or directory"),
])
def test_unusable_input_exits_2_with_one_line(args, message):
    run = run_cli("compare", *args)
    assert run.returncode == 2 and "Traceback" not in run.stderr
    assert message in run.stderr, run.stderr
    assert run.stdout == ""
