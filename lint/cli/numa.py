"""Click commands for the NUMA simulator, attached by `numaguard.lint.cli.main` to the main group:

    numaguard simulate --node FILE [--kubelet-config FILE] POD_FILE... [--format text|json]
    numaguard node capture [--sysfs ROOT]
    numaguard node inspect [--root /] [--state-dir DIR] [--socket PATH] [--kubelet-config FILE]
                           [--pods FILE] [--timeout 10] [--kubernetes-version 1.37]
                           [--processes [--sample 5s] [--max-remote-memory 10] [--threads 5]]
                           [--format text|json|sarif|policyreport|html]
    numaguard node agent [--root /] [--listen :9477] [--min-interval 1s] [...the sources of inspect]

Exit codes: 0 every pod admitted; 1 some pod rejected; 2 the tool could not do its job
(missing file, unusable node description or kubelet configuration) - one line, no traceback.
Heavy modules are imported inside the commands.
"""
from __future__ import annotations

import json

import click

from numaguard.lint.cli.main import Command


class UsageProblem(click.ClickException):
    exit_code = 2


def carried_objects(paths: tuple[str, ...], carriers, problem=None):
    """Every object of the files that carries pod templates, in order, as (where, object,
    Classified); `where` is "file:line". A broken file or document is reported (on stderr,
    or to `problem(line)`) and skipped; the other objects still come."""
    from numaguard.lint.load.documents import expand_lists, load_paths
    from numaguard.lint.objects import classify

    report = problem or (lambda line: click.echo(f"numaguard: {line}", err=True))
    try:
        loaded = list(load_paths(paths))
    except FileNotFoundError as exc:
        raise UsageProblem(f"{exc.filename}: no such file or directory") from None
    for source, documents, errors in loaded:
        for error in errors:
            where = f":{error.line}" if error.line else ""
            report(f"skipped {error.source}{where}: {error.message}")
        for doc in documents:
            if doc.skip is not None:          # a template, a kustomize patch, not an object
                continue
            for item, prefix in expand_lists(doc):
                data = item.data
                for key in prefix:
                    data = data[key]
                if not isinstance(data, dict):
                    continue
                found = classify(data, carriers)
                if found.pods:
                    yield f"{doc.source}:{_line_of(data, doc.line)}", data, found


def _line_of(data, default: int) -> int:
    """The line of the object's first field (a List item starts below its document)."""
    marks = getattr(data, "marks", None)
    return min((line for line, _column in marks.values()), default=default) if marks else default


def _load_pods(paths: tuple[str, ...], carriers) -> list:
    """Every Pod and pod template in the files, in order, as (ObjectRef, pod dict); the
    templates of an object that holds several are told apart by their path (a mapping ref
    with "template": `spec.replicatedJobs[1].template.spec.template`).

    A broken file or document is reported on stderr and skipped; the other pods still play
    out (the order of the rest is kept)."""
    pods = []
    for _where, _data, found in carried_objects(paths, carriers):
        for pod in found.pods:
            ref = found.ref if len(found.pods) == 1 else {
                "kind": found.ref.kind, "namespace": found.ref.namespace, "name": found.ref.name,
                "template": pod.template_path}
            pods.append((ref, {"spec": pod.spec}))
    return pods


def _load_kubelet_config(path: str | None, carriers) -> dict | None:
    if path is None:
        return None
    from numaguard.lint.load.documents import load_paths
    from numaguard.lint.objects import classify

    try:
        loaded = list(load_paths([path]))
    except FileNotFoundError:
        raise UsageProblem(f"{path}: no such file or directory") from None
    for _source, documents, errors in loaded:
        if errors:
            raise UsageProblem(f"{path}: {errors[0].message}")
        for doc in documents:
            if isinstance(doc.data, dict) and classify(doc.data, carriers).kind == "kubelet":
                return doc.data
    raise UsageProblem(f"{path}: no KubeletConfiguration (kubelet.config.k8s.io) document found")


@click.command(cls=Command)     # reports the config file's UsageProblem (common.load_config)
@click.option("--node", "node_path", required=True,
              help="Node description: a NodeProfile, lscpu --parse output, a "
                   "NodeResourceTopology, or builtin:NAME.")
