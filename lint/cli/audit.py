"""`numaguard audit`: judge the live node pool (see numaguard.lint.cluster.audit).

    numaguard audit [--kubeconfig FILE] [--context NAME] [-n NAMESPACE] [-l NODE_SELECTOR]
                    [--config FILE] [--format FMT]... [--output FILE]... [--fail-on ...]
                    [--request-timeout 10s] [--timeout DURATION]

Problems reading part of the cluster (an RBAC denial, a node whose kubelet does not answer, a
list page that keeps failing) are one line each on stderr and the audit goes on; the reports
are written; the last line says what was not read. Exit codes: 0, 1 (findings at or above
--fail-on), 2 (nothing could be read: no kubeconfig or current context, refused credentials,
API server unreachable, every list denied; or a usage problem), 3 (the audit is incomplete:
something could not be read even after the retries; this wins over 1).
"""
from __future__ import annotations

import re
import sys
import threading
import time

import click

from numaguard.lint.cli.common import UsageProblem, exit_for, load_config, report_targets, selection_for, write_reports
from numaguard.lint.cli.main import Command, report_options

EXIT_INCOMPLETE = 3


class Duration(click.ParamType):
    """Seconds: `10`, `10s`, `2.5s`, `500ms`, `1m` (kubectl's --request-timeout units)."""
    name = "duration"
    _UNITS = {"ms": 0.001, "s": 1.0, "m": 60.0, "": 1.0}

    def convert(self, value, param, ctx) -> float:
        if isinstance(value, (int, float)):
            return float(value)
        match = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*(ms|s|m|)\s*", str(value))
        if not match or float(match[1]) <= 0:
            self.fail(f"{value!r} is not a duration above zero (e.g. 10s, 500ms, 1m)", param, ctx)
        return float(match[1]) * self._UNITS[match[2]]


@click.command(cls=Command)
@click.option("--kubeconfig", type=click.Path(dir_okay=False),
              help="kubeconfig file (default: $KUBECONFIG, ~/.kube/config, or the pod's service account).")
@click.option("--context", help="kubeconfig context (default: its current-context).")
@click.option("-n", "--namespace", help="Only pods of this namespace (default: all namespaces).")
@click.option("-l", "--selector", "node_selector",
              help="Node label selector of the pool (default: pool.nodeLabels from the config file; "
                   "all nodes when neither is set).")
@click.option("--config", "config_path", type=click.Path(dir_okay=False),
              help="Config file (default: .numaguard.yaml here or in a parent directory).")
@report_options
@click.option("--workers", type=click.IntRange(1, 64), default=16, show_default=True,
              help="Concurrent kubelet configuration reads.")
@click.option("--page-size", type=click.IntRange(1, 10000), default=500, show_default=True,
              help="Objects per list request (the API server's limit/continue chunking).")
@click.option("--request-timeout", type=Duration(), default="10s", show_default=True,
              help="How long one API request may take, and how long its retries may wait on the "
                   "server's Retry-After in all (a kubelet's configz through the node proxy is not "
                   "retried after a timeout).")
@click.option("--timeout", "deadline", type=Duration(),
              help="The audit's own deadline (e.g. 20m): what is not read by then is reported as "
                   "not read (exit 3), with everything read before it. Default: none.")
@click.option("--snapshot", "snapshot_path", type=click.Path(dir_okay=False),
              help="Also write what was read (nodes, their kubelet configurations and NodeResourceTopologies, "
                   "the pods bound to them) to this file, for `numaguard plan --from-audit`.")
