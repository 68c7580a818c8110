"""NG201-NG211, NG213: a KubeletConfiguration that cannot run pod-level resource managers.

Each rule gets the raw document (`kc`, already through the NG002 schema check when run by the
engine) and the `LintContext`; paths are relative to the document root. The semantics (gate
tables, defaults, option parsing, reservations) live in `numaguard.lint.k8s.kubelet`; this module only says
what is wrong, in the kubelet's own words where the kubelet has some.
"""
from __future__ import annotations

import difflib
from decimal import Decimal
from typing import Iterator

from numaguard.lint.k8s import kubelet as k
from numaguard.lint.model import Severity, Violation
from numaguard.lint.k8s.quantity import format_bytes
from numaguard.lint.rules.base import LintContext, rule


def _version_text(version) -> str:
    return f"{version[0]}.{version[1]}"


def _gate_path(kc: dict, name: str):
    gates = kc.get("featureGates")
    if isinstance(gates, dict) and name in gates:
        return ("featureGates", name)
    return ("featureGates",) if isinstance(gates, dict) else ()


def _field_path(kc: dict, field: str):
    return (field,) if field in kc else ()


# --------------------------------------------------------------------------------------- scope
# What makes any kubelet refuse to start applies to every KubeletConfiguration; the pool
# requirements (gates, static policies, scope pod, reservations for them) only to the ones
# meant for the managed pool (lint/README.md "Which KubeletConfigurations are pool configurations").
# NG201 is in both tiers: outside the pool it reports only the start-up refusal.
VALIDITY_RULES = frozenset({"NG201", "NG208", "NG209", "NG210", "NG211", "NG212",
                            "NG220", "NG221", "NG222"})   # lint/rules/kubelet_validation.py

# The manager settings whose non-default value shows that a configuration is meant for
# NUMA-managed workloads (defaults from pkg/kubelet/apis/config/v1beta1/defaults.go). Writing
# the default out (`cpuManagerPolicy: none`, as kubeadm's defaulted files do) shows nothing.
_INTENT_FIELDS = (("cpuManagerPolicy", "none"), ("memoryManagerPolicy", "None"),
                  ("topologyManagerPolicy", "none"), ("topologyManagerScope", "container"))


def pool_intent(kc: dict) -> str | None:
    """Why this configuration reads as meant for the pool (a manager policy or scope set to a
    non-default value, or the PodLevelResourceManagers gate turned on), None when it does not."""
    for field, default in _INTENT_FIELDS:
        value = kc.get(field)
        if value not in (None, "", default):
            return f"it sets {field}: {value}"
    if gate_declared(kc):
        return "it enables the PodLevelResourceManagers gate"
    return None


def gate_declared(kc: dict) -> bool:
    """Whether the effective configuration turns on PodLevelResourceManagers: a kubelet meant
    for pod-level resource managers, whichever layer set the gate (the file, a drop-in merged
    over it, `--feature-gates` in a carrier's kubelet flags, a platform's own gate field: every
    carrier merges them into `featureGates` before the rules see it)."""
    return k.explicit_gates(kc).get("PodLevelResourceManagers") is True


def kubelet_declaration(kc: dict, ctx: LintContext, in_declared_pool: bool, selected: bool = False) -> str | None:
    """How a kubelet configuration is declared to be meant for pod-level resource managers (the
    "kubeletConfigurations" tier of `numaguard.lint.model.TIERS`), or None when only what stops
    any kubelet applies to it:

    - "pool": a declared pool holds it (`in_declared_pool`: its kubeletConfigs or `--pool` name
      its file, or it selects the pool's nodes over a base numaguard knows), or a pool selects
      its nodes (`selected`, over a base numaguard does not see) and it shows the intent;
    - "scopeAll": `scope: all`;
    - "gate": it turns on the PodLevelResourceManagers gate (`gate_declared`): the gate says
      what the kubelet is for;
    - "assumed": it shows the intent only through a manager policy or scope (`pool_intent`);
      a static CPU policy alone is also how container-level pinning is configured (a
      PerformanceProfile always sets it), so its pool requirements' default severities are
      lowered to warning, as for a pod only assumed to be managed."""
    if in_declared_pool:
        return "pool"
    if ctx.scope_all:
        return "scopeAll"
    if pool_intent(kc) is None:
        return None
    if selected:
        return "pool"
    return "gate" if gate_declared(kc) else "assumed"


