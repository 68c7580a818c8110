"""The config file (numaguard.lint.config): defaults, README's example read exactly, YAML 1.1's
`off`, errors naming the bad key, and where the file is found."""
from __future__ import annotations

import pytest

from numaguard.lint.config import (CONFIG_FILE_NAME, Config, ConfigError, config_from_dict,
                                   find_config_file, load_config_file)
from numaguard.lint.model import PoolSettings, Severity

NEEDS_MEMBERS = ("a pool needs nodeLabels, a taint or kubeletConfigs: its pods and nodes are recognised "
                 "by the labels and the taint, its kubelet configurations by those and by the "
                 "kubeletConfigs globs")

README_EXAMPLE = """\
apiVersion: numaguard.io/v1alpha1
kind: Config
kubernetesVersion: "1.37"      # NG213 and the feature-gate defaults follow it
scope: managed                 # or: all
pool:
  nodeLabels: {node.example.com/pool: numa}
  taint: {key: node.example.com/pool, value: numa, effect: NoSchedule}
node: nodes/dual-socket.yaml   # node description for NUMA fit (NG212, NG3xx)
rules: {NG112: off, NG206: error}
exclude: ["charts/vendor/**"]
failOn: error
"""


def test_defaults():
    expected = Config(kubernetes_version=(1, 37), scope_all=False, pools=(), node=None,
                      severities={}, exclude=(), fail_on="error", webhook_mode="enforce", base_dir=".")
    assert Config() == expected
    assert config_from_dict(None) == expected
    assert config_from_dict({"apiVersion": "numaguard.io/v1alpha1", "kind": "Config"}) == expected


def test_readme_example_reads_exactly(tmp_path):
    path = tmp_path / CONFIG_FILE_NAME
    path.write_text(README_EXAMPLE)
    assert load_config_file(str(path)) == Config(
        kubernetes_version=(1, 37), scope_all=False,
        pools=(PoolSettings(node_labels={"node.example.com/pool": "numa"},
                            taint={"key": "node.example.com/pool", "value": "numa", "effect": "NoSchedule"},
                            name="default"),),
        node="nodes/dual-socket.yaml",
        severities={"NG112": None, "NG206": Severity.ERROR},      # unquoted `off` is YAML's false
        exclude=("charts/vendor/**",), fail_on="error", webhook_mode="enforce", base_dir=str(tmp_path))


def test_scope_fail_on_and_quoted_off():
    config = config_from_dict({"scope": "all", "failOn": "warning", "kubernetesVersion": "1.36",
                               "rules": {"NG101": "off", "NG102": "info", "NG103": "warning"},
                               "webhook": {"mode": "audit"}})
    assert (config.scope_all, config.fail_on, config.kubernetes_version, config.webhook_mode) == \
        (True, "warning", (1, 36), "audit")
    assert config.severities == {"NG101": None, "NG102": Severity.INFO, "NG103": Severity.WARNING}
    assert config_from_dict({"kubernetesVersion": 1.37}).kubernetes_version == (1, 37)   # unquoted


@pytest.mark.parametrize("data,message", [
    ({"rules": {"NG103": "loud"}}, 'rules.NG103: "loud" is not one of "off", "error", "warning", "info"'),
    ({"rules": {"NG103": True}}, 'rules.NG103: true is not one of "off", "error", "warning", "info"'),
    ({"rules": {"XX1": "off"}}, "rules: 'XX1' does not match '^NG[0-9]{3}$'"),
    ({"bogus": 1}, "(top level): Additional properties are not allowed ('bogus' was unexpected)"),
    ({"pool": {"taint": {}}}, "pool.taint: 'key' is a required property"),
    ({"pool": {}}, "pool: " + NEEDS_MEMBERS),
    ({"pool": {"nodeLabels": {}, "kubeletConfigs": []}}, "pool: " + NEEDS_MEMBERS),
    ({"pools": [{"name": "cpu", "taint": {"key": "t"}}, {"name": "gpu"}]}, "pools.1: " + NEEDS_MEMBERS),
    ({"pools": [{"taint": {"key": "t"}}]}, "pools.0: 'name' is a required property"),
    ({"pools": []}, "pools: [] should be non-empty"),
    ({"pools": [{"name": "GPU pool", "taint": {"key": "t"}}]},
     "pools.0.name: \"GPU pool\" is not a pool name (1 to 63 letters, digits, '-', '_' or '.', beginning "
     "and ending with a letter or digit)"),
    ({"pools": [{"name": "cpu", "taint": {"key": "a"}}, {"name": "gpu", "taint": {"key": "b"}},
                {"name": "cpu", "nodeLabels": {"x": "y"}}]},
     'pools.2.name: "cpu" is already the name of pools.0; pool names are unique'),
    ({"pool": {"taint": {"key": "t"}}, "pools": [{"name": "gpu", "taint": {"key": "g"}}]},
     "(top level): give either pool (one pool, the shorthand) or pools (a list of named pools), not both"),
    ({"pools": [{"name": "cpu", "taint": {"key": "t"}, "node": ""}]}, "pools.0.node: '' should be non-empty"),
    ([], "(top level): a list, expected an object"),
])
def test_errors_name_the_key(data, message):
    """Every bad value is exit 2 with the path of its key and what is wrong."""
    with pytest.raises(ConfigError) as info:
        config_from_dict(data)
    assert str(info.value) == message


