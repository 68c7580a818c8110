"""`numaguard audit` against a cluster that misbehaves: every failure is played by the recorded
API server in the real API server's words (tests/cluster/recorded_apiserver.py), through the
real console script and client. Each test pins the stderr lines and the exit code exactly:
0/1 as for lint, 2 when nothing could be read, 3 when the audit is incomplete."""
from __future__ import annotations

import json

from conftest import run_cli
from pool_fixture import apiserver, healthy_apiserver  # noqa: F401  (fixtures)
from recorded_apiserver import (TOO_MANY_REQUESTS, Fault, Hang, Reset, expired, internal_error,
                                kubelet_forbidden, proxy_reset, proxy_unreachable)

POOL = "node.example.com/pool=numa"
PODS = "/api/v1/pods"
CONFIGZ = "/api/v1/nodes/{}/proxy/configz"
ETCD_500 = (500, internal_error())


def audit(server, *args):
    return run_cli("audit", "--kubeconfig", str(server.kubeconfig()), "-l", POOL, "--page-size", "2",
                   "--format", "json", *args, cwd=server.folder)


def findings(run) -> list[tuple[str, str]]:
    return sorted((f["file"], f["rule"]) for f in json.loads(run.stdout)["findings"])


def pod_requests(server) -> list[str]:
    """Each pods-list request by the pod its continue token starts after ("" for page 1)."""
    import base64
    out = []
    for path in server.scenario.requests:
        if path.startswith(PODS):
            token = path.partition("continue=")[2]
            start = json.loads(base64.urlsafe_b64decode(token + "=" * (-len(token) % 4)))["start"] if token else ""
            out.append(start.rstrip("\u0000"))
    return out


PAGES = ["", "risk/risk-engine-0", "trading/analytics-6d5f8b7c9d-b7n4m", "trading/order-matcher-5c9d7f6b8-h4k2p"]
# What the undisturbed recorded pool gives (tests/cluster/test_audit.py checks it in detail).
NG410 = [("pod/trading/analytics-6d5f8b7c9d-b7n4m", "NG410"), ("pod/trading/analytics-6d5f8b7c9d-x2x7q", "NG410")]
# numa-node-1 and numa-node-2 read and compared: NG401 on each of the 9 settings that differ
NODES_1_AND_2_COMPARED = [("node/numa-node-1", "NG401")] * 9 + [("node/numa-node-2", "NG401")] * 9


def test_the_healthy_pool_reads_cleanly(healthy_apiserver):
    run = audit(healthy_apiserver)
    assert (run.returncode, run.stderr) == (1, "")
    assert "incomplete" not in json.loads(run.stdout)
    assert [f for f in findings(run) if f[1] == "NG410"] == NG410
    assert pod_requests(healthy_apiserver) == PAGES


# ------------------------------------------------------------------------------ list pages

def test_a_500_on_one_page_is_retried_and_the_list_resumes_at_that_page(healthy_apiserver):
    clean = findings(audit(healthy_apiserver))
    healthy_apiserver.scenario.requests.clear()
    healthy_apiserver.scenario.faults = [Fault(PODS, ETCD_500, page=2)]
    run = audit(healthy_apiserver)
    assert run.returncode == 1
    assert run.stderr.splitlines() == [
        "numaguard: the pods list was read after 1 retry (500: etcdserver: request timed out)"]
    assert findings(run) == clean
    # the same continue token again, not a new list
    assert pod_requests(healthy_apiserver) == ["", "risk/risk-engine-0", "risk/risk-engine-0"] + PAGES[2:]


