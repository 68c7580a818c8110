"""The admission policy and the engine agree: for every object of the corpus (rule fixtures,
README's examples, deploy/examples/workloads, the workload CRD fixtures, the real-repository
fixtures) and for generated pods, the policy's CEL, evaluated as the API server evaluates it
(policy_eval), finds exactly the covered rules `lint_documents` finds, template by template.

Templates numaguard reports as NG002 are left out of the comparison: the API server (or the
kind's schema) refuses them before any policy runs, and the policy judges none of them."""
from __future__ import annotations

import re
from collections import Counter

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from numaguard.lint.config import config_from_dict
from numaguard.lint.engine import lint_documents
from numaguard.lint.export.admission_policy import admission_policy
from numaguard.lint.export.pod_rules_cel import COVERED
from numaguard.lint.model import Severity, dotted_path
from numaguard.lint.objects import classify

from .corpus import CONFIGS, fixture_objects
from .policy_eval import evaluate

_POLICIES: dict[str, tuple] = {}


def policies(settings_: dict):
    key = repr(settings_)
    if key not in _POLICIES:
        config = config_from_dict(settings_)
        _POLICIES[key] = (config, [d for d in admission_policy(config) if d["kind"] == "ValidatingAdmissionPolicy"])
    return _POLICIES[key]


def found_by_policy(policy_docs: list[dict], obj: dict) -> set[tuple[str, str, str]]:
    """(rule, pod spec path, level) of every covered rule the policies find in the object: the
    templates in the lists the failing validations read, "error" in the errors policy (bound
    with [Deny] in enforce mode), "warning" in the other."""
    found = set()
    for policy in policy_docs:
        outcome = evaluate(policy, obj)
        level = "error" if policy["metadata"]["name"].endswith("-errors") else "warning"
        for i, _ in outcome.failures:
            listed = re.fullmatch(r"size\(variables\.(\w+)\) == 0", policy["spec"]["validations"][i]["expression"])[1]
            if listed != "beyond":
                found |= {(listed[:5].upper(), f["p"], level) for f in outcome.variables[listed]}
    return found


def found_by_engine(config, obj: dict) -> tuple[set[tuple[str, str, str]], set[str]]:
    """(rule, pod spec path, level) of every covered rule the engine finds (info counts as
    warning: both are warnings to the API server), and the templates it reports as NG002."""
    paths = [dotted_path(p.spec_path) for p in classify(obj, config.pod_carriers).pods]
    found, malformed = set(), set()
    for f in lint_documents([obj], config=config).active:
        template = max((p for p in paths if f.path == p or f.path.startswith((p + ".", p + "["))), key=len, default=None)
        if f.rule == "NG002":
            malformed.add(template)
        elif f.rule in COVERED:
            found.add((f.rule, template, "error" if f.severity is Severity.ERROR else "warning"))
    return found, malformed


def compare(settings_: dict, obj: dict) -> tuple[set, set]:
    config, docs = policies(settings_)
    engine, malformed = found_by_engine(config, obj)
    policy = {f for f in found_by_policy(docs, obj) if f[1] not in malformed}
    return policy, engine


CORPUS = list(fixture_objects())


@pytest.mark.parametrize("name", ["own", *CONFIGS])
def test_policy_and_engine_agree_on_every_object_of_the_corpus(name):
    found: Counter = Counter()
    disagreements = []
    judged = 0
    for where, own, obj in CORPUS:
        if name != "own" and own:
            continue                        # a fixture with settings of its own is judged with them
        policy, engine = compare(own if name == "own" else CONFIGS[name], obj)
        judged += 1
        found.update(f"{rule} {level}" for rule, _, level in engine)
        if policy != engine:
            disagreements.append((where, sorted(policy - engine), sorted(engine - policy)))
    assert disagreements == []
    # what the engine (and so the policy) finds: every covered rule, under each config
    assert (judged, dict(sorted(found.items()))) == EXPECTED[name]


