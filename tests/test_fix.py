"""`numaguard fix`: each rule's fix on a small file (the exact text written), what the round trip
keeps (comments, key order, quoting, indentation, JSON), multi-document files and Lists,
idempotency, what is left alone and why, the rollback after re-linting, exit codes."""
from __future__ import annotations

import json
import os
import textwrap

import pytest
from click.testing import CliRunner

from numaguard.lint.cli.main import main
from numaguard.lint.fixing import FIXES
from numaguard.lint.rules.registry import all_rules

from conftest import REPO, run_cli


def fix(tmp_path, name: str, text: str, *args: str, mode: str = "--write"):
    """Write `text` to tmp_path/name, run `numaguard fix` on it (in process), return
    (the file afterwards, stdout, stderr, exit code)."""
    path = tmp_path / name
    path.write_text(textwrap.dedent(text).lstrip("\n"), encoding="utf-8")
    result = CliRunner().invoke(main, ["fix", *([mode] if mode else []), *args, str(path)])
    return path.read_text(encoding="utf-8"), result.stdout, result.stderr, result.exit_code


def lines(text: str) -> str:
    return textwrap.dedent(text).lstrip("\n")


POD = """
apiVersion: v1
kind: Pod
metadata:
  name: web
  annotations:
    numaguard.io/scope: managed
spec:
  resources:
{resources}
  containers:
    - name: app
      image: registry.example.com/web:1
{container}
"""


def pod(resources: str, container: str = "") -> str:
    return POD.format(resources=textwrap.indent(lines(resources), "    "),
                      container=textwrap.indent(lines(container), "      ") if container else "")


# ------------------------------------------------------------------------------- pod fixes

def test_ng103_sets_the_requests_to_the_limits_keeping_comments_and_quotes(tmp_path):
    text, out, err, code = fix(tmp_path, "p.yaml", pod("""
        requests:
          cpu: "2"        # two whole CPUs
          memory: '1Gi'   # too little
        limits:
          cpu: "2"
          memory: '4Gi'
        """))
    assert code == 1
    assert text == pod("""
        requests:
          cpu: "2"        # two whole CPUs
          memory: '4Gi'   # too little
        limits:
          cpu: "2"
          memory: '4Gi'
        """).lstrip("\n")
    assert out == f"{tmp_path / 'p.yaml'}:11: NG103 Pod/web: spec.resources.requests.memory: 1Gi -> 4Gi\n"
    assert err == "numaguard fix: 1 fix(es) in 1 file(s) applied; 0 finding(s) left alone\n"


def test_ng103_writes_the_request_the_api_server_would_default_from_a_container(tmp_path):
    text, out, _, code = fix(tmp_path, "p.yaml", pod("""
        limits: {cpu: "4", memory: 4Gi}
        """, """
        resources:
          requests: {cpu: "1", memory: 1Gi}
        """))
    assert code == 1
    assert text.splitlines()[8:10] == ['    requests: {cpu: "4", memory: 4Gi}',
                                       '    limits: {cpu: "4", memory: 4Gi}']
    assert out.endswith("NG103 Pod/web: spec.resources.requests.cpu: (not set) -> 4; "
                        "spec.resources.requests.memory: (not set) -> 4Gi\n")


def test_ng104_rounds_both_up_and_a_number_stays_a_number(tmp_path):
    text, out, _, code = fix(tmp_path, "p.yaml", pod("""
        requests:
          cpu: 1.5
          memory: 2Gi
        limits:
          cpu: 1500m
          memory: 2Gi
        """))
    assert code == 1
    assert text == pod("""
        requests:
          cpu: 2
          memory: 2Gi
        limits:
          cpu: "2"
          memory: 2Gi
        """).lstrip("\n")
    assert out.endswith("NG104 Pod/web: spec.resources.requests.cpu: 1.5 -> 2; "
                        "spec.resources.limits.cpu: 1500m -> 2\n")


def test_ng105_raises_the_request_to_the_aggregate_then_ng104_rounds_it(tmp_path):
    text, out, _, code = fix(tmp_path, "p.yaml", """
        apiVersion: v1
        kind: Pod
        metadata: {name: web}
        spec:
          resources:
            requests: {cpu: "1", memory: 1Gi}
          containers:
            - name: a
              image: registry.example.com/a:1
              resources: {requests: {cpu: 1500m, memory: 1Gi}}
            - name: b
              image: registry.example.com/b:1
              resources: {requests: {cpu: 500m, memory: 1Gi}}
        """)
    assert code == 1
    assert text.splitlines()[5] == '    requests: {cpu: "2", memory: 2Gi}'
    assert out.splitlines()[0].endswith("NG105 Pod/web: spec.resources.requests.cpu: 1 -> 2; "
                                        "spec.resources.requests.memory: 1Gi -> 2Gi")


