"""The kubelet's admission of one pod on one node: Topology Manager scope + CPU and Memory
Managers, classic pods and KEP-5526 pods with pod-level resources.

This module only orchestrates; every algorithm lives in its own stage and is called from here:
hint merge and policies (`numaguard.lint.numa.merge`), CPU hints / picking / SMT checks
(`numaguard.lint.numa.cpus.StaticPolicy`), memory hints and allocation (`numaguard.lint.numa.memory`), pod
semantics (QoS, defaulting, the KEP-5526 budget and its rejections: `numaguard.lint.k8s.resources`).

Flow, as in `pkg/kubelet/cm/topologymanager/scope*.go` (kubernetes/kubernetes, 1.37 dev, read
with the PodLevelResourceManagers code in place):

* policy `none` -> scope none (`scope_none.go`): no hints, no rejection by the Topology
  Manager; every container is still allocated, one by one, without an affinity.
* scope `container` (`scope_container.go`): per container (init first) hints -> merge ->
  admit -> Allocate, so later containers see earlier allocations.
* scope `pod` (`scope_pod.go` Admit): with the PodLevelResourceManagers gate on and pod-level
  resources set, `admitUsingPodResources`: pod hints (CPU: the pod-level whole-CPU request,
  memory: pod-level memory + hugepages; an impossible pod budget gives an empty hint list), one
  merge, a rejection carries "Pod Scope pod with pod-level resources failed admission under
  pod-scope topology manager"; then each provider's AllocatePod:
  `cpumanager/policy_static.go` AllocatePod - validatePodScopeResources
  (EmptyPodSharedPoolError), enforceSMTAlignment on the pod total, one CPU "bubble"
  (allocateCPUs with the pod's hint), exclusive slices for qualifying containers carved from
  the bubble (init containers from bubble - sidecars, app containers consuming the pod shared
  pool), the rest = the pod shared pool; `memorymanager/policy_static.go` AllocatePod - the
  same validation, then the memory bubble placed like a container's memory.
  Otherwise `admitUsingContainerResources`: classic pod-scope hints and per-container Allocate.
* Errors map to the pod status as `pkg/kubelet/cm/admission` GetPodAdmitResult does: typed
  errors keep their reason (TopologyAffinityError, SMTAlignmentError, EmptyPodSharedPoolError),
  anything else is "UnexpectedAdmissionError" / "Allocate failed due to ..., which is
  unexpected". The kubelet's status message is "Pod was rejected: <message>" (kubelet.go
  rejectPod).
* After the resource managers, the kubelet's predicate admit handler
  (`pkg/kubelet/lifecycle/predicate.go`) checks the node's allocatable cpu, memory and pods
  against what admitted pods request: "OutOfcpu" / "OutOfmemory" / "OutOfpods". A pod larger
  than the node is always rejected with a reason, never an exception.

Gates off: with PodLevelResources on but PodLevelResourceManagers off, the managers skip pods
that set pod-level resources (no hints, no exclusive CPUs, no pinned memory): admitted without
alignment, and `Placement.notes` says so. With PodLevelResources off the kubelet's
PodLevelResources admit handler rejects such a pod ("PodLevelResourcesNotSupported").

`admit` changes the `NodeState` only when the pod is admitted.

Known simplifications (documented, deliberate):

* Under scope container / none, a container of a pod-level pod that gets no memory slice is
  not passed to the Memory Manager's Allocate. The code read (memorymanager policy_static.go
  Allocate) would call getDefaultHint / isAffinityViolatingNUMAAllocations with an empty
  request, which can fail; we treat it as a no-op until an e2e result says otherwise.
* The pod bubble's memory is placed through `memory.py`'s Allocate for a one-container spec
  (the same steps as AllocatePod's bubble); KEP-5526 container slices inside the bubble are
  bookkeeping only in the kubelet (no extra NUMA placement), so nothing else is recorded.
* Device plugins are modelled only when the node description lists devices per NUMA node
  (`numaguard.lint.numa.devices`, the Device Manager's hint generation and allocation): their
  hints are merged with the CPU and memory hints, in container scope per container and in pod
  scope for the pod's aggregate limits (`GetPodTopologyHints`; for KEP-5526 pods too, an
  assumption until the kubelet code for pod-level hint gathering names its providers), and
  the predicate handler counts them ("OutOf<resource>"). Without devices in the node
  description a pod that asks for devices is simulated on CPU and memory alone, and
  `Placement.unmodelled_devices` names what was left out. DRA is not modelled.
"""
from __future__ import annotations

import copy
from dataclasses import dataclass, field, replace
from decimal import Decimal
from typing import Any, Mapping

from numaguard.lint.numa.bitmask import mask_bits
from numaguard.lint.numa.merge import (POLICY_NONE, POLICY_RESTRICTED, POLICY_SINGLE_NUMA_NODE,
                             TOPOLOGY_AFFINITY_ERROR_MESSAGE, TOPOLOGY_AFFINITY_ERROR_REASON,
                             TopologyHint, TopologyManagerError, as_topology_hint,
                             new_topology_manager_policy)
from numaguard.lint.numa.topology import Topology

