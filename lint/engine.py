"""The engine: parsed documents in, findings out. No files, no terminals, no HTTP.

`lint_documents` is what the CLI, the webhook and library users call. It classifies each
document (pod carrier, KubeletConfiguration, checkpoint file, node, or skipped), runs the
schema check (NG002) and, when that passes, every enabled rule for that kind of object, then
resolves each violation's path to a line and column, applies severity overrides and
suppressions, and counts.

Pools: the config's pools each have a rule context (their node description and empty node
state, built once by `rule_context`); a pod is judged with the context of the pool it targets
(`pod_placement`), a kubelet configuration with that of the pool it belongs to (its file named
by a pool's `kubeletConfigs`, or its platform object selecting the pool's nodes), anything
else with the run's default context.

Rules with a `RunCheck` (the pools' NG4xx, the checkpoints, NG409 on a saved PodResources
answer) judge the run as a whole: every
document, judged kubelet configuration and unreadable file is offered to their `RunCheck`s,
which keep a small extract of what they need; after the last document each check judges its
extracts once. Workers hand back extracts, never documents (`RunPart`), so memory stays flat
and `--jobs N` gives what one process gives. The engine knows no rule of that kind by name.
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Iterable

from numaguard.lint.config import Config
from numaguard.lint.load import skips
from numaguard.lint.load.later_stages import FILE_STAGES, VALUE_STAGES, LaterStage, not_judged, value_stage
from numaguard.lint.load.documents import Document, LoadError, expand_lists, position_of
from numaguard.lint.model import Finding, ObjectRef, Path, Severity, Summary, Unread, Violation, dotted_path, value_kind
from numaguard.lint.objects import KUBELET_CONFIG_GROUP, KUBELET_CONFIG_KIND, classify, object_ref
from numaguard.lint.k8s.platform_registry import kindless_reader
from numaguard.lint.references import RunReferences
from numaguard.lint.rendered import RenderedFindings
from numaguard.lint.rules.base import LintContext, Rule, RunCheck, RunViolation, Subject
from numaguard.lint.rules.input import INVALID_DOCUMENT, INVALID_OBJECT, RENDERED_LATER
from numaguard.lint.rules.registry import rules_for, run_check_rules

if TYPE_CHECKING:                   # a run without --baseline never reads one
    from numaguard.lint.baseline import BaselineEntry

FILE_STAGES_BY_NAME = {stage.name: stage for stage in FILE_STAGES}
IGNORE_ANNOTATION = "numaguard.io/ignore"
IGNORE_REASON_ANNOTATION = "numaguard.io/ignore-reason"


@dataclass(frozen=True)
class Selection:
    """Which rules run (`--select`/`--ignore`: ids or id prefixes such as NG2) and at what
    severity (config `rules:`; None = off)."""

    select: tuple[str, ...] = ()
    ignore: tuple[str, ...] = ()
    severities: dict[str, Severity | None] = field(default_factory=dict)

    def enabled(self, rule: Rule) -> bool:
        if self.severities.get(rule.id, rule.severity) is None:
            return False
        if self.select and not any(rule.id.startswith(s) for s in self.select):
            return False
        return not any(rule.id.startswith(s) for s in self.ignore)


@dataclass
class LintResult:
    findings: list[Finding]
    summary: Summary
    fixed: list[BaselineEntry] = field(default_factory=list)   # baseline entries no longer found
    # Filled in by `numaguard audit` and `simulate --format html` for the pool reports: each
    # node's occupancy (numaguard.lint.numa.occupancy.NodeOccupancy) and, per file
    # (`pod/ns/name`), the workload that owns the pod.
    nodes: list[Any] = field(default_factory=list)
    workloads: dict[str, str] = field(default_factory=dict)
    # `numaguard audit`: what could not be read (the audit is incomplete when not empty).
    unread: list[Unread] = field(default_factory=list)

    @property
    def unread_nodes(self) -> dict[str, Unread]:
        """Node name -> what of it could not be read (its kubelet configuration)."""
        return {node: piece for piece in self.unread for node in piece.nodes}

    @property
    def active(self) -> list[Finding]:
        """What counts: not suppressed, and not already recorded in a baseline."""
        return [f for f in self.findings if not f.suppressed and f.baseline_state != "unchanged"]


def lint_documents(documents: Iterable[Document | dict], *, config: Config | None = None,
                   selection: Selection | None = None, node: Any = None,
                   load_errors: Iterable[LoadError] = (), context: LintContext | None = None,
                   pool_nodes: dict[str, Any] | None = None,
                   node_named_by: dict[str | None, str] | None = None) -> LintResult:
    """Lint parsed documents. Plain dicts are accepted (no positions, no file). `context`: a
    `rule_context(config, node, pool_nodes, node_named_by)` the caller keeps across calls (the
    webhook: one per worker). `node` is the default node description, `pool_nodes` each pool's
    by name; `node_named_by` says who named them (`rule_context`)."""
    linter = Linter(config=config, selection=selection, node=node, context=context, pool_nodes=pool_nodes,
                    node_named_by=node_named_by)
    linter.lint(documents, load_errors)
    return linter.finish()


def collect_references(references: RunReferences, docs: Iterable[Document]) -> None:
    """Add what these documents (and the items of their Lists) say for other objects of the run."""
    for doc in docs:
        if doc.skip is None and isinstance(doc.data, dict):
            for _, prefix in expand_lists(doc):
                references.collect(_at(doc.data, prefix), doc.source, _line_of(doc, prefix), (doc.index, prefix))


@dataclass
class RunPart:
    """What one batch of files leaves behind once its documents are dropped: findings, counts
    and the run checks' extracts (check name -> extracts in input order). Worker processes
    return one; `Linter.absorb` merges it."""

    findings: list[Finding]
    summary: Summary
    extracts: dict[str, list]
    rendered: RenderedFindings = field(default_factory=RenderedFindings)


class Linter:
    """One lint run fed a batch of documents at a time (the CLI: one file and its kubelet
    drop-ins), so that a caller can drop each file's documents before loading the next: memory
    then follows the findings, not the input. `finish` runs the run-level rules (NG4xx) over what
    every batch left behind and returns the findings in the reports' order."""

    def __init__(self, *, config: Config | None = None, selection: Selection | None = None,
                 node: Any = None, context: LintContext | None = None,
                 pool_nodes: dict[str, Any] | None = None,
                 node_named_by: dict[str | None, str] | None = None,
                 references: RunReferences | None = None) -> None:
        config = config or Config()
        selection = selection or Selection(severities=config.severities)
        self._run = _Run(context or rule_context(config, node, pool_nodes, node_named_by), selection,
                         config.pools_naming)
        if references is not None:
            self._run.references.merge(references)

    def lint(self, documents: Iterable[Document | dict], load_errors: Iterable[LoadError] = ()) -> None:
        """Lint one batch. Kubelet drop-ins pair with their main file within a batch."""
        run = self._run
        for error in load_errors:
            run.add_load_error(error)
        docs = [doc if isinstance(doc, Document) else
                Document(source=None, index=i, data=doc, line=None, ignores=frozenset())
                for i, doc in enumerate(documents)]
        run.collect_dropins(docs)
        run.collect_companions(docs)
        collect_references(run.references, docs)   # a batch's own (stdin, the library, the webhook's object)
        for doc in docs:
            if doc.repeated_keys:
                run.report_repeated_keys(doc)
            reason = doc.skip or (skips.NOT_KUBERNETES if isinstance(doc.data, list) else None)
            if reason is not None:
                run.summary.skip(reason)
                run.summary.helm_charts += doc.skip_detail == skips.HELM_CHART
                if reason == skips.TEMPLATE:
                    run.summary_template(doc.skip_detail)
                if reason == skips.DANGLING_SYMLINK:
                    run.summary.dangling_symlinks.append(f"{doc.source} -> {doc.skip_detail}")
                continue
            for item, prefix in expand_lists(doc):
                run.lint_one(item, prefix)
        run.dropins.clear()          # keyed by id(): must not outlive the batch's documents
        run.merged_dropins.clear()
        run.companions.clear()
        run.owned_companions.clear()
        run.companion_findings.clear()
        run._named.clear()
        run.rendered_seen.clear()

    def take(self) -> RunPart:
        """Hand over (and forget) what the batches so far left behind."""
        run = self._run
        part = RunPart(run.findings, run.summary, run.extracts, run.rendered)
        run.findings, run.summary, run.rendered = [], Summary(), RenderedFindings()
        run.extracts = {check.name: [] for check in run.run_checks}
        return part

    def absorb(self, part: RunPart) -> None:
        """Merge what another Linter (a worker's) left behind, in file order."""
        run = self._run
        run.findings.extend(part.findings)
        run.summary.add(part.summary)
        for name, extracts in part.extracts.items():
            run.extracts[name].extend(extracts)
        run.rendered.merge(part.rendered)

    def finish(self) -> LintResult:
        """Judge the run checks and return every finding, sorted as the reports show them."""
        run = self._run
        run.judge_run()
        for finding in run.rendered.release():      # a render's findings its profile lacks
            run.record(finding)
        sort_findings(run.findings)
        return LintResult(run.findings, run.summary)


