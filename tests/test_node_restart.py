"""`numaguard node inspect --kubelet-config NEW`: does the kubelet restart with NEW, and what
happens to the running pods' CPUs and memory? Against the node of tests/test_node_inspect.py (a
fabricated /sys, checkpoint files written as a 1.37 kubelet writes them, a real gRPC server on
the PodResources socket); the node's own configuration stays in ROOT/var/lib/kubelet/config.yaml.
Refusals are in the kubelet's words: validateState's (tests/numa/test_restart.py replays the
upstream unit tests) and validateReservedMemory's, whose cases of memory_manager_test.go
(TestValidateReservedMemory "Reserved not equal to Node Allocatable", TestGetSystemReservedMemory
"Should return error when Allocatable reservation is not equal to the reserved memory") are given
here as the KubeletConfigurations that produce them."""
from __future__ import annotations

import json
import re
import shutil
import tempfile
from pathlib import Path

import pytest
import yaml

from numaguard.lint.k8s.checkpoints import cpu_checkpoint_json

from test_node_inspect import GiB, KUBELET_CONFIG, inspect_json, memory_checkpoint, recorded_list, run, serve, \
    write_node_root

CHECKPOINT = {"uid-web": {"app": "1,9"}, "uid-db": {"db": "2-3,10-11"}, "uid-batch": {"worker": "4-5,12-13"}}
KEEPS = [("jobs/batch-7f9c", "worker", "4-5,12-13", "keeps", "keeps CPUs 4-5,12-13 (restored from the checkpoint)"),
         ("shop/db-0", "db", "2-3,10-11", "keeps", "keeps CPUs 2-3,10-11 (restored from the checkpoint)"),
         ("shop/web-0", "app", "1,9", "keeps", "keeps CPUs 1,9 (restored from the checkpoint)")]


@pytest.fixture
def node_root():
    top = Path(tempfile.mkdtemp(prefix="ng-", dir="/tmp"))
    yield write_node_root(top)
    shutil.rmtree(top)


def new_config(root: Path, text: str) -> str:
    path = root.parent / "new-kubelet.yaml"
    path.write_text(text)
    return str(path)


def outcomes(report: dict) -> list[tuple]:
    return [(c["pod"], c["container"], c["cpus"], c["outcome"], c["detail"]) for c in report["restart"]["containers"]]


def test_the_next_restart_with_the_nodes_own_configuration(node_root):
    result, report = inspect_json(node_root)
    assert result.exit_code == 0
    assert report["restart"] == {
        "config": f"{node_root}/var/lib/kubelet/config.yaml", "starts": True, "verdict": "the kubelet starts",
        "refusals": [], "changes": [],
        "containers": [dict(zip(("pod", "container", "cpus", "outcome", "detail"), row)) for row in KEEPS],
        "comparedWith": [f"cpu checkpoint {node_root}/var/lib/kubelet/cpu_manager_state",
                         f"memory checkpoint {node_root}/var/lib/kubelet/memory_manager_state"]}
    assert report["findings"] == []                        # nothing changes: no NG423


