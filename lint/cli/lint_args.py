"""`numaguard lint`'s options, declared once as data, and a quick reading of its command line.

`numaguard lint FILE...`, as pre-commit and `kubectl numaguard lint` run it, must start fast,
and click with what it imports (inspect, datetime, uuid...) is a good part of numaguard's
start. So the console script (`numaguard.lint.cli.start`) reads a lint command line itself
when every argument in it is plainly valid (`quick_lint_params`), and hands anything else
(help, an unknown or misspelt option, a value click would refuse, `--`, `--opt=value`) to the
click command, which is built from these same declarations (`numaguard.lint.cli.main`) and
says what is wrong in its own words. tests/test_cli_quick.py holds both readings to the same
parameters.

Kept free of click, and of the engine: this is all a lint imports before it lints.
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any, Literal

FAIL_ON = ("error", "warning", "info", "never")
# numaguard.lint.report.FORMATS, spelled here so `--help` and a small lint import no engine.
REPORT_FORMATS = ("text", "json", "sarif", "junit", "github", "policyreport", "html")


@dataclass(frozen=True)
class Option:
    """One option: its flags, the parameter it fills, and what it takes. kind "text": any
    value; "choice": one of `choices`; "file": a path that is not a directory (click.Path
    with dir_okay=False); "count": an integer of at least 1; "flag": no value."""

    flags: tuple[str, ...]
    dest: str
    help: str
    kind: Literal["text", "choice", "file", "count", "flag"] = "text"
    choices: tuple[str, ...] = ()
    multiple: bool = False
    metavar: str | None = None

    @property
    def default(self) -> Any:
        return () if self.multiple else False if self.kind == "flag" else None


# The report and rule-selection options `lint` and `audit` share.
REPORT_OPTIONS = (
    Option(("--format",), "formats", "Report format; repeat with --output for several reports in one run.",
           kind="choice", choices=REPORT_FORMATS, multiple=True),
    Option(("--output",), "outputs", "Write the report to FILE instead of standard output (pairs with --format; "
           "without one, the format comes from the extension: .txt .json .sarif .xml .yaml .html).",
           kind="file", multiple=True),
    Option(("--fail-on",), "fail_on", "Lowest severity that makes the exit code 1 (default: error).",
           kind="choice", choices=FAIL_ON),
    Option(("--select",), "select", "Only these rule ids or prefixes (NG1,NG203).", multiple=True),
    Option(("--ignore",), "ignore", "Skip these rule ids or prefixes.", multiple=True),
    Option(("--show-suppressed",), "show_suppressed", "List suppressed findings too.", kind="flag"),
)

LINT_OPTIONS = (
    Option(("--pool",), "pool_dirs", "A directory of one node pool's KubeletConfigurations (and checkpoints, "
           "Node and NodeResourceTopology objects), linted with everything else and judged as that pool "
           "(NG4xx). NAME=DIR names the pool (a pool of the config file, or a new one); a bare DIR is the "
           "config's only pool, or the pool \"default\" when none is configured.",
           multiple=True, metavar="[NAME=]DIR"),
    Option(("--config",), "config_path", "Config file (default: .numaguard.yaml here or in a parent directory).",
           kind="file"),
    Option(("--node",), "node_path", "Node description for NUMA fit: a NodeProfile, lscpu --parse output, a "
           "NodeResourceTopology, or builtin:NAME."),
    Option(("--kubernetes-version",), "kubernetes_version", "Target Kubernetes version, e.g. 1.37."),
    *REPORT_OPTIONS,
    Option(("--jobs", "-j"), "jobs", "Worker processes (default: the CPUs available; 1 = in this process). "
           "Small runs and stdin are always linted in this process.", kind="count"),
    Option(("--baseline",), "baseline_path", "Report and fail only on findings not recorded in this baseline "
           "file; list its entries that no longer match.", kind="file"),
    Option(("--write-baseline",), "write_baseline_path", "Record today's findings in this baseline file "
           "(exit 0 once written).", kind="file"),
)


def _plain(option: Option, value: str) -> bool:
    """Whether click takes `value` for `option` as it is (else click should say why not)."""
    if option.kind == "choice":
        return value in option.choices
    if option.kind == "count":
        return value.isascii() and value.isdigit() and int(value) >= 1
    if option.kind == "file":       # click.Path(dir_okay=False): refuses a directory, an unreadable file
        return not os.path.exists(value) or (os.path.isfile(value) and os.access(value, os.R_OK))
    return True


def quick_lint_params(args: list[str], options: tuple[Option, ...] = LINT_OPTIONS) -> dict[str, Any] | None:
    """The parameters of `numaguard lint ARGS` as click gives them to the command (paths as a
    tuple, repeated options as tuples, the last of a single option), or None when the
    command line is not plainly valid and click must read it."""
    by_flag = {flag: option for option in options for flag in option.flags}
    values: dict[str, Any] = {option.dest: [] if option.multiple else option.default for option in options}
    paths: list[str] = []
    rest = list(args)
    while rest:
        arg = rest.pop(0)
        if arg == "-" or not arg.startswith("-"):
            paths.append(arg)           # "-" is standard input, a path for click too
            continue
        option = by_flag.get(arg)
        if option is None:              # help, --version, --, --opt=value, -j2, a misspelling
            return None
        if option.kind == "flag":
            values[option.dest] = True
            continue
        # click takes the next argument as the value whatever it looks like; a value that looks
        # like an option is left to click, and so is a missing one.
        if not rest or rest[0].startswith("-") or not _plain(option, rest[0]):
            return None
        value = rest.pop(0)
        if option.multiple:
            values[option.dest].append(value)
        else:
            values[option.dest] = value
    for option in options:
        if option.multiple:
            values[option.dest] = tuple(values[option.dest])
        elif option.kind == "count" and values[option.dest] is not None:
            values[option.dest] = int(values[option.dest])
    return {"paths": tuple(paths), **values}
