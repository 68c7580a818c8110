"""The command line: a thin adapter around the engine (click).

Exit codes (design.md): 0 nothing at or above --fail-on; 1 findings at or above it; 2 the tool
could not do its job (bad flag, missing path, invalid config or node file). Heavy modules are
imported inside the commands that use them, so `numaguard lint one-pod.yaml` starts fast.
"""
from __future__ import annotations

import re

import click

from numaguard.lint.cli.common import (FAIL_ON, UsageProblem, exit_for, load_config,  # noqa: F401
                                       report_options, report_targets, selection_for, write_reports)


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="numaguard")
def main() -> None:
    """Keep workloads and kubelets ready for Kubernetes pod-level resource managers."""


@main.command()
@click.argument("paths", nargs=-1)
@click.option("--pool", "pool_dirs", multiple=True, metavar="[NAME=]DIR",
              help="A directory of one node pool's KubeletConfigurations (and checkpoints, Node and "
              "NodeResourceTopology objects), linted with everything else and judged as that pool "
              "(NG4xx). NAME=DIR names the pool (a pool of the config file, or a new one); a bare DIR "
              "is the config's only pool, or the pool \"default\" when none is configured.")
@click.option("--config", "config_path", type=click.Path(dir_okay=False),
              help="Config file (default: .numaguard.yaml here or in a parent directory).")
@click.option("--node", "node_path", help="Node description for NUMA fit: a NodeProfile, lscpu "
              "--parse output, a NodeResourceTopology, or builtin:NAME.")
@click.option("--kubernetes-version", help="Target Kubernetes version, e.g. 1.37.")
@report_options
@click.option("--jobs", "-j", type=click.IntRange(min=1), default=None,
              help="Worker processes (default: the CPUs available; 1 = in this process). "
              "Small runs and stdin are always linted in this process.")
@click.option("--baseline", "baseline_path", type=click.Path(dir_okay=False),
              help="Report and fail only on findings not recorded in this baseline file; "
              "list its entries that no longer match.")
@click.option("--write-baseline", "write_baseline_path", type=click.Path(dir_okay=False),
              help="Record today's findings in this baseline file (exit 0 once written).")
def lint(paths, pool_dirs, config_path, node_path, kubernetes_version, formats, outputs, fail_on, select,
         ignore, show_suppressed, jobs, baseline_path, write_baseline_path) -> None:
    """Lint manifests and KubeletConfigurations (files, directories, or - for stdin)."""
    config = load_config(config_path, kubernetes_version)
    config, pool_paths = _with_pool_dirs(config, pool_dirs)
    paths = tuple(paths) + pool_paths
    if not paths:
        raise UsageProblem("give at least one PATH (or --pool DIR)")
    from numaguard.lint.cli.lint_files import (InputProblem, LintSettings, WorkerFailed, default_jobs,
                                               lint_paths)

    selection = selection_for(config, select, ignore)
    reports = report_targets(formats, outputs)
    node, pool_nodes, node_kubelet_docs = _load_nodes(node_path, config)

    baseline = _read_baseline(baseline_path) if baseline_path else None

    settings = LintSettings(config=config, node=node, selection=selection, pool_nodes=pool_nodes)
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


def _with_pool_dirs(config, pool_dirs) -> tuple:
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
    click.echo(f"numaguard: recorded {sum(baseline.counts.values())} finding(s) in {path}", err=True)


def _load_nodes(node_path: str | None, config):
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


@main.command()
@click.argument("paths", nargs=-1)
@click.option("--diff", is_flag=True, help="Print the changes as a unified diff; write nothing.")
@click.option("--write", is_flag=True, help="Write the changes into the files.")
@click.option("--pool", "pool_dirs", multiple=True, metavar="[NAME=]DIR",
              help="A directory of one node pool's KubeletConfigurations, fixed as that pool's "
              "(as for `numaguard lint`).")
@click.option("--config", "config_path", type=click.Path(dir_okay=False),
              help="Config file (default: .numaguard.yaml here or in a parent directory).")
@click.option("--node", "node_path", help="Node description (as for `numaguard lint`).")
@click.option("--kubernetes-version", help="Target Kubernetes version, e.g. 1.37.")
@click.option("--select", multiple=True, help="Fix only these rule ids or prefixes (NG1,NG205).")
@click.option("--ignore", multiple=True, help="Do not fix these rule ids or prefixes.")
def fix(paths, diff, write, pool_dirs, config_path, node_path, kubernetes_version, select, ignore) -> None:
    """Fix the findings that have one safe fix, in manifests and KubeletConfigurations.

    Without --diff or --write, print what would change. Exit 0: nothing to change; 1: changes
    written or pending; 2: usage or a file that cannot be read or written."""
    if diff and write:
        raise UsageProblem("give --diff or --write, not both")
    config = load_config(config_path, kubernetes_version)
    config, pool_paths = _with_pool_dirs(config, pool_dirs)
    paths = tuple(paths) + pool_paths
    if not paths:
        raise UsageProblem("give at least one PATH (or --pool DIR)")
    import os

    from numaguard.lint.cli.fix import run_fix
    from numaguard.lint.engine import Selection, rule_context
    from numaguard.lint.fixing import FIXES, FixSettings
    from numaguard.lint.load.files import STDIN_ARGUMENT, input_files

    chosen = selection_for(config, select, ignore)       # checks the ids; fixes are chosen by it
    from numaguard.lint.rules.registry import rules_by_id
    rules = frozenset(rule for rule in FIXES if chosen.enabled(rules_by_id()[rule]))
    node, pool_nodes, _ = _load_nodes(node_path, config)
    settings = FixSettings(config=config, selection=Selection(severities=config.severities),
                           context=rule_context(config, node, pool_nodes), rules=rules, node=node)
    try:
        files = list(input_files(list(paths), config.exclude))
    except FileNotFoundError as e:
        raise UsageProblem(f"no such file or directory: {e.filename or e}") from None
    # a file named twice (itself and its folder, or a --pool folder) is fixed once
    files = list({os.path.realpath(f): f for f in reversed(files)}.values())[::-1]
    if STDIN_ARGUMENT in files:
        raise UsageProblem("numaguard fix rewrites files: give paths, not -")
    raise SystemExit(run_fix(files, settings, "diff" if diff else "write" if write else None))


@main.command()
@click.option("--format", "fmt", type=click.Choice(["text", "json", "markdown"]), default="text")
def rules(fmt: str) -> None:
    """List every rule with its severity, rationale and fix."""
    from numaguard.lint.rules.docs import render_rules

    click.echo(render_rules(fmt), nl=False)


def _attach_numa_commands() -> None:
    from numaguard.lint.cli.audit import audit
    from numaguard.lint.cli.numa import node, simulate

    main.add_command(simulate)
    main.add_command(node)
    main.add_command(audit)


def _attach_webhook_commands() -> None:
    from numaguard.lint.cli.export import export
    from numaguard.lint.cli.webhook import webhook

    main.add_command(webhook)
    main.add_command(export)


_attach_numa_commands()
_attach_webhook_commands()

if __name__ == "__main__":  # pragma: no cover
    main()
