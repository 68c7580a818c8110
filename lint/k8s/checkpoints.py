"""The CPU and Memory Managers' checkpoint files, read the way the kubelet reads them.

`/var/lib/kubelet/cpu_manager_state` and `/var/lib/kubelet/memory_manager_state` are JSON
documents the kubelet writes through its checkpoint manager and reads back at start-up;
a file it cannot read (bad JSON, a checksum that does not match, a shape no version
accepts) or one recording another policy stops the kubelet ("could not restore state from
checkpoint: ..., please drain this node and delete the CPU manager checkpoint file ...").
Sources, kubernetes/kubernetes master of mid-2026 (the 1.37 development line) as stored:

* `pkg/kubelet/cm/cpumanager/state/checkpoint.go`: V1 (`entries` container id -> cpuset),
  V2 (`entries` pod uid -> container -> cpuset), V3 (V2 plus `podEntries` pod uid ->
  `{"cpuSet": ...}`, KEP-5526 pod-level assignments) and V4, which keeps the V3 fields for
  older kubelets (their `checksum` left 0) and adds `data` (the JSON of
  `CPUManagerCheckpointData`: policyName, defaultCpuSet, entries, podEntries) with
  `dataChecksum`, the checksum of that string. The V1-V3 checksums are computed with the
  type printed as `state.CPUManagerCheckpoint`; V3 is also accepted under its own name
  `state.CPUManagerCheckpointV3` (`VerifyChecksum`), V1/V2 with checksum 0 are accepted as
  written by the old file backend.
* `state_checkpoint.go` (`restoreState`, `loadAndMigrateCheckpointV4`): V4 first; a file
  with `data` or `dataChecksum` that fails is corrupt (no fall-back); otherwise V3, then V2.
  A V1 file no longer loads (`cannot unmarshal string into Go struct field ...entries`), and
  `configured policy %q differs from state checkpoint policy %q` stops the kubelet.
* `pkg/kubelet/cm/memorymanager/state/{checkpoint.go,state.go}`: V1 (machineState, entries
  pod -> container -> blocks), V2 (plus `podEntries` pod -> `{"memoryBlocks": [...]}`) and
  V3 (`data` + `dataChecksum` like the CPU V4). The kubelet's message is
  `[memorymanager] configured policy %q differs from state checkpoint policy %q`.
* `pkg/kubelet/checkpointmanager/checksum/checksum.go`: the checksum (see `go_spew`).

The 1.37 checkpoint with pod-level entries is the one above (CPU V3/V4 `podEntries`, memory
V2/V3 `podEntries`), as KEP-5526 describes it (`PodCPUAssignments map[string]PodEntry`,
`PodMemoryAssignments map[string]PodEntry`).

Plain parsed JSON in (what `numaguard.lint.load` gives, or `json.loads`), values out; no
files. `checkpoint_kind` says whether a document is a checkpoint; `read_cpu_checkpoint` and
`read_memory_checkpoint` return what the kubelet would restore, or why it could not.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from numaguard.lint.k8s.cpuset import CPUSetError, parse_cpuset
from numaguard.lint.k8s.go_spew import (
    CHECKSUM, EMPTY_STRUCT, INT, INT_SLICE, STRING, UINT64, GoDecodeError, GoField, GoType,
    checksum, decode, fnv32a, map_of, pointer_to, spew, struct,
)
from numaguard.lint.model import Path

CPU_CHECKPOINT_FILE = "cpu_manager_state"
MEMORY_CHECKPOINT_FILE = "memory_manager_state"

# ------------------------------------------------------------------------------- Go types

_CPUSET = struct("cpuset.CPUSet", GoField("elems", "elems", map_of("map[int]struct {}", INT, EMPTY_STRUCT)))


def _pod_entry_from_json(value: Any) -> dict:
    """`PodEntry.UnmarshalJSON` (cpumanager/state/state.go): `{"cpuSet": "0-3"}` on disk, a
    `cpuset.CPUSet` (`{elems map[int]struct{}}`) in memory, which is what the checksum prints."""
    if not isinstance(value, dict):
        raise GoDecodeError("json: cannot unmarshal into Go value of type state.podEntryJSON")
    text = value.get("cpuSet", "")
    if not isinstance(text, str):
        raise GoDecodeError("json: cannot unmarshal into Go struct field podEntryJSON.cpuSet of type string")
    try:
        cpus = parse_cpuset(text)
    except CPUSetError as exc:
        raise GoDecodeError(f'could not parse pod cpuset "{text}": {exc}') from None
    return {"CPUSet": {"elems": {cpu: {} for cpu in cpus}}}


_CPU_POD_ENTRY = GoType("struct", "state.PodEntry", fields=(GoField("CPUSet", "cpuSet", _CPUSET),),
                        from_json=_pod_entry_from_json)
_CPU_POD_ENTRIES = map_of("state.PodCPUAssignments", STRING, _CPU_POD_ENTRY)
_STRING_MAP = map_of("map[string]string", STRING, STRING)
_CPU_ENTRIES = map_of("map[string]map[string]string", STRING, _STRING_MAP)


def _cpu_type(name: str, entries: GoType, pod_entries: bool) -> GoType:
    fields = [GoField("PolicyName", "policyName", STRING), GoField("DefaultCPUSet", "defaultCpuSet", STRING),
              GoField("Entries", "entries", entries, made=True)]
    if pod_entries:
        fields.append(GoField("PodEntries", "podEntries", _CPU_POD_ENTRIES, made=True))
    fields.append(GoField("Checksum", "checksum", CHECKSUM))
    return struct(name, *fields)


CPU_V1 = _cpu_type("state.CPUManagerCheckpoint", _STRING_MAP, False)
CPU_V2 = _cpu_type("state.CPUManagerCheckpoint", _CPU_ENTRIES, False)
CPU_V3 = _cpu_type("state.CPUManagerCheckpoint", _CPU_ENTRIES, True)

_BLOCK = struct("state.Block", GoField("NUMAAffinity", "numaAffinity", INT_SLICE),
                GoField("Type", "type", GoType("string", "v1.ResourceName")),
                GoField("Size", "size", UINT64))
_BLOCKS = GoType("slice", "[]state.Block", elem=_BLOCK)
_MEMORY_TABLE = struct("state.MemoryTable", *(GoField(n, j, UINT64) for n, j in (
    ("TotalMemSize", "total"), ("SystemReserved", "systemReserved"), ("Allocatable", "allocatable"),
    ("Reserved", "reserved"), ("Free", "free"))))
_NUMA_STATE = struct("state.NUMANodeState", GoField("NumberOfAssignments", "numberOfAssignments", INT),
                     GoField("MemoryMap", "memoryMap", map_of("map[v1.ResourceName]*state.MemoryTable",
                                                              GoType("string", "v1.ResourceName"),
                                                              pointer_to(_MEMORY_TABLE))),
                     GoField("Cells", "cells", INT_SLICE))
_MACHINE_STATE = map_of("state.NUMANodeMap", INT, pointer_to(_NUMA_STATE))
_MEMORY_ENTRIES = map_of("state.ContainerMemoryAssignments", STRING, map_of("map[string][]state.Block", STRING, _BLOCKS))
_MEMORY_POD_ENTRIES = map_of("state.PodMemoryAssignments", STRING,
                             struct("state.PodEntry", GoField("MemoryBlocks", "memoryBlocks", _BLOCKS)))


def _memory_type(pod_entries: bool) -> GoType:
    fields = [GoField("PolicyName", "policyName", STRING), GoField("MachineState", "machineState", _MACHINE_STATE, made=True),
              GoField("Entries", "entries", _MEMORY_ENTRIES, made=True)]
    if pod_entries:
        fields.append(GoField("PodEntries", "podEntries", _MEMORY_POD_ENTRIES, made=True))
    fields.append(GoField("Checksum", "checksum", CHECKSUM))
    return struct("state.MemoryManagerCheckpoint", *fields)


MEMORY_V1 = _memory_type(False)
MEMORY_V2 = _memory_type(True)

# ------------------------------------------------------------------------------- values


@dataclass(frozen=True)
class CheckpointError:
    """Why the kubelet cannot restore this checkpoint (it then refuses to start)."""

    path: Path
    message: str


@dataclass(frozen=True)
class MemoryBlock:
    numa_nodes: tuple[int, ...]
    resource: str
    size: int


@dataclass(frozen=True)
class MemoryTable:
    total: int
    system_reserved: int
    allocatable: int
    reserved: int
    free: int


@dataclass(frozen=True)
class CPUCheckpoint:
    """What the kubelet restores from `cpu_manager_state`.

    `field_root` is where the fields live in the document: () for V1-V3, ("data",) for V4
    (the fields inside the `data` string have no position of their own).
    """

    version: str                                               # "v1" .. "v4"
    policy: str
    default_cpus: frozenset[int]
    containers: dict[str, dict[str, frozenset[int]]] = field(default_factory=dict)
    pods: dict[str, frozenset[int]] = field(default_factory=dict)
    field_root: Path = ()
    error: CheckpointError | None = None


@dataclass(frozen=True)
class MemoryCheckpoint:
    version: str                                               # "v1" .. "v3"
    policy: str
    machine: dict[int, dict[str, MemoryTable]] = field(default_factory=dict)
    cells: dict[int, tuple[int, ...]] = field(default_factory=dict)
    containers: dict[str, dict[str, tuple[MemoryBlock, ...]]] = field(default_factory=dict)
    pods: dict[str, tuple[MemoryBlock, ...]] = field(default_factory=dict)
    field_root: Path = ()
    error: CheckpointError | None = None


def checkpoint_kind(data: Any, name: str | None = None) -> str | None:
    """"cpu", "memory" or None: by file name (`cpu_manager_state`, `memory_manager_state`)
    or, for any other name, by content (`policyName` with `checksum` or `dataChecksum`)."""
    base = (name or "").replace("\\", "/").rsplit("/", 1)[-1]
    if base == CPU_CHECKPOINT_FILE:
        return "cpu"
    if base == MEMORY_CHECKPOINT_FILE:
        return "memory"
    if not isinstance(data, dict) or "kind" in data or "apiVersion" in data:
        return None
    if not ("checksum" in data or "dataChecksum" in data) or "policyName" not in data:
        return None
    if "machineState" in data or "machinestate" in {str(k).lower() for k in data}:
        return "memory"
    if isinstance(data.get("data"), str) and "machineState" in data["data"]:
        return "memory"
    return "cpu"


# ------------------------------------------------------------------------------- CPU


def read_cpu_checkpoint(data: Any) -> CPUCheckpoint:
    """The CPU Manager state the kubelet restores, trying V4, V3 and V2 as
    `loadAndMigrateCheckpointV4` does; V1 is recognised to say why it no longer loads."""
    if not isinstance(data, dict):
        return _cpu_error((), f"json: cannot unmarshal {type(data).__name__} into Go value of type state.CPUManagerCheckpoint")
    if "data" in data or "dataChecksum" in data:
        return _read_cpu_v4(data)
    v3_error = None
    try:
        v3 = decode(data, CPU_V3)
    except GoDecodeError as exc:
        v3, v3_error = None, str(exc)
    if v3 is not None:
        stored = v3["Checksum"]
        computed = {checksum(v3, CPU_V3), checksum(v3, CPU_V3.renamed("state.CPUManagerCheckpointV3"))}
        if stored in computed:
            return _cpu_values("v3", v3, ())
        v2 = decode(data, CPU_V2)
        if not v3["PodEntries"] and (stored == 0 or stored == checksum(v2, CPU_V2)):
            return _cpu_values("v2", v2, ())
        return _cpu_error(("checksum",), f"checkpoint is corrupted: checksum {stored} does not match the "
                                         f"content (expected {checksum(v3, CPU_V3)})")
    try:
        v1 = decode(data, CPU_V1)
    except GoDecodeError:
        v1 = None
    if v1 is not None and v1["Entries"]:
        return _cpu_error(("entries",), "a V1 checkpoint (entries keyed by container id), which this kubelet no "
                                        f"longer reads: {v3_error}")
    return _cpu_error(("entries",), v3_error or "unknown checkpoint version")


def _read_cpu_v4(data: dict) -> CPUCheckpoint:
    raw = data.get("data")
    stored = data.get("dataChecksum", 0)
    if not isinstance(raw, str):
        return _cpu_error(("data",), "could not load v4 checkpoint: data is not a string")
    if isinstance(stored, bool) or not isinstance(stored, int):
        return _cpu_error(("dataChecksum",), "could not load v4 checkpoint: dataChecksum is not a number")
    try:
        inner = json.loads(raw)
    except ValueError as exc:
        return _cpu_error(("data",), f"could not load v4 checkpoint: failed to deserialize cpu manager checkpoint data: {exc}")
    computed = fnv32a(spew(raw, STRING))
    if stored != computed:
        return _cpu_error(("dataChecksum",), f"could not load v4 checkpoint: checkpoint is corrupted: dataChecksum "
                                             f"{stored} does not match the data (expected {computed})")
    try:
        values = decode(inner, CPU_V3)
    except GoDecodeError as exc:
        return _cpu_error(("data",), f"could not load v4 checkpoint: {exc}")
    return _cpu_values("v4", values, ("data",))


def _cpu_values(version: str, v: dict, root: Path) -> CPUCheckpoint:
    try:
        default = parse_cpuset(v["DefaultCPUSet"])
    except CPUSetError as exc:
        return _cpu_error(root + ("defaultCpuSet",), f'could not parse default CPU set "{v["DefaultCPUSet"]}": {exc}',
                          version, v["PolicyName"])
    containers: dict[str, dict[str, frozenset[int]]] = {}
    for pod, by_container in (v["Entries"] or {}).items():
        for container, text in (by_container or {}).items():
            try:
                containers.setdefault(pod, {})[container] = parse_cpuset(text)
            except CPUSetError as exc:
                return _cpu_error(root + ("entries", pod, container),
                                  f'could not parse cpuset "{text}" for container "{container}" in pod "{pod}": {exc}',
                                  version, v["PolicyName"])
    pods = {pod: frozenset(entry["CPUSet"]["elems"] or {}) for pod, entry in (v.get("PodEntries") or {}).items()}
    return CPUCheckpoint(version, v["PolicyName"], default, containers, pods, root)


def _cpu_error(path: Path, message: str, version: str = "unknown", policy: str = "") -> CPUCheckpoint:
    return CPUCheckpoint(version, policy, frozenset(), error=CheckpointError(path, message))


def cpu_checkpoint_json(policy: str, default_cpus: str, entries: dict[str, dict[str, str]] | None = None,
                        pods: dict[str, str] | None = None) -> dict:
    """A V4 `cpu_manager_state` as a 1.37 kubelet writes it (`MarshalCheckpoint`): the V3
    fields for older kubelets with checksum 0, and `data` with its `dataChecksum`. For
    tests, fixtures and examples."""
    inner: dict[str, Any] = {"policyName": policy, "defaultCpuSet": default_cpus}
    if entries:
        inner["entries"] = entries
    if pods:
        inner["podEntries"] = {uid: {"cpuSet": cpus} for uid, cpus in pods.items()}
    raw = json.dumps(inner, separators=(",", ":"))
    return {**inner, "checksum": 0, "data": raw, "dataChecksum": fnv32a(spew(raw, STRING))}


# ------------------------------------------------------------------------------- memory


def read_memory_checkpoint(data: Any) -> MemoryCheckpoint:
    """The Memory Manager state the kubelet restores: V3 (`data`), else V2, else V1."""
    if not isinstance(data, dict):
        return _memory_error((), "json: cannot unmarshal into Go value of type state.MemoryManagerCheckpoint")
    if "data" in data or "dataChecksum" in data:
        raw, stored = data.get("data"), data.get("dataChecksum", 0)
        if not isinstance(raw, str) or isinstance(stored, bool) or not isinstance(stored, int):
            return _memory_error(("data",), "could not load v3 checkpoint: data must be a string and dataChecksum a number")
        try:
            inner = json.loads(raw)
        except ValueError as exc:
            return _memory_error(("data",), "could not load v3 checkpoint: failed to deserialize memory manager "
                                            f"checkpoint data: {exc}")
        computed = fnv32a(spew(raw, STRING))
        if stored != computed:
            return _memory_error(("dataChecksum",), f"could not load v3 checkpoint: checkpoint is corrupted: "
                                                    f"dataChecksum {stored} does not match the data (expected {computed})")
        try:
            return _memory_values("v3", decode(inner, MEMORY_V2), ("data",))
        except GoDecodeError as exc:
            return _memory_error(("data",), f"could not load v3 checkpoint: {exc}")
    try:
        v2 = decode(data, MEMORY_V2)
    except GoDecodeError as exc:
        return _memory_error((), str(exc))
    stored = v2["Checksum"]
    if stored in (checksum(v2, MEMORY_V2), checksum(v2, MEMORY_V2.renamed("state.MemoryManagerCheckpointV2"))):
        return _memory_values("v2", v2, ())
    v1 = decode(data, MEMORY_V1)
    if not v2["PodEntries"] and stored in (0, checksum(v1, MEMORY_V1),
                                           checksum(v1, MEMORY_V1.renamed("state.MemoryManagerCheckpointV1"))):
        return _memory_values("v1", v2, ())
    return _memory_error(("checksum",), f"checkpoint is corrupted: checksum {stored} does not match the content "
                                        f"(expected {checksum(v2, MEMORY_V2)})")


def _blocks(raw: list | None) -> tuple[MemoryBlock, ...]:
    return tuple(MemoryBlock(tuple(b["NUMAAffinity"] or ()), b["Type"], b["Size"]) for b in raw or ())


def _memory_values(version: str, v: dict, root: Path) -> MemoryCheckpoint:
    machine: dict[int, dict[str, MemoryTable]] = {}
    cells: dict[int, tuple[int, ...]] = {}
    for numa, state in (v["MachineState"] or {}).items():
        if state is None:
            continue
        machine[numa] = {res: MemoryTable(t["TotalMemSize"], t["SystemReserved"], t["Allocatable"], t["Reserved"], t["Free"])
                         for res, t in (state["MemoryMap"] or {}).items() if t is not None}
        cells[numa] = tuple(state["Cells"] or ())
    containers = {pod: {c: _blocks(b) for c, b in (by_c or {}).items()} for pod, by_c in (v["Entries"] or {}).items()}
    pods = {pod: _blocks(entry["MemoryBlocks"]) for pod, entry in (v.get("PodEntries") or {}).items()}
    return MemoryCheckpoint(version, v["PolicyName"], machine, cells, containers, pods, root)


def _memory_error(path: Path, message: str) -> MemoryCheckpoint:
    return MemoryCheckpoint("unknown", "", error=CheckpointError(path, message))


def memory_checkpoint_json(policy: str, machine: dict, entries: dict | None = None, pods: dict | None = None) -> dict:
    """A V3 `memory_manager_state` as a 1.37 kubelet writes it: the V2 fields with checksum 0
    and `data` with its `dataChecksum`. `machine`, `entries` and `pods` are in the file's JSON
    shape (machineState, entries, podEntries). For tests, fixtures and examples."""
    inner: dict[str, Any] = {"policyName": policy, "machineState": machine}
    if entries:
        inner["entries"] = entries
    if pods:
        inner["podEntries"] = pods
    raw = json.dumps(inner, separators=(",", ":"))
    return {**inner, "checksum": 0, "data": raw, "dataChecksum": fnv32a(spew(raw, STRING))}
