"""The KubeletConfiguration as the kubelet reads it: gates, manager policies, options, reservations.

Plain dict in (`kubelet.config.k8s.io/v1beta1` KubeletConfiguration, parsed YAML), values out.
The NG2xx rules (`lint.rules.kubelet`) and the NUMA simulator both build on this module, so
every function answers one question the kubelet answers at startup, with the kubelet's default
when a field is absent. Sources (1.37 development, July 2026):

* gates: `kubernetes/kubernetes` `pkg/features/kube_features.go` @45b76a3 (versioned specs and
  the dependency map), errors from `kubernetes/component-base` `featuregate/feature_gate.go`;
* defaults: `kubernetes/kubelet` `config/v1beta1/types.go` and `pkg/kubelet/apis/config/v1beta1/defaults.go`;
* CPU Manager: `pkg/kubelet/cm/cpumanager/{cpu_manager.go,policy_options.go,policy_static.go}`;
* Topology Manager: `pkg/kubelet/cm/topologymanager/policy_options.go`;
* Memory Manager: `pkg/kubelet/cm/memorymanager/memory_manager.go` (`validateReservedMemory`)
  and `pkg/kubelet/apis/config/validation/validation_reserved_memory.go`;
* reserved CPUs: `cmd/kubelet/app/server.go` and `pkg/kubelet/apis/config/validation/validation.go`.
"""
from __future__ import annotations

import difflib
import json
import math
from dataclasses import dataclass
from decimal import Decimal
from functools import lru_cache
from importlib import resources
from typing import Any, Iterator

from lint.model import Path, Violation
from lint.numa.cpuset import CPUSetError, format_cpuset, parse_cpuset
from lint.quantity import format_bytes, parse_quantity

Version = tuple[int, int]

# ---------------------------------------------------------------------------------------------
# feature gates


@dataclass(frozen=True)
class GateSpec:
    """One gate at one Kubernetes minor version, as its VersionedSpecs entry says."""

    stage: str            # "alpha" | "beta" | "ga" | "deprecated"
    default: bool
    locked: bool = False  # LockToDefault: setting the other value stops the kubelet


# The gates that decide whether pod-level resource managers work, per minor version.
# kube_features.go @45b76a3 unless noted. Versions below 1.36 use the 1.36 column (NG213 says
# so), versions above 1.37 the 1.37 column.
GATE_TABLE: dict[Version, dict[str, GateSpec]] = {
    (1, 36): {
        "PodLevelResources": GateSpec("beta", True),                       # beta 1.34
        "PodLevelResourceManagers": GateSpec("alpha", False),              # alpha 1.36
        "InPlacePodVerticalScaling": GateSpec("ga", True, locked=True),    # GA locked 1.35
        "InPlacePodLevelResourcesVerticalScaling": GateSpec("beta", True),  # beta 1.36
        "NodeDeclaredFeatures": GateSpec("beta", True),                    # beta 1.36
        "CPUManagerPolicyOptions": GateSpec("ga", True, locked=True),      # GA locked 1.33
        "CPUManagerPolicyAlphaOptions": GateSpec("alpha", False),
        "CPUManagerPolicyBetaOptions": GateSpec("beta", True),
        "TopologyManagerPolicyOptions": GateSpec("ga", True, locked=True),  # GA locked 1.32
        "TopologyManagerPolicyAlphaOptions": GateSpec("alpha", False),
        "TopologyManagerPolicyBetaOptions": GateSpec("beta", True),
        "MemoryQoS": GateSpec("alpha", False),
        "InPlacePodVerticalScalingExclusiveCPUs": GateSpec("alpha", False),
        "InPlacePodVerticalScalingExclusiveMemory": GateSpec("alpha", False),
        "DisableCPUQuotaWithExclusiveCPUs": GateSpec("deprecated", True),  # locked only from 1.37
        "WindowsCPUAndMemoryAffinity": GateSpec("alpha", False),
    },
    (1, 37): {
        "PodLevelResources": GateSpec("beta", True),   # GA PR #140536 was still open
        # kube_features.go @45b76a3 still says Beta default true; PR #141209 (merged 2026-08-05,
        # milestone v1.37) turned the default off: "The feature gate `PodLevelResourceManagers`
        # is disabled by default." kubernetes.io 1.37: "beta (disabled by default)".
        "PodLevelResourceManagers": GateSpec("beta", False),
        "PodLevelResourcesFixDefaulting": GateSpec("beta", True),          # first spec 1.37
        "PodLevelResourcesFixKubeletQOSClass": GateSpec("beta", True),     # first spec 1.37
        "InPlacePodVerticalScaling": GateSpec("ga", True, locked=True),
        "InPlacePodLevelResourcesVerticalScaling": GateSpec("beta", True),
        "NodeDeclaredFeatures": GateSpec("ga", True, locked=True),         # GA locked 1.37
        "CPUManagerPolicyOptions": GateSpec("ga", True, locked=True),
        "CPUManagerPolicyAlphaOptions": GateSpec("alpha", False),
        "CPUManagerPolicyBetaOptions": GateSpec("beta", True),
        "TopologyManagerPolicyOptions": GateSpec("ga", True, locked=True),
        "TopologyManagerPolicyAlphaOptions": GateSpec("alpha", False),
        "TopologyManagerPolicyBetaOptions": GateSpec("beta", True),
        "MemoryQoS": GateSpec("beta", True),                               # beta 1.37
        "InPlacePodVerticalScalingExclusiveCPUs": GateSpec("alpha", False),
        "InPlacePodVerticalScalingExclusiveMemory": GateSpec("alpha", False),
        "DisableCPUQuotaWithExclusiveCPUs": GateSpec("deprecated", True, locked=True),
        "WindowsCPUAndMemoryAffinity": GateSpec("alpha", False),
    },
}

