"""What a small lint imports (a structural test, not a timing: the timing is
tests/bench/bench_cold_start.py). `numaguard lint pod.yaml`, as pre-commit and `kubectl numaguard
lint` run it, must not import the modules only other runs use."""
from __future__ import annotations

import json
import subprocess
import sys
from importlib.metadata import entry_points

import pytest

from conftest import MANAGED_BURSTABLE_POD

# What only other runs need: the other commands' libraries and front ends, click (the quick
# lint reads its command line itself: numaguard.lint.cli.lint_args), the simulator (only with a
# node description), the rules of other targets (kubelet configurations, live pods), the
# kubelet model and the checkpoint reader (only when a configuration or a checkpoint is read),
# the readers of platform objects, the reports not asked for, and the standard-library modules
# they bring.
HEAVY = ("click", "jsonschema", "kubernetes", "grpc", "google.protobuf", "flask", "gunicorn", "h11",
         "prometheus_client", "cryptography", "jsonpatch", "urllib3", "ruamel",
         "numaguard.lint.cli.main", "numaguard.lint.cli.numa", "numaguard.lint.cli.audit",
         "numaguard.lint.cli.webhook", "numaguard.lint.numa", "numaguard.lint.cluster", "numaguard.lint.node",
         "numaguard.webhook", "numaguard.lint.rules.kubelet", "numaguard.lint.rules.kubelet_validation",
         "numaguard.lint.rules.numa", "numaguard.lint.rules.state", "numaguard.lint.rules.docs",
         "numaguard.lint.rules.processes", "numaguard.lint.fixing", "numaguard.lint.cli.fix",
         "numaguard.lint.k8s.kubelet", "numaguard.lint.k8s.kubelet_gates", "numaguard.lint.k8s.kubelet_schema",
         "numaguard.lint.k8s.checkpoints", "numaguard.lint.k8s.go_spew", "numaguard.lint.baseline",
         "numaguard.lint.report.html", "numaguard.lint.report.sarif", "numaguard.lint.report.json",
         "numaguard.lint.report.junit", "numaguard.lint.report.policyreport", "numaguard.lint.report.github",
         "numaguard.lint.k8s.platforms", "numaguard.lint.k8s.platform_capi", "numaguard.lint.k8s.platform_eksctl",
         "numaguard.lint.k8s.platform_gke", "numaguard.lint.k8s.platform_karpenter",
         "numaguard.lint.k8s.platform_kind", "numaguard.lint.k8s.platform_kubeadm",
         "numaguard.lint.k8s.platform_openshift", "numaguard.lint.k8s.platform_talos", "numaguard.lint.k8s.nodeadm",
         "email", "http", "urllib.request", "ssl", "difflib", "csv", "gzip", "importlib.resources", "tempfile",
         "shutil", "uuid", "argparse")

# What a one-pod lint does import of the rules, and why: the pod rules and the input rules
# (NG001, NG002) judge it; the run-level rules' modules (pool: NG401/NG404/NG405, node: the
# checkpoints' NG402-NG409, with restart: NG408, NG419-NG423, whose metadata node registers) are
# imported at the start of every run, because their run checks see every input from the first
# on (a Pod's uid is kept for NG407 before any checkpoint appears). Nothing else of
# numaguard.lint.rules.
RULE_MODULES_OF_A_POD_LINT = ["numaguard.lint.rules", "numaguard.lint.rules.base", "numaguard.lint.rules.input",
                              "numaguard.lint.rules.node", "numaguard.lint.rules.pods", "numaguard.lint.rules.pool",
                              "numaguard.lint.rules.registry", "numaguard.lint.rules.restart"]

# Run the console script's own entry point (found here, so that the child does not import
# importlib.metadata, which brings email and csv) and list sys.modules as the process exits.
PROBE = """
import atexit, importlib, json, sys
out, target, script = sys.argv[1], sys.argv[2], sys.argv[3]
atexit.register(lambda: open(out, "w").write(json.dumps(sorted(sys.modules))))
module, _, function = target.partition(":")
sys.argv = [script, *sys.argv[4:]]
getattr(importlib.import_module(module), function)()
"""


