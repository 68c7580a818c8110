"""Every platform object numaguard reads kubelet settings from, and the reader of each.

`numaguard.lint.objects.classify` asks `platform_reader(apiVersion, kind)`; a reader yields one
`PlatformKubelet` per kubelet configuration the object holds (or a PlatformError for one of the
wrong shape). Two carriers have no apiVersion or kind at all, the Talos v1alpha1 machine
configuration and the GKE node system configuration: `kindless_reader` recognises them by
shape, conservatively (each reader's own predicate), so that an ordinary YAML file without a
kind is never read as one; they are reported under a descriptive kind (`KINDLESS_LABELS`).
`companion_keys` names, for the carriers that take another document of the same file
as their base, that document: (group, kind) for kubeadm (the KubeletConfiguration beside an
InitConfiguration), (group, kind, name) for an EKS Anywhere Cluster (the machine config each
node group's `machineGroupRef` names), so that the engine can pair them.
"""
from __future__ import annotations

import re
from importlib import import_module
from typing import Callable, Iterable

# A reader: one platform object -> its PlatformKubelet carriers and PlatformErrors
# (numaguard.lint.k8s.platforms).
Reader = Callable[[dict], Iterable]

# The platform objects' identities live here, literally, and each reader is named by module
# and function: a run imports a reader's module (and the YAML, MIME, gzip and flag parsers
# it needs) only when an object of its kind appears, so that a run over pods imports none.
# An apiVersion ending in "/" is a group (any version of it); one without is matched exactly:
# Talos' bare "v1alpha1" is no Kubernetes group/version.
TALOS_API_VERSION = "v1alpha1"
KUBEADM_GROUP = "kubeadm.k8s.io/"
KUBEADM_NODE_KINDS = ("InitConfiguration", "JoinConfiguration")
KUBELET_GROUP, KUBELET_KIND = "kubelet.config.k8s.io/", "KubeletConfiguration"
CAPI_BOOTSTRAP_GROUP = "bootstrap.cluster.x-k8s.io/"
CAPI_CONTROLPLANE_GROUP = "controlplane.cluster.x-k8s.io/"
EKS_GROUP = "node.eks.aws/"
OPENSHIFT_MC_GROUP = "machineconfiguration.openshift.io/"
PERFORMANCE_GROUP = "performance.openshift.io/"
EKSA_GROUP = "anywhere.eks.amazonaws.com/"
EKSA_MACHINE_KINDS = ("VSphereMachineConfig", "TinkerbellMachineConfig", "SnowMachineConfig",
                      "NutanixMachineConfig", "CloudStackMachineConfig")

# (apiVersion, kind) -> reader name.
PLATFORM_KINDS: dict[tuple[str, str], str] = {
    (EKS_GROUP, "NodeConfig"): "eks",
    (OPENSHIFT_MC_GROUP, "KubeletConfig"): "openshift",
    (PERFORMANCE_GROUP, "PerformanceProfile"): "performance-profile",
    (TALOS_API_VERSION, "KubeletConfig"): "talos-kubelet",
    ("eksctl.io/", "ClusterConfig"): "eksctl",
    ("karpenter.k8s.aws/", "EC2NodeClass"): "karpenter",
    (OPENSHIFT_MC_GROUP, "MachineConfig"): "machineconfig",
    ("core.gardener.cloud/", "Shoot"): "gardener-shoot",
    ("seedmanagement.gardener.cloud/", "ManagedSeedSet"): "gardener-managedseedset",
    (EKSA_GROUP, "Cluster"): "eksa-cluster",
    ("config.openshift.io/", "FeatureGate"): "openshift-featuregate",
    ("hypershift.openshift.io/", "HostedCluster"): "openshift-featuregate",
    ("v1", "ConfigMap"): "hypershift-configmap",
    **{(EKSA_GROUP, machine_kind): "eksa-machine" for machine_kind in EKSA_MACHINE_KINDS},
    **{(KUBEADM_GROUP, node_kind): "kubeadm" for node_kind in KUBEADM_NODE_KINDS},
    ("kind.x-k8s.io/", "Cluster"): "kind",
    ("kind.sigs.k8s.io/", "Cluster"): "kind",         # kind's group before v1alpha4: refused
    **{(CAPI_BOOTSTRAP_GROUP, capi_kind): "capi" for capi_kind in ("KubeadmConfig", "KubeadmConfigTemplate")},
    **{(CAPI_CONTROLPLANE_GROUP, capi_kind): "capi"
       for capi_kind in ("KubeadmControlPlane", "KubeadmControlPlaneTemplate")},
}

