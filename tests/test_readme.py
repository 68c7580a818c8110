"""README stays true: .ci/run runs exactly the test command README gives and installs every
program the tests run, and the configuration file example of lint/README.md reads as it says
(the guides' links and generated sections: tests/test_guides.py)."""
from __future__ import annotations

import re

from conftest import REPO, TOOLS, guide

README = guide("README.md")


def test_readme_config_example_reads_with_its_pod_templates():
    import yaml

    from numaguard.lint.config import config_from_dict

    section = guide("lint/README.md").split("### Configuration file", 1)[1].split("\n### ", 1)[0]
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
