"""The config file (numaguard.lint.config): defaults, README's example read exactly, YAML 1.1's
`off`, errors naming the bad key, and where the file is found."""
from __future__ import annotations

import pytest

from numaguard.lint.config import (CONFIG_FILE_NAME, Config, ConfigError, config_from_dict,
                                   find_config_file, load_config_file)
from numaguard.lint.model import PoolSettings, Severity

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
    expected = Config(kubernetes_version=(1, 37), scope_all=False, pool=PoolSettings(), node=None,
                      severities={}, exclude=(), fail_on="error", webhook_mode="enforce", base_dir=".")
    assert Config() == expected
    assert config_from_dict(None) == expected
    assert config_from_dict({"apiVersion": "numaguard.io/v1alpha1", "kind": "Config"}) == expected


def test_readme_example_reads_exactly(tmp_path):
    path = tmp_path / CONFIG_FILE_NAME
    path.write_text(README_EXAMPLE)
    assert load_config_file(str(path)) == Config(
        kubernetes_version=(1, 37), scope_all=False,
        pool=PoolSettings(node_labels={"node.example.com/pool": "numa"},
                          taint={"key": "node.example.com/pool", "value": "numa", "effect": "NoSchedule"}),
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


@pytest.mark.parametrize("data,message", [
    ({"rules": {"NG103": "loud"}}, "rules.NG103: 'loud' is not one of ['off', 'error', 'warning', 'info']"),
    ({"rules": {"NG103": True}}, "rules.NG103: True is not one of ['off', 'error', 'warning', 'info']"),
    ({"rules": {"XX1": "off"}}, "rules: 'XX1' does not match '^NG[0-9]{3}$'"),
    ({"kubernetesVersion": 1.37}, "kubernetesVersion: 1.37 is not of type 'string'"),
    ({"bogus": 1}, "(top level): Additional properties are not allowed ('bogus' was unexpected)"),
    ({"pool": {"taint": {}}}, "pool.taint: 'key' is a required property"),
    ([], "(top level): [] is not of type 'object'"),
])
def test_errors_name_the_key(data, message):
    with pytest.raises(ConfigError) as info:
        config_from_dict(data)
    assert str(info.value) == message


def test_file_errors_name_the_file(tmp_path):
    path = tmp_path / CONFIG_FILE_NAME
    path.write_text("rules: {NG103: loud}\n")
    with pytest.raises(ConfigError) as info:
        load_config_file(str(path))
    assert str(info.value) == f"{path}: rules.NG103: 'loud' is not one of ['off', 'error', 'warning', 'info']"
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