# ---------------------------------------------------------------------------------------------
@rule(id="NG201", name="gate-pod-level-resources", severity="error", target="kubelet",
      fix="sets featureGates.PodLevelResources: true",
      title="PodLevelResources is disabled",
      rationale="""With PodLevelResources off the kubelet ignores spec.resources: pods are sized,
      classed and placed from their containers only, so the pod-level resource managers have
      nothing to work with. Gates that depend on it (PodLevelResourcesFixDefaulting and
      PodLevelResourcesFixKubeletQOSClass in 1.37, InPlacePodLevelResourcesVerticalScaling, and
      PodLevelResourceManagers when enabled) stay on by default, so the kubelet refuses to start:
      "<gate> is enabled, but depends on features that are disabled: [PodLevelResources]"
      (kubernetes issue #140848).""",
      remediation="""Remove `PodLevelResources: false` from featureGates (it is on by default
      since 1.34). If you really need it off, also set every gate named in the message to false.""")
def gate_pod_level_resources(kc: dict, ctx: LintContext) -> Iterator[Violation]:
    if k.explicit_gates(kc).get("PodLevelResources") is not False:
        return
    version = ctx.kubernetes_version
    failures = [(gate, disabled) for gate, disabled in k.dependency_violations(kc, version)
                if "PodLevelResources" in disabled]
    dependents = [gate for gate, _ in failures]
    if not ctx.in_pool and not dependents:
        return                                   # outside the pool only the refusal matters
    message = ("featureGates.PodLevelResources is false: the kubelet ignores pod-level "
               "spec.resources, so pods are not treated as one unit by the CPU, Memory and "
               "Topology Managers")
    if dependents:
        message += (f". On {_version_text(version)} the kubelet also refuses to start: "
                    + "; ".join(f"\"{gate} is enabled, but depends on features that are disabled: "
                                f"{k.go_list(disabled)}\"" for gate, disabled in failures)
                    + f" (set {', '.join(dependents)} to false as well, or better remove "
                      f"PodLevelResources: false)")
    # without a dependent gate left on the kubelet starts: a pool requirement only
    yield Violation(("featureGates", "PodLevelResources"), message, refusal=bool(dependents))


@rule(id="NG202", name="gate-pod-level-resource-managers", severity="error", target="kubelet",
      fix="sets featureGates.PodLevelResourceManagers: true",
      title="PodLevelResourceManagers is not enabled",
      rationale="""The pod-level resource managers (KEP-5526) only act when the kubelet gate
      PodLevelResourceManagers is on. It is alpha (off) in 1.36 and beta but still disabled by
      default in 1.37 (PR #141209). Without it the kubelet admits pods with pod-level resources
      but the CPU and Memory Managers skip them: no exclusive CPUs, no NUMA-aligned memory, the
      "feature appears to do nothing".""",
      remediation="""Add `PodLevelResourceManagers: true` under featureGates (PodLevelResources
      must stay enabled; it is by default).""")
def gate_pod_level_resource_managers(kc: dict, ctx: LintContext) -> Iterator[Violation]:
    version = ctx.kubernetes_version
    if tuple(version) < (1, 36):
        return                                   # the gate does not exist yet: NG213
    if k.gate_enabled(kc, "PodLevelResourceManagers", version):
        return
    spec = k.gate_spec("PodLevelResourceManagers", version)
    default = f"default false in {_version_text(version)}: {spec.stage}, disabled by default"
    if k.explicit_gates(kc).get("PodLevelResourceManagers") is False:
        what = "featureGates.PodLevelResourceManagers is set to false"
    else:
        what = f"featureGates.PodLevelResourceManagers is not set ({default})"
    yield Violation(_gate_path(kc, "PodLevelResourceManagers"),
                    f"{what}: pods with pod-level resources are admitted but the CPU and Memory "
                    f"Managers skip them (no exclusive CPUs, no NUMA-aligned memory)")


