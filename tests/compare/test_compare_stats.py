"""The judge (numaguard.lint.compare.stats): the rank test ties out with R's wilcox.test as
Kayenta's does, the classification follows each metric's direction, the score and the verdict
follow Kayenta's WeightedSumScorer and ThresholdScoreClassifier, and a judge with a planted
regression (a swapped direction, a one-sided test on the wrong side) is caught."""
from __future__ import annotations

import json
import sys
import types
from pathlib import Path

import numpy as np
import pytest

import numaguard.lint.compare.stats as stats
from conftest import FIXTURES
from numaguard.lint.compare.stats import (Classification, Direction, JudgeSettings, Outcome, Scored, classify,
                                          rank_test, verdict)

TIE_OUT = json.loads((FIXTURES / "compare" / "kayenta_r_tie_out.json").read_text())


@pytest.mark.parametrize("case", TIE_OUT["cases"], ids=lambda c: c["name"])
def test_the_interval_and_estimate_tie_out_with_r_as_kayentas_do(case):
    """Kayenta's MannWhitneySuite holds R's answers for these samples; R and Kayenta both find
    the bounds with a root finder on a step function, so they stop within 1e-4 of the step
    (R's own tolerance), and so does this one."""
    test = rank_test(np.array(case["experiment"]), np.array(case["control"]), case["confidence"])
    for key, value in case["r"].items():
        assert getattr(test, key) == pytest.approx(value, abs=1e-4), key
    assert test.low <= test.estimate <= test.high


def test_the_estimate_is_the_median_of_the_pairwise_differences():
    rng = np.random.default_rng(7)
    canary, control = rng.normal(1.3, 1, 150), rng.normal(1.0, 1, 170)
    test = rank_test(canary, control, 0.98)
    assert test.estimate == pytest.approx(np.median(np.subtract.outer(canary, control)), abs=1e-9)
    assert test.low < test.estimate < test.high
    assert test.p_value < 0.05 and test.u == pytest.approx(
        sum((c > k) + 0.5 * (c == k) for c in canary for k in control))


def test_the_interval_covers_the_true_shift_as_often_as_it_says():
    """98% intervals of 300 draws with a true shift of 0.5: at least 95% cover it, and the
    misses fall on both sides (a one-sided test on the wrong side would miss one side always)."""
    rng = np.random.default_rng(11)
    below = above = 0
    for _ in range(300):
        test = rank_test(rng.normal(0.5, 1, 40), rng.normal(0, 1, 40), 0.98)
        below += test.high < 0.5
        above += test.low > 0.5
    assert below + above <= 15
    assert below <= 10 and above <= 10


def test_each_group_one_value_gives_the_exact_shift():
    test = rank_test(np.full(20, 3.0), np.full(25, 1.0), 0.98)
    assert (test.estimate, test.low, test.high) == (2.0, 2.0, 2.0)
    judged = classify([3.0] * 20, [1.0] * 25, Direction.LOWER)
    assert judged.classification is Classification.WORSE and judged.mean_ratio == 3.0


# ----------------------------------------------------------------------------- classification

RNG = np.random.default_rng(5)
LOW, HIGH = RNG.normal(1.0, 0.1, 60), RNG.normal(2.0, 0.1, 60)


@pytest.mark.parametrize("canary, control, direction, expected", [
    (HIGH, LOW, Direction.LOWER, Classification.WORSE),      # more run-queue delay: worse
    (LOW, HIGH, Direction.LOWER, Classification.BETTER),
    (HIGH, LOW, Direction.HIGHER, Classification.BETTER),    # more throughput: better
    (LOW, HIGH, Direction.HIGHER, Classification.WORSE),
    (LOW, LOW[::-1], Direction.LOWER, Classification.SAME),  # the same samples in another order
])
def test_the_classification_follows_the_direction(canary, control, direction, expected):
    assert classify(canary, control, direction).classification is expected


def test_the_reasons_say_which_way_and_why():
    worse = classify(HIGH, LOW, Direction.LOWER)
    assert worse.reason.startswith("the canary is higher (shift 1.0") and worse.reason.endswith("lower is better")
    assert "98% interval [" in worse.reason and "mean ratio 2" in worse.reason
    assert classify(LOW, LOW[::-1], Direction.LOWER).reason == "the canary's and the control's samples are identical"
    assert classify([2.0] * 5, [2.0] * 7, Direction.LOWER).reason == "one value everywhere"
    none = classify([], LOW, Direction.LOWER)
    assert (none.classification, none.reason, none.control.count) == (Classification.NO_DATA, "no samples from the canary", 60)
    assert classify([], [], Direction.LOWER).reason == "no samples from the canary and control"


