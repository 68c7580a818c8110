"""kind: the kubelets of a `Cluster` (`kind.x-k8s.io/v1alpha4`, kubernetes-sigs/kind
`pkg/apis/config/v1alpha4/types.go`).

For every node kind generates a kubeadm configuration from its template
(`pkg/cluster/internal/kubeadm/config.go`; kubeadm.k8s.io/v1beta4 for Kubernetes 1.36 and
later, v1beta3 before): an InitConfiguration and a JoinConfiguration whose
`nodeRegistration.kubeletExtraArgs` hold node-ip, provider-id and node-labels, and a
KubeletConfiguration with cgroupDriver systemd, cgroupRoot /kubelet, failSwapOn false,
imageGCHighThresholdPercent 100, evictionHard `nodefs.available`, `nodefs.inodesFree` and
`imagefs.available` at "0%" (and no `memory.available`), and the Cluster's `featureGates`.
It then applies the Cluster's `kubeadmConfigPatches` and `kubeadmConfigPatchesJSON6902`, then
the node's own (`pkg/cluster/internal/create/actions/config/config.go` `getKubeadmConfig`;
`pkg/internal/patch`): a merge patch (RFC 7386) applies to each generated document whose
`kind` matches and whose `apiVersion` matches when the patch gives one; for a v1beta4 target,
`kubeletExtraArgs` merges by name (`kubeadm_merge.go`: a map-form patch without apiVersion is
converted, a null value deletes the argument).

The first control-plane node runs `kubeadm init`: its kubelet gets the InitConfiguration's
arguments and the KubeletConfiguration, which kubeadm then gives every other node through the
kubelet-config ConfigMap. Every other node runs `kubeadm join` with its JoinConfiguration's
arguments ("kubeadm only reads the kubelet configuration from the first node", kind's
configuration docs, kind#3849). So there is one carrier per node, its settings pointed at the
patch (and the line inside it) that set them; a finding shared by several nodes is reported
once. Patches that kind or kubeadm ignore get a warning where they are written.
"""
from __future__ import annotations

import copy
import re
from dataclasses import replace
from typing import Any

from numaguard.lint.k8s.kubelet_layers import (JSON6902, MERGE, REPLACE, Layer, Place, json_patch_touches,
                                               parse_embedded, unread_patch)
from numaguard.lint.k8s.platform_kubeadm import KUBELET_KIND, ExtraArg, kubeadm_node, read_extra_args
from numaguard.lint.k8s.platforms import KUBELET_API_VERSION, PlatformError, PlatformKubelet
from numaguard.lint.load.later_stages import VALUE_STAGES
from numaguard.lint.model import Path, Severity, Violation

KIND_SOURCE = "kind's generated kubeadm configuration (pkg/cluster/internal/kubeadm/config.go)"
DEFAULT_NODE_VERSION = (1, 37)          # pkg/apis/config/defaults/image.go: kindest/node:v1.37.0
_IMAGE_VERSION = re.compile(r":v(\d+)\.(\d+)")
_PATCH_FIX = ("Patch the documents the node really reads: KubeletConfiguration in the Cluster's "
              "kubeadmConfigPatches (or the first control-plane node's), kubelet flags in a "
              "JoinConfiguration patch of each joining node.")


def kubeadm_version(node_version: tuple[int, int]) -> str:
    """The kubeadm API version of kind's template for a node's Kubernetes version."""
    return "v1beta4" if node_version >= (1, 36) else "v1beta3" if node_version >= (1, 23) else "v1beta2"


def generated_kubelet_config() -> dict:
    """The KubeletConfiguration of kind's template, without the Cluster's featureGates (which
    the template copies in: a layer of their own, so findings point at the Cluster's field)."""
    return {"apiVersion": KUBELET_API_VERSION, "kind": KUBELET_KIND, "cgroupDriver": "systemd",
            "cgroupRoot": "/kubelet", "failSwapOn": False, "imageGCHighThresholdPercent": 100,
            "evictionHard": {"nodefs.available": "0%", "nodefs.inodesFree": "0%", "imagefs.available": "0%"}}


