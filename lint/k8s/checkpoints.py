"""The CPU and Memory Managers' checkpoint files, read the way the kubelet reads them.

`/var/lib/kubelet/cpu_manager_state` and `/var/lib/kubelet/memory_manager_state` are JSON
documents the kubelet writes through its checkpoint manager and reads back at start-up;
a file it cannot read (bad JSON, a checksum that does not match, a shape no version
accepts) or one recording another policy stops the kubelet ("could not restore state from
checkpoint: ..., please drain this node and delete the CPU manager checkpoint file ...").
How a file is read depends on the kubelet's minor version (`version`, numaguard's
`kubernetesVersion`). Sources, kubernetes/kubernetes as stored:

* `pkg/kubelet/cm/cpumanager/state/checkpoint.go`: V1 (`entries` container id -> cpuset),
  V2 (`entries` pod uid -> container -> cpuset), V3 (V2 plus `podEntries` pod uid ->
  `{"cpuSet": ...}`, KEP-5526 pod-level assignments) and V4 (1.37, PR #139102), which keeps
  the V3 fields for older kubelets (their `checksum` left 0) and adds `data` (the JSON of
  `CPUManagerCheckpointData`) with `dataChecksum`, the checksum of that string.
  `VerifyChecksum`: V1 and V2 accept checksum 0 ("accept empty checksum for compatibility with
  old file backend"), V3 does not; V1-V3 checksums are computed with the type printed as
  `state.CPUManagerCheckpoint` (the legacy name; V2 and V3 are also accepted under their own
  names `state.CPUManagerCheckpointV2`/`V3`).
* `state_checkpoint.go`, 1.37 (`restoreState` -> `loadAndMigrateCheckpointV4`): V4 first; a
  file with a non-empty `data` or a non-zero `dataChecksum` that fails is corrupt (no
  fall-back); otherwise V3, then V2, "the oldest supported version so there is no try to
  migrate from V1" (`loadCheckpointV2`): a V1 file stops a 1.37 kubelet.
* `state_checkpoint.go`, 1.36 and earlier (@008b3652, `loadAndMigrateCheckpointV3` /
  `loadAndMigrateCheckpointV2`): no V4; V3 (with the PodLevelResourceManagers gate that wrote
  it), then V2, then V1 (`loadCheckpointV1`), migrated to V2 by
  `migrateV1CheckpointToV2Checkpoint`: each container id of `entries` is looked up in the
  containers the runtime lists at start-up ("containerID '%v' not found in initial containers
  list" stops the kubelet); a V1 file without entries migrates as it is.
* Every fall-back reads the same file into an older struct: encoding/json ignores the keys that
  struct lacks, so a file whose `podEntries` only an older version accepts (checksum 0, which
  V3 refuses and V2 accepts) is restored without its pod-level assignments (`dropped_pods`).
* `pkg/kubelet/cm/memorymanager/state/{checkpoint.go,state_checkpoint.go}`: V1 (machineState,
  entries pod -> container -> blocks), V2 (plus `podEntries` pod -> `{"memoryBlocks": [...]}`)
  and, from 1.37 (PR #139626), V3 (`data` + `dataChecksum` like the CPU V4); read V3, then V2,
  then V1; only V1 accepts checksum 0. The kubelet's message is `[memorymanager] configured
  policy %q differs from state checkpoint policy %q`.
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
from dataclasses import dataclass, field, replace
from typing import Any

from numaguard.lint.k8s.cpuset import CPUSetError, parse_cpuset
from numaguard.lint.k8s.go_spew import (
    CHECKSUM, EMPTY_STRUCT, INT, INT_SLICE, STRING, UINT64, GoDecodeError, GoField, GoType,
    checksum, decode, fnv32a, map_of, pointer_to, spew, struct, zero,
)
from numaguard.lint.model import Path

from numaguard.lint.k8s.checkpoint_files import (  # noqa: F401  (re-exported)
    CPU_CHECKPOINT_FILE, CURRENT, MEMORY_CHECKPOINT_FILE, Version, checkpoint_kind,
)

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


def _cpu_type(name: str, entries: GoType, pod_entries: bool, with_checksum: bool = True) -> GoType:
    fields = [GoField("PolicyName", "policyName", STRING), GoField("DefaultCPUSet", "defaultCpuSet", STRING),
              GoField("Entries", "entries", entries, made=True)]
    if pod_entries:
        fields.append(GoField("PodEntries", "podEntries", _CPU_POD_ENTRIES, made=True))
    if with_checksum:
        fields.append(GoField("Checksum", "checksum", CHECKSUM))
    return struct(name, *fields)


# Each version under its own Go name (what encoding/json's errors name); the checksums are
# computed under the legacy name LEGACY_CPU, V2 and V3 also under their own (VerifyChecksum).
LEGACY_CPU = "state.CPUManagerCheckpoint"
CPU_V1 = _cpu_type("state.CPUManagerCheckpointV1", _STRING_MAP, False)
CPU_V2 = _cpu_type("state.CPUManagerCheckpointV2", _CPU_ENTRIES, False)
CPU_V3 = _cpu_type("state.CPUManagerCheckpointV3", _CPU_ENTRIES, True)
CPU_DATA = _cpu_type("state.CPUManagerCheckpointData", _CPU_ENTRIES, True, with_checksum=False)

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


LEGACY_MEMORY = "state.MemoryManagerCheckpoint"
MEMORY_V1 = _memory_type(False)
MEMORY_V2 = _memory_type(True)
MEMORY_DATA = struct("state.MemoryManagerCheckpointData", *(f for f in MEMORY_V2.fields if f.name != "Checksum"))

# ------------------------------------------------------------------------------- values


@dataclass(frozen=True)
class CheckpointError:
    """Why the kubelet cannot restore this checkpoint (it then refuses to start), and, when
    the file says more than the rule's generic fix can, how to fix it."""

    path: Path
    message: str
    remediation: str | None = None


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
    # `podEntries` the file holds but the version it is restored as has no field for: the
    # kubelet reads past them (pod uid -> CPUs; empty when they do not even parse)
    dropped_pods: dict[str, frozenset[int]] = field(default_factory=dict)
    # a V1 file restored by a kubelet before 1.37: its entries, keyed by container id, which the
    # kubelet maps to pod and container through the container runtime at start-up
    container_ids: dict[str, frozenset[int]] = field(default_factory=dict)


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
    dropped_pods: dict[str, tuple[MemoryBlock, ...]] = field(default_factory=dict)   # as CPUCheckpoint's
    assignments: dict[int, int] = field(default_factory=dict)   # NUMA node -> numberOfAssignments


