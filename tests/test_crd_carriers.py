"""Workload CRDs judged by their own template paths, on their repositories' own examples
(tests/fixtures/crds, origins in its ORIGIN.md): every template found, each finding naming the
carrier and pointing into the right template at the right line and column."""
from __future__ import annotations

import json

import pytest

from numaguard.lint.config import config_from_dict
from numaguard.lint.engine import lint_documents
from numaguard.lint.load.documents import load_paths

from conftest import FIXTURES, run_cli

CRDS = FIXTURES / "crds"


def lint(name: str, config: dict | None = None):
    (source, documents, errors), = load_paths([str(CRDS / name)])
    return lint_documents(documents, config=config_from_dict(config or {}), load_errors=errors)


# The upstream examples hold no pod-level resources: with no pool configured nothing is
# checked, and under `scope: all` every template the carrier holds gets NG101 at its own spec
# (position: the spec's first field, as for a Deployment).
UPSTREAM = {
    "argo-rollouts/rollout-canary.yaml": ("argoproj.io/v1alpha1", "Rollout", [("spec.template", 19, 7)]),
    "kruise/apps_v1alpha1_cloneset.yaml": ("apps.kruise.io/v1alpha1", "CloneSet", [("spec.template", 17, 7)]),
    "kruise/apps_v1alpha1_statefulset.yaml": ("apps.kruise.io/v1alpha1", "StatefulSet", [("spec.template", 16, 7)]),
    "kruise/daemonset-guestbook.yaml": ("apps.kruise.io/v1alpha1", "DaemonSet", [("spec.template", 14, 7)]),
    "kruise/apps_v1alpha1_broadcastjob-ttl.yaml": ("apps.kruise.io/v1alpha1", "BroadcastJob",
                                                   [("spec.template", 8, 7)]),
    "kruise/apps_v1alpha1_uniteddeployment.yaml": ("apps.kruise.io/v1alpha1", "UnitedDeployment",
                                                   [("spec.template.statefulSetTemplate.spec.template", 24, 13)]),
    "lws/lws.yaml": ("leaderworkerset.x-k8s.io/v1", "LeaderWorkerSet",
                     [("spec.leaderWorkerTemplate.workerTemplate", 11, 9)]),
    "lws/lws-multi-template.yaml": ("leaderworkerset.x-k8s.io/v1", "LeaderWorkerSet",
                                    [("spec.leaderWorkerTemplate.leaderTemplate", 10, 9),
                                     ("spec.leaderWorkerTemplate.workerTemplate", 23, 9)]),
    "lws/disaggregatedset_v1_disaggregatedset.yaml": (
        "disaggregatedset.x-k8s.io/v1", "DisaggregatedSet",
        [("spec.roles[0].spec.leaderWorkerTemplate.leaderTemplate", 26, 15),
         ("spec.roles[0].spec.leaderWorkerTemplate.workerTemplate", 36, 15),
         ("spec.roles[1].spec.leaderWorkerTemplate.leaderTemplate", 51, 15),
         ("spec.roles[1].spec.leaderWorkerTemplate.workerTemplate", 61, 15)]),
    "jobset/coordinator.yaml": ("jobset.x-k8s.io/v1alpha2", "JobSet",
                                [("spec.replicatedJobs[0].template.spec.template", 22, 13),
                                 ("spec.replicatedJobs[1].template.spec.template", 37, 13)]),
    "training-operator/pytorch-simple.yaml": ("kubeflow.org/v1", "PyTorchJob",
                                              [("spec.pytorchReplicaSpecs.Master.template", 13, 11),
                                               ("spec.pytorchReplicaSpecs.Worker.template", 26, 11)]),
    "training-operator/tensorflow-simple.yaml": ("kubeflow.org/v1", "TFJob",
                                                 [("spec.tfReplicaSpecs.Worker.template", 13, 11)]),
    "training-operator/xgboostjob.yaml": ("kubeflow.org/v1", "XGBoostJob",
                                          [("spec.xgbReplicaSpecs.Master.template", 12, 11),
                                           ("spec.xgbReplicaSpecs.Worker.template", 31, 11)]),
    "training-operator/paddle-simple-cpu.yaml": ("kubeflow.org/v1", "PaddleJob",
                                                 [("spec.paddleReplicaSpecs.Worker.template", 13, 11)]),
    "training-operator/jax-cpu-demo.yaml": ("kubeflow.org/v1", "JAXJob",
                                            [("spec.jaxReplicaSpecs.Worker.template", 13, 11)]),
    "training-operator/mpi-tensorflow-mnist.yaml": ("kubeflow.org/v1", "MPIJob",
                                                    [("spec.mpiReplicaSpecs.Launcher.template", 14, 11),
                                                     ("spec.mpiReplicaSpecs.Worker.template", 47, 11)]),
    "mpi-operator/pi.yaml": ("kubeflow.org/v2beta1", "MPIJob",
                             [("spec.mpiReplicaSpecs.Launcher.template", 16, 11),
                              ("spec.mpiReplicaSpecs.Worker.template", 35, 11)]),
    "trainer/deepspeed_distributed.yaml": (
        "trainer.kubeflow.org/v1alpha1", "ClusterTrainingRuntime",
        [("spec.template.spec.replicatedJobs[0].template.spec.template", 43, 19),
         ("spec.template.spec.replicatedJobs[1].template.spec.template", 71, 19)]),
    "kuberay/ray-cluster.complete.yaml": ("ray.io/v1", "RayCluster",
                                          [("spec.headGroupSpec.template", 28, 9),
                                           ("spec.workerGroupSpecs[0].template", 85, 9)]),
    "kuberay/ray-service.custom-serve-service.yaml": ("ray.io/v1", "RayService",
                                                      [("spec.rayClusterConfig.headGroupSpec.template", 63, 11),
                                                       ("spec.rayClusterConfig.workerGroupSpecs[0].template", 87, 11)]),
    "volcano/job.yaml": ("batch.volcano.sh/v1alpha1", "Job", [("spec.tasks[0].template", 35, 11)]),
    "volcano/tf-example.yaml": ("batch.volcano.sh/v1alpha1", "Job",
                                [("spec.tasks[0].template", 53, 11), ("spec.tasks[1].template", 84, 11)]),
    "volcano/cronjob.yaml": ("batch.volcano.sh/v1alpha1", "CronJob",
                             [("spec.jobTemplate.spec.tasks[0].template", 22, 15)]),
    "knative/service.yaml": ("serving.knative.dev/v1", "Service", [("spec.template", 9, 7)]),
}
# Files that hold a second object: an unknown kind beside the carrier (a TrainJob, a Knative
# Route, a ConfigMap), or the Deployment a Rollout's workloadRef names.
MIXED = {
    "trainer/05-multi-step.yaml": ("trainer.kubeflow.org/v1alpha1", "TrainingRuntime",
                                   [("spec.template.spec.replicatedJobs[0].template.spec.template", 55, 19),
                                    ("spec.template.spec.replicatedJobs[1].template.spec.template", 69, 19)], 1),
    "knative/helloworld.yaml": ("serving.knative.dev/v1", "Configuration", [("spec.template", 23, 7)], 1),
    "kuberay/ray-job.light-weight-submitter.yaml": ("ray.io/v1", "RayJob", [
        ("spec.rayClusterSpec.headGroupSpec.template", 18, 11),
        ("spec.rayClusterSpec.workerGroupSpecs[0].template", 62, 11),
        ("spec.submitterPodTemplate", 74, 7)], 1),
    "kuberay/ray-cronjob.sample.yaml": ("ray.io/v1", "RayCronJob", [
        ("spec.jobTemplate.rayClusterSpec.headGroupSpec.template", 57, 13),
        ("spec.jobTemplate.rayClusterSpec.workerGroupSpecs[0].template", 101, 13)], 1),
}


