"""The findings cache: keyed on what the rules judge (the judged view), bounded in bytes, least
recently used out first; the byte count errs high, never low."""
from __future__ import annotations

import copy
import gc
import tracemalloc

import pytest

from numaguard.lint.carriers import BUILTIN_CARRIERS
from numaguard.lint.config import config_from_dict
from numaguard.lint.engine import lint_documents
from numaguard.lint.model import Finding, Severity
from numaguard.lint.numa.node import load_node_file
from numaguard.webhook.cache import (MAX_NESTING, SLOT_BYTES, FindingsCache, entry_bytes, judged_view,
                                     nested_too_deep, view_key)
from numaguard.webhook.decide import Policy
from .judged_objects import judged_objects
from .reviews import burstable_pod, deployment, managed_pod, replica_pod


def test_the_judged_view_keeps_only_what_the_engine_reads():
    obj = deployment(managed_pod())
    obj["metadata"]["labels"] = {"team": "trading"}
    obj["metadata"]["annotations"] = {"kubectl.kubernetes.io/last-applied-configuration": "x" * 1000,
                                      "numaguard.io/ignore": "NG302"}
    obj["spec"]["template"]["metadata"]["annotations"] = {"numaguard.io/scope": "managed", "prometheus.io/port": "9"}
    view = judged_view(obj, BUILTIN_CARRIERS)
    assert view == {
        "apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"annotations": {"numaguard.io/ignore": "NG302"}},
        "spec": {"replicas": 3, "selector": {"matchLabels": {"app": "order-matcher"}},
                 "template": {"metadata": {"annotations": {"numaguard.io/scope": "managed"}},
                              "spec": obj["spec"]["template"]["spec"]},
                 "strategy": {"type": "RollingUpdate"}}}
    assert "status" in obj and "status" not in view
    # Values of the wrong type stay for the engine to report.
    assert judged_view({"metadata": {"annotations": ["a"]}, "spec": {"metadata": "x"}}, BUILTIN_CARRIERS) == {
        "metadata": {"annotations": ["a"]}, "spec": {"metadata": "x"}}


def test_the_judged_view_walks_the_carrier_table_s_wildcards():
    """A config carrier with a map wildcard and a list wildcard, and a JobSet (a Job template
    between it and its pods): every mapping on the way keeps only numaguard's annotations."""
    config = config_from_dict({"podTemplates": [{"group": "ml.example.com", "kind": "Trainer",
                                                 "paths": ["spec.roles?.*.template", "spec.workers[*].template"]}]})
    big = {"example.com/blob": "b" * 10_000}
    mine = {"numaguard.io/scope": "managed"}

    def template(annotations: dict) -> dict:
        return {"metadata": {"name": "t", "labels": {"a": "b"}, "annotations": annotations}, "spec": {"containers": []}}

    trainer = {"apiVersion": "ml.example.com/v3", "kind": "Trainer", "metadata": {"name": "x", "annotations": big},
               "spec": {"roles": {"ps": {"metadata": big, "template": template({**big, **mine})}},
                        "workers": [{"template": template(big)}, "odd"]}, "status": {"phase": "Running"}}
    assert judged_view(trainer, config.pod_carriers) == {
        "apiVersion": "ml.example.com/v3", "kind": "Trainer", "metadata": {},
        "spec": {"roles": {"ps": {"metadata": {}, "template": {"metadata": {"annotations": mine},
                                                               "spec": {"containers": []}}}},
                 "workers": [{"template": {"metadata": {}, "spec": {"containers": []}}}, "odd"]}}
    # A kind the table does not hold keeps only its own metadata reduced.
    assert judged_view(trainer, BUILTIN_CARRIERS)["spec"] is trainer["spec"]
    jobset = {"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet", "metadata": {"name": "j"},
              "spec": {"replicatedJobs": [{"name": "w", "template": {"metadata": {"annotations": {**big, **mine}},
                                                                     "spec": {"template": template(big)}}}]}}
    assert judged_view(jobset, BUILTIN_CARRIERS)["spec"]["replicatedJobs"] == [
        {"name": "w", "template": {"metadata": {"annotations": mine},
                                   "spec": {"template": {"metadata": {}, "spec": {"containers": []}}}}}]


def _comparable(findings: list[Finding]) -> list[tuple]:
    return [(f.rule, f.severity, f.path, f.container, f.message, f.remediation, f.suppressed) for f in findings]


@pytest.mark.parametrize("config, with_findings", [
    ({}, 80),
    ({"pool": {"nodeLabels": {"node.example.com/pool": "numa"},
               "taint": {"key": "node.example.com/pool", "effect": "NoSchedule"}}, "node": "builtin:dual-socket-ht"}, 30),
], ids=["defaults", "pool and node"])
def test_the_view_is_judged_exactly_like_the_object(config, with_findings):
    """Over every object of a judged kind in the repository: the findings of the view are those of
    the object (less its status, which the API server resets on CREATE)."""
    parsed = config_from_dict(config)
    node = load_node_file(parsed.node) if parsed.node else None
    compared = 0
    for where, obj in judged_objects():
        whole = {k: v for k, v in obj.items() if k != "status"}
        expected = _comparable(lint_documents([whole], config=parsed, node=node).findings)
        assert _comparable(lint_documents([judged_view(obj, parsed.pod_carriers)], config=parsed, node=node).findings) == expected, where
        compared += bool(expected)
    assert compared >= with_findings


