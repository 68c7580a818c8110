"""The CPU Manager `static` policy: its state, hints and allocation.

Reimplements `pkg/kubelet/cm/cpumanager/policy_static.go` (NewStaticPolicy, GetTopologyHints,
GetPodTopologyHints, Allocate, allocateCPUs, RemoveContainer, updateCPUsToReuse),
`policy_options.go` (option names, parsing, compatibility checks) and the reservation arithmetic
of `cpu_manager.go` NewManager / `cmd/kubelet/app/server.go` (reservedSystemCPUs).

State, as the kubelet keeps it:

* shared pool (`default_cpus`, the state's default CPU set): every CPU not exclusively
  assigned; reserved CPUs stay in it unless `strict-cpu-reservation` is on;
* `reserved`: never handed out exclusively; `reserved_physical`: reserved CPUs plus all their
  core siblings (used by the full-pcpus-only check);
* available for exclusive use = shared pool - reserved;
* `assignments[pod][container]`: exclusive CPU sets;
* `cpus_to_reuse[pod]`: CPUs of the pod's finished (non-restartable) init containers, reusable
  by its later containers; only the pod being admitted keeps an entry.

Callers give requests as ints (the container's guaranteed CPUs: 0 unless the pod is Guaranteed
and the request is an integer) and say whether a container is an init container, a sidecar
(restartable init container) or an app container.
"""
from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal

from numaguard.lint.numa.cpu_assignment import (CPUManagerError, CPUTopologyIndex, take_by_topology)
from numaguard.lint.numa.cpu_hints import CPUHint, generate_cpu_topology_hints
from numaguard.lint.k8s.cpuset import CPUSetError, format_cpuset, parse_cpuset
from numaguard.lint.numa.topology import Topology

# policy_options.go option names
FULL_PCPUS_ONLY = "full-pcpus-only"
DISTRIBUTE_CPUS_ACROSS_NUMA = "distribute-cpus-across-numa"
ALIGN_BY_SOCKET = "align-by-socket"
DISTRIBUTE_CPUS_ACROSS_CORES = "distribute-cpus-across-cores"
STRICT_CPU_RESERVATION = "strict-cpu-reservation"
PREFER_ALIGN_CPUS_BY_UNCORECACHE = "prefer-align-cpus-by-uncorecache"

ALPHA_OPTIONS = frozenset({ALIGN_BY_SOCKET, DISTRIBUTE_CPUS_ACROSS_CORES})
BETA_OPTIONS = frozenset({STRICT_CPU_RESERVATION, DISTRIBUTE_CPUS_ACROSS_NUMA,
                          PREFER_ALIGN_CPUS_BY_UNCORECACHE})
STABLE_OPTIONS = frozenset({FULL_PCPUS_ONLY})

# container kinds, as updateCPUsToReuse tells them apart
INIT_CONTAINER = "init"
SIDECAR_CONTAINER = "sidecar"          # restartable init container (restartPolicy: Always)
APP_CONTAINER = "app"
_KINDS = (INIT_CONTAINER, SIDECAR_CONTAINER, APP_CONTAINER)

_GO_TRUE = {"1", "t", "T", "TRUE", "true", "True"}
_GO_FALSE = {"0", "f", "F", "FALSE", "false", "False"}


class CPUManagerConfigError(ValueError):
    """A static-policy configuration the kubelet refuses at startup."""


class CPUManagerStateError(ValueError):
    """policy_static.go validateState: a saved CPU Manager state the policy cannot start with."""


class SMTAlignmentError(CPUManagerError):
    """policy_static.go SMTAlignmentError (full-pcpus-only); pod status reason SMTAlignmentError."""

    reason = "SMTAlignmentError"

    def __init__(self, requested_cpus: int, cpus_per_core: int,
                 available_physical_cpus: int = 0, caused_by_physical_cpus: bool = False) -> None:
        if caused_by_physical_cpus:
            message = (f"SMT Alignment Error: not enough free physical CPUs: available physical "
                       f"CPUs = {available_physical_cpus}, requested CPUs = {requested_cpus}, "
                       f"CPUs per core = {cpus_per_core}")
        else:
            message = (f"SMT Alignment Error: requested {requested_cpus} cpus not multiple cpus "
                       f"per core = {cpus_per_core}")
        super().__init__(message)
        self.requested_cpus = requested_cpus
        self.cpus_per_core = cpus_per_core
        self.available_physical_cpus = available_physical_cpus
        self.caused_by_physical_cpus = caused_by_physical_cpus


