"""`numaguard audit`: read the pool from the API server and judge it while it is read.

Reading (numaguard.lint.cluster.api, .paging): the pools' nodes (`pool_selectors`: `-l`, else
one list per configured pool by its `nodeLabels`, or every node kept when it carries the taint
of a pool known by its taint alone, else every node); each node's
effective kubelet configuration through the API server's node proxy
(`/api/v1/nodes/NAME/proxy/configz`, answered by the kubelet's /configz handler,
pkg/kubelet/server/server.go, as `{"kubeletconfig": {...}}` without apiVersion/kind, which we
add), `--workers` nodes at a time in the background from the moment the node names are known;
NodeResourceTopology objects (topology.node.k8s.io/v1alpha2) when the CRD exists; then all pods
(or one namespace's), page by page, each page judged while the next is read
(numaguard.lint.cluster.judge: each distinct pod template once).

What cannot be read is one line each in `problems` and the audit goes on, but the audit is
then incomplete: `unread` names what is missing (a list, or which nodes' configurations) and
the command exits 3. A CRD that is not installed is a note, not something missing. Only
"nothing at all could be read" (or refused credentials, or no API server) is fatal.

Pools (`pool_config`): a node belongs to the pools whose labels (or taint) it carries, and its
kubelet configuration `node/NAME` is named in those pools; with no pool in the config the nodes
`-l` selects are one pool, and with neither nothing is compared.

Judging, between pages: the pods as they come (judge.PodJudge), each against its pool's first
node (by name) that has a NodeResourceTopology and a configuration (the first such node of all
for pods of no pool); each node's kubelet configuration (file `node/NAME`), Node object and
NodeResourceTopology as its configz answers, in name order (_NodeJudge), in the one engine run
whose pool rules (NG401, NG404, NG405) then compare each pool's members. After the last page:
each node's occupancy (judge.occupancies).
"""
from __future__ import annotations

import threading
import time
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, Callable

from numaguard.lint.cluster import trim
from numaguard.lint.cluster.api import CONFIGZ_BACKOFF, ApiError, Cluster, ClusterError, Unreachable, configz_retriable
from numaguard.lint.cluster.judge import PodJudge, occupancies, representative_node
from numaguard.lint.cluster.paging import ListFailed, ListStats, list_pages, prefetched
from numaguard.lint.cluster.problems import PROXY, configz_error, count, grouped, list_unread, nodes_phrase
from numaguard.lint.model import Unread, unread_phrases

NRT_PATH = "/apis/topology.node.k8s.io/v1alpha2/noderesourcetopologies"
KUBELET_API_VERSION = "kubelet.config.k8s.io/v1beta1"
DEFAULT_WORKERS = 16


@dataclass(frozen=True)
class Progress:
    """Where reading stands, for a status line: counts so far and the nodes whose
    configuration is being read right now, with the time each request started
    (time.monotonic)."""
    phase: str
    nodes: int = 0
    pods: int = 0
    configz_done: int = 0
    configz_total: int = 0
    in_flight: tuple[tuple[str, float], ...] = ()


@dataclass
class ReadReport:
    """What was read, what went wrong (`problems`, one line each), what is missing (`unread`:
    when not empty, the audit is incomplete) and the nodes deleted while it ran (`gone`)."""
    nodes: int = 0
    pods: int = 0
    templates: int = 0
    configs: int = 0
    problems: list[str] = field(default_factory=list)
    unread: list[Unread] = field(default_factory=list)
    gone: list[str] = field(default_factory=list)

    @property
    def incomplete(self) -> bool:
        return bool(self.unread)

    def summary_line(self) -> str:
        return "audit incomplete: not read: " + "; ".join(unread_phrases(self.unread))


@dataclass
class AuditTiming:
    wall_seconds: float = 0.0
    waiting_seconds: float = 0.0     # summed time inside HTTP requests (all threads)
    requests: int = 0
    judge_seconds: float = 0.0       # judging pods, the configurations and the occupancy


