"""The report's image files: lazy thumbnails linking to replayed full-resolution PNGs, checked
against the stored thumbnails, written once, and the same bytes on every build."""

import json
import re

import cv2
import numpy as np
import pytest

from m3gym.cli import main
from m3gym.eval.report import load_runs, render_html, write_report
from m3gym.eval.report_images import FILES_DIR, ReportImages, png_bytes, thumbnails_match
from m3gym.eval.runner import EvalConfig, run_eval, thumbnail_jpeg


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    out = tmp_path_factory.mktemp("runs") / "oracle"
    run_eval(EvalConfig(envs=("M3Bench-L1",), agent="oracle", episodes=2), out)
    return out


def _files(folder):
    return {p.relative_to(folder).as_posix(): p.read_bytes()
            for p in sorted((folder / FILES_DIR).rglob("*")) if p.is_file()}


def _traces(run):
    return [json.loads(p.read_text()) for p in sorted((run / "traces").glob("*.json"))]


def test_thumbnails_link_to_the_full_images_the_agent_had(run, tmp_path):
    _, page_path = write_report([run], out=tmp_path / "rep")
    page = page_path.read_text()
    assert "data:image/jpeg" not in page  # nothing inlined but the three plots
    links = re.findall(r'<a class="full" href="([^"]+)"[^>]*><img class="thumb" loading="lazy" '
                       r'src="([^"]+)" width="(\d+)" height="(\d+)"', page)
    images = [im for t in _traces(run) for im in t["images"]]
    assert len(links) == page.count('<img class="thumb"') >= len(images)
    for full, thumb, w, h in links:
        array = cv2.cvtColor(cv2.imread(str(tmp_path / "rep" / full), cv2.IMREAD_UNCHANGED),
                             cv2.COLOR_BGR2RGB)
        stored = (tmp_path / "rep" / thumb).read_bytes()
        assert thumbnail_jpeg(array, 256) == stored  # the PNG is the image behind the thumbnail
        decoded = cv2.imdecode(np.frombuffer(stored, np.uint8), cv2.IMREAD_UNCHANGED)
        assert decoded.shape[:2] == (int(h), int(w))
    views = [re.search(r"\((\d+)x(\d+)\).*agent's view (\d+)x(\d+)", fig)
             for fig in re.findall(r"<figure.*?</figure>", page)]
    assert any(views)  # L1 inputs are larger than the agent's view
    for w, h, vw, vh in ((int(x) for x in v.groups()) for v in views if v):
        assert max(vw, vh) < max(w, h) and abs(vw / vh - w / h) < 0.05
    shapes = {tuple(im["shape"][:2]) for im in images}
    fulls = {cv2.imread(str(tmp_path / "rep" / f), cv2.IMREAD_UNCHANGED).shape[:2]
             for f, *_ in links}
    assert fulls == shapes


def test_the_same_runs_give_byte_identical_reports(run, tmp_path):
    a = write_report([run], out=tmp_path / "a")
    b = write_report([run], out=tmp_path / "b")
    assert [p.read_bytes() for p in a] == [p.read_bytes() for p in b]
    assert _files(tmp_path / "a") == _files(tmp_path / "b") != {}
    (tmp_path / "a" / FILES_DIR / "stale.png").write_bytes(b"old")
    write_report([run], out=tmp_path / "a")  # a rebuild starts report_files afresh
    assert _files(tmp_path / "a") == _files(tmp_path / "b")


def test_an_image_shown_twice_is_written_once(run, tmp_path):
    _, page = write_report([run, run], out=tmp_path / "rep")  # the same run side by side
    text = page.read_text()
    hrefs = re.findall(r'<a class="full" href="([^"]+)"', text)
    assert len(hrefs) == 2 * len(set(hrefs))
    assert len(_files(tmp_path / "rep")) == 2 * len(set(hrefs))  # one PNG + one JPEG each


def test_a_replay_that_differs_is_named_and_not_linked(run, tmp_path):
    broken = tmp_path / "broken"
    broken.mkdir()
    for name in ("config.json", "episodes.jsonl"):
        (broken / name).write_bytes((run / name).read_bytes())
    (broken / "traces").mkdir()
    for p in (run / "traces").glob("*.json"):
        (broken / "traces" / p.name).write_bytes(p.read_bytes())
    for p in (run / "thumbs").rglob("*.jpg"):
        target = broken / p.relative_to(run)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(p.read_bytes())
    trace = _traces(run)[0]
    first = trace["images"][0]
    gray = np.full((40, 60), 128, np.uint8)  # not what the agent had
    (broken / first["thumb"]).write_bytes(thumbnail_jpeg(gray, 256))
    _, page = write_report([broken], out=tmp_path / "rep", max_episodes=10)
    text = page.read_text()
    assert f"episode {trace['episode_id']}: replaying it re-created a different Image 0" in text
    assert text.count('<img class="thumb"') == text.count('<a class="full"') + 1


def test_code_mode_episodes_are_not_replayed(run, tmp_path):
    trace = {**_traces(run)[0], "steps": [{"step": 0, "calls": [],
                                           "code_cells": [{"code": "print(1)"}]}]}
    images = ReportImages(tmp_path)
    shown = images.image(run, "oracle", trace, trace["images"][0], 256)
    assert shown is not None and shown.full is None and shown.thumb.startswith(FILES_DIR)
    assert "code-mode episode is not replayed" in images.problems[0]


def test_thumbnails_only_and_in_memory_pages(run, tmp_path):
    _, page = write_report([run], out=tmp_path / "rep", full_images=False)
    text = page.read_text()
    assert '<img class="thumb" loading="lazy" src="report_files/thumbs/' in text
    assert 'class="full"' not in text and not (tmp_path / "rep" / FILES_DIR / "full").exists()
    assert main(["report", str(run), "--out", str(tmp_path / "cli"), "--no-full-images"]) == 0
    assert (tmp_path / "cli" / "report.html").read_text() == text
    inline = render_html(load_runs([run]), max_episodes=1)  # no folder: thumbnails inlined
    assert 'src="data:image/jpeg;base64,' in inline and 'class="full"' not in inline


def test_png_is_lossless_and_thumbnail_check_has_a_tolerance():
    rgb = np.random.default_rng(0).integers(0, 256, (30, 50, 3), dtype=np.uint8)
    back = cv2.cvtColor(cv2.imdecode(np.frombuffer(png_bytes(rgb), np.uint8), 1),
                        cv2.COLOR_BGR2RGB)
    assert np.array_equal(back, rgb) and png_bytes(rgb) == png_bytes(rgb)
    smooth = np.tile(np.arange(0, 250, 5, dtype=np.uint8), (40, 1))
    assert thumbnails_match(thumbnail_jpeg(smooth, 256, 80), thumbnail_jpeg(smooth, 256, 90))
    assert not thumbnails_match(thumbnail_jpeg(smooth, 256), thumbnail_jpeg(255 - smooth, 256))
    assert not thumbnails_match(b"not a jpeg", thumbnail_jpeg(smooth, 256))
