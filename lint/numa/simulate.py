"""`numaguard simulate`: admit pods one after another on one node and report what the
kubelet decides (design.md "Simulation report"), plus how many copies of each distinct pod
an empty node holds and what they strand.

Engine code: plain dicts in, a report dict (or text) out; no files, no terminal.
"""
from __future__ import annotations

from typing import Any, Iterable, Mapping

from numaguard.lint.numa.admission import NodeState, Placement, admit, pod_requests, pod_spec_of

REPORT_VERSION = 1


def object_fields(ref: Any) -> dict:
    """What the report says of a pod's object: kind, namespace, name (and template)."""
    if ref is None:
        return {"kind": None, "namespace": None, "name": None}
    if isinstance(ref, Mapping):
        # "template": which of an object's pod templates (a JobSet's second replicated job),
        # given when the object holds several
        return {"kind": ref.get("kind"), "namespace": ref.get("namespace"), "name": ref.get("name"),
                **({"template": ref["template"]} if ref.get("template") else {})}
    if isinstance(ref, str):
        return {"kind": "Pod", "namespace": None, "name": ref}
    return {"kind": getattr(ref, "kind", None), "namespace": getattr(ref, "namespace", None),
            "name": getattr(ref, "name", None)}


def object_label(obj: Mapping) -> str:
    name = obj.get("name") or "pod"
    label = f"{obj['namespace']}/{name}" if obj.get("namespace") else str(name)
    return f"{label} {obj['template']}" if obj.get("template") else label


def simulate(node: Any, pods: Iterable[tuple[Any, Mapping]], *,
             kubelet_config: dict | None = None, capacity: bool = True) -> dict:
    """Admit `pods` ((ref, Pod or pod spec dict) pairs) in order on an empty `node`.

    Raises numaguard.lint.numa.admission.KubeletStartupError if the node's kubelet would not start.
    """
    state = NodeState.from_node(node, kubelet_config)
    entries = []
    distinct: dict[str, tuple[dict, Mapping]] = {}
    for ref, pod in pods:
        obj = object_fields(ref)
        before_free = state.free_cpus_by_numa()
        before_memory = state.free_memory_by_numa()
        placement = admit(state, pod, object_label(obj))
        entry = {"object": obj, **placement.as_dict()}
        if placement.admitted:
            if placement.bubble:
                entry["cpus"]["bubble"] = list(placement.bubble)
        else:
            for key in ("numaNodes", "cpus", "memory"):
                entry.pop(key, None)
            entry["fix"] = suggest_fix(state, pod, placement, before_free, before_memory)
        entry["freeAfter"] = _free(state)
        entries.append(entry)
        key = repr(sorted(pod_spec_of(pod).items(), key=lambda kv: kv[0]))
        distinct.setdefault(key, (obj, pod))
    report = {
        "version": REPORT_VERSION,
        "node": {"name": state.name, "numaNodes": state.topology.num_numa_nodes,
                 "cpus": state.topology.num_cpus, "reservedCpus": sorted(state.reserved_cpus),
                 "topologyManagerPolicy": state.policy_name,
                 "topologyManagerScope": state.pinned_scope,
                 "cpuManagerPolicy": "static" if state.cpu is not None else "none",
                 "memoryManagerPolicy": "Static" if state.memory is not None else "None",
                 "podLevelResourceManagers": state.gates["PodLevelResourceManagers"]},
        "pods": entries,
        "free": _free(state),
        "summary": {"pods": len(entries),
                    "admitted": sum(1 for e in entries if e["admitted"]),
                    "rejected": sum(1 for e in entries if not e["admitted"])},
    }
    if capacity:
        from numaguard.lint.numa.capacity import pod_capacity
        from numaguard.lint.numa.devices import pod_device_requests
        report["capacity"] = []
        for obj, pod in distinct.values():
            unmodelled = sorted(pod_device_requests(pod_spec_of(pod))) if state.devices is None else []
            if unmodelled:
                # no count: copies limited by devices the node description does not place
                report["capacity"].append({"object": obj, "copies": None, "limitedBy": None,
                                           "stranded": {}, "significant": False,
                                           "devicesNotModelled": unmodelled})
            else:
                report["capacity"].append({"object": obj, **pod_capacity(state, pod).as_dict()})
    return report


def _free(state: NodeState) -> dict:
    cpus = state.free_cpus_by_numa()
    memory = state.free_memory_by_numa()
    return {str(n): {"cpus": cpus.get(n, 0), **memory.get(n, {})} for n in sorted(cpus)}


