"""The kubelet Memory Manager's `Static` policy: machine state, topology hints, allocation.

Behaviour copied from `pkg/kubelet/cm/memorymanager/policy_static.go` (NewPolicyStatic,
getDefaultMachineState, GetTopologyHints, GetPodTopologyHints, getPodRequestedResources,
calculateHints, regenerateHints, Allocate, getDefaultHint, extendTopologyManagerHint,
findBestHint, isAffinityViolatingNUMAAllocations, updateMachineState, the init-container
memory reuse bookkeeping, RemoveContainer/releaseMemory) and `state/state_mem.go`.

Inputs are plain data: a pod is its UID plus its raw spec dict (`spec["containers"]`,
`spec["initContainers"]`, each with `resources.requests/limits`), quantities are parsed with
`numaguard.lint.k8s.quantity.parse_quantity`. Sizes are bytes (ints).

Where this module parts from the kubelet (documented, deliberate):

* A request for a memory resource some NUMA node does not have (e.g. `hugepages-2Mi` on a
  machine without 2Mi pages) counts as 0 bytes on that node; the kubelet dereferences a nil
  table there.
* A pod with pod-level `spec.resources` is skipped (no hints, no allocation): that is the
  kubelet's path with the PodLevelResourceManagers gate off; the pod-level (KEP-5526)
  allocation is not modelled here.
* `spec.resources` aside, requests missing from a container default to its limits, as the API
  server's defaulting would have done before the kubelet saw the pod.
"""
from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from decimal import Decimal

from numaguard.lint.numa.bitmask import is_narrower_than, iterate_bit_masks, mask_bits, mask_of
from numaguard.lint.numa.merge import TopologyHint
from numaguard.lint.k8s.quantity import format_bytes, parse_quantity

POLICY_STATIC = "Static"
RESOURCE_MEMORY = "memory"
HUGEPAGES_PREFIX = "hugepages-"
UNEXPECTED_ADMISSION_ERROR = "UnexpectedAdmissionError"


class MemoryManagerError(Exception):
    """An error of the Static policy, carrying the kubelet's message text.

    `message` is the policy's error (e.g. "[memorymanager] failed to find NUMA nodes to extend
    the current topology hint"); `reason` / `admission_message` are what the pod status shows
    when Allocate fails at admission (`cm/admission/errors.go` unexpectedAdmissionError).
    """

    reason = UNEXPECTED_ADMISSION_ERROR

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message

    @property
    def admission_message(self) -> str:
        return f"Allocate failed due to {self.message}, which is unexpected"


# --- state (state/state.go) -----------------------------------------------------------------

@dataclass
class MemoryTable:
    """One memory resource on one NUMA node (state.MemoryTable), in bytes."""

    total: int
    system_reserved: int
    allocatable: int
    reserved: int
    free: int


@dataclass
class NUMANodeState:
    """One NUMA node: a table per memory resource, the group it belongs to and how many
    (container, resource) assignments use it (state.NUMANodeState)."""

    memory: dict[str, MemoryTable]
    cells: list[int]
    number_of_assignments: int = 0


MachineState = dict[int, NUMANodeState]


@dataclass(frozen=True)
class Block:
    """A container's share of one memory resource (state.Block): NUMA nodes, type, bytes."""

    numa_affinity: tuple[int, ...]
    type: str
    size: int


def hugepage_resource_name(page_bytes: int) -> str:
    """`hugepages-<size>` with the size in canonical binary-SI form (2Mi, 1Gi)."""
    return HUGEPAGES_PREFIX + format_bytes(Decimal(page_bytes))


def is_memory_resource(name: str) -> bool:
    """Resources the memory manager handles: `memory` and every `hugepages-*`."""
    return name == RESOURCE_MEMORY or name.startswith(HUGEPAGES_PREFIX)


def reserved_memory_from_config(entries: Sequence[Mapping] | None) -> dict[int, dict[str, int]]:
    """KubeletConfiguration `reservedMemory` ([{numaNode, limits: {memory: 1Gi}}]) -> bytes."""
    reserved: dict[int, dict[str, int]] = {}
    for entry in entries or ():
        node = reserved.setdefault(int(entry["numaNode"]), {})
        for name, qty in (entry.get("limits") or {}).items():
            node[name] = node.get(name, 0) + int(parse_quantity(qty))
    return reserved