def test_ng114_lowers_the_request_to_the_limit(tmp_path):
    text, out, _, code = fix(tmp_path, "p.yaml", pod("""
        requests: {cpu: "8", memory: 4Gi}
        limits: {cpu: "4", memory: 4Gi}
        """))
    assert code == 1
    assert text.splitlines()[8] == '    requests: {cpu: "4", memory: 4Gi}'
    assert out.endswith("NG114 Pod/web: spec.resources.requests.cpu: 8 -> 4\n")


def test_ng101_adds_the_budget_the_containers_sums_give(tmp_path):
    text, out, _, code = fix(tmp_path, "d.yaml", """
        apiVersion: apps/v1
        kind: Deployment
        metadata: {name: feed}
        spec:
          template:
            metadata:
              annotations: {numaguard.io/scope: managed}
            spec:
              initContainers:
                - name: warm
                  image: registry.example.com/warm:1
                  resources: {limits: {cpu: "3", memory: 1Gi}}
              containers:
                - name: feed
                  image: registry.example.com/feed:1
                  resources:
                    limits: {cpu: "2", memory: 3Gi}
                - name: log
                  image: registry.example.com/log:1
                  resources:
                    limits: {cpu: 500m, memory: 256Mi}
        """)
    assert code == 1
    assert text.splitlines()[-7:] == ["      resources:", "        requests:", '          cpu: "3"',
                                      "          memory: 3328Mi", "        limits:", '          cpu: "3"',
                                      "          memory: 3328Mi"]
    assert out.endswith("NG101 Deployment/feed: spec.template.spec.resources.requests.cpu: (not set) -> 3; "
                        "spec.template.spec.resources.requests.memory: (not set) -> 3328Mi; "
                        "spec.template.spec.resources.limits.cpu: (not set) -> 3; "
                        "spec.template.spec.resources.limits.memory: (not set) -> 3328Mi\n")


def test_ng101_is_left_alone_when_a_container_may_burst(tmp_path):
    source = """
        apiVersion: v1
        kind: Pod
        metadata: {name: web, annotations: {numaguard.io/scope: managed}}
        spec:
          containers:
            - name: app
              image: registry.example.com/web:1
              resources: {requests: {cpu: "1", memory: 1Gi}, limits: {cpu: "2", memory: 1Gi}}
        """
    text, out, err, code = fix(tmp_path, "p.yaml", source)
    assert (code, out, text) == (0, "", lines(source))
    assert err == (f"{tmp_path / 'p.yaml'}:5: NG101 left alone: container 'app' requests 1 of cpu but "
                   "may use 2: the pod budget could be anything between the containers' requests and "
                   "their limits\nnumaguard fix: 0 fix(es) in 0 file(s) applied; 1 finding(s) left alone\n")


@pytest.mark.parametrize("resources, reason", [
    ("requests: {cpu: \"2\", memory: 1Gi}\nlimits: {memory: 1Gi}",
     "NG103 left alone: spec.resources sets requests.cpu but no limits.cpu: a pod-level limit is a "
     "sizing decision (set limits.cpu: \"2\" to match the request)"),
    ("requests: {cpu: \"2\"}\nlimits: {cpu: \"2\"}",
     "NG103 left alone: spec.resources sets no memory: how much the whole pod needs is yours to choose"),
])
def test_ng103_without_a_limit_to_copy_is_left_alone(tmp_path, resources, reason):
    text, out, err, code = fix(tmp_path, "p.yaml", pod(resources))
    assert (code, out) == (0, "")
    assert err.splitlines()[0].endswith(reason)


def test_ng114_with_containers_above_the_limit_is_left_alone(tmp_path):
    _, _, err, code = fix(tmp_path, "p.yaml", pod("""
        requests: {cpu: "8", memory: 4Gi}
        limits: {cpu: "4", memory: 4Gi}
        """, """
        resources: {requests: {cpu: "6", memory: 1Gi}}
        """))
    assert code == 0
    assert ":9: NG114 left alone: the containers' aggregate requests.cpu 6 is above limits.cpu 4 too: " \
           "raise the limit or lower the containers' requests, numaguard cannot tell which\n" in err


# ------------------------------------------------------------------------------- kubelet fixes

KUBELET = """
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
# the NUMA pool
cpuManagerPolicy: static
reservedSystemCPUs: "0,32"
{more}
"""