EXPECTED = {     # a pod only assumed to be managed (no pool configured) gets its policy findings as warnings
    # deploy/README.md's Rollout (the canary chapter) targets the pool of deploy/examples by its labels and
    # tolerates its taint: under the configs whose pool has another taint, NG111
    "own": (191, {"NG101 error": 4, "NG103 warning": 9, "NG104 warning": 4, "NG105 error": 5, "NG106 error": 4,
                  "NG107 warning": 4, "NG111 warning": 2, "NG114 error": 10}),
    "no pool": (168, {"NG101 error": 1, "NG103 warning": 9, "NG104 warning": 4, "NG105 error": 5, "NG106 error": 4,
                      "NG107 warning": 4, "NG114 error": 9}),
    "a pool by labels and taint": (168, {"NG101 error": 1, "NG103 error": 1, "NG104 error": 1, "NG105 error": 5,
                                         "NG106 error": 4, "NG107 error": 1, "NG111 warning": 6, "NG114 error": 9}),
    "a pool by taint only": (168, {"NG101 error": 1, "NG105 error": 5, "NG106 error": 4, "NG114 error": 9}),
    "scope all": (168, {"NG101 error": 127, "NG103 error": 9, "NG104 error": 4, "NG105 error": 5, "NG106 error": 4,
                        "NG107 error": 4, "NG111 warning": 6, "NG114 error": 9}),
    "two pools": (168, {"NG101 error": 1, "NG103 error": 1, "NG104 error": 1, "NG105 error": 5, "NG106 error": 4,
                        "NG107 error": 1, "NG114 error": 9}),
    "three pools and a custom kind": (168, {"NG101 error": 5, "NG103 error": 1, "NG104 error": 1, "NG105 error": 5,
                                            "NG106 error": 4, "NG107 error": 1, "NG111 warning": 10, "NG114 error": 9}),
}


def test_the_corpus_holds_every_source_the_issue_names():
    sources = Counter(where.split("/")[2] if where.startswith("tests") else where.split("/")[0].split(" ")[0]
                      for where, _, _ in CORPUS)
    assert sources == {"rules": 79, "crds": 90, "realrepo": 14, "deploy": 7, "guide": 1}
    kinds = Counter(obj["kind"] for _, _, obj in CORPUS)
    assert len(kinds) >= 28


# -- generated pods ------------------------------------------------------------------------------
CPU = st.sampled_from(["0", "100m", "250m", "500m", "1", "1500m", "2", "2500m", "3", "4", "8", 2, 4])
MEMORY = st.sampled_from(["0", "64Mi", "256Mi", "512Mi", "1Gi", "1536Mi", "2Gi", "4Gi", "0.5Gi", "1G", 1073741824])
HUGEPAGES = st.sampled_from(["0", "2Mi", "4Mi", "8Mi", "1Gi"])
RESOURCE_VALUES = {"cpu": CPU, "memory": MEMORY, "hugepages-2Mi": HUGEPAGES, "hugepages-1Gi": st.sampled_from(["0", "1Gi", "2Gi"]),
                   "ephemeral-storage": st.sampled_from(["1Gi", "2Gi"]), "example.com/gpu": st.sampled_from(["1", "2"])}


@st.composite
def resource_list(draw, names=("cpu", "memory", "hugepages-2Mi", "ephemeral-storage", "example.com/gpu", "hugepages-1Gi")):
    chosen = draw(st.lists(st.sampled_from(names), unique=True, max_size=3))
    return {n: draw(RESOURCE_VALUES[n]) for n in chosen}


@st.composite
def requirements(draw, names=("cpu", "memory", "hugepages-2Mi", "ephemeral-storage", "example.com/gpu", "hugepages-1Gi")):
    out = {}
    for which in ("requests", "limits"):
        if draw(st.booleans()):
            out[which] = draw(resource_list(names))
    if draw(st.integers(0, 3)) == 0:            # requests equal to limits: Guaranteed shapes
        out["requests"] = dict(out.get("limits", {}))
    return out


@st.composite
def containers(draw, init: bool):
    made = []
    for i in range(draw(st.integers(0 if init else 1, 3))):
        c = {"name": f"{'i' if init else 'c'}{i}", "image": "registry.example.com/app:1"}
        if init and draw(st.booleans()):
            c["restartPolicy"] = "Always"
        if draw(st.integers(0, 4)):
            c["resources"] = draw(requirements())
        made.append(c)
    return made


KEYS = st.sampled_from(["node.example.com/pool", "dedicated.example.com/numa", "kubernetes.io/os",
                        "gpu.example.com/dedicated"])
VALUES = st.sampled_from(["numa", "edge", "linux", "true", "other", ""])


