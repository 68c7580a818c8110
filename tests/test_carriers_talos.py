"""Talos' kubelet settings (lint/k8s/platform_talos.py): the legacy v1alpha1 machine configuration
(recognised without apiVersion/kind), Talos' own KubeletConfig document, Talos' defaults and
refusals, and extraArgs laid over extraConfig as the kubelet lays flags over its file. Real files
under tests/fixtures/carriers/talos/ (ORIGIN.md); the bad examples are our own."""
from __future__ import annotations


from numaguard.lint.engine import skip_reason
from numaguard.lint.k8s.platform_talos import is_machine_config
from numaguard.lint.objects import classify

from conftest import carriers_of, lint_rows
from conftest import FIXTURES

TALOS = FIXTURES / "carriers" / "talos"


def _lint(text: str, name: str = "talos.yaml", ignore=()):
    return lint_rows(text, name, ignore)


_carriers = carriers_of


def test_the_legacy_document_and_its_patches_are_recognised_without_a_kind():
    assert is_machine_config({"version": "v1alpha1", "machine": {"type": "worker"}, "cluster": {}})
    assert is_machine_config({"machine": {"kubelet": {"extraConfig": {"maxPods": 10}}}})
    # ordinary files without a kind stay not-kubernetes
    assert not is_machine_config({"machine": {"kubelet": {"extraConfig": {}}}, "name": "x"})
    assert not is_machine_config({"machine": {"kubelet": {"replicas": 3}}})
    assert not is_machine_config({"version": "v1alpha1", "machine": "big"})
    assert not is_machine_config({"version": "v2", "machine": {"type": "worker"}})
    assert not is_machine_config({"apiVersion": "v1alpha1", "machine": {"kubelet": {"image": "x"}}})
    assert skip_reason({"machine": {"kubelet": {"extraConfig": {}}}, "name": "x"}) == "not-kubernetes"
    assert skip_reason({"machine": {"kubelet": {"extraConfig": {}}}}) is None


def test_talos_kubelet_config_is_not_taken_for_another_groups_kind():
    talos = classify({"apiVersion": "v1alpha1", "kind": "KubeletConfig", "config": {}})
    openshift = classify({"apiVersion": "machineconfiguration.openshift.io/v1", "kind": "KubeletConfig",
                          "spec": {"kubeletConfig": {}}})
    other = classify({"apiVersion": "v1alpha10", "kind": "KubeletConfig", "config": {}})
    assert [c.platform for c in talos.platforms] == ["Talos KubeletConfig"]
    assert [c.platform for c in openshift.platforms] == ["OpenShift KubeletConfig"]
    assert other.kind == "skip"


def test_real_talos_documents_lint_clean():
    for name in ("ephemeral-nvme.yaml", "ephemeral-nvme-pre14.yaml", "userdata-plain.yaml", "kubeletconfig.yaml",
                 "overrides-worker.yaml"):
        found, result = _lint((TALOS / name).read_text(), name)
        assert found == [], name
    # the legacy config, its patch and the KubeletConfig documents are read: 1 object each
    counts = {name: _lint((TALOS / name).read_text(), name)[1].summary.objects
              for name in ("ephemeral-nvme-pre14.yaml", "userdata-plain.yaml", "overrides-worker.yaml")}
    assert counts == {"ephemeral-nvme-pre14.yaml": 1, "userdata-plain.yaml": 1, "overrides-worker.yaml": 2}


def test_the_old_and_the_new_form_of_one_setting_give_one_configuration():
    # hack/test/patches: the same swap setting as a v1alpha1 patch and as a KubeletConfig document
    [old] = _carriers((TALOS / "ephemeral-nvme-pre14.yaml").read_text())
    [new] = _carriers((TALOS / "ephemeral-nvme.yaml").read_text())
    assert old.config == new.config
    assert old.config["memorySwap"] == {"swapBehavior": "LimitedSwap"}
    assert (old.platform, new.platform) == ("Talos machine config", "Talos KubeletConfig")


def test_talos_defaults_under_the_users_config():
    [carrier] = _carriers((TALOS / "userdata-plain.yaml").read_text())
    config = carrier.config
    # kubelet_spec.go NewKubeletConfiguration and constants.go; a control plane reserves 512Mi
    assert (config["cgroupRoot"], config["systemCgroups"], config["kubeletCgroups"]) == \
        ("/", "/system", "/podruntime/kubelet")
    assert config["systemReserved"] == {"cpu": "50m", "pid": "100", "ephemeral-storage": "256Mi", "memory": "512Mi"}
    # extraArgs rotate-server-certificates: "true" is the kubelet flag for serverTLSBootstrap
    assert config["serverTLSBootstrap"] is True
    assert carrier.flags.command_line["cloud-provider"] == ("external", ("machine", "kubelet", "extraArgs",
                                                                         "cloud-provider"))
    assert carrier.unknown == frozenset()


