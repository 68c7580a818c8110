"""The pictures of the compare page, as inline SVG (no script, no fetch): a metric's
distribution in both groups (histograms on common bins, a box plot per group beneath) and its
time series over the window (each group's median across its series, with a band from the
lowest to the highest). A gap in a group's series is a break in its line, not a bridge."""
from __future__ import annotations

import time
from html import escape

import numpy as np

from numaguard.lint.report.compare_values import number

COLORS = {"canary": "#d9480f", "control": "#1c7ed6"}     # the screenshot test looks for them
WIDTH, HEIGHT = 440, 210
LEFT, RIGHT, TOP = 56, 12, 12
MAX_POINTS = 600          # a timeline longer than this is drawn from buckets of consecutive steps
BINS = 24


def _x(value: float, low: float, high: float) -> float:
    return LEFT + (value - low) / (high - low) * (WIDTH - LEFT - RIGHT)


def _range(*arrays) -> tuple[float, float]:
    values = np.concatenate([np.asarray(a, float) for a in arrays if len(a)]) if any(len(a) for a in arrays) \
        else np.zeros(1)
    low, high = float(values.min()), float(values.max())
    if high == low:
        pad = abs(low) * 0.1 or 1.0
        return low - pad, high + pad
    return low, high


def _axis_x(low: float, high: float, y: float, label=number) -> str:
    ticks = [low, (low + high) / 2, high]
    parts = [f'<line class="axis" x1="{LEFT}" y1="{y:.1f}" x2="{WIDTH - RIGHT}" y2="{y:.1f}"/>']
    for i, t in enumerate(ticks):
        anchor = ("start", "middle", "end")[i]
        parts.append(f'<text class="tick" x="{_x(t, low, high):.1f}" y="{y + 13:.1f}" text-anchor="{anchor}">'
                     f"{escape(label(t))}</text>")
    return "".join(parts)


def distribution_svg(samples: dict[str, np.ndarray], unit: str, title: str) -> str:
    """Histograms of both groups on the same bins (each as a share of its own samples), and a
    box plot per group: whiskers from the lowest to the highest sample, the box from the 25th
    to the 75th percentile, a bar at the median."""
    low, high = _range(*samples.values())
    edges = np.linspace(low, high, BINS + 1)
    plot_bottom = 130
    shares = {g: (np.histogram(v, edges)[0] / len(v) if len(v) else np.zeros(BINS)) for g, v in samples.items()}
    top_share = max(float(s.max()) for s in shares.values()) or 1.0
    parts = [f'<svg class="dist" xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {WIDTH} {HEIGHT}" '
             f'width="{WIDTH}" height="{HEIGHT}" role="img"><title>{escape(title)}</title>']
    for g, share in shares.items():
        for i, s in enumerate(share):
            if s:
                x0, x1 = _x(edges[i], low, high), _x(edges[i + 1], low, high)
                h = s / top_share * (plot_bottom - TOP)
                parts.append(f'<rect class="bar {g}" x="{x0:.1f}" y="{plot_bottom - h:.1f}" width="{max(x1 - x0 - 1, 1):.1f}" '
                             f'height="{h:.1f}" fill="{COLORS[g]}" fill-opacity="0.45"/>')
    parts.append(f'<text class="tick" x="{LEFT - 4}" y="{TOP + 8}" text-anchor="end">{top_share:.0%}</text>')
    for row, (g, values) in enumerate(samples.items()):
        y = plot_bottom + 14 + row * 16
        parts.append(f'<text class="tick" x="{LEFT - 4}" y="{y + 4}" text-anchor="end">{g}</text>')
        if not len(values):
            parts.append(f'<text class="tick" x="{LEFT + 4}" y="{y + 4}">no samples</text>')
            continue
        q0, q1, q2, q3, q4 = np.percentile(values, [0, 25, 50, 75, 100])
        xs = [_x(q, low, high) for q in (q0, q1, q2, q3, q4)]
        color = COLORS[g]
        parts.append(f'<g class="box {g}"><line x1="{xs[0]:.1f}" y1="{y}" x2="{xs[4]:.1f}" y2="{y}" stroke="{color}"/>'
                     f'<rect x="{xs[1]:.1f}" y="{y - 5}" width="{max(xs[3] - xs[1], 1):.1f}" height="10" '
                     f'fill="{color}" fill-opacity="0.3" stroke="{color}"/>'
                     f'<line x1="{xs[2]:.1f}" y1="{y - 6}" x2="{xs[2]:.1f}" y2="{y + 6}" stroke="{color}" stroke-width="2"/></g>')
    parts.append(_axis_x(low, high, HEIGHT - 22, lambda v: number(v)))
    parts.append(f'<text class="tick" x="{WIDTH - RIGHT}" y="{TOP + 8}" text-anchor="end">{escape(unit)}</text>')
    parts.append("</svg>")
    return "".join(parts)


