"""`capture_node` on fabricated sysfs trees and on this machine's /sys."""
from __future__ import annotations

import os
from pathlib import Path

import pytest
import yaml

from numaguard.lint.k8s.cpuset import parse_cpuset
from numaguard.lint.numa.capture import capture_node, node_profile_yaml
from numaguard.lint.numa.node import Node, NodeError, load_node, load_node_file, parse_node_text

KiB = 1024
GiB = 2**30


def write_tree(root: Path, files: dict[str, str]) -> Path:
    for relative, content in files.items():
        path = root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(content + "\n")
    return root


def cpu(n: int, package: int, core: int, l3: int | None = None) -> dict[str, str]:
    files = {f"devices/system/cpu/cpu{n}/topology/physical_package_id": str(package),
             f"devices/system/cpu/cpu{n}/topology/core_id": str(core)}
    if n:   # like the kernel: cpu0 usually has no `online` file
        files[f"devices/system/cpu/cpu{n}/online"] = "1"
    if l3 is not None:
        files[f"devices/system/cpu/cpu{n}/cache/index3/id"] = str(l3)
    return files


def numa(n: int, cpulist: str, mem_kb: int, distance: str,
         hugepages: dict[int, int] | None = None) -> dict[str, str]:
    base = f"devices/system/node/node{n}"
    files = {f"{base}/cpulist": cpulist, f"{base}/distance": distance,
             f"{base}/meminfo": (f"Node {n} MemTotal:       {mem_kb} kB\n"
                                 f"Node {n} MemFree:        {mem_kb // 2} kB")}
    for size_kb, count in (hugepages or {}).items():
        files[f"{base}/hugepages/hugepages-{size_kb}kB/nr_hugepages"] = str(count)
    return files


def tree(tmp_path: Path, *parts: dict[str, str], online: str | None = None) -> Path:
    files: dict[str, str] = {}
    for part in parts:
        files.update(part)
    if online is not None:
        files["devices/system/cpu/online"] = online
    return write_tree(tmp_path / "sys", files)


def load_captured(profile: dict) -> Node:
    return parse_node_text(node_profile_yaml(profile), "captured.yaml", None)


