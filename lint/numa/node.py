"""Node descriptions for the NUMA simulator (`--node`): parse them into a `Node`.

Four inputs describe a machine:

* a `NodeProfile` (`numaguard.io/v1alpha1`) whose `spec.topology` is either a *generator*
  (sockets, NUMA nodes per socket, cores per NUMA node, threads per core, memory per NUMA node)
  or an *explicit* list of CPUs and NUMA nodes, with an optional `spec.kubeletConfig` (a path
  relative to the node file, or an inline KubeletConfiguration);
* the text printed by `lscpu --parse=CPU,CORE,SOCKET,NODE` (memory is not in it: a stated
  default or an override is used, and the `Node` says so in `notes`);
* a `NodeResourceTopology` object (`topology.node.k8s.io/v1alpha2`, as published by the
  resource-topology-exporter / NFD topology-updater): NUMA zones with CPU counts, memory and
  hugepages, costs = distances (field names from k8stopologyawareschedwg/noderesourcetopology-api
  `pkg/apis/topology/v1alpha2/types.go`);
* `builtin:NAME`, one of the profiles shipped in `lint/numa/profiles/NAME.yaml`.

Every input error raises `NodeError` whose message starts with the source name and the path of
the field at fault (`nodes/x.yaml: spec.topology.cpus[3].id: ...`), never a traceback.

Only `load_node_file` and the built-in loader touch files (and the kubeletConfig path, which a
NodeProfile may name); everything else works on the text or dicts it is given.

Where things are: this module is the public face (entry points, `Node`, `NodeError`) and
reads NodeProfiles; the machine model they all build (limits, `Node`, generated and explicit
topologies, the KubeletConfiguration fit check) is `numaguard.lint.numa.node_topology`.
The lscpu and NodeResourceTopology readers are in `numaguard.lint.numa.node_formats`; the typed field
readers that name the failing field (`fail`, `as_int`, `as_bytes`, ...) in `numaguard.lint.numa.node_fields`.
"""
from __future__ import annotations

from importlib import resources
from pathlib import Path
from typing import Any

import yaml

from numaguard.lint.numa.node_fields import NodeError, as_list, as_mapping, expect_keys, fail, object_name, type_name
from numaguard.lint.numa.node_formats import looks_like_lscpu, parse_lscpu, parse_node_resource_topology
from numaguard.lint.numa.node_topology import (  # noqa: F401  (the public names of node descriptions)
    API_VERSION, DEFAULT_ASSUMED_MEMORY_PER_NUMA_NODE, KUBELET_CONFIG_KIND, MAX_CPUS, MAX_NUMA_NODES,
    Node, check_kubelet_config_fits, explicit_topology, format_cpu_list, generated_topology,
    parse_cpuset)


# ---------------------------------------------------------------------------------------------
# entry points


def load_node(data: Any, *, source: str = "<node>", base_dir: str | Path | None = None,
              text: str | None = None, memory_per_numa_node: Any = None) -> Node:
    """Build a `Node` from a parsed document (NodeProfile or NodeResourceTopology dict), a list
    of parsed documents, the string `builtin:NAME`, or (with `text=`) raw file text.

    `memory_per_numa_node` (bytes or a quantity such as "128Gi") is used where the input does
    not state memory (lscpu output).
    """
    if text is not None:
        return parse_node_text(text, source, base_dir, memory_per_numa_node=memory_per_numa_node)
    if isinstance(data, str):
        if data.startswith("builtin:"):
            return load_builtin_profile(data[len("builtin:"):])
        return parse_node_text(data, source, base_dir, memory_per_numa_node=memory_per_numa_node)
    if isinstance(data, list):
        return _from_documents(data, source, base_dir)
    if isinstance(data, dict):
        return _from_documents([data], source, base_dir)
    raise NodeError(f"{source}: expected a NodeProfile or NodeResourceTopology object, "
                    f"got {type_name(data)}")


def parse_node_text(text: str, source: str, base_dir: str | Path | None = None, *,
                    memory_per_numa_node: Any = None) -> Node:
    """Parse the text of a node file: lscpu parse output, or YAML/JSON documents."""
    if not isinstance(text, str):
        raise NodeError(f"{source}: expected text, got {type_name(text)}")
    if looks_like_lscpu(text):
        return parse_lscpu(text, source, memory_per_numa_node=memory_per_numa_node)
    try:
        documents = [d for d in yaml.safe_load_all(text) if d is not None]
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" (line {mark.line + 1}, column {mark.column + 1})" if mark else ""
        problem = getattr(exc, "problem", None) or "not valid YAML"
        raise NodeError(f"{source}: not valid YAML{where}: {problem}") from None
    if not documents:
        raise NodeError(f"{source}: empty node description")
    return _from_documents(documents, source, base_dir)


def load_node_file(path: str | Path, *, memory_per_numa_node: Any = None) -> Node:
    """Read a node description from a file path or `builtin:NAME`."""
    ref = str(path)
    if ref.startswith("builtin:"):
        return load_builtin_profile(ref[len("builtin:"):])
    try:
        text = Path(ref).read_text(encoding="utf-8")
    except OSError as exc:
        raise NodeError(f"{ref}: cannot read node description: {exc.strerror or exc}") from None
    except UnicodeDecodeError:
        raise NodeError(f"{ref}: not UTF-8 text") from None
    return parse_node_text(text, ref, Path(ref).parent, memory_per_numa_node=memory_per_numa_node)


def list_builtin_profiles() -> list[str]:
    """Names accepted as `builtin:NAME`, sorted."""
    folder = resources.files("numaguard.lint.numa") / "profiles"
    if not folder.is_dir():
        return []
    return sorted(entry.name[:-len(".yaml")] for entry in folder.iterdir()
                  if entry.name.endswith(".yaml"))


