"""Checkpoint reading and the kubelet's checksum, pinned by the checkpoints and outcomes of the
Kubernetes unit tests, replayed here as tables: kubernetes/kubernetes
pkg/kubelet/cm/cpumanager/state/state_checkpoint_test.go (TestCheckpointStateRestore) at
commit 0411cc70 (1.37: V4 with `dataChecksum`, V1 no longer read), its V1 cases as they stood
from PR #84462 (1.18) until 1.37 removed them, and
pkg/kubelet/cm/memorymanager/state/state_checkpoint_test.go."""
from __future__ import annotations

import json
from dataclasses import dataclass

import pytest

from numaguard.lint.k8s.checkpoints import (checkpoint_kind, cpu_checkpoint_json, memory_checkpoint_json,
                                            read_cpu_checkpoint, read_memory_checkpoint)
from numaguard.lint.k8s.go_spew import STRING, fnv32a, spew
from numaguard.lint.rules.node import CheckpointExtract, checkpoint_findings


@dataclass(frozen=True)
class Restored:
    """What the kubelet restores: version read, policy, defaultCpuSet, container entries, pod entries."""
    version: str
    policy: str
    default: set
    containers: dict
    pods: dict


@dataclass(frozen=True)
class Refused:
    """The kubelet stops: `upstream` is the text the Go test expects in the error, `message`
    numaguard's whole message (which contains it)."""
    upstream: str
    message: str


def _data(**fields) -> str:
    return json.dumps(fields, separators=(",", ":"))


ENTRIES = {"pod": {"container1": "4-6", "container2": "1-3"}}
V2_PART = {"policyName": "static", "defaultCPUSet": "7-9", "entries": ENTRIES, "checksum": 1942532442}
WRONG_V2_PART = {"policyName": "other", "defaultCPUSet": "1-9", "checksum": 1234}   # "intentionally corrupted"
VALID_DATA = _data(policyName="static", defaultCPUSet="7-9", entries=ENTRIES)

