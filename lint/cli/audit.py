"""`numaguard audit`: judge the live node pool (see numaguard.lint.cluster.audit).

    numaguard audit [--kubeconfig FILE] [--context NAME] [-n NAMESPACE] [-l NODE_SELECTOR]
                    [--config FILE] [--format FMT]... [--output FILE]... [--fail-on ...]

Problems reading part of the cluster (an RBAC denial, a node whose kubelet does not answer,
a CRD that is not installed) are one line each on stderr and the audit goes on. Exit codes as
`lint`: 0, 1 (findings at or above --fail-on), 2 (nothing could be read: no kubeconfig or
current context, refused credentials, API server unreachable, every list denied).
"""
from __future__ import annotations

import sys

import click

from numaguard.lint.cli.common import (UsageProblem, exit_for, load_config, report_options,
                                       selection_for, write_reports)

@click.command()
@click.option("--kubeconfig", type=click.Path(dir_okay=False),
              help="kubeconfig file (default: $KUBECONFIG, ~/.kube/config, or the pod's service account).")
@click.option("--context", help="kubeconfig context (default: its current-context).")
@click.option("-n", "--namespace", help="Only pods of this namespace (default: all namespaces).")
@click.option("-l", "--selector", "node_selector",
              help="Node label selector of the nodes to audit (default: the nodes of the config "
                   "file's pools, found by their nodeLabels or taint; all nodes when no pool is "
                   "configured). Without pools in the config, the selected nodes are one pool.")
@click.option("--config", "config_path", type=click.Path(dir_okay=False),
              help="Config file (default: .numaguard.yaml here or in a parent directory).")
@report_options
@click.option("--workers", type=click.IntRange(1, 64), default=16, show_default=True,
              help="Concurrent kubelet configuration reads.")
@click.option("--page-size", type=click.IntRange(1, 10000), default=500, show_default=True,
              help="Objects per list request (the API server's limit/continue chunking).")
def audit(kubeconfig, context, namespace, node_selector, config_path, formats, outputs, fail_on,
          select, ignore, show_suppressed, workers, page_size) -> None:
    """Audit the live node pool: kubelet configurations, pods, rejections, NUMA occupancy."""
    from numaguard.lint.cluster.api import ClusterError, connect
    from numaguard.lint.cluster.audit import audit as run_audit

    config = load_config(config_path)
    selection = selection_for(config, select, ignore)
    if len(outputs) > max(len(formats), 1):
        raise UsageProblem("each --output needs its own --format")
    bar = _ProgressBar() if sys.stderr.isatty() else None
    try:
        cluster = connect(kubeconfig, context, page_size=page_size)
        result, snap, _timing = run_audit(cluster, namespace=namespace, node_selector=node_selector,
                                          config=config, selection=selection, workers=workers,
                                          progress=bar)
    except ClusterError as exc:
        raise UsageProblem(str(exc)) from None
    finally:
        if bar is not None:
            bar.close()
    for line in snap.problems:
        click.echo(f"numaguard: {line}", err=True)
    write_reports(result, formats, outputs, show_suppressed)
    exit_for(result, fail_on or config.fail_on)


class _ProgressBar:
    """click's progress bar on stderr, created when the number of nodes is known; only used
    when stderr is a terminal (hundreds of nodes take a while)."""

    def __init__(self) -> None:
        self.bar = None

    def __call__(self, step: int, total: int) -> None:
        if self.bar is None:
            self.bar = click.progressbar(length=total, label="reading kubelet configurations",
                                         file=sys.stderr)
        self.bar.update(step)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.render_finish()


__all__ = ["audit"]
