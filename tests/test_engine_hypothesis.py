"""Property tests: whatever parsed document the engine is given, it never raises, its summary
adds up to its findings, and suppression and severity overrides act on every finding.
Documents are random JSON-like trees built from the vocabulary the rules read, and valid
manifests with one subtree replaced by random junk."""
from __future__ import annotations

import copy

import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from numaguard.lint.engine import Selection, lint_documents
from numaguard.lint.load.documents import Document, expand_lists
from numaguard.lint.model import Severity
from numaguard.lint.rules.registry import all_rules

from conftest import REPO

KEYS = ["apiVersion", "kind", "metadata", "name", "annotations", "spec", "template", "jobTemplate",
        "resources", "requests", "limits", "cpu", "memory", "hugepages-2Mi", "hugepages-1Gi",
        "containers", "initContainers", "restartPolicy", "image", "os", "nodeSelector",
        "tolerations", "affinity", "resizePolicy", "claims", "featureGates", "cpuManagerPolicy",
        "memoryManagerPolicy", "topologyManagerPolicy", "topologyManagerScope",
        "reservedSystemCPUs", "reservedMemory", "numaNode", "kubeReserved", "systemReserved",
        "evictionHard", "cpuManagerPolicyOptions", "topologyManagerPolicyOptions", "items"]
KINDS = ["Pod", "Deployment", "StatefulSet", "CronJob", "Job", "DaemonSet", "PodTemplate", "List",
         "KubeletConfiguration", "ReplicationController", "Other"]

scalars = st.one_of(st.none(), st.booleans(), st.integers(-2**70, 2**70),
                    st.floats(allow_nan=True, allow_infinity=True), st.sampled_from(
                        ["1", "500m", "4Gi", "-1", "1e400", "static", "Static", "pod", "Always",
                         "windows", "true", "0-3,7", "3-0", "", "NaN", "registry.k8s.io/pause:3.10",
                         "apps/v1", "v1", "kubelet.config.k8s.io/v1beta1"] + KINDS),
                    st.text(max_size=12))
trees = st.recursive(scalars, lambda children: st.one_of(
    st.lists(children, max_size=4),
    st.dictionaries(st.sampled_from(KEYS), children, max_size=5)), max_leaves=40)


def _examples() -> list[dict]:
    docs = []
    for path in sorted((REPO / "deploy" / "examples").rglob("*.yaml")):
        try:
            docs += [d for d in yaml.safe_load_all(path.read_text()) if isinstance(d, dict)]
        except yaml.YAMLError:
            continue
    return docs


EXAMPLES = _examples()


def _paths(tree, prefix=()):
    yield prefix
    if isinstance(tree, dict):
        for k, v in tree.items():
            yield from _paths(v, prefix + (k,))
    elif isinstance(tree, list):
        for i, v in enumerate(tree):
            yield from _paths(v, prefix + (i,))


ALL_INFO = Selection(severities={r.id: Severity.INFO for r in all_rules()})


def _check(docs: list[dict]) -> None:
    result = lint_documents(docs)
    findings, summary = result.findings, result.summary
    # the summary is the findings counted
    active = [f for f in findings if not f.suppressed]
    assert summary.counts == {s: sum(f.severity.value == s for f in active) for s in ("error", "warning", "info")}
    assert summary.suppressed == len(findings) - len(active)
    # every item of every document is an object, skipped, or a non-mapping list item (NG001)
    items = sum(len(expand_lists(Document("x", 0, d, 1, frozenset()))) for d in docs)
    not_mappings = sum(f.rule == "NG001" and f.message.startswith("list item is") for f in findings)
    assert summary.objects + summary.skipped + not_mappings == items
    assert summary.unmanaged <= summary.objects
    # plain dicts carry no positions and no file
    assert {(f.file, f.line, f.column) for f in findings} <= {(None, None, None)}
    assert [f.rule for f in findings] == sorted(f.rule for f in findings)
    # `ignore all` on every document and every rule at info: the same findings, all suppressed
    ignored = lint_documents([Document("x", i, d, 1, frozenset({"all"})) for i, d in enumerate(docs)],
                             selection=ALL_INFO)
    assert [(f.rule, f.path, f.message, f.severity, f.suppressed) for f in ignored.findings] == \
        [(f.rule, f.path, f.message, Severity.INFO, True) for f in findings]
    assert {(f.line, f.column) for f in ignored.findings} <= {(1, 1)}
    assert ignored.summary.counts == {"error": 0, "warning": 0, "info": 0}
    assert ignored.summary.suppressed == len(findings)
    assert (ignored.summary.objects, ignored.summary.skipped) == (summary.objects, summary.skipped)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(kind=st.sampled_from(KINDS), body=st.dictionaries(st.sampled_from(KEYS), trees, max_size=6))
def test_random_documents(kind, body):
    _check([{"apiVersion": "v1", "kind": kind, **body}])


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_mutated_examples(data):
    doc = copy.deepcopy(data.draw(st.sampled_from(EXAMPLES)))
    paths = [p for p in _paths(doc) if p]
    path = data.draw(st.sampled_from(paths))
    target = doc
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = data.draw(trees)
    _check([doc])
