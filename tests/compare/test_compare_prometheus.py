"""`numaguard compare` against a real Prometheus server (Debian's `prometheus`, started here on
127.0.0.1) that scrapes exporters started here (prometheus_client) every second for about 45 s:

- shop: a contended canary (run-queue delay, throttling, PSI and preemptions up, the
  application's p99 latency up and its throughput down) against a quiet control: it fails;
- twins: two identical groups: they pass or are inconclusive, never fail;
- steady: a canary whose node's exporter fails its scrapes for 16 s of the window: inconclusive;
- an empty group, a query without series, an unreachable server: inconclusive; a query
  Prometheus rejects: exit 2; and never a traceback.
The judge with a planted regression (a swapped direction, a one-sided test on the wrong side)
turns the real contended canary's verdict into something else, so the check fails."""
from __future__ import annotations

import json
import re
import time

import pytest

from conftest import run_cli, tool
from exporters import Container, Exporter, FakeAgentCollector, PrometheusServer, free_port

WINDOW = ["--window", "30s", "--step", "1s", "--rate-interval", "4s"]
P99 = ("p99-latency:histogram_quantile(0.99, sum by (namespace, pod, le) "
       "(rate(http_request_duration_seconds_bucket{ {{selector}} }[{{interval}}]))):lower")
THROUGHPUT = "throughput:sum by (namespace, pod) (rate(http_requests_total{ {{selector}} }[{{interval}}])):higher"
SHOP = ['--canary', 'namespace="shop",pod=~"web-canary-.*"', '--control', 'namespace="shop",pod=~"web-stable-.*"']
TWINS = ['--canary', 'namespace="twins",pod=~"twin-a-.*"', '--control', '{namespace="twins",pod=~"twin-b-.*"}']
STEADY = ['--canary', 'namespace="steady",pod=~"gap-canary-.*"', '--control', 'namespace="steady",pod=~"gap-control-.*"']


def _template_pods() -> list:
    """Pods named as Argo Rollouts and Flagger name them, for deploy/canary's templates: a
    Rollout's ReplicaSets <rollout>-<hash>-<suffix>, Flagger's <target>-<hash>-<suffix> and
    <target>-primary-<hash>-<suffix>; the canary contended in "rollouts" and "flagger", quiet in
    the twins' namespaces."""
    pods = []
    for namespace, stable in (("rollouts", "web-58c7b4"), ("flagger", "web-primary-58c7b4")):
        for twins in ("", "-twins"):
            pods += [Container(namespace + twins, f"web-6d4f9c-{s}", contended=not twins) for s in ("abcde", "fghij")]
            pods += [Container(namespace + twins, f"{stable}-{s}") for s in ("klmno", "pqrst")]
    return pods


class Scraped:
    def __init__(self, url: str, end: float) -> None:
        self.url, self.end = url, end

    def compare(self, *args: str) -> tuple:
        run = run_cli("compare", "--prometheus", self.url, "--end", f"{self.end:.0f}", *WINDOW, *args)
        assert "Traceback" not in run.stderr, run.stderr
        return run


@pytest.fixture(scope="module")
def scraped(tmp_path_factory):
    node_a = FakeAgentCollector(
        [Container("shop", f"web-canary-{i}", contended=True, latency=0.02, requests=80) for i in range(2)]
        + [Container("shop", f"web-stable-{i}") for i in range(2)]
        + [Container("twins", f"twin-{g}-{i}") for g in "ab" for i in range(2)]
        + [Container("steady", f"gap-control-{i}") for i in range(2)]
        + _template_pods(), seed=1)
    node_b = FakeAgentCollector([Container("steady", f"gap-canary-{i}") for i in range(2)], seed=2)
    exporters = [Exporter(node_a), Exporter(node_b)]
    server = PrometheusServer(tool("prometheus"), tmp_path_factory.mktemp("prometheus"), [e.target for e in exporters])
    began, began_monotonic = time.time(), time.monotonic()
    node_b.down_between = (began_monotonic + 14, began_monotonic + 30)
    end = began + 41          # the window: 30 s ending here, 11 s after the first scrape
    time.sleep(max(0.0, end + 2 - time.time()))
    try:
        yield Scraped(server.url, end)
    finally:
        server.close()
        for exporter in exporters:
            exporter.close()


