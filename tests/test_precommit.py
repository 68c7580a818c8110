"""The pre-commit hook, run by the real `pre-commit` tool against this repository's
.pre-commit-hooks.yaml (`pre-commit try-repo` builds the hook's own environment from our
package, exactly as a user's `pre-commit install` would)."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import MANAGED_BURSTABLE_POD, REPO, tool
from test_cli import GOOD_POD

PRE_COMMIT = Path(sys.executable).parent / "pre-commit"


def _git(cwd: Path, *args: str) -> None:
    subprocess.run([tool("git"), *args], cwd=cwd, check=True, capture_output=True)


@pytest.fixture(scope="module")
def user_repo(tmp_path_factory):
    tool("git")
    if not PRE_COMMIT.exists():
        pytest.fail("pre-commit (the test extra) is not installed next to this Python: run bash .ci/run")
    repo = tmp_path_factory.mktemp("user-repo")
    _git(repo, "init", "-q")
    _git(repo, "config", "user.email", "t@example.com")
    _git(repo, "config", "user.name", "t")
    (repo / "good.yaml").write_text(GOOD_POD)
    (repo / "trap.yaml").write_text(MANAGED_BURSTABLE_POD)
    (repo / "notes.txt").write_text("not yaml: [")
    _git(repo, "add", ".")
    return repo


def _try_repo(user_repo: Path, *files: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, PRE_COMMIT_HOME=str(REPO / ".cache" / "pre-commit"))
    return subprocess.run([str(PRE_COMMIT), "try-repo", str(REPO), "numaguard", "--verbose",
                           "--files", *files], cwd=user_repo, env=env, capture_output=True,
                          text=True, timeout=900)


def test_hook_fails_on_a_bad_manifest_and_names_the_rule(user_repo):
    proc = _try_repo(user_repo, "trap.yaml")
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "NG103" in proc.stdout and "trap.yaml:" in proc.stdout


def test_hook_passes_a_good_manifest_and_ignores_other_files(user_repo):
    proc = _try_repo(user_repo, "good.yaml", "notes.txt")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "Passed" in proc.stdout
