"""Talos Linux: the kubelet settings of a machine configuration.

Two places hold them (siderolabs/talos at ad8823176e75):

* the legacy v1alpha1 document (`version: v1alpha1`, `machine:`, `cluster:`; no apiVersion or
  kind), `machine.kubelet` (`pkg/machinery/config/types/v1alpha1/v1alpha1_types.go`
  `KubeletConfig`: `extraArgs` :473, `extraConfig` :481). A machine-config patch has the same
  shape without `version` (`machine: {kubelet: {extraConfig: ...}}`); it is recognised when
  its top-level keys are the document's and `machine.kubelet` holds only Talos' kubelet fields;
* Talos' own `KubeletConfig` document (`apiVersion: v1alpha1` with no group, `kind:
  KubeletConfig`; `pkg/machinery/config/types/k8s/kubelet.go`: `config`, `extraArgs`). A bare
  `v1alpha1` is no Kubernetes API version, so this is never taken for a Kubernetes kind.

What the kubelet starts with (`internal/app/machined/pkg/controllers/k8s/kubelet_spec.go`):

* `NewKubeletConfiguration`: the user's `extraConfig` decoded strictly (an unknown field stops
  Talos' kubelet controller: "error unmarshalling extra kubelet configuration"), then Talos'
  own fields over it (`cgroupRoot` "/", `systemCgroups` "/system", `kubeletCgroups`
  "/podruntime/kubelet", authentication, `protectKernelDefaults`...) and its defaults where the
  user left a field empty: `systemReserved` {cpu 50m, memory 384Mi on workers / 512Mi on
  control planes, pid 100, ephemeral-storage 256Mi} **only when the user's systemReserved is
  empty** (a user's map replaces all of it), `failSwapOn` false, `serializeImagePulls` false,
  `address`, `clusterDomain`, `clusterDNS`, logging, shutdown periods, TLS
  (`pkg/machinery/constants/constants.go` for the values).
* `kubelet.ProtectedConfigurationFields` (`pkg/machinery/kubelet/kubelet.go`): Talos refuses a
  machine configuration whose `extraConfig` sets one of them ("kubelet configuration field %q
  can't be overridden", `v1alpha1_validation.go`:927, `k8s/kubelet.go`:153).
* the command line: Talos' own arguments, then `extraArgs` (`argsbuilder.Args.Merge`; `config`,
  `cert-dir`, `kubeconfig`, `bootstrap-kubeconfig`, `container-runtime(-endpoint)` are denied:
  "extra arg %q is not allowed"), written `--key=value` sorted by key, a list value giving the
  flag once per item (`argsbuilder.Args.Args`, `meta.Args`); an empty string value gives no flag.
  The kubelet lays these flags over the file (`kubelet_flags`).
"""
from __future__ import annotations

import copy
from typing import Any, Iterator

from numaguard.lint.platforms.carrier_support import FlaggedKubelet, read_flags
from numaguard.lint.k8s.kubelet_flags import FlagArg
from numaguard.lint.k8s.kubelet_schema import UNKNOWN_FIELD_FIX_PREFIX
from numaguard.lint.platforms.registry import TALOS_API_VERSION
from numaguard.lint.platforms.carrier import KUBELET_API_VERSION, PlatformError, plain_copy, written_config
from numaguard.lint.model import Path, Severity, Violation

TALOS_SOURCE = "Talos (internal/app/machined/pkg/controllers/k8s/kubelet_spec.go)"

# pkg/machinery/kubelet/kubelet.go
PROTECTED_FIELDS = ("apiVersion", "authentication", "authorization", "cgroupRoot", "kind",
                    "kubeletCgroups", "port", "protectKernelDefaults", "resolvConf",
                    "rotateCertificates", "systemCgroups", "staticPodPath", "seccompDefault")
# kubelet_spec.go WithMergePolicies: MergeDenied
DENIED_ARGS = ("bootstrap-kubeconfig", "kubeconfig", "container-runtime", "container-runtime-endpoint",
               "config", "cert-dir")

# v1alpha1_types.go KubeletConfig and Config
_KUBELET_FIELDS = frozenset({"image", "clusterDNS", "extraArgs", "extraMounts", "extraConfig",
                             "credentialProviderConfig", "defaultRuntimeSeccompProfileEnabled",
                             "registerWithFQDN", "nodeIP", "skipNodeRegistration",
                             "disableManifestsDirectory"})
_CONFIG_FIELDS = frozenset({"version", "debug", "persist", "machine", "cluster"})
_CONTROL_PLANE_TYPES = ("init", "controlplane")

