"""The kubelet's command line: which flag sets which KubeletConfiguration field, how the
kubelet reads it, and how flags combine with the configuration file.

The table (`FLAGS`) is the kubelet's own flag set: kubernetes/kubernetes
`cmd/kubelet/app/options/options.go` (`KubeletFlags.AddFlags`: the command-line-only flags;
`AddKubeletConfigFlags`: one flag per KubeletConfiguration field, every one of them
deprecated in favour of the file but still honoured), `pkg/kubelet/config/flags.go`
(ContainerRuntimeOptions), component-base `logs/api/v1` (the logging flags) and
`options/globalflags.go`; cross-checked with the generated kubelet reference on kubernetes.io
(`docs/reference/command-line-tools-reference/kubelet.md`). The value syntaxes are in
`numaguard.lint.k8s.kubelet_flag_values`.

How the kubelet starts (`cmd/kubelet/app/server.go`, `NewKubeletCommand`):

1. it parses the command line once (`cleanFlagSet.Parse`); an unknown flag or a value the
   flag refuses stops it: `failed to parse kubelet flag: unknown flag: --x` /
   `invalid argument "v" for "--x" flag: ...`; a word that is not a flag stops it with
   `unknown command <word>`. Flag names are normalised (`cliflag.WordSepNormalizeFunc`:
   `_` reads as `-`);
2. it loads `--config` (defaults applied, `evictionHard` defaulted when absent) and merges the
   `--config-dir` drop-ins over it (`mergeKubeletConfigurations`, JSON merge patch);
3. `kubeletConfigFlagPrecedence` parses the command line again over the result, so **a flag
   wins over the file and over every drop-in**. A map flag (`--kube-reserved`,
   `--eviction-hard`, `--cpu-manager-policy-options`, ...) replaces the file's whole map (the
   Value clears it at the first `Set`), a list flag replaces the list; only the feature gates
   are merged: "Add back feature gates that were set in the original kc, but not in flags", so
   a gate from `--feature-gates` beats the same gate in the file and the file's other gates
   stay.

`parse_flags` reads a carrier's arguments into `ParsedFlags`; `ParsedFlags.apply` lays them
over a configuration with that precedence; `flag_name_for` gives the flag of a field.
"""
from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Any, Iterable

from numaguard.lint.k8s import kubelet_flag_values as v
from numaguard.lint.k8s.kubelet_flag_values import FlagValueError, Syntax
from numaguard.lint.model import Path

CONFIG_FLAG = "config"
CONFIG_DIR_FLAG = "config-dir"
OPTIONS_SOURCE = "cmd/kubelet/app/options/options.go"


@dataclass(frozen=True)
class FlagSpec:
    """One kubelet flag: its name, the KubeletConfiguration field it sets (None for the
    command-line-only flags), its value syntax, and the deprecation notice pflag prints for the
    flags announced for removal (the kubelet still starts)."""

    name: str
    field: Path | None
    syntax: Syntax
    deprecated: str | None = None


def _f(name: str, field_path: str | None, syntax: Syntax, deprecated: str | None = None) -> FlagSpec:
    return FlagSpec(name, tuple(field_path.split(".")) if field_path else None, syntax, deprecated)


_REMOVAL = "will be removed in a future version"
_GC = "Use --eviction-hard or --eviction-soft instead. Will be removed in a future version."

