"""The carrier table (numaguard.lint.carriers): the template path syntax, the built-in entries,
lookups by group, version and kind, and `podTemplates:` in the config file made into the same
values."""
from __future__ import annotations

import json
from importlib import resources

import pytest

from numaguard.lint.carriers import (BUILTIN_CARRIERS, PATH_PATTERN, PATH_SYNTAX, Each, Field, PodCarrier,
                                     TemplatePath, TemplatePathError)
from numaguard.lint.config import ConfigError, config_from_dict


@pytest.mark.parametrize("text,steps", [
    ("spec.template", (Field("spec"), Field("template"))),
    ("spec.replicatedJobs[*].template.spec.template",
     (Field("spec"), Field("replicatedJobs"), Each.LIST_ITEM, Field("template"), Field("spec"), Field("template"))),
    ("spec.pytorchReplicaSpecs.*.template",
     (Field("spec"), Field("pytorchReplicaSpecs"), Each.MAP_VALUE, Field("template"))),
    ("spec.workerGroupSpecs?[*].template",
     (Field("spec"), Field("workerGroupSpecs", optional=True), Each.LIST_ITEM, Field("template"))),
    ("spec.leaderWorkerTemplate.leaderTemplate?",
     (Field("spec"), Field("leaderWorkerTemplate"), Field("leaderTemplate", optional=True))),
    ("spec.grid[*][*]", (Field("spec"), Field("grid"), Each.LIST_ITEM, Each.LIST_ITEM)),
    ("spec.roles.*[*].pod_template", (Field("spec"), Field("roles"), Each.MAP_VALUE, Each.LIST_ITEM,
                                      Field("pod_template"))),
])
def test_template_paths_parse(text, steps):
    assert TemplatePath.parse(text) == TemplatePath(text, steps)


@pytest.mark.parametrize("text", ["spec..template", ".spec", "spec.", "spec.[*]", "spec.workers[]",
                                  "spec.workers[0].template", "spec.*?", "spec.a b", "spec/template",
                                  "spec.workers[*]?", "spec.?x", "9spec"])
def test_bad_template_paths_are_refused_with_the_syntax(text):
    with pytest.raises(TemplatePathError) as err:
        TemplatePath.parse(text)
    assert str(err.value) == f"{text!r} is not {PATH_SYNTAX}"


def test_the_config_schema_checks_paths_with_the_parser_s_own_pattern_and_words():
    schema = json.loads(resources.files("numaguard.lint").joinpath("schemas/config.json").read_text())
    path = schema["properties"]["podTemplates"]["items"]["properties"]["paths"]["items"]
    assert (path["pattern"], path["description"]) == (PATH_PATTERN.pattern, PATH_SYNTAX)


def test_every_builtin_carrier_names_its_source_and_versions():
    for carrier in BUILTIN_CARRIERS.carriers:
        assert carrier.origin and carrier.versions and carrier.paths, carrier
    kinds = BUILTIN_CARRIERS.kinds()
    assert kinds[("apps.kruise.io", "StatefulSet")] == ("v1alpha1", "v1beta1")
    assert kinds[("kubeflow.org", "MPIJob")] == ("v1", "v2beta1")
    assert ("trainer.kubeflow.org", "TrainJob") not in kinds        # no pod template of its own
    assert ("serving.knative.dev", "Revision") not in kinds         # made from its Configuration
    assert ("serving.kserve.io", "ServingRuntime") not in kinds     # merged into the predictors that run on it
    assert ("serving.kserve.io", "LLMInferenceServiceConfig") not in kinds   # merged into the services naming it
    assert len(kinds) == len(BUILTIN_CARRIERS.carriers) == 38