def check_system_reserved(reserved_memory: Mapping[int, Mapping[str, int]]) -> None:
    """NewPolicyStatic: the policy refuses to start unless some `memory` is reserved."""
    total = sum(node.get(RESOURCE_MEMORY, 0) for node in reserved_memory.values())
    if total <= 0:
        raise MemoryManagerError("[memorymanager] you should specify the system reserved memory")


def default_machine_state(topology,
                          reserved_memory: Mapping[int, Mapping[str, int]]) -> MachineState:
    """getDefaultMachineState from a `numaguard.lint.numa.topology.Topology`.

    Per NUMA node: each hugepage size gets total = pages * size, allocatable = total - reserved;
    regular memory gets allocatable = node memory - reserved - all hugepages on the node
    (`NUMANode.memory` is the node's MemTotal as cadvisor reports it, hugepages included).
    """
    state: MachineState = {}
    for node in topology.numa_nodes:
        reserved = reserved_memory.get(node.id, {})
        tables: dict[str, MemoryTable] = {}
        hugepages_total = 0
        for page_bytes, pages in node.hugepages.items():
            name = hugepage_resource_name(page_bytes)
            total = pages * page_bytes
            sys_reserved = reserved.get(name, 0)
            allocatable = total - sys_reserved
            tables[name] = MemoryTable(total, sys_reserved, allocatable, 0, allocatable)
            hugepages_total += total
        sys_reserved = reserved.get(RESOURCE_MEMORY, 0)
        allocatable = node.memory - sys_reserved - hugepages_total
        tables[RESOURCE_MEMORY] = MemoryTable(node.memory, sys_reserved, allocatable, 0,
                                              allocatable)
        state[node.id] = NUMANodeState(tables, [node.id], 0)
    return state


# --- pod helpers ----------------------------------------------------------------------------

def _containers(spec: Mapping, key: str) -> list[Mapping]:
    return list(spec.get(key) or [])


def is_restartable_init_container(container: Mapping) -> bool:
    """A sidecar: an init container with `restartPolicy: Always`."""
    return container.get("restartPolicy") == "Always"


def _effective_requests(container: Mapping) -> dict[str, object]:
    resources = container.get("resources") or {}
    merged = dict(resources.get("limits") or {})          # API defaulting: requests <- limits
    merged.update(resources.get("requests") or {})
    return merged


def pod_level_resources_set(spec: Mapping) -> bool:
    """Does the pod use pod-level `spec.resources` (KEP-2837)?"""
    resources = spec.get("resources") or {}
    return bool(resources.get("requests") or resources.get("limits"))


def is_guaranteed(spec: Mapping) -> bool:
    """The pod's QoS class is Guaranteed (`apis/core/v1/helper/qos` GetPodQOS, container level).

    Summed over init and app containers: cpu and memory limits set (non-zero) in every
    container, and total requests equal total limits for cpu and memory.
    """
    requests: dict[str, Decimal] = {}
    limits: dict[str, Decimal] = {}
    guaranteed = True
    for c in _containers(spec, "containers") + _containers(spec, "initContainers"):
        resources = c.get("resources") or {}
        for name, qty in _effective_requests(c).items():
            if name in ("cpu", "memory"):
                value = parse_quantity(qty)
                if value != 0:
                    requests[name] = requests.get(name, Decimal(0)) + value
        found = set()
        for name, qty in (resources.get("limits") or {}).items():
            if name in ("cpu", "memory"):
                value = parse_quantity(qty)
                if value != 0:
                    limits[name] = limits.get(name, Decimal(0)) + value
                    found.add(name)
        if found != {"cpu", "memory"}:
            guaranteed = False
    if not requests and not limits:
        return False
    if guaranteed:
        for name, value in requests.items():
            if limits.get(name) != value:
                return False
    return guaranteed and len(requests) == len(limits)


def container_requests(container: Mapping) -> dict[str, int]:
    """getContainerRequestedResources: bytes per `memory` / `hugepages-*` request."""
    out: dict[str, int] = {}
    for name, qty in _effective_requests(container).items():
        if not is_memory_resource(name):
            continue
        value = parse_quantity(qty)
        if value != value.to_integral_value():
            raise MemoryManagerError("[memorymanager] failed to represent quantity as int64")
        out[name] = int(value)
    return out


