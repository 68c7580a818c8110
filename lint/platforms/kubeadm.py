"""kubeadm: the kubelet of a node set up by `kubeadm init` or `kubeadm join`.

kubeadm writes two things the kubelet starts with (kubernetes/kubernetes `cmd/kubeadm/app`):

* `/var/lib/kubelet/config.yaml`, passed with `--config`: the `KubeletConfiguration` document of
  the `kubeadm init --config` file, with kubeadm's defaults filled into the gaps
  (`componentconfigs/kubelet.go` `kubeletConfig.Default`: cgroupDriver systemd, staticPodPath
  /etc/kubernetes/manifests, clusterDNS from the service subnet, clusterDomain, webhook
  authentication and authorization, the CA file, healthz on 127.0.0.1:10248,
  rotateCertificates). `kubeadm init` uploads it to the `kubelet-config` ConfigMap; `kubeadm
  join` downloads it from there and ignores a KubeletConfiguration in its own file ("If the
  user provides a configuration type that is not expected for the action you are performing,
  kubeadm will ignore those types and print a warning", `apis/kubeadm/v1beta4/doc.go`). So a
  JoinConfiguration is judged over the KubeletConfiguration of its own file when there is one
  (the file then reads as the cluster's), and otherwise over an unknown base.
* `/var/lib/kubelet/kubeadm-flags.env`, `KUBELET_KUBEADM_ARGS`: `nodeRegistration.kubeletExtraArgs`
  as `--name=value` words (`util/arguments.go` `ArgumentsToCommand`, sorted by name, then by
  value, so of two values of one flag the kubelet keeps the one that sorts last). In
  `kubeadm.k8s.io/v1beta3` the field is a map of strings; in v1beta4 a list of `{name, value}`
  ("Duplicate extra arguments are allowed", `apis/kubeadm/v1beta4/types.go`). systemd splits
  the variable at whitespace (`ExecStart=... $KUBELET_KUBEADM_ARGS`), so a value with a space
  becomes a stray word the kubelet refuses ("unknown command"). Flags win over the file
  (`numaguard.lint.k8s.kubelet_flags`).

`kubeadm_node` builds the carrier from the extra arguments and the configuration layers; kind
and Cluster API, which both run kubeadm on their nodes, build theirs with it too.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, replace
from typing import Any, Iterable

from numaguard.lint.platforms.carrier_support import RULE_SUBJECT
from numaguard.lint.k8s.kubelet_flags import (CONFIG_DIR_FLAG, CONFIG_FLAG, FlagArg, field_of_flag, flag_note,
                                              normalise, parse_flags)
from numaguard.lint.k8s.kubelet_layers import (COMPANION, REPLACE, Layer, LayeredSettings, Place,
                                               judge_shown_only)
from numaguard.lint.platforms.registry import KUBELET_GROUP, KUBELET_KIND
from numaguard.lint.platforms.carrier import KUBELET_API_VERSION, PlatformError, PlatformKubelet
from numaguard.lint.load.later_stages import VALUE_STAGES, LaterStage, not_judged, value_stage
from numaguard.lint.model import Severity, Violation

KUBEADM_SOURCE = "kubeadm (cmd/kubeadm/app/componentconfigs/kubelet.go)"

# componentconfigs/kubelet.go kubeletConfig.Default, for the default service subnet and DNS domain.
KUBEADM_DEFAULTS = {
    "apiVersion": KUBELET_API_VERSION, "kind": KUBELET_KIND,
    "staticPodPath": "/etc/kubernetes/manifests",
    "clusterDNS": ["10.96.0.10"], "clusterDomain": "cluster.local",
    "authentication": {"x509": {"clientCAFile": "/etc/kubernetes/pki/ca.crt"},
                       "anonymous": {"enabled": False}, "webhook": {"enabled": True}},
    "authorization": {"mode": "Webhook"},
    "healthzBindAddress": "127.0.0.1", "healthzPort": 10248,
    "rotateCertificates": True, "cgroupDriver": "systemd",
}


def list_form(api_version: str) -> bool:
    """kubeletExtraArgs is a list of {name, value} from kubeadm.k8s.io/v1beta4 on."""
    match = re.fullmatch(r"v(\d+)(?:(alpha|beta)(\d+))?", api_version.rpartition("/")[2])
    if match is None:
        return True
    major, stage, minor = match.groups()
    if int(major) > 1 or stage is None:
        return True
    return stage == "beta" and int(minor) >= 4


@dataclass(frozen=True)
class ExtraArg:
    """One kubeletExtraArgs entry and where its value sits."""

    name: str
    value: str
    place: Place


def read_extra_args(value: Any, place: Place, as_list: bool | None) -> list[ExtraArg]:
    """The entries of a `kubeletExtraArgs` field at `place`: a map of strings (`as_list` False),
    a list of {name, value} (True), or either (None: kind's version-less patches). A shape
    kubeadm cannot decode raises PlatformError (kubeadm refuses the whole file)."""
    if value is None:
        return []
    field_name = ".".join(map(str, place.dotted()))
    if isinstance(value, dict) and as_list is not True:
        out = []
        for name, arg in value.items():
            if not isinstance(arg, str):
                raise _unreadable(place.within((name,)), f"{field_name}.{name} must be a string (kubeadm "
                                  f"decodes the map into map[string]string and refuses {_what(arg)}; quote it)")
            out.append(ExtraArg(str(name), arg, place.within((name,))))
        return out
    if isinstance(value, list) and as_list is not False:
        out = []
        for i, item in enumerate(value):
            if not isinstance(item, dict) or not isinstance(item.get("name"), str) or \
                    not isinstance(item.get("value", ""), str):
                raise _unreadable(place.within((i,)), f"{field_name}[{i}] must be {{name: <flag>, value: "
                                  f"<string>}}, not {_what(item)}")
            out.append(ExtraArg(item["name"], item.get("value", ""), place.within((i, "value"))))
        return out
    expected = "a list of {name, value} (kubeadm.k8s.io/v1beta4)" if as_list else \
        "a map of strings (kubeadm.k8s.io/v1beta3)" if as_list is False else "a map or a list"
    raise _unreadable(place, f"{field_name} must be {expected}, not {_what(value)}: kubeadm cannot "
                             f"read the file")


def _unreadable(place: Place, message: str) -> PlatformError:
    return PlatformError(place.dotted(), message)


def _what(value: Any) -> str:
    from numaguard.lint.model import value_kind
    return value_kind(value)


def runs_windows(registration: Any) -> bool | None:
    """Whether a node's `nodeRegistration` says it runs Windows: kubeadm talks to the container
    runtime at `criSocket`, a named pipe (npipe://) on Windows and a Unix socket elsewhere
    (kubeadm's defaults: "Unix: unix:///var/run/containerd/containerd.sock, Windows:
    npipe:////./pipe/containerd-containerd", kubernetes CHANGELOG-1.24, #107512). None when it
    does not say."""
    socket = registration.get("criSocket") if isinstance(registration, dict) else None
    if not isinstance(socket, str) or not socket.strip():
        return None
    socket = socket.strip()
    if socket.startswith("npipe:"):
        return True
    return False if socket.startswith(("unix:", "/")) else None


FLAG_FIX = ("Remove the argument or give it a value the kubelet reads (lint/README.md: \"Kubelet flags\"); "
            "the kubelet stops on the first flag it cannot parse. Settings that have a "
            "KubeletConfiguration field are better set there than as flags.")


def command_line(args: Iterable[ExtraArg]) -> list[FlagArg]:
    """The words the kubelet receives for these extra arguments: `--name=value`, in kubeadm's
    order (by name, then value), split at whitespace as systemd splits the variable."""
    words = []
    for arg in sorted(args, key=lambda a: (a.name, a.value)):
        for word in f"--{arg.name}={arg.value}".split():
            words.append(FlagArg(word, arg.place))
    return words


def kubeadm_node(platform: str, args: list[ExtraArg], layers: list[Layer], *, base_known: bool,
                 fallback: Place, notices: list | None = None, windows: bool | None = False,
                 stages: tuple[LaterStage, ...] = VALUE_STAGES) -> PlatformKubelet:
    """The carrier of one kubeadm node: `layers` (the configuration kubeadm writes, as it comes
    together) with the extra arguments over them. `windows`: whether the node runs Windows
    (`runs_windows`), which decides whether the Windows-only kubelet flags exist. `stages`: the
    programs that render the node's strings before kubeadm reads them; an argument holding
    one's expression is set aside (`rendered_args`) and the setting it makes is unknown."""
    notices = list(notices or [])
    args, rendered, unknown = rendered_args(args, stages)
    notices += rendered
    if {CONFIG_FLAG, CONFIG_DIR_FLAG} & unknown:
        base_known = False
    flags = parse_flags(command_line(args), windows)
    for problem in flags.problems:
        notices.append(("NG002", problem.origin, Violation(
            (), problem.message, severity=None if problem.fatal else Severity.WARNING, remediation=FLAG_FIX)))
    for name, what in ((CONFIG_FLAG, "reads its configuration from"), (CONFIG_DIR_FLAG, "merges the drop-ins of")):
        if name in flags.command_line:
            path, origin = flags.command_line[name]
            base_known = False
            notices.append(("NG002", origin, Violation((), (
                f"--{name}={path}: the kubelet {what} {path}, which numaguard does not see, instead of only "
                f"the configuration kubeadm writes (/var/lib/kubelet/config.yaml); only the flags are judged"),
                severity=Severity.WARNING, remediation=f"Set the kubelet's settings in the KubeletConfiguration "
                                                        f"kubeadm writes instead of passing --{name}.")))
    settings = LayeredSettings(layers, flags, fallback=Place(fallback.path, fallback.document, fallback.text,
                                                             fallback.text_index, fallback.inner, shown=False))
    config = settings.effective()
    for place, message in settings.problems:
        notices.append(("NG002", place, Violation((), message)))
    adjusters = (_tell_flags,) if base_known else (judge_shown_only, _tell_flags)
    if unknown:
        adjusters = (_unknown_settings(unknown),) + adjusters
    return PlatformKubelet(platform, config, {}, (), fallback=fallback.path, settings=settings,
                           notices=notices, base_known=base_known, adjusters=adjusters, later_stages=stages)


def rendered_args(args: list[ExtraArg], stages: tuple[LaterStage, ...]) -> tuple[list[ExtraArg], list, set[str]]:
    """(the arguments whose value is concrete, an NG003 notice for each one whose value holds an
    expression of one of `stages`, the top-level settings those set: featureGates for
    `--feature-gates=${GATES}`, or the flag's name for a command-line-only flag). No kubelet
    ever receives the expression (a literal `${NODE_FEATURE_GATES}`, cloud-init's
    `{{ ds.meta_data.instance_id }}`), so neither the argument nor what it sets is judged."""
    known, notices, unknown = [], [], set()
    for arg in args:
        found = value_stage(arg.value, stages)
        if found is None:
            known.append(arg)
            continue
        stage, expression = found
        notices.append(("NG003", arg.place, Violation((), not_judged(f"--{arg.name}", stage, expression),
                                                      severity=Severity.INFO, remediation=stage.hint,
                                                      rendered_by=stage.name)))
        setting = field_of_flag(arg.name)
        unknown.add(str(setting[0]) if setting else normalise(arg.name))
    return known, notices, unknown


def _unknown_settings(settings: set[str]):
    """An adjuster dropping the findings about settings a rendered argument makes: their value
    is not known here (a missing gate, a policy left at its default)."""
    def adjust(carrier: PlatformKubelet, rule_id: str, v: Violation) -> Violation | None:
        subject = str(v.path[0]) if v.path else RULE_SUBJECT.get(rule_id)
        return None if subject in settings else v
    return adjust


def _tell_flags(carrier: PlatformKubelet, rule_id: str, v: Violation) -> Violation:
    """A finding about a value the kubelet's command line set says which argument set it."""
    note = flag_note(carrier.settings.flags, tuple(v.path), v.message)
    return replace(v, message=f"{v.message} [{note}]") if note else v


# ------------------------------------------------------------------------ kubeadm's own file

def kubeadm_configuration(doc: dict) -> list[PlatformKubelet]:
    """An InitConfiguration or JoinConfiguration: the node's extra arguments over kubeadm's
    defaults; `rebase` puts the file's KubeletConfiguration document under them."""
    kind = doc.get("kind")
    registration = doc.get("nodeRegistration")
    if registration is not None and not isinstance(registration, dict):
        raise PlatformError(("nodeRegistration",), f"nodeRegistration must be a mapping, not {_what(registration)}")
    registration = registration or {}
    place = Place(("nodeRegistration", "kubeletExtraArgs"))
    args = read_extra_args(registration.get("kubeletExtraArgs"), place, list_form(str(doc.get("apiVersion"))))
    fallback = Place(("nodeRegistration",) if "nodeRegistration" in doc else ())
    platform = f"kubeadm {kind}"

    def build(companion: Any) -> PlatformKubelet:
        layers = [Layer(KUBEADM_DEFAULTS, Place((), shown=False), REPLACE, label=KUBEADM_SOURCE)]
        if isinstance(companion, dict):
            body = {k: v for k, v in companion.items() if k not in ("apiVersion", "kind")}
            layers.append(Layer(body, Place((), COMPANION), label="the file's KubeletConfiguration"))
        known = kind == "InitConfiguration" or isinstance(companion, dict)
        # A finding on no field in particular (a reservation that is missing) goes to the
        # KubeletConfiguration document when the file has one: that is where it is fixed.
        carrier = kubeadm_node(platform, args, layers, base_known=known,
                               fallback=Place((), COMPANION) if isinstance(companion, dict) else fallback,
                               windows=runs_windows(registration))
        if not known:
            carrier.notices.append(("NG002", fallback, Violation((), (
                "kubeadm join takes the kubelet configuration from the cluster's kubelet-config "
                "ConfigMap, which this file does not show: only the kubelet settings given here are "
                "judged (add the cluster's KubeletConfiguration document to this file to judge the "
                "whole configuration)"), severity=Severity.INFO,
                remediation="Keep the cluster's KubeletConfiguration document next to the JoinConfiguration "
                            "(as `kubeadm init --config` reads it) so the joined nodes' whole kubelet "
                            "configuration is judged.")))
        carrier.companion = (KUBELET_GROUP, KUBELET_KIND)
        carrier.rebase = build
        return carrier

    return [build(None)]


__all__ = ["kubeadm_configuration", "kubeadm_node", "read_extra_args", "rendered_args", "command_line", "ExtraArg", "runs_windows",
           "KUBEADM_DEFAULTS", "KUBELET_KIND", "list_form"]