def test_reserving_a_running_containers_cpus_refuses_the_restart(node_root):
    """NEW reserves both threads of core 1, which web-0's app holds: validateState's first check."""
    new = new_config(node_root, KUBELET_CONFIG.replace('reservedSystemCPUs: "0,8"', 'reservedSystemCPUs: "0-1,8-9"'))
    result, report = inspect_json(node_root, "--kubelet-config", new)
    assert result.exit_code == 1
    refusal = ('not all reserved cpus: "0-1,8-9" are present in defaultCpuSet: "0,6-8,14-15" (reserved CPUs 1,9 are '
               "not in the shared pool (held as exclusive CPUs by container app of pod uid-web (1,9)); the reservation "
               "(reservedSystemCPUs, or kubeReserved/systemReserved cpu) changed without a drain, or the file was "
               "edited) (NG419)")
    assert report["restart"]["starts"] is False
    assert report["restart"]["refusals"] == [refusal]
    assert report["restart"]["verdict"] == ("the kubelet does not start (1 refusal(s); the first, as it logs it: "
                                            f"{refusal})")
    assert report["restart"]["changes"] == [{
        "setting": "reserved CPUs", "now": "0,8", "then": "0-1,8-9",
        "effect": "CPUs 1,9 are held by running containers: the kubelet does not start (NG419)"}]
    assert [(pod, outcome) for pod, _c, _cpus, outcome, _d in outcomes(report)] == [
        ("jobs/batch-7f9c", "unmanaged"), ("shop/db-0", "unmanaged"), ("shop/web-0", "unmanaged")]
    assert outcomes(report)[2][4] == ("keeps running on CPUs 1,9 while the kubelet does not start; the node stops "
                                      "reporting Ready")
    assert [(f["rule"], f["severity"], f["file"], f["path"]) for f in report["findings"]] == [
        ("NG419", "error", f"{node_root}/var/lib/kubelet/cpu_manager_state", "data.defaultCpuSet"),
        ("NG409", "error", "pod/shop/web-0", "cpuIds"),        # its CPUs are reserved CPUs in NEW
        ("NG423", "info", new, "")]
    assert report["summary"]["line"].endswith(f"3 finding(s); the kubelet does not start with {new}")


def test_reserving_shared_pool_cpus_starts_and_keeps_every_container(node_root):
    new = new_config(node_root, KUBELET_CONFIG.replace('reservedSystemCPUs: "0,8"', 'reservedSystemCPUs: "0,6,8,14"'))
    result, report = inspect_json(node_root, "--kubelet-config", new)
    assert result.exit_code == 0                           # NG423 is information
    assert (report["restart"]["starts"], report["restart"]["refusals"]) == (True, [])
    assert report["restart"]["changes"] == [{
        "setting": "reserved CPUs", "now": "0,8", "then": "0,6,8,14",
        "effect": "CPUs 6,14 are no longer handed out exclusively; running containers keep their CPUs"}]
    assert outcomes(report) == KEEPS
    assert [(f["rule"], f["message"]) for f in report["findings"]] == [(
        "NG423", f"restarting the kubelet with {new}: the kubelet starts; reserved CPUs 0,8 -> 0,6,8,14: CPUs 6,14 are "
                 "no longer handed out exclusively; running containers keep their CPUs; containers with exclusive CPUs "
                 "or memory: 3 keeps")]


def test_a_memory_reservation_changed_without_a_drain(node_root):
    """NEW reserves 2Gi on NUMA 0 (kubeReserved grown to match, so the configuration itself
    passes validateReservedMemory); the checkpoint records 1Gi."""
    new = new_config(node_root, KUBELET_CONFIG.replace("kubeReserved: {memory: 924Mi}", "kubeReserved: {memory: 1948Mi}")
                     .replace("limits: {memory: 1Gi}", "limits: {memory: 2Gi}"))
    result, report = inspect_json(node_root, "--kubelet-config", new)
    assert result.exit_code == 1
    assert [(f["rule"], f["path"], f["message"]) for f in report["findings"][:1]] == [(
        "NG420", "data.machineState.0.memoryMap.memory.systemReserved",
        "the kubelet will not start: [memorymanager] the expected machine state is different from the real one: NUMA 0 "
        "memory systemReserved is 1Gi (1073741824 bytes) in the checkpoint but 2Gi (2147483648 bytes) in "
        "reservedMemory (+1Gi): the reservation changed without a drain")]
    assert report["findings"][0]["remediation"] == (
        "Drain the node (kubectl drain NODE --ignore-daemonsets --delete-emptydir-data), stop the kubelet, move "
        "/var/lib/kubelet/memory_manager_state aside, start it with the intended configuration, uncordon once Ready.")
    assert report["restart"]["changes"] == [{
        "setting": "reservedMemory NUMA 0 memory", "now": "1Gi", "then": "2Gi",
        "effect": "the Memory Manager's machine state no longer matches: the kubelet does not start (NG420)"}]


