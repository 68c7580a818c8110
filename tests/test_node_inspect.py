"""`numaguard node inspect` against a real gRPC server on a unix socket (answering recorded
PodResources responses, tests/fixtures/podresources/), a fabricated /sys tree, and checkpoint
files written as a 1.37 kubelet writes them."""
from __future__ import annotations

import json
import shutil
import socket
import tempfile
from concurrent import futures
from pathlib import Path

import grpc
import pytest
from click.testing import CliRunner
from google.protobuf import json_format

from numaguard.lint.cli.main import main
from numaguard.lint.k8s.checkpoints import cpu_checkpoint_json, memory_checkpoint_json
from numaguard.lint.node.podresources import api_pb2, api_pb2_grpc
from numaguard.lint.node.podresources_client import PodResourcesError, read_pod_resources

from conftest import FIXTURES

RECORDED = FIXTURES / "podresources"
GiB = 2**30
KUBELET_CONFIG = """apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
featureGates: {PodLevelResourceManagers: true}
cpuManagerPolicy: static
memoryManagerPolicy: Static
topologyManagerPolicy: single-numa-node
topologyManagerScope: pod
reservedSystemCPUs: "0,8"
kubeReserved: {memory: 924Mi}
reservedMemory:
  - numaNode: 0
    limits: {memory: 1Gi}
"""


class RecordedLister(api_pb2_grpc.PodResourcesListerServicer):
    """Answers List and GetAllocatableResources with the recorded responses."""

    def __init__(self, listed: dict, allocatable: dict | None) -> None:
        self.listed, self.allocatable = listed, allocatable

    def List(self, request, context):
        return json_format.ParseDict(self.listed, api_pb2.ListPodResourcesResponse())

    def GetAllocatableResources(self, request, context):
        if self.allocatable is None:
            context.abort(grpc.StatusCode.UNIMPLEMENTED, "unknown method")
        return json_format.ParseDict(self.allocatable, api_pb2.AllocatableResourcesResponse())


def serve(path: Path, allocatable: bool = True) -> grpc.Server:
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=2))
    api_pb2_grpc.add_PodResourcesListerServicer_to_server(RecordedLister(
        json.loads((RECORDED / "list.json").read_text()),
        json.loads((RECORDED / "allocatable.json").read_text()) if allocatable else None), server)
    server.add_insecure_port(f"unix:{path}")
    server.start()
    return server


def write_sysfs(root: Path) -> None:
    """2 sockets, one NUMA node each, 4 cores x 2 threads: CPUs 0-3 + 8-11 on NUMA 0."""
    files = {"devices/system/cpu/online": "0-15"}
    for cpu in range(16):
        numa, core = (cpu % 8) // 4, cpu % 4
        files[f"devices/system/cpu/cpu{cpu}/topology/physical_package_id"] = str(numa)
        files[f"devices/system/cpu/cpu{cpu}/topology/core_id"] = str(core)
        if cpu:
            files[f"devices/system/cpu/cpu{cpu}/online"] = "1"
    for numa, cpus in ((0, "0-3,8-11"), (1, "4-7,12-15")):
        base = f"devices/system/node/node{numa}"
        files[f"{base}/cpulist"] = cpus
        files[f"{base}/distance"] = "10 21" if numa == 0 else "21 10"
        files[f"{base}/meminfo"] = f"Node {numa} MemTotal:       {16 * GiB // 1024} kB"
        files[f"{base}/hugepages/hugepages-1048576kB/nr_hugepages"] = "2"
    for rel, text in files.items():
        path = root / "sys" / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text + "\n")


def write_node_root(top: Path) -> Path:
    """`top/host`: a node's sysfs, kubelet configuration and checkpoints, and the directory of
    the PodResources socket. `top` must be short: a unix socket path stays under 108 bytes
    (sockaddr_un)."""
    root = top / "host"
    write_sysfs(root)
    state = root / "var/lib/kubelet"
    (state / "pod-resources").mkdir(parents=True)
    (state / "config.yaml").write_text(KUBELET_CONFIG)
    (state / "cpu_manager_state").write_text(json.dumps(cpu_checkpoint_json(
        "static", "0,6-8,14-15",
        {"uid-web": {"app": "1,9"}, "uid-db": {"db": "2-3,10-11"}, "uid-batch": {"worker": "4-5,12-13"}})))
    (state / "memory_manager_state").write_text(json.dumps(memory_checkpoint(numa_of_worker=1)))
    return root


