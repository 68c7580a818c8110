"""The engine: parsed documents in, findings out. No files, no terminals, no HTTP.

`lint_documents` is what the CLI, the webhook and library users call. It classifies each
document (pod carrier, KubeletConfiguration, checkpoint file, node, or skipped), runs the
schema check (NG002) and, when that passes, every enabled rule for that kind of object, then
resolves each violation's path to a line and column, applies severity overrides and
suppressions, and counts.

After the documents, a pool pass (`_PoolInputs`) judges what belongs together: every
KubeletConfiguration of the run as one pool (NG401), the nodes' hardware (NG404, NG405) and
the kubelet's checkpoint files (NG402, NG403, NG406-NG408). It works from small per-document
extracts (`KubeletExtract`, `CheckpointExtract`, `NodeHardware`, pod uids) taken while each
document is linted, never from retained documents.
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any, Iterable

from numaguard.lint.baseline import BaselineEntry
from numaguard.lint.config import Config
from numaguard.lint.load import skips
from numaguard.lint.load.documents import Document, LoadError, expand_lists, position_of
from numaguard.lint.model import Finding, ObjectRef, Path, Severity, Summary, Violation, dotted_path, value_kind
from numaguard.lint.objects import KUBELET_CONFIG_GROUP, KUBELET_CONFIG_KIND, classify
from numaguard.lint.k8s.platform_registry import kindless_reader
from numaguard.lint.rendered import RenderedFindings
from numaguard.lint.rules.base import LintContext, Rule
from numaguard.lint.rules.input import INVALID_DOCUMENT, INVALID_OBJECT
from numaguard.lint.rules.registry import all_rules
from numaguard.lint.rules.node import (CHECKPOINT_CORRUPT, CheckpointExtract, RunningContainer, checkpoint_findings,
                                       podresources_containers, reserved_cpu_findings)
from numaguard.lint.rules.pool import (KubeletExtract, NodeHardware, PoolViolation, hardware_from_node_object,
                                       hardware_from_nrt, pool_findings)
from numaguard.lint.k8s.checkpoints import checkpoint_kind

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
    unread: list[str] = field(default_factory=list)

    @property
    def active(self) -> list[Finding]:
        """What counts: not suppressed, and not already recorded in a baseline."""
        return [f for f in self.findings if not f.suppressed and f.baseline_state != "unchanged"]


def lint_documents(documents: Iterable[Document | dict], *, config: Config | None = None,
                   selection: Selection | None = None, node: Any = None,
                   load_errors: Iterable[LoadError] = (), context: LintContext | None = None) -> LintResult:
    """Lint parsed documents. Plain dicts are accepted (no positions, no file). `context`: a
    `rule_context(config, node)` the caller keeps across calls (the webhook: one per worker)."""
    linter = Linter(config=config, selection=selection, node=node, context=context)
    linter.lint(documents, load_errors)
    return linter.finish()


@dataclass
class RunPart:
    """What one batch of files leaves behind once its documents are dropped: findings, counts
    and the pool pass's extracts. Worker processes return one; `Linter.absorb` merges it."""

    findings: list[Finding]
    summary: Summary
    pool: _PoolInputs
    rendered: RenderedFindings = field(default_factory=RenderedFindings)