class _Patch:
    """One document of a kubeadmConfigPatches string (or one JSON 6902 patch) and its place."""

    def __init__(self, data: Any, place: Place, json6902: bool = False, target: tuple[str, str] = ("", "")):
        self.data, self.place, self.json6902 = data, place, json6902
        kind = data.get("kind") if isinstance(data, dict) and not json6902 else target[1]
        api = data.get("apiVersion") if isinstance(data, dict) and not json6902 else target[0]
        self.kind, self.api_version = str(kind or ""), str(api or "")

    def matches(self, kind: str, api_version: str) -> bool:
        """pkg/internal/patch/resource.go matches: kind equal; apiVersion equal when given."""
        return self.kind == kind and (not self.api_version or self.api_version == api_version)


def _patches(owner: dict, path: Path, problems: list) -> list[_Patch]:
    out: list[_Patch] = []
    strings = owner.get("kubeadmConfigPatches")
    for i, text in enumerate(strings if isinstance(strings, list) else []):
        place = Place(path + ("kubeadmConfigPatches", i))
        if not isinstance(text, str):
            problems.append(("NG002", place, Violation((), f"kubeadmConfigPatches[{i}] must be a string holding "
                                                           f"YAML, not a {type(text).__name__}: kind fails")))
            continue
        embedded, error = parse_embedded(text, "")
        if embedded is None:
            problems.append(unread_patch(place, f"kubeadmConfigPatches[{i}]", text, error, VALUE_STAGES,
                                         "kind fails to parse this patch"))
            continue
        out += [_Patch(d, Place(place.path, text=embedded, text_index=j)) for j, d in enumerate(embedded.documents)]
    patches = owner.get("kubeadmConfigPatchesJSON6902")
    for i, spec in enumerate(patches if isinstance(patches, list) else []):
        place = Place(path + ("kubeadmConfigPatchesJSON6902", i, "patch"))
        if not isinstance(spec, dict) or not isinstance(spec.get("patch"), str):
            continue
        embedded, error = parse_embedded(spec["patch"], "")
        if embedded is None or len(embedded.documents) != 1 or not isinstance(embedded.documents[0], list):
            problems.append(("NG002", place, Violation((), f"kind fails to read this JSON 6902 patch: "
                                                           f"{error or 'not a list of operations'}")))
            continue
        group, version = str(spec.get("group") or ""), str(spec.get("version") or "")
        api = f"{group}/{version}" if group else version
        out.append(_Patch(embedded.documents[0], Place(place.path, text=embedded), True, (api, str(spec.get("kind")))))
    return out


def kind_cluster(doc: dict) -> list[PlatformKubelet | PlatformError]:
    nodes = doc.get("nodes")
    if nodes is not None and not isinstance(nodes, list):
        raise PlatformError(("nodes",), "nodes must be a list")
    nodes = nodes or [{"role": "control-plane"}]
    problems: list = []
    cluster_patches = _patches(doc, (), problems)
    node_patches = [_patches(n, ("nodes", i), problems) if isinstance(n, dict) else [] for i, n in enumerate(nodes)]
    roles = [str(n.get("role") or "control-plane") if isinstance(n, dict) else "" for n in nodes]
    bootstrap = roles.index("control-plane") if "control-plane" in roles else 0
    versions = [_node_version(n) for n in nodes]

    # The KubeletConfiguration kubeadm init writes, and every node's kubelet reads.
    kubelet_layers = [Layer(generated_kubelet_config(), Place((), shown=False), REPLACE, label=KIND_SOURCE)]
    if isinstance(doc.get("featureGates"), dict) and doc["featureGates"]:
        kubelet_layers.append(Layer({"featureGates": doc["featureGates"]}, Place(()), MERGE,
                                    label="the Cluster's featureGates"))
    for patch in cluster_patches + node_patches[bootstrap]:
        if patch.matches(KUBELET_KIND, KUBELET_API_VERSION):
            kubelet_layers.append(_layer(patch))
    notices = list(problems)
    for i, patches in enumerate(node_patches):
        for patch in patches:
            notices += _ineffective(patch, patches, i, bootstrap, versions[i])
    for patch in cluster_patches:
        notices += _ineffective(patch, cluster_patches, None, bootstrap, versions[bootstrap])
    # Findings on no field in particular go to the KubeletConfiguration patch all nodes share
    # (the string itself), else to the node.
    shown_kubelet = [layer for layer in kubelet_layers[1:] if layer.mode != JSON6902 and layer.place.path]
    shared = Place(shown_kubelet[-1].place.path) if shown_kubelet else None

    carriers: list[PlatformKubelet | PlatformError] = []
    for i, node in enumerate(nodes):
        if not isinstance(node, dict):
            carriers.append(PlatformError(("nodes", i), f"nodes[{i}] must be a mapping"))
            continue
        kubeadm_kind = "InitConfiguration" if i == bootstrap else "JoinConfiguration"
        try:
            args = _extra_args(kubeadm_kind, cluster_patches + node_patches[i], versions[i])
        except PlatformError as err:
            carriers.append(err)
            continue
        carrier = kubeadm_node(f"kind Cluster nodes[{i}] ({roles[i]}, kubeadm {'init' if i == bootstrap else 'join'})",
                               args, [copy.copy(layer) for layer in kubelet_layers], base_known=True,
                               fallback=shared or Place(("nodes", i) if "nodes" in doc else ()),
                               notices=notices if not carriers else [])
        carrier.platform_set = _kind_notes(kubelet_layers)
        image = node.get("image")
        if _pinned_version(image) is not None:
            # The image is the kubelet that runs: judge the node for its version, and say so
            # where the verdict depends on it (gates, policy options, the version itself).
            carrier.kubernetes_version = versions[i]
            carrier.adjusters = carrier.adjusters + (_image_note(image, versions[i]),)
        carriers.append(carrier)
    return carriers


