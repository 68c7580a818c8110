"""A partial read never looks complete (issue 22 §2), against the recorded API server: what an
incomplete audit did not read is in every report format; a token that expires mid-audit is
loaded again as client-go does (the token file read again, the exec plugin run again); a node
deleted while the audit runs is not a failure; the server's Retry-After is honoured but
bounded by --request-timeout and the audit's --timeout; a nodes list whose API server goes
away after two pages is an incomplete audit (exit 3), not "cannot reach" (exit 2)."""
from __future__ import annotations

import json
import re
import sys
import threading
import time
import xml.etree.ElementTree as ET
from html import escape

import yaml

from conftest import run_cli
from pool_fixture import healthy_apiserver  # noqa: F401  (fixture)
from recorded_apiserver import Down, Fault, Hang, Text, internal_error

POOL = "node.example.com/pool=numa"
PODS = "/api/v1/pods"
NODES = "/api/v1/nodes"
ETCD_500 = (500, internal_error())
REFUSED_NODE_3 = ("cannot read the kubelet configuration through the node proxy: 503 ServiceUnavailable: error "
                  "trying to reach service: dial tcp 10.0.0.13:10250: connect: connection refused")
PODS_500 = "cannot list pods: 500: etcdserver: request timed out (5 attempts, page 2; 2 pods read before it)"


def audit(server, *args, kubeconfig=None):
    return run_cli("audit", "--kubeconfig", str(kubeconfig or server.kubeconfig()), "-l", POOL, "--page-size", "2",
                   *args, cwd=server.folder)


def _unreachable_node_3_and_pods_after_page_1(server):
    from recorded_apiserver import proxy_unreachable
    server.scenario.configz["numa-node-3"] = (503, proxy_unreachable("10.0.0.13"))
    server.scenario.faults = [Fault(PODS, ETCD_500, page=2, times=None)]


# ------------------------------------------------------------------------------ every format

def test_every_format_says_what_was_not_read(healthy_apiserver):
    server = healthy_apiserver
    _unreachable_node_3_and_pods_after_page_1(server)
    folder = server.folder
    outputs = {"policyreport": "pr.yaml", "sarif": "out.sarif", "junit": "junit.xml", "json": "out.json",
               "text": "out.txt", "html": "out.html", "github": "gh.txt"}
    args = [a for fmt, name in outputs.items() for a in ("--format", fmt, "--output", str(folder / name))]
    run = audit(server, *args)
    assert run.returncode == 3
    assert run.stderr.splitlines()[-1] == ("numaguard: audit incomplete: not read: the pods list after its first "
                                           "2 pods; the kubelet configuration of 1 node (numa-node-3)")

    # PolicyReport: `error` (could not be evaluated) for the node and, at the cluster scope, the list
    reports = list(yaml.safe_load_all((folder / "pr.yaml").read_text()))
    cluster = next(r for r in reports if r["kind"] == "ClusterPolicyReport")
    errors = [(r["resources"], r["message"], r["properties"]) for r in cluster["results"] if r["result"] == "error"]
    assert errors == [
        ([], f"not read, so not judged: {PODS_500}", {"notRead": "the pods list after its first 2 pods"}),
        ([{"apiVersion": "v1", "kind": "Node", "name": "numa-node-3"}], f"not read, so not judged: {REFUSED_NODE_3}",
         {"notRead": "the kubelet configuration of node/numa-node-3"})]
    assert cluster["summary"]["error"] == 2

    # SARIF: the invocation failed, one error notification per thing not read
    [invocation] = json.loads((folder / "out.sarif").read_text())["runs"][0]["invocations"]
    assert invocation == {"executionSuccessful": False, "toolExecutionNotifications": [
        {"level": "error", "descriptor": {"id": "not-read"},
         "message": {"text": f"Not read, so not judged: the pods list after its first 2 pods: {PODS_500}"}},
        {"level": "error", "descriptor": {"id": "not-read"},
         "message": {"text": f"Not read, so not judged: the kubelet configuration of node/numa-node-3: "
                             f"{REFUSED_NODE_3}"},
         "locations": [{"physicalLocation": {"artifactLocation": {"uri": "node/numa-node-3"}}}]}]}

    # JUnit: one test case in error per thing not read, counted in `errors`
    suite = ET.fromstring((folder / "junit.xml").read_text())
    assert suite.get("errors") == "2"
    in_error = [(c.get("classname"), c.get("name"), c.find("error").get("message"), c.find("error").text)
                for c in suite.iter("testcase") if c.find("error") is not None]
    assert in_error == [
        ("audit", "read the pods list after its first 2 pods", "not read: the pods list after its first 2 pods",
         PODS_500),
        ("node/numa-node-3", "read node/numa-node-3", "not read: the kubelet configuration of node/numa-node-3",
         REFUSED_NODE_3)]

    # JSON: the summary phrases, each piece with its reason, and on the node itself
    data = json.loads((folder / "out.json").read_text())
    assert data["incomplete"] == ["the pods list after its first 2 pods", "the kubelet configuration of 1 node (numa-node-3)"]
    assert data["unread"] == [{"what": "the pods list after its first 2 pods", "why": PODS_500},
                              {"what": "the kubelet configuration of node/numa-node-3", "why": REFUSED_NODE_3,
                               "nodes": ["numa-node-3"]}]
    assert [n.get("notRead") for n in data["nodes"]] == [None, None, {"kubeletConfiguration": REFUSED_NODE_3}]

    # text: on the node's line and above the summary
    text = (folder / "out.txt").read_text().splitlines()
    assert f"node/numa-node-3: 0 pod(s), free CPUs NUMA 0 64; kubelet configuration not read: {REFUSED_NODE_3}" in text
    assert text[-3:-1] == ["incomplete: not read: the pods list after its first 2 pods; the kubelet configuration of 1 "
                           "node (numa-node-3)", "tiers: 2 kubelet configuration(s) declared by a pool"]

    # HTML: said under the counts, and the node is "not read", never healthy
    page = (folder / "out.html").read_text()
    assert ('<ul class="unread"><li>cannot list pods: 500: etcdserver: request timed out (5 attempts, page 2; 2 pods '
            "read before it)</li><li>cannot read the kubelet configuration through the node proxy: 503 "
            "ServiceUnavailable: error trying to reach service: dial tcp 10.0.0.13:10250: connect: connection "
            "refused</li></ul>") in page
    assert "1 not read, " in page and "<b>numa-node-3</b>not read" in page

    # GitHub annotations: an error per thing not read
    assert [line for line in (folder / "gh.txt").read_text().splitlines() if "audit incomplete" in line] == [
        f"::error title=numaguard audit incomplete::not read: the pods list after its first 2 pods: {PODS_500}",
        f"::error file=node/numa-node-3,title=numaguard audit incomplete::not read: the kubelet configuration of "
        f"node/numa-node-3: {REFUSED_NODE_3}"]


