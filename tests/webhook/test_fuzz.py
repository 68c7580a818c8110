"""1,000 seeded, mutated AdmissionReviews (mutate.py) to the real `numaguard webhook serve` over
TLS: never a 5xx, never a traceback in the server's log, every answer a well-formed
AdmissionReview or a JSON error, and the server still judges afterwards."""
from __future__ import annotations

import json
import re
from collections import Counter

from numaguard.webhook.decide import JUDGED

from .mutate import base_reviews, mutant
from .reviews import burstable_pod, review

FUZZ_REVIEWS = 1000


def test_a_thousand_mutated_reviews(server):
    bases = base_reviews()
    statuses: Counter = Counter()
    decisions: Counter = Counter()
    conn = server.connection()
    for seed in range(FUZZ_REVIEWS):
        sent = mutant(seed, bases)
        body = json.dumps(sent).encode()
        conn.request("POST", "/validate", body=body, headers={"Content-Type": "application/json"})
        resp = conn.getresponse()
        raw = resp.read()
        statuses[resp.status] += 1
        assert resp.status in (200, 400), (seed, resp.status, raw[:300])
        answer = json.loads(raw)
        if resp.status == 400:
            assert set(answer) == {"error", "message"}, seed
            continue
        assert (answer["apiVersion"], answer["kind"]) == ("admission.k8s.io/v1", "AdmissionReview")
        assert answer["response"]["uid"] == sent["request"]["uid"], seed
        decisions["allowed" if answer["response"]["allowed"] else "denied"] += 1
        if resp.getheader("Connection", "").lower() == "close":
            conn.close()
            conn = server.connection()
    conn.close()
    assert sum(statuses.values()) == FUZZ_REVIEWS and set(statuses) == {200, 400}
    assert decisions["allowed"] and decisions["denied"]
    assert "Traceback" not in server.stderr.read_text()
    assert all(e["status"] < 500 for e in server.access_log())
    resp = server.validate(review(burstable_pod()))["response"]
    assert resp["allowed"] is False and resp["status"]["message"].split("\n")[1].startswith("NG103 spec.resources:")
    status, _, metrics = server.request("GET", "/metrics")
    assert status == 200
    kinds = set(re.findall(r'^numaguard_webhook_requests_total\{[^}]*kind="([^"]*)"', metrics.decode(), re.M))
    assert kinds <= {kind for _, kind in JUDGED} | {"other"} and "other" in kinds
