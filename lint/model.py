"""Value objects shared by the engine and its front ends.

The engine takes parsed documents (plain dicts and lists) and returns `Finding`s; it never
reads files or writes to a terminal. Positions come from the loader (`numaguard.lint.load.documents`), which
keeps the line and column of every mapping key and list item it parsed; objects built by hand
(a library user, the webhook) simply have none, and findings then point at the object.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum
from typing import Any


def value_kind(value: Any) -> str:
    """What a parsed value is, in words a manifest's author uses ("a mapping", "a list"):
    messages never show Python's type names (PosDict, NoneType)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int):
        return "an integer"
    if isinstance(value, float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, dict):
        return "a mapping"
    if isinstance(value, (list, tuple)):
        return "a list"
    if isinstance(value, (bytes, bytearray)):
        return "a binary value"
    return "a value of another kind"


def plain_copy(value: Any) -> Any:
    """A deep copy as plain dicts and lists with string keys (the loader's position-keeping
    types dropped): what a reader merges or hands on without touching the parsed document."""
    if isinstance(value, dict):
        return {str(k): plain_copy(v) for k, v in value.items()}
    if isinstance(value, list):
        return [plain_copy(v) for v in value]
    return value


def items(value: Any) -> list:
    """A field that should hold a list, as one: anything else (a number, a string, a mapping a
    user wrote by mistake) holds no items for a reader; the object's schema check reports it."""
    return value if isinstance(value, list) else []


def value_at(data: Any, path: Path) -> Any:
    """The value at `path` in parsed YAML, None when the path leaves the data (a missing key,
    an index past the list's end, a scalar where a mapping or list should be)."""
    for key in path:
        if isinstance(data, dict):
            data = data.get(key)
        elif isinstance(data, list) and isinstance(key, int) and 0 <= key < len(data):
            data = data[key]
        else:
            return None
    return data


class Severity(str, Enum):
    ERROR = "error"
    WARNING = "warning"
    INFO = "info"

    @property
    def rank(self) -> int:
        return {"info": 1, "warning": 2, "error": 3}[self.value]


Path = tuple[str | int, ...]


def dotted_path(path: Path) -> str:
    """A path as findings show it: `spec.replicatedJobs[1].template` (list indexes in brackets)."""
    out = ""
    for key in path:
        out += f"[{key}]" if isinstance(key, int) else (f".{key}" if out else str(key))
    return out


def existing_prefix(data: Any, path: Path) -> Path:
    """The longest prefix of `path` that exists in `data` (mapping keys, list indexes in range),
    so that a finding about a missing field can point at the nearest line that is there."""
    node = data
    for depth, key in enumerate(path):
        if isinstance(node, dict) and key in node:
            node = node[key]
        elif isinstance(node, list) and isinstance(key, int) and 0 <= key < len(node):
            node = node[key]
        else:
            return tuple(path[:depth])
    return tuple(path)


@dataclass(frozen=True)
class ObjectRef:
    """The Kubernetes object a finding is about (a workload, not its template)."""

    api_version: str | None
    kind: str | None
    namespace: str | None
    name: str | None

    def as_dict(self, container: str | None = None) -> dict[str, Any]:
        return {"apiVersion": self.api_version, "kind": self.kind, "namespace": self.namespace,
                "name": self.name, "container": container}

    def __str__(self) -> str:
        ns = f"{self.namespace}/" if self.namespace else ""
        return f"{self.kind}/{ns}{self.name}" if self.name else str(self.kind)


@dataclass(frozen=True)
class Violation:
    """What a rule's check function yields: where, what, and optional overrides.

    `path` is relative to what the rule was given (the pod spec for pod rules, the document
    root for kubelet rules); the engine turns it into a document path and a line/column.
    """

    path: Path
    message: str
    container: str | None = None
    severity: Severity | None = None      # overrides the rule's default (e.g. NG206 restricted: info)
    remediation: str | None = None        # overrides the rule's generic remediation
    # Whether the kubelet refuses this whatever the configuration's pool (a start-up refusal: an
    # error even where policy findings are capped); None: as the rule's tier says.
    refusal: bool | None = None
    # NG003: the later stage (numaguard.lint.load.later_stages) that renders the value first
    rendered_by: str | None = None