def write_sysfs_file(root: Path, rel: str, text: str) -> None:
    path = root / "sys/devices/system/node" / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text + "\n")


def test_the_machine_changed_under_the_checkpoint(node_root):
    """A DIMM less on NUMA 1 and two more 1Gi pages on NUMA 0, read from /sys as the kubelet reads them."""
    write_sysfs_file(node_root, "node1/meminfo", f"Node 1 MemTotal:       {12 * GiB // 1024} kB")
    write_sysfs_file(node_root, "node0/hugepages/hugepages-1048576kB/nr_hugepages", "4")
    result, report = inspect_json(node_root)
    assert result.exit_code == 1
    assert [(f["rule"], f["path"], f["message"].split("real one: ")[1]) for f in report["findings"] if f["rule"] != "NG423"] == [
        ("NG420", "data.machineState.0.memoryMap.hugepages-1Gi.total",
         "NUMA 0 hugepages-1Gi total is 2Gi (2147483648 bytes) in the checkpoint but 4Gi (4294967296 bytes) on this "
         "machine (+2Gi): nr_hugepages of the node changed"),
        ("NG420", "data.machineState.1.memoryMap.memory.total",
         "NUMA 1 memory total is 16Gi (17179869184 bytes) in the checkpoint but 12Gi (12884901888 bytes) on this "
         "machine (-4Gi): MemTotal of /sys/devices/system/node/node1/meminfo changed: memory added, removed or failed, "
         "or the kernel reserves another amount")]
    assert report["restart"]["changes"] == []              # the configuration did not change: the machine did


def test_a_hugepage_size_without_pages_is_part_of_the_machine(node_root):
    """cadvisor lists every hugepage size of a NUMA node, and the kubelet keeps a table for each,
    0 pages included: a checkpoint without a hugepages-2Mi table is not this machine's."""
    for numa in (0, 1):
        write_sysfs_file(node_root, f"node{numa}/hugepages/hugepages-2048kB/nr_hugepages", "0")
    result, report = inspect_json(node_root)
    assert [(f["rule"], f["path"], f["message"].split("real one: ")[1]) for f in report["findings"] if f["rule"] != "NG423"] == [
        ("NG420", f"data.machineState.{n}.memoryMap",
         f"NUMA {n}: this machine has hugepages-2Mi (0 bytes), which the checkpoint has no table for") for n in (0, 1)]
    recorded = memory_checkpoint(numa_of_worker=1)
    for numa in ("0", "1"):
        recorded["machineState"][numa]["memoryMap"]["hugepages-2Mi"] = {
            "total": 0, "systemReserved": 0, "allocatable": 0, "reserved": 0, "free": 0}
    from numaguard.lint.k8s.checkpoints import memory_checkpoint_json
    (node_root / "var/lib/kubelet/memory_manager_state").write_text(json.dumps(memory_checkpoint_json(
        "Static", recorded["machineState"], recorded["entries"])))
    result, report = inspect_json(node_root)
    assert (result.exit_code, report["findings"]) == (0, [])


