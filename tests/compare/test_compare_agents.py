"""`numaguard compare --agent URL...`: the node agents' /metrics sampled directly for the window
(no Prometheus), served here by exporters with the agent's series: the contended canary fails
on the same metrics as through Prometheus, identical groups do not fail, and an agent that
cannot be read makes the comparison inconclusive, never a pass on the containers that were."""
from __future__ import annotations

import json

import pytest

from conftest import run_cli
from exporters import Container, Exporter, FakeAgentCollector, free_port

WINDOW = ["--window", "6s", "--step", "1s", "--rate-interval", "2s"]


@pytest.fixture(scope="module")
def agents():
    node_a = FakeAgentCollector([Container("shop", f"web-canary-{i}", contended=True) for i in range(2)]
                                + [Container("twins", f"twin-{g}-0") for g in "ab"], seed=3)
    node_b = FakeAgentCollector([Container("shop", f"web-stable-{i}") for i in range(2)]
                                + [Container("twins", f"twin-{g}-1") for g in "ab"], seed=4)
    exporters = [Exporter(node_a), Exporter(node_b)]
    yield [f"http://{e.target}" for e in exporters]
    for e in exporters:
        e.close()


def test_the_contended_canary_fails_sampled_from_the_agents(agents, tmp_path):
    run = run_cli("compare", "--agent", agents[0], "--agent", agents[1] + "/metrics", *WINDOW,
                  "--canary", 'namespace="shop",pod=~"web-canary-.*"', "--control", 'namespace="shop",pod=~"web-stable-.*"',
                  "--output", str(tmp_path / "r.json"))
    assert run.returncode == 1, run.stderr
    report = json.loads((tmp_path / "r.json").read_text())
    assert {m["name"]: m["classification"] for m in report["metrics"]} == {
        "runqueue-delay": "worse", "cpu-throttled-periods": "worse", "cpu-throttled-time": "worse",
        "memory-remote": "same", "threads-outside": "same", "major-page-faults": "same", "cpu-pressure": "worse",
        "involuntary-context-switches": "worse"}
    assert report["verdict"]["score"] == 37.5 and report["verdict"]["problems"] == []
    assert report["source"] == f"2 node agent(s) sampled directly: {agents[0]}/metrics, {agents[1]}/metrics"
    runqueue = report["metrics"][0]
    assert runqueue["canary"]["query"] == ("increase of numaguard_container_runqueue_wait_seconds_total per second "
                                           "over 2 s of reads, per container")
    assert (runqueue["canary"]["series"], runqueue["canary"]["samples"], report["window"]["steps"]) == (2, 12, 6)
    assert 0.3 < runqueue["canary"]["summary"]["median"] < 0.6 and runqueue["control"]["summary"]["median"] < 0.01
    assert run.stderr.splitlines()[0] == ("numaguard: sampling 2 agent(s) every 1 s for 7 s (the window and the "
                                          "rates' 2 s before it)")


def test_identical_groups_across_two_agents_do_not_fail(agents):
    run = run_cli("compare", "--agent", agents[0], "--agent", agents[1], *WINDOW, "--format", "json",
                  "--canary", 'namespace="twins",pod=~"twin-a-.*"', "--control", 'namespace="twins",pod=~"twin-b-.*"')
    report = json.loads(run.stdout)
    assert run.returncode in (0, 3) and report["verdict"]["outcome"] in ("pass", "inconclusive"), run.stderr
    assert [m["name"] for m in report["metrics"] if m["classification"] == "worse"] == []


def test_an_agent_that_cannot_be_read_makes_it_inconclusive(agents):
    dead = f"http://127.0.0.1:{free_port()}/metrics"
    failing = FakeAgentCollector([Container("twins", "twin-c-0")], seed=5)
    failing.down_between = (0.0, float("inf"))            # every scrape answers 500
    broken = Exporter(failing)
    try:
        run = run_cli("compare", "--agent", agents[0], "--agent", dead, "--agent", f"http://{broken.target}", *WINDOW,
                      "--format", "json", "--canary", 'namespace="twins",pod="twin-a-0"',
                      "--control", 'namespace="twins",pod="twin-b-0"')
    finally:
        broken.close()
    assert run.returncode == 3 and "Traceback" not in run.stderr
    report = json.loads(run.stdout)
    assert report["verdict"]["problems"] == [
        f"agent {dead}: 8 of 8 reads failed (last: [Errno 111] Connection refused)",
        f"agent http://{broken.target}/metrics: 8 of 8 reads failed (last: HTTP 500)"]
    assert report["verdict"]["reason"].startswith("score 100, but the read is partial: agent ")
