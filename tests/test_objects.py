"""Kinds are matched with their API group and version: a Volcano `batch.volcano.sh` Job or an
OpenKruise `apps.kruise.io` DaemonSet is judged by its own template paths, never by the
`batch/v1` or `apps/v1` ones; a kind of another group, or a version that does not exist, is
skipped as an unknown kind."""
from numaguard.lint.carriers import BUILTIN_CARRIERS
from numaguard.lint.engine import lint_documents
from numaguard.lint.objects import api_group, classify

BAD_TEMPLATE = {"spec": {"containers": "not a list", "resources": {"limits": {"cpu": "2"}}}}


def test_api_group_of_core_grouped_and_odd_api_versions():
    assert [api_group(v) for v in ("v1", "apps/v1", "batch.volcano.sh/v1alpha1", "", None)] == \
        ["", "apps", "batch.volcano.sh", "", ""]


def _problems(doc):
    found = classify(doc, BUILTIN_CARRIERS)
    return found.kind, [p.template_path for p in found.pods], [(p.path, p.message) for p in found.problems]


def test_a_kind_of_another_group_is_judged_by_its_own_paths():
    volcano = {"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job", "metadata": {"name": "vc"},
               "spec": {"tasks": [{"name": "ps", "template": {"spec": {"containers": []}}},
                                  {"name": "worker", "template": BAD_TEMPLATE}]}}
    kruise = {"apiVersion": "apps.kruise.io/v1beta1", "kind": "DaemonSet", "metadata": {"name": "ds"},
              "spec": {"template": BAD_TEMPLATE}}
    # a batch/v1 Job and an apps/v1 DaemonSet without spec.template: their paths, not the CRDs'
    assert _problems(volcano) == ("pod", ["spec.tasks[0].template", "spec.tasks[1].template"], [])
    assert _problems(kruise) == ("pod", ["spec.template"], [])
    result = lint_documents([volcano, kruise])
    assert [(f.rule, f.object.kind, f.object.api_version, f.path) for f in result.findings] == [
        ("NG002", "Job", "batch.volcano.sh/v1alpha1", "spec.tasks[1].template.spec.containers"),
        ("NG002", "DaemonSet", "apps.kruise.io/v1beta1", "spec.template.spec.containers")]
    assert (result.summary.objects, result.summary.skipped_by_reason["unknown-kind"]) == (2, 0)


def test_another_group_or_a_version_that_does_not_exist_is_an_unknown_kind():
    docs = [{"apiVersion": "example.com/v1", "kind": "Deployment", "spec": {"template": BAD_TEMPLATE}},
            {"apiVersion": "apps/v1beta2", "kind": "Deployment", "spec": {"template": BAD_TEMPLATE}},
            {"apiVersion": "apps.kruise.io/v1", "kind": "CloneSet", "spec": {"template": BAD_TEMPLATE}},
            {"apiVersion": "ray.io/v1alpha1", "kind": "RayCronJob", "spec": {}}]
    assert [classify(d, BUILTIN_CARRIERS).kind for d in docs] == ["skip"] * 4
    result = lint_documents(docs)
    assert result.findings == []
    assert (result.summary.objects, result.summary.skipped_by_reason["unknown-kind"]) == (0, 4)


def test_builtin_kind_of_its_own_group_is_judged():
    doc = {"apiVersion": "apps/v1", "kind": "DaemonSet", "metadata": {"name": "ds"}, "spec": {}}
    assert _problems(doc) == ("pod", [], [(("spec",), "DaemonSet: spec.template is missing")])


