"""What the commands share: exit code 2 for unusable input, the config file, rule selection,
writing reports and the exit code for findings. Free of click, as the quick lint is."""
from __future__ import annotations

import sys

from numaguard.lint.cli.lint_args import FAIL_ON, REPORT_FORMATS  # noqa: F401  (re-exported)


class UsageProblem(Exception):
    """Input a command cannot use: one line on standard error and exit 2. Kept free of click
    (a quick lint runs without it): click's commands report it as a click error
    (`numaguard.lint.cli.main.Command`), the quick lint as click would (`numaguard.lint.cli.start`)."""

    exit_code = 2

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message          # as click.ClickException has it


def _split_ids(values: tuple[str, ...]) -> tuple[str, ...]:
    return tuple(part.strip().upper() for v in values for part in v.split(",") if part.strip())


# The format an --output without its own --format is written in, by the file's extension.
FORMAT_OF_EXTENSION = {".txt": "text", ".text": "text", ".json": "json", ".sarif": "sarif",
                       ".xml": "junit", ".yaml": "policyreport", ".yml": "policyreport", ".html": "html",
                       ".htm": "html"}


def report_targets(formats: tuple[str, ...], outputs: tuple[str, ...]) -> list[tuple[str, str | None]]:
    """(format, file or None for standard output) per report. The i-th --format pairs with
    the i-th --output; an --output beyond the formats given takes its format from its
    extension (exit 2 when the extension says nothing); no --format and no --output: text."""
    import os

    reports: list[tuple[str, str | None]] = []
    for i in range(max(len(formats), len(outputs), 1)):
        target = outputs[i] if i < len(outputs) else None
        if i < len(formats):
            reports.append((formats[i], target))
        elif target is None:
            reports.append(("text", None))
        else:
            extension = os.path.splitext(target)[1].lower()
            if extension not in FORMAT_OF_EXTENSION:
                raise UsageProblem(f"{target}: cannot tell the report format from the extension "
                                   f"{extension or '(none)'}: give --format, or name the file "
                                   f"{', '.join(sorted(FORMAT_OF_EXTENSION))}")
            reports.append((FORMAT_OF_EXTENSION[extension], target))
    return reports


def write_reports(result, reports: list[tuple[str, str | None]], show_suppressed: bool) -> None:
    """Each report (see report_targets) to its file or to standard output, in order."""
    from numaguard.lint.report import writer_for

    for fmt, target in reports:
        color = target is None and fmt == "text" and sys.stdout.isatty()
        write_text(writer_for(fmt)(result, show_suppressed=show_suppressed, color=color), target)


def write_text(text: str, target: str | None) -> None:
    """A report to its file, or to standard output when `target` is None."""
    if target:
        try:
            with open(target, "w", encoding="utf-8") as fh:
                fh.write(text)
        except OSError as e:
            raise UsageProblem(f"{target}: cannot write the report: {e.strerror or e}") from None
    else:
        sys.stdout.write(text)
        sys.stdout.flush()


def exit_for(result, threshold: str) -> None:
    """Exit 1 when an active finding is at or above the --fail-on threshold."""
    if threshold != "never":
        order = FAIL_ON.index(threshold)
        if any(FAIL_ON.index(f.severity.value) <= order for f in result.active):
            sys.exit(1)


def load_config(config_path: str | None, kubernetes_version: str | None = None):
    """The config file (--config, else .numaguard.yaml found upwards), or the defaults."""
    from numaguard.lint.config import Config, ConfigError, find_config_file, load_config_file, parse_version

    try:
        found = config_path or find_config_file()
        config = (load_config_file(found) if found else None) or Config()
        if kubernetes_version:
            from dataclasses import replace
            config = replace(config, kubernetes_version=parse_version(kubernetes_version))
    except ConfigError as e:
        raise UsageProblem(str(e)) from None
    return config


def selection_for(config, select, ignore):
    from numaguard.lint.engine import Selection
    from numaguard.lint.rules.registry import rules_by_id

    select_ids, ignore_ids = _split_ids(select), _split_ids(ignore)
    named = (*select_ids, *ignore_ids, *config.severities)
    known = rules_by_id() if named else {}        # every rule module: only to check the ids named
    for rid in named:
        if not any(r.startswith(rid) for r in known):
            raise UsageProblem(f"unknown rule id or prefix: {rid}")
    return Selection(select=select_ids, ignore=ignore_ids, severities=config.severities)
