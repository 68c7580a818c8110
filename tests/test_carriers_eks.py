"""eksctl node groups and Karpenter EC2NodeClasses (lint/platforms/eksctl.py,
karpenter.py): the AL2023 node's kubelet as nodeadm builds it from several NodeConfigs
(lint/platforms/nodeadm.py), eksctl's and Karpenter's refusals, and the families whose base numaguard
does not know. Real files under tests/fixtures/carriers/{eksctl,karpenter}/ (ORIGIN.md); the bad
examples are our own."""
from __future__ import annotations


from numaguard.lint.platforms.carrier_support import mergo_untyped
from numaguard.lint.platforms.nodeadm import nodeconfigs_in_text
from numaguard.lint.platforms.karpenter import ami_family

from conftest import carriers_of, lint_rows
from conftest import FIXTURES

CARRIERS = FIXTURES / "carriers"


def _lint(text: str, name: str = "x.yaml", ignore=()):
    return lint_rows(text, name, ignore)


_carriers = carriers_of


# -- eksctl ----------------------------------------------------------------------------------------

def test_real_eksctl_configs_lint_clean():
    for name in ("customizing-the-kubelet.yaml", "taints-max-pods.yaml", "05-advanced-nodegroups.yaml"):
        found, result = _lint((CARRIERS / "eksctl" / name).read_text(), name)
        assert (found, result.summary.objects) == ([], 1), name


def test_the_documented_kubelet_extra_config_over_the_al2023_base():
    [carrier] = _carriers((CARRIERS / "eksctl/customizing-the-kubelet.yaml").read_text())
    config = carrier.config
    assert carrier.platform == "eksctl node group ng-1"
    # the user's cgroup and reservations over nodeadm's base; the base's systemReservedCgroup stays
    assert (config["kubeReservedCgroup"], config["systemReservedCgroup"]) == ("/kube-reserved", "/system")
    assert config["kubeReserved"] == {"cpu": "300m", "memory": "300Mi", "ephemeral-storage": "1Gi"}
    assert config["evictionHard"] == {"memory.available": "200Mi", "nodefs.available": "10%", "nodefs.inodesFree": "5%"}
    assert carrier.unknown == frozenset()


def test_node_groups_expose_their_labels_and_both_taint_forms():
    carriers = _carriers((CARRIERS / "eksctl/taints-max-pods.yaml").read_text())
    assert [c.platform for c in carriers] == ["eksctl node group ng-taints-1", "eksctl node group ng-taints-2",
                                              "eksctl node group mng-max-pods-2"]
    first, second, managed = carriers
    assert first.node_taints == ({"key": "key1", "value": "val1", "effect": "NoSchedule"},
                                 {"key": "key2", "value": "", "effect": "NoExecute"})
    assert second.node_taints == ({"key": "key1", "value": "value1", "effect": "NoSchedule"},
                                  {"key": "key2", "value": "", "effect": "NoExecute"})
    # maxPodsPerNode is a NodeConfig of its own; a managed group's overrideBootstrapCommand NodeConfig too
    assert (first.config["maxPods"], managed.config["maxPods"]) == (123, 123)
    labelled = _carriers((CARRIERS / "eksctl/05-advanced-nodegroups.yaml").read_text())[0]
    assert (labelled.node_labels, labelled.node_labels_path) == ({"nodegroup-type": "frontend-workloads"},
                                                                 ("nodeGroups", 0, "labels"))


EKSCTL = """\
apiVersion: eksctl.io/v1alpha5
kind: ClusterConfig
metadata: {name: numa, region: eu-west-1}
nodeGroups:
  - name: cpu
    labels: {node.example.com/pool: numa}
    kubeletExtraConfig:
      cpuManagerPolicy: static
      reservedSystemCPUs: "0,1"
      topologyManagerPolicy: single-numa-node
      topologyManagerScope: container
      address: 0.0.0.0
  - name: br
    amiFamily: Bottlerocket
    kubeletExtraConfig: {maxPods: 10}
  - name: ubuntu
    amiFamily: Ubuntu2404
    kubeletExtraConfig:
      cpuManagerPolicy: static
      topologyManagerScope: container
managedNodeGroups:
  - name: managed
    kubeletExtraConfig: {cpuManagerPolicy: static}
"""


