"""KServe: how a predictor's pod is assembled from its InferenceService and its ServingRuntime,
and an LLMInferenceService's from the LLMInferenceServiceConfigs it names.

kserve/kserve at aaac4e294dae:

* `pkg/controller/v1beta1/inferenceservice/components/predictor.go` `buildPodSpec` (a `model`
  predictor): the runtime is the ServingRuntime of `model.runtime` in the InferenceService's
  namespace, else the ClusterServingRuntime of that name (`utils.GetServingRuntime`); without a
  name, the supporting runtimes with `autoSelect` (`GetSupportingRuntimes`). The runtime's
  `kserve-container` is merged with the model's container (`utils.MergeRuntimeContainers`: a
  strategic merge patch of the InferenceService's container over the runtime's, `args`
  concatenated), then the runtime's pod fields with the predictor's pod spec over them
  (`MergePodSpec`: nodeSelector, affinity, tolerations, volumes, imagePullSecrets,
  schedulerName, resourceClaims of the runtime, strategic-merged), then the runtime's other
  containers and the predictor's own are appended.
* `pkg/controller/v1alpha2/llmisvc/config_merge.go` `MergeSpecs`: the configs of `baseRefs`, in
  order, then the service's own spec, each strategic-merged over the last.

A strategic merge patch (k8s.io/apimachinery strategicpatch) merges maps key by key and the
lists a type marks `patchStrategy: merge` by their key: a PodSpec's containers,
initContainers, ephemeralContainers, volumes and imagePullSecrets by `name`; a Container's env
by `name`, ports by `containerPort`, volumeMounts by `mountPath`; any other list replaces
(k8s.io/api core/v1 types.go `patchMergeKey` tags).
"""
from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any

from numaguard.lint.k8s.platforms import plain_copy as _plain
from numaguard.lint.model import Path, items

MODEL_CONTAINER = "kserve-container"      # constants.InferenceServiceContainerName
TRANSFORMER_CONTAINER = "transformer-container"
RUNTIME_POD_FIELDS = ("nodeSelector", "affinity", "tolerations", "volumes", "imagePullSecrets", "schedulerName",
                      "resourceClaims")
_MERGE_KEYS: dict[str, str] = {"containers": "name", "initContainers": "name", "ephemeralContainers": "name",
                               "volumes": "name", "imagePullSecrets": "name", "env": "name",
                               "ports": "containerPort", "volumeMounts": "mountPath"}


def strategic_merge(base: Any, patch: Any, field: str = "") -> Any:
    """`patch` over `base` as a strategic merge patch of core/v1 types merges them (module doc);
    null deletes a key."""
    if isinstance(base, dict) and isinstance(patch, dict):
        out = copy.deepcopy(base)
        for key, value in patch.items():
            if value is None:
                out.pop(key, None)
            else:
                out[key] = strategic_merge(out.get(key), value, str(key))
        return out
    key = _MERGE_KEYS.get(field)
    if key and isinstance(base, list) and isinstance(patch, list):
        out = [copy.deepcopy(item) for item in base]
        for item in patch:
            at = next((i for i, old in enumerate(out) if isinstance(old, dict) and isinstance(item, dict)
                       and key in item and old.get(key) == item.get(key)), None)
            if at is None:
                out.append(copy.deepcopy(item))
            else:
                out[at] = strategic_merge(out[at], item)
        return out
    return copy.deepcopy(patch)


def merge_runtime_container(runtime: dict, isvc: dict) -> dict:
    """MergeRuntimeContainers: the InferenceService's container over the runtime's, args joined."""
    merged = strategic_merge(runtime, {k: v for k, v in isvc.items() if k != "args"})
    args = [*items(runtime.get("args")), *items(isvc.get("args"))]
    if args:
        merged["args"] = args
    return merged


@dataclass(frozen=True)
class Runtime:
    """A ServingRuntime (namespaced) or ClusterServingRuntime as the run holds it: what
    buildPodSpec reads of it, and where it is written (for findings about its parts)."""

    kind: str
    name: str
    where: str
    spec: dict

    def supports(self, model_format: str) -> bool:
        formats = self.spec.get("supportedModelFormats") or []
        return any(isinstance(f, dict) and str(f.get("name", "")).lower() == model_format.lower()
                   and f.get("autoSelect") is True for f in formats)


