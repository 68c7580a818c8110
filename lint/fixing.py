"""What `numaguard fix` changes in one file: parsed documents and the findings of the lint run
in, the edits that fix them out (no files, no terminal).

A finding is keyed on its path in its document (the document found by the finding's line and
column). Each fix comes from its rule's fix function (`numaguard.lint.rules.fixes_pods`,
`fixes_kubelet`) and is tried on a copy of the document: the engine lints the result, and the
fix is kept only when its finding is gone and no error of a rule without a fix appeared (an
error of a fixable rule is fixed in turn, e.g. NG105's raised cpu request rounded up by NG104).
At the end the document may not have more errors of any rule, for any pod, than it started
with; otherwise none of its fixes is kept. Whatever is not fixed is listed with why.

Kubelet settings are fixed where they are a plain mapping the kubelet (or the platform) merges
as written: a KubeletConfiguration document, an EKS NodeConfig's `spec.kubelet.config`, an
OpenShift KubeletConfig's `spec.kubeletConfig`. Carriers that keep them in strings, patches,
flags or derived fields (kind, kubeadm, Cluster API, PerformanceProfile, Talos, GKE,
Karpenter, eksctl, MachineConfig) are left alone: a value there may be overridden by another
layer, or written in the platform's own terms.
"""
from __future__ import annotations

import copy
import re
from collections import Counter
from dataclasses import dataclass, field, replace
from functools import partial
from typing import Any, Callable, Iterable

from numaguard.lint.config import Config
from numaguard.lint.engine import Selection, lint_documents
from numaguard.lint.load.documents import Document, expand_lists, position_of
from numaguard.lint.load.roundtrip import REMOVE, remove_key
from numaguard.lint.model import Finding, ObjectRef, Path, Severity, dotted_path
from numaguard.lint.objects import Classified, PodTarget, classify
from numaguard.lint.rules.base import LintContext
from numaguard.lint.rules.fixes import CannotFix, Edit
from numaguard.lint.rules.fixes_kubelet import KUBELET_FIXES
from numaguard.lint.rules.fixes_pods import POD_FIXES

FIXES = {**POD_FIXES, **KUBELET_FIXES}
# The order fixes are tried in: a budget before its checks, a request lowered to (NG114) or set
# to (NG103) its limit before both are rounded (NG104), gates before policies (a removed gate
# the kubelet refuses first).
FIX_ORDER = ("NG101", "NG114", "NG103", "NG104", "NG105", "NG210", "NG201", "NG202", "NG203", "NG205", "NG204",
             "NG208")
MAX_STEPS = 50          # fixes tried in one document (each step keeps at most one)
MISSING = object()      # Change.old of a field that was not there
NOTHING_TO_CHANGE = ("its fix has nothing to change here: the value it would write is not written in this "
                     "object, or is already what it would write")


@dataclass(frozen=True)
class FixSettings:
    """What the lint run used (config, rule selection with the config's severities, node) and
    which rules' findings to fix."""

    config: Config
    selection: Selection
    context: LintContext
    rules: frozenset[str]
    node: Any = None


@dataclass(frozen=True)
class Change:
    path: Path                  # in the document
    old: Any                    # MISSING when the field was not there
    new: Any


@dataclass(frozen=True)
class AppliedFix:
    rule: str
    document: int
    line: int | None            # the finding's (None: a follow-up of another fix)
    object: ObjectRef | None
    changes: tuple[Change, ...]
    subject: Path = ()          # the pod spec (or object) it fixed, in the document


@dataclass(frozen=True)
class LeftAlone:
    rule: str
    line: int | None
    object: ObjectRef | None
    path: str
    message: str
    reason: str


@dataclass
class FilePlan:
    fixes: list[AppliedFix] = field(default_factory=list)
    left: list[LeftAlone] = field(default_factory=list)
    edits: dict[int, list[Edit]] = field(default_factory=dict)     # document index -> edits, in order
    before: dict[int, Any] = field(default_factory=dict)           # document index -> its data unfixed


