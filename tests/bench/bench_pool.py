"""Benchmark: the pool rules (NG401 over every KubeletConfiguration of one declared pool, the
checkpoint rules over every checkpoint) for a pool of 1,000 nodes, against the per-document
lint of the same documents, measured in this run.

    python tests/bench/bench_pool.py
"""
from __future__ import annotations

import json
import time

import yaml

from numaguard.lint.config import config_from_dict
from numaguard.lint.engine import lint_documents
from numaguard.lint.k8s.checkpoints import cpu_checkpoint_json
from numaguard.lint.load.documents import load_text
from numaguard.lint.rules.node import CheckpointExtract, checkpoint_findings
from numaguard.lint.rules.pool import KubeletExtract, pool_findings

NODES = 1000
CONFIG = {"apiVersion": "kubelet.config.k8s.io/v1beta1", "kind": "KubeletConfiguration",
          "featureGates": {"PodLevelResourceManagers": True}, "cpuManagerPolicy": "static",
          "memoryManagerPolicy": "Static", "topologyManagerPolicy": "single-numa-node",
          "topologyManagerScope": "pod", "reservedSystemCPUs": "0,32",
          "kubeReserved": {"memory": "1Gi"}, "systemReserved": {"memory": "1Gi"},
          "reservedMemory": [{"numaNode": 0, "limits": {"memory": "2148Mi"}}]}


def main() -> None:
    configs = [dict(CONFIG, topologyManagerPolicy="best-effort") if i % 100 == 7 else CONFIG for i in range(NODES)]
    text = "---\n".join(yaml.safe_dump(c) for c in configs)
    checkpoints = [cpu_checkpoint_json("static", "0,3-31,32,35-63", {f"uid-{i}": {"app": "1-2,33-34"}},
                                       {f"uid-{i}": "1-2,33-34"}) for i in range(NODES)]
    docs, errors = load_text(text, "pool.yaml")
    t = time.perf_counter()
    pool = config_from_dict({"pool": {"kubeletConfigs": ["pool.yaml"]}})     # the file is the pool's
    result = lint_documents(docs, load_errors=errors, config=pool)
    whole = time.perf_counter() - t
    t = time.perf_counter()
    extracts = [KubeletExtract.of(f"node-{i}", c) for i, c in enumerate(configs)]
    found = pool_findings(extracts)
    pool = time.perf_counter() - t
    t = time.perf_counter()
    cps = [CheckpointExtract.of(f"node-{i}:cpu_manager_state", json.loads(json.dumps(c)), "cpu")
           for i, c in enumerate(checkpoints)]
    cp_found = checkpoint_findings(cps, kubelet_config=CONFIG)
    cp_time = time.perf_counter() - t
    ng401 = sum(f.rule == "NG401" for f in result.findings)
    print(f"lint of {NODES} KubeletConfigurations (per-document rules + pool rules): {whole:.3f}s, {ng401} NG401")
    print(f"pool rules alone (extracts + NG401): {pool:.3f}s = {pool / whole:.2f}x the whole lint, "
          f"{len(found)} findings")
    print(f"{NODES} V4 checkpoints read, verified and judged: {cp_time:.3f}s = {cp_time / whole:.2f}x, "
          f"{len(cp_found)} findings")


if __name__ == "__main__":
    main()