def finding_order(f: Finding) -> tuple:
    """The order of findings in every report: file, line, column, rule."""
    return (f.file or "", f.line or 0, f.column or 0, f.rule)


def sort_findings(findings: list[Finding]) -> None:
    """Sort in place, stably: findings found file by file come out as one run gives them."""
    findings.sort(key=finding_order)


_KUSTOMIZE_GROUP = "kustomize.config.k8s.io/"
_TEMPLATE_GROUP = "template.openshift.io/"


def skip_reason(data: Any) -> str | None:
    """Why a document is not a Kubernetes object numaguard should judge, or None.

    A list (Ansible tasks, a JSON 6902 patch), a mapping without `kind` (Helm values, CI and
    documentation configs) or a kustomize file is not an object at all; a `$patch: delete`
    document is a partial object (a strategic-merge patch directive) kustomize removes.
    """
    if isinstance(data, list):
        return skips.NOT_KUBERNETES
    if not isinstance(data, dict):
        return None                               # a list item that is not a mapping: NG001
    if "$patch" in data:
        return skips.PATCH
    api_version = data.get("apiVersion")
    if data.get("kind") == "Template" and isinstance(api_version, str) and api_version.startswith(_TEMPLATE_GROUP):
        # an OpenShift Template: its `objects` take ${PARAMETER} values when `oc process` renders them
        return skips.TEMPLATE
    if not isinstance(data.get("kind"), str) or (
            isinstance(api_version, str) and api_version.startswith(_KUSTOMIZE_GROUP)):
        # Talos' machine configuration and GKE's node system configuration carry kubelet
        # settings without a kind (numaguard.lint.k8s.platform_registry)
        return None if kindless_reader(data) is not None else skips.NOT_KUBERNETES
    return None