def test_single_numa_node_rejects_a_running_pod_that_spans_numa_nodes(node_root):
    """The node runs restricted; db-0 holds CPUs of both NUMA nodes. NEW says single-numa-node:
    the kubelet starts, admits db-0 again from its recorded CPUs, and rejects it."""
    (node_root / "var/lib/kubelet/config.yaml").write_text(
        KUBELET_CONFIG.replace("topologyManagerPolicy: single-numa-node", "topologyManagerPolicy: restricted"))
    (node_root / "var/lib/kubelet/cpu_manager_state").write_text(json.dumps(cpu_checkpoint_json(
        "static", "0,6-8,14-15", {**CHECKPOINT, "uid-db": {"db": "3-4,11-12"}, "uid-batch": {"worker": "2,5,10,13"}})))
    new = new_config(node_root, KUBELET_CONFIG)
    result, report = inspect_json(node_root, "--kubelet-config", new)
    assert result.exit_code == 1
    assert report["restart"]["starts"] is True
    assert report["restart"]["changes"] == [{
        "setting": "topologyManagerPolicy", "now": "restricted", "then": "single-numa-node",
        "effect": "the kubelet admits its pods again under it and rejects 2 of them (NG422)"}]
    assert [(pod, outcome) for pod, _c, _cpus, outcome, _d in outcomes(report)] == [
        ("jobs/batch-7f9c", "rejected"), ("shop/db-0", "rejected"), ("shop/web-0", "keeps")]
    assert [(f["rule"], f["path"], f["message"]) for f in report["findings"] if f["rule"] == "NG422"] == [
        ("NG422", f"data.entries.{uid}", f"pod {uid} holds CPUs on NUMA nodes 0, 1: at its next restart the kubelet "
                                         "admits the pod again from these, and the Topology Manager policy "
                                         "single-numa-node rejects it (TopologyAffinityError), stopping the running pod")
        for uid in ("uid-batch", "uid-db")]


def test_a_policy_change_needs_the_drain(node_root):
    new = new_config(node_root, KUBELET_CONFIG.replace("cpuManagerPolicy: static", "cpuManagerPolicy: none"))
    result, report = inspect_json(node_root, "--kubelet-config", new)
    assert result.exit_code == 1
    assert report["restart"]["refusals"] == [
        'configured policy "none" differs from state checkpoint policy "static": the kubelet will not start with this '
        "CPU Manager checkpoint (NG402)"]
    assert report["restart"]["changes"][0] == {
        "setting": "cpuManagerPolicy", "now": "static", "then": "none",
        "effect": "the kubelet does not start while the checkpoint records the other policy (NG402)"}


def test_turning_the_pod_level_gate_off_forgets_the_pod_pools(node_root):
    """batch-7f9c has a pod-level pool: CPU 6 beside its worker's 4-5,12-13 (all on NUMA 1). A
    kubelet with PodLevelResourceManagers off reads no podEntries, so nothing accounts for CPU 6."""
    (node_root / "var/lib/kubelet/cpu_manager_state").write_text(json.dumps(cpu_checkpoint_json(
        "static", "0,7-8,14-15", CHECKPOINT, {"uid-batch": "4-6,12-13"})))
    result, report = inspect_json(node_root)
    assert (result.exit_code, report["findings"]) == (0, [])
    new = new_config(node_root, KUBELET_CONFIG.replace("featureGates: {PodLevelResourceManagers: true}", ""))
    result, report = inspect_json(node_root, "--kubelet-config", new)
    assert result.exit_code == 1
    assert report["restart"]["refusals"] == [
        'current set of available CPUs "0-15" doesn\'t match with CPUs in state "0-5,7-15" (CPUs 6 are online on the '
        "node but in neither defaultCpuSet nor any entry (pod-level entries hold 6, but a kubelet with the "
        "PodLevelResourceManagers gate off does not read podEntries)) (NG419)"]
    assert report["restart"]["changes"] == [{
        "setting": "featureGates.PodLevelResourceManagers", "now": "true", "then": "false",
        "effect": "the 1 pod-level entries are no longer read: their pods' shared CPUs belong to no entry and the "
                  "kubelet does not start (NG419)"}]


