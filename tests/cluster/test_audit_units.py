"""The audit's parts without a server: error lines and their grouping, the status line, report
targets, and judging each pod template once giving exactly what judging every pod gives."""
from __future__ import annotations

import copy
from pathlib import Path

import pytest
import yaml

from numaguard.lint.cli.audit import Duration, describe
from numaguard.lint.cli.common import UsageProblem, report_targets
from numaguard.lint.cluster import trim
from numaguard.lint.cluster.api import (ApiError, Unreachable, configz_retriable, describe_unreachable,
                                        list_retriable, status_error)
from numaguard.lint.cluster.audit import Progress
from numaguard.lint.cluster.problems import configz_error, grouped

POOL = Path(__file__).resolve().parent.parent / "fixtures" / "cluster" / "pool.yaml"


# ------------------------------------------------------------------------------ grouping

def test_one_node_keeps_its_address():
    assert grouped({"a": "dial tcp 10.0.3.28:10250: i/o timeout"}) == ["node/a: dial tcp 10.0.3.28:10250: i/o timeout"]


def test_addresses_names_and_ports_that_differ_become_placeholders():
    failures = {f"pool-{i}": f"read tcp 10.0.0.2:{40000 + i}->10.0.3.{i}:10250: pool-{i}: read: connection reset"
                for i in range(1, 6)}
    failures["odd"] = "dial tcp [fd00::7]:10250: connect: no route to host"
    failures["odd-2"] = "dial tcp [fd00::8]:10250: connect: no route to host"
    assert grouped(failures) == [
        "5 nodes (pool-1, pool-2, pool-3 and 2 more): read tcp 10.0.0.2:<port>-><node-ip>:10250: <node>: read: "
        "connection reset",
        "2 nodes (odd, odd-2): dial tcp <node-ip>:10250: connect: no route to host"]


def test_different_messages_stay_apart_and_a_name_inside_another_word_is_no_name():
    assert grouped({"n1": 'nodes "n1" not found', "n2": 'nodes "n2" not found', "n3": "timeout"}) == [
        '2 nodes (n1, n2): nodes "<node>" not found', "node/n3: timeout"]
    # node "a" is no part of "via", a version number is no address, and the same address on
    # every node stays written out
    assert grouped({"a": "kubelet 1.37.0.1 via 10.0.0.1:443", "b": "kubelet 1.37.0.1 via 10.0.0.1:443"}) == [
        "2 nodes (a, b): kubelet 1.37.0.1 via 10.0.0.1:443"]
    assert grouped({"web": "webhook web failed", "db": "webhook db failed"}) == [
        "2 nodes (web, db): webhook <node> failed"]


def test_configz_errors_in_words():
    assert configz_error(Unreachable("timeout", "no answer within 2.5 s", 2.5), 2.5) == (
        "the kubelet did not answer configz within 2.5 s (via the API server's node proxy)")
    assert configz_error(ApiError(403, "", "Forbidden (user=x, verb=get, resource=nodes, subresource=proxy)",
                                  is_status=False), 10) == (
        "cannot read the kubelet configuration through the node proxy: 403 from the kubelet itself (its own "
        "authorization, not RBAC on nodes/proxy): Forbidden (user=x, verb=get, resource=nodes, subresource=proxy)")
    assert configz_error(ApiError(429, "", "Too many requests, please try again later.", is_status=False), 10, 2) == (
        "cannot read the kubelet configuration through the node proxy: 429: Too many requests, please try "
        "again later. (2 attempts)")


# ------------------------------------------------------------------------------ errors

def test_status_bodies_and_plain_text():
    error = status_error(503, b'{"kind":"Status","apiVersion":"v1","status":"Failure","message":"no",'
                              b'"reason":"ServiceUnavailable","code":503}', {"Retry-After": "3"})
    assert (error.line(), error.is_status, error.headers) == ("503 ServiceUnavailable: no", True, {"Retry-After": "3"})
    assert status_error(500, b'{"kind":"Status","message":"etcdserver: request timed out","code":500}').line() == \
        "500: etcdserver: request timed out"
    text = status_error(429, b"Too many requests, please try again later.\n")
    assert (text.line(), text.is_status) == ("429: Too many requests, please try again later.", False)
    assert status_error(502, b"").line() == "502: (no body)"