def plan_file(documents: list[Document], findings: Iterable[Finding], settings: FixSettings,
              dropins: list[Document] = ()) -> FilePlan:
    """The fixes for `findings` (one file's, from a lint run over `documents` and `dropins`)."""
    plan = FilePlan()
    wanted: dict[int, dict[tuple, Finding]] = {}
    for f in findings:
        if f.rule not in settings.rules or f.suppressed:
            continue
        located = _locate(documents, f)
        if located is None:
            plan.left.append(_left(f, "numaguard cannot tell which document of the file it is in"))
            continue
        doc, path = located
        subject = _subject(doc.data, path, settings)
        item_kind = subject.found.ref.kind if subject.found is not None else None
        if f.object is not None and item_kind != f.object.kind:
            plan.left.append(_left(f, f"it is judged as part of the {f.object} of this file, which "
                                      "holds kubelet settings in layers numaguard does not rewrite"))
            continue
        wanted.setdefault(doc.index, {})[(f.rule, subject.key)] = f
    by_index = {d.index: d for d in documents}
    for index, keyed in wanted.items():
        _fix_document(by_index[index], keyed, settings, list(dropins), plan)
    return plan


def rewrite_problem(plan: FilePlan, before: tuple[list[Document], list[Finding]],
                    after: tuple[list[Document], list[Finding]], settings: FixSettings) -> str | None:
    """Why the rewritten file cannot be kept, or None: `before` and `after` are the file's
    documents and findings (not suppressed) from linting it as it was and as rewritten. A
    finding of a fixed rule may not remain on what it fixed, and no rule may have more errors
    on any pod (or object) than before."""
    fixed = {(f.rule, f.document, f.subject) for f in plan.fixes}
    for f in after[1]:
        if _file_key(after[0], f, settings) in fixed:
            return f"{f.rule} remains: {f.message}"
    grown = _grown_errors(before[1], after[1], lambda f: _file_key(before[0], f, settings),
                          lambda f: _file_key(after[0], f, settings))
    return None if grown is None else f"the rewritten file has a new error, {grown.rule}: {grown.message}"


def unplanned_change(plan: FilePlan, before: list[Document], after: list[Document]) -> str | None:
    """Where the rewritten file reads differently from the file with only the planned edits
    made (a value shared through a YAML merge key, a document lost), or None. Numbers and
    strings compare by their text: a quantity written `2` or `"2"` is the same quantity."""
    def readable(documents: list[Document]) -> list:
        return [(d.index, _plain(d.data)) for d in documents if d.skip is None]
    expected = [(i, apply_edits(data, plan.edits.get(i, ()))) for i, data in readable(before)]
    rewritten = readable(after)
    if [i for i, _ in expected] != [i for i, _ in rewritten]:
        return "the rewritten file has other documents"
    for (index, want), (_, got) in zip(expected, rewritten):
        path = _first_difference(want, got)
        if path is not None:
            return f"document {index + 1} would not read as planned at {dotted_path(path) or 'its top'}"
    return None


def _first_difference(a: Any, b: Any, at: Path = ()) -> Path | None:
    if isinstance(a, dict) and isinstance(b, dict):
        if a.keys() != b.keys():            # in any order: a new key goes where manifests write it
            return at
        return next((p for k in a if (p := _first_difference(a[k], b[k], at + (k,))) is not None), None)
    if isinstance(a, list) and isinstance(b, list):
        if len(a) != len(b):
            return at
        return next((p for i, (x, y) in enumerate(zip(a, b))
                     if (p := _first_difference(x, y, at + (i,))) is not None), None)
    text = (int, float, str)
    same = str(a) == str(b) if isinstance(a, text) and isinstance(b, text) and not isinstance(a, bool) \
        and not isinstance(b, bool) else a == b and type(a) is type(b)
    return None if same else at


def _file_key(documents: list[Document], f: Finding, settings: FixSettings) -> tuple:
    located = _locate(documents, f)
    if located is None:
        return f.rule, None, f.path
    doc, path = located
    return f.rule, doc.index, _subject(doc.data, path, settings).key


# ------------------------------------------------------------------------------- one document