# Fields Talos always sets itself (NewKubeletConfiguration), and the defaults it fills in.
_TALOS_FIELDS = {
    "apiVersion": KUBELET_API_VERSION, "kind": "KubeletConfiguration",
    "staticPodPath": "/etc/kubernetes/manifests", "port": 10250,
    "authentication": {"x509": {"clientCAFile": "/etc/kubernetes/pki/ca.crt"},
                       "webhook": {"enabled": True}, "anonymous": {"enabled": False}},
    "authorization": {"mode": "Webhook"},
    "cgroupRoot": "/", "systemCgroups": "/system", "kubeletCgroups": "/podruntime/kubelet",
    "rotateCertificates": True, "protectKernelDefaults": True,
}
_TALOS_DEFAULTS = {"address": "0.0.0.0", "oomScoreAdj": -450, "serializeImagePulls": False,
                   "failSwapOn": False, "tlsMinVersion": "VersionTLS13"}
SYSTEM_RESERVED = {"cpu": "50m", "pid": "100", "ephemeral-storage": "256Mi"}
SYSTEM_RESERVED_MEMORY = {"worker": "384Mi", "controlplane": "512Mi"}


def is_machine_config(doc: dict) -> bool:
    """A legacy v1alpha1 machine configuration or a patch of one (module doc); never a
    document with apiVersion or kind."""
    if "apiVersion" in doc or "kind" in doc or not doc or not set(map(str, doc)) <= _CONFIG_FIELDS:
        return False
    machine = doc.get("machine")
    if not isinstance(machine, dict):
        return False
    if doc.get("version") == TALOS_API_VERSION:
        return True
    kubelet = machine.get("kubelet")
    return "version" not in doc and isinstance(kubelet, dict) and bool(kubelet) and \
        set(map(str, kubelet)) <= _KUBELET_FIELDS


def machine_config(doc: dict) -> Iterator[FlaggedKubelet | PlatformError]:
    """The kubelet of a legacy machine configuration (or patch): one carrier when the document
    says anything about the kubelet or is a whole configuration."""
    machine = doc["machine"]
    kubelet = machine.get("kubelet")
    if kubelet is not None and not isinstance(kubelet, dict):
        yield PlatformError(("machine", "kubelet"), f"machine.kubelet must be a mapping, not {_kind(kubelet)}")
        return
    if kubelet is None and doc.get("version") != TALOS_API_VERSION:
        return
    machine_type = str(machine.get("type")) if machine.get("type") else None
    labels = machine.get("nodeLabels") if isinstance(machine.get("nodeLabels"), dict) else {}
    taints = machine.get("nodeTaints") if isinstance(machine.get("nodeTaints"), dict) else {}
    yield from _carrier("Talos machine config", doc, ("machine", "kubelet"), "extraConfig", machine_type,
                        labels={str(k): "" if v is None else str(v) for k, v in labels.items()},
                        taints=tuple(_taint(k, v) for k, v in taints.items()))


def kubelet_config_document(doc: dict) -> Iterator[FlaggedKubelet | PlatformError]:
    """Talos' own `KubeletConfig` document (it does not say the machine's type)."""
    yield from _carrier("Talos KubeletConfig", doc, (), "config", None)


def _carrier(platform: str, doc: dict, at: Path, config_key: str, machine_type: str | None, *,
             labels: dict | None = None, taints: tuple = ()) -> Iterator[FlaggedKubelet | PlatformError]:
    block = doc if not at else doc["machine"].get("kubelet") or {}
    try:
        written = written_config(doc, at + (config_key,))
    except PlatformError as err:
        yield err
        return
    extra: list[tuple[str, Violation]] = []
    for name in PROTECTED_FIELDS:
        if name in written:
            extra.append(("NG002", Violation(at + (config_key, name), f"Talos refuses the machine "
                                             f"configuration: kubelet configuration field \"{name}\" "
                                             f"can't be overridden",
                                             remediation=f"Remove {name}: Talos sets it itself "
                                                         f"(kubelet.ProtectedConfigurationFields).")))
    user = {k: v for k, v in plain_copy(written).items() if k not in PROTECTED_FIELDS}
    args, arg_problems = _arguments(block.get("extraArgs"), at + ("extraArgs",))
    extra += arg_problems
    flags, flag_problems = read_flags(args)
    extra += flag_problems
    config, platform_set, unknown = talos_configuration(user, machine_type)
    config = flags.apply(config)
    fallback = at + (config_key,) if written else at if block else ()
    kept_written = {k: v for k, v in written.items() if k not in PROTECTED_FIELDS}
    carrier = FlaggedKubelet(platform, config, kept_written, at + (config_key,), fallback=fallback,
                             platform_set=platform_set, unknown=unknown, adjusters=(_talos_adjust,),
                             flags=flags, flags_field=".".join(at + ("extraArgs",)),
                             node_labels=labels or {}, node_labels_path=("machine", "nodeLabels") if labels else (),
                             node_taints=taints)
    carrier.extra.extend(extra)
    yield carrier


