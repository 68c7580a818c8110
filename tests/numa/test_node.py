"""Node descriptions: every format read from real files, built-in profiles, and bad input."""
from __future__ import annotations

import copy
from decimal import Decimal
from pathlib import Path

import pytest
import yaml
from hypothesis import given, settings, strategies as st

from numaguard.lint.k8s.cpuset import parse_cpuset
from numaguard.lint.numa.node import (DEFAULT_ASSUMED_MEMORY_PER_NUMA_NODE, Node, NodeError,
                            check_kubelet_config_fits, generated_topology,
                            list_builtin_profiles, load_node, load_node_file, parse_node_text)
from numaguard.lint.k8s.quantity import parse_quantity

NODES = Path(__file__).resolve().parent.parent / "fixtures" / "nodes"
GiB = 2**30
MiB = 2**20


def load(name: str, **kwargs) -> Node:
    return load_node_file(NODES / name, **kwargs)


# --- generator -----------------------------------------------------------------------------


def test_generator_numbers_first_threads_then_siblings():
    node = load("generator-dual-socket.yaml")
    topo = node.topology
    assert node.name == "generator-dual-socket"
    assert topo.num_cpus == 16 and topo.num_cores == 8 and topo.num_sockets == 2
    # ids 0..7 are first threads, socket 0 then socket 1; i and i+8 are siblings
    assert topo.cpus_in_numa([0]) == {0, 1, 2, 3, 8, 9, 10, 11}
    assert topo.cpus_in_numa([1]) == {4, 5, 6, 7, 12, 13, 14, 15}
    for i in range(8):
        assert topo.siblings(i) == {i, i + 8}
        assert topo.cpu_by_id[i + 8].core == i      # core id = lowest thread id
    assert topo.cpu_by_id[5].socket == 1


def test_generator_memory_hugepages_and_default_distances():
    topo = load("generator-dual-socket.yaml").topology
    for numa in topo.numa_nodes:
        assert numa.memory == 32 * GiB
        assert numa.hugepages == {GiB: 2, 2 * MiB: 512}
    assert topo.distances == {0: {0: 10, 1: 21}, 1: {0: 21, 1: 10}}


def test_generator_kubelet_config_path_is_relative_to_the_node_file():
    node = load("generator-dual-socket.yaml")
    assert node.kubelet_config["reservedSystemCPUs"] == "0,8"
    assert node.kubelet_config["kind"] == "KubeletConfiguration"


def test_generator_snc_same_socket_distance_and_uncore_caches():
    node = load("generator-snc2.yaml")
    topo = node.topology
    assert topo.num_numa_nodes == 4 and topo.num_sockets == 2 and topo.num_cpus == 64
    assert topo.distance(0, 1) == 11 and topo.distance(0, 2) == 21 and topo.distance(3, 2) == 11
    assert {c.socket for c in topo.cpus if c.numa in (2, 3)} == {1}
    # 8 cores per NUMA node, 4 per L3: two uncore caches per NUMA node, siblings share one
    assert len({c.uncore_cache for c in topo.cpus}) == 8
    assert topo.cpu_by_id[0].uncore_cache == topo.cpu_by_id[32].uncore_cache
    assert topo.cpu_by_id[0].uncore_cache != topo.cpu_by_id[4].uncore_cache
    assert node.kubelet_config["reservedSystemCPUs"] == "0,32"


# --- explicit ------------------------------------------------------------------------------


def test_explicit_per_socket_core_ids_become_unique():
    topo = load("explicit-dual-socket.yaml").topology
    assert topo.num_cores == 4
    assert topo.siblings(2) == {2, 6}
    assert topo.cpu_by_id[6].core == 2 and topo.cpu_by_id[5].core == 1
    assert topo.distance(0, 1) == 32
    assert topo.numa_nodes[0].hugepages == {2 * MiB: 256}
    assert topo.numa_nodes[1].hugepages == {}


def test_explicit_memory_per_numa_node_covers_every_numa_node_named():
    topo = load("explicit-memory-per-numa.yaml").topology
    assert topo.numa_ids == (0, 1)
    assert all(n.memory == 4 * GiB and n.hugepages == {2 * MiB: 128} for n in topo.numa_nodes)
    # both NUMA nodes on socket 0: the on-socket default distance
    assert topo.distance(0, 1) == 11


# --- lscpu ---------------------------------------------------------------------------------


