"""The JSON report, version 1 (design.md)."""
from __future__ import annotations

import json

from numaguard.lint.engine import LintResult
from numaguard.lint.model import Unread, unread_phrases

# Indented output goes through the json module's pure-Python encoder; a large report (many
# findings, or an audit's many pods on its nodes) is written compactly, by the C encoder, so
# that it costs little next to the lint itself.
INDENT_UP_TO_FINDINGS = 500


def render(result: LintResult, *, show_suppressed: bool = True, color: bool = False) -> str:
    findings = [f.as_dict() for f in result.findings if show_suppressed or not f.suppressed]
    report = {"version": 1, "findings": findings, "summary": result.summary.as_dict()}
    if result.summary.baseline_unchanged is not None:
        # With --baseline, each finding carries "baselineState" (new or unchanged) and the
        # entries no longer found are listed, in the baseline file's own words.
        report["fixed"] = [entry.as_dict() for entry in result.fixed]
    if result.nodes:          # numaguard audit: each node's simulated occupancy
        unread = result.unread_nodes
        report["nodes"] = [node_dict(o, unread.get(o.name)) for o in result.nodes]
    if result.unread:         # numaguard audit: what could not be read (the audit is incomplete)
        report["incomplete"] = unread_phrases(result.unread)
        report["unread"] = [piece.as_dict() for piece in result.unread]
    if len(findings) + sum(len(o.pods) for o in result.nodes) <= INDENT_UP_TO_FINDINGS:
        return json.dumps(report, indent=2) + "\n"
    return json.dumps(report, separators=(",", ":")) + "\n"


def node_dict(occ, unread: Unread | None = None) -> dict:
    """One node of an audit; `unread`: what of it could not be read (its kubelet configuration)."""
    out = {"name": occ.name, "policy": occ.policy, "reservedCpus": sorted(occ.reserved),
           "freeCpus": {str(n): c for n, c in occ.free_cpus_by_numa().items()},
           "freeMemory": {str(n): b for n, b in occ.free_memory.items()},
           "pods": [{"pod": p.label, "admitted": p.admitted, "reason": p.reason,
                     "numaNodes": list(p.numa_nodes), "exclusiveCpus": list(p.exclusive),
                     "podSharedCpus": list(p.shared)} for p in occ.pods],
           "notes": list(occ.notes)}
    if unread is not None:
        out["notRead"] = {"kubeletConfiguration": unread.why}
    return out
