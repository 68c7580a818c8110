"""CPU Manager static policy topology hints (`cpumanager/policy_static.go`).

A hint is a NUMA affinity mask (plain int, bit i = NUMA node i) plus `preferred`. The kubelet's
conventions kept here:

* `None` (no hints) means "no preference" (non-Guaranteed or non-integer CPU request);
* an empty list means "cannot be satisfied" (e.g. an existing assignment of the wrong size);
* masks are produced in bitmask.IterateBitMasks order: sizes 1..n, each size in lexicographic
  order of the NUMA ids (the kubelet's own order depends on Go map iteration; the Topology
  Manager's merge does not depend on it);
* `minAffinitySize` comes from the machine's capacity, not from what is free: when the narrowest
  NUMA set that could ever hold the request is busy, every remaining hint is non-preferred.

Requests are plain ints from the caller (this module never reads pod specs).
"""
from __future__ import annotations

import math
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from decimal import Decimal

from numaguard.lint.numa.bitmask import iterate_bit_masks
from numaguard.lint.numa.cpu_assignment import CPUTopologyIndex
from numaguard.lint.numa.topology import Topology


@dataclass(frozen=True, order=True)
class CPUHint:
    """topologymanager.TopologyHint for the `cpu` resource: NUMA mask and preference."""
    mask: int
    preferred: bool

    @property
    def numa_nodes(self) -> tuple[int, ...]:
        return tuple(i for i in range(self.mask.bit_length()) if self.mask >> i & 1)


def iterate_numa_masks(numa_ids: Iterable[int]) -> Iterator[int]:
    """bitmask.IterateBitMasks: every non-empty subset, by size, lexicographic within a size."""
    yield from iterate_bit_masks(sorted(numa_ids))


def generate_cpu_topology_hints(topology: "Topology | CPUTopologyIndex", available: Iterable[int],
                                reusable: Iterable[int], request: int, *,
                                align_by_socket: bool = False) -> list[CPUHint]:
    """policy_static.go generateCPUTopologyHints.

    A mask is a hint when every reusable CPU lies on it and reusable + available CPUs on it reach
    `request`. Preferred: mask size == the narrowest mask whose machine capacity reaches the
    request (or, with align-by-socket, spanning the minimal number of sockets).
    """
    ix = CPUTopologyIndex.of(topology)
    numa_of = ix.numa_of
    free_per_numa: dict[int, int] = {}
    for cpu in available:
        numa = numa_of.get(cpu)
        if numa is not None:
            free_per_numa[numa] = free_per_numa.get(numa, 0) + 1
    reusable = list(reusable)
    # CPUDetails of an unknown CPU is the zero CPUInfo: NUMA node 0
    reusable_mask = 0
    for cpu in reusable:
        reusable_mask |= 1 << numa_of.get(cpu, 0)
    min_affinity = len(ix.numa_ids)
    found: list[int] = []
    for mask, bits, capacity in ix.numa_mask_table():
        count = len(bits)
        if count < min_affinity and capacity >= request:
            min_affinity = count
        if reusable_mask & ~mask:
            continue
        matching = len(reusable) + sum(free_per_numa.get(n, 0) for n in bits)
        if matching < request:
            continue
        found.append(mask)

    hints = []
    for mask in found:
        if align_by_socket and is_hint_socket_aligned(ix, mask, min_affinity):
            hints.append(CPUHint(mask, True))
        else:
            hints.append(CPUHint(mask, mask.bit_count() == min_affinity))
    return hints


def is_hint_socket_aligned(topology: "Topology | CPUTopologyIndex", mask: int,
                           min_affinity_size: int) -> bool:
    """policy_static.go isHintSocketAligned: the mask spans the fewest sockets possible."""
    ix = CPUTopologyIndex.of(topology)
    per_socket = ix.num_numa_nodes // ix.num_sockets
    if per_socket == 0:
        return False
    min_sockets = (min_affinity_size + per_socket - 1) // per_socket
    return len(ix.sockets_in_numa_mask(mask)) == min_sockets


def guaranteed_cpus(cpu_request: "Decimal | str | int | None",
                    pod_is_guaranteed: bool = True) -> int:
    """policy_static.go guaranteedCPUs for one container, from its cpu request quantity.

    0 unless the pod is Guaranteed and `Value()*1000 == MilliValue()` (both round up), else
    `Value()`. Note the quirk this keeps: "1.9995" passes the check (ceil 2, 2000 millis) and
    gets 2 exclusive CPUs, while "1.5" gets none. A missing request (None) is 0.
    """
    if cpu_request is None or not pod_is_guaranteed:
        return 0
    from numaguard.lint.k8s.quantity import parse_quantity
    quantity = cpu_request if isinstance(cpu_request, Decimal) else parse_quantity(cpu_request)
    value = math.ceil(quantity)
    milli = math.ceil(quantity * 1000)
    if value * 1000 != milli:
        return 0
    return value


def pod_guaranteed_cpus(init_containers: Sequence[tuple[int, bool]],
                        app_containers: Sequence[int]) -> int:
    """policy_static.go podGuaranteedCPUs: the pod-scope exclusive CPU request.

    `init_containers`: (guaranteed CPUs, restartable) in spec order, restartable meaning a sidecar
    (restartPolicy: Always); `app_containers`: guaranteed CPUs of each app container. Omit
    containers without a cpu request. Sidecars accumulate; a regular init container needs its
    own CPUs plus the sidecars started before it; the result is
    max(largest init need, apps + all sidecars).
    """
    init_max = 0
    sidecars = 0
    for cpus, restartable in init_containers:
        if restartable:
            sidecars += cpus
        elif sidecars + cpus > init_max:
            init_max = sidecars + cpus
    long_running = sum(app_containers) + sidecars
    return init_max if init_max > long_running else long_running


__all__ = ["CPUHint", "iterate_numa_masks", "generate_cpu_topology_hints",
           "is_hint_socket_aligned", "guaranteed_cpus", "pod_guaranteed_cpus"]
