"""The docs site: generated family pages and their evidence pictures, the front door (home page,
nav, quickstart), code blocks that fit at 1280 px, the README's size and the issue-number rule.

The build itself (`mkdocs build --strict`) runs in CI (.ci/run, step "docs"); the Chromium check
builds its own copy.
"""

from __future__ import annotations

import functools
import importlib.util
import json
import queue
import re
import shutil
import subprocess
import sys
import threading
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

import m3gym
from m3gym.testing import DOCSTRING_SECTIONS

ROOT = Path(__file__).resolve().parents[1]
PICTURES = ROOT / "docs/families/img"
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
CODE_COLUMNS = 80  # a code line this long fits a code block at 1280 px (82 do; measured)
FRONT_DOOR = ("index.md", "getting-started.md", "llm-rl.md")


def _hook():
    pytest.importorskip("mkdocs", reason="the docs extra (pip install -e '.[docs]') is not installed")
    spec = importlib.util.spec_from_file_location("families_hook", ROOT / "docs/hooks/families.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _insets():
    spec = importlib.util.spec_from_file_location("family_insets", ROOT / "scripts/family_insets.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _code_blocks(markdown: str, language: str = "") -> list[str]:
    return re.findall(rf"^```{language}[^\n]*\n(.*?)^```", markdown, flags=re.MULTILINE | re.DOTALL)


def test_every_family_page_has_its_sections_knobs_and_example() -> None:
    hook = _hook()
    for name in m3gym.family_names(suite=None):
        page = hook.family_page(name, f"img/{name}.png")
        headings = re.findall(r"^## (.+)$", page, flags=re.MULTILINE)
        assert [h for h in headings if h in DOCSTRING_SECTIONS] == list(DOCSTRING_SECTIONS), name
        assert "Difficulty knobs" in headings and "Config (defaults)" in headings, name
        cls = m3gym.get_family(name)
        for knob in cls.difficulty_knobs(1.0):
            assert f"| `{knob}` |" in page, (name, knob)
        assert f"](img/{name}.png)" in page, name
        assert (PICTURES / f"{name}.png").is_file(), name
        assert "``" not in page, name  # reST literals are turned into Markdown


def test_every_family_has_a_small_committed_evidence_picture() -> None:
    index = json.loads((PICTURES / "index.json").read_text())
    names = m3gym.family_names(suite=None)
    assert sorted(index) == sorted(names), "run: python scripts/family_insets.py --family NAME"
    for name in names:
        path = PICTURES / f"{name}.png"
        assert path.stat().st_size < 100_000, name
        with Image.open(path) as picture:
            assert picture.format == "PNG" and picture.mode == "P", name
            assert picture.width <= 900, name  # about the width of the page's text
        assert index[name]["seed"] == 0 and index[name]["evidence"], name


@pytest.mark.parametrize("name", ["glyph_zoom", "faint_text", "compare_labels"])
def test_evidence_picture_is_the_generators_task_and_is_deterministic(name: str) -> None:
    insets = _insets()
    data, record = insets.render_family(name)
    assert insets.render_family(name)[0] == data
    assert record == json.loads((PICTURES / "index.json").read_text())[name]
    task = m3gym.make_task(name, seed=0)
    assert [e["box"] for e in record["evidence"]] == [
        [round(float(v), 2) for v in ev.box] for ev in task.evidence]
    fresh = np.asarray(Image.open(__import__("io").BytesIO(data)).convert("RGB"), np.float64)
    with Image.open(PICTURES / f"{name}.png") as committed:
        stored = np.asarray(committed.convert("RGB"), np.float64)
    assert fresh.shape == stored.shape  # else: run python scripts/family_insets.py
    assert np.abs(fresh - stored).mean() < 3.0


def test_context_box_keeps_a_margin_inside_the_image() -> None:
    insets = _insets()
    assert insets.context_box((100, 100, 110, 104), (200, 300, 3)) == (94, 94, 116, 110)
    assert insets.context_box((0, 0, 50, 20), (40, 60, 3)) == (0, 0, 60, 30)
    x0, y0, x1, y1 = insets.overview_outline((10, 10, 11, 11), 1.0, 5.0)
    assert (x1 - x0, y1 - y0) == (insets.MIN_OUTLINE, insets.MIN_OUTLINE)


def test_nav_puts_the_families_one_level_down(monkeypatch) -> None:
    hook = _hook()
    from mkdocs.config import load_config

    monkeypatch.setenv("NO_MKDOCS_2_WARNING", "1")  # loading the config sets it; undone after

    names = m3gym.family_names(suite=None)
    nav = hook.nav_with_families(load_config(str(ROOT / "mkdocs.yml"))["nav"], names)
    titles = [next(iter(entry)) for entry in nav]
    section = nav[titles.index("Task families")]["Task families"]
    assert section[0] == "families/index.md"
    assert section[-1] == {hook.FAMILY_NAV: [{n: f"families/{n}.md"} for n in names]}
    # what the sidebar shows above Integrations: every entry of the sections before it, but not
    # the pages inside a nested group
    shown = sum(len(entry[t]) if isinstance(entry[t], list) else 1
                for entry, t in zip(nav, titles) if titles.index(t) < titles.index("Integrations"))
    assert shown < 20


def test_home_page_shows_a_task_and_routes_by_goal() -> None:
    page = (ROOT / "docs/index.md").read_text()
    pictures = re.findall(r"!\[[^\]]*\]\(([^)]+)\)", page)
    assert "gallery/photo-sheet.jpg" in pictures and (ROOT / "docs/gallery/photo-sheet.jpg").is_file()
    [quickstart] = _code_blocks(page, "python")
    assert len(quickstart.strip().splitlines()) <= 12
    table = page.split("## I want to", 1)[1].split("\n## ", 1)[0]
    for target in ("evaluation.md", "trl.md", "verl.md", "openenv.md", "verifiers.md", "sb3.md",
                   "contributing.md#write-a-new-family", "contributing.md#add-a-tool",
                   "records.md"):
        assert f"]({target})" in table, target


def test_home_quickstart_runs_and_solves_its_task(capsys) -> None:
    [quickstart] = _code_blocks((ROOT / "docs/index.md").read_text(), "python")
    exec(compile(quickstart, "docs/index.md (quickstart)", "exec"), {"__name__": "quickstart"})
    printed = capsys.readouterr().out
    assert printed.splitlines()[-1].startswith("True 1.0 {"), printed[-500:]


def test_llm_rl_page_points_to_the_trainers_and_the_hubs() -> None:
    page = (ROOT / "docs/llm-rl.md").read_text()
    for target in ("trl.md", "verl.md", "openenv.md", "verifiers.md"):
        assert f"]({target})" in page, target


@pytest.mark.parametrize("page", FRONT_DOOR)
def test_front_door_code_fits_without_wrapping(page: str) -> None:
    blocks = _code_blocks((ROOT / "docs" / page).read_text())
    assert blocks
    long = [line for block in blocks for line in block.splitlines() if len(line) > CODE_COLUMNS]
    assert long == []


def test_section_texts_splits_summary_and_bodies() -> None:
    hook = _hook()
    summary, sections = hook.section_texts(
        "Title line.\n\n    Scene:\n        a ``box``\n    Config:\n        x: y\n")
    assert summary == "Title line."
    assert sections == {"Scene": "a ``box``", "Config": "x: y"}


def test_readme_is_one_screen_and_keeps_the_ci_commands() -> None:
    readme = (ROOT / "README.md").read_text()
    assert len(readme.splitlines()) <= 250
    ci = (ROOT / ".ci/run").read_text()
    assert 'pip install -e ".[eval]" && m3gym eval --out runs/quickstart && m3gym report ' \
           "runs/quickstart" in readme
    test_command = 'pip install torch==2.13.0 -e ".[dev,train]" && pytest -n 2'
    assert test_command in readme and test_command in ci


def test_no_issue_numbers_in_user_docs_or_docstrings() -> None:
    files = [ROOT / "README.md", *(ROOT / "docs").rglob("*.md"), *(ROOT / "m3gym").rglob("*.py")]
    hits = [f"{p.relative_to(ROOT)}:{i}" for p in files
            for i, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1)
            if re.search(r"\bissues? [0-9]", line)]
    assert hits == []


def test_family_index_links_every_family_page() -> None:
    hook = _hook()
    table = hook.family_index()
    names = m3gym.family_names(suite=None)
    assert len(table.splitlines()) == 2 + len(names)
    for name in names:
        assert f"| [`{name}`]({name}.md) |" in table


def test_photo_scenes_page_copies_the_bundled_photo_licences() -> None:
    source = (ROOT / "m3gym/data/photos/LICENSES.md").read_text(encoding="utf-8")
    page = (ROOT / "docs/photo-scenes.md").read_text(encoding="utf-8")
    rows = [line for line in source.splitlines() if line.startswith("| `")]
    assert len(rows) == 9
    for row in rows:
        assert row in page.splitlines(), row.split("|")[1]


# Served beside the built site (same origin): loads every page in a 1280 px wide frame, lists
# each code block whose content is wider than its box (a line cut off behind a scroll bar) and
# where the sidebar shows "Integrations" on the home page, then POSTs the result back. Each page
# gets a real-time watchdog, so one page that never fires "load" is reported instead of hanging
# the run (Chromium's --virtual-time-budget with --dump-dom hung about one run in three).
PROBE = """<!DOCTYPE html><html><head><meta charset="utf-8"></head><body>
<iframe id="f" style="width:1280px;height:800px;border:0"></iframe>
<script>
var pages = %s, i = -1, cut = [], stuck = [], integrations = null, watchdog = null;
var f = document.getElementById('f');
f.addEventListener('load', function () {
  if (i < 0 || i >= pages.length || f.getAttribute('src') !== pages[i]) return;
  clearTimeout(watchdog);
  var d = f.contentDocument;
  d.querySelectorAll('pre > code').forEach(function (c) {
    if (c.scrollWidth > c.clientWidth + 1) cut.push([pages[i], c.scrollWidth, c.clientWidth,
                                                    c.textContent.slice(0, 80)]);
  });
  if (pages[i] === 'index.html') d.querySelectorAll('.md-nav--primary .md-nav__link')
    .forEach(function (a) { if (a.textContent.trim() === 'Integrations' && integrations === null)
                              integrations = a.getBoundingClientRect().top; });
  next();
});
function next() {
  i += 1;
  if (i < pages.length) {
    watchdog = setTimeout(function () { stuck.push(pages[i]); next(); }, 20000);
    f.setAttribute('src', pages[i]);
    return;
  }
  var x = new XMLHttpRequest();
  x.open('POST', '/result');
  x.send(JSON.stringify({pages: pages.length, cut: cut, stuck: stuck,
                         integrations: integrations}));
}
next();
</script></body></html>"""


class _Site(SimpleHTTPRequestHandler):
    """Serves the built site quietly and takes the probe's POSTed result."""

    results: queue.Queue  # set on a per-test subclass

    def do_POST(self) -> None:  # noqa: N802 (http.server's naming)
        """Queues the probe's JSON result and answers 204."""
        body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
        self.results.put(json.loads(body))
        self.send_response(204)
        self.end_headers()

    def log_message(self, format, *args):
        pass


@pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed (apt-get install "
                    "chromium), or not on PATH")
def test_no_code_line_is_cut_off_at_1280_px(tmp_path) -> None:
    pytest.importorskip("mkdocs", reason="the docs extra (pip install -e '.[docs]') is not installed")
    site = tmp_path / "site"
    build = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir",
                            str(site)], cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert build.returncode == 0, build.stderr[-3000:]
    pages = sorted(str(p.relative_to(site)) for p in site.rglob("index.html"))
    (site / "probe.html").write_text(PROBE % json.dumps(pages))
    handler = type("_ThisSite", (_Site,), {"results": queue.Queue()})
    server = ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(handler, directory=str(site)))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    # the theme's web fonts are unreachable here: fail them at once (the fallback monospace font
    # has Roboto Mono's 0.6 em advance). Chromium stays open until the result arrives.
    browser = subprocess.Popen(
        [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
         f"--user-data-dir={tmp_path / 'profile'}", "--blink-settings=imagesEnabled=false",
         "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1",
         f"http://127.0.0.1:{server.server_address[1]}/probe.html"],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        result = handler.results.get(timeout=60 + 25 * len(pages))
    except queue.Empty:
        result = None
    finally:
        browser.kill()
        stderr = browser.communicate()[1]
        server.shutdown()
        server.server_close()
    assert result is not None, stderr[-2000:]
    assert result["pages"] == len(pages) > 40
    assert result["stuck"] == []
    assert result["cut"] == []
    assert result["integrations"] is not None and result["integrations"] < 800  # above the fold