class _Tracker:
    """Keeps the Progress and hands a copy to the callback on every change."""

    def __init__(self, callback: Callable[[Progress], None] | None) -> None:
        self.callback = callback
        self.lock = threading.Lock()
        self.state = Progress("nodes")
        self.in_flight: dict[str, float] = {}

    def update(self, **changes: Any) -> None:
        if self.callback is None:
            return
        with self.lock:
            self.state = Progress(**{**self.state.__dict__, **changes,
                                     "in_flight": tuple(self.in_flight.items())})
            state = self.state
        self.callback(state)

    def started(self, name: str) -> None:
        with self.lock:
            self.in_flight[name] = time.monotonic()
        self.update()

    def finished(self, name: str) -> None:
        with self.lock:
            self.in_flight.pop(name, None)
            done = self.state.configz_done + 1
        self.update(configz_done=done)


# What a node's configz gives when the node was deleted after the nodes list was read: the
# node proxy answers the API server's own 404 for the Node (pkg/registry/core/node/rest
# proxy.go looks the node up first: `nodes "NAME" not found`).
GONE = "gone"


class _Configz:
    """The kubelet configurations, read in the background (`workers` at a time, in name order)."""

    def __init__(self, cluster: Cluster, names: list[str], workers: int, tracker: _Tracker) -> None:
        self.cluster, self.tracker = cluster, tracker
        self.pool = ThreadPoolExecutor(max_workers=max(1, workers), thread_name_prefix="numaguard-configz")
        self.futures: dict[str, Future] = {name: self.pool.submit(self._one, name) for name in names}

    def _one(self, name: str) -> dict | str:
        """The node's configuration, or what went wrong in words."""
        self.tracker.started(name)
        failures: list[Exception] = []
        try:
            data = self.cluster.get_with_retries(f"/api/v1/nodes/{name}/proxy/configz", None,
                                                 backoff=CONFIGZ_BACKOFF, retriable=configz_retriable,
                                                 on_retry=failures.append)
        except ApiError as exc:
            if exc.is_not_found("nodes", name):
                return GONE
            return configz_error(exc, self.cluster.request_timeout, max(len(failures), 1))
        except Unreachable as exc:
            return configz_error(exc, self.cluster.request_timeout, max(len(failures), 1))
        finally:
            self.tracker.finished(name)
        kc = data.get("kubeletconfig") if isinstance(data, dict) else None
        if not isinstance(kc, dict):
            return f"{PROXY}: the answer has no kubeletconfig object"
        return {"apiVersion": KUBELET_API_VERSION, "kind": "KubeletConfiguration", **kc}

    def ready(self, name: str) -> bool:
        return self.futures[name].done()

    def result(self, name: str) -> dict | str:
        """The node's configuration or what went wrong, waiting for it."""
        return self.futures[name].result()

    def config(self, name: str) -> dict | None:
        found = self.result(name)
        return found if isinstance(found, dict) else None

    def close(self) -> None:
        self.pool.shutdown(wait=False, cancel_futures=True)


class _Representative:
    """Picks the nodes the NUMA-fit rules judge pods against once their configurations are
    read: of all nodes, and of each pool's (`pools`: pool name -> its nodes' names), the first
    candidate (by name, with a NodeResourceTopology) whose configz answered."""

    def __init__(self, candidates: list[str], topologies: dict[str, dict], configz: _Configz | None,
                 pools: dict[str, list[str]] | None = None) -> None:
        self.topologies, self.configz = topologies, configz
        self.queues = {None: list(candidates)}
        self.queues.update({pool: [n for n in candidates if n in members] for pool, members in (pools or {}).items()})
        self.picked: dict[str | None, Any] = {}

    def try_pick(self, judge: PodJudge, *, wait: bool) -> None:
        if judge.node_known:
            return
        for key, queue in self.queues.items():
            while key not in self.picked:
                if not queue or self.configz is None:
                    self.picked[key] = None
                    break
                name = queue[0]
                if not wait and not self.configz.ready(name):
                    return
                kc = self.configz.config(name)
                queue.pop(0)
                node = representative_node(self.topologies, {name: kc} if kc else {}, [name])
                if node is not None:
                    self.picked[key] = node
        judge.use_node(self.picked[None], {k: v for k, v in self.picked.items() if k is not None and v is not None})