def test_kubelet_gates_scope_and_memory_manager_are_added_after_the_last_key(tmp_path):
    text, out, _, code = fix(tmp_path, "k.yaml", KUBELET.format(more=lines("""
        featureGates:
          PodLevelResources: false   # turned off while testing
        topologyManagerPolicy: single-numa-node
        topologyManagerScope: container
        kubeReserved:
          memory: 500Mi
        systemReserved: {memory: 1Gi}

        # end of the pool settings
        """)))
    assert code == 1
    assert text == lines("""
        apiVersion: kubelet.config.k8s.io/v1beta1
        kind: KubeletConfiguration
        # the NUMA pool
        cpuManagerPolicy: static
        reservedSystemCPUs: "0,32"
        featureGates:
          PodLevelResources: true    # turned off while testing
          PodLevelResourceManagers: true
        topologyManagerPolicy: single-numa-node
        topologyManagerScope: pod
        kubeReserved:
          memory: 500Mi
        systemReserved: {memory: 1Gi}
        memoryManagerPolicy: Static
        reservedMemory:
        - numaNode: 0
          limits:
            memory: 1624Mi

        # end of the pool settings

        """)
    path = tmp_path / "k.yaml"
    assert out == (f"{path}:7: NG201 KubeletConfiguration: featureGates.PodLevelResources: false -> true\n"
                   f"{path}:7: NG202 KubeletConfiguration: featureGates.PodLevelResourceManagers: "
                   "(not set) -> true\n"
                   f"{path}:9: NG205 KubeletConfiguration: topologyManagerScope: container -> pod\n"
                   f"{path}:1: NG204 KubeletConfiguration: memoryManagerPolicy: (not set) -> Static; "
                   "reservedMemory: (not set) -> [{numaNode: 0, limits: {memory: 1624Mi}}]\n")


def test_ng208_changes_the_one_numa_node_entry_in_place(tmp_path):
    text, out, _, code = fix(tmp_path, "k.yaml", KUBELET.format(more=lines("""
        memoryManagerPolicy: Static
        systemReserved: {memory: 1Gi}
        evictionHard: {memory.available: 200Mi}
        reservedMemory:
          - numaNode: 1          # the system's node
            limits: {memory: 1Gi}
        """)), "--select", "NG208")
    assert code == 1
    assert text.splitlines()[-3:-1] == ["  - numaNode: 1          # the system's node",
                                      "    limits: {memory: 1224Mi}"]
    assert out.endswith(": NG208 KubeletConfiguration: reservedMemory[0].limits.memory: 1Gi -> 1224Mi\n")


def test_ng208_split_over_numa_nodes_and_percentages_are_left_alone(tmp_path):
    _, out, err, code = fix(tmp_path, "k.yaml", KUBELET.format(more=lines("""
        memoryManagerPolicy: Static
        systemReserved: {memory: 1Gi}
        reservedMemory:
          - {numaNode: 0, limits: {memory: 512Mi}}
          - {numaNode: 1, limits: {memory: 512Mi}}
        """)), "--select", "NG208")
    assert (code, out) == (0, "")
    assert err.splitlines()[0].endswith(":9: NG208 left alone: reservedMemory splits memory over NUMA "
                                        "nodes 0, 1: numaguard cannot tell which share to change; make "
                                        "them add up to 1124Mi")
    # a share of the memory: the kubelet computes it from each machine's own capacity, so not
    # even a node description (whose NG208 is an exact mismatch) makes one total right
    for node in ((), ("--node", os.path.join(REPO, "deploy/examples/edge-pool/node.yaml"))):
        _, out, err, code = fix(tmp_path, "k2.yaml", KUBELET.format(more=lines("""
            memoryManagerPolicy: Static
            evictionHard: {memory.available: 5%}
            """)), "--select", "NG208", *node)
        assert (code, out) == (0, "")
        assert err.splitlines()[0].endswith(": NG208 left alone: evictionHard memory.available is 5%, a "
                                            "share of each machine's memory capacity: no written total "
                                            "fits every machine; use an absolute threshold (e.g. 100Mi) "
                                            "first")


def test_a_json_kubelet_configuration_stays_json_in_its_indentation(tmp_path):
    source = json.dumps({"apiVersion": "kubelet.config.k8s.io/v1beta1", "kind": "KubeletConfiguration",
                         "cpuManagerPolicy": "static", "reservedSystemCPUs": "0",
                         "topologyManagerScope": "container", "memoryManagerPolicy": "Static",
                         "reservedMemory": [{"numaNode": 0, "limits": {"memory": "100Mi"}}],
                         "featureGates": {"PodLevelResourceManagers": True}}, indent=4) + "\n"
    text, _, _, code = fix(tmp_path, "config.json", source)
    assert code == 1
    assert text == source.replace('"container"', '"pod"')


