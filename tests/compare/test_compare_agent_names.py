"""compare's queries name only what the node agent exports: every metric name, label and label
value in the default metrics, the canary templates (deploy/canary) and deploy/README.md's compare chapter
is checked against the agent's metric table (lint/agent_metrics.py), so a renamed metric or label
cannot leave a comparison that silently finds no series ("no data" is not a failure)."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from numaguard.lint.agent_metrics import BY_NAME, CONTAINER, LOCALITIES, POOLS, PSI_KINDS
from numaguard.lint.compare.metrics import BY, DEFAULT_METRICS, CounterRate, GaugeShare, RateRatio

REPO = Path(__file__).resolve().parents[2]
# the values a label may take, where the table bounds them (the agent's `pool` is the CPU pool)
VALUES = {"locality": set(LOCALITIES), "kind": set(PSI_KINDS), "pool": set(POOLS)}
VECTOR = re.compile(r"\b(numaguard_(?:container|node|agent)_[a-z_]+)\b(\{[^}]*\})?")
MATCHER = re.compile(r"([a-zA-Z_][a-zA-Z0-9_]*)\s*(=~|!~|!=|=)\s*\"((?:[^\"\\]|\\.)*)\"")
GROUPING = re.compile(r"\b(?:by|without)\s*\(([^)]*)\)")


def problems(promql: str) -> list[str]:
    """What in a PromQL text the agent's table does not have: unknown names, labels a metric does
    not carry, a bounded label's value it never takes, a grouping by a label no container has."""
    found = []
    for name, braces in VECTOR.findall(promql):
        metric = BY_NAME.get(name)
        if metric is None:
            found.append(f"{name}: not a metric of the agent")
            continue
        for label, op, value in MATCHER.findall(braces):
            if label not in metric.labels:
                found.append(f"{name}: no label {label}")
            elif op == "=" and label in VALUES and value not in VALUES[label]:
                found.append(f"{name}: {label} is never {value!r}")
    for line in (line for line in promql.splitlines() if VECTOR.search(line)):   # not a service's own metric
        for grouping in GROUPING.findall(line):
            found += [f"grouped by {label}, no container label" for label in (s.strip() for s in grouping.split(","))
                      if label and label not in CONTAINER]
    return found


def test_the_checker_bites():
    assert problems('sum by (namespace, pod, container) (rate(numaguard_container_runqueue_wait_seconds_total{pod=~"a"}[1m]))') == []
    assert problems('rate(numaguard_container_runqueue_wait_total{pod="a"}[1m])') == [
        "numaguard_container_runqueue_wait_total: not a metric of the agent"]
    assert problems('numaguard_container_memory_numa_bytes{locality="far"}') == [
        "numaguard_container_memory_numa_bytes: locality is never 'far'"]
    assert problems('numaguard_container_cpu_usage_seconds_total{kind="some"}') == [
        "numaguard_container_cpu_usage_seconds_total: no label kind"]
    assert problems('numaguard_container_threads{pool="cpu-pool-a"}') == [
        "numaguard_container_threads: pool is never 'cpu-pool-a'"]
    assert problems('sum by (node) (numaguard_container_threads)') == ["grouped by node, no container label"]
    assert problems('histogram_quantile(0.99, sum by (le) (rate(http_seconds_bucket[1m])))') == []


@pytest.mark.parametrize("metric", DEFAULT_METRICS, ids=lambda m: m.name)
def test_each_default_metric_reads_the_agents_series_as_the_table_has_them(metric):
    shape = metric.shape
    # a rate is taken of counters only, a share of a gauge only
    kind = "gauge" if isinstance(shape, GaugeShare) else "counter"
    assert isinstance(shape, (CounterRate, RateRatio, GaugeShare))
    for name in shape.names():
        assert name in BY_NAME, name
        assert BY_NAME[name].kind == kind and set(BY) <= set(BY_NAME[name].labels), (name, BY_NAME[name])
    assert problems(metric.render('namespace="shop",pod=~"web-.*"', "2m")) == []
    if isinstance(shape, GaugeShare):
        assert shape.label in BY_NAME[shape.gauge].labels and shape.value in VALUES[shape.label]


def test_a_container_is_what_the_agent_labels_a_container_by():
    # grouped per container without `pool`: a container's pool is a property of it, not a split
    assert BY == tuple(label for label in CONTAINER if label != "pool")


@pytest.mark.parametrize("path", ["deploy/canary/argo-analysistemplate.yaml",
                                  "deploy/canary/flagger-metrictemplates.yaml"])
def test_the_canary_templates_query_only_the_agents_series(path):
    text = (REPO / path).read_text()
    assert len(VECTOR.findall(text)) >= 8
    assert problems(text) == []


def test_readmes_compare_chapter_queries_only_the_agents_series():
    readme = (REPO / "deploy" / "README.md").read_text() + "\n## "     # the canary chapter ends the guide
    for heading in ("### The node agent: `numaguard node agent`", "## Canary against control: `numaguard compare`",
                    "## A canary rollout with numaguard"):
        start = readme.index(heading)
        chapter = readme[start:readme.index("\n## ", start + 5)]
        assert len(VECTOR.findall(chapter)) >= 3 and problems(chapter) == [], heading