def test_the_kubelet_config_document_takes_flags_and_does_not_know_the_machine_type():
    [carrier] = _carriers((TALOS / "kubeletconfig.yaml").read_text())
    assert carrier.config["featureGates"] == {"AllBeta": True}
    assert carrier.config["serverTLSBootstrap"] is True
    assert carrier.unknown == frozenset({"systemReserved.memory"})


def test_talos_refuses_protected_fields_and_denied_arguments():
    text = """\
version: v1alpha1
machine:
  type: worker
  kubelet:
    extraArgs:
      config: /etc/other.yaml
      cert-dir: /tmp
    extraConfig:
      cgroupRoot: /custom
      staticPodPath: /tmp
      maxPods: 50
"""
    found, result = _lint(text)
    assert found == [("NG002", "error", 6, 15, "machine.kubelet.extraArgs.config"),
                     ("NG002", "error", 7, 17, "machine.kubelet.extraArgs.cert-dir"),
                     ("NG002", "error", 9, 19, "machine.kubelet.extraConfig.cgroupRoot"),
                     ("NG002", "error", 10, 22, "machine.kubelet.extraConfig.staticPodPath")]
    assert [f.message for f in result.findings] == [
        'Talos refuses the machine configuration: extra arg "config" is not allowed',
        'Talos refuses the machine configuration: extra arg "cert-dir" is not allowed',
        'Talos refuses the machine configuration: kubelet configuration field "cgroupRoot" can\'t be overridden',
        'Talos refuses the machine configuration: kubelet configuration field "staticPodPath" can\'t be overridden']


NUMA = """\
version: v1alpha1
machine:
  type: worker
  nodeLabels: {node.example.com/pool: numa}
  nodeTaints: {node.example.com/pool: numa:NoSchedule, dedicated: NoExecute}
  kubelet:
    extraArgs:
      topology-manager-scope: container
      feature-gates: PodLevelResourceManagers=true
    extraConfig:
      cpuManagerPolicy: static
      reservedSystemCPUs: "0,1"
      topologyManagerPolicy: single-numa-node
      topologyManagerScope: pod
      memoryManagerPolicy: Static
      reservedMemory:
        - numaNode: 0
          limits: {memory: 484Mi}
      featureGates:
        PodLevelResources: true
"""


def test_a_flag_wins_over_extra_config_and_the_finding_points_at_the_argument():
    found, result = _lint(NUMA)
    # no pool is declared, but `--feature-gates PodLevelResourceManagers=true` in extraArgs
    # declares the configuration (issue 21 §1; a warning before): NG205 is an error
    assert found == [("NG205", "error", 8, 31, "machine.kubelet.extraArgs.topology-manager-scope")]
    assert result.summary.declared["kubeletConfigurations"] == {"pool": 0, "scopeAll": 0, "gate": 1, "assumed": 0}
    assert result.findings[0].message.endswith(
        "[set by the kubelet flag --topology-manager-scope=container in machine.kubelet.extraArgs]")
    [carrier] = _carriers(NUMA)
    # gates merge one by one: the flag's and the file's
    assert carrier.config["featureGates"] == {"PodLevelResources": True, "PodLevelResourceManagers": True}
    # the reservation adds up with Talos' worker systemReserved.memory 384Mi + 100Mi eviction
    assert carrier.config["systemReserved"]["memory"] == "384Mi"


def test_the_machine_config_names_its_nodes():
    [carrier] = _carriers(NUMA)
    assert (carrier.node_labels, carrier.node_labels_path) == ({"node.example.com/pool": "numa"},
                                                               ("machine", "nodeLabels"))
    assert carrier.node_taints == ({"key": "node.example.com/pool", "value": "numa", "effect": "NoSchedule"},
                                   {"key": "dedicated", "value": "", "effect": "NoExecute"})


def test_a_users_system_reserved_replaces_talos_whole_map():
    text = NUMA.replace('      reservedSystemCPUs: "0,1"\n', "      systemReserved: {memory: 384Mi}\n") \
        .replace("      topology-manager-scope: container\n", "")
    found, result = _lint(text)
    # no cpu is reserved any more: Talos adds its 50m only to an empty systemReserved
    assert found == [("NG207", "error", 10, 7, "machine.kubelet.extraConfig")]
    assert result.findings[0].message.startswith("cpuManagerPolicy is static but no CPUs are reserved")


