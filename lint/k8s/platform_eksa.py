"""EKS Anywhere `Cluster` (anywhere.eks.amazonaws.com/v1alpha1): the kubelet of the control plane
and of each worker node group, and the machine configs they name.

aws/eks-anywhere at aebd9a0623cd:

* `pkg/api/v1alpha1/cluster_types.go`: `controlPlaneConfiguration.kubeletConfiguration` and
  `workerNodeGroupConfigurations[*].kubeletConfiguration` (an unstructured KubeletConfiguration),
  each group's `machineGroupRef` {kind, name} (a `VSphereMachineConfig`, `TinkerbellMachineConfig`,
  `SnowMachineConfig`, `NutanixMachineConfig`, `CloudStackMachineConfig`), `labels`, `taints`.
  `cluster.go` `validateKubeletConfiguration` decodes it strictly as a v1beta1 KubeletConfiguration
  and refuses `providerID`; the CLI reads every object of the file strictly (`ParseClusterConfig`:
  `yaml.UnmarshalStrict`).
* The machine config's `spec.osFamily` (`bottlerocket`, `ubuntu`, `redhat`; a VSphereMachineConfig
  defaults to bottlerocket, a SnowMachineConfig to ubuntu) decides how the settings reach the
  kubelet (`pkg/providers/vsphere/template.go`, `config/template-cp.yaml`):
  - **Ubuntu, RHEL**: the `kubeletConfiguration` becomes the kubeadm patch
    `/etc/kubernetes/patches/kubeletconfiguration0+strategic.yaml` over kubeadm's defaults
    (`numaguard.lint.k8s.platform_kubeadm`).
  - **Bottlerocket**: the `kubeletConfiguration` is converted strictly into the Cluster API
    bootstrap's `BottlerocketKubernetesSettings` (`pkg/providers/common/common.go`
    `ConvertToBottlerocketKubernetesSettings`: `yaml.UnmarshalStrict`, so a KubeletConfiguration
    field that type lacks, `featureGates`, `reservedSystemCPUs`, `reservedMemory`..., stops the
    CLI); without it the machine config's `hostOSConfiguration.bottlerocketConfiguration.kubernetes`
    is used. The Cluster API Bottlerocket bootstrap then writes them as Bottlerocket settings,
    which Bottlerocket's template renders (`numaguard.lint.k8s.bottlerocket`).
  - `hostosconfig.go` `validateBotterocketConfig`: "BottlerocketConfiguration can only be used
    with osFamily: \"bottlerocket\"".

One carrier per node group; the machine config is the carrier's companion (the engine pairs it
from the same file by `machineGroupRef`), and findings on its settings point into it. A machine
config of no Cluster in its file is judged on its own Bottlerocket settings.
"""
from __future__ import annotations

from typing import Any, Iterator

from numaguard.lint.k8s.bottlerocket import CAPI_SETTINGS_FIELDS, bottlerocket_carrier, capi_settings
from numaguard.lint.k8s.kubelet_layers import COMPANION, REPLACE, STRATEGIC, Layer, Place
from numaguard.lint.k8s.platform_kubeadm import KUBEADM_DEFAULTS, KUBEADM_SOURCE, kubeadm_node
from numaguard.lint.k8s.platform_registry import EKSA_GROUP, EKSA_MACHINE_KINDS
from numaguard.lint.k8s.platforms import PlatformError, PlatformKubelet, plain_copy
from numaguard.lint.model import NodeSelection, Path, Severity, Violation, items

DEFAULT_OS = {"VSphereMachineConfig": "bottlerocket", "SnowMachineConfig": "ubuntu"}
SETTINGS: Path = ("spec", "hostOSConfiguration", "bottlerocketConfiguration", "kubernetes")
CONTROL_PLANE_TAINT = {"key": "node-role.kubernetes.io/control-plane", "value": "", "effect": "NoSchedule"}
_STRICT = "error unmarshaling JSON: while decoding JSON: json: unknown field"


def machine_refs(doc: dict) -> Iterator[tuple[str, str, str]]:
    """The companion keys of a Cluster: the machine configs its node groups name."""
    for _, group, _ in _groups(doc):
        ref = group.get("machineGroupRef")
        if isinstance(ref, dict) and ref.get("kind") in EKSA_MACHINE_KINDS and isinstance(ref.get("name"), str):
            yield EKSA_GROUP, str(ref["kind"]), ref["name"]


