"""The judge: each metric's samples of the canary against the control's, then one verdict.

It follows Kayenta's NetflixACAJudge (spinnaker/kayenta a69573be9d8fededacf80817e4151a2c8df41276,
kayenta-judge/src/main/scala/com/netflix/kayenta/judge/NetflixACAJudge.scala and
classifiers/metric/MannWhitneyClassifier.scala, scorers/WeightedSumScorer.scala,
classifiers/score/ThresholdScoreClassifier.scala):

- a metric with no sample in either group has no data; identical samples, or one value
  everywhere, are the same (no test is run);
- otherwise a two-sided Mann-Whitney U test (Wilcoxon rank-sum) with a confidence interval for
  the location shift canary - control and its Hodges-Lehmann estimate, at 98% confidence
  (NetflixACAJudge's `confLevel = 0.98`). Kayenta reimplements R's `wilcox.test` normal
  approximation (kayenta-mannwhitney MannWhitney.scala `wilcoxonDiff`); here the test is
  scipy.stats.mannwhitneyu (asymptotic, continuity and tie corrections: the same
  approximation) and the interval is found as Kayenta finds it, by inverting the test: the
  shifts no one-sided test at (1 - confidence) / 2 rejects, located with scipy's Brent solver;
- the canary is higher when the whole interval lies above `tolerance` times the estimate's
  size (Kayenta's `tolerance = 0.25`, `calculateBounds`), and the effect is large enough: the
  mean ratio canary / control at least 1 + margin (Kayenta's `effectSize.allowedIncrease`,
  mean ratio ignored when a mean is zero, as `EffectSizes.meanRatio` gives NaN then) and,
  numaguard's addition, the means at least `floor` apart (a change no one would notice, such
  as a microsecond of run-queue delay per second, is not a regression however certain);
  lower likewise; which of the two is worse is the metric's direction;
- the score is the weighted share of the metrics with data that are the same or better
  (WeightedSumScorer: passing metrics over all classified ones, per group of weight; here each
  metric has its own weight); a critical metric that is worse fails the canary whatever the
  score (`criticalFailures`); the score against two thresholds gives pass (>= pass),
  inconclusive (>= marginal; Kayenta's "marginal") or fail (ThresholdScoreClassifier).
  Where Kayenta fails a run in which half the metrics have no data (`tooManyNodata`), and
  passes one with a gap it cannot see, numaguard calls both inconclusive: a partial read is
  never a pass (`Verdict.problems`).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from enum import Enum
from typing import Sequence

import numpy as np


EXACT_ESTIMATE_PAIRS = 4_000_000     # 32 MB of differences: 2,000 samples a group


class Direction(str, Enum):
    """Which way is better for a metric."""
    LOWER = "lower"       # run-queue delay, throttling, remote memory, p99 latency
    HIGHER = "higher"     # throughput


class Classification(str, Enum):
    BETTER = "better"
    WORSE = "worse"
    SAME = "same"
    NO_DATA = "no data"


class Outcome(str, Enum):
    PASS = "pass"
    FAIL = "fail"
    INCONCLUSIVE = "inconclusive"


@dataclass(frozen=True)
class JudgeSettings:
    confidence: float = 0.98      # NetflixACAJudge's confLevel
    tolerance: float = 0.25       # MannWhitneyClassifier's tolerance, a share of the estimate
    margin: float = 0.1           # the mean ratio must pass 1 + margin (or 1 - margin) to count
    pass_score: float = 95.0      # score thresholds, as Spinnaker's canary config suggests them
    marginal_score: float = 75.0


@dataclass(frozen=True)
class Summary:
    """Descriptive statistics of one group's samples (Kayenta's DescriptiveStatistics)."""
    count: int
    mean: float | None = None
    median: float | None = None
    p25: float | None = None
    p75: float | None = None
    minimum: float | None = None
    maximum: float | None = None

    @classmethod
    def of(cls, values: np.ndarray) -> "Summary":
        if not len(values):
            return cls(0)
        p25, median, p75 = np.percentile(values, [25, 50, 75])
        return cls(len(values), float(np.mean(values)), float(median), float(p25), float(p75),
                   float(np.min(values)), float(np.max(values)))


@dataclass(frozen=True)
class RankTest:
    """The Mann-Whitney U test of canary against control, and the location shift canary -
    control: its Hodges-Lehmann estimate and confidence interval."""
    u: float
    p_value: float
    estimate: float
    low: float
    high: float
    confidence: float


@dataclass(frozen=True)
class MetricJudgement:
    classification: Classification
    reason: str
    canary: Summary
    control: Summary
    test: RankTest | None = None
    mean_ratio: float | None = None       # canary mean / control mean; None when a mean is 0


def _pvalue(x: np.ndarray, y: np.ndarray, alternative: str) -> float:
    from scipy.stats import mannwhitneyu

    p = mannwhitneyu(x, y, alternative=alternative, method="asymptotic", use_continuity=True).pvalue
    return 1.0 if math.isnan(p) else float(p)      # every value tied: nothing is rejected


def rank_test(canary: np.ndarray, control: np.ndarray, confidence: float) -> RankTest:
    """Mann-Whitney U with the interval of shifts d for which neither one-sided test of
    canary - d against control rejects at (1 - confidence) / 2: the lower bound is where
    "canary - d is greater" stops being significant, the upper where "less" starts to be
    (kayenta-mannwhitney MannWhitney.scala `calculateConfidenceInterval`, from R's
    wilcox.test). The estimate is the median of the pairwise differences (Hodges-Lehmann);
    beyond EXACT_ESTIMATE_PAIRS pairs, the shift at which U is half of them (a point between
    the two middle differences)."""
    from scipy.optimize import brentq
    from scipy.stats import mannwhitneyu

    x, y = np.asarray(canary, float), np.asarray(control, float)
    result = mannwhitneyu(x, y, alternative="two-sided", method="asymptotic", use_continuity=True)
    lowest, highest = float(x.min() - y.max()), float(x.max() - y.min())
    if lowest == highest:         # each group one value: the shift is known exactly
        return RankTest(float(result.statistic), _nan_one(result.pvalue), lowest, lowest, lowest, confidence)
    half_alpha = (1.0 - confidence) / 2
    xtol = (highest - lowest) * 1e-12

    def root(f) -> float:
        a, b = f(lowest), f(highest)
        if a * b > 0:             # no sign change: the bound is the end the test cannot leave
            return lowest if a > 0 else highest
        return float(brentq(f, lowest, highest, xtol=xtol))

    low = root(lambda d: _pvalue(x - d, y, "greater") - half_alpha)
    high = root(lambda d: half_alpha - _pvalue(x - d, y, "less"))
    pairs = len(x) * len(y)
    if pairs <= EXACT_ESTIMATE_PAIRS:
        estimate = float(np.median(np.subtract.outer(x, y).ravel(), overwrite_input=True))   # no copy
    else:       # where U is half the pairs: between the two middle differences
        estimate = root(lambda d: pairs / 2 - mannwhitneyu(x - d, y, method="asymptotic").statistic)
    return RankTest(float(result.statistic), _nan_one(result.pvalue), estimate, low, high, confidence)


def _nan_one(p: float) -> float:
    return 1.0 if math.isnan(p) else float(p)


def classify(canary: Sequence[float], control: Sequence[float], direction: Direction,
             settings: JudgeSettings = JudgeSettings(), *, floor: float = 0.0) -> MetricJudgement:
    """One metric's classification (MannWhitneyClassifier.classify and compare)."""
    x, y = np.asarray(canary, float), np.asarray(control, float)
    summaries = Summary.of(x), Summary.of(y)
    if not len(x) or not len(y):
        missing = " and ".join(g for g, v in (("canary", x), ("control", y)) if not len(v))
        return MetricJudgement(Classification.NO_DATA, f"no samples from the {missing}", *summaries)
    if np.array_equal(np.sort(x), np.sort(y)):
        return MetricJudgement(Classification.SAME, "the canary's and the control's samples are identical", *summaries, None, 1.0)
    if np.unique(np.concatenate([x, y])).size == 1:
        return MetricJudgement(Classification.SAME, "one value everywhere", *summaries, None, 1.0)
    test = rank_test(x, y, settings.confidence)
    canary_mean, control_mean = summaries[0].mean, summaries[1].mean
    ratio = canary_mean / control_mean if canary_mean and control_mean else None
    bound = settings.tolerance * abs(test.estimate)
    apart = abs(canary_mean - control_mean) >= floor if floor else True
    higher = test.low > bound and (ratio is None or ratio >= 1 + settings.margin) and apart
    lower = test.high < -bound and (ratio is None or ratio <= 1 - settings.margin) and apart
    level = f"{settings.confidence:.0%}"
    if higher or lower:
        worse = higher == (direction == Direction.LOWER)
        way = "higher" if higher else "lower"
        reason = (f"the canary is {way} (shift {test.estimate:.4g}, {level} interval "
                  f"[{test.low:.4g}, {test.high:.4g}]" + (f", mean ratio {ratio:.3g}" if ratio else "")
                  + f"); {direction.value} is better")
        return MetricJudgement(Classification.WORSE if worse else Classification.BETTER, reason,
                               *summaries, test, ratio)
    return MetricJudgement(Classification.SAME, _why_same(test, bound, ratio, settings, apart, floor, level),
                           *summaries, test, ratio)


