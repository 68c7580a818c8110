"""eksctl `ClusterConfig` (eksctl.io/v1alpha5): the kubelet of each node group.

eksctl-io/eksctl at 99984adb6164:

* `pkg/apis/eksctl.io/v1alpha5/types.go`: `nodeGroups[*].kubeletExtraConfig` (`NodeGroup`
  :1544, a free-form KubeletConfiguration); `ManagedNodeGroup` (:2109) has no such field, and
  eksctl reads the file strictly (`pkg/eks/api.go` `ParseConfig`: `yaml.UnmarshalStrict`), so a
  `kubeletExtraConfig` on a managed node group stops it: `error unmarshaling JSON: while
  decoding JSON: json: unknown field "kubeletExtraConfig"`.
* `validation.go`: `kubeletExtraConfig` is refused for Windows and Bottlerocket AMI families
  (:1140-1160, "kubeletExtraConfig is not supported for <family> nodegroups (path=...)") and
  may not set `kind`, `apiVersion`, `address`, `clusterDomain`, `authentication`,
  `authorization`, `serverTLSBootstrap` (:1728, "cannot override %q in kubelet config, as it's
  critical to eksctl functionality").
* `pkg/nodebootstrap/al2023.go` (the default AMI family, AmazonLinux2023): the node's user data
  holds NodeConfigs for nodeadm, in this order: the node group's `kubeletExtraConfig` (with
  `clusterDNS`; flags `--node-labels` from `labels`, `--register-with-taints` from `taints`),
  `maxPods` from `maxPodsPerNode`, and `overrideBootstrapCommand` when it holds a NodeConfig.
  nodeadm merges them over the EKS AMI's base (`numaguard.lint.k8s.nodeadm`).
* `userdata.go`/`bootstrap.ubuntu.sh`, `bootstrap.al2.sh`: Ubuntu and AmazonLinux2 nodes merge
  `kubeletExtraConfig` into the AMI's own `kubelet-config.json` (`jq '.[0] * .[1]'`); that file
  is the AMI's (Canonical's, or the retired AL2 template), which numaguard does not have, so only
  what the node group shows is judged. `pkg/nodebootstrap/assets/scripts/kubelet.yaml` ("TODO
  Deprecated, will be removed soon") is embedded as `assets.KubeletYaml` but read by nothing at
  this commit, so it is no node group's base.

One carrier per node group with kubelet settings numaguard can judge, named by the node group;
its `node_labels`/`node_taints` are the group's `labels`/`taints` (what deciding its pool
needs). Findings point at `nodeGroups[N].kubeletExtraConfig.<field>`.
"""
from __future__ import annotations

from typing import Any, Iterator

from numaguard.lint.k8s.carrier_support import FlaggedKubelet, notes_only
from numaguard.lint.k8s.nodeadm import NodeadmLayer, nodeadm_carrier, nodeconfigs_in_text
from numaguard.lint.k8s.platforms import PlatformError, merge_patch, plain_copy
from numaguard.lint.model import Path, Severity, Violation

DEFAULT_AMI_FAMILY = "AmazonLinux2023"
FORBIDDEN_KEYS = ("kind", "apiVersion", "address", "clusterDomain", "authentication", "authorization",
                  "serverTLSBootstrap")
_UNKNOWN_BASE_FAMILIES = ("AmazonLinux2", "Ubuntu2004", "UbuntuPro2004", "Ubuntu2204", "UbuntuPro2204",
                          "Ubuntu2404", "UbuntuPro2404", "Ubuntu2604", "UbuntuPro2604")


def _refused(family: str) -> bool:
    return family.startswith("Bottlerocket") or family.startswith("WindowsServer")


def cluster_config(doc: dict) -> Iterator[FlaggedKubelet | PlatformError]:
    for section, managed in (("nodeGroups", False), ("managedNodeGroups", True)):
        groups = doc.get(section)
        if groups is None:
            continue
        if not isinstance(groups, list):
            yield PlatformError((section,), f"{section} must be a list of node groups")
            continue
        for i, group in enumerate(groups):
            if isinstance(group, dict):
                yield from _node_group(group, (section, i), managed)


