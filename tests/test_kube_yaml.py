"""YAML read as Kubernetes reads it (go-yaml v2 resolve.go via sigs.k8s.io/yaml), where that
differs from PyYAML's safe loader; both loader paths (events and nodes) must agree."""
from __future__ import annotations

import math

import pytest
import yaml

from numaguard.lint.config import ConfigError, config_from_dict, load_config_file
from numaguard.lint.load.documents import _load_events, _load_yaml, load_text
from numaguard.lint.load.kube_yaml import resolve_plain
from numaguard.lint.load.skips import looks_templated
from numaguard.lint.model import Severity, value_kind

# (plain scalar, what PyYAML's safe_load makes of it, what Kubernetes makes of it)
DIFFERENCES = [
    ("=", "error", "="),                                   # PyYAML: tag:yaml.org,2002:value
    ("y", "y", True), ("Y", "Y", True), ("n", "n", False), ("N", "N", False),
    ("1:20", 80, "1:20"), ("1:20.5", 80.5, "1:20.5"),      # base 60: "purposefully unsupported"
    ("1e3", "1e3", 1000.0), ("1.5e3", "1.5e3", 1500.0), ("-2E-2", "-2E-2", -0.02),
    ("0o17", "0o17", 15), ("08", "08", 8.0), ("+0x1F", 31, 31),
    ("2024-01-02", "date", "2024-01-02T00:00:00Z"),
    ("2001-12-14t21:59:43.10-05:00", "datetime", "2001-12-14T21:59:43.1-05:00"),
    ("2001-12-14 21:59:43.10", "datetime", "2001-12-14T21:59:43.1Z"),
    ("2024-13-01", "error", "2024-13-01"),                 # no such month: a string for Go
]
SAME = [("yes", True), ("Off", False), ("TRUE", True), ("~", None), ("null", None), ("", None),
        ("017", 15), ("0b101", 5), ("1_000", 1000), ("-1", -1), ("1.10", 1.1), (".5", 0.5),
        ("-.inf", -math.inf), ("500m", "500m"), ("4Gi", "4Gi"), ("1.5.3", "1.5.3"), ("<<x", "<<x"),
        ("12345678901234567890123", 12345678901234567890123)]


def _both_paths(text: str):
    fast = _load_events(text, "x.yaml")
    slow = _load_yaml(text, "x.yaml", [])
    assert fast is not None
    assert [d.data for d in fast[0]] == [d.data for d in slow[0]]
    assert [d.data.marks for d in fast[0]] == [d.data.marks for d in slow[0]]
    return slow[0][0].data


@pytest.mark.parametrize("text,pyyaml,kubernetes", DIFFERENCES)
def test_scalars_that_pyyaml_reads_differently(text, pyyaml, kubernetes):
    try:
        theirs = yaml.safe_load(f"v: {text}\n")["v"]
        theirs = type(theirs).__name__ if type(theirs).__name__ in ("date", "datetime") else theirs
    except (yaml.YAMLError, ValueError):             # PyYAML's date constructor raises
        theirs = "error"
    assert theirs == pyyaml                     # the difference is real
    assert _both_paths(f"v: {text}\n") == {"v": kubernetes}
    assert _both_paths(f"- {text}\n") == [kubernetes]


@pytest.mark.parametrize("text,value", SAME)
def test_scalars_both_read_alike(text, value):
    assert resolve_plain(text)[1] == value
    assert _both_paths(f"v: {text}\n") == {"v": value}


def test_nan_is_a_float():
    assert math.isnan(_both_paths("v: .NaN\n")["v"])


def test_quoted_and_block_scalars_stay_strings():
    assert _both_paths("a: 'y'\nb: \"1e3\"\nc: |\n  =\n") == {"a": "y", "b": "1e3", "c": "=\n"}


def test_keys_become_strings_as_sigs_k8s_io_yaml_makes_them():
    assert _both_paths("1: a\nyes: b\n1.5: c\n=: d\n") == {"1": "a", "true": "b", "1.5": "c", "=": "d"}


