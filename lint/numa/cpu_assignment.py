"""How the CPU Manager static policy picks CPUs: the kubelet's `cpuAccumulator`.

Reimplements `pkg/kubelet/cm/cpumanager/cpu_assignment.go` (takeByTopologyNUMAPacked,
takeByTopologyNUMADistributed and the accumulator behind them) and the pieces of
`cpumanager/topology/topology.go` (CPUDetails) they use. CPU sets are `frozenset[int]`.

The model, in short (see docs/kubelet-numa-algorithms.md §5.3-5.7):

* `free` is what is still available, `need` how many CPUs are still wanted;
* "sort" always means: fewest free CPUs first, ties by id — so allocations pack onto NUMA
  nodes / sockets / cores that are already partly used;
* NUMA-first hierarchy when NumSockets >= NumNUMANodes (a NUMA node holds whole sockets),
  sockets-first otherwise;
* packed: whole NUMA nodes / sockets (first, second level), [whole uncore caches], whole
  cores, then single CPUs; spread (`distribute-cpus-across-cores`) skips the whole-core step and
  orders single CPUs socket by socket, ascending id.

`CPUTopologyIndex` precomputes the per-topology lookups once; pass it (or a Topology, whose index
is then built once and kept on the Topology object itself) to every function here.
"""
from __future__ import annotations

import math
from collections.abc import Iterable, Iterator
from itertools import combinations

from numaguard.lint.numa.topology import Topology

CPU_SORTING_PACKED = "packed"
CPU_SORTING_SPREAD = "spread"

_INDEX_ATTR = "_numaguard_cpu_topology_index"


class CPUManagerError(Exception):
    """An allocation the kubelet's CPU Manager refuses.

    `reason` is what the kubelet puts in the pod status: errors without their own type become
    `UnexpectedAdmissionError` (pkg/kubelet/lifecycle admission.GetPodAdmitResult).
    """

    reason = "UnexpectedAdmissionError"

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class NotEnoughCPUsError(CPUManagerError):
    """cpu_assignment.go: more CPUs requested than the candidate set holds."""

    def __init__(self, requested: int, available: int) -> None:
        super().__init__(f"not enough cpus available to satisfy request: requested={requested}, "
                         f"available={available}")
        self.requested = requested
        self.available = available


class CPUAllocationFailedError(CPUManagerError):
    """cpu_assignment.go: the accumulator ran out of candidates (cannot happen on sane input)."""

    def __init__(self, message: str = "failed to allocate cpus") -> None:
        super().__init__(message)