def _fix_document(doc: Document, wanted: dict[tuple, Finding], settings: FixSettings,
                  dropins: list[Document], plan: FilePlan) -> None:
    working = _plain(doc.data)
    start = _lint(working, doc, settings, dropins)
    start_keys = {_key(working, f, settings) for f in start}
    current, applied, edits, fixed = start, [], [], []
    settled: set = set()
    left: dict[tuple, str] = {}                  # key -> why it is left alone
    for _ in range(MAX_STEPS):
        step = _next_fix(working, current, doc, wanted, start_keys, settled, left, settings, dropins)
        if step is None:
            unreached = NOTHING_TO_CHANGE
            break
        working, current, fix, new_edits, key = step
        applied.append(fix)
        edits += new_edits
        fixed.append(key)
    else:
        unreached = f"numaguard stops after {MAX_STEPS} fixes in one document: run numaguard fix again"
    key_now = partial(_key, working, settings=settings)
    grown = _grown_errors(start, current, key_now, key_now)
    if grown is not None:
        left.update(dict.fromkeys(fixed, f"together the fixes would raise {grown.rule}: {grown.message}"))
        applied, edits = [], []
    # Every finding shown with a fix is fixed or listed: one no fix reached is still there.
    present = {key_now(f) for f in current}
    for key in wanted.keys() - left.keys() - set(fixed):
        if key in present:
            left[key] = unreached
    plan.left.extend(_left(f, left[key]) for key, f in wanted.items() if key in left)
    if applied:
        plan.fixes.extend(applied)
        plan.edits[doc.index] = edits
        plan.before[doc.index] = _plain(doc.data)


def _next_fix(working: Any, current: list[Finding], doc: Document, wanted: dict, start_keys: set,
              settled: set, left: dict, settings: FixSettings, dropins: list[Document]):
    """The first fix that works on `working`: (fixed data, its findings, the AppliedFix, its
    edits, its finding's key), or None when no finding has one left."""
    order = {rule: i for i, rule in enumerate(FIX_ORDER)}
    candidates = sorted((f for f in current if f.rule in settings.rules),
                        key=lambda f: (order.get(f.rule, len(order)), f.path))
    for f in candidates:
        key = _key(working, f, settings)
        # the findings the user was shown, and those a kept fix raised
        if key in settled or (key not in wanted and key in start_keys):
            continue
        path = parse_path(working, f.path)
        try:
            new_edits = _edits(working, f.rule, path, settings, [doc.source, *(d.source for d in dropins)])
        except CannotFix as e:
            left[key] = e.reason
            settled.add(key)
            continue
        if not new_edits:
            continue
        candidate = apply_edits(copy.deepcopy(working), new_edits)
        after = _lint(candidate, doc, settings, dropins)
        remaining = next((g for g in after if _key(candidate, g, settings) == key), None)
        key_after = partial(_key, candidate, settings=settings)
        raised = _grown_errors(current, after, key_after, key_after, exempt=settings.rules)
        if remaining is not None or raised is not None:
            why = (f"the fix would not clear it: {remaining.message}" if remaining is not None else
                   f"the fix would raise {raised.rule}: {raised.message}")
            left[key] = why
            settled.add(key)
            continue
        left.pop(key, None)
        settled.add(key)
        changes = tuple(Change(e.path, _get(working, e.path), MISSING if e.remove else e.value)
                        for e in new_edits)
        shown = wanted.get(key)
        fix = AppliedFix(f.rule, doc.index, shown.line if shown else None, f.object, changes, key[1])
        return candidate, after, fix, new_edits, key
    return None


def _grown_errors(before: list[Finding], after: list[Finding], key_before: Callable, key_after: Callable,
                  exempt: frozenset[str] = frozenset()) -> Finding | None:
    """An error of `after` beyond the count of findings `before` had for its rule and pod (or
    object), as the key functions name them; errors of the `exempt` rules do not count. A
    finding `before` had at a lower severity is no new error: turning the
    PodLevelResourceManagers gate on (NG202) declares a configuration only assumed to be a
    pool's, and its pool requirements are then errors at their default severity."""
    def count(findings, key, errors_only):
        return Counter(key(f) for f in findings if f.rule not in exempt
                       and (f.severity == Severity.ERROR or not errors_only))
    was, now = count(before, key_before, False), count(after, key_after, True)
    return next((f for f in after if f.severity == Severity.ERROR and f.rule not in exempt
                 and now[key_after(f)] > was[key_after(f)]), None)


def _lint(data: Any, doc: Document, settings: FixSettings, dropins: list[Document]) -> list[Finding]:
    """The engine's findings on this one document (with the file's kubelet drop-ins)."""
    single = Document(source=doc.source, index=doc.index, data=data, line=doc.line, ignores=doc.ignores)
    result = lint_documents([single, *dropins], config=settings.config, selection=settings.selection,
                            node=settings.node, context=settings.context)
    return [f for f in result.findings if not f.suppressed and f.file == doc.source]


# ------------------------------------------------------------------------------- the fixes

