"""Kubelet settings as users write them on the platforms that run NUMA-managed pools.

Three objects carry a (partial) KubeletConfiguration; each is turned into the configuration the
kubelet really starts with (`PlatformKubelet.config`), so the NG2xx rules judge it like a
`KubeletConfiguration` file, and each finding is pointed back at the field the user wrote
(`PlatformKubelet.document_path`):

* EKS `NodeConfig` (`node.eks.aws/v1alpha1`, awslabs/amazon-eks-ami
  `nodeadm/api/v1alpha1/nodeconfig_types.go`: `spec.kubelet.config` is a
  `map[string]runtime.RawExtension`, "a KubeletConfiguration that will be merged with the
  defaults"). nodeadm writes the AMI's configuration (`nodeadm/internal/kubelet/config.go`
  `defaultKubeletSubConfig` + `withDefaultReservedResources`: evictionHard memory.available
  100Mi, kubeReservedCgroup /runtime, systemReservedCgroup /system, kubeReserved cpu by the
  instance's cores, ephemeral-storage 1Gi and memory 11 x maxPods + 255Mi) to
  `/etc/kubernetes/kubelet/config.json` and the user's map as the drop-in
  `config.json.d/40-nodeadm.conf`; the kubelet merges a drop-in over its main file as a JSON
  merge patch (`cmd/kubelet/app/server.go` `mergeKubeletConfigurations`: `jsonpatch.MergePatch`),
  which `merge_patch` below mirrors.
* OpenShift `KubeletConfig` (`machineconfiguration.openshift.io/v1`, openshift/api
  `machineconfiguration/v1/types.go` `KubeletConfigSpec.KubeletConfig *runtime.RawExtension`):
  the Machine Config Operator merges it over its rendered `kubelet.conf` and refuses some
  fields outright (`pkg/controller/kubelet-config/helpers.go` `validateUserKubeletConfig`:
  "KubeletConfiguration: featureGates is not allowed to be set, but contains: ..."; gates come
  from the cluster's FeatureGate resource). `systemReserved` is sized per node unless
  `autoSizingReserved: false` is given, so numaguard cannot know it.
* Node Tuning Operator `PerformanceProfile` (`performance.openshift.io/v2`,
  openshift/cluster-node-tuning-operator `pkg/apis/performanceprofile/v2/performanceprofile_types.go`):
  the operator renders a KubeletConfig from it
  (`pkg/performanceprofile/controller/performanceprofile/components/kubeletconfig/kubeletconfig.go`
  `New` / `setKubeletConfigForCPUAndMemoryManagers`), starting from the JSON of the annotation
  `kubeletconfig.experimental`: cpuManagerPolicy static, cpuManagerReconcilePeriod 5s,
  topologyManagerPolicy best-effort unless `spec.numa.topologyPolicy`, evictionHard defaults
  (memory.available 100Mi, nodefs.available 10%, imagefs.available 15%, nodefs.inodesFree 5%)
  where absent, kubeReserved.memory and systemReserved.memory 500Mi where absent,
  reservedSystemCPUs = `spec.cpu.reserved` (plus `spec.cpu.ovsDpdk`, plus `spec.cpu.shared`
  with the mixedCpus workload hint); with topologyPolicy restricted or single-numa-node also
  memoryManagerPolicy Static and, unless the annotation gives reservedMemory, one entry on NUMA
  node 0 equal to kubeReserved + systemReserved + evictionHard memory.available; with
  single-numa-node also cpuManagerPolicyOptions full-pcpus-only "true" unless set. With the
  annotation `performance.openshift.io/dra-resource-management` the managers are all `none`.

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

The OpenShift `KubeletConfig` selects MachineConfigPools, not nodes
(`spec.machineConfigPoolSelector`, a LabelSelector over the pools' labels: openshift/api
`machineconfiguration/v1/types.go` `KubeletConfigSpec`, matched by the Machine Config
Operator's `getPoolsForKubeletConfig` in `pkg/controller/kubelet-config`). numaguard reads the
pool's name from the labels MachineConfigPools carry by convention (`machine_config_pool_nodes`):
`pools.operator.machineconfiguration.openshift.io/<name>: ""` (the MCO's own `worker` and
`master` pools, `manifests/worker.machineconfigpool.yaml`) or `machineconfiguration.openshift.io/role:
<name>` (what the Node Tuning Operator selects a profile's pool by, `GetMachineConfigPoolSelector`
in `pkg/performanceprofile/controller/performanceprofile/components/profile`), and that pool's
nodes by theirs: `node-role.kubernetes.io/<name>: ""` (the pool's `spec.nodeSelector`, same
manifest). A selector on other labels names no pool numaguard can know; name the file in the
pool's `kubeletConfigs` instead.
"""
from __future__ import annotations

