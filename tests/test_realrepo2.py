"""The false findings of the second round on real repositories (issue 13 §6), each kept as the
real file that raised it (tests/fixtures/realrepo2, origins in its ORIGIN.md): files that do not
parse and are no objects, printf templates, OpenShift deletion manifests, gates removed in 1.37
judged for the version that really runs, Windows-only kubelet flags, clusterctl variables, and
vendored dependencies. The true findings beside them must stay."""
from __future__ import annotations

import json
import shutil

from numaguard.lint.config import Config
from numaguard.lint.engine import lint_documents
from numaguard.lint.k8s import kubelet_gates as gates
from numaguard.lint.load.documents import load_file, load_text
from numaguard.lint.load.skips import CVO_DELETION, MIME_MESSAGE, UNPARSED_NON_OBJECT

from conftest import FIXTURES, finding_rows, run_cli, summary

HERE = FIXTURES / "realrepo2"


def _lint_file(path, version=(1, 37)):
    source, documents, errors = load_file(str(path))
    return lint_documents(documents, load_errors=errors, config=Config(kubernetes_version=version))


def _json(run) -> dict:
    assert "Traceback" not in run.stderr
    return json.loads(run.stdout)


# --- C2: files that do not parse and are no objects ---------------------------------------------

def test_unparseable_files_that_name_no_object_are_skipped_with_the_reason():
    details = {}
    for path in sorted((HERE / "not-objects").rglob("*.*")):
        source, documents, errors = load_file(str(path))
        assert errors == [], path
        [document] = documents
        details[path.relative_to(HERE / "not-objects").as_posix()] = (document.skip, document.skip_detail)
    assert details == {
        "dashboard.json": ("not-kubernetes", UNPARSED_NON_OBJECT),
        "invalid-yaml.yaml": ("not-kubernetes", UNPARSED_NON_OBJECT),
        "keps/1432-admission-check-per-resource-flavor/kep.yaml": ("not-kubernetes", UNPARSED_NON_OBJECT),
        "keps/6143-quota-release-strategy/kep.yaml": ("not-kubernetes", UNPARSED_NON_OBJECT),
        "keps/8303-multikueue-orchestrated-preemption/kep.yaml": ("not-kubernetes", UNPARSED_NON_OBJECT),
        "mime-userdata-merge/config.yaml": ("not-kubernetes", MIME_MESSAGE),
        "yamlstrip/malformed.in.yaml": ("not-kubernetes", UNPARSED_NON_OBJECT),
        "yamlstrip/malformed.out.yaml": ("not-kubernetes", UNPARSED_NON_OBJECT)}
    run = run_cli("lint", "--format", "json", ".", cwd=HERE / "not-objects")
    assert run.returncode == 0, run.stdout
    assert _json(run)["summary"] == summary(files=8, skipped=8, skipped_by={"not-kubernetes": 8})


def test_broken_manifests_stay_ng001_where_the_parser_stops():
    run = run_cli("lint", "--format", "json", ".", cwd=HERE / "broken-manifests")
    assert run.returncode == 1
    report = _json(run)
    assert [(f["rule"], f["file"], f["line"], f["column"], f["message"]) for f in report["findings"]] == [
        ("NG001", "./analysis-run-failfast.yaml", 19, 5, "while parsing a block mapping: did not find expected key"),
        ("NG001", "./llm-service.yaml", 26, 11,
         "while parsing a block collection: did not find expected '-' indicator")]
    assert report["summary"] == summary(files=2, error=2)


