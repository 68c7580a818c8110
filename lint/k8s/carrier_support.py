"""What the carriers of §5 share: kubelet flags beside a configuration, the nodes a carrier
configures, judging only what a carrier shows, and kubelet settings embedded in a text field.

* `FlaggedKubelet` is a `PlatformKubelet` whose configuration also comes from kubelet
  command-line flags (Talos `extraArgs`, nodeadm `spec.kubelet.flags`): the flags are laid over
  the configuration as the kubelet does (`kubelet_flags.ParsedFlags.apply`: a flag wins over the
  file and every drop-in), a finding on a value a flag set points at that argument and names
  it, and a flag the kubelet refuses stops everything else (the kubelet exits on its command
  line before it reads any configuration).
* `node_labels`/`node_taints` are what the platform object gives its nodes (an eksctl node
  group's `labels`/`taints`, Talos' `machine.nodeLabels`/`nodeTaints`): they become the
  carrier's `nodes` (a `NodeSelection` of kind "labels"), which decides its pool.
* `shown` (a set of top-level KubeletConfiguration fields) marks a carrier that only overrides a
  base numaguard cannot know (an Ubuntu EKS AMI, GKE's own settings): only findings about those
  fields are kept.
* `embedded_findings` schema-checks a KubeletConfiguration that sits inside a text (a data URL,
  user data) and points its findings at the field holding the text, naming the inner field.
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any, Iterable

from numaguard.lint.k8s.kubelet_flags import FlagArg, ParsedFlags, parse_flags
from numaguard.lint.k8s.kubelet_layers import Place
from numaguard.lint.k8s.kubelet_schema import decode_kubelet_config
from numaguard.lint.k8s.platforms import PlatformKubelet
from numaguard.lint.model import NodeSelection, Path, Severity, Violation

FLAG_FIX = ("Remove the argument or give it a value the kubelet reads; the kubelet stops on the "
            "first flag it cannot parse. Settings that have a KubeletConfiguration field are "
            "better set in the configuration than as flags.")

# The field a rule's finding is about when it points at no field (the setting is missing).
RULE_SUBJECT = {"NG201": "featureGates", "NG202": "featureGates", "NG203": "cpuManagerPolicy",
                "NG204": "memoryManagerPolicy", "NG205": "topologyManagerScope",
                "NG206": "topologyManagerPolicy", "NG207": "reservedSystemCPUs",
                "NG208": "reservedMemory", "NG210": "featureGates", "NG213": "featureGates"}


@dataclass
class FlaggedKubelet(PlatformKubelet):
    """A PlatformKubelet with kubelet flags over its configuration (module doc). `flags_field`
    names where the arguments are written (for messages); `shown`, when set, limits the
    findings to those top-level fields."""

    flags: ParsedFlags | None = None
    flags_field: str = ""
    shown: frozenset[str] | None = None
    node_labels: dict[str, str] = field(default_factory=dict)
    node_labels_path: Path = ()
    node_taints: tuple[dict[str, str], ...] = ()
    places: dict[str, str] = field(default_factory=dict)   # top-level field -> the file or
                                                           # text it was written in (messages)
    overridden: frozenset[str] = frozenset()    # fields of `written` a later layer overrides

    def __post_init__(self) -> None:
        if self.shown is not None:
            self.base_known = False     # it only overrides a base numaguard cannot know
        # the labels and taints it gives its nodes decide its pool (`PlatformKubelet.nodes`)
        if self.nodes is None and (self.node_labels or self.node_taints):
            self.nodes = NodeSelection(dict(self.node_labels), self.node_labels_path, kind="labels",
                                       taints=tuple(self.node_taints))

    def document_path(self, path: Path) -> Path:
        origin = self.flag_origin(tuple(path))
        if origin is not None:
            return origin
        if path and path[0] in self.overridden:
            return self.origins.get(path[0], self.fallback)
        return super().document_path(path)

    def flag_origin(self, path: Path) -> Path | None:
        """The argument that set the value at `path`, if a flag did. A feature gate the flag
        does not name came from the configuration (gates are merged one by one)."""
        if self.flags is None or not path:
            return None
        if path[0] == "featureGates" and len(path) > 1 and path[:2] not in self.flags.origins:
            return None
        return self.flags.origin_of(path)

    def adjust(self, rule_id: str, v: Violation) -> Violation | None:
        if self.flags is not None and value_refused(self.flags) and rule_id != "NG002":
            return None             # a setting is missing: the kubelet exits on it (the flag's finding says so)
        if self.shown is not None and rule_id != "NG002" and _subject(rule_id, v) not in self.shown:
            return None             # about what the unknown base decides, not what the carrier shows
        subject = RULE_SUBJECT.get(rule_id)
        if not v.path and subject in self.origins:
            v = replace(v, path=(subject,))       # a missing setting: point where it would be written
        v = super().adjust(rule_id, v)
        if v is None or self.flag_origin(tuple(v.path)) is None:
            return v
        word = _flag_word(self.flags, tuple(v.path))
        return replace(v, message=f"{v.message} [set by the kubelet flag {word} in {self.flags_field}]")


@dataclass
class MappedKubelet(FlaggedKubelet):
    """A carrier whose settings have names of the platform's own (Gardener's `memoryAvailable`,
    Bottlerocket's `cpu-manager-policy`): `sources` maps a kubelet path to the place the value
    was written (in this document, or a companion of the same file); a finding points at the
    longest such prefix, else at the fallback."""

    sources: dict[Path, Place] = field(default_factory=dict)
    notes: dict[str, str] = field(default_factory=dict)   # kubelet field -> what a stage left out of it
    fallback_place: Place | None = None                  # the fallback in another document

    def place(self, path: Path) -> Place:
        for depth in range(len(path), 0, -1):
            found = self.sources.get(tuple(path[:depth]))
            if found is not None:
                return found
        if self.fallback_place is not None:
            return Place(self.fallback_place.path, self.fallback_place.document, shown=False)
        return Place(self.fallback, shown=False)

    def document_path(self, path: Path) -> Path:
        return self.place(tuple(path)).path

    def adjust(self, rule_id: str, v: Violation) -> Violation | None:
        subject = RULE_SUBJECT.get(rule_id)
        if not v.path and (subject,) in self.sources:
            v = replace(v, path=(subject,))    # a missing setting: point where the platform's is written
        return super().adjust(rule_id, v)


def _subject(rule_id: str, v: Violation) -> str | None:
    return str(v.path[0]) if v.path else RULE_SUBJECT.get(rule_id)


def _flag_word(flags: ParsedFlags, path: Path) -> str:
    for depth in range(len(path), 0, -1):
        word = flags.words.get(tuple(path[:depth]))
        if word is not None:
            return word
    return "?"


def notes_only(platform: str, fallback: Path, extra: list[tuple[str, Violation]]) -> FlaggedKubelet:
    """A carrier with nothing to judge but what the platform says about it (a refusal, a
    setting that has no effect, a file it cannot read)."""
    carrier = FlaggedKubelet(platform, {}, {}, (), fallback=fallback, shown=frozenset())
    carrier.extra.extend(extra)
    return carrier


# pflag's errors for a flag whose value is lost (kubelet_flags: `_set_flag`, `parse_flags`); an
# unknown flag or a stray word also stops the kubelet, but leaves every setting as written, so
# the other checks still say something useful.
_VALUE_LOST = ('invalid argument "', "flag needs an argument", "bad flag syntax")


def value_refused(flags: ParsedFlags) -> bool:
    """Whether the command line loses a flag's value (the other findings would then judge a
    configuration without it)."""
    return any(p.fatal and any(marker in p.message for marker in _VALUE_LOST) for p in flags.problems)


def read_flags(args: Iterable[FlagArg]) -> tuple[ParsedFlags, list[tuple[str, Violation]]]:
    """(the parsed command line, its problems as NG002 findings at the arguments: errors where
    the kubelet refuses to start, warnings where it only prints a deprecation)."""
    flags = parse_flags(args)
    extra = [("NG002", Violation(problem.origin, problem.message,
                                 severity=None if problem.fatal else Severity.WARNING, remediation=FLAG_FIX))
             for problem in flags.problems]
    return flags, extra


def embedded_findings(config: dict, where: Path, label: str) -> tuple[dict, list[tuple[str, Violation]], bool]:
    """Schema-check a KubeletConfiguration kept inside a text: (the configuration without the
    fields the kubelet ignores, NG002 findings at `where` naming the inner field, whether the
    kubelet cannot decode it at all)."""
    body = {"apiVersion": "kubelet.config.k8s.io/v1beta1", "kind": "KubeletConfiguration", **config}
    decoded = decode_kubelet_config(body)
    extra = [("NG002", replace(v, path=where, message=f"{label}: {v.message}")) for v in decoded.violations]
    # decode_kubelet_config's `effective` already lacks the unknown fields, as the kubelet's does
    effective = {k: v for k, v in decoded.effective.items() if k not in ("apiVersion", "kind")}
    return effective, extra, decoded.fatal


def mergo_untyped(base: Any, overlay: Any) -> Any:
    """`overlay` merged over `base` as mergo.Merge(WithOverride) merges two
    map[string]interface{} (nodeadm's NodeConfig merge, internal/util/merge.go): nested maps
    key by key, an empty value (null, "", 0, false, empty list or map) never overrides."""
    if not isinstance(overlay, dict) or not isinstance(base, dict):
        return overlay if not mergo_empty(overlay) else base
    out = dict(base)
    for key, value in overlay.items():
        if mergo_empty(value):
            continue
        out[key] = mergo_untyped(out.get(key), value) if isinstance(value, dict) else value
    return out


def mergo_empty(value: Any) -> bool:
    """A value mergo never copies over an existing one."""
    return value is None or value is False or value == "" or value == [] or value == {} or (
        isinstance(value, (int, float)) and not isinstance(value, bool) and value == 0)


__all__ = ["FlaggedKubelet", "MappedKubelet", "notes_only", "read_flags", "embedded_findings", "mergo_untyped", "mergo_empty", "RULE_SUBJECT", "FLAG_FIX"]