def test_a_500_that_persists_makes_the_audit_incomplete_not_empty(healthy_apiserver, tmp_path):
    healthy_apiserver.scenario.faults = [Fault(PODS, ETCD_500, page=2, times=None)]
    report = tmp_path / "report.json"
    run = audit(healthy_apiserver, "--output", str(report), "--format", "text")
    assert run.returncode == 3
    assert run.stderr.splitlines() == [
        "numaguard: cannot list pods: 500: etcdserver: request timed out (5 attempts, page 2; 2 pods read "
        "before it)",
        "numaguard: audit incomplete: not read: the pods list after its first 2 pods"]
    assert pod_requests(healthy_apiserver) == ["", *["risk/risk-engine-0"] * 5]
    data = json.loads(report.read_text())
    assert data["incomplete"] == ["the pods list after its first 2 pods"]
    # the rejected pods were on the pages not read: no NG410, and the report says why
    assert not [f for f in data["findings"] if f["rule"] == "NG410"]
    assert {n["name"]: n["notes"][-1] for n in data["nodes"]} == dict.fromkeys(
        ["numa-node-1", "numa-node-2", "numa-node-3"], "the pods list was not read completely: pods may be missing here")
    text = run.stdout.splitlines()
    assert text[-3:] == [
        "incomplete: not read: the pods list after its first 2 pods",
        "tiers: 3 kubelet configuration(s) declared by a pool",
        "9 file(s), 9 object(s) checked, 0 skipped, 0 opted out: 13 error(s), 1 warning(s), 2 info, 0 suppressed"]


def test_a_500_on_the_nodes_list_is_said_and_the_pods_are_still_judged(healthy_apiserver):
    healthy_apiserver.scenario.faults = [Fault("/api/v1/nodes", ETCD_500, times=None)]
    run = audit(healthy_apiserver)
    assert run.returncode == 3
    assert run.stderr.splitlines() == [
        "numaguard: cannot list nodes: 500: etcdserver: request timed out (5 attempts): the kubelet "
        "configuration, NodeResourceTopology and occupancy of the nodes it did not name are not read either",
        "numaguard: audit incomplete: not read: the nodes list"]
    assert not [r for r in healthy_apiserver.scenario.requests if "/proxy/configz" in r]
    assert [f for f in findings(run) if f[1] == "NG410"] == NG410
    assert "nodes" not in json.loads(run.stdout)


def test_a_reset_and_a_429_on_list_pages_are_retried(healthy_apiserver):
    healthy_apiserver.scenario.faults = [Fault(PODS, Reset(), page=2), Fault(PODS, TOO_MANY_REQUESTS, page=3)]
    run = audit(healthy_apiserver)
    assert run.returncode == 1
    assert run.stderr.splitlines() == [
        "numaguard: the pods list was read after 2 retries (the connection to the API server was reset "
        "before the answer was complete)"]
    assert [f for f in findings(run) if f[1] == "NG410"] == NG410
    # the 429 said Retry-After: 1, and the page was asked again no sooner
    times = [t for t, path in healthy_apiserver.scenario.request_times if path == PODS]
    assert times[4] - times[3] >= 1.0


def test_an_expired_continue_token_restarts_the_list_once(healthy_apiserver):
    healthy_apiserver.scenario.faults = [Fault(PODS, (410, expired("trading/analytics-6d5f8b7c9d-b7n4m")), page=3)]
    run = audit(healthy_apiserver)
    assert run.returncode == 1
    assert run.stderr.splitlines() == [
        "numaguard: the pods list restarted from its beginning: its continue token expired (410 Expired)"]
    assert pod_requests(healthy_apiserver) == PAGES[:3] + PAGES
    assert [f for f in findings(run) if f[1] == "NG410"] == NG410      # not twice


def test_a_second_expired_token_is_an_incomplete_audit(healthy_apiserver):
    healthy_apiserver.scenario.faults = [Fault(PODS, (410, expired()), page=3, times=2)]
    run = audit(healthy_apiserver)
    assert run.returncode == 3
    assert run.stderr.splitlines() == [
        "numaguard: the pods list restarted from its beginning: its continue token expired (410 Expired)",
        "numaguard: cannot list pods: 410 Expired: The provided continue parameter is too old to display a "
        "consistent list result. You can start a new list without the continue parameter, or use the continue "
        "token in this response to retrieve the remainder of the results. Continuing with the provided token "
        "results in an inconsistent list - objects that were created, modified, or deleted between the time "
        "the first chunk was returned and now may show up in the list. (page 3; 4 pods read before it)",
        "numaguard: audit incomplete: not read: the pods list after its first 4 pods"]