# defaultKubernetesFeatureGateDependencies (kube_features.go @45b76a3), for the gates above.
# featuregate.go refuses to start when an enabled gate has a disabled dependency.
GATE_DEPENDENCIES: dict[str, tuple[str, ...]] = {
    "PodLevelResourceManagers": ("PodLevelResources",),
    "PodLevelResourcesFixDefaulting": ("PodLevelResources",),
    "PodLevelResourcesFixKubeletQOSClass": ("PodLevelResources",),
    "InPlacePodLevelResourcesVerticalScaling": ("InPlacePodVerticalScaling", "PodLevelResources",
                                                "NodeDeclaredFeatures"),
    "InPlacePodVerticalScalingExclusiveCPUs": ("InPlacePodVerticalScaling",),
    "InPlacePodVerticalScalingExclusiveMemory": ("InPlacePodVerticalScaling",),
}

# Gates people still copy from old guides; gone from kube_features.go, so "unrecognized".
REMOVED_GATES: dict[str, str] = {
    "CPUManager": "the CPU Manager gate went GA in 1.26 and was removed; the manager is always "
                  "available and cpuManagerPolicy alone selects it",
    "MemoryManager": "the Memory Manager gate went GA in 1.32 and was removed; memoryManagerPolicy "
                     "alone selects it",
    "TopologyManager": "the Topology Manager gate went GA in 1.27 and was removed; "
                       "topologyManagerPolicy alone selects it",
}

# Gates announced for 1.37 but absent from the code numaguard read.
UNCONFIRMED_GATES: dict[str, str] = {
    "PerPodPIDLimit": "KEP-6063 (pod-level pids limit): the implementation PR #139277 was open "
                      "and the gate absent from kube_features.go in July 2026; kubernetes.io has "
                      "a stub page saying alpha in 1.37",
}


def table_version(version: Version) -> Version:
    """The column of GATE_TABLE that describes `version` (clamped to 1.36..1.37)."""
    return min(max(tuple(version), (1, 36)), (1, 37))


def gate_spec(name: str, version: Version) -> GateSpec | None:
    return GATE_TABLE[table_version(version)].get(name)


@lru_cache(maxsize=1)
def _gate_catalogue() -> dict[str, Any]:
    text = resources.files("lint").joinpath("kubelet_gates.json").read_text(encoding="utf-8")
    return json.loads(text)


def known_gate_names(version: Version) -> frozenset[str]:
    """Every gate name a kubelet of this version registers (1.37 list; 1.36 without the gates
    whose first versioned spec is 1.37). Gates removed between 1.36 and 1.37 are not known."""
    catalogue = _gate_catalogue()
    names = frozenset(catalogue["names"])
    if tuple(version) < (1, 37):
        names -= frozenset(catalogue["addedIn137"])
    return names


def locked_gates(version: Version) -> dict[str, bool]:
    """Gates locked to their default at `version` (LockToDefault), name -> locked value."""
    out: dict[str, bool] = {}
    for name, (value, since) in _gate_catalogue()["locked"].items():
        major, minor = (int(p) for p in since.split("."))
        if (major, minor) <= tuple(version):
            out[name] = bool(value)
    for name, spec in GATE_TABLE[table_version(version)].items():
        if spec.locked:
            out[name] = spec.default
    return out


def gate_status(name: str, version: Version) -> str:
    """"known", "removed" (REMOVED_GATES), "unconfirmed" (UNCONFIRMED_GATES) or "unknown"."""
    if name in REMOVED_GATES:
        return "removed"
    if name in UNCONFIRMED_GATES:
        return "unconfirmed"
    if name in known_gate_names(version) or gate_spec(name, version) is not None:
        return "known"
    return "unknown"


def explicit_gates(kc: dict) -> dict[str, bool]:
    """The featureGates the document sets (boolean values only; others are NG002)."""
    gates = kc.get("featureGates")
    if not isinstance(gates, dict):
        return {}
    return {str(k): v for k, v in gates.items() if isinstance(v, bool)}


