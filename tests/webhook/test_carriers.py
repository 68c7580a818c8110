"""Workload CRDs at admission, over real HTTPS: the real `numaguard webhook serve` judges every
kind of the carrier table (the built-in ones and the config's podTemplates), CREATE and UPDATE,
for the versions the table names; its findings point into the flawed template."""
from __future__ import annotations

import copy

import pytest
import yaml

from conftest import FIXTURES

from .conftest import CONFIG, start_server
from .reviews import POOL_CONFIG, review

CRDS = FIXTURES / "crds"
# No pool: the upstream CRD examples target none, so their pods are assumed to be managed (policy
# findings as warnings) rather than judged for validity only.
CARRIER_CONFIG = CONFIG.replace(POOL_CONFIG, "") + """\
podTemplates:
- apiVersion: ml.example.com/v1
  kind: Trainer
  paths: ["spec.workers[*].template"]
"""
FIX_NG002 = "Fix: Correct the field named in the message to the type the Kubernetes API expects"


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    srv = start_server(tmp_path_factory.mktemp("carriers"), "--workers", "1", "--threads", "2",
                       "--shutdown-delay", "0", config=CARRIER_CONFIG)
    yield srv
    assert srv.stop() == 0


def fixture(name: str) -> dict:
    return yaml.safe_load((CRDS / name).read_text())


def carrier_review(obj: dict, plural: str, operation: str = "CREATE", old: dict | None = None) -> dict:
    """The review the API server sends for a custom resource: its group, version and plural."""
    group, _, version = obj["apiVersion"].rpartition("/")
    sent = review(obj, operation, kind="Pod", old=old)
    request = sent["request"]
    request["kind"] = request["requestKind"] = {"group": group, "version": version, "kind": obj["kind"]}
    request["resource"] = request["requestResource"] = {"group": group, "version": version, "resource": plural}
    return sent


def test_a_jobset_with_a_flawed_second_replicated_job_is_denied_at_that_path(server):
    jobset = fixture("jobset/coordinator.bad-driver-cpu.yaml")
    resp = server.validate(carrier_review(jobset, "jobsets"))["response"]
    assert (resp["allowed"], resp["status"]["code"]) == (False, 403)
    lines = resp["status"]["message"].split("\n")
    assert lines[0] == ("numaguard: JobSet default/coordinator-example has 1 error (the kubelet would not give its "
                        "pods their NUMA placement):")
    assert lines[1].startswith(
        "NG002 spec.replicatedJobs[1].template.spec.template.spec.resources.limits.cpu: resources.limits.cpu: "
        "'2 cores' is not a Kubernetes quantity (e.g. \"2\", \"500m\", \"4Gi\"): quantities must match the "
        "regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$' " + FIX_NG002)
    assert len(lines) == 2
    entry = server.access_log()[-1]
    assert (entry["kind"], entry["operation"], entry["decision"], entry["rules"]) == \
        ("JobSet", "CREATE", "deny", ["NG002", "NG110", "NG112"])


def test_an_update_that_keeps_the_flaw_is_allowed_and_repeats_it_as_a_warning(server):
    jobset = fixture("jobset/coordinator.bad-driver-cpu.yaml")
    scaled = copy.deepcopy(jobset)
    scaled["spec"]["replicatedJobs"][0]["replicas"] = 3
    resp = server.validate(carrier_review(scaled, "jobsets", "UPDATE", old=jobset))["response"]
    assert resp["allowed"] is True
    # The JobSet controller is no built-in one: its Jobs are judged as usual, and the lead says so.
    assert resp["warnings"] == [
        "numaguard: allowed because this JobSet already had the 1 error below; what its controller creates "
        "from the template is judged as usual, and denied in enforce mode while it keeps it: fix the template",
        "NG002 spec.replicatedJobs[1].template.spec.template.spec.resources.limits.cpu: (uncha... " + FIX_NG002
        + ' (quantities as strings like "2", "500m", "4Gi"; option values quoted, e.g. "true").']
    assert len(resp["warnings"][1]) == 255