@pytest.mark.parametrize("case,memory,reserved,expected,refusals", [
    # memory_manager_test.go TestValidateReservedMemory "Reserved not equal to Node Allocatable": the node
    # allocatable reservation 5 (kubeReserved 4 + evictionHard memory.available 1), reservedMemory 12; the
    # checkpoint's 1Gi on NUMA 0 is then not the reservation either
    ("Reserved not equal to Node Allocatable", "kubeReserved: {memory: \"4\"}\nevictionHard: {memory.available: \"1\"}",
     "12", 'the total amount "12" of type "memory" is not equal to the value "5" determined by Node Allocatable feature',
     ["(NG208)", "(NG420)"]),
    # TestGetSystemReservedMemory "Should return error when Allocatable reservation is not equal to the reserved
    # memory": nothing reserved for node allocatable (evictionHard without memory.available), reservedMemory 1Gi
    ("Should return error when Allocatable reservation is not equal to the reserved memory",
     "evictionHard: {nodefs.available: \"10%\"}", "1Gi",
     'the total amount "1Gi" of type "memory" is not equal to the value "0" determined by Node Allocatable feature',
     ["(NG208)"]),
])
def test_a_configuration_the_kubelet_refuses_comes_first(node_root, case, memory, reserved, expected, refusals):
    """The kubelet validates its configuration before any manager starts: validateReservedMemory's
    words first, then what the Memory Manager would refuse of the checkpoint."""
    text = KUBELET_CONFIG.replace("kubeReserved: {memory: 924Mi}", memory).replace("limits: {memory: 1Gi}",
                                                                                  f"limits: {{memory: \"{reserved}\"}}")
    new = new_config(node_root, text)
    result, report = inspect_json(node_root, "--kubelet-config", new)
    assert result.exit_code == 1
    first = report["restart"]["refusals"][0]
    assert first.startswith(expected) and first.endswith("(NG208)")
    assert [r.rsplit(" ", 1)[1] for r in report["restart"]["refusals"]] == refusals
    ng208 = next(f for f in report["findings"] if f["rule"] == "NG208")
    assert (ng208["file"], ng208["path"]) == (new, "reservedMemory")


def test_a_pod_gone_since_frees_its_cpus_at_restart(node_root, tmp_path):
    pods = tmp_path / "pods.yaml"
    pods.write_text(yaml.safe_dump({"apiVersion": "v1", "kind": "List", "items": [
        {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": ns, "uid": uid},
         "spec": {"containers": [{"name": "x", "image": "x"}]}}
        for (ns, name), uid in {("shop", "web-0"): "uid-web", ("shop", "db-0"): "uid-db"}.items()]}))
    listed = recorded_list()
    listed["podResources"] = [p for p in listed["podResources"] if p["name"] != "batch-7f9c"]
    result, report = inspect_json(node_root, "--pods", str(pods), listed=listed)
    assert outcomes(report)[0] == (
        "uid-batch", "worker", "4-5,12-13", "released",
        "its pod no longer exists: the kubelet removes the entry at start (removeStaleState) and CPUs 4-5,12-13 return "
        "to the shared pool")
    assert [f["rule"] for f in report["findings"]] == ["NG407", "NG407", "NG423"]


