"""Issue 21 §2 and §4: the false findings of repositories nobody tuned for, each kept as the real
file that raised it (tests/fixtures/realrepo3, origins in its ORIGIN.md), and the true ones
beside them: strings another program renders first (cloud-init Jinja in Cluster API, Go templates
of the Machine Config Operator and EKS Anywhere, documentation placeholders), Cluster API's
kubeletExtraArgs per version, an apiVersion kind does not have, a binary file named .json, and
keys given twice."""
from __future__ import annotations

import json

from numaguard.lint.config import Config
from numaguard.lint.engine import lint_documents
from numaguard.lint.load.documents import load_file
from numaguard.lint.load.skips import BINARY

from conftest import FIXTURES, run_cli

HERE = FIXTURES / "realrepo3"
JINJA = ("holds `{{ ds.meta_data.instance_id }}` (cloud-init Jinja): cloud-init renders it on the machine from its "
         "instance data (Cluster API's user data starts with `## template: jinja`) before kubeadm runs; not judged")
LOST = ("kubectl, Helm and the API server keep only the value written last and silently drop the others; kustomize "
        "(kubectl apply -k), Flux and Argo CD's kustomize applications refuse the file")
SAME = ("with the same value: kubectl, Helm and the API server read one; kustomize (kubectl apply -k), Flux and "
        "Argo CD's kustomize applications refuse the file")


def _lint(relative: str):
    source, documents, errors = load_file(str(HERE / relative))
    return lint_documents(documents, load_errors=errors, config=Config())


def _rows(result) -> list[tuple]:
    return [(f.rule, f.severity.value, f.line, f.column, f.path, f.message) for f in result.findings]


def test_cloud_init_jinja_in_a_cluster_api_argument_is_one_info_not_two_errors():
    result = _lint("capc/md.yaml")
    path = "spec.template.spec.joinConfiguration.nodeRegistration.kubeletExtraArgs.provider-id"
    assert _rows(result) == [("NG003", "info", 49, 26, path, f"--provider-id {JINJA}")]
    assert result.summary.rendered_values == {"cloud-init Jinja": 1}
    assert result.summary.counts == {"error": 0, "warning": 0, "info": 1}


def test_a_control_plane_says_it_once_per_phase():
    result = _lint("capc/cluster-with-kcp.yaml")
    base = "spec.kubeadmConfigSpec.{}Configuration.nodeRegistration.kubeletExtraArgs.provider-id"
    assert _rows(result) == [("NG003", "info", 50, 24, base.format("init"), f"--provider-id {JINJA}"),
                             ("NG003", "info", 57, 24, base.format("join"), f"--provider-id {JINJA}")]


def test_a_list_form_argument_of_eks_anywhere_points_at_its_value():
    result = _lint("eks-anywhere/expected_kct.yaml")
    assert _rows(result) == [
        ("NG003", "info", 17, 20, "spec.template.spec.joinConfiguration.nodeRegistration.kubeletExtraArgs[0].value",
         f"--provider-id {JINJA}")]


def test_v1alpha3_kubelet_extra_args_are_maps():
    # EKS Anywhere's test spec: a v1alpha3 KubeadmControlPlane and KubeadmConfigTemplate with
    # `eviction-hard` as map entries (3 false "must be a list" before)
    result = _lint("eks-anywhere/testClusterSpec.yaml")
    assert result.findings == []
    assert result.summary.objects == 2


def test_an_apiversion_kind_does_not_have_is_kinds_refusal():
    result = _lint("eks-anywhere/fake_manifest.yaml")
    assert _rows(result) == [("NG002", "error", 2, 13, "apiVersion",
                              'Cluster: kind refuses the file: "unknown apiVersion: kind.x-k8s.io/v1alpha" '
                              "(kind reads only kind.x-k8s.io/v1alpha4)")]
    assert result.findings[0].remediation == "Write one of the apiVersions Cluster has: kind.x-k8s.io/v1alpha4."


def test_a_der_key_named_json_is_no_object():
    source, documents, errors = load_file(str(HERE / "eks-anywhere/s3_priv_key_expected.json"))
    assert errors == [] and [(d.skip, d.skip_detail) for d in documents] == [("not-kubernetes", BINARY)]


