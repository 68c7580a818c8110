"""Kubelet settings assembled from several places, and where each effective value came from.

Platforms keep a node's kubelet settings in layers: a base configuration the platform
generates, then the user's KubeletConfiguration or patches (merged in order), then command-line
flags, which win over everything (`kubelet_flags`). A layer may sit in the carrier's own
document, in another document of the same file (kubeadm's KubeletConfiguration beside its
InitConfiguration), or inside a string that holds YAML or JSON (a kind patch, a Cluster API
file's content). `Place` says where a value sits, so that a finding is reported at the
carrier's own field, at the line inside the embedded text when it has one.

`LayeredSettings` merges the layers and answers `locate(path)`: the argument that set the
field, else the last layer holding it (the longest prefix of the path), else the carrier's
fallback place (then the value is the platform's or the kubelet's default).
"""
from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Any, Iterable

from numaguard.lint.k8s.kubelet_dropin import merge_patch, value_exists
from numaguard.lint.k8s.kubelet_flags import ParsedFlags
from numaguard.lint.load.later_stages import LaterStage, not_judged, value_stage
from numaguard.lint.load.skips import TEMPLATE
from numaguard.lint.model import Path, Severity, Violation

SELF = "self"                 # Place.document: the carrier's own document
COMPANION = "companion"       # another document of the same file the carrier takes as its base


@dataclass(frozen=True)
class EmbeddedText:
    """YAML or JSON held in a string value of the document: the parsed documents (with their
    own positions, counted from the string's first line) and what the string looked like."""

    text: str
    documents: tuple[Any, ...]

    @property
    def multiline(self) -> bool:
        """A block scalar (`|`): its text ends with a newline even when it has one line."""
        return "\n" in self.text


@dataclass(frozen=True)
class Place:
    """Where a setting sits: `path` in a document (`document`: SELF or COMPANION); when
    `text` is set, `path` leads to the string and `inner` is the path inside its parsed
    document number `text_index`. `shown` is False for the carrier's fallback (the value is
    a default nobody wrote here)."""

    path: Path
    document: str = SELF
    text: EmbeddedText | None = None
    text_index: int = 0
    inner: Path = ()
    shown: bool = True

    def within(self, inner: Path) -> "Place":
        """The place `inner` further down."""
        if self.text is not None:
            return Place(self.path, self.document, self.text, self.text_index, self.inner + tuple(inner))
        return Place(self.path + tuple(inner), self.document)

    def dotted(self) -> Path:
        """The path a finding shows: the document path, continued into an embedded text."""
        return self.path + self.inner


def embedded_position(string_mark: tuple[int, int], last_step: Any, inner: tuple[int, int],
                      multiline: bool) -> tuple[int, int]:
    """The document line and column of position `inner` (1-based, counted in the string)
    of a string whose value starts at `string_mark`.

    A multi-line string is a block scalar (`|`): its first line is the line after the
    indicator. Its indentation is not kept by the parser; the usual layout is assumed: a list
    item's block (`- |`) starts at the indicator's column, a mapping value's block
    (`content: |`) two columns right of its key. A one-line string counts from its mark."""
    line, column = string_mark
    inner_line, inner_column = inner
    if not multiline:
        return line, column + inner_column - 1
    base = column if isinstance(last_step, int) else column - len(str(last_step))
    return line + inner_line, max(base, 1) + inner_column - 1


# ----------------------------------------------------------------------------------- layers

MERGE = "merge"               # RFC 7386 merge patch (kind patches, kubeadm +merge, drop-ins)
STRATEGIC = "strategic"       # kubeadm's default patch type; on KubeletConfiguration (no patch
                              # strategies in its type) it merges as a merge patch does
JSON6902 = "json"             # RFC 6902 operations
REPLACE = "replace"           # a whole configuration (the base)


@dataclass
class Layer:
    """One source of settings in merge order: its data (a partial KubeletConfiguration, or
    the operations of a JSON patch), how it merges, where it sits, and how messages name it."""

    data: Any
    place: Place
    mode: str = MERGE
    label: str = ""
    touched: dict[Path, Path] = field(default_factory=dict)   # JSON patch: config path -> op path


@dataclass
class LayeredSettings:
    """The effective configuration of `layers` (then `flags`) and where each value came from."""

    layers: list[Layer]
    flags: ParsedFlags | None = None
    fallback: Place = Place(())
    problems: list[tuple[Place, str]] = field(default_factory=list)   # layers that do not apply

    def merged(self) -> dict:
        """The layers merged in order (flags not yet applied)."""
        config: Any = {}
        for layer in self.layers:
            config = apply_layer(config, layer, self.problems)
        return config if isinstance(config, dict) else {}

    def effective(self) -> dict:
        config = self.merged()
        return self.flags.apply(config) if self.flags is not None else config

    def locate(self, path: Path) -> Place:
        path = tuple(path)
        if self.flags is not None and path:
            origin = self.flags.origin_of(path)
            if origin is not None:
                return origin if isinstance(origin, Place) else Place(tuple(origin))
        for depth in range(len(path), 0, -1):
            for layer in reversed(self.layers):
                if layer.mode == JSON6902:
                    if path[:depth] in layer.touched:
                        return layer.place.within(layer.touched[path[:depth]])
                elif layer.mode != REPLACE or layer.place.shown:
                    if isinstance(layer.data, dict) and value_exists(layer.data, path[:depth]):
                        return layer.place.within(path[:depth])
        return self.fallback


