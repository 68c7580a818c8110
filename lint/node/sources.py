"""What `numaguard node inspect` reads on a node, one reader per source.

Each reader returns what it read (or None) and a `Source`: its name and, when it could not be
read, the one-line reason. Nothing here raises for unreadable input. The sources:

* the CPU and Memory Manager checkpoints (`<root><state-dir>/cpu_manager_state`,
  `memory_manager_state`), read as the kubelet of the given minor version reads them;
* the node's KubeletConfiguration (`--kubelet-config`, else `<root>/var/lib/kubelet/config.yaml`);
* the machine from `<root>/sys` (`numaguard.lint.numa.capture`), and the Memory Manager's
  view of it (per NUMA node MemTotal and every hugepage size, as the kubelet reads them);
* pod manifests (`--pods FILE`): the pods' uids, and what to replay in the simulator;
* the kubelet's pod log directories (`<root><podLogsDir>`, `/var/log/pods` by default): one
  directory per pod, named `NAMESPACE_NAME_UID` (kuberuntime `BuildPodLogsDirectory`,
  pkg/kubelet/kuberuntime/helpers.go, `logPathDelimiter` "_"; namespaces and pod names are
  DNS labels and subdomains, so they hold no "_"): the uid of each pod without `--pods`;
* the kubelet's PodResources API (`numaguard.lint.node.podresources_client`).
"""
from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from numaguard.lint.k8s.checkpoints import CheckpointError, CPUCheckpoint, MemoryCheckpoint, Version
from numaguard.lint.node.podresources_client import PodResourcesError, PodResourcesSnapshot, read_pod_resources
from numaguard.lint.rules.node import CheckpointExtract

DEFAULT_POD_LOGS_DIR = "/var/log/pods"          # KubeletConfiguration podLogsDir's default


@dataclass(frozen=True)
class Source:
    """One input and how reading it went: `ok` False means not read (`message` says why);
    `whole` False means read but not all of it. `kubelet`: one of the kubelet's own records
    (its checkpoints, its PodResources API), the things node inspect checks. `needed` False:
    an input whose absence only makes matching weaker (the pod log directories)."""

    name: str
    ok: bool
    message: str
    kubelet: bool = False
    whole: bool = True
    needed: bool = True

    @property
    def missing(self) -> bool:
        """Not (wholly) read, and needed for a complete inspection."""
        return self.needed and not (self.ok and self.whole)

    def line(self) -> str:
        """`name: reason`, the reason without its parenthesised hint (for one-line summaries)."""
        return f"{self.name}: {self.message.split(' (', 1)[0]}"


def under(root: str, path: str) -> Path:
    """`path` on the node whose file system is mounted at `root`."""
    return Path(root) / path.lstrip("/") if root not in ("", "/") else Path(path)


def read_checkpoint(path: Path, kind: str, version: Version) -> tuple[CheckpointExtract | None, Source]:
    name = f"{kind} checkpoint {path}"
    try:
        text = path.read_text(encoding="utf-8")
        if os.stat(path).st_nlink == 0:
            # The kubelet renamed a new file over this one (filestore.go writeFile): what is
            # left is the copy a single-file mount holds on to, not what the kubelet has now.
            return None, Source(name, False, "a stale copy: the kubelet has replaced the file since it was mounted "
                                             "(mount its directory, not the file)", kubelet=True)
    except FileNotFoundError:
        return None, Source(name, False, "not found (the kubelet always writes it: is the state directory "
                                         "mounted, or is it another --state-dir?)", kubelet=True)
    except (OSError, UnicodeDecodeError) as exc:
        return None, Source(name, False, f"cannot read: {getattr(exc, 'strerror', None) or exc}", kubelet=True)
    try:
        data = json.loads(text)
    except ValueError as exc:
        error = CheckpointError((), f"not JSON: {exc}")
        broken = (CPUCheckpoint("unknown", "", frozenset(), error=error) if kind == "cpu"
                  else MemoryCheckpoint("unknown", "", error=error))
        return CheckpointExtract(str(path), kind, broken), Source(name, True, "read (not valid JSON)", kubelet=True)
    extract = CheckpointExtract.of(str(path), data, kind, version=version)
    c = extract.checkpoint
    what = f"{c.version}, policy {c.policy}" if c.error is None else "the kubelet cannot restore it"
    if getattr(c, "container_ids", None):
        what += f"; {len(c.container_ids)} entries keyed by container id, which the kubelet maps through the runtime"
    return extract, Source(name, True, f"read ({what})", kubelet=True)


def kubelet_config_path(root: str, path: str | None) -> Path:
    """The KubeletConfiguration node inspect reads: `path` as given, else the node's own."""
    return Path(path) if path else under(root, "/var/lib/kubelet/config.yaml")


