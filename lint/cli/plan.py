"""`numaguard plan`: the pool under the scheduler and the kubelet together (numaguard.lint.plan).

    numaguard plan [--config FILE] [--node FILE] [--pool NAME=N]... [--from-audit SNAPSHOT]
                   [--scheduler default|topology-aware|both] [--scoring-strategy NAME]
                   [--seed N] [--max-attempts N] [--scale NAME=N]... [--nodes-needed]
                   [--drain K [--drain-random]] [--surge NAME]... [--jobs N]
                   [--format text|json|html] [--output FILE] WORKLOAD_FILE...

Exit codes: 0 every replica lands without a kubelet rejection (and every sweep asked for
succeeds); 1 otherwise; 2 unusable input (one line: a workload with no pool to land on, a pool
without a node description or nodes, a snapshot of another version, a bad flag).
"""
from __future__ import annotations

import json
import re
import sys

import click

from numaguard.lint.cli.common import UsageProblem
from numaguard.lint.cli.main import Command

SCHEDULER_CHOICES = ("default", "topology-aware", "both")


def _pair(text: str, flag: str) -> tuple[str | None, int]:
    match = re.fullmatch(r"(?:(.+)=)?(\d{1,6})", text.strip())
    if not match:
        raise UsageProblem(f"{flag} {text}: expected NAME=N (a name and a whole number)")
    return match[1], int(match[2])


@click.command(cls=Command)
@click.option("--config", "config_path", type=click.Path(dir_okay=False),
              help="Config file (default: .numaguard.yaml here or above): its pools, with node: and count:.")
@click.option("--node", "node_path", help="Node description of the pools without their own (as for `lint`).")
@click.option("--pool", "pool_counts", multiple=True, metavar="NAME=N",
              help="Nodes in the config's pool NAME (replaces its count:); with --from-audit, nodes added "
                   "to the live pool NAME. A bare N is the only pool's.")
@click.option("--from-audit", "snapshot_path", type=click.Path(dir_okay=False),
              help="Start from a live pool: a file written by `numaguard audit --snapshot`.")
@click.option("--scheduler", type=click.Choice(SCHEDULER_CHOICES), default="default", show_default=True,
              help="kube-scheduler's default profile, the scheduler-plugins topology-aware one, or both side by side.")
@click.option("--scoring-strategy", "strategy", default="LeastAllocated", show_default=True,
              type=click.Choice(["LeastAllocated", "MostAllocated", "BalancedAllocation", "LeastNUMANodes"]),
              help="The NodeResourceTopologyMatch plugin's scoringStrategy (topology-aware).")
@click.option("--seed", type=click.IntRange(min=0), default=0, show_default=True,
              help="Seed of the scheduler's random tie-breaks (and of --drain-random).")
@click.option("--max-attempts", type=click.IntRange(min=1), default=100, show_default=True,
              help="Kubelet rejections of one replica (and its replacements) before the plan gives up on it.")
@click.option("--scale", "scales", multiple=True, metavar="NAME=N",
              help="Play workload NAME (name, namespace/name or Kind/name) with N replicas.")
@click.option("--nodes-needed", is_flag=True, help="Search the smallest node count of each pool that plays clean.")
@click.option("--drain", type=click.IntRange(min=0), default=0, help="Take out the K nodes whose loss hurts most.")
@click.option("--drain-random", is_flag=True, help="With --drain: also K nodes drawn at random (--seed).")
@click.option("--surge", "surges", multiple=True, metavar="NAME",
              help="Roll workload NAME (maxSurge/maxUnavailable) on the played pool.")
@click.option("--jobs", type=click.IntRange(min=1, max=64), default=1, show_default=True,
              help="Processes for the --nodes-needed and --drain sweeps (same results for any number).")
