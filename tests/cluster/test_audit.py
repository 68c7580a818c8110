"""`numaguard audit` end to end: the real console script, the real `kubernetes` client, a
kubeconfig file, TLS checked against a CA, a bearer token, and a local HTTPS server answering
recorded Kubernetes 1.37 API responses (tests/cluster/recorded_apiserver.py)."""
from __future__ import annotations

import json
import re
import socket

import yaml

from conftest import REPO, run_cli
from pool_fixture import apiserver, healthy_apiserver  # noqa: F401  (fixtures)

POOL = "node.example.com/pool=numa"


def audit(server, *args, token="audit-token", kubeconfig=None):
    kc = kubeconfig or server.kubeconfig(token)
    return run_cli("audit", "--kubeconfig", str(kc), *args, cwd=server.folder)


CONFIG = """apiVersion: numaguard.io/v1alpha1
kind: Config
pool:
  nodeLabels: {node.example.com/pool: numa}
  taint: {key: node.example.com/pool, value: numa, effect: NoSchedule}
"""


def test_audit_pool_json_pages_and_unreachable_node(apiserver):
    # the pool's node selector comes from the config file's pool.nodeLabels
    (apiserver.folder / ".numaguard.yaml").write_text(CONFIG)
    run = audit(apiserver, "--page-size", "2", "--format", "json")
    # one line for the node whose kubelet does not answer, and the summary: the audit is
    # incomplete (exit 3, over the findings' 1)
    assert run.returncode == 3, run.stderr
    assert run.stderr.splitlines() == [
        "numaguard: node/numa-node-3: cannot read the kubelet configuration through the node proxy: "
        "503 ServiceUnavailable: error trying to reach service: dial tcp 10.0.0.13:10250: connect: "
        "connection refused",
        "numaguard: audit incomplete: not read: the kubelet configuration of 1 node (numa-node-3)"]
    report = json.loads(run.stdout)
    assert report["incomplete"] == ["the kubelet configuration of 1 node (numa-node-3)"]
    found = sorted((f["file"], f["rule"]) for f in report["findings"])
    assert [f for f in found if f[1] in ("NG410", "NG411")] == [
        ("pod/trading/analytics-6d5f8b7c9d-b7n4m", "NG410"), ("pod/trading/analytics-6d5f8b7c9d-x2x7q", "NG410")]
    # the canary's configuration against the not-yet-migrated one, both of the pool: NG401
    # names both nodes on each of the 9 settings that differ
    assert [r for f, r in found if f == "node/numa-node-2"] == ["NG202", "NG203", "NG204", "NG205", "NG206"] + ["NG401"] * 9
    # its reservedSystemCPUs judged against the CPU numbering assumed for the NRT (no CPU ids)
    assert [r for f, r in found if f == "node/numa-node-1"] == ["NG401"] * 9 + ["NG425"]
    assert any(f["message"].startswith("topologyManagerPolicy differs across the pool with no majority: "
                                       "single-numa-node in node/numa-node-1; none in node/numa-node-2")
               for f in report["findings"] if f["rule"] == "NG401" and f["file"] == "node/numa-node-1")
    assert ("pod/risk/risk-engine-0", "NG101") in found
    ng410 = next(f for f in report["findings"] if f["rule"] == "NG410")
    assert ng410["object"]["kind"] == "Pod" and ng410["path"] == "status.reason"
    assert ng410["message"].endswith("(owner: ReplicaSet/analytics-6d5f8b7c9d of Deployment/analytics)")
    # one pod per controller: order-matcher has two replicas, one is linted
    assert sum(1 for f, r in found if f.startswith("pod/trading/order-matcher") and r == "NG110") == 1
    # every list was read in pages of 2 with the server's continue tokens
    pod_pages = [r for r in apiserver.scenario.requests if r.startswith("/api/v1/pods")]
    assert len(pod_pages) == 4 and all("limit=2" in r for r in pod_pages)
    assert sum("continue=" in r for r in pod_pages) == 3
    assert "labelSelector=node.example.com/pool%3Dnuma" in apiserver.scenario.requests[0]
    # general-1 is outside the pool: not read, not drawn
    nodes = {n["name"]: n for n in report["nodes"]}
    assert sorted(nodes) == ["numa-node-1", "numa-node-2", "numa-node-3"]
    node1 = nodes["numa-node-1"]
    assert node1["reservedCpus"] == [0, 32]
    assert node1["policy"] == "cpu static, memory Static, topology single-numa-node scope pod"
    # two order-matchers (12 CPUs each) on NUMA 0 of the NRT's 2 x 32 CPUs, the exporter shares
    assert node1["freeCpus"] == {"0": 6, "1": 32}
    assert [(p["pod"], p["admitted"], p["numaNodes"], len(p["exclusiveCpus"]), len(p["podSharedCpus"]))
            for p in node1["pods"]] == [
        ("monitoring/node-exporter-8h2kd", True, [], 0, 0),
        ("trading/order-matcher-5c9d7f6b8-h4k2p", True, [0], 8, 4),
        ("trading/order-matcher-5c9d7f6b8-q8w3z", True, [0], 8, 4)]
    assert nodes["numa-node-3"]["notes"] == [
        "layout from node capacity (no NodeResourceTopology): one NUMA node assumed",
        "kubelet configuration unknown: no reservations or pinning simulated"]


