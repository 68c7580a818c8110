"""The nodes of a plan, indexed by what the scheduler sees of them, so a placement costs the
number of distinct views, not the number of nodes.

Nodes of one template (same labels but the hostname, taints, allocatable, NUMA layout and
kubelet configuration) with the same requests, non-zero requests and pod count score and filter
alike under every plugin but the ones that read the node's name; with pod (anti-)affinity in
play, the pods' identities count too, and under the topology-aware scheduler the
NodeResourceTopology zones. Such nodes share a `Bucket`. The buckets are kept in order of the
cpu they have left (`by_free_cpu`), so the ones too full for a pod are never looked at.

Within a bucket the nodes are in a list (removal swaps the last one in), which keeps every
choice deterministic for a seed whatever the process: no set or hash order is ever iterated.
"""
from __future__ import annotations

from bisect import bisect_left, insort
from dataclasses import dataclass, field
from typing import Iterable, Iterator

from numaguard.lint.plan.nodes import Kubelets, PlanNode
from numaguard.lint.plan.pod_affinity import Identity


@dataclass(eq=False)
class Bucket:
    key: tuple
    free_cpu: int
    members: list[PlanNode] = field(default_factory=list)

    @property
    def node(self) -> PlanNode:
        """The node that stands for all (they differ only in name)."""
        return self.members[0]


class Pool:
    """Every node of the plan (all pools), the buckets, and the pod identities."""

    def __init__(self, nodes: Iterable[PlanNode] = (), *, zones: bool = False, identities: bool = False) -> None:
        self.zones = zones                    # the scheduler reads NodeResourceTopology zones
        self.identities_matter = identities   # some pod has (anti-)affinity terms
        self.nodes: dict[str, PlanNode] = {}
        self.buckets: dict[tuple, Bucket] = {}
        self.by_free_cpu: list[tuple[int, tuple]] = []
        self._where: dict[str, tuple[tuple, int]] = {}      # node -> (bucket key, index)
        self.identities: list[Identity] = []
        self._identity_ids: dict[tuple, int] = {}
        self.everywhere: dict[int, int] = {}                # identity -> pods in the pool
        self.kubelets = Kubelets()                          # admissions played, reused by equal nodes
        for node in nodes:
            self.add(node)

    # -- nodes ------------------------------------------------------------------------------
    def add(self, node: PlanNode) -> None:
        self.nodes[node.name] = node
        self._file(node)

    def remove(self, node: PlanNode) -> None:
        self._unfile(node)
        del self.nodes[node.name]

    def changed(self, node: PlanNode) -> None:
        """Call after a pod was added to or taken from `node`."""
        self._unfile(node)
        self._file(node)

    def key(self, node: PlanNode) -> tuple:
        key = (node.template, node.usage_key())
        if self.identities_matter:
            key += (tuple(sorted(node.residents.items())),)
        if self.zones:
            key += (tuple((z.numa, tuple(sorted(z.available.items()))) for z in node.topology().zones),)
        return key

    def _file(self, node: PlanNode) -> None:
        key = self.key(node)
        bucket = self.buckets.get(key)
        if bucket is None:
            bucket = self.buckets[key] = Bucket(key, node.free_cpu)
            insort(self.by_free_cpu, (bucket.free_cpu, key))
        self._where[node.name] = (key, len(bucket.members))
        bucket.members.append(node)

    def _unfile(self, node: PlanNode) -> None:
        key, index = self._where.pop(node.name)
        bucket = self.buckets[key]
        last = bucket.members.pop()
        if last is not node:
            bucket.members[index] = last
            self._where[last.name] = (key, index)
        if not bucket.members:
            del self.buckets[key]
            del self.by_free_cpu[bisect_left(self.by_free_cpu, (bucket.free_cpu, key))]

    def with_cpu(self, cpu: int) -> Iterator[Bucket]:
        """The buckets whose nodes have at least `cpu` millicores not requested, fewest first."""
        for _free, key in self.by_free_cpu[bisect_left(self.by_free_cpu, (cpu,)):]:
            yield self.buckets[key]

    def all_buckets(self) -> Iterator[Bucket]:
        for _free, key in self.by_free_cpu:
            yield self.buckets[key]

    def copy(self) -> "Pool":
        """An independent copy: every node's kubelet state and counts copied."""
        out = Pool(zones=self.zones, identities=self.identities_matter)
        out.identities = list(self.identities)
        out._identity_ids = dict(self._identity_ids)
        out.everywhere = dict(self.everywhere)
        out.kubelets = self.kubelets
        for node in self.nodes.values():
            out.add(node.copy())
        return out

    # -- pod identities (pod affinity) ------------------------------------------------------
    def identity(self, ident: Identity) -> int:
        key = (ident.namespace, tuple(sorted(ident.labels.items())), ident.terms)
        found = self._identity_ids.get(key)
        if found is None:
            found = self._identity_ids[key] = len(self.identities)
            self.identities.append(ident)
            if ident.terms.any:
                self.identities_matter = True
                self._refile_all()
        return found

    def counted(self, identity: int, sign: int) -> None:
        self.everywhere[identity] = self.everywhere.get(identity, 0) + sign

    def _refile_all(self) -> None:
        nodes = list(self.nodes.values())
        self.buckets.clear()
        self.by_free_cpu.clear()
        self._where.clear()
        for node in nodes:
            self._file(node)


__all__ = ["Pool", "Bucket"]
