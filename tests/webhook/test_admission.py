"""Decisions over real HTTPS: the real `numaguard webhook serve` process, reviews shaped as the
API server sends them (see reviews.py), the server verified under the Service DNS name."""
from __future__ import annotations

import copy

from .reviews import burstable_pod, deployment, managed_pod, replica_pod, review

NG103 = ("NG103 spec.resources: pod QoS is Burstable: pod-level requests.cpu defaulted to 1 from "
         "container 'app' requests.cpu (limits.cpu is 4); set spec.resources.requests.cpu: \"4\"")
NG103_FIX = "Fix: Set spec.resources.requests equal to spec.resources.limits for both cpu and memory, explicitly."
# As a warning: the message shortened so that the rule, the field and the whole fix fit in 256.
NG103_WARNING = ("NG103 spec.resources: pod QoS is Burstable: pod-level requests.cpu defaulted to 1 from "
                 "container 'app' requests.cpu (limits.cpu is 4); set... " + NG103_FIX)


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
    # Rule, field, message shortened to leave room, and the whole fix: at most 256 characters.
    assert resp["warnings"] == [
        "NG112 spec.containers[0].image: container 'app' runs the placeholder image 'registry.k8s.io/pause:3.10': "
        "placement can be checked, performance cannot; use... Fix: Use the real application image (or a load "
        "generator) before drawing performance conclusions.",
        "NG302 spec.resources.requests.cpu: 2 copies of... Fix: 16 CPUs per copy would fit 3 copies (CPUs available "
        "per NUMA node: NUMA 0: 30, NUMA 1: 32); size the pod so whole copies tile a NUMA node, or cap the pods per "
        "node to what the kubelet really admits."]
    assert [len(w) for w in resp["warnings"]] == [255, 253]


def test_numa_fit_at_admission_denies_a_pod_no_numa_node_holds(server):
    resp = server.validate(review(managed_pod(cpu="48")))["response"]
    assert resp["allowed"] is False
    assert resp["status"]["message"].split("\n")[1].startswith(
        "NG301 spec.resources.requests.cpu: on an empty node dual-socket-ht (topologyManagerPolicy "
        "single-numa-node, scope pod) the kubelet rejects this pod with TopologyAffinityError")


def test_warn_mode_namespace_turns_errors_into_warnings(server):
    resp = server.validate(review(burstable_pod(namespace="team-warn")))["response"]
    assert resp["allowed"] is True
    assert resp["warnings"] == [NG103_WARNING]
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
    # Scaling and relabelling a Deployment that already has the error: allowed, the error repeated
    # as a warning, after one that says what becomes of the new pods and what to do.
    resp = server.validate(review(scaled, "UPDATE", old=bad))["response"]
    assert resp["allowed"] is True
    assert resp["warnings"] == [
        "numaguard: allowed because this Deployment already had the 1 error below; the pods its controllers "
        "create are admitted as replicas of a judged Deployment and keep it: fix the template to give them "
        "their NUMA placement",
        "NG103 spec.template.spec.resources: (unchanged by this update) pod QoS is Burstable: pod-level "
        "requests.cpu defaulted to 1 from container 'app'... " + NG103_FIX]
    assert all(len(w) <= 256 for w in resp["warnings"])
    # An update that introduces the error: denied.
    good = deployment(managed_pod())
    resp = server.validate(review(bad, "UPDATE", old=good))["response"]
    assert resp["allowed"] is False
    assert resp["status"]["message"].split("\n")[1].startswith(
        "NG103 spec.template.spec.resources: pod QoS is Burstable")
    # An update that adds an error to one it keeps: denied for the new one; the kept one is a
    # warning, without the word that the update is allowed.
    worse = copy.deepcopy(bad)
    worse["spec"]["template"]["spec"]["containers"][0]["resources"]["limits"] = {"cpu": "8"}
    resp = server.validate(review(worse, "UPDATE", old=bad))["response"]
    assert resp["allowed"] is False
    assert resp["status"]["message"].split("\n")[1].startswith("NG106 spec.template.spec.containers[0].resources")
    assert resp["warnings"] == [
        "NG103 spec.template.spec.resources: (unchanged by this update) pod QoS is Burstable: pod-level "
        "requests.cpu defaulted to 1 from container 'app'... " + NG103_FIX]
    # Rolling back to the good template: allowed, nothing to say.
    resp = server.validate(review(good, "UPDATE", old=bad))["response"]
    assert resp == {"uid": resp["uid"], "allowed": True}


def test_update_does_not_repeat_warnings_or_infos_the_old_object_had(server):
    """NG112 (an info worth a warning) and NG302 (a warning) in both: nothing to say. Added by the
    update: said."""
    noisy = deployment(managed_pod(cpu="20", image="registry.k8s.io/pause:3.10"))
    rescaled = copy.deepcopy(noisy)
    rescaled["spec"]["replicas"] = 7
    resp = server.validate(review(rescaled, "UPDATE", old=noisy))["response"]
    assert resp == {"uid": resp["uid"], "allowed": True}
    quiet = deployment(managed_pod(cpu="20"))
    resp = server.validate(review(noisy, "UPDATE", old=quiet))["response"]
    assert [w.split(" ", 1)[0] for w in resp["warnings"]] == ["NG112"]
    for ns in ("team-warn",):
        old, new = copy.deepcopy(noisy), copy.deepcopy(rescaled)
        old["metadata"]["namespace"] = new["metadata"]["namespace"] = ns
        resp = server.validate(review(new, "UPDATE", old=old))["response"]
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
    # A status or scale write carries the whole workload; one whose template would add an error
    # (and so be denied as a plain UPDATE) is not judged at all.
    good, bad = deployment(managed_pod()), deployment(burstable_pod())
    for sub in ("status", "scale"):
        sent = review(bad, "UPDATE", old=good)
        sent["request"]["subResource"] = sent["request"]["requestSubResource"] = sub
        resp = server.validate(sent)["response"]
        assert resp == {"uid": sent["request"]["uid"], "allowed": True}
        entry = next(e for e in server.access_log() if e.get("uid") == sent["request"]["uid"])
        assert (entry["decision"], entry["note"], entry["rules"]) == ("allow", "operation not judged", [])
    # And a pod's ephemeralcontainers (UPDATE) or binding (CREATE of a Binding) likewise.
    sent = review(burstable_pod())
    sent["request"]["subResource"] = "binding"
    assert server.validate(sent)["response"] == {"uid": sent["request"]["uid"], "allowed": True}


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
    assert warnings[-1] == "numaguard: 20 more findings; run `numaguard lint` on the manifest"
    assert sum(map(len, warnings)) < 3000 and all(len(w) <= 256 for w in warnings)
