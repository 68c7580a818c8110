"""NG212 and NG3xx: NUMA fit on a described node (`--node`, or `node:` in the config file).

The pod rules replay the kubelet's admission (`numaguard.lint.numa.admission`) on a fresh, empty
`NodeState` for every check: a copy of the one the run built from the node description and its
KubeletConfiguration (`LintContext.empty_node_state`), so no pod sees another's placements.
Without a kubelet configuration for the node (`node.kubelet_config`, else the context's) the
NG3xx rules have nothing to simulate and stay silent; a configuration that would stop the kubelet is the
kubelet rules' finding (NG2xx), so these rules stay silent then too.
"""
from __future__ import annotations

from typing import Iterable

from numaguard.lint.model import Path, Severity, Violation
from numaguard.lint.objects import PodTarget
from numaguard.lint.rules.base import LintContext, rule


# --------------------------------------------------------------------------- helpers

def _kubelet_config(ctx: LintContext) -> dict | None:
    node = ctx.node
    kc = getattr(node, "kubelet_config", None) if node is not None else None
    if kc is None:
        kc = ctx.kubelet_config
    return kc if isinstance(kc, dict) else None


def _empty_state(ctx: LintContext):
    """A fresh empty NodeState for the context's node, or None when there is nothing to
    simulate (no node, no kubelet configuration, or one the kubelet would refuse): a copy of
    the run's `ctx.empty_node_state` when it has one."""
    from numaguard.lint.numa.admission import empty_state_or_none
    kc = _kubelet_config(ctx)
    if ctx.node is None or kc is None:
        return None
    template = ctx.empty_node_state
    if template is not None and template.kubelet_config is kc:
        return template.copy()
    return empty_state_or_none(ctx.node.topology, kc, name=getattr(ctx.node, "name", "node"))


def _resources_path(spec: dict, resource: str = "cpu") -> Path:
    """Where to point: the pod-level request when the pod has one, else the first container's
    request, else the first container."""
    resources = spec.get("resources")
    if isinstance(resources, dict):
        for field_name in ("requests", "limits"):
            values = resources.get(field_name)
            if isinstance(values, dict) and resource in values:
                return ("resources", field_name, resource)
        return ("resources",)
    for key in ("containers", "initContainers"):
        containers = spec.get(key)
        if isinstance(containers, list):
            for i, c in enumerate(containers):
                res = c.get("resources") if isinstance(c, dict) else None
                if isinstance(res, dict):
                    for field_name in ("requests", "limits"):
                        values = res.get(field_name)
                        if isinstance(values, dict) and resource in values:
                            return (key, i, "resources", field_name, resource)
    return ("containers", 0) if spec.get("containers") else ()


def _container_path(spec: dict, name: str) -> Path:
    for key in ("initContainers", "containers"):
        containers = spec.get(key)
        if isinstance(containers, list):
            for i, c in enumerate(containers):
                if isinstance(c, dict) and c.get("name") == name:
                    res = c.get("resources")
                    if isinstance(res, dict):
                        for field_name in ("requests", "limits"):
                            values = res.get(field_name)
                            if isinstance(values, dict) and "cpu" in values:
                                return (key, i, "resources", field_name, "cpu")
                    return (key, i)
    return ()


def _node_words(state) -> str:
    return (f"node {state.name} (topologyManagerPolicy {state.policy_name}, scope "
            f"{state.pinned_scope})")


def _stranded_text(capacity, analysis) -> str:
    """Free CPUs and memory per NUMA node; hugepages only of the sizes the pod uses."""
    from numaguard.lint.numa.simulate import format_memory
    from numaguard.lint.numa.devices import pod_device_requests
    wanted = set(analysis.aggregate_requests) | set(analysis.pod_level.requests) | \
        set(pod_device_requests(analysis.spec))
    parts = []
    for n in sorted(set(capacity.stranded_cpus) | set(capacity.stranded_memory)):
        memory = capacity.stranded_memory.get(n, {})
        extra = "".join(f", {format_memory(v)} {r}" for r, v in sorted(memory.items())
                        if r != "memory" and r in wanted)
        extra += "".join(f", {per.get(n, 0)} {r}" for r, per in sorted(capacity.stranded_devices.items())
                         if r in wanted)
        parts.append(f"NUMA {n}: {capacity.stranded_cpus.get(n, 0)} CPUs, "
                     f"{format_memory(memory.get('memory', 0))} memory{extra}")
    return "; ".join(parts)


