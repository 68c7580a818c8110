"""Values as the compare reports write them: numbers for people, the shift and its interval,
the window."""
from __future__ import annotations

import math


def number(value: float | None, unit: str = "") -> str:
    """A value for people: 4 significant digits, `-` for none."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "-"
    text = f"{value:.4g}"
    return f"{text} {unit}" if unit and unit != "ratio" else text


def shift(metric_result) -> str:
    """The estimated shift canary - control and its interval, or why there is none."""
    test = metric_result.judgement.test
    if test is None:
        return "-"
    return f"{number(test.estimate)} [{number(test.low)}, {number(test.high)}]"


def window_line(comparison) -> str:
    from numaguard.lint.compare.comparison import utc

    w = comparison.window
    return (f"{utc(w.start)} to {utc(w.end)}, {w.steps} steps of {w.step:g} s; "
            f"{comparison.settings.confidence:.0%} confidence")
