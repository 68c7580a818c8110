"""Decisions over real HTTPS: the real `numaguard webhook serve` process, reviews shaped as the
API server sends them (see reviews.py), the server verified under the Service DNS name."""
from __future__ import annotations

import copy

from .reviews import burstable_pod, deployment, managed_pod, replica_pod, review

NG103 = ("NG103 spec.resources: pod QoS is Burstable: pod-level requests.cpu defaulted to 1 from "
         "container 'app' requests.cpu (limits.cpu is 4); set spec.resources.requests.cpu: \"4\"")


def test_the_service_certificate_verifies_and_tls_is_at_least_1_2(server):
    conn = server.connection()
    conn.connect()
    assert conn.sock.version() in ("TLSv1.2", "TLSv1.3")
    names = [v for k, v in conn.sock.getpeercert()["subjectAltName"] if k == "DNS"]
    assert names == ["numaguard-webhook", "numaguard-webhook.numaguard", "numaguard-webhook.numaguard.svc",
                     "numaguard-webhook.numaguard.svc.cluster.local"]
    conn.close()


def test_enforce_denies_an_error_with_rule_field_and_fix(server):
    sent = review(burstable_pod())
    out = server.validate(sent)
    assert out["apiVersion"] == "admission.k8s.io/v1" and out["kind"] == "AdmissionReview"
    resp = out["response"]
    assert resp["uid"] == sent["request"]["uid"]
    assert resp["allowed"] is False
    assert resp["status"]["code"] == 403
    lines = resp["status"]["message"].split("\n")
    assert lines[0] == ("numaguard: Pod default/burstable has 1 error (the kubelet would not give its pods "
                        "their NUMA placement):")
    assert lines[1].startswith(NG103 + " Fix: Set spec.resources.requests equal to spec.resources.limits")
    assert len(lines) == 2
    assert "warnings" not in resp


def test_a_good_managed_pod_is_allowed_without_warnings_ng110_only_explains(server):
    resp = server.validate(review(managed_pod()))["response"]
    assert resp == {"uid": resp["uid"], "allowed": True}


def test_enforce_passes_warnings_and_meaningful_infos_one_line_each(server):
    pod = managed_pod(cpu="20", image="registry.k8s.io/pause:3.10")
    resp = server.validate(review(pod))["response"]
    assert resp["allowed"] is True
    warnings = resp["warnings"]
    assert [w.split(" ", 2)[:2] for w in warnings] == [["NG112", "spec.containers[0].image:"],
                                                       ["NG302", "spec.resources.requests.cpu:"]]
    assert all(len(w) <= 200 and "\n" not in w for w in warnings)
    assert warnings[1].startswith("NG302 spec.resources.requests.cpu: 2 copies of this pod fit on an empty node "
                                  "dual-socket-ht")
    assert warnings[1].endswith("...")


def test_numa_fit_at_admission_denies_a_pod_no_numa_node_holds(server):
    resp = server.validate(review(managed_pod(cpu="48")))["response"]
    assert resp["allowed"] is False
    assert resp["status"]["message"].split("\n")[1].startswith(
        "NG301 spec.resources.requests.cpu: on an empty node dual-socket-ht (topologyManagerPolicy "
        "single-numa-node, scope pod) the kubelet rejects this pod with TopologyAffinityError")


def test_warn_mode_namespace_turns_errors_into_warnings(server):
    resp = server.validate(review(burstable_pod(namespace="team-warn")))["response"]
    assert resp["allowed"] is True
    assert resp["warnings"] == [NG103]
    assert server.access_log()[-1]["decision"] == "warn"


def test_audit_mode_namespace_allows_and_logs(server):
    sent = review(burstable_pod(namespace="team-audit"))
    resp = server.validate(sent)["response"]
    assert resp == {"uid": sent["request"]["uid"], "allowed": True}
    entry = next(e for e in server.access_log() if e.get("uid") == sent["request"]["uid"])
    assert entry["mode"] == "audit" and entry["decision"] == "audit" and entry["rules"] == ["NG103"]
    assert (entry["user"], entry["kind"], entry["namespace"], entry["name"], entry["operation"]) == (
        "admin", "Pod", "team-audit", "burstable", "CREATE")
    assert isinstance(entry["latencyMs"], float) and entry["latencyMs"] > 0
    assert "object" not in entry and "spec" not in str(entry)


def test_dry_run_is_answered_exactly_like_a_real_request(server):
    real, dry = review(burstable_pod()), review(burstable_pod(), dry_run=True)
    a, b = server.validate(real)["response"], server.validate(dry)["response"]
    assert b["uid"] == dry["request"]["uid"]
    assert {**a, "uid": None} == {**b, "uid": None}
    entry = next(e for e in server.access_log() if e.get("uid") == dry["request"]["uid"])
    assert entry["dryRun"] is True and entry["decision"] == "deny"


