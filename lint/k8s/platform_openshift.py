"""OpenShift `MachineConfig` (machineconfiguration.openshift.io/v1): kubelet drop-ins written as
Ignition files.

A MachineConfig's `spec.config` is an Ignition config (openshift/api
`machineconfiguration/v1/types.go` `MachineConfigSpec.Config`); `storage.files[*]` are files
written on the node, `contents.source` a URL, in practice an RFC 2397 data URL (`data:,` with
percent-encoding, or `data:[<media type>];base64,`), optionally gzip-compressed
(`contents.compression: gzip`). The Machine Config Operator starts the kubelet with
`--config=/etc/kubernetes/kubelet.conf --config-dir=/etc/openshift/kubelet.conf.d`
(templates/worker/01-worker-kubelet/_base/units/kubelet.service.yaml), so every `*.conf` file a
MachineConfig writes under that directory is a kubelet drop-in: the kubelet merges the drop-ins
in lexical order as JSON merge patches over the main file (`kubelet_dropin`), and the MCO's own
`20-auto-sizing.conf` (node-sized `systemReserved`) is one of them (`openshift_base`). A
MachineConfig that writes `/etc/kubernetes/kubelet.conf` itself replaces the base.

One carrier per MachineConfig that writes a drop-in (or the main file): the MCO's base, the
drop-ins in the order the kubelet merges them. Findings point at the `contents.source` of the
file that set the value (`spec.config.storage.files[N].contents.source`) and name the field
inside it. Unlike a `KubeletConfig`, a drop-in does not go through the MCO's merge: nothing
clears the base's `systemReservedCgroup` when a drop-in sets `reservedSystemCPUs`, and the
kubelet refuses that (NG209).
"""
from __future__ import annotations

import gzip
import posixpath
import re
import urllib.error
import urllib.request
from dataclasses import dataclass
from typing import Any, Iterator

from numaguard.lint.k8s.carrier_support import FlaggedKubelet, embedded_findings, notes_only, read_flags
from numaguard.lint.k8s.kubelet_flags import CONFIG_DIR_FLAG, CONFIG_FLAG, FlagArg
from numaguard.lint.k8s.openshift_base import openshift_resolve, tell_cluster_gates
from numaguard.lint.k8s.systemd_unit import kubelet_command
from numaguard.lint.k8s.kubelet_dropin import merge_kubelet_configs, walk_order
from numaguard.lint.k8s.openshift_base import (AUTO_SIZING_DROPIN, DROPIN_DIR, KUBELET_CONF, MCO_KUBELET_CONF,
                                               MCO_SOURCE, auto_sizing_dropin)
from numaguard.lint.k8s.platforms import PlatformError, auto_sized_reserved_memory
from numaguard.lint.load.documents import load_text
from numaguard.lint.model import NodeSelection, Path, Severity, Violation, items

ROLE_LABEL = "machineconfiguration.openshift.io/role"
NODE_ROLE_PREFIX = "node-role.kubernetes.io/"
FILES: Path = ("spec", "config", "storage", "files")
DROPIN_FIX = ('A drop-in is merged by the kubelet itself, after the Machine Config Operator: with '
              'reservedSystemCPUs, also set systemReservedCgroup: "" and enforceNodeAllocatable: '
              '["pods"] in the drop-in (kubelet.conf sets /system.slice and '
              'system-reserved-compressible), or set these fields in a KubeletConfig, which the '
              'operator merges and adjusts for you.')


class DataURLError(ValueError):
    """A `contents.source` numaguard cannot read."""