def test_what_is_retried():
    assert [list_retriable(ApiError(code, "", "")) for code in (400, 403, 404, 410, 429, 500, 503, 504)] == [
        False, False, False, False, True, True, True, True]
    assert [list_retriable(Unreachable(kind, "")) for kind in ("timeout", "reset", "refused", "tls", "other")] == [
        True, True, False, False, False]
    assert [configz_retriable(ApiError(code, "", "")) for code in (403, 429, 500, 503)] == [False, True, False, False]
    assert [configz_retriable(Unreachable(kind, "")) for kind in ("timeout", "reset", "refused")] == [False, True, False]


def test_urllib3_errors_in_words():
    from urllib3 import exceptions as u3

    read = describe_unreachable(u3.ReadTimeoutError(None, "/api/v1/pods", "Read timed out. (read timeout=10)"), 10)
    assert (read.kind, read.detail) == ("timeout", "no answer within 10 s")
    connect = describe_unreachable(u3.MaxRetryError(None, "/", u3.ConnectTimeoutError("timed out")), 0.5)
    assert (connect.kind, connect.detail) == ("timeout", "no connection within 0.5 s")
    refused = describe_unreachable(u3.NewConnectionError(
        None, "<urllib3.connection.HTTPSConnection object at 0x7f>: Failed to establish a new connection: "
              "[Errno 113] No route to host"), 10)
    assert (refused.kind, refused.detail) == ("refused", "No route to host")
    closed = describe_unreachable(u3.ProtocolError("Connection aborted.", ConnectionAbortedError("gone")), 10)
    assert (closed.kind, closed.detail) == ("reset", "the API server closed the connection before the answer was "
                                                     "complete")


# ------------------------------------------------------------------------------ command line

def test_the_status_line_names_the_nodes_in_flight_and_no_percentage():
    waiting = Progress("pods", nodes=1000, pods=12500, configz_done=412, configz_total=1000,
                       in_flight=(("pool-0414", 98.0), ("pool-0413", 90.2), ("pool-0415", 99.5), ("pool-0416", 99.9)))
    assert describe(waiting, 100.0) == (
        "numaguard audit: 1,000 nodes; 12,500 pods so far; kubelet configurations 412 of 1,000; waiting for "
        "pool-0413 (10 s), pool-0414 (2 s), pool-0415 (0 s) and 1 more")
    assert describe(Progress("nodes"), 0.0) == "numaguard audit: reading nodes"
    assert describe(Progress("noderesourcetopologies", nodes=3, configz_total=3), 0.0) == (
        "numaguard audit: 3 nodes; reading NodeResourceTopologies; kubelet configurations 0 of 3")
    assert describe(Progress("kubelet configurations", nodes=3, pods=7, configz_done=2, configz_total=3,
                             in_flight=(("numa-node-3", 1.0),)), 10.4) == (
        "numaguard audit: 3 nodes; 7 pods read; kubelet configurations 2 of 3; waiting for numa-node-3 (9 s)")


@pytest.mark.parametrize("text,seconds", [("10", 10.0), ("10s", 10.0), ("2.5s", 2.5), ("500ms", 0.5), ("1m", 60.0)])
def test_request_timeout_durations(text, seconds):
    assert Duration().convert(text, None, None) == seconds


@pytest.mark.parametrize("text", ["0", "0s", "-1", "ten", "5h"])
def test_request_timeout_refuses_what_is_no_duration(text):
    import click
    with pytest.raises(click.BadParameter):
        Duration().convert(text, None, None)