def test_audit_forbidden_pods_is_one_line_and_goes_on(apiserver):
    apiserver.scenario.denied = {"audit-token": {"pods"}}
    run = audit(apiserver, "-l", POOL, "--format", "json")
    assert run.returncode == 3
    assert run.stderr.splitlines() == [
        'numaguard: cannot list pods: 403 Forbidden: pods is forbidden: User '
        '"system:serviceaccount:numaguard:audit" cannot list resource "pods" in API group "" at the '
        'cluster scope',
        "numaguard: node/numa-node-3: cannot read the kubelet configuration through the node proxy: "
        "503 ServiceUnavailable: error trying to reach service: dial tcp 10.0.0.13:10250: connect: "
        "connection refused",
        "numaguard: audit incomplete: not read: the pods list; the kubelet configuration of 1 node (numa-node-3)"]
    rules = sorted({f["rule"] for f in json.loads(run.stdout)["findings"]})
    assert rules == ["NG202", "NG203", "NG204", "NG205", "NG206", "NG401", "NG425"]


def test_audit_node_proxy_denied_is_one_line_for_all_nodes(apiserver):
    apiserver.scenario.denied = {"audit-token": {"nodes/proxy"}}
    run = audit(apiserver, "-l", POOL, "--format", "json")
    assert run.returncode == 3      # the rejected pods are still reported; the audit is incomplete
    assert run.stderr.splitlines() == [
        'numaguard: 3 nodes (numa-node-1, numa-node-2, numa-node-3): cannot read the kubelet '
        'configuration through the node proxy: 403 Forbidden: nodes/proxy "<node>" is forbidden: '
        'User "system:serviceaccount:numaguard:audit" cannot get resource "nodes/proxy" in API group '
        '"" at the cluster scope',
        "numaguard: audit incomplete: not read: the kubelet configuration of 3 nodes (numa-node-1, "
        "numa-node-2, numa-node-3)"]
    assert {f["rule"] for f in json.loads(run.stdout)["findings"]} >= {"NG410"}


def test_audit_missing_crd_is_one_line_and_draws_from_capacity(apiserver):
    apiserver.scenario.nrts = None
    run = audit(apiserver, "-l", POOL, "--format", "json")
    assert run.stderr.splitlines()[0] == (
        "numaguard: NodeResourceTopology (topology.node.k8s.io/v1alpha2) is not installed: NUMA "
        "layouts come from node capacity (one NUMA node each)")
    nodes = {n["name"]: n for n in json.loads(run.stdout)["nodes"]}
    assert nodes["numa-node-1"]["freeCpus"] == {"0": 38}     # 64 - 2 reserved - 2 x 12


def test_audit_expired_token_exits_2_with_one_line(apiserver):
    run = audit(apiserver, token="expired-token")
    assert run.returncode == 2
    assert run.stderr.strip().splitlines() == [
        "Error: the API server refused the credentials (401 Unauthorized: Unauthorized): the token "
        "may have expired; log in again or refresh the kubeconfig"]


def test_audit_kubeconfig_without_current_context_exits_2(apiserver):
    kc = apiserver.kubeconfig(name="no-context", current_context=False)
    run = audit(apiserver, kubeconfig=kc)
    assert run.returncode == 2
    lines = run.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error: kubeconfig: ") and "current-context" in lines[0]
    # naming the context explicitly works
    assert audit(apiserver, "--context", "pool-admin", "-l", POOL, kubeconfig=kc).returncode == 3


def test_audit_unreachable_api_server_exits_2(tmp_path):
    from recorded_apiserver import make_tls, write_kubeconfig

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    ca, _, _ = make_tls(tmp_path)
    kc = write_kubeconfig(tmp_path / "kc", f"https://127.0.0.1:{port}", ca, "audit-token")
    run = run_cli("audit", "--kubeconfig", str(kc), cwd=tmp_path)
    assert run.returncode == 2
    assert run.stderr.strip().splitlines() == [
        f"Error: cannot reach the API server (https://127.0.0.1:{port}): Connection refused"]


