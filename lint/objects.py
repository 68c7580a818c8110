"""What a document is, and where each of its pod templates sits.

A workload controller carries pod templates; findings about a template name the workload and
point into the template (`spec.template.spec...`, `spec.replicatedJobs[1].template.spec.template
.spec...`). Kinds are matched with their API group and version against the carrier table
(`numaguard.lint.carriers`: the built-in carriers and the config's `podTemplates`), which the
caller passes in: a Volcano `batch.volcano.sh` Job is judged by its own paths, never as a
`batch/v1` Job.
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from functools import cached_property
from importlib import import_module
from typing import Any

from numaguard.lint.carriers import BUILTIN_CARRIERS, Each, Field, Guard, PodCarrier, PodCarriers, TemplatePath
from numaguard.lint.k8s.platform_registry import kindless_reader, platform_reader
from numaguard.lint.model import ObjectRef, Path, Severity, dotted_path, existing_prefix, value_kind


def api_group(api_version: str | None) -> str:
    """The API group of an apiVersion: "apps" for "apps/v1", "" for the core group's "v1"."""
    group, slash, _version = (api_version or "").rpartition("/")
    return group if slash else ""


@dataclass(frozen=True)
class PodTarget:
    """A pod, or the pod template inside a workload, as the pod rules see it.

    `spec` is the raw pod spec dict; `spec_path` is where it sits in its document (e.g.
    ("spec", "template", "spec") in a Deployment), so violations can be given relative to the
    pod spec and still point at the right line. `annotations` are the pod's own (the template's),
    with the workload's (and those of any object template in between, such as a JobSet's Job
    template) merged under them, because suppressions on a workload cover its templates.
    `refused_fields`: pod spec fields the carrier refuses in its templates, with why (Knative
    Serving refuses pod-level `resources`).
    `inline`: `spec_path` is the pod spec itself, not a template's `spec` (KServe).
    `relocated`: parts of `spec` that are not at their place below `spec_path` (a pod spec the
    platform assembles: KServe's model container, a ServingRuntime's containers), as (path in
    `spec`, the document path it came from, a note for findings about it); a finding about a
    relocated part points at that path (the rest of its path below when `exact`).
    """

    ref: ObjectRef
    spec: dict
    spec_path: Path
    annotations: dict[str, str]
    metadata_path: Path
    refused_fields: tuple[tuple[str, str], ...] = ()
    inline: bool = False
    relocated: tuple["Relocated", ...] = ()

    @property
    def template_path(self) -> str:
        """Where the template sits in its object, dotted ("" for a Pod itself)."""
        return dotted_path(self.spec_path if self.inline else self.spec_path[:-1])

    def document_path(self, path: Path) -> tuple[Path, str]:
        """(where a finding on `path` of the pod spec points in the document, a note to add)."""
        path = tuple(path)
        for part in sorted(self.relocated, key=lambda r: len(r.part), reverse=True):
            if path[:len(part.part)] == part.part:
                rest = path[len(part.part):] if part.exact else ()
                return part.to + rest, part.note
        return self.spec_path + path, ""

    @cached_property
    def analysis(self) -> Any:
        """The pod's resource semantics (`numaguard.lint.k8s.pod_budget.PodAnalysis`), computed once per pod
        however many rules ask."""
        from numaguard.lint.k8s.pod_budget import PodAnalysis

        return PodAnalysis(self.spec)


@dataclass(frozen=True)
class Relocated:
    """A part of an assembled pod spec (`PodTarget.relocated`): its path in the spec, the
    document path it came from, whether the rest of a finding's path carries over (the part is
    this document's own), and a note naming where it came from."""

    part: Path
    to: Path
    exact: bool = True
    note: str = ""


KUBELET_CONFIG_GROUP = "kubelet.config.k8s.io/"
KUBELET_CONFIG_KIND = "KubeletConfiguration"


@dataclass(frozen=True)
class ShapeProblem:
    """A known kind whose shape is wrong where numaguard reads it (NG002): where, and what."""

    path: Path
    message: str
    severity: Severity | None = None      # None: the rule's (an error)
    remediation: str | None = None        # None: the rule's


@dataclass(frozen=True)
class Classified:
    """What a document is: a pod carrier, a kubelet configuration, or something we skip.

    One document may carry several subjects: a workload CRD with several pod templates, a
    platform object with several kubelet configurations (one per node group). A subject whose
    shape is wrong is a `ShapeProblem`; the others are still judged."""

    kind: str                                  # "pod" | "kubelet" | "platform" | "skip"
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


