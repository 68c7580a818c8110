"""Every platform object numaguard reads kubelet settings from, and the reader of each.

`numaguard.lint.objects.classify` asks `platform_reader(apiVersion, kind)`; a reader yields one
`PlatformKubelet` per kubelet configuration the object holds (or a PlatformError for one of the
wrong shape). `COMPANIONS` names, for the carriers that take another document of the same file
as their base, the kind of that document (kubeadm: the KubeletConfiguration beside an
InitConfiguration), so that the engine can pair them.
"""
from __future__ import annotations

from numaguard.lint.k8s import platform_capi as capi
from numaguard.lint.k8s import platform_kind as kind
from numaguard.lint.k8s import platform_kubeadm as kubeadm
from numaguard.lint.k8s.platforms import PLATFORM_KINDS as _BASE_KINDS
from numaguard.lint.k8s.platforms import READERS as _BASE_READERS
from numaguard.lint.k8s.platforms import Reader

PLATFORM_KINDS: dict[tuple[str, str], str] = {
    **_BASE_KINDS,
    **{(kubeadm.KUBEADM_GROUP, node_kind): "kubeadm" for node_kind in kubeadm.NODE_KINDS},
    (kind.KIND_GROUP, "Cluster"): "kind",
    **{key: "capi" for key in capi.SPEC_PATHS},
}

READERS: dict[str, Reader] = {
    **_BASE_READERS,
    "kubeadm": kubeadm.kubeadm_configuration,
    "kind": kind.kind_cluster,
    "capi": capi.capi_kubeadm,
}

COMPANIONS: dict[tuple[str, str], tuple[str, str]] = {
    (kubeadm.KUBEADM_GROUP, node_kind): (kubeadm.KUBELET_GROUP, kubeadm.KUBELET_KIND)
    for node_kind in kubeadm.NODE_KINDS
}


def _match(table: dict, api_version: str, kind: str):
    for (group, platform_kind), value in table.items():
        if kind == platform_kind and api_version.startswith(group):
            return value
    return None


def platform_reader(api_version: str, kind: str) -> Reader | None:
    """The reader for a platform object carrying kubelet settings, None for anything else."""
    name = _match(PLATFORM_KINDS, api_version, kind)
    return READERS[name] if name is not None else None


def companion_kind(api_version: str, kind: str) -> tuple[str, str] | None:
    """(apiVersion prefix, kind) of the document of the same file this kind's carriers take as
    their base, or None."""
    return _match(COMPANIONS, api_version, kind)


__all__ = ["platform_reader", "companion_kind", "PLATFORM_KINDS", "READERS", "COMPANIONS"]