@st.composite
def pod_specs(draw) -> dict:
    spec = {"containers": draw(containers(False))}
    init = draw(containers(True))
    if init:
        spec["initContainers"] = init
    if draw(st.integers(0, 4)):
        spec["resources"] = draw(requirements(("cpu", "memory", "hugepages-2Mi", "ephemeral-storage")))
    if draw(st.booleans()):
        spec["nodeSelector"] = draw(st.dictionaries(KEYS, VALUES, max_size=2))
    if draw(st.booleans()):
        spec["tolerations"] = draw(st.lists(st.fixed_dictionaries(
            {"key": KEYS, "operator": st.sampled_from(["Exists", "Equal"])},
            optional={"value": VALUES, "effect": st.sampled_from(["NoSchedule", "NoExecute"])}), max_size=2))
    if draw(st.booleans()):
        spec["affinity"] = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
            {"matchExpressions": draw(st.lists(st.fixed_dictionaries({
                "key": KEYS, "operator": st.sampled_from(["In", "NotIn", "Exists"]),
                "values": st.lists(VALUES, max_size=2)}), max_size=2))}]}}}
    return spec


ANNOTATIONS = st.sampled_from([None, {"numaguard.io/scope": "managed"}, {"numaguard.io/scope": "unmanaged"},
                               {"numaguard.io/ignore": "NG103, ng104"}, {"numaguard.io/ignore": "all"}])


@st.composite
def workloads(draw) -> dict:
    spec = draw(pod_specs())
    annotations = draw(ANNOTATIONS)
    metadata = {"name": "w", **({"annotations": annotations} if annotations else {})}
    kind = draw(st.sampled_from(["Pod", "Deployment", "CronJob", "JobSet", "PyTorchJob", "TrainingJob"]))
    if kind == "Pod":
        return {"apiVersion": "v1", "kind": "Pod", "metadata": metadata, "spec": spec}
    template = {"metadata": {"annotations": draw(ANNOTATIONS) or {}}, "spec": spec}
    if kind == "Deployment":
        return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": metadata, "spec": {"template": template}}
    if kind == "CronJob":
        return {"apiVersion": "batch/v1", "kind": "CronJob", "metadata": metadata,
                "spec": {"schedule": "* * * * *", "jobTemplate": {"spec": {"template": template}}}}
    if kind == "JobSet":
        other = {"metadata": {}, "spec": draw(pod_specs())}
        return {"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet", "metadata": metadata, "spec": {
            "replicatedJobs": [{"name": "a", "template": {"spec": {"template": template}}},
                               {"name": "b", "template": {"metadata": {"annotations": draw(ANNOTATIONS) or {}},
                                                          "spec": {"template": other}}}]}}
    if kind == "TrainingJob":           # the config's own kind ("three pools and a custom kind")
        roles = {name: {"template": {"spec": draw(pod_specs())}} for name in draw(st.lists(st.sampled_from(["ps", "chief"]), unique=True))}
        return {"apiVersion": "training.example.com/v1", "kind": "TrainingJob", "metadata": metadata, "spec": {
            "launcher": {"template": template}, "roles": roles,
            "workers": [{"template": {"spec": draw(pod_specs())}} for _ in range(draw(st.integers(0, 2)))]}}
    return {"apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob", "metadata": metadata,
            "spec": {"pytorchReplicaSpecs": {"Master": {"template": template}, "Worker": {"template": {"spec": draw(pod_specs())}}}}}


@pytest.mark.parametrize("name", ["no pool", "a pool by labels and taint", "scope all", "two pools",
                                  "three pools and a custom kind"])
@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(obj=workloads())
def test_policy_and_engine_agree_on_generated_workloads(name, obj):
    policy, engine = compare(CONFIGS[name], obj)
    assert policy == engine


def test_a_pool_of_two_finds_what_either_finds():
    """`pools:` (issue 13): a pod targeting the second pool by its taint is managed."""
    config = config_from_dict({"pools": [
        {"name": "cpu", "nodeLabels": {"node.example.com/pool": "cpu"}},
        {"name": "gpu", "taint": {"key": "gpu.example.com/dedicated", "value": "true", "effect": "NoSchedule"}}]})
    (policy,) = [d for d in admission_policy(config) if d["metadata"]["name"] == "numaguard-errors"
                 and d["kind"] == "ValidatingAdmissionPolicy"]
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": {
        "tolerations": [{"key": "gpu.example.com/dedicated", "operator": "Exists"}],
        "containers": [{"name": "c", "image": "registry.example.com/app:1"}]}}
    outcome = evaluate(policy, pod)
    assert [m for _, m in outcome.failures] == [
        "NG101 spec.resources: the pod has no pod-level cpu, memory or hugepages requests or limits: the pod-scope "
        "resource managers will not treat it as one unit; add spec.resources with requests equal to limits for cpu "
        "(whole CPUs) and memory"]