def load_builtin_profile(name: str) -> Node:
    source = f"builtin:{name}"
    names = list_builtin_profiles()
    if name not in names:
        raise NodeError(f"{source}: no built-in profile named {name!r}; "
                        f"available: {', '.join(names) or 'none'}")
    entry = resources.files("numaguard.lint.numa") / "profiles" / f"{name}.yaml"
    text = entry.read_text(encoding="utf-8")
    with resources.as_file(entry) as real_path:
        return parse_node_text(text, source, Path(real_path).parent)


# ---------------------------------------------------------------------------------------------
# documents


def _from_documents(documents: list, source: str, base_dir: str | Path | None) -> Node:
    """One topology document (NodeProfile or NodeResourceTopology) and at most one
    KubeletConfiguration, which applies when the topology document names none."""
    topology_docs: list[tuple[int, dict]] = []
    kubelet_docs: list[tuple[int, dict]] = []
    for index, doc in enumerate(documents):
        where = f"document {index + 1}: " if len(documents) > 1 else ""
        if not isinstance(doc, dict):
            raise NodeError(f"{source}: {where}expected a mapping, got {type_name(doc)}")
        kind = doc.get("kind")
        if kind == "NodeProfile" or kind == "NodeResourceTopology":
            topology_docs.append((index, doc))
        elif kind == KUBELET_CONFIG_KIND:
            kubelet_docs.append((index, doc))
        else:
            raise NodeError(f"{source}: {where}kind: expected NodeProfile, "
                            f"NodeResourceTopology or KubeletConfiguration, got {kind!r}")
    if len(topology_docs) != 1:
        raise NodeError(f"{source}: expected exactly one NodeProfile or NodeResourceTopology, "
                        f"found {len(topology_docs)}")
    if len(kubelet_docs) > 1:
        raise NodeError(f"{source}: more than one KubeletConfiguration document")
    _, doc = topology_docs[0]
    if doc["kind"] == "NodeProfile":
        node = parse_node_profile(doc, source, base_dir)
    else:
        node = parse_node_resource_topology(doc, source)
    if kubelet_docs:
        if node.kubelet_config is not None:
            raise NodeError(f"{source}: spec.kubeletConfig is set and a KubeletConfiguration "
                            f"document is also given; keep one")
        kc = kubelet_docs[0][1]
        check_kubelet_config_fits(kc, node.topology, source, "KubeletConfiguration")
        node = Node(node.name, node.topology, kc, node.source, node.notes)
    return node


def parse_node_profile(doc: dict, source: str, base_dir: str | Path | None = None) -> Node:
    expect_keys(doc, {"apiVersion", "kind", "metadata", "spec", "status"}, source, "")
    if doc.get("apiVersion") != API_VERSION:
        fail(source, "apiVersion", f"expected {API_VERSION!r}, got {doc.get('apiVersion')!r}")
    name = object_name(doc, source)
    spec = as_mapping(doc.get("spec"), source, "spec")
    expect_keys(spec, {"topology", "kubeletConfig"}, source, "spec")
    topology_spec = as_mapping(spec.get("topology"), source, "spec.topology")
    if "cpus" in topology_spec:
        topology = explicit_topology(topology_spec, source, "spec.topology")
    elif "sockets" in topology_spec:
        topology = generated_topology(topology_spec, source, "spec.topology")
    else:
        fail(source, "spec.topology", "give either a generator (sockets, numaNodesPerSocket, "
              "coresPerNumaNode, threadsPerCore, memoryPerNumaNode) or an explicit cpus list")
    notes: list[str] = []
    status = as_mapping(doc.get("status", {}), source, "status")
    for i, warning in enumerate(as_list(status.get("warnings", []), source, "status.warnings")):
        if not isinstance(warning, str):
            fail(source, f"status.warnings[{i}]", f"expected a string, got {type_name(warning)}")
        notes.append(warning)
    kubelet_config = _kubelet_config(spec.get("kubeletConfig"), source, base_dir)
    if kubelet_config is not None:
        check_kubelet_config_fits(kubelet_config, topology, source, "spec.kubeletConfig")
    return Node(name, topology, kubelet_config, source, tuple(notes))


def _kubelet_config(value: Any, source: str, base_dir: str | Path | None) -> dict | None:
    if value is None:
        return None
    if isinstance(value, dict):
        return value
    if not isinstance(value, str):
        fail(source, "spec.kubeletConfig", "expected a path or an inline KubeletConfiguration, "
              f"got {type_name(value)}")
    path = Path(value)
    if not path.is_absolute():
        path = Path(base_dir if base_dir is not None else ".") / path
    try:
        text = path.read_text(encoding="utf-8")
        documents = [d for d in yaml.safe_load_all(text) if d is not None]
    except OSError as exc:
        fail(source, "spec.kubeletConfig", f"cannot read {str(path)!r}: "
              f"{exc.strerror or exc}")
    except UnicodeDecodeError:
        fail(source, "spec.kubeletConfig", f"{str(path)!r} is not UTF-8 text")
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" line {mark.line + 1}" if mark else ""
        fail(source, "spec.kubeletConfig", f"{str(path)!r}{where} is not valid YAML")
    configs = [d for d in documents if isinstance(d, dict) and d.get("kind") == KUBELET_CONFIG_KIND]
    if len(configs) != 1:
        fail(source, "spec.kubeletConfig",
              f"{str(path)!r} must hold exactly one KubeletConfiguration, found {len(configs)}")
    return configs[0]
