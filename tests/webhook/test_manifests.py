"""`numaguard webhook manifests`: the ValidatingWebhookConfiguration's matchConditions, evaluated
as the API server evaluates them (CEL, with `cel-expr-python`, which follows the CEL spec's
error rules as cel-go does), must let through every object the engine would give a finding;
they never error; the output is valid Kubernetes 1.37 and is what deploy/webhook ships."""
from __future__ import annotations

import functools
import json
import subprocess

import kubernetes_validate
import pytest
import yaml
from cel_expr_python import cel
from hypothesis import HealthCheck, given, settings, strategies as st

from numaguard.lint.carriers import BUILTIN_CARRIERS
from numaguard.lint.config import config_from_dict, load_config_file
from numaguard.lint.engine import lint_documents
from numaguard.webhook.cache import judged_view
from numaguard.webhook.decide import JUDGED
from numaguard.lint.carriers import CARRIER_RESOURCES as RESOURCES
from numaguard.webhook.manifests import (CONFIGMAP_FILE, VWC_FILE, _Targets, cel_string, match_conditions,
                                         validating_webhook_configuration, webhook_rules)
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


@functools.lru_cache(maxsize=1024)
def _compiled(expression: str):
    """Each condition compiled once (the API server compiles them once per configuration)."""
    return ENV.compile(expression)


def evaluate(conditions: list[dict], obj: dict, operation: str = "CREATE") -> bool:
    """All conditions true (the API server then calls the webhook); an error fails the test."""
    group, _, version = obj["apiVersion"].rpartition("/")
    request = {"kind": {"group": group, "version": version, "kind": obj["kind"]}, "operation": operation,
               "userInfo": {"username": "admin"}, "namespace": "default", "name": "x"}
    results = []
    for condition in conditions:
        value = _compiled(condition["expression"]).eval(data={"object": obj, "request": request})
        assert value.type() == cel.Type.BOOL, f"{condition['name']}: {value.plain_value()}"
        results.append(value.plain_value())
    return all(results)


def finds_anything(obj: dict, config) -> bool:
    """Whether the webhook's judging finds anything (it judges the judged view: no status, which
    the API server resets on CREATE)."""
    return bool(lint_documents([judged_view(obj, config.pod_carriers)], config=config).active)


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


THREE_POOLS = """\
pools:
  - name: cpu
    nodeLabels: {node.example.com/pool: cpu}
  - name: gpu
    taint: {key: gpu.example.com/dedicated, value: "true", effect: NoSchedule}
  - name: edge
    nodeLabels: {node.example.com/zone: far, node.example.com/tier: edge}
    taint: {key: edge.example.com/only, effect: NoSchedule}
  - name: edge-copy
    nodeLabels: {node.example.com/tier: edge, node.example.com/zone: far}
    taint: {key: edge.example.com/only, effect: PreferNoSchedule}
"""


def test_named_pools_give_one_test_per_pool_or_ed():
    """`pools:` (issue 13 §2): a pod spec is sent when it may target any pool; each pool is
    one test (its labels by nodeSelector or required affinity, its taint by toleration), and
    two pools recognised alike are tested once."""
    config = config_from_dict(yaml.safe_load(THREE_POOLS))
    tests = _Targets.of(config.pools).in_spec("s")
    assert len(tests) == 3
    assert tests[1] == ('has(s.tolerations) && type(s.tolerations) == list && s.tolerations.exists(t, type(t) == map '
                        '&& has(t.key) && t.key == "gpu.example.com/dedicated")')
    assert tests[0].startswith('(\n  (has(s.nodeSelector) && type(s.nodeSelector) == map && ("node.example.com/pool" '
                               'in s.nodeSelector && s.nodeSelector["node.example.com/pool"] == "cpu")) ||\n')
    assert tests[2].count("edge.example.com/only") == 1 and 'e.key in ["node.example.com/tier", ' \
        '"node.example.com/zone"]' in tests[2]
    conditions = match_conditions(config)
    required = {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [{"matchExpressions": [
        {"key": "node.example.com/zone", "operator": "In", "values": ["far"]}]}]}}
    for pod, sent in ((_pod(nodeSelector={"node.example.com/pool": "cpu"}), True),
                      (_pod(tolerations=[{"key": "gpu.example.com/dedicated", "operator": "Exists"}]), True),
                      (_pod(affinity={"nodeAffinity": required}), True),
                      (_pod(nodeSelector={"node.example.com/tier": "edge"}), True),
                      (_pod(tolerations=[{"key": "edge.example.com/only", "operator": "Exists"}]), True),
                      (_pod(nodeSelector={"node.example.com/pool": "gpu"}), False),
                      (_pod(tolerations=[{"key": "node.example.com/pool", "operator": "Exists"}]), False),
                      (_pod(), False)):
        assert evaluate(conditions, pod) is sent, pod["spec"]
        assert finds_anything(pod, config) is sent, pod["spec"]
    for where, obj in judged_objects():
        if finds_anything(obj, config):
            assert evaluate(conditions, obj), where