class CPUTopologyIndex:
    """Per-topology lookups (topology.go CPUDetails) computed once.

    Machine-wide averages are used where the kubelet uses them: `cpus_per_core` =
    NumCPUs/NumCores, `cpus_per_socket` = NumCPUs/NumSockets, `cpus_per_uncore` =
    NumCPUs/NumUncoreCaches. A CPU without an uncore cache id counts as cache 0, as a
    CPUInfo without UncoreCacheID does in the kubelet.
    """

    def __init__(self, topology: Topology) -> None:
        self.topology = topology
        cpus = topology.cpus
        self.all_cpus: frozenset[int] = frozenset(c.id for c in cpus)
        self.core_of: dict[int, int] = {c.id: c.core for c in cpus}
        self.socket_of: dict[int, int] = {c.id: c.socket for c in cpus}
        self.numa_of: dict[int, int] = {c.id: c.numa for c in cpus}
        self.uncore_of: dict[int, int] = {c.id: (c.uncore_cache or 0) for c in cpus}
        self.cpus_in_core = _group(self.core_of)
        self.cpus_in_socket = _group(self.socket_of)
        self.cpus_in_numa = _group(self.numa_of)
        self.cpus_in_uncore = _group(self.uncore_of)
        # a core lives on one socket and one NUMA node (topology.py validates it)
        self.socket_of_core: dict[int, int] = {c.core: c.socket for c in cpus}
        self.numa_of_core: dict[int, int] = {c.core: c.numa for c in cpus}
        # NUMA ids as CPUDetails.NUMANodes() sees them: nodes that have CPUs
        self.numa_ids: tuple[int, ...] = tuple(sorted(self.cpus_in_numa))
        self.num_cpus = len(self.all_cpus)
        self.num_cores = len(self.cpus_in_core)
        self.num_sockets = len(self.cpus_in_socket)
        self.num_numa_nodes = len(self.cpus_in_numa)
        self.num_uncore_caches = len(self.cpus_in_uncore)
        self.cpus_per_core = self.num_cpus // self.num_cores
        self.cpus_per_socket = self.num_cpus // self.num_sockets
        self.cpus_per_uncore = self.num_cpus // self.num_uncore_caches
        # cpu_assignment.go newCPUAccumulator: NUMA nodes are the bigger container when there
        # are at least as many sockets as NUMA nodes
        self.numa_first = self.num_sockets >= self.num_numa_nodes
        self.sockets_of_numa: dict[int, frozenset[int]] = {
            n: frozenset(self.socket_of[c] for c in cs) for n, cs in self.cpus_in_numa.items()}
        self.smallest_numa = min(len(cs) for cs in self.cpus_in_numa.values())
        self.smallest_socket = min(len(cs) for cs in self.cpus_in_socket.values())
        self._numa_mask_cpus: dict[int, frozenset[int]] = {}
        self._mask_table: list[tuple[int, tuple[int, ...], int]] | None = None

    @classmethod
    def of(cls, topology: "Topology | CPUTopologyIndex") -> "CPUTopologyIndex":
        """The index for a topology, built once and kept on the (immutable) Topology object."""
        if isinstance(topology, CPUTopologyIndex):
            return topology
        index = topology.__dict__.get(_INDEX_ATTR)
        if index is None:
            index = cls(topology)
            # Topology is a frozen dataclass; like functools.cached_property we write straight
            # into the instance dict, which does not change its value.
            topology.__dict__[_INDEX_ATTR] = index
        return index

    def cpus_in_numa_mask(self, mask: int) -> frozenset[int]:
        """All machine CPUs on the NUMA nodes whose bits are set in `mask`."""
        cpus = self._numa_mask_cpus.get(mask)
        if cpus is None:
            cpus = frozenset().union(*(cs for n, cs in self.cpus_in_numa.items() if mask >> n & 1))
            self._numa_mask_cpus[mask] = cpus
        return cpus

    def numa_mask_table(self) -> list[tuple[int, tuple[int, ...], int]]:
        """(mask, NUMA ids, machine CPUs on them) for every non-empty NUMA subset, in
        bitmask.IterateBitMasks order (by size, then lexicographic)."""
        if self._mask_table is None:
            table = []
            for size in range(1, len(self.numa_ids) + 1):
                for combo in combinations(self.numa_ids, size):
                    mask = 0
                    for n in combo:
                        mask |= 1 << n
                    table.append((mask, combo, sum(len(self.cpus_in_numa[n]) for n in combo)))
            self._mask_table = table
        return self._mask_table

    def sockets_in_numa_mask(self, mask: int) -> frozenset[int]:
        return frozenset().union(*(s for n, s in self.sockets_of_numa.items() if mask >> n & 1))


def _group(of: dict[int, int]) -> dict[int, frozenset[int]]:
    groups: dict[int, set[int]] = {}
    for cpu, key in of.items():
        groups.setdefault(key, set()).add(cpu)
    return {k: frozenset(v) for k, v in groups.items()}


class _FreeView:
    """Counts and memberships of the free CPUs, as CPUDetails.KeepOnly(free) would answer them."""

    __slots__ = ("numa_n", "socket_n", "core_n", "core_cpus", "cores_in_socket", "cores_in_numa",
                 "sockets_in_numa", "numas_in_socket", "socket_cpus")

    def __init__(self, ix: CPUTopologyIndex, free: set[int]) -> None:
        core_cpus: dict[int, list[int]] = {}
        core_of = ix.core_of
        for cpu in free:
            core = core_of[cpu]
            lst = core_cpus.get(core)
            if lst is None:
                core_cpus[core] = [cpu]
            else:
                lst.append(cpu)
        numa_n: dict[int, int] = {}
        socket_n: dict[int, int] = {}
        core_n: dict[int, int] = {}
        cores_in_socket: dict[int, list[int]] = {}
        cores_in_numa: dict[int, list[int]] = {}
        sockets_in_numa: dict[int, set[int]] = {}
        numas_in_socket: dict[int, set[int]] = {}
        for core, lst in core_cpus.items():
            n = len(lst)
            core_n[core] = n
            socket = ix.socket_of_core[core]
            numa = ix.numa_of_core[core]
            numa_n[numa] = numa_n.get(numa, 0) + n
            socket_n[socket] = socket_n.get(socket, 0) + n
            cores_in_socket.setdefault(socket, []).append(core)
            cores_in_numa.setdefault(numa, []).append(core)
            sockets_in_numa.setdefault(numa, set()).add(socket)
            numas_in_socket.setdefault(socket, set()).add(numa)
        self.numa_n, self.socket_n, self.core_n = numa_n, socket_n, core_n
        self.core_cpus = core_cpus
        self.cores_in_socket, self.cores_in_numa = cores_in_socket, cores_in_numa
        self.sockets_in_numa, self.numas_in_socket = sockets_in_numa, numas_in_socket
        self.socket_cpus: dict[int, list[int]] | None = None


