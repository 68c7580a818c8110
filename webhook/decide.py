"""From an AdmissionRequest to an admission decision, with the engine's findings.

The engine (`numaguard.lint.engine.lint_documents`, plain dicts in) decides what is wrong, with
the same scope and suppression rules as `numaguard lint`; this module decides what the API
server is told:

* which requests are judged at all (pods on CREATE; workload controllers on CREATE and UPDATE;
  never a subresource, DELETE or CONNECT);
* on UPDATE, only findings the new object adds (key: rule, field path, container) can deny, so
  an existing workload can still be scaled, relabelled and rolled back; errors it already had
  are repeated as warnings, after one that says what happens to the workload's new pods;
  warnings and infos it already had are not repeated;
* the mode (`enforce`, `warn`, `audit`; per namespace overrides) turns findings into a denial,
  warnings or a log record;
* a replica (`replicas.py`: a pod, ReplicaSet or Job that the built-in controller writes for an
  owner the webhook judged) is allowed, its findings in an audit annotation: its owner was
  judged when it was written;
* any other object created by a controller whose template the webhook judges gets no
  warnings (they would only reach the controller's log); its errors still deny in `enforce`;
* judging that fails (an exception anywhere in the engine) fails safe (`judge`): denied in
  `enforce` with an error id the log repeats next to the traceback, allowed with a warning
  carrying the id in `warn` and `audit`.
"""
from __future__ import annotations

import secrets
import traceback
from dataclasses import dataclass, field
from typing import Any

from numaguard.lint.carriers import BUILTIN_CARRIERS, PodCarriers
from numaguard.lint.config import Config
from numaguard.lint.engine import lint_documents, rule_context
from numaguard.lint.rules.base import LintContext
from numaguard.lint.model import Finding, Severity
from numaguard.lint.objects import api_group
from numaguard.webhook.cache import MAX_NESTING, FindingsCache, judged_view, nested_too_deep
from numaguard.webhook.replicas import REPLICATED_KINDS, Replica, replica_of
from numaguard.webhook.review import AdmissionRequest
from numaguard.webhook.text import (WARNING_MAX_CHARS, audit_findings, cut, deny_message, format_warnings,
                                    kept_errors_lead, one_line)

# (group, kind) -> (operations judged, API versions judged; () for every version). Derived
# from the carrier table (numaguard.lint.carriers: the built-in kinds, the workload CRDs and the
# config's `podTemplates`), never listed twice: a Pod is judged when it is created, a workload
# whenever its templates may change (CREATE and UPDATE), as a Deployment is.
JudgedKinds = dict[tuple[str, str], tuple[frozenset[str], tuple[str, ...]]]
POD_OPERATIONS = frozenset({"CREATE"})
WORKLOAD_OPERATIONS = frozenset({"CREATE", "UPDATE"})


def judged_kinds(carriers: PodCarriers) -> JudgedKinds:
    return {key: (POD_OPERATIONS if key == ("", "Pod") else WORKLOAD_OPERATIONS, versions)
            for key, versions in carriers.kinds().items()}


JUDGED = judged_kinds(BUILTIN_CARRIERS)
# Infos that only explain (how the pod budget is split); they are never warnings.
EXPLAINING_RULES = frozenset({"NG110"})
# Findings about the object's shape, which `audit` still reports as warnings.
INPUT_RULES = frozenset({"NG001", "NG002"})
MODES = ("enforce", "warn", "audit")

COULD_NOT_JUDGE = "numaguard could not judge this object"


@dataclass(frozen=True)
class Policy:
    """What the webhook judges with: the engine's config and the node descriptions (the
    default one and each pool's by name: a pod is judged against the node of its pool)."""

    config: Config = field(default_factory=Config)
    node: Any = None
    # None: a cache of the config's budget (webhook.cacheBytes).
    cache: FindingsCache | None = field(default=None, compare=False, repr=False)
    pool_nodes: dict[str, Any] = field(default_factory=dict)
    # The rules' context (with each node's empty NodeState the NUMA rules copy), built once
    # rather than for every object judged.
    context: LintContext = field(init=False, compare=False, repr=False)
    # The kinds judged: the built-in carriers and the config's podTemplates.
    judged: JudgedKinds = field(init=False, compare=False, repr=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "context", rule_context(self.config, self.node, self.pool_nodes))
        object.__setattr__(self, "judged", judged_kinds(self.context.carriers))
        if self.cache is None:
            object.__setattr__(self, "cache", FindingsCache(self.config.webhook_cache_bytes))

    def mode_for(self, namespace: str) -> str:
        return self.config.webhook_namespace_modes.get(namespace, self.config.webhook_mode)