def test_eksctl_findings_point_at_the_node_groups_own_fields():
    found, result = _lint(EKSCTL, ignore=("NG202", "NG204"))
    assert found == [
        ("NG209", "error", 9, 27, "nodeGroups[0].kubeletExtraConfig.reservedSystemCPUs"),
        ("NG205", "warning", 11, 29, "nodeGroups[0].kubeletExtraConfig.topologyManagerScope"),  # assumed
        ("NG002", "error", 12, 16, "nodeGroups[0].kubeletExtraConfig.address"),
        ("NG002", "error", 15, 25, "nodeGroups[1].kubeletExtraConfig"),
        ("NG205", "warning", 20, 29, "nodeGroups[2].kubeletExtraConfig.topologyManagerScope"),
        ("NG002", "error", 23, 25, "managedNodeGroups[0].kubeletExtraConfig")]
    messages = [f.message for f in result.findings]
    assert 'set both to "" in nodeGroups[0].kubeletExtraConfig' in result.findings[0].remediation
    assert messages[2] == ('eksctl refuses the node group: cannot override "address" in kubelet config, '
                           "as it's critical to eksctl functionality")
    assert messages[3] == ("eksctl refuses the node group: kubeletExtraConfig is not supported for Bottlerocket "
                           "nodegroups (path=nodeGroups[1].kubeletExtraConfig)")
    assert messages[5] == ('eksctl refuses the file: error unmarshaling JSON: while decoding JSON: json: '
                           'unknown field "kubeletExtraConfig"')


def test_an_unknown_base_is_judged_only_where_the_node_group_shows_something():
    # Ubuntu's kubelet-config.json is Canonical's: the missing gate and memory policy are not judged
    found, _ = _lint(EKSCTL)
    assert [(rule, path) for rule, _, _, _, path in found if path.startswith("nodeGroups[2]")] == \
        [("NG205", "nodeGroups[2].kubeletExtraConfig.topologyManagerScope")]
    assert ("NG204", "nodeGroups[0].kubeletExtraConfig") in [(rule, path) for rule, _, _, _, path in found]


def test_override_bootstrap_command_overrides_kubelet_extra_config():
    text = EKSCTL.split("  - name: br")[0].replace("      address: 0.0.0.0\n", "") + """\
    overrideBootstrapCommand: |
      apiVersion: node.eks.aws/v1alpha1
      kind: NodeConfig
      spec:
        kubelet:
          config:
            topologyManagerScope: pod
            kubeReservedCgroup: ""
            systemReservedCgroup: ""
          flags:
            - --memory-manager-policy=Static
"""
    found, result = _lint(text, ignore=("NG202",))
    # nodeadm merges the later NodeConfig over the first: scope pod (no NG205), but the cgroups
    # are not cleared (an empty value never overrides in mergo), so NG209 stays; the flag
    # turns the static Memory Manager on, and no reservedMemory can add up to 0 on any instance
    assert found == [("NG208", "error", 8, 7, "nodeGroups[0].kubeletExtraConfig"),
                     ("NG209", "error", 9, 27, "nodeGroups[0].kubeletExtraConfig.reservedSystemCPUs")]
    assert result.findings[0].message.startswith(
        "reservedMemory cannot be checked against the node allocatable reservation: kubeReserved.memory is "
        "not set in nodeGroups[0].kubeletExtraConfig, so the EKS AMI's nodeadm")
    assert result.findings[0].message.endswith("Σ reservedMemory memory 0 matches no maxPods at all")
    [carrier, *_] = _carriers(text)
    assert carrier.config["memoryManagerPolicy"] == "Static"
    assert carrier.config["topologyManagerScope"] == "pod"


# -- nodeadm -----------------------------------------------------------------------------------------

def test_nodeadm_merges_like_mergo():
    assert mergo_untyped({"a": {"x": 1, "y": 2}, "b": "keep", "c": True},
                         {"a": {"y": 3}, "b": "", "c": False, "d": [1]}) == \
        {"a": {"x": 1, "y": 3}, "b": "keep", "c": True, "d": [1]}


