"""The HTML report in a real browser: Debian's Chromium, headless.

The page is opened from a file with a small recorder script put in front of the page's own
Content-Security-Policy (a meta CSP only governs what follows it): it records uncaught errors,
console.error calls and CSP violations (any attempted network load) into a DOM attribute,
which `--dump-dom` prints. A screenshot (PNG, decoded here with zlib) must show the map: many
pixels in the colours of exclusive, free and reserved CPUs. Chromium is installed by .ci/run;
a missing browser fails the test."""
from __future__ import annotations

import json
import re
import shutil
import struct
import subprocess
import zlib
from pathlib import Path

import pytest

from conftest import FIXTURES, run_cli, tool

RECORDER = """<script>
window.__errors = [];
window.addEventListener('error', e => __errors.push('error: ' + e.message));
window.addEventListener('unhandledrejection', e => __errors.push('rejection: ' + e.reason));
document.addEventListener('securitypolicyviolation',
  e => __errors.push('csp: ' + e.violatedDirective + ' ' + e.blockedURI));
const realError = console.error.bind(console);
console.error = (...args) => { __errors.push('console: ' + args.join(' ')); realError(...args); };
window.addEventListener('load', () => setTimeout(() => {
  const maps = document.querySelectorAll('svg.numa-map');
  const box = maps.length ? maps[0].getBoundingClientRect() : null;
  document.documentElement.setAttribute('data-maps', String(maps.length));
  document.documentElement.setAttribute('data-map-box', box ? Math.round(box.width) + 'x' + Math.round(box.height) : 'none');
  document.documentElement.setAttribute('data-errors', JSON.stringify(__errors));
}, 100));
</script>"""


def chromium() -> str:
    return tool("chromium")


def _run_chromium(page: Path, profile: Path, *extra: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [chromium(), "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
         "--disable-component-update", "--disable-sync", "--no-first-run", "--hide-scrollbars",
         f"--user-data-dir={profile}", "--enable-logging=stderr", "--v=0",
         "--virtual-time-budget=3000", "--window-size=1400,1000", *extra, page.as_uri()],
        capture_output=True, text=True, timeout=180)


def open_in_browser(html: str, folder: Path) -> dict:
    page = folder / "page.html"
    page.write_text(html.replace("<head>", "<head>" + RECORDER, 1), encoding="utf-8")
    run = _run_chromium(page, folder / "profile", "--dump-dom")
    root = re.search(r"<html[^>]*>", run.stdout)
    assert root, f"no DOM dumped: {run.stderr[-2000:]}"
    attrs = dict(re.findall(r'(data-[a-z-]+)="([^"]*)"', root.group(0)))
    assert "data-errors" in attrs, f"the recorder did not run: {run.stderr[-2000:]}"
    attrs["data-errors"] = json.loads(attrs["data-errors"].replace("&quot;", '"'))
    return attrs


def screenshot(html: str, folder: Path) -> Path:
    page = folder / "shot.html"
    page.write_text(html, encoding="utf-8")
    png = folder / "map.png"
    run = _run_chromium(page, folder / "profile-shot", f"--screenshot={png}")
    assert png.exists(), run.stderr[-2000:]
    return png


def decode_png(path: Path) -> tuple[int, int, list[bytes], int]:
    """(width, height, rows of pixel bytes, bytes per pixel) of an 8-bit truecolour PNG."""
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    pos, idat, width = 8, b"", 0
    while pos < len(data):
        length, kind = struct.unpack(">I4s", data[pos:pos + 8])
        chunk = data[pos + 8:pos + 8 + length]
        if kind == b"IHDR":
            width, height, depth, color = struct.unpack(">IIBB", chunk[:10])
            assert depth == 8 and color in (2, 6)
            bpp = 3 if color == 2 else 4
        elif kind == b"IDAT":
            idat += chunk
        pos += 12 + length
    raw = zlib.decompress(idat)
    stride = width * bpp
    rows, prev = [], bytearray(stride)
    for y in range(height):
        filt, line = raw[y * (stride + 1)], bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for i in range(stride):
            a = line[i - bpp] if i >= bpp else 0
            b, c = prev[i], prev[i - bpp] if i >= bpp else 0
            if filt == 1:
                line[i] = (line[i] + a) & 255
            elif filt == 2:
                line[i] = (line[i] + b) & 255
            elif filt == 3:
                line[i] = (line[i] + (a + b) // 2) & 255
            elif filt == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        rows.append(bytes(line))
        prev = line
    return width, height, rows, bpp


def count_colour(path: Path, rgb: tuple[int, int, int], tolerance: int = 8) -> int:
    width, height, rows, bpp = decode_png(path)
    found = 0
    for row in rows:
        for i in range(0, len(row), bpp):
            if all(abs(row[i + k] - rgb[k]) <= tolerance for k in range(3)):
                found += 1
    return found


@pytest.fixture(scope="module")
def simulate_page() -> str:
    run = run_cli("simulate", "--node", "builtin:dual-socket-ht",
                  str(FIXTURES / "simulate" / "fragmentation.yaml"), "--format", "html")
    assert run.returncode == 1, run.stderr       # analytics is rejected
    return run.stdout


def test_simulate_page_renders_without_errors(simulate_page, tmp_path):
    attrs = open_in_browser(simulate_page, tmp_path)
    assert attrs["data-errors"] == []
    assert attrs["data-maps"] == "1"
    width, height = map(int, attrs["data-map-box"].split("x"))
    assert width > 400 and height > 60          # 2 NUMA boxes of 16 cores x 2 threads


def test_the_recorder_catches_errors_and_blocked_fetches(simulate_page, tmp_path):
    """A test that cannot fail is a bug: a page script error and a remote image are seen."""
    broken = simulate_page.replace("</body>", '<img src="https://example.com/x.png"><script>notDefined()</script></body>')
    errors = open_in_browser(broken, tmp_path)["data-errors"]
    assert any(e.startswith("csp: img-src https://example.com/x.png") for e in errors), errors
    assert any("notDefined" in e for e in errors) or any(e.startswith("csp: script-src") for e in errors), errors


def test_screenshot_shows_the_map(simulate_page, tmp_path):
    png = screenshot(simulate_page, tmp_path)
    shutil.copy(png, Path("/tmp") / "numaguard-simulate-map.png")    # to look at by hand
    # 30 exclusive CPUs (12x12 px each), 26 free, 2 reserved: the colours of numa_svg.COLORS
    assert count_colour(png, (0xdc, 0x26, 0x26)) > 30 * 100
    assert count_colour(png, (0xd1, 0xfa, 0xe5)) > 26 * 100
    assert count_colour(png, (0x6b, 0x72, 0x80)) > 2 * 100


def test_lint_html_report_renders_without_errors(tmp_path):
    out = tmp_path / "lint.html"
    run = run_cli("lint", "--config", "deploy/examples/.numaguard.yaml", "deploy/examples",
                  "--format", "html", "--output", str(out))
    assert run.returncode == 1
    attrs = open_in_browser(out.read_text(), tmp_path)
    assert attrs["data-errors"] == [] and attrs["data-maps"] == "0"
