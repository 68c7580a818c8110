"""Large repositories: file-by-file linting, --jobs output byte-identical to --jobs 1, small
runs and stdin kept in process."""
from __future__ import annotations

import shutil
import sys
from pathlib import Path

from click.testing import CliRunner
from conftest import FIXTURES, MANAGED_BURSTABLE_POD, REPO, run_cli

from numaguard.lint.cli import lint_files
from numaguard.lint.cli.lint_files import LintSettings, lint_paths, plan_chunks
from numaguard.lint.cli.main import main
from numaguard.lint.config import Config
from numaguard.lint.engine import Selection, lint_documents
from numaguard.lint.load.documents import load_paths, load_text
from numaguard.lint.load.files import input_files
from numaguard.lint.report import FORMATS, writer_for

sys.path.insert(0, str(REPO / "tests" / "bench"))
from corpus import write_corpus  # noqa: E402


SETTINGS = LintSettings(config=Config(), selection=Selection())


def _mixed_tree(root: Path, generated: int) -> Path:
    """The repository's own fixtures (real files from public repositories, broken YAML, JSON,
    KubeletConfigurations, lists) and the shipped examples, plus generated manifests."""
    tree = root / "tree"
    shutil.copytree(FIXTURES, tree / "fixtures")
    shutil.copytree(REPO / "deploy" / "examples", tree / "examples")
    write_corpus(tree / "generated", generated)
    return tree


def _render_all(result) -> dict[str, str]:
    return {fmt: writer_for(fmt)(result, show_suppressed=True) for fmt in FORMATS}


def test_workers_give_byte_identical_reports(tmp_path):
    tree = _mixed_tree(tmp_path, 300)
    files = list(input_files([str(tree)]))
    assert len(files) > 300                                 # the fixtures and 300 generated
    chunks = plan_chunks(files, jobs=2, parallel_from_bytes=0)
    assert chunks is not None and len(chunks) > 2          # the run below really uses workers
    one, sources_one = lint_paths([str(tree)], SETTINGS, jobs=1)
    two, sources_two = lint_paths([str(tree)], SETTINGS, jobs=2, parallel_from_bytes=0)
    assert _render_all(two) == _render_all(one)
    assert sorted(sources_two) == sorted(sources_one)
    assert len(sources_one) == len(files)
    assert two.summary.files == one.summary.files == len(files) + 1    # and one kubelet drop-in


def test_file_by_file_matches_the_library_over_all_documents(tmp_path):
    tree = _mixed_tree(tmp_path, 50)
    documents, errors, files = [], [], 0
    for _source, docs, errs in load_paths([str(tree)]):
        files += 1
        documents.extend(docs)
        errors.extend(errs)
    # the library is given what the CLI reads besides: the EKS fixture's kubelet drop-in
    dropin = next(tree.rglob("*.conf"))
    more, more_errors = load_text(dropin.read_bytes(), str(dropin))
    documents.extend(more)
    errors.extend(more_errors)
    files += 1
    everything = lint_documents(documents, load_errors=errors)
    everything.summary.files = files
    by_file, _ = lint_paths([str(tree)], SETTINGS, jobs=1)
    assert _render_all(by_file) == _render_all(everything)
    assert by_file.summary.counts["error"] == everything.summary.counts["error"] > 0


def test_cli_jobs_output_is_byte_identical_on_a_real_mixed_tree(tmp_path):
    tree = _mixed_tree(tmp_path, 1700)      # above PARALLEL_FROM_BYTES: workers start
    sizes = sum(p.stat().st_size for p in tree.rglob("*") if p.is_file())
    assert sizes > lint_files.PARALLEL_FROM_BYTES
    outputs = {}
    for jobs in ("1", "2"):
        args = ["lint", "--jobs", jobs, "--show-suppressed"]
        for fmt in FORMATS:
            args += ["--format", fmt, "--output", str(tmp_path / f"{jobs}.{fmt}")]
        proc = run_cli(*args, "tree", cwd=tmp_path, timeout=600)
        assert (proc.returncode, proc.stdout) == (1, ""), proc.stderr
        outputs[jobs] = {fmt: (tmp_path / f"{jobs}.{fmt}").read_bytes() for fmt in FORMATS}
    assert outputs["2"] == outputs["1"]
    assert b"NG001" in outputs["1"]["text"] and b"NG103" in outputs["1"]["text"]


def _no_workers(*args, **kwargs):
    raise AssertionError("a worker pool was started")


def test_small_runs_and_stdin_start_no_worker(monkeypatch):
    monkeypatch.setattr("concurrent.futures.ProcessPoolExecutor", _no_workers)
    runner = CliRunner()
    few = [str(FIXTURES / "rules" / "NG103"), str(REPO / "deploy" / "examples")]
    result = runner.invoke(main, ["lint", "--jobs", "2", *few])
    assert result.exit_code == 1, result.output
    assert "NG103" in result.output
    result = runner.invoke(main, ["lint", "--jobs", "2", "-"], input=MANAGED_BURSTABLE_POD)
    assert result.exit_code == 1, result.output
    assert result.output.splitlines()[1].startswith("  <stdin>:6:5  NG103  error  ")

    # the same guard does catch a pool: a run above the threshold trips it
    monkeypatch.setattr(lint_files, "PARALLEL_FROM_BYTES", 0)
    result = runner.invoke(main, ["lint", "--jobs", "2", *few])
    assert isinstance(result.exception, AssertionError)
    assert str(result.exception) == "a worker pool was started"


def test_small_and_single_job_plans_stay_in_process(tmp_path):
    files = [str(p) for p in write_corpus(tmp_path, 20)]
    assert plan_chunks(files, jobs=2, parallel_from_bytes=lint_files.PARALLEL_FROM_BYTES) is None
    assert plan_chunks(files, jobs=1, parallel_from_bytes=0) is None
    assert plan_chunks(files[:1], jobs=2, parallel_from_bytes=0) is None
    chunks = plan_chunks(files, jobs=2, parallel_from_bytes=0)
    assert [f for chunk in chunks for f in chunk] == files       # every file once, in order


def test_jobs_must_be_positive():
    proc = run_cli("lint", "--jobs", "0", str(FIXTURES / "rules" / "NG103"))
    assert proc.returncode == 2
    assert "Invalid value for '--jobs' / '-j': 0 is not in the range x>=1." in proc.stderr
