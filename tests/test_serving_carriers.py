"""Pod templates of serving and batch platforms (lint/carriers.py, lint/workloads.py,
lint/k8s/kserve.py): KServe InferenceServices (the model container placed first, the runtime
merged in as KServe merges it, Knative and ModelMesh modes), LLMInferenceServices over their
configs, AppWrapper components; and the webhook's rules for them. Real files under
tests/fixtures/crds/kserve and appwrapper (ORIGIN.md)."""
from __future__ import annotations

import pytest

from numaguard.lint.carriers import BUILTIN_CARRIERS
from numaguard.lint.config import config_from_dict
from numaguard.lint.engine import lint_documents
from numaguard.lint.k8s.kserve import merge_runtime_container, strategic_merge
from numaguard.lint.load.documents import load_paths, load_text
from numaguard.lint.objects import classify
from numaguard.webhook.manifests import webhook_rules

from conftest import FIXTURES, finding_rows

CRDS = FIXTURES / "crds"
POOL = {"pool": {"nodeLabels": {"node.example.com/pool": "numa"}}}


def _lint(*texts: str, settings: dict | None = None):
    documents = []
    for i, text in enumerate(texts):
        documents += load_text(text, f"f{i}.yaml")[0]
    result = lint_documents(documents, config=config_from_dict(settings or {}))
    return finding_rows(result), result


def _lint_files(*names: str, settings: dict | None = None):
    docs = []
    for _source, documents, _errors in load_paths([str(CRDS / n) for n in names]):
        docs += documents
    result = lint_documents(docs, config=config_from_dict(settings or {}))
    return finding_rows(result), result


def _paths(path):
    (_, documents, _), = load_paths([str(CRDS / path)])
    return [[(p.template_path, p.inline) for p in classify(d.data).pods] for d in documents]


# -- where the templates are -------------------------------------------------------------------

@pytest.mark.parametrize("name, templates", [
    ("kserve/art.yaml", [[("spec.predictor", True), ("spec.explainer", True)]]),
    ("kserve/collocation.yaml", [[("spec.predictor", True)]]),
    ("kserve/driver_transformer_modelmesh.yaml", [[]]),          # ModelMesh: ModelMesh's pods
    ("kserve/inference_default.yaml", [[("spec.template", True)]]),
    ("kserve/llmisvc_config_default.yaml", [[]]),                # merged into services, no pod of its own
    ("kserve/kserve-sklearnserver.yaml", [[]]),                  # merged into predictors
    ("appwrapper/wrapped-pod.yaml", [[("spec.components[0].template", False)]]),
    ("appwrapper/wrapped-deployment.yaml", [[("spec.components[0].template.spec.template", False)]]),
    ("appwrapper/wrapped-pytorch-job.yaml", [[("spec.components[0].template.spec.pytorchReplicaSpecs.Master.template", False),
                                              ("spec.components[0].template.spec.pytorchReplicaSpecs.Worker.template", False)]]),
    ("appwrapper/wrapped-leader-worker-set.yaml", [[
        ("spec.components[0].template.spec.leaderWorkerTemplate.leaderTemplate", False),
        ("spec.components[0].template.spec.leaderWorkerTemplate.workerTemplate", False)]]),
])
def test_the_templates_of_each_kind_are_found_where_its_types_keep_them(name, templates):
    assert _paths(name) == templates


def test_the_model_container_is_placed_first_and_findings_point_at_the_model():
    found, result = _lint_files("kserve/bert_gpu.bad-model-over-pod-budget.yaml")
    assert found == [("NG110", "info", 10, 7, "spec.predictor.resources"),
                     ("NG105", "error", 10, 23, "spec.predictor.resources.requests.cpu"),
                     ("NG106", "error", 19, 16, "spec.predictor.pytorch.resources.limits.cpu")]
    assert result.findings[2].container == "kserve-container"
    [(_, [doc], _)] = list(load_paths([str(CRDS / "kserve/bert_gpu.bad-model-over-pod-budget.yaml")]))
    [predictor] = classify(doc.data).pods
    assert [c["name"] for c in predictor.spec["containers"]] == ["kserve-container"]
    assert "storageUri" not in predictor.spec["containers"][0]       # not a Container field


