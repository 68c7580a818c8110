"""The webhook with two declared pools (issue 13 §2), over real HTTPS against a real
`numaguard webhook serve`: each pod is judged against the node description of the pool it
targets (built once per worker), a pod of no pool against the default node, and a pool's own
`node:` file that cannot be read is exit 2 naming the pool."""
from __future__ import annotations

import copy
import subprocess

import pytest

from conftest import FIXTURES

from .conftest import NUMAGUARD, make_certs, start_server
from .reviews import managed_pod, review

NODES = FIXTURES / "pools"

TWO_POOLS = f"""\
apiVersion: numaguard.io/v1alpha1
kind: Config
pools:
  - name: cpu
    nodeLabels: {{node.example.com/pool: cpu}}
    taint: {{key: node.example.com/pool, value: cpu, effect: NoSchedule}}
    node: {NODES / "cpu-node.yaml"}
  - name: gpu
    nodeLabels: {{node.example.com/pool: gpu}}
    taint: {{key: node.example.com/pool, value: gpu, effect: NoSchedule}}
    node: {NODES / "gpu-node.yaml"}
node: builtin:dual-socket-ht
webhook: {{mode: enforce}}
"""


@pytest.fixture(scope="module")
def pools_server(tmp_path_factory):
    srv = start_server(tmp_path_factory.mktemp("webhook-pools"), "--workers", "2", "--threads", "2",
                       "--shutdown-delay", "0", config=TWO_POOLS)
    yield srv
    assert srv.stop() == 0


def pool_pod(pool: str | None, cpu: str, memory: str) -> dict:
    """A Guaranteed pod of `cpu` CPUs and `memory`, every container sharing the pod budget,
    targeting `pool` by its label and taint (None: no pool)."""
    pod = managed_pod()
    pod["metadata"]["name"] = f"{pool or 'plain'}-{cpu}-{memory.lower()}"
    spec = pod["spec"]
    spec["resources"] = {"requests": {"cpu": cpu, "memory": memory}, "limits": {"cpu": cpu, "memory": memory}}
    spec["containers"] = [{"name": "app", "image": "registry.example/app:1"}]
    if pool is None:
        del spec["nodeSelector"], spec["tolerations"]
        pod["metadata"]["annotations"] = {"numaguard.io/scope": "managed"}
    else:
        spec["nodeSelector"] = {"node.example.com/pool": pool}
        spec["tolerations"] = [{"key": "node.example.com/pool", "operator": "Equal", "value": pool,
                                "effect": "NoSchedule"}]
    return pod


def _decision(server, pod: dict) -> tuple[bool, list[str]]:
    resp = server.validate(review(copy.deepcopy(pod)))["response"]
    message = resp.get("status", {}).get("message", "")
    return resp["allowed"], [line.split(":")[0] for line in message.splitlines()[1:]]


def test_each_pod_is_judged_against_its_pools_node(pools_server):
    # 30 CPUs fit the cpu pool's 40-CPU NUMA nodes, not the gpu pool's 16 CPUs
    assert _decision(pools_server, pool_pod("cpu", "30", "8Gi")) == (True, [])
    allowed, rules = _decision(pools_server, pool_pod("gpu", "30", "8Gi"))
    assert (allowed, rules) == (False, ["NG301 spec.resources.requests.cpu"])
    # 100Gi fits the gpu pool's 256Gi NUMA node, not the cpu pool's 32Gi
    assert _decision(pools_server, pool_pod("gpu", "4", "100Gi")) == (True, [])
    assert _decision(pools_server, pool_pod("cpu", "4", "100Gi")) == (False, ["NG301 spec.resources.requests.memory"])
    # a pod of no pool (opted in) is judged against the default node: 64 CPUs, 128Gi per NUMA node
    assert _decision(pools_server, pool_pod(None, "4", "100Gi")) == (True, [])
    assert _decision(pools_server, pool_pod(None, "40", "8Gi")) == (False, ["NG301 spec.resources.requests.cpu"])


def test_the_deny_message_names_the_pools_node(pools_server):
    resp = pools_server.validate(review(pool_pod("gpu", "30", "8Gi")))["response"]
    assert "on an empty node gpu-node (topologyManagerPolicy single-numa-node, scope pod)" in resp["status"]["message"]


def test_a_pools_node_that_cannot_be_read_is_exit_2_naming_the_pool(tmp_path):
    make_certs(tmp_path / "c")
    (tmp_path / "config.yaml").write_text(TWO_POOLS.replace(str(NODES / "gpu-node.yaml"), str(tmp_path / "missing.yaml")))
    run = subprocess.run([*NUMAGUARD, "webhook", "serve", "--config", str(tmp_path / "config.yaml"), "--cert",
                          str(tmp_path / "c" / "tls.crt"), "--key", str(tmp_path / "c" / "tls.key")],
                         capture_output=True, text=True, timeout=60)
    assert run.returncode == 2
    assert run.stderr.strip() == (
        f"Error: {tmp_path / 'config.yaml'}: node of pool gpu: {tmp_path / 'missing.yaml'}: cannot read node "
        f"description: No such file or directory")