class Linter:
    """One lint run fed a batch of documents at a time (the CLI: one file and its kubelet
    drop-ins), so that a caller can drop each file's documents before loading the next: memory
    then follows the findings, not the input. `finish` runs the pool pass over what every batch
    left behind and returns the findings in the reports' order."""

    def __init__(self, *, config: Config | None = None, selection: Selection | None = None,
                 node: Any = None, context: LintContext | None = None) -> None:
        config = config or Config()
        selection = selection or Selection(severities=config.severities)
        self._run = _Run(context or rule_context(config, node), selection, config.names_pool_kubelet_config)

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
        for doc in docs:
            reason = doc.skip or (skips.NOT_KUBERNETES if isinstance(doc.data, list) else None)
            if reason is not None:
                run.summary.skip(reason)
                run.summary.helm_charts += doc.skip_detail == skips.HELM_CHART
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

    def take(self) -> RunPart:
        """Hand over (and forget) what the batches so far left behind."""
        run = self._run
        part = RunPart(run.findings, run.summary, run.pool, run.rendered)
        run.findings, run.summary, run.pool, run.rendered = [], Summary(), _PoolInputs(), RenderedFindings()
        return part

    def absorb(self, part: RunPart) -> None:
        """Merge what another Linter (a worker's) left behind, in file order."""
        run = self._run
        run.findings.extend(part.findings)
        run.summary.add(part.summary)
        run.pool.merge(part.pool)
        run.rendered.merge(part.rendered)

    def finish(self) -> LintResult:
        """Run the pool pass and return every finding, sorted as the reports show them."""
        run = self._run
        run.pool_pass()
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
    if not isinstance(data.get("kind"), str) or (
            isinstance(api_version, str) and api_version.startswith(_KUSTOMIZE_GROUP)):
        # Talos' machine configuration and GKE's node system configuration carry kubelet
        # settings without a kind (numaguard.lint.k8s.platform_registry)
        return None if kindless_reader(data) is not None else skips.NOT_KUBERNETES
    return None


def rule_context(config: Config, node: Any = None) -> LintContext:
    """What every check may consult besides its subject, built from the config and the node."""
    from numaguard.lint.numa.admission import empty_state_or_none
    kubelet_config = getattr(node, "kubelet_config", None)
    empty = empty_state_or_none(node.topology, kubelet_config, name=getattr(node, "name", "node")) \
        if node is not None else None
    return LintContext(kubernetes_version=config.kubernetes_version, scope_all=config.scope_all,
                       pool=config.pool, node=node, kubelet_config=kubelet_config, empty_node_state=empty,
                       carriers=config.pod_carriers)