# --------------------------------------------------------------------------- NG212

@rule(id="NG212", name="numa-nodes-over-limit", severity="error", target="kubelet",
      needs_node=True,
      title="The node has more NUMA nodes than the Topology Manager accepts",
      rationale="""With any topologyManagerPolicy other than none, the kubelet refuses to start
      on a machine with more NUMA nodes than max-allowable-numa-nodes (default 8):
      "unsupported on machines with more than 8 NUMA Nodes" (topology_manager.go NewManager).
      Hint generation enumerates every subset of NUMA nodes, which is why the limit exists.""",
      remediation="""Set topologyManagerPolicyOptions max-allowable-numa-nodes to at least the
      node's NUMA node count (admission gets slower as it grows), or use
      topologyManagerPolicy: none on such machines.""")
def numa_nodes_over_limit(kc: dict, ctx: LintContext) -> Iterable[Violation]:
    from numaguard.lint.k8s import kubelet as kcfg
    node = ctx.node
    if node is None:
        return
    policy, explicit = kcfg.topology_manager_policy(kc)
    if policy == "none" or policy not in kcfg.TOPOLOGY_MANAGER_POLICIES:
        return
    limit = kcfg.max_allowable_numa_nodes(kc)
    count = node.topology.num_numa_nodes
    if count <= limit:
        return
    options = kc.get("topologyManagerPolicyOptions")
    path: Path = ("topologyManagerPolicy",) if explicit else ()
    if isinstance(options, dict) and "max-allowable-numa-nodes" in options:
        path = ("topologyManagerPolicyOptions", "max-allowable-numa-nodes")
    yield Violation(path, f"node {node.name} has {count} NUMA nodes, more than "
                          f"max-allowable-numa-nodes ({limit}); with topologyManagerPolicy "
                          f"{policy} the kubelet refuses to start: \"unsupported on machines "
                          f"with more than {limit} NUMA Nodes\"",
                    remediation=f"Set topologyManagerPolicyOptions: {{max-allowable-numa-nodes: "
                                f"\"{count}\"}}, or topologyManagerPolicy: none on this node.")


@rule(id="NG425", name="cpu-numbering-assumed", severity="info", target="kubelet", needs_node=True,
      title="reservedSystemCPUs was checked against a CPU numbering numaguard assumed",
      rationale="""A NodeResourceTopology counts CPUs per NUMA node but names none, so numaguard
      numbers them as Linux numbers most x86 servers: cores NUMA node by NUMA node, and CPU n
      and n+N/2 (N CPUs) the two hyperthreads of one core. Whether reservedSystemCPUs reserves
      whole cores (NG209), and which CPUs the static policy hands out (the NUMA map,
      full-pcpus-only), rest on that: on a machine that numbers siblings next to each other
      (0 and 1) a set NG209 accepts splits cores, and one it flags does not.""",
      remediation="""Check the numbering on one node (`lscpu -p=CPU,CORE,NODE` or `numaguard node
      inspect`), describe the pool with that lscpu output (`--node`, config `node:`), or turn
      NG425 off once checked (`rules: {NG425: off}`).""")