def rule_context(config: Config, node: Any = None, pool_nodes: dict[str, Any] | None = None,
                 node_named_by: dict[str | None, str] | None = None) -> LintContext:
    """What every check may consult besides its subject, built from the config and the node
    descriptions: `node` is the default one (pools without their own, subjects of no pool),
    `pool_nodes` each pool's by name. `node_named_by`: who named them, for the default (key
    None) and each pool's (`Config.node_namings`: "--node", "node", "poolNode"); a pod
    simulated on a node the user named is declared for it (`LintContext.node_named_by`). The
    webhook and `audit` name none. One empty node state per distinct node, built here once."""
    states: dict[int, Any] = {}
    named_by = node_named_by or {}

    def parts(node: Any, key: str | None) -> dict:
        if node is None:
            return {"node": None, "kubelet_config": None, "empty_node_state": None}
        kubelet_config = getattr(node, "kubelet_config", None)
        if id(node) not in states:
            # the simulator, only for a run with a node description (a run over pods has none)
            from numaguard.lint.numa.admission import empty_state_or_none

            states[id(node)] = empty_state_or_none(node.topology, kubelet_config,
                                                   name=getattr(node, "name", "node"))
        return {"node": node, "kubelet_config": kubelet_config, "empty_node_state": states[id(node)],
                "node_named_by": named_by.get(key)}

    common = {"kubernetes_version": config.kubernetes_version, "scope_all": config.scope_all,
              "carriers": config.pod_carriers}
    pools = tuple(LintContext(**common, pool=pool, **parts((pool_nodes or {}).get(pool.name, node), pool.name))
                  for pool in config.pools)
    return LintContext(**common, **parts(node, None), pools=pools)


