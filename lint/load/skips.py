"""Files in a repository that are not Kubernetes objects as written, and why.

A GitOps repository holds more than manifests: Helm templates and Jinja templates (which
become manifests only once rendered), a chart's `Chart.yaml` and `values.yaml`, kustomize's
`kustomization.yaml` and the patches it names (partial objects, merged into a base), Ansible
task lists, CI and documentation configs. None of them is applied to the API server as it
stands, so none of them is judged as an object: each document is skipped with one of the
reasons below and counted in the summary, and templates get a hint on how to lint what they
render. This module recognises them from a file's place and text; the engine decides the rest
from a document's content (`numaguard.lint.engine`).
"""
from __future__ import annotations

import os
import re
from functools import lru_cache
from typing import Any

NOT_KUBERNETES = "not-kubernetes"    # a list, no `kind`, Chart.yaml, kustomization.yaml, ...
TEMPLATE = "template"                # Helm or Jinja source: lint what it renders
PATCH = "patch"                      # a kustomize patch or a `$patch: delete` document
UNKNOWN_KIND = "unknown-kind"        # a Kubernetes object of a kind numaguard does not judge
DANGLING_SYMLINK = "dangling-symlink"   # a symlink to nothing: no file to read (a note names it)
REASONS = (NOT_KUBERNETES, TEMPLATE, PATCH, UNKNOWN_KIND, DANGLING_SYMLINK)

HELM_CHART = "Helm chart"            # Document.skip_detail of a Chart.yaml (shows the hint)
HELM_VALUES = "Helm values"

KUSTOMIZATION_NAMES = ("kustomization.yaml", "kustomization.yml", "Kustomization")
_PATCH_FIELDS = ("patches", "patchesStrategicMerge", "patchesJson6902")
_ANCESTORS_SEARCHED = 4              # kustomizations reach patches as `x.yaml`, `patches/x.yaml`, `../x.yaml`

# Helm's built-in objects and functions: in a manifest's own strings (a Prometheus rule's
# `{{ $labels.pod }}`, an Argo CD notification's `{{.app.metadata.name}}`) they do not occur.
_HELM_MARKERS = re.compile(r"\{\{-?\s*(?:[^}]*?\.(?:Values|Release|Chart|Capabilities|Files)\b"
                           r"|(?:include|template|tpl|toYaml)\b)")
# A template tag where YAML structure is, not inside a quoted string: opening a line, a list
# item, or a mapping value (`{{- if .Values.x }}`, `- {{ item }}`, `replicas: {{ n }}`).
_UNQUOTED_TAG = re.compile(r"^[ \t]*(?:-[ \t]+)?(?:[^\s#'\"{][^#'\"{]*?:[ \t]+)?\{[{%#]", re.M)
_TEMPLATE_OPENERS = ("{{", "{%", "{#")


def looks_templated(text: str, parse_failed: bool) -> bool:
    """Whether the text is template source: a file that does not load as YAML with a template
    tag where YAML structure is; or, loading or not, one using Helm's own objects (`.Values`,
    `include`...). Plain manifests carry Go templates in their strings (alert annotations,
    notifications), and a manifest that is broken is still reported as broken."""
    if not any(opener in text for opener in _TEMPLATE_OPENERS):
        return False
    if _HELM_MARKERS.search(text) is not None:
        return True
    return parse_failed and _UNQUOTED_TAG.search(text) is not None


def is_helm_template(path: str) -> bool:
    """A file under a chart's `templates/` directory (a `Chart.yaml` beside that directory)."""
    parts = os.path.normpath(os.path.abspath(path)).split(os.sep)
    for i in range(len(parts) - 1, 0, -1):
        if parts[i] == "templates" and _is_file(os.sep.join(parts[:i] + ["Chart.yaml"])):
            return True
    return False


def is_chart_file(path: str) -> bool:
    return os.path.basename(path) == "Chart.yaml"


_VALUES_NAME = re.compile(r"(?:.*[-_.])?values(?:[-_.].*)?\.ya?ml\Z")


def is_helm_values(path: str) -> bool:
    """A values file of a chart (`values.yaml`, `ci/daemonset-values.yaml`, `values-prod.yaml`
    with a Chart.yaml in its directory or one of the two above). Values may say `kind:
    DaemonSet` (a chart option), which makes them look like a broken object."""
    if not _VALUES_NAME.match(os.path.basename(path)):
        return False
    directory = os.path.dirname(os.path.abspath(path))
    for _ in range(3):
        if _is_file(os.path.join(directory, "Chart.yaml")):
            return True
        directory = os.path.dirname(directory)
    return False


def is_kustomization(path: str) -> bool:
    return os.path.basename(path) in KUSTOMIZATION_NAMES


def is_kustomize_patch(path: str) -> bool:
    """Whether a kustomization in the file's directory or one of the few above it names the
    file under `patches`, `patchesStrategicMerge` or `patchesJson6902`."""
    target = os.path.normpath(os.path.abspath(path))
    directory = os.path.dirname(target)
    for _ in range(_ANCESTORS_SEARCHED):
        if target in _patches_named_in(directory):
            return True
        parent = os.path.dirname(directory)
        if parent == directory:
            break
        directory = parent
    return False


@lru_cache(maxsize=4096)
def _is_file(path: str) -> bool:
    return os.path.isfile(path)


@lru_cache(maxsize=4096)
def _patches_named_in(directory: str) -> frozenset[str]:
    """Absolute paths of the patch files the kustomization in `directory` names (none when
    there is none or it does not load)."""
    import yaml

    for name in KUSTOMIZATION_NAMES:
        candidate = os.path.join(directory, name)
        if not _is_file(candidate):
            continue
        try:
            with open(candidate, encoding="utf-8") as handle:
                data = yaml.load(handle, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
        except Exception:           # an unreadable kustomization is linted (and reported) itself
            return frozenset()
        return frozenset(os.path.normpath(os.path.join(directory, p)) for p in _patch_paths(data))
    return frozenset()


def _patch_paths(kustomization: Any) -> list[str]:
    """`patches: [{path}]`, `patchesJson6902: [{path}]`, `patchesStrategicMerge: [path]`;
    inline patches (a `patch:` text, or a YAML string in patchesStrategicMerge) name no file."""
    if not isinstance(kustomization, dict):
        return []
    found = []
    for field in _PATCH_FIELDS:
        entries = kustomization.get(field)
        if not isinstance(entries, list):
            continue
        for entry in entries:
            path = entry.get("path") if isinstance(entry, dict) else entry
            if isinstance(path, str) and "\n" not in path and path.strip():
                found.append(path.strip())
    return found
