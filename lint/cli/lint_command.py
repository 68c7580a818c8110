"""`numaguard lint`: what the command does once its command line is read, by click
(`numaguard.lint.cli.main`) or by the quick reader (`numaguard.lint.cli.start`). Free of click."""
from __future__ import annotations

import re
import sys

from numaguard.lint.cli.common import UsageProblem, exit_for, load_config, report_targets, selection_for, write_reports


def run_lint(paths: tuple[str, ...], pool_dirs: tuple[str, ...], config_path: str | None, node_path: str | None,
             kubernetes_version: str | None, formats: tuple[str, ...], outputs: tuple[str, ...],
             fail_on: str | None, select: tuple[str, ...], ignore: tuple[str, ...], show_suppressed: bool,
             jobs: int | None, baseline_path: str | None, write_baseline_path: str | None) -> None:
    """`numaguard lint` with its parameters as read from the command line; raises UsageProblem
    (exit 2) for input it cannot use, exits 1 on findings at or above --fail-on."""
    config = load_config(config_path, kubernetes_version)
    config, pool_paths = with_pool_dirs(config, pool_dirs)
    paths = tuple(paths) + pool_paths
    if not paths:
        raise UsageProblem("give at least one PATH (or --pool DIR)")
    from numaguard.lint.cli.lint_files import (InputProblem, LintSettings, WorkerFailed, default_jobs,
                                               lint_paths)

    selection = selection_for(config, select, ignore)
    reports = report_targets(formats, outputs)
    node, pool_nodes, node_kubelet_docs = load_nodes(node_path, config)

    baseline = _read_baseline(baseline_path) if baseline_path else None

    settings = LintSettings(config=config, node=node, selection=selection, pool_nodes=pool_nodes,
                            node_named_by=config.node_namings(node_path))
    try:
        result, sources = lint_paths(list(paths), settings, jobs or default_jobs(),
                                     extra_documents=node_kubelet_docs)
    except FileNotFoundError as e:
        raise UsageProblem(f"no such file or directory: {e.filename or e}") from None
    except (WorkerFailed, InputProblem) as e:
        raise UsageProblem(str(e)) from None
    if write_baseline_path:
        _write_baseline(write_baseline_path, result)
    if baseline is not None:
        from numaguard.lint.baseline import apply_baseline
        apply_baseline(result, baseline, linted_files=sources)

    write_reports(result, reports, show_suppressed)
    if not write_baseline_path:
        exit_for(result, fail_on or config.fail_on)


def with_pool_dirs(config, pool_dirs) -> tuple:
    """(the config with each `--pool [NAME=]DIR` added to its pool, the directories to lint).

    The files under DIR are the pool's by the user's word, as if its `kubeletConfigs` named
    them: held to the pool requirements and compared within the pool. NAME=DIR adds to the
    config's pool NAME, or declares a new pool NAME; a bare DIR goes to the config's only
    pool, or to a new pool "default" when none is configured (several bare DIRs: one pool)."""
    import os
    from dataclasses import replace

    from numaguard.lint.model import DEFAULT_POOL_NAME, POOL_NAME, PoolSettings

    pools = {p.name: p for p in config.pools}
    dirs = []
    for given in pool_dirs:
        name, sep, directory = given.partition("=")
        if not sep or os.path.isdir(given):
            name, directory = None, given
        if not os.path.isdir(directory):
            raise UsageProblem(f"--pool {given}: no such directory: {directory}")
        if name is None:
            if len(pools) > 1:
                raise UsageProblem(f"--pool {given}: the config declares {len(pools)} pools "
                                   f"({', '.join(pools)}); name the one it is: --pool NAME={directory}")
            name = next(iter(pools), DEFAULT_POOL_NAME)
        elif not re.fullmatch(POOL_NAME, name):
            raise UsageProblem(f"--pool {given}: {name!r} is not a pool name (letters, digits, "
                               f"'-', '_' or '.', beginning and ending with a letter or digit)")
        pool = pools.get(name) or PoolSettings(name=name)
        glob = os.path.normpath(directory).replace(os.sep, "/").rstrip("/") + "/**"
        pools[name] = replace(pool, kubelet_configs=pool.kubelet_configs + (glob,))
        dirs.append(directory)
    if not dirs:
        return config, ()
    return replace(config, pools=tuple(pools.values())), tuple(dirs)