def effective_gates(kc: dict, version: Version) -> dict[str, bool]:
    """Every gate of GATE_TABLE at its default for `version`, overlaid with what the document
    sets (including gates outside the table)."""
    gates = {name: spec.default for name, spec in GATE_TABLE[table_version(version)].items()}
    gates.update(explicit_gates(kc))
    return gates


def gate_enabled(kc: dict, name: str, version: Version) -> bool:
    return effective_gates(kc, version).get(name, False)


def dependency_violations(kc: dict, version: Version) -> list[tuple[str, tuple[str, ...]]]:
    """(gate, disabled dependencies) for every enabled gate whose dependencies are not all
    enabled: the kubelet stops with "<gate> is enabled, but depends on features that are
    disabled: [<deps>]" (featuregate.go)."""
    gates = effective_gates(kc, version)
    out = []
    for gate, deps in GATE_DEPENDENCIES.items():
        if not gates.get(gate, False):
            continue
        disabled = tuple(d for d in deps if not gates.get(d, False))
        if disabled:
            out.append((gate, disabled))
    return out


def go_list(items) -> str:
    """How Go's %v prints a []string: [a b c]."""
    return "[" + " ".join(items) + "]"


# ---------------------------------------------------------------------------------------------
# policies (defaults from defaults.go; values are case-sensitive)

CPU_MANAGER_POLICIES = ("none", "static")
MEMORY_MANAGER_POLICIES = ("None", "Static", "BestEffort")
TOPOLOGY_MANAGER_POLICIES = ("none", "best-effort", "restricted", "single-numa-node")
TOPOLOGY_MANAGER_SCOPES = ("container", "pod")


def _string_field(kc: dict, field: str, default: str) -> tuple[str, bool]:
    value = kc.get(field)
    if value is None or value == "":       # omitempty: "" is defaulted like an absent field
        return default, False
    return str(value), True


def cpu_manager_policy(kc: dict) -> tuple[str, bool]:
    """(policy, explicitly set). Default "none"."""
    return _string_field(kc, "cpuManagerPolicy", "none")


def memory_manager_policy(kc: dict) -> tuple[str, bool]:
    """(policy, explicitly set). Default "None"."""
    return _string_field(kc, "memoryManagerPolicy", "None")


def topology_manager_policy(kc: dict) -> tuple[str, bool]:
    """(policy, explicitly set). Default "none"."""
    return _string_field(kc, "topologyManagerPolicy", "none")


def topology_manager_scope(kc: dict) -> tuple[str, bool]:
    """(scope, explicitly set). Default "container"."""
    return _string_field(kc, "topologyManagerScope", "container")


# ---------------------------------------------------------------------------------------------
# policy options

_GO_TRUE = frozenset({"1", "t", "T", "TRUE", "true", "True"})
_GO_FALSE = frozenset({"0", "f", "F", "FALSE", "false", "False"})


def parse_go_bool(value: Any) -> bool:
    """strconv.ParseBool; ValueError with Go's message otherwise."""
    if isinstance(value, str):
        if value in _GO_TRUE:
            return True
        if value in _GO_FALSE:
            return False
    raise ValueError(f'strconv.ParseBool: parsing "{value}": invalid syntax')


def parse_go_int(value: Any) -> int:
    """strconv.Atoi; ValueError with Go's message otherwise."""
    text = str(value)
    body = text[1:] if text[:1] in "+-" else text
    if not (isinstance(value, str) and body.isascii() and body.isdigit()):
        raise ValueError(f'strconv.Atoi: parsing "{text}": invalid syntax')
    return int(text)


@dataclass(frozen=True)
class PolicyOption:
    name: str
    maturity: str              # "alpha" | "beta" | "ga"
    gate: str | None           # the gate an alpha/beta option needs


# policy_options.go; maturities for 1.36/1.37 from kubernetes.io cpu-management-policies and
# the KEPs: strict-cpu-reservation GA 1.35 (KEP-4540), prefer-align-cpus-by-uncorecache GA 1.36
# (KEP-4800), distribute-cpus-across-numa beta (KEP-2902), the other two alpha.
CPU_MANAGER_OPTIONS: dict[str, PolicyOption] = {
    "full-pcpus-only": PolicyOption("full-pcpus-only", "ga", None),
    "strict-cpu-reservation": PolicyOption("strict-cpu-reservation", "ga", None),
    "prefer-align-cpus-by-uncorecache": PolicyOption("prefer-align-cpus-by-uncorecache", "ga", None),
    "distribute-cpus-across-numa": PolicyOption("distribute-cpus-across-numa", "beta",
                                                "CPUManagerPolicyBetaOptions"),
    "align-by-socket": PolicyOption("align-by-socket", "alpha", "CPUManagerPolicyAlphaOptions"),
    "distribute-cpus-across-cores": PolicyOption("distribute-cpus-across-cores", "alpha",
                                                 "CPUManagerPolicyAlphaOptions"),
}