# ------------------------------------------------------------------------------- files

def test_multi_document_files_and_lists_fix_each_document_and_keep_the_rest(tmp_path):
    text, out, _, code = fix(tmp_path, "all.yaml", """
        # web tier
        apiVersion: v1
        kind: List
        items:
          - apiVersion: v1
            kind: Pod
            metadata: {name: a, annotations: {numaguard.io/scope: managed}}
            spec:
              resources: {requests: {cpu: 1500m, memory: 1Gi}, limits: {cpu: 1500m, memory: 1Gi}}
              containers: [{name: a, image: registry.example.com/a:1}]
          - apiVersion: v1
            kind: Pod
            metadata: {name: b, annotations: {numaguard.io/scope: managed}}
            spec:
              resources: {requests: {cpu: "1", memory: 1Gi}, limits: {cpu: "1", memory: 1Gi}}
              containers: [{name: b, image: registry.example.com/b:1}]
        ---
        ---
        apiVersion: v1
        kind: Pod
        metadata: {name: c, annotations: {numaguard.io/scope: managed}}
        spec:
          resources: {requests: {cpu: "1", memory: 1Gi}, limits: {cpu: "2", memory: 1Gi}}
          containers: [{name: c, image: registry.example.com/c:1}]
        """)
    assert code == 1
    assert [line for line in text.splitlines() if "resources" in line] == [
        '      resources: {requests: {cpu: "2", memory: 1Gi}, limits: {cpu: "2", memory: 1Gi}}',
        '      resources: {requests: {cpu: "1", memory: 1Gi}, limits: {cpu: "1", memory: 1Gi}}',
        '  resources: {requests: {cpu: "2", memory: 1Gi}, limits: {cpu: "2", memory: 1Gi}}']
    assert text.startswith("# web tier\n") and "\n---\n---\n" in text
    assert out.splitlines() == [
        f"{tmp_path / 'all.yaml'}:9: NG104 Pod/a: items[0].spec.resources.requests.cpu: 1500m -> 2; "
        "items[0].spec.resources.limits.cpu: 1500m -> 2",
        f"{tmp_path / 'all.yaml'}:23: NG103 Pod/c: spec.resources.requests.cpu: 1 -> 2"]


def test_a_second_run_changes_nothing(tmp_path):
    first, _, _, code = fix(tmp_path, "k.yaml", KUBELET.format(more="systemReserved: {memory: 1Gi}\n"))
    assert code == 1
    result = CliRunner().invoke(main, ["fix", "--write", str(tmp_path / "k.yaml")])
    assert (result.exit_code, result.stdout) == (0, "")
    assert (tmp_path / "k.yaml").read_text() == first
    assert result.stderr == "numaguard fix: 0 fix(es) in 0 file(s) applied; 0 finding(s) left alone\n"


def test_without_write_nothing_is_written_and_diff_prints_a_unified_diff(tmp_path):
    source = pod("requests: {cpu: \"1\", memory: 1Gi}\nlimits: {cpu: \"2\", memory: 1Gi}")
    text, out, err, code = fix(tmp_path, "p.yaml", source, mode="")
    assert (code, text) == (1, lines(source))
    assert out.endswith(": NG103 Pod/web: spec.resources.requests.cpu: 1 -> 2\n")
    assert err == ("numaguard fix: 1 fix(es) in 1 file(s) to apply (--diff shows them, --write applies "
                   "them); 0 finding(s) left alone\n")
    text, out, _, code = fix(tmp_path, "p.yaml", source, mode="--diff")
    name = str(tmp_path / "p.yaml").lstrip("/")
    assert (code, text) == (1, lines(source))
    assert out == (f"--- a/{name}\n+++ b/{name}\n@@ -6,7 +6,7 @@\n     numaguard.io/scope: managed\n"
                   " spec:\n   resources:\n-    requests: {cpu: \"1\", memory: 1Gi}\n"
                   "+    requests: {cpu: \"2\", memory: 1Gi}\n     limits: {cpu: \"2\", memory: 1Gi}\n"
                   "   containers:\n     - name: app\n")