@click.option("--kubelet-config", "kubelet_config_path", type=click.Path(dir_okay=False),
              help="KubeletConfiguration to use instead of the node description's own.")
@click.option("--format", "output_format", type=click.Choice(["text", "json", "html"]), default="text",
              show_default=True, help="html: one self-contained page with the node's NUMA map after "
                                      "every pod (the same drawing as `audit --format html`).")
@click.option("--config", "config_path", type=click.Path(dir_okay=False),
              help="Config file (default: .numaguard.yaml here or above); its podTemplates name "
                   "more kinds that carry pod templates.")
@click.argument("pod_files", nargs=-1, required=True)
def simulate(node_path, kubelet_config_path, output_format, config_path, pod_files) -> None:
    """Admit the pods in POD_FILE... one after another on one node, as its kubelet would."""
    from numaguard.lint.cli.common import load_config
    from numaguard.lint.numa.admission import KubeletStartupError
    from numaguard.lint.numa.node import NodeError, load_node_file
    from numaguard.lint.numa.simulate import render_text, simulate as run

    try:
        node = load_node_file(node_path)
    except NodeError as exc:
        raise UsageProblem(str(exc)) from None
    carriers = load_config(config_path).pod_carriers
    kubelet_config = _load_kubelet_config(kubelet_config_path, carriers)
    pods = _load_pods(pod_files, carriers)
    if not pods:
        raise UsageProblem("no Pod or pod template found in " + ", ".join(pod_files))
    try:
        report = run(node, pods, kubelet_config=kubelet_config)
    except KubeletStartupError as exc:
        raise UsageProblem(f"{node.source}: the kubelet would not start: {exc}") from None
    if output_format == "json":
        click.echo(json.dumps(report, indent=2))
    elif output_format == "html":
        click.echo(_html_page(node, pods, kubelet_config), nl=False)
    else:
        click.echo(render_text(report, node), nl=False)
    raise SystemExit(1 if report["summary"]["rejected"] else 0)


def _html_page(node, pods, kubelet_config) -> str:
    """The pods played out again on a fresh node state, drawn as the audit draws a live node."""
    from numaguard.lint.engine import LintResult
    from numaguard.lint.model import Summary
    from numaguard.lint.numa.admission import NodeState
    from numaguard.lint.numa.occupancy import occupy
    from numaguard.lint.report.html import render

    state = NodeState.from_node(node, kubelet_config)
    occupancy = occupy(state, [(_label(ref), pod) for ref, pod in pods], notes=list(node.notes))
    result = LintResult(findings=[], summary=Summary(objects=len(pods)), nodes=[occupancy])
    return render(result, title=f"numaguard simulate: {node.name}")


def _label(ref) -> str:
    from numaguard.lint.numa.simulate import object_fields, object_label

    return object_label(object_fields(ref))


@click.group()
def node() -> None:
    """Node descriptions for the NUMA simulator."""


@node.command()
@click.option("--sysfs", "sysfs_root", default="/sys", show_default=True,
              help="Root of the sysfs tree to read (for a copy taken from another machine).")
def capture(sysfs_root) -> None:
    """Describe this machine (CPUs, NUMA nodes, memory, hugepages) as a NodeProfile."""
    from numaguard.lint.numa.capture import capture_node, node_profile_yaml
    from numaguard.lint.numa.node import NodeError

    try:
        profile = capture_node(sysfs_root)
    except NodeError as exc:
        raise UsageProblem(str(exc)) from None
    except OSError as exc:
        raise UsageProblem(f"{sysfs_root}: {exc.strerror or exc}") from None
    click.echo(node_profile_yaml(profile), nl=False)


class Duration(click.ParamType):
    """A duration as "5s", "500ms", "1m" or plain seconds; 0 to 600 s (nothing waits longer)."""

    name = "duration"
    UNITS = {"ms": 0.001, "s": 1.0, "m": 60.0, "": 1.0}

    def convert(self, value, param, ctx):
        if isinstance(value, (int, float)):
            return float(value)
        text = str(value).strip()
        number = text.rstrip("ms")
        unit = text[len(number):]
        try:
            seconds = float(number) * self.UNITS[unit]
        except (KeyError, ValueError):
            self.fail(f'{value!r} is not a duration like "5s", "500ms" or "1m"', param, ctx)
        if not 0 <= seconds <= 600:
            self.fail(f"{value!r} is not between 0 and 10 minutes", param, ctx)
        return seconds