class _Run:
    """The mutable bookkeeping of one lint run (findings, counts), kept out of module state."""

    def __init__(self, ctx: LintContext, selection: Selection,
                 pools_naming=lambda source: ()) -> None:
        self.ctx, self.selection = ctx, selection
        self._pools_naming = pools_naming
        self._named: dict[str | None, tuple[str, ...]] = {}    # source -> pools naming it, per batch
        self.dropins: dict[str, list[Document]] = {}     # main source -> its drop-ins, in order
        self.merged_dropins: set[int] = set()             # id() of drop-ins merged into a main
        self.companions: dict[tuple, Document] = {}       # (source, group, kind[, name]) -> the document
        self.owned_companions: set[int] = set()           # id() of companions judged with a carrier
        self.companion_findings: set = set()              # findings already reported on a companion
        self.rendered_seen: set = set()                   # (file, path) of values NG003 named, per batch
        self._has_node = ctx.node is not None or any(p.node is not None for p in ctx.pools)
        self._rules: dict[str, list[Rule]] = {}          # target -> its enabled rules, on first use
        # One entry per distinct check: rules of one family share their collection and judgement.
        # The run checks see every input from the first on, so their rules are loaded now.
        self.run_checks: list[RunCheck] = list({r.run.name: r.run for r in run_check_rules(with_node=self._has_node)
                                                if selection.enabled(r)}.values())
        self.findings: list[Finding] = []
        self.summary = Summary()
        self.extracts: dict[str, list] = {check.name: [] for check in self.run_checks}
        self.rendered = RenderedFindings()
        self.references = RunReferences()                # what other objects of the run say

    def summary_template(self, stage_name: str | None) -> None:
        """Count a template file by the stage that renders it, and keep that stage's hint."""
        stage = FILE_STAGES_BY_NAME.get(stage_name or "")
        name = stage.name if stage is not None else skips.TEMPLATE
        self.summary.rendered_files[name] = self.summary.rendered_files.get(name, 0) + 1
        if stage is not None:
            self.summary.rendered_hints[name] = stage.hint

    def rules(self, target: str) -> list[Rule]:
        """The enabled rules of one target; their modules are imported when a run first judges
        something of that target (numaguard.lint.rules.registry.rules_for)."""
        if target not in self._rules:
            self._rules[target] = [r for r in rules_for(target, with_node=self._has_node)
                                   if self.selection.enabled(r)]
        return self._rules[target]

    def _rule_by_id(self, rule_id: str) -> Rule | None:
        """An enabled rule a platform carrier names by id: its notices and extras are input
        (NG002) and kubelet findings."""
        return next((r for target in ("input", "kubelet") for r in self.rules(target) if r.id == rule_id), None)

    # -- documents ---------------------------------------------------------------------
    def pools_naming(self, source: str | None) -> tuple[str, ...]:
        """The pools whose kubeletConfigs name this file, matched once per file of a batch."""
        if source not in self._named:
            self._named[source] = self._pools_naming(source)
        return self._named[source]

    def collect_dropins(self, docs: list[Document]) -> None:
        """Pair kubelet drop-ins (`<main>.d/*.conf`) with their main file when both are linted
        in this run; the drop-ins are then linted as part of the merged configuration."""
        from numaguard.lint.k8s.kubelet_dropin import dropin_owner, walk_order

        mains = {d.source for d in docs if d.source and _is_kubelet_config(d.data)}
        for d in sorted(docs, key=lambda d: (walk_order(d.source), d.index)):    # merge order
            owner = dropin_owner(d.source)
            if owner in mains and _is_kubelet_config(d.data):
                self.dropins.setdefault(owner, []).append(d)
                self.merged_dropins.add(id(d))

    def collect_companions(self, docs: list[Document]) -> None:
        """Pair platform objects with the document of the same file they take as their base
        (kubeadm's InitConfiguration and its KubeletConfiguration): that document is then
        schema-checked on its own and judged as part of the carriers built over it."""
        from numaguard.lint.k8s.platform_registry import companion_keys

        wanted = {}
        for d in docs:
            if isinstance(d.data, dict) and isinstance(d.data.get("apiVersion"), str):
                for key in companion_keys(d.data):
                    wanted[(d.source,) + tuple(key)] = True
        for d in docs:
            if not isinstance(d.data, dict) or not isinstance(d.data.get("apiVersion"), str):
                continue
            for key in wanted:
                source, group, kind = key[:3]
                if d.source == source and d.data.get("kind") == kind and d.data["apiVersion"].startswith(group) \
                        and (len(key) == 3 or _name(d.data) == key[3]):
                    if self.companions.setdefault(key, d) is d:
                        self.owned_companions.add(id(d))

    def add_load_error(self, error: LoadError) -> None:
        position = (error.line, error.column) if error.line else None
        subject = Subject("unreadable", error.message, label=error.source or "<input>", file=error.source,
                          line=error.line, pools=self.pools_naming(error.source),
                          locate=lambda: {(): position} if position else {})
        if self._offer(subject):                 # a file a run check reads (a checkpoint) that is not JSON
            self.summary.objects += 1
            return
        self._emit(INVALID_DOCUMENT, Violation(path=(), message=error.message), file=error.source,
                   position=position, ref=None, ignores=frozenset())

    def report_repeated_keys(self, doc: Document) -> None:
        """NG001 for each key the document gives twice (read with the later value, as kubectl
        reads it): an error where a value is silently lost or kustomize reads the file (it refuses
        it), else a warning (`yaml_build.RepeatedKey`)."""
        kustomized = doc.source is not None and not all(r.lost for r in doc.repeated_keys) and \
            skips.is_kustomize_input(doc.source)
        ref = object_ref(doc.data) if isinstance(doc.data, dict) else None
        for repeated in doc.repeated_keys:
            severity = None if repeated.refused_or_lost(kustomized) else Severity.WARNING
            self._emit(INVALID_DOCUMENT, Violation((), repeated.message(kustomized), severity=severity),
                       file=doc.source, position=(repeated.line, repeated.column), ref=ref, ignores=doc.ignores)

    def _offer(self, subject: Subject) -> bool:
        """Give one input to every run check; whether any kept an extract of it."""
        kept = False
        for check in self.run_checks:
            extract = check.collect(subject, self.ctx)
            if extract is not None:
                self.extracts[check.name].append(extract)
                kept = True
        return kept

    def lint_one(self, doc: Document, prefix: Path) -> None:
        data = _at(doc.data, prefix)
        if not isinstance(data, dict):
            self._emit_doc(doc, prefix, None, INVALID_DOCUMENT,
                           Violation(path=(), message=f"list item is {value_kind(data)}, not a mapping"),
                           doc.ignores)
            return
        # The run checks see every document first (a checkpoint file, a Node, a Pod's uid).
        kept = self._offer(Subject("document", data, label=_label(doc, prefix), file=doc.source,
                                   line=doc.line, prefix=prefix, pools=self.pools_naming(doc.source),
                                   ignores=doc.ignores, locate=lambda: _positions(data),
                                   position_of=lambda path: position_of(data, tuple(path))))
        reason = skip_reason(data)
        if reason is not None and not kept:
            self.summary.skip(reason)
            return
        found = classify(data, self.ctx.carriers, self.references) if reason is None else None
        if found is None or found.kind == "skip":
            if kept:
                self.summary.objects += 1         # judged by a run check only
            else:
                self.summary.skip(skips.UNKNOWN_KIND)
            return
        self.summary.objects += 1
        if found.problems:
            # A subject of the wrong shape: no pod template (or kubelet block) to read
            # annotations from, so the object's own and the comments suppress it.
            annotations = _own_annotations(data)
            for problem in found.problems:
                self._emit_doc(doc, prefix, found.ref, INVALID_OBJECT,
                               Violation(path=problem.path, message=problem.message, severity=problem.severity,
                                         remediation=problem.remediation),
                               doc.ignores | _annotation_ignores(annotations),
                               annotations.get(IGNORE_REASON_ANNOTATION))
        if found.kind == "kubelet" and not found.platforms and not found.problems and _is_kubelet_config(data):
            if id(doc) in self.owned_companions and not prefix:
                self._lint_companion(doc, found.ref)
            else:
                self._lint_kubelet(doc, prefix, data, found.ref)
        seen: set = set()                    # one finding per place, however many carriers share it
        # a platform object another one of its file takes as its base is judged through that one
        owned = found.kind == "platform" and id(doc) in self.owned_companions and not prefix
        for carrier in () if owned else found.platforms:
            # One object carrying several configurations (node groups): each named by its line.
            label = _label(doc, prefix) if len(found.platforms) == 1 else \
                _line_label(doc, prefix + carrier.document_path(()))
            self._lint_platform_kubelet(doc, prefix, carrier, found.ref,
                                        doc.ignores | _annotation_ignores(_own_annotations(data)), seen, label)
        if found.kind == "pod" and found.ref.kind == "Pod" and found.pods and isinstance(data.get("status"), dict):
            self._lint_status(doc, prefix, data, found.ref)
        for pod in found.pods:
            self._lint_pod(doc, prefix, pod)

    def _lint_pod(self, doc: Document, prefix: Path, pod) -> None:
        from numaguard.lint.k8s.pod_schema import pod_schema_violations
        from numaguard.lint.rules.pods import VALIDITY_RULES, pod_placement

        # Scope first: a pod that is not checked at all (no pod-level resources, not meant for
        # a pool) gets no NG002 either (README "Which pods are policy-checked").
        scope, contexts, declared_by = pod_placement(pod, self.ctx)
        if scope in ("out", "unmanaged"):
            self.summary.unmanaged += scope == "unmanaged"
            return
        self.summary.declare("pods", declared_by)
        problems = pod_schema_violations(pod.spec) + [
            Violation((name,), f"{pod.ref.kind} refuses {name} in its pod template: {why}")
            for name, why in pod.refused_fields if pod.spec.get(name) is not None]
        ignores = doc.ignores | _annotation_ignores(pod.annotations)
        reason = pod.annotations.get(IGNORE_REASON_ANNOTATION)
        if problems:
            for v in problems:
                self._emit_doc(doc, prefix, pod.ref, INVALID_OBJECT, _in_document(pod, v), ignores, reason)
            return
        if scope == "validity":
            contexts = (replace(self.ctx, in_pool=False),)
        rules = [r for r in self.rules("pod") if scope != "validity" or r.id in VALIDITY_RULES]
        # Simulated on a node description: declared for it when the user named that node
        # (`--node`, the config's `node:`, the pool's `node:`), whatever the pod's policy tier.
        named = next((c.node_named_by or "unnamed" for c in contexts if c.node is not None), None)
        self.summary.declare("numaFit", named if any(r.needs_node for r in rules) else None)
        for rule, v in _judged_in_each(rules, pod, contexts):
            self._emit_doc(doc, prefix, pod.ref, rule, _in_document(pod, v), ignores, reason,
                           cap=_pod_cap(scope, rule, named not in (None, "unnamed"), VALIDITY_RULES))

    def _lint_status(self, doc: Document, prefix: Path, data: dict, ref: ObjectRef) -> None:
        """What the kubelet did with a live Pod (its status), whatever the pod's scope."""
        ignores = doc.ignores | _annotation_ignores(_own_annotations(data))
        for rule in self.rules("status"):
            for v in rule.check(data, self.ctx):
                self._emit_doc(doc, prefix, ref, rule, v, ignores)

    def _lint_kubelet(self, doc: Document, prefix: Path, data: dict, ref: ObjectRef) -> None:
        """A KubeletConfiguration, merged with its drop-ins when they are linted too, judged
        as the kubelet reads it: unknown fields are reported (NG002) and dropped, the rest is
        checked; what stops any kubelet applies to every configuration, the pool requirements
        only to pool configurations (`kubelet_declaration`)."""
        from numaguard.lint.k8s.kubelet_dropin import dropin_owner, merge_kubelet_configs
        from numaguard.lint.k8s.kubelet_schema import decode_kubelet_config
        from numaguard.lint.rules.kubelet import kubelet_declaration

        if id(doc) in self.merged_dropins and not prefix:
            self.summary.objects -= 1             # linted as part of its main configuration
            return
        parts = [doc] + (self.dropins.get(doc.source or "", []) if not prefix else [])
        decoded = []
        for part in parts:
            part_prefix = prefix if part is doc else ()
            result = decode_kubelet_config(_at(part.data, part_prefix))
            for v in result.violations:
                self._emit_doc(part, part_prefix, ref, INVALID_OBJECT, v, part.ignores)
            decoded.append(result)
        if any(d.fatal for d in decoded):
            return                                # the kubelet cannot decode the file at all
        if dropin_owner(doc.source) is not None and len(parts) == 1 and not prefix:
            return                                # a drop-in alone is not a whole configuration
        effective = merge_kubelet_configs(decoded[0].effective, [d.effective for d in decoded[1:]])
        # The pools it belongs to: those whose kubeletConfigs name the main file or a drop-in.
        pools = tuple(dict.fromkeys(name for part in parts for name in self.pools_naming(part.source)))
        declared_by = kubelet_declaration(effective, self.ctx, bool(pools))
        in_pool = declared_by is not None
        ignores = frozenset().union(*(p.ignores for p in parts))
        for rule, v, cap in self._judge_kubelet(effective, pools, declared_by):
            if len(parts) == 1:
                self._emit_doc(doc, prefix, ref, rule, v, ignores, cap=cap)
            else:
                self._emit_merged(parts, ref, rule, v, ignores, cap)
        self._offer(Subject("kubelet", effective, label=_label(doc, prefix), file=doc.source, line=doc.line,
                            prefix=prefix, pools=pools, in_pool=in_pool, ref=ref, ignores=ignores,
                            locate=lambda: _positions(data)))

    def _contexts(self, pools: Iterable[str], in_pool: bool) -> list[LintContext]:
        """The contexts a kubelet configuration is judged with: its pools' (their node
        descriptions), else the run's; outside the pool tier, marked so."""
        contexts = [c for c in map(self.ctx.pool_context, pools) if c is not None] or [self.ctx]
        return contexts if in_pool else [replace(c, in_pool=False) for c in contexts]

    def _judge_kubelet(self, config: dict, pools: tuple[str, ...], declared_by: str | None,
                       version: tuple[int, int] | None = None):
        """(rule, violation, cap) for a kubelet configuration: what stops any kubelet for all,
        the pool requirements for a pool configuration (`declared_by`, `kubelet_declaration`).
        One held to them only because it shows the intent through a manager policy ("assumed":
        no declared pool names or selects it, no `scope: all`, not the PodLevelResourceManagers
        gate) has its policy findings' default severities lowered to warning, as a pod only
        assumed to be managed; a start-up refusal stays what it is: a validity rule's finding,
        or a policy rule's that says the kubelet refuses to start (`Violation.refusal`: an
        unknown policy name, static CPUs with none reserved), but not NG201's for
        `PodLevelResources: false` with every dependent gate off. `version`: the kubelet's own,
        when the carrier pins it (a kind node's image), else the run's target."""
        from numaguard.lint.rules.kubelet import VALIDITY_RULES

        self.summary.declare("kubeletConfigurations", declared_by)
        assumed, in_pool = declared_by == "assumed", declared_by is not None
        rules = [r for r in self.rules("kubelet") if in_pool or r.id in VALIDITY_RULES]
        contexts = self._contexts(pools, in_pool)
        if version is not None:
            contexts = [replace(c, kubernetes_version=version) for c in contexts]
        for rule, v in _judged_in_each(rules, config, contexts):
            refusal = rule.id in VALIDITY_RULES if v.refusal is None else v.refusal
            yield rule, v, (Severity.WARNING if assumed and not refusal else None)

    def _emit_merged(self, parts: list[Document], ref: ObjectRef, rule: Rule, v: Violation,
                     ignores: frozenset[str], cap: Severity | None = None) -> None:
        """A finding on a merged configuration points at the file that set the effective value
        (the last drop-in holding the field, else the main file)."""
        from numaguard.lint.k8s.kubelet_dropin import origin_index

        which, _ = origin_index([p.data for p in parts], tuple(v.path))
        part = parts[which]
        position = position_of(part.data, tuple(v.path)) or ((part.line, 1) if part.line else None)
        self._emit(rule, v, file=part.source, position=position, ref=ref, ignores=ignores,
                   path=tuple(v.path), cap=cap)

    # -- the run checks ----------------------------------------------------------------
    def judge_run(self) -> None:
        for check in self.run_checks:
            for rv in check.judge(self.extracts[check.name], self.ctx):
                self._emit_run(rv)

    def _emit_run(self, rv: RunViolation) -> None:
        rel = tuple(rv.violation.path)
        place = rv.place
        if place is None:       # a caller-made extract: no file, no positions
            self._emit(rv.rule, rv.violation, file=rv.source, position=None, ref=rv.ref,
                       ignores=rv.ignores, path=rel)
            return
        self._emit(rv.rule, rv.violation, file=place.file, position=place.position(rel), ref=rv.ref,
                   ignores=rv.ignores, path=place.prefix + rel)

    def _lint_companion(self, doc: Document, ref: ObjectRef) -> None:
        """A KubeletConfiguration that a platform object of the same file takes as its base:
        checked for what the kubelet cannot decode here, judged with the carriers built on it."""
        from numaguard.lint.k8s.kubelet_schema import decode_kubelet_config

        for v in decode_kubelet_config(doc.data).violations:
            self._emit_doc(doc, (), ref, INVALID_OBJECT, v, doc.ignores)

    def _lint_platform_kubelet(self, doc: Document, prefix: Path, carrier, ref: ObjectRef,
                               ignores: frozenset[str], seen: set, label: str) -> None:
        """A kubelet configuration carried by a platform object (EKS NodeConfig, OpenShift
        KubeletConfig, PerformanceProfile, kubeadm, kind, Cluster API): what the platform itself
        refuses, the schema check on what the user wrote, then the kubelet rules on the
        effective configuration, each finding pointed at the place the value came from (the
        platform object's own field, the argument, the line inside an embedded patch, or the
        companion document) and told in the platform's terms (`numaguard.lint.k8s.platforms`).
        It belongs to the pools whose kubeletConfigs name its file and to those whose nodes it
        selects (`carrier.nodes`, `PoolSettings.selected_by`)."""
        from numaguard.lint.k8s.kubelet_layers import COMPANION, MERGE, REPLACE, STRATEGIC
        from numaguard.lint.k8s.kubelet_schema import UNKNOWN_FIELD_FIX_PREFIX, decode_kubelet_config
        from numaguard.lint.k8s.platforms import drop_paths
        from numaguard.lint.rules.kubelet import kubelet_declaration

        if carrier.resolve is not None:
            carrier = carrier.resolve(self.references)   # settings other objects of the run give it
        companion = None
        if carrier.rebase is not None and carrier.companion is not None:
            companion = self.companions.get((doc.source,) + tuple(carrier.companion))
            if companion is not None and _is_kubelet_config(companion.data):
                decoded = decode_kubelet_config(companion.data)
                if decoded.fatal:
                    return                        # reported on the companion; nothing runs
                carrier = carrier.rebase(decoded.effective)
            elif companion is not None:           # a platform object (an EKS Anywhere machine config)
                carrier = carrier.rebase(companion.data)

        def emit(rule: Rule, v: Violation, place=None, cap: Severity | None = None) -> None:
            # Told in the platform's terms (`carrier.adjust`) and pointed at where the value came
            # from. A rendered KubeletConfig's finding waits for its profile's (lint/rendered.py);
            # a profile's finding is noted so that the render's same one is dropped.
            kubelet_path = tuple(v.path)
            adjusted = carrier.adjust(rule.id, v)
            if adjusted is None:
                return
            place = carrier.place(tuple(adjusted.path)) if place is None else place.within(adjusted.path)
            if carrier.renders_of:
                self.rendered.note_source(carrier.renders_of, rule.id, kubelet_path)
            held = (carrier.rendered_from, kubelet_path) if carrier.rendered_from else None
            self._emit_place(doc, prefix, companion, ref, rule, adjusted, place, ignores, seen, held, cap,
                             carrier.later_stages)

        for rule_id, place, v in carrier.notices:
            self._emit_place(doc, prefix, companion, ref, self._rule_by_id(rule_id) or INVALID_OBJECT,
                             v, place, ignores, seen, stages=carrier.later_stages)
        flags = getattr(carrier.settings, "flags", None)
        if flags is not None and flags.value_refused:
            return                                # the kubelet exits on the command line
        # What the user wrote is checked (the platform's own additions are valid by
        # construction): their YAML, or settings without positions (a PerformanceProfile's
        # JSON annotation), each finding pointed at where it was written. As for a
        # KubeletConfiguration file, unknown fields are reported and dropped, type errors stop.
        written = [(carrier.written or carrier.unpositioned, None)] if carrier.settings is None else \
            [(layer.data, layer.place) for layer in carrier.settings.layers
             if layer.mode in (MERGE, STRATEGIC, REPLACE) and layer.place.shown
             and layer.place.document != COMPANION and isinstance(layer.data, dict)]
        config, unknown = carrier.config, []
        for data, place in written:
            if not data:
                continue
            data = {"apiVersion": "kubelet.config.k8s.io/v1beta1", "kind": "KubeletConfiguration", **data}
            decoded = decode_kubelet_config(data)
            for v in decoded.violations:
                emit(INVALID_OBJECT, v, place)
            if decoded.fatal:
                return
            unknown += [v.path for v in decoded.violations
                        if (v.remediation or "").startswith(UNKNOWN_FIELD_FIX_PREFIX)]
        config = drop_paths(config, unknown)
        for rule_id, v in carrier.extra:
            rule = self._rule_by_id(rule_id)
            if rule is not None:
                self._emit_doc(doc, prefix, ref, rule, v, ignores)
        # The pool requirements apply to a configuration of a pool (one over a base numaguard
        # does not see only when the config names its file, or when it shows the intent), when
        # the PodLevelResourceManagers gate declares it (in whatever layer or flag the carrier
        # merges), when it shows the intent through a manager policy (assumed; a
        # PerformanceProfile always sets cpuManagerPolicy static) or under scope: all; what
        # stops any kubelet applies to every one (`kubelet_declaration`).
        named = self.pools_naming(doc.source)
        selected = tuple(p.pool.name for p in self.ctx.pools
                         if p.pool.name not in named and p.pool.selected_by(carrier.nodes))
        pools = named + selected
        declared_by = kubelet_declaration(config, self.ctx, bool(named) or (bool(selected) and carrier.base_known),
                                          selected=bool(selected))
        in_pool = declared_by is not None
        for rule, v, cap in self._judge_kubelet(config, pools, declared_by, carrier.kubernetes_version):
            emit(rule, v, cap=cap)

        def locate_setting(path: Path) -> tuple[Path, tuple[int, int] | None]:
            place = carrier.place(tuple(path))
            return tuple(place.dotted()), self._place_position(doc, prefix, companion, place)[1]

        self._offer(Subject("kubelet", config, label=label, file=doc.source, line=doc.line, prefix=prefix,
                            pools=pools, in_pool=in_pool, whole=carrier.base_known, ref=ref, ignores=ignores,
                            locate_setting=locate_setting))

    def _place_position(self, doc: Document, prefix: Path, companion: Document | None,
                        place) -> tuple[Document, tuple[int, int] | None]:
        """The document a `kubelet_layers.Place` is in (this one or its companion) and the line
        and column there, inside an embedded text at the line the setting is on."""
        from numaguard.lint.k8s.kubelet_layers import COMPANION, embedded_position

        target, base = (companion, ()) if place.document == COMPANION and companion is not None else (doc, prefix)
        position = position_of(target.data, base + tuple(place.path))
        if place.text is not None and position is not None and place.text_index < len(place.text.documents):
            inner = position_of(place.text.documents[place.text_index], tuple(place.inner))
            if inner is not None:
                position = embedded_position(position, place.path[-1] if place.path else None, inner,
                                             place.text.multiline)
        return target, position or ((target.line, 1) if target.line else None)

    def _emit_place(self, doc: Document, prefix: Path, companion: Document | None, ref: ObjectRef,
                    rule: Rule, v: Violation, place, ignores: frozenset[str], seen: set,
                    held: tuple | None = None, cap: Severity | None = None,
                    stages: Iterable[LaterStage] = VALUE_STAGES) -> None:
        """A finding at a `kubelet_layers.Place`: in this document or its companion, and inside
        an embedded text at the line the setting is on. A finding on a value one of `stages`
        (the carrier's later stages) renders first becomes NG003."""
        target, position = self._place_position(doc, prefix, companion, place)
        base = () if target is companion else prefix
        rendered = self._rendered(rule, _placed_value(target.data, base, place), stages,
                                  (target.source, base + tuple(place.dotted())))
        if rendered is _SEEN:
            return
        if rendered is not None:
            rule, v, held, cap = RENDERED_LATER, rendered, None, None
        # A place several carriers share (two nodes of one kind Cluster, an InitConfiguration
        # and a JoinConfiguration over one KubeletConfiguration) gets the finding once.
        bucket = self.companion_findings if target is companion else seen
        key = (rule.id, target.source, position, v.message)
        if key in bucket:
            return
        bucket.add(key)
        self._emit(rule, v, file=target.source, position=position, ref=ref, ignores=ignores,
                   path=base + tuple(place.dotted()), held=held, cap=cap)

    # -- findings ----------------------------------------------------------------------
    def _emit_doc(self, doc: Document, prefix: Path, ref: ObjectRef | None, rule: Rule,
                  v: Violation, ignores: frozenset[str] = frozenset(), reason: str | None = None,
                  held: tuple | None = None, cap: Severity | None = None) -> None:
        path = prefix + tuple(v.path)
        position = position_of(doc.data, path) or ((doc.line, 1) if doc.line else None)
        rendered = self._rendered(rule, _value_at(doc.data, path), VALUE_STAGES, (doc.source, path))
        if rendered is not None:
            if rendered is not _SEEN:
                self._emit(RENDERED_LATER, rendered, file=doc.source, position=position, ref=ref,
                           ignores=ignores, path=path, reason=reason)
            return
        self._emit(rule, v, file=doc.source, position=position, ref=ref, ignores=ignores,
                   path=path, reason=reason, held=held, cap=cap)

    def _rendered(self, rule: Rule, value: Any, stages: Iterable[LaterStage], key: tuple) -> Violation | None:
        """For a finding on a value another program renders first (an expression of one of
        `stages`): the NG003 info that replaces it, `_SEEN` when NG003 already named that value,
        else None (the finding stands). Findings on other values, and on no value, stand."""
        if rule.id == RENDERED_LATER.id:
            return None
        if isinstance(value, str) and "\n" in value.strip():
            return None                 # an embedded document (a patch): judged line by line
        found = value_stage(value, stages) or value_stage(key[1][-1] if key[1] else None, stages)
        if found is None:
            return None
        if key in self.rendered_seen:
            return _SEEN
        self.rendered_seen.add(key)
        stage, expression = found
        return Violation((), not_judged(dotted_path(key[1]) or "The value", stage, expression), severity=Severity.INFO,
                         remediation=stage.hint, rendered_by=stage.name)

    def _emit(self, rule: Rule, v: Violation, *, file: str | None, position, ref: ObjectRef | None,
              ignores: frozenset[str], path: Path = (), reason: str | None = None,
              held: tuple | None = None, cap: Severity | None = None) -> None:
        """Record a finding; `held` (profile, kubelet path) keeps a rendered KubeletConfig's
        finding back until the run shows whether its profile has it too (`rendered`); `cap`
        is the highest default severity it may have (a pod or kubelet configuration only
        assumed to be for a managed pool: warning). A severity the config sets for the rule
        (`rules: {NG206: error}`) applies as written, on every tier. A value NG003 names is
        counted even when NG003 is off."""
        if v.rendered_by is not None:
            counts = self.summary.rendered_values
            counts[v.rendered_by] = counts.get(v.rendered_by, 0) + 1
        if not self.selection.enabled(rule):
            return
        configured = self.selection.severities.get(rule.id)
        severity = configured or v.severity or rule.severity
        if cap is not None and configured is None and severity.rank > cap.rank:
            severity = cap
        suppressed = rule.id in ignores or "all" in ignores
        finding = Finding(
            rule=rule.id, name=rule.name, severity=severity, message=v.message,
            remediation=v.remediation or rule.remediation, file=file,
            line=position[0] if position else None, column=position[1] if position else None,
            object=ref, container=v.container, path=dotted_path(path), suppressed=suppressed,
            suppress_reason=reason if suppressed else None, refusal=v.refusal)
        if held is not None:
            self.rendered.hold(held[0], rule.id, held[1], finding)
            return
        self.record(finding)

    def record(self, finding: Finding) -> None:
        """Keep a finding and count it."""
        self.findings.append(finding)
        if finding.suppressed:
            self.summary.suppressed += 1
        else:
            self.summary.counts[finding.severity.value] += 1