# reader name -> "module:function" under numaguard.lint.k8s.
READERS: dict[str, str] = {
    "eks": "nodeadm:node_config_document",
    "openshift": "platforms:openshift_kubelet_config",
    "performance-profile": "platforms:performance_profile",
    "kubeadm": "platform_kubeadm:kubeadm_configuration",
    "kind": "platform_kind:kind_cluster",
    "capi": "platform_capi:capi_kubeadm",
    "talos-kubelet": "platform_talos:kubelet_config_document",
    "eksctl": "platform_eksctl:cluster_config",
    "karpenter": "platform_karpenter:ec2_node_class",
    "machineconfig": "platform_openshift:machine_config",
    "gardener-shoot": "platform_gardener:shoot",
    "gardener-managedseedset": "platform_gardener:managed_seed_set",
    "eksa-cluster": "platform_eksa:cluster",
    "eksa-machine": "platform_eksa:machine_config",
    "openshift-featuregate": "openshift_cluster:feature_gate",
    "hypershift-configmap": "openshift_cluster:hypershift_configmap",
}
# reader name -> every apiVersion its platform has had, each checked in the platform's own types
# (what shape each version has is the reader's business). An apiVersion of a reader's group that
# is not here is not read: the platform refuses it (`platform_refusal`). Readers not listed read
# every version of their group.
#   eks: awslabs/amazon-eks-ami nodeadm/api/ holds v1alpha1 only (939c4720d73a).
#   openshift, machineconfig: openshift/api machineconfiguration/v1 (KubeletConfig, MachineConfig;
#     v1alpha1 has neither).
#   performance-profile: openshift/cluster-node-tuning-operator pkg/apis/performanceprofile/
#     v1alpha1, v1, v2 (cpu.reserved and numa.topologyPolicy in all three, a1118e048025).
#   eksctl: pkg/apis/eksctl.io/v1alpha5 only.
#   karpenter: aws/karpenter-provider-aws pkg/apis/v1beta1 (EC2NodeClassSpec has no kubelet:
#     it was the NodePool's, 9c4c3c3b113c) and pkg/apis/v1 (spec.kubelet).
#   kind: pkg/internal/apis/config/encoding/load.go `Parse` reads kind.x-k8s.io/v1alpha4 and
#     nothing else: "unknown apiVersion: %s" (fed268827e21); v1alpha3 (kind.sigs.k8s.io) is gone.
#   capi: kubernetes-sigs/cluster-api v1.11.0 (4e9cdc109b60): internal/api/bootstrap/kubeadm/
#     v1alpha3 and v1alpha4, api/bootstrap/kubeadm/v1beta1 and v1beta2, and the same four of
#     controlplane/kubeadm.
_CAPI_VERSIONS = ("v1alpha3", "v1alpha4", "v1beta1", "v1beta2")
API_VERSIONS: dict[str, tuple[str, ...]] = {
    "eks": (EKS_GROUP + "v1alpha1",),
    "openshift": (OPENSHIFT_MC_GROUP + "v1",),
    "machineconfig": (OPENSHIFT_MC_GROUP + "v1",),
    "performance-profile": tuple(PERFORMANCE_GROUP + v for v in ("v1alpha1", "v1", "v2")),
    "eksctl": ("eksctl.io/v1alpha5",),
    "karpenter": ("karpenter.k8s.aws/v1beta1", "karpenter.k8s.aws/v1"),
    "kind": ("kind.x-k8s.io/v1alpha4",),
    "capi": tuple(group + v for group in (CAPI_BOOTSTRAP_GROUP, CAPI_CONTROLPLANE_GROUP) for v in _CAPI_VERSIONS),
}
# How each platform refuses an apiVersion it does not have, in its words.
_REFUSALS = {
    "kind": 'kind refuses the file: "unknown apiVersion: {api_version}" (kind reads only {known})',
    "eks": "nodeadm refuses it: no {kind} of version {api_version} is registered (it reads {known})",
}
_CRD_REFUSAL = ('the API server refuses it: no matches for kind "{kind}" in version "{api_version}" (the '
                'platform has had {known})')

# Kinds read only when the document passes a predicate (most ConfigMaps carry no kubelet): reader
# name -> "module:predicate"; any other such document is no platform object at all.
CONDITIONAL: dict[str, str] = {"hypershift-configmap": "openshift_cluster:is_hypershift_configmap"}
# The readers of one carrier per object (the others yield several).
ONE_CARRIER = frozenset({"eks", "openshift", "performance-profile"})

KINDLESS_LABELS = {"talos": "Talos machine config", "gke": "GKE node system config"}
# kindless carrier -> (the mapping key its predicate requires, "module:predicate",
# "module:reader"): a document without that key is not asked, and its module not imported.
_KINDLESS: dict[str, tuple[str, str, str]] = {
    "talos": ("machine", "platform_talos:is_machine_config", "platform_talos:machine_config"),
    "gke": ("kubeletConfig", "platform_gke:is_system_config", "platform_gke:system_config"),
}

