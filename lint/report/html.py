"""The pool report: one self-contained HTML page built for triage.

From the top: the summary; in-page filters (severity, pool, rule); a fleet overview with one
tile per node, grouped by pool (`NodeOccupancy.pool`; one group when the run names none),
coloured by the node's worst finding, with its free and used exclusive CPUs per NUMA node and
its stranded CPUs (numaguard.lint.numa.occupancy.stranded_cpus), nodes with errors first; then
one section per node in the same order (its NUMA map, its pods, the pods its kubelet rejected,
its findings), open when it needs attention and collapsed when healthy; the findings tied to no
node; the findings by workload; the rules met, with their fix. Findings are sorted errors first.

Inline CSS, no scripts, no fetches: the page carries a Content-Security-Policy that forbids
every network load and every script. The filters are CSS only: hidden checkboxes and radio
buttons ahead of `<main>`, and rules such as `#f-s-info:not(:checked) ~ main .sf.s-info` that
hide what they do not select. Every value that comes from the input (messages quote user
values, NG002's among them) is HTML-escaped; class names are built from rule ids reduced to
letters and digits and from pool positions, never from user text.
"""
from __future__ import annotations

import re
from collections import defaultdict
from dataclasses import dataclass, field
from html import escape

from numaguard.lint.engine import LintResult
from numaguard.lint.k8s.cpuset import format_cpuset
from numaguard.lint.model import unread_phrases
from numaguard.lint.numa.occupancy import stranded_cpus
from numaguard.lint.report.numa_svg import MAP_CSS, legend_svg, node_svg, patterns_svg
from numaguard.lint.rules.registry import rules_by_id

CSP = "default-src 'none'; style-src 'unsafe-inline'"
SEVERITIES = ("error", "warning", "info")
# A node's state, worst first: its worst finding, or "unread" (its kubelet configuration could
# not be read: not judged, so never shown healthy), or "ok" (no finding).
RANK = {"error": 0, "warning": 1, "unread": 2, "info": 3, "ok": 4}
# Tile colours by a node's state; the screenshot test looks for them
TILE_COLORS = {"error": "#f4a3a3", "warning": "#f7d774", "unread": "#c4c8cf", "info": "#a9d6f0", "ok": "#b7e4c2"}
STATES = (*SEVERITIES, "unread", "ok")
# Up to this many nodes every node has its map and lists its pods; beyond, only the nodes
# needing attention do (the others, collapsed, give their counts: their tile has their CPUs),
# which keeps a 500-node page small and quick to lay out.
FULL_DETAIL_NODES = 50

_CSS = """
body{font:14px/1.4 system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:24px;color:#111827}
h1{font-size:22px;margin:0 0 8px}h2{font-size:18px;margin:28px 0 8px;border-bottom:1px solid #e5e7eb}
h3{font-size:15px;margin:18px 0 6px}
.counts span{display:inline-block;margin-right:14px;padding:2px 8px;border-radius:4px;background:#f3f4f6}
.counts .error{background:#fee2e2}.counts .warning{background:#fef3c7}.counts .info{background:#e0f2fe}
table{border-collapse:collapse;width:100%;margin:6px 0 14px}th,td{border:1px solid #e5e7eb;padding:4px 6px;text-align:left;vertical-align:top}
th{background:#f9fafb}td.sev-error{color:#b91c1c;font-weight:600}td.sev-warning{color:#b45309;font-weight:600}td.sev-info{color:#0369a1}
.node{margin:6px 0;border:1px solid #e5e7eb;border-radius:6px;padding:4px 10px;content-visibility:auto;contain-intrinsic-size:auto 28px}
.node>summary{cursor:pointer;font-weight:600}
.node .policy,.node .note,.meta,.pods{color:#4b5563;font-size:12px}.node .meta{font-weight:400}
.badge{display:inline-block;min-width:52px;text-align:center;border-radius:4px;padding:0 4px;font-size:12px}
.numa-box{fill:#fff;stroke:#9ca3af}.numa-label{font-size:11px;font-weight:600}.numa-free{font-size:10px;fill:#4b5563}
.legend text{font-size:11px}.rejected{color:#b91c1c;font-weight:600}code{font-size:12px}
.filters{margin:10px 0;font-size:13px}.filters label{display:inline-block;margin:2px 4px 2px 0;padding:1px 8px;border:1px solid #9ca3af;border-radius:10px;cursor:pointer;color:#6b7280}
.toggle{position:absolute;left:-9999px}
.tiles{display:flex;flex-wrap:wrap;gap:4px;align-items:flex-start}.pool{content-visibility:auto;contain-intrinsic-size:auto 400px}
.tile{display:block;width:132px;min-height:60px;overflow:hidden;padding:3px 5px;border-radius:4px;color:#111827;text-decoration:none;font-size:11px;line-height:13px}
.tile b{display:block;white-space:nowrap;overflow:hidden;text-overflow:ellipsis;font-size:12px}
.tile i{display:block;font-style:normal;padding-left:44px;background:linear-gradient(90deg,#374151 calc(var(--u)*.4px),#fff 0) 0 50%/40px 6px no-repeat}
.key span{display:inline-block;width:12px;height:12px;margin:0 4px 0 10px;vertical-align:middle;border-radius:2px}
"""


