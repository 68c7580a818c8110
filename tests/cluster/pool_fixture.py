"""The recorded pool (tests/fixtures/cluster/pool.yaml) as a Scenario, and the `apiserver`
fixture serving it over real HTTPS (imported by the audit tests)."""
from __future__ import annotations

import sys
from pathlib import Path

import pytest
import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent))

from recorded_apiserver import RecordedApiServer, Scenario, proxy_unreachable  # noqa: E402

POOL = Path(__file__).resolve().parent.parent / "fixtures" / "cluster" / "pool.yaml"


def pool_scenario(*, healthy: bool = False, **changes) -> Scenario:
    """The recorded pool; `healthy`: numa-node-3's kubelet answers too (with numa-node-1's
    configuration), so that only the fault a test adds is wrong with the cluster."""
    data = yaml.safe_load(POOL.read_text())
    configz = {}
    for name, answer in data["configz"].items():
        if isinstance(answer, str) and answer.startswith("unreachable "):
            configz[name] = data["configz"]["numa-node-1"] if healthy else (503, proxy_unreachable(answer.split()[1]))
        else:
            configz[name] = answer
    scenario = Scenario(nodes=data["nodes"], pods=data["pods"], configz=configz, nrts=data["nrts"])
    for key, value in changes.items():
        setattr(scenario, key, value)
    return scenario


@pytest.fixture
def apiserver(tmp_path):
    """A started server with the recorded pool; tests may change `server.scenario` first."""
    with RecordedApiServer(pool_scenario(), tmp_path / "apiserver") as server:
        yield server


@pytest.fixture
def healthy_apiserver(tmp_path):
    """The recorded pool with every kubelet answering: only the fault a test adds is wrong."""
    with RecordedApiServer(pool_scenario(healthy=True), tmp_path / "apiserver") as server:
        yield server
