"""`numaguard webhook manifests`: the ValidatingWebhookConfiguration's matchConditions, evaluated
as the API server evaluates them (CEL, with `cel-expr-python`, which follows the CEL spec's
error rules as cel-go does), must let through every object the engine would give a finding;
they never error; the output is valid Kubernetes 1.37 and is what deploy/webhook ships."""
from __future__ import annotations

import subprocess
from types import SimpleNamespace

import kubernetes_validate
import pytest
import yaml
from cel_expr_python import cel
from hypothesis import HealthCheck, given, settings, strategies as st

from numaguard.lint.config import config_from_dict
from numaguard.lint.engine import lint_documents
from numaguard.lint.model import PoolSettings
from numaguard.lint.objects import api_group
from numaguard.webhook.cache import judged_view
from numaguard.webhook.manifests import (CONFIGMAP_FILE, VWC_FILE, cel_string, match_conditions,
                                         validating_webhook_configuration)
from .conftest import NUMAGUARD
from .judged_objects import ROOT, judged_objects

DEPLOY = ROOT / "deploy" / "webhook" / "base"
POOL = {"nodeLabels": {"node.example.com/pool": "numa", "topology.example.com/numa": "true"},
        "taint": {"key": "dedicated.example.com/numa", "value": "true", "effect": "NoSchedule"}}
CONFIGS = {
    "no config": {},
    "a pool by labels and taint": {"pool": POOL},
    "a pool by taint only": {"pool": {"taint": {"key": "numa-only", "effect": "NoSchedule"}}},
    "the shipped config": yaml.safe_load(yaml.safe_load((DEPLOY / "configmap.yaml").read_text())["data"]["config.yaml"]),
}
ENV = cel.NewEnv(variables={"object": cel.Type.DYN, "request": cel.Type.DYN})


def evaluate(conditions: list[dict], obj: dict, operation: str = "CREATE") -> bool:
    """All conditions true (the API server then calls the webhook); an error fails the test."""
    group = api_group(obj["apiVersion"])
    request = {"kind": {"group": group, "version": "v1", "kind": obj["kind"]}, "operation": operation,
               "userInfo": {"username": "admin"}, "namespace": "default", "name": "x"}
    results = []
    for condition in conditions:
        value = ENV.compile(condition["expression"]).eval(data={"object": obj, "request": request})
        assert value.type() == cel.Type.BOOL, f"{condition['name']}: {value.plain_value()}"
        results.append(value.plain_value())
    return all(results)


def finds_anything(obj: dict, config) -> bool:
    """Whether the webhook's judging finds anything (it judges the judged view: no status, which
    the API server resets on CREATE)."""
    return bool(lint_documents([judged_view(obj)], config=config).active)


@pytest.mark.parametrize("name", CONFIGS)
def test_every_object_the_engine_judges_reaches_the_webhook(name):
    config = config_from_dict(CONFIGS[name])
    conditions = match_conditions(config)
    objects = judged_objects()
    assert len(objects) >= 120
    missed = [where for where, obj in objects if finds_anything(obj, config) and not evaluate(conditions, obj)]
    assert missed == []
    # The conditions narrow: objects that cannot get a finding are not sent.
    assert [where for where, obj in objects if not evaluate(conditions, obj)]


def test_with_two_pools_an_object_either_pool_judges_reaches_the_webhook():
    """`pools:` (issue 13 §2) gives a list; the conditions take it as they take `pool:`."""
    first = PoolSettings(node_labels={"node.example.com/pool": "cpu"})
    second = PoolSettings(taint={"key": "gpu.example.com/dedicated", "value": "true", "effect": "NoSchedule"})
    both = SimpleNamespace(scope_all=False, pools=(first, second))
    conditions = match_conditions(both)
    singles = [config_from_dict({"pool": {"nodeLabels": dict(first.node_labels)}}),
               config_from_dict({"pool": {"taint": dict(second.taint)}})]
    for where, obj in judged_objects():
        if any(finds_anything(obj, config) for config in singles):
            assert evaluate(conditions, obj), where
    gpu_pod = _pod(tolerations=[{"key": "gpu.example.com/dedicated", "operator": "Exists"}])
    cpu_pod = _pod(nodeSelector={"node.example.com/pool": "cpu"})
    assert evaluate(conditions, gpu_pod) and evaluate(conditions, cpu_pod)
    assert not evaluate(conditions, _pod(nodeSelector={"node.example.com/pool": "gpu"}))


def _pod(annotations=None, **spec) -> dict:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", **({"annotations": annotations} if annotations else {})},
            "spec": {"containers": [{"name": "c", "image": "registry.example/app:1"}], **spec}}


def _deployment(pod: dict, annotations=None) -> dict:
    return {"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "d", **({"annotations": annotations} if annotations else {})},
            "spec": {"selector": {"matchLabels": {"app": "d"}},
                     "template": {"metadata": {"labels": {"app": "d"}, **{k: v for k, v in pod["metadata"].items()
                                                                           if k == "annotations"}},
                                  "spec": pod["spec"]}}}