COMPANIONS: dict[tuple[str, str], tuple[str, str]] = {
    (KUBEADM_GROUP, node_kind): (KUBELET_GROUP, KUBELET_KIND) for node_kind in KUBEADM_NODE_KINDS
}
# Kinds whose companions are named in the document itself: (apiVersion, kind) -> "module:function"
# giving the companion keys of one document.
_NAMED_COMPANIONS: dict[tuple[str, str], str] = {(EKSA_GROUP, "Cluster"): "platform_eksa:machine_refs"}


def _load(target: str) -> Callable:
    module, _, function = target.partition(":")
    return getattr(import_module(f"numaguard.lint.k8s.{module}"), function)


def _match(table: dict, api_version: str, kind: str):
    for (version, platform_kind), value in table.items():
        if kind == platform_kind and (api_version.startswith(version) if version.endswith("/")
                                      else api_version == version):
            return value
    return None


def platform_reader(api_version: str, kind: str, doc: dict | None = None) -> Reader | None:
    """The reader for a platform object carrying kubelet settings, None for anything else (a
    kind read only under a predicate, `CONDITIONAL`, is asked about `doc`); for an apiVersion
    its platform never had, one that yields the platform's refusal."""
    name = _match(PLATFORM_KINDS, api_version, kind)
    if name is None or (name in CONDITIONAL and not (doc is not None and _load(CONDITIONAL[name])(doc))):
        return None
    known = API_VERSIONS.get(name)
    if known is not None and api_version not in known:
        return lambda doc: [platform_refusal(name, api_version, kind, known)]
    read = _load(READERS[name])
    return (lambda doc: [read(doc)]) if name in ONE_CARRIER else read


def platform_refusal(name: str, api_version: str, kind: str, known: tuple[str, ...]):
    """The PlatformError (at apiVersion) for a version the platform does not have: an error,
    or a warning for one newer than every version numaguard knows (a release after the
    commits cited above may have added it: it is not read)."""
    from numaguard.lint.k8s.platforms import PlatformError
    from numaguard.lint.model import Severity

    same_group = [v for v in known if v.rpartition("/")[0] == api_version.rpartition("/")[0]] or list(known)
    newest = max(_version_order(v) or (0, 0, 0) for v in same_group)
    order = _version_order(api_version)
    listed = ", ".join(same_group)
    fix = f"Write one of the apiVersions {kind} has: {listed}."
    if order is not None and order > newest:
        return PlatformError(("apiVersion",), f"{api_version} is newer than the versions numaguard knows ({listed}): "
                             f"its kubelet settings are not read", Severity.WARNING, fix)
    template = _REFUSALS.get(name, _CRD_REFUSAL)
    return PlatformError(("apiVersion",), template.format(api_version=api_version, kind=kind, known=listed),
                         remediation=fix)


def _version_order(api_version: str) -> tuple[int, int, int] | None:
    """Kubernetes' version priority (v1alpha1 < v1beta1 < v1 < v2alpha1 < v2), None for a
    version string that is not one (`v1alpha`)."""
    match = re.fullmatch(r"v(\d+)(?:(alpha|beta)(\d+))?", api_version.rpartition("/")[2])
    if match is None:
        return None
    major, stage, minor = match.groups()
    return int(major), {"alpha": 0, "beta": 1, None: 2}[stage], int(minor or 0)


def kindless_reader(doc: dict) -> tuple[str, Reader] | None:
    """(descriptive kind, reader) for a document without apiVersion and kind that is a Talos
    machine configuration or a GKE node system configuration, else None."""
    if "apiVersion" in doc or "kind" in doc or not doc:
        return None
    for name, (key, recognises, reader) in _KINDLESS.items():
        if isinstance(doc.get(key), dict) and _load(recognises)(doc):
            return KINDLESS_LABELS[name], _load(reader)
    return None


def companion_kind(api_version: str, kind: str) -> tuple[str, str] | None:
    """(apiVersion prefix, kind) of the document of the same file this kind's carriers take as
    their base, or None."""
    return _match(COMPANIONS, api_version, kind)


def companion_keys(doc: dict) -> list[tuple[str, ...]]:
    """The documents of the same file this document's carriers take as their base: (apiVersion
    prefix, kind) or (apiVersion prefix, kind, metadata.name)."""
    api_version, kind = str(doc.get("apiVersion")), str(doc.get("kind"))
    pair = companion_kind(api_version, kind)
    if pair is not None:
        return [pair]
    named = _match(_NAMED_COMPANIONS, api_version, kind)
    return list(_load(named)(doc)) if named is not None else []


__all__ = ["platform_reader", "kindless_reader", "companion_kind", "companion_keys", "EKSA_GROUP", "EKSA_MACHINE_KINDS", "KINDLESS_LABELS", "PLATFORM_KINDS", "READERS",
           "COMPANIONS", "TALOS_API_VERSION", "KUBEADM_GROUP", "KUBEADM_NODE_KINDS", "KUBELET_GROUP", "KUBELET_KIND"]