def test_report_targets_take_the_format_from_the_extension():
    assert report_targets((), ()) == [("text", None)]
    assert report_targets((), ("r.JSON", "r.sarif", "r.xml", "r.html", "r.txt", "r.text", "r.yaml")) == [
        ("json", "r.JSON"), ("sarif", "r.sarif"), ("junit", "r.xml"), ("html", "r.html"), ("text", "r.txt"),
        ("text", "r.text"), ("policyreport", "r.yaml")]
    # a --format pairs with the --output at its place; the outputs after take their extension's
    assert report_targets(("sarif",), ("results.json", "pool.html")) == [("sarif", "results.json"), ("html", "pool.html")]
    assert report_targets(("text", "json"), ("out.txt",)) == [("text", "out.txt"), ("json", None)]
    with pytest.raises(UsageProblem) as refused:
        report_targets((), ("report.out",))
    assert refused.value.message == ("report.out: cannot tell the report format from the extension .out: give "
                                     "--format, or name the file .htm, .html, .json, .sarif, .text, .txt, .xml, "
                                     ".yaml, .yml")
    with pytest.raises(UsageProblem, match="extension [(]none[)]"):
        report_targets((), ("report",))


# ------------------------------------------------------------------------------ judging once

def _pool_pods() -> list[dict]:
    data = yaml.safe_load(POOL.read_text())
    pods = [trim.pod(p) for p in data["pods"]]
    # more replicas of the order-matcher on other nodes (same template, another nodeName), a
    # bare pod with a twin (same spec, another name, another namespace), and a replica whose
    # resources were resized in place (same ReplicaSet, another spec)
    matcher = next(p for p in pods if p["metadata"]["name"].startswith("order-matcher"))
    for i, node in enumerate(("numa-node-2", "numa-node-3")):
        extra = copy.deepcopy(matcher)
        extra["metadata"]["name"] = f"order-matcher-5c9d7f6b8-extra{i}"
        extra["spec"]["nodeName"] = node
        pods.append(extra)
    bare = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "debug", "namespace": "trading"},
            "spec": {"nodeName": "numa-node-2", "resources": {"limits": {"cpu": "2.5", "memory": "1Gi"}},
                     "containers": [{"name": "sh", "image": "busybox"}]}}
    twin = copy.deepcopy(bare)
    twin["metadata"] = {"name": "debug-2", "namespace": "risk"}
    resized = copy.deepcopy(matcher)
    resized["metadata"]["name"] = "order-matcher-5c9d7f6b8-resized"
    resized["spec"]["resources"] = {"requests": {"cpu": "14", "memory": "16Gi"}, "limits": {"cpu": "14", "memory": "16Gi"}}
    return pods + [bare, twin, resized]


def _reported_directly(pods: list[dict]) -> list[dict]:
    """What the audit reports, chosen as before templates were shared: every rejected pod, the
    first pod (by list order) of each controller, every bare pod."""
    from numaguard.lint.rules.state import rejection
    seen, out = set(), []
    for pod in pods:
        meta = pod["metadata"]
        controller = next((r for r in meta.get("ownerReferences", ()) if r.get("controller")), None)
        key = (meta.get("namespace"), controller["uid"]) if controller else None
        if rejection(pod) is not None or key is None or key not in seen:
            out.append(pod)
            seen.add(key)
    return out


def test_judging_each_template_once_gives_what_judging_each_pod_gives():
    from numaguard.lint.cluster.audit import pool_config
    from numaguard.lint.cluster.judge import PodJudge, pod_file
    from numaguard.lint.engine import Linter, Selection
    from numaguard.lint.load.documents import Document
    from numaguard.lint.numa.node import load_node_file

    node = load_node_file("builtin:dual-socket-ht")
    config = pool_config()
    selection = Selection(severities=config.severities)
    pods = _pool_pods()
    judge = PodJudge(config, selection)
    for pod in pods:
        judge.add(pod)
    judge.use_node(node)
    shared = Linter(config=config, selection=selection, node=node)
    for part in judge.parts():
        shared.absorb(part)
    once = shared.finish()
    direct = Linter(config=config, selection=selection, node=node)
    reported = _reported_directly(pods)
    direct.lint([Document(source=pod_file(p), index=0, data=p, line=0, ignores=frozenset()) for p in reported])
    every = direct.finish()
    assert judge.templates == 6          # order-matcher, its resized replica, analytics, risk, exporter, debug
    assert [f.as_dict() for f in once.findings] == [f.as_dict() for f in every.findings]
    assert once.summary.as_dict() == every.summary.as_dict()
    files = {f.file for f in once.findings}
    assert {"pod/risk/debug-2", "pod/trading/debug"} <= files      # the twin, judged through the template
    assert sorted(judge.workloads) == sorted(pod_file(p) for p in reported)


