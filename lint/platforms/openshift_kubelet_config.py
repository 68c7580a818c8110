"""The two objects that render an OpenShift node's kubelet configuration from what users write:
the Machine Config Operator's `KubeletConfig` and the Node Tuning Operator's `PerformanceProfile`
(which renders a KubeletConfig). Both are laid over the MCO's base (`openshift_base`).

OpenShift `KubeletConfig` (`machineconfiguration.openshift.io/v1`, openshift/api
`machineconfiguration/v1/types.go` `KubeletConfigSpec.KubeletConfig *runtime.RawExtension`):
the Machine Config Operator merges it over its rendered `kubelet.conf` and refuses some
fields outright (`pkg/controller/kubelet-config/helpers.go` `validateUserKubeletConfig`:
"KubeletConfiguration: featureGates is not allowed to be set, but contains: ..."; gates come
from the cluster's FeatureGate resource). `systemReserved` is sized per node unless
`autoSizingReserved: false` is given, so numaguard cannot know it.

Node Tuning Operator `PerformanceProfile` (`performance.openshift.io/v2`,
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

import json
from decimal import Decimal
from typing import Any

from numaguard.lint.k8s.cpuset import CPUSetError, format_cpuset, parse_cpuset
from numaguard.lint.k8s.quantity import format_bytes, parse_quantity
from numaguard.lint.model import NodeSelection, Path, Severity, Violation, items
from numaguard.lint.platforms.carrier import (KUBELET_API_VERSION, PlatformError, PlatformKubelet, describe_value,
                                              merge_patch, plain_copy, user_wrote, written_config)
from numaguard.lint.platforms.openshift_base import (OPENSHIFT_GATES_FIX, auto_sizing_dropin, mco_kubelet_conf,
                                                     mco_refusals, openshift_resolve, rendered_profile,
                                                     tell_cluster_gates)

# cluster-node-tuning-operator components/kubeletconfig/kubeletconfig.go
EXPERIMENTAL_ANNOTATION = "kubeletconfig.experimental"
DRA_ANNOTATION = "performance.openshift.io/dra-resource-management"
PAO_SOURCE = "the Node Tuning Operator (components/kubeletconfig/kubeletconfig.go)"


def openshift_kubelet_config(doc: dict) -> PlatformKubelet:
    path = ("spec", "kubeletConfig")
    written = written_config(doc, path)
    spec = doc.get("spec") if isinstance(doc.get("spec"), dict) else {}
    # What the MCO renders into kubelet.conf, then the node-sizing drop-in over it
    # (openshift_base: mergo override, systemReservedCgroup cleared with reservedSystemCPUs).
    config, refused = mco_kubelet_conf(plain_copy(written))
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
                                              f"{describe_value(snippet)}")
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


__all__ = ["openshift_kubelet_config", "performance_profile", "render_performance_profile",
           "machine_config_pool_nodes", "auto_sized_reserved_memory"]