def test_crlf_line_ends_and_file_mode_are_kept(tmp_path):
    path = tmp_path / "k.yaml"
    path.write_bytes(KUBELET.format(more="topologyManagerScope: container\n").lstrip("\n")
                     .replace("\n", "\r\n").encode())
    os.chmod(path, 0o640)
    assert CliRunner().invoke(main, ["fix", "--write", "--select", "NG205", str(path)]).exit_code == 1
    assert path.read_bytes().endswith(b'reservedSystemCPUs: "0,32"\r\ntopologyManagerScope: pod\r\n\r\n')
    assert path.stat().st_mode & 0o777 == 0o640


# ------------------------------------------------------------------------------- carriers

def test_an_eks_node_config_is_fixed_in_spec_kubelet_config(tmp_path):
    text, out, err, code = fix(tmp_path, "eks.yaml", """
        apiVersion: node.eks.aws/v1alpha1
        kind: NodeConfig
        spec:
          cluster: {name: numa}
          kubelet:
            config:
              cpuManagerPolicy: static   # pinned pods
              topologyManagerPolicy: single-numa-node
        """)
    assert code == 1
    assert text.endswith("    config:\n      cpuManagerPolicy: static   # pinned pods\n"
                         "      topologyManagerPolicy: single-numa-node\n      featureGates:\n"
                         "        PodLevelResourceManagers: true\n      topologyManagerScope: pod\n")
    assert err.splitlines()[0].endswith(
        ":7: NG204 left alone: nodeadm sizes kubeReserved.memory per instance type (11 x maxPods + "
        "255Mi), so the reservation is not known: set kubeReserved.memory in spec.kubelet.config first")


def test_an_openshift_kubelet_config_gets_the_scope_but_not_the_gates(tmp_path):
    text, out, err, code = fix(tmp_path, "kc.yaml", """
        apiVersion: machineconfiguration.openshift.io/v1
        kind: KubeletConfig
        metadata: {name: numa-pool}
        spec:
          kubeletConfig:
            cpuManagerPolicy: static
            reservedSystemCPUs: "0-1"
        """)
    assert code == 1
    assert text.endswith('    reservedSystemCPUs: "0-1"\n    topologyManagerScope: pod\n')
    assert out.endswith(": NG205 KubeletConfig/numa-pool: spec.kubeletConfig.topologyManagerScope: "
                        "(not set) -> pod\n")
    assert ": NG202 left alone: OpenShift takes kubelet feature gates from the cluster's FeatureGate " \
           "resource" in err


def test_kubelet_settings_inside_strings_are_left_alone(tmp_path):
    source = """
        kind: Cluster
        apiVersion: kind.x-k8s.io/v1alpha4
        nodes:
        - role: worker
          kubeadmConfigPatches:
          - |
            kind: KubeletConfiguration
            cpuManagerPolicy: static
            reservedSystemCPUs: "0"
            topologyManagerScope: container
        """
    text, out, err, code = fix(tmp_path, "kind.yaml", source, "--select", "NG205")
    assert (code, out, text) == (0, "", lines(source))
    assert err.splitlines()[0] == (
        f"{tmp_path / 'kind.yaml'}:10: NG205 left alone: a kind Cluster nodes[0] (worker, kubeadm init) "
        "keeps kubelet settings in layers, strings, flags or fields of its own that it merges itself; "
        "numaguard rewrites them only in a KubeletConfiguration, an EKS NodeConfig's spec.kubelet.config "
        "and an OpenShift KubeletConfig's spec.kubeletConfig")


def test_a_kubeadm_kubelet_configuration_judged_with_its_init_configuration_is_left_alone(tmp_path):
    source = """
        apiVersion: kubeadm.k8s.io/v1beta4
        kind: InitConfiguration
        nodeRegistration:
          kubeletExtraArgs:
            - {name: topology-manager-policy, value: single-numa-node}
        ---
        apiVersion: kubelet.config.k8s.io/v1beta1
        kind: KubeletConfiguration
        cpuManagerPolicy: static
        reservedSystemCPUs: "0"
        topologyManagerScope: container
        """
    text, out, err, code = fix(tmp_path, "kubeadm.yaml", source, "--select", "NG205")
    assert (code, out, text) == (0, "", lines(source))
    assert err.splitlines()[0].endswith(":11: NG205 left alone: it is judged as part of the "
                                        "InitConfiguration of this file, which holds kubelet settings in "
                                        "layers numaguard does not rewrite")


def test_a_kubelet_drop_in_finding_is_listed_for_its_own_file(tmp_path):
    (tmp_path / "config.yaml.d").mkdir()
    (tmp_path / "config.yaml.d" / "10-numa.conf").write_text(
        "apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\n"
        "topologyManagerScope: container\n")
    text, out, err, code = fix(tmp_path, "config.yaml", KUBELET.format(more=""), "--select", "NG205")
    assert (code, out) == (0, "")
    assert err.splitlines()[0] == (
        f"{tmp_path / 'config.yaml'}:3: NG205 left alone: it is set in the kubelet drop-in "
        f"{tmp_path / 'config.yaml.d' / '10-numa.conf'}, judged merged with {tmp_path / 'config.yaml'}: "
        "change it there")