def _buckets(timeline, step: float) -> list[tuple[float, float, float, float]]:
    """(time, median, low, high) per step, or per bucket of steps on a long window."""
    rows = list(zip(timeline.times, timeline.median, timeline.low, timeline.high))
    if len(rows) <= MAX_POINTS:
        return rows
    size = -(-len(rows) // MAX_POINTS)
    out = []
    for i in range(0, len(rows), size):
        chunk = rows[i:i + size]
        out.append((chunk[0][0], float(np.median([r[1] for r in chunk])), min(r[2] for r in chunk),
                    max(r[3] for r in chunk)))
    return out


def _runs(rows, gap: float) -> list[list]:
    """Consecutive rows, split where two are further apart than `gap` seconds."""
    runs: list[list] = []
    for row in rows:
        if runs and row[0] - runs[-1][-1][0] <= gap:
            runs[-1].append(row)
        else:
            runs.append([row])
    return runs


def timeline_svg(timelines: dict, window, unit: str, title: str) -> str:
    rows = {g: _buckets(t, window.step) for g, t in timelines.items()}
    values = [v for r in rows.values() for row in r for v in row[1:]]
    low, high = _range(np.asarray(values)) if values else (0.0, 1.0)
    bottom = HEIGHT - 24

    def y(v: float) -> float:
        return bottom - (v - low) / (high - low) * (bottom - TOP)

    def x(t: float) -> float:
        span = window.end - window.start or 1.0
        return LEFT + (t - window.start) / span * (WIDTH - LEFT - RIGHT)

    parts = [f'<svg class="timeline" xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {WIDTH} {HEIGHT}" '
             f'width="{WIDTH}" height="{HEIGHT}" role="img"><title>{escape(title)}</title>',
             f'<line class="axis" x1="{LEFT}" y1="{bottom}" x2="{WIDTH - RIGHT}" y2="{bottom}"/>',
             f'<line class="axis" x1="{LEFT}" y1="{TOP}" x2="{LEFT}" y2="{bottom}"/>',
             f'<text class="tick" x="{LEFT - 4}" y="{TOP + 8}" text-anchor="end">{escape(number(high))}</text>',
             f'<text class="tick" x="{LEFT - 4}" y="{bottom}" text-anchor="end">{escape(number(low))}</text>']
    for g, r in rows.items():
        size = max(1, -(-len(timelines[g].times) // MAX_POINTS))
        for run in _runs(r, window.step * size * 1.5):
            if len(run) == 1:
                t, m, _lo, _hi = run[0]
                parts.append(f'<circle class="point {g}" cx="{x(t):.1f}" cy="{y(m):.1f}" r="2" fill="{COLORS[g]}"/>')
                continue
            band = [f"{x(t):.1f},{y(hi):.1f}" for t, _m, _lo, hi in run] + \
                   [f"{x(t):.1f},{y(lo):.1f}" for t, _m, lo, _hi in reversed(run)]
            parts.append(f'<polygon class="band {g}" points="{" ".join(band)}" fill="{COLORS[g]}" fill-opacity="0.15"/>')
            line = " ".join(f"{x(t):.1f},{y(m):.1f}" for t, m, _lo, _hi in run)
            parts.append(f'<polyline class="median {g}" points="{line}" fill="none" stroke="{COLORS[g]}" stroke-width="1.5"/>')
    clock = lambda t: time.strftime("%H:%M:%S", time.gmtime(t))     # noqa: E731
    parts.append(f'<text class="tick" x="{LEFT}" y="{HEIGHT - 8}">{clock(window.start)}</text>'
                 f'<text class="tick" x="{WIDTH - RIGHT}" y="{HEIGHT - 8}" text-anchor="end">{clock(window.end)} UTC</text>'
                 f'<text class="tick" x="{(LEFT + WIDTH - RIGHT) / 2:.0f}" y="{HEIGHT - 8}" text-anchor="middle">'
                 f"{escape(unit)}</text></svg>")
    return "".join(parts)