@pytest.mark.parametrize("name", sorted(UPSTREAM) + sorted(MIXED))
def test_upstream_examples_are_one_object_each_and_clean_without_a_pool(name):
    result = lint(name)
    unknown = MIXED[name][3] if name in MIXED else 0
    assert (result.findings, result.summary.objects, result.summary.skipped_by_reason["unknown-kind"]) == \
        ([], 1, unknown)


@pytest.mark.parametrize("name", sorted(UPSTREAM) + sorted(MIXED))
def test_under_scope_all_every_template_of_the_carrier_is_judged(name):
    api_version, kind, templates = (UPSTREAM.get(name) or MIXED[name])[:3]
    result = lint(name, {"scope": "all"})
    ng101 = [f for f in result.findings if f.rule == "NG101"]
    assert [(f.path, f.line, f.column) for f in ng101] == \
        [(f"{template}.spec.resources", line, column) for template, line, column in templates]
    assert {(f.object.api_version, f.object.kind) for f in ng101} == {(api_version, kind)}
    assert result.summary.objects == 1


def test_a_rollout_with_a_workload_ref_leaves_the_template_to_its_deployment():
    result = lint("argo-rollouts/workload-ref.yaml", {"scope": "all"})
    assert [(f.rule, f.object.kind, f.path, f.line, f.column) for f in result.findings] == [
        ("NG101", "Deployment", "spec.template.spec.resources", 15, 7)]
    assert result.summary.objects == 2


