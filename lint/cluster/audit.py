"""`numaguard audit`: read the pool from the API server, judge it with the engine, and replay
each node's current occupancy in the simulator.

Reading (numaguard.lint.cluster.api): the pool's nodes (label selector), all pods (or one
namespace's), each node's effective kubelet configuration through the API server's node
proxy (`/api/v1/nodes/NAME/proxy/configz`, answered by the kubelet's /configz handler,
pkg/kubelet/server/server.go, as `{"kubeletconfig": {...}}` without apiVersion/kind, which we
add), NodeResourceTopology objects (topology.node.k8s.io/v1alpha2) when the CRD exists.
A denial, a missing CRD or an unreachable node is one line in `problems` and the audit goes
on; only "nothing at all could be read" (or refused credentials) is fatal.

Pools: the nodes read are those of the config file's pools (one list per pool, by its
`nodeLabels`; every node, kept when it carries a pool's taint, for a pool declared by its taint
alone), or those `-l` selects, or every node. A node belongs to the pools whose labels (or
taint) it carries; with no pool in the config the nodes `-l` selects are one pool, and with
neither nothing is compared (`pool_config`).

Judging: every kubelet configuration (file `node/NAME`, a configuration of its node's pools),
every pod the kubelet rejected, and one pod per controller (replicas share their template;
file `pod/NAMESPACE/NAME`), together through `lint_documents`, with each pool's first node that
has both a NodeResourceTopology and a configuration as that pool's node description for the
NUMA-fit rules (the first such node of all for pods of no pool). Then, per node, the pods bound
to it (not Succeeded or Failed), oldest first, are admitted on a NodeState built from its
NodeResourceTopology (else its capacity, as one NUMA node) and its configuration.
"""
from __future__ import annotations

import json
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, Callable

from numaguard.lint.cluster import trim
from numaguard.lint.cluster.api import ApiError, Cluster, ClusterError, Unreachable

NRT_PATH = "/apis/topology.node.k8s.io/v1alpha2/noderesourcetopologies"
KUBELET_API_VERSION = "kubelet.config.k8s.io/v1beta1"
DEFAULT_WORKERS = 16


@dataclass
class Snapshot:
    """What was read from the cluster, trimmed (see numaguard.lint.cluster.trim)."""
    nodes: list[dict] = field(default_factory=list)
    pods: list[dict] = field(default_factory=list)
    configs: dict[str, dict] = field(default_factory=dict)        # node name -> KubeletConfiguration
    topologies: dict[str, dict] = field(default_factory=dict)     # node name -> NodeResourceTopology
    problems: list[str] = field(default_factory=list)             # one line each, for stderr
    read_anything: bool = False


@dataclass
class AuditTiming:
    read_seconds: float = 0.0        # wall time reading (HTTP, JSON decoding, trimming)
    waiting_seconds: float = 0.0     # summed time inside HTTP requests (all threads)
    requests: int = 0
    judge_seconds: float = 0.0       # lint + occupancy


def read_cluster(cluster: Cluster, *, namespace: str | None = None,
                 node_selector: str | list[str | None] | None = None, workers: int = DEFAULT_WORKERS,
                 progress: Callable[[int, int], None] | None = None,
                 keep_node: Callable[[dict], bool] | None = None) -> Snapshot:
    """`node_selector`: one label selector, or several (one list each, the nodes of all, once
    each); `keep_node` drops nodes listed but not wanted (a pool known by its taint alone)."""
    snap = Snapshot()
    nodes: dict[str, dict] = {}
    for selector in node_selector if isinstance(node_selector, list) else [node_selector]:
        query = [("labelSelector", selector)] if selector else []
        for node in _list(cluster, snap, "/api/v1/nodes", trim.node, query, "nodes"):
            if keep_node is None or keep_node(node):
                nodes.setdefault(node["metadata"].get("name"), node)
    snap.nodes = list(nodes.values())
    pods_path = f"/api/v1/namespaces/{namespace}/pods" if namespace else "/api/v1/pods"
    snap.pods = _list(cluster, snap, pods_path, trim.pod, [], "pods")
    if not snap.read_anything:
        return snap
    names = {n["metadata"].get("name") for n in snap.nodes}
    try:
        for nrt in cluster.list_items(NRT_PATH, trim.node_resource_topology):
            name = nrt["metadata"].get("name")
            if name in names:
                snap.topologies[name] = nrt
    except ApiError as exc:
        if exc.status == 404:
            snap.problems.append("NodeResourceTopology (topology.node.k8s.io/v1alpha2) is not "
                                 "installed: NUMA layouts come from node capacity (one NUMA node each)")
        else:
            snap.problems.append(f"cannot list noderesourcetopologies: {exc.line()}")
    except Unreachable as exc:
        snap.problems.append(f"cannot list noderesourcetopologies: {exc}")
    _read_configs(cluster, snap, sorted(n for n in names if n), workers, progress)
    return snap