# ------------------------------------------------------------------------------- safety

def test_a_rewrite_that_does_not_read_as_planned_is_rolled_back(tmp_path, monkeypatch):
    """The rewritten text is read back and compared with the planned data, then linted again;
    here the writer is made to lose the change, and (second) the comparison to miss it."""
    import numaguard.lint.cli.fix as fix_cli
    import numaguard.lint.load.roundtrip as roundtrip

    monkeypatch.setattr(roundtrip, "rewrite", lambda text, edits, expected: text + "# touched\n")
    source = KUBELET.format(more="topologyManagerScope: container\n")
    text, out, err, code = fix(tmp_path, "k.yaml", source, "--select", "NG205")
    assert (code, out, text) == (0, "", lines(source))
    assert err == (f"{tmp_path / 'k.yaml'}:6: NG205 left alone: the file could not be rewritten with only "
                   "these fields changed: document 1 would not read as planned at topologyManagerScope\n"
                   "numaguard fix: 0 fix(es) in 0 file(s) applied; 1 finding(s) left alone\n")
    monkeypatch.setattr(fix_cli, "unplanned_change", lambda plan, before, after: None)
    text, out, err, code = fix(tmp_path, "k.yaml", source, "--select", "NG205")
    assert (code, out, text) == (0, "", lines(source))
    assert err == (f"{tmp_path / 'k.yaml'}:6: NG205 left alone: rolled back: NG205 remains: "
                   "topologyManagerScope is container: pod-level resources are ignored for placement; "
                   "each container is aligned separately and containers without their own resources "
                   "share the node pool\n"
                   "numaguard fix: 0 fix(es) in 0 file(s) applied; 1 finding(s) left alone\n")


def test_a_gate_whose_dependency_is_off_is_left_alone(tmp_path):
    """NG202 alone: turning PodLevelResourceManagers on while PodLevelResources is off makes the
    kubelet refuse to start."""
    source = KUBELET.format(more="featureGates: {PodLevelResources: false}\ntopologyManagerScope: pod\n")
    text, out, err, code = fix(tmp_path, "k.yaml", source, "--select", "NG202")
    assert (code, out, text) == (0, "", lines(source))
    assert err.splitlines()[0].endswith(
        ":6: NG202 left alone: PodLevelResourceManagers depends on PodLevelResources, which this "
        "configuration turns off: the kubelet would refuse to start")


def test_flow_style_documents_that_ruamel_would_reflow_are_left_alone(tmp_path):
    source = """
        {
          apiVersion: "v1", kind: "Pod",
          metadata: {name: "web", annotations: {numaguard.io/scope: "managed"}},
          spec: {
            resources: {requests: {cpu: "0.5", memory: "1Gi"}, limits: {cpu: "0.5", memory: "1Gi"}},
            containers: [{name: "app", image: "registry.example.com/web:1"}],
          },
        }
        """
    text, out, err, code = fix(tmp_path, "p.yaml", source)
    assert (code, out, text) == (0, "", lines(source))
    assert err.splitlines()[0].endswith(
        ":5: NG104 left alone: the file could not be rewritten with only these fields changed: the "
        "changed lines are written differently in the file")


# ------------------------------------------------------------------------------- the command

def test_usage_problems_exit_2(tmp_path):
    (tmp_path / "p.yaml").write_text("kind: Pod\n")
    both = CliRunner().invoke(main, ["fix", "--diff", "--write", str(tmp_path / "p.yaml")])
    assert (both.exit_code, both.stderr.splitlines()[-1]) == (2, "Error: give --diff or --write, not both")
    stdin = CliRunner().invoke(main, ["fix", "-"])
    assert (stdin.exit_code, stdin.stderr.splitlines()[-1]) == (
        2, "Error: numaguard fix rewrites files: give paths, not -")
    missing = CliRunner().invoke(main, ["fix", str(tmp_path / "nope.yaml")])
    assert (missing.exit_code, missing.stderr.splitlines()[-1]) == (
        2, f"Error: no such file or directory: {tmp_path / 'nope.yaml'}")
    unknown = CliRunner().invoke(main, ["fix", "--select", "NG999", str(tmp_path / "p.yaml")])
    assert (unknown.exit_code, unknown.stderr.splitlines()[-1]) == (2, "Error: unknown rule id or prefix: NG999")