def test_replicas_share_one_entry_and_only_numaguard_annotations_make_another():
    policy = Policy(config_from_dict({}))
    judged = []

    def judge(view):
        judged.append(view)
        return lint_documents([view], config=policy.config, context=policy.context).active

    cache = FindingsCache(1 << 20)
    template = burstable_pod()
    for _ in range(3):                                    # new name, uid, ownerReferences each time
        cache.findings(judged_view(replica_pod(template), BUILTIN_CARRIERS), judge)
    relabelled = replica_pod(template)
    relabelled["metadata"]["labels"]["tier"] = "gold"
    relabelled["metadata"]["annotations"] = {"example.com/build": "1234" * 50_000}
    cache.findings(judged_view(relabelled, BUILTIN_CARRIERS), judge)
    assert (len(judged), cache.hits, cache.misses, len(cache)) == (1, 3, 1, 1)
    ignored = replica_pod(template)
    ignored["metadata"]["annotations"] = {"numaguard.io/ignore": "NG103"}
    assert cache.findings(judged_view(ignored, BUILTIN_CARRIERS), judge) == []
    assert (len(judged), len(cache)) == (2, 2)


def _finding(i: int, message_chars: int) -> Finding:
    return Finding(rule="NG103", name="pod-not-guaranteed", severity=Severity.ERROR, message=f"{i:04d}" + "m" * message_chars,
                   remediation="fix", path="spec.resources")


def test_the_budget_is_bytes_and_the_least_recently_used_go_first():
    views = [{"kind": "Pod", "spec": {"n": i}} for i in range(6)]
    findings = [[_finding(i, 400 * (i + 1))] for i in range(6)]
    sizes = [entry_bytes(view_key(v), f) for v, f in zip(views, findings)]
    assert sizes == sorted(sizes) and sizes[1] - sizes[0] == 400          # the message's 400 more characters
    cache = FindingsCache(sizes[0] + sizes[1] + sizes[2])
    for v, f in zip(views[:3], findings[:3]):
        assert cache.findings(v, lambda _v, f=f: f) is f
    assert (cache.bytes, len(cache), cache.evictions) == (sizes[0] + sizes[1] + sizes[2], 3, 0)
    cache.findings(views[0], lambda _v: pytest.fail("a hit is not judged again"))    # 0 is now the newest
    cache.findings(views[3], lambda _v: findings[3])         # over budget: 1, then 2 go (the oldest)
    assert cache.evictions == 2 and len(cache) == 2
    assert cache.bytes == sizes[0] + sizes[3] <= cache.budget
    judged = []
    cache.findings(views[1], lambda v: judged.append(v) or findings[1])
    assert judged == [views[1]]                              # it was evicted: judged again
    # An entry bigger than the whole budget is answered, not kept.
    small = FindingsCache(sizes[0] - 1)
    assert small.findings(views[0], lambda _v: findings[0]) is findings[0]
    assert (small.bytes, len(small), small.misses) == (0, 0, 1)


def test_an_entry_counts_its_key_its_findings_and_its_slot():
    key = view_key({"kind": "Pod"})
    assert len(key) == 16
    assert entry_bytes(key, []) == SLOT_BYTES + 16 + 33 + 56           # bytes object of 16, an empty list


def test_the_count_errs_high_never_low_against_what_python_allocates():
    """tracemalloc's view of what 300 cached entries of real findings hold, against the count."""
    policy = Policy(config_from_dict({"node": "builtin:dual-socket-ht"}), load_node_file("builtin:dual-socket-ht"))

    def judge(view):
        return lint_documents([view], config=policy.config, context=policy.context).active

    def views(offset):
        out = []
        for i in range(300):
            pod = burstable_pod() if i % 2 else managed_pod(cpu="20", image="registry.k8s.io/pause:3.10")
            pod["spec"]["containers"][0]["name"] = f"app{offset + i}"
            out.append(judged_view(pod, BUILTIN_CARRIERS))
        return out

    for view in views(10_000):                       # the engine's own caches warmed up first
        judge(view)
    todo = views(0)
    cache = FindingsCache(1 << 30)
    gc.collect()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        for view in todo:
            cache.findings(view, judge)
        gc.collect()
        held = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    assert len(cache) == 300
    assert held <= cache.bytes <= 2 * held


def test_nesting_is_measured_without_recursion():
    def nested(depth):
        value: object = "leaf"
        for i in range(depth):
            value = {"a": value} if i % 2 else [value]
        return value

    assert nested_too_deep({"spec": nested(MAX_NESTING - 1)}) is None
    assert nested_too_deep({"spec": nested(MAX_NESTING)}) == "spec" + ".a[0]" * 31 + ".a"
    assert nested_too_deep({"spec": nested(100_000)}) is not None
    assert nested_too_deep(copy.deepcopy(deployment(managed_pod()))) is None