def pod_requests(spec: Mapping) -> dict[str, int]:
    """getPodRequestedResources: per resource max(largest init need, apps + sidecars).

    A regular init container needs its own request plus the sidecars started before it;
    sidecars (restartable init containers) accumulate. Only resources some app container
    requests are returned (the kubelet iterates the app containers' resources).
    """
    init_max: dict[str, int] = {}
    sidecars: dict[str, int] = {}
    for c in _containers(spec, "initContainers"):
        for name, qty in container_requests(c).items():
            init_max.setdefault(name, 0)
            if is_restartable_init_container(c):
                sidecars[name] = sidecars.get(name, 0) + qty
            elif sidecars.get(name, 0) + qty > init_max[name]:
                init_max[name] = sidecars.get(name, 0) + qty
    apps: dict[str, int] = {}
    for c in _containers(spec, "containers"):
        for name, qty in container_requests(c).items():
            apps[name] = apps.get(name, 0) + qty
    return {name: max(total + sidecars.get(name, 0), init_max.get(name, 0))
            for name, total in apps.items()}


def find_best_hint(hints: Sequence[TopologyHint]) -> TopologyHint:
    """findBestHint: first hint, replaced by a preferred one over a non-preferred one, or by
    a narrower one of the same preference. `TopologyHint(None, False)` for no hints."""
    best = TopologyHint(None, False)
    for h in hints:
        if best.affinity is None:
            best = h
            continue
        if h.preferred and not best.preferred:
            best = h
            continue
        if h.preferred == best.preferred and is_narrower_than(h.affinity, best.affinity):
            best = h
    return best


def _is_subset(hint_bits: Sequence[int], group_bits: Sequence[int]) -> bool:
    # isHintInGroup: every node of the hint is in the group
    return set(hint_bits) <= set(group_bits)


# --- the policy -----------------------------------------------------------------------------

