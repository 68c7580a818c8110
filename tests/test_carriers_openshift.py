"""OpenShift's kubelet under a KubeletConfig, a PerformanceProfile and a MachineConfig drop-in
(lint/k8s/openshift_base.py, platform_openshift.py), and one finding, not two, for a profile and
the KubeletConfig rendered from it (lint/rendered.py). Real files under
tests/fixtures/carriers/ (ORIGIN.md); no public MachineConfig carries a kubelet drop-in, so the
drop-in examples are our own."""
from __future__ import annotations

import base64
import gzip
import subprocess
import sys
import urllib.parse
from collections import Counter

import pytest
import yaml

from numaguard.lint.engine import lint_documents
from numaguard.lint.k8s.openshift_base import (MCO_KUBELET_CONF, mco_kubelet_conf, mergo_override,
                                               rendered_profile)
from numaguard.lint.k8s.platform_openshift import DataURLError, read_source
from numaguard.lint.k8s.platforms import merge_patch, openshift_kubelet_config
from numaguard.lint.load.documents import load_paths

from conftest import lint_rows
from conftest import FIXTURES

CARRIERS = FIXTURES / "carriers"
CNTO = CARRIERS / "cnto" / "test" / "e2e" / "performanceprofile"


def _lint(text: str, name: str = "x.yaml", ignore=()):
    return lint_rows(text, name, ignore)


def _lint_paths(*paths):
    docs, errors = [], []
    for _source, documents, load_errors in load_paths([str(p) for p in paths]):
        docs += documents
        errors += load_errors
    return lint_documents(docs, load_errors=errors)


# -- the base and the MCO's merge --------------------------------------------------------------

def test_the_base_is_the_mco_template_without_its_templated_fields():
    template = yaml.safe_load((CARRIERS / "openshift/mco-worker-kubelet.yaml").read_text())
    assert template["path"] == "/etc/kubernetes/kubelet.conf"
    lines = [line for line in template["contents"]["inline"].splitlines()
             if "{{" not in line and not line.lstrip().startswith("- {{")]
    conf = yaml.safe_load("\n".join(lines))
    assert conf.pop("clusterDNS") is None and conf.pop("tlsCipherSuites") is None   # templated lines gone
    assert conf == MCO_KUBELET_CONF


def test_the_unit_reads_drop_ins_from_the_directory_numaguard_reads():
    unit = (CARRIERS / "openshift/mco-worker-kubelet.service.yaml").read_text()
    assert "--config=/etc/kubernetes/kubelet.conf \\" in unit
    assert "--config-dir=/etc/openshift/kubelet.conf.d \\" in unit


KUBELETCONFIG_RESERVED_CPUS = """\
apiVersion: machineconfiguration.openshift.io/v1
kind: KubeletConfig
metadata: {name: numa}
spec:
  machineConfigPoolSelector:
    matchLabels: {pools.operator.machineconfiguration.openshift.io/worker-numa: ""}
  kubeletConfig:
    cpuManagerPolicy: static
    reservedSystemCPUs: "0,1"
"""


def test_reserved_cpus_in_a_kubelet_config_clear_the_bases_reserved_cgroup_as_the_mco_does():
    # helpers.go generateKubeletIgnFiles: systemReservedCgroup cleared, system-reserved
    # enforcement dropped; merged naively the base's /system.slice would be NG209
    found, _ = _lint(KUBELETCONFIG_RESERVED_CPUS, ignore=("NG202", "NG204", "NG205", "NG206"))
    assert found == []
    config = openshift_kubelet_config(yaml.safe_load(KUBELETCONFIG_RESERVED_CPUS)).config
    assert (config["systemReservedCgroup"], config["enforceNodeAllocatable"]) == ("", ["pods"])
    naive = merge_patch(MCO_KUBELET_CONF, {"cpuManagerPolicy": "static", "reservedSystemCPUs": "0,1"})
    naive_found, _ = _lint(yaml.safe_dump(naive), ignore=("NG202", "NG204", "NG205", "NG206"))
    assert [f[0] for f in naive_found] == ["NG209"]