def test_overlapping_samples_are_the_same():
    rng = np.random.default_rng(9)
    judged = classify(rng.normal(1.0, 0.3, 60), rng.normal(1.02, 0.3, 60), Direction.LOWER)
    assert judged.classification is Classification.SAME
    assert judged.reason.startswith("no shift beyond 0.25 of the estimate")


def test_a_certain_but_small_change_is_within_the_margin():
    """3% more, certain with 2,000 samples each, is not 10% more (the effect-size margin)."""
    rng = np.random.default_rng(2)
    canary, control = rng.normal(1.03, 0.01, 2000), rng.normal(1.0, 0.01, 2000)
    assert rank_test(canary, control, 0.98).low > 0.02
    judged = classify(canary, control, Direction.LOWER)
    assert judged.classification is Classification.SAME and judged.reason.startswith("the mean ratio 1.03 is within 0.1 of 1")
    assert classify(canary, control, Direction.LOWER, JudgeSettings(margin=0.02)).classification is Classification.WORSE


def test_a_change_below_the_floor_is_the_same():
    """Twice as much run-queue delay, but 0.2 ms per second more: no one would notice."""
    canary, control = RNG.normal(0.0004, 0.00002, 60), RNG.normal(0.0002, 0.00002, 60)
    assert classify(canary, control, Direction.LOWER).classification is Classification.WORSE
    judged = classify(canary, control, Direction.LOWER, floor=0.01)
    assert judged.classification is Classification.SAME and judged.reason.startswith("the means differ by less than 0.01")


def test_a_zero_mean_ignores_the_ratio_as_kayenta_does():
    """Throttled in the canary, never in the control: the mean ratio has no value, the test decides."""
    judged = classify(RNG.uniform(0.2, 0.4, 60), np.zeros(60), Direction.LOWER, floor=0.01)
    assert (judged.classification, judged.mean_ratio) == (Classification.WORSE, None)


# ----------------------------------------------------------------------------- score and verdict

def _m(name, classification, weight=1.0, critical=False):
    return Scored(name, Classification(classification), weight, critical)


def test_the_score_is_the_weighted_share_of_metrics_not_worse():
    result = verdict([_m("a", "same"), _m("b", "better"), _m("c", "worse", 2), _m("d", "no data", 5)])
    assert (result.outcome, result.score) == (Outcome.FAIL, 50.0)
    assert result.reason == "score 50 below 75; worse: c"
    assert verdict([_m("a", "same", 19), _m("b", "worse")]).outcome is Outcome.PASS            # 95
    middle = verdict([_m("a", "same", 4), _m("b", "worse")])                                     # 80
    assert (middle.outcome, middle.score, middle.reason) == (Outcome.INCONCLUSIVE, 80.0,
                                                             "score 80 between 75 and 95; worse: b")
    assert verdict([_m("a", "same", 3), _m("b", "worse")]).outcome is Outcome.INCONCLUSIVE       # 75: not below


def test_a_critical_metric_worse_fails_whatever_the_score():
    result = verdict([_m("a", "same", 99), _m("p99", "worse", 1, critical=True)])
    assert (result.outcome, result.score, result.reason) == (Outcome.FAIL, 99.0, "critical metric worse: p99")


def test_a_partial_read_is_never_a_pass():
    partial = verdict([_m("a", "same")], ["latency: the query returned no series for either group"])
    assert (partial.outcome, partial.score) == (Outcome.INCONCLUSIVE, 100.0)
    assert partial.reason == "score 100, but the read is partial: latency: the query returned no series for either group"
    assert verdict([_m("a", "worse"), _m("b", "same")], ["gaps"]).outcome is Outcome.FAIL       # a fail stays one
    nothing = verdict([_m("a", "no data")])
    assert (nothing.outcome, nothing.score, nothing.reason) == (Outcome.INCONCLUSIVE, None,
                                                                "no metric has samples from both groups")
    half = verdict([_m("a", "same"), _m("b", "no data")])
    assert half.outcome is Outcome.INCONCLUSIVE
    assert half.problems == ("half or more of the metrics' weight has no data (1 of 2)",)


# ----------------------------------------------------------------------------- planted regressions

