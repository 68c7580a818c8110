"""GKE's node system configuration (lint/platforms/gke.py): recognised by shape only when it is
one, GKE's field names and values mapped onto the kubelet's, findings at GKE's own fields, and
nothing said about what GKE sets underneath. No public repository holds such a file (none in the
20 trees measured for issue 13, GoogleCloudPlatform/kubernetes-engine-samples included), so the
first example is the one on GKE's "Customizing node system configuration" page and the others
are our own."""
from __future__ import annotations

import pytest

from numaguard.lint.engine import skip_reason
from numaguard.lint.platforms.gke import is_system_config
from numaguard.lint.objects import classify

from conftest import lint_rows


def _lint(text: str, name: str = "system-config.yaml", ignore=()):
    return lint_rows(text, name, ignore)


# cloud.google.com/kubernetes-engine/docs/how-to/node-system-config, "Creating a configuration file"
DOCS_EXAMPLE = """\
kubeletConfig:
  cpuManagerPolicy: static
linuxConfig:
 sysctl:
   net.core.somaxconn: '2048'
   net.ipv4.tcp_rmem: '4096 87380 6291456'
"""

NUMA = """\
kubeletConfig:
  cpuManagerPolicy: static
  topologyManager:
    policy: single-numa-node
  memoryManager:
    policy: Static
  cpuCFSQuota: true
  podPidsLimit: 4096
linuxConfig:
  hugepageConfig: {hugepage_size2m: 1024}
"""


@pytest.mark.parametrize("doc, recognised", [
    ({"kubeletConfig": {"cpuManagerPolicy": "static"}}, True),
    ({"kubeletConfig": {"cpuCfsQuota": False}, "linuxConfig": {}}, True),
    ({"kubeletConfig": {"cpuManagerPolicy": "static"}, "name": "x"}, False),     # another key at the top
    ({"kubeletConfig": {"foo": "bar"}, "linuxConfig": {}}, False),              # no GKE kubelet field
    ({"linuxConfig": {"sysctl": {}}}, False),                                    # nothing about the kubelet
    ({"kubeletConfig": "static"}, False),
])
def test_recognised_by_shape_only_when_it_is_one(doc, recognised):
    assert is_system_config(doc) is recognised
    assert (skip_reason(doc) is None) is recognised


def test_the_docs_example_shows_the_missing_numa_settings_in_gke_terms():
    found, result = _lint(DOCS_EXAMPLE, ignore=())
    # no pool is declared: an assumed configuration, its pool requirements are warnings
    assert found == [("NG204", "warning", 2, 3, "kubeletConfig"), ("NG205", "warning", 2, 3, "kubeletConfig"),
                     ("NG206", "warning", 2, 3, "kubeletConfig")]
    assert [f.message.rsplit(" [", 1)[1] for f in result.findings] == [
        "in the GKE file: kubeletConfig.memoryManager.policy]", "in the GKE file: kubeletConfig.topologyManager.scope]",
        "in the GKE file: kubeletConfig.topologyManager.policy]"]
    assert [f.remediation for f in result.findings] == [
        "Set kubeletConfig.memoryManager.policy: static (GKE reserves the memory itself).",
        "Set kubeletConfig.topologyManager.scope: pod.",
        "Set kubeletConfig.topologyManager.policy: single-numa-node (or restricted)."]
    assert result.findings[0].object.kind == "GKE node system config"


def test_gke_values_map_onto_the_kubelets_and_what_gke_sets_underneath_is_not_judged():
    [carrier] = classify(__import__("yaml").safe_load(NUMA)).platforms
    assert {k: carrier.config[k] for k in ("cpuManagerPolicy", "topologyManagerPolicy", "memoryManagerPolicy",
                                           "cpuCFSQuota", "podPidsLimit")} == \
        {"cpuManagerPolicy": "static", "topologyManagerPolicy": "single-numa-node",
         "memoryManagerPolicy": "Static", "cpuCFSQuota": True, "podPidsLimit": 4096}
    # the static Memory Manager with no reservedMemory, no PodLevelResourceManagers gate, no CPU
    # reservation: GKE's own business, not shown here; only the scope left at its default is
    found, result = _lint(NUMA)
    assert found == [("NG205", "warning", 4, 5, "kubeletConfig.topologyManager")]   # assumed: no pool


def test_a_complete_pod_level_configuration_is_clean():
    assert _lint(NUMA.replace("    policy: single-numa-node\n", "    policy: single-numa-node\n    scope: pod\n"))[0] == []


def test_values_and_fields_gke_does_not_accept():
    text = NUMA.replace("    policy: Static", "    policy: Strict").replace("  podPidsLimit: 4096\n",
                                                                           "  reservedSystemCPUs: '0,1'\n")
    found, result = _lint(text)
    # gcloud refuses the whole file: nothing else is judged
    assert found == [("NG002", "error", 6, 13, "kubeletConfig.memoryManager.policy"),
                     ("NG002", "error", 8, 23, "kubeletConfig.reservedSystemCPUs")]
    assert [f.message for f in result.findings] == [
        "kubeletConfig.memoryManager.policy: 'Strict' is not a value GKE accepts (none, static)",
        "gcloud refuses the file: unknown field reservedSystemCPUs in kubeletConfig (not a NodeKubeletConfig field)"]
