"""README stays true: its rule reference is generated from the rules' metadata, and .ci/run
runs exactly the test command README gives."""
from __future__ import annotations

import re

from numaguard.lint.rules.docs import render_carriers, render_rules

from conftest import REPO, TOOLS

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


CI = (REPO / ".ci" / "run").read_text()


def _ci_commands() -> list[str]:
    """.ci/run's command lines, comments and blank lines left out."""
    return [line.strip() for line in CI.splitlines() if line.strip() and not line.lstrip().startswith("#")]


def test_readme_gives_exactly_two_setup_commands_the_second_is_what_ci_runs():
    commands = _setup_commands()
    assert len(commands) == 2, commands
    run_examples, run_tests = commands
    assert "numaguard lint" in run_examples and "deploy/examples" in run_examples
    assert run_tests == "bash .ci/run"


def test_ci_makes_a_fresh_venv_installs_the_test_extra_and_runs_the_whole_suite():
    lines = _ci_commands()
    assert "rm -rf .venv && python3 -m venv .venv && . .venv/bin/activate" in lines
    assert "pip install -q -e '.[test]'" in lines
    assert lines[-1] == "pytest"                      # the whole suite, nothing deselected
    # what README says .ci/run does, it does
    section = README.split("## Set up", 1)[1].split("\n## ", 1)[0]
    assert "`pip install -q -e '.[test]'`" in section and "runs `pytest`" in section


def test_ci_installs_every_tool_the_tests_run_and_readme_names_them():
    """conftest.TOOLS (what tool() finds for the tests) against .ci/run's install lines."""
    pairs = re.search(r"^for tool in (.+); do$", CI, re.M).group(1).split()
    debian = dict(pair.split(":") for pair in pairs)
    from_pypi = dict(re.findall(r"^command -v (\S+) >/dev/null \|\| pip install -q '([^=']+)==", CI, re.M))
    assert {**debian, **from_pypi} == TOOLS
    section = README.split("## Set up", 1)[1].split("\n## ", 1)[0]
    for package in TOOLS.values():
        assert f"`{package}`" in section, package


def test_every_test_finds_its_tools_through_conftest_tool():
    """A test that looks a program up itself (shutil.which) could skip it or fail unclearly."""
    offenders = [str(p.relative_to(REPO)) for p in (REPO / "tests").rglob("*.py")
                 if "bench" not in p.parts and p.name not in ("conftest.py", "test_readme.py")
                 and "shutil.which(" in p.read_text(encoding="utf-8")]
    assert offenders == []