import copy
import json
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any, Callable, Iterable

from numaguard.lint.k8s.cpuset import CPUSetError, format_cpuset, parse_cpuset
from numaguard.lint.k8s.kubelet_layers import Place
from numaguard.lint.k8s.kubelet_dropin import value_exists
from numaguard.lint.k8s.openshift_base import (OPENSHIFT_GATES_FIX, auto_sizing_dropin, mco_kubelet_conf,
                                               mco_refusals, openshift_resolve, rendered_profile,
                                               tell_cluster_gates)
from numaguard.lint.k8s.quantity import format_bytes, parse_quantity
from numaguard.lint.load.later_stages import VALUE_STAGES, LaterStage
from numaguard.lint.model import NodeSelection, Path, Severity, Violation, existing_prefix, items

KUBELET_API_VERSION = "kubelet.config.k8s.io/v1beta1"
# Which apiVersion and kind each reader below reads: numaguard.lint.k8s.platform_registry.

# nodeadm internal/kubelet/config.go
EKS_SOURCE = "the EKS AMI's nodeadm (internal/kubelet/config.go)"
EKS_CGROUP_FIX = ('nodeadm sets kubeReservedCgroup "/runtime" and systemReservedCgroup "/system" '
                  'in the AMI\'s base configuration; to use reservedSystemCPUs set both to "" in '
                  'spec.kubelet.config (as nodeadm\'s own e2e case kubelet-config-set-empty does), '
                  'or reserve CPUs with kubeReserved.cpu/systemReserved.cpu instead')

# cluster-node-tuning-operator components/kubeletconfig/kubeletconfig.go
EXPERIMENTAL_ANNOTATION = "kubeletconfig.experimental"
DRA_ANNOTATION = "performance.openshift.io/dra-resource-management"
PAO_SOURCE = "the Node Tuning Operator (components/kubeletconfig/kubeletconfig.go)"



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


def _plain(value: Any) -> Any:
    """A deep copy as plain dicts and lists (the loader's position-keeping types dropped)."""
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value


plain_copy = _plain          # for the readers in the platform_* modules


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


def _written_config(doc: dict, path: Path) -> dict:
    value = _mapping_at(doc, path)
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise PlatformError(path, f"{'.'.join(path)} must be a mapping (a partial "
                                  f"KubeletConfiguration), not {_what(value)}")
    return value


written_config = _written_config


def _what(value: Any) -> str:
    return "a list" if isinstance(value, list) else "a string" if isinstance(value, str) else \
        "a number" if isinstance(value, (int, float)) else "a mapping" if isinstance(value, dict) \
        else "empty" if value is None else "a scalar"


# ---------------------------------------------------------------------------------------------
# EKS NodeConfig


