"""Karpenter `EC2NodeClass` (karpenter.k8s.aws/v1): `spec.kubelet`, and NodeConfigs in
`spec.userData`.

aws/karpenter-provider-aws at 1d927085dd81:

* `pkg/apis/v1/ec2nodeclass.go` :113-123: `spec.kubelet` is an open map (PreserveUnknownFields)
  taking any upstream KubeletConfiguration field. Karpenter checks it against the upstream type
  (`kubeletconfiguration_validation.go` `validateAgainstUpstreamType`: an unknown field or a
  wrong type sets `ValidationSucceeded=False`, which blocks every launch from the class) and
  accepts a CEL expression instead of a quantity in `kubeReserved`/`systemReserved` and in
  `maxPods` (`kubeletconfiguration.go` `HasExpressions`), resolved per instance type: such a
  value is not known here.
* the AMI family (`spec.amiFamily`, else the `amiSelectorTerms` alias, `EC2NodeClass.AMIFamily`):
  AL2023 renders the whole map into a NodeConfig (`pkg/providers/amifamily/al2023.go`
  `SupportsArbitraryKubeletConfig`; `bootstrap/nodeadm.go`), placed after the NodeConfigs of
  `spec.userData` in the MIME archive, so nodeadm merges it last and it wins
  (`numaguard.lint.k8s.nodeadm`). The other families apply only the fields Karpenter maps
  (`ParsedKubeletConfig`: clusterDNS, maxPods, podsPerCore, systemReserved, kubeReserved, the
  eviction fields, image GC, cpuCFSQuota) and refuse the rest (`validation.go`
  `validateKubeletFieldsSupported`: "spec.kubelet has fields not applied by the %s AMI family
  that would be silently dropped: ..."); Bottlerocket has no podsPerCore. `Custom` ignores
  `spec.kubelet` altogether: its user data configures the kubelet.

Decision on `spec.userData`: its NodeConfigs are judged with the class (they configure the
same kubelet, and nodeadm reads them from the same MIME archive, which Python's `email` parses
as nodeadm's MIME reader does), pointing at `spec.userData` and naming the NodeConfig field; a
shell script (AL2's `bootstrap.sh --kubelet-extra-args`) is not parsed.
"""
from __future__ import annotations

from typing import Iterator

from numaguard.lint.k8s.carrier_support import FlaggedKubelet, notes_only
from numaguard.lint.k8s.kubelet_schema import UNKNOWN_FIELD_FIX_PREFIX
from numaguard.lint.k8s.nodeadm import NodeadmLayer, nodeadm_carrier, nodeconfigs_in_text
from numaguard.lint.k8s.platforms import PlatformError, merge_patch, plain_copy, written_config
from numaguard.lint.k8s.quantity import parse_quantity
from numaguard.lint.model import Path, Severity, Violation, items

KUBELET: Path = ("spec", "kubelet")
V1BETA1 = "karpenter.k8s.aws/v1beta1"
USER_DATA: Path = ("spec", "userData")
# kubeletconfiguration.go ParsedKubeletConfig: the fields Karpenter maps for every family.
MANAGED_FIELDS = ("clusterDNS", "maxPods", "podsPerCore", "systemReserved", "kubeReserved", "evictionHard",
                  "evictionSoft", "evictionSoftGracePeriod", "evictionMaxPodGracePeriod",
                  "imageGCHighThresholdPercent", "imageGCLowThresholdPercent", "cpuCFSQuota")
_ALIAS_FAMILIES = {"al2": "AL2", "al2023": "AL2023", "bottlerocket": "Bottlerocket",
                   "windows2019": "Windows2019", "windows2022": "Windows2022", "windows2025": "Windows2025"}


def ami_family(spec: dict) -> str | None:
    """EC2NodeClass.AMIFamily: spec.amiFamily, else the family of the first alias term."""
    if spec.get("amiFamily"):
        return str(spec["amiFamily"])
    for term in items(spec.get("amiSelectorTerms")):
        if isinstance(term, dict) and isinstance(term.get("alias"), str) and "@" in term["alias"]:
            return _ALIAS_FAMILIES.get(term["alias"].split("@")[0].lower())
    return None


