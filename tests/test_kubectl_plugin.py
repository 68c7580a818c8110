"""`kubectl numaguard ...` with the real kubectl: the plugin is found on PATH, kubectl hands it
its arguments, shell completion goes through kubectl_complete-numaguard, and audit reads the
kubeconfig and context kubectl itself would use (checked against `kubectl config
current-context`), served by the recorded API server of tests/cluster/."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import MANAGED_BURSTABLE_POD, REPO, tool

sys.path.insert(0, str(REPO / "tests" / "cluster"))

from pool_fixture import healthy_apiserver  # noqa: E402,F401  (fixture)
from recorded_apiserver import write_kubeconfig  # noqa: E402

BIN = Path(sys.executable).parent
POOL = "node.example.com/pool=numa"


def kubectl(*args: str, cwd: Path, kubeconfig: str | None = None) -> subprocess.CompletedProcess:
    """The real kubectl with only the venv's bin on PATH (so the plugins it sees are ours) and
    a HOME of its own (no ~/.kube/config of the machine's)."""
    env = {"PATH": str(BIN), "HOME": str(cwd), "LANG": "C.UTF-8"}
    if kubeconfig is not None:
        env["KUBECONFIG"] = kubeconfig
    return subprocess.run([tool("kubectl"), *args], cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=120)


def test_kubectl_plugin_list_shows_numaguard(tmp_path):
    run = kubectl("plugin", "list", cwd=tmp_path)
    # no warning either: not shadowed by another kubectl-numaguard, overrides no kubectl command
    assert (run.returncode, run.stderr) == (0, "")
    assert run.stdout == f"The following compatible plugins are available:\n\n{BIN / 'kubectl-numaguard'}\n"


def test_kubectl_numaguard_lint_is_numaguard_lint(tmp_path):
    (tmp_path / "pod.yaml").write_text(MANAGED_BURSTABLE_POD)
    run = kubectl("numaguard", "lint", "pod.yaml", "--format", "json", cwd=tmp_path)
    assert (run.returncode, run.stderr) == (1, "")
    report = json.loads(run.stdout)
    assert [(f["file"], f["rule"], f["severity"], f["line"], f["column"], f["path"]) for f in report["findings"]] == [
        ("pod.yaml", "NG103", "error", 6, 5, "spec.resources")]
    text = kubectl("numaguard", "lint", "pod.yaml", "--fail-on", "never", cwd=tmp_path)
    assert (text.returncode, text.stderr) == (0, "")
    assert text.stdout.splitlines()[:2] == [
        "pod.yaml",
        "  pod.yaml:6:5  NG103  error  pod QoS is Burstable: pod-level requests.cpu defaulted to 1 from "
        "container 'app' requests.cpu (limits.cpu is 4); set spec.resources.requests.cpu: \"4\""]


def test_help_and_usage_name_the_plugin_as_typed(tmp_path):
    run = kubectl("numaguard", "--help", cwd=tmp_path)
    assert run.returncode == 0
    assert run.stdout.splitlines()[0] == "Usage: kubectl numaguard [OPTIONS] COMMAND [ARGS]..."
    assert [line.split()[0] for line in run.stdout.split("Commands:\n", 1)[1].splitlines()] == [
        "audit", "compare", "export", "fix", "lint", "node", "plan", "rules", "simulate", "webhook"]
    assert kubectl("numaguard", "lint", "-h", cwd=tmp_path).stdout.splitlines()[0] == \
        "Usage: kubectl numaguard lint [OPTIONS] [PATHS]..."
    version = kubectl("numaguard", "--version", cwd=tmp_path)
    assert (version.returncode, version.stdout) == (0, "kubectl numaguard, version 0.1.0\n")
    wrong = kubectl("numaguard", "lint", "--formt", "json", cwd=tmp_path)
    assert wrong.returncode == 2
    assert wrong.stderr.splitlines()[0] == "Usage: kubectl numaguard lint [OPTIONS] [PATHS]..."
    # click's own words, which change between its versions
    assert wrong.stderr.splitlines()[-1].startswith("Error: No such option") and "--formt" in wrong.stderr


def test_kubectl_refuses_its_own_flags_before_the_plugin_name(tmp_path):
    """Why audit takes --kubeconfig and --context itself: kubectl passes a plugin no flags."""
    run = kubectl("--context", "prod", "numaguard", "audit", cwd=tmp_path)
    assert (run.returncode, run.stdout) == (1, "")
    assert run.stderr == "Error: flags cannot be placed before plugin name: --context\n"


@pytest.mark.parametrize("words, expected", [
    # subcommands, with their short help as descriptions; no file names
    (["au"], ["audit\tAudit the live node pool: kubelet...", ":4"]),
    (["node", ""], ["agent\tServe, for Prometheus, each container's...",
                    "capture\tDescribe this machine (CPUs, NUMA nodes,...",
                    "inspect\tCompare what each container got...", ":4"]),
    (["lint", "--fa"], ["--fail-on\tLowest severity that makes the exit code 1 (default: error).", ":4"]),
    (["lint", "--fail-on", ""], ["error", "warning", "info", "never", ":4"]),
    # PATHS and --output: the shell completes file names (Cobra's default directive)
    (["lint", ""], [":0"]),
    (["lint", "--output", ""], [":0"]),
])
def test_shell_completion_through_kubectl(tmp_path, words, expected):
    run = kubectl("__complete", "numaguard", *words, cwd=tmp_path)
    assert run.returncode == 0
    assert run.stdout.splitlines() == expected
    directive = {":0": "ShellCompDirectiveDefault", ":4": "ShellCompDirectiveNoFileComp"}[expected[-1]]
    assert run.stderr.splitlines()[-1] == f"Completion ended with directive: {directive}"


def two_contexts(path: Path, server, *, current: str) -> Path:
    """A kubeconfig with the pool's context and a stale one whose token the server refuses."""
    write_kubeconfig(path, server.url, server.ca, "audit-token")
    config = json.loads(path.read_text())
    config["users"].append({"name": "stale", "user": {"token": "expired-token"}})
    config["contexts"].append({"name": "stale", "context": {"cluster": "pool", "user": "stale"}})
    config["current-context"] = current
    path.write_text(json.dumps(config, indent=2))
    return path


REFUSED = ("Error: the API server refused the credentials (401 Unauthorized: Unauthorized): the token "
           "may have expired; log in again or refresh the kubeconfig\n")


def test_kubectl_numaguard_audit_follows_kubectls_current_context(healthy_apiserver, tmp_path):
    server = healthy_apiserver
    kc = str(two_contexts(tmp_path / "config", server, current="pool-admin"))
    run = kubectl("numaguard", "audit", "-l", POOL, "--format", "json", cwd=tmp_path, kubeconfig=kc)
    assert (run.returncode, run.stderr) == (1, "")
    # what `numaguard audit --kubeconfig` writes for the same pool, byte for byte
    direct = subprocess.run([str(BIN / "numaguard"), "audit", "--kubeconfig", kc, "-l", POOL, "--format", "json"],
                            cwd=tmp_path, capture_output=True, text=True, timeout=120, env={"HOME": str(tmp_path)})
    assert run.stdout == direct.stdout
    assert json.loads(run.stdout)["summary"]["error"] == 15
    # `kubectl config use-context` switches kubectl, and the plugin with it
    assert kubectl("config", "use-context", "stale", cwd=tmp_path, kubeconfig=kc).returncode == 0
    stale = kubectl("numaguard", "audit", "-l", POOL, cwd=tmp_path, kubeconfig=kc)
    assert (stale.returncode, stale.stdout, stale.stderr) == (2, "", REFUSED)
    # --context after the plugin name is the plugin's own flag
    chosen = kubectl("numaguard", "audit", "--context", "pool-admin", "-l", POOL, "--format", "json",
                     cwd=tmp_path, kubeconfig=kc)
    assert (chosen.returncode, chosen.stdout) == (1, run.stdout)


@pytest.mark.parametrize("order, context", [(("first", "second"), "pool-admin"), (("second", "first"), "stale")])
def test_with_several_kubeconfig_files_the_first_current_context_wins_as_in_kubectl(
        healthy_apiserver, tmp_path, order, context):
    """$KUBECONFIG=first:second: kubectl takes current-context from the first file that sets
    it (client-go's loader); the Python client alone would take the last one's."""
    files = {"first": tmp_path / "first", "second": two_contexts(tmp_path / "second", healthy_apiserver,
                                                                  current="stale")}
    files["first"].write_text("apiVersion: v1\nkind: Config\ncurrent-context: pool-admin\n")
    (tmp_path / "empty").write_text("")     # an empty file is an empty configuration to kubectl
    kc = ":".join([str(tmp_path / "empty"), *(str(files[name]) for name in order), str(tmp_path / "missing")])
    assert kubectl("config", "current-context", cwd=tmp_path, kubeconfig=kc).stdout == f"{context}\n"
    run = kubectl("numaguard", "audit", "-l", POOL, "--format", "json", cwd=tmp_path, kubeconfig=kc)
    if context == "pool-admin":
        assert (run.returncode, run.stderr) == (1, "")
        assert json.loads(run.stdout)["summary"]["error"] == 15
    else:
        assert (run.returncode, run.stderr) == (2, REFUSED)


def test_no_kubeconfig_at_all_is_one_line(tmp_path):
    run = kubectl("numaguard", "audit", cwd=tmp_path)
    assert (run.returncode, run.stdout) == (2, "")
    assert run.stderr == (f"Error: no kubeconfig: {tmp_path}/.kube/config does not exist; give --kubeconfig "
                          "FILE or set KUBECONFIG\n")
    missing = kubectl("numaguard", "audit", cwd=tmp_path, kubeconfig=f"{tmp_path}/a:{tmp_path}/b")
    assert missing.stderr == (f"Error: no kubeconfig: none of the files $KUBECONFIG names holds a configuration "
                              f"({tmp_path}/a, {tmp_path}/b); give --kubeconfig FILE\n")