@dataclass(slots=True)      # many thousands live until the report is written
class Finding:
    rule: str
    name: str
    severity: Severity
    message: str
    remediation: str
    file: str | None = None
    line: int | None = None
    column: int | None = None
    object: ObjectRef | None = None
    container: str | None = None
    path: str = ""
    suppressed: bool = False
    suppress_reason: str | None = None
    baseline_state: str | None = None     # with a baseline: "new" or "unchanged" (SARIF's words)
    refusal: bool | None = None           # the rule's Violation.refusal: a start-up refusal on any tier
                                          # (None: as the rule's tier says); not in the report

    def as_dict(self) -> dict[str, Any]:
        return {
            "rule": self.rule, "name": self.name, "severity": self.severity.value,
            "file": self.file, "line": self.line, "column": self.column,
            "object": self.object.as_dict(self.container) if self.object else None,
            "path": self.path, "message": self.message, "remediation": self.remediation,
            "suppressed": self.suppressed,
            **({"suppressReason": self.suppress_reason} if self.suppress_reason else {}),
            **({"baselineState": self.baseline_state} if self.baseline_state else {}),
        }


SKIP_REASONS = ("not-kubernetes", "template", "patch", "unknown-kind",
                "dangling-symlink", "deletion")   # numaguard.lint.load.skips

RENDER_HINT = ("lint what they render: `helm template CHART | numaguard lint -` or "
               "`kustomize build DIR | numaguard lint -`")


@dataclass(frozen=True)
class Unread:
    """A part of the cluster `numaguard audit` could not read (the audit is then incomplete).
    `what` names it in the summary line ("the pods list after its first 2 pods", "the kubelet
    configuration of 1 node (a)"), `why` is what went wrong, `nodes` the nodes left unjudged
    (their kubelet configuration), `namespace` the namespace of a pods list read with -n.
    Every report says it in its own way: a PolicyReport `error` result, a SARIF tool
    execution notification, a JUnit error, a line of text."""
    what: str
    why: str
    nodes: tuple[str, ...] = ()
    namespace: str | None = None

    def __str__(self) -> str:
        return self.what

    def as_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"what": self.what, "why": self.why}
        if self.nodes:
            out["nodes"] = list(self.nodes)
        if self.namespace:
            out["namespace"] = self.namespace
        return out


def unread_phrases(unread: list[Unread]) -> list[str]:
    """The summary line's phrases: each list as it names itself, then the nodes whose kubelet
    configuration was not read, together ("the kubelet configuration of 2 nodes (a, b)")."""
    nodes = [node for piece in unread for node in piece.nodes]
    phrases = [piece.what for piece in unread if not piece.nodes]
    if nodes:
        shown = ", ".join(nodes[:3]) + (f" and {len(nodes) - 3} more" if len(nodes) > 3 else "")
        phrases.append(f"the kubelet configuration of {len(nodes):,} node{'' if len(nodes) == 1 else 's'} ({shown})")
    return phrases