class _NodeJudge:
    """The nodes' documents (kubelet configuration as file `node/NAME`, Node object,
    NodeResourceTopology) judged in name order as their configurations arrive, in the engine
    run that then takes the pods' findings: its pool rules (NG401 over each pool's kubelet
    configurations, NG404/NG405 over its nodes' hardware) compare each pool's members."""

    def __init__(self, nodes: list[dict], topologies: dict[str, dict], configz: _Configz | None,
                 config: Any, selection: Any) -> None:
        self.nodes = {n["metadata"].get("name"): n for n in nodes if n["metadata"].get("name")}
        self.names = sorted(self.nodes)
        self.topologies, self.configz = topologies, configz
        self.config, self.selection = config, selection
        self.linter = None
        self.next = self.documents = 0
        self.configs: dict[str, dict] = {}
        self.failures: dict[str, str] = {}      # node -> what went wrong reading its configz
        self.gone: list[str] = []               # nodes deleted after the nodes list was read

    def step(self, judge: PodJudge, *, wait: bool) -> None:
        """Judge the nodes whose configz has answered (all of them with `wait`), once the node
        the NUMA-fit rules judge against is known."""
        from numaguard.lint.engine import Linter
        from numaguard.lint.load.documents import Document

        if not judge.node_known:
            return
        if self.linter is None:
            self.linter = Linter(config=self.config, selection=self.selection, node=judge.node,
                                 pool_nodes=judge.pool_nodes)
        while self.next < len(self.names):
            name = self.names[self.next]
            if self.configz is not None and not wait and not self.configz.ready(name):
                return
            found = self.configz.result(name) if self.configz is not None else None
            self.next += 1
            if found is GONE:
                self.gone.append(name)
                continue
            documents = []
            if isinstance(found, dict):
                self.configs[name] = found
                documents.append(Document(source=f"node/{name}", index=0, data=found, line=0, ignores=frozenset()))
            elif found is not None:
                self.failures[name] = found
            documents.append(Document(source=f"node/{name}", index=1, data=self.nodes[name], line=0,
                                      ignores=frozenset()))
            if name in self.topologies:
                documents.append(Document(source=f"nrt/{name}", index=0, data=self.topologies[name], line=0,
                                          ignores=frozenset()))
            self.linter.lint(documents)
            self.documents += len(documents)


def _read_list(cluster: Cluster, report: ReadReport, path: str, keep, *, what: str, noun: str,
               query=None, first: bool = False, consume: Callable | None = None,
               consequence: str = "", namespace: str | None = None) -> tuple[list, bool]:
    """Read a whole list; (its items, whether it was read whole). `consume(page)` takes each
    page instead of the list keeping the items; `consequence` is said when the list fails."""
    stats, items = ListStats(), []
    failed = None
    try:
        for page in prefetched(list_pages(cluster, path, keep, query, stats)):
            if consume is not None:
                consume(page)
                continue
            if page.restarted:
                items.clear()
            items.extend(page.items)
    except ListFailed as exc:
        failed = exc
    complete = failed is None
    if stats.restarts:
        report.problems.append(f"the {what} list restarted from its beginning: its continue token expired "
                               "(410 Expired)")
    if failed is not None:
        _list_failed(cluster, report, failed, stats, what=what, noun=noun, first=first,
                     consequence=consequence, namespace=namespace)
    retried = len(stats.failures) - (0 if complete else 1)
    if complete and retried:
        report.problems.append(f"the {what} list was read after {count(retried, 'retry', 'retries')} "
                               f"({_error_line(stats.failures[0])})")
    return items, complete


