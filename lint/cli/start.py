"""The `numaguard` console script (and `kubectl numaguard`, `python -m numaguard`).

A lint whose command line is plainly valid (`numaguard.lint.cli.lint_args.quick_lint_params`)
runs without click, which would be a good part of its start; everything else (other commands,
help, a command line click must judge) goes to the click command group
(`numaguard.lint.cli.main`).
"""
from __future__ import annotations

import os
import sys


def main(prog_name: str | None = None) -> None:
    """Run the command line in sys.argv; `prog_name` names the program in help and usage."""
    args = sys.argv[1:]
    if args[:1] == ["lint"]:
        from numaguard.lint.cli.lint_args import quick_lint_params

        params = quick_lint_params(args[1:])
        if params is not None:
            _quick_lint(params)         # exits
    from numaguard.lint.cli.main import main as command_group

    command_group(prog_name=prog_name)


def _quick_lint(params: dict) -> None:
    """Run the lint and end as click's standalone mode ends a command (click.core.Command.main):
    a UsageProblem is "Error: ..." on standard error with exit 2 (ClickException.show); ^C or
    the end of standard input is "Aborted!", exit 1; a reader that went away (`numaguard lint
    . | head`) is exit 1 without a word; success is exit 0."""
    from numaguard.lint.cli.common import UsageProblem
    from numaguard.lint.cli.lint_command import run_lint

    try:
        run_lint(**params)
    except UsageProblem as e:
        sys.stderr.write(f"Error: {e}\n")
        sys.exit(e.exit_code)
    except (EOFError, KeyboardInterrupt):
        sys.stderr.write("\nAborted!\n")
        sys.exit(1)
    except BrokenPipeError:
        # what is left in stdout's buffer would fail again at exit: point it at /dev/null
        # (the Python documentation's recipe for SIGPIPE; click wraps the stream instead)
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        sys.exit(1)
    sys.exit(0)
