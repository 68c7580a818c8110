"""The declared tiers in the webhook (issue 21 §1), over real HTTPS against a real `numaguard
webhook serve` with no pool declared: a severity the config sets applies as written (NG104 made
an error denies an assumed pod in enforce mode), while an assumed pod's simulated rejection
(NG301 on the config's node) stays a warning, since admission cannot know which node a pod no
pool declares is for; a pod declared by the managed annotation is denied for it as before."""
from __future__ import annotations

import pytest

from .conftest import start_server
from .reviews import managed_pod, review

CONFIG = """\
apiVersion: numaguard.io/v1alpha1
kind: Config
node: builtin:dual-socket-ht
rules: {NG104: error}
webhook: {mode: enforce}
"""


@pytest.fixture(scope="module")
def tiers_server(tmp_path_factory):
    srv = start_server(tmp_path_factory.mktemp("webhook-tiers"), "--workers", "1", "--threads", "2",
                       "--shutdown-delay", "0", config=CONFIG)
    yield srv
    assert srv.stop() == 0


def assumed_pod(cpu: str, name: str, annotations: dict | None = None) -> dict:
    """A Guaranteed pod with pod-level resources that targets no pool: only assumed to be managed."""
    pod = managed_pod()
    pod["metadata"]["name"] = name
    pod["metadata"]["annotations"] = dict(annotations or {})
    spec = pod["spec"]
    del spec["nodeSelector"], spec["tolerations"]
    spec["resources"] = {"requests": {"cpu": cpu, "memory": "8Gi"}, "limits": {"cpu": cpu, "memory": "8Gi"}}
    spec["containers"] = [{"name": "app", "image": "registry.example/app:1"}]
    return pod


def test_an_assumed_pods_simulated_rejection_stays_a_warning(tiers_server):
    resp = tiers_server.validate(review(assumed_pod("48", "wide")))["response"]
    assert resp["allowed"] is True
    # one line of at most 256 characters: the whole fix leaves no room for the message
    assert resp["warnings"] == [
        "NG301: Fix: Even an empty node has no preferred NUMA placement for the pod's 48 CPUs and 8Gi memory: the "
        "largest NUMA node offers 32 CPUs for exclusive use and 119Gi of pinnable memory; shrink the pod to fit one "
        "NUMA node, or use topologyManagerPolicy best-effort (no alignment guarantee)."]
    assert tiers_server.access_log()[-1]["decision"] == "warn"


def test_a_severity_the_config_sets_denies_an_assumed_pod(tiers_server):
    resp = tiers_server.validate(review(assumed_pod("2500m", "fractional")))["response"]
    assert resp["allowed"] is False
    assert resp["status"]["code"] == 403
    lines = resp["status"]["message"].split("\n")
    assert len(lines) == 2
    assert lines[1].startswith("NG104 spec.resources.requests.cpu: pod-level requests.cpu is 2500m, not a whole "
                               "number of CPUs")
    assert tiers_server.access_log()[-1]["decision"] == "deny"


def test_a_pod_the_annotation_declares_is_denied_for_its_simulated_rejection(tiers_server):
    resp = tiers_server.validate(review(assumed_pod("48", "declared", {"numaguard.io/scope": "managed"})))["response"]
    assert resp["allowed"] is False
    assert resp["status"]["message"].split("\n")[1].startswith(
        "NG301 spec.resources.requests.cpu: on an empty node dual-socket-ht (topologyManagerPolicy "
        "single-numa-node, scope pod) the kubelet rejects this pod with TopologyAffinityError")
