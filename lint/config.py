"""The configuration file (`.numaguard.yaml`), validated against a JSON Schema shipped with
the package (`lint/schemas/config.json`). A bad file is the user's to fix before anything is
linted, so it is an error with the path of the bad key (the CLI exits 2), not a finding."""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path as FsPath
from typing import Any

from numaguard.lint.model import PoolSettings, Severity

CONFIG_FILE_NAME = ".numaguard.yaml"


class ConfigError(ValueError):
    pass


@dataclass(frozen=True)
class Config:
    kubernetes_version: tuple[int, int] = (1, 37)
    scope_all: bool = False
    pool: PoolSettings = PoolSettings()
    node: str | None = None                      # node description path or builtin:NAME
    severities: dict[str, Severity | None] = field(default_factory=dict)   # None = off
    exclude: tuple[str, ...] = ()
    fail_on: str = "error"
    webhook_mode: str = "enforce"
    webhook_namespace_modes: dict[str, str] = field(default_factory=dict)   # namespace -> mode
    base_dir: str = "."                          # where relative paths in the file resolve

    def names_pool_kubelet_config(self, source: str | None) -> bool:
        """Whether `pool.kubeletConfigs` names this file (globs relative to the config file's
        folder, or to the working directory; `**` crosses folders; a pattern without `/`
        matches a file name anywhere, like `exclude:`)."""
        if not source or not self.pool.kubelet_configs:
            return False
        import os

        from numaguard.lint.load.files import _excluder

        matches = _excluder(self.pool.kubelet_configs)
        relative = os.path.relpath(source, self.base_dir).replace(os.sep, "/")
        return matches(source.replace(os.sep, "/"), relative)


def parse_version(text: str) -> tuple[int, int]:
    major, _, minor = str(text).partition(".")
    if not (major.isdigit() and minor.isdigit()):
        raise ConfigError(f"kubernetesVersion: {text!r} is not a version like \"1.37\"")
    return int(major), int(minor)


def config_from_dict(data: Any, base_dir: str = ".") -> Config:
    """Validate and convert; raises ConfigError naming the bad key's path."""
    import jsonschema          # slow to import; only needed when a config is present

    schema = json.loads(resources.files("numaguard.lint").joinpath("schemas/config.json").read_text())
    if data is None:
        data = {}
    errors = sorted(jsonschema.Draft202012Validator(schema).iter_errors(data),
                    key=lambda e: list(map(str, e.absolute_path)))
    if errors:
        first = errors[0]
        where = ".".join(map(str, first.absolute_path)) or "(top level)"
        raise ConfigError(f"{where}: {first.message}")
    pool = data.get("pool") or {}
    return Config(
        kubernetes_version=parse_version(data.get("kubernetesVersion", "1.37")),
        scope_all=data.get("scope") == "all",
        pool=PoolSettings(node_labels=dict(pool.get("nodeLabels") or {}), taint=pool.get("taint"),
                          kubelet_configs=tuple(pool.get("kubeletConfigs") or ())),
        node=data.get("node"),
        severities={rid: None if sev == "off" else Severity(sev)
                    for rid, sev in (data.get("rules") or {}).items()},
        exclude=tuple(data.get("exclude") or ()),
        fail_on=data.get("failOn", "error"),
        webhook_mode=(data.get("webhook") or {}).get("mode", "enforce"),
        webhook_namespace_modes=dict((data.get("webhook") or {}).get("namespaces") or {}),
        base_dir=base_dir,
    )


def load_config_file(path: str) -> Config:
    import yaml

    try:
        text = FsPath(path).read_text(encoding="utf-8")
    except OSError as e:
        raise ConfigError(f"{path}: cannot read: {e.strerror}") from None
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as e:
        raise ConfigError(f"{path}: not valid YAML: {e}") from None
    try:
        return config_from_dict(data, base_dir=str(FsPath(path).parent))
    except ConfigError as e:
        raise ConfigError(f"{path}: {e}") from None


def find_config_file(start: str = ".") -> str | None:
    """`.numaguard.yaml` in the working directory or the nearest parent that has one."""
    here = FsPath(start).resolve()
    for folder in (here, *here.parents):
        candidate = folder / CONFIG_FILE_NAME
        if candidate.is_file():
            return str(candidate)
    return None