def _groups(doc: dict) -> Iterator[tuple[Path, dict, str]]:
    spec = doc.get("spec") if isinstance(doc.get("spec"), dict) else {}
    control_plane = spec.get("controlPlaneConfiguration")
    if isinstance(control_plane, dict):
        yield ("spec", "controlPlaneConfiguration"), control_plane, "control plane"
    for i, group in enumerate(items(spec.get("workerNodeGroupConfigurations"))):
        if isinstance(group, dict):
            yield ("spec", "workerNodeGroupConfigurations", i), group, f"worker node group {group.get('name') or i}"


def cluster(doc: dict) -> list[PlatformKubelet | PlatformError]:
    spec = doc.get("spec") if isinstance(doc.get("spec"), dict) else {}
    out: list[PlatformKubelet | PlatformError] = []
    for at, group, label in _groups(doc):
        kubelet = group.get("kubeletConfiguration")
        if kubelet is not None and not isinstance(kubelet, dict):
            out.append(PlatformError(at + ("kubeletConfiguration",), "kubeletConfiguration must be a mapping "
                                                                        "(a KubeletConfiguration)"))
            continue
        ref = group.get("machineGroupRef") if isinstance(group.get("machineGroupRef"), dict) else {}
        out.append(_node_group(at, group, f"EKS Anywhere {label}", ref, spec, control_plane=len(at) == 2))
    return out


def _node_group(at: Path, group: dict, platform: str, ref: dict, spec: dict, *, control_plane: bool) -> PlatformKubelet:
    kind = str(ref.get("kind") or "")

    def build(machine: Any) -> PlatformKubelet:
        family = _os_family(machine, kind) if isinstance(machine, dict) else None
        if family == "bottlerocket":
            carrier = _bottlerocket(at, group, platform, machine)
        else:
            carrier = _kubeadm(at, group, platform, known=family is not None)
            if isinstance(machine, dict) and _get(machine, SETTINGS[:3]) is not None:
                carrier.notices.append(("NG002", Place(SETTINGS[:3], COMPANION), Violation((), (
                    f"EKS Anywhere refuses the machine config: BottlerocketConfiguration can only be used with "
                    f"osFamily: \"bottlerocket\" (this one is {family})"),
                    remediation="Remove bottlerocketConfiguration, or use osFamily: bottlerocket.")))
        labels = {str(k): "" if v is None else str(v) for k, v in (group.get("labels") or {}).items()} \
            if isinstance(group.get("labels"), dict) else {}
        taints = group.get("taints")
        taints = (CONTROL_PLANE_TAINT,) if control_plane and taints is None else tuple(
            {"key": str(t.get("key", "")), "value": str(t.get("value", "") or ""), "effect": str(t.get("effect", ""))}
            for t in taints or () if isinstance(t, dict))
        if labels or taints:
            carrier.nodes = NodeSelection(labels, at + ("labels",) if labels else at, kind="labels", taints=taints)
        carrier.kubernetes_version = _version(group.get("kubernetesVersion") or spec.get("kubernetesVersion"))
        if isinstance(ref.get("name"), str) and kind in EKSA_MACHINE_KINDS:
            carrier.companion = (EKSA_GROUP, kind, ref["name"])
            carrier.rebase = build
        return carrier

    return build(None)


def _os_family(machine: dict, kind: str) -> str:
    spec = machine.get("spec") if isinstance(machine.get("spec"), dict) else {}
    return str(spec.get("osFamily") or DEFAULT_OS.get(kind, "ubuntu"))


def _kubeadm(at: Path, group: dict, platform: str, *, known: bool) -> PlatformKubelet:
    """Ubuntu and RHEL nodes: kubeletConfiguration as kubeadm's strategic patch over its defaults.
    known=False: the machine config is not in the file, so whether the node runs Bottlerocket
    (another path altogether) is not known: only what the group shows is judged."""
    field = at + ("kubeletConfiguration",)
    kubelet = group.get("kubeletConfiguration")
    layers = [Layer(KUBEADM_DEFAULTS, Place((), shown=False), REPLACE, label=KUBEADM_SOURCE)]
    notices = []
    if isinstance(kubelet, dict):
        body = {k: v for k, v in kubelet.items() if k not in ("apiVersion", "kind")}
        layers.append(Layer(body, Place(field), STRATEGIC, label="kubeletConfiguration"))
        if "providerID" in kubelet:
            notices.append(("NG002", Place(field + ("providerID",)), Violation((), (
                "EKS Anywhere refuses the cluster: can not override providerID or cloudProvider (set by EKS "
                "Anywhere)"), remediation="Remove providerID: EKS Anywhere sets it.")))
    return kubeadm_node(platform, [], layers, base_known=known, fallback=Place(field if kubelet else at),
                        notices=notices)