def test_audit_wrong_ca_is_refused(apiserver, tmp_path):
    from recorded_apiserver import make_tls, write_kubeconfig

    other_ca, _, _ = make_tls(tmp_path / "other")
    kc = write_kubeconfig(tmp_path / "kc", apiserver.url, other_ca, "audit-token")
    run = run_cli("audit", "--kubeconfig", str(kc), cwd=tmp_path)
    assert run.returncode == 2
    assert "CERTIFICATE_VERIFY_FAILED" in run.stderr and len(run.stderr.strip().splitlines()) == 1


def test_audit_missing_kubeconfig_file_exits_2(tmp_path):
    run = run_cli("audit", "--kubeconfig", str(tmp_path / "nope"), cwd=tmp_path)
    assert run.returncode == 2
    assert run.stderr.strip() == f"Error: {tmp_path / 'nope'}: no such kubeconfig file"


def test_audit_namespace_and_policyreport(apiserver):
    run = audit(apiserver, "-l", POOL, "-n", "trading", "--format", "policyreport")
    reports = list(yaml.safe_load_all(run.stdout))
    assert [(r["kind"], r["metadata"].get("namespace")) for r in reports] == [
        ("ClusterPolicyReport", None), ("PolicyReport", "trading")]
    assert all(r.startswith("/api/v1/namespaces/trading/pods") or not r.startswith("/api/v1/pods")
               for r in apiserver.scenario.requests)
    cluster, trading = reports
    # 18 x NG401; NG425 (info: pass) on numa-node-1; numa-node-3's kubelet did not answer: an
    # error result (could not be evaluated), so Policy Reporter does not show it healthy
    assert cluster["summary"] == {"pass": 1, "fail": 4 + 18, "warn": 1, "error": 1, "skip": 0}
    assert {tuple(r["resources"][0].items()) for r in cluster["results"]} == {
        (("apiVersion", "v1"), ("kind", "Node"), ("name", "numa-node-1")),
        (("apiVersion", "v1"), ("kind", "Node"), ("name", "numa-node-2")),
        (("apiVersion", "v1"), ("kind", "Node"), ("name", "numa-node-3"))}
    assert [r for r in cluster["results"] if r["result"] == "error"] == [{
        "policy": "numaguard-audit", "rule": "read", "result": "error", "category": "Audit",
        "message": "not read, so not judged: cannot read the kubelet configuration through the node proxy: "
                   "503 ServiceUnavailable: error trying to reach service: dial tcp 10.0.0.13:10250: connect: "
                   "connection refused",
        "source": "numaguard", "scored": True,
        "resources": [{"apiVersion": "v1", "kind": "Node", "name": "numa-node-3"}],
        "properties": {"notRead": "the kubelet configuration of node/numa-node-3"}}]
    ng410 = [r for r in trading["results"] if r["rule"] == "NG410"]
    assert len(ng410) == 2 and all(r["result"] == "fail" and r["severity"] == "high"
                                   and r["source"] == "numaguard" for r in ng410)
    assert ng410[0]["resources"] == [{"apiVersion": "v1", "kind": "Pod",
                                      "name": "analytics-6d5f8b7c9d-b7n4m", "namespace": "trading"}]


def test_audit_html_has_a_map_per_node(apiserver, tmp_path):
    out = tmp_path / "pool.html"
    run = audit(apiserver, "-l", POOL, "--format", "html", "--output", str(out), "--format", "text")
    assert run.returncode == 3
    page = out.read_text()
    assert page.count('<svg xmlns="http://www.w3.org/2000/svg" class="numa-map"') == 3
    # the nodes with errors first, then the one not read (never healthy, open); the pods
    # numa-node-1's kubelet rejected (NG410) listed under it (tests/test_html_report.py checks
    # the page in Chromium)
    assert re.findall(r'<details class="node [^"]*" id="node-([^"]+)"( open)?>', page) == [
        ("numa-node-1", " open"), ("numa-node-2", " open"), ("numa-node-3", " open")]
    assert "<span>3 node(s): 2 with errors, 0 with warnings, 1 not read, 0 healthy</span>" in page
    assert ('<a class="tile pf p-0 sf s-unread rf" href="#node-numa-node-3" title="node/numa-node-3">'
            "<b>numa-node-3</b>not read") in page
    section = page.split('id="node-numa-node-1"', 1)[1].split("</details>", 1)[0]
    assert section.count('<td class="rejected">rejected by the kubelet: TopologyAffinityError</td>') == 2
    assert "<td>trading/analytics-6d5f8b7c9d-b7n4m</td>" in section
    assert ("node/numa-node-3: 0 pod(s), free CPUs NUMA 0 64; kubelet configuration not read: cannot read "
            "the kubelet configuration through the node proxy: 503 ServiceUnavailable: error trying to reach "
            "service: dial tcp 10.0.0.13:10250: connect: connection refused") in run.stdout.splitlines()
    # the CPU numbering assumed for numa-node-1's NodeResourceTopology is said on its line
    assert ("node/numa-node-1: 3 pod(s), free CPUs NUMA 0 6, NUMA 1 32; CPU numbering assumed: no CPU ids "
            "in its NodeResourceTopology: CPU n and n+32 taken as one core's two threads, as Linux numbers "
            "most x86 servers") in run.stdout.splitlines()


