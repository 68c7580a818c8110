"""`numaguard simulate`: the report (numaguard.lint.numa.simulate), its text form, and the commands
(numaguard.lint.cli.numa) through click and, once wired into the main group, the installed script."""
from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from conftest import FIXTURES, run_cli
from numaguard.lint.cli.numa import node as node_group, simulate as simulate_command
from numaguard.lint.numa.node import load_node_file
from numaguard.lint.numa.simulate import render_text, simulate

SIM = FIXTURES / "simulate"
FRAGMENTATION = str(SIM / "fragmentation.yaml")
FITS = str(SIM / "fits.yaml")
BEST_EFFORT = str(SIM / "kubelet-best-effort.yaml")


@pytest.fixture(scope="module")
def node():
    return load_node_file("builtin:dual-socket-ht")


def _pods(path):
    from numaguard.lint.carriers import BUILTIN_CARRIERS
    from numaguard.lint.cli.numa import _load_pods
    return _load_pods((path,), BUILTIN_CARRIERS)


@pytest.fixture(scope="module")
def report(node):
    return simulate(node, _pods(FRAGMENTATION))


# ------------------------------------------------------------------ the report

def test_report_shape(report):
    assert report["version"] == 1
    assert report["node"] == {"name": "dual-socket-ht", "numaNodes": 2, "cpus": 64,
                              "reservedCpus": [0, 32],
                              "topologyManagerPolicy": "single-numa-node",
                              "topologyManagerScope": "pod", "cpuManagerPolicy": "static",
                              "memoryManagerPolicy": "Static", "podLevelResourceManagers": True}
    assert [p["object"]["name"] for p in report["pods"]] == [
        "worker-0", "worker-1", "worker-2", "analytics"]
    assert report["summary"] == {"pods": 4, "admitted": 3, "rejected": 1}
    json.dumps(report)          # plain JSON all the way down


def test_admitted_pods_carry_cpus_and_memory(report):
    first = report["pods"][0]
    assert first["object"] == {"kind": "Pod", "namespace": "default", "name": "worker-0"}
    assert first["admitted"] and first["numaNodes"] == [0] and first["preferred"] is True
    assert len(first["cpus"]["exclusive"]["app"]) == 10
    assert len(first["cpus"]["podShared"]) == 2
    assert first["memory"] == {"0": {"memory": 8 * 2**30}}
    assert report["pods"][2]["numaNodes"] == [1]


def test_rejected_pod_has_reason_message_and_fix(report):
    rejected = report["pods"][3]
    assert rejected["object"]["kind"] == "Deployment"
    assert rejected["admitted"] is False and rejected["reason"] == "TopologyAffinityError"
    assert rejected["message"].startswith("Pod was rejected: Pod Scope")
    assert "fragmented" in rejected["fix"] and "20 CPUs" in rejected["fix"]
    assert "cpus" not in rejected


def test_free_per_numa_node_at_the_end(report):
    assert report["free"]["0"]["cpus"] == 6 and report["free"]["1"]["cpus"] == 20
    assert report["free"]["1"]["memory"] == 111 * 2**30


def test_capacity_section_per_distinct_pod(report):
    caps = {c["object"]["name"]: c for c in report["capacity"]}
    assert set(caps) == {"worker-0", "analytics"}        # three identical workers count once
    assert caps["worker-0"]["copies"] == 4
    assert caps["analytics"]["copies"] == 2
    assert caps["analytics"]["limitedBy"]["reason"] == "TopologyAffinityError"


def test_best_effort_admits_the_fragmented_pod_across_numa_nodes(node):
    import yaml
    kc = yaml.safe_load(open(BEST_EFFORT))
    out = simulate(node, _pods(FRAGMENTATION), kubelet_config=kc, capacity=False)
    last = out["pods"][3]
    assert last["admitted"] and last["preferred"] is False and last["numaNodes"] == [0, 1]
    assert "capacity" not in out


def test_text_draws_the_node_after_each_pod(report, node):
    text = render_text(report, node)
    assert "node dual-socket-ht: 64 CPUs, 2 NUMA nodes, reserved CPUs 0,32" in text
    assert "[1] Pod default/worker-0: admitted on NUMA 0 (preferred)" in text
    assert "[4] Deployment default/analytics: REJECTED TopologyAffinityError" in text
    assert "fix: the node is fragmented" in text
    assert text.count("R reserved") == 4                  # one drawing per pod
    # after worker-1 the CPUs of worker-0 show as taken ('#'), worker-1's as new ('+', 's')
    second = text.split("[2] ")[1].split("[3] ")[0]
    row = next(line for line in second.splitlines() if line.strip().startswith("t0"))
    assert row.split()[1:] == ["R"] + ["#"] * 6 + ["+"] * 5 + ["s"] + ["."] * 3
    assert "3 admitted, 1 rejected" in text


# ------------------------------------------------------------------ the commands (click)

def test_cli_json_and_exit_code_one_when_a_pod_is_rejected():
    result = CliRunner().invoke(simulate_command, ["--node", "builtin:dual-socket-ht",
                                                   "--format", "json", FRAGMENTATION])
    assert result.exit_code == 1
    assert json.loads(result.output)["summary"]["rejected"] == 1


