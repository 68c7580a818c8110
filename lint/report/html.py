"""One self-contained HTML page: the summary, a NUMA map of every node (SVG: reserved,
exclusive, pod-shared and free CPUs, so fragmentation across the pool shows at a glance), the
findings by node and by workload, and every finding. Inline CSS, no scripts, no fetches: the
page carries a Content-Security-Policy that forbids every network load."""
from __future__ import annotations

from collections import defaultdict
from html import escape

from numaguard.lint.engine import LintResult
from numaguard.lint.report.numa_svg import legend_svg, node_svg

CSP = "default-src 'none'; style-src 'unsafe-inline'"

_CSS = """
body{font:14px/1.4 system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:24px;color:#111827}
h1{font-size:22px;margin:0 0 8px}h2{font-size:18px;margin:28px 0 8px;border-bottom:1px solid #e5e7eb}
h3{font-size:15px;margin:18px 0 6px}
.counts span{display:inline-block;margin-right:14px;padding:2px 8px;border-radius:4px;background:#f3f4f6}
.counts .error{background:#fee2e2}.counts .warning{background:#fef3c7}.counts .info{background:#e0f2fe}
table{border-collapse:collapse;width:100%;margin:6px 0 14px}th,td{border:1px solid #e5e7eb;padding:4px 6px;text-align:left;vertical-align:top}
th{background:#f9fafb}td.sev-error{color:#b91c1c;font-weight:600}td.sev-warning{color:#b45309;font-weight:600}td.sev-info{color:#0369a1}
.node{margin:10px 0 18px}.node .policy,.node .note{color:#4b5563;font-size:12px}
.numa-box{fill:#fff;stroke:#9ca3af}.numa-label{font-size:11px;font-weight:600}.numa-free{font-size:10px;fill:#4b5563}
.legend text{font-size:11px}.cpu{stroke:#374151;stroke-width:.5}.rejected{color:#b91c1c;font-weight:600}
code{font-size:12px}
"""


def _findings_table(findings) -> str:
    if not findings:
        return "<p>No findings.</p>"
    rows = ["<table><tr><th>rule</th><th>severity</th><th>where</th><th>object</th><th>message</th><th>fix</th></tr>"]
    for f in findings:
        where = escape(f.file or "<input>") + (f":{f.line}" if f.line else "")
        obj = escape(str(f.object)) if f.object else ""
        if f.container:
            obj += f" container {escape(f.container)}"
        rows.append(f'<tr class="finding" data-rule="{f.rule}"><td>{f.rule} <code>{escape(f.name)}</code></td>'
                    f'<td class="sev-{f.severity.value}">{f.severity.value}</td><td>{where}</td>'
                    f"<td>{obj}</td><td>{escape(f.message)}</td><td>{escape(f.remediation)}</td></tr>")
    rows.append("</table>")
    return "".join(rows)


def _node_section(occ) -> str:
    free = ", ".join(f"NUMA {n}: {c} CPUs" for n, c in occ.free_cpus_by_numa().items())
    parts = [f'<div class="node" id="node-{escape(occ.name)}" data-node="{escape(occ.name)}">',
             f"<h3>node/{escape(occ.name)}</h3>",
             f'<div class="policy">{escape(occ.policy)} · reserved CPUs {len(occ.reserved)} · free {free}</div>']
    parts += [f'<div class="note">{escape(n)}</div>' for n in occ.notes]
    parts.append(node_svg(occ))
    if occ.pods:
        parts.append("<table><tr><th>pod</th><th>outcome</th><th>NUMA</th><th>exclusive CPUs</th><th>pod shared pool</th></tr>")
        for p in occ.pods:
            outcome = "admitted" if p.admitted else f'<span class="rejected">rejected: {escape(p.reason or "")}</span>'
            parts.append(f"<tr><td>{escape(p.label)}</td><td>{outcome}</td>"
                         f"<td>{','.join(map(str, p.numa_nodes))}</td><td>{len(p.exclusive)}</td>"
                         f"<td>{len(p.shared)}</td></tr>")
        parts.append("</table>")
    parts.append("</div>")
    return "".join(parts)


def render(result: LintResult, *, show_suppressed: bool = False, color: bool = False,
           title: str = "numaguard report") -> str:
    findings = [f for f in result.findings if show_suppressed or not f.suppressed]
    s = result.summary
    nodes = list(result.nodes)
    on_node = {f"pod/{p.label}": occ.name for occ in nodes for p in occ.pods}
    by_node: dict[str, list] = defaultdict(list)
    by_workload: dict[str, list] = defaultdict(list)
    for f in findings:
        file = f.file or ""
        if file.startswith("node/"):
            by_node[file[len("node/"):]].append(f)
        elif file in on_node:
            by_node[on_node[file]].append(f)
        by_workload[result.workloads.get(file) or (str(f.object) if f.object else file or "<input>")].append(f)
    out = ["<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8">',
           f'<meta http-equiv="Content-Security-Policy" content="{CSP}">',
           f"<title>{escape(title)}</title><style>{_CSS}</style></head><body>",
           f"<h1>{escape(title)}</h1>",
           f'<div class="counts" id="summary"><span>{s.files} file(s)</span><span>{s.objects} object(s)</span>'
           f'<span>{len(nodes)} node(s)</span><span class="error">{s.counts["error"]} error(s)</span>'
           f'<span class="warning">{s.counts["warning"]} warning(s)</span><span class="info">{s.counts["info"]} info</span>'
           f"<span>{s.suppressed} suppressed</span></div>"]
    if result.unread:     # numaguard audit: the counts above leave out what could not be read
        out.append(f'<p class="rejected" id="incomplete"><strong>Incomplete audit.</strong> Not read: '
                   f'{escape("; ".join(result.unread))}.</p>')
    if nodes:
        rejected = sum(len(o.rejected) for o in nodes)
        out.append(f'<h2 id="map">NUMA map</h2><p>{len(nodes)} node(s); {rejected} pod(s) the simulator '
                   f"would not admit where they run.</p>{legend_svg()}")
        out.extend(_node_section(o) for o in nodes)
    out.append('<h2 id="by-node">Findings by node</h2>')
    if by_node:
        for name in sorted(by_node):
            out.append(f"<h3>node/{escape(name)}</h3>{_findings_table(by_node[name])}")
    else:
        out.append("<p>No finding is tied to a node.</p>")
    out.append('<h2 id="by-workload">Findings by workload</h2>')
    for name in sorted(by_workload):
        out.append(f"<h3>{escape(name)}</h3>{_findings_table(by_workload[name])}")
    if not by_workload:
        out.append("<p>No findings.</p>")
    out.append(f'<h2 id="findings">All findings</h2>{_findings_table(findings)}</body></html>')
    return "\n".join(out) + "\n"