# ------------------------------------------------------------------------------- CPU


V4_FROM: Version = (1, 37)        # the first kubelet that writes V4 and no longer reads V1

# What a V1 file costs on a kubelet that no longer reads it, when it holds no assignment:
# nothing to drain for (policy none, or no exclusive CPUs left).
_V1_WITHOUT_ENTRIES_FIX = ("This V1 file records no exclusive CPUs: stop the kubelet, delete "
                           "/var/lib/kubelet/cpu_manager_state and start it again (it writes a new "
                           "file); no drain is needed. Do it before the kubelet is upgraded to 1.37.")


def read_cpu_checkpoint(data: Any, version: Version = CURRENT) -> CPUCheckpoint:
    """The CPU Manager state a kubelet of minor `version` restores from `data`, or why it
    cannot. 1.37: V4, else V3, else V2 (`loadAndMigrateCheckpointV4`); before 1.37: V3, else
    V2, else V1 migrated. The error of the last version tried is the kubelet's error."""
    if not isinstance(data, dict):
        return _cpu_error((), _decode_error(data, CPU_V3.renamed(LEGACY_CPU)))
    loaders = [_cpu_v3, _cpu_v2]
    if version >= V4_FROM:
        v4 = _cpu_v4(data)
        if v4 is not None:
            return v4
    else:
        loaders.append(_cpu_v1)
    for load in loaders:
        found = load(data)
        if isinstance(found, CPUCheckpoint):      # loaded (a cpuset that does not parse is final)
            return found
    failed = CPUCheckpoint("unknown", "", frozenset(), error=found)
    return _why_not_v1(data, failed) if version >= V4_FROM else failed


def _cpu_v4(data: dict) -> CPUCheckpoint | None:
    """V4, or None when the file is not one (no `data`, `dataChecksum` 0: try V3)."""
    inner, error = _read_wrapped(data, CPU_V3.renamed(LEGACY_CPU), CPU_DATA, "cpu manager", "v4")
    if error is not None:
        return CPUCheckpoint("unknown", "", frozenset(), error=error)
    return None if inner is None else _cpu_values("v4", inner, ("data",))