def test_single_numa_node_with_smt_and_hugepages(tmp_path):
    root = tree(tmp_path, cpu(0, 0, 0), cpu(1, 0, 1), cpu(2, 0, 0), cpu(3, 0, 1),
                numa(0, "0-3", 16 * GiB // KiB, "10", {2048: 512, 1048576: 0}), online="0-3")
    profile = capture_node(root, name="box")
    assert profile["metadata"] == {"name": "box"}
    assert profile["spec"]["topology"]["numaNodes"] == [
        {"id": 0, "memory": "16Gi", "hugepages": {"hugepages-2Mi": 512}}]
    assert "status" not in profile
    node = load_captured(profile)
    topo = node.topology
    assert topo.num_cpus == 4 and topo.num_cores == 2
    assert topo.siblings(0) == {0, 2} and topo.siblings(3) == {1, 3}
    assert topo.numa_nodes[0].memory == 16 * GiB
    assert topo.numa_nodes[0].hugepages == {2 * 2**20: 512}


def test_two_sockets_with_per_package_core_ids(tmp_path):
    # core_id restarts on every package: (package, core_id) is the core
    parts = [cpu(0, 0, 0), cpu(1, 0, 1), cpu(2, 1, 0), cpu(3, 1, 1),
             cpu(4, 0, 0), cpu(5, 0, 1), cpu(6, 1, 0), cpu(7, 1, 1),
             numa(0, "0-1,4-5", 8 * GiB // KiB, "10 21", {1048576: 2}),
             numa(1, "2-3,6-7", 8 * GiB // KiB, "21 10")]
    profile = capture_node(tree(tmp_path, *parts, online="0-7"))
    cpus = {c["id"]: c for c in profile["spec"]["topology"]["cpus"]}
    assert cpus[6] == {"id": 6, "core": 2, "socket": 1, "numa": 1}   # lowest thread id of core
    assert profile["spec"]["topology"]["distances"] == [[10, 21], [21, 10]]
    topo = load_captured(profile).topology
    assert topo.num_sockets == 2 and topo.num_cores == 4
    assert topo.siblings(2) == {2, 6}
    assert topo.cpus_in_numa([1]) == {2, 3, 6, 7}
    assert topo.distance(1, 0) == 21
    assert topo.numa_nodes[0].hugepages == {GiB: 2}


def test_two_numa_nodes_per_socket_with_uncore_caches(tmp_path):
    parts = [cpu(i, 0, i, l3=i // 2) for i in range(4)]
    parts += [numa(0, "0-1", 4 * GiB // KiB, "10 11"), numa(1, "2-3", 4 * GiB // KiB, "11 10")]
    topo = load_captured(capture_node(tree(tmp_path, *parts, online="0-3"))).topology
    assert topo.num_sockets == 1 and topo.num_numa_nodes == 2
    assert topo.distance(0, 1) == 11
    assert [c.uncore_cache for c in topo.cpus] == [0, 0, 1, 1]


def test_offline_cpus_are_left_out(tmp_path):
    parts = [cpu(0, 0, 0), cpu(1, 0, 1), cpu(2, 0, 2),
             {"devices/system/cpu/cpu3/online": "0"},        # offline: no topology dir
             numa(0, "0-2", GiB // KiB, "10")]
    profile = capture_node(tree(tmp_path, *parts, online="0-2"))
    assert [c["id"] for c in profile["spec"]["topology"]["cpus"]] == [0, 1, 2]
    assert any("offline CPUs left out: 3" in w for w in profile["status"]["warnings"])
    node = load_captured(profile)
    assert node.topology.num_cpus == 3
    assert any("offline" in note for note in node.notes)   # warnings travel into Node.notes


def test_cpu_offlined_through_its_own_online_file(tmp_path):
    parts = [cpu(0, 0, 0), cpu(1, 0, 1), numa(0, "0-1", GiB // KiB, "10")]
    root = tree(tmp_path, *parts, online="0-1")
    (root / "devices/system/cpu/cpu1/online").write_text("0\n")
    profile = capture_node(root)
    assert [c["id"] for c in profile["spec"]["topology"]["cpus"]] == [0]


def test_no_numa_directories_uses_proc_meminfo(tmp_path):
    root = tree(tmp_path, cpu(0, 0, 0), cpu(1, 0, 0), online="0-1")
    write_tree(tmp_path, {"proc/meminfo": "MemTotal:        2048000 kB\nMemFree: 1 kB"})
    profile = capture_node(root, name="flat")
    assert profile["spec"]["topology"]["numaNodes"] == [{"id": 0, "memory": "2000Mi"}]
    assert "distances" not in profile["spec"]["topology"]
    assert any("no NUMA node directories" in w for w in profile["status"]["warnings"])
    topo = load_captured(profile).topology
    assert topo.numa_ids == (0,) and topo.siblings(0) == {0, 1}
    assert topo.numa_nodes[0].memory == 2048000 * KiB


def test_no_numa_directories_and_no_meminfo_gives_zero_memory_and_a_warning(tmp_path):
    root = tree(tmp_path, cpu(0, 0, 0), online="0")
    profile = capture_node(root)
    assert profile["spec"]["topology"]["numaNodes"] == [{"id": 0, "memory": "0"}]
    assert any("memory 0" in w for w in profile["status"]["warnings"])
    assert load_captured(profile).topology.numa_nodes[0].memory == 0


def test_bad_distance_file_falls_back_to_defaults(tmp_path):
    parts = [cpu(0, 0, 0), cpu(1, 1, 0), numa(0, "0", GiB // KiB, "10"),
             numa(1, "1", GiB // KiB, "21 10")]
    profile = capture_node(tree(tmp_path, *parts, online="0-1"))
    assert "distances" not in profile["spec"]["topology"]
    assert any("node0/distance" in w for w in profile["status"]["warnings"])
    assert load_captured(profile).topology.distance(0, 1) == 21


def test_missing_sysfs_root_is_an_error(tmp_path):
    with pytest.raises(NodeError, match="no online CPUs"):
        capture_node(tmp_path / "nothing")


def test_yaml_is_one_cpu_per_line_and_round_trips_through_a_file(tmp_path):
    parts = [cpu(0, 0, 0), cpu(1, 0, 0), numa(0, "0-1", GiB // KiB, "10")]
    profile = capture_node(tree(tmp_path, *parts, online="0-1"), name="rt")
    text = node_profile_yaml(profile)
    assert "- {id: 1, core: 0, socket: 0, numa: 0}" in text
    assert yaml.safe_load(text) == profile
    path = tmp_path / "rt.yaml"
    path.write_text(text)
    node = load_node_file(path)
    assert node.name == "rt" and node.topology.siblings(1) == {0, 1}
    assert load_node(profile, source="dict").topology == node.topology


def test_this_machine_gives_a_loadable_node():
    # Linux only, like the kubelet: a machine without sysfs fails here rather than skipping.
    assert Path("/sys/devices/system/cpu").is_dir(), "no /sys/devices/system/cpu on this machine"
    profile = capture_node("/sys")
    node = load_captured(profile)
    # glibc counts online CPUs from the same sysfs file; NUMA nodes are the nodeN directories
    # (none on a kernel without NUMA support: one node).
    assert node.topology.num_cpus == os.sysconf("SC_NPROCESSORS_ONLN")
    numa_dirs = [p for p in Path("/sys/devices/system/node").glob("node*") if p.name[4:].isdigit()]
    assert node.topology.num_numa_nodes == (len(numa_dirs) or 1)
    online = Path("/sys/devices/system/cpu/online").read_text().strip()
    assert set(node.topology.cpu_by_id) == set(parse_cpuset(online))