def test_reserved_cpus_keep_pods_enforcement_even_when_the_user_lists_only_system_reserved():
    config, _ = mco_kubelet_conf({"reservedSystemCPUs": "0", "enforceNodeAllocatable": ["system-reserved"]})
    assert (config["systemReservedCgroup"], config["enforceNodeAllocatable"]) == ("", ["pods"])


def test_without_reserved_cpus_the_bases_cgroup_and_enforcement_stay():
    config, refused = mco_kubelet_conf({"cpuManagerPolicy": "static"})
    assert (config["systemReservedCgroup"], config["enforceNodeAllocatable"], refused) == \
        ("/system.slice", ["pods", "system-reserved-compressible"], [])
    # a user list without system-reserved: the MCO clears the cgroup the list no longer needs
    config, _ = mco_kubelet_conf({"enforceNodeAllocatable": ["pods"]})
    assert config["systemReservedCgroup"] == ""


def test_mergo_keeps_the_base_where_the_user_gives_a_zero_value():
    assert mergo_override({"maxPods": 250, "cgroupDriver": "systemd", "evictionHard": {"a": "1"}},
                          {"maxPods": 0, "cgroupDriver": "", "evictionHard": {"b": "2"}}) == \
        {"maxPods": 250, "cgroupDriver": "systemd", "evictionHard": {"a": "1", "b": "2"}}
    # serverTLSBootstrap is a plain Go bool (false is "not set"); failSwapOn is a *bool
    assert mergo_override({"serverTLSBootstrap": True, "failSwapOn": True},
                          {"serverTLSBootstrap": False, "failSwapOn": False}) == \
        {"serverTLSBootstrap": True, "failSwapOn": False}


def test_the_mco_refuses_what_validate_user_kubelet_config_refuses():
    text = KUBELETCONFIG_RESERVED_CPUS + ('    cgroupDriver: cgroupfs\n    failSwapOn: false\n'
                                          '    systemReservedCgroup: /custom.slice\n'
                                          '    systemCgroups: /system.slice\n')
    found, result = _lint(text, ignore=("NG202", "NG204", "NG205", "NG206"))
    assert found == [("NG002", "error", 10, 19, "spec.kubeletConfig.cgroupDriver"),
                     ("NG002", "error", 11, 17, "spec.kubeletConfig.failSwapOn"),
                     ("NG002", "error", 12, 27, "spec.kubeletConfig.systemReservedCgroup")]
    assert [f.message for f in result.findings] == [
        'the Machine Config Operator refuses this KubeletConfig: "KubeletConfiguration: cgroupDriver '
        'is not allowed to be set, but contains: cgroupfs"',
        'the Machine Config Operator refuses this KubeletConfig: "KubeletConfiguration: failSwapOn is '
        'not allowed to be set, but contains: false"',
        'the Machine Config Operator refuses this KubeletConfig: "KubeletConfiguration: '
        'systemReservedCgroup (/custom.slice) must match systemCgroups (/system.slice)"']


def test_a_reserved_cgroup_that_no_longer_matches_the_bases_system_cgroups_is_refused_after_the_merge():
    text = KUBELETCONFIG_RESERVED_CPUS.replace('    reservedSystemCPUs: "0,1"\n',
                                               "    systemReservedCgroup: /custom.slice\n")
    found, result = _lint(text, ignore=("NG202", "NG204", "NG205", "NG206"))
    assert found == [("NG002", "error", 9, 27, "spec.kubeletConfig.systemReservedCgroup")]
    assert result.findings[0].message.endswith(
        '"invalid merged configuration: systemReservedCgroup (/custom.slice) must match systemCgroups '
        '(/system.slice)"')


def test_system_reserved_is_the_nodes_own_unless_the_user_pins_it():
    doc = yaml.safe_load(KUBELETCONFIG_RESERVED_CPUS)
    assert openshift_kubelet_config(doc).unknown == frozenset({"systemReserved.cpu", "systemReserved.memory"})
    doc["spec"]["autoSizingReserved"] = False
    carrier = openshift_kubelet_config(doc)
    assert (carrier.unknown, carrier.config["systemReserved"]) == \
        (frozenset(), {"cpu": "500m", "memory": "1Gi", "ephemeral-storage": "1Gi"})
    del doc["spec"]["autoSizingReserved"]
    doc["spec"]["kubeletConfig"]["systemReserved"] = {"memory": "2Gi", "pid": "1000"}
    carrier = openshift_kubelet_config(doc)
    # the user's memory goes to the node-sizing drop-in (static), pid stays in kubelet.conf
    assert (carrier.unknown, carrier.config["systemReserved"]) == \
        (frozenset(), {"pid": "1000", "cpu": "500m", "memory": "2Gi", "ephemeral-storage": "1Gi"})