def test_any_apiversion_or_kind_key_keeps_a_broken_file_an_error():
    for text in ("kind: Pod\nmetadata:\n\tname: web\n",                # tab indentation
                 "metadata:\n  name: web\n  \"kind\": Pod\n spec: {}\n",  # kind quoted, deep down
                 "apiversion: v1\nmetadata: [a\n",                     # misspelt case
                 "{\"apiVersion\": \"v1\", \"metadata\": {\n"):         # truncated JSON
        documents, errors = load_text(text, "x.yaml")
        assert (documents, len(errors)) == ([], 1), text
    # what the loader refuses to read is no syntax question: still an error, object or not
    for text in ("a: 1\nb: \x07\n", "a: " + "[" * 2000 + "\n"):
        documents, errors = load_text(text, "x.yaml")
        assert (documents, len(errors)) == ([], 1), text
    # a key that merely ends in "kind" names no object
    documents, errors = load_text("subkind: a\nsub-kind: [b\n", "x.yaml")
    assert (errors, [(d.skip, d.skip_detail) for d in documents]) == ([], [("not-kubernetes", UNPARSED_NON_OBJECT)])


def test_a_checkpoint_file_that_does_not_parse_is_still_judged(tmp_path):
    (tmp_path / "cpu_manager_state").write_text('{"policyName": "static", \n')
    source, documents, errors = load_file(str(tmp_path / "cpu_manager_state"))
    assert (documents, [(e.line, e.column) for e in errors]) == ([], [(2, 1)])


def test_embedded_texts_are_not_judged_as_files():
    # a string inside an object (a kind patch, user data) that does not parse is the object's
    # problem, reported by its carrier: the loader returns the error, not a skipped document
    documents, errors = load_text("title: x\nreviewers:\n  - \"@a\n", "patch", whole_file=False)
    assert (documents, [(e.line, e.column) for e in errors]) == ([], [(4, 1)])


# --- C3: printf and %VAR% templates -------------------------------------------------------------

def test_printf_and_batch_placeholders_make_a_file_a_template():
    for name in ("al2023_userdata_input.yaml", "eks-connector.yaml"):
        source, documents, errors = load_file(str(HERE / "printf-templates" / name))
        assert (errors, [(d.skip, d.data) for d in documents]) == ([], [("template", None)]), name
    run = run_cli("lint", "--format", "json", ".", cwd=HERE / "printf-templates")
    assert run.returncode == 0, run.stdout
    assert _json(run)["summary"]["skippedByReason"]["template"] == 2


def test_a_placeholder_that_parses_or_is_not_where_the_parse_fails_changes_nothing():
    # quoted, `%s` is a string like any other: the object is judged
    result = _lint_file_text("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: '%s'}\n")
    assert (result.summary.skipped_by_reason["template"], result.summary.skipped_by_reason["unknown-kind"]) == (0, 1)
    # a manifest that is broken elsewhere stays NG001 even with a placeholder in it
    documents, errors = load_text("apiVersion: v1\nkind: ConfigMap\ndata: {a: '%s'}\nmetadata:\n\tname: x\n", "x.yaml")
    assert (documents, [(e.line, e.column) for e in errors]) == ([], [(5, 1)])
    # a `%` that starts no placeholder is no template: a non-object is skipped as one, an object stays NG001
    documents, errors = load_text("kind: Pod\nmetadata: {name: %}\n", "x.yaml")
    assert (documents, len(errors)) == ([], 1)


def _lint_file_text(text: str):
    documents, errors = load_text(text, "x.yaml")
    return lint_documents(documents, load_errors=errors)


# --- D: OpenShift deletion manifests ------------------------------------------------------------

def test_manifests_the_cluster_version_operator_deletes_are_skipped():
    path = HERE / "cvo-deletion" / "0000_90_machine-config_90_deletion.yaml"
    source, documents, errors = load_file(str(path))
    assert (errors, [(d.data["kind"], d.skip, d.skip_detail) for d in documents]) == ([], [
        ("ClusterRoleBinding", "deletion", CVO_DELETION), ("CronJob", "deletion", CVO_DELETION),
        ("Service", "deletion", CVO_DELETION), ("ServiceMonitor", "deletion", CVO_DELETION)])
    run = run_cli("lint", "--format", "json", str(path))
    assert run.returncode == 0, run.stdout
    assert _json(run)["summary"] == summary(files=1, skipped=4, skipped_by={"deletion": 4})
    text = run_cli("lint", str(path))
    assert text.stdout.splitlines()[-1] == ("1 file(s), 0 object(s) checked, 4 skipped (4 deletion), 0 opted out: "
                                            "0 error(s), 0 warning(s), 0 info, 0 suppressed")


