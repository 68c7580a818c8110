"""Run a composite GitHub Action's steps as the runner does, for tests/test_github_action.py.

What the runner does, and so what this does (docs.github.com, "Metadata syntax for GitHub
Actions" and "Workflow syntax": `runs.steps`, `shell`, `if`; actions/runner's composite
handler):

* `${{ <expression> }}` in `env:`, `with:`, `outputs.*.value` is replaced by the expression's
  value before the step runs; the result is text (a missing property is null, written as "").
  `if:` is an expression with or without `${{ }}`, and without a status function it means
  `success() && (...)`: skipped once a step has failed.
* `inputs.<name>` is the value given, else the input's `default`.
* A `shell: bash` step is written to a file and run as `bash --noprofile --norc -e -o pipefail
  FILE`, in the workspace, with the step's `env:` over the job's environment; `$GITHUB_OUTPUT`
  names a fresh file per step, whose `name=value` and `name<<DELIMITER` lines are the step's
  outputs (`steps.<id>.outputs.<name>`).

Only the expressions an action keeps simple are understood: a context property (`inputs.x`,
`github.action_path`, `runner.temp`, `steps.id.outputs.x`) and `<property> == '<text>'` or
`!=` (GitHub compares strings ignoring case). Anything else is an UnsupportedExpression, so a
new expression in the action fails the test until it is understood here too. `uses:` steps
cannot run here: the test plays each with a stand-in (a function of the step's `with:`,
returning its outputs).
"""
from __future__ import annotations

import os
import re
import subprocess
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import yaml

EXPRESSION = re.compile(r"\$\{\{\s*(.*?)\s*\}\}")
PROPERTY = r"[A-Za-z_][\w-]*(?:\.[A-Za-z_][\w-]*)*"
COMPARISON = re.compile(rf"^({PROPERTY})\s*(==|!=)\s*'((?:[^']|'')*)'$")
BASH = ["bash", "--noprofile", "--norc", "-e", "-o", "pipefail"]


class UnsupportedExpression(ValueError):
    pass


@dataclass
class StepRun:
    id: str
    name: str
    outcome: str                    # success, failure or skipped
    exit_code: int | None = None
    log: str = ""
    env: dict[str, str] = field(default_factory=dict)
    outputs: dict[str, str] = field(default_factory=dict)


@dataclass
class ActionRun:
    steps: list[StepRun]
    outputs: dict[str, str]

    @property
    def outcome(self) -> str:
        return "failure" if any(s.outcome == "failure" for s in self.steps) else "success"

    def step(self, step_id: str) -> StepRun:
        return next(s for s in self.steps if s.id == step_id)


def read_output_file(text: str) -> dict[str, str]:
    """`name=value` lines and `name<<DELIMITER` ... `DELIMITER` blocks (GITHUB_OUTPUT)."""
    outputs: dict[str, str] = {}
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        line = lines[i]
        if "<<" in line and ("=" not in line or line.index("<<") < line.index("=")):
            name, delimiter = line.split("<<", 1)
            end = lines.index(delimiter, i + 1)
            outputs[name] = "\n".join(lines[i + 1:end])
            i = end + 1
            continue
        if line:
            name, value = line.split("=", 1)
            outputs[name] = value
        i += 1
    return outputs