def audit(kubeconfig, context, namespace, node_selector, config_path, formats, outputs, fail_on,
          select, ignore, show_suppressed, workers, page_size, request_timeout, deadline, snapshot_path) -> None:
    """Audit the live node pool: kubelet configurations, pods, rejections, NUMA occupancy."""
    from numaguard.lint.cluster.api import ClusterError, connect
    from numaguard.lint.cluster.audit import audit as run_audit

    config = load_config(config_path)
    selection = selection_for(config, select, ignore)
    reports = report_targets(formats, outputs)
    line = StatusLine(sys.stderr) if sys.stderr.isatty() else None
    collect = None
    if snapshot_path:
        from numaguard.lint.cluster.snapshot import Collector
        collect = Collector()
    try:
        cluster = connect(kubeconfig, context, page_size=page_size, request_timeout=request_timeout)
        cluster.set_deadline(deadline)
        result, report, _timing = run_audit(cluster, namespace=namespace, node_selector=node_selector,
                                            config=config, selection=selection, workers=workers,
                                            progress=line, collect=collect)
    except ClusterError as exc:
        raise UsageProblem(str(exc)) from None
    finally:
        if line is not None:
            line.close()
    for problem in report.problems:
        click.echo(f"numaguard: {problem}", err=True)
    if collect is not None:
        _write_snapshot(snapshot_path, collect)
    write_reports(result, reports, show_suppressed)
    if report.incomplete:
        click.echo(f"numaguard: {report.summary_line()}", err=True)
        sys.exit(EXIT_INCOMPLETE)
    exit_for(result, fail_on or config.fail_on)


def _write_snapshot(path: str, collect) -> None:
    import json
    from datetime import datetime, timezone

    document = collect.document(datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"))
    try:
        with open(path, "w", encoding="utf-8") as out:
            json.dump(document, out, separators=(",", ":"))
            out.write("\n")
    except OSError as exc:
        raise UsageProblem(f"--snapshot {path}: cannot write: {exc.strerror or exc}") from None


def describe(progress, now: float, shown: int = 3) -> str:
    """The status line for a numaguard.lint.cluster.audit.Progress: what has been read so far
    and which nodes' configz is awaited, oldest first, with how long each has waited. No
    percentage and no ETA: a hung kubelet shows by name, its wait growing."""
    parts = [f"{progress.nodes:,} nodes" if progress.phase != "nodes" else "reading nodes"]
    if progress.phase == "noderesourcetopologies":
        parts.append("reading NodeResourceTopologies")
    if progress.phase in ("pods", "kubelet configurations"):
        parts.append(f"{progress.pods:,} pods" + (" read" if progress.phase != "pods" else " so far"))
    if progress.configz_total:
        parts.append(f"kubelet configurations {progress.configz_done:,} of {progress.configz_total:,}")
    waiting = sorted(progress.in_flight, key=lambda item: item[1])
    if waiting:
        named = ", ".join(f"{name} ({now - began:.0f} s)" for name, began in waiting[:shown])
        more = f" and {len(waiting) - shown} more" if len(waiting) > shown else ""
        parts.append(f"waiting for {named}{more}")
    return "numaguard audit: " + "; ".join(parts)


class StatusLine:
    """One line on a terminal, rewritten as reading goes on (at most 10 times a second, and
    every second for the waiting times), cleared at the end."""

    def __init__(self, stream, *, clock=time.monotonic) -> None:
        self.stream, self.clock = stream, clock
        self.latest = None
        self.lock = threading.Lock()
        self.drawn_at = 0.0
        self.stop = threading.Event()
        self.ticker = threading.Thread(target=self._tick, name="numaguard-status", daemon=True)
        self.ticker.start()

    def __call__(self, progress) -> None:
        with self.lock:
            self.latest = progress
            if self.clock() - self.drawn_at >= 0.1:
                self._draw()

    def _tick(self) -> None:
        while not self.stop.wait(1.0):
            with self.lock:
                if self.latest is not None:
                    self._draw()

    def _draw(self) -> None:
        import shutil

        width = shutil.get_terminal_size((100, 24)).columns
        self.drawn_at = self.clock()
        self.stream.write("\r" + describe(self.latest, self.drawn_at)[:max(width - 1, 20)] + "\033[K")
        self.stream.flush()

    def close(self) -> None:
        self.stop.set()
        with self.lock:
            if self.latest is not None:
                self.stream.write("\r\033[K")
                self.stream.flush()


__all__ = ["audit", "describe", "StatusLine", "EXIT_INCOMPLETE"]