@pytest.mark.parametrize("group,version,kind,paths", [
    ("", "v1", "Pod", [""]),
    ("batch", "v1", "CronJob", ["spec.jobTemplate.spec.template"]),
    ("batch.volcano.sh", "v1alpha1", "Job", ["spec.tasks[*].template"]),
    ("batch.volcano.sh", "v1alpha1", "CronJob", ["spec.jobTemplate.spec.tasks[*].template"]),
    ("apps.kruise.io", "v1alpha1", "DaemonSet", ["spec.template"]),
    ("kubeflow.org", "v2beta1", "MPIJob", ["spec.mpiReplicaSpecs.*.template"]),
    ("ray.io", "v1", "RayService", ["spec.rayClusterConfig.headGroupSpec.template",
                                    "spec.rayClusterConfig.workerGroupSpecs?[*].template"]),
])
def test_lookup_by_group_version_and_kind(group, version, kind, paths):
    assert [p.text for p in BUILTIN_CARRIERS.find(group, version, kind).paths] == paths


def test_a_config_entry_comes_first_and_replaces_a_builtin_one_for_its_versions():
    config = config_from_dict({"podTemplates": [
        {"apiVersion": "apps.kruise.io/v1beta1", "kind": "CloneSet", "paths": ["spec.template?"]},
        {"group": "ml.example.com", "kind": "Trainer", "paths": ["spec.workers[*].template", "spec.roles?.*.template"]},
    ]})
    assert config.pod_templates == (
        PodCarrier("apps.kruise.io", "CloneSet", (TemplatePath.parse("spec.template?"),), ("v1beta1",),
                   origin="podTemplates.0"),
        PodCarrier("ml.example.com", "Trainer", (TemplatePath.parse("spec.workers[*].template"),
                                                TemplatePath.parse("spec.roles?.*.template")), (),
                   origin="podTemplates.1"))
    table = config.pod_carriers
    assert table.find("apps.kruise.io", "v1beta1", "CloneSet").origin == "podTemplates.0"
    assert table.find("apps.kruise.io", "v1alpha1", "CloneSet").origin.startswith("openkruise/kruise@07169cf")
    assert table.find("ml.example.com", "v7", "Trainer").origin == "podTemplates.1"     # group: every version
    assert table.find("ml.example.com", "v1", "Other") is None
    assert table.kinds()[("ml.example.com", "Trainer")] == ()
    assert config_from_dict({}).pod_carriers is BUILTIN_CARRIERS


PATH_ERROR = f'"spec.workers[0].template" is not {PATH_SYNTAX}'


@pytest.mark.parametrize("entry,message", [
    ({"apiVersion": "ml.example.com/v1", "kind": "Trainer", "paths": ["spec.workers[0].template"]},
     f"podTemplates.0.paths.0: {PATH_ERROR}"),
    ({"apiVersion": "ml.example.com/v1", "kind": "Trainer", "paths": []},
     "podTemplates.0.paths: [] should be non-empty"),
    ({"apiVersion": "ml.example.com", "kind": "Trainer", "paths": ["spec.template"]},
     'podTemplates.0.apiVersion: "ml.example.com" is not an apiVersion like group/version (example.com/v1)'),
    ({"apiVersion": "ml.example.com/v1", "kind": "trainer", "paths": ["spec.template"]},
     'podTemplates.0.kind: "trainer" is not a kind like TrainingJob'),
    ({"apiVersion": "ml.example.com/v1", "group": "ml.example.com", "kind": "Trainer", "paths": ["spec.template"]},
     "podTemplates.0: give apiVersion (one version) or group (every version), not both"),
    ({"kind": "Trainer", "paths": ["spec.template"]},
     "podTemplates.0: apiVersion (group/version) or group (every version) is required"),
    ({"apiVersion": "ml.example.com/v1", "kind": "Trainer", "path": ["spec.template"]},
     "podTemplates.0: Additional properties are not allowed ('path' was unexpected)"),
    ({"apiVersion": "ml.example.com/v1", "kind": "Trainer"}, "podTemplates.0: 'paths' is a required property"),
])
def test_bad_entries_are_errors_naming_the_key(entry, message):
    with pytest.raises(ConfigError) as err:
        config_from_dict({"podTemplates": [entry]})
    assert str(err.value) == message
