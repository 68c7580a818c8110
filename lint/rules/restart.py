"""NG408, NG419-NG423: what the kubelet does with its checkpoints the next time it starts.

At start-up the static CPU Manager and the Static Memory Manager check the state they restore
against the machine and the configuration and refuse any difference (`validateState`,
reimplemented in `numaguard.lint.numa.restart`); then the kubelet admits its pods again
(`HandlePodAdditions` runs admission for every pod it is given, running ones included) and the
managers regenerate their hints from what the checkpoint records ("This might happen after a
kubelet restart", cpumanager policy_static.go GetTopologyHints / GetPodTopologyHints). The
checkpoint rules (`numaguard.lint.rules.node`) judge a restored checkpoint with the functions
here; `node inspect` adds NG423, its account of a restart with the configuration it was given
(`numaguard.lint.node.restart`).

Each function returns `(rule, path, message, remediation)` tuples, the path relative to the
checkpoint's root; the rules are registered, with their run check, by `numaguard.lint.rules.node`.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from numaguard.lint.k8s.checkpoint_files import CURRENT, Version
from numaguard.lint.model import Path, Severity
from numaguard.lint.rules.base import Rule

if TYPE_CHECKING:
    from numaguard.lint.k8s.checkpoints import CPUCheckpoint, MemoryCheckpoint
    from numaguard.lint.numa.restart import MemoryMachine

Refused = tuple[Rule, Path, str, "str | None"]

# The article: "Drain the node and follow the official policy-change procedure instead of
# deleting checkpoint files on a live node without a recovery plan."
DRAIN = ("Drain the node (kubectl drain NODE --ignore-daemonsets --delete-emptydir-data), stop the kubelet, move "
         "{file} aside, start it with the intended configuration, uncordon once Ready.")

MEMORY_INCONSISTENT = Rule(
    id="NG408", name="checkpoint-memory-inconsistent", severity=Severity.ERROR, target="run",
    title="The Memory Manager checkpoint's memory tables or blocks do not add up: the kubelet will not start",
    rationale="At start the Static Memory Manager rebuilds the machine state it expects (allocatable = total - "
              "systemReserved, minus the node's hugepages for regular memory; free and reserved from the pods' "
              "memory blocks; one assignment per block and NUMA node) and refuses any difference: \"[memorymanager] "
              "the expected machine state is different from the real one\" (policy_static.go validateState). A "
              "table that does not add up, or blocks that do not account for what the tables reserve, mean a file "
              "edited or written by another tool, and the node stays NotReady at the next kubelet restart.",
    remediation=DRAIN.format(file="/var/lib/kubelet/memory_manager_state"))

CPU_STATE_REFUSED = Rule(
    id="NG419", name="cpu-checkpoint-refused", severity=Severity.ERROR, target="run",
    title="The static CPU Manager policy refuses this cpu_manager_state at start: the kubelet will not start",
    rationale="The static policy checks the restored state when it starts (policy_static.go validateState) and "
              "stops the kubelet (\"Static policy invalid state, please drain node and remove policy state file\") "
              "when the state has assignments but an empty defaultCpuSet, when a reserved CPU is missing from "
              "defaultCpuSet (with strict-cpu-reservation: when one is in it), when a container's exclusive CPUs "
              "overlap defaultCpuSet, or when defaultCpuSet and the assignments (pod-level ones with the "
              "PodLevelResourceManagers gate on) do not cover exactly the machine's CPUs. A reservation changed "
              "without a drain, the option or the gate turned on or off, or a CPU offlined is found only when the "
              "node goes NotReady.",
    remediation=DRAIN.format(file="/var/lib/kubelet/cpu_manager_state"))

MEMORY_MACHINE_CHANGED = Rule(
    id="NG420", name="memory-machine-state-changed", severity=Severity.ERROR, target="run",
    title="The Memory Manager checkpoint's machine state differs from the machine or the reservations: the kubelet "
          "will not start",
    rationale="memory_manager_state records, per NUMA node and for memory and each hugepage size, the total, the "
              "systemReserved part (reservedMemory), allocatable and free. The Static policy rebuilds that state "
              "from the machine (/sys/devices/system/node: MemTotal, nr_hugepages) and the configured "
              "reservedMemory at every start and refuses any difference: \"[memorymanager] the expected machine "
              "state is different from the real one\" (policy_static.go validateState). A reservation changed "
              "without a drain (reservedMemory, which must equal kubeReserved + systemReserved + the hard eviction "
              "threshold), hugepages allocated or freed, or memory replaced or failed is found only when the node "
              "goes NotReady.",
    remediation=DRAIN.format(file="/var/lib/kubelet/memory_manager_state"))

MEMORY_STATE_REFUSED = Rule(
    id="NG421", name="memory-checkpoint-refused", severity=Severity.ERROR, target="run",
    title="The Static Memory Manager refuses this memory_manager_state's assignments at start: the kubelet will not "
          "start",
    rationale="Before comparing machine states, the Static policy replays every recorded memory block "
              "(updateExpectedMachineState) and stops the kubelet when the machine state is empty while pods hold "
              "memory, or when a block names a NUMA node or a memory resource the state does not have "
              "(\"[memorymanager] (pod: P, container: C) the memory assignment uses the NUMA that does not exist\"): "
              "a file from another machine, or edited.",
    remediation=DRAIN.format(file="/var/lib/kubelet/memory_manager_state"))

REJECTED_AT_RESTART = Rule(
    id="NG422", name="pod-rejected-at-restart", severity=Severity.ERROR, target="run",
    title="A running pod's recorded CPUs or memory span more NUMA nodes than single-numa-node allows: the kubelet "
          "rejects it at its next restart",
    rationale="A restarted kubelet admits its pods again (kubelet.go HandlePodAdditions) and the managers "
              "regenerate each pod's topology hints from the CPUs and memory blocks the checkpoint records for it "
              "(\"This might happen after a kubelet restart\", policy_static.go GetTopologyHints). Recorded "
              "resources on two NUMA nodes give hints spanning both, which the Topology Manager's single-numa-node "
              "policy refuses: the running pod is rejected (TopologyAffinityError) and its containers stopped. It "
              "happens when the topology policy or scope changed to single-numa-node or pod while the pod ran.",
    remediation="Recreate the pod on a drained node (kubectl drain, then uncordon) before restarting the kubelet "
                "with single-numa-node, or keep the previous Topology Manager policy until the pod is gone.")

RESTART_PREDICTION = Rule(
    id="NG423", name="restart-outcome", severity=Severity.INFO, target="node",
    title="What restarting the kubelet with this configuration does to the node and its running pods (node inspect)",
    rationale="The article: \"CPU and memory manager checkpoints make casual in-place policy changes risky\". "
              "numaguard node inspect compares the configuration it is given with the checkpoints the node has now "
              "and says whether the kubelet starts with it and what happens to the running pods' exclusive CPUs "
              "and memory: kept (restored from the checkpoint), rejected at re-admission, or running unmanaged "
              "while the kubelet does not start.",
    remediation="Act on the errors the same run reports (each with its fix); when the restart is safe, restart "
                "the kubelet and run node inspect again.")


def state_refusals(kind: str, checkpoint: "CPUCheckpoint | MemoryCheckpoint", *, kubelet_config: dict | None,
                   topology: Any = None, machine: "MemoryMachine | None" = None,
                   version: Version = CURRENT) -> list[Refused]:
    """NG408 and NG419-NG421 for a checkpoint the kubelet restores, judged against the
    configuration (None: nothing to judge; a policy other than the static one: validateState
    never runs, NG402 says why it does not start). `topology`: the node's CPUs (the reserved
    set, the coverage check); `machine`: the Memory Manager's view of the machine itself
    (None: its totals are not compared)."""
    from numaguard.lint.k8s import kubelet as k

    if kubelet_config is None:
        return []
    pod_level = k.gate_enabled(kubelet_config, "PodLevelResourceManagers", version)
    if kind == "cpu":
        if checkpoint.policy != "static" or k.cpu_manager_policy(kubelet_config)[0] != "static":
            return []
        return _cpu(checkpoint, kubelet_config, topology, pod_level)
    if checkpoint.policy != "Static" or k.memory_manager_policy(kubelet_config)[0] != "Static":
        return []
    return _memory(checkpoint, kubelet_config, machine, pod_level)


def _cpu(cp: "CPUCheckpoint", kc: dict, topology: Any, pod_level: bool) -> list[Refused]:
    from numaguard.lint.numa.restart import cpu_refusals

    reserved, strict = static_reservation(kc, topology)
    online = frozenset(c.id for c in topology.cpus) if topology is not None else None
    return [(CPU_STATE_REFUSED, cp.field_root + r.path, f"the kubelet will not start: {r.message} ({r.detail})", None)
            for r in cpu_refusals(cp, reserved=reserved, online=online, strict=strict, pod_level=pod_level)]


def static_reservation(kc: dict, topology: Any) -> tuple[frozenset[int] | None, bool]:
    """(the static policy's reserved CPUs, strict-cpu-reservation): reservedSystemCPUs, else
    ceil(kubeReserved + systemReserved cpu) CPUs picked by takeByTopology, which needs the
    topology (None when unknown, or when the configuration is refused: the kubelet rules say why)."""
    from numaguard.lint.k8s import kubelet as k
    from numaguard.lint.k8s.cpuset import CPUSetError

    strict = bool(k.cpu_manager_options(kc).get("strict-cpu-reservation"))
    if topology is None:
        try:
            return k.reserved_system_cpus(kc), strict
        except CPUSetError:
            return None, strict
    from numaguard.lint.numa.admission import static_cpu_policy
    from numaguard.lint.numa.cpu_assignment import CPUManagerError
    from numaguard.lint.numa.cpus import CPUManagerConfigError

    try:
        policy = static_cpu_policy(topology, kc)
    except (CPUManagerConfigError, CPUManagerError, ValueError):
        return None, strict
    return policy.reserved, policy.options.strict_cpu_reservation


def _memory(cp: "MemoryCheckpoint", kc: dict, machine: "MemoryMachine | None", pod_level: bool) -> list[Refused]:
    from numaguard.lint.numa.memory import reserved_memory_from_config
    from numaguard.lint.numa.restart import ASSIGNMENT, MACHINE, memory_refusals

    try:
        reserved = reserved_memory_from_config(kc.get("reservedMemory"))
    except (ValueError, KeyError, TypeError, AttributeError):
        return []                                  # refused as configuration (NG208, NG222)
    rule_of = {MACHINE: MEMORY_MACHINE_CHANGED, ASSIGNMENT: MEMORY_STATE_REFUSED}
    out = []
    for r in memory_refusals(cp, machine=machine, reserved=reserved, pod_level=pod_level):
        message = f"the kubelet will not start: {r.message}: {r.detail}" if r.kind != ASSIGNMENT else \
            f"the kubelet will not start: {r.message} ({r.detail})"
        out.append((rule_of.get(r.kind, MEMORY_INCONSISTENT), cp.field_root + r.path, message, None))
    return out


def readmission_rejections(kind: str, checkpoint: "CPUCheckpoint | MemoryCheckpoint", *,
                           kubelet_config: dict | None, topology: Any = None) -> list[Refused]:
    """NG422: the pods whose recorded CPUs or memory span NUMA nodes, when the configuration's
    Topology Manager policy is single-numa-node (per pod with scope pod, per container else)."""
    from numaguard.lint.k8s import kubelet as k

    if kubelet_config is None or k.topology_manager_policy(kubelet_config)[0] != "single-numa-node":
        return []
    policy = k.cpu_manager_policy if kind == "cpu" else k.memory_manager_policy
    if checkpoint.policy != policy(kubelet_config)[0]:
        return []                                  # the kubelet does not start (NG402): no pod is admitted
    pod_scope = k.topology_manager_scope(kubelet_config)[0] == "pod"
    holders = _cpu_numa(checkpoint, topology) if kind == "cpu" else _memory_numa(checkpoint)
    what = "CPUs" if kind == "cpu" else "memory"
    out = []
    for pod, entries in sorted(holders.items()):
        if pod_scope:       # the pod's hint merges everything recorded for it
            path = next((p for p, _, _ in entries if p[0] == "entries"), entries[0][0])[:2]
            entries = [(path, f"pod {pod}", set().union(*(nodes for _, _, nodes in entries)))]
        for path, label, nodes in entries:
            if len(nodes) > 1:
                out.append((REJECTED_AT_RESTART, checkpoint.field_root + path,
                            f"{label} holds {what} on NUMA nodes {', '.join(map(str, sorted(nodes)))}: at its next "
                            "restart the kubelet admits the pod again from these, and the Topology Manager policy "
                            "single-numa-node rejects it (TopologyAffinityError), stopping the running pod", None))
    return out


def _cpu_numa(cp: "CPUCheckpoint", topology: Any) -> dict[str, list[tuple[Path, str, set[int]]]]:
    if topology is None:
        return {}
    numa_of = {c.id: c.numa for c in topology.cpus}
    out: dict[str, list] = {}
    for pod, cpus in cp.pods.items():
        out.setdefault(pod, []).append((("podEntries", pod), f"pod {pod}", {numa_of[c] for c in cpus if c in numa_of}))
    for pod, by_name in cp.containers.items():
        for name, cpus in sorted(by_name.items()):
            out.setdefault(pod, []).append((("entries", pod, name), f"container {name} of pod {pod}",
                                            {numa_of[c] for c in cpus if c in numa_of}))
    return out


def _memory_numa(cp: "MemoryCheckpoint") -> dict[str, list[tuple[Path, str, set[int]]]]:
    out: dict[str, list] = {}
    for pod, blocks in cp.pods.items():
        out.setdefault(pod, []).append((("podEntries", pod), f"pod {pod}", {n for b in blocks for n in b.numa_nodes}))
    for pod, by_name in cp.containers.items():
        for name, blocks in sorted(by_name.items()):
            out.setdefault(pod, []).append((("entries", pod, name), f"container {name} of pod {pod}",
                                            {n for b in blocks for n in b.numa_nodes}))
    return out