def _in_document(pod, v: Violation) -> Violation:
    """A finding on a pod spec pointed at where the value is written in the document: below
    the template, or where an assembled part came from (`PodTarget.document_path`)."""
    path, note = pod.document_path(tuple(v.path))
    return replace(v, path=path, message=f"{v.message} [{note}]" if note else v.message)


def _pod_cap(scope: str, rule: Rule, node_named: bool, validity: frozenset[str]) -> Severity | None:
    """The highest default severity of a pod finding: a pod only assumed to be managed (no
    pool that pods can target is configured) is told about the policy, not failed on it, so
    its policy findings are warnings at most; but what the simulator predicts the kubelet does
    on a node description the user named (NG301-NG303, every rule that needs a node) keeps its
    severity: the pod was declared for that node. Validity findings are never lowered."""
    if scope != "assumed" or rule.id in validity or (rule.needs_node and node_named):
        return None
    return Severity.WARNING


def _judged_in_each(rules: list[Rule], subject: Any, contexts: Iterable[LintContext]):
    """(rule, violation) for every rule in every context (a subject of several pools is judged
    against each pool's node description); a violation found in two contexts is given once."""
    seen: set[tuple] = set()
    for ctx in contexts:
        for rule in rules:
            for v in rule.check(subject, ctx):
                key = (rule.id, tuple(v.path), v.container, v.message)
                if key not in seen:
                    seen.add(key)
                    yield rule, v