# What took each object as meant for a managed pool, per tier (lint/README.md "Which pods are
# policy-checked" and "Which KubeletConfigurations are pool configurations"): the keys of
# `Summary.declared` and of the JSON report's `summary.declaredBy`, each tier's "assumed" (or,
# for NUMA fit, "unnamed") last. "pods": the policy tier of pods and pod templates (a pool
# they target, the `numaguard.io/scope: managed` annotation, `scope: all`); "numaFit": the pods
# simulated on a node description, by who named it (`--node`, the config's `node:`, their
# pool's `node:`; "unnamed": a node numaguard picked, as `audit` does, or a library caller's);
# "kubeletConfigurations": the pool requirements of kubelet configurations (a pool names or
# selects it, `scope: all`, the PodLevelResourceManagers gate).
TIERS: dict[str, tuple[str, ...]] = {
    "pods": ("pool", "annotation", "scopeAll", "assumed"),
    "numaFit": ("--node", "node", "poolNode", "unnamed"),
    "kubeletConfigurations": ("pool", "scopeAll", "gate", "assumed"),
}
_TIER_WORDS = {
    ("pods", "pool"): "pod(s) declared by a pool they target",
    ("pods", "annotation"): "pod(s) declared by numaguard.io/scope: managed",
    ("pods", "scopeAll"): "pod(s) declared by scope: all",
    ("numaFit", "--node"): "pod(s) declared by --node for NUMA fit",
    ("numaFit", "node"): "pod(s) declared by the config's node: for NUMA fit",
    ("numaFit", "poolNode"): "pod(s) declared by their pool's node: for NUMA fit",
    ("kubeletConfigurations", "pool"): "kubelet configuration(s) declared by a pool",
    ("kubeletConfigurations", "scopeAll"): "kubelet configuration(s) declared by scope: all",
    ("kubeletConfigurations", "gate"): "kubelet configuration(s) declared by the PodLevelResourceManagers gate",
    ("pods", "assumed"): "pod(s) assumed",
    ("numaFit", "unnamed"): "pod(s) simulated on a node no one named",
    ("kubeletConfigurations", "assumed"): "kubelet configuration(s) assumed",
}


def _no_declarations() -> dict[str, dict[str, int]]:
    return {objects: dict.fromkeys(ways, 0) for objects, ways in TIERS.items()}