def read_source(contents: Any) -> str | None:
    """The text an Ignition `contents` writes: a data URL decoded (RFC 2397, by urllib's
    DataHandler, which also reads the base64 form), gunzipped with `compression: gzip`. None for
    an empty file; DataURLError for a URL that is not a data URL or does not decode."""
    if not isinstance(contents, dict) or contents.get("source") in (None, ""):
        return None
    source = str(contents["source"])
    if not source.startswith("data:"):
        raise DataURLError(f"a {source.split(':', 1)[0]}: URL, fetched when the node is configured: "
                           f"numaguard cannot read it")
    try:
        with urllib.request.DataHandler().data_open(urllib.request.Request(source)) as response:
            data = response.read()
    except (ValueError, urllib.error.URLError) as err:
        raise DataURLError(f"not a data URL the node can decode ({err})") from None
    if contents.get("compression") == "gzip":
        try:
            data = gzip.decompress(data)
        except (OSError, EOFError) as err:
            raise DataURLError(f"compression: gzip, but the data is not gzip ({err})") from None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise DataURLError("the data is not UTF-8 text") from None


def is_dropin(path: str) -> bool:
    """A file the kubelet's `--config-dir` walk picks up (`*.conf` at any depth)."""
    return path.startswith(DROPIN_DIR + "/") and path.endswith(".conf") and not path.endswith("/.conf")


def machine_config(doc: dict) -> Iterator[FlaggedKubelet | PlatformError]:
    files: Any = doc
    for key in FILES:
        files = files.get(key) if isinstance(files, dict) else None
    if files is not None and not isinstance(files, list):
        yield PlatformError(FILES, "spec.config.storage.files must be a list")
        return
    extra: list[tuple[str, Violation]] = []
    unit = _kubelet_unit(doc, extra)
    main: tuple[dict, Path] | None = None
    dropins: list[tuple[str, dict, Path]] = []
    for i, entry in enumerate(files or ()):
        path = entry.get("path") if isinstance(entry, dict) else None
        if not isinstance(path, str) or not (is_dropin(posixpath.normpath(path)) or path == KUBELET_CONF):
            continue
        where = FILES + (i, "contents", "source") if isinstance(entry.get("contents"), dict) and \
            "source" in entry["contents"] else FILES + (i,)
        label = f"{'drop-in' if path != KUBELET_CONF else 'kubelet configuration'} {path}"
        try:
            text = read_source(entry.get("contents"))
        except DataURLError as err:
            extra.append(("NG002", Violation(where, f"{label}: {err}", severity=Severity.INFO,
                                             remediation="Write the file's content as a data URL so "
                                                         "that it can be checked.")))
            continue
        config = _parse(text or "", label, where, extra)
        if config is None:
            continue
        config, problems, fatal = embedded_findings(config, where, label)
        extra += problems
        if fatal:
            continue
        if path == KUBELET_CONF:
            main = (config, where)
        else:
            dropins.append((posixpath.normpath(path), config, where))
    if main is None and not dropins and unit is None:
        if extra:
            yield notes_only("OpenShift MachineConfig", FILES, extra)
        return
    yield _carrier(doc, main, dropins, extra, unit)


UNITS: Path = ("spec", "config", "systemd", "units")
KUBELET_UNIT = "kubelet.service"
_NAMES = re.compile(r"\$\{?([A-Za-z_][A-Za-z0-9_]*)")


@dataclass
class KubeletUnit:
    """The kubelet's command line a MachineConfig's `kubelet.service` gives (its `contents`,
    replacing the MCO's unit, or drop-ins resetting `ExecStart=`): the parsed flags, where the
    text is, and whether the kubelet still reads the MCO's kubelet.conf and drop-in directory."""

    flags: Any
    where: Path
    reads_base: bool
    reads_dropins: bool


