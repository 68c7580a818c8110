"""The configuration file (`.numaguard.yaml`), validated against a JSON Schema shipped with
the package (`lint/schemas/config.json`). A bad file is the user's to fix before anything is
linted, so it is an error with the path of the bad key (the CLI exits 2), not a finding.

Every value in the file is a string (rule severities, label values, versions), so plain
scalars are read as the text written: `rules: {NG112: off}`, `nodeLabels: {gpu: true}` and
`kubernetesVersion: 1.37` mean "off", "true" and "1.37", not YAML 1.1's false, True and a
float. A dict given to `config_from_dict` directly gets the same reading for the booleans and
numbers a YAML parser made of those words.

Pools: `pools:` names each managed node pool (its node labels, taint, kubelet configuration
globs and node description); `pool:` is the shorthand for one pool, named "default". The
top-level `node:` is the node description of every pool that names none and of the pods that
target no pool (annotated `numaguard.io/scope: managed`, `scope: all`, or assumed managed
because no pool is configured)."""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path as FsPath
from typing import Any

from numaguard.lint.carriers import BUILTIN_CARRIERS, PodCarrier, PodCarriers, TemplatePathError, carrier_from_config
from numaguard.lint.model import DEFAULT_POOL_NAME, PoolSettings, Severity, value_kind

CONFIG_FILE_NAME = ".numaguard.yaml"


class ConfigError(ValueError):
    pass


@dataclass(frozen=True)
class Config:
    kubernetes_version: tuple[int, int] = (1, 37)
    scope_all: bool = False
    pools: tuple[PoolSettings, ...] = ()         # the declared pools, in the file's order
    node: str | None = None                      # node description path or builtin:NAME: the
                                                 # default for pools without their own
    severities: dict[str, Severity | None] = field(default_factory=dict)   # None = off
    exclude: tuple[str, ...] = ()
    lint_dependencies: bool = False              # walk vendor/ and node_modules/ too
    fail_on: str = "error"
    webhook_cache_bytes: int = 4 * 1024 * 1024   # the findings cache's budget per webhook worker
    webhook_mode: str = "enforce"
    webhook_namespace_modes: dict[str, str] = field(default_factory=dict)   # namespace -> mode
    webhook_serving: dict[str, Any] = field(default_factory=dict)   # clientCA, tlsMinVersion, timeouts
    base_dir: str = "."                          # where relative paths in the file resolve
    pod_templates: tuple[PodCarrier, ...] = ()   # `podTemplates:` carriers, before the built-in ones

    @property
    def pod_carriers(self) -> PodCarriers:
        """The carrier table: the config's `podTemplates` first (they replace a built-in entry
        for the versions they name), then the built-in carriers."""
        return BUILTIN_CARRIERS.with_first(self.pod_templates)

    def pools_naming(self, source: str | None) -> tuple[str, ...]:
        """The pools whose `kubeletConfigs` name this file (globs relative to the config file's
        folder, or to the working directory; `**` crosses folders; a pattern without `/`
        matches a file name anywhere, like `exclude:`; a folder names what is under it). Paths
        without wildcards are looked up, not matched, so thousands of them stay cheap (`audit`
        names each node's configuration `node/NAME`)."""
        if not source or not any(p.kubelet_configs for p in self.pools):
            return ()
        import os

        relative = os.path.relpath(source, self.base_dir).replace(os.sep, "/")
        candidates = (source.replace(os.sep, "/"), relative)
        # a path and every folder above it, for the plain paths
        prefixes = {"/".join(parts[:n]) for c in candidates for parts in [c.removeprefix("./").split("/")]
                    for n in range(1, len(parts) + 1)}
        return tuple(pool.name for pool, (paths, matches) in zip(self.pools, self._matchers)
                     if not paths.isdisjoint(prefixes) or (matches is not None and matches(*candidates)))

    def __getstate__(self) -> dict:
        """Pickled for `--jobs` workers without the matchers built from the globs (closures):
        each worker builds its own on first use."""
        return {k: v for k, v in self.__dict__.items() if k != "_matchers"}

    @cached_property
    def _matchers(self) -> tuple[tuple[frozenset[str], Any], ...]:
        """Per pool: its plain paths (with a `/`, no wildcard) and one test for the rest (built
        once, not per file)."""
        from numaguard.lint.load.files import _excluder

        out = []
        for pool in self.pools:
            cleaned = [g.strip().removeprefix("./").rstrip("/") for g in pool.kubelet_configs]
            plain = frozenset(g for g in cleaned if "/" in g and not any(c in g for c in "*?["))
            rest = [g for g in cleaned if g and g not in plain]
            out.append((plain, _excluder(rest) if rest else None))
        return tuple(out)

    def node_paths(self, override: str | None = None) -> tuple[str | None, dict[str, str]]:
        """Where the node descriptions are: the default one (`override`, i.e. `--node`, else
        the top-level `node:`) and each pool's (its own `node:`, else the default). Paths in
        the file are relative to its folder; `builtin:NAME` stays as written."""
        import os

        def resolve(path: str) -> str:
            if path.startswith("builtin:") or os.path.isabs(path):
                return path
            return os.path.join(self.base_dir, path)

        default = override or (resolve(self.node) if self.node else None)
        pools = {p.name: resolve(p.node) if p.node else default for p in self.pools}
        return default, {name: path for name, path in pools.items() if path}

    def node_namings(self, override: str | None = None) -> dict[str | None, str]:
        """Who named the node descriptions `node_paths` finds, for the default one (key None)
        and each pool's: "--node" (`override`), "node" (the top-level `node:`) or "poolNode"
        (the pool's own `node:`). A pod simulated on a node the user named is declared for it."""
        default = "--node" if override else "node" if self.node else None
        pools = {p.name: "poolNode" if p.node else default for p in self.pools}
        return {key: way for key, way in {None: default, **pools}.items() if way}