def _list_failed(cluster: Cluster, report: ReadReport, failed: ListFailed, stats: ListStats, *,
                 what: str, noun: str, first: bool, consequence: str = "", namespace: str | None = None) -> None:
    exc = failed.error
    refused = isinstance(exc, ApiError) and exc.status == 401
    if refused and not cluster.answered:
        raise ClusterError(f"the API server refused the credentials ({exc.line()}): the token "
                           "may have expired; log in again or refresh the kubeconfig")
    if first and isinstance(exc, Unreachable) and not failed.pages and exc.kind != "deadline":
        where = f" ({cluster.server})" if cluster.server else ""
        raise ClusterError(f"cannot reach the API server{where}: {exc}")
    context = []
    # every retried failure was an attempt; so was the last one when it was not retriable
    attempts = len(stats.failures) + (0 if stats.failures and stats.failures[-1] is exc else 1)
    if attempts > 1:
        context.append(f"{attempts} attempts")
    if failed.pages:
        context.append(f"page {failed.pages + 1}; {count(failed.items, noun)} read before it")
    if exc.gave_up:
        context.append(exc.gave_up)
    if refused:
        consequence += ": the credentials were refused mid-audit; what was read before is reported"
    line = f"cannot list {what}: {_error_line(exc)}" + (f" ({', '.join(context)})" if context else "") + consequence
    report.problems.append(line)
    report.unread.append(Unread(list_unread(what, noun, failed.items), line, namespace=namespace))


def _error_line(exc: Exception) -> str:
    return exc.line() if isinstance(exc, ApiError) else str(exc)


def read_nodes(cluster: Cluster, report: ReadReport, node_selector: str | None,
               config: Any = None) -> tuple[list[dict], bool]:
    """The nodes to audit (`pool_selectors`), each once, and whether every list was read whole."""
    selectors, keep = ([node_selector], None) if node_selector else pool_selectors(config)
    nodes: dict[str, dict] = {}
    complete = True
    for selector in selectors:
        query = [("labelSelector", selector)] if selector else []
        found, whole = _read_list(cluster, report, "/api/v1/nodes", trim.node, what="nodes", noun="node",
                                  query=query, first=True,
                                  consequence=": the kubelet configuration, NodeResourceTopology and "
                                              "occupancy of the nodes it did not name are not read either")
        complete = complete and whole
        for node in found:
            if keep is None or keep(node):
                nodes.setdefault(node["metadata"].get("name"), node)
    report.nodes = len(nodes)
    return list(nodes.values()), complete


def pool_selectors(config: Any) -> tuple[list[str | None], Callable[[dict], bool] | None]:
    """How to list the config's pools' nodes: one label selector per pool with nodeLabels, or
    every node (None) kept when it is a pool's, when a pool is known by its taint alone. No
    pool that nodes can join: every node."""
    pools = [p for p in (config.pools if config is not None else ()) if p.recognises_pods]
    if not pools:
        return [None], None
    if all(p.node_labels for p in pools):
        return [",".join(f"{k}={v}" for k, v in sorted(p.node_labels.items())) for p in pools], None
    return [None], lambda node: any(_in_pool(p, node) for p in pools)


def read_topologies(cluster: Cluster, report: ReadReport, names: set[str]) -> dict[str, dict]:
    """The NodeResourceTopologies of the pool's nodes; a CRD that is not installed is a note."""
    stats, found = ListStats(), {}
    try:
        for page in list_pages(cluster, NRT_PATH, trim.node_resource_topology, None, stats):
            if page.restarted:
                found.clear()
            found.update((n["metadata"].get("name"), n) for n in page.items if n["metadata"].get("name") in names)
    except ListFailed as failed:
        if isinstance(failed.error, ApiError) and failed.error.status == 404 and not failed.pages:
            report.problems.append("NodeResourceTopology (topology.node.k8s.io/v1alpha2) is not installed: "
                                   "NUMA layouts come from node capacity (one NUMA node each)")
        else:
            _list_failed(cluster, report, failed, stats, what="noderesourcetopologies",
                         noun="noderesourcetopology", first=False)
    return found