# pkg/kubelet/cm/admission/errors.go
UNEXPECTED_ADMISSION_ERROR = "UnexpectedAdmissionError"
EMPTY_POD_SHARED_POOL_ERROR = "EmptyPodSharedPoolError"
SMT_ALIGNMENT_ERROR = "SMTAlignmentError"
TOPOLOGY_AFFINITY_ERROR = TOPOLOGY_AFFINITY_ERROR_REASON
POD_LEVEL_RESOURCES_NOT_SUPPORTED = "PodLevelResourcesNotSupported"
# scope_pod.go admitUsingPodResources -> NewPodLevelTopologyAffinityError(msg): "Pod Scope " + msg
POD_SCOPE_AFFINITY_MESSAGE = ("Pod Scope pod with pod-level resources failed admission under "
                              "pod-scope topology manager")
REJECTED_PREFIX = "Pod was rejected: "          # kubelet.go rejectPod
DEFAULT_MAX_PODS = 110                          # KubeletConfiguration maxPods default
KUBERNETES_VERSION = (1, 37)

GATE_POD_LEVEL_RESOURCES = "PodLevelResources"
GATE_POD_LEVEL_RESOURCE_MANAGERS = "PodLevelResourceManagers"


class KubeletStartupError(ValueError):
    """The node's KubeletConfiguration would stop the kubelet (no admission is possible)."""


# ------------------------------------------------------------------------------ results

@dataclass
class Placement:
    """What the kubelet decided for one pod.

    `cpus`: {"exclusive": {container: [cpu ids]}, "podShared": [cpu ids]} (podShared is the
    KEP-5526 pod shared pool; classic pods' shared containers use the node's shared pool).
    `memory`: {numa id: {resource: bytes}} pinned by the Memory Manager.
    `numa_nodes`: NUMA nodes the pod's exclusive CPUs and pinned memory landed on (else the
    merged hint's nodes). `preferred`: the merged hint's preference (None: no merge happened).
    """

    admitted: bool
    reason: str | None = None
    message: str | None = None
    numa_nodes: list[int] = field(default_factory=list)
    preferred: bool | None = None
    cpus: dict = field(default_factory=lambda: {"exclusive": {}, "podShared": []})
    memory: dict[int, dict[str, int]] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    hint: list[int] | None = None           # the merged NUMA affinity, None = any / no merge
    devices: dict[str, dict[int, int]] = field(default_factory=dict)   # resource -> NUMA -> count
    unmodelled_devices: list[str] = field(default_factory=list)        # asked for, not modelled
    pod_level: bool = False                 # allocated the KEP-5526 way (bubble + slices)
    bubble: list[int] = field(default_factory=list)

    def taken_cpus(self) -> set[int]:  # noqa: D401
        """Every CPU this pod holds exclusively (its slices, the bubble, its shared pool)."""
        out = set(self.bubble) | set(self.cpus["podShared"])
        for ids in self.cpus["exclusive"].values():
            out |= set(ids)
        return out

    def as_dict(self) -> dict:
        return {"admitted": self.admitted, "reason": self.reason, "message": self.message,
                "numaNodes": list(self.numa_nodes), "preferred": self.preferred,
                "cpus": {"exclusive": {k: list(v) for k, v in self.cpus["exclusive"].items()},
                         "podShared": list(self.cpus["podShared"])},
                "memory": {str(n): dict(r) for n, r in sorted(self.memory.items())},
                **({"devices": {r: {str(n): c for n, c in sorted(p.items())}
                                for r, p in sorted(self.devices.items())}} if self.devices else {}),
                "notes": list(self.notes)}


class _Rejected(Exception):
    def __init__(self, reason: str, message: str) -> None:
        super().__init__(message)
        self.reason = reason
        self.message = message


# ------------------------------------------------------------------------------ node state

