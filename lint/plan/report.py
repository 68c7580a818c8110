"""A whole plan: every scheduler asked for plays the scenario, and the sweeps asked for
(--nodes-needed, --drain, --surge) run on it; the result is the JSON report (version 1), which
the text and HTML reports render (numaguard.lint.report.plan_text, .plan_html).

Exit code (`exit_code`): 0 when every play is clean (every replica lands without a kubelet
rejection) and every sweep asked for succeeds (each pool has a node count that plays clean, the
drained pods land again cleanly, the rollout completes without a rejection); 1 otherwise.
"""
from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Any

from numaguard.lint.plan import drain as drains
from numaguard.lint.plan import sizing, surge
from numaguard.lint.plan.model import DEFAULT_MAX_ATTEMPTS, Workload
from numaguard.lint.plan.play import Scenario, play
from numaguard.lint.plan.scheduler import Profile
from numaguard.lint.plan.summary import run_summary

REPORT_VERSION = 1


@dataclass(frozen=True)
class Request:
    scenario: Scenario
    profiles: tuple[Profile, ...]
    seed: int = 0
    max_attempts: int = DEFAULT_MAX_ATTEMPTS
    sizing: tuple[tuple[str, int, str], ...] = ()      # --nodes-needed: (pool, lower bound, hopeless) per pool
    nodes_needed: bool = False
    drain: int = 0
    drain_random: bool = False
    surge: tuple[Workload, ...] = ()                    # rolled on the played pool (their old version:
                                                        # what the play placed, or the snapshot runs)
    jobs: int = 1
    inputs: dict = field(default_factory=dict)          # what was read, for the report


def run(request: Request, mapper: Any = None) -> tuple[dict, dict[str, Any]]:
    """(the JSON report, each scheduler's played Run by name: its pool for the HTML drawing)."""
    schedulers, runs = [], {}
    for profile in request.profiles:
        played = runs[profile.name] = play(request.scenario, profile, request.seed, max_attempts=request.max_attempts)
        entry = run_summary(played, list(request.scenario.workloads))
        if request.nodes_needed:
            found = sizing.nodes_needed(request.scenario, profile, request.seed, list(request.sizing),
                                        max_attempts=request.max_attempts, jobs=request.jobs, mapper=mapper)
            live = {p: sum(1 for n in request.scenario.live if n.pool == p) for p, _, _ in request.sizing}
            entry["nodesNeeded"] = [s.as_dict(live.get(s.pool, 0)) for s in found]
        if request.drain:
            sequences = [drains.worst(request.scenario, profile, request.seed, request.drain,
                                      max_attempts=request.max_attempts, jobs=request.jobs, mapper=mapper)]
            if request.drain_random:
                sequences.append(drains.randomly(request.scenario, profile, request.seed, request.drain,
                                                 max_attempts=request.max_attempts))
            entry["drain"] = [d.as_dict() for d in sequences]
        if request.surge:
            entry["surge"] = [_surge(request, profile, w) for w in request.surge]
        schedulers.append(entry)
    report = {"version": REPORT_VERSION, "kind": "PlanReport", "seed": request.seed,
              "maxAttempts": request.max_attempts, "input": request.inputs, "schedulers": schedulers}
    report["summary"] = {"clean": exit_code(report) == 0, "exitCode": exit_code(report),
                         "complete": request.inputs.get("complete", True)}
    return report, runs


def _surge(request: Request, profile: Profile, workload: Workload) -> dict:
    played = play(request.scenario, profile, request.seed, max_attempts=request.max_attempts)
    return surge.rollout(played.pool, profile, workload, random.Random(f"surge:{request.seed}:{workload.name}"),
                         max_attempts=request.max_attempts).as_dict()


def exit_code(report: dict) -> int:
    for entry in report["schedulers"]:
        if not entry["summary"]["clean"]:
            return 1
        if any(s["needed"] is None for s in entry.get("nodesNeeded", ())):
            return 1
        if any(step["clean"] is False for d in entry.get("drain", ()) for step in d["steps"]):
            return 1
        if any(not s["complete"] or s["rejections"] for s in entry.get("surge", ())):
            return 1
    return 0


__all__ = ["Request", "run", "exit_code", "REPORT_VERSION"]