def parse_version(text: str) -> tuple[int, int]:
    major, _, minor = str(text).partition(".")
    if not (major.isdigit() and minor.isdigit()):
        raise ConfigError(f"kubernetesVersion: {text!r} is not a version like \"1.37\"")
    return int(major), int(minor)


def config_from_dict(data: Any, base_dir: str = ".") -> Config:
    """Validate and convert; raises ConfigError naming the bad key's path."""
    from importlib import resources     # slow to import, as jsonschema: only a run with a config needs them

    import jsonschema

    schema = json.loads(resources.files("numaguard.lint").joinpath("schemas/config.json").read_text())
    if data is None:
        data = {}
    data = _as_written(data)
    errors = sorted(jsonschema.Draft202012Validator(schema).iter_errors(data),
                    key=lambda e: list(map(str, e.absolute_path)))
    if errors:
        first = errors[0]
        where = ".".join(map(str, first.absolute_path)) or "(top level)"
        raise ConfigError(f"{where}: {_message(first)}")
    try:
        pod_templates = tuple(carrier_from_config(entry, f"podTemplates.{i}")
                              for i, entry in enumerate(data.get("podTemplates") or ()))
    except TemplatePathError as err:
        raise ConfigError(str(err)) from None
    return Config(
        kubernetes_version=parse_version(data.get("kubernetesVersion", "1.37")),
        scope_all=data.get("scope") == "all",
        pools=_pools(data),
        node=data.get("node"),
        severities={rid: None if sev == "off" else Severity(sev)
                    for rid, sev in (data.get("rules") or {}).items()},
        exclude=tuple(data.get("exclude") or ()),
        lint_dependencies=bool(data.get("lintDependencies", False)),
        fail_on=data.get("failOn", "error"),
        webhook_cache_bytes=byte_count((data.get("webhook") or {}).get("cacheBytes", Config.webhook_cache_bytes)),
        webhook_mode=(data.get("webhook") or {}).get("mode", "enforce"),
        webhook_namespace_modes=dict((data.get("webhook") or {}).get("namespaces") or {}),
        webhook_serving={k: v for k, v in (data.get("webhook") or {}).items() if k not in ("mode", "namespaces")},
        base_dir=base_dir,
        pod_templates=pod_templates,
    )


def byte_count(text: str | int) -> int:
    """A byte count as the schema allows it: a number, or digits with Ki, Mi or Gi. Raises
    ValueError for anything else."""
    text = str(text)
    for suffix, factor in (("Ki", 1024), ("Mi", 1024 ** 2), ("Gi", 1024 ** 3)):
        if text.endswith(suffix):
            return int(text[:-2]) * factor
    return int(text)


def _pools(data: dict) -> tuple[PoolSettings, ...]:
    """`pools:` as written, or `pool:` as the one pool named "default"; a name given twice is
    an error naming both places."""
    written = data["pools"] if "pools" in data else [data["pool"]] if "pool" in data else []
    pools, seen = [], {}
    for i, pool in enumerate(written):
        name = pool.get("name", DEFAULT_POOL_NAME)
        if name in seen:
            raise ConfigError(f"pools.{i}.name: {json.dumps(name)} is already the name of "
                              f"pools.{seen[name]}; pool names are unique")
        seen[name] = i
        pools.append(PoolSettings(node_labels=dict(pool.get("nodeLabels") or {}), taint=pool.get("taint"),
                                  kubelet_configs=tuple(pool.get("kubeletConfigs") or ()), name=name,
                                  node=pool.get("node"),
                                  count=int(pool["count"]) if pool.get("count") is not None else None))
    return tuple(pools)