def _token(text: str) -> str:
    """A class-name part from input text: letters, digits and dashes only."""
    return re.sub(r"[^A-Za-z0-9-]", "", text) or "x"


def _order(f) -> tuple:
    return (RANK[f.severity.value], f.file or "", f.line or 0, f.rule)


@dataclass
class _Node:
    occ: object
    pool: int
    findings: list = field(default_factory=list)
    unread: str = ""            # why its kubelet configuration could not be read ("": it was)

    @property
    def worst(self) -> str:
        states = [f.severity.value for f in self.findings] + (["unread"] if self.unread else [])
        return min(states, key=RANK.__getitem__, default="ok")

    @property
    def attention(self) -> bool:
        """Errors or warnings, not read, or pods rejected by its kubelet or by the simulator."""
        return RANK[self.worst] <= RANK["unread"] or bool(self.occ.rejected or self.occ.kubelet_rejected)

    def count(self, severity: str) -> int:
        return sum(f.severity.value == severity for f in self.findings)

    def classes(self, prefix: str) -> str:
        rules = " ".join(sorted({f"r-{_token(f.rule)}" for f in self.findings}))
        return f"{prefix} pf p-{self.pool} sf s-{self.worst} rf {rules}".rstrip()


def render(result: LintResult, *, show_suppressed: bool = False, color: bool = False,
           title: str = "numaguard report") -> str:
    findings = sorted((f for f in result.findings if show_suppressed or not f.suppressed), key=_order)
    pools = sorted({o.pool for o in result.nodes}, key=lambda p: (p is None, p or ""))
    unread = result.unread_nodes
    nodes = {o.name: _Node(o, pools.index(o.pool), unread=unread[o.name].why if o.name in unread else "")
             for o in result.nodes}
    where = {f"pod/{p.label}": o.name for o in result.nodes for p in o.pods}
    where.update({f"pod/{label}": o.name for o in result.nodes for label, _reason in o.kubelet_rejected})
    unplaced = []
    for f in findings:
        name = _node_of(f.file or "", where)
        (nodes[name].findings if name in nodes else unplaced).append(f)
    ordered = sorted(nodes.values(), key=lambda n: (RANK[n.worst], not n.attention, n.occ.name))
    rules = sorted({f.rule for f in findings})
    out = ["<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8">',
           f'<meta http-equiv="Content-Security-Policy" content="{CSP}">',
           f"<title>{escape(title)}</title><style>{_CSS}{MAP_CSS}{_filter_css(pools, rules)}</style></head><body>",
           _filter_inputs(pools, rules), "<main>", f"<h1>{escape(title)}</h1>",
           _summary(result, findings, ordered), _filter_bar(pools, rules, findings)]
    if ordered:
        detail = len(ordered) <= FULL_DETAIL_NODES
        out.append(_overview(ordered, pools))
        out.append(f'<h2 id="nodes">Nodes</h2>{patterns_svg()}{legend_svg(any(o.resident for o in result.nodes))}')
        out.extend(_node_section(n, pools, detail or n.attention) for n in ordered)
        out.append('<h2 id="unplaced">Findings tied to no node</h2>')
        out.append(_findings_table(unplaced, lambda f: "p-none"))
    out.append('<h2 id="by-workload">Findings by workload</h2>')
    out.append(_by_workload(result, findings, where, nodes))
    out.append(_rules_met(rules, findings))
    out.append("</main></body></html>")
    return "\n".join(out) + "\n"


