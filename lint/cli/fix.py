"""`numaguard fix`: read each file, lint it as `numaguard lint` does, ask the engine for the
fixes (`numaguard.lint.fixing`), rewrite the text (`numaguard.lint.load.roundtrip`), lint the
rewritten text again, and show, diff or write the result. Only reading, writing and printing
happen here.

Exit codes: 0 nothing to change; 1 changes were written (--write) or are pending (--diff, or
the summary); 2 the tool could not do its job (bad option, missing path, a file it could not
read or write).
"""
from __future__ import annotations

import difflib
import os
import tempfile
from dataclasses import dataclass, field
from typing import Any

import click

from numaguard.lint.fixing import (MISSING, FilePlan, FixSettings, LeftAlone, plan_file, rewrite_problem,
                                   unplanned_change)
from numaguard.lint.load.documents import LoadError, load_text
from numaguard.lint.model import dotted_path


@dataclass
class FileOutcome:
    path: str
    old: str = ""
    new: str | None = None                  # None: nothing changes
    plan: FilePlan = field(default_factory=FilePlan)
    left: list[LeftAlone] = field(default_factory=list)
    problem: str | None = None              # could not be read


def fix_file(path: str, settings: FixSettings) -> FileOutcome:
    """The outcome of fixing one file (nothing written)."""
    from numaguard.lint.cli.lint_files import InputProblem, _dropins
    from numaguard.lint.engine import lint_documents
    from numaguard.lint.load.roundtrip import REMOVE, RewriteError, rewrite

    outcome = FileOutcome(path)
    try:
        with open(path, "rb") as fh:
            raw = fh.read()
        outcome.old = raw.decode("utf-8")
    except OSError as e:
        outcome.problem = f"{path}: cannot read: {e.strerror or e}"
        return outcome
    except UnicodeDecodeError as e:
        outcome.left.append(LeftAlone("NG001", None, None, "", "", f"not UTF-8 ({e.reason} at byte "
                                      f"{e.start}): numaguard fix rewrites only files it can read"))
        return outcome
    documents, errors = load_text(raw, path)
    errors = errors + [LoadError(path, r.line, r.column, r.message(False))
                       for d in documents for r in d.repeated_keys]
    if errors:
        # What follows a YAML syntax error is not read at all, and a document that cannot be
        # built (a repeated key) has no one meaning: the file is left as it is.
        outcome.left += [LeftAlone("NG001", e.line, None, "", e.message, f"a part of the file cannot be "
                                   f"read ({e.message}): numaguard fix rewrites only files it reads whole")
                         for e in errors]
        return outcome
    try:
        dropins, dropin_errors, _ = _dropins(path, documents)
    except InputProblem as e:
        outcome.problem = str(e)
        return outcome

    def lint(docs, load_errors):
        result = lint_documents(docs + dropins, config=settings.config, selection=settings.selection,
                                node=settings.node, load_errors=load_errors, context=settings.context)
        return [f for f in result.findings if not f.suppressed]

    findings = lint(documents, errors + dropin_errors)
    for f in findings:
        if f.rule in settings.rules and f.file != path:
            outcome.left.append(LeftAlone(f.rule, f.line, f.object, f.path, f.message,
                                          f"it is set in the kubelet drop-in {f.file}, judged merged "
                                          f"with {path}: change it there"))
    mine = [f for f in findings if f.file == path]
    plan = plan_file(documents, mine, settings, dropins)
    outcome.plan = plan
    if not plan.fixes:
        return outcome
    try:
        new = rewrite(outcome.old, {i: [(e.path, REMOVE if e.remove else e.value) for e in edits]
                                    for i, edits in plan.edits.items()}, plan.before)
    except RewriteError as e:
        return _rolled_back(outcome, f"the file could not be rewritten with only these fields changed: {e}")
    new_documents, new_errors = load_text(new.encode("utf-8"), path)
    problem = unplanned_change(plan, documents, new_documents)
    if problem is not None:
        return _rolled_back(outcome, f"the file could not be rewritten with only these fields changed: {problem}")
    after = [f for f in lint(new_documents, new_errors) if f.file == path]
    problem = rewrite_problem(plan, (documents, mine), (new_documents, after), settings)
    if problem is not None:
        return _rolled_back(outcome, f"rolled back: {problem}")
    outcome.new = new
    return outcome


def _rolled_back(outcome: FileOutcome, reason: str) -> FileOutcome:
    for fix in outcome.plan.fixes:
        outcome.left.append(LeftAlone(fix.rule, fix.line, fix.object, "", "", reason))
    outcome.plan = FilePlan(left=outcome.plan.left)
    return outcome


def run_fix(files: list[str], settings: FixSettings, mode: str | None) -> int:
    """Fix every file; print the summary (mode None), the diff ("diff") or what was written
    ("write"); return the exit code."""
    outcomes = [fix_file(path, settings) for path in files]
    changed = [o for o in outcomes if o.new is not None]
    for o in outcomes:
        if mode == "diff" and o.new is not None:
            name = o.path.lstrip("/")
            click.echo("".join(difflib.unified_diff(o.old.splitlines(True), o.new.splitlines(True),
                                                    f"a/{name}", f"b/{name}")), nl=False)
        elif o.new is not None:
            for fix in o.plan.fixes:
                click.echo(f"{o.path}:{fix.line or '-'}: {fix.rule} {fix.object or ''}: "
                           + "; ".join(f"{dotted_path(c.path)}: {show(c.old)} -> {show(c.new)}"
                                       for c in fix.changes))
        for left in o.plan.left + o.left:
            click.echo(f"{o.path}:{left.line or '-'}: {left.rule} left alone: {left.reason}", err=True)
    problems = [o.problem for o in outcomes if o.problem]
    for problem in problems:
        click.echo(f"numaguard fix: {problem}", err=True)
    if mode == "write":
        for o in changed:
            try:
                write_in_place(o.path, o.new)
            except OSError as e:
                problems.append(o.path)
                click.echo(f"numaguard fix: {o.path}: cannot write: {e.strerror or e}", err=True)
    fixes = sum(len(o.plan.fixes) for o in changed)
    left = sum(len(o.plan.left) + len(o.left) for o in outcomes)
    done = {"write": "applied", "diff": "to apply (shown above)"}.get(mode, "to apply (--diff shows "
                                                                            "them, --write applies them)")
    click.echo(f"numaguard fix: {fixes} fix(es) in {len(changed)} file(s) {done}; "
               f"{left} finding(s) left alone", err=True)
    if problems:
        return 2
    return 1 if changed else 0


def show(value: Any) -> str:
    """A value as YAML writes it on one line; `(not set)` for a field that was not there."""
    import yaml

    if value is MISSING:
        return "(not set)"
    if isinstance(value, str):
        return value
    return yaml.safe_dump(value, default_flow_style=True, sort_keys=False, width=1 << 16).strip().removesuffix("\n...")


def write_in_place(path: str, text: str) -> None:
    """Replace the file's content at once (a temporary file beside it, renamed over it), keeping
    its permissions; a symlink keeps pointing at the file it names."""
    target = os.path.realpath(path)
    mode = os.stat(target).st_mode
    fd, temporary = tempfile.mkstemp(dir=os.path.dirname(target), prefix=".numaguard-fix-")
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(text.encode("utf-8"))
        os.chmod(temporary, mode & 0o7777)
        os.replace(temporary, target)
    except BaseException:
        if os.path.exists(temporary):
            os.unlink(temporary)
        raise