def test_trainjob_holds_no_pod_template_and_is_an_unknown_kind():
    result = lint("trainer/01-multi-node.yaml", {"scope": "all"})
    assert (result.findings, result.summary.objects, result.summary.skipped_by_reason["unknown-kind"]) == \
        ([], 0, 1)


# Real samples the CRD's own schema refuses: kubebuilder's scaffold `spec: {foo: bar}` (Kruise
# requires `template`) and Argo Rollouts' lint test data (a Rollout without a spec).
@pytest.mark.parametrize("name,expected", [
    ("kruise/apps_v1beta1_statefulset.yaml",
     [("NG002", "apps.kruise.io/v1beta1", "StatefulSet", "spec", 7, 3, "StatefulSet: spec.template is missing")]),
    ("kruise/apps_v1alpha1_advancedcronjob.yaml",
     [("NG002", "apps.kruise.io/v1alpha1", "AdvancedCronJob", "spec", 7, 3,
       "AdvancedCronJob: spec.template is missing")]),
    ("argo-rollouts/invalid-empty-rollout-vsvc.yml",
     [("NG002", "argoproj.io/v1alpha1", "Rollout", "", 1, 1,
       "Rollout: spec is missing (it is needed unless spec.workloadRef is set)")]),
])
def test_upstream_objects_their_crd_refuses_are_ng002_at_the_nearest_field(name, expected):
    result = lint(name)
    assert [(f.rule, f.object.api_version, f.object.kind, f.path, f.line, f.column, f.message)
            for f in result.findings] == expected