def _name(data: dict) -> Any:
    meta = data.get("metadata")
    return meta.get("name") if isinstance(meta, dict) else None


def _own_annotations(data: dict) -> dict[str, str]:
    meta = data.get("metadata")
    annotations = meta.get("annotations") if isinstance(meta, dict) else None
    return {str(k): str(v) for k, v in annotations.items()} if isinstance(annotations, dict) else {}


def _is_kubelet_config(data: Any) -> bool:
    if not isinstance(data, dict):
        return False
    api_version = data.get("apiVersion")
    return (data.get("kind") == KUBELET_CONFIG_KIND and isinstance(api_version, str)
            and api_version.startswith(KUBELET_CONFIG_GROUP))


def _label(doc: Document, prefix: Path) -> str:
    """How the run checks name a document: its file, with the line when the file holds more
    than this document."""
    source = doc.source or "<input>"
    line = position_of(doc.data, prefix + ("kind",)) if prefix else None
    line = line[0] if line else doc.line
    return source if doc.index == 0 and not prefix else f"{source}:{line or doc.index + 1}"


def _line_of(doc: Document, prefix: Path) -> int | None:
    """The line a document (or a List item of it) starts on."""
    found = position_of(doc.data, prefix + ("kind",)) if prefix else None
    return found[0] if found else doc.line


