"""`numaguard compare --format text`: the groups and the window, one line per metric, the
problems and notes, and the verdict last. Colour only on a terminal."""
from __future__ import annotations

from numaguard.lint.report.compare_values import number, shift, window_line

_STYLE = {"worse": "\033[31m", "fail": "\033[31m", "better": "\033[32m", "pass": "\033[32m",
          "no data": "\033[33m", "inconclusive": "\033[33m", "bold": "\033[1m", "reset": "\033[0m"}


def render(comparison, *, color: bool = False) -> str:
    def paint(text: str, style: str) -> str:
        return f"{_STYLE[style]}{text}{_STYLE['reset']}" if color and style in _STYLE else text

    out = [paint("numaguard compare", "bold") + f": canary {{{comparison.canary.text}}} against control "
           f"{{{comparison.control.text}}}",
           f"{comparison.source}; {window_line(comparison)}", ""]
    rows = [("metric", "better", "weight", "canary median", "control median", "shift [interval]", "result")]
    for r in comparison.metrics:
        unit = r.metric.unit
        name = r.metric.name + (f" ({unit})" if unit else "") + (" !" if r.metric.critical else "")
        rows.append((name, r.metric.direction.value, f"{r.metric.weight:g}", number(r.judgement.canary.median, unit),
                     number(r.judgement.control.median, unit), shift(r), r.judgement.classification.value))
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    for i, row in enumerate(rows):
        line = "  ".join(cell.ljust(widths[j]) for j, cell in enumerate(row[:-1]))
        out.append(f"  {line}  {row[-1] if i == 0 else paint(row[-1], row[-1])}".rstrip())
    out.append("")
    for r in comparison.metrics:
        out.append(f"  {r.metric.name}: {r.judgement.reason}")
    if any(r.metric.critical for r in comparison.metrics):
        out.append("  (! critical: worse fails the canary whatever the score)")
    verdict = comparison.verdict
    if verdict.problems:
        out += ["", paint("Problems (the read is partial):", "bold")] + [f"  - {p}" for p in verdict.problems]
    if comparison.notes:
        out += ["", "Notes:"] + [f"  - {n}" for n in comparison.notes]
    score = f"score {verdict.score:g}" if verdict.score is not None else "no score"
    s = comparison.settings
    out += ["", paint(f"Verdict: {verdict.outcome.value.upper()}", verdict.outcome.value)
            + f" ({score}; pass at {s.pass_score:g}, fail below {s.marginal_score:g}): {verdict.reason}"]
    return "\n".join(out) + "\n"
