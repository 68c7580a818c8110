"""Property tests: whatever parsed document the engine is given, it returns findings and never
raises. Documents are random JSON-like trees built from the vocabulary the rules read, and
valid manifests with one subtree replaced by random junk."""
from __future__ import annotations

import copy

import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from numaguard.lint.engine import lint_documents
from numaguard.lint.model import Finding

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


def _check(docs) -> None:
    result = lint_documents(docs)
    assert all(isinstance(f, Finding) for f in result.findings)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(kind=st.sampled_from(KINDS), body=st.dictionaries(st.sampled_from(KEYS), trees, max_size=6))
def test_random_documents_never_raise(kind, body):
    _check([{"apiVersion": "v1", "kind": kind, **body}])


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_mutated_examples_never_raise(data):
    doc = copy.deepcopy(data.draw(st.sampled_from(EXAMPLES)))
    paths = [p for p in _paths(doc) if p]
    path = data.draw(st.sampled_from(paths))
    target = doc
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = data.draw(trees)
    _check([doc])
