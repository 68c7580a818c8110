"""`numaguard plan --format html`: one self-contained page (no scripts, no fetches, the pool
report's Content-Security-Policy and styles) with the schedulers side by side: for each, the
workloads and pools tables, the sweeps, and the pool drawn node by node with the simulator's
NUMA map (numaguard.lint.report.numa_svg), its CPUs coloured by the workload that holds them,
and the replicas the node's kubelet rejected listed under it.

Nodes whose pods sit alike (one template, the same workloads on the same CPUs) are drawn once,
named together, so a pool of a thousand nodes stays a page of a few dozen maps; nodes that
rejected pods are drawn first and each lists its own rejections. At most `MAX_GROUPS` maps per
scheduler; the rest are counted.
"""
from __future__ import annotations

from collections import Counter
from html import escape

from numaguard.lint.numa.occupancy import NodeOccupancy, outcome_of
from numaguard.lint.numa.simulate import format_memory
from numaguard.lint.report.html import CSP, _CSS
from numaguard.lint.report.numa_svg import CELL, LABELS, MAP_CSS, node_svg, patterns_svg

MAX_GROUPS = 60
PALETTE = ("#2563eb", "#dc2626", "#16a34a", "#9333ea", "#ea580c", "#0891b2", "#ca8a04", "#db2777",
           "#4d7c0f", "#7c3aed", "#0f766e", "#b45309")
_PLAN_CSS = """
.cols{display:grid;grid-template-columns:repeat(var(--n),minmax(0,1fr));gap:20px}
.sched{min-width:0}.warn{background:#fef3c7;padding:6px 10px;border-radius:4px}
.bad{color:#b91c1c;font-weight:600}.ok{color:#15803d;font-weight:600}
.rejected li{color:#b91c1c}.numa-map{max-width:100%;height:auto}
"""


def render(report: dict, runs: dict) -> str:
    workloads = [w["name"] for w in report["schedulers"][0]["workloads"]] if report["schedulers"] else []
    colours = {name: PALETTE[i % len(PALETTE)] for i, name in enumerate(workloads)}
    classes = {name: f"w{i}" for i, name in enumerate(workloads)}
    css = "".join(f".{c}{{fill:url(#ng-cpu-{c})}}" for c in classes.values())
    title = "numaguard plan"
    out = ["<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8">',
           f'<meta http-equiv="Content-Security-Policy" content="{CSP}">',
           f"<title>{title}</title><style>{_CSS}{MAP_CSS}{_PLAN_CSS}{css}</style></head><body><main>",
           f"<h1>{title}</h1>", _inputs(report), _verdict(report),
           patterns_svg({c: colours[name] for name, c in classes.items()}), _legend(colours)]
    if len(report["schedulers"]) > 1:
        out.append(_side_by_side(report["schedulers"]))
    out.append(f'<div class="cols" style="--n:{len(report["schedulers"])}">')
    for entry in report["schedulers"]:
        out.append(_scheduler(entry, runs.get(entry["name"]), classes))
    out.append("</div></main></body></html>")
    return "\n".join(out) + "\n"


def _inputs(report: dict) -> str:
    data = report["input"]
    pools = ", ".join(f"{escape(str(p['name']))}: {'+' if p.get('added') else ''}{p['nodes']} node(s)"
                      for p in data["pools"])
    parts = [f'<p class="meta">seed {report["seed"]}; pools: {pools or "none"}; '
             f'{len(data["workloads"])} workload(s)</p>']
    snap = data.get("snapshot")
    if snap:
        parts.append(f'<p class="meta">from the audit snapshot {escape(snap["file"])} '
                     f'({escape(snap["takenAt"] or "undated")}): {snap["nodes"]} node(s), {snap["pods"]} pod(s)</p>')
    gaps = [f"snapshot not read: {g}" for g in (snap or {}).get("incomplete") or ()] + list(data.get("problems") or ())
    if gaps:
        parts.append('<div class="warn"><b>Incomplete input</b><ul>' + "".join(f"<li>{escape(g)}</li>" for g in gaps)
                     + "</ul></div>")
    return "".join(parts)


