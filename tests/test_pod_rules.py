"""The NG1xx pod rules and pod scope, called directly on hand-built PodTargets, plus a run of
the NG1xx (and NG002 pod) fixtures through the same path the engine takes for one pod:
schema check, scope, then every pod rule."""
from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from numaguard.lint.config import config_from_dict
from numaguard.lint.engine import rule_context
from numaguard.lint.model import ObjectRef, Severity
from numaguard.lint.objects import classify
from numaguard.lint.k8s.pod_schema import pod_schema_violations
from numaguard.lint.rules import pods
from numaguard.lint.model import PoolSettings
from numaguard.lint.objects import PodTarget
from numaguard.lint.rules.base import LintContext, Rule

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "rules"
MARKER = "# numaguard-test-config:"
POD_RULES = {v.id: v for v in vars(pods).values() if isinstance(v, Rule)}
POOL = PoolSettings(node_labels={"node.example.com/pool": "numa"},
                    taint={"key": "node.example.com/pool", "value": "numa", "effect": "NoSchedule"})
CTX = LintContext(pool=POOL)


def target(spec: dict, annotations: dict | None = None) -> PodTarget:
    return PodTarget(ref=ObjectRef("v1", "Pod", "default", "p"), spec=spec, spec_path=("spec",),
                     annotations=annotations or {}, metadata_path=("metadata",))


def run(rule_id: str, spec: dict, ctx: LintContext = CTX):
    return list(POD_RULES[rule_id].check(target(spec), ctx))


def guaranteed(containers, **extra):
    spec = {"resources": {"requests": {"cpu": "4", "memory": "4Gi"},
                          "limits": {"cpu": "4", "memory": "4Gi"}},
            "containers": containers}
    spec.update(extra)
    return spec


APP = {"name": "app", "image": "registry.example.com/app:1"}


# --------------------------------------------------------------------------- catalogue

EXPECTED = {
    "NG101": ("pod-resources-missing", "error"), "NG102": ("pod-resources-unsupported", "error"),
    "NG103": ("pod-not-guaranteed", "error"), "NG104": ("pod-cpu-not-whole", "error"),
    "NG105": ("container-requests-exceed-pod", "error"),
    "NG106": ("container-limit-exceeds-pod", "error"), "NG107": ("no-shared-pool-left", "error"),
    "NG108": ("hugepages-invalid", "error"), "NG109": ("windows-pod", "error"),
    "NG114": ("pod-request-above-limit", "error"),
    "NG110": ("container-placement", "info"), "NG111": ("pool-targeting", "warning"),
    "NG112": ("placeholder-image", "info"), "NG113": ("resize-infeasible", "info"),
}


def test_rules_match_the_catalogue():
    assert {k: (r.name, r.severity.value) for k, r in POD_RULES.items()} == EXPECTED
    for r in POD_RULES.values():
        assert r.target == "pod" and r.title and r.rationale and r.remediation


# --------------------------------------------------------------------------- fixtures

def _fixture_cases():
    for folder in sorted(FIXTURES.iterdir()):
        if not folder.is_dir() or not (folder.name in POD_RULES or folder.name == "NG002"):
            continue
        for f in sorted(folder.glob("*.yaml")):
            if folder.name == "NG002" and not f.name.startswith("bad-pod-"):
                continue
            yield folder.name, f


def _lint_fixture(path: Path) -> set[str]:
    text = path.read_text()
    settings = yaml.safe_load(text.splitlines()[0][len(MARKER):]) if text.startswith(MARKER) else {}
    ctx = rule_context(config_from_dict(settings or {}))
    found: set[str] = set()
    for doc in yaml.safe_load_all(text):
        c = classify(doc, ctx.carriers)
        if c.pod is None:
            found |= {"NG002"} if c.kind == "pod" else set()
            continue
        scope, contexts, _ = pods.pod_placement(c.pod, ctx)
        if scope in ("out", "unmanaged"):
            continue
        if pod_schema_violations(c.pod.spec):
            found.add("NG002")
            continue
        found |= {r.id for r in POD_RULES.values() for pool_ctx in contexts if list(r.check(c.pod, pool_ctx))
                  and (scope != "validity" or r.id in pods.VALIDITY_RULES)}
    return found


def test_every_pod_rule_has_bad_and_good_fixtures():
    for rule_id in POD_RULES:
        names = [f.name for f in (FIXTURES / rule_id).glob("*.yaml")]
        assert any(n.startswith("bad-") for n in names), rule_id
        assert any(n.startswith("good-") for n in names), rule_id


