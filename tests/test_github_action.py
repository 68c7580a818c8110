"""deploy/github-action/action.yml run as the runner runs a composite action
(tests/github_runner.py): its shell steps for real, with bash as GitHub starts it, numaguard
installed with pip from a copy of this repository (the action's own checkout), on a good and
a bad repository; setup-python and upload-sarif played by stand-ins that record what they get."""
from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

from conftest import GOOD_POD, MANAGED_BURSTABLE_POD, REPO, tool
from github_runner import CompositeRunner, UnsupportedExpression, copy_tracked_files

FAILED_ON = ("::error title=numaguard::findings at or above error: see the Lint step's log and the code "
             "scanning alerts")


class Checkout:
    """One job's machine: the action's checkout, a workspace, RUNNER_TEMP, the stand-ins."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.action_repo = root / "_actions" / "numaguard"
        self.temp = root / "_temp"
        self.temp.mkdir(parents=True)
        self.uploads: list[dict[str, str]] = []
        self.base_env = {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": str(root), "LANG": "C.UTF-8",
                         **{k: v for k, v in os.environ.items() if k.startswith("PIP_")}}

    def setup_python(self, given: dict[str, str]) -> dict[str, str]:
        # actions/setup-python with update-environment: false: a Python, by its path only
        assert given == {"python-version": "3.12", "update-environment": "false"}
        return {"python-path": sys.executable, "python-version": "3.12"}

    def upload_sarif(self, given: dict[str, str]) -> dict[str, str]:
        sarif = json.loads((self.workspace_now / given["sarif_file"]).read_text())
        self.uploads.append({**given, "results": len(sarif["runs"][0]["results"])})
        return {"sarif-id": "recorded"}

    def runner(self, workspace: Path) -> CompositeRunner:
        self.workspace_now = workspace
        return CompositeRunner(self.action_repo / "deploy" / "github-action", workspace=workspace,
                               runner_temp=self.temp, base_env=self.base_env,
                               stand_ins={"actions/setup-python@v6": self.setup_python,
                                          "github/codeql-action/upload-sarif@v4": self.upload_sarif})


def repository(root: Path, files: dict[str, str]) -> Path:
    for name, content in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(content)
    return root


@pytest.fixture(scope="module")
def machine(tmp_path_factory):
    """The action's checkout and a first full run on a bad repository, with the real install:
    the later runs of this module reuse that installation (`done`) instead of repeating it."""
    checkout = Checkout(tmp_path_factory.mktemp("runner"))
    copy_tracked_files(REPO, checkout.action_repo, git=tool("git"))
    bad = repository(tmp_path_factory.mktemp("bad"), {"deploy/pod.yaml": MANAGED_BURSTABLE_POD,
                                                      "deploy/steady.yaml": GOOD_POD})
    first = checkout.runner(bad).run({"paths": "deploy"})
    return checkout, bad, first


def test_a_bad_repository_fails_after_the_sarif_is_uploaded(machine):
    checkout, bad, run = machine
    assert [(s.name, s.outcome) for s in run.steps] == [
        ("Set up Python for numaguard", "success"), ("Install numaguard", "success"), ("Lint", "success"),
        ("Upload SARIF to code scanning", "success"), ("Fail on findings at or above fail-on", "failure")]
    install = run.step("install")
    venv = checkout.temp / "numaguard-venv"
    assert install.outputs == {"numaguard": f"{venv}/bin/numaguard"}
    assert install.log.splitlines()[-1] == "numaguard, version 0.1.0"
    # installed from the action's own checkout, not from this test's environment
    direct_url = json.loads(next(venv.glob("lib/python*/site-packages/numaguard-0.1.0.dist-info/direct_url.json"))
                            .read_text())
    assert direct_url["url"] == (checkout.action_repo).as_uri()
    lint = run.step("lint")
    assert lint.outputs == {"exit-code": "1", "sarif-file": "numaguard.sarif"}
    assert lint.log.splitlines()[:2] == [
        "deploy/pod.yaml",
        "  deploy/pod.yaml:6:5  NG103  error  pod QoS is Burstable: pod-level requests.cpu defaulted to 1 from "
        "container 'app' requests.cpu (limits.cpu is 4); set spec.resources.requests.cpu: \"4\""]
    sarif = json.loads((bad / "numaguard.sarif").read_text())
    assert [(r["ruleId"], r["level"], r["locations"][0]["physicalLocation"]) for r in sarif["runs"][0]["results"]] == [
        ("NG103", "error", {"artifactLocation": {"uri": "deploy/pod.yaml"}, "region": {"startLine": 6, "startColumn": 5}}),
        ("NG110", "note", {"artifactLocation": {"uri": "deploy/steady.yaml"},
                           "region": {"startLine": 6, "startColumn": 5}})]
    assert checkout.uploads[0] == {"sarif_file": "numaguard.sarif", "category": "numaguard", "results": 2}
    last = run.steps[-1]
    assert (last.exit_code, last.log) == (1, FAILED_ON + "\n")
    assert run.outputs == {"sarif-file": "numaguard.sarif", "exit-code": "1"}
    assert run.outcome == "failure"


def installed(machine) -> dict:
    checkout, _bad, first = machine
    return {"python": first.step("python").outputs, "install": first.step("install").outputs}


def test_a_good_repository_passes_and_uploads_an_empty_report(machine, tmp_path):
    checkout = machine[0]
    good = repository(tmp_path, {"k8s/app/pod.yaml": GOOD_POD, "k8s/kubelet/.keep": ""})
    run = checkout.runner(good).run({"paths": "k8s/app\nk8s/kubelet", "sarif-file": "out/ng.sarif",
                                     "category": "pods"}, done=installed(machine))
    assert run.outcome == "success", [s.log for s in run.steps]
    assert [s.outcome for s in run.steps] == ["success"] * 5
    assert run.outputs == {"sarif-file": "out/ng.sarif", "exit-code": "0"}
    # info findings only: reported, below the default fail-on
    assert [line for line in run.step("lint").log.splitlines() if line.startswith("1 file(s)")] == [
        "1 file(s), 1 object(s) checked, 0 skipped, 0 opted out: 0 error(s), 0 warning(s), 1 info, 0 suppressed"]
    assert checkout.uploads[-1]["sarif_file"] == "out/ng.sarif" and checkout.uploads[-1]["category"] == "pods"
    assert all(r["level"] == "note" for r in json.loads((good / "out/ng.sarif").read_text())["runs"][0]["results"])
    assert run.steps[-1].log == ""


@pytest.mark.parametrize("inputs, exit_code, outcome", [
    ({"fail-on": "never"}, "0", "success"),
    ({"fail-on": "error", "args": "--ignore NG103"}, "0", "success"),
    ({"fail-on": "info", "args": "--ignore NG103"}, "1", "failure"),   # NG110 (info) is left
])
def test_fail_on_and_extra_args(machine, inputs, exit_code, outcome):
    checkout, bad, _first = machine
    run = checkout.runner(bad).run({"paths": "deploy", **inputs}, done=installed(machine))
    assert (run.outputs["exit-code"], run.outcome) == (exit_code, outcome)
    if outcome == "failure":
        assert run.steps[-1].log == FAILED_ON.replace("at or above error", "at or above info") + "\n"


def test_upload_off_writes_the_sarif_and_skips_the_upload(machine):
    checkout, bad, _first = machine
    before = len(checkout.uploads)
    run = checkout.runner(bad).run({"paths": "deploy", "upload-sarif": "false"}, done=installed(machine))
    assert [s.outcome for s in run.steps][2:] == ["success", "skipped", "failure"]
    assert len(checkout.uploads) == before and (bad / "numaguard.sarif").exists()


@pytest.mark.parametrize("inputs, message", [
    ({"paths": "deploy missing-dir"}, "Error: no such file or directory: missing-dir"),
    ({"paths": "deploy", "config": "nope.yaml"}, "Error: nope.yaml: cannot read: No such file or directory"),
    ({"paths": "deploy", "fail-on": "sometimes"}, "Error: Invalid value for '--fail-on'"),   # click's words
    # an input is data, never code: `$(...)` stays a word, a path that does not exist
    ({"paths": "deploy $(touch pwned)"}, "Error: no such file or directory: $(touch"),
])
def test_numaguard_that_cannot_lint_fails_the_lint_step_and_uploads_nothing(machine, inputs, message):
    checkout, bad, _first = machine
    before = len(checkout.uploads)
    run = checkout.runner(bad).run(inputs, done=installed(machine))
    assert [s.outcome for s in run.steps][2:] == ["failure", "skipped", "skipped"]
    lint = run.step("lint")
    assert lint.exit_code == 2 and lint.outputs["exit-code"] == "2"
    assert any(line.startswith(message) for line in lint.log.splitlines()), lint.log
    assert lint.log.splitlines()[-1] == "::error title=numaguard::numaguard could not lint (exit 2): see the message above"
    assert len(checkout.uploads) == before and not (bad / "pwned").exists()


@pytest.mark.parametrize("version, requirement", [
    ("0.2.0", "numaguard==0.2.0"), ("numaguard>=9", "numaguard>=9")])
def test_the_version_input_is_what_pip_installs(machine, tmp_path, version, requirement):
    """With no package index, pip says which requirement it could not find: the one the step
    chose for the `version` input."""
    checkout = machine[0]
    checkout.base_env.update(PIP_NO_INDEX="1", PIP_FIND_LINKS=str(tmp_path))
    try:
        run = checkout.runner(tmp_path).run({"version": version})
    finally:
        checkout.base_env.pop("PIP_NO_INDEX")
        checkout.base_env["PIP_FIND_LINKS"] = os.environ.get("PIP_FIND_LINKS", "")
    install = run.step("install")
    assert install.outcome == "failure"
    assert f"No matching distribution found for {requirement}" in install.log
    assert [s.outcome for s in run.steps][2:] == ["skipped"] * 3


def test_the_action_keeps_its_expressions_out_of_scripts_and_simple(machine):
    checkout = machine[0]
    runner = checkout.runner(checkout.root)
    contexts = {"inputs": {"upload-sarif": "TRUE"}, "steps": {}}
    # GitHub compares strings ignoring case; other functions are not used by the action
    assert runner.condition("inputs.upload-sarif == 'true'", contexts, failed=False) is True
    assert runner.condition("inputs.upload-sarif == 'true'", contexts, failed=True) is False
    with pytest.raises(UnsupportedExpression):
        runner.condition("always() && inputs.upload-sarif == 'true'", contexts, failed=False)
    with pytest.raises(UnsupportedExpression):
        runner.evaluate("format('{0}', inputs.paths)", contexts)
    steps = runner.action["runs"]["steps"]
    assert not any("${{" in step.get("run", "") for step in steps)
    assert [s.get("uses") for s in steps if "uses" in s] == ["actions/setup-python@v6",
                                                           "github/codeql-action/upload-sarif@v4"]


def test_readme_workflow_and_input_table_match_the_action():
    import re

    import yaml

    action = yaml.safe_load((REPO / "deploy" / "github-action" / "action.yml").read_text())
    section = (REPO / "lint" / "README.md").read_text().split("## GitHub Actions:", 1)[1].split("\n## ", 1)[0]
    workflow = yaml.safe_load(re.search(r"```yaml\n(.+?)\n```", section, re.S).group(1))
    assert workflow["permissions"]["security-events"] == "write"
    step = workflow["jobs"]["numaguard"]["steps"][-1]
    assert step["uses"] == "<your-org>/numaguard/deploy/github-action@<rev>"
    assert set(step["with"]) <= set(action["inputs"])
    rows = re.findall(r"^\| `([\w-]+)` \| (.+?) \|", section, re.M)
    assert [name for name, _ in rows] == list(action["inputs"])
    for name, default in rows:
        expected = action["inputs"][name]["default"]
        assert default == (f"`{expected}`" if expected else "(none)"), name