def test_nodes_running_the_same_pods_are_simulated_once_and_named_apart():
    from numaguard.lint.cluster.judge import PodJudge, occupancies
    from numaguard.lint.engine import Selection
    from numaguard.lint.numa.admission import build_state
    from numaguard.lint.numa.node import parse_node_resource_topology
    from numaguard.lint.numa.occupancy import occupy

    data = yaml.safe_load(POOL.read_text())
    nrt = data["nrts"][0]
    kc = {"apiVersion": "kubelet.config.k8s.io/v1beta1", "kind": "KubeletConfiguration", **data["configz"]["numa-node-1"]}
    unpinned = {"apiVersion": "kubelet.config.k8s.io/v1beta1", "kind": "KubeletConfiguration",
                **data["configz"]["numa-node-2"]}          # cpuManagerPolicy none
    matcher = trim.pod(data["pods"][0])
    nodes, pods = [], []
    for name in ("a", "b", "c"):
        node = copy.deepcopy(trim.node(data["nodes"][0]))
        node["metadata"]["name"] = name
        nodes.append(node)
        for i in range(3):
            pod = copy.deepcopy(matcher)
            pod["metadata"]["name"] = f"{name}-{i}"
            pod["spec"]["nodeName"] = name
            pods.append(pod)
    judge = PodJudge(None, Selection())
    for pod in pods:
        judge.add(pod)
    configs = {"a": kc, "b": kc, "c": unpinned}
    found = occupancies(nodes, dict.fromkeys("abc", nrt), configs, judge)
    topology = parse_node_resource_topology(nrt, "nrt").topology
    for name, occ in zip("abc", found):
        alone = occupy(build_state(topology, configs[name], name=name),
                       [(f"trading/{name}-{i}", matcher) for i in range(3)])
        assert occ.name == name
        assert occ.pods == alone.pods
        assert (occ.free_cpus_by_numa(), occ.free_memory) == (alone.free_cpus_by_numa(), alone.free_memory)
    assert [p.label for p in found[1].pods] == ["trading/b-0", "trading/b-1", "trading/b-2"]
    # the same pods under another configuration are simulated apart: nothing pinned on c
    assert [len(p.exclusive) for p in found[0].pods] == [8, 8, 8] and [len(p.exclusive) for p in found[2].pods] == [0, 0, 0]


# ------------------------------------------------------------------------------ credentials

def test_a_client_certificate_is_credentials_when_an_exec_plugin_beside_it_fails(tmp_path):
    """A user with a client certificate and an exec plugin that fails: the Python client logs
    the plugin's failure and goes on with the certificate, which the API server accepts, so
    that is not "no credentials" (kubectl too uses the certificate). Without either it is."""
    import base64
    import sys

    from recorded_apiserver import make_tls, write_kubeconfig

    from numaguard.lint.cluster.api import ClusterError, _api_client

    ca, cert, key = make_tls(tmp_path)
    plugin = tmp_path / "broken-helper.py"
    plugin.write_text("import sys\nsys.exit(1)\n")
    failing = {"apiVersion": "client.authentication.k8s.io/v1beta1", "command": sys.executable,
               "args": [str(plugin)], "interactiveMode": "Never"}
    certificate = {"client-certificate-data": base64.b64encode(cert.read_bytes()).decode(),
                   "client-key-data": base64.b64encode(key.read_bytes()).decode()}
    kc = write_kubeconfig(tmp_path / "kc-cert", "https://127.0.0.1:1", ca, "", user={**certificate, "exec": failing})
    configuration = _api_client(str(kc), None, 1).configuration
    assert Path(configuration.cert_file).read_bytes() == cert.read_bytes()
    assert not configuration.api_key
    bare = write_kubeconfig(tmp_path / "kc-bare", "https://127.0.0.1:1", ca, "", user={"exec": failing})
    with pytest.raises(ClusterError) as refused:
        _api_client(str(bare), None, 1)
    assert str(refused.value) == "kubeconfig: no credentials: exec: process returned 1"