# (case of state_checkpoint_test.go @0411cc70, the file, what a 1.37 kubelet does)
CPU_137 = [
    ("Fail to restore checkpoint without data section", {**V2_PART, "dataChecksum": 1234},
     Refused("could not load v4 checkpoint: failed to deserialize cpu manager checkpoint data: unexpected end of "
             "JSON input", "could not load v4 checkpoint: failed to deserialize cpu manager checkpoint data: "
                           "unexpected end of JSON input")),
    ("Fail to restore checkpoint without dataChecksum section", {**V2_PART, "data": VALID_DATA},
     Refused("could not load v4 checkpoint: checkpoint is corrupted",
             "could not load v4 checkpoint: checkpoint is corrupted: dataChecksum 0 does not match the data "
             "(expected 1420829534)")),
    ("Restore default CPU set", {**WRONG_V2_PART, "data": _data(policyName="none", defaultCPUSet="4-6"),
                                 "dataChecksum": 657950972},
     Restored("v4", "none", {4, 5, 6}, {}, {})),
    ("Restore valid checkpoint", {**WRONG_V2_PART, "data": VALID_DATA, "dataChecksum": 1420829534},
     Restored("v4", "static", {7, 8, 9}, {"pod": {"container1": {4, 5, 6}, "container2": {1, 2, 3}}}, {})),
    ("Fail to restore checkpoint with invalid checksum", {**V2_PART, "data": VALID_DATA, "dataChecksum": 1234},
     Refused("checkpoint is corrupted", "could not load v4 checkpoint: checkpoint is corrupted: dataChecksum 1234 "
                                        "does not match the data (expected 1420829534)")),
    # "Fail to restore checkpoint with invalid policy name": restored; the policy check is NG402 (below)
    ("Fail to restore checkpoint with invalid policy name",
     {**V2_PART, "data": _data(policyName="other", defaultCPUSet="7-9", entries=ENTRIES), "dataChecksum": 1432271708},
     Restored("v4", "other", {7, 8, 9}, {"pod": {"container1": {4, 5, 6}, "container2": {1, 2, 3}}}, {})),
    ("Fail to restore checkpoint with unparsable default CPU set",
     {"policyName": "none", "defaultCPUSet": "7-9", "checksum": 98002435,
      "data": _data(policyName="none", defaultCPUSet="1.3"), "dataChecksum": 3033143655},
     Refused('could not parse default CPU set "1.3": strconv.Atoi: parsing "1.3": invalid syntax',
             'could not parse default CPU set "1.3": strconv.Atoi: parsing "1.3": invalid syntax')),
    ("Fail to restore checkpoint with unparsable assignment entry",
     {"policyName": "static", "defaultCPUSet": "1-3", "entries": {"pod": {"container1": "4-6", "container2": "7-9"}},
      "checksum": 1659543133, "dataChecksum": 3794806925,
      "data": _data(policyName="static", defaultCPUSet="1-3", entries={"pod": {"container1": "4-6", "container2": "asd"}})},
     Refused('could not parse cpuset "asd" for container "container2" in pod "pod": strconv.Atoi: parsing "asd": '
             'invalid syntax', 'could not parse cpuset "asd" for container "container2" in pod "pod": strconv.Atoi: '
                               'parsing "asd": invalid syntax')),
    ("Restore checkpoint ignoring unknown fields in data section",
     {**WRONG_V2_PART, "data": _data(policyName="none", defaultCPUSet="4-6", unknownField="value"),
      "dataChecksum": 3492408555},
     Restored("v4", "none", {4, 5, 6}, {}, {})),
    ("Fail to restore checkpoint from checkpoint with v1 checksum",
     {"policyName": "none", "defaultCPUSet": "1-3", "checksum": 1694838852},
     Refused("checkpoint is corrupted",
             "checkpoint is corrupted: checksum 1694838852 does not match the content (expected 1850858057): the "
             "checksum of a V1 checkpoint without entries (the V1 layout, written by a kubelet older than 1.18); "
             "the 1.37 kubelet reads V2 and later only, 1.36 and earlier migrate V1")),
    ("Fail to restore checkpoint from v1 (migration)",
     {"policyName": "static", "defaultCPUSet": "7-9", "entries": {"containerID1": "4-6", "containerID2": "1-3"},
      "checksum": 2026311253},
     Refused("cannot unmarshal string into Go struct field CPUManagerCheckpointV2.entries",
             "json: cannot unmarshal string into Go struct field CPUManagerCheckpointV2.entries of type "
             "map[string]string: a V1 checkpoint (entries keyed by container id, written by a kubelet older than "
             "1.18); the 1.37 kubelet reads V2 and later only, 1.36 and earlier migrate V1")),
    # 1942532442 verifies as V3 under its own name (state.CPUManagerCheckpointV3, empty podEntries)
    ("Restore checkpoint from v2 (migration)", V2_PART,
     Restored("v3", "static", {7, 8, 9}, {"pod": {"container1": {4, 5, 6}, "container2": {1, 2, 3}}}, {})),
    ("Restore checkpoint from v3 (migration)",
     {"policyName": "static", "defaultCPUSet": "1-2", "entries": {"pod1": {"container1": "5-6", "container2": "3-4"}},
      "podEntries": {"pod2": {"cpuSet": "7-9"}}, "checksum": 766259872},
     Restored("v3", "static", {1, 2}, {"pod1": {"container1": {5, 6}, "container2": {3, 4}}}, {"pod2": {7, 8, 9}})),
    ("Restore valid v4 checkpoint",
     {**WRONG_V2_PART, "dataChecksum": 1032795074, "data": _data(
         policyName="static", defaultCPUSet="1-3", entries={"pod": {"container1": "4-6", "container2": "7-9"}},
         podEntries={"pod": {"cpuSet": "4-10"}},
         baselines={"pod": {"container1": {"baseline": "4-5"}, "container2": {"baseline": "7-8"}}})},
     Restored("v4", "static", {1, 2, 3}, {"pod": {"container1": {4, 5, 6}, "container2": {7, 8, 9}}},
              {"pod": set(range(4, 11))})),
]