# -- one finding, not two ----------------------------------------------------------------------

def test_a_render_names_its_profile_three_ways():
    def doc(**meta):
        return {"metadata": meta}
    assert rendered_profile(doc(name="x", ownerReferences=[
        {"apiVersion": "performance.openshift.io/v2", "kind": "PerformanceProfile", "name": "manual"}])) == "manual"
    assert rendered_profile(doc(name="x", labels={
        "performance.openshift.io/weak-owner-reference-name": "openshift-bootstrap-worker"})) \
        == "openshift-bootstrap-worker"
    assert rendered_profile(doc(name="performance-manual")) == "manual"
    assert rendered_profile(doc(name="performance-")) is None
    assert rendered_profile(doc(name="set-max-pods", ownerReferences=[
        {"apiVersion": "v1", "kind": "ConfigMap", "name": "manual"}])) is None


def test_profiles_and_their_renders_in_one_tree_get_one_finding_each():
    result = _lint_paths(CARRIERS / "cnto")
    counts = Counter((f.rule, f.severity.value, "render" if "render-expected-output" in f.file else "profile")
                     for f in result.findings)
    # 6 profiles: 2 bootstrap ones (no topologyPolicy, so best-effort: NG204, NG206) and 4
    # manual ones (single-numa-node); the 10 renders repeat them and are silent. No pool is
    # declared: all 16 are assumed, so their pool requirements are warnings
    assert counts == Counter({("NG202", "warning", "profile"): 6, ("NG205", "warning", "profile"): 6,
                              ("NG204", "warning", "profile"): 2, ("NG206", "warning", "profile"): 2})
    assert (result.summary.counts["error"], result.summary.counts["warning"], result.summary.objects,
            result.summary.assumed_kubelets) == (0, 16, 16, 16)


def test_renders_alone_keep_their_findings():
    result = _lint_paths(CNTO / "testdata" / "render-expected-output")
    counts = Counter((f.rule, f.severity.value) for f in result.findings)
    assert counts == Counter({("NG202", "warning"): 10, ("NG205", "warning"): 10, ("NG204", "warning"): 4,
                              ("NG206", "warning"): 4})
    assert (result.summary.counts["warning"], result.summary.assumed_kubelets) == (28, 10)   # no pool


def test_a_render_that_disagrees_with_its_profile_keeps_what_the_profile_lacks():
    profile = (CNTO / "cluster-setup/manual-cluster/performance/performance_profile.yaml").read_text()
    render = (CNTO / "testdata/render-expected-output/manual_kubeletconfig.yaml").read_text()
    stale = render.replace("    topologyManagerPolicy: single-numa-node\n", "    topologyManagerPolicy: restricted\n")
    found, result = _lint(profile + "---\n" + stale)
    assert [(rule, severity, path) for rule, severity, _, _, path in found] == [
        ("NG202", "warning", "spec"), ("NG205", "warning", "spec"),      # assumed: no pool
        ("NG206", "info", "spec.kubeletConfig.topologyManagerPolicy")]
    assert result.findings[2].object.kind == "KubeletConfig"


def test_the_profile_keeps_the_finding_under_jobs_too(tmp_path):
    # workers lint different files; the renders' findings wait for the whole run
    out = subprocess.run([sys.executable, "-m", "numaguard", "lint", "--jobs", "2", "--format", "json",
                          str(CARRIERS / "cnto")], capture_output=True, text=True, check=False)
    import json
    report = json.loads(out.stdout)
    assert out.returncode == 0          # no pool is declared: assumed configurations only warn
    assert Counter(f["rule"] for f in report["findings"]) == Counter({"NG202": 6, "NG205": 6, "NG204": 2, "NG206": 2})
    assert (report["summary"]["warning"], report["summary"]["assumedKubelets"]) == (16, 16)
    assert all("render-expected-output" not in f["file"] for f in report["findings"])