def _parse_go_bool(name: str, value: object) -> bool:
    if isinstance(value, bool):
        return value
    text = str(value)
    if text in _GO_TRUE:
        return True
    if text in _GO_FALSE:
        return False
    raise CPUManagerConfigError(f'bad value for option "{name}": strconv.ParseBool: parsing '
                                f'"{text}": invalid syntax')


@dataclass(frozen=True)
class StaticPolicyOptions:
    """policy_options.go StaticPolicyOptions."""
    full_pcpus_only: bool = False
    distribute_cpus_across_numa: bool = False
    align_by_socket: bool = False
    distribute_cpus_across_cores: bool = False
    strict_cpu_reservation: bool = False
    prefer_align_cpus_by_uncorecache: bool = False

    @classmethod
    def from_kubelet(cls, options: Mapping[str, object] | None) -> "StaticPolicyOptions":
        """NewStaticPolicyOptions: `cpuManagerPolicyOptions` of a KubeletConfiguration.

        Feature gates are not modelled: every known option is accepted (Kubernetes 1.37
        defaults: the beta gate is on, the alpha gate off — check gates separately).
        """
        fields = {FULL_PCPUS_ONLY: "full_pcpus_only",
                  DISTRIBUTE_CPUS_ACROSS_NUMA: "distribute_cpus_across_numa",
                  ALIGN_BY_SOCKET: "align_by_socket",
                  DISTRIBUTE_CPUS_ACROSS_CORES: "distribute_cpus_across_cores",
                  STRICT_CPU_RESERVATION: "strict_cpu_reservation",
                  PREFER_ALIGN_CPUS_BY_UNCORECACHE: "prefer_align_cpus_by_uncorecache"}
        values: dict[str, bool] = {}
        for name, value in (options or {}).items():
            if name not in fields:
                raise CPUManagerConfigError(f'unknown CPU Manager Policy option: "{name}"')
            values[fields[name]] = _parse_go_bool(name, value)
        opts = cls(**values)
        for a, b, on in ((FULL_PCPUS_ONLY, DISTRIBUTE_CPUS_ACROSS_CORES,
                          opts.full_pcpus_only and opts.distribute_cpus_across_cores),
                         (DISTRIBUTE_CPUS_ACROSS_NUMA, DISTRIBUTE_CPUS_ACROSS_CORES,
                          opts.distribute_cpus_across_numa and opts.distribute_cpus_across_cores),
                         (PREFER_ALIGN_CPUS_BY_UNCORECACHE, DISTRIBUTE_CPUS_ACROSS_CORES,
                          opts.prefer_align_cpus_by_uncorecache
                          and opts.distribute_cpus_across_cores),
                         (PREFER_ALIGN_CPUS_BY_UNCORECACHE, DISTRIBUTE_CPUS_ACROSS_NUMA,
                          opts.prefer_align_cpus_by_uncorecache
                          and opts.distribute_cpus_across_numa)):
            if on:
                raise CPUManagerConfigError(f"static policy options {a} and {b} can not be used "
                                            f"at the same time")
        return opts

    def validate_for(self, topology: "Topology | CPUTopologyIndex",
                     topology_manager_policy: str | None = None) -> None:
        """ValidateStaticPolicyOptions: checks against the machine and the Topology Manager."""
        if not self.align_by_socket:
            return
        if topology_manager_policy == "single-numa-node":
            # (sic) the kubelet's message spells "Topolgy"
            raise CPUManagerConfigError(f"Topolgy manager single-numa-node policy is incompatible "
                                        f"with CPUManager {ALIGN_BY_SOCKET} policy option")
        ix = CPUTopologyIndex.of(topology)
        if ix.num_sockets > ix.num_numa_nodes:
            raise CPUManagerConfigError("Align by socket is not compatible with hardware where "
                                        "number of sockets are more than number of NUMA")