def _verdict(report: dict) -> str:
    if report["summary"]["exitCode"] == 0:
        return '<p class="ok">Every replica lands without a kubelet rejection.</p>'
    bad = [e["name"] for e in report["schedulers"] if not e["summary"]["clean"]]
    what = ("Not every replica lands cleanly under " + ", ".join(bad)) if bad else "A sweep failed"
    return f'<p class="bad">{escape(what)}.</p>'


def _legend(colours: dict[str, str]) -> str:
    items = "".join(f'<span style="background:{c}"></span>{escape(name)}' for name, c in colours.items())
    fixed = "".join(f'<span class="c-{s[0]}" style="background:{colour}"></span>{escape(LABELS[s])}'
                    for s, colour in (("reserved", "#6b7280"), ("free", "#d1fae5")))
    return f'<p class="key">{items}{fixed}</p>'


def _side_by_side(entries: list[dict]) -> str:
    rows = (("replicas", "replicas"), ("placed", "placed"), ("placed after rejections", "placedAfterRejections"),
            ("kubelet rejections", "rejections"), ("unschedulable", "unschedulable"), ("stuck", "stuck"),
            ("given up", "gaveUp"))
    head = "".join(f"<th>{escape(e['name'])}</th>" for e in entries)
    body = "".join(f"<tr><td>{label}</td>" + "".join(f"<td>{e['summary'][key]}</td>" for e in entries) + "</tr>"
                   for label, key in rows)
    return f'<h2 id="side-by-side">Side by side</h2><table class="compare"><tr><th></th>{head}</tr>{body}</table>'


def _scheduler(entry: dict, run, classes: dict[str, str]) -> str:
    name = escape(entry["name"])
    out = [f'<section class="sched" id="s-{name}"><h2>{name}'
           + (f" ({escape(entry['scoringStrategy'])})" if entry.get("scoringStrategy") else "") + "</h2>",
           _workload_table(entry), _unplaced(entry), _pool_table(entry), _sweeps(entry)]
    if run is not None:
        out.append(_nodes(entry, run, classes))
    out.append("</section>")
    return "".join(out)


def _workload_table(entry: dict) -> str:
    rows = []
    for w in entry["workloads"]:
        bad = w["rejections"] or w["unschedulable"] or w["stuck"] or w["gaveUp"]
        rows.append(f'<tr class="{"bad" if bad else ""}"><td>{escape(w["name"])}</td><td>{w["replicas"]}</td>'
                    f'<td>{w["placed"]}</td><td>{w["rejections"]}</td><td>{w["unschedulable"]}</td>'
                    f'<td>{w["stuck"] + w["gaveUp"]}</td></tr>')
    return ("<h3>Workloads</h3><table><tr><th>workload</th><th>replicas</th><th>placed</th>"
            "<th>kubelet rejections</th><th>unschedulable</th><th>stuck</th></tr>" + "".join(rows) + "</table>")


def _unplaced(entry: dict) -> str:
    """The replicas that did not land, with why (the scheduler's message, or the runaway)."""
    pods = [p for w in entry["workloads"] for p in w["pods"] if p["status"] != "placed"]
    if not pods:
        return ""
    items = "".join(f'<li><b>{escape(p["pod"])}</b> {escape(p["status"])}'
                    + (f' after {len(p["rejections"])} kubelet rejection(s)' if p["rejections"] else "")
                    + f': {escape(p["message"] or "")}</li>' for p in pods[:20])
    more = f"<li>and {len(pods) - 20} more</li>" if len(pods) > 20 else ""
    return f'<h3>Not placed ({len(pods)})</h3><ul class="unplaced">{items}{more}</ul>'


def _pool_table(entry: dict) -> str:
    rows = []
    for p in entry["pools"]:
        s = p["stranded"]
        stranded = "n/a" if s is None else f'{s["cpus"]} CPUs ({s["cpuShare"]:.0%}), {format_memory(s["memory"])}'
        rows.append(f'<tr><td>{escape(str(p["name"] or "(no pool)"))}</td><td>{p["nodes"]}</td><td>{p["nodesUsed"]}</td>'
                    f'<td>{p["free"]["cpus"]} CPUs, {format_memory(p["free"]["memory"])}</td><td>{stranded}</td></tr>')
    return ("<h3>Pools</h3><table><tr><th>pool</th><th>nodes</th><th>used</th><th>left</th><th>stranded</th></tr>"
            + "".join(rows) + "</table>")


