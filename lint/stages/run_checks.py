"""The run-level stages: every input is offered to the run checks (the pools' NG4xx, the
checkpoints, NG409 on a saved PodResources answer), which keep a small extract of what they
need; after the last document each check judges its extracts once. Workers hand back
extracts, never documents, so memory stays flat and `--jobs N` gives what one process gives.
Nothing here knows a rule of that kind by name."""
from __future__ import annotations

from typing import Any

from numaguard.lint.rules.base import LintContext, RunCheck, RunViolation, Subject
from numaguard.lint.rules.registry import run_check_rules
from numaguard.lint.stages.findings import FindingLog


class RunChecks:
    """The enabled run checks of a run and the extracts they kept, check name -> extracts in
    input order."""

    def __init__(self, ctx: LintContext, selection: Any, has_node: bool) -> None:
        self.ctx = ctx
        # One entry per distinct check: rules of one family share their collection and judgement.
        # The run checks see every input from the first on, so their rules are loaded now.
        self.checks: list[RunCheck] = list({r.run.name: r.run for r in run_check_rules(with_node=has_node)
                                            if selection.enabled(r)}.values())
        self.extracts: dict[str, list] = self._empty()

    def _empty(self) -> dict[str, list]:
        return {check.name: [] for check in self.checks}

    def offer(self, subject: Subject) -> bool:
        """Give one input to every run check; whether any kept an extract of it."""
        kept = False
        for check in self.checks:
            extract = check.collect(subject, self.ctx)
            if extract is not None:
                self.extracts[check.name].append(extract)
                kept = True
        return kept

    def take(self) -> dict[str, list]:
        """Hand over (and forget) the extracts so far."""
        taken, self.extracts = self.extracts, self._empty()
        return taken

    def absorb(self, extracts: dict[str, list]) -> None:
        """Add another run's extracts (a worker's), after the ones kept so far."""
        for name, kept in extracts.items():
            self.extracts[name].extend(kept)

    def judge(self, log: FindingLog) -> None:
        """Each check judges its extracts once, after the last document."""
        for check in self.checks:
            for rv in check.judge(self.extracts[check.name], self.ctx):
                _emit_run(log, rv)


def _emit_run(log: FindingLog, rv: RunViolation) -> None:
    rel = tuple(rv.violation.path)
    place = rv.place
    if place is None:       # a caller-made extract: no file, no positions
        log.emit(rv.rule, rv.violation, file=rv.source, position=None, ref=rv.ref,
                 ignores=rv.ignores, path=rel)
        return
    log.emit(rv.rule, rv.violation, file=place.file, position=place.position(rel), ref=rv.ref,
             ignores=rv.ignores, path=place.prefix + rel)