class CompositeRunner:
    def __init__(self, action_path: Path, *, workspace: Path, runner_temp: Path,
                 stand_ins: dict[str, Callable[[dict[str, str]], dict[str, str]]],
                 base_env: dict[str, str]) -> None:
        self.action_path = Path(action_path)
        self.action = yaml.safe_load((self.action_path / "action.yml").read_text())
        self.workspace, self.runner_temp = Path(workspace), Path(runner_temp)
        self.stand_ins, self.base_env = stand_ins, base_env

    # -- expressions ------------------------------------------------------------------
    def _property(self, path: str, contexts: dict[str, Any]) -> Any:
        value: Any = contexts
        for part in path.split("."):
            value = value.get(part) if isinstance(value, dict) else None
        return value

    def evaluate(self, expression: str, contexts: dict[str, Any]) -> Any:
        expression = expression.strip()
        if re.fullmatch(PROPERTY, expression):
            if expression.split(".", 1)[0] not in contexts:
                raise UnsupportedExpression(f"unknown context in {expression!r}")
            return self._property(expression, contexts)
        match = COMPARISON.match(expression)
        if match:
            left = self._property(match[1], contexts)
            equal = text(left).casefold() == match[3].replace("''", "'").casefold()
            return equal if match[2] == "==" else not equal
        raise UnsupportedExpression(expression)

    def substitute(self, value: Any, contexts: dict[str, Any]) -> str:
        return EXPRESSION.sub(lambda m: text(self.evaluate(m[1], contexts)), text(value))

    def condition(self, raw: Any, contexts: dict[str, Any], failed: bool) -> bool:
        if raw is None:
            return not failed
        source = str(raw).strip()
        whole = EXPRESSION.fullmatch(source)
        expression = whole[1] if whole else source
        if re.search(r"\b(always|failure|cancelled|success)\(\)", expression):
            raise UnsupportedExpression(expression)
        return not failed and bool(self.evaluate(expression, contexts))

    # -- running ----------------------------------------------------------------------
    def run(self, inputs: dict[str, str], *, done: dict[str, dict[str, str]] | None = None) -> ActionRun:
        """Every step in order. `done`: steps (by id) taken as already run with these
        outputs, e.g. an install shared by several runs of one test module."""
        declared = self.action.get("inputs", {})
        unknown = set(inputs) - set(declared)
        if unknown:
            raise ValueError(f"inputs the action does not declare: {sorted(unknown)}")
        contexts: dict[str, Any] = {
            "inputs": {name: text(inputs.get(name, spec.get("default", ""))) for name, spec in declared.items()},
            "github": {"action_path": str(self.action_path), "workspace": str(self.workspace)},
            "runner": {"temp": str(self.runner_temp)},
            "steps": {},
        }
        runs: list[StepRun] = []
        failed = False
        for index, step in enumerate(self.action["runs"]["steps"]):
            step_id = step.get("id", f"__{index}")
            name = step.get("name", step_id)
            if done and step_id in done:
                run = StepRun(step_id, name, "success", outputs=done[step_id])
            elif not self.condition(step.get("if"), contexts, failed):
                run = StepRun(step_id, name, "skipped")
            elif "uses" in step:
                given = {k: self.substitute(v, contexts) for k, v in (step.get("with") or {}).items()}
                run = StepRun(step_id, name, "success", env=given, outputs=self.stand_ins[step["uses"]](given))
            else:
                run = self._run_script(step, step_id, name, contexts)
            failed = failed or run.outcome == "failure"
            contexts["steps"][step_id] = {"outputs": run.outputs, "outcome": run.outcome}
            runs.append(run)
        outputs = {name: self.substitute(spec["value"], contexts)
                   for name, spec in self.action.get("outputs", {}).items()}
        return ActionRun(runs, outputs)

    def _run_script(self, step: dict, step_id: str, name: str, contexts: dict[str, Any]) -> StepRun:
        if step.get("shell") != "bash":
            raise ValueError(f"step {name!r}: only shell: bash is run here")
        if EXPRESSION.search(step["run"]):
            raise UnsupportedExpression(f"step {name!r}: an expression inside run: (pass it through env:)")
        env = {k: self.substitute(v, contexts) for k, v in (step.get("env") or {}).items()}
        script = self.runner_temp / f"{uuid.uuid4()}.sh"
        output_file = self.runner_temp / f"github_output_{uuid.uuid4()}"
        script.write_text(step["run"])
        output_file.write_text("")
        full_env = {**self.base_env, "GITHUB_ACTION_PATH": str(self.action_path),
                    "GITHUB_WORKSPACE": str(self.workspace), "RUNNER_TEMP": str(self.runner_temp),
                    "GITHUB_OUTPUT": str(output_file), "GITHUB_ACTIONS": "true", "CI": "true", **env}
        proc = subprocess.run([*BASH, str(script)], cwd=self.workspace, env=full_env, stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, text=True, timeout=600)
        return StepRun(step_id, name, "success" if proc.returncode == 0 else "failure", proc.returncode,
                       proc.stdout, env, read_output_file(output_file.read_text()))


def text(value: Any) -> str:
    """An expression's value as the runner writes it into text."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def copy_tracked_files(repo: Path, target: Path, *, git: str = "git") -> None:
    """The repository as the runner downloads an action: its files at one revision (here the
    working tree's version of every file git tracks or would add)."""
    listed = subprocess.run([git, "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
                            cwd=repo, capture_output=True, check=True).stdout.split(b"\0")
    for raw in listed:
        if not raw:
            continue
        source = repo / os.fsdecode(raw)
        if source.is_file():
            destination = target / os.fsdecode(raw)
            destination.parent.mkdir(parents=True, exist_ok=True)
            destination.write_bytes(source.read_bytes())