# AddKubeletConfigFlags: one flag per KubeletConfiguration field (v1beta1 JSON names).
_CONFIG_FLAGS = (
    _f("enable-server", "enableServer", v.BOOL),
    _f("fail-swap-on", "failSwapOn", v.BOOL),
    _f("fail-cgroupv1", "failCgroupV1", v.BOOL),
    _f("pod-manifest-path", "staticPodPath", v.STRING),
    _f("sync-frequency", "syncFrequency", v.DURATION),
    _f("file-check-frequency", "fileCheckFrequency", v.DURATION),
    _f("http-check-frequency", "httpCheckFrequency", v.DURATION),
    _f("manifest-url", "staticPodURL", v.STRING),
    _f("manifest-url-header", "staticPodURLHeader", v.HEADERS),
    _f("address", "address", v.IP),
    _f("port", "port", v.INT32),
    _f("read-only-port", "readOnlyPort", v.INT32),
    _f("container-runtime-endpoint", "containerRuntimeEndpoint", v.STRING),
    _f("image-service-endpoint", "imageServiceEndpoint", v.STRING),
    _f("anonymous-auth", "authentication.anonymous.enabled", v.BOOL),
    _f("authentication-token-webhook", "authentication.webhook.enabled", v.BOOL),
    _f("authentication-token-webhook-cache-ttl", "authentication.webhook.cacheTTL", v.DURATION),
    _f("client-ca-file", "authentication.x509.clientCAFile", v.STRING),
    _f("authorization-mode", "authorization.mode", v.STRING),
    _f("authorization-webhook-cache-authorized-ttl", "authorization.webhook.cacheAuthorizedTTL", v.DURATION),
    _f("authorization-webhook-cache-unauthorized-ttl", "authorization.webhook.cacheUnauthorizedTTL",
       v.DURATION),
    _f("tls-cert-file", "tlsCertFile", v.STRING),
    _f("tls-private-key-file", "tlsPrivateKeyFile", v.STRING),
    _f("rotate-server-certificates", "serverTLSBootstrap", v.BOOL),
    _f("tls-cipher-suites", "tlsCipherSuites", v.STRING_SLICE),
    _f("tls-min-version", "tlsMinVersion", v.STRING),
    _f("rotate-certificates", "rotateCertificates", v.BOOL),
    _f("registry-qps", "registryPullQPS", v.INT32),
    _f("registry-burst", "registryBurst", v.INT32),
    _f("event-qps", "eventRecordQPS", v.INT32),
    _f("event-burst", "eventBurst", v.INT32),
    _f("enable-debugging-handlers", "enableDebuggingHandlers", v.BOOL),
    _f("contention-profiling", "enableContentionProfiling", v.BOOL),
    _f("healthz-port", "healthzPort", v.INT32),
    _f("healthz-bind-address", "healthzBindAddress", v.IP),
    _f("oom-score-adj", "oomScoreAdj", v.INT32),
    _f("cluster-domain", "clusterDomain", v.STRING),
    _f("volume-plugin-dir", "volumePluginDir", v.STRING),
    _f("cluster-dns", "clusterDNS", v.STRING_SLICE),
    _f("streaming-connection-idle-timeout", "streamingConnectionIdleTimeout", v.DURATION),
    _f("node-status-update-frequency", "nodeStatusUpdateFrequency", v.DURATION),
    _f("minimum-image-ttl-duration", "imageMinimumGCAge", v.DURATION),
    _f("image-gc-high-threshold", "imageGCHighThresholdPercent", v.INT32),
    _f("image-gc-low-threshold", "imageGCLowThresholdPercent", v.INT32),
    _f("volume-stats-agg-period", "volumeStatsAggPeriod", v.DURATION),
    _f("feature-gates", "featureGates", v.GATES),
    _f("kubelet-cgroups", "kubeletCgroups", v.STRING),
    _f("system-cgroups", "systemCgroups", v.STRING),
    _f("provider-id", "providerID", v.STRING),
    _f("cgroups-per-qos", "cgroupsPerQOS", v.BOOL),
    _f("cgroup-driver", "cgroupDriver", v.STRING),
    _f("cgroup-root", "cgroupRoot", v.STRING),
    _f("cpu-manager-policy", "cpuManagerPolicy", v.STRING),
    _f("cpu-manager-policy-options", "cpuManagerPolicyOptions", v.MAP_ONE),
    _f("cpu-manager-reconcile-period", "cpuManagerReconcilePeriod", v.DURATION),
    _f("qos-reserved", "qosReserved", v.MAP),
    _f("topology-manager-policy", "topologyManagerPolicy", v.STRING),
    _f("topology-manager-scope", "topologyManagerScope", v.STRING),
    _f("topology-manager-policy-options", "topologyManagerPolicyOptions", v.MAP_ONE),
    _f("runtime-request-timeout", "runtimeRequestTimeout", v.DURATION),
    _f("hairpin-mode", "hairpinMode", v.STRING),
    _f("max-pods", "maxPods", v.INT32),
    _f("pod-cidr", "podCIDR", v.STRING),
    _f("pod-max-pids", "podPidsLimit", v.INT64),
    _f("resolv-conf", "resolvConf", v.STRING),
    _f("runonce", None, v.BOOL),         # internal-only field (RunOnce), not in v1beta1
    _f("cpu-cfs-quota", "cpuCFSQuota", v.BOOL),
    _f("cpu-cfs-quota-period", "cpuCFSQuotaPeriod", v.DURATION),
    _f("enable-controller-attach-detach", "enableControllerAttachDetach", v.BOOL),
    _f("make-iptables-util-chains", "makeIPTablesUtilChains", v.BOOL),
    _f("container-log-max-size", "containerLogMaxSize", v.STRING),
    _f("container-log-max-files", "containerLogMaxFiles", v.INT32),
    _f("allowed-unsafe-sysctls", "allowedUnsafeSysctls", v.STRING_SLICE),
    _f("node-status-max-images", "nodeStatusMaxImages", v.INT32),
    _f("kernel-memcg-notification", "kernelMemcgNotification", v.BOOL),
    _f("local-storage-capacity-isolation", "localStorageCapacityIsolation", v.BOOL),
    _f("max-open-files", "maxOpenFiles", v.INT64),
    _f("kube-api-content-type", "contentType", v.STRING),
    _f("kube-api-qps", "kubeAPIQPS", v.INT32),
    _f("kube-api-burst", "kubeAPIBurst", v.INT32),
    _f("serialize-image-pulls", "serializeImagePulls", v.BOOL),
    _f("eviction-hard", "evictionHard", v.LANGLE_MAP),
    _f("eviction-soft", "evictionSoft", v.LANGLE_MAP),
    _f("eviction-soft-grace-period", "evictionSoftGracePeriod", v.MAP),
    _f("eviction-pressure-transition-period", "evictionPressureTransitionPeriod", v.DURATION),
    _f("eviction-max-pod-grace-period", "evictionMaxPodGracePeriod", v.INT32),
    _f("eviction-minimum-reclaim", "evictionMinimumReclaim", v.MAP),
    _f("pods-per-core", "podsPerCore", v.INT32),
    _f("protect-kernel-defaults", "protectKernelDefaults", v.BOOL),
    _f("reserved-cpus", "reservedSystemCPUs", v.STRING),
    _f("system-reserved", "systemReserved", v.MAP),
    _f("kube-reserved", "kubeReserved", v.MAP),
    _f("enforce-node-allocatable", "enforceNodeAllocatable", v.STRING_SLICE),
    _f("system-reserved-cgroup", "systemReservedCgroup", v.STRING),
    _f("kube-reserved-cgroup", "kubeReservedCgroup", v.STRING),
    _f("memory-manager-policy", "memoryManagerPolicy", v.STRING),
    _f("reserved-memory", "reservedMemory", v.RESERVED_MEMORY),
    _f("register-node", "registerNode", v.BOOL),
    _f("register-with-taints", "registerWithTaints", v.TAINTS),
    # logsapi.AddFlags(&c.Logging, fs)
    _f("logging-format", "logging.format", v.STRING),
    _f("log-flush-frequency", "logging.flushFrequency", v.DURATION),
    _f("v", "logging.verbosity", v.UINT32),
    _f("vmodule", "logging.vmodule", v.VMODULE),
    _f("log-text-split-stream", "logging.options.text.splitStream", v.BOOL),
    _f("log-text-info-buffer-size", "logging.options.text.infoBufferSize", v.QUANTITY),
    _f("log-json-split-stream", "logging.options.json.splitStream", v.BOOL),
    _f("log-json-info-buffer-size", "logging.options.json.infoBufferSize", v.QUANTITY),
)