SPECLESS_CRONJOB = """\
apiVersion: batch/v1
kind: CronJob
metadata:
  name: machine-config-nodes-crd-cleanup
  annotations:
    release.openshift.io/delete: "%s"
"""


def test_only_the_value_true_marks_a_deletion_and_only_in_files():
    # the operator stops on any other value, so the manifest is judged as written
    result = _lint_file_text(SPECLESS_CRONJOB % "yes")
    assert [(f.rule, f.line, f.message) for f in result.findings] == [("NG002", 1, "CronJob: spec is missing")]
    # objects that reach the engine as data (the webhook's) are judged whatever they say
    [document] = load_text(SPECLESS_CRONJOB % "true", "x.yaml")[0]
    assert document.skip == "deletion"
    result = lint_documents([dict(document.data)])
    assert [(f.rule, f.message) for f in result.findings] == [("NG002", "CronJob: spec is missing")]


# --- NG210: gates 1.37 removed, for the version that runs ---------------------------------------

def test_gates_removed_in_1_37_are_refused_by_a_1_37_kubelet_with_the_reason():
    result = _lint_file(HERE / "gates" / "jobset-was-kind.yaml")
    assert [(f.rule, f.severity.value, f.line, f.column, f.message) for f in result.findings] == [
        ("NG210", "error", 5, 19, "the kubelet refuses to start: unrecognized feature gate: GangScheduling (alpha in "
                                  "1.35 and 1.36; removed in 1.37, merged into GenericWorkload, kubernetes#139520); "
                                  "delete it"),
        ("NG210", "error", 7, 28, "the kubelet refuses to start: unrecognized feature gate: WorkloadAwarePreemption "
                                  "(alpha in 1.36; removed in 1.37, merged into GenericWorkload, kubernetes#139520); "
                                  "delete it")]
    result = _lint_file(HERE / "gates" / "kruise-kind-conf-with-vpa.yaml")
    assert [(f.rule, f.line, f.column, f.message) for f in result.findings] == [
        ("NG210", 10, 22, "the kubelet refuses to start: unrecognized feature gate: SidecarContainers (GA and locked on "
                          "since 1.33; removed in 1.37, sidecar containers are always available, kubernetes#137755); "
                          "delete it")]


def test_a_1_36_kubelet_still_knows_them():
    for name in ("jobset-was-kind.yaml", "kruise-kind-conf-with-vpa.yaml"):
        assert _lint_file(HERE / "gates" / name, (1, 36)).findings == [], name
    assert {"GangScheduling", "WorkloadAwarePreemption", "SidecarContainers"} <= gates.known_gate_names((1, 36))
    assert {"GangScheduling", "WorkloadAwarePreemption", "SidecarContainers"}.isdisjoint(gates.known_gate_names((1, 37)))
    assert gates.removal_note("GangScheduling", (1, 36)) is None
    assert gates.removal_note("CPUManager", (1, 36)).startswith("the CPU Manager gate went GA in 1.26")
    # a 1.36 kubelet refuses to unlock a gate locked since 1.33 that 1.37 removed
    assert gates.locked_gates((1, 36))["SidecarContainers"] is True


def _pinned(tmp_path, image: str, extra_gate: str = "") -> str:
    text = (HERE / "gates" / "jobset-was-kind.yaml").read_text()
    text = text.replace("- role: control-plane\n", f"- role: control-plane\n  image: {image}\n")
    text = text.replace("- role: worker\n", f"- role: worker\n  image: {image}\n")
    text = text.replace("  WorkloadAwarePreemption: true\n", f"  WorkloadAwarePreemption: true\n{extra_gate}")
    (tmp_path / "kind.yaml").write_text(text)
    return str(tmp_path / "kind.yaml")