def kubelet_sources(command):
    """The options naming where a node command finds the node and the kubelet's state (node
    inspect, node agent)."""
    for option in reversed((
            click.option("--root", default="/", show_default=True,
                         help="Where the node's file system is mounted (/host in a DaemonSet or kubectl debug pod)."),
            click.option("--state-dir", default="/var/lib/kubelet", show_default=True,
                         help="The kubelet's state directory (cpu_manager_state, memory_manager_state)."),
            click.option("--socket", "socket_path", default="/var/lib/kubelet/pod-resources/kubelet.sock",
                         show_default=True, help="The kubelet's PodResources API socket."))):
        command = option(command)
    return command


@node.command(name="inspect")
@kubelet_sources
@click.option("--sysfs", "sysfs_root", type=click.Path(file_okay=False),
              help="Where the node's /sys is (default: ROOT/sys): the machine the checkpoints are compared with.")
@click.option("--kubelet-config", "kubelet_config", type=click.Path(dir_okay=False),
              help="The KubeletConfiguration to judge (default: the node's own, ROOT/var/lib/kubelet/config.yaml). "
                   "Give a NEW one before rolling it out: the report says whether the kubelet restarts with it and "
                   "what happens to the running pods' CPUs and memory (compared with the checkpoints and the "
                   "node's own configuration).")
@click.option("--pods", "pods_path", type=click.Path(dir_okay=False),
              help="Pod manifests of this node (kubectl get pods -o yaml --field-selector spec.nodeName=NODE): "
              "replay them instead of what each pod holds, and judge checkpoint entries of gone pods.")
@click.option("--timeout", type=click.FloatRange(min=0.1), default=10.0, show_default=True,
              help="Seconds to wait for the PodResources API (both calls together).")
@click.option("--kubernetes-version", "kubernetes_version", default="1.37", show_default=True,
              help="The kubelet's minor version: how it reads its checkpoints (1.36 and earlier still "
                   "migrate V1 CPU checkpoints).")
@click.option("--processes", is_flag=True,
              help="Also read the kernel's view of every container from ROOT/proc and ROOT/sys/fs/cgroup (cgroup "
                   "v2): its cgroup's effective cpuset, where its threads may run and ran, where its memory is, "
                   "and its CFS throttling (NG412-NG418).")
@click.option("--sample", type=Duration(), default="5s", show_default=True,
              help="With --processes: how long to watch threads' CPU time and cgroups' nr_throttled (0: read once).")
@click.option("--max-remote-memory", "max_remote", type=click.FloatRange(0, 100), default=10.0, show_default=True,
              help="With --processes: percent of a container's resident memory allowed outside its NUMA nodes "
                   "(NG417).")
@click.option("--threads", "hottest", type=click.IntRange(0, 1000), default=5, show_default=True,
              help="With --processes: the hottest threads shown per container.")
@click.option("--format", "fmt", type=click.Choice(["text", "json", "sarif", "policyreport", "html"]),
              default="text", show_default=True,
              help="sarif, policyreport and html carry the findings (html: with the node's NUMA map and, with "
                   "--processes, where each container's memory is).")