def _kubelet_unit(doc: dict, extra: list) -> KubeletUnit | None:
    """The kubelet's flags from `spec.config.systemd.units[kubelet.service]`, None when no unit
    of this MachineConfig changes the kubelet's command line (its drop-ins only set other
    things, and the MCO's own ExecStart stands)."""
    units: Any = doc
    for key in UNITS:
        units = units.get(key) if isinstance(units, dict) else None
    if not isinstance(units, list):
        return None
    for i, unit in enumerate(units):
        if not isinstance(unit, dict) or unit.get("name") != KUBELET_UNIT:
            continue
        texts: list[tuple[str, Path]] = []
        if isinstance(unit.get("contents"), str):
            texts.append((unit["contents"], UNITS + (i, "contents")))
        dropins = [(d, j) for j, d in enumerate(items(unit.get("dropins"))) if isinstance(d, dict)]
        for dropin, j in sorted(dropins, key=lambda pair: str(pair[0].get("name", ""))):   # systemd: name order
            if isinstance(dropin.get("contents"), str):
                texts.append((dropin["contents"], UNITS + (i, "dropins", j, "contents")))
        command = kubelet_command([text for text, _ in texts])
        if not command.found:
            continue
        if command.container is not None:
            extra.append(("NG002", Violation(texts[-1][1], (
                f"the kubelet runs from the container image {command.container}: its version, and so the flags it "
                f"takes, are the image's, not judged"), severity=Severity.INFO,
                remediation="Run the node's own kubelet (/usr/bin/kubelet) to have its command line checked.")))
            return None
        if command.unexpanded:
            names = sorted({name for word, _ in command.unexpanded for name in _NAMES.findall(word)})
            extra.append(("NG002", Violation(texts[command.unexpanded[0][1]][1], (
                f"{len(command.unexpanded)} kubelet argument(s) take their value from variables systemd expands "
                f"from an EnvironmentFile when the unit starts ({', '.join(names)}): not judged"),
                severity=Severity.INFO, remediation="Set the value in the unit's Environment= or in the "
                                                    "argument itself to have it checked.")))
        flags, problems = read_flags(FlagArg(word, texts[index][1]) for word, index in command.words)
        extra.extend(problems)
        config = flags.command_line.get(CONFIG_FLAG, (None,))[0]
        config_dir = flags.command_line.get(CONFIG_DIR_FLAG, (None,))[0]
        return KubeletUnit(flags, texts[command.words[0][1]][1] if command.words else texts[0][1],
                           reads_base=config == KUBELET_CONF, reads_dropins=config_dir == DROPIN_DIR)
    return None


def _parse(text: str, label: str, where: Path, extra: list) -> dict | None:
    documents, errors = load_text(text, label, whole_file=False)
    if errors:
        extra.append(("NG002", Violation(where, f"{label}: the kubelet cannot load it: {errors[0].message}")))
        return None
    data = [d.data for d in documents if d.data is not None]
    if not data:
        return {}
    config = data[0]
    if len(data) > 1 or not isinstance(config, dict) or config.get("kind") != "KubeletConfiguration" or \
            not str(config.get("apiVersion", "")).startswith("kubelet.config.k8s.io/"):
        extra.append(("NG002", Violation(where, f"{label}: the kubelet reads a drop-in as one "
                                                f"KubeletConfiguration document (apiVersion "
                                                f"kubelet.config.k8s.io/v1beta1, kind "
                                                f"KubeletConfiguration), and this is not one")))
        return None
    return {str(k): v for k, v in config.items() if k not in ("apiVersion", "kind")}


