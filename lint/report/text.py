"""The text report: grouped by file, `file:line:col  ID  severity  message`, the fix indented
beneath, a summary line. Colour only when writing to a terminal."""
from __future__ import annotations

from itertools import groupby

from numaguard.lint.engine import LintResult
from numaguard.lint.model import unread_phrases

_COLORS = {"error": "\033[31m", "warning": "\033[33m", "info": "\033[36m", "dim": "\033[2m",
           "bold": "\033[1m", "reset": "\033[0m"}


def render(result: LintResult, *, show_suppressed: bool = False, color: bool = False) -> str:
    def paint(text: str, style: str) -> str:
        return f"{_COLORS[style]}{text}{_COLORS['reset']}" if color else text

    shown = [f for f in result.findings if (show_suppressed or not f.suppressed)
             and f.baseline_state != "unchanged"]
    out: list[str] = []
    for file, group in groupby(shown, key=lambda f: f.file or "<input>"):
        out.append(paint(file, "bold"))
        for f in group:
            where = f"{file}:{f.line or 1}:{f.column or 1}"
            what = f"{f.object}" + (f" container {f.container}" if f.container else "") if f.object else ""
            tag = " (suppressed" + (f": {f.suppress_reason}" if f.suppress_reason else "") + ")" \
                if f.suppressed else ""
            out.append(f"  {where}  {f.rule}  {paint(f.severity.value, f.severity.value)}  "
                       f"{f.message}{tag}")
            if what:
                out.append(paint(f"      object: {what}" + (f"  field: {f.path}" if f.path else ""), "dim"))
            out.append(f"      fix: {f.remediation}")
        out.append("")
    if result.fixed:
        out.append(paint("fixed since the baseline (no longer found)", "bold"))
        for entry in result.fixed:
            what = "/".join(part for part in (entry.kind, entry.namespace, entry.name) if part)
            what += f" container {entry.container}" if entry.container else ""
            field = f"  field: {entry.path}" if entry.path else ""
            out.append(f"  {entry.file or '<input>'}  {entry.rule}  {what}{field}".rstrip())
        out.append("")
    unread = result.unread_nodes
    for occ in result.nodes:          # numaguard audit: one line per node of the pool
        free = ", ".join(f"NUMA {n} {c}" for n, c in occ.free_cpus_by_numa().items())
        rejected = len(occ.rejected)
        out.append(f"node/{occ.name}: {len(occ.pods)} pod(s), free CPUs {free}"
                   + (f", {rejected} pod(s) the simulator would not admit" if rejected else "")
                   + (f"; CPU numbering assumed: {occ.topology.assumed_numbering}"
                      if occ.topology.assumed_numbering else "")
                   + (paint(f"; kubelet configuration not read: {unread[occ.name].why}", "bold")
                      if occ.name in unread else ""))
    if result.nodes:
        out.append("")
    if result.unread:             # numaguard audit: the counts below leave these out
        out.append(paint("incomplete: not read: " + "; ".join(unread_phrases(result.unread)), "bold"))
    s = result.summary
    hint = s.render_hint()
    if hint:
        out.append(f"note: {hint}")
    for note in (s.rendered_note(), s.dangling_note(), s.unwalked_note()):
        if note:
            out.append(f"note: {note}")
    tiers = s.tiers_line()
    if tiers:             # what declared the objects judged as a managed pool's, per tier
        out.append(f"tiers: {tiers}")
    reasons = ", ".join(f"{n} {reason}" for reason, n in s.skipped_by_reason.items() if n)
    in_baseline = "" if s.baseline_unchanged is None else \
        f", {s.baseline_unchanged} in baseline, {s.baseline_fixed} fixed"
    assumed = (f", {s.assumed_managed} assumed managed" if s.assumed_managed else "") + \
        (f", {s.assumed_kubelets} kubelet config(s) assumed" if s.assumed_kubelets else "")
    out.append(f"{s.files} file(s), {s.objects} object(s) checked, {s.skipped} skipped"
               f"{f' ({reasons})' if reasons else ''}, "
               f"{s.unmanaged} opted out{assumed}: {paint(str(s.counts['error']) + ' error(s)', 'error')}, "
               f"{paint(str(s.counts['warning']) + ' warning(s)', 'warning')}, "
               f"{s.counts['info']} info, {s.suppressed} suppressed{in_baseline}")
    hint = s.assumed_hint()
    if hint:
        out.append(hint)
    return "\n".join(out) + "\n"