@dataclass
class NodeState:
    """One node as its kubelet sees it while admitting pods.

    Built with `NodeState.from_node(node)`; `admit` mutates it. `cpu` is the CPU Manager's
    static policy (None with `cpuManagerPolicy: none`), `memory` the Memory Manager's Static
    policy (None with `None`), `policy` the Topology Manager policy object.
    """

    topology: Topology
    kubelet_config: dict
    name: str
    cpu: Any
    memory: Any
    policy: Any
    policy_name: str
    scope: str
    gates: dict[str, bool]
    allocatable: dict[str, int]                 # cpu (millicores), memory (bytes), pods
    used: dict[str, int] = field(default_factory=lambda: {"cpu": 0, "memory": 0, "pods": 0})
    placements: dict[str, Placement] = field(default_factory=dict)
    devices: Any = None                         # numaguard.lint.numa.devices.DeviceState, or None

    # -- construction ------------------------------------------------------------------------
    @classmethod
    def from_node(cls, node: Any, kubelet_config: dict | None = None,
                  kubernetes_version: tuple[int, int] = KUBERNETES_VERSION) -> "NodeState":
        """An empty node. `kubelet_config` overrides `node.kubelet_config`; none at all means
        the kubelet's defaults (every manager `none`). Raises KubeletStartupError when the
        configuration would stop the kubelet (e.g. static policy without reserved CPUs)."""
        kc = kubelet_config if kubelet_config is not None else (node.kubelet_config or {})
        return build_state(node.topology, kc, name=getattr(node, "name", "node"),
                           kubernetes_version=kubernetes_version)

    def copy(self) -> "NodeState":
        """An independent copy: what admission changes (CPU and memory assignments, devices,
        counts, placements) is copied; the topology, configuration and policies are shared.
        Copying an empty state is ~10x cheaper than building it (`build_state`), which is why
        a lint run builds the node's empty state once and the NUMA rules take copies."""
        fresh = replace(self, allocatable=dict(self.allocatable), used=dict(self.used),
                        placements=dict(self.placements))
        if self.cpu is not None:
            fresh.cpu = copy.copy(self.cpu)
            fresh.cpu.assignments = {pod: dict(c) for pod, c in self.cpu.assignments.items()}
            fresh.cpu.cpus_to_reuse = dict(self.cpu.cpus_to_reuse)
        if self.memory is not None:
            machine, reusable = _memory_snapshot(self.memory)
            fresh.memory = replace(self.memory, machine_state=machine,
                                   init_containers_reusable_memory=reusable,
                                   assignments={pod: {c: list(b) for c, b in cs.items()}
                                                for pod, cs in self.memory.assignments.items()})
        if self.devices is not None:
            fresh.devices = copy.copy(self.devices)
            fresh.devices.restore_state(self.devices.copy_state())
        return fresh

    @property
    def holds_nothing(self) -> bool:
        """No pod holds anything here: the state is as `build_state` made it."""
        return (not self.placements and not any(self.used.values())
                and (self.cpu is None or not self.cpu.assignments)
                and (self.memory is None or not self.memory.assignments)
                and (self.devices is None or not self.devices.held))

    @property
    def reserved_cpus(self) -> frozenset[int]:
        return self.cpu.reserved if self.cpu is not None else frozenset()

    @property
    def pinned_scope(self) -> str:
        """The Topology Manager scope actually in force ("none" with policy none)."""
        return "none" if self.policy_name == POLICY_NONE else self.scope

    def free_cpus_by_numa(self) -> dict[int, int]:
        """CPUs still available for exclusive use, per NUMA node (all CPUs without static)."""
        numa_of = {c.id: c.numa for c in self.topology.cpus}
        out = {n: 0 for n in self.topology.numa_ids}
        free = self.cpu.available_cpus() if self.cpu is not None else \
            frozenset(numa_of) - self._taken_by_pods()
        for cpu in free:
            out[numa_of[cpu]] += 1
        return out

    def free_memory_by_numa(self) -> dict[int, dict[str, int]]:
        """Bytes the Memory Manager can still pin, per NUMA node and resource (capacity minus
        reservedMemory when the Memory Manager is off)."""
        if self.memory is not None:
            return {n: {r: t.free for r, t in s.memory.items()}
                    for n, s in sorted(self.memory.machine_state.items())}
        from numaguard.lint.numa.memory import default_machine_state, reserved_memory_from_config
        state = default_machine_state(self.topology,
                                      reserved_memory_from_config(
                                          self.kubelet_config.get("reservedMemory")))
        return {n: {r: t.free for r, t in s.memory.items()} for n, s in sorted(state.items())}

    def _taken_by_pods(self) -> set[int]:
        out: set[int] = set()
        for p in self.placements.values():
            out |= p.taken_cpus()
        return out


def build_state(topology: Topology, kc: dict, *, name: str = "node",
                kubernetes_version: tuple[int, int] = KUBERNETES_VERSION) -> NodeState:
    """NodeState for a topology and a KubeletConfiguration dict (see NodeState.from_node)."""
    from numaguard.lint.k8s import kubelet as kcfg
    from numaguard.lint.numa.cpu_assignment import CPUManagerError
    from numaguard.lint.numa.cpus import CPUManagerConfigError
    from numaguard.lint.numa.memory import (MemoryManagerError, StaticMemoryPolicy,
                                  reserved_memory_from_config)

    kc = kc if isinstance(kc, dict) else {}
    gates = kcfg.effective_gates(kc, kubernetes_version)
    cpu_policy, _ = kcfg.cpu_manager_policy(kc)
    memory_policy, _ = kcfg.memory_manager_policy(kc)
    policy_name, _ = kcfg.topology_manager_policy(kc)
    scope, _ = kcfg.topology_manager_scope(kc)
    if cpu_policy not in kcfg.CPU_MANAGER_POLICIES:
        raise KubeletStartupError(f'cpuManagerPolicy: unknown policy: "{cpu_policy}"')
    if memory_policy not in ("None", "Static"):
        raise KubeletStartupError(f'memoryManagerPolicy: policy "{memory_policy}" is not '
                                  "available on linux (use None or Static)")
    if scope not in kcfg.TOPOLOGY_MANAGER_SCOPES:
        raise KubeletStartupError(f'topologyManagerScope: "{scope}" must be container or pod')
    try:
        policy = new_topology_manager_policy(
            policy_name, topology, _string_map(kc.get("topologyManagerPolicyOptions")),
            alpha_enabled=gates.get("TopologyManagerPolicyAlphaOptions", False),
            beta_enabled=gates.get("TopologyManagerPolicyBetaOptions", True))
    except TopologyManagerError as exc:
        raise KubeletStartupError(f"topology manager: {exc}") from None

    cpu = None
    if cpu_policy == "static":
        try:
            cpu = static_cpu_policy(topology, kc)
        except (CPUManagerConfigError, CPUManagerError, ValueError) as exc:
            raise KubeletStartupError(f"cpu manager: {exc}") from None
    memory = None
    if memory_policy == "Static":
        try:
            memory = StaticMemoryPolicy.from_topology(
                topology, reserved_memory_from_config(kc.get("reservedMemory")))
        except (MemoryManagerError, ValueError, KeyError, TypeError) as exc:
            raise KubeletStartupError(f"memory manager: {exc}") from None
    from numaguard.lint.numa.devices import DeviceState
    devices = DeviceState.from_counts(topology.numa_ids, topology.devices) if topology.devices \
        else None
    return NodeState(topology=topology, kubelet_config=kc, name=name, cpu=cpu, memory=memory,
                     devices=devices,
                     policy=policy, policy_name=policy_name, scope=scope,
                     gates={GATE_POD_LEVEL_RESOURCES: gates.get(GATE_POD_LEVEL_RESOURCES, True),
                            GATE_POD_LEVEL_RESOURCE_MANAGERS:
                                gates.get(GATE_POD_LEVEL_RESOURCE_MANAGERS, False)},
                     allocatable=_allocatable(topology, kc, cpu))