# One flaw added to an upstream example (ORIGIN.md says which). Validity findings: errors
# whatever the pod's scope. Each names the carrier and points into the flawed template.
FLAWED = {
    "jobset/coordinator.bad-driver-cpu.yaml": ("JobSet", "coordinator-example", [
        ("NG110", "info", "spec.replicatedJobs[0].template.spec.template.spec.resources", 23, 15),
        ("NG112", "info", "spec.replicatedJobs[0].template.spec.template.spec.containers[0].image", 27, 22),
        ("NG002", "error", "spec.replicatedJobs[1].template.spec.template.spec.resources.limits.cpu", 42, 22)]),
    "argo-rollouts/rollout-canary.bad-request-above-limit.yaml": ("Rollout", "rollout-canary", [
        ("NG114", "error", "spec.template.spec.resources.requests.cpu", 21, 16)]),
    "kruise/apps_v1alpha1_cloneset.bad-memory.yaml": ("CloneSet", "sample", [
        ("NG002", "error", "spec.template.spec.resources.limits.memory", 19, 19)]),
    "kruise/apps_v1alpha1_statefulset.bad-request-above-limit.yaml": ("StatefulSet", "sample", [
        ("NG114", "error", "spec.template.spec.resources.requests.cpu", 18, 16)]),
    "kruise/daemonset-guestbook.bad-cpu.yaml": ("DaemonSet", "guestbook-ds", [
        ("NG002", "error", "spec.template.spec.resources.limits.cpu", 16, 16)]),
    "lws/lws-multi-template.bad-worker.yaml": ("LeaderWorkerSet", "leaderworkerset-multi-template", [
        ("NG110", "info", "spec.leaderWorkerTemplate.leaderTemplate.spec.resources", 11, 11),
        ("NG114", "error", "spec.leaderWorkerTemplate.workerTemplate.spec.resources.requests.cpu", 28, 18)]),
    "training-operator/pytorch-simple.bad-worker.yaml": ("PyTorchJob", "pytorch-simple", [
        ("NG110", "info", "spec.pytorchReplicaSpecs.Master.template.spec.resources", 14, 13),
        ("NG002", "error", "spec.pytorchReplicaSpecs.Worker.template.spec.resources.limits.cpu", 31, 20)]),
    "training-operator/tensorflow-simple.bad-request-above-limit.yaml": ("TFJob", "tfjob-simple", [
        ("NG114", "error", "spec.tfReplicaSpecs.Worker.template.spec.resources.requests.cpu", 15, 20)]),
    "mpi-operator/pi.bad-worker.yaml": ("MPIJob", "pi", [
        ("NG114", "error", "spec.mpiReplicaSpecs.Worker.template.spec.resources.requests.cpu", 37, 20)]),
    "trainer/deepspeed_distributed.bad-launcher.yaml": ("ClusterTrainingRuntime", "deepspeed-distributed", [
        ("NG114", "error",
         "spec.template.spec.replicatedJobs[1].template.spec.template.spec.resources.requests.cpu", 73, 28)]),
    "kuberay/ray-cluster.complete.bad-worker.yaml": ("RayCluster", "raycluster-complete", [
        ("NG002", "error", "spec.workerGroupSpecs[0].template.spec.resources.limits.memory", 87, 21)]),
    "kuberay/ray-job.light-weight-submitter.bad-submitter.yaml": ("RayJob", "rayjob-light-weight-submitter", [
        ("NG114", "error", "spec.submitterPodTemplate.spec.resources.requests.cpu", 76, 16)]),
    "kuberay/ray-service.custom-serve-service.bad-head.yaml": ("RayService", "rayservice-sample", [
        ("NG002", "error", "spec.rayClusterConfig.headGroupSpec.template.spec.resources.limits.cpu", 65, 20)]),
    "volcano/tf-example.bad-worker.yaml": ("Job", "tensorflow-benchmark", [
        ("NG114", "error", "spec.tasks[1].template.spec.resources.requests.cpu", 86, 20)]),
    "knative/service.bad-pod-resources.yaml": ("Service", "runtime-test-image", [
        ("NG002", "error", "spec.template.spec.resources", 10, 9)]),
}


@pytest.mark.parametrize("name", sorted(FLAWED))
def test_a_flaw_in_one_template_is_found_there_and_names_the_carrier(name):
    kind, object_name, expected = FLAWED[name]
    result = lint(name)
    assert [(f.rule, f.severity.value, f.path, f.line, f.column) for f in result.findings] == expected
    assert {(f.object.kind, f.object.name) for f in result.findings} == {(kind, object_name)}
    assert result.summary.objects == 1