# ------------------------------------------------------------------------------ node proxy

def test_a_hung_kubelet_costs_one_timeout_and_the_other_nodes_are_read(healthy_apiserver):
    healthy_apiserver.scenario.configz["numa-node-3"] = Hang(30, healthy_apiserver.scenario.configz["numa-node-3"])
    run = audit(healthy_apiserver, "--request-timeout", "1s")
    assert run.returncode == 3
    assert run.stderr.splitlines() == [
        "numaguard: node/numa-node-3: the kubelet did not answer configz within 1 s (via the API server's "
        "node proxy)",
        "numaguard: audit incomplete: not read: the kubelet configuration of 1 node (numa-node-3)"]
    assert healthy_apiserver.scenario.requests.count(CONFIGZ.format("numa-node-3")) == 1    # not retried
    report = json.loads(run.stdout)
    assert [f for f in findings(run) if f[1] == "NG401"] == NODES_1_AND_2_COMPARED
    assert {n["name"]: n["notes"] for n in report["nodes"]}["numa-node-3"] == [
        "layout from node capacity (no NodeResourceTopology): one NUMA node assumed",
        "kubelet configuration unknown: no reservations or pinning simulated"]


def test_a_reset_on_one_nodes_configz_is_tried_once_more_and_the_others_are_read(healthy_apiserver):
    healthy_apiserver.scenario.configz["numa-node-3"] = Reset()
    run = audit(healthy_apiserver)
    assert run.returncode == 3
    assert run.stderr.splitlines() == [
        "numaguard: node/numa-node-3: cannot read the kubelet configuration through the node proxy: the "
        "connection to the API server was reset before the answer was complete (2 attempts)",
        "numaguard: audit incomplete: not read: the kubelet configuration of 1 node (numa-node-3)"]
    assert healthy_apiserver.scenario.requests.count(CONFIGZ.format("numa-node-3")) == 2
    assert [f for f in findings(run) if f[1] == "NG401"] == NODES_1_AND_2_COMPARED


def test_a_reset_once_on_configz_is_forgotten_once_read(healthy_apiserver):
    healthy_apiserver.scenario.faults = [Fault(CONFIGZ.format("numa-node-2"), Reset())]
    run = audit(healthy_apiserver)
    assert (run.returncode, run.stderr) == (1, "")
    assert healthy_apiserver.scenario.requests.count(CONFIGZ.format("numa-node-2")) == 2


def test_node_addresses_are_taken_out_before_grouping(healthy_apiserver):
    configz = healthy_apiserver.scenario.configz
    configz["numa-node-1"] = (503, proxy_reset("10.0.0.2", 51234, "10.0.3.28"))
    configz["numa-node-2"] = (503, proxy_reset("10.0.0.2", 40022, "10.0.3.29"))
    configz["numa-node-3"] = (503, proxy_unreachable("10.0.3.30"))
    run = audit(healthy_apiserver)
    assert run.returncode == 3
    assert run.stderr.splitlines() == [
        "numaguard: 2 nodes (numa-node-1, numa-node-2): cannot read the kubelet configuration through the "
        "node proxy: 503 ServiceUnavailable: error trying to reach service: read tcp 10.0.0.2:<port>-><node-ip>"
        ":10250: read: connection reset by peer",
        "numaguard: node/numa-node-3: cannot read the kubelet configuration through the node proxy: 503 "
        "ServiceUnavailable: error trying to reach service: dial tcp 10.0.3.30:10250: connect: connection refused",
        "numaguard: audit incomplete: not read: the kubelet configuration of 3 nodes (numa-node-1, "
        "numa-node-2, numa-node-3)"]


def test_a_pool_behind_one_firewall_is_one_line(healthy_apiserver):
    for i, name in enumerate(("numa-node-1", "numa-node-2", "numa-node-3")):
        healthy_apiserver.scenario.configz[name] = (503, proxy_unreachable(f"10.0.3.{28 + i}"))
    run = audit(healthy_apiserver)
    assert run.stderr.splitlines() == [
        "numaguard: 3 nodes (numa-node-1, numa-node-2, numa-node-3): cannot read the kubelet configuration "
        "through the node proxy: 503 ServiceUnavailable: error trying to reach service: dial tcp <node-ip>:10250: "
        "connect: connection refused",
        "numaguard: audit incomplete: not read: the kubelet configuration of 3 nodes (numa-node-1, "
        "numa-node-2, numa-node-3)"]


