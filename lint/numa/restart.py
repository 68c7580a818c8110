"""What the kubelet's static policies do with a restored checkpoint when the kubelet starts.

At start-up the CPU Manager's `static` policy and the Memory Manager's `Static` policy check
the state restored from `cpu_manager_state` and `memory_manager_state` against the machine and
the configuration (`Start` -> `validateState`); on an error the kubelet logs "Static policy
invalid state, please drain node and remove policy state file" and does not start. Reimplemented
from kubernetes/kubernetes as it stands for 1.37 (the KEP-5526 version, pod-level entries from
PR #134768, read in the stored copy of `pkg/kubelet/cm/cpumanager/policy_static.go` that
counts `GetPodCPUAssignments` behind the PodLevelResourceManagers gate, and of
`pkg/kubelet/cm/memorymanager/policy_static.go` that reads `GetPodMemoryBlocks`):

* cpumanager `validateState`: an empty `defaultCpuSet` is a fresh node (the shared pool becomes
  every CPU) unless assignments exist ("default cpuset cannot be empty"); the reserved CPUs must
  all be in `defaultCpuSet`, or with `strict-cpu-reservation` none of them; no container's
  assignment may overlap `defaultCpuSet`; and `defaultCpuSet` with every container assignment
  (and, with the PodLevelResourceManagers gate on, every pod-level assignment) must be exactly
  the machine's CPUs (minus the reserved ones with `strict-cpu-reservation`).
* memorymanager `validateState`: an empty machine state is a fresh node unless assignments exist;
  otherwise the expected state is rebuilt, `getDefaultMachineState` (per NUMA node and memory
  resource: total from the machine, systemReserved from `reservedMemory`, allocatable = total -
  systemReserved, minus every hugepage size's total for regular memory) plus each assignment's
  blocks (`updateExpectedMachineState`: a pod's pod-level blocks instead of its containers' when
  the gate is on and it has some; the blocks fill free memory NUMA node by NUMA node, count one
  assignment on each NUMA node they name and make its cells the block's NUMA nodes), and must
  equal the checkpoint's (`areMachineStatesEqual`: the same NUMA nodes, numberOfAssignments,
  cells, resources, total, systemReserved and allocatable, and free and reserved summed over
  each NUMA node's cells), else "[memorymanager] the expected machine state is different from
  the real one".

The kubelet reports the first refusal (Go map order decides which assignment); these functions
report every one, in the kubelet's order, each in its words (`Refusal.message`) with what
numaguard adds (`Refusal.detail`: which CPUs or bytes, who holds them, the usual cause).
Memory refusals say where the difference comes from (`Refusal.kind`): "machine" (the machine
or the configuration disagree with the recorded totals, NUMA nodes, resources or
systemReserved), "table" (the checkpoint's own tables and blocks do not add up) or "assignment"
(a block names a NUMA node or resource the state lacks).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from decimal import Decimal

from numaguard.lint.k8s.checkpoints import CPUCheckpoint, MemoryBlock, MemoryCheckpoint
from numaguard.lint.k8s.cpuset import format_cpuset
from numaguard.lint.k8s.quantity import format_bytes
from numaguard.lint.model import Path

MACHINE, TABLE, ASSIGNMENT = "machine", "table", "assignment"
_MEMORY = "memory"
_HUGEPAGES = "hugepages-"
EXPECTED_STATE_DIFFERS = "[memorymanager] the expected machine state is different from the real one"


@dataclass(frozen=True)
class Refusal:
    """One reason a static policy refuses the restored state at start: the checkpoint field at
    fault (relative to its field root), the kubelet's error, numaguard's account of it."""

    path: Path
    message: str
    detail: str = ""
    kind: str = ""


# ------------------------------------------------------------------------------- CPU

def cpu_refusals(cp: CPUCheckpoint, *, reserved: frozenset[int] | None, online: frozenset[int] | None,
                 strict: bool = False, pod_level: bool = False) -> list[Refusal]:
    """cpumanager validateState on `cp`. `reserved`: the policy's reserved CPUs (None:
    unknown, that check is skipped); `online`: the machine's CPUs (None: unknown, the
    coverage check is skipped); `strict`: the strict-cpu-reservation option; `pod_level`: the
    PodLevelResourceManagers gate (pod-level assignments count only with it)."""
    default = cp.default_cpus
    entries = _entries(cp)
    if not default:
        if cp.containers or cp.container_ids:       # len(tmpAssignments) != 0
            held = frozenset().union(*(cpus for *_, cpus in entries))
            return [Refusal(("defaultCpuSet",), "default cpuset cannot be empty",
                            f"defaultCpuSet is empty while {len(entries)} container entries hold CPUs "
                            f"{format_cpuset(held) or 'none'}: the file was edited or truncated")]
        return []                                    # a fresh state: the kubelet fills it in
    out: list[Refusal] = []
    if reserved is not None:
        out += _reserved_refusals(cp, entries, reserved, strict)
    for label, path, cpus in entries:
        if cpus & default and not label.startswith("container id "):
            pod, container = path[-2], path[-1]
            out.append(Refusal(path, f'pod: {pod}, container: {container} cpuset: "{format_cpuset(cpus)}" overlaps '
                                     f'with default cpuset "{format_cpuset(default)}"',
                               f"{label} holds CPUs {format_cpuset(cpus & default)} as exclusive CPUs while they are "
                               "also in the shared pool"))
    if online is not None:
        out += _coverage_refusal(cp, entries, online, reserved or frozenset(), strict, pod_level)
    return out


def _entries(cp: CPUCheckpoint) -> list[tuple[str, Path, frozenset[int]]]:
    """(label, path, CPUs) of every container assignment (a V1 file's by container id)."""
    out = [(f"container {name} of pod {pod}", ("entries", pod, name), cpus)
           for pod, by_name in sorted(cp.containers.items()) for name, cpus in sorted(by_name.items())]
    out += [(f"container id {cid}", ("entries", cid), cpus) for cid, cpus in sorted(cp.container_ids.items())]
    return out


def _holders(cp: CPUCheckpoint, entries, cpus: frozenset[int], pod_level: bool = True) -> str:
    who = [f"{label} ({format_cpuset(held & cpus)})" for label, _, held in entries if held & cpus]
    if pod_level:
        who += [f"pod {uid} at pod level ({format_cpuset(held & cpus)})"
                for uid, held in sorted(cp.pods.items()) if held & cpus]
    return ", ".join(who)


def _reserved_refusals(cp: CPUCheckpoint, entries, reserved: frozenset[int], strict: bool) -> list[Refusal]:
    default = cp.default_cpus
    if strict:
        inside = reserved & default
        if not inside:
            return []
        return [Refusal(("defaultCpuSet",), f'some of strictly reserved cpus: "{format_cpuset(inside)}" are present '
                                            f'in defaultCpuSet: "{format_cpuset(default)}"',
                        f"with strict-cpu-reservation the reserved CPUs stay out of the shared pool, but "
                        f"{format_cpuset(inside)} are in it: the option was turned on, or the reservation changed, "
                        "without a drain")]
    missing = reserved - default
    if not missing:
        return []
    held = _holders(cp, entries, missing)
    loose = missing - frozenset().union(*(cpus for *_, cpus in entries), *cp.pods.values())
    why = "; ".join(part for part in (held and f"held as exclusive CPUs by {held}",
                                      loose and f"{format_cpuset(loose)} in no entry at all") if part)
    return [Refusal(("defaultCpuSet",), f'not all reserved cpus: "{format_cpuset(reserved)}" are present in '
                                        f'defaultCpuSet: "{format_cpuset(default)}"',
                    f"reserved CPUs {format_cpuset(missing)} are not in the shared pool ({why}); the reservation "
                    "(reservedSystemCPUs, or kubeReserved/systemReserved cpu) changed without a drain, or the file "
                    "was edited")]


def _coverage_refusal(cp: CPUCheckpoint, entries, online: frozenset[int], reserved: frozenset[int], strict: bool,
                      pod_level: bool) -> list[Refusal]:
    """Check 3: the state accounts for exactly the machine's CPUs."""
    all_cpus = online - reserved if strict else online
    known = cp.default_cpus.union(*(cpus for *_, cpus in entries))
    if pod_level:
        known = known.union(*cp.pods.values())
    if known == all_cpus:
        return []
    parts = []
    extra, missing = known - all_cpus, all_cpus - known
    if extra:
        where = "reserved CPUs, which strict-cpu-reservation keeps out of the state" if strict and extra <= reserved \
            else "not online on the node (offlined, or the file comes from another machine)"
        parts.append(f"CPUs {format_cpuset(extra)} are in the checkpoint but {where}"
                     + (f"; held by {_holders(cp, entries, extra, pod_level)}" if _holders(cp, entries, extra, pod_level)
                        else ""))
    if missing:
        text = f"CPUs {format_cpuset(missing)} are online on the node but in neither defaultCpuSet nor any entry"
        unread = frozenset().union(*cp.pods.values()) & missing if not pod_level else frozenset()
        if unread:
            text += (f" (pod-level entries hold {format_cpuset(unread)}, but a kubelet with the "
                     "PodLevelResourceManagers gate off does not read podEntries)")
        else:
            text += " (onlined since the file was written, or the file was edited)"
        parts.append(text)
    return [Refusal(("defaultCpuSet",), f'current set of available CPUs "{format_cpuset(all_cpus)}" doesn\'t match '
                                        f'with CPUs in state "{format_cpuset(known)}"', "; ".join(parts))]


# ------------------------------------------------------------------------------- memory

@dataclass
class _Table:
    total: int
    system_reserved: int
    allocatable: int
    reserved: int = 0
    free: int = 0


@dataclass
class _Node:
    tables: dict[str, _Table]
    cells: list[int]
    assignments: int = 0


@dataclass(frozen=True)
class MemoryMachine:
    """The machine as the Memory Manager's `getDefaultMachineState` reads it (cadvisor's
    machine info): per NUMA node, the bytes of each memory resource: `memory` (MemTotal) and
    every hugepage size the node lists (`hugepages-1Gi`: pages x size; 0 for a size with no
    pages, which still gets a table)."""

    totals: dict[int, dict[str, int]] = field(default_factory=dict)


def memory_refusals(cp: MemoryCheckpoint, *, machine: MemoryMachine | None,
                    reserved: dict[int, dict[str, int]] | None, pod_level: bool = False) -> list[Refusal]:
    """memorymanager validateState on `cp`. `machine`: None compares the checkpoint's own
    totals, NUMA nodes and resources (a lint without the node itself); `reserved`: the
    configuration's reservedMemory by NUMA node and resource (None: the checkpoint's own
    systemReserved, the configuration being unknown); `pod_level`: the PodLevelResourceManagers gate."""
    if not cp.machine:
        if cp.containers:
            return [Refusal(("machineState",), "[memorymanager] machine state can not be empty when it has memory "
                                               "assignments", f"{len(cp.containers)} pods hold memory blocks but "
                                                              "machineState is empty: the file was edited", ASSIGNMENT)]
        return []
    totals = machine.totals if machine is not None else {
        numa: {res: t.total for res, t in tables.items()} for numa, tables in cp.machine.items()}
    if reserved is None:
        reserved = {numa: {res: t.system_reserved for res, t in tables.items()} for numa, tables in cp.machine.items()}
    expected = _default_state(totals, reserved)
    out = _apply_assignments(cp, expected, pod_level)
    return out + _compare(cp, expected, machine is not None)


def _default_state(totals: dict[int, dict[str, int]], reserved: dict[int, dict[str, int]]) -> dict[int, _Node]:
    """getDefaultMachineState: allocatable = total - systemReserved, regular memory also minus
    the node's hugepages."""
    state = {}
    for numa, by_resource in totals.items():
        hugepages = sum(total for res, total in by_resource.items() if res.startswith(_HUGEPAGES))
        tables = {}
        for res, total in by_resource.items():
            system = reserved.get(numa, {}).get(res, 0)
            allocatable = total - system - (hugepages if res == _MEMORY else 0)
            tables[res] = _Table(total, system, allocatable, 0, allocatable)
        state[numa] = _Node(tables, [numa])
    return state


def _apply_assignments(cp: MemoryCheckpoint, expected: dict[int, _Node], pod_level: bool) -> list[Refusal]:
    """updateExpectedMachineState for every pod with container entries (a pod-level entry
    alone is not counted, as in the kubelet); the blocks that name a NUMA node or a resource
    the state lacks are refusals."""
    out = []
    for pod, by_container in sorted(cp.containers.items()):
        if pod_level and cp.pods.get(pod):
            groups = [(("podEntries", pod), "", cp.pods[pod])]
        else:
            groups = [(("entries", pod, name), name, blocks) for name, blocks in sorted(by_container.items())]
        for path, container, blocks in groups:
            for block in blocks:
                problem = _fill(expected, block)
                if problem:
                    out.append(Refusal(path, f"[memorymanager] (pod: {pod}, container: {container}) the memory "
                                             f"assignment uses {problem} that does not exist",
                                       f"a {block.resource} block of {_bytes(block.size)} on NUMA "
                                       f"{_numa(block.numa_nodes)}: the machine state has no such "
                                       + ("NUMA node" if problem == "the NUMA" else "resource there"), ASSIGNMENT))
    return out


def _fill(expected: dict[int, _Node], block: MemoryBlock) -> str | None:
    """One block into the expected state, as updateExpectedMachineState does; what is missing, if anything."""
    left = block.size
    for numa in block.numa_nodes:
        node = expected.get(numa)
        if node is None:
            return "the NUMA"
        node.assignments += 1
        node.cells = list(block.numa_nodes)
        table = node.tables.get(block.resource)
        if table is None:
            return "memory resource"
        if left == 0 or table.free <= 0:
            continue
        taken = min(left, table.free)
        table.reserved += taken
        table.free -= taken
        left -= taken
    return None


def _compare(cp: MemoryCheckpoint, expected: dict[int, _Node], with_machine: bool) -> list[Refusal]:
    """areMachineStatesEqual, every difference."""
    out = []
    source = "this machine" if with_machine else "the checkpoint's totals"
    for numa in sorted(set(cp.machine) - set(expected)):
        out.append(_differs(("machineState", str(numa)), f"NUMA node {numa} is in the checkpoint but not on {source}",
                            MACHINE))
    for numa in sorted(set(expected) - set(cp.machine)):
        out.append(_differs(("machineState",), f"NUMA node {numa} is on this machine but not in the checkpoint "
                                               "(a NUMA node onlined, or the file comes from another machine)", MACHINE))
    summed: set[tuple[tuple[int, ...], str]] = set()
    for numa in sorted(set(cp.machine) & set(expected)):
        out += _compare_node(cp, expected, numa, summed, source)
    return out


def _compare_node(cp: MemoryCheckpoint, expected: dict[int, _Node], numa: int, summed: set, source: str) -> list[Refusal]:
    mine, want = cp.machine[numa], expected[numa]
    at: Path = ("machineState", str(numa))
    out = []
    recorded = cp.assignments.get(numa, 0)
    if recorded != want.assignments:
        out.append(_differs(at + ("numberOfAssignments",), f"NUMA {numa}: numberOfAssignments is {recorded} in the "
                            f"checkpoint, but its entries' memory blocks make {want.assignments}", TABLE))
    cells = sorted(cp.cells.get(numa, ()))
    if cells != sorted(want.cells):
        out.append(_differs(at + ("cells",), f"NUMA {numa}: cells are {cells} in the checkpoint, but its entries' "
                            f"memory blocks make {sorted(want.cells)}", TABLE))
    for res in sorted(set(want.tables) - set(mine)):
        out.append(_differs(at + ("memoryMap",), f"NUMA {numa}: {source} has {res} "
                            f"({_bytes(want.tables[res].total)}), which the checkpoint has no table for", MACHINE))
    for res in sorted(set(mine) - set(want.tables)):
        out.append(_differs(at + ("memoryMap", res), f"NUMA {numa}: the checkpoint has a {res} table "
                            f"({_bytes(mine[res].total)}), which {source} lacks", MACHINE))
    # hugepages on the node are taken from regular memory's allocatable: a changed hugepage
    # total explains a changed allocatable and free of regular memory
    hugepages_changed = any(mine[r].total != want.tables[r].total for r in set(mine) & set(want.tables)
                            if r.startswith(_HUGEPAGES))
    for res in sorted(set(mine) & set(want.tables)):
        out += _compare_table(cp, expected, numa, res, summed, source, hugepages_changed and res == _MEMORY)
    return out


def _compare_table(cp: MemoryCheckpoint, expected: dict[int, _Node], numa: int, res: str, summed: set,
                   source: str, hugepages_changed: bool) -> list[Refusal]:
    """One table: the machine's and the configuration's differences (total, systemReserved)
    as such; allocatable and free only when those agree, since they follow from them."""
    mine, want = cp.machine[numa][res], expected[numa].tables[res]
    at: Path = ("machineState", str(numa), "memoryMap", res)
    out = []
    if mine.total != want.total:
        cause = ("MemTotal of /sys/devices/system/node/node{n}/meminfo changed: memory added, removed or failed, or "
                 "the kernel reserves another amount" if res == _MEMORY else
                 "nr_hugepages of the node changed").format(n=numa)
        out.append(_differs(at + ("total",), f"NUMA {numa} {res} total is {_bytes(mine.total)} in the checkpoint but "
                            f"{_bytes(want.total)} on {source} ({_delta(want.total - mine.total)}): {cause}", MACHINE))
    if mine.system_reserved != want.system_reserved:
        out.append(_differs(at + ("systemReserved",), f"NUMA {numa} {res} systemReserved is "
                            f"{_bytes(mine.system_reserved)} in the checkpoint but {_bytes(want.system_reserved)} "
                            f"in reservedMemory ({_delta(want.system_reserved - mine.system_reserved)}): the "
                            "reservation changed without a drain", MACHINE))
    derived = mine.total != want.total or mine.system_reserved != want.system_reserved or hugepages_changed
    if not derived and mine.allocatable != want.allocatable:
        out.append(_differs(at + ("allocatable",), f"NUMA {numa} {res} allocatable is {_bytes(mine.allocatable)} in "
                            f"the checkpoint, but its total and systemReserved"
                            + (" and the node's hugepages" if res == _MEMORY else "")
                            + f" make {_bytes(want.allocatable)} ({_delta(want.allocatable - mine.allocatable)})", TABLE))
    # free and reserved are compared summed over the checkpoint's cells of the node (a block
    # spanning NUMA nodes may split differently); no cells, nothing summed
    group = tuple(sorted(cp.cells.get(numa, ())))
    if (group, res) in summed:
        return out
    summed.add((group, res))
    for name in ("free", "reserved"):
        have = sum(getattr(cp.machine[n][res], name) for n in group if res in cp.machine.get(n, {}))
        should = sum(getattr(expected[n].tables[res], name) for n in group
                     if n in expected and res in expected[n].tables)
        if have != should and not (derived and name == "free"):
            out.append(_differs(at + (name,), f"NUMA {_numa(group)} {res} {name} is {_bytes(have)} in the checkpoint, "
                                f"but its total, reservation and the entries' memory blocks make {_bytes(should)} "
                                f"({_delta(should - have)})", TABLE))
    return out


def _differs(path: Path, detail: str, kind: str) -> Refusal:
    return Refusal(path, EXPECTED_STATE_DIFFERS, detail, kind)


def _bytes(n: int) -> str:
    return f"{format_bytes(Decimal(n))} ({n} bytes)" if n >= 1024 else f"{n} bytes"


def _delta(n: int) -> str:
    return ("+" if n > 0 else "-") + format_bytes(Decimal(abs(n)))


def _numa(nodes) -> str:
    return ",".join(map(str, nodes))
