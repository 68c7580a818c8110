"""Replicas of judged workloads, over real TLS: what a built-in controller writes for an owner the
webhook judged is allowed, counted and noted in an audit annotation; the same object written by
anyone else, or naming an owner its writer does not manage, is judged as usual."""
from __future__ import annotations

import copy
import uuid

import pytest

import yaml

from numaguard.lint.config import config_from_dict
from numaguard.webhook.decide import Policy, decide
from numaguard.webhook.review import parse_review
from .reviews import POOL_CONFIG, burstable_pod, deployment, managed_pod, replica_pod, review
from .test_lifecycle import _metric

CONTROLLERS = "system:serviceaccount:kube-system:"


def _by(sent: dict, user: str) -> dict:
    sent["request"]["userInfo"] = {"username": user, "uid": "7f1c", "groups": ["system:serviceaccounts",
                                                                              "system:serviceaccounts:kube-system"]}
    return sent


def _owned(obj: dict, api_version: str, kind: str, name: str = "owner-1") -> dict:
    obj = copy.deepcopy(obj)
    obj["metadata"]["ownerReferences"] = [{"apiVersion": api_version, "kind": kind, "name": name,
                                           "uid": str(uuid.uuid4()), "controller": True, "blockOwnerDeletion": True}]
    return obj


def _replica_set(template_pod: dict) -> dict:
    rs = deployment(template_pod)
    rs["kind"] = "ReplicaSet"
    rs["metadata"]["name"] = "order-matcher-7d9f8b6c5"
    return _owned(rs, "apps/v1", "Deployment", "order-matcher")


def _job(template_pod: dict) -> dict:
    job = deployment(template_pod)
    job["apiVersion"], job["kind"] = "batch/v1", "Job"
    del job["spec"]["strategy"], job["spec"]["replicas"]
    return _owned(job, "batch/v1", "CronJob", "nightly")


@pytest.mark.parametrize("controller, owner_api, owner_kind", [
    ("replicaset-controller", "apps/v1", "ReplicaSet"),
    ("statefulset-controller", "apps/v1", "StatefulSet"),
    ("daemon-set-controller", "apps/v1", "DaemonSet"),
    ("job-controller", "batch/v1", "Job"),
    ("replication-controller", "v1", "ReplicationController"),
])
def test_a_pod_its_controller_creates_is_allowed_with_the_finding_in_an_audit_annotation(server, controller,
                                                                                          owner_api, owner_kind):
    metrics = server.request("GET", "/metrics")[2].decode()
    before = (_metric(metrics, "numaguard_replicas_admitted_total", f'kind="Pod",owner="{owner_kind}"')
              if f'owner="{owner_kind}"' in metrics else 0)
    sent = _by(review(_owned(burstable_pod(), owner_api, owner_kind)), CONTROLLERS + controller)
    resp = server.validate(sent)["response"]
    assert resp == {"uid": sent["request"]["uid"], "allowed": True, "auditAnnotations": {
        "replica-of": f"{owner_kind}/owner-1", "findings": "NG103 spec.resources (error)"}}
    entry = next(e for e in server.access_log() if e.get("uid") == sent["request"]["uid"])
    assert (entry["decision"], entry["rules"], entry["note"]) == (
        "allow", ["NG103"], f"replica of {owner_kind}/owner-1, written by {controller}")
    after = _metric(server.request("GET", "/metrics")[2].decode(), "numaguard_replicas_admitted_total",
                    f'kind="Pod",owner="{owner_kind}"')
    assert after - before == 1


def test_one_level_up_replica_sets_of_deployments_and_jobs_of_cron_jobs(server):
    for obj, controller in ((_replica_set(burstable_pod()), "deployment-controller"),
                            (_job(burstable_pod()), "cronjob-controller")):
        sent = _by(review(obj), CONTROLLERS + controller)
        resp = server.validate(sent)["response"]
        assert resp["allowed"] is True and "warnings" not in resp
        assert resp["auditAnnotations"] == {"replica-of": obj["metadata"]["ownerReferences"][0]["kind"] + "/"
                                            + obj["metadata"]["ownerReferences"][0]["name"],
                                            "findings": "NG103 spec.template.spec.resources (error)"}
        # The same object from a user is judged: denied.
        resp = server.validate(review(obj))["response"]
        assert resp["allowed"] is False and "auditAnnotations" not in resp


def test_the_controller_managers_own_identity_counts_for_every_controller(server):
    sent = _by(review(replica_pod(burstable_pod())), "system:kube-controller-manager")
    assert server.validate(sent)["response"]["auditAnnotations"]["replica-of"] == "ReplicaSet/order-matcher-7d9f8b6c5"


def test_a_clean_replica_has_no_findings_annotation(server):
    sent = _by(review(replica_pod(managed_pod())), CONTROLLERS + "replicaset-controller")
    resp = server.validate(sent)["response"]
    assert resp == {"uid": sent["request"]["uid"], "allowed": True,
                    "auditAnnotations": {"replica-of": "ReplicaSet/order-matcher-7d9f8b6c5"}}


