"""OpenShift and HyperShift objects that set a kubelet's settings from outside its own object: the
cluster's feature gates, and the ConfigMaps a HyperShift NodePool hands its nodes.

**Feature gates.** OpenShift refuses `featureGates` in a KubeletConfig; the Machine Config
Operator writes every kubelet's gates from the cluster's `FeatureGate` (openshift/machine-config-
operator 7ff337a `pkg/controller/kubelet-config/kubelet_config_features.go`
`generateFeatureMap`: each known feature, enabled or not, into kubelet.conf's `featureGates`).
openshift/api 2a3d739 `config/v1/types_feature.go`: the FeatureGate is named `cluster`;
`spec.featureSet` selects OpenShift's sets (`""`, `TechPreviewNoUpgrade`,
`DevPreviewNoUpgrade`, `OKD`), none of which holds `PodLevelResourceManagers` (it is not in
openshift/api's `features/features.go`): only `featureSet: CustomNoUpgrade` with
`customNoUpgrade.enabled: [PodLevelResourceManagers]` turns it on ("featureSet must equal
CustomNoUpgrade ... to use this field"). A HyperShift `HostedCluster` carries the same
selection in `spec.configuration.featureGate` for its NodePools' nodes (openshift/hypershift
3ee9615 `api/hypershift/v1beta1/hostedcluster_types.go`). OpenShift's kubelet ignores gates it
does not know (the MCO's note on `openshiftOnlyFeatureGates`), so an unknown name is a warning
there, not a refusal.

**HyperShift NodePools.** `spec.config` names ConfigMaps whose `config` key holds
machineconfiguration.openshift.io objects (a KubeletConfig, a MachineConfig), `spec.tuningConfig`
ConfigMaps whose `tuning` key holds a PerformanceProfile or Tuned (`api/hypershift/v1beta1/
nodepool_types.go`). HyperShift sets each KubeletConfig's `machineConfigPoolSelector` to its
built-in pool and each MachineConfig's role to `worker` (`hypershift-operator/controllers/
nodepool/config.go` `defaultAndValidateConfigManifest`): they reach the NodePool's nodes, labelled
`hypershift.openshift.io/nodePool: <name>` (`NodePoolLabel`) and with the pool's `nodeLabels`. A
ConfigMap is judged where it is written, with the kubelet rules on each object in it; its nodes
and gates come from the NodePools and HostedClusters of the run (`numaguard.lint.references`).
"""
from __future__ import annotations

import copy
from dataclasses import dataclass, replace
from typing import Any, Iterator

from numaguard.lint.k8s.kubelet_layers import EmbeddedText, Place, parse_embedded
from numaguard.lint.k8s.openshift_base import cluster_gates, tell_cluster_gates, with_cluster_gates
from numaguard.lint.k8s.platforms import PlatformError, PlatformKubelet
from numaguard.lint.model import NodeSelection, Path, Severity, Violation, items

FEATURE_GATE_NAME = "cluster"
CUSTOM = "CustomNoUpgrade"
NODE_POOL_LABEL = "hypershift.openshift.io/nodePool"
MCO_FEATURES = "machine-config-operator pkg/controller/kubelet-config/kubelet_config_features.go"
CONFIG_KEY, TUNING_KEY = "config", "tuning"


@dataclass(frozen=True)
class GateSource:
    """One feature gate selection: where it is written, the kubelet gates it sets (only
    customNoUpgrade's lists name upstream kubelet gates), and its featureSet."""

    source: str
    gates: tuple[tuple[str, bool], ...]
    feature_set: str

    def describe(self) -> str:
        return f"{self.source}, featureSet {self.feature_set or 'Default'}"


def selected_gates(selection: Any) -> dict[str, bool]:
    """The gates a FeatureGateSelection sets: customNoUpgrade's lists with featureSet
    CustomNoUpgrade (a disabled gate wins over the same gate enabled), nothing otherwise."""
    if not isinstance(selection, dict) or selection.get("featureSet") != CUSTOM:
        return {}
    custom = selection.get("customNoUpgrade") if isinstance(selection.get("customNoUpgrade"), dict) else {}
    gates = {str(g): True for g in items(custom.get("enabled")) if isinstance(g, str)}
    gates.update({str(g): False for g in items(custom.get("disabled")) if isinstance(g, str)})
    return gates


def _gate_source(selection: Any, source: str | None, line: int | None) -> GateSource:
    where = f"{source or '<input>'}:{line}" if line else (source or "<input>")
    feature_set = str(selection.get("featureSet") or "") if isinstance(selection, dict) else ""
    return GateSource(where, tuple(sorted(selected_gates(selection).items())), feature_set)


def feature_gate_extract(doc: dict, source: str | None, line: int | None) -> list:
    meta = doc.get("metadata") if isinstance(doc.get("metadata"), dict) else {}
    if meta.get("name") != FEATURE_GATE_NAME:
        return []
    return [("gates", "openshift", _gate_source(doc.get("spec"), source, line))]