def _by_free(ids: Iterable[int], counts: dict[int, int]) -> list[int]:
    # cpu_assignment.go cpuAccumulator.sort: ascending free CPUs, ties by ascending id
    return sorted(ids, key=lambda i: (counts[i], i))


class CPUAccumulator:
    """The kubelet's cpuAccumulator: state of one `takeByTopology*` call."""

    def __init__(self, topology: "Topology | CPUTopologyIndex", available: Iterable[int],
                 num_cpus: int, strategy: str = CPU_SORTING_PACKED) -> None:
        if strategy not in (CPU_SORTING_PACKED, CPU_SORTING_SPREAD):
            raise ValueError(f"unknown CPU sorting strategy {strategy!r}")
        self.index = CPUTopologyIndex.of(topology)
        # topo.CPUDetails.KeepOnly(available): CPUs the machine does not have are dropped
        self.free: set[int] = set(available) & self.index.all_cpus
        self.need = num_cpus
        self.result: set[int] = set()
        self.strategy = strategy
        self._view: _FreeView | None = None

    # --- state -------------------------------------------------------------------------------
    def take(self, cpus: Iterable[int]) -> None:
        cpus = set(cpus)
        self.result |= cpus
        self.free -= cpus
        self.need -= len(cpus)
        self._view = None

    def needs_at_least(self, n: int) -> bool:
        return self.need >= n

    def is_satisfied(self) -> bool:
        return self.need < 1

    def is_failed(self) -> bool:
        return self.need > len(self.free)

    def view(self) -> _FreeView:
        if self._view is None:
            self._view = _FreeView(self.index, self.free)
        return self._view

    # --- sorted element lists (sortAvailable*) ------------------------------------------------
    def sorted_numa_nodes(self) -> list[int]:
        v = self.view()
        if self.index.numa_first:
            return _by_free(v.numa_n, v.numa_n)
        out: list[int] = []
        for socket in self.sorted_sockets():
            out += _by_free(v.numas_in_socket[socket], v.numa_n)
        return out

    def sorted_sockets(self) -> list[int]:
        v = self.view()
        if not self.index.numa_first:
            return _by_free(v.socket_n, v.socket_n)
        out: list[int] = []
        for numa in self.sorted_numa_nodes():
            out += _by_free(v.sockets_in_numa[numa], v.socket_n)
        return out

    def sorted_cores(self) -> list[int]:
        v = self.view()
        out: list[int] = []
        if self.index.numa_first:
            for socket in self.sorted_sockets():
                out += _by_free(v.cores_in_socket[socket], v.core_n)
        else:
            for numa in self.sorted_numa_nodes():
                out += _by_free(v.cores_in_numa[numa], v.core_n)
        return out

    def sorted_cpus(self) -> list[int]:
        """sortAvailableCPUsPacked (core by core) or ...Spread (socket by socket, ascending)."""
        v = self.view()
        out: list[int] = []
        if self.strategy == CPU_SORTING_PACKED:
            for core in self.sorted_cores():
                out += sorted(v.core_cpus[core])
        else:
            by_socket: dict[int, list[int]] = {}
            for cpu in self.free:
                by_socket.setdefault(self.index.socket_of[cpu], []).append(cpu)
            for socket in self.sorted_sockets():
                out += sorted(by_socket[socket])
        return out

    def sorted_uncore_caches(self) -> list[int]:
        # sortAvailableUncoreCaches: NUMA nodes in sorted order, then their caches by free CPUs
        counts: dict[int, int] = {}
        per_numa: dict[int, set[int]] = {}
        for cpu in self.free:
            cache = self.index.uncore_of[cpu]
            counts[cache] = counts.get(cache, 0) + 1
            per_numa.setdefault(self.index.numa_of[cpu], set()).add(cache)
        out: list[int] = []
        for numa in self.sorted_numa_nodes():
            out += _by_free(per_numa[numa], counts)
        return out

    # --- free (entirely available) elements ---------------------------------------------------
    def free_numa_nodes(self) -> list[int]:
        v, ix = self.view(), self.index
        return [n for n in self.sorted_numa_nodes() if v.numa_n[n] == len(ix.cpus_in_numa[n])]

    def free_sockets(self) -> list[int]:
        v, per = self.view(), self.index.cpus_per_socket
        return [s for s in self.sorted_sockets() if v.socket_n[s] == per]

    def free_cores(self) -> list[int]:
        v, per = self.view(), self.index.cpus_per_core
        return [c for c in self.sorted_cores() if v.core_n[c] == per]

    def free_cpus(self) -> list[int]:
        return self.sorted_cpus()

    # --- taking -------------------------------------------------------------------------------
    def take_full_numa_nodes(self) -> None:
        if self.need < self.index.smallest_numa:     # nothing could be taken; skip the sorting
            return
        for numa in self.free_numa_nodes():
            cpus = self.index.cpus_in_numa[numa]
            if self.needs_at_least(len(cpus)):
                self.take(cpus)

    def take_full_sockets(self) -> None:
        if self.need < self.index.smallest_socket:
            return
        for socket in self.free_sockets():
            cpus = self.index.cpus_in_socket[socket]
            if self.needs_at_least(len(cpus)):
                self.take(cpus)

    def take_full_first_level(self) -> None:
        if self.index.numa_first:
            self.take_full_numa_nodes()
        else:
            self.take_full_sockets()

    def take_full_second_level(self) -> None:
        if self.index.numa_first:
            self.take_full_sockets()
        else:
            self.take_full_numa_nodes()

    def take_full_cores(self) -> None:
        if self.need < self.index.cpus_per_core:
            return
        for core in self.free_cores():
            cpus = self.index.cpus_in_core[core]
            if self.needs_at_least(len(cpus)):
                self.take(cpus)

    def take_remaining_cpus(self) -> None:
        # the candidate list is computed once (Go evaluates the range expression once)
        for cpu in self.sorted_cpus():
            self.take((cpu,))
            if self.is_satisfied():
                return

    def take_full_uncore_caches(self) -> None:
        ix = self.index
        for cache in self.sorted_uncore_caches():
            cpus = ix.cpus_in_uncore[cache]
            if len(self.free & cpus) != len(cpus):       # only entirely free caches
                continue
            if self.needs_at_least(len(cpus)):
                self.take(cpus)

    def take_partial_uncore_cache(self, cache: int) -> None:
        """Claim CPUs of one cache only if the lowest-numbered free cores there fit exactly."""
        ix = self.index
        per_core = ix.cpus_per_core
        cores_needed = (self.need + per_core - 1) // per_core
        free_in_cache = [c for c in self.free if ix.uncore_of[c] == cache]
        cores = sorted({ix.core_of[c] for c in free_in_cache})[:cores_needed]
        wanted = set(cores)
        cpus = sorted(c for c in free_in_cache if ix.core_of[c] in wanted)
        # an odd request on SMT: drop the highest CPU so the rest stays core-packed
        if self.need % 2 != 0 and per_core > 1 and len(cpus) > self.need:
            cpus = cpus[:-1]
        if len(cpus) == self.need:
            self.take(cpus)

    def take_uncore_cache(self) -> None:
        # cpu_assignment.go takeUncoreCache (prefer-align-cpus-by-uncorecache)
        per_cache = self.index.cpus_per_uncore
        for cache in self.sorted_uncore_caches():
            if self.needs_at_least(per_cache):
                self.take_full_uncore_caches()
            if self.is_satisfied():
                return
            self.take_partial_uncore_cache(cache)
            if self.is_satisfied():
                return


