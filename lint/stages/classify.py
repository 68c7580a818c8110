"""The first stage: what each document of a batch is, and which stage judges it. The run
checks see every document first (a checkpoint file, a Node, a Pod's uid); then a document is
skipped (with its reason counted), reported as unreadable or of the wrong shape (NG001,
NG002), or handed to the stages that judge pods, KubeletConfigurations and platform objects."""
from __future__ import annotations

from typing import Any

from numaguard.lint.load import skips
from numaguard.lint.load.documents import Document, LoadError, position_of
from numaguard.lint.load.later_stages import FILE_STAGES
from numaguard.lint.model import Path, Severity, Violation, value_kind
from numaguard.lint.objects import Classified, classify, object_ref
from numaguard.lint.platforms.registry import kindless_reader
from numaguard.lint.rules.base import Subject
from numaguard.lint.rules.input import INVALID_DOCUMENT, INVALID_OBJECT
from numaguard.lint.stages.documents import (IGNORE_REASON_ANNOTATION, annotation_ignores, at, is_kubelet_config,
                                             label, line_label, own_annotations, positions)
from numaguard.lint.stages.kubelets import KubeletStage
from numaguard.lint.stages.platform_kubelets import PlatformStage
from numaguard.lint.stages.pods import PodStage
from numaguard.lint.stages.state import RunState

FILE_STAGES_BY_NAME = {stage.name: stage for stage in FILE_STAGES}
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
        # settings without a kind (numaguard.lint.platforms.registry)
        return None if kindless_reader(data) is not None else skips.NOT_KUBERNETES
    return None


class Classifier:
    """Hands each document to the stage that judges it."""

    def __init__(self, run: RunState) -> None:
        self.run = run
        self.pods = PodStage(run)
        self.kubelets = KubeletStage(run)
        self.platforms = PlatformStage(run, self.kubelets)

    def skipped(self, doc: Document) -> bool:
        """Count a document the loader already set aside (a template, a dangling symlink, a
        list that is no object): whether it is."""
        reason = doc.skip or (skips.NOT_KUBERNETES if isinstance(doc.data, list) else None)
        if reason is None:
            return False
        summary = self.run.log.summary
        summary.skip(reason)
        summary.helm_charts += doc.skip_detail == skips.HELM_CHART
        if reason == skips.TEMPLATE:
            self._count_template(doc.skip_detail)
        if reason == skips.DANGLING_SYMLINK:
            summary.dangling_symlinks.append(f"{doc.source} -> {doc.skip_detail}")
        return True

    def _count_template(self, stage_name: str | None) -> None:
        """Count a template file by the stage that renders it, and keep that stage's hint."""
        summary = self.run.log.summary
        stage = FILE_STAGES_BY_NAME.get(stage_name or "")
        name = stage.name if stage is not None else skips.TEMPLATE
        summary.rendered_files[name] = summary.rendered_files.get(name, 0) + 1
        if stage is not None:
            summary.rendered_hints[name] = stage.hint

    def add_load_error(self, error: LoadError) -> None:
        """An unreadable file: NG001, unless a run check reads it (a checkpoint that is not JSON)."""
        run = self.run
        position = (error.line, error.column) if error.line else None
        subject = Subject("unreadable", error.message, label=error.source or "<input>", file=error.source,
                          line=error.line, pools=run.batch.pools_naming(error.source),
                          locate=lambda: {(): position} if position else {})
        if run.checks.offer(subject):
            run.log.summary.objects += 1
            return
        run.log.emit(INVALID_DOCUMENT, Violation(path=(), message=error.message), file=error.source,
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
            self.run.log.emit(INVALID_DOCUMENT, Violation((), repeated.message(kustomized), severity=severity),
                              file=doc.source, position=(repeated.line, repeated.column), ref=ref,
                              ignores=doc.ignores)

    def judge_document(self, doc: Document, prefix: Path) -> None:
        """One document (or one item of a List, at `prefix`)."""
        run = self.run
        data = at(doc.data, prefix)
        if not isinstance(data, dict):
            run.log.emit_doc(doc, prefix, None, INVALID_DOCUMENT,
                             Violation(path=(), message=f"list item is {value_kind(data)}, not a mapping"),
                             doc.ignores)
            return
        found = self._classified(doc, prefix, data)
        if found is None:
            return
        run.log.summary.objects += 1
        if found.problems:
            self._report_problems(doc, prefix, data, found)
        self._judge_found(doc, prefix, data, found)

    def _classified(self, doc: Document, prefix: Path, data: dict) -> Classified | None:
        """What the document is, None when no stage judges it (counted as skipped, or as an
        object when a run check kept an extract of it)."""
        run = self.run
        # The run checks see every document first (a checkpoint file, a Node, a Pod's uid).
        kept = run.checks.offer(Subject("document", data, label=label(doc, prefix), file=doc.source,
                                        line=doc.line, prefix=prefix, pools=run.batch.pools_naming(doc.source),
                                        ignores=doc.ignores, locate=lambda: positions(data),
                                        position_of=lambda path: position_of(data, tuple(path))))
        reason = skip_reason(data)
        if reason is not None and not kept:
            run.log.summary.skip(reason)
            return None
        found = classify(data, run.ctx.carriers, run.references) if reason is None else None
        if found is None or found.kind == "skip":
            if kept:
                run.log.summary.objects += 1      # judged by a run check only
            else:
                run.log.summary.skip(skips.UNKNOWN_KIND)
            return None
        return found

    def _report_problems(self, doc: Document, prefix: Path, data: dict, found: Classified) -> None:
        """NG002 for a subject of the wrong shape: no pod template (or kubelet block) to read
        annotations from, so the object's own and the comments suppress it."""
        annotations = own_annotations(data)
        for problem in found.problems:
            self.run.log.emit_doc(doc, prefix, found.ref, INVALID_OBJECT,
                                  Violation(path=problem.path, message=problem.message, severity=problem.severity,
                                            remediation=problem.remediation),
                                  doc.ignores | annotation_ignores(annotations),
                                  annotations.get(IGNORE_REASON_ANNOTATION))

    def _judge_found(self, doc: Document, prefix: Path, data: dict, found: Classified) -> None:
        """Hand the object to the stages that judge what it holds: a KubeletConfiguration (alone
        or as a platform object's base), the carriers of a platform object, a live Pod's status,
        the pods of a pod carrier."""
        batch = self.run.batch
        if found.kind == "kubelet" and not found.platforms and not found.problems and is_kubelet_config(data):
            if id(doc) in batch.owned_companions and not prefix:
                self.kubelets.judge_companion(doc, found.ref)
            else:
                self.kubelets.judge_file(doc, prefix, data, found.ref)
        seen: set = set()                    # one finding per place, however many carriers share it
        # a platform object another one of its file takes as its base is judged through that one
        owned = found.kind == "platform" and id(doc) in batch.owned_companions and not prefix
        for carrier in () if owned else found.platforms:
            # One object carrying several configurations (node groups): each named by its line.
            name = label(doc, prefix) if len(found.platforms) == 1 else \
                line_label(doc, prefix + carrier.document_path(()))
            self.platforms.judge(doc, prefix, carrier, found.ref,
                                 doc.ignores | annotation_ignores(own_annotations(data)), seen, name)
        if found.kind == "pod" and found.ref.kind == "Pod" and found.pods and isinstance(data.get("status"), dict):
            self.pods.judge_status(doc, prefix, data, found.ref)
        for pod in found.pods:
            self.pods.judge(doc, prefix, pod)
