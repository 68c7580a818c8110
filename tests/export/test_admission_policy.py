"""`numaguard export admission-policy`: the documents (valid Kubernetes 1.37, bindings by mode),
what users see (messages), UPDATE, bounds, and expressions that never error."""
from __future__ import annotations

import copy
import subprocess

import kubernetes_validate
import pytest
import yaml
from hypothesis import HealthCheck, given, settings, strategies as st

from numaguard.lint.config import config_from_dict
from numaguard.lint.export.admission_policy import ExportError, admission_policy, bindings
from numaguard.lint.carriers import BUILTIN_CARRIERS, CARRIER_RESOURCES

from conftest import guide, numaguard_exe
from .corpus import CONFIGS, POOL
from .policy_eval import evaluate

POOL_CONFIG = config_from_dict({"pool": POOL})


def _policies(config=POOL_CONFIG, **kw) -> dict[str, dict]:
    return {d["metadata"]["name"]: d for d in admission_policy(config, **kw) if d["kind"] == "ValidatingAdmissionPolicy"}


ERRORS, WARNINGS = _policies()["numaguard-errors"], _policies()["numaguard-warnings"]


def messages(obj: dict, *, old: dict | None = None, operation: str = "CREATE", policies=(ERRORS, WARNINGS)) -> list[str]:
    return [m for p in policies for _, m in evaluate(p, obj, old=old, operation=operation).failures]


def pod(spec: dict, annotations: dict | None = None) -> dict:
    meta = {"name": "p", **({"annotations": annotations} if annotations else {})}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta,
            "spec": {"containers": [{"name": "app", "image": "registry.example.com/app:1"}], **spec}}


def deployment(spec: dict, annotations: dict | None = None, replicas: int = 1) -> dict:
    template = {"metadata": {"labels": {"app": "d"}}, "spec": {"containers": [{"name": "app", "image": "registry.example.com/app:1"}], **spec}}
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d", **({"annotations": annotations} if annotations else {})},
            "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": "d"}}, "template": template}}


GOOD = {"nodeSelector": {"node.example.com/pool": "numa"},
        "tolerations": [{"key": "dedicated.example.com/numa", "operator": "Equal", "value": "true", "effect": "NoSchedule"}],
        "resources": {"requests": {"cpu": "4", "memory": "8Gi"}, "limits": {"cpu": "4", "memory": "8Gi"}}}


# -- the documents -------------------------------------------------------------------------------
@pytest.mark.parametrize("name", CONFIGS)
@pytest.mark.parametrize("mode", ["enforce", "warn", "audit"])
def test_every_document_is_valid_kubernetes_1_37(name, mode):
    config = config_from_dict({**CONFIGS[name], "webhook": {"namespaces": {"dev": "warn", "lab": "audit"}}})
    documents = admission_policy(config, mode=mode, failure_policy="Fail")
    for doc in documents:
        kubernetes_validate.validate(doc, "1.37.0", strict=True)
    assert [d["kind"] for d in documents].count("ValidatingAdmissionPolicy") == 2


def test_the_policies_match_every_carrier_kind_pods_on_create_workloads_on_create_and_update():
    rules = ERRORS["spec"]["matchConstraints"]["resourceRules"]
    assert rules[0] == {"apiGroups": [""], "apiVersions": ["v1"], "operations": ["CREATE"], "resources": ["pods"], "scope": "*"}
    assert rules[2] == {"apiGroups": ["apps"], "apiVersions": ["v1"], "operations": ["CREATE", "UPDATE"],
                        "resources": ["deployments", "replicasets", "statefulsets", "daemonsets"], "scope": "*"}
    listed = {(r["apiGroups"][0], res) for r in rules for res in r["resources"]}
    assert listed == {(group, resource) for (group, _), (resource, _) in CARRIER_RESOURCES.items()}
    assert len(listed) == 38
    assert WARNINGS["spec"]["matchConstraints"] == ERRORS["spec"]["matchConstraints"]


