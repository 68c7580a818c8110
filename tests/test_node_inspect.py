"""`numaguard node inspect` against a real gRPC server on a unix socket (answering recorded
PodResources responses, tests/fixtures/podresources/, or variations of them), a fabricated
/sys tree, pod log directories as the kubelet names them, and checkpoint files written as a
1.37 kubelet writes them; a socket that accepts and never answers plays a hung kubelet."""
from __future__ import annotations

import copy
import json
import os
import shutil
import socket
import tempfile
import threading
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


UIDS = {("shop", "web-0"): "uid-web", ("shop", "db-0"): "uid-db", ("jobs", "batch-7f9c"): "uid-batch",
        ("kube-system", "kube-proxy-x2x8q"): "uid-proxy"}


def recorded_list() -> dict:
    return json.loads((RECORDED / "list.json").read_text())


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


def serve(path: Path, allocatable: bool = True, listed: dict | None = None) -> grpc.Server:
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=2))
    api_pb2_grpc.add_PodResourcesListerServicer_to_server(RecordedLister(
        listed or recorded_list(),
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


def write_pod_log_dirs(root: Path, uids: dict) -> None:
    """`/var/log/pods/NAMESPACE_NAME_UID/CONTAINER`, as the kubelet lays them out."""
    for (namespace, name), uid in uids.items():
        (root / "var/log/pods" / f"{namespace}_{name}_{uid}" / "c").mkdir(parents=True)


def write_node_root(top: Path) -> Path:
    """`top/host`: a node's sysfs, kubelet configuration, checkpoints and pod log directories,
    and the directory of the PodResources socket. `top` must be short: a unix socket path
    stays under 108 bytes (sockaddr_un)."""
    root = top / "host"
    write_sysfs(root)
    write_pod_log_dirs(root, UIDS)
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


def table(total: int, system_reserved: int, reserved: int, hugepages: int = 0) -> dict:
    """A Memory Manager table as the kubelet writes it: regular memory's allocatable leaves out
    the NUMA node's hugepages (getDefaultMachineState)."""
    allocatable = total - system_reserved - hugepages
    return {"total": total, "systemReserved": system_reserved, "allocatable": allocatable, "reserved": reserved,
            "free": allocatable - reserved}


def memory_checkpoint(numa_of_worker: int) -> dict:
    """What the Memory Manager records for the recorded pods (memory blocks on their NUMA nodes;
    16Gi and two 1Gi hugepages per NUMA node, 1Gi reserved on NUMA node 0)."""
    def block(numa: int, size: int, kind: str = "memory") -> dict:
        return {"numaAffinity": [numa], "type": kind, "size": size}
    worker_on_0 = numa_of_worker == 0
    machine = {"0": {"numberOfAssignments": 3 + worker_on_0, "cells": [0], "memoryMap": {
                   "memory": table(16 * GiB, GiB, 6 * GiB + (GiB if worker_on_0 else 0), 2 * GiB),
                   "hugepages-1Gi": table(2 * GiB, 0, GiB)}},
               "1": {"numberOfAssignments": 0 if worker_on_0 else 1, "cells": [1], "memoryMap": {
                   "memory": table(16 * GiB, 0, 0 if worker_on_0 else GiB, 2 * GiB),
                   "hugepages-1Gi": table(2 * GiB, 0, 0)}}}
    entries = {"uid-web": {"app": [block(0, 2 * GiB)]},
               "uid-db": {"db": [block(0, 4 * GiB), block(0, GiB, "hugepages-1Gi")]},
               "uid-batch": {"worker": [block(numa_of_worker, GiB)]}}
    return memory_checkpoint_json("Static", machine, entries)


def run(root: Path, *extra: str):
    return CliRunner().invoke(main, ["node", "inspect", "--root", str(root), *extra])


def inspect_json(root: Path, *extra: str, listed: dict | None = None, allocatable: bool = True):
    """Run `node inspect --format json` with the recorded PodResources server on the socket."""
    server = serve(root / "var/lib/kubelet/pod-resources/kubelet.sock", allocatable, listed)
    try:
        result = run(root, "--format", "json", *extra)
    finally:
        server.stop(None)
    return result, json.loads(result.stdout)


def test_everything_agrees(node_root):
    result, report = inspect_json(node_root)
    assert result.exit_code == 0, result.output
    assert [(s["name"].split(" ")[0], s["ok"]) for s in report["sources"]] == [
        ("sysfs", True), ("kubelet", True), ("cpu", True), ("memory", True), ("pod", True), ("PodResources", True)]
    assert report["allocatableCpus"] == "1-7,9-15"
    rows = [(c["pod"], c["container"], c["uid"], c["uidFrom"], c["cpus"], c["cpuNumaNodes"], c["memoryNumaNodes"],
             c["checkpoint"], c["simulatedCpus"], c["simulation"]) for c in report["containers"]]
    assert rows == [
        ("web-0", "app", "uid-web", "pod log directory", "1,9", [0], [0], "agrees", "1,9", "agrees"),
        ("web-0", "log-shipper", "uid-web", "pod log directory", "", [], [], "agrees", "", "agrees"),
        ("db-0", "db", "uid-db", "pod log directory", "2-3,10-11", [0], [0], "agrees", "2-3,10-11", "agrees"),
        ("batch-7f9c", "worker", "uid-batch", "pod log directory", "4-5,12-13", [1], [1], "agrees", "4-5,12-13",
         "agrees"),
        ("kube-proxy-x2x8q", "kube-proxy", "uid-proxy", "pod log directory", "", [], [], "agrees", None, "agrees"),
    ]
    assert [c["memoryCheckpoint"] for c in report["containers"]] == ["agrees"] * 5
    assert report["findings"] == []
    assert report["summary"] == {"containers": 5, "agree": 5, "differ": 0, "warn": 0, "unchecked": 0, "findings": 0,
                                 "complete": True, "notRead": [], "exitCode": 0,
                                 "line": "5 container(s): 5 agree, 0 differ, 0 unchecked; 0 finding(s)"}


def test_without_pod_uids_unique_names_are_matched_by_name_only(node_root):
    shutil.rmtree(node_root / "var/log/pods")
    result, report = inspect_json(node_root)
    assert result.exit_code == 0, result.output     # the log directories only sharpen matching
    assert [(c["container"], c["uid"], c["checkpoint"]) for c in report["containers"]] == [
        ("app", None, "agrees (matched by name only)"), ("log-shipper", None, "agrees (matched by name only)"),
        ("db", None, "agrees (matched by name only)"), ("worker", None, "agrees (matched by name only)"),
        ("kube-proxy", None, "agrees (matched by name only)")]
    assert report["summary"]["line"] == ("5 container(s): 5 agree (5 matched by name only), 0 differ, 0 unchecked; "
                                         "0 finding(s)")


def two_app_pods() -> dict:
    """The recorded answer plus shop/web-1 (listed after db-0, so NUMA 0 is full when the
    simulator replays it), whose container is also named app (CPUs 6,14 on NUMA 1)."""
    listed = recorded_list()
    web1 = copy.deepcopy(listed["podResources"][0])
    web1["name"] = "web-1"
    web1["containers"] = [{"name": "app", "cpuIds": ["6", "14"]}]
    listed["podResources"].insert(2, web1)
    return listed


def swapped_app_checkpoint(root: Path) -> None:
    """The CPU Manager checkpoint with the two app containers' entries swapped."""
    (root / "var/lib/kubelet/cpu_manager_state").write_text(json.dumps(cpu_checkpoint_json(
        "static", "0,7-8,15", {"uid-web": {"app": "6,14"}, "uid-web1": {"app": "1,9"},
                               "uid-db": {"db": "2-3,10-11"}, "uid-batch": {"worker": "4-5,12-13"}})))


def test_same_container_name_in_two_pods_is_never_agrees_without_uids(node_root):
    """The slip the issue found: web-0's app got 1,9 but its entry records 6,14; web-1's app
    records 1,9. Matched by name, 1,9 is "somewhere in the checkpoint" and used to read agrees."""
    shutil.rmtree(node_root / "var/log/pods")
    swapped_app_checkpoint(node_root)
    result, report = inspect_json(node_root, listed=two_app_pods())
    assert result.exit_code == 3
    apps = [(c["pod"], c["checkpoint"], c["outcome"]) for c in report["containers"] if c["container"] == "app"]
    note = ("2 pod(s) of the checkpoint and 2 running pod(s) have a container named app and its pod's uid is "
            "unknown (no uid known): give --pods, or mount the pod log directories")
    assert apps == [("web-0", f"unchecked: {note}", "unchecked"), ("web-1", f"unchecked: {note}", "unchecked")]
    assert report["summary"]["line"] == (
        "6 container(s): 4 agree (4 matched by name only), 0 differ, 2 unchecked; 0 finding(s); incomplete: "
        "2 container(s) not matched to their checkpoint entries")


def test_same_container_name_in_two_pods_is_compared_by_uid(node_root):
    write_pod_log_dirs(node_root, {("shop", "web-1"): "uid-web1"})
    swapped_app_checkpoint(node_root)
    result, report = inspect_json(node_root, listed=two_app_pods())
    assert result.exit_code == 1
    assert [(c["pod"], c["uid"], c["checkpoint"]) for c in report["containers"] if c["container"] == "app"] == [
        ("web-0", "uid-web", "differs: checkpoint records 6,14"), ("web-1", "uid-web1", "differs: checkpoint records 1,9")]


def test_pods_file_gives_the_uids(node_root, tmp_path):
    shutil.rmtree(node_root / "var/log/pods")
    swapped_app_checkpoint(node_root)
    pods = tmp_path / "pods.yaml"
    pods.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": [
        {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": ns, "uid": uid},
         "spec": {"containers": [{"name": "x", "image": "x"}]}}
        for (ns, name), uid in {**UIDS, ("shop", "web-1"): "uid-web1"}.items()]}))
    result, report = inspect_json(node_root, "--pods", str(pods), listed=two_app_pods())
    assert result.exit_code == 1
    assert [(c["pod"], c["uidFrom"], c["checkpoint"]) for c in report["containers"] if c["container"] == "app"] == [
        ("web-0", "--pods", "differs: checkpoint records 6,14"), ("web-1", "--pods", "differs: checkpoint records 1,9")]