def test_fixtures_include_workload_kinds():
    kinds = {yaml.safe_load(f.read_text().split("\n", 1)[1] if f.read_text().startswith("#")
                            else f.read_text()).get("kind") for _, f in _fixture_cases()}
    assert {"Pod", "Deployment", "StatefulSet", "Job", "CronJob"} <= kinds


@pytest.mark.parametrize("rule_id,path", list(_fixture_cases()), ids=lambda v: getattr(v, "name", v))
def test_fixture(rule_id, path):
    found = _lint_fixture(path)
    if path.name.startswith("bad-"):
        assert rule_id in found
    else:
        assert rule_id not in found


# --------------------------------------------------------------------------- scope

@pytest.mark.parametrize("spec,annotations,ctx,expected", [
    ({"containers": [APP]}, {}, CTX, "out"),
    ({"containers": [APP]}, {"numaguard.io/scope": "managed"}, CTX, "managed"),
    ({"containers": [APP]}, {}, LintContext(scope_all=True), "managed"),
    (guaranteed([APP]), {"numaguard.io/scope": "unmanaged"}, CTX, "unmanaged"),
    ({"containers": [APP]}, {"numaguard.io/scope": "unmanaged"}, LintContext(scope_all=True),
     "unmanaged"),
    # the pool is configured and the pod does not target it: validity checks only
    (guaranteed([APP]), {}, CTX, "validity"),
    # no pool configured: pod-level cpu/memory make it a pool pod by assumption
    (guaranteed([APP]), {}, LintContext(), "assumed"),
    # pod-level pids only: no resource-manager pod
    ({"resources": {"limits": {"pids": "2048"}}, "containers": [APP]}, {}, LintContext(),
     "validity"),
    ({"resources": "x", "containers": [APP]}, {}, LintContext(), "validity"),
    ({"containers": [APP]}, {}, LintContext(), "out"),
    ({"resources": {}, "containers": [APP]}, {}, CTX, "out"),
    ({"nodeSelector": {"node.example.com/pool": "numa"}, "containers": [APP]}, {}, CTX, "managed"),
    ({"nodeSelector": {"node.example.com/pool": "gpu"}, "containers": [APP]}, {}, CTX, "out"),
    ({"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
        "nodeSelectorTerms": [{"matchExpressions": [
            {"key": "node.example.com/pool", "operator": "In", "values": ["numa"]}]}]}}},
      "containers": [APP]}, {}, CTX, "managed"),
    ({"tolerations": [{"key": "node.example.com/pool", "operator": "Equal", "value": "numa",
                       "effect": "NoSchedule"}], "containers": [APP]}, {}, CTX, "managed"),
    ({"tolerations": [{"key": "node.example.com/pool", "operator": "Exists"}],
      "containers": [APP]}, {}, CTX, "managed"),
    ({"tolerations": [{"operator": "Exists"}], "containers": [APP]}, {}, CTX, "out"),
    ({"tolerations": [{"key": "node.example.com/pool", "value": "other"}],
      "containers": [APP]}, {}, CTX, "out"),
])
def test_pod_scope(spec, annotations, ctx, expected):
    assert pods.pod_scope(target(spec, annotations), ctx) == expected


# --------------------------------------------------------------------------- messages

def test_ng101_missing_and_empty():
    (v,) = run("NG101", {"containers": [{**APP, "resources": {"limits": {"cpu": "2",
                                                                          "memory": "1Gi"}}}]})
    assert v.path == ("resources",) and "cpu 2 and memory 1Gi" in v.message
    (v,) = run("NG101", {"resources": {"requests": {}}, "containers": [APP]})
    assert "empty" in v.message
    assert run("NG101", guaranteed([APP])) == []


def test_ng102_unsupported_name_and_claims():
    spec = guaranteed([APP])
    spec["resources"]["limits"]["nvidia.com/gpu"] = "1"
    spec["resources"]["claims"] = [{"name": "gpu"}]
    found = run("NG102", spec)
    assert [v.path for v in found] == [("resources", "limits", "nvidia.com/gpu"),
                                       ("resources", "claims")]
    assert 'Unsupported value: "nvidia.com/gpu"' in found[0].message
    assert "claims cannot be set for Resources at pod-level" in found[1].message