@click.option("--format", "fmt", type=click.Choice(["text", "json", "html"]), default="text", show_default=True)
@click.option("--output", type=click.Path(dir_okay=False), help="Write the report here instead of stdout.")
@click.argument("workload_files", nargs=-1, required=True)
def plan(config_path, node_path, pool_counts, snapshot_path, scheduler, strategy, seed, max_attempts, scales,
         nodes_needed, drain, drain_random, surges, jobs, fmt, output, workload_files) -> None:
    """Place every replica of WORKLOAD_FILE... on the pools as the scheduler and the kubelets would."""
    from numaguard.lint.cli.common import load_config
    from numaguard.lint.plan.report import Request, run
    from numaguard.lint.plan.scheduler import Profile
    from numaguard.lint.plan.sizing import sizing_inputs

    config = load_config(config_path)
    problems: list[str] = []
    live, snapshot_note = _snapshot(snapshot_path, config)
    pools, added = _pools(config, node_path, pool_counts, live)
    workloads = _workloads(workload_files, config, scales, problems.append)
    if not workloads:
        raise UsageProblem("no workload (no Pod or pod template) found in " + ", ".join(workload_files))
    if not pools and not live:
        raise UsageProblem("no pool to plan: declare pools with node: and count: in the config, or give "
                           "--node FILE and --pool N, or --from-audit SNAPSHOT")
    scenario, surge_workloads = _scenario(pools, added, live, workloads, surges, nodes_needed)
    profiles = tuple(Profile(name, strategy) for name in
                     (("default", "topology-aware") if scheduler == "both" else (scheduler,)))
    request = Request(scenario, profiles, seed, max_attempts,
                      sizing=sizing_inputs(scenario, profiles[0]) if nodes_needed else (), nodes_needed=nodes_needed,
                      drain=drain, drain_random=drain_random, surge=surge_workloads, jobs=jobs,
                      inputs=_inputs(pools, added, live, workloads, snapshot_note, problems, config_path))
    for line in problems:
        click.echo(f"numaguard: {line}", err=True)
    report, runs = _run(run, request, jobs)
    _write(report, runs, fmt, output)
    sys.exit(report["summary"]["exitCode"])


def _run(run, request, jobs: int):
    if jobs == 1:
        return run(request)
    from concurrent.futures import ProcessPoolExecutor

    with ProcessPoolExecutor(max_workers=jobs) as executor:
        return run(request, mapper=executor.map)


def _write(report: dict, runs: dict, fmt: str, output: str | None) -> None:
    if fmt == "json":
        text = json.dumps(report, indent=2) + "\n"
    elif fmt == "html":
        from numaguard.lint.report.plan_html import render
        text = render(report, runs)
    else:
        from numaguard.lint.report.plan_text import render
        text = render(report)
    from numaguard.lint.cli.common import write_text

    write_text(text, output)


# -- inputs -----------------------------------------------------------------------------------

def _snapshot(path: str | None, config):
    if path is None:
        return [], None
    from numaguard.lint.cluster.snapshot import SnapshotError, live_nodes, read

    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
    except OSError as exc:
        raise UsageProblem(f"--from-audit {path}: cannot read: {exc.strerror or exc}") from None
    except UnicodeDecodeError:
        raise UsageProblem(f"--from-audit {path}: not UTF-8 text") from None
    try:
        snapshot = read(text, path)
    except SnapshotError as exc:
        raise UsageProblem(str(exc)) from None
    nodes = live_nodes(snapshot, config)
    return nodes, {"file": path, "takenAt": snapshot.taken_at or None, "nodes": len(nodes),
                   "pods": sum(len(n.pods) for n in nodes), "incomplete": snapshot.incomplete}


def _pools(config, node_path, pool_counts, live) -> tuple[list, list[tuple[str, int]]]:
    """The config's pools as PoolSpecs (one pool named default when it declares none), and the
    nodes --pool adds to the pools of the snapshot: (pool, count)."""
    from numaguard.lint.cli.lint_command import _load_node
    from numaguard.lint.model import PoolSettings
    from numaguard.lint.plan.model import PoolSpec

    declared = list(config.pools) or ([] if live and not node_path and not config.node else [PoolSettings()])
    counts: dict[str, int] = {}
    live_pools = {n.pool for n in live}
    for text in pool_counts:
        name, n = _pair(text, "--pool")
        if name is None:
            if len(declared) != 1:
                raise UsageProblem(f"--pool {text}: the config declares {len(declared)} pools "
                                   f"({', '.join(p.name for p in declared)}); name the one: --pool NAME={n}")
            name = declared[0].name
        if not any(p.name == name for p in declared):
            raise UsageProblem(f"--pool {text}: the config declares no pool {name}"
                               + (f" (it declares {', '.join(p.name for p in declared)})" if declared else ""))
        counts[name] = n
    default, by_pool = config.node_paths(node_path)
    out = []
    for settings in declared:
        count = counts.get(settings.name, settings.count)
        if settings.name in live_pools:
            continue                                  # a live pool: --pool adds nodes (see _scenario)
        path = by_pool.get(settings.name) or default
        if path is None:
            if count:
                raise UsageProblem(f"pool {settings.name} has no node description: give it node: in the config "
                                   f"(or a top-level node:, or --node FILE)")
            continue
        node, _documents = _load_node(path)
        taint = dict(settings.taint) if settings.taint else None
        if taint is not None:
            taint.setdefault("effect", "NoSchedule")
        out.append(PoolSpec(settings.name, node, count or 0, dict(settings.node_labels),
                            (taint,) if taint else ()))
    return out, [(name, n) for name, n in counts.items() if name in live_pools]