def static_cpu_policy(topology: Topology, kc: dict):
    """The static CPU Manager policy a KubeletConfiguration gives this machine
    (`numaguard.lint.numa.cpus.StaticPolicy`: its reserved CPUs, options, empty state); raises
    what NewStaticPolicy refuses (CPUManagerConfigError, CPUManagerError, ValueError)."""
    from numaguard.lint.k8s import kubelet as kcfg
    from numaguard.lint.numa.cpus import StaticPolicy

    kube_reserved = kc.get("kubeReserved") if isinstance(kc.get("kubeReserved"), dict) else {}
    system_reserved = kc.get("systemReserved") if isinstance(kc.get("systemReserved"), dict) else {}
    return StaticPolicy(topology, reserved_system_cpus=kc.get("reservedSystemCPUs") or None,
                        kube_reserved_cpu=kube_reserved.get("cpu"), system_reserved_cpu=system_reserved.get("cpu"),
                        options=_string_map(kc.get("cpuManagerPolicyOptions")),
                        topology_manager_policy=kcfg.topology_manager_policy(kc)[0])


def empty_state_or_none(topology: Topology, kc: Any, *, name: str = "node") -> NodeState | None:
    """`build_state`, or None when there is nothing to simulate: no KubeletConfiguration, or
    one that would stop the kubelet (the kubelet rules say why)."""
    if not isinstance(kc, dict):
        return None
    try:
        return build_state(topology, kc, name=name)
    except KubeletStartupError:
        return None


def _string_map(value: Any) -> dict[str, str]:
    if not isinstance(value, dict):
        return {}
    return {str(k): (("true" if v else "false") if isinstance(v, bool) else str(v))
            for k, v in value.items()}


def _allocatable(topology: Topology, kc: dict, cpu: Any) -> dict[str, int]:
    """Node allocatable as the predicate admit handler compares it: capacity minus
    kubeReserved, systemReserved (reservedSystemCPUs replaces the cpu reservations,
    cmd/kubelet server.go) and, for memory, the hard eviction threshold."""
    from numaguard.lint.k8s import kubelet as kcfg
    capacity_memory = sum(n.memory for n in topology.numa_nodes)
    hugepages = sum(p * c for n in topology.numa_nodes for p, c in n.hugepages.items())
    try:
        reserved_cpu = kcfg.reserved_cpu_amount(kc)
    except Exception:       # malformed reservations are the kubelet rules' business
        reserved_cpu = Decimal(0)
    reserved_memory = Decimal(0)
    for field_name in ("kubeReserved", "systemReserved"):
        reserved_memory += kcfg.reserved_quantity(kc, field_name, "memory")
    try:
        eviction = kcfg.memory_eviction(kc).resolve(capacity_memory) or Decimal(0)
    except Exception:
        eviction = Decimal(0)
    max_pods = kc.get("maxPods")
    return {"cpu": max(int(topology.num_cpus * 1000 - reserved_cpu * 1000), 0),
            "memory": max(int(capacity_memory - hugepages - reserved_memory - eviction), 0),
            "pods": max_pods if isinstance(max_pods, int) and max_pods >= 0 else DEFAULT_MAX_PODS}


# ------------------------------------------------------------------------------ snapshots

def _snapshot(state: NodeState, uid: str):
    cpu = state.cpu
    memory = state.memory
    cpu_part = None
    if cpu is not None:
        cpu_part = (cpu.default_cpus, dict(cpu.cpus_to_reuse))
    memory_part = _memory_snapshot(memory) if memory is not None else None
    devices_part = state.devices.copy_state() if state.devices is not None else None
    return cpu_part, memory_part, dict(state.used), devices_part


def _memory_snapshot(memory):
    """The Memory Manager's machine state and reusable init-container memory, copied."""
    machine = {n: replace(s, memory={r: replace(t) for r, t in s.memory.items()},
                          cells=list(s.cells)) for n, s in memory.machine_state.items()}
    return machine, copy.deepcopy(memory.init_containers_reusable_memory)


def _restore(state: NodeState, uid: str, snap) -> None:
    cpu_part, memory_part, used, devices_part = snap
    if devices_part is not None:
        state.devices.restore_state(devices_part)
    if cpu_part is not None:
        state.cpu.default_cpus, state.cpu.cpus_to_reuse = cpu_part
        state.cpu.assignments.pop(uid, None)
    if memory_part is not None:
        state.memory.machine_state, state.memory.init_containers_reusable_memory = memory_part
        state.memory.assignments.pop(uid, None)
    state.used = used


# ------------------------------------------------------------------------------ admission

def pod_spec_of(pod: Mapping) -> dict:
    """The pod spec of a Pod object, or the mapping itself when it already is a spec."""
    if isinstance(pod, Mapping) and isinstance(pod.get("spec"), Mapping) \
            and "containers" not in pod:
        return dict(pod["spec"])
    return dict(pod) if isinstance(pod, Mapping) else {}


