"""Every platform object numaguard reads kubelet settings from, and the reader of each.

`numaguard.lint.objects.classify` asks `platform_reader(apiVersion, kind)`; a reader yields one
`PlatformKubelet` per kubelet configuration the object holds (or a PlatformError for one of the
wrong shape). Two carriers have no apiVersion or kind at all, the Talos v1alpha1 machine
configuration and the GKE node system configuration: `kindless_reader` recognises them by
shape, conservatively (each reader's own predicate), so that an ordinary YAML file without a
kind is never read as one; they are reported under a descriptive kind (`KINDLESS_LABELS`).
`COMPANIONS` names, for the carriers that take another document of the same file
as their base, the kind of that document (kubeadm: the KubeletConfiguration beside an
InitConfiguration), so that the engine can pair them.
"""
from __future__ import annotations

from typing import Callable

from numaguard.lint.k8s import platform_capi as capi
from numaguard.lint.k8s import platform_eksctl, platform_gke, platform_karpenter, platform_openshift, platform_talos
from numaguard.lint.k8s import platform_kind as kind
from numaguard.lint.k8s import platform_kubeadm as kubeadm
from numaguard.lint.k8s.platforms import PLATFORM_KINDS as _BASE_KINDS
from numaguard.lint.k8s.platforms import READERS as _BASE_READERS
from numaguard.lint.k8s.platforms import Reader

# (apiVersion, kind) -> reader name. An apiVersion ending in "/" is a group (any version of
# it); one without is matched exactly: Talos' bare "v1alpha1" is no Kubernetes group/version.
PLATFORM_KINDS: dict[tuple[str, str], str] = {
    **_BASE_KINDS,
    (platform_talos.TALOS_API_VERSION, "KubeletConfig"): "talos-kubelet",
    (platform_eksctl.EKSCTL_GROUP, "ClusterConfig"): "eksctl",
    (platform_karpenter.KARPENTER_GROUP, "EC2NodeClass"): "karpenter",
    (platform_openshift.MACHINECONFIG_GROUP, "MachineConfig"): "machineconfig",
    **{(kubeadm.KUBEADM_GROUP, node_kind): "kubeadm" for node_kind in kubeadm.NODE_KINDS},
    (kind.KIND_GROUP, "Cluster"): "kind",
    **{key: "capi" for key in capi.SPEC_PATHS},
}

READERS: dict[str, Reader] = {
    **_BASE_READERS,
    "kubeadm": kubeadm.kubeadm_configuration,
    "kind": kind.kind_cluster,
    "capi": capi.capi_kubeadm,
    "talos-kubelet": platform_talos.kubelet_config_document,
    "eksctl": platform_eksctl.cluster_config,
    "karpenter": platform_karpenter.ec2_node_class,
    "machineconfig": platform_openshift.machine_config,
}

KINDLESS_LABELS = {"talos": "Talos machine config", "gke": "GKE node system config"}
_KINDLESS: tuple[tuple[str, Callable[[dict], bool], Reader], ...] = (
    ("talos", platform_talos.is_machine_config, platform_talos.machine_config),
    ("gke", platform_gke.is_system_config, platform_gke.system_config),
)

COMPANIONS: dict[tuple[str, str], tuple[str, str]] = {
    (kubeadm.KUBEADM_GROUP, node_kind): (kubeadm.KUBELET_GROUP, kubeadm.KUBELET_KIND)
    for node_kind in kubeadm.NODE_KINDS
}


def _match(table: dict, api_version: str, kind: str):
    for (version, platform_kind), value in table.items():
        if kind == platform_kind and (api_version.startswith(version) if version.endswith("/")
                                      else api_version == version):
            return value
    return None


def platform_reader(api_version: str, kind: str) -> Reader | None:
    """The reader for a platform object carrying kubelet settings, None for anything else."""
    name = _match(PLATFORM_KINDS, api_version, kind)
    return READERS[name] if name is not None else None


def kindless_reader(doc: dict) -> tuple[str, Reader] | None:
    """(descriptive kind, reader) for a document without apiVersion and kind that is a Talos
    machine configuration or a GKE node system configuration, else None."""
    if "apiVersion" in doc or "kind" in doc:
        return None
    for name, recognises, reader in _KINDLESS:
        if recognises(doc):
            return KINDLESS_LABELS[name], reader
    return None


def companion_kind(api_version: str, kind: str) -> tuple[str, str] | None:
    """(apiVersion prefix, kind) of the document of the same file this kind's carriers take as
    their base, or None."""
    return _match(COMPANIONS, api_version, kind)


__all__ = ["platform_reader", "kindless_reader", "companion_kind", "KINDLESS_LABELS", "PLATFORM_KINDS", "READERS", "COMPANIONS"]