def _node_of(file: str, where: dict[str, str]) -> str | None:
    for prefix in ("node/", "nrt/"):
        if file.startswith(prefix):
            return file[len(prefix):]
    return where.get(file)


# ------------------------------------------------------------------------------- filters

def _filter_inputs(pools: list, rules: list[str]) -> str:
    """The filters' state: hidden inputs that come before <main>, so CSS can follow them."""
    inputs = [f'<input class="toggle" type="checkbox" id="f-s-{s}" checked>' for s in STATES]
    if len(pools) > 1:
        inputs.append('<input class="toggle" type="radio" name="pool" id="f-p-all" checked>')
        inputs += [f'<input class="toggle" type="radio" name="pool" id="f-p-{i}">' for i in range(len(pools))]
    inputs.append('<input class="toggle" type="radio" name="rule" id="f-r-all" checked>')
    inputs += [f'<input class="toggle" type="radio" name="rule" id="f-r-{_token(r)}">' for r in rules]
    return "".join(inputs)


def _filter_css(pools: list, rules: list[str]) -> str:
    css = [f"#f-s-{s}:not(:checked)~main .sf.s-{s}{{display:none}}"
           f"#f-s-{s}:checked~main label[for=f-s-{s}]{{color:#111827;border-color:#111827;background:#f3f4f6}}"
           for s in STATES]
    for key in (["all"] + [str(i) for i in range(len(pools))]) if len(pools) > 1 else []:
        css.append(f"#f-p-{key}:checked~main label[for=f-p-{key}]{{color:#111827;border-color:#111827}}")
        if key != "all":
            css.append(f"#f-p-{key}:checked~main .pf:not(.p-{key}){{display:none}}")
    for key in ["all"] + [_token(r) for r in rules]:
        css.append(f"#f-r-{key}:checked~main label[for=f-r-{key}]{{color:#111827;border-color:#111827}}")
        if key != "all":
            css.append(f"#f-r-{key}:checked~main .rf:not(.r-{key}){{display:none}}")
    css += [f".tile.s-{s},.badge.s-{s}{{background:{c}}}" for s, c in TILE_COLORS.items()]
    return "".join(css)


def _filter_bar(pools: list, rules: list[str], findings) -> str:
    counts = {s: sum(f.severity.value == s for f in findings) for s in SEVERITIES}
    parts = ['<div class="filters" id="filters">Show: ']
    parts += [f'<label for="f-s-{s}">{s} ({counts[s]})</label>' for s in SEVERITIES]
    parts.append('<label for="f-s-unread">nodes not read</label><label for="f-s-ok">nodes without findings</label>')
    if len(pools) > 1:
        parts.append(' · pool: <label for="f-p-all">all</label>')
        parts += [f'<label for="f-p-{i}">{escape(_pool_name(p))}</label>' for i, p in enumerate(pools)]
    if rules:
        parts.append(' · rule: <label for="f-r-all">all</label>')
        parts += [f'<label for="f-r-{_token(r)}">{escape(r)}</label>' for r in rules]
    parts.append("</div>")
    return "".join(parts)


def _pool_name(pool: str | None) -> str:
    return pool if pool is not None else "no pool named"


# ------------------------------------------------------------------------------- sections

def _summary(result: LintResult, findings, ordered: list[_Node]) -> str:
    s = result.summary
    counts = {sev: sum(f.severity.value == sev for f in findings) for sev in SEVERITIES}
    nodes = ""
    if ordered:
        worst = {r: sum(n.worst == r for n in ordered) for r in RANK}
        not_read = sum(bool(n.unread) for n in ordered)
        nodes = (f"<span>{len(ordered)} node(s): {worst['error']} with errors, {worst['warning']} with warnings, "
                 + (f"{not_read} not read, " if not_read else "")
                 + f"{sum(not n.attention for n in ordered)} healthy</span>")
    out = (f'<div class="counts" id="summary"><span>{s.files} file(s)</span><span>{s.objects} object(s)</span>'
           f'{nodes}<span class="error">{counts["error"]} error(s)</span>'
           f'<span class="warning">{counts["warning"]} warning(s)</span><span class="info">{counts["info"]} info</span>'
           f"<span>{s.suppressed} suppressed</span></div>")
    tiers = s.tiers_line()
    if tiers:             # what declared the objects judged as a managed pool's, per tier
        out += f'<p class="meta" id="tiers">Tiers: {escape(tiers)}.</p>'
    if result.unread:     # numaguard audit: the counts above leave out what could not be read
        out += (f'<p class="rejected" id="incomplete"><strong>Incomplete audit.</strong> Not read: '
                f'{escape("; ".join(unread_phrases(result.unread)))}.</p><ul class="unread">'
                + "".join(f"<li>{escape(piece.why)}</li>" for piece in result.unread) + "</ul>")
    return out