def test_knative_mode_refuses_pod_level_resources_and_standard_mode_does_not():
    found, result = _lint_files("kserve/bert_gpu.bad-knative-pod-resources.yaml")
    assert found == [("NG002", "error", 10, 7, "spec.predictor.resources")]
    assert "in Knative mode (serving.kserve.io/deploymentMode: Knative or Serverless)" in result.findings[0].message
    text = (CRDS / "kserve/bert_gpu.bad-knative-pod-resources.yaml").read_text().replace("Serverless", "Standard")
    assert [f[0] for f in _lint(text)[0]] == ["NG110"]


RUNTIME = """\
apiVersion: serving.kserve.io/v1alpha1
kind: ServingRuntime
metadata: {name: hf, namespace: ml}
spec:
  supportedModelFormats: [{name: huggingface, autoSelect: true}]
  nodeSelector: {node.example.com/pool: numa}
  containers:
  - name: kserve-container
    image: kserve/huggingfaceserver
    resources:
      requests: {cpu: "1", memory: 2Gi}
      limits: {cpu: "1", memory: 2Gi}
  - name: sidecar
    image: busybox
"""
ISVC = """\
apiVersion: serving.kserve.io/v1beta1
kind: InferenceService
metadata:
  name: llama
  namespace: ml
  annotations: {serving.kserve.io/deploymentMode: RawDeployment}
spec:
  predictor:
    resources:
      requests: {cpu: "8", memory: 32Gi}
      limits: {cpu: "8", memory: 32Gi}
    model:
      modelFormat: {name: huggingface}
      runtime: hf
      resources:
        limits: {cpu: "4", memory: 16Gi}
"""


def test_the_runtime_is_merged_in_as_kserve_merges_it():
    [pod] = classify(load_text(ISVC, "i.yaml")[0][0].data).pods
    # alone: the model container only, and no pool targeting
    assert ([c["name"] for c in pod.spec["containers"]], pod.spec.get("nodeSelector")) == (["kserve-container"], None)
    found, result = _lint(ISVC, RUNTIME, settings=POOL)
    # with its runtime: the runtime's nodeSelector puts the pod in the pool (errors, not
    # warnings), the model's limits over the runtime's requests leave the kserve-container
    # Burstable in the pod's shared pool, and the runtime's sidecar joins the pod
    assert [(f.rule, f.severity.value) for f in result.findings] == [("NG110", "info")]
    assert result.findings[0].message.endswith(
        "Shared: container 'kserve-container' (its cpu request (1) differs from its limit (4)); container 'sidecar' "
        "(it declares no cpu or memory requests/limits).")


def test_findings_about_the_runtimes_parts_point_at_the_runtime_reference_and_name_it():
    runtime = RUNTIME.replace("  - name: sidecar\n    image: busybox\n",
                              "  - name: sidecar\n    image: busybox\n    resources: {limits: {cpu: 9}}\n")
    found, result = _lint(ISVC, runtime, settings=POOL)
    [ng106] = [f for f in result.findings if f.rule == "NG106"]
    assert (ng106.file, ng106.line, ng106.path, ng106.container) == ("f0.yaml", 14, "spec.predictor.model.runtime", "sidecar")
    assert ng106.message.endswith("[from ServingRuntime hf (f1.yaml:1): containers.sidecar]")