def _list(cluster: Cluster, snap: Snapshot, path: str, keep, query, what: str) -> list:
    try:
        items = cluster.list_items(path, keep, query=query)
    except ApiError as exc:
        if exc.status == 401:
            raise ClusterError(f"the API server refused the credentials ({exc.line()}): the token "
                               "may have expired; log in again or refresh the kubeconfig") from None
        snap.problems.append(f"cannot list {what}: {exc.line()}")
        return []
    except Unreachable as exc:
        raise ClusterError(f"cannot reach the API server: {exc}") from None
    snap.read_anything = True
    return items


def _read_configs(cluster: Cluster, snap: Snapshot, names: list[str], workers: int,
                  progress: Callable[[int, int], None] | None) -> None:
    def one(name: str) -> tuple[str, dict | None, str | None]:
        try:
            data = cluster.get_json(f"/api/v1/nodes/{name}/proxy/configz", timeout=(5, 20))
        except ApiError as exc:
            return name, None, exc.line()
        except Unreachable as exc:
            return name, None, str(exc)
        kc = data.get("kubeletconfig") if isinstance(data, dict) else None
        if not isinstance(kc, dict):
            return name, None, "the answer has no kubeletconfig object"
        return name, {"apiVersion": KUBELET_API_VERSION, "kind": "KubeletConfiguration", **kc}, None

    failures: dict[str, list[str]] = {}
    if progress:
        progress(0, len(names))
    with ThreadPoolExecutor(max_workers=max(1, workers)) as pool:
        for name, kc, error in pool.map(one, names):
            if kc is not None:
                snap.configs[name] = kc
            else:
                # the API server names the node in its message; group on the message without it
                key = (error or "unknown error").replace(name, "<node>")
                failures.setdefault(key, []).append(name)
            if progress:
                progress(1, len(names))
    # One line per distinct problem: 1,000 nodes refusing the same way are one line, not 1,000.
    for error, failed in failures.items():
        shown = ", ".join(failed[:3]) + (f" and {len(failed) - 3} more" if len(failed) > 3 else "")
        where = f"node/{failed[0]}" if len(failed) == 1 else f"{len(failed)} nodes ({shown})"
        error = error.replace("<node>", failed[0]) if len(failed) == 1 else error
        snap.problems.append(f"{where}: cannot read the kubelet configuration through the node "
                             f"proxy: {error}")


# ------------------------------------------------------------------------------ judging

def pods_to_lint(pods: list[dict]) -> list[dict]:
    """Every pod the kubelet rejected, plus the first pod (by name) of each controller and every
    pod without one: the replicas of one controller share their template."""
    from numaguard.lint.rules.state import rejection

    seen: set[tuple] = set()
    out = []
    for pod in sorted(pods, key=lambda p: (p["metadata"].get("namespace") or "", p["metadata"].get("name") or "")):
        meta = pod["metadata"]
        controller = next((r for r in meta.get("ownerReferences", ()) if r.get("controller")), None)
        key = (meta.get("namespace"), controller.get("uid") or controller.get("name")) if controller else None
        if rejection(pod) is not None or key is None or key not in seen:
            out.append(pod)
            if key is not None:
                seen.add(key)
    return out


def workload_of(pod: dict) -> str:
    from numaguard.lint.rules.state import owner_text
    meta = pod["metadata"]
    owner = owner_text(pod)
    ns = meta.get("namespace") or ""
    return f"{ns}/{owner}" if meta.get("ownerReferences") else f"{ns}/Pod/{meta.get('name')}"


def pod_file(pod: dict) -> str:
    meta = pod["metadata"]
    return f"pod/{meta.get('namespace')}/{meta.get('name')}"