def test_ng103_explains_the_defaulting_trap():
    spec = {"resources": {"limits": {"cpu": "4", "memory": "4Gi"}},
            "containers": [{**APP, "resources": {"requests": {"cpu": "1"}}}]}
    (v,) = run("NG103", spec)
    assert v.message == ("pod QoS is Burstable: pod-level requests.cpu defaulted to 1 from "
                         "container 'app' requests.cpu (limits.cpu is 4); set "
                         "spec.resources.requests.cpu: \"4\"")
    assert v.path == ("resources",)          # requests is not in the manifest


def test_ng103_request_not_equal_limit_points_at_the_request():
    spec = guaranteed([APP])
    spec["resources"]["requests"]["memory"] = "2Gi"
    (v,) = run("NG103", spec)
    assert v.path == ("resources", "requests", "memory") and "2Gi" in v.message


def test_ng114_request_above_limit_is_rejected_by_the_api():
    spec = guaranteed([APP])
    spec["resources"]["requests"]["cpu"] = "8"
    assert [v.message for v in run("NG114", spec)] == [
        "spec.resources.requests[cpu]: Invalid value: \"8\": must be less than or equal to cpu "
        "limit of 4 — the API server rejects the pod; set requests.cpu: \"4\" (or raise limits.cpu)"]
    assert run("NG103", spec) == []             # NG114 says it; the QoS question comes after


def test_ng103_silent_for_guaranteed_and_for_pods_without_pod_resources():
    assert run("NG103", guaranteed([APP])) == []
    assert run("NG103", {"containers": [APP]}) == []


def test_ng104_fractional_cpu():
    spec = guaranteed([APP])
    spec["resources"]["requests"]["cpu"] = spec["resources"]["limits"]["cpu"] = "1500m"
    (v,) = run("NG104", spec)
    assert v.path == ("resources", "requests", "cpu") and 'cpu: "2"' in v.message
    assert run("NG104", guaranteed([APP])) == []


def test_ng105_quotes_the_api_server():
    spec = guaranteed([{**APP, "resources": {"requests": {"cpu": "3"}}}],
                      initContainers=[{"name": "proxy", "image": "p", "restartPolicy": "Always",
                                       "resources": {"requests": {"cpu": "2"}}}])
    (v,) = run("NG105", spec)
    assert v.path == ("resources", "requests", "cpu")
    assert v.message.startswith('spec.resources.requests[cpu]: Invalid value: "4": must be '
                                "greater than or equal to aggregate container requests of 5")


def test_ng105_absent_pod_request_counts_as_zero():
    spec = {"resources": {"requests": {"cpu": "2"}},
            "containers": [{**APP, "resources": {"requests": {"memory": "1Gi"}}}]}
    (v,) = run("NG105", spec)
    assert v.path == ("resources", "requests") and "compares it as 0" in v.message


def test_ng106_container_limit_above_pod_limit():
    spec = guaranteed([{**APP, "resources": {"limits": {"cpu": "8"}}}])
    (v,) = run("NG106", spec)
    assert v.path == ("containers", 0, "resources", "limits", "cpu") and v.container == "app"
    assert ('spec.resources.containers[0][cpu].limits: Invalid value: "8": must be less than '
            "or equal to pod limits of 4") in v.message


def test_ng106_ignores_init_containers_and_sums():
    spec = guaranteed([{**APP, "resources": {"limits": {"cpu": "4"}}},
                       {"name": "b", "image": "b", "resources": {"limits": {"cpu": "4"}}}],
                      initContainers=[{"name": "i", "image": "i",
                                       "resources": {"limits": {"cpu": "6"}}}])
    assert run("NG106", spec) == []


def test_ng107_names_kubelet_message_and_reasons():
    spec = guaranteed([{**APP, "resources": {"limits": {"cpu": "4", "memory": "1Gi"}}},
                       {"name": "metrics", "image": "m"}])
    (v,) = run("NG107", spec)
    assert "leaving no cpus for shared containers" in v.message
    assert "TopologyAffinityError" in v.message and "EmptyPodSharedPoolError" in v.message
    assert "'metrics'" in v.message and v.path == ("resources", "requests", "cpu")