def _line_label(doc: Document, path: Path) -> str:
    """A document part named by its file and the line where `path` is written."""
    found = position_of(doc.data, path)
    line = found[0] if found else doc.line
    return f"{doc.source or '<input>'}:{line or doc.index + 1}"


def _positions(data: Any, depth: int = 5) -> dict[Path, tuple[int, int]]:
    """The (line, column) of every field down to `depth` levels, for the documents a run
    check keeps an extract of (kubelet configurations, checkpoint files, nodes)."""
    out: dict[Path, tuple[int, int]] = {}

    def walk(node: Any, path: Path) -> None:
        if len(path) >= depth or not isinstance(node, dict):
            return
        marks = getattr(node, "marks", None) or {}
        for key, value in node.items():
            step = str(key) if isinstance(key, int) and not isinstance(key, bool) else key
            if key in marks:
                out[path + (step,)] = marks[key]
            walk(value, path + (step,))

    walk(data, ())
    return out


def _annotation_ignores(annotations: dict[str, str]) -> frozenset[str]:
    value = annotations.get(IGNORE_ANNOTATION)
    if not value:
        return frozenset()
    # Spelled like the comment form: rule ids upper-cased, `all` lower-cased (`_emit` tests both).
    parts = (part.strip() for part in value.replace(";", ",").split(","))
    return frozenset("all" if part.lower() == "all" else part.upper() for part in parts if part)


_SEEN = Violation((), "")          # `_Run._rendered`: a value NG003 has already named


def _placed_value(data: Any, base: Path, place: Any) -> Any:
    """The value a `kubelet_layers.Place` points at: in the document, or inside its embedded text
    (never the whole text: a patch is judged line by line)."""
    if place.text is None:
        return _value_at(data, base + tuple(place.path))
    if not place.inner or place.text_index >= len(place.text.documents):
        return None
    return _value_at(place.text.documents[place.text_index], tuple(place.inner))


def _value_at(data: Any, path: Path) -> Any:
    """The value at `path`, None when the path leaves the data."""
    for key in path:
        if isinstance(data, dict):
            data = data.get(key)
        elif isinstance(data, list) and isinstance(key, int) and 0 <= key < len(data):
            data = data[key]
        else:
            return None
    return data


def _at(data: Any, path: Path) -> Any:
    for key in path:
        data = data[key]
    return data