# KubeletFlags.AddFlags and ContainerRuntimeOptions: flags with no configuration field.
_COMMAND_LINE_FLAGS = (
    _f(CONFIG_FLAG, None, v.STRING),
    _f(CONFIG_DIR_FLAG, None, v.STRING),
    _f("kubeconfig", None, v.STRING),
    _f("bootstrap-kubeconfig", None, v.STRING),
    _f("hostname-override", None, v.STRING),
    _f("node-ip", None, v.STRING),
    _f("cert-dir", None, v.STRING),
    _f("cloud-provider", None, v.STRING),
    _f("root-dir", None, v.STRING),
    _f("seccomp-default", None, v.BOOL),
    _f("node-labels", None, v.LABELS),
    _f("lock-file", None, v.STRING),
    _f("exit-on-lock-contention", None, v.BOOL),
    _f("runtime-cgroups", None, v.STRING),
    _f("image-credential-provider-config", None, v.STRING),
    _f("image-credential-provider-bin-dir", None, v.STRING),
    _f("minimum-container-ttl-duration", None, v.DURATION, _GC),
    _f("maximum-dead-containers-per-container", None, v.INT32, _GC),
    _f("maximum-dead-containers", None, v.INT32, _GC),
    _f("experimental-mounter-path", None, v.STRING, "will be removed in 1.25 or later. in favor of using CSI."),
    _f("experimental-allocatable-ignore-eviction", None, v.BOOL,
       "will be removed in 1.25 or later. (numaguard's reservedMemory check NG208 still counts "
       "the hard eviction threshold)"),
)