def _edits(data: Any, rule: str, path: Path, settings: FixSettings, sources: list[str | None]) -> list[Edit]:
    """The rule's fix for the finding at `path`, as edits at document paths. `sources`: the
    file and its kubelet drop-ins, which name the pools a kubelet configuration belongs to."""
    subject = _subject(data, path, settings)
    if rule in POD_FIXES:
        if subject.pod is None:
            raise CannotFix("it is not in a pod template numaguard reads")
        edits = []
        for e in POD_FIXES[rule](subject.pod):
            where, note = subject.pod.document_path(tuple(e.path))
            if note:           # a part of an assembled pod spec written in another object (a ServingRuntime)
                raise CannotFix(f"the value is not in this object: {note}")
            edits.append(Edit(subject.prefix + where, e.value))
        return edits
    config, base, carrier = _kubelet_target(data, subject, rule)
    inner = path[len(base):] if path[:len(base)] == base else ()
    # the context of the pool it belongs to (its node description), as the engine judges it
    context = _kubelet_contexts(settings, sources, carrier)[0]
    return [replace(e, path=base + e.path) for e in KUBELET_FIXES[rule](config, inner, context)]


def _kubelet_contexts(settings: FixSettings, sources: list[str | None], carrier: Any) -> list[LintContext]:
    """The contexts the engine judges a kubelet configuration with: those of the pools whose
    kubeletConfigs name its file or a drop-in, or whose nodes its platform object selects;
    else the run's (`Linter._lint_kubelet`, `Linter._lint_platform`)."""
    ctx = settings.context
    named = [name for source in sources for name in settings.config.pools_naming(source)]
    selected = [p.pool.name for p in ctx.pools
                if carrier is not None and p.pool.name not in named and p.pool.selected_by(carrier.nodes)]
    return [c for c in map(ctx.pool_context, dict.fromkeys(named + selected)) if c is not None] or [ctx]


def _kubelet_target(data: Any, subject: _Subject, rule: str) -> tuple[dict, Path, Any]:
    """(the effective configuration the rules judged, where its settings are written, the
    platform object carrying it or None)."""
    from numaguard.lint.k8s.kubelet_schema import decode_kubelet_config

    found = subject.found
    item = _at(data, subject.prefix)
    if found is not None and found.kind == "kubelet" and not found.platforms:
        return decode_kubelet_config(item).effective, subject.prefix, None
    carriers = list(found.platforms) if found is not None else []
    if len(carriers) != 1:
        raise CannotFix(f"the {found.ref if found else 'document'} holds several kubelet "
                        "configurations: change the one meant yourself")
    carrier = carriers[0]
    refusal = carrier_refusal(carrier, rule)
    if refusal is not None:
        raise CannotFix(refusal)
    return carrier.config, subject.prefix + tuple(carrier.written_path), carrier


def carrier_refusal(carrier: Any, rule: str) -> str | None:
    """Why a kubelet setting in this platform object is not rewritten, or None when it is
    written in the carrier's own mapping (decided per carrier, conservatively)."""
    from numaguard.lint.k8s.platforms import OPENSHIFT_GATES_FIX

    name = carrier.platform
    reservation = rule in ("NG204", "NG208")
    if name == "EKS NodeConfig":
        if reservation and "kubeReserved.memory" in carrier.unknown:
            return ("nodeadm sizes kubeReserved.memory per instance type (11 x maxPods + 255Mi), so "
                    "the reservation is not known: set kubeReserved.memory in spec.kubelet.config first")
        return None
    if name == "OpenShift KubeletConfig":
        if carrier.rendered_from:
            return (f"the Node Tuning Operator renders this KubeletConfig from the PerformanceProfile "
                    f"{carrier.rendered_from}: change the profile")
        if rule in ("NG201", "NG202"):
            return OPENSHIFT_GATES_FIX
        if reservation and "systemReserved.memory" in carrier.unknown:
            return ("the Machine Config Operator sizes systemReserved.memory per node "
                    "(autoSizingReserved), so the reservation is not known: set systemReserved.memory "
                    "and autoSizingReserved: false first")
        return None
    if name == "PerformanceProfile":
        return ("the Node Tuning Operator renders the kubelet configuration from the profile's own "
                "fields and the JSON string of its kubeletconfig.experimental annotation: change those")
    return (f"a {name} keeps kubelet settings in layers, strings, flags or fields of its own that "
            "it merges itself; numaguard rewrites them only in a KubeletConfiguration, an EKS "
            "NodeConfig's spec.kubelet.config and an OpenShift KubeletConfig's spec.kubeletConfig")


# ------------------------------------------------------------------------------- where things are