@dataclass
class Summary:
    files: int = 0
    objects: int = 0
    skipped: int = 0                   # the total of skipped_by_reason
    unmanaged: int = 0
    # objects -> what declared them (TIERS) -> how many; "assumed": pods taken as meant for a
    # pool because none is configured, kubelet configurations held to the pool only by a
    # manager policy
    declared: dict[str, dict[str, int]] = field(default_factory=_no_declarations)
    counts: dict[str, int] = field(default_factory=lambda: {"error": 0, "warning": 0, "info": 0})
    suppressed: int = 0
    skipped_by_reason: dict[str, int] = field(default_factory=lambda: dict.fromkeys(SKIP_REASONS, 0))
    helm_charts: int = 0               # Chart.yaml files seen (their templates need rendering)
    # What another program renders first (numaguard.lint.load.later_stages), per stage: template
    # files skipped, and values inside judged objects that were not judged (NG003).
    rendered_files: dict[str, int] = field(default_factory=dict)
    rendered_values: dict[str, int] = field(default_factory=dict)
    rendered_hints: dict[str, str] = field(default_factory=dict)   # stage of a skipped file -> how to lint it
    dangling_symlinks: list[str] = field(default_factory=list)   # "link -> target", for the note
    unwalked: list[str] = field(default_factory=list)   # dependency directories a walk skipped
    baseline_unchanged: int | None = None     # with a baseline: findings it already records
    baseline_fixed: int | None = None         # with a baseline: its entries no longer found

    def add(self, other: Summary) -> None:
        """Add the counts of another batch (another file) of the same run."""
        self.files += other.files
        self.objects += other.objects
        self.skipped += other.skipped
        self.unmanaged += other.unmanaged
        for objects, ways in other.declared.items():
            for way, count in ways.items():
                self.declared[objects][way] += count
        for severity, count in other.counts.items():
            self.counts[severity] += count
        self.suppressed += other.suppressed
        for reason, count in other.skipped_by_reason.items():
            self.skipped_by_reason[reason] = self.skipped_by_reason.get(reason, 0) + count
        self.helm_charts += other.helm_charts
        for mine, theirs in ((self.rendered_files, other.rendered_files),
                             (self.rendered_values, other.rendered_values)):
            for stage, count in theirs.items():
                mine[stage] = mine.get(stage, 0) + count
        self.rendered_hints.update(other.rendered_hints)
        self.dangling_symlinks += other.dangling_symlinks

    @property
    def assumed_managed(self) -> int:
        """Pods taken as meant for a managed pool because none is configured."""
        return self.declared["pods"]["assumed"]

    @property
    def assumed_kubelets(self) -> int:
        """Kubelet configurations held to the pool requirements only by a manager policy."""
        return self.declared["kubeletConfigurations"]["assumed"]

    def declare(self, objects: str, way: str | None) -> None:
        """Count one object of `objects` (a TIERS key) as declared by `way` (None: no tier)."""
        if way is not None:
            self.declared[objects][way] += 1

    def tiers_line(self) -> str | None:
        """What declared the objects, per tier, in words ("3 pod(s) declared by --node for NUMA
        fit, 7 pod(s) assumed"): the declared ones first, then the assumed; None when no object
        was taken as meant for a managed pool."""
        said = [f"{self.declared[objects][way]} {words}" for (objects, way), words in _TIER_WORDS.items()
                if self.declared[objects][way]]
        return ", ".join(said) or None

    def skip(self, reason: str) -> None:
        self.skipped += 1
        self.skipped_by_reason[reason] = self.skipped_by_reason.get(reason, 0) + 1

    def render_hint(self) -> str | None:
        """One line for the run when templates were skipped or a Helm chart was seen."""
        templates = self.skipped_by_reason.get("template", 0)
        if not templates and not self.helm_charts:
            return None
        what = []
        if templates:
            what.append(f"{templates} template file(s) skipped{_by_stage(self.rendered_files)}")
        if self.helm_charts:
            what.append(f"{self.helm_charts} Helm chart(s) found")
        # Helm's (and kustomize's) hint first, then each other stage's own
        hints = [RENDER_HINT] if self.helm_charts or "Helm" in self.rendered_files or \
            not self.rendered_hints else []
        hints += [hint for stage, hint in sorted(self.rendered_hints.items()) if stage != "Helm"]
        return f"{' and '.join(what)}; {'; '.join(hints)}"

    def rendered_note(self) -> str | None:
        """One line for a run in which values another program renders first were not judged."""
        count = sum(self.rendered_values.values())
        if not count:
            return None
        return (f"{count} value(s) that another program renders first were not judged"
                f"{_by_stage(self.rendered_values)}; each is an NG003 info saying which program and how to "
                f"lint what it renders")

    def assumed_hint(self) -> str | None:
        """One line for a run with pods or kubelet configurations only assumed to be for a
        managed pool: how many, that their policy findings were warnings, and what to
        configure to enforce them."""
        said = []
        named = sum(n for way, n in self.declared["numaFit"].items() if way != "unnamed")
        if self.assumed_managed:
            said.append(f"{self.assumed_managed} pod(s) with pod-level cpu/memory were assumed to be meant "
                        f"for a managed pool because no pool is configured, so their policy findings are "
                        f"warnings, not errors"
                        + (" (what the kubelet is predicted to do on a node description you named keeps its "
                           "severity)" if named else "")
                        + "; to enforce the policy, declare the pools in .numaguard.yaml (pools: nodeLabels, "
                          "taint) or annotate the pools' pods numaguard.io/scope: managed")
        if self.assumed_kubelets:
            said.append(f"{self.assumed_kubelets} kubelet configuration(s) set a NUMA manager policy, but no "
                        f"declared pool names or selects them and they leave the PodLevelResourceManagers gate "
                        f"off, so their pool requirements are warnings, not errors; to enforce them, turn the "
                        f"gate on, name their files in a pool's kubeletConfigs in .numaguard.yaml (a platform "
                        f"object that selects nodes joins the pool whose nodeLabels it selects) or set scope: all")
        return ". ".join(said) or None

    def dangling_note(self) -> str | None:
        """One line naming the symlinks that point at nothing (skipped, counted)."""
        if not self.dangling_symlinks:
            return None
        return (f"{len(self.dangling_symlinks)} dangling symlink(s) skipped, nothing to read: "
                f"{', '.join(self.dangling_symlinks)}")

    def unwalked_note(self) -> str | None:
        """One line naming the dependency directories (vendor/, node_modules/) not walked."""
        if not self.unwalked:
            return None
        return (f"{len(self.unwalked)} dependency folder(s) not walked (vendor/, node_modules/: other "
                f"projects' files): {', '.join(self.unwalked)}; set lintDependencies: true in "
                f".numaguard.yaml, or name them on the command line, to lint them")

    def as_dict(self) -> dict[str, Any]:
        out = {"files": self.files, "objects": self.objects, "skipped": self.skipped,
               "skippedByReason": dict(self.skipped_by_reason),
               "unmanaged": self.unmanaged, "assumedManaged": self.assumed_managed,
               "assumedKubelets": self.assumed_kubelets,
               "assumedHint": self.assumed_hint(),
               "declaredBy": {objects: dict(ways) for objects, ways in self.declared.items()}, **self.counts,
               "suppressed": self.suppressed, "hint": self.render_hint()}
        if self.rendered_files or self.rendered_values:
            out["renderedLater"] = {"files": dict(self.rendered_files), "values": dict(self.rendered_values)}
        if self.unwalked:
            out["unwalked"] = list(self.unwalked)
        if self.baseline_unchanged is not None:
            out["baselineUnchanged"] = self.baseline_unchanged
            out["baselineFixed"] = self.baseline_fixed or 0
        return out