def test_missing_and_misshaped_parts_point_at_the_nearest_field_that_is_there():
    def jobset(jobs):
        return {"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet", "spec": {"replicatedJobs": jobs}}

    assert _problems(jobset([{"name": "a", "template": {"spec": {}}}])) == ("pod", [], [
        (("spec", "replicatedJobs", 0, "template", "spec"),
         "JobSet: spec.replicatedJobs[0].template.spec.template is missing")])
    assert _problems(jobset({"a": {}})) == ("pod", [], [
        (("spec", "replicatedJobs"), "JobSet: spec.replicatedJobs must be a list, found a mapping")])
    assert _problems(jobset(["a"])) == ("pod", [], [
        (("spec", "replicatedJobs", 0), "JobSet: spec.replicatedJobs[0] must be a mapping, found a string")])
    assert _problems(jobset([{"template": {"spec": {"template": {"spec": []}}}}])) == ("pod", [], [
        (("spec", "replicatedJobs", 0, "template", "spec", "template", "spec"),
         "JobSet: spec.replicatedJobs[0].template.spec.template.spec must be a mapping, found a list")])
    # a null required field is missing, and found where it is written
    pytorch = {"apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob",
               "spec": {"pytorchReplicaSpecs": {"Master": None, "Worker": {"template": {"spec": {}}}}}}
    assert _problems(pytorch) == ("pod", ["spec.pytorchReplicaSpecs.Worker.template"], [
        (("spec", "pytorchReplicaSpecs", "Master"), "PyTorchJob: spec.pytorchReplicaSpecs.Master is missing")])


def test_optional_parts_may_be_absent_and_empty_collections_hold_no_template():
    lws = {"apiVersion": "leaderworkerset.x-k8s.io/v1", "kind": "LeaderWorkerSet",
           "spec": {"leaderWorkerTemplate": {"leaderTemplate": None, "workerTemplate": {"spec": {}}}}}
    ray = {"apiVersion": "ray.io/v1", "kind": "RayCluster", "spec": {"headGroupSpec": {"template": {"spec": {}}}}}
    ray_job = {"apiVersion": "ray.io/v1", "kind": "RayJob", "spec": {"clusterSelector": {"ray.io/cluster": "c"}}}
    jobs = {"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet", "spec": {"replicatedJobs": []}}
    assert [_problems(d) for d in (lws, ray, ray_job, jobs)] == [
        ("pod", ["spec.leaderWorkerTemplate.workerTemplate"], []),
        ("pod", ["spec.headGroupSpec.template"], []),
        ("pod", [], []), ("pod", [], [])]


def test_a_rollout_with_a_workload_ref_has_no_template_of_its_own():
    ref = {"apiVersion": "argoproj.io/v1alpha1", "kind": "Rollout",
           "spec": {"workloadRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"}}}
    bare = {"apiVersion": "argoproj.io/v1alpha1", "kind": "Rollout", "spec": {"replicas": 2}}
    assert _problems(ref) == ("pod", [], [])
    assert _problems(bare) == ("pod", [], [(("spec",), "Rollout: spec.template is missing (it is needed "
                                                       "unless spec.workloadRef is set)")])


def test_one_missing_field_on_two_paths_is_said_once():
    cron = {"apiVersion": "apps.kruise.io/v1beta1", "kind": "AdvancedCronJob", "spec": {"schedule": "* * * * *"}}
    assert _problems(cron) == ("pod", [], [(("spec",), "AdvancedCronJob: spec.template is missing")])


def test_annotations_merge_from_the_carrier_through_each_object_template_to_the_pod_template():
    doc = {"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet",
           "metadata": {"annotations": {"numaguard.io/ignore": "all", "a": "jobset"}},
           "spec": {"replicatedJobs": [
               {"template": {"metadata": {"annotations": {"a": "job", "b": "job"}},
                             "spec": {"template": {"metadata": {"annotations": {"numaguard.io/ignore": "NG104"}},
                                                   "spec": {}}}}},
               {"template": {"spec": {"template": {"spec": {}}}}}]}}
    first, second = classify(doc, BUILTIN_CARRIERS).pods
    assert first.annotations == {"numaguard.io/ignore": "NG104", "a": "job", "b": "job"}
    assert second.annotations == {"numaguard.io/ignore": "all", "a": "jobset"}
    assert (first.metadata_path, second.spec_path) == (
        ("spec", "replicatedJobs", 0, "template", "spec", "template", "metadata"),
        ("spec", "replicatedJobs", 1, "template", "spec", "template", "spec"))
