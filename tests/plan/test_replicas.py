"""Replica counts of every kind numaguard judges (numaguard.lint.plan.replicas), read from the
objects as their types define them, with their defaults and --scale."""
from __future__ import annotations

import pytest
import yaml

from numaguard.lint.objects import api_group, classify
from numaguard.lint.plan.workloads import from_object

POD = {"containers": [{"name": "app", "image": "x"}]}
TEMPLATE = {"metadata": {"labels": {"app": "x"}}, "spec": POD}


def counts(doc: dict, scaled: int | None = None) -> list[tuple[str, int, str]]:
    found = classify(doc)
    templates = [(p.spec_path if p.inline else p.spec_path[:-1], p.spec, p.metadata_path) for p in found.pods]
    out = from_object(doc, api_group(found.ref.api_version), found.ref.kind, templates, scaled=scaled)
    return [(w.name, w.replicas if not w.per_node else -1, w.source) for w in out]


def test_built_in_controllers():
    assert counts({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"},
                   "spec": {"replicas": 5, "template": TEMPLATE}}) == [("Deployment default/d", 5, "spec.replicas 5")]
    assert counts({"apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": {"name": "s", "namespace": "db"},
                   "spec": {"template": TEMPLATE}}) == [("StatefulSet db/s", 1, "spec.replicas 1")]
    assert counts({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": POD}) == [
        ("Pod default/p", 1, "played once")]
    assert counts({"apiVersion": "apps/v1", "kind": "DaemonSet", "metadata": {"name": "a"},
                   "spec": {"template": TEMPLATE}}) == [("DaemonSet default/a", -1, "one per node")]
    assert counts({"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "j"},
                   "spec": {"parallelism": 8, "completions": 3, "template": TEMPLATE}}) == [
        ("Job default/j", 3, "spec.parallelism 3")]
    assert counts({"apiVersion": "batch/v1", "kind": "CronJob", "metadata": {"name": "c"},
                   "spec": {"jobTemplate": {"spec": {"parallelism": 4, "template": TEMPLATE}}}}) == [
        ("CronJob default/c", 4, "spec.jobTemplate.spec.parallelism 4")]
    assert counts({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"},
                   "spec": {"replicas": 5, "template": TEMPLATE}}, scaled=12) == [("Deployment default/d", 12, "--scale 12")]


def test_leader_worker_sets():
    lws = {"apiVersion": "leaderworkerset.x-k8s.io/v1", "kind": "LeaderWorkerSet", "metadata": {"name": "vllm"},
           "spec": {"replicas": 3, "leaderWorkerTemplate": {"size": 4, "leaderTemplate": TEMPLATE,
                                                            "workerTemplate": TEMPLATE}}}
    assert counts(lws) == [
        ("LeaderWorkerSet default/vllm spec.leaderWorkerTemplate.leaderTemplate", 3,
         "spec.replicas 3, one leader each"),
        ("LeaderWorkerSet default/vllm spec.leaderWorkerTemplate.workerTemplate", 9,
         "spec.replicas 3 x 3 workers (size 4)")]
    no_leader = {**lws, "spec": {"replicas": 2, "leaderWorkerTemplate": {"size": 4, "workerTemplate": TEMPLATE}}}
    assert counts(no_leader) == [("LeaderWorkerSet default/vllm", 8, "spec.replicas 2 x 4 workers (size 4)")]
    assert counts(no_leader, scaled=5)[0][1] == 20


def test_jobsets_multiply_replicas_by_parallelism():
    jobset = yaml.safe_load("""
apiVersion: jobset.x-k8s.io/v1alpha2
kind: JobSet
metadata: {name: train}
spec:
  replicatedJobs:
  - name: driver
    template: {spec: {template: {spec: {containers: [{name: d, image: x}]}}}}
  - name: workers
    replicas: 4
    template: {spec: {parallelism: 2, completions: 2, template: {spec: {containers: [{name: w, image: x}]}}}}
""")
    assert [(n.rsplit(" ", 1)[1], r) for n, r, _ in counts(jobset)] == [
        ("spec.replicatedJobs[0].template.spec.template", 1), ("spec.replicatedJobs[1].template.spec.template", 8)]
    assert [r for _, r, _ in counts(jobset, scaled=2)] == [2, 16]


@pytest.mark.parametrize("doc, expected", [
    ({"apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob", "metadata": {"name": "p"},
      "spec": {"pytorchReplicaSpecs": {"Master": {"replicas": 1, "template": TEMPLATE},
                                       "Worker": {"replicas": 6, "template": TEMPLATE}}}}, [1, 6]),
    ({"apiVersion": "ray.io/v1", "kind": "RayCluster", "metadata": {"name": "r"},
      "spec": {"headGroupSpec": {"template": TEMPLATE},
               "workerGroupSpecs": [{"minReplicas": 2, "numOfHosts": 4, "template": TEMPLATE}]}}, [1, 8]),
    ({"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job", "metadata": {"name": "v"},
      "spec": {"tasks": [{"replicas": 3, "template": TEMPLATE}]}}, [3]),
    ({"apiVersion": "serving.knative.dev/v1", "kind": "Service", "metadata": {"name": "k"},
      "spec": {"template": {"metadata": {"annotations": {"autoscaling.knative.dev/min-scale": "4"}},
                            "spec": POD}}}, [4]),
    ({"apiVersion": "apps.kruise.io/v1alpha1", "kind": "CloneSet", "metadata": {"name": "c"},
      "spec": {"replicas": 7, "template": TEMPLATE}}, [7]),
    ({"apiVersion": "argoproj.io/v1alpha1", "kind": "Rollout", "metadata": {"name": "r"},
      "spec": {"template": TEMPLATE}}, [1]),
])
def test_custom_resources(doc, expected):
    assert [r for _, r, _ in counts(doc)] == expected


def test_rollout_fences_are_read_as_written():
    doc = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"},
           "spec": {"replicas": 4, "strategy": {"rollingUpdate": {"maxSurge": "50%", "maxUnavailable": 0}},
                    "template": TEMPLATE}}
    (w,) = from_object(doc, "apps", "Deployment", [(("spec", "template"), POD, ("spec", "template", "metadata"))])
    assert w.rollout == ("50%", 0)
    (s,) = from_object({**doc, "kind": "StatefulSet", "spec": {"template": TEMPLATE}}, "apps", "StatefulSet",
                       [(("spec", "template"), POD, ("spec", "template", "metadata"))])
    assert s.rollout == (None, None)