@pytest.fixture
def node_root():
    top = Path(tempfile.mkdtemp(prefix="ng-", dir="/tmp"))
    yield write_node_root(top)
    shutil.rmtree(top)


def table(total: int, system_reserved: int, reserved: int) -> dict:
    allocatable = total - system_reserved
    return {"total": total, "systemReserved": system_reserved, "allocatable": allocatable, "reserved": reserved,
            "free": allocatable - reserved}


def memory_checkpoint(numa_of_worker: int) -> dict:
    """What the Memory Manager records for the recorded pods (memory blocks on their NUMA nodes)."""
    def block(numa: int, size: int, kind: str = "memory") -> dict:
        return {"numaAffinity": [numa], "type": kind, "size": size}
    machine = {"0": {"numberOfAssignments": 3, "cells": [0], "memoryMap": {
                   "memory": table(16 * GiB, GiB, 6 * GiB + (GiB if numa_of_worker == 0 else 0)),
                   "hugepages-1Gi": table(2 * GiB, 0, GiB)}},
               "1": {"numberOfAssignments": 1, "cells": [1], "memoryMap": {
                   "memory": table(16 * GiB, 0, GiB if numa_of_worker == 1 else 0),
                   "hugepages-1Gi": table(2 * GiB, 0, 0)}}}
    entries = {"uid-web": {"app": [block(0, 2 * GiB)]},
               "uid-db": {"db": [block(0, 4 * GiB), block(0, GiB, "hugepages-1Gi")]},
               "uid-batch": {"worker": [block(numa_of_worker, GiB)]}}
    return memory_checkpoint_json("Static", machine, entries)


def run(root: Path, *extra: str):
    return CliRunner().invoke(main, ["node", "inspect", "--root", str(root), *extra])


def test_everything_agrees(node_root):
    server = serve(node_root / "var/lib/kubelet/pod-resources/kubelet.sock")
    try:
        result = run(node_root, "--format", "json")
    finally:
        server.stop(None)
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert [(s["name"].split(" ")[0], s["ok"]) for s in report["sources"]] == [
        ("sysfs", True), ("kubelet", True), ("cpu", True), ("memory", True), ("PodResources", True)]
    assert report["allocatableCpus"] == "1-7,9-15"
    rows = [(c["pod"], c["container"], c["cpus"], c["cpuNumaNodes"], c["memoryNumaNodes"], c["checkpoint"],
             c["simulatedCpus"], c["simulation"]) for c in report["containers"]]
    assert rows == [
        ("web-0", "app", "1,9", [0], [0], "agrees", "1,9", "agrees"),
        ("web-0", "log-shipper", "", [], [], "agrees", "", "agrees"),     # replayed pod, shared pool
        ("db-0", "db", "2-3,10-11", [0], [0], "agrees", "2-3,10-11", "agrees"),
        ("batch-7f9c", "worker", "4-5,12-13", [1], [1], "agrees", "4-5,12-13", "agrees"),
        ("kube-proxy-x2x8q", "kube-proxy", "", [], [], "agrees", None, "agrees"),    # not replayed
    ]
    assert [c["memoryCheckpoint"] for c in report["containers"]] == ["agrees"] * 5
    assert report["findings"] == []


def test_memory_checkpoint_disagreement(node_root):
    (node_root / "var/lib/kubelet/memory_manager_state").write_text(json.dumps(memory_checkpoint(numa_of_worker=0)))
    server = serve(node_root / "var/lib/kubelet/pod-resources/kubelet.sock")
    try:
        result = run(node_root, "--format", "json")
    finally:
        server.stop(None)
    assert result.exit_code == 1
    report = json.loads(result.stdout)
    assert [(c["container"], c["memoryCheckpoint"]) for c in report["containers"] if not c["agrees"]] == [
        ("worker", "differs: checkpoint records NUMA 0")]


def test_checkpoint_disagreement_and_text_report(node_root):
    (node_root / "var/lib/kubelet/cpu_manager_state").write_text(json.dumps(cpu_checkpoint_json(
        "static", "0,6-8,14-15", {"uid-web": {"app": "1,9"}, "uid-db": {"db": "4-5,12-13"}})))
    server = serve(node_root / "var/lib/kubelet/pod-resources/kubelet.sock")
    try:
        result = run(node_root)
    finally:
        server.stop(None)
    assert result.exit_code == 1
    lines = result.stdout.splitlines()
    assert "  shop/db-0 db: cpus 2-3,10-11 (NUMA 0), memory NUMA 0" in lines
    assert "      checkpoint: differs: checkpoint records 4-5,12-13" in lines
    assert "      checkpoint: differs: not recorded" in lines          # jobs/batch-7f9c worker
    assert lines[-1] == "5 container(s), 2 differ; 0 checkpoint finding(s)"


