"""`node inspect`'s answer to "if I restart this kubelet with this configuration, does it start,
and what happens to the running pods' CPUs?".

The configuration judged is the one node inspect was given (`--kubelet-config NEW`, else the
node's own); "now" is what the checkpoints record, and the node's own configuration when
another one is judged. A restart is refused by what stops the kubelet before its pods run:

* the configuration itself (the kubelet rules' start-up refusals, numaguard's lint of the file
  with the node's machine: NG2xx errors);
* the checkpoints (NG402 another policy, NG406 a file it cannot restore, NG408 and NG419-NG421
  what the static policies' `validateState` refuses).

When it starts, the managers restore every container's exclusive CPUs and memory from the
checkpoints (the static policy allocates nothing for a container already in its state), remove
the entries of pods that no longer exist (`removeStaleState`, when the pods are known), and the
kubelet admits its pods again, so a pod whose recorded placement the Topology Manager policy
refuses is rejected (NG422). While the kubelet does not start, the containers keep running
where they are (nobody rewrites their cgroups) and the node stops reporting Ready.

The prediction is reported in every format: a block of the text report, `restart` in the JSON
report, and one NG423 finding (info) whenever the restart changes something or is refused, which
SARIF, the PolicyReport and the HTML page carry with the refusals themselves.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path as FilePath
from typing import Any

from numaguard.lint.k8s.cpuset import format_cpuset
from numaguard.lint.model import ObjectRef, Severity, Violation
from numaguard.lint.rules.base import Place
from numaguard.lint.rules.node import RESTART_PREDICTION, CheckpointExtract
from numaguard.lint.rules.pool import PoolViolation

# What stops the kubelet among the checkpoint rules (NG422 rejects a pod, the kubelet starts).
REFUSING_RULES = frozenset({"NG402", "NG406", "NG408", "NG419", "NG420", "NG421"})
KEEPS, REJECTED, UNMANAGED, RELEASED = "keeps", "rejected", "unmanaged", "released"
_KUBELET_CONFIG = ObjectRef("kubelet.config.k8s.io/v1beta1", "KubeletConfiguration", None, None)


@dataclass(frozen=True)
class Change:
    """A setting the restart changes: its value now (the checkpoint's, or the node's own
    configuration's), with the judged configuration, and what that does."""

    setting: str
    now: str
    then: str
    effect: str

    def as_dict(self) -> dict:
        return {"setting": self.setting, "now": self.now, "then": self.then, "effect": self.effect}


@dataclass(frozen=True)
class Outcome:
    """What the restart does to one container's exclusive CPUs and memory."""

    pod: str               # namespace/name, else the pod uid
    container: str
    cpus: frozenset[int]
    outcome: str           # KEEPS, REJECTED, UNMANAGED, RELEASED
    detail: str

    def as_dict(self) -> dict:
        return {"pod": self.pod, "container": self.container, "cpus": format_cpuset(self.cpus),
                "outcome": self.outcome, "detail": self.detail}


@dataclass
class RestartPrediction:
    config: str
    starts: bool
    refusals: list[str] = field(default_factory=list)     # "NGxxx message", the kubelet's order
    changes: list[Change] = field(default_factory=list)
    containers: list[Outcome] = field(default_factory=list)
    checked: list[str] = field(default_factory=list)     # what it was compared with

    @property
    def verdict(self) -> str:
        if not self.starts:
            return (f"the kubelet does not start ({len(self.refusals)} refusal(s); the first, as it logs it: "
                    f"{self.refusals[0]})")
        rejected = len({c.pod for c in self.containers if c.outcome == REJECTED})
        return "the kubelet starts" + (f"; it rejects {rejected} of the running pods (NG422)" if rejected else "")

    @property
    def eventful(self) -> bool:
        """Whether it refuses, changes a setting, or changes anything for a container."""
        return not self.starts or bool(self.changes) or any(c.outcome != KEEPS for c in self.containers)

    def as_dict(self) -> dict:
        return {"config": self.config, "starts": self.starts, "verdict": self.verdict, "refusals": self.refusals,
                "changes": [c.as_dict() for c in self.changes],
                "containers": [c.as_dict() for c in self.containers], "comparedWith": self.checked}

    def lines(self) -> list[str]:
        """The text report's block."""
        out = [f"restart with {self.config}: {self.verdict}"]
        out += [f"  refused: {r}" for r in self.refusals[1:]]
        out += [f"  {c.setting}: {c.now} -> {c.then}: {c.effect}" for c in self.changes]
        out += [f"  {c.pod} {c.container}: {c.outcome}: {c.detail}" for c in self.containers]
        return out

    def violation(self) -> PoolViolation:
        """NG423 on the configuration file."""
        parts = [f"restarting the kubelet with {self.config}: {self.verdict}"]
        parts += [f"{c.setting} {c.now} -> {c.then}: {c.effect}" for c in self.changes]
        counts: dict[str, int] = {}
        for c in self.containers:
            counts[c.outcome] = counts.get(c.outcome, 0) + 1
        if counts:
            parts.append("containers with exclusive CPUs or memory: " +
                         ", ".join(f"{n} {outcome}" for outcome, n in sorted(counts.items())))
        return PoolViolation(RESTART_PREDICTION, self.config, Violation((), "; ".join(parts)), _KUBELET_CONFIG)


def config_refusals(path: str, node: Any, version: tuple[int, int]) -> list[PoolViolation]:
    """What stops a kubelet in the configuration at `path` (a lint of the file with the node's
    machine): the start-up refusals among the kubelet rules' errors (a validity rule's, or a
    policy rule's marked `refusal`; a pool requirement the PodLevelResourceManagers gate makes
    an error is not one) and a file it cannot decode or that fails its validation (NG001, NG002)."""
    from numaguard.lint.config import config_from_dict
    from numaguard.lint.engine import lint_documents
    from numaguard.lint.load.documents import load_text
    from numaguard.lint.rules.kubelet import VALIDITY_RULES as KUBELET_VALIDITY
    from numaguard.lint.rules.registry import rules_by_id

    try:
        docs, errors = load_text(FilePath(path).read_bytes(), path)
    except OSError:
        return []                          # reported as a source that could not be read
    result = lint_documents(docs, config=config_from_dict({"kubernetesVersion": f"{version[0]}.{version[1]}"}),
                            node=node, load_errors=errors)
    rules = rules_by_id()
    out = []
    for f in result.active:
        rule = rules.get(f.rule)
        if rule is None or f.severity is not Severity.ERROR:
            continue
        refusal = rule.id in KUBELET_VALIDITY if f.refusal is None else f.refusal
        if not (rule.target == "input" or (rule.target == "kubelet" and refusal)):
            continue
        where = tuple(int(p) if p.isdigit() else p for p in f.path.split(".")) if f.path else ()
        place = Place(f.file, f.line, (), {where: (f.line, f.column)} if f.line else {})
        out.append(PoolViolation(rule, f.file or path, Violation(where, f.message, remediation=f.remediation),
                                 _KUBELET_CONFIG, frozenset(), place))
    return out


def predict(config: str, kc: dict, current: dict | None, extracts: dict[str, CheckpointExtract], topology: Any,
            violations: list, names: dict[str, str], pod_uids: set[str] | None,
            version: tuple[int, int]) -> RestartPrediction:
    """The prediction from what node inspect read and found (`violations`: the configuration's
    refusals, then the checkpoints' findings, cpu before memory: the kubelet's order, which
    validates its configuration, then starts the CPU Manager, then the Memory Manager).
    `current`: the node's own configuration when another one is judged (None: the same, or not
    read); `names`: pod uid -> namespace/name of the running pods node inspect knows the uids of."""
    refusals = [f"{_brief(pv.violation.message)} ({pv.rule.id})" for pv in violations
                if pv.rule.id in REFUSING_RULES or pv.rule.target in ("kubelet", "input")]
    rejected = {_pod_of(pv) for pv in violations if pv.rule.id == "NG422"}
    prediction = RestartPrediction(config, not refusals, refusals)
    restored = {kind: e.checkpoint for kind, e in extracts.items() if e.checkpoint.error is None}
    prediction.checked = [f"{kind} checkpoint {e.source}" for kind, e in extracts.items()]
    if current is not None:
        prediction.checked.append("the node's own kubelet configuration")
    prediction.changes = _changes(kc, current, restored, topology, rejected, version)
    prediction.containers = _outcomes(restored, prediction.starts, rejected, names, pod_uids)
    return prediction


def _brief(message: str) -> str:
    """A refusal without the rules' "the kubelet will not start: " lead, which the verdict says."""
    for lead in ("the kubelet will not start: ", "the kubelet refuses to start: "):
        if message.startswith(lead):
            return message[len(lead):]
    return message


def _pod_of(pv) -> str:
    path = pv.violation.path
    at = path.index("entries") if "entries" in path else path.index("podEntries") if "podEntries" in path else -1
    return str(path[at + 1]) if 0 <= at < len(path) - 1 else ""


def _changes(kc: dict, current: dict | None, restored: dict, topology: Any, rejected: set[str],
             version: tuple[int, int]) -> list[Change]:
    from numaguard.lint.k8s import kubelet as k

    out = []
    for kind, setting, policy in (("cpu", "cpuManagerPolicy", k.cpu_manager_policy),
                                  ("memory", "memoryManagerPolicy", k.memory_manager_policy)):
        recorded = restored[kind].policy if kind in restored else (policy(current)[0] if current else None)
        if recorded is not None and recorded != policy(kc)[0]:
            out.append(Change(setting, recorded, policy(kc)[0],
                              "the kubelet does not start while the checkpoint records the other policy (NG402)"
                              if kind in restored else "checkpoint not read: a restart needs it moved aside"))
    if current is not None:
        out += _cpu_changes(kc, current, restored.get("cpu"), topology, version)
        out += _topology_changes(kc, current, rejected)
    if "memory" in restored:
        out += _memory_changes(kc, restored["memory"])
    return out


def _cpu_changes(kc: dict, current: dict, cp: Any, topology: Any, version: tuple[int, int]) -> list[Change]:
    from numaguard.lint.k8s import kubelet as k
    from numaguard.lint.rules.restart import static_reservation

    out = []
    (now, strict_now), (then, strict_then) = static_reservation(current, topology), static_reservation(kc, topology)
    if now is not None and then is not None and now != then:
        shared = cp.default_cpus if cp is not None else frozenset()
        held = then - shared if cp is not None else frozenset()
        effect = (f"CPUs {format_cpuset(held)} are held by running containers: the kubelet does not start (NG419)"
                  if held else f"{_cpu_delta(now, then)}; running containers keep their CPUs")
        out.append(Change("reserved CPUs", format_cpuset(now) or "none", format_cpuset(then) or "none", effect))
    if strict_now != strict_then:
        out.append(Change("cpuManagerPolicyOptions strict-cpu-reservation", str(strict_now).lower(),
                          str(strict_then).lower(), "the reserved CPUs must then be out of (true) or in (false) "
                                                    "defaultCpuSet: the kubelet does not start on a node that ran "
                                                    "with the other value (NG419)"))
    rest_now = {n: v for n, v in k.cpu_manager_options(current).items() if n != "strict-cpu-reservation"}
    rest_then = {n: v for n, v in k.cpu_manager_options(kc).items() if n != "strict-cpu-reservation"}
    if rest_now != rest_then:
        out.append(Change("cpuManagerPolicyOptions", _options(rest_now), _options(rest_then),
                          "running containers keep their CPUs; new allocations follow the new options"))
    gate_now, gate_then = (k.gate_enabled(c, "PodLevelResourceManagers", version) for c in (current, kc))
    if gate_now != gate_then:
        pods = len(cp.pods) if cp is not None else 0
        out.append(Change("featureGates.PodLevelResourceManagers", str(gate_now).lower(), str(gate_then).lower(),
                          (f"the {pods} pod-level entries are no longer read: their pods' shared CPUs belong to "
                           "no entry and the kubelet does not start (NG419)" if pods and not gate_then else
                           "pods admitted from now on get pod-level placements; running pods keep theirs")))
    return out


def _topology_changes(kc: dict, current: dict, rejected: set[str]) -> list[Change]:
    from numaguard.lint.k8s import kubelet as k

    out = []
    for setting, read in (("topologyManagerPolicy", k.topology_manager_policy),
                          ("topologyManagerScope", k.topology_manager_scope)):
        now, then = read(current)[0], read(kc)[0]
        if now != then:
            effect = (f"the kubelet admits its pods again under it and rejects {len(rejected)} of them (NG422)"
                      if rejected else "the kubelet admits its pods again under it and all keep their placement; "
                                       "new pods are placed under the new setting")
            out.append(Change(setting, now, then, effect))
    return out


def _memory_changes(kc: dict, cp: Any) -> list[Change]:
    """reservedMemory against the systemReserved the checkpoint records, per NUMA node."""
    from decimal import Decimal

    from numaguard.lint.k8s.quantity import format_bytes
    from numaguard.lint.numa.memory import reserved_memory_from_config

    try:
        then = reserved_memory_from_config(kc.get("reservedMemory"))
    except (ValueError, KeyError, TypeError, AttributeError):
        return []
    out = []
    for numa, tables in sorted(cp.machine.items()):
        for res, table in sorted(tables.items()):
            wanted = then.get(numa, {}).get(res, 0)
            if wanted != table.system_reserved:
                out.append(Change(f"reservedMemory NUMA {numa} {res}", format_bytes(Decimal(table.system_reserved)),
                                  format_bytes(Decimal(wanted)),
                                  "the Memory Manager's machine state no longer matches: the kubelet does not start "
                                  "(NG420)"))
    return out


def _cpu_delta(now: frozenset[int], then: frozenset[int]) -> str:
    parts = []
    if then - now:
        parts.append(f"CPUs {format_cpuset(then - now)} are no longer handed out exclusively")
    if now - then:
        parts.append(f"CPUs {format_cpuset(now - then)} can be handed out exclusively again")
    return "; ".join(parts)


def _options(options: dict) -> str:
    return ",".join(f"{n}={str(v).lower()}" for n, v in sorted(options.items())) or "none"


def _outcomes(restored: dict, starts: bool, rejected: set[str], names: dict[str, str],
              pod_uids: set[str] | None) -> list[Outcome]:
    """Every container the checkpoints give exclusive CPUs or memory blocks."""
    cpu, memory = restored.get("cpu"), restored.get("memory")
    held: dict[tuple[str, str], frozenset[int]] = {}
    if cpu is not None:
        held.update({(pod, name): cpus for pod, by in cpu.containers.items() for name, cpus in by.items()})
    if memory is not None:
        for pod, by in memory.containers.items():
            for name in by:
                held.setdefault((pod, name), frozenset())
    out = []
    for (uid, name), cpus in sorted(held.items()):
        what = f"CPUs {format_cpuset(cpus)}" if cpus else "its memory blocks"
        if pod_uids is not None and uid not in pod_uids:
            outcome, detail = RELEASED, (f"its pod no longer exists: the kubelet removes the entry at start "
                                         f"(removeStaleState) and {what} return to the shared pool")
        elif not starts:
            outcome, detail = UNMANAGED, (f"keeps running on {what} while the kubelet does not start; the node "
                                          "stops reporting Ready")
        elif uid in rejected:
            outcome, detail = REJECTED, ("re-admitted at start from its recorded placement and rejected "
                                         "(TopologyAffinityError, NG422)")
        else:
            outcome, detail = KEEPS, f"keeps {what} (restored from the checkpoint)"
        out.append(Outcome(names.get(uid, uid), name, cpus, outcome, detail))
    return out