def cpu_numbering_assumed(kc: dict, ctx: LintContext) -> Iterable[Violation]:
    from numaguard.lint.k8s import kubelet as kcfg
    node = ctx.node
    text = kc.get("reservedSystemCPUs")
    if node is None or not node.topology.assumed_numbering or not text:
        return
    try:
        reserved = kcfg.reserved_system_cpus(kc)
    except kcfg.CPUSetError:
        return                                    # NG209 reports the unparsable set
    if not reserved or not reserved <= frozenset(node.topology.cpu_by_id):
        return                                    # NG209: CPUs the node does not have
    cores = sorted({node.topology.cpu_by_id[cpu].core for cpu in reserved})
    yield Violation(("reservedSystemCPUs",),
                    f"reservedSystemCPUs {text} was checked for whole cores against a CPU numbering assumed "
                    f"for node {node.name} ({node.topology.assumed_numbering}): under it the set covers "
                    f"core{'s' if len(cores) > 1 else ''} {', '.join(map(str, cores))}; NG209's verdict on "
                    "split cores holds only if the machine numbers its threads that way")


# --------------------------------------------------------------------------- NG301

@rule(id="NG301", name="numa-no-fit", severity="error", target="pod", needs_node=True,
      title="The pod cannot be admitted even on an empty node of the pool",
      rationale="""Under single-numa-node or restricted the kubelet admits a pod only when a
      preferred NUMA placement exists for its CPUs and memory after reservations. When even an
      empty node has none, the scheduler (which is not NUMA-aware) still places the pod and the
      kubelet rejects it: the pod fails with TopologyAffinityError and is not rescheduled.""",
      remediation="""Shrink the pod so its CPUs and memory fit one NUMA node of the pool (or the
      narrowest NUMA set the policy prefers), move it to a pool with larger NUMA nodes, or
      relax topologyManagerPolicy to best-effort if alignment is not required.""")
def numa_no_fit(pod: PodTarget, ctx: LintContext) -> Iterable[Violation]:
    from numaguard.lint.numa.admission import SMT_ALIGNMENT_ERROR, admit, alignment_required
    from numaguard.lint.numa.simulate import suggest_fix

    state = _empty_state(ctx)
    if state is None or not alignment_required(state):
        return
    analysis = pod.analysis
    if analysis.pod_level.is_set and analysis.budget.rejections:
        return          # the pod's own budget is impossible: NG107 reports that
    free_cpus, free_memory = state.free_cpus_by_numa(), state.free_memory_by_numa()
    placement = admit(state, {"spec": pod.spec}, "pod", analysis=analysis)
    if placement.admitted or placement.reason == SMT_ALIGNMENT_ERROR:
        return          # SMT alignment is NG303's finding
    fix = suggest_fix(state, {"spec": pod.spec}, placement, free_cpus, free_memory)
    unmodelled = _unmodelled_devices(state, pod.spec)
    note = (f" (the pod also asks for {', '.join(unmodelled)}, which the node description does "
            f"not place on NUMA nodes: devices are not modelled, and could only narrow the "
            f"placement further)" if unmodelled else "")
    # Point at memory when no NUMA node could hold the pod's memory, else at its CPUs.
    requests = analysis.pod_level.requests if analysis.pod_level.is_set else analysis.aggregate_requests
    largest_memory = max((m.get("memory", 0) for m in free_memory.values()), default=0)
    culprit = "memory" if requests.get("memory", 0) > largest_memory else "cpu"
    path = _resources_path(pod.spec, culprit)
    from numaguard.lint.numa.devices import pod_device_requests
    for resource in sorted(pod_device_requests(pod.spec)):
        if state.devices is not None and fix.startswith("the pod asks for") and resource in fix:
            path = _device_path(pod.spec, resource)      # the devices are what does not fit
    yield Violation(path,
                    f"on an empty {_node_words(state)} the kubelet rejects this pod with "
                    f"{placement.reason} (\"{placement.message}\"){note}",
                    remediation=fix[:1].upper() + fix[1:] + ".")


# --------------------------------------------------------------------------- NG302

