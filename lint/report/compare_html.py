"""`numaguard compare --format html`: one self-contained page. The verdict first, with what
made the read partial; a table of the metrics; then per metric its classification and reason,
the queries, and two pictures (numaguard.lint.report.compare_svg): both groups' distributions
and their time series over the window. Inline CSS and SVG only, under the same
Content-Security-Policy as the pool report (no script, no network load); every text that comes
from the input (selectors, queries, names, messages) is HTML-escaped."""
from __future__ import annotations

from html import escape

from numaguard.lint.report.compare_values import number, shift, window_line
from numaguard.lint.report.compare_svg import COLORS, distribution_svg, timeline_svg
from numaguard.lint.report.html import CSP

OUTCOME_COLORS = {"pass": "#b7e4c2", "fail": "#f4a3a3", "inconclusive": "#f7d774"}
CLASS_COLORS = {"better": "#b7e4c2", "worse": "#f4a3a3", "same": "#e5e7eb", "no data": "#f7d774"}

_CSS = """
body{font:14px/1.4 system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:24px;color:#111827}
h1{font-size:22px;margin:0 0 8px}h2{font-size:18px;margin:28px 0 8px;border-bottom:1px solid #e5e7eb}
h3{font-size:15px;margin:0 0 4px}.meta{color:#4b5563;font-size:12px}
.verdict{display:inline-block;padding:6px 14px;border-radius:6px;font-size:20px;font-weight:700;margin:8px 0}
.problems{border:2px solid #b45309;background:#fffbeb;padding:6px 12px;border-radius:6px}
table{border-collapse:collapse;width:100%;margin:6px 0 14px}th,td{border:1px solid #e5e7eb;padding:4px 6px;text-align:left;vertical-align:top}
th{background:#f9fafb}td.num{text-align:right;font-variant-numeric:tabular-nums}
.cls{display:inline-block;min-width:60px;text-align:center;border-radius:4px;padding:0 4px;font-weight:600}
.metric{border:1px solid #e5e7eb;border-radius:6px;padding:8px 12px;margin:10px 0}
.pictures{display:flex;flex-wrap:wrap;gap:12px}code{font-size:12px;word-break:break-all}
.axis{stroke:#9ca3af}.tick{font-size:10px;fill:#4b5563}
.key span{display:inline-block;width:12px;height:12px;margin:0 4px 0 10px;vertical-align:middle;border-radius:2px}
"""


def _badge(classification: str) -> str:
    return f'<span class="cls" style="background:{CLASS_COLORS[classification]}">{escape(classification)}</span>'


def render(comparison, *, color: bool = False, title: str = "numaguard compare") -> str:
    v = comparison.verdict
    score = f"score {v.score:g}" if v.score is not None else "no score"
    s = comparison.settings
    out = ["<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8">',
           f'<meta http-equiv="Content-Security-Policy" content="{CSP}">',
           f"<title>{escape(title)}: {escape(v.outcome.value)}</title><style>{_CSS}</style></head><body><main>",
           f"<h1>{escape(title)}</h1>",
           f'<p class="meta">canary <code>{{{escape(comparison.canary.text)}}}</code> against control '
           f'<code>{{{escape(comparison.control.text)}}}</code><br>{escape(comparison.source)}; '
           f"{escape(window_line(comparison))}</p>",
           f'<div class="verdict" id="verdict" style="background:{OUTCOME_COLORS[v.outcome.value]}">'
           f"{escape(v.outcome.value.upper())}</div>",
           f'<p id="reason">{escape(score)} (pass at {s.pass_score:g}, fail below {s.marginal_score:g}): '
           f"{escape(v.reason)}</p>"]
    if v.problems:
        out.append('<div class="problems" id="problems"><strong>The read is partial</strong>, so this is not a pass:'
                   "<ul>" + "".join(f"<li>{escape(p)}</li>" for p in v.problems) + "</ul></div>")
    out.append(_table(comparison))
    key = "".join(f'<span style="background:{c}"></span>{g}' for g, c in COLORS.items())
    out.append(f'<h2 id="metrics">Metrics</h2><p class="key">{key}. Left: each group\'s samples (bars: share '
               "of the group's samples per bin; boxes: lowest, 25th, median, 75th percentile, highest). Right: "
               "the median across the group's series at each step, the band from the lowest to the highest.</p>")
    out.extend(_section(comparison, r) for r in comparison.metrics)
    if comparison.notes:
        out.append('<h2 id="notes">Notes</h2><ul>' + "".join(f"<li>{escape(n)}</li>" for n in comparison.notes) + "</ul>")
    out.append("</main></body></html>")
    return "\n".join(out) + "\n"


def _table(comparison) -> str:
    rows = ['<table id="summary"><tr><th>metric</th><th>better</th><th>weight</th><th>canary median</th>'
            "<th>control median</th><th>mean ratio</th><th>shift [interval]</th><th>p-value</th><th>result</th></tr>"]
    for r in comparison.metrics:
        m, j = r.metric, r.judgement
        p = number(j.test.p_value) if j.test else "-"
        rows.append(f'<tr class="row"><td><a href="#m-{escape(m.name)}">{escape(m.name)}</a>'
                    f'{" (critical)" if m.critical else ""}</td><td>{m.direction.value}</td>'
                    f'<td class="num">{m.weight:g}</td><td class="num">{escape(number(j.canary.median, m.unit))}</td>'
                    f'<td class="num">{escape(number(j.control.median, m.unit))}</td>'
                    f'<td class="num">{escape(number(j.mean_ratio))}</td><td class="num">{escape(shift(r))}</td>'
                    f'<td class="num">{escape(p)}</td><td>{_badge(j.classification.value)}</td></tr>')
    rows.append("</table>")
    return "".join(rows)


def _section(comparison, r) -> str:
    m, j = r.metric, r.judgement
    queries = "".join(f"<div>{g}: <code>{escape(r.group(g).query)}</code> ({r.group(g).series} series, "
                      f"{len(r.group(g).samples)} samples, {r.group(g).coverage.share:.0%} of the window)"
                      + (f' <span class="meta">not read: {escape(r.group(g).error)}</span>' if r.group(g).error else "")
                      + "</div>" for g in ("canary", "control"))
    issues = "".join(f'<div class="meta">{escape(text)}</div>' for text in (*r.problems, *r.notes))
    samples = {g: r.group(g).samples for g in ("canary", "control")}
    timelines = {g: r.group(g).timeline for g in ("canary", "control")}
    return (f'<section class="metric" id="m-{escape(m.name)}"><h3>{escape(m.name)} {_badge(j.classification.value)}</h3>'
            f'<div class="meta">{escape(m.description)}{" · " if m.description else ""}{m.direction.value} is better'
            f' · weight {m.weight:g}{" · critical" if m.critical else ""}</div><p>{escape(j.reason)}</p>{queries}{issues}'
            f'<div class="pictures">{distribution_svg(samples, m.unit, f"{m.name}: distributions")}'
            f'{timeline_svg(timelines, comparison.window, m.unit, f"{m.name}: over the window")}</div></section>')
