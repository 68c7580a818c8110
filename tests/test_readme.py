"""README stays true: its rule reference is generated from the rules' metadata, and .ci/run
runs exactly the test command README gives."""
from __future__ import annotations

import re

from numaguard.lint.rules.docs import render_carriers, render_rules

from conftest import REPO

README = (REPO / "README.md").read_text(encoding="utf-8")
START, END = "<!-- rules:start -->", "<!-- rules:end -->"


def test_rule_reference_is_generated_from_the_rules():
    assert START in README and END in README
    current = README.split(START, 1)[1].split(END, 1)[0].strip()
    expected = render_rules("markdown").strip()
    assert current == expected, ("README's rule reference is stale: run "
                                 "`python -m numaguard.lint.rules.docs --update-readme`")


def test_carrier_table_is_generated_from_the_carrier_table():
    start, end = "<!-- carriers:start -->", "<!-- carriers:end -->"
    assert README.count(start) == README.count(end) == 1
    current = README.split(start, 1)[1].split(end, 1)[0].strip()
    assert current == render_carriers().strip(), ("README's carrier table is stale: run "
                                                  "`python -m numaguard.lint.rules.docs --update-readme`")


def test_readme_config_example_reads_with_its_pod_templates():
    import yaml

    from numaguard.lint.config import config_from_dict

    section = README.split("### Configuration file", 1)[1].split("\n### ", 1)[0]
    example = re.search(r"```yaml\n(.+?)\n```", section, re.S).group(1)
    trainer, = config_from_dict(yaml.safe_load(example)).pod_templates
    assert (trainer.group, trainer.kind, trainer.versions, [p.text for p in trainer.paths]) == (
        "ml.example.com", "TrainingJob", ("v1",),
        ["spec.workers[*].template", "spec.roles?.*.template", "spec.launcher.template"])


def _setup_commands() -> list[str]:
    section = README.split("## Set up", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"```(?:sh|bash|console)\n(.+?)\n```", section, re.S)


def test_readme_gives_exactly_two_setup_commands_and_ci_runs_the_test_one():
    commands = _setup_commands()
    assert len(commands) == 2, commands
    run_examples, run_tests = commands
    assert "numaguard lint" in run_examples and "deploy/examples" in run_examples
    assert "pytest" in run_tests
    ci = (REPO / ".ci" / "run").read_text()
    assert run_tests.strip() in ci