@dataclass
class StaticMemoryPolicy:
    """The Static policy together with its state (machine state + container assignments).

    `init_containers_reusable_memory` is the policy's `initContainersReusableMemory`:
    pod UID -> NUMA mask -> resource -> bytes an earlier init container left for reuse.
    """

    machine_state: MachineState
    assignments: dict[str, dict[str, list[Block]]] = field(default_factory=dict)
    init_containers_reusable_memory: dict[str, dict[int, dict[str, int]]] = field(
        default_factory=dict)

    name = POLICY_STATIC

    @classmethod
    def from_topology(cls, topology,
                      reserved_memory: Mapping[int, Mapping[str, int]]) -> StaticMemoryPolicy:
        """NewPolicyStatic + Start on an empty state: check reserved memory, default state."""
        check_system_reserved(reserved_memory)
        return cls(default_machine_state(topology, reserved_memory))

    def copy(self) -> StaticMemoryPolicy:
        """A deep copy, for what-if simulations."""
        return copy.deepcopy(self)

    # -- state accessors (state_mem.go) --
    def get_memory_blocks(self, pod_uid: str, container_name: str) -> list[Block] | None:
        blocks = self.assignments.get(pod_uid, {}).get(container_name)
        return None if blocks is None else list(blocks)

    def _set_memory_blocks(self, pod_uid: str, container_name: str, blocks: list[Block]) -> None:
        self.assignments.setdefault(pod_uid, {})[container_name] = list(blocks)

    def _delete(self, pod_uid: str, container_name: str) -> None:
        pod = self.assignments.get(pod_uid)
        if pod is None:
            return
        pod.pop(container_name, None)
        if not pod:
            del self.assignments[pod_uid]

    # -- hints --
    def get_topology_hints(self, pod_uid: str, spec: Mapping,
                           container_name: str) -> dict[str, list[TopologyHint]] | None:
        """GetTopologyHints (container scope). None = no preference."""
        if not is_guaranteed(spec) or pod_level_resources_set(spec):
            return None
        try:
            requested = container_requests(_find_container(spec, container_name))
        except (MemoryManagerError, ValueError):
            return None
        blocks = self.get_memory_blocks(pod_uid, container_name)
        if blocks is not None:
            return regenerate_hints(blocks, requested)
        return self.calculate_hints(requested, pod_uid)

    def get_pod_topology_hints(self, pod_uid: str,
                               spec: Mapping) -> dict[str, list[TopologyHint]] | None:
        """GetPodTopologyHints (pod scope): hints for the pod's total memory need."""
        if not is_guaranteed(spec) or pod_level_resources_set(spec):
            return None
        try:
            requested = pod_requests(spec)
        except (MemoryManagerError, ValueError):
            return None
        if not requested:
            return None
        for c in _containers(spec, "initContainers") + _containers(spec, "containers"):
            blocks = self.get_memory_blocks(pod_uid, c.get("name"))
            if blocks is not None:
                return regenerate_hints(blocks, requested)
        return self.calculate_hints(requested, pod_uid)

    def calculate_hints(self, requested: Mapping[str, int],
                        pod_uid: str | None = None) -> dict[str, list[TopologyHint]]:
        """calculateHints: every NUMA mask (IterateBitMasks order) that can hold the request.

        A mask qualifies if its allocatable memory suffices (this also sets the minimal mask
        size, hence "preferred"), it respects the NUMA groups (a node in a multi-node group
        can only be used by exactly that group; a node used by single-node allocations never
        joins a group) and its free memory plus this pod's reusable init-container memory
        suffices. Only qualifying masks create keys, so the result may be `{}`.
        """
        state = self.machine_state
        nodes = sorted(state)
        min_affinity_size = len(nodes)
        # per-mask sums are built incrementally: sum(m) = sum(m without its lowest bit) + that
        # node; IterateBitMasks yields smaller masks first, so the rest is always known.
        resources = list(requested.items())
        reusable = [self.init_containers_reusable_memory.get(pod_uid, {}) if pod_uid else {}
                    for _ in resources]
        per_node = [({n: _table_value(state, n, res, "allocatable") for n in nodes},
                     {n: _table_value(state, n, res, "free") for n in nodes})
                    for res, _ in resources]
        sums = [({0: 0}, {0: 0}) for _ in resources]
        grouped = 0          # nodes that belong to a multi-node group
        busy = 0             # nodes holding assignments
        cells_mask: dict[int, int] = {}
        for n in nodes:
            cells_mask[n] = mask_of(state[n].cells)
            if len(state[n].cells) > 1:
                grouped |= 1 << n
            if state[n].number_of_assignments > 0:
                busy |= 1 << n
        qualifying: list[int] = []
        for mask in iterate_bit_masks(nodes):
            low = mask & -mask
            low_node = low.bit_length() - 1
            rest = mask ^ low
            fits = True
            for i, (res, size) in enumerate(resources):
                alloc_sums, free_sums = sums[i]
                alloc_sums[mask] = alloc_sums[rest] + per_node[i][0][low_node]
                free_sums[mask] = free_sums[rest] + per_node[i][1][low_node]
                if alloc_sums[mask] < size:
                    fits = False
            if not fits:
                continue
            count = mask.bit_count()
            if count < min_affinity_size:
                min_affinity_size = count
            if count == 1:
                if mask & grouped:
                    continue              # a grouped node can't take a single-node allocation
            elif mask & busy and any(len(state[n].cells) == 1 or cells_mask[n] != mask
                                     for n in mask_bits(mask & busy)):
                continue                  # busy nodes only join exactly their own group
            if any(sums[i][1][mask] + reusable[i].get(mask, {}).get(res, 0) < size
                   for i, (res, size) in enumerate(resources)):
                continue
            qualifying.append(mask)
        if not qualifying:
            return {}
        return {res: [TopologyHint(m, m.bit_count() == min_affinity_size) for m in qualifying]
                for res in requested}

    # -- allocation --
    def allocate(self, pod_uid: str, spec: Mapping, container_name: str,
                 hint: TopologyHint = TopologyHint(None, False)) -> None:
        """Allocate: pin the container's memory to NUMA nodes, given the Topology Manager's
        hint for it (`TopologyHint(None, False)` when the TM stored none, e.g. policy none).

        Raises MemoryManagerError with the kubelet's message. Idempotent per container.
        """
        if not is_guaranteed(spec) or pod_level_resources_set(spec):
            return
        existing = self.get_memory_blocks(pod_uid, container_name)
        if existing is not None:
            self._update_pod_reusable_memory(pod_uid, spec, container_name, existing)
            return
        requested = container_requests(_find_container(spec, container_name))
        best = hint
        if hint.affinity is None:
            default = self._default_hint(requested, pod_uid)
            if not default.preferred and hint.preferred:
                raise MemoryManagerError(
                    "[memorymanager] failed to find the default preferred hint")
            best = default
        if not self._affinity_satisfies(best.affinity, requested):
            extended = self._extend_hint(requested, pod_uid, best.affinity)
            if not extended.preferred and best.preferred:
                raise MemoryManagerError(
                    "[memorymanager] failed to find the extended preferred hint")
            best = extended
        if self._violates_numa_allocations(best.affinity):
            raise MemoryManagerError("[memorymanager] preferred hint violates NUMA node allocation")

        bits = mask_bits(best.affinity)
        blocks: list[Block] = []
        for res, size in requested.items():
            blocks.append(Block(tuple(bits), res, size))
            reusable = self._reusable(pod_uid, best.affinity, res)
            self._update_machine_state(bits, res, 0 if reusable >= size else size - reusable)
        self._update_pod_reusable_memory(pod_uid, spec, container_name, blocks)
        self._set_memory_blocks(pod_uid, container_name, blocks)
        self._update_init_containers_memory_blocks(pod_uid, spec, container_name, blocks)

    def remove_container(self, pod_uid: str, container_name: str) -> None:
        """RemoveContainer: drop the container's blocks and give their memory back.

        Nodes whose assignment count drops to 0 leave their group (cells reset to [self]).
        """
        blocks = self.get_memory_blocks(pod_uid, container_name)
        if blocks is None:
            return
        self._delete(pod_uid, container_name)
        for b in blocks:
            released = b.size
            for n in b.numa_affinity:
                node = self.machine_state[n]
                node.number_of_assignments -= 1
                if node.number_of_assignments == 0:
                    node.cells = [n]
                if released == 0:
                    continue
                table = node.memory.get(b.type)
                if table is None or table.reserved == 0:
                    continue
                if table.reserved < released:
                    released -= table.reserved
                    table.free += table.reserved
                    table.reserved = 0
                    continue
                table.free += released
                table.reserved -= released
                released = 0

    # -- internals, named after their kubelet counterparts --
    def _default_hint(self, requested: Mapping[str, int], pod_uid: str | None) -> TopologyHint:
        # getDefaultHint: the best hint for regular memory
        hints = self.calculate_hints(requested, pod_uid)
        if not hints:
            raise MemoryManagerError("[memorymanager] failed to get the default NUMA affinity, "
                                     "no NUMA nodes with enough memory is available")
        best = find_best_hint(hints.get(RESOURCE_MEMORY, []))
        if best.affinity is None:
            # only hugepages requested: the kubelet would dereference a nil mask here
            best = find_best_hint(next(iter(hints.values())))
        return best

    def _extend_hint(self, requested: Mapping[str, int], pod_uid: str | None,
                     mask: int) -> TopologyHint:
        # extendTopologyManagerHint: the best qualifying mask containing the TM's mask
        hints = self.calculate_hints(requested, pod_uid)
        current = mask_bits(mask)
        candidates = hints.get(RESOURCE_MEMORY)
        if candidates is None and hints:
            candidates = next(iter(hints.values()))
        filtered = [h for h in candidates or [] if _is_subset(current, mask_bits(h.affinity))]
        if not filtered:
            raise MemoryManagerError("[memorymanager] failed to find NUMA nodes to extend the "
                                     "current topology hint")
        return find_best_hint(filtered)

    def _affinity_satisfies(self, mask: int, requested: Mapping[str, int]) -> bool:
        # isAffinitySatisfyRequest: free memory under the mask covers every request
        bits = mask_bits(mask)
        return all(_sum(self.machine_state, bits, res, "free") >= size
                   for res, size in requested.items())

    def _violates_numa_allocations(self, mask: int) -> bool:
        # isAffinityViolatingNUMAAllocations: single-node and group allocations don't mix
        bits = mask_bits(mask)
        if len(bits) == 1:
            return False
        for n in bits:
            node = self.machine_state[n]
            if node.number_of_assignments == 0:
                continue
            if len(node.cells) == 1 or sorted(node.cells) != bits:
                return True
        return False

    def _update_machine_state(self, bits: list[int], res: str, size: int) -> None:
        # updateMachineState: every node of the mask joins the group and counts one more
        # assignment; the bytes are taken greedily from the lowest NUMA id up.
        for n in bits:
            node = self.machine_state[n]
            node.number_of_assignments += 1
            node.cells = list(bits)
            if size == 0:
                continue
            table = node.memory.get(res)
            if table is None or table.free <= 0:
                continue
            if table.free >= size:
                table.reserved += size
                table.free -= size
                size = 0
                continue
            size -= table.free
            table.reserved += table.free
            table.free = 0

    def _reusable(self, pod_uid: str | None, mask: int, res: str) -> int:
        # getPodReusableMemory
        if pod_uid is None:
            return 0
        return self.init_containers_reusable_memory.get(pod_uid, {}).get(mask, {}).get(res, 0)

    def _update_pod_reusable_memory(self, pod_uid: str, spec: Mapping, container_name: str,
                                    blocks: Sequence[Block]) -> None:
        # updatePodReusableMemory: only the pod being admitted keeps reusable memory
        reusable = self.init_containers_reusable_memory
        for uid in [u for u in reusable if u != pod_uid]:
            del reusable[uid]
        if _is_regular_init_container(spec, container_name):
            pod = reusable.setdefault(pod_uid, {})
            for b in blocks:
                per_mask = pod.setdefault(mask_of(b.numa_affinity), {})
                if b.size > per_mask.get(b.type, 0):
                    per_mask[b.type] = b.size
            return
        for b in blocks:
            mask = mask_of(b.numa_affinity)
            available = self._reusable(pod_uid, mask, b.type)
            if available != 0:
                reusable[pod_uid][mask][b.type] = 0 if b.size >= available else available - b.size

    def _update_init_containers_memory_blocks(self, pod_uid: str, spec: Mapping,
                                              container_name: str, blocks: Sequence[Block]) -> None:
        # updateInitContainersMemoryBlocks: shrink earlier regular init containers' blocks by
        # what this container re-used, so the pod's blocks add up to what was really reserved.
        for block in blocks:
            size = block.size
            for init in _containers(spec, "initContainers"):
                if init.get("name") == container_name or size == 0:
                    break
                if is_restartable_init_container(init):
                    continue
                init_blocks = self.get_memory_blocks(pod_uid, init.get("name"))
                if not init_blocks:
                    continue
                for i, ib in enumerate(init_blocks):
                    if ib.size == 0 or ib.type != block.type:
                        continue
                    if mask_of(ib.numa_affinity) != mask_of(block.numa_affinity):
                        continue
                    if ib.size > size:
                        init_blocks[i] = replace(ib, size=ib.size - size)
                        size = 0
                    else:
                        size -= ib.size
                        init_blocks[i] = replace(ib, size=0)
                self._set_memory_blocks(pod_uid, init.get("name"), init_blocks)


