"""The package layout: `numaguard.lint` is what installs (editable and from a wheel), never a
top-level `lint`, `python -m numaguard` runs the command line, and the layer rule written in
pyproject.toml (import-linter contracts) holds."""
from __future__ import annotations

import os
import subprocess
import sys
import zipfile
from pathlib import Path

import numaguard.lint

from conftest import REPO

BIN = Path(sys.executable).parent


def test_the_editable_install_imports_from_the_repository():
    assert Path(numaguard.lint.__file__) == REPO / "lint" / "__init__.py"
    from numaguard.lint import lint_documents
    result = lint_documents([{"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
                              "spec": {"containers": [{"name": "c", "image": "i"}]}}])
    assert result.summary.objects == 1


def test_no_top_level_lint_module_is_installed():
    proc = subprocess.run([sys.executable, "-c", "import lint"], cwd="/", capture_output=True,
                          text=True, timeout=60)
    assert proc.returncode == 1 and "No module named 'lint'" in proc.stderr


def test_python_dash_m_numaguard_runs_the_command_line():
    proc = subprocess.run([sys.executable, "-m", "numaguard", "rules", "--format", "json"],
                          cwd="/", capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert '"id": "NG001"' in proc.stdout


def test_the_layer_rule_holds():
    proc = subprocess.run([str(BIN / "lint-imports"), "--no-cache"], cwd=REPO,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "0 broken" in proc.stdout


def test_a_regular_wheel_install_has_the_namespace_and_its_data(tmp_path):
    built = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w",
                            str(tmp_path / "dist"), str(REPO)], capture_output=True, text=True,
                           timeout=600)
    assert built.returncode == 0, built.stderr
    (wheel,) = (tmp_path / "dist").glob("numaguard-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    assert "numaguard/__main__.py" in names and "numaguard/__init__.py" not in names
    for needed in ("numaguard/lint/__init__.py", "numaguard/lint/load/documents.py",
                   "numaguard/lint/k8s/kubelet_gates.json",
                   "numaguard/lint/k8s/kubelet-config.schema.json",
                   "numaguard/lint/schemas/config.json",
                   "numaguard/lint/numa/profiles/dual-socket-ht.yaml",
                   "numaguard/lint/cli/main.py", "numaguard/lint/cli/webhook.py",
                   "numaguard/lint/plan/play.py", "numaguard/lint/cli/plan.py",
                   "numaguard/webhook/app.py", "numaguard/webhook/tls.py"):
        assert needed in names, needed
    assert not any(n.startswith(("lint/", "webhook/", "tests/")) for n in names)

    target = tmp_path / "site"
    installed = subprocess.run([sys.executable, "-m", "pip", "install", "--no-deps", "-q",
                                "--target", str(target), str(wheel)], capture_output=True,
                               text=True, timeout=600)
    assert installed.returncode == 0, installed.stderr
    env = {**os.environ, "PYTHONPATH": str(target)}
    where = subprocess.run([sys.executable, "-c", "import numaguard.lint as l; print(l.__file__)"],
                           cwd="/", env=env, capture_output=True, text=True, timeout=60)
    assert where.stdout.strip() == str(target / "numaguard" / "lint" / "__init__.py"), where.stderr
    node = subprocess.run([sys.executable, "-m", "numaguard", "simulate", "--node",
                           "builtin:dual-socket-ht", str(REPO / "deploy/examples/workloads")],
                          cwd="/", env=env, capture_output=True, text=True, timeout=120)
    assert "dual-socket-ht" in node.stdout, node.stdout + node.stderr