# The AMI's base configuration (the fields numaguard models).
EKS_AMI_BASE = {
    "apiVersion": KUBELET_API_VERSION, "kind": "KubeletConfiguration",
    "evictionHard": {"memory.available": "100Mi", "nodefs.available": "10%",
                     "nodefs.inodesFree": "5%"},
    "featureGates": {"RotateKubeletServerCertificate": True},
    "kubeReservedCgroup": "/runtime", "systemReservedCgroup": "/system",
    # cpu: 6% of the first core, 1% of the second, 0.5% of cores 3-4, 0.25% beyond
    # (getCPUMillicoresToReserve): 60m on the smallest instance, never zero.
    "kubeReserved": {"cpu": "60m", "ephemeral-storage": "1Gi"},
}


def eks_node_config(doc: dict) -> PlatformKubelet:
    path = ("spec", "kubelet", "config")
    written = _written_config(doc, path)
    config, platform_set, unknown = eks_ami_configuration(_plain(written))
    return PlatformKubelet("EKS NodeConfig", config, written, path, fallback=path if written else ("spec",)
                           if isinstance(doc.get("spec"), dict) else (),
                           platform_set=platform_set, unknown=unknown,
                           adjusters=(_eks_adjust,))


def eks_ami_configuration(user: dict) -> tuple[dict, dict[str, str], frozenset[str]]:
    """(the configuration the kubelet runs with when nodeadm's drop-in holds `user`, what the
    AMI set that the user did not, the fields whose AMI value depends on the instance type)."""
    config = merge_patch(EKS_AMI_BASE, user)
    unknown = set()
    written_reserved = user.get("kubeReserved") if isinstance(user.get("kubeReserved"), dict) else {}
    if "memory" not in written_reserved:
        unknown.add("kubeReserved.memory")
    if "cpu" not in written_reserved:
        unknown.add("kubeReserved.cpu")
    platform_set = {}
    for name, value in (("kubeReservedCgroup", "/runtime"), ("systemReservedCgroup", "/system")):
        if name not in user:
            platform_set[name] = f"{name}: {value} is set by {EKS_SOURCE}"
    return config, platform_set, frozenset(unknown)


def _eks_adjust(carrier: PlatformKubelet, rule_id: str, v: Violation) -> Violation | None:
    if rule_id == "NG209" and "kubeReservedCgroup" in v.message and carrier.platform_set:
        return Violation(v.path, v.message, v.container, v.severity, EKS_CGROUP_FIX + ".")
    if rule_id == "NG221" and "kubeReserved.cpu" in carrier.unknown:
        return None           # the AMI's own kubeReserved.cpu, not something the user wrote
    if rule_id == "NG208" and "kubeReserved.memory" in carrier.unknown and \
            "determined by Node Allocatable" in v.message:
        # a warning while some instance type's maxPods makes the total add up; none can: an error
        message, matches = _eks_memory_message(carrier.config)
        return Violation(v.path, message, v.container, Severity.WARNING if matches else v.severity,
                         "Set kubeReserved.memory explicitly in spec.kubelet.config, and make "
                         "reservedMemory add up to kubeReserved.memory + systemReserved.memory + "
                         "evictionHard memory.available.")
    return v


def _eks_memory_message(config: dict) -> tuple[str, bool]:
    from numaguard.lint.k8s.kubelet import memory_reservation
    reservation = memory_reservation(config)
    total = reservation.reserved.get("memory", Decimal(0))
    known = reservation.system_reserved + reservation.eviction.bytes
    mib = Decimal(2**20)
    implied = (total - known) / mib - 255
    pods = implied / 11
    matches = implied > 0 and pods == pods.to_integral_value()
    hint = (f"; Σ reservedMemory memory {format_bytes(total)} only matches an instance type whose "
            f"maxPods is {int(pods)}" if matches else
            f"; Σ reservedMemory memory {format_bytes(total)} matches no maxPods at all")
    return (f"reservedMemory cannot be checked against the node allocatable reservation: "
            f"kubeReserved.memory is not set in spec.kubelet.config, so {EKS_SOURCE} sets it per "
            f"instance type to 11 x maxPods + 255Mi (e.g. 893Mi at maxPods 58, 1465Mi at 110), and "
            f"the kubelet refuses to start unless Σ reservedMemory equals kubeReserved.memory + "
            f"systemReserved.memory {format_bytes(reservation.system_reserved)} + evictionHard "
            f"memory.available {reservation.eviction.value}{hint}"), matches