def test_the_shipped_clusterrole_is_enough(apiserver):
    """The server grants exactly what deploy/audit/rbac.yaml's ClusterRole grants: no denial."""
    docs = list(yaml.safe_load_all((REPO / "deploy" / "audit" / "rbac.yaml").read_text()))
    role = next(d for d in docs if d["kind"] == "ClusterRole")
    granted = {(verb, resource) for rule in role["rules"] for resource in rule["resources"]
               for verb in rule["verbs"]}
    assert granted == {("list", "pods"), ("list", "nodes"), ("get", "nodes/proxy"),
                       ("list", "noderesourcetopologies")}
    apiserver.scenario.allowed = granted
    run = audit(apiserver, "-l", POOL, "--format", "json")
    assert run.returncode == 3
    assert "Forbidden" not in run.stderr and len(run.stderr.splitlines()) == 2   # numa-node-3, summary
    # and without nodes/proxy the audit says so in one line and goes on
    apiserver.scenario.allowed = granted - {("get", "nodes/proxy")}
    run = audit(apiserver, "-l", POOL, "--format", "json")
    assert run.stderr.count("403 Forbidden") == 1 and json.loads(run.stdout)["findings"]


def test_audit_unwritable_output_is_one_line(apiserver, tmp_path):
    target = tmp_path / "missing-dir" / "pool.html"
    run = audit(apiserver, "-l", POOL, "--format", "html", "--output", str(target))
    assert run.returncode == 2
    assert run.stderr.strip().splitlines()[-1] == (
        f"Error: {target}: cannot write the report: No such file or directory")
    assert "Traceback" not in run.stderr


def test_audit_everything_denied_exits_2_with_one_line(apiserver):
    apiserver.scenario.denied = {"audit-token": {"pods", "nodes"}}
    run = audit(apiserver)
    assert run.returncode == 2 and run.stdout == ""
    [line] = run.stderr.strip().splitlines()
    assert line.startswith("Error: nothing could be read from the cluster: cannot list nodes: 403 Forbidden: ")
    assert "; cannot list pods: 403 Forbidden: pods is forbidden" in line


def test_the_shipped_cronjob_writes_each_report_where_it_says(healthy_apiserver):
    """deploy/audit/cronjob.yaml's own arguments (its paths moved here): the PolicyReports and
    the page land in their files, the text report in the log; findings do not fail the job."""
    docs = list(yaml.safe_load_all((REPO / "deploy" / "audit" / "cronjob.yaml").read_text()))
    job = next(d for d in docs if d["kind"] == "CronJob")
    [container] = job["spec"]["jobTemplate"]["spec"]["template"]["spec"]["containers"]
    config_map = next(d for d in docs if d["kind"] == "ConfigMap")
    folder = healthy_apiserver.folder
    (folder / "config").mkdir()
    (folder / "reports").mkdir()
    (folder / "config" / ".numaguard.yaml").write_text(config_map["data"][".numaguard.yaml"])
    args = [a.replace("/config/", f"{folder}/config/").replace("/reports/", f"{folder}/reports/")
            for a in container["args"]]
    assert args[0] == "audit"
    run = run_cli(*args, "--kubeconfig", str(healthy_apiserver.kubeconfig()), cwd=folder)
    assert (run.returncode, run.stderr) == (0, "")
    assert run.stdout.startswith("node/numa-node-1\n  node/numa-node-1:1:1  NG425  info  ")     # an info only
    assert "\nnode/numa-node-2\n" in run.stdout
    assert [d["kind"] for d in yaml.safe_load_all((folder / "reports" / "policyreports.yaml").read_text())] == [
        "ClusterPolicyReport", "PolicyReport", "PolicyReport"]
    assert (folder / "reports" / "pool.html").read_text().startswith("<!DOCTYPE html>")
