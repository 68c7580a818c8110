"""A suggested fix, applied, lints clean (issue 7, "5. Messages").

For every rule whose message or fix names a value to write, the case below takes a bad object,
reads the suggested value out of the finding, writes it where the finding says, and lints again:
that rule must be gone, and no rule may fire that did not fire before."""
from __future__ import annotations

import copy
import re
from typing import Callable

import pytest

from numaguard.lint.config import config_from_dict
from numaguard.lint.engine import lint_documents

MANAGED = {"numaguard.io/scope": "managed"}


def pod(spec: dict) -> dict:
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": "p", "annotations": dict(MANAGED)}, "spec": spec}


def kubelet(**fields) -> dict:
    base = {"apiVersion": "kubelet.config.k8s.io/v1beta1", "kind": "KubeletConfiguration",
            "featureGates": {"PodLevelResourceManagers": True}, "cpuManagerPolicy": "static",
            "memoryManagerPolicy": "Static", "topologyManagerPolicy": "single-numa-node",
            "topologyManagerScope": "pod", "reservedSystemCPUs": "0,32",
            "reservedMemory": [{"numaNode": 0, "limits": {"memory": "100Mi"}}]}
    base.update(fields)
    return base


def app(name="app", requests=None, limits=None, **extra) -> dict:
    c = {"name": name, "image": "registry.example.com/app:1", **extra}
    if requests or limits:
        c["resources"] = {k: v for k, v in (("requests", requests), ("limits", limits)) if v}
    return c


def both(**values) -> dict:
    return {"requests": dict(values), "limits": dict(values)}


def findings(obj: dict, node=None) -> dict[str, list]:
    from numaguard.lint.numa.node import load_node_file

    node = load_node_file(node) if node else None
    result = lint_documents([copy.deepcopy(obj)], config=config_from_dict({}), node=node)
    out: dict[str, list] = {}
    for f in result.active:
        out.setdefault(f.rule, []).append(f)
    return out


def _set(obj: dict, path: str, value) -> None:
    keys = [int(k) if k.isdigit() else k for k in re.findall(r"[^.\[\]]+", path)]
    for key in keys[:-1]:
        obj = obj.setdefault(key, {}) if isinstance(obj, dict) else obj[key]
    obj[keys[-1]] = value


def _number(text: str, pattern: str) -> str:
    match = re.search(pattern, text)
    assert match, f"{pattern!r} not in {text!r}"
    return match.group(1)


def fix_ng101(obj, f):
    cpu = _number(f.message, r'cpu: "(\d+)"')
    memory = _number(f.message, r"memory: (\d+\w*) \(or more\)")
    obj["spec"]["resources"] = both(cpu=cpu, memory=memory)


def fix_ng101_no_memory(obj, f):
    cpu = _number(f.message, r'cpu: "(\d+)" and the memory the whole pod needs')
    obj["spec"]["resources"] = both(cpu=cpu, memory="1Gi")     # "the memory the pod needs"


def fix_ng103(obj, f):
    field, value = re.search(r'set spec\.resources\.(\w+\.\w+): "([^"]+)"', f.message).groups()
    _set(obj["spec"]["resources"], field, value)


def fix_ng104(obj, f):
    value = _number(f.message, r'use cpu: "(\d+)"')
    for which in ("requests", "limits"):
        obj["spec"]["resources"].setdefault(which, {})["cpu"] = value


def fix_ng105(obj, f):
    res, value = re.search(r"raise spec\.resources\.requests\.(\S+) to at least (\S+)$",
                           f.message).groups()
    for which in ("requests", "limits"):
        obj["spec"]["resources"][which][res] = value


def fix_ng106(obj, f):
    value = _number(f.message, r"to at most (\S+)$")
    _set(obj["spec"], f.path.removeprefix("spec."), value)


def fix_ng107(obj, f):
    value = int(_number(f.message, r"raise spec\.resources cpu above (\d+)")) + 1
    for which in ("requests", "limits"):
        obj["spec"]["resources"][which]["cpu"] = str(value)


def fix_ng108(obj, f):
    name, value = re.search(r'set limits\.(\S+): "([^"]+)"', f.message).groups()
    obj["spec"]["resources"]["limits"][name] = value


def fix_ng114(obj, f):
    res, value = re.search(r'set requests\.(\w+): "([^"]+)"', f.message).groups()
    obj["spec"]["resources"]["requests"][res] = value


def fix_ng208(obj, f):
    numa, memory = re.search(r"reservedMemory: \[\{numaNode: (\d+), limits: \{memory: (\S+)\}\}\]",
                             f.remediation).groups()
    obj["reservedMemory"] = [{"numaNode": int(numa), "limits": {"memory": memory}}]


def fix_ng209(obj, f):
    obj["reservedSystemCPUs"] = _number(f.message, r'reservedSystemCPUs: "([^"]+)"')