def reserved_cpu_count(kube_reserved_cpu: object = None, system_reserved_cpu: object = None) -> int:
    """cpu_manager.go NewManager: ceil(kubeReserved.cpu + systemReserved.cpu) CPUs.

    Quantities may be strings ("500m", "1") or numbers; None means absent. The static policy
    refuses a zero reservation.
    """
    total = Decimal(0)
    for value in (kube_reserved_cpu, system_reserved_cpu):
        if value is None:
            continue
        from numaguard.lint.k8s.quantity import parse_quantity
        total += value if isinstance(value, Decimal) else parse_quantity(value)   # inf is refused
    if total <= 0:
        raise CPUManagerConfigError("[cpumanager] the static policy requires systemreserved.cpu "
                                    "+ kubereserved.cpu to be greater than zero")
    # resource.Quantity.MilliValue rounds up to whole millicores before the ceiling
    millis = math.ceil(total * 1000)
    return math.ceil(Decimal(millis) / 1000)


class StaticPolicy:
    """The static policy of one node: reserved CPUs, shared pool, exclusive assignments."""

    def __init__(self, topology: Topology, *, num_reserved_cpus: int | None = None,
                 reserved_system_cpus: "str | Iterable[int] | None" = None,
                 kube_reserved_cpu: object = None, system_reserved_cpu: object = None,
                 options: "StaticPolicyOptions | Mapping[str, object] | None" = None,
                 topology_manager_policy: str | None = None) -> None:
        """NewStaticPolicy plus the kubelet's reservation arithmetic.

        Reserved CPUs come from, in this order: `reserved_system_cpus` (a cpuset string or ids;
        it also sets the reservation size, as --reserved-cpus overrides the cpu reservations),
        else `num_reserved_cpus`, else ceil(kube_reserved_cpu + system_reserved_cpu) CPUs picked
        by takeByTopology with this policy's own options.
        """
        self.topology = topology
        self.index = CPUTopologyIndex.of(topology)
        if not isinstance(options, StaticPolicyOptions):
            options = StaticPolicyOptions.from_kubelet(options)
        options.validate_for(self.index, topology_manager_policy)
        self.options = options
        all_cpus = self.index.all_cpus

        explicit: frozenset[int] = frozenset()
        if reserved_system_cpus is not None:
            if isinstance(reserved_system_cpus, str):
                try:
                    explicit = parse_cpuset(reserved_system_cpus)
                except CPUSetError as err:
                    raise CPUManagerConfigError(
                        f"reservedSystemCPUs {reserved_system_cpus!r} is not a valid cpuset: "
                        f"{err}") from err
            else:
                explicit = frozenset(reserved_system_cpus)
            unknown = explicit - all_cpus
            if unknown:
                raise CPUManagerConfigError(
                    f'reservedSystemCPUs "{format_cpuset(explicit)}" is not a subset of the '
                    f'node\'s CPUs "{format_cpuset(all_cpus)}": CPUs "{format_cpuset(unknown)}" '
                    f"do not exist")
        if explicit:
            num_reserved = len(explicit)
            reserved = explicit
        else:
            if num_reserved_cpus is None:
                num_reserved_cpus = reserved_cpu_count(kube_reserved_cpu, system_reserved_cpu)
            num_reserved = num_reserved_cpus
            try:
                # "takeByTopology allocates CPUs associated with low-numbered cores"
                reserved = self.take_by_topology(all_cpus, num_reserved)
            except CPUManagerError:
                reserved = frozenset()
        if len(reserved) != num_reserved:
            raise CPUManagerConfigError(
                f"[cpumanager] unable to reserve the required amount of CPUs (size of "
                f"{format_cpuset(reserved)} did not equal {num_reserved})")
        self.reserved: frozenset[int] = frozenset(reserved)
        self.reserved_physical: frozenset[int] = frozenset().union(
            *(self.index.cpus_in_core[self.index.core_of[c]] for c in self.reserved))
        # validateState on an empty state: the shared pool is every CPU (minus the reserved
        # ones with strict-cpu-reservation)
        self.default_cpus: frozenset[int] = (all_cpus - self.reserved
                                             if options.strict_cpu_reservation else all_cpus)
        self.assignments: dict[str, dict[str, frozenset[int]]] = {}
        self.cpus_to_reuse: dict[str, frozenset[int]] = {}

    # --- state ---------------------------------------------------------------------------------
    def load_state(self, default_cpus: Iterable[int],
                   assignments: Mapping[str, Mapping[str, Iterable[int]]] | None = None) -> None:
        """Start from a saved state (the checkpoint after a kubelet restart), validated as
        validateState does (`numaguard.lint.numa.restart.cpu_refusals`, whose first refusal
        is raised); an empty default set with no assignments means "fresh node"."""
        from numaguard.lint.k8s.checkpoints import CPUCheckpoint
        from numaguard.lint.numa.restart import cpu_refusals

        saved = {pod: {name: frozenset(cpus) for name, cpus in containers.items()}
                 for pod, containers in (assignments or {}).items()}
        restored = CPUCheckpoint("v4", "static", frozenset(default_cpus), saved)
        refusals = cpu_refusals(restored, reserved=self.reserved, online=self.index.all_cpus,
                                strict=self.options.strict_cpu_reservation)
        if refusals:
            raise CPUManagerStateError(refusals[0].message)
        if restored.default_cpus:
            self.default_cpus, self.assignments = restored.default_cpus, saved
        else:
            strict = self.options.strict_cpu_reservation
            self.default_cpus = self.index.all_cpus - self.reserved if strict else self.index.all_cpus
            self.assignments = {}

    # --- pools ---------------------------------------------------------------------------------
    @property
    def cpu_group_size(self) -> int:
        return self.index.cpus_per_core

    def allocatable_cpus(self) -> frozenset[int]:
        """GetAllocatableCPUs: every CPU that could ever be exclusive."""
        return self.index.all_cpus - self.reserved

    def available_cpus(self) -> frozenset[int]:
        """GetAvailableCPUs: shared pool minus reserved."""
        return self.default_cpus - self.reserved

    def available_physical_cpus(self) -> frozenset[int]:
        """GetAvailablePhysicalCPUs: shared pool minus reserved CPUs and their siblings."""
        return self.default_cpus - self.reserved_physical

    def get_cpuset(self, pod_uid: str, container: str) -> frozenset[int] | None:
        return self.assignments.get(pod_uid, {}).get(container)

    # --- picking -------------------------------------------------------------------------------
    def take_by_topology(self, available: Iterable[int], num_cpus: int) -> frozenset[int]:
        o = self.options
        return take_by_topology(self.index, available, num_cpus,
                                distribute_cpus_across_numa=o.distribute_cpus_across_numa,
                                distribute_cpus_across_cores=o.distribute_cpus_across_cores,
                                full_pcpus_only=o.full_pcpus_only,
                                prefer_align_cpus_by_uncorecache=o.prefer_align_cpus_by_uncorecache,
                                align_by_socket=o.align_by_socket)

    def aligned_cpus(self, affinity: int, allocatable: frozenset[int]) -> frozenset[int]:
        """getAlignedCPUs: CPUs of the hint's NUMA nodes (whole sockets with align-by-socket)."""
        if self.options.align_by_socket:
            sockets = self.index.sockets_in_numa_mask(affinity)
            return frozenset().union(*(allocatable & self.index.cpus_in_socket[s]
                                       for s in sockets))
        return allocatable & self.index.cpus_in_numa_mask(affinity)

    def allocate_cpus(self, num_cpus: int, affinity: int | None,
                      reusable: Iterable[int] = ()) -> frozenset[int]:
        """allocateCPUs: pick `num_cpus` CPUs, first within the NUMA `affinity` (None = no
        hint), the rest from anywhere; removes them from the shared pool."""
        allocatable = self.available_cpus() | frozenset(reusable)
        result: frozenset[int] = frozenset()
        if affinity is not None:
            aligned = self.aligned_cpus(affinity, allocatable)
            result = self.take_by_topology(aligned, min(num_cpus, len(aligned)))
        # spill outside the hint when the aligned CPUs were not enough
        result = result | self.take_by_topology(allocatable - result, num_cpus - len(result))
        self.default_cpus = self.default_cpus - result
        return result

    # --- hints ---------------------------------------------------------------------------------
    def generate_hints(self, available: Iterable[int], reusable: Iterable[int],
                       request: int) -> list[CPUHint]:
        return generate_cpu_topology_hints(self.index, available, reusable, request,
                                           align_by_socket=self.options.align_by_socket)

    def get_topology_hints(self, pod_uid: str, container: str,
                           requested: int) -> list[CPUHint] | None:
        """GetTopologyHints (container scope). None = no preference; [] = cannot satisfy."""
        if requested == 0:
            return None
        allocated = self.get_cpuset(pod_uid, container)
        if allocated is not None:
            if len(allocated) != requested:
                return []
            return self.generate_hints(allocated, (), requested)
        return self.generate_hints(self.available_cpus(),
                                   self.cpus_to_reuse.get(pod_uid, frozenset()), requested)

    def get_pod_topology_hints(self, pod_uid: str, requested: int,
                               containers: Sequence[tuple[str, int]] = ()) -> list[CPUHint] | None:
        """GetPodTopologyHints (pod scope). `requested` is pod_guaranteed_cpus(...);
        `containers` lists (name, guaranteed CPUs) of init then app containers."""
        if requested == 0:
            return None
        assigned: frozenset[int] = frozenset()
        for name, container_request in containers:
            allocated = self.get_cpuset(pod_uid, name)
            if allocated is None:
                continue
            if len(allocated) != container_request:
                return []
            assigned |= allocated
        if len(assigned) == requested:
            return self.generate_hints(assigned, (), requested)
        reusable = self.cpus_to_reuse.get(pod_uid, frozenset()) | assigned
        return self.generate_hints(self.available_cpus(), reusable, requested)

    # --- allocation ----------------------------------------------------------------------------
    def check_smt_alignment(self, num_cpus: int) -> None:
        """Allocate's full-pcpus-only checks (raise SMTAlignmentError)."""
        if not self.options.full_pcpus_only:
            return
        group = self.cpu_group_size
        if num_cpus % group != 0:
            raise SMTAlignmentError(num_cpus, group)
        # siblings of reserved CPUs are unusable too, else a lone sibling could be handed out
        physical = len(self.available_physical_cpus())
        if num_cpus > physical:
            raise SMTAlignmentError(num_cpus, group, physical, caused_by_physical_cpus=True)

    def allocate(self, pod_uid: str, container: str, num_cpus: int, affinity: int | None = None,
                 kind: str = APP_CONTAINER) -> frozenset[int]:
        """Allocate: exclusive CPUs for one container (empty set: it stays in the shared pool).

        `affinity` is the Topology Manager's merged NUMA mask (None when it gave none). Raises
        SMTAlignmentError / NotEnoughCPUsError (both CPUManagerError, with `.reason`).
        """
        if kind not in _KINDS:
            raise ValueError(f"container kind must be one of {_KINDS}, not {kind!r}")
        if num_cpus == 0:
            return frozenset()
        self.check_smt_alignment(num_cpus)
        existing = self.get_cpuset(pod_uid, container)
        if existing is not None:
            self._update_cpus_to_reuse(pod_uid, kind, existing)
            return existing
        cpus = self.allocate_cpus(num_cpus, affinity, self.cpus_to_reuse.get(pod_uid, frozenset()))
        self.assignments.setdefault(pod_uid, {})[container] = cpus
        self._update_cpus_to_reuse(pod_uid, kind, cpus)
        return cpus

    def _update_cpus_to_reuse(self, pod_uid: str, kind: str, cpus: frozenset[int]) -> None:
        # only the pod being admitted keeps reusable CPUs
        for other in [p for p in self.cpus_to_reuse if p != pod_uid]:
            del self.cpus_to_reuse[other]
        current = self.cpus_to_reuse.get(pod_uid, frozenset())
        if kind == INIT_CONTAINER:
            self.cpus_to_reuse[pod_uid] = current | cpus
        else:      # app containers and sidecars keep their CPUs: nobody else may reuse them
            self.cpus_to_reuse[pod_uid] = current - cpus

    def remove_container(self, pod_uid: str, container: str) -> None:
        """RemoveContainer: give the CPUs back to the shared pool, except those that another
        container of the same pod still holds (reused init-container CPUs)."""
        pod = self.assignments.get(pod_uid, {})
        released = pod.pop(container, None)
        if released is None:
            return
        in_use = frozenset().union(*pod.values())
        if not pod:
            self.assignments.pop(pod_uid, None)
        self.default_cpus = self.default_cpus | (released - in_use)


__all__ = [
    "FULL_PCPUS_ONLY", "DISTRIBUTE_CPUS_ACROSS_NUMA", "ALIGN_BY_SOCKET",
    "DISTRIBUTE_CPUS_ACROSS_CORES", "STRICT_CPU_RESERVATION", "PREFER_ALIGN_CPUS_BY_UNCORECACHE",
    "ALPHA_OPTIONS", "BETA_OPTIONS", "STABLE_OPTIONS", "INIT_CONTAINER", "SIDECAR_CONTAINER",
    "APP_CONTAINER", "CPUManagerConfigError", "CPUManagerStateError", "SMTAlignmentError",
    "StaticPolicyOptions",
    "reserved_cpu_count", "StaticPolicy",
]