def test_lscpu_dual_socket():
    node = load("lscpu-dual-socket.txt")
    topo = node.topology
    assert node.name == "lscpu-dual-socket"
    assert topo.num_cpus == 16 and topo.num_numa_nodes == 2 and topo.num_sockets == 2
    assert topo.siblings(3) == {3, 11}
    assert all(n.memory == DEFAULT_ASSUMED_MEMORY_PER_NUMA_NODE for n in topo.numa_nodes)
    assert any("assumed 64Gi per NUMA node" in note for note in node.notes)
    assert node.kubelet_config is None


def test_lscpu_memory_override():
    node = load("lscpu-dual-socket.txt", memory_per_numa_node="96Gi")
    assert all(n.memory == 96 * GiB for n in node.topology.numa_nodes)
    assert not any("assumed 64Gi" in note for note in node.notes)


def test_lscpu_other_column_order_and_offline_cpus():
    node = load("lscpu-offline.txt")
    topo = node.topology
    assert sorted(topo.cpu_by_id) == [0, 1, 2, 3, 4, 5]
    assert topo.siblings(0) == {0, 4} and topo.siblings(2) == {2}
    assert any("offline CPUs 6-7" in note for note in node.notes)


def test_lscpu_without_node_column_is_one_numa_node():
    node = load("lscpu-no-node.txt")
    assert node.topology.numa_ids == (0,) and node.topology.num_cpus == 4
    assert any("no NODE column" in note for note in node.notes)


# --- NodeResourceTopology ------------------------------------------------------------------


def test_node_resource_topology():
    node = load("nrt-dual-numa.yaml")
    topo = node.topology
    assert node.name == "worker-1"
    assert topo.numa_ids == (0, 1) and topo.num_cpus == 64
    assert topo.num_sockets == 2 and topo.distance(0, 1) == 21
    # memory capacity excludes hugepages: the NUMA node holds both
    assert topo.numa_nodes[0].memory == 62 * GiB + 2 * GiB
    assert topo.numa_nodes[0].hugepages == {GiB: 2}
    assert topo.numa_nodes[1].memory == 64 * GiB
    assert topo.siblings(0) == {0, 32}
    assert len(topo.cpus_in_numa([0])) == 32
    assert any("2 of 32 CPUs are reserved" in note for note in node.notes)
    assert any("topologyManagerScope: pod" in note for note in node.notes)


def test_node_resource_topology_groups_close_numa_nodes_into_sockets():
    node = load("nrt-snc.yaml")
    topo = node.topology
    assert topo.num_sockets == 2
    assert {c.socket for c in topo.cpus if c.numa in (0, 1)} == {0}
    assert {c.socket for c in topo.cpus if c.numa in (2, 3)} == {1}
    assert topo.cpus_per_core == 1                     # odd CPU counts: no SMT assumed
    assert topo.distance(2, 3) == 11


# --- multi-document, dict and builtin entry points ----------------------------------------


def test_profile_with_kubelet_configuration_document():
    node = load("multidoc-profile-and-kubelet.yaml")
    assert node.kubelet_config["reservedSystemCPUs"] == "0,4"
    assert node.topology.num_cpus == 8


def test_load_node_from_dict_and_text():
    text = (NODES / "explicit-dual-socket.yaml").read_text()
    from_dict = load_node(yaml.safe_load(text), source="x.yaml")
    from_text = load_node(None, text=text, source="x.yaml", base_dir=NODES)
    assert from_dict.topology == from_text.topology
    assert from_dict.source == "x.yaml"


def test_builtin_names_listed():
    assert {"single-socket", "dual-socket-ht", "dual-socket-snc2", "quad-socket",
            "eight-numa"} <= set(list_builtin_profiles())


@pytest.mark.parametrize("name, cpus, numa, sockets", [
    ("single-socket", 32, 1, 1),
    ("dual-socket-ht", 64, 2, 2),
    ("dual-socket-snc2", 96, 4, 2),
    ("quad-socket", 128, 4, 4),
    ("eight-numa", 256, 8, 2),
])
def test_builtin_profile_shapes(name, cpus, numa, sockets):
    node = load_node(f"builtin:{name}")
    assert node.source == f"builtin:{name}" and node.name == name
    assert (node.topology.num_cpus, node.topology.num_numa_nodes,
            node.topology.num_sockets, node.topology.cpus_per_core) == (cpus, numa, sockets, 2)


def test_dual_socket_ht_matches_the_design_example():
    node = load_node_file("builtin:dual-socket-ht")
    assert all(n.memory == 128 * GiB for n in node.topology.numa_nodes)
    assert parse_cpuset(node.kubelet_config["reservedSystemCPUs"]) == {0, 32}