@dataclass
class Decision:
    allowed: bool
    decision: str                 # allow | warn | deny | audit (audit: enforce would have denied)
    mode: str = ""
    judged: bool = False
    code: int | None = None
    message: str | None = None
    warnings: list[str] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)   # the new object's active findings
    note: str = ""                # why a request was not judged, or what went wrong
    audit_annotations: dict[str, str] = field(default_factory=dict)   # the API server prefixes the webhook's name
    replica: Replica | None = None
    error_id: str = ""            # judging failed: the id the response and the log share
    error_trace: str = ""         # ... and the traceback, for the log only

    @property
    def rule_ids(self) -> list[str]:
        return sorted({f.rule for f in self.findings})


def judge(request: AdmissionRequest, policy: Policy) -> Decision:
    """`decide`, failing safe: an exception while judging is a denial in `enforce` and an
    allowance with a warning in `warn` and `audit` (a replica is allowed all the same), each
    saying "numaguard could not judge this object" with an error id that the log repeats next
    to the traceback. The traceback never goes into the response."""
    try:
        return decide(request, policy)
    except Exception:   # noqa: BLE001 - whatever failed, the API server gets an answer
        error_id = secrets.token_hex(6)
        return _could_not_judge(request, policy, error_id, traceback.format_exc())


def _could_not_judge(request: AdmissionRequest, policy: Policy, error_id: str, trace: str) -> Decision:
    mode = policy.mode_for(request.namespace)
    what = f"{COULD_NOT_JUDGE} (error id {error_id})"
    d = Decision(True, "warn", mode=mode, judged=True, note="internal error", error_id=error_id, error_trace=trace,
                 audit_annotations={"error-id": error_id})
    replica = replica_of(request)
    if replica is not None:
        d.decision, d.replica = "allow", replica
        d.audit_annotations["replica-of"] = replica.owner
    elif mode == "enforce":
        d.allowed, d.decision, d.code = False, "deny", 403
        d.message = (f"{what}: the webhook failed while judging it, and this namespace is in enforce mode. "
                     "Retry; if it fails again, give the error id to the cluster's numaguard operators.")
    else:
        d.warnings = [f"{what}; allowed ({mode} mode). The webhook's log has the details under the error id."]
    return d


def decide(request: AdmissionRequest, policy: Policy) -> Decision:
    ops, versions = policy.judged.get((request.group, request.kind), (None, ()))
    if ops is None or versions and request.version not in versions:
        return Decision(True, "allow", note="kind not judged")
    if request.operation not in ops or request.sub_resource:
        return Decision(True, "allow", note="operation not judged")
    mode = policy.mode_for(request.namespace)
    obj = request.object
    if not isinstance(obj, dict):
        what = "null" if obj is None else type(obj).__name__
        return _invalid(mode, f"NG002 request.object: is {what}, not a {request.kind} object; "
                              "numaguard could not read it")
    findings = _active_unless_too_deep(obj, request, policy)
    if findings is None:
        return _invalid(mode, f"NG002 request.object.{nested_too_deep(obj)}: nested more than {MAX_NESTING} "
                              "levels deep, too deep to read; numaguard could not judge it")
    replica = replica_of(request)
    if replica is not None:
        return _replica(mode, replica, findings)
    old_keys: set[tuple] = set()
    old = request.old_object
    if request.operation == "UPDATE" and isinstance(old, dict):
        # an old object too deep to read has no findings to compare with: every finding is new
        old_keys = {_key(f) for f in _active_unless_too_deep(old, request, policy) or ()}
    new = [f for f in findings if _key(f) not in old_keys]
    kept = [f for f in findings if _key(f) in old_keys and f.severity is Severity.ERROR]
    quiet = _created_by_judged_controller(obj, policy.judged)
    return _apply_mode(mode, request, findings, new, kept, quiet)