def test_a_namespaces_pods_list_not_read_is_an_error_in_that_namespaces_policyreport(healthy_apiserver):
    """With -n, the pods not read are that namespace's: Policy Reporter shows the error there."""
    healthy_apiserver.scenario.faults = [Fault("/api/v1/namespaces/trading/pods", ETCD_500, page=2, times=None)]
    run = audit(healthy_apiserver, "-n", "trading", "--format", "policyreport")
    assert run.returncode == 3
    reports = {(r["kind"], r["metadata"].get("namespace")): r for r in yaml.safe_load_all(run.stdout)}
    errors = {key: [(e["message"], e["properties"]) for e in r["results"] if e["result"] == "error"]
              for key, r in reports.items()}
    assert errors == {("PolicyReport", "trading"): [(f"not read, so not judged: {PODS_500}",
                                                    {"notRead": "the pods list after its first 2 pods"})],
                      **{key: [] for key in reports if key != ("PolicyReport", "trading")}}
    assert reports["PolicyReport", "trading"]["summary"]["error"] == 1


def test_a_complete_audit_says_so_in_sarif(healthy_apiserver):
    run = audit(healthy_apiserver, "--format", "sarif")
    assert run.returncode == 1
    assert json.loads(run.stdout)["runs"][0]["invocations"] == [{"executionSuccessful": True}]


