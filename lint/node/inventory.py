"""What the node agent watches, read again at every scrape: each container the kubelet's
PodResources API lists, what the kubelet assigned it and where its cgroup is.

The same readers and the same matching as `node inspect --processes`: the checkpoints
(`sources.read_checkpoint`, as the kubelet of `version` restores them), PodResources `List`
(over one gRPC channel kept open), the pod log directories for pod uids, the checkpoint entries
matched by uid or unambiguous name (`inspect.container_views`), the assignment
(`processes.assignment`: exclusive CPUs, else the shared pool; the Memory Manager's NUMA nodes,
else those of the exclusive CPUs) and the container's cgroup through the kubelet's
`/var/log/containers` links (`processes.find_cgroup`). Files that did not change since the last
scrape (same inode, size and modification time) are not parsed again, the cgroup tree is
walked again only when a container's cgroup is not where it was, and the machine's topology is
read once.
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any, Callable

from numaguard.lint.k8s.checkpoints import CPU_CHECKPOINT_FILE, CURRENT, MEMORY_CHECKPOINT_FILE, Version
from numaguard.lint.node.cgroups import CgroupTree, ContainerCgroup, open_cgroups
from numaguard.lint.node.inspect import DEFAULT_STATE_DIR, container_views
from numaguard.lint.node.podresources_client import (DEFAULT_SOCKET, DEFAULT_TIMEOUT, PodResourcesConnection,
                                                     PodResourcesError)
from numaguard.lint.node.processes import assignment, find_cgroup, read_container_links
from numaguard.lint.node.sources import (Source, load_kubelet_config, load_node, read_checkpoint,
                                         read_pod_log_dirs, under)
from numaguard.lint.rules.processes import Assignment


@dataclass(frozen=True)
class Watched:
    """One container: its labels, what it was assigned, and its cgroup (None: not found, `why`)."""

    namespace: str
    pod: str
    container: str
    pool: str                        # "exclusive", "pod-shared" or "shared" (agent_metrics.POOLS)
    assignment: Assignment
    cgroup: ContainerCgroup | None
    why: str = ""

    @property
    def labels(self) -> tuple[str, str, str, str]:
        return self.namespace, self.pod, self.container, self.pool


@dataclass(frozen=True)
class Snapshot:
    containers: list[Watched]
    tree: CgroupTree | None
    shared_pool: frozenset[int] | None           # None: unknown (no CPU checkpoint)
    # agent_metrics source key -> (available, why not); the kubelet's side and the cgroup tree
    sources: dict[str, tuple[bool, str]] = field(default_factory=dict)
    notes: list[Source] = field(default_factory=list)   # further inputs that could not be read


def _signature(path) -> tuple | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return st.st_ino, st.st_mtime_ns, st.st_size, st.st_nlink


class _FileCache:
    """A reader's answer for a file, kept until the file changes."""

    def __init__(self) -> None:
        self._kept: dict[str, tuple[tuple, Any]] = {}

    def get(self, path, read: Callable[[], Any]) -> Any:
        sig = _signature(path)
        kept = self._kept.get(str(path))
        if sig is not None and kept is not None and kept[0] == sig:
            return kept[1]
        value = read()
        if sig is not None:
            self._kept[str(path)] = (sig, value)
        return value


class Inventory:
    def __init__(self, root: str = "/", state_dir: str = DEFAULT_STATE_DIR, socket: str = DEFAULT_SOCKET,
                 kubelet_config: str | None = None, timeout: float = DEFAULT_TIMEOUT,
                 version: Version = CURRENT) -> None:
        self.root, self.state_dir, self.kubelet_config, self.version = root, state_dir, kubelet_config, version
        self.podresources = PodResourcesConnection(str(under(root, socket)), timeout)
        self._files = _FileCache()
        self._topology: Any = None
        self._topology_source: Source | None = None      # the machine is read once
        self._tree: tuple[Any, CgroupTree, Source] | None = None   # (the kubelet config it was found with, ...)

    def close(self) -> None:
        self.podresources.close()

    def read(self) -> Snapshot:
        kc_path = self.kubelet_config or str(under(self.root, "/var/lib/kubelet/config.yaml"))
        kc, kc_source = self._files.get(kc_path, lambda: load_kubelet_config(self.root, self.kubelet_config))
        notes = [] if kc_source.ok else [kc_source]
        if self._topology_source is None:
            node, self._topology_source = load_node(self.root, None)
            self._topology = getattr(node, "topology", None)
        notes += [] if self._topology_source.ok else [self._topology_source]
        sources: dict[str, tuple[bool, str]] = {}
        extracts = {}
        for kind, file_name in (("cpu", CPU_CHECKPOINT_FILE), ("memory", MEMORY_CHECKPOINT_FILE)):
            path = under(self.root, self.state_dir) / file_name
            extract, source = self._files.get(path, lambda p=path, k=kind: read_checkpoint(p, k, self.version))
            restorable = extract is not None and extract.checkpoint.error is None
            sources[f"{kind}_checkpoint"] = (restorable, "" if restorable else source.line())
            if restorable:
                extracts[kind] = extract
        cpu = extracts["cpu"].checkpoint if "cpu" in extracts else None
        memory = extracts["memory"].checkpoint if "memory" in extracts else None
        try:
            listed = self.podresources.read(allocatable=False)
            sources["podresources"] = (True, "")
        except PodResourcesError as exc:
            listed = None
            sources["podresources"] = (False, str(exc))
        links, links_source = read_container_links(self.root)
        sources["container_ids"] = (links_source.ok, "" if links_source.ok else links_source.line())
        log_uids, _logs = read_pod_log_dirs(self.root, kc)
        views = container_views(listed, extracts, {}, log_uids, self._topology) if listed is not None else []
        wanted = [links.get((v.namespace, v.pod, v.container), set()) for v in views]
        tree, tree_source = self._cgroups(kc, wanted)
        sources["cgroup_v2"] = (tree is not None, "" if tree is not None else tree_source.line())
        watched = []
        for view, ids in zip(views, wanted):
            a = assignment(view, cpu, memory, self._topology)
            pool = "exclusive" if a.exclusive else "pod-shared" if cpu is not None and view.identity.uid in cpu.pods \
                else "shared"
            cgroup, why = find_cgroup(tree, ids, view.identity.uid) if tree is not None else (None, "no cgroup v2 tree")
            watched.append(Watched(view.namespace, view.pod, view.container, pool, a, cgroup, why))
        return Snapshot(watched, tree, self._shared_pool(cpu), sources, notes)

    def _cgroups(self, kc, wanted: list[set[str]]) -> tuple[CgroupTree | None, Source]:
        """The cgroup tree and its index of container cgroups, walked again only when a
        container has no cgroup in the index (it started since) or one it found is gone."""
        if self._tree is not None and self._tree[0] is kc:
            tree, source = self._tree[1], self._tree[2]
            if all(any(i in tree.containers for i in ids) for ids in wanted) and all(
                    os.path.isdir(tree.containers[i].path) for ids in wanted for i in ids if i in tree.containers):
                return tree, source
        tree, source = open_cgroups(self.root, kc)
        self._tree = (kc, tree, source) if tree is not None else None
        return tree, source

    def _shared_pool(self, cpu) -> frozenset[int] | None:
        """defaultCpuSet under the static policy; every CPU under none (nothing is exclusive)."""
        if cpu is None:
            return None
        if cpu.policy == "static":
            return cpu.default_cpus
        return frozenset(getattr(self._topology, "cpu_by_id", {})) or None