def _overview(ordered: list[_Node], pools: list) -> str:
    key = "".join(f'<span style="background:{TILE_COLORS[s]}"></span>{label}' for s, label in (
        ("error", "an error"), ("warning", "a warning"), ("unread", "not read"), ("info", "info only"),
        ("ok", "no finding")))
    out = ['<h2 id="overview">Fleet overview</h2>',
           f'<p class="key">Worst finding: {key}. Per NUMA node: the CPUs held by pods (bar) and the CPUs '
           "free for exclusive use; stranded: free CPUs the pool's smallest pinned pod does not fit in.</p>"]
    for i, pool in enumerate(pools):
        members = [n for n in ordered if n.pool == i]
        smallest = min((size for n in members for size in n.occ.pinned_sizes()), default=None)
        worst = {r: sum(n.worst == r for n in members) for r in RANK}
        out.append(f'<section class="pool pf p-{i}"><h3>{"pool " + escape(pool) if pool is not None else "pool"}: '
                   f"{len(members)} node(s), {worst['error']} with errors, {worst['warning']} with warnings"
                   + (f"; smallest pinned pod {smallest} CPUs" if smallest else "") + '</h3><div class="tiles">')
        out.extend(_tile(n, smallest) for n in members)
        out.append("</div></section>")
    return "".join(out)


def _tile(n: _Node, smallest: int | None) -> str:
    occ = n.occ
    free, used = occ.free_cpus_by_numa(), occ.used_cpus_by_numa()
    counts = " ".join(f"{n.count(s)}{s[0].upper()}" for s in SEVERITIES if n.count(s))
    numa = []
    for node_id in sorted(free):       # a bar of the CPUs held (CSS --u: percent), then the free ones
        total = free[node_id] + used[node_id]
        share = round(100 * used[node_id] / total) if total else 0
        numa.append(f'<i style="--u:{share}">N{node_id} {free[node_id]} free</i>')
    stranded = stranded_cpus(occ, smallest)
    rejected = len(occ.rejected) + len(occ.kubelet_rejected)
    tail = (f"stranded {stranded}" if stranded is not None else "") + (f" · {rejected} rejected" if rejected else "")
    state = ("not read" + (f" · {counts}" if counts else "")) if n.unread else counts or "no findings"
    return (f'<a class="{n.classes("tile")}" href="#node-{escape(occ.name)}" title="node/{escape(occ.name)}">'
            f"<b>{escape(occ.name)}</b>{state}{''.join(numa)}{tail}</a>")


def _node_section(n: _Node, pools: list, detail: bool) -> str:
    occ = n.occ
    free = ", ".join(f"NUMA {k}: {c} CPUs" for k, c in occ.free_cpus_by_numa().items())
    counts = ", ".join(f"{n.count(s)} {s}(s)" for s in SEVERITIES if n.count(s)) or "no findings"
    pool = f" · pool {escape(pools[n.pool])}" if pools[n.pool] is not None else ""
    parts = [f'<details class="{n.classes("node")}" id="node-{escape(occ.name)}"{" open" if n.attention else ""}>',
             f'<summary><span class="badge s-{n.worst}">{n.worst}</span> node/{escape(occ.name)} '
             f'<span class="meta">{counts}{pool}</span></summary>',
             f'<div class="policy">{escape(occ.policy)} · reserved CPUs {len(occ.reserved)} · free {free}</div>']
    if n.unread:
        parts.append(f'<div class="rejected">Kubelet configuration not read: {escape(n.unread)}</div>')
    parts += [f'<div class="note">{escape(note)}</div>' for note in occ.notes]
    if detail:
        parts.append(node_svg(occ))
    parts.append(_pods(occ, detail))
    if n.findings:
        parts.append(_findings_table(n.findings, lambda f: f"p-{n.pool}"))
    parts.append("</details>")
    return "".join(parts)


