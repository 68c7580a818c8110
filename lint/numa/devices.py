"""The Device Manager as a Topology Manager hint provider: devices per NUMA node, hints,
allocation.

Mirrors `pkg/kubelet/cm/devicemanager/topology_hints.go` (kubernetes/kubernetes, 1.37 dev):

* `GetTopologyHints` (container scope) asks for each device-plugin resource in the
  container's limits; `GetPodTopologyHints` (pod scope) for the pod's limits
  (`getPodDeviceRequest` = component-helpers `PodLimits`: the sidecar-aware aggregate).
* A resource none of whose devices carries NUMA topology gives a nil hint list ("no
  preference"); more requested than available gives an empty list ("cannot be satisfied").
* `generateDeviceTopologyHints`: for every NUMA mask (`bitmask.IterateBitMasks`), the mask is
  a hint when the available devices on its NUMA nodes (plus the reusable ones, which must all
  lie inside it) hold the request; `minAffinitySize` is the narrowest mask whose NUMA nodes
  hold enough devices in total (allocated or not), and exactly the hints of that width are
  preferred. So once devices are taken, a narrow placement may stay possible but no longer be
  "preferred" only if it is wider than what the whole machine could offer.

Devices are counted per NUMA node (the node description lists how many of each resource sit
on each NUMA node); device ids do not matter to these decisions. Allocation
(`manager.go` `devicesToAllocate` / `filterByAffinity`) takes reusable devices first, then
devices on the NUMA nodes of the merged affinity, lowest NUMA id first, then any others.
Device plugins' GetPreferredAllocation is not modelled (it only reorders inside these rules).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from decimal import Decimal
from typing import Iterable, Mapping

from numaguard.lint.numa.bitmask import is_set, iterate_bit_masks, mask_bits, mask_count
from numaguard.lint.numa.merge import TopologyHint

DeviceCounts = dict[int, int]          # NUMA node -> number of devices


def is_device_resource(name: str) -> bool:
    """An extended resource a device plugin can serve: a domain-qualified name outside
    kubernetes.io (`nvidia.com/gpu`, `amd.com/gpu`, `intel.com/sriov_netdevice`)."""
    return "/" in name and not name.split("/", 1)[0].endswith("kubernetes.io") and \
        not name.startswith("requests.")


def device_requests(limits: Mapping[str, Decimal | int]) -> dict[str, int]:
    """The device-plugin resources of a limits map, as whole counts."""
    return {name: int(value) for name, value in limits.items()
            if is_device_resource(name) and int(value) > 0}


def pod_device_requests(spec: Mapping) -> dict[str, int]:
    """getPodDeviceRequest: the pod's aggregate limits (PodLimits, sidecar-aware)."""
    from numaguard.lint.k8s.resources import aggregate_container_limits
    return device_requests(aggregate_container_limits(spec))