def test_the_cpu_numbering_assumed_for_a_node_is_in_every_format(healthy_apiserver):
    """numa-node-1's layout comes from its NodeResourceTopology, which names no CPU: the
    numbering numaguard assumed is on the node in JSON, text and HTML (its notes), and NG425
    carries it (on node/numa-node-1, the Node in a PolicyReport) in every format."""
    folder = healthy_apiserver.folder
    outputs = {"json": "r.json", "policyreport": "pr.yaml", "html": "p.html", "text": "t.txt", "sarif": "s.sarif",
               "junit": "j.xml"}
    audit(healthy_apiserver, *(a for fmt, name in outputs.items() for a in ("--format", fmt, "--output", str(folder / name))))
    assumed = ("no CPU ids in its NodeResourceTopology: CPU n and n+32 taken as one core's two threads, as Linux "
               "numbers most x86 servers")
    report = json.loads((folder / "r.json").read_text())
    nodes = {n["name"]: n["notes"] for n in report["nodes"]}
    assert f"CPU numbering assumed: {assumed}" in nodes["numa-node-1"]
    assert "CPU numbering assumed" not in " ".join(nodes["numa-node-2"])     # no NRT: drawn from capacity
    ng425 = [f for f in report["findings"] if f["rule"] == "NG425"]
    assert [(f["file"], f["severity"], f["path"]) for f in ng425] == [
        ("node/numa-node-1", "info", "reservedSystemCPUs"), ("node/numa-node-3", "info", "reservedSystemCPUs")]
    assert ng425[0]["message"] == (
        f"reservedSystemCPUs 0,32 was checked for whole cores against a CPU numbering assumed for node numa-node-1 "
        f"({assumed}): under it the set covers core 0; NG209's verdict on split cores holds only if the machine "
        "numbers its threads that way")
    [entry] = [r for d in yaml.safe_load_all((folder / "pr.yaml").read_text()) for r in d["results"]
               if r["rule"] == "NG425" and r["resources"][0]["name"] == "numa-node-1"]
    assert (entry["result"], entry["severity"]) == ("pass", "info")
    assert f'<div class="note">{escape(f"CPU numbering assumed: {assumed}")}</div>' in (folder / "p.html").read_text()
    assert f"CPU numbering assumed: {assumed}" in (folder / "t.txt").read_text()
    sarif = json.loads((folder / "s.sarif").read_text())["runs"][0]["results"]
    assert [(r["level"], r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"]) for r in sarif
            if r["ruleId"] == "NG425"] == [("note", "node/numa-node-1"), ("note", "node/numa-node-3")]
    junit = [c for c in ET.fromstring((folder / "j.xml").read_text()).iter("testcase") if c.get("name").startswith("NG425")]
    assert [(c.get("classname"), assumed in c.find("system-out").text) for c in junit] == [
        ("node/numa-node-1", True), ("node/numa-node-3", True)]


# ------------------------------------------------------------------------------ credentials

def _expire_at_pods_page_2(server, token: str, then=lambda: None):
    """The token expires when the pods list asks for its second page, once every node's
    configz has been answered (so which requests it fails is the same on every run); `then`
    runs just before (the kubelet rotating the token file)."""
    scenario = server.scenario
    done = threading.Event()

    def before(path: str, query: dict) -> None:
        if path == PODS and "continue" in query and not done.is_set():
            deadline = time.monotonic() + 30
            while sum("/proxy/configz" in r for r in scenario.requests) < 3 and time.monotonic() < deadline:
                time.sleep(0.01)
            time.sleep(0.2)            # the last configz answer on its way back
            then()
            scenario.expired.add(token)
            done.set()
    scenario.before = before


def test_a_rotated_token_file_is_read_again_after_a_401(healthy_apiserver):
    """A bound service-account token: the kubelet rewrote the file, then the old token
    expired. The Python client never reads tokenFile again; the audit does, and goes on."""
    server = healthy_apiserver
    token_file = server.folder / "token"
    token_file.write_text("audit-token\n")
    server.scenario.tokens["rotated-token"] = "system:serviceaccount:numaguard:audit"
    kc = server.kubeconfig(name="kc-file", user={"tokenFile": str(token_file)})
    clean = audit(server, "--format", "json", kubeconfig=kc)
    server.scenario.requests.clear()
    # the kubelet writes the new token (a trailing newline is trimmed, as client-go does),
    # then the old one expires
    _expire_at_pods_page_2(server, "audit-token", then=lambda: token_file.write_text("rotated-token\n"))
    run = audit(server, "--format", "json", kubeconfig=kc)
    assert run.returncode == 1
    assert run.stderr.splitlines() == [
        f"numaguard: the API server refused the credentials (401 Unauthorized: Unauthorized); its token file "
        f"({token_file}) was read again and the audit went on with the new ones"]
    assert json.loads(run.stdout)["findings"] == json.loads(clean.stdout)["findings"]
    pages = [r.partition("continue=")[2][:12] for r in server.scenario.requests if r.startswith(PODS)]
    assert len(pages) == 5 and pages[1] == pages[2]        # page 2 twice: refused, then read


def test_an_exec_plugin_is_run_again_after_a_401(healthy_apiserver, tmp_path):
    server = healthy_apiserver
    runs = tmp_path / "runs"
    plugin = tmp_path / "credential-helper.py"
    plugin.write_text(
        "import json, pathlib, sys\n"
        f"runs = pathlib.Path({str(runs)!r})\n"
        "n = len(runs.read_text().splitlines()) + 1 if runs.exists() else 1\n"
        "runs.write_text(runs.read_text() + 'run\\n' if runs.exists() else 'run\\n')\n"
        "json.dump({'apiVersion': 'client.authentication.k8s.io/v1beta1', 'kind': 'ExecCredential',\n"
        "           'status': {'token': f'exec-token-{n}'}}, sys.stdout)\n")
    for n in (1, 2):
        server.scenario.tokens[f"exec-token-{n}"] = "eks:auditor"
    _expire_at_pods_page_2(server, "exec-token-1")
    kc = server.kubeconfig(name="kc-exec", user={"exec": {
        "apiVersion": "client.authentication.k8s.io/v1beta1", "command": sys.executable, "args": [str(plugin)],
        "interactiveMode": "Never"}})
    run = audit(server, "--format", "json", kubeconfig=kc)
    assert run.returncode == 1
    assert run.stderr.splitlines() == [
        f"numaguard: the API server refused the credentials (401 Unauthorized: Unauthorized); its exec plugin "
        f"({sys.executable.rsplit('/', 1)[-1]}) ran again and the audit went on with the new ones"]
    assert runs.read_text().splitlines() == ["run", "run"]         # once at the start, once after the 401


def test_credentials_refused_mid_audit_report_what_was_read_and_exit_3(healthy_apiserver):
    """A static token the API server stops accepting: loading the kubeconfig again gives the
    same token, so it is not tried again; what was read before is judged and reported."""
    server = healthy_apiserver
    _expire_at_pods_page_2(server, "audit-token")
    run = audit(server, "--format", "json")
    assert run.returncode == 3
    assert run.stderr.splitlines() == [
        "numaguard: the API server refused the credentials (401 Unauthorized: Unauthorized); the kubeconfig was "
        "read again and gave the same credentials",
        "numaguard: cannot list pods: 401 Unauthorized: Unauthorized (page 2; 2 pods read before it): the "
        "credentials were refused mid-audit; what was read before is reported",
        "numaguard: audit incomplete: not read: the pods list after its first 2 pods"]
    report = json.loads(run.stdout)
    assert [n["name"] for n in report["nodes"]] == ["numa-node-1", "numa-node-2", "numa-node-3"]
    assert {f["file"] for f in report["findings"]} == {"node/numa-node-1", "node/numa-node-2", "node/numa-node-3"}
    assert [r for r in server.scenario.requests if r.startswith(PODS)][1:] == [
        r for r in server.scenario.requests if r.startswith(PODS) and "continue" in r][:2]   # page 2 tried twice


# ------------------------------------------------------------------------------ deleted node

def test_a_node_deleted_during_the_audit_no_longer_exists(healthy_apiserver):
    server = healthy_apiserver
    server.scenario.deleted = {"numa-node-2"}
    run = audit(server, "--format", "json")
    assert run.returncode == 1          # the pods' findings (NG410); complete, so not 3
    assert run.stderr.splitlines() == [
        "numaguard: node/numa-node-2 no longer exists: deleted after the nodes list was read; not judged"]
    report = json.loads(run.stdout)
    assert "incomplete" not in report
    assert [n["name"] for n in report["nodes"]] == ["numa-node-1", "numa-node-3"]
    assert not [f for f in report["findings"] if "numa-node-2" in f["file"] or f["rule"] == "NG401"]


# ------------------------------------------------------------------------------ Retry-After

def test_a_retry_after_longer_than_the_request_timeout_is_not_waited_for(healthy_apiserver):
    """Retry-After: 20 on every answer used to hold the audit 80 s per page: the wait the
    server asks for is more than --request-timeout allows, so the page is not asked again."""
    server = healthy_apiserver
    server.scenario.faults = [Fault(PODS, Text(429, "Too many requests, please try again later.",
                                               (("Retry-After", "20"),)), page=2, times=None)]
    started = time.monotonic()
    run = audit(server, "--format", "json", "--request-timeout", "2s")
    assert time.monotonic() - started < 20
    assert run.returncode == 3
    assert run.stderr.splitlines() == [
        "numaguard: cannot list pods: 429: Too many requests, please try again later. (page 2; 2 pods read before it, "
        "the API server asked to wait 20 s (Retry-After), past what --request-timeout 2 s allows one request to wait)",
        "numaguard: audit incomplete: not read: the pods list after its first 2 pods"]
    assert sum(1 for r in server.scenario.requests if r.startswith(PODS) and "continue" in r) == 1


def test_retry_after_waits_add_up_to_the_request_timeout_at_most(healthy_apiserver):
    """Retry-After: 2 each time and --request-timeout 3s: a wait of 2 s, then a second would
    bring them to 4 s: two attempts, the second no sooner than the server asked."""
    server = healthy_apiserver
    server.scenario.faults = [Fault(PODS, Text(429, "Too many requests, please try again later.",
                                               (("Retry-After", "2"),)), page=2, times=None)]
    run = audit(server, "--format", "json", "--request-timeout", "3s")
    assert run.returncode == 3
    assert run.stderr.splitlines()[0] == (
        "numaguard: cannot list pods: 429: Too many requests, please try again later. (2 attempts, page 2; 2 pods "
        "read before it, the API server asked to wait 2 s (Retry-After), past what --request-timeout 3 s allows "
        "one request to wait)")
    times = [t for t, path in server.scenario.request_times if path == PODS][1:]
    assert len(times) == 2 and times[1] - times[0] >= 2.0


def test_the_audits_deadline_ends_waits_and_reads_with_a_report(healthy_apiserver):
    """--timeout 3s: a kubelet that hangs is not read after it, and the report says so."""
    server = healthy_apiserver
    server.scenario.configz["numa-node-3"] = Hang(30, server.scenario.configz["numa-node-3"])
    started = time.monotonic()
    run = audit(server, "--format", "json", "--timeout", "3s", "--request-timeout", "20s")
    assert 2.5 <= time.monotonic() - started < 15
    assert run.returncode == 3
    assert run.stderr.splitlines() == [
        "numaguard: node/numa-node-3: cannot read the kubelet configuration through the node proxy: not read before "
        "the audit's deadline (--timeout 3 s)",
        "numaguard: audit incomplete: not read: the kubelet configuration of 1 node (numa-node-3)"]
    assert json.loads(run.stdout)["incomplete"] == ["the kubelet configuration of 1 node (numa-node-3)"]


# ------------------------------------------------------------------------------ issue 22 §4

def test_a_nodes_list_whose_api_server_goes_away_after_two_pages_is_incomplete_not_unreachable(healthy_apiserver):
    """Pages 1 and 2 of the nodes list read, then the API server goes away: the retry cannot
    connect. Two nodes were read: exit 3 with their report, not exit 2."""
    server = healthy_apiserver
    server.scenario.faults = [Fault(NODES, Down(), page=3)]
    run = run_cli("audit", "--kubeconfig", str(server.kubeconfig()), "-l", POOL, "--page-size", "1",
                  "--format", "json", cwd=server.folder)
    assert run.returncode == 3, run.stderr
    lines = run.stderr.splitlines()
    # the retries' connections are reset while the listening socket is being closed, then refused
    assert re.fullmatch(
        r"numaguard: cannot list nodes: Connection (refused|reset by peer) \([23] attempts, page 3; 2 nodes read before "
        r"it\): the kubelet configuration, NodeResourceTopology and occupancy of the nodes it did not name are not "
        r"read either", lines[0]), lines[0]
    assert lines[-1].startswith("numaguard: audit incomplete: not read: the nodes list after its first 2 nodes; ")
    assert [n["name"] for n in json.loads(run.stdout)["nodes"]] == ["numa-node-1", "numa-node-2"]


def test_an_exec_plugin_that_fails_at_the_start_is_one_line_exit_2(healthy_apiserver, tmp_path):
    """The Python client logs a failed plugin and goes on without credentials (its requests
    then refused): the audit says why in one line, as kubectl would."""
    plugin = tmp_path / "broken-helper.py"
    plugin.write_text("import sys\nsys.stderr.write('no SSO session\\n')\nsys.exit(1)\n")
    kc = healthy_apiserver.kubeconfig(name="kc-broken", user={"exec": {
        "apiVersion": "client.authentication.k8s.io/v1beta1", "command": sys.executable, "args": [str(plugin)],
        "interactiveMode": "Never"}})
    run = audit(healthy_apiserver, "--format", "json", kubeconfig=kc)
    assert run.returncode == 2
    [line] = run.stderr.strip().splitlines()
    assert line.startswith("Error: kubeconfig: no credentials: exec: process returned 1. ")
    assert "no SSO session" in line
    assert not healthy_apiserver.scenario.requests