def admit(state: NodeState, pod: Mapping, name: str | None = None, *,
          analysis: Any = None) -> Placement:
    """Admit one pod (a Pod object or a bare pod spec) the way the node's kubelet would.

    Returns the Placement; the state changes only when `placement.admitted` is True.
    `name` identifies the pod in the state (default: metadata.name); reusing a name is fine.
    `analysis` is the pod's `PodAnalysis` when the caller already has it (the replicas of one
    controller share it: `numaguard audit` admits thousands of identical specs).
    """
    spec = pod_spec_of(pod)
    if name is None:
        meta = pod.get("metadata") if isinstance(pod, Mapping) else None
        name = (meta or {}).get("name") if isinstance(meta, Mapping) else None
        name = str(name or "pod")
    uid = name
    k = 1
    while uid in state.placements:
        k += 1
        uid = f"{name}#{k}"
    from numaguard.lint.k8s.pod_budget import PodAnalysis
    analysis = analysis if analysis is not None else PodAnalysis(spec)
    snap = _snapshot(state, uid)
    result = Placement(admitted=True)
    try:
        _admit(state, uid, result, analysis)
        _check_predicates(state, spec, analysis)
    except _Rejected as rej:
        _restore(state, uid, snap)
        return Placement(admitted=False, reason=rej.reason,
                         message=REJECTED_PREFIX + rej.message, preferred=result.preferred,
                         hint=result.hint, notes=result.notes)
    _finish(state, result, snap)
    state.placements[uid] = result
    return result


def _finish(state: NodeState, result: Placement, snap) -> None:
    """Memory per NUMA node = what this pod took from the Memory Manager's free memory."""
    memory_part = snap[1]
    if memory_part is not None:
        before = memory_part[0]
        for n, s in state.memory.machine_state.items():
            for res, table in s.memory.items():
                took = before[n].memory[res].free - table.free
                if took > 0:
                    result.memory.setdefault(n, {})[res] = took
    numa_of = {c.id: c.numa for c in state.topology.cpus}
    nodes = {numa_of[c] for c in result.taken_cpus()} | set(result.memory)
    nodes |= {n for per in result.devices.values() for n, c in per.items() if c}
    if not nodes and result.hint is not None:
        nodes = set(result.hint)
    result.numa_nodes = sorted(nodes)


def _admit(state: NodeState, uid: str, result: Placement, analysis: Any) -> None:
    pod_level = analysis.pod_level.is_set
    devices = _device_plan(state, analysis, result)
    if pod_level and not state.gates[GATE_POD_LEVEL_RESOURCES]:
        # kubelet lifecycle admit handler for pod-level resources
        raise _Rejected(POD_LEVEL_RESOURCES_NOT_SUPPORTED,
                        "PodLevelResources feature gate is disabled")
    managers_on = state.gates[GATE_POD_LEVEL_RESOURCE_MANAGERS]
    if pod_level and not managers_on:
        result.notes.append("PodLevelResourceManagers gate is off: the CPU and Memory Managers "
                            "skip pods with pod-level resources; admitted without alignment "
                            "(no exclusive CPUs, no NUMA-pinned memory)")
        _allocate_devices(state, uid, devices, None, result)
        return
    if not analysis.qos.guaranteed and (state.cpu is not None or state.memory is not None):
        result.notes.append(f"QoS class {analysis.qos.qos_class} ({analysis.qos.reason}): "
                            "nothing exclusive, the pod runs in the node's shared pool")
    if state.cpu is None:
        result.notes.append("cpuManagerPolicy is none: no exclusive CPUs")
    if state.memory is None:
        result.notes.append("memoryManagerPolicy is None: memory is not pinned to NUMA nodes")
    if state.policy_name == POLICY_NONE:
        result.notes.append("topologyManagerPolicy is none: resources are allocated without "
                            "NUMA alignment")
    containers = managed_containers(analysis, pod_level)
    scope = state.pinned_scope
    if scope == "pod" and pod_level:
        _admit_pod_resources(state, analysis, uid, containers, result, devices)
        return
    if pod_level:
        result.notes.append(f"topology scope is {scope}: spec.resources is ignored for "
                            "placement; qualifying containers get exclusive slices from the "
                            "node's pool, the others share the node's pool")
    if scope == "pod":
        _admit_pod_classic(state, analysis, uid, containers, result, devices)
    else:
        _admit_per_container(state, uid, containers, result, merge=(scope == "container"),
                             spec=None if pod_level else analysis.spec, devices=devices)


# -- devices ----------------------------------------------------------------------------------

def _device_plan(state: NodeState, analysis, result: Placement) -> dict[str, tuple[str, dict[str, int]]]:
    """Container name -> (kind, device-plugin requests from its limits), init containers
    first. Empty when the pod asks for no devices or the node description lists none (then
    `result.unmodelled_devices` says which devices were left out)."""
    from numaguard.lint.numa.devices import device_requests
    plan = {c.name: (c.kind, device_requests(c.limits)) for c in analysis.containers}
    plan = {name: entry for name, entry in plan.items() if entry[1]}
    if plan and state.devices is None:
        result.unmodelled_devices = sorted({r for _, reqs in plan.values() for r in reqs})
        result.notes.append(f"devices not modelled: the node description lists no devices per "
                            f"NUMA node, so {', '.join(result.unmodelled_devices)} "
                            f"{'is' if len(result.unmodelled_devices) == 1 else 'are'} left out "
                            f"of the NUMA placement")
        return {}
    return plan


