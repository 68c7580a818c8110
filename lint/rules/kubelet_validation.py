"""NG220-NG224: the kubelet's own configuration validation around reservations and the managers.

The semantics (what the kubelet refuses or ignores, in its own words) live in
`numaguard.lint.k8s.kubelet_validation`; these rules say it. NG220 and NG222 are start-up
failures of any kubelet; NG221, NG223 and NG224 are settings the kubelet accepts but does not
act on the way they read.
"""
from __future__ import annotations

from typing import Iterator

from numaguard.lint.k8s import kubelet_validation as kv
from numaguard.lint.model import Severity, Violation
from numaguard.lint.rules.base import LintContext, rule


@rule(id="NG220", name="node-allocatable-enforcement-invalid", severity="error", target="kubelet",
      title="enforceNodeAllocatable or its cgroups are refused by the kubelet",
      rationale="""validation.go refuses enforceNodeAllocatable entries it does not know,
      duplicates, "none" together with other entries, a "-reserved" key together with its
      "-reserved-compressible" twin, "system-reserved" without systemReservedCgroup,
      "kube-reserved" without kubeReservedCgroup, and any enforcement while cgroupsPerQOS is
      false; it also refuses systemCgroups without cgroupRoot. Each stops the kubelet at
      start-up ("invalid configuration: ...").""",
      remediation="""Give the cgroup each enforcement names (kubeReservedCgroup: /runtime.slice,
      systemReservedCgroup: /system.slice, created beforehand), or drop the enforcement and keep
      the default ["pods"]; keep cgroupsPerQOS true.""")
def node_allocatable_enforcement_invalid(kc: dict, ctx: LintContext) -> Iterator[Violation]:
    for problem in kv.node_allocatable_problems(kc):
        yield Violation(problem.path, f"the kubelet refuses to start: {problem.message}")


@rule(id="NG221", name="reserved-cpus-override", severity="info", target="kubelet",
      title="reservedSystemCPUs replaces kubeReserved.cpu and systemReserved.cpu",
      rationale="""When reservedSystemCPUs is set the kubelet deletes kubeReserved.cpu and sets
      systemReserved.cpu to the number of CPUs in the set before it computes node allocatable
      (cmd/kubelet/app/server.go: "Option --reserved-cpus is specified, it will overwrite the cpu
      setting in KubeReserved and SystemReserved"). The cpu values written next to it do nothing,
      and the node's allocatable cpu is capacity minus the size of the set.""",
      remediation="""Drop kubeReserved.cpu and systemReserved.cpu, and size reservedSystemCPUs for
      everything the system needs.""")
def reserved_cpus_override(kc: dict, ctx: LintContext) -> Iterator[Violation]:
    override = kv.reserved_cpus_override(kc)
    if override is None:
        return
    for field, value in override.dropped:
        now = (f"replaces it with {override.reserved_cpus}" if field == "systemReserved"
               else "deletes it")
        yield Violation((field, "cpu"),
                        f"{field}.cpu {value!r} is ignored: reservedSystemCPUs is set, so the kubelet "
                        f"{now} and reserves the {override.reserved_cpus} CPU(s) of "
                        f"reservedSystemCPUs for node allocatable")


@rule(id="NG222", name="reserved-memory-invalid", severity="error", target="kubelet",
      title="reservedMemory is refused, or ignored without the Static memory policy",
      rationale="""validation_reserved_memory.go checks reservedMemory whatever the memory manager
      policy: limit types other than memory and hugepages-<size>, zero values and duplicate
      (NUMA node, type) pairs stop the kubelet. With memoryManagerPolicy None the memory manager
      never reads reservedMemory (memory_manager.go NewManager), so the entries reserve nothing
      per NUMA node. (With Static, NG208 checks the entries and their sum.)""",
      remediation="""Fix or remove the entries named; with memoryManagerPolicy None drop
      reservedMemory or set memoryManagerPolicy: Static if NUMA-pinned memory is wanted.""")
def reserved_memory_invalid(kc: dict, ctx: LintContext) -> Iterator[Violation]:
    problems, ignored = kv.reserved_memory_without_static(kc, ctx.node)
    for problem in problems:
        yield Violation(problem.path, f"the kubelet refuses to start: {problem.message}")
    if ignored and not problems:
        yield Violation(("reservedMemory",), "reservedMemory is ignored: memoryManagerPolicy is not "
                                             "Static, and only the Static memory manager reads it",
                        severity=Severity.INFO)


@rule(id="NG223", name="cgroups-per-qos-off", severity="warning", target="kubelet",
      title="cgroupsPerQOS is false: no pod cgroups hold a pod-level budget",
      rationale="""With cgroupsPerQOS false the kubelet uses the no-op pod container manager
      (container_manager_linux.go NewPodContainerManager): no QoS or pod cgroups are created, so
      pod-level spec.resources limits have no cgroup to be enforced in, and containers of a
      pod-level-managed pod are not bounded by the pod budget.""",
      remediation="""Keep cgroupsPerQOS: true (the default).""")
def cgroups_per_qos_off(kc: dict, ctx: LintContext) -> Iterator[Violation]:
    if kc.get("cgroupsPerQOS") is False:
        yield Violation(("cgroupsPerQOS",), "cgroupsPerQOS is false: the kubelet creates no pod "
                                            "cgroups, so pod-level spec.resources limits are not "
                                            "enforced as a pod budget")


@rule(id="NG224", name="topology-scope-without-policy", severity="info", target="kubelet",
      title="topologyManagerScope pod has no effect with topologyManagerPolicy none",
      rationale="""With topologyManagerPolicy none the Topology Manager uses the none scope
      whatever topologyManagerScope says (topology_manager.go NewManager): no hints are merged
      and the pod's resources are not placed together.""",
      remediation="""Set topologyManagerPolicy to single-numa-node (or restricted) so the pod
      scope takes effect.""")
def topology_scope_without_policy(kc: dict, ctx: LintContext) -> Iterator[Violation]:
    for path in kv.scope_without_policy(kc):
        yield Violation(path, "topologyManagerScope is pod but topologyManagerPolicy is none: the "
                              "Topology Manager runs with the none scope and aligns nothing")


__all__ = ["node_allocatable_enforcement_invalid", "reserved_cpus_override",
           "reserved_memory_invalid", "cgroups_per_qos_off", "topology_scope_without_policy"]