def hosted_cluster_extract(doc: dict, source: str | None, line: int | None) -> list:
    meta = doc.get("metadata") if isinstance(doc.get("metadata"), dict) else {}
    spec = doc.get("spec") if isinstance(doc.get("spec"), dict) else {}
    configuration = spec.get("configuration") if isinstance(spec.get("configuration"), dict) else {}
    return [("gates", ("hostedcluster", meta.get("namespace"), meta.get("name")),
             _gate_source(configuration.get("featureGate"), source, line))]


@dataclass(frozen=True)
class NodePoolRef:
    """A NodePool naming a ConfigMap: its name, the labels and taints it gives its nodes, and
    its HostedCluster."""

    name: str
    labels: tuple[tuple[str, str], ...]
    taints: tuple[tuple[str, str, str], ...]
    cluster: str


def node_pool_extract(doc: dict, source: str | None, line: int | None) -> list:
    meta = doc.get("metadata") if isinstance(doc.get("metadata"), dict) else {}
    spec = doc.get("spec") if isinstance(doc.get("spec"), dict) else {}
    labels = {NODE_POOL_LABEL: str(meta.get("name"))}
    if isinstance(spec.get("nodeLabels"), dict):
        labels.update({str(k): "" if v is None else str(v) for k, v in spec["nodeLabels"].items()})
    taints = tuple((str(t.get("key", "")), str(t.get("value", "") or ""), str(t.get("effect", "")))
                   for t in items(spec.get("taints")) if isinstance(t, dict))
    ref = NodePoolRef(str(meta.get("name")), tuple(sorted(labels.items())), taints, str(spec.get("clusterName", "")))
    out = []
    for field_name in ("config", "tuningConfig"):
        for item in items(spec.get(field_name)):
            if isinstance(item, dict) and isinstance(item.get("name"), str):
                out.append(("nodepool-configmaps", (meta.get("namespace"), item["name"]), ref))
    return out


# -- the FeatureGate itself ----------------------------------------------------------------------

def feature_gate(doc: dict) -> Iterator[PlatformKubelet | PlatformError]:
    """A FeatureGate (or a HostedCluster's featureGate): its gates judged as a kubelet's, only
    where they are written."""
    from numaguard.lint.k8s.carrier_support import MappedKubelet
    from numaguard.lint.k8s.openshift_base import MCO_KUBELET_CONF

    kind = str(doc.get("kind"))
    at: Path = ("spec",) if kind == "FeatureGate" else ("spec", "configuration", "featureGate")
    selection: Any = doc
    for key in at:
        selection = selection.get(key) if isinstance(selection, dict) else None
    if not isinstance(selection, dict):
        return
    extra = []
    custom = selection.get("customNoUpgrade")
    if custom and selection.get("featureSet") != CUSTOM:
        extra.append(("NG002", Violation(at + ("customNoUpgrade",), (
            f"not used: customNoUpgrade is read only with featureSet: {CUSTOM} (openshift/api config/v1 "
            f"types_feature.go), and this one is {selection.get('featureSet') or 'Default'}"),
            severity=Severity.WARNING, remediation=f"Set featureSet: {CUSTOM} (it cannot be undone) or remove "
                                                   f"customNoUpgrade.")))
    sources: dict[Path, Place] = {}
    if selection.get("featureSet") == CUSTOM and isinstance(custom, dict):
        for listed in ("enabled", "disabled"):
            for i, gate in enumerate(items(custom.get(listed))):
                if isinstance(gate, str):
                    sources[("featureGates", gate)] = Place(at + ("customNoUpgrade", listed, i))
    config = copy.deepcopy(MCO_KUBELET_CONF)
    config["featureGates"] = selected_gates(selection)
    if sources:
        sources[("featureGates",)] = Place(at + ("customNoUpgrade",))
    label = "OpenShift FeatureGate" if kind == "FeatureGate" else "HyperShift HostedCluster featureGate"
    carrier = MappedKubelet(label, config, {}, (), fallback=at, shown=frozenset({"featureGates"}),
                            adjusters=(_feature_gate_adjust,), sources=sources)
    carrier.extra.extend(extra)
    yield carrier


def _feature_gate_adjust(carrier: PlatformKubelet, rule_id: str, v: Violation) -> Violation | None:
    if rule_id == "NG202":
        return None              # said on each kubelet configuration of the cluster that needs it
    if rule_id == "NG210" and "unrecognized feature gate" in v.message:
        name = v.path[1] if len(v.path) > 1 else "?"
        return Violation(v.path, f"{name} is no kubelet feature gate: OpenShift's kubelet ignores gates it does "
                                 f"not know ({MCO_FEATURES}), so it has no effect", v.container, Severity.WARNING,
                         "Check the gate's name (PodLevelResourceManagers, PodLevelResources...).")
    return v


# -- HyperShift: the ConfigMaps a NodePool names --------------------------------------------------