def _node_group(group: dict, at: Path, managed: bool) -> Iterator[FlaggedKubelet | PlatformError]:
    name = str(group.get("name") or f"{at[0]}[{at[1]}]")
    family = str(group.get("amiFamily") or DEFAULT_AMI_FAMILY)
    field = at + ("kubeletExtraConfig",)
    where = f"{at[0]}[{at[1]}].kubeletExtraConfig"
    extra = group.get("kubeletExtraConfig")
    platform = f"eksctl node group {name}"
    if managed:
        if extra is not None:
            yield notes_only(platform, field, [("NG002", Violation(
                field, "eksctl refuses the file: error unmarshaling JSON: while decoding JSON: json: unknown "
                       "field \"kubeletExtraConfig\"",
                remediation="Managed node groups have no kubeletExtraConfig: use an unmanaged node group "
                            "(nodeGroups), or, with a custom AL2023 AMI, a NodeConfig in "
                            "overrideBootstrapCommand."))])
        if family.startswith("Bottlerocket"):
            yield from _bottlerocket_group(group, at, platform, managed)
            return
        if family != DEFAULT_AMI_FAMILY or not isinstance(group.get("overrideBootstrapCommand"), str):
            return          # EKS builds these nodes' NodeConfig: nothing of it is in the file
    if extra is not None and not isinstance(extra, dict):
        yield PlatformError(field, f"{where} must be a mapping (a partial KubeletConfiguration)")
        return
    written = extra or {}
    if _refused(family):
        if extra is not None:
            yield notes_only(platform, field, [("NG002", Violation(
                field, f"eksctl refuses the node group: kubeletExtraConfig is not supported for {family} "
                       f"nodegroups (path={at[0]}[{at[1]}].kubeletExtraConfig)",
                remediation=f"{family} nodes are not configured through kubeletExtraConfig: remove it "
                            f"(Bottlerocket takes kubelet settings in bottlerocket.settings)."))])
        if family.startswith("Bottlerocket"):
            yield from _bottlerocket_group(group, at, platform, managed)
        return
    notes = [("NG002", Violation(field + (key,), f"eksctl refuses the node group: cannot override "
                                                 f"\"{key}\" in kubelet config, as it's critical to eksctl "
                                                 f"functionality", remediation=f"Remove {key}: eksctl sets it."))
             for key in FORBIDDEN_KEYS if key in written]
    user = {k: v for k, v in plain_copy(written).items() if k not in FORBIDDEN_KEYS}
    node = {"node_labels": _labels(group.get("labels")), "node_labels_path": at + ("labels",)
            if isinstance(group.get("labels"), dict) else (), "node_taints": _taints(group.get("taints"))}
    kept = {k: v for k, v in written.items() if k not in FORBIDDEN_KEYS}
    if family in _UNKNOWN_BASE_FAMILIES:
        # jq '.[0] * .[1]' over the AMI's own file: only what the node group shows
        carrier = FlaggedKubelet(platform, merge_patch({"apiVersion": "kubelet.config.k8s.io/v1beta1",
                                                                          "kind": "KubeletConfiguration"}, user),
                                 kept, field, fallback=field if written else at, shown=frozenset(user), **node)
        carrier.extra.extend(notes)
        yield carrier
        return
    layers = [NodeadmLayer(user, (), field, where)]
    max_pods = group.get("maxPodsPerNode")
    if isinstance(max_pods, int) and not isinstance(max_pods, bool) and max_pods > 0:
        layers.append(NodeadmLayer({"maxPods": max_pods}, (), at + ("maxPodsPerNode",),
                                   f"{at[0]}[{at[1]}].maxPodsPerNode"))
    found = nodeconfigs_in_text(group.get("overrideBootstrapCommand"), at + ("overrideBootstrapCommand",),
                                f"{at[0]}[{at[1]}].overrideBootstrapCommand")
    layers += found.layers
    yield nodeadm_carrier(platform, layers, written=kept, written_path=field,
                          user_field=where, fallback=field if written else at,
                          extra=notes + found.extra, **node)