def _read_wrapped(data: dict, top: GoType, inner_type: GoType, manager: str,
                  version: str) -> tuple[dict | None, CheckpointError | None]:
    """A 1.37 checkpoint whose content is the JSON string `data`, checked by `dataChecksum`
    (CPU V4, memory V3): `UnmarshalCheckpoint` reads the file, then `data`; `VerifyChecksum`
    compares FNV-32a of the string. (inner values, None); (None, error) when it fails and
    `data` is not empty or `dataChecksum` not 0 (the kubelet does not fall back then);
    (None, None) when the file is not of this version."""
    raw, raw_error = _field(data, "data", STRING, top.name)
    stored, stored_error = _field(data, "dataChecksum", CHECKSUM, top.name)
    where: Path = ("data",)
    message = raw_error or stored_error or _decode_error(data, top)
    if message is not None:
        message, where = f"failed to deserialize {manager} checkpoint: {message}", ()
    else:
        inner, message = _go_json(raw)
        if message is not None:
            message = f"failed to deserialize {manager} checkpoint data: {message}"
        elif stored != fnv32a(spew(raw, STRING)):
            message, where = (f"checkpoint is corrupted: dataChecksum {stored} does not match the data "
                              f"(expected {fnv32a(spew(raw, STRING))})"), ("dataChecksum",)
        else:
            try:
                return decode(inner, inner_type), None
            except GoDecodeError as exc:
                message = f"failed to deserialize {manager} checkpoint data: {exc}"
    if raw == "" and stored == 0:
        return None, None
    return None, CheckpointError(where, f"could not load {version} checkpoint: {message}")


# The loaders of one version each: the restored values (a cpuset that does not parse is an
# error there, and final), or the CheckpointError that makes the kubelet try an older version.

def _cpu_v3(data: dict) -> CPUCheckpoint | CheckpointError:
    try:
        v3 = decode(data, CPU_V3)
    except GoDecodeError as exc:
        return CheckpointError((), str(exc))
    return _verified("v3", v3, CPU_V3, zero_ok=False) or _cpu_corrupt(v3, CPU_V3)


def _cpu_v2(data: dict) -> CPUCheckpoint | CheckpointError:
    try:
        v2 = decode(data, CPU_V2)
    except GoDecodeError as exc:
        return CheckpointError(("entries",), str(exc))
    found = _verified("v2", v2, CPU_V2, zero_ok=True)
    if found is None:
        return _cpu_corrupt(v2, CPU_V2)
    return replace(found, dropped_pods=_unread_pod_entries(data))


def _cpu_v1(data: dict) -> CPUCheckpoint | CheckpointError:
    """A V1 file as a kubelet before 1.37 restores it: `migrateV1CheckpointToV2Checkpoint`
    turns its container ids into pods and containers through the runtime, which only the
    node knows; the entries are kept by container id."""
    try:
        v1 = decode(data, CPU_V1)
    except GoDecodeError as exc:
        return CheckpointError(("entries",), str(exc))
    stored = v1["Checksum"]
    if stored != 0 and stored != checksum(v1, CPU_V1.renamed(LEGACY_CPU)):
        return _cpu_corrupt(v1, CPU_V1)
    restored = _cpu_values("v1", {**v1, "Entries": {}}, ())
    if restored.error is not None:
        return restored
    by_id: dict[str, frozenset[int]] = {}
    for container_id, text in sorted((v1["Entries"] or {}).items()):
        try:
            by_id[container_id] = parse_cpuset(text)
        except CPUSetError as exc:
            return _cpu_error(("entries", container_id), f'could not parse cpuset "{text}" for container id '
                                                         f'"{container_id}": {exc}', "v1", v1["PolicyName"])
    return replace(restored, container_ids=by_id, dropped_pods=_unread_pod_entries(data))


def _verified(version: str, value: dict, t: GoType, *, zero_ok: bool) -> CPUCheckpoint | None:
    """The values, when `VerifyChecksum` accepts the stored checksum: under the legacy name or
    the version's own, or 0 where the version accepts an empty checksum (V1, V2)."""
    stored = value["Checksum"]
    if (zero_ok and stored == 0) or stored in (checksum(value, t.renamed(LEGACY_CPU)), checksum(value, t)):
        return _cpu_values(version, value, ())
    return None


def _cpu_corrupt(value: dict, t: GoType) -> CheckpointError:
    return CheckpointError(("checksum",), f"checkpoint is corrupted: checksum {value['Checksum']} does not match "
                                          f"the content (expected {checksum(value, t.renamed(LEGACY_CPU))})")


def _why_not_v1(data: dict, failed: CPUCheckpoint) -> CPUCheckpoint:
    """A 1.37 kubelet's error for a V1 file, with what it is: V1 reads only before 1.37."""
    try:
        v1 = decode(data, CPU_V1)
    except GoDecodeError:
        return failed
    stored = v1["Checksum"]
    if v1["Entries"]:
        what = "a V1 checkpoint (entries keyed by container id"
    elif stored != 0 and stored == checksum(v1, CPU_V1.renamed(LEGACY_CPU)):
        what = "the checksum of a V1 checkpoint without entries (the V1 layout"
    else:
        return failed
    error = failed.error
    fix = None if v1["Entries"] else _V1_WITHOUT_ENTRIES_FIX
    return replace(failed, error=CheckpointError(error.path, f"{error.message}: {what}, written by a kubelet "
                                                             "older than 1.18); the 1.37 kubelet reads V2 and "
                                                             "later only, 1.36 and earlier migrate V1", fix))


