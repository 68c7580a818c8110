"""The scheduler-plugins NodeResourceTopologyMatch plugin: filter and score on the NUMA zones a
node's NodeResourceTopology publishes, for `numaguard plan --scheduler topology-aware`.

kubernetes-sigs/scheduler-plugins@903da7d pkg/noderesourcetopology:

* filter.go: a BestEffort pod without extended resources passes; the zones are judged only on
  nodes whose Topology Manager policy is single-numa-node (other policies pass every pod).
  Pod scope: the pod's effective request (`PodShape.nrt_requests`) must fit one zone
  (resourcesAvailableInAnyNUMANodes). Container scope: each init container must fit a zone;
  each app container must fit one, and its requests are taken from the lowest-numbered zone
  that fits (the one the kubelet picks) before the next container is judged. A resource is
  judged per zone when a zone lists it (numaresources.go isResourceSetSuitable: for a pod that
  is not Guaranteed, cpu, memory and hugepages always fit); a resource no zone lists fits when
  it is host-level (ephemeral storage, extended resources); one the node's allocatable lacks
  never fits. Unschedulable reasons: "cannot align pod" / "cannot align container".
* score.go with least_allocated.go, most_allocated.go, balanced_allocation.go, least_numa.go:
  a pod that is not Guaranteed scores 100; LeastAllocated (the default strategy,
  apis/config/v1/defaults.go, cpu and memory weight 1, any other resource 1), MostAllocated and
  BalancedAllocation score single-numa-node nodes only (others score 0): per zone, against
  what the zone has available, in whole units (Quantity.Value(): 1500m of cpu is 2), the
  node's score the lowest non-zero zone score (scoreForEachNUMANode); container scope averages
  the containers' scores. BalancedAllocation's variance is gonum's sample variance (n - 1).
  LeastNUMANodes scores every policy: 100 - n * (100 / maxNUMANodes) for the fewest zones n
  that hold the request (zones tried smallest set first, in combin.Combinations order), plus
  half a step when those zones are at the smallest average distance.
* nodeconfig/topologymanager.go: maxNUMANodes 8 unless the NRT says otherwise.

The NRT is assumed current at every placement (the exporter has published what the kubelet
just did); the plugin's own cache and the exporter's update period, which let a burst of pods
race onto one zone, are not modelled.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from itertools import combinations
from typing import Any, Mapping

from numaguard.lint.plan.pods import CPU, MEMORY, PodShape

MAX_NODE_SCORE = 100
DEFAULT_MAX_NUMA_NODES = 8
MAX_DISTANCE = 255
STRATEGIES = ("LeastAllocated", "MostAllocated", "BalancedAllocation", "LeastNUMANodes")
DEFAULT_WEIGHTS = {CPU: 1, MEMORY: 1}


@dataclass(frozen=True)
class Zone:
    """One NUMA zone as published: what is available of each resource (cpu in millicores) and
    the distance to each zone by NUMA id."""

    numa: int
    available: Mapping[str, int]
    costs: Mapping[int, int] = field(default_factory=dict)


@dataclass(frozen=True)
class NodeTopology:
    policy: str
    scope: str
    zones: tuple[Zone, ...]
    allocatable: Mapping[str, int]          # the node's, as NodeInfo has it
    max_numa_nodes: int = DEFAULT_MAX_NUMA_NODES


# util.ResourceList(nodeInfo.GetAllocatable()) always lists these (0 when the node has none)
_ALWAYS_ALLOCATABLE = (CPU, MEMORY, "pods", "ephemeral-storage")


def _native(name: str) -> bool:
    return "/" not in name or name.split("/", 1)[0].endswith("kubernetes.io")


def _host_level(name: str) -> bool:
    return name in ("ephemeral-storage", "storage") or not _native(name)


def _numa_affine(name: str) -> bool:
    return name in (CPU, MEMORY) or name.startswith("hugepages-")


def _suitable(qos: str, name: str, need: int, available: int) -> bool:
    if qos != "Guaranteed" and _numa_affine(name):
        return True
    return available >= need


def _fitting_zones(qos: str, topology: NodeTopology, zones: list[dict], requests: Mapping[str, int]) -> list[int]:
    """resourcesAvailableInAnyNUMANodes: the NUMA ids (ascending) of the zones that hold the
    requests, empty when none does. `zones`: [{"numa": id, resource: available, ...}]."""
    fitting = {z["numa"] for z in zones}
    for name, need in requests.items():
        if not need:
            continue
        if name not in topology.allocatable and name not in _ALWAYS_ALLOCATABLE:
            return []
        listed = [z for z in zones if name in z]
        if not listed and _host_level(name):
            continue
        fitting &= {z["numa"] for z in listed if _suitable(qos, name, need, z[name])}
        if not fitting:
            return []
    return sorted(fitting)


def _zone_maps(topology: NodeTopology) -> list[dict]:
    return [{"numa": z.numa, **z.available} for z in topology.zones]


def _best_effort(shape: PodShape) -> bool:
    non_native = any(not _native(name) for _init, requests in shape.nrt_containers for name in requests)
    return shape.qos == "BestEffort" and not non_native


def filter_reason(shape: PodShape, topology: NodeTopology | None) -> str | None:
    """Filter: None when the node passes, else the plugin's reason."""
    if topology is None or _best_effort(shape) or topology.policy != "single-numa-node":
        return None
    zones = _zone_maps(topology)
    if topology.scope == "pod":
        return None if _fitting_zones(shape.qos, topology, zones, shape.nrt_requests) else "cannot align pod"
    for init, requests in shape.nrt_containers:
        if init and not _fitting_zones(shape.qos, topology, zones, requests):
            return "cannot align init container"
    for init, requests in shape.nrt_containers:
        if init:
            continue
        found = _fitting_zones(shape.qos, topology, zones, requests)
        if not found:
            return "cannot align container"
        zone = next(z for z in zones if z["numa"] == found[0])
        for name, need in requests.items():
            if need and name in zone and not (shape.qos != "Guaranteed" and _numa_affine(name)):
                zone[name] -= need
    return None