@rule(id="NG203", name="cpu-manager-not-static", severity="error", target="kubelet",
      fix="writes a case-only misspelling (Static) as static, when CPUs are already reserved for the system",
      title="cpuManagerPolicy is not static",
      rationale="""Only the CPU Manager's `static` policy hands out exclusive CPUs, for pods and
      for containers. The default is `none`. The value is case-sensitive: "Static" or "STATIC"
      stop the kubelet with `unknown policy: "Static"` (cpu_manager.go).""",
      remediation="""Set `cpuManagerPolicy: static` (lower case) and reserve CPUs for the system
      (NG207). Changing the policy on a node needs a drain and removing
      /var/lib/kubelet/cpu_manager_state.""")
def cpu_manager_not_static(kc: dict, ctx: LintContext) -> Iterator[Violation]:
    policy, explicit = k.cpu_manager_policy(kc)
    if policy == "static":
        return
    if not explicit:
        yield Violation((), "cpuManagerPolicy is not set (default none): no pod or container gets "
                            "exclusive CPUs")
    elif policy.lower() == "static" or policy not in k.CPU_MANAGER_POLICIES:
        hint = " (the value is case-sensitive: use \"static\")" if policy.lower() == "static" else \
            " (valid: none, static)"
        yield Violation(("cpuManagerPolicy",),
                        f"cpuManagerPolicy is {policy!r}: the kubelet refuses to start with "
                        f"unknown policy: \"{policy}\"{hint}", refusal=True)
    else:
        yield Violation(("cpuManagerPolicy",), "cpuManagerPolicy is none: no pod or container gets "
                                               "exclusive CPUs")


@rule(id="NG204", name="memory-manager-not-static", severity="error", target="kubelet",
      fix="sets memoryManagerPolicy: Static and reservedMemory to the node allocatable "
          "reservation",
      title="memoryManagerPolicy is not Static",
      rationale="""Pod-level memory and hugepages alignment comes from the Memory Manager's
      `Static` policy (capital S; the default is `None`). `BestEffort` is Windows-only and not
      supported by pod-level resource managers: a Linux kubelet stops with `policy "BestEffort"
      is not available for platform "linux"`; other spellings stop it with
      `unknown policy: "<x>"` (memory_manager.go).""",
      remediation="""Set `memoryManagerPolicy: Static` and a matching `reservedMemory` (NG208).
      Changing the policy needs a drain and removing /var/lib/kubelet/memory_manager_state.""")
def memory_manager_not_static(kc: dict, ctx: LintContext) -> Iterator[Violation]:
    policy, explicit = k.memory_manager_policy(kc)
    if policy == "Static":
        return
    if not explicit:
        yield Violation((), "memoryManagerPolicy is not set (default None): memory and hugepages "
                            "are not NUMA-aligned for pods or containers")
    elif policy == "BestEffort":
        yield Violation(("memoryManagerPolicy",),
                        "memoryManagerPolicy is BestEffort: that policy is Windows-only (a Linux "
                        "kubelet refuses to start: policy \"BestEffort\" is not available for "
                        "platform \"linux\") and pod-level resource managers do not support it", refusal=True)
    elif policy not in k.MEMORY_MANAGER_POLICIES:
        hint = " (the value is case-sensitive: use \"Static\")" if policy.lower() == "static" else \
            " (valid: None, Static)"
        yield Violation(("memoryManagerPolicy",),
                        f"memoryManagerPolicy is {policy!r}: the kubelet refuses to start with "
                        f"unknown policy: \"{policy}\"{hint}", refusal=True)
    else:
        yield Violation(("memoryManagerPolicy",),
                        "memoryManagerPolicy is None: memory and hugepages are not NUMA-aligned")


@rule(id="NG205", name="topology-scope-not-pod", severity="error", target="kubelet",
      fix="sets topologyManagerScope: pod",
      title="topologyManagerScope is not pod",
      rationale="""With the default `container` scope the Topology Manager aligns each container
      on its own and ignores spec.resources: the pod-level budget is never placed as one NUMA
      "bubble", and a pod that sets only pod-level resources gets no exclusive CPUs at all.""",
      remediation="""Set `topologyManagerScope: pod`.""")