def _carrier(doc: dict, main: tuple[dict, Path] | None, dropins: list[tuple[str, dict, Path]],
             extra: list, unit: KubeletUnit | None = None) -> FlaggedKubelet:
    auto, dynamic = auto_sizing_dropin(None, None)
    if unit is not None and not unit.reads_dropins:
        # the unit's kubelet reads no --config-dir: neither the MCO's 20-auto-sizing.conf nor these
        for _, _, where in dropins:
            extra.append(("NG002", Violation(where, f"not read: the kubelet.service of this MachineConfig starts "
                                                    f"the kubelet without --config-dir={DROPIN_DIR}",
                                             severity=Severity.WARNING,
                                             remediation=f"Keep --config-dir={DROPIN_DIR} on the kubelet's "
                                                         f"command line.")))
        dropins, auto, dynamic = [], {}, frozenset()
    # in the order the kubelet's filepath.WalkDir visits them (a folder where its name sorts)
    parts = sorted([(AUTO_SIZING_DROPIN, auto, None)] + dropins, key=lambda part: walk_order(part[0]))
    base = main[0] if main is not None else {k: v for k, v in MCO_KUBELET_CONF.items()
                                              if k not in ("apiVersion", "kind")}
    config = merge_kubelet_configs(base, [body for _, body, _ in parts])
    config.update({"apiVersion": "kubelet.config.k8s.io/v1beta1", "kind": "KubeletConfiguration"})
    # Where each top-level field was last set, in merge order: the file's contents.source and
    # its path (named in the messages); the MCO's own drop-in points nowhere in particular.
    origins: dict[str, Path] = {}
    places: dict[str, str] = {}
    for path, body, where in ([(KUBELET_CONF, main[0], main[1])] if main else []) + parts:
        for name in body:
            if where is None:
                origins.pop(name, None)
                places.pop(name, None)
            else:
                origins[name], places[name] = where, path
    written = {name for _, body, _ in dropins for name in body}
    platform_set = {} if main is not None else {
        name: f"{name}: {_show(value)} is set by {MCO_SOURCE} in {KUBELET_CONF}"
        for name, value in MCO_KUBELET_CONF.items() if name not in ("apiVersion", "kind") and name not in written}
    # systemReserved cpu/memory are the node's own unless a drop-in after 20-auto-sizing.conf sets them
    pinned = {f"systemReserved.{r}" for path, body, _ in dropins if walk_order(path) > walk_order(AUTO_SIZING_DROPIN)
              and isinstance(body.get("systemReserved"), dict) for r in body["systemReserved"]}
    unknown = dynamic - pinned
    labels = doc.get("metadata", {}).get("labels") if isinstance(doc.get("metadata"), dict) else None
    role = labels.get(ROLE_LABEL) if isinstance(labels, dict) else None
    if unit is not None:
        config = unit.flags.apply(config)
    carrier = FlaggedKubelet("OpenShift MachineConfig", config, {}, (), origins=origins, fallback=FILES,
                             flags=unit.flags if unit is not None else None,
                             flags_field=".".join(map(str, unit.where)) if unit is not None else "",
                             shown=None if unit is None or unit.reads_base else frozenset(unit.flags.settings),
                             platform_set=platform_set, unknown=unknown, adjusters=(_dropin_adjust,),
                             places=places,
                             node_labels={NODE_ROLE_PREFIX + str(role): ""} if role else {},
                             node_labels_path=("metadata", "labels", ROLE_LABEL) if role else (),
                             # every node of the role's MachineConfigPool gets it: a selector
                             nodes=NodeSelection({NODE_ROLE_PREFIX + str(role): ""},
                                                 ("metadata", "labels", ROLE_LABEL)) if role else None)
    carrier.extra.extend(extra)
    carrier.resolve = openshift_resolve(carrier)
    return carrier


def _dropin_adjust(carrier: FlaggedKubelet, rule_id: str, v: Violation) -> Violation | None:
    places = carrier.places
    if rule_id == "NG221" and (not v.path or v.path[0] not in places):
        return None              # the MCO's own systemReserved.cpu (20-auto-sizing.conf)
    v = auto_sized_reserved_memory(carrier, rule_id, tell_cluster_gates(carrier, rule_id, v))
    message, remediation = v.message, v.remediation
    if v.path and v.path[0] in places:
        message = f"{message} [in {places[v.path[0]]}: {'.'.join(map(str, v.path))}]"
    if rule_id == "NG209" and "systemReservedCgroup" in carrier.platform_set:
        remediation = DROPIN_FIX
    return Violation(v.path, message, v.container, v.severity, remediation)


def _show(value: Any) -> str:
    return value if isinstance(value, str) else str(value).lower() if isinstance(value, bool) else str(value)


__all__ = ["machine_config", "read_source", "is_dropin", "DataURLError"]