def test_resources_are_the_ones_the_crds_serve_and_a_config_kind_must_name_its_own():
    config = config_from_dict({"podTemplates": [{"apiVersion": "training.example.com/v1", "kind": "TrainingJob",
                                                 "paths": ["spec.template"]}]})
    with pytest.raises(ExportError) as e:
        admission_policy(config)
    assert str(e.value) == ("podTemplates.0: give `resource:` for TrainingJob (training.example.com): the "
                            "name its CRD serves it under (spec.names.plural, e.g. trainingjobs), which admission "
                            "rules route by")
    named = config_from_dict({"podTemplates": [{"apiVersion": "training.example.com/v1", "kind": "TrainingJob",
                                                "resource": "trainjobz", "paths": ["spec.template"]}]})
    rules = admission_policy(named)[0]["spec"]["matchConstraints"]["resourceRules"]
    assert rules[0] == {"apiGroups": ["training.example.com"], "apiVersions": ["v1"],
                        "operations": ["CREATE", "UPDATE"], "resources": ["trainjobz"], "scope": "*"}


@pytest.mark.parametrize("mode, errors, warnings", [
    ("enforce", ["Deny"], ["Warn"]), ("warn", ["Warn"], ["Warn"]), ("audit", ["Audit"], ["Audit"])])
def test_validation_actions_by_mode(mode, errors, warnings):
    docs = admission_policy(POOL_CONFIG, mode=mode)
    made = {d["metadata"]["name"]: d["spec"]["validationActions"] for d in docs if d["kind"] == "ValidatingAdmissionPolicyBinding"}
    assert made == {"numaguard-errors": errors, "numaguard-warnings": warnings}


def test_the_config_mode_and_namespace_modes_make_one_binding_per_mode():
    config = config_from_dict({"pool": POOL, "webhook": {"mode": "warn", "namespaces": {"prod": "enforce", "dev": "warn", "lab": "audit", "ci": "audit"}}})
    made = bindings("numaguard-errors", True, config.webhook_mode, config.webhook_namespace_modes)
    assert [(b["metadata"]["name"], b["spec"]["validationActions"],
             b["spec"]["matchResources"]["namespaceSelector"]["matchExpressions"][0]) for b in made] == [
        ("numaguard-errors", ["Warn"], {"key": "kubernetes.io/metadata.name", "operator": "NotIn",
                                        "values": ["ci", "kube-system", "lab", "prod"]}),
        ("numaguard-errors-enforce", ["Deny"], {"key": "kubernetes.io/metadata.name", "operator": "In", "values": ["prod"]}),
        ("numaguard-errors-audit", ["Audit"], {"key": "kubernetes.io/metadata.name", "operator": "In", "values": ["ci", "lab"]}),
    ]


def test_severities_from_the_config_move_or_drop_rules():
    default = [v["messageExpression"][1:6] for v in ERRORS["spec"]["validations"]]
    assert default == ["NG101", "NG103", "NG104", "NG105", "NG106", "NG107", "NG114"]
    assert [v["messageExpression"][1:6] for v in WARNINGS["spec"]["validations"]] == ["NG111", "numag"]
    moved = _policies(config_from_dict({"pool": POOL, "rules": {"NG111": "error", "NG104": "warning", "NG107": "off"}}))
    assert [v["messageExpression"][1:6] for v in moved["numaguard-errors"]["spec"]["validations"]] == [
        "NG101", "NG103", "NG105", "NG106", "NG111", "NG114"]
    assert [v["messageExpression"][1:6] for v in moved["numaguard-warnings"]["spec"]["validations"]] == ["NG104", "numag"]


def test_the_warnings_policy_carries_no_quantity_arithmetic():
    names = [v["name"] for v in WARNINGS["spec"]["variables"]]
    assert "levels" not in names and "pods" not in names and "ng111" in names and "beyond" in names


def test_the_pool_is_in_the_match_condition_and_scope_all_has_none():
    (condition,) = ERRORS["spec"]["matchConditions"]
    assert condition["name"] == "pod-may-be-in-scope"
    assert '"node.example.com/pool" in t.v.nodeSelector' in condition["expression"]
    assert "matchConditions" not in _policies(config_from_dict({"scope": "all"}))["numaguard-errors"]["spec"]
    outside = pod({"nodeSelector": {"kubernetes.io/os": "linux"}})
    assert evaluate(ERRORS, outside).applies is False
    assert evaluate(ERRORS, pod({}, {"numaguard.io/scope": "managed"})).applies is True
    assert evaluate(ERRORS, pod({"resources": {"limits": {"cpu": "1"}}}, {"numaguard.io/scope": "unmanaged"})).applies is False


