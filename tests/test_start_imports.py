"""What a small lint imports (a structural test, not a timing: the timing is
tests/bench/bench_cold_start.py). `numaguard lint pod.yaml`, as pre-commit and `kubectl numaguard
lint` run it, must not import the modules only other runs use."""
from __future__ import annotations

import json
import subprocess
import sys
from importlib.metadata import entry_points

import pytest

from conftest import BURSTABLE_POD

# What only other runs need: the other commands' libraries, the simulator, the readers of
# platform objects, the reports not asked for, and the standard-library modules they bring.
HEAVY = ("click", "jsonschema", "kubernetes", "grpc", "google.protobuf", "flask", "gunicorn", "h11",
         "prometheus_client", "cryptography", "jsonpatch", "urllib3",
         "numaguard.lint.numa", "numaguard.lint.cluster", "numaguard.lint.node", "numaguard.webhook",
         "numaguard.lint.report.html", "numaguard.lint.report.sarif", "numaguard.lint.report.json",
         "numaguard.lint.report.junit", "numaguard.lint.report.policyreport", "numaguard.lint.report.github",
         "numaguard.lint.k8s.platform_capi", "numaguard.lint.k8s.platform_eksctl", "numaguard.lint.k8s.platform_gke",
         "numaguard.lint.k8s.platform_karpenter", "numaguard.lint.k8s.platform_kind",
         "numaguard.lint.k8s.platform_kubeadm", "numaguard.lint.k8s.platform_openshift",
         "numaguard.lint.k8s.platform_talos", "numaguard.lint.k8s.nodeadm", "numaguard.lint.k8s.checkpoints",
         "email", "http", "urllib.request", "ssl", "difflib", "csv", "gzip")

# Run the console script's own entry point and list sys.modules as the process exits.
PROBE = """
import atexit, json, sys
from importlib.metadata import entry_points
out, script = sys.argv[1], sys.argv[2]
atexit.register(lambda: open(out, "w").write(json.dumps(sorted(sys.modules))))
target = next(e for e in entry_points(group="console_scripts") if e.name == script).load()
sys.argv = [script, *sys.argv[3:]]
target()
"""


def imported_by(tmp_path, script: str, *args: str) -> tuple[int, set[str]]:
    out = tmp_path / "modules.json"
    run = subprocess.run([sys.executable, "-c", PROBE, str(out), script, *args], cwd=tmp_path,
                         capture_output=True, text=True, timeout=120)
    return run.returncode, set(json.loads(out.read_text()))


def heavy(modules: set[str]) -> list[str]:
    return sorted(m for m in modules if any(m == h or m.startswith(h + ".") for h in HEAVY))


@pytest.mark.parametrize("script", ["numaguard", "kubectl-numaguard"])
def test_a_one_pod_lint_imports_nothing_heavy(tmp_path, script):
    (tmp_path / "pod.yaml").write_text(BURSTABLE_POD)
    code, modules = imported_by(tmp_path, script, "lint", "pod.yaml")
    assert code == 1                      # it did lint: NG103
    assert heavy(modules) == []
    assert "numaguard.lint.report.text" in modules and "yaml" in modules


def test_the_probe_sees_what_other_commands_import(tmp_path):
    """The probe is no blind spot: a run that needs them does import the heavy modules."""
    (tmp_path / "pod.yaml").write_text(BURSTABLE_POD)
    code, modules = imported_by(tmp_path, "numaguard", "simulate", "--node", "builtin:dual-socket-ht",
                                "pod.yaml", "--format", "json")
    assert code in (0, 1)
    assert {"click", "numaguard.lint.numa.simulate"} <= modules
    assert any(e.name == "kubectl-numaguard" for e in entry_points(group="console_scripts"))
