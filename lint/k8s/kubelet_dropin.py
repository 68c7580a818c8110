"""Kubelet drop-ins: the main KubeletConfiguration merged with the files of `--config-dir`.

Mirrors `mergeKubeletConfigurations` in `cmd/kubelet/app/server.go` (KEP-3983, GA in 1.35):
the kubelet loads the main file (`--config`) with its defaults applied, marshals it to JSON,
then walks the drop-in directory (`filepath.WalkDir`: lexical order, subdirectories included)
and applies every file whose name ends in `.conf` as a JSON merge patch (RFC 7386,
`jsonpatch.MergePatch`): mappings are merged key by key, any other value (lists included)
replaces the earlier one, and `null` deletes. The merged result is what the kubelet validates
and runs with (kubernetes.io "Kubelet Configuration Directory Merging").

Which files belong together is numaguard's convention, the one EKS's nodeadm writes
(`/etc/kubernetes/kubelet/config.json` with `--config-dir
/etc/kubernetes/kubelet/config.json.d`, user settings in `40-nodeadm.conf`): the drop-ins of
`<dir>/<name>` are the `*.conf` files under `<dir>/<name>.d/`.
"""
from __future__ import annotations

import copy
import re
from typing import Any

from numaguard.lint.k8s.kubelet import DEFAULT_EVICTION_HARD

DROPIN_SUFFIX = ".conf"
DROPIN_DIR_SUFFIX = ".d"


def dropin_owner(source: str | None) -> str | None:
    """The main configuration a drop-in file belongs to by the `<main>.d/` convention, or None
    when `source` is not a `*.conf` file inside such a directory."""
    if not source or not source.endswith(DROPIN_SUFFIX):
        return None
    parts = re.split(r"[\\/]", source)
    for i in range(len(parts) - 2, -1, -1):
        name = parts[i]
        if name.endswith(DROPIN_DIR_SUFFIX) and len(name) > len(DROPIN_DIR_SUFFIX):
            separator = "\\" if "\\" in source and "/" not in source else "/"
            return separator.join(parts[:i] + [name[: -len(DROPIN_DIR_SUFFIX)]])
    return None


def walk_order(source: str | None) -> tuple[str, ...]:
    """A sort key giving the order `filepath.WalkDir` visits files in: lexical name by name down
    the path, a folder's files where the folder's name sorts (`20-b/30-c.conf` before
    `20-b-late.conf`), which the whole path compared as one string does not give ('-' < '/')."""
    return tuple(re.split(r"[\\/]", source or ""))


def merge_patch(target: Any, patch: Any) -> Any:
    """RFC 7386 JSON merge patch (what `jsonpatch.MergePatch` computes); inputs are not changed."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    result = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = merge_patch(result.get(key), value)
    return result


def merge_kubelet_configs(main: dict, dropins: list[dict]) -> dict:
    """The configuration the kubelet runs with: `main`, then each drop-in in order.

    The kubelet merges onto the main file *after* its defaults are applied, so a drop-in that
    sets some `evictionHard` signals keeps the default ones for the others (the main file's
    own evictionHard, when it has one, replaces the defaults as usual). Other defaults do not
    interact with a merge (scalars simply override), so they are left to the readers of the
    result."""
    merged: Any = dict(main)
    if dropins and "evictionHard" not in main and any(
            isinstance(d.get("evictionHard"), dict) for d in dropins):
        merged["evictionHard"] = dict(DEFAULT_EVICTION_HARD)
    for dropin in dropins:
        body = {k: v for k, v in dropin.items() if k not in ("apiVersion", "kind")}
        merged = merge_patch(merged, body)
    return merged


def value_exists(data: Any, path: tuple) -> bool:
    """Whether `path` (keys and list indexes) leads to a value in `data`."""
    for step in path:
        if isinstance(data, dict) and not isinstance(step, int) and step in data:
            data = data[step]
        elif isinstance(data, list) and isinstance(step, int) and 0 <= step < len(data):
            data = data[step]
        else:
            return False
    return True


def origin_index(parts: list[Any], path: tuple) -> tuple[int, int]:
    """(which part set the effective value at `path`, how many steps of `path` it has): the
    last part (main = 0, then the drop-ins in merge order) holding the longest prefix of
    `path`; (0, 0) when no part has any of it (a default)."""
    for depth in range(len(path), 0, -1):
        for i in range(len(parts) - 1, -1, -1):
            if value_exists(parts[i], path[:depth]):
                return i, depth
    return 0, 0
