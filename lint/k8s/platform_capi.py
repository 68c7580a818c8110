"""Cluster API: the kubelets of machines bootstrapped by the kubeadm bootstrap provider.

kubernetes-sigs/cluster-api `api/bootstrap/kubeadm/v1beta1|v1beta2/kubeadmconfig_types.go`
(`KubeadmConfigSpec`: initConfiguration, joinConfiguration, files) and `kubeadm_types.go`
(`NodeRegistrationOptions.kubeletExtraArgs`: a map of strings in v1beta1, a list of
`{name, value}` with unique names in v1beta2; `Patches.directory`; `File.encoding`: base64,
gzip, gzip+base64), `api/controlplane/kubeadm/*/kubeadm_control_plane_types.go`
(`spec.kubeadmConfigSpec`). Cluster API gives kubeadm no KubeletConfiguration: every kubelet
starts from kubeadm's defaults (`platform_kubeadm.KUBEADM_DEFAULTS`; the kubelet-config
ConfigMap that joining machines read holds them too), changed only by kubeadm patches and the
extra arguments. A KubeadmControlPlane's first machine runs `kubeadm init`, the others
`kubeadm join`; a KubeadmConfig(Template) runs what it configures (join when it configures
neither).

kubeadm patches (`cmd/kubeadm/app/util/patches/patches.go`): the files of
`patches.directory` named `target[suffix][+patchtype].extension`, target
`kubeletconfiguration`, patch type strategic (the default), merge or json, extension json or
yaml (anything else is ignored with a warning; an unknown patch type after `+` stops kubeadm),
applied in the lexical order of their names to the KubeletConfiguration kubeadm writes.
Cluster API writes such files from `files` (content inline, possibly encoded).
"""
from __future__ import annotations

import base64
import gzip
import posixpath
import re
from dataclasses import replace
from typing import Any

from numaguard.lint.k8s.kubelet_layers import JSON6902, MERGE, REPLACE, STRATEGIC, Layer, Place, json_patch_touches, \
    parse_embedded, unread_patch
from numaguard.lint.k8s.platform_kubeadm import (KUBEADM_DEFAULTS, KUBEADM_SOURCE, kubeadm_node, read_extra_args,
                                                  runs_windows)
from numaguard.lint.k8s.platforms import PlatformError, PlatformKubelet
from numaguard.lint.load.later_stages import CAPI_FILE_TEMPLATE, CLOUD_INIT_JINJA, ENV_VARIABLE, LaterStage
from numaguard.lint.model import Path, Severity, Violation

# kind (of the groups numaguard.lint.k8s.platform_registry gives it) -> path of the
# KubeadmConfigSpec, and whether its machines run init, join or both.
SPEC_PATHS: dict[str, tuple[Path, tuple[str, ...] | None]] = {
    "KubeadmConfig": (("spec",), None),
    "KubeadmConfigTemplate": (("spec", "template", "spec"), None),
    "KubeadmControlPlane": (("spec", "kubeadmConfigSpec"), ("init", "join")),
    "KubeadmControlPlaneTemplate": (("spec", "template", "spec", "kubeadmConfigSpec"), ("init", "join")),
}
_PATCH_NAME = re.compile(r"^(kubeletconfiguration)([^.+\n]*)?(\+)?(json|merge|strategic)?")
_PATCH_MODES = {"json": JSON6902, "merge": MERGE, "strategic": STRATEGIC, None: STRATEGIC}
_PATCH_FIX = ("Name kubelet patches `kubeletconfiguration[suffix][+strategic|merge|json].yaml|json`, put them "
              "in the directory the InitConfiguration/JoinConfiguration `patches.directory` names, and "
              "write their content so that kubeadm can read it.")


def capi_kubeadm(doc: dict) -> list[PlatformKubelet | PlatformError]:
    api_version, kind = str(doc.get("apiVersion")), str(doc.get("kind"))
    spec_path, phases = SPEC_PATHS[kind]
    spec: Any = doc
    for depth, key in enumerate(spec_path, start=1):
        spec = spec.get(key) if isinstance(spec, dict) else None
        if spec is None:
            spec = {}              # nothing configured: kubeadm's defaults, joined with no arguments
            break
        if not isinstance(spec, dict):
            raise PlatformError(spec_path[:depth], f"{'.'.join(spec_path[:depth])} must be a mapping")
    # kubeletExtraArgs: a map of strings in v1alpha3 and v1alpha4 (kubeadm's v1beta1 types
    # embedded, internal/api/bootstrap/kubeadm/v1alpha3/upstream_types.go :218,
    # .../v1alpha4/kubeadm_types.go :212) and v1beta1 (api/bootstrap/kubeadm/v1beta1/
    # kubeadm_types.go :285); a list of {name, value} in v1beta2 (v1beta2/kubeadm_types.go :395).
    # (platform_registry.API_VERSIONS lets no other version reach this reader.)
    as_list = api_version.endswith("/v1beta2")
    stages = machine_stages(spec)
    if phases is None:
        phases = tuple(p for p in ("init", "join") if f"{p}Configuration" in spec) or ("join",)
    carriers: list[PlatformKubelet | PlatformError] = []
    for phase in phases:
        key = f"{phase}Configuration"
        section = spec.get(key) if isinstance(spec.get(key), dict) else {}
        registration = section.get("nodeRegistration") if isinstance(section.get("nodeRegistration"), dict) else {}
        where = spec_path + (key,)
        try:
            args = read_extra_args(registration.get("kubeletExtraArgs"),
                                   Place(where + ("nodeRegistration", "kubeletExtraArgs")), as_list)
        except PlatformError as err:
            carriers.append(err)
            continue
        patches_dir = (section.get("patches") or {}).get("directory") if isinstance(section.get("patches"), dict) \
            else None
        layers, notices, known = _patch_layers(spec, spec_path, patches_dir, where, phase, stages)
        fallback = Place(where if key in spec else spec_path)
        carrier = kubeadm_node(f"Cluster API {kind} ({'kubeadm init' if phase == 'init' else 'kubeadm join'})",
                               args, [Layer(KUBEADM_DEFAULTS, Place((), shown=False), REPLACE, label=KUBEADM_SOURCE)]
                               + layers, base_known=known, fallback=fallback, notices=notices,
                               windows=runs_windows(registration), stages=stages)
        carriers.append(carrier)
    return carriers