def test_update_denies_only_what_the_new_object_makes_worse(server):
    bad = deployment(burstable_pod())
    scaled = copy.deepcopy(bad)
    scaled["spec"]["replicas"] = 10
    scaled["metadata"]["labels"] = {"team": "trading"}
    # Scaling and relabelling a Deployment that already has the error: allowed, error repeated as warning.
    resp = server.validate(review(scaled, "UPDATE", old=bad))["response"]
    assert resp["allowed"] is True
    assert resp["warnings"] == [NG103.replace("spec.resources", "spec.template.spec.resources", 1)]
    # An update that introduces the error: denied.
    good = deployment(managed_pod())
    resp = server.validate(review(bad, "UPDATE", old=good))["response"]
    assert resp["allowed"] is False
    assert resp["status"]["message"].split("\n")[1].startswith(
        "NG103 spec.template.spec.resources: pod QoS is Burstable")
    # Rolling back to the good template: allowed, nothing to say.
    resp = server.validate(review(good, "UPDATE", old=bad))["response"]
    assert resp == {"uid": resp["uid"], "allowed": True}


def test_delete_with_null_object_is_allowed_untouched(server):
    sent = review(None, "DELETE", kind="Deployment", old=deployment(burstable_pod()))
    assert sent["request"]["object"] is None
    resp = server.validate(sent)["response"]
    assert resp == {"uid": sent["request"]["uid"], "allowed": True}
    assert server.access_log()[-1]["note"] == "operation not judged"


def test_pod_update_and_subresources_are_not_judged(server):
    resp = server.validate(review(burstable_pod(), "UPDATE", old=burstable_pod()))["response"]
    assert resp["allowed"] is True and "warnings" not in resp
    scale = review(deployment(burstable_pod()), "UPDATE", old=deployment(burstable_pod()))
    scale["request"]["subResource"] = "scale"
    assert server.validate(scale)["response"]["allowed"] is True


def test_unknown_kind_is_allowed_untouched(server):
    cm = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "namespace": "default"},
          "data": {"a": "b"}}
    resp = server.validate(review(cm))["response"]
    assert resp == {"uid": resp["uid"], "allowed": True}
    assert server.access_log()[-1]["note"] == "kind not judged"


def test_replica_pods_do_not_repeat_the_templates_warnings(server):
    noisy = managed_pod(cpu="20", image="registry.k8s.io/pause:3.10", namespace="team-warn")
    assert len(server.validate(review(noisy))["response"]["warnings"]) == 2      # a bare pod: warned
    sent = review(replica_pod(noisy))
    assert "name" not in sent["request"] and "name" not in sent["request"]["object"]["metadata"]
    for _ in range(3):
        resp = server.validate(review(replica_pod(noisy)))["response"]
        assert resp == {"uid": resp["uid"], "allowed": True}
    assert server.access_log()[-1]["name"] == "order-matcher-7d9f8b6c5-*"
    # An error still denies a controller's pod in enforce (its template was allowed elsewhere).
    resp = server.validate(review(replica_pod(burstable_pod())))["response"]
    assert resp["allowed"] is False and resp["status"]["message"].startswith(
        "numaguard: Pod default/order-matcher-7d9f8b6c5-* has 1 error")


def test_suppression_and_scope_as_in_lint(server):
    pod = burstable_pod()
    pod["metadata"]["annotations"] = {"numaguard.io/ignore": "NG103", "numaguard.io/ignore-reason": "canary"}
    assert server.validate(review(pod))["response"]["allowed"] is True
    pod = burstable_pod()
    pod["metadata"]["annotations"] = {"numaguard.io/scope": "unmanaged"}
    assert server.validate(review(pod))["response"]["allowed"] is True
    plain = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "web", "namespace": "default"},
             "spec": {"containers": [{"name": "web", "image": "nginx:1.27"}]}}
    assert server.validate(review(plain))["response"] == {"uid": server.access_log()[-1]["uid"], "allowed": True}


def test_wrong_types_deny_with_the_reason_in_enforce_and_warn_elsewhere(server):
    pod = managed_pod()
    pod["spec"]["containers"][0]["resources"]["limits"]["cpu"] = [4]
    resp = server.validate(review(pod))["response"]
    assert resp["allowed"] is False
    assert resp["status"]["message"].split("\n")[1].startswith("NG002 spec.containers[0].resources.limits.cpu:")
    for ns in ("team-warn", "team-audit"):
        p = copy.deepcopy(pod)
        p["metadata"]["namespace"] = ns
        resp = server.validate(review(p))["response"]
        assert resp["allowed"] is True
        assert [w.split(" ", 2)[:2] for w in resp["warnings"]] == [["NG002", "spec.containers[0].resources.limits.cpu:"]]
    not_an_object = review(managed_pod())
    not_an_object["request"]["object"] = "order-matcher"
    resp = server.validate(not_an_object)["response"]
    assert resp["allowed"] is False and resp["status"]["message"] == (
        "numaguard denied the request: NG002 request.object: is str, not a Pod object; numaguard could not read it")


def test_many_findings_are_capped_with_a_count(server):
    pod = burstable_pod(namespace="team-warn")
    pod["spec"]["containers"] = [
        {"name": f"c{i}", "image": "registry.k8s.io/pause:3.10", "resources": {"requests": {"cpu": "1"}}}
        for i in range(30)]
    warnings = server.validate(review(pod))["response"]["warnings"]
    assert len(warnings) == 12
    assert warnings[-1].startswith("numaguard: ") and warnings[-1].endswith(
        " more findings; run `numaguard lint` on the manifest")
    assert sum(map(len, warnings)) < 3000 and all(len(w) <= 200 for w in warnings)
