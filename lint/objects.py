"""The kinds numaguard understands, and where each keeps its pod spec.

A workload controller carries a pod template; findings about the template name the workload
and point into the template (`spec.template.spec...`). CronJob nests a Job template
(`spec.jobTemplate.spec.template`). Paths follow the `apps/v1`, `batch/v1` and `core/v1` types.
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import Any

from numaguard.lint.k8s.platforms import PlatformError, platform_reader
from numaguard.lint.model import ObjectRef, Path

# kind -> path from the document root to the pod template (metadata + spec), () for a Pod.
POD_TEMPLATE_PATHS: dict[str, Path] = {
    "Pod": (),
    "PodTemplate": ("template",),
    "Deployment": ("spec", "template"),
    "ReplicaSet": ("spec", "template"),
    "StatefulSet": ("spec", "template"),
    "DaemonSet": ("spec", "template"),
    "Job": ("spec", "template"),
    "ReplicationController": ("spec", "template"),
    "CronJob": ("spec", "jobTemplate", "spec", "template"),
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
class Classified:
    """What a document is: a pod carrier, a kubelet configuration, or something we skip."""

    kind: str                         # "pod" | "kubelet" | "skip"
    ref: ObjectRef
    pod: PodTarget | None = None
    platform: Any = None              # a kubelet config carried by a platform object
                                      # (numaguard.lint.k8s.platforms.PlatformKubelet)
    problem: str | None = None        # a known kind whose shape is wrong (NG002)
    problem_path: Path = ()


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
        try:
            return Classified("kubelet", ref, platform=reader(doc))
        except PlatformError as err:
            return Classified("kubelet", ref, problem=f"{kind}: {err.message}", problem_path=err.path)
    if kind not in POD_TEMPLATE_PATHS:
        return Classified("skip", ref)
    template_path = POD_TEMPLATE_PATHS[kind]
    spec_path = template_path + ("spec",)
    template = node = doc
    for depth, key in enumerate(spec_path, start=1):
        child = node.get(key)
        if not isinstance(child, dict):
            what = "is missing" if child is None else "must be a mapping"
            return Classified("pod", ref, problem=f"{'.'.join(map(str, spec_path[:depth]))} {what}",
                              problem_path=spec_path[:depth - (child is None)])
        if depth == len(template_path):
            template = child
        node = child
    return Classified("pod", ref, pod=PodTarget(
        ref=ref, spec=node, spec_path=spec_path, annotations=_merged_annotations(doc, template),
        metadata_path=template_path + ("metadata",)))


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
