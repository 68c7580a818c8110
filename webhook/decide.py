"""From an AdmissionRequest to an admission decision, with the engine's findings.

The engine (`numaguard.lint.engine.lint_documents`, plain dicts in) decides what is wrong, with
the same scope and suppression rules as `numaguard lint`; this module decides what the API
server is told:

* which requests are judged at all (pods on CREATE; workload controllers on CREATE and UPDATE;
  never a subresource, DELETE or CONNECT);
* on UPDATE, only findings the new object adds (key: rule, field path, container) can deny, so
  an existing workload can still be scaled, relabelled and rolled back; errors it already had
  are repeated as warnings;
* the mode (`enforce`, `warn`, `audit`; per namespace overrides) turns findings into a denial,
  warnings or a log record;
* an object created by a controller whose template the webhook judges (a pod of a ReplicaSet,
  a Job of a CronJob...) gets no warnings, so a 50-replica rollout does not repeat the
  template's warnings 50 times; its errors still deny in `enforce`;
* warnings are one line each, begin with the rule ID, are cut well below the API server's
  256-character limit, and their total stays well below its 4,096-character budget.
"""
from __future__ import annotations

import re
import threading
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any

from numaguard.lint.carriers import BUILTIN_CARRIERS, PodCarriers
from numaguard.lint.config import Config
from numaguard.lint.engine import lint_documents, rule_context
from numaguard.lint.rules.base import LintContext
from numaguard.lint.model import Finding, Severity
from numaguard.lint.objects import api_group
from numaguard.webhook.review import AdmissionRequest

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

# The API server's warning recorder (k8s.io/apiserver pkg/endpoints/filters/warning.go) passes
# warnings whole while their total stays within 4,096 runes; past that it re-sends every warning
# cut to 256 runes and drops the rest once the total is reached again. Staying under both
# caps below means kubectl always shows our warnings whole. (admission/v1 AdmissionResponse
# also asks for 120 characters "if possible": findings name a field, so most run longer.)
WARNING_MAX_CHARS = 200
WARNINGS_MAX_TOTAL = 3000
WARNINGS_MAX_COUNT = 12
MESSAGE_MAX_FINDINGS = 10


# Metadata that differs between replicas of one template and that no rule reads.
VOLATILE_METADATA = ("name", "generateName", "uid", "resourceVersion", "generation", "creationTimestamp",
                     "managedFields", "ownerReferences", "selfLink")


class FindingsCache:
    """The engine's findings for recently judged objects, keyed by the object without the
    metadata that differs between replicas (name, uid, managedFields, ownerReferences...).

    The pods of one ReplicaSet, StatefulSet or Job are identical apart from that metadata, and
    NUMA fit (NG301, NG302: admitting copies of the pod on a simulated node) is the expensive
    part of judging, so a rollout of 50 replicas is simulated once. Labels, annotations,
    namespace and the whole spec stay in the key: whatever the engine may read is part of it.
    Bounded (least recently used goes first) and per application, never shared.
    """

    def __init__(self, size: int = 1024) -> None:
        self.size = size
        self._items: OrderedDict[str, list[Finding]] = OrderedDict()
        self._lock = threading.Lock()
        self.hits = self.misses = 0

    def findings(self, obj: dict, judge) -> list[Finding]:
        key = _cache_key(obj)
        with self._lock:
            found = self._items.get(key)
            if found is not None:
                self._items.move_to_end(key)
                self.hits += 1
                return found
        found = judge(obj)
        with self._lock:
            self.misses += 1
            self._items[key] = found
            if len(self._items) > self.size:
                self._items.popitem(last=False)
        return found


def _cache_key(obj: dict) -> str:
    meta = obj.get("metadata")
    if isinstance(meta, dict):
        obj = {**obj, "metadata": {k: v for k, v in meta.items() if k not in VOLATILE_METADATA}}
    obj = {k: v for k, v in obj.items() if k != "status"}
    # repr, not sorted JSON: half the cost, and the API server always serializes an object's
    # fields in the same order, so equal objects give equal keys (a hand-made review with its
    # keys in another order only misses the cache).
    return repr(obj)