FLAGS: dict[str, FlagSpec] = {spec.name: spec for spec in _CONFIG_FLAGS + _COMMAND_LINE_FLAGS}

# Flags that stop the kubelet before it runs: it prints and exits (cmd/kubelet/app/server.go
# short-circuits on help; verflag.PrintAndExitIfRequested).
EXITING_FLAGS = {"help": "prints its help and exits", "h": "prints its help and exits",
                 "version": "prints its version and exits"}

# Flags that were removed: the kubelet refuses them as unknown; the note says when.
REMOVED_FLAGS = {
    "pod-infra-container-image": "removed in 1.35, kubernetes#133779: the container runtime "
                                 "keeps the sandbox image",
    "container-runtime": "removed in 1.27; remote is the only runtime",
    "network-plugin": "removed in 1.24 with dockershim",
    "cni-bin-dir": "removed in 1.24 with dockershim",
    "cni-conf-dir": "removed in 1.24 with dockershim",
    "cni-cache-dir": "removed in 1.24 with dockershim",
    "network-plugin-mtu": "removed in 1.24 with dockershim",
    "docker-endpoint": "removed in 1.24 with dockershim",
    "image-pull-progress-deadline": "removed in 1.24 with dockershim",
    "dynamic-config-dir": "removed in 1.24 with dynamic kubelet configuration",
}

# Flags only Windows builds of the kubelet register (cmd/kubelet/app/options/osflags_windows.go
# addOSFlags; osflags_others.go registers none): known on a Windows node, refused elsewhere.
WINDOWS_FLAGS: dict[str, FlagSpec] = {spec.name: spec for spec in (
    _f("windows-service", None, v.BOOL),
    _f("windows-priorityclass", None, v.STRING),
)}
_WINDOWS_ONLY = "registered only in Windows builds of the kubelet"


def normalise(name: str) -> str:
    """The name pflag looks up: `cliflag.WordSepNormalizeFunc` reads `_` as `-`."""
    return name.replace("_", "-")


def field_of_flag(name: str) -> Path | None:
    """The KubeletConfiguration field the flag `name` (without dashes) sets; None for a
    command-line-only flag or an unknown one."""
    name = normalise(name)
    for spec in _CONFIG_FLAGS:
        if spec.name == name:
            return spec.field
    return None


def flag_name_for(field_path: Path) -> str | None:
    """`--cpu-manager-policy` for ("cpuManagerPolicy",) (also for deeper paths of a map field,
    e.g. ("featureGates", "X") -> `--feature-gates`); None when no flag sets the field."""
    for spec in _CONFIG_FLAGS:
        if spec.field and tuple(field_path[:len(spec.field)]) == spec.field:
            return f"--{spec.name}"
    return None


# ------------------------------------------------------------------------------- arguments

@dataclass(frozen=True)
class FlagArg:
    """One word of a kubelet command line and where the carrier keeps it (`origin`: opaque
    here; a document path such as ("nodeRegistration", "kubeletExtraArgs", 2, "value"), or a
    `kubelet_layers.Place` when the argument sits inside an embedded text)."""

    word: str
    origin: Any