# ---------------------------------------------------------------------------------------------
# OpenShift KubeletConfig


def openshift_kubelet_config(doc: dict) -> PlatformKubelet:
    path = ("spec", "kubeletConfig")
    written = _written_config(doc, path)
    spec = doc.get("spec") if isinstance(doc.get("spec"), dict) else {}
    # What the MCO renders into kubelet.conf, then the node-sizing drop-in over it
    # (openshift_base: mergo override, systemReservedCgroup cleared with reservedSystemCPUs).
    config, refused = mco_kubelet_conf(_plain(written))
    dropin, unknown = auto_sizing_dropin(written.get("systemReserved"), spec.get("autoSizingReserved"))
    config = merge_patch(config, dropin)
    carrier = PlatformKubelet("OpenShift KubeletConfig", config, written, path,
                              fallback=path if written else ("spec",) if spec else (),
                              unknown=unknown, adjusters=(_openshift_adjust,),
                              rendered_from=rendered_profile(doc),
                              nodes=machine_config_pool_nodes(spec.get("machineConfigPoolSelector"),
                                                              ("spec", "machineConfigPoolSelector")))
    carrier.resolve = openshift_resolve(carrier)
    for where, message in mco_refusals(written, spec.get("autoSizingReserved")) + refused:
        carrier.extra.append(("NG002", Violation(
            path + where, f"the Machine Config Operator refuses this KubeletConfig: \"{message}\"",
            remediation="Remove or correct the field: until then the Machine Config Operator renders "
                        "nothing of this KubeletConfig (pkg/controller/kubelet-config/helpers.go).")))
    gates = written.get("featureGates")
    if isinstance(gates, dict) and gates:
        shown = " ".join(f"{k}:{str(v).lower()}" for k, v in sorted(gates.items(), key=str))
        carrier.extra.append(("NG210", Violation(
            path + ("featureGates",),
            f"the Machine Config Operator refuses this KubeletConfig: \"KubeletConfiguration: "
            f"featureGates is not allowed to be set, but contains: map[{shown}]\"",
            remediation=OPENSHIFT_GATES_FIX + ".")))
    return carrier


MCP_POOL_LABEL_PREFIX = "pools.operator.machineconfiguration.openshift.io/"
MCP_ROLE_LABEL = "machineconfiguration.openshift.io/role"
NODE_ROLE_LABEL_PREFIX = "node-role.kubernetes.io/"


def machine_config_pool_nodes(selector: Any, path: Path) -> NodeSelection | None:
    """The nodes of the one MachineConfigPool a LabelSelector names by the conventional pool
    labels (module doc), or None when it names none or several."""
    if not isinstance(selector, dict):
        return None
    names = set()
    labels = selector.get("matchLabels") if isinstance(selector.get("matchLabels"), dict) else {}
    for key, value in labels.items():
        key = str(key)
        if key.startswith(MCP_POOL_LABEL_PREFIX) and len(key) > len(MCP_POOL_LABEL_PREFIX):
            names.add(key[len(MCP_POOL_LABEL_PREFIX):])
        elif key == MCP_ROLE_LABEL and isinstance(value, str) and value:
            names.add(value)
    for expr in items(selector.get("matchExpressions")):
        if isinstance(expr, dict) and expr.get("key") == MCP_ROLE_LABEL and expr.get("operator") == "In" \
                and isinstance(expr.get("values"), list) and len(expr["values"]) == 1:
            names.add(str(expr["values"][0]))
    if len(names) != 1:
        return None
    return NodeSelection({NODE_ROLE_LABEL_PREFIX + names.pop(): ""}, path)