def _pods(occ, detail: bool) -> str:
    pinned = sum(bool(p.exclusive or p.shared) for p in occ.pods if p.admitted)
    if not detail:
        return (f'<p class="pods">{len(occ.pods)} pod(s): {pinned} hold CPUs of their own, '
                f"{len(occ.pods) - pinned - len(occ.rejected)} run in the node's shared pool.</p>")
    if not occ.pods and not occ.kubelet_rejected:
        return '<p class="pods">No pods.</p>'
    rows = ["<table><tr><th>pod</th><th>outcome</th><th>NUMA</th><th>exclusive CPUs</th><th>pod shared pool</th></tr>"]
    for label, reason in occ.kubelet_rejected:
        rows.append(f'<tr><td>{escape(label)}</td><td class="rejected">rejected by the kubelet: {escape(reason)}</td>'
                    "<td></td><td></td><td></td></tr>")
    for p in sorted(occ.pods, key=lambda p: p.admitted):
        outcome = ("admitted" if p.admitted else
                   f'<span class="rejected">not admitted by the simulator: {escape(p.reason or "")}</span>')
        rows.append(f"<tr><td>{escape(p.label)}</td><td>{outcome}</td><td>{','.join(map(str, p.numa_nodes))}</td>"
                    f"<td>{len(p.exclusive)} {format_cpuset(p.exclusive)}</td><td>{len(p.shared)}</td></tr>")
    rows.append("</table>")
    return "".join(rows)


def _findings_table(findings, pool_of) -> str:
    """A table of `findings` (sorted already); `pool_of(finding)`: its pool filter class."""
    if not findings:
        return "<p>No findings.</p>"
    defaults = rules_by_id()
    rows = ["<table><tr><th>rule</th><th>severity</th><th>where</th><th>object</th><th>message</th><th>fix</th></tr>"]
    for f in findings:
        where = escape(f.file or "<input>") + (f":{f.line}" if f.line else "")
        obj = escape(str(f.object)) if f.object else ""
        if f.container:
            obj += f" container {escape(f.container)}"
        rule = defaults.get(f.rule)
        fix = (f'<a href="#rule-{_token(f.rule)}">the rule\'s</a>' if rule is not None and rule.remediation == f.remediation
               else escape(f.remediation))
        sev = f.severity.value
        rows.append(f'<tr class="finding {pool_of(f)} pf sf s-{sev} rf r-{_token(f.rule)}"><td>{escape(f.rule)} '
                    f'<code>{escape(f.name)}</code></td><td class="sev-{sev}">{sev}</td><td>{where}</td>'
                    f"<td>{obj}</td><td>{escape(f.message)}</td><td>{fix}</td></tr>")
    rows.append("</table>")
    return "".join(rows)


def _by_workload(result: LintResult, findings, where: dict[str, str], nodes: dict[str, _Node]) -> str:
    groups: dict[str, list] = defaultdict(list)
    for f in findings:
        file = f.file or ""
        groups[result.workloads.get(file) or (str(f.object) if f.object else file or "<input>")].append(f)
    if not groups:
        return "<p>No findings.</p>"
    def pool_of(f) -> str:
        node = nodes.get(_node_of(f.file or "", where) or "")
        return f"p-{node.pool}" if node is not None else "p-none"

    return "".join(f"<h3>{escape(name)}</h3>{_findings_table(groups[name], pool_of)}"
                   for name in sorted(groups, key=lambda g: (min(RANK[f.severity.value] for f in groups[g]), g)))


def _rules_met(rules: list[str], findings) -> str:
    if not rules:
        return ""
    known = rules_by_id()
    rows = ['<h2 id="rules">Rules in this report</h2><table><tr><th>rule</th><th>findings</th><th>what</th>'
            "<th>fix</th></tr>"]
    for r in rules:
        rule = known.get(r)
        what, fix = (escape(rule.title), escape(rule.remediation)) if rule else ("", "")
        rows.append(f'<tr id="rule-{_token(r)}"><td>{escape(r)} <code>{escape(rule.name) if rule else ""}</code></td>'
                    f"<td>{sum(f.rule == r for f in findings)}</td><td>{what}</td><td>{fix}</td></tr>")
    rows.append("</table>")
    return "".join(rows)