def test_recreated_pod_with_two_log_directories_falls_back_to_its_name(node_root):
    write_pod_log_dirs(node_root, {("shop", "db-0"): "uid-db-old"})
    result, report = inspect_json(node_root)
    assert result.exit_code == 0
    db = next(c for c in report["containers"] if c["container"] == "db")
    assert (db["uid"], db["uidFrom"], db["checkpoint"]) == (None, "2 pod log directories", "agrees (matched by name only)")


def test_container_on_reserved_cpus_is_ng409(node_root):
    """CPU 0 is in reservedSystemCPUs "0,8": the checkpoint agrees with what app got, and yet."""
    listed = recorded_list()
    listed["podResources"][0]["containers"][0]["cpuIds"] = ["0", "1"]
    (node_root / "var/lib/kubelet/cpu_manager_state").write_text(json.dumps(cpu_checkpoint_json(
        "static", "6-9,14-15", {"uid-web": {"app": "0-1"}, "uid-db": {"db": "2-3,10-11"},
                                "uid-batch": {"worker": "4-5,12-13"}})))
    server = serve(node_root / "var/lib/kubelet/pod-resources/kubelet.sock", listed=listed)
    try:
        result = run(node_root)
    finally:
        server.stop(None)
    assert result.exit_code == 1
    lines = result.stdout.splitlines()
    assert lines[lines.index("  shop/web-0 app: cpus 0-1 (NUMA 0), memory NUMA 0; uid uid-web (pod log directory)") + 1:][:4] == [
        "      checkpoint:        agrees", "      memory checkpoint: agrees",
        "      simulator:         agrees (1,9, NUMA 0)", "      reserved CPUs:     0 (NG409)"]
    assert ("  pod/shop/web-0  NG409  error  container app of pod shop/web-0 holds CPUs 0 of reservedSystemCPUs 0,8 "
            "(its exclusive CPUs: 0-1)") in lines
    # the checkpoint entry on a reserved CPU, judged on its own: the static policy refuses it at start
    assert [line.split("  ")[2] for line in lines if "  NG4" in line] == ["NG419", "NG409", "NG423"]
    assert lines[-1] == ("5 container(s): 4 agree, 1 differ, 0 unchecked; 3 finding(s); the kubelet does not start "
                         f"with {node_root}/var/lib/kubelet/config.yaml")


