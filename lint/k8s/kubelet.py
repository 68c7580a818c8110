"""The KubeletConfiguration as the kubelet reads it: gates, manager policies, options, reservations.

Plain dict in (`kubelet.config.k8s.io/v1beta1` KubeletConfiguration, parsed YAML), values out.
The NG2xx rules (`numaguard.lint.rules.kubelet`) and the NUMA simulator both build on this module, so
every function answers one question the kubelet answers at startup, with the kubelet's default
when a field is absent. Sources (1.37 development, July 2026):

* defaults: `kubernetes/kubelet` `config/v1beta1/types.go` and `pkg/kubelet/apis/config/v1beta1/defaults.go`;
* CPU Manager: `pkg/kubelet/cm/cpumanager/{cpu_manager.go,policy_options.go,policy_static.go}`;
* Topology Manager: `pkg/kubelet/cm/topologymanager/policy_options.go`;
* Memory Manager: `pkg/kubelet/cm/memorymanager/memory_manager.go` (`validateReservedMemory`)
  and `pkg/kubelet/apis/config/validation/validation_reserved_memory.go`;
* reserved CPUs: `cmd/kubelet/app/server.go` and `pkg/kubelet/apis/config/validation/validation.go`.

Two neighbours hold the rest of the kubelet model:

* `numaguard.lint.k8s.kubelet_gates`: the feature gates (`GATE_TABLE`, dependencies, removed and unconfirmed
  gates, `effective_gates`, `dependency_violations`, `gate_status`, ...), whose names are
  also importable from here because the rules read gates and policies side by side;
* `numaguard.lint.k8s.kubelet_schema`: `kubelet_schema_violations`, the NG002 check of the document's shape.
"""
from __future__ import annotations

import math
import re
import struct
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from numaguard.lint.k8s.kubelet_gates import (  # noqa: F401  (re-exported)
    GATE_DEPENDENCIES, GATE_TABLE, REMOVED_GATES, UNCONFIRMED_GATES, GateSpec, Version,
    dependency_violations, effective_gates, explicit_gates, gate_enabled, gate_spec, gate_status,
    go_list, known_gate_names, locked_gates, removal_note, removed_gate_value, table_version,
)
from numaguard.lint.model import Path
from numaguard.lint.k8s.cpuset import CPUSetError, format_cpuset, parse_cpuset
from numaguard.lint.k8s.quantity import format_bytes, parse_quantity

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
        return parse_quantity(reserved[resource], trim=False)     # map[string]string
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
    fraction: Decimal | None = None   # for "x%" values: the kubelet's float32 share, exactly

    def resolve(self, capacity: int | None) -> Decimal | None:
        """The bytes reserved on a node of `capacity` bytes, as the kubelet computes them
        (pkg/kubelet/eviction/api/types.go GetThresholdQuantity): the float32 share widened to
        float64, times the capacity as float64, truncated to an integer."""
        if self.fraction is None:
            return self.bytes
        if capacity is None:
            return None
        return Decimal(int(float(self.fraction) * float(capacity)))


# strconv.ParseFloat's decimal syntax (digits, one point, an exponent; no underscores without a
# base prefix); hexadecimal floats, which it also reads, are refused here as nobody writes them.
_GO_DECIMAL_FLOAT = re.compile(r"[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?")


_FLOAT32_OVERFLOW = Decimal(2**128 - 2**103)


def _float32_bits(x: float) -> int:
    """The IEEE bits of `x` rounded to float32 (nearest, ties to even, as Go's float32(x))."""
    return struct.unpack("<I", struct.pack("<f", x))[0]


def _float32_of_bits(bits: int) -> float:
    return struct.unpack("<f", struct.pack("<I", bits))[0]


def _float32(x: float) -> float:
    return _float32_of_bits(_float32_bits(x))


def _nearest_float32(d: Decimal) -> float:
    """`d` correctly rounded to float32 (ties to even), as strconv.ParseFloat(s, 32) rounds:
    rounding to float64 first may land one float32 step off, so the neighbours are compared.
    Beyond the largest float32 (by half a step) it is infinite, as ParseFloat's ErrRange."""
    if abs(d) >= _FLOAT32_OVERFLOW:
        return math.copysign(math.inf, d)
    bits = _float32_bits(float(d))
    # the finite float32 values one step either side (bit patterns below +inf and -inf)
    near = [_float32_of_bits(b) for b in (bits, bits - 1, bits + 1)
            if 0 <= b < 0x7F800000 or 0x80000000 <= b < 0xFF800000]
    return min(near, key=lambda f: (abs(Decimal(f) - d), _float32_bits(f) & 1))