# NewStaticPolicyOptions: pairs that cannot both be true.
CPU_MANAGER_EXCLUSIVE_OPTIONS: tuple[tuple[str, str], ...] = (
    ("full-pcpus-only", "distribute-cpus-across-cores"),
    ("distribute-cpus-across-numa", "distribute-cpus-across-cores"),
    ("prefer-align-cpus-by-uncorecache", "distribute-cpus-across-cores"),
    ("prefer-align-cpus-by-uncorecache", "distribute-cpus-across-numa"),
)

# topologymanager/policy_options.go: both GA (KEP-3545 1.32, KEP-4622 1.35).
TOPOLOGY_MANAGER_OPTIONS: dict[str, PolicyOption] = {
    "prefer-closest-numa-nodes": PolicyOption("prefer-closest-numa-nodes", "ga", None),
    "max-allowable-numa-nodes": PolicyOption("max-allowable-numa-nodes", "ga", None),
}
DEFAULT_MAX_ALLOWABLE_NUMA_NODES = 8

_MATURITY_WORD = {"alpha": "Alpha", "beta": "Beta"}


@dataclass(frozen=True)
class OptionProblem:
    path: Path
    message: str


def _options(kc: dict, field: str) -> dict[str, Any]:
    options = kc.get(field)
    return {str(k): v for k, v in options.items()} if isinstance(options, dict) else {}


def cpu_manager_options(kc: dict) -> dict[str, bool]:
    """The CPU Manager options that parse, name -> value (unknown or bad ones left out)."""
    out = {}
    for name, value in _options(kc, "cpuManagerPolicyOptions").items():
        if name in CPU_MANAGER_OPTIONS:
            try:
                out[name] = parse_go_bool(value)
            except ValueError:
                pass
    return out


def max_allowable_numa_nodes(kc: dict) -> int:
    """topologyManagerPolicyOptions max-allowable-numa-nodes, default 8 (when it is valid)."""
    value = _options(kc, "topologyManagerPolicyOptions").get("max-allowable-numa-nodes")
    try:
        parsed = parse_go_int(value)
    except ValueError:
        return DEFAULT_MAX_ALLOWABLE_NUMA_NODES
    return max(parsed, DEFAULT_MAX_ALLOWABLE_NUMA_NODES)


def _gated_option_problem(manager: str, option: PolicyOption, gates: dict[str, bool],
                          path: Path) -> OptionProblem | None:
    if option.gate is None or gates.get(option.gate, False):
        return None
    level = _MATURITY_WORD[option.maturity]
    return OptionProblem(path, f"{manager} Policy {level}-level Options not enabled, but option "
                               f"\"{option.name}\" provided: enable featureGates.{option.gate} "
                               f"(or remove the option)")


def cpu_option_problems(kc: dict, version: Version, node: Any = None) -> list[OptionProblem]:
    """What `NewStaticPolicyOptions` / `ValidateStaticPolicyOptions` would refuse."""
    options = _options(kc, "cpuManagerPolicyOptions")
    if not options:
        return []
    problems: list[OptionProblem] = []
    policy, _ = cpu_manager_policy(kc)
    if policy == "none":
        # cpu_manager.go: the none policy takes no options
        shown = " ".join(f"{k}:{v}" for k, v in sorted(options.items()))
        problems.append(OptionProblem(("cpuManagerPolicyOptions",),
                                      f"None policy: received unsupported options=map[{shown}]: "
                                      f"cpuManagerPolicyOptions only apply to cpuManagerPolicy: static"))
    gates = effective_gates(kc, version)
    values: dict[str, bool] = {}
    for name, value in sorted(options.items()):
        path = ("cpuManagerPolicyOptions", name)
        option = CPU_MANAGER_OPTIONS.get(name)
        if option is None:
            problems.append(OptionProblem(path, f"unknown CPU Manager Policy option: \"{name}\" "
                                                f"(known: {', '.join(CPU_MANAGER_OPTIONS)})"))
            continue
        gated = _gated_option_problem("CPU Manager", option, gates, path)
        if gated:
            problems.append(gated)
        try:
            values[name] = parse_go_bool(value)
        except ValueError as err:
            problems.append(OptionProblem(path, f"bad value for option \"{name}\": {err} "
                                                f"(use \"true\" or \"false\")"))
    for a, b in CPU_MANAGER_EXCLUSIVE_OPTIONS:
        if values.get(a) and values.get(b):
            problems.append(OptionProblem(("cpuManagerPolicyOptions", b),
                                          f"static policy options {a} and {b} can not be used at "
                                          f"the same time"))
    if values.get("align-by-socket"):
        topology_policy, _ = topology_manager_policy(kc)
        if topology_policy == "single-numa-node":
            problems.append(OptionProblem(("cpuManagerPolicyOptions", "align-by-socket"),
                                          "Topolgy manager single-numa-node policy is incompatible "
                                          "with CPUManager align-by-socket policy option"))
        topology = getattr(node, "topology", None)
        if topology is not None and topology.num_sockets > topology.num_numa_nodes:
            problems.append(OptionProblem(("cpuManagerPolicyOptions", "align-by-socket"),
                                          "Align by socket is not compatible with hardware where "
                                          "number of sockets are more than number of NUMA"))
    return problems