def judge_checks(module) -> None:
    """What a judge must get right, asked of `module` (stats or a mutant of it)."""
    rng = np.random.default_rng(1)
    slow, fast = rng.normal(2.0, 0.2, 50), rng.normal(1.0, 0.2, 50)
    assert module.classify(slow, fast, module.Direction.LOWER).classification is module.Classification.WORSE
    assert module.classify(fast, slow, module.Direction.LOWER).classification is module.Classification.BETTER
    assert module.classify(slow, fast, module.Direction.HIGHER).classification is module.Classification.BETTER
    twin = rng.normal(2.0, 0.2, 50)
    bare = module.JudgeSettings(margin=0.0)           # the interval alone decides
    assert module.classify(slow, twin, module.Direction.LOWER, bare).classification is module.Classification.SAME
    assert module.classify(twin, slow, module.Direction.LOWER, bare).classification is module.Classification.SAME
    test = module.rank_test(slow, fast, 0.98)
    assert test.low < 1.0 < test.high and test.low < test.estimate < test.high
    case = TIE_OUT["cases"][0]
    tied = module.rank_test(np.array(case["experiment"]), np.array(case["control"]), case["confidence"])
    assert tied.low == pytest.approx(case["r"]["low"], abs=1e-4) and tied.high == pytest.approx(case["r"]["high"], abs=1e-4)
    _bounds_are_the_order_statistics(module.rank_test(slow, fast, 0.98), slow, fast, 0.98)
    outcome = module.verdict([module.Scored("a", module.Classification.WORSE), module.Scored("b", module.Classification.SAME)])
    assert outcome.outcome is module.Outcome.FAIL
    better = module.verdict([module.Scored("a", module.Classification.BETTER), module.Scored("b", module.Classification.SAME)])
    assert (better.outcome, better.score) == (module.Outcome.PASS, 100.0)


def _bounds_are_the_order_statistics(test, x, y, confidence) -> None:
    """Without ties, the normal approximation's bounds are the pairwise differences that leave
    nm/2 - z*sigma - 1/2 of them outside on each side (Hollander and Wolfe, the large-sample
    form): each bound lies between two neighbouring sorted differences around that rank."""
    from scipy.stats import norm

    diffs = np.sort(np.subtract.outer(x, y).ravel())
    n, m = len(x), len(y)
    outside = n * m / 2 - norm.ppf(1 - (1 - confidence) / 2) * np.sqrt(n * m * (n + m + 1) / 12) - 0.5
    k = int(np.floor(outside))
    assert diffs[k - 1] <= test.low <= diffs[k + 1], (test.low, diffs[k - 1:k + 2])
    assert diffs[-k - 2] <= test.high <= diffs[-k], (test.high, diffs[-k - 2:-k + 1])


def test_the_bounds_are_the_order_statistics_of_the_differences():
    rng = np.random.default_rng(4)
    for confidence in (0.9, 0.95, 0.98):
        x, y = rng.normal(0.2, 1, 70), rng.normal(0, 1, 90)
        _bounds_are_the_order_statistics(rank_test(x, y, confidence), x, y, confidence)


SLIPS = [
    ("the direction swapped", "worse = higher == (direction == Direction.LOWER)",
     "worse = higher != (direction == Direction.LOWER)"),
    ("the lower bound from the one-sided test on the wrong side", '_pvalue(x - d, y, "greater")', '_pvalue(x - d, y, "less")'),
    ("the upper bound from the one-sided test on the wrong side", '_pvalue(x - d, y, "less")', '_pvalue(x - d, y, "greater")'),
    ("the interval at the wrong level", "half_alpha = (1.0 - confidence) / 2", "half_alpha = 1.0 - confidence"),
    ("better counted against the score", "if m.classification is not Classification.WORSE)",
     "if m.classification is Classification.SAME)"),
    ("the tolerance ignored on the upper side", "higher = test.low > bound", "higher = test.high > bound"),
]


def test_the_judge_passes_its_checks():
    judge_checks(stats)


@pytest.mark.parametrize("what, old, new", SLIPS, ids=[s[0] for s in SLIPS])
def test_a_planted_regression_in_the_statistics_is_caught(what, old, new, monkeypatch):
    with pytest.raises(AssertionError):
        judge_checks(mutant_of(old, new, monkeypatch))


def mutant_of(old: str, new: str, monkeypatch) -> types.ModuleType:
    """numaguard.lint.compare.stats with `old` replaced by `new` (once), as a module."""
    source = Path(stats.__file__).read_text(encoding="utf-8")
    assert source.count(old) == 1, f"the slip {old!r} no longer applies: update SLIPS"
    mutant = types.ModuleType("stats_mutant")
    monkeypatch.setitem(sys.modules, "stats_mutant", mutant)      # dataclasses look their module up
    exec(compile(source.replace(old, new), "stats_mutant.py", "exec"), mutant.__dict__)
    return mutant
