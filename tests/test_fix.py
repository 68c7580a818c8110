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


def test_an_unwritable_file_exits_2_and_keeps_its_content(tmp_path, monkeypatch):
    """A file that cannot be written (here the disk is full when the new content is written
    beside it: root may write anywhere, so permissions cannot make it fail): exit 2, one
    line saying why, the file as it was and no temporary file left behind."""
    import errno
    import tempfile

    import numaguard.lint.cli.fix as fix_cli

    real_mkstemp = tempfile.mkstemp

    def full_disk(*args, **kwargs):
        fd, name = real_mkstemp(*args, **kwargs)
        os.close(fd)
        os.unlink(name)
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
    monkeypatch.setattr(fix_cli.tempfile, "mkstemp", full_disk)
    path = tmp_path / "k.yaml"
    source = lines(KUBELET.format(more="topologyManagerScope: container\n"))
    path.write_text(source)
    result = CliRunner().invoke(main, ["fix", "--write", "--select", "NG205", str(path)])
    assert result.exit_code == 2
    assert result.stderr.splitlines()[0] == f"numaguard fix: {path}: cannot write: No space left on device"
    assert (path.read_text(), os.listdir(tmp_path)) == (source, ["k.yaml"])


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
    # issue 21 §1: the removed gate at its GA value is deleted, the case-only "Static" written static
    "deploy/examples/node-pool/kubelet-config-canary-old.yaml": (
        ["  CPUManager: true                   # removed gate: the kubelet no longer recognises it",
         "cpuManagerPolicy: Static             # policy names are case-sensitive",
         "memoryManagerPolicy: BestEffort", "topologyManagerScope: container"],
        ["  PodLevelResourceManagers: true", "cpuManagerPolicy: static             # policy names are case-sensitive",
         "memoryManagerPolicy: Static", "topologyManagerScope: pod",
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
            "appwrapper/wrapped-deployment.bad-request-above-limit.yaml",
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


# ------------------------------------------------------------------------------- lint/README.md

def _readme_section() -> str:
    from conftest import guide

    readme = guide("lint/README.md")
    return readme.split("## `numaguard fix`", 1)[1].split("\n## ", 1)[0]


def test_readme_lists_the_fixable_rules_from_their_metadata():
    from numaguard.lint.rules.docs import render_fixable

    listed = _readme_section().split("<!-- fixable:start -->", 1)[1].split("<!-- fixable:end -->", 1)[0]
    assert listed.strip() == render_fixable().strip(), (
        "lint/README.md's fixable rules are stale: run `python -m numaguard.lint.rules.docs --update-readme`")
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


# ------------------------------------------------------------------------------- anchors, bad input

def test_a_change_inside_an_aliased_mapping_is_left_alone(tmp_path):
    """`&lim` is the pod's limits and, through `*lim`, a container's too: rounding the pod's
    cpu there would change the container's limit as well."""
    source = """
        apiVersion: v1
        kind: Pod
        metadata: {name: web, annotations: {numaguard.io/scope: managed}}
        spec:
          resources:
            requests: {cpu: 1500m, memory: 1Gi}
            limits: &lim {cpu: 1500m, memory: 1Gi}
          containers:
            - name: app
              image: registry.example.com/web:1
              resources:
                limits: *lim
        """
    text, out, err, code = fix(tmp_path, "p.yaml", source)
    assert (code, out, text) == (0, "", lines(source))
    assert err == (f"{tmp_path / 'p.yaml'}:6: NG104 left alone: the file could not be rewritten with only "
                   "these fields changed: it is in &lim, which the file uses in several places through YAML "
                   "aliases: the change would land in all of them\n"
                   "numaguard fix: 0 fix(es) in 0 file(s) applied; 1 finding(s) left alone\n")


def test_a_merge_key_is_kept_and_the_fix_lands_beside_it(tmp_path):
    """`<<: *r` copies the requests into the limits; lowering the request (NG114) writes the
    new request next to the merge key, and the limits read as before."""
    text, out, _, code = fix(tmp_path, "p.yaml", """
        apiVersion: v1
        kind: Pod
        metadata: {name: web, annotations: {numaguard.io/scope: managed}}
        spec:
          resources:
            limits: &r {cpu: "2", memory: 1Gi}
            requests: {<<: *r, cpu: "3"}   # a typo
          containers:
            - name: app
              image: registry.example.com/web:1
        """)
    assert code == 1
    assert text.splitlines()[5:7] == ['    limits: &r {cpu: "2", memory: 1Gi}',
                                      '    requests: {<<: *r, cpu: "2"}   # a typo']
    assert out == f"{tmp_path / 'p.yaml'}:7: NG114 Pod/web: spec.resources.requests.cpu: 3 -> 2\n"


def test_files_that_do_not_parse_are_listed_and_left_as_they_are(tmp_path):
    sources = {
        "multi.yaml": "apiVersion: v1\nkind: Pod\nmetadata: {name: a}\nspec:\n"
                      "  resources: {requests: {cpu: 1500m}, limits: {cpu: 1500m}}\n"
                      "---\nkind: Pod\n  bad: [unclosed\n",
        "broken.json": '{"apiVersion": "v1", "kind": "Pod",\n  "spec": {',
        "twice.yaml": "apiVersion: v1\nkind: Pod\nkind: Pod\n",
    }
    for name, text in sources.items():
        (tmp_path / name).write_text(text)
    (tmp_path / "latin1.yaml").write_bytes(b"apiVersion: v1\nkind: Pod\nmetadata: {name: caf\xe9}\n")
    result = CliRunner().invoke(main, ["fix", "--write", str(tmp_path)])
    assert (result.exit_code, result.stdout) == (0, "")
    assert result.stderr.splitlines() == [
        f"{tmp_path / 'broken.json'}:3: NG001 left alone: a part of the file cannot be read (while parsing a "
        "flow node: did not find expected node content): numaguard fix rewrites only files it reads whole",
        f"{tmp_path / 'latin1.yaml'}:-: NG001 left alone: not UTF-8 (invalid continuation byte at byte 45): "
        "numaguard fix rewrites only files it can read",
        f"{tmp_path / 'multi.yaml'}:8: NG001 left alone: a part of the file cannot be read (mapping values are "
        "not allowed in this context): numaguard fix rewrites only files it reads whole",
        f"{tmp_path / 'twice.yaml'}:3: NG001 left alone: a part of the file cannot be read (mapping key "
        "\"kind\" already defined at line 2, with the same value: kubectl, Helm and the API server read one; "
        "kustomize (kubectl apply -k), Flux and Argo CD's kustomize applications refuse the file): numaguard fix "
        "rewrites only files it reads whole",
        "numaguard fix: 0 fix(es) in 0 file(s) applied; 4 finding(s) left alone"]
    assert {name: (tmp_path / name).read_text() for name in sources} == sources


# ------------------------------------------------------------------------------- carriers

JOBSET = """
# two replicated jobs: a driver and the NUMA-aligned workers
apiVersion: jobset.x-k8s.io/v1alpha2
kind: JobSet
metadata: {name: train, annotations: {numaguard.io/scope: managed}}
spec:
  replicatedJobs:
    - name: driver
      template:
        spec:
          template:
            spec:
              restartPolicy: Never
              resources:
                requests: {cpu: "1", memory: 512Mi}
                limits: {cpu: "1", memory: 1Gi}
              containers: [{name: driver, image: registry.example.com/driver:1}]
    - name: workers   # the NUMA-aligned part
      template:
        spec:
          template:
            spec:
              restartPolicy: Never
              resources:
                requests:
                  cpu: 3500m   # to round
                  memory: 8Gi
                limits:
                  cpu: 3500m
                  memory: 8Gi
              containers: [{name: worker, image: registry.example.com/worker:1}]
"""


def test_each_fix_lands_in_its_own_template_of_a_jobset(tmp_path):
    text, out, err, code = fix(tmp_path, "jobset.yaml", JOBSET)
    assert code == 1
    path = tmp_path / "jobset.yaml"
    assert out.splitlines() == [
        f"{path}:14: NG103 JobSet/train: spec.replicatedJobs[0].template.spec.template.spec.resources.requests"
        ".memory: 512Mi -> 1Gi",
        f"{path}:25: NG104 JobSet/train: spec.replicatedJobs[1].template.spec.template.spec.resources.requests"
        ".cpu: 3500m -> 4; spec.replicatedJobs[1].template.spec.template.spec.resources.limits.cpu: 3500m -> 4"]
    assert err == "numaguard fix: 2 fix(es) in 1 file(s) applied; 0 finding(s) left alone\n"
    assert text == lines(JOBSET).replace("{cpu: \"1\", memory: 512Mi}", "{cpu: \"1\", memory: 1Gi}") \
        .replace("cpu: 3500m   # to round", 'cpu: "4"     # to round').replace("cpu: 3500m\n", 'cpu: "4"\n')


def test_a_carrier_of_the_config_file_is_fixed_in_the_template_its_path_names(tmp_path):
    (tmp_path / ".numaguard.yaml").write_text(
        "podTemplates:\n- apiVersion: ml.example.com/v1\n  kind: Trainer\n  paths: [\"spec.workers[*].template\"]\n")
    source = """
        apiVersion: ml.example.com/v1
        kind: Trainer
        metadata: {name: t, annotations: {numaguard.io/scope: managed}}
        spec:
          template:        # not a template path of Trainer: left as it is
            spec:
              resources: {limits: {cpu: "2"}, requests: {cpu: "3"}}
          workers:
            - template:
                spec:
                  resources: {limits: {cpu: "2", memory: 1Gi}, requests: {cpu: "2", memory: 1Gi}}
                  containers: [{name: c, image: registry.example.com/c:1}]
            - template:
                spec:
                  resources: {limits: {cpu: "2", memory: 1Gi}, requests: {cpu: "3", memory: 1Gi}}
                  containers: [{name: c, image: registry.example.com/c:1}]
        """
    path = tmp_path / "trainer.yaml"
    path.write_text(lines(source))
    result = run_cli("fix", "--write", "trainer.yaml", cwd=tmp_path)
    assert (result.returncode, result.stdout) == (
        1, "trainer.yaml:15: NG114 Trainer/t: spec.workers[1].template.spec.resources.requests.cpu: 3 -> 2\n")
    assert path.read_text() == lines(source).replace(
        '{limits: {cpu: "2", memory: 1Gi}, requests: {cpu: "3", memory: 1Gi}}',
        '{limits: {cpu: "2", memory: 1Gi}, requests: {cpu: "2", memory: 1Gi}}')


# ------------------------------------------------------------------------------- pools

POOLS_CONFIG = """\
apiVersion: numaguard.io/v1alpha1
kind: Config
kubernetesVersion: "1.37"
pools:
  - name: numa        # no SMT
    nodeLabels: {pool: numa}
    taint: {key: pool, value: numa, effect: NoSchedule}
    kubeletConfigs: ["numa/*.yaml"]
    node: numa-node.yaml
  - name: edge        # two threads per core, full-pcpus-only, one NUMA node
    nodeLabels: {pool: edge}
    taint: {key: pool, value: edge, effect: NoSchedule}
    kubeletConfigs: ["edge/*.yaml"]
    node: edge-node.yaml
"""

POOL_NODE = """\
apiVersion: numaguard.io/v1alpha1
kind: NodeProfile
metadata: {{name: {name}}}
spec:
  topology: {{sockets: {sockets}, numaNodesPerSocket: 1, coresPerNumaNode: 8, threadsPerCore: {threads}, memoryPerNumaNode: 64Gi}}
  kubeletConfig: {pool}/kubelet.yaml
"""

POOL_KUBELET = """\
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
featureGates:
  PodLevelResourceManagers: true
cpuManagerPolicy: static
cpuManagerPolicyOptions:
  full-pcpus-only: "true"
memoryManagerPolicy: Static
topologyManagerPolicy: single-numa-node
topologyManagerScope: pod
reservedSystemCPUs: "0,8"
kubeReserved: {memory: 1Gi}
evictionHard: {memory.available: 100Mi}
reservedMemory:
  - numaNode: 0
    limits: {memory: 1124Mi}
"""

POOL_POD = """\
apiVersion: v1
kind: Pod
metadata: {{name: {name}}}
spec:
  tolerations: [{{key: pool, value: {pool}, effect: NoSchedule}}]
  nodeSelector: {{pool: {pool}}}
{resources}  containers:
  - name: app
    image: registry.example.com/app:1
{container}"""


def pools(tmp_path) -> None:
    (tmp_path / ".numaguard.yaml").write_text(POOLS_CONFIG)
    for name, sockets, threads in (("numa", 2, 1), ("edge", 1, 2)):
        (tmp_path / name).mkdir()
        (tmp_path / f"{name}-node.yaml").write_text(POOL_NODE.format(name=f"{name}-node", sockets=sockets,
                                                                     threads=threads, pool=name))
        (tmp_path / name / "kubelet.yaml").write_text(POOL_KUBELET)


def test_a_pod_is_fixed_as_its_pool_s_node_allows(tmp_path):
    """The same fractional pod: rounded up to 3 CPUs in the numa pool; in the edge pool 3 CPUs
    on two threads per core with full-pcpus-only would be rejected (NG303), so it is left."""
    pools(tmp_path)
    budget = '  resources:\n    requests: {cpu: 2500m, memory: 2Gi}\n    limits: {cpu: 2500m, memory: 2Gi}\n'
    (tmp_path / "pods.yaml").write_text("---\n".join(
        POOL_POD.format(name=f"to-{pool}", pool=pool, resources=budget, container="") for pool in ("numa", "edge")))
    result = run_cli("fix", "pods.yaml", cwd=tmp_path)
    assert (result.returncode, result.stdout) == (
        1, "pods.yaml:8: NG104 Pod/to-numa: spec.resources.requests.cpu: 2500m -> 3; "
           "spec.resources.limits.cpu: 2500m -> 3\n")
    assert result.stderr == (
        "pods.yaml:21: NG104 left alone: the fix would raise NG303: cpuManagerPolicyOptions full-pcpus-only is "
        "on and node edge-node has 2 threads per core: the pod's whole-CPU budget (3) is not a multiple of 2, so "
        "the kubelet rejects the pod with SMTAlignmentError: \"SMT Alignment Error: requested 3 cpus not "
        "multiple cpus per core = 2\"\n"
        "numaguard fix: 1 fix(es) in 1 file(s) to apply (--diff shows them, --write applies them); "
        "1 finding(s) left alone\n")


def test_only_a_pod_of_a_pool_gets_a_pod_level_budget(tmp_path):
    """NG101 holds for pods that tolerate a pool's taint (and select its nodes); a pod of no
    pool has no finding and nothing is added to it."""
    pools(tmp_path)
    container = "    resources:\n      limits: {cpu: \"2\", memory: 1Gi}\n"
    free = ("apiVersion: v1\nkind: Pod\nmetadata: {name: free}\nspec:\n  containers:\n  - name: app\n"
            "    image: registry.example.com/app:1\n" + container)
    (tmp_path / "pods.yaml").write_text(POOL_POD.format(name="edge-pod", pool="edge", resources="",
                                                        container=container) + "---\n" + free)
    result = run_cli("fix", "--write", "pods.yaml", cwd=tmp_path)
    assert (result.returncode, result.stdout) == (
        1, "pods.yaml:5: NG101 Pod/edge-pod: spec.resources.requests.cpu: (not set) -> 2; "
           "spec.resources.requests.memory: (not set) -> 1Gi; spec.resources.limits.cpu: (not set) -> 2; "
           "spec.resources.limits.memory: (not set) -> 1Gi\n")
    assert (tmp_path / "pods.yaml").read_text().split("---\n") == [
        POOL_POD.format(name="edge-pod", pool="edge", resources="", container=container)
        + '  resources:\n    requests:\n      cpu: "2"\n      memory: 1Gi\n    limits:\n      cpu: "2"\n'
          "      memory: 1Gi\n", free]


def test_a_kubelet_configuration_is_fixed_with_its_pool_s_node(tmp_path):
    """reservedMemory on NUMA node 1: the numa pool's machines have it (the total is fixed in
    place), the edge pool's single-NUMA machines do not (left alone)."""
    pools(tmp_path)
    candidate = POOL_KUBELET.replace("- numaNode: 0\n    limits: {memory: 1124Mi}",
                                     "- numaNode: 1     # the system's node\n    limits: {memory: 1Gi}")
    for pool in ("numa", "edge"):
        (tmp_path / pool / "candidate.yaml").write_text(candidate)
    result = run_cli("fix", "--diff", "numa", "edge", cwd=tmp_path)
    assert (result.returncode, result.stdout) == (1, (
        "--- a/numa/candidate.yaml\n+++ b/numa/candidate.yaml\n@@ -13,4 +13,4 @@\n"
        " evictionHard: {memory.available: 100Mi}\n reservedMemory:\n   - numaNode: 1     # the system's node\n"
        "-    limits: {memory: 1Gi}\n+    limits: {memory: 1124Mi}\n"))
    assert result.stderr == (
        "edge/candidate.yaml:15: NG208 left alone: the fix would not clear it: the kubelet refuses to start: the "
        "reserved memory configuration references a NUMA node 1 that does not exist on this machine (NUMA "
        "nodes: 0)\n"
        "numaguard fix: 1 fix(es) in 1 file(s) to apply (shown above); 1 finding(s) left alone\n")


def test_pool_option_makes_a_folder_s_configurations_the_pool_s(tmp_path):
    """A KubeletConfiguration that shows no intent is held to the pool requirements only as a
    pool's: fixed with --pool NAME=DIR (named once though given twice), not without."""
    pools(tmp_path)
    (tmp_path / "other").mkdir()
    source = "apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\ncpuManagerPolicy: none\n"
    (tmp_path / "other" / "plain.yaml").write_text(source)
    alone = run_cli("fix", "--write", "other", cwd=tmp_path)
    assert (alone.returncode, alone.stdout) == (0, "")
    assert alone.stderr == "numaguard fix: 0 fix(es) in 0 file(s) applied; 0 finding(s) left alone\n"
    pooled = run_cli("fix", "--write", "--pool", "numa=other", "other/plain.yaml", cwd=tmp_path)
    assert (pooled.returncode, pooled.stdout.splitlines()) == (1, [
        "other/plain.yaml:1: NG202 KubeletConfiguration: featureGates.PodLevelResourceManagers: (not set) -> true",
        "other/plain.yaml:1: NG205 KubeletConfiguration: topologyManagerScope: (not set) -> pod",
        "other/plain.yaml:1: NG204 KubeletConfiguration: memoryManagerPolicy: (not set) -> Static; "
        "reservedMemory: (not set) -> [{numaNode: 0, limits: {memory: 100Mi}}]"])
    # NG203 has a fix now (a case-only spelling), so its finding here is listed with why not
    assert pooled.stderr == (
        "other/plain.yaml:3: NG203 left alone: the static policy is not chosen here: turning it on changes how "
        "every pod on the node gets CPUs, needs CPUs reserved for the system and a drain (removing "
        "/var/lib/kubelet/cpu_manager_state); that is yours to decide\n"
        "numaguard fix: 3 fix(es) in 1 file(s) applied; 1 finding(s) left alone\n")
    assert (tmp_path / "other" / "plain.yaml").read_text() == source + (
        "featureGates:\n  PodLevelResourceManagers: true\ntopologyManagerScope: pod\nmemoryManagerPolicy: Static\n"
        "reservedMemory:\n- numaNode: 0\n  limits:\n    memory: 100Mi\n")
    again = run_cli("fix", "--diff", "--pool", "numa=other", cwd=tmp_path)
    assert (again.returncode, again.stdout) == (0, "")


def test_a_new_reservation_goes_on_a_numa_node_of_the_pool_s_machines(tmp_path):
    """NG204 on two pools' configurations: the edge pool's machines (lscpu) have NUMA node 1
    only, so its reservation goes there; the other pool, without a node description, gets 0."""
    (tmp_path / ".numaguard.yaml").write_text(
        "apiVersion: numaguard.io/v1alpha1\nkind: Config\npools:\n"
        "  - {name: numa, kubeletConfigs: [\"numa/*.yaml\"]}\n"
        "  - {name: edge, kubeletConfigs: [\"edge/*.yaml\"], node: edge-node.lscpu}\n")
    (tmp_path / "edge-node.lscpu").write_text("# CPU,Core,Socket,Node\n0,0,0,1\n1,1,0,1\n2,2,0,1\n3,3,0,1\n")
    source = ('apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\ncpuManagerPolicy: static\n'
              'reservedSystemCPUs: "0"\nmemoryManagerPolicy: None\n')
    for pool in ("numa", "edge"):
        (tmp_path / pool).mkdir()
        (tmp_path / pool / "kubelet.yaml").write_text(source)
    result = run_cli("fix", "--write", "--select", "NG204", "numa", "edge", cwd=tmp_path)
    assert (result.returncode, result.stdout.splitlines()) == (1, [
        f"{pool}/kubelet.yaml:5: NG204 KubeletConfiguration: memoryManagerPolicy: None -> Static; reservedMemory: "
        f"(not set) -> [{{numaNode: {numa}, limits: {{memory: 100Mi}}}}]" for pool, numa in (("numa", 0), ("edge", 1))])
    for pool, numa in (("numa", 0), ("edge", 1)):
        assert (tmp_path / pool / "kubelet.yaml").read_text() == source.replace("None", "Static") + (
            f"reservedMemory:\n- numaNode: {numa}\n  limits:\n    memory: 100Mi\n")
    again = run_cli("fix", "--diff", "--select", "NG204", "numa", "edge", cwd=tmp_path)
    assert (again.returncode, again.stdout) == (0, "")