def topology_scope_not_pod(kc: dict, ctx: LintContext) -> Iterator[Violation]:
    scope, explicit = k.topology_manager_scope(kc)
    if scope == "pod":
        return
    if scope not in k.TOPOLOGY_MANAGER_SCOPES:
        yield Violation(("topologyManagerScope",),
                        f"the kubelet refuses to start: invalid configuration: topologyManagerScope "
                        f"(--topology-manager-scope) \"{scope}\" must be one of: \"container\", or "
                        f"\"pod\"", refusal=True)
        return
    what = "topologyManagerScope is not set (default container)" if not explicit else \
        "topologyManagerScope is container"
    yield Violation(_field_path(kc, "topologyManagerScope"),
                    f"{what}: pod-level resources are ignored for placement; each container is "
                    f"aligned separately and containers without their own resources share the node pool")


@rule(id="NG206", name="topology-policy-weak", severity="warning", target="kubelet",
      title="topologyManagerPolicy gives no alignment guarantee",
      rationale="""`none` (the default) does no NUMA alignment; `best-effort` admits a pod even
      when its CPUs and memory end up on different NUMA nodes. `restricted` rejects pods whose
      placement is not the preferred one, and `single-numa-node` only admits pods that fit one
      NUMA node (TopologyAffinityError otherwise): the strongest guarantee.""",
      remediation="""Use `topologyManagerPolicy: single-numa-node` for latency-critical pods, or
      `restricted`; leave headroom in the pool because rejected pods are not rescheduled.""")
def topology_policy_weak(kc: dict, ctx: LintContext) -> Iterator[Violation]:
    policy, explicit = k.topology_manager_policy(kc)
    path = _field_path(kc, "topologyManagerPolicy")
    if policy == "single-numa-node":
        return
    if policy not in k.TOPOLOGY_MANAGER_POLICIES:
        valid = " ".join(f"\"{p}\"" for p in k.TOPOLOGY_MANAGER_POLICIES)
        yield Violation(path, f"the kubelet refuses to start: invalid configuration: "
                              f"topologyManagerPolicy (--topology-manager-policy) \"{policy}\" must "
                              f"be one of: [{valid}]", severity=Severity.ERROR, refusal=True)
    elif policy == "restricted":
        yield Violation(path, "topologyManagerPolicy is restricted: pods whose placement is not the "
                              "preferred NUMA alignment are rejected; single-numa-node is stricter "
                              "(one NUMA node per pod)", severity=Severity.INFO)
    elif policy == "none":
        what = "topologyManagerPolicy is not set (default none)" if not explicit else \
            "topologyManagerPolicy is none"
        yield Violation(path, f"{what}: no NUMA alignment at all; CPUs and memory of a pod may "
                              f"come from different NUMA nodes")
    else:
        yield Violation(path, "topologyManagerPolicy is best-effort: a pod is admitted even when "
                              "its CPUs and memory cannot be aligned on the same NUMA node(s)")


@rule(id="NG207", name="cpu-reservation-missing", severity="error", target="kubelet",
      title="The static CPU Manager policy has no reserved CPUs",
      rationale="""The static policy needs CPUs kept back for the system: reservedSystemCPUs, or
      kubeReserved.cpu + systemReserved.cpu greater than zero (rounded up to whole CPUs). Without
      them the kubelet stops with "[cpumanager] unable to determine reserved CPU resources for
      static policy" (cpu_manager.go).""",
      remediation="""Reserve CPUs, preferably whole cores chosen for the hardware:
      `reservedSystemCPUs: "0,<sibling of 0>"` or `systemReserved: {cpu: "1"}`.""")
def cpu_reservation_missing(kc: dict, ctx: LintContext) -> Iterator[Violation]:
    policy, _ = k.cpu_manager_policy(kc)
    if policy != "static":
        return
    try:
        k.reserved_system_cpus(kc)
    except k.CPUSetError:
        return                                   # NG209 reports the unparsable set
    if k.reserved_cpu_count(kc) > 0:
        return
    parts = []
    for field in ("kubeReserved", "systemReserved"):
        reserved = kc.get(field)
        value = reserved.get("cpu") if isinstance(reserved, dict) else None
        parts.append(f"{field}.cpu {value!r}" if value is not None else f"{field}.cpu not set")
    path = ()
    for field in ("systemReserved", "kubeReserved"):
        if isinstance(kc.get(field), dict) and "cpu" in kc[field]:
            path = (field, "cpu")
    yield Violation(path, f"cpuManagerPolicy is static but no CPUs are reserved (reservedSystemCPUs "
                          f"not set, {', '.join(parts)}): the kubelet refuses to start with "
                          f"\"[cpumanager] unable to determine reserved CPU resources for static "
                          f"policy\"", refusal=True)