def apply_layer(config: Any, layer: Layer, problems: list[tuple[Place, str]]) -> Any:
    """`layer` applied over `config` (inputs unchanged). A JSON patch that fails is reported in
    `problems` (the platform stops with that error) and leaves `config` as it was."""
    if layer.mode == REPLACE:
        return copy.deepcopy(layer.data)
    if layer.mode == JSON6902:
        import jsonpatch          # RFC 6902, as evanphx/json-patch applies it for kind and kubeadm

        try:
            return jsonpatch.apply_patch(copy.deepcopy(config), layer.data)
        except (jsonpatch.JsonPatchException, jsonpatch.JsonPointerException, TypeError, ValueError) as err:
            problems.append((layer.place, f"{layer.label or 'the JSON patch'} does not apply: {err}"))
            return config
    return merge_patch(config, layer.data)


def json_patch_touches(operations: Any) -> dict[Path, Path]:
    """Which configuration paths the operations of a JSON patch write, and where each
    operation's value sits (for findings): {("cpuManagerPolicy",): (0, "value")}."""
    touched: dict[Path, Path] = {}
    for i, op in enumerate(operations if isinstance(operations, list) else []):
        if isinstance(op, dict) and op.get("op") in ("add", "replace", "copy", "move") \
                and isinstance(op.get("path"), str):
            steps = tuple(_pointer_step(s) for s in op["path"].split("/")[1:])
            touched[steps] = (i, "value") if "value" in op else (i, "path")
    return touched


def _pointer_step(step: str) -> str | int:
    step = step.replace("~1", "/").replace("~0", "~")
    return int(step) if step.isdigit() else step




# What holds whatever the configuration under a carrier is, when that base is unknown: a
# verdict on the value of the field the finding points at, which the carrier set (flags win
# over any file; a patch sets what it shows). Verdicts that also read other fields, or the
# absence of one, need the base: NG202 (a gate not set), NG207/NG208/NG220/NG221/NG224
# (reservations and cgroups), a gate's dependencies (NG210) and gated or policy-bound options
# (NG211), and NG222's note that reservedMemory is ignored without the Static policy.
SHOWN_RULES = frozenset({"NG201", "NG203", "NG204", "NG205", "NG206", "NG209", "NG210", "NG211",
                         "NG222", "NG223"})
_BASE_DEPENDENT_VERDICTS = ("depends on features", "not enabled, but option", "None policy",
                            "single-numa-node", "is ignored")


def judge_shown_only(carrier: Any, rule_id: str, violation: Any) -> Any:
    """An adjuster (`PlatformKubelet.adjusters`) for a carrier over an unknown base: keeps a
    finding only when it holds whatever that base is, drops it otherwise."""
    if rule_id not in SHOWN_RULES or any(text in violation.message for text in _BASE_DEPENDENT_VERDICTS):
        return None
    return violation if carrier.place(tuple(violation.path)).shown else None


def parse_embedded(text: str, source: str) -> tuple[EmbeddedText | None, str | None]:
    """The YAML (or JSON) documents of a string value, with positions counted from its first
    line; (None, the parser's message) when it does not parse."""
    from numaguard.lint.load.documents import load_text

    documents, errors = load_text(text, source, whole_file=False)
    if errors:
        error = errors[0]
        where = f"line {error.line}: " if error.line else ""
        return None, f"{where}{error.message}"
    template = next((d.skip_detail for d in documents if d.skip == TEMPLATE), None)
    if template is not None:
        return None, f"it is {template} source, not YAML"
    return EmbeddedText(text, tuple(d.data for d in documents if d.data is not None)), None


def unread_patch(place: Place, label: str, text: str, error: str | None, stages: Iterable[LaterStage],
                 refusal: str) -> tuple[str, Place, Violation]:
    """The notice for an embedded patch that does not parse: NG003 when the text holds an
    expression of a later stage that renders it first (what the patch sets is then unknown),
    else NG002 with the platform's `refusal` and the parser's `error`."""
    found = value_stage(text, stages)
    if found is not None:
        stage, expression = found
        return "NG003", place, Violation((), not_judged(label, stage, expression), severity=Severity.INFO,
                                         remediation=stage.hint, rendered_by=stage.name)
    return "NG002", place, Violation((), f"{refusal}: {error}")


__all__ = ["Place", "EmbeddedText", "Layer", "LayeredSettings", "embedded_position", "merge_patch",
           "apply_layer", "json_patch_touches", "parse_embedded", "unread_patch", "judge_shown_only", "SHOWN_RULES", "SELF", "COMPANION", "MERGE",
           "STRATEGIC", "JSON6902", "REPLACE"]