class _Run:
    """The mutable bookkeeping of one lint run (findings, counts), kept out of module state."""

    def __init__(self, ctx: LintContext, selection: Selection,
                 names_pool_kubelet_config=lambda source: False) -> None:
        self.ctx, self.selection = ctx, selection
        self.names_pool_kubelet_config = names_pool_kubelet_config
        self.dropins: dict[str, list[Document]] = {}     # main source -> its drop-ins, in order
        self.merged_dropins: set[int] = set()             # id() of drop-ins merged into a main
        self.companions: dict[tuple, Document] = {}       # (source, group, kind) -> the document
        self.owned_companions: set[int] = set()           # id() of companions judged with a carrier
        self.companion_findings: set = set()              # findings already reported on a companion
        rules = [r for r in all_rules() if selection.enabled(r) and (ctx.node or not r.needs_node)]
        self.pod_rules = [r for r in rules if r.target == "pod"]
        self.kubelet_rules = [r for r in rules if r.target == "kubelet"]
        self.status_rules = [r for r in rules if r.target == "status"]
        self._rules_by_id = {r.id: r for r in rules}
        self.findings: list[Finding] = []
        self.summary = Summary()
        self.pool = _PoolInputs()
        self.rendered = RenderedFindings()

    # -- documents ---------------------------------------------------------------------
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
        from numaguard.lint.k8s.platform_registry import companion_kind

        wanted = {}
        for d in docs:
            if isinstance(d.data, dict) and isinstance(d.data.get("apiVersion"), str):
                pair = companion_kind(d.data["apiVersion"], str(d.data.get("kind")))
                if pair is not None:
                    wanted[(d.source,) + pair] = True
        for d in docs:
            if not isinstance(d.data, dict) or not isinstance(d.data.get("apiVersion"), str):
                continue
            for (source, group, kind) in wanted:
                if d.source == source and d.data.get("kind") == kind and d.data["apiVersion"].startswith(group):
                    if self.companions.setdefault((source, group, kind), d) is d:
                        self.owned_companions.add(id(d))

    def add_load_error(self, error: LoadError) -> None:
        if checkpoint_kind(None, error.source) is not None:       # cpu_manager_state that is not JSON
            self.summary.objects += 1
            self._emit(CHECKPOINT_CORRUPT, Violation(path=(), message="the kubelet cannot restore this "
                                                     f"checkpoint: not JSON: {error.message}"),
                       file=error.source, position=(error.line, error.column) if error.line else None,
                       ref=None, ignores=frozenset())
            return
        self._emit(INVALID_DOCUMENT, Violation(path=(), message=error.message), file=error.source,
                   position=(error.line, error.column) if error.line else None, ref=None,
                   ignores=frozenset())

    def lint_one(self, doc: Document, prefix: Path) -> None:
        data = _at(doc.data, prefix)
        if not isinstance(data, dict):
            self._emit_doc(doc, prefix, None, INVALID_DOCUMENT,
                           Violation(path=(), message=f"list item is {value_kind(data)}, not a mapping"),
                           doc.ignores)
            return
        running = podresources_containers(_label(doc, prefix), data)
        if running is not None:            # a saved PodResources List answer (NG409)
            self.summary.objects += 1
            self.pool.add(_label(doc, prefix), doc, prefix, running=running)
            return
        kind = checkpoint_kind(data, doc.source)
        if kind is not None:
            self.summary.objects += 1
            label = _label(doc, prefix)
            extract = CheckpointExtract.of(label, data, kind, positions=_positions(data),
                                           ignores=doc.ignores, version=self.ctx.kubernetes_version)
            self.pool.add(label, doc, prefix, checkpoint=extract)
            return
        reason = skip_reason(data)
        if reason is not None:
            self.summary.skip(reason)
            return
        found = classify(data, self.ctx.carriers)
        if found.kind == "skip":
            hardware = _hardware(data, _label(doc, prefix))
            if hardware is not None:
                self.summary.objects += 1
                self.pool.add(hardware.source, doc, prefix, node=hardware)
                return
            self.summary.skip(skips.UNKNOWN_KIND)
            return
        if found.kind == "pod" and found.ref.kind == "Pod" and isinstance(data.get("metadata"), dict):
            uid = data["metadata"].get("uid")
            if isinstance(uid, str) and uid:
                self.pool.pod_uids.add(uid)
        self.summary.objects += 1
        if found.problems:
            # A subject of the wrong shape: no pod template (or kubelet block) to read
            # annotations from, so the object's own and the comments suppress it.
            annotations = _own_annotations(data)
            for problem in found.problems:
                self._emit_doc(doc, prefix, found.ref, INVALID_OBJECT,
                               Violation(path=problem.path, message=problem.message),
                               doc.ignores | _annotation_ignores(annotations),
                               annotations.get(IGNORE_REASON_ANNOTATION))
        if found.kind == "kubelet" and not found.platforms and not found.problems and _is_kubelet_config(data):
            if id(doc) in self.owned_companions and not prefix:
                self._lint_companion(doc, found.ref)
            else:
                self._lint_kubelet(doc, prefix, data, found.ref)
        seen: set = set()                    # one finding per place, however many carriers share it
        for carrier in found.platforms:
            self._lint_platform_kubelet(doc, prefix, carrier, found.ref,
                                        doc.ignores | _annotation_ignores(_own_annotations(data)), seen)
        if found.kind == "pod" and found.ref.kind == "Pod" and found.pods and isinstance(data.get("status"), dict):
            self._lint_status(doc, prefix, data, found.ref)
        for pod in found.pods:
            self._lint_pod(doc, prefix, pod)

    def _lint_pod(self, doc: Document, prefix: Path, pod) -> None:
        from numaguard.lint.k8s.pod_schema import pod_schema_violations
        from numaguard.lint.rules.pods import VALIDITY_RULES, pod_scope

        # Scope first: a pod that is not checked at all (no pod-level resources, not meant for
        # the pool) gets no NG002 either (README "Which pods are policy-checked").
        scope = pod_scope(pod, self.ctx)
        if scope in ("out", "unmanaged"):
            self.summary.unmanaged += scope == "unmanaged"
            return
        self.summary.assumed_managed += scope == "assumed"
        prefix = prefix + pod.spec_path
        problems = pod_schema_violations(pod.spec) + [
            Violation((name,), f"{pod.ref.kind} refuses {name} in its pod template: {why}")
            for name, why in pod.refused_fields if pod.spec.get(name) is not None]
        ignores = doc.ignores | _annotation_ignores(pod.annotations)
        reason = pod.annotations.get(IGNORE_REASON_ANNOTATION)
        if problems:
            for v in problems:
                self._emit_doc(doc, prefix, pod.ref, INVALID_OBJECT, v, ignores, reason)
            return
        ctx = self.ctx if scope != "validity" else replace(self.ctx, in_pool=False)
        for rule in self.pod_rules:
            if scope == "validity" and rule.id not in VALIDITY_RULES:
                continue
            for v in rule.check(pod, ctx):
                self._emit_doc(doc, prefix, pod.ref, rule, v, ignores, reason)

    def _lint_status(self, doc: Document, prefix: Path, data: dict, ref: ObjectRef) -> None:
        """What the kubelet did with a live Pod (its status), whatever the pod's scope."""
        ignores = doc.ignores | _annotation_ignores(_own_annotations(data))
        for rule in self.status_rules:
            for v in rule.check(data, self.ctx):
                self._emit_doc(doc, prefix, ref, rule, v, ignores)

    def _lint_kubelet(self, doc: Document, prefix: Path, data: dict, ref: ObjectRef) -> None:
        """A KubeletConfiguration, merged with its drop-ins when they are linted too, judged
        as the kubelet reads it: unknown fields are reported (NG002) and dropped, the rest is
        checked; what stops any kubelet applies to every configuration, the pool requirements
        only to pool configurations (`kubelet_in_pool`)."""
        from numaguard.lint.k8s.kubelet_dropin import dropin_owner, merge_kubelet_configs
        from numaguard.lint.k8s.kubelet_schema import decode_kubelet_config
        from numaguard.lint.rules.kubelet import VALIDITY_RULES, kubelet_in_pool

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
        named = any(self.names_pool_kubelet_config(p.source) for p in parts if p.source)
        in_pool = kubelet_in_pool(effective, self.ctx, named)
        ctx = self.ctx if in_pool else replace(self.ctx, in_pool=False)
        ignores = frozenset().union(*(p.ignores for p in parts))
        for rule in self.kubelet_rules:
            if not in_pool and rule.id not in VALIDITY_RULES:
                continue
            for v in rule.check(effective, ctx):
                if len(parts) == 1:
                    self._emit_doc(doc, prefix, ref, rule, v, ignores)
                else:
                    self._emit_merged(parts, ref, rule, v, ignores)
        if in_pool:
            # Only the pool's configurations are compared with each other (NG401): the EKS
            # default next to a kubeadm file in one repository are not one pool.
            label = _label(doc, prefix)
            self.pool.add(label, doc, prefix, kubelet=KubeletExtract.of(
                label, effective, version=self.ctx.kubernetes_version, positions=_positions(data),
                ref=ref, ignores=ignores))

    def _emit_merged(self, parts: list[Document], ref: ObjectRef, rule: Rule, v: Violation,
                     ignores: frozenset[str]) -> None:
        """A finding on a merged configuration points at the file that set the effective value
        (the last drop-in holding the field, else the main file)."""
        from numaguard.lint.k8s.kubelet_dropin import origin_index

        which, _ = origin_index([p.data for p in parts], tuple(v.path))
        part = parts[which]
        position = position_of(part.data, tuple(v.path)) or ((part.line, 1) if part.line else None)
        self._emit(rule, v, file=part.source, position=position, ref=ref, ignores=ignores,
                   path=tuple(v.path))

    # -- the pool pass -----------------------------------------------------------------
    def pool_pass(self) -> None:
        pool = self.pool
        pool.name_documents_apart()
        violations = pool_findings(pool.kubelets, pool.nodes)
        if pool.checkpoints:
            topology = getattr(self.ctx.node, "topology", None)
            violations += checkpoint_findings(pool.checkpoints, kubelet_config=pool.node_config(self.ctx),
                                              topology=topology, pod_uids=pool.pod_uids or None)
        if pool.running:
            violations += reserved_cpu_findings(pool.running, kubelet_config=pool.node_config(self.ctx))
        for pv in violations:
            self._emit_pool(pv)

    def _emit_pool(self, pv: PoolViolation) -> None:
        where = self.pool.where.get(pv.source)
        if where is None:       # a caller-made extract: no file, no positions
            self._emit(pv.rule, pv.violation, file=pv.source, position=None, ref=pv.ref,
                       ignores=pv.ignores, path=tuple(pv.violation.path))
            return
        doc, prefix, positions = where
        rel = tuple(pv.violation.path)
        position = next((positions[rel[:n]] for n in range(len(rel), 0, -1) if rel[:n] in positions),
                        (doc.line, 1) if doc.line else None)
        self._emit(pv.rule, pv.violation, file=doc.source, position=position, ref=pv.ref,
                   ignores=pv.ignores, path=prefix + rel)

    def _lint_companion(self, doc: Document, ref: ObjectRef) -> None:
        """A KubeletConfiguration that a platform object of the same file takes as its base:
        checked for what the kubelet cannot decode here, judged with the carriers built on it."""
        from numaguard.lint.k8s.kubelet_schema import decode_kubelet_config

        for v in decode_kubelet_config(doc.data).violations:
            self._emit_doc(doc, (), ref, INVALID_OBJECT, v, doc.ignores)

    def _lint_platform_kubelet(self, doc: Document, prefix: Path, carrier, ref: ObjectRef,
                               ignores: frozenset[str], seen: set) -> None:
        """A kubelet configuration carried by a platform object (EKS NodeConfig, OpenShift
        KubeletConfig, PerformanceProfile, kubeadm, kind, Cluster API): what the platform itself
        refuses, the schema check on what the user wrote, then the kubelet rules on the
        effective configuration, each finding pointed at the place the value came from (the
        platform object's own field, the argument, the line inside an embedded patch, or the
        companion document) and told in the platform's terms (`numaguard.lint.k8s.platforms`)."""
        from numaguard.lint.k8s.kubelet_layers import COMPANION, MERGE, REPLACE, STRATEGIC
        from numaguard.lint.k8s.kubelet_schema import UNKNOWN_FIELD_FIX_PREFIX, decode_kubelet_config
        from numaguard.lint.k8s.platforms import drop_paths
        from numaguard.lint.rules.kubelet import VALIDITY_RULES, kubelet_in_pool

        companion = None
        if carrier.rebase is not None and carrier.companion is not None:
            companion = self.companions.get((doc.source,) + tuple(carrier.companion))
            if companion is not None:
                decoded = decode_kubelet_config(companion.data)
                if decoded.fatal:
                    return                        # reported on the companion; nothing runs
                carrier = carrier.rebase(decoded.effective)

        def emit(rule: Rule, v: Violation, place=None) -> None:
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
            self._emit_place(doc, prefix, companion, ref, rule, adjusted, place, ignores, seen, held)

        for rule_id, place, v in carrier.notices:
            self._emit_place(doc, prefix, companion, ref, self._rules_by_id.get(rule_id, INVALID_OBJECT),
                             v, place, ignores, seen)
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
            rule = self._rules_by_id.get(rule_id)
            if rule is not None:
                self._emit_doc(doc, prefix, ref, rule, v, ignores)
        # The pool requirements apply when the configuration shows the intent (a manager
        # policy, the gate; a PerformanceProfile always sets cpuManagerPolicy static) or under
        # scope: all; what stops any kubelet applies to every one (`kubelet_in_pool`).
        in_pool = kubelet_in_pool(config, self.ctx, False)
        ctx = self.ctx if in_pool else replace(self.ctx, in_pool=False)
        for rule in self.kubelet_rules:
            if not in_pool and rule.id not in VALIDITY_RULES:
                continue
            for v in rule.check(config, ctx):
                emit(rule, v)

    def _emit_place(self, doc: Document, prefix: Path, companion: Document | None, ref: ObjectRef,
                    rule: Rule, v: Violation, place, ignores: frozenset[str], seen: set,
                    held: tuple | None = None) -> None:
        """A finding at a `kubelet_layers.Place`: in this document or its companion, and inside
        an embedded text at the line the setting is on."""
        from numaguard.lint.k8s.kubelet_layers import COMPANION, embedded_position

        target, base = (companion, ()) if place.document == COMPANION and companion is not None else (doc, prefix)
        path = base + tuple(place.path)
        position = position_of(target.data, path)
        if place.text is not None and position is not None and place.text_index < len(place.text.documents):
            inner = position_of(place.text.documents[place.text_index], tuple(place.inner))
            if inner is not None:
                position = embedded_position(position, place.path[-1] if place.path else None, inner,
                                             place.text.multiline)
        position = position or ((target.line, 1) if target.line else None)
        # A place several carriers share (two nodes of one kind Cluster, an InitConfiguration
        # and a JoinConfiguration over one KubeletConfiguration) gets the finding once.
        bucket = self.companion_findings if target is companion else seen
        key = (rule.id, target.source, position, v.message)
        if key in bucket:
            return
        bucket.add(key)
        self._emit(rule, v, file=target.source, position=position, ref=ref, ignores=ignores,
                   path=base + tuple(place.dotted()), held=held)

    # -- findings ----------------------------------------------------------------------
    def _emit_doc(self, doc: Document, prefix: Path, ref: ObjectRef | None, rule: Rule,
                  v: Violation, ignores: frozenset[str] = frozenset(), reason: str | None = None,
                  held: tuple | None = None) -> None:
        path = prefix + tuple(v.path)
        position = position_of(doc.data, path) or ((doc.line, 1) if doc.line else None)
        self._emit(rule, v, file=doc.source, position=position, ref=ref, ignores=ignores,
                   path=path, reason=reason, held=held)

    def _emit(self, rule: Rule, v: Violation, *, file: str | None, position, ref: ObjectRef | None,
              ignores: frozenset[str], path: Path = (), reason: str | None = None,
              held: tuple | None = None) -> None:
        """Record a finding; `held` (profile, kubelet path) keeps a rendered KubeletConfig's
        finding back until the run shows whether its profile has it too (`rendered`)."""
        if not self.selection.enabled(rule):
            return
        severity = self.selection.severities.get(rule.id) or v.severity or rule.severity
        suppressed = rule.id in ignores or "all" in ignores
        finding = Finding(
            rule=rule.id, name=rule.name, severity=severity, message=v.message,
            remediation=v.remediation or rule.remediation, file=file,
            line=position[0] if position else None, column=position[1] if position else None,
            object=ref, container=v.container, path=dotted_path(path), suppressed=suppressed,
            suppress_reason=reason if suppressed else None)
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