# The same file read by a kubelet before 1.37: V3, else V2, else V1, migrated (the V1 cases of
# state_checkpoint_test.go from PR #84462 until V4; the V3 case of the 1.36 line, 2284712151
# being the checksum under the name state.CPUManagerCheckpointV3).
CPU_136 = [
    ("Restore checkpoint from checkpoint with v1 checksum",
     {"policyName": "none", "defaultCPUSet": "1-3", "checksum": 1694838852},
     Restored("v1", "none", {1, 2, 3}, {}, {})),
    ("Restore checkpoint with migration",
     {"policyName": "static", "defaultCPUSet": "7-9", "entries": {"containerID1": "4-6", "containerID2": "1-3"},
      "checksum": 2026311253},
     Restored("v1", "static", {7, 8, 9}, {}, {})),
    ("Restore checkpoint from v3 (migration) with PodLevelResourceManagers enabled",
     {"policyName": "static", "defaultCPUSet": "1-2", "entries": {"pod1": {"container1": "5-6", "container2": "3-4"}},
      "podEntries": {"pod2": {"cpuSet": "7-9"}}, "checksum": 2284712151},
     Restored("v3", "static", {1, 2}, {"pod1": {"container1": {5, 6}, "container2": {3, 4}}}, {"pod2": {7, 8, 9}})),
    # a 1.37 file read back by 1.36: no V4 there; its V2 part is "intentionally corrupted"
    ("Restore valid checkpoint (a V4 file)", {**WRONG_V2_PART, "data": VALID_DATA, "dataChecksum": 1420829534},
     Refused("checkpoint is corrupted", "checkpoint is corrupted: checksum 1234 does not match the content (expected "
                                        "2032321430)")),
]


def _check(outcome, cp) -> None:
    if isinstance(outcome, Refused):
        assert cp.error is not None, cp
        assert outcome.upstream in cp.error.message
        assert cp.error.message == outcome.message
        return
    assert cp.error is None, cp.error
    assert (cp.version, cp.policy, cp.default_cpus, cp.containers, cp.pods) == (
        outcome.version, outcome.policy, outcome.default, outcome.containers, outcome.pods)


@pytest.mark.parametrize("name,content,outcome", CPU_137, ids=[c[0] for c in CPU_137])
def test_kubernetes_137_cpu_vectors(name, content, outcome):
    _check(outcome, read_cpu_checkpoint(json.loads(json.dumps(content)), (1, 37)))


@pytest.mark.parametrize("name,content,outcome", CPU_136, ids=[c[0] for c in CPU_136])
def test_kubernetes_136_cpu_vectors(name, content, outcome):
    _check(outcome, read_cpu_checkpoint(json.loads(json.dumps(content)), (1, 36)))


def test_v1_migration_keeps_the_entries_by_container_id():
    """migrateV1CheckpointToV2Checkpoint maps container ids through the runtime at start-up."""
    cp = read_cpu_checkpoint(CPU_136[1][1], (1, 36))
    assert cp.container_ids == {"containerID1": {4, 5, 6}, "containerID2": {1, 2, 3}}


def test_invalid_policy_name_vector_is_ng402():
    cp = CheckpointExtract.of("cpu_manager_state", CPU_137[5][1], "cpu")
    [pv] = checkpoint_findings([cp], kubelet_config={"kind": "KubeletConfiguration", "cpuManagerPolicy": "none"})
    assert pv.rule.id == "NG402" and pv.violation.path == ("data", "policyName")
    assert 'configured policy "none" differs from state checkpoint policy "other"' in pv.violation.message


def test_v4_reads_data_not_the_legacy_fields():
    cp = read_cpu_checkpoint(CPU_137[3][1])
    assert (cp.policy, cp.default_cpus, cp.field_root) == ("static", {7, 8, 9}, ("data",))