def _where(source: str | None, line: int | None) -> str:
    return f"{source or '<input>'}:{line}" if line else (source or "<input>")


def runtime_extract(doc: dict, source: str | None, line: int | None) -> list:
    meta = doc.get("metadata") if isinstance(doc.get("metadata"), dict) else {}
    spec = doc.get("spec")
    if not isinstance(spec, dict) or not isinstance(meta.get("name"), str):
        return []
    namespace = None if doc.get("kind") == "ClusterServingRuntime" else meta.get("namespace")
    return [("runtimes", (namespace, meta["name"]),
             Runtime(str(doc.get("kind")), meta["name"], _where(source, line), _plain(spec)))]


@dataclass(frozen=True)
class LLMConfig:
    """An LLMInferenceServiceConfig: its spec and where it is written."""

    name: str
    where: str
    spec: dict


def llm_config_extract(doc: dict, source: str | None, line: int | None) -> list:
    meta = doc.get("metadata") if isinstance(doc.get("metadata"), dict) else {}
    spec = doc.get("spec")
    if not isinstance(spec, dict) or not isinstance(meta.get("name"), str):
        return []
    return [("llm-configs", (meta.get("namespace"), meta["name"]), LLMConfig(meta["name"], _where(source, line),
                                                                           _plain(spec)))]


def find_runtime(references: Any, namespace: Any, name: str | None, model_format: str | None) -> Runtime | None:
    """The runtime a predictor runs on, when the run holds it: by name (the namespace's
    ServingRuntime first, then the ClusterServingRuntime), else the one runtime of the run that
    auto-selects the model's format (several: KServe's priority decides, so none is guessed)."""
    if references is None:
        return None
    if name:
        found = references.get("runtimes", (namespace, name)) or references.get("runtimes", (None, name))
        return found[0] if len(found) == 1 else None
    if not model_format:
        return None
    candidates = [r for (ns, _), runtimes in references.tables.get("runtimes", {}).items()
                  if ns in (namespace, None) for r in runtimes
                  if r.supports(model_format) and r.spec.get("disabled") is not True]
    return candidates[0] if len(candidates) == 1 else None


def predictor_with_runtime(predictor: dict, model_field: str, runtime: Runtime) -> tuple[dict, list[tuple[Path, str]]]:
    """(the predictor's pod spec as buildPodSpec assembles it over `runtime`, the parts of it
    that are the runtime's: (path in the pod spec, the runtime's field))."""
    containers = [c for c in items(runtime.spec.get("containers")) if isinstance(c, dict)]
    model = predictor.get(model_field) if isinstance(predictor.get(model_field), dict) else {}
    base = next((c for c in containers if c.get("name") == MODEL_CONTAINER), {})
    merged = merge_runtime_container(base, {k: v for k, v in model.items() if k != "name"})
    merged["name"] = MODEL_CONTAINER
    from_runtime: list[tuple[Path, str]] = [(("containers", 0, key), f"containers.{MODEL_CONTAINER}.{key}")
                                            for key in merged if key not in model]
    pod_fields = {k: runtime.spec[k] for k in RUNTIME_POD_FIELDS if runtime.spec.get(k) is not None}
    own = {k: v for k, v in predictor.items() if k != model_field}
    spec = strategic_merge(pod_fields, {k: v for k, v in own.items() if k != "containers"})
    from_runtime += [((k,), k) for k in pod_fields if k not in own]
    own_containers = [c for c in items(own.get("containers")) if isinstance(c, dict)]
    others = [c for c in containers if c.get("name") not in (MODEL_CONTAINER, TRANSFORMER_CONTAINER)]
    spec["containers"] = [merged, *others, *own_containers]
    from_runtime += [(("containers", 1 + i), f"containers.{c.get('name')}") for i, c in enumerate(others)]
    return spec, from_runtime


def merged_llm_spec(configs: list[LLMConfig], spec: dict) -> dict:
    """MergeSpecs: each config's spec, then the service's own, strategic-merged in order."""
    merged: dict = {}
    for config in configs:
        merged = strategic_merge(merged, config.spec)
    return strategic_merge(merged, _plain(spec))


__all__ = ["strategic_merge", "merge_runtime_container", "Runtime", "LLMConfig", "runtime_extract",
           "llm_config_extract", "find_runtime", "predictor_with_runtime", "merged_llm_spec", "MODEL_CONTAINER"]