def talos_configuration(user: dict, machine_type: str | None) -> tuple[dict, dict[str, str], frozenset[str]]:
    """(the KubeletConfiguration Talos writes from the user's extraConfig, what Talos set and
    why, the fields whose value depends on what the document does not say)."""
    config = copy.deepcopy(user)
    config.update(copy.deepcopy(_TALOS_FIELDS))
    platform_set: dict[str, str] = {}
    for name, value in _TALOS_DEFAULTS.items():
        if config.get(name) in (None, ""):
            config[name] = value
    unknown: set[str] = set()
    if not config.get("systemReserved"):
        reserved = dict(SYSTEM_RESERVED)
        role = "controlplane" if machine_type in _CONTROL_PLANE_TYPES else "worker" if machine_type else None
        if role is None:
            unknown.add("systemReserved.memory")
            reserved["memory"] = SYSTEM_RESERVED_MEMORY["worker"]
        else:
            reserved["memory"] = SYSTEM_RESERVED_MEMORY[role]
        config["systemReserved"] = reserved
        shown = ", ".join(f"{k}: {v}" for k, v in reserved.items())
        platform_set["systemReserved"] = f"systemReserved {{{shown}}} is set by {TALOS_SOURCE}"
    return config, platform_set, frozenset(unknown)


def _arguments(value: Any, path: Path) -> tuple[list[FlagArg], list[tuple[str, Violation]]]:
    """The kubelet words of `extraArgs` in Talos' order, and what Talos refuses about them."""
    if value is None:
        return [], []
    if not isinstance(value, dict):
        return [], [("NG002", Violation(path, f"{'.'.join(path)} must be a mapping of flag names "
                                              f"to strings or lists of strings, not {_kind(value)}"))]
    words: list[FlagArg] = []
    problems: list[tuple[str, Violation]] = []
    for name in sorted(value, key=str):
        item, where = value[name], path + (name,)
        if str(name) in DENIED_ARGS:
            problems.append(("NG002", Violation(where, f"Talos refuses the machine configuration: "
                                                       f"extra arg \"{name}\" is not allowed",
                                                remediation="Remove the argument: Talos passes it itself.")))
            continue
        if isinstance(item, list) and all(_scalar(v) for v in item):
            words += [FlagArg(f"--{name}={_text(v)}", where + (i,)) for i, v in enumerate(item)]
        elif _scalar(item):
            if _text(item) != "":
                words.append(FlagArg(f"--{name}={_text(item)}", where))
        else:
            problems.append(("NG002", Violation(where, "Talos refuses the machine configuration: arg "
                                                       "value must be a string or list of strings")))
    return words, problems


def _scalar(value: Any) -> bool:
    return isinstance(value, (str, int, float, bool))


def _text(value: Any) -> str:
    """A YAML scalar as go-yaml v3 decodes it into a Go string."""
    return str(value).lower() if isinstance(value, bool) else str(value)


def _taint(key: Any, value: Any) -> dict[str, str]:
    # labels.ParseTaint: "value:effect", or just "effect"
    text = "" if value is None else str(value)
    taint_value, found, effect = text.partition(":")
    return {"key": str(key), "value": taint_value if found else "", "effect": effect if found else text}


def _kind(value: Any) -> str:
    from numaguard.lint.model import value_kind
    return value_kind(value)


def _talos_adjust(carrier: FlaggedKubelet, rule_id: str, v: Violation) -> Violation | None:
    if rule_id == "NG002" and (v.remediation or "").startswith(UNKNOWN_FIELD_FIX_PREFIX):
        # extraConfig is decoded strictly: the kubelet never sees the file (module doc)
        return replace_message(v, f"{v.message}. Talos decodes extraConfig strictly, so its kubelet "
                                  f"controller stops with \"error unmarshalling extra kubelet "
                                  f"configuration\" and the kubelet does not get this configuration")
    if rule_id == "NG221" and "systemReserved" in carrier.platform_set:
        return None           # Talos' own systemReserved.cpu, not something the user wrote
    if rule_id == "NG208" and "systemReserved.memory" in carrier.unknown and \
            "determined by Node Allocatable" in v.message:
        return Violation(v.path, f"{v.message} (counting Talos' systemReserved.memory 384Mi of a "
                                 f"worker; a control plane reserves 512Mi, and this document does not "
                                 f"say which the machine is)", v.container, Severity.WARNING,
                         "Set systemReserved (memory included) in the kubelet configuration, so "
                         "that reservedMemory can be made to add up on every machine.")
    return v


def replace_message(v: Violation, message: str) -> Violation:
    return Violation(v.path, message, v.container, v.severity, v.remediation)


__all__ = ["is_machine_config", "machine_config", "kubelet_config_document", "talos_configuration",
           "PROTECTED_FIELDS", "DENIED_ARGS", "TALOS_API_VERSION"]