def test_every_expression_stays_within_cel_parser_limits():
    """cel-go's parser takes expressions of up to 100,000 code points (ParserExpressionSizeLimit's
    default, which the API server keeps); cel-expr-python nests at most 32 levels, so every
    expression here compiled within that."""
    for policy in (ERRORS, WARNINGS):
        spec = policy["spec"]
        texts = [v["expression"] for v in spec["variables"]] + [c["expression"] for c in spec.get("matchConditions", [])]
        texts += [v[k] for v in spec["validations"] for k in ("expression", "messageExpression")]
        assert max(len(t) for t in texts) < 100_000


# -- what users see ------------------------------------------------------------------------------
@pytest.mark.parametrize("spec, expected", [
    ({"nodeSelector": {"node.example.com/pool": "numa"}, "tolerations": GOOD["tolerations"]},
     ["NG101 spec.resources: the pod has no pod-level cpu, memory or hugepages requests or limits: the pod-scope "
      "resource managers will not treat it as one unit; add spec.resources with requests equal to limits for cpu "
      "(whole CPUs) and memory"]),
    ({**GOOD, "resources": {"limits": {"cpu": "4", "memory": "4Gi"}}, "containers": [
        {"name": "app", "image": "a", "resources": {"requests": {"cpu": "1"}}}]},
     ["NG103 spec.resources: pod QoS is not Guaranteed after defaulting: requests cpu 1, memory 4Gi; limits cpu 4, "
      "memory 4Gi; set spec.resources requests equal to limits for both cpu and memory"]),
    ({**GOOD, "resources": {"requests": {"cpu": "2500m", "memory": "1Gi"}, "limits": {"cpu": "2500m", "memory": "1Gi"}}},
     ["NG104 spec.resources.requests.cpu: pod-level cpu is 2500m, not a whole number of CPUs: no exclusive CPU block "
      "is reserved; use cpu: 3"]),
    ({**GOOD, "containers": [{"name": "app", "image": "a", "resources": {"requests": {"cpu": "6", "memory": "1Gi"}}}]},
     ["NG105 spec.resources.requests.cpu: 4 is below the containers' aggregate requests of 6; the API server rejects the pod"]),
    ({**GOOD, "containers": [{"name": "app", "image": "a", "resources": {"limits": {"memory": "16Gi"}, "requests": {"memory": "1Gi"}}}]},
     ["NG106 spec.containers: container 'app' limits memory 16Gi above the pod limit of 8Gi; the API server rejects the pod"]),
    ({**GOOD, "containers": [
        {"name": "app", "image": "a", "resources": {"requests": {"cpu": "4", "memory": "2Gi"}, "limits": {"cpu": "4", "memory": "2Gi"}}},
        {"name": "log", "image": "b"}]},
     ["NG107 spec.resources: the kubelet rejects the pod: the exclusive containers' slices use the whole pod budget "
      "(cpu 4, memory 8Gi) while others need its shared pool; raise the pod budget or let an exclusive container share"]),
    ({**GOOD, "resources": {"requests": {"cpu": "4", "memory": "8Gi"}, "limits": {"cpu": "2", "memory": "8Gi"}}},
     ["NG114 spec.resources.requests.cpu: 4 is above the pod limit of 2; the API server rejects the pod"]),
    ({**GOOD, "tolerations": []},
     ["NG111 spec: the pod selects the managed pool but does not tolerate its taint dedicated.example.com/numa=true:NoSchedule: "
      "it will stay Pending; add a toleration {key: dedicated.example.com/numa, operator: Equal, value: true, effect: NoSchedule}"]),
    ({**GOOD, "nodeSelector": {}},
     ["NG111 spec.tolerations: the pod tolerates the taint of the managed pool but does not select its nodes: it may be "
      "scheduled on a node without the pod-level resource managers; add nodeSelector {node.example.com/pool: numa}"]),
])
def test_each_rule_says_what_is_wrong_where_starting_with_its_id(spec, expected):
    assert messages(pod(spec)) == expected


