"""Pod templates that other objects of the run complete, and those an object finds by a path it
holds itself (`PodCarrier.builder`, called by `numaguard.lint.objects.classify`).

* KServe InferenceService: a `model` predictor's pod is assembled over its ServingRuntime or
  ClusterServingRuntime when the run holds it (`numaguard.lint.k8s.kserve`); findings about
  the runtime's parts point at `model.runtime` (or `model`) and name the runtime.
* KServe LLMInferenceService: its pod specs over the LLMInferenceServiceConfigs of `baseRefs`.
* AppWrapper: a component of a kind AppWrapper does not infer pod sets for is read at its
  declared `podSets[*].path` (`template.spec...`, with `[N]` indexes: appwrapper
  pkg/utils/utils.go `getValueAtPath`).

Each builder takes (document, its ObjectRef, the carrier, the templates found at the carrier's
paths, the run's references) and gives (templates, [(path, message)] of what is misshapen).
"""
from __future__ import annotations

import re
from dataclasses import replace
from typing import Any

from numaguard.lint.carriers import KSERVE_MODEL_FIELDS, Guard, PodCarrier
from numaguard.lint.k8s.kserve import find_runtime, merged_llm_spec, predictor_with_runtime
from numaguard.lint.model import ObjectRef, Path, items, value_at
from numaguard.lint.objects import PodTarget, Relocated, api_group

_PREDICTOR: Path = ("spec", "predictor")


def inference_service_pods(doc: dict, ref: ObjectRef, carrier: PodCarrier, pods: list[PodTarget],
                           references: Any) -> tuple[list[PodTarget], list]:
    """The predictor's pod over its runtime, when the run holds that runtime."""
    out = []
    for pod in pods:
        if pod.spec_path[-2:] != _PREDICTOR:
            out.append(pod)
            continue
        predictor = value_at(doc, pod.spec_path)
        model_field = next((f for f in KSERVE_MODEL_FIELDS if isinstance(predictor.get(f), dict)), None)
        model = predictor.get(model_field) if model_field == "model" else None
        if not isinstance(model, dict):
            out.append(pod)
            continue
        fmt = model.get("modelFormat") if isinstance(model.get("modelFormat"), dict) else {}
        runtime = find_runtime(references, ref.namespace, model.get("runtime") if isinstance(model.get("runtime"), str)
                               else None, str(fmt.get("name")) if fmt.get("name") else None)
        if runtime is None:
            out.append(pod)
            continue
        spec, from_runtime = predictor_with_runtime(predictor, model_field, runtime)
        at = pod.spec_path + (model_field,) + (("runtime",) if "runtime" in model else ())
        note = f"from {runtime.kind} {runtime.name} ({runtime.where})"
        own = [c for c in items(predictor.get("containers")) if isinstance(c, dict)]
        first_own = len(spec["containers"]) - len(own)
        relocated = [Relocated(("containers", 0), pod.spec_path + (model_field,)),
                     *(Relocated(("containers", first_own + i), pod.spec_path + ("containers", i))
                       for i in range(len(own))),
                     *(Relocated(part, at, exact=False, note=f"{note}: {field}") for part, field in from_runtime)]
        out.append(replace(pod, spec=spec, relocated=tuple(relocated)))
    return out, []


def llm_inference_service_pods(doc: dict, ref: ObjectRef, carrier: PodCarrier, pods: list[PodTarget],
                               references: Any) -> tuple[list[PodTarget], list]:
    """The pod specs over the LLMInferenceServiceConfigs of `baseRefs` the run holds (all of
    them: with one missing the merge is not known, and the service's own specs are judged)."""
    spec = doc.get("spec") if isinstance(doc.get("spec"), dict) else {}
    names = [r.get("name") for r in items(spec.get("baseRefs")) if isinstance(r, dict)]
    if not names or references is None:
        return pods, []
    configs = [references.get("llm-configs", (ref.namespace, n)) for n in names]
    if any(len(found) != 1 for found in configs):
        return pods, []
    merged = merged_llm_spec([found[0] for found in configs], spec)
    from numaguard.lint.objects import pod_templates

    view = {**doc, "spec": merged}
    out = []
    for template_path in carrier.paths:
        found, _ = pod_templates(view, ref, carrier, template_path)
        for pod in found:
            note = f"from LLMInferenceServiceConfig {', '.join(c[0].name for c in configs)}"
            relocated = _written_or_config(pod.spec, value_at(doc, pod.spec_path), pod.spec_path, note)
            out.append(replace(pod, relocated=tuple(relocated)))
    return out, []