def _bottlerocket(at: Path, group: dict, platform: str, machine: dict) -> PlatformKubelet:
    """Bottlerocket nodes: the Cluster's kubeletConfiguration (strictly a
    BottlerocketKubernetesSettings), else the machine config's settings."""
    kubelet = group.get("kubeletConfiguration")
    notices = []
    if isinstance(kubelet, dict):
        field = at + ("kubeletConfiguration",)
        written, document = kubelet, "self"
        for key in kubelet:
            if key not in CAPI_SETTINGS_FIELDS and key not in ("apiVersion", "kind"):
                notices.append(("NG002", Place(field + (key,)), Violation((), (
                    f"EKS Anywhere cannot use it on Bottlerocket nodes (ConvertToBottlerocketKubernetesSettings): "
                    f"unmarshaling KubeletConfiguration for {_STRICT} \"{key}\""),
                    remediation=f"Remove {key}: on Bottlerocket only the fields of BottlerocketKubernetesSettings "
                                f"reach the kubelet (EKS Anywhere's kubeletconfig.md lists them).")))
        if _get(machine, SETTINGS) is not None:
            notices.append(("NG002", Place(SETTINGS, COMPANION), Violation((), (
                "not used: the Cluster's kubeletConfiguration replaces the machine config's Bottlerocket "
                "kubernetes settings (pkg/providers/vsphere/template.go)"), severity=Severity.INFO,
                remediation="Keep the kubelet settings in one place: the Cluster's kubeletConfiguration.")))
    else:
        field = SETTINGS
        written, document = _get(machine, SETTINGS) or {}, COMPANION
        if not isinstance(written, dict):
            written = {}
        for key in written:
            if key not in CAPI_SETTINGS_FIELDS:
                notices.append(("NG002", Place(SETTINGS + (key,), COMPANION), Violation((), (
                    f"EKS Anywhere refuses the machine config: {_STRICT} \"{key}\""),
                    remediation="Use the fields of BottlerocketKubernetesSettings (the machine config's CRD).")))
    settings, origin, dropped = capi_settings({str(k): v for k, v in plain_copy(written).items()
                                               if k in CAPI_SETTINGS_FIELDS})

    def place_of(key: str) -> Place | None:
        name = origin.get(key)
        return Place(field + tuple(name.split(".", 1)), document) if name else None

    carrier = bottlerocket_carrier(platform, settings, place_of, field if written else at,
                                   dropped={"cpuManagerPolicyOptions": dropped["cpuManagerPolicyOptions"]}
                                   if "cpuManagerPolicyOptions" in dropped else {})
    if document == COMPANION:
        carrier.fallback_place = Place(field if written else (), COMPANION)
    carrier.notices.extend(notices)
    return carrier


def machine_config(doc: dict) -> list[PlatformKubelet]:
    """A machine config of no Cluster in its file: its Bottlerocket kubernetes settings alone."""
    if _os_family(doc, str(doc.get("kind"))) != "bottlerocket" or _get(doc, SETTINGS) is None:
        return []
    name = (doc.get("metadata") or {}).get("name") if isinstance(doc.get("metadata"), dict) else None
    written = _get(doc, SETTINGS)
    if not isinstance(written, dict):
        raise PlatformError(SETTINGS, "bottlerocketConfiguration.kubernetes must be a mapping")
    settings, origin, dropped = capi_settings({str(k): v for k, v in plain_copy(written).items()
                                               if k in CAPI_SETTINGS_FIELDS})
    extra = [("NG002", Violation(SETTINGS + (key,), f"EKS Anywhere refuses the machine config: {_STRICT} \"{key}\"",
                                 remediation="Use the fields of BottlerocketKubernetesSettings."))
             for key in written if key not in CAPI_SETTINGS_FIELDS]
    return [bottlerocket_carrier(f"EKS Anywhere {doc.get('kind')} {name}", settings,
                                 lambda key: Place(SETTINGS + tuple(origin[key].split(".", 1))) if key in origin
                                 else None, SETTINGS, dropped=dropped, extra=extra)]


def _get(data: Any, path: Path) -> Any:
    for key in path:
        data = data.get(key) if isinstance(data, dict) else None
    return data


def _version(value: Any) -> tuple[int, int] | None:
    parts = str(value).split(".") if value is not None else []
    return (int(parts[0]), int(parts[1])) if len(parts) >= 2 and parts[0].isdigit() and parts[1].isdigit() else None


__all__ = ["cluster", "machine_config", "machine_refs", "DEFAULT_OS"]