def test_a_good_pod_passes_and_suppressions_are_honoured():
    assert messages(pod(GOOD)) == []
    bad = {**GOOD, "resources": {"requests": {"cpu": "2500m", "memory": "1Gi"}, "limits": {"cpu": "2500m", "memory": "1Gi"}}}
    assert messages(pod(bad, {"numaguard.io/ignore": "ng104"})) == []
    assert messages(deployment(bad, {"numaguard.io/ignore": "all"})) == []
    assert len(messages(deployment(bad, {"numaguard.io/ignore": "NG103"}))) == 1


def test_a_workload_with_several_bad_templates_names_the_first_and_counts_the_rest():
    bad = {**GOOD, "resources": {"requests": {"cpu": "1500m", "memory": "1Gi"}, "limits": {"cpu": "1500m", "memory": "1Gi"}}}
    template = {"spec": {"template": {"spec": {"containers": [{"name": "c", "image": "a"}], **bad}}}}
    jobset = {"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet", "metadata": {"name": "j"},
              "spec": {"replicatedJobs": [{"name": n, "template": template} for n in ("a", "b", "c")]}}
    assert messages(jobset) == [
        "NG104 spec.replicatedJobs[0].template.spec.template.spec.resources.requests.cpu: pod-level cpu is 1500m, not a "
        "whole number of CPUs: no exclusive CPU block is reserved; use cpu: 2 (and 2 more pod templates)"]


# -- UPDATE --------------------------------------------------------------------------------------
BURSTABLE = {**GOOD, "resources": {"limits": {"cpu": "4", "memory": "4Gi"}},
             "containers": [{"name": "app", "image": "a", "resources": {"requests": {"cpu": "1"}}}]}


def test_an_update_keeps_old_findings_and_denies_new_ones():
    old = deployment(BURSTABLE)
    assert [m[:5] for m in messages(old)] == ["NG103"]
    scaled = deployment(BURSTABLE, replicas=5)
    assert messages(scaled, old=old, operation="UPDATE") == []          # scale, relabel, roll back
    worse = deployment({**BURSTABLE, "containers": [{"name": "app", "image": "a", "resources": {"requests": {"cpu": "1500m"}}}]})
    assert [m[:5] for m in messages(worse, old=old, operation="UPDATE")] == ["NG104"]
    assert [m[:5] for m in messages(old, old=deployment(GOOD), operation="UPDATE")] == ["NG103"]


# -- bounds --------------------------------------------------------------------------------------
NOT_JUDGED = ("not judged by the admission policy, which judges pod templates of at most 32 init and 32 app containers, "
              "16 names per requests or limits, 64 tolerations, 16 node affinity terms of 16 expressions of 64 values, "
              "32 templates per list, quantities below 2^52 units to stay within the API server's CEL cost limits; judge it with "
              "numaguard lint or the webhook")


@pytest.mark.parametrize("obj, where", [
    (pod({**GOOD, "containers": [{"name": f"c{i}", "image": "a"} for i in range(33)]}), "spec"),
    (pod({**GOOD, "tolerations": [{"key": f"k{i}", "operator": "Exists"} for i in range(65)]}), "spec"),
    (pod({**GOOD, "resources": {"requests": {"cpu": "4", "memory": "8Pi"}, "limits": {"cpu": "4", "memory": "8Pi"}}}), "spec"),
    ({"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet", "metadata": {"name": "j"},
      "spec": {"replicatedJobs": [{"name": f"r{i}", "template": {"spec": {"template": {"spec": GOOD}}}} for i in range(33)]}},
     "spec.replicatedJobs[*]"),
])
def test_a_template_beyond_the_bounds_is_reported_not_judged(obj, where):
    assert messages(obj) == [f"numaguard: {where}: {NOT_JUDGED}"]


HALF_CPU = {"requests": {"cpu": "2500m", "memory": "1Gi"}, "limits": {"cpu": "2500m", "memory": "1Gi"}}


