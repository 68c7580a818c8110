"""NG220-NG224: the kubelet's own validation of reservations and manager settings, with the
kubelet's messages (pkg/kubelet/apis/config/validation/validation.go,
validation_reserved_memory.go, cmd/kubelet/app/server.go)."""
from __future__ import annotations

import pytest

from numaguard.lint.engine import Selection, lint_documents
from numaguard.lint.load.documents import load_text

HEAD = "apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\n"


def _lint(body: str):
    docs, errors = load_text(HEAD + body, "kc.yaml")
    result = lint_documents(docs, load_errors=errors, selection=Selection(select=("NG22",)))
    return [(f.rule, f.severity.value, f.line, f.path, f.message) for f in result.findings]


PREFIX = "the kubelet refuses to start: invalid configuration: "


@pytest.mark.parametrize("body,expected", [
    # validation.go: each enforcement needs its cgroup
    ("enforceNodeAllocatable: [pods, system-reserved]\n",
     [("NG220", "error", 3, "enforceNodeAllocatable[1]", PREFIX + 'systemReservedCgroup '
       '(--system-reserved-cgroup) must be specified when "system-reserved" or '
       '"system-reserved-compressible" included in enforceNodeAllocatable '
       '(--enforce-node-allocatable)')]),
    ("enforceNodeAllocatable: [kube-reserved-compressible]\n",
     [("NG220", "error", 3, "enforceNodeAllocatable[0]", PREFIX + 'kubeReservedCgroup '
       '(--kube-reserved-cgroup) must be specified when "kube-reserved" or '
       '"kube-reserved-compressible" included in enforceNodeAllocatable '
       '(--enforce-node-allocatable)')]),
    ("enforceNodeAllocatable: [pods, pods]\n",
     [("NG220", "error", 3, "enforceNodeAllocatable[1]", PREFIX + 'duplicated enforcements "pods" '
       'in enforceNodeAllocatable (--enforce-node-allocatable)')]),
    ("enforceNodeAllocatable: [none, pods]\n",
     [("NG220", "error", 3, "enforceNodeAllocatable[0]", PREFIX + 'enforceNodeAllocatable '
       '(--enforce-node-allocatable) may not contain additional enforcements when "none" is '
       'specified')]),
    ("enforceNodeAllocatable: [kube-reserved, kube-reserved-compressible]\nkubeReservedCgroup: /k\n",
     [("NG220", "error", 3, "enforceNodeAllocatable[1]", PREFIX + 'both "kube-reserved" and '
       '"kube-reserved-compressible" cannot be specified together in enforceNodeAllocatable '
       '(--enforce-node-allocatable)')]),
    ("enforceNodeAllocatable: [node]\n",
     [("NG220", "error", 3, "enforceNodeAllocatable[0]", PREFIX + 'option "node" specified for '
       'enforceNodeAllocatable (--enforce-node-allocatable). Valid options are "pods", '
       '"system-reserved", "system-reserved-compressible", "kube-reserved", '
       '"kube-reserved-compressible" or "none"')]),
    ("systemCgroups: /system.slice\n",
     [("NG220", "error", 3, "systemCgroups", PREFIX + "systemCgroups (--system-cgroups) was "
       "specified and cgroupRoot (--cgroup-root) was not specified")]),
    # a pool configuration (it sets a manager policy): no pod cgroups for the pod budget
    ("topologyManagerPolicy: single-numa-node\ncgroupsPerQOS: false\nenforceNodeAllocatable: [none]\n",
     [("NG223", "warning", 4, "cgroupsPerQOS", "cgroupsPerQOS is false: the kubelet creates no "
       "pod cgroups, so pod-level spec.resources limits are not enforced as a pod budget")]),
    ("reservedSystemCPUs: \"0-3\"\nsystemReserved: {cpu: \"1\"}\n",
     [("NG221", "info", 4, "systemReserved.cpu", "systemReserved.cpu '1' is ignored: "
       "reservedSystemCPUs is set, so the kubelet replaces it with 4 and reserves the 4 CPU(s) "
       "of reservedSystemCPUs for node allocatable")]),
    ("reservedMemory:\n- {numaNode: 0, limits: {cpu: \"1\"}}\n",
     [("NG222", "error", 4, "reservedMemory[0].limits.cpu", PREFIX + 'the limit type "cpu" for '
       'NUMA node 0 is not supported, only [memory hugepages-<HugePageSize>] is accepted')]),
    ("topologyManagerScope: pod\ntopologyManagerPolicy: none\n",
     [("NG224", "info", 3, "topologyManagerScope", "topologyManagerScope is pod but "
       "topologyManagerPolicy is none: the Topology Manager runs with the none scope and "
       "aligns nothing")]),
    # outside the pool (no manager settings) only what stops the kubelet is reported
    ("cgroupsPerQOS: false\nenforceNodeAllocatable: [none]\n", []),
    # nothing to say: defaults, and a complete reserved-cgroup setup
    ("", []),
    ("enforceNodeAllocatable: [pods, kube-reserved]\nkubeReservedCgroup: /runtime.slice\n", []),
])
def test_kubelet_validation(body, expected):
    assert _lint(body) == expected