def topology_option_problems(kc: dict, version: Version) -> list[OptionProblem]:
    """What topologymanager `NewPolicyOptions` would refuse."""
    problems: list[OptionProblem] = []
    gates = effective_gates(kc, version)
    for name, value in sorted(_options(kc, "topologyManagerPolicyOptions").items()):
        path = ("topologyManagerPolicyOptions", name)
        option = TOPOLOGY_MANAGER_OPTIONS.get(name)
        if option is None:
            problems.append(OptionProblem(path, f"unknown Topology Manager Policy option: \"{name}\" "
                                                f"(known: {', '.join(TOPOLOGY_MANAGER_OPTIONS)})"))
            continue
        gated = _gated_option_problem("Topology Manager", option, gates, path)
        if gated:
            problems.append(gated)
        if name == "max-allowable-numa-nodes":
            try:
                number = parse_go_int(value)
            except ValueError as err:
                problems.append(OptionProblem(path, f"unable to convert policy option to integer "
                                                    f"\"{name}\": {err}"))
                continue
            if number < DEFAULT_MAX_ALLOWABLE_NUMA_NODES:
                problems.append(OptionProblem(path, f"the minimum value of \"{name}\" should not be "
                                                    f"less than {DEFAULT_MAX_ALLOWABLE_NUMA_NODES} "
                                                    f"(found {number})"))
        else:
            try:
                parse_go_bool(value)
            except ValueError as err:
                problems.append(OptionProblem(path, f"bad value for option \"{name}\": {err} "
                                                    f"(use \"true\" or \"false\")"))
    return problems


# ---------------------------------------------------------------------------------------------
# reserved CPUs


def reserved_system_cpus(kc: dict) -> frozenset[int] | None:
    """The explicit reservedSystemCPUs set, None when absent or empty; CPUSetError if it does
    not parse (validation.go: "unable to parse reservedSystemCPUs")."""
    text = kc.get("reservedSystemCPUs")
    if text is None:
        return None
    cpus = parse_cpuset(text)
    return cpus or None


def reserved_quantity(kc: dict, field: str, resource: str) -> Decimal:
    reserved = kc.get(field)
    if not isinstance(reserved, dict) or resource not in reserved:
        return Decimal(0)
    try:
        return parse_quantity(reserved[resource])
    except ValueError:
        return Decimal(0)


def reserved_cpu_amount(kc: dict) -> Decimal:
    """The CPU amount in the node allocatable reservation. reservedSystemCPUs overrides:
    server.go drops kubeReserved.cpu and sets systemReserved.cpu to the set's size."""
    try:
        explicit = reserved_system_cpus(kc)
    except CPUSetError:
        explicit = None
    if explicit:
        return Decimal(len(explicit))
    return reserved_quantity(kc, "kubeReserved", "cpu") + reserved_quantity(kc, "systemReserved", "cpu")


def reserved_cpu_count(kc: dict) -> int:
    """How many CPUs the static policy reserves: ceil(kubeReserved.cpu + systemReserved.cpu),
    or the size of reservedSystemCPUs (cpu_manager.go NewManager)."""
    return math.ceil(reserved_cpu_amount(kc))


def split_cores(reserved: frozenset[int], topology: Any) -> dict[int, tuple[frozenset[int], frozenset[int]]]:
    """Cores whose hyperthreads reservedSystemCPUs splits: core -> (reserved, not reserved)."""
    out = {}
    for cpu in sorted(reserved):
        if cpu not in topology.cpu_by_id:
            continue
        siblings = topology.siblings(cpu)
        core = topology.cpu_by_id[cpu].core
        if core not in out and not siblings <= reserved:
            out[core] = (siblings & reserved, siblings - reserved)
    return out


# ---------------------------------------------------------------------------------------------
# reserved memory

# types.go: the default evictionHard, used only when evictionHard is absent.
DEFAULT_EVICTION_HARD: dict[str, str] = {
    "memory.available": "100Mi", "nodefs.available": "10%", "nodefs.inodesFree": "5%",
    "imagefs.available": "15%",
}
RESERVABLE_RESOURCES = ("cpu", "memory", "ephemeral-storage", "pid")   # server.go ParseResourceList
HUGEPAGES_PREFIX = "hugepages-"


def effective_eviction_hard(kc: dict) -> dict[str, str]:
    """evictionHard as the kubelet uses it: the defaults when absent; when set, only what it
    says, plus the defaults for missing signals if mergeDefaultEvictionSettings is true."""
    explicit = kc.get("evictionHard")
    if not isinstance(explicit, dict):
        return dict(DEFAULT_EVICTION_HARD)
    merged = {str(k): str(v) for k, v in explicit.items()}
    if kc.get("mergeDefaultEvictionSettings") is True:
        for signal, value in DEFAULT_EVICTION_HARD.items():
            merged.setdefault(signal, value)
    return merged