def test_the_kubelets_own_403_says_whose_authorization_refused(healthy_apiserver):
    healthy_apiserver.scenario.configz["numa-node-2"] = kubelet_forbidden()
    run = audit(healthy_apiserver)
    assert run.returncode == 3
    assert run.stderr.splitlines() == [
        "numaguard: node/numa-node-2: cannot read the kubelet configuration through the node proxy: 403 from "
        "the kubelet itself (its own authorization, not RBAC on nodes/proxy): Forbidden "
        "(user=kube-apiserver-kubelet-client, verb=get, resource=nodes, subresource=proxy)",
        "numaguard: audit incomplete: not read: the kubelet configuration of 1 node (numa-node-2)"]


# ------------------------------------------------------------------------------ NRT

def test_a_missing_crd_is_a_note_and_the_audit_is_complete(healthy_apiserver):
    healthy_apiserver.scenario.nrts = None
    run = audit(healthy_apiserver)
    assert run.returncode == 1
    assert run.stderr.splitlines() == [
        "numaguard: NodeResourceTopology (topology.node.k8s.io/v1alpha2) is not installed: NUMA layouts "
        "come from node capacity (one NUMA node each)"]


def test_a_node_read_from_its_node_object_and_its_nrt_is_one_node(healthy_apiserver):
    scenario = healthy_apiserver.scenario
    template = scenario.nrts[0]

    def nrt(name: str, cpus: str) -> dict:
        zones = [{**zone, "resources": [{**r, "capacity": cpus} if r["name"] == "cpu" else r
                                         for r in zone["resources"]]} for zone in template["zones"]]
        return {**template, "metadata": {"name": name}, "zones": zones}

    scenario.nrts = [nrt("numa-node-1", "32"), nrt("numa-node-2", "24"), nrt("numa-node-3", "32")]
    node2 = next(n for n in scenario.nodes if n["metadata"]["name"] == "numa-node-2")
    node2["status"]["capacity"]["cpu"] = "48"
    run = audit(healthy_apiserver)
    ng404 = [(f["file"], f["path"], f["message"]) for f in json.loads(run.stdout)["findings"] if f["rule"] == "NG404"]
    assert ng404 == [
        ("node/numa-node-2", "status.capacity.cpu",
         "node numa-node-2 has 48 CPUs, but 2 of 3 nodes of the pool have 64 (numa-node-1, numa-node-3)"),
        ("nrt/numa-node-2", "zones",
         "node numa-node-2 has 24/24 CPUs per NUMA node, but 2 of 3 nodes of the pool have 32/32 "
         "(numa-node-1, numa-node-3)")]


# ------------------------------------------------------------------------------ nothing read

def test_a_hung_api_server_is_exit_2_after_the_retries(tmp_path):
    """Accepts connections and never answers: the first list times out on each attempt."""
    import socket
    import threading

    from recorded_apiserver import make_tls, write_kubeconfig

    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(16)
    accepted = []

    def accept_until_shut() -> None:
        while True:
            try:
                accepted.append(listener.accept()[0])
            except OSError:      # the listener shut down below: accept() wakes with EINVAL
                return

    acceptor = threading.Thread(target=accept_until_shut)
    acceptor.start()
    port = listener.getsockname()[1]
    ca, _, _ = make_tls(tmp_path)
    kc = write_kubeconfig(tmp_path / "kc", f"https://127.0.0.1:{port}", ca, "audit-token")
    try:
        run = run_cli("audit", "--kubeconfig", str(kc), "--request-timeout", "500ms", cwd=tmp_path)
    finally:
        # shutdown() wakes the blocked accept(); closing the descriptor under it instead lets a
        # reused fd number answer ENOTSOCK (Errno 88) in the thread
        listener.shutdown(socket.SHUT_RDWR)
        acceptor.join()
        listener.close()
        for connection in accepted:
            connection.close()
    assert run.returncode == 2
    assert run.stderr.strip().splitlines() == [
        f"Error: cannot reach the API server (https://127.0.0.1:{port}): no answer within 0.5 s"]
    assert len(accepted) == 5          # the nodes list, tried 5 times