def test_a_cluster_runtime_serves_when_the_namespace_has_none_and_auto_selection_needs_one_candidate():
    cluster = RUNTIME.replace("kind: ServingRuntime", "kind: ClusterServingRuntime").replace(", namespace: ml", "")
    assert [f.rule for f in _lint(ISVC, cluster, settings=POOL)[1].findings] == ["NG110"]
    unnamed = ISVC.replace("      runtime: hf\n", "")
    other = RUNTIME.replace("name: hf,", "name: hf2,")
    [pod] = classify(load_text(unnamed, "i.yaml")[0][0].data).pods
    assert [f.rule for f in _lint(unnamed, RUNTIME, settings=POOL)[1].findings] == ["NG110"]      # the one candidate
    # two candidates: KServe's priority decides, so none is guessed; the pod is judged as written
    assert _lint(unnamed, RUNTIME, other, settings=POOL)[1].findings == []


def test_strategic_merge_keeps_the_runtimes_keys_and_joins_args():
    runtime = {"name": "kserve-container", "args": ["--a"], "env": [{"name": "X", "value": "1"}],
               "resources": {"requests": {"cpu": "1", "memory": "2Gi"}}}
    isvc = {"args": ["--b"], "env": [{"name": "X", "value": "2"}, {"name": "Y", "value": "3"}],
            "resources": {"requests": {"cpu": "4"}, "limits": {"cpu": "4"}}}
    assert merge_runtime_container(runtime, isvc) == {
        "name": "kserve-container", "args": ["--a", "--b"],
        "env": [{"name": "X", "value": "2"}, {"name": "Y", "value": "3"}],
        "resources": {"requests": {"cpu": "4", "memory": "2Gi"}, "limits": {"cpu": "4"}}}
    assert strategic_merge({"tolerations": [{"key": "a"}]}, {"tolerations": [{"key": "b"}]}) == {"tolerations": [{"key": "b"}]}


def test_an_llm_inference_service_over_its_config():
    config = (CRDS / "kserve/llmisvc_config_default.yaml").read_text()
    service = (CRDS / "kserve/inference_default.yaml").read_text()
    [pod] = classify(load_text(service, "s.yaml")[0][0].data).pods
    assert pod.spec["containers"][0].get("image") is None        # alone: the service's own template
    documents = load_text(service, "s.yaml")[0] + load_text(config, "c.yaml")[0]
    from numaguard.lint.references import RunReferences
    references = RunReferences()
    for doc in documents:
        references.collect(doc.data, doc.source, doc.line, doc.index)
    merged, scheduler = classify(documents[0].data, BUILTIN_CARRIERS, references).pods
    # the config also gives the router's scheduler its pod: a template of its own
    assert (merged.template_path, scheduler.template_path) == ("spec.template", "spec.router.scheduler.template")
    main = merged.spec["containers"][0]
    assert (main["image"], main["resources"]["limits"]["cpu"]) == ("ghcr.io/llm-d/llm-d-cuda:v0.9.0", "8")
    assert merged.document_path(("containers", 0, "image")) == (("spec", "baseRefs"), (
        "from LLMInferenceServiceConfig llmisvc-intelligent-inference-scheduling"))


def test_an_appwrapper_component_of_another_kind_is_read_at_its_declared_pod_sets():
    text = """\
apiVersion: workload.codeflare.dev/v1beta2
kind: AppWrapper
metadata: {name: aw}
spec:
  components:
  - podSets:
    - path: template.spec.workers[1].template
    - path: template.spec.nowhere
    - path: spec.bad
    template:
      apiVersion: example.com/v1
      kind: Trainer
      metadata: {name: t}
      spec:
        workers:
        - template: {spec: {containers: [{name: a}]}}
        - template:
            spec:
              resources: {requests: {cpu: "1"}, limits: {cpu: "2"}}
              containers: [{name: b}]
"""
    found, result = _lint(text)
    assert found == [("NG002", "error", 8, 13, "spec.components[0].podSets[1].path"),
                     ("NG002", "error", 9, 13, "spec.components[0].podSets[2].path"),
                     ("NG103", "warning", 19, 43, "spec.components[0].template.spec.workers[1].template.spec.resources"
                                                  ".requests.cpu")]
    assert [f.message for f in result.findings[:2]] == [
        "AppWrapper: template.spec.nowhere does not refer to a v1.PodTemplateSpec",
        "AppWrapper: podSets[2].path 'spec.bad' is not a path AppWrapper reads (it starts with template, then "
        ".field or [N] steps)"]