def _pinned_version(image: Any) -> tuple[int, int] | None:
    """The Kubernetes minor version a node image's tag names (kindest/node:v1.36.1), or None."""
    match = _IMAGE_VERSION.search(image) if isinstance(image, str) else None
    return (int(match.group(1)), int(match.group(2))) if match else None


def _node_version(node: Any) -> tuple[int, int]:
    pinned = _pinned_version(node.get("image") if isinstance(node, dict) else None)
    return pinned or DEFAULT_NODE_VERSION


_VERSIONED_RULES = frozenset({"NG201", "NG202", "NG210", "NG211", "NG213"})


def _image_note(image: str, version: tuple[int, int]):
    def adjust(carrier: PlatformKubelet, rule_id: str, v: Violation) -> Violation:
        if rule_id not in _VERSIONED_RULES:
            return v
        return replace(v, message=f"{v.message} [{image}: judged for Kubernetes {version[0]}.{version[1]}]")
    return adjust


def _layer(patch: _Patch) -> Layer:
    if patch.json6902:
        return Layer(patch.data, patch.place, JSON6902, label="the JSON 6902 patch",
                     touched=json_patch_touches(patch.data))
    body = {k: v for k, v in patch.data.items() if k not in ("apiVersion", "kind")}
    return Layer(body, patch.place, MERGE, label="the KubeletConfiguration patch")


def _extra_args(kubeadm_kind: str, patches: list[_Patch], version: tuple[int, int]) -> list[ExtraArg]:
    """The node's kubeletExtraArgs: the template's three, then every matching patch."""
    api_version = f"kubeadm.k8s.io/{kubeadm_version(version)}"
    v1beta4 = api_version.endswith("v1beta4")
    hidden = Place((), shown=False)
    args = [ExtraArg(name, "generated", hidden) for name in ("node-ip", "provider-id", "node-labels")]
    for patch in patches:
        if not patch.matches(kubeadm_kind, api_version):
            continue
        if patch.json6902:
            before = {"nodeRegistration": {"kubeletExtraArgs": [{"name": a.name, "value": a.value} for a in args]
                                           if v1beta4 else {a.name: a.value for a in args}}}
            import jsonpatch
            try:
                after = jsonpatch.apply_patch(before, patch.data)
            except Exception:          # kind fails on it; reported with the KubeletConfiguration's
                continue
            new = read_extra_args((after.get("nodeRegistration") or {}).get("kubeletExtraArgs"), patch.place, v1beta4)
            old = {(a.name, a.value) for a in args}
            args = [a if (a.name, a.value) in old else ExtraArg(a.name, a.value, patch.place) for a in new]
            continue
        registration = patch.data.get("nodeRegistration") if isinstance(patch.data, dict) else None
        if not isinstance(registration, dict) or "kubeletExtraArgs" not in registration:
            continue
        place = patch.place.within(("nodeRegistration", "kubeletExtraArgs"))
        value = registration["kubeletExtraArgs"]
        as_list = None if v1beta4 and not patch.api_version else v1beta4
        if isinstance(value, dict) and as_list is not False:      # version-less map on v1beta4
            entries = [(str(k), v, place.within((k,))) for k, v in value.items()]
        elif isinstance(value, list) and v1beta4:                 # a null value deletes (kubeadm_merge.go)
            entries = [(item["name"], item.get("value"), place.within((i, "value"))) for i, item in enumerate(value)
                       if isinstance(item, dict) and isinstance(item.get("name"), str)]
        else:
            entries = [(a.name, a.value, a.place) for a in read_extra_args(value, place, as_list)]
        args = _merge_args(args, entries)
    return args