def regenerate_hints(blocks: Sequence[Block],
                     requested: Mapping[str, int]) -> dict[str, list[TopologyHint]] | None:
    """regenerateHints: a container already holding memory gets its blocks' masks back as
    preferred hints, or None (no preference) if the blocks don't match the request exactly."""
    hints: dict[str, list[TopologyHint]] = {res: [] for res in requested}
    if len(blocks) != len(requested):
        return None
    for b in blocks:
        if b.type not in requested or b.size != requested[b.type]:
            return None
        hints[b.type].append(TopologyHint(mask_of(b.numa_affinity), True))
    return hints


def _table_value(state: MachineState, node: int, res: str, attr: str) -> int:
    table = state[node].memory.get(res)
    return 0 if table is None else getattr(table, attr)


def _sum(state: MachineState, bits: Sequence[int], res: str, attr: str) -> int:
    total = 0
    for n in bits:
        table = state[n].memory.get(res)
        if table is not None:
            total += getattr(table, attr)
    return total


def _find_container(spec: Mapping, name: str) -> Mapping:
    for c in _containers(spec, "initContainers") + _containers(spec, "containers"):
        if c.get("name") == name:
            return c
    raise KeyError(f"pod has no container named {name!r}")


def _is_regular_init_container(spec: Mapping, name: str) -> bool:
    for c in _containers(spec, "initContainers"):
        if c.get("name") == name:
            return not is_restartable_init_container(c)
    return False
