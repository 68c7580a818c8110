"""The quick reading of a lint command line (numaguard.lint.cli.lint_args, what lets
`numaguard lint FILE` start without click) gives exactly what click gives the command, and
leaves to click every command line it does not read plainly, so that help, errors and the
rarer spellings stay click's."""
from __future__ import annotations

import subprocess

import click
import pytest

from conftest import MANAGED_BURSTABLE_POD, numaguard_exe
from numaguard.lint.cli.lint_args import LINT_OPTIONS, quick_lint_params
from numaguard.lint.cli.main import lint as lint_command


def clicks(args: list[str]) -> dict:
    return lint_command.make_context("lint", list(args)).params


@pytest.fixture()
def here(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "pod.yaml").write_text(MANAGED_BURSTABLE_POD)
    (tmp_path / "cfg.yaml").write_text("failOn: warning\n")
    (tmp_path / "folder").mkdir()
    return tmp_path


@pytest.mark.parametrize("args", [
    ["pod.yaml"],
    [],
    ["-"],
    ["pod.yaml", "k8s/", "--format", "json"],
    ["--format", "sarif", "--output", "out.sarif", "--format", "text", "pod.yaml"],
    ["pod.yaml", "--fail-on", "warning", "--fail-on", "info"],            # the last one counts
    ["--select", "NG1", "--select", "NG203", "--ignore", "NG110", "pod.yaml"],
    ["--show-suppressed", "pod.yaml", "--show-suppressed"],
    ["-j", "3", "pod.yaml"], ["--jobs", "1", "pod.yaml"],
    ["--config", "cfg.yaml", "--config", "missing.yaml", "pod.yaml"],
    ["--pool", "gpu=nodes/gpu", "--pool", "nodes/cpu", "--node", "builtin:dual-socket-ht", "pod.yaml"],
    ["--kubernetes-version", "1.36", "--baseline", "b.json", "--write-baseline", "w.json", "pod.yaml"],
])
def test_the_quick_reading_is_clicks(here, args):
    quick = quick_lint_params(args)
    assert quick is not None
    assert quick == clicks(args)


@pytest.mark.parametrize("args", [
    ["--format=json", "pod.yaml"], ["-j2", "pod.yaml"], ["--", "pod.yaml"],
    ["--select", "-NG1", "pod.yaml"],                  # a value that looks like an option
    ["-j", "+2", "pod.yaml"],                           # an integer to click, not plainly one
])
def test_other_spellings_go_to_click_which_reads_them(here, args):
    assert quick_lint_params(args) is None
    assert clicks(args)["paths"] == ("pod.yaml",)


@pytest.mark.parametrize("args", [
    ["--help"], ["-h"], ["pod.yaml", "--formt", "json"], ["--format", "jsn", "pod.yaml"],
    ["--fail-on", "Error", "pod.yaml"], ["-j", "0", "pod.yaml"], ["--jobs", "two", "pod.yaml"],
    ["--config", "folder", "pod.yaml"], ["--output", "folder"], ["pod.yaml", "--config"],
    ["--show-suppressed=yes", "pod.yaml"],
])
def test_what_click_refuses_is_left_to_click(here, args):
    assert quick_lint_params(args) is None
    with pytest.raises((click.ClickException, click.exceptions.Exit)):   # refused, or --help shown
        clicks(args)


def test_every_option_is_read_quickly():
    """Each declared option has a plainly valid spelling the quick reader takes."""
    sample = {"text": "x", "choice": None, "file": "f.out", "count": "2", "flag": None}
    for option in LINT_OPTIONS:
        value = option.choices[0] if option.kind == "choice" else sample[option.kind]
        args = [option.flags[0], *([value] if value is not None else []), "pod.yaml"]
        assert quick_lint_params(args) is not None, option.flags


def run(tmp_path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([numaguard_exe(), "lint", *args], cwd=tmp_path, capture_output=True, text=True,
                          timeout=120)


@pytest.mark.parametrize("quick, by_click", [
    (["pod.yaml", "--format", "json"], ["pod.yaml", "--format=json"]),
    (["missing.yaml"], ["--", "missing.yaml"]),
    (["pod.yaml", "--output", "report.txt", "--fail-on", "never"], ["pod.yaml", "--output=report.txt",
                                                                    "--fail-on=never"]),
    (["pod.yaml", "--output", "report.unknown"], ["pod.yaml", "--output=report.unknown"]),
])
def test_a_quick_run_ends_as_a_click_run(here, quick, by_click):
    """Same output, errors and exit code whichever reads the command line."""
    first, second = run(here, *quick), run(here, *by_click)
    assert (first.returncode, first.stdout, first.stderr) == (second.returncode, second.stdout, second.stderr)
    assert first.returncode in (1, 2, 0)


def test_a_usage_problem_is_one_line_and_exit_2(here):
    missing = run(here, "missing.yaml")
    assert (missing.returncode, missing.stdout, missing.stderr) == (
        2, "", "Error: no such file or directory: missing.yaml\n")


@pytest.mark.parametrize("options", [["--fail-on", "never"], ["--fail-on=never"]])
def test_a_reader_that_goes_away_ends_the_run_quietly(here, options):
    """`numaguard lint . | head`: exit 1, no traceback, read quickly or by click alike."""
    (here / "pods.yaml").write_text("\n---\n".join([MANAGED_BURSTABLE_POD] * 400))
    proc = subprocess.Popen([numaguard_exe(), "lint", "pods.yaml", *options], cwd=here, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    proc.stdout.close()                 # before the report is written: its first write fails
    stderr = proc.stderr.read()
    assert (proc.wait(timeout=120), stderr) == (1, "")