@rule(id="NG302", name="numa-stranded-capacity", severity="warning", target="pod",
      needs_node=True,
      title="The pod fits, but its size strands CPUs or memory on each node",
      rationale="""Copies of the pod are admitted on an empty node until the kubelet rejects
      one. The warning fires when the scheduler would still send another copy there (the
      node-wide leftovers of cpu, memory and pods cover its requests) while the kubelet
      rejects it for a NUMA reason: that capacity is stranded for this pod shape, and each
      such scheduling ends in a failed pod. Leftovers smaller than one copy are not reported.""",
      remediation="""Size the pod so whole copies tile a NUMA node (CPUs available per NUMA node
      divided by the pod's CPUs, likewise for memory), or give the pool's nodes a NUMA-aware
      scheduler plugin or a pod count limit that matches the real capacity.""")
def numa_stranded_capacity(pod: PodTarget, ctx: LintContext) -> Iterable[Violation]:
    from numaguard.lint.numa.capacity import pod_capacity

    state = _empty_state(ctx)
    if state is None:
        return
    unmodelled = _unmodelled_devices(state, pod.spec)
    if unmodelled:
        yield Violation(_device_path(pod.spec, unmodelled[0]),
                        f"devices are not modelled: the pod asks for {', '.join(unmodelled)} but the "
                        f"node description lists no devices per NUMA node, so numaguard cannot say "
                        f"how many copies fit or what they strand on {_node_words(state)}",
                        severity=Severity.INFO,
                        remediation="Describe the node's devices per NUMA node (NodeProfile "
                                    "spec.topology.devices, e.g. {nvidia.com/gpu: {0: 2, 1: 2}}, or "
                                    "the NodeResourceTopology zones' resources) to get the count.")
        return
    if _pods_limit_comes_first(state, pod.spec):
        return
    from numaguard.lint.k8s.pod_budget import pod_exclusive_totals
    available = state.free_cpus_by_numa()
    capacity = pod_capacity(state, {"spec": pod.spec}, analysis=pod.analysis)
    if capacity.copies == 0 or not capacity.significant:
        return
    reason = capacity.limited_by.reason if capacity.limited_by else "none"
    cpus, _ = pod_exclusive_totals(pod.spec)
    better = next((size for size in range(cpus - 1, 0, -1)
                   if sum(a // size for a in available.values()) > capacity.copies), None)
    hint = ""
    if better is not None:
        hint = (f"{better} CPUs per copy would fit "
                f"{sum(a // better for a in available.values())} copies "
                f"(CPUs available per NUMA node: "
                f"{', '.join(f'NUMA {n}: {a}' for n, a in sorted(available.items()))}); ")
    yield Violation(_resources_path(pod.spec),
                    f"{capacity.copies} copies of this pod fit on an empty {_node_words(state)}; "
                    f"the next copy is rejected ({reason}) although the scheduler still sees "
                    f"room for it. Stranded per NUMA node: {_stranded_text(capacity, pod.analysis)}",
                    remediation=(hint[:1].upper() + hint[1:] if hint else "")
                    + "size the pod so whole copies tile a NUMA node, or cap the pods per node "
                      "to what the kubelet really admits.")


def _unmodelled_devices(state, spec: dict) -> list[str]:
    """Device-plugin resources the pod asks for while the node description lists no devices."""
    from numaguard.lint.numa.devices import pod_device_requests
    if state.devices is not None:
        return []
    return sorted(pod_device_requests(spec))


def _device_path(spec: dict, resource: str) -> Path:
    for key in ("initContainers", "containers"):
        containers = spec.get(key)
        for i, c in enumerate(containers if isinstance(containers, list) else []):
            res = c.get("resources") if isinstance(c, dict) else None
            limits = res.get("limits") if isinstance(res, dict) else None
            if isinstance(limits, dict) and resource in limits:
                return (key, i, "resources", "limits", resource)
    return ()


def _pods_limit_comes_first(state, spec: dict) -> bool:
    """A shortcut before filling a node copy by copy (up to maxPods admissions): a pod with
    nothing NUMA-pinned cannot strand anything, and a pod small enough that every NUMA node
    holds floor(free / need) copies reaching maxPods in total stops at OutOfpods, which is
    never significant stranding."""
    from numaguard.lint.k8s.pod_budget import pod_exclusive_totals
    cpus, memory = pod_exclusive_totals(spec)
    if state.devices is not None:
        from numaguard.lint.numa.devices import pod_device_requests
        if pod_device_requests(spec):
            return False          # devices may run out first: fill the node copy by copy
    pinned_memory = int(memory.get("memory", 0)) if state.memory is not None else 0
    if state.cpu is None:
        cpus = 0
    if cpus == 0 and pinned_memory == 0:
        return True
    estimates = []
    if cpus:
        estimates.append(sum(f // cpus for f in state.free_cpus_by_numa().values()))
    if pinned_memory:
        estimates.append(sum(m.get("memory", 0) // pinned_memory
                             for m in state.free_memory_by_numa().values()))
    return min(estimates) >= state.allocatable["pods"]


# --------------------------------------------------------------------------- NG303

@rule(id="NG303", name="smt-alignment", severity="error", target="pod", needs_node=True,
      title="With full-pcpus-only, the pod's exclusive CPU count is not a whole number of cores",
      rationale="""With cpuManagerPolicyOptions full-pcpus-only the static policy hands out whole
      physical cores only. An exclusive CPU request that is not a multiple of the threads per
      core (the pod total for a pod-level-managed pod under scope pod, each container's
      otherwise) fails at admission with SMTAlignmentError: "SMT Alignment Error: requested N
      cpus not multiple cpus per core = K" (policy_static.go enforceSMTAlignment).""",
      remediation="""Request a multiple of the node's threads per core (2 on most x86 servers)
      for the pod's (or the container's) whole-CPU request, or drop full-pcpus-only.""")
def smt_alignment(pod: PodTarget, ctx: LintContext) -> Iterable[Violation]:
    from numaguard.lint.numa.admission import SMT_ALIGNMENT_ERROR, admit, managed_containers

    state = _empty_state(ctx)
    if state is None or state.cpu is None or not state.cpu.options.full_pcpus_only:
        return
    analysis = pod.analysis
    pod_level = analysis.pod_level.is_set
    if pod_level and not state.gates["PodLevelResourceManagers"]:
        return          # the managers skip the pod: nothing exclusive, nothing to align
    per_core = state.cpu.cpu_group_size
    checked: list[tuple[Path, str | None, int, str]] = []
    if pod_level and state.pinned_scope == "pod":
        if analysis.budget.cpus:
            checked.append((_resources_path(pod.spec), None, analysis.budget.cpus,
                            "the pod's whole-CPU budget"))
    else:
        for c in managed_containers(analysis, pod_level):
            if c.cpus:
                checked.append((_container_path(pod.spec, c.name), c.name, c.cpus,
                                f"the exclusive CPUs of container '{c.name}'"))
    found = False
    for path, container, cpus, what in checked:
        if cpus % per_core:
            found = True
            yield Violation(path, f"cpuManagerPolicyOptions full-pcpus-only is on and node "
                                  f"{state.name} has {per_core} threads per core: {what} "
                                  f"({cpus}) is not a multiple of {per_core}, so the kubelet "
                                  f"rejects the pod with SMTAlignmentError: \"SMT Alignment "
                                  f"Error: requested {cpus} cpus not multiple cpus per core = "
                                  f"{per_core}\"",
                            container=container,
                            remediation=f"Request {cpus + per_core - cpus % per_core} (or "
                                        f"{cpus - cpus % per_core}) CPUs instead of {cpus}, or "
                                        f"drop full-pcpus-only.")
    if found or not checked:
        return
    placement = admit(state, {"spec": pod.spec}, "pod", analysis=analysis)
    if placement.reason == SMT_ALIGNMENT_ERROR:
        yield Violation(checked[0][0], f"on an empty node {state.name} the kubelet rejects the "
                                       f"pod with SMTAlignmentError: {placement.message}",
                        remediation="Request fewer whole cores, or reserve whole cores "
                                    "(both hyperthreads) in reservedSystemCPUs.")