def _by_stage(counts: dict[str, int]) -> str:
    """" (Helm 20, Jinja 1)": counts per later stage, largest first."""
    if not counts:
        return ""
    return " (" + ", ".join(f"{stage} {n}" for stage, n in sorted(counts.items(), key=lambda i: (-i[1], i[0]))) + ")"


DEFAULT_POOL_NAME = "default"        # the pool of `pool:` (the one-pool shorthand) and of a bare --pool DIR
POOL_NAME = r"^[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$"    # as lint/schemas/config.json says


@dataclass(frozen=True)
class NodeSelection:
    """Which nodes an object's settings reach, as far as the object says: the node labels of a
    node selector (`kind` "selector": every node carrying at least these), or the labels a node
    group gives its nodes (`kind` "labels"), and where that is written in the object."""

    labels: dict[str, str]
    path: Path = ()
    kind: str = "selector"          # "selector" or "labels"
    taints: tuple[dict[str, str], ...] = ()     # kind "labels": the taints it gives its nodes


@dataclass(frozen=True)
class PoolSettings:
    """One managed node pool as the config file declares it: how its pods, nodes and kubelet
    configurations are recognised, and the node description its NUMA fit is simulated on."""

    node_labels: dict[str, str] = field(default_factory=dict)
    taint: dict[str, str] | None = None       # {key, value, effect}
    kubelet_configs: tuple[str, ...] = ()     # globs naming the pool's KubeletConfiguration files
    name: str = DEFAULT_POOL_NAME
    node: str | None = None                   # node description path or builtin:NAME (None: the default)
    count: int | None = None                  # its node count for `numaguard plan` (None: not given)

    @property
    def recognises_pods(self) -> bool:
        """Whether pods can be told to target this pool (by its labels or its taint)."""
        return bool(self.node_labels or self.taint)

    def has_node(self, labels: Any, taints: Any = ()) -> bool:
        """Whether a node with these labels (and `spec.taints`) is one of the pool's: it carries
        every label of `nodeLabels`, or, for a pool declared by its taint alone, the taint."""
        if self.node_labels:
            return isinstance(labels, dict) and all(
                labels.get(key) == value for key, value in self.node_labels.items())
        if self.taint:
            return any(isinstance(t, dict) and t.get("key") == self.taint.get("key")
                       and (t.get("value") or "") == (self.taint.get("value") or "")
                       and (not self.taint.get("effect") or t.get("effect") == self.taint.get("effect"))
                       for t in taints or ())
        return False

    def selected_by(self, selection: NodeSelection | None) -> bool:
        """Whether an object whose nodes are `selection` configures this pool's nodes: a node
        group whose labels include every pool label (for a pool known by its taint alone: that
        gives its nodes the taint), or a node selector that every pool node satisfies (its
        labels are among the pool's) or that only pool nodes satisfy (it requires every pool
        label)."""
        if selection is None:
            return False
        if not self.node_labels:        # a pool known by its taint: node groups that give it
            return selection.kind == "labels" and self.has_node({}, selection.taints)
        if not selection.labels:
            return False
        wanted, given = self.node_labels.items(), selection.labels.items()
        if wanted <= given:
            return True
        return selection.kind == "selector" and given <= wanted
