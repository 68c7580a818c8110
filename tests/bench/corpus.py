"""A generated corpus of workload manifests for the benchmarks: mixed kinds, about a third
with findings (defaulting trap, fractional CPU, containers over the pod budget)."""
from __future__ import annotations

import random
from pathlib import Path

KINDS = ["Pod", "Deployment", "StatefulSet", "DaemonSet", "Job", "CronJob", "ReplicaSet"]


def _pod_spec(rng: random.Random, flawed: bool, indent: str) -> str:
    cpu = rng.choice([2, 4, 6, 8])
    mem = rng.choice([2, 4, 8, 16])
    pod_requests = f"{{cpu: \"{cpu}\", memory: {mem}Gi}}"
    problem = rng.randrange(3) if flawed else None
    if problem == 1:
        pod_requests = f"{{cpu: {cpu * 1000 - 500}m, memory: {mem}Gi}}"
    lines = [
        "nodeSelector: {node.example.com/pool: numa}",
        "tolerations:",
        "  - {key: node.example.com/pool, operator: Equal, value: numa, effect: NoSchedule}",
        "resources:",
    ]
    if problem == 0:
        lines.append(f"  limits: {{cpu: \"{cpu}\", memory: {mem}Gi}}")
    else:
        lines += [f"  requests: {pod_requests}", f"  limits: {pod_requests}"]
    main_cpu = cpu // 2 if problem != 2 else cpu * 2
    lines += [
        "containers:",
        "  - name: app",
        f"    image: registry.example.com/app-{rng.randrange(1000)}:1.{rng.randrange(9)}",
        "    resources:",
        f"      requests: {{cpu: \"{main_cpu}\", memory: 1Gi}}",
        f"      limits: {{cpu: \"{main_cpu}\", memory: 1Gi}}",
        "    ports: [{containerPort: 8080}]",
        "    env: [{name: MODE, value: fast}, {name: LOG, value: info}]",
        "  - name: sidecar",
        "    image: registry.example.com/sidecar:2.0",
    ]
    return "\n".join(indent + line for line in lines)


def manifest(i: int, rng: random.Random, flawed_share: float = 1 / 3) -> str:
    kind = KINDS[i % len(KINDS)]
    flawed = rng.random() < flawed_share
    head = {"Pod": "v1", "Job": "batch/v1", "CronJob": "batch/v1"}.get(kind, "apps/v1")
    meta = f"metadata:\n  name: w{i}\n  namespace: team-{i % 17}\n  labels: {{app: w{i}}}\n"
    if kind == "Pod":
        return f"apiVersion: {head}\nkind: Pod\n{meta}spec:\n{_pod_spec(rng, flawed, '  ')}\n"
    if kind == "CronJob":
        return (f"apiVersion: {head}\nkind: CronJob\n{meta}spec:\n  schedule: \"*/5 * * * *\"\n"
                f"  jobTemplate:\n    spec:\n      template:\n        spec:\n"
                f"          restartPolicy: OnFailure\n{_pod_spec(rng, flawed, '          ')}\n")
    return (f"apiVersion: {head}\nkind: {kind}\n{meta}spec:\n  selector:\n    matchLabels: {{app: w{i}}}\n"
            f"  template:\n    metadata:\n      labels: {{app: w{i}}}\n    spec:\n"
            f"{_pod_spec(rng, flawed, '      ')}\n")


def write_corpus(folder: Path, count: int, seed: int = 7, flawed_share: float = 1 / 3) -> list[Path]:
    """`count` manifests, one per file; `flawed_share` of them with an error or warning."""
    rng = random.Random(seed)
    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    for i in range(count):
        path = folder / f"m{i:05d}.yaml"
        path.write_text(manifest(i, rng, flawed_share))
        paths.append(path)
    return paths
