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

from numaguard.lint.cli.common import UsageProblem, load_config, selection_for
from numaguard.lint.cli.lint_args import LINT_OPTIONS, REPORT_OPTIONS, Option
from numaguard.lint.cli.lint_command import load_nodes, run_lint, with_pool_dirs


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
                            "audit": "numaguard.lint.cli.audit:audit", "webhook": "numaguard.lint.cli.webhook:webhook",
                            "export": "numaguard.lint.cli.export:export", "plan": "numaguard.lint.cli.plan:plan",
                            "compare": "numaguard.lint.cli.compare:compare"})
@click.version_option(package_name="numaguard")
def main() -> None:
    """Keep workloads and kubelets ready for Kubernetes pod-level resource managers."""


@main.command(help="Lint manifests and KubeletConfigurations (files, directories, or - for stdin).")
@click.argument("paths", nargs=-1)
@declared(LINT_OPTIONS)
def lint(**params) -> None:
    run_lint(**params)


@main.command()
@click.argument("paths", nargs=-1)
@click.option("--diff", is_flag=True, help="Print the changes as a unified diff; write nothing.")
@click.option("--write", is_flag=True, help="Write the changes into the files.")
@click.option("--pool", "pool_dirs", multiple=True, metavar="[NAME=]DIR",
              help="A directory of one node pool's KubeletConfigurations, fixed as that pool's "
              "(as for `numaguard lint`).")
@click.option("--config", "config_path", type=click.Path(dir_okay=False),
              help="Config file (default: .numaguard.yaml here or in a parent directory).")
@click.option("--node", "node_path", help="Node description (as for `numaguard lint`).")
@click.option("--kubernetes-version", help="Target Kubernetes version, e.g. 1.37.")
@click.option("--select", multiple=True, help="Fix only these rule ids or prefixes (NG1,NG205).")
@click.option("--ignore", multiple=True, help="Do not fix these rule ids or prefixes.")
def fix(paths, diff, write, pool_dirs, config_path, node_path, kubernetes_version, select, ignore) -> None:
    """Fix the findings that have one safe fix, in manifests and KubeletConfigurations.

    Without --diff or --write, print what would change. Exit 0: nothing to change; 1: changes
    written or pending; 2: usage or a file that cannot be read or written."""
    if diff and write:
        raise UsageProblem("give --diff or --write, not both")
    config = load_config(config_path, kubernetes_version)
    config, pool_paths = with_pool_dirs(config, pool_dirs)
    paths = tuple(paths) + pool_paths
    if not paths:
        raise UsageProblem("give at least one PATH (or --pool DIR)")
    import os

    from numaguard.lint.cli.fix import run_fix
    from numaguard.lint.engine import Selection, rule_context
    from numaguard.lint.fixing import FIXES, FixSettings
    from numaguard.lint.load.files import STDIN_ARGUMENT, input_files

    chosen = selection_for(config, select, ignore)       # checks the ids; fixes are chosen by it
    from numaguard.lint.rules.registry import rules_by_id
    rules = frozenset(rule for rule in FIXES if chosen.enabled(rules_by_id()[rule]))
    node, pool_nodes, _ = load_nodes(node_path, config)
    settings = FixSettings(config=config, selection=Selection(severities=config.severities),
                           context=rule_context(config, node, pool_nodes, config.node_namings(node_path)),
                           rules=rules, node=node)
    try:
        files = list(input_files(list(paths), config.exclude, dependencies=config.lint_dependencies))
    except FileNotFoundError as e:
        raise UsageProblem(f"no such file or directory: {e.filename or e}") from None
    # a file named twice (itself and its folder, or a --pool folder) is fixed once
    files = list({os.path.realpath(f): f for f in reversed(files)}.values())[::-1]
    if STDIN_ARGUMENT in files:
        raise UsageProblem("numaguard fix rewrites files: give paths, not -")
    raise SystemExit(run_fix(files, settings, "diff" if diff else "write" if write else None))


@main.command()
@click.argument("rule", required=False, metavar="[RULE]")
@click.option("--format", "fmt", type=click.Choice(["text", "json", "markdown"]), default=None,
              help="text (the default for the list), markdown (the default for one RULE: its section "
                   "of lint/rules/README.md) or json.")
def rules(rule: str | None, fmt: str | None) -> None:
    """List every rule with its severity, rationale and fix; with RULE (an id such as NG205, or a
    name), print that rule's section of the rule reference."""
    import json

    from numaguard.lint.rules.docs import find_rule, render_rules, render_section, render_text

    if rule is None:
        click.echo(render_rules(fmt or "text"), nl=False)
        return
    found = find_rule(rule)
    if found is None:
        raise UsageProblem(f"unknown rule {rule!r}: give an id such as NG205 or a name such as "
                           "topology-scope-not-pod (`numaguard rules` lists them)")
    fmt = fmt or "markdown"
    click.echo(json.dumps(found.as_dict(), indent=2) if fmt == "json"
               else render_text(found) if fmt == "text" else render_section(found), nl=fmt == "json")


if __name__ == "__main__":  # pragma: no cover
    main()
