"""What a later stage renders is not judged (issue 21 §2): one list of later stages
(numaguard.lint.load.later_stages), used for whole files (skipped as `template`, counted per
stage) and for values inside judged objects (NG003, counted per stage), with each carrier saying
which stages render its strings. Variants of real files are derived here; the files themselves
are in tests/fixtures/realrepo3 (ORIGIN.md)."""
from __future__ import annotations

import json

import pytest

from numaguard.lint.engine import Selection, lint_documents
from numaguard.lint.load import later_stages
from numaguard.lint.load.documents import load_text

from conftest import FIXTURES, run_cli

REAL = FIXTURES / "realrepo3"


def _lint(text: str, name: str = "x.yaml", ignore: tuple[str, ...] = ()):
    docs, errors = load_text(text, name)
    return lint_documents(docs, load_errors=errors, selection=Selection(ignore=ignore))


def _rows(result) -> list[tuple]:
    return [(f.rule, f.severity.value, f.line, f.column, f.message) for f in result.findings]


# --- the stages -------------------------------------------------------------------------------

@pytest.mark.parametrize("value,stages,expected", [
    ("cloudstack:///'{{ ds.meta_data.instance_id }}'", later_stages.VALUE_STAGES,
     ("template expression", "{{ ds.meta_data.instance_id }}")),
    ('${NODE_FEATURE_GATES:-""}', later_stages.VALUE_STAGES, ("${VAR} substitution", '${NODE_FEATURE_GATES:-""}')),
    ("$${COREOS_EC2_HOSTNAME}", later_stages.VALUE_STAGES, ("${VAR} substitution", "${COREOS_EC2_HOSTNAME}")),
    ("{% if x %}a{% endif %}", (later_stages.CLOUD_INIT_JINJA,), ("cloud-init Jinja", "{% if x %}")),
    ("{{ ds.meta_data.x }}", (later_stages.ENV_VARIABLE,), None),          # Ignition: nothing renders it
    ("$HOME and {a: b} and 100%", later_stages.VALUE_STAGES, None),
    ("static", later_stages.VALUE_STAGES, None),
    (42, later_stages.VALUE_STAGES, None),
])
def test_value_stage_finds_the_first_stage_whose_expression_the_value_holds(value, stages, expected):
    found = later_stages.value_stage(value, stages)
    assert (None if found is None else (found[0].name, found[1])) == expected


@pytest.mark.parametrize("text,parse_failed,stage", [
    ("replicas: {{ .Values.replicas }}\n", False, "Helm"),
    ("{{- if .Enabled }}\nkind: X\n{{- end }}\n", True, "Go template"),
    ("contents:\n{{indent 4 .CloudProviderConfig}}\n", True, "Go template"),
    ("{% for n in nodes %}\n- {{ n }}\n{% endfor %}\n", True, "Jinja"),
    ("annotations: {summary: '{{ $labels.pod }} is down'}\n", False, None),    # a manifest's own string
])
def test_a_whole_file_is_the_source_of_the_stage_its_tags_name(text, parse_failed, stage):
    found = later_stages.template_stage(text, parse_failed)
    assert (found.name if found else None) == stage


@pytest.mark.parametrize("text,expected", [
    ("kind: Pod\nspec:\n  containers:\n  - image: {user}/app\n", ("template", "documentation placeholder")),
    ("kind: Secret\ndata:\n  a: 1\n  <your key here>\n", ("template", "documentation placeholder")),
    ("kind: Pod\nmetadata:\n  name: %s\n", ("template", "printf")),
    ("kind: Pod\nspec:\n  containers: [a\n", None),            # a broken manifest stays NG001
])
def test_a_parse_error_on_a_placeholder_makes_the_file_a_template(text, expected):
    docs, errors = load_text(text, "x.yaml")
    if expected is None:
        assert docs == [] and len(errors) == 1
    else:
        assert errors == [] and [(d.skip, d.skip_detail) for d in docs] == [expected]


# --- values in judged objects (the engine) -------------------------------------------------------

POD = """\
apiVersion: v1
kind: Pod
metadata:
  name: worker
  annotations: {numaguard.io/scope: managed}
spec:
  resources:
    limits: {cpu: "${WORKER_CPUS}", memory: 8Gi}
  containers:
  - name: worker
    image: registry.example.com/worker:1.0
"""


def test_a_pod_value_substituted_later_is_an_info_and_the_pod_is_judged_no_further():
    result = _lint(POD)
    assert _rows(result) == [
        ("NG003", "info", 8, 19, "spec.resources.limits.cpu holds `${WORKER_CPUS}` (${VAR} substitution): clusterctl "
                                 "generate cluster, envsubst or Flux's postBuild substitution fills it in before the "
                                 "object is applied; not judged")]
    assert result.findings[0].remediation.startswith("lint what is applied: `clusterctl generate cluster")
    assert result.summary.rendered_values == {"${VAR} substitution": 1}