def test_memory_checkpoint_disagreement(node_root):
    (node_root / "var/lib/kubelet/memory_manager_state").write_text(json.dumps(memory_checkpoint(numa_of_worker=0)))
    result, report = inspect_json(node_root)
    assert result.exit_code == 1
    assert [(c["container"], c["memoryCheckpoint"]) for c in report["containers"] if not c["agrees"]] == [
        ("worker", "differs: checkpoint records NUMA 0")]


def test_checkpoint_disagreement_and_text_report(node_root):
    (node_root / "var/lib/kubelet/cpu_manager_state").write_text(json.dumps(cpu_checkpoint_json(
        "static", "0,2-3,6-8,10-11,14-15", {"uid-web": {"app": "1,9"}, "uid-db": {"db": "4-5,12-13"}})))
    server = serve(node_root / "var/lib/kubelet/pod-resources/kubelet.sock")
    try:
        result = run(node_root)
    finally:
        server.stop(None)
    assert result.exit_code == 1
    lines = result.stdout.splitlines()
    assert "  shop/db-0 db: cpus 2-3,10-11 (NUMA 0), memory NUMA 0; uid uid-db (pod log directory)" in lines
    assert "      checkpoint:        differs: checkpoint records 4-5,12-13" in lines
    assert "      checkpoint:        differs: not recorded" in lines          # jobs/batch-7f9c worker
    assert lines[-1] == "5 container(s): 3 agree, 2 differ, 0 unchecked; 0 finding(s)"


