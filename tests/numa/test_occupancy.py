"""What the pool report's tiles say of a node: CPUs held and free per NUMA node, and the CPUs
stranded for the pool's smallest pinned pod (numaguard.lint.numa.occupancy)."""
from __future__ import annotations

import pytest

from numaguard.lint.numa.node import load_node_file
from numaguard.lint.numa.occupancy import NodeOccupancy, PodOutcome, stranded_cpus

TOPOLOGY = load_node_file("builtin:dual-socket-ht").topology     # NUMA 0: 0-15,32-47; NUMA 1: 16-31,48-63
POLICY = "cpu static, memory Static, topology {} scope pod"


def node(policy: str, *pods: PodOutcome) -> NodeOccupancy:
    return NodeOccupancy("n", TOPOLOGY, frozenset({0, 32}), POLICY.format(policy), list(pods),
                         topology_policy=policy)


def pod(label: str, exclusive=(), shared=(), admitted=True) -> PodOutcome:
    return PodOutcome(label, admitted, None if admitted else "TopologyAffinityError", (0,), tuple(exclusive),
                      tuple(shared))


# NUMA 0: 2 reserved, pod a holds 27 (15 exclusive, 12 its shared pool), 3 free; NUMA 1: pod b holds 12, 20 free
FULLISH = (pod("a", range(1, 16), range(33, 45)), pod("b", range(16, 28)), pod("rejected", admitted=False))


def test_used_and_free_per_numa_node():
    occ = node("single-numa-node", *FULLISH)
    assert occ.used_cpus_by_numa() == {0: 27, 1: 12}
    assert occ.free_cpus_by_numa() == {0: 3, 1: 20}
    assert occ.pinned_sizes() == [27, 12]


@pytest.mark.parametrize("policy,smallest,stranded", [
    ("single-numa-node", 4, 3),       # NUMA 0's 3 free CPUs hold no 4-CPU pod
    ("restricted", 4, 3),
    ("single-numa-node", 3, 0),
    ("single-numa-node", 21, 23),     # neither NUMA node holds 21
    ("best-effort", 21, 0),           # 23 free on the node hold 21 anywhere
    ("none", 24, 23),
    ("single-numa-node", None, None),  # no pinned pod in the pool: nothing to measure against
])
def test_stranded_cpus(policy, smallest, stranded):
    assert stranded_cpus(node(policy, *FULLISH), smallest) == stranded


def test_no_stranding_without_the_static_cpu_manager():
    occ = NodeOccupancy("n", TOPOLOGY, frozenset(), "cpu none, memory None, topology none scope container", [])
    assert stranded_cpus(occ, 4) is None