def test_ignoring_ng003_hides_the_info_but_never_shows_the_finding_it_replaced():
    result = _lint(POD, ignore=("NG003",))
    assert (result.findings, result.summary.rendered_values) == ([], {"${VAR} substitution": 1})


def test_a_concrete_mistake_beside_a_rendered_value_is_still_an_error():
    text = POD.replace('memory: 8Gi', 'memory: 8 Gi')
    assert [(r[0], r[1], r[2], r[3]) for r in _rows(_lint(text))] == [("NG003", "info", 8, 19), ("NG002", "error", 8, 45)]


def test_a_kind_patch_value_substituted_later_is_not_judged_as_a_policy():
    text = """\
apiVersion: kind.x-k8s.io/v1alpha4
kind: Cluster
nodes:
- role: control-plane
  kubeadmConfigPatches:
  - |
    kind: KubeletConfiguration
    cpuManagerPolicy: "${CPU_POLICY}"
"""
    rows = [(r[0], r[1], r[2], r[3]) for r in _rows(_lint(text))]
    assert ("NG003", "info", 8, 23) in rows and not any(r[0] == "NG203" for r in rows)
    # what the configuration lacks whatever the policy is stays said (at the tier of its intent)
    assert {r[0] for r in rows if r[1] == "warning"} == {"NG202", "NG204", "NG205", "NG206"}


# --- Cluster API: cloud-init Jinja, Ignition, files ---------------------------------------------

def test_an_ignition_machine_has_no_cloud_init_so_jinja_reaches_the_kubelet_as_written():
    text = (REAL / "capa" / "cluster-template-ignition.yaml").read_text()
    jinja = text.replace("    initConfiguration:\n      nodeRegistration:\n        kubeletExtraArgs:\n"
                         "          cloud-provider: external\n",
                         "    initConfiguration:\n      nodeRegistration:\n        kubeletExtraArgs:\n"
                         "          provider-id: aws:///'{{ ds.meta_data.instance_id }}'\n", 1)
    assert jinja != text
    assert [(r[0], r[1], r[2], r[4]) for r in _rows(_lint(jinja))] == [
        ("NG002", "error", 69, "the kubelet refuses to start: unknown command ds.meta_data.instance_id"),
        ("NG002", "error", 69, "the kubelet refuses to start: unknown command }}'")]
    # what the machine's own envsubst fills in (clusterctl leaves `${...}` of `$${...}`) is not judged
    env = text.replace("          cloud-provider: external\n        name: $${COREOS_EC2_HOSTNAME}\n    joinConfiguration",
                       "          provider-id: aws:///$${COREOS_EC2_INSTANCE_ID}\n        name: $${COREOS_EC2_HOSTNAME}\n"
                       "    joinConfiguration", 1)
    assert env != text
    assert [(r[0], r[2]) for r in _rows(_lint(env))] == [("NG003", 69)]
    assert _lint(text).findings == []


MD = (REAL / "capc" / "md.yaml").read_text()


def _with_patch(content: str, extra: str = "") -> str:
    """capc/md.yaml with a kubelet patch in `files` that kubeadm reads (patches.directory)."""
    patch = ("      files:\n      - path: /etc/kubernetes/patches/kubeletconfiguration0+strategic.yaml\n"
             f"{extra}        content: |\n" + "".join(f"          {line}\n" for line in content.splitlines()))
    text = MD.replace("      joinConfiguration:\n        nodeRegistration:\n",
                      patch + "      joinConfiguration:\n        patches: {directory: /etc/kubernetes/patches}\n"
                              "        nodeRegistration:\n", 1)
    assert text != MD
    return text


def test_jinja_inside_a_kubelet_patch_is_not_judged_and_the_rest_is():
    text = _with_patch('cpuManagerPolicy: static\nreservedSystemCPUs: "{{ ds.meta_data.reserved_cpus }}"\n'
                       'topologyManagerScope: Pod')
    rows = [(r[0], r[1], r[2], r[3]) for r in _rows(_lint(text))]
    # the scope's capital letter is the kubelet's refusal; the reserved CPUs are cloud-init's
    assert ("NG003", "info", 49, 31) in rows
    assert ("NG205", "error", 50, 33) in rows
    assert not any(rule == "NG209" for rule, *_ in rows)


def test_a_kubelet_patch_that_only_parses_once_rendered_leaves_the_configuration_unknown():
    text = _with_patch("cpuManagerPolicy: static\n{% if ds.meta_data.numa %}topologyManagerPolicy: restricted{% endif %}")
    result = _lint(text)
    assert [(r[0], r[1], r[2]) for r in _rows(result) if r[0] == "NG003"] == [("NG003", "info", 47), ("NG003", "info", 55)]
    assert [f for f in result.findings if f.rule == "NG003"][0].message.startswith("kubeletconfiguration0+strategic.yaml holds `{% if ds.meta_data.numa %}`"
                                                 " (cloud-init Jinja)")
    # nothing is said about a reservation the unread patch may make
    assert not any(f.rule in ("NG207", "NG208") for f in result.findings)