def test_on_a_terminal_the_status_line_names_the_node_it_waits_for(healthy_apiserver):
    """stderr on a real pseudo-terminal: the line is drawn, names the hung node with its wait,
    shows no percentage or ETA, and is cleared before the problem lines."""
    import os
    import pty
    import re
    import subprocess

    from conftest import numaguard_exe

    healthy_apiserver.scenario.configz["numa-node-3"] = Hang(30, healthy_apiserver.scenario.configz["numa-node-3"])
    leader, follower = pty.openpty()
    env = {k: v for k, v in os.environ.items() if not k.startswith("NUMAGUARD")}
    proc = subprocess.Popen([numaguard_exe(), "audit", "--kubeconfig", str(healthy_apiserver.kubeconfig()), "-l", POOL,
                             "--request-timeout", "2500ms", "--format", "json"], cwd=healthy_apiserver.folder,
                            stdout=subprocess.PIPE, stderr=follower, env=env)
    os.close(follower)
    chunks = []
    while True:
        try:
            chunk = os.read(leader, 4096)
        except OSError:          # EIO: the process closed the terminal
            break
        if not chunk:
            break
        chunks.append(chunk)
    proc.communicate(timeout=120)
    os.close(leader)
    seen = b"".join(chunks).decode().replace("\r\n", "\n")
    drawn = [part.removesuffix("\x1b[K") for part in seen.split("\r") if part.startswith("numaguard audit:")]
    assert proc.returncode == 3
    # (on a loaded machine the wait may begin while the pods are still being read)
    assert any(re.fullmatch(r"numaguard audit: 3 nodes; (7 pods read|\d+ pods so far); kubelet configurations "
                            r"[0-2] of 3; waiting for (numa-node-[12] \(\d s\), )*numa-node-3 \([12] s\)", line)
               for line in drawn), drawn
    assert not any("%" in line or "ETA" in line for line in drawn)
    assert seen.split("\r\x1b[K", 1)[1].splitlines() == [
        "numaguard: node/numa-node-3: the kubelet did not answer configz within 2.5 s (via the API server's "
        "node proxy)",
        "numaguard: audit incomplete: not read: the kubelet configuration of 1 node (numa-node-3)"]


def test_reports_named_by_extension_and_an_incomplete_html_page(apiserver):
    """`--output` alone takes the format from the file name, for audit as for lint; every
    report says what was not read."""
    folder = apiserver.folder
    run = run_cli("audit", "--kubeconfig", str(apiserver.kubeconfig()), "-l", POOL, "--output", "pool.html",
                  "--output", "pool.json", "--output", "pool.yaml", cwd=folder)
    assert (run.returncode, run.stdout) == (3, "")
    page = (folder / "pool.html").read_text()
    assert ('<p class="rejected" id="incomplete"><strong>Incomplete audit.</strong> Not read: the kubelet '
            'configuration of 1 node (numa-node-3).</p>') in page
    assert json.loads((folder / "pool.json").read_text())["incomplete"] == [
        "the kubelet configuration of 1 node (numa-node-3)"]
    assert (folder / "pool.yaml").read_text().startswith("---\napiVersion: wgpolicyk8s.io/v1alpha2\nkind: ClusterPolicyReport")
    refused = run_cli("audit", "--kubeconfig", str(apiserver.kubeconfig()), "--output", "pool.pdf", cwd=folder)
    assert (refused.returncode, refused.stderr.splitlines()) == (2, [
        "Error: pool.pdf: cannot tell the report format from the extension .pdf: give --format, or name the file "
        ".htm, .html, .json, .sarif, .text, .txt, .xml, .yaml, .yml"])
    assert not [r for r in apiserver.scenario.requests if r.startswith("/api/v1/pods")][1:]   # one audit read