@pytest.mark.parametrize("obj, where", [
    (pod({**GOOD, "resources": HALF_CPU, "containers": [{"name": f"c{i}", "image": "a"} for i in range(32)],
          "initContainers": [{"name": f"i{i}", "image": "a"} for i in range(32)]}), "spec"),
    (pod({**GOOD, "resources": HALF_CPU, "tolerations": GOOD["tolerations"] + [
        {"key": f"k{i}", "operator": "Exists"} for i in range(63)]}), "spec"),
    (pod({**GOOD, "resources": HALF_CPU, "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
        "nodeSelectorTerms": [{"matchExpressions": [{"key": f"k{j}", "operator": "In", "values": [str(v) for v in range(64)]}
                                                    for j in range(16)]} for _ in range(16)]}}}}), "spec"),
    ({"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet", "metadata": {"name": "j"},
      "spec": {"replicatedJobs": [{"name": f"r{i}", "template": {"spec": {"template": {"spec": {
          **pod(GOOD)["spec"], **({"resources": HALF_CPU} if i == 31 else {})}}}}} for i in range(32)]}},
     "spec.replicatedJobs[31].template.spec.template.spec"),
])
def test_a_template_at_the_bounds_is_judged(obj, where):
    assert messages(obj) == [f"NG104 {where}.resources.requests.cpu: pod-level cpu is 2500m, not a whole number of "
                             "CPUs: no exclusive CPU block is reserved; use cpu: 3"]


# -- never an error ------------------------------------------------------------------------------
ODD = [None, "x", 7, 1.5, True, [], {}, [None], {"a": None}, -1, "-1", "1e400", "NaN", "12Ki", 1e300]


def _mutations(obj: dict) -> list:
    """Every place of the object, each replaced by each odd value."""
    out = []

    def walk(node, path):
        if isinstance(node, dict):
            for k in list(node):
                out.append(path + (k,))
                walk(node[k], path + (k,))
        elif isinstance(node, list):
            for i, item in enumerate(node):
                out.append(path + (i,))
                walk(item, path + (i,))
    walk(obj, ())
    return [p for p in out if p not in (("apiVersion",), ("kind",))]    # what the API server routed on


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_expressions_never_error_whatever_the_object(data):
    base = data.draw(st.sampled_from([pod(BURSTABLE), deployment(GOOD), pod({**GOOD, "initContainers": [
        {"name": "i", "image": "a", "restartPolicy": "Always", "resources": {"limits": {"cpu": "1", "memory": "1Gi"}}}]})]))
    obj = copy.deepcopy(base)
    for _ in range(data.draw(st.integers(1, 3))):
        places = _mutations(obj)
        if not places:
            break
        path = data.draw(st.sampled_from(places))
        holder = obj
        for key in path[:-1]:
            holder = holder[key]
        # a copy: the odd values are shared, and a later mutation inside one must change
        # neither ODD nor put a list inside itself (a cycle the CEL runtime recurses into)
        holder[path[-1]] = copy.deepcopy(data.draw(st.sampled_from(ODD)))
    for policy in (ERRORS, WARNINGS):
        evaluate(policy, obj)                   # raises on any CEL error
        evaluate(policy, obj, old=base, operation="UPDATE")