def classify(doc: dict, carriers: PodCarriers = BUILTIN_CARRIERS, references: Any = None) -> Classified:
    """What `doc` is; `carriers` is the carrier table of the run (the rules' context holds it:
    the built-in carriers and the config's `podTemplates`); `references`: what other objects of
    the run say about this one (numaguard.lint.references.RunReferences), None for nothing."""
    ref = object_ref(doc)
    kind, api_version = ref.kind, ref.api_version or ""
    if kind == KUBELET_CONFIG_KIND and api_version.startswith(KUBELET_CONFIG_GROUP):
        return Classified("kubelet", ref)
    reader = platform_reader(api_version, kind or "", doc)
    if reader is None and kind is None and (shape := kindless_reader(doc)) is not None:
        # a Talos machine configuration or a GKE node system configuration: no kind of its own
        label, reader = shape
        ref = ObjectRef(api_version=None, kind=label, namespace=None, name=_str_or_none(_cluster_name(doc)))
    if reader is not None:
        # EKS NodeConfig, OpenShift KubeletConfig, PerformanceProfile: the kubelet rules run on
        # the configuration the platform makes the kubelet start with (lint/k8s/platforms.py).
        # A reader yields one carrier per kubelet configuration the object holds, and a
        # PlatformError for each one of the wrong shape (or raises one for the whole object).
        from numaguard.lint.k8s.platforms import PlatformError   # imported with the readers only

        try:
            read = list(reader(doc))
        except PlatformError as err:
            read = [err]
        return Classified("platform", ref, platforms=tuple(c for c in read if not isinstance(c, PlatformError)),
                          problems=tuple(ShapeProblem(e.path, f"{kind}: {e.message}", e.severity, e.remediation)
                                         for e in read if isinstance(e, PlatformError)))
    carrier = carriers.find(api_group(api_version), api_version.rpartition("/")[2], kind or "")
    if carrier is None:
        return Classified("skip", ref)
    pods: list[PodTarget] = []
    problems: list[ShapeProblem] = []
    if not _annotated(doc, carrier.none_when):
        for template_path in carrier.paths:
            found, wrong = pod_templates(doc, ref, carrier, template_path)
            pods += found
            # two paths through one missing field (AdvancedCronJob's `spec.template`): said once
            problems += [p for p in wrong if p not in problems]
        if carrier.builder:
            # templates completed from other objects of the run, or found where the object says
            module, _, function = carrier.builder.partition(":")
            build = getattr(import_module(f"numaguard.lint.{module}"), function)
            pods, extra = build(doc, ref, carrier, pods, references)
            problems += [ShapeProblem(path, message) for path, message in extra]
    if carrier.refused_when and not _annotated(doc, carrier.refused_when):
        pods = [replace(p, refused_fields=()) for p in pods]
    return Classified("pod", ref, pods=tuple(pods), problems=tuple(problems))


def _annotated(doc: dict, condition: tuple) -> bool:
    """Whether the object's annotation `condition[0]` has one of the values `condition[1]`."""
    if not condition:
        return False
    meta = doc.get("metadata")
    annotations = meta.get("annotations") if isinstance(meta, dict) else None
    return isinstance(annotations, dict) and annotations.get(condition[0]) in condition[1]


_POD_SPEC = Field("spec")     # every template path ends at a template; its spec is required


def _cluster_name(doc: dict) -> Any:
    cluster = doc.get("cluster")
    return cluster.get("clusterName") if isinstance(cluster, dict) else None