def test_documentation_placeholders_make_a_sample_a_template():
    for name in ("kserve/bentoml.yaml", "kserve/torchserve-gpu.yaml", "gardener/55-gardenlet.yaml"):
        source, documents, errors = load_file(str(HERE / name))
        assert errors == [] and [(d.skip, d.skip_detail) for d in documents] == \
            [("template", "documentation placeholder")], name


def test_go_templates_are_named_as_such():
    for name in ("mco/cloudconfig.yaml", "eks-anywhere/template-md.yaml"):
        source, documents, errors = load_file(str(HERE / name))
        assert errors == [] and [(d.skip, d.skip_detail) for d in documents] == [("template", "Go template")], name
    # the MCO's kubelet.conf fragment parses (its Go template sits inside `contents.inline`): a
    # file fragment without apiVersion or kind, never read as a KubeletConfiguration
    source, documents, errors = load_file(str(HERE / "mco/kubelet.yaml"))
    result = lint_documents(documents, load_errors=errors)
    assert (errors, result.findings, result.summary.skipped_by_reason["not-kubernetes"]) == ([], [], 1)


def test_a_key_given_twice_is_an_error_only_where_a_value_is_lost():
    assert _rows(_lint("capc/debugWebhookServiceTemplate.yaml")) == [
        ("NG001", "warning", 3, 1, "", f'mapping key "apiVersion" already defined at line 1, {SAME}')]
    assert _rows(_lint("capa/aws-ebs-csi-external.yaml")) == [
        ("NG001", "warning", 47, 1, "", f'mapping key "rules" already defined at line 46, {SAME}')]
    assert _rows(_lint("eks-anywhere/bundles.yaml")) == [
        ("NG001", "warning", 150, 5, "", f'mapping key "cloudStack" already defined at line 50, {SAME}')]
    # three alternatives written one after the other: the auth_type values differ, the urls do not
    assert [(r[0], r[1], r[2], r[5]) for r in _rows(_lint("gardener/10-secret-alerting.yaml"))] == [
        ("NG001", "error", 17, f'mapping key "auth_type" already defined at line 13: {LOST}'),
        ("NG001", "warning", 18, f'mapping key "url" already defined at line 14, {SAME}'),
        ("NG001", "error", 23, f'mapping key "auth_type" already defined at line 13: {LOST}'),
        ("NG001", "warning", 24, f'mapping key "url" already defined at line 14, {SAME}'),
        ("NG001", "error", 31, f'mapping key "auth_type" already defined at line 13: {LOST}')]


def test_a_skeleton_deployment_stays_what_the_api_server_refuses():
    assert _rows(_lint("hypershift/capi-provider-deployment.yaml")) == [
        ("NG002", "error", 5, 7, "spec", "Deployment: spec.template is missing")]


def test_the_whole_tree_summary_counts_what_was_rendered_and_skipped():
    run = run_cli("lint", "--format", "json", ".", cwd=HERE)
    assert "Traceback" not in run.stderr
    report = json.loads(run.stdout)
    assert run.returncode == 1           # kind's refusal, the lost auth_type values, the skeleton
    errors = sorted((f["file"], f["line"], f["rule"]) for f in report["findings"] if f["severity"] == "error")
    assert errors == [("./eks-anywhere/fake_manifest.yaml", 2, "NG002"),
                      ("./gardener/10-secret-alerting.yaml", 17, "NG001"),
                      ("./gardener/10-secret-alerting.yaml", 23, "NG001"),
                      ("./gardener/10-secret-alerting.yaml", 31, "NG001"),
                      ("./hypershift/capi-provider-deployment.yaml", 5, "NG002")]
    summary = report["summary"]
    assert summary["renderedLater"] == {"files": {"Go template": 2, "documentation placeholder": 3},
                                        "values": {"cloud-init Jinja": 4}}
    assert summary["skippedByReason"]["template"] == 5
    assert summary["hint"] == (
        "5 template file(s) skipped (documentation placeholder 3, Go template 2); lint what its program renders (the "
        "Machine Config Operator's: `oc get machineconfig -o yaml | numaguard lint -`); fill in the placeholders, or "
        "exclude sample folders (`exclude:` in .numaguard.yaml)")
    text = run_cli("lint", ".", cwd=HERE).stdout.splitlines()
    assert ("note: 4 value(s) that another program renders first were not judged (cloud-init Jinja 4); each is an "
            "NG003 info saying which program and how to lint what it renders") in text
