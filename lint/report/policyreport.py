"""wgpolicyk8s.io/v1alpha2 PolicyReport (one per namespace) and ClusterPolicyReport (objects
without a namespace: nodes' kubelet configurations, KubeletConfiguration files), as YAML
documents ready for `kubectl apply -f`.

Fields as the Policy WG's CRDs define them (kubernetes-sigs/wg-policy-prototypes,
policy-report/pkg/api/wgpolicyk8s.io/v1alpha2/policyreport_types.go) and as Kyverno, Polaris,
Trivy and Policy Reporter fill them: `results[]` with policy, rule, result
(pass|fail|warn|error|skip), severity (critical|high|medium|low|info), message, category,
source, resources, properties (strings only); `summary` counts the results by outcome.

What an incomplete `numaguard audit` could not read is reported too, as `result: error` (the
API's "the policy could not be evaluated"), so Policy Reporter shows those nodes as not
judged rather than healthy: one result per node whose kubelet configuration was not read
(its resource the Node), and one per list not read whole, for the report's scope (no
resource: the nodes or pods it left out are not known by name).
"""
from __future__ import annotations

from collections import defaultdict

import yaml

from numaguard.lint.engine import LintResult
from numaguard.lint.model import Unread

API_VERSION = "wgpolicyk8s.io/v1alpha2"
SOURCE = "numaguard"
_RESULT = {"error": "fail", "warning": "warn", "info": "pass"}
_SEVERITY = {"error": "high", "warning": "medium", "info": "info"}
_CATEGORY = {"NG0": "Input", "NG1": "Pod-level resources", "NG2": "Kubelet configuration",
             "NG3": "NUMA fit", "NG4": "Node pool"}


def _resource(f) -> list[dict]:
    ref = f.object
    if (f.file or "").startswith("node/"):      # numaguard audit: the node's kubelet configuration
        return [{"apiVersion": "v1", "kind": "Node", "name": f.file[len("node/"):]}]
    if ref is None or not ref.kind:
        return []
    out = {"apiVersion": ref.api_version or "", "kind": ref.kind, "name": ref.name or f.file or ""}
    if ref.namespace:
        out["namespace"] = ref.namespace
    return [out]


def _entry(f) -> dict:
    properties = {"file": f.file or "", "remediation": f.remediation}
    if f.line:
        properties["line"] = str(f.line)
    if f.path:
        properties["path"] = f.path
    if f.container:
        properties["container"] = f.container
    if f.suppress_reason:
        properties["suppressReason"] = f.suppress_reason
    return {"policy": f"numaguard-{f.name}", "rule": f.rule,
            "result": "skip" if f.suppressed else _RESULT[f.severity.value],
            "severity": _SEVERITY[f.severity.value], "category": _CATEGORY.get(f.rule[:3], "Other"),
            "message": f.message, "source": SOURCE, "scored": True,
            "resources": _resource(f), "properties": properties}


def _unread_entries(piece: Unread) -> list[dict]:
    """`error` results for what the audit could not read: one per node, else one for the list."""
    def entry(resources: list[dict]) -> dict:
        return {"policy": "numaguard-audit", "rule": "read", "result": "error", "category": "Audit",
                "message": f"not read, so not judged: {piece.why}", "source": SOURCE, "scored": True,
                "resources": resources, "properties": {"notRead": piece.what}}
    if piece.nodes:
        return [entry([{"apiVersion": "v1", "kind": "Node", "name": node}]) for node in piece.nodes]
    return [entry([])]


def reports(result: LintResult, *, show_suppressed: bool = True) -> list[dict]:
    by_namespace: dict[str | None, list[dict]] = defaultdict(list)
    for f in result.findings:
        if f.suppressed and not show_suppressed:
            continue
        namespace = f.object.namespace if f.object is not None else None
        by_namespace[namespace].append(_entry(f))
    for piece in result.unread:
        by_namespace[piece.namespace].extend(_unread_entries(piece))
    out = []
    for namespace in sorted(by_namespace, key=lambda n: (n is not None, n or "")):
        results = by_namespace[namespace]
        summary = {k: sum(1 for r in results if r["result"] == k)
                   for k in ("pass", "fail", "warn", "error", "skip")}
        metadata = {"name": "numaguard", "labels": {"app.kubernetes.io/managed-by": "numaguard"}}
        if namespace:
            metadata["namespace"] = namespace
        out.append({"apiVersion": API_VERSION,
                    "kind": "PolicyReport" if namespace else "ClusterPolicyReport",
                    "metadata": metadata, "summary": summary, "results": results})
    if not out:          # an empty ClusterPolicyReport says "checked, nothing found"
        out.append({"apiVersion": API_VERSION, "kind": "ClusterPolicyReport",
                    "metadata": {"name": "numaguard", "labels": {"app.kubernetes.io/managed-by": "numaguard"}},
                    "summary": {"pass": 0, "fail": 0, "warn": 0, "error": 0, "skip": 0}, "results": []})
    return out


def render(result: LintResult, *, show_suppressed: bool = True, color: bool = False) -> str:
    dumper = getattr(yaml, "CSafeDumper", yaml.SafeDumper)
    return yaml.dump_all(reports(result, show_suppressed=show_suppressed), Dumper=dumper,
                         sort_keys=False, explicit_start=True, width=1000)
