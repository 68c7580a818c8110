"""What a play answers, as plain data (the JSON report's `schedulers[]` entries, which the text
and HTML reports render): per workload, replicas placed, rejected by a kubelet (how many
times: the runaway), unschedulable, stuck; per pool, the nodes used, what is left on each NUMA
node, and the stranded share.

Stranded: free CPUs and memory on NUMA nodes where no replica of the plan that may run in the
pool fits any more. A replica's demand is what the kubelet pins for it (exclusive CPUs and
pinned memory, `numaguard.lint.k8s.pod_budget.pod_exclusive_totals`); under single-numa-node
and restricted it must fit one NUMA node (a pod that fits one gets no other preferred hint),
under best-effort and none anywhere on the node. Replicas that pin nothing strand nothing;
with none in the pool the share is not given (null).
"""
from __future__ import annotations

from typing import Iterable

from numaguard.lint.k8s.pod_budget import pod_exclusive_totals
from numaguard.lint.plan import node_affinity, taints
from numaguard.lint.plan.model import GAVE_UP, PLACED, STUCK, UNSCHEDULABLE, ReplicaOutcome, Workload
from numaguard.lint.plan.nodes import PlanNode
from numaguard.lint.plan.play import Run

SINGLE_NUMA_POLICIES = ("single-numa-node", "restricted")


def workload_summary(workload: Workload, outcomes: list[ReplicaOutcome]) -> dict:
    count = {s: sum(1 for o in outcomes if o.status == s) for s in (PLACED, UNSCHEDULABLE, STUCK, GAVE_UP)}
    return {"name": workload.name, "kind": workload.kind, "replicas": len(outcomes), "countFrom": workload.source,
            "where": workload.where or None, "placed": count[PLACED],
            "placedAfterRejections": sum(1 for o in outcomes if o.status == PLACED and o.rejections),
            "rejections": sum(len(o.rejections) for o in outcomes), "unschedulable": count[UNSCHEDULABLE],
            "stuck": count[STUCK], "gaveUp": count[GAVE_UP],
            "pods": [o.as_dict() for o in outcomes]}


def _demand(workload: Workload) -> tuple[int, int] | None:
    cpus, memory = pod_exclusive_totals(workload.shape.spec)
    pinned = int(memory.get("memory", 0))
    return (cpus, pinned) if cpus or pinned else None


def _takes(node: PlanNode, workload: Workload) -> bool:
    shape = workload.shape
    return (not taints.untolerated_taint(node.taints, shape.tolerations)
            and node_affinity.matches(shape, node.labels, node.name))


def stranded(node: PlanNode, demands: list[tuple[int, int]]) -> tuple[int, int]:
    """(CPUs, bytes) free on the node where none of `demands` fits."""
    free = node.free_by_numa()
    memory_pinned = node.state.memory is not None
    fits = [(c, m if memory_pinned else 0) for c, m in demands]
    if node.state.policy_name in SINGLE_NUMA_POLICIES:
        cpus = memory = 0
        for numa in free.values():
            if not any(c <= numa["cpus"] and m <= numa.get("memory", 0) for c, m in fits):
                cpus += numa["cpus"]
                memory += numa.get("memory", 0)
        return cpus, memory
    total_cpus = sum(n["cpus"] for n in free.values())
    total_memory = sum(n.get("memory", 0) for n in free.values())
    if any(c <= total_cpus and m <= total_memory for c, m in fits):
        return 0, 0
    return total_cpus, total_memory


def pool_summary(name: str | None, nodes: list[PlanNode], workloads: Iterable[Workload]) -> dict:
    workloads = list(workloads)
    plan_pods = {w.name for w in workloads}
    pinning = [(w, d) for w in workloads if not w.per_node for d in [_demand(w)] if d is not None]
    by_template: dict[int, list[tuple[int, int]]] = {}      # the demands of the replicas a node may take
    measured = False
    free_cpus = free_memory = lost_cpus = lost_memory = 0
    per_numa: dict[int, dict[str, int]] = {}
    for node in nodes:
        for numa, free in node.free_by_numa().items():
            free_cpus += free["cpus"]
            free_memory += free.get("memory", 0)
            slot = per_numa.setdefault(numa, {"cpus": 0, "memory": 0})
            slot["cpus"] += free["cpus"]
            slot["memory"] += free.get("memory", 0)
        demands = by_template.get(node.template)
        if demands is None:
            demands = by_template[node.template] = [d for w, d in pinning if _takes(node, w)]
        if demands:
            measured = True
            c, m = stranded(node, demands)
            lost_cpus += c
            lost_memory += m
    used = sum(1 for n in nodes if any(r.workload in plan_pods for r in n.pods))
    return {"name": name, "nodes": len(nodes), "nodesUsed": used, "nodesEmpty": sum(1 for n in nodes if not n.pods),
            "free": {"cpus": free_cpus, "memory": free_memory},
            "freePerNuma": {str(k): v for k, v in sorted(per_numa.items())},
            "stranded": None if not measured else {
                "cpus": lost_cpus, "memory": lost_memory,
                "cpuShare": round(lost_cpus / free_cpus, 4) if free_cpus else 0.0,
                "memoryShare": round(lost_memory / free_memory, 4) if free_memory else 0.0}}


def node_summary(node: PlanNode) -> dict:
    return {"name": node.name, "pool": node.pool, "added": node.added,
            "policy": f"{node.state.policy_name}/{node.state.pinned_scope}",
            "pods": [{"pod": r.label, "workload": r.workload or None, "admitted": r.placement.admitted,
                      "numaNodes": list(r.placement.numa_nodes),
                      "cpus": sorted(r.placement.taken_cpus())} for r in node.pods],
            "free": {str(n): v for n, v in node.free_by_numa().items()},
            "rejected": [{"pod": r.label, "workload": r.workload, "reason": r.reason, "message": r.message}
                         for r in node.rejections],
            "notes": list(node.notes)}


def run_summary(run: Run, workloads: list[Workload]) -> dict:
    by_name = {w.name: w for w in workloads}
    entries = [workload_summary(by_name[name], outs) for name, outs in run.outcomes.items()]
    nodes = sorted(run.pool.nodes.values(), key=lambda n: n.name)
    pools: dict[str | None, list[PlanNode]] = {}
    for node in nodes:
        pools.setdefault(node.pool, []).append(node)
    totals = {k: sum(e[k] for e in entries) for k in ("replicas", "placed", "placedAfterRejections",
                                                      "rejections", "unschedulable", "stuck", "gaveUp")}
    return {"name": run.profile.name, "seed": run.seed,
            **({"scoringStrategy": run.profile.nrt_strategy} if run.profile.topology_aware else {}),
            "workloads": entries,
            "pools": [pool_summary(name, members, workloads) for name, members in pools.items()],
            "nodes": [node_summary(n) for n in nodes],
            "notes": list(run.notes),
            "summary": {**totals, "clean": run.clean}}


__all__ = ["run_summary", "pool_summary", "workload_summary", "node_summary", "stranded"]
