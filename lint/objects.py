"""The kinds numaguard understands, and where each keeps its pod spec.

A workload controller carries a pod template; findings about the template name the workload
and point into the template (`spec.template.spec...`). CronJob nests a Job template
(`spec.jobTemplate.spec.template`). Paths follow the `apps/v1`, `batch/v1` and `core/v1` types.
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import Any

from numaguard.lint.k8s.platform_registry import platform_reader
from numaguard.lint.k8s.platforms import PlatformError
from numaguard.lint.model import ObjectRef, Path

def api_group(api_version: str | None) -> str:
    """The API group of an apiVersion: "apps" for "apps/v1", "" for the core group's "v1"."""
    group, slash, _version = (api_version or "").rpartition("/")
    return group if slash else ""


# (API group, kind) -> the paths from the document root to its pod templates (metadata +
# spec); () is the document itself (a Pod). A kind of another group (a Volcano
# batch.volcano.sh Job, an OpenKruise apps.kruise.io DaemonSet) is not one of these.
POD_TEMPLATE_PATHS: dict[tuple[str, str], tuple[Path, ...]] = {
    ("", "Pod"): ((),),
    ("", "PodTemplate"): (("template",),),
    ("", "ReplicationController"): (("spec", "template"),),
    ("apps", "Deployment"): (("spec", "template"),),
    ("apps", "ReplicaSet"): (("spec", "template"),),
    ("apps", "StatefulSet"): (("spec", "template"),),
    ("apps", "DaemonSet"): (("spec", "template"),),
    ("batch", "Job"): (("spec", "template"),),
    ("batch", "CronJob"): (("spec", "jobTemplate", "spec", "template"),),
}


@dataclass(frozen=True)
class PodTarget:
    """A pod, or the pod template inside a workload, as the pod rules see it.

    `spec` is the raw pod spec dict; `spec_path` is where it sits in its document (e.g.
    ("spec", "template", "spec") in a Deployment), so violations can be given relative to the
    pod spec and still point at the right line. `annotations` are the pod's own (the template's),
    with the workload's merged under them, because suppressions on a workload cover its template.
    """

    ref: ObjectRef
    spec: dict
    spec_path: Path
    annotations: dict[str, str]
    metadata_path: Path

    @cached_property
    def analysis(self) -> Any:
        """The pod's resource semantics (`numaguard.lint.k8s.pod_budget.PodAnalysis`), computed once per pod
        however many rules ask."""
        from numaguard.lint.k8s.pod_budget import PodAnalysis

        return PodAnalysis(self.spec)


KUBELET_CONFIG_GROUP = "kubelet.config.k8s.io/"
KUBELET_CONFIG_KIND = "KubeletConfiguration"


@dataclass(frozen=True)
class ShapeProblem:
    """A known kind whose shape is wrong where numaguard reads it (NG002): where, and what."""

    path: Path
    message: str


@dataclass(frozen=True)
class Classified:
    """What a document is: a pod carrier, a kubelet configuration, or something we skip.

    One document may carry several subjects: a workload CRD with several pod templates, a
    platform object with several kubelet configurations (one per node group). A subject whose
    shape is wrong is a `ShapeProblem`; the others are still judged."""

    kind: str                                  # "pod" | "kubelet" | "skip"
    ref: ObjectRef
    pods: tuple[PodTarget, ...] = ()
    platforms: tuple[Any, ...] = ()            # kubelet configs carried by a platform object
                                               # (numaguard.lint.k8s.platforms.PlatformKubelet)
    problems: tuple[ShapeProblem, ...] = ()

    @property
    def pod(self) -> PodTarget | None:
        """The first (for most kinds the only) pod template."""
        return self.pods[0] if self.pods else None


def object_ref(doc: dict) -> ObjectRef:
    meta = doc.get("metadata")
    meta = meta if isinstance(meta, dict) else {}
    name, namespace = meta.get("name"), meta.get("namespace")
    return ObjectRef(api_version=_str_or_none(doc.get("apiVersion")), kind=_str_or_none(doc.get("kind")),
                     namespace=_str_or_none(namespace), name=_str_or_none(name))


def classify(doc: dict) -> Classified:
    ref = object_ref(doc)
    kind, api_version = ref.kind, ref.api_version or ""
    if kind == KUBELET_CONFIG_KIND and api_version.startswith(KUBELET_CONFIG_GROUP):
        return Classified("kubelet", ref)
    reader = platform_reader(api_version, kind or "")
    if reader is not None:
        # EKS NodeConfig, OpenShift KubeletConfig, PerformanceProfile: the kubelet rules run on
        # the configuration the platform makes the kubelet start with (lint/k8s/platforms.py).
        # A reader yields one carrier per kubelet configuration the object holds, and a
        # PlatformError for each one of the wrong shape (or raises one for the whole object).
        try:
            read = list(reader(doc))
        except PlatformError as err:
            read = [err]
        return Classified("kubelet", ref, platforms=tuple(c for c in read if not isinstance(c, PlatformError)),
                          problems=tuple(ShapeProblem(e.path, f"{kind}: {e.message}")
                                         for e in read if isinstance(e, PlatformError)))
    template_paths = POD_TEMPLATE_PATHS.get((api_group(api_version), kind or ""))
    if template_paths is None:
        return Classified("skip", ref)
    pods: list[PodTarget] = []
    problems: list[ShapeProblem] = []
    for template_path in template_paths:
        found = _pod_at(doc, ref, template_path)
        (pods if isinstance(found, PodTarget) else problems).append(found)
    return Classified("pod", ref, pods=tuple(pods), problems=tuple(problems))


def _pod_at(doc: dict, ref: ObjectRef, template_path: Path) -> PodTarget | ShapeProblem:
    """The pod template at `template_path` (its `spec` must be a mapping), or what is wrong."""
    spec_path = template_path + ("spec",)
    template = node = doc
    for depth, key in enumerate(spec_path, start=1):
        child = node.get(key)
        if not isinstance(child, dict):
            what = "is missing" if child is None else "must be a mapping"
            return ShapeProblem(spec_path[:depth - (child is None)],
                                f"{ref.kind}: {'.'.join(map(str, spec_path[:depth]))} {what}")
        if depth == len(template_path):
            template = child
        node = child
    return PodTarget(ref=ref, spec=node, spec_path=spec_path, annotations=_merged_annotations(doc, template),
                     metadata_path=template_path + ("metadata",))


def _merged_annotations(doc: dict, template: dict) -> dict[str, str]:
    """The template's annotations over the workload's: a workload's suppression covers its template."""
    merged: dict[str, str] = {}
    for holder in (doc, template) if template is not doc else (doc,):
        meta = holder.get("metadata")
        annotations = meta.get("annotations") if isinstance(meta, dict) else None
        if isinstance(annotations, dict):
            merged.update({str(k): str(v) for k, v in annotations.items()})
    return merged


def _str_or_none(value: Any) -> str | None:
    return value if isinstance(value, str) else (None if value is None else str(value))