def test_knative_refuses_pod_level_resources_and_ng101_says_so():
    refused = lint("knative/service.bad-pod-resources.yaml").findings[0]
    assert refused.message == (
        "Service refuses resources in its pod template: Knative Serving accepts only the pod fields in "
        "its PodSpecMask (knative/serving pkg/apis/serving/fieldmask.go) and refuses pod-level resources "
        "(`must not set the field(s)`); its pods cannot have a pod budget")
    missing, = lint("knative/service.yaml", {"scope": "all"}).findings
    assert missing.message.startswith("the pod has no pod-level spec.resources, and a Service cannot have them: "
                                      "Knative Serving accepts only the pod fields in its PodSpecMask")
    assert missing.remediation == (
        "Run a workload that needs pod-level NUMA alignment as a kind that accepts pod-level resources "
        "(a Deployment), or annotate the Service's template numaguard.io/scope: unmanaged if per-container "
        "alignment is enough.")


def test_a_flawed_template_and_a_good_one_in_one_carrier_count_as_one_object_and_two_pods():
    summary = lint("jobset/coordinator.bad-driver-cpu.yaml").summary
    assert (summary.objects, summary.assumed_managed, summary.counts) == \
        (1, 2, {"error": 1, "warning": 0, "info": 2})


def _jobset(annotations: dict, job_annotations: dict, template_annotations: dict) -> dict:
    def job(name, meta):
        pod = {"spec": {"resources": {"limits": {"cpu": "2 cores"}}, "containers": [{"name": "c", "image": "i:1"}]}}
        if meta:
            pod["metadata"] = {"annotations": meta}
        return {"name": name, "template": {"spec": {"template": pod}}}

    jobs = [job("a", template_annotations), job("b", {})]
    if job_annotations:
        jobs[1]["template"]["metadata"] = {"annotations": job_annotations}
    return {"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet",
            "metadata": {"name": "js", "annotations": annotations}, "spec": {"replicatedJobs": jobs}}


@pytest.mark.parametrize("carrier,job,template,suppressed", [
    ({}, {}, {}, [False, False]),
    ({"numaguard.io/ignore": "NG002"}, {}, {}, [True, True]),                # the carrier's covers all
    ({"numaguard.io/ignore": "NG002"}, {}, {"numaguard.io/ignore": "NG104"}, [False, True]),  # the template's wins
    ({}, {"numaguard.io/ignore": "all"}, {}, [False, True]),                 # a Job template's covers its pods
    ({}, {}, {"numaguard.io/ignore": "NG002"}, [True, False]),
])
def test_suppression_annotations_template_over_job_template_over_carrier(carrier, job, template, suppressed):
    result = lint_documents([_jobset(carrier, job, template)])
    assert [(f.path, f.suppressed) for f in result.findings] == [
        ("spec.replicatedJobs[0].template.spec.template.spec.resources.limits.cpu", suppressed[0]),
        ("spec.replicatedJobs[1].template.spec.template.spec.resources.limits.cpu", suppressed[1])]


def test_the_scope_annotation_of_a_template_overrides_the_carrier_s():
    doc = _jobset({"numaguard.io/scope": "unmanaged"}, {}, {"numaguard.io/scope": "managed"})
    result = lint_documents([doc])
    assert [f.path for f in result.findings] == [
        "spec.replicatedJobs[0].template.spec.template.spec.resources.limits.cpu"]
    assert (result.summary.unmanaged, result.summary.objects) == (1, 1)