def test_missing_socket_is_partial(node_root):
    (node_root / "var/lib/kubelet/memory_manager_state").unlink()
    result = run(node_root, "--format", "json")
    assert result.exit_code == 3
    memory = f"{node_root}/var/lib/kubelet/memory_manager_state"
    socket_path = f"{node_root}/var/lib/kubelet/pod-resources/kubelet.sock"
    assert result.stderr.splitlines() == [
        f"numaguard: memory checkpoint {memory}: not found (the kubelet always writes it: is the state directory "
        "mounted, or is it another --state-dir?)",
        f"numaguard: PodResources API: kubelet PodResources socket {socket_path} not found (is this a node? mount "
        "/var/lib/kubelet into the pod)"]
    report = json.loads(result.stdout)
    assert [s["ok"] for s in report["sources"]] == [True, True, True, False, True, False]
    assert report["summary"]["line"] == (
        f"0 container(s): 0 agree, 0 differ, 0 unchecked; 0 finding(s); incomplete: memory checkpoint {memory}: "
        f"not found; PodResources API: kubelet PodResources socket {socket_path} not found")


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


class HungKubelet:
    """A unix socket that accepts connections and never answers: a kubelet stuck in its
    PodResources server, or another program listening at the path."""

    def __init__(self, path: Path) -> None:
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.bind(str(path))
        self.sock.listen(8)
        self.held: list[socket.socket] = []
        self.thread = threading.Thread(target=self._accept, daemon=True)
        self.thread.start()

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            self.held.append(conn)

    def close(self) -> None:
        self.sock.close()
        for conn in self.held:
            conn.close()