@dataclass(frozen=True)
class FlagProblem:
    """A flag the kubelet refuses (`fatal`: it exits before reading any configuration) or
    warns about (a deprecation), in the kubelet's words, at the argument's origin (whatever
    the carrier gave as `FlagArg.origin`). `value_refused`: the flag is known but its value is
    not, so the setting it was meant to make is missing from `ParsedFlags.settings`."""

    origin: Any
    message: str
    fatal: bool = True
    value_refused: bool = False


@dataclass
class ParsedFlags:
    """What a command line sets: `settings` (a partial KubeletConfiguration, as the kubelet's
    re-parse leaves it), `origins` (configuration path -> argument origin; per gate and per
    map key for the map flags, so findings point at the argument that set the value), the
    command-line-only flags by name, and the problems."""

    settings: dict = field(default_factory=dict)
    origins: dict[Path, Any] = field(default_factory=dict)
    command_line: dict[str, tuple[Any, Any]] = field(default_factory=dict)
    problems: list[FlagProblem] = field(default_factory=list)
    words: dict[Path, str] = field(default_factory=dict)     # field path -> the "--flag=value" word

    @property
    def fatal(self) -> bool:
        return any(p.fatal for p in self.problems)

    @property
    def value_refused(self) -> bool:
        return any(p.value_refused for p in self.problems)

    def origin_of(self, path: Path) -> Any:
        """The origin of the argument that set `path` (or the nearest enclosing field)."""
        return self._nearest(self.origins, path)

    def word_of(self, path: Path) -> str | None:
        """The argument (`--feature-gates=A=true`) that set `path`, or None."""
        return self._nearest(self.words, path)

    @staticmethod
    def _nearest(table: dict, path: Path) -> Any:
        for depth in range(len(path), 0, -1):
            found = table.get(tuple(path[:depth]))
            if found is not None:
                return found
        return None

    def apply(self, base: dict) -> dict:
        """`base` (the configuration file with its drop-ins merged) with the flags laid over
        it as `kubeletConfigFlagPrecedence` does: every field a flag sets is replaced whole,
        except `featureGates`, merged gate by gate (the flag's value wins)."""
        config = copy.deepcopy(base)
        for spec in _CONFIG_FLAGS:
            if spec.field is None or not _has(self.settings, spec.field):
                continue
            value = copy.deepcopy(_get(self.settings, spec.field))
            if spec.name == "feature-gates":
                merged = dict(_get(config, spec.field) or {}) if isinstance(_get(config, spec.field), dict) else {}
                merged.update(value)
                value = merged
            elif spec.name == "eviction-hard":
                # The file's evictionHard was defaulted (and merged with the defaults under
                # mergeDefaultEvictionSettings) before the flags replaced it: the setting no
                # longer adds anything to the flag's thresholds (server.go loadConfigFile).
                config.pop("mergeDefaultEvictionSettings", None)
            _set(config, spec.field, value)
        return config


def parse_flags(args: Iterable[FlagArg], windows: bool | None = False) -> ParsedFlags:
    """Read a kubelet command line (the words in the order the kubelet receives them) the way
    pflag does: `--name=value`, `--name value`, a bare `--bool-flag`; `--` ends the flags.
    Every problem is reported (the kubelet stops at the first). `windows` says whether the node
    runs Windows (True), Linux (False) or may run either (None: a Windows-only flag is then only
    a warning)."""
    parsed = ParsedFlags()
    words = list(args)
    started: set[str] = set()
    positional_only = False
    i = 0
    while i < len(words):
        arg = words[i]
        i += 1
        text = arg.word
        if positional_only or not text.startswith("-") or text == "-":
            parsed.problems.append(FlagProblem(arg.origin, f"the kubelet refuses to start: unknown command {text}"))
            continue
        if text == "--":
            positional_only = True
            continue
        dashes = 2 if text.startswith("--") else 1
        name, has_value, value = text[dashes:].partition("=")
        if not name or name.startswith("-") or name.startswith("="):
            parsed.problems.append(FlagProblem(arg.origin, _refusal(f"bad flag syntax: {text}")))
            continue
        name = normalise(name)
        if name in EXITING_FLAGS:
            parsed.problems.append(FlagProblem(arg.origin, f"{text}: the kubelet {EXITING_FLAGS[name]} "
                                                           f"instead of running"))
            continue
        spec = FLAGS.get(name) if dashes == 2 or name == "v" else None
        if spec is None and dashes == 2 and name in WINDOWS_FLAGS and windows is not False:
            spec = WINDOWS_FLAGS[name]
            if windows is None:
                parsed.problems.append(FlagProblem(arg.origin, (
                    f"--{name} is {_WINDOWS_ONLY}: a Linux kubelet refuses to start with it (unknown flag), "
                    f"and nothing here says which system this node runs"), fatal=False))
        if spec is None:
            unknown = f"unknown flag: --{name}" if dashes == 2 else f"unknown shorthand flag: {name[0]!r} in {text}"
            note = f"; {REMOVED_FLAGS[name]}" if name in REMOVED_FLAGS else \
                f"; {_WINDOWS_ONLY}" if name in WINDOWS_FLAGS else ""
            parsed.problems.append(FlagProblem(arg.origin, _refusal(unknown) + note))
            continue
        if not has_value:
            if spec.syntax.bare_value is not None:
                value = spec.syntax.bare_value
            elif i < len(words):
                value, arg = words[i].word, FlagArg(f"{text} {words[i].word}", words[i].origin)
                i += 1
            else:
                parsed.problems.append(FlagProblem(arg.origin, _refusal(f"flag needs an argument: {text}")))
                continue
        _set_flag(parsed, spec, value, arg, first=name not in started)
        started.add(name)
    return parsed


