"""Judging a KubeletConfiguration as the kubelet reads it: merged with its drop-ins when they
are linted too, unknown fields reported (NG002) and dropped, what stops any kubelet checked
on every configuration, the pool requirements only on pool configurations
(`kubelet_declaration`). `judge` is shared with the platform carriers (`platform_kubelets`)."""
from __future__ import annotations

from dataclasses import replace
from typing import Iterable, Iterator

from numaguard.lint.load.documents import Document, position_of
from numaguard.lint.model import ObjectRef, Path, Severity, Violation
from numaguard.lint.rules.base import LintContext, Rule, Subject
from numaguard.lint.rules.input import INVALID_OBJECT
from numaguard.lint.stages.documents import at, label, positions
from numaguard.lint.stages.state import RunState, judged_in_each


class KubeletStage:
    def __init__(self, run: RunState) -> None:
        self.run = run

    def judge_file(self, doc: Document, prefix: Path, data: dict, ref: ObjectRef) -> None:
        """A KubeletConfiguration document (with its drop-ins), then offered to the run checks."""
        from numaguard.lint.k8s.kubelet_dropin import dropin_owner, merge_kubelet_configs
        from numaguard.lint.rules.kubelet import kubelet_declaration

        run = self.run
        if id(doc) in run.batch.merged_dropins and not prefix:
            run.log.summary.objects -= 1          # linted as part of its main configuration
            return
        parts = [doc] + (run.batch.dropins.get(doc.source or "", []) if not prefix else [])
        decoded = self._decoded(parts, doc, prefix, ref)
        if decoded is None:
            return                                # the kubelet cannot decode the file at all
        if dropin_owner(doc.source) is not None and len(parts) == 1 and not prefix:
            return                                # a drop-in alone is not a whole configuration
        effective = merge_kubelet_configs(decoded[0].effective, [d.effective for d in decoded[1:]])
        # The pools it belongs to: those whose kubeletConfigs name the main file or a drop-in.
        pools = tuple(dict.fromkeys(name for part in parts for name in run.batch.pools_naming(part.source)))
        declared_by = kubelet_declaration(effective, run.ctx, bool(pools))
        ignores = frozenset().union(*(p.ignores for p in parts))
        for rule, v, cap in self.judge(effective, pools, declared_by):
            if len(parts) == 1:
                run.log.emit_doc(doc, prefix, ref, rule, v, ignores, cap=cap)
            else:
                self._emit_merged(parts, ref, rule, v, ignores, cap)
        run.checks.offer(Subject("kubelet", effective, label=label(doc, prefix), file=doc.source, line=doc.line,
                                 prefix=prefix, pools=pools, in_pool=declared_by is not None, ref=ref,
                                 ignores=ignores, locate=lambda: positions(data)))

    def _decoded(self, parts: list[Document], doc: Document, prefix: Path, ref: ObjectRef) -> list | None:
        """Each part decoded as the kubelet decodes it, its NG002 findings reported; None when
        one cannot be decoded at all."""
        from numaguard.lint.k8s.kubelet_schema import decode_kubelet_config

        decoded = []
        for part in parts:
            part_prefix = prefix if part is doc else ()
            result = decode_kubelet_config(at(part.data, part_prefix))
            for v in result.violations:
                self.run.log.emit_doc(part, part_prefix, ref, INVALID_OBJECT, v, part.ignores)
            decoded.append(result)
        return None if any(d.fatal for d in decoded) else decoded

    def judge_companion(self, doc: Document, ref: ObjectRef) -> None:
        """A KubeletConfiguration that a platform object of the same file takes as its base:
        checked for what the kubelet cannot decode here, judged with the carriers built on it."""
        from numaguard.lint.k8s.kubelet_schema import decode_kubelet_config

        for v in decode_kubelet_config(doc.data).violations:
            self.run.log.emit_doc(doc, (), ref, INVALID_OBJECT, v, doc.ignores)

    def judge(self, config: dict, pools: tuple[str, ...], declared_by: str | None,
              version: tuple[int, int] | None = None) -> Iterator[tuple[Rule, Violation, Severity | None]]:
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

        self.run.log.summary.declare("kubeletConfigurations", declared_by)
        assumed, in_pool = declared_by == "assumed", declared_by is not None
        rules = [r for r in self.run.rules.of("kubelet") if in_pool or r.id in VALIDITY_RULES]
        contexts = self._contexts(pools, in_pool)
        if version is not None:
            contexts = [replace(c, kubernetes_version=version) for c in contexts]
        for rule, v in judged_in_each(rules, config, contexts):
            refusal = rule.id in VALIDITY_RULES if v.refusal is None else v.refusal
            yield rule, v, (Severity.WARNING if assumed and not refusal else None)

    def _contexts(self, pools: Iterable[str], in_pool: bool) -> list[LintContext]:
        """The contexts a kubelet configuration is judged with: its pools' (their node
        descriptions), else the run's; outside the pool tier, marked so."""
        ctx = self.run.ctx
        contexts = [c for c in map(ctx.pool_context, pools) if c is not None] or [ctx]
        return contexts if in_pool else [replace(c, in_pool=False) for c in contexts]

    def _emit_merged(self, parts: list[Document], ref: ObjectRef, rule: Rule, v: Violation,
                     ignores: frozenset[str], cap: Severity | None = None) -> None:
        """A finding on a merged configuration points at the file that set the effective value
        (the last drop-in holding the field, else the main file)."""
        from numaguard.lint.k8s.kubelet_dropin import origin_index

        which, _ = origin_index([p.data for p in parts], tuple(v.path))
        part = parts[which]
        position = position_of(part.data, tuple(v.path)) or ((part.line, 1) if part.line else None)
        self.run.log.emit(rule, v, file=part.source, position=position, ref=ref, ignores=ignores,
                          path=tuple(v.path), cap=cap)