def _why_same(test: RankTest, bound: float, ratio: float | None, settings: JudgeSettings,
              apart: bool, floor: float, level: str) -> str:
    interval = f"{level} interval [{test.low:.4g}, {test.high:.4g}]"
    if test.low <= bound and test.high >= -bound:
        return f"no shift beyond {settings.tolerance:g} of the estimate {test.estimate:.4g} is certain ({interval})"
    if not apart:
        return f"the means differ by less than {floor:g} ({interval})"
    return f"the mean ratio {ratio:.3g} is within {settings.margin:g} of 1 ({interval})"


@dataclass(frozen=True)
class Scored:
    """One metric as the score sees it."""
    name: str
    classification: Classification
    weight: float = 1.0
    critical: bool = False


@dataclass(frozen=True)
class Verdict:
    outcome: Outcome
    score: float | None            # None when no metric had data in both groups
    reason: str
    problems: tuple[str, ...] = field(default_factory=tuple)


def verdict(metrics: Sequence[Scored], problems: Sequence[str] = (),
            settings: JudgeSettings = JudgeSettings()) -> Verdict:
    """The weighted score and the outcome. `problems`: what made the read partial (a group
    without samples, gaps, a query without series, an unreachable server); with any of them
    the outcome is never pass: a pass becomes inconclusive. A fail stays a fail: the metrics
    that were read already show the canary worse."""
    problems = tuple(problems)
    judged = [m for m in metrics if m.classification is not Classification.NO_DATA]
    critical = [m.name for m in judged if m.critical and m.classification is Classification.WORSE]
    total = sum(m.weight for m in judged)
    if not judged or total <= 0:
        return Verdict(Outcome.INCONCLUSIVE, None, "no metric has samples from both groups", problems)
    good = sum(m.weight for m in judged if m.classification is not Classification.WORSE)
    score = round(100.0 * good / total, 2)
    worse = [m.name for m in judged if m.classification is Classification.WORSE]
    if critical:
        return Verdict(Outcome.FAIL, score, f"critical metric worse: {', '.join(critical)}", problems)
    if score < settings.marginal_score:
        return Verdict(Outcome.FAIL, score, f"score {score:g} below {settings.marginal_score:g}; worse: "
                       f"{', '.join(worse)}", problems)
    no_data = sum(m.weight for m in metrics if m.classification is Classification.NO_DATA)
    if no_data and no_data * 2 >= no_data + total:
        problems += (f"half or more of the metrics' weight has no data ({no_data:g} of {no_data + total:g})",)
    if score < settings.pass_score:
        return Verdict(Outcome.INCONCLUSIVE, score, f"score {score:g} between {settings.marginal_score:g} and "
                       f"{settings.pass_score:g}; worse: {', '.join(worse)}", problems)
    if problems:
        return Verdict(Outcome.INCONCLUSIVE, score, f"score {score:g}, but the read is partial: "
                       + "; ".join(problems), problems)
    return Verdict(Outcome.PASS, score, f"score {score:g} at or above {settings.pass_score:g}", problems)
