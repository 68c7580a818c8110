"""`numaguard plan` as text: for each scheduler, the workloads (placed, the kubelet's rejections
and the runaway, unschedulable, stuck), the pools (nodes used, what is left per NUMA node, the
stranded share), the nodes that rejected pods, and the sweeps asked for; with two schedulers a
table side by side at the end. Renders the JSON report (numaguard.lint.plan.report)."""
from __future__ import annotations

from collections import Counter

from numaguard.lint.numa.simulate import format_memory

SHOWN = 8           # replicas, nodes listed before "and N more"


def render(report: dict) -> str:
    lines = _head(report)
    for entry in report["schedulers"]:
        lines += ["", f"== scheduler: {_scheduler(entry)} =="]
        lines += _workloads(entry) + _pools(entry) + _rejecting_nodes(entry)
        lines += _nodes_needed(entry) + _drains(entry) + _surges(entry)
        lines += _notes(entry)
    if len(report["schedulers"]) > 1:
        lines += [""] + _side_by_side(report["schedulers"])
    lines += ["", _verdict(report)]
    return "\n".join(lines) + "\n"


def _scheduler(entry: dict) -> str:
    return entry["name"] + (f" (NodeResourceTopologyMatch, {entry['scoringStrategy']})"
                            if entry.get("scoringStrategy") else " (kube-scheduler default profile)")


def _head(report: dict) -> list[str]:
    data = report["input"]
    pools = ", ".join(f"{p['name'] or '(no pool)'} {'+' if p.get('added') else ''}{p['nodes']} node(s)"
                      + (" (live)" if p["node"] == "snapshot" and not p.get("added") else "") for p in data["pools"])
    lines = [f"numaguard plan: seed {report['seed']}, {len(data['workloads'])} workload(s); pools: {pools or 'none'}"]
    snap = data.get("snapshot")
    if snap:
        lines.append(f"  from the audit snapshot {snap['file']} ({snap['takenAt'] or 'undated'}): "
                     f"{snap['nodes']} node(s), {snap['pods']} running pod(s)")
        for gap in snap.get("incomplete") or ():
            lines.append(f"  INCOMPLETE snapshot: not read: {gap}")
    for problem in data.get("problems") or ():
        lines.append(f"  INCOMPLETE input: {problem}")
    return lines


def _workloads(entry: dict) -> list[str]:
    lines = ["Workloads"]
    width = max((len(w["name"]) for w in entry["workloads"]), default=10)
    for w in entry["workloads"]:
        parts = [f"{w['placed']} placed"]
        if w["rejections"]:
            parts.append(f"{w['rejections']} kubelet rejection(s)")
        for key, word in (("unschedulable", "unschedulable"), ("stuck", "stuck"), ("gaveUp", "given up")):
            if w[key]:
                parts.append(f"{w[key]} {word}")
        lines.append(f"  {w['name']:<{width}}  {w['replicas']:>5} replica(s) ({w['countFrom']}): {', '.join(parts)}")
        troubled = [p for p in w["pods"] if p["status"] != "placed" or p["rejections"]]
        for pod in troubled[:SHOWN]:
            lines.append(f"    {pod['pod']}: {_pod_line(pod)}")
        lines += _more(troubled, "    ")
    return lines


def _pod_line(pod: dict) -> str:
    head = {"placed": f"placed on {pod['node']}", "unschedulable": "unschedulable (Pending)",
            "stuck": "stuck", "gave-up": "given up"}[pod["status"]]
    parts = [head]
    if pod["rejections"]:
        on = Counter(a["node"] for a in pod["rejections"])
        reasons = "/".join(sorted({a["reason"] for a in pod["rejections"]}))
        parts.append(f"after {len(pod['rejections'])} kubelet rejection(s), {reasons}, on "
                     + ", ".join(f"{node} ({n})" for node, n in sorted(on.items())))
    if pod["message"]:
        parts.append(pod["message"])
    return "; ".join(parts)


def _pools(entry: dict) -> list[str]:
    lines = ["Pools"]
    for p in entry["pools"]:
        free = p["free"]
        lines.append(f"  {p['name'] or '(no pool)'}: {p['nodes']} node(s), {p['nodesUsed']} used by the plan, "
                     f"{p['nodesEmpty']} empty; left {free['cpus']} CPUs, {format_memory(free['memory'])}")
        per_numa = "; ".join(f"NUMA {n}: {v['cpus']} CPUs, {format_memory(v['memory'])}"
                             for n, v in p["freePerNuma"].items())
        lines.append(f"    left per NUMA node (all nodes): {per_numa}")
        s = p["stranded"]
        if s is None:
            lines.append("    stranded: n/a (no replica of the plan pins CPUs or memory here)")
        else:
            lines.append(f"    stranded (no replica of the plan fits there): {s['cpus']} CPUs "
                         f"({s['cpuShare']:.0%} of free), {format_memory(s['memory'])} ({s['memoryShare']:.0%} of free)")
    return lines


