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

from numaguard.lint.load.later_stages import placeholder_stage, template_stage

NOT_KUBERNETES = "not-kubernetes"    # a list, no `kind`, Chart.yaml, kustomization.yaml, ...
TEMPLATE = "template"                # Helm or Jinja source: lint what it renders
PATCH = "patch"                      # a kustomize patch or a `$patch: delete` document
UNKNOWN_KIND = "unknown-kind"        # a Kubernetes object of a kind numaguard does not judge
DANGLING_SYMLINK = "dangling-symlink"   # a symlink to nothing: no file to read (a note names it)
DELETION = "deletion"                # a manifest that asks for its object's deletion (OpenShift CVO)
REASONS = (NOT_KUBERNETES, TEMPLATE, PATCH, UNKNOWN_KIND, DANGLING_SYMLINK, DELETION)

HELM_CHART = "Helm chart"            # Document.skip_detail of a Chart.yaml (shows the hint)
HELM_VALUES = "Helm values"

KUSTOMIZATION_NAMES = ("kustomization.yaml", "kustomization.yml", "Kustomization")
_PATCH_FIELDS = ("patches", "patchesStrategicMerge", "patchesJson6902")
_ANCESTORS_SEARCHED = 4              # kustomizations reach patches as `x.yaml`, `patches/x.yaml`, `../x.yaml`

def looks_templated(text: str, parse_failed: bool) -> bool:
    """Whether the text is template source (`later_stages.template_stage`)."""
    return template_stage(text, parse_failed) is not None


def placeholder_at(text: str, line: int | None, column: int | None) -> bool:
    """Whether the parse error at 1-based (line, column) sits on a placeholder a program or a
    reader fills in (`name: %s`, `code: %EKS_ACTIVATION_CODE%`, `image: {user}/app`)."""
    return placeholder_stage(text, (line, column)) is not None


# A key that makes a text a (possibly broken) Kubernetes object: `apiVersion:` or `kind:`, quoted
# or not, in YAML or JSON, at any depth. Case is ignored: a misspelt key still says "object".
_OBJECT_KEY = re.compile(r"""(?i)(?<![\w-])["']?(?:apiversion|kind)["']?[ \t]*:""")
_MIME_HEADER = re.compile(r"\AMIME-Version:[ \t]*1\.0[ \t]*\r?$", re.I | re.M)
MIME_MESSAGE = "a MIME message (instance user data), not YAML"
UNPARSED_NON_OBJECT = "does not parse, and names no apiVersion or kind"


def unparsed_non_object(text: str) -> str | None:
    """Why a text that does not parse is no Kubernetes object (the Document.skip_detail), or
    None when it may be a broken one and stays NG001: a MIME message (cloud-init and EC2 user
    data start with a `MIME-Version: 1.0` header); or a text in which no `apiVersion:` or `kind:`
    key appears at all (KEP metadata, a JSON dashboard with a comment header, a test's
    deliberately malformed input). A text that names either key anywhere is kept as an object."""
    if _MIME_HEADER.match(text.lstrip()):
        return MIME_MESSAGE
    return None if _OBJECT_KEY.search(text) else UNPARSED_NON_OBJECT


BINARY = "a binary file (not text), names no apiVersion or kind"


def binary_non_object(raw: bytes) -> bool:
    """Whether bytes that are not text (not UTF-8/UTF-16, or holding NUL bytes) name no
    `apiVersion:` or `kind:` key anywhere: a DER key or an image with a manifest's extension,
    no object. Bytes that name either are taken for a manifest gone wrong (NG001)."""
    return _OBJECT_KEY.search(raw.decode("latin-1")) is None


# The OpenShift cluster-version operator deletes, rather than creates, the object of a release
# manifest annotated `release.openshift.io/delete: "true"`; the manifest's other fields "have no
# effect" (openshift/enhancements dev-guide/cluster-version-operator/dev/object-deletion.md,
# openshift/cluster-version-operator lib/resourcedelete/helper.go `ValidDeleteAnnotation`: any
# other value stops the operator, so only "true" marks a deletion).
CVO_DELETE_ANNOTATION = "release.openshift.io/delete"
CVO_DELETION = "deleted by the OpenShift cluster-version operator (release.openshift.io/delete)"


def is_cvo_deletion(data: Any) -> bool:
    metadata = data.get("metadata") if isinstance(data, dict) else None
    annotations = metadata.get("annotations") if isinstance(metadata, dict) else None
    return isinstance(annotations, dict) and annotations.get(CVO_DELETE_ANNOTATION) == "true"


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
    return _named_by_kustomization(path, _PATCH_FIELDS)


def is_kustomize_input(path: str) -> bool:
    """Whether a kustomization in the file's directory or one of the few above it names the file
    among its `resources` or patches: kustomize reads it (and refuses a key given twice)."""
    return _named_by_kustomization(path, _PATCH_FIELDS + ("resources",))


def _named_by_kustomization(path: str, fields: tuple[str, ...]) -> bool:
    target = os.path.normpath(os.path.abspath(path))
    directory = os.path.dirname(target)
    for _ in range(_ANCESTORS_SEARCHED):
        if target in _files_named_in(directory, fields):
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
def _files_named_in(directory: str, fields: tuple[str, ...]) -> frozenset[str]:
    """Absolute paths of the files the kustomization in `directory` names under `fields` (none
    when there is none or it does not load)."""
    data = _kustomization_in(directory)
    return frozenset(os.path.normpath(os.path.join(directory, p)) for p in _named_paths(data, fields))


@lru_cache(maxsize=4096)
def _kustomization_in(directory: str) -> Any:
    import yaml

    for name in KUSTOMIZATION_NAMES:
        candidate = os.path.join(directory, name)
        if not _is_file(candidate):
            continue
        try:
            with open(candidate, encoding="utf-8") as handle:
                return yaml.load(handle, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
        except Exception:           # an unreadable kustomization is linted (and reported) itself
            return None
    return None


def _named_paths(kustomization: Any, fields: tuple[str, ...]) -> list[str]:
    """`patches: [{path}]`, `patchesJson6902: [{path}]`, `patchesStrategicMerge: [path]`,
    `resources: [path]`; inline patches (a `patch:` text, or a YAML string in
    patchesStrategicMerge) name no file."""
    if not isinstance(kustomization, dict):
        return []
    found = []
    for field in fields:
        entries = kustomization.get(field)
        if not isinstance(entries, list):
            continue
        for entry in entries:
            path = entry.get("path") if isinstance(entry, dict) else entry
            if isinstance(path, str) and "\n" not in path and path.strip():
                found.append(path.strip())
    return found