@pytest.mark.parametrize("with_checkpoints,expected", [(False, 2), (True, 3)])
def test_hung_socket_is_bounded_by_the_timeout(node_root, with_checkpoints, expected):
    state = node_root / "var/lib/kubelet"
    if not with_checkpoints:
        (state / "cpu_manager_state").unlink()
        (state / "memory_manager_state").unlink()
    path = state / "pod-resources/kubelet.sock"
    hung = HungKubelet(path)
    try:
        result = run(node_root, "--timeout", "1")
    finally:
        hung.close()
    assert result.exit_code == expected, result.output
    no_answer = (f"kubelet PodResources socket {path}: List got no answer within 1 s (the kubelet is hung, or "
                 "something else listens there; --timeout)")
    assert f"  FAIL PodResources API: {no_answer}" in result.stdout.splitlines()
    cpu, memory = f"cpu checkpoint {state}/cpu_manager_state", f"memory checkpoint {state}/memory_manager_state"
    assert result.stdout.splitlines()[-1] == (
        f"nothing from the kubelet could be checked: {cpu}: not found; {memory}: not found; PodResources API: "
        f"kubelet PodResources socket {path}: List got no answer within 1 s" if not with_checkpoints else
        "0 container(s): 0 agree, 0 differ, 0 unchecked; 0 finding(s); incomplete: PodResources API: kubelet "
        f"PodResources socket {path}: List got no answer within 1 s")


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
    result, report = inspect_json(node_root, allocatable=False)
    assert result.exit_code == 3                     # everything compared, the allocatable CPUs not read
    assert report["summary"]["notRead"] == [f"PodResources API {path}: 4 pod(s); kubelet PodResources API at {path} "
                                            "does not implement GetAllocatableResources"]


def test_nothing_readable_exits_2(tmp_path):
    result = run(tmp_path / "empty")
    assert result.exit_code == 2
    state = tmp_path / "empty/var/lib/kubelet"
    assert result.stdout.splitlines()[-1] == (
        f"nothing from the kubelet could be checked: cpu checkpoint {state}/cpu_manager_state: not found; memory "
        f"checkpoint {state}/memory_manager_state: not found; PodResources API: kubelet PodResources socket "
        f"{state}/pod-resources/kubelet.sock not found")
    assert "0 container(s), 0 differ" not in result.stdout


def test_a_stale_single_file_mount_is_not_read(node_root):
    """The kubelet renames a new checkpoint over the old file; a single-file bind mount keeps
    the old inode, now with no name (st_nlink 0). Played here by a symlink to an open file
    descriptor of a deleted file, which reads and stats the same way."""
    state = node_root / "var/lib/kubelet"
    old = state / "cpu_manager_state"
    fd = os.open(old, os.O_RDONLY)
    try:
        old.rename(state / "cpu_manager_state.old")
        (state / "cpu_manager_state.old").unlink()
        old.symlink_to(f"/proc/{os.getpid()}/fd/{fd}")
        result, report = inspect_json(node_root)
    finally:
        os.close(fd)
    assert result.exit_code == 3
    assert report["sources"][2] == {"name": f"cpu checkpoint {old}", "ok": False, "message": (
        "a stale copy: the kubelet has replaced the file since it was mounted (mount its directory, not the file)")}
    assert {c["checkpoint"] for c in report["containers"]} == {"skipped: not read"}


def test_corrupt_checkpoint_is_a_finding(node_root):
    (node_root / "var/lib/kubelet/cpu_manager_state").write_text("{not json")
    result = run(node_root, "--format", "json")
    report = json.loads(result.stdout)
    assert result.exit_code == 1
    config = f"{node_root}/var/lib/kubelet/config.yaml"
    assert [(f["rule"], f["message"][:60]) for f in report["findings"]] == [
        ("NG406", "the kubelet cannot restore this cpu checkpoint: not JSON: Ex"),
        ("NG423", f"restarting the kubelet with {config}"[:60])]
    assert report["restart"]["starts"] is False


# state_checkpoint_test.go's "checkpoint with v1 checksum" (see tests/k8s/test_checkpoints.py)
V1_WITHOUT_ENTRIES = '{"policyName": "none", "defaultCPUSet": "1-3", "checksum": 1694838852}'