def ec2_node_class(doc: dict) -> Iterator[FlaggedKubelet | PlatformError]:
    spec = doc.get("spec")
    if not isinstance(spec, dict):
        return
    if doc.get("apiVersion") == V1BETA1 and "kubelet" in spec:
        # v1beta1's EC2NodeClassSpec has no kubelet field (pkg/apis/v1beta1/ec2nodeclass.go at
        # 9c4c3c3b113c): the kubelet settings were the NodePool's (karpenter.sh/v1beta1
        # spec.template.spec.kubelet); the API server prunes the unknown field.
        yield PlatformError(KUBELET, f"{V1BETA1} has no spec.kubelet (it came with karpenter.k8s.aws/v1; in v1beta1 "
                                     f"the kubelet settings are the NodePool's spec.template.spec.kubelet): the API "
                                     f"server drops it and no node gets these settings", Severity.WARNING,
                            "Move the settings to the NodePool (karpenter.sh/v1beta1 spec.template.spec.kubelet), "
                            "or upgrade to karpenter.k8s.aws/v1.")
        spec = {k: v for k, v in spec.items() if k != "kubelet"}
        doc = {**doc, "spec": spec}
    try:
        kubelet = written_config(doc, KUBELET)
    except PlatformError as err:
        yield err
        return
    family = ami_family(spec)
    name = (doc.get("metadata") or {}).get("name") if isinstance(doc.get("metadata"), dict) else None
    platform = f"EC2NodeClass {name}" if name else "EC2NodeClass"
    # positions come from the document, so the user's settings can be a plain copy here
    written, expressions = _without_expressions(plain_copy(kubelet))
    user = written
    unknown = frozenset(expressions)
    if family == "Custom":
        if kubelet:
            yield notes_only(platform, KUBELET, [("NG002", Violation(
                KUBELET, "amiFamily Custom: Karpenter passes none of spec.kubelet to the node; the user "
                         "data alone configures the kubelet", severity=Severity.WARNING,
                remediation="Configure the kubelet in spec.userData, or use an AMI family Karpenter "
                            "renders spec.kubelet for (AL2023)."))])
        return
    if family == "AL2023":
        found = nodeconfigs_in_text(spec.get("userData"), USER_DATA, "spec.userData")
        if not kubelet and not found.layers and not found.extra:
            return
        layers = found.layers + [NodeadmLayer(user, (), KUBELET, "spec.kubelet")]
        yield nodeadm_carrier(platform, layers, written=written, written_path=KUBELET, user_field="spec.kubelet",
                              fallback=KUBELET if kubelet else ("spec",), extra=found.extra, unknown=unknown,
                              extra_adjusters=(_karpenter_adjust,))
        return
    if not kubelet:
        return
    # AL2, Bottlerocket, Windows: only the mapped fields reach the node, over the AMI's own base
    # (unknown here); another or no family: only what the class shows
    refused = sorted(set(user) - set(MANAGED_FIELDS) | ({"podsPerCore"} & set(user) if family == "Bottlerocket"
                                                        else set())) if family in _ALIAS_FAMILIES.values() else []
    carrier = FlaggedKubelet(platform, merge_patch({"apiVersion": "kubelet.config.k8s.io/v1beta1",
                                                    "kind": "KubeletConfiguration"}, user),
                             written, KUBELET, fallback=KUBELET, unknown=unknown,
                             shown=frozenset(user) - set(refused), adjusters=(_karpenter_adjust,))
    if refused:
        carrier.extra.append(("NG002", Violation(KUBELET, f"Karpenter launches no node from this class "
                                                          f"(ValidationSucceeded=False): \"spec.kubelet has fields "
                                                          f"not applied by the {family} AMI family that would be "
                                                          f"silently dropped: {', '.join(refused)}\"",
                                                 remediation="Use the AL2023 AMI family, which passes every "
                                                             "kubelet field through, or remove the fields.")))
    yield carrier


def _without_expressions(kubelet: dict) -> tuple[dict, list[str]]:
    """spec.kubelet without the values Karpenter reads as CEL expressions (a kubeReserved or
    systemReserved value that is no quantity; a string maxPods), and which fields they were."""
    out = dict(kubelet)
    expressions: list[str] = []
    for field in ("kubeReserved", "systemReserved"):
        reserved = out.get(field)
        if not isinstance(reserved, dict):
            continue
        kept = {}
        for key, value in reserved.items():
            if isinstance(value, str) and not _quantity(value):
                expressions.append(f"{field}.{key}")
            else:
                kept[key] = value
        out[field] = kept
    if isinstance(out.get("maxPods"), str):
        expressions.append("maxPods")
        del out["maxPods"]
    return out, expressions


def _quantity(value: str) -> bool:
    try:
        parse_quantity(value)
        return True
    except ValueError:
        return False


def _karpenter_adjust(carrier: FlaggedKubelet, rule_id: str, v: Violation) -> Violation | None:
    if rule_id == "NG002" and (v.remediation or "").startswith(UNKNOWN_FIELD_FIX_PREFIX) and \
            tuple(v.path[:1]) in [(k,) for k in carrier.written]:
        return Violation(v.path, f"{v.message}. Karpenter checks spec.kubelet against the upstream type "
                                 f"and refuses an unknown field (ValidationSucceeded=False, "
                                 f"InvalidKubeletConfiguration): no node is launched from this class",
                         v.container, v.severity, v.remediation)
    return v


__all__ = ["ec2_node_class", "ami_family", "MANAGED_FIELDS"]