def test_the_examples_two_pools_send_every_object_the_engine_judges():
    config = load_config_file(str(ROOT / "deploy" / "examples" / ".numaguard.yaml"))
    assert [pool.name for pool in config.pools] == ["numa", "edge"]
    conditions = match_conditions(config)
    missed = [where for where, obj in judged_objects() if finds_anything(obj, config) and not evaluate(conditions, obj)]
    assert missed == []
    edge = _pod(nodeSelector={"node.example.com/pool": "edge"})
    assert evaluate(conditions, edge) and finds_anything(edge, config)


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
    kinds = list(BUILTIN_CARRIERS.kinds())
    assert [c["name"] for c in conditions] == [
        f"{group}/{kind.lower()}-may-be-in-scope" if group else f"{kind.lower()}-may-be-in-scope"
        for group, kind in kinds]
    assert conditions[:3] == [c for c in conditions if "/" not in c["name"]]
    assert [c["name"] for c in conditions[7:9]] == ["batch/job-may-be-in-scope", "batch/cronjob-may-be-in-scope"]
    assert len(conditions) == len(kinds) == 38
    assert conditions[8]["expression"].startswith(
        '!(request.kind.group == "batch" && request.kind.kind == "CronJob") ||\n(!(type(object) == map) || '
        '(has(object.metadata) && [object.metadata].exists(m, type(m) == map && has(m.annotations) && ')
    # CEL's parser limits (cel-go and cel-cpp): 100,000 code points per expression; each compiles.
    assert max(len(c["expression"]) for c in conditions) < 15_000
    for condition in conditions:
        ENV.compile(condition["expression"])


def test_past_64_kinds_the_conditions_are_joined_into_64_that_decide_alike():
    extra = "".join(f"- {{apiVersion: k{i}.example.com/v1, kind: Job{i}, paths: [spec.template], resource: job{i}s}}\n"
                    for i in range(40))
    config = config_from_dict(yaml.safe_load("podTemplates:\n" + extra))
    conditions = match_conditions(config)
    assert len(conditions) == 64 and conditions[0]["name"] == "may-be-in-scope-1"
    managed = {"apiVersion": "k39.example.com/v1", "kind": "Job39", "metadata": {"name": "j"},
               "spec": {"template": {"spec": {"resources": {"limits": {"cpu": "1"}}, "containers": []}}}}
    assert evaluate(conditions, managed)
    assert not evaluate(conditions, {**managed, "spec": {"template": {"spec": {"containers": []}}}})
    assert evaluate(conditions, _pod(resources={"limits": {"cpu": "2"}}))


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
    for name in (VWC_FILE, CONFIGMAP_FILE):         # byte for byte: one source of truth
        assert (tmp_path / "out" / name).read_text() == (DEPLOY / name).read_text(), \
            f"deploy/webhook/base/{name} is not what `numaguard webhook manifests` writes"
    assert (tmp_path / "out" / VWC_FILE).read_text().startswith(
        "# Written by `numaguard webhook manifests --config config.yaml`: matchConditions are derived\n")
    stdout = subprocess.run([*NUMAGUARD, "webhook", "manifests", "--config", str(tmp_path / "config.yaml"),
                             "--failure-policy", "Fail"], capture_output=True, text=True, timeout=60)
    docs = list(yaml.safe_load_all(stdout.stdout))
    assert [d["kind"] for d in docs] == ["ValidatingWebhookConfiguration", "ConfigMap"]
    assert docs[0]["webhooks"][0]["failurePolicy"] == "Fail"
    assert docs[1]["data"]["config.yaml"] == shipped["data"]["config.yaml"]