def _device_hints(state: NodeState, requests: Mapping[str, int], uid: str):
    if state.devices is None or not requests:
        return None
    return state.devices.hints(requests, uid)


def _allocate_devices(state: NodeState, uid: str, plan: Mapping[str, tuple[str, dict[str, int]]],
                      affinity: int | None, result: Placement, only: str | None = None) -> None:
    """Device Manager Allocate for the containers of `plan` (or only the one named)."""
    from numaguard.lint.numa.devices import DeviceError
    if state.devices is None:
        return
    for name, (kind, requests) in plan.items():
        if only is not None and name != only:
            continue
        try:
            taken = state.devices.allocate(uid, name, requests, affinity, kind)
        except DeviceError as exc:
            raise _Rejected(UNEXPECTED_ADMISSION_ERROR, f"Allocate failed due to {exc}, which is "
                                                        "unexpected") from None
        for resource, per_numa in taken.items():
            mine = result.devices.setdefault(resource, {})
            for n, count in per_numa.items():
                mine[n] = mine.get(n, 0) + count


@dataclass(frozen=True)
class ManagedContainer:
    """One container as the CPU and Memory Managers see it."""

    name: str
    kind: str                     # init | sidecar | app
    cpus: int                     # exclusive CPUs the CPU Manager gives it (guaranteedCPUs)
    memory: dict[str, int]        # bytes the Memory Manager pins for it
    has_cpu_request: bool


def managed_containers(analysis, pod_level: bool) -> list[ManagedContainer]:
    """Per container (init first): guaranteedCPUs and the memory request the managers see.

    Classic pods: cpumanager guaranteedCPUs (pod Guaranteed + whole CPU request) and the
    memory manager's container requests (pod Guaranteed). Pods with pod-level resources and
    the gate on: the KEP-5526 slice eligibility of `numaguard.lint.k8s.resources` (ContainerPlacement)."""
    from numaguard.lint.numa.cpu_hints import guaranteed_cpus
    from numaguard.lint.k8s.resources import CPU, is_hugepages
    out = []
    if pod_level:
        for p in analysis.budget.placements:
            c = p.container
            out.append(ManagedContainer(c.name, c.kind, p.exclusive_cpus,
                                  {k: int(v) for k, v in p.exclusive_memory.items()},
                                  CPU in c.requests))
        return out
    guaranteed = analysis.qos.guaranteed
    for c in analysis.containers:
        cpu = c.requests.get(CPU)
        cpus = guaranteed_cpus(cpu, guaranteed) if cpu is not None and cpu > 0 else 0
        memory = {k: int(v) for k, v in c.requests.items()
                  if guaranteed and (k == "memory" or is_hugepages(k))}
        out.append(ManagedContainer(c.name, c.kind, cpus, memory, cpu is not None))
    return out


# -- hints --------------------------------------------------------------------------------

def _cpu_hints(hints) -> dict | None:
    if hints is None:
        return None
    return {"cpu": [as_topology_hint(h) for h in hints]}


def _merge(state: NodeState, providers: list, result: Placement) -> TopologyHint:
    best, admitted = state.policy.merge(providers)
    result.preferred = best.preferred
    result.hint = None if best.affinity is None else mask_bits(best.affinity)
    if not admitted:
        raise _Rejected(TOPOLOGY_AFFINITY_ERROR, TOPOLOGY_AFFINITY_ERROR_MESSAGE)
    return best


# -- allocation helpers ----------------------------------------------------------------------

def _cpu_error(exc: Exception) -> _Rejected:
    from numaguard.lint.numa.cpus import SMTAlignmentError
    if isinstance(exc, SMTAlignmentError):
        return _Rejected(SMT_ALIGNMENT_ERROR, str(exc))
    return _Rejected(UNEXPECTED_ADMISSION_ERROR, f"Allocate failed due to {exc}, which is "
                                                 "unexpected")


def _memory_error(exc: Exception) -> _Rejected:
    message = getattr(exc, "admission_message", None) or \
        f"Allocate failed due to {exc}, which is unexpected"
    return _Rejected(UNEXPECTED_ADMISSION_ERROR, message)


def _one_container_spec(name: str, memory: Mapping[str, int]) -> dict:
    """A one-container Guaranteed pod spec holding `memory`: memory.py's Allocate for one
    container runs the same steps as the memory manager's AllocatePod for the pod's bubble
    (getDefaultHint, extendTopologyManagerHint, isAffinityViolatingNUMAAllocations,
    updateMachineState), so the bubble is placed through memory.py's public API."""
    amounts = {"cpu": "1", **{k: str(int(v)) for k, v in memory.items()}}
    return {"containers": [{"name": name, "resources": {"requests": dict(amounts),
                                                        "limits": dict(amounts)}}]}


def _allocate_memory(state: NodeState, uid: str, container: str, memory: Mapping[str, int],
                     hint: TopologyHint, spec: dict | None = None) -> None:
    """Memory Manager Allocate for one container of a classic pod (`spec` = the pod's spec,
    so init-container memory reuse is kept), or for `memory` alone (KEP-5526 slices and the
    pod bubble, `spec` None)."""
    from numaguard.lint.numa.memory import MemoryManagerError
    if state.memory is None or not memory:
        return
    try:
        state.memory.allocate(uid, spec if spec is not None else
                              _one_container_spec(container, memory), container, hint)
    except (MemoryManagerError, ValueError, KeyError) as exc:
        raise _memory_error(exc) from None