@pytest.mark.parametrize("components", ["1.5", '"abc"', "{podSets: 1}", "[{podSets: 2.5, template: {kind: X}}]"])
def test_an_appwrapper_whose_lists_are_not_lists_is_judged_without_a_crash(components):
    """The fuzzed webhook found `components: 1.5` raising TypeError in the declared pod sets."""
    found, _result = _lint(f"apiVersion: workload.codeflare.dev/v1beta2\nkind: AppWrapper\nmetadata: {{name: aw}}\n"
                           f"spec:\n  components: {components}\n")
    assert all(rule == "NG002" for rule, *_rest in found), found


# -- the webhook ---------------------------------------------------------------------------------

def test_the_webhook_is_sent_the_new_kinds_by_their_crds_resources():
    rules = {(r["apiGroups"][0], res): r["apiVersions"] for r in webhook_rules(BUILTIN_CARRIERS) for res in r["resources"]}
    assert rules[("serving.kserve.io", "inferenceservices")] == ["v1beta1"]
    assert rules[("serving.kserve.io", "llminferenceservices")] == ["v1alpha1", "v1alpha2"]
    assert rules[("workload.codeflare.dev", "appwrappers")] == ["v1beta2"]
    assert ("serving.kserve.io", "servingruntimes") not in rules


def test_the_webhooks_judged_view_keeps_what_the_carriers_read():
    from numaguard.webhook.cache import judged_view

    isvc = load_text((CRDS / "kserve/bert_gpu.bad-knative-pod-resources.yaml").read_text(), "i.yaml")[0][0].data
    isvc["metadata"]["annotations"]["other.example.com/x"] = "y"
    view = judged_view(isvc, BUILTIN_CARRIERS)
    assert view["metadata"] == {"annotations": {"serving.kserve.io/deploymentMode": "Serverless"}}
    assert [f.rule for f in lint_documents([view]).findings] == [f.rule for f in lint_documents([isvc]).findings] == [
        "NG002"]
    wrapper = load_text((CRDS / "appwrapper/wrapped-deployment.yaml").read_text(), "a.yaml")[0][0].data
    component = judged_view(wrapper, BUILTIN_CARRIERS)["spec"]["components"][0]["template"]
    assert (component["kind"], component["metadata"]) == ("Deployment", {})


def test_an_inline_pod_takes_the_objects_annotations_and_its_components_over_them():
    text = (CRDS / "kserve/bert_gpu.bad-model-over-pod-budget.yaml").read_text()
    ignored = text.replace("    serving.kserve.io/deploymentMode: RawDeployment\n",
                           "    serving.kserve.io/deploymentMode: RawDeployment\n    numaguard.io/ignore: NG105,NG110\n"
                           "    numaguard.io/scope: managed\n")
    found, result = _lint(ignored)
    assert [(f.rule, f.suppressed) for f in result.findings] == [("NG110", True), ("NG105", True), ("NG106", False)]
    # the predictor's own `annotations` win over the object's
    own = ignored.replace("  predictor:\n", "  predictor:\n    annotations: {numaguard.io/ignore: NG106}\n", 1)
    assert [(f.rule, f.suppressed) for f in _lint(own)[1].findings] == [("NG110", False), ("NG105", False),
                                                                        ("NG106", True)]
    # and the object's still apply where the component's say nothing of them
    other = ignored.replace("  predictor:\n", "  predictor:\n    annotations: {example.com/team: ml}\n", 1)
    assert [(f.rule, f.suppressed) for f in _lint(other)[1].findings] == [("NG110", True), ("NG105", True),
                                                                          ("NG106", False)]