def test_nodeconfigs_in_mime_user_data_and_plain_yaml():
    mime = (CARRIERS / "karpenter/al2023-custom-userdata.yaml").read_text().split("userData: |\n")[1]
    mime = "\n".join(line[4:] for line in mime.splitlines())
    found = nodeconfigs_in_text(mime, ("spec", "userData"), "spec.userData")
    assert (found.layers, found.extra) == ([], [])          # a NodeConfig without kubelet settings
    plain = nodeconfigs_in_text("apiVersion: node.eks.aws/v1alpha1\nkind: NodeConfig\nspec:\n  kubelet:\n"
                                "    config: {maxPods: 7}\n    flags: [--v=2]\n", ("x",), "x")
    assert [(layer.config, layer.flags) for layer in plain.layers] == [({"maxPods": 7}, ("--v=2",))]
    assert nodeconfigs_in_text("#!/bin/bash\necho hi\n", ("x",), "x").layers == []


# -- Karpenter ------------------------------------------------------------------------------------

def test_real_karpenter_classes_lint_clean():
    for name in ("nodeclasses-reference.yaml", "nodeclasses-userdata-nodeconfig.yaml", "al2023-custom-userdata.yaml",
                 "al2-kubelet-log-query.yaml"):
        found, _ = _lint((CARRIERS / "karpenter" / name).read_text(), name)
        assert found == [], name


def test_the_ami_family_comes_from_the_field_or_the_alias():
    assert ami_family({"amiFamily": "AL2", "amiSelectorTerms": [{"alias": "al2023@latest"}]}) == "AL2"
    assert ami_family({"amiSelectorTerms": [{"id": "ami-1"}, {"alias": "bottlerocket@v1.2"}]}) == "Bottlerocket"
    assert ami_family({"amiSelectorTerms": [{"id": "ami-1"}]}) is None


def test_user_data_nodeconfig_goes_under_spec_kubelet():
    # nodeclasses.md: maxPods in spec.kubelet, registryPullQPS in a NodeConfig of spec.userData
    [carrier] = _carriers((CARRIERS / "karpenter/nodeclasses-userdata-nodeconfig.yaml").read_text())
    assert (carrier.config["maxPods"], carrier.config["registryPullQPS"]) == (42, 10)
    assert carrier.places == {"registryPullQPS": "spec.userData"}


KARPENTER = """\
apiVersion: karpenter.k8s.aws/v1
kind: EC2NodeClass
metadata: {name: numa}
spec:
  amiSelectorTerms:
    - alias: al2023@latest
  kubelet:
    cpuManagerPolicy: static
    topologyManagerPolicy: single-numa-node
    kubeReserved:
      cpu: "self.vCPU > 8 ? '1' : '500m'"
      memory: 1Gi
    maxPods: "self.eniLimitedPods"
  userData: |
    MIME-Version: 1.0
    Content-Type: multipart/mixed; boundary="//"

    --//
    Content-Type: application/node.eks.aws

    apiVersion: node.eks.aws/v1alpha1
    kind: NodeConfig
    spec:
      kubelet:
        config:
          topologyManagerScope: container
          cpuManagerPolicy: none
        flags:
          - --reserved-cpus=0,1
    --//--
---
apiVersion: karpenter.k8s.aws/v1
kind: EC2NodeClass
metadata: {name: al2}
spec:
  amiFamily: AL2
  kubelet:
    cpuManagerPolicy: static
    topologyManagerScope: pod
    maxPods: 20
---
apiVersion: karpenter.k8s.aws/v1
kind: EC2NodeClass
metadata: {name: custom}
spec:
  amiFamily: Custom
  kubelet:
    maxPods: 20
"""