def _allocate_cpus(state: NodeState, uid: str, c: ManagedContainer, affinity: int | None,
                   result: Placement) -> None:
    from numaguard.lint.numa.cpu_assignment import CPUManagerError
    if state.cpu is None or c.cpus == 0:
        return
    try:
        cpus = state.cpu.allocate(uid, c.name, c.cpus, affinity, kind=c.kind)
    except CPUManagerError as exc:
        raise _cpu_error(exc) from None
    result.cpus["exclusive"][c.name] = sorted(cpus)


# -- scope none / container -------------------------------------------------------------------

def _admit_per_container(state: NodeState, uid: str, containers: list[ManagedContainer],
                         result: Placement, merge: bool, spec: dict | None,
                         devices: Mapping[str, tuple[str, dict[str, int]]] = {}) -> None:
    """scope_container.go (merge=True) or scope_none.go (merge=False): per container, init
    containers first, hints -> merge -> admit -> Allocate."""
    any_preferred = None
    for c in containers:
        hint = TopologyHint(None, False)
        if merge:
            providers: list = []
            if state.cpu is not None:
                providers.append(_cpu_hints(state.cpu.get_topology_hints(uid, c.name, c.cpus)))
            if state.memory is not None:
                providers.append(state.memory.calculate_hints(c.memory, uid)
                                 if c.memory else None)
            if c.name in devices:
                providers.append(_device_hints(state, devices[c.name][1], uid))
            hint = _merge(state, providers, result)
            any_preferred = hint.preferred if any_preferred is None else \
                any_preferred and hint.preferred
        _allocate_cpus(state, uid, c, hint.affinity, result)
        _allocate_memory(state, uid, c.name, c.memory, hint, spec)
        _allocate_devices(state, uid, devices, hint.affinity, result, only=c.name)
    if merge:
        result.preferred = any_preferred
        result.hint = None


# -- scope pod, classic ---------------------------------------------------------------------

def _admit_pod_classic(state: NodeState, analysis, uid: str, containers: list[ManagedContainer],
                       result: Placement, devices: Mapping = {}) -> None:
    """scope_pod.go admitUsingContainerResources: one merge of the pod's totals, then every
    container allocated inside the same affinity."""
    from numaguard.lint.numa.cpu_hints import pod_guaranteed_cpus
    providers: list = []
    if state.cpu is not None:
        inits = [(c.cpus, c.kind == "sidecar") for c in containers
                 if c.kind != "app" and c.has_cpu_request]
        apps = [c.cpus for c in containers if c.kind == "app" and c.has_cpu_request]
        total = pod_guaranteed_cpus(inits, apps)
        providers.append(_cpu_hints(state.cpu.get_pod_topology_hints(
            uid, total, [(c.name, c.cpus) for c in containers])))
    if state.memory is not None:
        providers.append(state.memory.get_pod_topology_hints(uid, analysis.spec))
    if devices:
        from numaguard.lint.numa.devices import pod_device_requests
        providers.append(_device_hints(state, pod_device_requests(analysis.spec), uid))
    hint = _merge(state, providers, result)
    for c in containers:
        _allocate_cpus(state, uid, c, hint.affinity, result)
        _allocate_memory(state, uid, c.name, c.memory, hint, analysis.spec)
    _allocate_devices(state, uid, devices, hint.affinity, result)


# -- scope pod, KEP-5526 ---------------------------------------------------------------------

def _admit_pod_resources(state: NodeState, analysis, uid: str, containers: list[ManagedContainer],
                         result: Placement, devices: Mapping = {}) -> None:
    """scope_pod.go admitUsingPodResources + the managers' AllocatePod."""
    budget = analysis.budget
    result.pod_level = True
    cpu_rejection = next((r for r in budget.rejections if r.manager == "cpu"), None)
    memory_rejection = next((r for r in budget.rejections if r.manager == "memory"), None)
    total_cpus = budget.cpus
    memory_total = {k: int(v) for k, v in budget.memory.items() if v > 0}
    if budget.managed and total_cpus == 0 and state.cpu is not None:
        from numaguard.lint.k8s.resources import format_quantity
        result.notes.append(f"pod-level cpu request {format_quantity('cpu', budget.cpu_request)} "
                            "is not a whole number "
                            "of CPUs: no CPU bubble, every container shares the node's pool")

    providers: list = []
    if state.cpu is not None:
        if total_cpus == 0:
            providers.append(None)
        elif cpu_rejection is not None:
            providers.append({"cpu": []})     # GetPodTopologyHints: invalid budget
        else:
            providers.append(_cpu_hints(state.cpu.get_pod_topology_hints(uid, total_cpus)))
    if state.memory is not None:
        if not budget.qos.guaranteed or not memory_total:
            providers.append(None)
        elif memory_rejection is not None:
            providers.append({res: [] for res in memory_total})
        else:
            providers.append(state.memory.calculate_hints(memory_total, uid) or None)
    if devices:
        from numaguard.lint.numa.devices import pod_device_requests
        providers.append(_device_hints(state, pod_device_requests(analysis.spec), uid))
    best, admitted = state.policy.merge(providers)
    result.preferred = best.preferred
    result.hint = None if best.affinity is None else mask_bits(best.affinity)
    if not admitted:
        raise _Rejected(TOPOLOGY_AFFINITY_ERROR, POD_SCOPE_AFFINITY_MESSAGE)

    # CPU Manager AllocatePod (hint providers are called in registration order: CPU, memory)
    if state.cpu is not None and total_cpus > 0:
        if cpu_rejection is not None:
            raise _Rejected(EMPTY_POD_SHARED_POOL_ERROR, cpu_rejection.message)
        _allocate_cpu_bubble(state, uid, containers, total_cpus, best.affinity, result)
    # Memory Manager AllocatePod
    if state.memory is not None and budget.qos.guaranteed and memory_total:
        if memory_rejection is not None:
            raise _Rejected(EMPTY_POD_SHARED_POOL_ERROR, memory_rejection.message)
        _allocate_memory(state, uid, "__pod__", memory_total, best)
    _allocate_devices(state, uid, devices, best.affinity, result)