def test_ng108_hugepages():
    spec = guaranteed([APP])
    spec["resources"]["requests"]["hugepages-2Mi"] = "256Mi"
    spec["resources"]["limits"]["hugepages-2Mi"] = "512Mi"
    (v,) = run("NG108", spec)
    assert "must be equal to hugepages-2Mi limit of 512Mi" in v.message
    only = {"resources": {"limits": {"hugepages-2Mi": "512Mi"}}, "containers": [APP]}
    assert any("HugePages require cpu or memory" in v.message for v in run("NG108", only))
    odd = guaranteed([APP])
    odd["resources"]["limits"]["hugepages-1Gi"] = "1536Mi"
    assert any("not positive integer multiple" in v.message for v in run("NG108", odd))


def test_ng108_pod_hugepages_below_container_aggregate():
    spec = guaranteed([{**APP, "resources": {"limits": {"hugepages-2Mi": "1Gi"}}}])
    spec["resources"]["requests"]["hugepages-2Mi"] = "512Mi"
    spec["resources"]["limits"]["hugepages-2Mi"] = "512Mi"
    messages = [v.message for v in run("NG108", spec)]
    assert any("aggregate container limits of 1Gi" in m for m in messages)


def test_ng109_windows():
    (v,) = run("NG109", guaranteed([APP], os={"name": "windows"}))
    assert "may not be set for a windows pod" in v.message
    assert run("NG109", guaranteed([APP], os={"name": "linux"})) == []


def test_ng110_explains_the_split():
    spec = guaranteed([{**APP, "resources": {"limits": {"cpu": "2", "memory": "1Gi"}}},
                       {"name": "helper", "image": "h",
                        "resources": {"requests": {"cpu": "500m"}, "limits": {"cpu": "1"}}}])
    (v,) = run("NG110", spec)
    assert "container 'app' (2 CPUs, memory 1Gi)" in v.message
    assert "container 'helper' (its cpu request (500m) differs from its limit (1))" in v.message
    assert "2 CPUs, memory 3Gi" in v.message                    # the pod's shared pool


def test_ng111_both_directions():
    selects = guaranteed([APP], nodeSelector={"node.example.com/pool": "numa"})
    (v,) = run("NG111", selects)
    assert v.path == ("nodeSelector", "node.example.com/pool") and "Pending" in v.message
    tolerates = guaranteed([APP], tolerations=[{"key": "node.example.com/pool",
                                                "operator": "Exists"}])
    (v,) = run("NG111", tolerates)
    assert v.path == ("tolerations", 0) and "node.example.com/pool: numa" in v.message
    both = guaranteed([APP], nodeSelector={"node.example.com/pool": "numa"},
                      tolerations=[{"key": "node.example.com/pool", "operator": "Exists"}])
    assert run("NG111", both) == []
    assert run("NG111", selects, LintContext()) == []       # no pool configured


@pytest.mark.parametrize("image,command,placeholder", [
    ("registry.k8s.io/pause:3.10", None, True),
    ("k8s.gcr.io/pause", None, True),
    ("gcr.io/google_containers/pause:3.2@sha256:abc", None, True),
    ("busybox", ["sleep", "infinity"], True),
    ("docker.io/library/busybox:1.36", ["sh", "-c", "sleep 3600"], True),
    ("busybox", ["sh", "-c", "make && sleep 1"], False),
    ("busybox", None, False),
    ("registry.example.com/pause-monitor:1", None, False),
])
def test_ng112_placeholder_images(image, command, placeholder):
    c = {"name": "c", "image": image}
    if command:
        c["command"] = command
    assert bool(run("NG112", guaranteed([c]))) is placeholder


def test_ng113_resize_policy_on_guaranteed_pod_only():
    c = {**APP, "resizePolicy": [{"resourceName": "cpu", "restartPolicy": "NotRequired"}]}
    (v,) = run("NG113", guaranteed([c]))
    assert v.path == ("containers", 0, "resizePolicy", 0) and "Infeasible" in v.message
    burstable = guaranteed([c])
    burstable["resources"]["requests"]["cpu"] = "2"
    assert run("NG113", burstable) == []


def test_violation_severity_defaults_to_the_rule():
    found = [(rule_id, v.path, v.severity) for rule_id in POD_RULES for v in run(rule_id, guaranteed([APP]))]
    assert found == [("NG110", ("resources",), None)]     # None: the rule's own severity applies
    from numaguard.lint.engine import lint_documents

    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "annotations":
           {"numaguard.io/scope": "managed"}}, "spec": guaranteed([APP])}
    assert [(f.rule, f.severity) for f in lint_documents([pod]).findings] == [("NG110", Severity.INFO)]
