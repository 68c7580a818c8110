"""The compare page in headless Chromium (as tests/test_html_report.py opens the pool report):
no script, no network load, no error under the page's Content-Security-Policy; a distribution
and a time series per metric; the verdict and what made the read partial; input escaped; a
gap is a break in the line; a long window is drawn from buckets. A screenshot shows both
groups' colours."""
from __future__ import annotations

import json
import re

import numpy as np

from numaguard.lint.compare.comparison import GroupRead, compare
from numaguard.lint.compare.metrics import MetricSet, parse_metric
from numaguard.lint.compare.selector import parse_selector
from numaguard.lint.compare.series import Series, Window
from numaguard.lint.report.compare_html import render
from numaguard.lint.report.compare_svg import COLORS, MAX_POINTS
from test_html_report import _run_chromium, count_colour, screenshot

RECORDER = """<script>
window.__errors = [];
window.addEventListener('error', e => __errors.push('error: ' + e.message));
document.addEventListener('securitypolicyviolation',
  e => __errors.push('csp: ' + e.violatedDirective + ' ' + e.blockedURI));
window.addEventListener('load', () => setTimeout(() => {
  const root = document.documentElement;
  root.setAttribute('data-svgs', String(document.querySelectorAll('svg').length));
  root.setAttribute('data-sections', String(document.querySelectorAll('section.metric').length));
  root.setAttribute('data-verdict', document.getElementById('verdict').textContent);
  root.setAttribute('data-problems', String(document.querySelectorAll('#problems li').length));
  root.setAttribute('data-scripts', String(document.scripts.length - 1));
  root.setAttribute('data-errors', JSON.stringify(__errors));
}, 100));
</script>"""


def open_compare_page(html: str, folder) -> dict:
    page = folder / "compare.html"
    page.write_text(html.replace("<head>", "<head>" + RECORDER, 1), encoding="utf-8")
    run = _run_chromium(page, folder / "profile", "--dump-dom")
    root = re.search(r"<html[^>]*>", run.stdout)
    assert root and "data-errors" in root.group(0), run.stderr[-2000:]
    attrs = dict(re.findall(r'(data-[a-z-]+)="([^"]*)"', root.group(0)))
    attrs["data-errors"] = json.loads(attrs["data-errors"].replace("&quot;", '"'))
    return attrs


WINDOW = Window(1_800_000_000, 1_800_000_000 + 600, 10)


def _series(pod: str, level: float, rng, missing=range(0)) -> Series:
    points = tuple((WINDOW.time(k), float(rng.normal(level, level / 10))) for k in range(WINDOW.steps) if k not in missing)
    return Series((("container", "app"), ("namespace", "shop"), ("pod", pod)), points)


def _comparison(query_suffix: str = "", canary_text: str = 'pod=~"web-canary-.*"', missing=range(0)):
    rng = np.random.default_rng(8)
    metrics = MetricSet.build([parse_metric("p99:q{ {{selector}} }" + query_suffix + ":lower")]).metrics
    reads = {}
    for m in metrics:
        level = 0.5 if m.name in ("runqueue-delay", "p99") else 0.05
        reads[m.name] = {"canary": GroupRead(m.render(canary_text, "2m"), (_series("web-canary-0", level, rng, missing),)),
                         "control": GroupRead(m.render('pod=~"web-stable-.*"', "2m"), (_series("web-stable-0", 0.05, rng),))}
    return compare(metrics, reads, canary=parse_selector(canary_text), control=parse_selector('pod=~"web-stable-.*"'),
                   window=WINDOW, source="recorded series")


def test_the_page_opens_without_errors_and_shows_every_metric(tmp_path):
    comparison = _comparison()
    shown = open_compare_page(render(comparison), tmp_path)
    assert shown["data-errors"] == [] and shown["data-scripts"] == "0"
    assert (shown["data-svgs"], shown["data-sections"], shown["data-verdict"], shown["data-problems"]) == (
        "18", "9", "INCONCLUSIVE", "0")     # 2 worse of 9: score 77.78


def test_a_partial_read_says_so_on_the_page(tmp_path):
    comparison = _comparison(missing=range(10, 40))
    html = render(comparison)
    shown = open_compare_page(html, tmp_path)
    assert (shown["data-verdict"], shown["data-problems"]) == ("INCONCLUSIVE", "9")
    assert "<strong>The read is partial</strong>, so this is not a pass" in html
    # the canary's line breaks at the gap: two runs of points, not one bridging it
    runqueue = html.split('id="m-runqueue-delay"', 1)[1].split("</section>", 1)[0]
    assert runqueue.count('<polyline class="median canary"') == 2
    assert runqueue.count('<polyline class="median control"') == 1


def test_input_is_escaped(tmp_path):
    evil = '"</code><script>alert(1)</script>'
    comparison = _comparison(query_suffix=" or vector(0) # " + evil, canary_text='pod=~"<b>web-canary-.*"')
    html = render(comparison)
    assert "<script>alert(1)</script>" not in html and "<b>web" not in html
    assert "&lt;/code&gt;&lt;script&gt;alert(1)&lt;/script&gt;" in html and "&lt;b&gt;web-canary" in html
    shown = open_compare_page(html, tmp_path)
    assert shown["data-errors"] == [] and shown["data-scripts"] == "0"


def test_a_long_window_is_drawn_from_buckets():
    rng = np.random.default_rng(1)
    window = Window(0, 86400, 30)            # a day at 30 s: 2,881 steps
    series = Series((("pod", "a"),), tuple((window.time(k), float(rng.random())) for k in range(window.steps)))
    metric = parse_metric("x:q{ {{selector}} }:lower")
    result = compare([metric], {"x": {"canary": GroupRead("q", (series,)), "control": GroupRead("q", (series,))}},
                     canary=parse_selector('pod="a"'), control=parse_selector('pod="b"'), window=window, source="s")
    html = render(result)
    points = re.search(r'<polyline class="median canary" points="([^"]*)"', html)[1].split()
    assert len(points) == -(-window.steps // -(-window.steps // MAX_POINTS)) <= MAX_POINTS


def test_the_screenshot_shows_both_groups(tmp_path):
    png = screenshot(render(_comparison()), tmp_path)
    for colour in COLORS.values():
        rgb = tuple(int(colour[i:i + 2], 16) for i in (1, 3, 5))
        assert count_colour(png, rgb, tolerance=10) > 300, colour


def test_the_page_is_well_formed_and_shows_the_runs_thresholds():
    """Every element opened is closed, in order (a table left open would swallow what follows);
    the verdict line gives the run's own thresholds."""
    from dataclasses import replace
    from html.parser import HTMLParser

    comparison = _comparison()
    page = render(replace(comparison, settings=replace(comparison.settings, pass_score=90.0, marginal_score=60.0)))
    assert "(pass at 90, fail below 60)" in page
    void = {"meta", "br", "line", "rect", "circle", "polyline", "polygon", "input"}
    stack: list[str] = []

    class Balance(HTMLParser):
        def handle_starttag(self, tag, attrs):
            if tag not in void:
                stack.append(tag)

        def handle_startendtag(self, tag, attrs):
            pass

        def handle_endtag(self, tag):
            if tag not in void:
                assert stack and stack.pop() == tag, (tag, stack[-3:])

    Balance().feed(page)
    assert stack == []