def judge(snap: Snapshot, *, config=None, selection=None, selected_by: str | None = None):
    """Lint the snapshot and replay each node's occupancy; returns a LintResult whose `nodes`
    and `workloads` are filled in. `selected_by`: the `-l` selector that chose the nodes."""
    from numaguard.lint.engine import lint_documents
    from numaguard.lint.load.documents import Document

    config = pool_config(config, snap, selected_by)
    members = {pool.name: [n for n in snap.nodes if _in_pool(pool, n)] for pool in config.pools}
    node_desc = representative_node(snap)
    pool_nodes = {name: representative_node(snap, nodes) for name, nodes in members.items()}
    documents = []
    for name in sorted(snap.configs):
        documents.append(Document(source=f"node/{name}", index=0, data=snap.configs[name], line=0,
                                  ignores=frozenset()))
    # The Node objects and NodeResourceTopologies go in too: the pool rules (NG401 within each
    # pool, the nodes' hardware from these objects) judge each pool's nodes together.
    for node in sorted(snap.nodes, key=lambda n: n["metadata"].get("name") or ""):
        name = node["metadata"].get("name")
        documents.append(Document(source=f"node/{name}", index=1, data=node, line=0, ignores=frozenset()))
        if name in snap.topologies:
            documents.append(Document(source=f"nrt/{name}", index=0, data=snap.topologies[name], line=0,
                                      ignores=frozenset()))
    linted = pods_to_lint(snap.pods)
    for pod in linted:
        documents.append(Document(source=pod_file(pod), index=0, data=pod, line=0, ignores=frozenset()))
    result = lint_documents(documents, config=config, selection=selection, node=node_desc,
                            pool_nodes={name: node for name, node in pool_nodes.items() if node is not None})
    result.summary.files = len(documents)
    result.workloads = {pod_file(p): workload_of(p) for p in linted}
    result.nodes = occupancies(snap)
    return result


def pool_config(config=None, snap: Snapshot | None = None, selected_by: str | None = None):
    """The config with each node's kubelet configuration (`node/NAME`) named in the pools its
    node belongs to, so it is held to that pool's requirements and compared within it. With no
    pool in the config, the nodes `-l` selected are one pool (every `node/` and `nrt/` object);
    with neither, nothing is a pool."""
    from dataclasses import replace

    from numaguard.lint.config import Config
    from numaguard.lint.model import PoolSettings

    config = config or Config()
    nodes = snap.nodes if snap is not None else []
    if not config.pools:
        if not selected_by:
            return config
        return replace(config, pools=(PoolSettings(kubelet_configs=("node/*", "nrt/*"), name=selected_by),))
    pools = tuple(replace(pool, kubelet_configs=pool.kubelet_configs + tuple(
        f"node/{n['metadata'].get('name')}" for n in nodes if _in_pool(pool, n))) for pool in config.pools)
    return replace(config, pools=pools)


def _in_pool(pool, node: dict) -> bool:
    return pool.has_node(node["metadata"].get("labels"), node.get("spec", {}).get("taints"))


def pool_selectors(config) -> tuple[list[str | None] | None, Callable[[dict], bool] | None]:
    """How to list the config's pools' nodes: one label selector per pool with nodeLabels, or
    every node (None) filtered to the pools' when a pool is known by its taint alone. No pool
    that nodes can join: (None, None), every node."""
    pools = [p for p in config.pools if p.recognises_pods]
    if not pools:
        return None, None
    if all(p.node_labels for p in pools):
        return [",".join(f"{k}={v}" for k, v in sorted(p.node_labels.items())) for p in pools], None
    return [None], lambda node: any(_in_pool(p, node) for p in pools)


def representative_node(snap: Snapshot, nodes: list[dict] | None = None):
    """The node description the NUMA-fit rules judge pods against: the first node (by name)
    with a NodeResourceTopology and a kubelet configuration, among `nodes` (a pool's) or all."""
    from numaguard.lint.numa.node import NodeError, Node, parse_node_resource_topology

    names = {n["metadata"].get("name") for n in nodes} if nodes is not None else None
    for name in sorted(snap.topologies):
        if name in snap.configs and (names is None or name in names):
            try:
                node = parse_node_resource_topology(snap.topologies[name], f"node/{name}")
            except NodeError:
                continue
            return Node(name, node.topology, snap.configs[name], f"node/{name}", node.notes)
    return None