def is_hypershift_configmap(doc: dict) -> bool:
    """A ConfigMap whose `config` holds a KubeletConfig or MachineConfig, or whose `tuning`
    holds a PerformanceProfile (a cheap text test; the reader parses)."""
    data = doc.get("data")
    if not isinstance(data, dict):
        return False
    text = data.get(CONFIG_KEY)
    if isinstance(text, str) and "machineconfiguration.openshift.io/" in text and \
            ("KubeletConfig" in text or "MachineConfig" in text):
        return True
    text = data.get(TUNING_KEY)
    return isinstance(text, str) and "performance.openshift.io/" in text and "PerformanceProfile" in text


_EMBEDDED_READERS = {
    ("machineconfiguration.openshift.io/", "KubeletConfig"): "platforms:openshift_kubelet_config",
    ("machineconfiguration.openshift.io/", "MachineConfig"): "platform_openshift:machine_config",
    ("performance.openshift.io/", "PerformanceProfile"): "platforms:performance_profile",
}


def hypershift_configmap(doc: dict) -> Iterator[PlatformKubelet | PlatformError]:
    """The kubelet carriers of the objects a NodePool's ConfigMap holds, each finding at the line
    inside the ConfigMap's string; nodes and gates from the run's NodePools (`resolve`)."""
    from importlib import import_module

    meta = doc.get("metadata") if isinstance(doc.get("metadata"), dict) else {}
    key_of = (meta.get("namespace"), meta.get("name"))
    for data_key in (CONFIG_KEY, TUNING_KEY):
        text = doc["data"].get(data_key)
        if not isinstance(text, str):
            continue
        path: Path = ("data", data_key)
        embedded, problem = parse_embedded(text, f"ConfigMap {meta.get('name')} {data_key}")
        if embedded is None:
            yield PlatformError(path, f"HyperShift refuses it: configmap \"{meta.get('name')}\" contains invalid "
                                      f"yaml: {problem}")
            continue
        for index, inner in enumerate(embedded.documents):
            if not isinstance(inner, dict):
                continue
            target = next((t for (group, kind), t in _EMBEDDED_READERS.items()
                           if inner.get("kind") == kind and str(inner.get("apiVersion", "")).startswith(group)), None)
            if target is None:
                continue
            module, _, function = target.partition(":")
            read = getattr(import_module(f"numaguard.lint.k8s.{module}"), function)
            try:
                found = read(inner)
                found = [found] if isinstance(found, PlatformKubelet) else list(found)
            except PlatformError as err:
                found = [err]
            for item in found:
                if isinstance(item, PlatformError):
                    yield PlatformError(path, f"{inner.get('kind')} in {data_key}: {item.message}")
                else:
                    yield _embedded(item, path, embedded, index, key_of, str(inner.get("kind")))


def _embedded(inner: PlatformKubelet, path: Path, text: EmbeddedText, index: int, key_of: tuple, kind: str):
    """`inner` (a carrier of an object inside the ConfigMap's string) with its places inside
    the string, its refusals as notices there, and HyperShift's NodePool nodes."""
    carrier = EmbeddedKubelet(f"HyperShift {kind} in ConfigMap {key_of[1]}", inner.config, {}, (),
                              inner=inner, text=text, index=index, path=path,
                              unknown=inner.unknown, base_known=inner.base_known, unpositioned=inner.written or {})
    carrier.notices = [(rule, Place(path, text=text, text_index=index, inner=tuple(v.path)),
                        replace(v, path=())) for rule, v in inner.extra]
    carrier.notices += [(rule, Place(path, text=text, text_index=index, inner=tuple(place.path)), v)
                        for rule, place, v in inner.notices]

    def resolve(references: Any) -> PlatformKubelet:
        pools = references.get("nodepool-configmaps", key_of) if references is not None else []
        out = copy.copy(carrier)
        if len(pools) == 1:
            pool = pools[0]
            out.nodes = NodeSelection(dict(pool.labels), path, kind="labels",
                                      taints=tuple({"key": k, "value": val, "effect": e} for k, val, e in pool.taints))
            out = with_cluster_gates(out, *cluster_gates(references, ("hostedcluster", key_of[0], pool.cluster)))
        return out

    carrier.resolve = resolve
    return carrier


@dataclass
class EmbeddedKubelet(PlatformKubelet):
    """A carrier read from an object inside a string of this document (a HyperShift ConfigMap's
    `config`): findings point at the line inside the string, told in the inner carrier's terms."""

    inner: Any = None
    text: Any = None
    index: int = 0
    path: Path = ()

    def place(self, path: Path) -> Place:
        inner_place = self.inner.place(tuple(path))
        return Place(self.path, text=self.text, text_index=self.index, inner=tuple(inner_place.path),
                     shown=inner_place.shown)

    def document_path(self, path: Path) -> Path:
        return self.path

    def adjust(self, rule_id: str, v: Violation) -> Violation | None:
        if rule_id == "NG202":                # the gates are this carrier's (its HostedCluster's)
            return tell_cluster_gates(self, rule_id, v)
        return self.inner.adjust(rule_id, v)


__all__ = ["feature_gate", "hypershift_configmap", "is_hypershift_configmap", "feature_gate_extract",
           "hosted_cluster_extract", "node_pool_extract", "selected_gates", "GateSource", "NodePoolRef", "EmbeddedKubelet"]