def test_a_refused_flag_stops_everything_else():
    text = NUMA.replace("      topology-manager-scope: container\n", "      topology-manager-scope: [pod, container]\n"
                        "      max-pods: many\n      reserved-cpus: ''\n")
    found, result = _lint(text)
    # the list gives the flag twice (the last, container, wins: NG205), but a value the flag
    # cannot parse ends the kubelet on its command line: nothing else is reported
    assert found == [("NG002", "error", 9, 17, "machine.kubelet.extraArgs.max-pods")]
    assert result.findings[0].message == (
        'the kubelet refuses to start: failed to parse kubelet flag: invalid argument "many" for '
        '"--max-pods" flag: strconv.ParseInt: parsing "many": invalid syntax')
    [carrier] = _carriers(text)
    assert carrier.flags.settings.get("topologyManagerScope") == "container"
    assert "reservedSystemCPUs" not in carrier.flags.settings      # an empty value gives no flag


def test_unknown_fields_stop_talos_own_controller():
    text = NUMA.replace("      cpuManagerPolicy: static\n", "      cpuManagerPolicy: static\n      CPUManagerPolicy: none\n")
    found, result = _lint(text, ignore=("NG205",))
    assert found == [("NG002", "error", 12, 25, "machine.kubelet.extraConfig.CPUManagerPolicy")]
    assert result.findings[0].message.endswith(
        'Talos decodes extraConfig strictly, so its kubelet controller stops with "error unmarshalling '
        'extra kubelet configuration" and the kubelet does not get this configuration')


def test_reserved_memory_on_a_kubelet_config_document_is_judged_for_a_worker_with_a_warning():
    text = """\
apiVersion: v1alpha1
kind: KubeletConfig
image: ghcr.io/siderolabs/kubelet:v1.37.0
config:
  memoryManagerPolicy: Static
  reservedMemory:
    - numaNode: 0
      limits: {memory: 1Gi}
"""
    found, result = _lint(text, ignore=("NG202", "NG205", "NG206", "NG203"))
    assert found == [("NG208", "warning", 7, 5, "config.reservedMemory")]
    assert "a control plane reserves 512Mi, and this document does not say which the machine is" in \
        result.findings[0].message


def test_a_talos_test_input_with_a_placeholder_argument():
    # the config decoder's own test input: `extraArgs: {key: value}` would stop a real kubelet
    found, result = _lint((TALOS / "decoder-controlplane.yaml").read_text())
    assert found == [("NG002", "error", 29, 18, "machine.kubelet.extraArgs.key")]
    assert result.findings[0].message == ("the kubelet refuses to start: failed to parse kubelet flag: "
                                          "unknown flag: --key")
    assert result.findings[0].object.kind == "Talos machine config"


def test_an_unknown_flag_is_reported_and_the_rest_is_still_judged():
    text = NUMA.replace("      topology-manager-scope: container\n", "      topology-manager-scope: container\n"
                        "      pod-infra-container-image: registry.k8s.io/pause:3.10\n")
    found, result = _lint(text)
    assert found == [("NG205", "error", 8, 31, "machine.kubelet.extraArgs.topology-manager-scope"),
                     ("NG002", "error", 9, 34, "machine.kubelet.extraArgs.pod-infra-container-image")]
    assert result.findings[1].message == (
        "the kubelet refuses to start: failed to parse kubelet flag: unknown flag: --pod-infra-container-image; "
        "removed in 1.35, kubernetes#133779: the container runtime keeps the sandbox image")


def test_talos_orders_arguments_by_name_so_the_underscore_spelling_comes_last():
    # argsbuilder sorts the keys; pflag reads `_` as `-`, so both keys set one flag and the one
    # that sorts last ("_" after "-") is the value the kubelet keeps
    text = NUMA.replace("      topology-manager-scope: container\n",
                        "      topology_manager_scope: container\n      topology-manager-scope: pod\n")
    [carrier] = _carriers(text)
    assert carrier.config["topologyManagerScope"] == "container"
    found, _ = _lint(text)
    assert found == [("NG205", "error", 8, 31, "machine.kubelet.extraArgs.topology_manager_scope")]


def test_a_gate_the_flag_does_not_name_is_reported_where_the_file_sets_it():
    text = NUMA.replace("        PodLevelResources: true\n", "        PodLevelResources: true\n        NoSuchGate: true\n") \
        .replace("      topology-manager-scope: container\n", "")
    found, _ = _lint(text)
    assert found == [("NG210", "error", 20, 21, "machine.kubelet.extraConfig.featureGates.NoSuchGate")]
