"""The command line: a thin adapter around the engine (click).

Exit codes (design.md): 0 nothing at or above --fail-on; 1 findings at or above it; 2 the tool
could not do its job (bad flag, missing path, invalid config or node file). Heavy modules are
imported inside the commands that use them, and the commands of other modules when they are
run (`LazyGroup`). A lint whose command line is plainly valid does not come here at all: the
console script reads it without click (`numaguard.lint.cli.start`), from the same option
declarations (`numaguard.lint.cli.lint_args`) this module builds the click options from.
"""
from __future__ import annotations

from importlib import import_module

import click

from numaguard.lint.cli.common import UsageProblem
from numaguard.lint.cli.lint_args import LINT_OPTIONS, REPORT_OPTIONS, Option
from numaguard.lint.cli.lint_command import run_lint


class UsageFailure(click.ClickException):
    exit_code = 2


class Command(click.Command):
    """A command that reports a UsageProblem as click reports its own errors: "Error: ..." on
    standard error, exit 2 (UsageProblem itself knows nothing of click: the quick lint runs
    without it)."""

    def invoke(self, ctx: click.Context):
        try:
            return super().invoke(ctx)
        except UsageProblem as e:
            raise UsageFailure(str(e)) from None


_TYPES = {"text": None, "flag": None, "count": click.IntRange(min=1), "file": click.Path(dir_okay=False)}


def declared(options: tuple[Option, ...]):
    """Decorator: the click options of `options` (numaguard.lint.cli.lint_args), in order."""
    def apply(command):
        for o in reversed(options):
            kind = click.Choice(o.choices) if o.kind == "choice" else _TYPES[o.kind]
            command = click.option(*o.flags, o.dest, help=o.help, multiple=o.multiple, metavar=o.metavar,
                                   is_flag=o.kind == "flag", type=kind, default=o.default)(command)
        return command
    return apply


report_options = declared(REPORT_OPTIONS)     # the report and rule-selection options lint and audit share


class LazyGroup(click.Group):
    """A command group whose commands defined elsewhere are imported only when one of them is
    run, completed or listed in the help (click's documented "lazily loading subcommands"):
    `numaguard lint` imports neither the simulator's nor the audit's nor the webhook's CLI."""

    command_class = Command

    def __init__(self, *args, lazy_commands: dict[str, str], **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.lazy_commands = lazy_commands      # name -> "module:attribute"

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted([*super().list_commands(ctx), *self.lazy_commands])

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        if name not in self.lazy_commands:
            return super().get_command(ctx, name)
        module, _, attribute = self.lazy_commands[name].partition(":")
        return getattr(import_module(module), attribute)


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"]},
             lazy_commands={"simulate": "numaguard.lint.cli.numa:simulate", "node": "numaguard.lint.cli.numa:node",
                            "audit": "numaguard.lint.cli.audit:audit", "webhook": "numaguard.lint.cli.webhook:webhook"})
@click.version_option(package_name="numaguard")
def main() -> None:
    """Keep workloads and kubelets ready for Kubernetes pod-level resource managers."""


@main.command(help="Lint manifests and KubeletConfigurations (files, directories, or - for stdin).")
@click.argument("paths", nargs=-1)
@declared(LINT_OPTIONS)
def lint(**params) -> None:
    run_lint(**params)


@main.command()
@click.option("--format", "fmt", type=click.Choice(["text", "json", "markdown"]), default="text")
def rules(fmt: str) -> None:
    """List every rule with its severity, rationale and fix."""
    from numaguard.lint.rules.docs import render_rules

    click.echo(render_rules(fmt), nl=False)


if __name__ == "__main__":  # pragma: no cover
    main()