@rule(id="NG208", name="reserved-memory-mismatch", severity="error", target="kubelet",
      fix="sets reservedMemory to kubeReserved + systemReserved + evictionHard "
          "memory.available",
      title="reservedMemory does not match the node allocatable reservation",
      rationale="""With memoryManagerPolicy Static the kubelet checks, for memory and every
      hugepages size, that the sum of reservedMemory over NUMA nodes equals kubeReserved +
      systemReserved + the hard eviction threshold (evictionHard memory.available, 100Mi by
      default). Otherwise it refuses to start: `the total amount "<sum>" of type "<type>" is not
      equal to the value "<alloc>" determined by Node Allocatable feature`. Zero values,
      duplicate entries and types other than memory/hugepages-<size> are refused as invalid
      configuration.""",
      remediation="""Make the reservedMemory entries add up to the value in the message (the
      split over NUMA nodes is free); hugepages cannot be reserved through kubeReserved or
      systemReserved, so do not list them in reservedMemory.""")
def reserved_memory_mismatch(kc: dict, ctx: LintContext) -> Iterator[Violation]:
    policy, _ = k.memory_manager_policy(kc)
    if policy != "Static":
        return
    for problem in k.reserved_memory_entry_problems(kc, ctx.node):
        yield Violation(problem.path, f"the kubelet refuses to start: {problem.message}")
    reservation = k.memory_reservation(kc, k.node_memory_capacity(ctx.node))
    path = ("reservedMemory",) if "reservedMemory" in kc else ()
    eviction = reservation.eviction
    eviction_text = ("evictionHard memory.available not set (evictionHard is given without it and "
                     "mergeDefaultEvictionSettings is not true, so it counts as 0)"
                     if eviction.value is None else
                     f"evictionHard memory.available {eviction.value} ({eviction.source})")
    breakdown = (f"kubeReserved.memory {format_bytes(reservation.kube_reserved)} + "
                 f"systemReserved.memory {format_bytes(reservation.system_reserved)} + {eviction_text}")
    total_memory = reservation.reserved.get("memory", Decimal(0))
    if reservation.approximate:
        yield from _approximate_memory_check(reservation, total_memory, breakdown, path)
    elif reservation.required["memory"] == 0 and total_memory == 0:
        yield Violation(path, f"memoryManagerPolicy is Static but nothing reserves memory "
                              f"({breakdown}): the kubelet refuses to start with \"[memorymanager] "
                              f"you should specify the system reserved memory\"")
        return
    for resource, (total, required) in reservation.mismatches().items():
        if resource == "memory":
            snippet = k.reserved_memory_snippet(required, suggested_numa_node(kc, ctx.node))
            message = (f"the kubelet refuses to start: the total amount \"{format_bytes(total)}\" of "
                       f"type \"memory\" is not equal to the value \"{format_bytes(required)}\" "
                       f"determined by Node Allocatable feature. Σ reservedMemory memory = "
                       f"{format_bytes(total)}{'' if 'reservedMemory' in kc else ' (reservedMemory is not set)'}; required = {breakdown} = {format_bytes(required)}")
            if reservation.capacity is not None and eviction.fraction is not None:
                message += f" (percentage of the node description's {format_bytes(Decimal(reservation.capacity))})"
            yield Violation(path, message, remediation=f"Set `{snippet}` (the total may be split "
                                                       f"over NUMA nodes as long as it adds up to "
                                                       f"{format_bytes(required)}).")
        else:
            yield Violation(path, f"the kubelet refuses to start: the total amount "
                                  f"\"{format_bytes(total)}\" of type \"{resource}\" is not equal to "
                                  f"the value \"{format_bytes(required)}\" determined by Node "
                                  f"Allocatable feature: kubeReserved/systemReserved cannot reserve "
                                  f"{resource}, so reservedMemory must not list it",
                            remediation=f"Remove {resource} from every reservedMemory entry.")