@dataclass
class _PoolInputs:
    """The per-document extracts the pool pass needs, and where each came from (the document
    object is kept only for its source, first line and position lookups of the findings)."""

    kubelets: list[KubeletExtract] = field(default_factory=list)
    checkpoints: list[CheckpointExtract] = field(default_factory=list)
    running: list[RunningContainer] = field(default_factory=list)
    nodes: list[NodeHardware] = field(default_factory=list)
    pod_uids: set[str] = field(default_factory=set)
    where: dict[str, tuple[Any, Path, dict]] = field(default_factory=dict)

    def merge(self, other: _PoolInputs) -> None:
        """Add the extracts of a later batch (a worker's files), keeping file order."""
        self.kubelets.extend(other.kubelets)
        self.checkpoints.extend(other.checkpoints)
        self.running.extend(other.running)
        self.nodes.extend(other.nodes)
        self.pod_uids |= other.pod_uids
        self.where.update(other.where)

    def add(self, label: str, doc: Document, prefix: Path, *, kubelet: KubeletExtract | None = None,
            checkpoint: CheckpointExtract | None = None, node: NodeHardware | None = None,
            running: list[RunningContainer] | None = None) -> None:
        positions: dict = {}
        if running is not None:
            self.running.extend(running)
            positions = {c.path: pos for c in running if (pos := position_of(doc.data, prefix + c.path))}
        if kubelet is not None:
            self.kubelets.append(kubelet)
            positions = kubelet.positions
        if checkpoint is not None:
            self.checkpoints.append(checkpoint)
            positions = checkpoint.positions
        if node is not None:
            self.nodes.append(node)
            positions = {p: pos for p in node.paths.values() if (pos := position_of(doc.data, prefix + p))}
        self.where[label] = (_DocPlace(doc.source, doc.line), prefix, positions)

    def name_documents_apart(self) -> None:
        """A file holding several of the pool's documents: name each by file and line (the
        first one was named by its file alone while the file was being read)."""
        from dataclasses import replace
        files = [place.source for place, _, _ in self.where.values()]
        for i, e in enumerate(self.kubelets):
            place = self.where[e.source][0]
            if e.source == place.source and files.count(place.source) > 1 and place.line:
                label = f"{place.source}:{place.line}"
                self.where[label] = self.where.pop(e.source)
                self.kubelets[i] = replace(e, source=label)

    def node_config(self, ctx: LintContext) -> dict | None:
        """The configuration the checkpoints are judged against: the node description's, else
        the run's KubeletConfigurations when they agree on the managers' policies and reserved
        CPUs (the first one's Topology Manager policy then decides the NUMA-span check)."""
        kc = getattr(ctx.node, "kubelet_config", None) if ctx.node is not None else None
        if isinstance(kc, dict):
            return kc
        if isinstance(ctx.kubelet_config, dict):
            return ctx.kubelet_config
        keys = ("cpuManagerPolicy",), ("memoryManagerPolicy",), ("reservedSystemCPUs",)
        distinct = {tuple(e.settings.get(key) for key in keys) for e in self.kubelets}
        return self.kubelets[0].config if len(distinct) == 1 else None