def _written_or_config(merged: dict, written: Any, at: Path, note: str) -> list[Relocated]:
    """Where each part of a merged pod spec is written: the service's own field (to the
    container and key, containers matched by name as the merge matches them), else a config
    of `baseRefs`."""
    written = written if isinstance(written, dict) else {}
    out: list[Relocated] = []
    for key, value in merged.items():
        if key in ("containers", "initContainers") and isinstance(value, list):
            own = written.get(key) if isinstance(written.get(key), list) else []
            for i, container in enumerate(value):
                j = next((j for j, c in enumerate(own) if isinstance(c, dict) and isinstance(container, dict)
                          and c.get("name") == container.get("name")), None)
                for field in container if isinstance(container, dict) else ():
                    if j is not None and field in own[j]:
                        out.append(Relocated((key, i, field), at + (key, j, field)))
                    else:
                        out.append(Relocated((key, i, field), ("spec", "baseRefs"), exact=False, note=note))
        elif key in written:
            out.append(Relocated((key,), at + (key,)))
        else:
            out.append(Relocated((key,), ("spec", "baseRefs"), exact=False, note=note))
    return out


_INDEX = re.compile(r"\[(\d+)\]")


def appwrapper_declared(doc: dict, ref: ObjectRef, carrier: PodCarrier, pods: list[PodTarget],
                        references: Any) -> tuple[list[PodTarget], list]:
    """Components of kinds AppWrapper infers no pod sets for, at their declared paths."""
    inferred = set(_guarded(carrier))
    spec = doc.get("spec") if isinstance(doc.get("spec"), dict) else {}
    problems = []
    out = list(pods)
    for i, component in enumerate(items(spec.get("components"))):
        if not isinstance(component, dict) or not isinstance(component.get("template"), dict):
            continue
        template = component["template"]
        if (api_group(template.get("apiVersion")), template.get("kind")) in inferred:
            continue
        for j, pod_set in enumerate(items(component.get("podSets"))):
            text = pod_set.get("path") if isinstance(pod_set, dict) else None
            where: Path = ("spec", "components", i, "podSets", j, "path")
            path = _declared_path(text)
            if path is None:
                problems.append((where, f"AppWrapper: podSets[{j}].path {text!r} is not a path AppWrapper reads "
                                        f"(it starts with template, then .field or [N] steps)"))
                continue
            target = value_at(component, path)
            if not isinstance(target, dict) or not isinstance(target.get("spec"), dict):
                problems.append((where, f"AppWrapper: {text} does not refer to a v1.PodTemplateSpec"))
                continue
            base = ("spec", "components", i) + path
            holders = (doc, template, target)
            annotations = {}
            for holder in holders:
                meta = holder.get("metadata") if isinstance(holder.get("metadata"), dict) else {}
                if isinstance(meta.get("annotations"), dict):
                    annotations.update({str(k): str(v) for k, v in meta["annotations"].items()})
            out.append(PodTarget(ref=ref, spec=target["spec"], spec_path=base + ("spec",), annotations=annotations,
                                 metadata_path=base + ("metadata",)))
    return out, problems


def _guarded(carrier: PodCarrier):
    """(group, kind) of the objects the carrier's own paths read (its Guard steps)."""
    for path in carrier.paths:
        for step in path.steps:
            if isinstance(step, Guard):
                yield step.group, step.kind


def _declared_path(text: Any) -> Path | None:
    """An AppWrapper pod set path (`template.spec.replicatedJobs[0].template.spec.template`)."""
    if not isinstance(text, str) or not (text == "template" or text.startswith(("template.", "template["))):
        return None
    out: list[Any] = []
    for part in text.split("."):
        name, _, rest = part.partition("[")
        if not name or not re.fullmatch(r"[A-Za-z0-9_-]+", name):
            return None
        out.append(name)
        rest = "[" + rest if rest else ""
        indexes = _INDEX.findall(rest)
        if "".join(f"[{i}]" for i in indexes) != rest:
            return None
        out += [int(i) for i in indexes]
    return tuple(out)


__all__ = ["inference_service_pods", "llm_inference_service_pods", "appwrapper_declared"]