def take_by_topology_numa_packed(topology: "Topology | CPUTopologyIndex", available: Iterable[int],
                                 num_cpus: int, strategy: str = CPU_SORTING_PACKED,
                                 prefer_align_by_uncore_cache: bool = False) -> frozenset[int]:
    """cpu_assignment.go takeByTopologyNUMAPacked: `num_cpus` CPUs out of `available`.

    Raises NotEnoughCPUsError when `available` is too small; 0 CPUs gives the empty set.
    """
    available = frozenset(available)
    acc = CPUAccumulator(topology, available, num_cpus, strategy)
    if acc.is_satisfied():
        return frozenset()
    if acc.is_failed():
        raise NotEnoughCPUsError(num_cpus, len(available))
    acc.take_full_first_level()
    if acc.is_satisfied():
        return frozenset(acc.result)
    acc.take_full_second_level()
    if acc.is_satisfied():
        return frozenset(acc.result)
    if prefer_align_by_uncore_cache:
        acc.take_uncore_cache()
        if acc.is_satisfied():
            return frozenset(acc.result)
    if strategy == CPU_SORTING_PACKED:
        acc.take_full_cores()
        if acc.is_satisfied():
            return frozenset(acc.result)
    acc.take_remaining_cpus()
    if acc.is_satisfied():
        return frozenset(acc.result)
    raise CPUAllocationFailedError()


