"""The kubelet flag table: values read as pflag reads them, the kubelet's own error texts, and
the precedence of flags over the configuration file (cmd/kubelet/app/server.go)."""
import pytest

from numaguard.lint.k8s import kubelet_flag_values as v
from numaguard.lint.k8s.kubelet_flags import (FLAGS, FlagArg, flag_name_for, parse_flags)

REFUSES = "the kubelet refuses to start: failed to parse kubelet flag: "


def parse(*words):
    return parse_flags(FlagArg(word, ("args", i)) for i, word in enumerate(words))


def problems(*words):
    return [(p.origin, p.message, p.fatal) for p in parse(*words).problems]


# ------------------------------------------------------------------------ value syntaxes

@pytest.mark.parametrize("text, expected", [
    ("0:memory=1Gi", [{"numaNode": 0, "limits": {"memory": "1Gi"}}]),
    ("0:memory=1Gi,hugepages-1Gi=2Gi;1:memory=512Mi",
     [{"numaNode": 0, "limits": {"memory": "1Gi", "hugepages-1Gi": "2Gi"}},
      {"numaNode": 1, "limits": {"memory": "512Mi"}}]),
    ("+1:memory=1Gi", [{"numaNode": 1, "limits": {"memory": "1Gi"}}]),
])
def test_reserved_memory_syntax(text, expected):
    assert v.RESERVED_MEMORY.parse(text) == expected


@pytest.mark.parametrize("text, error", [
    # a comma between NUMA nodes: kubernetes#105783, the kubelet's own (misspelt) words
    ("0:memory=1Gi,1:memory=2Gi", "the reserved memory has incorrect format, expected "
     "numaNodeID:type=quantity[,type=quantity...], got 0:memory=1Gi,1:memory=2Gi"),
    ("memory=1Gi", "the reserved memory has incorrect format, expected "
     "numaNodeID:type=quantity[,type=quantity...], got memory=1Gi"),
    ("zero:memory=1Gi", "failed to convert the NUMA node ID, exptected integer, got zero"),
    ("0:memory", "the reserved limit has incorrect value, expected type=quantatity, got memory"),
    ("0:cpu=1", 'memory type conversion error, unknown type: "cpu"'),
    ("0:memory=1GB", "failed to parse the quantatity, expected quantatity, got 1GB"),
])
def test_reserved_memory_refusals(text, error):
    with pytest.raises(v.FlagValueError) as err:
        v.RESERVED_MEMORY.parse(text)
    assert str(err.value) == error


@pytest.mark.parametrize("syntax, text, expected", [
    (v.INT32, "110", 110), (v.INT32, "0x10", 16), (v.INT32, "010", 8), (v.INT32, "1_000", 1000),
    (v.INT32, "-5", -5), (v.INT64, "9223372036854775807", 2 ** 63 - 1),
    (v.BOOL, "True", True), (v.BOOL, "0", False),
    (v.DURATION, "1m30s", "1m30s"), (v.DURATION, "0", "0"), (v.DURATION, "-1.5h", "-1.5h"),
    (v.IP, "010.0.0.1", "010.0.0.1"), (v.IP, "::", "::"),
    (v.STRING_SLICE, 'pods,"kube-reserved,x"', ["pods", "kube-reserved,x"]), (v.STRING_SLICE, "", []),
    (v.MAP, "cpu=1, memory = 2Gi", {"cpu": "1", "memory": "2Gi"}),
    (v.MAP_ONE, "full-pcpus-only=true,distribute-cpus-across-numa=true",
     {"full-pcpus-only": "true,distribute-cpus-across-numa=true"}),
    (v.LANGLE_MAP, "memory.available<500Mi,nodefs.available<10%",
     {"memory.available": "500Mi", "nodefs.available": "10%"}),
    (v.GATES, "A=true, B=false,", {"A": True, "B": False}),
    (v.LABELS, "a=b,c", {"a": "b", "c": ""}),
    (v.TAINTS, "dedicated=numa:NoSchedule", [{"key": "dedicated", "value": "numa", "effect": "NoSchedule"}]),
])
def test_value_syntaxes(syntax, text, expected):
    assert syntax.parse(text) == expected