def _read_baseline(path: str):
    """The baseline file, or exit 2 with one line saying why it cannot be used."""
    import json

    from numaguard.lint.baseline import Baseline, BaselineError

    try:
        with open(path, encoding="utf-8") as fh:
            return Baseline.from_json(json.load(fh))
    except FileNotFoundError:
        raise UsageProblem(f"baseline not found: {path}") from None
    except (OSError, UnicodeDecodeError) as e:
        raise UsageProblem(f"{path}: cannot read baseline: {e}") from None
    except json.JSONDecodeError as e:
        raise UsageProblem(f"{path}: not JSON: {e}") from None
    except BaselineError as e:
        raise UsageProblem(f"{path}: {e}") from None


def _write_baseline(path: str, result) -> None:
    import json

    from numaguard.lint.baseline import Baseline

    baseline = Baseline.from_findings(result.findings)
    try:
        with open(path, "w", encoding="utf-8") as fh:
            fh.write(json.dumps(baseline.to_json(), indent=2) + "\n")
    except OSError as e:
        raise UsageProblem(f"{path}: cannot write baseline: {e.strerror or e}") from None
    sys.stderr.write(f"numaguard: recorded {sum(baseline.counts.values())} finding(s) in {path}\n")


def load_nodes(node_path: str | None, config):
    """(the default node description, each pool's by name, the KubeletConfiguration documents
    to lint in their place): the default is --node, else the config's top-level `node:`; a
    pool's is its own `node:`, else the default (`Config.node_paths`). Each file is read once."""
    default, by_pool = config.node_paths(node_path)
    loaded: dict[str, tuple] = {}
    documents = []
    for path in dict.fromkeys(p for p in (default, *by_pool.values()) if p):
        node, docs = _load_node(path)
        loaded[path] = node
        documents += docs
    return loaded.get(default), {name: loaded[path] for name, path in by_pool.items()}, documents


def _load_node(path: str):
    """A node description, and the KubeletConfiguration documents to lint in its place when the
    node's own configuration does not fit the machine (reserved CPUs it lacks, reservedMemory on
    a NUMA node it lacks or larger than it): the kubelet would refuse to start, which is a
    finding on that configuration (NG208, NG209), not a reason to stop. Exit 2 stays for a node
    description that cannot be used at all."""
    from numaguard.lint.numa.node import NodeError, load_node_file

    try:
        return load_node_file(path), []
    except FileNotFoundError:
        raise UsageProblem(f"node description not found: {path}") from None
    except NodeError as e:
        recovered = _node_without_kubelet_config(path)
        if recovered is None:
            raise UsageProblem(str(e)) from None
        return recovered


def _node_without_kubelet_config(path: str):
    """(the node without its KubeletConfiguration, that configuration as lintable documents),
    or None when the node description is unusable even without it. The configuration is a
    KubeletConfiguration document in the node file, `spec.kubeletConfig` inline (a document
    pointing into the node file, index -1), or the file `spec.kubeletConfig` names."""
    import os

    from numaguard.lint.load.documents import Document, load_text
    from numaguard.lint.numa.node import NodeError, load_node

    if path.startswith("builtin:"):
        return None
    try:
        with open(path, "rb") as fh:
            raw = fh.read()
    except OSError:
        return None
    docs, errors = load_text(raw, path)
    if errors or not docs:
        return None
    base_dir = os.path.dirname(path)
    topology, kubelet_docs = [], []
    for doc in docs:
        data = doc.data
        kind = data.get("kind") if isinstance(data, dict) else None
        if kind == "KubeletConfiguration":
            kubelet_docs.append(doc)
            continue
        spec = data.get("spec") if isinstance(data, dict) else None
        if kind == "NodeProfile" and isinstance(spec, dict) and "kubeletConfig" in spec:
            ref = spec["kubeletConfig"]
            if isinstance(ref, dict):
                kubelet_docs.append(Document(source=path, index=-1, data=ref,
                                             line=doc.line, ignores=doc.ignores))
            elif isinstance(ref, str):
                target = ref if os.path.isabs(ref) else os.path.join(base_dir, ref)
                try:
                    with open(target, "rb") as fh:
                        found, errs = load_text(fh.read(), target)
                except OSError:
                    return None
                kubelet_docs.extend(d for d in found if isinstance(d.data, dict)
                                    and d.data.get("kind") == "KubeletConfiguration")
            data = {**data, "spec": {k: v for k, v in spec.items() if k != "kubeletConfig"}}
        topology.append(data)
    if not kubelet_docs:
        return None
    try:
        node = load_node(topology if len(topology) != 1 else topology[0], source=path,
                         base_dir=base_dir)
    except NodeError:
        return None
    return node, kubelet_docs