def _openshift_adjust(carrier: PlatformKubelet, rule_id: str, v: Violation) -> Violation | None:
    if rule_id == "NG202":
        return tell_cluster_gates(carrier, rule_id, v)
    if rule_id in ("NG210", "NG201") and v.path[:1] == ("featureGates",):
        return None           # the MCO refuses featureGates before the kubelet sees them (extra)
    if rule_id == "NG221" and not user_wrote(carrier, tuple(v.path)):
        return None           # the platform's own systemReserved.cpu, not something the user wrote
    return auto_sized_reserved_memory(carrier, rule_id, v)


def auto_sized_reserved_memory(carrier: PlatformKubelet, rule_id: str, v: Violation) -> Violation:
    """NG208 against a `systemReserved.memory` the Machine Config Operator sizes per node
    (`20-auto-sizing.conf`, `openshift_base.auto_sizing_dropin`): numaguard holds a placeholder
    there, so the sum cannot be checked; said as a warning, not a verdict. The same for a
    KubeletConfig, a PerformanceProfile's render and a MachineConfig drop-in."""
    if rule_id != "NG208" or "systemReserved.memory" not in carrier.unknown or \
            "determined by Node Allocatable" not in v.message:
        return v
    return Violation(v.path, "reservedMemory cannot be checked against the node allocatable "
                             "reservation: systemReserved.memory is not set here, so the "
                             "Machine Config Operator's 20-auto-sizing.conf (sized per node by "
                             "autoSizingReserved) supplies it, and the kubelet refuses to start "
                             "unless Σ reservedMemory equals kubeReserved.memory + "
                             "systemReserved.memory + evictionHard memory.available",
                     v.container, Severity.WARNING,
                     "Set systemReserved.memory explicitly (autoSizingReserved: false in a KubeletConfig, "
                     "or in a drop-in named after 20-auto-sizing.conf), then make reservedMemory add up "
                     "to kubeReserved.memory + systemReserved.memory + evictionHard memory.available.")


# ---------------------------------------------------------------------------------------------
# Node Tuning Operator PerformanceProfile


def performance_profile(doc: dict) -> PlatformKubelet:
    """The kubelet configuration of a profile's nodes: the KubeletConfig the operator renders
    (`render_performance_profile`), as the Machine Config Operator lays it over its base."""
    render, origins, fallback, set_by, snippet = render_performance_profile(doc)
    config, _ = mco_kubelet_conf(render)
    config = merge_patch(config, auto_sizing_dropin(render.get("systemReserved"), None)[0])
    meta = doc.get("metadata") if isinstance(doc.get("metadata"), dict) else {}
    carrier = PlatformKubelet("PerformanceProfile", config, {}, (), origins=origins, fallback=fallback,
                           unpositioned=snippet,
                           platform_set={k: v for k, v in set_by.items()
                                         if k in ("reservedMemory", "memoryManagerPolicy",
                                                  "cpuManagerPolicyOptions")},
                           adjusters=(_openshift_adjust, _pao_adjust),
                           renders_of=str(meta["name"]) if meta.get("name") else None,
                           nodes=_profile_nodes(doc))
    carrier.resolve = openshift_resolve(carrier)
    return carrier


def _profile_nodes(doc: dict) -> NodeSelection | None:
    """The profile's nodes: those its `spec.nodeSelector` selects (performanceprofile_types.go
    `NodeSelector map[string]string`; the operator finds their MachineConfigPool from it)."""
    spec = doc.get("spec") if isinstance(doc.get("spec"), dict) else {}
    selector = spec.get("nodeSelector")
    if not isinstance(selector, dict) or not selector:
        return None
    return NodeSelection({str(k): "" if v is None else str(v) for k, v in selector.items()}, ("spec", "nodeSelector"))


