"""The readers of Talos, eksctl, Karpenter, GKE and OpenShift MachineConfig kubelet settings,
by the kind that carries them (`platforms.py` holds EKS NodeConfig, OpenShift KubeletConfig and
PerformanceProfile; `numaguard.lint.objects.classify` asks both tables).

Two carriers have no apiVersion or kind at all: the Talos v1alpha1 machine configuration and
the GKE node system configuration. `kindless_reader` recognises them by shape, conservatively
(each reader's own predicate), so that an ordinary YAML file without a kind is never read as
one; they are reported under a descriptive kind (`KINDLESS_LABELS`).
"""
from __future__ import annotations

from typing import Callable

from numaguard.lint.k8s import platform_eksctl, platform_gke, platform_karpenter, platform_openshift, platform_talos
from numaguard.lint.k8s.platforms import Reader

# (apiVersion, kind) -> reader. An apiVersion ending in "/" is a group (any version of it);
# one without is matched exactly: Talos' bare "v1alpha1" is no Kubernetes group/version.
CARRIER_KINDS: dict[tuple[str, str], Reader] = {
    (platform_talos.TALOS_API_VERSION, "KubeletConfig"): platform_talos.kubelet_config_document,
    (platform_eksctl.EKSCTL_GROUP, "ClusterConfig"): platform_eksctl.cluster_config,
    (platform_karpenter.KARPENTER_GROUP, "EC2NodeClass"): platform_karpenter.ec2_node_class,
    (platform_openshift.MACHINECONFIG_GROUP, "MachineConfig"): platform_openshift.machine_config,
}

KINDLESS_LABELS = {"talos": "Talos machine config", "gke": "GKE node system config"}
_KINDLESS: tuple[tuple[str, Callable[[dict], bool], Reader], ...] = (
    ("talos", platform_talos.is_machine_config, platform_talos.machine_config),
    ("gke", platform_gke.is_system_config, platform_gke.system_config),
)


def carrier_reader(api_version: str, kind: str) -> Reader | None:
    """The reader of a kind in `CARRIER_KINDS`, None for anything else."""
    for (version, carrier_kind), reader in CARRIER_KINDS.items():
        if kind == carrier_kind and (api_version.startswith(version) if version.endswith("/")
                                     else api_version == version):
            return reader
    return None


def kindless_reader(doc: dict) -> tuple[str, Reader] | None:
    """(descriptive kind, reader) for a document without apiVersion and kind that is a Talos
    machine configuration or a GKE node system configuration, else None."""
    if "apiVersion" in doc or "kind" in doc:
        return None
    for name, recognises, reader in _KINDLESS:
        if recognises(doc):
            return KINDLESS_LABELS[name], reader
    return None


__all__ = ["carrier_reader", "kindless_reader", "CARRIER_KINDS", "KINDLESS_LABELS"]
