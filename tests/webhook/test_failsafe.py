"""Failing safe, over real TLS: the real `numaguard webhook serve`, started with a test plugin on
PYTHONPATH (plugins/raising_rule/sitecustomize.py) whose NG103 raises for one image, as a rule
with a bug would. enforce denies with an error id, warn and audit allow with a warning carrying
it; the log has the id and the traceback, the response never the traceback."""
from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest

from .conftest import start_server
from .reviews import managed_pod, replica_pod, review
from .test_lifecycle import _metric

PLUGIN = Path(__file__).parent / "plugins" / "raising_rule"
TRIGGER_IMAGE = "registry.example/numaguard-test:raise"
ID = r"[0-9a-f]{12}"


@pytest.fixture(scope="module")
def failing(tmp_path_factory):
    path = os.pathsep.join(p for p in (str(PLUGIN), os.environ.get("PYTHONPATH", "")) if p)
    srv = start_server(tmp_path_factory.mktemp("failsafe"), "--workers", "2", "--threads", "4",
                       "--shutdown-delay", "0", env={"PYTHONPATH": path})
    yield srv
    assert srv.stop() == 0


def _raising_pod(namespace: str = "default") -> dict:
    return managed_pod(image=TRIGGER_IMAGE, namespace=namespace)


def test_enforce_denies_with_an_error_id_the_log_repeats_with_the_traceback(failing):
    sent = review(_raising_pod())
    status, _, raw = failing.request("POST", "/validate", json.dumps(sent).encode())
    assert status == 200
    assert b"Traceback" not in raw and b"ZeroDivisionError" not in raw and b"division" not in raw
    resp = json.loads(raw)["response"]
    assert (resp["allowed"], resp["status"]["code"], resp["status"]["reason"]) == (False, 403, "Forbidden")
    match = re.fullmatch(rf"numaguard could not judge this object \(error id ({ID})\): the webhook failed while "
                         r"judging it, and this namespace is in enforce mode\. Retry; if it fails again, give the "
                         r"error id to the cluster's numaguard operators\.", resp["status"]["message"])
    assert match, resp["status"]["message"]
    error_id = match.group(1)
    assert resp["auditAnnotations"] == {"error-id": error_id}
    log = failing.stderr.read_text()
    at = log.index(f"numaguard could not judge Pod default/order-matcher (uid {sent['request']['uid']}, "
                   f"error id {error_id}):\nTraceback (most recent call last):\n")
    assert "ZeroDivisionError: division by zero (the test plugin's rule)" in log[at:]
    entry = next(e for e in failing.access_log() if e.get("uid") == sent["request"]["uid"])
    assert (entry["decision"], entry["note"], entry["errorId"]) == ("deny", "internal error", error_id)


@pytest.mark.parametrize("namespace, mode", [("team-warn", "warn"), ("team-audit", "audit")])
def test_warn_and_audit_allow_with_a_warning_carrying_the_id(failing, namespace, mode):
    resp = failing.validate(review(_raising_pod(namespace)))["response"]
    assert resp["allowed"] is True
    [warning] = resp["warnings"]
    match = re.fullmatch(rf"numaguard could not judge this object \(error id ({ID})\); allowed \({mode} mode\)\. "
                         r"The webhook's log has the details under the error id\.", warning)
    assert match, warning
    assert f"error id {match.group(1)}):\nTraceback" in failing.stderr.read_text()


def test_a_failure_is_not_cached_and_the_server_keeps_judging(failing):
    messages = [failing.validate(review(_raising_pod()))["response"]["status"]["message"] for _ in range(3)]
    assert len({re.search(ID, m).group(0) for m in messages}) == 3
    good = failing.validate(review(managed_pod()))["response"]
    assert good == {"uid": good["uid"], "allowed": True}


def test_a_replica_is_allowed_even_when_judging_it_fails(failing):
    sent = review(replica_pod(_raising_pod()))
    sent["request"]["userInfo"] = {"username": "system:serviceaccount:kube-system:replicaset-controller"}
    resp = failing.validate(sent)["response"]
    assert resp["allowed"] is True and "warnings" not in resp
    assert resp["auditAnnotations"]["replica-of"] == "ReplicaSet/order-matcher-7d9f8b6c5"
    assert re.fullmatch(ID, resp["auditAnnotations"]["error-id"])


def test_internal_errors_are_counted_over_both_workers(failing):
    before = _metric(failing.request("GET", "/metrics")[2].decode(), "numaguard_internal_errors_total")
    for namespace in ("default", "team-warn", "team-audit", "default"):
        failing.validate(review(_raising_pod(namespace)))
    after = _metric(failing.request("GET", "/metrics")[2].decode(), "numaguard_internal_errors_total")
    assert after - before == 4
    assert "Traceback" not in failing.stdout.read_text()          # the access log stays one JSON line each