def imported_by(tmp_path, script: str, *args: str) -> tuple[int, set[str]]:
    target = next(e for e in entry_points(group="console_scripts") if e.name == script).value
    out = tmp_path / "modules.json"
    run = subprocess.run([sys.executable, "-c", PROBE, str(out), target, script, *args], cwd=tmp_path,
                         capture_output=True, text=True, timeout=120)
    return run.returncode, set(json.loads(out.read_text()))


def heavy(modules: set[str]) -> list[str]:
    return sorted(m for m in modules if any(m == h or m.startswith(h + ".") for h in HEAVY))


@pytest.mark.parametrize("script", ["numaguard", "kubectl-numaguard"])
def test_a_one_pod_lint_imports_nothing_heavy(tmp_path, script):
    (tmp_path / "pod.yaml").write_text(MANAGED_BURSTABLE_POD)
    code, modules = imported_by(tmp_path, script, "lint", "pod.yaml")
    assert code == 1                      # it did lint: NG103
    assert heavy(modules) == []
    assert sorted(m for m in modules if m.startswith("numaguard.lint.rules")) == RULE_MODULES_OF_A_POD_LINT
    assert {"numaguard.lint.report.text", "numaguard.lint.cli.lint_args", "yaml"} <= modules


def test_the_probe_sees_what_other_commands_import(tmp_path):
    """The probe is no blind spot: a run that needs them does import the heavy modules."""
    (tmp_path / "pod.yaml").write_text(MANAGED_BURSTABLE_POD)
    code, modules = imported_by(tmp_path, "numaguard", "simulate", "--node", "builtin:dual-socket-ht",
                                "pod.yaml", "--format", "json")
    assert code in (0, 1)
    assert {"click", "numaguard.lint.numa.simulate", "numaguard.lint.cli.numa"} <= modules
    assert any(e.name == "kubectl-numaguard" for e in entry_points(group="console_scripts"))


KUBELET_CONFIG = """apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
cpuManagerPolicy: static
"""


@pytest.mark.parametrize("files, args, added", [
    # a node description: the NUMA-fit rules and the simulator they drive
    ({"pod.yaml": MANAGED_BURSTABLE_POD}, ["--node", "builtin:dual-socket-ht"],
     {"numaguard.lint.rules.numa", "numaguard.lint.numa.admission"}),
    # a KubeletConfiguration: the kubelet rules and the kubelet model, no simulator
    ({"kubelet.yaml": KUBELET_CONFIG}, [], {"numaguard.lint.rules.kubelet", "numaguard.lint.rules.kubelet_validation",
                                           "numaguard.lint.k8s.kubelet"}),
    # a checkpoint: its reader
    ({"cpu_manager_state": '{"policyName": "none", "defaultCpuSet": "", "checksum": 0}'}, [],
     {"numaguard.lint.k8s.checkpoints"}),
    # rules named by --select: every rule module, to check the ids (and still no simulator)
    ({"pod.yaml": MANAGED_BURSTABLE_POD}, ["--select", "NG1"],
     {"numaguard.lint.rules.state", "numaguard.lint.rules.numa", "numaguard.lint.rules.kubelet"}),
])
def test_what_a_run_needs_is_imported_when_it_needs_it(tmp_path, files, args, added):
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    code, modules = imported_by(tmp_path, "numaguard", "lint", *files, *args)
    assert code in (0, 1)
    assert added <= modules
    assert "click" not in modules
    absent = {"numaguard.lint.rules.numa", "numaguard.lint.numa.admission", "numaguard.lint.rules.kubelet",
              "numaguard.lint.k8s.checkpoints", "numaguard.lint.rules.state"} - added
    assert sorted(absent & modules) == []