def test_karpenter_findings():
    found, result = _lint(KARPENTER, ignore=("NG202", "NG204"))
    # no pool is declared: NG205 (a pool requirement) is a warning, NG209 (a refusal) an error
    assert found == [("NG205", "warning", 14, 13, "spec.userData"), ("NG209", "error", 14, 13, "spec.userData"),
                     ("NG002", "error", 38, 5, "spec.kubelet"), ("NG002", "warning", 48, 5, "spec.kubelet")]
    messages = [f.message for f in result.findings]
    assert messages[0].endswith("[in spec.userData: spec.kubelet.config.topologyManagerScope]")
    assert messages[1].endswith("[set by the kubelet flag --reserved-cpus=0,1 in spec.userData]")
    assert messages[2] == ('Karpenter launches no node from this class (ValidationSucceeded=False): "spec.kubelet '
                           'has fields not applied by the AL2 AMI family that would be silently dropped: '
                           'cpuManagerPolicy, topologyManagerScope"')
    assert messages[3] == ("amiFamily Custom: Karpenter passes none of spec.kubelet to the node; the user "
                           "data alone configures the kubelet")


def test_karpenter_expressions_are_not_quantities_to_judge():
    [carrier, _, _] = _carriers(KARPENTER)
    # spec.kubelet wins over the user data's NodeConfig (Karpenter's NodeConfig is merged last)
    assert carrier.config["cpuManagerPolicy"] == "static"
    # the expression is resolved per instance type: the AMI's placeholder stays, marked unknown
    assert carrier.config["kubeReserved"] == {"cpu": "60m", "ephemeral-storage": "1Gi", "memory": "1Gi"}
    assert carrier.written == {"cpuManagerPolicy": "static", "topologyManagerPolicy": "single-numa-node",
                               "kubeReserved": {"memory": "1Gi"}}
    assert carrier.unknown == frozenset({"kubeReserved.cpu", "maxPods"})


def test_an_unknown_spec_kubelet_field_stops_karpenter():
    text = KARPENTER.split("---")[0].replace("    cpuManagerPolicy: static\n",
                                             "    cpuManagerPolicy: static\n    cpuManagerPolcy: static\n")
    found, result = _lint(text, ignore=("NG202", "NG204", "NG205", "NG209"))
    assert found == [("NG002", "error", 9, 22, "spec.kubelet.cpuManagerPolcy")]
    assert result.findings[0].message.endswith(
        "Karpenter checks spec.kubelet against the upstream type and refuses an unknown field "
        "(ValidationSucceeded=False, InvalidKubeletConfiguration): no node is launched from this class")


def test_the_first_nodeconfig_is_kept_as_written_and_later_empty_values_do_not_override():
    from numaguard.lint.platforms.nodeadm import NodeadmLayer, nodeadm_carrier
    layers = [NodeadmLayer({"kubeReservedCgroup": "", "maxPods": 10}, (), ("first",), "first"),
              NodeadmLayer({"kubeReservedCgroup": "/x", "maxPods": 0}, (), ("second",), "second"),
              NodeadmLayer({"kubeReservedCgroup": ""}, (), ("third",), "third")]
    carrier = nodeadm_carrier("t", layers, written={}, written_path=("first",), user_field="first", fallback=())
    # MergeNodeConfigs: the first as it is ("" clears the AMI's /runtime), then mergo
    assert (carrier.config["kubeReservedCgroup"], carrier.config["maxPods"]) == ("/x", 10)
    assert (carrier.origins["kubeReservedCgroup"], carrier.origins["maxPods"]) == (("second",), ("first",))
    alone = nodeadm_carrier("t", layers[:1], written={}, written_path=("w",), user_field="w", fallback=())
    assert (alone.config["kubeReservedCgroup"], alone.origins["kubeReservedCgroup"]) == ("", ("first",))


def test_bottlerocket_classes_have_no_pods_per_core():
    text = KARPENTER.split("---")[1].replace("amiFamily: AL2", "amiFamily: Bottlerocket").replace(
        "    cpuManagerPolicy: static\n    topologyManagerScope: pod\n", "    podsPerCore: 4\n")
    found, result = _lint(text)
    assert found == [("NG002", "error", 8, 5, "spec.kubelet")]
    assert result.findings[0].message.endswith("not applied by the Bottlerocket AMI family that would be silently "
                                               "dropped: podsPerCore\"")