def test_a_suppressed_profile_finding_also_silences_the_render():
    profile = (CNTO / "cluster-setup/manual-cluster/performance/performance_profile.yaml").read_text().replace(
        "  name: manual\n", "  name: manual\n  annotations: {numaguard.io/ignore: NG205}\n")
    render = (CNTO / "testdata/render-expected-output/manual_kubeletconfig.yaml").read_text()
    _, result = _lint(profile + "---\n" + render)
    assert [(f.rule, f.suppressed, f.object.kind) for f in result.findings] == [
        ("NG202", False, "PerformanceProfile"), ("NG205", True, "PerformanceProfile")]


# -- MachineConfig drop-ins ---------------------------------------------------------------------

DROPIN = """\
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
cpuManagerPolicy: static
reservedSystemCPUs: "0,1"
topologyManagerPolicy: single-numa-node
topologyManagerScope: pod
"""


def _machine_config(*files: tuple[str, str], extra: str = "") -> str:
    entries = "".join(f"      - path: {path}\n        mode: 420\n        contents:\n          source: {source}\n{extra}"
                      for path, source in files)
    return ("apiVersion: machineconfiguration.openshift.io/v1\nkind: MachineConfig\nmetadata:\n"
            "  name: 99-worker-numa\n  labels: {machineconfiguration.openshift.io/role: worker-numa}\n"
            "spec:\n  config:\n    ignition: {version: 3.2.0}\n    storage:\n      files:\n" + entries)


def _percent(text: str) -> str:
    return "data:," + urllib.parse.quote(text, safe="")


@pytest.mark.parametrize("source", [
    _percent(DROPIN),
    "data:;base64," + base64.b64encode(DROPIN.encode()).decode(),
    "data:text/plain;charset=utf-8;base64," + base64.b64encode(DROPIN.encode()).decode(),
])
def test_data_urls_decode_as_rfc_2397_says(source):
    assert read_source({"source": source}) == DROPIN


def test_gzip_compressed_contents():
    source = "data:;base64," + base64.b64encode(gzip.compress(DROPIN.encode(), mtime=0)).decode()
    assert read_source({"source": source, "compression": "gzip"}) == DROPIN
    with pytest.raises(DataURLError, match="not gzip"):
        read_source({"source": _percent(DROPIN), "compression": "gzip"})


def test_remote_sources_and_broken_data_urls_are_said_so():
    with pytest.raises(DataURLError, match="^a https: URL, fetched when the node is configured: numaguard "
                                           "cannot read it$"):
        read_source({"source": "https://example.com/99.conf"})
    with pytest.raises(DataURLError, match=r"^not a data URL the node can decode \(Incorrect padding\)$"):
        read_source({"source": "data:;base64,QQ"})
    assert read_source({"source": ""}) is None and read_source({}) is None


def test_a_drop_in_with_reserved_cpus_is_refused_because_kubelet_conf_keeps_its_reserved_cgroup():
    # the kubelet merges the drop-in itself: nothing clears the base's systemReservedCgroup
    text = _machine_config(("/etc/openshift/kubelet.conf.d/99-numa.conf", _percent(DROPIN)))
    found, result = _lint(text, ignore=("NG202", "NG204"))
    assert found == [("NG209", "error", 14, 19, "spec.config.storage.files[0].contents.source")]
    finding = result.findings[0]
    assert finding.message.startswith("the kubelet refuses to start: invalid configuration: can't use "
                                      "reservedSystemCPUs (--reserved-cpus) with systemReservedCgroup")
    assert "systemReservedCgroup: /system.slice is set by the Machine Config Operator" in finding.message
    assert "[in /etc/openshift/kubelet.conf.d/99-numa.conf: reservedSystemCPUs]" in finding.message
    assert finding.remediation.startswith("A drop-in is merged by the kubelet itself, after the Machine "
                                          "Config Operator")