def test_a_null_key_is_refused():
    docs, errors = load_text("~: a\n", "x.yaml")
    assert docs == [] and [(e.line, e.column, e.message) for e in errors] == [
        (1, 1, "unsupported map key: null")]


@pytest.mark.parametrize("text,path,value,repeated", [
    ("kind: X\na: 1\nb: 2\na: 3\n", ("a",), 3, (4, 1, "a", 2, True)),
    ("kind: X\nx:\n  on: 1\n  yes: 2\n", ("x", "true"), 2, (4, 3, "true", 3, True)),
    ("kind: X\na: &a {k: 1}\nb:\n  <<: *a\n  j: 2\n  j: 3\n", ("b", "j"), 3, (6, 3, "j", 5, True)),
    ("kind: X\na: 1\na: 1\n", ("a",), 1, (3, 1, "a", 2, False)),
    ("kind: X\nrules:\nrules: [r]\n", ("rules",), ["r"], (3, 1, "rules", 2, False)),
])
def test_a_key_written_twice_keeps_the_later_value_as_kubectl_does(text, path, value, repeated):
    # go-yaml v2's non-strict decoder (sigs.k8s.io/yaml's YAMLToJSON, kubectl apply -f) overwrites:
    # the later value wins and the earlier is lost unless it was equal or null (NG001 says which).
    # (A mapping without apiVersion and kind is no object: tests/test_skipped_inputs.py.)
    assert yaml.safe_load(text) is not None
    docs, errors = load_text(text, "x.yaml")
    assert errors == []
    [doc] = docs
    node = doc.data
    for key in path:
        node = node[key]
    assert node == value
    assert [(r.line, r.column, r.key, r.first_line, r.lost) for r in doc.repeated_keys] == [repeated]
    docs, errors = load_text(text.removeprefix("kind: X\n"), "x.yaml")
    assert errors == [] and [d.skip for d in docs] == ["not-kubernetes"]


def test_a_key_overriding_a_merged_key_is_no_duplicate():
    docs, errors = load_text("a: &a {k: 1}\nb: {<<: *a, k: 2}\n", "x.yaml")
    assert errors == [] and docs[0].data["b"] == {"k": 2}


def test_tabs_are_read_as_libyaml_and_go_yaml_read_them():
    # both are ports of libyaml's scanner: a tab may separate, never indent
    docs, errors = load_text("a:\tb\nc: [1,\t2]\n", "x.yaml")
    assert errors == [] and docs[0].data == {"a": "b", "c": [1, 2]}
    docs, errors = load_text("kind: Pod\na:\n\tb: 1\n", "x.yaml")
    assert docs == [] and [(e.line, e.column) for e in errors] == [(3, 1)]


def test_explicit_tags_are_checked_as_go_yaml_checks_them():
    docs, errors = load_text("a: !!str 1\nb: !!float 2\nc: !!int '0x10'\nd: !Custom x\n", "x.yaml")
    assert errors == [] and docs[0].data == {"a": "1", "b": 2.0, "c": 16, "d": "x"}
    docs, errors = load_text("a: !!bool maybe\n", "x.yaml")
    assert [e.message for e in errors] == ["cannot decode !!str `maybe` as a !!bool"]


def test_concatenated_json_objects_on_one_line_and_across_lines():
    docs, errors = load_text('{"kind": "Pod"}{"kind": "Service"}\n\n  {"kind":\n "Job"}\n', "x.json")
    assert errors == []
    assert [(d.index, d.line, d.data) for d in docs] == [
        (0, 1, {"kind": "Pod"}), (1, 1, {"kind": "Service"}), (2, 3, {"kind": "Job"})]
    assert docs[1].data.marks["kind"] == (1, 25) and docs[2].data.marks["kind"] == (4, 2)