def parse_eviction_value(value: str) -> tuple[Decimal, Decimal | None]:
    """(bytes, fraction) of an eviction threshold ("100Mi" or "5%") as the kubelet reads it
    (pkg/kubelet/eviction/helpers.go parseThresholdStatement); ValueError where the kubelet
    refuses it. Exactly "0%" and "100%" are ignored (no threshold: nothing reserved). Any other
    percentage: every trailing "%" trimmed, the number parsed as a float32 and divided by 100 in
    float32 (parsePercentage), then bounded to 0..1. A quantity must be more than zero."""
    if value in ("0%", "100%"):
        return Decimal(0), None
    if value.endswith("%"):
        number = value.rstrip("%")
        if not _GO_DECIMAL_FLOAT.fullmatch(number):
            raise ValueError(f"{value!r} is not a percentage")
        percent = _nearest_float32(Decimal(number))
        if math.isinf(percent):
            raise ValueError(f"{value!r} is not a percentage (out of range)")
        # float32 division is correctly rounded; so is float64 division rounded to float32
        share = _float32(percent / 100)
        if share < 0 or share > 1:
            raise ValueError(f"eviction percentage threshold {value} must be >= 0% and <= 100%")
        return Decimal(0), Decimal(share)
    amount = parse_quantity(value, trim=False)        # the eviction manager parses the text itself
    if amount <= 0:
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
    problems.extend(_reserved_beyond_numa_capacity(kc, node))
    return problems


def _reserved_beyond_numa_capacity(kc: dict, node: Any) -> list[OptionProblem]:
    """reservedMemory memory on a NUMA node above what that NUMA node has: the Static policy
    would leave it negative allocatable memory (memorymanager policy_static.go initializes
    each NUMA node's allocatable as capacity - reserved), so the kubelet cannot start it."""
    topology = getattr(node, "topology", None)
    if topology is None:
        return []
    capacity = {n.id: n.memory for n in topology.numa_nodes}
    problems = []
    entries = kc.get("reservedMemory")
    for i, entry in enumerate(entries if isinstance(entries, list) else []):
        if not isinstance(entry, dict) or entry.get("numaNode") not in capacity:
            continue
        limits = entry.get("limits") if isinstance(entry.get("limits"), dict) else {}
        try:
            amount = parse_quantity(limits.get("memory"))
        except (ValueError, TypeError):
            continue
        numa = entry["numaNode"]
        if amount > capacity[numa]:
            problems.append(OptionProblem(("reservedMemory", i, "limits", "memory"),
                                          f"reservedMemory reserves {format_bytes(amount)} of memory "
                                          f"on NUMA node {numa}, which has only "
                                          f"{format_bytes(Decimal(capacity[numa]))}"))
    return problems


def reserved_memory_snippet(required: Decimal, numa_node: int = 0) -> str:
    """A reservedMemory block that satisfies the kubelet for `required` bytes of memory."""
    return f"reservedMemory: [{{numaNode: {numa_node}, limits: {{memory: {format_bytes(required)}}}}}]"


__all__ = [
    "GateSpec", "GATE_TABLE", "GATE_DEPENDENCIES", "REMOVED_GATES", "UNCONFIRMED_GATES",
    "table_version", "gate_spec", "known_gate_names", "locked_gates", "gate_status", "removed_gate_value",
    "explicit_gates", "effective_gates", "gate_enabled", "dependency_violations",
    "cpu_manager_policy", "memory_manager_policy", "topology_manager_policy",
    "topology_manager_scope", "parse_go_bool", "parse_go_int", "cpu_manager_options",
    "max_allowable_numa_nodes", "cpu_option_problems", "topology_option_problems",
    "reserved_system_cpus", "reserved_cpu_amount", "reserved_cpu_count", "split_cores",
    "effective_eviction_hard", "memory_eviction", "reserved_memory_by_numa",
    "reserved_memory_totals", "memory_reservation", "MemoryReservation",
    "reserved_memory_entry_problems", "reserved_memory_snippet", "node_memory_capacity",
    "CPUSetError", "format_cpuset",
]