def test_a_custom_carrier_from_the_config_file_is_judged(tmp_path):
    (tmp_path / ".numaguard.yaml").write_text(
        "podTemplates:\n"
        "- apiVersion: ml.example.com/v1\n  kind: Trainer\n  paths:\n  - spec.workers[*].template\n"
        "  - \"spec.roles?.*.template\"\n")
    (tmp_path / "trainer.yaml").write_text(
        "apiVersion: ml.example.com/v1\nkind: Trainer\nmetadata: {name: t}\nspec:\n  workers:\n"
        "  - template:\n      spec:\n        resources: {limits: {cpu: \"2\"}, requests: {cpu: \"3\"}}\n"
        "        containers: [{name: c, image: i:1}]\n"
        "---\napiVersion: ml.example.com/v2\nkind: Trainer\nmetadata: {name: other-version}\nspec: {}\n")
    result = run_cli("lint", "trainer.yaml", "--format", "json", cwd=tmp_path)
    report = json.loads(result.stdout)
    assert [(f["rule"], f["object"]["kind"], f["path"], f["line"], f["column"]) for f in report["findings"]] == [
        ("NG114", "Trainer", "spec.workers[0].template.spec.resources.requests.cpu", 8, 57)]
    assert (result.returncode, report["summary"]["objects"], report["summary"]["skippedByReason"]["unknown-kind"]) \
        == (1, 1, 1)


def test_a_bad_template_path_in_the_config_is_exit_2_with_the_key(tmp_path):
    (tmp_path / ".numaguard.yaml").write_text(
        "podTemplates:\n- group: ml.example.com\n  kind: Trainer\n  paths: [spec.template, \"spec.workers[0].template\"]\n")
    (tmp_path / "pod.yaml").write_text("apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec: {containers: []}\n")
    result = run_cli("lint", "pod.yaml", cwd=tmp_path)
    assert result.returncode == 2
    assert result.stderr.strip().endswith(
        '.numaguard.yaml: podTemplates.0.paths.1: "spec.workers[0].template" is not a template path: field names '
        "separated by dots, `[*]` after a list field for each of its items, `*` for each value of a map, `?` "
        "after a field that may be absent, e.g. spec.workers[*].template or spec.roles?.*.template")
    assert "Traceback" not in result.stderr


TWO_JOBS = """\
apiVersion: jobset.x-k8s.io/v1alpha2
kind: JobSet
metadata: {name: train, namespace: ml}
spec:
  replicatedJobs:
  - name: workers
    template:
      spec:
        template:
          spec:
            resources: {requests: {cpu: "8", memory: 8Gi}, limits: {cpu: "8", memory: 8Gi}}
            containers: [{name: w, image: registry.example/w:1}]
  - name: driver
    template:
      spec:
        template:
          spec:
            resources: {requests: {cpu: "2", memory: 2Gi}, limits: {cpu: "2", memory: 2Gi}}
            containers: [{name: d, image: registry.example/d:1}]
"""


def test_simulate_plays_every_template_of_a_carrier_named_apart(tmp_path):
    (tmp_path / "jobset.yaml").write_text(TWO_JOBS)
    result = run_cli("simulate", "--node", "builtin:dual-socket-ht", "jobset.yaml", "--format", "json", cwd=tmp_path)
    report = json.loads(result.stdout)
    workers, driver = ({"kind": "JobSet", "namespace": "ml", "name": "train",
                        "template": f"spec.replicatedJobs[{i}].template.spec.template"} for i in (0, 1))
    assert [(p["object"], p["admitted"], p["numaNodes"]) for p in report["pods"]] == \
        [(workers, True, [0]), (driver, True, [0])]
    assert [c["object"] for c in report["capacity"]] == [workers, driver]
    text = run_cli("simulate", "--node", "builtin:dual-socket-ht", "jobset.yaml", cwd=tmp_path).stdout
    assert [line for line in text.splitlines() if line.startswith("[")] == [
        "[1] JobSet ml/train spec.replicatedJobs[0].template.spec.template: admitted on NUMA 0 (preferred)",
        "[2] JobSet ml/train spec.replicatedJobs[1].template.spec.template: admitted on NUMA 0 (preferred)"]


