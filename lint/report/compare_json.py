"""`numaguard compare --format json`, version 1: the verdict, the settings, and per metric its
classification, the rank test, each group's query, series, samples, coverage (with its gaps),
summary statistics and timeline. Numbers that are not numbers are null (JSON has no NaN)."""
from __future__ import annotations

import json
import math

from numaguard.lint.compare.comparison import utc


def _clean(value):
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: _clean(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_clean(v) for v in value]
    return value


def _side(result, judgement_summary) -> dict:
    cov = result.coverage
    s = judgement_summary
    return {"query": result.query, "series": result.series, "samples": int(len(result.samples)),
            "notNumbers": result.not_numbers, "error": result.error,
            "coverage": {"steps": cov.steps, "covered": cov.covered, "share": round(cov.share, 4),
                         "gaps": [[utc(a), utc(b)] for a, b in cov.gaps]},
            "summary": {"count": s.count, "mean": s.mean, "median": s.median, "p25": s.p25, "p75": s.p75,
                        "min": s.minimum, "max": s.maximum},
            "timeline": {"times": [utc(t) for t in result.timeline.times], "median": list(result.timeline.median),
                         "low": list(result.timeline.low), "high": list(result.timeline.high)}}


def _metric(r) -> dict:
    m, j = r.metric, r.judgement
    test = None if j.test is None else {"u": j.test.u, "pValue": j.test.p_value, "estimate": j.test.estimate,
                                        "low": j.test.low, "high": j.test.high, "confidence": j.test.confidence}
    return {"name": m.name, "description": m.description, "unit": m.unit, "direction": m.direction.value,
            "weight": m.weight, "critical": m.critical, "floor": m.floor, "default": m.default,
            "classification": j.classification.value, "reason": j.reason, "meanRatio": j.mean_ratio, "test": test,
            "canary": _side(r.canary, j.canary), "control": _side(r.control, j.control),
            "problems": list(r.problems), "notes": list(r.notes)}


def render(comparison, *, color: bool = False) -> str:
    v, s, w = comparison.verdict, comparison.settings, comparison.window
    report = {
        "version": 1,
        "verdict": {"outcome": v.outcome.value, "score": v.score, "reason": v.reason, "complete": not v.problems,
                    "problems": list(v.problems)},
        "canary": {"selector": comparison.canary.text}, "control": {"selector": comparison.control.text},
        "source": comparison.source,
        "window": {"start": utc(w.start), "end": utc(w.end), "step": w.step, "steps": w.steps},
        "settings": {"confidence": s.confidence, "tolerance": s.tolerance, "margin": s.margin,
                     "passScore": s.pass_score, "marginalScore": s.marginal_score,
                     "minCoverage": comparison.min_coverage},
        "metrics": [_metric(r) for r in comparison.metrics],
        "notes": list(comparison.notes),
    }
    return json.dumps(_clean(report), indent=2, allow_nan=False) + "\n"
