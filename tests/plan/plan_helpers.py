"""Builders for the planner's tests: pod specs, workloads, pools and the scenario of
kubernetes/kubernetes#84869 played on numaguard's dual-socket-ht profile (2 NUMA nodes of 32
CPUs, CPUs 0 and 32 reserved: NUMA 0 offers 30 CPUs for exclusive use, NUMA 1 32)."""
from __future__ import annotations

from numaguard.lint.numa.node import load_builtin_profile
from numaguard.lint.plan.model import PoolSpec, Workload
from numaguard.lint.plan.play import Scenario
from numaguard.lint.plan.pods import pod_shape

POOL_LABELS = {"node.example.com/pool": "numa"}
POOL_TAINT = {"key": "node.example.com/pool", "value": "numa", "effect": "NoSchedule"}
TOLERATION = {"key": "node.example.com/pool", "operator": "Equal", "value": "numa", "effect": "NoSchedule"}


def spec(cpu: str, memory: str, *, pool: bool = True, **more) -> dict:
    """A Guaranteed one-container pod spec (requests = limits) aimed at the numa pool."""
    out = {"containers": [{"name": "app", "image": "registry.example.com/app:1",
                           "resources": {"requests": {"cpu": cpu, "memory": memory},
                                         "limits": {"cpu": cpu, "memory": memory}}}]}
    if pool:
        out.update(nodeSelector=dict(POOL_LABELS), tolerations=[dict(TOLERATION)])
    out.update(more)
    return out


def workload(name: str, replicas: int, pod_spec: dict, *, kind: str = "Deployment", namespace: str = "shop",
             labels: dict | None = None, per_node: bool = False, rollout=None) -> Workload:
    return Workload(f"{kind} {namespace}/{name}", kind, namespace, name,
                    pod_shape(pod_spec, namespace=namespace, labels=labels or {"app": name}), replicas,
                    per_node=per_node, source=f"spec.replicas {replicas}", rollout=rollout)


def pool(count: int, profile: str = "dual-socket-ht", name: str = "numa") -> PoolSpec:
    return PoolSpec(name, load_builtin_profile(profile), count, dict(POOL_LABELS), (dict(POOL_TAINT),))


def runaway(nodes: int = 4, cache: int = 4, db: int = 8) -> Scenario:
    """#84869 played out: each node first takes a cache replica (12 CPUs, 40% of a NUMA node);
    the db replicas need 22 CPUs (70% of a NUMA node). After one db replica per node, each
    node still has 18 + 10 = 28 CPUs free in all, which NodeResourcesFit counts, but no NUMA
    node holds 22."""
    return Scenario(pools=(pool(nodes),), workloads=(workload("cache", cache, spec("12", "8Gi")),
                                                     workload("db", db, spec("22", "16Gi"), kind="ReplicaSet")))