def _apply_mode(mode: str, request: AdmissionRequest, findings: list[Finding], new: list[Finding],
                kept: list[Finding], quiet: bool) -> Decision:
    errors = [f for f in new if f.severity is Severity.ERROR]
    notes = [f for f in new if f.severity is not Severity.ERROR and f.rule not in EXPLAINING_RULES]
    d = Decision(True, "allow", mode=mode, judged=True, findings=findings)
    if mode == "enforce":
        warned = kept + notes
        if errors:
            d.allowed, d.decision, d.code = False, "deny", 403
            d.message = deny_message(request, errors)
    elif mode == "warn":
        warned = errors + kept + notes
    else:   # audit: allow and log; only an unreadable object is worth a warning
        warned = [f for f in errors + notes if f.rule in INPUT_RULES]
        if errors:
            d.decision = "audit"
    if not quiet:
        kept_at = frozenset(i for i, f in enumerate(warned) if any(f is k for k in kept))
        replicated = (request.group, request.kind) in REPLICATED_KINDS
        lead = [kept_errors_lead(request.kind, len(kept_at), replicated)] if kept_at and d.allowed else []
        d.warnings = format_warnings(warned, kept_at, lead)
    if d.allowed and d.warnings and d.decision == "allow":
        d.decision = "warn"
    return d


def _replica(mode: str, replica: Replica, findings: list[Finding]) -> Decision:
    """Allowed: the owner was judged when it was written. No warnings (they would reach only
    the controller's log); what the engine found goes to the API server's audit log."""
    told = [f for f in findings if f.rule not in EXPLAINING_RULES]
    annotations = {"replica-of": replica.owner}
    if told:
        annotations["findings"] = audit_findings(told)
    return Decision(True, "allow", mode=mode, judged=True, findings=findings, replica=replica,
                    audit_annotations=annotations,
                    note=f"replica of {replica.owner}, written by {replica.controller}")


def _invalid(mode: str, problem: str) -> Decision:
    if mode == "enforce":
        return Decision(False, "deny", mode=mode, judged=True, code=403,
                        message=f"numaguard denied the request: {problem}")
    return Decision(True, "warn", mode=mode, judged=True, warnings=[cut(one_line(problem), WARNING_MAX_CHARS)])


def _active(obj: dict, policy: Policy) -> list[Finding]:
    """The engine's active findings for what it reads of the object (`judged_view`), cached."""
    return policy.cache.findings(judged_view(obj, policy.context.carriers),
                                 lambda view: lint_documents([view], config=policy.config, context=policy.context).active)


def _active_unless_too_deep(obj: dict, request: AdmissionRequest, policy: Policy) -> list[Finding] | None:
    """The findings, or None for an object nested so deep that judging it (the engine, repr)
    exhausts the interpreter's stack. A RecursionError on a shallower object is a bug: it goes
    on to the fail-safe."""
    try:
        return _active(_as_kind(obj, request), policy)
    except RecursionError:
        if nested_too_deep(obj) is None:
            raise
        return None


def _as_kind(obj: dict, request: AdmissionRequest) -> dict:
    """The API server always sends kind and apiVersion; a hand-made review may not. The request's
    kind is what the API server routed on, so it wins."""
    api_version = f"{request.group}/{request.version}" if request.group else request.version
    if obj.get("kind") == request.kind and obj.get("apiVersion") == api_version:
        return obj
    return {**obj, "kind": request.kind, "apiVersion": api_version}


def _key(f: Finding) -> tuple:
    return (f.rule, f.path, f.container)


def _created_by_judged_controller(obj: dict, judged: JudgedKinds) -> bool:
    """Made by a controller whose template the webhook judged (a pod of a ReplicaSet, a Job of
    a JobSet, a pod of a PyTorchJob): the controller ownerReference names a judged kind in its
    API group (a Volcano Job is batch.volcano.sh's, not batch's). References that are not
    mappings, or whose kind or apiVersion is not a string, name no owner."""
    meta = obj.get("metadata")
    owners = meta.get("ownerReferences") if isinstance(meta, dict) else None
    if not isinstance(owners, list):
        return False
    return any(isinstance(o, dict) and o.get("controller") is True and isinstance(o.get("kind"), str)
               and isinstance(o.get("apiVersion"), str) and o["kind"] != "Pod"
               and (api_group(o["apiVersion"]), o["kind"]) in judged for o in owners)