def _report(path) -> dict:
    return json.loads(path.read_text())


def test_the_contended_canary_fails(scraped, tmp_path):
    run = scraped.compare(*SHOP, "--metric", P99, "--metric", THROUGHPUT, "--format", "json",
                          "--output", str(tmp_path / "r.json"), "--format", "text")
    assert run.returncode == 1, run.stdout + run.stderr
    report = _report(tmp_path / "r.json")
    assert {m["name"]: m["classification"] for m in report["metrics"]} == {
        "runqueue-delay": "worse", "cpu-throttled-periods": "worse", "cpu-throttled-time": "worse",
        "memory-remote": "same", "threads-outside": "same", "major-page-faults": "same", "cpu-pressure": "worse",
        "involuntary-context-switches": "worse", "p99-latency": "worse", "throughput": "worse"}
    assert report["verdict"] == {"outcome": "fail", "score": 30.0, "complete": True, "problems": [],
                                 "reason": "score 30 below 75; worse: runqueue-delay, cpu-throttled-periods, "
                                           "cpu-throttled-time, cpu-pressure, involuntary-context-switches, "
                                           "p99-latency, throughput"}
    assert report["window"]["steps"] == 31 and report["window"]["step"] == 1
    for metric in report["metrics"]:
        for group in ("canary", "control"):
            side = metric[group]
            assert (side["series"], side["samples"], side["coverage"]["share"], side["error"]) == (2, 62, 1.0, None), \
                (metric["name"], group)
    runqueue = report["metrics"][0]
    assert runqueue["canary"]["query"] == ('sum by (namespace, pod, container) (rate(numaguard_container_runqueue_wait'
                                           '_seconds_total{namespace="shop",pod=~"web-canary-.*"}[4s]))')
    assert 0.3 < runqueue["test"]["low"] < runqueue["test"]["estimate"] < runqueue["test"]["high"] < 0.6
    assert run.stdout.splitlines()[-1].startswith("Verdict: FAIL (score 30; pass at 95, fail below 75)")
    assert run.stderr.splitlines()[-1] == "numaguard: fail: " + report["verdict"]["reason"]


def test_two_identical_groups_never_fail(scraped, tmp_path):
    run = scraped.compare(*TWINS, "--metric", P99, "--metric", THROUGHPUT, "--output", str(tmp_path / "r.json"))
    report = _report(tmp_path / "r.json")
    assert run.returncode in (0, 3) and report["verdict"]["outcome"] in ("pass", "inconclusive"), run.stderr
    assert [m["name"] for m in report["metrics"] if m["classification"] == "worse"] == []
    assert report["verdict"]["complete"] is True


def test_a_window_with_gaps_is_inconclusive(scraped, tmp_path):
    run = scraped.compare(*STEADY, "--output", str(tmp_path / "r.json"))
    assert run.returncode == 3, run.stdout + run.stderr
    report = _report(tmp_path / "r.json")
    assert report["verdict"]["outcome"] == "inconclusive" and report["verdict"]["complete"] is False
    gaps = [p for p in report["verdict"]["problems"] if p.startswith("runqueue-delay: the canary's series cover")]
    assert len(gaps) == 1 and re.fullmatch(r"runqueue-delay: the canary's series cover (\d+)% of the window's 31 steps; "
                                           r"missing \S+Z to \S+Z", gaps[0]), gaps
    assert int(re.search(r"cover (\d+)%", gaps[0])[1]) < 70
    assert report["metrics"][0]["control"]["coverage"]["share"] == 1.0
    assert f"numaguard: {gaps[0]}" in run.stderr.splitlines()


def test_an_empty_group_is_inconclusive(scraped):
    run = scraped.compare("--canary", 'namespace="shop",pod=~"nowhere-.*"', "--control",
                          'namespace="shop",pod=~"web-stable-.*"')
    assert run.returncode == 3
    assert run.stderr.splitlines()[0] == ('numaguard: the canary selector {namespace="shop",pod=~"nowhere-.*"} matched '
                                          "no series of any metric: no pod of the group is running, or the selector is wrong")
    assert run.stderr.splitlines()[-1] == "numaguard: inconclusive: no metric has samples from both groups"