def _allocate_cpu_bubble(state: NodeState, uid: str, containers: list[ManagedContainer], total: int,
                         affinity: int | None, result: Placement) -> None:
    """cpumanager AllocatePod: SMT check on the pod total, the bubble, then the slices."""
    from numaguard.lint.numa.cpu_assignment import CPUManagerError
    cpu = state.cpu
    try:
        cpu.check_smt_alignment(total)
        bubble = cpu.allocate_cpus(total, affinity)
    except CPUManagerError as exc:
        raise _cpu_error(exc) from None
    result.bubble = sorted(bubble)
    exclusive: dict[str, frozenset[int]] = {}
    init_pools: dict[str, frozenset[int]] = {}     # shared regular init containers
    sidecars: frozenset[int] = frozenset()
    try:
        for c in containers:
            if c.kind == "app":
                continue
            if c.cpus > 0:
                # init containers and sidecars: from the bubble minus the sidecars so far
                cset = cpu.take_by_topology(bubble - sidecars, c.cpus)
                exclusive[c.name] = cset
                if c.kind == "sidecar":
                    sidecars = sidecars | cset
            elif c.kind == "init":
                # a shared regular init container runs on the bubble minus the sidecars so far
                init_pools[c.name] = bubble - sidecars
        shared_pool = bubble - sidecars
        for c in containers:
            if c.kind == "app" and c.cpus > 0:
                cset = cpu.take_by_topology(shared_pool, c.cpus)
                exclusive[c.name] = cset
                shared_pool = shared_pool - cset
    except CPUManagerError as exc:
        raise _cpu_error(exc) from None
    # state.SetCPUSet for every container: its slice, or the pod shared pool
    assigned = cpu.assignments.setdefault(uid, {})
    for c in containers:
        assigned[c.name] = exclusive.get(c.name, init_pools.get(c.name, shared_pool))
    result.cpus["exclusive"] = {name: sorted(s) for name, s in exclusive.items()}
    result.cpus["podShared"] = sorted(shared_pool)


# -- the predicate admit handler ---------------------------------------------------------------

def pod_requests(spec: dict, analysis: Any = None) -> dict[str, int]:
    """What the pod asks of node allocatable (component-helpers PodRequests): pod-level
    requests when set, else the sidecar-aware aggregate; cpu in millicores, memory in bytes.
    `analysis`: the spec's PodAnalysis when the caller has it."""
    from numaguard.lint.k8s.pod_budget import PodAnalysis
    analysis = analysis if analysis is not None else PodAnalysis(spec)
    requests = dict(analysis.aggregate_requests)
    if analysis.pod_level.is_set:
        for res in ("cpu", "memory"):
            if res in analysis.pod_level.requests:
                requests[res] = analysis.pod_level.requests[res]
    cpu = requests.get("cpu", Decimal(0))
    return {"cpu": int((cpu * 1000).to_integral_value(rounding="ROUND_CEILING")),
            "memory": int(requests.get("memory", Decimal(0)))}


def _check_predicates(state: NodeState, spec: dict, analysis: Any) -> None:
    """lifecycle/predicate.go: "Node didn't have enough resource: %s, requested: %d, used: %d,
    capacity: %d" with reason "OutOf<resource>"; admitted pods add to `used`."""
    need = pod_requests(spec, analysis)
    need["pods"] = 1
    checked = ["pods", "cpu", "memory"]
    if state.devices is not None:
        from numaguard.lint.numa.devices import pod_device_requests
        for resource, count in sorted(pod_device_requests(spec).items()):
            need[resource] = count
            state.allocatable.setdefault(resource, state.devices.capacity(resource))
            state.used.setdefault(resource, 0)
            checked.append(resource)
    for res in checked:
        if need[res] and state.used[res] + need[res] > state.allocatable[res]:
            raise _Rejected(f"OutOf{res}", f"Node didn't have enough resource: {res}, requested: "
                                           f"{need[res]}, used: {state.used[res]}, capacity: "
                                           f"{state.allocatable[res]}")
    for res in need:
        state.used[res] += need[res]


def alignment_required(state: NodeState) -> bool:
    """Does the Topology Manager reject non-preferred placements (restricted /
    single-numa-node)?"""
    return state.policy_name in (POLICY_RESTRICTED, POLICY_SINGLE_NUMA_NODE)


__all__ = ["NodeState", "Placement", "KubeletStartupError", "admit", "build_state", "empty_state_or_none",
           "pod_spec_of", "pod_requests", "alignment_required", "managed_containers",
           "ManagedContainer",
           "UNEXPECTED_ADMISSION_ERROR", "EMPTY_POD_SHARED_POOL_ERROR", "SMT_ALIGNMENT_ERROR",
           "TOPOLOGY_AFFINITY_ERROR", "POD_SCOPE_AFFINITY_MESSAGE", "REJECTED_PREFIX"]