def test_every_format_says_it(node_root, tmp_path):
    """text, json (above), sarif, policyreport and html: the refusal at its place, the prediction
    (NG423), and in the HTML page the prediction among the node's notes, in Chromium."""
    from test_html_report import open_in_browser

    new = new_config(node_root, KUBELET_CONFIG.replace('reservedSystemCPUs: "0,8"', 'reservedSystemCPUs: "0-1,8-9"')
                     .replace("kubeReserved: {memory: 924Mi}", "kubeReserved: {memory: 900Mi}"))
    server = serve(node_root / "var/lib/kubelet/pod-resources/kubelet.sock")
    try:
        out = {fmt: run(node_root, "--kubelet-config", new, "--format", fmt)
               for fmt in ("text", "sarif", "policyreport", "html")}
    finally:
        server.stop(None)
    assert {fmt: r.exit_code for fmt, r in out.items()} == {"text": 1, "sarif": 1, "policyreport": 1, "html": 1}
    text = out["text"].stdout.splitlines()
    block = text[text.index(next(line for line in text if line.startswith("restart with "))):text.index("findings:") - 1]
    refused = ('the total amount "1Gi" of type "memory" is not equal to the value "1000Mi" determined by Node '
               "Allocatable feature. Σ reservedMemory memory = 1Gi; required = kubeReserved.memory 900Mi + "
               "systemReserved.memory 0 + evictionHard memory.available 100Mi (default) = 1000Mi (NG208)")
    assert block == [
        f"restart with {new}: the kubelet does not start (2 refusal(s); the first, as it logs it: {refused})",
        '  refused: not all reserved cpus: "0-1,8-9" are present in defaultCpuSet: "0,6-8,14-15" (reserved CPUs 1,9 '
        "are not in the shared pool (held as exclusive CPUs by container app of pod uid-web (1,9)); the reservation "
        "(reservedSystemCPUs, or kubeReserved/systemReserved cpu) changed without a drain, or the file was edited) "
        "(NG419)",
        "  reserved CPUs: 0,8 -> 0-1,8-9: CPUs 1,9 are held by running containers: the kubelet does not start (NG419)",
        *(f"  {pod} {c}: unmanaged: keeps running on CPUs {cpus} while the kubelet does not start; the node stops "
          "reporting Ready" for pod, c, cpus in (("jobs/batch-7f9c", "worker", "4-5,12-13"),
                                                 ("shop/db-0", "db", "2-3,10-11"), ("shop/web-0", "app", "1,9")))]

    sarif = json.loads(out["sarif"].stdout)["runs"][0]
    results = [(r["ruleId"], r["level"], r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"],
                r["locations"][0]["physicalLocation"]["region"]["startLine"]) for r in sarif["results"]]
    assert results[0] == ("NG208", "error", new, 11)       # where numaguard lint points: reservedMemory
    assert ("NG419", "error", f"{node_root}/var/lib/kubelet/cpu_manager_state", 1) in results
    assert results[-1] == ("NG423", "note", new, 1)

    reports = list(yaml.safe_load_all(out["policyreport"].stdout))
    rows = [(r["rule"], r["result"]) for p in reports for r in p["results"]]
    assert ("NG419", "fail") in rows and ("NG423", "pass") in rows and ("NG208", "fail") in rows

    html = out["html"].stdout
    assert re.search(r'<div class="note">restart with [^<]*: the kubelet does not start', html)
    browser = open_in_browser(html, tmp_path)
    assert browser["data-errors"] == []


@pytest.mark.parametrize("content", [None, "kind: Pod\n", "{not yaml: ["])
def test_a_configuration_that_cannot_be_read_predicts_nothing_and_says_so(node_root, content):
    """Missing, not a KubeletConfiguration, not YAML: no prediction, an incomplete report (exit
    3), and the text says the restart was not predicted rather than nothing."""
    path = node_root.parent / "new-kubelet.yaml"
    if content is not None:
        path.write_text(content)
    result, report = inspect_json(node_root, "--kubelet-config", str(path))
    assert (result.exit_code, report["restart"], report["summary"]["complete"]) == (3, None, False)
    assert report["summary"]["notRead"][0].startswith(f"kubelet configuration {path}: ")
    server = serve(node_root / "var/lib/kubelet/pod-resources/kubelet.sock")
    try:
        text = run(node_root, "--kubelet-config", str(path)).stdout.splitlines()
    finally:
        server.stop(None)
    assert "restart: not predicted (no kubelet configuration was read)" in text


def test_sysfs_elsewhere_is_the_machine(node_root):
    """--sysfs: the machine read from another tree than ROOT/sys (a copy, another mount)."""
    other = node_root.parent / "sys-copy"
    shutil.copytree(node_root / "sys", other)
    write_sysfs_file(node_root, "node1/meminfo", f"Node 1 MemTotal:       {12 * GiB // 1024} kB")   # not read
    result, report = inspect_json(node_root, "--sysfs", str(other))
    assert (result.exit_code, report["findings"]) == (0, [])
    assert report["sources"][0]["name"] == f"sysfs {other}"
    (other / "devices/system/node/node1/meminfo").write_text(f"Node 1 MemTotal:       {12 * GiB // 1024} kB\n")
    result, report = inspect_json(node_root, "--sysfs", str(other))
    assert [f["path"] for f in report["findings"] if f["rule"] == "NG420"] == ["data.machineState.1.memoryMap.memory.total"]