@dataclass(frozen=True)
class EvictionAmount:
    """The hard-eviction memory reservation: bytes, or a fraction of node capacity."""

    value: str | None             # as written ("100Mi", "5%"), None when not set
    source: str                   # "default" | "evictionHard" | "merged default" | "not set"
    bytes: Decimal = Decimal(0)
    fraction: Decimal | None = None   # for "x%" values

    def resolve(self, capacity: int | None) -> Decimal | None:
        if self.fraction is None:
            return self.bytes
        if capacity is None:
            return None
        return Decimal(math.ceil(self.fraction * capacity))


def parse_eviction_value(value: str) -> tuple[Decimal, Decimal | None]:
    """(bytes, fraction) of an eviction threshold ("100Mi" or "5%"); ValueError if bad."""
    if value.endswith("%"):
        try:
            percent = Decimal(value[:-1])
        except ArithmeticError:
            raise ValueError(f"{value!r} is not a percentage") from None
        if not percent.is_finite() or percent < 0 or percent > 100:
            raise ValueError(f"eviction percentage threshold {value} must be >= 0% and <= 100%")
        return Decimal(0), percent / 100
    amount = parse_quantity(value)
    if amount < 0:
        raise ValueError(f"eviction threshold {value} must be positive")
    return amount, None


def memory_eviction(kc: dict) -> EvictionAmount:
    explicit = kc.get("evictionHard")
    signals = effective_eviction_hard(kc)
    value = signals.get("memory.available")
    if value is None:
        return EvictionAmount(None, "not set")
    if not isinstance(explicit, dict):
        source = "default"
    elif "memory.available" in explicit:
        source = "evictionHard"
    else:
        source = "merged default"
    try:
        amount, fraction = parse_eviction_value(value)
    except ValueError:
        amount, fraction = Decimal(0), None
    return EvictionAmount(value, source, amount, fraction)


def reserved_memory_by_numa(kc: dict) -> dict[int, dict[str, Decimal]]:
    """reservedMemory as NUMA node -> resource -> bytes (entries summed; bad values skipped)."""
    out: dict[int, dict[str, Decimal]] = {}
    entries = kc.get("reservedMemory")
    for entry in entries if isinstance(entries, list) else []:
        if not isinstance(entry, dict) or not isinstance(entry.get("numaNode"), int):
            continue
        limits = entry.get("limits")
        for resource, value in (limits.items() if isinstance(limits, dict) else ()):
            try:
                amount = parse_quantity(value)
            except ValueError:
                continue
            per_node = out.setdefault(entry["numaNode"], {})
            per_node[resource] = per_node.get(resource, Decimal(0)) + amount
    return out


def reserved_memory_totals(kc: dict) -> dict[str, Decimal]:
    """Σ over NUMA nodes of reservedMemory limits, per resource."""
    totals: dict[str, Decimal] = {}
    for per_node in reserved_memory_by_numa(kc).values():
        for resource, amount in per_node.items():
            totals[resource] = totals.get(resource, Decimal(0)) + amount
    return totals


@dataclass(frozen=True)
class MemoryReservation:
    """What `validateReservedMemory` compares, per resource type.

    `required[t]` = kubeReserved[t] + systemReserved[t] + hard eviction (memory only);
    `reserved[t]` = Σ reservedMemory limits[t]. With a percentage eviction threshold and no
    node capacity, `required["memory"]` is None and `approximate` is True.
    """

    kube_reserved: Decimal
    system_reserved: Decimal
    eviction: EvictionAmount
    capacity: int | None
    required: dict[str, Decimal | None]
    reserved: dict[str, Decimal]

    @property
    def approximate(self) -> bool:
        return self.required.get("memory") is None

    @property
    def fixed_memory(self) -> Decimal:
        """kubeReserved.memory + systemReserved.memory + the byte part of hard eviction."""
        return self.kube_reserved + self.system_reserved + self.eviction.bytes

    def mismatches(self) -> dict[str, tuple[Decimal, Decimal]]:
        """type -> (Σ reservedMemory, required) where they differ (exact types only)."""
        out = {}
        for resource in sorted(set(self.reserved) | {k for k, v in self.required.items() if v}):
            required = self.required.get(resource, Decimal(0))
            if required is None:
                continue
            total = self.reserved.get(resource, Decimal(0))
            if total != required:
                out[resource] = (total, required)
        return out


def node_memory_capacity(node: Any) -> int | None:
    topology = getattr(node, "topology", None)
    if topology is None:
        return None
    return sum(n.memory for n in topology.numa_nodes)


def memory_reservation(kc: dict, capacity: int | None = None) -> MemoryReservation:
    kube = reserved_quantity(kc, "kubeReserved", "memory")
    system = reserved_quantity(kc, "systemReserved", "memory")
    eviction = memory_eviction(kc)
    evicted = eviction.resolve(capacity)
    required: dict[str, Decimal | None] = {"memory": None if evicted is None else kube + system + evicted}
    return MemoryReservation(kube, system, eviction, capacity, required, reserved_memory_totals(kc))