def test_kserve_and_appwrapper():
    isvc = yaml.safe_load("""
apiVersion: serving.kserve.io/v1beta1
kind: InferenceService
metadata: {name: llm, annotations: {serving.kserve.io/deploymentMode: RawDeployment}}
spec:
  predictor:
    minReplicas: 2
    labels: {app: llm}
    model: {modelFormat: {name: vLLM}, resources: {requests: {cpu: "4"}}}
    workerSpec:
      pipelineParallelSize: 3
      containers: [{name: worker-container, image: x}]
  transformer:
    containers: [{name: t, image: x}]
""")
    assert counts(isvc) == [
        ("InferenceService default/llm spec.predictor", 2, "spec.predictor.minReplicas 2"),
        ("InferenceService default/llm spec.predictor.workerSpec", 4,
         "spec.predictor.minReplicas 2 x 2 worker(s) (pipelineParallelSize 3 - 1)"),
        ("InferenceService default/llm spec.transformer", 1, "spec.transformer.minReplicas 1")]
    found = classify(isvc)
    (first, *_rest) = from_object(isvc, "serving.kserve.io", "InferenceService",
                                  [(p.spec_path if p.inline else p.spec_path[:-1], p.spec, p.metadata_path)
                                   for p in found.pods])
    assert first.shape.labels == {"app": "llm"}
    llm = yaml.safe_load("""
apiVersion: serving.kserve.io/v1alpha2
kind: LLMInferenceService
metadata: {name: l}
spec:
  replicas: 3
  template: {containers: [{name: main, image: x}]}
  worker: {containers: [{name: w, image: x}]}
  prefill: {replicas: 2, template: {containers: [{name: p, image: x}]}}
""")
    assert [(n.rsplit(" ", 1)[1], r) for n, r, _ in counts(llm)] == [
        ("spec.template", 3), ("spec.worker", 3), ("spec.prefill.template", 2)]
    wrapper = yaml.safe_load("""
apiVersion: workload.codeflare.dev/v1beta2
kind: AppWrapper
metadata: {name: aw}
spec:
  components:
  - template:
      apiVersion: apps/v1
      kind: Deployment
      metadata: {name: inner}
      spec: {replicas: 3, template: {spec: {containers: [{name: c, image: x}]}}}
  - template:
      apiVersion: batch/v1
      kind: Job
      metadata: {name: j}
      spec: {parallelism: 2, template: {spec: {containers: [{name: c, image: x}]}}}
""")
    assert [(r, src) for _, r, src in counts(wrapper)] == [
        (3, "spec.components[0].template: spec.replicas 3"),
        (2, "spec.components[1].template: spec.parallelism 2")]
