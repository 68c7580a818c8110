"""The application factory and the decision rules in-process (Flask's test client): no
global state between applications, the findings cache, warning caps."""
from __future__ import annotations

import io
import json

from numaguard.lint.config import config_from_dict
from numaguard.lint.model import Finding, Severity
from numaguard.webhook import create_app
from numaguard.webhook.decide import Policy, format_warnings
from numaguard.webhook.settings import WebhookSettings
from .reviews import POOL_CONFIG, burstable_pod, managed_pod, review


def _app(mode: str, log: io.StringIO):
    import yaml
    policy = Policy(config_from_dict({**yaml.safe_load(POOL_CONFIG), "webhook": {"mode": mode}}))
    return create_app(WebhookSettings(policy=policy, access_log=log)).test_client()


def test_two_applications_in_one_process_share_nothing():
    log_a, log_b = io.StringIO(), io.StringIO()
    enforce, warn = _app("enforce", log_a), _app("warn", log_b)
    sent = review(burstable_pod())
    a = enforce.post("/validate", json=sent).get_json()["response"]
    b = warn.post("/validate", json=sent).get_json()["response"]
    assert (a["allowed"], b["allowed"]) == (False, True)
    assert [json.loads(line)["decision"] for line in log_a.getvalue().splitlines()] == ["deny"]
    assert [json.loads(line)["decision"] for line in log_b.getvalue().splitlines()] == ["warn"]
    metrics_a = enforce.get("/metrics").get_data(as_text=True)
    assert 'numaguard_webhook_requests_total{decision="deny",kind="Pod",operation="CREATE"} 1.0' in metrics_a
    assert 'decision="warn"' not in metrics_a
    # Without a certificate an application never reports ready.
    assert enforce.get("/readyz").status_code == 503
    assert enforce.get("/healthz").get_json() == {"status": "ok"}


def test_the_bench_route_exists_only_when_asked_for():
    app = create_app(WebhookSettings(access_log=io.StringIO())).test_client()
    assert app.post("/bench/allow", json=review(managed_pod())).status_code == 404
    bench = create_app(WebhookSettings(bench_route=True, access_log=io.StringIO())).test_client()
    sent = review(managed_pod())
    assert bench.post("/bench/allow", json=sent).get_json()["response"] == {
        "uid": sent["request"]["uid"], "allowed": True}


def test_warnings_are_capped_in_count_and_size():
    long = Finding(rule="NG302", name="x", severity=Severity.WARNING, message="word " * 100, remediation="",
                   path="spec.resources")
    out = format_warnings([long] * 20)
    assert len(out) == 12
    # cut at a word's end, within 256
    assert out[0] == "NG302 spec.resources: " + ("word " * 46).rstrip() + "..."
    assert len(out[0]) == 254
    assert out[-1] == "numaguard: 9 more findings; run `numaguard lint` on the manifest"


def test_metrics_label_only_judged_kinds_whatever_a_client_sends():
    """Label values live as long as the process and must encode as UTF-8: a kind a client made
    up (here a lone surrogate, which JSON carries) is counted as "other"."""
    app = _app("enforce", io.StringIO())
    for kind in ("\ud800", "ConfigMap", "x" * 1000):
        sent = review(managed_pod())
        sent["request"]["kind"] = {"group": "", "version": "v1", "kind": kind}
        assert app.post("/validate", json=sent).get_json()["response"]["allowed"] is True
    metrics = app.get("/metrics")
    assert metrics.status_code == 200
    assert 'numaguard_webhook_requests_total{decision="allow",kind="other",operation="CREATE"} 3.0' in (
        metrics.get_data(as_text=True))


def _deep(depth: int) -> object:
    value: object = "leaf"
    for _ in range(depth):
        value = [value]
    return value


def test_an_object_too_deep_to_judge_is_ng002_and_a_recursion_bug_is_an_internal_error(monkeypatch):
    """repr() and the engine recurse: an object that exhausts the stack is refused as NG002 (no
    stored object nests beyond a few dozen levels); the same error on an ordinary object is a
    bug, which the fail-safe answers."""
    from numaguard.webhook import decide as module
    from numaguard.webhook.review import parse_review

    pod = managed_pod()
    pod["spec"]["containers"][0]["env"] = _deep(20_000)
    decision = module.judge(parse_review(review(pod)), Policy(config_from_dict({})))
    assert (decision.allowed, decision.code, decision.error_id) == (False, 403, "")
    assert decision.message == ("numaguard denied the request: NG002 request.object.spec.containers[0].env"
                                + "[0]" * 60 + ": nested more than 64 levels deep, too deep to read; numaguard "
                                "could not judge it")

    def recursing(*args, **kwargs):
        raise RecursionError("maximum recursion depth exceeded")

    monkeypatch.setattr(module, "lint_documents", recursing)
    decision = module.judge(parse_review(review(managed_pod())), Policy(config_from_dict({})))
    assert (decision.allowed, decision.note) == (False, "internal error")
    assert "RecursionError: maximum recursion depth exceeded" in decision.error_trace