def _set_flag(parsed: ParsedFlags, spec: FlagSpec, value: str, arg: FlagArg, *, first: bool) -> None:
    try:
        own = spec.syntax.parse(value)
    except FlagValueError as err:
        parsed.problems.append(FlagProblem(arg.origin, _refusal(
            f'invalid argument "{value}" for "--{spec.name}" flag: {err}'), value_refused=True))
        return
    if spec.deprecated:
        parsed.problems.append(FlagProblem(arg.origin, f"Flag --{spec.name} has been deprecated, "
                                                       f"{spec.deprecated}", fatal=False))
    if spec.field is None:
        parsed.command_line[spec.name] = (own, arg.origin)
        return
    merged = own
    if spec.syntax.accumulates and not first:
        earlier = _get(parsed.settings, spec.field)
        merged = {**earlier, **own} if isinstance(own, dict) else earlier + own
    _set(parsed.settings, spec.field, merged)
    parsed.words[spec.field] = arg.word
    parsed.origins[spec.field] = arg.origin
    if isinstance(own, dict):
        for key in own:                    # a gate, an option, a reservation: its own argument
            parsed.origins[spec.field + (key,)] = arg.origin
            parsed.words[spec.field + (key,)] = arg.word


def flag_note(flags: ParsedFlags, path: Path, message: str) -> str | None:
    """How a finding on `path` tells that flags set the value: the argument that set the field
    the finding points at, else the arguments of the fields the message states ("cpuManagerPolicy
    is static"): "set by --cpu-manager-policy=static"."""
    word = flags.word_of(tuple(path)) if path else None
    words = [word] if word else [w for field_path, w in flags.words.items() if len(field_path) == 1
                                 and (f"{field_path[0]} is " in message or f"{field_path[0]} (" in message)]
    return f"set by {', '.join(dict.fromkeys(words))}" if words else None


def _refusal(pflag_error: str) -> str:
    return f"the kubelet refuses to start: failed to parse kubelet flag: {pflag_error}"


def _get(data: Any, path: Path) -> Any:
    for key in path:
        data = data.get(key) if isinstance(data, dict) else None
    return data


def _has(data: Any, path: Path) -> bool:
    for key in path:
        if not isinstance(data, dict) or key not in data:
            return False
        data = data[key]
    return True


def _set(data: dict, path: Path, value: Any) -> None:
    for key in path[:-1]:
        if not isinstance(data.get(key), dict):
            data[key] = {}
        data = data[key]
    data[path[-1]] = value


__all__ = ["FlagSpec", "FlagArg", "FlagProblem", "ParsedFlags", "FLAGS", "REMOVED_FLAGS",
           "EXITING_FLAGS", "parse_flags", "field_of_flag", "flag_name_for", "flag_note", "normalise", "CONFIG_FLAG",
           "CONFIG_DIR_FLAG"]
