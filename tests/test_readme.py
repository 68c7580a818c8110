"""README stays true: its rule reference is generated from the rules' metadata, and .ci/run
runs exactly the test command README gives."""
from __future__ import annotations

import re

from numaguard.lint.rules.docs import render_rules

from conftest import REPO

README = (REPO / "README.md").read_text(encoding="utf-8")
START, END = "<!-- rules:start -->", "<!-- rules:end -->"


def test_rule_reference_is_generated_from_the_rules():
    assert START in README and END in README
    current = README.split(START, 1)[1].split(END, 1)[0].strip()
    expected = render_rules("markdown").strip()
    assert current == expected, ("README's rule reference is stale: run "
                                 "`python -m numaguard.lint.rules.docs --update-readme`")


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