def inspect_command(root, sysfs_root, state_dir, socket_path, kubelet_config, pods_path, timeout,
                    kubernetes_version, processes, sample, max_remote, hottest, fmt) -> None:
    """Compare what each container got (PodResources API) with the checkpoints and the simulator,
    and with --processes with what the kernel enforces and where the application runs; and say
    whether the kubelet restarts with the configuration (--kubelet-config) and what that does
    to the running pods.

    Exit codes: 0 everything was read and agrees; 1 a container differs or a finding is an
    error; 2 nothing from the kubelet could be read; 3 incomplete: a source was not read or a
    container could not be matched to its checkpoint entries (or, with --processes, to its
    cgroup). Each source that cannot be read is one line; the last line says what was checked."""
    from numaguard.lint.config import ConfigError, parse_version
    from numaguard.lint.node.inspect import inspect_node, render_text
    from numaguard.lint.node.processes import ProcessOptions

    try:
        version = parse_version(kubernetes_version)
    except ConfigError:
        raise UsageProblem(f'--kubernetes-version: {kubernetes_version!r} is not a version like "1.37"') from None
    options = ProcessOptions(sample=sample, max_remote=max_remote / 100, hottest=hottest) if processes else None
    report = inspect_node(root=root, state_dir=state_dir, socket=socket_path, kubelet_config=kubelet_config,
                          pods=pods_path, timeout=timeout, version=version, processes=options, sysfs=sysfs_root)
    if fmt == "text":
        click.echo(render_text(report), nl=False)
        raise SystemExit(report.exit_code)
    if fmt == "json":
        click.echo(json.dumps(report.as_dict(), indent=2))
    else:
        from numaguard.lint.node.reporting import as_lint_result
        from numaguard.lint.report import writer_for

        write = writer_for(fmt)
        extra = {"title": f"numaguard node inspect: {report.node}"} if fmt == "html" else {}
        click.echo(write(as_lint_result(report), **extra), nl=False)
    for source in report.sources:       # the text report shows these lines itself
        if not source.ok:
            click.echo(f"numaguard: {source.name}: {source.message}", err=True)
    if fmt != "json":                   # the JSON report has it (summary.line); the others do not
        click.echo(f"numaguard: {report.summary_line()}", err=True)
    raise SystemExit(report.exit_code)


@node.command(name="agent")
@kubelet_sources
@click.option("--kubelet-config", "kubelet_config", type=click.Path(dir_okay=False),
              help="The node's KubeletConfiguration (default: ROOT/var/lib/kubelet/config.yaml): where the kubelet "
                   "puts the pods' cgroups (cgroupRoot, cgroupsPerQOS).")
@click.option("--timeout", type=click.FloatRange(min=0.1), default=2.0, show_default=True,
              help="Seconds a scrape waits for the PodResources API.")
@click.option("--kubernetes-version", "kubernetes_version", default="1.37", show_default=True,
              help="The kubelet's minor version: how it reads its checkpoints.")
@click.option("--listen", default=":9477", show_default=True,
              help="Address to serve /metrics and /healthz on: HOST:PORT, [IPv6]:PORT or :PORT (port 0: any free).")
@click.option("--min-interval", "min_interval", type=Duration(), default="1s", show_default=True,
              help="Scrapes closer together than this get the previous answer.")
def agent_command(root, state_dir, socket_path, kubelet_config, timeout, kubernetes_version, listen,
                  min_interval) -> None:
    """Serve, for Prometheus, each container's alignment (cpuset against its assignment, threads
    outside its CPUs), memory locality, faults, CPU throttling, pressure and run-queue delay, and
    the node's NUMA counters and shared pool. Runs until SIGTERM; exit 2 on a bad option or an
    address that cannot be bound. deploy/README.md: "The node agent"."""
    import sys

    from numaguard.lint.cli.agent_server import parse_listen, serve
    from numaguard.lint.config import ConfigError, parse_version
    from numaguard.lint.node.agent import NodeAgent
    from numaguard.lint.node.inventory import Inventory

    try:
        version = parse_version(kubernetes_version)
        parse_listen(listen)
    except ConfigError:
        raise UsageProblem(f'--kubernetes-version: {kubernetes_version!r} is not a version like "1.37"') from None
    except ValueError as exc:
        raise UsageProblem(f"--listen: {exc}") from None

    def log(line: str) -> None:
        print(f"numaguard node agent: {line}", file=sys.stderr, flush=True)

    inventory = Inventory(root, state_dir, socket_path, kubelet_config, timeout, version)
    agent = NodeAgent(inventory, root, min_interval=min_interval, log=log)
    agent.collect()                      # the first look: what is missing is logged before any scrape
    try:
        serve(agent, listen, log)
    except OSError as exc:
        raise UsageProblem(f"--listen {listen}: {exc.strerror or exc}") from None
    finally:
        inventory.close()


COMMANDS = (simulate, node)

__all__ = ["simulate", "node", "capture", "inspect_command", "agent_command", "COMMANDS"]
