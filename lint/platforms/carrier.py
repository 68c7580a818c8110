"""A platform's kubelet carrier: the KubeletConfiguration a platform object makes the kubelet
start with, and where each of its values was written.

A platform object carries a (partial) KubeletConfiguration; its reader (one module per platform
in this package, `registry` names them) turns it into the configuration the kubelet really
starts with (`PlatformKubelet.config`), so the NG2xx rules judge it like a
`KubeletConfiguration` file, and each finding is pointed back at the field the user wrote
(`PlatformKubelet.document_path`). The EKS NodeConfig is read in `nodeadm`, the OpenShift
KubeletConfig and the Node Tuning Operator's PerformanceProfile in `openshift_kubelet_config`.

Only the fields the kubelet rules read are modelled; everything else the platforms set (TLS,
DNS, logging) is left out.

Which nodes a carrier configures (`PlatformKubelet.nodes`, a `NodeSelection`): a reader that
knows sets it, and the engine puts the configuration in the pools of the config file whose
nodes it reaches (`PoolSettings.selected_by`): then it is held to the pool requirements and
compared with the pool's other configurations (NG401). Two kinds:

* `NodeSelection(labels, path, kind="selector")`: a node selector; every node carrying at
  least these labels gets the configuration. It belongs to a pool when every pool node
  satisfies it (its labels are among the pool's `nodeLabels`) or when only pool nodes do (it
  requires every pool label). A PerformanceProfile's `spec.nodeSelector` is one.
* `NodeSelection(labels, path, kind="labels", taints=...)`: the labels (and taints) a node
  group gives its nodes: an eksctl node group's `labels`/`taints`, Talos'
  `machine.nodeLabels`/`nodeTaints` (`carrier_support.FlaggedKubelet` builds it from its
  `node_labels`/`node_taints`). It belongs to a pool when those labels include every pool
  label, or, for a pool known by its taint alone, when it gives its nodes that taint.

An OpenShift MachineConfig reaches the nodes of the MachineConfigPool of its role label
(`machineconfiguration.openshift.io/role: <role>`), `node-role.kubernetes.io/<role>: ""`: a
selector.

A carrier whose base is not known (`base_known=False`: it only overrides a configuration
numaguard does not see) joins its pools for the node description it is judged against, but is
never compared as a whole (NG401), and only a config file naming it makes it a pool
configuration.
"""
from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable

from numaguard.lint.k8s.kubelet_layers import Place
from numaguard.lint.k8s.kubelet_dropin import value_exists
from numaguard.lint.load.later_stages import VALUE_STAGES, LaterStage
from numaguard.lint.model import NodeSelection, Path, Severity, Violation, existing_prefix, plain_copy

KUBELET_API_VERSION = "kubelet.config.k8s.io/v1beta1"
# Which apiVersion and kind each reader reads: numaguard.lint.platforms.registry.


class PlatformError(ValueError):
    """A platform object whose kubelet part has the wrong shape (NG002); `path` is where."""

    def __init__(self, path: Path, message: str, severity: Severity | None = None,
                 remediation: str | None = None) -> None:
        super().__init__(message)
        self.path = path
        self.message = message
        self.severity = severity        # None: an error (the platform refuses the object)
        self.remediation = remediation  # None: NG002's own