@pytest.mark.parametrize("name", ["single-socket", "dual-socket-ht", "dual-socket-snc2",
                                  "quad-socket", "eight-numa"])
def test_builtin_kubelet_config_passes_kubelet_startup_checks(name):
    node = load_node(f"builtin:{name}")
    kc = node.kubelet_config
    assert kc["featureGates"] == {"PodLevelResources": True, "PodLevelResourceManagers": True}
    assert (kc["cpuManagerPolicy"], kc["memoryManagerPolicy"], kc["topologyManagerPolicy"],
            kc["topologyManagerScope"]) == ("static", "Static", "single-numa-node", "pod")
    # reserved CPUs: exactly the hyperthreads of core 0
    assert parse_cpuset(kc["reservedSystemCPUs"]) == node.topology.siblings(0)
    # memory_manager.go validateReservedMemory: sum over NUMA nodes equals
    # kubeReserved + systemReserved + evictionHard[memory.available]
    total = sum(parse_quantity(e["limits"]["memory"]) for e in kc["reservedMemory"])
    wanted = (parse_quantity(kc["kubeReserved"]["memory"])
              + parse_quantity(kc["systemReserved"]["memory"])
              + parse_quantity(kc["evictionHard"]["memory.available"]))
    assert total == wanted > 0
    # one non-zero entry per NUMA node, each on a NUMA node that exists
    assert sorted(e["numaNode"] for e in kc["reservedMemory"]) == list(node.topology.numa_ids)
    assert all(parse_quantity(e["limits"]["memory"]) > 0 for e in kc["reservedMemory"])
    assert set(kc["reservedMemory"][0]["limits"]) == {"memory"}
    # the Topology Manager refuses more than 8 NUMA nodes without max-allowable-numa-nodes
    assert node.topology.num_numa_nodes <= 8


def test_unknown_builtin_lists_the_available_ones():
    with pytest.raises(NodeError, match=r"^builtin:nope: .*available: .*dual-socket-ht"):
        load_node("builtin:nope")


# --- bad input -----------------------------------------------------------------------------

BAD = {
    "duplicate-cpu-id.yaml": ("spec.topology.cpus[3].id", "listed twice"),
    "core-on-two-numa-nodes.yaml": ("spec.topology.cpus[1].numa", "one NUMA node"),
    "no-numa-nodes.yaml": ("spec.topology.numaNodes", "no NUMA nodes"),
    "too-many-numa-nodes.yaml": ("spec.topology.numaNodesPerSocket", "at most 64"),
    "numa-id-too-large.yaml": ("spec.topology.numaNodes[0].id", "0..63"),
    "cpu-on-unknown-numa.yaml": ("spec.topology.cpus[2].numa", "NUMA node 3"),
    "reserved-cpus-not-on-node.yaml": ("spec.kubeletConfig.reservedSystemCPUs", "CPUs 8-9"),
    "reserved-cpus-bad-syntax.yaml": ("spec.kubeletConfig.reservedSystemCPUs", "not a CPU list"),
    "reserved-cpus-not-a-string.yaml": ("spec.kubeletConfig.reservedSystemCPUs", "cpuset string"),
    "reserved-memory-unknown-numa.yaml": ("spec.kubeletConfig.reservedMemory[1].numaNode",
                                          "NUMA node 2 does not exist"),
    "reserved-memory-too-much.yaml": ("spec.kubeletConfig.reservedMemory[0].limits.memory",
                                      "which has 2Gi"),
    "reserved-memory-bad-quantity.yaml": ("spec.kubeletConfig.reservedMemory[0].limits.memory",
                                          "not a Kubernetes quantity"),
    "bad-memory-quantity.yaml": ("spec.topology.memoryPerNumaNode", "not a Kubernetes quantity"),
    "negative-memory.yaml": ("spec.topology.memoryPerNumaNode", "negative, got -1Gi"),
    "sockets-not-a-number.yaml": ("spec.topology.sockets", "expected an integer"),
    "threads-zero.yaml": ("spec.topology.threadsPerCore", "at least 1"),
    "unknown-generator-field.yaml": ("spec.topology.coresPerNuma", "unknown field"),
    "bad-hugepage-name.yaml": ("spec.topology.hugepages.hugepages-huge", "not a hugepage"),
    "hugepages-exceed-memory.yaml": ("spec.topology", "more than its memory"),
    "distances-wrong-shape.yaml": ("spec.topology.distances", "expected 2 rows"),
    "distances-self-not-10.yaml": ("spec.topology.distances[1][1]", "itself is 10"),
    "cpus-not-a-list.yaml": ("spec.topology.cpus", "expected a list"),
    "cpu-missing-core.yaml": ("spec.topology.cpus[0].core", "required"),
    "no-topology-kind.yaml": ("spec.topology", "generator"),
    "wrong-api-version.yaml": ("apiVersion", "numaguard.io/v1alpha1"),
    "kubelet-config-file-missing.yaml": ("spec.kubeletConfig", "cannot read"),
    "kubelet-config-wrong-kind.yaml": ("spec.kubeletConfig.kind", "KubeletConfiguration"),
    "unknown-kind.yaml": ("kind", "got 'Node'"),
    "not-yaml.yaml": ("", "not valid YAML (line"),
    "spec-not-a-mapping.yaml": ("spec", "expected a mapping"),
    "nrt-bad-zone-name.yaml": ("zones[0].name", "node-0"),
    "nrt-no-numa-zones.yaml": ("zones", "no zone of type 'Node'"),
    "nrt-bad-cpu-capacity.yaml": ("zones[0].resources[0].capacity",
                                    "whole number of CPUs >= 1, got '1500m'"),
    "nrt-missing-cost.yaml": ("zones[0].costs", "no cost to node-1"),
    "lscpu-duplicate-cpu.txt": ("line 4", "listed twice (also on line 3)"),
    "lscpu-core-on-two-numa-nodes.txt": ("line 4", "one NUMA node"),
    "lscpu-no-core-column.txt": ("columns", "CORE"),
}