def test_the_rules_name_every_carrier_kind_by_its_resource_in_the_versions_it_serves():
    assert set(RESOURCES) == set(BUILTIN_CARRIERS.kinds())
    rules = webhook_rules(BUILTIN_CARRIERS)
    sent = {(group, version, resource, rule["scope"], tuple(rule["operations"]))
            for rule in rules for group in rule["apiGroups"] for version in rule["apiVersions"]
            for resource in rule["resources"]}
    assert sent == {(group, version, RESOURCES[(group, kind)][0], RESOURCES[(group, kind)][1], tuple(sorted(ops)))
                    for (group, kind), (ops, versions) in JUDGED.items() for version in versions}
    assert [(r["apiGroups"], r["apiVersions"], r["resources"]) for r in rules if r["apiGroups"] == ["ray.io"]] == [
        (["ray.io"], ["v1", "v1alpha1"], ["rayclusters", "rayjobs", "rayservices"]),
        (["ray.io"], ["v1"], ["raycronjobs"])]
    assert [r["scope"] for r in rules if "clustertrainingruntimes" in r["resources"]] == ["Cluster"]


TRAINER = """\
podTemplates:
- group: ml.example.com
  kind: Trainer
  resource: trainers
  paths: ["spec.roles?.*.template", "spec.workers[*].template"]
"""


def _trainer(roles=None, workers=(), annotations=None) -> dict:
    spec: dict = {"workers": list(workers)}
    if roles is not None:
        spec["roles"] = roles
    return {"apiVersion": "ml.example.com/v2", "kind": "Trainer",
            "metadata": {"name": "t", **({"annotations": annotations} if annotations else {})}, "spec": spec}


# Pod-level requests over limits: NG114 wherever the pod is (a validity check).
INVALID = {"requests": {"cpu": "4"}, "limits": {"cpu": "2"}}


def _template(annotations=None, **spec) -> dict:
    return {**({"metadata": {"annotations": annotations}} if annotations else {}),
            "spec": {"containers": [{"name": "c", "image": "registry.example/app:1"}], **spec}}


@pytest.mark.parametrize("obj, sent", [
    (_trainer(), False),                                                           # no template at all
    (_trainer(roles={}), False),
    (_trainer(roles={"a": {"template": _template()}, "b": {"template": _template()}}), False),
    (_trainer(roles={"a": {"template": _template()}, "b": {"template": _template(resources=INVALID)}}), True),
    (_trainer(roles={"b": {"template": _template({"numaguard.io/scope": "managed"})}}), True),
    (_trainer(roles={"b": {}}), True),                                             # a role without its template
    (_trainer(roles={"b": {"template": "x"}}), True),
    (_trainer(roles=["x"]), True),                                                 # roles: not a map
    (_trainer(workers=[_template()]), True),                                       # a worker without its template
    (_trainer(workers=[{"template": _template(nodeSelector={"node.example.com/pool": "numa"})}]), True),
    (_trainer(workers=[{"template": _template()}], annotations={"numaguard.io/scope": "managed"}), True),
    ({"apiVersion": "ml.example.com/v2", "kind": "Trainer", "spec": {"roles": {"a": {"template": _template()}}}}, True),
])
def test_wildcard_paths_of_a_config_carrier_are_walked_as_the_engine_walks_them(obj, sent):
    """`*` over a map, `[*]` over a list, `?`: sent exactly when the engine finds something here."""
    config = config_from_dict({"pool": POOL, **yaml.safe_load(TRAINER)})
    assert evaluate(match_conditions(config), obj) is sent
    assert finds_anything(obj, config) is sent