def reserved_memory_entry_problems(kc: dict, node: Any = None) -> list[OptionProblem]:
    """validation_reserved_memory.go: unsupported limit types, zero values, duplicates; and with
    a node description, NUMA nodes the machine lacks (memory_manager.go)."""
    problems: list[OptionProblem] = []
    entries = kc.get("reservedMemory")
    seen: set[tuple[int, str]] = set()
    numa_ids = getattr(getattr(node, "topology", None), "numa_ids", None)
    for i, entry in enumerate(entries if isinstance(entries, list) else []):
        if not isinstance(entry, dict):
            continue
        numa = entry.get("numaNode")
        limits = entry.get("limits") if isinstance(entry.get("limits"), dict) else {}
        if numa_ids is not None and isinstance(numa, int) and numa not in numa_ids:
            problems.append(OptionProblem(("reservedMemory", i, "numaNode"),
                                          f"the reserved memory configuration references a NUMA node "
                                          f"{numa} that does not exist on this machine (NUMA nodes: "
                                          f"{', '.join(map(str, numa_ids))})"))
        for resource, value in limits.items():
            path = ("reservedMemory", i, "limits", resource)
            if resource != "memory" and not str(resource).startswith(HUGEPAGES_PREFIX):
                problems.append(OptionProblem(path, f"invalid configuration: the limit type "
                                                    f"\"{resource}\" for NUMA node {numa} is not "
                                                    f"supported, only [memory hugepages-<HugePageSize>] "
                                                    f"is accepted"))
                continue
            try:
                amount = parse_quantity(value)
            except ValueError:
                continue                                   # NG002
            if amount == 0:
                problems.append(OptionProblem(path, f"invalid configuration: reserved memory may not "
                                                    f"be zero for NUMA node {numa} and resource "
                                                    f"\"{resource}\""))
            if (numa, resource) in seen:
                problems.append(OptionProblem(path, f"invalid configuration: the reserved memory has "
                                                    f"a duplicate value for NUMA node {numa} and "
                                                    f"resource \"{resource}\""))
            seen.add((numa, resource))
    return problems


def reserved_memory_snippet(required: Decimal, numa_node: int = 0) -> str:
    """A reservedMemory block that satisfies the kubelet for `required` bytes of memory."""
    return f"reservedMemory: [{{numaNode: {numa_node}, limits: {{memory: {format_bytes(required)}}}}}]"


# ---------------------------------------------------------------------------------------------
# NG002: the schema


@lru_cache(maxsize=1)
def _schema_validator():
    import jsonschema          # slow to import; only when a KubeletConfiguration is linted

    text = resources.files("lint").joinpath("schemas/kubelet-config.json").read_text(encoding="utf-8")
    schema = json.loads(text)
    validator_class = jsonschema.validators.validator_for(schema)
    return validator_class(schema)


def _describe(value: Any) -> str:
    if isinstance(value, bool):
        return f"the boolean {str(value).lower()}"
    if isinstance(value, (int, float)):
        return f"the number {value}"
    if isinstance(value, str):
        return f"the string {value!r}"
    if value is None:
        return "null"
    return f"a {'list' if isinstance(value, list) else 'mapping'}"


def _json_type(value: Any) -> str:
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, (int, float)):
        return "number"
    if isinstance(value, str):
        return "string"
    return "array" if isinstance(value, list) else "object"


_STRING_MAPS = {"cpuManagerPolicyOptions", "topologyManagerPolicyOptions", "kubeReserved",
                "systemReserved", "evictionHard", "evictionSoft", "evictionSoftGracePeriod",
                "evictionMinimumReclaim", "qosReserved", "defaultPodSysctls"}


def _schema_message(error) -> str:
    path = list(error.absolute_path)
    where = _dotted(path) or "KubeletConfiguration"
    if error.validator == "type":
        expected = error.validator_value
        expected = " or ".join(expected) if isinstance(expected, list) else expected
        hint = ""
        if len(path) == 2 and path[0] in _STRING_MAPS:
            hint = (f"; {path[0]} is a map of strings, quote the value (e.g. "
                    f"\"{str(error.instance).lower() if isinstance(error.instance, bool) else error.instance}\")")
        elif len(path) == 2 and path[0] == "featureGates":
            hint = "; feature gate values are booleans (true/false, unquoted)"
        elif expected == "string" and isinstance(error.instance, (bool, int, float)):
            hint = f"; quote it (e.g. \"{error.instance}\")"
        go_error = ""
        go_type = {"string": "string", "boolean": "bool"}.get(expected)
        if go_type and path and isinstance(path[0], str):
            # encoding/json's UnmarshalTypeError, as the kubelet prints it ("failed to decode")
            go_error = (f" (json: cannot unmarshal {_json_type(error.instance)} into Go struct field "
                        f"KubeletConfiguration.{path[0]} of type {go_type})")
        return (f"{where} must be a {expected}, not {_describe(error.instance)}: the kubelet fails "
                f"to decode the file{go_error}{hint}")
    if error.validator == "required":
        return f"{where}: {error.message}"
    return f"{where}: {error.message}"