def test_spew_string_checksum_is_fnv32a_of_typed_string():
    data = '{"policyName":"none","defaultCPUSet":"4-6"}'
    assert spew(data, STRING) == "(string)" + data
    assert fnv32a(spew(data, STRING)) == 657950972


@pytest.mark.parametrize("content,message", [
    ('{"policyName": "static", "defaultCpuSet": "1-3", "data": "{", "dataChecksum": 1}',
     "could not load v4 checkpoint: failed to deserialize cpu manager checkpoint data: Expecting property "
     "name enclosed in double quotes: line 1 column 2 (char 1)"),
    ('{"policyName": "static", "defaultCpuSet": "1-3", "data": 7, "dataChecksum": 1}',
     "could not load v4 checkpoint: failed to deserialize cpu manager checkpoint: json: cannot unmarshal number "
     "into Go struct field CPUManagerCheckpoint.data of type string"),
    ('[1]', "json: cannot unmarshal array into Go value of type state.CPUManagerCheckpoint"),
])
def test_corrupt_cpu_checkpoints(content, message):
    cp = read_cpu_checkpoint(json.loads(content))
    assert cp.error is not None and cp.error.message == message


def test_empty_data_and_zero_data_checksum_fall_back_to_v3():
    """`len(Data) > 0 || DataChecksum != 0` decides whether a failed V4 read is final."""
    cp = read_cpu_checkpoint({**V2_PART, "data": "", "dataChecksum": 0})
    assert (cp.error, cp.version) == (None, "v3")


# -- checksum 0 next to podEntries: the survivor of issue 15 ---------------------------------

POD_ENTRIES_CHECKSUM_0 = {"policyName": "static", "defaultCpuSet": "0-1,8-9",
                          "entries": {"uid-a": {"app": "2-3"}}, "podEntries": {"uid-a": {"cpuSet": "2-5"}},
                          "checksum": 0}


@pytest.mark.parametrize("version", [(1, 37), (1, 36)])
def test_pod_entries_with_checksum_0_are_not_restored(version):
    """V3 (the struct with podEntries) accepts no empty checksum; V2 does and has no podEntries
    field, so the kubelet restores the file as V2 and reads past them."""
    cp = read_cpu_checkpoint(POD_ENTRIES_CHECKSUM_0, version)
    assert (cp.error, cp.version, cp.pods) == (None, "v2", {})
    assert cp.containers == {"uid-a": {"app": {2, 3}}}
    assert cp.dropped_pods == {"uid-a": {2, 3, 4, 5}}


def test_pod_entries_with_checksum_0_are_ng406():
    cp = CheckpointExtract.of("node-a:/var/lib/kubelet/cpu_manager_state", POD_ENTRIES_CHECKSUM_0, "cpu")
    [pv] = checkpoint_findings([cp])
    assert (pv.rule.id, pv.violation.path) == ("NG406", ("podEntries",))
    assert pv.violation.message == (
        "the kubelet restores this file as a V2 cpu checkpoint (V3, which has podEntries, refuses its checksum; V2 "
        "accepts it, 0 included) and drops the pod-level CPU sets of 1 pod(s): uid-a (2-5); CPUs 4-5 are then "
        "neither in defaultCpuSet nor in a container's entry and the static policy refuses to start (\"current set "
        "of available CPUs ... doesn't match with CPUs in state ...\")")
    assert pv.violation.remediation.startswith("Drain the node, stop the kubelet, delete the named checkpoint file")


def test_v1_without_entries_under_137_says_no_drain():
    cp = CheckpointExtract.of("cpu_manager_state", CPU_136[0][1], "cpu")
    [pv] = checkpoint_findings([cp])
    assert pv.rule.id == "NG406"
    assert pv.violation.remediation == (
        "This V1 file records no exclusive CPUs: stop the kubelet, delete /var/lib/kubelet/cpu_manager_state and "
        "start it again (it writes a new file); no drain is needed. Do it before the kubelet is upgraded to 1.37.")
    assert checkpoint_findings([CheckpointExtract.of("cpu_manager_state", CPU_136[0][1], "cpu", version=(1, 36))]) == []