def load_kubelet_config(root: str, path: str | None) -> tuple[dict | None, Source]:
    candidate = kubelet_config_path(root, path)
    name = f"kubelet configuration {candidate}"
    try:
        data = yaml.safe_load(candidate.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None, Source(name, False, "not found (give --kubelet-config)")
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as exc:
        return None, Source(name, False, f"cannot read: {str(exc).splitlines()[0]}")
    if not isinstance(data, dict) or data.get("kind") != "KubeletConfiguration":
        return None, Source(name, False, "not a KubeletConfiguration")
    return data, Source(name, True, "read")


def load_node(root: str, kc: dict | None, sysfs: str | None = None) -> tuple[Any, Source]:
    """The machine from `sysfs` (default `<root>/sys`), with `kc` as its configuration."""
    from numaguard.lint.numa.capture import capture_node
    from numaguard.lint.numa.node import NodeError, load_node as build

    sysfs = Path(sysfs) if sysfs else under(root, "/sys")
    try:
        profile = capture_node(sysfs)
        if kc is not None:
            profile["spec"]["kubeletConfig"] = kc
        node = build(profile, source=str(sysfs))
    except NodeError as exc:
        return None, Source(f"sysfs {sysfs}", False, str(exc))
    except OSError as exc:
        return None, Source(f"sysfs {sysfs}", False, f"cannot read: {exc.strerror or exc}")
    topo = node.topology
    return node, Source(f"sysfs {sysfs}", True, f"{topo.num_sockets} socket(s), {topo.num_numa_nodes} NUMA node(s), "
                                                f"{topo.num_cpus} CPUs")


def read_memory_machine(root: str, sysfs: str | None = None):
    """The Memory Manager's view of the machine from `sysfs` (default `<root>/sys`; `numaguard.lint.numa.restart.
    MemoryMachine`: per NUMA node, MemTotal and every hugepage size's bytes), or None when it
    cannot be read byte for byte (then only the reservations are compared with the checkpoint)."""
    from numaguard.lint.numa.capture import memory_machine
    from numaguard.lint.numa.restart import MemoryMachine

    totals = memory_machine(Path(sysfs) if sysfs else under(root, "/sys"))
    return MemoryMachine(totals) if totals else None


def load_pod_manifests(path: str | None) -> tuple[dict[tuple[str, str], dict], Source | None]:
    """(namespace, name) -> Pod manifest, from every Pod in the file (lists included)."""
    if not path:
        return {}, None
    from numaguard.lint.load.documents import expand_lists, load_paths

    pods: dict[tuple[str, str], dict] = {}
    try:
        for _source, docs, _errors in load_paths([path]):
            for doc in docs:
                for item, prefix in expand_lists(doc):
                    data = item.data
                    for key in prefix:
                        data = data[key]
                    if isinstance(data, dict) and data.get("kind") == "Pod":
                        meta = data.get("metadata") or {}
                        pods[(str(meta.get("namespace") or "default"), str(meta.get("name")))] = data
    except OSError as exc:
        return {}, Source(f"pods {path}", False, f"cannot read: {exc.strerror or exc}")
    return pods, Source(f"pods {path}", True, f"{len(pods)} pod(s)")


def read_pod_log_dirs(root: str, kc: dict | None) -> tuple[dict[tuple[str, str], frozenset[str]], Source]:
    """(namespace, name) -> the uids of its pod log directories (two when a pod was recreated
    under its name and the old directory is not collected yet)."""
    configured = (kc or {}).get("podLogsDir") if isinstance((kc or {}).get("podLogsDir"), str) else None
    folder = under(root, configured or DEFAULT_POD_LOGS_DIR)
    name = f"pod log directories {folder}"
    try:
        entries = os.listdir(folder)
    except FileNotFoundError:
        return {}, Source(name, False, "not found (mount it to match containers to checkpoint entries by pod uid)",
                          needed=False)
    except OSError as exc:
        return {}, Source(name, False, f"cannot read: {exc.strerror or exc}", needed=False)
    found: dict[tuple[str, str], set[str]] = {}
    for entry in entries:
        parts = entry.split("_")
        if len(parts) == 3 and all(parts):
            found.setdefault((parts[0], parts[1]), set()).add(parts[2])
    return {k: frozenset(v) for k, v in found.items()}, Source(name, True, f"{len(found)} pod(s)", needed=False)


def read_podresources(path: str, timeout: float) -> tuple[PodResourcesSnapshot | None, Source]:
    try:
        snapshot = read_pod_resources(path, timeout)
    except PodResourcesError as exc:
        return None, Source("PodResources API", False, str(exc), kubelet=True)
    message = f"{len(snapshot.pods)} pod(s)" + "".join(f"; {p}" for p in snapshot.problems)
    return snapshot, Source(f"PodResources API {path}", True, message, kubelet=True, whole=not snapshot.problems)