def test_simulate_reads_the_config_s_carriers(tmp_path):
    (tmp_path / "numaguard.yaml").write_text(
        "podTemplates:\n- group: ml.example.com\n  kind: Trainer\n  paths: [\"spec.workers[*].template\"]\n")
    (tmp_path / "trainer.yaml").write_text(
        "apiVersion: ml.example.com/v1\nkind: Trainer\nmetadata: {name: t}\nspec:\n  workers:\n"
        "  - template:\n      spec:\n        resources: {limits: {cpu: \"4\", memory: 4Gi}, requests: {cpu: \"4\", memory: 4Gi}}\n"
        "        containers: [{name: c, image: i:1}]\n")
    without = run_cli("simulate", "--node", "builtin:dual-socket-ht", "trainer.yaml", cwd=tmp_path)
    assert (without.returncode, without.stderr.strip()) == \
        (2, "Error: no Pod or pod template found in trainer.yaml")
    result = run_cli("simulate", "--node", "builtin:dual-socket-ht", "--config", "numaguard.yaml", "trainer.yaml",
                     "--format", "json", cwd=tmp_path)
    assert [(p["object"], p["admitted"]) for p in json.loads(result.stdout)["pods"]] == \
        [({"kind": "Trainer", "namespace": None, "name": "t"}, True)]


def test_a_baseline_tells_the_same_flaw_in_two_templates_apart(tmp_path):
    (tmp_path / "jobset.yaml").write_text(TWO_JOBS.replace('cpu: "8"', 'cpu: "8 cores"')
                                          .replace('cpu: "2"', 'cpu: "2 cores"'))
    written = run_cli("lint", "--write-baseline", "base.json", "jobset.yaml", cwd=tmp_path)
    assert written.stderr == "numaguard: recorded 4 finding(s) in base.json\n"
    entries = json.loads((tmp_path / "base.json").read_text())["entries"]
    assert sorted(e["path"] for e in entries) == [
        f"spec.replicatedJobs[{i}].template.spec.template.spec.resources.{which}.cpu"
        for i in (0, 1) for which in ("limits", "requests")]
    assert len({e["fingerprint"] for e in entries}) == 4 and {e["count"] for e in entries} == {1}
    # the driver fixed: its two entries are gone (and its pod budget explained), the workers' two known
    (tmp_path / "jobset.yaml").write_text(TWO_JOBS.replace('cpu: "8"', 'cpu: "8 cores"'))
    report = json.loads(run_cli("lint", "--baseline", "base.json", "jobset.yaml", "--format", "json",
                                cwd=tmp_path).stdout)
    assert [(f["rule"], f["path"], f["baselineState"]) for f in report["findings"]] == [
        ("NG002", "spec.replicatedJobs[0].template.spec.template.spec.resources.requests.cpu", "unchanged"),
        ("NG002", "spec.replicatedJobs[0].template.spec.template.spec.resources.limits.cpu", "unchanged"),
        ("NG110", "spec.replicatedJobs[1].template.spec.template.spec.resources", "new")]
    assert (report["summary"]["baselineUnchanged"], report["summary"]["baselineFixed"]) == (2, 2)


def test_every_volcano_example_once_a_false_ng002_is_judged_by_its_tasks():
    """volcano-sh/volcano's 26 Jobs and CronJobs were 26 false "spec.template is missing"
    errors while kinds were matched without their group."""
    results = [lint_documents(documents, load_errors=errors)
               for _source, documents, errors in load_paths([str(CRDS / "volcano-examples")])]
    assert (len(results), sum(r.summary.objects for r in results), [f for r in results for f in r.findings]) == \
        (23, 26, [])
    scoped = [f for _source, documents, errors in load_paths([str(CRDS / "volcano-examples")])
              for f in lint_documents(documents, config=config_from_dict({"scope": "all"})).findings]
    assert {(f.rule, f.object.api_version) for f in scoped} == {("NG101", "batch.volcano.sh/v1alpha1")}
    assert len(scoped) == 44