@dataclass(frozen=True)
class _Subject:
    prefix: Path                    # the object (a List item's path, else ())
    found: Classified | None
    pod: PodTarget | None = None
    spec_path: Path = ()            # the pod spec's path in the document

    @property
    def key(self) -> Path:
        return self.spec_path if self.pod is not None else self.prefix


def _subject(data: Any, path: Path, settings: FixSettings) -> _Subject:
    """The object (and pod template) a finding at `path` is about."""
    holder = Document(source=None, index=0, data=data, line=None, ignores=frozenset())
    prefixes = [p for _, p in expand_lists(holder) if tuple(path[:len(p)]) == p]
    prefix = max(prefixes, key=len, default=())
    item = _at(data, prefix)
    if not isinstance(item, dict):
        return _Subject(prefix, None)
    found = classify(item, settings.context.carriers)
    for pod in found.pods:
        spec_path = prefix + tuple(pod.spec_path)
        if tuple(path[:len(spec_path)]) == spec_path:
            return _Subject(prefix, found, pod, spec_path)
    return _Subject(prefix, found)


def _key(data: Any, f: Finding, settings: FixSettings) -> tuple:
    """A finding as the fixes count it: its rule and the pod (or object) it is about."""
    return f.rule, _subject(data, parse_path(data, f.path), settings).key


def _locate(documents: list[Document], f: Finding) -> tuple[Document, Path] | None:
    """The document a finding is in: the one where its path lands on its line and column, else
    (a line inside an embedded text) the one whose lines hold the finding's line."""
    found, around = [], []
    readable = [d for d in documents if d.skip is None and isinstance(d.data, (dict, list))]
    starts = sorted(d.line for d in readable if d.line)
    for doc in readable:
        path = parse_path(doc.data, f.path)
        position = position_of(doc.data, path) or ((doc.line, 1) if doc.line else None)
        if position == ((f.line, f.column) if f.line else None):
            found.append((doc, path))
        following = [line for line in starts if doc.line and line > doc.line]
        if f.line and doc.line and doc.line <= f.line < (following[0] if following else f.line + 1):
            around.append((doc, path))
    if len(found) == 1:
        return found[0]
    return around[0] if not found and len(around) == 1 else None


_INDEX = re.compile(r"\[(\d+)\]")
_STEP = re.compile(r"[^.\[]+")


def parse_path(data: Any, dotted: str) -> Path:
    """A finding's dotted path (`spec.containers[0].resources`) as keys and indexes, read along
    `data` so that a key holding a dot (`evictionHard.memory.available`) stays whole."""
    out: list[str | int] = []
    node, rest = data, dotted
    while rest:
        index = _INDEX.match(rest)
        if index:
            step: str | int = int(index.group(1))
            rest = rest[index.end():]
            node = node[step] if isinstance(node, list) and step < len(node) else None
        else:
            rest = rest[1:] if rest.startswith(".") else rest
            keys = [k for k in node if isinstance(k, str) and (rest == k or rest.startswith((k + ".", k + "[")))] \
                if isinstance(node, dict) else []
            step = max(keys, key=len) if keys else _STEP.match(rest).group(0)
            rest = rest[len(step):]
            node = node.get(step) if isinstance(node, dict) else None
        out.append(step)
    return tuple(out)


# ------------------------------------------------------------------------------- plain data

def apply_edits(data: Any, edits: Iterable[Edit]) -> Any:
    """`data` with the edits made in place (mappings created on the way, a removed key's
    mapping deleted when left empty: `roundtrip.remove_key`); returns it."""
    for edit in edits:
        if edit.remove:
            remove_key(data, tuple(edit.path))
            continue
        node = data
        for step in edit.path[:-1]:
            if isinstance(node, dict) and not isinstance(node.get(step), (dict, list)):
                node[step] = {}
            node = node[step]
        node[edit.path[-1]] = copy.deepcopy(edit.value)
    return data


def _get(data: Any, path: Path) -> Any:
    node = data
    for step in path:
        if isinstance(node, dict) and step in node:
            node = node[step]
        elif isinstance(node, list) and isinstance(step, int) and step < len(node):
            node = node[step]
        else:
            return MISSING
    return node


def _at(data: Any, path: Path) -> Any:
    for step in path:
        data = data[step]
    return data


def _plain(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value


def _left(f: Finding, reason: str) -> LeftAlone:
    return LeftAlone(f.rule, f.line, f.object, f.path, f.message, reason)

