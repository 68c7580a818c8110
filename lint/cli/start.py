"""The `numaguard` console script (and `kubectl numaguard`, `python -m numaguard`).

A lint whose command line is plainly valid (`numaguard.lint.cli.lint_args.quick_lint_params`)
runs without click, which would be a good part of its start; everything else (other commands,
help, a command line click must judge) goes to the click command group
(`numaguard.lint.cli.main`).
"""
from __future__ import annotations

import sys


def main(prog_name: str | None = None) -> None:
    args = sys.argv[1:]
    if args[:1] == ["lint"]:
        from numaguard.lint.cli.lint_args import quick_lint_params

        params = quick_lint_params(args[1:])
        if params is not None:
            _quick_lint(params)
            return
    from numaguard.lint.cli.main import main as command_group

    command_group(prog_name=prog_name)


def _quick_lint(params: dict) -> None:
    """Run the lint and end as click's standalone mode ends a command: a UsageProblem is
    "Error: ..." on standard error with exit 2 (click.ClickException.show), success exit 0."""
    from numaguard.lint.cli.common import UsageProblem
    from numaguard.lint.cli.lint_command import run_lint

    try:
        run_lint(**params)
    except UsageProblem as e:
        sys.stderr.write(f"Error: {e}\n")
        sys.exit(e.exit_code)
    sys.exit(0)