# pkg/apis/eksctl.io/v1alpha5/validation.go checkBottlerocketSettings: these are the node group's
# own fields, which pkg/nodebootstrap/bottlerocket.go setDerivedBottlerocketSettings writes into
# settings.kubernetes itself (labels, taints, maxPodsPerNode).
_DERIVED_SETTINGS = {"node-labels": "labels", "node-taints": "taints", "max-pods": "maxPodsPerNode"}


def _bottlerocket_group(group: dict, at: Path, platform: str, managed: bool) -> Iterator[FlaggedKubelet | PlatformError]:
    """A Bottlerocket node group: `bottlerocket.settings.kubernetes` as the node's
    settings.kubernetes (with the group's labels, taints and maxPodsPerNode), rendered by
    Bottlerocket's kubelet-config template (`numaguard.lint.k8s.bottlerocket`)."""
    from numaguard.lint.k8s.bottlerocket import bottlerocket_carrier, camel_spelling
    from numaguard.lint.k8s.kubelet_layers import Place

    settings_at = at + ("bottlerocket", "settings", "kubernetes")
    bottlerocket = group.get("bottlerocket") if isinstance(group.get("bottlerocket"), dict) else {}
    block = (bottlerocket.get("settings") or {}).get("kubernetes") if isinstance(bottlerocket.get("settings"), dict) \
        else None
    if block is None:
        block = {}
    if not isinstance(block, dict):
        yield PlatformError(settings_at, f"{'.'.join(map(str, settings_at))} must be a mapping (eksctl: expected "
                                         f"settings.kubernetes to be of type map[string]interface {{}})")
        return
    extra: list[tuple[str, Violation]] = []
    where = f"{at[0]}[{at[1]}]"
    for key, own in _DERIVED_SETTINGS.items():
        if key in block and not managed:
            extra.append(("NG002", Violation(settings_at + (key,), (
                f"eksctl refuses the node group: invalid Bottlerocket setting: use {where}.{own} instead "
                f"(path={where}.bottlerocket.settings.kubernetes.{key})"), remediation=f"Move it to {own}.")))
    for key in block:
        spelled = camel_spelling(str(key))
        if spelled is not None:
            extra.append(("NG002", Violation(settings_at + (key,), (
                f"{key} is the kubelet's spelling: Bottlerocket's setting is {spelled}, and Bottlerocket has no "
                f"setting {key}"), severity=Severity.WARNING, remediation=f"Rename it to {spelled}.")))
    settings = {str(k): v for k, v in plain_copy(block).items()}
    max_pods = group.get("maxPodsPerNode")
    if isinstance(max_pods, int) and not isinstance(max_pods, bool) and max_pods > 0:
        settings["max-pods"] = max_pods

    def place_of(key: str) -> Place | None:
        if key == "max-pods" and "max-pods" not in block and "max-pods" in settings:
            return Place(at + ("maxPodsPerNode",))
        head, _, rest = key.partition(".")
        if head not in block:
            return None
        return Place(settings_at + (head,) + ((rest,) if rest and isinstance(block.get(head), dict) and
                                                rest in block[head] else ()))

    labels = _labels(group.get("labels"))
    yield bottlerocket_carrier(platform, settings, place_of, settings_at if block else at, node_labels=labels,
                               node_labels_path=at + ("labels",) if labels else (),
                               node_taints=_taints(group.get("taints")), extra=extra)


def _labels(value: Any) -> dict[str, str]:
    return {str(k): "" if v is None else str(v) for k, v in value.items()} if isinstance(value, dict) else {}


def _taints(value: Any) -> tuple[dict[str, str], ...]:
    """taintsWrapper (types.go): a map `key: value:effect` or a list of {key, value, effect}."""
    if isinstance(value, dict):
        out = []
        for key, text in value.items():
            parts = ("" if text is None else str(text)).split(":")    # taints.parseTaint
            taint_value, effect = ("", parts[0]) if len(parts) == 1 else tuple(parts) if len(parts) == 2 else ("", "")
            out.append({"key": str(key), "value": taint_value, "effect": effect})
        return tuple(out)
    if isinstance(value, list):
        return tuple({"key": str(t.get("key", "")), "value": str(t.get("value", "") or ""),
                      "effect": str(t.get("effect", "") or "")} for t in value if isinstance(t, dict))
    return ()


__all__ = ["cluster_config", "FORBIDDEN_KEYS"]