def pod_templates(doc: dict, ref: ObjectRef, carrier: PodCarrier,
                  template_path: TemplatePath) -> tuple[list[PodTarget], list[ShapeProblem]]:
    """Every pod template at `template_path` (wildcards expanded, in document order), each with
    a `spec` mapping, and what is wrong where a required part is missing or mis-shaped.

    Walked one step at a time over every node the path has reached so far (its position, and
    the mappings passed on the way, whose metadata annotations the template inherits)."""
    if template_path.unless and _present(doc, template_path.unless):
        return [], []
    problems: list[ShapeProblem] = []
    reached: list[tuple[Any, Path, tuple[dict, ...]]] = [(doc, (), ())]
    for step in (*template_path.steps, *(() if template_path.inline else (_POD_SPEC,)), None):
        expected = list if step is Each.LIST_ITEM else dict
        following: list[tuple[Any, Path, tuple[dict, ...]]] = []
        for node, path, holders in reached:
            if isinstance(step, Guard):
                if isinstance(node, dict) and node.get("kind") == step.kind and \
                        api_group(_str_or_none(node.get("apiVersion"))) == step.group:
                    following.append((node, path, holders))
                continue                  # another kind's object: not this path's
            if not isinstance(node, expected):
                what = "is missing" if node is None else \
                    f"must be {'a list' if expected is list else 'a mapping'}, found {value_kind(node)}"
                problems.append(_problem(doc, ref, template_path, path, what))
            elif step is None:            # the pod spec; the last holder is its template
                following.append((node, path, holders))
            elif step is Each.LIST_ITEM:
                following += [(item, path + (i,), holders) for i, item in enumerate(node)]
            elif step is Each.MAP_VALUE:
                following += [(value, path + (key,), holders) for key, value in node.items()]
            elif node.get(step.name) is not None or not step.optional:
                following.append((node.get(step.name), path + (step.name,), holders + (node,)))
        reached = following
    if template_path.inline:
        return [_inline_target(ref, spec, path, holders, carrier, template_path) for spec, path, holders in reached], \
            problems
    return [PodTarget(ref=ref, spec=spec, spec_path=path, annotations=_merged_annotations(holders),
                      metadata_path=path[:-1] + ("metadata",), refused_fields=carrier.refused_pod_fields)
            for spec, path, holders in reached], problems


def _inline_target(ref: ObjectRef, spec: dict, path: Path, holders: tuple[dict, ...], carrier: PodCarrier,
                   template_path: TemplatePath) -> PodTarget:
    """A pod spec inlined in a component (KServe, LLMInferenceService): its annotations are the
    component's `annotations` over the object's, and a container field of the component
    (KServe's `model`) becomes the first container, named kserve-container unless named."""
    annotations = _merged_annotations(holders)
    own = spec.get("annotations")
    if isinstance(own, dict):
        annotations.update({str(k): str(v) for k, v in own.items()})
    relocated: tuple[Relocated, ...] = ()
    field_name = next((f for f in template_path.containers if isinstance(spec.get(f), dict)), None)
    if field_name is not None:
        containers = spec.get("containers") if isinstance(spec.get("containers"), list) else []
        model = {"name": INFERENCE_CONTAINER, **{k: v for k, v in spec[field_name].items() if k in CONTAINER_FIELDS}}
        spec = {**spec, "containers": [model, *containers]}
        relocated = (Relocated(("containers", 0), path + (field_name,)),
                     *(Relocated(("containers", i + 1), path + ("containers", i)) for i in range(len(containers))))
    return PodTarget(ref=ref, spec=spec, spec_path=path, annotations=annotations, metadata_path=path,
                     refused_fields=carrier.refused_pod_fields, inline=True, relocated=relocated)


INFERENCE_CONTAINER = "kserve-container"     # KServe constants.InferenceServiceContainerName
# A core/v1 Container's fields: what of KServe's ModelSpec (a Container inline, with modelFormat,
# runtime, storageUri beside it) reaches the container.
CONTAINER_FIELDS = frozenset({
    "name", "image", "command", "args", "workingDir", "ports", "envFrom", "env", "resources", "resizePolicy",
    "restartPolicy", "restartPolicyRules", "volumeMounts", "volumeDevices", "livenessProbe", "readinessProbe",
    "startupProbe", "lifecycle", "terminationMessagePath", "terminationMessagePolicy", "imagePullPolicy",
    "securityContext", "stdin", "stdinOnce", "tty"})


def _problem(doc: dict, ref: ObjectRef, template_path: TemplatePath, path: Path, what: str) -> ShapeProblem:
    message = f"{ref.kind}: {dotted_path(path)} {what}"
    if template_path.unless:
        message += f" (it is needed unless {dotted_path(template_path.unless)} is set)"
    return ShapeProblem(existing_prefix(doc, path), message)


def _present(doc: dict, path: Path) -> bool:
    node: Any = doc
    for key in path:
        node = node.get(key) if isinstance(node, dict) else None
    return node is not None


def _merged_annotations(holders: tuple[dict, ...]) -> dict[str, str]:
    """The template's annotations over those of the objects it sits in (the workload, a Job
    template in between): a workload's suppression covers its templates, and a template's
    own annotation wins."""
    merged: dict[str, str] = {}
    for holder in holders:
        meta = holder.get("metadata")
        annotations = meta.get("annotations") if isinstance(meta, dict) else None
        if isinstance(annotations, dict):
            merged.update({str(k): str(v) for k, v in annotations.items()})
    return merged


def _str_or_none(value: Any) -> str | None:
    return value if isinstance(value, str) else (None if value is None else str(value))
