"""The HTML report in headless Chromium: loads without console errors, lazy thumbnails, each
linking to its full-resolution image, which opens at its natural size when clicked."""

import functools
import json
import re
import shutil
import subprocess
import threading
from html import unescape
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer

import numpy as np
import pytest
from PIL import Image

from m3gym.eval.report import write_report
from m3gym.eval.runner import EvalConfig, run_eval

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")  # PATH only: CI hides it
pytestmark = pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed (apt-get "
                                "install chromium), or not on PATH")
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync"]

# Served beside report.html (same origin), loads the report in an iframe, then clicks every
# full-size link and records the natural size of the image the lightbox loaded.
PROBE = """<!DOCTYPE html><html><head><meta charset="utf-8"></head><body>
<iframe id="f" src="report.html" style="width:1280px;height:900px"></iframe>
<pre id="out">pending</pre>
<script>
window.addEventListener('load', function () { setTimeout(function () {
  var d = document.getElementById('f').contentDocument, out = document.getElementById('out');
  if (!d) { out.textContent = 'no access to the report'; return; }
  var thumbs = Array.prototype.slice.call(d.querySelectorAll('img.thumb'));
  var links = Array.prototype.slice.call(d.querySelectorAll('a.full'));
  var box = d.getElementById('lightbox'), big = d.getElementById('lightbox-img');
  var clicks = [], i = 0;
  function next() {
    if (i >= links.length) {
      out.textContent = JSON.stringify({thumbs: thumbs.length, clicks: clicks});
      return;
    }
    var a = links[i++], img = a.querySelector('img');
    big.onload = big.onerror = null; big.removeAttribute('src'); box.style.display = 'none';
    big.onload = function () {
      clicks.push({title: img.title, href: a.getAttribute('href'), w: big.naturalWidth,
                   h: big.naturalHeight, shown: box.style.display}); next(); };
    big.onerror = function () { clicks.push({title: img.title, error: big.src}); next(); };
    a.click();
  }
  next();
}, 500); });
</script></body></html>"""


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    root = tmp_path_factory.mktemp("runs")
    envs = ("M3Bench-L1", "M3Bench-L2", "M3Bench-L3")
    run_eval(EvalConfig(envs=envs, agent="oracle", episodes=1), root / "oracle")
    run_eval(EvalConfig(envs=envs, agent="random", episodes=1), root / "random")
    _, page = write_report([root / "oracle", root / "random"], out=root / "report")
    return page


class _Recorder(SimpleHTTPRequestHandler):
    """Serves the report folder and records every path requested (the browser's fetches)."""

    requested: list = []

    def log_message(self, format, *args):
        self.requested.append(self.path)


@pytest.fixture(scope="module")
def served(report):
    """Serve the report folder on localhost; yield (base URL, list of requested paths)."""
    requested: list = []
    handler = type("Handler", (_Recorder,), {"requested": requested})
    server = ThreadingHTTPServer(("127.0.0.1", 0),
                                 functools.partial(handler, directory=str(report.parent)))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}", requested
    server.shutdown()
    server.server_close()


def _chromium(tmp_path, *args):
    profile = tmp_path / "profile"
    return subprocess.run([CHROMIUM, *FLAGS, f"--user-data-dir={profile}", *args],
                          capture_output=True, text=True, timeout=180)


def _shape(title):
    """Return (width, height) from a thumbnail title ``Image 2 (410x410) ← rotate``."""
    w, h = re.search(r"\((\d+)x(\d+)\)", title).groups()
    return int(w), int(h)


def test_dom_has_episodes_and_lazy_thumbnails(report, tmp_path):
    dom = _chromium(tmp_path, "--dump-dom", report.as_uri()).stdout
    assert len(re.findall(r'<section class="episode"', dom)) == 6
    thumbs = re.findall(r'<img class="thumb" loading="lazy" src="report_files/thumbs/', dom)
    assert len(thumbs) >= 6 + 3  # every input image, plus the oracle's produced images
    assert len(thumbs) == dom.count('<img class="thumb"')  # every thumbnail is lazy
    assert "data:image/jpeg" not in dom  # thumbnails are files, not inlined
    assert len(re.findall(r"<img class=\"plot\"", dom)) == 3
    assert re.search(r'<td class="num">\d\.\d{3} <span class="ci">\[\d\.\d{3}, \d\.\d{3}\]'
                     r"</span></td>", dom)


def test_every_thumbnail_links_to_an_existing_full_image(report, tmp_path):
    dom = _chromium(tmp_path, "--dump-dom", report.as_uri()).stdout
    figures = re.findall(r'<a class="full" href="([^"]+)"[^>]*><img class="thumb" '
                         r'loading="lazy" src="([^"]+)"[^>]*title="([^"]+)"', dom)
    assert len(figures) == dom.count('<img class="thumb"')  # all replays matched
    for full, thumb, title in figures:
        assert (report.parent / thumb).is_file() and (report.parent / full).is_file()
        with Image.open(report.parent / full) as im:
            assert im.format == "PNG" and im.size == _shape(unescape(title))


def test_page_loads_without_console_errors(report, tmp_path):
    res = _chromium(tmp_path, "--enable-logging=stderr", "--v=0", "--dump-dom", report.as_uri())
    assert "</html>" in res.stdout
    # Chromium logs every console message (errors included) as INFO:CONSOLE; its own notes on
    # deferring lazy images ("[Intervention] Images loaded lazily ...") are not the page's
    console = [line for line in res.stderr.splitlines()
               if ":CONSOLE" in line and "[Intervention]" not in line]
    assert console == []


def test_full_images_load_only_when_clicked(report, served, tmp_path):
    base, requested = served
    requested.clear()
    res = _chromium(tmp_path, "--virtual-time-budget=10000", "--dump-dom",
                    f"{base}/report.html")
    assert '<section class="episode"' in res.stdout
    assert any(p.startswith("/report_files/thumbs/") for p in requested)
    assert not [p for p in requested if p.startswith("/report_files/full/")]


def test_clicked_thumbnail_opens_the_full_resolution_image(report, served, tmp_path):
    base, requested = served
    (report.parent / "probe.html").write_text(PROBE)
    requested.clear()
    res = _chromium(tmp_path, "--virtual-time-budget=30000", "--dump-dom", f"{base}/probe.html")
    found = re.search(r'<pre id="out">(.*?)</pre>', res.stdout, re.S)
    assert found, res.stderr[-2000:]
    result = json.loads(unescape(found.group(1)))
    assert result["thumbs"] >= 9 and result["clicks"]
    assert len(result["clicks"]) == result["thumbs"]
    for click in result["clicks"]:
        assert "error" not in click, click
        assert click["shown"] == "flex" and click["href"].startswith("report_files/full/")
        assert (click["w"], click["h"]) == _shape(click["title"])
        assert "/" + click["href"] in requested  # fetched once clicked
    big = max(click["w"] * click["h"] for click in result["clicks"])
    assert big > 256 * 256  # larger than any thumbnail: the full image, not an enlargement


def test_screenshot_is_not_blank(report, tmp_path):
    shot = tmp_path / "shot.png"
    _chromium(tmp_path, f"--screenshot={shot}", "--window-size=1280,2000", report.as_uri())
    assert shot.is_file()
    pixels = np.asarray(Image.open(shot).convert("L"), dtype=np.float64)
    assert pixels.shape == (2000, 1280)
    assert pixels.std() > 20.0
