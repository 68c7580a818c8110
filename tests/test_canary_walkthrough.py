"""deploy/README.md's canary walk-through stays runnable: every `numaguard` and `promtool` command in
"## A canary rollout with numaguard" is run verbatim, in a copy of the repository's deploy/
and tests/fixtures/ folders, with KUBECONFIG pointing at the recorded API server (audit).
`kubectl` lines are the only ones not run (no cluster here); any other command fails the
test until it is classified."""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import REPO, guide, tool

sys.path.insert(0, str(REPO / "tests" / "cluster"))
sys.path.insert(0, str(REPO / "tests"))

from pool_fixture import pool_scenario  # noqa: E402
from recorded_apiserver import RecordedApiServer  # noqa: E402

SECTION = "## A canary rollout with numaguard"
# exit code each command must give: lint and simulate exit 1 on the shipped examples on
# purpose, audit exits 3 on the recorded pool (numa-node-3's kubelet never answers: an
# incomplete audit, its reports still written), promtool's tests pass, compare is inconclusive
# (the in-cluster Prometheus address does not resolve here: nothing could be read)
EXPECTED = {"numaguard lint": 1, "numaguard simulate": 1, "numaguard webhook certs": 0,
            "numaguard node inspect --root /host --processes": 0, "numaguard node inspect": 0, "numaguard audit": 3,
            "promtool test rules": 0, "numaguard compare": 3}
NOT_RUN = ("kubectl ",)


def walkthrough_commands() -> list[str]:
    readme = guide("deploy/README.md")
    assert SECTION in readme
    section = readme.split(SECTION, 1)[1].split("\n## ", 1)[0]
    blocks = re.findall(r"```sh\n(.+?)\n```", section, re.S)
    return [line.strip() for block in blocks for line in block.splitlines() if line.strip()]


def test_every_command_is_classified():
    commands = walkthrough_commands()
    assert len(commands) == 11
    for command in commands:
        assert command.startswith(NOT_RUN) or any(command.startswith(p) for p in EXPECTED), command


@pytest.fixture(scope="module")
def workdir(tmp_path_factory):
    folder = tmp_path_factory.mktemp("canary")
    shutil.copytree(REPO / "deploy", folder / "deploy")
    shutil.copytree(REPO / "tests" / "fixtures" / "simulate", folder / "tests" / "fixtures" / "simulate")
    return folder


@pytest.fixture
def host_root():
    """`node inspect --root /host` as in a debug pod: /host is a symlink to a node's tree built
    by tests/test_node_inspect.py's helpers (sysfs, kubelet configuration, checkpoints) with a
    real gRPC server answering recorded PodResources responses on the kubelet's socket."""
    import tempfile

    from test_node_inspect import serve, write_node_root

    host = Path("/host")
    if host.exists() or host.is_symlink():
        pytest.fail("/host exists on this machine; the walk-through's node inspect step needs it free")
    top = Path(tempfile.mkdtemp(prefix="ng-", dir="/tmp"))
    root = write_node_root(top)
    server = serve(root / "var/lib/kubelet/pod-resources/kubelet.sock")
    host.symlink_to(root)
    try:
        yield host
    finally:
        host.unlink()
        server.stop(None)
        shutil.rmtree(top)


@pytest.fixture
def pinned_host_root():
    """`node inspect --root /host --processes`: /host is a node whose pod's processes are real
    children of the test, pinned as the kubelet pinned them (tests/node_processes_fixture.py):
    shop/db-0's db on its exclusive CPU, its log shipper in the shared pool."""
    import tempfile

    from node_processes_fixture import REAL_CPUS, Child, Container, HostNode, Pod

    if len(REAL_CPUS) < 2:
        pytest.skip("the pinned pod needs two CPUs this process may use")
    host = Path("/host")
    if host.exists() or host.is_symlink():
        pytest.fail("/host exists on this machine; the walk-through's node inspect step needs it free")
    first, last = REAL_CPUS[0], REAL_CPUS[-1]
    pod = Pod("shop", "db-0", [
        Container("db", exclusive=[last], memory_numa=[0], effective=str(last),
                  child=Child(cpus=[last], mib=32, comm="postgres", threads=[{"name": "wal-writer", "burn": 0.5}])),
        Container("log-shipper", effective=str(first), child=Child(cpus=[first], comm="fluent-bit"))])
    top = Path(tempfile.mkdtemp(prefix="ng-", dir="/tmp"))
    node = HostNode(top, [pod]).write()
    try:
        node.start().serve()
        host.symlink_to(node.root)
        yield host
    finally:
        if host.is_symlink():
            host.unlink()
        node.stop()
        shutil.rmtree(top)


@pytest.mark.parametrize("command", [c for c in walkthrough_commands() if not c.startswith(NOT_RUN)])
def test_walkthrough_command_runs(command, workdir, tmp_path, request):
    expected = next(code for prefix, code in EXPECTED.items() if command.startswith(prefix))
    if command.startswith("numaguard node inspect"):
        request.getfixturevalue("pinned_host_root" if "--processes" in command else "host_root")
    if command.startswith("promtool "):
        tool("promtool")              # a clear failure when it is missing, not bash's 127
    with RecordedApiServer(pool_scenario(), tmp_path / "apiserver") as server:
        env = {k: v for k, v in os.environ.items() if not k.startswith("NUMAGUARD")}
        env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
        env["KUBECONFIG"] = str(server.kubeconfig())
        run = subprocess.run(["bash", "-c", command], cwd=workdir, env=env, capture_output=True,
                             text=True, timeout=300)
    assert run.returncode == expected, run.stdout[-2000:] + run.stderr[-2000:]
    assert "Traceback" not in run.stderr
    if command.startswith("numaguard audit"):
        assert (workdir / "pool.html").read_text().count('class="numa-map"') == 3
        assert "kind: PolicyReport" in (workdir / "policyreports.yaml").read_text()
        assert "NG410" in run.stdout and "node/numa-node-1:" in run.stdout
    if command.startswith("numaguard node inspect") and "--processes" in command:
        assert "      threads:           agrees: 2 thread(s) in 1 process(es)" in run.stdout
        assert run.stdout.splitlines()[-1] == "2 container(s): 2 agree, 0 differ, 0 unchecked; 0 finding(s)"
    elif command.startswith("numaguard node inspect"):
        assert "db-0 db: cpus 2-3,10-11 (NUMA 0)" in run.stdout
    if command.startswith("numaguard webhook certs"):
        assert (workdir / "deploy" / "webhook" / "certs" / "tls.crt").exists()
        assert "caBundle" in (workdir / "deploy" / "webhook" / "base" / "validatingwebhookconfiguration.yaml").read_text()
    if command.startswith("numaguard compare"):
        assert run.stderr.splitlines() == [
            "numaguard: not read: http://prometheus-operated.monitoring.svc:9090: cannot resolve the host name "
            "prometheus-operated.monitoring.svc: 18 queries",
            "numaguard: inconclusive: no metric has samples from both groups"]
        assert '<div class="verdict" id="verdict"' in (workdir / "compare.html").read_text()
    if command.startswith("numaguard simulate"):
        assert (workdir / "canary-fit.html").read_text().count('class="numa-map"') == 1