def test_a_kind_node_image_pins_the_version_its_kubelet_is_judged_for(tmp_path):
    path = _pinned(tmp_path, "kindest/node:v1.36.1@sha256:3489c7674813ba5d8b1a9977baea8a6e553784dab7b84759d1014dbd78f7ebd5")
    assert _lint_file(path).findings == []          # target 1.37, but the nodes run 1.36
    path = _pinned(tmp_path, "kindest/node:v1.36.1", "  GangSchedulng: true\n")
    [finding] = _lint_file(path).findings
    assert (finding.rule, finding.severity.value, finding.line, finding.message) == (
        "NG210", "warning", 8,
        "GangSchedulng is not a gate numaguard knows for 1.36 (did you mean GangScheduling?); the kubelet refuses "
        "unrecognized gates (\"unrecognized feature gate: GangSchedulng\") "
        "[kindest/node:v1.36.1: judged for Kubernetes 1.36]")
    # an image numaguard has no gate list for: a gate it does not know is only mentioned
    path = _pinned(tmp_path, "kindest/node:v1.29.2", "  EphemeralContainers: true\n")
    [finding] = _lint_file(path).findings
    assert (finding.severity.value, finding.message) == (
        "info", "EphemeralContainers is not a gate numaguard knows for 1.29 (it has the gate lists of 1.36 and "
                "1.37); the kubelet refuses unrecognized gates (\"unrecognized feature gate: EphemeralContainers\") "
                "[kindest/node:v1.29.2: judged for Kubernetes 1.29]")


def test_one_unpinned_node_runs_the_target_version(tmp_path):
    path = _pinned(tmp_path, "kindest/node:v1.36.1")
    text = open(path).read().replace("- role: control-plane\n  image: kindest/node:v1.36.1\n", "- role: control-plane\n")
    open(path, "w").write(text)
    assert [(f.rule, f.line) for f in _lint_file(path).findings] == [("NG210", 5), ("NG210", 7)]


# --- Cluster API on Azure: Windows nodes and clusterctl variables ------------------------------

def test_windows_only_kubelet_flags_on_a_windows_node():
    result = _lint_file(HERE / "capz" / "machine-deployment-windows.yaml")
    assert result.findings == []
    text = (HERE / "capz" / "machine-deployment-windows.yaml").read_text()
    linux = text.replace("criSocket: npipe:////./pipe/containerd-containerd", "criSocket: unix:///run/containerd/containerd.sock")
    path = "spec.template.spec.joinConfiguration.nodeRegistration.kubeletExtraArgs.windows-priorityclass"
    assert [(f.rule, f.severity.value, f.line, f.column, f.path, f.message) for f in _lint_file_text(linux).findings] == [
        ("NG002", "error", 72, 36, path, "the kubelet refuses to start: failed to parse kubelet flag: unknown flag: "
                                         "--windows-priorityclass; registered only in Windows builds of the kubelet")]
    unsaid = text.replace("          criSocket: npipe:////./pipe/containerd-containerd\n", "")
    assert [(f.rule, f.severity.value, f.line, f.message) for f in _lint_file_text(unsaid).findings] == [
        ("NG002", "warning", 71, "--windows-priorityclass is registered only in Windows builds of the kubelet: a "
                                 "Linux kubelet refuses to start with it (unknown flag), and nothing here says which "
                                 "system this node runs")]


def test_a_clusterctl_variable_is_not_judged_as_the_flag_value():
    result = _lint_file(HERE / "capz" / "windows-feature-gates.yaml")
    assert [(f.rule, f.severity.value, f.line, f.column, f.message) for f in result.findings] == [
        ("NG003", "info", 22, 28, "--feature-gates holds `${NODE_FEATURE_GATES:-\"\"}` (${VAR} substitution): "
                                  "clusterctl generate cluster, envsubst or Flux's postBuild substitution fills it in "
                                  "before the object is applied; not judged")]
    assert result.summary.counts == {"error": 0, "warning": 0, "info": 1}
    assert result.summary.rendered_values == {"${VAR} substitution": 1}


# --- vendored dependencies ----------------------------------------------------------------------