def test_an_unwritable_file_exits_2_and_keeps_its_content(tmp_path):
    if os.geteuid() == 0:
        path = tmp_path / "k.yaml"
        source = KUBELET.format(more="topologyManagerScope: container\n").lstrip("\n")
        path.write_text(source)
        (tmp_path / "ro").mkdir()
        moved = tmp_path / "ro" / "k.yaml"
        path.rename(moved)
        os.chmod(tmp_path / "ro", 0o500)
        try:
            # root writes anywhere; make the rename fail instead: a directory in the file's place
            moved.unlink()
            moved.mkdir()
            result = CliRunner().invoke(main, ["fix", "--write", str(tmp_path / "ro")])
            assert result.exit_code == 0
        finally:
            os.chmod(tmp_path / "ro", 0o700)
        return
    path = tmp_path / "k.yaml"
    source = KUBELET.format(more="topologyManagerScope: container\n").lstrip("\n")
    path.write_text(source)
    os.chmod(tmp_path, 0o500)
    try:
        result = CliRunner().invoke(main, ["fix", "--write", "--select", "NG205", str(path)])
    finally:
        os.chmod(tmp_path, 0o700)
    assert result.exit_code == 2
    assert path.read_text() == source


def test_the_installed_command_fixes_a_file(tmp_path):
    path = tmp_path / "k.yaml"
    path.write_text(lines(KUBELET.format(more="topologyManagerScope: container\n")))
    result = run_cli("fix", "--select", "NG205", "--write", str(path))
    assert (result.returncode, result.stdout) == (
        1, f"{path}:6: NG205 KubeletConfiguration: topologyManagerScope: container -> pod\n")
    assert path.read_text().endswith('reservedSystemCPUs: "0,32"\ntopologyManagerScope: pod\n\n')
    again = run_cli("fix", "--select", "NG205", "--diff", str(path))
    assert (again.returncode, again.stdout) == (0, "")


def test_every_rule_with_a_fix_has_one_and_only_those():
    assert {r.id for r in all_rules() if r.fix} == set(FIXES)


def test_fixes_that_together_raise_an_error_are_all_left_alone(tmp_path):
    """With the node description, NG204's reservation (200Gi + 100Mi on NUMA node 0) is more
    than that NUMA node has: NG208's entry check, which has no fix."""
    source = KUBELET.format(more="topologyManagerScope: pod\nfeatureGates: {PodLevelResourceManagers: true}\n"
                                 "systemReserved: {memory: 200Gi}\n")
    text, out, err, code = fix(tmp_path, "k.yaml", source, "--node", "builtin:dual-socket-ht")
    assert (code, out, text) == (0, "", lines(source))
    assert err.splitlines()[0].endswith(
        ":1: NG204 left alone: together the fixes would raise NG208: the kubelet refuses to start: "
        "reservedMemory reserves 204900Mi of memory on NUMA node 0, which has only 128Gi")


# ------------------------------------------------------------------------------- real repositories

REAL_WORLD = {
    # file -> the changed lines (removed, added), every other line kept byte for byte
    "tests/fixtures/realrepo/website/pod-level-resources.yaml": (['      memory: "100Mi"'],
                                                                 ['      memory: "200Mi"']),
    "tests/fixtures/crds/kruise/apps_v1alpha1_statefulset.bad-request-above-limit.yaml": (
        ['          cpu: "4"'], ['          cpu: "2"']),
    "tests/fixtures/crds/trainer/deepspeed_distributed.bad-launcher.yaml": (
        ['                      cpu: "4"'], ['                      cpu: "2"']),
    "deploy/examples/workloads/order-matcher.yaml": ([], ['        requests: {cpu: "4"}']),
    "deploy/examples/node-pool/kubelet-config-canary-old.yaml": (
        ["memoryManagerPolicy: BestEffort", "topologyManagerScope: container"],
        ["  PodLevelResourceManagers: true", "memoryManagerPolicy: Static", "topologyManagerScope: pod",
         "reservedMemory:", "- numaNode: 0", "  limits:", "    memory: 100Mi"]),
    "deploy/examples/node-pool/kubelet-config-from-article.yaml": (
        [], ["reservedMemory:", "- numaNode: 0", "  limits:", "    memory: 100Mi"]),
}


