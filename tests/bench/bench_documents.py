"""Benchmark: numaguard.lint.load.documents.load_text against yaml.load_all(CSafeLoader) on the same texts.

A script, not a test (pytest collects only test_*.py). Run:
    python tests/bench/bench_documents.py [--files 10000] [--repeat 3]
It generates small, varied pod manifests (some files hold several documents, some a
Deployment), loads each corpus with both loaders, and prints the best-of-N times and the
ratio. The product goal is that a whole lint costs at most 1.5x the plain PyYAML load, so the
loader alone should sit well below that.
"""
from __future__ import annotations

import argparse
import random
import sys
import time
from pathlib import Path

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from numaguard.lint.load.documents import load_text  # noqa: E402

POD = """\
apiVersion: v1
kind: Pod
metadata:
  name: {name}
  namespace: team-{team}
  labels:
    app: {name}
    tier: "{tier}"
  annotations:
    example.com/owner: team-{team}@example.com
spec:
  nodeSelector:
    node.example.com/pool: numa
  tolerations:
  - key: node.example.com/pool
    operator: Equal
    value: numa
    effect: NoSchedule
  resources:
    requests: {{cpu: "{cpu}", memory: {mem}Gi}}
    limits: {{cpu: "{cpu}", memory: {mem}Gi}}
  containers:
  - name: app
    image: registry.example.com/{name}:1.{minor}.0
    args: ["--port=8080", "--workers={cpu}"]
    ports:
    - containerPort: 8080
      protocol: TCP
    env:
    - name: GOMAXPROCS
      value: "{cpu}"
    - name: DEBUG
      value: "false"
    readinessProbe:
      httpGet: {{path: /healthz, port: 8080}}
      periodSeconds: 10
  - name: sidecar
    image: registry.example.com/proxy:2.{minor}
    resources:
      requests: {{cpu: 250m, memory: 128Mi}}
"""

DEPLOYMENT_HEAD = """\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: {name}
spec:
  replicas: {replicas}
  selector:
    matchLabels: {{app: {name}}}
  template:
"""


def corpus(files: int, seed: int = 7) -> list[str]:
    rng = random.Random(seed)
    texts = []
    for i in range(files):
        fields = dict(name=f"pod-{i}", team=rng.randint(1, 40), tier=rng.choice(["web", "db", "batch"]),
                      cpu=rng.choice([1, 2, 4, 8]), mem=rng.choice([1, 2, 4, 16]), minor=rng.randint(0, 30))
        pod = POD.format(**fields)
        roll = rng.random()
        if roll < 0.15:
            text = DEPLOYMENT_HEAD.format(name=fields["name"], replicas=rng.randint(1, 5)) + "".join(
                "    " + line + "\n" for line in pod.splitlines()[2:])
        elif roll < 0.25:
            text = pod + "---\n" + POD.format(**{**fields, "name": f"pod-{i}-b"})
        else:
            text = pod
        texts.append(text)
    return texts


def time_best(function, texts: list[str], repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        function(texts)
        best = min(best, time.perf_counter() - start)
    return best


def with_pyyaml(texts: list[str]) -> None:
    for text in texts:
        list(yaml.load_all(text, Loader=yaml.CSafeLoader))


def with_numaguard(texts: list[str]) -> None:
    for i, text in enumerate(texts):
        load_text(text, f"file-{i}.yaml")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=10_000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    texts = corpus(args.files)
    # Same answers first: the comparison means nothing otherwise.
    for text in texts[:200]:
        assert [d.data for d in load_text(text, "x.yaml")[0]] == list(yaml.load_all(text, Loader=yaml.CSafeLoader))
    pyyaml = time_best(with_pyyaml, texts, args.repeat)
    ours = time_best(with_numaguard, texts, args.repeat)
    size = sum(map(len, texts)) / 1e6
    print(f"corpus: {len(texts)} files, {size:.1f} MB; libyaml: {yaml.__with_libyaml__}")
    print(f"yaml.load_all(CSafeLoader): {pyyaml:.3f} s")
    print(f"numaguard.lint.load.documents.load_text:   {ours:.3f} s")
    print(f"ratio: {ours / pyyaml:.2f}")


if __name__ == "__main__":
    main()