def test_directory_walks_skip_dependency_folders_unless_asked(tmp_path):
    repo = tmp_path / "repo"
    shutil.copytree(HERE / "vendor-tree", repo)
    (repo / "web" / "node_modules" / "pkg").mkdir(parents=True)
    (repo / "web" / "node_modules" / "pkg" / "package.json").write_text('{"name": "pkg"}\n')
    (repo / "cm.yaml").write_text("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\n")
    run = run_cli("lint", "--format", "json", ".", cwd=repo)
    report = _json(run)
    assert report["summary"] == {**summary(files=1, skipped=1, skipped_by={"unknown-kind": 1}),
                                 "unwalked": ["./vendor", "./web/node_modules"]}
    text = run_cli("lint", ".", cwd=repo)
    assert text.stdout.splitlines() == [
        "note: 2 dependency folder(s) not walked (vendor/, node_modules/: other projects' files): ./vendor, "
        "./web/node_modules; set lintDependencies: true in .numaguard.yaml, or name them on the command line, "
        "to lint them",
        "1 file(s), 0 object(s) checked, 1 skipped (1 unknown-kind), 0 opted out: 0 error(s), 0 warning(s), "
        "0 info, 0 suppressed"]
    # a folder the config excludes anyway is not mentioned
    (repo / ".numaguard.yaml").write_text("exclude: [web/node_modules]\n")
    excluded = _json(run_cli("lint", "--format", "json", ".", cwd=repo))["summary"]
    assert excluded["unwalked"] == ["./vendor"]
    (repo / ".numaguard.yaml").unlink()
    # named on the command line, a dependency folder is read
    named = _json(run_cli("lint", "--format", "json", "vendor", cwd=repo))["summary"]
    # (read, and skipped as unknown-kind: a Node is judged only within a declared pool)
    assert (named["files"], named["skippedByReason"]["unknown-kind"], "unwalked" in named) == (1, 1, False)
    (repo / ".numaguard.yaml").write_text("lintDependencies: yes\n")      # YAML 1.1's word: not a boolean here
    refused = run_cli("lint", ".", cwd=repo)
    assert (refused.returncode, refused.stderr.strip()) == (
        2, f"Error: {repo / '.numaguard.yaml'}: lintDependencies: a string, expected a boolean")
    (repo / ".numaguard.yaml").write_text("lintDependencies: true\n")
    walked = _json(run_cli("lint", "--format", "json", ".", cwd=repo))["summary"]
    assert (walked["files"], walked["skippedByReason"], "unwalked" in walked) == (
        3, {**summary()["skippedByReason"], "unknown-kind": 2, "not-kubernetes": 1}, False)


def test_fix_walks_what_lint_walks(tmp_path):
    # `numaguard fix` rewrites files: a vendored copy of someone else's manifest is not one of
    # them unless lintDependencies says so
    from click.testing import CliRunner

    from numaguard.lint.cli.main import main

    pod = ("apiVersion: v1\nkind: Pod\nmetadata:\n  name: web\n  annotations:\n    numaguard.io/scope: managed\n"
           "spec:\n  resources:\n    requests: {cpu: \"2\", memory: 1Gi}\n    limits: {cpu: \"2\", memory: 4Gi}\n"
           "  containers:\n  - {name: app, image: registry.example.com/web:1}\n")
    (tmp_path / "vendor").mkdir()
    (tmp_path / "vendor" / "pod.yaml").write_text(pod)
    (tmp_path / "pod.yaml").write_text(pod)
    result = CliRunner().invoke(main, ["fix", "--diff", str(tmp_path)])
    assert [line for line in result.stdout.splitlines() if line.startswith("+++")] == [
        f"+++ b{tmp_path / 'pod.yaml'}"]
    (tmp_path / ".numaguard.yaml").write_text("lintDependencies: true\n")
    result = CliRunner().invoke(main, ["fix", "--diff", "--config", str(tmp_path / ".numaguard.yaml"), str(tmp_path)])
    assert [line for line in result.stdout.splitlines() if line.startswith("+++")] == [
        f"+++ b{tmp_path / 'pod.yaml'}", f"+++ b{tmp_path / 'vendor' / 'pod.yaml'}"]
