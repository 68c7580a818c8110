"""The EKS AL2023 node's kubelet as nodeadm builds it from several NodeConfigs: what eksctl node
groups and Karpenter EC2NodeClasses generate, and NodeConfigs users embed in user data.

awslabs/amazon-eks-ami `nodeadm`: the instance's user data is a MIME multi-part document whose
`application/node.eks.aws` parts are NodeConfig YAML (`internal/configprovider`); nodeadm merges
the NodeConfigs in order (`internal/api/merge.go` `MergeNodeConfigs`: `mergo.Merge(WithOverride)`,
`spec.kubelet.config` maps merged key by key through `util.Merge`, an empty value never
overriding; `spec.kubelet.flags` appended), then writes the AMI's base configuration and the
merged `spec.kubelet.config` as the drop-in `40-nodeadm.conf` (`platforms.eks_ami_configuration`)
and passes the flags on the kubelet's command line, where they win over the file
(`kubelet_flags`).

`NodeadmLayer` is one NodeConfig's kubelet part and where it is written; `nodeconfigs_in_text`
reads the NodeConfigs of a user-data text (MIME or a bare NodeConfig, as Karpenter's
`bootstrap/nodeadm.go` `parseUserData` and eksctl's `stringToNodeConfig` take it); `nodeadm_carrier`
lays the layers over the AMI base.
"""
from __future__ import annotations

import email
import email.policy
from dataclasses import dataclass, field, fields
from typing import Any

from numaguard.lint.k8s.carrier_support import (FlaggedKubelet, embedded_findings, mergo_empty, mergo_untyped,
                                                read_flags)
from numaguard.lint.k8s.kubelet_flags import FlagArg
from numaguard.lint.k8s.platforms import EKS_SOURCE, PlatformKubelet, eks_adjust, eks_ami_configuration, eks_node_config
from numaguard.lint.load.documents import load_text
from numaguard.lint.model import Path, Violation

NODECONFIG_MEDIA_TYPE = "application/node.eks.aws"
NODECONFIG_GROUP = "node.eks.aws/"


@dataclass(frozen=True)
class NodeadmLayer:
    """One NodeConfig's `spec.kubelet`: its config (plain), its flags, the document field that
    holds it, and how messages name it."""

    config: dict
    flags: tuple[str, ...] = ()
    origin: Path = ()
    label: str = ""


@dataclass
class TextNodeConfigs:
    """The NodeConfigs found in a text, and what is wrong with them (NG002 at the field)."""

    layers: list[NodeadmLayer] = field(default_factory=list)
    extra: list[tuple[str, Violation]] = field(default_factory=list)


def nodeconfigs_in_text(text: Any, where: Path, label: str) -> TextNodeConfigs:
    """The NodeConfigs a user-data text holds, in nodeadm's order: the `application/node.eks.aws`
    parts of a MIME document, or the text itself when it is a YAML mapping; a shell script holds
    none."""
    found = TextNodeConfigs()
    if not isinstance(text, str) or not text.strip():
        return found
    stripped = text.lstrip()
    if stripped.startswith(("MIME-Version:", "Content-Type:")):
        message = email.message_from_string(stripped, policy=email.policy.compat32)
        parts = [part for part in message.walk() if not part.is_multipart()]
        bodies = [(part.get_payload(decode=True) or b"").decode("utf-8", "replace") for part in parts
                  if part.get_content_type() == NODECONFIG_MEDIA_TYPE]
    else:
        bodies = [text]
    for number, body in enumerate(bodies, start=1):
        _read_nodeconfigs(body, where, f"{label} (NodeConfig {number})" if len(bodies) > 1 else label,
                          found, strict=stripped.startswith(("MIME-Version:", "Content-Type:")))
    return found


def _read_nodeconfigs(body: str, where: Path, label: str, found: TextNodeConfigs, *, strict: bool) -> None:
    documents, errors = load_text(body, label, whole_file=False)
    if errors:
        if strict:        # a NodeConfig part that is not YAML: nodeadm stops
            found.extra.append(("NG002", Violation(where, f"{label}: nodeadm cannot read the NodeConfig: "
                                                          f"{errors[0].message}")))
        return            # not a MIME NodeConfig: a shell script, which carries no NodeConfig
    for document in documents:
        data = document.data
        if not isinstance(data, dict) or (not strict and (data.get("kind") != "NodeConfig" or not str(
                data.get("apiVersion", "")).startswith(NODECONFIG_GROUP))):
            continue
        kubelet = (data.get("spec") or {}).get("kubelet") if isinstance(data.get("spec"), dict) else None
        if not isinstance(kubelet, dict):
            continue
        config = kubelet.get("config") or {}
        flags = kubelet.get("flags") or []
        if not isinstance(config, dict) or not isinstance(flags, list):
            found.extra.append(("NG002", Violation(where, f"{label}: spec.kubelet.config must be a "
                                                          f"mapping and spec.kubelet.flags a list")))
            continue
        config, problems, fatal = embedded_findings({str(k): v for k, v in config.items()}, where,
                                                    f"{label}: spec.kubelet.config")
        found.extra += problems
        if not fatal:
            found.layers.append(NodeadmLayer(config, tuple(str(f) for f in flags), where, label))