def _message(error: Any) -> str:
    """jsonschema's message, with values in JSON words (null, false), not Python's (None), or
    the schema's own `errorMessage` where it words a rule (anyOf, not) better than jsonschema
    can."""
    if error.validator in ("anyOf", "not") and isinstance(error.schema, dict) \
            and "errorMessage" in error.schema:
        return error.schema["errorMessage"]
    if error.validator == "type":
        expected = error.validator_value
        expected = "an object" if expected == "object" else f"a {expected}"
        return f"{value_kind(error.instance)}, expected {expected}"
    if error.validator == "pattern" and "description" in error.schema:
        return f"{json.dumps(error.instance)} is not {error.schema['description']}"
    if error.validator in ("enum", "const"):
        allowed = error.validator_value if error.validator == "enum" else [error.validator_value]
        return (f"{json.dumps(error.instance, default=str)} is not one of "
                f"{', '.join(json.dumps(v) for v in allowed)}")
    return error.message


_BOOLEAN_WORDS = {word: value for value in (True, False)
                  for word in (str(value).lower(), str(value), str(value).upper())}


def _as_written(data: Any) -> Any:
    """Booleans and numbers where the schema wants strings, back to the words that made them:
    `off` in `rules` (YAML 1.1 reads it as false), label values `true` or `1`."""
    if not isinstance(data, dict):
        return data
    data = dict(data)
    rules = data.get("rules")
    if isinstance(rules, dict):
        data["rules"] = {key: ("off" if value is False else value) for key, value in rules.items()}
    if isinstance(data.get("pool"), dict):
        data["pool"] = _pool_as_written(data["pool"])
    if isinstance(data.get("pools"), list):
        data["pools"] = [_pool_as_written(p) if isinstance(p, dict) else p for p in data["pools"]]
    webhook = data.get("webhook")
    if isinstance(webhook, dict) and isinstance(webhook.get("timeouts"), dict):
        data["webhook"] = webhook = {**webhook, "timeouts": {key: _word(value) for key, value in webhook["timeouts"].items()}}
    if isinstance(webhook, dict) and isinstance(webhook.get("tlsMinVersion"), float):
        data["webhook"] = {**webhook, "tlsMinVersion": repr(webhook["tlsMinVersion"])}
    # the one boolean: YAML 1.2's words for true and false (the loader keeps every word a string)
    switch = data.get("lintDependencies")
    if isinstance(switch, str) and switch in _BOOLEAN_WORDS:
        data["lintDependencies"] = _BOOLEAN_WORDS[switch]
    version = data.get("kubernetesVersion")
    if isinstance(version, float):
        data["kubernetesVersion"] = repr(version)
    return data


def _pool_as_written(pool: dict) -> dict:
    pool = dict(pool)
    if isinstance(pool.get("nodeLabels"), dict):
        pool["nodeLabels"] = {key: _word(value) for key, value in pool["nodeLabels"].items()}
    if isinstance(pool.get("taint"), dict):
        pool["taint"] = {key: _word(value) if key == "value" else value for key, value in pool["taint"].items()}
    if "name" in pool:
        pool["name"] = _word(pool["name"])
    if isinstance(pool.get("count"), int) and not isinstance(pool.get("count"), bool):
        pool["count"] = str(pool["count"])
    return pool


def _word(value: Any) -> Any:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return str(value)
    return value


def _config_loader() -> type:
    """PyYAML's safe loader with one implicit type left, null: every other plain scalar is
    the string written (the schema has no booleans or numbers)."""
    import yaml

    base = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    null = "tag:yaml.org,2002:null"
    resolvers = {first: [(tag, regexp) for tag, regexp in pairs if tag == null]
                 for first, pairs in base.yaml_implicit_resolvers.items()}
    return type("ConfigLoader", (base,), {"yaml_implicit_resolvers": resolvers})


def load_config_file(path: str) -> Config:
    import yaml

    try:
        text = FsPath(path).read_text(encoding="utf-8")
    except OSError as e:
        raise ConfigError(f"{path}: cannot read: {e.strerror}") from None
    try:
        data = yaml.load(text, Loader=_config_loader())
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
