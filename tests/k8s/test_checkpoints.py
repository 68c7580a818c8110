"""Checkpoint reading and the kubelet's checksum, pinned by checkpoints and checksums taken
from the Kubernetes unit tests (kubernetes/kubernetes master, mid-2026):
pkg/kubelet/cm/cpumanager/state/state_checkpoint_test.go and
pkg/kubelet/cm/memorymanager/state/state_checkpoint_test.go (TestCheckpointStateRestore)."""
from __future__ import annotations

import json

import pytest

from numaguard.lint.k8s.checkpoints import (checkpoint_kind, cpu_checkpoint_json, memory_checkpoint_json,
                                            read_cpu_checkpoint, read_memory_checkpoint)
from numaguard.lint.k8s.go_spew import STRING, fnv32a, spew

# (test case name in state_checkpoint_test.go, content, version numaguard reports)
CPU_CASES = [
    ("Restore checkpoint from v2 (migration)",
     '{"policyName": "static", "defaultCPUSet": "7-9", "entries": {"pod": {"container1": "4-6", '
     '"container2": "1-3"}}, "checksum": 1942532442}', "v3"),
    ("Restore checkpoint from v3 (migration)",
     '{"policyName": "static", "defaultCPUSet": "1-2", "entries": {"pod1": {"container1": "5-6", '
     '"container2": "3-4"}}, "podEntries": {"pod2": {"cpuSet":"7-9"}}, "checksum": 766259872}', "v3"),
    ("Restore valid checkpoint (v4)",
     '{"policyName": "other", "defaultCPUSet": "1-9", "checksum": 1234, "data": '
     '"{\\"policyName\\":\\"static\\",\\"defaultCPUSet\\":\\"7-9\\",\\"entries\\":{\\"pod\\":'
     '{\\"container1\\":\\"4-6\\",\\"container2\\":\\"1-3\\"}}}", "dataChecksum": 1420829534}', "v4"),
    ("Restore default CPU set (v4)",
     '{"policyName": "other", "defaultCPUSet": "1-9", "checksum": 1234, '
     '"data": "{\\"policyName\\":\\"none\\",\\"defaultCPUSet\\":\\"4-6\\"}", "dataChecksum": 657950972}', "v4"),
]


@pytest.mark.parametrize("name,content,version", CPU_CASES, ids=[c[0] for c in CPU_CASES])
def test_kubernetes_cpu_checkpoints_verify(name, content, version):
    cp = read_cpu_checkpoint(json.loads(content))
    assert cp.error is None
    assert cp.version == version


def test_v3_pod_entries_are_read():
    cp = read_cpu_checkpoint(json.loads(CPU_CASES[1][1]))
    assert cp.policy == "static"
    assert cp.default_cpus == {1, 2}
    assert cp.containers == {"pod1": {"container1": {5, 6}, "container2": {3, 4}}}
    assert cp.pods == {"pod2": {7, 8, 9}}


def test_v4_reads_data_not_the_legacy_fields():
    cp = read_cpu_checkpoint(json.loads(CPU_CASES[2][1]))
    assert (cp.policy, cp.default_cpus, cp.field_root) == ("static", {7, 8, 9}, ("data",))


def test_spew_string_checksum_is_fnv32a_of_typed_string():
    data = '{"policyName":"none","defaultCPUSet":"4-6"}'
    assert spew(data, STRING) == "(string)" + data
    assert fnv32a(spew(data, STRING)) == 657950972


@pytest.mark.parametrize("content,message", [
    # "Fail to restore checkpoint with invalid checksum" (v4 dataChecksum 1234)
    ('{"policyName": "static", "defaultCPUSet": "7-9", "checksum": 1942532442, "data": '
     '"{\\"policyName\\":\\"static\\",\\"defaultCPUSet\\":\\"7-9\\"}", "dataChecksum": 1234}',
     "could not load v4 checkpoint: checkpoint is corrupted: dataChecksum 1234 does not match the data "
     "(expected 2029460608)"),
    # "Fail to restore checkpoint from checkpoint with v1 checksum"
    ('{"policyName": "none", "defaultCPUSet": "1-3", "checksum": 1694838852}',
     "checkpoint is corrupted: checksum 1694838852 does not match the content (expected 3702567043)"),
    # "Fail to restore checkpoint from v1 (migration)"
    ('{"policyName": "static", "defaultCPUSet": "7-9", "entries": {"containerID1": "4-6", '
     '"containerID2": "1-3"}, "checksum": 2026311253}',
     "a V1 checkpoint (entries keyed by container id), which this kubelet no longer reads: json: cannot "
     "unmarshal string into Go struct field CPUManagerCheckpoint.entries of type map[string]string"),
    ('{"policyName": "static", "defaultCpuSet": "1-3", "data": "{", "dataChecksum": 1}',
     "could not load v4 checkpoint: failed to deserialize cpu manager checkpoint data: Expecting property "
     "name enclosed in double quotes: line 1 column 2 (char 1)"),
])
def test_corrupt_cpu_checkpoints(content, message):
    cp = read_cpu_checkpoint(json.loads(content))
    assert cp.error is not None and cp.error.message == message


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