def machine_stages(spec: dict) -> tuple[LaterStage, ...]:
    """What renders a machine's kubeadm strings before kubeadm reads them: clusterctl's
    variables always (the template is rendered before it is applied); cloud-init's Jinja for the
    default `format: cloud-config` (Cluster API starts that user data with `## template:
    jinja`), but not for `format: ignition`, where a `{{ }}` reaches kubeadm as written."""
    if spec.get("format") == "ignition":
        return (ENV_VARIABLE,)
    return (ENV_VARIABLE, CLOUD_INIT_JINJA)


def _patch_layers(spec: dict, spec_path: Path, directory: Any, where: Path, phase: str,
                  stages: tuple[LaterStage, ...]) -> tuple[list, list, bool]:
    """The kubeletconfiguration patches this phase reads from `files`, in kubeadm's order, and
    warnings for patch files it never reads. A patch that only parses once a later stage has
    rendered it is not judged (NG003) and leaves the configuration unknown; one that parses is
    judged, and its values holding an expression are left to the engine (NG003 for each)."""
    files = spec.get("files") if isinstance(spec.get("files"), list) else []
    found: list[tuple[str, int, dict]] = []
    notices: list = []
    known = True
    for i, item in enumerate(files):
        if not isinstance(item, dict) or not isinstance(item.get("path"), str):
            continue
        name = posixpath.basename(item["path"])
        if not name.startswith("kubeletconfiguration"):
            continue
        place = Place(spec_path + ("files", i, "path"))
        in_dir = isinstance(directory, str) and directory and \
            posixpath.normpath(item["path"]).startswith(posixpath.normpath(directory).rstrip("/") + "/")
        if not in_dir:
            if phase == "join" or "initConfiguration" not in spec:     # said once, by one phase
                notices.append(("NG002", place, Violation((), (
                    f"kubeadm never reads this kubelet patch: {'no patches.directory is set' if not directory else f'it is not under patches.directory {directory}'} "
                    f"in {'.'.join(map(str, where))}"), severity=Severity.WARNING, remediation=_PATCH_FIX)))
            continue
        found.append((name, i, item))
    layers = []
    for name, i, item in sorted(found):
        place = Place(spec_path + ("files", i, "path"))
        match = _PATCH_NAME.match(name)
        if not re.match(r".+\.(json|yaml)$", name):
            notices.append(("NG002", place, Violation((), (
                f'kubeadm ignores {name}: "the file extension must be one of [json yaml]"'),
                severity=Severity.WARNING, remediation=_PATCH_FIX)))
            continue
        if match.group(3) and match.group(4) is None:
            notices.append(("NG002", place, Violation((), (
                f"kubeadm stops: {name}: unknown or missing patch type after '+', must be one of "
                f"[json merge strategic]"), remediation=_PATCH_FIX)))
            continue
        text, content_place, embedded_ok = _content(item, spec_path + ("files", i))
        if text is None:
            known = False
            notices.append(("NG002", content_place, Violation((), (
                f"{name}: numaguard cannot read this patch's content ({content_place.path[-1]}); the kubelet "
                f"settings it makes are not judged"), severity=Severity.INFO, remediation=_PATCH_FIX)))
            continue
        file_stages = ((CAPI_FILE_TEMPLATE,) if item.get("contentFormat") == "Template" else ()) + stages
        embedded, error = parse_embedded(text, "")
        if embedded is None:
            notice = unread_patch(content_place, name, text, error, file_stages, f"kubeadm cannot read {name}")
            known = known and notice[0] != "NG003"       # what a rendered patch sets is unknown
            notices.append(notice if notice[0] == "NG003" else
                           (notice[0], notice[1], replace(notice[2], remediation=_PATCH_FIX)))
            continue
        mode = _PATCH_MODES[match.group(4)]
        for j, data in enumerate(embedded.documents):
            at = Place(content_place.path, text=embedded if embedded_ok else None, text_index=j)
            if mode == JSON6902:
                layers.append(Layer(data, at, JSON6902, label=name, touched=json_patch_touches(data)))
            elif isinstance(data, dict):
                layers.append(Layer({k: v for k, v in data.items() if k not in ("apiVersion", "kind")}, at, mode,
                                    label=name))
    return layers, notices, known


def _content(item: dict, path: Path) -> tuple[str | None, Place, bool]:
    """The text of a file, where it sits, and whether its lines are the document's (plain)."""
    content = item.get("content")
    place = Place(path + ("content",))
    if not isinstance(content, str):
        return None, Place(path + ("contentFrom",) if "contentFrom" in item else path), False
    encoding = item.get("encoding") or ""
    try:
        if encoding == "base64":
            return base64.b64decode(content).decode(), place, False
        if encoding == "gzip+base64":
            return gzip.decompress(base64.b64decode(content)).decode(), place, False
    except (ValueError, OSError, UnicodeDecodeError):
        return None, place, False
    return (content, place, True) if encoding == "" else (None, place, False)


__all__ = ["capi_kubeadm", "machine_stages", "SPEC_PATHS"]
