"""How many pods of one pod template a workload runs at once, for every kind numaguard judges
(`numaguard.lint.carriers.BUILTIN_CARRIERS`), from the fields its API type defines:

| kind | pods of the template |
|---|---|
| Pod, PodTemplate, kinds of the config's `podTemplates` | 1 (played once) |
| Deployment, ReplicaSet, StatefulSet, ReplicationController, Argo Rollout, CloneSet, Kruise StatefulSet, UnitedDeployment | `spec.replicas` (default 1) |
| DaemonSet, Kruise DaemonSet, BroadcastJob | one per node it selects and tolerates (`per_node`) |
| Job, CronJob (`spec.jobTemplate`), AdvancedCronJob's Job | `parallelism` (default 1), at most `completions` |
| JobSet (and a TrainingRuntime's JobSet) | per replicated job: `replicas` (default 1) x its Job's parallelism |
| LeaderWorkerSet, DisaggregatedSet role | `replicas` groups (default 1) x `size` (default 1): the leader template one per group, the worker template `size - 1` per group (`size` when there is no leader template) |
| Kubeflow PyTorchJob, TFJob, XGBoostJob, PaddleJob, JAXJob, MPIJob | the replica type's `replicas` (default 1) |
| RayCluster, RayJob, RayService, RayCronJob | head 1; a worker group `replicas` (else `minReplicas`, default 1) x `numOfHosts` (default 1); a RayJob's submitter 1 |
| Volcano Job, CronJob | the task's `replicas` (default 1) |
| Knative Service, Configuration | the template's `autoscaling.knative.dev/initial-scale`, else `min-scale`, else 1 |
| KServe InferenceService | a component's (predictor, transformer, explainer) `minReplicas` (default 1); the predictor's `workerSpec` `pipelineParallelSize - 1` workers per predictor replica (its head runs the first stage), 1 when not set |
| KServe LLMInferenceService | `spec.replicas` (default 1) for the decode template and its worker, `spec.prefill.replicas` for the prefill ones (one worker per replica: the worker count its parallelism gives is not read), the router's scheduler 1 |
| AppWrapper | each component counted as its own kind (a wrapped Deployment's `spec.replicas`, a Job's parallelism, ...) |

Defaults are the API types' (the same files `carriers.py` cites; KServe's minReplicas default 1 is
its constants.DefaultMinReplicas, and kserve/kserve@aaac4e2 servingruntime_types.go WorkerSpec:
"PipelineParallelSize ... the number of replicas in the worker set"). `scaled` replaces the
top-level count (`numaguard plan --scale NAME=N`): replicas, parallelism or groups; for kinds
whose count lives in each part (JobSet, Kubeflow, Ray, Volcano) N copies of the whole object.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from numaguard.lint.model import dotted_path

PER_NODE_KINDS = {("apps", "DaemonSet"), ("apps.kruise.io", "DaemonSet"), ("apps.kruise.io", "BroadcastJob")}
REPLICAS_KINDS = {("", "ReplicationController"), ("apps", "Deployment"), ("apps", "ReplicaSet"),
                  ("apps", "StatefulSet"), ("argoproj.io", "Rollout"), ("apps.kruise.io", "CloneSet"),
                  ("apps.kruise.io", "StatefulSet"), ("apps.kruise.io", "UnitedDeployment")}
KNATIVE_SCALE = ("autoscaling.knative.dev/initial-scale", "autoscaling.knative.dev/min-scale")


@dataclass(frozen=True)
class Count:
    pods: int
    per_node: bool = False       # one per eligible node (DaemonSet)
    source: str = ""             # where the number comes from, for the report


def _get(obj: Any, path: tuple) -> Any:
    for step in path:
        if isinstance(obj, dict):
            obj = obj.get(step)
        elif isinstance(obj, list) and isinstance(step, int) and 0 <= step < len(obj):
            obj = obj[step]
        else:
            return None
    return obj


def _int(value: Any, default: int) -> int:
    if isinstance(value, bool):
        return default
    if isinstance(value, int) and value >= 0:
        return value
    if isinstance(value, str) and value.isdigit():
        return int(value)
    return default


def _job(job_spec: Any, where: tuple) -> tuple[int, str]:
    """A Job spec's running pods: parallelism (default 1), at most completions."""
    parallelism = _int(_get(job_spec, ("parallelism",)), 1)
    completions = _get(job_spec, ("completions",))
    if isinstance(completions, int) and not isinstance(completions, bool) and completions >= 0:
        parallelism = min(parallelism, completions)
    return parallelism, f"{dotted_path(where + ('parallelism',))} {parallelism}"