@pytest.mark.parametrize("version,exit_code,source", [
    ("1.37", 1, "read (the kubelet cannot restore it)"),
    ("1.36", 0, "read (v1, policy none)"),
])
def test_v1_checkpoint_by_kubelet_version(node_root, version, exit_code, source):
    """A V1 file without entries (policy none, written before 1.18 and never rewritten since:
    the none policy changes nothing): 1.36 migrates it, 1.37 no longer reads V1."""
    (node_root / "var/lib/kubelet/config.yaml").write_text(KUBELET_CONFIG.replace("cpuManagerPolicy: static", ""))
    (node_root / "var/lib/kubelet/cpu_manager_state").write_text(V1_WITHOUT_ENTRIES)
    listed = recorded_list()
    for pod in listed["podResources"]:
        for container in pod["containers"]:
            container.pop("cpuIds", None)          # the none policy pins no CPU
    result, report = inspect_json(node_root, "--kubernetes-version", version, listed=listed)
    assert result.exit_code == exit_code
    assert report["sources"][2]["message"] == source
    if version == "1.36":
        assert report["findings"] == []
        assert {c["checkpoint"] for c in report["containers"]} == {"agrees"}
        return
    assert {c["checkpoint"] for c in report["containers"]} == {"skipped: not read"}
    assert [f["rule"] for f in report["findings"]] == ["NG406", "NG423"]     # NG423: the restart it refuses
    assert [(f["rule"], f["path"], f["message"], f["remediation"]) for f in report["findings"][:1]] == [(
        "NG406", "checksum",
        "the kubelet cannot restore this cpu checkpoint: checkpoint is corrupted: checksum 1694838852 does not match "
        "the content (expected 1850858057): the checksum of a V1 checkpoint without entries (the V1 layout, written "
        "by a kubelet older than 1.18); the 1.37 kubelet reads V2 and later only, 1.36 and earlier migrate V1",
        "This V1 file records no exclusive CPUs: stop the kubelet, delete /var/lib/kubelet/cpu_manager_state and "
        "start it again (it writes a new file); no drain is needed. Do it before the kubelet is upgraded to 1.37.")]


def test_v1_checkpoint_with_container_ids_is_unchecked_under_136(node_root):
    """1.36 migrates V1 entries through the container runtime's ids, which PodResources does
    not give: nothing can be compared, and the report says so rather than "not recorded"."""
    (node_root / "var/lib/kubelet/cpu_manager_state").write_text(
        '{"policyName": "static", "defaultCPUSet": "0,2-8,10-15", "entries": {"containerID1": "1,9"}, "checksum": 0}')
    result, report = inspect_json(node_root, "--kubernetes-version", "1.36")
    assert result.exit_code == 3
    assert report["sources"][2]["message"] == (
        "read (v1, policy static; 1 entries keyed by container id, which the kubelet maps through the runtime)")
    assert {c["checkpoint"] for c in report["containers"]} == {"unchecked: a V1 checkpoint keys its 1 entries by "
                                                               "container id"}
    assert report["summary"]["line"].endswith("incomplete: 5 container(s) not matched to their checkpoint entries")


def test_bad_kubernetes_version_is_a_usage_error(tmp_path):
    result = run(tmp_path, "--kubernetes-version", "one")
    assert result.exit_code == 2
    assert result.output.splitlines()[-1] == "Error: --kubernetes-version: 'one' is not a version like \"1.37\""


def test_daemonset_mounts_what_inspect_reads_read_only():
    """deploy/node-inspect/daemonset.yaml mounts, under /host, the directories `node inspect
    --root /host` reads with its defaults (the kubelet's state directory, not single files the
    kubelet replaces by renaming), all read-only, and lints clean."""
    import yaml

    from conftest import REPO

    path = REPO / "deploy/node-inspect/daemonset.yaml"
    docs = list(yaml.safe_load_all(path.read_text()))
    pod = docs[1]["spec"]["template"]["spec"]
    container = pod["containers"][0]
    assert "numaguard node inspect --root /host --processes --format json" in container["args"][0]
    assert pod["hostPID"] is True                  # cgroup.procs in the host's PID namespace
    assert container["securityContext"]["capabilities"] == {"drop": ["ALL"], "add": ["SYS_PTRACE"]}
    mounts = {m["mountPath"]: m for m in container["volumeMounts"]}
    assert sorted(mounts) == ["/host/proc", "/host/sys", "/host/sys/fs/cgroup", "/host/var/lib/kubelet",
                              "/host/var/log/containers", "/host/var/log/pods"]
    assert all(m["readOnly"] is True for m in mounts.values())
    host_paths = {v["name"]: v["hostPath"] for v in pod["volumes"]}
    assert {"/host" + host_paths[m["name"]]["path"] for m in mounts.values()} == set(mounts)
    assert {v["type"] for v in host_paths.values()} == {"Directory"}
    result = CliRunner().invoke(main, ["lint", str(path)])
    assert result.exit_code == 0, result.output