def _unknown_field_message(path: tuple, name: Any) -> str:
    close = difflib.get_close_matches(str(name), _top_level_fields(), n=1, cutoff=0.8) if not path else []
    hint = f" (did you mean {close[0]}?)" if close else ""
    if not path:
        return (f"unknown field {name}{hint}: not a KubeletConfiguration v1beta1 field (names are "
                f"case-sensitive); the kubelet logs \"using lenient decoding as strict decoding "
                f"failed\" and ignores it, so the setting has no effect")
    return f"{_dotted(path)}: unknown field {name}"


def _top_level_fields() -> list[str]:
    return sorted(_schema_validator().schema["properties"])


def _dotted(path) -> str:
    out = ""
    for key in path:
        out += f"[{key}]" if isinstance(key, int) else (f".{key}" if out else str(key))
    return out


def _quantity_violations(kc: dict) -> Iterator[Violation]:
    for field in ("kubeReserved", "systemReserved"):
        reserved = kc.get(field)
        for resource, value in (reserved.items() if isinstance(reserved, dict) else ()):
            path = (field, resource)
            if resource not in RESERVABLE_RESOURCES:
                yield Violation(path, f"{field}.{resource}: the kubelet refuses to start: cannot "
                                      f"reserve \"{resource}\" resource (only "
                                      f"{', '.join(RESERVABLE_RESOURCES)})")
                continue
            if not isinstance(value, str):
                continue                                      # reported by the schema
            try:
                if parse_quantity(value) < 0:
                    raise ValueError("negative")
            except ValueError:
                yield Violation(path, f"{field}.{resource}: {value!r} is not a quantity the kubelet "
                                      f"accepts (e.g. \"500m\", \"1\", \"2Gi\")")
    eviction = kc.get("evictionHard")
    for signal, value in (eviction.items() if isinstance(eviction, dict) else ()):
        if not isinstance(value, str):
            continue
        try:
            parse_eviction_value(value)
        except ValueError:
            yield Violation(("evictionHard", signal),
                            f"evictionHard.{signal}: {value!r} is neither a quantity (\"100Mi\") nor "
                            f"a percentage (\"5%\")")
    entries = kc.get("reservedMemory")
    for i, entry in enumerate(entries if isinstance(entries, list) else []):
        limits = entry.get("limits") if isinstance(entry, dict) else None
        for resource, value in (limits.items() if isinstance(limits, dict) else ()):
            if isinstance(value, bool) or not isinstance(value, (str, int, float)):
                continue
            try:
                parse_quantity(value)
            except ValueError:
                yield Violation(("reservedMemory", i, "limits", resource),
                                f"reservedMemory[{i}].limits.{resource}: {value!r} is not a quantity "
                                f"(e.g. \"1Gi\")")


def kubelet_schema_violations(kc: dict) -> list[Violation]:
    """NG002 for a KubeletConfiguration: the JSON Schema of v1beta1 (wrong types, unknown fields)
    and quantities that do not parse. An empty list means the NG2xx rules can trust the shapes."""
    validator = _schema_validator()
    violations = []
    for error in sorted(validator.iter_errors(kc), key=lambda e: [str(p) for p in e.absolute_path]):
        path = tuple(error.absolute_path)
        if error.validator == "additionalProperties":
            known = set(error.schema.get("properties", {}))
            for name in sorted((n for n in error.instance if n not in known), key=str):
                violations.append(Violation(path + (name,), _unknown_field_message(path, name)))
        else:
            violations.append(Violation(path, _schema_message(error)))
    violations.extend(_quantity_violations(kc))
    return violations


__all__ = [
    "GateSpec", "GATE_TABLE", "GATE_DEPENDENCIES", "REMOVED_GATES", "UNCONFIRMED_GATES",
    "table_version", "gate_spec", "known_gate_names", "locked_gates", "gate_status",
    "explicit_gates", "effective_gates", "gate_enabled", "dependency_violations",
    "cpu_manager_policy", "memory_manager_policy", "topology_manager_policy",
    "topology_manager_scope", "parse_go_bool", "parse_go_int", "cpu_manager_options",
    "max_allowable_numa_nodes", "cpu_option_problems", "topology_option_problems",
    "reserved_system_cpus", "reserved_cpu_amount", "reserved_cpu_count", "split_cores",
    "effective_eviction_hard", "memory_eviction", "reserved_memory_by_numa",
    "reserved_memory_totals", "memory_reservation", "MemoryReservation",
    "reserved_memory_entry_problems", "reserved_memory_snippet", "node_memory_capacity",
    "kubelet_schema_violations", "CPUSetError", "format_cpuset",
]