def count(group: str, kind: str, obj: dict, template: tuple, *, scaled: int | None = None) -> Count:
    """The pods running at once of the template at `template` (its path in `obj`, the
    template's own path: ("spec", "template"))."""
    key = (group, kind)
    if key in PER_NODE_KINDS or (key == ("apps.kruise.io", "AdvancedCronJob") and "broadcastJobTemplate" in template):
        return Count(0, per_node=True, source="one per node")
    if key in REPLICAS_KINDS:
        n = _int(_get(obj, ("spec", "replicas")), 1)
        return _scaled(n, scaled, "spec.replicas")
    if key in (("batch", "Job"), ("batch", "CronJob"), ("apps.kruise.io", "AdvancedCronJob")):
        where = template[:-1] if template[-1:] == ("template",) else template
        n, source = _job(_get(obj, where), where)
        return Count(scaled, source=f"--scale {scaled}") if scaled is not None else Count(n, source=source)
    if kind in ("LeaderWorkerSet", "DisaggregatedSet"):
        return _leader_worker(obj, template, scaled)
    if "replicatedJobs" in template:
        return _jobset(obj, template, scaled)
    if group == "kubeflow.org" and len(template) >= 3:
        n = _int(_get(obj, template[:-1] + ("replicas",)), 1)
        return _copies(n, scaled, dotted_path(template[:-1] + ("replicas",)))
    if group == "ray.io":
        return _ray(obj, template, scaled)
    if group == "batch.volcano.sh":
        n = _int(_get(obj, template[:-1] + ("replicas",)), 1)
        return _copies(n, scaled, dotted_path(template[:-1] + ("replicas",)))
    if kind == "AppWrapper" and template[:2] == ("spec", "components") and len(template) > 4:
        return _wrapped(obj, template, scaled)
    if key == ("serving.kserve.io", "InferenceService"):
        return _inference_service(obj, template, scaled)
    if key == ("serving.kserve.io", "LLMInferenceService"):
        return _llm_inference_service(obj, template, scaled)
    if group == "serving.knative.dev":
        notes = _get(obj, template + ("metadata", "annotations")) or {}
        for name in KNATIVE_SCALE:
            if isinstance(notes, dict) and name in notes:
                return _scaled(max(_int(notes[name], 1), 1), scaled, name)
        return _scaled(1, scaled, "played once")
    return _scaled(1, scaled, "played once")


def _scaled(n: int, scaled: int | None, source: str) -> Count:
    """A kind with one top-level count: --scale N replaces it."""
    if scaled is not None:
        return Count(scaled, source=f"--scale {scaled}")
    return Count(n, source=source if source == "played once" else f"{source} {n}")


def _copies(n: int, scaled: int | None, source: str) -> Count:
    """Kinds counted per part: --scale N makes N copies of the whole object."""
    if scaled is not None:
        return Count(n * scaled, source=f"{source} {n} x --scale {scaled}")
    return Count(n, source=f"{source} {n}")


def _leader_worker(obj: dict, template: tuple, scaled: int | None) -> Count:
    lws = template[:template.index("leaderWorkerTemplate")]      # the LWS spec
    groups = scaled if scaled is not None else _int(_get(obj, lws + ("replicas",)), 1)
    size = _int(_get(obj, lws + ("leaderWorkerTemplate", "size")), 1)
    has_leader = isinstance(_get(obj, lws + ("leaderWorkerTemplate", "leaderTemplate")), dict)
    which = "groups --scale" if scaled is not None else f"{dotted_path(lws + ('replicas',))}"
    if template[-1] == "leaderTemplate":
        return Count(groups, source=f"{which} {groups}, one leader each")
    per_group = max(size - 1, 0) if has_leader else size
    return Count(groups * per_group, source=f"{which} {groups} x {per_group} workers (size {size})")


def _jobset(obj: dict, template: tuple, scaled: int | None) -> Count:
    at = template.index("replicatedJobs")
    job = template[:at + 2]                                         # spec.replicatedJobs[i]
    replicas = _int(_get(obj, job + ("replicas",)), 1)
    parallelism, source = _job(_get(obj, job + ("template", "spec")), job + ("template", "spec"))
    n = replicas * parallelism
    text = f"{dotted_path(job + ('replicas',))} {replicas} x {source}"
    return Count(n * scaled, source=f"{text} x --scale {scaled}") if scaled is not None else Count(n, source=text)


def _wrapped(obj: dict, template: tuple, scaled: int | None) -> Count:
    """An AppWrapper component: its wrapped object counted as its own kind."""
    inner = _get(obj, template[:4])
    if not isinstance(inner, dict):
        return _scaled(1, scaled, "played once")
    api = str(inner.get("apiVersion") or "")
    found = count(api.rpartition("/")[0] if "/" in api else "", str(inner.get("kind") or ""), inner, template[4:],
                  scaled=scaled)
    return Count(found.pods, found.per_node, f"{dotted_path(template[:4])}: {found.source}")


def _inference_service(obj: dict, template: tuple, scaled: int | None) -> Count:
    component = template[:2]
    replicas = _int(_get(obj, component + ("minReplicas",)), 1)
    where = f"{dotted_path(component + ('minReplicas',))} {replicas}"
    if template[2:] != ("workerSpec",):
        return _scaled(replicas, scaled, dotted_path(component + ("minReplicas",)))
    stages = _get(obj, template + ("pipelineParallelSize",))
    workers = max(_int(stages, 2) - 1, 1)
    text = (f"{where} x {workers} worker(s) (pipelineParallelSize {stages} - 1)" if stages is not None
            else f"{where} x 1 worker (pipelineParallelSize not set)")
    n = (scaled if scaled is not None else replicas) * workers
    return Count(n, source=text if scaled is None else f"--scale {scaled} x {workers} worker(s)")


def _llm_inference_service(obj: dict, template: tuple, scaled: int | None) -> Count:
    if template[:3] == ("spec", "router", "scheduler"):
        return _scaled(1, scaled, "played once")
    field = ("spec", "prefill", "replicas") if template[1:2] == ("prefill",) else ("spec", "replicas")
    return _scaled(_int(_get(obj, field), 1), scaled, dotted_path(field))


def _ray(obj: dict, template: tuple, scaled: int | None) -> Count:
    if "workerGroupSpecs" in template:
        group = template[:template.index("workerGroupSpecs") + 2]
        replicas = _get(obj, group + ("replicas",))
        n = _int(replicas if replicas is not None else _get(obj, group + ("minReplicas",)), 1)
        hosts = _int(_get(obj, group + ("numOfHosts",)), 1)
        return _copies(n * hosts, scaled, f"{dotted_path(group)} replicas x numOfHosts")
    return _copies(1, scaled, "head" if "headGroupSpec" in template else "submitter")


__all__ = ["Count", "count", "PER_NODE_KINDS"]