def test_real_world_files_change_only_in_the_fixed_fields(tmp_path):
    import difflib
    import shutil

    from conftest import REPO

    for name in ("tests/fixtures/realrepo", "tests/fixtures/crds", "deploy/examples"):
        shutil.copytree(REPO / name, tmp_path / name)
    (tmp_path / "plain.yaml").write_text("apiVersion: numaguard.io/v1alpha1\nkind: Config\n")
    before = {p: p.read_text() for p in tmp_path.rglob("*") if p.is_file()}
    plain = CliRunner().invoke(main, ["fix", "--write", "--config", str(tmp_path / "plain.yaml"),
                                      str(tmp_path / "tests/fixtures/realrepo"), str(tmp_path / "tests/fixtures/crds")])
    assert plain.exit_code == 1, plain.stderr
    result = CliRunner().invoke(main, ["fix", "--write", "--config", str(tmp_path / "deploy/examples/.numaguard.yaml"),
                                       str(tmp_path / "deploy/examples")])
    assert result.exit_code == 1, result.stderr
    # with the examples' node (full-pcpus-only on two threads per core) 3 CPUs would be rejected
    assert (f"{tmp_path / 'deploy/examples/workloads/analytics.yaml'}:20: NG104 left alone: the fix would "
            "raise NG303: cpuManagerPolicyOptions full-pcpus-only is on and node numa-pool-dual-socket has "
            "2 threads per core: the pod's whole-CPU budget (3) is not a multiple of 2") in result.stderr
    changed = {}
    for path, old in before.items():
        new = path.read_text()
        if new != old:
            diff = list(difflib.ndiff(old.splitlines(), new.splitlines()))
            changed[str(path.relative_to(tmp_path))] = ([d[2:] for d in diff if d.startswith("- ")],
                                                         [d[2:] for d in diff if d.startswith("+ ")])
    assert {k: v for k, v in changed.items() if k in REAL_WORLD} == REAL_WORLD
    assert sorted(changed) == sorted([*REAL_WORLD, *(
        f"tests/fixtures/crds/{n}" for n in (
            "argo-rollouts/rollout-canary.bad-request-above-limit.yaml",
            "kuberay/ray-job.light-weight-submitter.bad-submitter.yaml", "lws/lws-multi-template.bad-worker.yaml",
            "mpi-operator/pi.bad-worker.yaml", "training-operator/tensorflow-simple.bad-request-above-limit.yaml",
            "volcano/tf-example.bad-worker.yaml"))])
    for name in changed:
        if name.startswith("tests/fixtures/crds/") and name not in REAL_WORLD:
            assert changed[name][1] == [changed[name][0][0].replace('cpu: "4"', 'cpu: "2"')]
    for config, folder in (("plain.yaml", "tests"), ("deploy/examples/.numaguard.yaml", "deploy")):
        again = CliRunner().invoke(main, ["fix", "--config", str(tmp_path / config), str(tmp_path / folder)])
        assert (again.exit_code, again.stdout) == (0, "")


# ------------------------------------------------------------------------------- README

def _readme_section() -> str:
    from conftest import REPO

    readme = (REPO / "README.md").read_text(encoding="utf-8")
    return readme.split("## `numaguard fix`", 1)[1].split("\n## ", 1)[0]


def test_readme_lists_the_fixable_rules_from_their_metadata():
    from numaguard.lint.rules.docs import render_fixable

    listed = _readme_section().split("<!-- fixable:start -->", 1)[1].split("<!-- fixable:end -->", 1)[0]
    assert listed.strip() == render_fixable().strip(), (
        "README's fixable rules are stale: run `python -m numaguard.lint.rules.docs --update-readme`")
    assert listed.count("\n- **NG") == len(FIXES)


def test_readme_example_prints_the_diff_it_shows_and_writes_it(tmp_path):
    import re

    section = _readme_section()
    script = re.search(r"```sh\n(.+?)\n```", section, re.S).group(1)
    source = script.split("<<'YAML'\n", 1)[1].split("\nYAML\n", 1)[0] + "\n"
    assert script.endswith("numaguard fix --diff web.yaml")
    expected = re.search(r"```diff\n(.+?\n)```", section, re.S).group(1)
    (tmp_path / "web.yaml").write_text(source)
    shown = run_cli("fix", "--diff", "web.yaml", cwd=tmp_path)
    assert (shown.returncode, shown.stdout) == (1, expected)
    assert run_cli("fix", "--write", "web.yaml", cwd=tmp_path).returncode == 1
    import difflib
    assert "".join(difflib.unified_diff(source.splitlines(True), (tmp_path / "web.yaml").read_text().splitlines(True),
                                        "a/web.yaml", "b/web.yaml")) == expected
    again = run_cli("fix", "web.yaml", cwd=tmp_path)
    assert (again.returncode, again.stdout) == (0, "")