def suggested_numa_node(kc: dict, node=None) -> int:
    """The NUMA node to put the suggested reservation on (NG208's message and `numaguard fix`):
    the first one reservedMemory names, unless the node description says the machine lacks it;
    else the node's first NUMA node, else 0. The kubelet compares only the total over NUMA nodes
    and refuses a NUMA node the machine lacks (memorymanager/memory_manager.go,
    validateReservedMemory and getTotalMemoryTypeReserved); node 0 is on every machine (one
    without NUMA is node 0) and is where the system's memory usually lives, next to the
    reserved CPUs 0..n; the Node Tuning Operator reserves there too (components/kubeletconfig)."""
    numa_ids = getattr(getattr(node, "topology", None), "numa_ids", None)
    entries = kc.get("reservedMemory")
    for entry in entries if isinstance(entries, list) else []:
        if isinstance(entry, dict) and isinstance(entry.get("numaNode"), int):
            if numa_ids is None or entry["numaNode"] in numa_ids:
                return entry["numaNode"]
    return min(numa_ids) if numa_ids else 0


def _approximate_memory_check(reservation, total_memory: Decimal, breakdown: str, path) -> Iterator[Violation]:
    """A percentage eviction threshold without node capacity: only a lower bound is known."""
    fixed = reservation.fixed_memory
    fraction = reservation.eviction.fraction
    if total_memory <= fixed and fraction > 0:
        yield Violation(path, f"the kubelet refuses to start: Σ reservedMemory memory = "
                              f"{format_bytes(total_memory)} but the node allocatable reservation is "
                              f"{breakdown}, more than {format_bytes(fixed)} on any node, so \"the "
                              f"total amount ... is not equal to the value ... determined by Node "
                              f"Allocatable feature\"")
        return
    implied = (total_memory - fixed) / fraction if fraction else None
    hint = (f"; the current total only matches a node with {format_bytes(Decimal(int(implied)))} of "
            f"memory" if implied else "")
    yield Violation(path, f"approximate check: {breakdown} depends on the node's memory capacity; "
                          f"without a node description numaguard cannot tell whether Σ "
                          f"reservedMemory memory = {format_bytes(total_memory)} matches{hint}. "
                          f"Give --node, or use an absolute evictionHard memory.available",
                    severity=Severity.WARNING)


@rule(id="NG209", name="reserved-cpus-invalid", severity="error", target="kubelet",
      title="reservedSystemCPUs is invalid or splits cores",
      rationale="""reservedSystemCPUs must parse as a Linux CPU list ("0-1,32-33"); it cannot be
      combined with systemReservedCgroup or kubeReservedCgroup (validation.go), and every CPU must
      exist on the node ("reserved-cpus: ... is not a subset of online-cpus"). Reserving one
      hyperthread of a core leaves its sibling to pods, which then share a physical core with
      system daemons (and full-pcpus-only loses that core).""",
      remediation="""Write the set as a CPU list of CPUs the node has, reserve whole cores (a CPU
      and its hyperthread siblings), and drop systemReservedCgroup/kubeReservedCgroup or the
      explicit set.""")
