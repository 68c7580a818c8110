"""`numaguard plan --format html` in headless Chromium (the recorder of test_html_report): the
page renders without errors or fetches, shows the two schedulers side by side, draws the
nodes with CPUs coloured by workload, and lists the rejected replicas under the node whose
kubelet rejected them."""
from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from conftest import run_cli
from test_html_report import _run_chromium, count_colour, open_in_browser
from test_plan_cli import CONFIG, workload


@pytest.fixture(scope="module")
def page(tmp_path_factory) -> str:
    folder = tmp_path_factory.mktemp("plan-html")
    (folder / ".numaguard.yaml").write_text(CONFIG)
    (folder / "runaway.yaml").write_text(workload("cache", 4, "12") + "---\n"
                                         + workload("db", 8, "22", "16Gi", kind="ReplicaSet"))
    run = run_cli("plan", "--scheduler", "both", "--format", "html", "runaway.yaml", cwd=folder)
    assert run.returncode == 1, run.stderr
    return run.stdout


def test_the_page_renders_without_errors(page, tmp_path):
    attrs = open_in_browser(page, tmp_path)
    assert attrs["data-errors"] == [] and attrs["data-scripts"] == "1"      # the recorder's own
    assert attrs["data-maps"] == "2"                                          # one layout per scheduler
    assert attrs["data-nodes"] == "2"


def test_two_schedulers_side_by_side(page):
    assert re.findall(r'<section class="sched" id="s-([a-z-]+)">', page) == ["default", "topology-aware"]
    assert '<div class="cols" style="--n:2">' in page
    assert "<tr><td>kubelet rejections</td><td>36</td><td>0</td></tr>" in page


def test_rejected_replicas_are_listed_under_their_node(page):
    default = page.split('id="s-topology-aware"')[0]
    assert '<p class="rejected">Rejected by the kubelet here (36):</p>' in default
    assert "<li>numa-1: shop/db-4: TopologyAffinityError</li>" in default or re.search(
        r"<li>numa-\d: shop/db-\d( \(replacement \d+\))?: TopologyAffinityError</li>", default)
    aware = page.split('id="s-topology-aware"')[1]
    assert "Rejected by the kubelet" not in aware
    assert "<li><b>shop/db-4</b> unschedulable: 0/4 nodes are available: 4 cannot align pod.</li>" in aware


def test_cpus_are_coloured_by_workload(page, tmp_path):
    assert ".w0{fill:url(#ng-cpu-w0)}" in page and ".w1{fill:url(#ng-cpu-w1)}" in page
    assert 'class="w0"' in page and 'class="w1"' in page
    shot = tmp_path / "plan.html"
    shot.write_text(page, encoding="utf-8")
    png = tmp_path / "plan.png"
    run = _run_chromium(shot, tmp_path / "profile", "--window-size=1400,2600", f"--screenshot={png}")
    assert png.exists(), run.stderr[-2000:]
    shutil.copy(png, Path("/tmp") / "numaguard-plan.png")               # to look at by hand
    # two maps, each: 12 CPUs of cache (blue #2563eb) and 22 of db (red #dc2626), 12x12 px cells
    assert count_colour(png, (0x25, 0x63, 0xeb)) > 2 * 12 * 100
    assert count_colour(png, (0xdc, 0x26, 0x26)) > 2 * 22 * 100


def test_names_are_escaped():
    from numaguard.lint.report.plan_html import render
    report = {"seed": 0, "input": {"pools": [{"name": "<p>", "nodes": 1, "added": False}], "workloads": [],
                                   "problems": ["<script>x</script>"]},
              "summary": {"exitCode": 0}, "schedulers": []}
    html = render(report, {})
    assert "<script>x</script>" not in html and "&lt;script&gt;x&lt;/script&gt;" in html
    assert "&lt;p&gt;" in html