@dataclass(frozen=True)
class _DocPlace:
    source: str | None
    line: int | None


def _label(doc: Document, prefix: Path) -> str:
    """How the pool pass names a document: its file, with the line when the file holds more
    than this document."""
    source = doc.source or "<input>"
    line = position_of(doc.data, prefix + ("kind",)) if prefix else None
    line = line[0] if line else doc.line
    return source if doc.index == 0 and not prefix else f"{source}:{line or doc.index + 1}"


def _positions(data: Any, depth: int = 5) -> dict[Path, tuple[int, int]]:
    """The (line, column) of every field down to `depth` levels (small documents only:
    KubeletConfigurations and checkpoint files)."""
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


def _hardware(data: dict, label: str) -> NodeHardware | None:
    kind, api = data.get("kind"), str(data.get("apiVersion") or "")
    if kind == "Node" and api == "v1":
        return hardware_from_node_object(data, label)
    if kind == "NodeResourceTopology" and api.startswith("topology.node.k8s.io/"):
        return hardware_from_nrt(data, label)
    return None


def _annotation_ignores(annotations: dict[str, str]) -> frozenset[str]:
    value = annotations.get(IGNORE_ANNOTATION)
    if not value:
        return frozenset()
    # Spelled like the comment form: rule ids upper-cased, `all` lower-cased (`_emit` tests both).
    parts = (part.strip() for part in value.replace(";", ",").split(","))
    return frozenset("all" if part.lower() == "all" else part.upper() for part in parts if part)


def _at(data: Any, path: Path) -> Any:
    for key in path:
        data = data[key]
    return data

