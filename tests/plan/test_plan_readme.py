"""lint/README.md's "Sizing a pool" examples are what the commands print, byte for byte."""
from __future__ import annotations

import re
import shlex

import pytest

from conftest import FIXTURES, guide, run_cli

EXAMPLES = re.findall(r"```\n\$ (numaguard plan [^\n]+)\n(.*?)\n```", guide("lint/README.md"), re.S)


def test_the_chapter_has_its_three_examples():
    assert [cmd for cmd, _ in EXAMPLES] == [
        "numaguard plan --scheduler both runaway.yaml",
        "numaguard plan --nodes-needed --drain 1 runaway.yaml",
        "numaguard plan --from-audit pool-snapshot.json --scheduler both pricer.yaml"]


@pytest.mark.parametrize("command, shown", EXAMPLES, ids=[c for c, _ in EXAMPLES])
def test_an_example_prints_what_readme_shows(command, shown):
    run = run_cli(*shlex.split(command)[1:], cwd=FIXTURES / "plan")
    assert run.returncode == 1, run.stderr
    printed = run.stdout.rstrip("\n").splitlines()
    lines = shown.splitlines()
    if "--nodes-needed" in command:             # README shows the sweeps' lines only
        printed = [line for line in printed if line.startswith(("Nodes needed", "  numa: 6", "Drain", "  1. "))]
    assert printed == lines