MEMORY_V1 = ('{"policyName":"static","machineState":{"0":{"numberOfAssignments":0,"memoryMap":{"memory":'
             '{"total":2048,"systemReserved":512,"allocatable":1536,"reserved":512,"free":1024}},"cells":[]}},'
             '"entries":{"pod":{"container1":[{"numaAffinity":[0],"type":"memory","size":512}]}},'
             '"checksum": 4215593881}')
MEMORY_V2 = MEMORY_V1.replace('"checksum": 4215593881', '"podEntries":{"pod":{"memoryBlocks":[{"numaAffinity":[0],'
                              '"type":"memory","size":512}]}},"checksum": 1278640530')


@pytest.mark.parametrize("content,version", [(MEMORY_V1, "v1"), (MEMORY_V2, "v2"),
                                             (MEMORY_V1.replace("4215593881", "0"), "v1")])
def test_kubernetes_memory_checkpoints_verify(content, version):
    cp = read_memory_checkpoint(json.loads(content))
    assert cp.error is None and cp.version == version
    assert cp.machine[0]["memory"].reserved == 512
    assert cp.containers["pod"]["container1"][0].numa_nodes == (0,)
    assert cp.dropped_pods == {}


def test_memory_pod_entries_with_checksum_0_are_dropped():
    """Memory V2 accepts no empty checksum, V1 does and has no podEntries: restored as V1."""
    cp = read_memory_checkpoint(json.loads(MEMORY_V2.replace("1278640530", "0")))
    assert (cp.error, cp.version, cp.pods) == (None, "v1", {})
    assert [b.size for b in cp.dropped_pods["pod"]] == [512]
    [pv] = [pv for pv in checkpoint_findings([CheckpointExtract.of("memory_manager_state", json.loads(
        MEMORY_V2.replace("1278640530", "0")), "memory")]) if pv.rule.id == "NG406"]
    assert pv.violation.message == (
        "the kubelet restores this file as a V1 memory checkpoint (V2, which has podEntries, refuses its checksum; "
        "V1 accepts it, 0 included) and drops the pod-level memory blocks of 1 pod(s): pod (1 block(s))")


def test_memory_v3_from_kubernetes_test():
    inner = json.loads(MEMORY_V1)
    del inner["checksum"]
    data = json.dumps(inner, separators=(",", ":"))
    assert fnv32a(spew(data, STRING)) == 1849615440       # "Restore valid checkpoint" dataChecksum
    cp = read_memory_checkpoint({"policyName": "other", "checksum": 1234, "data": data, "dataChecksum": 1849615440})
    assert (cp.error, cp.version, cp.policy) == (None, "v3", "static")


def test_memory_checksum_mismatch():
    cp = read_memory_checkpoint(json.loads(MEMORY_V1.replace("4215593881", "101010")))
    assert cp.error.message.startswith("checkpoint is corrupted: checksum 101010 does not match")


def test_writers_round_trip():
    assert read_cpu_checkpoint(cpu_checkpoint_json("static", "0-3", {"u": {"c": "4"}}, {"u": "4-5"})).pods == {"u": {4, 5}}
    assert read_memory_checkpoint(memory_checkpoint_json("Static", {})).version == "v3"


@pytest.mark.parametrize("data,name,kind", [
    ({}, "/var/lib/kubelet/cpu_manager_state", "cpu"),
    ({}, "memory_manager_state", "memory"),
    ({"policyName": "static", "checksum": 1}, "x.json", "cpu"),
    ({"policyName": "Static", "machineState": {}, "checksum": 1}, "x.json", "memory"),
    ({"policyName": "static"}, "x.json", None),
    ({"kind": "Pod", "policyName": "x", "checksum": 1}, "x.json", None),
])
def test_checkpoint_kind(data, name, kind):
    assert checkpoint_kind(data, name) == kind