def nodeadm_carrier(platform: str, layers: list[NodeadmLayer], *, written: dict, written_path: Path,
                    user_field: str, fallback: Path, extra: list | None = None,
                    unknown: frozenset[str] = frozenset(), extra_adjusters: tuple = (), **node) -> FlaggedKubelet:
    """The kubelet of an AL2023 node whose NodeConfigs are `layers` (in nodeadm's order).
    `written` is the positioned user field among them (at `written_path`), `user_field` how
    messages name it."""
    merged: dict = {}
    origins: dict[str, Path] = {}
    places: dict[str, str] = {}
    for number, layer in enumerate(layers):
        # MergeNodeConfigs keeps the first NodeConfig as it is and merges the others into it
        merged = dict(layer.config) if number == 0 else mergo_untyped(merged, layer.config)
        for name, value in layer.config.items():
            if number == 0 or not mergo_empty(value):
                origins[name], places[name] = layer.origin, layer.label
    config, platform_set, ami_unknown = eks_ami_configuration(merged)
    args = [FlagArg(flag, layer.origin) for layer in layers for flag in layer.flags]
    flags, flag_problems = read_flags(args)
    config = flags.apply(config)
    overridden = frozenset(name for name in written if origins.get(name) not in (None, written_path))
    carrier = FlaggedKubelet(platform, config, written, written_path, origins=origins, fallback=fallback,
                             platform_set=platform_set, unknown=ami_unknown | unknown,
                             adjusters=(_in_terms_of(user_field), _name_layer) + tuple(extra_adjusters),
                             flags=flags, flags_field=", ".join(sorted({layer.label for layer in layers
                                                                        if layer.flags})),
                             places={k: v for k, v in places.items() if origins[k] != written_path},
                             overridden=overridden, **node)
    carrier.extra.extend((extra or []) + flag_problems)
    return carrier


def node_config_document(doc: dict) -> PlatformKubelet:
    """A NodeConfig document: its `spec.kubelet.config` over the AMI's base (nodeadm's drop-in,
    `platforms.eks_node_config`) and its `spec.kubelet.flags`, which nodeadm passes on the
    kubelet's command line where they win over the file (`--feature-gates` gate by gate), each
    flag's findings at its list item."""
    carrier = eks_node_config(doc)
    spec = doc.get("spec")
    kubelet = spec.get("kubelet") if isinstance(spec, dict) else None
    words = kubelet.get("flags") if isinstance(kubelet, dict) else None
    if not isinstance(words, list) or not words:
        return carrier
    parsed, problems = read_flags(FlagArg(str(word), ("spec", "kubelet", "flags", i)) for i, word in enumerate(words))
    flagged = FlaggedKubelet(**{f.name: getattr(carrier, f.name) for f in fields(PlatformKubelet)},
                             flags=parsed, flags_field="spec.kubelet.flags")
    flagged.config = parsed.apply(carrier.config)
    flagged.extra.extend(problems)
    return flagged


def _in_terms_of(user_field: str):
    """The EKS NodeConfig adjustments (platforms._eks_adjust), naming the user's own field."""
    def adjust(carrier: FlaggedKubelet, rule_id: str, v: Violation) -> Violation | None:
        v = eks_adjust(carrier, rule_id, v)
        if v is None:
            return None
        return Violation(v.path, v.message.replace("spec.kubelet.config", user_field), v.container,
                         v.severity, (v.remediation or "").replace("spec.kubelet.config", user_field) or None)
    return adjust


def _name_layer(carrier: FlaggedKubelet, rule_id: str, v: Violation) -> Violation | None:
    """A finding on a value a NodeConfig in a text set names that NodeConfig's field."""
    if v.path and v.path[0] in carrier.places:
        return Violation(v.path, f"{v.message} [in {carrier.places[v.path[0]]}: spec.kubelet.config."
                                 f"{'.'.join(map(str, v.path))}]", v.container, v.severity, v.remediation)
    return v


__all__ = ["NodeadmLayer", "nodeconfigs_in_text", "nodeadm_carrier", "node_config_document", "NODECONFIG_MEDIA_TYPE",
           "EKS_SOURCE"]