def test_every_bad_fixture_has_an_expectation():
    assert sorted(p.name for p in (NODES / "bad").iterdir() if p.is_file()) == sorted(BAD)


@pytest.mark.parametrize("name", sorted(BAD))
def test_bad_input_names_source_and_field(name):
    field, fragment = BAD[name]
    path = NODES / "bad" / name
    with pytest.raises(NodeError) as caught:
        load_node_file(path)
    message = str(caught.value)
    prefix = f"{path}: {field}: " if field else f"{path}: "
    assert message.startswith(prefix), message
    assert fragment in message, message


@pytest.mark.parametrize("data, fragment", [
    (None, "got nothing"),
    (42, "got an integer"),
    ([], "exactly one NodeProfile"),
    ({"kind": "NodeProfile", "apiVersion": "numaguard.io/v1alpha1"}, "spec: expected a mapping"),
    ({"kind": "NodeProfile", "apiVersion": "numaguard.io/v1alpha1",
      "spec": {"topology": {"sockets": True, "coresPerNumaNode": 1, "memoryPerNumaNode": 1}}},
     "spec.topology.sockets: expected an integer, got True"),
    ({"kind": "NodeProfile", "apiVersion": "numaguard.io/v1alpha1",
      "spec": {"topology": {"sockets": 1, "coresPerNumaNode": 1, "memoryPerNumaNode": 1.5}}},
     "spec.topology.memoryPerNumaNode: 1.5 is not a whole number of bytes"),
    ({"kind": "NodeProfile", "apiVersion": "numaguard.io/v1alpha1",
      "spec": {"topology": {"sockets": 1, "coresPerNumaNode": 100000, "threadsPerCore": 2,
                            "memoryPerNumaNode": 1}}}, "more than this tool models"),
    ({"kind": "NodeProfile", "apiVersion": "numaguard.io/v1alpha1",
      "spec": {"topology": {"sockets": 1, "coresPerNumaNode": 1, "memoryPerNumaNode": "1Gi"},
               "kubeletConfig": ["x"]}}, "spec.kubeletConfig: expected a path"),
])
def test_bad_parsed_documents(data, fragment):
    with pytest.raises(NodeError) as caught:
        load_node(data, source="mem")
    assert str(caught.value).startswith("mem: ")
    assert fragment in str(caught.value)


def test_huge_cpuset_range_is_refused_not_expanded():
    topo = load_node("builtin:single-socket").topology
    with pytest.raises(NodeError, match="reservedSystemCPUs: .*beyond any machine"):
        check_kubelet_config_fits({"reservedSystemCPUs": "0-999999999"}, topo, "kc", "kc")