@dataclass
class DeviceState:
    """Devices of one node: how many exist and how many are free per NUMA node and resource,
    and the devices each pod holds (per container) so init-container devices can be reused."""

    numa_ids: tuple[int, ...]
    total: dict[str, DeviceCounts]
    free: dict[str, DeviceCounts] = field(default_factory=dict)
    held: dict[str, dict[str, dict[str, DeviceCounts]]] = field(default_factory=dict)
    reusable: dict[str, dict[str, DeviceCounts]] = field(default_factory=dict)

    @classmethod
    def from_counts(cls, numa_ids: Iterable[int], devices: Mapping[str, Mapping[int, int]]) -> "DeviceState":
        ids = tuple(sorted(numa_ids))
        total = {r: {n: int(c) for n, c in per.items() if c} for r, per in devices.items()}
        return cls(ids, total, {r: dict(per) for r, per in total.items()})

    def copy_state(self):
        return ({r: dict(p) for r, p in self.free.items()},
                {u: {c: {r: dict(p) for r, p in rs.items()} for c, rs in cs.items()}
                 for u, cs in self.held.items()},
                {u: {r: dict(p) for r, p in rs.items()} for u, rs in self.reusable.items()})

    def restore_state(self, snapshot) -> None:
        self.free, self.held, self.reusable = snapshot

    # -- hints -----------------------------------------------------------------------------
    def hints(self, requests: Mapping[str, int], uid: str | None = None) -> dict | None:
        """GetTopologyHints / GetPodTopologyHints for one request map: resource -> hints
        (None = no preference, [] = cannot be satisfied). Resources no device plugin serves
        are left out, as `isDevicePluginResource` leaves them out."""
        out: dict[str, list[TopologyHint] | None] = {}
        for resource, request in sorted(requests.items()):
            if resource not in self.total:
                continue
            if not any(self.total[resource].values()):
                out[resource] = None              # no device carries NUMA topology
                continue
            reusable = self.reusable.get(uid, {}).get(resource, {}) if uid else {}
            available = sum(self.free[resource].values()) + sum(reusable.values())
            if available < request:
                out[resource] = []
                continue
            out[resource] = self.generate_hints(resource, self.free[resource], reusable, request)
        return out or None

    def generate_hints(self, resource: str, available: DeviceCounts, reusable: DeviceCounts,
                       request: int) -> list[TopologyHint]:
        """generateDeviceTopologyHints with devices counted per NUMA node."""
        total = self.total[resource]
        min_affinity = len(self.numa_ids)
        found: list[int] = []
        for mask in iterate_bit_masks(self.numa_ids):
            in_mask = sum(c for n, c in total.items() if is_set(mask, n))
            if in_mask >= request and mask_count(mask) < min_affinity:
                min_affinity = mask_count(mask)
            if any(c and not is_set(mask, n) for n, c in reusable.items()):
                continue
            matching = sum(reusable.values()) + sum(c for n, c in available.items() if is_set(mask, n))
            if matching >= request:
                found.append(mask)
        return [TopologyHint(mask, mask_count(mask) == min_affinity) for mask in found]

    # -- allocation ------------------------------------------------------------------------
    def allocate(self, uid: str, container: str, requests: Mapping[str, int],
                 affinity: int | None, kind: str = "app") -> dict[str, DeviceCounts]:
        """Allocate for one container: reusable devices first, then free devices on the
        affinity's NUMA nodes (lowest id first), then elsewhere. Raises DeviceError when the
        node has too few. Init containers' devices become reusable by later containers."""
        taken_all: dict[str, DeviceCounts] = {}
        for resource, request in sorted(requests.items()):
            if resource not in self.total:
                continue
            need = request
            taken: DeviceCounts = {}
            reusable = self.reusable.setdefault(uid, {}).setdefault(resource, {})
            for n in sorted(reusable):
                use = min(reusable[n], need)
                if use:
                    reusable[n] -= use
                    taken[n] = taken.get(n, 0) + use
                    need -= use
            order = [n for n in self.numa_ids if affinity is not None and is_set(affinity, n)]
            order += [n for n in self.numa_ids if n not in order]
            free = self.free[resource]
            for n in order:
                use = min(free.get(n, 0), need)
                if use:
                    free[n] -= use
                    taken[n] = taken.get(n, 0) + use
                    need -= use
            if need:
                raise DeviceError(f"requested number of devices unavailable for {resource}. "
                                  f"Requested: {request}, Available: {request - need}")
            self.held.setdefault(uid, {}).setdefault(container, {})[resource] = dict(taken)
            if kind == "init":
                for n, c in taken.items():
                    reusable[n] = reusable.get(n, 0) + c
            taken_all[resource] = taken
        return taken_all

    def free_total(self, resource: str) -> int:
        return sum(self.free.get(resource, {}).values())

    def capacity(self, resource: str) -> int:
        return sum(self.total.get(resource, {}).values())


class DeviceError(ValueError):
    """The device manager cannot allocate (admission fails as UnexpectedAdmissionError)."""


def describe_counts(counts: Mapping[int, int]) -> str:
    return ", ".join(f"NUMA {n}: {c}" for n, c in sorted(counts.items()))


def hint_masks(hints) -> list[tuple[list[int], bool]]:
    """Hints as ([NUMA ids], preferred) for tests and reports."""
    return [(mask_bits(h.affinity), h.preferred) for h in hints]


__all__ = ["DeviceState", "DeviceError", "is_device_resource", "device_requests",
           "pod_device_requests", "describe_counts", "hint_masks"]