@dataclass
class PlatformKubelet:
    """The KubeletConfiguration a platform object makes the kubelet start with.

    `config` is the effective configuration (platform defaults, then what the user wrote).
    `written` is the user's own partial KubeletConfiguration as parsed (it keeps positions),
    at `written_path` in the document; `origins` maps other top-level fields to the document
    field the platform derived them from; `fallback` is where findings about nothing in
    particular point. `platform_set` names the fields the platform set and the user did not,
    with the value and who set it, so messages can say so. `unknown` holds dotted fields whose
    platform value depends on the machine (numaguard keeps a placeholder or nothing there).
    """

    platform: str
    config: dict
    written: dict
    written_path: Path
    origins: dict[str, Path] = field(default_factory=dict)
    fallback: Path = ()
    platform_set: dict[str, str] = field(default_factory=dict)
    unknown: frozenset[str] = frozenset()
    adjusters: tuple[Callable[["PlatformKubelet", str, Violation], Violation | None], ...] = ()
    extra: list[tuple[str, Violation]] = field(default_factory=list)   # document paths
    unpositioned: dict = field(default_factory=dict)   # user settings without positions (JSON
                                                       # annotation): schema-checked, not walked
    # Carriers that keep settings in several places (kubeadm, kind, Cluster API): the layers and
    # flags they merge (a kubelet_layers.LayeredSettings, which also says where each value
    # sits), what the platform itself reports about them ((rule id, Place, Violation)), whether
    # the configuration under them is known (False: only what the carrier shows is judged), and
    # how to rebuild the carrier over a companion document of the same file (kubeadm's
    # KubeletConfiguration beside its InitConfiguration): `companion` names its kind.
    settings: Any = None
    notices: list = field(default_factory=list)
    base_known: bool = True
    companion: tuple[str, str] | None = None
    rebase: Callable[[Any], "PlatformKubelet"] | None = None
    nodes: NodeSelection | None = None     # the nodes it configures, when the object says (module doc)
    # The kubelet's own version when the carrier pins it (a kind node's image), else None: the
    # run's target version. The kubelet rules judge the carrier for this version.
    kubernetes_version: tuple[int, int] | None = None
    # The programs that render the carrier's strings before its platform reads them
    # (numaguard.lint.load.later_stages): a finding on a value holding one of their expressions
    # is NG003 instead. Cluster API's cloud-config machines add cloud-init's Jinja.
    later_stages: tuple[LaterStage, ...] = VALUE_STAGES
    # Settings that come from other objects of the run (an OpenShift cluster's FeatureGate, a
    # HyperShift NodePool): `resolve(references)` gives the carrier with them
    # (numaguard.lint.references); `cluster_gates` says where the gates came from,
    # `cluster_gates_known` whether they are in `config`.
    resolve: Callable[[Any], "PlatformKubelet"] | None = None
    cluster_gates: str | None = None
    cluster_gates_known: bool = False

    def place(self, path: Path) -> Place:
        """Where a finding on `path` (relative to the effective configuration) is reported."""
        if self.settings is not None:
            return self.settings.locate(path)
        return Place(self.document_path(path), shown=bool(path) and (
            path[0] in (self.written or {}) or path[0] in self.origins))
    # A PerformanceProfile's name, and on a KubeletConfig the Node Tuning Operator rendered the
    # profile it came from: a render's findings that its profile (linted in the same run) also
    # has are not reported twice (engine, `numaguard.lint.rendered`).
    renders_of: str | None = None
    rendered_from: str | None = None

    def document_path(self, path: Path) -> Path:
        """Where a finding on `path` (relative to the effective configuration) points in the
        platform object: the user's own field when they wrote it (as deep as they wrote it),
        else the field the platform derived it from, else the kubelet block."""
        if not path:
            return self.fallback
        top = path[0]
        if isinstance(self.written, dict) and top in self.written:
            return self.written_path + existing_prefix(self.written, path)
        if top in self.origins:
            return self.origins[top]
        return self.fallback

    def adjust(self, rule_id: str, v: Violation) -> Violation | None:
        """A rule's finding on the effective configuration, told in the platform's terms (or
        None when the platform makes it moot)."""
        for adjuster in self.adjusters:
            v = adjuster(self, rule_id, v)
            if v is None:
                return None
        notes = [text for name, text in sorted(self.platform_set.items())
                 if _mentions(v.message, name)]
        if notes:
            v = Violation(v.path, f"{v.message} [{'; '.join(notes)}]", v.container, v.severity,
                          v.remediation)
        return v


def user_wrote(carrier: PlatformKubelet, path: Path) -> bool:
    """Whether the user's own settings (positioned or not) hold the field at `path`."""
    return any(value_exists(written, path) for written in (carrier.written, carrier.unpositioned)
               if isinstance(written, dict))


def _mentions(message: str, name: str) -> bool:
    top = name.split(".")[0]
    return name in message or f"{top} " in message or f"{top}." in message or f"{top})" in message


# ---------------------------------------------------------------------------------------------
# JSON merge patch (RFC 7386), as jsonpatch.MergePatch applies a drop-in


def merge_patch(base: Any, patch: Any) -> Any:
    """`patch` merged over `base`: mappings merge key by key, null deletes, anything else
    (lists included) replaces."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    out = {str(k): copy.deepcopy(v) for k, v in base.items()} if isinstance(base, dict) else {}
    for key, value in patch.items():
        key = str(key)
        if value is None:
            out.pop(key, None)
        else:
            out[key] = merge_patch(out.get(key), value)
    return out


def drop_paths(config: dict, paths) -> dict:
    """A copy of `config` without the fields at `paths` (the unknown fields the kubelet drops
    while decoding)."""
    out = copy.deepcopy(config)
    for path in sorted((tuple(p) for p in paths), key=len, reverse=True):
        node: Any = out
        for key in path[:-1]:
            node = node.get(key) if isinstance(node, dict) else None
        if path and isinstance(node, dict):
            node.pop(path[-1], None)
    return out


def _mapping_at(doc: dict, path: Path) -> Any:
    node: Any = doc
    for depth, key in enumerate(path, start=1):
        if not isinstance(node, dict):
            raise PlatformError(path[:depth - 1], f"{'.'.join(map(str, path[:depth - 1]))} must be "
                                                  f"a mapping")
        node = node.get(key)
        if node is None:
            return None
    return node


def written_config(doc: dict, path: Path) -> dict:
    """The mapping at `path` (a partial KubeletConfiguration), {} when absent."""
    value = _mapping_at(doc, path)
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise PlatformError(path, f"{'.'.join(path)} must be a mapping (a partial "
                                  f"KubeletConfiguration), not {describe_value(value)}")
    return value


def describe_value(value: Any) -> str:
    """What a value is, as PlatformError messages say it."""
    return "a list" if isinstance(value, list) else "a string" if isinstance(value, str) else \
        "a number" if isinstance(value, (int, float)) else "a mapping" if isinstance(value, dict) \
        else "empty" if value is None else "a scalar"


# A reader yields one carrier per kubelet configuration the object holds (a platform object
# with node groups holds several), or a PlatformError for one of the wrong shape; it may also
# raise a PlatformError when the whole object is unreadable. `registry` holds every
# platform's readers.
Reader = Callable[[dict], Iterable["PlatformKubelet | PlatformError"]]

__all__ = ["PlatformKubelet", "PlatformError", "NodeSelection", "merge_patch", "drop_paths", "plain_copy",
           "written_config", "describe_value", "user_wrote", "KUBELET_API_VERSION", "Reader"]