CASES: list[tuple[str, str, dict, Callable, str | None]] = [
    ("NG101", "aggregate", pod({"containers": [app(requests={"cpu": "1500m", "memory": "1Gi"}),
                                               app("side", limits={"cpu": "1", "memory": "2Gi"})]}),
     fix_ng101, None),
    # only cpu declared: the fix names no memory value, never "memory: 0"
    ("NG101", "cpu-only", pod({"containers": [app(requests={"cpu": "2"})]}), fix_ng101_no_memory, None),
    # an exclusive container and a sharing one: the suggestion leaves a shared pool (NG107)
    ("NG101", "shared-pool", pod({"containers": [app(**both(cpu="2", memory="1Gi")),
                                                 app("side")]}), fix_ng101, None),
    ("NG103", "defaulted", pod({"resources": {"limits": {"cpu": "4", "memory": "4Gi"}},
                                "containers": [app(requests={"cpu": "1"})]}), fix_ng103, None),
    ("NG103", "no-limit", pod({"resources": {"requests": {"cpu": "2", "memory": "1Gi"},
                                             "limits": {"cpu": "2"}},
                               "containers": [app()]}), fix_ng103, None),
    ("NG104", "fraction", pod({"resources": both(cpu="2500m", memory="1Gi"),
                               "containers": [app()]}), fix_ng104, None),
    ("NG105", "aggregate", pod({"resources": both(cpu="2", memory="1Gi"),
                                "containers": [app(**both(cpu="2", memory="1Gi")),
                                               app("b", requests={"cpu": "1"})]}), fix_ng105, None),
    ("NG106", "limit", pod({"resources": both(cpu="2", memory="1Gi"),
                            "containers": [app(requests={"cpu": "1"}, limits={"cpu": "3"})]}),
     fix_ng106, None),
    ("NG107", "no-pool", pod({"resources": both(cpu="2", memory="2Gi"),
                              "containers": [app(**both(cpu="2", memory="1Gi")), app("b")]}),
     fix_ng107, None),
    ("NG108", "hugepages", pod({"resources": {"requests": {"cpu": "2", "memory": "1Gi",
                                                           "hugepages-2Mi": "64Mi"},
                                              "limits": {"cpu": "2", "memory": "1Gi"}},
                                "containers": [app()]}), fix_ng108, None),
    ("NG114", "above", pod({"resources": {"requests": {"cpu": "3", "memory": "1Gi"},
                                          "limits": {"cpu": "2", "memory": "1Gi"}},
                            "containers": [app()]}), fix_ng114, None),
    ("NG208", "sum", kubelet(systemReserved={"memory": "1Gi"}), fix_ng208, None),
    # with a node lacking NUMA node 3, the suggestion moves the reservation to one it has
    ("NG208", "numa", kubelet(reservedMemory=[{"numaNode": 3, "limits": {"memory": "50Mi"}}]),
     fix_ng208, "builtin:dual-socket-ht"),
    ("NG209", "split", kubelet(reservedSystemCPUs="0"), fix_ng209, "builtin:dual-socket-ht"),
    # a CPU the node lacks is not carried into the suggestion
    ("NG209", "missing", kubelet(reservedSystemCPUs="0,500"), fix_ng209, "builtin:dual-socket-ht"),
]


@pytest.mark.parametrize("rule_id,name,bad,apply,node", CASES,
                         ids=[f"{c[0]}-{c[1]}" for c in CASES])
def test_applied_fix_lints_clean(rule_id, name, bad, apply, node):
    before = findings(bad, node)
    assert rule_id in before, sorted(before)
    fixed = None
    for finding in before[rule_id]:          # the first finding of the rule that names a value
        candidate = copy.deepcopy(bad)
        try:
            apply(candidate, finding)
        except (AssertionError, AttributeError):
            continue
        fixed = candidate
        break
    assert fixed is not None, [f.message for f in before[rule_id]]
    after = findings(fixed, node)
    assert rule_id not in after, [f.message for f in after.get(rule_id, [])]
    # nothing new at warning or error (NG110 is the placement report a fixed pod now gets)
    new = {r for r, fs in after.items() if r not in before
           and any(f.severity.value != "info" for f in fs)}
    assert not new, {r: [f.message for f in after[r]] for r in new}


def test_every_value_suggesting_pod_rule_has_a_case():
    covered = {c[0] for c in CASES}
    assert {"NG101", "NG103", "NG104", "NG105", "NG106", "NG107", "NG108", "NG114",
            "NG208", "NG209"} <= covered


def test_ng101_never_suggests_zero_memory():
    (f,) = findings(pod({"containers": [app(requests={"cpu": "2"})]}))["NG101"]
    assert "memory: 0" not in f.message and "memory 0" not in f.message
    assert f.message == (
        "the pod has no pod-level spec.resources: the pod-scope resource managers will not treat "
        "it as one unit; the containers need cpu 2 (the larger of their aggregate requests and "
        "their largest limit); no container declares memory: add spec.resources with requests "
        "and limits both set to cpu: \"2\" and the memory the whole pod needs")


def test_ng110_under_container_scope_describes_no_pod_shared_pool():
    from dataclasses import replace

    from numaguard.lint.load.documents import load_text
    from numaguard.lint.numa.node import load_node_file

    from conftest import FIXTURES

    path = FIXTURES / "realrepo" / "website" / "pod-level-resource-managers-container-scope-mixed.yaml"
    docs, _ = load_text(path.read_text(), str(path))
    node = load_node_file("builtin:dual-socket-ht")
    node = replace(node, kubelet_config={**node.kubelet_config, "topologyManagerScope": "container"})
    result = lint_documents(docs, config=config_from_dict({}), node=node)
    (f,) = [f for f in result.active if f.rule == "NG110"]
    assert f.message == (
        "topologyManagerScope is container: the pod budget is not placed as one unit and there is "
        "no pod shared pool; each container is aligned on its own, pod-level limits only cap the "
        "pod's cgroup. Exclusive CPUs from the node: sidecar 'infrastructure-sidecar'. In the "
        "node's shared pool: container 'worker-1'; container 'worker-2'.")
    assert "pod's shared pool" not in f.message