def audit(cluster: Cluster, *, namespace: str | None = None, node_selector: str | None = None,
          config=None, selection=None, workers: int = DEFAULT_WORKERS,
          progress: Callable[[Progress], None] | None = None, collect=None):
    """Read and judge; returns (LintResult, ReadReport, AuditTiming). Raises ClusterError when
    nothing could be read. `collect` (numaguard.lint.cluster.snapshot.Collector) keeps what was
    read for `--snapshot`."""
    from numaguard.lint.load.collector import collector_paused

    # The pages are trees of plain data without cycles, built and dropped by the thousand:
    # the cyclic collector would walk the heap again and again for nothing.
    with collector_paused():
        return _audit(cluster, namespace=namespace, node_selector=node_selector, config=config,
                      selection=selection, workers=workers, progress=progress, collect=collect)


def _audit(cluster: Cluster, *, namespace, node_selector, config, selection, workers, progress, collect=None):
    from numaguard.lint.engine import Selection

    from numaguard.lint.config import Config

    started = time.perf_counter()
    config = config or Config()
    report, timing, tracker = ReadReport(), AuditTiming(), _Tracker(progress)
    cluster.notify = report.problems.append

    tracker.update(phase="nodes")
    nodes, nodes_read = read_nodes(cluster, report, node_selector, config)
    config = pool_config(config, nodes, node_selector)
    selection = selection or Selection(severities=config.severities)
    judge = PodJudge(config, selection)
    node_names = sorted({n["metadata"].get("name") for n in nodes} - {None})
    tracker.update(phase="noderesourcetopologies", nodes=len(node_names), configz_total=len(node_names))
    configz = _Configz(cluster, node_names, workers, tracker) if node_names else None
    judging = 0.0
    try:
        topologies = read_topologies(cluster, report, set(node_names)) if node_names else {}
        representative = _Representative([n for n in node_names if n in topologies], topologies, configz,
                                         _pool_members(config, nodes))
        node_judge = _NodeJudge(nodes, topologies, configz, config, selection)
        tracker.update(phase="pods")

        def judge_page(page) -> None:
            nonlocal judging
            began = time.perf_counter()
            if page.restarted:
                judge.restart()
                if collect is not None:
                    collect.restart_pods()
            if collect is not None:
                collect.keep_pods(page.items)
            for pod in page.items:
                judge.add(pod)
            representative.try_pick(judge, wait=False)
            node_judge.step(judge, wait=False)
            judge.judge_pending()
            judging += time.perf_counter() - began
            tracker.update(pods=judge.pods)

        pods_path = f"/api/v1/namespaces/{namespace}/pods" if namespace else "/api/v1/pods"
        _, pods_read = _read_list(cluster, report, pods_path, trim.pod, what="pods", noun="pod",
                                  consume=judge_page, namespace=namespace)
        tracker.update(phase="kubelet configurations")
        began = time.perf_counter()
        representative.try_pick(judge, wait=True)
        node_judge.step(judge, wait=True)
    finally:
        if configz is not None:
            configz.close()
    if not nodes_read and not nodes and not pods_read and not judge.pods:
        raise ClusterError("nothing could be read from the cluster: " + "; ".join(report.problems))
    configs, failures = node_judge.configs, node_judge.failures
    if node_judge.gone:
        report.gone = list(node_judge.gone)
        report.problems.append(f"{nodes_phrase(report.gone)} no longer exist{'s' if len(report.gone) == 1 else ''}: "
                               "deleted after the nodes list was read; not judged")
    if failures:
        report.problems.extend(grouped(failures))
        report.unread.extend(Unread(f"the kubelet configuration of node/{node}", why, nodes=(node,))
                             for node, why in failures.items())
    report.nodes -= len(report.gone)
    report.pods, report.configs, report.templates = judge.pods, len(configs), judge.templates
    present = [n for n in nodes if n["metadata"].get("name") not in set(report.gone)]
    if collect is not None:
        collect.nodes, collect.topologies, collect.configs = present, topologies, dict(configs)
        collect.incomplete = unread_phrases(report.unread)
    result = _result(judge, node_judge, present, topologies, pods_note=None if pods_read else
                     "the pods list was not read completely: pods may be missing here")
    result.unread = list(report.unread)
    timing.judge_seconds = judging + time.perf_counter() - began
    timing.wall_seconds = time.perf_counter() - started
    timing.waiting_seconds, timing.requests = cluster.timing.waiting, cluster.timing.requests
    return result, report, timing