def test_concatenated_json_values_that_are_no_objects_are_skipped_or_reported():
    docs, errors = load_text('{"kind": "Pod"}\n42\n[1]\n"kind: Pod"\n', "x.json")
    assert [(d.index, d.data, d.skip) for d in docs] == [
        (0, {"kind": "Pod"}, None), (1, 42, "not-kubernetes"), (2, [1], "not-kubernetes")]
    assert [(e.line, e.column, e.message) for e in errors] == [
        (4, 1, "document 4 is a string, not a mapping")]


@pytest.mark.parametrize("text,parse_failed,expected", [
    ("{{- if .Values.rbac.create }}\nkind: Role\n{{- end }}\n", True, True),
    ("kind: Pod\nmetadata:\n  name: {{ .Release.Name }}-x\n", False, True),   # Helm objects
    ("- name: x\n  shell: {{ item }}\n", True, True),
    ("- name: x\n  shell: echo {{ item }}\n", True, False),       # inside a plain string
    ("{% for x in xs %}\nkind: Pod\n{% endfor %}\n", True, True),           # Jinja
    ("replicas: {{ replicas }}\n", True, True),
    # Prometheus rules and Argo CD notifications carry Go templates in their strings
    ("kind: PrometheusRule\ndescription: '{{ $labels.pod }} is down'\n", False, False),
    ("kind: PrometheusRule\ndescription: '{{ $labels.pod }} is down'\n bad: [\n", True, False),
    ("kind: ConfigMap\ndata:\n  t: |\n    {{.app.metadata.name}}\n", False, False),
])
def test_templates_are_told_from_manifests_with_templates_in_strings(text, parse_failed, expected):
    assert looks_templated(text, parse_failed) is expected


def test_a_template_file_is_one_skipped_document_without_errors():
    docs, errors = load_text("{{- if .Values.x }}\napiVersion: v1\nkind: Pod\n{{- end }}\n", "t.yaml")
    assert errors == [] and [(d.skip, d.data) for d in docs] == [("template", None)]


def test_config_reads_every_plain_scalar_as_written(tmp_path):
    path = tmp_path / ".numaguard.yaml"
    path.write_text("kubernetesVersion: 1.37\nrules: {NG112: off, NG206: error}\n"
                    "pool:\n  nodeLabels: {gpu: true, tier: 1, zone: no}\n")
    config = load_config_file(str(path))
    assert config.severities == {"NG112": None, "NG206": Severity.ERROR}
    assert config.pools[0].node_labels == {"gpu": "true", "tier": "1", "zone": "no"}
    assert config.kubernetes_version == (1, 37)


def test_config_dict_from_another_yaml_parser_means_the_same():
    config = config_from_dict({"rules": {"NG112": False}, "pool": {"nodeLabels": {"gpu": True, "n": 1}}})
    assert config.severities == {"NG112": None}
    assert config.pools[0].node_labels == {"gpu": "true", "n": "1"}
    config = config_from_dict({"pools": [{"name": 1, "nodeLabels": {"gpu": True}, "taint": {"key": "t", "value": True}}]})
    assert (config.pools[0].name, config.pools[0].node_labels, config.pools[0].taint) == (
        "1", {"gpu": "true"}, {"key": "t", "value": "true"})


@pytest.mark.parametrize("data,message", [
    ({"node": None}, "node: null, expected a string"),
    ({"rules": {"NG103": "loud"}}, 'rules.NG103: "loud" is not one of "off", "error", "warning", "info"'),
    ({"pool": []}, "pool: a list, expected an object"),
])
def test_config_errors_use_yaml_words_not_python_names(data, message):
    with pytest.raises(ConfigError) as error:
        config_from_dict(data)
    assert str(error.value) == message


@pytest.mark.parametrize("value,words", [
    (None, "null"), (True, "a boolean"), (1, "an integer"), (1.5, "a number"), ("x", "a string"),
    ({}, "a mapping"), ([], "a list"), (b"x", "a binary value")])
def test_value_kinds_are_named_in_words(value, words):
    assert value_kind(value) == words