def test_a_drop_in_that_also_clears_the_cgroup_and_the_enforcement_is_accepted():
    dropin = DROPIN + 'systemReservedCgroup: ""\nenforceNodeAllocatable: ["pods"]\n'
    text = _machine_config(("/etc/openshift/kubelet.conf.d/99-numa.conf", _percent(dropin)))
    assert _lint(text, ignore=("NG202", "NG204"))[0] == []


def test_drop_ins_merge_in_lexical_order_and_the_finding_names_the_last_file():
    late = "apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\ntopologyManagerScope: container\n"
    ok = DROPIN + 'systemReservedCgroup: ""\nenforceNodeAllocatable: ["pods"]\n'
    # listed out of order: 99- is merged after 10-, whatever the list says
    text = _machine_config(("/etc/openshift/kubelet.conf.d/99-late.conf", _percent(late)),
                           ("/etc/openshift/kubelet.conf.d/10-numa.conf", _percent(ok)))
    found, result = _lint(text, ignore=("NG202", "NG204"))
    assert found == [("NG205", "warning", 14, 19, "spec.config.storage.files[0].contents.source")]  # assumed
    assert result.findings[0].message.endswith(
        "[in /etc/openshift/kubelet.conf.d/99-late.conf: topologyManagerScope]")


def test_a_drop_in_field_of_the_wrong_type_names_the_field_inside_the_data_url():
    bad = DROPIN.replace("topologyManagerScope: pod", "topologyManagerScope: [pod]")
    text = _machine_config(("/etc/openshift/kubelet.conf.d/99-numa.conf", _percent(bad)))
    found, result = _lint(text)
    assert found == [("NG002", "error", 14, 19, "spec.config.storage.files[0].contents.source")]
    assert result.findings[0].message.startswith(
        "drop-in /etc/openshift/kubelet.conf.d/99-numa.conf: topologyManagerScope must be a string, not a list")


def test_a_drop_in_that_is_not_a_kubelet_configuration():
    text = _machine_config(("/etc/openshift/kubelet.conf.d/99-numa.conf", _percent("maxPods: 100\n")))
    found, result = _lint(text)
    assert found == [("NG002", "error", 14, 19, "spec.config.storage.files[0].contents.source")]
    assert "reads a drop-in as one KubeletConfiguration document" in result.findings[0].message


def test_a_remote_drop_in_is_an_info_note():
    text = _machine_config(("/etc/openshift/kubelet.conf.d/99-numa.conf", "https://example.com/99.conf"))
    assert _lint(text)[0] == [("NG002", "info", 14, 19, "spec.config.storage.files[0].contents.source")]


def test_files_outside_the_drop_in_directory_carry_no_kubelet_settings():
    text = _machine_config(("/etc/openshift/kubelet.conf.d/README", _percent(DROPIN)),
                           ("/etc/kubernetes/openshift-workload-pinning", _percent("{}")))
    found, result = _lint(text)
    assert found == [] and result.summary.objects == 1


def test_real_machine_configs_without_kubelet_drop_ins_are_quiet():
    result = _lint_paths(CARRIERS / "openshift" / "01_01-worker-cpu-partitioning_workload_pinning_machineconfig.yaml")
    assert (result.findings, result.summary.objects) == ([], 1)
    # the MCO's test MachineConfig replaces kubelet.service with a kubelet run by `docker run`
    # from an image of its own version: its (dockershim-era) flags are that image's, not judged
    result = _lint_paths(CARRIERS / "openshift" / "mco-test-config.yaml")
    assert [(f.rule, f.severity.value, f.line, f.path) for f in result.findings] == [
        ("NG002", "info", 145, "spec.config.systemd.units[4].contents")]
    assert result.findings[0].message == ("the kubelet runs from the container image openshift/origin-node: its "
                                          "version, and so the flags it takes, are the image's, not judged")


def test_the_machine_config_names_its_pool_nodes():
    from numaguard.lint.objects import classify
    text = _machine_config(("/etc/openshift/kubelet.conf.d/99-numa.conf", _percent(DROPIN)))
    [carrier] = classify(yaml.safe_load(text)).platforms
    assert (carrier.node_labels, carrier.node_labels_path) == (
        {"node-role.kubernetes.io/worker-numa": ""}, ("metadata", "labels", "machineconfiguration.openshift.io/role"))