def reserved_cpus_invalid(kc: dict, ctx: LintContext) -> Iterator[Violation]:
    text = kc.get("reservedSystemCPUs")
    if text is None or text == "":
        return
    path = ("reservedSystemCPUs",)
    try:
        reserved = k.reserved_system_cpus(kc)
    except k.CPUSetError as err:
        yield Violation(path, f"the kubelet refuses to start: invalid configuration: unable to parse "
                              f"reservedSystemCPUs (--reserved-cpus) {text}, error: {err}")
        return
    cgroups = [f for f in ("systemReservedCgroup", "kubeReservedCgroup") if kc.get(f)]
    if cgroups:
        yield Violation(path, f"the kubelet refuses to start: invalid configuration: can't use "
                              f"reservedSystemCPUs (--reserved-cpus) with systemReservedCgroup "
                              f"(--system-reserved-cgroup) or kubeReservedCgroup "
                              f"(--kube-reserved-cgroup) (set: {', '.join(cgroups)})")
    topology = getattr(ctx.node, "topology", None)
    if topology is None or not reserved:
        return
    online = frozenset(topology.cpu_by_id)
    if not reserved <= online:
        yield Violation(path, f"the kubelet refuses to start: reserved-cpus: {k.format_cpuset(reserved)} "
                              f"is not a subset of online-cpus: {k.format_cpuset(online)} (missing: "
                              f"{k.format_cpuset(reserved - online)})")
    split = k.split_cores(reserved, topology)
    if split:
        cores = "; ".join(f"core {core}: reserved {k.format_cpuset(mine)}, left to pods "
                          f"{k.format_cpuset(theirs)}" for core, (mine, theirs) in sorted(split.items()))
        # suggest only CPUs the node has, so the suggestion does not raise the error above
        fixed = (reserved & online) | frozenset().union(*(theirs for _, theirs in split.values()))
        assumed = (f" (by the CPU numbering assumed for node {ctx.node.name}, {topology.assumed_numbering})"
                   if topology.assumed_numbering else "")
        yield Violation(path, f"reservedSystemCPUs {text} splits physical cores between the system "
                              f"and pods ({cores}){assumed}; reserve whole cores, e.g. reservedSystemCPUs: "
                              f"\"{k.format_cpuset(fixed)}\"", severity=Severity.WARNING)


@rule(id="NG210", name="feature-gate-invalid", severity="error", target="kubelet",
      fix="deletes a removed gate set to the value its removal kept (CPUManager: true)",
      title="A feature gate the kubelet refuses",
      rationale="""The kubelet validates featureGates at startup (featuregate.go) and stops on an
      unrecognized gate ("unrecognized feature gate: <name>", e.g. the removed CPUManager,
      MemoryManager and TopologyManager gates), on a gate locked to its default set to the other
      value ("cannot set feature gate <k> to <v>, feature is locked to <default>"), and on an
      enabled gate whose dependencies are disabled ("<feature> is enabled, but depends on
      features that are disabled: [<deps>]").""",
      remediation="""Delete removed or misspelled gates, delete locked gates (their value cannot
      change), and enable the dependencies of enabled gates (or disable the dependent gate).""")
def feature_gate_invalid(kc: dict, ctx: LintContext) -> Iterator[Violation]:
    version = ctx.kubernetes_version
    vtext = _version_text(version)
    locked = k.locked_gates(version)
    reported: set[str] = set()
    for name, value in k.explicit_gates(kc).items():
        path = ("featureGates", name)
        if name == "PodLevelResourceManagers" and tuple(version) < (1, 36):
            continue                              # NG213
        status = k.gate_status(name, version)
        if status == "removed":
            yield Violation(path, f"the kubelet refuses to start: unrecognized feature gate: {name} "
                                  f"({k.removal_note(name, version)}); delete it")
        elif status == "unconfirmed":
            yield Violation(path, f"{name} may not exist in {vtext}: {k.UNCONFIRMED_GATES[name]}; if "
                                  f"the kubelet does not know it, it refuses to start with "
                                  f"\"unrecognized feature gate: {name}\"", severity=Severity.WARNING)
        elif status == "unknown":
            yield _unknown_gate(name, version)
        elif name in locked and value != locked[name]:
            reported.add(name)
            yield Violation(path, f"the kubelet refuses to start: cannot set feature gate {name} to "
                                  f"{str(value).lower()}, feature is locked to "
                                  f"{str(locked[name]).lower()} (in {vtext}); delete the entry")
    for gate, disabled in k.dependency_violations(kc, version):
        if "PodLevelResources" in disabled and k.explicit_gates(kc).get("PodLevelResources") is False:
            continue                              # NG201 quotes this one
        if reported & set(disabled):
            continue                              # already refused as a locked gate
        yield Violation(_gate_path(kc, gate),
                        f"the kubelet refuses to start: {gate} is enabled, but depends on features "
                        f"that are disabled: {k.go_list(disabled)}")