@pytest.mark.parametrize("syntax, text, error", [
    (v.INT32, "abc", 'strconv.ParseInt: parsing "abc": invalid syntax'),
    (v.INT32, "2147483648", 'strconv.ParseInt: parsing "2147483648": value out of range'),
    (v.INT32, "08", 'strconv.ParseInt: parsing "08": invalid syntax'),
    (v.INT32, "1__0", 'strconv.ParseInt: parsing "1__0": invalid syntax'),
    (v.BOOL, "yes", 'strconv.ParseBool: parsing "yes": invalid syntax'),
    (v.DURATION, "5", 'time: missing unit in duration "5"'),
    (v.DURATION, "5d", 'time: unknown unit "d" in duration "5d"'),
    (v.DURATION, "", 'time: invalid duration ""'),
    (v.IP, "localhost", '"localhost" is not a valid IP address'),
    (v.MAP, "cpu", "malformed pair, expect string=string"),
    (v.LANGLE_MAP, "memory.available=1Gi", "malformed pair, expect string<string"),
    (v.GATES, "A", "malformed pair, expect string=bool"),
    (v.GATES, "A=yes", 'invalid value of A: yes, err: strconv.ParseBool: parsing "yes": invalid syntax'),
    (v.TAINTS, "dedicated=numa:Sometimes", "invalid taint spec: dedicated=numa:Sometimes"),
])
def test_value_refusals(syntax, text, error):
    with pytest.raises(v.FlagValueError) as err:
        syntax.parse(text)
    assert str(err.value) == error


# ------------------------------------------------------------------------------ the table

def test_every_flag_the_kubelet_rules_read_is_in_the_table():
    fields = {"cpuManagerPolicy": "cpu-manager-policy", "cpuManagerPolicyOptions": "cpu-manager-policy-options",
              "reservedSystemCPUs": "reserved-cpus", "featureGates": "feature-gates",
              "topologyManagerPolicy": "topology-manager-policy", "topologyManagerScope": "topology-manager-scope",
              "topologyManagerPolicyOptions": "topology-manager-policy-options",
              "memoryManagerPolicy": "memory-manager-policy", "reservedMemory": "reserved-memory",
              "kubeReserved": "kube-reserved", "systemReserved": "system-reserved",
              "kubeReservedCgroup": "kube-reserved-cgroup", "systemReservedCgroup": "system-reserved-cgroup",
              "enforceNodeAllocatable": "enforce-node-allocatable", "evictionHard": "eviction-hard",
              "cgroupsPerQOS": "cgroups-per-qos", "cgroupRoot": "cgroup-root", "systemCgroups": "system-cgroups",
              "cpuManagerReconcilePeriod": "cpu-manager-reconcile-period", "maxPods": "max-pods"}
    assert {f: FLAGS[name].field for f, name in fields.items()} == {f: (f,) for f in fields}
    assert {name: flag_name_for((f,)) for f, name in fields.items()} == {n: f"--{n}" for n in fields.values()}
    assert flag_name_for(("featureGates", "PodLevelResourceManagers")) == "--feature-gates"
    assert flag_name_for(("mergeDefaultEvictionSettings",)) is None
    assert (FLAGS["config"].field, FLAGS["config-dir"].field) == (None, None)


# --------------------------------------------------------------------------- the command line

def test_flags_set_configuration_fields_with_their_origins():
    parsed = parse("--cpu-manager-policy=static", "--reserved-cpus=0,1", "--kube-reserved=cpu=1,memory=1Gi",
                   "--feature-gates=PodLevelResourceManagers=true", "--node-labels=role=numa")
    assert parsed.settings == {"cpuManagerPolicy": "static", "reservedSystemCPUs": "0,1",
                               "kubeReserved": {"cpu": "1", "memory": "1Gi"},
                               "featureGates": {"PodLevelResourceManagers": True}}
    assert parsed.origin_of(("kubeReserved", "memory")) == ("args", 2)
    assert parsed.origin_of(("featureGates", "PodLevelResourceManagers")) == ("args", 3)
    assert parsed.origin_of(("topologyManagerPolicy",)) is None
    assert parsed.command_line == {"node-labels": ({"role": "numa"}, ("args", 4))}
    assert parsed.problems == [] and not parsed.fatal


def test_repeated_flags_scalars_last_wins_maps_and_lists_add_up():
    parsed = parse("--cpu-manager-policy=none", "--cpu_manager_policy=static",
                   "--cpu-manager-policy-options=full-pcpus-only=true",
                   "--cpu-manager-policy-options=distribute-cpus-across-numa=true",
                   "--reserved-memory=0:memory=1Gi", "--reserved-memory=1:memory=1Gi",
                   "--enforce-node-allocatable=pods", "--enforce-node-allocatable=system-reserved")
    assert parsed.settings == {
        "cpuManagerPolicy": "static",
        "cpuManagerPolicyOptions": {"full-pcpus-only": "true", "distribute-cpus-across-numa": "true"},
        "reservedMemory": [{"numaNode": 0, "limits": {"memory": "1Gi"}}, {"numaNode": 1, "limits": {"memory": "1Gi"}}],
        "enforceNodeAllocatable": ["pods", "system-reserved"]}
    assert parsed.origin_of(("cpuManagerPolicy",)) == ("args", 1)