def _device_fix(state: NodeState, spec: dict, reason: str) -> str | None:
    """When the pod's devices cannot sit on one NUMA node (single-numa-node) or the node has
    too few free, say so with the per-NUMA counts."""
    from numaguard.lint.numa.devices import describe_counts, pod_device_requests
    if state.devices is None or reason not in ("TopologyAffinityError", "UnexpectedAdmissionError"):
        return None
    for resource, count in sorted(pod_device_requests(spec).items()):
        total = state.devices.total.get(resource, {})
        free = state.devices.free.get(resource, {})
        if count > sum(free.values()):
            return (f"the pod asks for {count} {resource} and only {sum(free.values())} are free "
                    f"({describe_counts(free) or 'none on this node'}); ask for fewer or use "
                    f"another node")
        if state.policy_name == "single-numa-node" and count > max(total.values(), default=0):
            return (f"the pod asks for {count} {resource}, but no NUMA node has more than "
                    f"{max(total.values(), default=0)} ({describe_counts(total)}), and "
                    f"single-numa-node needs all of them on one NUMA node; ask for at most "
                    f"{max(total.values(), default=0)} per pod, or use topologyManagerPolicy "
                    f"restricted (devices on the fewest NUMA nodes)")
    return None


def suggest_fix(state: NodeState, pod: Mapping, placement: Placement,
                free_cpus: Mapping[int, int], free_memory: Mapping[int, Mapping[str, int]]) -> str:
    """One concrete change that would let the pod in, from the rejection and the node's
    per-NUMA free resources before the attempt."""
    from numaguard.lint.numa.capacity import pod_capacity
    from numaguard.lint.k8s.pod_budget import PodAnalysis

    reason = placement.reason or ""
    spec = pod_spec_of(pod)
    analysis = PodAnalysis(spec)
    best_cpus = max(free_cpus.values(), default=0)
    best_memory = max((m.get("memory", 0) for m in free_memory.values()), default=0)
    numa_size = max(len([c for c in state.topology.cpus if c.numa == n])
                    for n in state.topology.numa_ids)
    if reason == "SMTAlignmentError":
        per_core = state.topology.cpus_per_core
        return (f"full-pcpus-only needs whole cores: make the pod's exclusive CPU count a "
                f"multiple of {per_core} (threads per core), or drop full-pcpus-only")
    if reason == "EmptyPodSharedPoolError" or (
            reason == "TopologyAffinityError" and analysis.budget.rejections):
        return ("raise the pod-level requests (and limits) above the sum of the exclusive "
                "containers' requests, so the containers without exclusive slices keep a pod "
                "shared pool, or make every container qualify for a slice")
    if reason == "PodLevelResourcesNotSupported":
        return "enable the PodLevelResources feature gate on the kubelet"
    if reason.startswith("OutOf"):
        return ("the node has no room left for this pod at all (the scheduler would not send it "
                "here): reduce its requests or use another node")
    need = pod_requests(spec)
    need_cpus = analysis.budget.cpus if analysis.pod_level.is_set else -(-need["cpu"] // 1000)
    need_text = f"{need_cpus} CPUs and {format_memory(need['memory'])} memory"
    devices_fix = _device_fix(state, spec, reason)
    if devices_fix:
        return devices_fix
    if reason == "TopologyAffinityError":
        empty = pod_capacity(state, pod, max_copies=1)
        if empty.copies == 0:
            fresh = _empty_state(state)
            most_cpus = max(fresh.free_cpus_by_numa().values(), default=0)
            most_memory = max((m.get("memory", 0) for m in fresh.free_memory_by_numa().values()),
                              default=0)
            return (f"even an empty node has no preferred NUMA placement for the pod's "
                    f"{need_text}: the largest NUMA node offers {most_cpus} CPUs for exclusive "
                    f"use and {format_memory(most_memory)} of pinnable memory; shrink the pod to fit one "
                    f"NUMA node, or use topologyManagerPolicy best-effort (no alignment "
                    f"guarantee)")
        return (f"the node is fragmented: the most free on any NUMA node is {best_cpus} CPUs "
                f"and {format_memory(best_memory)} memory, the pod needs {need_text} on one NUMA "
                f"node; size pods so they tile a NUMA node ({numa_size} CPUs), or schedule it "
                f"elsewhere")
    return ("the node cannot hold the pod's CPUs or memory even across NUMA nodes: reduce its "
            "requests or use a larger node")


def _empty_state(state: NodeState) -> NodeState:
    from numaguard.lint.numa.admission import build_state
    return build_state(state.topology, state.kubelet_config, name=state.name)


# ------------------------------------------------------------------------------ text

def render_text(report: dict, node: Any) -> str:
    """The report as text: the node drawn after each pod (reserved, taken by earlier pods,
    this pod's exclusive CPUs and its pod shared pool), each rejection with its fix."""
    from numaguard.lint.numa.draw import draw_node

    topo = node.topology
    head = report["node"]
    lines = [f"node {head['name']}: {head['cpus']} CPUs, {head['numaNodes']} NUMA nodes, "
             f"reserved CPUs {_ids(head['reservedCpus']) or 'none'}",
             f"  topologyManagerPolicy {head['topologyManagerPolicy']}, scope "
             f"{head['topologyManagerScope']}, cpuManagerPolicy {head['cpuManagerPolicy']}, "
             f"memoryManagerPolicy {head['memoryManagerPolicy']}, PodLevelResourceManagers "
             f"{'on' if head['podLevelResourceManagers'] else 'off'}", ""]
    taken: set[int] = set()
    for i, entry in enumerate(report["pods"], 1):
        label = object_label(entry["object"])
        kind = entry["object"].get("kind") or "Pod"
        if entry["admitted"]:
            if entry["numaNodes"]:
                where = ", ".join(str(n) for n in entry["numaNodes"])
                pref = {True: "preferred", False: "not preferred", None: "no alignment"}[
                    entry["preferred"]]
                lines.append(f"[{i}] {kind} {label}: admitted on NUMA {where} ({pref})")
            else:
                lines.append(f"[{i}] {kind} {label}: admitted without NUMA alignment "
                             "(node shared pool)")
            for name, ids in entry["cpus"]["exclusive"].items():
                lines.append(f"    {name}: exclusive CPUs {_ids(ids)}")
            if entry["cpus"]["podShared"]:
                lines.append(f"    pod shared pool: CPUs {_ids(entry['cpus']['podShared'])}")
            for n, res in entry["memory"].items():
                parts = ", ".join(f"{r} {format_memory(v)}" for r, v in res.items())
                lines.append(f"    NUMA {n} memory: {parts}")
            for resource, per in sorted(entry.get("devices", {}).items()):
                lines.append(f"    {resource}: " + ", ".join(f"NUMA {n}: {c}" for n, c in per.items()))
        else:
            lines.append(f"[{i}] {kind} {label}: REJECTED {entry['reason']}")
            lines.append(f"    {entry['message']}")
            lines.append(f"    fix: {entry['fix']}")
        for note in entry.get("notes", []):
            lines.append(f"    note: {note}")
        placed = set()
        shared = set()
        if entry["admitted"]:
            for ids in entry["cpus"]["exclusive"].values():
                placed |= set(ids)
            shared = set(entry["cpus"]["podShared"]) | (
                set(entry["cpus"].get("bubble", ())) - placed)
        memory_free = {int(n): v.get("memory", 0) for n, v in entry["freeAfter"].items()}
        drawing = draw_node(topo, reserved=head["reservedCpus"], taken=taken, placed=placed,
                            shared=shared, free_memory=memory_free)
        lines.extend("    " + line for line in drawing.rstrip("\n").splitlines())
        lines.append("")
        taken |= placed | shared
    s = report["summary"]
    lines.append(f"{s['pods']} pods: {s['admitted']} admitted, {s['rejected']} rejected")
    for cap in report.get("capacity", []):
        if cap.get("devicesNotModelled"):
            lines.append(f"capacity {object_label(cap['object'])}: not counted, devices are not modelled "
                         f"(the pod asks for {', '.join(cap['devicesNotModelled'])}; the node "
                         f"description lists no devices per NUMA node)")
            continue
        devices = cap.get("strandedDevices", {})
        for n, v in cap["stranded"].items():
            v.update({f"{r} ": per.get(n, 0) for r, per in devices.items()})
        stranded = "; ".join(f"NUMA {n}: {v.get('cpus', 0)} CPUs, {format_memory(v.get('memory', 0))}"
                             + "".join(f", {c} {r.strip()}" for r, c in v.items() if r.endswith(" "))
                             for n, v in cap["stranded"].items())
        why = cap["limitedBy"]["reason"] if cap["limitedBy"] else "limit"
        lines.append(f"capacity {object_label(cap['object'])}: {cap['copies']} copies per empty node "
                     f"(then {why}); left over: {stranded}")
    return "\n".join(lines) + "\n"


def _ids(ids: Iterable[int]) -> str:
    from numaguard.lint.k8s.cpuset import format_cpuset
    return format_cpuset(ids)


def format_memory(value: int) -> str:
    """Bytes for people: exact quantities as written in manifests, else GiB to one decimal."""
    from decimal import Decimal
    from numaguard.lint.k8s.quantity import format_bytes
    if value % (1 << 20) == 0:
        return format_bytes(Decimal(value))
    return f"{value / 2**30:.1f}Gi"


__all__ = ["simulate", "render_text", "suggest_fix", "REPORT_VERSION"]