# -- the command ---------------------------------------------------------------------------------
def test_the_command_writes_the_documents(tmp_path):
    (tmp_path / "config.yaml").write_text("pool:\n  nodeLabels: {node.example.com/pool: numa}\nwebhook: {mode: warn}\n")
    run = subprocess.run([numaguard_exe(), "export", "admission-policy", "--config", str(tmp_path / "config.yaml")],
                         capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    assert run.stdout.startswith(f"# Written by `numaguard export admission-policy --config {tmp_path / 'config.yaml'}`")
    docs = list(yaml.safe_load_all(run.stdout))
    assert [(d["kind"], d["metadata"]["name"]) for d in docs] == [
        ("ValidatingAdmissionPolicy", "numaguard-errors"), ("ValidatingAdmissionPolicyBinding", "numaguard-errors"),
        ("ValidatingAdmissionPolicy", "numaguard-warnings"), ("ValidatingAdmissionPolicyBinding", "numaguard-warnings")]
    assert docs[1]["spec"]["validationActions"] == ["Warn"]
    out = tmp_path / "policy.yaml"
    run = subprocess.run([numaguard_exe(), "export", "admission-policy", "--config", str(tmp_path / "config.yaml"),
                          "--mode", "enforce", "--failure-policy", "Fail", "-o", str(out)],
                         capture_output=True, text=True, timeout=120)
    assert (run.returncode, run.stdout, run.stderr) == (0, f"{out}: written\n", "")
    written = list(yaml.safe_load_all(out.read_text()))
    assert (written[0]["spec"]["failurePolicy"], written[1]["spec"]["validationActions"]) == ("Fail", ["Deny"])


def test_an_unusable_config_is_one_line_and_exit_2(tmp_path):
    (tmp_path / "bad.yaml").write_text("pool: {nodeLabels: [a]}\n")
    run = subprocess.run([numaguard_exe(), "export", "admission-policy", "--config", str(tmp_path / "bad.yaml")],
                         capture_output=True, text=True, timeout=120)
    assert (run.returncode, run.stdout) == (2, "")
    assert run.stderr == f"Error: {tmp_path / 'bad.yaml'}: pool.nodeLabels: a list, expected an object\n"


# -- pools and carriers from main's config (issue 13 pools, podTemplates) -----------------------
TWO_POOLS = config_from_dict(CONFIGS["two pools"])


def test_each_pool_is_named_in_the_finding_of_the_pool_a_pod_targets():
    edge_only = {**GOOD, "nodeSelector": {"node.example.com/pool": "edge"},
                 "tolerations": [{"key": "node.example.com/pool", "operator": "Equal", "value": "numa"}]}
    assert messages(pod(edge_only), policies=tuple(_policies(TWO_POOLS).values())) == [
        "NG111 spec: the pod selects pool edge but does not tolerate its taint node.example.com/pool=edge:NoSchedule: it "
        "will stay Pending; add a toleration {key: node.example.com/pool, operator: Equal, value: edge, effect: NoSchedule}"]
    # nodeSelector pool: edge excludes the numa pool, whose taint the pod tolerates: only edge is targeted
    both = {**edge_only, "tolerations": [{"key": "node.example.com/pool", "operator": "Exists"}]}
    assert messages(pod(both), policies=tuple(_policies(TWO_POOLS).values())) == []


def test_a_pod_only_assumed_to_be_managed_is_warned_not_denied():
    policies = _policies(config_from_dict({}))
    bad = {"resources": {"requests": {"cpu": "2500m", "memory": "1Gi"}, "limits": {"cpu": "2500m", "memory": "1Gi"}}}
    assert messages(pod(bad), policies=(policies["numaguard-errors"],)) == []
    assert messages(pod(bad), policies=(policies["numaguard-warnings"],)) == [
        "NG104 spec.resources.requests.cpu: pod-level cpu is 2500m, not a whole number of CPUs: no exclusive CPU block "
        "is reserved; use cpu: 3"]
    over = {"resources": {"requests": {"cpu": "4", "memory": "1Gi"}, "limits": {"cpu": "2", "memory": "1Gi"}}}
    assert [m[:5] for m in messages(pod(over), policies=(policies["numaguard-errors"],))] == ["NG114"]   # validity: still denied
    assert [m[:5] for m in messages(pod(bad, {"numaguard.io/scope": "managed"}), policies=(policies["numaguard-errors"],))] == ["NG104"]


def test_a_severity_the_config_sets_applies_to_a_template_only_assumed_to_be_managed():
    """Issue 21 §1, as the engine does (tests/test_declared_tiers.py): with no pool, `rules:
    {NG104: error}` denies an assumed pod's fractional CPUs; NG103, which the config does not
    name, stays in the warnings policy; `NG114: warning` moves a validity rule there."""
    policies = _policies(config_from_dict({"rules": {"NG104": "error", "NG114": "warning"}}))
    errors, warnings = policies["numaguard-errors"], policies["numaguard-warnings"]
    assert [v["messageExpression"][1:6] for v in errors["spec"]["validations"]] == [
        "NG101", "NG103", "NG104", "NG105", "NG106", "NG107"]
    # without the config's NG104 it would be in both, denied for declared templates and warned
    # for assumed ones (NG101, NG103, NG107 still are)
    assert [v["messageExpression"][1:6] for v in warnings["spec"]["validations"]] == [
        "NG101", "NG103", "NG107", "NG114", "numag"]
    bad = {"resources": {"requests": {"cpu": "2500m", "memory": "512Mi"}, "limits": {"cpu": "2500m", "memory": "1Gi"}}}
    assert messages(pod(bad), policies=(errors,)) == [
        "NG104 spec.resources.requests.cpu: pod-level cpu is 2500m, not a whole number of CPUs: no exclusive CPU block "
        "is reserved; use cpu: 3"]
    assert [m[:5] for m in messages(pod(bad), policies=(warnings,))] == ["NG103"]
    over = {"resources": {"requests": {"cpu": "4", "memory": "1Gi"}, "limits": {"cpu": "2", "memory": "1Gi"}}}
    assert messages(pod(over), policies=(errors,)) == []
    assert [m[:5] for m in messages(pod(over), policies=(warnings,))] == ["NG114"]
    # a declared pod (the annotation) gets NG103 at its default severity: an error
    assert [m[:5] for m in messages(pod(bad, {"numaguard.io/scope": "managed"}), policies=(errors,))] == [
        "NG103", "NG104"]


def test_a_kind_of_the_config_is_matched_by_its_group_and_resource_and_judged():
    config = config_from_dict(CONFIGS["three pools and a custom kind"])
    policies = _policies(config)
    rules = policies["numaguard-errors"]["spec"]["matchConstraints"]["resourceRules"]
    assert rules[0] == {"apiGroups": ["training.example.com"], "apiVersions": ["v1"], "operations": ["CREATE", "UPDATE"],
                        "resources": ["trainingjobs"], "scope": "*"}
    assert len({(r["apiGroups"][0], res) for r in rules for res in r["resources"]}) == 39
    good = pod(GOOD)["spec"]
    spec = {**good, "resources": {"requests": {"cpu": "1500m", "memory": "1Gi"}, "limits": {"cpu": "1500m", "memory": "1Gi"}}}
    job = {"apiVersion": "training.example.com/v1", "kind": "TrainingJob", "metadata": {"name": "t"},
           "spec": {"roles": {"ps": {"template": {"spec": good}}, "chief": {"template": {"spec": spec}}},
                    "workers": [{"template": {"spec": good}}, {"template": {"spec": spec}}]}}
    assert messages(job, policies=(policies["numaguard-errors"],)) == [
        "NG104 spec.roles.chief.template.spec.resources.requests.cpu: pod-level cpu is 1500m, not a whole number of CPUs: "
        "no exclusive CPU block is reserved; use cpu: 2 (and 1 more pod templates)"]


# -- deploy/README.md ----------------------------------------------------------------------------
def test_every_pod_rule_is_covered_or_has_its_reason_in_readme():
    from numaguard.lint.export.pod_rules_cel import BOUNDS, COVERED, NOT_COVERED
    from numaguard.lint.rules.registry import all_rules
    from .corpus import ROOT

    pod_rules = {r.id for r in all_rules() if r.target == "pod"} | {"NG002"}
    assert set(COVERED) | set(NOT_COVERED) == pod_rules and not set(COVERED) & set(NOT_COVERED)
    readme = guide("deploy/README.md")
    section = readme.split("### What the policy covers\n", 1)[1].split("\n### ", 1)[0]
    rows = [line for line in section.splitlines() if line.startswith("| NG")]
    assert [row.split(" | ")[0][2:] for row in rows] == ["NG101", "NG103", "NG104", "NG105, NG106", "NG107", "NG111",
                                                        "NG114", *NOT_COVERED]
    assert rows[7:] == [f"| {rid} | no: {why} |" for rid, why in NOT_COVERED.items()]
    b = BOUNDS
    assert (f"at most {b.containers} init and {b.containers} app containers, {b.resources} names per requests or "
            f"limits, {b.tolerations} tolerations, {b.terms} node affinity terms of {b.terms} expressions of "
            f"{b.values} values") in " ".join(readme.split())
