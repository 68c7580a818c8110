"""Benchmark: the start-up checks of a restart (validateState of both managers, NG408,
NG419-NG422) on the checkpoints of the benchmark machine (builtin:eight-numa, 256 CPUs, 8 NUMA
nodes) full of pods (one 2-CPU container each, with a pod-level entry, and its memory block),
against reading and verifying the same files (checksums, versions), measured in this run; and
the lint of the configuration node inspect adds for its prediction, against the lint of the same
file by `numaguard lint` (the same engine).

    python tests/bench/bench_restart.py
"""
from __future__ import annotations

import json
import tempfile
import time
from pathlib import Path

import yaml

from numaguard.lint.k8s.checkpoints import (cpu_checkpoint_json, memory_checkpoint_json, read_cpu_checkpoint,
                                            read_memory_checkpoint)
from numaguard.lint.k8s.cpuset import format_cpuset
from numaguard.lint.numa.node import load_node_file
from numaguard.lint.numa.restart import MemoryMachine
from numaguard.lint.rules.node import CheckpointExtract, checkpoint_findings

GIB = 2**30
ROUNDS = 50


def checkpoints(node) -> tuple[dict, dict]:
    """Every NUMA node's CPUs but its first core's two threads handed out, two per pod; 1Gi per pod."""
    topology, kc = node.topology, node.kubelet_config
    reserved = {0, 128}
    entries, pods, blocks, held = {}, {}, {}, {n: 0 for n in topology.numa_ids}
    free = sorted(c.id for c in topology.cpus if c.id not in reserved)
    numa_of = {c.id: c.numa for c in topology.cpus}
    by_numa: dict[int, list[int]] = {}
    for cpu in free[: len(free) - 16]:
        by_numa.setdefault(numa_of[cpu], []).append(cpu)
    n = 0
    for numa, cpus in sorted(by_numa.items()):
        for i in range(0, len(cpus) - 1, 2):
            uid = f"uid-{n}"
            entries[uid] = {"app": format_cpuset(cpus[i:i + 2])}
            pods[uid] = format_cpuset(cpus[i:i + 2])
            blocks[uid] = {"app": [{"numaAffinity": [numa], "type": "memory", "size": GIB}]}
            held[numa] += GIB
            n += 1
    taken = {c for s in entries.values() for c in map(int, _ids(s["app"]))}
    cpu = cpu_checkpoint_json("static", format_cpuset(set(numa_of) - taken), entries, pods)
    reserved_memory = {e["numaNode"]: e["limits"]["memory"] for e in kc["reservedMemory"]}
    machine = {}
    for numa_node in topology.numa_nodes:
        hugepages = sum(size * count for size, count in numa_node.hugepages.items())
        system = _bytes(reserved_memory.get(numa_node.id, "0"))
        alloc = numa_node.memory - system - hugepages
        assignments = sum(1 for b in blocks.values() if b["app"][0]["numaAffinity"] == [numa_node.id])
        machine[str(numa_node.id)] = {"numberOfAssignments": assignments, "cells": [numa_node.id], "memoryMap": {
            "memory": {"total": numa_node.memory, "systemReserved": system, "allocatable": alloc,
                       "reserved": held[numa_node.id], "free": alloc - held[numa_node.id]},
            **{f"hugepages-{size // GIB}Gi": {"total": size * count, "systemReserved": 0, "allocatable": size * count,
                                              "reserved": 0, "free": size * count}
               for size, count in numa_node.hugepages.items()}}}
    memory = memory_checkpoint_json("Static", machine, blocks,
                                    {uid: {"memoryBlocks": b["app"]} for uid, b in blocks.items()})
    return cpu, memory


def _ids(text: str):
    from numaguard.lint.k8s.cpuset import parse_cpuset
    return parse_cpuset(text)


def _bytes(quantity: str) -> int:
    from numaguard.lint.k8s.quantity import parse_quantity
    return int(parse_quantity(quantity))


def timed(fn) -> tuple[float, object]:
    t = time.perf_counter()
    for _ in range(ROUNDS - 1):
        fn()
    out = fn()
    return (time.perf_counter() - t) / ROUNDS, out


def main() -> None:
    node = load_node_file("builtin:eight-numa")
    kc, topology = node.kubelet_config, node.topology
    cpu, memory = checkpoints(node)
    machine = MemoryMachine({n.id: {"memory": n.memory, **{f"hugepages-{s // GIB}Gi": s * c for s, c in
                                                             n.hugepages.items()}} for n in topology.numa_nodes})
    texts = json.dumps(cpu), json.dumps(memory)
    read, _ = timed(lambda: (read_cpu_checkpoint(json.loads(texts[0])), read_memory_checkpoint(json.loads(texts[1]))))
    extracts = [CheckpointExtract.of("cpu_manager_state", json.loads(texts[0]), "cpu"),
                CheckpointExtract.of("memory_manager_state", json.loads(texts[1]), "memory")]
    before, _ = timed(lambda: checkpoint_findings(extracts, kubelet_config=kc))
    after, found = timed(lambda: checkpoint_findings(extracts, kubelet_config=kc, topology=topology, machine=machine))
    pods = len(json.loads(texts[0])["entries"])
    print(f"{pods} pods on {topology.num_cpus} CPUs / {topology.num_numa_nodes} NUMA nodes; "
          f"checkpoints {len(texts[0]) + len(texts[1])} bytes")
    print(f"read and verify both checkpoints (baseline): {read * 1000:.2f} ms")
    print(f"checkpoint rules without the machine: {before * 1000:.2f} ms = {before / read:.2f}x the reading")
    print(f"with the start-up checks (validateState of both managers, NG422): {after * 1000:.2f} ms = "
          f"{after / read:.2f}x the reading, {(after - before) * 1000:.2f} ms more; {len(found)} findings")

    from numaguard.lint.config import config_from_dict
    from numaguard.lint.engine import lint_documents
    from numaguard.lint.load.documents import load_text
    from numaguard.lint.node.restart import config_refusals

    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "config.yaml"
        path.write_text(yaml.safe_dump(kc))

        def lint_only():
            docs, errors = load_text(path.read_bytes(), str(path))
            return lint_documents(docs, config=config_from_dict({}), node=node, load_errors=errors)

        lint_time, _ = timed(lint_only)
        refusal_time, refused = timed(lambda: config_refusals(str(path), node, (1, 37)))
    print(f"lint of the configuration (baseline, numaguard lint's engine): {lint_time * 1000:.2f} ms")
    print(f"node inspect's configuration refusals: {refusal_time * 1000:.2f} ms = {refusal_time / lint_time:.2f}x; "
          f"{len(refused)} refusal(s)")


if __name__ == "__main__":
    main()