@pytest.mark.parametrize("name,plural,allowed,first", [
    ("volcano/tf-example.yaml", "jobs", True, None),
    ("volcano/tf-example.bad-worker.yaml", "jobs", False,
     "NG114 spec.tasks[1].template.spec.resources.requests.cpu: spec.resources.requests[cpu]: Invalid value: "
     "\"4\": must be less than or equal to cpu limit of 2"),
    ("kruise/daemonset-guestbook.bad-cpu.yaml", "daemonsets", False,
     "NG002 spec.template.spec.resources.limits.cpu: resources.limits.cpu: 'lots' is not a Kubernetes quantity"),
    ("knative/service.bad-pod-resources.yaml", "services", False,
     "NG002 spec.template.spec.resources: Service refuses resources in its pod template: Knative Serving accepts "
     "only the pod fields in its PodSpecMask"),
    ("trainer/deepspeed_distributed.bad-launcher.yaml", "clustertrainingruntimes", False,
     "NG114 spec.template.spec.replicatedJobs[1].template.spec.template.spec.resources.requests.cpu: "),
])
def test_crds_of_other_groups_are_judged_by_their_own_paths(server, name, plural, allowed, first):
    resp = server.validate(carrier_review(fixture(name), plural))["response"]
    assert resp["allowed"] is allowed
    if first is None:
        assert "warnings" not in resp and "status" not in resp
    else:
        assert resp["status"]["message"].split("\n")[1].startswith(first)


def test_a_version_the_table_does_not_name_is_not_judged(server):
    daemonset = fixture("kruise/daemonset-guestbook.bad-cpu.yaml")
    daemonset["apiVersion"] = "apps.kruise.io/v1"
    resp = server.validate(carrier_review(daemonset, "daemonsets"))["response"]
    assert resp["allowed"] is True and "warnings" not in resp
    assert server.access_log()[-1]["note"] == "kind not judged"


def test_a_carrier_from_the_config_s_pod_templates_is_judged(server):
    trainer = {"apiVersion": "ml.example.com/v1", "kind": "Trainer", "metadata": {"name": "t", "namespace": "ml"},
               "spec": {"workers": [{"template": {"spec": {
                   "resources": {"requests": {"cpu": "2", "memory": "1Gi"}, "limits": {"cpu": "1", "memory": "1Gi"}},
                   "containers": [{"name": "c", "image": "registry.example/c:1"}]}}}]}}
    resp = server.validate(carrier_review(trainer, "trainers"))["response"]
    assert resp["allowed"] is False
    assert resp["status"]["message"].split("\n")[1].startswith(
        "NG114 spec.workers[0].template.spec.resources.requests.cpu: ")
    other = {**trainer, "apiVersion": "ml.example.com/v2"}
    assert server.validate(carrier_review(other, "trainers"))["response"] == \
        {"uid": server.access_log()[-1]["uid"], "allowed": True}


def test_a_job_its_jobset_made_gets_no_warnings_but_a_bare_one_does(server):
    job = {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "js-workers-0", "namespace": "default"},
           "spec": {"template": {"spec": {
               "resources": {"requests": {"cpu": "2", "memory": "1Gi"}, "limits": {"cpu": "2", "memory": "1Gi"}},
               "containers": [{"name": "c", "image": "registry.k8s.io/pause:3.10"}], "restartPolicy": "Never"}}}}
    sent = review(job, kind="Pod")
    sent["request"]["kind"] = sent["request"]["requestKind"] = {"group": "batch", "version": "v1", "kind": "Job"}
    bare = server.validate(sent)["response"]
    assert [w.split(" ", 1)[0] for w in bare["warnings"]] == ["NG112"]
    job["metadata"]["ownerReferences"] = [{"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet", "name": "js",
                                           "uid": "5e0c1a3f", "controller": True}]
    owned = server.validate(sent)["response"]
    assert owned == {"uid": sent["request"]["uid"], "allowed": True}