def test_annotations_on_a_job_template_between_a_jobset_and_its_pods_count():
    """The engine merges the annotations of every template on the way (the JobSet's, the Job
    template's, the pod template's): a Job template annotated managed puts its pods in scope."""
    config = config_from_dict({"pool": POOL})
    pod = _template()
    job_template = {"spec": {"template": pod}}
    jobset = {"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet", "metadata": {"name": "j"},
              "spec": {"replicatedJobs": [{"name": "w", "template": job_template}]}}
    assert not evaluate(match_conditions(config), jobset) and not finds_anything(jobset, config)
    job_template["metadata"] = {"annotations": {"numaguard.io/scope": "managed"}}
    assert evaluate(match_conditions(config), jobset)
    assert [f.rule for f in lint_documents([jobset], config=config).active] == ["NG101"]


def test_a_config_entry_replacing_a_built_in_kind_for_one_version_is_chosen_by_version():
    config = config_from_dict(yaml.safe_load("""\
podTemplates:
- {apiVersion: ray.io/v1alpha1, kind: RayCluster, paths: ["spec.pods[*]"]}
"""))
    odd = {"kind": "RayCluster", "metadata": {"name": "r"},
           "spec": {"pods": [_template(resources=INVALID)], "headGroupSpec": {"template": _template()}}}
    for version, sent in (("v1alpha1", True), ("v1", False)):
        obj = {**odd, "apiVersion": f"ray.io/{version}"}
        assert evaluate(match_conditions(config), obj) is sent
        assert finds_anything(obj, config) is sent


def test_a_config_kind_without_its_resource_name_is_refused_by_manifests(tmp_path):
    (tmp_path / "c.yaml").write_text(TRAINER.replace("  resource: trainers\n", ""))
    run = subprocess.run([*NUMAGUARD, "webhook", "manifests", "--config", str(tmp_path / "c.yaml")],
                         capture_output=True, text=True, timeout=60)
    assert (run.returncode, run.stdout) == (2, "")
    assert run.stderr == ("Error: podTemplates.0: give `resource:` for Trainer (ml.example.com): the name its CRD "
                          "serves it under (spec.names.plural, e.g. trainers), which admission rules route by\n")
    (tmp_path / "c.yaml").write_text(TRAINER)
    run = subprocess.run([*NUMAGUARD, "webhook", "manifests", "--config", str(tmp_path / "c.yaml")],
                         capture_output=True, text=True, timeout=60)
    hook = next(yaml.safe_load_all(run.stdout))["webhooks"][0]
    # podTemplates entries come before the built-in ones (lint/carriers.py), here as there
    assert hook["rules"][0] == {"apiGroups": ["ml.example.com"], "apiVersions": ["*"],
                                "operations": ["CREATE", "UPDATE"], "resources": ["trainers"], "scope": "*"}
    assert hook["matchConditions"][0]["name"] == "ml.example.com/trainer-may-be-in-scope"


def test_the_shipped_configuration_fits_a_client_side_apply():
    """`kubectl apply` keeps the whole object in the last-applied-configuration annotation, and
    the API server takes at most 256 KiB of annotations (apimachinery TotalAnnotationSizeLimitB)."""
    doc = yaml.safe_load((DEPLOY / VWC_FILE).read_text())
    assert len(json.dumps(doc, separators=(",", ":"))) < 256 * 1024 * 0.6


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
POD_RESOURCES = st.sampled_from([None, {}, {"limits": {"cpu": "2", "memory": "1Gi"}},
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
    resources = draw(POD_RESOURCES)
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