def _pod_order(pod: dict) -> tuple:
    meta = pod["metadata"]
    return (meta.get("creationTimestamp") or "", meta.get("namespace") or "", meta.get("name") or "")


def occupancies(snap: Snapshot) -> list:
    from numaguard.lint.numa.admission import KubeletStartupError, build_state
    from numaguard.lint.numa.node import NodeError, parse_node_resource_topology
    from numaguard.lint.numa.occupancy import capacity_topology, occupy
    from numaguard.lint.k8s.quantity import parse_quantity

    by_node: dict[str, list[dict]] = {}
    for pod in snap.pods:
        node_name = pod["spec"].get("nodeName")
        if node_name and pod.get("status", {}).get("phase") not in ("Succeeded", "Failed"):
            by_node.setdefault(node_name, []).append(pod)
    out = []
    # A pool is homogeneous (or should be): nodes with the same NUMA zones share one Topology,
    # and replicas share one PodAnalysis, which keeps 1,000 nodes cheap in time and memory.
    topologies: dict[str, Any] = {}
    analyses: dict[str, Any] = {}
    for node in sorted(snap.nodes, key=lambda n: n["metadata"].get("name") or ""):
        name = node["metadata"].get("name") or "?"
        notes: list[str] = []
        topology = None
        if name in snap.topologies:
            nrt = snap.topologies[name]
            key = json.dumps([nrt.get("zones"), nrt.get("apiVersion")], sort_keys=True, default=str)
            try:
                if key not in topologies:
                    topologies[key] = parse_node_resource_topology(nrt, f"nrt/{name}").topology
                topology = topologies[key]
            except NodeError as exc:
                notes.append(f"NodeResourceTopology unusable ({exc}); layout from capacity")
        if topology is None:
            capacity = node["status"].get("capacity") or {}
            try:
                cpus = int(parse_quantity(str(capacity.get("cpu", "0"))))
                memory = int(parse_quantity(str(capacity.get("memory", "0"))))
                key = f"capacity {cpus} {memory}"
                if key not in topologies:
                    topologies[key] = capacity_topology(cpus, memory)
                topology = topologies[key]
            except (ValueError, NodeError, ArithmeticError):
                notes.append("no usable capacity: not drawn")
                continue
            notes.append("layout from node capacity (no NodeResourceTopology): one NUMA node assumed")
        kc = snap.configs.get(name)
        if kc is None:
            notes.append("kubelet configuration unknown: no reservations or pinning simulated")
        try:
            state = build_state(topology, kc or {}, name=name)
        except KubeletStartupError as exc:
            notes.append(f"the kubelet configuration would not start a kubelet ({exc}); simulated "
                         "without it")
            state = build_state(topology, {}, name=name)
        pods = sorted(by_node.get(name, ()), key=_pod_order)
        out.append(occupy(state, [(f"{p['metadata'].get('namespace')}/{p['metadata'].get('name')}", p)
                                  for p in pods], notes=notes, analyses=analyses))
    return out


def audit(cluster: Cluster, *, namespace: str | None = None, node_selector: str | None = None,
          config=None, selection=None, workers: int = DEFAULT_WORKERS,
          progress: Callable[[int, int], None] | None = None):
    """Read and judge; returns (result, snapshot, timing). Raises ClusterError when nothing
    could be read. Without `node_selector`, the config's pools say which nodes to read."""
    from numaguard.lint.config import Config

    started = time.perf_counter()
    selectors, keep = (node_selector, None) if node_selector else pool_selectors(config or Config())
    snap = read_cluster(cluster, namespace=namespace, node_selector=selectors,
                        workers=workers, progress=progress, keep_node=keep)
    timing = AuditTiming(read_seconds=time.perf_counter() - started,
                         waiting_seconds=cluster.timing.waiting, requests=cluster.timing.requests)
    if not snap.read_anything:
        raise ClusterError("nothing could be read from the cluster: " + "; ".join(snap.problems))
    started = time.perf_counter()
    result = judge(snap, config=config, selection=selection, selected_by=node_selector)
    timing.judge_seconds = time.perf_counter() - started
    return result, snap, timing


def count_by_reason(snap: Snapshot) -> Counter:
    from numaguard.lint.rules.state import rejection
    return Counter(r[0] for r in map(rejection, snap.pods) if r)
