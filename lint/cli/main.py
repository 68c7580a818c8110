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
    selection = selection_for(config, select, ignore)
    if len(outputs) > max(len(formats), 1):
        raise UsageProblem("each --output needs its own --format")
    node = _load_node(node_path, config)

    documents, errors, files = [], [], 0
    try:
        for _source, docs, errs in load_paths(paths, exclude=config.exclude):
            files += 1
            documents.extend(docs)
            errors.extend(errs)
    except FileNotFoundError as e:
        raise UsageProblem(f"no such file or directory: {e.filename or e}") from None
    result = lint_documents(documents, config=config, node=node, load_errors=errors,
                            selection=selection)
    result.summary.files = files

    write_reports(result, formats, outputs, show_suppressed)
    exit_for(result, fail_on or config.fail_on)


def _load_node(node_path: str | None, config):
    """The node description from --node, else from the config file (relative to it)."""
    import os

    if not node_path and not config.node:
        return None
    from numaguard.lint.numa.node import NodeError, load_node_file

    path = node_path or config.node
    if not node_path and not path.startswith("builtin:") and not os.path.isabs(path):
        path = os.path.join(config.base_dir, path)
    try:
        return load_node_file(path)
    except FileNotFoundError:
        raise UsageProblem(f"node description not found: {path}") from None
    except NodeError as e:
        raise UsageProblem(str(e)) from None


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