def _rejecting_nodes(entry: dict) -> list[str]:
    nodes = [n for n in entry["nodes"] if n["rejected"]]
    if not nodes:
        return []
    lines = ["Nodes whose kubelet rejected pods"]
    for node in nodes[:SHOWN]:
        free = ", ".join(f"NUMA {k}: {v['cpus']} CPUs" for k, v in node["free"].items())
        reasons = Counter(r["reason"] for r in node["rejected"])
        pods = list(dict.fromkeys(r["pod"].split(" (replacement")[0] for r in node["rejected"]))
        lines.append(f"  {node['name']} ({free}): " + ", ".join(f"{n} {reason}" for reason, n in reasons.items())
                     + f" of {', '.join(pods[:4])}" + (f" and {len(pods) - 4} more" if len(pods) > 4 else ""))
    messages = dict.fromkeys((r["reason"], r["message"]) for n in nodes for r in n["rejected"])
    lines += [f"  {reason}: {message}" for reason, message in list(messages)[:SHOWN]]
    return lines + _more(nodes, "  ")


def _nodes_needed(entry: dict) -> list[str]:
    if "nodesNeeded" not in entry:
        return []
    lines = ["Nodes needed (searched: played, not estimated)"]
    for s in entry["nodesNeeded"]:
        played = ", ".join(f"{p['nodes']}{'' if p['clean'] else ' x'}" for p in s["plays"])
        if s["needed"] is None:
            lines.append(f"  {s['pool']}: none found: {s['reason']}")
        else:
            lines.append(f"  {s['pool']}: {s['needed']} node(s) (clean), {s['needed'] - 1} not "
                         f"(lower bound {s['lowerBound']}; played: {played or 'none'})")
    return lines


def _drains(entry: dict) -> list[str]:
    lines = []
    for d in entry.get("drain", ()):
        lines.append(f"Drain ({d['order']} first): headroom {d['headroom']} node(s)")
        for i, step in enumerate(d["steps"], 1):
            verdict = "clean" if step["clean"] else (f"{step['unplaced']} not placed again, "
                                                     f"{step['rejections']} rejection(s)"
                                                     + (f", {len(step['lost'])} bare pod(s) lost" if step["lost"] else ""))
            lines.append(f"  {i}. {step['node']}: {step['displaced']} pod(s) displaced, "
                         f"{step['placedAgain']} placed again: {verdict}")
    return lines


def _surges(entry: dict) -> list[str]:
    lines = []
    for s in entry.get("surge", ()):
        state = "complete" if s["complete"] else "STUCK"
        lines.append(f"Rolling update of {s['workload']} (maxSurge {s['maxSurge']}, maxUnavailable "
                     f"{s['maxUnavailable']}, {s['oldPods']} old pod(s)): {state}, {s['rejections']} kubelet rejection(s)")
        for r in s["rounds"][:SHOWN]:
            lines.append(f"    new {r['newAvailable']}/{r['newReplicas']} available, old {r['oldReplicas']}"
                         + (f", scaled down {len(r['scaledDown'])}" if r["scaledDown"] else ""))
        for pod in s["rejected"][:SHOWN]:
            lines.append(f"    {pod['pod']}: {_pod_line(pod)}")
    return lines


def _notes(entry: dict) -> list[str]:
    """The play's notes, and each distinct note of the nodes with how many nodes it is said of."""
    counted = Counter(note for node in entry["nodes"] for note in node["notes"])
    lines = [f"  {note}" for note in entry["notes"][:SHOWN]] + _more(entry["notes"])
    lines += [f"  {n} node(s): {note}" for note, n in counted.most_common(SHOWN)] + _more(list(counted))
    return ["Notes"] + lines if lines else []


def _side_by_side(entries: list[dict]) -> list[str]:
    rows = [("replicas", "replicas"), ("placed", "placed"), ("placed after rejections", "placedAfterRejections"),
            ("kubelet rejections", "rejections"), ("unschedulable", "unschedulable"), ("stuck", "stuck"),
            ("given up", "gaveUp")]
    lines = ["Side by side".ljust(26) + "".join(e["name"].rjust(16) for e in entries)]
    for label, key in rows:
        lines.append(f"  {label:<24}" + "".join(str(e["summary"][key]).rjust(16) for e in entries))
    lines.append(f"  {'stranded CPUs':<24}" + "".join(
        str(sum((p["stranded"] or {}).get("cpus", 0) for p in e["pools"])).rjust(16) for e in entries))
    return lines


def _verdict(report: dict) -> str:
    bad = [e["name"] for e in report["schedulers"] if not e["summary"]["clean"]]
    if report["summary"]["exitCode"] == 0:
        line = "result: every replica lands without a kubelet rejection"
    elif bad:
        line = "result: not every replica lands cleanly under " + ", ".join(bad)
    else:
        line = "result: every replica lands, but a sweep failed (see above)"
    if not report["input"].get("complete", True):
        line += " (INCOMPLETE input: see above)"
    return line


def _more(items: list, indent: str = "  ", shown: int = SHOWN) -> list[str]:
    return [f"{indent}... and {len(items) - shown} more"] if len(items) > shown else []


__all__ = ["render"]