def test_file_errors_name_the_file(tmp_path):
    path = tmp_path / CONFIG_FILE_NAME
    path.write_text("rules: {NG103: loud}\n")
    with pytest.raises(ConfigError) as info:
        load_config_file(str(path))
    assert str(info.value) == f'{path}: rules.NG103: "loud" is not one of "off", "error", "warning", "info"'
    with pytest.raises(ConfigError) as info:
        load_config_file(str(tmp_path / "missing.yaml"))
    assert str(info.value) == f"{tmp_path / 'missing.yaml'}: cannot read: No such file or directory"


def test_found_in_the_nearest_parent(tmp_path):
    (tmp_path / CONFIG_FILE_NAME).write_text("kind: Config\n")
    deep = tmp_path / "a" / "b"
    deep.mkdir(parents=True)
    assert find_config_file(str(deep)) == str(tmp_path / CONFIG_FILE_NAME)
    (tmp_path / "a" / CONFIG_FILE_NAME).write_text("kind: Config\n")
    assert find_config_file(str(deep)) == str(tmp_path / "a" / CONFIG_FILE_NAME)


TWO_POOLS = """\
pools:
- name: cpu
  nodeLabels: {node.example.com/pool: cpu}
  taint: {key: node.example.com/pool, value: cpu, effect: NoSchedule}
  kubeletConfigs: ["nodes/cpu/**"]
  node: nodes/cpu-node.yaml
- name: gpu
  nodeLabels: {node.example.com/pool: gpu}
  kubeletConfigs: ["nodes/gpu/**", "gpu-kubelet.yaml"]
node: builtin:dual-socket-ht
"""


def test_named_pools_and_the_default_node(tmp_path):
    path = tmp_path / CONFIG_FILE_NAME
    path.write_text(TWO_POOLS)
    config = load_config_file(str(path))
    assert config.pools == (
        PoolSettings(node_labels={"node.example.com/pool": "cpu"},
                     taint={"key": "node.example.com/pool", "value": "cpu", "effect": "NoSchedule"},
                     kubelet_configs=("nodes/cpu/**",), name="cpu", node="nodes/cpu-node.yaml"),
        PoolSettings(node_labels={"node.example.com/pool": "gpu"}, kubelet_configs=("nodes/gpu/**", "gpu-kubelet.yaml"),
                     name="gpu"))
    # A pool's own node, relative to the config file; the top-level node for the others.
    assert config.node_paths() == ("builtin:dual-socket-ht", {"cpu": str(tmp_path / "nodes/cpu-node.yaml"),
                                                              "gpu": "builtin:dual-socket-ht"})
    # --node replaces the top-level node only.
    assert config.node_paths("other.yaml") == ("other.yaml", {"cpu": str(tmp_path / "nodes/cpu-node.yaml"),
                                                              "gpu": "other.yaml"})
    assert config_from_dict({"pool": {"taint": {"key": "t"}}}).node_paths() == (None, {})
    # Which pools' kubeletConfigs name a file: globs, a name anywhere, relative to the config.
    assert config.pools_naming(str(tmp_path / "nodes/cpu/a.yaml")) == ("cpu",)
    assert config.pools_naming(str(tmp_path / "nodes/gpu/deep/b.yaml")) == ("gpu",)
    assert config.pools_naming(str(tmp_path / "other/gpu-kubelet.yaml")) == ("gpu",)
    assert config.pools_naming(str(tmp_path / "nodes/other/c.yaml")) == ()
    assert config.pools_naming(None) == ()


def test_pool_shorthand_is_the_pool_named_default():
    config = config_from_dict({"pool": {"nodeLabels": {"a": "b"}}})
    assert [p.name for p in config.pools] == ["default"]
    assert config_from_dict({"pool": {"name": "numa", "taint": {"key": "t"}}}).pools[0].name == "numa"


def test_plain_names_in_kubelet_configs_match_exactly_and_cheaply():
    """`audit` names each node's configuration `node/NAME`: thousands of plain names are a set
    lookup, not thousands of globs."""
    names = [f"node/n{i}" for i in range(3000)]
    config = config_from_dict({"pools": [{"name": "a", "kubeletConfigs": names[:1500]},
                                         {"name": "b", "kubeletConfigs": names[1500:]}]})
    assert config.pools_naming("node/n7") == ("a",)
    assert config.pools_naming("node/n2999") == ("b",)
    assert config.pools_naming("node/n30000") == ()


def test_config_schema_has_no_repeated_keys_and_every_ref_resolves():
    """json.load keeps the last of two equal keys, so two `$defs` blocks (as two branches once
    wrote) silently drop the first one's definitions and their `$ref`s fail only when used."""
    import json
    import re
    from importlib.resources import files

    text = files("numaguard.lint").joinpath("schemas/config.json").read_text()
    repeated: list[str] = []

    def no_repeats(pairs):
        keys = [k for k, _ in pairs]
        repeated.extend(sorted({k for k in keys if keys.count(k) > 1}))
        return dict(pairs)

    schema = json.loads(text, object_pairs_hook=no_repeats)
    assert repeated == []
    refs = set(re.findall(r'"\$ref":\s*"#/\$defs/([^"]+)"', text))
    assert refs == {"pool", "seconds"}
    assert refs <= set(schema["$defs"])