@dataclass(frozen=True)
class Policy:
    """What the webhook judges with: the engine's config and the node descriptions (the
    default one and each pool's by name: a pod is judged against the node of its pool)."""

    config: Config = field(default_factory=Config)
    node: Any = None
    cache: FindingsCache = field(default_factory=FindingsCache, compare=False, repr=False)
    pool_nodes: dict[str, Any] = field(default_factory=dict)
    # The rules' context (with each node's empty NodeState the NUMA rules copy), built once
    # rather than for every object judged.
    context: LintContext = field(init=False, compare=False, repr=False)
    # The kinds judged: the built-in carriers and the config's podTemplates.
    judged: JudgedKinds = field(init=False, compare=False, repr=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "context", rule_context(self.config, self.node, self.pool_nodes))
        object.__setattr__(self, "judged", judged_kinds(self.context.carriers))

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

    @property
    def rule_ids(self) -> list[str]:
        return sorted({f.rule for f in self.findings})


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
        problem = (f"NG002 request.object: is {what}, not a {request.kind} object; "
                   "numaguard could not read it")
        return _invalid(mode, problem)
    findings = _active(_as_kind(obj, request), policy)
    old_keys: set[tuple] = set()
    if request.operation == "UPDATE" and isinstance(request.old_object, dict):
        old_keys = {_key(f) for f in _active(_as_kind(request.old_object, request), policy)}
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
    d.warnings = [] if quiet else format_warnings(warned)
    if d.allowed and d.warnings and d.decision == "allow":
        d.decision = "warn"
    return d


def _invalid(mode: str, problem: str) -> Decision:
    if mode == "enforce":
        return Decision(False, "deny", mode=mode, judged=True, code=403,
                        message=f"numaguard denied the request: {problem}")
    return Decision(True, "warn", mode=mode, judged=True, warnings=[_one_line(problem, WARNING_MAX_CHARS)])


def _active(obj: dict, policy: Policy) -> list[Finding]:
    return policy.cache.findings(
        obj, lambda o: lint_documents([o], config=policy.config, context=policy.context).active)


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
    a JobSet, a pod of a PyTorchJob): the owner reference names the controller's group."""
    meta = obj.get("metadata")
    owners = meta.get("ownerReferences") if isinstance(meta, dict) else None
    if not isinstance(owners, list):
        return False
    return any(isinstance(o, dict) and o.get("controller") is True and o.get("kind") != "Pod"
               and (api_group(str(o.get("apiVersion") or "")), o.get("kind")) in judged for o in owners)


# -- text --------------------------------------------------------------------------------------
def deny_message(request: AdmissionRequest, errors: list[Finding]) -> str:
    what = f"{request.kind} {request.namespace + '/' if request.namespace else ''}{request.name or '(unnamed)'}"
    count = f"{len(errors)} error{'s' if len(errors) != 1 else ''}"
    lines = [f"numaguard: {what} has {count} (the kubelet would not give its pods their NUMA placement):"]
    for f in errors[:MESSAGE_MAX_FINDINGS]:
        lines.append(_one_line(f"{f.rule} {f.path or '(object)'}: {f.message} Fix: {f.remediation}", 600))
    if len(errors) > MESSAGE_MAX_FINDINGS:
        lines.append(f"... and {len(errors) - MESSAGE_MAX_FINDINGS} more; run `numaguard lint` on the manifest")
    return "\n".join(lines)


def format_warnings(findings: list[Finding]) -> list[str]:
    """One short line per finding, rule ID first; capped in count and total size."""
    out: list[str] = []
    total = 0
    for i, f in enumerate(findings):
        text = _one_line(f"{f.rule} {f.path or '(object)'}: {f.message}", WARNING_MAX_CHARS)
        left = len(findings) - i
        if len(out) == WARNINGS_MAX_COUNT - 1 and left > 1 or total + len(text) > WARNINGS_MAX_TOTAL - 80:
            out.append(f"numaguard: {left} more finding{'s' if left != 1 else ''}; "
                       "run `numaguard lint` on the manifest")
            break
        out.append(text)
        total += len(text)
    return out


_SPACE = re.compile(r"\s+")


def _one_line(text: str, limit: int) -> str:
    """Printable ASCII on one line (warnings travel in HTTP headers), at most `limit` chars."""
    text = _SPACE.sub(" ", text).strip()
    text = text.encode("ascii", "replace").decode("ascii")
    return text if len(text) <= limit else text[: limit - 3].rstrip() + "..."
