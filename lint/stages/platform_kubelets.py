"""Judging a kubelet configuration carried by a platform object (EKS NodeConfig, OpenShift
KubeletConfig, PerformanceProfile, kubeadm, kind, Cluster API...): what the platform itself
refuses, the schema check on what the user wrote, then the kubelet rules on the effective
configuration, each finding pointed at the place the value came from (the platform object's
own field, the argument, the line inside an embedded patch, or the companion document) and
told in the platform's terms (`numaguard.lint.platforms.carrier`). It belongs to the pools
whose kubeletConfigs name its file and to those whose nodes it selects (`carrier.nodes`,
`PoolSettings.selected_by`)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterable

from numaguard.lint.load.documents import Document, position_of
from numaguard.lint.load.later_stages import VALUE_STAGES, LaterStage
from numaguard.lint.model import ObjectRef, Path, Severity, Violation, value_at
from numaguard.lint.rules.base import Rule, Subject
from numaguard.lint.rules.input import INVALID_OBJECT, RENDERED_LATER
from numaguard.lint.stages.documents import is_kubelet_config
from numaguard.lint.stages.findings import SEEN
from numaguard.lint.stages.kubelets import KubeletStage
from numaguard.lint.stages.state import RunState


class PlatformStage:
    def __init__(self, run: RunState, kubelets: KubeletStage) -> None:
        self.run, self.kubelets = run, kubelets

    def judge(self, doc: Document, prefix: Path, carrier, ref: ObjectRef, ignores: frozenset[str],
              seen: set, label: str) -> None:
        """One carrier of `doc` (module doc). `seen`: the places already given a finding by
        another carrier of the same object; `label`: how the run checks name it."""
        judgement = _CarrierJudgement.over_its_base(self.run, doc, prefix, carrier, ref, ignores, seen)
        if judgement is None:
            return                                # its companion is undecodable: reported there
        judgement.report_notices()
        flags = getattr(judgement.carrier.settings, "flags", None)
        if flags is not None and flags.value_refused:
            return                                # the kubelet exits on the command line
        config = judgement.checked_config()
        if config is None:
            return                                # what the user wrote cannot be decoded
        judgement.report_extra()
        pools, declared_by = judgement.pools_and_declaration(config)
        for rule, v, cap in self.kubelets.judge(config, pools, declared_by, judgement.carrier.kubernetes_version):
            judgement.emit(rule, v, cap=cap)
        judgement.offer(config, pools, declared_by is not None, label)


@dataclass
class _CarrierJudgement:
    """One carrier being judged: where its findings go (its document, or the companion document
    of the same file it is built over) and which places already have one."""

    run: RunState
    doc: Document
    prefix: Path
    carrier: Any                                  # numaguard.lint.platforms.carrier.PlatformKubelet
    companion: Document | None
    ref: ObjectRef
    ignores: frozenset[str]
    seen: set

    @classmethod
    def over_its_base(cls, run: RunState, doc: Document, prefix: Path, carrier, ref: ObjectRef,
                      ignores: frozenset[str], seen: set) -> "_CarrierJudgement | None":
        """The carrier with what other objects of the run give it (`resolve`) and rebuilt over
        its companion document (`rebase`); None when that companion cannot be decoded."""
        from numaguard.lint.k8s.kubelet_schema import decode_kubelet_config

        if carrier.resolve is not None:
            carrier = carrier.resolve(run.references)   # settings other objects of the run give it
        companion = None
        if carrier.rebase is not None and carrier.companion is not None:
            companion = run.batch.companions.get((doc.source,) + tuple(carrier.companion))
            if companion is not None and is_kubelet_config(companion.data):
                decoded = decode_kubelet_config(companion.data)
                if decoded.fatal:
                    return None                   # reported on the companion; nothing runs
                carrier = carrier.rebase(decoded.effective)
            elif companion is not None:           # a platform object (an EKS Anywhere machine config)
                carrier = carrier.rebase(companion.data)
        return cls(run, doc, prefix, carrier, companion, ref, ignores, seen)

    def report_notices(self) -> None:
        """What the platform itself says about its layers and flags."""
        for rule_id, place, v in self.carrier.notices:
            self.emit_place(self.run.rules.by_id(rule_id) or INVALID_OBJECT, v, place,
                            stages=self.carrier.later_stages)

    def checked_config(self) -> dict | None:
        """The effective configuration without the unknown fields the kubelet drops, None when
        what the user wrote cannot be decoded. What the user wrote is checked (the platform's own
        additions are valid by construction): their YAML, or settings without positions (a
        PerformanceProfile's JSON annotation), each finding pointed at where it was written. As
        for a KubeletConfiguration file, unknown fields are reported and dropped, type errors stop."""
        from numaguard.lint.k8s.kubelet_schema import UNKNOWN_FIELD_FIX_PREFIX, decode_kubelet_config
        from numaguard.lint.platforms.carrier import drop_paths

        unknown = []
        for data, place in self._written():
            if not data:
                continue
            data = {"apiVersion": "kubelet.config.k8s.io/v1beta1", "kind": "KubeletConfiguration", **data}
            decoded = decode_kubelet_config(data)
            for v in decoded.violations:
                self.emit(INVALID_OBJECT, v, place)
            if decoded.fatal:
                return None
            unknown += [v.path for v in decoded.violations
                        if (v.remediation or "").startswith(UNKNOWN_FIELD_FIX_PREFIX)]
        return drop_paths(self.carrier.config, unknown)

    def _written(self) -> list[tuple[Any, Any]]:
        """(settings the user wrote, their Place or None for the carrier's own mapping)."""
        from numaguard.lint.k8s.kubelet_layers import COMPANION, MERGE, REPLACE, STRATEGIC

        carrier = self.carrier
        if carrier.settings is None:
            return [(carrier.written or carrier.unpositioned, None)]
        return [(layer.data, layer.place) for layer in carrier.settings.layers
                if layer.mode in (MERGE, STRATEGIC, REPLACE) and layer.place.shown
                and layer.place.document != COMPANION and isinstance(layer.data, dict)]

    def report_extra(self) -> None:
        """What the platform refuses or notes beside the kubelet's rules, at document paths."""
        for rule_id, v in self.carrier.extra:
            rule = self.run.rules.by_id(rule_id)
            if rule is not None:
                self.run.log.emit_doc(self.doc, self.prefix, self.ref, rule, v, self.ignores)

    def pools_and_declaration(self, config: dict) -> tuple[tuple[str, ...], str | None]:
        """The pools it belongs to and why it is held to their requirements (or None). The pool
        requirements apply to a configuration of a pool (one over a base numaguard does not see
        only when the config names its file, or when it shows the intent), when the
        PodLevelResourceManagers gate declares it (in whatever layer or flag the carrier merges),
        when it shows the intent through a manager policy (assumed; a PerformanceProfile always
        sets cpuManagerPolicy static) or under scope: all; what stops any kubelet applies to
        every one (`kubelet_declaration`)."""
        from numaguard.lint.rules.kubelet import kubelet_declaration

        ctx = self.run.ctx
        named = self.run.batch.pools_naming(self.doc.source)
        selected = tuple(p.pool.name for p in ctx.pools
                         if p.pool.name not in named and p.pool.selected_by(self.carrier.nodes))
        declared_by = kubelet_declaration(config, ctx, bool(named) or (bool(selected) and self.carrier.base_known),
                                          selected=bool(selected))
        return named + selected, declared_by

    def offer(self, config: dict, pools: tuple[str, ...], in_pool: bool, label: str) -> None:
        """The judged configuration, offered to the run checks with where each setting is."""
        def locate_setting(path: Path) -> tuple[Path, tuple[int, int] | None]:
            place = self.carrier.place(tuple(path))
            return tuple(place.dotted()), self._place_position(place)[1]

        doc = self.doc
        self.run.checks.offer(Subject("kubelet", config, label=label, file=doc.source, line=doc.line,
                                      prefix=self.prefix, pools=pools, in_pool=in_pool,
                                      whole=self.carrier.base_known, ref=self.ref, ignores=self.ignores,
                                      locate_setting=locate_setting))

    def emit(self, rule: Rule, v: Violation, place=None, cap: Severity | None = None) -> None:
        """A kubelet finding told in the platform's terms (`carrier.adjust`) and pointed at where
        the value came from. A rendered KubeletConfig's finding waits for its profile's
        (lint/rendered.py); a profile's finding is noted so that the render's same one is dropped."""
        carrier = self.carrier
        kubelet_path = tuple(v.path)
        adjusted = carrier.adjust(rule.id, v)
        if adjusted is None:
            return
        place = carrier.place(tuple(adjusted.path)) if place is None else place.within(adjusted.path)
        if carrier.renders_of:
            self.run.log.rendered.note_source(carrier.renders_of, rule.id, kubelet_path)
        held = (carrier.rendered_from, kubelet_path) if carrier.rendered_from else None
        self.emit_place(rule, adjusted, place, held, cap, carrier.later_stages)

    def emit_place(self, rule: Rule, v: Violation, place, held: tuple | None = None,
                   cap: Severity | None = None, stages: Iterable[LaterStage] = VALUE_STAGES) -> None:
        """A finding at a `kubelet_layers.Place`: in this document or its companion, and inside
        an embedded text at the line the setting is on. A finding on a value one of `stages`
        (the carrier's later stages) renders first becomes NG003."""
        target, position = self._place_position(place)
        base = () if target is self.companion else self.prefix
        log = self.run.log
        rendered = log.rendered_instead(rule, _placed_value(target.data, base, place), stages,
                                        (target.source, base + tuple(place.dotted())))
        if rendered is SEEN:
            return
        if rendered is not None:
            rule, v, held, cap = RENDERED_LATER, rendered, None, None
        # A place several carriers share (two nodes of one kind Cluster, an InitConfiguration
        # and a JoinConfiguration over one KubeletConfiguration) gets the finding once.
        bucket = self.run.batch.companion_findings if target is self.companion else self.seen
        key = (rule.id, target.source, position, v.message)
        if key in bucket:
            return
        bucket.add(key)
        log.emit(rule, v, file=target.source, position=position, ref=self.ref, ignores=self.ignores,
                 path=base + tuple(place.dotted()), held=held, cap=cap)

    def _place_position(self, place) -> tuple[Document, tuple[int, int] | None]:
        """The document a `kubelet_layers.Place` is in (this one or its companion) and the line
        and column there, inside an embedded text at the line the setting is on."""
        from numaguard.lint.k8s.kubelet_layers import COMPANION, embedded_position

        companion = self.companion
        target, base = (companion, ()) if place.document == COMPANION and companion is not None \
            else (self.doc, self.prefix)
        position = position_of(target.data, base + tuple(place.path))
        if place.text is not None and position is not None and place.text_index < len(place.text.documents):
            inner = position_of(place.text.documents[place.text_index], tuple(place.inner))
            if inner is not None:
                position = embedded_position(position, place.path[-1] if place.path else None, inner,
                                             place.text.multiline)
        return target, position or ((target.line, 1) if target.line else None)


def _placed_value(data: Any, base: Path, place: Any) -> Any:
    """The value a `kubelet_layers.Place` points at: in the document, or inside its embedded text
    (never the whole text: a patch is judged line by line)."""
    if place.text is None:
        return value_at(data, base + tuple(place.path))
    if not place.inner or place.text_index >= len(place.text.documents):
        return None
    return value_at(place.text.documents[place.text_index], tuple(place.inner))