def _unknown_gate(name: str, version) -> Violation:
    path = ("featureGates", name)
    vtext = _version_text(version)
    known_137 = k.known_gate_names((1, 37))
    close = difflib.get_close_matches(name, sorted(known_137 | k.known_gate_names(version)), n=1, cutoff=0.85)
    hint = f" (did you mean {close[0]}?)" if close else ""
    if tuple(version) == (1, 37):
        return Violation(path, f"the kubelet refuses to start: unrecognized feature gate: {name}{hint}")
    if tuple(version) < (1, 37) and name in known_137:
        return Violation(path, f"the kubelet refuses to start: unrecognized feature gate: {name} "
                               f"(it first appears in 1.37; the target version is {vtext})")
    # numaguard's gate list is 1.37's (and 1.36's by its recorded changes): for other versions a
    # name it does not know may be one it was never told about, so it only says so
    outside = tuple(version) != (1, 36)
    return Violation(path, f"{name} is not a gate numaguard knows for {vtext}{hint}"
                           f"{' (it has the gate lists of 1.36 and 1.37)' if outside else ''}; the kubelet "
                           f"refuses unrecognized gates (\"unrecognized feature gate: {name}\")",
                     severity=Severity.INFO if outside else Severity.WARNING)


@rule(id="NG211", name="policy-option-invalid", severity="error", target="kubelet",
      title="A CPU or Topology Manager policy option the kubelet refuses",
      rationale="""cpuManagerPolicyOptions and topologyManagerPolicyOptions are checked when the
      managers start: unknown options ("unknown CPU Manager Policy option"), alpha/beta options
      without their gate ("CPU Manager Policy Alpha-level Options not enabled, but option ...
      provided"), values that strconv.ParseBool rejects ("bad value for option"), mutually
      exclusive options, align-by-socket with the single-numa-node policy, and
      max-allowable-numa-nodes that is not an integer or below 8. Any of these stops the kubelet.""",
      remediation="""Use only the documented options with quoted "true"/"false" values, enable
      CPUManagerPolicyAlphaOptions for alpha options, and drop one of each exclusive pair.""")
def policy_option_invalid(kc: dict, ctx: LintContext) -> Iterator[Violation]:
    problems = (k.cpu_option_problems(kc, ctx.kubernetes_version, ctx.node)
                + k.topology_option_problems(kc, ctx.kubernetes_version))
    for problem in problems:
        yield Violation(problem.path, f"the kubelet refuses to start: {problem.message}")


@rule(id="NG213", name="kubernetes-version", severity="error", target="kubelet",
      title="The target Kubernetes version lacks pod-level resource managers",
      rationale="""PodLevelResourceManagers was added in 1.36 as alpha (off by default) and is
      beta in 1.37. Before 1.36 the gate does not exist: a kubelet given it stops with
      "unrecognized feature gate: PodLevelResourceManagers". On 1.36 the feature is alpha: not
      for production, and its checkpoint format (V3) cannot be read by other versions.""",
      remediation="""Target Kubernetes 1.37 or later (kubernetesVersion in .numaguard.yaml or
      --kubernetes-version), and upgrade the node pool before enabling the gate.""")
def kubernetes_version(kc: dict, ctx: LintContext) -> Iterator[Violation]:
    version = ctx.kubernetes_version
    vtext = _version_text(version)
    path = _gate_path(kc, "PodLevelResourceManagers")
    if tuple(version) < (1, 36):
        if "PodLevelResourceManagers" in k.explicit_gates(kc):
            yield Violation(path, f"target Kubernetes {vtext}: the kubelet refuses to start: "
                                  f"unrecognized feature gate: PodLevelResourceManagers (added in 1.36)",
                            refusal=True)
        else:
            yield Violation(path, f"target Kubernetes {vtext}: pod-level resource managers do not "
                                  f"exist before 1.36; pod-level resources are never placed as a unit")
    elif tuple(version) == (1, 36):
        yield Violation(path, "target Kubernetes 1.36: PodLevelResourceManagers is alpha (off by "
                              "default): alpha behaviour, checkpoints (V3) that other versions cannot "
                              "read; 1.37 makes it beta", severity=Severity.WARNING)


__all__ = ["gate_pod_level_resources", "gate_pod_level_resource_managers", "cpu_manager_not_static",
           "memory_manager_not_static", "topology_scope_not_pod", "topology_policy_weak",
           "cpu_reservation_missing", "reserved_memory_mismatch", "reserved_cpus_invalid",
           "feature_gate_invalid", "policy_option_invalid", "kubernetes_version"]