def render_performance_profile(doc: dict) -> tuple[dict, dict[str, Path], Path, dict[str, str], dict]:
    """(the KubeletConfig's spec.kubeletConfig the operator renders, the profile field each of
    its fields came from, the fallback path, what the operator set and why, the annotation's
    own settings)."""
    meta = doc.get("metadata") if isinstance(doc.get("metadata"), dict) else {}
    annotations = meta.get("annotations") if isinstance(meta.get("annotations"), dict) else {}
    snippet_path: Path = ("metadata", "annotations", EXPERIMENTAL_ANNOTATION)
    snippet: dict = {}
    if EXPERIMENTAL_ANNOTATION in annotations:
        try:
            snippet = json.loads(str(annotations[EXPERIMENTAL_ANNOTATION]))
        except ValueError as err:
            raise PlatformError(snippet_path, f"annotation {EXPERIMENTAL_ANNOTATION} is not JSON "
                                              f"(the operator fails to render the KubeletConfig): "
                                              f"{err}") from None
        if not isinstance(snippet, dict):
            raise PlatformError(snippet_path, f"annotation {EXPERIMENTAL_ANNOTATION} must hold a "
                                              f"JSON object (a partial KubeletConfiguration), not "
                                              f"{_what(snippet)}")
    spec = doc.get("spec")
    if spec is not None and not isinstance(spec, dict):
        raise PlatformError(("spec",), "spec must be a mapping")
    spec = spec or {}
    config: dict = merge_patch({}, snippet)
    config.update({"apiVersion": KUBELET_API_VERSION, "kind": "KubeletConfiguration"})
    origins: dict[str, Path] = {name: snippet_path for name in snippet}
    set_by: dict[str, str] = {}

    def operator(name: str, value: Any, origin: Path, why: str) -> None:
        config[name] = value
        origins[name] = origin
        set_by[name] = f"{name}: {_show(value)} is set by {PAO_SOURCE} {why}"

    fallback: Path = ("spec",) if spec else ()
    if str(annotations.get(DRA_ANNOTATION, "")).lower() in ("true", "enable", "enabled"):
        dra = ("metadata", "annotations", DRA_ANNOTATION)
        for name, value in (("cpuManagerPolicy", "none"), ("topologyManagerPolicy", "none"),
                            ("memoryManagerPolicy", "None")):
            operator(name, value, dra, f"because of the annotation {DRA_ANNOTATION}")
        config["cpuManagerPolicyOptions"] = {}
        return config, origins, fallback, set_by, snippet

    operator("cpuManagerPolicy", "static", ("spec", "cpu") if "cpu" in spec else fallback,
             "for every PerformanceProfile")
    config["cpuManagerReconcilePeriod"] = "5s"
    operator("topologyManagerPolicy", "best-effort", ("spec", "numa") if "numa" in spec else fallback,
             "when spec.numa.topologyPolicy is not given")
    eviction = dict(config.get("evictionHard") or {})
    for signal, value in (("memory.available", "100Mi"), ("nodefs.available", "10%"),
                          ("imagefs.available", "15%"), ("nodefs.inodesFree", "5%")):
        eviction.setdefault(signal, value)
    config["evictionHard"] = eviction
    for name in ("kubeReserved", "systemReserved"):
        reserved = dict(config.get(name) or {})
        reserved.setdefault("memory", "500Mi")
        config[name] = reserved
        origins.setdefault(name, fallback)

    cpu = spec.get("cpu") if isinstance(spec.get("cpu"), dict) else {}
    if cpu.get("reserved") is not None:
        reserved_text = str(cpu["reserved"])
        origin: Path = ("spec", "cpu", "reserved")
        try:
            cpus = parse_cpuset(reserved_text)
            hints = spec.get("workloadHints") if isinstance(spec.get("workloadHints"), dict) else {}
            extra_sets = [("ovsDpdk", cpu.get("ovsDpdk"))]
            if hints.get("mixedCpus") is True:
                extra_sets.append(("shared", cpu.get("shared")))
            for _, text in extra_sets:
                if text:
                    cpus |= parse_cpuset(str(text))
            reserved_text = format_cpuset(cpus)
        except CPUSetError:
            pass              # NG209 reports the unparsable list at spec.cpu.reserved
        operator("reservedSystemCPUs", reserved_text, origin, "from spec.cpu.reserved")
    numa = spec.get("numa") if isinstance(spec.get("numa"), dict) else {}
    policy = numa.get("topologyPolicy")
    if policy is not None:
        where: Path = ("spec", "numa", "topologyPolicy")
        operator("topologyManagerPolicy", str(policy), where, "from spec.numa.topologyPolicy")
        if policy in ("restricted", "single-numa-node"):
            operator("memoryManagerPolicy", "Static", where,
                     f"because spec.numa.topologyPolicy is {policy}")
            if "reservedMemory" not in snippet:
                total = Decimal(0)
                for amount in (config["kubeReserved"].get("memory"),
                               config["systemReserved"].get("memory"),
                               config["evictionHard"].get("memory.available")):
                    try:
                        total += parse_quantity(amount)
                    except (ValueError, TypeError):
                        pass      # the operator fails to render; NG002/NG208 name the value
                operator("reservedMemory", [{"numaNode": 0, "limits": {"memory": format_bytes(total)}}],
                         where, "on NUMA node 0 (kubeReserved + systemReserved + hard eviction)")
            if policy == "single-numa-node":
                options = dict(config.get("cpuManagerPolicyOptions") or {})
                if "full-pcpus-only" not in options:
                    options["full-pcpus-only"] = "true"
                    set_by["cpuManagerPolicyOptions"] = (f"cpuManagerPolicyOptions full-pcpus-only "
                                                         f"\"true\" is set by {PAO_SOURCE} for "
                                                         f"single-numa-node")
                    origins.setdefault("cpuManagerPolicyOptions", where)
                config["cpuManagerPolicyOptions"] = options
    return config, origins, fallback, set_by, snippet