def test_a_file_cluster_api_renders_as_a_go_template_names_that_stage():
    text = _with_patch("reservedSystemCPUs: {{ .controlPlane.cpus }}", extra="        contentFormat: Template\n")
    [finding] = [f for f in _lint(text).findings if f.rule == "NG003" and "kubeletconfiguration" in f.message]
    assert "(Cluster API file template): Cluster API's bootstrap controller renders it" in finding.message


def test_a_feature_gate_list_substituted_later_leaves_the_gates_unknown():
    text = """\
apiVersion: bootstrap.cluster.x-k8s.io/v1beta2
kind: KubeadmConfigTemplate
metadata: {name: md-0}
spec:
  template:
    spec:
      joinConfiguration:
        nodeRegistration:
          kubeletExtraArgs:
          - {name: feature-gates, value: "${NODE_FEATURE_GATES}"}
          - {name: cpu-manager-policy, value: static}
          - {name: topology-manager-policy, value: single-numa-node}
          - {name: topology-manager-scope, value: pod}
"""
    rules = {f.rule for f in _lint(text).findings}
    assert "NG003" in rules and not rules & {"NG201", "NG202", "NG210"}
    assert "NG207" in rules          # no CPUs reserved: concrete, judged


# --- the summary --------------------------------------------------------------------------------

def test_the_summary_counts_rendered_files_and_values_per_stage(tmp_path):
    (tmp_path / "pod.yaml").write_text(POD)
    (tmp_path / "md.yaml").write_text(MD)
    (tmp_path / "sample.yaml").write_text("kind: Pod\nspec:\n  containers:\n  - image: {user}/app\n")
    report = json.loads(run_cli("lint", "--format", "json", ".", cwd=tmp_path).stdout)
    assert report["summary"]["renderedLater"] == {
        "files": {"documentation placeholder": 1}, "values": {"${VAR} substitution": 1, "cloud-init Jinja": 1}}
    assert (report["summary"]["info"], report["summary"]["error"]) == (2, 0)
    text = run_cli("lint", ".", cwd=tmp_path).stdout.splitlines()
    assert text[-4:-2] == [
        "note: 1 template file(s) skipped (documentation placeholder 1); fill in the placeholders, or exclude sample "
        "folders (`exclude:` in .numaguard.yaml)",
        "note: 2 value(s) that another program renders first were not judged (${VAR} substitution 1, cloud-init "
        "Jinja 1); each is an NG003 info saying which program and how to lint what it renders"]
    assert text[-2] == "tiers: 1 pod(s) declared by numaguard.io/scope: managed"


# --- slips: each test fails on one realistic fault ------------------------------------------------

def test_a_list_item_substituted_later_is_not_judged_and_a_plain_string_item_is_refused():
    text = "apiVersion: v1\nkind: List\nitems:\n- ${POD}\n- plain\n"
    assert [r[:4] for r in _rows(_lint(text))] == [("NG003", "info", 4, 3), ("NG001", "error", 5, 3)]


KIND_PATCH = """\
apiVersion: kind.x-k8s.io/v1alpha4
kind: Cluster
nodes:
- role: worker
  kubeadmConfigPatches:
  - |
    kind: KubeletConfiguration
    ${EXTRA_KUBELET_SETTINGS}
"""


def test_a_kind_patch_that_parses_only_once_substituted_is_an_info_a_broken_one_kinds_refusal():
    assert _rows(_lint(KIND_PATCH)) == [
        ("NG003", "info", 6, 5, "kubeadmConfigPatches[0] holds `${EXTRA_KUBELET_SETTINGS}` (${VAR} substitution): "
                                "clusterctl generate cluster, envsubst or Flux's postBuild substitution fills it in "
                                "before the object is applied; not judged")]
    broken = KIND_PATCH.replace("${EXTRA_KUBELET_SETTINGS}", "cpuManagerPolicy static")
    assert _rows(_lint(broken)) == [
        ("NG002", "error", 6, 5, "kind fails to parse this patch: line 3: while scanning a simple key: could not "
                                 "find expected ':'")]


def test_a_one_line_block_scalar_substituted_later_is_a_value_not_an_embedded_document():
    text = ("apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\n"
            "featureGates: {PodLevelResourceManagers: true}\ncpuManagerPolicy: |\n  ${CPU_POLICY}\n")
    rows = [r[:4] for r in _rows(_lint(text))]
    assert ("NG003", "info", 4, 19) in rows and not any(r[0] == "NG203" for r in rows)