def test_reserved_hugepages_beyond_the_numa_node():
    topo = load_node("builtin:dual-socket-ht").topology
    kc = {"reservedMemory": [{"numaNode": 1, "limits": {"hugepages-1Gi": "9Gi"}}]}
    with pytest.raises(NodeError, match=r"reservedMemory\[0\]\.limits\.hugepages-1Gi: .*8Gi"):
        check_kubelet_config_fits(kc, topo, "kc", "kc")


def test_missing_node_file():
    with pytest.raises(NodeError, match="^/no/such/node.yaml: cannot read node description: "
                       "No such file"):
        load_node_file("/no/such/node.yaml")


def test_empty_text():
    with pytest.raises(NodeError, match="^e.yaml: empty node description"):
        parse_node_text("# nothing\n", "e.yaml", None)


def test_quantity_memory_accepts_plain_bytes():
    node = load_node({"apiVersion": "numaguard.io/v1alpha1", "kind": "NodeProfile",
                      "metadata": {"name": "n"},
                      "spec": {"topology": {"sockets": 1, "coresPerNumaNode": 1,
                                            "memoryPerNumaNode": 1073741824}}})
    assert node.topology.numa_nodes[0].memory == int(Decimal(GiB))


# --- properties ----------------------------------------------------------------------------

@settings(deadline=None, max_examples=60)
@given(sockets=st.integers(1, 4), per_socket=st.integers(1, 4), cores=st.integers(1, 12),
       threads=st.integers(1, 4))
def test_generator_numbering_invariants(sockets, per_socket, cores, threads):
    topo = generated_topology({"sockets": sockets, "numaNodesPerSocket": per_socket,
                               "coresPerNumaNode": cores, "threadsPerCore": threads,
                               "memoryPerNumaNode": "1Gi"}, "prop")
    total_cores = sockets * per_socket * cores
    assert sorted(topo.cpu_by_id) == list(range(total_cores * threads))
    assert topo.num_cores == total_cores and topo.num_numa_nodes == sockets * per_socket
    for cpu in topo.cpus:
        first = cpu.id % total_cores
        assert topo.siblings(cpu.id) == {first + t * total_cores for t in range(threads)}
        assert cpu.core == first                          # lowest thread id of the core
        assert cpu.numa == first // cores                 # NUMA node by NUMA node
        assert cpu.socket == cpu.numa // per_socket       # socket by socket
    for a in topo.numa_ids:
        for b in topo.numa_ids:
            same_socket = a // per_socket == b // per_socket
            assert topo.distance(a, b) == (10 if a == b else 11 if same_socket else 21)


def _mutations(value, path=()):
    yield path
    if isinstance(value, dict):
        for key, child in value.items():
            yield from _mutations(child, path + (key,))
    elif isinstance(value, list):
        for index, child in enumerate(value):
            yield from _mutations(child, path + (index,))


ODD_VALUES = (None, True, -1, 1.5, "x", "1Gi", [], {}, [1], {"a": 1}, 10**30, "0-3", 65,
              "hugepages-1Gi", float("nan"))
# Each draw is a fresh copy: a later mutation step may write into a list or mapping inserted
# by an earlier one, and a strategy's values must never change (hypothesis reports that as
# FlakyStrategyDefinition and then fails on every run with the saved example).
odd_values = st.sampled_from(ODD_VALUES).map(copy.deepcopy)


@settings(deadline=None, max_examples=300)
@given(data=st.data())
def test_mangled_fixtures_raise_node_error_or_load(data):
    files = sorted(p for p in NODES.glob("*.yaml"))
    path = data.draw(st.sampled_from(files))
    documents = [d for d in yaml.safe_load_all(path.read_text()) if d is not None]
    documents = copy.deepcopy(documents)
    doc = data.draw(st.sampled_from(documents))
    targets = [p for p in _mutations(doc) if p]
    for _ in range(data.draw(st.integers(1, 3))):
        target = data.draw(st.sampled_from(targets))
        holder = doc
        try:
            for key in target[:-1]:
                holder = holder[key]
            holder[target[-1]] = data.draw(odd_values)
        except (KeyError, IndexError, TypeError):
            pass
    try:
        node = load_node(documents, source="mangled", base_dir=NODES)
    except NodeError as exc:
        assert str(exc).startswith("mangled: ") and "\n" not in str(exc)
    else:
        # what loads is a consistent machine: every CPU on a NUMA node that exists, ids unique
        topology = node.topology
        assert {c.numa for c in topology.cpus} <= set(topology.numa_ids)
        assert len(topology.cpu_by_id) == topology.num_cpus >= 1
