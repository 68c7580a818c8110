"""Benchmark the kubelet admission simulator (numaguard.lint.numa.admission).

    python tests/bench/bench_numa.py [--repeat 200] [--pods 1000]

1. One 8-CPU pod (pod-level resources, scope pod, single-numa-node) admitted on an empty
   8-NUMA, 256-CPU node with two threads per core (builtin:eight-numa): median ms per admit
   (goal < 5 ms). The fresh state is built outside the timed region.
2. 1,000 pods of mixed sizes (1-16 CPUs, pod-level and classic) admitted one after another on
   that node, maxPods raised so the Topology/CPU Managers decide: total seconds (goal < 2 s).
3. Cost growth: the same 8-CPU admission on 2, 4 and 8 NUMA nodes (16 cores x 2 threads each).
"""
from __future__ import annotations

import argparse
import copy
import statistics
import time

from numaguard.lint.numa.admission import admit, build_state
from numaguard.lint.numa.node import load_node, load_node_file

GiB = "Gi"


def pod_level_pod(cpus: int, memory_gib: int) -> dict:
    amount = {"cpu": str(cpus), "memory": f"{memory_gib}{GiB}"}
    return {"spec": {"resources": {"requests": dict(amount), "limits": dict(amount)},
                     "containers": [{"name": "app"}, {"name": "sidecar"}]}}


def classic_pod(cpus: int, memory_gib: int) -> dict:
    amount = {"cpu": str(cpus), "memory": f"{memory_gib}{GiB}"}
    return {"spec": {"containers": [{"name": "app", "resources": {"requests": dict(amount),
                                                                  "limits": dict(amount)}}]}}


def median_admit_ms(node, pod: dict, repeat: int, kubelet_config: dict | None = None) -> float:
    kc = kubelet_config if kubelet_config is not None else node.kubelet_config
    samples = []
    admit(build_state(node.topology, kc), pod, "warm-up")
    for _ in range(repeat):
        state = build_state(node.topology, kc)
        start = time.perf_counter()
        placement = admit(state, pod, "bench")
        samples.append((time.perf_counter() - start) * 1000)
        assert placement.admitted, placement
    return statistics.median(samples)


def many_pods(node, count: int) -> tuple[float, int, int]:
    kc = copy.deepcopy(node.kubelet_config)
    kc["maxPods"] = count + 1
    state = build_state(node.topology, kc)
    sizes = [1, 2, 4, 8, 2, 16, 1, 4]
    pods = []
    for i in range(count):
        cpus = sizes[i % len(sizes)]
        make = classic_pod if i % 5 == 4 else pod_level_pod
        pods.append(make(cpus, max(1, cpus // 2)))
    start = time.perf_counter()
    admitted = sum(admit(state, pod, f"pod-{i}").admitted for i, pod in enumerate(pods))
    return time.perf_counter() - start, admitted, count - admitted


def generated(numa_per_socket: int):
    kc = copy.deepcopy(load_node_file("builtin:eight-numa").kubelet_config)
    numa = 2 * numa_per_socket
    kc["reservedMemory"] = [{"numaNode": n, "limits": {"memory": "512Mi"}} for n in range(numa)]
    cores = 16 * numa
    kc["reservedSystemCPUs"] = f"0,{cores}"
    doc = {"apiVersion": "numaguard.io/v1alpha1", "kind": "NodeProfile",
           "metadata": {"name": f"{numa}-numa"},
           "spec": {"topology": {"sockets": 2, "numaNodesPerSocket": numa_per_socket,
                                 "coresPerNumaNode": 16, "threadsPerCore": 2,
                                 "memoryPerNumaNode": "64Gi"},
                    "kubeletConfig": kc}}
    return load_node(doc, source=f"generated-{numa}-numa")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=200)
    parser.add_argument("--pods", type=int, default=1000)
    args = parser.parse_args()

    node = load_node_file("builtin:eight-numa")
    one = median_admit_ms(node, pod_level_pod(8, 8), args.repeat)
    print(f"one 8-CPU pod, 8 NUMA nodes / {node.topology.num_cpus} CPUs, single-numa-node, "
          f"scope pod: median {one:.2f} ms per admit (goal < 5 ms)")

    seconds, admitted, rejected = many_pods(node, args.pods)
    print(f"{args.pods} pods of mixed sizes on that node: {seconds:.2f} s "
          f"({admitted} admitted, {rejected} rejected; goal < 2 s)")

    print("cost growth with NUMA nodes (8-CPU pod, median per admit):")
    for per_socket in (1, 2, 4):
        grown = generated(per_socket)
        ms = median_admit_ms(grown, pod_level_pod(8, 8), max(args.repeat // 2, 10))
        print(f"  {grown.topology.num_numa_nodes} NUMA nodes, {grown.topology.num_cpus} CPUs: "
              f"{ms:.2f} ms")


if __name__ == "__main__":
    main()
