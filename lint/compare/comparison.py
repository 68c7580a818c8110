"""One canary judged against its control: each metric's series of both groups (however they
were read) into samples, coverage and a classification, then the verdict. Pure: the reading is
done by the caller (numaguard.lint.cluster.prometheus, numaguard.lint.cluster.agents)."""
from __future__ import annotations

import time
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Mapping, Sequence

import numpy as np

from numaguard.lint.compare.metrics import Metric
from numaguard.lint.compare.selector import Selector
from numaguard.lint.compare.series import Coverage, Series, Timeline, Window, coverage, samples, timeline
from numaguard.lint.compare.stats import JudgeSettings, MetricJudgement, Scored, Verdict, classify, verdict

GROUPS = ("canary", "control")


@dataclass(frozen=True)
class GroupRead:
    """What was read for one metric and one group: the query asked (or how the series were
    computed), the series, or why nothing could be read."""
    query: str
    series: tuple[Series, ...] = ()
    error: str | None = None


@dataclass(frozen=True)
class GroupResult:
    query: str
    series: int
    samples: np.ndarray = field(compare=False, repr=False)
    not_numbers: int
    coverage: Coverage
    timeline: Timeline
    error: str | None


@dataclass(frozen=True)
class MetricResult:
    metric: Metric
    judgement: MetricJudgement
    canary: GroupResult
    control: GroupResult
    problems: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()

    def group(self, name: str) -> GroupResult:
        return self.canary if name == "canary" else self.control


@dataclass(frozen=True)
class Comparison:
    canary: Selector
    control: Selector
    window: Window
    source: str
    metrics: tuple[MetricResult, ...]
    verdict: Verdict
    settings: JudgeSettings
    min_coverage: float
    notes: tuple[str, ...] = ()


def utc(t: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(t))


def _group(read: GroupRead, metric: Metric, window: Window) -> GroupResult:
    values, not_numbers = samples(read.series, metric.nan_as_zero)
    return GroupResult(read.query, len(read.series), values, not_numbers, coverage(read.series, window),
                       timeline(read.series, metric.nan_as_zero), read.error)


def _gaps(cov: Coverage, limit: int = 3) -> str:
    shown = [utc(a) if a == b else f"{utc(a)} to {utc(b)}" for a, b in cov.gaps[:limit]]
    more = f" and {len(cov.gaps) - limit} more" if len(cov.gaps) > limit else ""
    return ", ".join(shown) + more


def _findings(metric: Metric, groups: dict[str, GroupResult], min_coverage: float,
              unmatched: Sequence[str] = ()) -> tuple[list[str], list[str]]:
    """(problems, notes) of one metric's reads: what makes its judgement partial."""
    problems, notes = [], []
    failed = [g for g in GROUPS if groups[g].error]
    if failed:
        return problems, notes          # reported once for all metrics (_read_errors)
    empty = [g for g in GROUPS if not groups[g].series]
    if len(empty) == 2:
        if metric.required:
            problems.append(f"{metric.name}: the query returned no series for either group")
        else:
            notes.append(f"{metric.name}: no series in either group (the agents do not export it here)")
        return problems, notes
    if empty and empty[0] not in unmatched:
        other = GROUPS[1 - GROUPS.index(empty[0])]
        problems.append(f"{metric.name}: no series for the {empty[0]} (the {other} has "
                        f"{groups[other].series})")
    for g in GROUPS:
        result = groups[g]
        if not result.series:
            continue
        if not len(result.samples):
            problems.append(f"{metric.name}: every value of the {g} is not a number")
        elif result.coverage.share < min_coverage:
            problems.append(f"{metric.name}: the {g}'s series cover {result.coverage.share:.0%} of the "
                            f"window's {result.coverage.steps} steps; missing {_gaps(result.coverage)}")
        elif result.coverage.gaps:
            notes.append(f"{metric.name}: the {g} misses {result.coverage.steps - result.coverage.covered} "
                         f"of {result.coverage.steps} steps ({_gaps(result.coverage)})")
        if result.not_numbers and not metric.nan_as_zero:
            notes.append(f"{metric.name}: {result.not_numbers} values of the {g} were not numbers and are left out")
    return problems, notes


def _read_errors(reads: Mapping[str, Mapping[str, GroupRead]]) -> list[str]:
    """One line per distinct read error, naming the metrics and groups it hit."""
    hit: dict[str, list[str]] = defaultdict(list)
    for name, pair in reads.items():
        for g in GROUPS:
            if pair[g].error:
                hit[pair[g].error].append(f"{name} ({g})")
    return [f"not read: {error}: {', '.join(where) if len(where) <= 4 else f'{len(where)} queries'}"
            for error, where in hit.items()]


def _unmatched(grouped: Mapping[str, dict[str, GroupResult]]) -> list[str]:
    """The groups whose selector matched nothing in any metric that could be read."""
    return [g for g in GROUPS
            if any(not groups[g].error for groups in grouped.values())
            and not any(groups[g].series for groups in grouped.values())]


def compare(metrics: Sequence[Metric], reads: Mapping[str, Mapping[str, GroupRead]], *,
            canary: Selector, control: Selector, window: Window, source: str,
            settings: JudgeSettings = JudgeSettings(), min_coverage: float = 0.9,
            source_problems: Sequence[str] = (), source_notes: Sequence[str] = ()) -> Comparison:
    """`reads[metric name][group]`: what was read for each metric and group; `source_problems`
    and `source_notes`: what the source said of the read as a whole (an agent that missed
    reads, Prometheus's warnings)."""
    selectors = {"canary": canary, "control": control}
    grouped = {m.name: {g: _group(reads[m.name][g], m, window) for g in GROUPS} for m in metrics}
    unmatched = _unmatched(grouped)
    # a group that matched nothing is said once, plainly, not once per metric
    problems = [f"the {g} selector {{{selectors[g].text}}} matched no series of any metric: no pod of "
                "the group is running, or the selector is wrong" for g in unmatched]
    problems += list(source_problems) + _read_errors(reads)
    results = []
    for metric in metrics:
        groups = grouped[metric.name]
        judgement = classify(groups["canary"].samples, groups["control"].samples, metric.direction,
                             settings, floor=metric.floor)
        mine, notes = _findings(metric, groups, min_coverage, unmatched)
        results.append(MetricResult(metric, judgement, groups["canary"], groups["control"], tuple(mine), tuple(notes)))
        problems += mine
    scored = [Scored(r.metric.name, r.judgement.classification, r.metric.weight, r.metric.critical) for r in results]
    notes = tuple(source_notes) + tuple(n for r in results for n in r.notes)
    return Comparison(canary, control, window, source, tuple(results), verdict(scored, problems, settings),
                      settings, min_coverage, notes)


__all__ = ["Comparison", "GroupRead", "GroupResult", "MetricResult", "compare", "utc"]