def test_cli_exit_code_zero_when_everything_fits():
    result = CliRunner().invoke(simulate_command, ["--node", "builtin:dual-socket-ht", FITS])
    assert result.exit_code == 0, result.output
    assert "[1] Pod default/db-0: admitted on NUMA 0 (preferred)" in result.output


def test_cli_kubelet_config_overrides_the_node_profile():
    result = CliRunner().invoke(simulate_command, ["--node", "builtin:dual-socket-ht",
                                                   "--kubelet-config", BEST_EFFORT,
                                                   "--format", "json", FRAGMENTATION])
    assert result.exit_code == 0
    assert json.loads(result.output)["node"]["topologyManagerPolicy"] == "best-effort"


@pytest.mark.parametrize("args,needle", [
    (["--node", "no-such-node.yaml", FITS], "no-such-node.yaml: cannot read node description"),
    (["--node", "builtin:nope", FITS], "no built-in profile named 'nope'"),
    (["--node", "builtin:dual-socket-ht", "missing-pods.yaml"], "missing-pods.yaml: no such file"),
    (["--node", "builtin:dual-socket-ht", "--kubelet-config", FITS, FITS],
     "no KubeletConfiguration"),
    (["--node", "builtin:dual-socket-ht", BEST_EFFORT], "no Pod or pod template"),
])
def test_cli_usage_errors_exit_two_with_one_line(args, needle):
    result = CliRunner().invoke(simulate_command, args)
    assert result.exit_code == 2
    assert needle in result.output
    assert "Traceback" not in result.output and len(result.output.strip().splitlines()) == 1


def test_cli_kubelet_that_would_not_start_is_a_usage_error(tmp_path):
    bad = tmp_path / "kc.yaml"
    bad.write_text("apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\n"
                   "cpuManagerPolicy: static\n")
    result = CliRunner().invoke(simulate_command, ["--node", "builtin:dual-socket-ht",
                                                   "--kubelet-config", str(bad), FITS])
    assert result.exit_code == 2
    assert "the kubelet would not start" in result.output


def test_node_capture_prints_a_node_profile(tmp_path):
    cpu = tmp_path / "devices" / "system" / "cpu"
    for i in range(2):
        topo = cpu / f"cpu{i}" / "topology"
        topo.mkdir(parents=True)
        (topo / "core_id").write_text("0\n")
        (topo / "physical_package_id").write_text("0\n")
        (topo / "thread_siblings_list").write_text("0-1\n")
    (cpu / "online").write_text("0-1\n")
    node_dir = tmp_path / "devices" / "system" / "node" / "node0"
    node_dir.mkdir(parents=True)
    (node_dir / "cpulist").write_text("0-1\n")
    (node_dir / "meminfo").write_text("Node 0 MemTotal:       8388608 kB\n")
    result = CliRunner().invoke(node_group, ["capture", "--sysfs", str(tmp_path)])
    assert result.exit_code == 0, result.output
    assert "kind: NodeProfile" in result.output and "cpus:" in result.output


def test_node_capture_without_cpus_is_a_usage_error(tmp_path):
    result = CliRunner().invoke(node_group, ["capture", "--sysfs", str(tmp_path)])
    assert result.exit_code == 2 and "Traceback" not in result.output


# ------------------------------------------------------------------ the installed script

def test_script_lists_simulate_and_node():
    out = run_cli("--help")
    assert out.returncode == 0, out.stderr
    commands = {line.split()[0] for line in out.stdout.split("Commands:", 1)[1].splitlines() if line.strip()}
    assert {"lint", "node", "rules", "simulate"} <= commands     # others may join them


def test_script_simulate_exit_codes():
    assert run_cli("simulate", "--node", "builtin:dual-socket-ht", FITS).returncode == 0
    rejected = run_cli("simulate", "--node", "builtin:dual-socket-ht", "--format", "json",
                       FRAGMENTATION)
    assert rejected.returncode == 1
    assert json.loads(rejected.stdout)["pods"][3]["reason"] == "TopologyAffinityError"
    missing = run_cli("simulate", "--node", "nowhere.yaml", FITS)
    assert missing.returncode == 2 and "Traceback" not in missing.stderr


def test_script_node_capture_help():
    assert run_cli("node", "capture", "--help").returncode == 0


def test_simulate_reports_a_broken_file_and_plays_out_the_rest(tmp_path):
    (tmp_path / "a-broken.yaml").write_text("kind: Pod\nspec: {containers: [\n")
    (tmp_path / "b-pod.yaml").write_text(
        "apiVersion: v1\nkind: Pod\nmetadata: {name: small}\nspec:\n"
        "  resources:\n    requests: {cpu: \"2\", memory: 1Gi}\n    limits: {cpu: \"2\", memory: 1Gi}\n"
        "  containers:\n    - {name: app, image: registry.example.com/app:1}\n")
    proc = run_cli("simulate", "--node", "builtin:dual-socket-ht", "--format", "json", str(tmp_path))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "skipped" in proc.stderr and "a-broken.yaml:3" in proc.stderr
    report = json.loads(proc.stdout)
    assert [p["object"]["name"] for p in report["pods"]] == ["small"]
    assert report["pods"][0]["admitted"] is True