def _merge_args(args: list[ExtraArg], entries: list[tuple[str, Any, Place]]) -> list[ExtraArg]:
    """kubeadm_merge.go mergeExtraArgs (and the map merge of v1beta3): an entry replaces the
    value of the argument of its name, a null value deletes it, a new name is appended."""
    out = list(args)
    for name, value, place in entries:
        found = next((i for i, a in enumerate(out) if a.name == name), None)
        if value is None:
            if found is not None:
                del out[found]
        elif found is not None:
            out[found] = ExtraArg(name, str(value), place)
        else:
            out.append(ExtraArg(name, str(value), place))
    return out


def _ineffective(patch: _Patch, siblings: list[_Patch], node: int | None, bootstrap: int,
                 version: tuple[int, int]) -> list:
    """Warnings for patches no kubelet reads: a node's KubeletConfiguration patch on a node that
    joins, an InitConfiguration patch on one, a JoinConfiguration patch on the node that runs
    init, and a patch whose apiVersion matches no generated document (unless a sibling patch of
    the same kind matches: one patch per kubeadm API version is how a config serves several
    kind releases)."""
    api = f"kubeadm.k8s.io/{kubeadm_version(version)}"
    generated = {"InitConfiguration": api, "JoinConfiguration": api, "ClusterConfiguration": api,
                 KUBELET_KIND: KUBELET_API_VERSION, "KubeProxyConfiguration": "kubeproxy.config.k8s.io/v1alpha1"}
    where = patch.place if patch.json6902 else patch.place.within(("apiVersion",) if patch.api_version else ())
    if patch.kind in generated and patch.api_version and patch.api_version != generated[patch.kind] and \
            not any(other.matches(patch.kind, generated[patch.kind]) for other in siblings):
        return [("NG002", where, Violation((), (
            f"kind skips this {patch.kind} patch: its apiVersion {patch.api_version} matches no document kind "
            f"generates for Kubernetes {version[0]}.{version[1]} ({generated[patch.kind]}); leave apiVersion "
            f"out to patch any version"), severity=Severity.WARNING, remediation=_PATCH_FIX))]
    if node is None:
        return []
    role = "runs kubeadm init" if node == bootstrap else "joins with kubeadm join"
    dead = {KUBELET_KIND: node != bootstrap, "InitConfiguration": node != bootstrap,
            "JoinConfiguration": node == bootstrap}
    if dead.get(patch.kind):
        why = (" and takes its kubelet configuration from the first control-plane node (kind#3849)"
               if patch.kind == KUBELET_KIND else "")
        return [("NG002", Place(patch.place.path, text=patch.place.text, text_index=patch.place.text_index,
                                inner=("kind",) if not patch.json6902 else ()), Violation((), (
            f"this {patch.kind} patch has no effect on nodes[{node}]: that node {role}{why}"),
            severity=Severity.WARNING, remediation=_PATCH_FIX))]
    return []


def _kind_notes(layers: list[Layer]) -> dict[str, str]:
    """What kind's template sets that the patches do not change, for messages that name it."""
    patched = {key for layer in layers[1:] if isinstance(layer.data, dict) for key in layer.data}
    thresholds = ", ".join(f"{k} {v}" for k, v in layers[0].data["evictionHard"].items())
    return {"evictionHard": f"evictionHard ({thresholds}, no memory.available) is set by {KIND_SOURCE}"} \
        if "evictionHard" not in patched else {}


__all__ = ["kind_cluster", "generated_kubelet_config", "kubeadm_version"]