@pytest.mark.parametrize("user, obj", [
    # a user writing the ownerReference by hand
    ("admin", replica_pod(burstable_pod())),
    # a workload controller's own account, but the owner is not the kind it manages
    (CONTROLLERS + "statefulset-controller", replica_pod(burstable_pod())),
    (CONTROLLERS + "replicaset-controller", _owned(burstable_pod(), "apps/v1", "StatefulSet")),
    # the kind, but another API group (a CRD named ReplicaSet; a Volcano Job and a Kruise
    # DaemonSet, whose own controllers run elsewhere, are no built-in controller's)
    (CONTROLLERS + "replicaset-controller", _owned(burstable_pod(), "example.com/v1", "ReplicaSet")),
    (CONTROLLERS + "job-controller", _owned(burstable_pod(), "batch.volcano.sh/v1alpha1", "Job")),
    (CONTROLLERS + "daemon-set-controller", _owned(burstable_pod(), "apps.kruise.io/v1alpha1", "DaemonSet")),
    # another controller of kube-system, and another namespace's account with the controller's name
    (CONTROLLERS + "generic-garbage-collector", replica_pod(burstable_pod())),
    ("system:serviceaccount:default:replicaset-controller", replica_pod(burstable_pod())),
    # the deployment controller writes ReplicaSets, not pods
    (CONTROLLERS + "deployment-controller", _owned(burstable_pod(), "apps/v1", "Deployment")),
])
def test_anything_else_is_judged_as_usual(server, user, obj):
    resp = server.validate(_by(review(obj), user))["response"]
    assert resp["allowed"] is False and "auditAnnotations" not in resp
    assert resp["status"]["message"].split("\n")[1].startswith("NG103 spec.resources: pod QoS is Burstable")


def test_an_owner_reference_of_the_wrong_shape_is_judged_as_usual(server):
    pod = replica_pod(burstable_pod())
    pod["metadata"]["ownerReferences"][0]["kind"] = ["ReplicaSet"]
    for user in ("admin", CONTROLLERS + "replicaset-controller"):
        resp = server.validate(_by(review(pod), user))["response"]
        assert resp["allowed"] is False and resp["status"]["message"].split("\n")[1].startswith("NG103")


def test_an_owner_reference_that_is_not_the_controller_does_not_make_a_replica(server):
    pod = replica_pod(burstable_pod())
    pod["metadata"]["ownerReferences"][0]["controller"] = False
    resp = server.validate(_by(review(pod), CONTROLLERS + "replicaset-controller"))["response"]
    assert resp["allowed"] is False


@pytest.mark.parametrize("owners", ["ReplicaSet", ["apps/v1 ReplicaSet", None, 7, []],
                                    [{"apiVersion": 1, "kind": "ReplicaSet", "name": "r", "controller": True}],
                                    [{"apiVersion": "apps/v1", "kind": None, "name": "r", "controller": True}]])
def test_owner_references_that_are_not_mappings_of_strings_name_no_owner(server, owners):
    pod = burstable_pod()
    pod["metadata"]["ownerReferences"] = owners
    for user in ("admin", CONTROLLERS + "replicaset-controller"):
        resp = server.validate(_by(review(pod), user))["response"]
        assert (resp["allowed"], resp["status"]["code"]) == (False, 403) and "auditAnnotations" not in resp
        assert resp["status"]["message"].split("\n")[1].startswith("NG103 spec.resources: pod QoS is Burstable")
    assert "errorId" not in server.access_log()[-1]


@pytest.mark.parametrize("owner_api, owner_kind, quiet", [
    ("apps.kruise.io/v1alpha1", "DaemonSet", True),       # a judged workload CRD: its controller's pods
    ("batch.volcano.sh/v1alpha1", "Job", True),
    ("apps/v1", "ReplicaSet", True),
    ("example.com/v1", "ReplicaSet", False),              # a kind not judged in that group
    ("batch.volcano.sh/v1beta1", "Queue", False),        # a Volcano kind that carries no pod template
    ("v1", "Pod", False),
    ("v1", "ReplicationController", True),
    (None, "ReplicationController", False),              # no apiVersion: no group, no owner
    (1, "ReplicationController", False),
])
def test_pods_of_a_judged_controller_get_no_warnings_matched_by_group_and_kind(owner_api, owner_kind, quiet):
    """In warn mode a pod's errors are warnings, except for a pod a judged controller created
    (they would reach only that controller's log), whoever the writer."""
    policy = Policy(config_from_dict({**yaml.safe_load(POOL_CONFIG), "webhook": {"mode": "warn"}}))
    decision = decide(parse_review(review(_owned(burstable_pod(), owner_api, owner_kind))), policy)
    assert (decision.allowed, decision.rule_ids) == (True, ["NG103"])
    assert (decision.warnings == []) is quiet
    if not quiet:
        assert decision.warnings[0].startswith("NG103 spec.resources: pod QoS is Burstable")