def _go_round(value: float) -> float:
    # math.Round(x*1000)/1000: round half away from zero, on the float as computed
    scaled = value * 1000
    whole = math.trunc(scaled)
    if abs(scaled - whole) >= 0.5:
        whole += math.copysign(1, scaled)
    return whole / 1000


def balance_score(values: Iterable[int]) -> float:
    """cpu_assignment.go standardDeviation: population std-dev, mean and result rounded to 3
    decimals (the mean is rounded before it is used)."""
    xs = list(values)
    mean = _go_round(sum(float(x) for x in xs) / len(xs))
    total = 0.0
    for x in xs:
        total += (float(x) - mean) * (float(x) - mean)
    return _go_round(math.sqrt(total / len(xs)))


def _combos(items: list[int], k: int) -> Iterator[tuple[int, ...]]:
    # cpuAccumulator.iterateCombinations: k-subsets in lexicographic order of positions
    if k < 1:
        return iter(())
    return combinations(items, k)


def take_by_topology_numa_distributed(topology: "Topology | CPUTopologyIndex",
                                      available: Iterable[int], num_cpus: int,
                                      cpu_group_size: int = 1,
                                      strategy: str = CPU_SORTING_PACKED,
                                      align_by_socket: bool = False) -> frozenset[int]:
    """cpu_assignment.go takeByTopologyNUMADistributed (option distribute-cpus-across-numa).

    Spreads `num_cpus` evenly, in groups of `cpu_group_size`, over the smallest number of NUMA
    nodes that can hold it, choosing the NUMA combination (and the nodes taking the remainder)
    that leaves free CPUs best balanced; falls back to the packed algorithm.

    `align_by_socket` (newer kubelets pass the align-by-socket option here): a combination
    whose NUMA nodes share one socket beats any cross-socket one, and the even share is capped
    at what the smallest NUMA node of the combination can give.
    """
    ix = CPUTopologyIndex.of(topology)
    available = frozenset(available)
    g = cpu_group_size
    if num_cpus % g != 0:
        return take_by_topology_numa_packed(ix, available, num_cpus, strategy)
    acc = CPUAccumulator(ix, available, num_cpus, strategy)
    if acc.is_satisfied():
        return frozenset()
    if acc.is_failed():
        raise NotEnoughCPUsError(num_cpus, len(available))

    numas = acc.sorted_numa_nodes()
    free_in = {n: acc.view().numa_n[n] for n in numas}
    min_numas, max_numas = _numa_range(ix, len(numas), acc.need, g)

    for k in range(min_numas, max_numas + 1):
        best_balance = math.inf
        best_combo: tuple[int, ...] | None = None
        best_remainder: tuple[int, ...] | None = None
        best_in_one_socket = False
        for combo in _combos(numas, k):
            if best_balance == 0 and (not align_by_socket or best_in_one_socket):
                break
            if sum(free_in[n] for n in combo) < num_cpus:
                continue
            if sum(free_in[n] // g for n in combo) * g < num_cpus:
                continue
            distribution = (num_cpus // len(combo) // g) * g
            if align_by_socket:
                distribution = min([distribution] + [free_in[n] // g * g for n in combo])
            if any(free_in[n] < distribution for n in combo):
                continue
            after = dict(free_in)
            for n in combo:
                after[n] -= distribution
            remainder = num_cpus - distribution * len(combo)
            remainder_candidates = [n for n in combo if after[n] >= g]
            local_best = math.inf
            local_subset: tuple[int, ...] | None = None
            if remainder == 0:
                local_best = balance_score(after.values())
            size = len(remainder_candidates)
            while remainder > 0 and size >= 1:
                for subset in _combos(remainder_candidates, size):
                    trial = dict(after)
                    # a subset must hand the remainder out in whole groups (a leftover smaller
                    # than a group cannot be taken; newer kubelets check groups, older ones
                    # summed raw CPUs and could spin forever)
                    if sum(trial[n] // g for n in subset) * g < remainder:
                        continue
                    left = remainder
                    while left > 0:
                        for n in subset:
                            if left == 0:
                                break
                            if trial[n] < g:
                                continue
                            trial[n] -= g
                            left -= g
                    score = balance_score(trial.values())
                    if score < local_best:
                        local_best, local_subset = score, subset
                size -= 1
            in_one_socket = False
            if align_by_socket:
                in_one_socket = len({s for n in combo for s in ix.sockets_of_numa[n]}) == 1
            better = local_best < best_balance
            if align_by_socket and in_one_socket != best_in_one_socket:
                better = in_one_socket
            if better:
                best_balance, best_combo, best_remainder = local_best, combo, local_subset
                best_in_one_socket = in_one_socket
        if best_combo is None:
            continue

        distribution = (num_cpus // len(best_combo) // g) * g
        # never ask a chosen NUMA node for more than it has (only bites with align_by_socket)
        distribution = min([distribution] + [free_in[n] // g * g for n in best_combo])
        for n in best_combo:
            numa_free = acc.free & ix.cpus_in_numa[n]
            acc.take(take_by_topology_numa_packed(ix, numa_free, distribution, strategy))
        remainder = num_cpus - distribution * len(best_combo)
        while remainder > 0:
            for n in best_remainder or ():
                if remainder == 0:
                    break
                numa_free = acc.free & ix.cpus_in_numa[n]
                if len(numa_free) < g:
                    continue
                acc.take(take_by_topology_numa_packed(ix, numa_free, g, strategy))
                remainder -= g
        if acc.need > 0:
            raise CPUAllocationFailedError(
                f"accounting error, not enough CPUs allocated, remaining: {acc.need}")
        if acc.need < 0:
            raise CPUAllocationFailedError(
                f"accounting error, too many CPUs allocated, remaining: {acc.need}")
        return frozenset(acc.result)

    return take_by_topology_numa_packed(ix, available, num_cpus, strategy)


def _numa_range(ix: CPUTopologyIndex, numas_available: int, need: int, g: int) -> tuple[int, int]:
    # cpuAccumulator.rangeNUMANodesNeededToSatisfy
    groups = (ix.num_cpus - 1) // g + 1
    groups_per_numa = (groups - 1) // ix.num_numa_nodes + 1
    groups_needed = (need - 1) // g + 1
    min_numas = (groups_needed - 1) // groups_per_numa + 1
    max_numas = min(groups_needed, numas_available)
    return min_numas, max_numas


def take_by_topology(topology: "Topology | CPUTopologyIndex", available: Iterable[int],
                     num_cpus: int, *, distribute_cpus_across_numa: bool = False,
                     distribute_cpus_across_cores: bool = False, full_pcpus_only: bool = False,
                     prefer_align_cpus_by_uncorecache: bool = False,
                     align_by_socket: bool = False) -> frozenset[int]:
    """policy_static.go takeByTopology: the algorithm the static policy's options select."""
    ix = CPUTopologyIndex.of(topology)
    strategy = CPU_SORTING_SPREAD if distribute_cpus_across_cores else CPU_SORTING_PACKED
    if distribute_cpus_across_numa:
        group = ix.cpus_per_core if full_pcpus_only else 1
        return take_by_topology_numa_distributed(ix, available, num_cpus, group, strategy,
                                                 align_by_socket)
    return take_by_topology_numa_packed(ix, available, num_cpus, strategy,
                                        prefer_align_cpus_by_uncorecache)


__all__ = [
    "CPU_SORTING_PACKED", "CPU_SORTING_SPREAD", "CPUManagerError", "NotEnoughCPUsError",
    "CPUAllocationFailedError", "CPUTopologyIndex", "CPUAccumulator", "balance_score",
    "take_by_topology_numa_packed", "take_by_topology_numa_distributed", "take_by_topology",
]