def _workloads(paths, config, scales, problem) -> list:
    from numaguard.lint.cli.numa import carried_objects
    from numaguard.lint.objects import api_group
    from numaguard.lint.plan.workloads import from_object

    wanted = {}
    for text in scales:
        name, n = _pair(text, "--scale")
        if name is None:
            raise UsageProblem(f"--scale {text}: expected NAME=N")
        wanted[name] = n
    out = []
    used = set()
    for where, data, found in carried_objects(tuple(paths), config.pod_carriers, problem):
        ref = found.ref
        scaled = next((n for name, n in wanted.items() if _names(name, ref)), None)
        if scaled is not None:
            used.update(name for name in wanted if _names(name, ref))
        templates = [(pod.spec_path if pod.inline else pod.spec_path[:-1], pod.spec, pod.metadata_path)
                     for pod in found.pods]
        out += from_object(data, api_group(ref.api_version), ref.kind or "", templates, scaled=scaled, where=where)
    for name in wanted:
        if name not in used:
            raise UsageProblem(f"--scale {name}={wanted[name]}: no workload named {name} in the files")
    return out


def _names(name: str, ref) -> bool:
    from numaguard.lint.plan.workloads import names_object
    return names_object(name, ref.kind or "", ref.namespace or "default", ref.name or "")


def _scenario(pools, added, live, workloads, surges, nodes_needed):
    from numaguard.lint.plan.play import Scenario
    from numaguard.lint.plan.surge import ROLLING_KINDS, runs_in
    from numaguard.lint.plan.workloads import landing_pools, named, no_pool_message

    for workload in workloads:
        if workload.per_node or not workload.replicas:
            continue
        if not landing_pools(workload, pools, live, empty_too=nodes_needed) and not any(n for _, n in added):
            raise UsageProblem(no_pool_message(workload, pools, live))
    chosen = []
    for name in surges:
        matches = named(workloads, name)
        if len(matches) != 1:
            raise UsageProblem(f"--surge {name}: " + ("no workload of that name" if not matches else
                                                      f"{len(matches)} workloads match; name one: "
                                                      + ", ".join(w.name for w in matches)))
        if matches[0].kind not in ROLLING_KINDS:
            raise UsageProblem(f"--surge {name}: a {matches[0].kind} has no rolling update numaguard models "
                               f"(it knows {', '.join(ROLLING_KINDS)})")
        chosen.append(matches[0])
    running = {w.name for w in chosen if runs_in(w, live)}
    scenario = Scenario(tuple(pools), tuple(live), tuple(w for w in workloads if w.name not in running), tuple(added))
    return scenario, tuple(chosen)


def _inputs(pools, added, live, workloads, snapshot_note, problems, config_path) -> dict:
    live_pools: dict = {}
    for node in live:
        live_pools[node.pool] = live_pools.get(node.pool, 0) + 1
    return {"config": config_path,
            "pools": [{"name": name, "nodes": n, "node": "snapshot", "added": False} for name, n in live_pools.items()]
            + [{"name": p.name, "nodes": p.count, "node": p.node.source, "added": False} for p in pools]
            + [{"name": name, "nodes": n, "node": "snapshot", "added": True} for name, n in added],
            "workloads": [{"name": w.name, "replicas": "one per node" if w.per_node else w.replicas,
                           "countFrom": w.source, "where": w.where or None} for w in workloads],
            "snapshot": snapshot_note, "problems": list(problems),
            "complete": not problems and not (snapshot_note or {}).get("incomplete")}


COMMANDS = (plan,)

__all__ = ["plan"]