def _pao_adjust(carrier: PlatformKubelet, rule_id: str, v: Violation) -> Violation | None:
    snippet_fix = (f"The PerformanceProfile has no field for this: add it to the annotation "
                   f"{EXPERIMENTAL_ANNOTATION} (JSON, merged under what the operator renders), "
                   f"e.g. {EXPERIMENTAL_ANNOTATION}: '{{\"topologyManagerScope\": \"pod\"}}'.")
    if rule_id == "NG205":
        return Violation(v.path, v.message, v.container, v.severity, snippet_fix)
    if rule_id in ("NG204", "NG206") and "memoryManagerPolicy" not in carrier.platform_set:
        return Violation(v.path, v.message, v.container, v.severity,
                         "Set spec.numa.topologyPolicy: single-numa-node (or restricted): the "
                         "operator then renders topologyManagerPolicy from it, memoryManagerPolicy "
                         "Static and a matching reservedMemory.")
    if rule_id == "NG209" and "splits physical cores" in v.message:
        return Violation(v.path, v.message.replace("reservedSystemCPUs", "spec.cpu.reserved", 1),
                         v.container, v.severity,
                         "Reserve whole cores in spec.cpu.reserved (and give the rest to "
                         "spec.cpu.isolated).")
    return v


def _show(value: Any) -> str:
    return json.dumps(value) if not isinstance(value, str) else value


# A reader yields one carrier per kubelet configuration the object holds (a platform object
# with node groups holds several), or a PlatformError for one of the wrong shape; it may also
# raise a PlatformError when the whole object is unreadable. `platform_registry` holds every
# platform's readers.
Reader = Callable[[dict], Iterable["PlatformKubelet | PlatformError"]]


eks_adjust = _eks_adjust     # nodeadm's carriers elsewhere (eksctl, Karpenter) tell it the same way

__all__ = ["PlatformKubelet", "PlatformError", "NodeSelection", "merge_patch", "EKS_AMI_BASE",
           "machine_config_pool_nodes", "auto_sized_reserved_memory",
           "eks_ami_configuration", "eks_adjust", "user_wrote",
           "eks_node_config", "openshift_kubelet_config", "performance_profile"]