def test_a_query_without_series_is_inconclusive(scraped):
    run = scraped.compare(*SHOP, "--no-default-metrics", "--metric", THROUGHPUT.replace("higher", "higher:weight=3")
                          .replace("throughput", "served", 1), "--metric",
                          "ghost:rate(no_such_series_total{ {{selector}} }[{{interval}}]):lower")
    assert run.returncode == 1       # the canary serves less: a fail stays a fail
    run = scraped.compare(*TWINS, "--no-default-metrics", "--metric", THROUGHPUT, "--metric",
                          "ghost:rate(no_such_series_total{ {{selector}} }[{{interval}}]):lower")
    assert run.returncode == 3, run.stdout + run.stderr
    assert "numaguard: ghost: the query returned no series for either group" in run.stderr.splitlines()
    assert any(re.fullmatch(r"  ghost +lower +1 +- +- +- +no data", line) for line in run.stdout.splitlines()), run.stdout


def test_a_query_prometheus_rejects_is_unusable_input(scraped):
    run = scraped.compare(*SHOP, "--metric", "bad:rate(x{ {{selector}} }[{{interval}}]:lower")
    assert run.returncode == 2
    assert run.stderr.startswith("Error: bad: Prometheus rejected the query 'rate(x{ namespace=\"shop\"")
    assert "parse error" in run.stderr


def test_an_unreachable_prometheus_is_inconclusive():
    port = free_port()
    run = run_cli("compare", "--prometheus", f"http://127.0.0.1:{port}", *SHOP, *WINDOW)
    assert run.returncode == 3 and "Traceback" not in run.stderr
    lines = run.stderr.splitlines()
    assert lines[0] == (f"numaguard: not read: http://127.0.0.1:{port}: cannot connect: [Errno 111] Connection "
                        "refused: 16 queries")
    assert lines[-1] == "numaguard: inconclusive: no metric has samples from both groups"
    assert "Verdict: INCONCLUSIVE (no score;" in run.stdout


def test_the_html_report_of_a_real_run_opens_cleanly(scraped, tmp_path):
    from test_compare_html import open_compare_page

    run = scraped.compare(*SHOP, "--metric", P99, "--output", str(tmp_path / "r.html"))
    assert run.returncode == 1
    shown = open_compare_page((tmp_path / "r.html").read_text(), tmp_path)
    assert shown["data-errors"] == [] and shown["data-scripts"] == "0"
    assert (shown["data-svgs"], shown["data-sections"], shown["data-verdict"]) == ("18", "9", "FAIL")


# ------------------------------------------------------------------ planted regressions, real data

def _judge_real(scraped, module=None, monkeypatch=None):
    """The contended canary judged in-process from the real server's answers, with `module` as
    the statistics when given."""
    from numaguard.lint.cluster.prometheus import Prometheus, read_groups
    from numaguard.lint.compare import comparison
    from numaguard.lint.compare.metrics import MetricSet, parse_metric
    from numaguard.lint.compare.selector import parse_selector
    from numaguard.lint.compare.series import Window

    if module is not None:
        for name in ("classify", "verdict"):
            monkeypatch.setattr(comparison, name, getattr(module, name))
        monkeypatch.setattr(comparison, "Scored", module.Scored)
    metrics = MetricSet.build([parse_metric(P99)]).metrics
    selectors = {"canary": parse_selector(SHOP[1]), "control": parse_selector(SHOP[3])}
    end = float(int(scraped.end))
    window = Window(end - 30, end, 1.0)
    reads, _ = read_groups(Prometheus(scraped.url), metrics, selectors, window, "4s")
    return comparison.compare(metrics, reads, canary=selectors["canary"], control=selectors["control"],
                              window=window, source="test")


def _check_contended(result) -> None:
    judged = {r.metric.name: r.judgement.classification.value for r in result.metrics}
    assert result.verdict.outcome.value == "fail"
    assert judged["runqueue-delay"] == judged["p99-latency"] == "worse"
    for r in result.metrics:         # each interval brackets its estimate, as an interval must
        test = r.judgement.test
        if test is not None:
            assert test.low <= test.estimate <= test.high and test.low < test.high, (r.metric.name, test)


def test_the_real_contended_canary_fails_in_process(scraped):
    _check_contended(_judge_real(scraped))