def _sweeps(entry: dict) -> str:
    out = []
    for s in entry.get("nodesNeeded", ()):
        found = "none found: " + s["reason"] if s["needed"] is None else f"{s['needed']} node(s)"
        out.append(f"<li>nodes needed in {escape(s['pool'])}: {escape(found)}</li>")
    for d in entry.get("drain", ()):
        out.append(f"<li>drain ({escape(d['order'])} first): headroom {d['headroom']} node(s): "
                   + ", ".join(f"{escape(step['node'])} {'clean' if step['clean'] else 'not clean'}"
                               for step in d["steps"]) + "</li>")
    for s in entry.get("surge", ()):
        out.append(f"<li>rolling update of {escape(s['workload'])}: {'complete' if s['complete'] else 'stuck'}, "
                   f"{s['rejections']} kubelet rejection(s)</li>")
    return f"<h3>Sweeps</h3><ul>{''.join(out)}</ul>" if out else ""


def _occupancy(node) -> NodeOccupancy:
    state = node.state
    return NodeOccupancy(name=node.name, topology=state.topology, reserved=state.reserved_cpus,
                         policy=f"{state.policy_name}/{state.pinned_scope}",
                         pods=[outcome_of(r.label, r.placement) for r in node.pods],
                         free_memory={n: v.get("memory", 0) for n, v in state.free_memory_by_numa().items()},
                         pool=node.pool, topology_policy=state.policy_name)


def _nodes(entry: dict, run, classes: dict[str, str]) -> str:
    groups: dict[tuple, list] = {}
    for node in sorted(run.pool.nodes.values(), key=lambda n: n.name):
        key = (node.template, tuple((r.workload, tuple(sorted(r.placement.taken_cpus()))) for r in node.pods))
        groups.setdefault(key, []).append(node)
    ordered = sorted(groups.values(), key=lambda g: (not any(n.rejections for n in g), g[0].name))
    out = ['<h3>Nodes</h3>']
    few = len(ordered) <= 8
    for members in ordered[:MAX_GROUPS]:
        out.append(_group(members, classes, few))
    if len(ordered) > MAX_GROUPS:
        rest = sum(len(g) for g in ordered[MAX_GROUPS:])
        out.append(f'<p class="meta">and {rest} more node(s) in {len(ordered) - MAX_GROUPS} other layouts</p>')
    return "".join(out)


def _group(members: list, classes: dict[str, str], open_all: bool) -> str:
    node = members[0]
    holders = {r.label: classes.get(r.workload, "c-e") for r in node.pods}

    def cell(state: str, holder: str) -> str:
        return holders.get(holder, f"c-{state[0]}") if state in ("exclusive", "shared") else f"c-{state[0]}"

    names = ", ".join(escape(n.name) for n in members[:6]) + (f" and {len(members) - 6} more" if len(members) > 6 else "")
    counts = Counter(r.workload or "(running before)" for r in node.pods)
    pods = ", ".join(f"{n} {escape(w)}" for w, n in counts.items()) or "no pods"
    rejected = [(n.name, r) for n in members for r in n.rejections]
    attention = " open" if rejected or open_all else ""
    parts = [f'<details class="node"{attention}><summary>{names} <span class="meta">({len(members)} node(s), '
             f'{escape(str(node.pool or "no pool"))}; {pods})</span></summary>', node_svg(_occupancy(node), cell)]
    if rejected:
        parts.append(f'<p class="rejected">Rejected by the kubelet here ({len(rejected)}):</p><ul class="rejected">'
                     + "".join(f"<li>{escape(where)}: {escape(r.label)}: {escape(r.reason)}</li>"
                               for where, r in rejected[:20])
                     + (f"<li>and {len(rejected) - 20} more</li>" if len(rejected) > 20 else "") + "</ul>")
    parts.append("</details>")
    return "".join(parts)


__all__ = ["render", "CELL"]