def test_missing_socket_is_one_line_and_the_rest_is_reported(node_root):
    (node_root / "var/lib/kubelet/memory_manager_state").unlink()
    result = run(node_root, "--format", "json")
    assert result.exit_code == 0
    assert result.stderr.splitlines() == [
        f"numaguard: memory checkpoint {node_root}/var/lib/kubelet/memory_manager_state: not found (the manager's "
        "policy may be none, or the state directory differs)",
        "numaguard: PodResources API: kubelet PodResources socket "
        f"{node_root}/var/lib/kubelet/pod-resources/kubelet.sock not found (is this a node? mount "
        "/var/lib/kubelet/pod-resources into the pod)"]
    report = json.loads(result.stdout)
    assert [s["ok"] for s in report["sources"]] == [True, True, True, False, False]


def test_refusing_socket(node_root):
    path = node_root / "var/lib/kubelet/pod-resources/kubelet.sock"
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.bind(str(path))                   # bound, never listening: connect() is refused
    try:
        with pytest.raises(PodResourcesError) as exc:
            read_pod_resources(str(path), timeout=5)
    finally:
        sock.close()
    assert str(exc.value) == (f"kubelet PodResources socket {path}: nobody answers (List: connection refused "
                              "or kubelet down)")


def test_old_kubelet_without_allocatable(node_root):
    path = node_root / "var/lib/kubelet/pod-resources/kubelet.sock"
    server = serve(path, allocatable=False)
    try:
        snapshot = read_pod_resources(str(path), timeout=5)
    finally:
        server.stop(None)
    assert [p.name for p in snapshot.pods] == ["web-0", "db-0", "batch-7f9c", "kube-proxy-x2x8q"]
    assert snapshot.pods[1].containers[0].memory[1].memory_type == "hugepages-1Gi"
    assert snapshot.problems == (f"kubelet PodResources API at {path} does not implement GetAllocatableResources "
                                 "(kubelet too old?)",)


def test_nothing_readable_exits_2(tmp_path):
    result = run(tmp_path / "empty")
    assert result.exit_code == 2
    assert result.stdout.splitlines()[-1] == "0 container(s), 0 differ; 0 checkpoint finding(s)"


def test_corrupt_checkpoint_is_a_finding(node_root):
    (node_root / "var/lib/kubelet/cpu_manager_state").write_text("{not json")
    result = run(node_root, "--format", "json")
    report = json.loads(result.stdout)
    assert result.exit_code == 1
    assert [(f["rule"], f["message"][:60]) for f in report["findings"]] == [
        ("NG406", "the kubelet cannot restore this cpu checkpoint: not JSON: Ex")]


def test_daemonset_mounts_what_inspect_reads_read_only():
    """deploy/node-inspect/daemonset.yaml mounts, under /host, exactly the paths
    `node inspect --root /host` reads with its defaults, all read-only, and lints clean."""
    import yaml

    from conftest import REPO

    path = REPO / "deploy/node-inspect/daemonset.yaml"
    docs = list(yaml.safe_load_all(path.read_text()))
    pod = docs[1]["spec"]["template"]["spec"]
    container = pod["containers"][0]
    assert "numaguard node inspect --root /host --format json" in container["args"][0]
    mounts = {m["mountPath"]: m for m in container["volumeMounts"]}
    assert sorted(mounts) == ["/host/sys", "/host/var/lib/kubelet/config.yaml",
                              "/host/var/lib/kubelet/cpu_manager_state", "/host/var/lib/kubelet/memory_manager_state",
                              "/host/var/lib/kubelet/pod-resources"]
    assert all(m["readOnly"] is True for m in mounts.values())
    host_paths = {v["name"]: v["hostPath"]["path"] for v in pod["volumes"]}
    assert {"/host" + host_paths[m["name"]] for m in mounts.values()} == set(mounts)
    result = CliRunner().invoke(main, ["lint", str(path)])
    assert result.exit_code == 0, result.output