def test_bare_boolean_and_separate_value_words():
    parsed = parse("--fail-swap-on", "--max-pods", "250", "-v=4")
    assert parsed.settings == {"failSwapOn": True, "maxPods": 250, "logging": {"verbosity": 4}}
    assert parsed.origin_of(("maxPods",)) == ("args", 2)


def test_refusals_in_the_kubelets_words():
    assert problems("--foo=1", "--pod-infra-container-image=pause:3.10", "--max-pods=many",
                    "stray", "----cpu-manager-policy=static", "--version", "--topology-manager-policy") == [
        (("args", 0), REFUSES + "unknown flag: --foo", True),
        (("args", 1), REFUSES + "unknown flag: --pod-infra-container-image; removed in 1.35, "
                                "kubernetes#133779: the container runtime keeps the sandbox image", True),
        (("args", 2), REFUSES + 'invalid argument "many" for "--max-pods" flag: strconv.ParseInt: '
                                'parsing "many": invalid syntax', True),
        (("args", 3), "the kubelet refuses to start: unknown command stray", True),
        (("args", 4), REFUSES + "bad flag syntax: ----cpu-manager-policy=static", True),
        (("args", 5), "--version: the kubelet prints its version and exits instead of running", True),
        (("args", 6), REFUSES + "flag needs an argument: --topology-manager-policy", True)]


def test_reserved_memory_with_a_comma_between_numa_nodes_is_refused_at_the_argument():
    assert problems("--reserved-memory=0:memory=1Gi,1:memory=1Gi") == [
        (("args", 0), REFUSES + 'invalid argument "0:memory=1Gi,1:memory=1Gi" for "--reserved-memory" '
                                'flag: the reserved memory has incorrect format, expected '
                                'numaNodeID:type=quantity[,type=quantity...], got 0:memory=1Gi,1:memory=1Gi', True)]


def test_deprecated_flag_is_a_warning_not_a_refusal():
    parsed = parse("--maximum-dead-containers=10")
    assert [(p.message, p.fatal) for p in parsed.problems] == [
        ("Flag --maximum-dead-containers has been deprecated, Use --eviction-hard or --eviction-soft "
         "instead. Will be removed in a future version.", False)]
    assert not parsed.fatal


# ---------------------------------------------------------------------------- precedence

def test_a_flag_beats_the_file():
    base = {"cpuManagerPolicy": "none", "topologyManagerScope": "container", "memoryManagerPolicy": "Static"}
    assert parse("--cpu-manager-policy=static", "--topology-manager-scope=pod").apply(base) == {
        "cpuManagerPolicy": "static", "topologyManagerScope": "pod", "memoryManagerPolicy": "Static"}


def test_a_map_flag_replaces_the_files_whole_map():
    base = {"kubeReserved": {"cpu": "500m", "memory": "1Gi"}, "systemReserved": {"cpu": "1"}}
    assert parse("--kube-reserved=cpu=1").apply(base) == {"kubeReserved": {"cpu": "1"}, "systemReserved": {"cpu": "1"}}


def test_feature_gates_from_flags_merge_gate_by_gate_with_the_files():
    base = {"featureGates": {"PodLevelResourceManagers": False, "CPUManagerPolicyAlphaOptions": True}}
    assert parse("--feature-gates=PodLevelResourceManagers=true").apply(base) == {
        "featureGates": {"PodLevelResourceManagers": True, "CPUManagerPolicyAlphaOptions": True}}


def test_eviction_hard_flag_ends_the_default_merge_of_the_file():
    base = {"evictionHard": {"memory.available": "100Mi"}, "mergeDefaultEvictionSettings": True}
    assert parse("--eviction-hard=nodefs.available<10%").apply(base) == {"evictionHard": {"nodefs.available": "10%"}}


def test_apply_leaves_its_inputs_alone():
    base = {"featureGates": {"A": True}}
    parsed = parse("--feature-gates=B=true")
    parsed.apply(base)
    assert (base, parsed.settings) == ({"featureGates": {"A": True}}, {"featureGates": {"B": True}})