def _result(judge: PodJudge, node_judge: _NodeJudge, nodes: list[dict], topologies: dict[str, dict], *,
            pods_note: str | None = None):
    """The pods' findings merged into the nodes' engine run (its pool rules compare each pool's
    members), with each node's occupancy for the reports."""
    linter = node_judge.linter
    parts = judge.parts()
    for part in parts:
        linter.absorb(part)
    result = linter.finish()
    result.summary.files = node_judge.documents + len(parts)
    result.workloads = dict(judge.workloads)
    result.nodes = occupancies(nodes, topologies, node_judge.configs, judge, pods_note=pods_note)
    return result


class _ConfigsInHand:
    """Kubelet configurations a caller already has, behind the interface `_Configz` gives the
    audit (every one answered; a missing one is unknown)."""

    def __init__(self, configs: dict[str, dict]) -> None:
        self.configs = configs

    def ready(self, name: str) -> bool:
        return True

    def result(self, name: str) -> dict | None:
        return self.configs.get(name)

    config = result


def judge_objects(nodes: list[dict], topologies: dict[str, dict], configs: dict[str, dict],
                  pods: list[dict], *, config=None, selection=None, pool_name: str = "default"):
    """Judge a pool already in hand as `audit` judges what it reads (no I/O): Node objects,
    NodeResourceTopologies and kubelet configurations by node name, and Pods, as
    `numaguard.lint.cluster.trim` keeps them. The nodes given are one pool named `pool_name`,
    unless the config declares its pools (then grouped by them, as `audit` does). Returns the
    LintResult with each node's occupancy."""
    from numaguard.lint.engine import Selection

    config = pool_config(config, nodes, pool_name)
    selection = selection or Selection(severities=config.severities)
    judge = PodJudge(config, selection)
    in_hand = _ConfigsInHand(configs)
    names = sorted({n["metadata"].get("name") for n in nodes} - {None})
    node_judge = _NodeJudge(nodes, topologies, in_hand, config, selection)
    for pod in pods:
        judge.add(pod)
    _Representative([n for n in names if n in topologies], topologies, in_hand,
                    _pool_members(config, nodes)).try_pick(judge, wait=True)
    node_judge.step(judge, wait=True)
    return _result(judge, node_judge, nodes, topologies)


def pool_config(config=None, nodes: list[dict] = (), selected_by: str | None = None):
    """The config with each node's kubelet configuration (`node/NAME`) named in the pools its
    node belongs to, so it is held to that pool's requirements and compared within it. With no
    pool in the config, the nodes `-l` selected are one pool (every `node/` and `nrt/` object);
    with neither, nothing is a pool."""
    from dataclasses import replace

    from numaguard.lint.config import Config
    from numaguard.lint.model import PoolSettings

    config = config or Config()
    if not config.pools:
        if not selected_by:
            return config
        return replace(config, pools=(PoolSettings(kubelet_configs=("node/*", "nrt/*"), name=selected_by),))
    pools = tuple(replace(pool, kubelet_configs=pool.kubelet_configs + tuple(
        f"node/{n['metadata'].get('name')}" for n in nodes if _in_pool(pool, n))) for pool in config.pools)
    return replace(config, pools=pools)


def _in_pool(pool, node: dict) -> bool:
    return pool.has_node(node["metadata"].get("labels"), node.get("spec", {}).get("taints"))


def _pool_members(config, nodes: list[dict]) -> dict[str, list[str]]:
    """Pool name -> the names of its nodes (a pool declared by `-l`: every node read)."""
    return {pool.name: [n["metadata"].get("name") for n in nodes if "node/*" in pool.kubelet_configs
                        or _in_pool(pool, n)] for pool in config.pools}
