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

from conftest import run_cli


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
    _, out, err, code = fix(tmp_path, "k2.yaml", KUBELET.format(more=lines("""
        memoryManagerPolicy: Static
        evictionHard: {memory.available: 5%}
        """)), "--select", "NG208")
    assert (code, out) == (0, "")
    assert err.splitlines()[0].endswith(": NG208 left alone: evictionHard memory.available is 5%, a share "
                                        "of the node's memory: the total depends on the machine (give "
                                        "--node, or use an absolute threshold)")


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
    path = tmp_path / "p.yaml"
    assert (code, text) == (1, lines(source))
    assert out == (f"--- a/{path}\n+++ b/{path}\n@@ -6,7 +6,7 @@\n     numaguard.io/scope: managed\n"
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
