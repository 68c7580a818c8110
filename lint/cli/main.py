"""The command line: a thin adapter around the engine (click).

Exit codes (design.md): 0 nothing at or above --fail-on; 1 findings at or above it; 2 the tool
could not do its job (bad flag, missing path, invalid config or node file). Heavy modules are
imported inside the commands that use them, so `numaguard lint one-pod.yaml` starts fast.
"""
from __future__ import annotations

import sys

import click

from numaguard.lint.cli.common import (FAIL_ON, UsageProblem, exit_for, load_config,  # noqa: F401
                                       selection_for, write_reports)


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="numaguard")
def main() -> None:
    """Keep workloads and kubelets ready for Kubernetes pod-level resource managers."""


@main.command()
@click.argument("paths", nargs=-1)
@click.option("--pool", "pool_dirs", multiple=True, type=click.Path(exists=True, file_okay=False),
              help="A directory of one node pool's KubeletConfigurations (and checkpoints, Node and "
              "NodeResourceTopology objects), judged together with everything else given (NG4xx).")
@click.option("--config", "config_path", type=click.Path(dir_okay=False),
              help="Config file (default: .numaguard.yaml here or in a parent directory).")
@click.option("--node", "node_path", help="Node description for NUMA fit: a NodeProfile, lscpu "
              "--parse output, a NodeResourceTopology, or builtin:NAME.")
@click.option("--kubernetes-version", help="Target Kubernetes version, e.g. 1.37.")
@click.option("--format", "formats", multiple=True, default=(),
              type=click.Choice(["text", "json", "sarif", "junit", "github", "policyreport", "html"]),
              help="Report format; repeat with --output for several reports in one run.")
@click.option("--output", "outputs", multiple=True, type=click.Path(dir_okay=False),
              help="Write the report to FILE instead of standard output (pairs with --format).")
@click.option("--fail-on", type=click.Choice(FAIL_ON), default=None,
              help="Lowest severity that makes the exit code 1 (default: error).")
@click.option("--select", multiple=True, help="Only these rule ids or prefixes (NG1,NG203).")
@click.option("--ignore", multiple=True, help="Skip these rule ids or prefixes.")
@click.option("--show-suppressed", is_flag=True, help="List suppressed findings too.")
def lint(paths, pool_dirs, config_path, node_path, kubernetes_version, formats, outputs, fail_on, select,
         ignore, show_suppressed) -> None:
    """Lint manifests and KubeletConfigurations (files, directories, or - for stdin)."""
    paths = tuple(paths) + tuple(pool_dirs)
    if not paths:
        raise UsageProblem("give at least one PATH (or --pool DIR)")
    from numaguard.lint.load.documents import load_paths
    from numaguard.lint.engine import lint_documents

    config = load_config(config_path, kubernetes_version)
    if pool_dirs:
        config = _with_pool_dirs(config, pool_dirs)
    selection = selection_for(config, select, ignore)
    if len(outputs) > max(len(formats), 1):
        raise UsageProblem("each --output needs its own --format")
    node, node_kubelet_docs = _load_node(node_path, config)

    documents, errors, files = [], [], 0
    try:
        for _source, docs, errs in load_paths(paths, exclude=config.exclude):
            files += 1
            documents.extend(docs)
            errors.extend(errs)
    except FileNotFoundError as e:
        raise UsageProblem(f"no such file or directory: {e.filename or e}") from None
    import os

    linted = {os.path.normpath(d.source) for d in documents if d.source}
    extra = [d for d in node_kubelet_docs if d.index < 0 or os.path.normpath(d.source) not in linted]
    documents.extend(extra)
    files += len({d.source for d in extra if os.path.normpath(d.source) not in linted})
    dropin_files, dropin_docs, dropin_errors = _load_kubelet_dropins(documents)
    files += dropin_files
    documents.extend(dropin_docs)
    errors.extend(dropin_errors)
    result = lint_documents(documents, config=config, node=node, load_errors=errors,
                            selection=selection)
    result.summary.files = files

    write_reports(result, formats, outputs, show_suppressed)
    exit_for(result, fail_on or config.fail_on)


def _with_pool_dirs(config, pool_dirs):
    """The KubeletConfigurations under `--pool DIR` are the pool's by the user's word: held to
    the pool requirements like those `pool.kubeletConfigs` names."""
    import os
    from dataclasses import replace

    globs = tuple(os.path.normpath(d).replace(os.sep, "/").rstrip("/") + "/**" for d in pool_dirs)
    return replace(config, pool=replace(config.pool,
                                        kubelet_configs=config.pool.kubelet_configs + globs))


def _load_kubelet_dropins(documents) -> tuple[int, list, list]:
    """The kubelet drop-ins of every linted KubeletConfiguration file: the `*.conf` files under
    `<file>.d/` (numaguard.lint.k8s.kubelet_dropin), read in the order the kubelet's
    `filepath.WalkDir` visits them. Files already loaded are not read twice."""
    import os

    from numaguard.lint.k8s.kubelet_dropin import DROPIN_DIR_SUFFIX, DROPIN_SUFFIX
    from numaguard.lint.load.documents import load_text

    loaded = {d.source for d in documents}
    mains = sorted({d.source for d in documents if d.source and isinstance(d.data, dict)
                    and d.data.get("kind") == "KubeletConfiguration"})

    def walk(directory: str):
        try:
            entries = sorted(os.scandir(directory), key=lambda e: e.name)
        except OSError:
            return
        for entry in entries:
            if entry.is_dir():
                yield from walk(entry.path)
            elif entry.name.endswith(DROPIN_SUFFIX):
                yield entry.path

    files, docs, errors = 0, [], []
    for main in mains:
        folder = main + DROPIN_DIR_SUFFIX
        if not os.path.isdir(folder):
            continue
        for path in walk(folder):
            if path in loaded:
                continue
            try:
                with open(path, "rb") as fh:
                    found, errs = load_text(fh.read(), path)
            except OSError as e:
                raise UsageProblem(f"{path}: cannot read: {e.strerror}") from None
            files += 1
            docs.extend(found)
            errors.extend(errs)
    return files, docs, errors


def _load_node(node_path: str | None, config):
    """The node description from --node, else from the config file (relative to it), and the
    KubeletConfiguration documents to lint in its place when the node's own configuration does
    not fit the machine (reserved CPUs it lacks, reservedMemory on a NUMA node it lacks or
    larger than it): the kubelet would refuse to start, which is a finding on that
    configuration (NG208, NG209), not a reason to stop. Exit 2 stays for a node description
    that cannot be used at all."""
    import os

    if not node_path and not config.node:
        return None, []
    from numaguard.lint.numa.node import NodeError, load_node_file

    path = node_path or config.node
    if not node_path and not path.startswith("builtin:") and not os.path.isabs(path):
        path = os.path.join(config.base_dir, path)
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
    from numaguard.lint.cli.webhook import webhook

    main.add_command(webhook)


_attach_numa_commands()
_attach_webhook_commands()

if __name__ == "__main__":  # pragma: no cover
    main()