@pytest.mark.parametrize("what", ["the direction swapped", "the lower bound from the one-sided test on the wrong side"])
def test_a_regression_planted_in_the_judge_fails_the_real_check(scraped, what, monkeypatch):
    from test_compare_stats import SLIPS, mutant_of

    old, new = next((old, new) for name, old, new in SLIPS if name == what)
    mutant = mutant_of(old, new, monkeypatch)
    with pytest.raises(AssertionError):
        _check_contended(_judge_real(scraped, mutant, monkeypatch))


# ------------------------------------------------------------------ deploy/canary's templates

def _instant(url: str, query: str, at: float) -> list[float]:
    import urllib.parse
    import urllib.request

    params = urllib.parse.urlencode({"query": query, "time": f"{at:.3f}"})
    with urllib.request.urlopen(f"{url}/api/v1/query?{params}", timeout=30) as answer:
        body = json.loads(answer.read())
    assert body["status"] == "success" and body["data"]["resultType"] == "vector", body
    return [float(item["value"][1]) for item in body["data"]["result"]]


def _argo_phase(metric: dict, result: list[float]) -> str:
    """Argo Rollouts' evaluate.EvaluateResult for the conditions these templates use (expr's
    len(), &&, comparisons): Failed when the failure condition holds, Successful when the
    success condition does, else Inconclusive."""
    def holds(condition: str) -> bool:
        assert re.fullmatch(r"len\(result\) > 0 && result\[0\] (<=|>) [0-9.]+", condition), condition
        return eval(condition.replace("&&", "and"), {"len": len, "result": result})   # noqa: S307 (our own file)

    if holds(metric["failureCondition"]):
        return "Failed"
    return "Successful" if holds(metric["successCondition"]) else "Inconclusive"


@pytest.mark.parametrize("namespace, expected", [
    ("rollouts", {"runqueue-delay": "Failed", "cpu-pressure": "Failed", "involuntary-context-switches": "Failed",
                  "cpu-throttled-periods": "Failed", "memory-remote": "Successful"}),
    ("rollouts-twins", {"runqueue-delay": "Successful", "cpu-pressure": "Successful",
                        "involuntary-context-switches": "Successful", "cpu-throttled-periods": "Successful",
                        "memory-remote": "Successful"}),
])
def test_the_argo_analysis_template_judges_the_real_series(scraped, namespace, expected):
    import yaml

    from conftest import REPO

    [template] = list(yaml.safe_load_all((REPO / "deploy/canary/argo-analysistemplate.yaml").read_text()))
    args = {"namespace": namespace, "rollout": "web", "canary-hash": "6d4f9c", "stable-hash": "58c7b4"}
    phases = {}
    for metric in template["spec"]["metrics"]:
        query = re.sub(r"\{\{args\.([a-z-]+)\}\}", lambda m: args[m[1]], metric["provider"]["prometheus"]["query"])
        assert "{{" not in query
        phases[metric["name"]] = _argo_phase(metric, _instant(scraped.url, query, scraped.end))
    assert phases == expected


@pytest.mark.parametrize("namespace, failing", [
    ("flagger", ["numaguard-runqueue-delay", "numaguard-cpu-pressure", "numaguard-cpu-throttled-periods"]),
    ("flagger-twins", []),
])
def test_the_flagger_metric_templates_judge_the_real_series(scraped, namespace, failing):
    """Each template rendered as Flagger renders it ({{ namespace }}, {{ target }}, {{ interval }})
    and held to the thresholdRange README's Canary gives it."""
    import yaml

    from conftest import REPO
    from test_canary_templates import readme_objects

    canary = next(o for o in readme_objects() if o["kind"] == "Canary")
    limits = {m["templateRef"]["name"]: m["thresholdRange"]["max"] for m in canary["spec"]["analysis"]["metrics"]}
    model = {"namespace": namespace, "target": "web", "interval": "30s"}
    over = []
    for template in yaml.safe_load_all((REPO / "deploy/canary/flagger-metrictemplates.yaml").read_text()):
        query = re.sub(r"\{\{ ([a-z]+) \}\}", lambda m: model[m[1]], template["spec"]["query"])
        assert "{{" not in query
        [value] = _instant(scraped.url, query, scraped.end)
        if value > limits[template["metadata"]["name"]]:
            over.append(template["metadata"]["name"])
    assert over == failing
