"""Objects other objects refer to, gathered from the whole run before anything is judged.

Some settings come from another object than the one that carries them: an OpenShift kubelet's
feature gates from the cluster's `FeatureGate` (`config.openshift.io/v1`, named `cluster`) or a
HyperShift `HostedCluster`'s `spec.configuration.featureGate`; a HyperShift ConfigMap's nodes from
the `NodePool` naming it; a KServe predictor's containers from the `ServingRuntime` (or
`ClusterServingRuntime`) its model runs on; an `LLMInferenceService`'s template from the
`LLMInferenceServiceConfig`s it names. A repository keeps these in separate files, and the CLI
lints files one at a time (and in worker processes), so they are gathered first:
`RunReferences.collect` keeps a small extract of every such object (plain data, picklable, sent
to the workers), and the readers consult it (`classify(..., references)`, a carrier's
`resolve`). The CLI finds the files to read for it with `mentions_referenced_kind`, a byte
search, so that only those files are parsed twice; a batch of documents (standard input, the
library, the webhook's one object) adds its own.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from importlib import import_module
from typing import Any, Callable

# (group prefix, kind) -> "module:function" under numaguard.lint.k8s: the extractor, called as
# function(doc, source, line) -> list of (table, key, value) to record.
EXTRACTORS: dict[tuple[str, str], str] = {
    ("config.openshift.io/", "FeatureGate"): "openshift_cluster:feature_gate_extract",
    ("hypershift.openshift.io/", "HostedCluster"): "openshift_cluster:hosted_cluster_extract",
    ("hypershift.openshift.io/", "NodePool"): "openshift_cluster:node_pool_extract",
    ("serving.kserve.io/", "ServingRuntime"): "kserve:runtime_extract",
    ("serving.kserve.io/", "ClusterServingRuntime"): "kserve:runtime_extract",
    ("serving.kserve.io/", "LLMInferenceServiceConfig"): "kserve:llm_config_extract",
}
_KINDS = sorted({kind for _, kind in EXTRACTORS})
# An object's own `kind: X` in YAML: at the start of a line, of a list item (`- kind: X`), of a
# List's item (two spaces in) or in a flow mapping (`{..., kind: X}`), quoted or not; or
# `"kind": "X"` in JSON, anywhere. A CRD names the kind deeper (`spec.names.kind`, four spaces
# in): a file of CRDs is not read twice. An object nested deeper (a List indented four) is not
# seen here: it is then judged as if its file held no such object.
_KIND_NAMES = tuple(kind.encode() for kind in _KINDS)
# What precedes the kind's name on its line (searched for only where a name occurs: a regex
# over the whole text costs 15 times more on a tree of large CRDs).
_BEFORE = re.compile(rb"""(?m)(?:^(?:- |  )?|[{,][ \t]*)["']?kind["']?[ \t]*:[ \t]*["']?$|"kind"\s*:\s*"$""")


def mentions_referenced_kind(data: bytes) -> bool:
    """Whether a file's bytes may hold an object others refer to (then it is read beforehand)."""
    for name in _KIND_NAMES:
        at = data.find(name)
        while at != -1:
            after = data[at + len(name):at + len(name) + 1]
            if not (after.isalnum() or after == b"_"):
                line_start = data.rfind(b"\n", 0, at) + 1
                if _BEFORE.search(data, line_start, at) is not None:
                    return True
            at = data.find(name, at + 1)
    return False


@dataclass
class RunReferences:
    """The run's extracts: table name -> key -> the values recorded under it, in the order
    read (a repository may hold several, e.g. one FeatureGate per cluster overlay)."""

    tables: dict[str, dict[Any, list[Any]]] = field(default_factory=dict)
    seen: set[tuple] = field(default_factory=set)

    def collect(self, doc: Any, source: str | None, line: int | None, index: Any = None) -> None:
        """Record what `doc` holds for others (nothing for most documents); once per document."""
        if not isinstance(doc, dict) or not isinstance(doc.get("apiVersion"), str):
            return
        target = _extractor(doc["apiVersion"], str(doc.get("kind")))
        if target is None or (source, index, line) in self.seen:
            return
        self.seen.add((source, index, line))
        for table, key, value in target(doc, source, line):
            self.tables.setdefault(table, {}).setdefault(key, []).append(value)

    def get(self, table: str, key: Any) -> list[Any]:
        return self.tables.get(table, {}).get(key, [])

    def merge(self, other: "RunReferences") -> None:
        for table, entries in other.tables.items():
            for key, values in entries.items():
                mine = self.tables.setdefault(table, {}).setdefault(key, [])
                mine.extend(v for v in values if v not in mine)
        self.seen |= other.seen


def _extractor(api_version: str, kind: str) -> Callable | None:
    for (group, known), target in EXTRACTORS.items():
        if kind == known and api_version.startswith(group):
            module, _, function = target.partition(":")
            return getattr(import_module(f"numaguard.lint.k8s.{module}"), function)
    return None


__all__ = ["RunReferences", "mentions_referenced_kind", "EXTRACTORS"]