# -- scoring -------------------------------------------------------------------------------------

def _value(name: str, amount: int) -> int:
    """Quantity.Value(): whole units, rounded up (cpu is held in millicores here)."""
    return -(-amount // 1000) if name == CPU else amount


def _least(requests: Mapping[str, int], available: Mapping[str, int]) -> int:
    total = weights = 0
    for name, need in requests.items():
        cap, req = _value(name, available.get(name, 0)), _value(name, need)
        score = 0 if cap == 0 or need > available.get(name, 0) else (cap - req) * MAX_NODE_SCORE // cap
        weight = DEFAULT_WEIGHTS.get(name, 1)
        total += score * weight
        weights += weight
    return total // weights if weights else 0


def _most(requests: Mapping[str, int], available: Mapping[str, int]) -> int:
    total = weights = 0
    for name, need in requests.items():
        cap, req = _value(name, available.get(name, 0)), _value(name, need)
        score = 0 if cap == 0 or need > available.get(name, 0) else req * MAX_NODE_SCORE // cap
        weight = DEFAULT_WEIGHTS.get(name, 1)
        total += score * weight
        weights += weight
    return total // weights if weights else 0


def _balanced(requests: Mapping[str, int], available: Mapping[str, int]) -> int:
    fractions = []
    for name, need in requests.items():
        cap = _value(name, available.get(name, 0))
        fraction = 1.0 if cap == 0 else _value(name, need) / cap
        if fraction > 1:
            return 0
        fractions.append(fraction)
    if len(fractions) < 2:
        return MAX_NODE_SCORE            # gonum's sample variance of one value is undefined
    mean = sum(fractions) / len(fractions)
    variance = sum((f - mean) ** 2 for f in fractions) / (len(fractions) - 1)
    return int((1 - variance) * MAX_NODE_SCORE)


_SCORERS = {"LeastAllocated": _least, "MostAllocated": _most, "BalancedAllocation": _balanced}


def _per_zone(requests: Mapping[str, int], topology: NodeTopology, scorer) -> int:
    """scoreForEachNUMANode: the lowest non-zero zone score (0 when all are 0)."""
    lowest = 0
    for zone in topology.zones:
        score = scorer(requests, zone.available)
        if lowest == 0 or (score != 0 and score < lowest):
            lowest = score
    return lowest


def score(shape: PodShape, topology: NodeTopology | None, strategy: str = "LeastAllocated") -> int:
    if shape.qos != "Guaranteed":
        return MAX_NODE_SCORE
    if topology is None:
        return 0
    if strategy == "LeastNUMANodes":
        return _least_numa(shape, topology)
    if topology.policy != "single-numa-node":
        return 0
    scorer = _SCORERS[strategy]
    if topology.scope == "pod":
        return _per_zone(shape.nrt_requests, topology, scorer)
    scores = [_per_zone(requests, topology, scorer) for _init, requests in shape.nrt_containers]
    return int(sum(scores) / len(scores)) if scores else 0


# -- LeastNUMANodes ------------------------------------------------------------------------------

def _only_non_numa(zones: list[dict], requests: Mapping[str, int]) -> bool:
    return not any(name in z for name in requests for z in zones)


def _distance(zones: list[dict], costs: list[Mapping[int, int]], combo: tuple[int, ...]) -> float:
    if not combo:
        return float(MAX_DISTANCE)
    total = sum(costs[a].get(zones[b]["numa"], MAX_DISTANCE) for a in combo for b in combo)
    return total / (len(combo) * len(combo))


def _numa_nodes_required(qos: str, zones: list[dict], costs, requests: Mapping[str, int]):
    """numaNodesRequired: (the zones' positions, at the smallest average distance?) or None."""
    for size in range(1, len(zones) + 1):
        combos = list(combinations(range(len(zones)), size))
        least = min(_distance(zones, costs, c) for c in combos)
        best, best_distance = None, 256.0
        for combo in combos:
            if any(name not in zones[i] for i in combo for name in requests):
                continue
            if all(not need or _suitable(qos, name, need, sum(zones[i][name] for i in combo))
                   for name, need in requests.items()):
                distance = _distance(zones, costs, combo)
                if distance == least:
                    return combo, True
                if distance < best_distance:
                    best, best_distance = combo, distance
        if best is not None:
            return best, False
    return None


def _normalize(count: int, nearest: bool, max_numa: int) -> int:
    step = MAX_NODE_SCORE // max_numa
    result = MAX_NODE_SCORE - count * step
    return result + step // 2 if nearest else result


def _least_numa(shape: PodShape, topology: NodeTopology) -> int:
    zones = _zone_maps(topology)
    costs = [z.costs for z in topology.zones]
    if topology.scope == "pod":
        if _only_non_numa(zones, shape.nrt_requests):
            return MAX_NODE_SCORE
        found = _numa_nodes_required(shape.qos, zones, costs, shape.nrt_requests)
        return 0 if found is None else _normalize(len(found[0]), found[1], topology.max_numa_nodes)
    widest, nearest = 0, True
    for _init, requests in shape.nrt_containers:
        if _only_non_numa(zones, requests):
            continue
        found = _numa_nodes_required(shape.qos, zones, costs, requests)
        if found is None:
            return 0
        combo, close = found
        nearest = nearest and close
        widest = max(widest, len(combo))
        _take(zones, combo, requests)
    return MAX_NODE_SCORE if widest == 0 else _normalize(widest, nearest, topology.max_numa_nodes)


def _take(zones: list[dict], combo: tuple[int, ...], requests: Mapping[str, int]) -> None:
    """subtractFromNUMAs: each resource taken from the combination's zones in order."""
    for name, need in requests.items():
        left = need
        for i in combo:
            if not left:
                break
            if name in zones[i]:
                took = min(left, zones[i][name])
                zones[i][name] -= took
                left -= took


def topology_of(policy: str, scope: str, free_cpus: Mapping[int, int],
                free_memory: Mapping[int, Mapping[str, int]], devices: Mapping[str, Mapping[int, int]],
                distances: Mapping[int, Mapping[int, int]] | None, allocatable: Mapping[str, int]) -> NodeTopology:
    """The NodeResourceTopology an exporter publishes for a node the simulator holds: per NUMA
    node the CPUs still free for exclusive use, the memory and hugepages the Memory Manager
    can still pin, the free devices."""
    zones = []
    for numa in sorted(free_cpus):
        available = {CPU: free_cpus[numa] * 1000, **dict(free_memory.get(numa, {}))}
        for resource, per in devices.items():
            available[resource] = per.get(numa, 0)
        zones.append(Zone(numa, available, dict((distances or {}).get(numa, {}))))
    return NodeTopology(policy, scope, tuple(zones), dict(allocatable))


# nodeconfig/topologymanager.go updateFromPolicies: the deprecated topologyPolicies values
_POLICIES = {"SingleNUMANodePodLevel": ("single-numa-node", "pod"),
             "SingleNUMANodeContainerLevel": ("single-numa-node", "container"),
             "BestEffortPodLevel": ("best-effort", "pod"), "BestEffortContainerLevel": ("best-effort", "container"),
             "RestrictedPodLevel": ("restricted", "pod"), "RestrictedContainerLevel": ("restricted", "container")}
MAX_NUMA_ID = 64                          # pluginhelpers.go maxNUMAId


def _numa_id(name: Any) -> int | None:
    """numanode.NameToID: "node-<n>"."""
    if isinstance(name, str) and name.startswith("node-") and name[5:].isdigit():
        return int(name[5:])
    return None


def topology_from_object(obj: Mapping, allocatable: Mapping[str, int]) -> NodeTopology:
    """What the plugin reads of a NodeResourceTopology object (topology.node.k8s.io/v1alpha2):
    createNUMANodeList (zones of type Node named node-<n>, n at most 64, each resource's
    `available`, the costs by NUMA id) and TopologyManagerFromNodeResourceTopology (defaults
    none/container/8; topologyPolicies[0], then the attributes topologyManagerPolicy,
    topologyManagerScope, topologyManagerMaxNUMANodes)."""
    from numaguard.lint.k8s.quantity import parse_quantity
    from numaguard.lint.plan.pods import to_int

    policy, scope, max_numa = "none", "container", DEFAULT_MAX_NUMA_NODES
    policies = obj.get("topologyPolicies") or []
    if policies and policies[0] in _POLICIES:
        policy, scope = _POLICIES[policies[0]]
    for attr in obj.get("attributes") or ():
        name, value = (attr or {}).get("name"), str((attr or {}).get("value"))
        if name == "topologyManagerScope" and value in ("container", "pod"):
            scope = value
        elif name == "topologyManagerPolicy" and value in ("none", "best-effort", "restricted", "single-numa-node"):
            policy = value
        elif name == "topologyManagerMaxNUMANodes" and value.isdigit() and int(value) > 1:
            max_numa = min(int(value), 1024)
    zones = []
    for zone in obj.get("zones") or ():
        numa = _numa_id((zone or {}).get("name"))
        if (zone or {}).get("type") != "Node" or numa is None or numa > MAX_NUMA_ID:
            continue
        available = {}
        for res in zone.get("resources") or ():
            try:
                available[str(res["name"])] = to_int(str(res["name"]), parse_quantity(str(res.get("available", "0"))))
            except (KeyError, ValueError, ArithmeticError):
                continue
        costs = {_numa_id(c.get("name")): int(c.get("value", 0)) for c in zone.get("costs") or ()
                 if _numa_id(c.get("name")) is not None}
        zones.append(Zone(numa, available, costs))
    return NodeTopology(policy, scope, tuple(zones), dict(allocatable), max_numa)


__all__ = ["Zone", "NodeTopology", "filter_reason", "score", "topology_of", "topology_from_object", "STRATEGIES"]
