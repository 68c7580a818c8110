"""Benchmark `numaguard compare`'s judge and reports (numaguard.lint.compare).

    python tests/bench/bench_compare.py [--repeat 5]

1. The judge on a 30-minute window at 30 s for 10 containers a group (610 samples a group) and
   10 metrics (the 8 defaults and 2 of the user's), half of them shifted: median seconds, against
   a baseline measured in the same run: one plain scipy.stats.mannwhitneyu per metric (what any
   rank test costs; the judge also inverts it for the interval, with a Brent solver).
2. The largest exact estimate: 2,000 samples a group (4 million pairwise differences): seconds
   and the peak memory it adds (tracemalloc), against the 610-sample metric.
3. The three reports of case 1: milliseconds and bytes each, the HTML against the JSON.
"""
from __future__ import annotations

import argparse
import statistics
import time
import tracemalloc

import numpy as np
from scipy.stats import mannwhitneyu

from numaguard.lint.compare.comparison import GroupRead, compare
from numaguard.lint.compare.metrics import MetricSet, parse_metric
from numaguard.lint.compare.selector import parse_selector
from numaguard.lint.compare.series import Series, Window
from numaguard.lint.compare.stats import Direction, classify
from numaguard.lint.report.compare import writer_for

WINDOW = Window(1_800_000_000, 1_800_000_000 + 1800, 30)
SHIFTED = {"runqueue-delay", "cpu-pressure", "involuntary-context-switches", "cpu-throttled-time", "p99"}


def group(rng, level: float, containers: int = 10) -> tuple[Series, ...]:
    return tuple(Series((("pod", f"p{i}"),), tuple((WINDOW.time(k), float(rng.lognormal(np.log(level), 0.2)))
                                                    for k in range(WINDOW.steps))) for i in range(containers))


def reads_for(metrics, rng) -> dict:
    return {m.name: {"canary": GroupRead("q", group(rng, 0.5 if m.name in SHIFTED else 0.05)),
                     "control": GroupRead("q", group(rng, 0.05))} for m in metrics}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    rng = np.random.default_rng(1)
    metrics = MetricSet.build([parse_metric("p99:q{ {{selector}} }:lower"),
                               parse_metric("rps:q{ {{selector}} }:higher")]).metrics
    reads = reads_for(metrics, rng)
    canary, control = parse_selector('pod=~"c.*"'), parse_selector('pod=~"s.*"')

    def judge():
        return compare(metrics, reads, canary=canary, control=control, window=WINDOW, source="bench")

    result = judge()                      # warm-up: scipy's import, numpy's first calls
    times = []
    for _ in range(args.repeat):
        start = time.perf_counter()
        judge()
        times.append(time.perf_counter() - start)
    samples = {name: (np.array([v for s in r["canary"].series for _t, v in s.points]),
                      np.array([v for s in r["control"].series for _t, v in s.points])) for name, r in reads.items()}
    base = []
    for _ in range(args.repeat):
        start = time.perf_counter()
        for x, y in samples.values():
            mannwhitneyu(x, y, method="asymptotic")
        base.append(time.perf_counter() - start)
    judged, baseline = statistics.median(times), statistics.median(base)
    print(f"1. judge, 10 metrics x 2 x {len(samples['p99'][0])} samples: {judged:.3f} s "
          f"(baseline, one mannwhitneyu per metric: {baseline * 1000:.1f} ms; ratio {judged / baseline:.0f}x); "
          f"verdict {result.verdict.outcome.value}, score {result.verdict.score}")

    big_x, big_y = rng.normal(1.1, 0.2, 2000), rng.normal(1.0, 0.2, 2000)
    tracemalloc.start()
    start = time.perf_counter()
    classify(big_x, big_y, Direction.LOWER)
    big = time.perf_counter() - start
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    tracemalloc.start()
    start = time.perf_counter()
    classify(*samples["p99"], Direction.LOWER)
    small = time.perf_counter() - start
    _, small_peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    print(f"2. one metric of 2 x 2,000 samples (4 M pairs): {big:.3f} s, peak {peak / 2**20:.1f} MiB; "
          f"of 2 x 610: {small:.3f} s, peak {small_peak / 2**20:.1f} MiB (ratio {big / small:.1f}x time, "
          f"{peak / max(small_peak, 1):.1f}x memory)")

    sizes = {}
    for fmt in ("text", "json", "html"):
        start = time.perf_counter()
        text = writer_for(fmt)(result)
        sizes[fmt] = (time.perf_counter() - start, len(text.encode()))
    print("3. reports: " + ", ".join(f"{fmt} {t * 1000:.0f} ms {n / 1024:.0f} KiB" for fmt, (t, n) in sizes.items())
          + f" (html/json: {sizes['html'][1] / sizes['json'][1]:.2f}x bytes)")


if __name__ == "__main__":
    main()