def _unread_pod_entries(data: dict) -> dict[str, frozenset[int]]:
    """The file's `podEntries`, which a V2 (or V1) reading passes over."""
    raw = data.get("podEntries")
    if not isinstance(raw, dict):
        return {}
    try:
        return {uid: frozenset(e["CPUSet"]["elems"] or {}) for uid, e in decode(raw, _CPU_POD_ENTRIES).items()}
    except GoDecodeError:
        return {str(uid): frozenset() for uid in raw}


def _field(data: dict, key: str, t: GoType, owner: str) -> tuple[Any, str | None]:
    """One top-level field as encoding/json sets it: (value, None), or (zero value, the error)
    when the JSON does not fit its type (Unmarshal goes on with the other fields)."""
    try:
        return decode(data, struct(owner, GoField("Value", key, t)))["Value"], None
    except GoDecodeError as exc:
        return zero(t), str(exc)


def _decode_error(data: Any, t: GoType) -> str | None:
    try:
        decode(data, t)
    except GoDecodeError as exc:
        return str(exc)
    return None


def _go_json(raw: str) -> tuple[Any, str | None]:
    """json.Unmarshal of a string: (value, None) or (None, the error). Go's wording for the
    empty string, the one a missing `data` gives; Python's for other syntax errors."""
    if raw.strip() == "":
        return None, "unexpected end of JSON input"
    try:
        return json.loads(raw), None
    except ValueError as exc:
        return None, str(exc)


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


def read_memory_checkpoint(data: Any, version: Version = CURRENT) -> MemoryCheckpoint:
    """The Memory Manager state a kubelet of minor `version` restores: from 1.37 V3 (`data`),
    else V2, else V1 (`loadAndMigrateCheckpointV3`, `loadAndMigrateCheckpointV2`)."""
    if not isinstance(data, dict):
        return _memory_error((), _decode_error(data, MEMORY_V2))
    if version >= V4_FROM:
        inner, error = _read_wrapped(data, MEMORY_V2, MEMORY_DATA, "memory manager", "v3")
        if error is not None:
            return MemoryCheckpoint("unknown", "", error=error)
        if inner is not None:
            return _memory_values("v3", inner, ("data",))
    try:
        v2 = decode(data, MEMORY_V2)
    except GoDecodeError as exc:
        return _memory_error((), str(exc))
    stored = v2["Checksum"]
    if stored in (checksum(v2, MEMORY_V2), checksum(v2, MEMORY_V2.renamed("state.MemoryManagerCheckpointV2"))):
        return _memory_values("v2", v2, ())
    # V1 accepts checksum 0 and reads past `podEntries` (V2 accepts no empty checksum)
    v1 = decode(data, MEMORY_V1)
    if stored in (0, checksum(v1, MEMORY_V1), checksum(v1, MEMORY_V1.renamed("state.MemoryManagerCheckpointV1"))):
        return replace(_memory_values("v1", {**v2, "PodEntries": {}}, ()),
                       dropped_pods={pod: _blocks(e["MemoryBlocks"]) for pod, e in (v2["PodEntries"] or {}).items()})
    return _memory_error(("checksum",), f"checkpoint is corrupted: checksum {stored} does not match the content "
                                        f"(expected {checksum(v2, MEMORY_V2)})")


def _blocks(raw: list | None) -> tuple[MemoryBlock, ...]:
    return tuple(MemoryBlock(tuple(b["NUMAAffinity"] or ()), b["Type"], b["Size"]) for b in raw or ())


def _memory_values(version: str, v: dict, root: Path) -> MemoryCheckpoint:
    machine: dict[int, dict[str, MemoryTable]] = {}
    cells: dict[int, tuple[int, ...]] = {}
    assignments: dict[int, int] = {}
    for numa, state in (v["MachineState"] or {}).items():
        if state is None:
            continue
        machine[numa] = {res: MemoryTable(t["TotalMemSize"], t["SystemReserved"], t["Allocatable"], t["Reserved"], t["Free"])
                         for res, t in (state["MemoryMap"] or {}).items() if t is not None}
        cells[numa] = tuple(state["Cells"] or ())
        assignments[numa] = state["NumberOfAssignments"]
    containers = {pod: {c: _blocks(b) for c, b in (by_c or {}).items()} for pod, by_c in (v["Entries"] or {}).items()}
    pods = {pod: _blocks(entry["MemoryBlocks"]) for pod, entry in (v.get("PodEntries") or {}).items()}
    return MemoryCheckpoint(version, v["PolicyName"], machine, cells, containers, pods, root, assignments=assignments)


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