@pytest.mark.parametrize("obj, sent", [
    (_pod(), False),                                                              # nothing numaguard reads
    (_pod(nodeSelector={"kubernetes.io/os": "linux"}), False),
    (_pod(resources={"limits": {"cpu": "2"}}), True),                             # pod-level resources
    (_pod(nodeSelector={"node.example.com/pool": "numa"}), True),                 # a pool label
    (_pod(nodeSelector={"node.example.com/pool": "other"}), False),
    (_pod(tolerations=[{"key": "dedicated.example.com/numa", "operator": "Exists"}]), True),
    (_pod(tolerations=[{"operator": "Exists"}]), False),                          # tolerates all: not the pool
    (_pod(affinity={"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
        {"matchExpressions": [{"key": "topology.example.com/numa", "operator": "Exists"}]}]}}}), True),
    (_pod(annotations={"numaguard.io/scope": "managed"}), True),
    (_pod(annotations={"numaguard.io/scope": "unmanaged"}), False),
    (_deployment(_pod(annotations={"numaguard.io/scope": "managed"})), True),     # on the template
    (_deployment(_pod(), annotations={"numaguard.io/scope": "managed"}), True),   # on the workload
    (_deployment(_pod(resources={"requests": {"memory": "1Gi"}})), True),
    (_deployment(_pod()), False),
])
def test_what_is_sent_with_a_pool(obj, sent):
    conditions = match_conditions(config_from_dict({"pool": POOL}))
    assert evaluate(conditions, obj) is sent


def test_conditions_never_error_on_objects_of_the_wrong_shape():
    """Fields of the wrong type are read as absent; a template that is missing or not a mapping
    is sent (the webhook says what is wrong)."""
    conditions = match_conditions(config_from_dict({"pool": POOL}))
    odd = [_pod(nodeSelector="numa"), _pod(tolerations={"key": "x"}), _pod(tolerations=["x", 3, None]),
           _pod(affinity={"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
               "nodeSelectorTerms": [None, "x", {"matchExpressions": "y"}, {"matchExpressions": [1, {"key": 2}]}]}}}),
           _pod(annotations=["numaguard.io/scope"]), {"apiVersion": "v1", "kind": "Pod", "metadata": "x", "spec": {}}]
    assert [evaluate(conditions, obj) for obj in odd] == [False] * len(odd)
    misshapen = [{"apiVersion": "v1", "kind": "Pod"}, {"apiVersion": "v1", "kind": "Pod", "spec": []},
                 {"apiVersion": "apps/v1", "kind": "Deployment", "spec": {"template": 7}},
                 {"apiVersion": "batch/v1", "kind": "CronJob", "spec": {"jobTemplate": {"spec": {"template": {"spec": None}}}}}]
    assert [evaluate(conditions, obj) for obj in misshapen] == [True] * len(misshapen)


def test_label_keys_and_values_are_cel_string_literals():
    pool = {"nodeLabels": {"example.com/pool-name_1": 'a"b\\c'}}
    conditions = match_conditions(config_from_dict({"pool": pool}))
    assert cel_string('a"b\\c') == '"a\\"b\\\\c"'
    assert evaluate(conditions, _pod(nodeSelector={"example.com/pool-name_1": 'a"b\\c'}))
    assert not evaluate(conditions, _pod(nodeSelector={"example.com/pool-name_1": "abc"}))


def test_scope_all_sends_everything():
    config = config_from_dict({"scope": "all", "pool": POOL})
    assert match_conditions(config) == []
    assert "matchConditions" not in validating_webhook_configuration(config)["webhooks"][0]


def test_one_condition_per_judged_kind_named_and_within_the_api_servers_limits():
    conditions = match_conditions(config_from_dict({"pool": POOL}))
    assert [c["name"] for c in conditions] == [
        "pod-may-be-in-scope", "replicationcontroller-may-be-in-scope", "deployment-may-be-in-scope",
        "statefulset-may-be-in-scope", "daemonset-may-be-in-scope", "replicaset-may-be-in-scope",
        "job-may-be-in-scope", "cronjob-may-be-in-scope"]
    assert len(conditions) <= 64
    assert conditions[7]["expression"].startswith(
        '!(request.kind.group == "batch" && request.kind.kind == "CronJob") ||\n(\n  (has(object.spec) && '
        'type(object.spec) == map && has(object.spec.jobTemplate) && type(object.spec.jobTemplate) == map && '
        'has(object.spec.jobTemplate.spec)')


@pytest.mark.parametrize("name", CONFIGS)
def test_the_configuration_is_valid_kubernetes_1_37(name):
    doc = validating_webhook_configuration(config_from_dict(CONFIGS[name]))
    kubernetes_validate.validate(doc, "1.37.0", strict=True)


