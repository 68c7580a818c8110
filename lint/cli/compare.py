"""`numaguard compare`: is the canary better or worse off than its control? (numaguard.lint.compare)

    numaguard compare --canary SELECTOR --control SELECTOR [--window 30m] [--end TIME] [--step 30s]
                      (--prometheus URL | --agent URL...) [--metric NAME:QUERY:DIRECTION[:OPTIONS]]...
                      [--format text|json|html]... [--output FILE]...

Exit codes: 0 pass, 1 fail, 3 inconclusive (no metric could be judged, the read was partial:
an unreachable Prometheus, a group without series, a query without series, gaps; or a score
between the two thresholds), 2 unusable input (a bad flag, selector, --metric or query).
"""
from __future__ import annotations

import math
import re
import sys
import time

import click

from numaguard.lint.cli.common import UsageProblem, report_targets, write_text
from numaguard.lint.cli.main import Command

EXIT_CODES = {"pass": 0, "fail": 1, "inconclusive": 3}
COMPARE_FORMATS = ("text", "json", "html")
_UNITS = {"ms": 0.001, "s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800, "y": 31536000}


def parse_duration(text: str) -> float:
    """Seconds of a Prometheus duration (`30m`, `1h30m`, `90s`, `500ms`; model/time.go
    ParseDuration: units y w d h m s ms, largest first)."""
    parts = re.findall(r"(\d+)(ms|y|w|d|h|m|s)", text)
    if not parts or "".join(n + u for n, u in parts) != text.strip():
        raise UsageProblem(f"{text!r} is not a duration such as 30m, 1h30m, 90s or 500ms")
    units = [u for _n, u in parts]
    if len(set(units)) != len(units) or units != sorted(units, key=lambda u: -_UNITS[u]):
        raise UsageProblem(f"{text!r}: each unit once, largest first (as in 1h30m)")
    seconds = sum(int(n) * _UNITS[u] for n, u in parts)
    if seconds <= 0:
        raise UsageProblem(f"{text!r} is not above zero")
    return float(seconds)


def parse_time(text: str) -> float:
    """Unix seconds of `now`, a Unix timestamp or an RFC 3339 time (as Prometheus takes them)."""
    from datetime import datetime

    if text == "now":
        return time.time()
    try:
        return float(text)
    except ValueError:
        pass
    try:
        return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()
    except ValueError:
        raise UsageProblem(f"--end {text!r}: give now, a Unix time or an RFC 3339 time "
                           "(2026-05-01T10:30:00Z)") from None


def _read_file(path: str, what: str) -> str:
    try:
        with open(path, encoding="utf-8") as fh:
            return fh.read().strip()
    except OSError as e:
        raise UsageProblem(f"{what} {path}: {e.strerror or e}") from None


@click.command(cls=Command)
@click.option("--canary", required=True, metavar="SELECTOR",
              help='Label matchers of the canary\'s series, e.g. namespace="shop",pod=~"web-canary-.*".')
@click.option("--control", required=True, metavar="SELECTOR", help="Label matchers of the control's series.")
@click.option("--window", default="30m", show_default=True, help="How long a stretch to compare (a Prometheus duration).")
@click.option("--end", default="now", show_default=True,
              help="With --prometheus: when the window ends (now, Unix time, RFC 3339).")
@click.option("--step", default="30s", show_default=True, help="Time between two samples of a series.")
@click.option("--prometheus", "prometheus_url", metavar="URL", help="Prometheus server to ask (its HTTP API).")
@click.option("--prometheus-token-file", type=click.Path(dir_okay=False), help="Bearer token for Prometheus.")
@click.option("--prometheus-ca-file", type=click.Path(dir_okay=False), help="CA bundle for an https Prometheus.")
@click.option("--request-timeout", default="30s", show_default=True, help="How long one request may take.")
@click.option("--agent", "agents", multiple=True, metavar="URL",
              help="Without --prometheus: a node agent's /metrics to sample for --window (repeat per node).")
@click.option("--metric", "metric_specs", multiple=True, metavar="NAME:QUERY:DIRECTION[:OPTIONS]",
              help="A metric of your own: any PromQL with {{selector}} (and {{interval}}); DIRECTION "
                   "lower or higher is better; OPTIONS weight=W,floor=F,critical.")
@click.option("--no-default-metrics", is_flag=True, help="Judge only the --metric ones.")
@click.option("--rate-interval", default="2m", show_default=True,
              help="The range of rate() in the queries ({{interval}}); at least 4 scrape intervals.")
@click.option("--confidence", type=click.FloatRange(0.5, 0.9999), default=0.98, show_default=True,
              help="Confidence of the rank test's interval (Kayenta's judge: 0.98).")
@click.option("--margin", type=click.FloatRange(0, 10), default=0.1, show_default=True,
              help="Mean ratio margin: a change smaller than this share is the same.")
@click.option("--pass-score", type=click.FloatRange(0, 100), default=95.0, show_default=True)
@click.option("--marginal-score", type=click.FloatRange(0, 100), default=75.0, show_default=True,
              help="Below it the canary fails; between it and --pass-score it is inconclusive.")
@click.option("--min-coverage", type=click.FloatRange(0, 1), default=0.9, show_default=True,
              help="Share of the window's steps a group's series must cover for a pass.")
@click.option("--format", "formats", multiple=True, type=click.Choice(COMPARE_FORMATS),
              help="Report format (repeatable, paired with --output); default text.")
@click.option("--output", "outputs", multiple=True, type=click.Path(dir_okay=False),
              help="Report file (repeatable); its extension gives the format when no --format is left.")
def compare(canary, control, window, end, step, prometheus_url, prometheus_token_file, prometheus_ca_file,
            request_timeout, agents, metric_specs, no_default_metrics, rate_interval, confidence, margin,
            pass_score, marginal_score, min_coverage, formats, outputs) -> None:
    """Compare a canary with its control over a window and give a verdict: pass, fail or inconclusive.

    Exit 0 pass, 1 fail, 3 inconclusive (a partial read, or a score between the thresholds),
    2 unusable input."""
    from numaguard.lint.compare.metrics import MetricError, MetricSet, parse_metric
    from numaguard.lint.compare.selector import SelectorError, parse_selector
    from numaguard.lint.compare.stats import JudgeSettings

    reports = report_targets(formats, outputs)
    for fmt, target in reports:
        if fmt not in COMPARE_FORMATS:
            raise UsageProblem(f"{target}: numaguard compare writes {', '.join(COMPARE_FORMATS)}")
    try:
        selectors = {"canary": parse_selector(canary), "control": parse_selector(control)}
        metrics = MetricSet.build([parse_metric(s) for s in metric_specs], not no_default_metrics).metrics
    except (SelectorError, MetricError) as e:
        raise UsageProblem(str(e)) from None
    if selectors["canary"].matchers == selectors["control"].matchers:
        raise UsageProblem("--canary and --control select the same series: a group compared with itself says nothing")
    if marginal_score > pass_score:
        raise UsageProblem("--marginal-score must not be above --pass-score")
    seconds, step_s = parse_duration(window), parse_duration(step)
    parse_duration(rate_interval)
    if step_s > seconds / 2:
        raise UsageProblem(f"--step {step} leaves fewer than 3 samples in --window {window}")
    settings = JudgeSettings(confidence=confidence, margin=margin, pass_score=pass_score,
                             marginal_score=marginal_score)
    if prometheus_url and agents:
        raise UsageProblem("give --prometheus or --agent, not both")
    if prometheus_url:
        comparison = _from_prometheus(prometheus_url, prometheus_token_file, prometheus_ca_file,
                                      parse_duration(request_timeout), metrics, selectors, seconds, step_s,
                                      parse_time(end), rate_interval, settings, min_coverage)
    elif agents:
        if end != "now":
            raise UsageProblem("--end needs --prometheus: the agents are sampled from now on, for --window")
        own = [m.name for m in metrics if m.shape is None]
        if own:
            raise UsageProblem(f"--metric {own[0]}: PromQL needs --prometheus; sampling the agents directly "
                               "judges the default metrics only")
        comparison = _from_agents(agents, parse_duration(request_timeout), metrics, selectors, seconds, step_s,
                                  parse_duration(rate_interval), settings, min_coverage)
    else:
        raise UsageProblem("give --prometheus URL, or --agent URL for each node agent to sample directly")
    _write(comparison, reports)
    for problem in comparison.verdict.problems:
        click.echo(f"numaguard: {problem}", err=True)
    click.echo(f"numaguard: {comparison.verdict.outcome.value}: {comparison.verdict.reason}", err=True)
    sys.exit(EXIT_CODES[comparison.verdict.outcome.value])


def _from_prometheus(url, token_file, ca_file, timeout, metrics, selectors, seconds, step, end, interval,
                     settings, min_coverage):
    from numaguard.lint.cluster.prometheus import Prometheus, QueryRejected, read_groups
    from numaguard.lint.compare.comparison import compare as judge
    from numaguard.lint.compare.series import Window

    token = _read_file(token_file, "--prometheus-token-file") if token_file else None
    try:
        prometheus = Prometheus(url, timeout=timeout, token=token, ca_file=ca_file)
    except ValueError as e:
        raise UsageProblem(str(e)) from None
    end = math.floor(end / step) * step        # steps on multiples of the step, as Grafana asks
    window = Window(end - seconds, end, step)
    try:
        reads, warnings = read_groups(prometheus, metrics, selectors, window, interval)
    except QueryRejected as e:
        raise UsageProblem(str(e)) from None
    return judge(metrics, reads, canary=selectors["canary"], control=selectors["control"], window=window,
                 source=f"Prometheus at {prometheus.url}", settings=settings, min_coverage=min_coverage,
                 source_notes=[f"Prometheus warned: {w}" for w in warnings])


def _from_agents(urls, timeout, metrics, selectors, seconds, step, interval, settings, min_coverage):
    from numaguard.lint.cluster.agents import AgentSampler, AgentUrlError, agent_url
    from numaguard.lint.compare.comparison import GroupRead
    from numaguard.lint.compare.comparison import compare as judge
    from numaguard.lint.compare.series import Window, direct_series

    try:
        urls = list(dict.fromkeys(agent_url(u) for u in urls))
    except AgentUrlError as e:
        raise UsageProblem(str(e)) from None
    span = max(1, round(interval / step))           # the rates' range, in steps (--rate-interval)
    steps = int(seconds // step) + span - 1         # reads 0..steps: the window's first rate is read `span`
    sampler = AgentSampler(urls, timeout=timeout)
    tty = sys.stderr.isatty()
    click.echo(f"numaguard: sampling {len(urls)} agent(s) every {step:g} s for {steps * step:g} s "
               f"(the window and the rates' {span * step:g} s before it)", err=True)
    scrapes, began = sampler.sample(steps, step, (lambda k, n: click.echo(f"\rnumaguard: read {k} of {n}", err=True, nl=False))
                                    if tty else None)
    if tty:
        click.echo("", err=True)
    window = Window(began + span * step, began + steps * step, step)
    reads = {m.name: {g: GroupRead(m.shape.explain(span * step),
                                   tuple(direct_series(m, scrapes, window, selectors[g], span)))
                      for g in selectors} for m in metrics}
    problems, notes = sampler.problems(steps + 1, min_coverage)
    return judge(metrics, reads, canary=selectors["canary"], control=selectors["control"], window=window,
                 source=f"{len(urls)} node agent(s) sampled directly: {', '.join(urls)}", settings=settings,
                 min_coverage=min_coverage, source_problems=problems, source_notes=notes)


def _write(comparison, reports) -> None:
    from numaguard.lint.report.compare import writer_for

    for fmt, target in reports:
        color = target is None and fmt == "text" and sys.stdout.isatty()
        write_text(writer_for(fmt)(comparison, color=color), target)