def test_the_command_writes_both_files_and_deploy_webhook_ships_them(tmp_path):
    """deploy/webhook/base is `numaguard webhook manifests` of the config its ConfigMap holds."""
    shipped = yaml.safe_load((DEPLOY / CONFIGMAP_FILE).read_text())
    (tmp_path / "config.yaml").write_text(shipped["data"]["config.yaml"])
    run = subprocess.run([*NUMAGUARD, "webhook", "manifests", "--config", str(tmp_path / "config.yaml"),
                          "--out", str(tmp_path / "out")], capture_output=True, text=True, timeout=60)
    assert run.returncode == 0, run.stderr
    assert run.stdout.splitlines() == [f"{tmp_path / 'out' / VWC_FILE}: written",
                                       f"{tmp_path / 'out' / CONFIGMAP_FILE}: written"]
    for name in (VWC_FILE, CONFIGMAP_FILE):
        made = yaml.safe_load((tmp_path / "out" / name).read_text())
        ours = yaml.safe_load((DEPLOY / name).read_text())
        for hook in ours.get("webhooks", []):
            hook["clientConfig"].pop("caBundle", None)       # `certs --patch` adds it
        assert made == ours, f"deploy/webhook/base/{name} is not what `numaguard webhook manifests` writes"
    assert (tmp_path / "out" / VWC_FILE).read_text().startswith(
        "# Written by `numaguard webhook manifests --config config.yaml`: matchConditions are derived\n")
    stdout = subprocess.run([*NUMAGUARD, "webhook", "manifests", "--config", str(tmp_path / "config.yaml"),
                             "--failure-policy", "Fail"], capture_output=True, text=True, timeout=60)
    docs = list(yaml.safe_load_all(stdout.stdout))
    assert [d["kind"] for d in docs] == ["ValidatingWebhookConfiguration", "ConfigMap"]
    assert docs[0]["webhooks"][0]["failurePolicy"] == "Fail"
    assert docs[1]["data"]["config.yaml"] == shipped["data"]["config.yaml"]


def test_an_unusable_config_is_one_line_and_exit_2(tmp_path):
    (tmp_path / "bad.yaml").write_text("pool: {nodeLabels: [a]}\n")
    run = subprocess.run([*NUMAGUARD, "webhook", "manifests", "--config", str(tmp_path / "bad.yaml")],
                         capture_output=True, text=True, timeout=60)
    assert (run.returncode, run.stdout) == (2, "")
    assert run.stderr == f"Error: {tmp_path / 'bad.yaml'}: pool.nodeLabels: a list, expected an object\n"


# -- any pod, not only the ones the repository holds ---------------------------------------------
KEYS = st.sampled_from(["node.example.com/pool", "topology.example.com/numa", "dedicated.example.com/numa",
                        "kubernetes.io/os", "team"])
VALUES = st.sampled_from(["numa", "true", "other", ""])
RESOURCES = st.sampled_from([None, {}, {"limits": {"cpu": "2", "memory": "1Gi"}},
                             {"requests": {"cpu": "2", "memory": "1Gi"}, "limits": {"cpu": "2", "memory": "1Gi"}},
                             {"limits": {"pids": "100"}}, {"requests": {"cpu": "1500m"}}])
TOLERATION = st.fixed_dictionaries({"key": KEYS, "operator": st.sampled_from(["Exists", "Equal"]), "value": VALUES},
                                   optional={"effect": st.sampled_from(["NoSchedule", "NoExecute"])})
EXPRESSION = st.fixed_dictionaries({"key": KEYS, "operator": st.sampled_from(["In", "NotIn", "Exists"]),
                                    "values": st.lists(VALUES, max_size=2)})
SCOPE = st.sampled_from([None, "managed", "unmanaged"])


@st.composite
def workloads(draw) -> dict:
    spec: dict = {"containers": [{"name": "c", "image": draw(st.sampled_from(["registry.example/a:1",
                                                                               "registry.k8s.io/pause:3.10"]))}]}
    resources = draw(RESOURCES)
    if resources is not None:
        spec["resources"] = resources
    if draw(st.booleans()):
        spec["nodeSelector"] = draw(st.dictionaries(KEYS, VALUES, max_size=2))
    if draw(st.booleans()):
        spec["tolerations"] = draw(st.lists(TOLERATION, max_size=2))
    if draw(st.booleans()):
        spec["affinity"] = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
            "nodeSelectorTerms": [{"matchExpressions": draw(st.lists(EXPRESSION, max_size=2))}]}}}
    scope = draw(SCOPE)
    pod = _pod({"numaguard.io/scope": scope} if scope else None, **spec)
    kind = draw(st.sampled_from(["Pod", "Deployment", "CronJob"]))
    if kind == "Pod":
        return pod
    workload_scope = draw(SCOPE)
    deployment = _deployment(pod, {"numaguard.io/scope": workload_scope} if workload_scope else None)
    if kind == "Deployment":
        return deployment
    return {"apiVersion": "batch/v1", "kind": "CronJob", "metadata": deployment["metadata"],
            "spec": {"schedule": "* * * * *", "jobTemplate": {"spec": {"template": deployment["spec"]["template"]}}}}


@pytest.mark.parametrize("name", ["no config", "a pool by labels and taint", "a pool by taint only"])
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(obj=workloads())
def test_any_pod_the_engine_judges_reaches_the_webhook(name, obj):
    config = config_from_dict(CONFIGS[name])
    if finds_anything(obj, config):
        assert evaluate(match_conditions(config), obj)
